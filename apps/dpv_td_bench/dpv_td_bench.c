/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpv_td_bench: the cost of one RC SEND (post + poll) with and without a
 * thread domain, in one process and one thread.
 *
 * Two RC QP pairs dpv0 -> dpv1 (built-in default configuration, software
 * loopback) exist side by side:
 *   plain  ibv_alloc_pd + ibv_create_cq + ibv_create_qp: QP and CQ spinlocks,
 *          atomic counters;
 *   td     a parent domain with a thread domain on each device, CQs from
 *          ibv_create_cq_ex with IBV_CQ_INIT_ATTR_MASK_PD and QPs through
 *          the parent domain: "lockless" (no QP/CQ locks, no atomics on the
 *          QP/CQ path; see ibv_alloc_td(3)).
 *
 * One operation: post one signalled inline SEND (--size bytes, default 64)
 * on the dpv0 QP, poll its send CQ until the completion arrives (polling the
 * dpv1 receive CQ while waiting), then drain the dpv1 receive CQ and repost
 * receives in batches of --batch. Both sides are driven by the calling
 * thread (which owns both thread domains). Each operation is timed (TSC);
 * the variants alternate in --rounds rounds so that drift affects both.
 * Reported per variant: mean, p50, p99, min, max ns/op, ops/s, and, if the
 * kernel lets a process count its own instructions (perf_event_open), user
 * instructions per op; then the ratios.
 *
 * Usage: dpv_td_bench [--iters N] [--warmup N] [--rounds R] [--batch B]
 *                     [--size S] [--timeout SEC] [--variant plain|td|both]
 *                     [--json]
 * The run is bounded by --timeout (default 60 s): on expiry the loops stop
 * and the partial result is reported with "truncated": true.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>

#include <infiniband/verbs.h>
#include <jansson.h>

#include "perf_common.h"

#define RQ_DEPTH 512
#define BUF_SZ 4096

struct opts {
	uint64_t iters, warmup;
	unsigned int rounds, batch, size, timeout_s;
	bool json, run_plain, run_td;
};

struct pair {
	const char *name;
	bool td_mode;
	struct ibv_pd *pd0, *pd1;       /* base PDs */
	struct ibv_td *td0, *td1;
	struct ibv_pd *par0, *par1;     /* parent domains (td mode) */
	struct ibv_cq *scq0, *rcq0, *scq1, *rcq1;
	struct ibv_qp *qp0, *qp1;
	uint8_t *buf0, *buf1;
	struct ibv_mr *mr0, *mr1;
	uint32_t rx_pending;            /* receive completions not reposted yet */
	uint64_t rx_total, tx_total;
	/* results */
	uint64_t *lat;                  /* ticks per op */
	uint64_t n, ticks;
	uint64_t instr;
	bool instr_ok;
	uint64_t errors;
};

static struct ibv_context *ctx0, *ctx1;
static int g_instr_fd = -1;

static struct ibv_context *open_dev(const char *name)
{
	int n = 0;
	struct ibv_device **l = ibv_get_device_list(&n);
	struct ibv_context *c = NULL;
	for (int i = 0; l && i < n; i++)
		if (!strcmp(ibv_get_device_name(l[i]), name))
			c = ibv_open_device(l[i]);
	if (l)
		ibv_free_device_list(l);
	if (!c)
		fprintf(stderr, "dpv_td_bench: cannot open %s\n", name);
	return c;
}

static struct ibv_cq *make_cq(struct ibv_context *ctx, struct ibv_pd *par, int cqe)
{
	if (!par)
		return ibv_create_cq(ctx, cqe, NULL, NULL, 0);
	struct ibv_cq_init_attr_ex a;
	memset(&a, 0, sizeof(a));
	a.cqe = (uint32_t)cqe;
	a.wc_flags = IBV_WC_STANDARD_FLAGS;
	a.comp_mask = IBV_CQ_INIT_ATTR_MASK_PD;
	a.parent_domain = par;
	struct ibv_cq_ex *x = ibv_create_cq_ex(ctx, &a);
	return x ? ibv_cq_ex_to_cq(x) : NULL;
}

static struct ibv_qp *make_qp(struct ibv_pd *pd, struct ibv_cq *scq, struct ibv_cq *rcq)
{
	struct ibv_qp_init_attr a;
	memset(&a, 0, sizeof(a));
	a.qp_type = IBV_QPT_RC;
	a.send_cq = scq;
	a.recv_cq = rcq;
	a.cap.max_send_wr = 64;
	a.cap.max_recv_wr = RQ_DEPTH;
	a.cap.max_send_sge = 1;
	a.cap.max_recv_sge = 1;
	a.cap.max_inline_data = 256;
	return ibv_create_qp(pd, &a);
}

