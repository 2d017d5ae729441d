/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Counters published for other processes: every process using dpverbs
 * keeps a snapshot of its port counters (drops by reason, transport
 * counters) and per-QP counters in /dev/shm/dpverbs-stats.<pid>, refreshed
 * every DPV_STATS_PERIOD_MS by the engine and removed at exit. apps/dpv_stat
 * reads them. The layout is versioned; readers check magic and version.
 */
#ifndef DPV_STATS_H
#define DPV_STATS_H

#include <stdint.h>

#include "dpv_limits.h"

#define DPV_STATS_MAGIC "DPVSTAT1"
#define DPV_STATS_VERSION 2
#define DPV_STATS_PREFIX "/dev/shm/dpverbs-stats."
#define DPV_STATS_PERIOD_MS 100
#define DPV_STATS_MAX_QPS 1024
#define DPV_STATS_MAX_CNT 32 /* >= DPV_CNT_NR and DPV_DROP_NR */

struct dpv_stats_port {
	char name[DPV_NAME_MAX];
	uint64_t rx_pkts, rx_bytes, tx_pkts, tx_bytes;
	uint64_t rx_roce, tx_roce, rx_loopback, tx_loopback;
	uint64_t arp_rx, arp_tx, nd_rx, nd_tx;
	uint64_t drop[DPV_STATS_MAX_CNT];
	uint64_t cnt[DPV_STATS_MAX_CNT];
	/* a port beside the kernel (dpv_kif.h): its interface ("" if none),
	 * for "af_xdp" how the program and sockets run ("native zero-copy
	 * busy-poll"), what the XDP program did, and the exception path */
	char kernel_iface[16];
	char xdp_mode[48];
	uint64_t xdp_roce, xdp_pass, xdp_no_xsk;
	uint64_t xsk_rx_ring_full, xsk_fill_empty, xsk_rx_dropped;
	uint64_t exc_to_kernel, exc_from_kernel, exc_drops;
};

struct dpv_stats_qp {
	uint32_t qpn;
	uint32_t type;          /* enum ibv_qp_type */
	uint32_t state;         /* enum ibv_qp_state */
	uint32_t port;          /* index in ports[] */
	uint64_t cnt[DPV_STATS_MAX_CNT];
};

struct dpv_stats_shm {
	char magic[8];
	uint32_t version;
	int32_t pid;
	uint64_t seq;           /* odd while being written */
	uint64_t updated_ns;    /* CLOCK_REALTIME of the last refresh */
	uint32_t n_ports, n_qps;
	uint32_t n_drop, n_cnt; /* entries used in drop[] / cnt[] */
	char drop_names[DPV_STATS_MAX_CNT][32];
	char cnt_names[DPV_STATS_MAX_CNT][32];
	uint64_t fault_dropped, fault_duplicated, fault_reordered, fault_corrupted;
	struct dpv_stats_port ports[DPV_MAX_PORTS];
	struct dpv_stats_qp qps[DPV_STATS_MAX_QPS];
};

#endif
