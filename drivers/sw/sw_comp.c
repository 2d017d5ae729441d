/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Completer (RC, XRC initiator): ACK, NAK, RNR NAK, READ responses and
 * ATOMIC acknowledgements complete send WQEs in order (IBA 9.7.5.2, 9.9.1,
 * as rxe_comp.c); an ATOMIC WRITE or FLUSH completes on a zero-length READ
 * RESPONSE ONLY (annex A19). Each response runs through a state machine (enum
 * comp_state); every transition can be traced (log level 8 of pmd.dpv.sw).
 * Errors complete the WQE with the matching status, move the QP to ERR and
 * flush everything else (IBA 10.8.3.2).
 */
#include <errno.h>
#include <string.h>

#include "sw_copy.h"
#include "sw_loc.h"
#include "sw_log.h"
#include "sw_opcode.h"
#include "sw_qp_lock.h"
#include "sw_queue.h"

enum comp_state {
	COMPST_GET_ACK,     /* classify the response */
	COMPST_IMPLIED,     /* its PSN acknowledges every earlier request */
	COMPST_ACK,         /* positive ACK: complete SEND/WRITE WQEs up to its PSN */
	COMPST_READ,        /* READ response: place it, complete or ask for more */
	COMPST_ATOMIC,      /* ATOMIC acknowledge: the original value */
	COMPST_NAK,         /* NAK: go back (PSN sequence error) or fail */
	COMPST_RNR,         /* RNR NAK: wait, then go back */
	COMPST_UPDATE,      /* progress: window, retry counter, timers */
	COMPST_DUPLICATE,   /* a response nobody waits for */
	COMPST_ERROR,       /* complete the WQE with an error; QP to ERR */
	COMPST_DONE,
};

static const char *const comp_state_name[] = {
	[COMPST_GET_ACK] = "GET_ACK", [COMPST_IMPLIED] = "IMPLIED", [COMPST_ACK] = "ACK",
	[COMPST_READ] = "READ", [COMPST_ATOMIC] = "ATOMIC", [COMPST_NAK] = "NAK", [COMPST_RNR] = "RNR",
	[COMPST_UPDATE] = "UPDATE", [COMPST_DUPLICATE] = "DUPLICATE", [COMPST_ERROR] = "ERROR",
	[COMPST_DONE] = "DONE",
};

/* What the state machine carries from one state to the next. */
struct comp_ctx {
	struct dpv_pkt_info *pi;
	const uint8_t *frame;
	enum comp_state after_implied; /* where COMPST_IMPLIED goes next */
	uint32_t old_psn;              /* comp psn before this response */
	uint32_t wqe;                  /* COMPST_ERROR: the WQE that fails */
	enum ibv_wc_status status;
};

/* IBA 9.7.5.1.7 table 45: RNR NAK timer field -> microseconds */
static const uint32_t rnr_us[32] = {
	655360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960, 1280, 1920,
	2560, 3840, 5120, 7680, 10240, 15360, 20480, 30720, 40960, 61440, 81920, 122880,
	163840, 245760, 327680, 491520,
};

