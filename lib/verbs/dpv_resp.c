/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * RC/UC responder (IBA 9.7.4, 9.7.5): PSN checks, duplicate handling,
 * placement of SEND and RDMA WRITE payloads, RDMA READ responses, atomics,
 * receive completions and ACK/NAK generation with coalescing.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <endian.h>

#include <rte_cycles.h>

#include "dpv_rc.h"

/* Where receive completions of this QP go: an XRC target's go to the CQ of
 * the XRC SRQ that took the message. */
static struct dpv_cq *resp_cq(struct dpv_qp *qp)
{
	if (qp->type == IBV_QPT_XRC_RECV)
		return qp->rc->xsrq ? qp->rc->xsrq->cq : NULL;
	return qp->rcq;
}

static void xmit_ack(struct dpv_qp *qp, uint8_t syndrome, uint32_t psn, uint32_t msn)
{
	struct dpv_pkt_build b;
	dpv_rc_build_init(qp, &b, dpv_qp_tr(qp) | DPV_OPC_ACK, psn);
	b.aeth_syndrome = syndrome;
	b.aeth_msn = msn;
	dpv_rc_xmit(qp, &b, NULL, 0, 0, 0, NULL);
	if ((syndrome & AETH_TYPE_MASK) == AETH_ACK)
		dpv_qp_cnt(qp, DPV_CNT_ACK_SENT);
}

/* Send one packet of a queued READ response; returns true when it is done. */
static bool xmit_read(struct dpv_qp *qp, struct dpv_resp_ent *e)
{
	uint32_t mtu = dpv_qp_mtu(qp);
	uint32_t n = e->len ? (e->len + mtu - 1) / mtu : 1;
	uint32_t i = e->sent / mtu;
	uint32_t chunk = e->len - e->sent;
	if (chunk > mtu)
		chunk = mtu;
	uint8_t op = n == 1 ? DPV_OPC_READ_RESP_ONLY : i == 0 ? DPV_OPC_READ_RESP_FIRST
		     : i == n - 1 ? DPV_OPC_READ_RESP_LAST : DPV_OPC_READ_RESP_MIDDLE;
	struct dpv_pkt_build b;
	dpv_rc_build_init(qp, &b, dpv_qp_tr(qp) | op, psn_add(e->psn, i));
	b.aeth_syndrome = DPV_AETH_CREDIT_INVALID;
	b.aeth_msn = e->msn;
	dpv_rc_xmit(qp, &b, NULL, 0, 0, chunk, chunk ? e->src + e->sent : NULL);
	e->sent += chunk;
	return e->sent >= e->len;
}

bool dpv_resp_pump(struct dpv_qp *qp, unsigned int budget)
{
	struct dpv_rc *rc = qp->rc;
	while (budget && rc->respq_head != rc->respq_tail) {
		struct dpv_resp_ent *e = &rc->respq[rc->respq_head % DPV_RESP_Q];
		bool done = true;
		if (e->kind == RESP_READ) {
			done = xmit_read(qp, e);
		} else if (e->kind == RESP_ATOMIC) {
			struct dpv_pkt_build b;
			dpv_rc_build_init(qp, &b, dpv_qp_tr(qp) | DPV_OPC_ATOMIC_ACK, e->psn);
			b.aeth_syndrome = DPV_AETH_CREDIT_INVALID;
			b.aeth_msn = e->msn;
			b.atmack_orig = e->orig;
			dpv_rc_xmit(qp, &b, NULL, 0, 0, 0, NULL);
		} else {
			xmit_ack(qp, e->syndrome, e->psn, e->msn);
		}
		budget--;
		if (done)
			rc->respq_head++;
	}
	return rc->respq_head != rc->respq_tail;
}

/* Queue a response behind the ones not sent yet (or send it at once when
 * none wait). A full queue is sent out first. */
