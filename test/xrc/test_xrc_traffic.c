/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * XRC traffic in one process: an XRC initiator QP on dpv0 sends through ONE
 * XRC target QP on dpv1 to TWO XRC SRQs (remote_srqn per WR). The domain is
 * file-backed and opened twice: SRQ A is created through handle A, SRQ B and
 * the target QP through handle B, so delivery into SRQ A also proves that
 * two handles on one inode reach one domain.
 *
 *   test_xrc_traffic                 operations (SEND, SEND_WITH_IMM, RDMA
 *                                    WRITE [WITH_IMM], RDMA READ, atomics),
 *                                    ibv_open_qp handles, error completions
 *                                    for SRQ numbers outside the domain,
 *                                    then a 2000-message stream
 *   test_xrc_traffic --stream N      only the stream of N messages (run
 *                                    under DPVERBS_FAULT by meson)
 *
 * The stream: messages of 1 B .. 64 KiB (multi-packet at path MTU 1024),
 * SEND and SEND_WITH_IMM, each to SRQ A or B chosen pseudo-randomly; every
 * message must arrive exactly once, in order per SRQ, with its length,
 * immediate and content, and every send must complete successfully.
 */
#include <endian.h>
#include <fcntl.h>
#include <unistd.h>

#include "dpvt_verbs.h"

#define SLOT (64u * 1024u)
#define NSLOT 128u         /* receive WQEs per SRQ and send slots */
#define RDMA_LEN (64u * 1024u)

struct xenv {
	/* initiator side (dpv0) */
	struct ibv_context *c0;
	struct ibv_pd *pd0;
	struct ibv_cq *scq;
	struct ibv_qp *ini;
	uint8_t *sbuf;     /* NSLOT send slots, then a READ landing area */
	struct ibv_mr *smr;
	/* target side (dpv1) */
	struct ibv_context *c1;
	struct ibv_pd *pd1;
	struct ibv_cq *cq[2];
	char path[64];
	int fd, fd2;
	struct ibv_xrcd *hx[2];  /* handle A (fd), handle B (fd2): same inode */
	struct ibv_srq *srq[2];  /* SRQ A through handle A, SRQ B through B */
	uint32_t srqn[2];
	struct ibv_qp *tgt;      /* through handle B */
	uint8_t *rbuf[2];        /* NSLOT receive slots per SRQ */
	struct ibv_mr *rmr[2];
	uint8_t *tbuf;           /* RDMA / atomic target */
	struct ibv_mr *tmr;
};

static struct xenv E;
static uint8_t g_timeout = 14; /* initiator's local ACK timeout: 4.096 us * 2^14 = 67 ms (shorter
				 * timers exhaust retry_cnt under ASan, where one window
				 * of 256 packets takes longer than the timer) */

static int post_srq(int k, uint32_t slot)
{
	struct ibv_sge sg = {.addr = (uintptr_t)(E.rbuf[k] + (size_t)slot * SLOT), .length = SLOT,
			     .lkey = E.rmr[k]->lkey};
	struct ibv_recv_wr w = {.wr_id = ((uint64_t)k << 32) | slot, .sg_list = &sg, .num_sge = 1}, *bad = NULL;
	return ibv_post_srq_recv(E.srq[k], &w, &bad);
}

/* Poll the initiator's send CQ (and the target CQs, to drive both ports
 * in inline progress) until one send completion. */
static int wait_send(struct ibv_wc *wc, unsigned int ms)
{
	return dpvt_poll_n(E.scq, wc, 1, ms);
}

