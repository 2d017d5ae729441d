/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Queue pairs: creation with capability checks, the rings (SQ, RQ) and the
 * driver's engine QP, destruction and queries. The state machine is in
 * dpv_qp_state.c, posting in dpv_post.c.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dpv_verbs.h"

/* Bytes of a send WQE slot: the control part and the larger of the SGEs and
 * the inline data, rounded up to a power of two (dpv_queue.h). */
static uint32_t sq_stride(const struct ibv_qp_cap *cap)
{
	uint32_t data = RTE_MAX(RTE_MAX(cap->max_send_sge, 1u) * (uint32_t)sizeof(struct dpv_sge),
				cap->max_inline_data);
	return rte_align32pow2((uint32_t)sizeof(struct dpv_send_wqe) + data);
}

static uint32_t rq_stride(uint32_t max_sge)
{
	return rte_align32pow2((uint32_t)(sizeof(struct dpv_recv_wqe) + RTE_MAX(max_sge, 1u) * sizeof(struct dpv_sge)));
}

/* ibv_create_qp's capability check, which dpverbsd makes again on the
 * QPs applications create (dpv_host.h) */
bool dpv_qp_cap_ok(const struct dpv_params *p, const struct ibv_qp_cap *cap, bool no_rq)
{
	if (cap->max_send_wr > p->max_qp_wr || cap->max_send_sge > p->max_sge ||
	    cap->max_inline_data > p->max_inline)
		return false;
	return no_rq || (cap->max_recv_wr <= p->max_qp_wr && cap->max_recv_sge <= p->max_sge);
}

static bool qp_type_supported(enum ibv_qp_type t)
{
	return t == IBV_QPT_UD || t == IBV_QPT_RC || t == IBV_QPT_UC || t == IBV_QPT_XRC_SEND ||
	       t == IBV_QPT_XRC_RECV || (t == IBV_QPT_RAW_PACKET && dpv_core_has_raw());
}

/* The TD a CQ belongs to (NULL if none). */
static struct dpv_td *cq_td(const struct dpv_cq *cq)
{
	return cq && cq->lockless ? cq->upd->td : NULL;
}

/* A raw packet QP that spreads what it receives over receive WQs (no queues of its own). */
static bool is_rss(const struct ibv_qp_init_attr_ex *a)
{
	return a->comp_mask & (IBV_QP_INIT_ATTR_IND_TABLE | IBV_QP_INIT_ATTR_RX_HASH);
}

static int check_create(struct ibv_context *context, struct ibv_qp_init_attr_ex *a)
{
	uint32_t known = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_XRCD | IBV_QP_INIT_ATTR_CREATE_FLAGS |
			 IBV_QP_INIT_ATTR_SEND_OPS_FLAGS | IBV_QP_INIT_ATTR_IND_TABLE | IBV_QP_INIT_ATTR_RX_HASH;
	if (a->comp_mask & ~known)
		return EOPNOTSUPP;
	if ((a->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) && a->create_flags)
		return EOPNOTSUPP; /* no creation flags are supported */
	enum ibv_qp_type t = a->qp_type;
	if (!qp_type_supported(t))
		return EOPNOTSUPP; /* no RD; RAW_PACKET only where the driver has ports */
	bool rss = is_rss(a);
	if (rss && t != IBV_QPT_RAW_PACKET)
		return EINVAL; /* receive-side scaling is a raw packet QP's */
	if (t == IBV_QPT_XRC_RECV) {
		/* the target lives in an XRC domain: no PD, CQs or queues */
		if (!(a->comp_mask & IBV_QP_INIT_ATTR_XRCD) || !a->xrcd || a->xrcd->context != context)
			return EINVAL;
	} else if (!(a->comp_mask & IBV_QP_INIT_ATTR_PD) || !a->pd || a->pd->context != context) {
		return EINVAL;
	}
	if ((a->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) && (a->send_ops_flags & ~dpv_qpex_supported_ops(t)))
		return EOPNOTSUPP;
	bool has_sq = t != IBV_QPT_XRC_RECV && !rss, has_rq = t != IBV_QPT_XRC_RECV && t != IBV_QPT_XRC_SEND && !rss;
	if ((has_sq && (!a->send_cq || a->send_cq->context != context)) ||
	    (has_rq && (!a->recv_cq || a->recv_cq->context != context)) ||
	    (has_rq && a->srq && a->srq->context != context))
		return EINVAL;
	/* a thread domain's QP and its CQs go together (one thread uses them) */
	struct dpv_td *want = t != IBV_QPT_XRC_RECV ? to_dpd(a->pd)->td : NULL;
	if (want && t == IBV_QPT_RAW_PACKET)
		return EOPNOTSUPP; /* frames reach a raw QP from any context's thread */
	if ((has_sq && cq_td(to_dcq(a->send_cq)) != want) || (has_rq && cq_td(to_dcq(a->recv_cq)) != want))
		return EINVAL;
	if (!has_rq) {
		a->srq = NULL;
		a->cap.max_recv_wr = a->cap.max_recv_sge = 0;
	}
	if (!has_sq)
		a->cap.max_send_wr = a->cap.max_send_sge = a->cap.max_inline_data = 0;
	return dpv_qp_cap_ok(&dpv_core_peek()->params, &a->cap, a->srq != NULL || !has_rq) ? 0 : EINVAL;
}