static void resp_enqueue(struct dpv_qp *qp, const struct dpv_resp_ent *e)
{
	struct dpv_rc *rc = qp->rc;
	if (e->kind == RESP_ACK && (e->syndrome & AETH_TYPE_MASK) == AETH_ACK &&
	    rc->respq_head != rc->respq_tail) {
		/* coalesce with an ACK already waiting at the tail */
		struct dpv_resp_ent *t = &rc->respq[(rc->respq_tail - 1) % DPV_RESP_Q];
		if (t->kind == RESP_ACK && (t->syndrome & AETH_TYPE_MASK) == AETH_ACK &&
		    rc->respq_tail - 1 != rc->respq_head) {
			t->psn = e->psn;
			t->msn = e->msn;
			dpv_qp_cnt(qp, DPV_CNT_ACK_DEFERRED);
			return;
		}
	}
	if (rc->respq_tail - rc->respq_head >= DPV_RESP_Q)
		while (dpv_resp_pump(qp, UINT32_MAX))
			;
	rc->respq[rc->respq_tail++ % DPV_RESP_Q] = *e;
	dpv_resp_pump(qp, DPV_RESP_BURST);
}

static void send_ack(struct dpv_qp *qp, uint8_t syndrome, uint32_t psn)
{
	struct dpv_resp_ent e = {.kind = RESP_ACK, .syndrome = syndrome, .psn = psn, .msn = qp->rc->msn};
	resp_enqueue(qp, &e);
}

/* Flush a coalesced ACK (end of an RX burst). Must hold qp->lock. */
void dpv_resp_flush_ack(struct dpv_qp *qp)
{
	struct dpv_rc *rc = qp->rc;
	if (!rc || !rc->ack_pending)
		return;
	rc->ack_pending = false;
	send_ack(qp, DPV_AETH_CREDIT_INVALID, rc->ack_psn);
}

static void queue_ack(struct dpv_qp *qp, uint32_t psn)
{
	struct dpv_rc *rc = qp->rc;
	if (rc->ack_pending)
		dpv_qp_cnt(qp, DPV_CNT_ACK_DEFERRED);
	rc->ack_pending = true;
	rc->ack_psn = psn;
}

static void send_nak(struct dpv_qp *qp, uint8_t syndrome, uint32_t psn)
{
	dpv_resp_flush_ack(qp);
	send_ack(qp, syndrome, psn);
	if (syndrome == AETH_NAK_PSN_SEQ)
		dpv_qp_cnt(qp, DPV_CNT_SEQ_NAK_SENT);
	else if ((syndrome & AETH_TYPE_MASK) == AETH_RNR_NAK)
		dpv_qp_cnt(qp, DPV_CNT_RNR_NAK_SENT);
	else
		dpv_qp_cnt(qp, DPV_CNT_NAK_SENT);
}

/* Responder-side fatal error: complete the receive WQE in progress with st
 * (if any), NAK, and move the QP to the error state. */
static void resp_error(struct dpv_qp *qp, uint8_t nak_syn, uint32_t psn, enum ibv_wc_status st)
{
	struct dpv_rc *rc = qp->rc;
	if (qp->type != IBV_QPT_UC) {
		send_nak(qp, nak_syn, psn);
		while (dpv_resp_pump(qp, UINT32_MAX))
			; /* the NAK and what is queued before it go out before ERR */
	}
	if (rc->have_rwqe) {
		struct ibv_wc wc;
		memset(&wc, 0, sizeof(wc));
		wc.wr_id = rc->rwqe_id;
		wc.status = st;
		wc.opcode = IBV_WC_RECV;
		wc.qp_num = dqp_ib(qp)->qp_num;
		rc->have_rwqe = false;
		dpv_cq_push(resp_cq(qp), &wc, false);
	}
	rc->in_msg = 0;
	if (qp->type == IBV_QPT_UC) {
		rc->uc_drop = true;
		return;
	}
	qp->state = IBV_QPS_ERR;
	dqp_ib(qp)->state = IBV_QPS_ERR;
	qp->attr.qp_state = IBV_QPS_ERR;
	dpv_rc_flush_sq(qp);
	dpv_qp_to_error(qp);
	struct ibv_async_event ev = {.event_type = IBV_EVENT_QP_FATAL};
	ev.element.qp = dqp_ib(qp);
	if (st == IBV_WC_LOC_LEN_ERR || st == IBV_WC_LOC_PROT_ERR)
		dpv_async_event(qp->ctx, &ev);
	if (qp->srq || qp->type == IBV_QPT_XRC_RECV) {
		struct ibv_async_event lw = {.event_type = IBV_EVENT_QP_LAST_WQE_REACHED};
		lw.element.qp = dqp_ib(qp);
		dpv_async_event(qp->ctx, &lw);
	}
}

