/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The software RoCEv2 transport ("sw" driver): its objects and the
 * transport parameters that size them.
 *
 * One engine object per façade object: sw_qp (the QP context: transport
 * state of requester, completer and responder), sw_cq (CQ producer), sw_srq
 * (SRQ consumer), sw_td (thread domain), sw_dev (a port); and the entries
 * of the engine's tables (sw_tab.c): sw_mr (memory protection table) and
 * sw_ah (address handles). The engine reads WQEs from the rings the façade
 * fills and writes CQEs into the CQ rings (dpv_queue.h); it never touches
 * façade objects except the engine-visible fields of MRs and AHs found
 * through the object pool.
 *
 * Locking: a QP's engine state is protected by its lock (sw_qp_lock.h; none
 * for thread-domain QPs, whose packets are handed to the owner thread). Lock
 * order: context rx_lock -> QP lock -> SRQ lock / CQ lock -> port tx_lock.
 */
#ifndef SW_OBJ_H
#define SW_OBJ_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <rte_ring.h>
#include <rte_spinlock.h>

#include "dpv_driver.h"
#include "dpv_port.h"
#include "dpv_wire.h"

/* Transport parameters of the software engine. */
#define SW_RC_WINDOW 256          /* max un-acknowledged request packets */
#define SW_RC_WINDOW_MIN 8        /* congestion window floor */
#define SW_RC_PROBE_US 1000       /* first tail-loss probe after no progress */
#define SW_RC_ACKREQ_EVERY 32     /* ask for an ACK at least this often */
#define SW_RESP_Q 32              /* responses waiting to be sent, per QP */
#define SW_RESP_BURST 64          /* response packets sent per turn */
#define SW_TIMER_US 10            /* timer scan period per context */
#define SW_TIMER_SLICE 16         /* QPs a timer scan looks at (round robin) */
#define SW_STARVED_US 1000        /* an engine context not polled this long was starved */
#define SW_TD_RING 4096           /* packets deferred to a thread domain's owner */
#define SW_RNDV_Q 4               /* tag matching rendezvous waiting per QP */

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

/* A CQ's producer side. A CQE that does not fit (overrun) puts the CQ in
 * error, as on a ConnectX: nothing more is written into it, IBV_EVENT_CQ_ERR
 * is raised once, and the QPs that complete into it go to ERR with
 * IBV_EVENT_QP_FATAL (sw_cq.c, sw_qp_cq_fatal). A CQ created with
 * IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN loses the CQE instead and stays usable. */
struct sw_cq {
	uint32_t handle;
	struct dpv_ring_hdr *ring;
	uint32_t size;            /* entries of ring (never re-read from its header) */
	uint32_t ci_cache;        /* the consumer index as last read (producer lock) */
	rte_spinlock_t lock;      /* producer lock (engine threads) */
	_Atomic uint64_t err_epoch; /* 0, or in error after an overrun since this
				     sw_cq_epoch (set under the producer lock, read
				     without it by its QPs: sw_qp_cq_due) */
	bool ignore_overrun;      /* IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN */
	bool lockless;            /* thread domain: one thread writes */
	struct sw_td *td;
	bool timestamps;          /* CQEs carry the TSC (an extended CQ asked) */
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
	struct sw_cq *cq;         /* XRC SRQ; tag matching SRQ: its completions */
	uint32_t owner;           /* shared mode: the application whose doorbells may name it */
	struct sw_tm *tm;         /* tag matching SRQ (sw_tm.c), NULL otherwise */
};

/* A message on a tag matching SRQ: how it completes (sw_tm.c). */
enum { SW_TM_NONE = 0, SW_TM_MATCHED, SW_TM_UNEXPECTED, SW_TM_NO_TAG };
struct sw_tm_msg {
	uint8_t kind;             /* SW_TM_* */
	uint8_t skip;             /* bytes of the first packet not placed (the TMH) */
 	uint8_t status;           /* completion status (TM_RNDV_INCOMPLETE: software's rendezvous) */
	uint32_t free_tag;        /* MATCHED: srqn << 8 | handle, for DPV_CQE_F_TM_FREE */
	bool rndv;                /* matched rendezvous: the engine READs the data (sw_tm_rndv.c) */
	uint32_t priv;            /* TMH app_ctx */
	uint64_t tag;             /* TMH tag */
	uint64_t va;              /* rendezvous: the RVH (host order) */
	uint32_t rkey, len;
};

/* The rendezvous a QP's responder runs for a matched RNDV message: a READ
 * of the sender's data into the tagged buffer, then a FIN to the sender. */
