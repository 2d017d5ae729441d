/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The verbs façade alone, on the null driver (DPVERBS_DRIVER=null: no EAL,
 * no hugepages, no ports; every send completes at once, receives wait for a
 * flush). What is checked is the façade's own contract with applications
 * and with its rings (doc/queues.md):
 *   - devices and attributes come from the driver and the parameters;
 *   - send-queue slots are freed by polled CQEs (ConnectX's rule): a queue of
 *     unsignalled WRs fills up, a signalled CQE frees every slot before it;
 *   - receive queues fill up and are flushed in ERR, also for WRs posted
 *     later; sends posted in ERR complete with IBV_WC_WR_FLUSH_ERR;
 *   - a full CQ goes to error: IBV_EVENT_CQ_ERR once, the QP whose
 *     completion did not fit to ERR with IBV_EVENT_QP_FATAL, nothing
 *     written afterwards; with IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN the
 *     completion is lost and nothing else happens;
 *   - ibv_resize_cq keeps the completions waiting, in order, and refuses a
 *     size they do not fit in;
 *   - destroying a QP (or moving it to RESET) removes its completions that
 *     were not polled and leaves the others in order;
 *   - an armed CQ signals its completion channel once per arming;
 *   - the extended CQ and the ibv_wr_* API work on the same rings;
 *   - the hugepage allocator refuses to start without EAL (ENODEV);
 *   - QP numbers start at a random place: processes started one after the
 *     other do not get the same first QPN (a restarted process must not
 *     look like its previous life to a peer's connection manager).
 * Black-box: only the exported API.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dpvt_check.h"
#include "dpvt_verbs.h"
#include "dpverbs.h"

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_mr *mr;
static uint8_t buf[4096];

static struct ibv_qp *rc_qp(struct ibv_cq *scq, struct ibv_cq *rcq, uint32_t sq, uint32_t rq)
{
	struct ibv_qp_init_attr a = {.send_cq = scq, .recv_cq = rcq, .qp_type = IBV_QPT_RC,
				     .cap = {.max_send_wr = sq, .max_recv_wr = rq, .max_send_sge = 1,
					     .max_recv_sge = 1}};
	return ibv_create_qp(pd, &a);
}

/* RESET -> RTS (the null driver needs no real peer). */
static int up(struct ibv_qp *qp)
{
	union ibv_gid gid;
	if (ibv_query_gid(ctx, 1, 1, &gid))
		return -1;
	struct dpvt_conn o = dpvt_conn_default();
	return dpvt_qp_to_init(qp, &o) || dpvt_qp_to_rtr(qp, &gid, qp->qp_num, &o) || dpvt_qp_to_rts(qp, &o);
}

static int send1(struct ibv_qp *qp, uint64_t wr_id, bool signaled)
{
	return dpvt_post_wr(qp, IBV_WR_SEND, wr_id, buf, 16, mr->lkey, 0, 0, 0, signaled ? IBV_SEND_SIGNALED : 0);
}

static void t_devices(void)
{
	int n = 0;
	struct ibv_device **l = ibv_get_device_list(&n);
	CHECK(l && n == 2, "two devices from the built-in configuration (got %d)", n);
	if (l) {
		CHECK(!strcmp(ibv_get_device_name(l[0]), "dpv0") && !strcmp(ibv_get_device_name(l[1]), "dpv1"),
		      "names dpv0, dpv1");
		ibv_free_device_list(l);
	}
	struct ibv_device_attr da;
	CHECK_EQ(ibv_query_device(ctx, &da), 0, "query_device");
	CHECK_EQ(da.max_qp_rd_atom, 128, "max_qp_rd_atom from the parameters");
	CHECK_EQ(da.phys_port_cnt, 1, "one port");
	struct ibv_port_attr pa;
	CHECK_EQ(ibv_query_port(ctx, 1, &pa), 0, "query_port");
	CHECK_EQ(pa.state, IBV_PORT_ACTIVE, "the null driver's port is active");
	union ibv_gid g;
	CHECK(ibv_query_gid(ctx, 1, 1, &g) == 0 && g.raw[10] == 0xff && g.raw[12] == 192,
	      "GID 1 is the IPv4-mapped address of the configuration");
	errno = 0;
	CHECK(dpv_hugepage_allocator_create(-1) == NULL && errno == ENODEV, "hugepage allocator: ENODEV without EAL");
}

/* Slots of the send queue come back only with polled CQEs. */
static void t_sq_slots(void)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	struct ibv_qp *qp = cq ? rc_qp(cq, cq, 4, 4) : NULL;
	CHECK(qp && up(qp) == 0, "RC QP up");
	if (!qp)
		return;
	struct ibv_wc wc[8];
	for (int i = 0; i < 4; i++)
		CHECK_EQ(send1(qp, 10 + (uint64_t)i, false), 0, "unsignalled send");
	CHECK_EQ(send1(qp, 14, true), ENOMEM, "5th WR: the queue is full of unsignalled WRs");
	CHECK_EQ(dpvt_poll_quiet(cq, 20), 0, "unsignalled WRs write no CQE");
	CHECK_EQ(dpvt_qp_set_state(qp, IBV_QPS_RESET), 0, "RESET empties the queue");
	CHECK(up(qp) == 0, "back to RTS");
	for (int i = 0; i < 3; i++)
		CHECK_EQ(send1(qp, 20 + (uint64_t)i, false), 0, "unsignalled send");
	CHECK_EQ(send1(qp, 23, true), 0, "signalled send");
	CHECK_EQ(send1(qp, 24, true), ENOMEM, "full until the CQE is polled");
	int got = dpvt_poll_n(cq, wc, 1, 1000);
	CHECK(got == 1 && wc[0].wr_id == 23 && wc[0].status == IBV_WC_SUCCESS && wc[0].opcode == IBV_WC_SEND &&
	      wc[0].byte_len == 16, "one CQE, the signalled WR's");
	for (int i = 0; i < 4; i++)
		CHECK_EQ(send1(qp, 30 + (uint64_t)i, true), 0, "the polled CQE freed every slot before it");
	CHECK_EQ(dpvt_poll_n(cq, wc, 4, 1000), 4, "four CQEs");
	CHECK(wc[0].wr_id == 30 && wc[3].wr_id == 33, "in order");
	/* ERR: sends complete flushed */
	CHECK_EQ(dpvt_qp_set_state(qp, IBV_QPS_ERR), 0, "to ERR");
	CHECK_EQ(send1(qp, 40, false), 0, "post in ERR");
	got = dpvt_poll_n(cq, wc, 1, 1000);
	CHECK(got == 1 && wc[0].wr_id == 40 && wc[0].status == IBV_WC_WR_FLUSH_ERR,
	      "a WR posted in ERR completes flushed, signalled or not");
	ibv_destroy_qp(qp);
	ibv_destroy_cq(cq);
}

static void t_rq(void)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	struct ibv_qp *qp = cq ? rc_qp(cq, cq, 4, 3) : NULL; /* RQ rounds up to 4 */
	CHECK(qp && up(qp) == 0, "RC QP up");
	if (!qp)
		return;
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;
	CHECK(ibv_query_qp(qp, &a, IBV_QP_CAP, &ia) == 0 && ia.cap.max_recv_wr == 4, "max_recv_wr rounded to 4");
	for (int i = 0; i < 4; i++)
		CHECK_EQ(dpvt_post_recv(qp, mr, 50 + (uint64_t)i, 0, 64), 0, "post_recv");
	CHECK_EQ(dpvt_post_recv(qp, mr, 54, 0, 64), ENOMEM, "RQ full");
	CHECK_EQ(dpvt_qp_set_state(qp, IBV_QPS_ERR), 0, "to ERR");
	struct ibv_wc wc[8];
	int got = dpvt_poll_n(cq, wc, 4, 1000);
	CHECK(got == 4 && wc[0].wr_id == 50 && wc[3].wr_id == 53 && wc[3].status == IBV_WC_WR_FLUSH_ERR &&
	      wc[0].opcode == IBV_WC_RECV, "ERR flushes the RQ in order");
	CHECK_EQ(dpvt_post_recv(qp, mr, 55, 0, 64), 0, "post_recv in ERR");
	got = dpvt_poll_n(cq, wc, 1, 1000);
	CHECK(got == 1 && wc[0].wr_id == 55 && wc[0].status == IBV_WC_WR_FLUSH_ERR, "flushed at once");
	ibv_destroy_qp(qp);
	ibv_destroy_cq(cq);
}

