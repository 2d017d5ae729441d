/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Helpers of the connected-transport functional tests (RC/UC, on top of
 * func_common.h): an endpoint (context, PD, CQs), QP creation, the
 * RESET->INIT->RTR->RTS connection with chosen attributes, a deterministic
 * payload pattern, and async event waiting on the context's async_fd.
 * White-box users also read the per-port transport counters.
 */
#ifndef RC_COMMON_H
#define RC_COMMON_H

#include "func_common.h"

#include <fcntl.h>
#include <poll.h>

struct rc_side {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *scq, *rcq;
};

static inline int rc_side_open(struct rc_side *s, const char *dev, int cqe)
{
	memset(s, 0, sizeof(*s));
	s->ctx = open_dev(dev);
	if (!s->ctx)
		return -1;
	s->pd = ibv_alloc_pd(s->ctx);
	s->scq = ibv_create_cq(s->ctx, cqe, NULL, NULL, 0);
	s->rcq = ibv_create_cq(s->ctx, cqe, NULL, NULL, 0);
	if (!s->pd || !s->scq || !s->rcq) {
		fprintf(stderr, "%s: PD/CQ creation failed: %s\n", dev, strerror(errno));
		return -1;
	}
	/* async events are read with poll() and a timeout */
	int fl = fcntl(s->ctx->async_fd, F_GETFL);
	fcntl(s->ctx->async_fd, F_SETFL, fl | O_NONBLOCK);
	return 0;
}

static inline void rc_side_close(struct rc_side *s)
{
	if (s->scq)
		ibv_destroy_cq(s->scq);
	if (s->rcq)
		ibv_destroy_cq(s->rcq);
	if (s->pd)
		ibv_dealloc_pd(s->pd);
	if (s->ctx)
		ibv_close_device(s->ctx);
	memset(s, 0, sizeof(*s));
}

static inline struct ibv_qp *rc_qp_new(struct rc_side *s, enum ibv_qp_type t, uint32_t sq, uint32_t rq,
				       struct ibv_srq *srq)
{
	struct ibv_qp_init_attr ia;
	memset(&ia, 0, sizeof(ia));
	ia.send_cq = s->scq;
	ia.recv_cq = s->rcq;
	ia.srq = srq;
	ia.qp_type = t;
	ia.cap.max_send_wr = sq;
	ia.cap.max_recv_wr = srq ? 0 : rq;
	ia.cap.max_send_sge = 4;
	ia.cap.max_recv_sge = srq ? 0 : 4;
	ia.cap.max_inline_data = 64;
	struct ibv_qp *qp = ibv_create_qp(s->pd, &ia);
	if (!qp)
		fprintf(stderr, "ibv_create_qp: %s\n", strerror(errno));
	return qp;
}

/* Connection attributes; rc_opts_default() gives sane values. */
struct rc_opts {
	unsigned int access;
	enum ibv_mtu mtu;
	uint32_t sq_psn, rq_psn;
	uint8_t timeout, retry_cnt, rnr_retry, min_rnr_timer;
	uint8_t max_rd_atomic, max_dest_rd_atomic;
};

static inline struct rc_opts rc_opts_default(void)
{
	struct rc_opts o = {
		.access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			  IBV_ACCESS_REMOTE_ATOMIC,
		.mtu = IBV_MTU_1024,
		.sq_psn = 0x100,
		.rq_psn = 0x100,
		.timeout = 14,
		.retry_cnt = 7,
		.rnr_retry = 7,
		.min_rnr_timer = 1,
		.max_rd_atomic = 16,
		.max_dest_rd_atomic = 16,
	};
	return o;
}

static inline int rc_to_init(struct ibv_qp *qp, const struct rc_opts *o)
{
	struct ibv_qp_attr a;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = 1;
	a.qp_access_flags = o->access;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
}

/* INIT -> RTR towards dqpn on peer (GID index 1, IPv4-mapped, both sides). */
static inline int rc_to_rtr(struct ibv_qp *qp, struct ibv_context *peer, uint32_t dqpn, const struct rc_opts *o)
{
	struct ibv_qp_attr a;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = o->mtu;
	a.dest_qp_num = dqpn;
	a.rq_psn = o->rq_psn;
	a.max_dest_rd_atomic = o->max_dest_rd_atomic;
	a.min_rnr_timer = o->min_rnr_timer;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.sgid_index = 1;
	a.ah_attr.grh.hop_limit = 64;
	if (ibv_query_gid(peer, 1, 1, &a.ah_attr.grh.dgid))
		return -1;
	int mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
	if (qp->qp_type == IBV_QPT_RC)
		mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
	return ibv_modify_qp(qp, &a, mask);
}

