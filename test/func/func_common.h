/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Shared helpers of the functional tests (suite 'func'): check macros with
 * a final "N passed, N failed" line, device lookup, UD endpoint set-up and
 * bounded completion polling. Header-only; every test is one .c file.
 *
 * KNOWN_BUG(cond, ...): a check that exposes a known library bug. It counts
 * as a failure (so the bug stays visible) unless DPVERBS_FUNC_XFAIL=1 is set
 * in the environment, in which case it is counted as "known" instead.
 */
#ifndef FUNC_COMMON_H
#define FUNC_COMMON_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <infiniband/verbs.h>

static int g_pass, g_fail, g_known;

#define CHECK(cond, ...)                                                                         \
	do {                                                                                     \
		if (cond) {                                                                      \
			g_pass++;                                                                \
		} else {                                                                         \
			g_fail++;                                                                \
			fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);         \
			fprintf(stderr, __VA_ARGS__);                                            \
			fputc('\n', stderr);                                                     \
		}                                                                                \
	} while (0)

#define CHECK_EQ(a, b, what)                                                                     \
	do {                                                                                     \
		long long _a = (long long)(a), _b = (long long)(b);                              \
		CHECK(_a == _b, "%s: got %lld, expected %lld", what, _a, _b);                    \
	} while (0)

static inline bool func_xfail(void)
{
	const char *e = getenv("DPVERBS_FUNC_XFAIL");
	return e && *e == '1';
}

