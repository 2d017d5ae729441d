/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file dpv_cmrt_xport.h
 * The CM runtime on a caller's transport: lib/cm's agent (the IB CM state
 * machine) for one port, driven by whoever owns the port's QP 1. The
 * transport sends MADs (struct dpv_cmrt_xport); the caller hands the
 * runtime every MAD it receives (dpv_cmrt_input, dpv_cmrt_input_grh) and
 * runs its timers (dpv_cmrt_timer at dpv_cmrt_next_deadline). lib/cmrt
 * hosts the agent, and only lib/cmrt: its GSI-QP runtime (dpv_cmrt.h) is
 * this runtime on a transport of its own, and dpverbsd's endpoint on QP 1
 * (apps/dpverbsd/dpvd_cm.c) is this runtime on the daemon's rings.
 *
 * This header exposes no type of lib/cm (struct dpv_cm_event is only
 * declared): a user that does not look at the agent's events needs no
 * lib/cm header. dpv_cmrt.h gives the agent itself (dpv_cmrt_agent) to
 * those that listen and connect. `now` is CLOCK_MONOTONIC in ns. Not
 * thread safe: one thread at a time per runtime.
 */
#ifndef DPV_CMRT_XPORT_H
#define DPV_CMRT_XPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dpv_cmrt_answer.h"

