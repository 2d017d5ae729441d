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
 * The implicit ODP MR of this process is reached the same way, on our own
 * pid (sw_tab.c, mr_pid). Writes into an ODP MR (IBV_ACCESS_ON_DEMAND) of
 * another process (or ours) are not batched: a page that is not mapped there fails the access (EFAULT from
 * process_vm_writev) and with it the message, as a ConnectX's page fault
 * that cannot be resolved.
 *
 * Atomics on such memory are a read and a write under one lock: atomic
 * against every other RDMA atomic the engine executes, not against the
 * application's own CPU accesses to that word (an RNIC's PCIe atomics are
 * not either, unless the platform supports them). An ATOMIC WRITE there is
 * one process_vm_writev of the 8 aligned bytes under the same lock.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include <rte_spinlock.h>

#include "sw_copy.h"
#include "sw_loc.h"

static rte_spinlock_t g_atomic_lock = RTE_SPINLOCK_INITIALIZER;

/*
 * A system call per packet is what made memory of another process slow:
 * each engine thread batches them.
 *   - write-behind: writes into one process are copied into a staging
 *     buffer and go out as one process_vm_writev (up to SW_WB_IOV pieces,
 *     SW_WB_CAP bytes) before anything that lets the application or a peer
 *     see them: a CQE (sw_cq_push), a packet sent (sw_xmit: ACKs, NAKs,
 *     responses), a read or an atomic, the end of the thread's poll turn
 *     (sw_poll, sw_td_progress: before the context's lock is released,
 *     so a QP or MR destroyed after sw_quiesce sees none pending);
 *   - read-ahead: inside a scope (one WQE being sent, one run of READ
 *     responses: sw_mem_ra_begin/end), a read of another process' memory
 *     fetches up to SW_RA_CAP bytes of the SGE at once and later reads of
 *     the same scope are served from it. Never across scopes: what the
 *     application writes after a WQE completed is read again.
 * The buffers are the thread's, made at its first access to another
 * process' memory (shared mode; in embedded mode only the implicit ODP MR
 * of this process is reached this way, sw_tab.c mr_pid).
 */
#define SW_WB_CAP (64u * 1024)
#define SW_WB_IOV 64
#define SW_RA_CAP (64u * 1024)

struct sw_memq {
	int32_t wb_pid;
	uint32_t wb_used, wb_n;
	struct iovec wb_l[SW_WB_IOV], wb_r[SW_WB_IOV];
	uint8_t wb_buf[SW_WB_CAP];
	int32_t ra_pid;
	unsigned int ra_depth;
	uint64_t ra_base;
	uint32_t ra_len;
	uint8_t ra_buf[SW_RA_CAP];
};

static __thread struct sw_memq *t_mq;
__thread uint32_t sw_mem_pending;

/* freed when its thread exits (engine lcores, assist threads) */
static pthread_key_t memq_key;
static pthread_once_t memq_once = PTHREAD_ONCE_INIT;

static void memq_key_make(void)
{
	if (pthread_key_create(&memq_key, free) != 0)
		abort();
}

static struct sw_memq *memq(void)
{
	if (!t_mq) {
		pthread_once(&memq_once, memq_key_make);
		t_mq = calloc(1, sizeof(*t_mq));
		if (t_mq && pthread_setspecific(memq_key, t_mq) != 0) {
			free(t_mq);
			t_mq = NULL;
		}
	}
	return t_mq;
}

static int vm_write(int32_t pid, const void *src, void *dst, uint32_t len)
{
	struct iovec l = {.iov_base = (void *)(uintptr_t)src, .iov_len = len};
	struct iovec r = {.iov_base = dst, .iov_len = len};
	ssize_t n = process_vm_writev(pid, &l, 1, &r, 1, 0);
	return n == (ssize_t)len ? 0 : -(n < 0 ? errno : EFAULT);
}

static int vm_read(int32_t pid, void *dst, const void *src, uint32_t len)
{
	struct iovec l = {.iov_base = dst, .iov_len = len};
	struct iovec r = {.iov_base = (void *)(uintptr_t)src, .iov_len = len};
	ssize_t n = process_vm_readv(pid, &l, 1, &r, 1, 0);
	return n == (ssize_t)len ? 0 : -(n < 0 ? errno : EFAULT);
}

