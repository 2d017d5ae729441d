/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The software RoCEv2 driver: its ops table, registered with the verbs
 * façade at load time, the devices (one per port of the port layer), queue
 * memory, thread domains and run-to-completion progress.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_malloc.h>

#include "dpv_engine.h"
#include "dpv_view.h"
#include "sw_loc.h"

RTE_LOG_REGISTER(sw_logtype, pmd.dpv.sw, NOTICE);
bool sw_debug_on;

static struct sw_dev g_devs[DPV_MAX_PORTS];

/* The port layer's link hook (EAL interrupt thread): the port's state
 * changed, tell every open context as an RNIC does (IBA 11.6.3). */
static void sw_link_changed(struct dpv_port *p, bool up)
{
	if (p->index < DPV_MAX_PORTS && g_devs[p->index].port == p)
		dpv_event_async(&g_devs[p->index], up ? IBV_EVENT_PORT_ACTIVE : IBV_EVENT_PORT_ERR, 0);
}

/* The port layer's GID hook (EAL interrupt thread): the port's GID table
 * changed (an address of its kernel interface came or went). */
static void sw_gid_changed(struct dpv_port *p)
{
	if (p->index < DPV_MAX_PORTS && g_devs[p->index].port == p)
		dpv_event_async(&g_devs[p->index], IBV_EVENT_GID_CHANGE, 0);
}

static int sw_probe(const struct dpv_conf *conf, struct dpv_dev_info *devs, unsigned int max)
{
	struct dpv_runtime *rt = dpv_runtime_start(conf);
	if (!rt)
		return -(errno ? errno : EIO);
	int r = sw_tab_init();
	if (r)
		return r;
	sw_fault_init();
	unsigned int n = RTE_MIN(rt->n_ports, max);
	for (unsigned int i = 0; i < n; i++) {
		g_devs[i].port = &rt->ports[i];
		g_devs[i].index = i;
		snprintf(devs[i].name, sizeof(devs[i].name), "%s", rt->ports[i].name);
		memcpy(devs[i].mac, rt->ports[i].mac, DPV_MAC_LEN);
		devs[i].drv = &g_devs[i];
		devs[i].dm_size = sw_dm_init(&g_devs[i], rt->ports[i].conf ? rt->ports[i].conf->dm_size : 0);
	}
	dpv_port_set_rx_handler(sw_rx);
	dpv_port_set_raw_handler(sw_raw_rx);
	dpv_port_set_poll_handler(sw_poll);
	dpv_port_set_link_handler(sw_link_changed);
	dpv_port_set_gid_handler(sw_gid_changed);
	sw_debug_on = rte_log_can_log(sw_logtype, RTE_LOG_DEBUG);
	sw_us_cycles = RTE_MAX(rte_get_tsc_hz() / 1000000, (uint64_t)1);
	sw_telemetry_init(rt);
	return (int)n;
}

static int sw_query_port(void *d, struct ibv_port_attr *a)
{
	struct dpv_port *p = ((struct sw_dev *)d)->port;
	bool up = dpv_port_link_up(p);
	a->state = up ? IBV_PORT_ACTIVE : IBV_PORT_DOWN;
	a->phys_state = up ? 5 /* LinkUp */ : 2 /* Polling: no link partner */;
	a->max_mtu = IBV_MTU_4096;
	a->active_mtu = (enum ibv_mtu)p->active_mtu;
	a->lid = dpv_port_lid(p); /* LIDs on RoCE: dpv_av_from_lid */
	a->bad_pkey_cntr = (uint32_t)DPV_STAT_READ(p, drop[DPV_DROP_BAD_PKEY]);
	a->qkey_viol_cntr = (uint32_t)DPV_STAT_READ(p, drop[DPV_DROP_BAD_QKEY]);
	a->active_speed = dpv_view_speed(p->eth_speed_mbps, &a->active_width);
	return 0;
}

static int sw_query_gid(void *d, uint32_t index, struct dpv_gid *g)
{
	struct dpv_port *p = ((struct sw_dev *)d)->port;
	struct dpv_gid_entry e;
	if (!dpv_port_gid_get(p, index, &e))
		return -EINVAL;
	memcpy(g->raw, e.gid, DPV_GID_LEN);
	g->valid = e.valid;
	g->ip_ver = e.ip_ver;
	return 0;
}

/* ARP / ND through the port's first engine context (dpv_neigh.c). */
static int sw_neigh_query(void *d, const uint8_t ip[16], uint8_t mac[6])
{
	struct dpv_port *p = ((struct sw_dev *)d)->port;
	if (!p->n_qctx)
		return -EAGAIN;
	return dpv_neigh_lookup(&p->qctx[0], ip, mac);
}

/* Rings in DPDK memory (hugepages unless EAL runs with --no-huge), on the
 * port's NUMA socket: reachable from lcores and, later, from a daemon. */
