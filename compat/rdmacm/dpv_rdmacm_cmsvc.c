/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * The per-process CM service of the drop-in librdmacm.so.1: one CM runtime
 * (lib/cmrt, the IB CM on QP 1) per device, opened on first need, and one
 * background thread that polls every runtime with CLOCK_MONOTONIC time.
 * When a round handed no MAD to any agent the thread naps 100 us (a
 * compromise: CM exchanges are rare and latency-tolerant, and 10 000
 * wake-ups a second cost well under 1% of a core); it never busy-spins.
 * The thread is started by the first dpv_rdmacm_cmsvc_rt() call. A device's
 * runtime is opened when an id of the device first needs the CM (Linux's
 * ib_cm runs on every port: a REQ to a device of this process whose CM was
 * never needed goes unanswered here; test rdmacm-bad relies on it to have a
 * silent peer in one process). When no CM id is left in any
 * runtime (the last rdma_cm id destroyed and its TIMEWAIT over: nothing
 * listens, connects or retransmits; checked every CMSVC_IDLE_ROUNDS idle
 * rounds) the thread closes the runtimes and ends; the next
 * dpv_rdmacm_cmsvc_rt() opens them and starts it again. At exit()
 * (an atexit handler registered then, so it runs before dpverbs' own, which
 * stops the ports) every CM id still alive is destroyed as Linux does when
 * the process that owns an rdma_cm id exits (ucma_close -> rdma_destroy_id):
 * a connected id sends a DREQ, a connecting one a REJ; the sends are given
 * up to CMSVC_FLUSH_ROUNDS polls to leave, then the thread is stopped and the
 * runtimes closed. The library destructor does the same without the sends
 * when the handler did not run (dlclose).
 *
 * Locking: g_svc.lock serialises every use of the runtimes and agents: the
 * thread holds it while polling (events are delivered with it held), and
 * the rdma_* calls take it with dpv_rdmacm_cmsvc_lock().
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dpv_cmrt.h"
#include "dpv_rdmacm.h"
#include "dpv_rdmacm_cmsvc.h"

#define CMSVC_MAX_DEVS 16
#define CMSVC_NAP_NS 100000L
#define CMSVC_FLUSH_ROUNDS 20 /* x 1 ms at exit, only when something was sent */
#define CMSVC_IDLE_ROUNDS 128 /* idle rounds between two looks for a CM id left */

static struct {
	pthread_mutex_t lock;
	pthread_t thread;
	bool running, stop;
	bool exited;   /* the thread ended by itself (no CM id left), not joined yet */
	bool exiting;  /* the atexit handler ran: the CM ids are gone */
	bool atexit_set;
	struct ibv_context *ctx[CMSVC_MAX_DEVS];
	struct dpv_cmrt *rt[CMSVC_MAX_DEVS];
	unsigned int n;
} g_svc = {.lock = PTHREAD_MUTEX_INITIALIZER};

uint64_t dpv_rdmacm_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* An environment knob in [0, max], or def when unset or out of range. */
static uint8_t env_knob(const char *name, unsigned long max, uint8_t def)
{
	const char *v = getenv(name);
	char *end;

	if (v == NULL || *v == '\0')
		return def;
	unsigned long n = strtoul(v, &end, 0);
	return *end == '\0' && n <= max ? (uint8_t)n : def;
}

uint8_t dpv_rdmacm_cm_timeout(void)
{
	return env_knob("DPVERBS_RDMACM_CM_TIMEOUT", 31, DPV_RDMACM_CM_TIMEOUT);
}

uint8_t dpv_rdmacm_cm_retries(void)
{
	return env_knob("DPVERBS_RDMACM_CM_RETRIES", 15, DPV_RDMACM_CM_RETRIES);
}

void dpv_rdmacm_cmsvc_lock(void)
{
	pthread_mutex_lock(&g_svc.lock);
}

void dpv_rdmacm_cmsvc_unlock(void)
{
	pthread_mutex_unlock(&g_svc.lock);
}

/* No CM id in use in any runtime and no address waiting for its neighbour:
 * nothing to poll for. g_svc.lock held. */
