/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Packet capture by DPDK's tools (dpdk-dumpcap, dpdk-pdump) on a dpverbs
 * primary process: the server that answers their "mp_pdump" requests
 * (dpv_pdump.c says why it is not librte_pdump's on DPDK 22.11).
 *
 * Internal API (not installed).
 */
#ifndef DPV_PDUMP_H
#define DPV_PDUMP_H

struct dpv_runtime;

/*
 * Once per process, after the ports are up: start the capture server in a
 * primary process (nothing in a secondary). With DPDK 22.x and an EAL
 * dpverbs brought up, dpverbs' own server for its ports; otherwise
 * rte_pdump_init().
 *
 * RETURN VALUE: 0, or a negative errno (logged at INFO): -EEXIST when the
 * application already runs librte_pdump's server, -ENOMEM, -ENOTSUP when
 * EAL has no multi-process channel (--no-shconf / --in-memory).
 */
int dpv_pdump_init(const struct dpv_runtime *rt);

#endif /* DPV_PDUMP_H */
