/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpverbs configuration: one JSON file read with jansson.
 *
 * Selected by the environment variable DPVERBS_CONFIG=<file>; without it the
 * built-in default applies (two virtual ports "dpv0"/"dpv1" on a net_ring
 * pair wired back to back in one process). Every field is validated; unknown
 * fields are rejected. An error message names the file, the field (as a JSON
 * path such as "ports[1].mtu") and the reason.
 */
#ifndef DPV_CONF_H
#define DPV_CONF_H

#include <stdbool.h>
#include <stdint.h>
#include <netinet/in.h>

#include "dpv_limits.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Defaults and ranges of the per-port and EAL fields (config/README.md). */
#define DPV_CONF_DEF_MTU 1500
#define DPV_CONF_DEF_SHARED_SOCKET "/run/dpverbs/dpverbsd.sock" /* "shared.socket" */
#define DPV_CONF_DEF_IDLE_YIELD 256      /* "shared.idle_yield" */
#define DPV_CONF_MAX_IDLE_YIELD 1000000000
#define DPV_CONF_MIN_MTU 256
#define DPV_CONF_MAX_MTU 9000
#define DPV_CONF_DEF_DESC 1024          /* rx_desc, tx_desc */
#define DPV_CONF_MIN_DESC 64            /* power of two */
#define DPV_CONF_MAX_DESC 16384
#define DPV_CONF_DEF_QUEUES 1           /* 1 .. DPV_MAX_QUEUES */
#define DPV_CONF_DEF_MBUFS 8191
#define DPV_CONF_MIN_MBUFS 128
#define DPV_CONF_MAX_MBUFS (1u << 24)
#define DPV_CONF_MAX_LCORE 127          /* lcore ids 0 .. 127 */
#define DPV_CONF_DEF_DM_SIZE (256u << 10) /* "dm_size": device memory, as a ConnectX's MEMIC */
#define DPV_CONF_MAX_DM_SIZE (1u << 30)
#define DPV_CONF_DM_UNIT DPV_DM_UNIT     /* dm_size is a multiple of it */
#define DPV_CONF_DEF_LOG_LEVEL 4        /* RTE_LOG_ERR */
#define DPV_CONF_MAX_LOG_LEVEL 8        /* RTE_LOG_DEBUG */
#define DPV_CONF_MAX_MEMORY_MB (1u << 20)
#define DPV_CONF_DEF_SEED 1
/* Upper bounds of the "limits" section (lower bound 1, max_inline_data 0). */
#define DPV_CONF_LIM_MAX_QP (1u << 18)
#define DPV_CONF_LIM_MAX_CQ (1u << 18)
#define DPV_CONF_LIM_MAX_MR (1u << 24)
#define DPV_CONF_LIM_MAX_PD (1u << 18)
#define DPV_CONF_LIM_MAX_AH (1u << 24)
#define DPV_CONF_LIM_MAX_SRQ (1u << 18)
#define DPV_CONF_LIM_MAX_QP_WR (1u << 20)
#define DPV_CONF_LIM_MAX_CQE (1u << 22)
#define DPV_CONF_LIM_MAX_SGE 256
#define DPV_CONF_LIM_MAX_INLINE 4096
#define DPV_CONF_LIM_MIN_MR_SIZE 4096ULL
#define DPV_CONF_LIM_MAX_MR_SIZE (1ULL << 48)

enum dpv_dev_type {
	DPV_DEV_RING = 1,   /* software pair: "peer" names the other port */
	DPV_DEV_VDEV,       /* any DPDK vdev string, e.g. "net_memif0,role=server,..." */
	DPV_DEV_PCI,        /* a PCI address "0000:03:00.0" (+ optional devargs) */
	DPV_DEV_AF_XDP,     /* AF_XDP on a kernel interface, beside the kernel ("iface") */
};

/* device.xdp_mode of an "af_xdp" port: how its XDP program is attached. */
enum dpv_xdp_mode {
	DPV_XDP_AUTO = 1,   /* the driver's (native) XDP where it has it, else generic */
	DPV_XDP_NATIVE,     /* the driver's XDP, or an error */
	DPV_XDP_GENERIC,    /* generic (skb) XDP, copy mode */
};

/* Interface names: IFNAMSIZ - 1 characters. */
#define DPV_IFNAME_MAX 16

enum dpv_progress {
	DPV_PROGRESS_INLINE = 1, /* run to completion on the caller's thread */
	DPV_PROGRESS_LCORE,      /* dedicated lcores */
};