static int env_open(void)
{
	memset(&E, 0, sizeof(E));
	E.fd = E.fd2 = -1;
	E.c0 = dpvt_open_dev("dpv0");
	E.c1 = dpvt_open_dev("dpv1");
	if (!E.c0 || !E.c1)
		return -1;
	E.pd0 = ibv_alloc_pd(E.c0);
	E.pd1 = ibv_alloc_pd(E.c1);
	E.scq = ibv_create_cq(E.c0, 4096, NULL, NULL, 0);
	E.cq[0] = ibv_create_cq(E.c1, 4096, NULL, NULL, 0);
	E.cq[1] = ibv_create_cq(E.c1, 4096, NULL, NULL, 0);
	if (!E.pd0 || !E.pd1 || !E.scq || !E.cq[0] || !E.cq[1])
		return -1;
	snprintf(E.path, sizeof(E.path), "/tmp/dpv-xrc-traffic-XXXXXX");
	E.fd = mkstemp(E.path);
	if (E.fd < 0)
		return -1;
	E.fd2 = open(E.path, O_RDONLY);
	E.hx[0] = dpvt_xrcd_open(E.c1, E.fd, O_CREAT | O_EXCL, DPVT_XRCD_MASK);
	E.hx[1] = dpvt_xrcd_open(E.c1, E.fd2, 0, DPVT_XRCD_MASK); /* the existing domain */
	if (!E.hx[0] || !E.hx[1]) {
		fprintf(stderr, "open_xrcd: %s\n", strerror(errno));
		return -1;
	}
	for (int k = 0; k < 2; k++) {
		E.srq[k] = dpvt_xrc_srq_new(E.c1, E.pd1, E.cq[k], E.hx[k], NSLOT, 1);
		if (!E.srq[k]) {
			fprintf(stderr, "XRC SRQ: %s\n", strerror(errno));
			return -1;
		}
		E.srqn[k] = dpvt_srq_num(E.srq[k]);
		E.rbuf[k] = aligned_alloc(4096, (size_t)NSLOT * SLOT);
		if (!E.rbuf[k])
			return -1;
		memset(E.rbuf[k], 0, (size_t)NSLOT * SLOT);
		E.rmr[k] = ibv_reg_mr(E.pd1, E.rbuf[k], (size_t)NSLOT * SLOT, IBV_ACCESS_LOCAL_WRITE);
		if (!E.rmr[k])
			return -1;
	}
	E.tbuf = aligned_alloc(4096, RDMA_LEN + 4096);
	E.sbuf = aligned_alloc(4096, (size_t)NSLOT * SLOT + RDMA_LEN);
	if (!E.tbuf || !E.sbuf)
		return -1;
	memset(E.tbuf, 0, RDMA_LEN + 4096);
	memset(E.sbuf, 0, (size_t)NSLOT * SLOT + RDMA_LEN);
	E.tmr = ibv_reg_mr(E.pd1, E.tbuf, RDMA_LEN + 4096, DPVT_ACCESS_ALL);
	E.smr = ibv_reg_mr(E.pd0, E.sbuf, (size_t)NSLOT * SLOT + RDMA_LEN, IBV_ACCESS_LOCAL_WRITE);
	if (!E.tmr || !E.smr)
		return -1;
	E.tgt = dpvt_xrc_tgt_new(E.c1, E.hx[1]);
	E.ini = dpvt_xrc_ini_new(E.c0, E.pd0, E.scq, NSLOT, 1);
	if (!E.tgt || !E.ini) {
		fprintf(stderr, "XRC QPs: %s\n", strerror(errno));
		return -1;
	}
	if (dpvt_xrc_tgt_connect(E.tgt, E.c0, E.ini->qp_num, 0x123456) ||
	    dpvt_xrc_ini_connect(E.ini, E.c1, E.tgt->qp_num, 0x123456, g_timeout)) {
		fprintf(stderr, "connect failed\n");
		return -1;
	}
	return 0;
}

static void env_close(void)
{
	if (E.ini)
		CHECK_EQ(ibv_destroy_qp(E.ini), 0, "destroy initiator");
	if (E.tgt)
		CHECK_EQ(ibv_destroy_qp(E.tgt), 0, "destroy target");
	for (int k = 0; k < 2; k++) {
		if (E.srq[k])
			CHECK_EQ(ibv_destroy_srq(E.srq[k]), 0, "destroy SRQ");
		if (E.rmr[k])
			ibv_dereg_mr(E.rmr[k]);
		free(E.rbuf[k]);
	}
	for (int k = 0; k < 2; k++)
		if (E.hx[k])
			CHECK_EQ(ibv_close_xrcd(E.hx[k]), 0, "close xrcd handle");
	if (E.tmr)
		ibv_dereg_mr(E.tmr);
	if (E.smr)
		ibv_dereg_mr(E.smr);
	free(E.tbuf);
	free(E.sbuf);
	if (E.scq)
		ibv_destroy_cq(E.scq);
	for (int k = 0; k < 2; k++)
		if (E.cq[k])
			ibv_destroy_cq(E.cq[k]);
	if (E.pd0)
		ibv_dealloc_pd(E.pd0);
	if (E.pd1)
		ibv_dealloc_pd(E.pd1);
	if (E.c0)
		ibv_close_device(E.c0);
	if (E.c1)
		ibv_close_device(E.c1);
	if (E.fd >= 0)
		close(E.fd);
	if (E.fd2 >= 0)
		close(E.fd2);
	unlink(E.path);
}

