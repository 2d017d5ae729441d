/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * dpverbs test library, verbs part (libdpvtest.a): devices, endpoints, QPs
 * of every type, the RESET->INIT->RTR->RTS connection, post/poll helpers
 * with timeouts, traffic patterns with payload verification, async-event
 * waits, XRC objects.
 *
 * Depends only on the public verbs API (<infiniband/verbs.h>) and
 * dpvt_check.h: the library is not linked with an implementation, each test
 * links either libdpverbs.so (black-box) or the static libraries
 * (white-box). White-box accesses to internal headers belong in the tests.
 *
 * Conventions: constructors return NULL (errno from the verb), int
 * functions 0 or the verb's error; nothing blocks longer than the timeout
 * it is given. Helpers that count checks say so.
 */
#ifndef DPVT_VERBS_H
#define DPVT_VERBS_H

#include <stdbool.h>
#include <stdint.h>

#include <infiniband/verbs.h>

#include "dpvt_check.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Every access flag the connected tests use: local write, remote write/read/atomic. */
#define DPVT_ACCESS_ALL (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | \
			 IBV_ACCESS_REMOTE_ATOMIC)

/* ---- devices and endpoints ---- */

/** Minimum e->buf size for dpvt_rc_traffic() and dpvt_ud_traffic(). */
#define DPVT_TRAFFIC_BUF_LEN (1u << 16)

/**
 * Opens the device called name ("dpv0", "dpv1" of the built-in
 * configuration). NULL after a message on stderr if there is none.
 */
struct ibv_context *dpvt_open_dev(const char *name);

/**
 * An endpoint: a context and what a test needs on it. Each function below
 * says which members it fills; the others stay NULL/0.
 */
struct dpvt_ep {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_comp_channel *ch;  /**< completion channel of rcq (optional) */
	struct ibv_cq *scq, *rcq;     /**< send and receive CQs (may be the same) */
	struct ibv_qp *qp;            /**< the endpoint's QP (optional) */
	struct ibv_srq *srq;          /**< receives go here when set (dpvt_ep_post_recv) */
	uint8_t *buf;                 /**< registered buffer (optional) */
	size_t buf_len;
	struct ibv_mr *mr;            /**< MR of buf */
	uint32_t qkey;                /**< Q_Key of the UD QPs made by dpvt_ud_qp() */
};

/**
 * Opens device dev with a PD, a send CQ and a receive CQ of cqe entries
 * (cq_context of the receive CQ: e), a completion channel for the receive
 * CQ if channel; makes the context's async_fd non-blocking (see
 * dpvt_wait_async()). Fills ctx, pd, scq, rcq, ch.
 * @return 0, or -1 after a message (e holds what was made: dpvt_ep_close()).
 */
int dpvt_ep_open(struct dpvt_ep *e, const char *dev, int cqe, bool channel);

/**
 * A zeroed, 4096-aligned buffer of len bytes registered with access through
 * pd (e->pd when NULL). Fills buf, buf_len, mr. 0 or -1.
 */
int dpvt_ep_buf(struct dpvt_ep *e, struct ibv_pd *pd, size_t len, unsigned int access);

/**
 * dpvt_ep_buf() of DPVT_TRAFFIC_BUF_LEN bytes with local write, remote
 * write and remote read: the buffer dpvt_rc_traffic()/dpvt_ud_traffic() use.
 */
int dpvt_ep_traffic_buf(struct dpvt_ep *e, struct ibv_pd *pd);

/**
 * A UD endpoint on dev: dpvt_ep_open() with 256 CQ entries, a 64 KiB
 * buffer (local write), and e->qp = dpvt_ud_qp(e, 0, 4, 4) in RTS with
 * Q_Key qkey. 0 or -1.
 */
int dpvt_ud_ep_open(struct dpvt_ep *e, const char *dev, uint32_t qkey, bool channel);

/**
 * Destroys the QP, SRQ, CQs, MR and buffer of e and clears them; ctx, pd
 * and ch stay. With a label every destroy is a CHECK (counted); with NULL
 * the results are ignored.
 */
void dpvt_ep_release(struct dpvt_ep *e, const char *label);

/** dpvt_ep_release(e, NULL), then the channel, the PD and the context; e is zeroed. */
void dpvt_ep_close(struct dpvt_ep *e);

/* ---- queues ---- */

