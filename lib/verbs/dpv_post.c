/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Posting work requests: the producer side of the SQ, RQ and SRQ rings
 * (dpv_queue.h). A work request is checked, written as a WQE into the next
 * free slot, the producer index is published and the doorbell rung. Errors
 * found later, while the engine executes a WQE, become completion statuses.
 */
#include <errno.h>
#include <string.h>

#include "dpv_verbs.h"

static uint64_t dpv_sge_total64(const struct ibv_sge *sge, int n)
{
	uint64_t t = 0;
	for (int i = 0; i < n; i++)
		t += sge[i].length;
	return t;
}

uint32_t dpv_sge_total(const struct ibv_sge *sge, uint32_t n)
{
	uint64_t t = dpv_sge_total64(sge, (int)n);
	return t > UINT32_MAX ? UINT32_MAX : (uint32_t)t;
}

static bool is_atomic(enum ibv_wr_opcode op)
{
	return op == IBV_WR_ATOMIC_CMP_AND_SWP || op == IBV_WR_ATOMIC_FETCH_AND_ADD;
}

/* Memory window operations: executed by the engine, nothing on the wire. */
static bool is_local(enum ibv_wr_opcode op)
{
	return op == IBV_WR_BIND_MW || op == IBV_WR_LOCAL_INV;
}

/* How a WR list is posted: ibv_bind_mw's own bind (a type 1 window
 * allowed), ibv_wr_complete's batch (DPV_WR_FLUSH allowed). */
enum { POST_TYPE1 = 1, POST_EXT = 2 };

/* Is the opcode valid for the QP type (IBA 10.7.2.1)? RDMA FLUSH only
 * through ibv_wr_flush (ext): struct ibv_send_wr has no fields for it. */
static bool opcode_ok(enum ibv_qp_type t, enum ibv_wr_opcode op, bool ext)
{
	if (t == IBV_QPT_RAW_PACKET)
		return op == IBV_WR_SEND; /* a whole frame: nothing else to say */
	switch ((int)op) {
	case IBV_WR_SEND:
	case IBV_WR_SEND_WITH_IMM:
		return true;
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		return t != IBV_QPT_UD;
	case IBV_WR_SEND_WITH_INV:
	case IBV_WR_RDMA_READ:
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		return t == IBV_QPT_RC || t == IBV_QPT_XRC_SEND;
	case IBV_WR_BIND_MW:
	case IBV_WR_LOCAL_INV:
		return (t == IBV_QPT_RC || t == IBV_QPT_UC || t == IBV_QPT_XRC_SEND) && dpv_core_has_mw();
	case IBV_WR_ATOMIC_WRITE: /* IBA 1.5 annex A19: RC only (as Linux) */
		return t == IBV_QPT_RC;
	case DPV_WR_FLUSH:
		return t == IBV_QPT_RC && ext;
	default:
		return false;
	}
}

/* A FLUSH from ibv_wr_flush (dpv_qpex.c) carries its length, placement
 * type and selectivity level in wr.atomic (compare_add: length; swap: type
 * | level << 8): 0 or EINVAL. */
static int check_flush(const struct ibv_send_wr *wr)
{
	uint64_t type = wr->wr.atomic.swap & 0xff, level = wr->wr.atomic.swap >> 8;
	if (wr->num_sge || !type || (type & ~(uint64_t)(DPV_FLUSH_GLOBAL | DPV_FLUSH_PERSISTENT)) ||
	    level > DPV_FLUSH_MR || wr->wr.atomic.compare_add > DPV_MAX_MSG_SZ)
		return EINVAL;
	return 0;
}

/* A memory window operation: no SGEs (the list is ignored), a window of
 * the QP's context (type 2 unless it is ibv_bind_mw's own), an MR of it. */
static int check_local_wr(struct dpv_qp *qp, const struct ibv_send_wr *wr, bool type1)
{
	if (wr->opcode == IBV_WR_LOCAL_INV)
		return 0;
	const struct ibv_mw *mw = wr->bind_mw.mw;
	const struct ibv_mr *mr = wr->bind_mw.bind_info.mr;
	struct ibv_context *c = dqp_ib(qp)->context;
	if (!mw || mw->context != c || (mw->type != IBV_MW_TYPE_2 && !type1) || (mr && mr->context != c))
		return EINVAL;
	return 0;
}

