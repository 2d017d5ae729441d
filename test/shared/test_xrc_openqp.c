/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Shared mode: ibv_open_qp on another process' XRC target QP, as on a
 * ConnectX (the kernel's ib_open_qp: every holder of the XRC domain may
 * open the target QP by number, query it, modify it, and gets its events).
 * Runs under with_daemon.sh.
 *
 * Process X (dpv0) opens an XRC domain on a file with O_CREAT, creates a
 * target QP in it (RESET -> INIT -> RTR) and an RC QP. Process Y opens the
 * same file (the same domain) and:
 *   - opens X's target QP: ibv_query_qp gives X's state and attributes
 *     (RTR, path MTU, destination QPN, RQ PSN, min_rnr_timer, AV, ...),
 *     init_attr its own qp_context and IBV_QPT_XRC_RECV;
 *   - modifies it RTR -> RTS (timeout, sq_psn, min_rnr_timer) and RTS ->
 *     RTS (min_rnr_timer); X's ibv_query_qp sees Y's values;
 *   - errors: an illegal transition (RTS -> INIT) EINVAL; the QPN of X's
 *     RC QP (not an XRC target) ENOENT; an unknown QPN ENOENT; through an
 *     anonymous domain (one that does not hold the QP) ENOENT;
 *     ibv_close_xrcd of Y's domain handle while the QP handle exists EBUSY;
 *   - moves it to ERR: IBV_EVENT_QP_LAST_WQE_REACHED reaches both
 *     processes, each with its own handle as element; X's
 *     ibv_destroy_qp of its target QP gives EBUSY while Y's handle exists;
 *   - X is killed: the target QP lives on for Y's handle (query: ERR;
 *     modify to RESET works); Y's ibv_destroy_qp only drops its handle,
 *     which was the last: the QP is gone (ibv_open_qp: ENOENT) and, with
 *     Y's domain handle closed, so is the domain (EAGAIN).
 * Prints "N passed, N failed"; exit status 1 on any failure.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "dpvt_check.h"
#include "dpvt_verbs.h"

struct msg {
	uint32_t tgt_qpn, rc_qpn;
	int step;
	int ok;
	struct ibv_qp_attr attr; /* the sender's ibv_query_qp of the target QP */
};

static int xread(int fd, void *p, size_t n)
{
	struct timeval tv = {30, 0};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return read(fd, p, n) == (ssize_t)n ? 0 : -1;
}

static int xwrite(int fd, const void *p, size_t n)
{
	return write(fd, p, n) == (ssize_t)n ? 0 : -1;
}

/* ibv_query_qp of q into *a; its return value. */
static int query(struct ibv_qp *q, struct ibv_qp_attr *a, struct ibv_qp_init_attr *ia)
{
	struct ibv_qp_init_attr tmp;
	memset(a, 0, sizeof(*a));
	return ibv_query_qp(q, a, IBV_QP_STATE, ia ? ia : &tmp);
}

/* The attributes both handles must show alike. */
static void same_attr(const char *who, const struct ibv_qp_attr *a, const struct ibv_qp_attr *b)
{
	CHECK(a->qp_state == b->qp_state && a->path_mtu == b->path_mtu && a->dest_qp_num == b->dest_qp_num &&
		      a->rq_psn == b->rq_psn && a->sq_psn == b->sq_psn && a->min_rnr_timer == b->min_rnr_timer &&
		      a->timeout == b->timeout && a->max_dest_rd_atomic == b->max_dest_rd_atomic &&
		      a->qp_access_flags == b->qp_access_flags && a->port_num == b->port_num &&
		      a->pkey_index == b->pkey_index && !memcmp(&a->ah_attr.grh.dgid, &b->ah_attr.grh.dgid, 16) &&
		      a->ah_attr.is_global == b->ah_attr.is_global && !memcmp(&a->cap, &b->cap, sizeof(a->cap)),
	      "%s: the same attributes through both handles (state %d/%d, min_rnr_timer %u/%u, "
	      "dest_qp_num %#x/%#x, rq_psn %#x/%#x, timeout %u/%u)",
	      who, a->qp_state, b->qp_state, a->min_rnr_timer, b->min_rnr_timer, a->dest_qp_num, b->dest_qp_num,
	      a->rq_psn, b->rq_psn, a->timeout, b->timeout);
}

