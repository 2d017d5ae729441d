/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The engine's own object tables, as an RNIC keeps its QP context table,
 * memory protection table and address vectors: filled by the commands of
 * the driver interface (create_qp, create_srq, reg_mr, create_ah; alloc_mw
 * for memory windows, which share the MRs' table and key space: sw_mw.c),
 * looked up by number on the data path without a lock (release/acquire
 * publication). The engine never reads a façade object, so it can run in
 * another process than the façade (shared mode: the daemon).
 *
 * Sizes follow the façade's object pool (dpv_pool_range): the numbers the
 * engine is given come from it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/uio.h>

#include <rte_branch_prediction.h>
#include <rte_spinlock.h>

#include "sw_loc.h"

struct sw_tab {
	uint32_t n_qp, n_srq, n_mr, n_ah;
	_Atomic(struct sw_qp *) *qp;
	_Atomic(struct sw_srq *) *srq;
	struct sw_mr *mr;
	struct sw_ah *ah;
	rte_spinlock_t lock; /* writers of mr[] and ah[] */
};

_Atomic uint32_t sw_remote_mrs; /* MRs whose memory is in another process (or reached
				  through the kernel: an implicit ODP MR, mr_pid) */
_Atomic bool sw_serves_apps;    /* a doorbell ring of another process was attached */

static struct sw_tab g_tab = {.lock = RTE_SPINLOCK_INITIALIZER};

static uint32_t tab_len(enum dpv_obj_type t)
{
	uint32_t first, last;
	dpv_pool_range(t, &first, &last);
	return last ? last + 1 : 0;
}

int sw_tab_init(void)
{
	if (g_tab.qp)
		return 0;
	g_tab.n_qp = tab_len(DPV_OBJ_QP);
	g_tab.n_srq = tab_len(DPV_OBJ_SRQ);
	g_tab.n_mr = tab_len(DPV_OBJ_MR);
	g_tab.n_ah = tab_len(DPV_OBJ_AH);
	g_tab.qp = calloc(g_tab.n_qp ? g_tab.n_qp : 1, sizeof(*g_tab.qp));
	g_tab.srq = calloc(g_tab.n_srq ? g_tab.n_srq : 1, sizeof(*g_tab.srq));
	g_tab.mr = calloc(g_tab.n_mr ? g_tab.n_mr : 1, sizeof(*g_tab.mr));
	g_tab.ah = calloc(g_tab.n_ah ? g_tab.n_ah : 1, sizeof(*g_tab.ah));
	if (!g_tab.qp || !g_tab.srq || !g_tab.mr || !g_tab.ah) {
		free(g_tab.qp);
		free(g_tab.srq);
		free(g_tab.mr);
		free(g_tab.ah);
		memset(&g_tab, 0, sizeof(g_tab));
		rte_spinlock_init(&g_tab.lock);
		return -ENOMEM;
	}
	return 0;
}

/* ---- QPs and SRQs ---- */

int sw_tab_qp_set(uint32_t qpn, struct sw_qp *qp)
{
	if (qpn >= g_tab.n_qp)
		return -EINVAL;
	atomic_store_explicit(&g_tab.qp[qpn], qp, memory_order_release);
	return 0;
}

/* QP 1 of each port: a QP of the pool whose number on the wire is 1 */
static _Atomic(struct sw_qp *) g_gsi[DPV_MAX_PORTS];

/* dpverbsd's demultiplexer (several processes' GSI QPs on one port) */
static _Atomic(dpv_gsi_demux_fn) g_demux;
static _Atomic(dpv_gsi_tx_fn) g_gsi_tx;
static void *g_demux_arg;

void sw_gsi_demux(dpv_gsi_demux_fn fn, dpv_gsi_tx_fn tx, void *arg)
{
	atomic_store_explicit(&g_demux, NULL, memory_order_release);
	atomic_store_explicit(&g_gsi_tx, NULL, memory_order_release);
	g_demux_arg = arg;
	atomic_store_explicit(&g_gsi_tx, tx, memory_order_release);
	atomic_store_explicit(&g_demux, fn, memory_order_release);
}

bool sw_gsi_tx_ok(const struct sw_qp *qp, const uint8_t dgid[16], const uint8_t *mad, uint32_t len)
{
	dpv_gsi_tx_fn fn = atomic_load_explicit(&g_gsi_tx, memory_order_acquire);
	return !fn || fn(g_demux_arg, qp->port->index, qp->qpn, dgid, mad, len);
}

struct sw_qp *sw_gsi_lookup(const struct dpv_port *port, const uint8_t sgid[16], const uint8_t *mad, uint32_t len)
{
	if (port->index >= DPV_MAX_PORTS)
		return NULL;
	dpv_gsi_demux_fn fn = atomic_load_explicit(&g_demux, memory_order_acquire);
	if (fn) {
		uint32_t qpn = fn(g_demux_arg, port->index, sgid, mad, len);
		if (qpn) {
			struct sw_qp *qp = sw_qp_lookup(qpn);
			return qp && qp->gsi ? qp : NULL;
		}
	}
	return atomic_load_explicit(&g_gsi[port->index], memory_order_acquire);
}

int sw_tab_gsi_set(const struct dpv_port *port, struct sw_qp *old, struct sw_qp *qp)
{
	if (port->index >= DPV_MAX_PORTS)
		return -EINVAL;
	return atomic_compare_exchange_strong(&g_gsi[port->index], &old, qp) ? 0 : -EEXIST;
}

struct sw_qp *sw_qp_lookup(uint32_t qpn)
{
	if (qpn >= g_tab.n_qp)
		return NULL;
	return atomic_load_explicit(&g_tab.qp[qpn], memory_order_acquire);
}

int sw_tab_srq_set(uint32_t srqn, struct sw_srq *s)
{
	if (srqn >= g_tab.n_srq)
		return -EINVAL;
	atomic_store_explicit(&g_tab.srq[srqn], s, memory_order_release);
	return 0;
}

struct sw_srq *sw_srq_lookup(uint32_t srqn)
{
	if (srqn >= g_tab.n_srq)
		return NULL;
	return atomic_load_explicit(&g_tab.srq[srqn], memory_order_acquire);
}

/* ---- memory regions (the "MPT") ---- */

/* The process whose address space the engine reaches an MR in (0: this
 * one, directly). An implicit ODP MR of this process (embedded mode: the
 * whole address space, rdma-core's (NULL, SIZE_MAX)) is reached through the
 * kernel, process_vm_readv/writev on our own pid (sw_mem.c), as an RNIC's
 * page faults go through the page tables: a page that is not mapped, or a
 * mapping DMA cannot reach (VM_IO/VM_PFNMAP: a device's registers), fails
 * the access with EFAULT whatever SIGSEGV handler the application has, and
 * a stray address never makes the engine's CPU touch it. Where the kernel
 * refuses process_vm_* (a seccomp filter) the guarded memcpy (sw_fault.c)
 * stays. */
static int32_t mr_pid(const struct dpv_mr_desc *d)
{
	if (d->pid || d->engine_addr || d->addr || d->length != UINT64_MAX || !(d->access & IBV_ACCESS_ON_DEMAND))
		return d->pid;
	static int32_t self;
	int32_t pid = (int32_t)getpid();
	if (__atomic_load_n(&self, __ATOMIC_RELAXED) != pid) {
		uint8_t a = 1, b = 0;
		struct iovec l = {.iov_base = &b, .iov_len = 1}, r = {.iov_base = &a, .iov_len = 1};
		if (process_vm_readv(pid, &l, 1, &r, 1, 0) != 1 || b != 1)
			return 0;
		__atomic_store_n(&self, pid, __ATOMIC_RELAXED);
	}
	return pid;
}

int sw_reg_mr(void *dev, const struct dpv_mr_desc *d)
{
	uint32_t i = d->key >> 8;
	if (!d->key || i >= g_tab.n_mr || (d->addr + d->length < d->addr))
		return -EINVAL;
	struct sw_mr *m = &g_tab.mr[i];
	int32_t pid = mr_pid(d);
	rte_spinlock_lock(&g_tab.lock);
	uint32_t old = atomic_load_explicit(&m->key, memory_order_relaxed);
	if (old && (old != d->key || m->kind != SW_MPT_MR)) {
		rte_spinlock_unlock(&g_tab.lock);
		return -EBUSY; /* another MR (or a memory window) holds this index */
	}
	if (old && m->pid)
		atomic_fetch_sub(&sw_remote_mrs, 1);
	/* a new registration is published by its key, after its fields; a
	 * re-registration (same key) changes the fields in place (the windows
	 * bound to it stay, checked against its new range at each access) */
	if (!old) {
		m->kind = SW_MPT_MR;
		m->n_mw = 0;
		m->mr_key = 0;
	}
	m->pd = d->pd;
	m->addr = (uint8_t *)(uintptr_t)d->addr;
	m->iova = d->iova;
	m->length = d->length;
	m->access = d->access;
	m->pid = pid;
	m->delta = !d->pid && d->engine_addr ? (int64_t)(d->engine_addr - d->addr) : 0;
	if (m->pid)
		atomic_fetch_add(&sw_remote_mrs, 1);
	atomic_store_explicit(&m->key, d->key, memory_order_release);
	rte_spinlock_unlock(&g_tab.lock);
	return 0;
}

int sw_dereg_mr(void *dev, uint32_t key, bool force)
{
	uint32_t i = key >> 8;
	if (!key || i >= g_tab.n_mr)
		return 0;
	struct sw_mr *m = &g_tab.mr[i];
	bool live = false;
	rte_spinlock_lock(&g_tab.lock);
	if (atomic_load_explicit(&m->key, memory_order_relaxed) == key && m->kind == SW_MPT_MR) {
		if (m->n_mw && !force) {
			rte_spinlock_unlock(&g_tab.lock);
			return -EBUSY; /* IBA 10.6.7.2.6: windows are bound to it */
		}
		atomic_store_explicit(&m->key, 0, memory_order_release);
		live = true;
		if (m->pid)
			atomic_fetch_sub(&sw_remote_mrs, 1);
	}
	rte_spinlock_unlock(&g_tab.lock);
	/* as an RNIC's deregistration command: once this returns no engine
	 * thread (the assist thread, an lcore, another application thread in
	 * its poll turn, its doorbell or its thread domain's progress) is
	 * still inside an access that resolved the key, nor has a write to it
	 * waiting in its batch (sw_mem.c flushes before a poll turn or a
	 * section ends), so the application may free the memory at once.
	 * Every later access resolves the key again and fails (sw_copy.h): a
	 * retransmission, the next packet of a message or of a READ response
	 * completes its WQE in error instead of touching the memory. Without
	 * the wait a receive being copied by the assist thread while the
	 * application deregistered and unmapped its buffer wrote into unmapped
	 * memory (UCX's ud_verbs teardown: SIGSEGV in sw_ud_rx). A window
	 * still bound to it (force) resolves to nothing from now on. */
	if (live)
		sw_quiesce();
	return 0;
}

/* The entry of table index i (MR or memory window), or NULL out of range:
 * its writers hold the table lock (sw_tab_lock). */
struct sw_mr *sw_tab_mpt(uint32_t i)
{
	return i && i < g_tab.n_mr ? &g_tab.mr[i] : NULL;
}

void sw_tab_lock(void)
{
	rte_spinlock_lock(&g_tab.lock);
}

void sw_tab_unlock(void)
{
	rte_spinlock_unlock(&g_tab.lock);
}

const struct sw_mr *sw_mpt_lookup(uint32_t key)
{
	uint32_t i = key >> 8;
	if (!key || i >= g_tab.n_mr)
		return NULL;
	const struct sw_mr *m = &g_tab.mr[i];
	return atomic_load_explicit(&m->key, memory_order_acquire) == key ? m : NULL;
}

const struct sw_mr *sw_mr_lookup(uint32_t key)
{
	const struct sw_mr *m = sw_mpt_lookup(key);
	return m && m->kind == SW_MPT_MR ? m : NULL;
}

const struct sw_mr *sw_mr_range(uint32_t pd, uint32_t key, uint64_t addr, uint32_t len)
{
	const struct sw_mr *m = sw_mpt_lookup(key);
	if (!m)
		return NULL;
	/* a window's rkey is never an lkey: only an SGE the engine built from
	 * an rkey it checked (pd 0, SW_PD_CHECKED) resolves through one */
	if (unlikely(m->kind != SW_MPT_MR))
		return pd == 0 ? sw_mw_range(m, key, addr, len) : NULL;
	if (pd != 0 && m->pd != pd)
		return NULL;
	uint64_t start = (uint64_t)(uintptr_t)m->addr;
	return addr >= start && addr + len <= start + m->length && addr + len >= addr ? m : NULL;
}

/* ---- address handles ---- */

int sw_create_ah(void *dev, const struct dpv_ah_desc *d)
{
	if (!d->handle || d->handle >= g_tab.n_ah)
		return -EINVAL;
	struct sw_ah *a = &g_tab.ah[d->handle];
	rte_spinlock_lock(&g_tab.lock);
	a->dev = dev;
	memcpy(a->sgid, d->sgid, DPV_GID_LEN);
	memcpy(a->dgid, d->dgid, DPV_GID_LEN);
	a->ip_ver = d->ip_ver;
	a->tclass = d->tclass;
	a->hop_limit = d->hop_limit;
	a->flow_label = d->flow_label;
	atomic_store_explicit(&a->handle, d->handle, memory_order_release);
	rte_spinlock_unlock(&g_tab.lock);
	struct sw_dev *sd = dev;
	dpv_neigh_prefetch(&sd->port->qctx[0], d->dgid); /* resolve the MAC now */
	return 0;
}

void sw_destroy_ah(void *dev, uint32_t handle)
{
	if (!handle || handle >= g_tab.n_ah)
		return;
	atomic_store_explicit(&g_tab.ah[handle].handle, 0, memory_order_release);
}

const struct sw_ah *sw_ah_lookup(uint32_t handle)
{
	if (!handle || handle >= g_tab.n_ah)
		return NULL;
	const struct sw_ah *a = &g_tab.ah[handle];
	return atomic_load_explicit(&a->handle, memory_order_acquire) == handle ? a : NULL;
}