static int to_rts(struct ibv_qp *qp, struct ibv_context *peer, uint32_t dqpn)
{
	struct ibv_qp_attr a;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = dqpn;
	a.rq_psn = 0;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 1;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.sgid_index = 1;
	a.ah_attr.grh.hop_limit = 64;
	if (ibv_query_gid(peer, 1, 1, &a.ah_attr.grh.dgid))
		return -1;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
					  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
					     IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC);
}

static int post_recvs(struct pair *p, unsigned int n)
{
	struct ibv_sge s = {.addr = (uintptr_t)p->buf1, .length = BUF_SZ, .lkey = p->mr1->lkey};
	struct ibv_recv_wr wr[64], *bad = NULL;
	while (n) {
		unsigned int k = n > 64 ? 64 : n;
		for (unsigned int i = 0; i < k; i++) {
			wr[i].wr_id = i;
			wr[i].sg_list = &s;
			wr[i].num_sge = 1;
			wr[i].next = i + 1 < k ? &wr[i + 1] : NULL;
		}
		if (ibv_post_recv(p->qp1, wr, &bad))
			return -1;
		n -= k;
	}
	return 0;
}

static int pair_open(struct pair *p, bool td_mode)
{
	memset(p, 0, sizeof(*p));
	p->name = td_mode ? "td" : "plain";
	p->td_mode = td_mode;
	p->pd0 = ibv_alloc_pd(ctx0);
	p->pd1 = ibv_alloc_pd(ctx1);
	if (!p->pd0 || !p->pd1)
		return -1;
	struct ibv_pd *use0 = p->pd0, *use1 = p->pd1;
	if (td_mode) {
		struct ibv_td_init_attr ta = {0};
		p->td0 = ibv_alloc_td(ctx0, &ta);
		p->td1 = ibv_alloc_td(ctx1, &ta);
		if (!p->td0 || !p->td1)
			return -1;
		struct ibv_parent_domain_init_attr pa;
		memset(&pa, 0, sizeof(pa));
		pa.pd = p->pd0;
		pa.td = p->td0;
		p->par0 = ibv_alloc_parent_domain(ctx0, &pa);
		pa.pd = p->pd1;
		pa.td = p->td1;
		p->par1 = ibv_alloc_parent_domain(ctx1, &pa);
		if (!p->par0 || !p->par1)
			return -1;
		use0 = p->par0;
		use1 = p->par1;
	}
	p->scq0 = make_cq(ctx0, p->par0, 128);
	p->rcq0 = make_cq(ctx0, p->par0, 128);
	p->scq1 = make_cq(ctx1, p->par1, 128);
	p->rcq1 = make_cq(ctx1, p->par1, RQ_DEPTH * 2);
	if (!p->scq0 || !p->rcq0 || !p->scq1 || !p->rcq1)
		return -1;
	p->qp0 = make_qp(use0, p->scq0, p->rcq0);
	p->qp1 = make_qp(use1, p->scq1, p->rcq1);
	if (!p->qp0 || !p->qp1)
		return -1;
	p->buf0 = aligned_alloc(4096, BUF_SZ);
	p->buf1 = aligned_alloc(4096, BUF_SZ);
	if (!p->buf0 || !p->buf1)
		return -1;
	memset(p->buf0, 0x5a, BUF_SZ);
	memset(p->buf1, 0, BUF_SZ);
	p->mr0 = ibv_reg_mr(p->pd0, p->buf0, BUF_SZ, IBV_ACCESS_LOCAL_WRITE);
	p->mr1 = ibv_reg_mr(p->pd1, p->buf1, BUF_SZ, IBV_ACCESS_LOCAL_WRITE);
	if (!p->mr0 || !p->mr1)
		return -1;
	if (to_rts(p->qp0, ctx1, p->qp1->qp_num) || to_rts(p->qp1, ctx0, p->qp0->qp_num))
		return -1;
	return post_recvs(p, RQ_DEPTH);
}

