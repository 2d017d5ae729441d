/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit test of lib/port/dpv_flow.c without a device: the rte_flow patterns
 * and actions the rule builder makes (IPv4, IPv6, ARP, ICMPv6 NS/NA), the
 * rule set of a port for 1 to 8 queues, isolated or not, and the decisions
 * of the flow modes against a fake PMD (dpv_flow_set_ops) that refuses
 * what it is told to: "auto" falls back to software dispatch and leaves no
 * rule behind, "isolate" fails when isolation or a RoCEv2 rule is refused,
 * ARP falls back to every ARP frame, "off" asks the PMD nothing.
 */
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

#include <rte_byteorder.h>
#include <rte_errno.h>
#include <rte_flow.h>

#include "dpv_port.h"
#include "dpvt_check.h"

/* ------------------------------------------------------------------ */
/* the fake PMD                                                        */

static struct {
	unsigned int queues;                 /* queue indices the PMD has */
	enum rte_flow_item_type refuse_item; /* validate refuses patterns with it */
	unsigned int create_fail_at;         /* the nth create (1-based) fails, 0: none */
	bool refuse_isolate;
	unsigned int validates, creates, destroys, isolates, live;
	bool bad_rule;                       /* a rule the fake found malformed */
} pmd;

static struct rte_flow *const FLOW = (struct rte_flow *)&pmd;

static int fake_isolate(uint16_t port, int set, struct rte_flow_error *e)
{
	(void)port;
	pmd.isolates++;
	if (pmd.refuse_isolate || set != 1)
		return rte_flow_error_set(e, ENOSYS, RTE_FLOW_ERROR_TYPE_UNSPECIFIED, NULL,
					  "isolated mode not supported");
	return 0;
}

/* What every PMD expects: ingress, an END-terminated pattern whose items
 * have both spec and mask or neither, QUEUE in range then END. */
static int fake_validate(uint16_t port, const struct rte_flow_attr *attr,
			 const struct rte_flow_item pattern[], const struct rte_flow_action actions[],
			 struct rte_flow_error *e)
{
	unsigned int i;
	(void)port;
	pmd.validates++;
	if (!attr->ingress || attr->egress || attr->transfer || attr->group || attr->priority)
		pmd.bad_rule = true;
	for (i = 0; i < DPV_FLOW_MAX_ITEMS && pattern[i].type != RTE_FLOW_ITEM_TYPE_END; i++) {
		if (!pattern[i].spec != !pattern[i].mask || pattern[i].last)
			pmd.bad_rule = true;
		if (pattern[i].type == pmd.refuse_item)
			return rte_flow_error_set(e, ENOTSUP, RTE_FLOW_ERROR_TYPE_ITEM, &pattern[i],
						  "item not supported");
	}
	if (i == DPV_FLOW_MAX_ITEMS || actions[0].type != RTE_FLOW_ACTION_TYPE_QUEUE ||
	    actions[1].type != RTE_FLOW_ACTION_TYPE_END)
		pmd.bad_rule = true;
	const struct rte_flow_action_queue *q = actions[0].conf;
	if (!q || q->index >= pmd.queues)
		return rte_flow_error_set(e, ERANGE, RTE_FLOW_ERROR_TYPE_ACTION, &actions[0],
					  "queue index out of range");
	return 0;
}

static struct rte_flow *fake_create(uint16_t port, const struct rte_flow_attr *attr,
				    const struct rte_flow_item pattern[],
				    const struct rte_flow_action actions[], struct rte_flow_error *e)
{
	if (fake_validate(port, attr, pattern, actions, e))
		return NULL;
	pmd.validates--;
	if (++pmd.creates == pmd.create_fail_at) {
		rte_flow_error_set(e, EEXIST, RTE_FLOW_ERROR_TYPE_HANDLE, NULL,
				   "overlapping rules or Kernel too old for flower support");
		return NULL;
	}
	pmd.live++;
	return FLOW;
}

static int fake_destroy(uint16_t port, struct rte_flow *f, struct rte_flow_error *e)
{
	(void)port;
	(void)e;
	pmd.destroys++;
	CHECK(f == FLOW, "destroy of a flow never made");
	pmd.live--;
	return 0;
}

