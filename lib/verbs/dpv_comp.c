/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * RC completer: ACK, NAK, RNR NAK, READ responses and ATOMIC ACKs complete
 * send WQEs in order (IBA 9.7.5, 9.9); the retransmission and RNR timers
 * drive go-back-N retries; errors complete the WQE with the matching status,
 * move the QP to the error state and flush everything else.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <endian.h>

#include <rte_cycles.h>

#include "dpv_rc.h"

static enum ibv_wc_opcode wc_opcode(enum ibv_wr_opcode op)
{
	switch (op) {
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		return IBV_WC_RDMA_WRITE;
	case IBV_WR_RDMA_READ:
		return IBV_WC_RDMA_READ;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
		return IBV_WC_COMP_SWAP;
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		return IBV_WC_FETCH_ADD;
	default:
		return IBV_WC_SEND;
	}
}

/* Complete the WQE at sq_head. Must hold qp->lock. */
void dpv_comp_wqe_done(struct dpv_qp *qp, struct dpv_send_wqe *w, enum ibv_wc_status st)
{
	struct dpv_rc *rc = qp->rc;
	if (w->rd_counted) {
		w->rd_counted = false;
		rc->rd_outstanding--;
	}
	w->state = WQE_DONE;
	if (st != IBV_WC_SUCCESS || (w->send_flags & IBV_SEND_SIGNALED)) {
		struct ibv_wc wc;
		memset(&wc, 0, sizeof(wc));
		wc.wr_id = w->wr_id;
		wc.status = st;
		wc.opcode = wc_opcode(w->opcode);
		wc.qp_num = dqp_ib(qp)->qp_num;
		if (st == IBV_WC_SUCCESS) {
			if (w->opcode == IBV_WR_RDMA_READ)
				wc.byte_len = w->length;
			else if (w->opcode == IBV_WR_ATOMIC_CMP_AND_SWP ||
				 w->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD)
				wc.byte_len = 8;
			else
				wc.byte_len = w->length;
		}
		dpv_cq_push(qp->scq, &wc, false);
	}
	if (sq_slot(rc, rc->sq_head) == w)
		rc->sq_head++;
	if (rc->sq_cur - rc->sq_head > rc->sq_tail - rc->sq_head) {
		/* a rewound WQE was acknowledged before it was resent: the send
		 * cursor and the next PSN move past it (never reuse its PSNs) */
		rc->sq_cur = rc->sq_head;
	}
	if (st == IBV_WC_SUCCESS && w->npkts && psn_cmp(psn_add(w->last_psn, 1), rc->req_psn) > 0)
		rc->req_psn = psn_add(w->last_psn, 1);
	if (rc->sqd_pending && rc->sq_head == rc->sq_cur) {
		rc->sqd_pending = false;
		struct ibv_async_event ev = {.event_type = IBV_EVENT_SQ_DRAINED};
		ev.element.qp = dqp_ib(qp);
		dpv_async_event(qp->ctx, &ev);
	}
}

/* Flush every WQE not completed yet. Must hold qp->lock. */
void dpv_rc_flush_sq(struct dpv_qp *qp)
{
	struct dpv_rc *rc = qp->rc;
	while (rc->sq_head != rc->sq_tail) {
		struct dpv_send_wqe *w = sq_slot(rc, rc->sq_head);
		dpv_comp_wqe_done(qp, w, IBV_WC_WR_FLUSH_ERR);
	}
	rc->sq_cur = rc->sq_head;
	rc->timer_deadline = 0;
	rc->rnr_deadline = 0;
}

/* Complete w with an error, then the QP goes to the error state (IBA
 * 10.8.3.2) and flushes. Must hold qp->lock. */
