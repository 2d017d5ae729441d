/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Completion queues: the consumer side of a CQ ring (dpv_queue.h). The
 * engine writes CQEs and publishes the producer index; ibv_poll_cq reads
 * them (and in run-to-completion mode first lets the engine make progress
 * on this thread), then publishes the consumer index. A polled send CQE
 * frees the send-queue slots up to the WQE it names.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rte_cycles.h>

#include "dpv_verbs.h"

/* The consumer lock: not for a thread domain's CQ, nor for one created
 * with IBV_CREATE_CQ_ATTR_SINGLE_THREADED (as mlx5's CQ flag
 * MLX5_CQ_FLAGS_SINGLE_THREADED): the application promises that one thread
 * at a time polls it, resizes it, and resets or destroys its QPs. The
 * engine does not rely on it: it produces under its own lock (the
 * driver's), and resize_cq needs only the consumer index to stay still,
 * which that promise gives. */
static inline void cq_lock(struct dpv_cq *cq)
{
	if (!cq->nolock)
		rte_spinlock_lock(&cq->lock);
}
static inline void cq_unlock(struct dpv_cq *cq)
{
	if (!cq->nolock)
		rte_spinlock_unlock(&cq->lock);
}

static inline struct dpv_cqe *cqe_at(struct dpv_cq *cq, uint32_t i)
{
	return dpv_ring_entry(cq->ring, i);
}

static inline uint32_t cq_pi(struct dpv_cq *cq)
{
	return atomic_load_explicit(&cq->ring->pi, memory_order_acquire);
}

static inline void cq_publish_ci(struct dpv_cq *cq)
{
	atomic_store_explicit(&cq->ring->ci, cq->ci, memory_order_release);
}

/* Ring size for a capacity of cqe: one slot stays empty (pi - ci < size). */
static uint32_t ring_size(int cqe)
{
	return rte_align32pow2((uint32_t)cqe + 1);
}

static struct dpv_ring_hdr *ring_new(struct dpv_cq *cq, struct dpv_pd *upd, uint32_t size)
{
	struct dpv_ring_hdr *r = dpv_buf_alloc(upd, &cq->bufs, dpv_ring_bytes(size, sizeof(struct dpv_cqe)),
					       DPV_MIN_CQE_ALIGN, DPV_RES_CQ_RING);
	if (r)
		dpv_ring_init(r, DPV_RING_CQ, size, sizeof(struct dpv_cqe));
	return r;
}

static struct dpv_cq *cq_new(struct ibv_context *context, int cqe, void *cq_context,
			     struct ibv_comp_channel *channel, int comp_vector, struct dpv_pd *upd,
			     bool timestamps, uint32_t flags)
{
	struct dpv_core *core = dpv_core_peek();
	if (!context || !core || cqe < 1 || (uint32_t)cqe > core->params.max_cqe || comp_vector < 0 ||
	    comp_vector >= context->num_comp_vectors || (channel && channel->context != context)) {
		errno = EINVAL;
		return NULL;
	}
	struct dpv_device *d = to_dctx(context)->dev;
	struct dpv_bufs bs = {.dev = d};
	struct dpv_cq *cq = dpv_buf_alloc(upd, &bs, sizeof(*cq), 64, DPV_RES_CQ);
	if (!cq)
		return NULL;
	cq->bufs = bs;
	uint32_t size = ring_size(cqe);
	cq->ring = ring_new(cq, upd, size);
	if (!cq->ring) {
		int e = errno == EIO ? EIO : ENOMEM; /* EIO: shared mode's daemon is gone */
		dpv_bufs_free_all(&cq->bufs);
		errno = e;
		return NULL;
	}
	int pe = dpv_pool_add(DPV_OBJ_CQ, cq, &cq->handle);
	if (pe != 0) {
		dpv_bufs_free_all(&cq->bufs);
		errno = dpv_pool_errno(pe); /* limits.max_cq CQs exist */
		return NULL;
	}
	cq->upd = upd;
	cq->lockless = upd && upd->td;
	cq->single_threaded = flags & IBV_CREATE_CQ_ATTR_SINGLE_THREADED;
	cq->nolock = cq->lockless || cq->single_threaded;
	struct dpv_cq_cfg cfg = {.handle = cq->handle, .ring = cq->ring, .ring_size = size, .td = cq->lockless ? upd->td->drv : NULL,
				 .timestamps = timestamps,
				 .ignore_overrun = (flags & IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN) != 0,
				 .ctx = to_dctx(context)->drv_ctx,
				 .cookie = (uintptr_t)dcq_ib(cq), .chan_fd = channel ? to_dch(channel)->wfd : -1};
	cq->drv = dpv_ops(d)->create_cq(d->drv_dev, &cfg);
	if (!cq->drv) {
		int e = errno ? errno : ENOMEM;
		dpv_pool_del(DPV_OBJ_CQ, cq->handle, cq);
		dpv_bufs_free_all(&cq->bufs);
		errno = e;
		return NULL;
	}
	if (upd)
		atomic_fetch_add(&upd->users, 1);
	cq->cqe = (int)size - 1;
	rte_spinlock_init(&cq->lock);
	struct ibv_cq *ib = dcq_ib(cq);
	ib->context = context;
	ib->channel = channel;
	ib->cq_context = cq_context;
	ib->cqe = cq->cqe;
	ib->handle = cq->handle;
	pthread_mutex_init(&ib->mutex, NULL);
	pthread_cond_init(&ib->cond, NULL);
	if (channel) {
		cq->chan = to_dch(channel);
		atomic_fetch_add(&cq->chan->users, 1);
	}
	return cq;
}

