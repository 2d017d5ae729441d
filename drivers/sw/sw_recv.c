/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Receive checks and dispatch (as rxe_recv.c): the port layer hands over
 * every RoCEv2 packet that parsed, passed its ICRC and is addressed to one
 * of the port's GIDs; here the destination QP is found and the checks that
 * need it are made (IBA 9.6: QP exists on this port, transport matches the
 * QP type, P_Key, QP state), then the packet goes to the UD transport, the
 * responder (requests) or the completer (responses). Packets for a thread
 * domain's QP received by another thread are handed to the owner.
 */
#include <errno.h>
#include <string.h>

#include "sw_loc.h"
#include "sw_opcode.h"
#include "sw_qp_lock.h"

static void drop(struct dpv_qctx *qc, enum dpv_drop_reason why)
{
	DPV_STAT_ADD(qc->port, drop[why], 1);
}

/* qc: the context receiving (coalesced ACKs go on its list), or NULL when a
 * thread domain's owner processes deferred packets (ACKs are sent at once). */
static void conn_rx(struct sw_qp *qp, struct dpv_qctx *qc, struct rte_mbuf *m, struct dpv_pkt_info *pi)
{
	struct dpv_qctx *cq = qc ? qc : qp->qc;
	if ((pi->opcode & DPV_OPC_TR_MASK) != sw_qp_tr(qp)) {
		drop(cq, DPV_DROP_BAD_TRANSPORT); /* IBA 9.6: opcode of another transport */
		return;
	}
	/* IBA 9.6 (BTH validation): the P_Key must match the partition */
	if ((pi->pkey & 0x7fff) != (DPV_DEFAULT_PKEY & 0x7fff)) {
		drop(cq, DPV_DROP_BAD_PKEY);
		return;
	}
	sw_qp_lock(qp);
	sw_cnt(qp, DPV_CNT_RCVD_PKTS);
	enum ibv_qp_state st = sw_qp_state(qp);
	if (st == IBV_QPS_RESET || st == IBV_QPS_INIT || st == IBV_QPS_ERR) {
		sw_qp_unlock(qp);
		drop(cq, DPV_DROP_QP_STATE); /* IBA 10.3.1: only RTR and later receive */
		return;
	}
	bool req = pi->mask & DPV_OP_REQ;
	if (req && qp->type != IBV_QPT_XRC_SEND)
		sw_resp_rx(qp, m, pi);
	else if (!req && (qp->type == IBV_QPT_RC || qp->type == IBV_QPT_XRC_SEND))
		sw_comp_rx(qp, m, pi);
	else
		drop(cq, DPV_DROP_BAD_TRANSPORT);
	/* a CQ of the QP overran: a send CQE the completer could not write
	 * (sw_cq_push), or another QP's */
	if (unlikely(sw_qp_cq_due(qp)))
		sw_qp_cq_fatal(qp);
	if (qp->resp.ack_pending) {
		if (qc)
			sw_defer_ack(qp, qc);
		else
			sw_resp_flush_ack(qp);
	}
	sw_qp_unlock(qp);
}

static void dispatch(struct sw_qp *qp, struct dpv_qctx *qc, struct rte_mbuf *m, struct dpv_pkt_info *pi)
{
	if (qp->type == IBV_QPT_UD) {
		sw_ud_rx(qp, qc ? qc : qp->qc, m, pi);
		return;
	}
	conn_rx(qp, qc, m, pi);
	rte_pktmbuf_free(m);
}

/* The owner, before it processes a packet it received itself: every packet
 * deferred before it. Bounded by what is queued now (another context may
 * keep adding; with one context, nobody adds while we hold its rx_lock). */
static void td_drain(struct sw_td *td)
{
	unsigned int left = rte_ring_count(td->rx_ring);
	while (left > 0) {
		unsigned int n = (unsigned int)sw_td_rx(td);
		if (n == 0)
			break;
		left -= RTE_MIN(n, left);
	}
}

/* Is the calling thread the thread domain's owner (sw_td_claim)? */
static inline bool sw_td_is_owner(struct sw_td *td)
{
	return atomic_load_explicit(&td->owner_set, memory_order_acquire) && pthread_equal(td->owner, pthread_self());
}

void sw_rx(struct dpv_qctx *qc, struct rte_mbuf *m, struct dpv_pkt_info *pi)
{
	if (pi->dqpn == DPV_QPN_MCAST) {
		sw_mcast_rx(qc, m, pi); /* IBA 10.5: every attached QP of the port */
		return;
	}
	struct sw_qp *qp = pi->dqpn == DPV_QPN_GSI ?
		sw_gsi_lookup(qc->port, pi->sgid, rte_pktmbuf_mtod(m, const uint8_t *) + pi->payload_off, pi->payload_len) :
		sw_qp_lookup(pi->dqpn);
	if (!qp && pi->dqpn == DPV_QPN_GSI) {
		sw_gsi_fallback(qc, m, pi); /* no GSI QP: the port's own CM answers */
		rte_pktmbuf_free(m);
		return;
	}
	if (!qp || qp->port != qc->port || qp->type == IBV_QPT_RAW_PACKET) {
		drop(qc, DPV_DROP_NO_QP); /* IBA 9.6: no such QP on this port (a raw QP has no QPN on the wire) */
		rte_pktmbuf_free(m);
		return;
	}
	if (qp->lockless) {
		if (!sw_td_is_owner(qp->td)) {
			/* only the thread domain's thread may touch the QP */
			if (rte_ring_mp_enqueue(qp->td->rx_ring, m) != 0) {
				drop(qc, DPV_DROP_TX_FULL);
				rte_pktmbuf_free(m);
			}
			return;
		}
		/* packets another thread received earlier go first, all of
		 * them (sw_td_rx takes one burst per call): a QP's packets are
		 * processed in the order the port received them */
		if (unlikely(!rte_ring_empty(qp->td->rx_ring)))
			td_drain(qp->td);
	}
	dispatch(qp, qc, m, pi);
}

int sw_td_rx(struct sw_td *td)
{
	struct rte_mbuf *pkts[DPV_BURST];
	unsigned int n = rte_ring_sc_dequeue_burst(td->rx_ring, (void **)pkts, DPV_BURST, NULL);
	for (unsigned int i = 0; i < n; i++) {
		struct dpv_pkt_info pi;
		struct rte_mbuf *m = pkts[i];
		/* checked when received: parse again for the offsets only */
		if (dpv_pkt_parse_trusted(rte_pktmbuf_mtod(m, const uint8_t *), rte_pktmbuf_data_len(m), &pi) != 0) {
			rte_pktmbuf_free(m);
			continue;
		}
		struct sw_qp *qp = sw_qp_lookup(pi.dqpn); /* GSI QPs are never in a TD */
		if (!qp || qp->td != td) {
			rte_pktmbuf_free(m);
			continue;
		}
		dispatch(qp, NULL, m, &pi);
	}
	return (int)n;
}
