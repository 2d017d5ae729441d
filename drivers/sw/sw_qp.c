/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * QP contexts of the software engine: creation, the side effects of state
 * transitions the façade has validated (PSNs, windows, timers, flushes,
 * events), error handling. Doorbells: sw_doorbell.c.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <rte_atomic.h>
#include <rte_cycles.h>
#include <rte_pause.h>

#include "sw_copy.h"
#include "sw_loc.h"
#include "sw_log.h"
#include "sw_qp_lock.h"

uint32_t sw_qp_mtu(const struct sw_qp *qp)
{
	uint8_t m = qp->attr.path_mtu;
	if (!m || m > qp->port->active_mtu)
		m = qp->port->active_mtu;
	return 128u << m;
}

void sw_qp_event(struct sw_qp *qp, enum ibv_event_type type)
{
	dpv_event_async(qp->dev, type, qp->qpn);
}

/* sw_qp.uid of the next QP: numbers are reused, these never are. */
static _Atomic uint64_t g_qp_uid;

void *sw_create_qp(const struct dpv_qp_cfg *cfg)
{
	uint32_t sq_size = cfg->sq ? cfg->sq_size : 0;
	/* the geometry comes from the creator, who checked it against the
	 * memory (dpverbsd: against what the application mapped) */
	if ((cfg->sq && (!sq_size || (sq_size & (sq_size - 1)) ||
			 cfg->sq_stride < sizeof(struct dpv_send_wqe) + RTE_MAX(cfg->cap.max_send_sge, 1u) * sizeof(struct dpv_sge))) ||
	    (cfg->rq && (!cfg->rq_size || (cfg->rq_size & (cfg->rq_size - 1)) ||
			 cfg->rq_stride < sizeof(struct dpv_recv_wqe) + RTE_MAX(cfg->cap.max_recv_sge, 1u) * sizeof(struct dpv_sge)))) {
		errno = EINVAL;
		return NULL;
	}
	size_t off_wqe = RTE_ALIGN_CEIL(sizeof(struct sw_qp), 64);
	size_t off_res = off_wqe + RTE_ALIGN_CEIL((size_t)sq_size * sizeof(struct sw_wqe), 64);
	size_t off_rss = off_res + RTE_ALIGN_CEIL((size_t)DPV_MAX_QP_RD_ATOM * sizeof(struct sw_rd_res), 64);
	size_t total = off_rss + (cfg->rss ? sizeof(*cfg->rss) : 0);
	uint8_t *mem = dpv_buf_alloc(cfg->alloc_pd, cfg->bufs, total, 64, DPV_RES_QP_RC);
	if (!mem)
		return NULL;
	struct sw_qp *qp = (struct sw_qp *)mem;
	struct sw_dev *dev = cfg->dev;
	qp->qpn = cfg->qpn;
	qp->uid = atomic_fetch_add_explicit(&g_qp_uid, 1, memory_order_relaxed) + 1;
	qp->type = cfg->type;
	sw_qp_set_state(qp, IBV_QPS_RESET);
	qp->dev = dev;
	qp->port = dev->port;
	qp->qc = dpv_port_qctx_of(dev->port, cfg->qpn);
	qp->td = cfg->td;
	qp->lockless = cfg->td != NULL;
	rte_spinlock_init(&qp->lock);
	qp->pd = cfg->pd;
	qp->xrcd = cfg->xrcd;
	qp->scq = cfg->scq;
	qp->rcq = cfg->rcq;
	qp->cq_fatal = false;
	qp->up_epoch = 0;
	qp->srq = cfg->srq;
	qp->sq = cfg->sq;
	qp->rq = cfg->rq;
	qp->sq_size = sq_size;
	qp->sq_stride = cfg->sq_stride;
	qp->rq_size = cfg->rq ? cfg->rq_size : 0;
	qp->rq_stride = cfg->rq_stride;
	qp->owner = cfg->owner;
	qp->cap = cfg->cap;
	qp->wqe = sq_size ? (struct sw_wqe *)(mem + off_wqe) : NULL;
	qp->resp.res = (struct sw_rd_res *)(mem + off_res);
	if (cfg->rss) {
		struct dpv_rss_cfg *rss = (struct dpv_rss_cfg *)(mem + off_rss);
		*rss = *cfg->rss;
		qp->rss = rss;
	} else {
		qp->rss = NULL;
	}
	qp->attr.path_mtu = (enum ibv_mtu)qp->port->active_mtu;
	if (sw_timer_add(qp) != 0) {
		errno = ENOMEM; /* the façade frees the memory */
		return NULL;
	}
	qp->gsi = cfg->gsi || cfg->gsi_shared;
	qp->gsi_shared = cfg->gsi_shared;
	if (cfg->gsi_shared && (cfg->type != IBV_QPT_UD || qp->lockless)) {
		sw_timer_del(qp);
		errno = EINVAL;
		return NULL;
	}
	if (cfg->gsi && (cfg->type != IBV_QPT_UD || qp->lockless || sw_tab_gsi_set(qp->port, NULL, qp) != 0)) {
		sw_timer_del(qp);
		errno = cfg->type != IBV_QPT_UD || qp->lockless ? EINVAL : EEXIST;
		return NULL;
	}
	if (sw_tab_qp_set(qp->qpn, qp) != 0) {
		if (qp->gsi)
			sw_tab_gsi_set(qp->port, qp, NULL);
		sw_timer_del(qp);
		errno = EINVAL;
		return NULL;
	}
	return qp;
}

