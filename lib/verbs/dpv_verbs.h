/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpverbs verbs façade: internal object layouts. Each object embeds the
 * rdma-core verbs struct and converts back with container_of (as rxe.h
 * to_rqp does). Not installed.
 */
#ifndef DPV_VERBS_H
#define DPV_VERBS_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <pthread.h>
#include <infiniband/verbs.h>

#include <rte_spinlock.h>

#include "dpv_port.h"

#define DPV_EXPORT __attribute__((visibility("default")))

#ifndef container_of
#define container_of(ptr, type, member) ((type *)((char *)(ptr) - offsetof(type, member)))
#endif

#define DPV_VENDOR_ID 0x026470   /* OUI-style id from our MAC prefix; unknown to perftest, which then uses plain verbs */
#define DPV_VENDOR_PART_ID 0x4450 /* "DP" */
#define DPV_HW_VER 1
#define DPV_MAX_MSG_SZ (1u << 31)

struct dpv_device {
	struct ibv_device ibdev;
	struct dpv_port *port;
	__be64 guid;
	unsigned int index;
};

struct dpv_context {
	struct verbs_context vctx;
	struct dpv_device *dev;
	int async_wfd;           /* write end of the async event pipe */
	rte_spinlock_t async_lock;
};

struct dpv_qp;
struct dpv_td {
	struct ibv_td ibtd;
	_Atomic int users;       /* parent domains using it */
	/* the thread using the TD's objects: set at its first post or poll */
	pthread_t owner;
	_Atomic bool owner_set;
	/* packets for the TD's QPs received by other threads (MP/SC) */
	struct rte_ring *rx_ring;
	struct dpv_qp *conn;     /* its RC/XRC QPs, for timers (owner only) */
	uint64_t next_timer_tsc;
};

struct dpv_pd {
	struct ibv_pd ibpd;
	_Atomic int users;       /* MRs, QPs, AHs, SRQs, CQs, parent domains */
	/* parent domain (ibv_alloc_parent_domain) */
	bool parent;
	struct dpv_pd *base;     /* the protection domain: itself for a plain PD */
	struct dpv_td *td;
	void *(*alloc)(struct ibv_pd *pd, void *pd_context, size_t size, size_t alignment,
		       uint64_t resource_type);
	void (*free)(struct ibv_pd *pd, void *pd_context, void *ptr, uint64_t resource_type);
	void *pd_context;
};

/* Buffers of one object, each from the parent domain's allocator or the
 * default one; freed exactly once when the object is destroyed. */
#define DPV_OBJ_BUFS 6
struct dpv_buf {
	void *p;
	uint32_t code;           /* enum dpv_resource_code */
	bool custom;             /* from pd->alloc: give back with pd->free */
};
struct dpv_bufs {
	struct dpv_pd *pd;
	struct dpv_buf b[DPV_OBJ_BUFS];
	unsigned int n;
};

struct dpv_mr {
	struct ibv_mr ibmr;
	struct dpv_pd *pd;       /* protection domain (base) */
	struct dpv_pd *upd;      /* the PD given (parent domain or plain) */
	uint64_t iova;           /* address the peer uses (rkey space) */
	uint8_t *addr;           /* local virtual address */
	uint64_t length;
	int access;
	uint32_t index;
};

struct dpv_ah {
	struct ibv_ah ibah;
	struct ibv_ah_attr attr;
	struct dpv_pd *pd;
	struct dpv_port *port;
	uint8_t sgid[16], dgid[16];
	uint8_t ip_ver;
};

struct dpv_comp_channel {
	struct ibv_comp_channel ch;
	int wfd;
	_Atomic int users;
};

/* A CQ entry: the work completion and when it was written. */
struct dpv_cqe {
	struct ibv_wc wc;
	uint64_t ts;             /* TSC at completion (completion_ts) */
	uint32_t retire;         /* UD send WRs this CQE frees when polled */
};

struct dpv_cq {
	struct ibv_cq_ex ibcq;   /* begins with the struct ibv_cq layout */
	struct dpv_bufs bufs;
	struct dpv_pd *upd;      /* parent domain given (IBV_CQ_INIT_ATTR_MASK_PD) */
	bool lockless;           /* parent domain with a thread domain */
	rte_spinlock_t lock;
	struct dpv_cqe *ring;
	uint32_t size;           /* power of two, >= cqe + 1 */
	uint32_t head, tail;     /* consumer / producer counters */
	int cqe;                 /* what the user asked for (reported) */
	bool armed, solicited_only;
	bool overflow;
	struct dpv_comp_channel *chan;
	_Atomic int users;       /* QPs and SRQs using the CQ */
	/* extended CQ (ibv_start_poll): */
	uint64_t wc_flags;
	bool single_threaded;    /* IBV_CREATE_CQ_ATTR_SINGLE_THREADED: no lock */
	struct dpv_cqe *cur;     /* entry being read between start/end_poll */
	uint32_t poll_head;
};

