/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Shared mode: XRC domains across processes. Runs under with_daemon.sh.
 *
 * Process X (dpv0) opens an XRC domain on a file with O_CREAT and creates an
 * XRC SRQ and a target QP in it; process Y (dpv1) opens the same file and
 * reaches the same domain, created by another process:
 *   - Y's ibv_open_xrcd without O_CREAT succeeds, with O_CREAT|O_EXCL it
 *     fails with EINVAL (the domain exists);
 *   - Y's ibv_open_qp finds X's target QP (query through the handle; its
 *     destroy drops the handle only; test_xrc_openqp.c modifies through
 *     it); through an anonymous domain: ENOENT;
 *   - Y's XRC initiator sends to X's SRQ number through X's target QP, and X
 *     receives every message in its SRQ, byte for byte;
 *   - X's ibv_close_xrcd fails with EBUSY while its SRQ and target QP exist,
 *     Y's succeeds (no objects through Y's handle) and the domain lives on;
 *   - X is killed: Y's next send fails as with a dead host (retry exceeded),
 *     and with X's openings reclaimed and Y's closed the domain is gone
 *     (an ibv_open_xrcd without O_CREAT: EAGAIN).
 * Prints "N passed, N failed"; exit status 1 on any failure.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "dpvt_check.h"
#include "dpvt_verbs.h"

#define MSGS 8
#define MSG_LEN 256

struct msg {
	uint32_t tgt_qpn, srqn, ini_qpn;
	int step;
	int result;
};

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

/* ---- X: the domain's creator, receives ---- */
static int role_x(int fd, const char *path)
{
	int ffd = open(path, O_RDONLY);
	struct ibv_context *ctx = dpvt_open_dev("dpv0"), *peer = dpvt_open_dev("dpv1");
	struct ibv_xrcd *x = ctx && ffd >= 0 ? dpvt_xrcd_open(ctx, ffd, O_CREAT, DPVT_XRCD_MASK) : NULL;
	struct ibv_pd *pd = x ? ibv_alloc_pd(ctx) : NULL;
	struct ibv_cq *cq = pd ? ibv_create_cq(ctx, 64, NULL, NULL, 0) : NULL;
	struct ibv_srq *srq = cq ? dpvt_xrc_srq_new(ctx, pd, cq, x, 32, 1) : NULL;
	struct ibv_qp *tgt = srq ? dpvt_xrc_tgt_new(ctx, x) : NULL;
	static uint8_t buf[MSGS * MSG_LEN];
	struct ibv_mr *mr = tgt ? ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE) : NULL;
	CHECK(mr != NULL, "X: domain, PD, CQ, XRC SRQ, target QP, MR");
	if (!mr)
		return dpvt_finish();
	for (int i = 0; i < MSGS; i++)
		CHECK_EQ(dpvt_post_srq_recv(srq, mr, i, (size_t)i * MSG_LEN, MSG_LEN), 0, "X: SRQ receive");
	struct msg m = {.tgt_qpn = tgt->qp_num, .srqn = dpvt_srq_num(srq)};
	CHECK(xwrite(fd, &m, sizeof(m)) == 0 && xread(fd, &m, sizeof(m), 20000) == 0, "X: Y's initiator QPN");
	CHECK_EQ(dpvt_xrc_tgt_connect(tgt, peer, m.ini_qpn, 0x200), 0, "X: target QP to RTR");
	m.step = 1;
	CHECK(xwrite(fd, &m, sizeof(m)) == 0, "X: ready");
	/* Y sends MSGS messages to our SRQ */
	struct ibv_wc wc[MSGS];
	int n = dpvt_poll_n(cq, wc, MSGS, 5000);
	CHECK_EQ(n, MSGS, "X: every message of the other process arrived in the SRQ");
	int good = 0;
	for (int i = 0; i < n; i++)
		if (wc[i].status == IBV_WC_SUCCESS && wc[i].byte_len == MSG_LEN &&
		    dpvt_check_pattern(buf + wc[i].wr_id * MSG_LEN, MSG_LEN, (unsigned int)wc[i].wr_id) < 0)
			good++;
	CHECK_EQ(good, MSGS, "X: each one complete and byte for byte");
	int busy = ibv_close_xrcd(x);
	CHECK_EQ(busy, EBUSY, "X: close_xrcd while its SRQ and target QP exist: EBUSY");
	m.step = 2;
	m.result = good == MSGS && busy == EBUSY; /* X never finishes: Y checks this */
	CHECK(xwrite(fd, &m, sizeof(m)) == 0, "X: report");
	/* wait to be killed (the orchestrator's SIGKILL) */
	for (;;)
		pause();
}

