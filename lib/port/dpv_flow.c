/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * RoCEv2 steering with rte_flow (dpv_flow.h): the rule builder, and the
 * port's flow mode applied at bring-up.
 *
 * "off": no rte_flow call; every context takes what its RX queue gives and
 * the transport finds the destination QP (software dispatch).
 * "auto": each rule is validated and created in turn; the first one the PMD
 * refuses makes the port fall back to software dispatch (the rules made so
 * far are destroyed, the others are still validated so that telemetry shows
 * what the PMD answers to each) with a NOTICE naming the PMD and its reason.
 * "isolate": rte_flow_isolate before the port is configured (its refusal is
 * an error), then the same rules plus ARP and ICMPv6 NS/NA for the port's
 * addresses; a refused RoCEv2 rule is an error (nothing would arrive), a
 * refused neighbour rule a WARNING (ARP falls back to every ARP frame).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

#include <rte_byteorder.h>
#include <rte_errno.h>
#include <rte_flow.h>

#include "dpv_flow.h"
#include "dpv_port.h"

#define ETHER_TYPE_ARP 0x0806
#define ICMP6_NS 135
#define ICMP6_NA 136

static const struct dpv_flow_ops rte_ops = {
	.isolate = rte_flow_isolate,
	.validate = rte_flow_validate,
	.create = rte_flow_create,
	.destroy = rte_flow_destroy,
};
static const struct dpv_flow_ops *g_ops = &rte_ops;

void dpv_flow_set_ops(const struct dpv_flow_ops *ops)
{
	g_ops = ops ? ops : &rte_ops;
}

/* ------------------------------------------------------------------ */
/* the rule builder                                                    */

static void rule_init(struct dpv_flow_rule *r, enum dpv_flow_kind kind, uint16_t queue)
{
	memset(r, 0, sizeof(*r));
	r->kind = kind;
	r->attr.ingress = 1;
	r->act_queue.index = queue;
	r->actions[0].type = RTE_FLOW_ACTION_TYPE_QUEUE;
	r->actions[0].conf = &r->act_queue;
	r->actions[1].type = RTE_FLOW_ACTION_TYPE_END;
}

static void item(struct dpv_flow_rule *r, unsigned int i, enum rte_flow_item_type t,
		 const void *spec, const void *mask)
{
	r->pattern[i].type = t;
	r->pattern[i].spec = spec;
	r->pattern[i].mask = mask;
	r->pattern[i + 1].type = RTE_FLOW_ITEM_TYPE_END;
}

/* ETH (any) / IPv4 or IPv6 with destination addr: the next item's index. */
static unsigned int ip_items(struct dpv_flow_rule *r, uint8_t ip_ver, const uint8_t *addr)
{
	item(r, 0, RTE_FLOW_ITEM_TYPE_ETH, NULL, NULL);
	r->ip_ver = ip_ver;
	if (ip_ver == 4) {
		memcpy(r->addr, addr, 4);
		memcpy(&r->ip4_spec.hdr.dst_addr, addr, 4);
		r->ip4_mask.hdr.dst_addr = RTE_BE32(0xffffffff);
		item(r, 1, RTE_FLOW_ITEM_TYPE_IPV4, &r->ip4_spec, &r->ip4_mask);
	} else {
		memcpy(r->addr, addr, 16);
		memcpy(r->ip6_spec.hdr.dst_addr, addr, 16);
		memset(r->ip6_mask.hdr.dst_addr, 0xff, 16);
		item(r, 1, RTE_FLOW_ITEM_TYPE_IPV6, &r->ip6_spec, &r->ip6_mask);
	}
	return 2;
}

void dpv_flow_rule_roce(struct dpv_flow_rule *r, const uint8_t gid[16], uint16_t queue)
{
	rule_init(r, DPV_FLOW_ROCE, queue);
	unsigned int i = dpv_gid_is_v4mapped(gid) ? ip_items(r, 4, gid + 12) : ip_items(r, 6, gid);
	r->udp_spec.hdr.dst_port = RTE_BE16(DPV_ROCEV2_UDP_PORT);
	r->udp_mask.hdr.dst_port = RTE_BE16(0xffff);
	item(r, i, RTE_FLOW_ITEM_TYPE_UDP, &r->udp_spec, &r->udp_mask);
}