/* ---- X: the creator ---- */
static int role_x(int fd, const char *path)
{
	int ffd = open(path, O_RDONLY);
	struct ibv_context *ctx = dpvt_open_dev("dpv0"), *peer = dpvt_open_dev("dpv1");
	struct ibv_xrcd *x = ctx && ffd >= 0 ? dpvt_xrcd_open(ctx, ffd, O_CREAT, DPVT_XRCD_MASK) : NULL;
	struct ibv_qp *tgt = x ? dpvt_xrc_tgt_new(ctx, x) : NULL;
	struct ibv_pd *pd = tgt ? ibv_alloc_pd(ctx) : NULL;
	struct ibv_cq *cq = pd ? ibv_create_cq(ctx, 16, NULL, NULL, 0) : NULL;
	struct ibv_qp_init_attr ia = {.send_cq = cq, .recv_cq = cq, .cap = {1, 1, 1, 1, 0}, .qp_type = IBV_QPT_RC};
	struct ibv_qp *rc = cq ? ibv_create_qp(pd, &ia) : NULL;
	CHECK(rc != NULL, "X: domain, target QP, RC QP");
	if (!rc)
		return dpvt_finish();
	CHECK_EQ(dpvt_xrc_tgt_connect(tgt, peer, 0x4321, 0x1234), 0, "X: target QP to RTR");
	dpvt_async_nonblock(ctx);
	struct msg m = {.tgt_qpn = tgt->qp_num, .rc_qpn = rc->qp_num, .step = 1};
	CHECK_EQ(query(tgt, &m.attr, NULL), 0, "X: query its target QP");
	CHECK_EQ(m.attr.qp_state, IBV_QPS_RTR, "X: RTR");
	CHECK(xwrite(fd, &m, sizeof(m)) == 0, "X: numbers and attributes to Y");
	/* Y modified it: RTR -> RTS -> RTS */
	CHECK(xread(fd, &m, sizeof(m)) == 0 && m.step == 2, "X: Y modified the QP");
	struct ibv_qp_attr a;
	CHECK_EQ(query(tgt, &a, NULL), 0, "X: query after Y's modify");
	CHECK_EQ(a.qp_state, IBV_QPS_RTS, "X: the state Y set");
	CHECK_EQ(a.min_rnr_timer, 12, "X: the min_rnr_timer Y set");
	CHECK_EQ(a.timeout, 17, "X: the timeout Y set");
	same_attr("X", &a, &m.attr);
	m.step = 3;
	CHECK(xwrite(fd, &m, sizeof(m)) == 0, "X: checked");
	/* Y moved it to ERR: the event reaches the creator with its own QP */
	CHECK(xread(fd, &m, sizeof(m)) == 0 && m.step == 4, "X: Y moved the QP to ERR");
	CHECK(dpvt_wait_async(ctx, IBV_EVENT_QP_LAST_WQE_REACHED, tgt, 3000, NULL),
	      "X: IBV_EVENT_QP_LAST_WQE_REACHED with its own target QP as element");
	CHECK(query(tgt, &a, NULL) == 0 && a.qp_state == IBV_QPS_ERR, "X: ERR (state %d)", a.qp_state);
	CHECK_EQ(ibv_destroy_qp(tgt), EBUSY, "X: destroy its target QP while Y's handle exists: EBUSY");
	m.step = 5;
	m.ok = dpvt_fail_count() == 0;
	dpvt_finish(); /* its own tally (Y checks m.ok); X never exits: it is killed */
	if (xwrite(fd, &m, sizeof(m)) != 0)
		fprintf(stderr, "X: cannot tell Y\n");
	for (;;)
		pause();
}

