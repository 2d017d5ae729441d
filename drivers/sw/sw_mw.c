/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Memory windows (IBA 10.6.7) in the engine: entries of the memory
 * protection table (sw_tab.c) beside the MRs, in the same key space, of
 * type 1 or type 2B. What the IBA requires of them, as Linux rxe
 * (rxe_mw.c) implements it, with the window's own range enforced:
 *   - a bind (IBV_WR_BIND_MW, executed by the requester in the order of
 *     its send queue) needs a window and an MR of the QP's protection
 *     domain (C10-72), an MR registered with IBV_ACCESS_MW_BIND (C10-73)
 *     and, for a window with remote write or atomic rights, local write
 *     (C10-74), a range inside the MR (C10-75), no zero-based type 1 window
 *     (o10-36.2.2) nor a zero-based MR; a type 2 window must not be bound
 *     already (o10-37.2.30) and needs an MR and a length (o10-37.2.40); a
 *     type 1 window is bound again at any time, length 0 unbinds it. A
 *     refused bind completes with IBV_WC_MW_BIND_ERR (the QP goes to ERR).
 *     The new rkey keeps the window's index: its 8-bit key changes;
 *   - a type 2B window is bound to the QP that bound it: a remote access
 *     through its rkey is accepted on that QP only, and only that QP
 *     invalidates it (IBV_WR_LOCAL_INV, or the peer's SEND with
 *     invalidate on it); a type 1 window is never invalidated that way
 *     (o10-37.2.26), an MR neither (no fast-registration MRs here);
 *   - a remote access through a window needs its rights, its range (from
 *     0 for a zero-based window), its protection domain, and resolves to
 *     its MR, which must still be registered; an rkey of an invalidated,
 *     rebound or deallocated window no longer matches (remote access
 *     error). Every packet of a WRITE or READ resolves the window again.
 * A binding changes under the table lock and is read through a sequence
 * count (odd while it changes), so the data path takes no lock.
 */
#include <errno.h>

#include <rte_pause.h>

#include "sw_loc.h"

/* Access bits a bind may carry: the window's rights; local write and MW
 * bind mean nothing for a window and are ignored. */
#define SW_MW_ACCESS                                                                                       \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC | \
	 IBV_ACCESS_MW_BIND | IBV_ACCESS_ZERO_BASED)

/* A window's binding, as one consistent view. */
struct mw_view {
	uint32_t key, pd, mr_key;
	uint8_t kind;
	int access;
	uint64_t iova, length, qp_uid;
};

static void mw_read(const struct sw_mr *e, struct mw_view *v)
{
	for (;;) {
		uint32_t s = atomic_load_explicit(&e->seq, memory_order_acquire);
		if (!(s & 1)) {
			v->key = atomic_load_explicit(&e->key, memory_order_relaxed);
			v->kind = e->kind;
			v->pd = e->pd;
			v->mr_key = e->mr_key;
			v->access = e->access;
			v->iova = e->iova;
			v->length = e->length;
			v->qp_uid = e->qp_uid;
			atomic_thread_fence(memory_order_acquire);
			if (atomic_load_explicit(&e->seq, memory_order_relaxed) == s)
				return;
		}
		rte_pause();
	}
}

