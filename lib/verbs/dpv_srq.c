/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Shared receive queues: basic SRQs (ibv_create_srq) and XRC SRQs
 * (ibv_create_srq_ex with IBV_SRQT_XRC). An SRQ is a ring of receive WQEs
 * (dpv_queue.h) the façade produces into and the engine of every QP using
 * it consumes; its number (ibv_get_srq_num, the XRCETH) is its pool index.
 * The limit (ibv_modify_srq IBV_SRQ_LIMIT) is armed in the ring header and
 * disarmed by the engine when it raises IBV_EVENT_SRQ_LIMIT_REACHED.
 */
#include <errno.h>
#include <stdlib.h>

#include "dpv_verbs.h"

static struct dpv_srq *srq_new(struct ibv_pd *pd, struct ibv_srq_init_attr *attr, enum ibv_srq_type type,
			       struct dpv_xrcd *xrcd, struct dpv_cq *cq, const struct ibv_tm_cap *tm)
{
	struct dpv_core *core = dpv_core_peek();
	if (!pd || !attr || !core || !attr->attr.max_wr || attr->attr.max_wr > core->params.max_srq_wr ||
	    attr->attr.max_sge > core->params.max_srq_sge || attr->attr.srq_limit > attr->attr.max_wr) {
		errno = EINVAL;
		return NULL;
	}
	struct dpv_device *d = to_dctx(pd->context)->dev;
	struct dpv_pd *upd = to_dpd(pd);
	struct dpv_bufs bs = {.dev = d};
	struct dpv_srq *s = dpv_buf_alloc(upd, &bs, sizeof(*s), 64, DPV_RES_SRQ);
	if (!s)
		return NULL;
	s->bufs = bs;
	s->max_wr = rte_align32pow2(attr->attr.max_wr);
	s->max_sge = RTE_MAX(attr->attr.max_sge, 1u);
	uint32_t stride = rte_align32pow2((uint32_t)(sizeof(struct dpv_recv_wqe) + s->max_sge * sizeof(struct dpv_sge)));
	uint32_t tm_ops = tm ? rte_align32pow2(tm->max_ops) : 0;
	size_t bytes = tm ? dpv_tm_area_off(s->max_wr, stride) + dpv_tm_area_bytes(tm_ops, tm->max_num_tags)
			  : dpv_ring_bytes(s->max_wr, stride);
	s->ring = dpv_buf_alloc(upd, &s->bufs, bytes, 64, DPV_RES_SRQ_RING);
	int pe = s->ring ? dpv_pool_add(DPV_OBJ_SRQ, s, &s->srqn) : -(errno == EIO ? EIO : ENOMEM);
	if (pe != 0) {
		dpv_bufs_free_all(&s->bufs);
		errno = dpv_pool_errno(pe); /* no memory, or limits.max_srq SRQs exist */
		return NULL;
	}
	dpv_ring_init(s->ring, DPV_RING_SRQ, s->max_wr, stride);
	atomic_store(&s->ring->limit, attr->attr.srq_limit);
	if (tm) {
		s->tm = (struct dpv_tm_hdr *)((uint8_t *)s->ring + dpv_tm_area_off(s->max_wr, stride));
		dpv_tm_init(s->tm, tm_ops, tm->max_num_tags);
		s->tm_ops = tm_ops;
		s->tm_tags = tm->max_num_tags;
	}
	s->upd = upd;
	s->pd = upd->base;
	s->type = type;
	s->xrcd = xrcd;
	s->cq = cq;
	rte_spinlock_init(&s->lock);
	struct dpv_srq_cfg cfg = {.srqn = s->srqn, .ring = s->ring, .ring_size = s->max_wr, .ring_stride = stride,
				  .pd = s->pd->handle,
				  .xrcd = xrcd ? xrcd->dom->num : 0, .cq = cq ? cq->drv : NULL,
				  .max_sge = s->max_sge, .ctx = to_dctx(pd->context)->drv_ctx,
				  .cookie = (uintptr_t)&s->ibsrq, .tm_ops = s->tm_ops, .tm_tags = s->tm_tags};
	s->drv = dpv_ops(d)->create_srq(d->drv_dev, &cfg);
	if (!s->drv) {
		int e = errno ? errno : ENOMEM;
		dpv_pool_del(DPV_OBJ_SRQ, s->srqn, s);
		dpv_bufs_free_all(&s->bufs);
		errno = e;
		return NULL;
	}
	s->ibsrq.context = pd->context;
	s->ibsrq.srq_context = attr->srq_context;
	s->ibsrq.pd = pd;
	s->ibsrq.handle = s->srqn;
	pthread_mutex_init(&s->ibsrq.mutex, NULL);
	pthread_cond_init(&s->ibsrq.cond, NULL);
	attr->attr.max_wr = s->max_wr;
	attr->attr.max_sge = s->max_sge;
	atomic_fetch_add(&upd->users, 1);
	if (xrcd)
		atomic_fetch_add(&xrcd->users, 1);
	if (cq)
		atomic_fetch_add(&cq->users, 1);
	return s;
}

/**
 * ibv_create_srq: RETURN VALUE: the SRQ, or NULL with errno EINVAL (NULL
 * arguments, max_wr 0, max_wr or max_sge above the device limits,
 * srq_limit > max_wr) or ENOMEM (limits.max_srq SRQs exist, no memory).
 */
