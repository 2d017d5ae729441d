/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Copies into and out of registered memory that survive the memory being
 * unmapped.
 *
 * An RNIC pins the pages of an MR: an application may munmap or free()
 * memory it registered (UCX does: its registration cache keeps MRs of freed
 * buffers until it hears of the unmap, and its ud_verbs teardown frees the
 * posted receive buffers before it destroys the QP) and a packet arriving
 * meanwhile is DMAed into pages the process no longer sees: no harm. The
 * engine copies at the application's virtual address instead, so such a
 * copy would kill the process with SIGSEGV (seen: io_demo's ud_verbs
 * client, in the assist thread's sw_ud_rx, after UCX's "mpool ud_recv_skb
 * destroyed").
 *
 * sw_copy_safe() runs the copy under a per-thread guard: SIGSEGV/SIGBUS
 * while the guard is set return -EFAULT from the copy (the caller completes
 * the WQE in error, or sends zeroes), counted in sw_mem_faults and logged
 * once. Any other SIGSEGV/SIGBUS goes to the handler that was there before
 * (the application's, UCX's), or takes the default action: a real crash
 * stays a crash. The handler is installed when the driver starts, i.e.
 * after libraries loaded before the first verb (UCX's error handler among
 * them) installed theirs.
 *
 * The same guard makes on-demand paging safe in this process: a page of an
 * ODP MR (an implicit one covers the whole address space) that is not
 * mapped, or not writable, fails the access with -EFAULT, which completes
 * the WQE in error (sw_copy.h: sw_mr_odp) as a ConnectX's failed page fault.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <string.h>

#include "sw_loc.h"
#include "sw_log.h"

/* volatile: the stores around the copy must not be dropped as dead, nor
 * moved across it (memcpy is a builtin the compiler knows cannot read it) */
static __thread sigjmp_buf *volatile t_guard;
static struct sigaction g_old_segv, g_old_bus;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
uint64_t sw_mem_faults;

static void fault_handler(int sig, siginfo_t *si, void *uc)
{
	sigjmp_buf *jb = t_guard;
	if (jb) {
		t_guard = NULL;
		siglongjmp(*jb, 1);
	}
	struct sigaction *old = sig == SIGBUS ? &g_old_bus : &g_old_segv;
	if (old->sa_flags & SA_SIGINFO) {
		if (old->sa_sigaction) {
			old->sa_sigaction(sig, si, uc);
			return;
		}
	} else if (old->sa_handler != SIG_DFL && old->sa_handler != SIG_IGN) {
		old->sa_handler(sig);
		return;
	}
	/* nobody else's: the default action once the faulting access runs again */
	struct sigaction dfl = {.sa_handler = SIG_DFL};
	sigemptyset(&dfl.sa_mask);
	sigaction(sig, &dfl, NULL);
}

static void install(void)
{
	struct sigaction sa = {.sa_sigaction = fault_handler, .sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK};
	sigemptyset(&sa.sa_mask);
	/* SA_NODEFER: siglongjmp(…, 0) out of the handler leaves the signal
	 * unblocked, so the next fault of this thread is caught again */
	if (sigaction(SIGSEGV, &sa, &g_old_segv) != 0 || sigaction(SIGBUS, &sa, &g_old_bus) != 0)
		SW_LOG(WARNING, "cannot install the fault handler for copies into registered memory: %s",
		       strerror(errno));
}

void sw_fault_init(void)
{
	pthread_once(&g_once, install);
}

static void fault_seen(const void *dst, const void *src, size_t n)
{
	if (__atomic_fetch_add(&sw_mem_faults, 1, __ATOMIC_RELAXED) == 0)
		SW_LOG(WARNING,
		       "a copy of %zu bytes from %p to %p faulted: registered memory is not mapped (a page of "
		       "an on-demand MR, or memory unmapped under its MR; counted in sw_mem_faults; logged once)",
		       n, src, dst);
}

int sw_copy_safe(void *dst, const void *src, size_t n)
{
	sigjmp_buf jb;
	if (sigsetjmp(jb, 0)) {
		fault_seen(dst, src, n);
		return -EFAULT;
	}
	t_guard = &jb;
	__asm__ volatile("" ::: "memory");
	memcpy(dst, src, n);
	__asm__ volatile("" ::: "memory");
	t_guard = NULL;
	return 0;
}

int sw_atomic_safe(uint64_t *p, bool cmp_swap, uint64_t cmp, uint64_t val, uint64_t *orig)
{
	sigjmp_buf jb;
	if (sigsetjmp(jb, 0)) {
		fault_seen(p, p, sizeof(*p));
		return -EFAULT;
	}
	t_guard = &jb;
	__asm__ volatile("" ::: "memory");
	uint64_t o = cmp;
	if (cmp_swap)
		__atomic_compare_exchange_n(p, &o, val, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
	else
		o = __atomic_fetch_add(p, val, __ATOMIC_SEQ_CST);
	__asm__ volatile("" ::: "memory");
	t_guard = NULL;
	*orig = o;
	return 0;
}

int sw_store_safe(uint64_t *p, uint64_t val)
{
	sigjmp_buf jb;
	if (sigsetjmp(jb, 0)) {
		fault_seen(p, &val, sizeof(val));
		return -EFAULT;
	}
	t_guard = &jb;
	__asm__ volatile("" ::: "memory");
	__atomic_store_n(p, val, __ATOMIC_SEQ_CST);
	__asm__ volatile("" ::: "memory");
	t_guard = NULL;
	return 0;
}

#define SW_CACHE_LINE 64

int sw_writeback_safe(const void *p, size_t n)
{
	sigjmp_buf jb;
	if (sigsetjmp(jb, 0)) {
		fault_seen(p, p, n);
		return -EFAULT;
	}
	t_guard = &jb;
	__asm__ volatile("" ::: "memory");
#if defined(__x86_64__)
	/* CLFLUSH (every x86-64 has it) writes each line back and evicts it;
	 * the fence orders them before what follows (the response) */
	uintptr_t a = (uintptr_t)p & ~(uintptr_t)(SW_CACHE_LINE - 1), end = (uintptr_t)p + n;
	for (; a < end; a += SW_CACHE_LINE)
		__asm__ volatile("clflush %0" : "+m"(*(volatile char *)a));
	__asm__ volatile("mfence" ::: "memory");
#else
	(void)n;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
	__asm__ volatile("" ::: "memory");
	t_guard = NULL;
	return 0;
}