static const struct dpv_flow_ops fake_ops = {
	.isolate = fake_isolate, .validate = fake_validate,
	.create = fake_create, .destroy = fake_destroy,
};

static void pmd_reset(unsigned int queues)
{
	memset(&pmd, 0, sizeof(pmd));
	pmd.queues = queues;
	pmd.refuse_item = RTE_FLOW_ITEM_TYPE_VOID;
}

/* ------------------------------------------------------------------ */
/* a port without a device                                             */

static struct dpv_port port;
static struct dpv_conf_port port_conf;

static const uint8_t GID_LL[16] = {0xfe, 0x80, [8] = 0x00, 0x64, 0x70, 0xff, 0xfe, 0x76, 0x0f, 0x01};
static const uint8_t GID_V4[16] = {[10] = 0xff, 0xff, 198, 51, 100, 1};
static const uint8_t GID_V6[16] = {0xfd, 0x00, 0x64, 0x70, 0x76, 0x00, [15] = 0x01};

static void port_init(enum dpv_flow_mode mode, uint16_t queues, bool ipv4)
{
	memset(&port, 0, sizeof(port));
	memset(&port_conf, 0, sizeof(port_conf));
	port_conf.flow = mode;
	port_conf.n_queues = queues;
	port.conf = &port_conf;
	port.n_qctx = queues;
	snprintf(port.name, sizeof(port.name), "dpv0");
	snprintf(port.pmd_name, sizeof(port.pmd_name), "net_fake");
	memcpy(port.gids[0].gid, GID_LL, 16);
	port.gids[0].valid = true;
	port.gids[0].ip_ver = 6;
	if (ipv4) {
		memcpy(port.gids[1].gid, GID_V4, 16);
		port.gids[1].valid = true;
		port.gids[1].ip_ver = 4;
		inet_pton(AF_INET, "198.51.100.1", &port.ipv4);
	}
	memcpy(port.gids[2].gid, GID_V6, 16);
	port.gids[2].valid = true;
	port.gids[2].ip_ver = 6;
	pmd_reset(queues);
}

/* ------------------------------------------------------------------ */
/* the builder                                                         */

static void check_common(const struct dpv_flow_rule *r, uint16_t queue, const char *what)
{
	CHECK(r->attr.ingress && !r->attr.egress && !r->attr.transfer && r->attr.group == 0 &&
	      r->attr.priority == 0, "%s: attr", what);
	CHECK(r->actions[0].type == RTE_FLOW_ACTION_TYPE_QUEUE && r->actions[0].conf == &r->act_queue &&
	      r->act_queue.index == queue, "%s: action queue", what);
	CHECK(r->actions[1].type == RTE_FLOW_ACTION_TYPE_END, "%s: actions end", what);
}

