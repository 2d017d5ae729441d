/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The extended post API (ibv_wr_start ... ibv_wr_complete) on top of the
 * classic one: each ibv_wr_<op> appends a struct ibv_send_wr to a batch
 * preallocated at QP creation (max_send_wr entries with their SGEs and
 * inline bytes), ibv_wr_complete posts the chain with dpv_post_send_ext and
 * returns its result, ibv_wr_abort drops it. An error found while building
 * (batch full, too many SGEs or inline bytes) is returned by ibv_wr_complete.
 * ibv_wr_atomic_write keeps its 8 bytes in the batch (one word per WR) and
 * posts them inline; dpv_wr_flush (rdma-core 45's ibv_wr_flush, in the slot
 * after struct ibv_qp_ex) posts a DPV_WR_FLUSH through dpv_post_send_ext.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dpv_verbs.h"
#include "dpverbs.h"

struct dpv_wr_batch {
	struct ibv_send_wr *wrs;
	struct ibv_sge *sges;     /* max_send_sge per WR */
	uint8_t *inl;             /* max_inline_data per WR */
	uint64_t *aw;             /* ATOMIC WRITE data, one word per WR */
	uint32_t cap, n, max_sge, max_inl;
	int err;
};

static inline struct dpv_qp *qpx_to(struct ibv_qp_ex *q) { return container_of(q, struct dpv_qp, ibqp); }

static struct ibv_send_wr *cur(struct dpv_wr_batch *b)
{
	return b->n ? &b->wrs[b->n - 1] : NULL;
}

static void add_wr(struct ibv_qp_ex *q, enum ibv_wr_opcode op)
{
	struct dpv_wr_batch *b = qpx_to(q)->wrb;
	if (b->n >= b->cap) {
		b->err = ENOMEM;
		return;
	}
	struct ibv_send_wr *w = &b->wrs[b->n];
	memset(w, 0, sizeof(*w));
	w->wr_id = q->wr_id;
	w->send_flags = q->wr_flags;
	w->opcode = op;
	w->sg_list = &b->sges[(size_t)b->n * b->max_sge];
	b->n++;
}

static void wr_start(struct ibv_qp_ex *q)
{
	struct dpv_wr_batch *b = qpx_to(q)->wrb;
	b->n = 0;
	b->err = 0;
}

static int wr_complete(struct ibv_qp_ex *q)
{
	struct dpv_qp *qp = qpx_to(q);
	struct dpv_wr_batch *b = qp->wrb;
	struct ibv_send_wr *bad = NULL;
	int r = b->err;
	if (!r && b->n) {
		for (uint32_t i = 0; i + 1 < b->n; i++)
			b->wrs[i].next = &b->wrs[i + 1];
		b->wrs[b->n - 1].next = NULL;
		r = dpv_post_send_ext(&q->qp_base, b->wrs, &bad);
	}
	b->n = 0;
	b->err = 0;
	return r;
}

static void wr_abort(struct ibv_qp_ex *q)
{
	struct dpv_wr_batch *b = qpx_to(q)->wrb;
	b->n = 0;
	b->err = 0;
}

static void wr_send(struct ibv_qp_ex *q) { add_wr(q, IBV_WR_SEND); }

static void wr_send_imm(struct ibv_qp_ex *q, __be32 imm)
{
	add_wr(q, IBV_WR_SEND_WITH_IMM);
	struct ibv_send_wr *w = cur(qpx_to(q)->wrb);
	if (w && w->opcode == IBV_WR_SEND_WITH_IMM)
		w->imm_data = imm;
}

static void wr_set_ud_addr(struct ibv_qp_ex *q, struct ibv_ah *ah, uint32_t rqpn, uint32_t rqkey)
{
	struct ibv_send_wr *w = cur(qpx_to(q)->wrb);
	if (!w)
		return;
	w->wr.ud.ah = ah;
	w->wr.ud.remote_qpn = rqpn;
	w->wr.ud.remote_qkey = rqkey;
}

