/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * UD transport (IBA 9.8.2, 9.8.3).
 *
 * Sender: one WQE -> one SEND ONLY (+IMM) packet with a DETH, the payload
 * gathered from the SGEs (or the inline data); the WQE completes once the
 * packet is on its way. Receiver: receive checks (QP state, transport,
 * P_Key, Q_Key), then the 40-byte GRH and the payload scattered into the
 * next receive WQE: for IPv4 the first 20 bytes are zero and the IPv4 header
 * sits at offset 20 (as Linux rxe does, and as ibv_init_ah_from_wc expects),
 * for IPv6 it is the IPv6 header.
 */
#include <errno.h>
#include <string.h>
#include <endian.h>

#include <rte_mbuf.h>

#include "sw_copy.h"
#include "sw_loc.h"
#include "sw_qp_lock.h"
#include "sw_queue.h"

/* Send one WQE. Returns IBV_WC_SUCCESS, an IBV_WC_* error status to
 * complete it with, or -ENOBUFS (nothing sent: try again later). */
static int send_one(struct sw_qp *qp, struct dpv_send_wqe *w)
{
	struct dpv_port *p = qp->port;
	const struct sw_ah *ah = sw_ah_lookup(w->ud.ah);
	if (!ah || ah->dev != qp->dev)
		return IBV_WC_LOC_QP_OP_ERR; /* destroyed, or of another port */
	const struct dpv_sge *sge;
	const uint8_t *inl;
	uint32_t nsge, len;
	int st = sw_wqe_payload_checked(qp, w, &sge, &nsge, &inl, &len);
	if (st != IBV_WC_SUCCESS)
		return st;
	if (len > p->path_mtu_bytes)
		return IBV_WC_LOC_LEN_ERR; /* IBA 9.8.2: a UD message is one packet */

	struct dpv_pkt_build b;
	memset(&b, 0, sizeof(b));
	memcpy(b.src_mac, p->mac, DPV_MAC_LEN);
	b.ip_ver = ah->ip_ver;
	memcpy(b.sgid, ah->sgid, DPV_GID_LEN);
	memcpy(b.dgid, ah->dgid, DPV_GID_LEN);
	b.tclass = ah->tclass;
	b.hop_limit = ah->hop_limit;
	b.flow_label = ah->flow_label;
	b.udp_sport = sw_udp_sport(qp->qpn, w->ud.remote_qpn, b.flow_label);
	b.opcode = DPV_TR_UD | (w->opcode == IBV_WR_SEND_WITH_IMM ? DPV_OPC_SEND_ONLY_IMM : DPV_OPC_SEND_ONLY);
	b.se = (w->flags & DPV_WQE_F_SOLICITED) != 0;
	b.pkey = DPV_DEFAULT_PKEY;
	b.dqpn = w->ud.remote_qpn;
	b.psn = qp->ud_psn;
	/* IBA 10.2.5: a Q_Key with the high bit set means "use the QP's Q_Key" */
	b.deth_qkey = (w->ud.remote_qkey & 0x80000000u) ? qp->attr.qkey : w->ud.remote_qkey;
	b.deth_sqpn = qp->gsi ? DPV_QPN_GSI : qp->qpn;
	b.immdt = be32toh(w->imm_data);
	int r = sw_xmit(qp, &b, qp->pd, sge, nsge, 0, len, inl);
	if (r == -ENOBUFS)
		return r;
	if (r == -EACCES)
		return IBV_WC_LOC_PROT_ERR; /* its MR was deregistered since the check */
	qp->ud_psn = dpv_psn_add(qp->ud_psn, 1);
	sw_ctr(qp, &qp->tx_pkts);
	return IBV_WC_SUCCESS; /* sent, or lost on the way like on a wire */
}

static void send_cqe(struct sw_qp *qp, uint32_t i, struct dpv_send_wqe *w, enum ibv_wc_status st)
{
	if (st == IBV_WC_SUCCESS && !(w->flags & DPV_WQE_F_SIGNALED))
		return;
	struct dpv_cqe e = {.wr_id = w->wr_id, .status = (uint8_t)st, .opcode = IBV_WC_SEND, .qp_num = qp->qpn,
			    .byte_len = st == IBV_WC_SUCCESS ? w->length : 0, .flags = DPV_CQE_F_SQ,
			    .wqe_index = i};
	sw_cq_push(qp, qp->scq, &e); /* false: sw_ud_send stops, sw_qp_send moves the QP to ERR */
}

