/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * RC/UC requester: send WQEs -> request packets (IBA 9.4, 9.7.1).
 *
 * WQEs get their PSN range when first started; a retry rewinds the send
 * cursor to the WQE holding the PSN to resend and restarts it at the packet
 * of that PSN (go-back-N), so retransmitted packets carry their original
 * PSNs. At most cwnd request packets are un-acknowledged (an AIMD window:
 * halved on a loss, a quarter after a timeout, grown as ACKs arrive, between
 * DPV_RC_WINDOW_MIN and DPV_RC_WINDOW: go-back-N must not resend more than
 * a lossy path can carry) and at most max_rd_atomic READ/ATOMIC requests are
 * outstanding.
 */
#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <endian.h>

#include <rte_cycles.h>

#include "dpv_rc.h"
#include "dpv_engine.h"
#include "dpverbs.h"

uint32_t dpv_qp_mtu(const struct dpv_qp *qp)
{
	uint8_t m = qp->attr.path_mtu;
	if (!m || m > qp->port->active_mtu)
		m = qp->port->active_mtu;
	return 128u << m;
}

static uint32_t pow2u(uint32_t v)
{
	uint32_t s = 1;
	while (s < v)
		s <<= 1;
	return s;
}

int dpv_rc_init(struct dpv_qp *qp, bool has_sq, struct dpv_bufs *bs)
{
	struct dpv_rc *rc = dpv_buf_alloc(qp->upd, bs, sizeof(*rc), 64, DPV_RES_QP_RC);
	if (!rc)
		return ENOMEM;
	if (!has_sq) {
		qp->rc = rc; /* XRC target: responder only */
		return 0;
	}
	rc->sq_size = pow2u(qp->cap.max_send_wr);
	rc->sq_wqe_size = (uint32_t)(sizeof(struct dpv_send_wqe) +
				     RTE_MAX(qp->cap.max_send_sge, 1u) * sizeof(struct ibv_sge) +
				     qp->cap.max_inline_data);
	rc->sq_wqe_size = (rc->sq_wqe_size + 7) & ~7u;
	rc->sq = dpv_buf_alloc(qp->upd, bs, (size_t)rc->sq_size * rc->sq_wqe_size, 64, DPV_RES_QP_SQ);
	if (!rc->sq)
		return ENOMEM; /* the caller frees what bs holds */
	qp->rc = rc;
	return 0;
}

void dpv_sge_copy_out(const struct ibv_sge *sge, uint32_t n, uint32_t off, void *dst, uint32_t len)
{
	uint8_t *d = dst;
	for (uint32_t i = 0; i < n && len; i++) {
		if (off >= sge[i].length) {
			off -= sge[i].length;
			continue;
		}
		uint32_t chunk = sge[i].length - off;
		if (chunk > len)
			chunk = len;
		memcpy(d, (const uint8_t *)(uintptr_t)sge[i].addr + off, chunk);
		d += chunk;
		len -= chunk;
		off = 0;
	}
}

void dpv_rc_build_init(struct dpv_qp *qp, struct dpv_pkt_build *b, uint8_t opcode, uint32_t psn)
{
	struct dpv_port *p = qp->port;
	const struct ibv_ah_attr *av = &qp->attr.ah_attr;
	memset(b, 0, sizeof(*b));
	memcpy(b->src_mac, p->mac, 6);
	memcpy(b->sgid, p->gids[av->grh.sgid_index].gid, 16);
	memcpy(b->dgid, av->grh.dgid.raw, 16);
	b->ip_ver = dpv_gid_is_v4mapped(b->dgid) ? 4 : 6;
	b->tclass = av->grh.traffic_class;
	b->hop_limit = av->grh.hop_limit ? av->grh.hop_limit : 64;
	b->flow_label = av->grh.flow_label;
	b->udp_sport = dpv_udp_sport(dqp_ib(qp)->qp_num, qp->attr.dest_qp_num, av->grh.flow_label);
	b->opcode = opcode;
	b->pkey = DPV_DEFAULT_PKEY;
	b->dqpn = qp->attr.dest_qp_num;
	b->psn = psn & 0xffffff;
}

