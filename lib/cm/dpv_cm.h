/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file dpv_cm.h
 * The IB connection manager state machine (IBA Vol 1 12.9.6, the states and
 * the duplicate/stale rules of Linux drivers/infiniband/core/cm.c), pure and
 * I/O free: no DPDK, no verbs, no threads, no clock. The caller owns QP 1:
 * it hands every received CM MAD to dpv_cm_rx(), calls dpv_cm_timer() when
 * dpv_cm_next_deadline() is reached, and transmits what the agent's send
 * callback gives it. Time is a caller-supplied nanosecond count.
 *
 * Timeouts: a request (REQ, REP, DREQ, SIDR_REQ) is retransmitted every
 * 4.096 us * 2^t, t being the peer's CM response timeout (REQ: the param's
 * remote_cm_response_timeout; REP and DREQ on the passive side: the REQ's
 * local CM response timeout; after an MRA: the MRA's service timeout, once),
 * at most max_cm_retries times after the first send; then the id reports
 * DPV_CM_EV_TIMEOUT and is IDLE, nothing sent to the peer (as Linux ib_cm:
 * a REP that times out can leave the active side ESTABLISHED). TIMEWAIT lasts the agent's timewait_ns, then the id
 * is IDLE again (or freed if it was destroyed).
 *
 * Not implemented: LAP/APR (alternate paths), RD (EECs), redirection,
 * ClassPortInfo; a received MAD of those kinds is dropped and counted.
 */
#ifndef DPV_CM_H
#define DPV_CM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dpv_cm_mad.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Connection states (IBA 12.9.6; Linux enum ib_cm_state). dpv_cm_rx.c relies on
 * the order: the connection states lie strictly between LISTEN and TIMEWAIT. */
enum dpv_cm_state {
	DPV_CM_IDLE,
	DPV_CM_LISTEN,
	DPV_CM_REQ_SENT,
	DPV_CM_REQ_RCVD,
	DPV_CM_MRA_REQ_SENT,
	DPV_CM_MRA_REQ_RCVD,
	DPV_CM_REP_SENT,
	DPV_CM_REP_RCVD,
	DPV_CM_MRA_REP_SENT,
	DPV_CM_MRA_REP_RCVD,
	DPV_CM_ESTABLISHED,
	DPV_CM_DREQ_SENT,
	DPV_CM_DREQ_RCVD,
	DPV_CM_TIMEWAIT,
	DPV_CM_SIDR_REQ_SENT,
	DPV_CM_SIDR_REQ_RCVD,
};

/** Where a MAD goes or came from: the peer's GID, its QP 1 and Q_Key. */
struct dpv_cm_addr {
	uint8_t gid[16];
	uint32_t qpn;   /**< DPV_GSI_QPN */
	uint32_t qkey;  /**< DPV_GSI_QKEY */
};

/** What the agent tells its user (the rdma_cm layer). */
enum dpv_cm_event_type {
	DPV_CM_EV_REQ,          /**< REQ for a listener: ev->id is new, in REQ_RCVD */
	DPV_CM_EV_REP,          /**< REP received: REP_RCVD, answer with RTU or REJ */
	DPV_CM_EV_ESTABLISHED,  /**< RTU received (passive side) */
	DPV_CM_EV_REJ,          /**< REJ received: reason, ARI, private data */
	DPV_CM_EV_TIMEOUT,      /**< no answer after max CM retries (timeout_attr) */
	DPV_CM_EV_DREQ,         /**< DREQ received: DREQ_RCVD, answer with DREP */
	DPV_CM_EV_DISCONNECTED, /**< DREP received, or DREQ timed out: TIMEWAIT */
	DPV_CM_EV_MRA,          /**< MRA received: the timeout was extended */
	DPV_CM_EV_SIDR_REQ,     /**< SIDR_REQ for a listener: ev->id new, answer sidr_rep */
	DPV_CM_EV_SIDR_REP,     /**< SIDR_REP received (ev->mad->sidr_rep) */
	DPV_CM_EV_TIMEWAIT_EXIT, /**< TIMEWAIT over: the id is IDLE (or freed) */
};

struct dpv_cm_id;

