/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The DPDK hugepage allocator of dpverbs.h (doc/man/dpv_hugepage_allocator.3.md):
 * dpv_hugepage_allocator_create/destroy, dpv_hugepage_alloc/free as the
 * allocators of a parent domain (dpv_hugepage_parent_domain_attr),
 * dpv_hugepage_stats, dpv_is_hugepage_memory.
 *
 * A counting wrapper (test/lib/dpvt_ca.h, use_hugepage) forwards every callback to
 * dpv_hugepage_alloc/free and checks each buffer: in DPDK hugepage memory
 * (first and last byte), zeroed, aligned. Its counts must match
 * dpv_hugepage_stats per resource code. RC (SEND, WRITE, READ), RC with an
 * SRQ and UD traffic then run through those queues with payloads verified.
 * Both buffer sources are covered: the per-size-class mempools and
 * rte_zmalloc (buffers above 1 MiB, and when a class pool is exhausted).
 *
 * Black-box (libdpverbs.so, <infiniband/verbs.h>, <dpverbs.h>), one process,
 * the built-in default configuration (dpv0 <-> dpv1).
 */
#include "dpvt_ca.h"

static struct ibv_context *ctx0, *ctx1;
static struct dpv_hugepage_allocator *hp;
static struct dpvt_ca wrap; /* the counting wrapper around dpv_hugepage_alloc */

/* dpv_hugepage_stats of every code equals the wrapper's counts. */
static void check_stats(const char *label)
{
	for (uint32_t code = 0; code < DPV_RES_NR; code++) {
		struct dpv_hugepage_stats st;
		memset(&st, 0xff, sizeof(st));
		int r = dpv_hugepage_stats(hp, code, &st);
		CHECK(r == 0, "%s: stats(%u) = %d", label, code, r);
		if (r)
			continue;
		int allocs = 0, frees = 0;
		for (int i = 0; i < wrap.nrec; i++)
			if (wrap.rec[i].code == code) {
				allocs++;
				frees += wrap.rec[i].frees;
			}
		CHECK(st.objects == (uint64_t)wrap.live_objs[code], "%s: %s objects %llu, counted %d", label,
		      dpvt_res_name[code], (unsigned long long)st.objects, wrap.live_objs[code]);
		CHECK(st.bytes == wrap.live_bytes[code], "%s: %s bytes %llu, counted %llu", label, dpvt_res_name[code],
		      (unsigned long long)st.bytes, (unsigned long long)wrap.live_bytes[code]);
		CHECK(st.allocs == (uint64_t)allocs, "%s: %s allocs %llu, counted %d", label, dpvt_res_name[code],
		      (unsigned long long)st.allocs, allocs);
		CHECK(st.frees == (uint64_t)frees, "%s: %s frees %llu, counted %d", label, dpvt_res_name[code],
		      (unsigned long long)st.frees, frees);
		CHECK(st.failures == 0, "%s: %s failures %llu", label, dpvt_res_name[code], (unsigned long long)st.failures);
	}
}

static bool hugepages_configured(void)
{
	FILE *f = fopen("/proc/meminfo", "r");
	char line[256];
	long total = 0;
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "HugePages_Total: %ld", &total) == 1)
			break;
	fclose(f);
	return total > 0;
}

