/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Helpers of the parent-domain tests (suite 'func', test/pd): a counting
 * custom allocator for struct ibv_parent_domain_init_attr that records every
 * buffer it hands out (resource code, size, alignment) and checks every call
 * against the contract of ibv_alloc_parent_domain(3) and dpverbs.h; CQ/QP
 * creation through a PD or parent domain; RC and UD traffic with payload
 * verification. Builds on test/func/rc_common.h (check macros, connection
 * helpers). Black-box: only <infiniband/verbs.h>, <dpverbs.h> and the
 * exported API of libdpverbs.so.
 */
#ifndef PD_COMMON_H
#define PD_COMMON_H

#include <pthread.h>
#include <stdatomic.h>

#include <dpverbs.h>

#include "../func/rc_common.h"

/* ---- counting allocator ---- */

#define CA_MAGIC 0x0ca11ca1u
#define CA_MAX_REC 8192

struct ca_rec {
	void *p;
	size_t size, align;
	uint32_t code;
	int frees;               /* times free was called for this buffer */
};

struct ca {
	uint32_t magic;
	pthread_mutex_t lock;
	struct ibv_pd *expect_pd;      /* the parent domain(s) the callbacks must see */
	struct ibv_pd *expect_pd2;
	uint32_t default_mask;         /* codes (1 << code) answered IBV_ALLOCATOR_USE_DEFAULT */
	uint32_t fail_code;            /* alloc returns NULL for this code (0: never) */
	bool use_hugepage;             /* forward to dpv_hugepage_alloc/free */
	struct dpv_hugepage_allocator *hp;
	bool check_hugepage;           /* every buffer must be hugepage memory */
	int allocs[DPV_RES_NR];        /* successful allocations (buffers handed out) */
	int defaults[DPV_RES_NR];      /* IBV_ALLOCATOR_USE_DEFAULT answers */
	int fails[DPV_RES_NR];         /* NULL answers */
	int frees[DPV_RES_NR];
	int bad_type, bad_align, bad_size, bad_pd, bad_ctx, bad_ptr_align, not_zero, not_huge;
	int free_unknown, free_twice, free_bad_type, free_bad_pd;
	struct ca_rec rec[CA_MAX_REC];
	int nrec;
	int live;
	uint64_t live_bytes[DPV_RES_NR];
	int live_objs[DPV_RES_NR];
};

static inline void ca_init(struct ca *c)
{
	memset(c, 0, sizeof(*c));
	c->magic = CA_MAGIC;
	pthread_mutex_init(&c->lock, NULL);
}

static inline bool is_pow2(size_t v) { return v && !(v & (v - 1)); }

static void *ca_alloc(struct ibv_pd *pd, void *pd_context, size_t size, size_t alignment, uint64_t type)
{
	struct ca *c = pd_context;
	if (!c || c->magic != CA_MAGIC)
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
	if (c->nrec < CA_MAX_REC)
		c->rec[c->nrec++] = (struct ca_rec){.p = p, .size = size, .align = alignment, .code = code};
	c->allocs[code]++;
	c->live++;
	c->live_objs[code]++;
	c->live_bytes[code] += size;
	pthread_mutex_unlock(&c->lock);
	return p;
}

