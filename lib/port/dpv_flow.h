/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * RoCEv2 steering with rte_flow (dpv_flow.c): the rules a port asks its PMD
 * for, built without a device, and what the PMD answered.
 *
 * What DPDK 22.11 allows: a rule can match Ethernet / IPv4 or IPv6 (the
 * destination address: one of the port's GIDs) / UDP destination port 4791
 * and send it to one RX queue. It cannot match the BTH destination QP
 * (RTE_FLOW_ITEM_TYPE_IB_BTH only exists from DPDK 23.07 on; RAW items mean
 * something different to every PMD that has them), and the UDP source port
 * is chosen by the sender from its own QP, so no rule can pick the context a
 * QP is bound to (qpn % queues, dpv_port_qctx_of). The rules therefore send
 * every RoCEv2 frame for the port to queue 0, and the destination QP's
 * context is found in software (the transport's receive hook), as it is
 * without rules. With "isolate" the port receives only what the rules
 * match: ARP for its IPv4 address and ICMPv6 NS/NA for its IPv6 GIDs go to
 * queue 0 too; everything else stays with the kernel (bifurcated NICs).
 *
 * Internal API: functions return 0 or a negative errno value.
 */
#ifndef DPV_FLOW_H
#define DPV_FLOW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <netinet/in.h>

#include <rte_flow.h>

#include "dpv_conf.h"
#include "dpv_rawkey.h"

struct dpv_port;

#define DPV_FLOW_MAX_RULES 24   /* RoCEv2 per GID, ARP, NS/NA per IPv6 GID */
#define DPV_FLOW_MAX_ITEMS 5    /* ETH / IP / UDP|ICMP6 or ETH / ARP, END */
#define DPV_FLOW_DESC_LEN 96
#define DPV_FLOW_MSG_LEN 112
#define DPV_FLOW_QUEUE 0        /* RoCEv2 and neighbours: context 0 */
#define DPV_FLOW_NOT_ASKED 1    /* a result that was not asked for */

enum dpv_flow_kind {
	DPV_FLOW_ROCE = 1,  /* IPv4 or IPv6 destination a GID, UDP destination 4791 */
	DPV_FLOW_ARP,       /* ARP whose target address is the port's IPv4 */
	DPV_FLOW_ARP_ANY,   /* every ARP frame (EtherType only): if DPV_FLOW_ARP is refused */
	DPV_FLOW_ND_NS,     /* ICMPv6 neighbour solicitation to a GID's solicited-node group */
	DPV_FLOW_ND_NA,     /* ICMPv6 neighbour advertisement to a GID */
	DPV_FLOW_RAW,       /* a raw packet QP's steering rule (ibv_create_flow) */
};

/* One rule and the storage its items and action point into: build it in
 * place and never copy it (the PMD copies what it keeps). */
struct dpv_flow_rule {
	enum dpv_flow_kind kind;
	uint8_t ip_ver;                 /* 4 or 6; 0 for ARP */
	uint8_t addr[16];               /* the address matched (IPv4: 4 bytes) */
	struct rte_flow_attr attr;
	struct rte_flow_item pattern[DPV_FLOW_MAX_ITEMS];
	struct rte_flow_action actions[2];
	struct rte_flow_action_queue act_queue;
	struct rte_flow_item_eth eth_spec, eth_mask;
	struct rte_flow_item_ipv4 ip4_spec, ip4_mask;
	struct rte_flow_item_ipv6 ip6_spec, ip6_mask;
	struct rte_flow_item_udp udp_spec, udp_mask;
	struct rte_flow_item_tcp tcp_spec, tcp_mask;
	struct rte_flow_item_vlan vlan_spec, vlan_mask;
	struct rte_flow_item_icmp6 icmp6_spec, icmp6_mask;
	struct rte_flow_item_arp_eth_ipv4 arp_spec, arp_mask;
};

/* What was asked of the PMD for one rule and what it answered. */
struct dpv_flow_result {
	char desc[DPV_FLOW_DESC_LEN];   /* "eth / ipv4 dst 198.51.100.1 / udp dst 4791 -> queue 0" */
	int validate;                   /* rte_flow_validate: 0, -errno, or DPV_FLOW_NOT_ASKED */
	int create;                     /* rte_flow_create: the same */
	char msg[DPV_FLOW_MSG_LEN];     /* the PMD's message for the failure, if any */
};

/* A port's steering (struct dpv_port.flow). */
struct dpv_flow_state {
	bool isolated;                  /* rte_flow_isolate(1) accepted */
	bool steering;                  /* the RoCEv2 rules are in place */
	unsigned int n_results;
	struct dpv_flow_result results[DPV_FLOW_MAX_RULES];
	unsigned int n_flows;
	struct rte_flow *flows[DPV_FLOW_MAX_RULES];
	char reason[256];               /* why RoCEv2 steering is in software */
};

/* ---- the rule builder (no device) ---- */
/* RoCEv2 to one GID (IPv4-mapped: an IPv4 rule). */
void dpv_flow_rule_roce(struct dpv_flow_rule *r, const uint8_t gid[16], uint16_t queue);
/* ARP for tpa, or every ARP frame if tpa is NULL. */
void dpv_flow_rule_arp(struct dpv_flow_rule *r, const struct in_addr *tpa, uint16_t queue);
/* ICMPv6 NS to gid's solicited-node group (ns) or NA to gid (!ns). */
void dpv_flow_rule_nd(struct dpv_flow_rule *r, bool ns, const uint8_t gid[16], uint16_t queue);
/* The rules of a port (its valid GIDs; the neighbour rules only if
 * isolated): at most max, in the order they are asked for. Returns the
 * number built. */
unsigned int dpv_flow_build(const struct dpv_port *p, bool isolated, struct dpv_flow_rule *rules,
			    unsigned int max);
/* A raw packet QP's rule to queue: ETH [/ VLAN] [/ IPV4 | IPV6] [/ UDP | TCP]
 * with its values and masks, at its priority. 0, or -EOPNOTSUPP for what
 * the items cannot say (IPv4 flags, an IPv6 flow label with the traffic
 * class, default, sniffer and DONT_TRAP rules). */
int dpv_flow_rule_raw(struct dpv_flow_rule *r, const struct dpv_raw_rule *raw, uint16_t queue);
/* testpmd-like text of a rule: "eth / ipv4 dst 192.0.2.1 / udp dst 4791 -> queue 0". */
void dpv_flow_describe(const struct dpv_flow_rule *r, char *buf, size_t len);

/* ---- the PMD side ---- */
/* The rte_flow calls, replaceable by unit tests (NULL: DPDK's own). */
struct dpv_flow_ops {
	int (*isolate)(uint16_t port_id, int set, struct rte_flow_error *error);
	int (*validate)(uint16_t port_id, const struct rte_flow_attr *attr,
			const struct rte_flow_item pattern[], const struct rte_flow_action actions[],
			struct rte_flow_error *error);
	struct rte_flow *(*create)(uint16_t port_id, const struct rte_flow_attr *attr,
				   const struct rte_flow_item pattern[],
				   const struct rte_flow_action actions[], struct rte_flow_error *error);
	int (*destroy)(uint16_t port_id, struct rte_flow *flow, struct rte_flow_error *error);
};
void dpv_flow_set_ops(const struct dpv_flow_ops *ops);

/* Before rte_eth_dev_configure: rte_flow_isolate for "isolate". 0, or a
 * negative errno and the reason in msg. */
int dpv_flow_port_isolate(struct dpv_port *p, char *msg, size_t len);
/* After rte_eth_dev_start: the rules the port's flow mode asks for. "auto"
 * falls back to software dispatch (NOTICE log, 0); "isolate" fails (a
 * negative errno, the reason in msg) when a RoCEv2 rule is refused. */
int dpv_flow_port_setup(struct dpv_port *p, char *msg, size_t len);
/* A raw packet QP's rule on an isolated port (which receives only what its
 * rules ask for): ask the PMD to bring its frames to queue 0 (*flow: the
 * rte_flow, NULL when nothing was asked: a port that is not isolated sees
 * every frame anyway; DROP rules). 0, or -EOPNOTSUPP: the PMD refused (the
 * reason logged) or rte_flow cannot say it; an af_xdp port (its XDP program
 * hands dpverbs RoCEv2 only). */
int dpv_flow_raw_add(struct dpv_port *p, const struct dpv_raw_rule *raw, struct rte_flow **flow);
void dpv_flow_raw_del(struct dpv_port *p, struct rte_flow *flow);
/* Destroy the port's rules (before it is stopped). */
void dpv_flow_port_teardown(struct dpv_port *p);

const char *dpv_flow_mode_name(enum dpv_flow_mode m);
/* "rte_flow" when the PMD steers RoCEv2 to queue 0, else "software". */
const char *dpv_flow_steering_name(const struct dpv_port *p);

#endif /* DPV_FLOW_H */