static void wqe_done(struct sw_qp *qp, uint32_t i, enum ibv_wc_status st)
{
	struct sw_wqe *s = sw_sq_state(qp, i);
	struct dpv_send_wqe *w = sw_sq_wqe(qp, i);
	struct sw_req *r = &qp->req;
	if (s->rd_counted) {
		s->rd_counted = false;
		r->rd_outstanding--;
	}
	s->state = WQE_DONE;
	if (st != IBV_WC_SUCCESS || (w->flags & DPV_WQE_F_SIGNALED)) {
		struct dpv_cqe e = {.wr_id = w->wr_id, .status = (uint8_t)st, .opcode = (uint8_t)dpv_wc_opcode(w->opcode),
				    .qp_num = qp->qpn, .flags = DPV_CQE_F_SQ, .wqe_index = i};
		if (st == IBV_WC_SUCCESS)
			e.byte_len = sw_is_atomic(w->opcode) ? 8 : w->length; /* FLUSH: its range's length */
		sw_cq_push(qp, qp->scq, &e); /* false: the QP goes to ERR after this response (conn_rx) */
	}
	if (i == r->sq_head)
		r->sq_head++;
	if (r->sq_cur - r->sq_head > r->sq_fetched - r->sq_head) {
		/* a rewound WQE was acknowledged before it was resent: the send
		 * cursor and the next PSN move past it (never reuse its PSNs) */
		r->sq_cur = r->sq_head;
	}
	if (st == IBV_WC_SUCCESS && s->npkts && dpv_psn_cmp(dpv_psn_add(s->last_psn, 1), r->psn) > 0)
		r->psn = dpv_psn_add(s->last_psn, 1);
	if (r->sqd_pending && r->sq_head == r->sq_cur) {
		r->sqd_pending = false;
		sw_qp_event(qp, IBV_EVENT_SQ_DRAINED);
	}
}

void sw_comp_local(struct sw_qp *qp)
{
	struct sw_req *r = &qp->req;
	while (r->sq_head != r->sq_fetched) {
		struct sw_wqe *s = sw_sq_state(qp, r->sq_head);
		if (!s->local || s->state != WQE_PENDING || s->local_st)
			break; /* a refused one: the requester fails it (local_failed) */
		wqe_done(qp, r->sq_head, IBV_WC_SUCCESS);
	}
}

void sw_comp_wqe_done(struct sw_qp *qp, uint32_t i, enum ibv_wc_status st)
{
	wqe_done(qp, i, st);
	if (st == IBV_WC_SUCCESS)
		sw_comp_local(qp); /* window operations executed behind it */
}

void sw_comp_flush_sq(struct sw_qp *qp)
{
	sw_req_fetch(qp);
	while (qp->req.sq_head != qp->req.sq_fetched)
		sw_comp_wqe_done(qp, qp->req.sq_head, IBV_WC_WR_FLUSH_ERR);
	qp->req.sq_cur = qp->req.sq_head;
	qp->comp.timer_deadline = 0;
	qp->comp.rnr_deadline = 0;
	qp->comp.probe_deadline = 0;
}

void sw_comp_error(struct sw_qp *qp, uint32_t i, enum ibv_wc_status st)
{
	/* The QP is in ERR before its error CQE can be seen: a consumer that
	 * polls the CQE and then queries the QP sees ERR, as on a ConnectX
	 * (the pending ACK goes out first, as in sw_qp_to_error). */
	sw_resp_flush_ack(qp);
	sw_qp_set_state(qp, IBV_QPS_ERR);
	/* WQEs before i were acknowledged or are flushed (in order: i is the
	 * oldest outstanding WQE whenever an error is detected) */
	while (qp->req.sq_head != qp->req.sq_fetched && qp->req.sq_head != i)
		sw_comp_wqe_done(qp, qp->req.sq_head, IBV_WC_WR_FLUSH_ERR);
	if (qp->req.sq_head != qp->req.sq_fetched)
		sw_comp_wqe_done(qp, i, st);
	sw_qp_to_error(qp); /* flushes the rest and the receive queue (IBA 10.3.1) */
}

/* The oldest outstanding PSN moved from old: more window (additive
 * increase), fresh retry and RNR retry counters (they count the attempts
 * of the message in flight, not of the QP's life: IBA 9.7.5.2.8, as rxe
 * resets both), timers restarted or stopped, an RNR wait for a PSN now
 * acknowledged ended (sw_req_run holds back all sending while it lasts). */
