/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Requester (RC, UC, XRC initiator): send WQEs -> request packets (IBA 9.4,
 * 9.7.1, as rxe_req.c).
 *
 * The engine fetches the WQEs the façade published in the SQ ring and keeps
 * their transport state beside them (struct sw_wqe). A WQE gets its PSN
 * range when it starts; a retry rewinds the send cursor to the WQE holding
 * the PSN to resend and restarts it at the packet of that PSN (go-back-N), so
 * retransmitted packets carry their original PSNs. At most cwnd request
 * packets are un-acknowledged (an AIMD window: halved on a loss, a quarter
 * after a timeout, grown as ACKs arrive, between SW_RC_WINDOW_MIN and
 * SW_RC_WINDOW: go-back-N must not resend more than a lossy path can carry)
 * and at most max_rd_atomic READ/ATOMIC requests are outstanding
 * (IBA 9.7.7.1). A full TX queue stops the requester at the packet that did
 * not fit; the timer scan runs it again (local back-pressure is not a loss
 * and costs no retry).
 */
#include <errno.h>
#include <string.h>
#include <endian.h>

#include "sw_copy.h"
#include "sw_loc.h"
#include "sw_log.h"
#include "sw_opcode.h"
#include "sw_qp_lock.h"
#include "sw_queue.h"

/* Opcodes of a message's packets by work-request opcode: only, first,
 * middle, last (IBA 9.2.1 table 35). READ and atomics are one packet. */
enum { POS_ONLY, POS_FIRST, POS_MIDDLE, POS_LAST };
static const uint8_t req_opcodes[][4] = {
	[IBV_WR_SEND] = { DPV_OPC_SEND_ONLY, DPV_OPC_SEND_FIRST, DPV_OPC_SEND_MIDDLE,
			  DPV_OPC_SEND_LAST },
	[IBV_WR_SEND_WITH_IMM] = { DPV_OPC_SEND_ONLY_IMM, DPV_OPC_SEND_FIRST, DPV_OPC_SEND_MIDDLE,
				   DPV_OPC_SEND_LAST_IMM },
	[IBV_WR_SEND_WITH_INV] = { DPV_OPC_SEND_ONLY_INV, DPV_OPC_SEND_FIRST, DPV_OPC_SEND_MIDDLE,
				   DPV_OPC_SEND_LAST_INV },
	[IBV_WR_RDMA_WRITE] = { DPV_OPC_WRITE_ONLY, DPV_OPC_WRITE_FIRST, DPV_OPC_WRITE_MIDDLE,
				DPV_OPC_WRITE_LAST },
	[IBV_WR_RDMA_WRITE_WITH_IMM] = { DPV_OPC_WRITE_ONLY_IMM, DPV_OPC_WRITE_FIRST,
					 DPV_OPC_WRITE_MIDDLE, DPV_OPC_WRITE_LAST_IMM },
	[IBV_WR_RDMA_READ] = { DPV_OPC_READ_REQUEST, DPV_OPC_READ_REQUEST, DPV_OPC_READ_REQUEST,
			       DPV_OPC_READ_REQUEST },
	[IBV_WR_ATOMIC_CMP_AND_SWP] = { DPV_OPC_CMP_SWAP, DPV_OPC_CMP_SWAP, DPV_OPC_CMP_SWAP,
					DPV_OPC_CMP_SWAP },
	[IBV_WR_ATOMIC_FETCH_AND_ADD] = { DPV_OPC_FETCH_ADD, DPV_OPC_FETCH_ADD, DPV_OPC_FETCH_ADD,
					  DPV_OPC_FETCH_ADD },
	[DPV_WR_FLUSH] = { DPV_OPC_FLUSH, DPV_OPC_FLUSH, DPV_OPC_FLUSH, DPV_OPC_FLUSH },
	[IBV_WR_ATOMIC_WRITE] = { DPV_OPC_ATOMIC_WRITE, DPV_OPC_ATOMIC_WRITE, DPV_OPC_ATOMIC_WRITE,
				  DPV_OPC_ATOMIC_WRITE },
};

/* Opcode of the packet at position (first, last) of a message, with the
 * QP's transport bits. */
