/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The engine's "DMA" into memory of another process: in shared mode an
 * application registers ordinary heap memory, which the daemon cannot map;
 * the engine moves those bytes with process_vm_readv/process_vm_writev
 * (CAP_SYS_PTRACE over the process, or the same user with ptrace allowed).
 * Memory the daemon gave the application (memfd regions both processes
 * map: rings, the hugepage allocator's buffers) is copied directly, at the
 * daemon's address of it (the MR's delta).
 *
 * Atomics on such memory are a read and a write under one lock: atomic
 * against every other RDMA atomic the engine executes, not against the
 * application's own CPU accesses to that word (an RNIC's PCIe atomics are
 * not either, unless the platform supports them).
 */
#include <errno.h>
#include <string.h>
#include <sys/uio.h>

#include <rte_spinlock.h>

#include "sw_loc.h"

static rte_spinlock_t g_atomic_lock = RTE_SPINLOCK_INITIALIZER;

int sw_mem_write(int32_t pid, void *dst, const void *src, uint32_t len)
{
	if (!pid) {
		memcpy(dst, src, len);
		return 0;
	}
	struct iovec l = {.iov_base = (void *)(uintptr_t)src, .iov_len = len};
	struct iovec r = {.iov_base = dst, .iov_len = len};
	ssize_t n = process_vm_writev(pid, &l, 1, &r, 1, 0);
	return n == (ssize_t)len ? 0 : -(n < 0 ? errno : EFAULT);
}

int sw_mem_read(int32_t pid, void *dst, const void *src, uint32_t len)
{
	if (!pid) {
		memcpy(dst, src, len);
		return 0;
	}
	struct iovec l = {.iov_base = dst, .iov_len = len};
	struct iovec r = {.iov_base = (void *)(uintptr_t)src, .iov_len = len};
	ssize_t n = process_vm_readv(pid, &l, 1, &r, 1, 0);
	return n == (ssize_t)len ? 0 : -(n < 0 ? errno : EFAULT);
}

int sw_mem_atomic(int32_t pid, uint64_t *p, bool cmp_swap, uint64_t cmp, uint64_t val, uint64_t *orig)
{
	if (!pid) {
		if (cmp_swap) {
			*orig = cmp;
			__atomic_compare_exchange_n(p, orig, val, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
		} else {
			*orig = __atomic_fetch_add(p, val, __ATOMIC_SEQ_CST);
		}
		return 0;
	}
	uint64_t v;
	rte_spinlock_lock(&g_atomic_lock);
	int r = sw_mem_read(pid, &v, p, sizeof(v));
	if (!r) {
		*orig = v;
		if (!cmp_swap || v == cmp) {
			v = cmp_swap ? val : v + val;
			r = sw_mem_write(pid, p, &v, sizeof(v));
		}
	}
	rte_spinlock_unlock(&g_atomic_lock);
	return r;
}

/* Where the engine finds the bytes [addr, addr + len) an SGE names: its
 * MR (by key) must still be registered, cover them and, unless pd is
 * SW_PD_CHECKED, belong to protection domain pd. *pid gets the process
 * (0: this one) and the return value the address to copy at; NULL when the
 * SGE names nothing the engine may touch. */
static uint8_t *sge_resolve(uint32_t pd, uint32_t key, uint64_t addr, uint32_t len, int32_t *pid)
{
	const struct sw_mr *m = sw_mr_lookup(key);
	if (!m || (pd != SW_PD_CHECKED && m->pd != pd))
		return NULL;
	uint64_t start = (uint64_t)(uintptr_t)m->addr;
	if (addr < start || addr + len > start + m->length || addr + len < addr)
		return NULL;
	*pid = m->pid;
	return (uint8_t *)(uintptr_t)(addr + (uint64_t)m->delta);
}

void sw_sge_copy_in_slow(uint32_t pd, const struct dpv_sge *sge, uint32_t n, uint32_t off, const void *src,
			 uint32_t len)
{
	const uint8_t *s = src;
	bool remote = sw_any_remote_mr();
	for (uint32_t i = 0; i < n && len; i++) {
		if (off >= sge[i].length) {
			off -= sge[i].length;
			continue;
		}
		uint32_t chunk = RTE_MIN(sge[i].length - off, len);
		uint64_t a = sge[i].addr + off;
		int32_t pid = 0;
		uint8_t *p = remote ? sge_resolve(pd, sge[i].lkey, a, chunk, &pid) : (uint8_t *)(uintptr_t)a;
		if (p)
			sw_mem_write(pid, p, s, chunk);
		s += chunk;
		len -= chunk;
		off = 0;
	}
}

void sw_sge_copy_out_slow(uint32_t pd, const struct dpv_sge *sge, uint32_t n, uint32_t off, void *dst,
			  uint32_t len)
{
	uint8_t *d = dst;
	bool remote = sw_any_remote_mr();
	for (uint32_t i = 0; i < n && len; i++) {
		if (off >= sge[i].length) {
			off -= sge[i].length;
			continue;
		}
		uint32_t chunk = RTE_MIN(sge[i].length - off, len);
		uint64_t a = sge[i].addr + off;
		int32_t pid = 0;
		const uint8_t *p = remote ? sge_resolve(pd, sge[i].lkey, a, chunk, &pid) : (const uint8_t *)(uintptr_t)a;
		if (!p || sw_mem_read(pid, d, p, chunk) != 0)
			memset(d, 0, chunk); /* gone: send zeroes rather than stale bytes */
		d += chunk;
		len -= chunk;
		off = 0;
	}
	if (len)
		memset(d, 0, len); /* the SGEs changed under us: never old frame bytes */
}
