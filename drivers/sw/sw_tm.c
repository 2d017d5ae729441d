/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Tag matching SRQs (IBV_SRQT_TM), the engine side, as a ConnectX's TM-SRQ
 * behaves: the ops the façade queues in the SRQ's tag matching area
 * (dpv_queue.h, struct dpv_tm_hdr) add and remove tags of the engine's own
 * list and update the unexpected count software has handled; a SEND that
 * starts a message on an RC QP of the SRQ begins with a tag matching header
 * (struct ibv_tmh, big endian), which decides where the message goes:
 *
 *   EAGER, RNDV  the oldest tag with (tmh.tag & mask) == (tag & mask), while
 *                software is in sync (its count == the unexpected messages):
 *                the payload after the TMH goes to the tag's buffer, and the
 *                tag leaves the list (IBV_WC_TM_RECV, TM_MATCH | TM_DATA_VALID;
 *                a rendezvous completes with IBV_WC_TM_RNDV_INCOMPLETE and its
 *                RVH in the buffer: software reads the data itself). No
 *                match: unexpected, the whole message to an ordinary SRQ
 *                receive WQE (IBV_WC_TM_RECV, no flags) and one more
 *                unexpected message: matching stops until a TAG_SYNC (or an
 *                op with IBV_OPS_TM_SYNC) reports that count.
 *   NO_TAG, others  the whole message to an ordinary WQE (IBV_WC_TM_NO_TAG).
 *
 * Ops and message decisions run under the SRQ's consumer lock; completions
 * of ops go to the SRQ's CQ (lock order SRQ -> CQ).
 */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/tm_types.h>

#include "sw_loc.h"

struct sw_tm_tag {
	bool valid;
	uint16_t num_sge;
	uint64_t seq;             /* order of addition: the oldest matching tag wins */
	uint64_t tag, mask, wr_id;
	struct dpv_sge sge;
};

struct sw_tm {
	struct dpv_tm_hdr *hdr;   /* in the SRQ's ring buffer */
	_Atomic uint32_t *state;  /* handle states (the façade's free list) */
	uint32_t ops_size, max_tags, ci;
	uint32_t unexp;           /* unexpected messages so far */
	uint32_t sw_cnt;          /* the count software last reported */
	uint64_t seq;
	struct sw_tm_tag tags[];
};

int sw_tm_create(struct sw_srq *s, const struct dpv_srq_cfg *cfg)
{
	if (!cfg->tm_ops)
		return 0;
	if ((cfg->tm_ops & (cfg->tm_ops - 1)) || !cfg->tm_tags || cfg->tm_tags > DPV_TM_MAX_TAGS || !cfg->cq)
		return -EINVAL;
	struct sw_tm *t = calloc(1, sizeof(*t) + cfg->tm_tags * sizeof(struct sw_tm_tag));
	if (!t)
		return -ENOMEM;
	t->hdr = (struct dpv_tm_hdr *)((uint8_t *)cfg->ring + dpv_tm_area_off(cfg->ring_size, cfg->ring_stride));
	t->state = dpv_tm_states(t->hdr, cfg->tm_ops);
	t->ops_size = cfg->tm_ops;
	t->max_tags = cfg->tm_tags;
	s->tm = t;
	return 0;
}

void sw_tm_destroy(struct sw_srq *s)
{
	free(s->tm);
	s->tm = NULL;
}

/* The tag leaves the list; free: its handle goes back to the façade's free
 * list at once (otherwise when software polls its last completion, which
 * carries DPV_CQE_F_TM_FREE). */
static void tag_release(struct sw_tm *t, uint32_t h, bool free)
{
	t->tags[h].valid = false;
	if (free)
		atomic_store_explicit(&t->state[h], DPV_TM_FREE, memory_order_release);
}

static uint32_t tag_id(const struct sw_srq *s, uint32_t h)
{
	return s->srqn << 8 | h;
}