static void pair_close(struct pair *p)
{
	if (p->qp0)
		ibv_destroy_qp(p->qp0);
	if (p->qp1)
		ibv_destroy_qp(p->qp1);
	struct ibv_cq *cqs[] = {p->scq0, p->rcq0, p->scq1, p->rcq1};
	for (int i = 0; i < 4; i++)
		if (cqs[i])
			ibv_destroy_cq(cqs[i]);
	if (p->mr0)
		ibv_dereg_mr(p->mr0);
	if (p->mr1)
		ibv_dereg_mr(p->mr1);
	if (p->par0)
		ibv_dealloc_pd(p->par0);
	if (p->par1)
		ibv_dealloc_pd(p->par1);
	if (p->td0)
		ibv_dealloc_td(p->td0);
	if (p->td1)
		ibv_dealloc_td(p->td1);
	if (p->pd0)
		ibv_dealloc_pd(p->pd0);
	if (p->pd1)
		ibv_dealloc_pd(p->pd1);
	free(p->buf0);
	free(p->buf1);
	free(p->lat);
}

/* Drain the receive CQ of dpv1; repost in batches. */
static inline int drain_rx(struct pair *p, unsigned int batch)
{
	struct ibv_wc wc[16];
	int n = ibv_poll_cq(p->rcq1, 16, wc);
	if (n < 0)
		return -1;
	for (int i = 0; i < n; i++)
		if (wc[i].status != IBV_WC_SUCCESS) {
			fprintf(stderr, "dpv_td_bench: %s: receive completion %s\n", p->name,
				ibv_wc_status_str(wc[i].status));
			p->errors++;
		}
	p->rx_pending += (uint32_t)n;
	p->rx_total += (uint64_t)n;
	if (p->rx_pending >= batch) {
		if (post_recvs(p, p->rx_pending))
			return -1;
		p->rx_pending = 0;
	}
	return 0;
}

/* One operation; returns 0, or -1 on an error or a stuck completion. */
static inline int one_op(struct pair *p, const struct opts *o, uint64_t seq)
{
	struct ibv_sge s = {.addr = (uintptr_t)p->buf0, .length = o->size, .lkey = p->mr0->lkey};
	struct ibv_send_wr wr, *bad = NULL;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = seq;
	wr.sg_list = &s;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;
	memcpy(p->buf0, &seq, sizeof(seq));
	if (ibv_post_send(p->qp0, &wr, &bad)) {
		fprintf(stderr, "dpv_td_bench: %s: post_send failed\n", p->name);
		return -1;
	}
	struct ibv_wc wc;
	uint64_t spins = 0;
	for (;;) {
		int n = ibv_poll_cq(p->scq0, 1, &wc);
		if (n > 0)
			break;
		if (n < 0 || drain_rx(p, o->batch))
			return -1;
		if (++spins == 50000000ull) {
			fprintf(stderr, "dpv_td_bench: %s: no send completion\n", p->name);
			return -1;
		}
	}
	if (wc.status != IBV_WC_SUCCESS || wc.wr_id != seq) {
		fprintf(stderr, "dpv_td_bench: %s: send completion %s wr_id %" PRIu64 "\n", p->name,
			ibv_wc_status_str(wc.status), (uint64_t)wc.wr_id);
		p->errors++;
		return -1;
	}
	p->tx_total++;
	return drain_rx(p, o->batch);
}

static int instr_open(void)
{
	struct perf_event_attr a;
	memset(&a, 0, sizeof(a));
	a.type = PERF_TYPE_HARDWARE;
	a.size = sizeof(a);
	a.config = PERF_COUNT_HW_INSTRUCTIONS;
	a.disabled = 1;
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	return (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, 0);
}

static uint64_t instr_read(void)
{
	uint64_t v = 0;
	if (g_instr_fd >= 0 && read(g_instr_fd, &v, sizeof(v)) != sizeof(v))
		v = 0;
	return v;
}

/* Run n timed operations of p; false if stopped (error or deadline). */
static bool run_chunk(struct pair *p, const struct opts *o, uint64_t n, uint64_t deadline_ns, bool *truncated)
{
	uint64_t i0 = 0;
	if (g_instr_fd >= 0) {
		ioctl(g_instr_fd, PERF_EVENT_IOC_RESET, 0);
		ioctl(g_instr_fd, PERF_EVENT_IOC_ENABLE, 0);
		i0 = instr_read();
	}
	bool ok = true;
	uint64_t start = pt_now();
	for (uint64_t i = 0; i < n; i++) {
		uint64_t t0 = pt_now();
		if (one_op(p, o, p->n + 1)) {
			ok = false;
			break;
		}
		uint64_t t1 = pt_now();
		p->lat[p->n++] = t1 - t0;
		if ((i & 4095) == 4095 && pt_mono_ns() > deadline_ns) {
			*truncated = true;
			ok = false;
			break;
		}
	}
	p->ticks += pt_now() - start;
	if (g_instr_fd >= 0) {
		ioctl(g_instr_fd, PERF_EVENT_IOC_DISABLE, 0);
		uint64_t d = instr_read() - i0;
		p->instr += d;
		p->instr_ok = d > 0;
	}
	return ok;
}

