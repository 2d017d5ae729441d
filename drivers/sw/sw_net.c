/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Packets and memory of the software engine: building a QP's RoCEv2 frames
 * (as rxe_net.c and rxe_hdr.h), handing them to the port, and the engine's
 * "DMA": checking SGEs against registered memory and copying between
 * packets and the application's buffers.
 */
#include <errno.h>
#include <string.h>

#include <rte_mbuf.h>

#include "sw_copy.h"
#include "sw_loc.h"
#include "sw_qp_lock.h"

/* UDP source port of a flow: the flow label mapping when the address vector
 * has one (IBA A17.4.5.1, rdma-core ibv_flow_label_to_udp_sport), else
 * 0xC000 + entropy from the QPNs (as rxe hashes the QPN). */
uint16_t sw_udp_sport(uint32_t sqpn, uint32_t dqpn, uint32_t flow_label)
{
	if (flow_label)
		return ibv_flow_label_to_udp_sport(flow_label);
	uint32_t h = sqpn * 0x9e3779b1u ^ dqpn;
	h ^= h >> 16;
	return (uint16_t)(0xc000 | (h & 0x3fff));
}

/* The headers of a packet of this connected QP to its peer. */
void sw_build_init(struct sw_qp *qp, struct dpv_pkt_build *b, uint8_t opcode, uint32_t psn)
{
	struct dpv_port *p = qp->port;
	const struct ibv_ah_attr *av = &qp->attr.ah_attr;
	struct dpv_gid_entry sg;
	memset(b, 0, sizeof(*b));
	memcpy(b->src_mac, p->mac, DPV_MAC_LEN);
	if (dpv_port_gid_get(p, av->grh.sgid_index, &sg))
		memcpy(b->sgid, sg.gid, DPV_GID_LEN);
	memcpy(b->dgid, av->grh.dgid.raw, DPV_GID_LEN);
	b->ip_ver = dpv_gid_is_v4mapped(b->dgid) ? 4 : 6;
	b->tclass = av->grh.traffic_class;
	b->hop_limit = av->grh.hop_limit ? av->grh.hop_limit : DPV_DEFAULT_HOP_LIMIT;
	b->flow_label = av->grh.flow_label;
	b->udp_sport = sw_udp_sport(qp->qpn, qp->attr.dest_qp_num, av->grh.flow_label);
	b->opcode = opcode;
	b->pkey = DPV_DEFAULT_PKEY;
	b->dqpn = qp->attr.dest_qp_num;
	b->psn = psn & DPV_PSN_MASK;
}

/* A frame of b's headers with room for len payload bytes (*poff: where). */
static int frame_alloc(struct dpv_port *p, const struct dpv_pkt_build *b, uint32_t len, struct rte_mbuf **mp,
		       uint8_t **f, uint32_t *flen, uint32_t *poff)
{
	*flen = dpv_pkt_frame_len(b->opcode, b->ip_ver, len);
	if (!*flen)
		return -EINVAL; /* no such opcode for this transport: never built */
	struct rte_mbuf *m = dpv_port_alloc_mbuf(p);
	if (!m) {
		DPV_STAT_ADD(p, drop[DPV_DROP_NOMEM], 1);
		return -ENOBUFS; /* the pool is empty for now: try again later */
	}
	*f = (uint8_t *)rte_pktmbuf_append(m, (uint16_t)*flen);
	if (!*f) {
		rte_pktmbuf_free(m);
		return -EMSGSIZE;
	}
	*poff = dpv_pkt_build_hdrs(*f, b, len);
	*mp = m;
	return 0;
}

/* The ICRC (unless it stays in the process), then to the port. */
static int frame_send(struct dpv_qctx *qc, struct rte_mbuf *m, uint8_t *f, uint32_t flen, const uint8_t dgid[16])
{
	/* a frame for a local GID never leaves the process: no ICRC (the IPv4
	 * header checksum stays: UD receivers get the header in the GRH) */
	struct dpv_port *lp = dpv_port_loopback_dst(dgid);
	if (lp && dpv_lo_trusted_flag)
		m->ol_flags |= dpv_lo_trusted_flag;
	else
		dpv_pkt_finish(f, flen);
	return lp ? dpv_port_xmit_local(qc, lp, m)
		  : dpv_gid_is_mcast(dgid) ? dpv_port_xmit_mcast(qc, m, dgid) : dpv_port_xmit_remote(qc, m, dgid);
}

