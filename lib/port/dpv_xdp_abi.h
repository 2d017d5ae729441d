/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What dpverbs' XDP program (bpf/dpv_xdp.bpf.c) and the port layer
 * (dpv_xdp.c) agree on: the program and map names, the key of the address
 * map and the slots of the statistics map. Included by both; no headers.
 */
#ifndef DPV_XDP_ABI_H
#define DPV_XDP_ABI_H

/* The program's name as the kernel reports it (bpf_prog_info.name, at most
 * 15 characters): how a later start recognises a program dpverbs left. */
#define DPV_XDP_PROG_NAME "dpv_xdp_roce"
/* Maps: the AF_XDP sockets by RX queue (the name DPDK's net_af_xdp looks
 * for), the addresses RoCEv2 is taken for, the counters. */
#define DPV_XDP_MAP_XSKS "xsks_map"
#define DPV_XDP_MAP_ADDRS "dpv_addrs"
#define DPV_XDP_MAP_STATS "dpv_xdp_stats"
#define DPV_XDP_MAP_OWNER "dpv_owner"

/* Capacity of the maps. */
#define DPV_XDP_MAX_QUEUES 64
#define DPV_XDP_MAX_ADDRS 64

/* dpv_addrs: key = 16 bytes, IPv6 or IPv4-mapped (::ffff:a.b.c.d), as a
 * GID; value = 1. */

/* dpv_owner, one entry: the process that runs the program (pid and its
 * start time in clock ticks since boot, /proc/<pid>/stat field 22), so
 * that a later start can tell a live owner from a dead one. */
struct dpv_xdp_owner {
	unsigned int pid;
	unsigned int pad;
	unsigned long long start_ticks;
};

/* dpv_xdp_stats: per-CPU counters, one slot each. */
enum dpv_xdp_stat {
	DPV_XDP_ST_ROCE = 0,   /* RoCEv2 for one of our addresses, to the AF_XDP socket */
	DPV_XDP_ST_PASS,       /* everything else, to the kernel */
	DPV_XDP_ST_NO_XSK,     /* RoCEv2 for us on an RX queue with no socket: dropped */
	DPV_XDP_ST_NR
};

#endif /* DPV_XDP_ABI_H */
