/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * RC/UC error paths between dpv0 (requester A) and dpv1 (responder B):
 * (a) a vanished peer -> RETRY_EXC_ERR in about (retry_cnt+1)*timeout, ERR,
 *     flushes; (b) RNR retry exhausted / infinite RNR retry; (c) remote
 * access errors (bad rkey, bounds, rights, foreign PD, unaligned atomic at
 * post time); (d) local protection; (e) receive buffer too small;
 * (f) async events; (g) ibv_query_qp; (h) UC without faults.
 *   test_rc_errors            all of the above
 *   test_rc_errors uc_fault   UC stream under DPVERBS_FAULT drop=0.2 (set by
 *                             the test unless given)
 */
#include <time.h>
#include <sys/mman.h>
#include <unistd.h>
#include <arpa/inet.h>

#include "dpvt_verbs.h"

/* WHITE-BOX: internal headers. Their uses stay in this file, each marked
 * WHITE-BOX; test/lib (dpvt_*.h) uses only the public verbs API. */
#include "dpv_verbs.h"
#include "dpv_port.h"
#include "dpv_fault.h"

static struct dpvt_ep A, B;
static struct dpv_port *P0, *P1; /* WHITE-BOX: transport counters */
static uint8_t *abuf, *bbuf;
static struct ibv_mr *amr, *bmr;
#define BUFSZ (1u << 20)

/* WHITE-BOX */
static uint64_t cnt(struct dpv_port *p, enum dpv_cnt c) { return DPV_STAT_READ(p, cnt[c]); }

/* A fresh connected pair; o_a/o_b may be NULL for defaults. */
static int pair(struct ibv_qp **qa, struct ibv_qp **qb, const struct dpvt_conn *oa, const struct dpvt_conn *ob,
		bool b_rtr_only, enum ibv_qp_type t, struct ibv_srq *srq)
{
	struct dpvt_conn da = dpvt_conn_default(), db = dpvt_conn_default();
	*qa = dpvt_ep_qp(&A, t, 64, 64, NULL);
	*qb = dpvt_ep_qp(&B, t, 64, 64, srq);
	if (!*qa || !*qb)
		return -1;
	return dpvt_connect(*qa, A.ctx, oa ? oa : &da, *qb, B.ctx, ob ? ob : &db, b_rtr_only);
}

static void unpair(struct ibv_qp *qa, struct ibv_qp *qb)
{
	if (qa)
		ibv_destroy_qp(qa);
	if (qb)
		ibv_destroy_qp(qb);
	struct ibv_wc wc[16];
	while (ibv_poll_cq(A.scq, 16, wc) > 0 || ibv_poll_cq(A.rcq, 16, wc) > 0 || ibv_poll_cq(B.scq, 16, wc) > 0 ||
	       ibv_poll_cq(B.rcq, 16, wc) > 0)
		;
	dpvt_drain_async(A.ctx);
	dpvt_drain_async(B.ctx);
}

/* Expect n send completions on A: first st0, the rest flushed. */
static void expect_err_then_flush(const char *what, enum ibv_wc_status st0, int n, unsigned int ms)
{
	struct ibv_wc wc[16];
	int got = dpvt_poll_n(A.scq, wc, n, ms);
	CHECK_EQ(got, n, what);
	for (int i = 0; i < got; i++) {
		enum ibv_wc_status want = i == 0 ? st0 : IBV_WC_WR_FLUSH_ERR;
		CHECK(wc[i].status == want && wc[i].wr_id == (uint64_t)i + 1, "%s: completion %d: %s (wr_id %llu), expected %s",
		      what, i, ibv_wc_status_str(wc[i].status), (unsigned long long)wc[i].wr_id, ibv_wc_status_str(want));
	}
}

/* ---- (a) vanished peer ---- */
static void t_vanish(bool destroy)
{
	const char *what = destroy ? "vanish(destroy)" : "vanish(reset)";
	struct ibv_qp *qa, *qb;
	struct dpvt_conn o = dpvt_conn_default();
	o.timeout = 10;
	o.retry_cnt = 3;
	if (pair(&qa, &qb, &o, NULL, false, IBV_QPT_RC, NULL)) {
		CHECK(0, "%s: set-up", what);
		return;
	}
	if (destroy) {
		ibv_destroy_qp(qb);
		qb = NULL;
	} else {
		CHECK_EQ(dpvt_qp_set_state(qb, IBV_QPS_RESET), 0, "B to RESET");
	}
	uint64_t exc0 = cnt(P0, DPV_CNT_RETRY_EXC), retry0 = cnt(P0, DPV_CNT_RETRY);
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int i = 1; i <= 4; i++)
		CHECK_EQ(dpvt_post_wr(qa, IBV_WR_SEND, (uint64_t)i, abuf, 100, amr->lkey, 0, 0, 0, IBV_SEND_SIGNALED), 0,
			 "post SEND");
	struct ibv_wc wc[8];
	int got = dpvt_poll_n(A.scq, wc, 1, 2000);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
	double one = 4.096e-3 * 1024; /* timeout 10 = 4.19 ms */
	double min = (o.retry_cnt + 1) * one;
	printf("%s: RETRY_EXC after %.1f ms (minimum %.1f ms)\n", what, ms, min);
	CHECK(got == 1 && wc[0].status == IBV_WC_RETRY_EXC_ERR && wc[0].wr_id == 1, "%s: first WR: %s", what,
	      got ? ibv_wc_status_str(wc[0].status) : "no completion");
	/* not before retry_cnt + 1 timeouts (IBA 9.7.6.1.3), and after exactly
	 * retry_cnt retransmissions (a slow machine only makes it later) */
	CHECK(ms >= min * 0.98, "%s: %.1f ms, at least %.1f expected", what, ms, min);
	CHECK_EQ(cnt(P0, DPV_CNT_RETRY), retry0 + o.retry_cnt, "retransmissions by the timer");
	CHECK_EQ(cnt(P0, DPV_CNT_RETRY_EXC), exc0 + 1, "retry_exceeded counter");
	CHECK_EQ(dpvt_qp_state(qa), IBV_QPS_ERR, "A in ERR after RETRY_EXC");
	got = dpvt_poll_n(A.scq, wc, 3, 500);
	CHECK_EQ(got, 3, "the other outstanding WRs complete");
	for (int i = 0; i < got; i++)
		CHECK(wc[i].status == IBV_WC_WR_FLUSH_ERR && wc[i].wr_id == (uint64_t)i + 2, "flush %d: %s", i,
		      ibv_wc_status_str(wc[i].status));
	CHECK_EQ(dpvt_post_wr(qa, IBV_WR_SEND, 9, abuf, 10, amr->lkey, 0, 0, 0, IBV_SEND_SIGNALED), 0, "post in ERR");
	got = dpvt_poll_n(A.scq, wc, 1, 500);
	CHECK(got == 1 && wc[0].status == IBV_WC_WR_FLUSH_ERR && wc[0].wr_id == 9, "WR posted in ERR flushed");
	unpair(qa, qb);
}

