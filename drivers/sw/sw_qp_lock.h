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
