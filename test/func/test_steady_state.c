/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The steady-state data path makes no heap allocation and no system call.
 *
 * Black-box, inline progress (the built-in default: the application's
 * thread drives the engine in ibv_post_send and ibv_poll_cq). After a
 * warm-up, the main thread runs a measured window of traffic in one process
 * (dpv0 -> dpv1, software loopback):
 *   UD   SEND 64 B, receives reposted;
 *   RC   SEND 64 B (inline and from an MR), RDMA WRITE 4 KiB (several
 *        packets), RDMA READ 4 KiB, FETCH_ADD and CMP_SWP;
 * posting, polling both ends' CQs and reposting receives, with nothing
 * printed. Counted during the window:
 *   heap: malloc, calloc, realloc, memalign/posix_memalign/aligned_alloc and
 *         free calls of the measured thread from any library, by
 *         interposing them in this binary (so not built with sanitizers,
 *         which interpose them themselves);
 *   system calls of the measured thread: a seccomp filter with
 *         SECCOMP_RET_USER_NOTIF is installed on this thread only when the
 *         window opens; a supervisor thread receives every system call it
 *         makes, counts it by number, and lets it run (FLAG_CONTINUE).
 * Asserts: the instruments count a deliberate getppid() and malloc() in an
 * armed window exactly once each; then every operation of the measured
 * window completed successfully with the right data, with zero allocations
 * and zero system calls. The engine's other threads (the parked assist
 * thread, EAL's interrupt thread) are not the data path: neither filtered
 * nor counted.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include <infiniband/verbs.h>

#include "dpvt_check.h"
#include "dpvt_verbs.h"

/* ---- heap calls, counted while armed ---- */

static _Atomic bool g_armed;
static _Atomic unsigned long g_heap_calls;
/* Only the measured thread's calls count: EAL's interrupt thread allocates
 * and frees an alarm entry every 100 ms (the link poll), whatever the data
 * path does, so a window that spans one (a long one on a loaded machine)
 * would count it. Initial-exec TLS of the executable: no allocation. */
static _Thread_local bool t_measured;

extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t n, size_t sz);
extern void *__libc_realloc(void *p, size_t n);
extern void *__libc_memalign(size_t align, size_t n);
extern void __libc_free(void *p);

static inline void heap_count(void)
{
	if (t_measured && atomic_load_explicit(&g_armed, memory_order_relaxed))
		atomic_fetch_add_explicit(&g_heap_calls, 1, memory_order_relaxed);
}

void *malloc(size_t n)
{
	heap_count();
	return __libc_malloc(n);
}

void *calloc(size_t n, size_t sz)
{
	heap_count();
	return __libc_calloc(n, sz);
}

void *realloc(void *p, size_t n)
{
	heap_count();
	return __libc_realloc(p, n);
}

void free(void *p)
{
	if (p)
		heap_count();
	__libc_free(p);
}

void *memalign(size_t align, size_t n)
{
	heap_count();
	return __libc_memalign(align, n);
}

void *aligned_alloc(size_t align, size_t n)
{
	heap_count();
	return __libc_memalign(align, n);
}

int posix_memalign(void **out, size_t align, size_t n)
{
	heap_count();
	void *p = __libc_memalign(align, n);
	if (!p)
		return ENOMEM;
	*out = p;
	return 0;
}

/* ---- system calls of the measured thread ---- */

#define MAX_NR 512
static _Atomic int g_listener = -1;
static _Atomic unsigned long g_sys_calls;
static _Atomic unsigned long g_sys_by_nr[MAX_NR];

/* Receives every system call of the filtered thread, counts it while the
 * window is open, and lets it run. Runs until the process exits. */
static void *supervisor(void *arg)
{
	(void)arg;
	int fd;
	while ((fd = atomic_load(&g_listener)) < 0)
		usleep(1000);
	for (;;) {
		struct seccomp_notif req;
		struct seccomp_notif_resp resp;
		memset(&req, 0, sizeof(req));
		if (ioctl(fd, SECCOMP_IOCTL_NOTIF_RECV, &req) != 0) {
			if (errno == EINTR || errno == ENOENT)
				continue;
			return NULL;
		}
		if (atomic_load(&g_armed)) {
			atomic_fetch_add(&g_sys_calls, 1);
			if (req.data.nr >= 0 && req.data.nr < MAX_NR)
				atomic_fetch_add(&g_sys_by_nr[req.data.nr], 1);
		}
		memset(&resp, 0, sizeof(resp));
		resp.id = req.id;
		resp.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
		ioctl(fd, SECCOMP_IOCTL_NOTIF_SEND, &resp);
	}
	return NULL;
}

/* Every system call of this thread from now on goes to the supervisor. */
static int filter_this_thread(void)
{
	struct sock_filter f[] = {BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF)};
	struct sock_fprog prog = {.len = 1, .filter = f};
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
		return -1;
	int fd = (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
	if (fd < 0)
		return -1;
	atomic_store(&g_listener, fd);
	return 0;
}