/**
 * ibv_create_cq: a CQ with at least cqe entries. RETURN VALUE: the CQ, or
 * NULL with errno EINVAL (cqe < 1 or above max_cqe, bad comp_vector, channel
 * of another context) or ENOMEM (limits.max_cq CQs exist, no memory).
 */
DPV_EXPORT struct ibv_cq *ibv_create_cq(struct ibv_context *context, int cqe, void *cq_context,
					struct ibv_comp_channel *channel, int comp_vector)
{
	struct dpv_cq *cq = cq_new(context, cqe, cq_context, channel, comp_vector, NULL, false, 0);
	return cq ? dcq_ib(cq) : NULL;
}

/** ibv_destroy_cq: 0, EINVAL for NULL, EBUSY while a QP or SRQ uses it. */
DPV_EXPORT int ibv_destroy_cq(struct ibv_cq *ibcq)
{
	if (!ibcq)
		return EINVAL;
	struct dpv_cq *cq = to_dcq(ibcq);
	if (atomic_load(&cq->users) > 0)
		return EBUSY;
	dpv_pool_del(DPV_OBJ_CQ, cq->handle, cq);
	ctx_ops(ibcq->context)->destroy_cq(cq->drv);
	if (cq->chan)
		atomic_fetch_sub(&cq->chan->users, 1);
	pthread_mutex_destroy(&ibcq->mutex);
	pthread_cond_destroy(&ibcq->cond);
	if (cq->upd)
		atomic_fetch_sub(&cq->upd->users, 1);
	dpv_bufs_free_all(&cq->bufs);
	return 0;
}

/**
 * ibv_resize_cq: resize to at least cqe entries, keeping the completions
 * not polled yet. RETURN VALUE: 0, or EINVAL (NULL, cqe < 1 or above
 * max_cqe, or fewer entries than completions waiting), ENOMEM.
 */
DPV_EXPORT int ibv_resize_cq(struct ibv_cq *ibcq, int cqe)
{
	struct dpv_core *core = dpv_core_peek();
	if (!ibcq || !core || cqe < 1 || (uint32_t)cqe > core->params.max_cqe)
		return EINVAL;
	struct dpv_cq *cq = to_dcq(ibcq);
	struct dpv_ring_hdr *ring = ring_new(cq, cq->upd, ring_size(cqe));
	if (!ring)
		return ENOMEM;
	cq_lock(cq);
	int r = -ctx_ops(ibcq->context)->resize_cq(cq->drv, ring, ring->size);
	if (r) {
		cq_unlock(cq);
		dpv_buf_free(&cq->bufs, ring);
		return r;
	}
	struct dpv_ring_hdr *old = cq->ring;
	cq->ring = ring;
	cq->ci = atomic_load_explicit(&ring->ci, memory_order_acquire);
	cq->cqe = (int)ring->size - 1;
	ibcq->cqe = cq->cqe;
	cq_unlock(cq);
	dpv_buf_free(&cq->bufs, old);
	return 0;
}

