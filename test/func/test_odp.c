/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * On-demand paging, black-box (it runs as is in shared mode, under
 * dpverbsd): RC between dpv0 (A) and dpv1 (B).
 *   caps      ibv_query_device_ex's odp_caps and xrc_odp_caps
 *   reg       ODP registration: nothing faulted in (mincore), implicit MR
 *             (NULL, SIZE_MAX) and its errors, HUGETLB accepted
 *   advise    ibv_advise_mr: every bad input with its errno (as mlx5),
 *             FLUSH faults the range in, NO_FAULT and async do not fail
 *   late      an ODP MR registered over an unmapped range, mapped after:
 *             RDMA WRITE into it, READ from it, SEND from it
 *   implicit  the implicit MR as lkey and rkey: WRITE, READ, atomics, SEND
 *             and receive on ordinary heap memory
 *   fault     a page of an ODP MR that is not mapped: the exact completion
 *             status of each access (remote WRITE/READ/atomic:
 *             REM_ACCESS_ERR; local SEND source, READ/atomic result:
 *             LOC_PROT_ERR; receive buffer: LOC_PROT_ERR at B,
 *             REM_OP_ERR at A), the QPs in ERR, later WRs flushed, and the
 *             process alive (with the implicit MR even with SIGSEGV and
 *             SIGBUS at their default action: reached through the kernel)
 *   rereg     ON_DEMAND added by ibv_rereg_mr: a missing page read as
 *             zeroes before (not ODP), REM_ACCESS_ERR after
 *   ud        UD send and receive on ODP MRs; a missing page: the send
 *             LOC_PROT_ERR (QP to SQE), the receive LOC_PROT_ERR (QP to ERR)
 */
#include <signal.h>
#include <stdint.h>
#include <unistd.h>
#include <sys/mman.h>

#include "dpvt_verbs.h"

static struct dpvt_ep A, B;
static long PG;
#define ODP_ACC (DPVT_ACCESS_ALL | IBV_ACCESS_ON_DEMAND)

/* Pages of [p, p + n pages) resident now. */
static int resident(const void *p, int n)
{
	unsigned char v[64];
	if (n > 64 || mincore((void *)p, (size_t)n * (size_t)PG, v) != 0)
		return -1;
	int r = 0;
	for (int i = 0; i < n; i++)
		r += v[i] & 1;
	return r;
}