/* Remote access check (IBA 10.6.3.2 / C9-?): rkey, PD, access right, bounds.
 * An XRC target has no PD: the SRQ named by the request gives it (IBA 9.8.1). */
static uint8_t *rkey_check(struct dpv_qp *qp, uint32_t rkey, uint64_t va, uint64_t len, int access)
{
	struct dpv_mr *mr = dpv_mr_lookup(rkey);
	struct dpv_pd *pd = qp->type == IBV_QPT_XRC_RECV ? (qp->rc->xsrq ? qp->rc->xsrq->pd : NULL) : qp->pd;
	if (!mr || !pd || mr->pd != pd || (mr->access & access) != access)
		return NULL;
	if (!(qp->attr.qp_access_flags & access) && access != IBV_ACCESS_LOCAL_WRITE)
		return NULL;
	if (va < mr->iova || va + len > mr->iova + mr->length || va + len < va)
		return NULL;
	return mr->addr + (va - mr->iova);
}

static void save_res(struct dpv_qp *qp, bool atomic, uint32_t first, uint32_t last, uint64_t orig)
{
	struct dpv_rc *rc = qp->rc;
	struct dpv_rd_res *r = &rc->res[rc->res_next++ % DPV_MAX_RD_ATOMIC];
	r->valid = true;
	r->atomic = atomic;
	r->first_psn = first;
	r->last_psn = last;
	r->orig = orig;
}

/* Send READ responses for (va,len) starting at psn. */
/* req_psn: first PSN of the READ request this answers (a replay answers a
 * duplicate that may ask for the rest of it only). */
static void read_reply(struct dpv_qp *qp, const uint8_t *src, uint32_t len, uint32_t psn, uint32_t req_psn)
{
	struct dpv_rc *rc = qp->rc;
	/* IBA 9.9.2.2: a duplicate READ restarts its responses: those of the
	 * same READ still queued are superseded (sending them would only push
	 * the ones the requester waits for further back) */
	uint32_t w = rc->respq_head;
	for (uint32_t r = rc->respq_head; r != rc->respq_tail; r++) {
		struct dpv_resp_ent *e = &rc->respq[r % DPV_RESP_Q];
		if (e->kind == RESP_READ && e->req_psn == req_psn)
			continue;
		if (w != r)
			rc->respq[w % DPV_RESP_Q] = *e;
		w++;
	}
	rc->respq_tail = w;
	struct dpv_resp_ent e = {.kind = RESP_READ, .psn = psn, .msn = rc->msn, .src = src, .len = len,
				 .req_psn = req_psn};
	resp_enqueue(qp, &e);
}

static void atomic_reply(struct dpv_qp *qp, uint32_t psn, uint64_t orig)
{
	struct dpv_resp_ent e = {.kind = RESP_ATOMIC, .psn = psn, .msn = qp->rc->msn, .orig = orig};
	resp_enqueue(qp, &e);
}

/* Duplicate request (psn < epsn): IBA 9.9.2.1. */
static void duplicate(struct dpv_qp *qp, struct dpv_pkt_info *pi)
{
	struct dpv_rc *rc = qp->rc;
	uint8_t op = pi->opcode & 0x1f;
	dpv_qp_cnt(qp, DPV_CNT_DUP_REQ);
	if (op == DPV_OPC_READ_REQUEST) {
		/* replay: responses for the (possibly shortened) range asked */
		for (unsigned int i = 0; i < DPV_MAX_RD_ATOMIC; i++) {
			struct dpv_rd_res *r = &rc->res[i];
			if (r->valid && !r->atomic && psn_cmp(pi->psn, r->first_psn) >= 0 &&
			    psn_cmp(pi->psn, r->last_psn) <= 0) {
				uint8_t *src = rkey_check(qp, pi->reth_rkey, pi->reth_va, pi->reth_len,
							  IBV_ACCESS_REMOTE_READ);
				if (src)
					read_reply(qp, src, pi->reth_len, pi->psn, r->first_psn);
				return;
			}
		}
		return;
	}
	if (op == DPV_OPC_CMP_SWAP || op == DPV_OPC_FETCH_ADD) {
		/* answered from the saved result, never executed twice */
		for (unsigned int i = 0; i < DPV_MAX_RD_ATOMIC; i++) {
			struct dpv_rd_res *r = &rc->res[i];
			if (r->valid && r->atomic && r->first_psn == pi->psn) {
				atomic_reply(qp, pi->psn, r->orig);
				return;
			}
		}
		if (dpv_trace_rc())
			fprintf(stderr, "dpverbs: resp qp %#x: duplicate atomic psn %#x: no saved result (epsn %#x)\n",
				dqp_ib(qp)->qp_num, pi->psn, rc->epsn);
		return;
	}
	/* SEND/WRITE: re-acknowledge what we have (IBA 9.9.2.1), but only for
	 * duplicates that asked for an ACK, so that a resent window does not
	 * bring back one ACK per packet */
	if (qp->type != IBV_QPT_UC && pi->ackreq) {
		dpv_resp_flush_ack(qp);
		send_ack(qp, DPV_AETH_CREDIT_INVALID, psn_add(rc->epsn, 0xffffff));
	}
}