static void wr_set_sge_list(struct ibv_qp_ex *q, size_t n, const struct ibv_sge *sg)
{
	struct dpv_wr_batch *b = qpx_to(q)->wrb;
	struct ibv_send_wr *w = cur(b);
	if (!w)
		return;
	if (n > b->max_sge) {
		b->err = EINVAL;
		return;
	}
	memcpy(w->sg_list, sg, n * sizeof(*sg));
	w->num_sge = (int)n;
}

static void wr_set_sge(struct ibv_qp_ex *q, uint32_t lkey, uint64_t addr, uint32_t length)
{
	struct ibv_sge s = {.addr = addr, .length = length, .lkey = lkey};
	wr_set_sge_list(q, 1, &s);
}

static void wr_set_inline_data_list(struct ibv_qp_ex *q, size_t n, const struct ibv_data_buf *bufs)
{
	struct dpv_wr_batch *b = qpx_to(q)->wrb;
	struct ibv_send_wr *w = cur(b);
	size_t total = 0;
	if (!w)
		return;
	for (size_t i = 0; i < n; i++)
		total += bufs[i].length;
	if (total > b->max_inl) {
		b->err = EINVAL;
		return;
	}
	uint8_t *dst = b->inl + (size_t)(w - b->wrs) * b->max_inl;
	size_t off = 0;
	for (size_t i = 0; i < n; i++) {
		memcpy(dst + off, bufs[i].addr, bufs[i].length);
		off += bufs[i].length;
	}
	w->sg_list[0].addr = (uintptr_t)dst;
	w->sg_list[0].length = (uint32_t)total;
	w->sg_list[0].lkey = 0;
	w->num_sge = total ? 1 : 0;
	w->send_flags |= IBV_SEND_INLINE;
}

static void wr_set_inline_data(struct ibv_qp_ex *q, void *addr, size_t length)
{
	struct ibv_data_buf d = {.addr = addr, .length = length};
	wr_set_inline_data_list(q, 1, &d);
}

static void wr_rdma_write(struct ibv_qp_ex *q, uint32_t rkey, uint64_t addr)
{
	add_wr(q, IBV_WR_RDMA_WRITE);
	struct ibv_send_wr *w = cur(qpx_to(q)->wrb);
	if (w && w->opcode == IBV_WR_RDMA_WRITE) {
		w->wr.rdma.rkey = rkey;
		w->wr.rdma.remote_addr = addr;
	}
}

static void wr_rdma_read(struct ibv_qp_ex *q, uint32_t rkey, uint64_t addr)
{
	add_wr(q, IBV_WR_RDMA_READ);
	struct ibv_send_wr *w = cur(qpx_to(q)->wrb);
	if (w && w->opcode == IBV_WR_RDMA_READ) {
		w->wr.rdma.rkey = rkey;
		w->wr.rdma.remote_addr = addr;
	}
}

static void wr_rdma_imm(struct ibv_qp_ex *q, uint32_t rkey, uint64_t addr, __be32 imm)
{
	add_wr(q, IBV_WR_RDMA_WRITE_WITH_IMM);
	struct ibv_send_wr *w = cur(qpx_to(q)->wrb);
	if (w && w->opcode == IBV_WR_RDMA_WRITE_WITH_IMM) {
		w->wr.rdma.rkey = rkey;
		w->wr.rdma.remote_addr = addr;
		w->imm_data = imm;
	}
}

static void wr_atomic_cas(struct ibv_qp_ex *q, uint32_t rkey, uint64_t addr, uint64_t c, uint64_t sw)
{
	add_wr(q, IBV_WR_ATOMIC_CMP_AND_SWP);
	struct ibv_send_wr *w = cur(qpx_to(q)->wrb);
	if (w && w->opcode == IBV_WR_ATOMIC_CMP_AND_SWP) {
		w->wr.atomic.rkey = rkey;
		w->wr.atomic.remote_addr = addr;
		w->wr.atomic.compare_add = c;
		w->wr.atomic.swap = sw;
	}
}