/*
 * Engine sections. Most engine work runs in a context's poll turn, under
 * its rx_lock: sw_quiesce takes every rx_lock once. The rest runs on the
 * calling thread without one: an application thread's doorbell that sends
 * inline (it may resend WQEs a go-back rewound), its modify_qp or
 * destroy_qp (both may send, and pump queued READ responses), a thread
 * domain's owner processing its deferred packets and timers. Such a thread
 * marks itself inside a section on a slot of its own (a sequence number,
 * odd while inside, one cache line per thread, taken at its first section
 * and given back when it exits), and sw_quiesce waits for every slot that
 * is odd to move on. The cost on the path is a thread-local store and a
 * full fence per doorbell, none per packet. More than SW_SECT_SLOTS threads
 * at once: the others share one lock instead.
 */
#define SW_SECT_SLOTS 1024

struct sw_sect {
	_Alignas(RTE_CACHE_LINE_SIZE) _Atomic uint32_t seq; /* odd: its thread is inside a section */
	_Atomic bool used;
};

static struct sw_sect g_sect[SW_SECT_SLOTS];
static _Atomic uint32_t g_sect_hi; /* slots ever taken: the scan's end */
static rte_spinlock_t g_sect_lock = RTE_SPINLOCK_INITIALIZER; /* threads without a slot */
static pthread_key_t g_sect_key;
static pthread_once_t g_sect_once = PTHREAD_ONCE_INIT;
/* the calling thread's: its slot, how deep it is in sections, whether no
 * slot was free (the lock instead). initial-exec, as dpv_stat_tslot: a
 * doorbell pays a few cycles for it, not a __tls_get_addr call. */
static __thread struct {
	struct sw_sect *slot;
	unsigned int depth;
	bool none;
} t_sect __attribute__((tls_model("initial-exec")));

static void sect_release(void *p)
{
	struct sw_sect *s = p;
	atomic_store_explicit(&s->used, false, memory_order_release);
}

static void sect_key_make(void)
{
	if (pthread_key_create(&g_sect_key, sect_release) != 0)
		abort();
}

