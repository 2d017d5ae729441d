/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * The responder resources and initiator depth of a connection, as
 * rdma-core 44's librdmacm computes them before the kernel sees them
 * (ucma_valid_param, rdma_connect, rdma_accept): 0xff (RDMA_MAX_RESP_RES,
 * RDMA_MAX_INIT_DEPTH, what libfabric's verbs provider passes) asks for
 * the device's maximum, and never reaches the QP (ibv_modify_qp would
 * refuse it).
 */
#include <errno.h>

#include "dpv_rdmacm_depth.h"

static uint8_t pick(uint8_t want, uint8_t cur, int max, bool accept)
{
	uint8_t m = max > 0xfe ? 0xfe : (uint8_t)max;

	if (want != 0xff)
		return want;
	if (!accept)
		return m;
	return cur < m ? cur : m;
}

int dpv_rdmacm_depths(struct dpv_rdmacm_id *p, const struct rdma_conn_param *cp, bool accept)
{
	struct ibv_device_attr da;
	uint8_t resp = cp ? cp->responder_resources : 0xff;
	uint8_t init = cp ? cp->initiator_depth : 0xff;

	if (p->id.verbs == NULL || ibv_query_device(p->id.verbs, &da) != 0)
		return EINVAL;
	if (p->id.ps == RDMA_PS_TCP && cp == NULL && p->id.qp == NULL)
		return EINVAL; /* ucma_valid_param: no QP and no QP number */
	if (p->id.ps == RDMA_PS_TCP && cp != NULL &&
	    ((resp != RDMA_MAX_RESP_RES && resp > da.max_qp_rd_atom) ||
	     (init != RDMA_MAX_INIT_DEPTH && init > da.max_qp_init_rd_atom)))
		return EINVAL;
	p->resp_res = pick(resp, p->resp_res, da.max_qp_rd_atom, accept);
	p->init_depth = pick(init, p->init_depth, da.max_qp_init_rd_atom, accept);
	return 0;
}
