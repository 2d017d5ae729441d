/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Timers of the software engine: retransmission (IBA 9.7.6.1.3), RNR wait
 * (IBA 9.7.5.2.8), tail-loss probe, and the retries of work held back by an
 * unresolved neighbour or a full TX queue.
 *
 * The poll turn of an engine context (sw_poll.c) calls the scan after each
 * RX burst; at most every SW_TIMER_US it looks at the next SW_TIMER_SLICE
 * QPs bound to the context (round robin, so a scan costs the same with 1 QP or 100000).
 * A QP with nothing due is recognised without its lock (relaxed reads of
 * its deadlines and flags). With n QPs on a context each is looked at every
 * ceil(n / SW_TIMER_SLICE) * SW_TIMER_US: 10 us up to 16 QPs, 640 us with
 * 1024. A thread domain's QPs are on its own list and run on its owner
 * thread.
 *
 * The scan also moves to ERR the QPs of a CQ that overran (sw_qp_cq_due):
 * those that do nothing meanwhile have no other occasion to notice.
 *
 * Local trouble costs no retry: when a context was not polled for
 * SW_STARVED_US (its thread was descheduled) or its RX queue still holds a
 * backlog, an expired retransmission timer is restarted instead of counted,
 * since the peer's answer may be waiting unread.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>

#include "sw_loc.h"
#include "sw_log.h"
#include "sw_qp_lock.h"
#include "sw_queue.h"

/* The QPs of one engine context and the timer scan's bookkeeping. The
 * array is changed under lock (QP create/destroy); the scan reads it under
 * the same lock. */
struct sw_ctx {
	rte_spinlock_t lock;
	struct sw_qp **qps;
	unsigned int n, cap, cursor;
	uint64_t next_timer_tsc;
};

static struct sw_ctx g_ctx[DPV_MAX_PORTS][DPV_MAX_QUEUES];

static struct sw_ctx *ctx_of(const struct dpv_qctx *qc)
{
	return &g_ctx[qc->port->index][qc->qid];
}

uint64_t sw_us_cycles = 1;

RTE_INIT(sw_timer_init)
{
	for (unsigned int p = 0; p < DPV_MAX_PORTS; p++)
		for (unsigned int q = 0; q < DPV_MAX_QUEUES; q++)
			rte_spinlock_init(&g_ctx[p][q].lock);
}

int sw_timer_add(struct sw_qp *qp)
{
	if (qp->lockless) {
		qp->timer_next = qp->td->conn;
		qp->td->conn = qp;
		return 0;
	}
	struct sw_ctx *c = ctx_of(qp->qc);
	int r = 0;
	rte_spinlock_lock(&c->lock);
	if (c->n == c->cap) {
		unsigned int cap = c->cap ? c->cap * 2 : 64;
		struct sw_qp **a = realloc(c->qps, cap * sizeof(*a));
		if (a) {
			c->qps = a;
			c->cap = cap;
		}
	}
	if (c->n < c->cap)
		c->qps[c->n++] = qp;
	else
		r = -ENOMEM;
	rte_spinlock_unlock(&c->lock);
	return r;
}

static void list_del(struct sw_qp **head, struct sw_qp *qp)
{
	for (struct sw_qp **pp = head; *pp; pp = &(*pp)->timer_next)
		if (*pp == qp) {
			*pp = qp->timer_next;
			return;
		}
}

void sw_timer_del(struct sw_qp *qp)
{
	if (qp->lockless) {
		list_del(&qp->td->conn, qp);
		return;
	}
	struct sw_ctx *c = ctx_of(qp->qc);
	rte_spinlock_lock(&c->lock);
	for (unsigned int i = 0; i < c->n; i++)
		if (c->qps[i] == qp) {
			c->qps[i] = c->qps[--c->n]; /* the scan may look at one QP twice */
			break;
		}
	rte_spinlock_unlock(&c->lock);
}

/* Has the QP anything for its timers now? Read without its lock (relaxed
 * loads of fields written under it): a stale answer only shifts the work
 * to the next scan. */
static bool qp_due(const struct sw_qp *qp, uint64_t now)
{
#define RD(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)
	uint64_t t = RD(qp->comp.timer_deadline), r = RD(qp->comp.rnr_deadline), p = RD(qp->comp.probe_deadline);
	return (t && now >= t) || (r && now >= r) || (p && now >= p) || RD(qp->req.neigh_wait) ||
	       RD(qp->req.tx_stalled) || RD(qp->resp.q_head) != RD(qp->resp.q_tail) || sw_qp_cq_due(qp);
#undef RD
}

static uint64_t timeout_cycles(uint8_t t)
{
	/* IBA 9.7.6.1.3: 4.096 us * 2^timeout; 0 = infinite */
	if (!t)
		return 0;
	double us = 4.096 * (double)(1ULL << (t > 31 ? 31 : t));
	return (uint64_t)(us * (double)rte_get_tsc_hz() / 1e6);
}

void sw_timer_restart(struct sw_qp *qp)
{
	uint64_t c = timeout_cycles(qp->attr.timeout);
	qp->comp.timer_deadline = c ? rte_get_tsc_cycles() + c : 0;
}

/* Tail-loss probe: when nothing was acknowledged for probe_cycles (1 ms,
 * doubling while nothing moves, reset by progress), go back to the oldest
 * unacknowledged PSN. This recovers a lost last packet or a lost ACK long
 * before the QP's ACK timeout (often tens of ms), and unlike that timeout it
 * does not count against retry_cnt: the IBA timer keeps running on its own. */