static void *sw_queue_alloc(void *d, size_t size, size_t align)
{
	struct dpv_port *p = ((struct sw_dev *)d)->port;
	return rte_malloc_socket("dpv_ring", size, RTE_MAX(align, (size_t)RTE_CACHE_LINE_SIZE),
				 p->pool ? p->pool->socket_id : SOCKET_ID_ANY);
}

static void sw_queue_free(void *d, void *ptr)
{
	rte_free(ptr);
}


/* ---- thread domains ---- */

bool sw_td_claim(struct sw_td *td)
{
	if (!atomic_load_explicit(&td->owner_set, memory_order_acquire)) {
		td->owner = pthread_self();
		atomic_store_explicit(&td->owner_set, true, memory_order_release);
		return true;
	}
	return pthread_equal(td->owner, pthread_self());
}

static void *sw_create_td(void *d)
{
	struct sw_td *td = calloc(1, sizeof(*td));
	if (!td) {
		errno = ENOMEM;
		return NULL;
	}
	char name[RTE_RING_NAMESIZE];
	static _Atomic unsigned int seq;
	snprintf(name, sizeof(name), "dpv_td_%u", atomic_fetch_add(&seq, 1));
	td->rx_ring = rte_ring_create(name, SW_TD_RING, SOCKET_ID_ANY, RING_F_SC_DEQ);
	if (!td->rx_ring) {
		free(td);
		errno = ENOMEM;
		return NULL;
	}
	return td;
}

static int sw_destroy_td(void *p)
{
	struct sw_td *td = p;
	struct rte_mbuf *m;
	while (rte_ring_dequeue(td->rx_ring, (void **)&m) == 0)
		rte_pktmbuf_free(m);
	rte_ring_free(td->rx_ring);
	free(td);
	return 0;
}

/* ---- progress ---- */

bool sw_lcore_mode(void)
{
	return dpv_engine_lcore_mode();
}

/* Run to completion: the thread about to poll a CQ drives the engine (all
 * contexts); a thread domain's owner also takes the packets deferred to it. */
static int sw_progress(void *cq)
{
	struct sw_cq *c = cq;
	int n = 0;
	/* the packets deferred to this thread domain first (they are older) */
	if (c && c->lockless && c->td && sw_td_claim(c->td))
		n += sw_td_progress(c->td);
	return n + dpv_progress_all();
}

static bool sw_progress_is_background(void)
{
	return dpv_engine_lcore_mode();
}

static void sw_progress_blocking(bool on)
{
	dpv_engine_app_blocking(on);
}

/* dpverbsd's engine: its applications' doorbell rings and QP 1 */
static const struct dpv_engine_ops sw_engine_ops = {
	.db_count = sw_db_count,
	.db_attach = sw_db_attach,
	.db_detach = sw_db_detach,
	.qp_db_index = sw_qp_db_index,
	.db_sync = sw_db_sync,
	.gsi_demux = sw_gsi_demux,
};

static const struct dpv_verbs_ops sw_verbs_ops = {
	.alloc_dm = sw_alloc_dm,
	.alloc_mw = sw_alloc_mw,
	.create_ah = sw_create_ah,
	.create_cq = sw_create_cq,
	.create_qp = sw_create_qp,
	.create_srq = sw_create_srq,
	.create_td = sw_create_td,
	.dealloc_mw = sw_dealloc_mw,
	.dereg_mr = sw_dereg_mr,
	.destroy_ah = sw_destroy_ah,
	.destroy_cq = sw_destroy_cq,
	.destroy_qp = sw_destroy_qp,
	.destroy_srq = sw_destroy_srq,
	.destroy_td = sw_destroy_td,
	.flow_create = sw_flow_create,
	.flow_destroy = sw_flow_destroy,
	.free_dm = sw_free_dm,
	.mcast_attach = sw_mcast_attach,
	.mcast_detach = sw_mcast_detach,
	.modify_qp = sw_modify_qp,
	.neigh_query = sw_neigh_query,
	.progress = sw_progress,
	.progress_blocking = sw_progress_blocking,
	.progress_is_background = sw_progress_is_background,
	.query_gid = sw_query_gid,
	.query_port = sw_query_port,
	.query_qp_counters = sw_query_qp_counters,
	.query_qp_state = sw_query_qp_state,
	.queue_alloc = sw_queue_alloc,
	.queue_free = sw_queue_free,
	.reg_mr = sw_reg_mr,
	.resize_cq = sw_resize_cq,
	.rq_doorbell = sw_rq_doorbell,
	.sq_doorbell = sw_sq_doorbell,
	.srq_doorbell = sw_srq_doorbell,
};

DPV_DRIVER_REGISTER(sw, sw_probe, &sw_verbs_ops, &sw_engine_ops, NULL);
