/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Steering rules of raw packet QPs: ibv_create_flow compiles a struct
 * ibv_flow_attr and its specs into a value/mask rule over a frame's key
 * (lib/wire/dpv_rawkey.h) that the driver installs on the QP's port, and
 * ibv_destroy_flow removes it. The checks and their errno values follow
 * Linux's uverbs and mlx5: a malformed attribute is EINVAL, a spec the port
 * cannot honour (tunnels, inner headers, egress, counters, other actions)
 * EOPNOTSUPP; flows on a QP that is not a raw packet QP are EINVAL
 * (uverbs takes UD and RAW_PACKET QPs; dpverbs has no UD flows:
 * EOPNOTSUPP).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dpv_verbs.h"

#define MAX_SPECS 10 /* Linux IB_FLOW_SPEC_SUPPORT_LAYERS */

struct dpv_flow {
	struct ibv_flow ib;
	struct dpv_qp *qp;
};

/* val/mask of a field: the rule keeps val & mask */
static void put(void *val, void *mask, const void *v, const void *m, size_t n)
{
	uint8_t *dv = val, *dm = mask;
	const uint8_t *sv = v, *sm = m;
	for (size_t i = 0; i < n; i++) {
		dm[i] |= sm[i];
		dv[i] = (uint8_t)((dv[i] & ~sm[i]) | (sv[i] & sm[i]));
	}
}

static void put_u8(uint8_t *val, uint8_t *mask, uint8_t v, uint8_t m)
{
	put(val, mask, &v, &m, 1);
}

/* the field must be exactly want (implied by the spec's layer) */
static void need(uint8_t *vf, uint8_t *mf, uint8_t want)
{
	*mf = 0xff;
	*vf = want;
}

/* One match spec into the rule. 0, EINVAL, EOPNOTSUPP. */
static int spec_match(struct dpv_raw_rule *r, const struct ibv_flow_spec *s, unsigned int *seen)
{
	struct dpv_raw_key *v = &r->val.k, *m = &r->mask.k;
	unsigned int bit;
	switch (s->hdr.type) {
	case IBV_FLOW_SPEC_ETH: {
		const struct ibv_flow_spec_eth *e = &s->eth;
		if (e->size != sizeof(*e))
			return EINVAL;
		bit = 1;
		put(v->dmac, m->dmac, e->val.dst_mac, e->mask.dst_mac, 6);
		put(v->smac, m->smac, e->val.src_mac, e->mask.src_mac, 6);
		put(&v->ethertype, &m->ethertype, &e->val.ether_type, &e->mask.ether_type, 2);
		put(&v->vlan_tci, &m->vlan_tci, &e->val.vlan_tag, &e->mask.vlan_tag, 2);
		if (e->mask.vlan_tag)
			need(&v->vlan, &m->vlan, 1);
		break;
	}
	case IBV_FLOW_SPEC_IPV4: {
		const struct ibv_flow_spec_ipv4 *e = &s->ipv4;
		if (e->size != sizeof(*e))
			return EINVAL;
		bit = 2;
		need(&v->ip_ver, &m->ip_ver, 4);
		put(v->sip, m->sip, &e->val.src_ip, &e->mask.src_ip, 4);
		put(v->dip, m->dip, &e->val.dst_ip, &e->mask.dst_ip, 4);
		break;
	}
	case IBV_FLOW_SPEC_IPV4_EXT: {
		const struct ibv_flow_spec_ipv4_ext *e = &s->ipv4_ext;
		if (e->size != sizeof(*e))
			return EINVAL;
		bit = 2;
		need(&v->ip_ver, &m->ip_ver, 4);
		put(v->sip, m->sip, &e->val.src_ip, &e->mask.src_ip, 4);
		put(v->dip, m->dip, &e->val.dst_ip, &e->mask.dst_ip, 4);
		put_u8(&v->proto, &m->proto, e->val.proto, e->mask.proto);
		put_u8(&v->tos, &m->tos, e->val.tos, e->mask.tos);
		put_u8(&v->ttl, &m->ttl, e->val.ttl, e->mask.ttl);
		put_u8(&v->ipv4_flags, &m->ipv4_flags, e->val.flags, e->mask.flags);
		break;
	}
	case IBV_FLOW_SPEC_IPV6: {
		const struct ibv_flow_spec_ipv6 *e = &s->ipv6;
		if (e->size != sizeof(*e))
			return EINVAL;
		if (e->mask.flow_label & ~htobe32(0xfffff))
			return EINVAL; /* a flow label has 20 bits */
		bit = 2;
		need(&v->ip_ver, &m->ip_ver, 6);
		put(v->sip, m->sip, e->val.src_ip, e->mask.src_ip, 16);
		put(v->dip, m->dip, e->val.dst_ip, e->mask.dst_ip, 16);
		put(&v->flow_label, &m->flow_label, &e->val.flow_label, &e->mask.flow_label, 4);
		put_u8(&v->proto, &m->proto, e->val.next_hdr, e->mask.next_hdr);
		put_u8(&v->tos, &m->tos, e->val.traffic_class, e->mask.traffic_class);
		put_u8(&v->ttl, &m->ttl, e->val.hop_limit, e->mask.hop_limit);
		break;
	}
	case IBV_FLOW_SPEC_TCP:
	case IBV_FLOW_SPEC_UDP: {
		const struct ibv_flow_spec_tcp_udp *e = &s->tcp_udp;
		if (e->size != sizeof(*e))
			return EINVAL;
		bit = 4;
		need(&v->proto, &m->proto, s->hdr.type == IBV_FLOW_SPEC_TCP ? 6 : 17);
		need(&v->l4, &m->l4, 1);
		put(&v->sport, &m->sport, &e->val.src_port, &e->mask.src_port, 2);
		put(&v->dport, &m->dport, &e->val.dst_port, &e->mask.dst_port, 2);
		break;
	}
	default:
		return EINVAL;
	}
	if (*seen & bit)
		return EINVAL; /* two specs of one layer */
	*seen |= bit;
	return 0;
}

