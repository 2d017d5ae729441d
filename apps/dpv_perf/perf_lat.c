/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpv_perf latency tests. Iteration i uses QP i % qps (round robin).
 *
 *   SEND, SEND_IMM, WRITE_IMM   ping-pong: the client posts message i, the
 *                               server echoes it when its receive completes;
 *                               one-way latency = RTT / 2.
 *   WRITE                       as perftest's ib_write_lat: each side writes
 *                               the peer's buffer and polls its own memory
 *                               for the new stamp; one-way = RTT / 2.
 *   READ, FADD, CSWAP           the round trip of one operation, from the
 *                               post to its completion (not halved).
 *
 * While waiting, the active side polls its CQs (and in loopback mode steps
 * the passive side): on dpverbs with inline progress that is what moves the
 * packets; on a NIC it only reaps completions.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "perf.h"

static bool is_write(const struct pf_ep *e) { return e->o->op == PF_WRITE; }
static bool is_rtt_op(const struct pf_ep *e) { return e->o->op == PF_READ || pf_op_atomic(e->o->op); }

/* The reply to message k of q (recv-based ops): 1 arrived, 0 not yet, -1 error. */
static int poll_reply(struct pf_ep *a, struct pf_qp *q, uint64_t k, struct pf_row *row)
{
	struct ibv_wc wc;
	int n = ibv_poll_cq(a->rcq, 1, &wc);
	if (n <= 0) {
		if (n < 0)
			pf_fail(row, "%s: ibv_poll_cq (recv) failed", a->name);
		return n;
	}
	if (wc.status != IBV_WC_SUCCESS) {
		pf_fail(row, "%s: receive completion with status %s", a->name, ibv_wc_status_str(wc.status));
		return -1;
	}
	bool ok = pf_rx_conn(a, &wc) == q && pf_rx_check(a, q, &wc, k);
	if (pf_ep_post_recv(a, &a->q[wc.wr_id >> 32], (uint32_t)wc.wr_id)) {
		pf_fail(row, "%s: ibv_post_recv failed", a->name);
		return -1;
	}
	if (!ok) {
		row->corrupt++;
		pf_fail(row, "reply %" PRIu64 " on QP %u: wrong or corrupt", k, q->idx);
		return -1;
	}
	return 1;
}

/* WRITE: the peer's write of message k has landed in q's slot 0 */
static bool write_landed(struct pf_ep *e, struct pf_qp *q, uint64_t k)
{
	const uint8_t *p = pf_rx_slot(e, q, 0);
	uint64_t v = pf_stamp(e->round, k);
	if (!pf_stamp_ok(p, e->size, v))
		return false;
	if (!e->o->verify)
		return true;
	/* the stamp can land before the rest when a copy runs backwards: retry */
	for (int i = 0; i < 1000; i++)
		if (pf_pattern_ok(p, e->size, v))
			return true;
	return false;
}

/* 1 when message k's answer is in, 0 not yet, -1 error */
static int answer_in(struct pf_run *r, struct pf_qp *q, uint64_t k)
{
	struct pf_ep *a = r->a;
	if (is_rtt_op(a)) {
		if (pf_reap(a, r->row) < 0)
			return -1;
		return q->sq_done - q->round_base > k;
	}
	if (is_write(a)) {
		if (pf_reap(a, r->row) < 0)
			return -1;
		return write_landed(a, q, k);
	}
	return poll_reply(a, q, k, r->row);
}

/* one iteration: post message k on q, wait for its answer; returns the
 * ticks it took, 0 on failure */
