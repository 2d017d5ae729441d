/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Doorbell rings of applications (shared mode): dpverbsd attaches, for each
 * application and engine context, a ring in memory the application maps
 * (dpv_queue.h, struct dpv_db_ring); the engine context drains it on every
 * poll turn, right after its own doorbell ring. An entry is a QPN (with
 * DPV_DB_RQ: its receive queue's doorbell); it is honoured only for a QP of
 * the ring's owner bound to this context, so an application can make the
 * engine look at nothing but its own QPs.
 *
 * The rings of a context are an array of slots read by its engine thread
 * without a lock; db_attach fills a free slot, db_detach empties it and
 * then waits until no context is inside a poll turn (sw_quiesce), after
 * which the ring's memory may go.
 */
#include <errno.h>
#include <stdlib.h>

#include "sw_copy.h"
#include "sw_loc.h"
#include "sw_qp_lock.h"
#include "sw_queue.h"

#define SW_DB_MAX 256     /* applications per engine context */
#define SW_DB_BURST 64    /* entries one turn takes from one ring */

struct sw_db {
	struct dpv_db_ring *ring;
	uint32_t mask, pos, owner;
	struct dpv_qctx *qc;
	unsigned int slot;
};

struct sw_db_tab {
	_Atomic(struct sw_db *) db[SW_DB_MAX];
	_Atomic unsigned int hi;  /* slots below this may be used */
};

static struct sw_db_tab g_db[DPV_MAX_PORTS][DPV_MAX_QUEUES];
static rte_spinlock_t g_db_lock = RTE_SPINLOCK_INITIALIZER;

unsigned int sw_db_count(void *d)
{
	return ((struct sw_dev *)d)->port->n_qctx;
}

unsigned int sw_qp_db_index(void *p)
{
	return ((struct sw_qp *)p)->qc->qid;
}

void *sw_db_attach(void *d, unsigned int index, struct dpv_db_ring *ring, uint32_t size, uint32_t owner)
{
	struct sw_dev *dev = d;
	if (index >= dev->port->n_qctx || !ring || !size || (size & (size - 1)) || !owner) {
		errno = EINVAL;
		return NULL;
	}
	struct sw_db *db = calloc(1, sizeof(*db));
	if (!db) {
		errno = ENOMEM;
		return NULL;
	}
	/* from now on SGEs come from rings other processes write: the engine
	 * resolves every one through its MR where it is used (sw_copy.h) */
	atomic_store(&sw_serves_apps, true);
	db->ring = ring;
	db->mask = size - 1;
	db->owner = owner;
	db->qc = &dev->port->qctx[index];
	struct sw_db_tab *t = &g_db[dev->index][index];
	rte_spinlock_lock(&g_db_lock);
	unsigned int i;
	for (i = 0; i < SW_DB_MAX; i++)
		if (!atomic_load_explicit(&t->db[i], memory_order_relaxed))
			break;
	if (i == SW_DB_MAX) {
		rte_spinlock_unlock(&g_db_lock);
		free(db);
		errno = ENOSPC;
		return NULL;
	}
	db->slot = i;
	atomic_store_explicit(&t->db[i], db, memory_order_release);
	if (i >= atomic_load_explicit(&t->hi, memory_order_relaxed))
		atomic_store_explicit(&t->hi, i + 1, memory_order_release);
	rte_spinlock_unlock(&g_db_lock);
	return db;
}

void sw_db_detach(void *p)
{
	struct sw_db *db = p;
	if (!db)
		return;
	struct sw_db_tab *t = &g_db[db->qc->port->index][db->qc->qid];
	rte_spinlock_lock(&g_db_lock);
	atomic_store_explicit(&t->db[db->slot], NULL, memory_order_release);
	rte_spinlock_unlock(&g_db_lock);
	sw_quiesce(); /* no poll turn still holds it */
	free(db);
}

/* One doorbell: the QP's send side runs (or its RQ flushes, in ERR). */
static void ring_one(struct sw_db *db, uint32_t v)
{
	if (v & DPV_DB_SRQ) { /* a tag matching SRQ's ops */
		struct sw_srq *s = sw_srq_lookup(v & ~DPV_DB_SRQ);
		if (!s || !s->tm || s->owner != db->owner)
			return;
		sw_tm_db_clear(s);
		sw_srq_doorbell(s);
		return;
	}
	struct sw_qp *qp = sw_qp_lookup(v & ~DPV_DB_RQ);
	if (!qp || qp->owner != db->owner || qp->qc != db->qc)
		return; /* not its QP, gone, or not served here */
	if (v & DPV_DB_RQ) {
		if (qp->rq)
			atomic_store_explicit(&qp->rq->db, 0, memory_order_release);
		sw_rq_doorbell(qp);
		return;
	}
	if (!qp->sq)
		return;
	/* cleared before the ring is read: a WQE posted after this point
	 * rings again */
	atomic_store_explicit(&qp->sq->db, 0, memory_order_seq_cst);
	sw_qp_lock(qp);
	if (sw_resp_pending(qp))
		sw_resp_pump(qp, SW_RESP_BURST);
	sw_qp_send(qp);
	sw_qp_unlock(qp);
}

void sw_db_sync(void *d)
{
	struct sw_dev *dev = d;
	for (uint16_t q = 0; q < dev->port->n_qctx; q++) {
		struct dpv_qctx *qc = &dev->port->qctx[q];
		rte_spinlock_lock(&qc->rx_lock); /* the context's engine thread is out */
		sw_db_poll(qc);
		sw_mem_flush();
		rte_spinlock_unlock(&qc->rx_lock);
	}
}

int sw_db_poll(struct dpv_qctx *qc)
{
	struct sw_db_tab *t = &g_db[qc->port->index][qc->qid];
	unsigned int hi = atomic_load_explicit(&t->hi, memory_order_acquire);
	int n = 0;
	for (unsigned int i = 0; i < hi; i++) {
		struct sw_db *db = atomic_load_explicit(&t->db[i], memory_order_acquire);
		if (!db)
			continue;
		uint32_t v;
		for (unsigned int k = 0; k < SW_DB_BURST && dpv_db_ring_get(db->ring, db->mask, &db->pos, &v); k++) {
			ring_one(db, v);
			n++;
		}
	}
	return n;
}