int dpv_rc_xmit(struct dpv_qp *qp, struct dpv_pkt_build *b, const struct ibv_sge *sge, uint32_t nsge,
		uint32_t off, uint32_t len, const void *flat)
{
	struct dpv_port *p = qp->port;
	uint32_t flen = dpv_pkt_frame_len(b->opcode, b->ip_ver, len);
	struct rte_mbuf *m = dpv_port_alloc_mbuf(p);
	if (!m) {
		dpv_stat_add(&p->stats.drop[DPV_DROP_NOMEM], 1);
		return -ENOMEM;
	}
	uint8_t *f = (uint8_t *)rte_pktmbuf_append(m, (uint16_t)flen);
	if (!f) {
		rte_pktmbuf_free(m);
		return -EMSGSIZE;
	}
	uint32_t poff = dpv_pkt_build_hdrs(f, b, len);
	if (len) {
		if (flat)
			memcpy(f + poff, flat, len);
		else
			dpv_sge_copy_out(sge, nsge, off, f + poff, len);
	}
	dpv_pkt_finish(f, flen);
	dpv_qp_cnt(qp, DPV_CNT_SENT_PKTS);
	return dpv_port_xmit(qp->qc, m, b->dgid);
}

/* Opcode of the packet at position (first, last) of a WQE. IBA 9.2 table 35. */
static uint8_t req_opcode(const struct dpv_qp *qp, enum ibv_wr_opcode op, bool first, bool last)
{
	uint8_t tr = dpv_qp_tr(qp);
	uint8_t o;
	switch (op) {
	case IBV_WR_SEND:
		o = first && last ? DPV_OPC_SEND_ONLY : first ? DPV_OPC_SEND_FIRST
				     : last ? DPV_OPC_SEND_LAST : DPV_OPC_SEND_MIDDLE;
		break;
	case IBV_WR_SEND_WITH_IMM:
		o = first && last ? DPV_OPC_SEND_ONLY_IMM : first ? DPV_OPC_SEND_FIRST
				     : last ? DPV_OPC_SEND_LAST_IMM : DPV_OPC_SEND_MIDDLE;
		break;
	case IBV_WR_SEND_WITH_INV:
		o = first && last ? DPV_OPC_SEND_ONLY_INV : first ? DPV_OPC_SEND_FIRST
				     : last ? DPV_OPC_SEND_LAST_INV : DPV_OPC_SEND_MIDDLE;
		break;
	case IBV_WR_RDMA_WRITE:
		o = first && last ? DPV_OPC_WRITE_ONLY : first ? DPV_OPC_WRITE_FIRST
				     : last ? DPV_OPC_WRITE_LAST : DPV_OPC_WRITE_MIDDLE;
		break;
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		o = first && last ? DPV_OPC_WRITE_ONLY_IMM : first ? DPV_OPC_WRITE_FIRST
				     : last ? DPV_OPC_WRITE_LAST_IMM : DPV_OPC_WRITE_MIDDLE;
		break;
	case IBV_WR_RDMA_READ:
		o = DPV_OPC_READ_REQUEST;
		break;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
		o = DPV_OPC_CMP_SWAP;
		break;
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		o = DPV_OPC_FETCH_ADD;
		break;
	default:
		o = DPV_OPC_SEND_ONLY;
		break;
	}
	return (uint8_t)(tr | o);
}

static bool is_rd_atomic(enum ibv_wr_opcode op)
{
	return op == IBV_WR_RDMA_READ || op == IBV_WR_ATOMIC_CMP_AND_SWP ||
	       op == IBV_WR_ATOMIC_FETCH_AND_ADD;
}

static bool window_full(struct dpv_rc *rc)
{
	return psn_cmp(rc->req_psn, psn_add(rc->comp_psn, rc->cwnd)) >= 0;
}

/* Start a WQE: check local access and give it its PSN range. Returns a
 * completion status (IBV_WC_SUCCESS to go on). */
static int wqe_start(struct dpv_qp *qp, struct dpv_send_wqe *w)
{
	struct dpv_rc *rc = qp->rc;
	uint32_t mtu = dpv_qp_mtu(qp);
	int access = 0;
	if (w->opcode == IBV_WR_RDMA_READ)
		access = IBV_ACCESS_LOCAL_WRITE;
	if (w->opcode == IBV_WR_ATOMIC_CMP_AND_SWP || w->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD)
		access = IBV_ACCESS_LOCAL_WRITE;
	if (!(w->send_flags & IBV_SEND_INLINE)) {
		int st = dpv_sge_check(qp->pd, w->sge, w->num_sge, access);
		if (st != IBV_WC_SUCCESS)
			return st;
	}
	if (w->opcode == IBV_WR_ATOMIC_CMP_AND_SWP || w->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD)
		w->npkts = 1;
	else
		w->npkts = w->length ? (w->length + mtu - 1) / mtu : 1;
	w->first_psn = rc->req_psn;
	w->last_psn = psn_add(w->first_psn, w->npkts - 1);
	w->next_psn = w->first_psn;
	w->next_off = 0;
	w->read_recv = 0;
	w->state = WQE_SENDING;
	return IBV_WC_SUCCESS;
}

