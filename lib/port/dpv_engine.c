/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Engine contexts: who polls them and when. One turn of a context (RX
 * bursts and the loopback ring, each frame to dpv_rx.c, then the
 * transport's poll hook, with its transmits staged by dpv_tx.c); inline
 * progress from the application's calls, the assist thread, or one
 * service lcore per context.
 */
#include <errno.h>
#include <pthread.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <linux/futex.h>

#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_launch.h>

#include "dpv_engine.h"
#include "dpv_fault.h"

static dpv_poll_fn g_poll_fn;
static bool g_lcore_mode;
static _Atomic bool g_stop;
/* application threads blocked in ibv_get_cq_event after driving progress,
 * and the word a parked assist thread waits on (bumped to wake it) */
static _Atomic int g_app_blocked;
static _Atomic uint32_t g_assist_wake;
static _Atomic bool g_assist_parked;
static pthread_t g_assist;
static bool g_assist_running;

void dpv_port_set_poll_handler(dpv_poll_fn fn) { g_poll_fn = fn; }
bool dpv_engine_lcore_mode(void) { return g_lcore_mode; }

/* Must hold qc->rx_lock. */
static int qctx_poll_turn(struct dpv_qctx *qc, uint64_t now);

/* Must hold qc->rx_lock. What the turn sends (ACKs, responses, the
 * kernel's frames) leaves in bursts on ports where a burst is a system
 * call. */
static int qctx_poll_locked(struct dpv_qctx *qc, uint64_t now)
{
	dpv_port_tx_begin(qc);
	int n = qctx_poll_turn(qc, now);
	dpv_port_tx_end(qc);
	return n;
}

static int qctx_poll_turn(struct dpv_qctx *qc, uint64_t now)
{
	struct rte_mbuf *pkts[DPV_BURST];
	struct dpv_port *p = qc->port;
	int total = 0;
	uint16_t n;

	/* up to DPV_RX_BURSTS full bursts per turn, so that a context that
	 * receives faster than one burst per turn is not overrun */
	qc->rx_backlog = false;
	for (unsigned int b = 0; b < DPV_RX_BURSTS; b++) {
		n = rte_eth_rx_burst(p->eth_port, qc->qid, pkts, DPV_BURST);
		for (uint16_t i = 0; i < n; i++) {
			if (dpv_fault_rx(qc, &pkts[i]))
				continue;
			dpv_port_rx_frame(qc, pkts[i], false);
		}
		total += n;
		if (n < DPV_BURST)
			break;
		qc->rx_backlog = b + 1 == DPV_RX_BURSTS;
	}
	for (unsigned int b = 0; b < DPV_RX_BURSTS; b++) {
		n = (uint16_t)rte_ring_sc_dequeue_burst(qc->lo_ring, (void **)pkts, DPV_BURST, NULL);
		for (uint16_t i = 0; i < n; i++) {
			if (dpv_fault_rx(qc, &pkts[i]))
				continue;
			dpv_port_rx_frame(qc, pkts[i], true);
		}
		total += n;
		if (n < DPV_BURST)
			break;
	}
	if (unlikely(dpv_fault_enabled())) {
		struct rte_mbuf *held = dpv_fault_take_held(qc);
		if (held)
			dpv_port_rx_frame(qc, held, false);
	}
	dpv_neigh_timer(qc, now);
	if (unlikely(p->exc.on))
		total += dpv_exc_poll(qc);
	if (g_poll_fn)
		total += g_poll_fn(qc, now);
	return total;
}

int dpv_qctx_poll(struct dpv_qctx *qc)
{
	int n;
	if (!rte_spinlock_trylock(&qc->rx_lock))
		return 0;
	uint64_t now = rte_get_tsc_cycles();
	atomic_store_explicit(&qc->last_poll_tsc, now, memory_order_relaxed);
	n = qctx_poll_locked(qc, now);
	rte_spinlock_unlock(&qc->rx_lock);
	return n;
}

/* The assist thread's poll: does not count as the application polling. */
static int dpv_qctx_poll_assist(struct dpv_qctx *qc)
{
	int n;
	if (!rte_spinlock_trylock(&qc->rx_lock))
		return 0;
	n = qctx_poll_locked(qc, rte_get_tsc_cycles());
	rte_spinlock_unlock(&qc->rx_lock);
	return n;
}

int dpv_progress_all(void)
{
	struct dpv_runtime *rt = dpv_runtime_peek();
	int n = 0;
	if (!rt || g_lcore_mode)
		return 0;
	for (unsigned int i = 0; i < rt->n_ports; i++)
		for (uint16_t q = 0; q < rt->ports[i].n_qctx; q++)
			n += dpv_qctx_poll(&rt->ports[i].qctx[q]);
	return n;
}

void dpv_engine_app_blocking(bool on)
{
	if (!on) {
		atomic_fetch_sub(&g_app_blocked, 1);
		return;
	}
	atomic_fetch_add(&g_app_blocked, 1);
	atomic_fetch_add(&g_assist_wake, 1);
	if (atomic_load(&g_assist_parked))
		syscall(SYS_futex, &g_assist_wake, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

/* One turn of the assist thread: poll the contexts the application has
 * not polled lately. Returns the packets processed; *app_driving tells
 * whether the application polled every context within idle. */
static int assist_turn(struct dpv_runtime *rt, uint64_t now, uint64_t idle, bool *app_driving)
{
	int busy = 0;
	*app_driving = true;
	for (unsigned int i = 0; i < rt->n_ports; i++)
		for (uint16_t q = 0; q < rt->ports[i].n_qctx; q++) {
			struct dpv_qctx *qc = &rt->ports[i].qctx[q];
			uint64_t last = atomic_load_explicit(&qc->last_poll_tsc, memory_order_relaxed);
			if (now - last >= idle) {
				*app_driving = false;
				busy += dpv_qctx_poll_assist(qc);
			}
		}
	return busy;
}

static void *assist_main(void *arg)
{
	struct dpv_runtime *rt = arg;
	uint64_t idle = rt->tsc_hz / 1000000 * DPV_ASSIST_IDLE_US;
	uint64_t spin = rt->tsc_hz / 1000000 * DPV_ASSIST_SPIN_US;
	const struct timespec nap = {0, DPV_ASSIST_IDLE_US * 1000};
	const struct timespec park = {0, DPV_ASSIST_PARK_US * 1000};
	uint64_t last_work = 0;

	pthread_setname_np(pthread_self(), "dpv-assist");
	prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0); /* sleep as asked, not +50 us */
	while (!atomic_load(&g_stop)) {
		uint32_t wake = atomic_load(&g_assist_wake);
		uint64_t now = rte_get_tsc_cycles();
		bool app_driving;
		/* a thread that drove the engine blocks for an event: every
		 * context is ours now, however recently it was polled */
		bool blocked = atomic_load(&g_app_blocked) > 0;
		int busy = assist_turn(rt, now, blocked ? 0 : idle, &app_driving);
		if (busy) {
			last_work = now;
			continue;
		}
		/* the application polls every context itself: one spinner is
		 * enough; look again much later, or as soon as a thread of
		 * the application blocks (dpv_engine_app_blocking) */
		if (app_driving && !blocked) {
			atomic_store(&g_assist_parked, true);
			syscall(SYS_futex, &g_assist_wake, FUTEX_WAIT_PRIVATE, wake, &park, NULL, 0);
			atomic_store(&g_assist_parked, false);
			continue;
		}
		/* keep polling while traffic flows (a peer that only spins on
		 * memory, as ib_write_lat's target does, still gets its ACKs
		 * and READ responses at once); sleep once it has been quiet */
		if (now - last_work > spin)
			nanosleep(&nap, NULL);
		else
			rte_pause();
	}
	return NULL;
}

/* The contexts one service lcore polls. */
struct lcore_work {
	struct dpv_qctx *qc[DPV_MAX_PORTS * DPV_MAX_QUEUES];
	unsigned int n;
};
static struct lcore_work g_work[RTE_MAX_LCORE];

static int lcore_main(void *arg)
{
	struct lcore_work *w = arg;
	while (!atomic_load(&g_stop)) {
		for (unsigned int i = 0; i < w->n; i++) {
			struct dpv_qctx *qc = w->qc[i];
			rte_spinlock_lock(&qc->rx_lock);
			uint64_t now = rte_get_tsc_cycles();
			atomic_store_explicit(&qc->last_poll_tsc, now, memory_order_relaxed);
			qctx_poll_locked(qc, now);
			rte_spinlock_unlock(&qc->rx_lock);
		}
	}
	return 0;
}

static pid_t g_engine_pid; /* the process that runs the ports */

static void engine_stop(void)
{
	/* a child of fork() inherits this atexit handler but not the engine:
	 * stopping the ports from it would tear down the parent's (the DPDK
	 * memory is shared) and join threads it does not have */
	if (getpid() != g_engine_pid)
		return;
	atomic_store(&g_stop, true);
	if (g_assist_running)
		pthread_join(g_assist, NULL);
	g_assist_running = false;
	if (g_lcore_mode)
		rte_eal_mp_wait_lcore();
	dpv_runtime_shutdown();
}

int dpv_engine_start(struct dpv_runtime *rt)
{
	dpv_fault_init(&rt->conf.fault);
	if (!dpv_fault_enabled()) {
		static const struct rte_mbuf_dynflag lo_flag = {.name = "dpv_lo_trusted"};
		int bit = rte_mbuf_dynflag_register(&lo_flag);
		dpv_lo_trusted_flag = bit >= 0 ? RTE_BIT64(bit) : 0;
	}
	static const struct rte_mbuf_dynflag raw_flag = {.name = "dpv_lo_raw"};
	int raw_bit = rte_mbuf_dynflag_register(&raw_flag);
	dpv_lo_raw_flag = raw_bit >= 0 ? RTE_BIT64(raw_bit) : 0;
	if (rt->conf.progress == DPV_PROGRESS_LCORE) {
		/* the EAL lcores were made one per distinct CPU, in the order the
		 * configuration names the CPUs (dpv_port.c eal_up) */
		int cpu_of[RTE_MAX_LCORE];
		unsigned int n_lc = 0;
		for (unsigned int i = 0; i < rt->n_ports; i++) {
			const struct dpv_conf_port *cp = rt->ports[i].conf;
			for (uint16_t q = 0; q < rt->ports[i].n_qctx; q++) {
				int cpu = q < cp->n_lcores ? cp->lcores[q] : cp->lcores[0];
				unsigned int k;
				for (k = 0; k < n_lc; k++)
					if (cpu_of[k] == cpu)
						break;
				if (k == n_lc) {
					if (n_lc + 1 >= RTE_MAX_LCORE)
						return -ENODEV;
					cpu_of[n_lc++] = cpu;
				}
				struct lcore_work *w = &g_work[k + 1];
				struct dpv_qctx *qc = &rt->ports[i].qctx[q];
				qc->lcore = (int)k + 1;
				w->qc[w->n++] = qc;
			}
		}
		for (unsigned int k = 0; k < n_lc; k++)
			if (!rte_lcore_is_enabled(k + 1) || rte_eal_remote_launch(lcore_main, &g_work[k + 1], k + 1) != 0)
				return -EBUSY;
		g_lcore_mode = true;
	} else {
		if (pthread_create(&g_assist, NULL, assist_main, rt) != 0)
			return -errno;
		g_assist_running = true;
	}
	g_engine_pid = getpid();
	atexit(engine_stop);
	return 0;
}
