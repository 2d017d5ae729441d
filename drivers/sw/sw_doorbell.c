/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Doorbells: how work an application posts reaches the engine.
 *
 * ibv_post_send rings the SQ doorbell (sw_sq_doorbell): inline, the
 * posting thread runs the QP's sender itself under the QP lock
 * (sw_qp_send); in service mode the QPN is queued on the ring of the QP's
 * engine context (qctx->db_ring) and that context's lcore runs it in its
 * next poll turn (sw_doorbells_drain, from sw_poll.c); a thread domain's
 * QP is run by the TD's owner. ibv_post_recv rings the RQ doorbell
 * (sw_rq_doorbell), which matters only in ERR (the new WQEs are flushed):
 * the responder takes receive WQEs when messages arrive. A QP whose
 * sending stopped on a full TX queue queues itself on the same ring
 * (sw_qp_kick) to run again after the next receive burst. Shared mode's
 * doorbell rings, one per application, are in sw_dbring.c.
 */
#include "sw_loc.h"
#include "sw_qp_lock.h"
#include "sw_queue.h"

/* Must hold the QP lock. */
void sw_qp_send(struct sw_qp *qp)
{
	/* the packets of what is posted leave in bursts where a burst is a
	 * system call (af_xdp, af_packet) */
	dpv_port_tx_begin(qp->qc);
	if (qp->type == IBV_QPT_UD || qp->type == IBV_QPT_RAW_PACKET) {
		if (qp->sq) /* an RSS QP has none */
			sw_ud_send(qp);
	} else if (qp->sq) {
		/* an ACK this QP deferred (to coalesce it, till the end of the
		 * poll turn) leaves before the requests posted after it: an
		 * RNIC ACKs before the application can even see the message,
		 * and a peer whose send completes only with that ACK posts its
		 * receives after it (fio's rdma engine, verb=send: the next
		 * request came first and was RNR NAKed, rnr_retry 0) */
		if (qp->resp.ack_pending)
			sw_resp_flush_ack(qp);
		sw_req_run(qp);
	}
	dpv_port_tx_end(qp->qc);
	/* a CQ of the QP overran (here, or because of another QP) */
	if (unlikely(sw_qp_cq_due(qp)))
		sw_qp_cq_fatal(qp);
}

void sw_sq_doorbell(void *p)
{
	struct sw_qp *qp = p;
	if (qp->lockless) {
		sw_td_claim(qp->td); /* the poster is the TD's thread */
	} else if (sw_lcore_mode()) {
		/* service mode: the lcore that owns the QP's context sends (the
		 * QPN is queued, not the pointer: the QP may be gone when read) */
		if (atomic_exchange(&qp->req.db_pending, true))
			return;
		if (rte_ring_mp_enqueue(qp->qc->db_ring, (void *)(uintptr_t)qp->qpn) == 0)
			return;
		atomic_store(&qp->req.db_pending, false); /* ring full: send from here */
	}
	sw_sect_enter(); /* outside any context's poll turn: dereg_mr waits for it */
	sw_qp_lock(qp);
	sw_qp_send(qp);
	sw_qp_unlock(qp);
	sw_sect_exit();
}

void sw_rq_doorbell(void *p)
{
	struct sw_qp *qp = p;
	if (sw_qp_state(qp) != IBV_QPS_ERR)
		return; /* the responder takes WQEs when messages arrive */
	sw_qp_lock(qp);
	sw_rq_flush(qp);
	sw_qp_unlock(qp);
}

void sw_qp_kick(struct sw_qp *qp)
{
	if (qp->lockless || atomic_exchange(&qp->req.db_pending, true))
		return;
	if (rte_ring_mp_enqueue(qp->qc->db_ring, (void *)(uintptr_t)qp->qpn) != 0)
		atomic_store(&qp->req.db_pending, false); /* the timer scan finds it */
}

/* QPs queued on the context's ring: rung doorbells (service mode) and QPs
 * whose sending stopped on a full TX queue (sw_qp_kick): their responses
 * and requests go out again, right after this turn's receive burst. */
int sw_doorbells_drain(struct dpv_qctx *qc)
{
	void *db[DPV_BURST];
	unsigned int n = rte_ring_sc_dequeue_burst(qc->db_ring, db, DPV_BURST, NULL);
	for (unsigned int i = 0; i < n; i++) {
		struct sw_qp *qp = sw_qp_lookup((uint32_t)(uintptr_t)db[i]);
		if (!qp)
			continue;
		atomic_store(&qp->req.db_pending, false);
		sw_qp_lock(qp);
		if (sw_resp_pending(qp))
			sw_resp_pump(qp, SW_RESP_BURST);
		sw_qp_send(qp);
		sw_qp_unlock(qp);
	}
	return (int)n;
}