DPV_EXPORT struct ibv_srq *ibv_create_srq(struct ibv_pd *pd, struct ibv_srq_init_attr *attr)
{
	struct dpv_srq *s = srq_new(pd, attr, IBV_SRQT_BASIC, NULL, NULL, NULL);
	return s ? &s->ibsrq : NULL;
}

/**
 * create_srq_ex (ibv_create_srq_ex): basic SRQs (IBV_SRQT_BASIC, needs PD),
 * XRC SRQs (IBV_SRQT_XRC, needs PD, XRCD and CQ) and tag matching SRQs
 * (IBV_SRQT_TM, needs PD, CQ and IBV_SRQ_INIT_ATTR_TM: dpv_srq_tm.c).
 * RETURN VALUE: the SRQ, or NULL with errno: EINVAL (missing or unknown
 * comp_mask fields, objects of another context, limits as ibv_create_srq,
 * tm_cap outside the device's tm_caps), EOPNOTSUPP (tag matching with a
 * driver that has none: null), ENOMEM.
 */
struct ibv_srq *dpv_create_srq_ex(struct ibv_context *context, struct ibv_srq_init_attr_ex *a)
{
	const uint32_t known = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_XRCD |
			       IBV_SRQ_INIT_ATTR_CQ | IBV_SRQ_INIT_ATTR_TM;
	if (!context || !a || !(a->comp_mask & IBV_SRQ_INIT_ATTR_PD) || !a->pd || a->pd->context != context) {
		errno = EINVAL;
		return NULL;
	}
	enum ibv_srq_type t = (a->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) ? a->srq_type : IBV_SRQT_BASIC;
	if (t == IBV_SRQT_TM && !dpv_core_has_tm()) {
		errno = EOPNOTSUPP; /* a driver without tag matching (null) */
		return NULL;
	}
	if ((a->comp_mask & ~known) || (t != IBV_SRQT_BASIC && t != IBV_SRQT_XRC && t != IBV_SRQT_TM) ||
	    (t == IBV_SRQT_TM && !dpv_srq_tm_attr_ok(context, a))) {
		errno = EINVAL;
		return NULL;
	}
	if (t == IBV_SRQT_XRC &&
	    (!(a->comp_mask & IBV_SRQ_INIT_ATTR_XRCD) || !(a->comp_mask & IBV_SRQ_INIT_ATTR_CQ) || !a->xrcd ||
	     !a->cq || a->xrcd->context != context || a->cq->context != context)) {
		errno = EINVAL;
		return NULL;
	}
	struct ibv_srq_init_attr ia = {.srq_context = a->srq_context, .attr = a->attr};
	struct dpv_srq *s = srq_new(a->pd, &ia, t, t == IBV_SRQT_XRC ? to_dxrcd(a->xrcd) : NULL,
				    t != IBV_SRQT_BASIC ? to_dcq(a->cq) : NULL, t == IBV_SRQT_TM ? &a->tm_cap : NULL);
	if (!s)
		return NULL;
	a->attr = ia.attr;
	return &s->ibsrq;
}

/** get_srq_num (ibv_get_srq_num): 0 and the SRQ number, or EINVAL. */
int dpv_get_srq_num(struct ibv_srq *srq, uint32_t *srq_num)
{
	if (!srq || !srq_num)
		return EINVAL;
	*srq_num = to_dsrq(srq)->srqn;
	return 0;
}

/** ibv_modify_srq: 0, or EINVAL (bad mask, resize not supported, limit > max_wr). */
DPV_EXPORT int ibv_modify_srq(struct ibv_srq *ib, struct ibv_srq_attr *attr, int mask)
{
	if (!ib || !attr)
		return EINVAL;
	struct dpv_srq *s = to_dsrq(ib);
	if (mask & ~(IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT) || (mask & IBV_SRQ_MAX_WR))
		return EINVAL;
	if ((mask & IBV_SRQ_LIMIT) && attr->srq_limit > s->max_wr)
		return EINVAL;
	if (mask & IBV_SRQ_LIMIT)
		atomic_store_explicit(&s->ring->limit, attr->srq_limit, memory_order_release);
	return 0;
}

/** ibv_query_srq: 0 and the attributes, or EINVAL. */
DPV_EXPORT int ibv_query_srq(struct ibv_srq *ib, struct ibv_srq_attr *attr)
{
	if (!ib || !attr)
		return EINVAL;
	struct dpv_srq *s = to_dsrq(ib);
	attr->max_wr = s->max_wr;
	attr->max_sge = s->max_sge;
	attr->srq_limit = atomic_load_explicit(&s->ring->limit, memory_order_acquire);
	return 0;
}

/** ibv_destroy_srq: 0, EINVAL for NULL, EBUSY while QPs use it. */
DPV_EXPORT int ibv_destroy_srq(struct ibv_srq *ib)
{
	if (!ib)
		return EINVAL;
	struct dpv_srq *s = to_dsrq(ib);
	if (atomic_load(&s->users) > 0)
		return EBUSY;
	dpv_pool_del(DPV_OBJ_SRQ, s->srqn, s);
	ctx_ops(ib->context)->destroy_srq(s->drv);
	if (s->xrcd)
		atomic_fetch_sub(&s->xrcd->users, 1);
	if (s->cq)
		atomic_fetch_sub(&s->cq->users, 1);
	atomic_fetch_sub(&s->upd->users, 1);
	pthread_mutex_destroy(&ib->mutex);
	pthread_cond_destroy(&ib->cond);
	dpv_bufs_free_all(&s->bufs);
	return 0;
}
