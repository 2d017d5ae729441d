/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Connected transports (RC, UC): requester (dpv_req.c: WQE -> packets),
 * completer (dpv_comp.c: ACK/NAK/read response -> send CQE, retransmission)
 * and responder (dpv_resp.c: request -> placement, receive CQE, ACK/NAK),
 * split the way Linux rxe splits them. All state of one QP is protected by
 * qp->sq_lock (qp_lock(); none for thread-domain QPs, see dpv_verbs.h);
 * lock order: engine rx_lock -> qp->sq_lock -> qp->rq_lock / cq->lock ->
 * port tx_lock. "Must hold qp->lock" below means qp_lock(qp).
 */
#ifndef DPV_RC_H
#define DPV_RC_H

#include <stdlib.h>

#include "dpv_verbs.h"

#define DPV_RC_WINDOW 256         /* max un-acknowledged request packets */
#define DPV_RC_WINDOW_MIN 8       /* congestion window floor */
#define DPV_RC_PROBE_US 1000      /* first tail-loss probe after no progress */
#define DPV_RC_ACKREQ_EVERY 32    /* ask for an ACK at least this often */
#define DPV_MAX_RD_ATOMIC 16      /* saved READ/ATOMIC responder resources */
#define DPV_MAX_RD_ATOMIC_DEV 16  /* max_qp_rd_atom reported by the device */
#define DPV_AETH_CREDIT_INVALID 0x1f /* as rxe: no end-to-end credits */

/* AETH syndrome (IBA 9.7.5.1) */
#define AETH_TYPE_MASK 0xe0
#define AETH_ACK 0x00
#define AETH_RNR_NAK 0x20
#define AETH_NAK 0x60
#define AETH_NAK_PSN_SEQ 0x60
#define AETH_NAK_INV_REQ 0x61
#define AETH_NAK_REM_ACC 0x62
#define AETH_NAK_REM_OP 0x63

enum dpv_wqe_state {
	WQE_POSTED = 0,  /* not started */
	WQE_SENDING,     /* some packets sent (or rewound for a retry) */
	WQE_PENDING,     /* all request packets sent, waiting for the response */
	WQE_DONE,        /* completed (CQE written if signalled) */
};

struct dpv_send_wqe {
	uint64_t wr_id;
	enum ibv_wr_opcode opcode;
	unsigned int send_flags;
	__be32 imm_data;
	uint32_t inv_rkey;
	uint32_t remote_srqn;    /* XRC initiator */
	uint64_t remote_addr;
	uint32_t rkey;
	uint64_t compare_add, swap;
	uint32_t length;
	uint32_t num_sge;
	uint8_t state;
	bool rd_counted;         /* counts against max_rd_atomic */
	uint32_t first_psn, last_psn, npkts;
	uint32_t next_off;       /* requester: next byte to send */
	uint32_t next_psn;
	uint32_t read_recv;      /* READ: bytes of response received */
	uint32_t rd_chunk_end;   /* READ: end of the range asked for last */
	struct ibv_sge sge[];    /* then the inline data */
};

#define DPV_RESP_Q 32             /* responses waiting to be sent, per QP */
#define DPV_RESP_BURST 64         /* response packets sent per turn */

/* A response waiting to go out: responses leave in PSN order (IBA 9.7.5),
 * and a long READ is sent DPV_RESP_BURST packets at a time, so that its
 * responses do not flood the path (and the ACKs behind them wait). */
enum { RESP_READ = 1, RESP_ATOMIC, RESP_ACK };
struct dpv_resp_ent {
	uint8_t kind;
	uint8_t syndrome;        /* RESP_ACK: ACK or NAK syndrome */
	uint32_t psn;            /* first PSN of the response(s) */
	uint32_t msn;
	const uint8_t *src;      /* RESP_READ: data, len bytes */
	uint32_t len, sent;      /* RESP_READ: bytes, bytes sent */
	uint32_t req_psn;        /* RESP_READ: first PSN of the READ it answers */
	uint64_t orig;           /* RESP_ATOMIC */
};

/* A responder resource kept for duplicate READ/ATOMIC requests. */
struct dpv_rd_res {
	bool valid;
	bool atomic;
	uint32_t first_psn, last_psn;
	uint64_t orig;           /* ATOMIC: the value returned */
};

