/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file dpv_cmrt.h
 * The CM runtime: the IB CM state machine of lib/cm (struct dpv_cm_agent)
 * on the GSI QP of one port (dpv_create_gsi_qp), through the public verbs
 * API only. It owns a PD, a send CQ and a receive CQ, the GSI QP (RTS,
 * Q_Key DPV_GSI_QKEY), a ring of registered receive buffers (40-byte GRH +
 * 256-byte MAD each) and of send buffers, and one address handle per peer
 * GID (cached, freed at close). No threads: the caller drives it with
 * dpv_cmrt_poll() (receives, send completions, CM timers), so it works in
 * both progress modes. `now` is the caller's CLOCK_MONOTONIC in ns.
 * Not thread safe: one thread at a time per runtime.
 *
 * Shared mode: the daemon owns QP 1 and hands this process' GSI QP the
 * MADs for its listeners (the agent tells the daemon of each one through
 * dpv_gsi_listen) and for its comm IDs (made in the range
 * dpv_gsi_comm_ids gives); doc/shared-mode.md.
 *
 * This runtime is the transport-neutral one of dpv_cmrt_xport.h (where
 * dpv_cmrt_stats, dpv_cmrt_close and the rest are) on a transport of its
 * own, the GSI QP (dpv_cmrt_qp.c).
 */
#ifndef DPV_CMRT_H
#define DPV_CMRT_H

#include <stdint.h>

#include <infiniband/verbs.h>

#include "dpv_cm.h"
#include "dpv_cmrt_xport.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Configuration of a runtime; zeroed fields take the defaults. */
struct dpv_cmrt_cfg {
	uint8_t port_num;           /**< 0: 1 */
	uint32_t recv_bufs;         /**< receive buffers posted; 0: 512 (Linux's
				         mad_recvq_size: a burst of 100 SIDR_REPs
				         to udaddy -c 100 must not find the queue
				         empty while the CM thread is off the CPU) */
	uint32_t send_depth;        /**< send queue depth; 0: 128 (Linux's
				         mad_sendq_size; signalled every depth/2) */
	uint32_t max_ids;           /**< of the agent; 0: its default */
	uint64_t timewait_ns;       /**< of the agent; 0: its default */
	uint64_t seed;              /**< of the agent's comm IDs; 0: from the clock */
	/** Receives the agent's events (required); may call dpv_cm_send_*(). */
	void (*event)(void *arg, const struct dpv_cm_event *ev);
	void *arg;                  /**< passed to event */
};

/**
 * Opens a runtime on port cfg->port_num of ctx: PD, CQs, the GSI QP in RTS,
 * cfg->recv_bufs receives posted, and the agent (CA GUID: the device's node
 * GUID).
 *
 * RETURN VALUE: the runtime, or NULL with errno set: EINVAL (NULL ctx, cfg
 * or cfg->event, a depth above 4096), ENOMEM, EEXIST (the port already has
 * a GSI QP in this process), ENODEV (the port has no GID), or the error of
 * the verb that failed.
 */
struct dpv_cmrt *dpv_cmrt_open(struct ibv_context *ctx, const struct dpv_cmrt_cfg *cfg);

/**
 * One round of progress: every receive completion is handed to the agent
 * (dpv_cmrt_input_grh: the source GID of its GRH, the IPv4-mapped GID for
 * RoCEv2 over IPv4; the source QP) and its buffer reposted; send
 * completions are reaped; then dpv_cmrt_timer(rt, now). Events are
 * delivered from inside this call; an event callback must not close the
 * runtime.
 *
 * RETURN VALUE: the number of MADs handed to the agent (>= 0), or a
 * negative errno: -EINVAL (NULL rt), the error of ibv_poll_cq() or
 * ibv_post_recv().
 */
int dpv_cmrt_poll(struct dpv_cmrt *rt, uint64_t now);

/**
 * The runtime's agent (for dpv_cm_listen(), dpv_cm_create_id(), ...), of
 * this runtime or one of dpv_cmrt_open_xport().
 *
 * RETURN VALUE: the agent, or NULL with errno EINVAL for a NULL rt.
 */
struct dpv_cm_agent *dpv_cmrt_agent(struct dpv_cmrt *rt);

/**
 * The local GID the runtime sends from to peers of the same family as
 * `peer` (IPv4-mapped or not).
 *
 * RETURN VALUE: 0, or -EINVAL (NULL argument), -ENODEV (no such local GID;
 * a runtime of dpv_cmrt_open_xport(), which has no GIDs of its own).
 */
int dpv_cmrt_local_gid(const struct dpv_cmrt *rt, const uint8_t peer[16], uint8_t gid[16]);

#ifdef __cplusplus
}
#endif
#endif /* DPV_CMRT_H */