/* What the QP really provides (>= what was asked). */
static struct ibv_qp_cap final_cap(const struct ibv_qp_init_attr_ex *a, const struct dpv_params *p)
{
	struct ibv_qp_cap cap = a->cap;
	bool has_sq = a->qp_type != IBV_QPT_XRC_RECV && !is_rss(a);
	bool has_rq = has_sq && a->qp_type != IBV_QPT_XRC_SEND && !a->srq;
	if (has_rq) {
		cap.max_recv_sge = RTE_MAX(cap.max_recv_sge, 1u);
		cap.max_recv_wr = rte_align32pow2(RTE_MAX(cap.max_recv_wr, 1u));
	} else {
		cap.max_recv_wr = cap.max_recv_sge = 0;
	}
	if (has_sq) {
		cap.max_send_sge = RTE_MAX(cap.max_send_sge, 1u);
		cap.max_send_wr = RTE_MAX(cap.max_send_wr, 1u);
		cap.max_inline_data = RTE_MAX(cap.max_inline_data, RTE_MIN((uint32_t)DPV_DEF_MAX_INLINE, p->max_inline));
	}
	return cap;
}

/* The SQ and RQ rings. 0 or ENOMEM. */
static int rings_new(struct dpv_qp *qp, struct dpv_bufs *bs)
{
	if (qp->type != IBV_QPT_XRC_RECV && qp->cap.max_send_wr) {
		uint32_t size = rte_align32pow2(qp->cap.max_send_wr), stride = sq_stride(&qp->cap);
		qp->sq = dpv_buf_alloc(qp->upd, bs, dpv_ring_bytes(size, stride), 64, DPV_RES_QP_SQ);
		if (!qp->sq)
			return ENOMEM;
		dpv_ring_init(qp->sq, DPV_RING_SQ, size, stride);
	}
	if (qp->cap.max_recv_wr) {
		uint32_t size = qp->cap.max_recv_wr, stride = rq_stride(qp->cap.max_recv_sge);
		qp->rq = dpv_buf_alloc(qp->upd, bs, dpv_ring_bytes(size, stride), 64, DPV_RES_QP_RQ);
		if (!qp->rq)
			return ENOMEM;
		dpv_ring_init(qp->rq, DPV_RING_RQ, size, stride);
	}
	return 0;
}

static void refs(struct dpv_qp *qp, int d)
{
	if (qp->upd)
		atomic_fetch_add(&qp->upd->users, d);
	if (qp->scq)
		atomic_fetch_add(&qp->scq->users, d);
	if (qp->rcq)
		atomic_fetch_add(&qp->rcq->users, d);
	if (qp->srq)
		atomic_fetch_add(&qp->srq->users, d);
	if (qp->xrcd)
		atomic_fetch_add(&qp->xrcd->users, d);
	if (qp->ind_tbl)
		dpv_rss_table_ref(qp->ind_tbl, d);
}