static uint8_t *map_pages(int n)
{
	void *p = mmap(NULL, (size_t)n * (size_t)PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

static void pair(struct ibv_qp **qa, struct ibv_qp **qb)
{
	*qa = dpvt_ep_qp(&A, IBV_QPT_RC, 16, 16, NULL);
	*qb = dpvt_ep_qp(&B, IBV_QPT_RC, 16, 16, NULL);
	struct dpvt_conn o = dpvt_conn_default();
	o.retry_cnt = 1;
	o.timeout = 12;
	CHECK(*qa && *qb && !dpvt_connect(*qa, A.ctx, &o, *qb, B.ctx, &o, false), "RC pair up");
}

static void unpair(struct ibv_qp *qa, struct ibv_qp *qb)
{
	struct ibv_wc wc[16];
	if (qa)
		ibv_destroy_qp(qa);
	if (qb)
		ibv_destroy_qp(qb);
	while (ibv_poll_cq(A.scq, 16, wc) > 0 || ibv_poll_cq(A.rcq, 16, wc) > 0 || ibv_poll_cq(B.scq, 16, wc) > 0 ||
	       ibv_poll_cq(B.rcq, 16, wc) > 0)
		;
	dpvt_drain_async(A.ctx);
	dpvt_drain_async(B.ctx);
}

/* One completion on cq with status st (and wr_id). */
static void expect(struct ibv_cq *cq, uint64_t wr_id, enum ibv_wc_status st, const char *what)
{
	struct ibv_wc wc;
	int n = dpvt_poll_n(cq, &wc, 1, 3000);
	CHECK(n == 1 && wc.status == st && wc.wr_id == wr_id, "%s: %d completion(s), %s (wr_id %llu), expected %s (%llu)",
	      what, n, n ? ibv_wc_status_str(wc.status) : "-", n ? (unsigned long long)wc.wr_id : 0ULL,
	      ibv_wc_status_str(st), (unsigned long long)wr_id);
}

static void expect_state(struct ibv_qp *qp, enum ibv_qp_state want, const char *what)
{
	CHECK_EQ(dpvt_qp_state(qp), want, what);
}

/* After the error: the QP is in ERR and a new WR is flushed. */
static void after_error(struct ibv_qp *qa, struct ibv_mr *mr, void *addr, const char *what)
{
	char w[128];
	snprintf(w, sizeof(w), "%s: requester QP state", what);
	expect_state(qa, IBV_QPS_ERR, w);
	CHECK_EQ(dpvt_post_wr(qa, IBV_WR_SEND, 99, addr, 8, mr->lkey, 0, 0, 0, IBV_SEND_SIGNALED), 0, "post after error");
	snprintf(w, sizeof(w), "%s: later WR", what);
	expect(A.scq, 99, IBV_WC_WR_FLUSH_ERR, w);
}

/* ---- caps ---- */
static void t_caps(void)
{
	struct ibv_device_attr_ex a;
	memset(&a, 0, sizeof(a));
	CHECK_EQ(ibv_query_device_ex(A.ctx, NULL, &a), 0, "query_device_ex");
	const uint32_t all = IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV | IBV_ODP_SUPPORT_WRITE |
			     IBV_ODP_SUPPORT_READ | IBV_ODP_SUPPORT_ATOMIC | IBV_ODP_SUPPORT_SRQ_RECV;
	CHECK_EQ(a.odp_caps.general_caps, IBV_ODP_SUPPORT | IBV_ODP_SUPPORT_IMPLICIT, "general_caps");
	CHECK_EQ(a.odp_caps.per_transport_caps.rc_odp_caps, all, "rc_odp_caps");
	CHECK_EQ(a.odp_caps.per_transport_caps.ud_odp_caps,
		 IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV | IBV_ODP_SUPPORT_SRQ_RECV, "ud_odp_caps");
	CHECK_EQ(a.odp_caps.per_transport_caps.uc_odp_caps,
		 IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV | IBV_ODP_SUPPORT_WRITE | IBV_ODP_SUPPORT_SRQ_RECV,
		 "uc_odp_caps");
	CHECK_EQ(a.xrc_odp_caps, all, "xrc_odp_caps");
}

/* ---- registration ---- */
static void t_reg(void)
{
	uint8_t *p = map_pages(8);
	CHECK(p != NULL, "mmap");
	if (!p)
		return;
	/* nothing is faulted in: neither by the library nor by dpverbsd */
	struct ibv_mr *mr = ibv_reg_mr(A.pd, p, 8 * (size_t)PG, ODP_ACC);
	CHECK(mr != NULL, "reg ODP MR: %s", strerror(errno));
	CHECK_EQ(resident(p, 8), 0, "pages resident after an ODP registration");
	if (mr)
		CHECK_EQ(ibv_dereg_mr(mr), 0, "dereg");
	mr = ibv_reg_mr(A.pd, p, 8 * (size_t)PG, ODP_ACC | IBV_ACCESS_HUGETLB);
	CHECK(mr != NULL, "reg ODP | HUGETLB: %s", strerror(errno));
	if (mr)
		ibv_dereg_mr(mr);
	munmap(p, 8 * (size_t)PG);

	/* implicit: (NULL, SIZE_MAX) with ON_DEMAND and iova 0 only */
	struct ibv_mr *im = ibv_reg_mr(A.pd, NULL, SIZE_MAX, ODP_ACC);
	CHECK(im && im->addr == NULL && im->length == SIZE_MAX, "implicit MR: %s", im ? "fields" : strerror(errno));
	if (im)
		CHECK_EQ(ibv_dereg_mr(im), 0, "dereg implicit");
	CHECK_NULL_ERRNO(ibv_reg_mr(A.pd, NULL, SIZE_MAX, DPVT_ACCESS_ALL), EINVAL);
	CHECK_NULL_ERRNO(ibv_reg_mr_iova(A.pd, NULL, SIZE_MAX, 4096, ODP_ACC), EINVAL);
	CHECK_NULL_ERRNO(ibv_reg_mr(A.pd, NULL, 4096, ODP_ACC), EFAULT);
	/* ON_DEMAND cannot be taken away from an implicit MR left implicit */
	im = ibv_reg_mr(A.pd, NULL, SIZE_MAX, ODP_ACC);
	if (im) {
		errno = 0;
		CHECK_EQ(ibv_rereg_mr(im, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0, DPVT_ACCESS_ALL),
			 IBV_REREG_MR_ERR_INPUT, "rereg implicit without ON_DEMAND");
		CHECK_EQ(errno, EINVAL, "rereg implicit: errno");
		ibv_dereg_mr(im);
	}
}

/* ---- ibv_advise_mr ---- */
static void t_advise(void)
{
	uint8_t *p = map_pages(8);
	struct ibv_pd *pd2 = ibv_alloc_pd(A.ctx);
	CHECK(p && pd2, "mmap, second PD");
	if (!p || !pd2)
		return;
	struct ibv_mr *mr = ibv_reg_mr(A.pd, p, 4 * (size_t)PG, ODP_ACC);
	struct ibv_mr *ro = ibv_reg_mr(A.pd, p, 4 * (size_t)PG, IBV_ACCESS_REMOTE_READ | IBV_ACCESS_ON_DEMAND);
	/* not ODP: on A.buf, as dpverbsd reads a non-ODP MR's first and last byte */
	struct ibv_mr *plain = ibv_reg_mr(A.pd, A.buf, 4 * (size_t)PG, IBV_ACCESS_LOCAL_WRITE);
	struct ibv_mr *other = ibv_reg_mr(pd2, p, 4 * (size_t)PG, ODP_ACC);
	CHECK(mr && ro && plain && other, "MRs");
	if (!mr || !ro || !plain || !other)
		return;
	const uint32_t F = IBV_ADVISE_MR_FLAG_FLUSH;
	const enum ibv_advise_mr_advice PF = IBV_ADVISE_MR_ADVICE_PREFETCH, PW = IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE,
					 NF = IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT;
	struct ibv_sge s = {.addr = (uintptr_t)p, .length = 2 * (uint32_t)PG, .lkey = mr->lkey};
	struct ibv_sge bad;

	CHECK_EQ(ibv_advise_mr(A.pd, PW, F, &s, 0), EINVAL, "no SGE");
	CHECK_EQ(ibv_advise_mr(A.pd, PW, F, &s, 5000), EINVAL, "more SGEs than a command holds");
	CHECK_EQ(ibv_advise_mr(A.pd, PW, 2, &s, 1), EINVAL, "unknown flag");
	CHECK_EQ(ibv_advise_mr(A.pd, PW, F, NULL, 1), EFAULT, "NULL sg_list");
	CHECK_EQ(ibv_advise_mr(A.pd, (enum ibv_advise_mr_advice)7, F, &s, 1), EOPNOTSUPP, "unknown advice");
	bad = s;
	bad.lkey = mr->lkey ^ 0x80;
	CHECK_EQ(ibv_advise_mr(A.pd, PF, F, &bad, 1), ENOENT, "stale key");
	CHECK_EQ(ibv_advise_mr(A.pd, PF, 0, &bad, 1), ENOENT, "stale key, async");
	bad.lkey = plain->lkey;
	CHECK_EQ(ibv_advise_mr(A.pd, PF, F, &bad, 1), ENOENT, "MR without ON_DEMAND");
	bad.lkey = other->lkey;
	CHECK_EQ(ibv_advise_mr(A.pd, PF, F, &bad, 1), EPERM, "MR of another PD");
	bad.lkey = ro->lkey;
	CHECK_EQ(ibv_advise_mr(A.pd, PW, F, &bad, 1), EPERM, "PREFETCH_WRITE of an MR without write access");
	bad = s;
	bad.addr = (uintptr_t)p + 3 * (uint64_t)PG;
	CHECK_EQ(ibv_advise_mr(A.pd, PW, F, &bad, 1), EFAULT, "range past the MR");

	/* the good case faults the pages in, for writing */
	CHECK_EQ(resident(p, 4), 0, "nothing resident before");
	CHECK_EQ(ibv_advise_mr(A.pd, NF, F, &s, 1), 0, "NO_FAULT");
	CHECK_EQ(resident(p, 4), 0, "NO_FAULT faults nothing in");
	CHECK_EQ(ibv_advise_mr(A.pd, PW, F, &s, 1), 0, "PREFETCH_WRITE, FLUSH");
	CHECK_EQ(resident(p, 4), 2, "the two pages advised are resident");
	struct ibv_sge two[2] = {s, s};
	two[1].addr += 2 * (uint64_t)PG;
	CHECK_EQ(ibv_advise_mr(A.pd, PF, 0, two, 2), 0, "PREFETCH, async, two SGEs");
	CHECK_EQ(resident(p, 4), 4, "all four resident");

	bad = s;
	bad.lkey = ro->lkey;
	CHECK_EQ(ibv_advise_mr(A.pd, PF, F, &bad, 1), 0, "PREFETCH of the read-only MR");
	bad.addr = (uintptr_t)p + 3 * (uint64_t)PG;
	bad.lkey = mr->lkey;
	CHECK_EQ(ibv_advise_mr(A.pd, PW, 0, &bad, 1), 0, "range past the MR, async (not checked, as mlx5)");

	/* a page that is not mapped: EFAULT with FLUSH; NO_FAULT and async do not fail */
	munmap(p + PG, (size_t)PG);
	CHECK_EQ(ibv_advise_mr(A.pd, PF, F, &s, 1), EFAULT, "PREFETCH of an unmapped page");
	CHECK_EQ(ibv_advise_mr(A.pd, PW, F, &s, 1), EFAULT, "PREFETCH_WRITE of an unmapped page");
	CHECK_EQ(ibv_advise_mr(A.pd, NF, F, &s, 1), 0, "NO_FAULT over an unmapped page");
	CHECK_EQ(ibv_advise_mr(A.pd, PW, 0, &s, 1), 0, "async over an unmapped page");
	/* the implicit MR: any range of the process */
	struct ibv_mr *im = ibv_reg_mr(A.pd, NULL, SIZE_MAX, ODP_ACC);
	CHECK(im != NULL, "implicit MR");
	if (im) {
		struct ibv_sge is = {.addr = (uintptr_t)p + 4 * (uint64_t)PG, .length = 4 * (uint32_t)PG, .lkey = im->lkey};
		CHECK_EQ(ibv_advise_mr(A.pd, PW, F, &is, 1), 0, "implicit: PREFETCH_WRITE");
		CHECK_EQ(resident(p + 4 * PG, 4), 4, "implicit: resident");
		is.addr = (uintptr_t)p + PG;
		is.length = (uint32_t)PG;
		CHECK_EQ(ibv_advise_mr(A.pd, PF, F, &is, 1), EFAULT, "implicit: unmapped page");
		ibv_dereg_mr(im);
	}
	ibv_dereg_mr(mr);
	ibv_dereg_mr(ro);
	ibv_dereg_mr(plain);
	ibv_dereg_mr(other);
	ibv_dealloc_pd(pd2);
	munmap(p, 8 * (size_t)PG);
}

/* ---- an ODP MR over a range mapped after the registration ---- */
static void t_late(void)
{
	const int n = 4;
	uint8_t *p = map_pages(n);
	CHECK(p != NULL, "mmap");
	if (!p)
		return;
	munmap(p, (size_t)n * (size_t)PG); /* the range is registered while nothing is there */
	struct ibv_mr *bm = ibv_reg_mr(B.pd, p, (size_t)n * (size_t)PG, ODP_ACC);
	CHECK(bm != NULL, "reg ODP MR over an unmapped range: %s", strerror(errno));
	void *q = mmap(p, (size_t)n * (size_t)PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
		       -1, 0);
	CHECK(q == p, "mapped after the registration");
	if (!bm || q != p)
		return;
	struct ibv_qp *qa, *qb;
	pair(&qa, &qb);
	uint8_t *src = A.buf, *dst = A.buf + 32768;
	uint32_t len = 3 * (uint32_t)PG; /* several packets, pages first touched by the engine */
	dpvt_fill_pattern(src, len, 7);
	CHECK_EQ(dpvt_post_wr(qa, IBV_WR_RDMA_WRITE, 1, src, len, A.mr->lkey, (uintptr_t)p + 100, bm->rkey, 0,
			      IBV_SEND_SIGNALED), 0, "post WRITE");
	expect(A.scq, 1, IBV_WC_SUCCESS, "late: RDMA WRITE");
	CHECK_EQ(dpvt_check_pattern(p + 100, len, 7), -1, "late: bytes written");
	memset(dst, 0, len);
	CHECK_EQ(dpvt_post_wr(qa, IBV_WR_RDMA_READ, 2, dst, len, A.mr->lkey, (uintptr_t)p + 100, bm->rkey, 0,
			      IBV_SEND_SIGNALED), 0, "post READ");
	expect(A.scq, 2, IBV_WC_SUCCESS, "late: RDMA READ");
	CHECK_EQ(dpvt_check_pattern(dst, len, 7), -1, "late: bytes read");
	/* B sends from its late-mapped ODP MR into A's buffer */
	CHECK_EQ(dpvt_post_recv(qa, A.mr, 3, 0, 8192), 0, "post recv");
	CHECK_EQ(dpvt_post_wr(qb, IBV_WR_SEND, 4, p + 100, 5000, bm->lkey, 0, 0, 0, IBV_SEND_SIGNALED), 0, "post SEND");
	expect(B.scq, 4, IBV_WC_SUCCESS, "late: SEND from the ODP MR");
	expect(A.rcq, 3, IBV_WC_SUCCESS, "late: receive");
	CHECK_EQ(dpvt_check_pattern(A.buf, 5000, 7), -1, "late: bytes sent");
	unpair(qa, qb);
	ibv_dereg_mr(bm);
	munmap(p, (size_t)n * (size_t)PG);
}

/* ---- the implicit MR on heap memory ---- */
static void t_implicit(void)
{
	struct ibv_mr *ia = ibv_reg_mr(A.pd, NULL, SIZE_MAX, ODP_ACC);
	struct ibv_mr *ib = ibv_reg_mr(B.pd, NULL, SIZE_MAX, ODP_ACC);
	uint8_t *ha = malloc(65536), *hb = malloc(65536);
	CHECK(ia && ib && ha && hb, "implicit MRs, heap buffers");
	if (!ia || !ib || !ha || !hb)
		return;
	struct ibv_qp *qa, *qb;
	pair(&qa, &qb);
	dpvt_fill_pattern(ha, 20000, 11);
	memset(hb, 0, 65536);
	CHECK_EQ(dpvt_post_wr(qa, IBV_WR_RDMA_WRITE, 1, ha, 20000, ia->lkey, (uintptr_t)hb + 8, ib->rkey, 0,
			      IBV_SEND_SIGNALED), 0, "post WRITE");
	expect(A.scq, 1, IBV_WC_SUCCESS, "implicit: RDMA WRITE");
	CHECK_EQ(dpvt_check_pattern(hb + 8, 20000, 11), -1, "implicit: bytes written");
	memset(ha + 32768, 0, 20000);
	CHECK_EQ(dpvt_post_wr(qa, IBV_WR_RDMA_READ, 2, ha + 32768, 20000, ia->lkey, (uintptr_t)hb + 8, ib->rkey, 0,
			      IBV_SEND_SIGNALED), 0, "post READ");
	expect(A.scq, 2, IBV_WC_SUCCESS, "implicit: RDMA READ");
	CHECK_EQ(dpvt_check_pattern(ha + 32768, 20000, 11), -1, "implicit: bytes read");
	uint64_t *word = (uint64_t *)(void *)(hb + 40000), *res = (uint64_t *)(void *)(ha + 60000);
	*word = 40;
	CHECK_EQ(dpvt_post_atomic(qa, IBV_WR_ATOMIC_FETCH_AND_ADD, 3, res, ia->lkey, (uintptr_t)word, ib->rkey, 2, 0,
				  NULL), 0, "post FETCH_AND_ADD");
	expect(A.scq, 3, IBV_WC_SUCCESS, "implicit: FETCH_AND_ADD");
	CHECK(*res == 40 && *word == 42, "implicit: fetch-and-add: orig %llu, now %llu", (unsigned long long)*res,
	      (unsigned long long)*word);
	CHECK_EQ(dpvt_post_atomic(qa, IBV_WR_ATOMIC_CMP_AND_SWP, 4, res, ia->lkey, (uintptr_t)word, ib->rkey, 42, 7,
				  NULL), 0, "post CMP_AND_SWP");
	expect(A.scq, 4, IBV_WC_SUCCESS, "implicit: CMP_AND_SWP");
	CHECK(*res == 42 && *word == 7, "implicit: compare-and-swap: orig %llu, now %llu", (unsigned long long)*res,
	      (unsigned long long)*word);
	/* SEND from and receive into heap memory through the implicit keys */
	struct ibv_sge rs = {.addr = (uintptr_t)hb + 50000, .length = 8192, .lkey = ib->lkey};
	struct ibv_recv_wr rw = {.wr_id = 5, .sg_list = &rs, .num_sge = 1}, *bad;
	CHECK_EQ(ibv_post_recv(qb, &rw, &bad), 0, "post recv (implicit lkey)");
	CHECK_EQ(dpvt_post_wr(qa, IBV_WR_SEND, 6, ha, 3000, ia->lkey, 0, 0, 0, IBV_SEND_SIGNALED), 0, "post SEND");
	expect(A.scq, 6, IBV_WC_SUCCESS, "implicit: SEND");
	expect(B.rcq, 5, IBV_WC_SUCCESS, "implicit: receive");
	CHECK_EQ(dpvt_check_pattern(hb + 50000, 3000, 11), -1, "implicit: bytes received");
	unpair(qa, qb);
	CHECK_EQ(ibv_dereg_mr(ia), 0, "dereg implicit A");
	CHECK_EQ(ibv_dereg_mr(ib), 0, "dereg implicit B");
	free(ha);
	free(hb);
}

/* ---- a page of an ODP MR that is not mapped ---- */
enum fault_case {
	F_WRITE,       /* RDMA WRITE into B's missing page */
	F_READ,        /* RDMA READ of B's missing page */
	F_ATOMIC,      /* atomic on B's missing page */
	F_IMPLICIT,    /* RDMA WRITE through B's implicit rkey to a missing page */
	F_RECV,        /* SEND into B's receive buffer on a missing page */
	F_SEND_SRC,    /* SEND from A's missing page */
	F_READ_DST,    /* READ response into A's missing page */
	F_ATOMIC_DST,  /* atomic result into A's missing page */
	F_IMPLICIT_SRC, /* SEND from a missing page through A's implicit lkey */
};

static const struct {
	const char *name;
	enum ibv_wc_status st;  /* A's completion */
	bool remote;            /* B's responder fails: its QP goes to ERR too */
} fault_cases[] = {
	[F_WRITE] = {"WRITE into a missing page", IBV_WC_REM_ACCESS_ERR, true},
	[F_READ] = {"READ of a missing page", IBV_WC_REM_ACCESS_ERR, true},
	[F_ATOMIC] = {"atomic on a missing page", IBV_WC_REM_ACCESS_ERR, true},
	[F_IMPLICIT] = {"implicit WRITE into a missing page", IBV_WC_REM_ACCESS_ERR, true},
	[F_RECV] = {"SEND into a missing receive page", IBV_WC_REM_OP_ERR, true},
	[F_SEND_SRC] = {"SEND from a missing page", IBV_WC_LOC_PROT_ERR, false},
	[F_READ_DST] = {"READ into a missing page", IBV_WC_LOC_PROT_ERR, false},
	[F_ATOMIC_DST] = {"atomic result into a missing page", IBV_WC_LOC_PROT_ERR, false},
	[F_IMPLICIT_SRC] = {"implicit SEND from a missing page", IBV_WC_LOC_PROT_ERR, false},
};

/* A's implicit MR (F_IMPLICIT_SRC) */
static struct ibv_mr *g_ia;

/* Post the case's WR (wr_id 1) from A; pa/pb: 3 pages each, the middle one
 * unmapped, under the ODP MRs ma/mb; ib: B's implicit MR. */
static int fault_post(enum fault_case c, struct ibv_qp *qa, struct ibv_qp *qb, uint8_t *pa, uint8_t *pb,
		      struct ibv_mr *ma, struct ibv_mr *mb, struct ibv_mr *ib)
{
	const unsigned int S = IBV_SEND_SIGNALED;
	uint8_t *good = A.buf, *hole_a = pa + PG, *hole_b = pb + PG;
	switch (c) {
	case F_WRITE: /* starts on a good page, fails on the second packet's page */
		return dpvt_post_wr(qa, IBV_WR_RDMA_WRITE, 1, good, 2 * (uint32_t)PG, A.mr->lkey, (uintptr_t)pb, mb->rkey,
				    0, S);
	case F_READ:
		return dpvt_post_wr(qa, IBV_WR_RDMA_READ, 1, good, 2 * (uint32_t)PG, A.mr->lkey, (uintptr_t)pb, mb->rkey,
				    0, S);
	case F_ATOMIC:
		return dpvt_post_atomic(qa, IBV_WR_ATOMIC_FETCH_AND_ADD, 1, (uint64_t *)(void *)good, A.mr->lkey,
					(uintptr_t)hole_b, mb->rkey, 1, 0, NULL);
	case F_IMPLICIT:
		return dpvt_post_wr(qa, IBV_WR_RDMA_WRITE, 1, good, 64, A.mr->lkey, (uintptr_t)hole_b + 64, ib->rkey, 0, S);
	case F_RECV: {
		struct ibv_sge rs = {.addr = (uintptr_t)hole_b, .length = 4096, .lkey = mb->lkey};
		struct ibv_recv_wr rw = {.wr_id = 2, .sg_list = &rs, .num_sge = 1}, *bad;
		if (ibv_post_recv(qb, &rw, &bad))
			return -1;
		return dpvt_post_wr(qa, IBV_WR_SEND, 1, good, 100, A.mr->lkey, 0, 0, 0, S);
	}
	case F_SEND_SRC:
		return dpvt_post_wr(qa, IBV_WR_SEND, 1, hole_a, 100, ma->lkey, 0, 0, 0, S);
	case F_READ_DST:
		return dpvt_post_wr(qa, IBV_WR_RDMA_READ, 1, hole_a, 64, ma->lkey, (uintptr_t)B.buf, B.mr->rkey, 0, S);
	case F_ATOMIC_DST:
		return dpvt_post_atomic(qa, IBV_WR_ATOMIC_FETCH_AND_ADD, 1, (uint64_t *)(void *)hole_a, ma->lkey,
					(uintptr_t)B.buf, B.mr->rkey, 1, 0, NULL);
	case F_IMPLICIT_SRC:
		return dpvt_post_wr(qa, IBV_WR_SEND, 1, hole_a + 8, 100, g_ia->lkey, 0, 0, 0, S);
	}
	return -1;
}

static void t_fault(enum fault_case c)
{
	const char *what = fault_cases[c].name;
	uint8_t *pa = map_pages(3), *pb = map_pages(3);
	CHECK(pa && pb, "mmap");
	if (!pa || !pb)
		return;
	struct ibv_mr *ma = ibv_reg_mr(A.pd, pa, 3 * (size_t)PG, ODP_ACC);
	struct ibv_mr *mb = ibv_reg_mr(B.pd, pb, 3 * (size_t)PG, ODP_ACC);
	struct ibv_mr *ib = ibv_reg_mr(B.pd, NULL, SIZE_MAX, ODP_ACC);
	CHECK(ma && mb && ib, "%s: MRs", what);
	g_ia = ibv_reg_mr(A.pd, NULL, SIZE_MAX, ODP_ACC);
	CHECK(g_ia != NULL, "%s: A's implicit MR", what);
	struct ibv_qp *qa, *qb;
	pair(&qa, &qb);
	/* after the QPs: their rings (shared mode: memfd regions the library
	 * maps) must not land in the hole */
	munmap(pa + PG, (size_t)PG);
	munmap(pb + PG, (size_t)PG);
	/* an implicit MR's pages are reached through the kernel, not under
	 * the engine's SIGSEGV guard: a process whose handler is the default
	 * one survives the access to a missing page */
	bool dfl = c == F_IMPLICIT || c == F_IMPLICIT_SRC;
	struct sigaction sa = {.sa_handler = SIG_DFL}, old_segv, old_bus;
	sigemptyset(&sa.sa_mask);
	if (dfl) {
		sigaction(SIGSEGV, &sa, &old_segv);
		sigaction(SIGBUS, &sa, &old_bus);
	}
	if (ma && mb && ib && g_ia && qa && qb) {
		CHECK_EQ(fault_post(c, qa, qb, pa, pb, ma, mb, ib), 0, what);
		expect(A.scq, 1, fault_cases[c].st, what);
		if (c == F_RECV)
			expect(B.rcq, 2, IBV_WC_LOC_PROT_ERR, "SEND into a missing receive page: the receive");
		after_error(qa, A.mr, A.buf, what);
		if (fault_cases[c].remote) {
			char w[128];
			snprintf(w, sizeof(w), "%s: responder QP state", what);
			expect_state(qb, IBV_QPS_ERR, w);
		}
	}
	if (dfl) {
		sigaction(SIGSEGV, &old_segv, NULL);
		sigaction(SIGBUS, &old_bus, NULL);
	}
	unpair(qa, qb);
	if (g_ia)
		ibv_dereg_mr(g_ia);
	g_ia = NULL;
	if (ib)
		ibv_dereg_mr(ib);
	if (ma)
		ibv_dereg_mr(ma);
	if (mb)
		ibv_dereg_mr(mb);
	munmap(pa, 3 * (size_t)PG);
	munmap(pb, 3 * (size_t)PG);
}

/* ---- ON_DEMAND given by ibv_rereg_mr: the missing page turns from zeroes
 * (an MR that is not on demand: an RNIC's pinned page) into an error ---- */
static void t_rereg(void)
{
	uint8_t *pb = map_pages(2);
	CHECK(pb != NULL, "mmap");
	if (!pb)
		return;
	memset(pb, 0x5a, 2 * (size_t)PG);
	struct ibv_mr *mb = ibv_reg_mr(B.pd, pb, 2 * (size_t)PG, DPVT_ACCESS_ALL);
	CHECK(mb != NULL, "reg (not ODP)");
	struct ibv_qp *qa, *qb;
	pair(&qa, &qb);
	munmap(pb + PG, (size_t)PG);
	if (mb && qa && qb) {
		memset(A.buf, 0xff, 64);
		CHECK_EQ(dpvt_post_wr(qa, IBV_WR_RDMA_READ, 1, A.buf, 64, A.mr->lkey, (uintptr_t)pb + PG, mb->rkey, 0,
				      IBV_SEND_SIGNALED), 0, "post READ");
		expect(A.scq, 1, IBV_WC_SUCCESS, "rereg: READ of a missing page, MR not on demand");
		CHECK(A.buf[0] == 0 && A.buf[63] == 0, "rereg: zeroes read (%#x %#x)", A.buf[0], A.buf[63]);
		CHECK_EQ(ibv_rereg_mr(mb, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0, ODP_ACC), 0, "rereg: + ON_DEMAND");
		CHECK_EQ(dpvt_post_wr(qa, IBV_WR_RDMA_READ, 2, A.buf, 64, A.mr->lkey, (uintptr_t)pb + PG, mb->rkey, 0,
				      IBV_SEND_SIGNALED), 0, "post READ");
		expect(A.scq, 2, IBV_WC_REM_ACCESS_ERR, "rereg: READ of a missing page, MR on demand");
		after_error(qa, A.mr, A.buf, "rereg");
		expect_state(qb, IBV_QPS_ERR, "rereg: responder QP state");
	}
	unpair(qa, qb);
	if (mb)
		ibv_dereg_mr(mb);
	munmap(pb, (size_t)PG);
}

/* ---- UD: ODP send and receive, and a missing page on each side ---- */
static void t_ud(void)
{
	struct dpvt_ep C, D;
	const uint32_t qkey = 0x11111111;
	memset(&C, 0, sizeof(C));
	memset(&D, 0, sizeof(D));
	uint8_t *pc = map_pages(3), *pd = map_pages(3);
	bool up = !dpvt_ud_ep_open(&C, "dpv0", qkey, false) && !dpvt_ud_ep_open(&D, "dpv1", qkey, false) && pc && pd;
	struct ibv_mr *mc = up ? ibv_reg_mr(C.pd, pc, 3 * (size_t)PG, ODP_ACC) : NULL;
	struct ibv_mr *md = up ? ibv_reg_mr(D.pd, pd, 3 * (size_t)PG, ODP_ACC) : NULL;
	struct ibv_ah *ah = up ? dpvt_ah_new(C.pd, D.ctx, 1, 1) : NULL;
	CHECK(up && mc && md && ah, "UD endpoints, ODP MRs, AH");
	if (mc && md && ah) {
		munmap(pc + PG, (size_t)PG);
		munmap(pd + PG, (size_t)PG);
		uint32_t dqpn = D.qp->qp_num;
		dpvt_fill_pattern(pc + 2 * PG, 500, 3);
		CHECK_EQ(dpvt_post_recv(D.qp, md, 1, 0, 2048), 0, "UD: post recv (ODP)");
		CHECK_EQ(dpvt_post_ud_send(C.qp, ah, dqpn, qkey, 2, mc, 2 * (size_t)PG, 500, IBV_SEND_SIGNALED), 0,
			 "UD: post send (ODP)");
		expect(C.scq, 2, IBV_WC_SUCCESS, "UD: send from an ODP MR");
		expect(D.rcq, 1, IBV_WC_SUCCESS, "UD: receive into an ODP MR");
		CHECK_EQ(dpvt_check_pattern(pd + 40, 500, 3), -1, "UD: bytes after the GRH");
		/* a send from a missing page: LOC_PROT_ERR, the QP to SQE */
		CHECK_EQ(dpvt_post_ud_send(C.qp, ah, dqpn, qkey, 3, mc, (size_t)PG, 100, IBV_SEND_SIGNALED), 0,
			 "UD: post send from a missing page");
		expect(C.scq, 3, IBV_WC_LOC_PROT_ERR, "UD: send from a missing page");
		expect_state(C.qp, IBV_QPS_SQE, "UD: sender QP state");
		/* a receive into a missing page: LOC_PROT_ERR at D, its QP to ERR */
		CHECK_EQ(dpvt_qp_set_state(C.qp, IBV_QPS_RTS), 0, "UD: SQE -> RTS");
		CHECK_EQ(dpvt_post_recv(D.qp, md, 4, (size_t)PG, 2048), 0, "UD: post recv into a missing page");
		CHECK_EQ(dpvt_post_ud_send(C.qp, ah, dqpn, qkey, 5, C.mr, 0, 100, IBV_SEND_SIGNALED), 0, "UD: post send");
		expect(C.scq, 5, IBV_WC_SUCCESS, "UD: send to a missing receive page");
		expect(D.rcq, 4, IBV_WC_LOC_PROT_ERR, "UD: receive into a missing page");
		expect_state(D.qp, IBV_QPS_ERR, "UD: receiver QP state");
	}
	if (ah)
		ibv_destroy_ah(ah);
	dpvt_ep_release(&C, NULL);
	dpvt_ep_release(&D, NULL);
	if (mc)
		ibv_dereg_mr(mc);
	if (md)
		ibv_dereg_mr(md);
	dpvt_ep_close(&C);
	dpvt_ep_close(&D);
	if (pc)
		munmap(pc, 3 * (size_t)PG);
	if (pd)
		munmap(pd, 3 * (size_t)PG);
}

int main(void)
{
	PG = sysconf(_SC_PAGESIZE);
	unsetenv("DPVERBS_FAULT");
	if (dpvt_ep_open(&A, "dpv0", 256, false) || dpvt_ep_open(&B, "dpv1", 256, false) ||
	    dpvt_ep_buf(&A, NULL, 65536, DPVT_ACCESS_ALL) || dpvt_ep_buf(&B, NULL, 65536, DPVT_ACCESS_ALL)) {
		printf("0 passed, 1 failed\n");
		return 1;
	}
	t_caps();
	t_reg();
	t_advise();
	t_late();
	t_implicit();
	for (unsigned int c = 0; c < sizeof(fault_cases) / sizeof(fault_cases[0]); c++)
		t_fault((enum fault_case)c);
	t_ud();
	t_rereg();
	/* the traffic still works after all these errors */
	t_implicit();
	dpvt_ep_close(&A);
	dpvt_ep_close(&B);
	return dpvt_finish();
}
