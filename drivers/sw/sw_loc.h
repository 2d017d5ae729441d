/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The software RoCEv2 transport ("sw" driver): private declarations.
 *
 * The engine objects of this driver, one per façade object: sw_qp (the QP
 * context: transport state of requester, completer and responder), sw_cq
 * (CQ producer), sw_srq (SRQ consumer), sw_td (thread domain). The engine
 * reads WQEs from the rings the façade fills and writes CQEs into the CQ
 * rings (dpv_queue.h); it never touches façade objects except the
 * engine-visible fields of MRs and AHs found through the object pool.
 *
 * Files, split as Linux rxe splits its transport:
 *   sw.c          registration, ops table, devices, progress, thread domains
 *   sw_tab.c      the engine's object tables (QPs, SRQs, MRs, AHs by number)
 *   sw_qp.c       QP contexts: create, modify (state changes), error and flush
 *   sw_doorbell.c how posted work reaches the engine (SQ/RQ doorbells, kicks)
 *   sw_dbring.c   shared mode's doorbell rings, one per application
 *   sw_cq.c       CQ producer: CQEs, arming, overrun
 *   sw_rq.c       receive queues: RQ and SRQ consumer (sw_rq_pop), SRQs
 *   sw_req.c      requester: WQEs -> request packets, go-back-N
 *   sw_comp.c     completer: ACK/NAK/responses -> send completions
 *   sw_resp.c     responder: request checks -> placement, receive completions
 *   sw_resp_q.c   responder output queue (ACK/NAK, READ and atomic responses)
 *   sw_recv.c     receive dispatch by destination QP (the port's rx hook)
 *   sw_ud.c       UD transport
 *   sw_mcast.c    multicast groups of UD QPs
 *   sw_gsi_fb.c   QP 1 when no application owns it (CM REJ fallback)
 *   sw_poll.c     the poll turn after each RX burst (ACKs, doorbells, timers)
 *   sw_timer.c    retransmission, RNR and probe timers
 *   sw_net.c      packet building and transmission, local memory access
 *   sw_mem.c      another process's memory (shared mode: process_vm_*)
 *   sw_fault.c    copies into registered memory that survive an munmap
 *   sw_stats.c    counters published for dpv_stat
 *   sw_telemetry.c  per-QP telemetry commands (dpdk-telemetry.py)
 *
 * Locking: a QP's engine state is protected by its lock (sw_qp_lock; none for
 * thread-domain QPs, whose packets are handed to the owner thread). Lock
 * order: context rx_lock -> QP lock -> SRQ lock / CQ lock -> port tx_lock.
 */
#ifndef SW_LOC_H
#define SW_LOC_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <rte_log.h>
#include <rte_ring.h>
#include <rte_spinlock.h>

#include "dpv_driver.h"
#include "dpv_port.h"
#include "dpv_wire.h"

