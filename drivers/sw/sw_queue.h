/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A QP's queues as the engine reads them: the send queue's slots (the
 * façade's ring, dpv_queue.h), their engine state (struct sw_wqe) and its
 * producer index, and the responder's output queue (sw_resp_q.c).
 */
#ifndef SW_QUEUE_H
#define SW_QUEUE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "sw_obj.h"

static inline struct dpv_send_wqe *sw_sq_wqe(struct sw_qp *qp, uint32_t i)
{
	return dpv_ring_slot(qp->sq, i, qp->sq_size, qp->sq_stride);
}
static inline struct sw_wqe *sw_sq_state(struct sw_qp *qp, uint32_t i)
{
	return &qp->wqe[i & (qp->sq_size - 1)];
}
/* The SQ producer index, never more than a ring ahead of the oldest WQE
 * (a producer in another process cannot make the engine loop for long). */
static inline uint32_t sw_sq_pi(struct sw_qp *qp)
{
	uint32_t pi = atomic_load_explicit(&qp->sq->pi, memory_order_acquire);
	return pi - qp->req.sq_head > qp->sq_size ? qp->req.sq_head + qp->sq_size : pi;
}

/* Responses wait in the QP's output queue (sw_resp_pump sends them). */
static inline bool sw_resp_pending(const struct sw_qp *qp)
{
	return qp->resp.q_head != qp->resp.q_tail;
}

#endif /* SW_QUEUE_H */