static void test_api_basics(void)
{
	/* before anything is set up, a malloc'd pointer is not hugepage memory */
	void *m = malloc(256);
	int stackvar = 0;
	CHECK_EQ(dpv_is_hugepage_memory(m), 0, "malloc'd pointer (before init)");
	CHECK_EQ(dpv_is_hugepage_memory(NULL), 0, "NULL");

	CHECK_EQ(dpv_hugepage_allocator_destroy(NULL), EINVAL, "destroy(NULL)");
	struct dpv_hugepage_stats st;
	CHECK_EQ(dpv_hugepage_stats(NULL, 1, &st), EINVAL, "stats(NULL allocator)");

	errno = 0;
	hp = dpv_hugepage_allocator_create(-1);
	CHECK(hp != NULL, "dpv_hugepage_allocator_create(-1): %s", strerror(errno));
	if (!hp) {
		free(m);
		return;
	}
	CHECK_EQ(dpv_hugepage_stats(hp, DPV_RES_NR, &st), EINVAL, "stats(code DPV_RES_NR)");
	CHECK_EQ(dpv_hugepage_stats(hp, 0xffffffffu, &st), EINVAL, "stats(code ~0)");
	CHECK_EQ(dpv_hugepage_stats(hp, 1, NULL), EINVAL, "stats(out NULL)");
	CHECK_EQ(dpv_is_hugepage_memory(m), 0, "malloc'd pointer");
	CHECK_EQ(dpv_is_hugepage_memory(&stackvar), 0, "stack pointer");
	free(m);

	/* direct calls: pd_context NULL -> NULL */
	void *p = dpv_hugepage_alloc(NULL, NULL, 64, 64, DPV_RESOURCE_TYPE(DPV_RES_QP));
	CHECK(p == NULL, "alloc with pd_context NULL: NULL");

	/* alignment above the cache line, sizes across the classes and above 1 MiB */
	static const size_t sizes[] = {1, 100, 4000, 5000, 65536, 300000, (1u << 20) - 200, 1u << 20, 3u << 20};
	static const size_t aligns[] = {8, 64, 256, 4096, 65536};
	void *ptrs[sizeof(sizes) / sizeof(sizes[0])][sizeof(aligns) / sizeof(aligns[0])];
	int bad_huge = 0, bad_align = 0, bad_zero = 0;
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		for (size_t j = 0; j < sizeof(aligns) / sizeof(aligns[0]); j++) {
			uint8_t *q = dpv_hugepage_alloc(NULL, hp, sizes[i], aligns[j], DPV_RESOURCE_TYPE(DPV_RES_CQ_RING));
			ptrs[i][j] = q;
			CHECK(q != NULL, "alloc size %zu align %zu", sizes[i], aligns[j]);
			if (!q)
				continue;
			if (dpv_is_hugepage_memory(q) != 1 || dpv_is_hugepage_memory(q + sizes[i] - 1) != 1)
				bad_huge++;
			if ((uintptr_t)q & (aligns[j] - 1) || (uintptr_t)q & 63)
				bad_align++;
			for (size_t k = 0; k < sizes[i]; k++)
				if (q[k]) {
					bad_zero++;
					break;
				}
			memset(q, 0xa5, sizes[i]); /* dirty it: the next user must get zeroes again */
		}
	CHECK_EQ(bad_huge, 0, "direct allocations in hugepage memory");
	CHECK_EQ(bad_align, 0, "direct allocations aligned (at least 64)");
	CHECK_EQ(bad_zero, 0, "direct allocations zeroed");
	CHECK(dpv_hugepage_stats(hp, DPV_RES_CQ_RING, &st) == 0 &&
		      st.objects == sizeof(sizes) / sizeof(sizes[0]) * (sizeof(aligns) / sizeof(aligns[0])),
	      "stats count the direct allocations (%llu)", (unsigned long long)st.objects);
	CHECK_EQ(dpv_hugepage_allocator_destroy(hp), EBUSY, "destroy while buffers are allocated");
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		for (size_t j = 0; j < sizeof(aligns) / sizeof(aligns[0]); j++)
			if (ptrs[i][j])
				dpv_hugepage_free(NULL, hp, ptrs[i][j], DPV_RESOURCE_TYPE(DPV_RES_CQ_RING));
	/* reused (dirtied) buffers come back zeroed */
	bad_zero = 0;
	for (size_t i = 0; i < 4; i++) {
		uint8_t *q = dpv_hugepage_alloc(NULL, hp, sizes[i], 64, DPV_RESOURCE_TYPE(DPV_RES_CQ_RING));
		for (size_t k = 0; q && k < sizes[i]; k++)
			if (q[k]) {
				bad_zero++;
				break;
			}
		if (q)
			dpv_hugepage_free(NULL, hp, q, DPV_RESOURCE_TYPE(DPV_RES_CQ_RING));
	}
	CHECK_EQ(bad_zero, 0, "reused buffers are zeroed again");
	/* a resource type that is not dpverbs' is counted under code 0 */
	void *o = dpv_hugepage_alloc(NULL, hp, 128, 64, ((uint64_t)0x1234 << 32) | 3);
	CHECK(o && dpv_hugepage_stats(hp, 0, &st) == 0 && st.objects == 1 && st.allocs == 1,
	      "foreign resource type counted under code 0");
	if (o)
		dpv_hugepage_free(NULL, hp, o, ((uint64_t)0x1234 << 32) | 3);
	CHECK(dpv_hugepage_stats(hp, 0, &st) == 0 && st.objects == 0 && st.frees == 1 && st.bytes == 0,
	      "code 0 freed");
	CHECK(dpv_hugepage_stats(hp, DPV_RES_CQ_RING, &st) == 0 && st.objects == 0 && st.bytes == 0 &&
		      st.allocs == st.frees,
	      "direct allocations all freed");
	/* start the object tests with a fresh allocator (stats from zero) */
	CHECK_EQ(dpv_hugepage_allocator_destroy(hp), 0, "destroy an unused allocator");
	hp = dpv_hugepage_allocator_create(-1);
	CHECK(hp != NULL, "create again");
}

