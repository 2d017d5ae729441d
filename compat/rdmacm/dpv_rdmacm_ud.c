/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * UD ids (RDMA_PS_UDP and RDMA_PS_IPOIB, qp_type IBV_QPT_UD) of the drop-in
 * librdmacm.so.1: service ID resolution (SIDR) on the IB CM of lib/cm, as
 * Linux rdma_cm does it (cma_resolve_ib_udp, cma_ib_req_handler for
 * SIDR_REQ, cma_send_sidr_rep, cma_sidr_rep_handler) and librdmacm reports
 * it:
 *  - rdma_connect sends a SIDR_REQ for service ID (port space << 16) + port
 *    whose private data is the 36-byte rdma_cm IP header then
 *    rdma_create_ep's ai_connect and the caller's (at most 180 bytes
 *    together, else EINVAL), retransmitted every 4.096 us * 2^20
 *    (CM response timeout 20) at most 15 times;
 *  - a listener gets CONNECT_REQUEST on a new id (state CONNECT, addresses
 *    from the header, no path record): param.ud.private_data after the
 *    header, private_data_len 180 (216 - 36, as Linux), qp_num, qkey and
 *    ah_attr zero;
 *  - rdma_accept sends a SIDR_REP with status 0 (IB_SIDR_SUCCESS), the QP
 *    number (the id's QP, else conn_param->qp_num) and the Q_Key
 *    RDMA_UDP_QKEY (also for RDMA_PS_IPOIB: there is no SA to ask for a
 *    broadcast group's Q_Key), with the caller's private data (at most 136
 *    bytes); rdma_reject a SIDR_REP with status 2 (IB_SIDR_REJECT). A
 *    second rdma_accept/rdma_reject fails with EINVAL (the SIDR exchange is
 *    over, as ib_cm's). A SIDR_REQ for a port nobody listens on is
 *    answered by lib/cm with status 1 (IB_SIDR_UNSUPPORTED);
 *  - the active side gets ESTABLISHED with param.ud: ah_attr built from the
 *    route (is_global 1, grh.dgid, grh.sgid_index of the source GID,
 *    grh.hop_limit and traffic_class of the path record, port_num; dlid 0
 *    as on RoCE), qp_num and qkey of the SIDR_REP and its private data
 *    (private_data_len 136). A SIDR_REP with another status gives
 *    UNREACHABLE with that status as event->status (1, 2, ...) and the
 *    SIDR_REP's private data; no SIDR_REP after the retries gives
 *    UNREACHABLE with status -ETIMEDOUT. A Q_Key other than RDMA_UDP_QKEY
 *    on an id that has a QP gives ADDR_ERROR -EINVAL (cma_set_qkey).
 * The QP of a UD id is already in RTS (rdma_create_qp, dpv_rdmacm_qp.c):
 * nothing here changes its state. rdma_disconnect on a UD id moves its QP
 * to ERR and returns 0, as Linux (there is no DREQ for UD).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

#include "dpv_cm_ip.h"
#include "dpv_rdmacm.h"
#include "dpv_rdmacm_cmsvc.h"
#include "dpv_rdmacm_ud.h"

#define UD_CM_TIMEOUT 20 /* CMA_CM_RESPONSE_TIMEOUT */
#define UD_CM_RETRIES 15 /* CMA_MAX_CM_RETRIES */
#define UD_HOP_LIMIT 64

bool dpv_rdmacm_ud_id(const struct rdma_cm_id *id)
{
	return id != NULL && id->qp_type == IBV_QPT_UD;
}

static uint16_t sa_port(const struct sockaddr *sa)
{
	return ntohs(sa->sa_family == AF_INET6 ? ((const struct sockaddr_in6 *)sa)->sin6_port :
		     ((const struct sockaddr_in *)sa)->sin_port);
}

/* The rdma_cm IP header of the id's addresses into pd (36 bytes). */
static int ud_hdr(struct rdma_cm_id *id, uint8_t *pd)
{
	const struct sockaddr *src = rdma_get_local_addr(id), *dst = rdma_get_peer_addr(id);
	struct dpv_cma_hdr h = {.cma_version = DPV_CMA_VERSION};

	if (src->sa_family == AF_INET && dst->sa_family == AF_INET) {
		dpv_cma_hdr_ipv4(&h, (const uint8_t *)&((const struct sockaddr_in *)src)->sin_addr,
				 (const uint8_t *)&((const struct sockaddr_in *)dst)->sin_addr, sa_port(src));
	} else if (src->sa_family == AF_INET6 && dst->sa_family == AF_INET6) {
		h.ip_version = 6;
		h.src_port = sa_port(src);
		memcpy(h.src_addr, &((const struct sockaddr_in6 *)src)->sin6_addr, 16);
		memcpy(h.dst_addr, &((const struct sockaddr_in6 *)dst)->sin6_addr, 16);
	} else {
		return -1;
	}
	return dpv_cma_hdr_encode(&h, pd, DPV_CMA_HDR_LEN) < 0 ? -1 : 0;
}

int dpv_rdmacm_ud_connect(struct dpv_rdmacm_id *p, const struct rdma_conn_param *cp)
{
	struct rdma_cm_id *id = &p->id;
	uint8_t pd[DPV_CM_SIDR_REQ_PRIVATE_LEN] = {0};
	size_t ulen = cp != NULL && cp->private_data != NULL ? cp->private_data_len : 0;
	struct dpv_cm_req_param r = {.remote_cm_response_timeout = UD_CM_TIMEOUT,
				     .local_cm_response_timeout = UD_CM_TIMEOUT,
				     .max_cm_retries = UD_CM_RETRIES,
				     .peer = {.qpn = DPV_GSI_QPN, .qkey = DPV_GSI_QKEY}};
	int ret;

	/* rdma_create_ep's ai_connect first, then the caller's (librdmacm) */
	if (p->connect_len + ulen > DPV_CMA_SIDR_REQ_PRIVATE_MAX || ud_hdr(id, pd) != 0)
		return dpv_rdmacm_err(EINVAL);
	if (p->connect_len)
		memcpy(pd + DPV_CMA_HDR_LEN, p->connect, p->connect_len);
	if (ulen)
		memcpy(pd + DPV_CMA_HDR_LEN + p->connect_len, cp->private_data, ulen);
	ulen += p->connect_len;
	r.service_id = dpv_cma_service_id((uint16_t)id->ps, sa_port(rdma_get_peer_addr(id)));
	r.private_data = pd;
	r.private_len = (uint8_t)(DPV_CMA_HDR_LEN + ulen);
	memcpy(r.peer.gid, id->route.addr.addr.ibaddr.dgid.raw, 16);
	memcpy(r.local_gid, id->route.addr.addr.ibaddr.sgid.raw, 16);
	dpv_rdmacm_cmsvc_lock();
	struct dpv_cmrt *rt = dpv_rdmacm_cmsvc_rt(id->verbs);
	p->cm = rt ? dpv_cm_create_id(dpv_cmrt_agent(rt), p) : NULL;
	/* CONNECT before the SIDR_REQ leaves: the CM thread may handle the
	 * SIDR_REP (which needs CONNECT) as soon as the service lock is free */
	p->state = DPV_RDMACM_CONNECT;
	ret = p->cm ? dpv_cm_sidr_req(p->cm, &r, dpv_rdmacm_now_ns()) : -errno;
	if (ret == -EINVAL || ret == -EISCONN) {
		if (p->cm)
			dpv_cm_destroy_id(p->cm);
		p->cm = NULL;
	}
	if (p->cm == NULL)
		p->state = DPV_RDMACM_ROUTE_RESOLVED;
	dpv_rdmacm_cmsvc_unlock();
	if (p->cm == NULL)
		return dpv_rdmacm_err(ret < 0 ? -ret : EIO);
	free(p->connect); /* sent once */
	p->connect = NULL;
	p->connect_len = 0;
	return 0; /* a send error is retried by lib/cm, as a lost MAD */
}

/* SIDR_REP for the request of id p (rdma_accept, rdma_reject). */
static int ud_reply(struct dpv_rdmacm_id *p, uint8_t status, uint32_t qpn, uint32_t qkey,
		    const void *pd, size_t len)
{
	int ret;

	if (p->cm == NULL || len > DPV_CM_SIDR_REP_PRIVATE_LEN)
		return dpv_rdmacm_err(EINVAL);
	dpv_rdmacm_cmsvc_lock();
	ret = dpv_cm_sidr_rep(p->cm, status, qpn, qkey, len ? pd : NULL, (uint8_t)len);
	dpv_rdmacm_cmsvc_unlock();
	if (ret == -EPROTO)
		ret = -EINVAL; /* not in SIDR_REQ_RCVD: ib_send_cm_sidr_rep's EINVAL */
	return ret ? dpv_rdmacm_err(-ret) : 0;
}

int dpv_rdmacm_ud_accept(struct dpv_rdmacm_id *p, const struct rdma_conn_param *cp)
{
	uint32_t qpn = p->id.qp ? p->id.qp->qp_num : (cp ? cp->qp_num : 0);
	size_t len = cp != NULL && cp->private_data != NULL ? cp->private_data_len : 0;

	if (p->state != DPV_RDMACM_CONNECT)
		return dpv_rdmacm_err(EINVAL);
	if (ud_reply(p, DPV_CM_SIDR_SUCCESS, qpn, RDMA_UDP_QKEY, cp ? cp->private_data : NULL, len) != 0)
		return -1;
	if (p->sync && p->id.event != NULL) { /* librdmacm: a sync UD accept waits for nothing */
		rdma_ack_cm_event(p->id.event);
		p->id.event = NULL;
	}
	return 0;
}

int dpv_rdmacm_ud_reject(struct dpv_rdmacm_id *p, const void *pd, uint8_t len)
{
	return ud_reply(p, DPV_CM_SIDR_REJECT, 0, 0, pd, pd ? len : 0);
}

int dpv_rdmacm_ud_disconnect(struct dpv_rdmacm_id *p)
{
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_ERR};

	if (p->cm == NULL)
		return dpv_rdmacm_err(EINVAL);
	if (p->id.qp != NULL && ibv_modify_qp(p->id.qp, &a, IBV_QP_STATE) != 0)
		return -1;
	return 0;
}

void dpv_rdmacm_child_addrs(struct dpv_rdmacm_id *c, const struct dpv_cma_hdr *h, uint16_t lport,
			    const uint8_t peer_gid[16])
{
	struct rdma_addr *ad = &c->id.route.addr;

	if (h->ip_version == 4) {
		struct sockaddr_in *s = (struct sockaddr_in *)&ad->src_storage;
		struct sockaddr_in *d = (struct sockaddr_in *)&ad->dst_storage;
		s->sin_family = d->sin_family = AF_INET;
		memcpy(&s->sin_addr, h->dst_addr + 12, 4);
		memcpy(&d->sin_addr, h->src_addr + 12, 4);
		s->sin_port = htons(lport);
		d->sin_port = htons(h->src_port);
	} else {
		struct sockaddr_in6 *s = (struct sockaddr_in6 *)&ad->src_storage;
		struct sockaddr_in6 *d = (struct sockaddr_in6 *)&ad->dst_storage;
		s->sin6_family = d->sin6_family = AF_INET6;
		memcpy(&s->sin6_addr, h->dst_addr, 16);
		memcpy(&d->sin6_addr, h->src_addr, 16);
		s->sin6_port = htons(lport);
		d->sin6_port = htons(h->src_port);
	}
	memcpy(&ad->addr.ibaddr.dgid, peer_gid, 16);
	dpv_cmrt_local_gid(dpv_rdmacm_cmsvc_rt(c->id.verbs), peer_gid, ad->addr.ibaddr.sgid.raw);
}

/* SIDR_REQ for listener l: a new id on its channel, CONNECT_REQUEST. */
static void on_sidr_req(struct dpv_rdmacm_id *l, const struct dpv_cm_event *ev, struct ibv_context *ctx)
{
	struct dpv_cma_hdr h;
	struct rdma_cm_id *cid = NULL;
	struct rdma_cm_event e = {.event = RDMA_CM_EVENT_CONNECT_REQUEST, .listen_id = &l->id};
	size_t len;

	ev->id->ctx = NULL; /* lib/cm gave it the listener's */
	if (dpv_cma_hdr_decode(ev->private_data, ev->private_len, &h) < 0 ||
	    rdma_create_id(l->sync ? NULL : l->id.channel, &cid, l->id.context, l->id.ps) != 0 ||
	    dpv_rdmacm_id_set_device(to_did(cid), ctx, 1) != 0) {
		dpv_cm_destroy_id(ev->id); /* SIDR_REP status 2, as ib_cm when the handler fails */
		if (cid != NULL)
			rdma_destroy_id(cid);
		return;
	}
	struct dpv_rdmacm_id *c = to_did(cid);
	dpv_rdmacm_child_addrs(c, &h, (uint16_t)(ev->listen_id->service_id & 0xffff), ev->id->peer.gid);
	c->cm = ev->id;
	ev->id->ctx = c;
	c->state = DPV_RDMACM_CONNECT;
	e.id = cid;
	len = ev->private_len - DPV_CMA_HDR_LEN;
	if (len > DPV_CMA_SIDR_REQ_PRIVATE_MAX)
		len = DPV_CMA_SIDR_REQ_PRIVATE_MAX;
	dpv_rdmacm_event_post(l, &e, ev->private_data + DPV_CMA_HDR_LEN, len);
}

static int gid_index(struct rdma_cm_id *id, const union ibv_gid *gid)
{
	union ibv_gid g;

	for (int i = 0; i < 16; i++)
		if (ibv_query_gid(id->verbs, id->port_num, i, &g) == 0 && memcmp(&g, gid, 16) == 0)
			return i;
	return 0;
}

/* The address handle attributes of the id's route (ib_init_ah_attr_from_path on RoCE). */
static void route_ah_attr(struct dpv_rdmacm_id *p, struct ibv_ah_attr *a)
{
	struct rdma_cm_id *id = &p->id;
	const struct ibv_sa_path_rec *pr = id->route.path_rec;

	memset(a, 0, sizeof(*a));
	a->is_global = 1;
	a->grh.dgid = id->route.addr.addr.ibaddr.dgid;
	a->grh.sgid_index = (uint8_t)gid_index(id, &id->route.addr.addr.ibaddr.sgid);
	a->grh.hop_limit = pr ? pr->hop_limit : UD_HOP_LIMIT;
	a->grh.traffic_class = pr ? pr->traffic_class : (p->tos_set ? p->tos : 0);
	a->grh.flow_label = pr ? be32toh(pr->flow_label) : 0;
	a->sl = pr ? pr->sl : 0;
	a->static_rate = pr ? pr->rate : 0;
	a->port_num = id->port_num;
}

/* SIDR_REP on the active side: ESTABLISHED with the UD parameters, or UNREACHABLE. */
static void on_sidr_rep(struct dpv_rdmacm_id *p, const struct dpv_cm_event *ev)
{
	const struct dpv_cm_sidr_rep *r = &ev->mad->sidr_rep;
	struct rdma_cm_event e = {.id = &p->id, .event = RDMA_CM_EVENT_ESTABLISHED};

	if (r->status != DPV_CM_SIDR_SUCCESS) {
		e.event = RDMA_CM_EVENT_UNREACHABLE;
		e.status = r->status;
	} else if (p->id.qp != NULL && r->qkey != RDMA_UDP_QKEY) {
		e.event = RDMA_CM_EVENT_ADDR_ERROR;
		e.status = -EINVAL;
	} else {
		route_ah_attr(p, &e.param.ud.ah_attr);
		e.param.ud.qp_num = r->qpn;
		e.param.ud.qkey = r->qkey;
	}
	dpv_rdmacm_event_post(p, &e, ev->private_data, ev->private_len);
}

bool dpv_rdmacm_ud_event(const struct dpv_cm_event *ev)
{
	struct dpv_rdmacm_id *p;

	if (ev->type == DPV_CM_EV_SIDR_REQ) {
		if (ev->listen_id->ctx != NULL)
			on_sidr_req(ev->listen_id->ctx, ev, dpv_rdmacm_cmsvc_ctx(ev->id->agent));
		else
			dpv_cm_destroy_id(ev->id);
		return true;
	}
	if (ev->type != DPV_CM_EV_SIDR_REP &&
	    !(ev->type == DPV_CM_EV_TIMEOUT && ev->timeout_attr == DPV_CM_ATTR_SIDR_REQ))
		return false;
	p = ev->id->ctx;
	if (p == NULL || p->state != DPV_RDMACM_CONNECT)
		return true;
	if (ev->type == DPV_CM_EV_SIDR_REP) {
		on_sidr_rep(p, ev);
	} else {
		struct rdma_cm_event e = {.id = &p->id, .event = RDMA_CM_EVENT_UNREACHABLE,
					  .status = -ETIMEDOUT};
		dpv_rdmacm_event_post(p, &e, NULL, 0);
	}
	return true;
}