/* UC (and error paths): completion without an ACK. */
static void uc_complete(struct dpv_qp *qp, struct dpv_send_wqe *w)
{
	struct dpv_rc *rc = qp->rc;
	w->state = WQE_PENDING;
	/* UC WQEs complete in order once sent */
	while (rc->sq_head != rc->sq_cur) {
		struct dpv_send_wqe *h = sq_slot(rc, rc->sq_head);
		if (h->state != WQE_PENDING)
			break;
		dpv_comp_wqe_done(qp, h, IBV_WC_SUCCESS);
	}
}

/* Send the next packets of the WQE at sq_cur. Returns true when the WQE is
 * fully sent (cursor may advance). Must hold qp->lock. */
static bool wqe_send(struct dpv_qp *qp, struct dpv_send_wqe *w)
{
	struct dpv_rc *rc = qp->rc;
	uint32_t mtu = dpv_qp_mtu(qp);
	struct dpv_pkt_build b;
	bool uc = qp->type == IBV_QPT_UC;

	if (w->opcode == IBV_WR_RDMA_READ) {
		uint32_t left = w->length - w->next_off;
		/* Part of the READ has arrived, so the responder executed it and
		 * this is a duplicate: ask only for what the window carries, the
		 * rest when that is in (a lossy path must not get the whole
		 * remainder of a large READ again and again). A READ nothing of
		 * which arrived is asked for whole: if its first request was lost
		 * the responder executes this one and numbers its responses from
		 * this length (IBA 9.7.4.1.4), which must match ours. */
		if (w->next_off && left > rc->cwnd * mtu)
			left = rc->cwnd * mtu;
		w->rd_chunk_end = w->next_off + left;
		dpv_rc_build_init(qp, &b, req_opcode(qp, w->opcode, true, true), w->next_psn);
		b.ackreq = true;
		b.xrc_srqn = w->remote_srqn;
		b.reth_va = w->remote_addr + w->next_off;
		b.reth_rkey = w->rkey;
		b.reth_len = left;
		dpv_rc_xmit(qp, &b, NULL, 0, 0, 0, NULL);
		/* READ responses consume the PSNs of the request's range */
		rc->req_psn = psn_add(w->last_psn, 1);
		return true;
	}
	if (w->opcode == IBV_WR_ATOMIC_CMP_AND_SWP || w->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		dpv_rc_build_init(qp, &b, req_opcode(qp, w->opcode, true, true), w->next_psn);
		b.ackreq = true;
		b.xrc_srqn = w->remote_srqn;
		b.atm_va = w->remote_addr;
		b.atm_rkey = w->rkey;
		b.atm_swap_add = w->opcode == IBV_WR_ATOMIC_CMP_AND_SWP ? w->swap : w->compare_add;
		b.atm_cmp = w->opcode == IBV_WR_ATOMIC_CMP_AND_SWP ? w->compare_add : 0;
		dpv_rc_xmit(qp, &b, NULL, 0, 0, 0, NULL);
		rc->req_psn = psn_add(w->first_psn, 1);
		return true;
	}
	for (;;) {
		if (!uc && window_full(rc))
			return false;
		bool first = w->next_off == 0;
		uint32_t len = w->length - w->next_off;
		if (len > mtu)
			len = mtu;
		bool last = w->next_off + len >= w->length;
		uint32_t pkt_idx = (uint32_t)psn_cmp(w->next_psn, w->first_psn);
		dpv_rc_build_init(qp, &b, req_opcode(qp, w->opcode, first, last), w->next_psn);
		b.se = last && (w->send_flags & IBV_SEND_SOLICITED);
		b.xrc_srqn = w->remote_srqn;
		/* ask for an ACK at the end of a message, every DPV_RC_ACKREQ_EVERY
		 * packets, and on the last packet the window allows (else a
		 * resent window of duplicates might draw no ACK at all) */
		bool win_last = !uc && psn_cmp(psn_add(w->next_psn, 1), psn_add(rc->comp_psn, rc->cwnd)) >= 0;
		b.ackreq = !uc && (last || win_last || ((pkt_idx + 1) % DPV_RC_ACKREQ_EVERY) == 0);
		if (first && (w->opcode == IBV_WR_RDMA_WRITE || w->opcode == IBV_WR_RDMA_WRITE_WITH_IMM)) {
			b.reth_va = w->remote_addr;
			b.reth_rkey = w->rkey;
			b.reth_len = w->length;
		}
		b.immdt = be32toh(w->imm_data);
		b.ieth_rkey = w->inv_rkey;
		dpv_rc_xmit(qp, &b, w->sge, w->num_sge, w->next_off, len, NULL);
		w->next_off += len;
		w->next_psn = psn_add(w->next_psn, 1);
		rc->req_psn = w->next_psn;
		if (last)
			return true;
	}
}