struct dpv_rc {
	/* ---- send queue (ring of WQEs) ---- */
	uint8_t *sq;
	uint32_t sq_size, sq_wqe_size;
	uint32_t sq_head, sq_cur, sq_tail; /* oldest / next to send / next free */
	/* ---- requester ---- */
	uint32_t req_psn;        /* next PSN to send */
	uint32_t cwnd;           /* packets allowed in flight: AIMD between
				  * DPV_RC_WINDOW_MIN and DPV_RC_WINDOW */
	uint32_t rd_outstanding; /* READ/ATOMIC in flight */
	bool sqd_pending;        /* SQ_DRAINED to raise when empty */
	bool path_ok;            /* the peer's MAC is known: requests may go */
	_Atomic bool db_pending; /* lcore mode: QPN queued on the context's doorbell ring */
	bool neigh_wait;         /* waiting for it (timer scan re-runs us) */
	/* ---- completer ---- */
	uint32_t comp_psn;       /* oldest un-acknowledged PSN */
	uint8_t retry_left, rnr_left;
	uint64_t timer_deadline; /* retransmission timer (tsc), 0 = off */
	uint64_t rnr_deadline;   /* RNR wait (tsc), 0 = off */
	uint64_t probe_deadline; /* tail-loss probe (tsc), 0 = off */
	uint64_t probe_cycles;   /* its current interval (doubles, reset on progress) */
	uint32_t rnr_psn;
	uint32_t last_retry_psn; /* throttle out-of-order read retries */
	bool rd_wait;            /* after a READ gap retry: ignore responses ... */
	uint32_t rd_wait_psn;    /* ... until the replay starting here arrives */
	uint32_t retry_psn;      /* last go-back target ... */
	uint32_t retry_comp_psn; /* ... and comp_psn then (no progress since) */
	bool retried;
	/* ---- responder ---- */
	uint32_t epsn;           /* expected PSN */
	uint32_t msn;
	bool nak_sent;           /* PSN sequence NAK sent for epsn */
	bool comm_est;           /* COMM_EST raised */
	uint8_t in_msg;          /* 0 none, 1 SEND, 2 WRITE: middle/last expected */
	bool uc_drop;            /* UC: dropping the rest of a broken message */
	struct dpv_srq *xsrq;    /* XRC target: SRQ of the message in progress */
	bool have_rwqe;
	uint64_t rwqe_id;
	struct dpv_pd *rwqe_pd;
	uint32_t rwqe_nsge;
	struct ibv_sge rwqe_sge[DPV_MAX_SGE_LIMIT];
	uint32_t recv_off;       /* bytes placed in the current receive WQE */
	uint8_t *wr_addr;        /* RDMA WRITE cursor */
	uint32_t wr_left;
	uint32_t wr_total;
	bool ack_pending;        /* coalesced ACK to send after this burst */
	uint32_t ack_psn;
	struct dpv_rd_res res[DPV_MAX_RD_ATOMIC];
	unsigned int res_next;
	struct dpv_resp_ent respq[DPV_RESP_Q];
	uint32_t respq_head, respq_tail;
};

/* DPVERBS_TRACE_RC: print go-backs, timeouts and missing responder state. */
static inline bool dpv_trace_rc(void)
{
	static int on = -1;
	if (on < 0)
		on = getenv("DPVERBS_TRACE_RC") != NULL;
	return on;
}

/* Transport bits of the opcodes this QP sends as responder or requester. */
static inline uint8_t dpv_qp_tr(const struct dpv_qp *qp)
{
	switch (qp->type) {
	case IBV_QPT_UC:
		return DPV_TR_UC;
	case IBV_QPT_XRC_SEND:
	case IBV_QPT_XRC_RECV:
		return DPV_TR_XRC;
	default:
		return DPV_TR_RC;
	}
}

static inline int psn_cmp(uint32_t a, uint32_t b)
{
	return ((int32_t)((a - b) << 8)) >> 8;
}
static inline uint32_t psn_add(uint32_t a, uint32_t n) { return (a + n) & 0xffffff; }

static inline struct dpv_send_wqe *sq_slot(struct dpv_rc *rc, uint32_t i)
{
	return (struct dpv_send_wqe *)(rc->sq + (size_t)(i & (rc->sq_size - 1)) * rc->sq_wqe_size);
}

/* dpv_req.c */
int dpv_rc_init(struct dpv_qp *qp, bool has_sq, struct dpv_bufs *bs);
int dpv_rc_post_send(struct dpv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad);
void dpv_req_run(struct dpv_qp *qp);
void dpv_req_read_more(struct dpv_qp *qp, struct dpv_send_wqe *w);
/* Go back to psn. force: the retry timer or an RNR wait expired; otherwise
 * (NAK, implied NAK, read gap) a second go-back to the same PSN without
 * progress in between is ignored, so that duplicate ACKs and NAKs of one
 * loss do not resend the window again and again. */
void dpv_req_retry(struct dpv_qp *qp, uint32_t psn, bool force, bool probe);
void dpv_rc_probe_restart(struct dpv_qp *qp, bool reset);
uint32_t dpv_qp_mtu(const struct dpv_qp *qp);
/* Build and send one packet of this QP to its peer (payload from SGEs). */
int dpv_rc_xmit(struct dpv_qp *qp, struct dpv_pkt_build *b, const struct ibv_sge *sge, uint32_t nsge,
		uint32_t off, uint32_t len, const void *flat);
void dpv_rc_build_init(struct dpv_qp *qp, struct dpv_pkt_build *b, uint8_t opcode, uint32_t psn);

/* dpv_comp.c */
void dpv_comp_rx(struct dpv_qp *qp, struct rte_mbuf *m, struct dpv_pkt_info *pi);
void dpv_comp_timers(struct dpv_qp *qp, uint64_t now);
void dpv_comp_wqe_done(struct dpv_qp *qp, struct dpv_send_wqe *w, enum ibv_wc_status st);
void dpv_rc_error(struct dpv_qp *qp, struct dpv_send_wqe *w, enum ibv_wc_status st);
void dpv_rc_flush_sq(struct dpv_qp *qp);
void dpv_rc_timer_restart(struct dpv_qp *qp);

/* dpv_resp.c */
void dpv_resp_rx(struct dpv_qp *qp, struct rte_mbuf *m, struct dpv_pkt_info *pi);
void dpv_resp_flush_ack(struct dpv_qp *qp);
/* Send up to budget queued response packets; returns true if some remain. */
bool dpv_resp_pump(struct dpv_qp *qp, unsigned int budget);

/* Copy len bytes at byte offset off of an SGE list into dst. */
void dpv_sge_copy_out(const struct ibv_sge *sge, uint32_t n, uint32_t off, void *dst, uint32_t len);

#endif