static uint8_t req_opcode(const struct sw_qp *qp, uint8_t op, bool first, bool last)
{
	int pos = first && last ? POS_ONLY : first ? POS_FIRST : last ? POS_LAST : POS_MIDDLE;
	uint8_t o = DPV_OPC_SEND_ONLY;

	if (op < RTE_DIM(req_opcodes) && req_opcodes[op][POS_ONLY] != 0)
		o = req_opcodes[op][pos];
	return (uint8_t)(sw_qp_tr(qp) | o);
}

static bool window_full(const struct sw_qp *qp)
{
	return dpv_psn_cmp(qp->req.psn, dpv_psn_add(qp->comp.psn, qp->req.cwnd)) >= 0;
}

/* One request packet whatever the WQE's length (a FLUSH's length is the
 * remote range, an ATOMIC WRITE's 8 bytes always fit). */
static bool one_packet(uint8_t op)
{
	return sw_is_atomic(op) || sw_is_zero_resp(op);
}

/* Start a WQE: check local access (IBA 10.6.3) and give it its PSN range.
 * Returns a completion status (IBV_WC_SUCCESS to go on). */
static int wqe_start(struct sw_qp *qp, struct sw_wqe *s, struct dpv_send_wqe *w)
{
	uint32_t mtu = sw_qp_mtu(qp);
	/* READ and atomics write their local buffer */
	int access = w->opcode == IBV_WR_RDMA_READ || sw_is_atomic(w->opcode) ? IBV_ACCESS_LOCAL_WRITE : 0;
	if (!(w->flags & DPV_WQE_F_INLINE)) {
		if (w->num_sge > qp->cap.max_send_sge || w->num_sge * sizeof(struct dpv_sge) > qp->sq_stride - sizeof(*w))
			return IBV_WC_LOC_QP_OP_ERR; /* a malformed WQE: never trusted */
		int st = sw_sge_check(qp->pd, dpv_wqe_sge(w), w->num_sge, access);
		if (st != IBV_WC_SUCCESS)
			return st;
	}
	/* the façade posts 8-byte ATOMIC WRITEs and opcodes of the QP's type
	 * only (a ring another process writes may hold anything) */
	if ((w->opcode == IBV_WR_ATOMIC_WRITE && w->length != 8) ||
	    !dpv_opcode_valid(req_opcode(qp, w->opcode, true, true)))
		return IBV_WC_LOC_QP_OP_ERR;
	s->npkts = one_packet(w->opcode) ? 1 : w->length ? (w->length + mtu - 1) / mtu : 1;
	s->first_psn = qp->req.psn;
	s->last_psn = dpv_psn_add(s->first_psn, s->npkts - 1);
	s->next_psn = s->first_psn;
	s->next_off = 0;
	s->read_recv = 0;
	s->state = WQE_SENDING;
	return IBV_WC_SUCCESS;
}

/* UC: a WQE completes once it is sent (no acknowledgements, IBA 9.8.4). */
static void uc_complete(struct sw_qp *qp, struct sw_wqe *s)
{
	s->state = WQE_PENDING;
	while (qp->req.sq_head != qp->req.sq_cur && sw_sq_state(qp, qp->req.sq_head)->state == WQE_PENDING)
		sw_comp_wqe_done(qp, qp->req.sq_head, IBV_WC_SUCCESS);
}

/* A send failed for a local reason: a full TX queue stops the requester
 * (the timer scan resumes it); anything else is a dropped packet, which
 * the transport recovers like a loss. Returns true to stop. */
static bool tx_stall(struct sw_qp *qp, int r)
{
	if (r != -ENOBUFS)
		return false;
	qp->req.tx_stalled = true;
	sw_qp_kick(qp);
	return true;
}

/* The READ request of a READ WQE, for its bytes [off, end). */
static int send_read(struct sw_qp *qp, struct sw_wqe *s, struct dpv_send_wqe *w, uint32_t off, uint32_t psn,
		     uint32_t len)
{
	struct dpv_pkt_build b;
	s->rd_chunk_end = off + len;
	sw_build_init(qp, &b, req_opcode(qp, w->opcode, true, true), psn);
	b.ackreq = true;
	b.xrc_srqn = w->remote_srqn;
	b.reth_va = w->remote_addr + off;
	b.reth_rkey = w->rkey;
	b.reth_len = len;
	return sw_xmit(qp, &b, SW_PD_CHECKED, NULL, 0, 0, 0, NULL);
}