/* 0 or EINVAL: what can be checked before the WR is queued. */
static int check_send_wr(struct dpv_qp *qp, const struct ibv_send_wr *wr, uint32_t *len, unsigned int how)
{
	if (!opcode_ok(qp->type, wr->opcode, how & POST_EXT))
		return EINVAL;
	if (is_local(wr->opcode)) {
		*len = 0;
		return check_local_wr(qp, wr, how & POST_TYPE1);
	}
	if ((int)wr->opcode == DPV_WR_FLUSH) {
		*len = (uint32_t)wr->wr.atomic.compare_add;
		return check_flush(wr);
	}
	if (wr->num_sge < 0 || (uint32_t)wr->num_sge > qp->cap.max_send_sge || (wr->num_sge && !wr->sg_list))
		return EINVAL;
	uint64_t total = wr->num_sge == 1 ? wr->sg_list[0].length : dpv_sge_total64(wr->sg_list, wr->num_sge);
	if (total > DPV_MAX_MSG_SZ)
		return EINVAL;
	*len = (uint32_t)total;
	/* IBA 9.4.5: an atomic has one 8-byte local buffer and an 8-byte
	 * aligned remote address */
	if (is_atomic(wr->opcode) &&
	    (wr->num_sge != 1 || wr->sg_list[0].length != 8 || (wr->wr.atomic.remote_addr & 7)))
		return EINVAL;
	/* annex A19: an ATOMIC WRITE writes 8 bytes (inline: in the WQE's
	 * control part, whatever max_inline_data is); the remote address is
	 * checked by the responder (an unaligned one: IBV_WC_REM_INV_REQ_ERR) */
	bool aw = wr->opcode == IBV_WR_ATOMIC_WRITE;
	if (aw && total != 8)
		return EINVAL;
	if ((wr->send_flags & IBV_SEND_INLINE) &&
	    ((total > qp->cap.max_inline_data && !aw) || is_atomic(wr->opcode) || wr->opcode == IBV_WR_RDMA_READ))
		return EINVAL;
	if (qp->type == IBV_QPT_UD &&
	    (!wr->wr.ud.ah || wr->wr.ud.ah->context != dqp_ib(qp)->context ||
	     to_dah(wr->wr.ud.ah)->dev != qp->ctx->dev))
		return EINVAL;
	return 0;
}

/* The WQE of a memory window operation (doc/queues.md, section 2). */
static void local_wqe_write(struct dpv_send_wqe *w, const struct ibv_send_wr *wr)
{
	w->length = 0;
	w->num_sge = 0;
	w->imm_data = 0;
	w->remote_srqn = 0;
	w->bind.length = 0;
	w->bind.mr_lkey = 0;
	w->bind.access = 0;
	if (wr->opcode == IBV_WR_LOCAL_INV) {
		w->inv_rkey = wr->invalidate_rkey;
		w->rkey = 0;
		w->remote_addr = 0;
		return;
	}
	const struct ibv_mw_bind_info *bi = &wr->bind_mw.bind_info;
	w->inv_rkey = to_dmw(wr->bind_mw.mw)->index << 8; /* the window: the engine names it by index */
	w->rkey = wr->bind_mw.rkey;
	w->remote_addr = bi->addr;
	w->bind.length = bi->length;
	w->bind.mr_lkey = bi->mr ? bi->mr->lkey : 0;
	w->bind.access = bi->mw_access_flags;
}