/* Remove the completions of QP qpn not consumed yet (a QP moved to RESET or
 * destroyed, as mlx5 does): the entries of other QPs are moved towards the
 * producer end and the consumer index skips the gap, so an engine writing
 * new CQEs at pi meanwhile is not disturbed. The QP writes no more CQEs. */
void dpv_cq_clean(struct dpv_cq *cq, uint32_t qpn)
{
	cq_lock(cq);
	uint32_t pi = cq_pi(cq), w = pi;
	for (uint32_t r = pi; r != cq->ci; r--) {
		struct dpv_cqe *e = cqe_at(cq, r - 1);
		if (e->qp_num == qpn)
			continue;
		w--;
		if (w != r - 1)
			*cqe_at(cq, w) = *e;
	}
	cq->ci = w;
	cq_publish_ci(cq);
	cq_unlock(cq);
}

void dpv_cqe_retire(const struct dpv_cqe *e)
{
	if (e->flags & DPV_CQE_F_TM_FREE) {
		dpv_tm_cqe_free(e); /* a tag's last completion: its handle is free */
		return;
	}
	struct dpv_qp *qp = dpv_pool_get(DPV_OBJ_QP, e->qp_num);
	if (qp)
		atomic_store_explicit(&qp->sq_retired, e->wqe_index + 1, memory_order_release);
}

int dpv_cq_progress(struct dpv_cq *cq)
{
	if (cq->ci == cq_pi(cq))
		return ctx_ops(dcq_ib(cq)->context)->progress(cq->drv);
	return 0;
}

static void cqe_to_wc(const struct dpv_cqe *e, struct ibv_wc *wc)
{
	wc->wr_id = e->wr_id;
	wc->status = (enum ibv_wc_status)e->status;
	wc->opcode = (enum ibv_wc_opcode)e->opcode;
	wc->vendor_err = e->vendor_err;
	wc->byte_len = e->byte_len;
	wc->imm_data = e->imm_inv; /* imm_data and invalidated_rkey share a union */
	wc->qp_num = e->qp_num;
	wc->src_qp = e->src_qp;
	wc->wc_flags = e->wc_flags;
	wc->pkey_index = e->pkey_index;
	wc->slid = e->slid;
	wc->sl = e->sl;
	wc->dlid_path_bits = e->dlid_path_bits;
}

int dpv_poll_cq(struct ibv_cq *ibcq, int n, struct ibv_wc *wc)
{
	struct dpv_cq *cq = to_dcq(ibcq);
	int got = 0;
	if (n < 0)
		return -EINVAL;
	/* run to completion: the caller's thread drives the engine (a
	 * negative value: the engine is gone, shared mode's daemon) */
	int pr = dpv_cq_progress(cq);
	if (cq->ci == cq_pi(cq))
		return pr < 0 ? pr : 0;
	cq_lock(cq);
	uint32_t pi = cq_pi(cq);
	while (got < n && cq->ci != pi) {
		const struct dpv_cqe *e = cqe_at(cq, cq->ci);
		cqe_to_wc(e, &wc[got]);
		if (e->flags & (DPV_CQE_F_SQ | DPV_CQE_F_TM_FREE))
			dpv_cqe_retire(e);
		cq->ci++;
		got++;
	}
	cq_publish_ci(cq);
	cq_unlock(cq);
	return got;
}

int dpv_req_notify_cq(struct ibv_cq *ibcq, int solicited_only)
{
	struct dpv_cq *cq = to_dcq(ibcq);
	dpv_cq_ring_arm(cq->ring, solicited_only ? DPV_CQ_ARM_SOL : DPV_CQ_ARM_NEXT);
	return 0;
}

/* ---- extended CQ: ibv_start_poll / ibv_next_poll / ibv_end_poll ---- */

static inline struct dpv_cq *cqx(struct ibv_cq_ex *c) { return container_of(c, struct dpv_cq, ibcq); }