static void test_roce_rules(void)
{
	static struct dpv_flow_rule r;
	char d[DPV_FLOW_DESC_LEN];

	dpv_flow_rule_roce(&r, GID_V4, 3);
	check_common(&r, 3, "roce v4");
	CHECK(r.kind == DPV_FLOW_ROCE && r.ip_ver == 4, "roce v4 kind");
	CHECK(r.pattern[0].type == RTE_FLOW_ITEM_TYPE_ETH && !r.pattern[0].spec && !r.pattern[0].mask,
	      "roce v4: eth matches any");
	CHECK(r.pattern[1].type == RTE_FLOW_ITEM_TYPE_IPV4, "roce v4: ipv4 item");
	const struct rte_flow_item_ipv4 *i4 = r.pattern[1].spec, *m4 = r.pattern[1].mask;
	CHECK(i4 && m4 && !memcmp(&i4->hdr.dst_addr, GID_V4 + 12, 4) &&
	      m4->hdr.dst_addr == RTE_BE32(0xffffffff) && m4->hdr.src_addr == 0 &&
	      m4->hdr.next_proto_id == 0, "roce v4: destination address only");
	const struct rte_flow_item_udp *u = r.pattern[2].spec, *um = r.pattern[2].mask;
	CHECK(r.pattern[2].type == RTE_FLOW_ITEM_TYPE_UDP && u && um &&
	      u->hdr.dst_port == rte_cpu_to_be_16(4791) && um->hdr.dst_port == 0xffff &&
	      um->hdr.src_port == 0, "roce v4: udp dst 4791, any source port");
	CHECK(r.pattern[3].type == RTE_FLOW_ITEM_TYPE_END, "roce v4: end");
	dpv_flow_describe(&r, d, sizeof(d));
	CHECK(!strcmp(d, "eth / ipv4 dst 198.51.100.1 / udp dst 4791 -> queue 3"), "desc %s", d);

	dpv_flow_rule_roce(&r, GID_V6, 0);
	check_common(&r, 0, "roce v6");
	const struct rte_flow_item_ipv6 *i6 = r.pattern[1].spec, *m6 = r.pattern[1].mask;
	static const uint8_t ones[16] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
					 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
	CHECK(r.pattern[1].type == RTE_FLOW_ITEM_TYPE_IPV6 && i6 && m6 &&
	      !memcmp(i6->hdr.dst_addr, GID_V6, 16) && !memcmp(m6->hdr.dst_addr, ones, 16) &&
	      m6->hdr.proto == 0 && m6->hdr.src_addr[0] == 0, "roce v6: ipv6 destination");
	CHECK(r.pattern[2].type == RTE_FLOW_ITEM_TYPE_UDP && r.pattern[3].type == RTE_FLOW_ITEM_TYPE_END,
	      "roce v6: udp, end");
	dpv_flow_describe(&r, d, sizeof(d));
	CHECK(!strcmp(d, "eth / ipv6 dst fd00:6470:7600::1 / udp dst 4791 -> queue 0"), "desc %s", d);
}

static void test_neigh_rules(void)
{
	static struct dpv_flow_rule r;
	struct in_addr a;
	char d[DPV_FLOW_DESC_LEN];

	inet_pton(AF_INET, "198.51.100.1", &a);
	dpv_flow_rule_arp(&r, &a, 0);
	check_common(&r, 0, "arp");
	const struct rte_flow_item_eth *e = r.pattern[0].spec, *em = r.pattern[0].mask;
	CHECK(r.pattern[0].type == RTE_FLOW_ITEM_TYPE_ETH && e && em &&
	      e->type == rte_cpu_to_be_16(0x0806) && em->type == 0xffff, "arp: ethertype");
	const struct rte_flow_item_arp_eth_ipv4 *ap = r.pattern[1].spec, *am = r.pattern[1].mask;
	CHECK(r.pattern[1].type == RTE_FLOW_ITEM_TYPE_ARP_ETH_IPV4 && ap && am &&
	      ap->tpa == a.s_addr && am->tpa == RTE_BE32(0xffffffff) && am->spa == 0 && am->op == 0,
	      "arp: target address only");
	CHECK(r.pattern[2].type == RTE_FLOW_ITEM_TYPE_END, "arp: end");
	dpv_flow_describe(&r, d, sizeof(d));
	CHECK(!strcmp(d, "eth type 0x0806 / arp_eth_ipv4 tpa 198.51.100.1 -> queue 0"), "desc %s", d);

	dpv_flow_rule_arp(&r, NULL, 0);
	CHECK(r.kind == DPV_FLOW_ARP_ANY && r.pattern[0].type == RTE_FLOW_ITEM_TYPE_ETH &&
	      r.pattern[1].type == RTE_FLOW_ITEM_TYPE_END, "arp any: ethertype only");
	dpv_flow_describe(&r, d, sizeof(d));
	CHECK(!strcmp(d, "eth type 0x0806 -> queue 0"), "desc %s", d);

	dpv_flow_rule_nd(&r, true, GID_LL, 0);
	check_common(&r, 0, "ns");
	const struct rte_flow_item_ipv6 *i6 = r.pattern[1].spec;
	static const uint8_t snm[16] = {0xff, 0x02, [11] = 0x01, 0xff, 0x76, 0x0f, 0x01};
	CHECK(r.pattern[1].type == RTE_FLOW_ITEM_TYPE_IPV6 && !memcmp(i6->hdr.dst_addr, snm, 16),
	      "ns: to the solicited-node group");
	const struct rte_flow_item_icmp6 *ic = r.pattern[2].spec, *im = r.pattern[2].mask;
	CHECK(r.pattern[2].type == RTE_FLOW_ITEM_TYPE_ICMP6 && ic->type == 135 && im->type == 0xff &&
	      im->code == 0, "ns: icmp6 type 135");
	dpv_flow_describe(&r, d, sizeof(d));
	CHECK(!strcmp(d, "eth / ipv6 dst ff02::1:ff76:f01 / icmp6 type 135 -> queue 0"), "desc %s", d);

	dpv_flow_rule_nd(&r, false, GID_V6, 0);
	i6 = r.pattern[1].spec;
	ic = r.pattern[2].spec;
	CHECK(!memcmp(i6->hdr.dst_addr, GID_V6, 16) && ic->type == 136, "na: to the address, type 136");
	CHECK(r.pattern[3].type == RTE_FLOW_ITEM_TYPE_END, "na: end");
}

