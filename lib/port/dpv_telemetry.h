/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * DPDK's own tools on a dpverbs process: the port layer's telemetry
 * commands read with dpdk-telemetry.py (and the start of the capture server
 * dpdk-dumpcap talks to, dpv_pdump.h):
 *
 *   /dpverbs/info          process, configuration, driver, EAL file prefix
 *   /dpverbs/ports         the port names
 *   /dpverbs/port,<name>   one port (name or index): link, addresses, frame
 *                          counters, drops by reason, transport counters
 *   /dpverbs/fault         fault injection: probabilities and what was injected
 *
 * Drivers add their own (drivers/sw/sw_telemetry.c: /dpverbs/qps, /dpverbs/qp).
 * Dictionary keys use only [a-z0-9_] (later DPDK releases reject others).
 *
 * Internal API (not installed).
 */
#ifndef DPV_TELEMETRY_H
#define DPV_TELEMETRY_H

#include <stdbool.h>

struct dpv_runtime;

/*
 * Once per process, after EAL is up: start the capture server
 * (dpv_pdump_init; an error is logged and ignored) and, unless the configuration's
 * eal.telemetry is false, register the commands above. Idempotent.
 */
void dpv_telemetry_init(struct dpv_runtime *rt);

/* Does the configuration want telemetry commands registered? */
bool dpv_telemetry_enabled(const struct dpv_runtime *rt);

#endif /* DPV_TELEMETRY_H */
