/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpverbs port layer: EAL bring-up from the configuration, DPDK ethdev ports,
 * GID tables, ARP / IPv6 neighbour discovery, software loopback and the
 * engine contexts (one RX + one TX queue each) that the transport runs on.
 *
 * Internal API (not installed). Functions return 0 or a negative errno value
 * unless stated otherwise.
 */
#ifndef DPV_PORT_H
#define DPV_PORT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <netinet/in.h>

#include <rte_log.h>
#include <rte_mbuf.h>
#include <rte_ring.h>
#include <rte_spinlock.h>

#include "dpv_conf.h"
#include "dpv_limits.h"
#include "dpv_counters.h"
#include "dpv_wire.h"
#include "dpv_rawkey.h"
#include "dpv_flow.h"
#include "dpv_kif.h"

struct dpv_port;

/* The port layer's log type (lib.dpv.port). */
extern int dpv_port_logtype;
#define DPV_PORT_LOG(level, fmt, ...) \
	rte_log(RTE_LOG_##level, dpv_port_logtype, "dpverbs: " fmt "\n", ##__VA_ARGS__)

/*
 * Port counters, one block per counter slot. A thread takes a private slot
 * the first time it counts (dpv_stat_slot) and updates it with plain
 * relaxed load+store, no locked instruction: it is the slot's only writer.
 * Threads beyond DPV_STAT_SLOTS - 1 share slot 0 with atomic adds. Readers
 * sum the slots (DPV_STAT_READ); a sum taken while counting goes on may be
 * a few counts behind, never torn.
 */
#define DPV_STAT_SLOTS 16
#define DPV_STAT_SHARED 0u

struct dpv_port_stats {
	_Atomic uint64_t cnt[DPV_CNT_NR];
	_Atomic uint64_t rx_pkts, rx_bytes, tx_pkts, tx_bytes;
	_Atomic uint64_t rx_roce, tx_roce, rx_loopback, tx_loopback;
	_Atomic uint64_t arp_rx, arp_tx, nd_rx, nd_tx;
	_Atomic uint64_t link_ups, link_downs, link_restarts;
	/* KiB of memif shared regions faulted in when the link came up
	 * (dpv_link.c memif_prefault) */
	_Atomic uint64_t memif_prefault_kib;
	/* RoCEv2 frames for us received by a context other than the one
	 * their destination QP is bound to (dpv_port_qctx_of) */
	_Atomic uint64_t rx_other_ctx;
	_Atomic uint64_t drop[DPV_DROP_NR];
} __attribute__((aligned(64)));

/* Engine context: one RX and one TX queue of a port. */
struct dpv_qctx {
	struct dpv_port *port;
	uint16_t qid;
	rte_spinlock_t rx_lock;   /* held while polling RX */
	rte_spinlock_t tx_lock;   /* held around rte_eth_tx_burst */
	struct rte_ring *lo_ring; /* software loopback input (MP/SC) */
	struct rte_ring *db_ring; /* QPs with work for the service lcore */
	_Atomic uint64_t last_poll_tsc; /* last time someone polled this context */
	int lcore;                /* service lcore, -1 in inline mode */
	bool rx_backlog;          /* the last poll left frames in the RX queue */
};

/* struct dpv_gid_entry: dpv_conf.h (dpv_conf_gid_table) */

#define DPV_NEIGH_FREE 0
#define DPV_NEIGH_INCOMPLETE 1
#define DPV_NEIGH_REACHABLE 2

struct dpv_neigh {
	uint8_t ip[16];           /* IPv4-mapped or IPv6 */
	uint8_t mac[6];
	uint8_t state;
	uint8_t tries;
	uint64_t next_tsc;        /* when to resend the request */
	struct rte_mbuf *pending[DPV_NEIGH_PENDING_MAX];
	unsigned int n_pending;
};

struct dpv_port {
	const struct dpv_conf_port *conf;
	char name[DPV_NAME_MAX];
	unsigned int index;       /* index in the process' port table */
	uint16_t eth_port;        /* DPDK port id */
	char pmd_name[32];        /* the PMD's driver name, "net_tap" */
	struct rte_mempool *pool;
	uint8_t mac[6];
	uint16_t mtu;             /* Ethernet MTU */
	uint8_t active_mtu;       /* enum ibv_mtu from the Ethernet MTU */
	uint32_t path_mtu_bytes;  /* IB path MTU in bytes */
	uint16_t mtu_cap;         /* the largest MTU the port's buffers and PMD carry */
	/* The GID table, the IPv4 address and the MAC may change while the
	 * port runs (a port that follows its kernel interface, dpv_kif.c):
	 * read them with dpv_port_gid_get / dpv_port_gid_find, which retry
	 * while gid_seq is odd or moved (a writer, EAL's interrupt thread, is
	 * between its two increments). */
	_Atomic uint32_t gid_seq;
	struct in_addr ipv4;
	uint8_t ipv4_prefix;
	struct dpv_gid_entry gids[DPV_GID_TABLE_LEN];
	unsigned int n_gids;      /* table length reported (gid_tbl_len) */
	struct dpv_kif kif;       /* the kernel interface beside the port (ifindex 0: none) */
	struct dpv_xdp xdp;       /* "af_xdp": the XDP program */
	struct dpv_exc exc;       /* "kernel_iface": the exception path */
	_Atomic bool link_up;      /* the link as last read (dpv_link.c) */
	bool link_seen;           /* it has been up since the port started */
	uint64_t link_restart_tsc; /* last (re)start of a memif client */
	bool tx_ip_cksum_offload; /* PMD checksum offloads in use */
	bool tx_batch;            /* a burst is a system call (af_xdp, af_packet): batch (dpv_port_tx_begin) */
	uint64_t eth_speed_mbps;
	uint16_t n_qctx;
	struct dpv_qctx qctx[DPV_MAX_QUEUES];
	struct dpv_flow_state flow; /* rte_flow steering (dpv_flow.c) */
	struct dpv_raw_tab *_Atomic raw; /* raw packet QPs' steering rules, NULL: none (dpv_rawflow.c) */
	rte_spinlock_t raw_lock;  /* writers of raw */
	uint32_t raw_next;        /* the next rule handle */
	rte_spinlock_t neigh_lock;
	_Atomic unsigned int neigh_incomplete; /* entries being resolved */
	uint64_t neigh_next_tsc;  /* next neighbour timer run */
	struct dpv_neigh neigh[DPV_NEIGH_MAX];
	struct dpv_port_stats stats[DPV_STAT_SLOTS];
};

/* The process' runtime: configuration, EAL, ports. */
struct dpv_runtime {
	struct dpv_conf conf;
	struct dpv_port ports[DPV_MAX_PORTS];
	unsigned int n_ports;
	bool eal_ours;            /* we called rte_eal_init */
	char runtime_dir[256];    /* DPDK runtime directory (removed at exit) */
	uint64_t tsc_hz;
	int init_err;             /* errno of a failed init, 0 if fine */
	char init_msg[512];
};

/*
 * Bring the runtime up once per process (thread-safe, idempotent) for this
 * configuration (copied): initialise EAL unless the application already
 * did, start the ports and the engine. Later calls return the same runtime
 * whatever conf they pass. Returns NULL with errno set on failure (the
 * reason is logged once and kept in the runtime's init_msg).
 */
struct dpv_runtime *dpv_runtime_start(const struct dpv_conf *conf);
/* At exit: stop and close the ports (memif removes its socket), release
 * EAL and remove the process' DPDK runtime directory if we created EAL. */
void dpv_runtime_shutdown(void);
/* EAL bring-up (dpv_eal.c): the argument vector from the configuration,
 * stale memif sockets taken over, runtime directories of dead processes
 * swept; a prefix held by another process is named in the error. 0 or -1
 * (reason in rt->init_msg). */
int dpv_eal_up(struct dpv_runtime *rt);
/* Record and print why bring-up failed (errno value err). */
void dpv_runtime_fail(struct dpv_runtime *rt, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Remove a directory and the files in it. */
int dpv_rm_tree(const char *dir);
/* The socket file of a net_memif port (socket-abstract=no; servers only if
 * server_only) into out. Returns false if the port has none. */
bool dpv_memif_socket_path(const struct dpv_conf_port *cp, bool server_only, char *out, size_t len);
/* The runtime if it is up, else NULL (no initialisation). */
struct dpv_runtime *dpv_runtime_peek(void);

struct dpv_port *dpv_port_by_name(const char *name);

/* GID helpers. Returns the GID table index or -1. */
int dpv_port_gid_find(const struct dpv_port *port, const uint8_t gid[16]);
/* The port's LID (dpv_conf_lid_of of its IPv4 address; 0 with "lid": "off"). */
uint16_t dpv_port_lid(const struct dpv_port *port);
/* Entry idx of the GID table, read consistently. false for a bad index. */
bool dpv_port_gid_get(const struct dpv_port *port, unsigned int idx, struct dpv_gid_entry *out);
/* Replace the GID table, the IPv4 address and the MAC (one writer at a
 * time: EAL's interrupt thread, or bring-up). Returns whether anything
 * changed. */
bool dpv_port_gid_set(struct dpv_port *port, const struct dpv_gid_entry tbl[DPV_GID_TABLE_LEN],
		      struct in_addr ipv4, uint8_t ipv4_prefix, const uint8_t mac[6]);
/* Is this GID (IPv4-mapped or IPv6) one of a local port? Returns it or NULL. */
struct dpv_port *dpv_port_find_local_gid(const uint8_t gid[16]);
/*
 * What ibv_query_port reports as the port's state: ACTIVE while the link is
 * up, DOWN while it is down. A port whose link has not been up yet since it
 * started (a memif server waiting for its first client) counts as ACTIVE,
 * as a port cabled to a switch is, so that a server can be started before
 * its peer; from the first link up on, the state follows the link.
 */
static inline bool dpv_port_link_up(const struct dpv_port *p)
{
	return atomic_load_explicit(&p->link_up, memory_order_relaxed) || !p->link_seen;
}

/* Link monitoring (dpv_link.c): an EAL alarm reads every port's link,
 * records changes, calls the link hook and reconnects memif clients. */
typedef void (*dpv_link_fn)(struct dpv_port *p, bool up);
void dpv_port_set_link_handler(dpv_link_fn fn);
int dpv_link_start(struct dpv_runtime *rt);
void dpv_link_stop(struct dpv_runtime *rt);
/* Wait up to ms for the port's link to be up. Returns whether it is. */
bool dpv_link_wait(struct dpv_port *p, unsigned int ms);
/* Is the port a net_memif device (of that role, "role=client", if given)? */
bool dpv_port_is_memif(const struct dpv_port *p, const char *role);

/*
 * The engine context a QP is bound to: its packets are sent there and its
 * timers run there. The NIC cannot steer by destination QP (dpv_flow.h), so
 * a packet may be received by another context; it is then handled there,
 * under the QP's lock (counted as rx_other_ctx).
 */
static inline struct dpv_qctx *dpv_port_qctx_of(struct dpv_port *p, uint32_t qpn)
{
	return &p->qctx[qpn % p->n_qctx];
}

/*
 * Receive hook: the transport registers one function that takes every valid
 * RoCEv2 packet (ICRC checked). It owns the mbuf afterwards.
 */
typedef void (*dpv_roce_rx_fn)(struct dpv_qctx *qc, struct rte_mbuf *m, struct dpv_pkt_info *pi);
void dpv_port_set_rx_handler(dpv_roce_rx_fn fn);

/*
 * Raw Ethernet steering (dpv_rawflow.c, ibv_create_flow): a port's rules
 * are an immutable table replaced whole by each change; the receive path
 * reads it without a lock (an engine context's poll turn), so the caller of
 * dpv_raw_rule_add / _del frees the table they give back in *old only after
 * every context has left its poll turn (the engine's quiesce).
 */
struct dpv_raw_tab {
	unsigned int n;                 /* rules, in match order: */
	unsigned int n_sniff;           /* [0, n_sniff): SNIFFER */
	unsigned int n_normal;          /* then NORMAL by priority, oldest first */
	struct dpv_raw_rule r[];        /* then MC_DEFAULT, then ALL_DEFAULT */
};
/* The driver's delivery of a frame to rule r's QP (a copy: the frame
 * stays the caller's). Runs in the context's poll turn. */
typedef void (*dpv_raw_rx_fn)(struct dpv_qctx *qc, const uint8_t *frame, uint32_t len, const struct dpv_raw_rule *r);
void dpv_port_set_raw_handler(dpv_raw_rx_fn fn);
/* Add rule r (r->handle set; on a port in "isolate" mode a PMD rule to
 * queue 0 first, r->hw): 0, -ENOMEM (DPV_RAW_RULES_MAX rules), -EOPNOTSUPP
 * (the isolated port's PMD refused it, or rte_flow cannot say it). */
int dpv_raw_rule_add(struct dpv_port *p, struct dpv_raw_rule *r, struct dpv_raw_tab **old);
/* The PMD rules of the port's raw rules go (the port stops). */
void dpv_raw_port_teardown(struct dpv_port *p);
/* Remove rule handle of QP qpn (every rule of qpn: handle 0): 0, -ENOENT. */
int dpv_raw_rule_del(struct dpv_port *p, uint32_t handle, uint32_t qpn, struct dpv_raw_tab **old);
/* The classifier, for a frame the port received (or a raw QP of the port
 * sent, raw_lo): true when a rule consumed it (the caller frees it). */
bool dpv_raw_rx(struct dpv_qctx *qc, const struct dpv_raw_tab *t, const uint8_t *frame, uint32_t len, bool raw_lo);
/* A raw packet QP's frame: a copy for the port's own rules (when it has
 * any: as a NIC's loopback), then the frame to the wire. 0, -ENOBUFS. */
int dpv_port_xmit_raw(struct dpv_qctx *qc, struct rte_mbuf *m);
/* the mbuf flag of raw frames looped back to the classifier */
extern uint64_t dpv_lo_raw_flag;

/* Per-poll hook run by each engine context after RX (timers, doorbells);
 * now is the TSC read once for the poll turn. Returns the work it did
 * besides packets (doorbells taken), counted with them by the poll. */
typedef int (*dpv_poll_fn)(struct dpv_qctx *qc, uint64_t now);
void dpv_port_set_poll_handler(dpv_poll_fn fn);

/*
 * Software loopback without checksums: a frame that never leaves the
 * process needs no ICRC, as on a NIC's internal loopback. A sender that
 * builds a frame for a local GID without it marks its mbuf with
 * dpv_lo_trusted_flag (0 when not allowed: fault
 * injection is on, or the flag could not be registered); the receiver then
 * parses it with dpv_pkt_parse_trusted. Frames without the flag are checked
 * in full, whatever ring they came through.
 */
extern uint64_t dpv_lo_trusted_flag;
/* The local port owning dgid when software loopback will carry a frame to
 * it, else NULL. */
struct dpv_port *dpv_port_loopback_dst(const uint8_t dgid[16]);

/*
 * Transmit a fully built RoCEv2 frame (the Ethernet header's destination MAC
 * may be unset; the caller has chosen the path with dpv_port_loopback_dst):
 * into local port lp by software loopback, or to the wire after resolving
 * the neighbour of dgid. Consume the mbuf in every case. Return 0 if sent
 * or queued (pending neighbour resolution), -ENOBUFS if the TX queue (or
 * the loopback ring) stayed full (the caller may send it again later),
 * another negative errno if dropped.
 */
int dpv_port_xmit_local(struct dpv_qctx *qc, struct dpv_port *lp, struct rte_mbuf *m);
int dpv_port_xmit_remote(struct dpv_qctx *qc, struct rte_mbuf *m, const uint8_t dgid[16]);
/* To multicast group dgid: on the wire to the group's Ethernet address,
 * and a copy to qc's port itself (its QPs attached to the group). */
int dpv_port_xmit_mcast(struct dpv_qctx *qc, struct rte_mbuf *m, const uint8_t dgid[16]);

/* Poll one engine context (RX burst, loopback ring, ARP/ND, hooks).
 * Returns the number of packets processed. Takes rx_lock (trylock: returns 0
 * if another thread is polling). */
int dpv_qctx_poll(struct dpv_qctx *qc);
/* Poll every context of every port (inline progress). */
int dpv_progress_all(void);

/* Allocate an mbuf from the port's pool. */
struct rte_mbuf *dpv_port_alloc_mbuf(struct dpv_port *port);

/* Neighbour layer (dpv_neigh.c). */
int dpv_neigh_rx(struct dpv_qctx *qc, struct rte_mbuf *m); /* 1: consumed, 0: not ARP/ND */
int dpv_neigh_resolve_or_queue(struct dpv_qctx *qc, const uint8_t ip[16], struct rte_mbuf *m,
			       uint8_t mac_out[6]); /* 1: mac_out valid, 0: queued, <0 dropped */
void dpv_neigh_timer(struct dpv_qctx *qc, uint64_t now);
void dpv_neigh_prefetch(struct dpv_qctx *qc, const uint8_t ip[16]);
/* The kernel told ip's MAC (a port whose kernel owns ARP/ND, dpv_kif.c):
 * an entry being resolved becomes reachable and its frames leave; a known
 * one takes the new MAC. */
void dpv_neigh_kernel_learn(struct dpv_qctx *qc, const uint8_t ip[16], const uint8_t mac[6]);
/* The link came up: ask again at once for every unresolved neighbour. */
void dpv_neigh_link_up(struct dpv_port *p);
bool dpv_neigh_ready(struct dpv_qctx *qc, const uint8_t ip[16]);
/* 0 with ip's MAC, -EAGAIN while resolving it (asked if nobody was). */
int dpv_neigh_lookup(struct dpv_qctx *qc, const uint8_t ip[16], uint8_t mac[6]);
int dpv_port_tx_raw(struct dpv_qctx *qc, struct rte_mbuf *m); /* send as is, consumes; 0 or -ENOBUFS */
/*
 * Transmit batching for ports whose transmit burst is a system call
 * (af_xdp, af_packet: p->tx_batch): between dpv_port_tx_begin(qc) and
 * dpv_port_tx_end(qc) on one thread, frames this thread sends on qc are
 * held (up to DPV_BURST) and leave in one burst, at the end or when DPV_BURST
 * are held, instead of one burst each. Brackets nest; frames for another
 * context leave at once. Inside a bracket a transmit cannot report a full
 * TX queue to its caller: the burst retries DPV_TX_RETRIES times, then
 * drops what did not fit (tx_full; RC retransmits). No-ops on other ports.
 */
void dpv_port_tx_begin(struct dpv_qctx *qc);
void dpv_port_tx_end(struct dpv_qctx *qc);
/* Inside a bracket: what this thread holds for qc leaves now (a frame that
 * must be on the wire before the application can see what follows). */
void dpv_port_tx_push(struct dpv_qctx *qc);
/* The same without fault injection (the kernel's frames of an exception path). */
int dpv_port_tx_frame(struct dpv_qctx *qc, struct rte_mbuf *m);

/* Map an Ethernet MTU to the IB MTU enum (1..5) the port can carry. */
uint8_t dpv_eth_mtu_to_ib(uint16_t eth_mtu, uint8_t ip_ver);

/* This thread's counter slot + 1 (0: none yet). Initial-exec TLS: one
 * %fs-relative load instead of a __tls_get_addr call per counter (4 bytes
 * of glibc's static TLS surplus when the library is dlopen()ed). */
extern __thread unsigned int dpv_stat_tslot __attribute__((tls_model("initial-exec")));
unsigned int dpv_stat_slot_assign(void);
static inline unsigned int dpv_stat_slot(void)
{
	unsigned int s = dpv_stat_tslot;
	return likely(s != 0) ? s - 1 : dpv_stat_slot_assign();
}

static inline void dpv_stat_add_slot(_Atomic uint64_t *c, uint64_t v, unsigned int slot)
{
	if (likely(slot != DPV_STAT_SHARED))
		atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + v,
				      memory_order_relaxed);
	else
		atomic_fetch_add_explicit(c, v, memory_order_relaxed);
}

/* Count v on port p's counter `field` (e.g. rx_pkts, drop[DPV_DROP_SHORT]). */
#define DPV_STAT_ADD(p, field, v)                                                     \
	do {                                                                          \
		unsigned int _s = dpv_stat_slot();                                    \
		dpv_stat_add_slot(&(p)->stats[_s].field, (uint64_t)(v), _s);          \
	} while (0)

/* The value of port p's counter `field`: the sum of its slots. */
#define DPV_STAT_READ(p, field)                                                       \
	({                                                                            \
		uint64_t _t = 0;                                                      \
		for (unsigned int _i = 0; _i < DPV_STAT_SLOTS; _i++)                  \
			_t += atomic_load_explicit(&(p)->stats[_i].field,             \
						   memory_order_relaxed);             \
		_t;                                                                   \
	})

#endif /* DPV_PORT_H */