static void comp_progress(struct sw_qp *qp, uint32_t old)
{
	struct sw_comp *c = &qp->comp;
	c->retry_left = qp->attr.retry_cnt;
	c->rnr_left = qp->attr.rnr_retry;
	uint32_t acked = (uint32_t)RTE_MAX(dpv_psn_cmp(c->psn, old), 0);
	if (c->rnr_deadline && dpv_psn_cmp(c->psn, c->rnr_psn) > 0)
		c->rnr_deadline = 0; /* the RNR NAK'd PSN got through (an earlier copy): no wait */
	qp->req.cwnd = RTE_MIN(qp->req.cwnd + acked / 8 + 1, (uint32_t)SW_RC_WINDOW);
	if (dpv_psn_cmp(qp->req.psn, c->psn) > 0) {
		sw_timer_restart(qp);
		sw_timer_probe_restart(qp, true);
	} else {
		c->timer_deadline = 0;
		c->probe_deadline = 0;
	}
}

/* Acknowledge everything up to psn. An implied NAK (IBA 9.7.5.2.2: a READ
 * or atomic response is missing although a later request was acknowledged)
 * makes the requester go back to it. */
static void do_ack(struct sw_qp *qp, uint32_t psn)
{
	struct sw_req *r = &qp->req;
	bool moved = false;
	uint32_t old = qp->comp.psn;
	/* WQEs rewound by a retry (SENDING) were all sent once: an ACK past
	 * their last PSN completes them too; POSTED ones were never sent */
	while (r->sq_head != r->sq_fetched) {
		struct sw_wqe *s = sw_sq_state(qp, r->sq_head);
		uint8_t op = sw_sq_wqe(qp, r->sq_head)->opcode;
		if ((s->state != WQE_PENDING && s->state != WQE_SENDING) || s->local)
			break; /* a window operation completes through sw_comp_local */
		if (sw_is_rd_atomic(op)) {
			if (dpv_psn_cmp(psn, s->last_psn) >= 0) {
				sw_req_retry(qp, dpv_psn_add(s->first_psn, s->read_recv / sw_qp_mtu(qp)), false, false);
				return;
			}
			break;
		}
		if (dpv_psn_cmp(s->last_psn, psn) > 0)
			break;
		sw_comp_wqe_done(qp, r->sq_head, IBV_WC_SUCCESS);
		moved = true;
	}
	if (dpv_psn_cmp(dpv_psn_add(psn, 1), qp->comp.psn) > 0) {
		qp->comp.psn = dpv_psn_add(psn, 1);
		moved = true;
	}
	if (moved)
		comp_progress(qp, old);
}

static bool aeth_is_nak(const struct dpv_pkt_info *pi)
{
	return (pi->mask & DPV_HDR_AETH) && (pi->aeth_syndrome & DPV_AETH_TYPE_MASK) != DPV_AETH_ACK;
}

static enum comp_state get_ack(struct sw_qp *qp, struct comp_ctx *x)
{
	struct dpv_pkt_info *pi = x->pi;
	enum ibv_qp_state st = sw_qp_state(qp);
	if (st != IBV_QPS_RTS && st != IBV_QPS_SQD)
		return COMPST_DONE;
	x->old_psn = qp->comp.psn;
	switch (pi->opcode & DPV_OPC_OP_MASK) {
	case DPV_OPC_ACK:
		if (!aeth_is_nak(pi)) {
			sw_cnt(qp, DPV_CNT_ACK_RCVD);
			return COMPST_ACK;
		}
		x->after_implied = (pi->aeth_syndrome & DPV_AETH_TYPE_MASK) == DPV_AETH_RNR_NAK ? COMPST_RNR : COMPST_NAK;
		return COMPST_IMPLIED;
	case DPV_OPC_READ_RESP_FIRST:
	case DPV_OPC_READ_RESP_MIDDLE:
	case DPV_OPC_READ_RESP_LAST:
	case DPV_OPC_READ_RESP_ONLY:
		if (aeth_is_nak(pi)) {
			x->after_implied = (pi->aeth_syndrome & DPV_AETH_TYPE_MASK) == DPV_AETH_RNR_NAK ? COMPST_RNR
												 : COMPST_NAK;
			return COMPST_IMPLIED;
		}
		if (qp->req.sq_head == qp->req.sq_cur)
			return COMPST_DUPLICATE;
		x->after_implied = COMPST_READ;
		/* only FIRST and ONLY carry an AETH (IBA 9.7.5.1.4) */
		return (pi->mask & DPV_HDR_AETH) ? COMPST_IMPLIED : COMPST_READ;
	case DPV_OPC_ATOMIC_ACK:
		x->after_implied = COMPST_ATOMIC;
		return COMPST_IMPLIED;
	default:
		return COMPST_DONE;
	}
}