/* A CQ of capacity n holds n CQEs. The next does not fit: the CQ goes to
 * error (IBV_EVENT_CQ_ERR, once; nothing more is written into it), the QP
 * whose completion it was to ERR (IBV_EVENT_QP_FATAL). With
 * IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN the completion is lost, nothing else. */
static void t_cq_overrun(bool ignore)
{
	struct ibv_cq_init_attr_ex ca = {.cqe = 4, .wc_flags = IBV_WC_STANDARD_FLAGS,
					 .comp_mask = IBV_CQ_INIT_ATTR_MASK_FLAGS,
					 .flags = ignore ? IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN : 0};
	struct ibv_cq_ex *cx = ibv_create_cq_ex(ctx, &ca);
	struct ibv_cq *cq = cx ? ibv_cq_ex_to_cq(cx) : NULL;
	CHECK(cq && cq->cqe >= 4, "CQ of at least 4%s", ignore ? " (IGNORE_OVERRUN)" : "");
	struct ibv_qp *qp = cq ? rc_qp(cq, cq, 32, 1) : NULL;
	if (!qp || up(qp)) {
		CHECK(0, "QP up");
		return;
	}
	int cap = cq->cqe;
	dpvt_drain_async(ctx);
	for (int i = 0; i < cap + 3; i++)
		CHECK_EQ(send1(qp, 100 + (uint64_t)i, true), 0, "signalled send");
	if (ignore) {
		CHECK(!dpvt_wait_async(ctx, IBV_EVENT_CQ_ERR, cq, 50, NULL), "IGNORE_OVERRUN: no IBV_EVENT_CQ_ERR");
		CHECK_EQ(dpvt_qp_state(qp), IBV_QPS_RTS, "IGNORE_OVERRUN: the QP stays in RTS");
	} else {
		CHECK(dpvt_wait_async(ctx, IBV_EVENT_CQ_ERR, cq, 1000, NULL), "IBV_EVENT_CQ_ERR");
		CHECK(dpvt_wait_async(ctx, IBV_EVENT_QP_FATAL, qp, 1000, NULL), "IBV_EVENT_QP_FATAL");
		CHECK_EQ(dpvt_drain_async(ctx), 0, "each raised once");
		CHECK_EQ(dpvt_qp_state(qp), IBV_QPS_ERR, "the QP is in ERR");
	}
	struct ibv_wc wc[64];
	int got = dpvt_poll_n(cq, wc, cap, 1000);
	CHECK(got == cap && wc[0].wr_id == 100 && wc[cap - 1].wr_id == 100 + (uint64_t)cap - 1 &&
	      wc[cap - 1].status == IBV_WC_SUCCESS, "the CQEs that fitted, in order (%d of %d)", got, cap);
	CHECK_EQ(dpvt_poll_quiet(cq, 10), 0, "then nothing: the rest were not written");
	CHECK_EQ(send1(qp, 200, true), 0, "post after polling");
	if (ignore)
		CHECK(dpvt_poll_n(cq, wc, 1, 1000) == 1 && wc[0].wr_id == 200 && wc[0].status == IBV_WC_SUCCESS,
		      "IGNORE_OVERRUN: the CQ takes completions again once polled");
	else
		CHECK_EQ(dpvt_poll_quiet(cq, 10), 0, "a CQ in error takes nothing more, even with room");
	CHECK_EQ(ibv_resize_cq(cq, 16), 0, "resize (a CQ in error too)");
	CHECK_EQ(ibv_destroy_qp(qp), 0, "destroy the QP");
	CHECK_EQ(ibv_destroy_cq(cq), 0, "destroy the CQ");
}