/** Capabilities for dpvt_qp_create(). */
struct dpvt_qp_caps {
	uint32_t max_send_wr, max_recv_wr;
	uint32_t max_send_sge, max_recv_sge;
	uint32_t max_inline_data;
	int sq_sig_all;
};

/**
 * ibv_create_qp() of type t on pd with the CQs, an optional SRQ and caps
 * (the reported caps are written back). NULL after a message on stderr.
 */
struct ibv_qp *dpvt_qp_create(struct ibv_pd *pd, enum ibv_qp_type t, struct ibv_cq *scq, struct ibv_cq *rcq,
			      struct ibv_srq *srq, struct dpvt_qp_caps *caps);

/**
 * A QP of type t on e's PD and CQs: sq send WRs, rq receive WRs (0 with an
 * SRQ), 4 SGEs each way (0 receive SGEs with an SRQ), 64 bytes inline.
 * In RESET. NULL after a message.
 */
struct ibv_qp *dpvt_ep_qp(struct dpvt_ep *e, enum ibv_qp_type t, uint32_t sq, uint32_t rq, struct ibv_srq *srq);

/**
 * A UD QP on e's PD and CQs (64 WRs each way, the SGEs given, 64 bytes
 * inline, sq_sig_all), brought to RTS with Q_Key e->qkey. NULL after a
 * message (the QP is destroyed if it could not reach RTS).
 */
struct ibv_qp *dpvt_ud_qp(struct dpvt_ep *e, int sq_sig_all, uint32_t max_recv_sge, uint32_t max_send_sge);

/**
 * ibv_create_qp_ex() of type t with IBV_QP_INIT_ATTR_PD (pd may be a parent
 * domain) and, when send_ops is not 0, IBV_QP_INIT_ATTR_SEND_OPS_FLAGS:
 * 64 WRs and 2 SGEs each way (no RQ with an SRQ), 64 bytes inline. errno is
 * cleared first; NULL with errno, silently (tests expect failures here).
 */
struct ibv_qp *dpvt_qp_new_ex(struct ibv_pd *pd, enum ibv_qp_type t, struct ibv_cq *scq, struct ibv_cq *rcq,
			      struct ibv_srq *srq, uint64_t send_ops);

/**
 * A CQ of cqe entries: through pd with ibv_create_cq_ex() and
 * IBV_CQ_INIT_ATTR_MASK_PD (pd a parent domain) when pd is not NULL, else
 * ibv_create_cq(). errno is cleared first; NULL with errno.
 */
struct ibv_cq *dpvt_cq_new(struct ibv_context *ctx, struct ibv_pd *pd, int cqe);

/** A basic SRQ of max_wr WRs and 2 SGEs on pd. errno cleared first; NULL with errno. */
struct ibv_srq *dpvt_srq_new(struct ibv_pd *pd, uint32_t max_wr);

/** The QP's state from ibv_query_qp(), or (enum ibv_qp_state)-1 if the query fails. */
enum ibv_qp_state dpvt_qp_state(struct ibv_qp *qp);

/** ibv_modify_qp() with IBV_QP_STATE only (to ERR, RESET, ...). */
int dpvt_qp_set_state(struct ibv_qp *qp, enum ibv_qp_state st);

/* ---- connection ---- */

/**
 * Attributes of the RESET->INIT->RTR->RTS sequence, for every QP type.
 * dpvt_conn_default() gives the values the tests use unless they say
 * otherwise; the functions below take NULL for those defaults. Only the
 * fields the QP type needs are passed (masks below).
 */
struct dpvt_conn {
	unsigned int access;          /**< INIT, connected types: qp_access_flags */
	uint32_t qkey;                /**< INIT, UD: Q_Key */
	uint8_t port_num;             /**< INIT: 1 */
	uint16_t pkey_index;          /**< INIT: 0 */
	enum ibv_mtu mtu;             /**< RTR: path MTU */
	uint32_t rq_psn;              /**< RTR: expected PSN (the peer's sq_psn) */
	uint8_t max_dest_rd_atomic;   /**< RTR, RC and XRC target */
	uint8_t min_rnr_timer;        /**< RTR, RC and XRC target */
	uint8_t gid_index;            /**< RTR: local sgid_index, and the peer GID index looked up */
	uint8_t hop_limit;            /**< RTR: GRH hop limit */
	uint32_t sq_psn;              /**< RTS: first PSN sent */
	uint8_t timeout;              /**< RTS, RC and XRC initiator: local ACK timeout exponent */
	uint8_t retry_cnt;            /**< RTS, RC and XRC initiator */
	uint8_t rnr_retry;            /**< RTS, RC and XRC initiator (7: infinite) */
	uint8_t max_rd_atomic;        /**< RTS, RC and XRC initiator */
};