/* Y's errors: not an XRC target, unknown, another domain, the domain in use. */
static void y_errors(struct ibv_context *ctx, struct ibv_xrcd *y, const struct msg *m, struct ibv_qp *oq)
{
	CHECK(!dpvt_xrc_open_qp(ctx, y, m->rc_qpn, NULL) && errno == ENOENT,
	      "Y: ibv_open_qp of X's RC QP (not an XRC target): ENOENT (errno %d)", errno);
	CHECK(!dpvt_xrc_open_qp(ctx, y, 0x1fffe, NULL) && errno == ENOENT,
	      "Y: ibv_open_qp of an unknown QPN: ENOENT (errno %d)", errno);
	struct ibv_xrcd *anon = dpvt_xrcd_open(ctx, -1, 0, DPVT_XRCD_MASK);
	CHECK(anon && !dpvt_xrc_open_qp(ctx, anon, m->tgt_qpn, NULL) && errno == ENOENT,
	      "Y: ibv_open_qp through a domain that does not hold the QP: ENOENT (errno %d)", errno);
	if (anon)
		CHECK_EQ(ibv_close_xrcd(anon), 0, "Y: close the anonymous domain");
	CHECK_EQ(ibv_close_xrcd(y), EBUSY, "Y: close its domain handle while the QP handle exists: EBUSY");
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = 1};
	CHECK_EQ(ibv_modify_qp(oq, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS),
		 EINVAL, "Y: RTS -> INIT through the handle: EINVAL");
	a = (struct ibv_qp_attr){.min_rnr_timer = 40};
	CHECK_EQ(ibv_modify_qp(oq, &a, IBV_QP_MIN_RNR_TIMER | IBV_QP_DEST_QPN), EINVAL,
		 "Y: RTS -> RTS with an attribute the transition does not allow: EINVAL");
}

/* Y: open, query, modify X's target QP. */
static struct ibv_qp *y_open_modify(int fd, struct ibv_context *ctx, struct ibv_xrcd *y, struct msg *m)
{
	struct ibv_qp *oq = dpvt_xrc_open_qp(ctx, y, m->tgt_qpn, (void *)0x5151);
	CHECK(oq != NULL, "Y: ibv_open_qp of X's target QP (errno %d)", errno);
	if (!oq)
		return NULL;
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;
	CHECK_EQ(query(oq, &a, &ia), 0, "Y: ibv_query_qp through the handle");
	CHECK_EQ(a.qp_state, IBV_QPS_RTR, "Y: X's state (RTR)");
	CHECK_EQ(oq->state, IBV_QPS_RTR, "Y: ibv_qp.state follows the query");
	same_attr("Y", &a, &m->attr);
	CHECK(ia.qp_type == IBV_QPT_XRC_RECV && ia.qp_context == (void *)0x5151 && !ia.send_cq && !ia.srq,
	      "Y: init_attr: XRC_RECV, its own qp_context");
	a = (struct ibv_qp_attr){.qp_state = IBV_QPS_RTS, .timeout = 17, .sq_psn = 0x77, .min_rnr_timer = 9};
	CHECK_EQ(ibv_modify_qp(oq, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_SQ_PSN | IBV_QP_MIN_RNR_TIMER), 0,
		 "Y: modify RTR -> RTS through the handle");
	CHECK_EQ(oq->state, IBV_QPS_RTS, "Y: ibv_qp.state RTS");
	a = (struct ibv_qp_attr){.min_rnr_timer = 12};
	CHECK_EQ(ibv_modify_qp(oq, &a, IBV_QP_MIN_RNR_TIMER), 0, "Y: modify RTS -> RTS (min_rnr_timer)");
	CHECK(query(oq, &m->attr, NULL) == 0 && m->attr.min_rnr_timer == 12 && m->attr.timeout == 17 &&
		      m->attr.sq_psn == 0x77 && m->attr.qp_state == IBV_QPS_RTS,
	      "Y: its query shows what it set");
	m->step = 2;
	CHECK(xwrite(fd, m, sizeof(*m)) == 0 && xread(fd, m, sizeof(*m)) == 0 && m->step == 3,
	      "Y: X saw the modification");
	return oq;
}

/* Y after X's death: the QP lives for Y's handle, then goes with it. */
static void y_after_death(struct ibv_context *ctx, struct ibv_xrcd *y, struct ibv_qp *oq, uint32_t qpn, int ffd)
{
	struct ibv_qp_attr a;
	CHECK(query(oq, &a, NULL) == 0 && a.qp_state == IBV_QPS_ERR,
	      "Y: X is gone, the target QP lives on for Y's handle (ERR, state %d)", a.qp_state);
	a = (struct ibv_qp_attr){.qp_state = IBV_QPS_RESET};
	CHECK_EQ(ibv_modify_qp(oq, &a, IBV_QP_STATE), 0, "Y: modify it to RESET");
	CHECK(query(oq, &a, NULL) == 0 && a.qp_state == IBV_QPS_RESET, "Y: RESET (state %d)", a.qp_state);
	CHECK_EQ(ibv_destroy_qp(oq), 0, "Y: destroy the handle (the last one)");
	CHECK(!dpvt_xrc_open_qp(ctx, y, qpn, NULL) && errno == ENOENT,
	      "Y: the QP went with the last handle: ibv_open_qp ENOENT (errno %d)", errno);
	CHECK_EQ(ibv_close_xrcd(y), 0, "Y: close its domain handle");
	struct ibv_xrcd *gone = dpvt_xrcd_open(ctx, ffd, 0, DPVT_XRCD_MASK);
	CHECK(!gone && errno == EAGAIN, "Y: the domain is gone (EAGAIN, errno %d)", errno);
}

