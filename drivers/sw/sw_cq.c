/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The producer side of CQ rings (dpv_queue.h): the engine writes a CQE into
 * the next slot and publishes the producer index; an armed CQ is disarmed
 * by the CQE that matches its arming and its completion channel is
 * signalled; in shared mode the owner's wake word is bumped.
 *
 * Overrun (a CQE that does not fit), as on a ConnectX: the CQ goes to error
 * (DPV_RING_F_ERROR; nothing more is written into it, the CQEs already
 * there stay for the consumer), IBV_EVENT_CQ_ERR is raised once (IBA
 * 11.4.2.1), and the QPs that complete into it go to ERR with
 * IBV_EVENT_QP_FATAL: the QP whose CQE was refused at its next safe point
 * (it cannot be moved from inside its completer or responder loop), every
 * other QP of the CQ that was out of RESET then when it next runs or at
 * its context's timer scan (sw_qp_cq_due, sw_qp_cq_fatal); a QP brought
 * up later on the CQ in error when a CQE of its own is refused. A CQ created with
 * IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN loses the CQE instead (counted) and
 * stays usable. Every CQE that did not fit counts as "cq_overrun" on its QP
 * and port.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/futex.h>
#include <sys/syscall.h>

#include <rte_cycles.h>

#include "sw_copy.h"
#include "sw_loc.h"
#include "sw_log.h"
#include "sw_qp_lock.h"

_Atomic uint64_t sw_cq_epoch;

void *sw_create_cq(void *dev, const struct dpv_cq_cfg *cfg)
{
	struct sw_cq *cq = calloc(1, sizeof(*cq));
	if (!cq) {
		errno = ENOMEM;
		return NULL;
	}
	cq->handle = cfg->handle;
	cq->ring = cfg->ring;
	cq->size = cfg->ring_size;
	if (cq->size < 2 || (cq->size & (cq->size - 1))) {
		free(cq);
		errno = EINVAL;
		return NULL;
	}
	cq->td = cfg->td;
	cq->lockless = cfg->td != NULL;
	cq->timestamps = cfg->timestamps;
	cq->ignore_overrun = cfg->ignore_overrun;
	cq->wake = cfg->wake;
	rte_spinlock_init(&cq->lock);
	return cq;
}

void sw_destroy_cq(void *p)
{
	free(p);
}

/* Move the CQEs not consumed yet to a new ring (the façade holds its
 * consumer lock, so the consumer index does not move meanwhile). */
int sw_resize_cq(void *p, struct dpv_ring_hdr *ring, uint32_t size)
{
	struct sw_cq *cq = p;
	if (size < 2 || (size & (size - 1)))
		return -EINVAL;
	if (!cq->lockless)
		rte_spinlock_lock(&cq->lock);
	struct dpv_ring_hdr *old = cq->ring;
	uint32_t ci = atomic_load_explicit(&old->ci, memory_order_acquire);
	uint32_t pi = atomic_load_explicit(&old->pi, memory_order_relaxed);
	uint32_t n = pi - ci;
	if (n > size - 1 || n > cq->size) {
		if (!cq->lockless)
			rte_spinlock_unlock(&cq->lock);
		return -EINVAL;
	}
	for (uint32_t i = 0; i < n; i++)
		memcpy(dpv_ring_slot(ring, i, size, sizeof(struct dpv_cqe)),
		       dpv_ring_slot(old, ci + i, cq->size, sizeof(struct dpv_cqe)), sizeof(struct dpv_cqe));
	atomic_store_explicit(&ring->arm, atomic_load(&old->arm), memory_order_relaxed);
	if (atomic_load_explicit(&cq->err_epoch, memory_order_relaxed)) /* in error it stays */
		atomic_store_explicit(&ring->flags, DPV_RING_F_OVERRUN | DPV_RING_F_ERROR, memory_order_relaxed);
	atomic_store_explicit(&ring->ci, 0, memory_order_relaxed);
	atomic_store_explicit(&ring->pi, n, memory_order_release);
	cq->ring = ring;
	cq->size = size;
	cq->ci_cache = 0;
	if (!cq->lockless)
		rte_spinlock_unlock(&cq->lock);
	return 0;
}

/* Shared mode: tell the application that owns the CQ a completion is there
 * (struct dpv_wake, lib/verbs/dpv_queue.h). The locked add is the full
 * barrier between the CQE's publication and the read of waiters. */
static void wake_owner(struct dpv_wake *w)
{
	atomic_fetch_add_explicit(&w->seq, 1, memory_order_seq_cst);
	if (atomic_load_explicit(&w->waiters, memory_order_seq_cst))
		syscall(SYS_futex, &w->seq, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

bool sw_cq_push(struct sw_qp *qp, struct sw_cq *cq, const struct dpv_cqe *cqe)
{
	bool overrun = false, dead;
	int r = -1;
	sw_mem_flush(); /* the data a completion reports is in place first */
	if (!cq->lockless)
		rte_spinlock_lock(&cq->lock);
	dead = atomic_load_explicit(&cq->err_epoch, memory_order_relaxed) != 0;
	if (likely(!dead)) {
		r = dpv_cq_ring_put_ci(cq->ring, cq->size, &cq->ci_cache, cqe,
				       cq->timestamps ? rte_get_tsc_cycles() : 0);
		if (unlikely(r < 0)) {
			overrun = true;
			if (!cq->ignore_overrun) {
				/* the CQ goes to error, once (under the producer lock),
				 * after every QP that left RESET before now */
				atomic_store_explicit(&cq->err_epoch, atomic_fetch_add(&sw_cq_epoch, 1) + 1,
						      memory_order_relaxed);
				atomic_fetch_or_explicit(&cq->ring->flags, DPV_RING_F_ERROR, memory_order_relaxed);
				dead = true;
			}
		}
	}
	if (!cq->lockless)
		rte_spinlock_unlock(&cq->lock);
	if (sw_debug())
		SW_LOG(DEBUG, "cq#%u: wr_id %#llx status %u opcode %u qp %#x len %u%s", cq->handle,
		       (unsigned long long)cqe->wr_id, cqe->status, cqe->opcode, cqe->qp_num, cqe->byte_len,
		       r >= 0 ? "" : overrun ? (dead ? " (CQ full: overrun, CQ to error)" : " (CQ full: lost)")
				      : " (CQ in error: not written)");
	if (likely(r >= 0)) {
		if (cq->wake)
			wake_owner(cq->wake);
		if (r > 0)
			dpv_event_comp(cq->handle);
		return true;
	}
	if (overrun && qp)
		sw_cnt(qp, DPV_CNT_CQ_OVERRUN);
	if (!dead)
		return true; /* IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN: lost, the QP goes on */
	if (overrun) {
		SW_LOG(NOTICE, "cq#%u overrun (%u entries): CQ in error, qp %#x and the CQ's other QPs to ERR",
		       cq->handle, cq->size - 1, qp ? qp->qpn : 0);
		dpv_event_async(NULL, IBV_EVENT_CQ_ERR, cq->handle);
	}
	if (qp)
		qp->cq_fatal = true;
	return false;
}
