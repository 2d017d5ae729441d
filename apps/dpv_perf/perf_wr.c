/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpv_perf work requests: payload stamps and patterns, slots, post lists
 * (N WRs chained in one ibv_post_send), selective signalling, credits, and
 * the send completions (which also check READ data and atomic results).
 */
#include <endian.h>
#include <string.h>

#include "perf.h"

uint64_t pf_ms_ticks(unsigned int ms) { return (uint64_t)((double)ms * 1e6 / pt_clk.ns_per_tick); }

/* ---- stamps: the last min(size, 8) bytes, little endian ---- */

void pf_put_stamp(uint8_t *p, uint32_t size, uint64_t v)
{
	uint64_t le = htole64(v);
	if (size >= 8)
		memcpy(p + size - 8, &le, 8);
	else
		memcpy(p, &le, size);
}

uint64_t pf_get_stamp(const uint8_t *p, uint32_t size)
{
	uint64_t le = 0;
	if (size >= 8)
		memcpy(&le, p + size - 8, 8);
	else
		memcpy(&le, p, size);
	return le64toh(le);
}

bool pf_stamp_ok(const uint8_t *p, uint32_t size, uint64_t v)
{
	if (size >= 8)
		return pf_get_stamp(p, size) == v;
	return pf_get_stamp(p, size) == (v & ((1ull << (8 * size)) - 1));
}

/* ---- --verify: every byte in front of the stamp ---- */

static inline uint64_t pat_word(uint64_t v, uint32_t off) { return htole64((v + off) * 0x9e3779b97f4a7c15ull); }

void pf_pattern_fill(uint8_t *p, uint32_t size, uint64_t v)
{
	uint32_t n = size > 8 ? size - 8 : 0, k = 0;
	for (; k + 8 <= n; k += 8) {
		uint64_t w = pat_word(v, k);
		memcpy(p + k, &w, 8);
	}
	if (k < n) {
		uint64_t w = pat_word(v, k);
		memcpy(p + k, &w, n - k);
	}
}

bool pf_pattern_ok(const uint8_t *p, uint32_t size, uint64_t v)
{
	uint32_t n = size > 8 ? size - 8 : 0, k = 0;
	for (; k + 8 <= n; k += 8) {
		uint64_t w = pat_word(v, k);
		if (memcmp(p + k, &w, 8))
			return false;
	}
	if (k < n) {
		uint64_t w = pat_word(v, k);
		return !memcmp(p + k, &w, n - k);
	}
	return true;
}

/* ---- slots ---- */

uint8_t *pf_tx_slot(struct pf_ep *e, struct pf_qp *q, uint64_t sq_index)
{
	return q->tx + (size_t)pf_mod(sq_index, e->tx_slots) * e->slot;
}

uint8_t *pf_rx_slot(struct pf_ep *e, struct pf_qp *q, uint32_t slot)
{
	return q->rx + (size_t)slot * e->rx_slot;
}

/* the peer's slot that message k of a round targets (WRITE*, READ) */
static uint32_t remote_slot(const struct pf_ep *e, uint64_t k)
{
	return e->o->kind == PF_LAT ? 0 : (uint32_t)pf_mod(k, e->rx_slots);
}

bool pf_sq_room(const struct pf_ep *e, const struct pf_qp *q, uint32_t n)
{
	return q->sq_posted + n - q->sq_done <= e->window;
}

/* ---- posting ---- */

static struct ibv_send_wr g_wr[PF_MAX_POST_LIST];
static struct ibv_sge g_sge[PF_MAX_POST_LIST];

static void wr_target(struct pf_ep *e, struct pf_qp *q, struct ibv_send_wr *wr, uint64_t k, uint64_t v)
{
	static const enum ibv_wr_opcode opc[PF_OP_N] = {
		IBV_WR_SEND, IBV_WR_SEND_WITH_IMM, IBV_WR_RDMA_WRITE, IBV_WR_RDMA_WRITE_WITH_IMM,
		IBV_WR_RDMA_READ, IBV_WR_ATOMIC_FETCH_AND_ADD, IBV_WR_ATOMIC_CMP_AND_SWP,
	};
	enum pf_op op = e->o->op;
	wr->opcode = opc[op];
	if (pf_op_imm(op))
		wr->imm_data = htobe32((uint32_t)v);
	if (op == PF_WRITE || op == PF_WRITE_IMM || op == PF_READ) {
		wr->wr.rdma.remote_addr = q->r_rx + (uint64_t)remote_slot(e, k) * e->rx_slot;
		wr->wr.rdma.rkey = e->r_rkey;
	} else if (pf_op_atomic(op)) {
		wr->wr.atomic.remote_addr = q->r_rx;
		wr->wr.atomic.rkey = e->r_rkey;
		wr->wr.atomic.compare_add = op == PF_FADD ? 1 : k;
		wr->wr.atomic.swap = k + 1;
	} else if (e->o->qpt == PF_UD) {
		wr->wr.ud.ah = e->ah;
		wr->wr.ud.remote_qpn = q->r_qpn;
		wr->wr.ud.remote_qkey = PF_QKEY;
	}
	if (e->o->qpt == PF_XRC)
		wr->qp_type.xrc.remote_srqn = q->r_srqn;
}

