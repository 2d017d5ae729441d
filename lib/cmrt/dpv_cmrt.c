/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The CM runtime (dpv_cmrt_xport.h): lib/cm's agent for one port, on a
 * transport that sends MADs; the caller hands it the MADs it receives and
 * runs its timers. The only host of the agent: the GSI-QP runtime
 * (dpv_cmrt_qp.c) and dpverbsd's endpoint (apps/dpverbsd/dpvd_cm.c) are this
 * runtime on their transports. Also what is sent for a connection whose
 * owner went away (dpv_cmrt_abandon). lib/cm and libc only: no verbs call
 * here (dpv_cmrt.h only for the declaration of dpv_cmrt_agent).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dpv_cmrt.h"
#include "dpv_cmrt_priv.h"

_Static_assert(DPV_CMRT_MAD_SIZE == DPV_MAD_SIZE, "the MAD size of dpv_cmrt_answer.h is lib/cm's");
_Static_assert(DPV_CMRT_GSI_QKEY == DPV_GSI_QKEY, "the GSI Q_Key of dpv_cmrt_answer.h is lib/cm's");

#define GRH_LEN 40
#define AGENT_NO 2 /* the upper 32 bits of our TIDs, as Linux's ib_cm */

static const uint8_t v4map[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

/* The agent's send callback: the transport's, counted. */
static int cmrt_send(void *arg, const struct dpv_cm_addr *to, const uint8_t mad[DPV_MAD_SIZE])
{
	struct dpv_cmrt *rt = arg;
	int rc = rt->xport.send(rt->xport.arg, to->gid, to->qpn, mad);
	if (rc == 0)
		rt->stats.tx++;
	else if (rc == -EAGAIN)
		rt->stats.tx_full++;
	else
		rt->stats.tx_errors++;
	return rc;
}

static void cmrt_event(void *arg, const struct dpv_cm_event *ev)
{
	struct dpv_cmrt *rt = arg;
	if (rt->cfg.event)
		rt->cfg.event(rt->cfg.event_arg, ev);
}

static int cmrt_listen(void *arg, uint64_t service_id, bool on)
{
	struct dpv_cmrt *rt = arg;
	return rt->xport.listen ? rt->xport.listen(rt->xport.arg, service_id, on) : 0;
}

int dpv_cmrt_start(struct dpv_cmrt *rt, const struct dpv_cmrt_xport_cfg *cfg, const struct dpv_cmrt_xport *xport)
{
	if (!rt || !cfg || !xport || !xport->send)
		return -EINVAL;
	rt->xport = *xport;
	rt->cfg = *cfg;
	uint64_t seed = cfg->seed;
	if (!seed) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		seed = ((uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec) ^ (uintptr_t)rt;
	}
	struct dpv_cm_agent_cfg ac = {.ca_guid = cfg->ca_guid, .send = cmrt_send, .event = cmrt_event, .arg = rt,
				      .max_ids = cfg->max_ids, .seed = seed, .timewait_ns = cfg->timewait_ns,
				      .agent_no = AGENT_NO, .id_prefix = cfg->id_prefix, .id_mask = cfg->id_mask,
				      .listen = cmrt_listen};
	int rc = dpv_cm_agent_init(&rt->agent, &ac);
	rt->agent_ok = rc == 0;
	return rc;
}

struct dpv_cmrt *dpv_cmrt_open_xport(const struct dpv_cmrt_xport_cfg *cfg, const struct dpv_cmrt_xport *xport)
{
	if (!cfg || !xport || !xport->send) {
		errno = EINVAL;
		return NULL;
	}
	struct dpv_cmrt *rt = calloc(1, sizeof(*rt));
	if (!rt)
		return NULL;
	int rc = dpv_cmrt_start(rt, cfg, xport);
	if (rc) {
		free(rt);
		errno = -rc;
		return NULL;
	}
	return rt;
}

int dpv_cmrt_input(struct dpv_cmrt *rt, const uint8_t gid[16], uint32_t src_qp, const uint8_t *mad, size_t len,
		   uint64_t now)
{
	if (!rt || !gid || !mad)
		return -EINVAL;
	struct dpv_cm_addr from = {.qpn = src_qp, .qkey = DPV_GSI_QKEY};
	memcpy(from.gid, gid, sizeof(from.gid));
	rt->stats.rx++;
	return dpv_cm_rx(&rt->agent, &from, mad, len, now);
}

/* The sender of a received MAD from its GRH area. false: unusable. */
static bool grh_source(const uint8_t *grh, uint8_t gid[16])
{
	if ((grh[0] >> 4) == 6) { /* an IPv6 header: the GRH proper */
		memcpy(gid, grh + 8, 16);
		return true;
	}
	const uint8_t *ip4 = grh + 20; /* RoCEv2 over IPv4: the IPv4 header at 20 */
	if ((ip4[0] >> 4) != 4)
		return false;
	memcpy(gid, v4map, sizeof(v4map));
	memcpy(gid + 12, ip4 + 12, 4);
	return true;
}

int dpv_cmrt_input_grh(struct dpv_cmrt *rt, uint32_t src_qp, const uint8_t *buf, size_t len, uint64_t now)
{
	if (!rt || !buf)
		return -EINVAL;
	uint8_t gid[16];
	if (len <= GRH_LEN || !grh_source(buf, gid)) {
		rt->stats.rx_dropped++;
		return -EPROTO;
	}
	return dpv_cmrt_input(rt, gid, src_qp, buf + GRH_LEN, len - GRH_LEN, now);
}

int dpv_cmrt_timer(struct dpv_cmrt *rt, uint64_t now)
{
	return rt ? dpv_cm_timer(&rt->agent, now) : -EINVAL;
}

uint64_t dpv_cmrt_next_deadline(const struct dpv_cmrt *rt)
{
	return rt ? dpv_cm_next_deadline(&rt->agent) : DPV_CMRT_NO_DEADLINE;
}

int dpv_cmrt_abandon(struct dpv_cmrt *rt, const struct dpv_cmrt_orphan *o)
{
	if (!rt || !o || o->state > DPV_CMRT_ORPHAN_ESTABLISHED)
		return -EINVAL;
	struct dpv_cm_mad m;
	uint64_t tid = (uint64_t)AGENT_NO << 32 | (o->local_id ? o->local_id : o->remote_id);
	if (o->state == DPV_CMRT_ORPHAN_ESTABLISHED) {
		dpv_cm_mad_init(&m, DPV_CM_ATTR_DREQ, tid);
		m.dreq.local_comm_id = o->local_id;
		m.dreq.remote_comm_id = o->remote_id;
		m.dreq.remote_qpn_eecn = o->remote_qpn;
	} else {
		bool req = o->state == DPV_CMRT_ORPHAN_REQ_RCVD || o->state == DPV_CMRT_ORPHAN_REQ_SENT;
		dpv_cm_mad_init(&m, DPV_CM_ATTR_REJ, tid);
		m.rej.remote_comm_id = o->remote_id;          /* 0 from REQ_SENT */
		m.rej.local_comm_id = o->state == DPV_CMRT_ORPHAN_REQ_RCVD ? 0 : o->local_id;
		m.rej.message_rejected = req ? DPV_CM_MSG_REQ : DPV_CM_MSG_REP;
		m.rej.reason = DPV_CM_REJ_CONSUMER_DEFINED;
		if (o->state == DPV_CMRT_ORPHAN_REQ_SENT) { /* REJ "timeout", our CA GUID as ARI */
			uint64_t g = rt->cfg.ca_guid;
			m.rej.reason = DPV_CM_REJ_TIMEOUT;
			m.rej.ari_length = 8;
			for (int k = 7; k >= 0; k--, g >>= 8)
				m.rej.ari[k] = (uint8_t)g;
		}
	}
	uint8_t mad[DPV_MAD_SIZE];
	struct dpv_cm_addr to = {.qpn = DPV_GSI_QPN, .qkey = DPV_GSI_QKEY};
	memcpy(to.gid, o->gid, sizeof(to.gid));
	int rc = dpv_cm_mad_encode(&m, mad);
	return rc ? rc : cmrt_send(rt, &to, mad);
}

struct dpv_cm_agent *dpv_cmrt_agent(struct dpv_cmrt *rt)
{
	if (!rt) {
		errno = EINVAL;
		return NULL;
	}
	return &rt->agent;
}

int dpv_cmrt_stats(const struct dpv_cmrt *rt, struct dpv_cmrt_stats *st)
{
	if (!rt || !st)
		return -EINVAL;
	*st = rt->stats;
	return 0;
}

void dpv_cmrt_close(struct dpv_cmrt *rt)
{
	if (!rt)
		return;
	if (rt->agent_ok)
		dpv_cm_agent_fini(&rt->agent);
	if (rt->qp_fini)
		rt->qp_fini(rt);
	free(rt);
}