static void t_resize_and_clean(void)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, 8, NULL, NULL, 0);
	struct ibv_qp *qa = cq ? rc_qp(cq, cq, 16, 1) : NULL, *qb = cq ? rc_qp(cq, cq, 16, 1) : NULL;
	if (!qa || !qb || up(qa) || up(qb)) {
		CHECK(0, "two QPs up");
		return;
	}
	for (int i = 0; i < 3; i++) {
		CHECK_EQ(send1(qa, 200 + (uint64_t)i, true), 0, "send on A");
		CHECK_EQ(send1(qb, 300 + (uint64_t)i, true), 0, "send on B");
	}
	CHECK_EQ(ibv_resize_cq(cq, 2), EINVAL, "six CQEs do not fit in 2");
	CHECK_EQ(ibv_resize_cq(cq, 100), 0, "resize to 100");
	CHECK(cq->cqe >= 100, "cqe reported %d", cq->cqe);
	CHECK_EQ(ibv_destroy_qp(qa), 0, "destroy A with CQEs not polled");
	struct ibv_wc wc[8];
	int got = dpvt_poll_n(cq, wc, 3, 1000);
	CHECK(got == 3 && wc[0].wr_id == 300 && wc[1].wr_id == 301 && wc[2].wr_id == 302,
	      "only B's CQEs remain, in order, after resize and clean");
	CHECK_EQ(dpvt_poll_quiet(cq, 10), 0, "nothing else");
	CHECK_EQ(send1(qb, 310, true), 0, "send on B");
	CHECK_EQ(dpvt_qp_set_state(qb, IBV_QPS_RESET), 0, "B to RESET");
	CHECK_EQ(dpvt_poll_quiet(cq, 10), 0, "RESET removed B's CQE not polled");
	ibv_destroy_qp(qb);
	ibv_destroy_cq(cq);
}

