/* SPDX-License-Identifier: BSD-3-Clause */
/* Posting, polling with timeouts, traffic patterns with verification (dpvt_verbs.h). */
#include <stdio.h>
#include <unistd.h>
#include <arpa/inet.h>

#include "dpvt_verbs.h"

int dpvt_poll_n(struct ibv_cq *cq, struct ibv_wc *wc, int n, unsigned int timeout_ms)
{
	int got = 0;
	uint64_t end = dpvt_now_ms() + timeout_ms;

	while (got < n) {
		int r = ibv_poll_cq(cq, n - got, wc + got);
		if (r < 0)
			return got;
		got += r;
		if (got >= n || dpvt_now_ms() > end)
			break;
		if (!r)
			usleep(50);
	}
	return got;
}

int dpvt_poll_quiet(struct ibv_cq *cq, unsigned int ms)
{
	struct ibv_wc wc[16];
	int got = 0;
	uint64_t end = dpvt_now_ms() + ms;

	while (dpvt_now_ms() < end) {
		int r = ibv_poll_cq(cq, 16, wc);
		if (r > 0)
			got += r;
		usleep(100);
	}
	return got;
}

int dpvt_post_recv(struct ibv_qp *qp, struct ibv_mr *mr, uint64_t wr_id, size_t off, uint32_t len)
{
	struct ibv_sge s = {.addr = (uintptr_t)mr->addr + off, .length = len, .lkey = mr->lkey};
	struct ibv_recv_wr wr = {.wr_id = wr_id, .sg_list = &s, .num_sge = 1}, *bad = NULL;

	return ibv_post_recv(qp, &wr, &bad);
}

int dpvt_post_srq_recv(struct ibv_srq *srq, struct ibv_mr *mr, uint64_t wr_id, size_t off, uint32_t len)
{
	struct ibv_sge s = {.addr = (uintptr_t)mr->addr + off, .length = len, .lkey = mr->lkey};
	struct ibv_recv_wr wr = {.wr_id = wr_id, .sg_list = &s, .num_sge = 1}, *bad = NULL;

	return ibv_post_srq_recv(srq, &wr, &bad);
}

int dpvt_ep_post_recv(struct dpvt_ep *e, uint64_t wr_id, size_t off, uint32_t len)
{
	if (e->srq)
		return dpvt_post_srq_recv(e->srq, e->mr, wr_id, off, len);
	return dpvt_post_recv(e->qp, e->mr, wr_id, off, len);
}

/* The one send-WR builder of the RC/UC/XRC posting helpers. */
static int post_send_one(struct ibv_qp *qp, uint32_t srqn, enum ibv_wr_opcode op, uint64_t wr_id, void *addr,
			 uint32_t len, uint32_t lkey, uint64_t raddr, uint32_t rkey, uint32_t imm, unsigned int flags)
{
	struct ibv_sge s = {.addr = (uintptr_t)addr, .length = len, .lkey = lkey};
	struct ibv_send_wr wr, *bad = NULL;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.opcode = op;
	wr.sg_list = len ? &s : NULL;
	wr.num_sge = len ? 1 : 0;
	wr.send_flags = flags;
	wr.imm_data = htonl(imm);
	wr.qp_type.xrc.remote_srqn = srqn;
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	return ibv_post_send(qp, &wr, &bad);
}

int dpvt_post_wr(struct ibv_qp *qp, enum ibv_wr_opcode op, uint64_t wr_id, void *addr, uint32_t len, uint32_t lkey,
		 uint64_t raddr, uint32_t rkey, uint32_t imm, unsigned int flags)
{
	return post_send_one(qp, 0, op, wr_id, addr, len, lkey, raddr, rkey, imm, flags);
}

int dpvt_post_xrc_wr(struct ibv_qp *qp, uint32_t srqn, enum ibv_wr_opcode op, uint64_t wr_id, void *addr,
		     uint32_t len, uint32_t lkey, uint64_t raddr, uint32_t rkey, uint32_t imm, unsigned int flags)
{
	return post_send_one(qp, srqn, op, wr_id, addr, len, lkey, raddr, rkey, imm, flags);
}