/* ---- Y: opens the same file, opens X's target QP ---- */
static int role_y(int fd, int ctl, const char *path)
{
	int ffd = open(path, O_RDONLY);
	struct ibv_context *ctx = dpvt_open_dev("dpv0");
	struct msg m;
	CHECK(xread(fd, &m, sizeof(m)) == 0 && m.step == 1, "Y: X's numbers");
	struct ibv_xrcd *y = ctx ? dpvt_xrcd_open(ctx, ffd, 0, DPVT_XRCD_MASK) : NULL;
	CHECK(y != NULL, "Y: the domain X created (errno %d)", errno);
	struct ibv_qp *oq = y ? y_open_modify(fd, ctx, y, &m) : NULL;
	if (!oq)
		return dpvt_finish();
	y_errors(ctx, y, &m, oq);
	dpvt_async_nonblock(ctx);
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_ERR};
	CHECK_EQ(ibv_modify_qp(oq, &a, IBV_QP_STATE), 0, "Y: modify to ERR through the handle");
	CHECK(dpvt_wait_async(ctx, IBV_EVENT_QP_LAST_WQE_REACHED, oq, 3000, NULL),
	      "Y: IBV_EVENT_QP_LAST_WQE_REACHED with its own handle as element");
	m.step = 4;
	CHECK(xwrite(fd, &m, sizeof(m)) == 0 && xread(fd, &m, sizeof(m)) == 0 && m.step == 5 && m.ok,
	      "Y: every check of X passed");
	/* X dies (the orchestrator kills it when told) */
	int k = 1;
	CHECK(xwrite(ctl, &k, sizeof(k)) == 0 && xread(ctl, &k, sizeof(k)) == 0 && k == 2, "Y: X killed");
	y_after_death(ctx, y, oq, m.tgt_qpn, ffd);
	ibv_close_device(ctx);
	close(ffd);
	return dpvt_finish();
}

int main(int argc, char **argv)
{
	if (argc >= 4 && !strcmp(argv[1], "x"))
		return role_x(atoi(argv[2]), argv[3]);
	if (argc >= 5 && !strcmp(argv[1], "y"))
		return role_y(atoi(argv[2]), atoi(argv[3]), argv[4]);
	if (!getenv("DPV_SHARED_TMP")) {
		fprintf(stderr, "run under test/shared/with_daemon.sh\n");
		return 77;
	}
	signal(SIGPIPE, SIG_IGN);
	char path[512], a1[16], a2[16];
	snprintf(path, sizeof(path), "%s/xrc_openqp", getenv("DPV_SHARED_TMP"));
	int f = open(path, O_CREAT | O_RDWR, 0600);
	int xy[2], ctl[2];
	if (f < 0 || socketpair(AF_UNIX, SOCK_STREAM, 0, xy) || socketpair(AF_UNIX, SOCK_STREAM, 0, ctl))
		return 1;
	close(f);
	pid_t px = fork();
	if (px == 0) {
		snprintf(a1, sizeof(a1), "%d", xy[0]);
		execl(argv[0], argv[0], "x", a1, path, (char *)NULL);
		_exit(127);
	}
	pid_t py = fork();
	if (py == 0) {
		snprintf(a1, sizeof(a1), "%d", xy[1]);
		snprintf(a2, sizeof(a2), "%d", ctl[1]);
		execl(argv[0], argv[0], "y", a1, a2, path, (char *)NULL);
		_exit(127);
	}
	close(xy[0]);
	close(xy[1]);
	close(ctl[1]);
	int k = 0;
	CHECK(xread(ctl[0], &k, sizeof(k)) == 0 && k == 1, "Y asks for X's death");
	kill(px, SIGKILL);
	waitpid(px, NULL, 0);
	usleep(100000); /* the daemon reclaims it */
	k = 2;
	CHECK(xwrite(ctl[0], &k, sizeof(k)) == 0, "tell Y");
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