static void t_channel(void)
{
	struct ibv_comp_channel *ch = ibv_create_comp_channel(ctx);
	struct ibv_cq *cq = ch ? ibv_create_cq(ctx, 16, (void *)0x5150, ch, 0) : NULL;
	struct ibv_qp *qp = cq ? rc_qp(cq, cq, 8, 1) : NULL;
	if (!qp || up(qp)) {
		CHECK(0, "channel, CQ, QP");
		return;
	}
	fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) | O_NONBLOCK);
	struct ibv_cq *ev_cq;
	void *ev_ctx;
	CHECK_EQ(ibv_req_notify_cq(cq, 0), 0, "arm");
	CHECK_EQ(send1(qp, 400, true), 0, "send");
	struct pollfd pfd = {.fd = ch->fd, .events = POLLIN};
	CHECK_EQ(poll(&pfd, 1, 1000), 1, "channel readable");
	CHECK(ibv_get_cq_event(ch, &ev_cq, &ev_ctx) == 0 && ev_cq == cq && ev_ctx == (void *)0x5150, "the event names the CQ");
	ibv_ack_cq_events(cq, 1);
	CHECK_EQ(send1(qp, 401, true), 0, "send without arming");
	CHECK(ibv_get_cq_event(ch, &ev_cq, &ev_ctx) == -1 && errno == EAGAIN, "not armed: no event");
	struct ibv_wc wc[4];
	CHECK_EQ(dpvt_poll_n(cq, wc, 2, 1000), 2, "both CQEs");
	ibv_destroy_qp(qp);
	ibv_destroy_cq(cq);
	CHECK_EQ(ibv_destroy_comp_channel(ch), 0, "destroy channel");
}

/* The extended CQ reads the same ring; ibv_wr_* writes the same SQ. */
static void t_extended(void)
{
	struct ibv_cq_init_attr_ex ca = {.cqe = 16, .wc_flags = IBV_WC_STANDARD_FLAGS | IBV_WC_EX_WITH_COMPLETION_TIMESTAMP};
	struct ibv_cq_ex *cx = ibv_create_cq_ex(ctx, &ca);
	CHECK(cx != NULL, "create_cq_ex");
	if (!cx)
		return;
	struct ibv_cq *cq = ibv_cq_ex_to_cq(cx);
	struct ibv_qp_init_attr_ex qa = {.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC, .pd = pd,
					 .cap = {.max_send_wr = 8, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1},
					 .comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
					 .send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_WRITE};
	struct ibv_qp *qp = ibv_create_qp_ex(ctx, &qa);
	struct ibv_qp_ex *qx = qp ? ibv_qp_to_qp_ex(qp) : NULL;
	if (!qx || up(qp)) {
		CHECK(0, "QP with send ops");
		ibv_destroy_cq(cq);
		return;
	}
	ibv_wr_start(qx);
	qx->wr_id = 500;
	qx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(qx);
	ibv_wr_set_sge(qx, mr->lkey, (uintptr_t)buf, 32);
	qx->wr_id = 501;
	ibv_wr_rdma_write(qx, 0x1234, 0x10000);
	ibv_wr_set_sge(qx, mr->lkey, (uintptr_t)buf, 48);
	CHECK_EQ(ibv_wr_complete(qx), 0, "wr_complete");
	struct ibv_poll_cq_attr pa = {0};
	int r = ibv_start_poll(cx, &pa);
	for (int spins = 0; r == ENOENT && spins < 100000; spins++)
		r = ibv_start_poll(cx, &pa);
	CHECK_EQ(r, 0, "start_poll");
	if (r == 0) {
		CHECK(cx->wr_id == 500 && cx->status == IBV_WC_SUCCESS && ibv_wc_read_opcode(cx) == IBV_WC_SEND &&
		      ibv_wc_read_byte_len(cx) == 32 && ibv_wc_read_qp_num(cx) == qp->qp_num, "first CQE");
		CHECK(ibv_wc_read_completion_ts(cx) != 0, "a completion timestamp");
		CHECK(ibv_next_poll(cx) == 0 && cx->wr_id == 501 && ibv_wc_read_opcode(cx) == IBV_WC_RDMA_WRITE &&
		      ibv_wc_read_byte_len(cx) == 48, "second CQE");
		CHECK_EQ(ibv_next_poll(cx), ENOENT, "no third");
		ibv_end_poll(cx);
	}
	ibv_destroy_qp(qp);
	ibv_destroy_cq(cq);
}

