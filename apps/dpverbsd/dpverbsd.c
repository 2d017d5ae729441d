/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpverbsd: the daemon of shared mode (doc/man/dpverbsd.8.md). It owns the
 * configuration's ports (it is their DPDK primary process), runs the engine
 * on its lcores, or on its main thread with progress "inline", and serves
 * applications on a Unix socket: every process whose configuration says
 * "mode": "shared" attaches to it through the remote driver, as processes
 * attach to an RNIC.
 *
 *   dpverbsd [options] [CONFIG]
 *
 * SIGTERM or SIGINT: the socket goes (no new applications), outstanding
 * work gets DPVD_DRAIN_MS to complete, then every QP is moved to the error
 * state (its work requests complete with IBV_WC_WR_FLUSH_ERR), every
 * context receives IBV_EVENT_DEVICE_FATAL, the connections close and the
 * ports stop (peers see the link go down). Exit status 0; 1 when the
 * daemon could not start (the message says why); 2 for a usage error.
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <rte_cycles.h>
#include <rte_log.h>

#include "dpvd.h"

#define LOG DPVD_LOG

#define DPVD_DRAIN_MS 200         /* outstanding work's time to complete at shutdown */
#define DPVD_IDLE_SPIN_US 200     /* inline progress: keep polling this long after work */
#define DPVD_IDLE_NAP_US 20       /* then sleep this long between polls */

static atomic_bool g_stop;
static int g_cm_fd = -1;          /* the daemon's CM endpoint's completion channel */
static int g_stop_fd = -1;        /* eventfd: wakes the control thread */

static void on_signal(int sig)
{
	(void)sig;
	atomic_store(&g_stop, true);
	uint64_t one = 1;
	ssize_t w = write(g_stop_fd, &one, sizeof(one));
	(void)w;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: dpverbsd [-h] [-V] [CONFIG]\n"
		"  CONFIG   the JSON configuration (\"mode\": \"shared\"); default: $DPVERBS_CONFIG,\n"
		"           else the built-in default made shared\n"
		"  -h       this help\n"
		"  -V       version\n"
		"The daemon stays in the foreground; logs go through DPDK's log system (stderr).\n");
}

/* Bind the socket; refuse when a live daemon answers on it, remove a stale one. */
static int listen_on(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if (strlen(path) >= sizeof(sa.sun_path)) {
		LOG(ERR, "shared.socket: \"%s\" is too long for a Unix socket", path);
		return -1;
	}
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	char dir[sizeof(sa.sun_path)];
	snprintf(dir, sizeof(dir), "%s", path);
	char *slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = 0;
		if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
			LOG(ERR, "shared.socket: cannot create %s: %s", dir, strerror(errno));
			return -1;
		}
	}
	int probe = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (probe >= 0 && connect(probe, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
		struct ucred cr;
		socklen_t l = sizeof(cr);
		if (getsockopt(probe, SOL_SOCKET, SO_PEERCRED, &cr, &l) != 0)
			cr.pid = 0;
		LOG(ERR, "shared.socket %s: another dpverbsd (pid %d) serves it already", path, (int)cr.pid);
		close(probe);
		return -1;
	}
	if (probe >= 0)
		close(probe);
	unlink(path); /* a daemon that died left it */
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 || listen(fd, 64) != 0) {
		LOG(ERR, "shared.socket %s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	/* as /dev/infiniband/uverbs*: every local user may attach; what a
	 * process may touch is decided per command */
	chmod(path, 0666);
	return fd;
}

struct ctl {
	int listen_fd;
	int ep;
};

static void client_close(struct ctl *ctl, struct dpvd_client *c)
{
	epoll_ctl(ctl->ep, EPOLL_CTL_DEL, c->sock, NULL);
	LOG(INFO, "application pid %d (connection %u) gone: its resources are reclaimed", (int)c->pid, c->id);
	dpvd_client_gone(c);
}

/* The control thread: connections and their commands, one at a time. */
static void *ctl_main(void *arg)
{
	struct ctl *ctl = arg;
	struct epoll_event evs[32];
	pthread_setname_np(pthread_self(), "dpverbsd-ctl");
	while (!atomic_load(&g_stop)) {
		/* the daemon's CM endpoint (dpvd_cm.c): its completion channel is
		 * in the set, its timers set the timeout */
		int n = epoll_wait(ctl->ep, evs, RTE_DIM(evs), dpvd_cm_timeout_ms());
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			break;
		dpvd_cm_poll();
		for (int i = 0; i < n && !atomic_load(&g_stop); i++) {
			void *p = evs[i].data.ptr;
			if (p == ctl) { /* a new application */
				int s = accept4(ctl->listen_fd, NULL, NULL, SOCK_CLOEXEC);
				if (s < 0)
					continue;
				struct dpvd_client *c = dpvd_client_new(s);
				if (!c)
					continue;
				struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP, .data.ptr = c};
				if (epoll_ctl(ctl->ep, EPOLL_CTL_ADD, s, &ev) != 0) {
					dpvd_client_gone(c);
					continue;
				}
				LOG(INFO, "application pid %d attached (connection %u)", (int)c->pid, c->id);
				continue;
			}
			if (p == &g_stop_fd || p == &g_cm_fd)
				continue;
			struct dpvd_client *c = p;
			bool keep = true;
			if (evs[i].events & EPOLLIN)
				keep = dpvd_client_input(c);
			if (!keep || (evs[i].events & (EPOLLHUP | EPOLLERR)) ||
			    ((evs[i].events & EPOLLRDHUP) && !(evs[i].events & EPOLLIN)))
				client_close(ctl, c);
		}
	}
	return NULL;
}

