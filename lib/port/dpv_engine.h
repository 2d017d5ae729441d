/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Engine: who drives progress.
 *
 * progress "inline": the application's own calls drive it (ibv_post_send
 * transmits, ibv_poll_cq polls RX on the caller's thread); an assist thread
 * polls contexts nobody has polled for DPV_ASSIST_IDLE_US so that a process
 * blocked elsewhere (TCP, ibv_get_cq_event, spinning on memory) still answers
 * ARP, receives, acknowledges and runs timers. It keeps polling while packets
 * keep coming and sleeps DPV_ASSIST_IDLE_US once nothing arrived for
 * DPV_ASSIST_SPIN_US. While the application itself polls every context (it
 * spins on a CQ), the assist thread parks: it looks again only every
 * DPV_ASSIST_PARK_US, so that a process has one spinning thread, not two
 * (on a small machine the second spinner is the latency tail).
 * progress "lcore": one EAL lcore per engine context polls it forever.
 */
#ifndef DPV_ENGINE_H
#define DPV_ENGINE_H

#include "dpv_port.h"

#define DPV_ASSIST_IDLE_US 50
#define DPV_ASSIST_SPIN_US 200 /* keep polling this long after the last packet */
#define DPV_ASSIST_PARK_US 1000 /* look again this late while the application polls */

int dpv_engine_start(struct dpv_runtime *rt);
/* true when the contexts are driven by service lcores */
bool dpv_engine_lcore_mode(void);
/* An application thread that drove progress blocks (on) in
 * ibv_get_cq_event, or is back (!on): wakes a parked assist thread. */
void dpv_engine_app_blocking(bool on);

/* dpv_rx.c: one received frame of context qc (from its RX queue, or its
 * loopback ring: from_lo), checked, counted and handed to the transport, or
 * dropped. Consumes m. Must hold qc->rx_lock. */
void dpv_port_rx_frame(struct dpv_qctx *qc, struct rte_mbuf *m, bool from_lo);

#endif
