/* SPDX-License-Identifier: BSD-3-Clause */
/* Internals shared by the runtime (dpv_cmrt.c) and its GSI-QP transport
 * (dpv_cmrt_qp.c). */
#ifndef DPV_CMRT_PRIV_H
#define DPV_CMRT_PRIV_H

#include "dpv_cm.h"
#include "dpv_cmrt_xport.h"

struct dpv_cmrt_qp;

struct dpv_cmrt {
	struct dpv_cmrt_xport xport;
	struct dpv_cmrt_xport_cfg cfg;
	struct dpv_cm_agent agent;
	bool agent_ok;
	struct dpv_cmrt_stats stats;
	/** The runtime's own transport (dpv_cmrt_qp.c), NULL for a caller's;
	 *  freed by qp_fini at close, after the agent. */
	struct dpv_cmrt_qp *qp;
	void (*qp_fini)(struct dpv_cmrt *rt);
};

/** Starts the agent of rt (zeroed but for qp and qp_fini) on xport with
 *  cfg. RETURN VALUE: 0, -EINVAL, -ENOMEM. */
int dpv_cmrt_start(struct dpv_cmrt *rt, const struct dpv_cmrt_xport_cfg *cfg, const struct dpv_cmrt_xport *xport);

#endif /* DPV_CMRT_PRIV_H */