static void op_complete(struct sw_srq *s, const struct dpv_tm_op *op, enum ibv_wc_opcode wc_op,
			enum ibv_wc_status st)
{
	if (st == IBV_WC_SUCCESS && !(op->flags & IBV_OPS_SIGNALED))
		return;
	struct dpv_cqe e = {.wr_id = op->wr_id, .status = (uint8_t)st, .opcode = (uint8_t)wc_op};
	if (wc_op == IBV_WC_TM_DEL && st == IBV_WC_SUCCESS) {
		e.flags = DPV_CQE_F_TM_FREE; /* the handle is free once this is polled */
		e.wqe_index = tag_id(s, op->handle);
	}
	if (s->tm->sw_cnt != s->tm->unexp)
		e.wc_flags = IBV_WC_TM_SYNC_REQ; /* software has unexpected messages to see */
	sw_cq_push(NULL, s->cq, &e);
}

static void op_exec(struct sw_srq *s, const struct dpv_tm_op *op)
{
	struct sw_tm *t = s->tm;
	if (op->flags & IBV_OPS_TM_SYNC)
		t->sw_cnt = op->unexp_cnt;
	switch (op->opcode) {
	case IBV_WR_TAG_ADD: {
		if (op->handle >= t->max_tags || t->tags[op->handle].valid || op->num_sge > DPV_TM_MAX_SGE) {
			op_complete(s, op, IBV_WC_TM_ADD, IBV_WC_TM_ERR);
			return;
		}
		struct sw_tm_tag *g = &t->tags[op->handle];
		*g = (struct sw_tm_tag){.valid = true, .num_sge = op->num_sge, .seq = t->seq++, .tag = op->tag,
					.mask = op->mask, .wr_id = op->recv_wr_id, .sge = op->sge};
		op_complete(s, op, IBV_WC_TM_ADD, IBV_WC_SUCCESS);
		return;
	}
	case IBV_WR_TAG_DEL:
		if (op->handle >= t->max_tags || !t->tags[op->handle].valid) {
			/* not in the list: never added, consumed or removed already */
			op_complete(s, op, IBV_WC_TM_DEL, IBV_WC_TM_ERR);
			return;
		}
		tag_release(t, op->handle, !(op->flags & IBV_OPS_SIGNALED));
		op_complete(s, op, IBV_WC_TM_DEL, IBV_WC_SUCCESS);
		return;
	case IBV_WR_TAG_SYNC:
		op_complete(s, op, IBV_WC_TM_SYNC, IBV_WC_SUCCESS);
		return;
	default:
		op_complete(s, op, IBV_WC_TM_SYNC, IBV_WC_TM_ERR);
		return;
	}
}

/* Execute the ops queued since the last look: at most a ring's worth (the
 * producer index is in memory the application writes). Holds s->lock. */
static void tm_ops_run(struct sw_srq *s)
{
	struct sw_tm *t = s->tm;
	uint32_t pi = atomic_load_explicit(&t->hdr->ops_pi, memory_order_acquire);
	for (uint32_t n = 0; t->ci != pi && n < t->ops_size; n++) {
		struct dpv_tm_op op = dpv_tm_ops(t->hdr)[t->ci & (t->ops_size - 1)];
		t->ci++;
		op_exec(s, &op);
	}
	atomic_store_explicit(&t->hdr->ops_ci, t->ci, memory_order_release);
}

void sw_srq_doorbell(void *p)
{
	struct sw_srq *s = p;
	if (!s->tm)
		return;
	rte_spinlock_lock(&s->lock);
	tm_ops_run(s);
	rte_spinlock_unlock(&s->lock);
}

/* The oldest tag the message's tag matches, or -1 (or while software is
 * not in sync with the unexpected count). */
static int tm_match(struct sw_tm *t, uint64_t tag)
{
	int best = -1;
	if (t->sw_cnt != t->unexp)
		return -1;
	for (uint32_t h = 0; h < t->max_tags; h++) {
		struct sw_tm_tag *g = &t->tags[h];
		if (g->valid && (tag & g->mask) == (g->tag & g->mask) && (best < 0 || g->seq < t->tags[best].seq))
			best = (int)h;
	}
	return best;
}

/* A matched rendezvous: the RVH after the TMH says what the engine reads;
 * without one, software does the rendezvous (the RVH goes to the buffer). */