/** An event; every pointer is valid during the callback only. */
struct dpv_cm_event {
	enum dpv_cm_event_type type;
	struct dpv_cm_id *id;
	struct dpv_cm_id *listen_id;  /**< REQ, SIDR_REQ: the listener */
	const struct dpv_cm_mad *mad; /**< the message received; NULL for timeouts */
	const uint8_t *private_data;  /**< of mad; NULL when mad is */
	size_t private_len;
	uint16_t rej_reason;          /**< REJ */
	const uint8_t *ari;           /**< REJ additional reject information */
	uint8_t ari_len;
	uint16_t timeout_attr;        /**< TIMEOUT: the message not answered */
};

/** Agent configuration. */
struct dpv_cm_agent_cfg {
	uint64_t ca_guid;             /**< local CA GUID (REQ/REP) */
	/** Transmits one 256-byte MAD to QP 1 of `to`; 0 or a negative errno. */
	int (*send)(void *arg, const struct dpv_cm_addr *to, const uint8_t mad[DPV_MAD_SIZE]);
	/** Delivers an event. May call dpv_cm_send_*() on ev->id. */
	void (*event)(void *arg, const struct dpv_cm_event *ev);
	void *arg;                    /**< passed to send and event */
	uint32_t max_ids;             /**< ids (listeners included); 0: 64 */
	uint64_t seed;                /**< of the random local communication IDs */
	uint64_t timewait_ns;         /**< 0: DPV_CM_TIMEWAIT_NS_DEFAULT */
	uint32_t agent_no;            /**< upper 32 bits of our TIDs (Linux: 2) */
	/** Shared mode: every local communication ID (and SIDR request ID)
	 *  carries id_prefix in the bits of id_mask, so that the daemon that
	 *  owns QP 1 hands each process the MADs for its IDs (0: no prefix). */
	uint32_t id_prefix, id_mask;
	/** Called when a listener is created (on: true) and destroyed; a
	 *  negative errno refuses dpv_cm_listen() with it. NULL: none. */
	int (*listen)(void *arg, uint64_t service_id, bool on);
};

#define DPV_CM_TIMEWAIT_NS_DEFAULT 1000000000ull /**< 1 s */
#define DPV_CM_NO_DEADLINE UINT64_MAX

/** Counters of the agent (never reset). */
struct dpv_cm_stats {
	uint64_t rx, tx, retransmits;
	uint64_t rx_malformed;   /**< dpv_cm_mad_decode() refused it */
	uint64_t rx_unsupported; /**< LAP, APR, ClassPortInfo */
	uint64_t rx_unmatched;   /**< no id for the comm ID, or a state that ignores it */
	uint64_t rx_duplicates;  /**< duplicate REQ/REP/DREQ handled */
	uint64_t rx_stale;       /**< stale REQ rejected */
	uint64_t tx_errors;      /**< the send callback failed */
	uint64_t timeouts;
};

/** A connection (or listener, or SIDR exchange). Read-only but for ctx. */
struct dpv_cm_id {
	struct dpv_cm_agent *agent;
	void *ctx;                    /**< the user's */
	enum dpv_cm_state state;
	bool in_use, destroyed;
	uint32_t local_id, remote_id; /**< communication IDs (SIDR: request ID) */
	uint64_t service_id;
	uint64_t remote_ca_guid;
	uint32_t local_qpn, remote_qpn;
	bool xrc;                     /**< an XRC initiator's REQ was sent (remote QPN from the REP's EECN) */
	struct dpv_cm_addr peer;
	uint64_t tid;                 /**< of the current exchange */
	uint8_t peer_resp_timeout;    /**< the peer's CM response timeout (5 bits) */
	uint8_t max_cm_retries;
	/* retransmission of `out`, the last MAD sent (also resent for duplicates) */
	uint8_t out[DPV_MAD_SIZE];
	bool out_valid;
	bool retrans;                 /**< `out` is retransmitted until answered */
	uint8_t retries;              /**< retransmissions so far */
	uint64_t timeout_ns, deadline;
	uint16_t out_attr;
};