/* ibv_open_qp on the target through handle A: query and modify through it. */
static struct ibv_qp *test_open_qp_handle(void)
{
	struct ibv_qp *o = dpvt_xrc_open_qp(E.c1, E.hx[0], E.tgt->qp_num, &E);
	CHECK(o != NULL, "open_qp on the target through handle A: %s", strerror(errno));
	if (!o)
		return NULL;
	CHECK_EQ(o->qp_num, E.tgt->qp_num, "opened qp_num");
	CHECK(o->qp_context == &E && o->context == E.c1, "opened qp_context/context");
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;
	memset(&a, 0, sizeof(a));
	CHECK_EQ(ibv_query_qp(o, &a, IBV_QP_STATE | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN, &ia), 0,
		 "query through the handle");
	CHECK_EQ(a.qp_state, IBV_QPS_RTR, "state through the handle: RTR");
	CHECK_EQ(a.dest_qp_num, E.ini->qp_num, "dest_qp_num through the handle");
	CHECK_EQ(a.rq_psn, 0x123456, "rq_psn through the handle");
	CHECK_EQ(ia.qp_type, IBV_QPT_XRC_RECV, "init_attr.qp_type through the handle");
	/* modify through the handle: RTR -> RTS (XRC_TGT needs SQ_PSN, TIMEOUT) */
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	CHECK_EQ(ibv_modify_qp(o, &a, IBV_QP_STATE), EINVAL, "RTR->RTS without SQ_PSN through the handle");
	a.sq_psn = 0x123456;
	a.timeout = 10;
	CHECK_EQ(ibv_modify_qp(o, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT), 0,
		 "RTR->RTS through the handle");
	CHECK_EQ(dpvt_qp_state(E.tgt), IBV_QPS_RTS, "the real QP moved to RTS");
	CHECK_EQ(dpvt_qp_state(o), IBV_QPS_RTS, "query through the handle: RTS");
	CHECK_EQ(o->state, IBV_QPS_RTS, "handle's ibv_qp.state");
	return o;
}

struct expect {
	int srq;           /* 0 = A, 1 = B */
	enum ibv_wc_opcode opc;
	uint32_t len;
	bool imm;
	uint32_t immv;
	unsigned int seed; /* content (SEND) */
};

/* Check the next receive completion of SRQ k against e. */
static void expect_recv(const struct expect *e, const char *what)
{
	struct ibv_wc wc;
	memset(&wc, 0, sizeof(wc));
	int k = e->srq;
	int n = 0;
	uint64_t end = dpvt_now_ms() + 3000;
	while (!n && dpvt_now_ms() < end) {
		ibv_poll_cq(E.scq, 0, NULL);
		n = ibv_poll_cq(E.cq[k], 1, &wc);
		if (!n)
			usleep(50);
	}
	CHECK_EQ(n, 1, what);
	if (n != 1)
		return;
	CHECK(wc.status == IBV_WC_SUCCESS, "%s: status %s", what, ibv_wc_status_str(wc.status));
	CHECK_EQ(wc.opcode, e->opc, what);
	CHECK_EQ(wc.qp_num, E.tgt->qp_num, "receive wc.qp_num is the target QP number");
	CHECK_EQ(wc.byte_len, e->len, what);
	CHECK_EQ((uint32_t)(wc.wr_id >> 32), (uint32_t)k, "completion on the CQ of the SRQ named");
	CHECK_EQ(!!(wc.wc_flags & IBV_WC_WITH_IMM), e->imm, "IBV_WC_WITH_IMM");
	if (e->imm)
		CHECK_EQ(be32toh(wc.imm_data), e->immv, "imm_data");
	uint32_t slot = (uint32_t)wc.wr_id;
	if (e->opc == IBV_WC_RECV) {
		long bad = dpvt_check_pattern(E.rbuf[k] + (size_t)slot * SLOT, e->len, e->seed);
		CHECK(bad < 0, "%s: content differs at %ld", what, bad);
	}
	CHECK_EQ(post_srq(k, slot), 0, "repost SRQ WQE");
}

static void expect_send_ok(enum ibv_wc_opcode opc, uint64_t wr_id, const char *what)
{
	struct ibv_wc wc;
	memset(&wc, 0, sizeof(wc));
	int n = wait_send(&wc, 3000);
	CHECK_EQ(n, 1, what);
	if (n != 1)
		return;
	CHECK(wc.status == IBV_WC_SUCCESS, "%s: status %s", what, ibv_wc_status_str(wc.status));
	CHECK_EQ(wc.opcode, opc, what);
	CHECK_EQ(wc.wr_id, wr_id, what);
	CHECK_EQ(wc.qp_num, E.ini->qp_num, "send wc.qp_num is the initiator");
}