static uint64_t one_iteration(struct pf_run *r, struct pf_qp *q, uint64_t k)
{
	struct pf_ep *a = r->a;
	uint64_t limit = pf_ms_ticks(r->o->msg_timeout_ms);
	if (pf_wait_room(a, q, 1, r->row))
		return 0;
	uint64_t t0 = pt_now();
	if (pf_post(a, q, 1, is_rtt_op(a) || k + 1 == q->quota, r->row))
		return 0;
	for (;;) {
		int got = answer_in(r, q, k);
		if (got > 0)
			return pt_now() - t0;
		if (got < 0 || (r->b && pf_lat_passive_step(r->b, r->row) < 0))
			return 0;
		if (pt_stop)
			return 0;
		if (pt_now() - t0 > limit) {
			r->row->lost++;
			pf_fail(r->row, "message %" PRIu64 " on QP %u: no answer within %u ms (lost)", k, q->idx,
				r->o->msg_timeout_ms);
			return 0;
		}
	}
}

void pf_lat_run(struct pf_run *r)
{
	struct pf_ep *a = r->a;
	struct pf_row *row = r->row;
	uint64_t *ticks = malloc(sizeof(uint64_t) * (row->iters ? row->iters : 1));
	uint64_t n = 0, t_first = 0, t_last = 0, i;
	if (!ticks) {
		pf_fail(row, "out of memory");
		return;
	}
	for (i = 0; i < r->total && !pt_stop; i++) {
		struct pf_qp *q = &a->q[i % a->nq];
		uint64_t t0 = pt_now(), dt = one_iteration(r, q, i / a->nq);
		if (!dt)
			break;
		if (i == row->warmup)
			t_first = t0;
		if (i >= row->warmup)
			ticks[n++] = dt;
		t_last = pt_now();
	}
	pf_drain_sq(a, row);
	row->sent = i;
	pf_lat_finish(row, ticks, n, !is_rtt_op(a), t_last - t_first);
	if (n < row->iters)
		pf_fail(row, "only %" PRIu64 " of %" PRIu64 " round trips completed", n, row->iters);
	free(ticks);
}

/* ---- the passive side: echo, or only drive progress ---- */

static int echo(struct pf_ep *e, struct pf_qp *q, struct pf_row *row)
{
	uint64_t k = q->sq_posted - q->round_base;
	if (pf_wait_room(e, q, 1, row))
		return -1;
	return pf_post(e, q, 1, k + 1 == q->quota, row);
}

static int passive_recv(struct pf_pass *p, struct pf_row *row)
{
	struct pf_ep *e = p->e;
	struct ibv_wc wc[16];
	int n = ibv_poll_cq(e->rcq, 16, wc);
	if (n < 0) {
		pf_fail(row, "%s: ibv_poll_cq (recv) failed", e->name);
		return -1;
	}
	for (int i = 0; i < n; i++) {
		if (wc[i].status != IBV_WC_SUCCESS) {
			pf_fail(row, "%s: receive completion with status %s", e->name,
				ibv_wc_status_str(wc[i].status));
			return -1;
		}
		struct pf_qp *q = pf_rx_conn(e, &wc[i]);
		if (pf_rx_check(e, q, &wc[i], q->expected))
			p->good++;
		else
			p->corrupt++;
		q->expected++;
		p->received++;
		/* echo first: the buffer of a WRITE_IMM is not reused before the next ping */
		if (echo(e, q, row) || pf_ep_post_recv(e, &e->q[wc[i].wr_id >> 32], (uint32_t)wc[i].wr_id))
			return -1;
	}
	return n;
}

static int passive_write(struct pf_pass *p, struct pf_row *row)
{
	struct pf_ep *e = p->e;
	if (p->next >= p->total)
		return pf_reap(e, row);
	struct pf_qp *q = &e->q[p->next % e->nq];
	if (!write_landed(e, q, p->next / e->nq))
		return pf_reap(e, row);
	p->next++;
	p->received++;
	p->good++;
	return echo(e, q, row) ? -1 : 1;
}

int pf_lat_passive_step(struct pf_pass *p, struct pf_row *row)
{
	if (pf_op_recv(p->e->o->op)) {
		int n = passive_recv(p, row);
		return n < 0 || pf_reap(p->e, row) < 0 ? -1 : n;
	}
	if (is_write(p->e))
		return passive_write(p, row);
	return pf_reap(p->e, row); /* READ/atomics: the engine answers; we only poll */
}