static void ca_free(struct ibv_pd *pd, void *pd_context, void *ptr, uint64_t type)
{
	struct ca *c = pd_context;
	if (!c || c->magic != CA_MAGIC)
		return;
	pthread_mutex_lock(&c->lock);
	if (pd != c->expect_pd && pd != c->expect_pd2)
		c->free_bad_pd++;
	/* newest first: an address may be reused after a free */
	struct ca_rec *r = NULL, *old = NULL;
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

/* Counters of allocs/frees back to zero (records of live buffers stay). */
static inline void ca_zero(struct ca *c)
{
	memset(c->allocs, 0, sizeof(c->allocs));
	memset(c->frees, 0, sizeof(c->frees));
	memset(c->defaults, 0, sizeof(c->defaults));
	memset(c->fails, 0, sizeof(c->fails));
}

static const char *const res_name[DPV_RES_NR] = {
	"none", "QP", "QP_SQ", "QP_RQ", "QP_RC", "QP_WRB", "CQ", "CQ_RING", "SRQ", "SRQ_RING",
};

/* Compare a counter array with the expectation (codes listed, each once). */
static inline void ca_expect(const int got[DPV_RES_NR], const int exp[DPV_RES_NR], const char *what,
			     const char *label)
{
	for (int i = 0; i < DPV_RES_NR; i++)
		CHECK(got[i] == exp[i], "%s: %s[%s] = %d, expected %d", label, what, res_name[i], got[i], exp[i]);
}

/* The contract checks every callback made so far. */
static inline void ca_check_contract(struct ca *c, const char *label)
{
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
	(void)label;
}

/* Every buffer handed out so far was freed exactly once. */
static inline void ca_check_all_freed(struct ca *c, const char *label)
{
	int bad = 0;
	for (int i = 0; i < c->nrec; i++)
		if (c->rec[i].frees != 1) {
			if (bad < 5)
				fprintf(stderr, "  %s: buffer %p (%s, %zu B) freed %d times\n", label, c->rec[i].p,
					res_name[c->rec[i].code], c->rec[i].size, c->rec[i].frees);
			bad++;
		}
	CHECK(bad == 0, "%s: %d of %d buffers not freed exactly once", label, bad, c->nrec);
	CHECK_EQ(c->live, 0, "live buffers after destroying everything");
	ca_check_contract(c, label);
}

/* Is p inside a live buffer of this code? */
static inline bool ca_inside(struct ca *c, const void *p, uint32_t code)
{
	for (int i = c->nrec - 1; i >= 0; i--)
		if (!c->rec[i].frees && c->rec[i].code == code && (const uint8_t *)p >= (uint8_t *)c->rec[i].p &&
		    (const uint8_t *)p < (uint8_t *)c->rec[i].p + c->rec[i].size)
			return true;
	return false;
}

static inline struct ibv_pd *parent_new(struct ibv_pd *pd, struct ibv_td *td, struct ca *c)
{
	struct ibv_parent_domain_init_attr a;
	memset(&a, 0, sizeof(a));
	a.pd = pd;
	a.td = td;
	if (c) {
		a.comp_mask = IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS | IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT;
		a.alloc = ca_alloc;
		a.free = ca_free;
		a.pd_context = c;
	}
	errno = 0;
	struct ibv_pd *p = ibv_alloc_parent_domain(pd->context, &a);
	if (!p)
		fprintf(stderr, "ibv_alloc_parent_domain: %s\n", strerror(errno));
	else if (c && !c->expect_pd)
		c->expect_pd = p;
	else if (c)
		c->expect_pd2 = p;
	return p;
}

/* ---- objects ---- */

/* A CQ: through pd with ibv_create_cq_ex (IBV_CQ_INIT_ATTR_MASK_PD) if pd is
 * not NULL, else ibv_create_cq. */
static inline struct ibv_cq *cq_new(struct ibv_context *ctx, struct ibv_pd *pd, int cqe)
{
	if (!pd)
		return ibv_create_cq(ctx, cqe, NULL, NULL, 0);
	struct ibv_cq_init_attr_ex a;
	memset(&a, 0, sizeof(a));
	a.cqe = (uint32_t)cqe;
	a.wc_flags = IBV_WC_STANDARD_FLAGS;
	a.comp_mask = IBV_CQ_INIT_ATTR_MASK_PD;
	a.parent_domain = pd;
	errno = 0;
	struct ibv_cq_ex *x = ibv_create_cq_ex(ctx, &a);
	return x ? ibv_cq_ex_to_cq(x) : NULL;
}

static inline struct ibv_qp *qp_new(struct ibv_pd *pd, enum ibv_qp_type t, struct ibv_cq *scq, struct ibv_cq *rcq,
				    struct ibv_srq *srq, uint64_t send_ops)
{
	struct ibv_qp_init_attr_ex a;
	memset(&a, 0, sizeof(a));
	a.qp_type = t;
	a.send_cq = scq;
	a.recv_cq = rcq;
	a.srq = srq;
	a.cap.max_send_wr = 64;
	a.cap.max_recv_wr = srq ? 0 : 64;
	a.cap.max_send_sge = 2;
	a.cap.max_recv_sge = srq ? 0 : 2;
	a.cap.max_inline_data = 64;
	a.comp_mask = IBV_QP_INIT_ATTR_PD;
	a.pd = pd;
	if (send_ops) {
		a.comp_mask |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
		a.send_ops_flags = send_ops;
	}
	errno = 0;
	return ibv_create_qp_ex(pd->context, &a);
}

static inline struct ibv_srq *srq_new(struct ibv_pd *pd, uint32_t max_wr)
{
	struct ibv_srq_init_attr a;
	memset(&a, 0, sizeof(a));
	a.attr.max_wr = max_wr;
	a.attr.max_sge = 2;
	errno = 0;
	return ibv_create_srq(pd, &a);
}

/* RC/UC: RESET -> RTS, a towards b (a on ctx_a, b on ctx_b). */
static inline int conn_pair(struct ibv_qp *a, struct ibv_context *ctx_a, struct ibv_qp *b, struct ibv_context *ctx_b)
{
	struct rc_opts o = rc_opts_default();
	if (rc_to_init(a, &o) || rc_to_init(b, &o))
		return -1;
	if (rc_to_rtr(a, ctx_b, b->qp_num, &o) || rc_to_rtr(b, ctx_a, a->qp_num, &o))
		return -1;
	if (rc_to_rts(a, &o) || rc_to_rts(b, &o))
		return -1;
	return 0;
}

/* ---- traffic ---- */

#define BUF_LEN (1 << 16)
#define OFF_SEND 0
#define OFF_RECV 8192
#define OFF_WRITE 16384
#define OFF_READSRC 24576
#define OFF_READDST 32768

/* One side of a connected pair: QP, CQs, optional SRQ, a registered buffer. */
struct side {
	struct ibv_context *ctx;
	struct ibv_qp *qp;
	struct ibv_cq *scq, *rcq;
	struct ibv_srq *srq;
	uint8_t *buf;
	struct ibv_mr *mr;
};

static inline int post_recv_side(struct side *s, uint64_t wr_id, size_t off, uint32_t len)
{
	if (s->srq)
		return post_srq_recv_mr(s->srq, s->mr, wr_id, off, len);
	return post_recv_mr(s->qp, s->mr, wr_id, off, len);
}

/*
 * Wait for one completion on cq (up to 3 s); check status, wr_id and opcode.
 * While cq is empty, drive (if not NULL) is polled for zero entries: with
 * thread domains a TD's QPs only progress in ibv_poll_cq on one of the TD's
 * CQs by the owner thread, so the peer's TD must be polled too for its
 * responder to answer (ACKs, READ responses).
 */
static inline bool wait1(struct ibv_cq *cq, struct ibv_cq *drive, uint64_t wr_id, enum ibv_wc_opcode op,
			 const char *label)
{
	struct ibv_wc wc, dummy;
	memset(&wc, 0, sizeof(wc));
	int n = 0;
	uint64_t end = now_ms() + 3000;
	for (;;) {
		n = ibv_poll_cq(cq, 1, &wc);
		if (n != 0 || now_ms() > end)
			break;
		if (drive)
			ibv_poll_cq(drive, 0, &dummy);
	}
	CHECK(n == 1, "%s: one completion, got %d", label, n);
	if (n != 1)
		return false;
	CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == wr_id && wc.opcode == op,
	      "%s: status %s wr_id %llu (exp %llu) opcode %d (exp %d)", label, ibv_wc_status_str(wc.status),
	      (unsigned long long)wc.wr_id, (unsigned long long)wr_id, wc.opcode, op);
	return wc.status == IBV_WC_SUCCESS;
}