/* The rule set does not depend on the number of queues: no rule can match
 * the BTH destination QP with DPDK 22.11, everything goes to queue 0. */
static void test_build(void)
{
	static struct dpv_flow_rule rules[DPV_FLOW_MAX_RULES], ref[DPV_FLOW_MAX_RULES];
	static const enum dpv_flow_kind want[] = {
		DPV_FLOW_ROCE, DPV_FLOW_ROCE, DPV_FLOW_ROCE, DPV_FLOW_ARP, DPV_FLOW_ARP_ANY,
		DPV_FLOW_ND_NS, DPV_FLOW_ND_NA, DPV_FLOW_ND_NS, DPV_FLOW_ND_NA,
	};
	char a[DPV_FLOW_DESC_LEN], b[DPV_FLOW_DESC_LEN];
	unsigned int n, nref;

	port_init(DPV_FLOW_AUTO, 1, true);
	nref = dpv_flow_build(&port, true, ref, DPV_FLOW_MAX_RULES);
	CHECK_EQ(nref, 9, "isolated rules (3 GIDs, ARP + fallback, NS/NA for 2 IPv6 GIDs)");
	for (unsigned int i = 0; i < nref && i < 9; i++)
		CHECK(ref[i].kind == want[i], "rule %u kind %d", i, (int)ref[i].kind);
	CHECK_EQ(dpv_flow_build(&port, false, rules, DPV_FLOW_MAX_RULES), 3, "not isolated: RoCEv2 only");
	CHECK_EQ(dpv_flow_build(&port, true, rules, 6), 5, "bounded by max, pairs kept whole");
	for (uint16_t q = 1; q <= DPV_MAX_QUEUES; q++) {
		port_init(DPV_FLOW_AUTO, q, true);
		n = dpv_flow_build(&port, true, rules, DPV_FLOW_MAX_RULES);
		CHECK(n == nref, "%u queues: %u rules", q, n);
		for (unsigned int i = 0; i < n && i < nref; i++) {
			dpv_flow_describe(&rules[i], a, sizeof(a));
			dpv_flow_describe(&ref[i], b, sizeof(b));
			CHECK(!strcmp(a, b) && rules[i].act_queue.index == DPV_FLOW_QUEUE &&
			      rules[i].act_queue.index < q, "%u queues, rule %u: %s", q, i, a);
		}
	}
	port_init(DPV_FLOW_AUTO, 2, false);
	n = dpv_flow_build(&port, true, rules, DPV_FLOW_MAX_RULES);
	CHECK(n == 6 && rules[0].ip_ver == 6 && rules[1].ip_ver == 6 && rules[2].kind == DPV_FLOW_ND_NS,
	      "no IPv4 address: no IPv4 rule, no ARP (%u rules)", n);
}

/* ------------------------------------------------------------------ */
/* the flow modes against the fake PMD                                 */

static int setup(char *msg, size_t len)
{
	msg[0] = 0;
	int r = dpv_flow_port_isolate(&port, msg, len);
	return r ? r : dpv_flow_port_setup(&port, msg, len);
}