/** A CM agent (one per port). Fields are internal. */
struct dpv_cm_agent {
	struct dpv_cm_agent_cfg cfg;
	struct dpv_cm_id *ids;
	uint32_t nids;
	uint64_t rng;
	uint64_t now;                 /**< of the last rx/timer call */
	uint64_t next_due;            /**< no id's deadline is earlier (a lower bound) */
	struct dpv_cm_stats stats;
};

/** Path and QP attributes of a REQ (the active side). */
struct dpv_cm_req_param {
	uint64_t service_id;
	uint32_t qpn;                 /**< local QPN (24 bits) */
	uint32_t starting_psn;        /**< the PSN the passive side sends first */
	uint8_t responder_resources, initiator_depth;
	struct dpv_cm_addr peer;      /**< where the REQ goes (GID = path remote GID) */
	uint8_t local_gid[16];
	uint8_t path_mtu;             /**< IB MTU enum */
	uint8_t traffic_class, hop_limit;
	uint32_t flow_label;          /**< 20 bits */
	uint8_t local_ack_timeout;    /**< 5 bits */
	uint8_t retry_count, rnr_retry_count; /**< 3 bits each */
	uint8_t remote_cm_response_timeout, local_cm_response_timeout; /**< 5 bits */
	uint8_t max_cm_retries;       /**< 4 bits */
	uint8_t srq;
	/** An XRC initiator (Linux IB_QPT_XRC_INI): transport service type 3 with
	 * extended transport type XRC; no responder resources, retry counts
	 * nor SRQ bit on the wire, as Linux's cm_format_req. */
	uint8_t xrc;
	const void *private_data;
	uint8_t private_len;          /**< at most DPV_CM_REQ_PRIVATE_LEN */
};

/** A REP (the passive side's accept). */
struct dpv_cm_rep_param {
	uint32_t qpn;
	uint32_t starting_psn;        /**< the PSN the active side sends first */
	uint8_t responder_resources, initiator_depth;
	uint8_t target_ack_delay, rnr_retry_count, srq, failover_accepted;
	/** An XRC target (Linux IB_QPT_XRC_TGT): the QPN goes in the local EE
	 * context number, SRQ set, no initiator depth (cm_format_rep). */
	uint8_t xrc;
	const void *private_data;
	uint8_t private_len;          /**< at most DPV_CM_REP_PRIVATE_LEN */
};

/**
 * Initialises an agent. cfg->send and cfg->event are required.
 *
 * RETURN VALUE: 0; -EINVAL (NULL agent, cfg or callback); -ENOMEM.
 */
int dpv_cm_agent_init(struct dpv_cm_agent *agent, const struct dpv_cm_agent_cfg *cfg);

/** Frees the agent's ids; sends nothing. RETURN VALUE: none. */
void dpv_cm_agent_fini(struct dpv_cm_agent *agent);

/**
 * A new IDLE id with a random local communication ID unique in the agent.
 *
 * RETURN VALUE: the id, or NULL with errno EINVAL (NULL agent) or ENOMEM
 * (every id in use).
 */
struct dpv_cm_id *dpv_cm_create_id(struct dpv_cm_agent *agent, void *ctx);

/**
 * Destroys an id, telling the peer as Linux ib_cm does: REQ_SENT and
 * MRA_REQ_RCVD send a REJ (timeout, ARI = our CA GUID) and free the id;
 * REQ_RCVD, MRA_REQ_SENT, REP_RCVD, MRA_REP_SENT a REJ (consumer defined)
 * and free it; REP_SENT, MRA_REP_RCVD a REJ and TIMEWAIT; ESTABLISHED a
 * DREQ (sent once) and TIMEWAIT; DREQ_SENT: TIMEWAIT; DREQ_RCVD a DREP and
 * TIMEWAIT; SIDR_REQ_RCVD a SIDR_REP (reject). An id in TIMEWAIT is freed
 * when it ends; any other is freed now. TIMEWAIT starts at the `now` of the
 * agent's last dpv_cm_rx() or dpv_cm_timer() call.
 *
 * RETURN VALUE: none.
 */
void dpv_cm_destroy_id(struct dpv_cm_id *id);

/**
 * A listener for service_id (an id in LISTEN).
 *
 * RETURN VALUE: the id, or NULL with errno EINVAL (NULL agent), EADDRINUSE
 * (a listener for that service ID exists), ENOMEM, or the error the
 * agent's listen callback returned (shared mode: EADDRINUSE when another
 * process listens on the service ID).
 */