void sw_mem_flush_slow(void)
{
	struct sw_memq *q = t_mq;
	if (!q || !q->wb_n)
		return;
	ssize_t n = process_vm_writev(q->wb_pid, q->wb_l, q->wb_n, q->wb_r, q->wb_n, 0);
	if (n != (ssize_t)q->wb_used) {
		/* a piece failed (unmapped meanwhile): the others one by one */
		for (uint32_t i = 0; i < q->wb_n; i++)
			vm_write(q->wb_pid, q->wb_l[i].iov_base, q->wb_r[i].iov_base, (uint32_t)q->wb_l[i].iov_len);
	}
	q->wb_n = 0;
	q->wb_used = 0;
	sw_mem_pending = 0;
}

int sw_mem_write(int32_t pid, void *dst, const void *src, uint32_t len)
{
	if (!pid)
		return sw_copy_safe(dst, src, len);
	struct sw_memq *q = memq();
	if (!q || len > SW_WB_CAP) {
		sw_mem_flush(); /* in order with what is waiting */
		return vm_write(pid, src, dst, len);
	}
	if (q->wb_n && (q->wb_pid != pid || q->wb_n == SW_WB_IOV || q->wb_used + len > SW_WB_CAP))
		sw_mem_flush_slow();
	uint8_t *l = q->wb_buf + q->wb_used;
	memcpy(l, src, len);
	struct iovec *last = q->wb_n ? &q->wb_r[q->wb_n - 1] : NULL;
	if (last && (uint8_t *)last->iov_base + last->iov_len == (uint8_t *)dst) {
		last->iov_len += len; /* the next bytes of the same place: one piece */
		q->wb_l[q->wb_n - 1].iov_len += len;
	} else {
		q->wb_l[q->wb_n] = (struct iovec){.iov_base = l, .iov_len = len};
		q->wb_r[q->wb_n] = (struct iovec){.iov_base = dst, .iov_len = len};
		q->wb_n++;
	}
	q->wb_pid = pid;
	q->wb_used += len;
	sw_mem_pending = q->wb_n;
	return 0;
}

int sw_mem_read(int32_t pid, void *dst, const void *src, uint32_t len)
{
	if (!pid)
		return sw_copy_safe(dst, src, len);
	sw_mem_flush();
	return vm_read(pid, dst, src, len);
}

void sw_mem_ra_begin(void)
{
	if (sw_any_remote_mr() && memq())
		t_mq->ra_depth++;
}

void sw_mem_ra_end(void)
{
	struct sw_memq *q = t_mq;
	if (q && q->ra_depth && --q->ra_depth == 0)
		q->ra_len = 0;
}

/* A read of len bytes at src of process pid, which has avail bytes (>= len)
 * readable from src: from the read-ahead buffer of the scope, filled with up
 * to SW_RA_CAP of them in one call when it does not hold these. */
static int mem_read_ahead(int32_t pid, void *dst, const uint8_t *src, uint32_t len, uint64_t avail)
{
	struct sw_memq *q = t_mq;
	if (!q || !q->ra_depth || len > SW_RA_CAP)
		return sw_mem_read(pid, dst, src, len);
	uint64_t a = (uint64_t)(uintptr_t)src;
	if (!(q->ra_len && q->ra_pid == pid && a >= q->ra_base && a + len <= q->ra_base + q->ra_len)) {
		sw_mem_flush();
		uint32_t n = (uint32_t)RTE_MIN(avail, (uint64_t)SW_RA_CAP);
		q->ra_len = 0;
		if (vm_read(pid, q->ra_buf, src, n) != 0)
			return vm_read(pid, dst, src, len); /* part of it is gone: just these bytes */
		q->ra_pid = pid;
		q->ra_base = a;
		q->ra_len = n;
	}
	memcpy(dst, q->ra_buf + (a - q->ra_base), len);
	return 0;
}

int sw_mem_atomic(int32_t pid, uint64_t *p, bool cmp_swap, uint64_t cmp, uint64_t val, uint64_t *orig)
{
	if (!pid)
		return sw_atomic_safe(p, cmp_swap, cmp, val, orig);
	uint64_t v;
	sw_mem_flush();
	rte_spinlock_lock(&g_atomic_lock);
	int r = sw_mem_read(pid, &v, p, sizeof(v));
	if (!r) {
		*orig = v;
		if (!cmp_swap || v == cmp) {
			/* not batched: a word that cannot be written (a read-only
			 * page, an ODP page gone) fails the atomic, not its ACK */
			v = cmp_swap ? val : v + val;
			r = vm_write(pid, &v, p, sizeof(v));
		}
	}
	rte_spinlock_unlock(&g_atomic_lock);
	return r;
}

