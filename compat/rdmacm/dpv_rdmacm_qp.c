/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * QPs and SRQs on an id: rdma_create_qp, rdma_create_qp_ex, rdma_destroy_qp,
 * rdma_create_srq, rdma_create_srq_ex, rdma_destroy_srq, rdma_init_qp_attr
 * (rdma_destroy_ep: dpv_rdmacm_ep.c).
 *
 * rdma-core's behaviour, which this follows: the id must have a device
 * (id->verbs, given by rdma_bind_addr or rdma_resolve_addr); the QP goes on
 * the caller's PD or on the id's PD; CQs the caller does not give are
 * created with a completion channel each, sized max_send_wr/max_recv_wr,
 * stored in id->send_cq/recv_cq (and destroyed with the QP); the new QP is
 * moved to INIT with the attributes rdma_init_qp_attr gives (P_Key index of
 * the route's P_Key, the id's port, no remote access for RC; Q_Key
 * RDMA_UDP_QKEY for UD), and a UD QP on to RTR and RTS (SQ PSN 0). A
 * connected QP goes to RTR and RTS later, from the connection manager.
 *
 * Without a connection manager no id gets a device yet, so these fail with
 * EINVAL on every id an application can make today (as rdma-core's do on an
 * unbound id); the tests give an id its device with
 * dpv_rdmacm_id_set_device().
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dpv_rdmacm.h"
#include "dpv_rdmacm_cmsvc.h"

int dpv_rdmacm_pkey_index(struct rdma_cm_id *id)
{
	int idx = ibv_get_pkey_index(id->verbs, id->port_num, id->route.addr.addr.ibaddr.pkey);

	return idx < 0 ? dpv_rdmacm_err(EINVAL) : idx;
}

/* INIT attributes: Linux's cma_ib_init_qp_attr before a connection exists. */
static int init_attr_init(struct rdma_cm_id *id, struct ibv_qp_attr *a, int *mask)
{
	int idx = dpv_rdmacm_pkey_index(id);

	if (idx < 0)
		return -1;
	a->qp_state = IBV_QPS_INIT;
	a->pkey_index = (uint16_t)idx;
	a->port_num = id->port_num;
	*mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
	if (id->qp_type == IBV_QPT_UD) {
		a->qkey = RDMA_UDP_QKEY;
		*mask |= IBV_QP_QKEY;
	} else {
		a->qp_access_flags = 0;
		*mask |= IBV_QP_ACCESS_FLAGS;
	}
	return 0;
}

/*
 * RC: the connection's attributes (dpv_rdmacm_qpattr.c); before there is
 * one, Linux's cma_ib_init_qp_attr answers every state with the INIT
 * attributes (and the requested state).
 */
static int conn_attr(struct dpv_rdmacm_id *p, struct ibv_qp_attr *a, int *mask)
{
	enum ibv_qp_state want = a->qp_state;
	int ret;

	if (p->cm == NULL) {
		ret = init_attr_init(&p->id, a, mask);
		a->qp_state = want;
		return ret;
	}
	dpv_rdmacm_cmsvc_lock();
	ret = dpv_rdmacm_conn_qp_attr(p, a, mask);
	dpv_rdmacm_cmsvc_unlock();
	return ret;
}

int rdma_init_qp_attr(struct rdma_cm_id *id, struct ibv_qp_attr *qp_attr, int *qp_attr_mask)
{
	enum ibv_qp_state state;

	if (id == NULL || qp_attr == NULL || qp_attr_mask == NULL || id->verbs == NULL ||
	    qp_attr->qp_state > IBV_QPS_ERR)
		return dpv_rdmacm_err(EINVAL);
	state = qp_attr->qp_state;
	memset(qp_attr, 0, sizeof(*qp_attr));
	qp_attr->qp_state = state;
	switch (state) {
	case IBV_QPS_INIT:
		if (id->qp_type != IBV_QPT_UD && to_did(id)->cm != NULL)
			return conn_attr(to_did(id), qp_attr, qp_attr_mask);
		return init_attr_init(id, qp_attr, qp_attr_mask);
	case IBV_QPS_RTR:
	case IBV_QPS_RTS:
		if (id->qp_type == IBV_QPT_UD) {
			*qp_attr_mask = IBV_QP_STATE | (state == IBV_QPS_RTS ? IBV_QP_SQ_PSN : 0);
			return 0;
		}
		return conn_attr(to_did(id), qp_attr, qp_attr_mask);
	default:
		return dpv_rdmacm_err(EINVAL);
	}
}

