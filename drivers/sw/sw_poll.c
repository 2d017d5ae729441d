/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The poll turn of the software engine: what runs on an engine context
 * after each of its RX bursts (the port layer's poll hook, sw_poll), and on
 * a thread domain's owner (sw_td_progress).
 *
 * In order: starvation is noted (the context was not polled for
 * SW_STARVED_US: its thread was descheduled, and an expired timer is then
 * restarted instead of counted, see sw_timer.c), the counters are published
 * (context 0/0 only), the ACKs the burst coalesced go out (one per QP,
 * sw_defer_ack), the QPs queued on the context's ring run their senders and
 * pending responses (sw_doorbells_drain: rung doorbells in service mode, and
 * QPs whose sending stopped on a full TX queue), shared mode's doorbell
 * rings are read (sw_dbring.c), then the timer scan (sw_timer_scan).
 */
#include <rte_cycles.h>

#include "sw_copy.h"
#include "sw_loc.h"
#include "sw_log.h"
#include "sw_qp_lock.h"

/* What one engine context's turn keeps between turns; used under the
 * context's rx_lock (the port layer holds it around the burst and the
 * hook). */
struct sw_turn {
	uint64_t last_poll_tsc;
	/* QPs with an ACK coalesced during this burst */
	struct sw_qp *deferred[DPV_BURST * 2];
	unsigned int n_deferred;
};

static struct sw_turn g_turn[DPV_MAX_PORTS][DPV_MAX_QUEUES];

static struct sw_turn *turn_of(const struct dpv_qctx *qc)
{
	return &g_turn[qc->port->index][qc->qid];
}

void sw_defer_ack(struct sw_qp *qp, struct dpv_qctx *qc)
{
	struct sw_turn *t = turn_of(qc);
	for (unsigned int i = 0; i < t->n_deferred; i++)
		if (t->deferred[i] == qp)
			return;
	if (t->n_deferred < RTE_DIM(t->deferred))
		t->deferred[t->n_deferred++] = qp;
	else
		sw_resp_flush_ack(qp);
}

/* The ACKs coalesced during the burst: one per QP. */
static void flush_deferred(struct sw_turn *t)
{
	for (unsigned int i = 0; i < t->n_deferred; i++) {
		struct sw_qp *qp = t->deferred[i];
		sw_qp_lock(qp);
		sw_resp_flush_ack(qp);
		sw_qp_unlock(qp);
	}
	t->n_deferred = 0;
}

/* Engine hook after each RX burst of a context. Runs with qc->rx_lock held. */
int sw_poll(struct dpv_qctx *qc, uint64_t now)
{
	int work = 0;
	struct sw_turn *t = turn_of(qc);
	/* A thread on another CPU may read a TSC a little behind the last one
	 * (vCPUs' TSCs differ by a few cycles): `since` is then negative, which
	 * is not starvation (read unsigned, it was: an expired retransmission
	 * timer was restarted instead of counted, and a peer that had gone
	 * away was retried for minutes instead of 7 times). */
	int64_t since = t->last_poll_tsc ? (int64_t)(now - t->last_poll_tsc) : 0;
	bool starved = since > (int64_t)(sw_us_cycles * SW_STARVED_US);
	if (sw_debug() && since > (int64_t)(sw_us_cycles * 100000))
		SW_LOG(DEBUG, "context %u/%u not polled for %llu us", qc->port->index, qc->qid,
		       (unsigned long long)((uint64_t)since / sw_us_cycles));
	t->last_poll_tsc = now;
	if (qc->port->index == 0 && qc->qid == 0)
		sw_stats_publish(now);
	flush_deferred(t);
	if (!rte_ring_empty(qc->db_ring))
		work += sw_doorbells_drain(qc);
	work += sw_db_poll(qc);
	sw_timer_scan(qc, now, starved);
	sw_mem_flush(); /* nothing waits past the poll turn (the context's lock) */
	return work;
}

/* A thread domain's owner: the packets other threads received for its QPs,
 * then (at most every SW_TIMER_US) its QPs' timers. */
int sw_td_progress(struct sw_td *td)
{
	sw_sect_enter(); /* no context's lock: dereg_mr waits for the section */
	int n = sw_td_rx(td);
	uint64_t now = rte_get_tsc_cycles();
	sw_mem_flush();
	sw_timer_td(td, now);
	sw_sect_exit();
	return n;
}
