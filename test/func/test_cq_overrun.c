/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * CQ overrun as a ConnectX gives it, IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN and
 * IBV_CREATE_CQ_ATTR_SINGLE_THREADED, RC between dpv0 (A) and dpv1 (B) of
 * the built-in configuration (or, under test/shared/with_daemon.sh, as an
 * application of dpverbsd):
 *   send    a send CQ of 4 entries (7 reported) gets more signalled RDMA
 *           WRITEs than it holds, nothing polled: IBV_EVENT_CQ_ERR once, the
 *           QP to ERR with IBV_EVENT_QP_FATAL once (ibv_query_qp: ERR), the
 *           CQEs that fitted and nothing past them, its posted receives
 *           flushed into its own (sound) receive CQ; the CQ's idle QPs (one
 *           with it as send CQ, one with an SRQ and it as receive CQ) to ERR
 *           with QP_FATAL as well (LAST_WQE_REACHED for the SRQ's); the
 *           counter cq_overrun +1; ibv_resize_cq works; a QP reset and
 *           brought up again on the CQ in error stays in RTS until its own
 *           CQE is refused (then QP_FATAL, ERR); ibv_destroy_cq works; a
 *           fresh CQ and QP pair work afterwards;
 *   recv    a receive CQ overruns: the responder's QP to ERR with QP_FATAL,
 *           the message that did not fit is not acknowledged (the
 *           requester gets SUCCESS for what fitted, then RETRY_EXC_ERR);
 *   ignore  the send case on a CQ created with IGNORE_OVERRUN: no event, the
 *           QP stays in RTS, every lost CQE counted, the CQ takes CQEs again
 *           once polled;
 *   td      the send case on a thread domain's CQ (lockless, the owner thread
 *           runs the QP);
 *   single  a CQ created with SINGLE_THREADED: ibv_start_poll/next/end and
 *           ibv_poll_cq read every CQE in order, and the consumer lock is
 *           skipped: a second thread's ibv_poll_cq inside ibv_start_poll ..
 *           ibv_end_poll returns at once, where without the flag it waits
 *           for ibv_end_poll.
 * Black-box: only the exported API; the counter comes from the stats
 * snapshot (dpv_stats.h) of this process, or of dpverbsd in shared mode
 * (DPV_DAEMON_PID, set by with_daemon.sh).
 */
#include <fcntl.h>
#include <pthread.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "dpv_stats.h"
#include "dpvt_check.h"
#include "dpvt_verbs.h"

static struct dpvt_ep A, B;

/* ---- the counter, from the stats snapshot ---- */

/* ---- asynchronous events ---- */

struct evs {
	int n;
	struct {
		enum ibv_event_type type;
		void *obj;
	} e[64];
};

static void *ev_obj(const struct ibv_async_event *ev)
{
	switch (ev->event_type) {
	case IBV_EVENT_CQ_ERR:
		return ev->element.cq;
	case IBV_EVENT_SRQ_LIMIT_REACHED:
	case IBV_EVENT_SRQ_ERR:
		return ev->element.srq;
	default:
		return ev->element.qp;
	}
}

static int ev_count(const struct evs *v, enum ibv_event_type type, void *obj)
{
	int c = 0;
	for (int i = 0; i < v->n; i++)
		c += v->e[i].type == type && v->e[i].obj == obj;
	return c;
}

/* Reads ctx's events into v for ms milliseconds, or until (type, obj) was
 * seen when type >= 0; an empty CQ is polled meanwhile (inline progress):
 * td_cq, an empty CQ of a thread domain whose QPs must progress, or one of
 * its own. */
