/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Ports beside the kernel (port-layer internal; included by dpv_port.h):
 *
 *  - dpv_kif.c: the kernel interface a port lives beside ("iface" of an
 *    "af_xdp" port, the "kernel_iface" of the exception path). The kernel
 *    owns ARP/ND there: neighbours come from its table (rtnetlink, lib/nl),
 *    and unknown ones are resolved by asking it. An "af_xdp" port without
 *    configured addresses follows the interface's addresses (its GIDs), MTU
 *    and link state, through rtnetlink notifications read on EAL's
 *    interrupt thread.
 *  - dpv_xdp.c: AF_XDP (DPDK's net_af_xdp) with dpverbs' own XDP program
 *    (bpf/dpv_xdp.bpf.c): RoCEv2 for the port's addresses to the AF_XDP
 *    sockets, everything else to the kernel.
 *  - dpv_exc.c: the exception path of a port dpverbs owns whole: a net_tap
 *    interface holding the port's MAC, addresses and MTU; frames that are
 *    not RoCEv2 for the port go to it, what the kernel sends on it leaves
 *    through the port.
 */
#ifndef DPV_KIF_H
#define DPV_KIF_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <rte_spinlock.h>

#include "dpv_conf.h"
#include "dpv_xdp_abi.h"

struct dpv_port;
struct dpv_runtime;
struct dpv_qctx;
struct rte_mbuf;

/* The kernel interface of a port (ifindex 0: none). */
struct dpv_kif {
	int ifindex;
	char name[DPV_IFNAME_MAX];
	bool kernel_neigh;        /* the kernel owns ARP/ND: ask it, never answer */
	bool follow_addrs;        /* GIDs from the interface's addresses */
	bool follow_mtu;          /* MTU from the interface */
	bool follow_link;         /* link state from the interface (IFF_UP and carrier) */
	_Atomic bool link_up;     /* as last read (follow_link) */
	int req_sock;             /* rtnetlink socket for neighbour requests (-1: none) */
	rte_spinlock_t req_lock;  /* serialises req_sock */
	unsigned int addrs_ignored; /* addresses beyond the GID table (logged once) */
};

/* What an "af_xdp" port attached (dpv_xdp.c). */
struct dpv_xdp {
	int prog_fd, link_fd;     /* the program; the bpf_link holding it on the interface */
	int addrs_fd, stats_fd, owner_fd;
	int obj_fd;               /* memfd holding the object for net_af_xdp (until started) */
	int lock_fd;              /* the interface's bring-up lock (until held by the link) */
	uint32_t prog_id;
	uint32_t attach_flags;    /* XDP_FLAGS_DRV_MODE / SKB_MODE, 0: the kernel's choice */
	char mode[8];             /* "native", "generic" (as attached) */
	unsigned int n_zc;        /* queues whose socket is zero-copy */
	unsigned int n_xsk;       /* sockets found */
	bool busy_poll;           /* preferred busy polling on the sockets */
	unsigned int busy_budget;
	unsigned int if_rx_queues; /* RX queues of the interface */
	int pre_fds[DPV_XDP_MAX_QUEUES]; /* AF_XDP sockets before this port's were made */
	unsigned int n_pre;
	int xsk_fds[DPV_XDP_MAX_QUEUES]; /* the port's AF_XDP sockets (XDP_STATISTICS) */
};

/* The exception path (dpv_exc.c). */
struct dpv_exc {
	uint16_t eth_port;        /* the net_tap port */
	bool created;             /* eth_port exists */
	bool on;                  /* frames flow (after the interface is configured) */
	uint64_t next_tsc;        /* next read of the tap while it is quiet (context 0) */
	rte_spinlock_t lock;      /* around the tap's TX (any context's RX path) */
	_Atomic uint64_t to_kernel, from_kernel, drops;
};

/* ---- dpv_kif.c ---- */

/* Before EAL probes the port: find the interface, record what follows it. */
int dpv_kif_init(struct dpv_runtime *rt, struct dpv_port *p, const char *name, unsigned int idx);
/* Read the interface (MAC, MTU, link, addresses) into the port: at start
 * and after every notification. Builds the GID table of a port that
 * follows the interface's addresses. */
int dpv_kif_sync(struct dpv_port *p, bool at_start);
/* Start following every port's interface (rtnetlink on EAL's interrupt
 * thread); 0 if no port has one. */
int dpv_kif_monitor_start(struct dpv_runtime *rt);
void dpv_kif_monitor_stop(void);
/* Ask the kernel for ip's MAC: 1 with mac set if its table has it, 0 if it
 * was asked to resolve it (the answer comes as a notification). */
int dpv_kif_neigh_ask(struct dpv_port *p, const uint8_t ip[16], uint8_t mac[6]);
/* The port's GIDs changed (dpv_kif.c): XDP addresses, the driver's hook. */
typedef void (*dpv_gid_fn)(struct dpv_port *p);
void dpv_port_set_gid_handler(dpv_gid_fn fn);

/* What a port beside the kernel reports (telemetry, dpv_stat). */
struct dpv_kif_info {
	char iface[DPV_IFNAME_MAX]; /* "" : a port without kernel interface */
	char xdp_mode[48];        /* "native zero-copy busy-poll", "generic copy", "" */
	uint64_t xdp[DPV_XDP_ST_NR];
	/* the kernel's counts of the port's AF_XDP sockets (XDP_STATISTICS):
	 * frames it dropped for a full RX ring, an empty fill ring, or else */
	uint64_t xsk_rx_ring_full, xsk_fill_empty, xsk_rx_dropped;
	uint64_t exc_to_kernel, exc_from_kernel, exc_drops;
};
void dpv_kif_info(const struct dpv_port *p, struct dpv_kif_info *out);

/* ---- dpv_xdp.c ---- */

/* Checks (interface, capabilities, queues, another XDP program, what a
 * dead dpverbs process left), then the net_af_xdp device with dpverbs'
 * program; sets p->eth_port. 0, or -1 after dpv_runtime_fail. */
int dpv_xdp_prepare(struct dpv_runtime *rt, struct dpv_port *p);
/* After the port started: hold the program by a bpf_link (gone with the
 * process), the owner, the addresses, the mode in use. */
int dpv_xdp_attach(struct dpv_runtime *rt, struct dpv_port *p);
/* Write the port's GIDs into the program's address map. */
void dpv_xdp_sync_addrs(struct dpv_port *p);
/* The program's counters, summed over CPUs (DPV_XDP_ST_NR values). */
int dpv_xdp_read_stats(const struct dpv_port *p, uint64_t out[DPV_XDP_ST_NR]);
/* Add the kernel's counts of the port's AF_XDP sockets to out. */
void dpv_xdp_xsk_stats(const struct dpv_port *p, struct dpv_kif_info *out);
/* At exit, after the ethdev is closed: the program leaves the interface. */
void dpv_xdp_release(struct dpv_port *p);
/* In a child of fork(): drop the parent's hold on the program. */
void dpv_xdp_forget(struct dpv_port *p);

/* ---- dpv_exc.c ---- */

/* The net_tap interface of a port with "kernel_iface" (after its own
 * port started). 0, or -1 after dpv_runtime_fail. */
int dpv_exc_start(struct dpv_runtime *rt, struct dpv_port *p);
/* A received frame that is not the engine's: to the kernel (consumes m). */
void dpv_exc_to_kernel(struct dpv_port *p, struct rte_mbuf *m);
/* Frames the kernel sent on the interface: out through the port (context
 * 0's turn). Returns how many. */
int dpv_exc_poll(struct dpv_qctx *qc);
/* At exit, before the interfaces go: keep both directions flowing until
 * the kernel's traffic has been quiet a moment (bounded). */
void dpv_exc_drain(struct dpv_runtime *rt);
void dpv_exc_stop(struct dpv_port *p);

#endif /* DPV_KIF_H */