static bool cmsvc_idle(void)
{
	if (dpv_rdmacm_neigh_pending())
		return false;
	for (unsigned int i = 0; i < g_svc.n; i++)
		if (dpv_cm_ids_in_use(dpv_cmrt_agent(g_svc.rt[i])) != 0)
			return false;
	return true;
}

/* Closes every runtime. g_svc.lock held. */
static void cmsvc_close_all(void)
{
	for (unsigned int i = 0; i < g_svc.n; i++)
		dpv_cmrt_close(g_svc.rt[i]);
	g_svc.n = 0;
}

static void *cmsvc_thread(void *arg)
{
	unsigned int idle = 0;

	(void)arg;
	/* a name tools and tests can see (/proc/PID/task/TID/comm): the process
	 * runs its CM, e.g. an rping -s is listening */
	pthread_setname_np(pthread_self(), "dpv-cm");
	for (;;) {
		int got = 0;

		pthread_mutex_lock(&g_svc.lock);
		if (g_svc.stop) {
			pthread_mutex_unlock(&g_svc.lock);
			return NULL;
		}
		for (unsigned int i = 0; i < g_svc.n; i++) {
			int r = dpv_cmrt_poll(g_svc.rt[i], dpv_rdmacm_now_ns());
			if (r > 0)
				got += r;
		}
		idle = got ? 0 : idle + 1;
		if (idle >= CMSVC_IDLE_ROUNDS) {
			idle = 0;
			if (cmsvc_idle()) {
				/* the last id is gone: stop (dpv_rdmacm_cmsvc_rt starts it again) */
				cmsvc_close_all();
				g_svc.running = false;
				g_svc.exited = true;
				pthread_mutex_unlock(&g_svc.lock);
				return NULL;
			}
		}
		pthread_mutex_unlock(&g_svc.lock);
		got += dpv_rdmacm_neigh_poll(dpv_rdmacm_now_ns()); /* rdma_resolve_addr waiting for ARP/ND */
		if (got == 0) {
			struct timespec nap = {0, CMSVC_NAP_NS};
			nanosleep(&nap, NULL);
		}
	}
}

static void cmsvc_exit(void);

/* g_svc.lock held. */
static int cmsvc_start(void)
{
	if (g_svc.running)
		return 0;
	if (g_svc.exited) {
		/* it ended after unlocking: the join does not wait for the lock */
		pthread_join(g_svc.thread, NULL);
		g_svc.exited = false;
	}
	g_svc.stop = false;
	if (pthread_create(&g_svc.thread, NULL, cmsvc_thread, NULL) != 0)
		return -EAGAIN;
	g_svc.running = true;
	if (!g_svc.atexit_set && atexit(cmsvc_exit) == 0)
		g_svc.atexit_set = true;
	return 0;
}

static struct dpv_cmrt *cmsvc_find(struct ibv_context *ctx)
{
	for (unsigned int i = 0; i < g_svc.n; i++)
		if (g_svc.ctx[i] == ctx)
			return g_svc.rt[i];
	return NULL;
}

static struct dpv_cmrt *cmsvc_open(struct ibv_context *ctx)
{
	/* 1024 CM ids per device (listeners, connections, UD ids, TIMEWAIT); lib/cm skips its
	 * timer scan while nothing is due, so an idle big table costs nothing */
	struct dpv_cmrt_cfg cfg = {.event = dpv_rdmacm_cm_event, .timewait_ns = 100000000, .max_ids = 1024};

	if (g_svc.n == CMSVC_MAX_DEVS) {
		errno = ENOMEM;
		return NULL;
	}
	struct dpv_cmrt *rt = dpv_cmrt_open(ctx, &cfg);
	if (rt == NULL)
		return NULL;
	g_svc.ctx[g_svc.n] = ctx;
	g_svc.rt[g_svc.n++] = rt;
	return rt;
}

struct dpv_cmrt *dpv_rdmacm_cmsvc_rt(struct ibv_context *ctx)
{
	struct dpv_cmrt *rt = cmsvc_find(ctx);

	if (rt != NULL)
		return rt;
	if (g_svc.exiting) {
		errno = ESHUTDOWN;
		return NULL;
	}
	rt = cmsvc_open(ctx);
	if (rt == NULL)
		return NULL;
	if (cmsvc_start() != 0) {
		errno = EAGAIN;
		return NULL;
	}
	return rt;
}