/**
 * The defaults: all of DPVT_ACCESS_ALL, Q_Key 0, port 1, P_Key index 0,
 * MTU 1024, PSNs 0x100, rd_atomic 16 both ways, min_rnr_timer 1 (0.01 ms),
 * GID index 1 (the IPv4-mapped RoCEv2 GID), hop limit 64, timeout 14
 * (67 ms), retry_cnt 7, rnr_retry 7.
 */
struct dpvt_conn dpvt_conn_default(void);

/**
 * RESET (or INIT) -> INIT: STATE, PKEY_INDEX, PORT and QKEY (UD) or
 * ACCESS_FLAGS (RC, UC, XRC initiator and target).
 */
int dpvt_qp_to_init(struct ibv_qp *qp, const struct dpvt_conn *o);

/**
 * INIT -> RTR. UD: STATE only (dgid and dqpn unused). Connected types:
 * STATE, AV (global, port o->port_num, sgid_index o->gid_index, dgid, hop
 * limit), PATH_MTU, DEST_QPN, RQ_PSN, and for RC and the XRC target also
 * MAX_DEST_RD_ATOMIC, MIN_RNR_TIMER.
 */
int dpvt_qp_to_rtr(struct ibv_qp *qp, const union ibv_gid *dgid, uint32_t dqpn, const struct dpvt_conn *o);

/**
 * RTR -> RTS: STATE, SQ_PSN, and for RC and the XRC initiator also TIMEOUT,
 * RETRY_CNT, RNR_RETRY, MAX_QP_RD_ATOMIC.
 */
int dpvt_qp_to_rts(struct ibv_qp *qp, const struct dpvt_conn *o);

/**
 * RESET -> INIT -> RTR (-> RTS when upto is IBV_QPS_RTS) towards QP dqpn on
 * peer, whose GID o->gid_index (port 1) is the destination (peer is unused
 * for UD). upto: IBV_QPS_INIT, IBV_QPS_RTR or IBV_QPS_RTS.
 * @return 0, the failing verb's error, or -1 if the peer GID query fails
 */
int dpvt_qp_up(struct ibv_qp *qp, struct ibv_context *peer, uint32_t dqpn, const struct dpvt_conn *o,
	       enum ibv_qp_state upto);

/**
 * Connects a (on ctx_a) with b (on ctx_b), both to RTS (b only to RTR if
 * b_rtr_only), in the order INIT a, INIT b, RTR a, RTR b, RTS a, RTS b.
 * oa/ob are each side's attributes (NULL: dpvt_conn_default()); the rq_psn
 * of one must be the sq_psn of the other. 0, or non-zero at the first failure.
 */
int dpvt_connect(struct ibv_qp *a, struct ibv_context *ctx_a, const struct dpvt_conn *oa, struct ibv_qp *b,
		 struct ibv_context *ctx_b, const struct dpvt_conn *ob, bool b_rtr_only);

/** A UD QP RESET -> RTS with Q_Key qkey, P_Key index 0, port 1, sq_psn 0. */
int dpvt_ud_to_rts(struct ibv_qp *qp, uint32_t qkey);

/* ---- posting and polling ---- */

/**
 * Polls cq until n completions or timeout_ms; never blocks longer.
 * @return how many completions were read into wc (0..n)
 */
int dpvt_poll_n(struct ibv_cq *cq, struct ibv_wc *wc, int n, unsigned int timeout_ms);

/** Polls cq for ms milliseconds and returns how many completions arrived (tests expect none). */
int dpvt_poll_quiet(struct ibv_cq *cq, unsigned int ms);

/** One receive WR of len bytes at offset off of mr. */
int dpvt_post_recv(struct ibv_qp *qp, struct ibv_mr *mr, uint64_t wr_id, size_t off, uint32_t len);

/** One SRQ receive WR of len bytes at offset off of mr. */
int dpvt_post_srq_recv(struct ibv_srq *srq, struct ibv_mr *mr, uint64_t wr_id, size_t off, uint32_t len);