void dpv_rc_error(struct dpv_qp *qp, struct dpv_send_wqe *w, enum ibv_wc_status st)
{
	struct dpv_rc *rc = qp->rc;
	/* complete everything before w normally? they are in order: w is the
	 * oldest outstanding WQE whenever an error is detected */
	while (rc->sq_head != rc->sq_tail && sq_slot(rc, rc->sq_head) != w)
		dpv_comp_wqe_done(qp, sq_slot(rc, rc->sq_head), IBV_WC_WR_FLUSH_ERR);
	if (rc->sq_head != rc->sq_tail)
		dpv_comp_wqe_done(qp, w, st);
	dpv_rc_flush_sq(qp);
	dpv_qp_to_error(qp); /* and the receive queue (IBA 10.3.1) */
}

static uint64_t timeout_cycles(uint8_t t)
{
	/* IBA 9.7.6.1.3: 4.096 us * 2^timeout; 0 = infinite */
	if (!t)
		return 0;
	double us = 4.096 * (double)(1ULL << (t > 31 ? 31 : t));
	return (uint64_t)(us * (double)rte_get_tsc_hz() / 1e6);
}

void dpv_rc_timer_restart(struct dpv_qp *qp)
{
	struct dpv_rc *rc = qp->rc;
	uint64_t c = timeout_cycles(qp->attr.timeout);
	rc->timer_deadline = c ? rte_get_tsc_cycles() + c : 0;
}

/*
 * Tail-loss probe: when nothing was acknowledged for probe_cycles (1 ms,
 * doubling while nothing moves, reset by progress), go back to the oldest
 * unacknowledged PSN. This recovers a lost last packet or lost ACK long
 * before the QP's ACK timeout (often tens of ms), and unlike that timeout it
 * does not count against retry_cnt: IBA's timer keeps running on its own.
 */
void dpv_rc_probe_restart(struct dpv_qp *qp, bool reset)
{
	struct dpv_rc *rc = qp->rc;
	uint64_t base = rte_get_tsc_hz() / 1000000 * DPV_RC_PROBE_US;
	if (reset || !rc->probe_cycles)
		rc->probe_cycles = base;
	else if (rc->probe_cycles < base << 10)
		rc->probe_cycles <<= 1;
	rc->probe_deadline = rte_get_tsc_cycles() + rc->probe_cycles;
}

/* IBA 9.7.5.2.8 table 45: RNR NAK timer field -> microseconds */
static const uint32_t rnr_us[32] = {
	655360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960, 1280, 1920,
	2560, 3840, 5120, 7680, 10240, 15360, 20480, 30720, 40960, 61440, 81920, 122880,
	163840, 245760, 327680, 491520,
};

/* The oldest outstanding PSN moved from old to comp_psn. */
static void comp_progress(struct dpv_qp *qp, uint32_t old)
{
	struct dpv_rc *rc = qp->rc;
	rc->retry_left = qp->attr.retry_cnt;
	/* additive increase */
	uint32_t acked = (uint32_t)RTE_MAX(psn_cmp(rc->comp_psn, old), 0);
	rc->cwnd = RTE_MIN(rc->cwnd + acked / 8 + 1, (uint32_t)DPV_RC_WINDOW);
	if (psn_cmp(rc->req_psn, rc->comp_psn) > 0) {
		dpv_rc_timer_restart(qp);
		dpv_rc_probe_restart(qp, true);
	} else {
		rc->timer_deadline = 0;
		rc->probe_deadline = 0;
	}
}