static bool take_rwqe(struct dpv_qp *qp)
{
	struct dpv_rc *rc = qp->rc;
	if (rc->have_rwqe)
		return true;
	if (qp->type == IBV_QPT_XRC_RECV) {
		if (!rc->xsrq || !dpv_srq_pop(rc->xsrq, &rc->rwqe_id, rc->rwqe_sge, &rc->rwqe_nsge))
			return false;
		rc->rwqe_pd = rc->xsrq->pd;
	} else if (!dpv_qp_pop_recv(qp, &rc->rwqe_id, rc->rwqe_sge, &rc->rwqe_nsge, &rc->rwqe_pd)) {
		return false;
	}
	rc->have_rwqe = true;
	rc->recv_off = 0;
	return true;
}

static void recv_complete(struct dpv_qp *qp, struct dpv_pkt_info *pi, enum ibv_wc_opcode opc, uint32_t len)
{
	struct dpv_rc *rc = qp->rc;
	struct ibv_wc wc;
	memset(&wc, 0, sizeof(wc));
	wc.wr_id = rc->rwqe_id;
	wc.status = IBV_WC_SUCCESS;
	wc.opcode = opc;
	wc.qp_num = dqp_ib(qp)->qp_num;
	wc.src_qp = qp->attr.dest_qp_num;
	wc.byte_len = len;
	if (pi->mask & DPV_HDR_IMMDT) {
		wc.wc_flags |= IBV_WC_WITH_IMM;
		wc.imm_data = htobe32(pi->immdt);
	}
	if (pi->mask & DPV_HDR_IETH) {
		wc.wc_flags |= IBV_WC_WITH_INV;
		wc.invalidated_rkey = pi->ieth_rkey;
	}
	rc->have_rwqe = false;
	dpv_cq_push(resp_cq(qp), &wc, pi->se);
}