enum dpv_mode {
	DPV_MODE_EMBEDDED = 1,
	DPV_MODE_SHARED,
};

/* ports[].flow: how RoCEv2 frames reach the engine contexts (lib/port/dpv_flow.c). */
enum dpv_flow_mode {
	DPV_FLOW_AUTO = 1,  /* rte_flow rules where the PMD takes them, else software dispatch */
	DPV_FLOW_OFF,       /* software dispatch only, no rte_flow call */
	DPV_FLOW_ISOLATE,   /* rte_flow_isolate + rules, required (bifurcated NICs) */
};

struct dpv_conf_ipv6 {
	struct in6_addr addr;
	uint8_t prefix;
};

struct dpv_conf_port {
	char name[DPV_NAME_MAX];         /* verbs device name, "dpv0" */
	enum dpv_dev_type type;
	char devargs[DPV_DEVARGS_MAX];   /* vdev string, or PCI address[,args] */
	char peer[DPV_NAME_MAX];         /* ring: name of the peer port */
	uint8_t mac[6];
	bool mac_set;                    /* false: use the PMD's MAC */
	struct in_addr ipv4;             /* 0.0.0.0: none */
	uint8_t ipv4_prefix;
	struct dpv_conf_ipv6 ipv6[DPV_MAX_IPV6_PER_PORT]; /* extra GIDs */
	unsigned int n_ipv6;
	uint16_t mtu;                    /* Ethernet MTU, 256+ .. 9000 */
	uint16_t rx_desc, tx_desc;
	uint16_t n_queues;               /* engine contexts (RX/TX queue pairs) */
	int lcores[DPV_MAX_LCORES];      /* progress=lcore: lcore per queue */
	unsigned int n_lcores;
	uint32_t mbufs;                  /* mbufs in the port's pool */
	enum dpv_flow_mode flow;         /* rte_flow steering ("auto" by default) */
	bool mtu_set;                    /* "mtu" given (else the default, or the interface's) */
	/* "af_xdp": the kernel interface and how the XDP program is attached;
	 * without "ipv4"/"ipv6"/"mtu" the port follows the interface's */
	char iface[DPV_IFNAME_MAX];
	enum dpv_xdp_mode xdp_mode;
	/* exception path: a kernel interface of this name (net_tap) holding the
	 * port's MAC, addresses and MTU, fed every frame that is not RoCEv2
	 * for the port ("" : none) */
	char kernel_iface[DPV_IFNAME_MAX];
	/* "lid": "auto" (default) reports the low 16 bits of the port's IPv4
	 * address as its LID when they make a unicast LID and the prefix is /16
	 * or longer, so that LID-addressed programs work on RoCE within that
	 * /16 (dpv_port_lid); "off": LID 0, as a ConnectX RoCE port */
	bool lid_off;
	/* "dm_size": bytes of device memory (ibv_alloc_dm) the port's device
	 * offers, max_dm_size of ibv_query_device_ex; 0: none */
	uint32_t dm_size;
};

struct dpv_conf_fault {
	double drop, duplicate, reorder, corrupt; /* probabilities 0..1 */
	uint64_t seed;
};

#define DPV_CONF_MAX_LOG 16

/* "log": {"<log type or pattern>": level} (DPDK log types, e.g. pmd.dpv.sw) */
struct dpv_conf_log {
	char pattern[DPV_NAME_MAX];
	int level;                       /* 1..8 (RTE_LOG_EMERG..RTE_LOG_DEBUG) */
};

struct dpv_conf {
	char source[DPV_PATH_MAX];       /* file name or "<built-in default>" */
	char driver[DPV_NAME_MAX];       /* transport driver: "sw" (default), "null" */
	enum dpv_mode mode;
	char shared_socket[108];         /* shared mode: dpverbsd's socket ("shared.socket") */
	uint32_t shared_idle_yield;      /* shared mode: empty polls of a thread per contention check (0: never sleep) */
	enum dpv_progress progress;
	bool sw_loopback;                /* loop local GIDs in software */
	/* EAL */
	char *eal_args[DPV_MAX_EAL_ARGS];/* extra EAL arguments (strdup'd) */
	unsigned int n_eal_args;
	char file_prefix[DPV_NAME_MAX];  /* "" : dpv-<pid> */
	bool huge;                       /* false: --no-huge */
	bool telemetry;                  /* false: --no-telemetry, no dpverbs telemetry commands */
	uint32_t memory_mb;              /* -m / --socket-mem, 0: EAL default */
	int log_level;                   /* 0..8, DPDK log level */
	struct dpv_conf_log log[DPV_CONF_MAX_LOG];
	unsigned int n_log;
	/* ports */
	struct dpv_conf_port ports[DPV_MAX_PORTS];
	unsigned int n_ports;
	/* limits reported by ibv_query_device */
	uint32_t max_qp, max_cq, max_mr, max_pd, max_ah, max_srq;
	uint32_t max_qp_wr, max_cqe, max_sge, max_inline;
	uint64_t max_mr_size;
	struct dpv_conf_fault fault;
};

