/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Raw packet QPs (IBV_QPT_RAW_PACKET) and their steering rules
 * (ibv_create_flow). A send WQE's data is a whole Ethernet frame, sent as
 * it is (no header is built or checked beyond its length); a copy goes to
 * the port's own rules first, as a NIC's loopback delivers it
 * (dpv_port_xmit_raw). Received frames that a rule of the QP matched
 * (lib/port/dpv_rawflow.c) land whole in the QP's next receive WQE:
 * byte_len is the frame's length, no GRH, the rule's flow tag in the CQE.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rte_mbuf.h>

#include "sw_copy.h"
#include "sw_loc.h"
#include "sw_qp_lock.h"

/* The largest frame a raw QP sends: the port's MTU, an Ethernet header and
 * one 802.1Q tag. */
static uint32_t raw_max_frame(const struct dpv_port *p)
{
	return (uint32_t)p->mtu + 18u;
}

int sw_raw_send_one(struct sw_qp *qp, struct dpv_send_wqe *w)
{
	struct dpv_port *p = qp->port;
	const struct dpv_sge *sge;
	const uint8_t *inl;
	uint32_t nsge, len;
	int st = sw_wqe_payload_checked(qp, w, &sge, &nsge, &inl, &len);
	if (st != IBV_WC_SUCCESS)
		return st;
	if (len < DPV_ETH_HLEN || len > raw_max_frame(p))
		return IBV_WC_LOC_LEN_ERR; /* not a frame the port can send */
	struct rte_mbuf *m = dpv_port_alloc_mbuf(p);
	if (!m) {
		DPV_STAT_ADD(p, drop[DPV_DROP_NOMEM], 1);
		return -ENOBUFS;
	}
	uint8_t *f = (uint8_t *)rte_pktmbuf_append(m, (uint16_t)len);
	if (!f) {
		rte_pktmbuf_free(m);
		return IBV_WC_LOC_LEN_ERR;
	}
	if (inl) {
		memcpy(f, inl, len);
	} else if (sw_sge_copy_out(qp->pd, sge, nsge, 0, f, len) != 0) {
		rte_pktmbuf_free(m);
		return IBV_WC_LOC_PROT_ERR; /* its MR was deregistered since the check */
	}
	sw_mem_flush();
	int r = dpv_port_xmit_raw(qp->qc, m);
	if (r == -ENOBUFS)
		return r;
	sw_ctr(qp, &qp->tx_pkts);
	sw_cnt(qp, DPV_CNT_SENT_PKTS);
	return IBV_WC_SUCCESS; /* sent, or lost on the way like on a wire */
}

/* The port layer's delivery (dpv_port_set_raw_handler): a copy of the frame
 * into the next receive WQE of the rule's QP. */
void sw_raw_rx(struct dpv_qctx *qc, const uint8_t *frame, uint32_t len, const struct dpv_raw_rule *r)
{
	struct sw_qp *qp = sw_qp_lookup(r->qpn);
	if (!qp || qp->type != IBV_QPT_RAW_PACKET || qp->port != qc->port)
		return; /* being destroyed: its rules go with it */
	if (qp->rss) {
		/* receive-side scaling: the hash picks the receive WQ (a raw
		 * QP of its own, ibv_create_wq) */
		union dpv_raw_keyw key;
		dpv_raw_key_extract(frame, len, &key);
		uint32_t h = dpv_raw_rss_hash(qp->rss, &key);
		qp = sw_qp_lookup(qp->rss->wqn[h & (qp->rss->n - 1)]);
		if (!qp || qp->type != IBV_QPT_RAW_PACKET || qp->port != qc->port || qp->rss)
			return;
	}
	struct sw_rwqe rw;
	sw_qp_lock(qp);
	enum ibv_qp_state st = sw_qp_state(qp);
	enum dpv_drop_reason why = DPV_DROP_NR;
	if (st != IBV_QPS_RTR && st != IBV_QPS_RTS && st != IBV_QPS_SQD && st != IBV_QPS_SQE)
		why = DPV_DROP_QP_STATE;
	else if (!sw_rq_pop(qp, &rw))
		why = DPV_DROP_NO_RECV_WQE; /* as a NIC with an empty RQ: dropped */
	if (why != DPV_DROP_NR) {
		sw_qp_unlock(qp);
		DPV_STAT_ADD(qc->port, drop[why], 1);
		sw_ctr(qp, &qp->rx_drops);
		return;
	}
	struct dpv_cqe e = {.wr_id = rw.wr_id, .opcode = IBV_WC_RECV, .qp_num = qp->qpn, .byte_len = len,
			    .flow_tag = (r->flags & DPV_RAW_F_TAG) ? r->tag : 0};
	int s = sw_sge_check(rw.pd, rw.sge, rw.num_sge, IBV_ACCESS_LOCAL_WRITE);
	if (s == IBV_WC_SUCCESS && sw_sge_total(rw.sge, rw.num_sge) < len)
		s = IBV_WC_LOC_LEN_ERR;
	if (s == IBV_WC_SUCCESS && sw_sge_copy_in(rw.pd, rw.sge, rw.num_sge, 0, frame, len))
		s = IBV_WC_LOC_PROT_ERR; /* the buffer was unmapped under its MR */
	e.status = (uint8_t)s;
	sw_ctr(qp, &qp->rx_pkts);
	sw_cnt(qp, DPV_CNT_RCVD_PKTS);
	if (!sw_cq_push(qp, qp->rcq, &e))
		sw_qp_cq_fatal(qp); /* the receive CQ overran */
	else if (s != IBV_WC_SUCCESS)
		sw_qp_to_error(qp);
	sw_qp_unlock(qp);
}

int sw_flow_create(void *p, const struct dpv_raw_rule *rule, uint32_t *handle)
{
	struct sw_qp *qp = p;
	if (qp->type != IBV_QPT_RAW_PACKET)
		return -EINVAL;
	struct dpv_raw_rule r = *rule;
	struct dpv_raw_tab *old;
	r.qpn = qp->qpn;
	int e = dpv_raw_rule_add(qp->port, &r, &old);
	if (e)
		return e;
	*handle = r.handle;
	if (old) {
		sw_quiesce(); /* no poll turn reads the old table any more */
		free(old);
	}
	return 0;
}

int sw_flow_destroy(void *p, uint32_t handle)
{
	struct sw_qp *qp = p;
	struct dpv_raw_tab *old;
	if (!handle)
		return -ENOENT;
	int e = dpv_raw_rule_del(qp->port, handle, qp->qpn, &old);
	if (e)
		return e;
	/* no frame is delivered for the rule once this returns */
	sw_quiesce();
	free(old);
	return 0;
}

struct dpv_raw_tab *sw_raw_qp_gone(struct sw_qp *qp)
{
	struct dpv_raw_tab *old = NULL;
	if (qp->type == IBV_QPT_RAW_PACKET)
		dpv_raw_rule_del(qp->port, 0, qp->qpn, &old);
	return old;
}
