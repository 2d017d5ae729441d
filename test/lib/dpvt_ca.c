/* SPDX-License-Identifier: BSD-3-Clause */
/* Parent domains and the counting allocator (dpvt_ca.h). */
#include <stdio.h>
#include <stdlib.h>

#include "dpvt_ca.h"

bool dpvt_shared_mode(void)
{
	static int shared = -1;
	if (shared < 0) {
		const char *p = getenv("DPVERBS_CONFIG");
		FILE *f = p && *p ? fopen(p, "r") : NULL;
		char buf[65536];
		size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
		buf[n] = 0;
		if (f)
			fclose(f);
		/* "mode": "shared", whatever the spacing */
		char *m = strstr(buf, "\"mode\"");
		if (m)
			m = strchr(m + 6, '"');
		shared = m && !strncmp(m, "\"shared\"", 8);
	}
	return shared;
}

bool dpvt_res_asked(int code)
{
	if (!dpvt_shared_mode())
		return true;
	return code != DPV_RES_QP_SQ && code != DPV_RES_QP_RQ && code != DPV_RES_QP_RC &&
	       code != DPV_RES_CQ_RING && code != DPV_RES_SRQ_RING;
}

const char *const dpvt_res_name[DPV_RES_NR] = {
	"none", "QP", "QP_SQ", "QP_RQ", "QP_RC", "QP_WRB", "CQ", "CQ_RING", "SRQ", "SRQ_RING",
};

void dpvt_ca_init(struct dpvt_ca *c)
{
	memset(c, 0, sizeof(*c));
	c->magic = DPVT_CA_MAGIC;
	pthread_mutex_init(&c->lock, NULL);
}

static bool is_pow2(size_t v)
{
	return v && !(v & (v - 1));
}

void *dpvt_ca_alloc(struct ibv_pd *pd, void *pd_context, size_t size, size_t alignment, uint64_t type)
{
	struct dpvt_ca *c = pd_context;

	if (!c || c->magic != DPVT_CA_MAGIC)
		return NULL; /* counted nowhere: the test sees the object fail */
	pthread_mutex_lock(&c->lock);
	uint32_t code = DPV_RESOURCE_CODE(type);
	if ((uint32_t)(type >> 32) != DPV_DRIVER_ID || code == 0 || code >= DPV_RES_NR) {
		c->bad_type++;
		code = 0;
	}
	if (!is_pow2(alignment))
		c->bad_align++;
	if (size == 0)
		c->bad_size++;
	if (pd != c->expect_pd && pd != c->expect_pd2)
		c->bad_pd++;
	void *p = NULL;
	if (code && code == c->fail_code) {
		c->fails[code]++;
		pthread_mutex_unlock(&c->lock);
		return NULL;
	}
	if (c->default_mask & (1u << code)) {
		c->defaults[code]++;
		pthread_mutex_unlock(&c->lock);
		return IBV_ALLOCATOR_USE_DEFAULT;
	}
	if (c->use_hugepage) {
		p = dpv_hugepage_alloc(pd, c->hp, size, alignment, type);
		if (p) {
			if (c->check_hugepage &&
			    (dpv_is_hugepage_memory(p) != 1 || dpv_is_hugepage_memory((uint8_t *)p + size - 1) != 1))
				c->not_huge++;
			for (size_t i = 0; i < size; i++)
				if (((uint8_t *)p)[i]) {
					c->not_zero++;
					break;
				}
		}
	} else {
		size_t a = is_pow2(alignment) && alignment >= sizeof(void *) ? alignment : 64;
		if (posix_memalign(&p, a, size ? size : 1))
			p = NULL;
		if (p)
			memset(p, 0, size ? size : 1);
	}
	if (!p) {
		c->fails[code]++;
		pthread_mutex_unlock(&c->lock);
		return NULL;
	}
	if (is_pow2(alignment) && ((uintptr_t)p & (alignment - 1)))
		c->bad_ptr_align++;
	if (c->nrec < DPVT_CA_MAX_REC)
		c->rec[c->nrec++] = (struct dpvt_ca_rec){.p = p, .size = size, .align = alignment, .code = code};
	c->allocs[code]++;
	c->live++;
	c->live_objs[code]++;
	c->live_bytes[code] += size;
	pthread_mutex_unlock(&c->lock);
	return p;
}