static void test_ops(void)
{
	/* 0 B is a SEND with num_sge 0 and sg_list NULL: under UBSan this
	 * reports dpv_req.c dpv_rc_post_send() memcpy(w->sge, NULL, 0) */
	static const uint32_t sizes[] = {1, 100, 1024, 1025, 4000, 9000, 65536, 0, 2048, 33333};
	const unsigned int ns = sizeof(sizes) / sizeof(sizes[0]);
	struct expect ex[64];
	unsigned int nex = 0;
	char what[96];

	/* SEND and SEND_WITH_IMM alternating between SRQ A and SRQ B */
	for (unsigned int i = 0; i < 2 * ns; i++) {
		uint32_t len = sizes[i % ns];
		int k = (int)(i & 1);
		bool imm = i >= ns;
		uint8_t *p = E.sbuf + (size_t)i * SLOT;
		dpvt_fill_pattern(p, len, 1000 + i);
		int r = dpvt_post_xrc_wr(E.ini, E.srqn[k], imm ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND, i, p, len,
					 E.smr->lkey, 0, 0, 0xabc000 + i, IBV_SEND_SIGNALED);
		snprintf(what, sizeof(what), "post %s %u B to SRQ %c", imm ? "SEND_WITH_IMM" : "SEND", len,
			 'A' + k);
		CHECK_EQ(r, 0, what);
		ex[nex++] = (struct expect){k, IBV_WC_RECV, len, imm, 0xabc000 + i, 1000 + i};
	}
	for (unsigned int i = 0; i < 2 * ns; i++) {
		snprintf(what, sizeof(what), "send completion %u", i);
		expect_send_ok(IBV_WC_SEND, i, what);
	}
	/* per SRQ in order */
	for (int k = 0; k < 2; k++)
		for (unsigned int i = 0; i < nex; i++)
			if (ex[i].srq == k) {
				snprintf(what, sizeof(what), "receive %u on SRQ %c", i, 'A' + k);
				expect_recv(&ex[i], what);
			}
	CHECK_EQ(dpvt_poll_quiet(E.cq[0], 50) + dpvt_poll_quiet(E.cq[1], 50), 0, "no extra receive completions");

	/* RDMA WRITE (the XRCETH names SRQ A: its PD gives the rkey's PD);
	 * no receive WQE is consumed */
	uint8_t *src = E.sbuf;
	dpvt_fill_pattern(src, 5000, 77);
	CHECK_EQ(dpvt_post_xrc_wr(E.ini, E.srqn[0], IBV_WR_RDMA_WRITE, 100, src, 5000, E.smr->lkey,
				  (uintptr_t)E.tbuf + 16, E.tmr->rkey, 0, IBV_SEND_SIGNALED),
		 0, "post RDMA WRITE");
	expect_send_ok(IBV_WC_RDMA_WRITE, 100, "RDMA WRITE completion");
	CHECK(dpvt_check_pattern(E.tbuf + 16, 5000, 77) < 0, "RDMA WRITE data at the target");
	CHECK_EQ(dpvt_poll_quiet(E.cq[0], 30), 0, "RDMA WRITE: no receive completion");
	/* RDMA WRITE_WITH_IMM to SRQ B: consumes one WQE of SRQ B */
	dpvt_fill_pattern(src, 3000, 78);
	CHECK_EQ(dpvt_post_xrc_wr(E.ini, E.srqn[1], IBV_WR_RDMA_WRITE_WITH_IMM, 101, src, 3000, E.smr->lkey,
				  (uintptr_t)E.tbuf + 8192, E.tmr->rkey, 0x5151, IBV_SEND_SIGNALED),
		 0, "post RDMA WRITE_WITH_IMM");
	expect_send_ok(IBV_WC_RDMA_WRITE, 101, "RDMA WRITE_WITH_IMM completion");
	struct expect wi = {1, IBV_WC_RECV_RDMA_WITH_IMM, 3000, true, 0x5151, 0};
	expect_recv(&wi, "WRITE_WITH_IMM receive on SRQ B");
	CHECK(dpvt_check_pattern(E.tbuf + 8192, 3000, 78) < 0, "RDMA WRITE_WITH_IMM data");
	CHECK_EQ(dpvt_poll_quiet(E.cq[0], 30), 0, "WRITE_WITH_IMM: nothing on SRQ A's CQ");

	/* RDMA READ (multi-packet) through SRQ B */
	dpvt_fill_pattern(E.tbuf + 20000, 7000, 79);
	uint8_t *dst = E.sbuf + (size_t)NSLOT * SLOT;
	memset(dst, 0, 7000);
	CHECK_EQ(dpvt_post_xrc_wr(E.ini, E.srqn[1], IBV_WR_RDMA_READ, 102, dst, 7000, E.smr->lkey,
				  (uintptr_t)E.tbuf + 20000, E.tmr->rkey, 0, IBV_SEND_SIGNALED),
		 0, "post RDMA READ");
	expect_send_ok(IBV_WC_RDMA_READ, 102, "RDMA READ completion");
	CHECK(dpvt_check_pattern(dst, 7000, 79) < 0, "RDMA READ data");

	/* atomics */
	uint64_t *av = (uint64_t *)(E.tbuf + RDMA_LEN);
	uint64_t *res = (uint64_t *)(E.sbuf + (size_t)NSLOT * SLOT + 8000);
	*av = 100;
	*res = 0;
	CHECK_EQ(dpvt_post_xrc_atomic(E.ini, E.srqn[0], IBV_WR_ATOMIC_FETCH_AND_ADD, 103, res, E.smr->lkey, (uintptr_t)av, E.tmr->rkey, 5, 0), 0,
		 "post FETCH_ADD");
	expect_send_ok(IBV_WC_FETCH_ADD, 103, "FETCH_ADD completion");
	CHECK_EQ(*res, 100, "FETCH_ADD returns the old value");
	CHECK_EQ(*av, 105, "FETCH_ADD result");
	CHECK_EQ(dpvt_post_xrc_atomic(E.ini, E.srqn[1], IBV_WR_ATOMIC_CMP_AND_SWP, 104, res, E.smr->lkey, (uintptr_t)av, E.tmr->rkey, 105, 7), 0,
		 "post CMP_SWP");
	expect_send_ok(IBV_WC_COMP_SWAP, 104, "CMP_SWP completion");
	CHECK_EQ(*res, 105, "CMP_SWP returns the old value");
	CHECK_EQ(*av, 7, "CMP_SWP swapped");
	CHECK_EQ(dpvt_post_xrc_atomic(E.ini, E.srqn[0], IBV_WR_ATOMIC_CMP_AND_SWP, 105, res, E.smr->lkey, (uintptr_t)av, E.tmr->rkey, 1, 9), 0,
		 "post CMP_SWP (no match)");
	expect_send_ok(IBV_WC_COMP_SWAP, 105, "CMP_SWP (no match) completion");
	CHECK_EQ(*res, 7, "CMP_SWP (no match) returns the value");
	CHECK_EQ(*av, 7, "CMP_SWP (no match) left it");
	CHECK_EQ(dpvt_poll_quiet(E.cq[0], 30) + dpvt_poll_quiet(E.cq[1], 30), 0, "READ/atomics: no receive completions");
}

