/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The rendezvous of a tag matching SRQ, as a ConnectX runs it: a matched
 * RNDV message (TMH, then the RVH: the sender's va, rkey and length)
 * completes at once with IBV_WC_TM_MATCH; the receiving QP then READs the
 * sender's data into the tagged buffer on its own send side, completes the
 * tag again with IBV_WC_TM_DATA_VALID, and tells the sender with a FIN: a
 * SEND of a TMH (opcode IBV_TMH_FIN, the tag and app_ctx) into the sender's
 * receive queue, an IBV_WC_RECV there.
 *
 * One rendezvous per QP at a time, SW_RNDV_Q more waiting in order. It
 * starts when the QP's requester is idle (every send WQE complete); its
 * READ and FIN take the next PSNs of the QP's send side, and the requester
 * sends nothing else until the FIN is acknowledged (sw_req_run asks
 * sw_tm_rndv_busy). An RNDV that finds the queue full, or one longer than
 * its tagged buffer, is left to software (IBV_WC_TM_RNDV_INCOMPLETE, the
 * RVH in the buffer). The QP's
 * timers cover them as its own requests: the tail-loss probe and the
 * retransmission timer ask again for what has not arrived (sw_req_retry
 * calls sw_tm_rndv_resend), retry_cnt spent fails the rendezvous
 * (IBV_WC_RETRY_EXC_ERR, QP to ERR), an RNR NAK of the FIN waits and sends
 * it again (rnr_retry).
 */
#include <endian.h>
#include <errno.h>
#include <string.h>

#include <infiniband/tm_types.h>

#include "sw_copy.h"
#include "sw_loc.h"
#include "sw_opcode.h"
#include "sw_qp_lock.h"

#define SW_RNDV_RNR_US 100 /* the wait before a FIN the sender RNR NAK'd goes again */

void sw_tm_rndv_check(struct sw_qp *qp)
{
	struct sw_resp *r = &qp->resp;
	if (!r->tm.rndv)
		return;
	if (r->rndv_qn >= SW_RNDV_Q || r->rwqe.num_sge != 1 || r->tm.len > r->rwqe.sge[0].length) {
		r->tm.rndv = false; /* software's rendezvous */
		r->tm.status = IBV_WC_TM_RNDV_INCOMPLETE;
	}
}

void sw_tm_rndv_start(struct sw_qp *qp, const struct sw_tm_msg *m, struct sw_cq *cq)
{
	struct sw_resp *r = &qp->resp;
	struct sw_tm_rndv v = {.phase = SW_RNDV_WAIT, .va = m->va, .rkey = m->rkey, .len = m->len,
			       .sge = r->rwqe.sge[0], .pd = r->rwqe.pd, .wr_id = r->rwqe.wr_id,
			       .tag = m->tag, .priv = m->priv, .free_tag = m->free_tag, .cq = cq};
	if (r->rndv.phase != SW_RNDV_IDLE) {
		r->rndv_q[r->rndv_qn++] = v; /* room checked by sw_tm_rndv_check */
		return;
	}
	r->rndv = v;
	sw_tm_rndv_kick(qp);
}

/* The rendezvous is over: the next waiting one (if any) is next. */
static void rndv_next(struct sw_qp *qp)
{
	struct sw_resp *r = &qp->resp;
	r->rndv.phase = SW_RNDV_IDLE;
	if (!r->rndv_qn)
		return;
	r->rndv = r->rndv_q[0];
	memmove(&r->rndv_q[0], &r->rndv_q[1], --r->rndv_qn * sizeof(r->rndv_q[0]));
}

/* Progress: the timers start again from now, the retries are whole again. */
static void rndv_progress(struct sw_qp *qp)
{
	qp->comp.retry_left = qp->attr.retry_cnt;
	qp->comp.rnr_left = qp->attr.rnr_retry;
	sw_timer_restart(qp);
	sw_timer_probe_restart(qp, true);
}

static void rndv_timers_off(struct sw_qp *qp)
{
	qp->comp.timer_deadline = 0;
	qp->comp.probe_deadline = 0;
	qp->comp.rnr_deadline = 0;
	qp->comp.retry_left = qp->attr.retry_cnt;
	qp->comp.rnr_left = qp->attr.rnr_retry;
}

/* The READ for what has not arrived: the responder replays it from a PSN
 * of the original request's range (IBA 9.7.4.1.4, as after a READ gap). */
static int send_read(struct sw_qp *qp)
{
	struct sw_tm_rndv *v = &qp->resp.rndv;
	struct dpv_pkt_build b;
	sw_build_init(qp, &b, sw_qp_tr(qp) | DPV_OPC_READ_REQUEST,
		      dpv_psn_add(v->first_psn, v->recv / sw_qp_mtu(qp)));
	b.ackreq = true;
	b.reth_va = v->va + v->recv;
	b.reth_rkey = v->rkey;
	b.reth_len = v->len - v->recv;
	return sw_xmit(qp, &b, SW_PD_CHECKED, NULL, 0, 0, 0, NULL);
}

static int send_fin(struct sw_qp *qp)
{
	struct sw_tm_rndv *v = &qp->resp.rndv;
	struct ibv_tmh fin = {.opcode = IBV_TMH_FIN, .app_ctx = htobe32(v->priv), .tag = htobe64(v->tag)};
	struct dpv_pkt_build b;
	sw_build_init(qp, &b, sw_qp_tr(qp) | DPV_OPC_SEND_ONLY, v->fin_psn);
	b.ackreq = true;
	return sw_xmit(qp, &b, SW_PD_CHECKED, NULL, 0, 0, sizeof(fin), &fin);
}

void sw_tm_rndv_kick(struct sw_qp *qp)
{
	struct sw_tm_rndv *v = &qp->resp.rndv;
	if (v->phase != SW_RNDV_WAIT || sw_qp_state(qp) != IBV_QPS_RTS || qp->req.sq_head != qp->req.sq_cur)
		return;
	uint32_t mtu = sw_qp_mtu(qp);
	uint32_t n = v->len ? (v->len + mtu - 1) / mtu : 1;
	v->first_psn = qp->req.psn;
	if (send_read(qp) == -ENOBUFS)
		return; /* no buffer now: the next turn of the requester tries again */
	v->last_psn = dpv_psn_add(qp->req.psn, n - 1);
	v->fin_psn = dpv_psn_add(v->last_psn, 1);
	qp->req.psn = dpv_psn_add(v->fin_psn, 1);
	qp->comp.psn = v->first_psn;
	v->phase = SW_RNDV_READ;
	rndv_progress(qp); /* a lost request is a loss as any other */
}

void sw_tm_rndv_resend(struct sw_qp *qp)
{
	struct sw_tm_rndv *v = &qp->resp.rndv;
	sw_cnt(qp, DPV_CNT_RETRY);
	if (v->phase == SW_RNDV_READ)
		send_read(qp);
	else if (v->phase == SW_RNDV_FIN)
		send_fin(qp);
}

bool sw_tm_rndv_busy(struct sw_qp *qp)
{
	if (qp->resp.rndv.phase == SW_RNDV_WAIT)
		sw_tm_rndv_kick(qp);
	return qp->resp.rndv.phase >= SW_RNDV_READ;
}

/* The rendezvous failed (a NAK, the buffer unmapped): the tag completes
 * with st and the QP goes to ERR, as after a failed READ. */
static void rndv_fail(struct sw_qp *qp, enum ibv_wc_status st)
{
	struct sw_tm_rndv *v = &qp->resp.rndv;
	struct dpv_cqe e = {.wr_id = v->wr_id, .status = (uint8_t)st, .opcode = IBV_WC_TM_RECV, .qp_num = qp->qpn,
			    .flags = DPV_CQE_F_TM_FREE, .wqe_index = v->free_tag};
	v->phase = SW_RNDV_IDLE;
	qp->resp.rndv_qn = 0; /* the QP goes to ERR: the waiting ones never run */
	rndv_timers_off(qp);
	sw_cq_push(qp, v->cq, &e);
	sw_qp_to_error(qp);
}

void sw_tm_rndv_timeout(struct sw_qp *qp)
{
	sw_cnt(qp, DPV_CNT_RETRY_EXC);
	rndv_fail(qp, IBV_WC_RETRY_EXC_ERR);
}

static void read_resp(struct sw_qp *qp, struct sw_tm_rndv *v, const uint8_t *frame, struct dpv_pkt_info *pi)
{
	uint32_t expect = dpv_psn_add(v->first_psn, v->recv / sw_qp_mtu(qp));
	if (pi->psn != expect || v->recv + pi->payload_len > v->len)
		return; /* a duplicate, or not what was asked */
	if (pi->payload_len &&
	    sw_sge_copy_in(v->pd, &v->sge, 1, v->recv, frame + pi->payload_off, pi->payload_len)) {
		rndv_fail(qp, IBV_WC_LOC_PROT_ERR);
		return;
	}
	v->recv += pi->payload_len;
	rndv_progress(qp);
	if (v->recv < v->len || pi->psn != v->last_psn)
		return;
	struct dpv_cqe e = {.wr_id = v->wr_id, .opcode = IBV_WC_TM_RECV, .wc_flags = IBV_WC_TM_DATA_VALID,
			    .qp_num = qp->qpn, .src_qp = qp->attr.dest_qp_num, .byte_len = v->len,
			    .flags = DPV_CQE_F_TM_FREE, .wqe_index = v->free_tag};
	qp->comp.psn = v->fin_psn;
	v->phase = SW_RNDV_FIN;
	sw_cq_push(qp, v->cq, &e);
	send_fin(qp);
}

bool sw_tm_rndv_rx(struct sw_qp *qp, struct rte_mbuf *m, struct dpv_pkt_info *pi)
{
	struct sw_tm_rndv *v = &qp->resp.rndv;
	uint8_t op = pi->opcode & DPV_OPC_OP_MASK;
	bool nak = (pi->mask & DPV_HDR_AETH) && (pi->aeth_syndrome & DPV_AETH_TYPE_MASK) != DPV_AETH_ACK;
	bool rnr = nak && (pi->aeth_syndrome & DPV_AETH_TYPE_MASK) == DPV_AETH_RNR_NAK;
	if (v->phase == SW_RNDV_READ) {
		if (op >= DPV_OPC_READ_RESP_FIRST && op <= DPV_OPC_READ_RESP_ONLY && !nak)
			read_resp(qp, v, rte_pktmbuf_mtod(m, const uint8_t *), pi);
		else if (nak && pi->psn == v->first_psn)
			rndv_fail(qp, IBV_WC_REM_ACCESS_ERR);
		return true;
	}
	if (v->phase != SW_RNDV_FIN || op != DPV_OPC_ACK || pi->psn != v->fin_psn)
		return true; /* the send side belongs to the rendezvous until the FIN is in */
	if (rnr) {
		/* the sender has no receive WQE posted yet: the timer scan sends
		 * the FIN again after a while (sw_req_retry), rnr_retry times */
		if (qp->attr.rnr_retry != 7 && !qp->comp.rnr_left--) {
			sw_cnt(qp, DPV_CNT_RNR_RETRY_EXC);
			rndv_fail(qp, IBV_WC_RNR_RETRY_EXC_ERR);
			return true;
		}
		qp->comp.rnr_psn = v->fin_psn;
		qp->comp.rnr_deadline = rte_get_tsc_cycles() + sw_us_cycles * SW_RNDV_RNR_US;
		qp->comp.timer_deadline = 0;
		qp->comp.probe_deadline = 0;
	} else if (nak) {
		rndv_fail(qp, IBV_WC_REM_OP_ERR);
	} else {
		qp->comp.psn = dpv_psn_add(v->fin_psn, 1);
		rndv_timers_off(qp);
		rndv_next(qp); /* it starts at the end of this packet (sw_req_run) */
	}
	return true;
}