void dpv_flow_rule_arp(struct dpv_flow_rule *r, const struct in_addr *tpa, uint16_t queue)
{
	rule_init(r, tpa ? DPV_FLOW_ARP : DPV_FLOW_ARP_ANY, queue);
	r->eth_spec.type = RTE_BE16(ETHER_TYPE_ARP);
	r->eth_mask.type = RTE_BE16(0xffff);
	item(r, 0, RTE_FLOW_ITEM_TYPE_ETH, &r->eth_spec, &r->eth_mask);
	if (!tpa)
		return;
	memcpy(r->addr, tpa, 4);
	r->arp_spec.tpa = tpa->s_addr;
	r->arp_mask.tpa = RTE_BE32(0xffffffff);
	item(r, 1, RTE_FLOW_ITEM_TYPE_ARP_ETH_IPV4, &r->arp_spec, &r->arp_mask);
}

void dpv_flow_rule_nd(struct dpv_flow_rule *r, bool ns, const uint8_t gid[16], uint16_t queue)
{
	/* an NS is sent to the target's solicited-node group ff02::1:ffXX:XXXX
	 * (RFC 4291 2.7.1), the NA that answers ours to our address */
	uint8_t dst[16] = {0xff, 0x02, [11] = 0x01, [12] = 0xff};
	if (ns)
		memcpy(&dst[13], &gid[13], 3);
	else
		memcpy(dst, gid, 16);
	rule_init(r, ns ? DPV_FLOW_ND_NS : DPV_FLOW_ND_NA, queue);
	unsigned int i = ip_items(r, 6, dst);
	r->icmp6_spec.type = ns ? ICMP6_NS : ICMP6_NA;
	r->icmp6_mask.type = 0xff;
	item(r, i, RTE_FLOW_ITEM_TYPE_ICMP6, &r->icmp6_spec, &r->icmp6_mask);
}

unsigned int dpv_flow_build(const struct dpv_port *p, bool isolated, struct dpv_flow_rule *rules,
			    unsigned int max)
{
	unsigned int n = 0;
	for (unsigned int i = 0; i < DPV_GID_TABLE_LEN && n < max; i++)
		if (p->gids[i].valid)
			dpv_flow_rule_roce(&rules[n++], p->gids[i].gid, DPV_FLOW_QUEUE);
	if (!isolated)
		return n;
	if (p->ipv4.s_addr && n + 2 <= max) {
		dpv_flow_rule_arp(&rules[n++], &p->ipv4, DPV_FLOW_QUEUE);
		dpv_flow_rule_arp(&rules[n++], NULL, DPV_FLOW_QUEUE); /* only if the first is refused */
	}
	for (unsigned int i = 0; i < DPV_GID_TABLE_LEN && n + 2 <= max; i++) {
		if (!p->gids[i].valid || p->gids[i].ip_ver != 6)
			continue;
		dpv_flow_rule_nd(&rules[n++], true, p->gids[i].gid, DPV_FLOW_QUEUE);
		dpv_flow_rule_nd(&rules[n++], false, p->gids[i].gid, DPV_FLOW_QUEUE);
	}
	return n;
}

static void addr_str(const struct dpv_flow_rule *r, char *buf, size_t len)
{
	if (!inet_ntop(r->ip_ver == 6 ? AF_INET6 : AF_INET, r->addr, buf, (socklen_t)len))
		snprintf(buf, len, "?");
}

