/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The device clock and completion timestamps as a ConnectX reports them,
 * black-box (the shared suite runs it on dpverbsd too, whose engine stamps
 * the completions: its TSC and ours must agree):
 *   attrs     ibv_query_device_ex: hca_core_clock (kHz) not 0, a
 *             completion_timestamp_mask
 *   raw       ibv_query_rt_values_ex(IBV_VALUES_MASK_RAW_CLOCK): comp_mask
 *             says it was filled, tv_sec 0 and the count in tv_nsec (as
 *             mlx5), runs at hca_core_clock against CLOCK_MONOTONIC
 *             (within 2 %); comp_mask 0 fills nothing; an unknown bit is
 *             EINVAL
 *   stamps    RC SENDs between dpv0 and dpv1 into extended CQs with
 *             IBV_WC_EX_WITH_COMPLETION_TIMESTAMP and _WALLCLOCK: in each
 *             CQ the timestamps never go back; every one lies between the
 *             raw clock read before its WR was posted and the one read
 *             after it was polled; the wall clock of a completion lies
 *             between CLOCK_REALTIME read before the post and after the
 *             poll (1 ms of slack for the calibration), and two wall clocks
 *             are as far apart as their timestamps say
 */
#include <errno.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dpvt_verbs.h"

#define N_MSGS 200
#define SLACK_NS 1000000 /* wall clock against CLOCK_REALTIME */

static struct dpvt_ep A, B;
static uint64_t g_khz;

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t raw_clock(struct ibv_context *c)
{
	struct ibv_values_ex v = {.comp_mask = IBV_VALUES_MASK_RAW_CLOCK};
	int r = ibv_query_rt_values_ex(c, &v);
	if (r || v.comp_mask != IBV_VALUES_MASK_RAW_CLOCK || v.raw_clock.tv_sec != 0)
		return 0;
	return (uint64_t)v.raw_clock.tv_nsec;
}

static void t_attrs(void)
{
	struct ibv_device_attr_ex ax;
	CHECK_EQ(ibv_query_device_ex(A.ctx, NULL, &ax), 0, "ibv_query_device_ex");
	g_khz = ax.hca_core_clock;
	CHECK(g_khz >= 100000, "hca_core_clock %llu kHz", (unsigned long long)g_khz);
	CHECK(ax.completion_timestamp_mask == UINT64_MAX, "completion_timestamp_mask %#llx",
	      (unsigned long long)ax.completion_timestamp_mask);
	struct ibv_device_attr_ex bx;
	CHECK(ibv_query_device_ex(B.ctx, NULL, &bx) == 0 && bx.hca_core_clock == g_khz,
	      "dpv1 has the same clock");
}

static void t_raw(void)
{
	struct ibv_values_ex v = {.comp_mask = IBV_VALUES_MASK_RAW_CLOCK};
	CHECK_EQ(ibv_query_rt_values_ex(A.ctx, &v), 0, "ibv_query_rt_values_ex");
	CHECK(v.comp_mask == IBV_VALUES_MASK_RAW_CLOCK && v.raw_clock.tv_sec == 0 && v.raw_clock.tv_nsec != 0,
	      "raw clock: comp_mask %#x, %lld s %lld", v.comp_mask, (long long)v.raw_clock.tv_sec,
	      (long long)v.raw_clock.tv_nsec);
	v.comp_mask = 0;
	v.raw_clock.tv_nsec = 12345;
	CHECK(ibv_query_rt_values_ex(A.ctx, &v) == 0 && v.comp_mask == 0 && v.raw_clock.tv_nsec == 12345,
	      "comp_mask 0: nothing filled");
	v.comp_mask = IBV_VALUES_MASK_RAW_CLOCK | IBV_VALUES_MASK_RESERVED;
	CHECK_EQ(ibv_query_rt_values_ex(A.ctx, &v), EINVAL, "an unknown comp_mask bit");
	/* the rate: hca_core_clock kHz against CLOCK_MONOTONIC, best of 3 */
	double best = 1.0;
	for (int i = 0; i < 3; i++) {
		uint64_t m0 = clock_ns(CLOCK_MONOTONIC), r0 = raw_clock(A.ctx);
		usleep(50000);
		uint64_t m1 = clock_ns(CLOCK_MONOTONIC), r1 = raw_clock(A.ctx);
		double khz = (double)(r1 - r0) * 1e6 / (double)(m1 - m0);
		double err = khz > (double)g_khz ? khz / (double)g_khz - 1 : 1 - khz / (double)g_khz;
		if (err < best)
			best = err;
	}
	CHECK(best < 0.02, "raw clock runs at hca_core_clock (off by %.2f %%)", best * 100);
	uint64_t a = raw_clock(A.ctx), b = raw_clock(B.ctx), c = raw_clock(A.ctx);
	CHECK(a && a <= b && b <= c, "dpv0 and dpv1 read one clock");
}

static struct ibv_cq *cq_ts(struct ibv_context *c)
{
	struct ibv_cq_init_attr_ex a = {
		.cqe = 512,
		.wc_flags = IBV_WC_STANDARD_FLAGS | IBV_WC_EX_WITH_COMPLETION_TIMESTAMP |
			    IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK,
	};
	struct ibv_cq_ex *x = ibv_create_cq_ex(c, &a);
	return x ? ibv_cq_ex_to_cq(x) : NULL;
}