/* rnr_retry 1: four messages, each RNR NAKed once before B posts its
 * receive: four RNR NAKs in all, more than rnr_retry, yet every message
 * gets through (the counter is per message, reset by each ACK; it was the
 * QP's until pyverbs' rdma_cm external-QP test ran out of it) */
static void t_rnr_progress(void)
{
	struct ibv_qp *qa, *qb;
	struct dpvt_conn oa = dpvt_conn_default(), ob = dpvt_conn_default();
	struct ibv_wc wc;
	oa.rnr_retry = 1;
	/* 122.88 ms: B's receive must be posted between its RNR NAK and A's
	 * retransmission; a shorter timer (1.28 ms) lost that race when the
	 * test thread was descheduled on a loaded machine (CI) */
	ob.min_rnr_timer = 27;
	if (pair(&qa, &qb, &oa, &ob, false, IBV_QPT_RC, NULL)) {
		CHECK(0, "rnr progress: set-up");
		return;
	}
	uint64_t s0 = cnt(P1, DPV_CNT_RNR_NAK_SENT);
	for (int i = 0; i < 4; i++) {
		uint64_t si = cnt(P1, DPV_CNT_RNR_NAK_SENT);
		dpvt_post_wr(qa, IBV_WR_SEND, (uint64_t)i, abuf, 100, amr->lkey, 0, 0, 0, IBV_SEND_SIGNALED);
		for (int k = 0; k < 2000 && cnt(P1, DPV_CNT_RNR_NAK_SENT) == si; k++)
			dpvt_poll_quiet(A.scq, 1); /* drives the engine until B's RNR NAK */
		dpvt_post_recv(qb, bmr, (uint64_t)i, 0, 4096);
		CHECK(dpvt_poll_n(A.scq, &wc, 1, 2000) == 1 && wc.status == IBV_WC_SUCCESS && wc.wr_id == (uint64_t)i,
		      "rnr progress: message %d completes after one RNR NAK (%s)", i, ibv_wc_status_str(wc.status));
		CHECK(dpvt_poll_n(B.rcq, &wc, 1, 1000) == 1 && wc.status == IBV_WC_SUCCESS, "rnr progress: received %d", i);
	}
	CHECK_EQ(cnt(P1, DPV_CNT_RNR_NAK_SENT) - s0, 4, "rnr progress: four RNR NAKs in all, rnr_retry 1");
	CHECK_EQ(dpvt_qp_state(qa), IBV_QPS_RTS, "rnr progress: A still RTS");
	unpair(qa, qb);
}

/* ---- (b) RNR ---- */
static void t_rnr(void)
{
	struct ibv_qp *qa, *qb;
	struct dpvt_conn oa = dpvt_conn_default(), ob = dpvt_conn_default();
	oa.rnr_retry = 2;
	ob.min_rnr_timer = 1; /* 0.01 ms */
	if (pair(&qa, &qb, &oa, &ob, false, IBV_QPT_RC, NULL)) {
		CHECK(0, "rnr: set-up");
		return;
	}
	uint64_t s0 = cnt(P1, DPV_CNT_RNR_NAK_SENT), r0 = cnt(P0, DPV_CNT_RNR_NAK_RCVD), x0 = cnt(P0, DPV_CNT_RNR_RETRY_EXC);
	dpvt_post_wr(qa, IBV_WR_SEND, 1, abuf, 100, amr->lkey, 0, 0, 0, IBV_SEND_SIGNALED);
	dpvt_post_wr(qa, IBV_WR_SEND, 2, abuf, 100, amr->lkey, 0, 0, 0, IBV_SEND_SIGNALED);
	expect_err_then_flush("rnr_retry=2", IBV_WC_RNR_RETRY_EXC_ERR, 2, 2000);
	CHECK_EQ(cnt(P1, DPV_CNT_RNR_NAK_SENT) - s0, 3, "RNR NAKs sent (1 + rnr_retry)");
	CHECK_EQ(cnt(P0, DPV_CNT_RNR_NAK_RCVD) - r0, 3, "RNR NAKs received");
	CHECK_EQ(cnt(P0, DPV_CNT_RNR_RETRY_EXC) - x0, 1, "retry_rnr_exceeded counter");
	CHECK_EQ(dpvt_qp_state(qa), IBV_QPS_ERR, "A in ERR after RNR_RETRY_EXC");
	unpair(qa, qb);

	/* rnr_retry 7: retry forever; receive posted after 50 ms */
	oa.rnr_retry = 7;
	ob.min_rnr_timer = 12; /* 0.64 ms */
	if (pair(&qa, &qb, &oa, &ob, false, IBV_QPT_RC, NULL)) {
		CHECK(0, "rnr7: set-up");
		return;
	}
	s0 = cnt(P1, DPV_CNT_RNR_NAK_SENT);
	dpvt_fill_pattern(abuf, 3000, 5);
	dpvt_post_wr(qa, IBV_WR_SEND, 1, abuf, 3000, amr->lkey, 0, 0, 0, IBV_SEND_SIGNALED);
	CHECK_EQ(dpvt_poll_quiet(A.scq, 50), 0, "no send completion while B has no receive");
	uint64_t rn = cnt(P1, DPV_CNT_RNR_NAK_SENT) - s0;
	printf("rnr_retry=7: %llu RNR NAKs in 50 ms\n", (unsigned long long)rn);
	CHECK(rn >= 5, "RNR NAKs keep coming (%llu)", (unsigned long long)rn);
	memset(bbuf, 0, 4096);
	dpvt_post_recv(qb, bmr, 77, 0, 4096);
	struct ibv_wc wc;
	CHECK(dpvt_poll_n(A.scq, &wc, 1, 1000) == 1 && wc.status == IBV_WC_SUCCESS, "send completes once the receive is posted");
	CHECK(dpvt_poll_n(B.rcq, &wc, 1, 1000) == 1 && wc.status == IBV_WC_SUCCESS && wc.byte_len == 3000 && wc.wr_id == 77,
	      "receive completion");
	CHECK(!memcmp(bbuf, abuf, 3000), "data after RNR");
	CHECK_EQ(dpvt_qp_state(qa), IBV_QPS_RTS, "A still RTS");
	unpair(qa, qb);
	t_rnr_progress();
}

