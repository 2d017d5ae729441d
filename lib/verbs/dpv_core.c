/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The façade's core: the driver registry, bring-up on first use
 * (configuration -> parameters -> object pool -> driver probe -> devices),
 * and the services drivers call (events). A driver that leaves an op NULL
 * gets the default of dpv_ops_default.c, so no dispatcher meets a NULL.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_log.h>

#include "dpv_verbs.h"

RTE_LOG_REGISTER(dpv_logtype_verbs, lib.dpv.verbs, NOTICE);

static STAILQ_HEAD(, dpv_driver) g_drivers = STAILQ_HEAD_INITIALIZER(g_drivers);

void dpv_driver_register(struct dpv_driver *drv)
{
	STAILQ_INSERT_TAIL(&g_drivers, drv, next);
}

static const struct dpv_driver *driver_find(const char *name)
{
	struct dpv_driver *d;
	STAILQ_FOREACH(d, &g_drivers, next)
		if (!strcmp(d->name, name))
			return d;
	return NULL;
}

/* the driver's tables with the defaults filled in (dpv_ops_default.c) */
static struct dpv_verbs_ops g_verbs;
static struct dpv_engine_ops g_engine;
static struct dpv_gsi_ops g_gsi;

bool dpv_core_has_mcast(void)
{
	return g_verbs.mcast_attach != dpv_verbs_defaults.mcast_attach;
}

bool dpv_core_has_tm(void)
{
	return g_verbs.srq_doorbell != dpv_verbs_defaults.srq_doorbell;
}

bool dpv_core_has_mw(void)
{
	return g_verbs.alloc_mw != dpv_verbs_defaults.alloc_mw;
}

bool dpv_core_has_raw(void)
{
	return g_verbs.flow_create != dpv_verbs_defaults.flow_create;
}

/* ---- bring-up ---- */

static struct dpv_core g_core;
static _Atomic(struct dpv_core *) g_core_ready;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static int g_core_err;

void dpv_params_init(struct dpv_params *p, const struct dpv_conf *c)
{
	memset(p, 0, sizeof(*p));
	p->max_qp = RTE_MIN(c->max_qp, (uint32_t)(DPV_QPN_LAST - DPV_QPN_FIRST + 1));
	p->max_qp_wr = c->max_qp_wr;
	p->max_sge = RTE_MIN(c->max_sge, (uint32_t)DPV_MAX_SGE_LIMIT);
	p->max_inline = c->max_inline;
	p->max_cq = RTE_MIN(c->max_cq, (uint32_t)DPV_OBJ_INDEX_LAST);
	p->max_cqe = c->max_cqe;
	p->max_mr = RTE_MIN(c->max_mr, (uint32_t)DPV_MR_INDEX_LAST);
	p->max_pd = RTE_MIN(c->max_pd, (uint32_t)DPV_OBJ_INDEX_LAST);
	p->max_ah = RTE_MIN(c->max_ah, (uint32_t)DPV_OBJ_INDEX_LAST);
	p->max_srq = RTE_MIN(c->max_srq, (uint32_t)DPV_SRQN_LAST);
	p->max_srq_wr = c->max_qp_wr;
	p->max_srq_sge = p->max_sge;
	p->max_qp_rd_atom = DPV_MAX_QP_RD_ATOM;
	p->max_qp_init_rd_atom = DPV_MAX_QP_INIT_RD_ATOM;
	p->max_mr_size = c->max_mr_size;
}

static void set_log_levels(const struct dpv_conf *c)
{
	for (unsigned int i = 0; i < c->n_log; i++) {
		rte_log_set_level_pattern(c->log[i].pattern, (uint32_t)c->log[i].level);
		/* EAL's global level gates every type: a type asked for more must pass it */
		if ((uint32_t)c->log[i].level > rte_log_get_global_level())
			rte_log_set_global_level((uint32_t)c->log[i].level);
	}
}

