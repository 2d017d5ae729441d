/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Shared mode: fork() after the parent opened devices, as pyverbs' rdma_cm
 * tests do (multiprocessing's fork start method). Runs under with_daemon.sh.
 *
 *   - the parent opens dpv0 and dpv1, connects an RC QP pair between them
 *     and runs traffic;
 *   - it forks two children (no exec) that each open dpv0 again, make an RC
 *     QP, trade QP numbers through a socketpair and connect to each other
 *     (two processes on one port, one GID): 8 SENDs of 1000 bytes one way,
 *     one back, every payload checked; each child's checks decide its exit
 *     status. A child must get a connection of its own to dpverbsd: with
 *     the parent's, the requests of the three processes interleave on one
 *     socket and the daemon drops it (every context dead);
 *   - the parent's objects and connection survive the children: the same
 *     RC traffic again, ibv_query_port, a new CQ.
 * With the argument "embedded" (embedded mode, the built-in configuration,
 * no daemon): the child of a process that runs the ports must not run
 * them; ibv_get_device_list and ibv_open_device fail with ENODEV in it, and
 * the parent's RC traffic goes on after the child exited.
 * Prints "N passed, N failed" (once per child, then the parent's); exit
 * status 1 on any failure.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "dpvt_check.h"
#include "dpvt_verbs.h"

#define MSGS 8
#define MSG_LEN 1000
#define SEED 0x6b1d

static int xread(int fd, void *p, size_t n, int timeout_ms)
{
	struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return read(fd, p, n) == (ssize_t)n ? 0 : -1;
}

static int xwrite(int fd, const void *p, size_t n)
{
	return write(fd, p, n) == (ssize_t)n ? 0 : -1;
}

/* receiver: MSGS SENDs in, one back */
static void child_recv(struct dpvt_ep *e, int fd)
{
	for (int i = 0; i < MSGS; i++)
		CHECK_EQ(dpvt_ep_post_recv(e, (uint64_t)i, (size_t)i * 1024, 1024), 0, "A: post_recv");
	int go = 1;
	CHECK(xwrite(fd, &go, sizeof(go)) == 0, "A: ready");
	struct ibv_wc wc[MSGS];
	int n = dpvt_poll_n(e->rcq, wc, MSGS, 10000);
	CHECK_EQ(n, MSGS, "A: receive completions");
	for (int i = 0; i < n; i++) {
		CHECK(wc[i].status == IBV_WC_SUCCESS && wc[i].byte_len == MSG_LEN,
		      "A: receive %d: status %d, %u bytes", i, wc[i].status, wc[i].byte_len);
		CHECK(dpvt_pat_check(e->buf + wc[i].wr_id * 1024, MSG_LEN, SEED, wc[i].wr_id) < 0,
		      "A: payload of message %d", (int)wc[i].wr_id);
	}
	dpvt_pat_fill(e->buf + 16384, 100, SEED, 99);
	CHECK_EQ(dpvt_post_wr(e->qp, IBV_WR_SEND, 99, e->buf + 16384, 100, e->mr->lkey, 0, 0, 0,
			      IBV_SEND_SIGNALED), 0, "A: post the answer");
	CHECK(dpvt_poll_n(e->scq, wc, 1, 10000) == 1 && wc[0].status == IBV_WC_SUCCESS, "A: answer sent");
}

/* sender: MSGS SENDs out, one in */
static void child_send(struct dpvt_ep *e, int fd)
{
	int go = 0;
	CHECK_EQ(dpvt_ep_post_recv(e, 99, 16384, 1024), 0, "B: post_recv");
	CHECK(xread(fd, &go, sizeof(go), 20000) == 0 && go == 1, "B: A is ready");
	for (int i = 0; i < MSGS; i++) {
		dpvt_pat_fill(e->buf + (size_t)i * 1024, MSG_LEN, SEED, (uint64_t)i);
		CHECK_EQ(dpvt_post_wr(e->qp, IBV_WR_SEND, (uint64_t)i, e->buf + (size_t)i * 1024, MSG_LEN,
				      e->mr->lkey, 0, 0, 0, IBV_SEND_SIGNALED), 0, "B: post SEND");
	}
	struct ibv_wc wc[MSGS];
	int n = dpvt_poll_n(e->scq, wc, MSGS, 10000);
	CHECK_EQ(n, MSGS, "B: send completions");
	for (int i = 0; i < n; i++)
		CHECK(wc[i].status == IBV_WC_SUCCESS, "B: send %d: status %d", i, wc[i].status);
	CHECK(dpvt_poll_n(e->rcq, wc, 1, 10000) == 1 && wc[0].status == IBV_WC_SUCCESS &&
		      wc[0].byte_len == 100 && dpvt_pat_check(e->buf + 16384, 100, SEED, 99) < 0,
	      "B: the answer");
}

/* A child of fork(): dpv0 again, an RC QP connected to the other child's. */
static int child(int fd, bool receiver)
{
	struct dpvt_ep e = {0};
	const char *who = receiver ? "A" : "B";
	if (dpvt_ep_open(&e, "dpv0", 64, false) || dpvt_ep_traffic_buf(&e, NULL) ||
	    !(e.qp = dpvt_ep_qp(&e, IBV_QPT_RC, 16, 16, NULL))) {
		CHECK(0, "%s: context, PD, CQs, buffer and RC QP on dpv0 in a child of fork() (errno %d)",
		      who, errno);
		return dpvt_finish();
	}
	uint32_t mine = e.qp->qp_num, peer = 0;
	CHECK(xwrite(fd, &mine, sizeof(mine)) == 0 && xread(fd, &peer, sizeof(peer), 20000) == 0,
	      "%s: QP numbers traded", who);
	CHECK(peer != mine, "%s: the other child's QP number %u is not ours", who, peer);
	struct dpvt_conn o = dpvt_conn_default();
	CHECK_EQ(dpvt_qp_up(e.qp, e.ctx, peer, &o, IBV_QPS_RTS), 0, "connect to the other child");
	if (receiver)
		child_recv(&e, fd);
	else
		child_send(&e, fd);
	dpvt_ep_close(&e);
	return dpvt_finish();
}

static bool parent_pair(struct dpvt_ep *a, struct dpvt_ep *b)
{
	if (dpvt_ep_open(a, "dpv0", 64, false) || dpvt_ep_traffic_buf(a, NULL) ||
	    !(a->qp = dpvt_ep_qp(a, IBV_QPT_RC, 16, 16, NULL)) || dpvt_ep_open(b, "dpv1", 64, false) ||
	    dpvt_ep_traffic_buf(b, NULL) || !(b->qp = dpvt_ep_qp(b, IBV_QPT_RC, 16, 16, NULL)))
		return false;
	return dpvt_connect(a->qp, a->ctx, NULL, b->qp, b->ctx, NULL, false) == 0;
}

static int wait_child(pid_t p, const char *who)
{
	int st = -1;
	for (int i = 0; i < 6000; i++) {
		if (waitpid(p, &st, WNOHANG) == p)
			return st;
		usleep(10000);
	}
	kill(p, SIGKILL);
	waitpid(p, &st, 0);
	fprintf(stderr, "test_fork: child %s killed after 60 s\n", who);
	return -1;
}

/* embedded mode: the child gets no devices, the parent goes on */
static int embedded(void)
{
	struct dpvt_ep pa = {0}, pb = {0};
	bool up = parent_pair(&pa, &pb);
	CHECK(up, "parent: RC pair dpv0 <-> dpv1 (errno %d)", errno);
	if (!up)
		return dpvt_finish();
	dpvt_rc_traffic(&pa, &pb, 1, "parent before fork");
	fflush(stdout);
	pid_t ch = fork();
	if (ch == 0) {
		/* what the child prints goes to a file: it must name shared
		 * mode, the way for programs that fork (qperf's server) */
		char path[] = "/tmp/dpvt-fork-msg.XXXXXX", msg[1024] = "";
		int fd = mkstemp(path);
		if (fd < 0 || dup2(fd, 2) < 0)
			_exit(2);
		int n = -1;
		errno = 0;
		struct ibv_device **l = ibv_get_device_list(&n);
		bool ok = l == NULL && errno == ENODEV && n == 0;
		errno = 0;
		ok = ok && ibv_open_device(pa.ctx->device) == NULL && errno == ENODEV;
		ssize_t r = pread(fd, msg, sizeof(msg) - 1, 0);
		msg[r > 0 ? r : 0] = 0;
		unlink(path);
		_exit(!ok ? 1 : !strstr(msg, "\"mode\": \"shared\"") || !strstr(msg, "dpverbsd") ? 3 : 0);
	}
	int st = ch > 0 ? wait_child(ch, "embedded") : -1;
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) != 1 && WEXITSTATUS(st) != 2,
	      "child: ibv_get_device_list and ibv_open_device fail with ENODEV (status %d)", st);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0,
	      "child: its message names \"mode\": \"shared\" and dpverbsd (status %d)", st);
	dpvt_rc_traffic(&pa, &pb, 2, "parent after the child");
	dpvt_ep_close(&pa);
	dpvt_ep_close(&pb);
	return dpvt_finish();
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "embedded"))
		return embedded();
	if (!getenv("DPV_SHARED_TMP")) {
		fprintf(stderr, "run under test/shared/with_daemon.sh\n");
		return 77;
	}
	signal(SIGPIPE, SIG_IGN);
	struct dpvt_ep pa = {0}, pb = {0};
	bool up = parent_pair(&pa, &pb);
	CHECK(up, "parent: RC pair dpv0 <-> dpv1 (errno %d)", errno);
	if (!up)
		return dpvt_finish();
	dpvt_rc_traffic(&pa, &pb, 1, "parent before fork");
	int sp[2];
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sp))
		return 1;
	fflush(stdout);
	pid_t ca = fork();
	if (ca == 0) {
		close(sp[1]);
		_exit(child(sp[0], true));
	}
	pid_t cb = ca > 0 ? fork() : -1;
	if (cb == 0) {
		close(sp[0]);
		_exit(child(sp[1], false));
	}
	close(sp[0]);
	close(sp[1]);
	CHECK(ca > 0 && cb > 0, "two children forked");
	int sa = ca > 0 ? wait_child(ca, "A") : -1, sb = cb > 0 ? wait_child(cb, "B") : -1;
	CHECK(WIFEXITED(sa) && WEXITSTATUS(sa) == 0, "child A (receiver) passed its checks (status %d)", sa);
	CHECK(WIFEXITED(sb) && WEXITSTATUS(sb) == 0, "child B (sender) passed its checks (status %d)", sb);
	/* the parent's connection and objects are intact */
	struct ibv_port_attr pt;
	CHECK(ibv_query_port(pa.ctx, 1, &pt) == 0 && pt.state == IBV_PORT_ACTIVE, "parent: dpv0 still active");
	dpvt_rc_traffic(&pa, &pb, 2, "parent after the children");
	struct ibv_cq *cq = ibv_create_cq(pa.ctx, 16, NULL, NULL, 0);
	CHECK(cq != NULL, "parent: a new CQ after the children (errno %d)", errno);
	if (cq)
		CHECK_EQ(ibv_destroy_cq(cq), 0, "parent: destroy it");
	dpvt_ep_close(&pa);
	dpvt_ep_close(&pb);
	return dpvt_finish();
}