int sw_xmit(struct sw_qp *qp, struct dpv_pkt_build *b, uint32_t pd, const struct dpv_sge *sge, uint32_t nsge,
	    uint32_t off, uint32_t len, const void *flat)
{
	sw_mem_flush(); /* an ACK or response only after the data it covers is placed */
	uint8_t *f;
	uint32_t flen, poff;
	struct rte_mbuf *m;
	int e = frame_alloc(qp->port, b, len, &m, &f, &flen, &poff);
	if (e)
		return e;
	if (len) {
		if (flat) {
			memcpy(f + poff, flat, len);
		} else if (sw_sge_copy_out(pd, sge, nsge, off, f + poff, len) != 0) {
			rte_pktmbuf_free(m);
			return -EACCES;
		}
	}
	if (unlikely(qp->gsi_shared) && !sw_gsi_tx_ok(qp, b->dgid, f + poff, len)) {
		rte_pktmbuf_free(m); /* dpverbsd refused it: lost on the way */
		return 0;
	}
	int r = frame_send(qp->qc, m, f, flen, b->dgid);
	if (r == 0)
		sw_cnt(qp, DPV_CNT_SENT_PKTS);
	return r;
}

int sw_xmit_flat(struct dpv_qctx *qc, const struct dpv_pkt_build *b, const void *data, uint32_t len)
{
	uint8_t *f;
	uint32_t flen, poff;
	struct rte_mbuf *m;
	int e = frame_alloc(qc->port, b, len, &m, &f, &flen, &poff);
	if (e)
		return e;
	memcpy(f + poff, data, len);
	return frame_send(qc, m, f, flen, b->dgid);
}

uint32_t sw_sge_total(const struct dpv_sge *sge, uint32_t n)
{
	uint64_t t = 0;
	for (uint32_t i = 0; i < n; i++)
		t += sge[i].length;
	return t > UINT32_MAX ? UINT32_MAX : (uint32_t)t;
}

/* IBA 10.6.3 (local access): every SGE inside an MR of the same protection
 * domain that grants the access. */
int sw_sge_check(uint32_t pd, const struct dpv_sge *sge, uint32_t n, int access)
{
	for (uint32_t i = 0; i < n; i++) {
		if (!sge[i].length)
			continue;
		const struct sw_mr *mr = sw_mr_range(pd, sge[i].lkey, sge[i].addr, sge[i].length);
		if (!mr || mr->pd != pd || (mr->access & access) != access)
			return IBV_WC_LOC_PROT_ERR;
	}
	return IBV_WC_SUCCESS;
}

uint32_t sw_wqe_payload(const struct sw_qp *qp, struct dpv_send_wqe *w, const struct dpv_sge **sge,
			const uint8_t **inl, uint32_t *inl_len)
{
	*sge = dpv_wqe_sge(w);
	if ((w->flags & DPV_WQE_F_INLINE) && w->opcode == IBV_WR_ATOMIC_WRITE) {
		/* its 8 bytes are in the control part (dpv_queue.h) */
		*inl = (const uint8_t *)&w->atomic.compare_add;
		*inl_len = RTE_MIN(w->length, (uint32_t)sizeof(w->atomic.compare_add));
		return 0;
	}
	if (w->flags & DPV_WQE_F_INLINE) {
		*inl = dpv_wqe_inline(w);
		*inl_len = RTE_MIN(w->length, qp->sq_stride - (uint32_t)sizeof(*w));
		return 0;
	}
	*inl = NULL;
	*inl_len = 0;
	return RTE_MIN((uint32_t)w->num_sge, qp->cap.max_send_sge);
}

int sw_wqe_payload_checked(const struct sw_qp *qp, struct dpv_send_wqe *w, const struct dpv_sge **sge,
			   uint32_t *nsge, const uint8_t **inl, uint32_t *len)
{
	uint32_t inl_len;
	*nsge = sw_wqe_payload(qp, w, sge, inl, &inl_len);
	*len = *inl ? inl_len : w->length; /* read once */
	if (*inl)
		return IBV_WC_SUCCESS;
	if (w->num_sge > *nsge)
		return IBV_WC_LOC_QP_OP_ERR;
	return sw_sge_check(qp->pd, *sge, *nsge, 0);
}