/* Ask for the next part of a READ fetched in parts after a loss (see
 * wqe_send): one request packet, the send cursor does not move. */
void dpv_req_read_more(struct dpv_qp *qp, struct dpv_send_wqe *w)
{
	struct dpv_rc *rc = qp->rc;
	uint32_t mtu = dpv_qp_mtu(qp);
	struct dpv_pkt_build b;
	uint32_t left = w->length - w->read_recv;
	if (left > rc->cwnd * mtu)
		left = rc->cwnd * mtu;
	w->rd_chunk_end = w->read_recv + left;
	dpv_rc_build_init(qp, &b, req_opcode(qp, w->opcode, true, true), psn_add(w->first_psn, w->read_recv / mtu));
	b.ackreq = true;
	b.xrc_srqn = w->remote_srqn;
	b.reth_va = w->remote_addr + w->read_recv;
	b.reth_rkey = w->rkey;
	b.reth_len = left;
	dpv_rc_xmit(qp, &b, NULL, 0, 0, 0, NULL);
}

/* Must hold qp->lock. */
void dpv_req_run(struct dpv_qp *qp)
{
	struct dpv_rc *rc = qp->rc;
	/* in SQD, WQEs already started still go out (retries): only new ones
	 * wait (IBA 10.3.1: the SQ drains) */
	if (qp->state != IBV_QPS_RTS && qp->state != IBV_QPS_SQD)
		return;
	if (rc->rnr_deadline)
		return; /* waiting out an RNR NAK */
	if (!rc->path_ok && rc->sq_cur != rc->sq_tail) {
		/* hold requests until ARP/ND has answered rather than overflow
		 * the neighbour's pending queue (a UC message would be lost) */
		if (!dpv_neigh_ready(qp->qc, qp->attr.ah_attr.grh.dgid.raw)) {
			rc->neigh_wait = true;
			return;
		}
		rc->path_ok = true;
	}
	while (rc->sq_cur != rc->sq_tail) {
		struct dpv_send_wqe *w = sq_slot(rc, rc->sq_cur);
		/* a READ asked again for its missing part is one request packet
		 * whatever PSNs its responses take: the window does not hold it */
		bool resume_rd = w->state == WQE_SENDING && is_rd_atomic(w->opcode);
		if (qp->type != IBV_QPT_UC && !resume_rd && window_full(rc))
			break;
		if (w->state == WQE_POSTED) {
			if (qp->state == IBV_QPS_SQD)
				break;
			if (is_rd_atomic(w->opcode) &&
			    rc->rd_outstanding >= RTE_MAX(qp->attr.max_rd_atomic, (uint8_t)1))
				break;
			int st = wqe_start(qp, w);
			if (st != IBV_WC_SUCCESS) {
				dpv_rc_error(qp, w, (enum ibv_wc_status)st);
				return;
			}
			if (is_rd_atomic(w->opcode)) {
				w->rd_counted = true;
				rc->rd_outstanding++;
			}
		}
		bool done = wqe_send(qp, w);
		/* the retransmission timer runs whenever requests are out */
		if (qp->type != IBV_QPT_UC && !rc->timer_deadline)
			dpv_rc_timer_restart(qp);
		if (qp->type != IBV_QPT_UC && !rc->probe_deadline)
			dpv_rc_probe_restart(qp, true);
		if (!done)
			break;
		rc->sq_cur++;
		if (qp->type == IBV_QPT_UC) {
			uc_complete(qp, w);
			continue;
		}
		w->state = WQE_PENDING;
	}
}

