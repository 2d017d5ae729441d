/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Shared mode: what happens when a process or the daemon goes away. Runs
 * under with_daemon.sh (DPVERBS_CONFIG, DPV_DAEMON_PID, DPV_SHARED_TMP).
 *
 * test_reclaim kill
 *   A "hog" process (dpv0) holds HOG_QPS QPs, HOG_MRS MRs on heap buffers
 *   and CQs, one RC QP connected to a "peer" process (dpv1), and keeps
 *   writing to it; meanwhile Debian's ibv_rc_pingpong runs between two
 *   other processes (the neighbours). The hog is killed with SIGKILL.
 *   Asserted:
 *   - its resources are reclaimed by the daemon alone: the daemon's limits
 *     (reclaim.json: max_qp 64, max_mr 48) leave room for HOG_QPS QPs and
 *     HOG_MRS MRs only once the hog's are gone, and a new context gets them
 *     after the kill (bounded by RECLAIM_MS; the time is printed);
 *   - its RC peer sees its QP fail as with a dead host: a SEND to it
 *     completes with IBV_WC_RETRY_EXC_ERR and the QP is in ERR;
 *   - the neighbours' pingpong completes (exit 0).
 *
 * test_reclaim stop
 *   The daemon gets SIGTERM while this process has receives outstanding:
 *   they complete with IBV_WC_WR_FLUSH_ERR, the context gets
 *   IBV_EVENT_DEVICE_FATAL, verbs fail with EIO afterwards, and the daemon
 *   exits 0 (with_daemon.sh checks).
 *
 * test_reclaim restart BUILD
 *   This process holds connected QPs; one thread waits in
 *   ibv_get_cq_event, one in ibv_get_async_event. The daemon is killed with
 *   SIGKILL. Asserted: both threads return (the async one
 *   with IBV_EVENT_DEVICE_FATAL), ibv_poll_cq reports an error, new verbs
 *   fail with EIO, the port is DOWN; a new daemon is started on the same
 *   configuration: this process still gets EIO (not a hang), and a new
 *   process attaches to the new daemon and works.
 *
 * Prints "N passed, N failed"; exit status 1 on any failure.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>

#include "dpvt_check.h"
#include "dpvt_verbs.h"

#define HOG_QPS 40
#define HOG_MRS 32
/* how long the daemon may take to give back a killed process' objects: a
 * bound for a loaded machine (the time, tens of ms when idle, is printed);
 * the time includes the try that succeeds (take_all: 40 QPs and 32 MRs
 * made and destroyed through the daemon), slow when the 2 CPUs are shared
 * by many processes: 834 ms was seen with three extra busy loops, near the
 * old bound of 1000 ms that failed once in a full shared run */
#define RECLAIM_MS 20000

struct hello {
	uint32_t qpn;
	int ok;
	int status;               /* peer: the status of its SEND to the dead hog */
	int state;                /* peer: its QP's state after it */
	int ms;                   /* peer: how long the SEND took to complete */
};

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int xread(int fd, void *p, size_t n, int timeout_ms)
{
	struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return read(fd, p, n) == (ssize_t)n ? 0 : -1;
}

static pid_t spawn(char *const argv[], int keep_fd)
{
	pid_t p = fork();
	if (p == 0) {
		if (keep_fd >= 0) {
			char s[16];
			snprintf(s, sizeof(s), "%d", keep_fd);
			setenv("RECLAIM_FD", s, 1);
		}
		execvp(argv[0], argv);
		_exit(127);
	}
	return p;
}

