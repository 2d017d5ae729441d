/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * RC connections of the drop-in librdmacm.so.1 (RDMA_PS_TCP): the IB CM's
 * events (lib/cm, run by the CM service, dpv_rdmacm_cmsvc.c) turned into
 * rdma_cm events and QP transitions, as Linux rdma_cm does; the calls
 * themselves (rdma_listen, rdma_connect, rdma_accept, rdma_reject,
 * rdma_disconnect) are in dpv_rdmacm_conncall.c. On the wire:
 * the REQ carries the 36-byte rdma_cm IP header then the user's private
 * data; the active side moves its QP to RTR/RTS on the REP and sends the
 * RTU; the passive side moves it in rdma_accept. PSNs follow Linux ib_cm:
 * the REQ's starting PSN is the one the passive side sends first, the
 * REP's the one the active side sends first.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <arpa/inet.h>

#include "dpv_cm_ip.h"
#include "dpv_rdmacm.h"
#include "dpv_rdmacm_cmsvc.h"
#include "dpv_rdmacm_ud.h"

/* Linux's CMA_CM_MRA_SETTING: an MRA kept for a duplicate REQ, 2^24 * 4.096 us (~69 s) */
#define CONN_MRA_SETTING (DPV_CM_MRA_FLAG_DELAY | 24)

static int post(struct dpv_rdmacm_id *owner, struct dpv_rdmacm_id *p, struct dpv_rdmacm_id *lst,
		enum rdma_cm_event_type t, int status, const struct rdma_conn_param *cp,
		const void *pd, size_t len)
{
	struct rdma_cm_event ev = {.id = &p->id, .listen_id = lst ? &lst->id : NULL, .event = t,
				   .status = status};

	if (cp)
		ev.param.conn = *cp;
	return dpv_rdmacm_event_post(owner, &ev, pd, len);
}

static void qp_error(struct dpv_rdmacm_id *p)
{
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_ERR};

	if (p->id.qp)
		ibv_modify_qp(p->id.qp, &a, IBV_QP_STATE);
}

static void conn_param_of_req(const struct dpv_cm_req *r, struct rdma_conn_param *cp)
{
	memset(cp, 0, sizeof(*cp));
	cp->responder_resources = r->responder_resources;
	cp->initiator_depth = r->initiator_depth;
	cp->flow_control = r->end_to_end_flow_control;
	cp->retry_count = r->retry_count;
	cp->rnr_retry_count = r->rnr_retry_count;
	cp->srq = r->srq;
	cp->qp_num = r->local_qpn;
}

/* Fills the child's addresses and route from the cma header and the REQ. */
static int child_route(struct dpv_rdmacm_id *c, const struct dpv_cma_hdr *h, const struct dpv_cm_req *r,
		       const struct dpv_cm_event *ev)
{
	struct rdma_addr *ad = &c->id.route.addr;
	struct ibv_sa_path_rec *pr = calloc(1, sizeof(*pr));

	if (pr == NULL)
		return -1;
	dpv_rdmacm_child_addrs(c, h, (uint16_t)(ev->listen_id->service_id & 0xffff), ev->id->peer.gid);
	pr->sgid = ad->addr.ibaddr.sgid;
	pr->dgid = ad->addr.ibaddr.dgid;
	pr->mtu = r->path_mtu;
	pr->pkey = htobe16(0xffff);
	pr->hop_limit = 64;
	c->id.route.path_rec = pr;
	c->id.route.num_paths = 1;
	return 0;
}

/* REQ for a listener: a new id on the listener's channel, CONNECT_REQUEST. */
static void on_req(struct dpv_rdmacm_id *l, const struct dpv_cm_event *ev, struct ibv_context *ctx)
{
	const struct dpv_cm_req *r = &ev->mad->req;
	struct dpv_cma_hdr h;
	struct rdma_cm_id *cid;
	struct rdma_conn_param cp;

	/* a sync listener's requests get channels of their own (ucma_process_conn_req) */
	if (dpv_cma_hdr_decode(ev->private_data, ev->private_len, &h) < 0 ||
	    rdma_create_id(l->sync ? NULL : l->id.channel, &cid, l->id.context, l->id.ps) != 0) {
		dpv_cm_destroy_id(ev->id); /* REJ (consumer defined), and the id is free */
		return;
	}
	struct dpv_rdmacm_id *c = to_did(cid);
	cid->qp_type = l->id.qp_type; /* XRC_RECV for an XRC listener (ucma_alloc_id) */
	if (dpv_rdmacm_id_set_device(c, ctx, 1) != 0 || child_route(c, &h, r, ev) != 0) {
		dpv_cm_destroy_id(ev->id);
		rdma_destroy_id(cid);
		return;
	}
	c->cm = ev->id;
	ev->id->ctx = c;
	c->state = DPV_RDMACM_CONNECT;
	c->remote_qpn = r->local_qpn;
	c->sq_psn = r->starting_psn;
	c->path_mtu = r->path_mtu;
	c->retry = r->retry_count;
	c->rnr_retry = r->rnr_retry_count;
	/* ib_cm's av.timeout of the passive side: the REQ's local ACK timeout */
	c->qp_timeout = r->primary.local_ack_timeout ? r->primary.local_ack_timeout : 1;
	/* the PSN we receive from: known from the start, as Linux's seq_num */
	uint32_t rnd = 0;
	if (getrandom(&rnd, sizeof(rnd), 0) != sizeof(rnd))
		rnd = (uint32_t)dpv_rdmacm_now_ns();
	c->rq_psn = rnd & 0xffffff;
	/* rdma_accept(id, NULL) starts from these (librdmacm ucma_process_conn_req) */
	c->resp_res = r->initiator_depth;
	c->init_depth = r->responder_resources;
	conn_param_of_req(r, &cp);
	post(l, c, l, RDMA_CM_EVENT_CONNECT_REQUEST, 0, &cp, ev->private_data + DPV_CMA_HDR_LEN,
	     DPV_CMA_REQ_PRIVATE_MAX);
	/* the application has not accepted yet: MRA_REQ_SENT, the MRA answers a duplicate REQ */
	dpv_cm_send_mra(ev->id, CONN_MRA_SETTING, NULL, 0);
}