/* XRC domain: one per inode (or anonymous), shared by its handles. */
struct dpv_xrc_dom {
	struct dpv_xrc_dom *next;
	bool has_inode;
	dev_t dev;
	ino_t ino;
	unsigned int handles;    /* open ibv_xrcd handles */
};

struct dpv_xrcd {
	struct ibv_xrcd ibxrcd;
	struct dpv_xrc_dom *dom;
	_Atomic int users;       /* XRC SRQs and target QPs through this handle */
};

struct dpv_recv_wqe {
	uint64_t wr_id;
	uint32_t num_sge;
	struct ibv_sge sge[];
};

struct dpv_srq {
	struct ibv_srq ibsrq;
	struct dpv_bufs bufs;
	struct dpv_pd *upd;      /* the PD given */
	struct dpv_pd *pd;       /* protection domain (base) */
	enum ibv_srq_type type;
	uint32_t srq_num;
	struct dpv_xrcd *xrcd;   /* XRC SRQ */
	struct dpv_cq *cq;       /* XRC SRQ: receive completions go here */
	rte_spinlock_t lock;
	uint8_t *wqes;
	uint32_t wqe_size, max_wr, max_sge, head, tail, limit;
	_Atomic int users;
};

struct dpv_qp {
	struct ibv_qp_ex ibqp;   /* begins with struct ibv_qp */
	struct dpv_bufs bufs;
	struct dpv_context *ctx;
	struct dpv_pd *upd;      /* the PD given (parent domain or plain) */
	bool lockless;           /* parent domain with a thread domain */
	struct dpv_pd *pd;       /* protection domain (base) */
	struct dpv_cq *scq, *rcq;
	struct dpv_srq *srq;
	struct dpv_port *port;
	struct dpv_qctx *qc;
	enum ibv_qp_type type;
	enum ibv_qp_state state;
	struct dpv_xrcd *xrcd;   /* XRC target QP (and handles from ibv_open_qp) */
	struct dpv_qp *opened;   /* ibv_open_qp handle: the real QP */
	_Atomic int open_refs;   /* handles opened on this QP */
	bool sq_sig_all;
	struct ibv_qp_cap cap;
	/* attributes (ibv_query_qp) */
	struct ibv_qp_attr attr;
	/* send side */
	rte_spinlock_t sq_lock;
	uint32_t sq_psn;
	uint32_t sq_outstanding;
	/* UD: send WRs posted whose slot is not free yet (a slot frees when
	 * the CQE of its WR, or of a later signalled WR, is polled) */
	_Atomic uint32_t sq_inflight;
	uint32_t sq_unsig;
	/* receive side */
	rte_spinlock_t rq_lock;
	uint8_t *rq;             /* ring of dpv_recv_wqe */
	uint32_t rq_wqe_size, rq_size, rq_head, rq_tail;
	/* RC/UC state (dpv_rc.h), NULL for UD */
	struct dpv_rc *rc;
	struct dpv_qp *timer_next;  /* list of connected QPs of the qctx */
	struct dpv_qp *td_next;     /* list of connected QPs of the TD */
	/* extended post API (ibv_wr_*) batch, NULL unless SEND_OPS_FLAGS */
	struct dpv_wr_batch *wrb;
	/* counters */
	_Atomic uint64_t tx_pkts, rx_pkts, rx_drops;
	_Atomic uint64_t cnt[DPV_CNT_NR];
};

/*
 * Locks of QPs and CQs. Objects created through a parent domain with a
 * thread domain (lockless) are used by one thread only: the transport defers
 * their packets to that thread (dpv_td_*), so they need no lock.
 */
static inline void qp_lock(struct dpv_qp *qp)
{
	if (!qp->lockless)
		rte_spinlock_lock(&qp->sq_lock);
}
static inline void qp_unlock(struct dpv_qp *qp)
{
	if (!qp->lockless)
		rte_spinlock_unlock(&qp->sq_lock);
}
static inline int qp_trylock(struct dpv_qp *qp)
{
	return qp->lockless ? 1 : rte_spinlock_trylock(&qp->sq_lock);
}
static inline void rq_lock(struct dpv_qp *qp)
{
	if (!qp->lockless)
		rte_spinlock_lock(&qp->rq_lock);
}
static inline void rq_unlock(struct dpv_qp *qp)
{
	if (!qp->lockless)
		rte_spinlock_unlock(&qp->rq_lock);
}
static inline void cq_lock(struct dpv_cq *cq)
{
	if (!cq->lockless)
		rte_spinlock_lock(&cq->lock);
}
static inline void cq_unlock(struct dpv_cq *cq)
{
	if (!cq->lockless)
		rte_spinlock_unlock(&cq->lock);
}

