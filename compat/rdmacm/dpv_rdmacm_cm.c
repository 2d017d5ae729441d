/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * The calls of the drop-in librdmacm.so.1 that need a connection manager:
 * address and route resolution, connection establishment and teardown,
 * listening, multicast, rdma_getaddrinfo and rdma_create_ep. Issue 11 adds
 * an IB CM on QP1 (the MAD codec in lib/cm/, then its state machine and the
 * GSI transport); until then each one fails with -1 and errno ENOSYS, so
 * that callers' error paths run ("Function not implemented"), and is listed
 * in dpverbs_unsupported(7). rdma_freeaddrinfo is real (it frees what a
 * future rdma_getaddrinfo returns).
 */
#include <errno.h>
#include <stdlib.h>

#include "dpv_rdmacm.h"

int rdma_bind_addr(struct rdma_cm_id *id, struct sockaddr *addr)
{
	return dpv_rdmacm_err(ENOSYS); /* CM: not yet (issue 11) */
}

int rdma_resolve_addr(struct rdma_cm_id *id, struct sockaddr *src_addr, struct sockaddr *dst_addr,
		      int timeout_ms)
{
	return dpv_rdmacm_err(ENOSYS); /* CM: not yet (issue 11) */
}

int rdma_resolve_route(struct rdma_cm_id *id, int timeout_ms)
{
	return dpv_rdmacm_err(ENOSYS); /* CM: not yet (issue 11) */
}

int rdma_connect(struct rdma_cm_id *id, struct rdma_conn_param *conn_param)
{
	return dpv_rdmacm_err(ENOSYS); /* CM: not yet (issue 11) */
}

int rdma_establish(struct rdma_cm_id *id)
{
	return dpv_rdmacm_err(ENOSYS); /* CM: not yet (issue 11) */
}

int rdma_listen(struct rdma_cm_id *id, int backlog)
{
	return dpv_rdmacm_err(ENOSYS); /* CM: not yet (issue 11) */
}

int rdma_get_request(struct rdma_cm_id *listen, struct rdma_cm_id **id)
{
	return dpv_rdmacm_err(ENOSYS); /* CM: not yet (issue 11) */
}

int rdma_accept(struct rdma_cm_id *id, struct rdma_conn_param *conn_param)
{
	return dpv_rdmacm_err(ENOSYS); /* CM: not yet (issue 11) */
}

int rdma_reject(struct rdma_cm_id *id, const void *private_data, uint8_t private_data_len)
{
	return dpv_rdmacm_err(ENOSYS); /* CM: not yet (issue 11) */
}

int rdma_reject_ece(struct rdma_cm_id *id, const void *private_data, uint8_t private_data_len)
{
	return dpv_rdmacm_err(ENOSYS); /* CM: not yet (issue 11) */
}

int rdma_notify(struct rdma_cm_id *id, enum ibv_event_type event)
{
	return dpv_rdmacm_err(ENOSYS); /* CM: not yet (issue 11) */
}

int rdma_disconnect(struct rdma_cm_id *id)
{
	return dpv_rdmacm_err(ENOSYS); /* CM: not yet (issue 11) */
}

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

/*
 * rdma-core returns -1 with errno for its own failures and getaddrinfo's
 * EAI_* codes for name lookup failures; -1 with ENOSYS is the former.
 */
int rdma_getaddrinfo(const char *node, const char *service, const struct rdma_addrinfo *hints,
		     struct rdma_addrinfo **res)
{
	return dpv_rdmacm_err(ENOSYS); /* CM: not yet (issue 11) */
}

int rdma_create_ep(struct rdma_cm_id **id, struct rdma_addrinfo *res, struct ibv_pd *pd,
		   struct ibv_qp_init_attr *qp_init_attr)
{
	return dpv_rdmacm_err(ENOSYS); /* CM: not yet (issue 11) */
}

/* Frees a list of rdma_getaddrinfo, every field that holds memory of its own. */
void rdma_freeaddrinfo(struct rdma_addrinfo *res)
{
	while (res != NULL) {
		struct rdma_addrinfo *next = res->ai_next;

		free(res->ai_connect);
		free(res->ai_route);
		free(res->ai_src_addr);
		free(res->ai_dst_addr);
		free(res->ai_src_canonname);
		free(res->ai_dst_canonname);
		free(res);
		res = next;
	}
}