/* ---- traffic (no printing, no sleeping: failures are recorded) ---- */

#define WINDOW_ROUNDS 2000
#define SPIN_LIMIT 100000000ul

static unsigned long g_fail;

/* Poll cq until one completion (driving drive as well); record failures. */
static void wait_one(struct ibv_cq *cq, struct ibv_cq *drive, enum ibv_wc_opcode op)
{
	struct ibv_wc wc;
	for (unsigned long spins = 0; spins < SPIN_LIMIT; spins++) {
		if (drive) {
			struct ibv_wc dummy;
			if (ibv_poll_cq(drive, 0, &dummy) < 0)
				g_fail++;
		}
		int n = ibv_poll_cq(cq, 1, &wc);
		if (n == 0)
			continue;
		if (n < 0 || wc.status != IBV_WC_SUCCESS || wc.opcode != op)
			g_fail++;
		return;
	}
	g_fail++;
}

static void post(struct ibv_qp *qp, struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad;
	if (ibv_post_send(qp, wr, &bad) != 0)
		g_fail++;
}

static void post_recv(struct dpvt_ep *e, size_t off, uint32_t len)
{
	struct ibv_sge sge = {.addr = (uintptr_t)(e->buf + off), .length = len, .lkey = e->mr->lkey};
	struct ibv_recv_wr wr = {.wr_id = off, .sg_list = &sge, .num_sge = 1}, *bad;
	if (ibv_post_recv(e->qp, &wr, &bad) != 0)
		g_fail++;
}

struct ud_pair {
	struct dpvt_ep a, b;
	struct ibv_ah *ah;
};

static void ud_round(struct ud_pair *u, uint32_t i)
{
	struct ibv_sge sge = {.addr = (uintptr_t)u->a.buf, .length = 64, .lkey = u->a.mr->lkey};
	struct ibv_send_wr wr = {.wr_id = i, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
				 .send_flags = IBV_SEND_SIGNALED};
	wr.wr.ud.ah = u->ah;
	wr.wr.ud.remote_qpn = u->b.qp->qp_num;
	wr.wr.ud.remote_qkey = u->b.qkey;
	memcpy(u->a.buf, &i, sizeof(i));
	post(u->a.qp, &wr);
	wait_one(u->a.scq, u->b.rcq, IBV_WC_SEND);
	wait_one(u->b.rcq, NULL, IBV_WC_RECV);
	uint32_t got;
	memcpy(&got, u->b.buf + 4096 + 40, sizeof(got)); /* after the GRH */
	if (got != i)
		g_fail++;
	post_recv(&u->b, 4096, 4096);
}

struct rc_pair {
	struct dpvt_ep a, b;
};

static void rc_op(struct rc_pair *r, struct ibv_send_wr *wr, enum ibv_wc_opcode op)
{
	post(r->a.qp, wr);
	wait_one(r->a.scq, r->b.rcq, op);
}

static void rc_round(struct rc_pair *r, uint32_t i)
{
	uint8_t *a = r->a.buf, *b = r->b.buf;
	struct ibv_sge sge = {.addr = (uintptr_t)a, .length = 64, .lkey = r->a.mr->lkey};
	struct ibv_send_wr wr = {.wr_id = i, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
				 .send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE};
	memcpy(a, &i, sizeof(i));
	rc_op(r, &wr, IBV_WC_SEND);                     /* SEND 64 B inline */
	wait_one(r->b.rcq, NULL, IBV_WC_RECV);
	post_recv(&r->b, 0, 8192);
	wr.send_flags = IBV_SEND_SIGNALED;
	rc_op(r, &wr, IBV_WC_SEND);                     /* SEND 64 B from the MR */
	wait_one(r->b.rcq, NULL, IBV_WC_RECV);
	post_recv(&r->b, 0, 8192);
	uint32_t got;
	memcpy(&got, b, sizeof(got));
	if (got != i)
		g_fail++;
	sge.length = 4096;
	wr.opcode = IBV_WR_RDMA_WRITE;                   /* WRITE 4 KiB: 4 packets */
	wr.wr.rdma.remote_addr = (uintptr_t)(b + 16384);
	wr.wr.rdma.rkey = r->b.mr->rkey;
	rc_op(r, &wr, IBV_WC_RDMA_WRITE);
	wr.opcode = IBV_WR_RDMA_READ;                    /* READ 4 KiB back */
	sge.addr = (uintptr_t)(a + 32768);
	rc_op(r, &wr, IBV_WC_RDMA_READ);
	if (memcmp(a + 32768, a, 4096) != 0)
		g_fail++;
	sge.addr = (uintptr_t)(a + 40960);
	sge.length = 8;
	wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
	wr.wr.atomic.remote_addr = (uintptr_t)(b + 49152);
	wr.wr.atomic.rkey = r->b.mr->rkey;
	wr.wr.atomic.compare_add = 1;
	rc_op(r, &wr, IBV_WC_FETCH_ADD);
	wr.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
	wr.wr.atomic.compare_add = 0;
	wr.wr.atomic.swap = 0;
	rc_op(r, &wr, IBV_WC_COMP_SWAP);
}