/* A fresh initiator/target pair in the same domain; one WR to srqn; the
 * initiator must get `want` and both QPs end in ERR. */
static void error_case(const char *name, enum ibv_wr_opcode op, uint32_t srqn, enum ibv_wc_status want)
{
	struct ibv_cq *scq = ibv_create_cq(E.c0, 16, NULL, NULL, 0);
	struct ibv_qp *ini = scq ? dpvt_xrc_ini_new(E.c0, E.pd0, scq, 4, 1) : NULL;
	struct ibv_qp *tgt = dpvt_xrc_tgt_new(E.c1, E.hx[1]);
	char what[128];
	if (!scq || !ini || !tgt || dpvt_xrc_tgt_connect(tgt, E.c0, ini->qp_num, 100) ||
	    dpvt_xrc_ini_connect(ini, E.c1, tgt->qp_num, 100, 10)) {
		CHECK(0, "%s: set-up", name);
		goto out;
	}
	uint8_t *p = E.sbuf;
	dpvt_fill_pattern(p, 2000, 5);
	int r = dpvt_post_xrc_wr(ini, srqn, op, 7, p, 2000, E.smr->lkey, (uintptr_t)E.tbuf, E.tmr->rkey, 1, IBV_SEND_SIGNALED);
	snprintf(what, sizeof(what), "%s: post", name);
	CHECK_EQ(r, 0, what);
	struct ibv_wc wc;
	memset(&wc, 0, sizeof(wc));
	int n = dpvt_poll_n(scq, &wc, 1, 3000);
	snprintf(what, sizeof(what), "%s: one completion", name);
	CHECK_EQ(n, 1, what);
	if (n == 1) {
		CHECK(wc.status == want, "%s: status %s, expected %s", name, ibv_wc_status_str(wc.status),
		      ibv_wc_status_str(want));
		CHECK_EQ(wc.wr_id, 7, "error completion wr_id");
		CHECK_EQ(wc.qp_num, ini->qp_num, "error completion qp_num");
	}
	snprintf(what, sizeof(what), "%s: initiator in ERR", name);
	CHECK_EQ(dpvt_qp_state(ini), IBV_QPS_ERR, what);
	snprintf(what, sizeof(what), "%s: target in ERR", name);
	CHECK_EQ(dpvt_qp_state(tgt), IBV_QPS_ERR, what);
	snprintf(what, sizeof(what), "%s: nothing delivered to SRQ A/B", name);
	CHECK_EQ(dpvt_poll_quiet(E.cq[0], 20) + dpvt_poll_quiet(E.cq[1], 20), 0, what);
out:
	if (ini)
		ibv_destroy_qp(ini);
	if (tgt)
		ibv_destroy_qp(tgt);
	if (scq)
		ibv_destroy_cq(scq);
}