/* Must hold qp->lock. The packet's PSN is the expected one (or UC). */
static void execute(struct dpv_qp *qp, struct dpv_pkt_info *pi, const uint8_t *frame)
{
	struct dpv_rc *rc = qp->rc;
	uint8_t op = pi->opcode & 0x1f;
	uint32_t mtu = dpv_qp_mtu(qp);
	bool rc_qp = qp->type != IBV_QPT_UC;
	uint32_t m = pi->mask;
	const uint8_t *pay = frame + pi->payload_off;
	uint32_t plen = pi->payload_len;

	/* opcode sequence and length rules (IBA 9.7.4.1.4 / C9-?) */
	bool starts = m & DPV_OP_START, ends = m & DPV_OP_END;
	uint8_t kind = (m & DPV_OP_SEND) ? 1 : (m & DPV_OP_WRITE) ? 2 : 0;
	if ((rc->in_msg && (starts || kind != rc->in_msg)) || (!rc->in_msg && !starts && kind)) {
		resp_error(qp, AETH_NAK_INV_REQ, pi->psn, IBV_WC_REM_INV_REQ_ERR);
		return;
	}
	if (kind && ((!ends && plen != mtu) || plen > mtu)) {
		resp_error(qp, AETH_NAK_INV_REQ, pi->psn, IBV_WC_REM_INV_REQ_ERR);
		return;
	}
	if (qp->type == IBV_QPT_XRC_RECV && (starts || !kind)) {
		/* IBA 9.8.1 (XRC): the XRCETH names an XRC SRQ of our domain */
		struct dpv_srq *x = dpv_srq_lookup(pi->xrc_srqn);
		if (!x || x->type != IBV_SRQT_XRC || x->xrcd->dom != qp->xrcd->dom) {
			rc->xsrq = NULL;
			resp_error(qp, AETH_NAK_INV_REQ, pi->psn, IBV_WC_REM_INV_REQ_ERR);
			return;
		}
		rc->xsrq = x;
	}

	if (kind == 1) { /* SEND */
		if (starts && !take_rwqe(qp)) {
			if (rc_qp)
				send_nak(qp, AETH_RNR_NAK | (qp->attr.min_rnr_timer & 0x1f), pi->psn);
			else
				rc->uc_drop = true;
			return; /* epsn unchanged: the requester retries */
		}
		if (rc->recv_off + plen > dpv_sge_total(rc->rwqe_sge, rc->rwqe_nsge)) {
			resp_error(qp, AETH_NAK_INV_REQ, pi->psn, IBV_WC_LOC_LEN_ERR);
			return;
		}
		if (starts && dpv_sge_check(rc->rwqe_pd, rc->rwqe_sge, rc->rwqe_nsge,
					    IBV_ACCESS_LOCAL_WRITE) != IBV_WC_SUCCESS) {
			resp_error(qp, AETH_NAK_REM_OP, pi->psn, IBV_WC_LOC_PROT_ERR);
			return;
		}
		dpv_sge_copy_in(rc->rwqe_sge, rc->rwqe_nsge, rc->recv_off, pay, plen);
		rc->recv_off += plen;
		rc->in_msg = ends ? 0 : 1;
		if (ends) {
			rc->msn = psn_add(rc->msn, 1);
			recv_complete(qp, pi, IBV_WC_RECV, rc->recv_off);
		}
	} else if (kind == 2) { /* RDMA WRITE */
		if (starts) {
			if (pi->reth_len > DPV_MAX_MSG_SZ) {
				resp_error(qp, AETH_NAK_INV_REQ, pi->psn, IBV_WC_REM_INV_REQ_ERR);
				return;
			}
			uint8_t *dst = pi->reth_len ? rkey_check(qp, pi->reth_rkey, pi->reth_va, pi->reth_len,
								 IBV_ACCESS_REMOTE_WRITE)
						    : (uint8_t *)1;
			if (!dst) {
				resp_error(qp, AETH_NAK_REM_ACC, pi->psn, IBV_WC_REM_ACCESS_ERR);
				return;
			}
			rc->wr_addr = dst;
			rc->wr_left = pi->reth_len;
			rc->wr_total = pi->reth_len;
		}
		if (plen > rc->wr_left || (ends && plen != rc->wr_left)) {
			resp_error(qp, AETH_NAK_INV_REQ, pi->psn, IBV_WC_REM_INV_REQ_ERR);
			return;
		}
		if (ends && (m & DPV_HDR_IMMDT) && !take_rwqe(qp)) {
			if (rc_qp)
				send_nak(qp, AETH_RNR_NAK | (qp->attr.min_rnr_timer & 0x1f), pi->psn);
			else
				rc->uc_drop = true;
			return;
		}
		if (plen)
			memcpy(rc->wr_addr, pay, plen);
		rc->wr_addr += plen;
		rc->wr_left -= plen;
		rc->in_msg = ends ? 0 : 2;
		if (ends) {
			rc->msn = psn_add(rc->msn, 1);
			if (m & DPV_HDR_IMMDT)
				recv_complete(qp, pi, IBV_WC_RECV_RDMA_WITH_IMM, rc->wr_total);
		}
	} else if (op == DPV_OPC_READ_REQUEST) {
		uint8_t *src = pi->reth_len ? rkey_check(qp, pi->reth_rkey, pi->reth_va, pi->reth_len,
							 IBV_ACCESS_REMOTE_READ)
					    : (uint8_t *)"";
		if (!src || pi->reth_len > DPV_MAX_MSG_SZ) {
			resp_error(qp, AETH_NAK_REM_ACC, pi->psn, IBV_WC_REM_ACCESS_ERR);
			return;
		}
		uint32_t n = pi->reth_len ? (pi->reth_len + mtu - 1) / mtu : 1;
		rc->msn = psn_add(rc->msn, 1);
		save_res(qp, false, pi->psn, psn_add(pi->psn, n - 1), 0);
		dpv_resp_flush_ack(qp);
		read_reply(qp, src, pi->reth_len, pi->psn, pi->psn);
		rc->epsn = psn_add(pi->psn, n);
		return;
	} else if (op == DPV_OPC_CMP_SWAP || op == DPV_OPC_FETCH_ADD) {
		if (pi->atm_va & 7) {
			resp_error(qp, AETH_NAK_INV_REQ, pi->psn, IBV_WC_REM_INV_REQ_ERR);
			return;
		}
		uint64_t *p = (uint64_t *)rkey_check(qp, pi->atm_rkey, pi->atm_va, 8, IBV_ACCESS_REMOTE_ATOMIC);
		if (!p) {
			resp_error(qp, AETH_NAK_REM_ACC, pi->psn, IBV_WC_REM_ACCESS_ERR);
			return;
		}
		uint64_t orig;
		if (op == DPV_OPC_CMP_SWAP) {
			orig = pi->atm_cmp;
			__atomic_compare_exchange_n(p, &orig, pi->atm_swap_add, false, __ATOMIC_SEQ_CST,
						    __ATOMIC_SEQ_CST);
		} else {
			orig = __atomic_fetch_add(p, pi->atm_swap_add, __ATOMIC_SEQ_CST);
		}
		rc->msn = psn_add(rc->msn, 1);
		save_res(qp, true, pi->psn, pi->psn, orig);
		dpv_resp_flush_ack(qp);
		atomic_reply(qp, pi->psn, orig);
		rc->epsn = psn_add(pi->psn, 1);
		return;
	} else {
		resp_error(qp, AETH_NAK_INV_REQ, pi->psn, IBV_WC_REM_INV_REQ_ERR);
		return;
	}
	rc->epsn = psn_add(pi->psn, 1);
	rc->nak_sent = false;
	if (rc_qp && pi->ackreq)
		queue_ack(qp, pi->psn);
}