/* An ACK (or the AETH of a response) for everything up to psn. */
static void do_ack(struct dpv_qp *qp, uint32_t psn)
{
	struct dpv_rc *rc = qp->rc;
	bool moved = false;
	uint32_t old = rc->comp_psn;
	/* WQEs rewound by a retry (SENDING) were all sent once: an ACK past
	 * their last PSN completes them too; POSTED ones were never sent */
	while (rc->sq_head != rc->sq_tail) {
		struct dpv_send_wqe *w = sq_slot(rc, rc->sq_head);
		if (w->state != WQE_PENDING && w->state != WQE_SENDING)
			break;
		if (w->opcode == IBV_WR_RDMA_READ || w->opcode == IBV_WR_ATOMIC_CMP_AND_SWP ||
		    w->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) {
			/* C9-? implied NAK: a later request was acknowledged but this
			 * READ/ATOMIC response is missing: resend from it */
			if (psn_cmp(psn, w->last_psn) >= 0) {
				uint32_t mtu = dpv_qp_mtu(qp);
				dpv_req_retry(qp, psn_add(w->first_psn, w->read_recv / mtu), false, false);
				return;
			}
			break;
		}
		if (psn_cmp(w->last_psn, psn) > 0)
			break;
		dpv_comp_wqe_done(qp, w, IBV_WC_SUCCESS);
		moved = true;
	}
	if (psn_cmp(psn_add(psn, 1), rc->comp_psn) > 0) {
		rc->comp_psn = psn_add(psn, 1);
		moved = true;
	}
	if (moved)
		comp_progress(qp, old);
}

static void read_resp(struct dpv_qp *qp, struct dpv_pkt_info *pi, const uint8_t *frame)
{
	struct dpv_rc *rc = qp->rc;
	uint32_t mtu = dpv_qp_mtu(qp);
	if (rc->sq_head == rc->sq_cur) {
		dpv_qp_cnt(qp, DPV_CNT_DUP_RESP);
		return;
	}
	/* earlier SEND/WRITE WQEs are implicitly acknowledged (C9-?) */
	if (pi->mask & DPV_HDR_AETH)
		do_ack(qp, psn_add(pi->psn, 0xffffff)); /* psn - 1 */
	struct dpv_send_wqe *w = sq_slot(rc, rc->sq_head);
	if (w->state != WQE_PENDING || w->opcode != IBV_WR_RDMA_READ) {
		dpv_qp_cnt(qp, DPV_CNT_DUP_RESP);
		return;
	}
	uint32_t expect = psn_add(w->first_psn, w->read_recv / mtu);
	int d = psn_cmp(pi->psn, expect);
	if (d < 0 || psn_cmp(pi->psn, w->last_psn) > 0) {
		dpv_qp_cnt(qp, DPV_CNT_DUP_RESP);
		return;
	}
	if (rc->rd_wait && (d > 0 || pi->psn != rc->rd_wait_psn)) {
		/* responses of an older burst, still arriving after we asked
		 * again: they must not trigger yet another replay */
		dpv_qp_cnt(qp, DPV_CNT_DUP_RESP);
		return;
	}
	if (d > 0) {
		/* a response is missing: ask for the rest again (C9-?); the
		 * responder replays from expect */
		rc->rd_wait = true;
		rc->rd_wait_psn = expect;
		dpv_req_retry(qp, expect, true, false);
		return;
	}
	rc->rd_wait = false;
	/* every response carries one MTU but the last of the READ (IBA
	 * 9.7.5.1.5); FIRST/LAST mark the request's range, which may be a part */
	uint32_t left = w->length - w->read_recv;
	uint32_t want = left < mtu ? left : mtu;
	if (pi->payload_len != want) {
		dpv_rc_error(qp, w, IBV_WC_BAD_RESP_ERR);
		return;
	}
	uint32_t old = rc->comp_psn;
	dpv_sge_copy_in(w->sge, w->num_sge, w->read_recv, frame + pi->payload_off, pi->payload_len);
	w->read_recv += pi->payload_len;
	if (w->read_recv >= w->length) {
		rc->comp_psn = psn_add(w->last_psn, 1);
		dpv_comp_wqe_done(qp, w, IBV_WC_SUCCESS);
	} else if (w->read_recv >= w->rd_chunk_end) {
		dpv_req_read_more(qp, w); /* the part asked for is in */
	}
	comp_progress(qp, old);
}

