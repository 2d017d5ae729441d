/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpv_perf throughput tests. The sender visits its QPs round robin and
 * posts a post list of --post-list WRs on a QP when the QP has room for it:
 * at most --window WRs outstanding (one signalled every --signal, and the
 * last of the QP's quota), and, for operations that consume a receive WQE
 * (SEND, SEND_IMM, WRITE_IMM), at most --rx-depth messages beyond what the
 * receiver has reported consumed (credits: 8-byte SENDs back on the same
 * connection, every rx-depth/4 messages; --no-fc turns them off).
 * Before a QP's first credit only one message is in flight (it resolves
 * the neighbour and proves the path).
 *
 * Rates: the sender's, from the post of the first measured message (after
 * --warmup) to the last completion; the receiver's (receive-based
 * operations), between the arrivals of the last warm-up message and the
 * last message. msg_per_s is the receiver's rate when there is one.
 */
#include <inttypes.h>
#include <string.h>

#include "perf.h"

/* ---- sender ---- */

static int reap_credits(struct pf_ep *a, struct pf_row *row)
{
	struct ibv_wc wc[32];
	int n = ibv_poll_cq(a->rcq, 32, wc);
	if (n < 0) {
		pf_fail(row, "%s: ibv_poll_cq (recv) failed", a->name);
		return -1;
	}
	for (int i = 0; i < n; i++) {
		struct pf_qp *buf = &a->q[wc[i].wr_id >> 32], *q = pf_rx_conn(a, &wc[i]);
		if (wc[i].status != IBV_WC_SUCCESS) {
			pf_fail(row, "%s: receive completion with status %s", a->name,
				ibv_wc_status_str(wc[i].status));
			return -1;
		}
		uint64_t v = pf_get_stamp(pf_rx_slot(a, buf, (uint32_t)wc[i].wr_id) + a->hdr, 8);
		if (wc[i].byte_len != 8 + a->hdr || !(v & PF_CREDIT_FLAG)) {
			pf_fail(row, "%s: unexpected message on the sender (QP %u)", a->name, q->idx);
			return -1;
		}
		if (((v & ~PF_CREDIT_FLAG) >> PF_ROUND_SHIFT) == a->round) { /* else: a late one */
			uint64_t count = v & PF_IDX_MASK;
			if (count > q->granted)
				q->granted = count;
			q->have_credit = true;
		}
		if (pf_ep_post_recv(a, buf, (uint32_t)wc[i].wr_id)) {
			pf_fail(row, "%s: ibv_post_recv failed", a->name);
			return -1;
		}
	}
	return n;
}

/* how many messages to post on q now: a whole post list, or what is left
 * of the quota; 0 if the window or the credits do not allow it */
static uint32_t can_post(const struct pf_ep *a, const struct pf_qp *q, bool credits)
{
	uint64_t k = q->sq_posted - q->round_base, left = q->quota - k;
	uint64_t n = left < a->o->post_list ? left : a->o->post_list;
	if (!n || !pf_sq_room(a, q, (uint32_t)n))
		return 0;
	if (credits) {
		if (!q->have_credit)
			return k == 0 ? 1 : 0;
		if (k + n > q->granted + a->rx_depth)
			return 0;
	}
	return (uint32_t)n;
}

static bool all_done(const struct pf_ep *a)
{
	for (uint32_t i = 0; i < a->nq; i++)
		if (a->q[i].sq_done < a->q[i].sig_end || a->q[i].sq_posted - a->q[i].round_base < a->q[i].quota)
			return false;
	return true;
}

struct bw_state {
	uint64_t posted, t_start, t_end, idle_since;
	uint32_t cur;
};

/* one pass of the sender loop; returns events seen, -1 on error */
static int sender_step(struct pf_run *r, struct bw_state *s, bool credits)
{
	struct pf_ep *a = r->a;
	int ev = 0, n;
	if (credits && (n = reap_credits(a, r->row)) < 0)
		return -1;
	else if (credits)
		ev += n;
	struct pf_qp *q = &a->q[s->cur];
	s->cur = s->cur + 1 == a->nq ? 0 : s->cur + 1;
	uint32_t m = can_post(a, q, credits);
	if (m) {
		uint64_t k = q->sq_posted - q->round_base;
		if (s->posted <= r->row->warmup && s->posted + m > r->row->warmup)
			s->t_start = pt_now();
		if (pf_post(a, q, m, k + m == q->quota, r->row))
			return -1;
		s->posted += m;
		ev += (int)m;
	}
	if ((n = pf_reap(a, r->row)) < 0)
		return -1;
	ev += n;
	if (r->b && (n = pf_passive_step(r->b, r->row)) < 0)
		return -1;
	return ev + (r->b ? n : 0);
}

void pf_bw_run(struct pf_run *r)
{
	struct pf_ep *a = r->a;
	bool credits = pf_op_recv(r->o->op) && !r->o->no_fc;
	struct bw_state s = {0};
	uint64_t limit = pf_ms_ticks(r->o->msg_timeout_ms);
	while (!pt_stop) {
		int ev = sender_step(r, &s, credits);
		if (ev < 0)
			break;
		if (s.posted == r->total && all_done(a)) {
			s.t_end = pt_now();
			break;
		}
		/* a stalled sender means lost credits or lost completions */
		if (ev) {
			s.idle_since = 0;
		} else if (!s.idle_since) {
			s.idle_since = pt_now();
		} else if (pt_now() - s.idle_since > limit) {
			pf_fail(r->row, "sender stalled for %u ms after %" PRIu64 " of %" PRIu64 " messages",
				r->o->msg_timeout_ms, s.posted, r->total);
			break;
		}
	}
	struct pf_row *row = r->row;
	uint64_t counted = r->total - row->warmup;
	row->sent = s.posted;
	row->has_bw = true;
	if (s.t_end && s.t_start && s.t_end > s.t_start) {
		double ns = pt_ticks_ns(s.t_end - s.t_start);
		row->tx_msg_per_s = (double)counted / ns * 1e9;
		row->duration_s = ns / 1e9;
	}
	row->msg_per_s = row->tx_msg_per_s; /* replaced by the receiver's rate when there is one */
}

