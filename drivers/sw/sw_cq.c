/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The producer side of CQ rings (dpv_queue.h): the engine writes a CQE into
 * the next slot and publishes the producer index; a CQ that is full loses
 * the completion and raises IBV_EVENT_CQ_ERR once (IBA 11.4.2.1); an armed
 * CQ is disarmed by the CQE that matches its arming and its completion
 * channel is signalled; in shared mode the owner's wake word is bumped.
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

void sw_cq_push(struct sw_cq *cq, const struct dpv_cqe *cqe)
{
	bool overrun = false;
	sw_mem_flush(); /* the data a completion reports is in place first */
	if (!cq->lockless)
		rte_spinlock_lock(&cq->lock);
	int r = dpv_cq_ring_put_ci(cq->ring, cq->size, &cq->ci_cache, cqe, cq->timestamps ? rte_get_tsc_cycles() : 0);
	if (r < 0) {
		overrun = !cq->overrun; /* IBA 11.4.2.1: CQ_ERR, once */
		cq->overrun = true;
	}
	if (!cq->lockless)
		rte_spinlock_unlock(&cq->lock);
	if (sw_debug())
		SW_LOG(DEBUG, "cq#%u: wr_id %#llx status %u opcode %u qp %#x len %u%s", cq->handle,
		       (unsigned long long)cqe->wr_id, cqe->status, cqe->opcode, cqe->qp_num, cqe->byte_len,
		       r < 0 ? " (CQ full: lost)" : "");
	if (cq->wake && r >= 0)
		wake_owner(cq->wake);
	if (overrun)
		dpv_event_async(NULL, IBV_EVENT_CQ_ERR, cq->handle);
	if (r > 0)
		dpv_event_comp(cq->handle);
}
