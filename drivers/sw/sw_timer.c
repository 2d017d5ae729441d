/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Timers and the per-context tasks of the software engine.
 *
 * After each RX burst of an engine context (the port layer's poll hook):
 * the coalesced ACKs of the burst go out, QPs whose doorbell was rung in
 * service mode run their senders, and at most every SW_TIMER_US the QPs
 * bound to the context run their timers: retransmission (IBA 9.7.6.1.3),
 * RNR wait (IBA 9.7.5.2.8), tail-loss probe, and the retries of work held
 * back by an unresolved neighbour or a full TX queue. A thread domain's QPs
 * are on its own list and run on its owner thread.
 *
 * Local trouble costs no retry: when a context was not polled for
 * SW_STARVED_US (its thread was descheduled) or its RX queue still holds a
 * backlog, an expired retransmission timer is restarted instead of counted,
 * since the peer's answer may be waiting unread.
 */
#include <errno.h>
#include <string.h>

#include <rte_cycles.h>

#include "sw_loc.h"

/* Timer list and bookkeeping of one engine context. */
struct sw_ctx {
	rte_spinlock_t lock;
	struct sw_qp *head;
	uint64_t next_timer_tsc;
	uint64_t last_poll_tsc;
};

static struct sw_ctx g_ctx[DPV_MAX_PORTS][DPV_MAX_QUEUES];

static struct sw_ctx *ctx_of(const struct dpv_qctx *qc)
{
	return &g_ctx[qc->port->index][qc->qid];
}

RTE_INIT(sw_timer_init)
{
	for (unsigned int p = 0; p < DPV_MAX_PORTS; p++)
		for (unsigned int q = 0; q < DPV_MAX_QUEUES; q++)
			rte_spinlock_init(&g_ctx[p][q].lock);
}

void sw_timer_add(struct sw_qp *qp)
{
	if (qp->lockless) {
		qp->timer_next = qp->td->conn;
		qp->td->conn = qp;
		return;
	}
	struct sw_ctx *c = ctx_of(qp->qc);
	rte_spinlock_lock(&c->lock);
	qp->timer_next = c->head;
	c->head = qp;
	rte_spinlock_unlock(&c->lock);
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
	list_del(&c->head, qp);
	rte_spinlock_unlock(&c->lock);
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
	enum ibv_qp_state st = sw_qp_state(qp);
	if (sw_resp_pending(qp))
		sw_resp_pump(qp, SW_RESP_BURST);
	if (st != IBV_QPS_RTS && st != IBV_QPS_SQD)
		return;
	if (qp->req.neigh_wait || qp->req.tx_stalled) {
		qp->req.neigh_wait = false;
		sw_qp_send(qp); /* sets them again if still blocked */
	}
	if (qp->type == IBV_QPT_UD || qp->type == IBV_QPT_UC || qp->type == IBV_QPT_XRC_RECV)
		return; /* no acknowledgements, no retransmission */
	if (c->rnr_deadline && now >= c->rnr_deadline) {
		c->rnr_deadline = 0;
		sw_timer_restart(qp);
		sw_req_retry(qp, c->rnr_psn, true, false);
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

void sw_defer_ack(struct sw_qp *qp, struct dpv_qctx *qc)
{
	for (unsigned int i = 0; i < qc->n_deferred; i++)
		if (qc->deferred[i] == qp)
			return;
	if (qc->n_deferred < RTE_DIM(qc->deferred))
		qc->deferred[qc->n_deferred++] = qp;
	else
		sw_resp_flush_ack(qp);
}

/* Service mode: QPs whose doorbell was rung. */
static void doorbells(struct dpv_qctx *qc)
{
	void *db[DPV_BURST];
	unsigned int n = rte_ring_sc_dequeue_burst(qc->db_ring, db, DPV_BURST, NULL);
	for (unsigned int i = 0; i < n; i++) {
		struct sw_qp *qp = sw_qp_lookup((uint32_t)(uintptr_t)db[i]);
		if (!qp)
			continue;
		atomic_store(&qp->req.db_pending, false);
		sw_qp_lock(qp);
		sw_qp_send(qp);
		sw_qp_unlock(qp);
	}
}

/* Engine hook after each RX burst of a context. Runs with qc->rx_lock held. */
void sw_poll(struct dpv_qctx *qc)
{
	struct sw_ctx *c = ctx_of(qc);
	uint64_t now = rte_get_tsc_cycles();
	bool starved = c->last_poll_tsc && now - c->last_poll_tsc > rte_get_tsc_hz() / 1000000 * SW_STARVED_US;
	c->last_poll_tsc = now;
	if (qc->port->index == 0 && qc->qid == 0)
		sw_stats_publish();
	for (unsigned int i = 0; i < qc->n_deferred; i++) {
		struct sw_qp *qp = qc->deferred[i];
		sw_qp_lock(qp);
		sw_resp_flush_ack(qp);
		sw_qp_unlock(qp);
	}
	qc->n_deferred = 0;
	doorbells(qc);
	if (now < c->next_timer_tsc && !starved)
		return;
	c->next_timer_tsc = now + rte_get_tsc_hz() / 1000000 * SW_TIMER_US;
	sw_debug_on = rte_log_can_log(sw_logtype, RTE_LOG_DEBUG);
	if (!c->head)
		return;
	bool trouble = starved || qc->rx_backlog;
	rte_spinlock_lock(&c->lock);
	for (struct sw_qp *qp = c->head; qp; qp = qp->timer_next) {
		if (!sw_qp_trylock(qp))
			continue; /* lock order: the QP lock is taken before the list's elsewhere */
		qp_timers(qp, now, trouble);
		sw_qp_unlock(qp);
	}
	rte_spinlock_unlock(&c->lock);
}

/* A thread domain's owner: the packets other threads received for its QPs,
 * then (at most every SW_TIMER_US) its QPs' timers. */
int sw_td_progress(struct sw_td *td)
{
	int n = sw_td_rx(td);
	uint64_t now = rte_get_tsc_cycles();
	if (now < td->next_timer_tsc)
		return n;
	td->next_timer_tsc = now + rte_get_tsc_hz() / 1000000 * SW_TIMER_US;
	for (struct sw_qp *qp = td->conn; qp; qp = qp->timer_next)
		qp_timers(qp, now, false);
	return n;
}