static void ev_collect_td(struct ibv_context *ctx, struct evs *v, unsigned int ms, int type, void *obj,
			  struct ibv_cq *td_cq)
{
	uint64_t end = dpvt_now_ms() + ms;
	struct ibv_cq *drive = td_cq ? td_cq : ibv_create_cq(ctx, 1, NULL, NULL, 0);
	struct ibv_wc wc;
	for (;;) {
		struct ibv_async_event ev;
		while (ibv_get_async_event(ctx, &ev) == 0) {
			if (v->n < (int)(sizeof(v->e) / sizeof(v->e[0]))) {
				v->e[v->n].type = ev.event_type;
				v->e[v->n].obj = ev_obj(&ev);
				v->n++;
			}
			ibv_ack_async_event(&ev);
		}
		if ((type >= 0 && ev_count(v, (enum ibv_event_type)type, obj) > 0) || dpvt_now_ms() >= end)
			break;
		if (drive)
			ibv_poll_cq(drive, 1, &wc);
		struct pollfd pfd = {.fd = ctx->async_fd, .events = POLLIN};
		poll(&pfd, 1, 1);
	}
	if (drive && !td_cq)
		ibv_destroy_cq(drive);
}

static void ev_collect(struct ibv_context *ctx, struct evs *v, unsigned int ms, int type, void *obj)
{
	ev_collect_td(ctx, v, ms, type, obj, NULL);
}

/* ---- objects ---- */

static struct ibv_cq_ex *cqx_new(struct ibv_context *ctx, int cqe, uint32_t flags)
{
	struct ibv_cq_init_attr_ex a = {.cqe = (uint32_t)cqe, .wc_flags = IBV_WC_STANDARD_FLAGS,
					.comp_mask = IBV_CQ_INIT_ATTR_MASK_FLAGS, .flags = flags};
	return ibv_create_cq_ex(ctx, &a);
}

static struct ibv_cq *cq_new(struct ibv_context *ctx, int cqe, uint32_t flags)
{
	struct ibv_cq_ex *x = cqx_new(ctx, cqe, flags);
	return x ? ibv_cq_ex_to_cq(x) : NULL;
}

static struct ibv_qp *qp_new(struct dpvt_ep *e, struct ibv_cq *scq, struct ibv_cq *rcq, struct ibv_srq *srq,
			     uint32_t sq, uint32_t rq)
{
	struct dpvt_qp_caps c = {.max_send_wr = sq, .max_recv_wr = srq ? 0 : rq, .max_send_sge = 1,
				 .max_recv_sge = srq ? 0 : 1};
	return dpvt_qp_create(e->pd, IBV_QPT_RC, scq, rcq, srq, &c);
}

static int write1(struct ibv_qp *qp, uint64_t wr_id)
{
	return dpvt_post_wr(qp, IBV_WR_RDMA_WRITE, wr_id, A.buf, 64, A.mr->lkey, (uint64_t)(uintptr_t)B.buf + 4096,
			    B.mr->rkey, 0, IBV_SEND_SIGNALED);
}

/* Polls n CQEs of cq and checks them: wr_ids first.., status st, opcode op. */
static void expect_cqes(struct ibv_cq *cq, int n, uint64_t first, enum ibv_wc_status st, enum ibv_wc_opcode op,
			const char *what)
{
	struct ibv_wc wc[64];
	int got = dpvt_poll_n(cq, wc, n, 3000);
	CHECK(got == n, "%s: %d CQEs (got %d)", what, n, got);
	for (int i = 0; i < got; i++)
		CHECK(wc[i].wr_id == first + (uint64_t)i && wc[i].status == st && (st != IBV_WC_SUCCESS || wc[i].opcode == op),
		      "%s: CQE %d: wr_id %llu %s opcode %d (expected wr_id %llu %s)", what, i,
		      (unsigned long long)wc[i].wr_id, ibv_wc_status_str(wc[i].status), wc[i].opcode,
		      (unsigned long long)(first + (uint64_t)i), ibv_wc_status_str(st));
}