static void qp_fill(struct dpv_qp *qp, struct ibv_context *context, const struct ibv_qp_init_attr_ex *a)
{
	enum ibv_qp_type t = a->qp_type;
	qp->ctx = to_dctx(context);
	qp->type = t;
	qp->state = IBV_QPS_RESET;
	qp->lockless = qp->upd && qp->upd->td;
	qp->pd = qp->upd ? qp->upd->base : NULL;
	qp->scq = t != IBV_QPT_XRC_RECV && !is_rss(a) ? to_dcq(a->send_cq) : NULL;
	qp->rcq = t != IBV_QPT_XRC_RECV && t != IBV_QPT_XRC_SEND && !is_rss(a) ? to_dcq(a->recv_cq) : NULL;
	qp->srq = a->srq ? to_dsrq(a->srq) : NULL;
	qp->xrcd = t == IBV_QPT_XRC_RECV ? to_dxrcd(a->xrcd) : NULL;
	qp->sq_sig_all = a->sq_sig_all != 0;
	rte_spinlock_init(&qp->lock);
	rte_spinlock_init(&qp->rq_lock);
	qp->attr.qp_state = IBV_QPS_RESET;
	qp->attr.cur_qp_state = IBV_QPS_RESET;
	qp->attr.port_num = DPV_PORT_NUM;
	qp->attr.cap = qp->cap;
	struct ibv_qp *ib = dqp_ib(qp);
	ib->context = context;
	ib->qp_context = a->qp_context;
	ib->pd = t == IBV_QPT_XRC_RECV ? NULL : a->pd;
	ib->send_cq = qp->scq ? a->send_cq : NULL;
	ib->recv_cq = qp->rcq ? a->recv_cq : NULL;
	ib->srq = a->srq;
	ib->state = IBV_QPS_RESET;
	ib->qp_type = t;
	pthread_mutex_init(&ib->mutex, NULL);
	pthread_cond_init(&ib->cond, NULL);
}

static void *engine_qp(struct dpv_qp *qp, struct dpv_bufs *bs)
{
	struct dpv_device *d = qp->ctx->dev;
	struct dpv_qp_cfg cfg = {
		.qpn = qp->qpn, .type = qp->type, .dev = d->drv_dev, .sq = qp->sq, .rq = qp->rq,
		.sq_size = qp->sq ? qp->sq->size : 0, .sq_stride = qp->sq ? qp->sq->stride : 0,
		.rq_size = qp->rq ? qp->rq->size : 0, .rq_stride = qp->rq ? qp->rq->stride : 0,
		.scq = qp->scq ? qp->scq->drv : NULL, .rcq = qp->rcq ? qp->rcq->drv : NULL,
		.srq = qp->srq ? qp->srq->drv : NULL, .td = qp->lockless ? qp->upd->td->drv : NULL,
		.pd = qp->pd ? qp->pd->handle : 0, .xrcd = qp->xrcd ? qp->xrcd->dom->num : 0,
		.cap = qp->cap, .sq_sig_all = qp->sq_sig_all, .alloc_pd = qp->upd, .bufs = bs,
		.ctx = qp->ctx->drv_ctx, .cookie = (uintptr_t)dqp_ib(qp), .gsi = qp->gsi, .rss = qp->rss,
	};
	return dpv_ops(d)->create_qp(&cfg);
}

static struct ibv_qp *qp_create(struct ibv_context *context, struct ibv_qp_init_attr_ex *a, bool gsi);

struct ibv_qp *dpv_create_qp_ex(struct ibv_context *context, struct ibv_qp_init_attr_ex *a)
{
	return qp_create(context, a, false);
}

/* ibv_create_qp's attributes as the extended ones; the final capabilities
 * go back into attr */
static struct ibv_qp *qp_create_plain(struct ibv_pd *pd, struct ibv_qp_init_attr *attr, bool gsi)
{
	struct ibv_qp_init_attr_ex ex;
	memset(&ex, 0, sizeof(ex));
	memcpy(&ex, attr, sizeof(*attr));
	ex.comp_mask = IBV_QP_INIT_ATTR_PD;
	ex.pd = pd;
	struct ibv_qp *qp = qp_create(pd->context, &ex, gsi);
	if (qp)
		attr->cap = ex.cap;
	return qp;
}

DPV_EXPORT struct ibv_qp *dpv_create_gsi_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
	if (!pd || !attr || attr->qp_type != IBV_QPT_UD) {
		errno = EINVAL;
		return NULL;
	}
	return qp_create_plain(pd, attr, true);
}

DPV_EXPORT int dpv_gsi_listen(struct ibv_qp *ib, uint64_t service_id, int on)
{
	if (!ib || !to_dqp(ib)->gsi || !to_dqp(ib)->drv)
		return EINVAL;
	int r = dpv_dev_gsi(to_dctx(ib->context)->dev)->gsi_listen(to_dqp(ib)->drv, service_id, on != 0);
	return r < 0 ? -r : r;
}

DPV_EXPORT int dpv_gsi_comm_ids(struct ibv_qp *ib, uint32_t *prefix, uint32_t *mask)
{
	if (!ib || !prefix || !mask || !to_dqp(ib)->gsi || !to_dqp(ib)->drv)
		return EINVAL;
	dpv_dev_gsi(to_dctx(ib->context)->dev)->gsi_comm_ids(to_dqp(ib)->drv, prefix, mask);
	return 0;
}