/* The specs that follow attr into r. 0, EINVAL, EOPNOTSUPP. */
static int compile(const struct ibv_flow_attr *attr, struct dpv_raw_rule *r)
{
	const uint8_t *p = (const uint8_t *)(attr + 1);
	unsigned int seen = 0, actions = 0;
	for (unsigned int i = 0; i < attr->num_of_specs; i++) {
		/* the specs follow each other at any alignment: each is read
		 * through an aligned copy */
		struct ibv_flow_spec sb;
		const struct ibv_flow_spec *s = &sb;
		memset(&sb, 0, sizeof(sb));
		memcpy(&sb.hdr, p, sizeof(sb.hdr));
		if (sb.hdr.size < sizeof(sb.hdr))
			return EINVAL;
		memcpy(&sb, p, RTE_MIN((size_t)sb.hdr.size, sizeof(sb)));
		p += sb.hdr.size;
		switch ((uint32_t)s->hdr.type) {
		case IBV_FLOW_SPEC_ACTION_DROP:
			if (s->hdr.size != sizeof(s->drop) || (actions & DPV_RAW_F_DROP))
				return EINVAL;
			actions |= DPV_RAW_F_DROP;
			continue;
		case IBV_FLOW_SPEC_ACTION_TAG:
			if (s->hdr.size != sizeof(s->flow_tag) || (actions & DPV_RAW_F_TAG))
				return EINVAL;
			if (s->flow_tag.tag_id >= (1u << 24))
				return EINVAL; /* mlx5: a 24-bit tag */
			actions |= DPV_RAW_F_TAG;
			r->tag = s->flow_tag.tag_id;
			continue;
		case IBV_FLOW_SPEC_ETH:
		case IBV_FLOW_SPEC_IPV4:
		case IBV_FLOW_SPEC_IPV4_EXT:
		case IBV_FLOW_SPEC_IPV6:
		case IBV_FLOW_SPEC_TCP:
		case IBV_FLOW_SPEC_UDP:
			if (attr->type != IBV_FLOW_ATTR_NORMAL)
				return EINVAL; /* the default and sniffer rules match everything */
			break;
		case IBV_FLOW_SPEC_ESP:
		case IBV_FLOW_SPEC_VXLAN_TUNNEL:
		case IBV_FLOW_SPEC_GRE:
		case IBV_FLOW_SPEC_MPLS:
		case IBV_FLOW_SPEC_ACTION_HANDLE:
		case IBV_FLOW_SPEC_ACTION_COUNT:
			return EOPNOTSUPP; /* no tunnels, flow actions or counters */
		default:
			if (s->hdr.type & IBV_FLOW_SPEC_INNER)
				return EOPNOTSUPP; /* inner headers of a tunnel */
			return EINVAL;
		}
		int e = spec_match(r, s, &seen);
		if (e)
			return e;
	}
	if ((actions & DPV_RAW_F_DROP) && (actions & DPV_RAW_F_TAG))
		return EINVAL;
	r->flags |= (uint8_t)actions;
	return 0;
}

