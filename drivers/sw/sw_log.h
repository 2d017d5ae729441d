/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The sw driver's log messages (log type pmd.dpv.sw) and its per-QP debug
 * trace.
 */
#ifndef SW_LOG_H
#define SW_LOG_H

#include <stdbool.h>

#include <rte_branch_prediction.h>
#include <rte_log.h>

#include "sw_loc.h"

#define SW_LOG(level, fmt, ...) \
	rte_log(RTE_LOG_##level, sw_logtype, "dpverbs sw: " fmt "\n", ##__VA_ARGS__)
/* Is pmd.dpv.sw at debug level? (sw_debug_on, sw_loc.h) */
static inline bool sw_debug(void) { return unlikely(sw_debug_on); }
/* Per-QP debug trace (log level 8 of pmd.dpv.sw), as rxe_dbg_qp. */
#define SW_DBG_QP(qp, fmt, ...)                                                        \
	do {                                                                           \
		if (sw_debug())                                                        \
			rte_log(RTE_LOG_DEBUG, sw_logtype, "dpverbs sw: qp#%u: " fmt "\n", \
				(qp)->qpn, ##__VA_ARGS__);                             \
	} while (0)

#endif /* SW_LOG_H */