static int post_atomic_one(struct ibv_qp *qp, uint32_t srqn, enum ibv_wr_opcode op, uint64_t wr_id, uint64_t *res,
			   uint32_t lkey, uint64_t raddr, uint32_t rkey, uint64_t cmp_add, uint64_t swap,
			   bool *refused)
{
	struct ibv_sge s = {.addr = (uintptr_t)res, .length = 8, .lkey = lkey};
	struct ibv_send_wr wr, *bad = NULL;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.opcode = op;
	wr.sg_list = &s;
	wr.num_sge = 1;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.qp_type.xrc.remote_srqn = srqn;
	wr.wr.atomic.remote_addr = raddr;
	wr.wr.atomic.rkey = rkey;
	wr.wr.atomic.compare_add = cmp_add;
	wr.wr.atomic.swap = swap;
	int r = ibv_post_send(qp, &wr, &bad);
	if (refused)
		*refused = bad == &wr;
	return r;
}

int dpvt_post_atomic(struct ibv_qp *qp, enum ibv_wr_opcode op, uint64_t wr_id, uint64_t *res, uint32_t lkey,
		     uint64_t raddr, uint32_t rkey, uint64_t cmp_add, uint64_t swap, bool *refused)
{
	return post_atomic_one(qp, 0, op, wr_id, res, lkey, raddr, rkey, cmp_add, swap, refused);
}

int dpvt_post_xrc_atomic(struct ibv_qp *qp, uint32_t srqn, enum ibv_wr_opcode op, uint64_t wr_id, uint64_t *res,
			 uint32_t lkey, uint64_t raddr, uint32_t rkey, uint64_t cmp_add, uint64_t swap)
{
	return post_atomic_one(qp, srqn, op, wr_id, res, lkey, raddr, rkey, cmp_add, swap, NULL);
}

int dpvt_post_ud_send(struct ibv_qp *qp, struct ibv_ah *ah, uint32_t rqpn, uint32_t rqkey, uint64_t wr_id,
		      struct ibv_mr *mr, size_t off, uint32_t len, unsigned int flags)
{
	struct ibv_sge s = {.addr = (uintptr_t)mr->addr + off, .length = len, .lkey = mr->lkey};
	struct ibv_send_wr wr, *bad = NULL;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.sg_list = len ? &s : NULL;
	wr.num_sge = len ? 1 : 0;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = flags;
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = rqpn;
	wr.wr.ud.remote_qkey = rqkey;
	return ibv_post_send(qp, &wr, &bad);
}

struct ibv_ah *dpvt_ah_new(struct ibv_pd *pd, struct ibv_context *dst_ctx, int sgid_index, int dgid_index)
{
	struct ibv_ah_attr a;

	memset(&a, 0, sizeof(a));
	a.is_global = 1;
	a.port_num = 1;
	a.grh.sgid_index = (uint8_t)sgid_index;
	a.grh.hop_limit = 64;
	if (ibv_query_gid(dst_ctx, 1, dgid_index, &a.grh.dgid))
		return NULL;
	return ibv_create_ah(pd, &a);
}

bool dpvt_wait1(struct ibv_cq *cq, struct ibv_cq *drive, uint64_t wr_id, enum ibv_wc_opcode op, const char *label)
{
	struct ibv_wc wc, dummy;
	int n = 0;
	uint64_t end = dpvt_now_ms() + 3000;

	memset(&wc, 0, sizeof(wc));
	for (;;) {
		n = ibv_poll_cq(cq, 1, &wc);
		if (n != 0 || dpvt_now_ms() > end)
			break;
		if (drive)
			ibv_poll_cq(drive, 0, &dummy);
	}
	CHECK(n == 1, "%s: one completion, got %d", label, n);
	if (n != 1)
		return false;
	CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == wr_id && wc.opcode == op,
	      "%s: status %s wr_id %llu (exp %llu) opcode %d (exp %d)", label, ibv_wc_status_str(wc.status),
	      (unsigned long long)wc.wr_id, (unsigned long long)wr_id, wc.opcode, op);
	return wc.status == IBV_WC_SUCCESS;
}