/* ---- Y: opens the same file, sends ---- */
static int role_y(int fd, const char *path)
{
	int ffd = open(path, O_RDONLY);
	struct ibv_context *ctx = dpvt_open_dev("dpv1"), *peer = dpvt_open_dev("dpv0");
	struct msg m;
	CHECK(xread(fd, &m, sizeof(m), 20000) == 0, "Y: X's target QPN and SRQ number");
	struct ibv_xrcd *y = ctx ? dpvt_xrcd_open(ctx, ffd, 0, DPVT_XRCD_MASK) : NULL;
	CHECK(y != NULL, "Y: the domain another process created, without O_CREAT (errno %d)", errno);
	struct ibv_xrcd *e = ctx ? dpvt_xrcd_open(ctx, ffd, O_CREAT | O_EXCL, DPVT_XRCD_MASK) : NULL;
	CHECK(!e && errno == EINVAL, "Y: O_CREAT|O_EXCL on it: EINVAL (errno %d)", errno);
	if (!y)
		return dpvt_finish();
	struct ibv_qp *oq = dpvt_xrc_open_qp(ctx, y, m.tgt_qpn, NULL);
	CHECK(oq != NULL, "Y: ibv_open_qp finds X's target QP (errno %d)", errno);
	if (oq) {
		struct ibv_qp_attr a;
		struct ibv_qp_init_attr ia;
		CHECK(ibv_query_qp(oq, &a, IBV_QP_STATE, &ia) == 0 && a.qp_state == IBV_QPS_RESET,
		      "Y: query through it: X's QP, still in RESET (state %d)", a.qp_state);
		CHECK_EQ(ibv_destroy_qp(oq), 0, "Y: destroy the handle (X's QP stays)");
	}
	struct ibv_xrcd *anon = dpvt_xrcd_open(ctx, -1, 0, DPVT_XRCD_MASK);
	CHECK(anon && !dpvt_xrc_open_qp(ctx, anon, m.tgt_qpn, NULL) && errno == ENOENT,
	      "Y: ibv_open_qp through another domain: ENOENT");
	if (anon)
		CHECK_EQ(ibv_close_xrcd(anon), 0, "Y: close the anonymous domain");
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_cq *cq = pd ? ibv_create_cq(ctx, 64, NULL, NULL, 0) : NULL;
	struct ibv_qp *ini = cq ? dpvt_xrc_ini_new(ctx, pd, cq, 32, 1) : NULL;
	static uint8_t buf[MSGS * MSG_LEN];
	struct ibv_mr *mr = ini ? ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE) : NULL;
	CHECK(mr != NULL, "Y: PD, CQ, initiator QP, MR");
	if (!mr)
		return dpvt_finish();
	m.ini_qpn = ini->qp_num;
	CHECK(xwrite(fd, &m, sizeof(m)) == 0 && xread(fd, &m, sizeof(m), 20000) == 0 && m.step == 1, "Y: X ready");
	CHECK_EQ(dpvt_xrc_ini_connect(ini, peer, m.tgt_qpn, 0x200, 8), 0, "Y: initiator to RTS");
	for (int i = 0; i < MSGS; i++) {
		dpvt_fill_pattern(buf + i * MSG_LEN, MSG_LEN, (unsigned int)i);
		struct ibv_sge sg = {(uintptr_t)(buf + i * MSG_LEN), MSG_LEN, mr->lkey};
		struct ibv_send_wr wr = {.wr_id = (uint64_t)i, .sg_list = &sg, .num_sge = 1, .opcode = IBV_WR_SEND,
					 .send_flags = IBV_SEND_SIGNALED}, *bad;
		wr.qp_type.xrc.remote_srqn = m.srqn;
		CHECK_EQ(ibv_post_send(ini, &wr, &bad), 0, "Y: post SEND to X's SRQ");
	}
	struct ibv_wc wc[MSGS];
	int n = dpvt_poll_n(cq, wc, MSGS, 5000), ok = 0;
	for (int i = 0; i < n; i++)
		ok += wc[i].status == IBV_WC_SUCCESS;
	CHECK_EQ(ok, MSGS, "Y: every SEND completed");
	CHECK(xread(fd, &m, sizeof(m), 20000) == 0 && m.step == 2 && m.result,
	      "Y: X received them, and X's close_xrcd gave EBUSY");
	/* Y's handle has no objects: it closes, the domain lives on for X */
	CHECK_EQ(ibv_close_xrcd(y), 0, "Y: close its handle while X's objects exist");
	/* now X dies (the orchestrator kills it when told) */
	m.step = 3;
	CHECK(xwrite(fd, &m, sizeof(m)) == 0 && xread(fd, &m, sizeof(m), 20000) == 0 && m.step == 4,
	      "Y: X killed");
	struct ibv_sge sg = {(uintptr_t)buf, MSG_LEN, mr->lkey};
	struct ibv_send_wr wr = {.wr_id = 99, .sg_list = &sg, .num_sge = 1, .opcode = IBV_WR_SEND,
				 .send_flags = IBV_SEND_SIGNALED}, *bad;
	wr.qp_type.xrc.remote_srqn = m.srqn;
	CHECK_EQ(ibv_post_send(ini, &wr, &bad), 0, "Y: post SEND to the dead process' SRQ");
	struct ibv_wc w = {0};
	CHECK(dpvt_poll_n(cq, &w, 1, 8000) == 1 && w.status == IBV_WC_RETRY_EXC_ERR,
	      "Y: it fails as with a dead host: status %d", w.status);
	errno = 0;
	struct ibv_xrcd *gone = dpvt_xrcd_open(ctx, ffd, 0, DPVT_XRCD_MASK);
	CHECK(!gone && errno == EAGAIN, "Y: every opening gone: the domain is gone (EAGAIN, errno %d)", errno);
	ibv_destroy_qp(ini);
	ibv_dereg_mr(mr);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(peer);
	ibv_close_device(ctx);
	close(ffd);
	return dpvt_finish();
}

