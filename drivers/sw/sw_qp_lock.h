/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A QP's lock, and what is read or counted beside it: the QP's state (read
 * without the lock) and its counters (written under it).
 *
 * The QP lock protects all of the QP's engine state (struct sw_req,
 * sw_comp, sw_resp, the RQ consumer index, the sw_wqe states); a thread
 * domain's QPs have none (lockless: one thread runs them).
 */
#ifndef SW_QP_LOCK_H
#define SW_QP_LOCK_H

#include <stdatomic.h>

#include <rte_branch_prediction.h>
#include <rte_spinlock.h>

#include "sw_obj.h"

static inline void sw_qp_lock(struct sw_qp *qp)
{
	if (!qp->lockless)
		rte_spinlock_lock(&qp->lock);
}
static inline void sw_qp_unlock(struct sw_qp *qp)
{
	if (!qp->lockless)
		rte_spinlock_unlock(&qp->lock);
}
static inline int sw_qp_trylock(struct sw_qp *qp)
{
	return qp->lockless ? 1 : rte_spinlock_trylock(&qp->lock);
}

static inline enum ibv_qp_state sw_qp_state(const struct sw_qp *qp)
{
	return (enum ibv_qp_state)atomic_load_explicit(&qp->state, memory_order_acquire);
}
static inline void sw_qp_set_state(struct sw_qp *qp, enum ibv_qp_state s)
{
	atomic_store_explicit(&qp->state, (int)s, memory_order_release);
}

/* Did cq go to error (an overrun) after a QP left RESET at epoch up? */
static inline bool sw_cq_err_since(const struct sw_cq *cq, uint64_t up)
{
	uint64_t e = cq ? atomic_load_explicit(&cq->err_epoch, memory_order_relaxed) : 0;
	return unlikely(e > up);
}

/* Must the QP go to ERR because a CQ it completes into is in error (an
 * overrun, sw_cq.c)? Yes when a CQE of its own was refused (cq_fatal), or
 * when its send or receive CQ went to error while it was out of RESET; a
 * QP brought out of RESET later on that CQ goes on until a CQE of its own
 * is refused. Read without its lock (a stale answer only moves the work to
 * the next look); a QP in RESET or ERR is left alone. */
static inline bool sw_qp_cq_due(const struct sw_qp *qp)
{
	uint64_t up = __atomic_load_n(&qp->up_epoch, __ATOMIC_RELAXED);
	if (likely(!__atomic_load_n(&qp->cq_fatal, __ATOMIC_RELAXED) && !sw_cq_err_since(qp->scq, up) &&
		   !sw_cq_err_since(qp->rcq, up)))
		return false;
	enum ibv_qp_state st = sw_qp_state(qp);
	return st != IBV_QPS_RESET && st != IBV_QPS_ERR;
}

/* Count on the QP and its port. Callers hold the QP lock (or own the
 * thread domain): the QP's counters have one writer at a time, so plain
 * adds; readers (telemetry, dpv_stat) load them relaxed. */
static inline void sw_cnt(struct sw_qp *qp, enum dpv_cnt c)
{
	__atomic_store_n(&qp->cnt[c], __atomic_load_n(&qp->cnt[c], __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);
	DPV_STAT_ADD(qp->port, cnt[c], 1);
}
static inline void sw_ctr(struct sw_qp *qp, uint64_t *c)
{
	__atomic_store_n(c, __atomic_load_n(c, __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);
}

#endif /* SW_QP_LOCK_H */