static struct sw_sect *sect_slot(void)
{
	pthread_once(&g_sect_once, sect_key_make);
	for (uint32_t i = 0; i < SW_SECT_SLOTS; i++) {
		bool f = false;
		if (atomic_load_explicit(&g_sect[i].used, memory_order_relaxed) ||
		    !atomic_compare_exchange_strong(&g_sect[i].used, &f, true))
			continue;
		uint32_t hi = atomic_load(&g_sect_hi);
		while (hi < i + 1 && !atomic_compare_exchange_weak(&g_sect_hi, &hi, i + 1))
			;
		if (pthread_setspecific(g_sect_key, &g_sect[i]) != 0) {
			atomic_store(&g_sect[i].used, false);
			return NULL;
		}
		return &g_sect[i];
	}
	return NULL;
}

void sw_sect_enter(void)
{
	if (t_sect.depth++)
		return; /* nested: the outer section covers it */
	struct sw_sect *s = t_sect.slot;
	if (unlikely(!s)) {
		if (!t_sect.none) {
			s = t_sect.slot = sect_slot();
			t_sect.none = !s;
		}
		if (!s) {
			rte_spinlock_lock(&g_sect_lock);
			return;
		}
	}
	uint32_t v = atomic_load_explicit(&s->seq, memory_order_relaxed);
	atomic_store_explicit(&s->seq, v + 1, memory_order_relaxed);
	/* the mark before any key is looked up; pairs with the fence in
	 * sw_quiesce after the key was cleared */
	rte_atomic_thread_fence(__ATOMIC_SEQ_CST);
}

void sw_sect_exit(void)
{
	if (--t_sect.depth)
		return;
	sw_mem_flush(); /* no write into another process left in this thread's batch */
	struct sw_sect *s = t_sect.slot;
	if (unlikely(!s)) {
		rte_spinlock_unlock(&g_sect_lock);
		return;
	}
	uint32_t v = atomic_load_explicit(&s->seq, memory_order_relaxed);
	atomic_store_explicit(&s->seq, v + 1, memory_order_release);
}

void sw_quiesce(void)
{
	rte_atomic_thread_fence(__ATOMIC_SEQ_CST); /* what was unpublished is seen as such from now */
	struct dpv_runtime *rt = dpv_runtime_peek();
	for (unsigned int i = 0; rt && i < rt->n_ports; i++) {
		struct dpv_port *port = &rt->ports[i];
		for (uint16_t q = 0; q < port->n_qctx; q++) {
			rte_spinlock_lock(&port->qctx[q].rx_lock);
			rte_spinlock_unlock(&port->qctx[q].rx_lock);
		}
	}
	uint32_t hi = atomic_load_explicit(&g_sect_hi, memory_order_acquire);
	for (uint32_t i = 0; i < hi; i++) {
		struct sw_sect *s = &g_sect[i];
		if (s == t_sect.slot && t_sect.depth)
			continue; /* called from inside a section (its own work is done) */
		uint32_t v = atomic_load_explicit(&s->seq, memory_order_acquire);
		if (!(v & 1))
			continue;
		while (atomic_load_explicit(&s->seq, memory_order_acquire) == v)
			rte_pause();
	}
	if (!(t_sect.none && t_sect.depth)) {
		rte_spinlock_lock(&g_sect_lock);
		rte_spinlock_unlock(&g_sect_lock);
	}
}

/* The QP stops for good: out of the engine's table and off the timer
 * lists, and no engine context is inside its receive path. */
void sw_destroy_qp(void *p)
{
	struct sw_qp *qp = p;
	sw_tab_qp_set(qp->qpn, NULL);
	sw_mcast_qp_gone(qp);
	struct dpv_raw_tab *raw_old = sw_raw_qp_gone(qp);
	if (qp->gsi)
		sw_tab_gsi_set(qp->port, qp, NULL);
	sw_timer_del(qp);
	sw_sect_enter(); /* the ACK may push queued READ responses */
	sw_qp_lock(qp);
	sw_resp_flush_ack(qp); /* as sw_qp_to_error */
	sw_qp_set_state(qp, IBV_QPS_RESET);
	sw_qp_unlock(qp);
	sw_sect_exit();
	sw_quiesce();
	free(raw_old);
}

