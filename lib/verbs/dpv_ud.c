/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * UD transport (IBA 9.8) and the receive dispatch by destination QP.
 *
 * Requester: one WR -> one SEND ONLY (+IMM) packet with DETH, payload gathered
 * from the SGEs. Responder: receive checks (QP state, transport, P_Key,
 * Q_Key), then the 40-byte GRH and the payload scattered into the next
 * receive WQE: for IPv4 the first 20 bytes are zero and the IPv4 header sits
 * at offset 20 (as Linux rxe does), for IPv6 it is the IPv6 header.
 */
#include <errno.h>
#include <string.h>
#include <endian.h>

#include <rte_mbuf.h>

#include "dpv_rc.h"
#include <rte_cycles.h>

/* Returns IBV_WC_SUCCESS, an IBV_WC_* error status for a completion, or a
 * negative errno if the WR must be rejected at post time. Must hold sq_lock. */
int dpv_ud_send_one(struct dpv_qp *qp, struct ibv_send_wr *wr)
{
	struct dpv_ah *ah = to_dah(wr->wr.ud.ah);
	struct dpv_port *p = qp->port;
	uint32_t nsge = (uint32_t)wr->num_sge;
	uint32_t len = dpv_sge_total(wr->sg_list, nsge);

	if (ah->port != p)
		return -EINVAL;
	if (!(wr->send_flags & IBV_SEND_INLINE)) {
		int st = dpv_sge_check(qp->pd, wr->sg_list, nsge, 0);
		if (st != IBV_WC_SUCCESS)
			return st;
	}
	if (len > p->path_mtu_bytes)
		return IBV_WC_LOC_LEN_ERR; /* IBA 9.8.2: a UD message is one packet */

	struct dpv_pkt_build b;
	memset(&b, 0, sizeof(b));
	memcpy(b.src_mac, p->mac, 6);
	b.ip_ver = ah->ip_ver;
	memcpy(b.sgid, ah->sgid, 16);
	memcpy(b.dgid, ah->dgid, 16);
	b.tclass = ah->attr.grh.traffic_class;
	b.hop_limit = ah->attr.grh.hop_limit ? ah->attr.grh.hop_limit : 64;
	b.flow_label = ah->attr.grh.flow_label;
	b.udp_sport = dpv_udp_sport(dqp_ib(qp)->qp_num, wr->wr.ud.remote_qpn, b.flow_label);
	b.opcode = wr->opcode == IBV_WR_SEND_WITH_IMM ? (DPV_TR_UD | DPV_OPC_SEND_ONLY_IMM)
						      : (DPV_TR_UD | DPV_OPC_SEND_ONLY);
	b.se = (wr->send_flags & IBV_SEND_SOLICITED) != 0;
	b.pkey = DPV_DEFAULT_PKEY;
	b.dqpn = wr->wr.ud.remote_qpn & 0xffffff;
	b.psn = qp->sq_psn;
	qp->sq_psn = (qp->sq_psn + 1) & 0xffffff;
	/* IBA 10.2.5: a Q_Key with the high bit set means "use the QP's Q_Key" */
	b.deth_qkey = (wr->wr.ud.remote_qkey & 0x80000000u) ? qp->attr.qkey : wr->wr.ud.remote_qkey;
	b.deth_sqpn = dqp_ib(qp)->qp_num;
	b.immdt = be32toh(wr->imm_data);

	uint32_t flen = dpv_pkt_frame_len(b.opcode, b.ip_ver, len);
	struct rte_mbuf *m = dpv_port_alloc_mbuf(p);
	if (!m) {
		dpv_stat_add(&p->stats.drop[DPV_DROP_NOMEM], 1);
		return -ENOMEM;
	}
	uint8_t *f = (uint8_t *)rte_pktmbuf_append(m, (uint16_t)flen);
	if (!f) {
		rte_pktmbuf_free(m);
		return IBV_WC_LOC_LEN_ERR;
	}
	uint32_t off = dpv_pkt_build_hdrs(f, &b, len);
	for (uint32_t i = 0; i < nsge; i++) {
		if (!wr->sg_list[i].length)
			continue;
		memcpy(f + off, (const void *)(uintptr_t)wr->sg_list[i].addr, wr->sg_list[i].length);
		off += wr->sg_list[i].length;
	}
	dpv_pkt_finish(f, flen);
	dpv_ctr_add(&qp->tx_pkts, 1, qp->lockless);
	dpv_qp_cnt(qp, DPV_CNT_SENT_PKTS);
	dpv_port_xmit(qp->qc, m, ah->dgid);
	return IBV_WC_SUCCESS;
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

void dpv_ud_rx(struct dpv_qp *qp, struct dpv_qctx *qc, struct rte_mbuf *m, struct dpv_pkt_info *pi)
{
	struct dpv_port *p = qc->port;
	const uint8_t *frame = rte_pktmbuf_mtod(m, const uint8_t *);
	struct ibv_sge sge[DPV_MAX_SGE_LIMIT];
	uint32_t nsge;
	uint64_t wr_id;
	struct dpv_pd *pd;
	enum dpv_drop_reason why;

	if (qp->state != IBV_QPS_RTR && qp->state != IBV_QPS_RTS && qp->state != IBV_QPS_SQD &&
	    qp->state != IBV_QPS_SQE) {
		why = DPV_DROP_QP_STATE;
		goto drop;
	}
	if ((pi->opcode & 0xe0) != DPV_TR_UD) {
		why = DPV_DROP_BAD_TRANSPORT;
		goto drop;
	}
	if ((pi->pkey & 0x7fff) != (DPV_DEFAULT_PKEY & 0x7fff)) {
		why = DPV_DROP_BAD_PKEY; /* IBA 10.9.3 */
		goto drop;
	}
	if (pi->deth_qkey != qp->attr.qkey) {
		why = DPV_DROP_BAD_QKEY; /* IBA 10.2.5 C10-15 */
		goto drop;
	}
	if (!dpv_qp_pop_recv(qp, &wr_id, sge, &nsge, &pd)) {
		why = DPV_DROP_NO_RECV_WQE; /* IBA 9.8.3: UD has no RNR, silently drop */
		goto drop;
	}
	struct ibv_wc wc;
	memset(&wc, 0, sizeof(wc));
	wc.wr_id = wr_id;
	wc.opcode = IBV_WC_RECV;
	wc.qp_num = dqp_ib(qp)->qp_num;
	wc.src_qp = pi->deth_sqpn;
	wc.byte_len = DPV_GRH_LEN + pi->payload_len;
	wc.wc_flags = IBV_WC_GRH;
	if (pi->mask & DPV_HDR_IMMDT) {
		wc.wc_flags |= IBV_WC_WITH_IMM;
		wc.imm_data = htobe32(pi->immdt);
	}
	wc.pkey_index = 0;
	int st = dpv_sge_check(pd, sge, nsge, IBV_ACCESS_LOCAL_WRITE);
	if (st == IBV_WC_SUCCESS && dpv_sge_total(sge, nsge) < wc.byte_len)
		st = IBV_WC_LOC_LEN_ERR;
	if (st == IBV_WC_SUCCESS) {
		uint8_t grh[DPV_GRH_LEN];
		build_grh(grh, frame, pi);
		dpv_sge_copy_in(sge, nsge, 0, grh, DPV_GRH_LEN);
		dpv_sge_copy_in(sge, nsge, DPV_GRH_LEN, frame + pi->payload_off, pi->payload_len);
	}
	wc.status = (enum ibv_wc_status)st;
	dpv_ctr_add(&qp->rx_pkts, 1, qp->lockless);
	dpv_qp_cnt(qp, DPV_CNT_RCVD_PKTS);
	rte_pktmbuf_free(m);
	dpv_cq_push(qp->rcq, &wc, pi->se);
	if (st != IBV_WC_SUCCESS)
		dpv_qp_to_error(qp);
	return;
drop:
	dpv_stat_add(&p->stats.drop[why], 1);
	dpv_ctr_add(&qp->rx_drops, 1, qp->lockless);
	rte_pktmbuf_free(m);
}

static rte_spinlock_t g_conn_lock = RTE_SPINLOCK_INITIALIZER;
static struct dpv_qp *g_conn_list; /* RC/UC QPs, for timers */

void dpv_conn_add(struct dpv_qp *qp)
{
	if (qp->lockless) {
		struct dpv_td *td = qp->upd->td;
		qp->td_next = td->conn;
		td->conn = qp;
		return;
	}
	rte_spinlock_lock(&g_conn_lock);
	qp->timer_next = g_conn_list;
	g_conn_list = qp;
	rte_spinlock_unlock(&g_conn_lock);
}

void dpv_conn_del(struct dpv_qp *qp)
{
	if (qp->lockless) {
		for (struct dpv_qp **pp = &qp->upd->td->conn; *pp; pp = &(*pp)->td_next)
			if (*pp == qp) {
				*pp = qp->td_next;
				break;
			}
		return;
	}
	rte_spinlock_lock(&g_conn_lock);
	for (struct dpv_qp **pp = &g_conn_list; *pp; pp = &(*pp)->timer_next)
		if (*pp == qp) {
			*pp = qp->timer_next;
			break;
		}
	rte_spinlock_unlock(&g_conn_lock);
}

/* qc: the engine context receiving (coalesced ACKs go on its list), or
 * NULL when a thread domain's owner processes deferred packets (ACKs are
 * sent at once). */
static void conn_rx(struct dpv_qp *qp, struct dpv_qctx *qc, struct rte_mbuf *m, struct dpv_pkt_info *pi)
{
	bool defer = qc != NULL;
	if (!qc)
		qc = qp->qc;
	if ((pi->opcode & 0xe0) != dpv_qp_tr(qp)) {
		dpv_stat_add(&qc->port->stats.drop[DPV_DROP_BAD_TRANSPORT], 1);
		return;
	}
	if ((pi->pkey & 0x7fff) != (DPV_DEFAULT_PKEY & 0x7fff)) {
		dpv_stat_add(&qc->port->stats.drop[DPV_DROP_BAD_PKEY], 1);
		return;
	}
	qp_lock(qp);
	dpv_qp_cnt(qp, DPV_CNT_RCVD_PKTS);
	if (qp->state == IBV_QPS_RESET || qp->state == IBV_QPS_INIT || qp->state == IBV_QPS_ERR) {
		qp_unlock(qp);
		dpv_stat_add(&qc->port->stats.drop[DPV_DROP_QP_STATE], 1);
		return;
	}
	bool req = pi->mask & DPV_OP_REQ;
	if (req && qp->type != IBV_QPT_XRC_SEND)
		dpv_resp_rx(qp, m, pi);
	else if (!req && (qp->type == IBV_QPT_RC || qp->type == IBV_QPT_XRC_SEND))
		dpv_comp_rx(qp, m, pi);
	else
		dpv_stat_add(&qc->port->stats.drop[DPV_DROP_BAD_TRANSPORT], 1);
	if (qp->rc && qp->rc->ack_pending && !defer)
		dpv_resp_flush_ack(qp);
	if (qp->rc && qp->rc->ack_pending) {
		bool listed = false;
		for (unsigned int i = 0; i < qc->n_deferred; i++)
			if (qc->deferred[i] == qp)
				listed = true;
		if (!listed) {
			if (qc->n_deferred < RTE_DIM(qc->deferred))
				qc->deferred[qc->n_deferred++] = qp;
			else
				dpv_resp_flush_ack(qp);
		}
	}
	qp_unlock(qp);
}

static void dispatch(struct dpv_qp *qp, struct dpv_qctx *qc, struct rte_mbuf *m, struct dpv_pkt_info *pi)
{
	switch (qp->type) {
	case IBV_QPT_UD:
		dpv_ud_rx(qp, qc ? qc : qp->qc, m, pi);
		break;
	case IBV_QPT_RC:
	case IBV_QPT_UC:
	case IBV_QPT_XRC_SEND:
	case IBV_QPT_XRC_RECV:
		conn_rx(qp, qc, m, pi);
		rte_pktmbuf_free(m);
		break;
	default:
		dpv_stat_add(&qp->port->stats.drop[DPV_DROP_BAD_TRANSPORT], 1);
		rte_pktmbuf_free(m);
		break;
	}
}

void dpv_transport_rx(struct dpv_qctx *qc, struct rte_mbuf *m, struct dpv_pkt_info *pi)
{
	struct dpv_qp *qp = dpv_qp_lookup(pi->dqpn);
	if (!qp || qp->port != qc->port) {
		dpv_stat_add(&qc->port->stats.drop[DPV_DROP_NO_QP], 1);
		rte_pktmbuf_free(m);
		return;
	}
	if (qp->lockless && !dpv_td_is_owner(qp->upd->td)) {
		/* only the thread domain's thread may touch the QP */
		if (rte_ring_mp_enqueue(qp->upd->td->rx_ring, m) != 0) {
			dpv_stat_add(&qc->port->stats.drop[DPV_DROP_TX_FULL], 1);
			rte_pktmbuf_free(m);
		}
		return;
	}
	dispatch(qp, qc, m, pi);
}

void dpv_td_progress(struct dpv_td *td)
{
	struct rte_mbuf *pkts[DPV_BURST];
	unsigned int n = rte_ring_sc_dequeue_burst(td->rx_ring, (void **)pkts, DPV_BURST, NULL);
	for (unsigned int i = 0; i < n; i++) {
		struct dpv_pkt_info pi;
		struct rte_mbuf *m = pkts[i];
		/* checked when received: parse again for the offsets only */
		if (dpv_pkt_parse(rte_pktmbuf_mtod(m, const uint8_t *), rte_pktmbuf_data_len(m), &pi) != 0) {
			rte_pktmbuf_free(m);
			continue;
		}
		struct dpv_qp *qp = dpv_qp_lookup(pi.dqpn);
		if (!qp || !qp->lockless || qp->upd->td != td) {
			rte_pktmbuf_free(m);
			continue;
		}
		dispatch(qp, NULL, m, &pi);
	}
	uint64_t now = rte_get_tsc_cycles();
	if (now < td->next_timer_tsc)
		return;
	td->next_timer_tsc = now + rte_get_tsc_hz() / 100000;
	for (struct dpv_qp *qp = td->conn; qp; qp = qp->td_next) {
		if (qp->rc->respq_head != qp->rc->respq_tail)
			dpv_resp_pump(qp, DPV_RESP_BURST);
		if (qp->type != IBV_QPT_XRC_RECV)
			dpv_comp_timers(qp, now);
	}
}

/* Engine hook after each RX burst: coalesced ACKs, then timers (at most every
 * 10 us). Runs with qc->rx_lock held. */
void dpv_transport_poll(struct dpv_qctx *qc)
{
	if (qc->port->index == 0 && qc->qid == 0)
		dpv_stats_publish();
	for (unsigned int i = 0; i < qc->n_deferred; i++) {
		struct dpv_qp *qp = qc->deferred[i];
		qp_lock(qp);
		dpv_resp_flush_ack(qp);
		qp_unlock(qp);
	}
	qc->n_deferred = 0;
	/* lcore mode: QPs whose applications posted requests */
	void *db[DPV_BURST];
	unsigned int ndb = rte_ring_sc_dequeue_burst(qc->db_ring, db, DPV_BURST, NULL);
	for (unsigned int i = 0; i < ndb; i++) {
		struct dpv_qp *qp = dpv_qp_lookup((uint32_t)(uintptr_t)db[i]);
		if (!qp || !qp->rc)
			continue;
		atomic_store(&qp->rc->db_pending, false);
		qp_lock(qp);
		dpv_req_run(qp);
		qp_unlock(qp);
	}
	uint64_t now = rte_get_tsc_cycles();
	if (now < qc->next_timer_tsc)
		return;
	qc->next_timer_tsc = now + rte_get_tsc_hz() / 100000;
	if (!g_conn_list)
		return;
	rte_spinlock_lock(&g_conn_lock);
	for (struct dpv_qp *qp = g_conn_list; qp; qp = qp->timer_next) {
		if (qp->qc != qc || qp->lockless)
			continue;
		if (!qp_trylock(qp))
			continue;
		if (qp->rc->respq_head != qp->rc->respq_tail)
			dpv_resp_pump(qp, DPV_RESP_BURST);
		if (qp->type != IBV_QPT_XRC_RECV)
			dpv_comp_timers(qp, now);
		qp_unlock(qp);
	}
	rte_spinlock_unlock(&g_conn_lock);
}