static void drain_all(void)
{
	struct ibv_wc wc[16];
	while (ibv_poll_cq(A.scq, 16, wc) > 0 || ibv_poll_cq(A.rcq, 16, wc) > 0 || ibv_poll_cq(B.scq, 16, wc) > 0 ||
	       ibv_poll_cq(B.rcq, 16, wc) > 0)
		;
	dpvt_drain_async(A.ctx);
	dpvt_drain_async(B.ctx);
}

/* A fresh CQ and QP pair work after all this. */
static void t_fresh(const char *after)
{
	struct ibv_cq *cq = cq_new(A.ctx, 4, 0);
	struct ibv_qp *qa = cq ? qp_new(&A, cq, A.rcq, NULL, 8, 8) : NULL, *qb = qp_new(&B, B.scq, B.rcq, NULL, 8, 8);
	struct dpvt_conn o = dpvt_conn_default();
	CHECK(qa && qb && !dpvt_connect(qa, A.ctx, &o, qb, B.ctx, &o, false), "%s: a fresh CQ and QP pair", after);
	if (qa && qb) {
		for (uint64_t i = 1; i <= 3; i++)
			CHECK_EQ(write1(qa, i), 0, "post WRITE on the fresh QP");
		expect_cqes(cq, 3, 1, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, "fresh CQ");
		CHECK_EQ(dpvt_qp_state(qa), IBV_QPS_RTS, "fresh QP in RTS");
	}
	if (qa)
		ibv_destroy_qp(qa);
	if (qb)
		ibv_destroy_qp(qb);
	if (cq)
		ibv_destroy_cq(cq);
	drain_all();
}