int main(int argc, char **argv)
{
	if (argc >= 4 && !strcmp(argv[1], "x"))
		return role_x(atoi(argv[2]), argv[3]);
	if (argc >= 4 && !strcmp(argv[1], "y"))
		return role_y(atoi(argv[2]), argv[3]);
	if (!getenv("DPV_SHARED_TMP")) {
		fprintf(stderr, "run under test/shared/with_daemon.sh\n");
		return 77;
	}
	signal(SIGPIPE, SIG_IGN);
	char path[512];
	snprintf(path, sizeof(path), "%s/xrc_domain", getenv("DPV_SHARED_TMP"));
	int f = open(path, O_CREAT | O_RDWR, 0600);
	if (f < 0)
		return 1;
	close(f);
	int xs[2], ys[2];
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, xs) || socketpair(AF_UNIX, SOCK_STREAM, 0, ys))
		return 1;
	pid_t px = fork();
	if (px == 0) {
		char fd[16];
		snprintf(fd, sizeof(fd), "%d", xs[1]);
		execl(argv[0], argv[0], "x", fd, path, (char *)NULL);
		_exit(127);
	}
	pid_t py = fork();
	if (py == 0) {
		char fd[16];
		snprintf(fd, sizeof(fd), "%d", ys[1]);
		execl(argv[0], argv[0], "y", fd, path, (char *)NULL);
		_exit(127);
	}
	close(xs[1]);
	close(ys[1]);
	/* relay: X's numbers to Y, Y's QPN to X, the steps */
	struct msg m;
	CHECK(xread(xs[0], &m, sizeof(m), 30000) == 0 && xwrite(ys[0], &m, sizeof(m)) == 0, "relay X -> Y");
	CHECK(xread(ys[0], &m, sizeof(m), 30000) == 0 && xwrite(xs[0], &m, sizeof(m)) == 0, "relay Y -> X");
	CHECK(xread(xs[0], &m, sizeof(m), 30000) == 0 && xwrite(ys[0], &m, sizeof(m)) == 0, "relay X ready");
	CHECK(xread(xs[0], &m, sizeof(m), 30000) == 0 && xwrite(ys[0], &m, sizeof(m)) == 0, "relay X's report");
	CHECK(xread(ys[0], &m, sizeof(m), 30000) == 0 && m.step == 3, "Y asks for X's death");
	kill(px, SIGKILL);
	waitpid(px, NULL, 0);
	usleep(100000); /* the daemon reclaims it (within a second: test_reclaim) */
	m.step = 4;
	CHECK(xwrite(ys[0], &m, sizeof(m)) == 0, "tell Y");
	int st = -1;
	for (int i = 0; i < 3000; i++) {
		if (waitpid(py, &st, WNOHANG) == py)
			break;
		usleep(10000);
	}
	if (kill(py, 0) == 0 && waitpid(py, &st, WNOHANG) == 0) {
		kill(py, SIGKILL);
		waitpid(py, &st, 0);
	}
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "Y's checks passed (status %d)", st);
	unlink(path);
	return dpvt_finish();
}
