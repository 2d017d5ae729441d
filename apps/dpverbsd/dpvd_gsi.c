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
 *     ID): each process with a GSI QP gets a slot 2..255 (1 is the
 *     daemon's own endpoint, dpvd_cm.c), and its CM makes
 *     every local comm ID with the slot in the top 8 bits;
 *   - a MAD nobody claims (no listener, a slot that is free or whose
 *     process has no GSI QP on the port, not a CM MAD) to the fallback: the
 *     GSI QP of the lowest slot on the port, the daemon's own (dpvd_cm.c,
 *     slot 1), whose CM answers as Linux's does for an unknown service or
 *     comm ID (REJ "invalid service ID" for a REQ, SIDR_REP "unsupported"
 *     for a SIDR_REQ); none: dropped.
 * A process' listens and slot go with its GSI QPs and with the process.
 *
 * Connections: from the MADs it hands out and those the processes send
 * (the send filter below sees them) the daemon follows each process' RC
 * connections through the states that decide what Linux's CM sends for
 * them when the process closes its rdma_cm file (cm_destroy_id): when a
 * process goes away the daemon sends a DREQ for an established connection
 * and a REJ for one being set up (REQ received: consumer defined, comm ID
 * 0; its REP sent or the peer's REP received: consumer defined; its REQ
 * sent: "timeout" with the CA GUID), dpvd_gsi_client_gone.
 *
 * Sending: an application's GSI QP sends only well-formed CM MADs whose
 * own comm ID is in its range (gsi_tx, the engine's send filter).
 *
 * Locking: g_gsi.lock (a spinlock) protects the tables; the control thread
 * writes them, engine threads read them per MAD.
 */
#include <errno.h>
#include <string.h>

#include "dpv_cm_mad.h"          /* the one lib/cm header outside lib/cmrt: MAD headers, to route */
#include "dpv_cmrt_xport.h"
#include "dpvd.h"

#define GSI_SLOTS 256           /* slot 0: none */
#define GSI_SLOT_SHIFT 24
#define GSI_MASK 0xff000000u
#define GSI_LISTENS 1024
#define GSI_LISTENS_PER_PROCESS 128
#define GSI_CONNS 1024
#define GSI_CONNS_PER_PROCESS 256

struct gsi_listen {
	uint64_t sid;
	uint32_t dev, qpn;          /* qpn 0: free entry */
};

/* An RC connection of a process as the MADs it receives and sends show it
 * (the states of Linux's CM that decide what it sends when the process
 * goes away). */
enum conn_st {
	C_FREE,
	C_REQ_RCVD,                 /* passive: the peer's REQ handed over (peer ID known) */
	C_REP_SENT,                 /* passive: its REP sent (both IDs) */
	C_REQ_SENT,                 /* active: its REQ sent (its ID known) */
	C_REP_RCVD,                 /* active: the peer's REP handed over (both IDs) */
	C_EST,                      /* RTU sent or received */
};

struct gsi_conn {
	uint8_t used;               /* enum conn_st */
	uint8_t slot;
	uint16_t dev;
	uint32_t app_id, peer_id, peer_qpn;
	uint8_t gid[16];
};

static struct {
	rte_spinlock_t lock;
	struct gsi_conn conn[GSI_CONNS];
	uint32_t conn_next;         /* where a new one goes when the table is full */
	unsigned int next_slot;     /* slot allocation starts after this one */
	struct dpvd_client *owner[GSI_SLOTS];
	uint32_t qpn[GSI_SLOTS][DPV_MAX_PORTS];
	struct gsi_listen lis[GSI_LISTENS];
	uint64_t to_listener, to_slot, to_fallback, dropped, tx_refused;
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

static unsigned int slot_of_qpn(unsigned int dev, uint32_t qpn)
{
	for (unsigned int s = 1; s < GSI_SLOTS; s++)
		if (g_gsi.qpn[s][dev] == qpn)
			return s;
	return 0;
}

static struct gsi_conn *conn_new(unsigned int dev, unsigned int s, const uint8_t gid[16], enum conn_st st)
{
	struct gsi_conn *c = NULL, *own = NULL;
	unsigned int n = 0;
	for (unsigned int i = 0; i < GSI_CONNS; i++) {
		struct gsi_conn *e = &g_gsi.conn[i];
		if (!e->used && !c)
			c = e;
		if (e->used && e->slot == s && n++ == 0)
			own = e;
	}
	if (n >= GSI_CONNS_PER_PROCESS)
		c = own; /* one process does not push the others' out: its own oldest goes */
	if (!c)
		c = &g_gsi.conn[g_gsi.conn_next++ % GSI_CONNS]; /* full: an old one is forgotten */
	*c = (struct gsi_conn){.used = (uint8_t)st, .slot = (uint8_t)s, .dev = (uint16_t)dev};
	memcpy(c->gid, gid, 16);
	return c;
}

/* The connection of slot s by its comm ID (app_id != 0), or by the peer's
 * comm ID and GID. */
static struct gsi_conn *conn_find(unsigned int dev, unsigned int s, uint32_t app_id, uint32_t peer_id,
				  const uint8_t gid[16])
{
	for (unsigned int i = 0; i < GSI_CONNS; i++) {
		struct gsi_conn *c = &g_gsi.conn[i];
		if (c->used && c->dev == dev && c->slot == s &&
		    (app_id ? c->app_id == app_id : c->peer_id == peer_id && !memcmp(c->gid, gid, 16)))
			return c;
	}
	return NULL;
}

/* What a MAD from gid to slot s tells of its connections. */
static void track_rx(unsigned int dev, unsigned int s, const uint8_t gid[16], const struct dpv_cm_mad *m)
{
	struct gsi_conn *c;
	switch (m->hdr.attr_id) {
	case DPV_CM_ATTR_REQ: /* to a listener (duplicates once) */
		if (m->req.transport_service_type == DPV_CM_TST_RC &&
		    !conn_find(dev, s, 0, m->req.local_comm_id, gid)) {
			c = conn_new(dev, s, gid, C_REQ_RCVD);
			c->peer_id = m->req.local_comm_id;
			c->peer_qpn = m->req.local_qpn;
		}
		break;
	case DPV_CM_ATTR_REP:
		c = conn_find(dev, s, m->rep.remote_comm_id, 0, gid);
		c = c ? c : conn_new(dev, s, gid, C_REP_RCVD);
		c->used = c->used == C_EST ? C_EST : C_REP_RCVD;
		c->app_id = m->rep.remote_comm_id;
		c->peer_id = m->rep.local_comm_id;
		c->peer_qpn = m->rep.local_qpn;
		break;
	case DPV_CM_ATTR_RTU:
		c = conn_find(dev, s, m->rtu.remote_comm_id, 0, gid);
		c = c ? c : conn_find(dev, s, 0, m->rtu.local_comm_id, gid);
		if (c) {
			c->app_id = m->rtu.remote_comm_id;
			c->used = C_EST;
		}
		break;
	case DPV_CM_ATTR_REJ: /* comm ID 0 from REQ_SENT: the sender's names it */
		c = m->rej.remote_comm_id ? conn_find(dev, s, m->rej.remote_comm_id, 0, gid) :
		    conn_find(dev, s, 0, m->rej.local_comm_id, gid);
		if (c)
			c->used = C_FREE;
		break;
	case DPV_CM_ATTR_DREQ:
	case DPV_CM_ATTR_DREP:
		c = conn_find(dev, s, m->hdr.attr_id == DPV_CM_ATTR_DREQ ? m->dreq.remote_comm_id :
			      m->drep.remote_comm_id, 0, gid);
		if (c)
			c->used = C_FREE;
		break;
	default:
		break;
	}
}

/* What a MAD slot s sends to gid tells of its connections. */
static void track_tx(unsigned int dev, unsigned int s, const uint8_t gid[16], const struct dpv_cm_mad *m)
{
	struct gsi_conn *c;
	switch (m->hdr.attr_id) {
	case DPV_CM_ATTR_REQ: /* retransmissions once */
		if (m->req.transport_service_type == DPV_CM_TST_RC && !conn_find(dev, s, m->req.local_comm_id, 0, gid))
			conn_new(dev, s, gid, C_REQ_SENT)->app_id = m->req.local_comm_id;
		break;
	case DPV_CM_ATTR_REP:
		c = conn_find(dev, s, 0, m->rep.remote_comm_id, gid);
		if (c && c->used == C_REQ_RCVD) {
			c->app_id = m->rep.local_comm_id;
			c->used = C_REP_SENT;
		}
		break;
	case DPV_CM_ATTR_RTU:
		c = conn_find(dev, s, m->rtu.local_comm_id, 0, gid);
		if (c)
			c->used = C_EST;
		break;
	case DPV_CM_ATTR_REJ: /* from REQ_RCVD its comm ID is 0: the peer's names it */
		c = m->rej.local_comm_id ? conn_find(dev, s, m->rej.local_comm_id, 0, gid) :
		    conn_find(dev, s, 0, m->rej.remote_comm_id, gid);
		if (c)
			c->used = C_FREE;
		break;
	case DPV_CM_ATTR_DREQ: /* its disconnection is under way: nothing left to send for it */
	case DPV_CM_ATTR_DREP:
		c = conn_find(dev, s, m->hdr.attr_id == DPV_CM_ATTR_DREQ ? m->dreq.local_comm_id :
			      m->drep.local_comm_id, 0, gid);
		if (c)
			c->used = C_FREE;
		break;
	default:
		break;
	}
}

/* The GSI QP a decoded CM MAD goes to (0: nobody claims it). */
static uint32_t route(unsigned int dev, const uint8_t gid[16], const struct dpv_cm_mad *m)
{
	uint32_t qpn, id;
	switch (m->hdr.attr_id) {
	case DPV_CM_ATTR_REQ:
		qpn = by_service(dev, m->req.service_id);
		if (qpn)
			track_rx(dev, slot_of_qpn(dev, qpn), gid, m);
		g_gsi.to_listener += qpn != 0;
		return qpn;
	case DPV_CM_ATTR_SIDR_REQ:
		qpn = by_service(dev, m->sidr_req.service_id);
		g_gsi.to_listener += qpn != 0;
		return qpn;
	case DPV_CM_ATTR_SIDR_REP: id = m->sidr_rep.request_id; break;
	case DPV_CM_ATTR_REP: id = m->rep.remote_comm_id; break;
	case DPV_CM_ATTR_RTU: id = m->rtu.remote_comm_id; break;
	case DPV_CM_ATTR_REJ:
		id = m->rej.remote_comm_id;
		if (!id) { /* from REQ_SENT ("timeout"): the receiver knows the sender's comm ID */
			for (unsigned int i = 0; i < GSI_CONNS && !id; i++) {
				const struct gsi_conn *c = &g_gsi.conn[i];
				if (c->used && c->dev == dev && c->peer_id == m->rej.local_comm_id &&
				    !memcmp(c->gid, gid, 16))
					id = (uint32_t)c->slot << GSI_SLOT_SHIFT;
			}
		}
		break;
	case DPV_CM_ATTR_MRA: id = m->mra.remote_comm_id; break;
	case DPV_CM_ATTR_DREQ: id = m->dreq.remote_comm_id; break;
	case DPV_CM_ATTR_DREP: id = m->drep.remote_comm_id; break;
	default: return 0;
	}
	unsigned int s = id >> GSI_SLOT_SHIFT;
	qpn = g_gsi.qpn[s][dev];
	if (qpn)
		track_rx(dev, s, gid, m);
	g_gsi.to_slot += qpn != 0;
	return qpn;
}

/* The engine's GSI demultiplexer (dpv_gsi_demux_fn). */
static uint32_t gsi_demux(void *arg, unsigned int dev, const uint8_t sgid[16], const uint8_t *mad, uint32_t len)
{
	(void)arg;
	if (dev >= DPV_MAX_PORTS)
		return 0;
	struct dpv_cm_mad m;
	bool cm = dpv_cm_mad_decode(mad, len, &m) == 0;
	uint32_t qpn = 0;
	rte_spinlock_lock(&g_gsi.lock);
	if (cm)
		qpn = route(dev, sgid, &m);
	if (!qpn) {
		qpn = fallback(dev);
		g_gsi.to_fallback += qpn != 0;
		g_gsi.dropped += qpn == 0;
	}
	rte_spinlock_unlock(&g_gsi.lock);
	return qpn;
}

/* The local comm ID a CM MAD carries as its sender's (0: none to check). */
static uint32_t sender_id(const struct dpv_cm_mad *m)
{
	switch (m->hdr.attr_id) {
	case DPV_CM_ATTR_REQ: return m->req.local_comm_id;
	case DPV_CM_ATTR_MRA: return m->mra.local_comm_id;
	case DPV_CM_ATTR_REJ: return m->rej.local_comm_id; /* 0 from REQ_RCVD (as Linux) */
	case DPV_CM_ATTR_REP: return m->rep.local_comm_id;
	case DPV_CM_ATTR_RTU: return m->rtu.local_comm_id;
	case DPV_CM_ATTR_DREQ: return m->dreq.local_comm_id;
	case DPV_CM_ATTR_DREP: return m->drep.local_comm_id;
	case DPV_CM_ATTR_SIDR_REQ: return m->sidr_req.request_id;
	default: return 0; /* SIDR_REP: the request ID is the peer's */
	}
}

/* The engine's GSI send filter (dpv_gsi_tx_fn): an application's GSI QP
 * sends well-formed CM MADs whose own comm ID is in its range, nothing
 * else (it cannot speak for another process' connections, nor send other
 * management classes from QP 1); the daemon's endpoint (slot 1) anything. */
static bool gsi_tx(void *arg, unsigned int dev, uint32_t qpn, const uint8_t dgid[16], const uint8_t *mad, uint32_t len)
{
	(void)arg;
	if (dev >= DPV_MAX_PORTS)
		return false;
	struct dpv_cm_mad m;
	bool cm = dpv_cm_mad_decode(mad, len, &m) == 0;
	rte_spinlock_lock(&g_gsi.lock);
	unsigned int s = slot_of_qpn(dev, qpn);
	uint32_t id = cm ? sender_id(&m) : 0;
	bool self = s && g_gsi.owner[s] == dpvd_cm_self();
	bool ok = self || (cm && s && (!id || id >> GSI_SLOT_SHIFT == s));
	g_gsi.tx_refused += !ok;
	if (ok && !self && cm)
		track_tx(dev, s, dgid, &m);
	rte_spinlock_unlock(&g_gsi.lock);
	return ok;
}

void dpvd_gsi_init(void)
{
	dpv_host_gsi_demux(gsi_demux, gsi_tx, NULL);
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
		/* next fit: a slot freed a moment ago is the last one taken again, so
		 * that late MADs for a dead process' comm IDs rarely meet a new one */
		e = -ENOSPC;
		for (unsigned int k = 0; k < GSI_SLOTS - 1 && e; k++) {
			unsigned int s = 1 + (g_gsi.next_slot + k) % (GSI_SLOTS - 1);
			if (!g_gsi.owner[s]) {
				g_gsi.owner[s] = c;
				c->gsi_slot = (uint8_t)s;
				g_gsi.next_slot = s; /* the one after s next time */
				e = 0;
			}
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

/* What Linux's CM sends (cm_destroy_id) for a connection of a process that
 * goes away, through the endpoint's CM runtime: 1 when sent. */
static int teardown(const struct gsi_conn *c)
{
	static const enum dpv_cmrt_orphan_state st[] = {
		[C_REQ_RCVD] = DPV_CMRT_ORPHAN_REQ_RCVD, [C_REP_SENT] = DPV_CMRT_ORPHAN_REP_SENT,
		[C_REQ_SENT] = DPV_CMRT_ORPHAN_REQ_SENT, [C_REP_RCVD] = DPV_CMRT_ORPHAN_REP_RCVD,
		[C_EST] = DPV_CMRT_ORPHAN_ESTABLISHED};
	if (c->used == C_FREE || c->used > C_EST)
		return 0;
	struct dpv_cmrt_orphan o = {.state = st[c->used], .local_id = c->app_id, .remote_id = c->peer_id,
				    .remote_qpn = c->peer_qpn};
	memcpy(o.gid, c->gid, sizeof(o.gid));
	return dpvd_cm_abandon(c->dev, &o) == 0;
}

void dpvd_gsi_client_gone(struct dpvd_client *c)
{
	if (!c->gsi_slot)
		return;
	static struct gsi_conn mine[GSI_CONNS];
	unsigned int n = 0;
	rte_spinlock_lock(&g_gsi.lock);
	memset(g_gsi.qpn[c->gsi_slot], 0, sizeof(g_gsi.qpn[c->gsi_slot]));
	g_gsi.owner[c->gsi_slot] = NULL;
	for (unsigned int i = 0; i < GSI_CONNS; i++)
		if (g_gsi.conn[i].used && g_gsi.conn[i].slot == c->gsi_slot) {
			mine[n++] = g_gsi.conn[i];
			g_gsi.conn[i].used = 0;
		}
	rte_spinlock_unlock(&g_gsi.lock);
	unsigned int dreq = 0, rej = 0, failed = 0;
	for (unsigned int i = 0; i < n; i++) { /* on the control thread, as every use of the endpoint */
		if (!teardown(&mine[i]))
			failed++;
		else if (mine[i].used == C_EST)
			dreq++;
		else
			rej++;
	}
	if (n)
		DPVD_LOG(INFO, "application pid %d gone: DREQ sent for %u connection(s), REJ for %u being set up%s",
			 (int)c->pid, dreq, rej, failed ? " (some could not be sent)" : "");
	c->gsi_slot = 0;
}

int dpvd_gsi_listen(struct dpvd_client *c, struct dpv_shm_gsi_listen *l)
{
	struct dpvd_obj *o = dpvd_obj_get(c, DPV_OBJ_QP, l->qpn, true);
	if (!o || !o->gsi || l->on > 1)
		return -EINVAL;
	int e = l->on ? -ENOSPC : -ENOENT;
	unsigned int mine = 0;
	rte_spinlock_lock(&g_gsi.lock);
	for (unsigned int i = 0; l->on && i < GSI_LISTENS; i++)
		mine += g_gsi.lis[i].qpn && g_gsi.owner[slot_of_qpn(g_gsi.lis[i].dev, g_gsi.lis[i].qpn)] == c;
	if (l->on && by_service(o->dev, l->service_id)) {
		e = -EADDRINUSE;
	} else if (l->on && mine >= GSI_LISTENS_PER_PROCESS) {
		e = -ENOSPC; /* one process does not take every listen of the daemon */
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

void dpvd_gsi_log_stats(void)
{
	rte_spinlock_lock(&g_gsi.lock);
	uint64_t l = g_gsi.to_listener, s = g_gsi.to_slot, f = g_gsi.to_fallback, d = g_gsi.dropped,
		 r = g_gsi.tx_refused;
	rte_spinlock_unlock(&g_gsi.lock);
	if (l || s || f || d || r)
		DPVD_LOG(INFO, "QP 1: %lu MADs to listeners, %lu by comm ID, %lu to the daemon's endpoint, "
			 "%lu dropped; %lu sends refused", (unsigned long)l, (unsigned long)s, (unsigned long)f,
			 (unsigned long)d, (unsigned long)r);
}