/* A response with PSN p implicitly acknowledges every request before p
 * (IBA 9.7.5.2.3); if that makes the requester go back for a missing READ
 * or atomic response, the response itself is still looked at (a rewound
 * WQE no longer matches it). */
static enum comp_state implied(struct sw_qp *qp, struct comp_ctx *x)
{
	do_ack(qp, dpv_psn_prev(x->pi->psn));
	return x->after_implied;
}

static enum comp_state ack(struct sw_qp *qp, struct comp_ctx *x)
{
	do_ack(qp, x->pi->psn);
	return COMPST_DONE;
}

/* The response of an ATOMIC WRITE or FLUSH (annex A19, as rxe): an RDMA
 * READ RESPONSE ONLY without data at the request's PSN; anything else at
 * that PSN is a bad response (IBV_WC_BAD_RESP_ERR). */
static enum comp_state zero_resp(struct sw_qp *qp, struct comp_ctx *x, uint32_t i, struct sw_wqe *s)
{
	struct dpv_pkt_info *pi = x->pi;
	if (pi->psn != s->first_psn)
		return COMPST_DUPLICATE;
	if ((pi->opcode & DPV_OPC_OP_MASK) != DPV_OPC_READ_RESP_ONLY || pi->payload_len) {
		x->wqe = i;
		x->status = IBV_WC_BAD_RESP_ERR;
		return COMPST_ERROR;
	}
	qp->comp.psn = dpv_psn_add(s->first_psn, 1);
	sw_comp_wqe_done(qp, i, IBV_WC_SUCCESS);
	return COMPST_UPDATE;
}

static enum comp_state read_resp(struct sw_qp *qp, struct comp_ctx *x)
{
	struct dpv_pkt_info *pi = x->pi;
	struct sw_comp *c = &qp->comp;
	uint32_t mtu = sw_qp_mtu(qp);
	uint32_t i = qp->req.sq_head;
	if (i == qp->req.sq_cur)
		return COMPST_DUPLICATE;
	struct sw_wqe *s = sw_sq_state(qp, i);
	struct dpv_send_wqe *w = sw_sq_wqe(qp, i);
	if (s->state == WQE_PENDING && sw_is_zero_resp(w->opcode))
		return zero_resp(qp, x, i, s);
	if (s->state != WQE_PENDING || w->opcode != IBV_WR_RDMA_READ)
		return COMPST_DUPLICATE;
	uint32_t expect = dpv_psn_add(s->first_psn, s->read_recv / mtu);
	int d = dpv_psn_cmp(pi->psn, expect);
	if (d < 0 || dpv_psn_cmp(pi->psn, s->last_psn) > 0)
		return COMPST_DUPLICATE;
	/* responses of an older burst, still arriving after we asked again,
	 * must not trigger yet another replay */
	if (c->rd_wait && (d > 0 || pi->psn != c->rd_wait_psn))
		return COMPST_DUPLICATE;
	if (d > 0) {
		/* a response is missing (IBA 9.7.5.2.6): ask for the rest again;
		 * the responder replays from expect */
		c->rd_wait = true;
		c->rd_wait_psn = expect;
		sw_req_retry(qp, expect, true, false);
		return COMPST_DONE;
	}
	c->rd_wait = false;
	/* every response carries one MTU but the last of the READ (IBA
	 * 9.7.5.1.4); FIRST/LAST mark the request's range, which may be a part */
	uint32_t want = RTE_MIN(w->length - s->read_recv, mtu);
	if (pi->payload_len != want) {
		x->wqe = i;
		x->status = IBV_WC_BAD_RESP_ERR;
		return COMPST_ERROR;
	}
	const struct dpv_sge *sge;
	const uint8_t *inl;
	uint32_t inl_len;
	uint32_t nsge = sw_wqe_payload(qp, w, &sge, &inl, &inl_len);
	if (sw_sge_copy_in(qp->pd, sge, nsge, s->read_recv, x->frame + pi->payload_off, pi->payload_len)) {
		x->wqe = i; /* the buffer was unmapped under its MR */
		x->status = IBV_WC_LOC_PROT_ERR;
		return COMPST_ERROR;
	}
	s->read_recv += pi->payload_len;
	if (s->read_recv >= w->length) {
		c->psn = dpv_psn_add(s->last_psn, 1);
		sw_comp_wqe_done(qp, i, IBV_WC_SUCCESS);
	} else if (s->read_recv >= s->rd_chunk_end) {
		sw_req_read_more(qp, s, w); /* the part asked for is in */
	}
	return COMPST_UPDATE;
}