void dpvt_ca_free(struct ibv_pd *pd, void *pd_context, void *ptr, uint64_t type)
{
	struct dpvt_ca *c = pd_context;

	if (!c || c->magic != DPVT_CA_MAGIC)
		return;
	pthread_mutex_lock(&c->lock);
	if (pd != c->expect_pd && pd != c->expect_pd2)
		c->free_bad_pd++;
	/* newest first: an address may be reused after a free */
	struct dpvt_ca_rec *r = NULL, *old = NULL;
	for (int i = c->nrec - 1; i >= 0; i--)
		if (c->rec[i].p == ptr) {
			if (!c->rec[i].frees) {
				r = &c->rec[i];
				break;
			}
			if (!old)
				old = &c->rec[i];
		}
	if (!r) {
		if (old)
			c->free_twice++;
		else
			c->free_unknown++; /* USE_DEFAULT buffers, foreign pointers */
		pthread_mutex_unlock(&c->lock);
		return;
	}
	if (DPV_RESOURCE_TYPE(r->code) != type)
		c->free_bad_type++;
	r->frees++;
	c->frees[r->code]++;
	c->live--;
	c->live_objs[r->code]--;
	c->live_bytes[r->code] -= r->size;
	if (c->use_hugepage)
		dpv_hugepage_free(pd, c->hp, ptr, type);
	else
		free(ptr);
	pthread_mutex_unlock(&c->lock);
}

void dpvt_ca_zero(struct dpvt_ca *c)
{
	memset(c->allocs, 0, sizeof(c->allocs));
	memset(c->frees, 0, sizeof(c->frees));
	memset(c->defaults, 0, sizeof(c->defaults));
	memset(c->fails, 0, sizeof(c->fails));
}

void dpvt_ca_expect(const int got[DPV_RES_NR], const int exp[DPV_RES_NR], const char *what, const char *label)
{
	for (int i = 0; i < DPV_RES_NR; i++) {
		int e = dpvt_res_asked(i) ? exp[i] : 0;
		CHECK(got[i] == e, "%s: %s[%s] = %d, expected %d", label, what, dpvt_res_name[i], got[i], e);
	}
}

void dpvt_ca_check_contract(struct dpvt_ca *c, const char *label)
{
	(void)label;
	CHECK_EQ(c->bad_type, 0, "resource_type upper 32 bits == DPV_DRIVER_ID, known code");
	CHECK_EQ(c->bad_align, 0, "alignment is a power of two");
	CHECK_EQ(c->bad_size, 0, "size > 0");
	CHECK_EQ(c->bad_pd, 0, "alloc's pd argument is the parent domain");
	CHECK_EQ(c->bad_ptr_align, 0, "returned pointer honours alignment");
	CHECK_EQ(c->not_zero, 0, "buffers are zeroed");
	CHECK_EQ(c->not_huge, 0, "buffers are hugepage memory");
	CHECK_EQ(c->free_unknown, 0, "free only for pointers alloc returned");
	CHECK_EQ(c->free_twice, 0, "free at most once per buffer");
	CHECK_EQ(c->free_bad_type, 0, "free's resource_type is the one of the alloc");
	CHECK_EQ(c->free_bad_pd, 0, "free's pd argument is the parent domain");
}

void dpvt_ca_check_all_freed(struct dpvt_ca *c, const char *label)
{
	int bad = 0;

	for (int i = 0; i < c->nrec; i++)
		if (c->rec[i].frees != 1) {
			if (bad < 5)
				fprintf(stderr, "  %s: buffer %p (%s, %zu B) freed %d times\n", label, c->rec[i].p,
					dpvt_res_name[c->rec[i].code], c->rec[i].size, c->rec[i].frees);
			bad++;
		}
	CHECK(bad == 0, "%s: %d of %d buffers not freed exactly once", label, bad, c->nrec);
	CHECK_EQ(c->live, 0, "live buffers after destroying everything");
	dpvt_ca_check_contract(c, label);
}

bool dpvt_ca_inside(struct dpvt_ca *c, const void *p, uint32_t code)
{
	for (int i = c->nrec - 1; i >= 0; i--)
		if (!c->rec[i].frees && c->rec[i].code == code && (const uint8_t *)p >= (uint8_t *)c->rec[i].p &&
		    (const uint8_t *)p < (uint8_t *)c->rec[i].p + c->rec[i].size)
			return true;
	return false;
}

struct ibv_pd *dpvt_parent_new(struct ibv_pd *pd, struct ibv_td *td, struct dpvt_ca *c)
{
	struct ibv_parent_domain_init_attr a;

	memset(&a, 0, sizeof(a));
	a.pd = pd;
	a.td = td;
	if (c) {
		a.comp_mask = IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS | IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT;
		a.alloc = dpvt_ca_alloc;
		a.free = dpvt_ca_free;
		a.pd_context = c;
	}
	errno = 0;
	struct ibv_pd *p = ibv_alloc_parent_domain(pd->context, &a);
	if (!p) {
		int e = errno;
		fprintf(stderr, "ibv_alloc_parent_domain: %s\n", strerror(e));
		errno = e;
	} else if (c && !c->expect_pd)
		c->expect_pd = p;
	else if (c)
		c->expect_pd2 = p;
	return p;
}