/* ---- (c) remote access errors ---- */
enum acc_case { AC_BAD_RKEY, AC_OOB, AC_NO_RW, AC_OTHER_PD, AC_NO_RR, AC_NO_RA, AC_QP_NO_RW, AC_NR };
static const char *const acc_name[AC_NR] = {"WRITE bad rkey", "WRITE out of bounds", "WRITE without REMOTE_WRITE",
					    "WRITE to another PD's MR", "READ without REMOTE_READ",
					    "ATOMIC without REMOTE_ATOMIC", "WRITE, QP without REMOTE_WRITE"};

static void t_access(void)
{
	struct ibv_pd *opd = ibv_alloc_pd(B.ctx);
	uint8_t *m2 = aligned_alloc(4096, 65536);
	struct ibv_mr *ro = ibv_reg_mr(B.pd, m2, 4096, IBV_ACCESS_REMOTE_READ);
	struct ibv_mr *wo = ibv_reg_mr(B.pd, m2 + 4096, 4096, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	struct ibv_mr *all = ibv_reg_mr(B.pd, m2 + 8192, 4096, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
					IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
	struct ibv_mr *foreign = ibv_reg_mr(opd, m2 + 16384, 4096, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
					    IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
	if (!opd || !ro || !wo || !all || !foreign) {
		CHECK(0, "access: MRs");
		return;
	}
	for (int c = 0; c < AC_NR; c++) {
		struct ibv_qp *qa, *qb;
		struct dpvt_conn ob = dpvt_conn_default();
		if (c == AC_QP_NO_RW)
			ob.access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ;
		if (pair(&qa, &qb, NULL, &ob, false, IBV_QPT_RC, NULL)) {
			CHECK(0, "access: set-up");
			return;
		}
		dpvt_post_recv(qb, bmr, 50, 0, 4096); /* B's receive gets flushed when B goes to ERR */
		uint64_t n0 = cnt(P1, DPV_CNT_NAK_SENT);
		int r = 0;
		uint64_t res;
		struct ibv_mr *lres = amr;
		switch (c) {
		case AC_BAD_RKEY:
			r = dpvt_post_wr(qa, IBV_WR_RDMA_WRITE, 1, abuf, 64, amr->lkey, (uintptr_t)all->addr, all->rkey ^ 0x5a5a00,
					 0, IBV_SEND_SIGNALED);
			break;
		case AC_OOB:
			r = dpvt_post_wr(qa, IBV_WR_RDMA_WRITE, 1, abuf, 64, amr->lkey, (uintptr_t)all->addr + 4096 - 32,
					 all->rkey, 0, IBV_SEND_SIGNALED);
			break;
		case AC_NO_RW:
			r = dpvt_post_wr(qa, IBV_WR_RDMA_WRITE, 1, abuf, 64, amr->lkey, (uintptr_t)ro->addr, ro->rkey, 0,
					 IBV_SEND_SIGNALED);
			break;
		case AC_OTHER_PD:
			r = dpvt_post_wr(qa, IBV_WR_RDMA_WRITE, 1, abuf, 64, amr->lkey, (uintptr_t)foreign->addr, foreign->rkey,
					 0, IBV_SEND_SIGNALED);
			break;
		case AC_NO_RR:
			r = dpvt_post_wr(qa, IBV_WR_RDMA_READ, 1, abuf, 64, amr->lkey, (uintptr_t)wo->addr, wo->rkey, 0,
					 IBV_SEND_SIGNALED);
			break;
		case AC_NO_RA:
			r = dpvt_post_atomic(qa, IBV_WR_ATOMIC_FETCH_AND_ADD, 1, (uint64_t *)abuf, lres->lkey,
					     (uintptr_t)wo->addr, wo->rkey, 1, 0, NULL);
			break;
		case AC_QP_NO_RW:
			r = dpvt_post_wr(qa, IBV_WR_RDMA_WRITE, 1, abuf, 64, amr->lkey, (uintptr_t)all->addr, all->rkey, 0,
					 IBV_SEND_SIGNALED);
			break;
		}
		(void)res;
		CHECK_EQ(r, 0, acc_name[c]);
		dpvt_post_wr(qa, IBV_WR_SEND, 2, abuf, 10, amr->lkey, 0, 0, 0, IBV_SEND_SIGNALED);
		dpvt_post_wr(qa, IBV_WR_SEND, 3, abuf, 10, amr->lkey, 0, 0, 0, IBV_SEND_SIGNALED);
		expect_err_then_flush(acc_name[c], IBV_WC_REM_ACCESS_ERR, 3, 2000);
		CHECK_EQ(dpvt_qp_state(qa), IBV_QPS_ERR, "requester in ERR");
		CHECK_EQ(dpvt_qp_state(qb), IBV_QPS_ERR, "responder in ERR (dpv_resp.c resp_error)");
		CHECK_EQ(cnt(P1, DPV_CNT_NAK_SENT) - n0, 1, "one NAK sent");
		struct ibv_wc wc;
		CHECK(dpvt_poll_n(B.rcq, &wc, 1, 500) == 1 && wc.status == IBV_WC_WR_FLUSH_ERR && wc.wr_id == 50,
		      "%s: responder's receive flushed", acc_name[c]);
		unpair(qa, qb);
	}
	/* unaligned atomic: refused at post time, QP unaffected */
	{
		struct ibv_qp *qa, *qb;
		if (!pair(&qa, &qb, NULL, NULL, false, IBV_QPT_RC, NULL)) {
			bool refused = false;
			int r = dpvt_post_atomic(qa, IBV_WR_ATOMIC_CMP_AND_SWP, 1, (uint64_t *)abuf, amr->lkey,
						 (uintptr_t)all->addr + 4, all->rkey, 0, 1, &refused);
			CHECK(r == EINVAL && refused, "unaligned atomic: post returns EINVAL with bad_wr (got %d)", r);
			CHECK_EQ(dpvt_qp_state(qa), IBV_QPS_RTS, "QP still RTS after the refused post");
			/* zero-length WRITE: no rkey check (IBA 9.7.4.1.6) */
			CHECK_EQ(dpvt_post_wr(qa, IBV_WR_RDMA_WRITE, 2, NULL, 0, 0, 0, 0xdead, 0, IBV_SEND_SIGNALED), 0,
				 "zero-length WRITE post");
			uint64_t *w = (uint64_t *)all->addr;
			*w = 40;
			r = dpvt_post_atomic(qa, IBV_WR_ATOMIC_FETCH_AND_ADD, 3, (uint64_t *)abuf, amr->lkey, (uintptr_t)w,
					     all->rkey, 2, 0, NULL);
			struct ibv_wc wc[2];
			CHECK(dpvt_poll_n(A.scq, wc, 2, 1000) == 2 && wc[0].status == IBV_WC_SUCCESS &&
			      wc[1].status == IBV_WC_SUCCESS, "zero-length WRITE with a bogus rkey and an aligned FETCH_ADD succeed");
			CHECK(*(uint64_t *)abuf == 40 && *w == 42, "FETCH_ADD result");
		}
		unpair(qa, qb);
	}
	ibv_dereg_mr(ro);
	ibv_dereg_mr(wo);
	ibv_dereg_mr(all);
	ibv_dereg_mr(foreign);
	ibv_dealloc_pd(opd);
	free(m2);
}

/* ---- (d) local protection ---- */
static void t_local_prot(void)
{
	struct ibv_pd *opd = ibv_alloc_pd(A.ctx);
	uint8_t *m = aligned_alloc(4096, 4096);
	struct ibv_mr *omr = ibv_reg_mr(opd, m, 4096, IBV_ACCESS_LOCAL_WRITE);
	for (int k = 0; k < 2; k++) {
		struct ibv_qp *qa, *qb;
		if (pair(&qa, &qb, NULL, NULL, false, IBV_QPT_RC, NULL)) {
			CHECK(0, "local prot: set-up");
			return;
		}
		uint32_t lkey = k == 0 ? omr->lkey : 0xabcdef;
		dpvt_post_wr(qa, IBV_WR_SEND, 1, k == 0 ? m : abuf, 100, lkey, 0, 0, 0, IBV_SEND_SIGNALED);
		dpvt_post_wr(qa, IBV_WR_SEND, 2, abuf, 100, amr->lkey, 0, 0, 0, IBV_SEND_SIGNALED);
		expect_err_then_flush(k == 0 ? "SEND with another PD's lkey" : "SEND with a bad lkey", IBV_WC_LOC_PROT_ERR,
				      2, 1000);
		CHECK_EQ(dpvt_qp_state(qa), IBV_QPS_ERR, "requester ERR after LOC_PROT_ERR");
		CHECK_EQ(dpvt_qp_state(qb), IBV_QPS_RTS, "responder unaffected");
		unpair(qa, qb);
	}
	ibv_dereg_mr(omr);
	ibv_dealloc_pd(opd);
	free(m);
}

/* ---- (i) memory unmapped while its MR is registered ----
 * An RNIC has the MR's pages pinned: the application may munmap them (UCX
 * does, with its registration cache and its ud_verbs teardown) and an
 * arriving packet harms nobody. Here the engine's copy would fault: it must
 * not kill the process. A SEND into an unmapped receive buffer completes the
 * receive with LOC_PROT_ERR (the requester sees the NAK), an RDMA WRITE into
 * an unmapped MR is NAKed as a remote access error; the next pair works. */
static void t_unmapped(void)
{
	for (int k = 0; k < 2; k++) {
		struct ibv_qp *qa, *qb;
		uint8_t *m = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		struct ibv_mr *mr = m == MAP_FAILED ? NULL : ibv_reg_mr(B.pd, m, 8192,
									  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
		if (!mr || pair(&qa, &qb, NULL, NULL, false, IBV_QPT_RC, NULL)) {
			CHECK(0, "unmapped: set-up");
			return;
		}
		if (k == 0)
			dpvt_post_recv(qb, mr, 21, 0, 4096);
		munmap(m, 8192); /* the MR stays registered */
		if (k == 0)
			dpvt_post_wr(qa, IBV_WR_SEND, 1, abuf, 1000, amr->lkey, 0, 0, 0, IBV_SEND_SIGNALED);
		else
			dpvt_post_wr(qa, IBV_WR_RDMA_WRITE, 1, abuf, 1000, amr->lkey, (uintptr_t)m, mr->rkey, 0,
				     IBV_SEND_SIGNALED);
		struct ibv_wc wc;
		int got = dpvt_poll_n(A.scq, &wc, 1, 1000);
		enum ibv_wc_status want = k == 0 ? IBV_WC_REM_OP_ERR : IBV_WC_REM_ACCESS_ERR;
		CHECK(got == 1 && wc.status == want, "unmapped %s: requester %s, %s expected", k ? "WRITE" : "SEND",
		      got ? ibv_wc_status_str(wc.status) : "no completion", ibv_wc_status_str(want));
		if (k == 0) {
			got = dpvt_poll_n(B.rcq, &wc, 1, 1000);
			CHECK(got == 1 && wc.status == IBV_WC_LOC_PROT_ERR && wc.wr_id == 21,
			      "unmapped SEND: receive completes LOC_PROT_ERR (%s)",
			      got ? ibv_wc_status_str(wc.status) : "no completion");
		}
		unpair(qa, qb);
		CHECK_EQ(ibv_dereg_mr(mr), 0, "dereg of the unmapped MR");
	}
	/* and traffic goes on */
	struct ibv_qp *qa, *qb;
	if (pair(&qa, &qb, NULL, NULL, false, IBV_QPT_RC, NULL)) {
		CHECK(0, "unmapped: set-up after");
		return;
	}
	dpvt_post_recv(qb, bmr, 22, 0, 4096);
	dpvt_post_wr(qa, IBV_WR_SEND, 2, abuf, 1000, amr->lkey, 0, 0, 0, IBV_SEND_SIGNALED);
	struct ibv_wc wc;
	CHECK(dpvt_poll_n(A.scq, &wc, 1, 1000) == 1 && wc.status == IBV_WC_SUCCESS, "a SEND after: completes");
	CHECK(dpvt_poll_n(B.rcq, &wc, 1, 1000) == 1 && wc.status == IBV_WC_SUCCESS, "a SEND after: received");
	unpair(qa, qb);
}

/* ---- (e) receive too small, (f) QP_FATAL ---- */
static void t_recv_too_small(void)
{
	static const uint32_t rlen[2] = {100, 1500}, slen[2] = {2000, 3000};
	for (int k = 0; k < 2; k++) {
		struct ibv_qp *qa, *qb;
		if (pair(&qa, &qb, NULL, NULL, false, IBV_QPT_RC, NULL)) {
			CHECK(0, "recv too small: set-up");
			return;
		}
		dpvt_post_recv(qb, bmr, 11, 0, rlen[k]);
		dpvt_post_recv(qb, bmr, 12, 8192, 4096);
		dpvt_post_wr(qa, IBV_WR_SEND, 1, abuf, slen[k], amr->lkey, 0, 0, 0, IBV_SEND_SIGNALED);
		dpvt_post_wr(qa, IBV_WR_SEND, 2, abuf, 10, amr->lkey, 0, 0, 0, IBV_SEND_SIGNALED);
		expect_err_then_flush("SEND larger than the receive", IBV_WC_REM_INV_REQ_ERR, 2, 1000);
		struct ibv_wc wc[2];
		int got = dpvt_poll_n(B.rcq, wc, 2, 1000);
		CHECK(got == 2 && wc[0].status == IBV_WC_LOC_LEN_ERR && wc[0].wr_id == 11 &&
		      wc[1].status == IBV_WC_WR_FLUSH_ERR && wc[1].wr_id == 12,
		      "recv %u B, send %u B: responder LOC_LEN_ERR then flush (got %d: %s)", rlen[k], slen[k], got,
		      got ? ibv_wc_status_str(wc[0].status) : "-");
		CHECK_EQ(dpvt_qp_state(qb), IBV_QPS_ERR, "responder ERR after LOC_LEN_ERR");
		CHECK(dpvt_wait_async(B.ctx, IBV_EVENT_QP_FATAL, qb, 500, NULL), "QP_FATAL raised for the responder (LOC_LEN_ERR)");
		unpair(qa, qb);
	}
}

/* ---- (f) async events ---- */
static void t_async(void)
{
	struct ibv_qp *qa, *qb;
	/* COMM_EST: B only in RTR */
	if (pair(&qa, &qb, NULL, NULL, true, IBV_QPT_RC, NULL)) {
		CHECK(0, "comm_est: set-up");
		return;
	}
	CHECK_EQ(dpvt_qp_state(qb), IBV_QPS_RTR, "B in RTR");
	dpvt_post_recv(qb, bmr, 1, 0, 4096);
	dpvt_post_wr(qa, IBV_WR_SEND, 1, abuf, 100, amr->lkey, 0, 0, 0, IBV_SEND_SIGNALED);
	CHECK(dpvt_wait_async(B.ctx, IBV_EVENT_COMM_EST, qb, 1000, NULL), "COMM_EST on the RTR QP");
	struct ibv_wc wc;
	CHECK(dpvt_poll_n(A.scq, &wc, 1, 1000) == 1 && wc.status == IBV_WC_SUCCESS, "send to an RTR QP completes");
	CHECK(dpvt_poll_n(B.rcq, &wc, 1, 1000) == 1 && wc.status == IBV_WC_SUCCESS, "RTR QP receives");
	struct dpvt_conn o = dpvt_conn_default();
	CHECK_EQ(dpvt_qp_to_rts(qb, &o), 0, "B to RTS");
	dpvt_post_recv(qb, bmr, 2, 0, 4096);
	dpvt_post_wr(qa, IBV_WR_SEND, 2, abuf, 100, amr->lkey, 0, 0, 0, IBV_SEND_SIGNALED);
	dpvt_poll_n(A.scq, &wc, 1, 1000);
	CHECK(!dpvt_wait_async(B.ctx, IBV_EVENT_COMM_EST, qb, 50, NULL), "COMM_EST raised once");

	/* SQ_DRAINED, nothing outstanding */
	struct ibv_qp_attr a;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_SQD;
	a.en_sqd_async_notify = 1;
	CHECK_EQ(ibv_modify_qp(qa, &a, IBV_QP_STATE | IBV_QP_EN_SQD_ASYNC_NOTIFY), 0, "RTS->SQD");
	CHECK(dpvt_wait_async(A.ctx, IBV_EVENT_SQ_DRAINED, qa, 500, NULL), "SQ_DRAINED (idle SQ)");
	CHECK_EQ(dpvt_qp_state(qa), IBV_QPS_SQD, "A in SQD");
	unpair(qa, qb);

	/* SQ_DRAINED with a WR waiting on RNR retries while in SQD */
	struct dpvt_conn ob = dpvt_conn_default();
	ob.min_rnr_timer = 12;
	if (!pair(&qa, &qb, NULL, &ob, false, IBV_QPT_RC, NULL)) {
		dpvt_post_wr(qa, IBV_WR_SEND, 1, abuf, 100, amr->lkey, 0, 0, 0, IBV_SEND_SIGNALED);
		dpvt_poll_quiet(A.scq, 5);
		CHECK_EQ(ibv_modify_qp(qa, &a, IBV_QP_STATE | IBV_QP_EN_SQD_ASYNC_NOTIFY), 0, "RTS->SQD (outstanding)");
		CHECK(!dpvt_wait_async(A.ctx, IBV_EVENT_SQ_DRAINED, qa, 20, NULL), "no SQ_DRAINED while a WR is outstanding");
		dpvt_post_recv(qb, bmr, 1, 0, 4096);
		int got = dpvt_poll_n(A.scq, &wc, 1, 1500);
		CHECK(got == 1 && wc.status == IBV_WC_SUCCESS,
			  "WR outstanding at RTS->SQD never completes: dpv_req_run() sends nothing outside RTS, so the RNR/"
			  "timeout retransmission of an already started WR is suppressed in SQD (got %d %s)", got,
			  got ? ibv_wc_status_str(wc.status) : "");
		CHECK(dpvt_wait_async(A.ctx, IBV_EVENT_SQ_DRAINED, qa, 200, NULL), "SQ_DRAINED after the outstanding WR");
	}
	unpair(qa, qb);

	/* SRQ: LIMIT_REACHED, LAST_WQE_REACHED */
	struct ibv_srq_init_attr sia;
	memset(&sia, 0, sizeof(sia));
	sia.attr.max_wr = 16;
	sia.attr.max_sge = 1;
	struct ibv_srq *srq = ibv_create_srq(B.pd, &sia);
	if (!srq || pair(&qa, &qb, NULL, NULL, false, IBV_QPT_RC, srq)) {
		CHECK(0, "srq events: set-up");
		return;
	}
	for (int i = 0; i < 8; i++)
		dpvt_post_srq_recv(srq, bmr, (uint64_t)i, (size_t)i * 4096, 4096);
	struct ibv_srq_attr sa = {.srq_limit = 4};
	CHECK_EQ(ibv_modify_srq(srq, &sa, IBV_SRQ_LIMIT), 0, "arm srq_limit 4");
	for (int i = 0; i < 4; i++)
		dpvt_post_wr(qa, IBV_WR_SEND, (uint64_t)i, abuf, 64, amr->lkey, 0, 0, 0, IBV_SEND_SIGNALED);
	struct ibv_wc w4[4];
	CHECK_EQ(dpvt_poll_n(B.rcq, w4, 4, 1000), 4, "4 receives from the SRQ");
	CHECK(!dpvt_wait_async(B.ctx, IBV_EVENT_SRQ_LIMIT_REACHED, srq, 20, NULL), "no LIMIT event at 4 left");
	dpvt_post_wr(qa, IBV_WR_SEND, 9, abuf, 64, amr->lkey, 0, 0, 0, IBV_SEND_SIGNALED);
	CHECK_EQ(dpvt_poll_n(B.rcq, w4, 1, 1000), 1, "5th receive");
	CHECK(dpvt_wait_async(B.ctx, IBV_EVENT_SRQ_LIMIT_REACHED, srq, 500, NULL), "SRQ_LIMIT_REACHED below the limit");
	CHECK_EQ(ibv_query_srq(srq, &sa), 0, "query srq");
	CHECK_EQ(sa.srq_limit, 0, "limit disarmed after the event");
	dpvt_poll_n(A.scq, w4, 4, 100);
	CHECK_EQ(dpvt_qp_set_state(qb, IBV_QPS_ERR), 0, "SRQ QP to ERR (modify)");
	CHECK(dpvt_wait_async(B.ctx, IBV_EVENT_QP_LAST_WQE_REACHED, qb, 300, NULL),
		  "LAST_WQE_REACHED not raised when a QP on an SRQ is moved to ERR by ibv_modify_qp (only "
		  "resp_error() raises it)");
	unpair(qa, qb);
	/* responder error on an SRQ QP: LAST_WQE_REACHED + QP_FATAL */
	if (!pair(&qa, &qb, NULL, NULL, false, IBV_QPT_RC, srq)) {
		dpvt_post_wr(qa, IBV_WR_SEND, 1, abuf, 8000, amr->lkey, 0, 0, 0, IBV_SEND_SIGNALED); /* > 4096 */
		dpvt_poll_n(A.scq, &wc, 1, 1000);
		CHECK(wc.status == IBV_WC_REM_INV_REQ_ERR, "SRQ receive too small: %s", ibv_wc_status_str(wc.status));
		CHECK(dpvt_wait_async(B.ctx, IBV_EVENT_QP_LAST_WQE_REACHED, qb, 500, NULL), "LAST_WQE_REACHED after responder error");
	}
	unpair(qa, qb);
	ibv_destroy_srq(srq);
}

/* ---- (g) query ---- */
static void t_query(void)
{
	struct ibv_qp *qa = dpvt_ep_qp(&A, IBV_QPT_RC, 32, 32, NULL), *qb = dpvt_ep_qp(&B, IBV_QPT_RC, 32, 32, NULL);
	struct dpvt_conn oa = dpvt_conn_default(), ob = dpvt_conn_default();
	oa.mtu = IBV_MTU_512;
	ob.mtu = IBV_MTU_512; /* both ends agree on the path MTU */
	oa.sq_psn = 0xabcdef;
	oa.rq_psn = 0x123456;
	ob.sq_psn = 0x123456;
	ob.rq_psn = 0xabcdef;
	oa.timeout = 13;
	oa.retry_cnt = 5;
	oa.rnr_retry = 6;
	oa.max_rd_atomic = 4;
	oa.max_dest_rd_atomic = 8;
	oa.min_rnr_timer = 9;
	oa.access = IBV_ACCESS_REMOTE_READ | IBV_ACCESS_LOCAL_WRITE;
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;
	CHECK(qa && qb, "query: QPs");
	CHECK_EQ(dpvt_qp_state(qa), IBV_QPS_RESET, "new QP in RESET");
	CHECK_EQ(dpvt_qp_to_init(qa, &oa), 0, "INIT");
	CHECK_EQ(dpvt_qp_state(qa), IBV_QPS_INIT, "INIT reported");
	CHECK_EQ(dpvt_connect(qa, A.ctx, &oa, qb, B.ctx, &ob, false), 0, "connect (INIT->INIT->RTR->RTS)");
	memset(&a, 0, sizeof(a));
	CHECK_EQ(ibv_query_qp(qa, &a, 0x1fffff, &ia), 0, "ibv_query_qp");
	CHECK_EQ(a.qp_state, IBV_QPS_RTS, "qp_state");
	CHECK_EQ(a.path_mtu, IBV_MTU_512, "path_mtu");
	CHECK_EQ(a.dest_qp_num, qb->qp_num, "dest_qp_num");
	CHECK_EQ(a.rq_psn, 0x123456, "rq_psn");
	CHECK_EQ(a.sq_psn, 0xabcdef, "sq_psn");
	CHECK_EQ(a.timeout, 13, "timeout");
	CHECK_EQ(a.retry_cnt, 5, "retry_cnt");
	CHECK_EQ(a.rnr_retry, 6, "rnr_retry");
	CHECK_EQ(a.max_rd_atomic, 4, "max_rd_atomic");
	CHECK_EQ(a.max_dest_rd_atomic, 8, "max_dest_rd_atomic");
	CHECK_EQ(a.min_rnr_timer, 9, "min_rnr_timer");
	CHECK_EQ(a.qp_access_flags, IBV_ACCESS_REMOTE_READ | IBV_ACCESS_LOCAL_WRITE, "qp_access_flags");
	CHECK_EQ(a.port_num, 1, "port_num");
	CHECK_EQ(a.ah_attr.grh.sgid_index, 1, "sgid_index");
	union ibv_gid g;
	ibv_query_gid(B.ctx, 1, 1, &g);
	CHECK(!memcmp(&a.ah_attr.grh.dgid, &g, 16) && a.ah_attr.is_global, "dgid");
	CHECK(a.cap.max_send_wr >= 32 && a.cap.max_recv_wr >= 32 && ia.qp_type == IBV_QPT_RC && ia.send_cq == A.scq,
	      "cap / init attr");
	/* traffic with the odd PSNs and MTU 512 works */
	dpvt_post_recv(qb, bmr, 1, 0, 4096);
	dpvt_fill_pattern(abuf, 3000, 9);
	dpvt_post_wr(qa, IBV_WR_SEND, 1, abuf, 3000, amr->lkey, 0, 0, 0, IBV_SEND_SIGNALED);
	struct ibv_wc wc;
	CHECK(dpvt_poll_n(B.rcq, &wc, 1, 1000) == 1 && wc.status == IBV_WC_SUCCESS && !memcmp(bbuf, abuf, 3000),
	      "SEND with MTU 512 and sq_psn 0xabcdef");
	dpvt_poll_n(A.scq, &wc, 1, 1000);
	CHECK_EQ(dpvt_qp_set_state(qa, IBV_QPS_ERR), 0, "to ERR");
	CHECK_EQ(dpvt_qp_state(qa), IBV_QPS_ERR, "ERR reported");
	CHECK_EQ(dpvt_qp_set_state(qa, IBV_QPS_RESET), 0, "to RESET");
	CHECK_EQ(dpvt_qp_state(qa), IBV_QPS_RESET, "RESET reported");
	unpair(qa, qb);
}

/* ---- (h) UC ---- */
static void t_uc(void)
{
	struct ibv_qp *qa, *qb;
	if (pair(&qa, &qb, NULL, NULL, false, IBV_QPT_UC, NULL)) {
		CHECK(0, "uc: set-up");
		return;
	}
	struct ibv_wc wc;
	dpvt_fill_pattern(abuf, 5000, 3);
	dpvt_post_recv(qb, bmr, 1, 0, 8192);
	CHECK_EQ(dpvt_post_wr(qa, IBV_WR_SEND, 1, abuf, 5000, amr->lkey, 0, 0, 0, IBV_SEND_SIGNALED), 0, "UC SEND");
	CHECK(dpvt_poll_n(B.rcq, &wc, 1, 1000) == 1 && wc.status == IBV_WC_SUCCESS && wc.byte_len == 5000 &&
	      !memcmp(bbuf, abuf, 5000), "UC SEND delivered");
	CHECK(dpvt_poll_n(A.scq, &wc, 1, 1000) == 1 && wc.status == IBV_WC_SUCCESS, "UC SEND completes");
	CHECK_EQ(dpvt_post_wr(qa, IBV_WR_RDMA_WRITE, 2, abuf, 3000, amr->lkey, (uintptr_t)bbuf + 16384, bmr->rkey, 0,
			      IBV_SEND_SIGNALED), 0, "UC WRITE");
	CHECK(dpvt_poll_n(A.scq, &wc, 1, 1000) == 1 && wc.status == IBV_WC_SUCCESS, "UC WRITE completes");
	dpvt_poll_quiet(B.rcq, 5);
	CHECK(!memcmp(bbuf + 16384, abuf, 3000), "UC WRITE data");
	dpvt_post_recv(qb, bmr, 3, 0, 16);
	CHECK_EQ(dpvt_post_wr(qa, IBV_WR_RDMA_WRITE_WITH_IMM, 3, abuf + 100, 2500, amr->lkey, (uintptr_t)bbuf + 32768, bmr->rkey,
			      0x77, IBV_SEND_SIGNALED), 0, "UC WRITE_IMM");
	CHECK(dpvt_poll_n(B.rcq, &wc, 1, 1000) == 1 && wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM &&
	      ntohl(wc.imm_data) == 0x77 && wc.byte_len == 2500 && !memcmp(bbuf + 32768, abuf + 100, 2500),
	      "UC WRITE_IMM delivered");
	CHECK_EQ(dpvt_post_atomic(qa, IBV_WR_ATOMIC_FETCH_AND_ADD, 4, (uint64_t *)abuf, amr->lkey, (uintptr_t)bbuf, bmr->rkey,
				  1, 0, NULL), EINVAL, "UC atomic refused");
	CHECK_EQ(dpvt_post_wr(qa, IBV_WR_RDMA_READ, 5, abuf, 8, amr->lkey, (uintptr_t)bbuf, bmr->rkey, 0, 0), EINVAL,
		 "UC READ refused");
	unpair(qa, qb);
}

/* ---- (h) UC under drop=0.2 ---- */
static void t_uc_fault(void)
{
	struct ibv_qp *qa, *qb;
	enum { N = 400, SLOT = 8192, NR = 64 };
	if (pair(&qa, &qb, NULL, NULL, false, IBV_QPT_UC, NULL)) {
		CHECK(0, "uc fault: set-up");
		return;
	}
	int delivered = 0, bad = 0, wdeliv = 0;
	long last = -1;
	struct ibv_wc wc[32];
	uint8_t *src = aligned_alloc(4096, (size_t)N * SLOT), *dst = aligned_alloc(4096, (size_t)N * SLOT);
	memset(dst, 0, (size_t)N * SLOT);
	struct ibv_mr *smr = ibv_reg_mr(A.pd, src, (size_t)N * SLOT, IBV_ACCESS_LOCAL_WRITE);
	struct ibv_mr *dmr = ibv_reg_mr(B.pd, dst, (size_t)N * SLOT, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	/* receive buffers: NR slots of bbuf, consumed in order, wr_id = slot */
	for (int r = 0; r < NR; r++)
		dpvt_post_recv(qb, bmr, (uint64_t)r, (size_t)r * SLOT, SLOT);
	uint64_t f0 = atomic_load(&dpv_fault_stats()->dropped); /* WHITE-BOX */
	for (int i = 0; i < N; i++) {
		uint32_t len = 2049 + (uint32_t)(dpvt_mix64((uint64_t)i) % 4000); /* 3..6 packets */
		bool wr = i % 3 == 2;
		dpvt_pat_fill(src + (size_t)i * SLOT, len, 99, (uint64_t)i);
		int r = wr ? dpvt_post_wr(qa, IBV_WR_RDMA_WRITE_WITH_IMM, (uint64_t)i, src + (size_t)i * SLOT, len, smr->lkey,
					  (uintptr_t)dst + (size_t)i * SLOT, dmr->rkey, (uint32_t)i, IBV_SEND_SIGNALED)
			   : dpvt_post_wr(qa, IBV_WR_SEND_WITH_IMM, (uint64_t)i, src + (size_t)i * SLOT, len, smr->lkey, 0, 0,
					  (uint32_t)i, IBV_SEND_SIGNALED);
		struct ibv_wc sw;
		if (r || dpvt_poll_n(A.scq, &sw, 1, 1000) != 1 || sw.status != IBV_WC_SUCCESS) {
			CHECK(0, "UC message %d: post %d / local completion", i, r);
			break;
		}
		/* the receiver sees it (or not) within a couple of ms */
		uint64_t end = dpvt_now_ms() + 2;
		while (dpvt_now_ms() <= end) {
			int n = ibv_poll_cq(B.rcq, 32, wc);
			for (int k = 0; k < n; k++) {
				uint32_t seq = ntohl(wc[k].imm_data);
				uint32_t elen = 2049 + (uint32_t)(dpvt_mix64((uint64_t)seq) % 4000);
				bool ewr = seq % 3 == 2;
				const uint8_t *p = ewr ? dst + (size_t)seq * SLOT : bbuf + (size_t)wc[k].wr_id * SLOT;
				bool ok = wc[k].status == IBV_WC_SUCCESS && (wc[k].wc_flags & IBV_WC_WITH_IMM) && seq <= (uint32_t)i &&
					  (long)seq > last && wc[k].byte_len == elen &&
					  wc[k].opcode == (ewr ? IBV_WC_RECV_RDMA_WITH_IMM : IBV_WC_RECV) &&
					  wc[k].wr_id == (uint64_t)(delivered % NR) && dpvt_pat_check(p, elen, 99, seq) == -1;
				if (!ok && ++bad < 5)
					fprintf(stderr, "UC bad completion: %s seq %u len %u/%u wr_id %llu last %ld\n",
						ibv_wc_status_str(wc[k].status), seq, wc[k].byte_len, elen,
						(unsigned long long)wc[k].wr_id, last);
				last = seq;
				delivered++;
				wdeliv += ewr;
				memset(bbuf + (size_t)wc[k].wr_id * SLOT, 0, SLOT);
				dpvt_post_recv(qb, bmr, wc[k].wr_id, (size_t)wc[k].wr_id * SLOT, SLOT);
			}
			if (n <= 0)
				usleep(100);
		}
	}
	printf("UC drop=0.2: %d messages sent, %d delivered whole (%d WRITE_IMM), %d bad, %llu frames dropped\n", N,
	       delivered, wdeliv, bad, (unsigned long long)(atomic_load(&dpv_fault_stats()->dropped) - f0)); /* WHITE-BOX */
	CHECK_EQ(bad, 0, "every delivered UC message whole, correct, in order, once");
	CHECK(delivered > N / 10 && delivered < N, "some delivered, some lost (%d of %d)", delivered, N);
	CHECK(wdeliv > 0, "WRITE_IMM messages delivered");
	CHECK_EQ(dpvt_qp_state(qb), IBV_QPS_RTS, "UC responder still RTS");
	ibv_dereg_mr(smr);
	ibv_dereg_mr(dmr);
	free(src);
	free(dst);
	unpair(qa, qb);
}

int main(int argc, char **argv)
{
	bool uc_fault = argc > 1 && !strcmp(argv[1], "uc_fault");
	if (uc_fault) {
		const char *f = getenv("DPVERBS_FAULT");
		if (!f || !*f)
			setenv("DPVERBS_FAULT", "drop=0.2,seed=3", 1);
		printf("DPVERBS_FAULT=%s\n", getenv("DPVERBS_FAULT"));
	} else {
		unsetenv("DPVERBS_FAULT");
	}
	if (dpvt_ep_open(&A, "dpv0", 1024, false) || dpvt_ep_open(&B, "dpv1", 1024, false)) {
		printf("0 passed, 1 failed\n");
		return 1;
	}
	/* WHITE-BOX */
	P0 = dpv_port_by_name("dpv0");
	P1 = dpv_port_by_name("dpv1");
	abuf = aligned_alloc(4096, BUFSZ);
	bbuf = aligned_alloc(4096, BUFSZ);
	memset(abuf, 0, BUFSZ);
	memset(bbuf, 0, BUFSZ);
	amr = ibv_reg_mr(A.pd, abuf, BUFSZ, IBV_ACCESS_LOCAL_WRITE);
	bmr = ibv_reg_mr(B.pd, bbuf, BUFSZ, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			 IBV_ACCESS_REMOTE_ATOMIC);
	if (!amr || !bmr) {
		printf("0 passed, 1 failed\n");
		return 1;
	}
	if (uc_fault) {
		CHECK(dpv_fault_enabled(), "fault injection on"); /* WHITE-BOX */
		t_uc_fault();
		return dpvt_finish();
	}
	static const struct {
		const char *name;
		void (*fn)(void);
	} parts[] = {
		{"(a) vanished peer (destroy)", NULL}, {"(a) vanished peer (reset)", NULL},
		{"(b) RNR", t_rnr},                    {"(c) remote access", t_access},
		{"(d) local protection", t_local_prot}, {"(e) receive too small", t_recv_too_small},
		{"(f) async events", t_async},         {"(g) query", t_query},
		{"(h) UC", t_uc},                      {"(i) unmapped under its MR", t_unmapped},
	};
	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
		int f0 = dpvt_fail_count();
		uint64_t t0 = dpvt_now_ms();
		if (i == 0)
			t_vanish(true);
		else if (i == 1)
			t_vanish(false);
		else
			parts[i].fn();
		printf("%-30s %s (%llu ms)\n", parts[i].name, dpvt_fail_count() == f0 ? "ok" : "FAILED",
		       (unsigned long long)(dpvt_now_ms() - t0));
		fflush(stdout);
	}
	return dpvt_finish();
}
