/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * CM state machine, receive side (dpv_cm.h): one handler per message. The
 * duplicate and stale rules follow IBA 12.9.6 and Linux ib_cm (cm.c):
 *  - REQ with a known (remote comm ID, remote CA GUID): a duplicate; in
 *    MRA_REQ_SENT the MRA is resent, in TIMEWAIT the REQ is rejected as
 *    stale (REJ reason 10), otherwise it is dropped;
 *  - REQ from a (GID, QPN) another live connection uses: REJ stale;
 *  - REQ for no listener: REJ invalid service ID (8);
 *  - REP again in ESTABLISHED or MRA_REP_SENT: the RTU or MRA is resent;
 *  - DREQ in DREQ_SENT (crossed DREQs): DREQ_RCVD, the user answers DREP;
 *    DREQ in TIMEWAIT: the DREP is resent; DREQ for no connection: a DREP
 *    built from the DREQ (the id's TIMEWAIT is over);
 *  - REJ: before ESTABLISHED the id goes back to IDLE (TIMEWAIT when stale),
 *    from REP_RCVD, MRA_REP_SENT, ESTABLISHED and DREQ_SENT to TIMEWAIT; a
 *    REJ "timeout" is matched by the sender's comm ID and CA GUID (its ARI).
 * What the agent answers to a MAD no listener and no id of its owns (the
 * REJ 8, the DREP, the SIDR_REP "unsupported") is built by cm_unowned(),
 * which dpv_cm_answer() also uses: the stateless answerer is this agent
 * with no listener and no id.
 */
#include <errno.h>
#include <string.h>

#include "dpv_cm_priv.h"

static struct dpv_cm_id *cm_find_local(struct dpv_cm_agent *a, uint32_t local_id)
{
	for (uint32_t i = 0; i < a->nids; i++) {
		struct dpv_cm_id *id = &a->ids[i];

		if (id->in_use && id->local_id == local_id && id->state != DPV_CM_LISTEN)
			return id;
	}
	return NULL;
}

static struct dpv_cm_id *cm_find_listener(struct dpv_cm_agent *a, uint64_t service_id)
{
	for (uint32_t i = 0; i < a->nids; i++) {
		struct dpv_cm_id *id = &a->ids[i];

		if (id->in_use && id->state == DPV_CM_LISTEN && id->service_id == service_id)
			return id;
	}
	return NULL;
}

/* The answer to rx when no listener and no id of ours owns it (Linux
 * cm_issue_rej with "invalid service ID" for a REQ, cm_issue_drep for a
 * DREQ, the SIDR_REP "unsupported" of cm_sidr_req_handler): true with *m. */
static bool cm_unowned(const struct dpv_cm_mad *rx, struct dpv_cm_mad *m)
{
	switch (rx->hdr.attr_id) {
	case DPV_CM_ATTR_REQ:
		dpv_cm_mad_init(m, DPV_CM_ATTR_REJ, rx->hdr.tid);
		m->rej.remote_comm_id = rx->req.local_comm_id;
		m->rej.message_rejected = DPV_CM_MSG_REQ;
		m->rej.reason = DPV_CM_REJ_INVALID_SERVICE_ID;
		return true;
	case DPV_CM_ATTR_DREQ:
		dpv_cm_mad_init(m, DPV_CM_ATTR_DREP, rx->hdr.tid);
		m->drep.local_comm_id = rx->dreq.remote_comm_id;
		m->drep.remote_comm_id = rx->dreq.local_comm_id;
		return true;
	case DPV_CM_ATTR_SIDR_REQ:
		dpv_cm_mad_init(m, DPV_CM_ATTR_SIDR_REP, rx->hdr.tid);
		m->sidr_rep.request_id = rx->sidr_req.request_id;
		m->sidr_rep.status = DPV_CM_SIDR_UNSUPPORTED;
		m->sidr_rep.service_id = rx->sidr_req.service_id;
		return true;
	default:
		return false;
	}
}

/* A REJ answering a message no id of ours owns (Linux cm_issue_rej). */
static int cm_reject_raw(struct dpv_cm_agent *a, const struct dpv_cm_addr *from,
			 const struct dpv_cm_mad *rx, uint32_t local_id, uint32_t remote_id,
			 uint16_t reason, uint8_t msg)
{
	struct dpv_cm_mad m;

	dpv_cm_mad_init(&m, DPV_CM_ATTR_REJ, rx->hdr.tid);
	m.rej.local_comm_id = local_id;
	m.rej.remote_comm_id = remote_id;
	m.rej.message_rejected = msg;
	m.rej.reason = reason;
	return cm_send_raw(a, from, &m);
}

/* Duplicate REQ (known remote comm ID and CA GUID): true when it was one. */
static bool cm_req_dup(struct dpv_cm_agent *a, const struct dpv_cm_addr *from,
		       const struct dpv_cm_mad *m)
{
	const struct dpv_cm_req *r = &m->req;

	for (uint32_t i = 0; i < a->nids; i++) {
		struct dpv_cm_id *id = &a->ids[i];

		if (!id->in_use || id->state == DPV_CM_LISTEN || id->state == DPV_CM_IDLE ||
		    id->remote_id != r->local_comm_id || id->remote_ca_guid != r->local_ca_guid)
			continue;
		a->stats.rx_duplicates++;
		if (id->state == DPV_CM_MRA_REQ_SENT)
			cm_id_resend(id);
		else if (id->state == DPV_CM_TIMEWAIT)
			cm_reject_raw(a, from, m, id->local_id, r->local_comm_id,
				      DPV_CM_REJ_STALE_CONN, DPV_CM_MSG_OTHER); /* as Linux */
		return true;
	}
	return false;
}

/* Stale REQ: its (GID, QPN) belongs to a live connection. true when rejected. */
static bool cm_req_stale(struct dpv_cm_agent *a, const struct dpv_cm_addr *from,
			 const struct dpv_cm_mad *m)
{
	const struct dpv_cm_req *r = &m->req;

	for (uint32_t i = 0; i < a->nids; i++) {
		struct dpv_cm_id *id = &a->ids[i];

		if (!id->in_use || id->state <= DPV_CM_LISTEN || id->state >= DPV_CM_TIMEWAIT ||
		    !id->remote_qpn || id->remote_qpn != r->local_qpn ||
		    memcmp(id->peer.gid, from->gid, 16))
			continue;
		a->stats.rx_stale++;
		cm_reject_raw(a, from, m, 0, r->local_comm_id, DPV_CM_REJ_STALE_CONN,
			      DPV_CM_MSG_REQ);
		return true;
	}
	return false;
}

static int cm_rx_req(struct dpv_cm_agent *a, const struct dpv_cm_addr *from,
		     const struct dpv_cm_mad *m)
{
	struct dpv_cm_event ev = { .type = DPV_CM_EV_REQ, .mad = m };
	const struct dpv_cm_req *r = &m->req;
	struct dpv_cm_id *lis, *id;

	if (cm_req_dup(a, from, m) || cm_req_stale(a, from, m))
		return 0;
	lis = cm_find_listener(a, r->service_id);
	if (!lis) {
		struct dpv_cm_mad rej;

		cm_unowned(m, &rej); /* REJ "invalid service ID" */
		return cm_send_raw(a, from, &rej), 0;
	}
	/* RC, or XRC (Linux's XRC initiator: extended transport type XRC) */
	if (r->transport_service_type != DPV_CM_TST_RC &&
	    (r->transport_service_type != DPV_CM_TST_EXTENDED ||
	     r->extended_transport_type != DPV_CM_EXT_TRANSPORT_XRC))
		return cm_reject_raw(a, from, m, 0, r->local_comm_id,
				     DPV_CM_REJ_INVALID_TRANSPORT_TYPE, DPV_CM_MSG_REQ), 0;
	id = cm_id_alloc(a, lis->ctx);
	if (!id)
		return cm_reject_raw(a, from, m, 0, r->local_comm_id, DPV_CM_REJ_NO_RESOURCES,
				     DPV_CM_MSG_REQ), 0;
	id->remote_id = r->local_comm_id;
	id->remote_ca_guid = r->local_ca_guid;
	id->remote_qpn = r->local_qpn;
	id->peer = *from;
	id->service_id = r->service_id;
	id->tid = m->hdr.tid;
	id->peer_resp_timeout = r->local_cm_response_timeout;
	id->max_cm_retries = r->max_cm_retries;
	id->state = DPV_CM_REQ_RCVD;
	ev.listen_id = lis;
	cm_event(id, &ev);
	return 0;
}

static int cm_rx_rep(struct dpv_cm_agent *a, const struct dpv_cm_mad *m)
{
	struct dpv_cm_event ev = { .type = DPV_CM_EV_REP, .mad = m };
	struct dpv_cm_id *id = cm_find_local(a, m->rep.remote_comm_id);

	if (!id)
		goto unmatched;
	switch (id->state) {
	case DPV_CM_REQ_SENT:
	case DPV_CM_MRA_REQ_RCVD:
		cm_id_stop(id);
		id->remote_id = m->rep.local_comm_id;
		/* an XRC target's QPN is in the EE context field (Linux cm_rep_get_qpn) */
		id->remote_qpn = id->xrc ? m->rep.local_eecn : m->rep.local_qpn;
		id->remote_ca_guid = m->rep.local_ca_guid;
		id->state = DPV_CM_REP_RCVD;
		cm_event(id, &ev);
		return 0;
	case DPV_CM_ESTABLISHED:
	case DPV_CM_MRA_REP_SENT:
		if (id->remote_id != m->rep.local_comm_id)
			goto unmatched;
		a->stats.rx_duplicates++;
		cm_id_resend(id); /* the RTU or the MRA */
		return 0;
	case DPV_CM_REP_RCVD:
		a->stats.rx_duplicates++;
		return 0;
	default:
		break;
	}
unmatched:
	a->stats.rx_unmatched++;
	return 0;
}

static int cm_rx_rtu(struct dpv_cm_agent *a, const struct dpv_cm_mad *m)
{
	struct dpv_cm_event ev = { .type = DPV_CM_EV_ESTABLISHED, .mad = m };
	struct dpv_cm_id *id = cm_find_local(a, m->rtu.remote_comm_id);

	if (!id || id->remote_id != m->rtu.local_comm_id ||
	    (id->state != DPV_CM_REP_SENT && id->state != DPV_CM_MRA_REP_RCVD)) {
		a->stats.rx_unmatched++;
		return 0;
	}
	cm_id_stop(id);
	id->state = DPV_CM_ESTABLISHED;
	cm_event(id, &ev);
	return 0;
}

/* The id a REJ is for (Linux cm_acquire_rejected_id): a REJ "timeout" may
 * come from a peer that never learnt our comm ID; its ARI is the sender's
 * CA GUID, and its local comm ID is our remote one. */
static struct dpv_cm_id *cm_find_rejected(struct dpv_cm_agent *a, const struct dpv_cm_rej *r)
{
	uint64_t guid = 0;

	if (r->reason != DPV_CM_REJ_TIMEOUT)
		return cm_find_local(a, r->remote_comm_id);
	if (r->ari_length != 8)
		return NULL;
	for (int i = 0; i < 8; i++)
		guid = guid << 8 | r->ari[i];
	for (uint32_t i = 0; i < a->nids; i++) {
		struct dpv_cm_id *id = &a->ids[i];

		if (id->in_use && id->state > DPV_CM_LISTEN && id->remote_id == r->local_comm_id &&
		    id->remote_ca_guid == guid)
			return id;
	}
	return NULL;
}

/* Linux cm_rej_handler: before the connection exists the id goes back to
 * IDLE (TIMEWAIT for a stale connection), afterwards to TIMEWAIT. */
static int cm_rx_rej(struct dpv_cm_agent *a, const struct dpv_cm_mad *m)
{
	struct dpv_cm_event ev = { .type = DPV_CM_EV_REJ, .mad = m };
	struct dpv_cm_id *id = cm_find_rejected(a, &m->rej);
	bool timewait = m->rej.reason == DPV_CM_REJ_STALE_CONN;

	if (!id || (id->remote_id && id->remote_id != m->rej.local_comm_id &&
		    m->rej.local_comm_id))
		goto unmatched;
	switch (id->state) {
	case DPV_CM_REQ_SENT:
	case DPV_CM_MRA_REQ_RCVD:
	case DPV_CM_REQ_RCVD:
	case DPV_CM_MRA_REQ_SENT:
	case DPV_CM_REP_SENT:
	case DPV_CM_MRA_REP_RCVD:
		break;
	case DPV_CM_REP_RCVD:
	case DPV_CM_MRA_REP_SENT:
	case DPV_CM_ESTABLISHED:
	case DPV_CM_DREQ_SENT:
		timewait = true;
		break;
	default:
		goto unmatched;
	}
	ev.rej_reason = m->rej.reason;
	ev.ari = m->rej.ari;
	ev.ari_len = m->rej.ari_length;
	if (timewait)
		cm_id_timewait(id, a->now);
	else
		cm_id_stop(id), id->state = DPV_CM_IDLE;
	cm_event(id, &ev);
	if (id->state == DPV_CM_IDLE && id->destroyed)
		cm_id_idle(id);
	return 0;
unmatched:
	a->stats.rx_unmatched++;
	return 0;
}

static int cm_rx_mra(struct dpv_cm_agent *a, const struct dpv_cm_mad *m)
{
	struct dpv_cm_event ev = { .type = DPV_CM_EV_MRA, .mad = m };
	struct dpv_cm_id *id = cm_find_local(a, m->mra.remote_comm_id);
	bool req = m->mra.message_mraed == DPV_CM_MSG_REQ;

	if (!id || !id->retrans)
		goto unmatched;
	if (req && (id->state == DPV_CM_REQ_SENT || id->state == DPV_CM_MRA_REQ_RCVD))
		id->state = DPV_CM_MRA_REQ_RCVD;
	else if (!req && m->mra.message_mraed == DPV_CM_MSG_REP &&
		 id->remote_id == m->mra.local_comm_id &&
		 (id->state == DPV_CM_REP_SENT || id->state == DPV_CM_MRA_REP_RCVD))
		id->state = DPV_CM_MRA_REP_RCVD;
	else
		goto unmatched;
	if (id->state == DPV_CM_MRA_REQ_RCVD)
		id->remote_id = m->mra.local_comm_id;
	/* IBA 12.6.6: wait the service timeout before retransmitting */
	id->timeout_ns = dpv_cm_timeout_ns(m->mra.service_timeout);
	cm_id_arm(id, a->now + id->timeout_ns);
	cm_event(id, &ev);
	return 0;
unmatched:
	a->stats.rx_unmatched++;
	return 0;
}

static int cm_rx_dreq(struct dpv_cm_agent *a, const struct dpv_cm_addr *from,
		      const struct dpv_cm_mad *m)
{
	struct dpv_cm_event ev = { .type = DPV_CM_EV_DREQ, .mad = m };
	struct dpv_cm_id *id = cm_find_local(a, m->dreq.remote_comm_id);
	struct dpv_cm_mad rep;

	if (!id || id->remote_id != m->dreq.local_comm_id) {
		/* Linux cm_issue_drep: the connection is gone (its TIMEWAIT
		 * ended), the peer still waits for a DREP */
		a->stats.rx_duplicates++;
		cm_unowned(m, &rep);
		return cm_send_raw(a, from, &rep), 0;
	}
	if (m->dreq.remote_qpn_eecn != id->local_qpn)
		goto unmatched;
	switch (id->state) {
	case DPV_CM_REP_SENT:       /* the RTU was lost */
	case DPV_CM_MRA_REP_RCVD:
	case DPV_CM_ESTABLISHED:
	case DPV_CM_DREQ_SENT:      /* crossed DREQs */
		cm_id_stop(id);
		id->tid = m->hdr.tid;
		id->state = DPV_CM_DREQ_RCVD;
		cm_event(id, &ev);
		return 0;
	case DPV_CM_TIMEWAIT:
		a->stats.rx_duplicates++;
		if (id->out_attr == DPV_CM_ATTR_DREP)
			cm_id_resend(id);
		return 0;
	case DPV_CM_DREQ_RCVD:
		a->stats.rx_duplicates++;
		return 0;
	default:
		break;
	}
unmatched:
	a->stats.rx_unmatched++;
	return 0;
}

static int cm_rx_drep(struct dpv_cm_agent *a, const struct dpv_cm_mad *m)
{
	struct dpv_cm_event ev = { .type = DPV_CM_EV_DISCONNECTED, .mad = m };
	struct dpv_cm_id *id = cm_find_local(a, m->drep.remote_comm_id);

	if (!id || id->remote_id != m->drep.local_comm_id || id->state != DPV_CM_DREQ_SENT) {
		a->stats.rx_unmatched++;
		return 0;
	}
	cm_id_timewait(id, a->now);
	cm_event(id, &ev);
	return 0;
}

static int cm_rx_sidr_req(struct dpv_cm_agent *a, const struct dpv_cm_addr *from,
			  const struct dpv_cm_mad *m)
{
	struct dpv_cm_event ev = { .type = DPV_CM_EV_SIDR_REQ, .mad = m };
	struct dpv_cm_id *lis, *id;
	struct dpv_cm_mad rep;

	for (uint32_t i = 0; i < a->nids; i++) {
		id = &a->ids[i];
		if (id->in_use && id->state == DPV_CM_SIDR_REQ_RCVD &&
		    id->remote_id == m->sidr_req.request_id && !memcmp(id->peer.gid, from->gid, 16)) {
			a->stats.rx_duplicates++;
			return 0;
		}
	}
	lis = cm_find_listener(a, m->sidr_req.service_id);
	id = lis ? cm_id_alloc(a, lis->ctx) : NULL;
	if (!id) {
		cm_unowned(m, &rep); /* "unsupported": no listener */
		if (lis)
			rep.sidr_rep.status = DPV_CM_SIDR_REJECT; /* no id left */
		return cm_send_raw(a, from, &rep), 0;
	}
	id->remote_id = m->sidr_req.request_id;
	id->peer = *from;
	id->service_id = m->sidr_req.service_id;
	id->tid = m->hdr.tid;
	id->state = DPV_CM_SIDR_REQ_RCVD;
	ev.listen_id = lis;
	cm_event(id, &ev);
	return 0;
}

static int cm_rx_sidr_rep(struct dpv_cm_agent *a, const struct dpv_cm_mad *m)
{
	struct dpv_cm_event ev = { .type = DPV_CM_EV_SIDR_REP, .mad = m };
	struct dpv_cm_id *id = cm_find_local(a, m->sidr_rep.request_id);

	if (!id || id->state != DPV_CM_SIDR_REQ_SENT) {
		a->stats.rx_unmatched++;
		return 0;
	}
	cm_id_stop(id);
	id->state = DPV_CM_IDLE;
	cm_event(id, &ev);
	if (id->state == DPV_CM_IDLE && id->destroyed)
		cm_id_idle(id);
	return 0;
}

int dpv_cm_rx(struct dpv_cm_agent *agent, const struct dpv_cm_addr *from, const uint8_t *mad,
	      size_t len, uint64_t now)
{
	struct dpv_cm_mad m;
	int ret;

	if (!agent || !from || !mad)
		return -EINVAL;
	agent->now = now;
	agent->stats.rx++;
	ret = dpv_cm_mad_decode(mad, len, &m);
	if (ret == -EOPNOTSUPP) {
		agent->stats.rx_unsupported++;
		return ret;
	}
	if (ret) {
		agent->stats.rx_malformed++;
		return -EBADMSG;
	}
	switch (m.hdr.attr_id) {
	case DPV_CM_ATTR_REQ:
		return cm_rx_req(agent, from, &m);
	case DPV_CM_ATTR_REP:
		return cm_rx_rep(agent, &m);
	case DPV_CM_ATTR_RTU:
		return cm_rx_rtu(agent, &m);
	case DPV_CM_ATTR_REJ:
		return cm_rx_rej(agent, &m);
	case DPV_CM_ATTR_MRA:
		return cm_rx_mra(agent, &m);
	case DPV_CM_ATTR_DREQ:
		return cm_rx_dreq(agent, from, &m);
	case DPV_CM_ATTR_DREP:
		return cm_rx_drep(agent, &m);
	case DPV_CM_ATTR_SIDR_REQ:
		return cm_rx_sidr_req(agent, from, &m);
	default:
		return cm_rx_sidr_rep(agent, &m);
	}
}

int dpv_cm_answer(const uint8_t *mad, size_t len, uint8_t out[DPV_MAD_SIZE])
{
	struct dpv_cm_mad m, a;
	int ret;

	if (!mad || !out)
		return -EINVAL;
	ret = dpv_cm_mad_decode(mad, len, &m);
	if (ret)
		return ret == -EOPNOTSUPP ? ret : -EBADMSG;
	if (!cm_unowned(&m, &a))
		return 0;
	ret = dpv_cm_mad_encode(&a, out);
	return ret ? ret : 1;
}