/** One receive of len bytes at offset off of e->buf, to e->srq if set, else to e->qp. */
int dpvt_ep_post_recv(struct dpvt_ep *e, uint64_t wr_id, size_t off, uint32_t len);

/**
 * One send WR (RC/UC): opcode op, one SGE (addr, len, lkey) or none if len
 * is 0, remote (raddr, rkey) for RDMA, immediate imm (host order), flags.
 */
int dpvt_post_wr(struct ibv_qp *qp, enum ibv_wr_opcode op, uint64_t wr_id, void *addr, uint32_t len, uint32_t lkey,
		 uint64_t raddr, uint32_t rkey, uint32_t imm, unsigned int flags);

/** dpvt_post_wr() on an XRC initiator QP, to the XRC SRQ number srqn. */
int dpvt_post_xrc_wr(struct ibv_qp *qp, uint32_t srqn, enum ibv_wr_opcode op, uint64_t wr_id, void *addr,
		     uint32_t len, uint32_t lkey, uint64_t raddr, uint32_t rkey, uint32_t imm, unsigned int flags);

/**
 * One signaled atomic WR: op (FETCH_AND_ADD or CMP_AND_SWP) on the 8 bytes
 * at (raddr, rkey), the original value to res (lkey). refused (may be NULL)
 * is set when the post failed on this WR (bad_wr pointed at it).
 */
int dpvt_post_atomic(struct ibv_qp *qp, enum ibv_wr_opcode op, uint64_t wr_id, uint64_t *res, uint32_t lkey,
		     uint64_t raddr, uint32_t rkey, uint64_t cmp_add, uint64_t swap, bool *refused);

/** dpvt_post_atomic() on an XRC initiator QP, through the XRC SRQ number srqn. */
int dpvt_post_xrc_atomic(struct ibv_qp *qp, uint32_t srqn, enum ibv_wr_opcode op, uint64_t wr_id, uint64_t *res,
			 uint32_t lkey, uint64_t raddr, uint32_t rkey, uint64_t cmp_add, uint64_t swap);

/**
 * One UD SEND of len bytes at offset off of mr (no SGE if len is 0) to
 * (ah, rqpn, rqkey) with flags.
 */
int dpvt_post_ud_send(struct ibv_qp *qp, struct ibv_ah *ah, uint32_t rqpn, uint32_t rqkey, uint64_t wr_id,
		      struct ibv_mr *mr, size_t off, uint32_t len, unsigned int flags);

/**
 * An AH on pd (port 1, global, hop limit 64) from local GID sgid_index to
 * GID dgid_index of dst_ctx. NULL with errno.
 */
struct ibv_ah *dpvt_ah_new(struct ibv_pd *pd, struct ibv_context *dst_ctx, int sgid_index, int dgid_index);

/**
 * Waits up to 3 s for one completion on cq and checks it (counted): one
 * arrived, status success, wr_id and opcode. While cq is empty, drive (if
 * not NULL) is polled for zero entries: a thread domain's QPs progress only
 * in ibv_poll_cq on one of its CQs by the owner thread, so the peer's TD
 * must be polled too for its responder to answer.
 * @return true when the completion was a success
 */
bool dpvt_wait1(struct ibv_cq *cq, struct ibv_cq *drive, uint64_t wr_id, enum ibv_wc_opcode op, const char *label);

/**
 * RC traffic a -> b (a->qp and b->qp connected, e->buf of
 * DPVT_TRAFFIC_BUF_LEN bytes, b's MR with remote write/read): SEND 64 B
 * inline, SEND 3000 B, RDMA WRITE 5000 B, RDMA READ 4000 B, then SEND
 * 200 B b -> a; every completion and payload checked (counted).
 * Receives go to the endpoint's SRQ when it has one.
 */
void dpvt_rc_traffic(struct dpvt_ep *a, struct dpvt_ep *b, uint64_t seed, const char *label);

/**
 * n UD SENDs a -> b (UD QPs in RTS with Q_Key qkey), 100 + 37 i bytes, the
 * AH made through ah_pd towards b's GID 1: completions and payloads checked
 * (counted), AH destroyed.
 */
void dpvt_ud_traffic(struct dpvt_ep *a, struct ibv_pd *ah_pd, struct dpvt_ep *b, uint32_t qkey, int n, uint64_t seed,
		     const char *label);

/* ---- async events ---- */

/** Makes ctx->async_fd non-blocking (idempotent). 0 or -1. */
int dpvt_async_nonblock(struct ibv_context *ctx);