static void atomic_ack(struct dpv_qp *qp, struct dpv_pkt_info *pi)
{
	struct dpv_rc *rc = qp->rc;
	do_ack(qp, psn_add(pi->psn, 0xffffff));
	if (rc->sq_head == rc->sq_cur) {
		dpv_qp_cnt(qp, DPV_CNT_DUP_RESP);
		return;
	}
	struct dpv_send_wqe *w = sq_slot(rc, rc->sq_head);
	if (w->state != WQE_PENDING ||
	    (w->opcode != IBV_WR_ATOMIC_CMP_AND_SWP && w->opcode != IBV_WR_ATOMIC_FETCH_AND_ADD) ||
	    pi->psn != w->first_psn) {
		dpv_qp_cnt(qp, DPV_CNT_DUP_RESP);
		return;
	}
	uint64_t orig = pi->atmack_orig;
	uint32_t old = rc->comp_psn;
	dpv_sge_copy_in(w->sge, w->num_sge, 0, &orig, 8);
	rc->comp_psn = psn_add(w->first_psn, 1);
	dpv_comp_wqe_done(qp, w, IBV_WC_SUCCESS);
	comp_progress(qp, old);
}

static struct dpv_send_wqe *wqe_of_psn(struct dpv_qp *qp, uint32_t psn)
{
	struct dpv_rc *rc = qp->rc;
	for (uint32_t i = rc->sq_head; i != rc->sq_cur; i++) {
		struct dpv_send_wqe *w = sq_slot(rc, i);
		if (psn_cmp(psn, w->first_psn) >= 0 && psn_cmp(psn, w->last_psn) <= 0)
			return w;
	}
	return rc->sq_head != rc->sq_cur ? sq_slot(rc, rc->sq_head) : NULL;
}

static void nak(struct dpv_qp *qp, struct dpv_pkt_info *pi)
{
	struct dpv_rc *rc = qp->rc;
	uint8_t syn = pi->aeth_syndrome;
	/* the NAK PSN acknowledges everything before it (C9-?) */
	do_ack(qp, psn_add(pi->psn, 0xffffff));
	if ((syn & AETH_TYPE_MASK) == AETH_RNR_NAK) {
		dpv_qp_cnt(qp, DPV_CNT_RNR_NAK_RCVD);
		struct dpv_send_wqe *w = wqe_of_psn(qp, pi->psn);
		if (!w)
			return;
		if (qp->attr.rnr_retry != 7) { /* 7: retry forever */
			if (!rc->rnr_left) {
				dpv_qp_cnt(qp, DPV_CNT_RNR_RETRY_EXC);
				dpv_rc_error(qp, w, IBV_WC_RNR_RETRY_EXC_ERR);
				return;
			}
			rc->rnr_left--;
		}
		rc->rnr_psn = pi->psn;
		rc->rnr_deadline = rte_get_tsc_cycles() +
				   (uint64_t)rnr_us[syn & 0x1f] * rte_get_tsc_hz() / 1000000;
		rc->timer_deadline = 0;
		rc->probe_deadline = 0;
		return;
	}
	dpv_qp_cnt(qp, DPV_CNT_NAK_RCVD);
	if (syn == AETH_NAK_PSN_SEQ) {
		dpv_qp_cnt(qp, DPV_CNT_SEQ_NAK_RCVD);
		if (psn_cmp(pi->psn, rc->req_psn) < 0)
			dpv_req_retry(qp, pi->psn, false, false);
		return;
	}
	struct dpv_send_wqe *w = wqe_of_psn(qp, pi->psn);
	if (!w)
		return;
	enum ibv_wc_status st = syn == AETH_NAK_INV_REQ ? IBV_WC_REM_INV_REQ_ERR
			      : syn == AETH_NAK_REM_ACC ? IBV_WC_REM_ACCESS_ERR
							: IBV_WC_REM_OP_ERR;
	dpv_rc_error(qp, w, st);
}

