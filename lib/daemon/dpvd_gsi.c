/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpverbsd: QP 1 of every port, shared by the applications' connection
 * managers (doc/shared-mode.md, "Connection management").
 *
 * The daemon owns QP 1: every MAD that reaches QP 1 of a port passes
 * through the demultiplexer below (on an engine thread), which hands it to
 * the GSI QP of one application (dpv_create_gsi_qp: a UD QP whose sends
 * leave with source QP 1):
 *   - a REQ or SIDR_REQ to the process that listens on its service ID on
 *     that port (GSI_LISTEN);
 *   - every other CM MAD (REP, RTU, REJ, MRA, DREQ, DREP, SIDR_REP, LAP,
 *     APR) to the process whose comm-ID range holds the comm ID it is
 *     addressed to (the REJ/REP/... "remote comm ID", the SIDR_REP request
 *     ID): each process with a GSI QP gets a slot 1..255, and its CM makes
 *     every local comm ID with the slot in the top 8 bits;
 *   - a MAD nobody claims (no listener, a slot that is free or whose
 *     process has no GSI QP on the port, not a CM MAD) to the fallback: the
 *     GSI QP of the lowest slot on the port, whose CM answers as Linux's
 *     does for an unknown service or comm ID (REJ "invalid service ID" for
 *     a REQ, SIDR_REP "unsupported" for a SIDR_REQ); none: dropped.
 * A process' listens and slot go with its GSI QPs and with the process.
 *
 * Locking: g_gsi.lock (a spinlock) protects the tables; the control thread
 * writes them, engine threads read them per MAD.
 */
#include <endian.h>
#include <errno.h>
#include <string.h>

#include "dpvd.h"

#define GSI_SLOTS 256           /* slot 0: none */
#define GSI_SLOT_SHIFT 24
#define GSI_MASK 0xff000000u
#define GSI_LISTENS 1024
#define MAD_HDR 24
#define MGMT_CLASS_CM 0x07
#define ATTR_REQ 0x0010
#define ATTR_SIDR_REQ 0x0017
#define ATTR_SIDR_REP 0x0018

struct gsi_listen {
	uint64_t sid;
	uint32_t dev, qpn;          /* qpn 0: free entry */
};

static struct {
	rte_spinlock_t lock;
	struct dpvd_client *owner[GSI_SLOTS];
	uint32_t qpn[GSI_SLOTS][DPV_MAX_PORTS];
	struct gsi_listen lis[GSI_LISTENS];
	uint64_t to_listener, to_slot, to_fallback, dropped;
} g_gsi = {.lock = RTE_SPINLOCK_INITIALIZER};

static uint32_t fallback(unsigned int dev)
{
	for (unsigned int s = 1; s < GSI_SLOTS; s++)
		if (g_gsi.qpn[s][dev])
			return g_gsi.qpn[s][dev];
	return 0;
}

static uint32_t by_service(unsigned int dev, uint64_t sid)
{
	for (unsigned int i = 0; i < GSI_LISTENS; i++)
		if (g_gsi.lis[i].qpn && g_gsi.lis[i].dev == dev && g_gsi.lis[i].sid == sid)
			return g_gsi.lis[i].qpn;
	return 0;
}

static uint32_t be32_at(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return be32toh(v);
}

/* The engine's GSI demultiplexer (dpv_gsi_demux_fn). */
static uint32_t gsi_demux(void *arg, unsigned int dev, const uint8_t *mad, uint32_t len)
{
	(void)arg;
	if (dev >= DPV_MAX_PORTS)
		return 0;
	uint32_t qpn = 0;
	rte_spinlock_lock(&g_gsi.lock);
	if (len >= MAD_HDR + 16 && mad[1] == MGMT_CLASS_CM) {
		uint16_t attr = (uint16_t)(mad[16] << 8 | mad[17]);
		const uint8_t *d = mad + MAD_HDR;
		if (attr == ATTR_REQ || attr == ATTR_SIDR_REQ) {
			uint64_t sid;
			memcpy(&sid, d + 8, 8);
			qpn = by_service(dev, be64toh(sid));
			g_gsi.to_listener += qpn != 0;
		} else {
			/* the comm ID addressed: SIDR_REP's request ID, else the remote comm ID */
			uint32_t id = attr == ATTR_SIDR_REP ? be32_at(d) : be32_at(d + 4);
			qpn = g_gsi.qpn[id >> GSI_SLOT_SHIFT][dev];
			g_gsi.to_slot += qpn != 0;
		}
	}
	if (!qpn) {
		qpn = fallback(dev);
		g_gsi.to_fallback += qpn != 0;
		g_gsi.dropped += qpn == 0;
	}
	rte_spinlock_unlock(&g_gsi.lock);
	return qpn;
}

