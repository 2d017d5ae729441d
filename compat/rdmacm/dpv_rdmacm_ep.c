/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * rdma_create_ep and rdma_destroy_ep of the drop-in librdmacm.so.1, as
 * rdma-core 44's librdmacm behaves:
 *  - the endpoint is a synchronous id (a channel of its own) of
 *    res->ai_port_space whose QP type is res->ai_qp_type;
 *  - RAI_PASSIVE: bound to res->ai_src_addr; pd (when given) becomes id->pd;
 *    a copy of qp_init_attr (its qp_type set to ai_qp_type) is kept, and
 *    rdma_get_request gives each request a QP made from it on the
 *    listener's PD;
 *  - otherwise: rdma_resolve_addr(ai_src_addr, ai_dst_addr, 2000 ms) and
 *    rdma_resolve_route(2000 ms), waiting for each (a path in ai_route
 *    goes through rdma_set_option(RDMA_OPTION_IB_PATH) instead of
 *    rdma_resolve_route); with qp_init_attr a QP on pd (NULL: the id's
 *    PD) with CQs made for it; ai_connect is kept and put before the
 *    private data of rdma_connect's REQ;
 *  - any failure destroys what was made (rdma_destroy_ep) and returns -1
 *    with errno of the call that failed.
 * rdma_destroy_ep destroys the QP (and the CQs made for it), the SRQ and
 * the id.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dpv_rdmacm.h"

static int passive_ep(struct rdma_cm_id *id, struct rdma_addrinfo *res, struct ibv_pd *pd,
		      struct ibv_qp_init_attr *qp_init_attr)
{
	struct dpv_rdmacm_id *p = to_did(id);

	if (rdma_bind_addr(id, res->ai_src_addr) != 0)
		return -1;
	if (pd != NULL)
		id->pd = pd;
	if (qp_init_attr != NULL) {
		p->qp_init_attr = malloc(sizeof(*qp_init_attr));
		if (p->qp_init_attr == NULL)
			return dpv_rdmacm_err(ENOMEM);
		*p->qp_init_attr = *qp_init_attr;
		p->qp_init_attr->qp_type = res->ai_qp_type;
	}
	return 0;
}

static int active_ep(struct rdma_cm_id *id, struct rdma_addrinfo *res, struct ibv_pd *pd,
		     struct ibv_qp_init_attr *qp_init_attr)
{
	struct dpv_rdmacm_id *p = to_did(id);
	int ret;

	if (rdma_resolve_addr(id, res->ai_src_addr, res->ai_dst_addr, 2000) != 0)
		return -1;
	if (res->ai_route_len != 0) {
		/* on this synchronous id the option waits for its ROUTE_RESOLVED */
		ret = rdma_set_option(id, RDMA_OPTION_IB, RDMA_OPTION_IB_PATH, res->ai_route, res->ai_route_len);
	} else {
		ret = rdma_resolve_route(id, 2000);
	}
	if (ret != 0)
		return -1;
	if (qp_init_attr != NULL) {
		qp_init_attr->qp_type = res->ai_qp_type;
		if (rdma_create_qp(id, pd, qp_init_attr) != 0)
			return -1;
	}
	if (res->ai_connect_len != 0) {
		if (res->ai_connect == NULL || res->ai_connect_len > UINT8_MAX)
			return dpv_rdmacm_err(EINVAL);
		p->connect = malloc(res->ai_connect_len);
		if (p->connect == NULL)
			return dpv_rdmacm_err(ENOMEM);
		memcpy(p->connect, res->ai_connect, res->ai_connect_len);
		p->connect_len = (uint8_t)res->ai_connect_len;
	}
	return 0;
}

int rdma_create_ep(struct rdma_cm_id **id, struct rdma_addrinfo *res, struct ibv_pd *pd,
		   struct ibv_qp_init_attr *qp_init_attr)
{
	struct rdma_cm_id *cm_id;
	int ret;

	if (id == NULL || res == NULL)
		return dpv_rdmacm_err(EINVAL);
	if (rdma_create_id(NULL, &cm_id, NULL, res->ai_port_space) != 0)
		return -1;
	cm_id->qp_type = (enum ibv_qp_type)res->ai_qp_type;
	if (res->ai_flags & RAI_PASSIVE)
		ret = passive_ep(cm_id, res, pd, qp_init_attr);
	else
		ret = active_ep(cm_id, res, pd, qp_init_attr);
	if (ret != 0) {
		int e = errno;

		rdma_destroy_ep(cm_id);
		errno = e;
		return -1;
	}
	*id = cm_id;
	return 0;
}

void rdma_destroy_ep(struct rdma_cm_id *id)
{
	if (id == NULL)
		return;
	if (id->qp != NULL)
		rdma_destroy_qp(id);
	if (id->srq != NULL)
		rdma_destroy_srq(id);
	rdma_destroy_id(id); /* frees qp_init_attr and the connect data */
}
