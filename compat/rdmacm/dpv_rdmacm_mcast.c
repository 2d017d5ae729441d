/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * rdma_join_multicast, rdma_join_multicast_ex, rdma_leave_multicast of the
 * drop-in librdmacm.so.1, as Linux's rdma_cm joins on RoCE
 * (cma_iboe_join_multicast) and librdmacm attaches the id's QP:
 *  - the id must have an address (bound or resolved: EINVAL otherwise, as
 *    Linux); the group's GID is built from the address, there is no SA:
 *    ::ffff:a.b.c.d for an IPv4 group, the address itself for IPv6;
 *  - join flags: FULLMEMBER, SENDONLY_FULLMEMBER (not attached: it only
 *    sends); EINVAL for flags >= RDMA_MC_JOIN_FLAG_RESERVED, as librdmacm;
 *  - the id's UD QP (if it has one) is attached to the group
 *    (ibv_attach_mcast; librdmacm does it when the event is read, here when
 *    the join is made); then RDMA_CM_EVENT_MULTICAST_JOIN with param.ud as
 *    the kernel fills it: ah_attr to the group (global, source GID of the
 *    id's address, hop limit 64 as IPV6_DEFAULT_HOPLIMIT), qp_num 0xFFFFFF,
 *    qkey RDMA_UDP_QKEY, private_data = the join's context; if the attach
 *    fails, RDMA_CM_EVENT_MULTICAST_ERROR with status -errno;
 *  - rdma_leave_multicast detaches the QP; EADDRNOTAVAIL for an address the
 *    id did not join (librdmacm); rdma_destroy_id leaves every group.
 * Differences (dpverbs_rdmacm(7)): no IGMP report is sent (the ports are
 * DPDK's); IPv6 groups are joined (Linux RoCEv2 refuses them: ENOTSUPP).
 */
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "dpv_rdmacm.h"

#define MC_HOP_LIMIT 64 /* IPV6_DEFAULT_HOPLIMIT, what Linux puts in a RoCEv2 group's record */

struct dpv_rdmacm_mc {
	struct sockaddr_storage addr;
	union ibv_gid mgid;
	struct dpv_rdmacm_mc *next;
};

static size_t addr_len(const struct sockaddr *sa)
{
	return sa->sa_family == AF_INET ? sizeof(struct sockaddr_in)
	       : sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : 0;
}

/* cma_iboe_set_mgid for RoCEv2: 0 and the group's GID, or EINVAL */
static int group_gid(const struct sockaddr *sa, union ibv_gid *g)
{
	memset(g, 0, sizeof(*g));
	if (sa->sa_family == AF_INET) {
		const struct in_addr *a = &((const struct sockaddr_in *)sa)->sin_addr;
		if (!IN_MULTICAST(ntohl(a->s_addr)))
			return EINVAL;
		g->raw[10] = g->raw[11] = 0xff;
		memcpy(&g->raw[12], a, 4);
		return 0;
	}
	const struct in6_addr *a6 = &((const struct sockaddr_in6 *)sa)->sin6_addr;
	if (!IN6_IS_ADDR_MULTICAST(a6))
		return EINVAL;
	memcpy(g->raw, a6, 16);
	return 0;
}

static int src_gid_index(struct rdma_cm_id *id)
{
	union ibv_gid g;
	for (int i = 0; i < 16; i++)
		if (ibv_query_gid(id->verbs, id->port_num, i, &g) == 0 &&
		    !memcmp(&g, &id->route.addr.addr.ibaddr.sgid, sizeof(g)))
			return i;
	return 0;
}

static void post_join(struct dpv_rdmacm_id *p, const union ibv_gid *mgid, void *context, int attach_err)
{
	struct rdma_cm_id *id = &p->id;
	struct rdma_cm_event e = {.id = id, .event = RDMA_CM_EVENT_MULTICAST_JOIN};

	if (attach_err) {
		e.event = RDMA_CM_EVENT_MULTICAST_ERROR;
		e.status = -attach_err;
	}
	e.param.ud.private_data = context;
	e.param.ud.ah_attr.is_global = 1;
	e.param.ud.ah_attr.grh.dgid = *mgid;
	e.param.ud.ah_attr.grh.sgid_index = (uint8_t)src_gid_index(id);
	e.param.ud.ah_attr.grh.hop_limit = MC_HOP_LIMIT;
	e.param.ud.ah_attr.grh.traffic_class = p->tos_set ? p->tos : 0;
	e.param.ud.ah_attr.port_num = id->port_num;
	e.param.ud.qp_num = 0xffffff;
	e.param.ud.qkey = RDMA_UDP_QKEY;
	dpv_rdmacm_event_post(p, &e, NULL, 0);
}

int rdma_join_multicast_ex(struct rdma_cm_id *id, struct rdma_cm_join_mc_attr_ex *attr, void *context)
{
	if (id == NULL || attr == NULL || !(attr->comp_mask & RDMA_CM_JOIN_MC_ATTR_ADDRESS) ||
	    !(attr->comp_mask & RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS) || attr->join_flags >= RDMA_MC_JOIN_FLAG_RESERVED ||
	    attr->addr == NULL || addr_len(attr->addr) == 0)
		return dpv_rdmacm_err(EINVAL);
	struct dpv_rdmacm_id *p = to_did(id);
	if (id->verbs == NULL || (p->state != DPV_RDMACM_ADDR_BOUND && p->state != DPV_RDMACM_ADDR_RESOLVED))
		return dpv_rdmacm_err(EINVAL);
	struct dpv_rdmacm_mc *mc = calloc(1, sizeof(*mc));
	if (mc == NULL)
		return dpv_rdmacm_err(ENOMEM);
	memcpy(&mc->addr, attr->addr, addr_len(attr->addr));
	int e = group_gid(attr->addr, &mc->mgid);
	if (e) {
		free(mc);
		return dpv_rdmacm_err(e);
	}
	pthread_mutex_lock(&p->lock);
	mc->next = p->mc;
	p->mc = mc;
	pthread_mutex_unlock(&p->lock);
	/* a send-only member is not attached: it only sends to the group */
	if (id->qp != NULL && attr->join_flags == RDMA_MC_JOIN_FLAG_FULLMEMBER)
		e = ibv_attach_mcast(id->qp, &mc->mgid, 0);
	post_join(p, &mc->mgid, context, e);
	return dpv_rdmacm_complete(p);
}

int rdma_join_multicast(struct rdma_cm_id *id, struct sockaddr *addr, void *context)
{
	struct rdma_cm_join_mc_attr_ex a = {
		.comp_mask = RDMA_CM_JOIN_MC_ATTR_ADDRESS | RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS,
		.join_flags = RDMA_MC_JOIN_FLAG_FULLMEMBER,
		.addr = addr,
	};
	return rdma_join_multicast_ex(id, &a, context);
}

int rdma_leave_multicast(struct rdma_cm_id *id, struct sockaddr *addr)
{
	if (id == NULL || addr == NULL || addr_len(addr) == 0)
		return dpv_rdmacm_err(EINVAL);
	struct dpv_rdmacm_id *p = to_did(id);
	struct dpv_rdmacm_mc *mc = NULL;
	pthread_mutex_lock(&p->lock);
	for (struct dpv_rdmacm_mc **pp = &p->mc; *pp; pp = &(*pp)->next)
		if (!memcmp(&(*pp)->addr, addr, addr_len(addr))) {
			mc = *pp;
			*pp = mc->next;
			break;
		}
	pthread_mutex_unlock(&p->lock);
	if (mc == NULL)
		return dpv_rdmacm_err(EADDRNOTAVAIL);
	if (id->qp != NULL)
		ibv_detach_mcast(id->qp, &mc->mgid, 0);
	free(mc);
	return 0;
}

void dpv_rdmacm_mc_release(struct dpv_rdmacm_id *p)
{
	struct dpv_rdmacm_mc *mc = p->mc, *next;

	p->mc = NULL;
	for (; mc; mc = next) {
		next = mc->next;
		if (p->id.qp != NULL)
			ibv_detach_mcast(p->id.qp, &mc->mgid, 0);
		free(mc);
	}
}