/* ---- send CQ overrun ---- */
static void t_send(void)
{
	uint64_t ov0 = dpvt_stat(false, "cq_overrun");
	CHECK(ov0 != UINT64_MAX, "send: the stats snapshot has cq_overrun");
	struct ibv_cq *small = cq_new(A.ctx, 4, 0);
	struct ibv_srq *srq = dpvt_srq_new(A.pd, 16);
	CHECK(small && srq, "send: a CQ of 4 and an SRQ");
	if (!small || !srq)
		return;
	int cap = small->cqe;
	struct ibv_qp *qa = qp_new(&A, small, A.rcq, NULL, 64, 8), *qb = qp_new(&B, B.scq, B.rcq, NULL, 8, 8);
	/* idle QPs of the same CQ: as send CQ, and as receive CQ with an SRQ */
	struct ibv_qp *is = qp_new(&A, small, A.rcq, NULL, 8, 8), *ir = qp_new(&A, A.scq, small, srq, 8, 0);
	struct dpvt_conn o = dpvt_conn_default();
	if (!qa || !qb || !is || !ir || dpvt_connect(qa, A.ctx, &o, qb, B.ctx, &o, false) ||
	    dpvt_qp_up(is, B.ctx, qb->qp_num, &o, IBV_QPS_RTS) || dpvt_qp_up(ir, B.ctx, qb->qp_num, &o, IBV_QPS_RTS)) {
		CHECK(0, "send: QPs up");
		return;
	}
	CHECK(dpvt_post_recv(qa, A.mr, 1000, 0, 64) == 0 && dpvt_post_recv(qa, A.mr, 1001, 64, 64) == 0,
	      "send: two receives on the QP");
	dpvt_drain_async(A.ctx);
	int n = cap + 5;
	for (int i = 1; i <= n; i++)
		CHECK_EQ(write1(qa, (uint64_t)i), 0, "send: post signalled WRITE");
	struct evs v = {0};
	ev_collect(A.ctx, &v, 3000, IBV_EVENT_CQ_ERR, small);
	ev_collect(A.ctx, &v, 3000, IBV_EVENT_QP_FATAL, qa);
	ev_collect(A.ctx, &v, 3000, IBV_EVENT_QP_FATAL, is);
	ev_collect(A.ctx, &v, 3000, IBV_EVENT_QP_FATAL, ir);
	ev_collect(A.ctx, &v, 3000, IBV_EVENT_QP_LAST_WQE_REACHED, ir);
	ev_collect(A.ctx, &v, 100, -1, NULL); /* anything raised twice */
	CHECK_EQ(ev_count(&v, IBV_EVENT_CQ_ERR, small), 1, "send: IBV_EVENT_CQ_ERR, once");
	CHECK_EQ(ev_count(&v, IBV_EVENT_QP_FATAL, qa), 1, "send: IBV_EVENT_QP_FATAL on the QP, once");
	CHECK_EQ(ev_count(&v, IBV_EVENT_QP_FATAL, is), 1, "send: QP_FATAL on the idle QP of the send CQ");
	CHECK_EQ(ev_count(&v, IBV_EVENT_QP_FATAL, ir), 1, "send: QP_FATAL on the idle SRQ QP of the receive CQ");
	CHECK_EQ(ev_count(&v, IBV_EVENT_QP_LAST_WQE_REACHED, ir), 1, "send: LAST_WQE_REACHED on the SRQ QP");
	CHECK_EQ(v.n, 5, "send: no other event");
	CHECK_EQ(dpvt_qp_state(qa), IBV_QPS_ERR, "send: ibv_query_qp: the QP in ERR");
	CHECK_EQ(dpvt_qp_state(is), IBV_QPS_ERR, "send: the idle QP of the send CQ in ERR");
	CHECK_EQ(dpvt_qp_state(ir), IBV_QPS_ERR, "send: the idle SRQ QP of the receive CQ in ERR");
	CHECK_EQ(dpvt_qp_state(qb), IBV_QPS_RTS, "send: the peer QP unaffected");
	/* the CQEs that fitted, then nothing: the CQ is in error */
	expect_cqes(small, cap, 1, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, "send: the CQ in error");
	CHECK_EQ(dpvt_poll_quiet(small, 50), 0, "send: no CQE written past capacity");
	/* the QP's receives flushed into its sound receive CQ */
	expect_cqes(A.rcq, 2, 1000, IBV_WC_WR_FLUSH_ERR, IBV_WC_RECV, "send: receives flushed to the receive CQ");
	CHECK_EQ(dpvt_stat_wait(false, "cq_overrun", ov0 + 1), ov0 + 1, "send: cq_overrun +1");
	CHECK_EQ(ibv_resize_cq(small, 32), 0, "send: ibv_resize_cq of the CQ in error");
	CHECK_EQ(dpvt_poll_quiet(small, 20), 0, "send: still nothing after the resize");
	/* a QP brought up again on the CQ in error goes on until a CQE of its
	 * own is refused */
	struct ibv_qp *qb2 = qp_new(&B, B.scq, B.rcq, NULL, 8, 8);
	CHECK_EQ(dpvt_qp_set_state(is, IBV_QPS_RESET), 0, "send: the idle QP to RESET");
	CHECK(qb2 && dpvt_connect(is, A.ctx, &o, qb2, B.ctx, &o, false) == 0,
	      "send: ... and connected again, on the CQ in error");
	struct evs w = {0};
	ev_collect(A.ctx, &w, 50, -1, NULL);
	CHECK_EQ(w.n, 0, "send: no event for a QP brought up on the CQ in error");
	CHECK_EQ(dpvt_qp_state(is), IBV_QPS_RTS, "send: it stays in RTS");
	CHECK_EQ(write1(is, 500), 0, "send: post on it");
	ev_collect(A.ctx, &w, 3000, IBV_EVENT_QP_FATAL, is);
	CHECK_EQ(ev_count(&w, IBV_EVENT_QP_FATAL, is), 1, "send: QP_FATAL once its CQE is refused");
	CHECK_EQ(w.n, 1, "send: nothing else (no second CQ_ERR)");
	CHECK_EQ(dpvt_qp_state(is), IBV_QPS_ERR, "send: then in ERR");
	CHECK_EQ(dpvt_poll_quiet(small, 20), 0, "send: its CQE not written");
	if (qb2)
		CHECK_EQ(ibv_destroy_qp(qb2), 0, "send: destroy its peer");
	CHECK_EQ(ibv_destroy_qp(is), 0, "send: destroy the idle QP");
	CHECK_EQ(ibv_destroy_qp(ir), 0, "send: destroy the SRQ QP");
	CHECK_EQ(ibv_destroy_qp(qa), 0, "send: destroy the QP");
	CHECK_EQ(ibv_destroy_qp(qb), 0, "send: destroy the peer QP");
	CHECK_EQ(ibv_destroy_srq(srq), 0, "send: destroy the SRQ");
	CHECK_EQ(ibv_destroy_cq(small), 0, "send: ibv_destroy_cq of the CQ in error");
	drain_all();
	t_fresh("send");
}