/*
 * RC traffic a -> b: SEND (inline 64 B and 3000 B over several packets),
 * RDMA WRITE, RDMA READ, then SEND b -> a; every payload verified.
 * lkey_mr/rkey_mr: MRs to use on a's side for local buffers (default a->mr).
 */
static inline void rc_traffic(struct side *a, struct side *b, uint64_t seed, const char *label)
{
	char l[160];
	/* SEND 64 B inline */
	pat_fill(a->buf + OFF_SEND, 64, seed, 1);
	memset(b->buf + OFF_RECV, 0, 4096);
	CHECK(post_recv_side(b, 11, OFF_RECV, 4096) == 0, "%s: post_recv", label);
	CHECK(post_wr(a->qp, IBV_WR_SEND, 21, a->buf + OFF_SEND, 64, a->mr->lkey, 0, 0, 0,
		      IBV_SEND_SIGNALED | IBV_SEND_INLINE) == 0, "%s: post SEND inline", label);
	snprintf(l, sizeof(l), "%s: SEND inline send CQE", label);
	wait1(a->scq, b->scq, 21, IBV_WC_SEND, l);
	snprintf(l, sizeof(l), "%s: SEND inline recv CQE", label);
	wait1(b->rcq, a->scq, 11, IBV_WC_RECV, l);
	CHECK(pat_check(b->buf + OFF_RECV, 64, seed, 1) < 0, "%s: SEND inline payload", label);

	/* SEND 3000 B (3 packets at MTU 1024) */
	pat_fill(a->buf + OFF_SEND, 3000, seed, 2);
	memset(b->buf + OFF_RECV, 0, 4096);
	CHECK(post_recv_side(b, 12, OFF_RECV, 4096) == 0, "%s: post_recv", label);
	CHECK(post_wr(a->qp, IBV_WR_SEND, 22, a->buf + OFF_SEND, 3000, a->mr->lkey, 0, 0, 0, IBV_SEND_SIGNALED) == 0,
	      "%s: post SEND", label);
	snprintf(l, sizeof(l), "%s: SEND 3000 send CQE", label);
	wait1(a->scq, b->scq, 22, IBV_WC_SEND, l);
	snprintf(l, sizeof(l), "%s: SEND 3000 recv CQE", label);
	wait1(b->rcq, a->scq, 12, IBV_WC_RECV, l);
	CHECK(pat_check(b->buf + OFF_RECV, 3000, seed, 2) < 0, "%s: SEND 3000 payload", label);

	/* RDMA WRITE 5000 B */
	pat_fill(a->buf + OFF_SEND, 5000, seed, 3);
	memset(b->buf + OFF_WRITE, 0, 8192);
	CHECK(post_wr(a->qp, IBV_WR_RDMA_WRITE, 23, a->buf + OFF_SEND, 5000, a->mr->lkey,
		      (uintptr_t)(b->buf + OFF_WRITE), b->mr->rkey, 0, IBV_SEND_SIGNALED) == 0,
	      "%s: post WRITE", label);
	snprintf(l, sizeof(l), "%s: WRITE CQE", label);
	wait1(a->scq, b->scq, 23, IBV_WC_RDMA_WRITE, l);
	CHECK(pat_check(b->buf + OFF_WRITE, 5000, seed, 3) < 0, "%s: WRITE payload", label);

	/* RDMA READ 4000 B */
	pat_fill(b->buf + OFF_READSRC, 4000, seed, 4);
	memset(a->buf + OFF_READDST, 0, 8192);
	CHECK(post_wr(a->qp, IBV_WR_RDMA_READ, 24, a->buf + OFF_READDST, 4000, a->mr->lkey,
		      (uintptr_t)(b->buf + OFF_READSRC), b->mr->rkey, 0, IBV_SEND_SIGNALED) == 0,
	      "%s: post READ", label);
	snprintf(l, sizeof(l), "%s: READ CQE", label);
	wait1(a->scq, b->scq, 24, IBV_WC_RDMA_READ, l);
	CHECK(pat_check(a->buf + OFF_READDST, 4000, seed, 4) < 0, "%s: READ payload", label);

	/* SEND back b -> a */
	pat_fill(b->buf + OFF_SEND, 200, seed, 5);
	memset(a->buf + OFF_RECV, 0, 4096);
	CHECK(post_recv_side(a, 13, OFF_RECV, 4096) == 0, "%s: post_recv (a)", label);
	CHECK(post_wr(b->qp, IBV_WR_SEND, 25, b->buf + OFF_SEND, 200, b->mr->lkey, 0, 0, 0, IBV_SEND_SIGNALED) == 0,
	      "%s: post SEND b->a", label);
	snprintf(l, sizeof(l), "%s: SEND b->a send CQE", label);
	wait1(b->scq, a->scq, 25, IBV_WC_SEND, l);
	snprintf(l, sizeof(l), "%s: SEND b->a recv CQE", label);
	wait1(a->rcq, b->scq, 13, IBV_WC_RECV, l);
	CHECK(pat_check(a->buf + OFF_RECV, 200, seed, 5) < 0, "%s: SEND b->a payload", label);
}