enum ibv_qp_state sw_query_qp_state(void *p)
{
	return sw_qp_state(p);
}

void sw_query_qp_counters(void *p, uint64_t *cnt, unsigned int n)
{
	struct sw_qp *qp = p;
	for (unsigned int i = 0; i < n; i++)
		cnt[i] = i < DPV_CNT_NR ? __atomic_load_n(&qp->cnt[i], __ATOMIC_RELAXED) : 0;
}

/* RESET: every piece of transport state starts afresh; the rings are
 * emptied by the façade once this returns. Must hold the QP lock. */
static void qp_reset(struct sw_qp *qp)
{
	struct sw_rd_res *res = qp->resp.res;
	memset(&qp->req, 0, sizeof(qp->req));
	memset(&qp->comp, 0, sizeof(qp->comp));
	memset(&qp->resp, 0, sizeof(qp->resp));
	qp->resp.res = res;
	memset(res, 0, DPV_MAX_QP_RD_ATOM * sizeof(*res));
	if (qp->wqe)
		memset(qp->wqe, 0, qp->sq_size * sizeof(*qp->wqe));
	qp->rq_ci = 0;
	qp->ud_psn = 0;
	qp->cq_fatal = false;
}

/* The transport side effects of entering `to` from `cur`. Must hold the
 * QP lock. Returns true when IBV_EVENT_SQ_DRAINED is due now. */
static bool transition(struct sw_qp *qp, int mask, enum ibv_qp_state cur, enum ibv_qp_state to)
{
	bool connected = qp->type != IBV_QPT_UD && qp->type != IBV_QPT_RAW_PACKET;
	if (to == IBV_QPS_RESET)
		qp_reset(qp);
	else if (cur == IBV_QPS_RESET) /* a CQ in error from before does not stop it (sw_qp_cq_due) */
		__atomic_store_n(&qp->up_epoch, atomic_fetch_add(&sw_cq_epoch, 1) + 1, __ATOMIC_RELAXED);
	if (mask & IBV_QP_AV)
		qp->req.path_ok = false;
	if (mask & IBV_QP_MAX_DEST_RD_ATOMIC)
		qp->resp.n_res = qp->attr.max_dest_rd_atomic;
	if (qp->type == IBV_QPT_UD && (mask & IBV_QP_SQ_PSN))
		qp->ud_psn = qp->attr.sq_psn;
	if (connected && cur == IBV_QPS_INIT && to == IBV_QPS_RTR) {
		sw_resp_reset(qp);
		/* resolve the peer's MAC now, as a RoCE NIC's driver does */
		dpv_neigh_prefetch(qp->qc, qp->attr.ah_attr.grh.dgid.raw);
	}
	if (connected && cur == IBV_QPS_RTR && to == IBV_QPS_RTS) {
		qp->req.psn = qp->attr.sq_psn;
		qp->comp.psn = qp->attr.sq_psn;
		qp->req.cwnd = SW_RC_WINDOW;
	}
	if (connected && to == IBV_QPS_RTS) {
		qp->comp.retry_left = qp->attr.retry_cnt;
		qp->comp.rnr_left = qp->attr.rnr_retry;
	}
	sw_qp_set_state(qp, to);
	if (to == IBV_QPS_SQD && qp->attr.en_sqd_async_notify) {
		if (!connected || qp->req.sq_head == qp->req.sq_cur)
			return true; /* nothing outstanding: drained now */
		qp->req.sqd_pending = true;
	}
	return false;
}