/* The attr helper fills exactly what the man page says. */
static void test_attr_helper(struct ibv_pd *pd, struct ibv_td *td)
{
	struct ibv_parent_domain_init_attr a;
	memset(&a, 0x5a, sizeof(a));
	dpv_hugepage_parent_domain_attr(hp, pd, td, &a);
	CHECK(a.pd == pd && a.td == td, "attr: pd, td");
	CHECK_EQ(a.comp_mask, IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS | IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT,
		 "attr: comp_mask");
	CHECK(a.alloc == dpv_hugepage_alloc && a.free == dpv_hugepage_free, "attr: callbacks");
	CHECK(a.pd_context == hp, "attr: pd_context is the allocator");
}

/* Objects through a parent domain with the hugepage allocator, unwrapped:
 * the stats alone show the buffers and give them back. */
static void test_plain_attr(void)
{
	struct ibv_pd *pd = ibv_alloc_pd(ctx0);
	struct ibv_parent_domain_init_attr a;
	dpv_hugepage_parent_domain_attr(hp, pd, NULL, &a);
	struct ibv_pd *par = ibv_alloc_parent_domain(ctx0, &a);
	CHECK(par != NULL, "parent domain from dpv_hugepage_parent_domain_attr: %s", strerror(errno));
	if (!par)
		return;
	struct ibv_cq *cq = dpvt_cq_new(ctx0, par, 64);
	struct ibv_qp *qp = cq ? dpvt_qp_new_ex(par, IBV_QPT_RC, cq, cq, NULL, 0) : NULL;
	CHECK(cq && qp, "CQ_ex and RC QP");
	CHECK(cq && dpv_is_hugepage_memory(cq) == 1, "the CQ object is in hugepage memory");
	CHECK(qp && dpv_is_hugepage_memory(qp) == 1, "the QP object is in hugepage memory");
	struct dpv_hugepage_stats st;
	uint64_t objs = 0;
	for (uint32_t c = 1; c < DPV_RES_NR; c++)
		if (dpv_hugepage_stats(hp, c, &st) == 0)
			objs += st.objects;
	uint64_t want = 0;
	for (int c = 1; c < DPV_RES_NR; c++)
		if (c == DPV_RES_CQ || c == DPV_RES_CQ_RING || c == DPV_RES_QP || c == DPV_RES_QP_SQ ||
		    c == DPV_RES_QP_RQ || c == DPV_RES_QP_RC)
			want += dpvt_res_asked(c);
	CHECK_EQ(objs, want, "CQ, CQ_RING, QP, SQ, RQ, RC buffers (those asked in this mode)");
	CHECK_EQ(dpv_hugepage_allocator_destroy(hp), EBUSY, "destroy while objects use the allocator");
	if (qp)
		ibv_destroy_qp(qp);
	if (cq)
		ibv_destroy_cq(cq);
	objs = 0;
	for (uint32_t c = 0; c < DPV_RES_NR; c++)
		if (dpv_hugepage_stats(hp, c, &st) == 0)
			objs += st.objects;
	CHECK_EQ(objs, 0, "all buffers back");
	CHECK_EQ(ibv_dealloc_pd(par), 0, "dealloc parent");
	CHECK_EQ(ibv_dealloc_pd(pd), 0, "dealloc pd");
}