/* A request packet for this QP's responder. Must hold qp->lock. */
void dpv_resp_rx(struct dpv_qp *qp, struct rte_mbuf *m, struct dpv_pkt_info *pi)
{
	struct dpv_rc *rc = qp->rc;
	const uint8_t *frame = rte_pktmbuf_mtod(m, const uint8_t *);

	if (qp->state == IBV_QPS_RTR && !rc->comm_est) {
		rc->comm_est = true;
		struct ibv_async_event ev = {.event_type = IBV_EVENT_COMM_EST};
		ev.element.qp = dqp_ib(qp);
		dpv_async_event(qp->ctx, &ev);
	}
	if (qp->type == IBV_QPT_UC) {
		/* IBA 9.8.4 (UC): no ACKs; a gap drops the rest of the message, the
		 * next FIRST/ONLY starts afresh at whatever PSN it carries */
		bool starts = pi->mask & DPV_OP_START;
		if (pi->psn != rc->epsn || rc->uc_drop) {
			if (!starts) {
				rc->uc_drop = true;
				if (rc->in_msg == 1 && rc->have_rwqe)
					rc->recv_off = 0; /* keep the WQE for the next message */
				rc->in_msg = 0;
				dpv_qp_cnt(qp, DPV_CNT_OOS_REQ);
				rc->epsn = psn_add(pi->psn, 1);
				return;
			}
			if (rc->in_msg == 1 && rc->have_rwqe)
				rc->recv_off = 0;
			rc->in_msg = 0;
			rc->uc_drop = false;
		}
		execute(qp, pi, frame);
		if (rc->uc_drop)
			rc->epsn = psn_add(pi->psn, 1);
		return;
	}
	int d = psn_cmp(pi->psn, rc->epsn);
	if (d < 0) {
		duplicate(qp, pi);
		return;
	}
	if (d > 0) {
		/* C9-? PSN sequence error: one NAK per expected PSN */
		dpv_qp_cnt(qp, DPV_CNT_OOS_REQ);
		if (!rc->nak_sent) {
			rc->nak_sent = true;
			send_nak(qp, AETH_NAK_PSN_SEQ, rc->epsn);
		}
		return;
	}
	execute(qp, pi, frame);
}