static struct ibv_qp *qp_create(struct ibv_context *context, struct ibv_qp_init_attr_ex *a, bool gsi)
{
	struct dpv_core *core = dpv_core_peek();
	int err = !context || !a || !core ? EINVAL : check_create(context, a);
	if (err) {
		errno = err;
		return NULL;
	}
	struct dpv_pd *upd = a->qp_type == IBV_QPT_XRC_RECV ? NULL : to_dpd(a->pd);
	struct dpv_bufs bs = {.dev = to_dctx(context)->dev};
	struct dpv_qp *qp = dpv_buf_alloc(upd, &bs, sizeof(*qp), 64, DPV_RES_QP);
	if (!qp)
		return NULL;
	qp->upd = upd;
	qp->gsi = gsi;
	qp->cap = final_cap(a, &core->params);
	qp_fill(qp, context, a);
	if (is_rss(a)) {
		qp->rss = dpv_buf_alloc(NULL, &bs, sizeof(*qp->rss), 64, DPV_RES_QP);
		if (!qp->rss || (err = dpv_rss_cfg_fill(context, a, qp->rss)) != 0) {
			dpv_bufs_free_all(&bs);
			errno = err ? err : ENOMEM;
			return NULL;
		}
		qp->ind_tbl = a->rwq_ind_tbl;
	}
	if (rings_new(qp, &bs) ||
	    ((a->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) && dpv_qpex_init(qp, a->send_ops_flags, &bs))) {
		int e = errno == EIO ? EIO : ENOMEM; /* EIO: shared mode's daemon is gone */
		dpv_bufs_free_all(&bs);
		errno = e;
		return NULL;
	}
	int pe = dpv_pool_add(DPV_OBJ_QP, qp, &qp->qpn);
	if (pe != 0) {
		dpv_bufs_free_all(&bs);
		errno = dpv_pool_errno(pe); /* limits.max_qp QPs exist */
		return NULL;
	}
	void *drv = engine_qp(qp, &bs);
	if (!drv) {
		err = errno ? errno : ENOMEM;
		dpv_pool_del(DPV_OBJ_QP, qp->qpn, qp);
		dpv_bufs_free_all(&bs);
		errno = err;
		return NULL;
	}
	qp->bufs = bs;
	dqp_ib(qp)->handle = qp->qpn;
	dqp_ib(qp)->qp_num = qp->qpn;
	__atomic_store_n(&qp->drv, drv, __ATOMIC_RELEASE); /* the engine may look it up now */
	refs(qp, 1);
	a->cap = qp->cap;
	return dqp_ib(qp);
}

/**
 * ibv_create_qp: RETURN VALUE: the QP, or NULL with errno: EINVAL (NULL
 * pd/attr/CQs, objects of another context, capabilities above the device
 * limits, CQs of another thread domain), EOPNOTSUPP (QP types other than RC,
 * UC, UD, XRC_SEND/XRC_RECV and RAW_PACKET (RAW_PACKET: not on the null
 * driver, nor in a thread domain); creation flags), ENOMEM (limits.max_qp QPs
 * exist, no memory).
 */
DPV_EXPORT struct ibv_qp *ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
	if (!pd || !attr) {
		errno = EINVAL;
		return NULL;
	}
	return qp_create_plain(pd, attr, false);
}

/**
 * ibv_destroy_qp: 0, EINVAL for NULL, EBUSY for an XRC target QP that
 * handles from ibv_open_qp still use (in shared mode: of any process), or a raw
 * packet QP with flows.
 * Outstanding WRs are discarded and the QP's completions not polled yet are
 * removed from its CQs. On a handle from ibv_open_qp: drops the handle.
 */
DPV_EXPORT int ibv_destroy_qp(struct ibv_qp *ib)
{
	if (!ib)
		return EINVAL;
	struct dpv_qp *qp = to_dqp(ib);
	if (qp->opened || qp->foreign) {
		dpv_open_qp_close(qp); /* a handle from ibv_open_qp: drop it only */
		return 0;
	}
	uint32_t handles = 0;
	if (atomic_load(&qp->open_refs) > 0 || atomic_load(&qp->flows) > 0 ||
	    (qp->type == IBV_QPT_XRC_RECV && dpv_xrc_attr_refresh(qp, &handles) && handles))
		return EBUSY; /* flows hold their QP, as in Linux uverbs */
	dpv_pool_del(DPV_OBJ_QP, qp->qpn, qp);
	ctx_ops(ib->context)->destroy_qp(qp->drv); /* no CQE for it after this */
	if (qp->scq)
		dpv_cq_clean(qp->scq, qp->qpn);
	if (qp->rcq && qp->rcq != qp->scq)
		dpv_cq_clean(qp->rcq, qp->qpn);
	refs(qp, -1);
	pthread_mutex_destroy(&ib->mutex);
	pthread_cond_destroy(&ib->cond);
	dpv_bufs_free_all(&qp->bufs); /* the QP itself last */
	return 0;
}