/* UD a -> b (a->qp and b->qp are UD QPs in RTS with qkey), n messages. */
static inline void ud_traffic(struct side *a, struct ibv_pd *ah_pd, struct side *b, uint32_t qkey, int n,
			      uint64_t seed, const char *label)
{
	struct ibv_ah_attr aa;
	memset(&aa, 0, sizeof(aa));
	aa.is_global = 1;
	aa.port_num = 1;
	aa.grh.sgid_index = 1;
	aa.grh.hop_limit = 64;
	CHECK(ibv_query_gid(b->ctx, 1, 1, &aa.grh.dgid) == 0, "%s: query_gid", label);
	errno = 0;
	struct ibv_ah *ah = ibv_create_ah(ah_pd, &aa);
	CHECK(ah != NULL, "%s: create_ah: %s", label, strerror(errno));
	if (!ah)
		return;
	for (int i = 0; i < n; i++) {
		uint32_t len = 100 + (uint32_t)i * 37;
		memset(b->buf + OFF_RECV, 0, 4096);
		CHECK(post_recv_side(b, 100 + (uint64_t)i, OFF_RECV, 40 + len) == 0, "%s: post_recv", label);
		pat_fill(a->buf + OFF_SEND, len, seed, (uint64_t)i);
		struct ibv_sge s = {.addr = (uintptr_t)(a->buf + OFF_SEND), .length = len, .lkey = a->mr->lkey};
		struct ibv_send_wr wr, *bad = NULL;
		memset(&wr, 0, sizeof(wr));
		wr.wr_id = 200 + (uint64_t)i;
		wr.sg_list = &s;
		wr.num_sge = 1;
		wr.opcode = IBV_WR_SEND;
		wr.send_flags = IBV_SEND_SIGNALED;
		wr.wr.ud.ah = ah;
		wr.wr.ud.remote_qpn = b->qp->qp_num;
		wr.wr.ud.remote_qkey = qkey;
		CHECK(ibv_post_send(a->qp, &wr, &bad) == 0, "%s: UD post_send", label);
		char l[160];
		snprintf(l, sizeof(l), "%s: UD send CQE %d", label, i);
		wait1(a->scq, b->scq, 200 + (uint64_t)i, IBV_WC_SEND, l);
		snprintf(l, sizeof(l), "%s: UD recv CQE %d", label, i);
		wait1(b->rcq, a->scq, 100 + (uint64_t)i, IBV_WC_RECV, l);
		CHECK(pat_check(b->buf + OFF_RECV + 40, len, seed, (uint64_t)i) < 0, "%s: UD payload %d", label, i);
	}
	CHECK(ibv_destroy_ah(ah) == 0, "%s: destroy_ah", label);
}

