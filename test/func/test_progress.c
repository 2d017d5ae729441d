/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Progress without the caller. With "progress": "lcore" (func-lcore.json:
 * both ports' engine contexts on EAL lcores pinned to CPU 1) receive
 * completions appear while the test thread only sleeps; with "inline" (the
 * default) the assist thread delivers a message while the caller sleeps
 * 10 ms without calling into verbs, and one ibv_poll_cq then returns it.
 * White-box: the CQ ring is inspected before the first poll, because
 * ibv_poll_cq itself drives the engine in inline mode.
 */
#include "dpvt_verbs.h"

#include <poll.h>

/* WHITE-BOX: internal headers. Their uses stay in this file, each marked
 * WHITE-BOX; test/lib (dpvt_*.h) uses only the public verbs API. */
#include "dpv_verbs.h"
#include "dpv_port.h"
#include "dpv_engine.h"

#define QKEY 0x22u

static struct dpvt_ep E0, E1;

/* WHITE-BOX: completions in the CQ ring, read without driving progress. */
static uint32_t cq_pending(struct ibv_cq *cq)
{
	/* completions the engine wrote that nobody polled yet (CQ ring indices) */
	struct dpv_cq *c = to_dcq(cq);
	return atomic_load(&c->ring->pi) - atomic_load(&c->ring->ci);
}

/* Post n receives and n sends, sleep, check the completions are already in
 * the CQ, then read them with one ibv_poll_cq. */
static void burst_while_sleeping(struct ibv_ah *ah, int n, unsigned int sleep, const char *what)
{
	struct ibv_wc wc[64];
	for (int i = 0; i < n; i++)
		dpvt_post_recv(E1.qp, E1.mr, 0x100 + (uint64_t)i, 0x8000 + (size_t)i * 1100, 1100);
	for (int i = 0; i < n; i++) {
		dpvt_fill_pattern(E0.buf + (size_t)i * 64, 64, (unsigned int)i);
		dpvt_post_ud_send(E0.qp, ah, E1.qp->qp_num, QKEY, 0x200 + (uint64_t)i, E0.mr, (size_t)i * 64, 64,
				  i == n - 1 ? IBV_SEND_SIGNALED : 0);
	}
	uint64_t t0 = dpvt_now_ms();
	uint32_t pend = 0;
	/* sleep in slices until everything arrived or the budget is spent */
	do {
		dpvt_sleep_ms(sleep);
		pend = cq_pending(E1.rcq);
	} while (pend < (uint32_t)n && dpvt_now_ms() - t0 < 3000);
	CHECK_EQ(pend, n, "completions in the CQ before any poll");
	printf("%s: %d messages arrived within %llu ms without the caller\n", what, n,
	       (unsigned long long)(dpvt_now_ms() - t0));
	int got = ibv_poll_cq(E1.rcq, 64, wc);
	CHECK_EQ(got, n, "one ibv_poll_cq returns them all");
	for (int i = 0; i < got; i++) {
		CHECK(wc[i].status == IBV_WC_SUCCESS && wc[i].wr_id == 0x100 + (uint64_t)i && wc[i].byte_len == 104,
		      "%s: completion %d", what, i);
		uint8_t want[64];
		dpvt_fill_pattern(want, 64, (unsigned int)i);
		CHECK(!memcmp(E1.buf + 0x8000 + (size_t)i * 1100 + 40, want, 64), "%s: payload %d", what, i);
	}
	got = dpvt_poll_n(E0.scq, wc, 1, 1000);
	CHECK(got == 1 && wc[0].wr_id == 0x200 + (uint64_t)n - 1, "%s: the signaled send completed", what);
}

int main(void)
{
	if (dpvt_ud_ep_open(&E0, "dpv0", QKEY, false) || dpvt_ud_ep_open(&E1, "dpv1", QKEY, true)) {
		printf("0 passed, 1 failed\n");
		return 1;
	}
	/* WHITE-BOX: the configuration, engine lcores and progress mode */
	struct dpv_runtime *rt = dpv_runtime_peek();
	bool lcore = rt->conf.progress == DPV_PROGRESS_LCORE;
	struct dpv_port *p0 = dpv_port_by_name("dpv0"), *p1 = dpv_port_by_name("dpv1");
	printf("config %s: progress %s, software_loopback %d, engine lcores dpv0 %d dpv1 %d\n",
	       rt->conf.source, lcore ? "lcore" : "inline", rt->conf.sw_loopback, p0->qctx[0].lcore,
	       p1->qctx[0].lcore);
	CHECK_EQ(dpv_engine_lcore_mode(), lcore, "engine mode matches the configuration");
	if (lcore) {
		/* one service lcore per CPU named: contexts on the same CPU share it */
		bool same_cpu = p0->conf->lcores[0] == p1->conf->lcores[0];
		CHECK(p0->qctx[0].lcore >= 1 && p1->qctx[0].lcore >= 1 &&
		      (p0->qctx[0].lcore == p1->qctx[0].lcore) == same_cpu,
		      "one service lcore per CPU (contexts %d, %d; same CPU %d)", p0->qctx[0].lcore,
		      p1->qctx[0].lcore, same_cpu);
		CHECK_EQ(dpv_progress_all(), 0, "the caller does not drive progress in lcore mode");
	} else {
		CHECK(p0->qctx[0].lcore == -1 && p1->qctx[0].lcore == -1, "no service lcores in inline mode");
	}

	struct ibv_ah *ah = dpvt_ah_new(E0.pd, E1.ctx, 1, 1);
	struct ibv_ah *ah6 = dpvt_ah_new(E0.pd, E1.ctx, 0, 0);
	CHECK(ah && ah6, "AHs");
	if (!ah || !ah6)
		return dpvt_finish();

	if (lcore) {
		burst_while_sleeping(ah, 16, 5, "lcore IPv4");
		burst_while_sleeping(ah6, 16, 5, "lcore IPv6");
	} else {
		/* the brief's exact scenario: one message, 10 ms of sleep, one poll */
		for (int k = 0; k < 5; k++)
			burst_while_sleeping(ah, 1, 10, "inline assist IPv4");
		burst_while_sleeping(ah6, 8, 10, "inline assist IPv6");
	}

	/* completion channel: blocking ibv_get_cq_event, progress by the engine */
	CHECK_EQ(ibv_req_notify_cq(E1.rcq, 0), 0, "req_notify_cq");
	dpvt_post_recv(E1.qp, E1.mr, 0x300, 0x8000, 1100);
	dpvt_post_ud_send(E0.qp, ah, E1.qp->qp_num, QKEY, 0x301, E0.mr, 0, 10, 0);
	struct pollfd pfd = {.fd = E1.ch->fd, .events = POLLIN};
	CHECK_EQ(poll(&pfd, 1, 3000), 1, "channel readable without polling the CQ");
	struct ibv_cq *ecq;
	void *ectx;
	CHECK_EQ(ibv_get_cq_event(E1.ch, &ecq, &ectx), 0, "get_cq_event");
	ibv_ack_cq_events(E1.rcq, 1);
	struct ibv_wc wc;
	CHECK(ibv_poll_cq(E1.rcq, 1, &wc) == 1 && wc.wr_id == 0x300, "completion behind the event");

	ibv_destroy_ah(ah);
	ibv_destroy_ah(ah6);
	dpvt_ep_close(&E0);
	dpvt_ep_close(&E1);
	return dpvt_finish();
}