/* Go back to psn (oldest PSN to resend). Must hold qp->lock. */
void dpv_req_retry(struct dpv_qp *qp, uint32_t psn, bool force, bool probe)
{
	struct dpv_rc *rc = qp->rc;
	if (!force && rc->retried && rc->retry_psn == psn && rc->retry_comp_psn == rc->comp_psn)
		return; /* this loss is being recovered already */
	rc->retried = true;
	rc->retry_psn = psn;
	rc->retry_comp_psn = rc->comp_psn;
	/* multiplicative decrease: once per loss event */
	rc->cwnd = RTE_MAX(force ? rc->cwnd / 4 : rc->cwnd / 2, (uint32_t)DPV_RC_WINDOW_MIN);
	uint32_t mtu = dpv_qp_mtu(qp);
	bool found = false;
	for (uint32_t i = rc->sq_head; i != rc->sq_tail; i++) {
		struct dpv_send_wqe *w = sq_slot(rc, i);
		if (w->state == WQE_POSTED)
			break; /* nothing after this was sent */
		if (w->state == WQE_DONE)
			continue;
		if (!found && psn_cmp(psn, w->last_psn) > 0 && !is_rd_atomic(w->opcode))
			continue; /* entirely acknowledged already */
		if (!found) {
			found = true;
			rc->sq_cur = i;
			if (psn_cmp(psn, w->first_psn) < 0)
				psn = w->first_psn;
			w->state = WQE_SENDING;
			if (w->opcode == IBV_WR_RDMA_READ) {
				/* re-read what has not arrived */
				w->next_off = w->read_recv;
				w->next_psn = psn_add(w->first_psn, w->read_recv / mtu);
			} else if (is_rd_atomic(w->opcode)) {
				w->next_off = 0;
				w->next_psn = w->first_psn;
			} else {
				uint32_t k = (uint32_t)psn_cmp(psn, w->first_psn);
				w->next_off = k * mtu;
				w->next_psn = psn;
			}
			rc->req_psn = w->next_psn;
		} else {
			w->state = WQE_SENDING;
			w->next_off = w->opcode == IBV_WR_RDMA_READ ? w->read_recv : 0;
			w->next_psn = w->opcode == IBV_WR_RDMA_READ
					      ? psn_add(w->first_psn, w->read_recv / mtu) : w->first_psn;
		}
	}
	if (dpv_trace_rc())
		fprintf(stderr, "dpverbs: qp %#x: go back to %#x: %s, cur %u, req_psn %#x\n", dqp_ib(qp)->qp_num, psn,
			found ? "found" : "NOT FOUND", rc->sq_cur, rc->req_psn);
	if (!found)
		return;
	dpv_qp_cnt(qp, probe ? DPV_CNT_PROBE : DPV_CNT_RETRY);
	if (!rc->timer_deadline)
		dpv_rc_timer_restart(qp);
	dpv_req_run(qp);
}

/* ---- posting ---- */

static int check_wr(struct dpv_qp *qp, const struct ibv_send_wr *wr)
{
	if (wr->num_sge < 0 || (uint32_t)wr->num_sge > qp->cap.max_send_sge || (wr->num_sge && !wr->sg_list))
		return EINVAL;
	uint64_t len = dpv_sge_total(wr->sg_list, (uint32_t)wr->num_sge);
	if (len > DPV_MAX_MSG_SZ)
		return EINVAL;
	switch (wr->opcode) {
	case IBV_WR_SEND:
	case IBV_WR_SEND_WITH_IMM:
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		break;
	case IBV_WR_SEND_WITH_INV:
	case IBV_WR_RDMA_READ:
		if (qp->type == IBV_QPT_UC)
			return EINVAL;
		break;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		if (qp->type == IBV_QPT_UC)
			return EINVAL;
		/* IBA 9.4.5: one 8-byte SGE, 8-byte aligned remote address */
		if (wr->num_sge != 1 || wr->sg_list[0].length != 8 || (wr->wr.atomic.remote_addr & 7))
			return EINVAL;
		break;
	default:
		return EINVAL;
	}
	if (wr->send_flags & IBV_SEND_INLINE) {
		if (len > qp->cap.max_inline_data || is_rd_atomic(wr->opcode))
			return EINVAL;
	}
	return 0;
}