static int post_chain(struct pf_ep *e, struct pf_qp *q, uint32_t n, struct pf_row *row)
{
	struct ibv_send_wr *bad = NULL;
	g_wr[n - 1].next = NULL;
	int r = ibv_post_send(q->qp, g_wr, &bad);
	if (r) {
		pf_fail(row, "%s: ibv_post_send of %u WRs on QP %u failed: %s", e->name, n, q->idx, strerror(r));
		return -1;
	}
	q->sq_posted += n;
	return 0;
}

/* Post n data messages of this round on q in one ibv_post_send call. The
 * caller made sure there is room. */
int pf_post(struct pf_ep *e, struct pf_qp *q, uint32_t n, bool force_last_signal, struct pf_row *row)
{
	const struct pf_opts *o = e->o;
	bool writes_payload = o->op != PF_READ && !pf_op_atomic(o->op);
	uint32_t len = pf_op_atomic(o->op) ? 8 : e->size;
	int inl = writes_payload && !o->no_inline && len <= e->max_inline ? IBV_SEND_INLINE : 0;
	for (uint32_t j = 0; j < n; j++) {
		uint64_t sqi = q->sq_posted + j, k = sqi - q->round_base, v = pf_stamp(e->round, k);
		uint8_t *buf = pf_tx_slot(e, q, sqi);
		struct ibv_send_wr *wr = &g_wr[j];
		if (writes_payload) {
			if (o->verify)
				pf_pattern_fill(buf, len, v);
			pf_put_stamp(buf, len, v);
		}
		g_sge[j].addr = (uintptr_t)buf;
		g_sge[j].length = len;
		g_sge[j].lkey = e->mr->lkey;
		/* g_wr is static: the fields this opcode does not use stay 0 */
		wr->wr_id = (uint64_t)q->idx << PF_ROUND_SHIFT | (sqi & PF_IDX_MASK);
		wr->sg_list = &g_sge[j];
		wr->num_sge = 1;
		wr->next = &g_wr[j + 1];
		bool sig = pf_mod(sqi + 1, e->sig) == 0 || (force_last_signal && j + 1 == n);
		wr->send_flags = (sig ? IBV_SEND_SIGNALED : 0) | inl;
		if (sig)
			q->sig_end = sqi + 1;
		wr_target(e, q, wr, k, v);
	}
	return post_chain(e, q, n, row);
}

/* A credit: "count messages of this round consumed", an 8-byte SEND back. */
int pf_post_credit(struct pf_ep *e, struct pf_qp *q, uint64_t count, bool final, struct pf_row *row)
{
	if (pf_wait_room(e, q, 1, row))
		return -1;
	uint64_t sqi = q->sq_posted;
	uint8_t *buf = pf_tx_slot(e, q, sqi);
	bool sig = (sqi + 1) % e->sig == 0 || final;
	pf_put_stamp(buf, 8, PF_CREDIT_FLAG | e->round << PF_ROUND_SHIFT | count);
	g_sge[0] = (struct ibv_sge){.addr = (uintptr_t)buf, .length = 8, .lkey = e->mr->lkey};
	memset(&g_wr[0], 0, sizeof(g_wr[0]));
	g_wr[0].wr_id = (uint64_t)q->idx << PF_ROUND_SHIFT | (sqi & PF_IDX_MASK);
	g_wr[0].sg_list = &g_sge[0];
	g_wr[0].num_sge = 1;
	g_wr[0].opcode = IBV_WR_SEND;
	g_wr[0].send_flags = (sig ? IBV_SEND_SIGNALED : 0) | (e->max_inline >= 8 ? IBV_SEND_INLINE : 0);
	if (e->o->qpt == PF_UD) {
		g_wr[0].wr.ud.ah = e->ah;
		g_wr[0].wr.ud.remote_qpn = q->r_qpn;
		g_wr[0].wr.ud.remote_qkey = PF_QKEY;
	} else if (e->o->qpt == PF_XRC) {
		g_wr[0].qp_type.xrc.remote_srqn = q->r_srqn;
	}
	if (sig)
		q->sig_end = sqi + 1;
	return post_chain(e, q, 1, row);
}

/* ---- completions ---- */