enum { SW_RNDV_IDLE = 0, SW_RNDV_WAIT, SW_RNDV_READ, SW_RNDV_FIN };
struct sw_tm_rndv {
	uint8_t phase;            /* SW_RNDV_*: WAIT until the requester is idle */
	uint64_t va;
	uint32_t rkey, len, recv;
	uint32_t first_psn, last_psn, fin_psn;
	struct dpv_sge sge;       /* the tagged buffer */
	uint32_t pd;
	uint64_t wr_id;
	uint64_t tag;
	uint32_t priv;
	uint32_t free_tag;        /* its handle (DPV_CQE_F_TM_FREE) */
	struct sw_cq *cq;
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
	bool local;               /* a memory window operation, executed (PENDING): it
				     completes when every WQE before it has */
	uint8_t local_st;         /* local: its status (IBV_WC_SUCCESS, or the error it
				     completes with once it is the oldest WQE) */
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
	uint64_t src;             /* RESP_READ: data, len bytes (its MR's addresses) ... */
	uint32_t rkey;            /* ... in the MR of this rkey */
	uint32_t len, sent;
	uint32_t req_psn;         /* RESP_READ: first PSN of the READ it answers */
	uint64_t orig;            /* RESP_ATOMIC */
};

/* A responder resource kept for duplicate READ/ATOMIC requests (IBA 9.9.2)
 * and ATOMIC WRITE/FLUSH ones (annex A19). */
struct sw_rd_res {
	bool valid;
	uint8_t op;               /* the request's opcode without the transport bits */
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
	struct sw_tm_msg tm;      /* tag matching SRQ: what the message's TMH decided */
	struct sw_tm_rndv rndv;   /* tag matching SRQ: the rendezvous in progress ... */
	struct sw_tm_rndv rndv_q[SW_RNDV_Q]; /* ... and those waiting for it, in order */
	uint8_t rndv_qn;
	uint64_t wr_addr;         /* RDMA WRITE cursor (its MR's addresses) */
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
	uint64_t uid;             /* never reused (a type 2B window names its QP by it) */
	enum ibv_qp_type type;
	bool gsi;                 /* QP 1 of its port on the wire (its qpn is a pool number) */
	bool gsi_shared;          /* one of dpverbsd's applications' GSI QPs (send filter) */
	const struct dpv_rss_cfg *rss; /* a raw packet QP that spreads its frames over receive WQs, or NULL */
	_Atomic int state;        /* enum ibv_qp_state */
	struct sw_dev *dev;
	struct dpv_port *port;
	struct dpv_qctx *qc;      /* engine context the QP is bound to */
	bool lockless;
	struct sw_td *td;
	rte_spinlock_t lock;
	uint32_t pd, xrcd;
	struct sw_cq *scq, *rcq;
	bool cq_fatal;            /* a CQE of this QP met a CQ in error (its own CQs, or an
				     XRC SRQ's): to ERR at the next safe point (sw_qp_cq_fatal) */
	uint64_t up_epoch;        /* sw_cq_epoch when it last left RESET: a CQ of it that
				     went to error later moves it to ERR (sw_qp_cq_due) */
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

/* What an entry of the memory protection table is. */
enum sw_mpt_kind {
	SW_MPT_MR = 0,            /* a memory region (also a free entry: key 0) */
	SW_MPT_MW1,               /* a type 1 memory window */
	SW_MPT_MW2,               /* a type 2B memory window */
};

/* An entry of the engine's memory protection table (sw_tab.c): a memory
 * region, or a memory window (sw_mw.c), which shares the key space. */
struct sw_mr {
	_Atomic uint32_t key;     /* lkey == rkey (a window: its current rkey); 0: free */
	uint8_t kind;             /* enum sw_mpt_kind, set before the key is published */
	uint32_t pd;
	uint8_t *addr;            /* MR: as the registering process addresses it */
	uint64_t iova, length;    /* MR: its range; window: where it starts in its MR's
				     address space (the bind's addr) and its length */
	int access;               /* IBV_ACCESS_* (a window: its own, ZERO_BASED included) */
	int32_t pid;              /* 0: the engine reaches it at addr + delta; else that process' address */
	int64_t delta;            /* pid 0: engine address - addr (shared memory mapped elsewhere) */
	uint32_t n_mw;            /* MR: windows bound to it (table lock) */
	/* window: its binding, changed under the table lock, read through seq */
	_Atomic uint32_t seq;     /* odd while the binding changes (sw_mw.c) */
	uint32_t mr_key;          /* the MR it is bound to; 0: not bound */
	uint64_t qp_uid;          /* type 2B: sw_qp.uid of the QP it is bound to */
};

/* An address handle's path (sw_tab.c). */
struct sw_ah {
	_Atomic uint32_t handle;  /* 0: free */
	void *dev;                /* struct sw_dev of the AH's device */
	uint8_t sgid[16], dgid[16];
	uint8_t ip_ver, tclass, hop_limit;
	uint32_t flow_label;
};

#endif /* SW_OBJ_H */