struct stamp {
	uint64_t ts, wall;
	enum ibv_wc_status st;
};

/* One completion of an extended CQ, waiting up to 3 s. */
static int poll1(struct ibv_cq *cq, struct stamp *s)
{
	struct ibv_cq_ex *x = (struct ibv_cq_ex *)cq; /* an extended CQ begins with struct ibv_cq */
	struct ibv_poll_cq_attr pa = {0};
	uint64_t end = clock_ns(CLOCK_MONOTONIC) + 3000000000ull;
	int r;
	while ((r = ibv_start_poll(x, &pa)) == ENOENT && clock_ns(CLOCK_MONOTONIC) < end)
		;
	if (r)
		return -1;
	s->st = x->status;
	s->ts = ibv_wc_read_completion_ts(x);
	s->wall = ibv_wc_read_completion_wallclock_ns(x);
	ibv_end_poll(x);
	return 0;
}

/* The wall clocks of two completions are as far apart as their
 * timestamps (within 1 us + 0.1 %). */
static bool same_span(const struct stamp *a, const struct stamp *b)
{
	double dt = (double)(b->ts - a->ts) * 1e6 / (double)g_khz, dw = (double)(int64_t)(b->wall - a->wall);
	double e = dt > dw ? dt - dw : dw - dt;
	return e < 1000 + dt / 1000;
}

static void t_stamps(void)
{
	struct ibv_cq *sa = cq_ts(A.ctx), *rb = cq_ts(B.ctx);
	CHECK(sa && rb, "extended CQs with both timestamps: %s", strerror(errno));
	if (!sa || !rb)
		return;
	struct dpvt_qp_caps caps = {.max_send_wr = 16, .max_recv_wr = N_MSGS, .max_send_sge = 1, .max_recv_sge = 1};
	struct ibv_qp *qa = dpvt_qp_create(A.pd, IBV_QPT_RC, sa, sa, NULL, &caps);
	struct ibv_qp *qb = dpvt_qp_create(B.pd, IBV_QPT_RC, rb, rb, NULL, &caps);
	if (!qa || !qb || dpvt_connect(qa, A.ctx, NULL, qb, B.ctx, NULL, false)) {
		CHECK(0, "RC pair");
		goto out;
	}
	for (int i = 0; i < N_MSGS; i++)
		CHECK_EQ(dpvt_post_recv(qb, B.mr, (uint64_t)i, 0, 64), 0, "post receive");
	struct stamp ps = {0}, pr = {0}, s, r;
	int bad_order = 0, bad_raw = 0, bad_wall = 0, bad_span = 0, bad = 0;
	for (int i = 0; i < N_MSGS; i++) {
		uint64_t raw0 = raw_clock(A.ctx), w0 = clock_ns(CLOCK_REALTIME);
		if (dpvt_post_wr(qa, IBV_WR_SEND, (uint64_t)i, A.buf, 64, A.mr->lkey, 0, 0, 0, IBV_SEND_SIGNALED) ||
		    poll1(rb, &r) || poll1(sa, &s)) {
			bad++;
			break;
		}
		uint64_t raw1 = raw_clock(A.ctx), w1 = clock_ns(CLOCK_REALTIME);
		bad += s.st != IBV_WC_SUCCESS || r.st != IBV_WC_SUCCESS;
		bad_raw += !(raw0 <= r.ts && r.ts <= raw1 && raw0 <= s.ts && s.ts <= raw1);
		bad_wall += !(w0 - SLACK_NS <= s.wall && s.wall <= w1 + SLACK_NS && w0 - SLACK_NS <= r.wall &&
			      r.wall <= w1 + SLACK_NS);
		if (i) {
			bad_order += s.ts < ps.ts || r.ts < pr.ts;
			bad_span += !same_span(&ps, &s) || !same_span(&pr, &r);
		}
		ps = s;
		pr = r;
	}
	CHECK_EQ(bad, 0, "every SEND and its receive completed");
	CHECK_EQ(bad_order, 0, "timestamps never go back within a CQ");
	CHECK_EQ(bad_raw, 0, "timestamps between the raw clock before the post and after the poll");
	CHECK_EQ(bad_wall, 0, "wall clocks between CLOCK_REALTIME before the post and after the poll");
	CHECK_EQ(bad_span, 0, "wall clocks as far apart as the timestamps");
out:
	if (qa)
		ibv_destroy_qp(qa);
	if (qb)
		ibv_destroy_qp(qb);
	ibv_destroy_cq(sa);
	ibv_destroy_cq(rb);
}

int main(void)
{
	if (dpvt_ep_open(&A, "dpv0", 64, false) || dpvt_ep_open(&B, "dpv1", 64, false) ||
	    dpvt_ep_buf(&A, NULL, 1 << 16, DPVT_ACCESS_ALL) || dpvt_ep_buf(&B, NULL, 1 << 16, DPVT_ACCESS_ALL))
		return 1;
	t_attrs();
	t_raw();
	t_stamps();
	dpvt_ep_close(&A);
	dpvt_ep_close(&B);
	return dpvt_finish();
}