void dpvd_gsi_init(void)
{
	if (g_dpvd.core->n_devs)
		dpv_ops(&g_dpvd.core->devs[0])->gsi_demux(gsi_demux, NULL);
}

int dpvd_gsi_reserve(struct dpvd_client *c, uint32_t dev)
{
	if (dev >= DPV_MAX_PORTS)
		return -EINVAL;
	int e = 0;
	rte_spinlock_lock(&g_gsi.lock);
	if (c->gsi_slot && g_gsi.qpn[c->gsi_slot][dev]) {
		e = -EEXIST; /* one GSI QP per process and port */
	} else if (!c->gsi_slot) {
		e = -ENOSPC;
		for (unsigned int s = 1; s < GSI_SLOTS && e; s++)
			if (!g_gsi.owner[s]) {
				g_gsi.owner[s] = c;
				c->gsi_slot = (uint8_t)s;
				e = 0;
			}
	}
	rte_spinlock_unlock(&g_gsi.lock);
	return e;
}

void dpvd_gsi_attach(struct dpvd_client *c, uint32_t dev, uint32_t qpn, uint32_t *prefix, uint32_t *mask)
{
	rte_spinlock_lock(&g_gsi.lock);
	g_gsi.qpn[c->gsi_slot][dev] = qpn;
	rte_spinlock_unlock(&g_gsi.lock);
	*prefix = (uint32_t)c->gsi_slot << GSI_SLOT_SHIFT;
	*mask = GSI_MASK;
}

void dpvd_gsi_detach(struct dpvd_obj *qp)
{
	rte_spinlock_lock(&g_gsi.lock);
	for (unsigned int i = 0; i < GSI_LISTENS; i++)
		if (g_gsi.lis[i].qpn == qp->num)
			g_gsi.lis[i].qpn = 0;
	for (unsigned int s = 1; s < GSI_SLOTS; s++)
		if (qp->dev < DPV_MAX_PORTS && g_gsi.qpn[s][qp->dev] == qp->num)
			g_gsi.qpn[s][qp->dev] = 0;
	rte_spinlock_unlock(&g_gsi.lock);
}

void dpvd_gsi_client_gone(struct dpvd_client *c)
{
	if (!c->gsi_slot)
		return;
	rte_spinlock_lock(&g_gsi.lock);
	memset(g_gsi.qpn[c->gsi_slot], 0, sizeof(g_gsi.qpn[c->gsi_slot]));
	g_gsi.owner[c->gsi_slot] = NULL;
	rte_spinlock_unlock(&g_gsi.lock);
	c->gsi_slot = 0;
}

int dpvd_gsi_listen(struct dpvd_client *c, struct dpv_shm_gsi_listen *l)
{
	struct dpvd_obj *o = dpvd_obj_get(c, DPV_OBJ_QP, l->qpn, true);
	if (!o || !o->gsi || l->on > 1)
		return -EINVAL;
	int e = l->on ? -ENOMEM : -ENOENT;
	rte_spinlock_lock(&g_gsi.lock);
	if (l->on && by_service(o->dev, l->service_id)) {
		e = -EADDRINUSE;
	} else if (l->on) {
		for (unsigned int i = 0; i < GSI_LISTENS && e; i++)
			if (!g_gsi.lis[i].qpn) {
				g_gsi.lis[i] = (struct gsi_listen){.sid = l->service_id, .dev = o->dev, .qpn = o->num};
				e = 0;
			}
	} else {
		for (unsigned int i = 0; i < GSI_LISTENS && e; i++)
			if (g_gsi.lis[i].qpn == o->num && g_gsi.lis[i].sid == l->service_id) {
				g_gsi.lis[i].qpn = 0;
				e = 0;
			}
	}
	rte_spinlock_unlock(&g_gsi.lock);
	return e;
}