/* Layout of the endpoint buffers in dpvt_rc_traffic / dpvt_ud_traffic. */
#define OFF_SEND 0
#define OFF_RECV 8192
#define OFF_WRITE 16384
#define OFF_READSRC 24576
#define OFF_READDST 32768

void dpvt_rc_traffic(struct dpvt_ep *a, struct dpvt_ep *b, uint64_t seed, const char *label)
{
	char l[160];

	/* SEND 64 B inline */
	dpvt_pat_fill(a->buf + OFF_SEND, 64, seed, 1);
	memset(b->buf + OFF_RECV, 0, 4096);
	CHECK(dpvt_ep_post_recv(b, 11, OFF_RECV, 4096) == 0, "%s: post_recv", label);
	CHECK(dpvt_post_wr(a->qp, IBV_WR_SEND, 21, a->buf + OFF_SEND, 64, a->mr->lkey, 0, 0, 0,
			   IBV_SEND_SIGNALED | IBV_SEND_INLINE) == 0,
	      "%s: post SEND inline", label);
	snprintf(l, sizeof(l), "%s: SEND inline send CQE", label);
	dpvt_wait1(a->scq, b->scq, 21, IBV_WC_SEND, l);
	snprintf(l, sizeof(l), "%s: SEND inline recv CQE", label);
	dpvt_wait1(b->rcq, a->scq, 11, IBV_WC_RECV, l);
	CHECK(dpvt_pat_check(b->buf + OFF_RECV, 64, seed, 1) < 0, "%s: SEND inline payload", label);

	/* SEND 3000 B (3 packets at MTU 1024) */
	dpvt_pat_fill(a->buf + OFF_SEND, 3000, seed, 2);
	memset(b->buf + OFF_RECV, 0, 4096);
	CHECK(dpvt_ep_post_recv(b, 12, OFF_RECV, 4096) == 0, "%s: post_recv", label);
	CHECK(dpvt_post_wr(a->qp, IBV_WR_SEND, 22, a->buf + OFF_SEND, 3000, a->mr->lkey, 0, 0, 0,
			   IBV_SEND_SIGNALED) == 0,
	      "%s: post SEND", label);
	snprintf(l, sizeof(l), "%s: SEND 3000 send CQE", label);
	dpvt_wait1(a->scq, b->scq, 22, IBV_WC_SEND, l);
	snprintf(l, sizeof(l), "%s: SEND 3000 recv CQE", label);
	dpvt_wait1(b->rcq, a->scq, 12, IBV_WC_RECV, l);
	CHECK(dpvt_pat_check(b->buf + OFF_RECV, 3000, seed, 2) < 0, "%s: SEND 3000 payload", label);

	/* RDMA WRITE 5000 B */
	dpvt_pat_fill(a->buf + OFF_SEND, 5000, seed, 3);
	memset(b->buf + OFF_WRITE, 0, 8192);
	CHECK(dpvt_post_wr(a->qp, IBV_WR_RDMA_WRITE, 23, a->buf + OFF_SEND, 5000, a->mr->lkey,
			   (uintptr_t)(b->buf + OFF_WRITE), b->mr->rkey, 0, IBV_SEND_SIGNALED) == 0,
	      "%s: post WRITE", label);
	snprintf(l, sizeof(l), "%s: WRITE CQE", label);
	dpvt_wait1(a->scq, b->scq, 23, IBV_WC_RDMA_WRITE, l);
	CHECK(dpvt_pat_check(b->buf + OFF_WRITE, 5000, seed, 3) < 0, "%s: WRITE payload", label);

	/* RDMA READ 4000 B */
	dpvt_pat_fill(b->buf + OFF_READSRC, 4000, seed, 4);
	memset(a->buf + OFF_READDST, 0, 8192);
	CHECK(dpvt_post_wr(a->qp, IBV_WR_RDMA_READ, 24, a->buf + OFF_READDST, 4000, a->mr->lkey,
			   (uintptr_t)(b->buf + OFF_READSRC), b->mr->rkey, 0, IBV_SEND_SIGNALED) == 0,
	      "%s: post READ", label);
	snprintf(l, sizeof(l), "%s: READ CQE", label);
	dpvt_wait1(a->scq, b->scq, 24, IBV_WC_RDMA_READ, l);
	CHECK(dpvt_pat_check(a->buf + OFF_READDST, 4000, seed, 4) < 0, "%s: READ payload", label);

	/* SEND back b -> a */
	dpvt_pat_fill(b->buf + OFF_SEND, 200, seed, 5);
	memset(a->buf + OFF_RECV, 0, 4096);
	CHECK(dpvt_ep_post_recv(a, 13, OFF_RECV, 4096) == 0, "%s: post_recv (a)", label);
	CHECK(dpvt_post_wr(b->qp, IBV_WR_SEND, 25, b->buf + OFF_SEND, 200, b->mr->lkey, 0, 0, 0,
			   IBV_SEND_SIGNALED) == 0,
	      "%s: post SEND b->a", label);
	snprintf(l, sizeof(l), "%s: SEND b->a send CQE", label);
	dpvt_wait1(b->scq, a->scq, 25, IBV_WC_SEND, l);
	snprintf(l, sizeof(l), "%s: SEND b->a recv CQE", label);
	dpvt_wait1(a->rcq, b->scq, 13, IBV_WC_RECV, l);
	CHECK(dpvt_pat_check(a->buf + OFF_RECV, 200, seed, 5) < 0, "%s: SEND b->a payload", label);
}