enum ibv_qp_state dpv_qp_state(struct dpv_qp *qp)
{
	enum ibv_qp_state s = ctx_ops(dqp_ib(qp)->context)->query_qp_state(qp->drv);
	qp->state = s;
	dqp_ib(qp)->state = s;
	return s;
}

/** ibv_query_qp: 0 and the current attributes, or EINVAL for NULL arguments. */
DPV_EXPORT int ibv_query_qp(struct ibv_qp *ib, struct ibv_qp_attr *attr, int mask,
			    struct ibv_qp_init_attr *init_attr)
{
	if (!ib || !attr || !init_attr)
		return EINVAL;
	struct dpv_qp *qp = to_dqp(ib);
	if (qp->foreign)
		return dpv_open_qp_query(qp, attr, init_attr); /* another process' QP */
	if (qp->opened)
		qp = qp->opened;
	if (!qp->lockless)
		rte_spinlock_lock(&qp->lock);
	uint32_t handles;
	/* an XRC target QP in shared mode: other processes' handles may have
	 * modified it, the daemon's attributes are the QP's */
	bool fresh = dpv_xrc_attr_refresh(qp, &handles);
	*attr = qp->attr;
	attr->qp_state = fresh ? qp->state : dpv_qp_state(qp);
	attr->cur_qp_state = attr->qp_state;
	attr->cap = qp->cap;
	attr->sq_draining = 0;
	if (!qp->lockless)
		rte_spinlock_unlock(&qp->lock);
	ib->state = attr->qp_state;
	memset(init_attr, 0, sizeof(*init_attr));
	init_attr->qp_context = ib->qp_context;
	init_attr->send_cq = ib->send_cq;
	init_attr->recv_cq = ib->recv_cq;
	init_attr->srq = ib->srq;
	init_attr->cap = qp->cap;
	init_attr->qp_type = ib->qp_type;
	init_attr->sq_sig_all = qp->sq_sig_all;
	return 0;
}

/**
 * ibv_query_qp_data_in_order: dpverbs writes the data of every message in
 * order (go-back-N, no out-of-order placement), so it returns 1 for every
 * QP and opcode when flags is 0; 0 for a NULL QP or other flags (rdma-core
 * 44: "1 if the data is guaranteed to be written in-order, 0 otherwise").
 */
DPV_EXPORT int ibv_query_qp_data_in_order(struct ibv_qp *qp, enum ibv_wr_opcode op, uint32_t flags)
{
	return qp && !flags ? 1 : 0;
}

/**
 * ibv_qp_to_qp_ex: the extended QP view; NULL with errno EOPNOTSUPP unless
 * the QP was created with IBV_QP_INIT_ATTR_SEND_OPS_FLAGS.
 */
DPV_EXPORT struct ibv_qp_ex *ibv_qp_to_qp_ex(struct ibv_qp *qp)
{
	if (!qp || !to_dqp(qp)->wrb) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	return &to_dqp(qp)->ibqp;
}

/* ibv_attach_mcast / ibv_detach_mcast: a UD QP and a multicast GID (as
 * Linux ib_attach_mcast: EINVAL otherwise; the LID is not used on RoCE). */
static int mcast(struct ibv_qp *qp, const union ibv_gid *gid, bool attach)
{
	if (!qp || !gid)
		return EINVAL;
	if (!dpv_core_has_mcast())
		return EOPNOTSUPP; /* the null driver */
	if (qp->qp_type != IBV_QPT_UD || to_dqp(qp)->gsi || !to_dqp(qp)->drv ||
	    !dpv_gid_is_mcast(gid->raw))
		return EINVAL;
	const struct dpv_verbs_ops *o = ctx_ops(qp->context);
	int r = attach ? o->mcast_attach(to_dqp(qp)->drv, gid->raw) : o->mcast_detach(to_dqp(qp)->drv, gid->raw);
	return r < 0 ? -r : r;
}

/** ibv_attach_mcast: the UD QP receives what is sent to group gid. */
DPV_EXPORT int ibv_attach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	(void)lid;
	return mcast(qp, gid, true);
}

/** ibv_detach_mcast: no more. EINVAL if the QP is not in the group. */
DPV_EXPORT int ibv_detach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	(void)lid;
	return mcast(qp, gid, false);
}