struct dpv_cm_id *dpv_cm_listen(struct dpv_cm_agent *agent, uint64_t service_id, void *ctx);

/**
 * Sends a REQ from an IDLE id (RC), retransmitted until answered: REQ_SENT.
 * @param now current time (ns)
 *
 * RETURN VALUE: 0; -EINVAL (NULL argument, private_len too long, a field
 * too wide); -EISCONN (id not IDLE); the send callback's error (the state
 * is REQ_SENT anyway and the REQ is retransmitted).
 */
int dpv_cm_send_req(struct dpv_cm_id *id, const struct dpv_cm_req_param *p, uint64_t now);

/**
 * Accepts a REQ: REP from REQ_RCVD or MRA_REQ_SENT, retransmitted until the
 * RTU: REP_SENT.
 *
 * RETURN VALUE: 0; -EINVAL; -EPROTO (wrong state); the send callback's error.
 */
int dpv_cm_send_rep(struct dpv_cm_id *id, const struct dpv_cm_rep_param *p, uint64_t now);

/**
 * RTU from REP_RCVD or MRA_REP_SENT: ESTABLISHED.
 *
 * RETURN VALUE: 0; -EINVAL (NULL id, len too long); -EPROTO (wrong state);
 * the send callback's error.
 */
int dpv_cm_send_rtu(struct dpv_cm_id *id, const void *pd, uint8_t len);

/**
 * REJ from any state between REQ_SENT and MRA_REP_RCVD (IBA 12.9.6; the
 * message rejected is the REQ in REQ_RCVD/MRA_REQ_SENT, the REP in
 * REP_RCVD/MRA_REP_SENT, "other" elsewhere; from REQ_RCVD the local comm ID
 * is 0, as Linux sends it). The id is IDLE afterwards, but for REP_SENT and
 * MRA_REP_RCVD (our REP is out): TIMEWAIT, which starts at the `now` of the
 * agent's last dpv_cm_rx() or dpv_cm_timer() call.
 *
 * RETURN VALUE: 0; -EINVAL (NULL id, ari_len > 72, len > 148); -EPROTO
 * (wrong state); the send callback's error.
 */
int dpv_cm_send_rej(struct dpv_cm_id *id, uint16_t reason, const void *ari, uint8_t ari_len,
		    const void *pd, uint8_t len);

/** Or'ed into dpv_cm_send_mra's service_timeout: do not send the MRA now,
 * only in answer to a duplicate of the message (Linux IB_CM_MRA_FLAG_DELAY). */
#define DPV_CM_MRA_FLAG_DELAY 0x80

/**
 * MRA for the REQ (REQ_RCVD -> MRA_REQ_SENT) or the REP (REP_RCVD ->
 * MRA_REP_SENT): asks the peer to wait 4.096 us * 2^service_timeout. With
 * DPV_CM_MRA_FLAG_DELAY in service_timeout the state changes and the MRA is
 * kept but not sent: a duplicate REQ (the peer retransmitting because the
 * application is slow to accept) is answered with it, as Linux's rdma_cm
 * does (CMA_CM_MRA_SETTING).
 *
 * RETURN VALUE: 0; -EINVAL; -EPROTO (wrong state); the send callback's error.
 */
int dpv_cm_send_mra(struct dpv_cm_id *id, uint8_t service_timeout, const void *pd, uint8_t len);

/**
 * The QP reported communication established before the RTU came
 * (IBV_EVENT_COMM_EST, Linux ib_cm_notify/cm_establish): REP_SENT or
 * MRA_REP_RCVD -> ESTABLISHED, the REP no longer retransmitted; the RTU
 * that may still come is ignored. No event is delivered (the caller reports
 * it).
 *
 * RETURN VALUE: 0; -EINVAL (NULL id, wrong state); -EISCONN (already
 * ESTABLISHED).
 */
int dpv_cm_establish(struct dpv_cm_id *id);

/** RETURN VALUE: the number of ids of the agent in use (listeners, connections,
 * TIMEWAIT); 0 for a NULL agent. No errno. */
