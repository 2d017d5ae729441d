/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * The per-process CM service of the drop-in librdmacm.so.1: one CM runtime
 * (lib/cmrt, the IB CM on QP 1) per device, opened on first need, and one
 * background thread that polls every runtime with CLOCK_MONOTONIC time.
 * When a round handed no MAD to any agent the thread naps 100 us (a
 * compromise: CM exchanges are rare and latency-tolerant, and 10 000
 * wake-ups a second cost well under 1% of a core); it never busy-spins.
 * The thread is started by the first dpv_rdmacm_cmsvc_rt() call; it stops
 * and closes the runtimes when no CM id is left in any of them (the last
 * rdma_cm id destroyed and its TIMEWAIT over: nothing listens, connects or
 * retransmits), and the next dpv_rdmacm_cmsvc_rt() opens them and starts
 * it again. The library destructor stops it too.
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

static struct {
	pthread_mutex_t lock;
	pthread_t thread;
	bool running, stop;
	bool exited; /* the thread ended by itself and is not joined yet */
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

void dpv_rdmacm_cmsvc_lock(void)
{
	pthread_mutex_lock(&g_svc.lock);
}

void dpv_rdmacm_cmsvc_unlock(void)
{
	pthread_mutex_unlock(&g_svc.lock);
}

/* No id in use in any runtime: nothing to poll for. g_svc.lock held. */
static bool cmsvc_idle(void)
{
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
	(void)arg;
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
		if (cmsvc_idle()) {
			/* the last id is gone: stop (restarted by dpv_rdmacm_cmsvc_rt) */
			cmsvc_close_all();
			g_svc.running = false;
			g_svc.exited = true;
			pthread_mutex_unlock(&g_svc.lock);
			return NULL;
		}
		pthread_mutex_unlock(&g_svc.lock);
		if (got == 0) {
			struct timespec nap = {0, CMSVC_NAP_NS};
			nanosleep(&nap, NULL);
		}
	}
}

/* g_svc.lock held. */
static int cmsvc_start(void)
{
	if (g_svc.running)
		return 0;
	if (g_svc.exited) {
		/* it left after unlocking: the join does not wait for the lock */
		pthread_join(g_svc.thread, NULL);
		g_svc.exited = false;
	}
	g_svc.stop = false;
	if (pthread_create(&g_svc.thread, NULL, cmsvc_thread, NULL) != 0)
		return -EAGAIN;
	g_svc.running = true;
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
	struct dpv_cmrt_cfg cfg = {.event = dpv_rdmacm_cm_event, .timewait_ns = 100000000};

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

/*
 * As Linux's ib_cm, which runs on every port: the first need opens the
 * runtime of every device (a REQ for a port nobody listens on gets its
 * REJ), ctx's first.
 */
struct dpv_cmrt *dpv_rdmacm_cmsvc_rt(struct ibv_context *ctx)
{
	struct dpv_rdmacm_dev *devs;
	struct dpv_cmrt *rt = cmsvc_find(ctx);

	if (rt != NULL)
		return rt;
	rt = cmsvc_open(ctx);
	if (rt == NULL)
		return NULL;
	int n = dpv_rdmacm_devices(&devs);
	for (int i = 0; i < n; i++)
		if (cmsvc_find(devs[i].verbs) == NULL)
			cmsvc_open(devs[i].verbs); /* a device whose CM cannot run stays without */
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

__attribute__((destructor)) static void cmsvc_fini(void)
{
	pthread_mutex_lock(&g_svc.lock);
	bool join = g_svc.running || g_svc.exited;
	g_svc.stop = true;
	pthread_mutex_unlock(&g_svc.lock);
	if (join)
		pthread_join(g_svc.thread, NULL);
	cmsvc_close_all();
	g_svc.running = false;
	g_svc.exited = false;
}

bool dpv_rdmacm_cmsvc_running(void)
{
	pthread_mutex_lock(&g_svc.lock);
	bool r = g_svc.running;
	pthread_mutex_unlock(&g_svc.lock);
	return r;
}