/* The attribute's own fields. 0, EINVAL, EOPNOTSUPP. */
static int check_attr(struct dpv_qp *qp, const struct ibv_flow_attr *a)
{
	if (qp->type != IBV_QPT_RAW_PACKET)
		return qp->type == IBV_QPT_UD && !qp->gsi ? EOPNOTSUPP : EINVAL;
	if (!qp->drv || qp->opened || qp->foreign)
		return EINVAL;
	if (a->comp_mask || a->port != DPV_PORT_NUM || a->type > IBV_FLOW_ATTR_SNIFFER ||
	    a->num_of_specs > MAX_SPECS)
		return EINVAL;
	if (a->flags & ~(uint32_t)(IBV_FLOW_ATTR_FLAGS_DONT_TRAP | IBV_FLOW_ATTR_FLAGS_EGRESS))
		return EINVAL;
	if (a->flags & IBV_FLOW_ATTR_FLAGS_EGRESS)
		return EOPNOTSUPP; /* steering of what is sent */
	if ((a->flags & IBV_FLOW_ATTR_FLAGS_DONT_TRAP) && a->type != IBV_FLOW_ATTR_NORMAL)
		return EINVAL; /* as Linux uverbs */
	return 0;
}

/**
 * ibv_create_flow (verbs_context slot): a steering rule that sends the
 * frames matching attr's specs to raw packet QP ib. RETURN VALUE: the flow,
 * or NULL with errno: EINVAL (NULL arguments, a QP that is not a raw packet
 * QP, comp_mask, port, type or flags not known, a spec of the wrong size, two
 * specs of one layer, a match spec on a default or sniffer rule, DROP with
 * TAG, a tag of more than 24 bits), EOPNOTSUPP (UD QPs, egress rules,
 * tunnel, inner, ESP, MPLS specs, flow actions and counters), ENOMEM
 * (DPV_RAW_RULES_MAX rules on the port, no memory).
 */
struct ibv_flow *dpv_create_flow(struct ibv_qp *ib, struct ibv_flow_attr *attr)
{
	if (!ib || !attr) {
		errno = EINVAL;
		return NULL;
	}
	struct dpv_qp *qp = to_dqp(ib);
	struct dpv_raw_rule r;
	memset(&r, 0, sizeof(r));
	int e = check_attr(qp, attr);
	if (!e)
		e = compile(attr, &r);
	if (e) {
		errno = e;
		return NULL;
	}
	r.type = (uint8_t)attr->type;
	r.priority = attr->priority;
	r.qpn = qp->qpn;
	if (attr->flags & IBV_FLOW_ATTR_FLAGS_DONT_TRAP)
		r.flags |= DPV_RAW_F_DONT_TRAP;
	struct dpv_flow *f = calloc(1, sizeof(*f));
	if (!f) {
		errno = ENOMEM;
		return NULL;
	}
	uint32_t handle = 0;
	int rc = ctx_ops(ib->context)->flow_create(qp->drv, &r, &handle);
	if (rc < 0) {
		free(f);
		errno = -rc;
		return NULL;
	}
	f->qp = qp;
	f->ib.context = ib->context;
	f->ib.handle = handle;
	atomic_fetch_add(&qp->flows, 1);
	return &f->ib;
}

/** ibv_destroy_flow (verbs_context slot): 0, or EINVAL (NULL). */
int dpv_destroy_flow(struct ibv_flow *ib)
{
	if (!ib)
		return EINVAL;
	struct dpv_flow *f = container_of(ib, struct dpv_flow, ib);
	int rc = ctx_ops(ib->context)->flow_destroy(f->qp->drv, ib->handle);
	if (rc < 0 && rc != -ENOENT)
		return -rc; /* EIO: shared mode's daemon is gone */
	atomic_fetch_sub(&f->qp->flows, 1);
	free(f);
	return 0;
}