/* Add to a counter: plain load and store (no locked instruction) for
 * single-threaded objects, an atomic add otherwise. */
static inline void dpv_ctr_add(_Atomic uint64_t *c, uint64_t v, bool lockless)
{
	if (lockless)
		atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + v,
				      memory_order_relaxed);
	else
		atomic_fetch_add_explicit(c, v, memory_order_relaxed);
}

/* Send-queue slot accounting of UD QPs (plain ops when lockless). */
static inline void dpv_inflight_add(struct dpv_qp *qp, int32_t v)
{
	if (qp->lockless)
		atomic_store_explicit(&qp->sq_inflight,
				      atomic_load_explicit(&qp->sq_inflight, memory_order_relaxed) + (uint32_t)v,
				      memory_order_relaxed);
	else
		atomic_fetch_add_explicit(&qp->sq_inflight, (uint32_t)v, memory_order_acq_rel);
}

/* Is the calling thread the owner of td? The first thread to ask claims it. */
static inline bool dpv_td_claim(struct dpv_td *td)
{
	if (!atomic_load_explicit(&td->owner_set, memory_order_acquire)) {
		td->owner = pthread_self();
		atomic_store_explicit(&td->owner_set, true, memory_order_release);
		return true;
	}
	return pthread_equal(td->owner, pthread_self());
}
static inline bool dpv_td_is_owner(struct dpv_td *td)
{
	return atomic_load_explicit(&td->owner_set, memory_order_acquire) &&
	       pthread_equal(td->owner, pthread_self());
}

/* UDP source port of a flow: the flow label mapping when the address
 * vector has one, else 0xC000 + entropy from the QPNs (as rxe hashes the
 * QPN). */
static inline uint16_t dpv_udp_sport(uint32_t sqpn, uint32_t dqpn, uint32_t flow_label)
{
	if (flow_label)
		return ibv_flow_label_to_udp_sport(flow_label);
	uint32_t h = sqpn * 0x9e3779b1u ^ dqpn;
	h ^= h >> 16;
	return (uint16_t)(0xc000 | (h & 0x3fff));
}

/* Count on the QP and its port. */
static inline void dpv_qp_cnt(struct dpv_qp *qp, enum dpv_cnt c)
{
	dpv_ctr_add(&qp->cnt[c], 1, qp->lockless);
	atomic_fetch_add_explicit(&qp->port->stats.cnt[c], 1, memory_order_relaxed);
}

static inline struct dpv_context *to_dctx(struct ibv_context *c)
{
	return container_of(c, struct dpv_context, vctx.context);
}
static inline struct dpv_pd *to_dpd(struct ibv_pd *p) { return container_of(p, struct dpv_pd, ibpd); }
static inline struct dpv_mr *to_dmr(struct ibv_mr *m) { return container_of(m, struct dpv_mr, ibmr); }
static inline struct dpv_ah *to_dah(struct ibv_ah *a) { return container_of(a, struct dpv_ah, ibah); }
static inline struct dpv_cq *to_dcq(struct ibv_cq *c)
{
	return container_of((struct ibv_cq_ex *)c, struct dpv_cq, ibcq);
}
static inline struct dpv_qp *to_dqp(struct ibv_qp *q)
{
	return container_of((struct ibv_qp_ex *)q, struct dpv_qp, ibqp);
}
static inline struct dpv_td *to_dtd(struct ibv_td *t) { return container_of(t, struct dpv_td, ibtd); }
static inline struct dpv_xrcd *to_dxrcd(struct ibv_xrcd *x) { return container_of(x, struct dpv_xrcd, ibxrcd); }
static inline struct dpv_srq *to_dsrq(struct ibv_srq *s) { return container_of(s, struct dpv_srq, ibsrq); }
static inline struct dpv_comp_channel *to_dch(struct ibv_comp_channel *c)
{
	return container_of(c, struct dpv_comp_channel, ch);
}
static inline struct ibv_cq *dcq_ib(struct dpv_cq *cq) { return ibv_cq_ex_to_cq(&cq->ibcq); }
static inline struct ibv_qp *dqp_ib(struct dpv_qp *qp) { return &qp->ibqp.qp_base; }

/* dpv_device.c */
struct dpv_device *dpv_devices(unsigned int *n);
void dpv_async_event(struct dpv_context *ctx, const struct ibv_async_event *ev);
int dpv_query_port_full(struct ibv_context *c, uint8_t port, struct ibv_port_attr *a);