static void wr_atomic_fa(struct ibv_qp_ex *q, uint32_t rkey, uint64_t addr, uint64_t a)
{
	add_wr(q, IBV_WR_ATOMIC_FETCH_AND_ADD);
	struct ibv_send_wr *w = cur(qpx_to(q)->wrb);
	if (w && w->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		w->wr.atomic.rkey = rkey;
		w->wr.atomic.remote_addr = addr;
		w->wr.atomic.compare_add = a;
	}
}

static void wr_send_inv(struct ibv_qp_ex *q, uint32_t rkey)
{
	add_wr(q, IBV_WR_SEND_WITH_INV);
	struct ibv_send_wr *w = cur(qpx_to(q)->wrb);
	if (w && w->opcode == IBV_WR_SEND_WITH_INV)
		w->invalidate_rkey = rkey;
}

/* A type 2 window bound by the QP (type 1 windows: ibv_bind_mw). */
static void wr_bind_mw(struct ibv_qp_ex *q, struct ibv_mw *mw, uint32_t rkey, const struct ibv_mw_bind_info *i)
{
	add_wr(q, IBV_WR_BIND_MW);
	struct ibv_send_wr *w = cur(qpx_to(q)->wrb);
	if (w && w->opcode == IBV_WR_BIND_MW) {
		w->bind_mw.mw = mw;
		w->bind_mw.rkey = rkey;
		if (i)
			w->bind_mw.bind_info = *i;
	}
}

static void wr_local_inv(struct ibv_qp_ex *q, uint32_t rkey)
{
	add_wr(q, IBV_WR_LOCAL_INV);
	struct ibv_send_wr *w = cur(qpx_to(q)->wrb);
	if (w && w->opcode == IBV_WR_LOCAL_INV)
		w->invalidate_rkey = rkey;
}

/* Ops dpverbs does not have: the WR fails at ibv_wr_complete. */
static void wr_unsupported(struct ibv_qp_ex *q)
{
	qpx_to(q)->wrb->err = EOPNOTSUPP;
}
static void wr_send_tso(struct ibv_qp_ex *q, void *hdr, uint16_t hdr_sz, uint16_t mss) { wr_unsupported(q); }
static void wr_set_xrc_srqn(struct ibv_qp_ex *q, uint32_t srqn)
{
	struct ibv_send_wr *w = cur(qpx_to(q)->wrb);
	if (w)
		w->qp_type.xrc.remote_srqn = srqn;
}
/* annex A19: the 8 bytes at p are written at (rkey, addr) as one atomic
 * store; they are copied now, as rdma-core's providers do */
static void wr_atomic_write(struct ibv_qp_ex *q, uint32_t rkey, uint64_t addr, const void *p)
{
	struct dpv_wr_batch *b = qpx_to(q)->wrb;
	add_wr(q, IBV_WR_ATOMIC_WRITE);
	struct ibv_send_wr *w = cur(b);
	if (!w || w->opcode != IBV_WR_ATOMIC_WRITE)
		return;
	uint64_t *d = &b->aw[w - b->wrs];
	memcpy(d, p, sizeof(*d));
	w->wr.rdma.rkey = rkey;
	w->wr.rdma.remote_addr = addr;
	w->sg_list[0] = (struct ibv_sge){.addr = (uintptr_t)d, .length = sizeof(*d), .lkey = 0};
	w->num_sge = 1;
	w->send_flags |= IBV_SEND_INLINE;
}

static void wr_flush(struct ibv_qp_ex *q, uint32_t rkey, uint64_t addr, size_t len, uint8_t type, uint8_t level)
{
	add_wr(q, (enum ibv_wr_opcode)DPV_WR_FLUSH);
	struct ibv_send_wr *w = cur(qpx_to(q)->wrb);
	if (!w || (int)w->opcode != DPV_WR_FLUSH)
		return;
	w->wr.atomic.rkey = rkey;
	w->wr.atomic.remote_addr = addr;
	/* above 2 GiB: refused by ibv_wr_complete (EINVAL) */
	w->wr.atomic.compare_add = len > DPV_MAX_MSG_SZ ? UINT64_MAX : len;
	w->wr.atomic.swap = (uint64_t)type | (uint64_t)level << 8;
}