void dpv_flow_describe(const struct dpv_flow_rule *r, char *buf, size_t len)
{
	char a[INET6_ADDRSTRLEN];
	unsigned int q = r->act_queue.index;
	addr_str(r, a, sizeof(a));
	switch (r->kind) {
	case DPV_FLOW_ROCE:
		snprintf(buf, len, "eth / ipv%u dst %s / udp dst %u -> queue %u", r->ip_ver, a,
			 DPV_ROCEV2_UDP_PORT, q);
		break;
	case DPV_FLOW_ARP:
		snprintf(buf, len, "eth type 0x%04x / arp_eth_ipv4 tpa %s -> queue %u", ETHER_TYPE_ARP,
			 a, q);
		break;
	case DPV_FLOW_ARP_ANY:
		snprintf(buf, len, "eth type 0x%04x -> queue %u", ETHER_TYPE_ARP, q);
		break;
	case DPV_FLOW_ND_NS:
	case DPV_FLOW_ND_NA:
		snprintf(buf, len, "eth / ipv6 dst %s / icmp6 type %u -> queue %u", a,
			 r->kind == DPV_FLOW_ND_NS ? ICMP6_NS : ICMP6_NA, q);
		break;
	case DPV_FLOW_RAW:
		snprintf(buf, len, "raw QP rule, priority %u: eth%s%s%s%s -> queue %u", r->attr.priority,
			 r->eth_spec.has_vlan ? " / vlan" : "", r->ip_ver == 4 ? " / ipv4" : r->ip_ver == 6 ? " / ipv6" : "",
			 r->udp_mask.hdr.src_port || r->udp_mask.hdr.dst_port ? " / udp" : "",
			 r->tcp_mask.hdr.src_port || r->tcp_mask.hdr.dst_port ? " / tcp" : "", q);
		break;
	default:
		snprintf(buf, len, "?");
	}
}

static void raw_ip4(struct dpv_flow_rule *r, const struct dpv_raw_key *v, const struct dpv_raw_key *m)
{
	memcpy(&r->ip4_spec.hdr.src_addr, v->sip, 4);
	memcpy(&r->ip4_mask.hdr.src_addr, m->sip, 4);
	memcpy(&r->ip4_spec.hdr.dst_addr, v->dip, 4);
	memcpy(&r->ip4_mask.hdr.dst_addr, m->dip, 4);
	r->ip4_spec.hdr.next_proto_id = v->proto, r->ip4_mask.hdr.next_proto_id = m->proto;
	r->ip4_spec.hdr.type_of_service = v->tos, r->ip4_mask.hdr.type_of_service = m->tos;
	r->ip4_spec.hdr.time_to_live = v->ttl, r->ip4_mask.hdr.time_to_live = m->ttl;
	r->ip_ver = 4;
	memcpy(r->addr, v->dip, 4);
}

static void raw_ip6(struct dpv_flow_rule *r, const struct dpv_raw_key *v, const struct dpv_raw_key *m)
{
	memcpy(r->ip6_spec.hdr.src_addr, v->sip, 16);
	memcpy(r->ip6_mask.hdr.src_addr, m->sip, 16);
	memcpy(r->ip6_spec.hdr.dst_addr, v->dip, 16);
	memcpy(r->ip6_mask.hdr.dst_addr, m->dip, 16);
	r->ip6_spec.hdr.proto = v->proto, r->ip6_mask.hdr.proto = m->proto;
	r->ip6_spec.hdr.hop_limits = v->ttl, r->ip6_mask.hdr.hop_limits = m->ttl;
	uint32_t vtc = (uint32_t)v->tos << 20 | rte_be_to_cpu_32(v->flow_label);
	uint32_t mtc = (uint32_t)m->tos << 20 | rte_be_to_cpu_32(m->flow_label);
	r->ip6_spec.hdr.vtc_flow = rte_cpu_to_be_32(vtc);
	r->ip6_mask.hdr.vtc_flow = rte_cpu_to_be_32(mtc);
	r->ip_ver = 6;
	memcpy(r->addr, v->dip, 16);
}