static int modify(struct ibv_qp *qp, struct ibv_qp_attr *a, int mask)
{
	int ret = ibv_modify_qp(qp, a, mask);

	return ret ? dpv_rdmacm_err(ret) : 0;
}

/* INIT, and for UD on to RTS (rdma-core's ucma_init_conn_qp / ucma_init_ud_qp). */
static int qp_to_ready(struct rdma_cm_id *id, struct ibv_qp *qp)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT };
	int mask;

	if (rdma_init_qp_attr(id, &a, &mask) != 0 || modify(qp, &a, mask) != 0)
		return -1;
	if (id->qp_type != IBV_QPT_UD)
		return 0;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	if (modify(qp, &a, IBV_QP_STATE) != 0)
		return -1;
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0;
	return modify(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
}

/* Destroys the CQs and completion channels held in the id (rdma-core's ucma_destroy_cqs). */
static void destroy_cqs(struct rdma_cm_id *id)
{
	if (id->qp_type == IBV_QPT_XRC_RECV && id->srq != NULL)
		return; /* the XRC SRQ still completes on them (rdma-core) */
	if (id->recv_cq != NULL) {
		ibv_destroy_cq(id->recv_cq);
		if (id->send_cq != NULL && id->send_cq != id->recv_cq)
			ibv_destroy_cq(id->send_cq);
		id->recv_cq = NULL;
		id->send_cq = NULL;
	}
	if (id->recv_cq_channel != NULL) {
		ibv_destroy_comp_channel(id->recv_cq_channel);
		if (id->send_cq_channel != NULL && id->send_cq_channel != id->recv_cq_channel)
			ibv_destroy_comp_channel(id->send_cq_channel);
		id->recv_cq_channel = NULL;
		id->send_cq_channel = NULL;
	}
}

static int create_cq(struct rdma_cm_id *id, uint32_t size, struct ibv_comp_channel **ch, struct ibv_cq **cq)
{
	*ch = ibv_create_comp_channel(id->verbs);
	if (*ch == NULL)
		return -1;
	*cq = ibv_create_cq(id->verbs, (int)size, id, *ch, 0);
	return *cq == NULL ? -1 : 0;
}

/* A CQ of each size that is not 0 (the caller gave none), on failure none. */
static int create_cqs(struct rdma_cm_id *id, uint32_t send_size, uint32_t recv_size)
{
	if ((recv_size > 0 && create_cq(id, recv_size, &id->recv_cq_channel, &id->recv_cq) != 0) ||
	    (send_size > 0 && create_cq(id, send_size, &id->send_cq_channel, &id->send_cq) != 0)) {
		int e = errno;
		destroy_cqs(id);
		return dpv_rdmacm_err(e);
	}
	return 0;
}

/* The checks rdma-core makes before creating anything. */
static int qp_args(struct rdma_cm_id *id, struct ibv_qp_init_attr_ex *attr)
{
	if (id == NULL || attr == NULL || id->qp != NULL || id->verbs == NULL)
		return dpv_rdmacm_err(EINVAL);
	if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || attr->pd == NULL) {
		attr->comp_mask |= IBV_QP_INIT_ATTR_PD;
		attr->pd = id->pd;
	} else if (attr->pd->context != id->verbs) {
		return dpv_rdmacm_err(EINVAL);
	}
	if (attr->pd == NULL)
		return dpv_rdmacm_err(EINVAL);
	if ((id->recv_cq && attr->recv_cq && id->recv_cq != attr->recv_cq) ||
	    (id->send_cq && attr->send_cq && id->send_cq != attr->send_cq))
		return dpv_rdmacm_err(EINVAL);
	return 0;
}