/* "first-qpn" mode: open the device, create a UD QP, print its number. */
static int first_qpn_main(void)
{
	struct ibv_context *c = dpvt_open_dev("dpv0");
	struct ibv_pd *d = c ? ibv_alloc_pd(c) : NULL;
	struct ibv_cq *cq = c ? ibv_create_cq(c, 4, NULL, NULL, 0) : NULL;
	struct ibv_qp_init_attr a = {.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_UD,
				     .cap = {.max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1}};
	struct ibv_qp *q = d && cq ? ibv_create_qp(d, &a) : NULL;
	printf("%u\n", q ? q->qp_num : 0);
	return q ? 0 : 1;
}

/* The first QPN of a fresh process (this program again, exec'd). */
static uint32_t first_qpn_of_new_process(void)
{
	unsigned int qpn = 0;
	char self[4096], cmd[4200];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return 0;
	self[n] = '\0';
	snprintf(cmd, sizeof(cmd), "exec '%s' first-qpn", self);
	FILE *f = popen(cmd, "r");
	if (!f)
		return 0;
	if (fscanf(f, "%u", &qpn) != 1)
		qpn = 0;
	pclose(f);
	return qpn;
}

/* No tag matching on a driver without it: tm_caps 0, IBV_SRQT_TM refused. */
static void t_no_tm(void)
{
	struct ibv_device_attr_ex da;
	CHECK_EQ(ibv_query_device_ex(ctx, NULL, &da), 0, "ibv_query_device_ex");
	CHECK(da.tm_caps.flags == 0 && da.tm_caps.max_num_tags == 0, "null driver: tm_caps 0");
	struct ibv_cq *cq = ibv_create_cq(ctx, 4, NULL, NULL, 0);
	struct ibv_srq_init_attr_ex a = {.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD |
						      IBV_SRQ_INIT_ATTR_CQ | IBV_SRQ_INIT_ATTR_TM,
					 .srq_type = IBV_SRQT_TM, .pd = pd, .cq = cq};
	a.attr.max_wr = 4;
	a.attr.max_sge = 1;
	a.tm_cap.max_num_tags = 4;
	a.tm_cap.max_ops = 4;
	errno = 0;
	CHECK(!ibv_create_srq_ex(ctx, &a) && errno == EOPNOTSUPP, "null driver: IBV_SRQT_TM EOPNOTSUPP (errno %d)",
	      errno);
	ibv_destroy_cq(cq);
}

static void t_qpn_random_start(void)
{
	uint32_t q[3];
	for (unsigned int i = 0; i < 3; i++) {
		q[i] = first_qpn_of_new_process();
		CHECK(q[i] >= 0x11 && q[i] <= 0xffffff, "first QPN of process %u: 0x%x", i, q[i]);
	}
	/* equal by chance: (1/131055)^2 */
	CHECK(!(q[0] == q[1] && q[1] == q[2]), "three processes started one after the other got QPN 0x%x each",
	      q[0]);
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "first-qpn") == 0)
		return first_qpn_main();
	if (!getenv("DPVERBS_DRIVER") || strcmp(getenv("DPVERBS_DRIVER"), "null")) {
		fprintf(stderr, "test_facade_null: run with DPVERBS_DRIVER=null\n");
		return 2;
	}
	ctx = dpvt_open_dev("dpv0");
	pd = ctx ? ibv_alloc_pd(ctx) : NULL;
	mr = pd ? ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE) : NULL;
	CHECK(mr != NULL, "device, PD, MR on the null driver: %s", strerror(errno));
	if (!mr)
		return dpvt_finish();
	dpvt_async_nonblock(ctx);
	t_devices();
	t_sq_slots();
	t_rq();
	t_cq_overrun(false);
	t_cq_overrun(true);
	t_resize_and_clean();
	t_channel();
	t_extended();
	t_no_tm();
	t_qpn_random_start();
	ibv_dereg_mr(mr);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	return dpvt_finish();
}