struct result {
	double mean, p50, p99, p999, min, max, ops_s, instr_op;
	uint64_t over_100us, over_1ms;
};

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static struct result summarize(struct pair *p)
{
	struct result r;
	memset(&r, 0, sizeof(r));
	if (!p->n)
		return r;
	qsort(p->lat, p->n, sizeof(uint64_t), cmp_u64);
	double sum = 0;
	for (uint64_t i = 0; i < p->n; i++)
		sum += (double)p->lat[i];
	r.mean = pt_ticks_ns((uint64_t)(sum / (double)p->n));
	r.p50 = pt_ticks_ns(p->lat[(p->n - 1) / 2]);
	r.p99 = pt_ticks_ns(p->lat[(uint64_t)((double)(p->n - 1) * 0.99)]);
	r.p999 = pt_ticks_ns(p->lat[(uint64_t)((double)(p->n - 1) * 0.999)]);
	for (uint64_t i = 0; i < p->n; i++) {
		double ns = pt_ticks_ns(p->lat[i]);
		r.over_100us += ns > 1e5;
		r.over_1ms += ns > 1e6;
	}
	r.min = pt_ticks_ns(p->lat[0]);
	r.max = pt_ticks_ns(p->lat[p->n - 1]);
	double secs = pt_ticks_ns(p->ticks) / 1e9;
	r.ops_s = secs > 0 ? (double)p->n / secs : 0;
	r.instr_op = p->instr_ok ? (double)p->instr / (double)p->n : -1;
	return r;
}

static void usage(void)
{
	fprintf(stderr, "usage: dpv_td_bench [--iters N] [--warmup N] [--rounds R] [--batch B] [--size S]\n"
			"                    [--timeout SEC] [--variant plain|td|both] [--json]\n");
}

/* The variants run and their outcome, handed from one stage of main to the next. */
struct bench {
	struct pair pp[2];
	int np;
	struct pair *plain, *td;        /* in pp[], NULL when not run */
	struct result res[2];           /* res[i] summarizes pp[i] */
	struct result *rp, *rt;         /* plain's and td's, NULL when not run */
	bool truncated, ok;
	const char *instr_note;         /* why instructions are not counted, or NULL */
};

/* Parse the options into o: -1 to go on, else the exit status. */
static int parse_opts(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		{"iters", required_argument, NULL, 'n'}, {"warmup", required_argument, NULL, 'w'},
		{"rounds", required_argument, NULL, 'r'}, {"batch", required_argument, NULL, 'b'},
		{"size", required_argument, NULL, 's'}, {"timeout", required_argument, NULL, 't'},
		{"variant", required_argument, NULL, 'v'}, {"json", no_argument, NULL, 'j'},
		{"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0},
	};
	int c;
	while ((c = getopt_long(argc, argv, "n:w:r:b:s:t:v:jh", lo, NULL)) != -1) {
		switch (c) {
		case 'n': o->iters = strtoull(optarg, NULL, 0); break;
		case 'w': o->warmup = strtoull(optarg, NULL, 0); break;
		case 'r': o->rounds = (unsigned int)strtoul(optarg, NULL, 0); break;
		case 'b': o->batch = (unsigned int)strtoul(optarg, NULL, 0); break;
		case 's': o->size = (unsigned int)strtoul(optarg, NULL, 0); break;
		case 't': o->timeout_s = (unsigned int)strtoul(optarg, NULL, 0); break;
		case 'v':
			o->run_plain = !strcmp(optarg, "plain") || !strcmp(optarg, "both");
			o->run_td = !strcmp(optarg, "td") || !strcmp(optarg, "both");
			if (!o->run_plain && !o->run_td) {
				usage();
				return 2;
			}
			break;
		case 'j': o->json = true; break;
		default: usage(); return c == 'h' ? 0 : 2;
		}
	}
	/* receives are reposted only once --batch of them completed: keep half the queue posted */
	if (!o->iters || !o->rounds || !o->batch || o->batch > RQ_DEPTH / 2 || o->size < 8 || o->size > 256) {
		fprintf(stderr, "dpv_td_bench: need iters > 0, rounds > 0, 0 < batch <= %d, 8 <= size <= 256\n",
			RQ_DEPTH / 2);
		return 2;
	}
	return -1;
}