/* ---- receive CQ overrun ---- */
static void t_recv(void)
{
	uint64_t ov0 = dpvt_stat(false, "cq_overrun");
	struct ibv_cq *small = cq_new(B.ctx, 4, 0);
	if (!small) {
		CHECK(0, "recv: a CQ of 4");
		return;
	}
	int cap = small->cqe, n = cap + 3;
	struct ibv_qp *qa = qp_new(&A, A.scq, A.rcq, NULL, 64, 8), *qb = qp_new(&B, B.scq, small, NULL, 8, 32);
	struct dpvt_conn oa = dpvt_conn_default(), ob = dpvt_conn_default();
	oa.timeout = 12; /* 16.8 ms x 4: the unacknowledged SEND fails within 0.1 s */
	oa.retry_cnt = 3;
	if (!qa || !qb || dpvt_connect(qa, A.ctx, &oa, qb, B.ctx, &ob, false)) {
		CHECK(0, "recv: QPs up");
		return;
	}
	for (int i = 0; i < n; i++)
		CHECK_EQ(dpvt_post_recv(qb, B.mr, (uint64_t)i, (size_t)i * 64, 64), 0, "recv: post receive");
	dpvt_drain_async(B.ctx);
	for (int i = 1; i <= n; i++)
		CHECK_EQ(dpvt_post_wr(qa, IBV_WR_SEND, (uint64_t)i, A.buf, 32, A.mr->lkey, 0, 0, 0, IBV_SEND_SIGNALED),
			 0, "recv: post signalled SEND");
	struct evs v = {0};
	ev_collect(B.ctx, &v, 3000, IBV_EVENT_CQ_ERR, small);
	ev_collect(B.ctx, &v, 3000, IBV_EVENT_QP_FATAL, qb);
	ev_collect(B.ctx, &v, 100, -1, NULL);
	CHECK_EQ(ev_count(&v, IBV_EVENT_CQ_ERR, small), 1, "recv: IBV_EVENT_CQ_ERR, once");
	CHECK_EQ(ev_count(&v, IBV_EVENT_QP_FATAL, qb), 1, "recv: IBV_EVENT_QP_FATAL on the responder's QP, once");
	CHECK_EQ(v.n, 2, "recv: no other event");
	CHECK_EQ(dpvt_qp_state(qb), IBV_QPS_ERR, "recv: the responder's QP in ERR");
	expect_cqes(small, cap, 0, IBV_WC_SUCCESS, IBV_WC_RECV, "recv: the CQ in error");
	CHECK_EQ(dpvt_poll_quiet(small, 50), 0, "recv: no CQE written past capacity");
	/* the requester: what fitted was acknowledged, the next SEND never is */
	struct ibv_wc wc[64];
	int got = dpvt_poll_n(A.scq, wc, n, 3000);
	CHECK_EQ(got, n, "recv: every SEND completes");
	for (int i = 0; i < got; i++) {
		enum ibv_wc_status want = i < cap ? IBV_WC_SUCCESS : i == cap ? IBV_WC_RETRY_EXC_ERR : IBV_WC_WR_FLUSH_ERR;
		CHECK(wc[i].wr_id == (uint64_t)i + 1 && wc[i].status == want, "recv: SEND %d: %s (expected %s)", i + 1,
		      ibv_wc_status_str(wc[i].status), ibv_wc_status_str(want));
	}
	CHECK_EQ(dpvt_stat_wait(false, "cq_overrun", ov0 + 1), ov0 + 1, "recv: cq_overrun +1");
	CHECK_EQ(ibv_destroy_qp(qa), 0, "recv: destroy the requester's QP");
	CHECK_EQ(ibv_destroy_qp(qb), 0, "recv: destroy the responder's QP");
	CHECK_EQ(ibv_destroy_cq(small), 0, "recv: destroy the CQ in error");
	drain_all();
	t_fresh("recv");
}