extern int sw_logtype;
#define SW_LOG(level, fmt, ...) \
	rte_log(RTE_LOG_##level, sw_logtype, "dpverbs sw: " fmt "\n", ##__VA_ARGS__)
/* Is pmd.dpv.sw at debug level? Read from the log system when the driver
 * starts and then by every timer scan (sw_poll), so that the data path
 * tests a flag instead of calling into EAL per packet. */
extern bool sw_debug_on;
static inline bool sw_debug(void) { return unlikely(sw_debug_on); }
/* Per-QP debug trace (log level 8 of pmd.dpv.sw), as rxe_dbg_qp. */
#define SW_DBG_QP(qp, fmt, ...)                                                        \
	do {                                                                           \
		if (sw_debug())                                                        \
			rte_log(RTE_LOG_DEBUG, sw_logtype, "dpverbs sw: qp#%u: " fmt "\n", \
				(qp)->qpn, ##__VA_ARGS__);                             \
	} while (0)

/* Transport parameters of the software engine. */
#define SW_RC_WINDOW 256          /* max un-acknowledged request packets */
#define SW_RC_WINDOW_MIN 8        /* congestion window floor */
#define SW_RC_PROBE_US 1000       /* first tail-loss probe after no progress */
#define SW_RC_ACKREQ_EVERY 32     /* ask for an ACK at least this often */
#define SW_RESP_Q 32              /* responses waiting to be sent, per QP */
#define SW_RESP_BURST 64          /* response packets sent per turn */
#define SW_TIMER_US 10            /* timer scan period per context */
#define SW_TIMER_SLICE 16         /* QPs a timer scan looks at (round robin) */
extern uint64_t sw_us_cycles;     /* TSC ticks per microsecond (set at probe) */
#define SW_STARVED_US 1000        /* an engine context not polled this long was starved */
#define SW_TD_RING 4096           /* packets deferred to a thread domain's owner */

struct sw_dev {
	struct dpv_port *port;
	unsigned int index;
};

/* A thread domain: the thread that owns its objects and the packets other
 * threads received for them. */
struct sw_td {
	pthread_t owner;          /* set at its first post or poll */
	_Atomic bool owner_set;
	struct rte_ring *rx_ring; /* MP/SC: packets for the TD's QPs */
	struct sw_qp *conn;       /* its connected QPs, for timers (owner only) */
	uint64_t next_timer_tsc;
};

struct sw_cq {
	uint32_t handle;
	struct dpv_ring_hdr *ring;
	uint32_t size;            /* entries of ring (never re-read from its header) */
	uint32_t ci_cache;        /* the consumer index as last read (producer lock) */
	rte_spinlock_t lock;      /* producer lock (engine threads) */
	bool lockless;            /* thread domain: one thread writes */
	struct sw_td *td;
	bool timestamps;          /* CQEs carry the TSC (an extended CQ asked) */
	bool overrun;             /* CQ_ERR raised (IBA 11.4.2.1) */
	struct dpv_wake *wake;    /* shared mode: the owner's wake word, or NULL */
};

struct sw_srq {
	uint32_t srqn;
	struct dpv_ring_hdr *ring;
	uint32_t size, stride;    /* geometry of ring */
	rte_spinlock_t lock;      /* consumer lock: QPs of several contexts pop */
	uint32_t ci;
	uint32_t pd, xrcd;
	uint32_t max_sge;
	struct sw_cq *cq;         /* XRC SRQ */
};

/* A receive WQE taken from the RQ or SRQ, copied into the engine. */
struct sw_rwqe {
	uint64_t wr_id;
	uint32_t num_sge;
	uint32_t pd;
	struct dpv_sge sge[DPV_MAX_SGE_LIMIT];
};

/* Engine state of one send WQE (the ring slot itself is the façade's). */
enum sw_wqe_state {
	WQE_POSTED = 0,   /* fetched, not started */
	WQE_SENDING,      /* some packets sent (or rewound for a retry) */
	WQE_PENDING,      /* all request packets sent, waiting for the response */
	WQE_DONE,         /* completed (CQE written if signalled) */
};

struct sw_wqe {
	uint8_t state;
	bool rd_counted;          /* counts against max_rd_atomic */
	uint32_t first_psn, last_psn, npkts;
	uint32_t next_off;        /* requester: next byte to send */
	uint32_t next_psn;
	uint32_t read_recv;       /* READ: bytes of response received */
	uint32_t rd_chunk_end;    /* READ: end of the range asked for last */
};

/* A response waiting to go out: responses leave in PSN order (IBA 9.7.5),
 * and a long READ is sent SW_RESP_BURST packets at a time. */
enum { RESP_READ = 1, RESP_ATOMIC, RESP_ACK };
struct sw_resp_ent {
	uint8_t kind;
	uint8_t syndrome;         /* RESP_ACK: ACK or NAK syndrome */
	uint32_t psn;             /* first PSN of the response(s) */
	uint32_t msn;
	const uint8_t *src;       /* RESP_READ: data, len bytes ... */
	uint32_t rkey;            /* ... in the MR of this rkey */
	uint32_t len, sent;
	uint32_t req_psn;         /* RESP_READ: first PSN of the READ it answers */
	uint64_t orig;            /* RESP_ATOMIC */
};

/* A responder resource kept for duplicate READ/ATOMIC requests (IBA 9.9.2). */
struct sw_rd_res {
	bool valid;
	bool atomic;
	uint32_t first_psn, last_psn;
	uint64_t orig;            /* ATOMIC: the value returned */
};

struct sw_req {
	uint32_t sq_head;         /* oldest WQE not completed */
	uint32_t sq_cur;          /* next WQE to send */
	uint32_t sq_fetched;      /* WQEs below this have engine state */
	uint32_t psn;             /* next PSN to send */
	uint32_t cwnd;            /* AIMD window, SW_RC_WINDOW_MIN..SW_RC_WINDOW */
	uint32_t rd_outstanding;  /* READ/ATOMIC in flight */
	bool sqd_pending;         /* SQ_DRAINED to raise when empty */
	bool path_ok;             /* the peer's MAC is known: requests may go */
	bool neigh_wait;          /* waiting for it (timer scan re-runs us) */
	bool tx_stalled;          /* the TX queue was full: timer scan re-runs us */
	_Atomic bool db_pending;  /* service mode: QPN queued on the doorbell ring */
};

struct sw_comp {
	uint32_t psn;             /* oldest un-acknowledged PSN */
	uint8_t retry_left, rnr_left;
	uint64_t timer_deadline;  /* retransmission timer (tsc), 0 = off */
	uint64_t rnr_deadline;    /* RNR wait (tsc), 0 = off */
	uint64_t probe_deadline;  /* tail-loss probe (tsc), 0 = off */
	uint64_t probe_cycles;    /* its current interval */
	uint32_t rnr_psn;
	bool rd_wait;             /* after a READ gap retry: ignore responses ... */
	uint32_t rd_wait_psn;     /* ... until the replay starting here arrives */
	uint32_t retry_psn;       /* last go-back target ... */
	uint32_t retry_comp_psn;  /* ... and comp psn then */
	bool retried;
	uint32_t lock_miss;       /* timer scans that found it due but locked (debug) */
};

struct sw_resp {
	uint32_t psn;             /* expected PSN */
	uint32_t msn;
	bool nak_sent;            /* PSN sequence NAK sent for psn */
	bool comm_est;            /* COMM_EST raised */
	uint8_t in_msg;           /* 0 none, 1 SEND, 2 WRITE: middle/last expected */
	bool uc_drop;             /* UC: dropping the rest of a broken message */
	struct sw_srq *xsrq;      /* XRC target: SRQ of the message in progress */
	bool have_rwqe;
	struct sw_rwqe rwqe;
	uint32_t recv_off;        /* bytes placed in the current receive WQE */
	uint8_t *wr_addr;         /* RDMA WRITE cursor */
	uint32_t wr_rkey;         /* ... in the MR of this rkey */
	uint32_t wr_left, wr_total;
	bool ack_pending;         /* coalesced ACK to send after this burst */
	uint32_t ack_psn;
	bool stalled;             /* output queue blocked by a full TX queue */
	struct sw_rd_res *res;    /* max_dest_rd_atomic entries */
	unsigned int n_res, res_next;
	struct sw_resp_ent q[SW_RESP_Q];
	uint32_t q_head, q_tail;
};

struct sw_qp {
	uint32_t qpn;
	enum ibv_qp_type type;
	bool gsi;                 /* QP 1 of its port on the wire (its qpn is a pool number) */
	bool gsi_shared;          /* one of dpverbsd's applications' GSI QPs (send filter) */
	_Atomic int state;        /* enum ibv_qp_state */
	struct sw_dev *dev;
	struct dpv_port *port;
	struct dpv_qctx *qc;      /* engine context the QP is bound to */
	bool lockless;
	struct sw_td *td;
	rte_spinlock_t lock;
	uint32_t pd, xrcd;
	struct sw_cq *scq, *rcq;
	struct sw_srq *srq;
	struct dpv_ring_hdr *sq, *rq;
	uint32_t sq_size, sq_stride, rq_size, rq_stride; /* their geometry: the headers'
				     fields are never re-read (another process can write them) */
	uint32_t owner;           /* shared mode: whose doorbells may name it (0: any) */
	struct sw_wqe *wqe;       /* sq_size entries */
	uint32_t rq_ci;
	struct ibv_qp_attr attr;  /* the QP context as last modified */
	struct ibv_qp_cap cap;
	uint32_t ud_psn;          /* UD: next PSN */
	struct sw_req req;
	struct sw_comp comp;
	struct sw_resp resp;
	struct sw_qp *timer_next; /* the context's (or TD's) timer list */
	/* counters */
	uint64_t tx_pkts, rx_pkts, rx_drops;
	uint64_t cnt[DPV_CNT_NR];
};

/* ---- locking ---- */
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

static inline bool sw_is_rd_atomic(uint8_t op)
{
	return op == IBV_WR_RDMA_READ || op == IBV_WR_ATOMIC_CMP_AND_SWP || op == IBV_WR_ATOMIC_FETCH_AND_ADD;
}

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

/* Transport bits of the opcodes this QP sends and accepts. */
static inline uint8_t sw_qp_tr(const struct sw_qp *qp)
{
	switch (qp->type) {
	case IBV_QPT_UC:
		return DPV_TR_UC;
	case IBV_QPT_XRC_SEND:
	case IBV_QPT_XRC_RECV:
		return DPV_TR_XRC;
	case IBV_QPT_UD:
		return DPV_TR_UD;
	default:
		return DPV_TR_RC;
	}
}

/* ---- the engine's tables (sw_tab.c) ---- */

/* A memory region (the engine's memory protection table entry). */
struct sw_mr {
	_Atomic uint32_t key;     /* lkey == rkey; 0: free */
	uint32_t pd;
	uint8_t *addr;            /* as the registering process addresses it */
	uint64_t iova, length;
	int access;
	int32_t pid;              /* 0: the engine reaches it at addr + delta; else that process' address */
	int64_t delta;            /* pid 0: engine address - addr (shared memory mapped elsewhere) */
};

/* An address handle's path. */
struct sw_ah {
	_Atomic uint32_t handle;  /* 0: free */
	void *dev;                /* struct sw_dev of the AH's device */
	uint8_t sgid[16], dgid[16];
	uint8_t ip_ver, tclass, hop_limit;
	uint32_t flow_label;
};

int sw_tab_init(void);
int sw_tab_qp_set(uint32_t qpn, struct sw_qp *qp);
/* The engine QP of a QPN, or NULL (not created, or being destroyed). */
struct sw_qp *sw_qp_lookup(uint32_t qpn);
int sw_tab_srq_set(uint32_t srqn, struct sw_srq *s);
struct sw_srq *sw_srq_lookup(uint32_t srqn);
int sw_reg_mr(void *dev, const struct dpv_mr_desc *d);
void sw_dereg_mr(void *dev, uint32_t key);
/* The GSI QP of a port (QP 1 on the wire), or NULL; set -EEXIST if taken. */
/* sw_mcast.c: groups and their attached UD QPs, per port */
#define SW_MCAST_GRPS DPV_MAX_MCAST_GRP
#define SW_MCAST_QPS DPV_MAX_MCAST_QP_ATTACH
int sw_mcast_attach(void *qp, const uint8_t *mgid);
int sw_mcast_detach(void *qp, const uint8_t *mgid);
void sw_mcast_qp_gone(struct sw_qp *qp);
void sw_mcast_rx(struct dpv_qctx *qc, struct rte_mbuf *m, struct dpv_pkt_info *pi);
struct sw_qp *sw_gsi_lookup(const struct dpv_port *port, const uint8_t sgid[16], const uint8_t *mad,
			     uint32_t len);
void sw_gsi_demux(dpv_gsi_demux_fn fn, dpv_gsi_tx_fn tx, void *arg);
/* dpverbsd's send filter for a gsi_shared QP's MAD (true: send it). */
bool sw_gsi_tx_ok(const struct sw_qp *qp, const uint8_t dgid[16], const uint8_t *mad, uint32_t len);
int sw_tab_gsi_set(const struct dpv_port *port, struct sw_qp *old, struct sw_qp *qp);
/* The MR of an lkey/rkey (its full 32-bit value), or NULL. */
const struct sw_mr *sw_mr_lookup(uint32_t key);
/* Is any registered MR in another process' memory, or mapped at another
 * address (shared mode)? Then every SGE is resolved through its MR. So is
 * every SGE once the engine serves other processes (sw_db_attach): their
 * rings are memory they write, an SGE read there may have changed since
 * it was checked, and a raw SGE address is never to be used. */
extern _Atomic uint32_t sw_remote_mrs;
extern _Atomic bool sw_serves_apps;
static inline bool sw_any_remote_mr(void)
{
	return atomic_load_explicit(&sw_remote_mrs, memory_order_relaxed) != 0 ||
	       atomic_load_explicit(&sw_serves_apps, memory_order_relaxed);
}
int sw_create_ah(void *dev, const struct dpv_ah_desc *d);
void sw_destroy_ah(void *dev, uint32_t handle);
const struct sw_ah *sw_ah_lookup(uint32_t handle);

/* ---- thread domains (sw.c) ---- */
bool sw_td_claim(struct sw_td *td);
static inline bool sw_td_is_owner(struct sw_td *td)
{
	return atomic_load_explicit(&td->owner_set, memory_order_acquire) && pthread_equal(td->owner, pthread_self());
}
bool sw_lcore_mode(void);

/* ---- sw_cq.c ---- */
/* Write a completion; raises the channel event when armed. */
void sw_cq_push(struct sw_cq *cq, const struct dpv_cqe *cqe);
/* true when a successful CQE with these flags (DPV_CQE_F_*) pushed now
 * would signal the CQ's completion channel: a thread waits for it. */
static inline bool sw_cq_armed(struct sw_cq *cq, uint32_t flags)
{
	uint32_t arm = atomic_load_explicit(&cq->ring->arm, memory_order_relaxed);
	return arm == DPV_CQ_ARM_NEXT || (arm && (flags & DPV_CQE_F_SOLICITED));
}
void *sw_create_cq(void *dev, const struct dpv_cq_cfg *cfg);
void sw_destroy_cq(void *cq);
int sw_resize_cq(void *cq, struct dpv_ring_hdr *ring, uint32_t size);

/* ---- sw_rq.c ---- */
void *sw_create_srq(void *dev, const struct dpv_srq_cfg *cfg);
void sw_destroy_srq(void *srq);
/* Take the next receive WQE of an SRQ or of the QP's RQ. */
bool sw_srq_pop(struct sw_srq *s, struct sw_rwqe *out);
bool sw_rq_pop(struct sw_qp *qp, struct sw_rwqe *out);
/* Complete every receive WQE of the QP's RQ with IBV_WC_WR_FLUSH_ERR. */
void sw_rq_flush(struct sw_qp *qp);

/* ---- sw_qp.c ---- */
void *sw_create_qp(const struct dpv_qp_cfg *cfg);
void sw_destroy_qp(void *qp);
/* Wait until no engine context is inside a receive (every rx_lock taken
 * once): after this, objects removed from the tables are unreachable. */
void sw_quiesce(void);
int sw_modify_qp(void *qp, const struct ibv_qp_attr *attr, int mask, enum ibv_qp_state cur, enum ibv_qp_state to);
enum ibv_qp_state sw_query_qp_state(void *qp);
void sw_query_qp_counters(void *qp, uint64_t *cnt, unsigned int n);
/* The QP goes to ERR: flush its receive queue (IBA 10.3.1). Must hold the QP lock. */
void sw_qp_to_error(struct sw_qp *qp);
/* Raise an async event on the QP. */
void sw_qp_event(struct sw_qp *qp, enum ibv_event_type type);
uint32_t sw_qp_mtu(const struct sw_qp *qp);

/* ---- sw_req.c (requester) ---- */
/* Give the WQEs published since the last look their engine state. */
void sw_req_fetch(struct sw_qp *qp);
/* Fetch newly posted WQEs and send what the window allows. Must hold the QP lock. */
void sw_req_run(struct sw_qp *qp);
void sw_req_read_more(struct sw_qp *qp, struct sw_wqe *s, struct dpv_send_wqe *w);
/* Go back to psn. force: a timer expired; otherwise (NAK, implied NAK, read
 * gap) a second go-back to the same PSN without progress is ignored. */
void sw_req_retry(struct sw_qp *qp, uint32_t psn, bool force, bool probe);

/* ---- sw_comp.c (completer) ---- */
void sw_comp_rx(struct sw_qp *qp, struct rte_mbuf *m, struct dpv_pkt_info *pi);
/* Complete the WQE at index i (in order). Must hold the QP lock. */
void sw_comp_wqe_done(struct sw_qp *qp, uint32_t i, enum ibv_wc_status st);
/* Complete WQE i with an error; the QP goes to ERR and everything flushes. */
void sw_comp_error(struct sw_qp *qp, uint32_t i, enum ibv_wc_status st);
void sw_comp_flush_sq(struct sw_qp *qp);

/* ---- sw_resp.c (responder) ---- */
void sw_resp_rx(struct sw_qp *qp, struct rte_mbuf *m, struct dpv_pkt_info *pi);
/* The QP's responder state starts afresh (RTR). */
void sw_resp_reset(struct sw_qp *qp);

/* ---- sw_resp_q.c (responder output) ---- */
void sw_resp_ack(struct sw_qp *qp, uint8_t syndrome, uint32_t psn);
void sw_resp_nak(struct sw_qp *qp, uint8_t syndrome, uint32_t psn);
/* Remember an ACK to send at the end of the burst (coalesced). */
void sw_resp_queue_ack(struct sw_qp *qp, uint32_t psn);
void sw_resp_flush_ack(struct sw_qp *qp);
void sw_resp_read(struct sw_qp *qp, const uint8_t *src, uint32_t rkey, uint32_t len, uint32_t psn,
		  uint32_t req_psn);
void sw_resp_atomic(struct sw_qp *qp, uint32_t psn, uint64_t orig);
/* Send up to budget queued response packets; true if some remain. */
bool sw_resp_pump(struct sw_qp *qp, unsigned int budget);
static inline bool sw_resp_pending(const struct sw_qp *qp)
{
	return qp->resp.q_head != qp->resp.q_tail;
}

/* ---- sw_recv.c ---- */
void sw_rx(struct dpv_qctx *qc, struct rte_mbuf *m, struct dpv_pkt_info *pi);
/* A MAD to QP 1 of a port without a GSI QP (sw_gsi_fb.c); m stays the caller's. */
void sw_gsi_fallback(struct dpv_qctx *qc, struct rte_mbuf *m, const struct dpv_pkt_info *pi);
/* A TD's owner: process the packets deferred to it. */
int sw_td_rx(struct sw_td *td);

/* ---- sw_ud.c ---- */
void sw_ud_send(struct sw_qp *qp);
void sw_ud_rx(struct sw_qp *qp, struct dpv_qctx *qc, struct rte_mbuf *m, struct dpv_pkt_info *pi);

/* ---- sw_dbring.c (doorbell rings of applications, shared mode) ---- */
unsigned int sw_db_count(void *dev);
unsigned int sw_qp_db_index(void *qp);
void *sw_db_attach(void *dev, unsigned int index, struct dpv_db_ring *ring, uint32_t size, uint32_t owner);
void sw_db_detach(void *db);
void sw_db_sync(void *dev);
/* Take the doorbells rung on the context's attached rings: how many. */
int sw_db_poll(struct dpv_qctx *qc);

/* ---- sw_poll.c ---- */
/* The per-context tasks after each RX burst (poll hook of the port layer):
 * returns the doorbells it took (work the caller did not see as packets). */
int sw_poll(struct dpv_qctx *qc, uint64_t now);
int sw_td_progress(struct sw_td *td);
/* Queue a QP with ACKs to coalesce at the end of this burst (or send now). */
void sw_defer_ack(struct sw_qp *qp, struct dpv_qctx *qc);

/* ---- sw_doorbell.c ---- */
/* ibv_post_send / ibv_post_recv on the QP (driver operations). */
void sw_sq_doorbell(void *qp);
void sw_rq_doorbell(void *qp);
/* Run the send side of a QP (requester for RC/UC/XRC, sender for UD; an
 * ACK it deferred leaves first). Must hold the QP lock. */
void sw_qp_send(struct sw_qp *qp);
/* The QP's sending stopped on a full TX queue (or loopback ring): queue it
 * on its context's ring so that the context's next poll turn, after
 * receiving, runs it again. Not for a thread domain's QPs (their owner's
 * timer pass does). Must hold the QP lock. */
void sw_qp_kick(struct sw_qp *qp);
/* The QPs queued on the context's ring run: how many. */
int sw_doorbells_drain(struct dpv_qctx *qc);

/* ---- sw_timer.c ---- */
/* (Re)start the retransmission timer (IBA 9.7.6.1.3) / the tail-loss probe. */
void sw_timer_restart(struct sw_qp *qp);
void sw_timer_probe_restart(struct sw_qp *qp, bool reset);
/* The QP's timers and deferred work run from its context's (or TD's) scan. */
int sw_timer_add(struct sw_qp *qp); /* 0 or -ENOMEM */
void sw_timer_del(struct sw_qp *qp);
/* The timer scan of a context, at most every SW_TIMER_US (at once when
 * starved: the context was not polled for SW_STARVED_US). */
void sw_timer_scan(struct dpv_qctx *qc, uint64_t now, bool starved);
/* A thread domain's QPs' timers, at most every SW_TIMER_US. */
void sw_timer_td(struct sw_td *td, uint64_t now);

/* ---- sw_net.c ---- */
void sw_build_init(struct sw_qp *qp, struct dpv_pkt_build *b, uint8_t opcode, uint32_t psn);
/* Build and send one packet; payload from SGEs at byte off, or from flat.
 * 0, -ENOBUFS (TX queue full: nothing sent, try later), other -errno (dropped). */
/* Copies between the engine and memory of this or another process
 * (sw_mem.c): 0 or -errno (the process or the mapping is gone). */
int sw_mem_write(int32_t pid, void *dst, const void *src, uint32_t len);
/* Writes into another process' memory are batched per thread (sw_mem.c):
 * sw_mem_flush before anything that makes them visible (a CQE, a packet,
 * the end of a poll turn). Read-ahead of another process' memory within a
 * scope (one WQE sent, one run of READ responses). */
void sw_mem_flush_slow(void);
extern __thread uint32_t sw_mem_pending; /* writes waiting in this thread's batch */
static inline void sw_mem_flush(void)
{
	if (unlikely(sw_mem_pending))
		sw_mem_flush_slow();
}
void sw_mem_ra_begin(void);
void sw_mem_ra_end(void);
int sw_mem_read(int32_t pid, void *dst, const void *src, uint32_t len);
/* A 64-bit atomic (compare-and-swap, else fetch-and-add) at p of process
 * pid; *orig gets the value before. */
int sw_mem_atomic(int32_t pid, uint64_t *p, bool cmp_swap, uint64_t cmp, uint64_t val, uint64_t *orig);

/* ---- sw_fault.c: copies that survive registered memory being unmapped ---- */
void sw_fault_init(void);
/* memcpy, or -EFAULT (counted in sw_mem_faults, logged once) when a page of
 * dst or src is not mapped */
int sw_copy_safe(void *dst, const void *src, size_t n);
/* a 64-bit compare-and-swap (else fetch-and-add) at p, or -EFAULT */
int sw_atomic_safe(uint64_t *p, bool cmp_swap, uint64_t cmp, uint64_t val, uint64_t *orig);
extern uint64_t sw_mem_faults;
int sw_xmit(struct sw_qp *qp, struct dpv_pkt_build *b, uint32_t pd, const struct dpv_sge *sge, uint32_t nsge,
	    uint32_t off, uint32_t len, const void *flat);
/* A frame of b's headers and len bytes of data, sent from context qc (no QP). */
int sw_xmit_flat(struct dpv_qctx *qc, const struct dpv_pkt_build *b, const void *data, uint32_t len);
uint16_t sw_udp_sport(uint32_t sqpn, uint32_t dqpn, uint32_t flow_label);
/* Check an SGE list against MRs of protection domain pd: IBV_WC_SUCCESS or
 * IBV_WC_LOC_PROT_ERR. */
int sw_sge_check(uint32_t pd, const struct dpv_sge *sge, uint32_t n, int access);
uint32_t sw_sge_total(const struct dpv_sge *sge, uint32_t n);
int sw_sge_copy_in_slow(uint32_t pd, const struct dpv_sge *sge, uint32_t n, uint32_t off, const void *src,
			 uint32_t len);
void sw_sge_copy_out_slow(uint32_t pd, const struct dpv_sge *sge, uint32_t n, uint32_t off, void *dst,
			  uint32_t len);
/* Copy len bytes into the memory the SGE list describes, from offset off
 * of it (or out of it): one memcpy for the common case (one SGE, memory of
 * this process), sw_mem.c for lists and memory of another process. The
 * slow path resolves every SGE through its MR again (bounds and, unless pd
 * is SW_PD_CHECKED, the protection domain): SGEs read from a ring that
 * another process writes are checked where they are used. */
#define SW_PD_CHECKED 0u /* an SGE the engine built from a key it checked */
/* 0, or -EFAULT: this process' memory was unmapped under its MR (sw_fault.c) */
static inline int sw_sge_copy_in(uint32_t pd, const struct dpv_sge *sge, uint32_t n, uint32_t off,
				 const void *src, uint32_t len)
{
	if (likely(len && n == 1 && off + len <= sge[0].length && !sw_any_remote_mr()))
		return sw_copy_safe((uint8_t *)(uintptr_t)sge[0].addr + off, src, len);
	return len ? sw_sge_copy_in_slow(pd, sge, n, off, src, len) : 0;
}
static inline void sw_sge_copy_out(uint32_t pd, const struct dpv_sge *sge, uint32_t n, uint32_t off,
				   void *dst, uint32_t len)
{
	if (likely(len && n == 1 && off + len <= sge[0].length && !sw_any_remote_mr())) {
		if (unlikely(sw_copy_safe(dst, (const uint8_t *)(uintptr_t)sge[0].addr + off, len) != 0))
			memset(dst, 0, len); /* gone: zeroes rather than stale frame bytes */
	} else if (len)
		sw_sge_copy_out_slow(pd, sge, n, off, dst, len);
}
/* The payload of a send WQE: its SGEs (at most the QP's max_send_sge), or
 * (returned *inl non-NULL) its inline bytes, *inl_len of them (at most
 * what the SQ's stride holds). Returns the SGE count. */
uint32_t sw_wqe_payload(const struct sw_qp *qp, struct dpv_send_wqe *w, const struct dpv_sge **sge,
			const uint8_t **inl, uint32_t *inl_len);

/* ---- sw_stats.c ---- */
void sw_stats_publish(uint64_t now);

/* ---- sw_telemetry.c ---- */
/* Register /dpverbs/qps and /dpverbs/qp,<qpn> (once; not if eal.telemetry is false). */
void sw_telemetry_init(struct dpv_runtime *rt);

#endif /* SW_LOC_H */
