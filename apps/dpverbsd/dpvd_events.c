/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpverbsd: the engine's events, delivered to the application that owns the
 * object, the way the kernel delivers them to a process: asynchronous
 * events as struct ibv_async_event records (the element is the
 * application's own pointer, the cookie it gave at creation) on the async
 * pipe of the object's context, completion events as the CQ's pointer on
 * its completion channel's pipe. Port events go to every context of the
 * device; a QP's events also go to every ibv_open_qp handle on it, whatever
 * its process. Runs on engine threads: non-blocking writes under dpvd_global.evlock
 * (an event for an object being destroyed is dropped).
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "dpvd.h"

static void put(int fd, const struct ibv_async_event *ev)
{
	if (fd >= 0) {
		ssize_t w = write(fd, ev, sizeof(*ev));
		(void)w; /* a full pipe loses the event, as a full kernel queue would */
	}
}

static void to_device(int dev, enum ibv_event_type type)
{
	struct ibv_async_event ev = {.event_type = type};
	ev.element.port_num = DPV_PORT_NUM;
	struct dpvd_client *c;
	TAILQ_FOREACH(c, &dpvd_global.clients, next)
		for (unsigned int i = 0; i < DPVD_MAX_CTX; i++)
			if (c->ctx[i].async_fd >= 0 && (dev < 0 || c->ctx[i].dev == (uint32_t)dev))
				put(c->ctx[i].async_fd, &ev);
}

static void ev_async(void *drv_dev, enum ibv_event_type type, uint32_t num)
{
	enum dpv_obj_type t;
	switch (type) {
	case IBV_EVENT_PORT_ACTIVE:
	case IBV_EVENT_PORT_ERR:
	case IBV_EVENT_LID_CHANGE:
	case IBV_EVENT_PKEY_CHANGE:
	case IBV_EVENT_GID_CHANGE:
	case IBV_EVENT_SM_CHANGE:
	case IBV_EVENT_CLIENT_REREGISTER:
	case IBV_EVENT_DEVICE_FATAL: {
		int d = dpv_host_dev_index(drv_dev);
		if (d < 0)
			return;
		rte_spinlock_lock(&dpvd_global.evlock);
		to_device(d, type);
		rte_spinlock_unlock(&dpvd_global.evlock);
		return;
	}
	case IBV_EVENT_CQ_ERR:
		t = DPV_OBJ_CQ;
		break;
	case IBV_EVENT_SRQ_LIMIT_REACHED:
	case IBV_EVENT_SRQ_ERR:
		t = DPV_OBJ_SRQ;
		break;
	default:
		t = DPV_OBJ_QP;
		break;
	}
	struct ibv_async_event ev = {.event_type = type};
	rte_spinlock_lock(&dpvd_global.evlock);
	struct dpvd_obj *o = dpv_pool_get(t, num);
	if (o && o->type == t && o->created && o->owner && o->ctx && o->ctx <= DPVD_MAX_CTX) {
		void *p = (void *)(uintptr_t)o->cookie;
		if (t == DPV_OBJ_CQ)
			ev.element.cq = p;
		else if (t == DPV_OBJ_SRQ)
			ev.element.srq = p;
		else
			ev.element.qp = p;
		put(o->owner->ctx[o->ctx - 1].async_fd, &ev);
	}
	/* an XRC target QP: every ibv_open_qp handle too, as Linux' shared
	 * QP event handler gives it to each opener (also once the creator
	 * is gone) */
	if (o && t == DPV_OBJ_QP && o->type == t && o->created && o->n_openers)
		dpvd_qpopen_event(o, type);
	rte_spinlock_unlock(&dpvd_global.evlock);
}

static void ev_comp(uint32_t cq_handle)
{
	rte_spinlock_lock(&dpvd_global.evlock);
	struct dpvd_obj *o = dpv_pool_get(DPV_OBJ_CQ, cq_handle);
	if (o && o->type == DPV_OBJ_CQ && o->created && o->chan_fd >= 0) {
		ssize_t w = write(o->chan_fd, &o->cookie, sizeof(o->cookie));
		(void)w;
	}
	rte_spinlock_unlock(&dpvd_global.evlock);
}

static const struct dpv_event_sink g_sink = {.async = ev_async, .comp = ev_comp};

void dpvd_events_init(void)
{
	dpv_host_set_event_sink(&g_sink);
}

void dpvd_events_fatal_all(void)
{
	rte_spinlock_lock(&dpvd_global.evlock);
	to_device(-1, IBV_EVENT_DEVICE_FATAL);
	rte_spinlock_unlock(&dpvd_global.evlock);
}