/* Wait for pid at most ms; -1 (and SIGKILL to it) on timeout, else its status. */
static int wait_for(pid_t pid, int ms)
{
	for (int i = 0; i < ms / 10; i++) {
		int st;
		pid_t r = waitpid(pid, &st, WNOHANG);
		if (r == pid)
			return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
		usleep(10000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	return -1;
}

static void dgid_of(struct ibv_context *ctx, const char *dev, union ibv_gid *g)
{
	/* the other port's GID: open it for the query only */
	struct ibv_context *o = dpvt_open_dev(dev);
	memset(g, 0, sizeof(*g));
	if (o) {
		ibv_query_gid(o, 1, 1, g);
		ibv_close_device(o);
	}
	(void)ctx;
}

/* ---- the hog: many objects, one RC QP writing to the peer ---- */
static int role_hog(int fd)
{
	struct ibv_context *ctx = dpvt_open_dev("dpv0");
	struct ibv_pd *pd = ctx ? ibv_alloc_pd(ctx) : NULL;
	struct ibv_cq *cq = pd ? ibv_create_cq(ctx, 256, NULL, NULL, 0) : NULL;
	if (!cq)
		return 1;
	struct ibv_qp *qp[HOG_QPS];
	struct ibv_mr *mr[HOG_MRS];
	for (int i = 0; i < HOG_QPS; i++)
		if (!(qp[i] = dpvt_qp_create(pd, IBV_QPT_RC, cq, cq, NULL, &(struct dpvt_qp_caps){4, 4, 1, 1, 0, 0})))
			return 2;
	for (int i = 0; i < HOG_MRS; i++) {
		void *b = calloc(1, 65536);
		if (!b || !(mr[i] = ibv_reg_mr(pd, b, 65536, DPVT_ACCESS_ALL)))
			return 3;
	}
	struct hello h = {.qpn = qp[0]->qp_num}, p;
	if (write(fd, &h, sizeof(h)) != sizeof(h) || xread(fd, &p, sizeof(p), 10000))
		return 4;
	union ibv_gid dgid;
	dgid_of(ctx, "dpv1", &dgid);
	struct dpvt_conn o = dpvt_conn_default();
	if (dpvt_qp_to_init(qp[0], &o) || dpvt_qp_to_rtr(qp[0], &dgid, p.qpn, &o) || dpvt_qp_to_rts(qp[0], &o))
		return 5;
	h.ok = 1;
	if (write(fd, &h, sizeof(h)) != sizeof(h))
		return 6;
	/* write to the peer until killed */
	for (uint64_t n = 0;; n++) {
		struct ibv_wc wc[16];
		if (dpvt_post_wr(qp[0], IBV_WR_SEND, n, mr[0]->addr, 64, mr[0]->lkey, 0, 0, 0, IBV_SEND_SIGNALED))
			usleep(1000);
		ibv_poll_cq(cq, 16, wc);
		usleep(200);
	}
}

/* ---- the peer: receives from the hog, then sends to it once it is dead ---- */
static int role_peer(int fd)
{
	struct dpvt_ep e;
	if (dpvt_ep_open(&e, "dpv1", 1024, false) || dpvt_ep_buf(&e, e.pd, 1 << 20, DPVT_ACCESS_ALL))
		return 1;
	struct ibv_qp *qp = dpvt_qp_create(e.pd, IBV_QPT_RC, e.scq, e.rcq, NULL, &(struct dpvt_qp_caps){64, 1024, 1, 1, 0, 0});
	if (!qp)
		return 2;
	struct hello h = {.qpn = qp->qp_num}, p;
	if (xread(fd, &p, sizeof(p), 10000) || write(fd, &h, sizeof(h)) != sizeof(h))
		return 3;
	union ibv_gid dgid;
	dgid_of(e.ctx, "dpv0", &dgid);
	struct dpvt_conn o = dpvt_conn_default();
	o.timeout = 10; /* 4 ms: a dead peer shows in tens of ms */
	o.retry_cnt = 3;
	for (int i = 0; i < 512; i++)
		dpvt_post_recv(qp, e.mr, i, (size_t)i * 1024, 1024);
	if (dpvt_qp_to_init(qp, &o) || dpvt_qp_to_rtr(qp, &dgid, p.qpn, &o) || dpvt_qp_to_rts(qp, &o))
		return 4;
	h.ok = 1;
	if (write(fd, &h, sizeof(h)) != sizeof(h))
		return 5;
	/* wait for "the hog is dead", consuming the receives meanwhile */
	struct hello go;
	for (;;) {
		struct ibv_wc wc[16];
		ibv_poll_cq(e.rcq, 16, wc);
		if (xread(fd, &go, sizeof(go), 10) == 0)
			break;
	}
	struct ibv_wc wc = {0};
	dpvt_post_wr(qp, IBV_WR_SEND, 77, e.buf, 64, e.mr->lkey, 0, 0, 0, IBV_SEND_SIGNALED);
	double t0 = now_ms();
	int n = 0;
	while (now_ms() - t0 < 5000 && (n = ibv_poll_cq(e.scq, 1, &wc)) == 0)
		;
	h.status = n == 1 ? (int)wc.status : -1;
	h.ms = (int)(now_ms() - t0);
	h.state = dpvt_qp_state(qp);
	if (write(fd, &h, sizeof(h)) != sizeof(h))
		return 6;
	ibv_destroy_qp(qp);
	dpvt_ep_close(&e);
	return 0;
}

/* Try to take HOG_QPS QPs and HOG_MRS MRs on ctx: 1 if all could be made. */
static int take_all(struct ibv_context *ctx)
{
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_cq *cq = pd ? ibv_create_cq(ctx, 16, NULL, NULL, 0) : NULL;
	struct ibv_qp *qp[HOG_QPS] = {0};
	struct ibv_mr *mr[HOG_MRS] = {0};
	static uint8_t buf[4096];
	int ok = cq != NULL;
	for (int i = 0; ok && i < HOG_QPS; i++)
		ok = (qp[i] = dpvt_qp_create(pd, IBV_QPT_RC, cq, cq, NULL, &(struct dpvt_qp_caps){4, 4, 1, 1, 0, 0})) != NULL;
	for (int i = 0; ok && i < HOG_MRS; i++)
		ok = (mr[i] = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE)) != NULL;
	for (int i = 0; i < HOG_QPS; i++)
		if (qp[i])
			ibv_destroy_qp(qp[i]);
	for (int i = 0; i < HOG_MRS; i++)
		if (mr[i])
			ibv_dereg_mr(mr[i]);
	if (cq)
		ibv_destroy_cq(cq);
	if (pd)
		ibv_dealloc_pd(pd);
	return ok;
}

static int test_kill(const char *self)
{
	int hs[2], ps[2];
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, hs) || socketpair(AF_UNIX, SOCK_STREAM, 0, ps))
		return 1;
	/* the neighbours: Debian's ibv_rc_pingpong, two more applications */
	char port[16];
	snprintf(port, sizeof(port), "%d", 20000 + getpid() % 20000);
	char *srv[] = {"timeout", "60", "ibv_rc_pingpong", "-d", "dpv0", "-g", "1", "-n", "3000", "-p", port, NULL};
	char *cli[] = {"timeout", "60", "ibv_rc_pingpong", "-d", "dpv1", "-g", "1", "-n", "3000", "-p", port,
		       "127.0.0.1", NULL};
	double t_n = now_ms();
	pid_t ns = spawn(srv, -1);
	usleep(300000);
	pid_t nc = spawn(cli, -1);
	char fdh[16], fdp[16];
	snprintf(fdh, sizeof(fdh), "%d", hs[1]);
	snprintf(fdp, sizeof(fdp), "%d", ps[1]);
	char *hog[] = {(char *)self, "hog", fdh, NULL};
	char *peer[] = {(char *)self, "peer", fdp, NULL};
	pid_t hp = spawn(hog, -1), pp = spawn(peer, -1);
	close(hs[1]);
	close(ps[1]);
	struct hello h, p;
	CHECK(xread(hs[0], &h, sizeof(h), 20000) == 0, "hog made its objects");
	CHECK(write(ps[0], &h, sizeof(h)) == sizeof(h) && xread(ps[0], &p, sizeof(p), 20000) == 0, "peer QP");
	CHECK(write(hs[0], &p, sizeof(p)) == sizeof(p), "to the hog");
	CHECK(xread(hs[0], &h, sizeof(h), 20000) == 0 && h.ok, "hog connected");
	CHECK(xread(ps[0], &p, sizeof(p), 20000) == 0 && p.ok, "peer connected");
	usleep(300000); /* traffic flows */

	/* the daemon must make room only when the hog's objects are gone */
	struct ibv_context *ctx = dpvt_open_dev("dpv0");
	CHECK(ctx != NULL, "a context of this process");
	if (ctx)
		CHECK(!take_all(ctx), "while the hog lives its QPs and MRs are taken (limits of reclaim.json)");
	kill(hp, SIGKILL);
	double t0 = now_ms();
	waitpid(hp, NULL, 0);
	double t_ok = -1;
	while (ctx && now_ms() - t0 < RECLAIM_MS) {
		if (take_all(ctx)) {
			t_ok = now_ms() - t0;
			break;
		}
		usleep(10000);
	}
	printf("note: after SIGKILL of the hog (%d QPs, %d MRs) its resources could be taken again after %.0f ms\n",
	       HOG_QPS, HOG_MRS, t_ok);
	CHECK(t_ok >= 0 && t_ok <= RECLAIM_MS, "reclaimed within %d ms: %.0f ms", RECLAIM_MS, t_ok);

	/* its RC peer: as with a dead host */
	struct hello go = {0};
	CHECK(write(ps[0], &go, sizeof(go)) == sizeof(go), "tell the peer");
	CHECK(xread(ps[0], &p, sizeof(p), 20000) == 0, "peer's report");
	printf("note: the peer's SEND to the dead process: status %d (%s) after %d ms, QP state %d\n", p.status,
	       p.status >= 0 ? ibv_wc_status_str((enum ibv_wc_status)p.status) : "none", p.ms, p.state);
	CHECK_EQ(p.status, IBV_WC_RETRY_EXC_ERR, "the peer's SEND to the dead process: retry exceeded");
	CHECK_EQ(p.state, IBV_QPS_ERR, "the peer's QP is in ERR");
	CHECK_EQ(wait_for(pp, 20000), 0, "peer exited 0");

	/* the neighbours were not disturbed */
	int st_c = wait_for(nc, 60000), st_s = wait_for(ns, 10000);
	printf("note: the neighbours (ibv_rc_pingpong -n 3000) ended %.0f ms after their start\n", now_ms() - t_n);
	CHECK_EQ(st_c, 0, "neighbour client (ibv_rc_pingpong) exit 0");
	CHECK_EQ(st_s, 0, "neighbour server (ibv_rc_pingpong) exit 0");
	if (ctx)
		ibv_close_device(ctx);
	return 0;
}

