/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A thread domain's QP gets its messages in the order they arrived, also
 * when another thread received some of them.
 *
 * Black-box, one process, dpv0 -> dpv1 (software loopback), inline progress.
 * The receiving UD QP and its CQs are in a parent domain with a thread
 * domain owned by the main thread. Each round:
 *   1. the main thread sends messages 0..9 (they wait in dpv1's context);
 *   2. a second thread polls a CQ of its own on dpv1, which drives dpv1's
 *      context on that thread: it receives 0..9, and since only the owner
 *      may touch the TD's QP, hands them to the owner;
 *   3. the main thread sends 10..19 and polls the TD's CQ until it has 20
 *      completions.
 * The owner must process what was handed to it (0..9) before the newer
 * messages it receives itself (10..19): a NIC never reorders within a QP.
 * Asserts the payloads arrive as 0..19 in every one of 50 rounds.
 * Then 20 rounds with 50 messages handed over and 10 of its own (0..59),
 * the owner first driving the engine through a plain CQ on dpv1: more than
 * one burst (DPV_BURST 32) waits in the TD's ring, and the owner must
 * process all of them before its own (it took only the first burst:
 * 0..31, 50, 32..49, 51.. -- the reordering dpv_perf --td saw under load).
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <infiniband/verbs.h>

#include "dpvt_ca.h"
#include "dpvt_check.h"
#include "dpvt_verbs.h"

#define ROUNDS 50
#define HALF 10
#define BIG_ROUNDS 20
#define BIG_HANDED 50 /* > DPV_BURST; + HALF fits the RQ (64) */

struct rx_side {
	struct dpvt_ep e;     /* dpv1: PD, buffer, plain CQs (the second thread polls scq) */
	struct ibv_td *td;
	struct ibv_pd *pdom;
	struct ibv_cq *cq;    /* the TD's CQ (send and receive) */
	struct ibv_qp *qp;
};

static void *other_thread(void *arg)
{
	struct ibv_cq *cq = arg;
	struct ibv_wc wc;
	/* nothing completes on this CQ: the call only drives dpv1's context */
	for (int i = 0; i < 4; i++)
		ibv_poll_cq(cq, 1, &wc);
	return NULL;
}

static void send_range(struct dpvt_ep *a, struct ibv_ah *ah, const struct rx_side *r, uint32_t from, uint32_t to)
{
	for (uint32_t i = from; i < to; i++) {
		memcpy(a->buf, &i, sizeof(i));
		CHECK_EQ(dpvt_post_ud_send(a->qp, ah, r->qp->qp_num, 0x1234, i, a->mr, 0, 16, IBV_SEND_SIGNALED), 0, "post UD send");
		struct ibv_wc wc;
		CHECK_EQ(dpvt_poll_n(a->scq, &wc, 1, 2000), 1, "send completion");
	}
}

static bool one_round(struct dpvt_ep *a, struct ibv_ah *ah, struct rx_side *r, uint32_t handed)
{
	uint32_t total = handed + HALF;
	pthread_t t;
	for (uint32_t i = 0; i < total; i++)
		CHECK_EQ(dpvt_post_recv(r->qp, r->e.mr, i, (size_t)i * 128, 128), 0, "post receive");
	send_range(a, ah, r, 0, handed);
	CHECK_EQ(pthread_create(&t, NULL, other_thread, r->e.scq), 0, "second thread");
	pthread_join(t, NULL);
	send_range(a, ah, r, handed, total);
	if (handed > HALF) {
		/* the owner drives the engine through a CQ outside the TD (as a
		 * thread polling several CQs does): it receives its own messages
		 * with all the handed ones still in the TD's ring */
		struct ibv_wc none;
		CHECK_EQ(ibv_poll_cq(r->e.rcq, 1, &none), 0, "nothing on the plain CQ");
	}
	bool in_order = true;
	for (uint32_t want = 0; want < total; want++) {
		struct ibv_wc wc;
		if (dpvt_poll_n(r->cq, &wc, 1, 2000) != 1 || wc.status != IBV_WC_SUCCESS) {
			CHECK(0, "receive completion %u", want);
			return false;
		}
		uint32_t got;
		memcpy(&got, r->e.buf + wc.wr_id * 128 + 40, sizeof(got)); /* after the GRH */
		if (got != want)
			in_order = false;
	}
	return in_order;
}

int main(void)
{
	struct dpvt_ep a;
	struct rx_side r;
	memset(&r, 0, sizeof(r));
	if (!CHECK(dpvt_ud_ep_open(&a, "dpv0", 0x1234, false) == 0, "dpv0 UD endpoint"))
		return dpvt_finish();
	CHECK(dpvt_ep_open(&r.e, "dpv1", 64, false) == 0 && dpvt_ep_traffic_buf(&r.e, NULL) == 0, "dpv1 endpoint");
	struct ibv_td_init_attr ta = {.comp_mask = 0};
	r.td = ibv_alloc_td(r.e.ctx, &ta);
	r.pdom = r.td ? dpvt_parent_new(r.e.pd, r.td, NULL) : NULL;
	r.cq = r.pdom ? dpvt_cq_new(r.e.ctx, r.pdom, 256) : NULL;
	r.qp = r.cq ? dpvt_qp_new_ex(r.pdom, IBV_QPT_UD, r.cq, r.cq, NULL, 0) : NULL;
	if (!CHECK(r.qp && dpvt_ud_to_rts(r.qp, 0x1234) == 0, "TD UD QP on dpv1 in RTS"))
		return dpvt_finish();
	struct ibv_ah *ah = dpvt_ah_new(a.pd, r.e.ctx, 1, 1);
	if (!CHECK(ah != NULL, "address handle dpv0 -> dpv1"))
		return dpvt_finish();
	struct ibv_wc wc;
	ibv_poll_cq(r.cq, 1, &wc); /* the main thread owns the thread domain */

	int ordered = 0;
	for (int k = 0; k < ROUNDS && !dpvt_fail_count(); k++)
		ordered += one_round(&a, ah, &r, HALF);
	CHECK_EQ(ordered, ROUNDS, "rounds whose 20 messages arrived in order");
	printf("%d of %d rounds in order\n", ordered, ROUNDS);
	int big = 0;
	for (int k = 0; k < BIG_ROUNDS && !dpvt_fail_count(); k++)
		big += one_round(&a, ah, &r, BIG_HANDED);
	CHECK_EQ(big, BIG_ROUNDS, "rounds whose 60 messages (50 handed over) arrived in order");
	printf("%d of %d rounds with %d handed over in order\n", big, BIG_ROUNDS, BIG_HANDED);

	ibv_destroy_ah(ah);
	ibv_destroy_qp(r.qp);
	ibv_destroy_cq(r.cq);
	ibv_dealloc_pd(r.pdom);
	ibv_dealloc_td(r.td);
	dpvt_ep_close(&r.e);
	dpvt_ep_close(&a);
	return dpvt_finish();
}
