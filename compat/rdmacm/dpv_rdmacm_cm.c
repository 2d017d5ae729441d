/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * The calls of the drop-in librdmacm.so.1 that the connection manager does
 * not do yet: rdma_establish, rdma_get_request, rdma_notify and
 * rdma_create_ep (RC connections are in dpv_rdmacm_conn.c and
 * dpv_rdmacm_conncall.c). Each one fails with -1 and errno ENOSYS, so that callers' error paths run
 * ("Function not implemented"), and is listed in dpverbs_unsupported(7).
 * Addresses and routes (rdma_bind_addr, rdma_resolve_addr,
 * rdma_resolve_route) are real: dpv_rdmacm_addr.c; rdma_getaddrinfo and
 * rdma_freeaddrinfo: dpv_rdmacm_gai.c.
 */
#include <errno.h>

#include "dpv_rdmacm.h"

int rdma_establish(struct rdma_cm_id *id)
{
	return dpv_rdmacm_err(ENOSYS); /* CM: not yet (issue 11) */
}

int rdma_get_request(struct rdma_cm_id *listen, struct rdma_cm_id **id)
{
	return dpv_rdmacm_err(ENOSYS); /* CM: not yet (issue 11) */
}

int rdma_notify(struct rdma_cm_id *id, enum ibv_event_type event)
{
	return dpv_rdmacm_err(ENOSYS); /* CM: not yet (issue 11) */
}

int rdma_create_ep(struct rdma_cm_id **id, struct rdma_addrinfo *res, struct ibv_pd *pd,
		   struct ibv_qp_init_attr *qp_init_attr)
{
	return dpv_rdmacm_err(ENOSYS); /* CM: not yet (issue 11) */
}