/* REP on the active side: QP to RTS, RTU, ESTABLISHED. */
static void on_rep(struct dpv_rdmacm_id *p, const struct dpv_cm_event *ev)
{
	const struct dpv_cm_rep *r = &ev->mad->rep;
	struct rdma_conn_param cp = {.responder_resources = r->responder_resources,
				     .initiator_depth = r->initiator_depth,
				     .flow_control = r->end_to_end_flow_control,
				     .rnr_retry_count = r->rnr_retry_count, .srq = r->srq,
				     .qp_num = p->id.qp_type == IBV_QPT_XRC_SEND ? r->local_eecn : r->local_qpn};

	p->remote_qpn = cp.qp_num; /* an XRC target's QPN travels as the EE context number */
	p->sq_psn = r->starting_psn;
	p->qp_timeout = dpv_rdmacm_ack_timeout(r->target_ack_delay, (uint8_t)(p->qp_timeout - 1));
	if (p->id.qp == NULL) {
		/* the application moves its QP and calls rdma_establish (librdmacm) */
		post(p, p, NULL, RDMA_CM_EVENT_CONNECT_RESPONSE, 0, &cp, ev->private_data, ev->private_len);
		return;
	}
	int err = dpv_rdmacm_qp_connect(p);
	if (err != 0) {
		/* librdmacm: CONNECT_ERROR, the QP in ERR, later REJECTED/DISCONNECTED dropped */
		qp_error(p);
		p->connect_error = true;
		/* (rdma-core sends nothing and lets the passive side time out) */
		dpv_cm_send_rej(ev->id, DPV_CM_REJ_CONSUMER_DEFINED, NULL, 0, NULL, 0);
		post(p, p, NULL, RDMA_CM_EVENT_CONNECT_ERROR, err > 0 ? -err : -EIO, NULL, NULL, 0);
		return;
	}
	dpv_cm_send_rtu(ev->id, NULL, 0);
	post(p, p, NULL, RDMA_CM_EVENT_ESTABLISHED, 0, &cp, ev->private_data, ev->private_len);
}

void dpv_rdmacm_cm_event(void *arg, const struct dpv_cm_event *ev)
{
	(void)arg;
	if (dpv_rdmacm_ud_event(ev)) /* SIDR: dpv_rdmacm_ud.c */
		return;
	if (ev->type == DPV_CM_EV_REQ) {
		if (ev->listen_id->ctx != NULL)
			on_req(ev->listen_id->ctx, ev, dpv_rdmacm_cmsvc_ctx(ev->id->agent));
		return;
	}
	struct dpv_rdmacm_id *p = ev->id->ctx;
	if (p == NULL)
		return;
	switch (ev->type) {
	case DPV_CM_EV_REP:
		on_rep(p, ev);
		break;
	case DPV_CM_EV_ESTABLISHED:
		post(p, p, NULL, RDMA_CM_EVENT_ESTABLISHED, 0, NULL, NULL, 0);
		break;
	case DPV_CM_EV_REJ:
		if (p->connect_error)
			break;
		/* the QP goes to ERR when the application takes the event
		 * (rdma_get_cm_event, as librdmacm): from this thread the
		 * modify raced the application destroying its QP */
		post(p, p, NULL, RDMA_CM_EVENT_REJECTED, ev->rej_reason, NULL, ev->private_data,
		     ev->private_len);
		break;
	case DPV_CM_EV_TIMEOUT:
		/* no QP transition here or on a DREQ (librdmacm makes none for
		 * UNREACHABLE or DISCONNECTED): the application may have
		 * destroyed its QP with ibv_destroy_qp already (perftest does) */
		post(p, p, NULL, ev->timeout_attr == DPV_CM_ATTR_DREQ ? RDMA_CM_EVENT_DISCONNECTED :
		     RDMA_CM_EVENT_UNREACHABLE, ev->timeout_attr == DPV_CM_ATTR_DREQ ? 0 : -ETIMEDOUT,
		     NULL, NULL, 0);
		break;
	case DPV_CM_EV_DREQ:
		p->dreq_rcvd = true;
		if (!p->connect_error)
			post(p, p, NULL, RDMA_CM_EVENT_DISCONNECTED, 0, NULL, NULL, 0);
		break;
	case DPV_CM_EV_DISCONNECTED:
		if (!p->connect_error)
			post(p, p, NULL, RDMA_CM_EVENT_DISCONNECTED, 0, NULL, NULL, 0);
		break;
	default:
		break;
	}
}