static void test_errors(void)
{
	/* an XRC SRQ of another (anonymous) domain on the same device */
	struct ibv_xrcd *ox = dpvt_xrcd_open(E.c1, -1, O_CREAT, DPVT_XRCD_MASK);
	struct ibv_cq *ocq = ibv_create_cq(E.c1, 16, NULL, NULL, 0);
	struct ibv_srq *os = ox && ocq ? dpvt_xrc_srq_new(E.c1, E.pd1, ocq, ox, 16, 1) : NULL;
	CHECK(os != NULL, "SRQ in another domain");
	if (os) {
		uint32_t slot = 0;
		struct ibv_sge sg = {.addr = (uintptr_t)E.rbuf[0], .length = SLOT, .lkey = E.rmr[0]->lkey};
		struct ibv_recv_wr w = {.wr_id = slot, .sg_list = &sg, .num_sge = 1}, *bad = NULL;
		ibv_post_srq_recv(os, &w, &bad);
		/* the responder NAKs "invalid request" (XRCETH names no XRC SRQ
		 * of the target's domain): IBV_WC_REM_INV_REQ_ERR */
		error_case("SEND to another domain's SRQ", IBV_WR_SEND, dpvt_srq_num(os), IBV_WC_REM_INV_REQ_ERR);
		error_case("RDMA WRITE via another domain's SRQ", IBV_WR_RDMA_WRITE, dpvt_srq_num(os),
			   IBV_WC_REM_INV_REQ_ERR);
		error_case("RDMA READ via another domain's SRQ", IBV_WR_RDMA_READ, dpvt_srq_num(os),
			   IBV_WC_REM_INV_REQ_ERR);
		CHECK_EQ(dpvt_poll_quiet(ocq, 20), 0, "nothing delivered into the other domain's SRQ");
		CHECK_EQ(ibv_destroy_srq(os), 0, "destroy other SRQ");
	}
	if (ocq)
		ibv_destroy_cq(ocq);
	if (ox)
		CHECK_EQ(ibv_close_xrcd(ox), 0, "close other domain");
	/* a basic SRQ's number */
	struct ibv_srq_init_attr sa;
	memset(&sa, 0, sizeof(sa));
	sa.attr.max_wr = 4;
	sa.attr.max_sge = 1;
	struct ibv_srq *bs = ibv_create_srq(E.pd1, &sa);
	CHECK(bs != NULL, "basic SRQ");
	if (bs) {
		uint32_t n = 0;
		CHECK_EQ(ibv_get_srq_num(bs, &n), 0, "get_srq_num of a basic SRQ");
		error_case("SEND to a basic SRQ's number", IBV_WR_SEND, n, IBV_WC_REM_INV_REQ_ERR);
		CHECK_EQ(ibv_destroy_srq(bs), 0, "destroy basic SRQ");
	}
	error_case("SEND to SRQ number 0", IBV_WR_SEND, 0, IBV_WC_REM_INV_REQ_ERR);
	error_case("SEND to an unused SRQ number", IBV_WR_SEND, 0xfffff0, IBV_WC_REM_INV_REQ_ERR);
}

/* ---- the stream ---- */

static uint64_t g_rng;
static uint32_t rnd(void)
{
	g_rng = g_rng * 6364136223846793005ull + 1442695040888963407ull;
	return (uint32_t)(g_rng >> 33);
}

struct smsg {
	uint32_t len;
	uint8_t srq;
	bool imm;
};