/* READ: the request for what has not arrived. Part of the READ has arrived,
 * so the responder executed it and this is a duplicate: ask only for what
 * the window carries, the rest when that is in (a lossy path must not get
 * the whole remainder of a large READ again and again). A READ nothing of
 * which arrived is asked for whole: if its first request was lost the
 * responder executes this one and numbers its responses from this length
 * (IBA 9.7.4.1.4), which must match ours. */
static bool read_send(struct sw_qp *qp, struct sw_wqe *s, struct dpv_send_wqe *w)
{
	uint32_t left = w->length - s->next_off;
	if (s->next_off && left > qp->req.cwnd * sw_qp_mtu(qp))
		left = qp->req.cwnd * sw_qp_mtu(qp);
	int r = send_read(qp, s, w, s->next_off, s->next_psn, left);
	if (tx_stall(qp, r))
		return false;
	/* READ responses consume the PSNs of the request's range */
	qp->req.psn = dpv_psn_add(s->last_psn, 1);
	return true;
}

static bool atomic_send(struct sw_qp *qp, struct sw_wqe *s, struct dpv_send_wqe *w)
{
	struct dpv_pkt_build b;
	bool cas = w->opcode == IBV_WR_ATOMIC_CMP_AND_SWP;
	sw_build_init(qp, &b, req_opcode(qp, w->opcode, true, true), s->next_psn);
	b.ackreq = true;
	b.xrc_srqn = w->remote_srqn;
	b.atm_va = w->remote_addr;
	b.atm_rkey = w->rkey;
	b.atm_swap_add = cas ? w->atomic.swap : w->atomic.compare_add;
	b.atm_cmp = cas ? w->atomic.compare_add : 0;
	if (tx_stall(qp, sw_xmit(qp, &b, SW_PD_CHECKED, NULL, 0, 0, 0, NULL)))
		return false;
	qp->req.psn = dpv_psn_add(s->first_psn, 1);
	return true;
}

/* RDMA FLUSH (annex A19): FETH (placement type, selectivity level) and
 * RETH (the range), no payload; answered like an ATOMIC WRITE. */
static bool flush_send(struct sw_qp *qp, struct sw_wqe *s, struct dpv_send_wqe *w)
{
	struct dpv_pkt_build b;
	sw_build_init(qp, &b, req_opcode(qp, w->opcode, true, true), s->next_psn);
	b.ackreq = true;
	b.feth_plt = w->flush.type;
	b.feth_sel = w->flush.level;
	b.reth_va = w->remote_addr;
	b.reth_rkey = w->rkey;
	b.reth_len = w->length;
	if (tx_stall(qp, sw_xmit(qp, &b, SW_PD_CHECKED, NULL, 0, 0, 0, NULL)))
		return false;
	qp->req.psn = dpv_psn_add(s->first_psn, 1);
	return true;
}

/* What sending a WQE's next packets came to. */
enum { WQE_MORE = 0, WQE_SENT = 1, WQE_FAILED = -1 };

/* Send the next packets of a SEND/WRITE WQE: WQE_SENT when it is fully
 * sent, WQE_MORE when the window or the TX queue stops it, WQE_FAILED when
 * its memory was deregistered meanwhile (a retransmission, or a later
 * packet: every packet resolves its SGEs through their MR again, sw_copy.h)
 * and the WQE must fail with IBV_WC_LOC_PROT_ERR. Must hold the QP lock. */
