/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file dpv_param.h
 * The limits every verb checks its arguments against, as run: the
 * configuration's "limits" section (config/README.md) clamped to what the
 * object tables hold (struct dpv_pool ranges), so that every limit
 * ibv_query_device reports can be reached. The fixed capabilities, the
 * identity and the defaults are compile-time constants in
 * config/dpv_limits.h (the one place, as rxe_param.h).
 */
#ifndef DPV_PARAM_H
#define DPV_PARAM_H

#include <stdint.h>

#include "dpv_conf.h"
#include "dpv_limits.h"
#include "dpv_wire.h"

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