static void rndv_header(struct sw_tm_msg *m, const uint8_t *pay, uint32_t plen)
{
	struct ibv_rvh rvh;
	if (plen < sizeof(struct ibv_tmh) + sizeof(rvh)) {
		m->status = IBV_WC_TM_RNDV_INCOMPLETE;
		return;
	}
	memcpy(&rvh, pay + sizeof(struct ibv_tmh), sizeof(rvh));
	m->rndv = true;
	m->va = be64toh(rvh.va);
	m->rkey = be32toh(rvh.rkey);
	m->len = be32toh(rvh.len);
}

bool sw_tm_take(struct sw_srq *s, const uint8_t *pay, uint32_t plen, struct sw_rwqe *out, struct sw_tm_msg *m)
{
	struct sw_tm *t = s->tm;
	struct ibv_tmh tmh = {.opcode = IBV_TMH_NO_TAG};
	bool limit_ev = false, ok;
	if (plen >= sizeof(tmh))
		memcpy(&tmh, pay, sizeof(tmh));
	bool tagged = plen >= sizeof(tmh) && (tmh.opcode == IBV_TMH_EAGER || tmh.opcode == IBV_TMH_RNDV);
	rte_spinlock_lock(&s->lock);
	tm_ops_run(s); /* tags added before the message arrived take part */
	int h = tagged ? tm_match(t, be64toh(tmh.tag)) : -1;
	if (h >= 0) {
		struct sw_tm_tag *g = &t->tags[h];
		*out = (struct sw_rwqe){.wr_id = g->wr_id, .num_sge = g->num_sge, .pd = s->pd};
		out->sge[0] = g->sge;
		*m = (struct sw_tm_msg){.kind = SW_TM_MATCHED, .skip = sizeof(tmh), .tag = be64toh(tmh.tag),
					.priv = be32toh(tmh.app_ctx)};
		m->free_tag = tag_id(s, (uint32_t)h);
		if (tmh.opcode == IBV_TMH_RNDV)
			rndv_header(m, pay, plen);
		tag_release(t, (uint32_t)h, false);
		ok = true;
	} else {
		ok = sw_srq_pop_locked(s, out, &limit_ev);
		*m = (struct sw_tm_msg){.kind = tagged ? SW_TM_UNEXPECTED : SW_TM_NO_TAG};
		if (ok && tagged)
			atomic_store_explicit(&t->hdr->unexp, ++t->unexp, memory_order_relaxed);
	}
	rte_spinlock_unlock(&s->lock);
	if (limit_ev)
		dpv_event_async(NULL, IBV_EVENT_SRQ_LIMIT_REACHED, s->srqn);
	return ok;
}

void sw_tm_cqe(struct sw_tm_msg *m, struct dpv_cqe *e)
{
	e->opcode = m->kind == SW_TM_NO_TAG ? IBV_WC_TM_NO_TAG : IBV_WC_TM_RECV;
	if (m->kind == SW_TM_MATCHED) {
		/* a rendezvous the engine runs: the data is valid later, in a
		 * second completion (sw_tm_rndv.c) */
		e->status = m->status;
		e->wc_flags |= IBV_WC_TM_MATCH | (m->status == IBV_WC_SUCCESS && !m->rndv ? IBV_WC_TM_DATA_VALID : 0);
		e->tm_tag = m->tag;
		e->tm_priv = m->priv;
		if (m->rndv) {
			e->byte_len = 0; /* the data comes later: the tag's last completion too */
		} else {
			e->flags |= DPV_CQE_F_TM_FREE;
			e->wqe_index = m->free_tag;
		}
	}
	m->kind = SW_TM_NONE;
	m->skip = 0;
	m->rndv = false;
}

void sw_tm_cqe_error(struct sw_tm_msg *m, struct dpv_cqe *e)
{
	e->opcode = m->kind == SW_TM_NO_TAG ? IBV_WC_TM_NO_TAG : IBV_WC_TM_RECV;
	if (m->kind == SW_TM_MATCHED) {
		e->flags |= DPV_CQE_F_TM_FREE; /* the tag's last completion */
		e->wqe_index = m->free_tag;
	}
	*m = (struct sw_tm_msg){0};
}

void sw_tm_db_clear(struct sw_srq *s)
{
	atomic_store_explicit(&s->tm->hdr->db, 0, memory_order_seq_cst);
}