int rdma_create_qp_ex(struct rdma_cm_id *id, struct ibv_qp_init_attr_ex *attr)
{
	struct dpv_rdmacm_id *p;
	struct ibv_ece ece = { 0 };
	struct ibv_qp *qp;
	int e;

	if (qp_args(id, attr) != 0)
		return -1;
	p = to_did(id);
	if (create_cqs(id, attr->send_cq || id->send_cq ? 0 : attr->cap.max_send_wr,
		       attr->recv_cq || id->recv_cq ? 0 : attr->cap.max_recv_wr) != 0)
		return -1;
	if (attr->send_cq == NULL)
		attr->send_cq = id->send_cq;
	if (attr->recv_cq == NULL)
		attr->recv_cq = id->recv_cq;
	if (id->srq != NULL && attr->srq == NULL)
		attr->srq = id->srq;
	if (id->qp_type == IBV_QPT_XRC_RECV && (!(attr->comp_mask & IBV_QP_INIT_ATTR_XRCD) || !attr->xrcd)) {
		attr->xrcd = dpv_rdmacm_xrcd(p); /* rdma-core's ucma_get_xrcd */
		attr->comp_mask |= IBV_QP_INIT_ATTR_XRCD;
	}
	qp = attr->qp_type == IBV_QPT_XRC_RECV && attr->xrcd == NULL ? NULL : ibv_create_qp_ex(id->verbs, attr);
	if (qp == NULL || qp_to_ready(id, qp) != 0) {
		e = errno;
		if (qp != NULL)
			ibv_destroy_qp(qp);
		destroy_cqs(id);
		return dpv_rdmacm_err(e);
	}
	/* the ECE the connection manager will offer (rdma-core's init_ece) */
	if (ibv_query_ece(qp, &ece) == 0) {
		pthread_mutex_lock(&p->lock);
		p->local_ece_vendor = ece.vendor_id;
		p->local_ece_options = ece.options;
		pthread_mutex_unlock(&p->lock);
	}
	/* an XRC target QP has no PD of its own here: the id keeps the one given */
	id->pd = qp->pd != NULL ? qp->pd : attr->pd;
	id->qp = qp;
	return 0;
}

int rdma_create_qp(struct rdma_cm_id *id, struct ibv_pd *pd, struct ibv_qp_init_attr *qp_init_attr)
{
	struct ibv_qp_init_attr_ex ex;
	int ret;

	if (id == NULL || qp_init_attr == NULL)
		return dpv_rdmacm_err(EINVAL);
	memset(&ex, 0, sizeof(ex));
	memcpy(&ex, qp_init_attr, sizeof(*qp_init_attr));
	ex.comp_mask = IBV_QP_INIT_ATTR_PD;
	ex.pd = pd != NULL ? pd : id->pd;
	ret = rdma_create_qp_ex(id, &ex);
	memcpy(qp_init_attr, &ex, sizeof(*qp_init_attr));
	return ret;
}

void rdma_destroy_qp(struct rdma_cm_id *id)
{
	if (id == NULL)
		return;
	if (id->qp != NULL)
		ibv_destroy_qp(id->qp);
	id->qp = NULL;
	destroy_cqs(id);
}

/*
 * An XRC SRQ without an XRC domain gets the device's (rdma-core's
 * ucma_get_xrcd), and without a CQ the id's receive CQ (made when there is
 * none; rdma-core makes a new one each time and loses the old).
 */
int rdma_create_srq_ex(struct rdma_cm_id *id, struct ibv_srq_init_attr_ex *attr)
{
	struct ibv_srq *srq;

	if (id == NULL || attr == NULL || id->verbs == NULL || !(attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE))
		return dpv_rdmacm_err(EINVAL);
	if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_PD) || attr->pd == NULL) {
		attr->pd = id->pd;
		attr->comp_mask |= IBV_SRQ_INIT_ATTR_PD;
	}
	if (attr->srq_type == IBV_SRQT_XRC) {
		if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_XRCD) || attr->xrcd == NULL) {
			attr->xrcd = dpv_rdmacm_xrcd(to_did(id));
			if (attr->xrcd == NULL)
				return -1;
		}
		if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_CQ) || attr->cq == NULL) {
			if (id->recv_cq == NULL && create_cqs(id, 0, attr->attr.max_wr) != 0)
				return -1;
			attr->cq = id->recv_cq;
		}
		attr->comp_mask |= IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ;
	}
	srq = ibv_create_srq_ex(id->verbs, attr);
	if (srq == NULL) {
		int e = errno;
		destroy_cqs(id);
		return dpv_rdmacm_err(e);
	}
	if (id->pd == NULL)
		id->pd = attr->pd;
	id->srq = srq;
	return 0;
}

int rdma_create_srq(struct rdma_cm_id *id, struct ibv_pd *pd, struct ibv_srq_init_attr *attr)
{
	struct ibv_srq_init_attr_ex ex;
	int ret;

	if (id == NULL || attr == NULL)
		return dpv_rdmacm_err(EINVAL);
	memset(&ex, 0, sizeof(ex));
	memcpy(&ex, attr, sizeof(*attr));
	ex.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD;
	ex.srq_type = id->qp_type == IBV_QPT_XRC_RECV ? IBV_SRQT_XRC : IBV_SRQT_BASIC;
	ex.pd = pd;
	ret = rdma_create_srq_ex(id, &ex);
	memcpy(attr, &ex, sizeof(*attr));
	return ret;
}

void rdma_destroy_srq(struct rdma_cm_id *id)
{
	if (id == NULL)
		return;
	if (id->srq != NULL)
		ibv_destroy_srq(id->srq);
	id->srq = NULL;
	destroy_cqs(id);
}
