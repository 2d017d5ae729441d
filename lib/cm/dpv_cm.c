/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * CM state machine (dpv_cm.h): agent, ids, the messages the user sends, the
 * retransmission and TIMEWAIT timers. Receiving is in dpv_cm_rx.c.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dpv_cm_priv.h"

uint64_t dpv_cm_timeout_ns(uint8_t t)
{
	if (t > 31)
		t = 31;
	return 4096ull << t;
}

const char *dpv_cm_state_name(enum dpv_cm_state s)
{
	static const char *const names[] = {
		"IDLE", "LISTEN", "REQ_SENT", "REQ_RCVD", "MRA_REQ_SENT", "MRA_REQ_RCVD",
		"REP_SENT", "REP_RCVD", "MRA_REP_SENT", "MRA_REP_RCVD", "ESTABLISHED",
		"DREQ_SENT", "DREQ_RCVD", "TIMEWAIT", "SIDR_REQ_SENT", "SIDR_REQ_RCVD",
	};

	if ((unsigned int)s < sizeof(names) / sizeof(names[0]))
		return names[s];
	return "unknown";
}

int dpv_cm_agent_init(struct dpv_cm_agent *agent, const struct dpv_cm_agent_cfg *cfg)
{
	if (!agent || !cfg || !cfg->send || !cfg->event)
		return -EINVAL;
	memset(agent, 0, sizeof(*agent));
	agent->cfg = *cfg;
	if (!agent->cfg.max_ids)
		agent->cfg.max_ids = 64;
	if (!agent->cfg.timewait_ns)
		agent->cfg.timewait_ns = DPV_CM_TIMEWAIT_NS_DEFAULT;
	agent->nids = agent->cfg.max_ids;
	agent->ids = calloc(agent->nids, sizeof(*agent->ids));
	if (!agent->ids)
		return -ENOMEM;
	agent->rng = cfg->seed ^ 0x6a09e667f3bcc909ull;
	return 0;
}

void dpv_cm_agent_fini(struct dpv_cm_agent *agent)
{
	if (!agent)
		return;
	free(agent->ids);
	agent->ids = NULL;
	agent->nids = 0;
}

