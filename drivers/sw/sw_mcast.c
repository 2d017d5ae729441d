/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Multicast (IBA 10.5, ibv_attach_mcast): per port, the groups (multicast
 * GIDs: IPv4-mapped 224.0.0.0/4 or ff00::/8 on RoCEv2) and the UD QPs
 * attached to each. A packet to destination QP 0xFFFFFF with a group as its
 * destination GID is delivered to every UD QP of the receiving port
 * attached to that group (each one's UD receive checks: state, P_Key,
 * Q_Key); none attached: dropped as for an unknown QP. Sending needs no
 * attachment: a UD SEND to the group's GID and QP 0xFFFFFF goes on the wire
 * to the group's Ethernet address and loops back to the port's own attached
 * QPs (dpv_port_xmit_mcast). No IGMP/MLD is sent: the ports are DPDK's,
 * there is no kernel to join the group on the wire (dpverbs_unsupported(7)).
 */
#include <errno.h>
#include <string.h>

#include <rte_mbuf.h>

#include "sw_loc.h"

/* groups and their attached UD QPs, per port */
#define SW_MCAST_GRPS DPV_MAX_MCAST_GRP
#define SW_MCAST_QPS DPV_MAX_MCAST_QP_ATTACH

struct sw_mcast_grp {
	const struct dpv_port *port;       /* NULL: free slot */
	uint8_t mgid[DPV_GID_LEN];
	uint32_t n;
	struct sw_qp *qp[SW_MCAST_QPS];
};

static struct sw_mcast_grp g_grp[SW_MCAST_GRPS];
static rte_spinlock_t g_lock = RTE_SPINLOCK_INITIALIZER;

static struct sw_mcast_grp *grp_find(const struct dpv_port *port, const uint8_t *mgid)
{
	for (unsigned int i = 0; i < SW_MCAST_GRPS; i++)
		if (g_grp[i].port == port && !memcmp(g_grp[i].mgid, mgid, DPV_GID_LEN))
			return &g_grp[i];
	return NULL;
}

int sw_mcast_attach(void *p, const uint8_t *mgid)
{
	struct sw_qp *qp = p;
	int r = 0;
	if (qp->lockless)
		return -EOPNOTSUPP; /* a thread domain's QP: only its thread may receive */
	rte_spinlock_lock(&g_lock);
	struct sw_mcast_grp *g = grp_find(qp->port, mgid);
	if (!g) {
		for (unsigned int i = 0; i < SW_MCAST_GRPS && !g; i++)
			if (!g_grp[i].port)
				g = &g_grp[i];
		if (g) {
			memset(g, 0, sizeof(*g));
			g->port = qp->port;
			memcpy(g->mgid, mgid, DPV_GID_LEN);
		}
	}
	if (!g) {
		r = -ENOMEM; /* max_mcast_grp groups on the device */
	} else {
		for (uint32_t i = 0; i < g->n; i++)
			if (g->qp[i] == qp)
				goto out; /* attached already: 0, as Linux */
		if (g->n == SW_MCAST_QPS)
			r = -ENOMEM; /* max_mcast_qp_attach */
		else
			g->qp[g->n++] = qp;
	}
out:
	rte_spinlock_unlock(&g_lock);
	return r;
}

static int detach_locked(struct sw_qp *qp, struct sw_mcast_grp *g)
{
	for (uint32_t i = 0; i < g->n; i++)
		if (g->qp[i] == qp) {
			g->qp[i] = g->qp[--g->n];
			if (!g->n)
				g->port = NULL;
			return 0;
		}
	return -EINVAL;
}

int sw_mcast_detach(void *p, const uint8_t *mgid)
{
	struct sw_qp *qp = p;
	rte_spinlock_lock(&g_lock);
	struct sw_mcast_grp *g = grp_find(qp->port, mgid);
	int r = g ? detach_locked(qp, g) : -EINVAL;
	rte_spinlock_unlock(&g_lock);
	return r;
}

void sw_mcast_qp_gone(struct sw_qp *qp)
{
	if (qp->type != IBV_QPT_UD)
		return;
	rte_spinlock_lock(&g_lock);
	for (unsigned int i = 0; i < SW_MCAST_GRPS; i++)
		if (g_grp[i].port == qp->port)
			detach_locked(qp, &g_grp[i]);
	rte_spinlock_unlock(&g_lock);
}

/* Every attached QP gets the packet (each UD receive frees its reference).
 * Runs under qc's rx_lock: a QP destroyed meanwhile was detached first and
 * its destroy waits for this context (sw_quiesce). */
void sw_mcast_rx(struct dpv_qctx *qc, struct rte_mbuf *m, struct dpv_pkt_info *pi)
{
	struct sw_qp *to[SW_MCAST_QPS];
	uint32_t n = 0;
	rte_spinlock_lock(&g_lock);
	struct sw_mcast_grp *g = grp_find(qc->port, pi->dgid);
	if (g) {
		n = g->n;
		memcpy(to, g->qp, n * sizeof(to[0]));
	}
	rte_spinlock_unlock(&g_lock);
	if (!n) {
		DPV_STAT_ADD(qc->port, drop[DPV_DROP_NO_QP], 1);
		rte_pktmbuf_free(m);
		return;
	}
	if (n > 1)
		rte_pktmbuf_refcnt_update(m, (int16_t)(n - 1));
	for (uint32_t i = 0; i < n; i++)
		sw_ud_rx(to[i], qc, m, pi);
}