static void test_auto(void)
{
	char msg[512];

	port_init(DPV_FLOW_AUTO, 4, true);
	CHECK(setup(msg, sizeof(msg)) == 0, "auto: %s", msg);
	CHECK(port.flow.steering && !port.flow.isolated && port.flow.n_flows == 3 && pmd.live == 3 &&
	      pmd.isolates == 0, "auto, all accepted: steering by rte_flow, 3 rules");
	CHECK(!strcmp(dpv_flow_steering_name(&port), "rte_flow"), "steering name");
	CHECK(!pmd.bad_rule, "rules well formed");
	for (unsigned int i = 0; i < port.flow.n_results; i++)
		CHECK(port.flow.results[i].validate == 0 && port.flow.results[i].create == 0, "result %u", i);
	dpv_flow_port_teardown(&port);
	CHECK(pmd.live == 0 && !port.flow.steering && port.flow.n_flows == 0, "teardown");

	/* the PMD cannot match IPv6: software dispatch, nothing left behind,
	 * every rule still validated for the record */
	port_init(DPV_FLOW_AUTO, 2, true);
	pmd.refuse_item = RTE_FLOW_ITEM_TYPE_IPV6;
	CHECK(setup(msg, sizeof(msg)) == 0, "auto falls back: %s", msg);
	CHECK(!port.flow.steering && pmd.live == 0 && pmd.creates == 0 && port.flow.n_results == 3,
	      "auto, validate refused: software (live %u, creates %u)", pmd.live, pmd.creates);
	CHECK(!strcmp(dpv_flow_steering_name(&port), "software"), "steering name");
	CHECK(port.flow.results[0].validate == -ENOTSUP && port.flow.results[1].validate == 0 &&
	      port.flow.results[1].create == DPV_FLOW_NOT_ASKED, "results recorded");
	CHECK(strstr(port.flow.reason, "net_fake") && strstr(port.flow.reason, "rte_flow_validate") &&
	      strstr(port.flow.reason, "item not supported"), "reason: %s", port.flow.reason);

	/* validate passes, create is refused (net_tap without its qdisc) */
	port_init(DPV_FLOW_AUTO, 2, true);
	pmd.create_fail_at = 2;
	CHECK(setup(msg, sizeof(msg)) == 0, "auto, create refused: %s", msg);
	CHECK(!port.flow.steering && pmd.live == 0 && pmd.destroys == 1, "rolled back (destroys %u)",
	      pmd.destroys);
	CHECK(port.flow.results[1].create == -EEXIST && port.flow.results[2].validate == 0 &&
	      port.flow.results[2].create == DPV_FLOW_NOT_ASKED, "create answers recorded");
	CHECK(strstr(port.flow.reason, "rte_flow_create") != NULL, "reason: %s", port.flow.reason);
}