/* dpv_mr.c */
struct dpv_mr *dpv_mr_lookup(uint32_t key);
/* Check an SGE list against MRs of pd; returns 0 or the IBV_WC_* error. */
int dpv_sge_check(struct dpv_pd *pd, const struct ibv_sge *sge, uint32_t n, int access);

/* dpv_cq.c */
/* Add a completion; may raise the channel event. Takes cq->lock. */
void dpv_cq_push(struct dpv_cq *cq, const struct ibv_wc *wc, bool solicited);
void dpv_cq_push_retire(struct dpv_cq *cq, const struct ibv_wc *wc, bool solicited, uint32_t retire);
int dpv_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc);
void dpv_cq_clean(struct dpv_cq *cq, uint32_t qpn);
int dpv_req_notify_cq(struct ibv_cq *cq, int solicited_only);

/* dpv_qp.c */
struct dpv_qp *dpv_qp_lookup(uint32_t qpn);
int dpv_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad);
int dpv_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);
int dpv_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);
struct ibv_qp *dpv_create_qp_ex(struct ibv_context *c, struct ibv_qp_init_attr_ex *attr);
void dpv_qp_to_error(struct dpv_qp *qp);
/* Pop one receive WQE (RQ or SRQ) into out; false if none. */
bool dpv_qp_pop_recv(struct dpv_qp *qp, uint64_t *wr_id, struct ibv_sge *sge, uint32_t *nsge,
		     struct dpv_pd **pd);

/* dpv_pd.c */
struct ibv_td *dpv_alloc_td(struct ibv_context *c, struct ibv_td_init_attr *a);
int dpv_dealloc_td(struct ibv_td *td);
struct ibv_pd *dpv_alloc_parent_domain(struct ibv_context *c, struct ibv_parent_domain_init_attr *a);
/* Allocate a zeroed buffer for an object through pd's allocator (or the
 * default one) and record it in bs. NULL with errno ENOMEM. */
void *dpv_buf_alloc(struct dpv_pd *pd, struct dpv_bufs *bs, size_t size, size_t align, uint32_t code);
void dpv_buf_free(struct dpv_bufs *bs, void *p);
void dpv_bufs_free_all(struct dpv_bufs *bs);

/* dpv_xrc.c */
struct ibv_xrcd *dpv_open_xrcd(struct ibv_context *c, struct ibv_xrcd_init_attr *a);
int dpv_close_xrcd(struct ibv_xrcd *x);
struct ibv_srq *dpv_create_srq_ex(struct ibv_context *c, struct ibv_srq_init_attr_ex *a);
int dpv_get_srq_num(struct ibv_srq *srq, uint32_t *srq_num);
struct ibv_qp *dpv_open_qp(struct ibv_context *c, struct ibv_qp_open_attr *a);
struct dpv_srq *dpv_srq_lookup(uint32_t srqn);
uint32_t dpv_srq_num_alloc(struct dpv_srq *s);
void dpv_srq_num_free(uint32_t n);

/* dpv_qpex.c */
uint64_t dpv_qpex_supported_ops(enum ibv_qp_type t);
int dpv_qpex_init(struct dpv_qp *qp, uint64_t ops, struct dpv_bufs *bs);

bool dpv_srq_pop(struct dpv_srq *s, uint64_t *wr_id, struct ibv_sge *sge, uint32_t *nsge);

/* dpv_ud.c: UD transport */
int dpv_ud_send_one(struct dpv_qp *qp, struct ibv_send_wr *wr);
void dpv_ud_rx(struct dpv_qp *qp, struct dpv_qctx *qc, struct rte_mbuf *m, struct dpv_pkt_info *pi);
void dpv_transport_rx(struct dpv_qctx *qc, struct rte_mbuf *m, struct dpv_pkt_info *pi);
void dpv_transport_poll(struct dpv_qctx *qc);
void dpv_stats_publish(void);
/* Owner thread of a TD: process packets deferred to it, run its timers. */
void dpv_td_progress(struct dpv_td *td);
void dpv_conn_add(struct dpv_qp *qp);
void dpv_conn_del(struct dpv_qp *qp);

/* Copy between an SGE list and a flat buffer (MRs already checked). */
void dpv_sge_copy_in(const struct ibv_sge *sge, uint32_t n, uint32_t off, const void *src, uint32_t len);
uint32_t dpv_sge_total(const struct ibv_sge *sge, uint32_t n);

/* Ensure the runtime is up; returns NULL with errno set. */
struct dpv_runtime *dpv_rt(void);

#endif /* DPV_VERBS_H */