static inline int rc_to_rts(struct ibv_qp *qp, const struct rc_opts *o)
{
	struct ibv_qp_attr a;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = o->sq_psn;
	a.timeout = o->timeout;
	a.retry_cnt = o->retry_cnt;
	a.rnr_retry = o->rnr_retry;
	a.max_rd_atomic = o->max_rd_atomic;
	int mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
	if (qp->qp_type == IBV_QPT_RC)
		mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
	return ibv_modify_qp(qp, &a, mask);
}

/* Connect a (on ctx of sa) with b (on ctx of sb): both to RTS unless b_rtr_only.
 * oa/ob are each side's options (rq_psn of one must match sq_psn of the other). */
static inline int rc_connect(struct ibv_qp *a, struct rc_side *sa, const struct rc_opts *oa, struct ibv_qp *b,
			     struct rc_side *sb, const struct rc_opts *ob, bool b_rtr_only)
{
	if (rc_to_init(a, oa) || rc_to_init(b, ob))
		return -1;
	if (rc_to_rtr(a, sb->ctx, b->qp_num, oa) || rc_to_rtr(b, sa->ctx, a->qp_num, ob))
		return -1;
	if (rc_to_rts(a, oa))
		return -1;
	if (!b_rtr_only && rc_to_rts(b, ob))
		return -1;
	return 0;
}

static inline enum ibv_qp_state qp_state(struct ibv_qp *qp)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;
	if (ibv_query_qp(qp, &a, IBV_QP_STATE, &ia))
		return (enum ibv_qp_state)-1;
	return a.qp_state;
}

static inline int qp_modify_state(struct ibv_qp *qp, enum ibv_qp_state st)
{
	struct ibv_qp_attr a;
	memset(&a, 0, sizeof(a));
	a.qp_state = st;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE);
}

static inline int post_recv_mr(struct ibv_qp *qp, struct ibv_mr *mr, uint64_t wr_id, size_t off, uint32_t len)
{
	struct ibv_sge s = {.addr = (uintptr_t)mr->addr + off, .length = len, .lkey = mr->lkey};
	struct ibv_recv_wr wr = {.wr_id = wr_id, .sg_list = &s, .num_sge = 1}, *bad = NULL;
	return ibv_post_recv(qp, &wr, &bad);
}

static inline int post_srq_recv_mr(struct ibv_srq *srq, struct ibv_mr *mr, uint64_t wr_id, size_t off,
				   uint32_t len)
{
	struct ibv_sge s = {.addr = (uintptr_t)mr->addr + off, .length = len, .lkey = mr->lkey};
	struct ibv_recv_wr wr = {.wr_id = wr_id, .sg_list = &s, .num_sge = 1}, *bad = NULL;
	return ibv_post_srq_recv(srq, &wr, &bad);
}

/* One RC/UC send WR; opcode, local (addr,len,lkey), remote (raddr,rkey). */
static inline int post_wr(struct ibv_qp *qp, enum ibv_wr_opcode op, uint64_t wr_id, void *addr, uint32_t len,
			  uint32_t lkey, uint64_t raddr, uint32_t rkey, uint32_t imm, unsigned int flags)
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
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	return ibv_post_send(qp, &wr, &bad);
}

static inline int post_atomic(struct ibv_qp *qp, enum ibv_wr_opcode op, uint64_t wr_id, uint64_t *res,
			      uint32_t lkey, uint64_t raddr, uint32_t rkey, uint64_t cmp_add, uint64_t swap,
			      struct ibv_send_wr **badp)
{
	struct ibv_sge s = {.addr = (uintptr_t)res, .length = 8, .lkey = lkey};
	struct ibv_send_wr wr, *bad = NULL;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.opcode = op;
	wr.sg_list = &s;
	wr.num_sge = 1;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.atomic.remote_addr = raddr;
	wr.wr.atomic.rkey = rkey;
	wr.wr.atomic.compare_add = cmp_add;
	wr.wr.atomic.swap = swap;
	int r = ibv_post_send(qp, &wr, &bad);
	if (badp)
		*badp = bad == &wr ? bad : NULL;
	return r;
}