static int setup(struct ud_pair *u, struct rc_pair *r)
{
	if (dpvt_ud_ep_open(&u->a, "dpv0", 0x1234, false) || dpvt_ud_ep_open(&u->b, "dpv1", 0x1234, false))
		return -1;
	u->ah = dpvt_ah_new(u->a.pd, u->b.ctx, 1, 1);
	if (!u->ah)
		return -1;
	if (dpvt_ep_open(&r->a, "dpv0", 256, false) || dpvt_ep_open(&r->b, "dpv1", 256, false) ||
	    dpvt_ep_buf(&r->a, NULL, DPVT_TRAFFIC_BUF_LEN, DPVT_ACCESS_ALL) ||
	    dpvt_ep_buf(&r->b, NULL, DPVT_TRAFFIC_BUF_LEN, DPVT_ACCESS_ALL))
		return -1;
	r->a.qp = dpvt_ep_qp(&r->a, IBV_QPT_RC, 64, 64, NULL);
	r->b.qp = dpvt_ep_qp(&r->b, IBV_QPT_RC, 64, 64, NULL);
	if (!r->a.qp || !r->b.qp)
		return -1;
	struct dpvt_conn c = dpvt_conn_default();
	if (dpvt_connect(r->a.qp, r->a.ctx, &c, r->b.qp, r->b.ctx, &c, false))
		return -1;
	for (int k = 0; k < 8; k++)
		post_recv(&u->b, 4096, 4096);
	for (int k = 0; k < 8; k++)
		post_recv(&r->b, 0, 8192);
	return g_fail ? -1 : 0;
}

static void traffic(struct ud_pair *u, struct rc_pair *r, uint32_t rounds)
{
	for (uint32_t i = 0; i < rounds; i++) {
		ud_round(u, i);
		rc_round(r, i);
	}
}

int main(void)
{
	static struct ud_pair u;
	static struct rc_pair r;
	pthread_t sup;

	CHECK(setup(&u, &r) == 0, "set-up: UD and RC pairs dpv0 -> dpv1");
	if (dpvt_fail_count())
		return dpvt_finish();
	traffic(&u, &r, 200); /* warm-up: caches, first-use allocations */
	CHECK_EQ(g_fail, 0, "warm-up traffic: every operation succeeded");
	CHECK(pthread_create(&sup, NULL, supervisor, NULL) == 0, "supervisor thread");
	pthread_detach(sup);
	int fr = filter_this_thread();
	CHECK(fr == 0, "seccomp user-notification filter on the measured thread (%s)", fr ? strerror(errno) : "ok");
	if (fr)
		return dpvt_finish();

	/* the instruments see what they must: one system call, one allocation */
	t_measured = true;
	atomic_store(&g_armed, true);
	syscall(SYS_getppid);
	void *volatile probe = malloc(64);
	atomic_store(&g_armed, false);
	free(probe);
	CHECK_EQ(atomic_load(&g_sys_calls), 1, "instrument check: one getppid counted");
	CHECK_EQ(atomic_load(&g_sys_by_nr[SYS_getppid]), 1, "instrument check: counted as getppid");
	CHECK_EQ(atomic_load(&g_heap_calls), 1, "instrument check: one malloc counted");
	atomic_store(&g_sys_calls, 0);
	atomic_store(&g_sys_by_nr[SYS_getppid], 0);
	atomic_store(&g_heap_calls, 0);

	atomic_store(&g_armed, true);
	traffic(&u, &r, WINDOW_ROUNDS);
	atomic_store(&g_armed, false);

	unsigned long heap = atomic_load(&g_heap_calls), sys = atomic_load(&g_sys_calls);
	CHECK(g_fail == 0, "window: %d rounds of UD SEND, RC SEND x2, WRITE, READ, FETCH_ADD, CMP_SWP all "
	      "succeeded with the right data (%lu failures)", WINDOW_ROUNDS, g_fail);
	CHECK_EQ(heap, 0, "window: heap calls (malloc/calloc/realloc/memalign/free)");
	CHECK_EQ(sys, 0, "window: system calls of the polling thread");
	for (int nr = 0; nr < MAX_NR; nr++)
		if (atomic_load(&g_sys_by_nr[nr]))
			printf("  system call %d: %lu times\n", nr, atomic_load(&g_sys_by_nr[nr]));
	printf("window: %d rounds, %d work completions polled, %lu heap calls, %lu system calls\n",
	       WINDOW_ROUNDS, WINDOW_ROUNDS * 9, heap, sys);
	return dpvt_finish();
}