/* ---- IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN ---- */
static void t_ignore(void)
{
	uint64_t ov0 = dpvt_stat(false, "cq_overrun");
	struct ibv_cq *small = cq_new(A.ctx, 4, IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN);
	if (!small) {
		CHECK(0, "ignore: a CQ of 4 with IGNORE_OVERRUN");
		return;
	}
	int cap = small->cqe, n = cap + 5;
	struct ibv_qp *qa = qp_new(&A, small, A.rcq, NULL, 64, 8), *qb = qp_new(&B, B.scq, B.rcq, NULL, 8, 8);
	struct dpvt_conn o = dpvt_conn_default();
	if (!qa || !qb || dpvt_connect(qa, A.ctx, &o, qb, B.ctx, &o, false)) {
		CHECK(0, "ignore: QPs up");
		return;
	}
	dpvt_drain_async(A.ctx);
	for (int i = 1; i <= n; i++)
		CHECK_EQ(write1(qa, (uint64_t)i), 0, "ignore: post signalled WRITE");
	CHECK_EQ(dpvt_stat_wait(false, "cq_overrun", ov0 + (uint64_t)(n - cap)), ov0 + (uint64_t)(n - cap),
		 "ignore: every lost CQE counted in cq_overrun");
	struct evs v = {0};
	ev_collect(A.ctx, &v, 100, -1, NULL);
	CHECK_EQ(v.n, 0, "ignore: no event");
	CHECK_EQ(dpvt_qp_state(qa), IBV_QPS_RTS, "ignore: the QP stays in RTS");
	expect_cqes(small, cap, 1, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, "ignore: the CQEs that fitted");
	CHECK_EQ(dpvt_poll_quiet(small, 50), 0, "ignore: the others were lost");
	CHECK_EQ(write1(qa, 100), 0, "ignore: post once polled");
	expect_cqes(small, 1, 100, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, "ignore: the CQ takes CQEs again");
	CHECK_EQ(ibv_destroy_qp(qa), 0, "ignore: destroy the QP");
	CHECK_EQ(ibv_destroy_qp(qb), 0, "ignore: destroy the peer QP");
	CHECK_EQ(ibv_destroy_cq(small), 0, "ignore: destroy the CQ");
	drain_all();
}