void sw_timer_probe_restart(struct sw_qp *qp, bool reset)
{
	struct sw_comp *c = &qp->comp;
	uint64_t base = rte_get_tsc_hz() / 1000000 * SW_RC_PROBE_US;
	if (reset || !c->probe_cycles)
		c->probe_cycles = base;
	else if (c->probe_cycles < base << 10)
		c->probe_cycles <<= 1;
	c->probe_deadline = rte_get_tsc_cycles() + c->probe_cycles;
}

static bool nothing_outstanding(const struct sw_qp *qp)
{
	return dpv_psn_cmp(qp->req.psn, qp->comp.psn) <= 0 && qp->req.sq_head == qp->req.sq_cur;
}

/* The retransmission timer expired (IBA 9.7.6.1.3): go back to the oldest
 * unacknowledged PSN, or fail the oldest WQE once retry_cnt is spent. */
static void retransmit(struct sw_qp *qp, bool local_trouble)
{
	struct sw_comp *c = &qp->comp;
	if (nothing_outstanding(qp)) {
		c->timer_deadline = 0;
		return;
	}
	if (local_trouble) {
		sw_timer_restart(qp); /* our own delay, not the peer's silence */
		return;
	}
	if (!c->retry_left) {
		sw_cnt(qp, DPV_CNT_RETRY_EXC);
		if (qp->req.sq_head != qp->req.sq_fetched)
			sw_comp_error(qp, qp->req.sq_head, IBV_WC_RETRY_EXC_ERR);
		else if (qp->resp.rndv.phase >= SW_RNDV_READ)
			sw_tm_rndv_timeout(qp);
		return;
	}
	c->retry_left--;
	c->rd_wait = false;
	sw_timer_restart(qp);
	SW_DBG_QP(qp, "timeout, retry from %#x (psn %#x, left %u, head %u cur %u)", c->psn, qp->req.psn,
		  c->retry_left, qp->req.sq_head, qp->req.sq_cur);
	sw_req_retry(qp, c->psn, true, false);
}

/* Timers of one QP. Must hold the QP lock. */
static void qp_timers(struct sw_qp *qp, uint64_t now, bool local_trouble)
{
	struct sw_comp *c = &qp->comp;
	if (unlikely(sw_qp_cq_due(qp))) {
		sw_qp_cq_fatal(qp); /* a CQ of the QP overran: the QP was idle since */
		return;
	}
	enum ibv_qp_state st = sw_qp_state(qp);
	if (sw_resp_pending(qp))
		sw_resp_pump(qp, SW_RESP_BURST);
	if (st != IBV_QPS_RTS && st != IBV_QPS_SQD)
		return;
	if (qp->req.neigh_wait || qp->req.tx_stalled) {
		qp->req.neigh_wait = false;
		sw_qp_send(qp); /* sets them again if still blocked */
	}
	if (qp->type == IBV_QPT_UD || qp->type == IBV_QPT_UC || qp->type == IBV_QPT_XRC_RECV ||
	    qp->type == IBV_QPT_RAW_PACKET)
		return; /* no acknowledgements, no retransmission */
	uint32_t missed = __atomic_exchange_n(&c->lock_miss, 0, __ATOMIC_RELAXED);
	if (c->rnr_deadline && now >= c->rnr_deadline) {
		SW_DBG_QP(qp, "RNR wait over: resend from %#x (%llu us after the deadline, %u scans found it locked)",
			  c->rnr_psn, (unsigned long long)((now - c->rnr_deadline) / sw_us_cycles), missed);
		c->rnr_deadline = 0;
		sw_timer_restart(qp);
		sw_req_retry(qp, c->rnr_psn, true, false);
		sw_req_run(qp); /* what was posted during the wait, when nothing was to resend */
		return;
	}
	if (c->timer_deadline && now >= c->timer_deadline) {
		retransmit(qp, local_trouble);
		return;
	}
	if (c->probe_deadline && now >= c->probe_deadline) {
		if (nothing_outstanding(qp)) {
			c->probe_deadline = 0;
			return;
		}
		sw_timer_probe_restart(qp, false);
		c->rd_wait = false;
		sw_req_retry(qp, c->psn, true, true);
	}
}

void sw_timer_scan(struct dpv_qctx *qc, uint64_t now, bool starved)
{
	struct sw_ctx *c = ctx_of(qc);
	if (now < c->next_timer_tsc && !starved)
		return;
	c->next_timer_tsc = now + sw_us_cycles * SW_TIMER_US;
	sw_debug_on = rte_log_can_log(sw_logtype, RTE_LOG_DEBUG);
	if (!c->n)
		return;
	bool trouble = starved || qc->rx_backlog;
	rte_spinlock_lock(&c->lock);
	unsigned int k = RTE_MIN(c->n, (unsigned int)SW_TIMER_SLICE);
	for (unsigned int i = 0; i < k; i++) {
		if (c->cursor >= c->n)
			c->cursor = 0;
		struct sw_qp *qp = c->qps[c->cursor++];
		if (!qp_due(qp, now))
			continue;
		if (!sw_qp_trylock(qp)) { /* lock order: the QP lock is taken before the list's elsewhere */
			__atomic_fetch_add(&qp->comp.lock_miss, 1, __ATOMIC_RELAXED);
			continue;
		}
		qp_timers(qp, now, trouble);
		sw_qp_unlock(qp);
	}
	rte_spinlock_unlock(&c->lock);
}

void sw_timer_td(struct sw_td *td, uint64_t now)
{
	if (now < td->next_timer_tsc)
		return;
	td->next_timer_tsc = now + sw_us_cycles * SW_TIMER_US;
	for (struct sw_qp *qp = td->conn; qp; qp = qp->timer_next)
		qp_timers(qp, now, false);
}