static void test_off_isolate(void)
{
	char msg[512];

	port_init(DPV_FLOW_OFF, 2, true);
	CHECK(setup(msg, sizeof(msg)) == 0 && !port.flow.steering, "off");
	CHECK(pmd.validates + pmd.creates + pmd.isolates == 0, "off asks the PMD nothing");

	port_init(DPV_FLOW_ISOLATE, 2, true);
	pmd.refuse_isolate = true;
	CHECK(setup(msg, sizeof(msg)) == -ENOTSUP, "isolate refused");
	CHECK(strstr(msg, "port dpv0") && strstr(msg, "\"isolate\"") && strstr(msg, "net_fake") &&
	      strstr(msg, "rte_flow_isolate"), "message: %s", msg);
	CHECK(pmd.validates == 0, "no rule asked for after a refused isolation");

	port_init(DPV_FLOW_ISOLATE, 2, true);
	CHECK(setup(msg, sizeof(msg)) == 0, "isolate: %s", msg);
	CHECK(port.flow.isolated && port.flow.steering && pmd.live == 8 && port.flow.n_results == 8,
	      "isolated: 3 RoCEv2 + ARP + 4 NS/NA, no ARP fallback (live %u)", pmd.live);
	dpv_flow_port_teardown(&port);

	port_init(DPV_FLOW_ISOLATE, 2, true);
	pmd.refuse_item = RTE_FLOW_ITEM_TYPE_ARP_ETH_IPV4;
	CHECK(setup(msg, sizeof(msg)) == 0, "isolate, no ARP item: %s", msg);
	CHECK(port.flow.steering && pmd.live == 8 && port.flow.n_results == 9 &&
	      port.flow.results[3].validate == -ENOTSUP && port.flow.results[4].create == 0,
	      "ARP falls back to every ARP frame");
	dpv_flow_port_teardown(&port);

	port_init(DPV_FLOW_ISOLATE, 2, true);
	pmd.refuse_item = RTE_FLOW_ITEM_TYPE_ICMP6;
	CHECK(setup(msg, sizeof(msg)) == 0 && port.flow.steering && pmd.live == 4,
	      "isolate, no ICMPv6 item: RoCEv2 and ARP only (live %u)", pmd.live);
	dpv_flow_port_teardown(&port);

	port_init(DPV_FLOW_ISOLATE, 2, true);
	pmd.create_fail_at = 3;
	CHECK(setup(msg, sizeof(msg)) == -ENOTSUP, "isolate, a RoCEv2 rule refused");
	CHECK(strstr(msg, "\"isolate\"") && strstr(msg, "rte_flow_create") &&
	      strstr(msg, "receive no RoCEv2"), "message: %s", msg);
	CHECK(pmd.live == 0 && port.flow.n_results == 3 && !port.flow.steering,
	      "nothing left, no neighbour rule tried (results %u)", port.flow.n_results);
}

/* ------------------------------------------------------------------ */
/* raw packet QPs' rules (dpv_raw_rule_add on an isolated port)        */

static void raw_rule(struct dpv_raw_rule *r, uint32_t qpn)
{
	static const uint8_t mac[6] = {0x01, 0x50, 0x56, 0x19, 0x20, 0xa7};
	memset(r, 0, sizeof(*r));
	memcpy(r->val.k.dmac, mac, 6);
	memset(r->mask.k.dmac, 0xff, 6);
	r->val.k.ip_ver = 4, r->mask.k.ip_ver = 0xff;
	inet_pton(AF_INET, "2.2.2.2", r->val.k.dip);
	memset(r->mask.k.dip, 0xff, 4);
	r->val.k.proto = 17, r->mask.k.proto = 0xff;
	r->val.k.l4 = 1, r->mask.k.l4 = 0xff;
	r->val.k.dport = htons(5678), r->mask.k.dport = 0xffff;
	r->qpn = qpn;
	r->hw = 0x1234; /* a caller's value is never used */
}