#ifdef __cplusplus
extern "C" {
#endif

struct dpv_cmrt;
struct dpv_cm_event;

#define DPV_CMRT_NO_DEADLINE UINT64_MAX

/** What the runtime needs of its transport. */
struct dpv_cmrt_xport {
	/** Transmits one 256-byte MAD to QP `qpn` (0 or 1: QP 1) of the port
	 *  with GID `gid` (Q_Key DPV_CMRT_GSI_QKEY). 0, or a negative errno
	 *  (-EAGAIN: the send queue is full). Required. */
	int (*send)(void *arg, const uint8_t gid[16], uint32_t qpn, const uint8_t mad[DPV_CMRT_MAD_SIZE]);
	/** The agent creates (on: true) or destroys a listener; a negative
	 *  errno refuses the listen (shared mode: the daemon's GSI_LISTEN).
	 *  NULL: none. */
	int (*listen)(void *arg, uint64_t service_id, bool on);
	void *arg;                  /**< passed to send and listen */
};

/** Configuration of a runtime on a caller's transport. */
struct dpv_cmrt_xport_cfg {
	uint64_t ca_guid;           /**< the local CA GUID (REQ, REP, REJ "timeout" ARI) */
	uint32_t max_ids;           /**< of the agent; 0: its default */
	uint64_t timewait_ns;       /**< of the agent; 0: its default */
	uint64_t seed;              /**< of the agent's comm IDs; 0: from the clock */
	/** Shared mode: every local comm ID carries id_prefix in the bits of
	 *  id_mask (the process' slot on the daemon's QP 1); 0, 0: none. */
	uint32_t id_prefix, id_mask;
	/** Receives the agent's events (lib/cm's struct dpv_cm_event; may
	 *  call dpv_cm_send_*()). NULL: an agent with no listener and no id of
	 *  its own, which only answers (nothing reaches such a callback). */
	void (*event)(void *arg, const struct dpv_cm_event *ev);
	void *event_arg;            /**< passed to event */
};

/** Counters of the runtime (the agent has its own: dpv_cmrt_agent()->stats). */
struct dpv_cmrt_stats {
	uint64_t rx;           /**< MADs handed to the agent */
	uint64_t rx_dropped;   /**< receive completions in error, too short or without a usable GRH */
	uint64_t tx;           /**< MADs the transport took */
	uint64_t tx_full;      /**< sends refused: send queue full (-EAGAIN) */
	uint64_t tx_errors;    /**< other send failures; send completions in error */
	uint64_t ahs;          /**< address handles created (the GSI-QP runtime) */
};

/**
 * Opens a runtime on the caller's transport: the agent (agent number 2 in
 * its TIDs, as Linux) with cfg.
 *
 * RETURN VALUE: the runtime, or NULL with errno EINVAL (NULL argument, no
 * send callback) or ENOMEM.
 */
struct dpv_cmrt *dpv_cmrt_open_xport(const struct dpv_cmrt_xport_cfg *cfg, const struct dpv_cmrt_xport *xport);

/**
 * One received MAD (the UD payload to QP 1) from QP src_qp of the port with
 * GID gid; answers and events go out from inside this call.
 *
 * RETURN VALUE: 0 (handled, or ignored as the IBA rules say); -EINVAL
 * (NULL argument); -EBADMSG (malformed); -EOPNOTSUPP (LAP, APR,
 * ClassPortInfo): counted by the agent, dropped.
 */
int dpv_cmrt_input(struct dpv_cmrt *rt, const uint8_t gid[16], uint32_t src_qp, const uint8_t *mad, size_t len,
		   uint64_t now);

/**
 * dpv_cmrt_input() of a receive buffer as a UD QP fills it: the 40-byte
 * GRH area, then the MAD (len counts both). The sender's GID is the GRH's
 * source (RoCEv2 over IPv4: the IPv4-mapped GID of the IPv4 header at
 * offset 20).
 *
 * RETURN VALUE: dpv_cmrt_input()'s, or -EPROTO (len <= 40, or neither an
 * IPv6 nor an IPv4 header: counted in rx_dropped).
 */
int dpv_cmrt_input_grh(struct dpv_cmrt *rt, uint32_t src_qp, const uint8_t *buf, size_t len, uint64_t now);

/**
 * Runs the agent's retransmission and TIMEWAIT timers due at `now`.
 *
 * RETURN VALUE: the number of timers that fired; -EINVAL for a NULL rt.
 */
int dpv_cmrt_timer(struct dpv_cmrt *rt, uint64_t now);

/** RETURN VALUE: the agent's earliest deadline, or DPV_CMRT_NO_DEADLINE
 * (also for a NULL rt). No errno. */
uint64_t dpv_cmrt_next_deadline(const struct dpv_cmrt *rt);

/** The state of a connection whose owner went away (Linux's cm_destroy_id
 * states that decide what it sends), as the owner of QP 1 followed it. */
enum dpv_cmrt_orphan_state {
	DPV_CMRT_ORPHAN_REQ_RCVD,    /**< passive: the peer's REQ received */
	DPV_CMRT_ORPHAN_REP_SENT,    /**< passive: our REP sent */
	DPV_CMRT_ORPHAN_REQ_SENT,    /**< active: our REQ sent */
	DPV_CMRT_ORPHAN_REP_RCVD,    /**< active: the peer's REP received */
	DPV_CMRT_ORPHAN_ESTABLISHED, /**< RTU sent or received */
};

/** A connection whose owner went away. */
struct dpv_cmrt_orphan {
	enum dpv_cmrt_orphan_state state;
	uint32_t local_id;          /**< the owner's comm ID (0: unknown, REQ_RCVD) */
	uint32_t remote_id;         /**< the peer's comm ID (0: unknown, REQ_SENT) */
	uint32_t remote_qpn;        /**< the peer's QPN (the DREQ's) */
	uint8_t gid[16];            /**< the peer's port */
};

/**
 * Sends, once, what Linux's CM sends for a connection whose owner goes away
 * (cm_destroy_id): a DREQ for an established one; a REJ "consumer defined"
 * for one being set up (REQ received: comm ID 0, message REQ; REP sent or
 * received: message REP); REQ sent: REJ "timeout" with the runtime's CA
 * GUID as ARI. TID: agent 2 << 32 | the owner's comm ID (the peer's when
 * 0). Nothing is kept: no retransmission, no TIMEWAIT.
 *
 * RETURN VALUE: 0; -EINVAL (NULL argument, unknown state); the transport's
 * error.
 */
int dpv_cmrt_abandon(struct dpv_cmrt *rt, const struct dpv_cmrt_orphan *o);

/**
 * The runtime's counters.
 *
 * RETURN VALUE: 0, or -EINVAL for a NULL argument.
 */
int dpv_cmrt_stats(const struct dpv_cmrt *rt, struct dpv_cmrt_stats *st);

/**
 * Frees the agent (sending nothing) and whatever the runtime's own
 * transport holds (the GSI-QP runtime: QP, AHs, MRs, CQs, PD). NULL is
 * ignored.
 *
 * RETURN VALUE: none.
 */
void dpv_cmrt_close(struct dpv_cmrt *rt);

#ifdef __cplusplus
}
#endif
#endif /* DPV_CMRT_XPORT_H */
