/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * The neighbour step of rdma_resolve_addr in the drop-in librdmacm.so.1,
 * as Linux's rdma_resolve_ip (drivers/infiniband/core/addr.c): the address
 * is resolved once the destination's Ethernet address is known. dpverbs'
 * own ARP / IPv6 ND answers (dpv_query_neigh(3)); while it has no answer
 * the id waits in ADDR_QUERY and the CM service's thread asks again every
 * round (dpv_rdmacm_neigh_poll). When the answer comes: ADDR_RESOLVED; when
 * timeout_ms passes first: ADDR_ERROR with status -ETIMEDOUT and the id is
 * ADDR_BOUND again (Linux's addr_handler). A driver without a neighbour
 * table (EOPNOTSUPP: null driver) and a multicast destination
 * resolve at once.
 *
 * Locking: g_lock protects the pending list and is held while an entry's
 * event is posted, so that dpv_rdmacm_neigh_cancel (rdma_destroy_id)
 * returns only once no event of the id is being posted.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "dpv_rdmacm.h"
#include "dpv_rdmacm_cmsvc.h"
#include "dpverbs.h"

struct pending {
	struct dpv_rdmacm_id *id;
	uint64_t deadline;
	struct pending *next;
};

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static struct pending *g_pending;

/* A multicast GID (IPv4-mapped 224.0.0.0/4, IPv6 ff00::/8): its Ethernet
 * address is derived from it, nobody is asked (Linux's neighbour for it is
 * NUD_NOARP, valid at once). */
static bool gid_multicast(const union ibv_gid *g)
{
	static const uint8_t v4mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

	if (memcmp(g->raw, v4mapped, 12) == 0)
		return (g->raw[12] & 0xf0) == 0xe0;
	return g->raw[0] == 0xff;
}

/* 0: known (or no table), 1: being resolved, -1 with errno. */
static int query(struct dpv_rdmacm_id *p)
{
	const union ibv_gid *dgid = &p->id.route.addr.addr.ibaddr.dgid;
	uint8_t mac[6];

	if (gid_multicast(dgid))
		return 0;
	int r = dpv_query_neigh(p->id.verbs, p->id.port_num, dgid, mac);

	if (r == 0 || r == EOPNOTSUPP)
		return 0;
	if (r == EAGAIN)
		return 1;
	errno = r;
	return -1;
}

int dpv_rdmacm_neigh_start(struct dpv_rdmacm_id *p, int timeout_ms)
{
	int r = query(p);

	if (r <= 0)
		return r;
	struct pending *e = calloc(1, sizeof(*e));
	if (e == NULL)
		return dpv_rdmacm_err(ENOMEM);
	e->id = p;
	/* Linux: msecs_to_jiffies((unsigned int)timeout_ms) */
	e->deadline = dpv_rdmacm_now_ns() + (uint64_t)(unsigned int)timeout_ms * 1000000ull;
	/* the service thread does the asking: make sure it runs; the entry is
	 * queued under the service lock, so the thread, which stops when it
	 * finds nothing to do, cannot miss it */
	dpv_rdmacm_cmsvc_lock();
	struct dpv_cmrt *rt = dpv_rdmacm_cmsvc_rt(p->id.verbs);
	if (rt != NULL) {
		pthread_mutex_lock(&g_lock);
		p->state = DPV_RDMACM_ADDR_QUERY;
		e->next = g_pending;
		g_pending = e;
		pthread_mutex_unlock(&g_lock);
	}
	dpv_rdmacm_cmsvc_unlock();
	if (rt == NULL) {
		free(e);
		return -1;
	}
	return 1;
}

/* Posts the outcome of e; g_lock held. */
static void finish(struct pending *e, bool ok)
{
	struct dpv_rdmacm_id *p = e->id;
	struct rdma_cm_event ev = {.id = &p->id};

	if (ok) {
		p->state = DPV_RDMACM_ADDR_RESOLVED;
		ev.event = RDMA_CM_EVENT_ADDR_RESOLVED;
	} else {
		p->state = DPV_RDMACM_ADDR_BOUND;
		ev.event = RDMA_CM_EVENT_ADDR_ERROR;
		ev.status = -ETIMEDOUT;
	}
	dpv_rdmacm_event_post(p, &ev, NULL, 0);
}

int dpv_rdmacm_neigh_poll(uint64_t now)
{
	int n = 0;

	pthread_mutex_lock(&g_lock);
	for (struct pending **pe = &g_pending; *pe != NULL;) {
		struct pending *e = *pe;
		int r = query(e->id);

		if (r == 1 && now < e->deadline) {
			pe = &e->next;
			continue;
		}
		/* an error other than "not yet" ends it as a timeout would */
		finish(e, r == 0);
		*pe = e->next;
		free(e);
		n++;
	}
	pthread_mutex_unlock(&g_lock);
	return n;
}

void dpv_rdmacm_neigh_cancel(struct dpv_rdmacm_id *p)
{
	pthread_mutex_lock(&g_lock);
	for (struct pending **pe = &g_pending; *pe != NULL;) {
		struct pending *e = *pe;

		if (e->id == p) {
			*pe = e->next;
			free(e);
		} else {
			pe = &e->next;
		}
	}
	pthread_mutex_unlock(&g_lock);
}

bool dpv_rdmacm_neigh_pending(void)
{
	pthread_mutex_lock(&g_lock);
	bool r = g_pending != NULL;
	pthread_mutex_unlock(&g_lock);
	return r;
}

void dpv_rdmacm_neigh_forget(void)
{
	/* a child of fork(): the parent's waiting ids are not its own (their
	 * channels' eventfds are shared with the parent); drop them unfreed */
	pthread_mutex_init(&g_lock, NULL);
	g_pending = NULL;
}