/* ---- restart ---- */

struct waiter {
	struct ibv_context *ctx;
	struct ibv_comp_channel *ch;
	double done_ms;
	int result;
};

static void *wait_cq(void *arg)
{
	struct waiter *w = arg;
	struct ibv_cq *cq;
	void *cctx;
	w->result = ibv_get_cq_event(w->ch, &cq, &cctx);
	if (!w->result)
		ibv_ack_cq_events(cq, 1);
	w->done_ms = now_ms();
	return NULL;
}

static void *wait_async(void *arg)
{
	struct waiter *w = arg;
	struct ibv_async_event ev;
	/* skip events of the traffic before (none expected), return the first
	 * device-wide one */
	for (;;) {
		if (ibv_get_async_event(w->ctx, &ev) != 0) {
			if (errno == EAGAIN) {
				usleep(1000);
				continue;
			}
			w->result = -1;
			break;
		}
		ibv_ack_async_event(&ev);
		if (ev.event_type == IBV_EVENT_DEVICE_FATAL) {
			w->result = ev.event_type;
			break;
		}
	}
	w->done_ms = now_ms();
	return NULL;
}

static int role_fresh(void)
{
	int n = 0;
	struct ibv_device **l = ibv_get_device_list(&n);
	struct ibv_context *ctx = l && n ? ibv_open_device(l[0]) : NULL;
	struct ibv_pd *pd = ctx ? ibv_alloc_pd(ctx) : NULL;
	struct ibv_cq *cq = pd ? ibv_create_cq(ctx, 16, NULL, NULL, 0) : NULL;
	struct ibv_qp *qp = cq ? dpvt_qp_create(pd, IBV_QPT_RC, cq, cq, NULL, &(struct dpvt_qp_caps){4, 4, 1, 1, 0, 0}) : NULL;
	int ok = n == 2 && qp && dpvt_qp_to_init(qp, NULL) == 0;
	if (qp)
		ibv_destroy_qp(qp);
	if (cq)
		ibv_destroy_cq(cq);
	if (pd)
		ibv_dealloc_pd(pd);
	if (ctx)
		ibv_close_device(ctx);
	if (l)
		ibv_free_device_list(l);
	return ok ? 0 : 1;
}