static void dev_init(struct dpv_device *d, const struct dpv_dev_info *di, unsigned int index)
{
	d->ops = &g_verbs;
	d->engine = &g_engine;
	d->gsi = &g_gsi;
	d->drv_dev = di->drv;
	d->index = index;
	d->dm_size = di->dm_size;
	memcpy(d->mac, di->mac, 6);
	rte_spinlock_init(&d->ctx_lock);
	LIST_INIT(&d->ctxs);
	d->ibdev.node_type = IBV_NODE_CA;
	d->ibdev.transport_type = IBV_TRANSPORT_IB;
	snprintf(d->ibdev.name, sizeof(d->ibdev.name), "%.*s", (int)sizeof(d->ibdev.name) - 1, di->name);
	/* as the kernel names them: uverbs<N> in probe (configuration) order;
	 * the sysfs view (dpv_view.c) uses the same names */
	snprintf(d->ibdev.dev_name, sizeof(d->ibdev.dev_name), "uverbs%u", index);
	snprintf(d->ibdev.dev_path, sizeof(d->ibdev.dev_path), "/sys/class/infiniband_verbs/uverbs%u", index);
	snprintf(d->ibdev.ibdev_path, sizeof(d->ibdev.ibdev_path), "/sys/class/infiniband/%.*s",
		 (int)sizeof(d->ibdev.name) - 1, di->name);
	/* node GUID: modified EUI-64 of the MAC, as rxe does (dpv_conf_gid.c) */
	uint8_t g[8];
	dpv_mac_eui64(di->mac, g);
	memcpy(&d->guid, g, 8);
}

static enum dpv_role g_role = DPV_ROLE_APP;

void dpv_core_set_role(enum dpv_role role)
{
	g_role = role;
}

static void core_init(void)
{
	struct dpv_core *c = &g_core;
	char err[1024];

	if (dpv_conf_load(NULL, &c->conf, err, sizeof(err)) != 0) {
		DPV_LOG(ERR, "%s\n", err);
		g_core_err = EINVAL;
		return;
	}
	const char *dn = getenv("DPVERBS_DRIVER");
	if (dn && *dn)
		snprintf(c->conf.driver, sizeof(c->conf.driver), "%s", dn);
	/* shared mode: applications reach the engine in dpverbsd */
	if (c->conf.mode == DPV_MODE_SHARED && g_role == DPV_ROLE_APP)
		snprintf(c->conf.driver, sizeof(c->conf.driver), "%s", "remote");
	set_log_levels(&c->conf);
	dpv_params_init(&c->params, &c->conf);
	if (dpv_pool_init(&c->params) != 0) {
		g_core_err = ENOMEM;
		return;
	}
	c->drv = driver_find(c->conf.driver);
	if (!c->drv) {
		DPV_LOG(ERR, "%s: driver: no driver \"%s\" in this build\n", c->conf.source, c->conf.driver);
		g_core_err = ENODEV;
		return;
	}
	dpv_ops_fill(c->drv, &g_verbs, &g_engine, &g_gsi);
	c->ops = &g_verbs;
	struct dpv_dev_info di[DPV_MAX_PORTS];
	memset(di, 0, sizeof(di));
	int n = c->drv->probe(&c->conf, di, DPV_MAX_PORTS);
	if (n < 0) {
		g_core_err = -n;
		return;
	}
	set_log_levels(&c->conf); /* again: EAL's own --log-level came in between */
	for (int i = 0; i < n; i++)
		dev_init(&c->devs[i], &di[i], (unsigned int)i);
	c->n_devs = (unsigned int)n;
	c->pid = getpid();
	atomic_store(&g_core_ready, c);
}

/* fork() in embedded mode: the child has its parent's EAL, ports and engine
 * (hugepage memory shared with the parent, rings included) and must not run
 * them: its polls would take the parent's packets, its allocations break
 * the parent's pools. It gets no devices (ENODEV), as a process without
 * ports; shared mode's children attach to the daemon on their own. */
static bool forked_child(const struct dpv_core *c)
{
	static atomic_bool said;
	if (c->pid == getpid() || c->ops->fork_safe())
		return false;
	/* on stderr whatever the log levels: the program is about to fail */
	if (!atomic_exchange(&said, true))
		fprintf(stderr, "dpverbs: embedded mode: pid %d is a child of pid %d, which runs the ports, and "
			"cannot use them (no devices, ENODEV). Programs that fork and use verbs in the "
			"children (qperf's server, MPI launchers) run in shared mode: start dpverbsd with "
			"the configuration and add \"mode\": \"shared\" to it (dpverbsd(8)), or exec a "
			"program in the child\n", (int)getpid(), (int)c->pid);
	return true;
}

struct dpv_core *dpv_core_get(void)
{
	pthread_once(&g_once, core_init);
	struct dpv_core *c = atomic_load(&g_core_ready);
	if (!c) {
		errno = g_core_err ? g_core_err : EIO;
	} else if (forked_child(c)) {
		errno = ENODEV;
		return NULL;
	}
	return c;
}

struct dpv_core *dpv_core_peek(void)
{
	return atomic_load(&g_core_ready);
}

int dpv_core_set_params(const struct dpv_params *p)
{
	int r = dpv_pool_init(p);
	if (!r)
		g_core.params = *p;
	return r;
}

static uint64_t g_tsc_hz;

void dpv_core_set_tsc_hz(uint64_t hz)
{
	g_tsc_hz = hz;
}