void dpvt_ud_traffic(struct dpvt_ep *a, struct ibv_pd *ah_pd, struct dpvt_ep *b, uint32_t qkey, int n, uint64_t seed,
		     const char *label)
{
	struct ibv_ah_attr aa;

	memset(&aa, 0, sizeof(aa));
	aa.is_global = 1;
	aa.port_num = 1;
	aa.grh.sgid_index = 1;
	aa.grh.hop_limit = 64;
	CHECK(ibv_query_gid(b->ctx, 1, 1, &aa.grh.dgid) == 0, "%s: query_gid", label);
	errno = 0;
	struct ibv_ah *ah = ibv_create_ah(ah_pd, &aa);
	CHECK(ah != NULL, "%s: create_ah: %s", label, strerror(errno));
	if (!ah)
		return;
	for (int i = 0; i < n; i++) {
		uint32_t len = 100 + (uint32_t)i * 37;
		char l[160];

		memset(b->buf + OFF_RECV, 0, 4096);
		CHECK(dpvt_ep_post_recv(b, 100 + (uint64_t)i, OFF_RECV, 40 + len) == 0, "%s: post_recv", label);
		dpvt_pat_fill(a->buf + OFF_SEND, len, seed, (uint64_t)i);
		CHECK(dpvt_post_ud_send(a->qp, ah, b->qp->qp_num, qkey, 200 + (uint64_t)i, a->mr, OFF_SEND, len,
					IBV_SEND_SIGNALED) == 0,
		      "%s: UD post_send", label);
		snprintf(l, sizeof(l), "%s: UD send CQE %d", label, i);
		dpvt_wait1(a->scq, b->scq, 200 + (uint64_t)i, IBV_WC_SEND, l);
		snprintf(l, sizeof(l), "%s: UD recv CQE %d", label, i);
		dpvt_wait1(b->rcq, a->scq, 100 + (uint64_t)i, IBV_WC_RECV, l);
		CHECK(dpvt_pat_check(b->buf + OFF_RECV + 40, len, seed, (uint64_t)i) < 0, "%s: UD payload %d", label,
		      i);
	}
	CHECK(ibv_destroy_ah(ah) == 0, "%s: destroy_ah", label);
}