/* ---- deterministic payload: word 0 is the sequence number, then a hash ---- */

static inline uint64_t mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

static inline uint64_t pat_word(uint64_t base, uint64_t seq, uint64_t k)
{
	if (k == 0)
		return seq;
	uint64_t x = base + k * 0x9e3779b97f4a7c15ULL;
	x ^= x >> 29;
	x *= 0xbf58476d1ce4e5b9ULL;
	return x ^ (x >> 32);
}

static inline void pat_fill(uint8_t *p, size_t len, uint64_t seed, uint64_t seq)
{
	uint64_t base = mix64(seed * 0x100000001b3ULL ^ seq);
	size_t k = 0;
	for (; (k + 1) * 8 <= len; k++) {
		uint64_t w = pat_word(base, seq, k);
		memcpy(p + k * 8, &w, 8);
	}
	if (k * 8 < len) {
		uint64_t w = pat_word(base, seq, k);
		memcpy(p + k * 8, &w, len - k * 8);
	}
}

/* Returns the offset of the first wrong byte, or -1 if all len bytes match. */
static inline long pat_check(const uint8_t *p, size_t len, uint64_t seed, uint64_t seq)
{
	uint64_t base = mix64(seed * 0x100000001b3ULL ^ seq);
	size_t k = 0;
	for (; (k + 1) * 8 <= len; k++) {
		uint64_t w = pat_word(base, seq, k), g;
		memcpy(&g, p + k * 8, 8);
		if (g != w) {
			for (size_t j = 0; j < 8; j++)
				if (((const uint8_t *)&g)[j] != ((const uint8_t *)&w)[j])
					return (long)(k * 8 + j);
		}
	}
	if (k * 8 < len) {
		uint64_t w = pat_word(base, seq, k);
		for (size_t j = 0; j < len - k * 8; j++)
			if (p[k * 8 + j] != ((const uint8_t *)&w)[j])
				return (long)(k * 8 + j);
	}
	return -1;
}

/* ---- async events ---- */

/* Drive progress and wait up to timeout_ms for an event of type `type` on
 * ctx whose element is obj (a QP, SRQ or CQ pointer; NULL: any). Other
 * events read meanwhile are printed and counted in *others (if not NULL). */
static inline bool wait_async(struct ibv_context *ctx, enum ibv_event_type type, void *obj,
			      unsigned int timeout_ms, int *others)
{
	uint64_t end = now_ms() + timeout_ms;
	struct ibv_wc wc;
	/* inline progress: polling an empty CQ runs the engine of every port */
	struct ibv_cq *drive = ibv_create_cq(ctx, 1, NULL, NULL, 0);
	bool found = false;
	for (;;) {
		struct ibv_async_event ev;
		while (ibv_get_async_event(ctx, &ev) == 0) {
			void *el = type == IBV_EVENT_SRQ_LIMIT_REACHED ? (void *)ev.element.srq
				 : type == IBV_EVENT_CQ_ERR ? (void *)ev.element.cq : (void *)ev.element.qp;
			bool match = ev.event_type == type && (!obj || el == obj);
			if (!match) {
				printf("  (async event %s seen while waiting for %s)\n", ibv_event_type_str(ev.event_type),
				       ibv_event_type_str(type));
				if (others)
					(*others)++;
			}
			ibv_ack_async_event(&ev);
			if (match) {
				found = true;
				break;
			}
		}
		if (found || now_ms() >= end)
			break;
		if (drive)
			ibv_poll_cq(drive, 1, &wc);
		struct pollfd pfd = {.fd = ctx->async_fd, .events = POLLIN};
		poll(&pfd, 1, 1);
	}
	if (drive)
		ibv_destroy_cq(drive);
	return found;
}

/* Read and discard pending events; returns how many there were. */
static inline int drain_async(struct ibv_context *ctx)
{
	struct ibv_async_event ev;
	int n = 0;
	while (ibv_get_async_event(ctx, &ev) == 0) {
		ibv_ack_async_event(&ev);
		n++;
	}
	return n;
}

#endif /* RC_COMMON_H */