/**
 * RC/UC post_send: RETURN VALUE 0, or an errno value with *bad set: EINVAL
 * (QP not in RTS/SQD, too many SGEs, inline data above max_inline_data or
 * with READ/atomics, opcode not valid for the QP type, atomic not one 8-byte
 * SGE or remote address not 8-byte aligned), ENOMEM (send queue full).
 * In the error state WRs complete with IBV_WC_WR_FLUSH_ERR.
 */
int dpv_rc_post_send(struct dpv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	struct dpv_rc *rc = qp->rc;
	int ret = 0;
	qp_lock(qp);
	for (; wr; wr = wr->next) {
		if (qp->state != IBV_QPS_RTS && qp->state != IBV_QPS_SQD && qp->state != IBV_QPS_ERR &&
		    qp->state != IBV_QPS_SQE) {
			ret = EINVAL;
			break;
		}
		ret = check_wr(qp, wr);
		if (ret)
			break;
		if (rc->sq_tail - rc->sq_head >= qp->cap.max_send_wr) {
			ret = ENOMEM;
			break;
		}
		struct dpv_send_wqe *w = sq_slot(rc, rc->sq_tail);
		memset(w, 0, sizeof(*w));
		w->wr_id = wr->wr_id;
		w->opcode = wr->opcode;
		w->send_flags = wr->send_flags;
		if (qp->sq_sig_all)
			w->send_flags |= IBV_SEND_SIGNALED;
		w->imm_data = wr->imm_data;
		w->inv_rkey = wr->opcode == IBV_WR_SEND_WITH_INV ? wr->invalidate_rkey : 0;
		w->remote_srqn = qp->type == IBV_QPT_XRC_SEND ? wr->qp_type.xrc.remote_srqn & 0xffffff : 0;
		if (is_rd_atomic(wr->opcode) && wr->opcode != IBV_WR_RDMA_READ) {
			w->remote_addr = wr->wr.atomic.remote_addr;
			w->rkey = wr->wr.atomic.rkey;
			w->compare_add = wr->wr.atomic.compare_add;
			w->swap = wr->wr.atomic.swap;
		} else {
			w->remote_addr = wr->wr.rdma.remote_addr;
			w->rkey = wr->wr.rdma.rkey;
		}
		w->length = dpv_sge_total(wr->sg_list, (uint32_t)wr->num_sge);
		if (wr->send_flags & IBV_SEND_INLINE) {
			uint8_t *data = (uint8_t *)&w->sge[RTE_MAX(qp->cap.max_send_sge, 1u)];
			dpv_sge_copy_out(wr->sg_list, (uint32_t)wr->num_sge, 0, data, w->length);
			w->sge[0].addr = (uintptr_t)data;
			w->sge[0].length = w->length;
			w->sge[0].lkey = 0;
			w->num_sge = 1;
		} else {
			if (wr->num_sge)
				memcpy(w->sge, wr->sg_list, (size_t)wr->num_sge * sizeof(struct ibv_sge));
			w->num_sge = (uint32_t)wr->num_sge;
		}
		w->state = WQE_POSTED;
		rc->sq_tail++;
		if (qp->state == IBV_QPS_ERR) {
			/* IBA 10.8.3.3: WRs posted in the error state are flushed */
			rc->sq_cur = rc->sq_tail;
			dpv_comp_wqe_done(qp, w, IBV_WC_WR_FLUSH_ERR);
		}
	}
	if (qp->state == IBV_QPS_RTS) {
		if (dpv_engine_lcore_mode() && !qp->lockless) {
			/* progress on the service lcore: ring its doorbell (the QPN,
			 * not the pointer: the QP may be gone when it is read) */
			if (!atomic_exchange(&rc->db_pending, true) &&
			    rte_ring_mp_enqueue(qp->qc->db_ring, (void *)(uintptr_t)dqp_ib(qp)->qp_num) != 0) {
				atomic_store(&rc->db_pending, false);
				dpv_req_run(qp); /* ring full: send from here */
			}
		} else {
			dpv_req_run(qp);
		}
	}
	qp_unlock(qp);
	if (ret && bad)
		*bad = wr;
	return ret;
}