static void test_raw_rules(void)
{
	struct dpv_flow_rule fr;
	struct dpv_raw_rule r;
	struct dpv_raw_tab *old;
	raw_rule(&r, 0x20);
	CHECK_EQ(dpv_flow_rule_raw(&fr, &r, 0), 0, "builder: eth / ipv4 / udp");
	CHECK(fr.pattern[0].type == RTE_FLOW_ITEM_TYPE_ETH && fr.pattern[1].type == RTE_FLOW_ITEM_TYPE_IPV4 &&
		      fr.pattern[2].type == RTE_FLOW_ITEM_TYPE_UDP && fr.pattern[3].type == RTE_FLOW_ITEM_TYPE_END &&
		      fr.udp_spec.hdr.dst_port == htons(5678) && fr.ip4_mask.hdr.dst_addr == 0xffffffff &&
		      fr.eth_spec.dst.addr_bytes[0] == 0x01 && fr.act_queue.index == 0,
	      "builder: items, values and masks");
	r.mask.k.vlan = 0xff, r.val.k.vlan = 1, r.mask.k.vlan_tci = htons(0x0fff), r.val.k.vlan_tci = htons(5);
	CHECK(dpv_flow_rule_raw(&fr, &r, 0) == 0 && fr.pattern[1].type == RTE_FLOW_ITEM_TYPE_VLAN &&
		      fr.vlan_spec.tci == htons(5) && fr.pattern[2].type == RTE_FLOW_ITEM_TYPE_IPV4,
	      "builder: a tagged frame: eth / vlan / ipv4 / udp");
	r.mask.k.ipv4_flags = 7;
	CHECK_EQ(dpv_flow_rule_raw(&fr, &r, 0), -EOPNOTSUPP, "builder: IPv4 flags: EOPNOTSUPP");
	raw_rule(&r, 0x20);
	r.type = DPV_RAW_SNIFFER;
	CHECK_EQ(dpv_flow_rule_raw(&fr, &r, 0), -EOPNOTSUPP, "builder: a sniffer: EOPNOTSUPP");

	port_init(DPV_FLOW_ISOLATE, 1, true);
	port.flow.isolated = true;
	raw_rule(&r, 0x20);
	CHECK_EQ(dpv_raw_rule_add(&port, &r, &old), 0, "isolated: the rule added");
	CHECK(pmd.creates == 1 && pmd.live == 1 && !pmd.bad_rule && r.hw == (uintptr_t)FLOW && !old &&
		      port.raw && port.raw->n == 1 && port.raw->n_normal == 1,
	      "isolated: one PMD rule to queue 0, in the table (creates %u)", pmd.creates);
	raw_rule(&r, 0x21);
	r.flags = DPV_RAW_F_DROP;
	CHECK(dpv_raw_rule_add(&port, &r, &old) == 0 && pmd.creates == 1 && r.hw == 0,
	      "isolated: a DROP rule asks the PMD for nothing");
	free(old);
	raw_rule(&r, 0x22);
	r.type = DPV_RAW_ALL_DEFAULT;
	CHECK_EQ(dpv_raw_rule_add(&port, &r, &old), -EOPNOTSUPP, "isolated: ALL_DEFAULT: EOPNOTSUPP");
	raw_rule(&r, 0x22);
	pmd.refuse_item = RTE_FLOW_ITEM_TYPE_UDP;
	CHECK_EQ(dpv_raw_rule_add(&port, &r, &old), -EOPNOTSUPP, "isolated: a rule the PMD refuses: EOPNOTSUPP");
	CHECK(port.raw->n == 2, "the refused rules are not in the table");
	pmd.refuse_item = RTE_FLOW_ITEM_TYPE_VOID;
	CHECK_EQ(dpv_raw_rule_del(&port, 0, 0x20, &old), 0, "the QP's rules removed");
	CHECK(pmd.destroys == 1 && pmd.live == 0 && port.raw->n == 1, "its PMD rule destroyed");
	free(old);
	CHECK_EQ(dpv_raw_rule_del(&port, 0, 0x20, &old), -ENOENT, "removed twice: ENOENT");
	CHECK_EQ(dpv_raw_rule_del(&port, 0, 0x21, &old), 0, "the DROP rule removed");
	CHECK(port.raw == NULL && pmd.destroys == 1, "an empty table is none");
	free(old);

	port_init(DPV_FLOW_AUTO, 1, true);
	raw_rule(&r, 0x20);
	r.type = DPV_RAW_SNIFFER;
	memset(&r.mask, 0, sizeof(r.mask));
	memset(&r.val, 0, sizeof(r.val));
	CHECK(dpv_raw_rule_add(&port, &r, &old) == 0 && pmd.creates == 0 && r.hw == 0,
	      "not isolated: no PMD rule (the port sees every frame), sniffers too");
	CHECK_EQ(dpv_raw_rule_del(&port, r.handle, 0x20, &old), 0, "removed by handle");
	free(old);
	port_conf.type = DPV_DEV_AF_XDP;
	raw_rule(&r, 0x20);
	CHECK(dpv_raw_rule_add(&port, &r, &old) == -EOPNOTSUPP && !port.raw,
	      "an af_xdp port: EOPNOTSUPP (its XDP program passes RoCEv2 only)");
}

int main(void)
{
	dpv_flow_set_ops(&fake_ops);
	test_roce_rules();
	test_neigh_rules();
	test_build();
	test_auto();
	test_off_isolate();
	test_raw_rules();
	dpv_flow_set_ops(NULL);
	return dpvt_finish();
}