/* Open both devices, the pairs asked for, their latency records and the instruction counter. */
static int setup(const struct opts *o, struct bench *b)
{
	pt_clock_init(-1);
	ctx0 = open_dev("dpv0");
	ctx1 = open_dev("dpv1");
	if (!ctx0 || !ctx1)
		return -1;
	if (o->run_plain) {
		b->plain = &b->pp[b->np++];
		if (pair_open(b->plain, false)) {
			fprintf(stderr, "dpv_td_bench: plain set-up failed: %s\n", strerror(errno));
			return -1;
		}
	}
	if (o->run_td) {
		b->td = &b->pp[b->np++];
		if (pair_open(b->td, true)) {
			fprintf(stderr, "dpv_td_bench: td set-up failed: %s\n", strerror(errno));
			return -1;
		}
	}
	for (int i = 0; i < b->np; i++) {
		b->pp[i].lat = malloc(sizeof(uint64_t) * (o->iters + o->warmup));
		if (!b->pp[i].lat)
			return -1;
	}
	g_instr_fd = instr_open();
	b->instr_note = g_instr_fd >= 0 ? NULL : strerror(errno);
	return 0;
}

/* The warm-up, then the timed rounds, all under one deadline; then the summaries. */
static void run(const struct opts *o, struct bench *b)
{
	uint64_t deadline = pt_mono_ns() + (uint64_t)o->timeout_s * 1000000000ull;
	b->truncated = false;
	b->ok = true;
	/* warm-up: not kept */
	for (int i = 0; i < b->np && b->ok; i++) {
		b->ok = run_chunk(&b->pp[i], o, o->warmup, deadline, &b->truncated);
		b->pp[i].n = b->pp[i].ticks = b->pp[i].instr = 0;
	}
	/* rounds: the variants alternate, so that drift affects both */
	for (unsigned int r = 0; r < o->rounds && b->ok; r++) {
		uint64_t chunk = o->iters / o->rounds + (r < o->iters % o->rounds ? 1 : 0);
		for (int i = 0; i < b->np && b->ok; i++)
			b->ok = run_chunk(&b->pp[i], o, chunk, deadline, &b->truncated);
	}
	pt_clock_finish();
	if (!b->ok && !b->truncated) {
		fprintf(stderr, "dpv_td_bench: stopped on an error\n");
	}
	for (int i = 0; i < b->np; i++)
		b->res[i] = summarize(&b->pp[i]);
	b->rp = b->plain ? &b->res[b->plain - b->pp] : NULL;
	b->rt = b->td ? &b->res[b->td - b->pp] : NULL;
}

/* --json: one object, the variants by name, the ratios when both ran. */
static void print_json(const struct opts *o, const struct bench *b)
{
	const struct result *rp = b->rp, *rt = b->rt;
	json_t *root = json_object();
	json_object_set_new(root, "test", json_string("rc_send_post_poll"));
	json_object_set_new(root, "size", json_integer(o->size));
	json_object_set_new(root, "iters", json_integer((json_int_t)o->iters));
	json_object_set_new(root, "warmup", json_integer((json_int_t)o->warmup));
	json_object_set_new(root, "rounds", json_integer(o->rounds));
	json_object_set_new(root, "recv_batch", json_integer(o->batch));
	json_object_set_new(root, "clock", json_string(pt_clock_name()));
	json_object_set_new(root, "truncated", json_boolean(b->truncated));
	json_object_set_new(root, "ok", json_boolean(b->ok || b->truncated));
	json_t *vs = json_object();
	for (int i = 0; i < b->np; i++) {
		const struct pair *p = &b->pp[i];
		const struct result *r = &b->res[i];
		json_t *v = json_pack("{s:I, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:I, s:I, s:I}", "ops",
				      (json_int_t)p->n, "mean_ns", r->mean, "p50_ns", r->p50, "p99_ns",
				      r->p99, "p999_ns", r->p999, "min_ns", r->min, "max_ns", r->max,
				      "ops_per_s", r->ops_s, "ops_over_100us", (json_int_t)r->over_100us,
				      "ops_over_1ms", (json_int_t)r->over_1ms, "errors", (json_int_t)p->errors);
		if (r->instr_op >= 0)
			json_object_set_new(v, "instructions_per_op", json_real(r->instr_op));
		else
			json_object_set_new(v, "instructions_per_op", json_null());
		json_object_set_new(vs, p->name, v);
	}
	json_object_set_new(root, "variants", vs);
	if (rp && rt && rt->mean > 0 && rp->ops_s > 0) {
		json_t *ratio = json_pack("{s:f, s:f, s:f, s:f}", "mean_plain_over_td", rp->mean / rt->mean,
					  "p50_plain_over_td", rt->p50 > 0 ? rp->p50 / rt->p50 : 0.0,
					  "p99_plain_over_td", rt->p99 > 0 ? rp->p99 / rt->p99 : 0.0,
					  "ops_td_over_plain", rt->ops_s / rp->ops_s);
		if (rp->instr_op > 0 && rt->instr_op > 0)
			json_object_set_new(ratio, "instr_plain_over_td", json_real(rp->instr_op / rt->instr_op));
		json_object_set_new(root, "ratio", ratio);
	}
	if (b->instr_note)
		json_object_set_new(root, "instructions_note", json_string(b->instr_note));
	char *s = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	if (s)
		printf("%s\n", s);
	free(s);
	json_decref(root);
}