static enum comp_state atomic_ack(struct sw_qp *qp, struct comp_ctx *x)
{
	uint32_t i = qp->req.sq_head;
	if (i == qp->req.sq_cur)
		return COMPST_DUPLICATE;
	struct sw_wqe *s = sw_sq_state(qp, i);
	struct dpv_send_wqe *w = sw_sq_wqe(qp, i);
	if (s->state != WQE_PENDING || !sw_is_atomic(w->opcode) || x->pi->psn != s->first_psn)
		return COMPST_DUPLICATE;
	uint64_t orig = x->pi->atmack_orig;
	const struct dpv_sge *sge;
	const uint8_t *inl;
	uint32_t inl_len;
	uint32_t nsge = sw_wqe_payload(qp, w, &sge, &inl, &inl_len);
	if (sw_sge_copy_in(qp->pd, sge, nsge, 0, &orig, sizeof(orig))) {
		x->wqe = i; /* the buffer was unmapped under its MR */
		x->status = IBV_WC_LOC_PROT_ERR;
		return COMPST_ERROR;
	}
	qp->comp.psn = dpv_psn_add(s->first_psn, 1);
	sw_comp_wqe_done(qp, i, IBV_WC_SUCCESS);
	return COMPST_UPDATE;
}

/* The WQE a NAK names (the one holding its PSN), else the oldest. */
static bool wqe_of_psn(struct sw_qp *qp, uint32_t psn, uint32_t *out)
{
	for (uint32_t i = qp->req.sq_head; i != qp->req.sq_cur; i++) {
		struct sw_wqe *s = sw_sq_state(qp, i);
		if (dpv_psn_cmp(psn, s->first_psn) >= 0 && dpv_psn_cmp(psn, s->last_psn) <= 0) {
			*out = i;
			return true;
		}
	}
	*out = qp->req.sq_head;
	return qp->req.sq_head != qp->req.sq_cur;
}

/* IBA 9.7.5.2.8: RNR NAK: wait the time it names (table 45), then resend
 * from its PSN; rnr_retry 7 retries forever. */
static enum comp_state rnr(struct sw_qp *qp, struct comp_ctx *x)
{
	struct sw_comp *c = &qp->comp;
	uint32_t i;
	sw_cnt(qp, DPV_CNT_RNR_NAK_RCVD);
	if (!wqe_of_psn(qp, x->pi->psn, &i)) {
		SW_DBG_QP(qp, "RNR NAK psn %#x: no outstanding WQE (head %u cur %u)", x->pi->psn, qp->req.sq_head,
			  qp->req.sq_cur);
		return COMPST_DONE;
	}
	if (qp->attr.rnr_retry != 7) {
		if (!c->rnr_left) {
			sw_cnt(qp, DPV_CNT_RNR_RETRY_EXC);
			x->wqe = i;
			x->status = IBV_WC_RNR_RETRY_EXC_ERR;
			return COMPST_ERROR;
		}
		c->rnr_left--;
	}
	c->rnr_psn = x->pi->psn;
	c->rnr_deadline = rte_get_tsc_cycles() +
			  (uint64_t)rnr_us[x->pi->aeth_syndrome & 0x1f] * rte_get_tsc_hz() / 1000000;
	SW_DBG_QP(qp, "RNR NAK psn %#x: resend in %u us (%u RNR retries left)", c->rnr_psn,
		  rnr_us[x->pi->aeth_syndrome & 0x1f], c->rnr_left);
	c->timer_deadline = 0;
	c->probe_deadline = 0;
	return COMPST_DONE;
}