/* ---- a thread domain's CQ (lockless: the owner thread runs its QPs) ---- */
static void t_td(void)
{
	struct ibv_td_init_attr ta = {0};
	struct ibv_td *td = ibv_alloc_td(A.ctx, &ta);
	struct ibv_parent_domain_init_attr pa = {.pd = A.pd, .td = td};
	struct ibv_pd *par = td ? ibv_alloc_parent_domain(A.ctx, &pa) : NULL;
	struct ibv_cq_init_attr_ex ca = {.cqe = 4, .wc_flags = IBV_WC_STANDARD_FLAGS,
					 .comp_mask = IBV_CQ_INIT_ATTR_MASK_PD, .parent_domain = par};
	struct ibv_cq_ex *sx = par ? ibv_create_cq_ex(A.ctx, &ca) : NULL;
	ca.cqe = 16;
	struct ibv_cq_ex *dx = par ? ibv_create_cq_ex(A.ctx, &ca) : NULL;
	struct ibv_cq *small = sx ? ibv_cq_ex_to_cq(sx) : NULL, *drive = dx ? ibv_cq_ex_to_cq(dx) : NULL;
	struct ibv_qp *qa = small && drive ? dpvt_qp_new_ex(par, IBV_QPT_RC, small, drive, NULL, 0) : NULL;
	struct ibv_qp *qb = qp_new(&B, B.scq, B.rcq, NULL, 8, 8);
	struct dpvt_conn o = dpvt_conn_default();
	if (!qa || !qb || dpvt_connect(qa, A.ctx, &o, qb, B.ctx, &o, false)) {
		CHECK(0, "td: a TD's CQs and QP up");
		return;
	}
	int cap = small->cqe, n = cap + 5;
	dpvt_drain_async(A.ctx);
	for (int i = 1; i <= n; i++)
		CHECK_EQ(write1(qa, (uint64_t)i), 0, "td: post signalled WRITE");
	struct evs v = {0};
	ev_collect_td(A.ctx, &v, 3000, IBV_EVENT_CQ_ERR, small, drive);
	ev_collect_td(A.ctx, &v, 3000, IBV_EVENT_QP_FATAL, qa, drive);
	ev_collect_td(A.ctx, &v, 100, -1, NULL, drive);
	CHECK_EQ(ev_count(&v, IBV_EVENT_CQ_ERR, small), 1, "td: IBV_EVENT_CQ_ERR, once");
	CHECK_EQ(ev_count(&v, IBV_EVENT_QP_FATAL, qa), 1, "td: IBV_EVENT_QP_FATAL, once");
	CHECK_EQ(v.n, 2, "td: no other event");
	CHECK_EQ(dpvt_qp_state(qa), IBV_QPS_ERR, "td: the QP in ERR");
	expect_cqes(small, cap, 1, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, "td: the CQ in error");
	CHECK_EQ(dpvt_poll_quiet(small, 50), 0, "td: no CQE written past capacity");
	CHECK_EQ(ibv_destroy_qp(qa), 0, "td: destroy the QP");
	CHECK_EQ(ibv_destroy_qp(qb), 0, "td: destroy the peer QP");
	CHECK_EQ(ibv_destroy_cq(small), 0, "td: destroy the CQ in error");
	CHECK_EQ(ibv_destroy_cq(drive), 0, "td: destroy the other CQ");
	CHECK_EQ(ibv_dealloc_pd(par), 0, "td: dealloc the parent domain");
	CHECK_EQ(ibv_dealloc_td(td), 0, "td: dealloc the TD");
	drain_all();
}

/* ---- IBV_CREATE_CQ_ATTR_SINGLE_THREADED ---- */

struct probe {
	struct ibv_cq *cq;
	_Atomic int done;
};

/* ibv_poll_cq for no entry on a CQ that is not empty: takes the consumer
 * lock (if the CQ has one) and changes nothing. */
static void *probe_main(void *arg)
{
	struct probe *p = arg;
	struct ibv_wc wc;
	ibv_poll_cq(p->cq, 0, &wc);
	atomic_store(&p->done, 1);
	return NULL;
}

static bool wait_done(struct probe *p, unsigned int ms)
{
	uint64_t end = dpvt_now_ms() + ms;
	while (!atomic_load(&p->done) && dpvt_now_ms() < end)
		usleep(1000);
	return atomic_load(&p->done);
}