/* Send (or, in ERR and SQE, flush) what is posted. Must hold the QP lock. */
void sw_ud_send(struct sw_qp *qp)
{
	uint32_t pi = sw_sq_pi(qp);
	qp->req.tx_stalled = false;
	while (qp->req.sq_head != pi) {
		uint32_t i = qp->req.sq_head;
		struct dpv_send_wqe *w = sw_sq_wqe(qp, i);
		enum ibv_qp_state st = sw_qp_state(qp);
		int wc;
		if (st == IBV_QPS_ERR || st == IBV_QPS_SQE)
			wc = IBV_WC_WR_FLUSH_ERR; /* IBA 10.8.3.3 */
		else if (st != IBV_QPS_RTS)
			break; /* SQD: nothing new starts */
		else if ((wc = qp->type == IBV_QPT_RAW_PACKET ? sw_raw_send_one(qp, w) : send_one(qp, w)) == -ENOBUFS) {
			qp->req.tx_stalled = true; /* the context's next turn sends it */
			sw_qp_kick(qp);
			break;
		}
		send_cqe(qp, i, w, (enum ibv_wc_status)wc);
		qp->req.sq_head++;
		qp->req.sq_cur = qp->req.sq_head;
		if (wc != IBV_WC_SUCCESS && wc != IBV_WC_WR_FLUSH_ERR)
			sw_qp_set_state(qp, IBV_QPS_SQE); /* IBA 10.3.1: UD (and raw) send errors move to SQE */
		if (unlikely(qp->cq_fatal) && wc != IBV_WC_WR_FLUSH_ERR)
			break; /* the send CQ overran: nothing more is sent (sw_qp_send: to ERR) */
	}
}

static void build_grh(uint8_t grh[DPV_GRH_LEN], const uint8_t *frame, const struct dpv_pkt_info *pi)
{
	if (pi->ip_ver == 4) {
		memset(grh, 0, 20);
		memcpy(grh + 20, frame + pi->l3_off, 20);
	} else {
		memcpy(grh, frame + pi->l3_off, 40);
	}
}

/* IBA 9.8.3 (UD receive checks): the drop reason, or DPV_DROP_NR to accept. */
static enum dpv_drop_reason ud_check(struct sw_qp *qp, const struct dpv_pkt_info *pi)
{
	enum ibv_qp_state st = sw_qp_state(qp);
	if (st != IBV_QPS_RTR && st != IBV_QPS_RTS && st != IBV_QPS_SQD && st != IBV_QPS_SQE)
		return DPV_DROP_QP_STATE;
	if ((pi->opcode & DPV_OPC_TR_MASK) != DPV_TR_UD)
		return DPV_DROP_BAD_TRANSPORT;
	if ((pi->pkey & 0x7fff) != (DPV_DEFAULT_PKEY & 0x7fff))
		return DPV_DROP_BAD_PKEY; /* IBA 10.9.3 */
	if (pi->deth_qkey != qp->attr.qkey)
		return DPV_DROP_BAD_QKEY; /* IBA 10.2.5 */
	return DPV_DROP_NR;
}

void sw_ud_rx(struct sw_qp *qp, struct dpv_qctx *qc, struct rte_mbuf *m, struct dpv_pkt_info *pi)
{
	const uint8_t *frame = rte_pktmbuf_mtod(m, const uint8_t *);
	struct sw_rwqe rw;
	sw_qp_lock(qp);
	enum dpv_drop_reason why = ud_check(qp, pi);
	if (why == DPV_DROP_NR && !sw_rq_pop(qp, &rw))
		why = DPV_DROP_NO_RECV_WQE; /* IBA 9.8.3: UD has no RNR, silently drop */
	if (why != DPV_DROP_NR) {
		sw_qp_unlock(qp);
		DPV_STAT_ADD(qc->port, drop[why], 1);
		sw_ctr(qp, &qp->rx_drops);
		rte_pktmbuf_free(m);
		return;
	}
	struct dpv_cqe e = {.wr_id = rw.wr_id, .opcode = IBV_WC_RECV, .qp_num = qp->qpn, .src_qp = pi->deth_sqpn,
			    .byte_len = DPV_GRH_LEN + pi->payload_len, .wc_flags = IBV_WC_GRH,
			    .sl = pi->ip_ver == 4 ? DPV_WC_SL_IPV4 : DPV_WC_SL_IPV6,
			    .flags = pi->se ? DPV_CQE_F_SOLICITED : 0};
	if (pi->mask & DPV_HDR_IMMDT) {
		e.wc_flags |= IBV_WC_WITH_IMM;
		e.imm_inv = htobe32(pi->immdt);
	}
	int st = sw_sge_check(rw.pd, rw.sge, rw.num_sge, IBV_ACCESS_LOCAL_WRITE);
	if (st == IBV_WC_SUCCESS && sw_sge_total(rw.sge, rw.num_sge) < e.byte_len)
		st = IBV_WC_LOC_LEN_ERR;
	if (st == IBV_WC_SUCCESS) {
		uint8_t grh[DPV_GRH_LEN];
		build_grh(grh, frame, pi);
		if (sw_sge_copy_in(rw.pd, rw.sge, rw.num_sge, 0, grh, DPV_GRH_LEN) ||
		    sw_sge_copy_in(rw.pd, rw.sge, rw.num_sge, DPV_GRH_LEN, frame + pi->payload_off, pi->payload_len))
			st = IBV_WC_LOC_PROT_ERR; /* the buffer was unmapped under its MR */
	}
	e.status = (uint8_t)st;
	sw_ctr(qp, &qp->rx_pkts);
	sw_cnt(qp, DPV_CNT_RCVD_PKTS);
	rte_pktmbuf_free(m);
	if (!sw_cq_push(qp, qp->rcq, &e))
		sw_qp_cq_fatal(qp); /* the receive CQ overran */
	else if (st != IBV_WC_SUCCESS)
		sw_qp_to_error(qp);
	sw_qp_unlock(qp);
}