/* A binding changes between these (table lock held). */
static void mw_write_begin(struct sw_mr *e)
{
	atomic_store_explicit(&e->seq, atomic_load_explicit(&e->seq, memory_order_relaxed) + 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
}

static void mw_write_end(struct sw_mr *e)
{
	atomic_store_explicit(&e->seq, atomic_load_explicit(&e->seq, memory_order_relaxed) + 1, memory_order_release);
}

/* The MR of the window's binding counts it no more (if it is the same MR
 * still: one registered again at its index starts from 0). */
static void mw_unbind(struct sw_mr *e)
{
	if (!e->mr_key)
		return;
	struct sw_mr *m = sw_tab_mpt(e->mr_key >> 8);
	if (m && m->kind == SW_MPT_MR && atomic_load_explicit(&m->key, memory_order_relaxed) == e->mr_key && m->n_mw)
		m->n_mw--;
	e->mr_key = 0;
	e->iova = 0;
	e->length = 0;
	e->access = 0;
	e->qp_uid = 0;
}

int sw_alloc_mw(void *dev, const struct dpv_mw_desc *d)
{
	if (!d->key || (d->type != IBV_MW_TYPE_1 && d->type != IBV_MW_TYPE_2))
		return -EINVAL;
	struct sw_mr *e = sw_tab_mpt(d->key >> 8);
	if (!e)
		return -EINVAL;
	sw_tab_lock();
	if (atomic_load_explicit(&e->key, memory_order_relaxed)) {
		sw_tab_unlock();
		return -EBUSY; /* an MR or a window holds this index */
	}
	mw_write_begin(e);
	e->kind = d->type == IBV_MW_TYPE_1 ? SW_MPT_MW1 : SW_MPT_MW2;
	e->pd = d->pd;
	e->addr = NULL;
	e->pid = 0;
	e->delta = 0;
	e->n_mw = 0;
	e->mr_key = 0;
	e->iova = 0;
	e->length = 0;
	e->access = 0;
	e->qp_uid = 0;
	atomic_store_explicit(&e->key, d->key, memory_order_release);
	mw_write_end(e);
	sw_tab_unlock();
	return 0;
}

void sw_dealloc_mw(void *dev, uint32_t key)
{
	struct sw_mr *e = sw_tab_mpt(key >> 8);
	bool live = false;
	if (!e)
		return;
	sw_tab_lock();
	if (e->kind != SW_MPT_MR && atomic_load_explicit(&e->key, memory_order_relaxed)) {
		mw_write_begin(e);
		mw_unbind(e);
		atomic_store_explicit(&e->key, 0, memory_order_release);
		mw_write_end(e);
		live = true;
	}
	sw_tab_unlock();
	/* no engine thread is inside an access that resolved it once this
	 * returns (its index may be an MR's next) */
	if (live)
		sw_quiesce();
}

/* May qp bind window e (type, state, PD) to the MR of mr_key over [addr,
 * addr + len) with access acc? The MR, or NULL for no MR (a type 1
 * unbind); *ok false when the bind is refused. Table lock held. */
static struct sw_mr *bind_check(const struct sw_qp *qp, const struct sw_mr *e, uint32_t mr_key, uint64_t addr,
				uint64_t len, int acc, bool *ok)
{
	*ok = false;
	if (!atomic_load_explicit(&e->key, memory_order_relaxed) || e->kind == SW_MPT_MR || e->pd != qp->pd)
		return NULL; /* not a window, or one of another PD (C10-72) */
	if (e->kind == SW_MPT_MW1 && (acc & IBV_ACCESS_ZERO_BASED))
		return NULL; /* o10-36.2.2 */
	if (e->kind == SW_MPT_MW2 && (e->mr_key || !len))
		return NULL; /* bound already (o10-37.2.30), no MR or length 0 (o10-37.2.40) */
	if (!len) {
		*ok = true; /* type 1: unbind */
		return NULL;
	}
	struct sw_mr *mr = sw_tab_mpt(mr_key >> 8);
	if (!mr || mr->kind != SW_MPT_MR || atomic_load_explicit(&mr->key, memory_order_relaxed) != mr_key ||
	    mr->pd != e->pd || (mr->access & IBV_ACCESS_ZERO_BASED) || !(mr->access & IBV_ACCESS_MW_BIND))
		return NULL; /* C10-73 */
	if ((acc & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) && !(mr->access & IBV_ACCESS_LOCAL_WRITE))
		return NULL; /* C10-74 */
	if (addr < mr->iova || addr + len > mr->iova + mr->length || addr + len < addr)
		return NULL; /* C10-75 */
	*ok = true;
	return mr;
}

enum ibv_wc_status sw_mw_bind(const struct sw_qp *qp, const struct dpv_send_wqe *w)
{
	uint32_t rkey = w->rkey, mr_key = w->bind.mr_lkey;
	uint64_t addr = w->remote_addr, len = w->bind.length;
	int acc = (int)w->bind.access;
	struct sw_mr *e = sw_tab_mpt(w->inv_rkey >> 8);
	bool ok;
	if (!e || (rkey >> 8) != (w->inv_rkey >> 8) || (acc & ~SW_MW_ACCESS))
		return IBV_WC_MW_BIND_ERR; /* the new rkey names another index */
	sw_tab_lock();
	struct sw_mr *mr = bind_check(qp, e, mr_key, addr, len, acc, &ok);
	if (ok) {
		mw_write_begin(e);
		mw_unbind(e);
		if (mr) {
			e->mr_key = mr_key;
			e->iova = addr;
			e->length = len;
			e->access = acc & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC |
					   IBV_ACCESS_ZERO_BASED);
			e->qp_uid = e->kind == SW_MPT_MW2 ? qp->uid : 0;
			mr->n_mw++;
		}
		atomic_store_explicit(&e->key, rkey, memory_order_release);
		mw_write_end(e);
	}
	sw_tab_unlock();
	return ok ? IBV_WC_SUCCESS : IBV_WC_MW_BIND_ERR;
}