/* Write wr into the SQ slot at index sq_pi. Must hold qp->lock. */
static void wqe_write(struct dpv_qp *qp, const struct ibv_send_wr *wr, uint32_t len)
{
	struct dpv_send_wqe *w = dpv_ring_entry(qp->sq, qp->sq_pi);
	w->wr_id = wr->wr_id;
	w->opcode = (uint8_t)wr->opcode;
	w->flags = ((wr->send_flags & IBV_SEND_SIGNALED) || qp->sq_sig_all ? DPV_WQE_F_SIGNALED : 0) |
		   (wr->send_flags & IBV_SEND_SOLICITED ? DPV_WQE_F_SOLICITED : 0) |
		   (wr->send_flags & IBV_SEND_FENCE ? DPV_WQE_F_FENCE : 0);
	if (is_local(wr->opcode)) {
		local_wqe_write(w, wr);
		return;
	}
	w->length = len;
	w->imm_data = wr->opcode == IBV_WR_SEND_WITH_IMM || wr->opcode == IBV_WR_RDMA_WRITE_WITH_IMM
			      ? wr->imm_data : 0;
	w->inv_rkey = wr->opcode == IBV_WR_SEND_WITH_INV ? wr->invalidate_rkey : 0;
	w->remote_srqn = qp->type == IBV_QPT_XRC_SEND ? wr->qp_type.xrc.remote_srqn & DPV_QPN_MASK : 0;
	if (qp->type == IBV_QPT_UD) {
		w->ud.ah = to_dah(wr->wr.ud.ah)->handle;
		w->ud.remote_qpn = wr->wr.ud.remote_qpn & DPV_QPN_MASK;
		w->ud.remote_qkey = wr->wr.ud.remote_qkey;
		w->remote_addr = 0;
		w->rkey = 0;
	} else if (is_atomic(wr->opcode)) {
		w->remote_addr = wr->wr.atomic.remote_addr;
		w->rkey = wr->wr.atomic.rkey;
		w->atomic.compare_add = wr->wr.atomic.compare_add;
		w->atomic.swap = wr->wr.atomic.swap;
	} else if ((int)wr->opcode == DPV_WR_FLUSH) {
		w->remote_addr = wr->wr.atomic.remote_addr;
		w->rkey = wr->wr.atomic.rkey;
		memset(&w->flush, 0, sizeof(w->flush));
		w->flush.type = (uint8_t)wr->wr.atomic.swap;
		w->flush.level = (uint8_t)(wr->wr.atomic.swap >> 8);
	} else {
		w->remote_addr = wr->wr.rdma.remote_addr;
		w->rkey = wr->wr.rdma.rkey;
	}
	if (wr->send_flags & IBV_SEND_INLINE) {
		uint8_t *d = wr->opcode == IBV_WR_ATOMIC_WRITE ? (uint8_t *)&w->atomic.compare_add : dpv_wqe_inline(w);
		for (int i = 0; i < wr->num_sge; i++) {
			memcpy(d, (const void *)(uintptr_t)wr->sg_list[i].addr, wr->sg_list[i].length);
			d += wr->sg_list[i].length;
		}
		w->flags |= DPV_WQE_F_INLINE;
		w->num_sge = 0;
	} else {
		if (wr->num_sge)
			memcpy(dpv_wqe_sge(w), wr->sg_list, (size_t)wr->num_sge * sizeof(struct dpv_sge));
		w->num_sge = (uint16_t)wr->num_sge;
	}
}

/* States a send may be posted in: UD RTS/SQE/ERR, connected RTS/SQD/SQE/ERR
 * (in ERR and SQE the engine completes the WRs with IBV_WC_WR_FLUSH_ERR). */
static bool send_state_ok(const struct dpv_qp *qp)
{
	switch (qp->state) {
	case IBV_QPS_RTS:
	case IBV_QPS_ERR:
	case IBV_QPS_SQE:
		return true;
	case IBV_QPS_SQD:
		return qp->type != IBV_QPT_UD && qp->type != IBV_QPT_RAW_PACKET;
	default:
		return false;
	}
}

/**
 * post_send (ibv_post_send): RETURN VALUE: 0, or an errno value with *bad_wr
 * set to the first WR not posted: EINVAL (QP not in RTS/SQD (UD: RTS) or an
 * error state, an XRC target QP, more SGEs than max_send_sge, inline data
 * above max_inline_data or with READ/atomics, opcode not valid for the QP
 * type, an atomic that is not one 8-byte SGE with an 8-byte aligned remote
 * address, an ATOMIC WRITE (RC only) of other than 8 bytes, a FLUSH (only
 * through ibv_wr_flush), a message above 2 GiB, NULL or foreign AH, NULL wr; BIND_MW
 * with a NULL window, a type 1 window or a window or MR of another
 * context), ENOMEM (send queue full: max_send_wr WRs whose completions, or
 * a later WR's completion, were not polled yet). WRs posted in ERR or SQE
 * complete with IBV_WC_WR_FLUSH_ERR. Local errors found while executing a
 * WR (bad lkey, an lkey of another PD, a UD message longer than the path
 * MTU, a bind or an invalidation the window's rules refuse: dpv_mw.c,
 * drivers/sw/sw_mw.c) complete it with an error status; an RC QP then
 * moves to ERR, a UD QP to SQE.
 */