static inline int side_buf(struct side *s, struct ibv_pd *pd)
{
	s->buf = aligned_alloc(4096, BUF_LEN);
	if (!s->buf)
		return -1;
	memset(s->buf, 0, BUF_LEN);
	s->mr = ibv_reg_mr(pd, s->buf, BUF_LEN,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	return s->mr ? 0 : -1;
}

/* Destroy what a side holds (QP, SRQ, CQs, MR, buffer); ctx stays. */
static inline void side_close(struct side *s, const char *label)
{
	if (s->qp)
		CHECK(ibv_destroy_qp(s->qp) == 0, "%s: destroy_qp", label);
	if (s->srq)
		CHECK(ibv_destroy_srq(s->srq) == 0, "%s: destroy_srq", label);
	if (s->scq)
		CHECK(ibv_destroy_cq(s->scq) == 0, "%s: destroy scq", label);
	if (s->rcq && s->rcq != s->scq)
		CHECK(ibv_destroy_cq(s->rcq) == 0, "%s: destroy rcq", label);
	if (s->mr)
		CHECK(ibv_dereg_mr(s->mr) == 0, "%s: dereg_mr", label);
	free(s->buf);
	struct ibv_context *ctx = s->ctx;
	memset(s, 0, sizeof(*s));
	s->ctx = ctx;
}

#endif /* PD_COMMON_H */
