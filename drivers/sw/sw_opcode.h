/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Classes of opcodes: the work requests that take a responder resource
 * (READ, atomics, and RDMA ATOMIC WRITE and FLUSH of IBA 1.5 annex A19),
 * the local ones (memory windows), and the transport bits of the packet
 * opcodes a QP sends and accepts.
 */
#ifndef SW_OPCODE_H
#define SW_OPCODE_H

#include <stdbool.h>
#include <stdint.h>

#include "sw_obj.h"

/* CMP_AND_SWP and FETCH_AND_ADD: an AtomicETH, answered by an ATOMIC
 * ACKNOWLEDGE whose original value lands in the local SGE. */
static inline bool sw_is_atomic(uint8_t op)
{
	return op == IBV_WR_ATOMIC_CMP_AND_SWP || op == IBV_WR_ATOMIC_FETCH_AND_ADD;
}

/* ATOMIC WRITE and FLUSH: one request packet, answered by a zero-length
 * RDMA READ RESPONSE ONLY (annex A19, as rxe). */
static inline bool sw_is_zero_resp(uint8_t op)
{
	return op == IBV_WR_ATOMIC_WRITE || op == DPV_WR_FLUSH;
}

/* Takes a responder resource, counts against max_rd_atomic and completes
 * on its response, not on an ACK (IBA 9.7.7.1, annex A19). */
static inline bool sw_is_rd_atomic(uint8_t op)
{
	return op == IBV_WR_RDMA_READ || sw_is_atomic(op) || sw_is_zero_resp(op);
}

/* Memory window operations: executed by the requester, nothing on the wire. */
static inline bool sw_is_local(uint8_t op)
{
	return op == IBV_WR_BIND_MW || op == IBV_WR_LOCAL_INV;
}

/* Transport bits of the opcodes this QP sends and accepts. */
static inline uint8_t sw_qp_tr(const struct sw_qp *qp)
{
	switch (qp->type) {
	case IBV_QPT_UC:
		return DPV_TR_UC;
	case IBV_QPT_XRC_SEND:
	case IBV_QPT_XRC_RECV:
		return DPV_TR_XRC;
	case IBV_QPT_UD:
		return DPV_TR_UD;
	default:
		return DPV_TR_RC;
	}
}

#endif /* SW_OPCODE_H */