/* The table: one line per variant, then the ratios when both ran. */
static void print_text(const struct opts *o, const struct bench *b)
{
	const struct result *rp = b->rp, *rt = b->rt;
	printf("dpv_td_bench: RC SEND %u B inline, post + poll per op, dpv0 -> dpv1, one thread, clock %s\n",
	       o->size, pt_clock_name());
	printf("%-6s %9s %9s %8s %8s %9s %11s %8s %7s %10s\n", "", "ops", "mean ns", "p50 ns", "p99 ns",
	       "p99.9 ns", "max ns", ">1ms", "ops/s", "instr/op");
	for (int i = 0; i < b->np; i++) {
		const struct result *r = &b->res[i];
		char ins[32];
		if (r->instr_op >= 0)
			snprintf(ins, sizeof(ins), "%.0f", r->instr_op);
		else
			snprintf(ins, sizeof(ins), "n/a");
		printf("%-6s %9" PRIu64 " %9.1f %8.1f %8.1f %9.1f %11.0f %8" PRIu64 " %7.0f %10s\n", b->pp[i].name,
		       b->pp[i].n, r->mean, r->p50, r->p99, r->p999, r->max, r->over_1ms, r->ops_s, ins);
	}
	if (rp && rt && rt->mean > 0 && rp->ops_s > 0) {
		printf("ratio plain/td: mean %.3f, p50 %.3f, p99 %.3f; ops/s td/plain %.3f", rp->mean / rt->mean,
		       rt->p50 > 0 ? rp->p50 / rt->p50 : 0.0, rt->p99 > 0 ? rp->p99 / rt->p99 : 0.0,
		       rt->ops_s / rp->ops_s);
		if (rp->instr_op > 0 && rt->instr_op > 0)
			printf("; instructions plain/td %.3f", rp->instr_op / rt->instr_op);
		printf("\n");
	}
	if (b->instr_note)
		printf("(instructions: perf_event_open: %s)\n", b->instr_note);
	if (b->truncated)
		printf("(truncated by --timeout %u s)\n", o->timeout_s);
}

/* Close the counter, the pairs and the devices; returns the completion errors seen. */
static uint64_t teardown(struct bench *b)
{
	if (g_instr_fd >= 0)
		close(g_instr_fd);
	for (int i = 0; i < b->np; i++)
		pair_close(&b->pp[i]);
	ibv_close_device(ctx0);
	ibv_close_device(ctx1);
	uint64_t errs = 0;
	for (int i = 0; i < b->np; i++)
		errs += b->pp[i].errors;
	return errs;
}

int main(int argc, char **argv)
{
	struct opts o = {.iters = 1000000, .warmup = 20000, .rounds = 4, .batch = 32, .size = 64,
			 .timeout_s = 60, .run_plain = true, .run_td = true};
	struct bench b;
	int rc = parse_opts(argc, argv, &o);
	if (rc >= 0)
		return rc;
	memset(&b, 0, sizeof(b));
	if (setup(&o, &b))
		return 1;
	run(&o, &b);
	if (o.json)
		print_json(&o, &b);
	else
		print_text(&o, &b);
	uint64_t errs = teardown(&b);
	return (b.ok || b.truncated) && !errs ? 0 : 1;
}