/* ---- receiver ---- */

static void count_rx(struct pf_pass *p, struct pf_qp *q, bool good)
{
	uint64_t now = pt_now();
	p->received++;
	q->received++;
	if (!good) {
		p->corrupt++;
		return;
	}
	p->good++;
	if (p->good == p->clock_at)
		p->t_ref = now;
	p->t_last = now;
}

/* classify one data message on q: in order, after a gap, or bad */
static void rx_message(struct pf_pass *p, struct pf_qp *q, const struct ibv_wc *wc)
{
	struct pf_ep *e = p->e;
	if (pf_rx_check(e, q, wc, q->expected)) {
		q->expected++;
		count_rx(p, q, true);
		return;
	}
	int64_t k = pf_rx_index(e, q, wc);
	if (k > (int64_t)q->expected && pf_rx_check(e, q, wc, (uint64_t)k)) {
		p->lost += (uint64_t)k - q->expected; /* UD/UC: messages that never came */
		q->expected = (uint64_t)k + 1;
		count_rx(p, q, true);
		return;
	}
	if (k >= 0 && (uint64_t)k < q->expected)
		p->ooo++;
	count_rx(p, q, false);
}

static int maybe_credit(struct pf_pass *p, struct pf_qp *q, struct pf_row *row)
{
	struct pf_ep *e = p->e;
	uint32_t every = e->rx_depth / 4 ? e->rx_depth / 4 : 1;
	bool final = q->received >= q->quota;
	if (e->o->no_fc || q->received == q->credited)
		return 0;
	if (q->received != 1 && q->received - q->credited < every && !final)
		return 0;
	q->credited = q->received;
	return pf_post_credit(e, q, q->received, final, row);
}

static int receiver_step(struct pf_pass *p, struct pf_row *row)
{
	struct pf_ep *e = p->e;
	struct ibv_wc wc[32];
	int n = ibv_poll_cq(e->rcq, 32, wc);
	if (n < 0) {
		pf_fail(row, "%s: ibv_poll_cq (recv) failed", e->name);
		return -1;
	}
	for (int i = 0; i < n; i++) {
		struct pf_qp *q = pf_rx_conn(e, &wc[i]);
		if (wc[i].status != IBV_WC_SUCCESS) {
			pf_fail(row, "%s: receive completion with status %s", e->name,
				ibv_wc_status_str(wc[i].status));
			return -1;
		}
		rx_message(p, q, &wc[i]);
		if (pf_ep_post_recv(e, &e->q[wc[i].wr_id >> 32], (uint32_t)wc[i].wr_id)) {
			pf_fail(row, "%s: ibv_post_recv failed", e->name);
			return -1;
		}
		if (maybe_credit(p, q, row))
			return -1;
	}
	return n;
}

int pf_bw_passive_step(struct pf_pass *p, struct pf_row *row)
{
	int n = pf_op_recv(p->e->o->op) ? receiver_step(p, row) : 0;
	if (n < 0)
		return -1;
	int c = pf_reap(p->e, row);
	return c < 0 ? -1 : n + c;
}


/* WRITE: after the round, each target slot holds the last message written to it */
static void write_end_check(struct pf_pass *p)
{
	struct pf_ep *e = p->e;
	for (uint32_t i = 0; i < e->nq; i++) {
		struct pf_qp *q = &e->q[i];
		for (uint64_t s = 0; s < e->rx_slots && s < q->quota; s++) {
			uint64_t k = s + (q->quota - 1 - s) / e->rx_slots * e->rx_slots, v = pf_stamp(e->round, k);
			const uint8_t *d = pf_rx_slot(e, q, (uint32_t)s);
			if (!pf_stamp_ok(d, e->size, v) || (e->o->verify && !pf_pattern_ok(d, e->size, v)))
				p->corrupt++;
			else
				p->good++;
		}
	}
}

/* after the sender is done: late messages, final credits, end checks */
void pf_bw_passive_finish(struct pf_pass *p, struct pf_row *row)
{
	if (pf_op_recv(p->e->o->op))
		pf_drain_passive(p, row, 100);
	else if (p->e->o->op == PF_WRITE)
		write_end_check(p);
	pf_drain_sq(p->e, row);
}

/* ---- both kinds ---- */

/* the clock starts at the arrival of the last warm-up message (the first
 * message without warm-up), so that warmup .. total-1 are counted */
void pf_pass_init(struct pf_pass *p, struct pf_ep *e, uint64_t total, uint64_t warmup)
{
	memset(p, 0, sizeof(*p));
	p->e = e;
	p->total = total;
	p->clock_at = warmup ? warmup : 1;
}

int pf_passive_step(struct pf_pass *p, struct pf_row *row)
{
	return p->e->o->kind == PF_LAT ? pf_lat_passive_step(p, row) : pf_bw_passive_step(p, row);
}

void pf_drain_passive(struct pf_pass *p, struct pf_row *row, unsigned int ms)
{
	uint64_t end = pt_now() + pf_ms_ticks(ms);
	while (!pt_stop && p->received < p->total && pt_now() < end)
		if (pf_passive_step(p, row) < 0)
			break;
}