static int msg_send_ra(struct sw_qp *qp, struct sw_wqe *s, struct dpv_send_wqe *w)
{
	uint32_t mtu = sw_qp_mtu(qp);
	bool uc = qp->type == IBV_QPT_UC;
	const struct dpv_sge *sge;
	const uint8_t *inl;
	uint32_t inl_len;
	uint32_t nsge = sw_wqe_payload(qp, w, &sge, &inl, &inl_len);
	for (;;) {
		if (!uc && window_full(qp))
			return WQE_MORE;
		struct dpv_pkt_build b;
		bool first = s->next_off == 0;
		uint32_t len = RTE_MIN(w->length - s->next_off, mtu);
		bool last = s->next_off + len >= w->length;
		uint32_t pkt_idx = (uint32_t)dpv_psn_cmp(s->next_psn, s->first_psn);
		sw_build_init(qp, &b, req_opcode(qp, w->opcode, first, last), s->next_psn);
		b.se = last && (w->flags & DPV_WQE_F_SOLICITED);
		b.xrc_srqn = w->remote_srqn;
		/* ask for an ACK at the end of a message, every SW_RC_ACKREQ_EVERY
		 * packets, and on the last packet the window allows (else a
		 * resent window of duplicates might draw no ACK at all) */
		bool win_last = !uc && dpv_psn_cmp(dpv_psn_add(s->next_psn, 1),
						   dpv_psn_add(qp->comp.psn, qp->req.cwnd)) >= 0;
		b.ackreq = !uc && (last || win_last || ((pkt_idx + 1) % SW_RC_ACKREQ_EVERY) == 0);
		if (first && (w->opcode == IBV_WR_RDMA_WRITE || w->opcode == IBV_WR_RDMA_WRITE_WITH_IMM ||
			      w->opcode == IBV_WR_ATOMIC_WRITE)) {
			b.reth_va = w->remote_addr;
			b.reth_rkey = w->rkey;
			b.reth_len = w->length;
		}
		b.immdt = be32toh(w->imm_data);
		b.ieth_rkey = w->inv_rkey;
		const uint8_t *flat = NULL;
		if (inl) {
			/* never past the slot, whatever the length field says now */
			len = s->next_off < inl_len ? RTE_MIN(len, inl_len - s->next_off) : 0;
			flat = inl + s->next_off;
		}
		int r = sw_xmit(qp, &b, qp->pd, sge, nsge, s->next_off, len, flat);
		if (r == -EACCES)
			return WQE_FAILED;
		if (tx_stall(qp, r))
			return WQE_MORE;
		s->next_off += len;
		s->next_psn = dpv_psn_add(s->next_psn, 1);
		qp->req.psn = s->next_psn;
		if (last)
			return WQE_SENT;
	}
}

/* One WQE's packets read its memory once per SW_RA_CAP bytes when that is
 * another process' (sw_mem.c read-ahead, for this call only). */
static int msg_send(struct sw_qp *qp, struct sw_wqe *s, struct dpv_send_wqe *w)
{
	sw_mem_ra_begin();
	int r = msg_send_ra(qp, s, w);
	sw_mem_ra_end();
	return r;
}

static int wqe_send(struct sw_qp *qp, struct sw_wqe *s, struct dpv_send_wqe *w)
{
	if (w->opcode == IBV_WR_RDMA_READ)
		return read_send(qp, s, w) ? WQE_SENT : WQE_MORE;
	if (sw_is_atomic(w->opcode))
		return atomic_send(qp, s, w) ? WQE_SENT : WQE_MORE;
	if (w->opcode == DPV_WR_FLUSH)
		return flush_send(qp, s, w) ? WQE_SENT : WQE_MORE;
	return msg_send(qp, s, w); /* SEND, WRITE, ATOMIC WRITE */
}

/* Ask for the next part of a READ fetched in parts after a loss (see
 * read_send): one request packet, the send cursor does not move. */
void sw_req_read_more(struct sw_qp *qp, struct sw_wqe *s, struct dpv_send_wqe *w)
{
	uint32_t mtu = sw_qp_mtu(qp);
	uint32_t left = RTE_MIN(w->length - s->read_recv, qp->req.cwnd * mtu);
	send_read(qp, s, w, s->read_recv, dpv_psn_add(s->first_psn, s->read_recv / mtu), left);
}

/* Give every WQE posted since the last run its engine state. */
void sw_req_fetch(struct sw_qp *qp)
{
	uint32_t pi = sw_sq_pi(qp);
	/* a producer index that moved backwards (another process writes it)
	 * brings nothing new, rather than 2^32 - n WQEs to walk */
	if (pi - qp->req.sq_head < qp->req.sq_fetched - qp->req.sq_head)
		return;
	for (; qp->req.sq_fetched != pi; qp->req.sq_fetched++)
		memset(sw_sq_state(qp, qp->req.sq_fetched), 0, sizeof(struct sw_wqe));
}

/* May the WQE at the cursor start now? (SQD starts nothing new; max_rd_atomic
 * and fences hold READ/atomics and fenced WQEs back, IBA 10.8.3.3.) */
static bool may_start(struct sw_qp *qp, struct dpv_send_wqe *w)
{
	if (sw_qp_state(qp) == IBV_QPS_SQD)
		return false;
	if ((w->flags & DPV_WQE_F_FENCE) && qp->req.rd_outstanding)
		return false;
	return !sw_is_rd_atomic(w->opcode) ||
	       qp->req.rd_outstanding < RTE_MAX((uint32_t)qp->attr.max_rd_atomic, 1u);
}