/* The CQE at poll_ci becomes the current one. A send CQE frees its SQ slot
 * (and the earlier ones) now, not at ibv_end_poll, as mlx5 frees them when
 * it parses the CQE: a program may post between ibv_start_poll and
 * ibv_end_poll into a send queue this CQE makes room in (ibv_rc_pingpong -t
 * posts its next SEND from inside the poll, with one send WR). */
static void cqx_load(struct dpv_cq *cq)
{
	cq->cur = cqe_at(cq, cq->poll_ci);
	cq->ibcq.status = (enum ibv_wc_status)cq->cur->status;
	cq->ibcq.wr_id = cq->cur->wr_id;
	if ((cq->cur->flags & (DPV_CQE_F_SQ | DPV_CQE_F_TM_FREE)) == DPV_CQE_F_SQ)
		dpv_cqe_retire(cq->cur);
}

static int cqx_start_poll(struct ibv_cq_ex *c, struct ibv_poll_cq_attr *attr)
{
	struct dpv_cq *cq = cqx(c);
	if (attr && attr->comp_mask)
		return EINVAL;
	int pr = dpv_cq_progress(cq);
	cq_lock(cq);
	if (cq->ci == cq_pi(cq)) {
		cq_unlock(cq);
		return pr < 0 ? -pr : ENOENT; /* the lock is not held after an error */
	}
	cq->poll_ci = cq->ci;
	cqx_load(cq);
	return 0;
}

static int cqx_next_poll(struct ibv_cq_ex *c)
{
	struct dpv_cq *cq = cqx(c);
	if (cq->poll_ci + 1 == cq_pi(cq))
		return ENOENT;
	cq->poll_ci++;
	cqx_load(cq);
	return 0;
}

static void cqx_end_poll(struct ibv_cq_ex *c)
{
	struct dpv_cq *cq = cqx(c);
	/* send CQEs freed their SQ slots in cqx_load; a tag's last
	 * completion frees its handle once polled */
	for (uint32_t i = cq->ci; i != cq->poll_ci + 1; i++)
		if (cqe_at(cq, i)->flags & DPV_CQE_F_TM_FREE)
			dpv_cqe_retire(cqe_at(cq, i));
	cq->ci = cq->poll_ci + 1;
	cq->cur = NULL;
	cq_publish_ci(cq);
	cq_unlock(cq);
}

static enum ibv_wc_opcode cqx_opcode(struct ibv_cq_ex *c) { return (enum ibv_wc_opcode)cqx(c)->cur->opcode; }
static uint32_t cqx_vendor_err(struct ibv_cq_ex *c) { return cqx(c)->cur->vendor_err; }
static uint32_t cqx_byte_len(struct ibv_cq_ex *c) { return cqx(c)->cur->byte_len; }
static __be32 cqx_imm_data(struct ibv_cq_ex *c) { return cqx(c)->cur->imm_inv; }
static uint32_t cqx_qp_num(struct ibv_cq_ex *c) { return cqx(c)->cur->qp_num; }
static uint32_t cqx_src_qp(struct ibv_cq_ex *c) { return cqx(c)->cur->src_qp; }
static unsigned int cqx_wc_flags(struct ibv_cq_ex *c) { return cqx(c)->cur->wc_flags; }
static uint32_t cqx_slid(struct ibv_cq_ex *c) { return cqx(c)->cur->slid; }
static uint8_t cqx_sl(struct ibv_cq_ex *c) { return cqx(c)->cur->sl; }
static uint8_t cqx_dlid_path_bits(struct ibv_cq_ex *c) { return cqx(c)->cur->dlid_path_bits; }
static uint64_t cqx_completion_ts(struct ibv_cq_ex *c) { return cqx(c)->cur->ts; }
static uint32_t cqx_flow_tag(struct ibv_cq_ex *c) { return cqx(c)->cur->flow_tag; }

static void cqx_tm_info(struct ibv_cq_ex *c, struct ibv_wc_tm_info *tm)
{
	tm->tag = cqx(c)->cur->tm_tag;
	tm->priv = cqx(c)->cur->tm_priv;
}

