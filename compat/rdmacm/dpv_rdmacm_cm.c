/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * The calls of the drop-in librdmacm.so.1 that the connection manager does
 * not do yet: multicast (RC connections are in dpv_rdmacm_conn.c and
 * dpv_rdmacm_conncall.c; rdma_get_request, rdma_establish, rdma_notify in
 * dpv_rdmacm_sync.c; rdma_create_ep in dpv_rdmacm_ep.c). Each one fails with -1 and errno ENOSYS, so that callers' error paths run
 * ("Function not implemented"), and is listed in dpverbs_unsupported(7).
 * Addresses and routes (rdma_bind_addr, rdma_resolve_addr,
 * rdma_resolve_route) are real: dpv_rdmacm_addr.c; rdma_getaddrinfo and
 * rdma_freeaddrinfo: dpv_rdmacm_gai.c.
 */
#include <errno.h>

#include "dpv_rdmacm.h"

int rdma_join_multicast(struct rdma_cm_id *id, struct sockaddr *addr, void *context)
{
	return dpv_rdmacm_err(ENOSYS); /* CM: not yet (issue 11) */
}

int rdma_join_multicast_ex(struct rdma_cm_id *id, struct rdma_cm_join_mc_attr_ex *mc_join_attr,
			   void *context)
{
	return dpv_rdmacm_err(ENOSYS); /* CM: not yet (issue 11) */
}

int rdma_leave_multicast(struct rdma_cm_id *id, struct sockaddr *addr)
{
	return dpv_rdmacm_err(ENOSYS); /* CM: not yet (issue 11) */
}