static void test_objects_and_traffic(void)
{
	/* a fresh allocator: its stats count only what this test makes */
	CHECK_EQ(dpv_hugepage_allocator_destroy(hp), 0, "destroy the previous allocator");
	hp = dpv_hugepage_allocator_create(-1);
	CHECK(hp != NULL, "create");
	if (!hp)
		return;
	struct ibv_pd *pd0 = ibv_alloc_pd(ctx0), *pd1 = ibv_alloc_pd(ctx1);
	test_attr_helper(pd0, NULL);

	/* the wrapper: dpv_hugepage_parent_domain_attr, then our callbacks,
	 * which forward to dpv_hugepage_alloc/free with the allocator */
	dpvt_ca_init(&wrap);
	wrap.use_hugepage = true;
	wrap.check_hugepage = true;
	wrap.hp = hp;
	struct ibv_pd *p0, *p1;
	{
		struct ibv_parent_domain_init_attr a;
		dpv_hugepage_parent_domain_attr(hp, pd0, NULL, &a);
		a.alloc = dpvt_ca_alloc;
		a.free = dpvt_ca_free;
		a.pd_context = &wrap;
		p0 = ibv_alloc_parent_domain(ctx0, &a);
		dpv_hugepage_parent_domain_attr(hp, pd1, NULL, &a);
		a.alloc = dpvt_ca_alloc;
		a.free = dpvt_ca_free;
		a.pd_context = &wrap;
		p1 = ibv_alloc_parent_domain(ctx1, &a);
		wrap.expect_pd = p0;
		wrap.expect_pd2 = p1;
	}
	CHECK(p0 && p1, "parent domains");
	if (!p0 || !p1)
		return;

	/* RC pair, RC pair with an SRQ on b, UD pair; all CQs through the parent domains */
	struct dpvt_ep a = {.ctx = ctx0}, b = {.ctx = ctx1};
	CHECK(dpvt_ep_traffic_buf(&a, p0) == 0 && dpvt_ep_traffic_buf(&b, p1) == 0, "MRs");
	a.scq = dpvt_cq_new(ctx0, p0, 256);
	a.rcq = dpvt_cq_new(ctx0, p0, 256);
	b.scq = dpvt_cq_new(ctx1, p1, 256);
	b.rcq = dpvt_cq_new(ctx1, p1, 256);
	CHECK(a.scq && a.rcq && b.scq && b.rcq, "CQ_ex through the hugepage parent domains");
	a.qp = dpvt_qp_new_ex(p0, IBV_QPT_RC, a.scq, a.rcq, NULL, IBV_QP_EX_WITH_SEND);
	b.qp = dpvt_qp_new_ex(p1, IBV_QPT_RC, b.scq, b.rcq, NULL, 0);
	CHECK(a.qp && b.qp, "RC QPs");
	struct dpvt_ep a2 = a, b2 = b;
	a2.qp = dpvt_qp_new_ex(p0, IBV_QPT_RC, a.scq, a.rcq, NULL, 0);
	b2.srq = dpvt_srq_new(p1, 128);
	b2.qp = b2.srq ? dpvt_qp_new_ex(p1, IBV_QPT_RC, b.scq, b.rcq, b2.srq, 0) : NULL;
	CHECK(a2.qp && b2.srq && b2.qp, "RC pair with SRQ");
	struct dpvt_ep ua = a, ub = b;
	ua.qp = dpvt_qp_new_ex(p0, IBV_QPT_UD, a.scq, a.rcq, NULL, 0);
	ub.qp = dpvt_qp_new_ex(p1, IBV_QPT_UD, b.scq, b.rcq, NULL, 0);
	CHECK(ua.qp && ub.qp, "UD QPs");
	/* a big CQ: its ring (> 1 MiB) comes from rte_zmalloc */
	struct ibv_cq *big = dpvt_cq_new(ctx0, p0, 32768);
	CHECK(big != NULL, "CQ_ex with 32768 entries");

	/* which buffers: every code appears, each object in its buffer */
	for (uint32_t c = 1; c < DPV_RES_NR; c++)
		CHECK(wrap.allocs[c] > 0 || !dpvt_res_asked((int)c), "buffers of %s allocated", dpvt_res_name[c]);
	CHECK(a.qp && dpvt_ca_inside(&wrap, a.qp, DPV_RES_QP), "QP object inside its buffer");
	CHECK(b2.srq && dpvt_ca_inside(&wrap, b2.srq, DPV_RES_SRQ), "SRQ object inside its buffer");
	CHECK(a.scq && dpvt_ca_inside(&wrap, a.scq, DPV_RES_CQ), "CQ object inside its buffer");
	CHECK(wrap.nrec > 0, "buffers recorded");
	CHECK_EQ(wrap.not_huge, 0, "every buffer dpv_hugepage_alloc returned is hugepage memory");
	CHECK_EQ(wrap.not_zero, 0, "every buffer zeroed");
	CHECK_EQ(wrap.bad_ptr_align, 0, "every buffer aligned");
	int bad64 = 0;
	for (int i = 0; i < wrap.nrec; i++)
		if ((uintptr_t)wrap.rec[i].p & 63)
			bad64++;
	CHECK_EQ(bad64, 0, "every buffer 64-byte aligned (the allocator's minimum)");
	check_stats("after creation");
	CHECK_EQ(dpv_hugepage_allocator_destroy(hp), EBUSY, "destroy while objects exist");

	if (a.qp && b.qp && dpvt_connect(a.qp, ctx0, NULL, b.qp, ctx1, NULL, false) == 0)
		for (int i = 0; i < 10; i++)
			dpvt_rc_traffic(&a, &b, 900 + (uint64_t)i, "hugepage RC");
	if (a2.qp && b2.qp && dpvt_connect(a2.qp, ctx0, NULL, b2.qp, ctx1, NULL, false) == 0)
		for (int i = 0; i < 5; i++)
			dpvt_rc_traffic(&a2, &b2, 950 + (uint64_t)i, "hugepage RC+SRQ");
	if (ua.qp && ub.qp && dpvt_ud_to_rts(ua.qp, 0x4242) == 0 && dpvt_ud_to_rts(ub.qp, 0x4242) == 0) {
		dpvt_ud_traffic(&ua, p0, &ub, 0x4242, 8, 990, "hugepage UD a->b");
		dpvt_ud_traffic(&ub, p1, &ua, 0x4242, 8, 991, "hugepage UD b->a");
	}
	/* resize moves the ring to a new hugepage buffer */
	if (a.scq) {
		CHECK_EQ(ibv_resize_cq(a.scq, 3000), 0, "resize_cq");
		check_stats("after resize");
		dpvt_rc_traffic(&a, &b, 999, "hugepage RC after resize");
	}
	check_stats("after traffic");

	/* many small objects: more than a class pool holds (63), the rest
	 * from rte_zmalloc; all hugepage memory, stats still exact */
	struct ibv_cq *many[80];
	int made = 0;
	for (int i = 0; i < 80; i++) {
		many[i] = dpvt_cq_new(ctx0, p0, 8);
		if (many[i])
			made++;
	}
	CHECK_EQ(made, 80, "80 small CQs");
	CHECK_EQ(wrap.not_huge, 0, "pool overflow buffers are hugepage memory too");
	CHECK_EQ(wrap.not_zero, 0, "pool overflow buffers zeroed");
	check_stats("80 CQs");
	for (int i = 0; i < 80; i++)
		if (many[i])
			CHECK_EQ(ibv_destroy_cq(many[i]), 0, "destroy small CQ");

	if (big)
		CHECK_EQ(ibv_destroy_cq(big), 0, "destroy big CQ");
	if (ua.qp)
		CHECK_EQ(ibv_destroy_qp(ua.qp), 0, "destroy UD a");
	if (ub.qp)
		CHECK_EQ(ibv_destroy_qp(ub.qp), 0, "destroy UD b");
	if (a2.qp)
		CHECK_EQ(ibv_destroy_qp(a2.qp), 0, "destroy a2");
	if (b2.qp)
		CHECK_EQ(ibv_destroy_qp(b2.qp), 0, "destroy b2");
	if (b2.srq)
		CHECK_EQ(ibv_destroy_srq(b2.srq), 0, "destroy SRQ");
	dpvt_ep_release(&a, "hp a");
	dpvt_ep_release(&b, "hp b");
	check_stats("after destroying everything");
	for (uint32_t c = 0; c < DPV_RES_NR; c++) {
		struct dpv_hugepage_stats st;
		CHECK(dpv_hugepage_stats(hp, c, &st) == 0 && st.objects == 0 && st.bytes == 0 && st.allocs == st.frees,
		      "%s: 0 objects, 0 bytes, allocs == frees at the end", dpvt_res_name[c]);
	}
	dpvt_ca_check_all_freed(&wrap, "hugepage wrapper");
	CHECK_EQ(ibv_dealloc_pd(p0), 0, "dealloc p0");
	CHECK_EQ(ibv_dealloc_pd(p1), 0, "dealloc p1");
	CHECK_EQ(ibv_dealloc_pd(pd0), 0, "dealloc pd0");
	CHECK_EQ(ibv_dealloc_pd(pd1), 0, "dealloc pd1");
}