/* splitmix64 */
static uint64_t cm_rand(struct dpv_cm_agent *a)
{
	uint64_t z = (a->rng += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static bool cm_local_id_used(const struct dpv_cm_agent *a, uint32_t lid)
{
	for (uint32_t i = 0; i < a->nids; i++)
		if (a->ids[i].in_use && a->ids[i].local_id == lid)
			return true;
	return false;
}

struct dpv_cm_id *cm_id_alloc(struct dpv_cm_agent *a, void *ctx)
{
	struct dpv_cm_id *id = NULL;
	uint32_t lid;

	for (uint32_t i = 0; i < a->nids && !id; i++)
		if (!a->ids[i].in_use)
			id = &a->ids[i];
	if (!id)
		return NULL;
	uint32_t mask = a->cfg.id_mask;
	do
		lid = ((uint32_t)cm_rand(a) & ~mask) | (a->cfg.id_prefix & mask);
	while (!(lid & ~mask) || cm_local_id_used(a, lid));
	memset(id, 0, sizeof(*id));
	id->agent = a;
	id->ctx = ctx;
	id->in_use = true;
	id->local_id = lid;
	id->state = DPV_CM_IDLE;
	id->deadline = DPV_CM_NO_DEADLINE;
	return id;
}

struct dpv_cm_id *dpv_cm_create_id(struct dpv_cm_agent *agent, void *ctx)
{
	struct dpv_cm_id *id;

	if (!agent) {
		errno = EINVAL;
		return NULL;
	}
	id = cm_id_alloc(agent, ctx);
	if (!id)
		errno = ENOMEM;
	return id;
}

struct dpv_cm_id *dpv_cm_listen(struct dpv_cm_agent *agent, uint64_t service_id, void *ctx)
{
	struct dpv_cm_id *id;

	if (!agent) {
		errno = EINVAL;
		return NULL;
	}
	for (uint32_t i = 0; i < agent->nids; i++) {
		id = &agent->ids[i];
		if (id->in_use && id->state == DPV_CM_LISTEN && id->service_id == service_id) {
			errno = EADDRINUSE;
			return NULL;
		}
	}
	id = dpv_cm_create_id(agent, ctx);
	if (!id)
		return NULL;
	int rc = agent->cfg.listen ? agent->cfg.listen(agent->cfg.arg, service_id, true) : 0;
	if (rc < 0) {
		id->in_use = false;
		errno = -rc;
		return NULL;
	}
	id->state = DPV_CM_LISTEN;
	id->service_id = service_id;
	return id;
}

void cm_id_arm(struct dpv_cm_id *id, uint64_t deadline)
{
	id->deadline = deadline;
	if (deadline < id->agent->next_due)
		id->agent->next_due = deadline;
}

void cm_id_stop(struct dpv_cm_id *id)
{
	id->retrans = false;
	id->deadline = DPV_CM_NO_DEADLINE;
}

void cm_id_timewait(struct dpv_cm_id *id, uint64_t now)
{
	cm_id_stop(id);
	id->state = DPV_CM_TIMEWAIT;
	cm_id_arm(id, now + id->agent->cfg.timewait_ns);
}

void cm_id_idle(struct dpv_cm_id *id)
{
	cm_id_stop(id);
	if (id->destroyed) {
		id->in_use = false;
		return;
	}
	id->state = DPV_CM_IDLE;
}

uint64_t cm_new_tid(const struct dpv_cm_id *id)
{
	return (uint64_t)id->agent->cfg.agent_no << 32 | id->local_id;
}

int cm_copy_pd(uint8_t *dst, size_t cap, const void *pd, size_t len)
{
	if (len > cap || (len && !pd))
		return -EINVAL;
	if (len)
		memcpy(dst, pd, len);
	return 0;
}

static int cm_xmit(struct dpv_cm_agent *a, const struct dpv_cm_addr *to, const uint8_t *mad)
{
	int ret = a->cfg.send(a->cfg.arg, to, mad);

	a->stats.tx++;
	if (ret)
		a->stats.tx_errors++;
	return ret;
}

int cm_send_raw(struct dpv_cm_agent *a, const struct dpv_cm_addr *to, struct dpv_cm_mad *m)
{
	uint8_t out[DPV_MAD_SIZE];
	int ret = dpv_cm_mad_encode(m, out);

	return ret ? ret : cm_xmit(a, to, out);
}

int cm_id_send(struct dpv_cm_id *id, struct dpv_cm_mad *m, bool retrans, uint64_t now)
{
	int ret = dpv_cm_mad_encode(m, id->out);

	if (ret) {
		id->out_valid = false;
		return ret;
	}
	id->out_valid = true;
	id->out_attr = m->hdr.attr_id;
	cm_id_stop(id);
	if (retrans) {
		id->retrans = true;
		id->retries = 0;
		id->timeout_ns = dpv_cm_timeout_ns(id->peer_resp_timeout);
		cm_id_arm(id, now + id->timeout_ns);
	}
	return cm_xmit(id->agent, &id->peer, id->out);
}

int cm_id_resend(struct dpv_cm_id *id)
{
	if (!id->out_valid)
		return 0;
	id->agent->stats.retransmits++;
	return cm_xmit(id->agent, &id->peer, id->out);
}

void cm_event(struct dpv_cm_id *id, struct dpv_cm_event *ev)
{
	ev->id = id;
	if (ev->mad) {
		ev->private_data = dpv_cm_mad_private_data((struct dpv_cm_mad *)ev->mad, &ev->private_len);
	}
	id->agent->cfg.event(id->agent->cfg.arg, ev);
}

/* ---- what the user sends ---- */

static void cm_fill_path(struct dpv_cm_path *path, const struct dpv_cm_req_param *p)
{
	path->local_lid = 0xffff;
	path->remote_lid = 0xffff;
	memcpy(path->local_gid, p->local_gid, 16);
	memcpy(path->remote_gid, p->peer.gid, 16);
	path->flow_label = p->flow_label;
	path->traffic_class = p->traffic_class;
	path->hop_limit = p->hop_limit;
	path->local_ack_timeout = p->local_ack_timeout;
}

static int cm_fill_req(struct dpv_cm_id *id, struct dpv_cm_mad *m, const struct dpv_cm_req_param *p)
{
	struct dpv_cm_req *r = &m->req;

	dpv_cm_mad_init(m, DPV_CM_ATTR_REQ, cm_new_tid(id));
	r->local_comm_id = id->local_id;
	r->service_id = p->service_id;
	r->local_ca_guid = id->agent->cfg.ca_guid;
	r->local_qpn = p->qpn;
	r->initiator_depth = p->initiator_depth;
	r->remote_cm_response_timeout = p->remote_cm_response_timeout;
	r->transport_service_type = p->xrc ? DPV_CM_TST_EXTENDED : DPV_CM_TST_RC;
	r->extended_transport_type = p->xrc ? DPV_CM_EXT_TRANSPORT_XRC : 0;
	r->starting_psn = p->starting_psn;
	r->local_cm_response_timeout = p->local_cm_response_timeout;
	r->pkey = 0xffff;
	r->path_mtu = p->path_mtu;
	r->max_cm_retries = p->max_cm_retries;
	if (!p->xrc) {
		r->responder_resources = p->responder_resources;
		r->retry_count = p->retry_count;
		r->rnr_retry_count = p->rnr_retry_count;
		r->srq = p->srq;
	}
	cm_fill_path(&r->primary, p);
	return cm_copy_pd(r->private_data, sizeof(r->private_data), p->private_data, p->private_len);
}

int dpv_cm_send_req(struct dpv_cm_id *id, const struct dpv_cm_req_param *p, uint64_t now)
{
	struct dpv_cm_mad m;
	int ret;

	if (!id || !p)
		return -EINVAL;
	if (id->state != DPV_CM_IDLE)
		return -EISCONN;
	ret = cm_fill_req(id, &m, p);
	if (ret)
		return ret;
	id->peer = p->peer;
	id->service_id = p->service_id;
	id->local_qpn = p->qpn;
	id->xrc = p->xrc != 0;
	id->peer_resp_timeout = p->remote_cm_response_timeout;
	id->max_cm_retries = p->max_cm_retries;
	id->tid = m.hdr.tid;
	ret = cm_id_send(id, &m, true, now);
	if (ret == -EINVAL && !id->out_valid)
		return ret;
	id->state = DPV_CM_REQ_SENT;
	return ret;
}

int dpv_cm_send_rep(struct dpv_cm_id *id, const struct dpv_cm_rep_param *p, uint64_t now)
{
	struct dpv_cm_mad m;
	struct dpv_cm_rep *r = &m.rep;
	int ret;

	if (!id || !p)
		return -EINVAL;
	if (id->state != DPV_CM_REQ_RCVD && id->state != DPV_CM_MRA_REQ_SENT)
		return -EPROTO;
	dpv_cm_mad_init(&m, DPV_CM_ATTR_REP, id->tid);
	r->local_comm_id = id->local_id;
	r->remote_comm_id = id->remote_id;
	r->starting_psn = p->starting_psn;
	r->responder_resources = p->responder_resources;
	r->target_ack_delay = p->target_ack_delay;
	r->failover_accepted = p->failover_accepted;
	r->rnr_retry_count = p->rnr_retry_count;
	if (p->xrc) {
		r->local_eecn = p->qpn;
		r->srq = 1;
	} else {
		r->local_qpn = p->qpn;
		r->initiator_depth = p->initiator_depth;
		r->srq = p->srq;
	}
	r->local_ca_guid = id->agent->cfg.ca_guid;
	ret = cm_copy_pd(r->private_data, sizeof(r->private_data), p->private_data, p->private_len);
	if (ret)
		return ret;
	id->local_qpn = p->qpn;
	ret = cm_id_send(id, &m, true, now);
	if (ret == -EINVAL && !id->out_valid)
		return ret;
	id->state = DPV_CM_REP_SENT;
	return ret;
}

int dpv_cm_send_rtu(struct dpv_cm_id *id, const void *pd, uint8_t len)
{
	struct dpv_cm_mad m;
	int ret;

	if (!id)
		return -EINVAL;
	if (id->state != DPV_CM_REP_RCVD && id->state != DPV_CM_MRA_REP_SENT)
		return -EPROTO;
	dpv_cm_mad_init(&m, DPV_CM_ATTR_RTU, id->tid);
	m.rtu.local_comm_id = id->local_id;
	m.rtu.remote_comm_id = id->remote_id;
	ret = cm_copy_pd(m.rtu.private_data, sizeof(m.rtu.private_data), pd, len);
	if (ret)
		return ret;
	id->state = DPV_CM_ESTABLISHED;
	return cm_id_send(id, &m, false, 0);
}

/* REJ's message rejected and local comm ID by state (Linux cm_format_rej). */
static uint8_t cm_rej_msg(const struct dpv_cm_id *id, uint32_t *local_id)
{
	*local_id = id->state == DPV_CM_REQ_RCVD ? 0 : id->local_id;
	switch (id->state) {
	case DPV_CM_REQ_RCVD:
	case DPV_CM_MRA_REQ_SENT:
		return DPV_CM_MSG_REQ;
	case DPV_CM_REP_RCVD:
	case DPV_CM_MRA_REP_SENT:
		return DPV_CM_MSG_REP;
	default:
		return DPV_CM_MSG_OTHER;
	}
}

int dpv_cm_send_rej(struct dpv_cm_id *id, uint16_t reason, const void *ari, uint8_t ari_len,
		    const void *pd, uint8_t len)
{
	struct dpv_cm_mad m;
	enum dpv_cm_state s;
	int ret;

	if (!id || ari_len > DPV_CM_REJ_ARI_LEN)
		return -EINVAL;
	s = id->state;
	if (s < DPV_CM_REQ_SENT || s > DPV_CM_MRA_REP_RCVD)
		return -EPROTO;
	dpv_cm_mad_init(&m, DPV_CM_ATTR_REJ, id->tid);
	m.rej.message_rejected = cm_rej_msg(id, &m.rej.local_comm_id);
	m.rej.remote_comm_id = id->remote_id;
	m.rej.reason = reason;
	m.rej.ari_length = ari_len;
	if (cm_copy_pd(m.rej.ari, sizeof(m.rej.ari), ari, ari_len) ||
	    cm_copy_pd(m.rej.private_data, sizeof(m.rej.private_data), pd, len))
		return -EINVAL;
	ret = cm_id_send(id, &m, false, 0);
	/* Linux cm_send_rej_locked: TIMEWAIT once our REP went out, else IDLE */
	if (s == DPV_CM_REP_SENT || s == DPV_CM_MRA_REP_RCVD)
		cm_id_timewait(id, id->agent->now);
	else
		cm_id_idle(id);
	return ret;
}

int dpv_cm_send_mra(struct dpv_cm_id *id, uint8_t service_timeout, const void *pd, uint8_t len)
{
	bool delay = (service_timeout & DPV_CM_MRA_FLAG_DELAY) != 0;
	struct dpv_cm_mad m;
	bool req;
	int ret;

	service_timeout &= (uint8_t)~DPV_CM_MRA_FLAG_DELAY;
	if (!id || service_timeout > 31)
		return -EINVAL;
	if (id->state != DPV_CM_REQ_RCVD && id->state != DPV_CM_REP_RCVD)
		return -EPROTO;
	req = id->state == DPV_CM_REQ_RCVD;
	dpv_cm_mad_init(&m, DPV_CM_ATTR_MRA, id->tid);
	m.mra.local_comm_id = id->local_id;
	m.mra.remote_comm_id = id->remote_id;
	m.mra.message_mraed = req ? DPV_CM_MSG_REQ : DPV_CM_MSG_REP;
	m.mra.service_timeout = service_timeout;
	ret = cm_copy_pd(m.mra.private_data, sizeof(m.mra.private_data), pd, len);
	if (ret)
		return ret;
	id->state = req ? DPV_CM_MRA_REQ_SENT : DPV_CM_MRA_REP_SENT;
	if (!delay)
		return cm_id_send(id, &m, false, 0);
	/* kept for the duplicates (cm_id_resend), not sent now */
	ret = dpv_cm_mad_encode(&m, id->out);
	id->out_valid = ret == 0;
	id->out_attr = DPV_CM_ATTR_MRA;
	cm_id_stop(id);
	return ret;
}

int dpv_cm_establish(struct dpv_cm_id *id)
{
	if (!id)
		return -EINVAL;
	if (id->state == DPV_CM_ESTABLISHED)
		return -EISCONN;
	if (id->state != DPV_CM_REP_SENT && id->state != DPV_CM_MRA_REP_RCVD)
		return -EINVAL;
	cm_id_stop(id);
	id->state = DPV_CM_ESTABLISHED;
	return 0;
}

uint32_t dpv_cm_ids_in_use(const struct dpv_cm_agent *agent)
{
	uint32_t n = 0;

	for (uint32_t i = 0; agent && i < agent->nids; i++)
		n += agent->ids[i].in_use;
	return n;
}

int dpv_cm_send_dreq(struct dpv_cm_id *id, const void *pd, uint8_t len, uint64_t now)
{
	struct dpv_cm_mad m;
	int ret;

	if (!id)
		return -EINVAL;
	if (id->state != DPV_CM_ESTABLISHED)
		return -EPROTO;
	id->tid = cm_new_tid(id);
	dpv_cm_mad_init(&m, DPV_CM_ATTR_DREQ, id->tid);
	m.dreq.local_comm_id = id->local_id;
	m.dreq.remote_comm_id = id->remote_id;
	m.dreq.remote_qpn_eecn = id->remote_qpn;
	ret = cm_copy_pd(m.dreq.private_data, sizeof(m.dreq.private_data), pd, len);
	if (ret)
		return ret;
	id->state = DPV_CM_DREQ_SENT;
	return cm_id_send(id, &m, true, now);
}

int dpv_cm_send_drep(struct dpv_cm_id *id, const void *pd, uint8_t len, uint64_t now)
{
	struct dpv_cm_mad m;
	int ret;

	if (!id)
		return -EINVAL;
	if (id->state != DPV_CM_DREQ_RCVD)
		return -EPROTO;
	dpv_cm_mad_init(&m, DPV_CM_ATTR_DREP, id->tid);
	m.drep.local_comm_id = id->local_id;
	m.drep.remote_comm_id = id->remote_id;
	ret = cm_copy_pd(m.drep.private_data, sizeof(m.drep.private_data), pd, len);
	if (ret)
		return ret;
	ret = cm_id_send(id, &m, false, 0);
	cm_id_timewait(id, now);
	return ret;
}

int dpv_cm_sidr_req(struct dpv_cm_id *id, const struct dpv_cm_req_param *p, uint64_t now)
{
	struct dpv_cm_mad m;
	int ret;

	if (!id || !p)
		return -EINVAL;
	if (id->state != DPV_CM_IDLE)
		return -EISCONN;
	dpv_cm_mad_init(&m, DPV_CM_ATTR_SIDR_REQ, cm_new_tid(id));
	m.sidr_req.request_id = id->local_id;
	m.sidr_req.pkey = 0xffff;
	m.sidr_req.service_id = p->service_id;
	ret = cm_copy_pd(m.sidr_req.private_data, sizeof(m.sidr_req.private_data),
			 p->private_data, p->private_len);
	if (ret)
		return ret;
	id->peer = p->peer;
	id->service_id = p->service_id;
	id->peer_resp_timeout = p->remote_cm_response_timeout;
	id->max_cm_retries = p->max_cm_retries;
	id->tid = m.hdr.tid;
	id->state = DPV_CM_SIDR_REQ_SENT;
	return cm_id_send(id, &m, true, now);
}

int dpv_cm_sidr_rep(struct dpv_cm_id *id, uint8_t status, uint32_t qpn, uint32_t qkey,
		    const void *pd, uint8_t len)
{
	struct dpv_cm_mad m;
	int ret;

	if (!id)
		return -EINVAL;
	if (id->state != DPV_CM_SIDR_REQ_RCVD)
		return -EPROTO;
	dpv_cm_mad_init(&m, DPV_CM_ATTR_SIDR_REP, id->tid);
	m.sidr_rep.request_id = id->remote_id;
	m.sidr_rep.status = status;
	m.sidr_rep.qpn = qpn;
	m.sidr_rep.qkey = qkey;
	m.sidr_rep.service_id = id->service_id;
	ret = cm_copy_pd(m.sidr_rep.private_data, sizeof(m.sidr_rep.private_data), pd, len);
	if (ret)
		return ret;
	ret = cm_id_send(id, &m, false, 0);
	cm_id_idle(id);
	return ret;
}

/* Linux cm_destroy_id: tell the peer, then free (now or after TIMEWAIT). */
void dpv_cm_destroy_id(struct dpv_cm_id *id)
{
	uint8_t guid[8];
	uint64_t g;

	if (!id || !id->in_use)
		return;
	id->destroyed = true;
	switch (id->state) {
	case DPV_CM_REQ_SENT:
	case DPV_CM_MRA_REQ_RCVD:
		g = id->agent->cfg.ca_guid;
		for (int i = 7; i >= 0; i--, g >>= 8)
			guid[i] = (uint8_t)g;
		dpv_cm_send_rej(id, DPV_CM_REJ_TIMEOUT, guid, sizeof(guid), NULL, 0);
		return;
	case DPV_CM_REQ_RCVD:
	case DPV_CM_MRA_REQ_SENT:
	case DPV_CM_REP_SENT:
	case DPV_CM_REP_RCVD:
	case DPV_CM_MRA_REP_SENT:
	case DPV_CM_MRA_REP_RCVD:
		dpv_cm_send_rej(id, DPV_CM_REJ_CONSUMER_DEFINED, NULL, 0, NULL, 0);
		return;
	case DPV_CM_ESTABLISHED:
		dpv_cm_send_dreq(id, NULL, 0, id->agent->now);
		cm_id_timewait(id, id->agent->now);
		return;
	case DPV_CM_DREQ_SENT:
		cm_id_timewait(id, id->agent->now);
		return;
	case DPV_CM_DREQ_RCVD:
		dpv_cm_send_drep(id, NULL, 0, id->agent->now);
		return;
	case DPV_CM_SIDR_REQ_RCVD:
		dpv_cm_sidr_rep(id, DPV_CM_SIDR_REJECT, 0, 0, NULL, 0);
		return;
	case DPV_CM_TIMEWAIT:
		return;
	case DPV_CM_LISTEN:
		if (id->agent->cfg.listen)
			id->agent->cfg.listen(id->agent->cfg.arg, id->service_id, false);
		cm_id_idle(id);
		return;
	default:
		cm_id_idle(id);
		return;
	}
}

/* ---- timers ---- */

static void cm_id_expired(struct dpv_cm_id *id, uint64_t now)
{
	struct dpv_cm_event ev = { .type = DPV_CM_EV_TIMEOUT };

	id->agent->stats.timeouts++;
	ev.timeout_attr = id->out_attr;
	cm_id_stop(id);
	if (id->state == DPV_CM_DREQ_SENT) {
		/* IBA 12.9.6.2: no DREP, disconnected anyway */
		cm_id_timewait(id, now);
		ev.type = DPV_CM_EV_DISCONNECTED;
	} else {
		cm_id_idle(id);
	}
	cm_event(id, &ev);
}

static void cm_id_timer(struct dpv_cm_id *id, uint64_t now)
{
	if (id->state == DPV_CM_TIMEWAIT) {
		struct dpv_cm_event ev = { .type = DPV_CM_EV_TIMEWAIT_EXIT };
		bool destroyed = id->destroyed;

		cm_id_idle(id);
		if (!destroyed)
			cm_event(id, &ev);
		return;
	}
	if (!id->retrans) {
		cm_id_stop(id);
		return;
	}
	if (id->retries >= id->max_cm_retries) {
		cm_id_expired(id, now);
		return;
	}
	id->retries++;
	id->timeout_ns = dpv_cm_timeout_ns(id->peer_resp_timeout);
	cm_id_arm(id, now + id->timeout_ns);
	cm_id_resend(id);
}

int dpv_cm_timer(struct dpv_cm_agent *agent, uint64_t now)
{
	int fired = 0;

	if (!agent)
		return -EINVAL;
	agent->now = now;
	if (now < agent->next_due)
		return 0; /* no deadline before next_due: no scan (a big table costs nothing idle) */
	/* recomputed below; a timer or event callback arming an id lowers it again */
	agent->next_due = DPV_CM_NO_DEADLINE;
	for (uint32_t i = 0; i < agent->nids; i++) {
		struct dpv_cm_id *id = &agent->ids[i];

		if (id->in_use && id->deadline <= now) {
			cm_id_timer(id, now);
			fired++;
		}
		if (id->in_use && id->deadline < agent->next_due)
			agent->next_due = id->deadline;
	}
	return fired;
}

uint64_t dpv_cm_next_deadline(const struct dpv_cm_agent *agent)
{
	uint64_t d = DPV_CM_NO_DEADLINE;

	if (!agent)
		return d;
	for (uint32_t i = 0; i < agent->nids; i++)
		if (agent->ids[i].in_use && agent->ids[i].deadline < d)
			d = agent->ids[i].deadline;
	return d;
}
