/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fault injection in the port layer: drop, duplicate, reorder and corrupt
 * frames with configured probabilities and a seed, so that a failing run can
 * be replayed. Drops, duplicates and corruption are applied to transmitted
 * IPv4/IPv6 frames (software loopback included), reordering to received
 * ones. Counters of what was injected are kept per process.
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
/* DPVERBS_FAULT="drop=0.05,duplicate=0.01,reorder=0.01,corrupt=0.001,seed=7"
 * overrides the configuration's "fault" section (for tests). */
int dpv_fault_parse_env(const char *spec, struct dpv_conf_fault *f, char *err, size_t errlen);
extern bool dpv_fault_on; /* set once at start: fault injection configured */
static inline bool dpv_fault_enabled(void) { return dpv_fault_on; }
bool dpv_fault_tx_apply(struct dpv_qctx *qc, struct rte_mbuf **m, struct rte_mbuf **dup);
bool dpv_fault_rx_apply(struct dpv_qctx *qc, struct rte_mbuf **m);
/* Returns true if the frame was consumed (dropped). *dup is set to a copy
 * to send as well when a duplicate is injected. */
static inline bool dpv_fault_tx(struct dpv_qctx *qc, struct rte_mbuf **m, struct rte_mbuf **dup)
{
	*dup = NULL;
	return unlikely(dpv_fault_on) && dpv_fault_tx_apply(qc, m, dup);
}
/* Returns true if the frame was consumed (held back to reorder). */
static inline bool dpv_fault_rx(struct dpv_qctx *qc, struct rte_mbuf **m)
{
	return unlikely(dpv_fault_on) && dpv_fault_rx_apply(qc, m);
}
/* The frame held back for reordering, if any (delivered after the burst it
 * was taken from, so a reordered frame is late by at most one burst). */
struct rte_mbuf *dpv_fault_take_held(struct dpv_qctx *qc);
const struct dpv_fault_stats *dpv_fault_stats(void);

#endif