/* Move every QP of every application to ERR (flushing its work requests
 * with completions) and tell every context the device is gone. */
static void shutdown_clients(void)
{
	struct dpvd_client *c;
	TAILQ_FOREACH(c, &dpvd_global.clients, next) {
		struct dpvd_obj *o;
		TAILQ_FOREACH(o, &c->objs, next) {
			if (o->type != DPV_OBJ_QP || !o->created)
				continue;
			enum ibv_qp_state cur = dpv_host_qp_state(o->dev, o->drv);
			struct ibv_qp_attr a = o->attr;
			a.qp_state = IBV_QPS_ERR;
			if (cur != IBV_QPS_RESET && cur != IBV_QPS_ERR)
				dpv_host_modify_qp(o->dev, o->drv, &a, IBV_QP_STATE, cur, IBV_QPS_ERR);
		}
	}
	dpvd_events_fatal_all();
}

static void sleep_us(long us)
{
	struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
	nanosleep(&ts, NULL);
}

/* The options and CONFIG: -1 to go on, else main's exit status (0 after -h
 * or -V, 2 for a usage error). CONFIG becomes $DPVERBS_CONFIG. */
static int parse_args(int argc, char **argv)
{
	int opt;
	while ((opt = getopt(argc, argv, "hV")) != -1) {
		switch (opt) {
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("dpverbsd (dpverbs) protocol %u\n", DPV_SHM_VERSION);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc - 1) {
		usage(stderr);
		return 2;
	}
	if (optind == argc - 1)
		setenv("DPVERBS_CONFIG", argv[optind], 1);
	return -1;
}

/* SIGTERM and SIGINT set g_stop and wake the control thread through
 * g_stop_fd; SIGPIPE is ignored (an application may go at any time). */
static void install_signals(void)
{
	g_stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	struct sigaction sa = {.sa_handler = on_signal};
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

/* dpverbs in the engine host's role (the ports' DPDK primary process,
 * dpv_host.h) and the daemon's state: the configuration, or NULL, the
 * reason printed, when it could not start. */
static const struct dpv_conf *start_core(void)
{
	const struct dpv_conf *conf = dpv_host_start();
	if (!conf) {
		fprintf(stderr, "dpverbsd: dpverbs could not start: %s\n", strerror(errno));
		return NULL;
	}
	if (conf->mode != DPV_MODE_SHARED)
		LOG(WARNING, "%s: \"mode\" is not \"shared\"; serving applications anyway (they attach only "
			     "when their configuration says shared)", conf->source);
	/* the daemon's own lines (attach, detach, stop) pass EAL's global
	 * level unless the configuration's "log" says otherwise */
	if (rte_log_get_global_level() < RTE_LOG_INFO && rte_log_get_level(dpvd_logtype) >= (int)RTE_LOG_INFO)
		rte_log_set_global_level(RTE_LOG_INFO);
	dpvd_init();
	return conf;
}

/* What the control thread waits on: the listening socket, g_stop_fd and the
 * completion channel of the daemon's CM endpoint, which starts here. */
static void ctl_watch(struct ctl *ctl)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = ctl};
	epoll_ctl(ctl->ep, EPOLL_CTL_ADD, ctl->listen_fd, &ev);
	ev.data.ptr = &g_stop_fd;
	epoll_ctl(ctl->ep, EPOLL_CTL_ADD, g_stop_fd, &ev);
	/* QP 1 of every port: the daemon's own CM endpoint, before any
	 * application attaches (doc/shared-mode.md, "Connection management") */
	g_cm_fd = dpvd_cm_start();
	if (g_cm_fd >= 0) {
		ev.data.ptr = &g_cm_fd;
		epoll_ctl(ctl->ep, EPOLL_CTL_ADD, g_cm_fd, &ev);
	} else {
		LOG(WARNING, "no CM endpoint of the daemon: MADs no application claims are dropped");
	}
}