uint64_t dpv_tsc_hz(void)
{
	uint64_t hz = rte_get_tsc_hz();
	return hz ? hz : g_tsc_hz;
}

static __thread uint64_t t_cal_tsc, t_cal_ns;

uint64_t dpv_tsc_realtime_ns(uint64_t tsc)
{
	uint64_t hz = dpv_tsc_hz();
	if (!hz)
		return 0;
	uint64_t now = rte_get_tsc_cycles();
	if (!t_cal_tsc || now - t_cal_tsc > hz) {
		/* the TSC in the middle of the clock read */
		struct timespec ts;
		uint64_t a = rte_get_tsc_cycles();
		clock_gettime(CLOCK_REALTIME, &ts);
		uint64_t b = rte_get_tsc_cycles();
		t_cal_tsc = a + (b - a) / 2;
		t_cal_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	}
	__int128 d = (__int128)(int64_t)(tsc - t_cal_tsc) * 1000000000 / (__int128)hz;
	return t_cal_ns + (uint64_t)(int64_t)d;
}

const struct dpv_conf *dpv_core_conf(void)
{
	struct dpv_core *c = dpv_core_peek();
	return c ? &c->conf : NULL;
}

const struct dpv_params *dpv_core_params(void)
{
	struct dpv_core *c = dpv_core_peek();
	return c ? &c->params : NULL;
}

/* ---- events from drivers ---- */

static struct dpv_device *dev_of(void *drv_dev)
{
	struct dpv_core *c = dpv_core_peek();
	for (unsigned int i = 0; c && i < c->n_devs; i++)
		if (c->devs[i].drv_dev == drv_dev)
			return &c->devs[i];
	return NULL;
}

static const struct dpv_event_sink *g_sink;

void dpv_event_set_sink(const struct dpv_event_sink *sink)
{
	g_sink = sink;
}

void dpv_event_async(void *drv_dev, enum ibv_event_type type, uint32_t num)
{
	if (g_sink) {
		g_sink->async(drv_dev, type, num);
		return;
	}
	struct ibv_async_event ev = {.event_type = type};
	struct dpv_context *ctx = NULL;

	switch (type) {
	case IBV_EVENT_CQ_ERR: {
		struct dpv_cq *cq = dpv_pool_get(DPV_OBJ_CQ, num);
		if (!cq)
			return;
		ev.element.cq = dcq_ib(cq);
		ctx = to_dctx(dcq_ib(cq)->context);
		break;
	}
	case IBV_EVENT_SRQ_LIMIT_REACHED:
	case IBV_EVENT_SRQ_ERR: {
		struct dpv_srq *s = dpv_pool_get(DPV_OBJ_SRQ, num);
		if (!s)
			return;
		ev.element.srq = &s->ibsrq;
		ctx = to_dctx(s->ibsrq.context);
		break;
	}
	case IBV_EVENT_PORT_ACTIVE:
	case IBV_EVENT_PORT_ERR:
	case IBV_EVENT_LID_CHANGE:
	case IBV_EVENT_PKEY_CHANGE:
	case IBV_EVENT_GID_CHANGE:
	case IBV_EVENT_SM_CHANGE:
	case IBV_EVENT_CLIENT_REREGISTER:
	case IBV_EVENT_DEVICE_FATAL: {
		struct dpv_device *d = dev_of(drv_dev);
		if (!d)
			return;
		ev.element.port_num = DPV_PORT_NUM;
		rte_spinlock_lock(&d->ctx_lock);
		LIST_FOREACH(ctx, &d->ctxs, next)
			dpv_async_deliver(ctx, &ev);
		rte_spinlock_unlock(&d->ctx_lock);
		return;
	}
	default: { /* QP events */
		struct dpv_qp *qp = dpv_pool_get(DPV_OBJ_QP, num);
		if (!qp)
			return;
		ev.element.qp = dqp_ib(qp);
		ctx = qp->ctx;
		if (qp->type == IBV_QPT_XRC_RECV)
			dpv_xrc_qp_event(qp, &ev); /* its ibv_open_qp handles */
		break;
	}
	}
	if (ctx)
		dpv_async_deliver(ctx, &ev);
}

void dpv_event_comp(uint32_t cq_handle)
{
	if (g_sink) {
		g_sink->comp(cq_handle);
		return;
	}
	struct dpv_cq *cq = dpv_pool_get(DPV_OBJ_CQ, cq_handle);
	if (!cq || !cq->chan)
		return;
	struct ibv_cq *ib = dcq_ib(cq);
	ssize_t w = write(cq->chan->wfd, &ib, sizeof(ib));
	(void)w;
}