static int test_restart(const char *self, const char *build)
{
	const char *dpid = getenv("DPV_DAEMON_PID"), *tmp = getenv("DPV_SHARED_TMP"), *conf = getenv("DPVERBS_CONFIG");
	const char *sock = getenv("DPV_SHARED_SOCK");
	if (!dpid || !tmp || !conf || !sock) {
		fprintf(stderr, "run under with_daemon.sh\n");
		return 2;
	}
	struct dpvt_ep a, b;
	CHECK(dpvt_ep_open(&a, "dpv0", 256, true) == 0 && dpvt_ep_traffic_buf(&a, a.pd) == 0, "endpoint a");
	CHECK(dpvt_ep_open(&b, "dpv1", 256, false) == 0 && dpvt_ep_traffic_buf(&b, b.pd) == 0, "endpoint b");
	a.qp = dpvt_ep_qp(&a, IBV_QPT_RC, 64, 64, NULL);
	b.qp = dpvt_ep_qp(&b, IBV_QPT_RC, 64, 64, NULL);
	CHECK(a.qp && b.qp && dpvt_connect(a.qp, a.ctx, NULL, b.qp, b.ctx, NULL, false) == 0, "RC pair");
	struct ibv_wc wc;
	CHECK(dpvt_ep_post_recv(&a, 1, 0, 64) == 0, "post_recv");
	CHECK(dpvt_post_wr(b.qp, IBV_WR_SEND, 2, b.buf, 64, b.mr->lkey, 0, 0, 0, IBV_SEND_SIGNALED) == 0, "send");
	CHECK(dpvt_poll_n(a.rcq, &wc, 1, 5000) == 1 && wc.status == IBV_WC_SUCCESS, "traffic before");
	dpvt_poll_n(b.scq, &wc, 1, 5000);

	/* waiters */
	CHECK_EQ(ibv_req_notify_cq(a.rcq, 0), 0, "arm the receive CQ");
	struct waiter wc_w = {.ctx = a.ctx, .ch = a.ch, .result = 99}, wa = {.ctx = a.ctx, .result = 99};
	pthread_t t1, t2;
	pthread_create(&t1, NULL, wait_cq, &wc_w);
	pthread_create(&t2, NULL, wait_async, &wa);
	usleep(100000);

	pid_t d = (pid_t)atoi(dpid);
	kill(d, SIGKILL);
	double t0 = now_ms();
	struct timespec lim;
	clock_gettime(CLOCK_REALTIME, &lim);
	lim.tv_sec += 5;
	int j1 = pthread_timedjoin_np(t1, NULL, &lim), j2 = pthread_timedjoin_np(t2, NULL, &lim);
	/* asserted: both blocked calls return (the join's 5 s bound only keeps
	 * a hang from stopping the test); the time is printed, not asserted */
	CHECK(j1 == 0, "ibv_get_cq_event returned after the daemon's death (%.0f ms)",
	      j1 == 0 ? wc_w.done_ms - t0 : -1.0);
	CHECK(j2 == 0 && wa.result == IBV_EVENT_DEVICE_FATAL, "IBV_EVENT_DEVICE_FATAL after the daemon's death (%.0f ms)",
	      j2 == 0 ? wa.done_ms - t0 : -1.0);
	if (j1)
		pthread_cancel(t1);
	if (j2)
		pthread_cancel(t2);
	CHECK(ibv_poll_cq(a.rcq, 1, &wc) < 0, "ibv_poll_cq on an empty CQ reports the error");
	errno = 0;
	CHECK(ibv_alloc_pd(a.ctx) == NULL && errno == EIO, "ibv_alloc_pd: EIO (errno %d)", errno);
	struct ibv_port_attr pa;
	CHECK(ibv_query_port(a.ctx, 1, &pa) == 0 && pa.state == IBV_PORT_DOWN, "the port is down");

	/* a new daemon on the same configuration */
	char bin[1024];
	snprintf(bin, sizeof(bin), "%s/apps/dpverbsd/dpverbsd", build);
	char log[1024];
	snprintf(log, sizeof(log), "%s/dpverbsd-2.log", tmp);
	pid_t nd = fork();
	if (nd == 0) {
		freopen(log, "w", stdout);
		freopen(log, "a", stderr);
		execl(bin, bin, conf, (char *)NULL);
		_exit(127);
	}
	char pidf[1024];
	snprintf(pidf, sizeof(pidf), "%s/daemon.pid", tmp);
	FILE *f = fopen(pidf, "w");
	if (f) {
		fprintf(f, "%d\n", (int)nd);
		fclose(f);
	}
	bool up = false;
	for (int i = 0; i < 200 && !up; i++) {
		struct stat st;
		int fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
		struct sockaddr_un sa = {.sun_family = AF_UNIX};
		snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock);
		up = stat(sock, &st) == 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
		close(fd);
		if (!up)
			usleep(50000);
	}
	CHECK(up, "a new dpverbsd serves the socket");
	double t1s = now_ms();
	errno = 0;
	CHECK(ibv_alloc_pd(a.ctx) == NULL && errno == EIO && now_ms() - t1s < 1000,
	      "this process still gets EIO from the new daemon's time on, at once (errno %d)", errno);
	char *fresh[] = {(char *)self, "fresh", NULL};
	CHECK_EQ(wait_for(spawn(fresh, -1), 20000), 0, "a new process attaches to the new daemon and works");

	/* tearing down on a dead connection neither hangs nor crashes */
	double t2s = now_ms();
	ibv_destroy_qp(a.qp);
	ibv_destroy_qp(b.qp);
	a.qp = b.qp = NULL;
	dpvt_ep_close(&a);
	dpvt_ep_close(&b);
	CHECK(now_ms() - t2s < 2000, "teardown after the daemon died: %.0f ms", now_ms() - t2s);
	return 0;
}