/* Hold requests until ARP/ND has answered rather than overflow the
 * neighbour's pending queue (a UC message would be lost). */
static bool path_ready(struct sw_qp *qp)
{
	if (qp->req.path_ok)
		return true;
	if (!dpv_neigh_ready(qp->qc, qp->attr.ah_attr.grh.dgid.raw)) {
		qp->req.neigh_wait = true;
		return false;
	}
	qp->req.path_ok = true;
	return true;
}

/* A memory window operation at the cursor (IBA 10.6.7.2): executed at
 * once, in the order of the send queue; it completes when every WQE before
 * it has (sw_comp_local). A refused one completes with
 * IBV_WC_MW_BIND_ERR ("memory management operation error", the IBA's
 * status of a failed bind or local invalidate; rxe reports a failed
 * invalidate as IBV_WC_LOC_QP_OP_ERR) and the QP goes to ERR, once the
 * WQEs before it have completed (as rxe's completer takes its WQE in
 * error in turn): the cursor stays on it meanwhile, nothing after it goes
 * out (local_failed). false: it failed. */
static bool local_run(struct sw_qp *qp, struct sw_wqe *s, struct dpv_send_wqe *w)
{
	enum ibv_wc_status st = w->opcode == IBV_WR_BIND_MW ? sw_mw_bind(qp, w)
				: sw_mw_invalidate(qp->pd, qp->uid, w->inv_rkey) ? IBV_WC_MW_BIND_ERR
				: IBV_WC_SUCCESS;
	s->local = true;
	s->local_st = (uint8_t)st;
	s->npkts = 0;
	s->first_psn = s->last_psn = dpv_psn_prev(qp->req.psn); /* an ACK of what precedes it covers it */
	s->state = WQE_PENDING;
	if (st != IBV_WC_SUCCESS)
		return false;
	qp->req.sq_cur++;
	sw_comp_local(qp);
	return true;
}

/* A refused window operation at the cursor: its error once it is the
 * oldest WQE (the QP goes to ERR). true: the requester stops here. */
static bool local_failed(struct sw_qp *qp, struct sw_wqe *s)
{
	if (qp->req.sq_head == qp->req.sq_cur)
		sw_comp_error(qp, qp->req.sq_cur, (enum ibv_wc_status)s->local_st);
	return true;
}

void sw_req_run(struct sw_qp *qp)
{
	enum ibv_qp_state st = sw_qp_state(qp);
	sw_req_fetch(qp);
	if (st == IBV_QPS_ERR) {
		sw_comp_flush_sq(qp); /* IBA 10.8.3.3: WRs posted in ERR are flushed */
		return;
	}
	/* in SQD, WQEs already started still go out (retries); nothing goes
	 * out once a CQE of the QP met a CQ in error (it goes to ERR at the
	 * caller's next safe point, sw_qp_cq_fatal) */
	if ((st != IBV_QPS_RTS && st != IBV_QPS_SQD) || qp->comp.rnr_deadline || unlikely(qp->cq_fatal))
		return;
	qp->req.tx_stalled = false;
	if (unlikely(qp->resp.rndv.phase) && sw_tm_rndv_busy(qp))
		return; /* a tag matching rendezvous has the send side (sw_tm_rndv.c) */
	if (qp->req.sq_cur != qp->req.sq_fetched && !path_ready(qp))
		return;
	bool uc = qp->type == IBV_QPT_UC;
	while (qp->req.sq_cur != qp->req.sq_fetched) {
		struct sw_wqe *s = sw_sq_state(qp, qp->req.sq_cur);
		struct dpv_send_wqe *w = sw_sq_wqe(qp, qp->req.sq_cur);
		if (s->local) {
			if (s->local_st && local_failed(qp, s))
				return;
			qp->req.sq_cur++; /* executed before a go-back rewound the cursor past it */
			continue;
		}
		if (s->state == WQE_POSTED && sw_is_local(w->opcode)) {
			if (!may_start(qp, w))
				break;
			if (!local_run(qp, s, w) && local_failed(qp, s))
				return;
			continue;
		}
		/* a READ asked again for its missing part is one request packet
		 * whatever PSNs its responses take: the window does not hold it */
		bool resume_rd = s->state == WQE_SENDING && sw_is_rd_atomic(w->opcode);
		if (!uc && !resume_rd && window_full(qp))
			break;
		if (s->state == WQE_POSTED) {
			if (!may_start(qp, w))
				break;
			int wc = wqe_start(qp, s, w);
			if (wc != IBV_WC_SUCCESS) {
				sw_comp_error(qp, qp->req.sq_cur, (enum ibv_wc_status)wc);
				return;
			}
			if (sw_is_rd_atomic(w->opcode)) {
				s->rd_counted = true;
				qp->req.rd_outstanding++;
			}
		}
		int done = wqe_send(qp, s, w);
		if (done == WQE_FAILED) {
			/* its MR was deregistered (IBA 10.6.3: a local protection
			 * error, as an RNIC whose key was invalidated) */
			sw_comp_error(qp, qp->req.sq_cur, IBV_WC_LOC_PROT_ERR);
			return;
		}
		/* the retransmission timer runs whenever requests are out */
		if (!uc && !qp->comp.timer_deadline)
			sw_timer_restart(qp);
		if (!uc && !qp->comp.probe_deadline)
			sw_timer_probe_restart(qp, true);
		if (done == WQE_MORE)
			break;
		qp->req.sq_cur++;
		if (uc) {
			uc_complete(qp, s);
			if (unlikely(qp->cq_fatal))
				break; /* the send CQ overran */
		} else {
			s->state = WQE_PENDING;
		}
	}
}