int sw_modify_qp(void *p, const struct ibv_qp_attr *attr, int mask, enum ibv_qp_state cur, enum ibv_qp_state to)
{
	struct sw_qp *qp = p;
	sw_sect_enter(); /* it may send, and push queued READ responses */
	sw_qp_lock(qp);
	if (sw_qp_state(qp) != cur) {
		sw_qp_unlock(qp); /* the engine moved the QP meanwhile (ERR, SQE): */
		sw_sect_exit();   /* the caller checks again from the new state */
		return -EAGAIN;
	}
	qp->attr = *attr;
	bool sqd_event = transition(qp, mask, cur, to);
	if (to == IBV_QPS_RTS)
		sw_qp_send(qp); /* send what is posted */
	else if (to == IBV_QPS_ERR)
		sw_qp_to_error(qp);
	sw_qp_unlock(qp);
	sw_sect_exit();
	if (to == IBV_QPS_ERR && (qp->srq || qp->type == IBV_QPT_XRC_RECV) && cur != IBV_QPS_ERR &&
	    cur != IBV_QPS_RESET)
		sw_qp_event(qp, IBV_EVENT_QP_LAST_WQE_REACHED); /* IBA 11.6.3 */
	if (sqd_event)
		sw_qp_event(qp, IBV_EVENT_SQ_DRAINED);
	return 0;
}

/* ERR flushes both queues (IBA 10.3.1): every WQE posted completes with
 * IBV_WC_WR_FLUSH_ERR. A coalesced ACK still waiting for the end of the RX
 * burst (sw_defer_ack; that burst may run on another thread) leaves first,
 * as a NIC sends it when the message arrives: so it precedes the DREQ that
 * rdma_disconnect sends after moving the QP to ERR, and the peer's last
 * SEND completes before the peer learns of the disconnection (libfabric's
 * fi_pingpong tears down right after its last completion). */
void sw_qp_to_error(struct sw_qp *qp)
{
	sw_resp_flush_ack(qp);
	sw_qp_set_state(qp, IBV_QPS_ERR);
	if (qp->resp.have_rwqe) {
		/* the receive WQE of a message in progress is flushed too (as
		 * rxe completes its resp.wqe), not lost */
		struct sw_cq *cq = qp->type == IBV_QPT_XRC_RECV ? (qp->resp.xsrq ? qp->resp.xsrq->cq : NULL) : qp->rcq;
		struct dpv_cqe e = {.wr_id = qp->resp.rwqe.wr_id, .status = IBV_WC_WR_FLUSH_ERR, .opcode = IBV_WC_RECV,
				    .qp_num = qp->qpn};
		qp->resp.have_rwqe = false;
		qp->resp.in_msg = 0;
		if (cq)
			sw_cq_push(qp, cq, &e); /* in ERR: a CQ in error just takes nothing */
	}
	if ((qp->type == IBV_QPT_UD || qp->type == IBV_QPT_RAW_PACKET) && qp->sq)
		sw_ud_send(qp);
	else if (qp->sq)
		sw_comp_flush_sq(qp);
	sw_rq_flush(qp);
}

/* A CQ this QP completes into overran (sw_cq.c): as a ConnectX does with
 * the QPs of a CQ in error, the QP goes to ERR through the same path as any
 * other error (requester and responder stop, both queues flush: the
 * flushed CQEs are not written into the CQ in error, those for a sound CQ
 * are) and IBV_EVENT_QP_FATAL is raised, once: a QP in ERR or RESET is
 * left alone. */
void sw_qp_cq_fatal(struct sw_qp *qp)
{
	enum ibv_qp_state st = sw_qp_state(qp);
	qp->cq_fatal = false;
	if (st == IBV_QPS_RESET || st == IBV_QPS_ERR)
		return;
	SW_DBG_QP(qp, "a CQ of the QP is in error (overrun): to ERR");
	sw_qp_to_error(qp);
	qp->cq_fatal = false; /* the flush met the CQ in error again */
	sw_qp_event(qp, IBV_EVENT_QP_FATAL);
	if (qp->srq || qp->type == IBV_QPT_XRC_RECV)
		sw_qp_event(qp, IBV_EVENT_QP_LAST_WQE_REACHED); /* IBA 11.6.3 */
}