static void stream(unsigned int n, unsigned int window, unsigned int timeout_s)
{
	struct smsg *m = calloc(n, sizeof(*m));
	unsigned int *order[2] = {calloc(n, sizeof(unsigned int)), calloc(n, sizeof(unsigned int))};
	unsigned int cnt[2] = {0, 0}, got[2] = {0, 0};
	if (!m || !order[0] || !order[1]) {
		CHECK(0, "stream: memory");
		return;
	}
	g_rng = 0x5eed;
	uint64_t bytes = 0;
	for (unsigned int i = 0; i < n; i++) {
		uint32_t r = rnd();
		m[i].len = (r % 10 < 7) ? 1 + rnd() % SLOT : 1 + rnd() % 2048;
		m[i].srq = (uint8_t)(rnd() & 1);
		m[i].imm = (rnd() & 3) == 0;
		order[m[i].srq][cnt[m[i].srq]++] = i;
		bytes += m[i].len;
	}
	unsigned int posted = 0, sdone = 0, bad_send = 0, bad_recv = 0, bad_data = 0, bad_order = 0;
	bool *delivered = calloc(n, sizeof(bool));
	unsigned int first_bad = n;             /* first send that did not succeed */
	enum ibv_wc_status first_bad_st = IBV_WC_SUCCESS;
	if (!delivered) {
		CHECK(0, "stream: memory");
		return;
	}
	uint64_t t0 = dpvt_now_ms(), last_progress = t0, end = t0 + (uint64_t)timeout_s * 1000u;
	struct ibv_wc wc[32];
	while ((sdone < n || got[0] + got[1] < n) && dpvt_now_ms() < end) {
		bool progress = false;
		while (posted < n && posted - sdone < window) {
			unsigned int i = posted;
			uint8_t *p = E.sbuf + (size_t)(i % NSLOT) * SLOT;
			dpvt_fill_pattern(p, m[i].len, i);
			if (dpvt_post_xrc_wr(E.ini, E.srqn[m[i].srq], m[i].imm ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND, i, p,
					     m[i].len, E.smr->lkey, 0, 0, i ^ 0x55aa0000u, IBV_SEND_SIGNALED))
				break;
			posted++;
			progress = true;
		}
		int r = ibv_poll_cq(E.scq, 32, wc);
		for (int j = 0; j < r; j++) {
			if (wc[j].status != IBV_WC_SUCCESS || wc[j].wr_id != sdone) {
				if (first_bad == n) {
					first_bad = sdone;
					first_bad_st = wc[j].status;
				}
				if (bad_send++ < 5)
					fprintf(stderr, "send %u: status %s wr_id %llu\n", sdone,
						ibv_wc_status_str(wc[j].status), (unsigned long long)wc[j].wr_id);
			}
			sdone++;
			progress = true;
		}
		for (int k = 0; k < 2; k++) {
			r = ibv_poll_cq(E.cq[k], 32, wc);
			for (int j = 0; j < r; j++) {
				progress = true;
				uint32_t slot = (uint32_t)wc[j].wr_id;
				if (got[k] >= cnt[k]) {
					if (bad_order++ < 5)
						fprintf(stderr, "SRQ %c: extra completion\n", 'A' + k);
					post_srq(k, slot);
					continue;
				}
				unsigned int i = order[k][got[k]++];
				if (wc[j].status != IBV_WC_SUCCESS || wc[j].opcode != IBV_WC_RECV ||
				    wc[j].qp_num != E.tgt->qp_num || (uint32_t)(wc[j].wr_id >> 32) != (uint32_t)k) {
					if (bad_recv++ < 5)
						fprintf(stderr, "SRQ %c msg %u: status %s opcode %d qp %u\n", 'A' + k, i,
							ibv_wc_status_str(wc[j].status), wc[j].opcode, wc[j].qp_num);
				} else if (wc[j].byte_len != m[i].len ||
					   !!(wc[j].wc_flags & IBV_WC_WITH_IMM) != m[i].imm ||
					   (m[i].imm && be32toh(wc[j].imm_data) != (i ^ 0x55aa0000u))) {
					if (bad_order++ < 5)
						fprintf(stderr,
							"SRQ %c: expected msg %u (%u B, imm %d), got %u B imm %d/%08x\n",
							'A' + k, i, m[i].len, m[i].imm, wc[j].byte_len,
							!!(wc[j].wc_flags & IBV_WC_WITH_IMM), be32toh(wc[j].imm_data));
				} else {
					long off = dpvt_check_pattern(E.rbuf[k] + (size_t)slot * SLOT, m[i].len, i);
					if (off >= 0 && bad_data++ < 5)
						fprintf(stderr, "SRQ %c msg %u (%u B): content differs at %ld\n", 'A' + k,
							i, m[i].len, off);
					delivered[i] = true;
				}
				post_srq(k, slot);
			}
		}
		if (progress)
			last_progress = dpvt_now_ms();
		else if (dpvt_now_ms() - last_progress > (sdone == n ? 2000u : 20000u)) {
			fprintf(stderr, "stream stalled: posted %u, sends done %u, received A %u/%u B %u/%u\n", posted,
				sdone, got[0], cnt[0], got[1], cnt[1]);
			break;
		} else {
			usleep(20);
		}
	}
	uint64_t ms = dpvt_now_ms() - t0;
	printf("stream (window %u): %u messages (%llu bytes) in %llu ms; sends done %u; received A %u/%u B %u/%u\n", window, n,
	       (unsigned long long)bytes, (unsigned long long)ms, sdone, got[0], cnt[0], got[1], cnt[1]);
	/* Lost-ACK recovery: a message the target delivered whose send then
	 * failed with RETRY_EXC_ERR means its ACK was lost and the target did
	 * not re-acknowledge the retransmitted (duplicate) request. This was a
	 * bug of dpv_resp.c duplicate() (re-ACK for IBV_QPT_RC only, not
	 * IBV_QPT_XRC_RECV), fixed in 0330c38. The rest (initiator in ERR,
	 * flushed sends, undelivered messages) follows from it, so the other
	 * delivery checks are skipped then. */
	bool lost_ack = first_bad < n && first_bad_st == IBV_WC_RETRY_EXC_ERR && delivered[first_bad];
	CHECK(!lost_ack,
	      "stream: message %u was delivered but its send failed with RETRY_EXC_ERR: the XRC target "
	      "did not re-ACK a duplicate request (dpv_resp.c duplicate())",
	      first_bad);
	if (!lost_ack) {
		CHECK_EQ(sdone, n, "stream: every send completed");
		CHECK_EQ(bad_send, 0, "stream: send completions successful and in order");
		CHECK_EQ(got[0], cnt[0], "stream: SRQ A received every message");
		CHECK_EQ(got[1], cnt[1], "stream: SRQ B received every message");
		CHECK_EQ(dpvt_qp_state(E.ini), IBV_QPS_RTS, "stream: initiator still RTS");
	}
	CHECK_EQ(bad_recv, 0, "stream: receive completions successful, on the right CQ and QP");
	CHECK_EQ(bad_order, 0, "stream: in order per SRQ, right length/immediate, exactly once");
	CHECK_EQ(bad_data, 0, "stream: content");
	int extra = dpvt_poll_quiet(E.cq[0], 200) + dpvt_poll_quiet(E.cq[1], 200);
	CHECK_EQ(extra, 0, "stream: no duplicate receive completions afterwards");
	CHECK_EQ(dpvt_poll_quiet(E.scq, 50), 0, "stream: no extra send completions afterwards");
	free(delivered);
	free(m);
	free(order[0]);
	free(order[1]);
}