/* Rewind WQE i (already sent once) to resend from psn (or from its start). */
static void rewind_wqe(struct sw_qp *qp, struct sw_wqe *s, struct dpv_send_wqe *w, uint32_t psn, bool first)
{
	uint32_t mtu = sw_qp_mtu(qp);
	s->state = WQE_SENDING;
	if (w->opcode == IBV_WR_RDMA_READ) {
		/* re-read what has not arrived */
		s->next_off = s->read_recv;
		s->next_psn = dpv_psn_add(s->first_psn, s->read_recv / mtu);
	} else if (!first || one_packet(w->opcode)) {
		s->next_off = 0;
		s->next_psn = s->first_psn;
	} else {
		uint32_t k = (uint32_t)dpv_psn_cmp(psn, s->first_psn);
		s->next_off = k * mtu;
		s->next_psn = psn;
	}
}

/* Go back to psn (oldest PSN to resend). Must hold the QP lock. */
void sw_req_retry(struct sw_qp *qp, uint32_t psn, bool force, bool probe)
{
	struct sw_comp *c = &qp->comp;
	if (unlikely(qp->resp.rndv.phase >= SW_RNDV_READ)) {
		sw_tm_rndv_resend(qp); /* a tag matching rendezvous has the send side */
		return;
	}
	if (!force && c->retried && c->retry_psn == psn && c->retry_comp_psn == c->psn)
		return; /* this loss is being recovered already */
	c->retried = true;
	c->retry_psn = psn;
	c->retry_comp_psn = c->psn;
	/* multiplicative decrease: once per loss event */
	qp->req.cwnd = RTE_MAX(force ? qp->req.cwnd / 4 : qp->req.cwnd / 2, (uint32_t)SW_RC_WINDOW_MIN);
	bool found = false;
	for (uint32_t i = qp->req.sq_head; i != qp->req.sq_fetched; i++) {
		struct sw_wqe *s = sw_sq_state(qp, i);
		struct dpv_send_wqe *w = sw_sq_wqe(qp, i);
		if (s->state == WQE_POSTED)
			break; /* nothing after this was sent */
		if (s->state == WQE_DONE || s->local)
			continue; /* done, or a window operation executed already */
		if (!found && dpv_psn_cmp(psn, s->last_psn) > 0 && !sw_is_rd_atomic(w->opcode))
			continue; /* entirely acknowledged already */
		if (!found) {
			found = true;
			qp->req.sq_cur = i;
			if (dpv_psn_cmp(psn, s->first_psn) < 0)
				psn = s->first_psn;
			rewind_wqe(qp, s, w, psn, true);
			qp->req.psn = s->next_psn;
		} else {
			rewind_wqe(qp, s, w, psn, false);
		}
	}
	SW_DBG_QP(qp, "go back to %#x: %s, cur %u, psn %#x", psn, found ? "found" : "NOT FOUND", qp->req.sq_cur,
		  qp->req.psn);
	if (!found)
		return;
	sw_cnt(qp, probe ? DPV_CNT_PROBE : DPV_CNT_RETRY);
	if (!c->timer_deadline)
		sw_timer_restart(qp);
	sw_req_run(qp);
}
