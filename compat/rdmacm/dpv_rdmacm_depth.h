/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * RDMA read/atomic depths of rdma_connect and rdma_accept
 * (dpv_rdmacm_depth.c).
 */
#ifndef DPV_RDMACM_DEPTH_H
#define DPV_RDMACM_DEPTH_H

#include <stdbool.h>

#include "dpv_rdmacm.h"

/**
 * Sets p->resp_res and p->init_depth for rdma_connect (accept false) or
 * rdma_accept (accept true) from cp (may be NULL), as rdma-core 44's
 * librdmacm: RDMA_MAX_RESP_RES / RDMA_MAX_INIT_DEPTH (0xff) or no cp mean
 * the device's max_qp_rd_atom / max_qp_init_rd_atom (connect) or the
 * REQ's value already in p, capped by that maximum (accept); a value above
 * the maximum, or no cp on an id without a QP, is EINVAL
 * (ucma_valid_param, RC port spaces only).
 * Returns 0 or an errno; p untouched on error.
 */
int dpv_rdmacm_depths(struct dpv_rdmacm_id *p, const struct rdma_conn_param *cp, bool accept);

#endif