/* READ data and atomic results of messages [q->checked, done) of this round */
static void check_results(struct pf_ep *e, struct pf_qp *q, struct pf_row *row)
{
	uint64_t done = q->sq_done - q->round_base;
	for (uint64_t k = q->checked; k < done; k++) {
		const uint8_t *p = pf_tx_slot(e, q, q->round_base + k);
		bool ok;
		if (e->o->op == PF_READ) {
			uint64_t v = pf_stamp(e->round, remote_slot(e, k));
			ok = pf_stamp_ok(p, e->size, v) && (!e->o->verify || pf_pattern_ok(p, e->size, v));
		} else {
			uint64_t got;
			memcpy(&got, p, 8);
			ok = got == k; /* the counter before this operation */
		}
		if (!ok)
			row->corrupt++;
	}
	q->checked = done;
}

int pf_reap(struct pf_ep *e, struct pf_row *row)
{
	struct ibv_wc wc[32];
	int n = ibv_poll_cq(e->scq, 32, wc);
	if (n < 0) {
		pf_fail(row, "%s: ibv_poll_cq (send) failed", e->name);
		return -1;
	}
	bool results = e->o->op == PF_READ || pf_op_atomic(e->o->op);
	for (int i = 0; i < n; i++) {
		struct pf_qp *q = &e->q[wc[i].wr_id >> PF_ROUND_SHIFT];
		if (wc[i].status != IBV_WC_SUCCESS) {
			pf_fail(row, "%s: QP %u: send completion with status %s", e->name, q->idx,
				ibv_wc_status_str(wc[i].status));
			return -1;
		}
		q->sq_done = (wc[i].wr_id & PF_IDX_MASK) + 1; /* in order per QP */
		if (results)
			check_results(e, q, row);
	}
	return n;
}

int pf_wait_room(struct pf_ep *e, struct pf_qp *q, uint32_t n, struct pf_row *row)
{
	uint64_t t0 = 0;
	while (!pf_sq_room(e, q, n)) {
		if (pt_stop || pf_reap(e, row) < 0)
			return -1;
		uint64_t now = pt_now();
		if (!t0)
			t0 = now;
		else if (now - t0 > pf_ms_ticks(e->o->msg_timeout_ms)) {
			pf_fail(row, "%s: QP %u: no send completion for %u ms", e->name, q->idx, e->o->msg_timeout_ms);
			return -1;
		}
	}
	return 0;
}

/* wait for the last signalled WR of every QP */
int pf_drain_sq(struct pf_ep *e, struct pf_row *row)
{
	uint64_t t0 = pt_now();
	for (uint32_t i = 0; i < e->nq; i++)
		while (e->q[i].sq_done < e->q[i].sig_end) {
			if (pt_stop || pf_reap(e, row) < 0)
				return -1;
			if (pt_now() - t0 > pf_ms_ticks(e->o->msg_timeout_ms)) {
				pf_fail(row, "%s: QP %u: send completions missing after %u ms", e->name, i,
					e->o->msg_timeout_ms);
				return -1;
			}
		}
	return 0;
}

/* ---- receive side ---- */

static const uint8_t *rx_data(struct pf_ep *e, struct pf_qp *q, const struct ibv_wc *wc, uint64_t k)
{
	if (e->o->op == PF_WRITE_IMM)
		return pf_rx_slot(e, q, remote_slot(e, k));
	return pf_rx_slot(e, &e->q[wc->wr_id >> 32], (uint32_t)wc->wr_id) + e->hdr;
}

bool pf_rx_check(struct pf_ep *e, struct pf_qp *q, const struct ibv_wc *wc, uint64_t k)
{
	uint64_t v = pf_stamp(e->round, k);
	if (e->o->op == PF_WRITE_IMM) {
		if (wc->opcode != IBV_WC_RECV_RDMA_WITH_IMM || be32toh(wc->imm_data) != (uint32_t)v)
			return false;
	} else {
		if (wc->byte_len != e->size + e->hdr)
			return false;
		if (e->o->op == PF_SEND_IMM &&
		    (!(wc->wc_flags & IBV_WC_WITH_IMM) || be32toh(wc->imm_data) != (uint32_t)v))
			return false;
	}
	const uint8_t *p = rx_data(e, q, wc, k);
	return pf_stamp_ok(p, e->size, v) && (!e->o->verify || pf_pattern_ok(p, e->size, v));
}

int64_t pf_rx_index(struct pf_ep *e, struct pf_qp *q, const struct ibv_wc *wc)
{
	uint64_t v;
	if (e->o->op == PF_WRITE_IMM) {
		v = be32toh(wc->imm_data); /* the low 32 bits of the stamp */
		v |= e->round << PF_ROUND_SHIFT;
	} else {
		if (e->size < 8 || wc->byte_len != e->size + e->hdr)
			return -1;
		v = pf_get_stamp(rx_data(e, q, wc, 0), e->size);
	}
	if (v >> PF_ROUND_SHIFT != e->round || !(v & PF_IDX_MASK))
		return -1;
	return (int64_t)(v & PF_IDX_MASK) - 1;
}