struct ibv_context *dpv_rdmacm_cmsvc_ctx(const struct dpv_cm_agent *agent)
{
	for (unsigned int i = 0; i < g_svc.n; i++)
		if (dpv_cmrt_agent(g_svc.rt[i]) == agent)
			return g_svc.ctx[i];
	return NULL;
}

bool dpv_rdmacm_cmsvc_exiting(void)
{
	return g_svc.exiting;
}

/* Destroys every live CM id of every runtime (DREQ / REJ as lib/cm's
 * dpv_cm_destroy_id); the number destroyed. g_svc.lock held. */
static unsigned int destroy_all_ids(void)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < g_svc.n; i++) {
		struct dpv_cm_agent *a = dpv_cmrt_agent(g_svc.rt[i]);

		for (uint32_t k = 0; k < a->nids; k++) {
			struct dpv_cm_id *id = &a->ids[k];

			if (!id->in_use || id->destroyed)
				continue;
			id->ctx = NULL;
			dpv_cm_destroy_id(id);
			n++;
		}
	}
	return n;
}

/* Stops the thread and closes the runtimes; flush: poll them first so that
 * what the destroyed ids sent leaves (send completions reaped). */
static void cmsvc_shutdown(bool flush)
{
	pthread_mutex_lock(&g_svc.lock);
	bool join = g_svc.running || g_svc.exited;
	g_svc.stop = true;
	pthread_mutex_unlock(&g_svc.lock);
	if (join)
		pthread_join(g_svc.thread, NULL);
	g_svc.running = false;
	g_svc.exited = false;
	for (int r = 0; flush && r < CMSVC_FLUSH_ROUNDS; r++) {
		struct timespec nap = {0, 1000000L};

		pthread_mutex_lock(&g_svc.lock);
		for (unsigned int i = 0; i < g_svc.n; i++)
			dpv_cmrt_poll(g_svc.rt[i], dpv_rdmacm_now_ns());
		pthread_mutex_unlock(&g_svc.lock);
		nanosleep(&nap, NULL);
	}
	pthread_mutex_lock(&g_svc.lock);
	cmsvc_close_all();
	pthread_mutex_unlock(&g_svc.lock);
}

bool dpv_rdmacm_cmsvc_running(void)
{
	pthread_mutex_lock(&g_svc.lock);
	bool r = g_svc.running;
	pthread_mutex_unlock(&g_svc.lock);
	return r;
}

/* atexit: what Linux does for the ids of an exiting process, before
 * dpverbs stops its ports (its handler was registered earlier). */
static void cmsvc_exit(void)
{
	pthread_mutex_lock(&g_svc.lock);
	g_svc.exiting = true;
	unsigned int n = destroy_all_ids();
	pthread_mutex_unlock(&g_svc.lock);
	cmsvc_shutdown(n > 0);
}

/* fork(): the child has no CM thread and may not use the parent's GSI QPs
 * (nor send a DREQ for the parent's connections at its exit): it forgets
 * the runtimes and the thread (leaked, as the kernel's CM ids stay the
 * parent's) and opens its own on first need. */
static void cmsvc_atfork_child(void)
{
	pthread_mutex_init(&g_svc.lock, NULL);
	g_svc.running = false;
	g_svc.exited = false;
	g_svc.stop = false;
	g_svc.n = 0;
	dpv_rdmacm_neigh_forget();
}

__attribute__((constructor)) static void cmsvc_init(void)
{
	pthread_atfork(NULL, NULL, cmsvc_atfork_child);
}

__attribute__((destructor)) static void cmsvc_fini(void)
{
	/* exit() from a signal handler that interrupted a call holding the
	 * lock (qperf's SIGURG during rdma_listen) would wait for ever: the
	 * CM thread holds it only briefly, so a lock not had within a second
	 * is that case, and nothing can be cleaned up safely then */
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 1;
	if (pthread_mutex_timedlock(&g_svc.lock, &until) != 0)
		return;
	g_svc.exiting = true;
	pthread_mutex_unlock(&g_svc.lock);
	cmsvc_shutdown(false);
}