#define KNOWN_BUG(cond, ...)                                                                     \
	do {                                                                                     \
		if (cond) {                                                                      \
			g_pass++;                                                                \
		} else if (func_xfail()) {                                                       \
			g_known++;                                                               \
			fprintf(stderr, "KNOWN BUG %s:%d: %s: ", __FILE__, __LINE__, #cond);    \
			fprintf(stderr, __VA_ARGS__);                                            \
			fputc('\n', stderr);                                                     \
		} else {                                                                         \
			g_fail++;                                                                \
			fprintf(stderr, "FAIL (KNOWN BUG) %s:%d: %s: ", __FILE__, __LINE__, #cond); \
			fprintf(stderr, __VA_ARGS__);                                            \
			fputc('\n', stderr);                                                     \
		}                                                                                \
	} while (0)

static inline int func_finish(void)
{
	if (g_known)
		printf("(%d known bugs tolerated by DPVERBS_FUNC_XFAIL)\n", g_known);
	printf("%d passed, %d failed\n", g_pass, g_fail);
	fflush(stdout);
	return g_fail ? 1 : 0;
}

static inline uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static inline void sleep_ms(unsigned int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* Poll cq until n completions or timeout_ms; returns how many were read. */
static inline int poll_n(struct ibv_cq *cq, struct ibv_wc *wc, int n, unsigned int timeout_ms)
{
	int got = 0;
	uint64_t end = now_ms() + timeout_ms;
	while (got < n) {
		int r = ibv_poll_cq(cq, n - got, wc + got);
		if (r < 0)
			return got;
		got += r;
		if (got >= n || now_ms() > end)
			break;
		if (!r)
			usleep(50);
	}
	return got;
}

/* Poll for a while and return how many completions arrived (expect none). */
static inline int poll_quiet(struct ibv_cq *cq, unsigned int ms)
{
	struct ibv_wc wc[16];
	int got = 0;
	uint64_t end = now_ms() + ms;
	while (now_ms() < end) {
		int r = ibv_poll_cq(cq, 16, wc);
		if (r > 0)
			got += r;
		usleep(100);
	}
	return got;
}

static inline struct ibv_context *open_dev(const char *name)
{
	int n = 0;
	struct ibv_device **l = ibv_get_device_list(&n);
	struct ibv_context *c = NULL;
	if (!l) {
		fprintf(stderr, "ibv_get_device_list: %s\n", strerror(errno));
		return NULL;
	}
	for (int i = 0; i < n; i++)
		if (!strcmp(ibv_get_device_name(l[i]), name))
			c = ibv_open_device(l[i]);
	ibv_free_device_list(l);
	if (!c)
		fprintf(stderr, "cannot open %s\n", name);
	return c;
}

/* A UD endpoint: own PD, send and receive CQs, a QP and a registered buffer. */
struct ud_ep {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *scq, *rcq;
	struct ibv_comp_channel *ch;
	struct ibv_qp *qp;
	uint8_t *buf;
	size_t buf_len;
	struct ibv_mr *mr;
	uint32_t qkey;
};

static inline int ud_qp_to_rts(struct ibv_qp *qp, uint32_t qkey)
{
	struct ibv_qp_attr a;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = 1;
	a.qkey = qkey;
	int r = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY);
	if (r)
		return r;
	a.qp_state = IBV_QPS_RTR;
	r = ibv_modify_qp(qp, &a, IBV_QP_STATE);
	if (r)
		return r;
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
}

static inline struct ibv_qp *ud_qp_new(struct ud_ep *e, int sq_sig_all, uint32_t max_recv_sge,
				       uint32_t max_send_sge)
{
	struct ibv_qp_init_attr ia;
	memset(&ia, 0, sizeof(ia));
	ia.send_cq = e->scq;
	ia.recv_cq = e->rcq;
	ia.qp_type = IBV_QPT_UD;
	ia.sq_sig_all = sq_sig_all;
	ia.cap.max_send_wr = 64;
	ia.cap.max_recv_wr = 64;
	ia.cap.max_send_sge = max_send_sge;
	ia.cap.max_recv_sge = max_recv_sge;
	ia.cap.max_inline_data = 64;
	struct ibv_qp *qp = ibv_create_qp(e->pd, &ia);
	if (!qp) {
		fprintf(stderr, "ibv_create_qp: %s\n", strerror(errno));
		return NULL;
	}
	if (ud_qp_to_rts(qp, e->qkey)) {
		fprintf(stderr, "UD QP to RTS failed\n");
		ibv_destroy_qp(qp);
		return NULL;
	}
	return qp;
}

static inline int ud_ep_open(struct ud_ep *e, const char *dev, uint32_t qkey, bool with_channel)
{
	memset(e, 0, sizeof(*e));
	e->qkey = qkey;
	e->ctx = open_dev(dev);
	if (!e->ctx)
		return -1;
	e->pd = ibv_alloc_pd(e->ctx);
	if (with_channel)
		e->ch = ibv_create_comp_channel(e->ctx);
	e->scq = ibv_create_cq(e->ctx, 256, NULL, NULL, 0);
	e->rcq = ibv_create_cq(e->ctx, 256, e, e->ch, 0);
	e->buf_len = 1 << 16;
	e->buf = aligned_alloc(4096, e->buf_len);
	if (!e->pd || !e->scq || !e->rcq || !e->buf || (with_channel && !e->ch))
		return -1;
	memset(e->buf, 0, e->buf_len);
	e->mr = ibv_reg_mr(e->pd, e->buf, e->buf_len, IBV_ACCESS_LOCAL_WRITE);
	if (!e->mr)
		return -1;
	e->qp = ud_qp_new(e, 0, 4, 4);
	return e->qp ? 0 : -1;
}

static inline void ud_ep_close(struct ud_ep *e)
{
	if (e->qp)
		ibv_destroy_qp(e->qp);
	if (e->mr)
		ibv_dereg_mr(e->mr);
	if (e->scq)
		ibv_destroy_cq(e->scq);
	if (e->rcq)
		ibv_destroy_cq(e->rcq);
	if (e->ch)
		ibv_destroy_comp_channel(e->ch);
	if (e->pd)
		ibv_dealloc_pd(e->pd);
	if (e->ctx)
		ibv_close_device(e->ctx);
	free(e->buf);
	memset(e, 0, sizeof(*e));
}

/* Post one receive of len bytes at buf offset off. */
static inline int post_recv1(struct ud_ep *e, struct ibv_qp *qp, uint64_t wr_id, size_t off, uint32_t len)
{
	struct ibv_sge s = {.addr = (uintptr_t)(e->buf + off), .length = len, .lkey = e->mr->lkey};
	struct ibv_recv_wr wr = {.wr_id = wr_id, .sg_list = &s, .num_sge = 1}, *bad = NULL;
	return ibv_post_recv(qp, &wr, &bad);
}

static inline struct ibv_ah *make_ah(struct ibv_pd *pd, struct ibv_context *dst_ctx, int sgid_index,
				     int dgid_index)
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

/* Post one UD send from sbuf offset off, len bytes (num_sge 1, or 0 if len 0). */
static inline int post_send1(struct ud_ep *e, struct ibv_qp *qp, struct ibv_ah *ah, uint32_t rqpn,
			     uint32_t rqkey, uint64_t wr_id, size_t off, uint32_t len, int flags)
{
	struct ibv_sge s = {.addr = (uintptr_t)(e->buf + off), .length = len, .lkey = e->mr->lkey};
	struct ibv_send_wr wr, *bad = NULL;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.sg_list = len ? &s : NULL;
	wr.num_sge = len ? 1 : 0;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = (unsigned int)flags;
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = rqpn;
	wr.wr.ud.remote_qkey = rqkey;
	return ibv_post_send(qp, &wr, &bad);
}

static inline void fill_pattern(uint8_t *p, size_t n, unsigned int seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(seed * 31u + i * 7u + (i >> 8));
}

#endif /* FUNC_COMMON_H */