/*
 * A port's GID table (dpv_conf_gid.c), as lib/port builds it at start and
 * the sysfs view shows it: 0 the link-local fe80::/64 with the modified
 * EUI-64 of the MAC, 1 the IPv4-mapped ::ffff:a.b.c.d of "ipv4" (empty
 * without one), 2.. the "ipv6" addresses in configuration order; the rest
 * empty (all zero, valid false), as rxe's fixed-size table.
 */
struct dpv_gid_entry {
	uint8_t gid[16];
	bool valid;
	uint8_t ip_ver;           /* 4 for IPv4-mapped, 6 otherwise */
};

/* The modified EUI-64 of a MAC (RFC 4291): node GUID and GID 0's low half. */
void dpv_mac_eui64(const uint8_t mac[6], uint8_t out[8]);
/* Fill tbl (DPV_GID_TABLE_LEN entries) for port cp whose MAC is mac (the
 * configured one, or the PMD's when "mac" is not set). */
void dpv_conf_gid_table(const struct dpv_conf_port *cp, const uint8_t mac[6],
			struct dpv_gid_entry tbl[DPV_GID_TABLE_LEN]);

struct dpv_nl_addr;
/*
 * The GID table of a port that follows its kernel interface's addresses a
 * (n of them, as lib/nl's dpv_nl_addrs lists them): 0 the link-local GID of
 * mac (Linux's default RoCE GID), 1 the first IPv4 address (also into *v4
 * and *v4_prefix), 2 .. 1 + DPV_MAX_IPV6_PER_PORT the global and
 * unique-local IPv6 addresses that passed DAD, in the kernel's order.
 * Returns how many addresses found no entry.
 */
unsigned int dpv_conf_gid_table_addrs(const uint8_t mac[6], const struct dpv_nl_addr *a, int n,
				      struct dpv_gid_entry tbl[DPV_GID_TABLE_LEN], struct in_addr *v4,
				      uint8_t *v4_prefix);

/*
 * Load a configuration: from path if not NULL, else from $DPVERBS_CONFIG if
 * set, else the built-in default. On error returns -1 and writes a message
 * "FILE: FIELD: REASON" into err (errlen bytes). Returns 0 on success.
 * An empty $DPVERBS_CONFIG counts as unset. On failure *conf is left all
 * zeros (dpv_conf_free() on it is harmless); on success release it with
 * dpv_conf_free().
 */
int dpv_conf_load(const char *path, struct dpv_conf *conf, char *err, size_t errlen);
/* Parse from a string (source names the origin in messages). */
int dpv_conf_parse_string(const char *json, const char *source, struct dpv_conf *conf,
			  char *err, size_t errlen);
/* The built-in default configuration as JSON text. */
const char *dpv_conf_default_json(void);
/* Free what dpv_conf_load allocated (EAL argument strings). */
void dpv_conf_free(struct dpv_conf *conf);
/* The kernel interface a port lives beside: "iface" of an "af_xdp" port,
 * its "kernel_iface", or NULL (a port dpverbs owns alone). */
const char *dpv_conf_port_netdev(const struct dpv_conf_port *cp);
/* Does the port follow its kernel interface's addresses and MTU (an
 * "af_xdp" port without "ipv4"/"ipv6")? */
bool dpv_conf_port_follows_kernel(const struct dpv_conf_port *cp);

/* The LID a port with IPv4 address a/prefix reports (dpverbs' LIDs on
 * RoCE, "lid": "auto"): the low 16 bits of a when prefix >= 16 and they are
 * a unicast LID (1 .. 0xbfff); else 0. a in network byte order. */
uint16_t dpv_conf_lid_of(uint32_t a, uint8_t prefix);

/* Find a port by name; NULL if none. */
const struct dpv_conf_port *dpv_conf_port_by_name(const struct dpv_conf *conf, const char *name);

#ifdef __cplusplus
}
#endif
#endif /* DPV_CONF_H */
