/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fault injection in the port layer: drop, duplicate, reorder and corrupt
 * frames with configured probabilities and a seed, so that a failing run can
 * be replayed. Applied to RoCEv2 frames on transmit and receive. Counters of
 * what was injected are kept per process.
 */
#ifndef DPV_FAULT_H
#define DPV_FAULT_H

#include <stdbool.h>
#include <stdint.h>
#include <rte_mbuf.h>

#include "dpv_conf.h"

struct dpv_qctx;

struct dpv_fault_stats {
	_Atomic uint64_t dropped, duplicated, reordered, corrupted;
};

void dpv_fault_init(const struct dpv_conf_fault *f);
bool dpv_fault_enabled(void);
/* Returns true if the frame was consumed (dropped or held back). */
bool dpv_fault_tx(struct dpv_qctx *qc, struct rte_mbuf **m);
bool dpv_fault_rx(struct dpv_qctx *qc, struct rte_mbuf **m);
/* Release frames held back for reordering. */
void dpv_fault_flush(struct dpv_qctx *qc);
const struct dpv_fault_stats *dpv_fault_stats(void);

#endif