/* A thread domain with the hugepage allocator: the buffers of lockless
 * objects are hugepage memory too, and traffic works. */
static void test_td_hugepage(void)
{
	struct ibv_td_init_attr ta = {0};
	struct ibv_td *td0 = ibv_alloc_td(ctx0, &ta), *td1 = ibv_alloc_td(ctx1, &ta);
	struct ibv_pd *pd0 = ibv_alloc_pd(ctx0), *pd1 = ibv_alloc_pd(ctx1);
	struct ibv_parent_domain_init_attr a;
	dpv_hugepage_parent_domain_attr(hp, pd0, td0, &a);
	struct ibv_pd *p0 = ibv_alloc_parent_domain(ctx0, &a);
	dpv_hugepage_parent_domain_attr(hp, pd1, td1, &a);
	struct ibv_pd *p1 = ibv_alloc_parent_domain(ctx1, &a);
	CHECK(p0 && p1, "TD parent domains with the hugepage allocator");
	if (!p0 || !p1)
		return;
	struct dpvt_ep x = {.ctx = ctx0}, y = {.ctx = ctx1};
	CHECK(dpvt_ep_traffic_buf(&x, pd0) == 0 && dpvt_ep_traffic_buf(&y, pd1) == 0, "MRs");
	x.scq = dpvt_cq_new(ctx0, p0, 64);
	x.rcq = dpvt_cq_new(ctx0, p0, 64);
	y.scq = dpvt_cq_new(ctx1, p1, 64);
	y.rcq = dpvt_cq_new(ctx1, p1, 64);
	x.qp = dpvt_qp_new_ex(p0, IBV_QPT_RC, x.scq, x.rcq, NULL, 0);
	y.qp = dpvt_qp_new_ex(p1, IBV_QPT_RC, y.scq, y.rcq, NULL, 0);
	CHECK(x.qp && y.qp, "TD QPs");
	CHECK(x.qp && dpv_is_hugepage_memory(x.qp) == 1, "TD QP object in hugepage memory");
	if (x.qp && y.qp && dpvt_connect(x.qp, ctx0, NULL, y.qp, ctx1, NULL, false) == 0)
		for (int i = 0; i < 5; i++)
			dpvt_rc_traffic(&x, &y, 1000 + (uint64_t)i, "hugepage TD RC");
	dpvt_ep_release(&x, "TD x");
	dpvt_ep_release(&y, "TD y");
	CHECK_EQ(ibv_dealloc_pd(p0), 0, "dealloc");
	CHECK_EQ(ibv_dealloc_pd(p1), 0, "dealloc");
	CHECK_EQ(ibv_dealloc_td(td0), 0, "dealloc td0");
	CHECK_EQ(ibv_dealloc_td(td1), 0, "dealloc td1");
	CHECK_EQ(ibv_dealloc_pd(pd0), 0, "dealloc");
	CHECK_EQ(ibv_dealloc_pd(pd1), 0, "dealloc");
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	test_api_basics();
	if (!hp)
		return dpvt_finish();
	ctx0 = dpvt_open_dev("dpv0");
	ctx1 = dpvt_open_dev("dpv1");
	if (!ctx0 || !ctx1)
		return 1;
	/* if EAL fell back to --no-huge there is no hugepage memory to find */
	void *probe = dpv_hugepage_alloc(NULL, hp, 64, 64, DPV_RESOURCE_TYPE(DPV_RES_QP));
	bool huge = probe && dpv_is_hugepage_memory(probe) == 1;
	if (probe)
		dpv_hugepage_free(NULL, hp, probe, DPV_RESOURCE_TYPE(DPV_RES_QP));
	if (!huge && !hugepages_configured()) {
		printf("SKIP: no hugepages on this machine (EAL runs with --no-huge)\n");
		dpv_hugepage_allocator_destroy(hp);
		return 77;
	}
	CHECK(huge, "hugepage memory (HugePages_Total > 0)");
	/* the probe went through code QP: start the counting with a fresh allocator */
	CHECK_EQ(dpv_hugepage_allocator_destroy(hp), 0, "destroy probe allocator");
	hp = dpv_hugepage_allocator_create(-1);
	CHECK(hp != NULL, "create");
	if (!hp)
		return dpvt_finish();

	struct {
		const char *name;
		void (*fn)(void);
	} tests[] = {
		{"plain_attr", test_plain_attr},
		{"objects_and_traffic", test_objects_and_traffic},
		{"td_hugepage", test_td_hugepage},
	};
	for (unsigned int i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
		int f0 = dpvt_fail_count();
		tests[i].fn();
		printf("%-28s %s\n", tests[i].name, dpvt_fail_count() == f0 ? "ok" : "FAILED");
	}
	struct dpv_hugepage_stats st;
	uint64_t objs = 0;
	for (uint32_t c = 0; c < DPV_RES_NR; c++)
		if (dpv_hugepage_stats(hp, c, &st) == 0)
			objs += st.objects;
	CHECK_EQ(objs, 0, "no buffers left");
	CHECK_EQ(dpv_hugepage_allocator_destroy(hp), 0, "destroy the allocator at the end");
	ibv_close_device(ctx0);
	ibv_close_device(ctx1);
	return dpvt_finish();
}