static int post_send(struct ibv_qp *ib, struct ibv_send_wr *wr, struct ibv_send_wr **bad, unsigned int how)
{
	struct dpv_qp *qp = to_dqp(ib);
	int ret = 0;
	uint32_t posted = 0;
	if (!wr || !qp->sq) {
		if (bad)
			*bad = wr; /* XRC target: no send queue */
		return EINVAL;
	}
	if (!qp->lockless)
		rte_spinlock_lock(&qp->lock);
	uint32_t retired = atomic_load_explicit(&qp->sq_retired, memory_order_acquire);
	for (; wr; wr = wr->next) {
		uint32_t len;
		if (!send_state_ok(qp) || (ret = check_send_wr(qp, wr, &len, how)) != 0) {
			ret = EINVAL;
			break;
		}
		if (qp->sq_pi - retired >= qp->cap.max_send_wr) {
			ret = ENOMEM;
			break;
		}
		wqe_write(qp, wr, len);
		qp->sq_pi++;
		posted++;
	}
	if (posted)
		atomic_store_explicit(&qp->sq->pi, qp->sq_pi, memory_order_release);
	if (!qp->lockless)
		rte_spinlock_unlock(&qp->lock);
	if (posted)
		ctx_ops(ib->context)->sq_doorbell(qp->drv);
	if (ret && bad)
		*bad = wr;
	return ret;
}

int dpv_post_send(struct ibv_qp *ib, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	return post_send(ib, wr, bad, 0);
}

int dpv_post_send_ext(struct ibv_qp *ib, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	return post_send(ib, wr, bad, POST_EXT);
}

int dpv_post_bind_mw(struct ibv_qp *ib, struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad = NULL;
	wr->next = NULL;
	return post_send(ib, wr, &bad, POST_TYPE1);
}

/* Write one receive WR at *pi of ring. 0, EINVAL or ENOMEM. */
static int rwqe_write(struct dpv_ring_hdr *ring, uint32_t *pi, uint32_t max_sge, const struct ibv_recv_wr *wr)
{
	if (wr->num_sge < 0 || (uint32_t)wr->num_sge > max_sge || (wr->num_sge && !wr->sg_list))
		return EINVAL;
	if (*pi - atomic_load_explicit(&ring->ci, memory_order_acquire) >= ring->size)
		return ENOMEM;
	struct dpv_recv_wqe *w = dpv_ring_entry(ring, *pi);
	w->wr_id = wr->wr_id;
	w->num_sge = (uint32_t)wr->num_sge;
	if (wr->num_sge)
		memcpy(w->sge, wr->sg_list, (size_t)wr->num_sge * sizeof(struct dpv_sge));
	(*pi)++;
	return 0;
}

/**
 * post_recv (ibv_post_recv): RETURN VALUE: 0, or an errno value with *bad_wr
 * set: EINVAL (QP in RESET, QP attached to an SRQ or without a receive
 * queue, more SGEs than max_recv_sge), ENOMEM (receive queue full). In the
 * error state the WRs complete with IBV_WC_WR_FLUSH_ERR.
 */
int dpv_post_recv(struct ibv_qp *ib, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	struct dpv_qp *qp = to_dqp(ib);
	int ret = 0;
	if (!wr || !qp->rq || qp->state == IBV_QPS_RESET) {
		if (bad)
			*bad = wr; /* SRQ, XRC QPs and RESET take no receive WRs */
		return EINVAL;
	}
	if (!qp->lockless)
		rte_spinlock_lock(&qp->rq_lock);
	uint32_t pi0 = qp->rq_pi;
	for (; wr; wr = wr->next)
		if ((ret = rwqe_write(qp->rq, &qp->rq_pi, qp->cap.max_recv_sge, wr)) != 0)
			break;
	if (qp->rq_pi != pi0)
		atomic_store_explicit(&qp->rq->pi, qp->rq_pi, memory_order_release);
	if (!qp->lockless)
		rte_spinlock_unlock(&qp->rq_lock);
	if (qp->rq_pi != pi0)
		ctx_ops(ib->context)->rq_doorbell(qp->drv);
	if (ret && bad)
		*bad = wr;
	return ret;
}

/**
 * post_srq_recv (ibv_post_srq_recv): RETURN VALUE: 0, or an errno value with
 * *bad_recv_wr set: EINVAL (more SGEs than max_sge, NULL wr), ENOMEM (SRQ
 * full).
 */
int dpv_post_srq_recv(struct ibv_srq *ib, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	struct dpv_srq *s = to_dsrq(ib);
	int ret = 0;
	if (!wr)
		return EINVAL;
	rte_spinlock_lock(&s->lock);
	uint32_t pi0 = s->pi;
	for (; wr; wr = wr->next)
		if ((ret = rwqe_write(s->ring, &s->pi, s->max_sge, wr)) != 0)
			break;
	if (s->pi != pi0)
		atomic_store_explicit(&s->ring->pi, s->pi, memory_order_release);
	rte_spinlock_unlock(&s->lock);
	if (ret && bad)
		*bad = wr;
	return ret;
}