uint64_t dpv_qpex_supported_ops(enum ibv_qp_type t)
{
	uint64_t send = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM;
	uint64_t write = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM;
	uint64_t mw = dpv_core_has_mw() ? IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_LOCAL_INV : 0;
	switch (t) {
	case IBV_QPT_UD:
		return send;
	case IBV_QPT_RAW_PACKET:
		return IBV_QP_EX_WITH_SEND; /* a whole frame, as ibv_post_send */
	case IBV_QPT_UC:
		return send | write | mw;
	case IBV_QPT_RC: /* RDMA ATOMIC WRITE and FLUSH (annex A19): RC only, as Linux */
		return send | write | mw | IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
		       IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD | IBV_QP_EX_WITH_SEND_WITH_INV |
		       IBV_QP_EX_WITH_ATOMIC_WRITE | DPV_QP_EX_WITH_FLUSH;
	case IBV_QPT_XRC_SEND:
		return send | write | mw | IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
		       IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD | IBV_QP_EX_WITH_SEND_WITH_INV;
	default:
		return 0;
	}
}

int dpv_qpex_init(struct dpv_qp *qp, uint64_t ops, struct dpv_bufs *bs)
{
	/* one buffer: the batch, then the WRs, the SGEs and the inline bytes */
	uint32_t cap = qp->cap.max_send_wr, max_sge = RTE_MAX(qp->cap.max_send_sge, 1u);
	uint32_t max_inl = qp->cap.max_inline_data;
	size_t off_wrs = RTE_ALIGN_CEIL(sizeof(struct dpv_wr_batch), 64);
	size_t off_sges = off_wrs + (size_t)cap * sizeof(struct ibv_send_wr);
	size_t off_aw = off_sges + (size_t)cap * max_sge * sizeof(struct ibv_sge);
	size_t off_inl = off_aw + (size_t)cap * sizeof(uint64_t);
	size_t total = off_inl + (size_t)cap * RTE_MAX(max_inl, 1u);
	uint8_t *m = dpv_buf_alloc(qp->upd, bs, total, 64, DPV_RES_QP_WRB);
	if (!m)
		return ENOMEM;
	struct dpv_wr_batch *b = (struct dpv_wr_batch *)m;
	b->cap = cap;
	b->max_sge = max_sge;
	b->max_inl = max_inl;
	b->wrs = (struct ibv_send_wr *)(m + off_wrs);
	b->sges = (struct ibv_sge *)(m + off_sges);
	b->inl = m + off_inl;
	b->aw = (uint64_t *)(m + off_aw);
	qp->wrb = b;
	struct ibv_qp_ex *x = &qp->ibqp;
	x->comp_mask = 0;
	x->wr_start = wr_start;
	x->wr_complete = wr_complete;
	x->wr_abort = wr_abort;
	x->wr_send = wr_send;
	x->wr_send_imm = wr_send_imm;
	x->wr_set_ud_addr = wr_set_ud_addr;
	x->wr_set_sge = wr_set_sge;
	x->wr_set_sge_list = wr_set_sge_list;
	x->wr_set_inline_data = wr_set_inline_data;
	x->wr_set_inline_data_list = wr_set_inline_data_list;
	x->wr_rdma_write = wr_rdma_write;
	x->wr_rdma_read = wr_rdma_read;
	x->wr_rdma_write_imm = wr_rdma_imm;
	x->wr_atomic_cmp_swp = wr_atomic_cas;
	x->wr_atomic_fetch_add = wr_atomic_fa;
	x->wr_bind_mw = wr_bind_mw;
	x->wr_local_inv = wr_local_inv;
	x->wr_send_inv = wr_send_inv;
	x->wr_send_tso = wr_send_tso;
	x->wr_set_xrc_srqn = wr_set_xrc_srqn;
	x->wr_atomic_write = wr_atomic_write;
	qp->wr_flush = wr_flush;
	return 0;
}

