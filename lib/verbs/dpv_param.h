/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file dpv_param.h
 * Device parameters in one place (as rxe_param.h): what ibv_query_device
 * reports and what every verb checks its arguments against. The fixed values
 * are the device's capabilities; the limits come from the configuration's
 * "limits" section (config/README.md), clamped to what the object tables
 * hold (struct dpv_pool ranges), so that every reported limit can be reached.
 */
#ifndef DPV_PARAM_H
#define DPV_PARAM_H

#include <stdint.h>

#include "dpv_conf.h"
#include "dpv_wire.h"

/* Identity (vendor, firmware, board, port capabilities): config/dpv_limits.h,
 * shared with the sysfs view (lib/conf/dpv_view.c) */

/* Fixed capabilities */
#define DPV_MAX_MSG_SZ (1u << 31)       /* IBA 9.4: 2^31 bytes per message */
#define DPV_MAX_QP_RD_ATOM 128          /* outstanding READ/atomic per QP, as rxe */
#define DPV_MAX_QP_INIT_RD_ATOM 128
#define DPV_LOCAL_CA_ACK_DELAY 15
#define DPV_NUM_COMP_VECTORS 1
#define DPV_PHYS_PORT_CNT 1
#define DPV_PORT_NUM 1                  /* the only port number of a device */
#define DPV_MIN_CQE_ALIGN 64            /* ring buffers: cache-line aligned */

/* Object index ranges (struct dpv_pool): 24-bit QPNs, 0 and 1 reserved (SMI,
 * GSI) and up to 0x10 kept free as rxe does; MR keys are index << 8 | key. */
/* wc.sl of a UD receive: the network header type, as ConnectX reports it
 * on RoCEv2 (its CQE's L3 type; UCX's UD transport reads it to build the
 * reply's address): 2 for IPv4, 1 for IPv6 */
#define DPV_WC_SL_IPV4 2
#define DPV_WC_SL_IPV6 1
#define DPV_QPN_GSI 1                   /* the GSI's QPN on the wire (IBA 13.5.1) */
#define DPV_QPN_MCAST 0xffffff          /* destination QP of multicast packets (IBA 10.5) */
#define DPV_QPN_FIRST 0x11
#define DPV_QPN_LAST 0x1ffff
#define DPV_MR_INDEX_LAST 0xffffff
#define DPV_SRQN_LAST 0xffff
#define DPV_OBJ_INDEX_LAST 0xfffff     /* PDs, AHs, CQs, XRC domains */

/** The limits every verb checks, filled once from the configuration. */
struct dpv_params {
	uint32_t max_qp, max_qp_wr, max_sge, max_inline;
	uint32_t max_cq, max_cqe;
	uint32_t max_mr, max_pd, max_ah;
	uint32_t max_srq, max_srq_wr, max_srq_sge;
	uint32_t max_qp_rd_atom, max_qp_init_rd_atom;
	uint64_t max_mr_size;
};

/** Fill p from the configuration's limits, clamped to the table ranges. */
void dpv_params_init(struct dpv_params *p, const struct dpv_conf *c);

#endif /* DPV_PARAM_H */