/* IBA 9.7.5.2.4/5: a PSN sequence error NAK makes the requester resend from
 * its PSN; the other NAK codes are fatal for the WQE they name. */
static enum comp_state nak(struct sw_qp *qp, struct comp_ctx *x)
{
	uint8_t syn = x->pi->aeth_syndrome;
	sw_cnt(qp, DPV_CNT_NAK_RCVD);
	if (syn == DPV_AETH_NAK_PSN_SEQ) {
		sw_cnt(qp, DPV_CNT_SEQ_NAK_RCVD);
		if (dpv_psn_cmp(x->pi->psn, qp->req.psn) < 0)
			sw_req_retry(qp, x->pi->psn, false, false);
		return COMPST_DONE;
	}
	if (!wqe_of_psn(qp, x->pi->psn, &x->wqe))
		return COMPST_DONE;
	x->status = syn == DPV_AETH_NAK_INV_REQ ? IBV_WC_REM_INV_REQ_ERR
		  : syn == DPV_AETH_NAK_REM_ACC ? IBV_WC_REM_ACCESS_ERR : IBV_WC_REM_OP_ERR;
	return COMPST_ERROR;
}

static enum comp_state comp_step(struct sw_qp *qp, enum comp_state st, struct comp_ctx *x)
{
	switch (st) {
	case COMPST_GET_ACK:
		return get_ack(qp, x);
	case COMPST_IMPLIED:
		return implied(qp, x);
	case COMPST_ACK:
		return ack(qp, x);
	case COMPST_READ:
		return read_resp(qp, x);
	case COMPST_ATOMIC:
		return atomic_ack(qp, x);
	case COMPST_NAK:
		return nak(qp, x);
	case COMPST_RNR:
		return rnr(qp, x);
	case COMPST_UPDATE:
		comp_progress(qp, x->old_psn);
		return COMPST_DONE;
	case COMPST_DUPLICATE:
		sw_cnt(qp, DPV_CNT_DUP_RESP);
		return COMPST_DONE;
	case COMPST_ERROR:
		sw_comp_error(qp, x->wqe, x->status);
		return COMPST_DONE;
	default:
		return COMPST_DONE;
	}
}

/* A response packet for this QP's requester. Must hold the QP lock. */
void sw_comp_rx(struct sw_qp *qp, struct rte_mbuf *m, struct dpv_pkt_info *pi)
{
	struct comp_ctx x = {.pi = pi, .frame = rte_pktmbuf_mtod(m, const uint8_t *)};
	enum comp_state st = COMPST_GET_ACK;
	if (unlikely(qp->resp.rndv.phase >= SW_RNDV_READ) && sw_tm_rndv_rx(qp, m, pi))
		st = COMPST_DONE; /* a tag matching rendezvous' READ or FIN (sw_tm_rndv.c) */
	while (st != COMPST_DONE) {
		enum comp_state next = comp_step(qp, st, &x);
		SW_DBG_QP(qp, "comp psn %#x: %s -> %s", pi->psn, comp_state_name[st], comp_state_name[next]);
		st = next;
	}
	enum ibv_qp_state s = sw_qp_state(qp);
	if (s == IBV_QPS_RTS || s == IBV_QPS_SQD)
		sw_req_run(qp);
}