int main(int argc, char **argv)
{
	unsigned int stream_n = 0, window = NSLOT;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--stream") && i + 1 < argc)
			stream_n = (unsigned int)strtoul(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--window") && i + 1 < argc)
			window = (unsigned int)strtoul(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--timeout") && i + 1 < argc)
			g_timeout = (uint8_t)strtoul(argv[++i], NULL, 0);
	}
	if (window < 1 || window > NSLOT)
		window = NSLOT;
	const char *f = getenv("DPVERBS_FAULT");
	if (f && *f)
		printf("DPVERBS_FAULT=%s\n", f);
	if (env_open()) {
		fprintf(stderr, "set-up failed\n");
		env_close();
		return 1;
	}
	for (int k = 0; k < 2; k++)
		for (uint32_t s = 0; s < NSLOT; s++)
			if (post_srq(k, s)) {
				fprintf(stderr, "post_srq_recv failed\n");
				return 1;
			}
	CHECK(E.srqn[0] && E.srqn[1] && E.srqn[0] != E.srqn[1], "two SRQ numbers");

	struct ibv_qp *opened = NULL;
	if (!stream_n) {
		opened = test_open_qp_handle();
		test_ops();
		test_errors();
		/* the main pair is unaffected by the others' errors */
		stream(2000, NSLOT, 100);
	} else {
		stream(stream_n, window, 280);
	}

	if (opened) {
		CHECK_EQ(ibv_destroy_qp(E.tgt), EBUSY, "destroy the target while an open_qp handle exists: EBUSY");
		CHECK_EQ(dpvt_qp_state(opened), IBV_QPS_RTS, "target intact after EBUSY");
		CHECK_EQ(ibv_close_xrcd(E.hx[0]), EBUSY, "close handle A (SRQ A, open_qp handle): EBUSY");
		CHECK_EQ(ibv_destroy_qp(opened), 0, "destroy the open_qp handle");
	}
	CHECK_EQ(ibv_close_xrcd(E.hx[1]), EBUSY, "close handle B (SRQ B, target QP): EBUSY");
	env_close();
	return dpvt_finish();
}