/* A response packet for this QP's requester. Must hold qp->lock. */
void dpv_comp_rx(struct dpv_qp *qp, struct rte_mbuf *m, struct dpv_pkt_info *pi)
{
	const uint8_t *frame = rte_pktmbuf_mtod(m, const uint8_t *);
	uint8_t op = pi->opcode & 0x1f;
	if (qp->state != IBV_QPS_RTS && qp->state != IBV_QPS_SQD)
		return;
	switch (op) {
	case DPV_OPC_ACK:
		if ((pi->aeth_syndrome & AETH_TYPE_MASK) == AETH_ACK) {
			dpv_qp_cnt(qp, DPV_CNT_ACK_RCVD);
			do_ack(qp, pi->psn);
		} else {
			nak(qp, pi);
		}
		break;
	case DPV_OPC_READ_RESP_FIRST:
	case DPV_OPC_READ_RESP_MIDDLE:
	case DPV_OPC_READ_RESP_LAST:
	case DPV_OPC_READ_RESP_ONLY:
		if ((pi->mask & DPV_HDR_AETH) && (pi->aeth_syndrome & AETH_TYPE_MASK) != AETH_ACK) {
			nak(qp, pi);
			break;
		}
		read_resp(qp, pi, frame);
		break;
	case DPV_OPC_ATOMIC_ACK:
		atomic_ack(qp, pi);
		break;
	default:
		break;
	}
	if (qp->state == IBV_QPS_RTS || qp->state == IBV_QPS_SQD)
		dpv_req_run(qp);
}

/* Retransmission and RNR timers. Must hold qp->lock. */
void dpv_comp_timers(struct dpv_qp *qp, uint64_t now)
{
	struct dpv_rc *rc = qp->rc;
	if (qp->state != IBV_QPS_RTS && qp->state != IBV_QPS_SQD)
		return;
	if (rc->neigh_wait) {
		rc->neigh_wait = false;
		dpv_req_run(qp); /* sets neigh_wait again if still unresolved */
	}
	if (qp->type == IBV_QPT_UC)
		return; /* no acknowledgements, no retransmission */
	if (rc->rnr_deadline && now >= rc->rnr_deadline) {
		rc->rnr_deadline = 0;
		dpv_rc_timer_restart(qp);
		dpv_req_retry(qp, rc->rnr_psn, true, false);
		return;
	}
	if (rc->timer_deadline && now >= rc->timer_deadline) {
		if (psn_cmp(rc->req_psn, rc->comp_psn) <= 0 && rc->sq_head == rc->sq_cur) {
			rc->timer_deadline = 0;
			return;
		}
		if (!rc->retry_left) {
			struct dpv_send_wqe *w = rc->sq_head != rc->sq_tail ? sq_slot(rc, rc->sq_head) : NULL;
			dpv_qp_cnt(qp, DPV_CNT_RETRY_EXC);
			if (w)
				dpv_rc_error(qp, w, IBV_WC_RETRY_EXC_ERR);
			return;
		}
		rc->retry_left--;
		rc->rd_wait = false;
		dpv_rc_timer_restart(qp);
		if (dpv_trace_rc())
			fprintf(stderr, "dpverbs: qp %#x: timeout, retry from %#x (req_psn %#x, left %u, head %u cur %u tail %u)\n",
				dqp_ib(qp)->qp_num, rc->comp_psn, rc->req_psn, rc->retry_left, rc->sq_head, rc->sq_cur,
				rc->sq_tail);
		dpv_req_retry(qp, rc->comp_psn, true, false);
		return;
	}
	if (rc->probe_deadline && now >= rc->probe_deadline) {
		if (psn_cmp(rc->req_psn, rc->comp_psn) <= 0 && rc->sq_head == rc->sq_cur) {
			rc->probe_deadline = 0;
			return;
		}
		dpv_rc_probe_restart(qp, false);
		rc->rd_wait = false;
		dpv_req_retry(qp, rc->comp_psn, true, true);
	}
}