/* ---- stop: the daemon's SIGTERM ---- */
static int test_stop(void)
{
	const char *dpid = getenv("DPV_DAEMON_PID");
	if (!dpid) {
		fprintf(stderr, "run under with_daemon.sh\n");
		return 2;
	}
	struct dpvt_ep a, b;
	CHECK(dpvt_ep_open(&a, "dpv0", 256, false) == 0 && dpvt_ep_traffic_buf(&a, a.pd) == 0, "endpoint a");
	CHECK(dpvt_ep_open(&b, "dpv1", 256, false) == 0 && dpvt_ep_traffic_buf(&b, b.pd) == 0, "endpoint b");
	a.qp = dpvt_ep_qp(&a, IBV_QPT_RC, 64, 64, NULL);
	b.qp = dpvt_ep_qp(&b, IBV_QPT_RC, 64, 64, NULL);
	CHECK(a.qp && b.qp && dpvt_connect(a.qp, a.ctx, NULL, b.qp, b.ctx, NULL, false) == 0, "RC pair");
	for (int i = 0; i < 16; i++)
		dpvt_ep_post_recv(&a, 100 + i, 0, 64);
	kill((pid_t)atoi(dpid), SIGTERM);
	/* outstanding receives complete (flushed), then the device is gone */
	struct ibv_wc wc[16];
	int got = 0, flushed = 0;
	double t0 = now_ms();
	while (got < 16 && now_ms() - t0 < 5000) {
		int n = ibv_poll_cq(a.rcq, 16, wc);
		if (n < 0)
			break;
		for (int i = 0; i < n; i++)
			flushed += wc[i].status == IBV_WC_WR_FLUSH_ERR;
		got += n;
	}
	printf("note: after the daemon's SIGTERM: %d of 16 receives completed (%d flushed) in %.0f ms\n", got, flushed,
	       now_ms() - t0);
	CHECK(got == 16 && flushed == 16, "every outstanding receive completes with IBV_WC_WR_FLUSH_ERR");
	struct ibv_async_event ev;
	bool fatal = false;
	while (!fatal && now_ms() - t0 < 5000) {
		if (ibv_get_async_event(a.ctx, &ev) == 0) {
			fatal = ev.event_type == IBV_EVENT_DEVICE_FATAL;
			ibv_ack_async_event(&ev);
		} else {
			usleep(1000);
		}
	}
	CHECK(fatal, "IBV_EVENT_DEVICE_FATAL");
	errno = 0;
	CHECK(ibv_alloc_pd(a.ctx) == NULL && errno == EIO, "then verbs fail with EIO (errno %d)", errno);
	ibv_destroy_qp(a.qp);
	ibv_destroy_qp(b.qp);
	a.qp = b.qp = NULL;
	dpvt_ep_close(&a);
	dpvt_ep_close(&b);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 3 && !strcmp(argv[1], "hog"))
		return role_hog(atoi(argv[2]));
	if (argc >= 3 && !strcmp(argv[1], "peer"))
		return role_peer(atoi(argv[2]));
	if (argc >= 2 && !strcmp(argv[1], "fresh"))
		return role_fresh();
	signal(SIGPIPE, SIG_IGN);
	if (argc >= 2 && !strcmp(argv[1], "kill"))
		test_kill(argv[0]);
	else if (argc >= 2 && !strcmp(argv[1], "stop"))
		test_stop();
	else if (argc >= 3 && !strcmp(argv[1], "restart"))
		test_restart(argv[0], argv[2]);
	else {
		fprintf(stderr, "usage: test_reclaim kill | stop | restart BUILD | hog FD | peer FD | fresh\n");
		return 2;
	}
	return dpvt_finish();
}
