/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Receive WQEs: the consumer side of RQ and SRQ rings. A receive WQE is
 * copied into the engine when a message needs it; the SRQ's consumer index
 * is shared by every QP using it (consumer lock), and taking a WQE below
 * the armed limit raises IBV_EVENT_SRQ_LIMIT_REACHED and disarms the limit
 * (IBA 10.2.9.3).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sw_loc.h"

void *sw_create_srq(void *dev, const struct dpv_srq_cfg *cfg)
{
	struct sw_srq *s = calloc(1, sizeof(*s));
	if (!s) {
		errno = ENOMEM;
		return NULL;
	}
	s->srqn = cfg->srqn;
	s->ring = cfg->ring;
	s->size = cfg->ring_size;
	s->stride = cfg->ring_stride;
	if (!s->size || (s->size & (s->size - 1)) ||
	    s->stride < sizeof(struct dpv_recv_wqe) + RTE_MAX(cfg->max_sge, 1u) * sizeof(struct dpv_sge)) {
		free(s);
		errno = EINVAL;
		return NULL;
	}
	s->pd = cfg->pd;
	s->xrcd = cfg->xrcd;
	s->cq = cfg->cq;
	s->max_sge = cfg->max_sge;
	s->owner = cfg->owner;
	rte_spinlock_init(&s->lock);
	int e = sw_tm_create(s, cfg);
	if (e) {
		free(s);
		errno = -e;
		return NULL;
	}
	if (sw_tab_srq_set(s->srqn, s) != 0) {
		sw_tm_destroy(s);
		free(s);
		errno = EINVAL;
		return NULL;
	}
	return s;
}

/* Out of the engine's table; no context still inside a receive that found
 * it (XRC target QPs look SRQs up by number). */
void sw_destroy_srq(void *p)
{
	struct sw_srq *s = p;
	sw_tab_srq_set(s->srqn, NULL);
	sw_quiesce();
	sw_tm_destroy(s);
	free(s);
}

/* Copy the WQE at index ci of ring into out; false if it is malformed (a
 * façade bug or a corrupted ring: its SGE count is checked, never trusted). */
static bool rwqe_copy(struct dpv_ring_hdr *ring, uint32_t size, uint32_t stride, uint32_t ci, uint32_t max_sge,
		      struct sw_rwqe *out)
{
	const struct dpv_recv_wqe *w = dpv_ring_slot(ring, ci, size, stride);
	out->wr_id = w->wr_id;
	out->num_sge = w->num_sge;
	if (out->num_sge > max_sge || out->num_sge > DPV_MAX_SGE_LIMIT)
		out->num_sge = 0;
	memcpy(out->sge, w->sge, out->num_sge * sizeof(struct dpv_sge));
	return true;
}

bool sw_srq_pop_locked(struct sw_srq *s, struct sw_rwqe *out, bool *limit_ev)
{
	uint32_t pi = atomic_load_explicit(&s->ring->pi, memory_order_acquire);
	if (pi == s->ci)
		return false;
	rwqe_copy(s->ring, s->size, s->stride, s->ci, s->max_sge, out);
	out->pd = s->pd;
	s->ci++;
	atomic_store_explicit(&s->ring->ci, s->ci, memory_order_release);
	uint32_t limit = atomic_load_explicit(&s->ring->limit, memory_order_acquire);
	if (limit && pi - s->ci < limit)
		*limit_ev = atomic_compare_exchange_strong(&s->ring->limit, &limit, 0); /* fires once */
	return true;
}

bool sw_srq_pop(struct sw_srq *s, struct sw_rwqe *out)
{
	bool limit_ev = false;
	rte_spinlock_lock(&s->lock);
	bool ok = sw_srq_pop_locked(s, out, &limit_ev);
	rte_spinlock_unlock(&s->lock);
	if (limit_ev)
		dpv_event_async(NULL, IBV_EVENT_SRQ_LIMIT_REACHED, s->srqn);
	return ok;
}

/* Must hold the QP lock. */
bool sw_rq_pop(struct sw_qp *qp, struct sw_rwqe *out)
{
	if (qp->srq)
		return sw_srq_pop(qp->srq, out);
	if (!qp->rq)
		return false;
	uint32_t pi = atomic_load_explicit(&qp->rq->pi, memory_order_acquire);
	if (pi == qp->rq_ci)
		return false;
	rwqe_copy(qp->rq, qp->rq_size, qp->rq_stride, qp->rq_ci, qp->cap.max_recv_sge, out);
	out->pd = qp->pd;
	qp->rq_ci++;
	atomic_store_explicit(&qp->rq->ci, qp->rq_ci, memory_order_release);
	return true;
}

/* IBA 10.3.1: in ERR, receive WQEs complete with IBV_WC_WR_FLUSH_ERR; an
 * SRQ's WQEs stay in the SRQ (IBA 10.2.9.5). At most a ring's worth per
 * call: the producer index is in memory another process writes, and one
 * far ahead must not keep the engine here for 2^32 WQEs. Must hold the QP
 * lock. */
void sw_rq_flush(struct sw_qp *qp)
{
	struct sw_rwqe w;
	if (qp->srq || !qp->rq)
		return;
	for (uint32_t n = 0; n < qp->rq_size && sw_rq_pop(qp, &w); n++) {
		struct dpv_cqe e = {.wr_id = w.wr_id, .status = IBV_WC_WR_FLUSH_ERR, .opcode = IBV_WC_RECV,
				    .qp_num = qp->qpn};
		sw_cq_push(qp, qp->rcq, &e); /* in ERR: a CQ in error just takes nothing */
	}
}