/**
 * Waits up to timeout_ms for an async event of type on ctx whose element
 * is obj (the QP, SRQ or CQ pointer; NULL: any), driving inline progress
 * meanwhile. Other events read meanwhile are printed, acknowledged and
 * counted in *others (if not NULL). Makes async_fd non-blocking.
 * @return true if the event arrived
 */
bool dpvt_wait_async(struct ibv_context *ctx, enum ibv_event_type type, void *obj, unsigned int timeout_ms,
		     int *others);

/** Reads and acknowledges the pending async events; returns how many there were. */
int dpvt_drain_async(struct ibv_context *ctx);

/* ---- XRC ---- */

/** The comp_mask of an ibv_open_xrcd() with fd and oflags. */
#define DPVT_XRCD_MASK (IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS)

/** ibv_open_xrcd() with errno cleared first; NULL with errno. */
struct ibv_xrcd *dpvt_xrcd_open(struct ibv_context *ctx, int fd, int oflags, uint32_t comp_mask);

/** An XRC SRQ in xrcd (ibv_create_srq_ex); receive completions go to cq. errno cleared; NULL with errno. */
struct ibv_srq *dpvt_xrc_srq_new(struct ibv_context *ctx, struct ibv_pd *pd, struct ibv_cq *cq,
				 struct ibv_xrcd *xrcd, uint32_t max_wr, uint32_t max_sge);

/** ibv_get_srq_num(), or 0 if it fails. */
uint32_t dpvt_srq_num(struct ibv_srq *s);

/** An XRC target QP (IBV_QPT_XRC_RECV) in xrcd through ibv_create_qp_ex. errno cleared; NULL with errno. */
struct ibv_qp *dpvt_xrc_tgt_new(struct ibv_context *ctx, struct ibv_xrcd *xrcd);

/**
 * An XRC initiator QP (IBV_QPT_XRC_SEND) through ibv_create_qp_ex with only
 * IBV_QP_INIT_ATTR_PD (the verbs.h inline falls back to ibv_create_qp).
 * errno cleared; NULL with errno.
 */
struct ibv_qp *dpvt_xrc_ini_new(struct ibv_context *ctx, struct ibv_pd *pd, struct ibv_cq *scq, uint32_t max_send_wr,
				uint32_t max_send_sge);

/** ibv_open_qp() of the target QP number qpn in xrcd (qp_context if not NULL). errno cleared; NULL with errno. */
struct ibv_qp *dpvt_xrc_open_qp(struct ibv_context *ctx, struct ibv_xrcd *xrcd, uint32_t qpn, void *qp_context);

/**
 * Same XRC domain? Functional proof: a target QP created through a (on
 * ctx_a) is found by ibv_open_qp() through b (on ctx_b).
 * @return 1 (same), 0 (ENOENT: another domain) or -1 (set-up failure, other errno)
 */
int dpvt_xrc_same_domain(struct ibv_context *ctx_a, struct ibv_xrcd *a, struct ibv_context *ctx_b,
			 struct ibv_xrcd *b);

/** Target QP t: RESET -> INIT -> RTR towards initiator ini_qpn on peer, rq_psn psn (defaults otherwise). */
int dpvt_xrc_tgt_connect(struct ibv_qp *t, struct ibv_context *peer, uint32_t ini_qpn, uint32_t psn);

/**
 * Initiator QP q: RESET -> INIT -> RTR -> RTS towards target tgt_qpn on peer,
 * sq_psn psn, rq_psn 0, local ACK timeout exponent timeout (defaults otherwise).
 */
int dpvt_xrc_ini_connect(struct ibv_qp *q, struct ibv_context *peer, uint32_t tgt_qpn, uint32_t psn, uint8_t timeout);

/* dpvt_stats.c */
/**
 * Counter (drop: a drop reason) `name` summed over the ports, from the
 * statistics snapshot of this process or of dpverbsd (DPV_DAEMON_PID), read
 * after a whole refresh that began after the call.
 * @return its value, or UINT64_MAX (no snapshot, no such counter)
 */
uint64_t dpvt_stat(bool drop, const char *name);
/** dpvt_stat until it reaches want (up to about 3 s): its last value. */
uint64_t dpvt_stat_wait(bool drop, const char *name, uint64_t want);

#ifdef __cplusplus
}
#endif

#endif /* DPVT_VERBS_H */
