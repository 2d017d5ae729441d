/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file sw_harness.h
 * A bench for the software engine (drivers/sw) below the verbs API.
 *
 * The test links the verbs façade, the sw driver, lib/wire and lib/conf,
 * but not lib/port: sw_harness.c provides the port layer the driver calls
 * (dpv_runtime_start, dpv_port_xmit_remote, dpv_port_alloc_mbuf, neighbours ...)
 * with one port "dpv0" whose GID 0 is ::ffff:192.0.2.1 and whose path MTU
 * is 1024 bytes, on an EAL without hugepages or devices. Every frame the
 * engine transmits is parsed and kept in order (sw_h_sent); the test feeds
 * frames it builds to the driver's receive hook (sw_h_rx), as the port
 * layer would after its own checks, and runs the driver's poll hook
 * (sw_h_poll) where the port layer would after an RX burst.
 *
 * Objects are created through the verbs API (ibv_*), since that is how the
 * driver gets its rings; the state machines are then driven by packets.
 */
#ifndef SW_HARNESS_H
#define SW_HARNESS_H

#include <stdbool.h>
#include <stdint.h>
#include <infiniband/verbs.h>

#include "dpv_wire.h"

/** The peer's GID (::ffff:192.0.2.2) and a QPN no local QP has. */
extern const uint8_t sw_h_peer_gid[16];
#define SW_H_PEER_QPN 0x4242u

/** A transmitted frame, parsed. */
struct sw_h_frame {
	struct dpv_pkt_info pi;
	uint8_t bytes[4200];
	uint32_t len;
};

/** Brings up EAL (no hugepages, no PCI, in memory) and the fake port.
 *  Returns 0, or -1 after printing why. */
int sw_h_init(int argc, char **argv);
/** Frames transmitted so far (cleared by sw_h_clear). */
unsigned int sw_h_nsent(void);
const struct sw_h_frame *sw_h_sent(unsigned int i);
void sw_h_clear(void);
/** The next transmits (dpv_port_xmit_*) return r (0, or -ENOBUFS for a full TX queue). */
void sw_h_xmit_result(int r);

/** Builds a frame from b (source the peer, destination port dpv0; missing
 *  MACs/GIDs filled in) with paylen bytes of payload and hands it to the
 *  driver's receive hook. Returns 0, or -1 if the frame does not build. */
int sw_h_rx(struct dpv_pkt_build *b, const void *payload, uint32_t paylen);
/** Runs the driver's per-context hook (coalesced ACKs, doorbells, timers). */
void sw_h_poll(void);
/** Port counters: a drop reason's count, a transport counter. */
uint64_t sw_h_drops(int reason);

/** A connected QP (RC by default) of dpv0 taken to RTS, its peer the fake
 *  QPN SW_H_PEER_QPN at sw_h_peer_gid: rq_psn is the first PSN the
 *  responder expects, sq_psn the requester's. */
struct sw_h_qp {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint8_t *buf;
	size_t len;
};
int sw_h_qp_create(struct sw_h_qp *h, enum ibv_qp_type type, uint32_t rq_psn, uint32_t sq_psn,
		   uint8_t max_dest_rd_atomic, uint8_t min_rnr_timer, uint8_t retry_cnt,
		   uint8_t rnr_retry);
/** What the next sw_h_qp_create() uses when not 0: the MR's and the QP's
 *  access flags (default: local write, remote write, read, atomic), and
 *  send_ops_flags (the QP is then made with ibv_create_qp_ex). */
extern int sw_h_access;
extern uint64_t sw_h_send_ops;
void sw_h_qp_destroy(struct sw_h_qp *h);
/** A packet builder aimed at h's QP from the peer (opcode, psn). */
void sw_h_req(struct dpv_pkt_build *b, const struct sw_h_qp *h, uint8_t opcode, uint32_t psn);
/** Posts one receive of len bytes at off into h's buffer. */
int sw_h_post_recv(struct sw_h_qp *h, uint64_t wr_id, uint32_t off, uint32_t len);
/** Polls one completion (returns 1), or 0 if none is there. */
int sw_h_poll_cq(struct sw_h_qp *h, struct ibv_wc *wc);
/** The QP's state as the engine sees it. */
enum ibv_qp_state sw_h_qp_state(const struct sw_h_qp *h);
/** Makes the QP's retransmission / RNR timers due now and runs them. */
void sw_h_expire_timers(const struct sw_h_qp *h);

#endif /* SW_HARNESS_H */