/* Until SIGTERM or SIGINT. The engine: with progress "inline" this thread
 * drives it, spinning while there is work and napping DPVD_IDLE_NAP_US once
 * idle; on lcores this thread only waits. @p hz: rte_get_tsc_hz(). */
static void run_engine(bool inline_engine, uint64_t hz)
{
	uint64_t spin = hz / 1000000 * DPVD_IDLE_SPIN_US, last = 0;
	while (!atomic_load(&g_stop)) {
		if (!inline_engine) {
			sleep_us(100000);
			continue;
		}
		uint64_t now = rte_get_tsc_cycles();
		if (dpv_host_progress() > 0)
			last = now;
		else if (now - last > spin)
			sleep_us(DPVD_IDLE_NAP_US);
	}
}

/* The shutdown of the file's header comment: the socket goes, the control
 * thread ends, outstanding work gets DPVD_DRAIN_MS, then every QP is
 * flushed, every context told, every application's resources reclaimed. */
static void stop_daemon(const struct dpv_conf *conf, struct ctl *ctl, pthread_t ctl_thread, bool inline_engine,
			uint64_t hz)
{
	LOG(INFO, "stopping: no new applications; outstanding work has %d ms", DPVD_DRAIN_MS);
	dpvd_gsi_log_stats();
	close(ctl->listen_fd);
	unlink(conf->shared_socket);
	pthread_join(ctl_thread, NULL);
	uint64_t end = rte_get_tsc_cycles() + hz / 1000 * DPVD_DRAIN_MS;
	while (rte_get_tsc_cycles() < end) {
		if (inline_engine)
			dpv_host_progress();
		else
			sleep_us(1000);
	}
	shutdown_clients();
	for (int i = 0; i < 100 && inline_engine; i++) /* the flushes reach the CQs */
		dpv_host_progress();
	while (!TAILQ_EMPTY(&dpvd_global.clients)) {
		struct dpvd_client *c = TAILQ_FIRST(&dpvd_global.clients);
		dpvd_client_gone(c);
	}
	close(ctl->ep);
	LOG(INFO, "stopped");
}

int main(int argc, char **argv)
{
	int rc = parse_args(argc, argv);
	if (rc >= 0)
		return rc;
	install_signals();
	const struct dpv_conf *conf = start_core();
	if (!conf)
		return 1;
	int lfd = listen_on(conf->shared_socket);
	if (lfd < 0)
		return 1;
	struct ctl ctl = {.listen_fd = lfd, .ep = epoll_create1(EPOLL_CLOEXEC)};
	ctl_watch(&ctl);
	pthread_t ctl_thread;
	if (pthread_create(&ctl_thread, NULL, ctl_main, &ctl) != 0) {
		LOG(ERR, "cannot start the control thread");
		return 1;
	}
	bool inline_engine = !dpv_host_progress_is_background();
	LOG(INFO, "serving %u device(s) on %s (config %s, engine %s, pid %d)", dpv_host_n_devs(),
	    conf->shared_socket, conf->source, inline_engine ? "on the main thread" : "on lcores",
	    (int)getpid());
	uint64_t hz = rte_get_tsc_hz();
	run_engine(inline_engine, hz);
	stop_daemon(conf, &ctl, ctl_thread, inline_engine, hz);
	return 0;
}