int dpv_flow_rule_raw(struct dpv_flow_rule *r, const struct dpv_raw_rule *raw, uint16_t queue)
{
	const struct dpv_raw_key *v = &raw->val.k, *m = &raw->mask.k;
	if (raw->type != DPV_RAW_NORMAL || (raw->flags & DPV_RAW_F_DONT_TRAP) || m->ipv4_flags)
		return -EOPNOTSUPP;
	rule_init(r, DPV_FLOW_RAW, queue);
	r->attr.priority = raw->priority;
	memcpy(r->eth_spec.dst.addr_bytes, v->dmac, 6);
	memcpy(r->eth_mask.dst.addr_bytes, m->dmac, 6);
	memcpy(r->eth_spec.src.addr_bytes, v->smac, 6);
	memcpy(r->eth_mask.src.addr_bytes, m->smac, 6);
	unsigned int i = 0;
	if (m->vlan) { /* the EtherType after the tag is the VLAN item's */
		r->eth_spec.has_vlan = r->eth_mask.has_vlan = 1;
		item(r, i++, RTE_FLOW_ITEM_TYPE_ETH, &r->eth_spec, &r->eth_mask);
		r->vlan_spec.tci = v->vlan_tci, r->vlan_mask.tci = m->vlan_tci;
		r->vlan_spec.inner_type = v->ethertype, r->vlan_mask.inner_type = m->ethertype;
		item(r, i++, RTE_FLOW_ITEM_TYPE_VLAN, &r->vlan_spec, &r->vlan_mask);
	} else {
		r->eth_spec.type = v->ethertype, r->eth_mask.type = m->ethertype;
		item(r, i++, RTE_FLOW_ITEM_TYPE_ETH, &r->eth_spec, &r->eth_mask);
	}
	if (m->ip_ver && v->ip_ver == 4) {
		raw_ip4(r, v, m);
		item(r, i++, RTE_FLOW_ITEM_TYPE_IPV4, &r->ip4_spec, &r->ip4_mask);
	} else if (m->ip_ver && v->ip_ver == 6) {
		raw_ip6(r, v, m);
		item(r, i++, RTE_FLOW_ITEM_TYPE_IPV6, &r->ip6_spec, &r->ip6_mask);
	} else if (m->proto || m->tos || m->ttl || m->flow_label) {
		return -EOPNOTSUPP; /* IP fields without the IP version */
	}
	if (m->l4 && v->proto == 17) {
		r->udp_spec.hdr.src_port = v->sport, r->udp_mask.hdr.src_port = m->sport;
		r->udp_spec.hdr.dst_port = v->dport, r->udp_mask.hdr.dst_port = m->dport;
		item(r, i, RTE_FLOW_ITEM_TYPE_UDP, &r->udp_spec, &r->udp_mask);
	} else if (m->l4 && v->proto == 6) {
		r->tcp_spec.hdr.src_port = v->sport, r->tcp_mask.hdr.src_port = m->sport;
		r->tcp_spec.hdr.dst_port = v->dport, r->tcp_mask.hdr.dst_port = m->dport;
		item(r, i, RTE_FLOW_ITEM_TYPE_TCP, &r->tcp_spec, &r->tcp_mask);
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* the PMD side                                                        */

const char *dpv_flow_mode_name(enum dpv_flow_mode m)
{
	return m == DPV_FLOW_OFF ? "off" : m == DPV_FLOW_ISOLATE ? "isolate" : "auto";
}

const char *dpv_flow_steering_name(const struct dpv_port *p)
{
	if (p->conf->type == DPV_DEV_AF_XDP)
		return "xdp";
	return p->flow.steering ? "rte_flow" : "software";
}

/* "<PMD message>: <strerror>" of a failed call (err < 0). */
static void err_text(const struct rte_flow_error *e, int err, char *buf, size_t len)
{
	const char *m = e->message && *e->message ? e->message : "no message";
	if (!strcmp(m, rte_strerror(-err)))
		snprintf(buf, len, "%s", m);
	else
		snprintf(buf, len, "%s: %s", m, rte_strerror(-err));
}

int dpv_flow_port_isolate(struct dpv_port *p, char *msg, size_t len)
{
	struct rte_flow_error e;
	char t[DPV_FLOW_MSG_LEN];
	p->flow.isolated = false;
	if (p->conf->flow != DPV_FLOW_ISOLATE)
		return 0;
	memset(&e, 0, sizeof(e));
	int r = g_ops->isolate(p->eth_port, 1, &e);
	if (r) {
		r = r < 0 ? r : -EIO;
		err_text(&e, r, t, sizeof(t));
		snprintf(msg, len, "port %s: flow \"isolate\": PMD %s refused rte_flow_isolate: %s "
			 "(\"auto\" or \"off\" do without isolation)", p->name, p->pmd_name, t);
		return -ENOTSUP;
	}
	p->flow.isolated = true;
	return 0;
}

/* Validate rule r and, if create, make it. Records the answers in res;
 * returns 0 or the negative errno of the first refusal. */
static int try_rule(struct dpv_port *p, struct dpv_flow_rule *r, struct dpv_flow_result *res,
		    bool create)
{
	struct rte_flow_error e;
	memset(&e, 0, sizeof(e));
	dpv_flow_describe(r, res->desc, sizeof(res->desc));
	res->validate = res->create = DPV_FLOW_NOT_ASKED;
	res->msg[0] = 0;
	int v = g_ops->validate(p->eth_port, &r->attr, r->pattern, r->actions, &e);
	res->validate = v > 0 ? -EIO : v;
	if (v) {
		err_text(&e, res->validate, res->msg, sizeof(res->msg));
		DPV_PORT_LOG(DEBUG, "port %s: rte_flow_validate \"%s\": %s", p->name, res->desc, res->msg);
		return res->validate;
	}
	DPV_PORT_LOG(DEBUG, "port %s: rte_flow_validate \"%s\": ok", p->name, res->desc);
	if (!create)
		return 0;
	memset(&e, 0, sizeof(e));
	rte_errno = 0;
	struct rte_flow *f = g_ops->create(p->eth_port, &r->attr, r->pattern, r->actions, &e);
	if (!f) {
		res->create = rte_errno > 0 ? -rte_errno : -EIO; /* rte_flow_create sets it */
		err_text(&e, res->create, res->msg, sizeof(res->msg));
		DPV_PORT_LOG(DEBUG, "port %s: rte_flow_create \"%s\": %s", p->name, res->desc, res->msg);
		return res->create;
	}
	res->create = 0;
	p->flow.flows[p->flow.n_flows++] = f;
	return 0;
}

int dpv_flow_raw_add(struct dpv_port *p, const struct dpv_raw_rule *raw, struct rte_flow **flow)
{
	*flow = NULL;
	if (p->conf && p->conf->type == DPV_DEV_AF_XDP)
		return -EOPNOTSUPP; /* dpverbs' XDP program leaves every frame but RoCEv2 to the kernel */
	if (!p->flow.isolated || (raw->flags & DPV_RAW_F_DROP))
		return 0; /* the port sees every frame; a DROP rule brings none */
	struct dpv_flow_rule *r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	int e = dpv_flow_rule_raw(r, raw, DPV_FLOW_QUEUE);
	if (e) {
		free(r);
		return e;
	}
	struct rte_flow_error err;
	memset(&err, 0, sizeof(err));
	char desc[DPV_FLOW_DESC_LEN], msg[DPV_FLOW_MSG_LEN];
	dpv_flow_describe(r, desc, sizeof(desc));
	rte_errno = 0;
	*flow = g_ops->create(p->eth_port, &r->attr, r->pattern, r->actions, &err);
	if (!*flow) {
		err_text(&err, rte_errno > 0 ? -rte_errno : -EIO, msg, sizeof(msg));
		DPV_PORT_LOG(NOTICE, "port %s: PMD %s refused \"%s\": %s", p->name, p->pmd_name, desc, msg);
	}
	free(r);
	return *flow ? 0 : -EOPNOTSUPP;
}

void dpv_flow_raw_del(struct dpv_port *p, struct rte_flow *flow)
{
	struct rte_flow_error e;
	memset(&e, 0, sizeof(e));
	if (flow)
		g_ops->destroy(p->eth_port, flow, &e);
}

void dpv_flow_port_teardown(struct dpv_port *p)
{
	struct rte_flow_error e;
	while (p->flow.n_flows > 0) {
		memset(&e, 0, sizeof(e));
		g_ops->destroy(p->eth_port, p->flow.flows[--p->flow.n_flows], &e);
	}
	p->flow.steering = false;
}

/* The reason a RoCEv2 rule was refused, for the log and telemetry. */
static void refusal(struct dpv_port *p, const struct dpv_flow_result *res, char *out, size_t len)
{
	snprintf(out, len, "PMD %s refused \"%s\" (%s: %s)", p->pmd_name, res->desc,
		 res->create != DPV_FLOW_NOT_ASKED ? "rte_flow_create" : "rte_flow_validate", res->msg);
}

/* A neighbour rule (isolated ports): a refusal costs the neighbours it
 * would have brought; ARP for the port's address falls back to every ARP
 * frame (the rule after it), which the kernel then no longer sees. */
static void neigh_rule(struct dpv_port *p, struct dpv_flow_rule *rules, unsigned int *i,
		       unsigned int n)
{
	struct dpv_flow_rule *r = &rules[*i];
	struct dpv_flow_result *res = &p->flow.results[p->flow.n_results++];
	bool any_next = r->kind == DPV_FLOW_ARP && *i + 1 < n && rules[*i + 1].kind == DPV_FLOW_ARP_ANY;
	if (try_rule(p, r, res, true) == 0) {
		if (any_next)
			(*i)++; /* the fallback is not needed */
		else if (r->kind == DPV_FLOW_ARP_ANY)
			DPV_PORT_LOG(WARNING, "port %s: isolated: every ARP frame goes to dpverbs "
				     "(\"%s\"): the kernel no longer sees ARP on this interface",
				     p->name, res->desc);
		return;
	}
	if (any_next) {
		DPV_PORT_LOG(NOTICE, "port %s: PMD %s refused \"%s\" (%s): asking for every ARP frame",
			     p->name, p->pmd_name, res->desc, res->msg);
		return;
	}
	DPV_PORT_LOG(WARNING, "port %s: isolated, but PMD %s refused \"%s\" (%s): %s", p->name,
		     p->pmd_name, res->desc, res->msg,
		     r->kind == DPV_FLOW_ARP_ANY ? "no ARP reaches dpverbs, IPv4 neighbours are not resolved"
						 : "IPv6 neighbour discovery of this address fails");
}

int dpv_flow_port_setup(struct dpv_port *p, char *msg, size_t len)
{
	static struct dpv_flow_rule rules[DPV_FLOW_MAX_RULES]; /* under the runtime's pthread_once */
	struct dpv_flow_state *fs = &p->flow;
	enum dpv_flow_mode mode = p->conf->flow;
	int first_err = 0;

	fs->steering = false;
	fs->n_results = fs->n_flows = 0;
	fs->reason[0] = 0;
	if (mode == DPV_FLOW_OFF) {
		snprintf(fs->reason, sizeof(fs->reason), "flow \"off\" in the configuration");
		return 0;
	}
	if (p->conf->type == DPV_DEV_AF_XDP) {
		/* dpverbs' XDP program takes RoCEv2 for the port's addresses */
		snprintf(fs->reason, sizeof(fs->reason), "af_xdp: steered by dpverbs' XDP program");
		return 0;
	}
	unsigned int n = dpv_flow_build(p, fs->isolated, rules, DPV_FLOW_MAX_RULES);
	for (unsigned int i = 0; i < n; i++) {
		if (rules[i].kind != DPV_FLOW_ROCE) {
			if (first_err)
				break; /* the builder puts the RoCEv2 rules first */
			neigh_rule(p, rules, &i, n);
			continue;
		}
		struct dpv_flow_result *res = &fs->results[fs->n_results++];
		int r = try_rule(p, &rules[i], res, first_err == 0);
		if (r && !first_err) {
			first_err = r;
			refusal(p, res, fs->reason, sizeof(fs->reason));
		}
	}
	if (!first_err) {
		fs->steering = true;
		DPV_PORT_LOG(INFO, "port %s: PMD %s steers RoCEv2 to queue %u (%u rules%s)", p->name,
			     p->pmd_name, DPV_FLOW_QUEUE, fs->n_flows, fs->isolated ? ", isolated" : "");
		return 0;
	}
	dpv_flow_port_teardown(p);
	if (mode == DPV_FLOW_ISOLATE) {
		snprintf(msg, len, "port %s: flow \"isolate\": %s: an isolated port would receive no "
			 "RoCEv2 (use \"auto\" or \"off\")", p->name, fs->reason);
		return -ENOTSUP; /* the PMD's own errno is in the message */
	}
	DPV_PORT_LOG(NOTICE, "port %s: flow \"auto\": %s: RoCEv2 steering falls back to software "
		     "dispatch", p->name, fs->reason);
	return 0;
}