int sw_mem_store64(int32_t pid, uint64_t *p, uint64_t val)
{
	if (!pid)
		return sw_store_safe(p, val);
	/* after every write before it, under the lock of the engine's atomics,
	 * and not batched: one process_vm_writev of the 8 aligned bytes, whose
	 * failure (a read-only page, an ODP page gone) fails the ATOMIC WRITE */
	sw_mem_flush();
	rte_spinlock_lock(&g_atomic_lock);
	int r = vm_write(pid, &val, p, sizeof(val));
	rte_spinlock_unlock(&g_atomic_lock);
	return r;
}

void sw_mem_writeback(int32_t pid, const void *p, uint64_t len)
{
	/* another process' memory is not mapped here: its bytes were written
	 * by the kernel (process_vm_writev), nothing of them is in a cache
	 * line of ours to write back */
	if (!pid)
		sw_writeback_safe(p, len);
}

/* Where the engine finds the bytes [addr, addr + len) an SGE names: its
 * MR (by key) must still be registered, cover them and, unless pd is
 * SW_PD_CHECKED, belong to protection domain pd. *pid gets the process
 * (0: this one), *odp whether the MR is on demand, and the return value the
 * address to copy at; NULL when the SGE names nothing the engine may touch
 * (deregistered meanwhile). */
static uint8_t *sge_resolve(uint32_t pd, uint32_t key, uint64_t addr, uint32_t len, int32_t *pid, bool *odp)
{
	const struct sw_mr *m = sw_mr_range(pd, key, addr, len);
	if (!m)
		return NULL;
	*pid = m->pid;
	*odp = sw_mr_odp(m);
	return (uint8_t *)(uintptr_t)(addr + (uint64_t)m->delta);
}

/* A write into an ODP MR of another process is not batched: a page that is
 * not mapped must fail this message (a NAK, an error completion), which a
 * write found failing at the next flush could no longer do. */
static int mem_write_odp(int32_t pid, void *dst, const void *src, uint32_t len)
{
	if (!pid)
		return sw_copy_safe(dst, src, len);
	sw_mem_flush(); /* in order with what is waiting */
	return vm_write(pid, src, dst, len);
}

int sw_sge_copy_in_slow(uint32_t pd, const struct dpv_sge *sge, uint32_t n, uint32_t off, const void *src,
			uint32_t len)
{
	const uint8_t *s = src;
	int ret = 0;
	for (uint32_t i = 0; i < n && len; i++) {
		if (off >= sge[i].length) {
			off -= sge[i].length;
			continue;
		}
		uint32_t chunk = RTE_MIN(sge[i].length - off, len);
		int32_t pid = 0;
		bool odp = false;
		uint8_t *p = sge_resolve(pd, sge[i].lkey, sge[i].addr + off, chunk, &pid, &odp);
		if (!p)
			return -EACCES; /* deregistered: not a byte more */
		if ((odp ? mem_write_odp(pid, p, s, chunk) : sw_mem_write(pid, p, s, chunk)) != 0)
			ret = -EFAULT;
		s += chunk;
		len -= chunk;
		off = 0;
	}
	return ret;
}

int sw_sge_copy_out_slow(uint32_t pd, const struct dpv_sge *sge, uint32_t n, uint32_t off, void *dst,
			 uint32_t len)
{
	uint8_t *d = dst;
	for (uint32_t i = 0; i < n && len; i++) {
		if (off >= sge[i].length) {
			off -= sge[i].length;
			continue;
		}
		uint32_t chunk = RTE_MIN(sge[i].length - off, len);
		int32_t pid = 0;
		bool odp = false;
		const uint8_t *p = sge_resolve(pd, sge[i].lkey, sge[i].addr + off, chunk, &pid, &odp);
		if (!p) {
			memset(dst, 0, (size_t)(d - (uint8_t *)dst) + len);
			return -EACCES; /* deregistered: the caller sends nothing */
		}
		int r = pid ? mem_read_ahead(pid, d, p, chunk, sge[i].length - off) : sw_mem_read(0, d, p, chunk);
		if (r != 0 && odp) {
			memset(dst, 0, (size_t)(d - (uint8_t *)dst) + len);
			return -EFAULT; /* an ODP page is not there: the WQE fails */
		}
		if (r != 0)
			memset(d, 0, chunk); /* gone: send zeroes rather than stale bytes */
		d += chunk;
		len -= chunk;
		off = 0;
	}
	if (len)
		memset(d, 0, len); /* the SGEs changed under us: never old frame bytes */
	return 0;
}
