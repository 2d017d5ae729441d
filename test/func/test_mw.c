/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Memory windows between dpv0 (requester A) and dpv1 (responder B, the
 * windows' side), black-box (the public verbs API only): embedded mode, and
 * in shared mode under dpverbsd (test/shared: shared_mw).
 *   caps      max_mw, IBV_DEVICE_MEM_WINDOW | MEM_WINDOW_TYPE_2B
 *   alloc     type 1 and 2, type 3 refused with EINVAL; ibv_import_mr of a
 *             window's handle: ENOENT
 *   nobind    a bind on an MR without IBV_ACCESS_MW_BIND: IBV_WC_MW_BIND_ERR
 *             (type 2 work request and ibv_bind_mw), QP to ERR, flushes
 *   access    a type 2 window: WRITE and READ through its rkey inside its
 *             range (the MR itself has no remote right), outside it and
 *             without its right: IBV_WC_REM_ACCESS_ERR; FETCH_ADD through
 *             a zero-based window, at an offset and past its length
 *   stale     LOCAL_INV (IBV_WC_LOCAL_INV), then a WRITE with the old rkey:
 *             IBV_WC_REM_ACCESS_ERR at the requester, the next WR flushed,
 *             both QPs in ERR; a rebind with a new key works, the old fails
 *   foreign   type 2B: the window is reached through its own QP only, and
 *             only that QP invalidates it (LOCAL_INV from another QP, of a
 *             type 1 window's rkey, of an MR's rkey: IBV_WC_MW_BIND_ERR)
 *   send_inv  SEND with invalidate: the receive says IBV_WC_WITH_INV and the
 *             rkey, the window is invalidated; of a type 1 window:
 *             IBV_WC_REM_INV_REQ_ERR on both sides
 *   dealloc   ibv_dereg_mr of an MR with a bound window: EBUSY; a
 *             deallocated window's rkey: IBV_WC_REM_ACCESS_ERR
 *   odp       a type 2 window on the implicit ODP MR (addr NULL, the whole
 *             address space): a WRITE through it lands at its address
 *   type1     ibv_bind_mw: mw->rkey changes, any QP of the PD reaches it,
 *             length 0 unbinds it
 *   post      post-time errors (EINVAL)
 *   qpex      ibv_wr_bind_mw and ibv_wr_local_inv
 *   leave     the process exits with a window bound to an MR and a QP (in
 *             shared mode the daemon reclaims them: with_daemon.sh checks
 *             that it stops cleanly afterwards)
 */
#include <arpa/inet.h>

#include "dpvt_verbs.h"

#define BUFSZ (1u << 16)
#define WIN_OFF 4096u
#define WIN_LEN 8192u

static struct dpvt_ep A, B;
static uint8_t *abuf, *bbuf;
static struct ibv_mr *amr, *bmr, *bmr_nobind;

/* An RC pair A -> B in RTS (short retry: a dead peer fails fast). */
static int pair(struct ibv_qp **qa, struct ibv_qp **qb)
{
	struct dpvt_conn o = dpvt_conn_default();
	o.timeout = 12;
	o.retry_cnt = 2;
	*qa = dpvt_ep_qp(&A, IBV_QPT_RC, 64, 64, NULL);
	*qb = dpvt_ep_qp(&B, IBV_QPT_RC, 64, 64, NULL);
	if (!*qa || !*qb)
		return -1;
	return dpvt_connect(*qa, A.ctx, &o, *qb, B.ctx, &o, false);
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

/* One completion on cq: its status and opcode (and qp_num, wr_id) as
 * expected. */
static bool expect(struct ibv_cq *cq, enum ibv_wc_status st, enum ibv_wc_opcode op, uint64_t wr_id, const char *what)
{
	struct ibv_wc wc;
	int n = dpvt_poll_n(cq, &wc, 1, 3000);
	if (!CHECK(n == 1, "%s: no completion", what))
		return false;
	return CHECK(wc.status == st && wc.wr_id == wr_id && (st != IBV_WC_SUCCESS || wc.opcode == op),
		     "%s: %s opcode %d wr_id %llu, expected %s opcode %d wr_id %llu", what,
		     ibv_wc_status_str(wc.status), wc.opcode, (unsigned long long)wc.wr_id, ibv_wc_status_str(st), op,
		     (unsigned long long)wr_id);
}

/* IBV_WR_BIND_MW of a type 2 window with rkey (bind_info as given). */
static int post_bind(struct ibv_qp *qp, uint64_t wr_id, struct ibv_mw *mw, uint32_t rkey, struct ibv_mr *mr,
		     uint64_t addr, uint64_t len, unsigned int acc)
{
	struct ibv_send_wr wr, *bad = NULL;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.opcode = IBV_WR_BIND_MW;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = rkey;
	wr.bind_mw.bind_info.mr = mr;
	wr.bind_mw.bind_info.addr = addr;
	wr.bind_mw.bind_info.length = len;
	wr.bind_mw.bind_info.mw_access_flags = acc;
	return ibv_post_send(qp, &wr, &bad);
}

/* LOCAL_INV (op IBV_WR_LOCAL_INV) or SEND_WITH_INV of rkey. */
static int post_inv(struct ibv_qp *qp, enum ibv_wr_opcode op, uint64_t wr_id, uint32_t rkey)
{
	struct ibv_sge s = {.addr = (uintptr_t)abuf, .length = 16, .lkey = amr->lkey};
	struct ibv_send_wr wr, *bad = NULL;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.opcode = op;
	wr.send_flags = IBV_SEND_SIGNALED;
	if (op == IBV_WR_SEND_WITH_INV) {
		wr.sg_list = &s;
		wr.num_sge = 1;
	}
	wr.invalidate_rkey = rkey;
	return ibv_post_send(qp, &wr, &bad);
}

static int post_write(struct ibv_qp *qp, uint64_t wr_id, uint32_t len, uint64_t raddr, uint32_t rkey)
{
	return dpvt_post_wr(qp, IBV_WR_RDMA_WRITE, wr_id, abuf, len, amr->lkey, raddr, rkey, 0, IBV_SEND_SIGNALED);
}

/* A type 2 window bound by qb over the window range of bbuf: its rkey, or 0. */
static uint32_t bound_mw2(struct ibv_qp *qb, struct ibv_mw **mw, unsigned int acc, const char *what)
{
	*mw = ibv_alloc_mw(B.pd, IBV_MW_TYPE_2);
	if (!CHECK(*mw != NULL, "%s: ibv_alloc_mw: %s", what, strerror(errno)))
		return 0;
	uint32_t rkey = ibv_inc_rkey((*mw)->rkey);
	CHECK_EQ(post_bind(qb, 77, *mw, rkey, bmr, (uintptr_t)bbuf + WIN_OFF, WIN_LEN, acc), 0, "post BIND_MW");
	return expect(B.scq, IBV_WC_SUCCESS, IBV_WC_BIND_MW, 77, what) ? rkey : 0;
}

static void t_caps_alloc(void)
{
	struct ibv_device_attr a;
	CHECK_EQ(ibv_query_device(B.ctx, &a), 0, "ibv_query_device");
	CHECK(a.max_mw > 0 && a.max_mw == a.max_mr, "max_mw %d (max_mr %d)", a.max_mw, a.max_mr);
	CHECK((a.device_cap_flags & IBV_DEVICE_MEM_WINDOW) && (a.device_cap_flags & IBV_DEVICE_MEM_WINDOW_TYPE_2B),
	      "device_cap_flags %#x: MEM_WINDOW and MEM_WINDOW_TYPE_2B", a.device_cap_flags);
	CHECK_NULL_ERRNO(ibv_alloc_mw(B.pd, (enum ibv_mw_type)3), EINVAL);
	struct ibv_mw *m1 = ibv_alloc_mw(B.pd, IBV_MW_TYPE_1), *m2 = ibv_alloc_mw(B.pd, IBV_MW_TYPE_2);
	CHECK(m1 && m2 && m1->type == IBV_MW_TYPE_1 && m2->type == IBV_MW_TYPE_2 && m1->pd == B.pd &&
	      (m1->rkey >> 8) != (m2->rkey >> 8), "alloc type 1 and 2");
	CHECK_EQ(ibv_dealloc_pd(B.pd), EBUSY, "ibv_dealloc_pd with windows on it");
	/* a window's handle is no MR's to import */
	struct ibv_context *ic = ibv_import_device(B.ctx->cmd_fd);
	struct ibv_pd *ipd = ic ? ibv_import_pd(ic, B.pd->handle) : NULL;
	if (CHECK(ipd != NULL, "ibv_import_device, ibv_import_pd: %s", strerror(errno)) && m2) {
		CHECK_NULL_ERRNO(ibv_import_mr(ipd, m2->handle), ENOENT);
		ibv_unimport_pd(ipd);
	}
	if (ic)
		ibv_close_device(ic);
	if (m1)
		CHECK_EQ(ibv_dealloc_mw(m1), 0, "dealloc type 1");
	if (m2)
		CHECK_EQ(ibv_dealloc_mw(m2), 0, "dealloc type 2");
}

static void t_nobind(void)
{
	struct ibv_qp *qa, *qb;
	if (!CHECK(pair(&qa, &qb) == 0, "nobind: pair"))
		return;
	struct ibv_mw *mw = ibv_alloc_mw(B.pd, IBV_MW_TYPE_2);
	CHECK_EQ(post_bind(qb, 1, mw, ibv_inc_rkey(mw->rkey), bmr_nobind, (uintptr_t)bbuf, 4096,
			   IBV_ACCESS_REMOTE_WRITE), 0, "post BIND_MW on an MR without MW_BIND");
	CHECK_EQ(dpvt_post_wr(qb, IBV_WR_SEND, 2, bbuf, 8, bmr->lkey, 0, 0, 0, IBV_SEND_SIGNALED), 0, "post SEND");
	expect(B.scq, IBV_WC_MW_BIND_ERR, IBV_WC_BIND_MW, 1, "type 2 bind without MW_BIND");
	expect(B.scq, IBV_WC_WR_FLUSH_ERR, IBV_WC_SEND, 2, "the WR behind it");
	CHECK_EQ(dpvt_qp_state(qb), IBV_QPS_ERR, "QP in ERR after the bind error");
	unpair(qa, qb);
	/* type 1, ibv_bind_mw */
	if (!CHECK(pair(&qa, &qb) == 0, "nobind: pair"))
		return;
	struct ibv_mw *m1 = ibv_alloc_mw(B.pd, IBV_MW_TYPE_1);
	struct ibv_mw_bind b = {.wr_id = 3, .send_flags = IBV_SEND_SIGNALED,
				.bind_info = {.mr = bmr_nobind, .addr = (uintptr_t)bbuf, .length = 4096,
					      .mw_access_flags = IBV_ACCESS_REMOTE_READ}};
	CHECK_EQ(ibv_bind_mw(qb, m1, &b), 0, "ibv_bind_mw on an MR without MW_BIND");
	expect(B.scq, IBV_WC_MW_BIND_ERR, IBV_WC_BIND_MW, 3, "type 1 bind without MW_BIND");
	CHECK_EQ(dpvt_qp_state(qb), IBV_QPS_ERR, "QP in ERR after the bind error");
	unpair(qa, qb);
	/* behind a SEND in flight: the SEND completes first, then the bind's
	 * error, then the rest is flushed */
	if (!CHECK(pair(&qa, &qb) == 0, "nobind: pair"))
		return;
	CHECK_EQ(dpvt_post_recv(qa, amr, 4, 0, 4096), 0, "post_recv");
	CHECK_EQ(dpvt_post_wr(qb, IBV_WR_SEND, 5, bbuf, 3000, bmr->lkey, 0, 0, 0, IBV_SEND_SIGNALED), 0, "post SEND");
	CHECK_EQ(post_bind(qb, 6, mw, ibv_inc_rkey(mw->rkey), bmr_nobind, (uintptr_t)bbuf, 4096,
			   IBV_ACCESS_REMOTE_WRITE), 0, "post BIND_MW on an MR without MW_BIND");
	CHECK_EQ(dpvt_post_wr(qb, IBV_WR_SEND, 7, bbuf, 8, bmr->lkey, 0, 0, 0, IBV_SEND_SIGNALED), 0, "post SEND");
	expect(B.scq, IBV_WC_SUCCESS, IBV_WC_SEND, 5, "the SEND before the refused bind");
	expect(B.scq, IBV_WC_MW_BIND_ERR, IBV_WC_BIND_MW, 6, "the refused bind, after it");
	expect(B.scq, IBV_WC_WR_FLUSH_ERR, IBV_WC_SEND, 7, "the WR behind it");
	unpair(qa, qb);
	ibv_dealloc_mw(mw);
	ibv_dealloc_mw(m1);
}

static void t_access(void)
{
	struct ibv_qp *qa, *qb;
	struct ibv_mw *mw;
	if (!CHECK(pair(&qa, &qb) == 0, "access: pair"))
		return;
	uint32_t rkey = bound_mw2(qb, &mw, IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ, "access: bind");
	uint64_t win = (uintptr_t)bbuf + WIN_OFF;
	dpvt_pat_fill(abuf, 3000, 7, 1);
	CHECK_EQ(post_write(qa, 10, 3000, win + 100, rkey), 0, "post WRITE through the window");
	expect(A.scq, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, 10, "WRITE through the window");
	CHECK(dpvt_pat_check(bbuf + WIN_OFF + 100, 3000, 7, 1) < 0, "WRITE's bytes in the window");
	memset(abuf + 8192, 0, 3000);
	CHECK_EQ(dpvt_post_wr(qa, IBV_WR_RDMA_READ, 11, abuf + 8192, 3000, amr->lkey, win + 100, rkey, 0,
			      IBV_SEND_SIGNALED), 0, "post READ");
	expect(A.scq, IBV_WC_SUCCESS, IBV_WC_RDMA_READ, 11, "READ through the window");
	CHECK(dpvt_pat_check(abuf + 8192, 3000, 7, 1) < 0, "READ's bytes");
	CHECK_EQ(post_write(qa, 12, 200, win + WIN_LEN - 100, rkey), 0, "post WRITE across the window's end");
	CHECK_EQ(post_write(qa, 13, 8, win, rkey), 0, "post WRITE behind it");
	expect(A.scq, IBV_WC_REM_ACCESS_ERR, IBV_WC_RDMA_WRITE, 12, "WRITE across the window's end");
	expect(A.scq, IBV_WC_WR_FLUSH_ERR, IBV_WC_RDMA_WRITE, 13, "WR behind it");
	unpair(qa, qb);
	ibv_dealloc_mw(mw);
	/* a window with READ only: no WRITE through it */
	if (!CHECK(pair(&qa, &qb) == 0, "access: pair"))
		return;
	rkey = bound_mw2(qb, &mw, IBV_ACCESS_REMOTE_READ, "access: bind READ only");
	CHECK_EQ(post_write(qa, 14, 8, win, rkey), 0, "post WRITE");
	expect(A.scq, IBV_WC_REM_ACCESS_ERR, IBV_WC_RDMA_WRITE, 14, "WRITE through a READ-only window");
	unpair(qa, qb);
	ibv_dealloc_mw(mw);
	/* atomics through a zero-based window: offsets from 0 */
	if (!CHECK(pair(&qa, &qb) == 0, "access: pair"))
		return;
	mw = ibv_alloc_mw(B.pd, IBV_MW_TYPE_2);
	rkey = ibv_inc_rkey(mw->rkey);
	CHECK_EQ(post_bind(qb, 15, mw, rkey, bmr, win, WIN_LEN, IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_ZERO_BASED), 0,
		 "post zero-based bind");
	expect(B.scq, IBV_WC_SUCCESS, IBV_WC_BIND_MW, 15, "zero-based type 2 bind");
	uint64_t *res = (uint64_t *)(abuf + 16384), *tgt = (uint64_t *)(bbuf + WIN_OFF + 64);
	*tgt = 40;
	CHECK_EQ(dpvt_post_atomic(qa, IBV_WR_ATOMIC_FETCH_AND_ADD, 16, res, amr->lkey, 64, rkey, 2, 0, NULL), 0,
		 "post FETCH_ADD at offset 64");
	expect(A.scq, IBV_WC_SUCCESS, IBV_WC_FETCH_ADD, 16, "FETCH_ADD through a zero-based window");
	CHECK(*res == 40 && *tgt == 42, "FETCH_ADD: original %llu, now %llu", (unsigned long long)*res,
	      (unsigned long long)*tgt);
	CHECK_EQ(dpvt_post_atomic(qa, IBV_WR_ATOMIC_FETCH_AND_ADD, 17, res, amr->lkey, WIN_LEN, rkey, 2, 0, NULL), 0,
		 "post FETCH_ADD at the window's length");
	expect(A.scq, IBV_WC_REM_ACCESS_ERR, IBV_WC_FETCH_ADD, 17, "FETCH_ADD past a zero-based window");
	unpair(qa, qb);
	ibv_dealloc_mw(mw);
}

static void t_stale(void)
{
	struct ibv_qp *qa, *qb;
	struct ibv_mw *mw;
	if (!CHECK(pair(&qa, &qb) == 0, "stale: pair"))
		return;
	uint64_t win = (uintptr_t)bbuf + WIN_OFF;
	uint32_t rkey = bound_mw2(qb, &mw, IBV_ACCESS_REMOTE_WRITE, "stale: bind");
	CHECK_EQ(post_write(qa, 20, 64, win, rkey), 0, "post WRITE");
	expect(A.scq, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, 20, "WRITE before invalidation");
	CHECK_EQ(post_inv(qb, IBV_WR_LOCAL_INV, 21, rkey), 0, "post LOCAL_INV");
	expect(B.scq, IBV_WC_SUCCESS, IBV_WC_LOCAL_INV, 21, "LOCAL_INV");
	/* bound again with another key: the old one stays dead */
	uint32_t rkey2 = ibv_inc_rkey(rkey);
	CHECK_EQ(post_bind(qb, 22, mw, rkey2, bmr, win, WIN_LEN, IBV_ACCESS_REMOTE_WRITE), 0, "post rebind");
	expect(B.scq, IBV_WC_SUCCESS, IBV_WC_BIND_MW, 22, "type 2 rebind after invalidation");
	CHECK_EQ(post_write(qa, 23, 64, win, rkey2), 0, "post WRITE with the new rkey");
	expect(A.scq, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, 23, "WRITE with the new rkey");
	CHECK_EQ(post_bind(qb, 24, mw, ibv_inc_rkey(rkey2), bmr, win, WIN_LEN, IBV_ACCESS_REMOTE_WRITE), 0,
		 "post bind of a bound type 2 window");
	expect(B.scq, IBV_WC_MW_BIND_ERR, IBV_WC_BIND_MW, 24, "bind of a bound type 2 window");
	unpair(qa, qb);
	ibv_dealloc_mw(mw);
	/* the stale rkey: a remote access error and the QP error flow */
	if (!CHECK(pair(&qa, &qb) == 0, "stale: pair"))
		return;
	rkey = bound_mw2(qb, &mw, IBV_ACCESS_REMOTE_WRITE, "stale: bind");
	CHECK_EQ(post_inv(qb, IBV_WR_LOCAL_INV, 25, rkey), 0, "post LOCAL_INV");
	expect(B.scq, IBV_WC_SUCCESS, IBV_WC_LOCAL_INV, 25, "LOCAL_INV");
	CHECK_EQ(post_write(qa, 26, 64, win, rkey), 0, "post WRITE with the invalidated rkey");
	CHECK_EQ(post_write(qa, 27, 64, win, bmr->rkey), 0, "post WRITE behind it");
	expect(A.scq, IBV_WC_REM_ACCESS_ERR, IBV_WC_RDMA_WRITE, 26, "WRITE with the invalidated rkey");
	expect(A.scq, IBV_WC_WR_FLUSH_ERR, IBV_WC_RDMA_WRITE, 27, "WR behind it");
	CHECK_EQ(dpvt_qp_state(qa), IBV_QPS_ERR, "requester in ERR");
	CHECK_EQ(dpvt_qp_state(qb), IBV_QPS_ERR, "responder in ERR");
	unpair(qa, qb);
	ibv_dealloc_mw(mw);
}

/* LOCAL_INV of rkey on a fresh QP of B: refused (MW_BIND_ERR, QP to ERR). */
static void inv_refused(uint32_t rkey, const char *what)
{
	struct ibv_qp *qa, *qb;
	if (!CHECK(pair(&qa, &qb) == 0, "%s: pair", what))
		return;
	CHECK_EQ(post_inv(qb, IBV_WR_LOCAL_INV, 30, rkey), 0, "post LOCAL_INV");
	expect(B.scq, IBV_WC_MW_BIND_ERR, IBV_WC_LOCAL_INV, 30, what);
	CHECK_EQ(dpvt_qp_state(qb), IBV_QPS_ERR, "QP in ERR after a refused LOCAL_INV");
	unpair(qa, qb);
}

static void t_foreign(void)
{
	struct ibv_qp *qa, *qb;
	struct ibv_mw *mw, *m1 = ibv_alloc_mw(B.pd, IBV_MW_TYPE_1);
	if (!CHECK(pair(&qa, &qb) == 0, "foreign: pair"))
		return;
	uint64_t win = (uintptr_t)bbuf + WIN_OFF;
	uint32_t rkey = bound_mw2(qb, &mw, IBV_ACCESS_REMOTE_WRITE, "foreign: bind");
	inv_refused(rkey, "LOCAL_INV of a window bound to another QP");
	inv_refused(0x00ffff00u | (rkey & 0xff), "LOCAL_INV of an rkey nothing has");
	inv_refused(bmr->rkey, "LOCAL_INV of an MR's rkey");
	inv_refused(m1->rkey, "LOCAL_INV of a type 1 window's rkey");
	CHECK_EQ(post_write(qa, 31, 64, win, rkey), 0, "post WRITE");
	expect(A.scq, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, 31, "the window is still bound to its QP");
	struct ibv_qp *qa2, *qb2;
	if (CHECK(pair(&qa2, &qb2) == 0, "foreign: second pair")) {
		CHECK_EQ(post_write(qa2, 32, 64, win, rkey), 0, "post WRITE through another QP");
		expect(A.scq, IBV_WC_REM_ACCESS_ERR, IBV_WC_RDMA_WRITE, 32, "type 2B window through another QP");
		unpair(qa2, qb2);
	}
	unpair(qa, qb);
	ibv_dealloc_mw(mw);
	ibv_dealloc_mw(m1);
}

static void t_send_inv(void)
{
	struct ibv_qp *qa, *qb;
	struct ibv_mw *mw;
	struct ibv_wc wc;
	if (!CHECK(pair(&qa, &qb) == 0, "send_inv: pair"))
		return;
	uint64_t win = (uintptr_t)bbuf + WIN_OFF;
	uint32_t rkey = bound_mw2(qb, &mw, IBV_ACCESS_REMOTE_WRITE, "send_inv: bind");
	CHECK_EQ(dpvt_post_recv(qb, bmr, 40, 0, 256), 0, "post_recv");
	CHECK_EQ(post_inv(qa, IBV_WR_SEND_WITH_INV, 41, rkey), 0, "post SEND_WITH_INV");
	expect(A.scq, IBV_WC_SUCCESS, IBV_WC_SEND, 41, "SEND_WITH_INV");
	CHECK(dpvt_poll_n(B.rcq, &wc, 1, 3000) == 1 && wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RECV &&
	      (wc.wc_flags & IBV_WC_WITH_INV) && wc.invalidated_rkey == rkey,
	      "receive: WITH_INV, invalidated_rkey %#x (%#x)", wc.invalidated_rkey, rkey);
	CHECK_EQ(post_write(qa, 42, 64, win, rkey), 0, "post WRITE with the invalidated rkey");
	expect(A.scq, IBV_WC_REM_ACCESS_ERR, IBV_WC_RDMA_WRITE, 42, "WRITE after SEND with invalidate");
	unpair(qa, qb);
	ibv_dealloc_mw(mw);
	/* a type 1 window cannot be invalidated (o10-37.2.26) */
	if (!CHECK(pair(&qa, &qb) == 0, "send_inv: pair"))
		return;
	struct ibv_mw *m1 = ibv_alloc_mw(B.pd, IBV_MW_TYPE_1);
	struct ibv_mw_bind b = {.wr_id = 43, .send_flags = IBV_SEND_SIGNALED,
				.bind_info = {.mr = bmr, .addr = win, .length = WIN_LEN,
					      .mw_access_flags = IBV_ACCESS_REMOTE_WRITE}};
	CHECK_EQ(ibv_bind_mw(qb, m1, &b), 0, "ibv_bind_mw");
	expect(B.scq, IBV_WC_SUCCESS, IBV_WC_BIND_MW, 43, "type 1 bind");
	CHECK_EQ(dpvt_post_recv(qb, bmr, 44, 0, 256), 0, "post_recv");
	CHECK_EQ(post_inv(qa, IBV_WR_SEND_WITH_INV, 45, m1->rkey), 0, "post SEND_WITH_INV of a type 1 window");
	expect(A.scq, IBV_WC_REM_INV_REQ_ERR, IBV_WC_SEND, 45, "SEND_WITH_INV of a type 1 window: requester");
	expect(B.rcq, IBV_WC_REM_INV_REQ_ERR, IBV_WC_RECV, 44, "SEND_WITH_INV of a type 1 window: receive");
	unpair(qa, qb);
	ibv_dealloc_mw(m1);
}

static void t_dealloc(void)
{
	struct ibv_qp *qa, *qb;
	struct ibv_mw *mw;
	uint8_t *buf = aligned_alloc(4096, BUFSZ);
	struct ibv_mr *mr = ibv_reg_mr(B.pd, buf, BUFSZ, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);
	if (!CHECK(mr && pair(&qa, &qb) == 0, "dealloc: pair"))
		return;
	mw = ibv_alloc_mw(B.pd, IBV_MW_TYPE_2);
	uint32_t rkey = ibv_inc_rkey(mw->rkey);
	CHECK_EQ(post_bind(qb, 50, mw, rkey, mr, (uintptr_t)buf, BUFSZ, IBV_ACCESS_REMOTE_WRITE), 0, "post bind");
	expect(B.scq, IBV_WC_SUCCESS, IBV_WC_BIND_MW, 50, "bind");
	CHECK_EQ(ibv_dereg_mr(mr), EBUSY, "ibv_dereg_mr of an MR a window is bound to");
	CHECK_EQ(post_write(qa, 51, 64, (uintptr_t)buf, rkey), 0, "post WRITE");
	expect(A.scq, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, 51, "WRITE: the MR is still registered");
	CHECK_EQ(ibv_dealloc_mw(mw), 0, "ibv_dealloc_mw of a bound window");
	CHECK_EQ(post_write(qa, 52, 64, (uintptr_t)buf, rkey), 0, "post WRITE");
	expect(A.scq, IBV_WC_REM_ACCESS_ERR, IBV_WC_RDMA_WRITE, 52, "WRITE through a deallocated window");
	CHECK_EQ(ibv_dereg_mr(mr), 0, "ibv_dereg_mr once the window is gone");
	unpair(qa, qb);
	free(buf);
}

static void t_odp(void)
{
	struct ibv_qp *qa, *qb;
	struct ibv_mr *imr = ibv_reg_mr(B.pd, NULL, SIZE_MAX,
					IBV_ACCESS_ON_DEMAND | IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);
	if (!CHECK(imr && pair(&qa, &qb) == 0, "odp: implicit MR (%s), pair", strerror(errno)))
		return;
	struct ibv_mw *mw = ibv_alloc_mw(B.pd, IBV_MW_TYPE_2);
	uint64_t win = (uintptr_t)bbuf + WIN_OFF;
	uint32_t rkey = ibv_inc_rkey(mw->rkey);
	CHECK_EQ(post_bind(qb, 95, mw, rkey, imr, win, WIN_LEN, IBV_ACCESS_REMOTE_WRITE), 0, "post bind");
	expect(B.scq, IBV_WC_SUCCESS, IBV_WC_BIND_MW, 95, "bind on the implicit ODP MR");
	dpvt_pat_fill(abuf, 512, 9, 3);
	CHECK_EQ(post_write(qa, 96, 512, win + 8, rkey), 0, "post WRITE");
	expect(A.scq, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, 96, "WRITE through it");
	CHECK(dpvt_pat_check(bbuf + WIN_OFF + 8, 512, 9, 3) < 0, "its bytes");
	CHECK_EQ(post_write(qa, 97, 8, win - 8, rkey), 0, "post WRITE before the window");
	expect(A.scq, IBV_WC_REM_ACCESS_ERR, IBV_WC_RDMA_WRITE, 97, "WRITE before the window");
	unpair(qa, qb);
	CHECK_EQ(ibv_dealloc_mw(mw), 0, "dealloc");
	CHECK_EQ(ibv_dereg_mr(imr), 0, "dereg the implicit MR");
}

static void t_type1(void)
{
	struct ibv_qp *qa, *qb, *qa2, *qb2;
	struct ibv_mw *m1 = ibv_alloc_mw(B.pd, IBV_MW_TYPE_1);
	if (!CHECK(m1 && pair(&qa, &qb) == 0 && pair(&qa2, &qb2) == 0, "type1: pairs"))
		return;
	uint64_t win = (uintptr_t)bbuf + WIN_OFF;
	uint32_t old = m1->rkey;
	struct ibv_mw_bind b = {.wr_id = 60, .send_flags = IBV_SEND_SIGNALED,
				.bind_info = {.mr = bmr, .addr = win, .length = WIN_LEN,
					      .mw_access_flags = IBV_ACCESS_REMOTE_WRITE}};
	CHECK_EQ(ibv_bind_mw(qb, m1, &b), 0, "ibv_bind_mw");
	CHECK(m1->rkey == ibv_inc_rkey(old), "mw->rkey %#x: the next key of %#x", m1->rkey, old);
	expect(B.scq, IBV_WC_SUCCESS, IBV_WC_BIND_MW, 60, "type 1 bind");
	CHECK_EQ(post_write(qa, 61, 64, win, m1->rkey), 0, "post WRITE");
	expect(A.scq, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, 61, "WRITE through a type 1 window");
	CHECK_EQ(post_write(qa2, 62, 64, win + 64, m1->rkey), 0, "post WRITE on another QP");
	expect(A.scq, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, 62, "a type 1 window through another QP of its PD");
	uint32_t bound = m1->rkey;
	b.wr_id = 63;
	b.bind_info.length = 0; /* unbind */
	CHECK_EQ(ibv_bind_mw(qb, m1, &b), 0, "ibv_bind_mw, length 0");
	expect(B.scq, IBV_WC_SUCCESS, IBV_WC_BIND_MW, 63, "type 1 unbind");
	CHECK_EQ(post_write(qa, 64, 64, win, bound), 0, "post WRITE");
	expect(A.scq, IBV_WC_REM_ACCESS_ERR, IBV_WC_RDMA_WRITE, 64, "WRITE through the unbound window");
	unpair(qa, qb);
	unpair(qa2, qb2);
	ibv_dealloc_mw(m1);
}

static void t_post(void)
{
	struct ibv_qp *qa, *qb;
	struct ibv_mw *m1 = ibv_alloc_mw(B.pd, IBV_MW_TYPE_1), *m2 = ibv_alloc_mw(B.pd, IBV_MW_TYPE_2);
	if (!CHECK(m1 && m2 && pair(&qa, &qb) == 0, "post: pair"))
		return;
	CHECK_EQ(post_bind(qb, 70, m1, ibv_inc_rkey(m1->rkey), bmr, (uintptr_t)bbuf, 64, 0), EINVAL,
		 "IBV_WR_BIND_MW of a type 1 window");
	CHECK_EQ(post_bind(qb, 71, NULL, 0, bmr, (uintptr_t)bbuf, 64, 0), EINVAL, "IBV_WR_BIND_MW without a window");
	struct ibv_mw_bind b = {.wr_id = 72, .send_flags = IBV_SEND_SIGNALED,
				.bind_info = {.mr = bmr, .addr = (uintptr_t)bbuf, .length = 64,
					      .mw_access_flags = IBV_ACCESS_REMOTE_READ | IBV_ACCESS_ZERO_BASED}};
	CHECK_EQ(ibv_bind_mw(qb, m1, &b), EINVAL, "ibv_bind_mw of a zero-based type 1 window");
	CHECK_EQ(ibv_bind_mw(qb, m2, &b), EINVAL, "ibv_bind_mw of a type 2 window");
	struct ibv_qp *ud = dpvt_ud_qp(&B, 1, 1, 1);
	if (CHECK(ud != NULL, "UD QP")) {
		CHECK_EQ(post_bind(ud, 73, m2, ibv_inc_rkey(m2->rkey), bmr, (uintptr_t)bbuf, 64, 0), EINVAL,
			 "IBV_WR_BIND_MW on a UD QP");
		CHECK_EQ(post_inv(ud, IBV_WR_LOCAL_INV, 74, m2->rkey), EINVAL, "IBV_WR_LOCAL_INV on a UD QP");
		ibv_destroy_qp(ud);
	}
	CHECK(dpvt_poll_quiet(B.scq, 50) == 0, "nothing posted");
	unpair(qa, qb);
	ibv_dealloc_mw(m1);
	ibv_dealloc_mw(m2);
}

static void t_qpex(void)
{
	uint64_t ops = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_LOCAL_INV;
	struct ibv_qp *qa = dpvt_ep_qp(&A, IBV_QPT_RC, 64, 64, NULL);
	struct ibv_qp *qb = dpvt_qp_new_ex(B.pd, IBV_QPT_RC, B.scq, B.rcq, NULL, ops);
	struct dpvt_conn o = dpvt_conn_default();
	if (!CHECK(qa && qb, "qpex: QPs (errno %d)", errno) ||
	    !CHECK(dpvt_connect(qa, A.ctx, &o, qb, B.ctx, &o, false) == 0, "qpex: connect"))
		return;
	struct ibv_qp_ex *x = ibv_qp_to_qp_ex(qb);
	struct ibv_mw *mw = ibv_alloc_mw(B.pd, IBV_MW_TYPE_2);
	uint64_t win = (uintptr_t)bbuf + WIN_OFF;
	uint32_t rkey = ibv_inc_rkey(mw->rkey);
	struct ibv_mw_bind_info bi = {.mr = bmr, .addr = win, .length = WIN_LEN, .mw_access_flags = IBV_ACCESS_REMOTE_WRITE};
	ibv_wr_start(x);
	x->wr_id = 80;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_bind_mw(x, mw, rkey, &bi);
	CHECK_EQ(ibv_wr_complete(x), 0, "ibv_wr_bind_mw");
	expect(B.scq, IBV_WC_SUCCESS, IBV_WC_BIND_MW, 80, "ibv_wr_bind_mw");
	CHECK_EQ(post_write(qa, 81, 64, win, rkey), 0, "post WRITE");
	expect(A.scq, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, 81, "WRITE through it");
	ibv_wr_start(x);
	x->wr_id = 82;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_local_inv(x, rkey);
	CHECK_EQ(ibv_wr_complete(x), 0, "ibv_wr_local_inv");
	expect(B.scq, IBV_WC_SUCCESS, IBV_WC_LOCAL_INV, 82, "ibv_wr_local_inv");
	CHECK_EQ(post_write(qa, 83, 64, win, rkey), 0, "post WRITE");
	expect(A.scq, IBV_WC_REM_ACCESS_ERR, IBV_WC_RDMA_WRITE, 83, "WRITE after ibv_wr_local_inv");
	unpair(qa, qb);
	ibv_dealloc_mw(mw);
}

/* A QP, an MR and a type 2 window bound to both, left to the exit. */
static void t_leave(void)
{
	static uint8_t buf[4096] __attribute__((aligned(4096)));
	struct ibv_qp *qa, *qb;
	struct ibv_mr *mr = ibv_reg_mr(B.pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);
	struct ibv_mw *mw = ibv_alloc_mw(B.pd, IBV_MW_TYPE_2);
	if (!CHECK(mr && mw && pair(&qa, &qb) == 0, "leave: set-up"))
		return;
	CHECK_EQ(post_bind(qb, 90, mw, ibv_inc_rkey(mw->rkey), mr, (uintptr_t)buf, sizeof(buf), IBV_ACCESS_REMOTE_READ),
		 0, "post bind");
	expect(B.scq, IBV_WC_SUCCESS, IBV_WC_BIND_MW, 90, "bind, left bound at exit");
	CHECK_EQ(ibv_dereg_mr(mr), EBUSY, "dereg of its MR");
}

int main(void)
{
	unsetenv("DPVERBS_FAULT");
	if (dpvt_ep_open(&A, "dpv0", 256, false) || dpvt_ep_open(&B, "dpv1", 256, false)) {
		printf("0 passed, 1 failed\n");
		return 1;
	}
	abuf = aligned_alloc(4096, BUFSZ);
	bbuf = aligned_alloc(4096, BUFSZ);
	memset(abuf, 0, BUFSZ);
	memset(bbuf, 0, BUFSZ);
	amr = ibv_reg_mr(A.pd, abuf, BUFSZ, IBV_ACCESS_LOCAL_WRITE);
	/* no remote right: windows open it */
	bmr = ibv_reg_mr(B.pd, bbuf, BUFSZ, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);
	bmr_nobind = ibv_reg_mr(B.pd, bbuf, BUFSZ, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!CHECK(amr && bmr && bmr_nobind, "MRs"))
		return dpvt_finish();
	t_caps_alloc();
	t_nobind();
	t_access();
	t_stale();
	t_foreign();
	t_send_inv();
	t_dealloc();
	t_odp();
	t_type1();
	t_post();
	t_qpex();
	CHECK_EQ(ibv_dereg_mr(bmr), 0, "dereg: every window gone");
	ibv_dereg_mr(bmr_nobind);
	t_leave(); /* A and B stay open: the exit (the daemon) reclaims them */
	return dpvt_finish();
}
