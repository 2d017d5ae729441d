/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * Synchronous ids and the calls around them: dpv_rdmacm_complete (rdma-core's
 * ucma_complete), rdma_get_request, rdma_establish, rdma_notify.
 *
 * An id created with a NULL channel (rdma_create_id(NULL, ...),
 * rdma_create_ep) has a channel of its own, and the calls that start an
 * operation (rdma_resolve_addr, rdma_resolve_route, rdma_connect,
 * rdma_accept, rdma_disconnect) wait for its event and return its result;
 * the event stays in id->event until the next such call or
 * rdma_destroy_id. A request arriving on a synchronous listener becomes an
 * id of its own channel too; rdma_get_request hands it out (with the QP
 * rdma_create_ep's qp_init_attr asks for). The rules are librdmacm's
 * (rdma-core 44 cma.c), the errors the kernel's (ucma.c, cma.c, cm.c).
 */
#include <errno.h>
#include <stdlib.h>

#include "dpv_rdmacm.h"
#include "dpv_rdmacm_cmsvc.h"

int dpv_rdmacm_complete(struct dpv_rdmacm_id *p)
{
	struct rdma_cm_id *id = &p->id;
	int st;

	if (!p->sync)
		return 0;
	if (id->event != NULL) {
		rdma_ack_cm_event(id->event);
		id->event = NULL;
	}
	if (rdma_get_cm_event(id->channel, &id->event) != 0)
		return -1;
	st = id->event->status;
	if (st == 0)
		return 0;
	if (id->event->event == RDMA_CM_EVENT_REJECTED)
		return dpv_rdmacm_err(ECONNREFUSED);
	return dpv_rdmacm_err(st < 0 ? -st : st);
}

/*
 * EINVAL unless the listener is synchronous; otherwise the next event of
 * its channel: a CONNECT_REQUEST gives its new id (with a QP when the
 * listener came from rdma_create_ep with qp_init_attr); any other event, or
 * a failed QP, fails (EINVAL, or the status / QP error) and stays in
 * listen->event, as in rdma-core.
 */
int rdma_get_request(struct rdma_cm_id *listen, struct rdma_cm_id **id)
{
	struct rdma_cm_event *ev;
	struct dpv_rdmacm_id *l;
	int ret = 0;

	if (listen == NULL || id == NULL)
		return dpv_rdmacm_err(EINVAL);
	l = to_did(listen);
	if (!l->sync)
		return dpv_rdmacm_err(EINVAL);
	if (listen->event != NULL) {
		rdma_ack_cm_event(listen->event);
		listen->event = NULL;
	}
	if (rdma_get_cm_event(listen->channel, &ev) != 0)
		return -1;
	if (ev->status != 0)
		ret = dpv_rdmacm_err(ev->status < 0 ? -ev->status : ev->status);
	else if (ev->event != RDMA_CM_EVENT_CONNECT_REQUEST)
		ret = dpv_rdmacm_err(EINVAL);
	if (ret == 0 && l->qp_init_attr != NULL) {
		struct ibv_qp_init_attr a = *l->qp_init_attr;

		ret = rdma_create_qp(ev->id, listen->pd, &a);
	}
	if (ret != 0) {
		listen->event = ev;
		return ret;
	}
	*id = ev->id;
	ev->id->event = ev;
	return 0;
}

/*
 * The active side of a connection made without a QP: after
 * CONNECT_RESPONSE the application has moved its QP (rdma_init_qp_attr)
 * and tells the CM, which sends the RTU. No event follows (Linux's
 * cma_rep_recv). EINVAL with a QP on the id (librdmacm), without a
 * connection or when no REP is waiting for its RTU (ib_cm).
 */
int rdma_establish(struct rdma_cm_id *id)
{
	struct dpv_rdmacm_id *p;
	int ret;

	if (id == NULL || id->qp != NULL)
		return dpv_rdmacm_err(EINVAL);
	p = to_did(id);
	dpv_rdmacm_cmsvc_lock();
	ret = p->cm ? dpv_cm_send_rtu(p->cm, NULL, 0) : -EINVAL;
	dpv_rdmacm_cmsvc_unlock();
	if (ret == -EPROTO)
		ret = -EINVAL;
	return ret ? dpv_rdmacm_err(-ret) : 0;
}

/*
 * A QP event the CM should know of (Linux rdma_notify -> ib_cm_notify):
 * IBV_EVENT_COMM_EST (the first packet arrived before the RTU) ends the
 * passive side's wait for the RTU and reports ESTABLISHED; EISCONN when it
 * is already established; IBV_EVENT_PATH_MIG: nothing to migrate (no
 * alternate paths), 0 when established; any other event or no connection:
 * EINVAL.
 */
int rdma_notify(struct rdma_cm_id *id, enum ibv_event_type event)
{
	struct dpv_rdmacm_id *p;
	int ret;

	if (id == NULL)
		return dpv_rdmacm_err(EINVAL);
	p = to_did(id);
	dpv_rdmacm_cmsvc_lock();
	if (p->cm == NULL)
		ret = -EINVAL;
	else if (event == IBV_EVENT_COMM_EST)
		ret = dpv_cm_establish(p->cm);
	else if (event == IBV_EVENT_PATH_MIG)
		ret = p->cm->state == DPV_CM_ESTABLISHED ? 0 : -EINVAL;
	else
		ret = -EINVAL;
	if (ret == 0 && event == IBV_EVENT_COMM_EST) {
		struct rdma_cm_event ev = {.id = id, .event = RDMA_CM_EVENT_ESTABLISHED};

		dpv_rdmacm_event_post(p, &ev, NULL, 0);
	}
	dpv_rdmacm_cmsvc_unlock();
	return ret ? dpv_rdmacm_err(-ret) : 0;
}