int sw_mw_invalidate(uint32_t pd, uint64_t qp_uid, uint32_t rkey)
{
	struct sw_mr *e = sw_tab_mpt(rkey >> 8);
	int r = -EINVAL;
	if (!e)
		return r;
	sw_tab_lock();
	if (rkey && atomic_load_explicit(&e->key, memory_order_relaxed) == rkey && e->kind == SW_MPT_MW2 &&
	    e->mr_key) {
		r = e->pd != pd || e->qp_uid != qp_uid ? -EACCES : 0; /* another PD's, another QP's */
		if (!r) {
			mw_write_begin(e);
			mw_unbind(e); /* the rkey stays: it names a window in the free state */
			mw_write_end(e);
		}
	}
	sw_tab_unlock();
	return r;
}

uint8_t *sw_mw_resolve(const struct sw_mr *e, uint32_t rkey, uint32_t pd, uint64_t qp_uid, uint64_t va,
		       uint64_t len, int access, const struct sw_mr **mrp)
{
	struct mw_view v;
	mw_read(e, &v);
	if (v.key != rkey || !v.mr_key || v.pd != pd || (v.access & access) != access ||
	    (v.kind == SW_MPT_MW2 && v.qp_uid != qp_uid))
		return NULL;
	uint64_t mva; /* the address in the MR's space */
	if (v.access & IBV_ACCESS_ZERO_BASED) {
		if (va > v.length || len > v.length - va)
			return NULL;
		mva = v.iova + va;
	} else {
		if (va < v.iova || va + len > v.iova + v.length || va + len < va)
			return NULL;
		mva = va;
	}
	const struct sw_mr *mr = sw_mr_lookup(v.mr_key);
	if (!mr || mva < mr->iova || mva + len > mr->iova + mr->length)
		return NULL; /* deregistered, or registered again smaller */
	*mrp = mr;
	/* in integers: the implicit ODP MR's addr is NULL */
	return (uint8_t *)(uintptr_t)((uintptr_t)mr->addr + (mva - mr->iova));
}

const struct sw_mr *sw_mw_range(const struct sw_mr *e, uint32_t key, uint64_t addr, uint32_t len)
{
	struct mw_view v;
	mw_read(e, &v);
	if (v.key != key || !v.mr_key)
		return NULL;
	const struct sw_mr *mr = sw_mr_lookup(v.mr_key);
	if (!mr || v.iova < mr->iova || v.iova + v.length > mr->iova + mr->length)
		return NULL;
	uint64_t start = (uint64_t)(uintptr_t)mr->addr + (v.iova - mr->iova); /* the window, as addr counts */
	return addr >= start && addr + len <= start + v.length && addr + len >= addr ? mr : NULL;
}