static void t_single(bool single)
{
	const char *what = single ? "SINGLE_THREADED" : "default CQ";
	struct ibv_cq_ex *cx = cqx_new(A.ctx, 16, single ? IBV_CREATE_CQ_ATTR_SINGLE_THREADED : 0);
	struct ibv_cq *cq = cx ? ibv_cq_ex_to_cq(cx) : NULL;
	struct ibv_qp *qa = cq ? qp_new(&A, cq, A.rcq, NULL, 16, 8) : NULL, *qb = qp_new(&B, B.scq, B.rcq, NULL, 8, 8);
	struct dpvt_conn o = dpvt_conn_default();
	if (!qa || !qb || dpvt_connect(qa, A.ctx, &o, qb, B.ctx, &o, false)) {
		CHECK(0, "%s: CQ and QPs up", what);
		return;
	}
	for (uint64_t i = 1; i <= 3; i++)
		CHECK_EQ(write1(qa, i), 0, "post signalled WRITE");
	struct ibv_poll_cq_attr pa = {0};
	int r = ENOENT;
	for (uint64_t end = dpvt_now_ms() + 3000; r == ENOENT && dpvt_now_ms() < end;)
		r = ibv_start_poll(cx, &pa);
	CHECK_EQ(r, 0, "ibv_start_poll finds a CQE");
	if (r)
		return;
	struct probe p = {.cq = cq};
	pthread_t th;
	CHECK_EQ(pthread_create(&th, NULL, probe_main, &p), 0, "probe thread");
	if (single)
		CHECK(wait_done(&p, 2000), "%s: another thread's ibv_poll_cq inside ibv_start_poll..ibv_end_poll "
		      "returns at once: no consumer lock", what);
	else
		CHECK(!wait_done(&p, 200), "%s: another thread's ibv_poll_cq waits for ibv_end_poll: the consumer lock",
		      what);
	uint64_t ids[8];
	int got = 0;
	do {
		CHECK(cx->status == IBV_WC_SUCCESS && ibv_wc_read_opcode(cx) == IBV_WC_RDMA_WRITE, "%s: CQE %d", what,
		      got);
		ids[got++] = cx->wr_id;
	} while (got < 3 && ibv_next_poll(cx) == 0);
	ibv_end_poll(cx);
	CHECK(wait_done(&p, 2000), "%s: the other thread is done after ibv_end_poll", what);
	pthread_join(th, NULL);
	struct ibv_wc wc[8];
	int more = got < 3 ? dpvt_poll_n(cq, wc, 3 - got, 3000) : 0;
	for (int i = 0; i < more; i++)
		ids[got++] = wc[i].status == IBV_WC_SUCCESS ? wc[i].wr_id : 0;
	CHECK(got == 3 && ids[0] == 1 && ids[1] == 2 && ids[2] == 3, "%s: the three CQEs in order (extended poll, "
	      "then ibv_poll_cq)", what);
	CHECK_EQ(write1(qa, 4), 0, "post");
	CHECK_EQ(write1(qa, 5), 0, "post");
	expect_cqes(cq, 2, 4, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, single ? "SINGLE_THREADED: ibv_poll_cq"
									    : "default CQ: ibv_poll_cq");
	CHECK(ibv_resize_cq(cq, 64) == 0, "%s: resize", what);
	CHECK_EQ(write1(qa, 6), 0, "post");
	expect_cqes(cq, 1, 6, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, "after resize");
	ibv_destroy_qp(qa);
	ibv_destroy_qp(qb);
	CHECK(ibv_destroy_cq(cq) == 0, "%s: destroy", what);
	drain_all();
}

int main(void)
{
	unsetenv("DPVERBS_FAULT");
	if (dpvt_ep_open(&A, "dpv0", 256, false) || dpvt_ep_open(&B, "dpv1", 256, false) ||
	    dpvt_ep_traffic_buf(&A, NULL) || dpvt_ep_traffic_buf(&B, NULL)) {
		printf("0 passed, 1 failed\n");
		return 1;
	}
	t_send();
	t_recv();
	t_ignore();
	t_td();
	t_single(true);
	t_single(false);
	dpvt_ep_close(&A);
	dpvt_ep_close(&B);
	return dpvt_finish();
}