uint32_t dpv_cm_ids_in_use(const struct dpv_cm_agent *agent);

/**
 * DREQ from ESTABLISHED, retransmitted until the DREP: DREQ_SENT.
 *
 * RETURN VALUE: 0; -EINVAL; -EPROTO (wrong state); the send callback's error.
 */
int dpv_cm_send_dreq(struct dpv_cm_id *id, const void *pd, uint8_t len, uint64_t now);

/**
 * DREP from DREQ_RCVD: TIMEWAIT (until now + timewait_ns).
 *
 * RETURN VALUE: 0; -EINVAL; -EPROTO (wrong state); the send callback's error.
 */
int dpv_cm_send_drep(struct dpv_cm_id *id, const void *pd, uint8_t len, uint64_t now);

/**
 * SIDR_REQ from an IDLE id to p->peer for p->service_id (p->private_data,
 * at most 216 bytes; p->remote_cm_response_timeout and p->max_cm_retries
 * drive retransmission): SIDR_REQ_SENT.
 *
 * RETURN VALUE: 0; -EINVAL; -EISCONN (not IDLE); the send callback's error.
 */
int dpv_cm_sidr_req(struct dpv_cm_id *id, const struct dpv_cm_req_param *p, uint64_t now);

/**
 * SIDR_REP from SIDR_REQ_RCVD (status enum dpv_cm_sidr_status, the UD QP
 * and its Q_Key); the id is IDLE afterwards.
 *
 * RETURN VALUE: 0; -EINVAL; -EPROTO (wrong state); the send callback's error.
 */
int dpv_cm_sidr_rep(struct dpv_cm_id *id, uint8_t status, uint32_t qpn, uint32_t qkey,
		    const void *pd, uint8_t len);

/**
 * Handles one received MAD (the UD payload from `from`).
 *
 * RETURN VALUE: 0 (handled, or ignored as the IBA rules say: counted in
 * rx_unmatched or rx_duplicates); -EINVAL (NULL argument); -EBADMSG
 * (malformed: counted in rx_malformed, dropped); -EOPNOTSUPP (LAP, APR,
 * ClassPortInfo: counted, dropped).
 */
int dpv_cm_rx(struct dpv_cm_agent *agent, const struct dpv_cm_addr *from, const uint8_t *mad,
	      size_t len, uint64_t now);

/**
 * What an agent with no listener and no id answers to a MAD, without an
 * agent (stateless, thread safe): a REQ gets REJ "invalid service ID"
 * (message REQ, local comm ID 0), a DREQ a DREP (the comm IDs swapped), a
 * SIDR_REQ a SIDR_REP "unsupported", each with the request's TID (Linux's
 * ib_cm for an unknown service or comm ID); the other CM MADs nothing.
 * dpv_cm_rx() of such an agent sends exactly these bytes.
 *
 * RETURN VALUE: 1 with the answer in out; 0 (no answer); -EINVAL (NULL
 * argument); -EBADMSG (malformed, or not a CM MAD); -EOPNOTSUPP (LAP, APR,
 * ClassPortInfo).
 */
int dpv_cm_answer(const uint8_t *mad, size_t len, uint8_t out[DPV_MAD_SIZE]);

/**
 * Runs the retransmission and TIMEWAIT timers due at `now`.
 *
 * RETURN VALUE: the number of timers that fired; -EINVAL for a NULL agent.
 */
int dpv_cm_timer(struct dpv_cm_agent *agent, uint64_t now);

/**
 * RETURN VALUE: the earliest deadline of the agent's ids, or
 * DPV_CM_NO_DEADLINE (also for a NULL agent). No errno.
 */
uint64_t dpv_cm_next_deadline(const struct dpv_cm_agent *agent);

/**
 * 4.096 us * 2^t in nanoseconds (t is clamped to 31).
 * RETURN VALUE: the duration. No errno.
 */
uint64_t dpv_cm_timeout_ns(uint8_t t);

/** RETURN VALUE: the state's name ("ESTABLISHED", ...), never NULL. */
const char *dpv_cm_state_name(enum dpv_cm_state s);

#ifdef __cplusplus
}
#endif
#endif /* DPV_CM_H */
