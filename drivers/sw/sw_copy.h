/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Copies between the engine and registered memory, the fast paths inline:
 * into and out of an SGE list (one memcpy for the common case: one SGE,
 * memory of this process; sw_mem.c for lists and memory of another
 * process), and the flush of the writes into another process' memory
 * batched by this thread (sw_mem.c).
 */
#ifndef SW_COPY_H
#define SW_COPY_H

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <rte_branch_prediction.h>

#include "sw_loc.h"

/* Is any registered MR in another process' memory, or does the engine serve
 * other processes? (sw_remote_mrs, sw_loc.h) Then every SGE takes the slow
 * path. */
static inline bool sw_any_remote_mr(void)
{
	return atomic_load_explicit(&sw_remote_mrs, memory_order_relaxed) != 0 ||
	       atomic_load_explicit(&sw_serves_apps, memory_order_relaxed);
}

/* Before anything that makes this thread's writes into another process'
 * memory visible (a CQE, a packet, the end of a poll turn). */
static inline void sw_mem_flush(void)
{
	if (unlikely(sw_mem_pending))
		sw_mem_flush_slow();
}

/* Copy len bytes into the memory the SGE list describes, from offset off
 * of it (or out of it). Every SGE is resolved through its MR (by key) at
 * each copy, retransmissions and later packets of a message included: the
 * MR must still be registered, cover the bytes and, unless pd is
 * SW_PD_CHECKED, belong to protection domain pd (the access rights were
 * checked when the WQE started); the bytes are at the SGE's address plus
 * the MR's delta (0 but for device memory and shared mode's regions). A key deregistered meanwhile fails the copy
 * (-EACCES) before any byte of its memory is touched, and ibv_dereg_mr waits
 * for copies that resolved it before (sw_quiesce): so the engine never
 * reads or writes memory the application deregistered. The fast path (one
 * SGE, memory of this process) inline; the others in sw_mem.c. */
#define SW_PD_CHECKED 0u /* an SGE the engine built from a key it checked */
/* 0; -EACCES: an SGE's MR is gone (or no longer covers it); -EFAULT: the
 * memory is not mapped (or not writable) under its MR (sw_fault.c; memory
 * of another process: sw_mem.c, where a write into an MR that is not on
 * demand may be batched and its failure not seen) */
static inline int sw_sge_copy_in(uint32_t pd, const struct dpv_sge *sge, uint32_t n, uint32_t off,
				 const void *src, uint32_t len)
{
	if (likely(len && n == 1 && off + len <= sge[0].length && !sw_any_remote_mr())) {
		const struct sw_mr *m = sw_mr_range(pd, sge[0].lkey, sge[0].addr + off, len);
		if (unlikely(!m))
			return -EACCES;
		return sw_copy_safe((uint8_t *)(uintptr_t)(sge[0].addr + off + (uint64_t)m->delta), src, len);
	}
	return len ? sw_sge_copy_in_slow(pd, sge, n, off, src, len) : 0;
}
/* Is the MR on demand (IBV_ACCESS_ON_DEMAND)? A page of it that is not
 * mapped fails the access, as a ConnectX's page fault that cannot be
 * resolved; memory unmapped under any other MR is the application's mistake
 * (an RNIC's pinned pages would still be there) and reads as zeroes. */
static inline bool sw_mr_odp(const struct sw_mr *m)
{
	return (m->access & IBV_ACCESS_ON_DEMAND) != 0;
}

/* 0 (memory unmapped under an MR that is not on demand reads as zeroes);
 * -EACCES: an SGE's MR is gone; -EFAULT: a page of an ODP MR is not mapped
 * (or not readable). On an error dst holds zeroes and the caller sends
 * nothing (the WQE fails). */
static inline int sw_sge_copy_out(uint32_t pd, const struct dpv_sge *sge, uint32_t n, uint32_t off,
				  void *dst, uint32_t len)
{
	if (likely(len && n == 1 && off + len <= sge[0].length && !sw_any_remote_mr())) {
		const struct sw_mr *m = sw_mr_range(pd, sge[0].lkey, sge[0].addr + off, len);
		if (unlikely(!m)) {
			memset(dst, 0, len);
			return -EACCES;
		}
		if (unlikely(sw_copy_safe(dst, (const uint8_t *)(uintptr_t)(sge[0].addr + off + (uint64_t)m->delta),
					  len) != 0)) {
			memset(dst, 0, len); /* gone: zeroes rather than stale frame bytes */
			return sw_mr_odp(m) ? -EFAULT : 0;
		}
		return 0;
	}
	return len ? sw_sge_copy_out_slow(pd, sge, n, off, dst, len) : 0;
}

#endif /* SW_COPY_H */