/* the TSC of the completion as CLOCK_REALTIME nanoseconds */
static uint64_t cqx_completion_wallclock_ns(struct ibv_cq_ex *c) { return dpv_tsc_realtime_ns(cqx(c)->cur->ts); }

#define DPV_CQ_SUP_WC_FLAGS                                                                      \
	(IBV_WC_STANDARD_FLAGS | IBV_WC_EX_WITH_COMPLETION_TIMESTAMP |                           \
	 IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK | IBV_WC_EX_WITH_TM_INFO | IBV_WC_EX_WITH_FLOW_TAG)

/**
 * create_cq_ex (ibv_create_cq_ex): an extended CQ read with ibv_start_poll
 * and the ibv_wc_read_* accessors. wc_flags may hold the standard fields,
 * the tag matching information (ibv_wc_read_tm_info), the flow tag of a raw
 * packet QP's steering rule (ibv_wc_read_flow_tag, ibv_create_flow) and both
 * completion timestamps: IBV_WC_EX_WITH_COMPLETION_TIMESTAMP in TSC ticks taken by the
 * engine when it writes the CQE (hca_core_clock gives their rate,
 * completion_timestamp_mask their width, ibv_query_rt_values_ex the clock
 * now), IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK the same instant as
 * CLOCK_REALTIME nanoseconds (dpv_tsc_realtime_ns).
 * RETURN VALUE: the CQ, or NULL with errno: EINVAL (as ibv_create_cq, unknown
 * comp_mask or flags, IBV_CQ_INIT_ATTR_MASK_PD with something else than a
 * parent domain of this context), EOPNOTSUPP (wc_flags dpverbs cannot
 * provide: CVLAN), ENOMEM.
 */
struct ibv_cq_ex *dpv_create_cq_ex(struct ibv_context *c, struct ibv_cq_init_attr_ex *a)
{
	if (!a || (a->comp_mask & ~(uint32_t)(IBV_CQ_INIT_ATTR_MASK_FLAGS | IBV_CQ_INIT_ATTR_MASK_PD))) {
		errno = EINVAL;
		return NULL;
	}
	uint32_t flags = (a->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) ? a->flags : 0;
	if (flags & ~(uint32_t)(IBV_CREATE_CQ_ATTR_SINGLE_THREADED | IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN)) {
		errno = EINVAL;
		return NULL;
	}
	if (a->wc_flags & ~(uint64_t)DPV_CQ_SUP_WC_FLAGS) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	struct dpv_pd *upd = NULL;
	if (a->comp_mask & IBV_CQ_INIT_ATTR_MASK_PD) {
		/* must be a parent domain (as mlx5 requires) */
		if (!a->parent_domain || a->parent_domain->context != c || !to_dpd(a->parent_domain)->parent) {
			errno = EINVAL;
			return NULL;
		}
		upd = to_dpd(a->parent_domain);
	}
	bool ts = a->wc_flags & (IBV_WC_EX_WITH_COMPLETION_TIMESTAMP | IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK);
	struct dpv_cq *cq = cq_new(c, (int)a->cqe, a->cq_context, a->channel, (int)a->comp_vector, upd, ts, flags);
	if (!cq)
		return NULL;
	struct ibv_cq_ex *x = &cq->ibcq;
	cq->wc_flags = a->wc_flags;
	x->comp_mask = 0;
	x->start_poll = cqx_start_poll;
	x->next_poll = cqx_next_poll;
	x->end_poll = cqx_end_poll;
	x->read_opcode = cqx_opcode;
	x->read_vendor_err = cqx_vendor_err;
	x->read_byte_len = cqx_byte_len;
	x->read_imm_data = cqx_imm_data;
	x->read_qp_num = cqx_qp_num;
	x->read_src_qp = cqx_src_qp;
	x->read_wc_flags = cqx_wc_flags;
	x->read_slid = cqx_slid;
	x->read_sl = cqx_sl;
	x->read_dlid_path_bits = cqx_dlid_path_bits;
	x->read_completion_ts = cqx_completion_ts;
	x->read_completion_wallclock_ns = cqx_completion_wallclock_ns;
	x->read_tm_info = cqx_tm_info;
	x->read_flow_tag = cqx_flow_tag;
	return x;
}
