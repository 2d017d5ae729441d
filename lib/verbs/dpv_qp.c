/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Queue pairs: creation with capability checks, the IBA QP state machine
 * with attribute-mask checks (IBA 10.3.1, table 91 "QP state transition
 * properties"), queries, posting and error flushing. Transports live in
 * dpv_ud.c (UD) and dpv_req.c / dpv_comp.c / dpv_resp.c (RC, UC, XRC).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>

#include "dpv_verbs.h"
#include "dpv_engine.h"
#include "dpv_rc.h"
#include "dpverbs.h"

#define QP_TABLE_SIZE (1u << 16)

static _Atomic(struct dpv_qp *) g_qps[QP_TABLE_SIZE];
static rte_spinlock_t g_qp_lock = RTE_SPINLOCK_INITIALIZER;
static uint32_t g_qp_next = DPV_QPN_FIRST;
static uint32_t g_n_qps;

struct dpv_qp *dpv_qp_lookup(uint32_t qpn)
{
	if (qpn >= QP_TABLE_SIZE)
		return NULL;
	return atomic_load_explicit(&g_qps[qpn], memory_order_acquire);
}

/* ---- receive queues ---- */

static inline struct dpv_recv_wqe *rq_slot(uint8_t *ring, uint32_t wqe_size, uint32_t size, uint32_t i)
{
	return (struct dpv_recv_wqe *)(ring + (size_t)(i & (size - 1)) * wqe_size);
}

static uint32_t pow2(uint32_t v)
{
	uint32_t s = 1;
	while (s < v)
		s <<= 1;
	return s;
}

bool dpv_qp_pop_recv(struct dpv_qp *qp, uint64_t *wr_id, struct ibv_sge *sge, uint32_t *nsge,
		     struct dpv_pd **pd)
{
	struct dpv_recv_wqe *w;
	if (qp->srq) {
		*pd = qp->srq->pd;
		return dpv_srq_pop(qp->srq, wr_id, sge, nsge);
	}
	rq_lock(qp);
	if (qp->rq_head == qp->rq_tail) {
		rq_unlock(qp);
		return false;
	}
	w = rq_slot(qp->rq, qp->rq_wqe_size, qp->rq_size, qp->rq_head);
	*wr_id = w->wr_id;
	*nsge = w->num_sge;
	memcpy(sge, w->sge, w->num_sge * sizeof(*sge));
	qp->rq_head++;
	rq_unlock(qp);
	*pd = qp->pd;
	return true;
}

bool dpv_srq_pop(struct dpv_srq *s, uint64_t *wr_id, struct ibv_sge *sge, uint32_t *nsge)
{
	struct dpv_recv_wqe *w;
	{
		bool limit_ev = false;
		rte_spinlock_lock(&s->lock);
		if (s->head == s->tail) {
			rte_spinlock_unlock(&s->lock);
			return false;
		}
		w = rq_slot(s->wqes, s->wqe_size, pow2(s->max_wr), s->head);
		*wr_id = w->wr_id;
		*nsge = w->num_sge;
		memcpy(sge, w->sge, w->num_sge * sizeof(*sge));
		s->head++;
		if (s->limit && s->tail - s->head < s->limit) {
			s->limit = 0; /* IBA 10.2.9.3: the limit disarms when it fires */
			limit_ev = true;
		}
		rte_spinlock_unlock(&s->lock);
		if (limit_ev) {
			struct ibv_async_event ev = {.event_type = IBV_EVENT_SRQ_LIMIT_REACHED};
			ev.element.srq = &s->ibsrq;
			dpv_async_event(to_dctx(s->ibsrq.context), &ev);
		}
		return true;
	}
}

static void flush_rq(struct dpv_qp *qp)
{
	struct ibv_wc wc;
	if (qp->srq)
		return; /* SRQ WQEs stay in the SRQ (IBA 10.2.9.5) */
	rq_lock(qp);
	while (qp->rq_head != qp->rq_tail) {
		struct dpv_recv_wqe *w = rq_slot(qp->rq, qp->rq_wqe_size, qp->rq_size, qp->rq_head++);
		memset(&wc, 0, sizeof(wc));
		wc.wr_id = w->wr_id;
		wc.status = IBV_WC_WR_FLUSH_ERR;
		wc.opcode = IBV_WC_RECV;
		wc.qp_num = qp->ibqp.qp_base.qp_num;
		rq_unlock(qp);
		dpv_cq_push(qp->rcq, &wc, false);
		rq_lock(qp);
	}
	rq_unlock(qp);
}

void dpv_qp_to_error(struct dpv_qp *qp)
{
	qp->state = IBV_QPS_ERR;
	qp->ibqp.qp_base.state = IBV_QPS_ERR;
	qp->attr.qp_state = IBV_QPS_ERR;
	flush_rq(qp);
}

/* ---- create / destroy ---- */

static int check_cap(const struct dpv_conf *c, struct ibv_qp_cap *cap, bool has_srq, enum ibv_qp_type t)
{
	if (cap->max_send_wr > c->max_qp_wr || cap->max_send_sge > c->max_sge ||
	    cap->max_inline_data > c->max_inline)
		return EINVAL;
	if (!has_srq && (cap->max_recv_wr > c->max_qp_wr || cap->max_recv_sge > c->max_sge))
		return EINVAL;
	return 0;
}

struct ibv_qp *dpv_create_qp_ex(struct ibv_context *context, struct ibv_qp_init_attr_ex *a)
{
	struct dpv_runtime *rt = dpv_runtime_peek();
	if (!context || !a || !rt) {
		errno = EINVAL;
		return NULL;
	}
	uint32_t known = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_XRCD | IBV_QP_INIT_ATTR_CREATE_FLAGS |
			 IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	if (a->comp_mask & ~known) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if ((a->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) && a->create_flags) {
		errno = EOPNOTSUPP; /* no creation flags are supported */
		return NULL;
	}
	enum ibv_qp_type t = a->qp_type;
	if (t != IBV_QPT_UD && t != IBV_QPT_RC && t != IBV_QPT_UC && t != IBV_QPT_XRC_SEND &&
	    t != IBV_QPT_XRC_RECV) {
		errno = EOPNOTSUPP; /* no RAW_PACKET, no RD */
		return NULL;
	}
	if (t == IBV_QPT_XRC_RECV) {
		/* the target lives in an XRC domain: no PD, CQs or queues */
		if (!(a->comp_mask & IBV_QP_INIT_ATTR_XRCD) || !a->xrcd || a->xrcd->context != context) {
			errno = EINVAL;
			return NULL;
		}
	} else if (!(a->comp_mask & IBV_QP_INIT_ATTR_PD) || !a->pd || a->pd->context != context) {
		errno = EINVAL;
		return NULL;
	}
	if ((a->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) &&
	    (a->send_ops_flags & ~dpv_qpex_supported_ops(t))) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	bool has_sq = t != IBV_QPT_XRC_RECV, has_rq = t != IBV_QPT_XRC_RECV && t != IBV_QPT_XRC_SEND;
	if ((has_sq && (!a->send_cq || a->send_cq->context != context)) ||
	    (has_rq && (!a->recv_cq || a->recv_cq->context != context)) ||
	    (has_rq && a->srq && a->srq->context != context)) {
		errno = EINVAL;
		return NULL;
	}
	/* a thread domain's QP and its CQs go together (one thread uses them) */
	struct dpv_td *want_td = t != IBV_QPT_XRC_RECV ? to_dpd(a->pd)->td : NULL;
	struct dpv_cq *xs = has_sq ? to_dcq(a->send_cq) : NULL, *xr = has_rq ? to_dcq(a->recv_cq) : NULL;
	if ((xs && (xs->lockless ? xs->upd->td : NULL) != want_td) ||
	    (xr && (xr->lockless ? xr->upd->td : NULL) != want_td)) {
		errno = EINVAL;
		return NULL;
	}
	if (!has_rq) {
		a->srq = NULL;
		a->cap.max_recv_wr = a->cap.max_recv_sge = 0;
	}
	if (!has_sq) {
		a->cap.max_send_wr = a->cap.max_send_sge = a->cap.max_inline_data = 0;
	}
	struct ibv_qp_cap cap = a->cap;
	if (check_cap(&rt->conf, &cap, a->srq != NULL || !has_rq, a->qp_type)) {
		errno = EINVAL;
		return NULL;
	}
	struct dpv_pd *upd = t == IBV_QPT_XRC_RECV ? NULL : to_dpd(a->pd);
	struct dpv_bufs bs = {0};
	struct dpv_qp *qp = dpv_buf_alloc(upd, &bs, sizeof(*qp), 64, DPV_RES_QP);
	if (!qp)
		return NULL;
	qp->upd = upd;
	/* a parent domain with a thread domain: one thread uses the QP */
	qp->lockless = upd && upd->td;
	/* report what we really provide (>= what was asked) */
	if (!cap.max_send_sge)
		cap.max_send_sge = 1;
	if (!a->srq && has_rq) {
		if (!cap.max_recv_sge)
			cap.max_recv_sge = 1;
		cap.max_recv_wr = RTE_MAX(cap.max_recv_wr, 1u);
		qp->rq_size = pow2(cap.max_recv_wr);
		cap.max_recv_wr = qp->rq_size;
		qp->rq_wqe_size = (uint32_t)(sizeof(struct dpv_recv_wqe) + cap.max_recv_sge * sizeof(struct ibv_sge));
		qp->rq = dpv_buf_alloc(upd, &bs, (size_t)qp->rq_size * qp->rq_wqe_size, 64, DPV_RES_QP_RQ);
		if (!qp->rq) {
			dpv_bufs_free_all(&bs);
			errno = ENOMEM;
			return NULL;
		}
	} else {
		cap.max_recv_wr = 0;
		cap.max_recv_sge = 0;
	}
	cap.max_send_wr = has_sq ? RTE_MAX(cap.max_send_wr, 1u) : 0;
	if (has_sq)
		cap.max_inline_data = RTE_MAX(cap.max_inline_data,
					      RTE_MIN((uint32_t)DPV_DEF_MAX_INLINE, rt->conf.max_inline));
	else
		cap.max_send_sge = 0;
	qp->cap = cap;
	a->cap = cap;
	if (((a->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) && dpv_qpex_init(qp, a->send_ops_flags, &bs)) ||
	    (a->qp_type != IBV_QPT_UD && dpv_rc_init(qp, has_sq, &bs))) {
		dpv_bufs_free_all(&bs);
		errno = ENOMEM;
		return NULL;
	}

	rte_spinlock_lock(&g_qp_lock);
	uint32_t qpn = 0;
	if (g_n_qps < rt->conf.max_qp) {
		for (uint32_t k = 0; k < QP_TABLE_SIZE; k++) {
			uint32_t n = g_qp_next + k;
			if (n >= QP_TABLE_SIZE)
				n = DPV_QPN_FIRST + (n - QP_TABLE_SIZE) % (QP_TABLE_SIZE - DPV_QPN_FIRST);
			if (n >= DPV_QPN_FIRST && !atomic_load(&g_qps[n])) {
				qpn = n;
				break;
			}
		}
	}
	if (!qpn) {
		rte_spinlock_unlock(&g_qp_lock);
		dpv_bufs_free_all(&bs);
		errno = ENOMEM;
		return NULL;
	}
	qp->bufs = bs;
	g_qp_next = qpn + 1 >= QP_TABLE_SIZE ? DPV_QPN_FIRST : qpn + 1;
	g_n_qps++;

	struct ibv_qp *ib = &qp->ibqp.qp_base;
	ib->context = context;
	ib->qp_context = a->qp_context;
	ib->pd = t == IBV_QPT_XRC_RECV ? NULL : a->pd;
	ib->send_cq = has_sq ? a->send_cq : NULL;
	ib->recv_cq = has_rq ? a->recv_cq : NULL;
	ib->srq = a->srq;
	ib->handle = qpn;
	ib->qp_num = qpn;
	ib->state = IBV_QPS_RESET;
	ib->qp_type = a->qp_type;
	pthread_mutex_init(&ib->mutex, NULL);
	pthread_cond_init(&ib->cond, NULL);
	qp->ctx = to_dctx(context);
	qp->pd = upd ? upd->base : NULL;
	qp->scq = ib->send_cq ? to_dcq(ib->send_cq) : NULL;
	qp->rcq = ib->recv_cq ? to_dcq(ib->recv_cq) : NULL;
	qp->xrcd = t == IBV_QPT_XRC_RECV ? to_dxrcd(a->xrcd) : NULL;
	qp->srq = a->srq ? to_dsrq(a->srq) : NULL;
	qp->port = qp->ctx->dev->port;
	qp->qc = &qp->port->qctx[qpn % qp->port->n_qctx];
	qp->type = a->qp_type;
	qp->state = IBV_QPS_RESET;
	qp->sq_sig_all = a->sq_sig_all != 0;
	rte_spinlock_init(&qp->sq_lock);
	rte_spinlock_init(&qp->rq_lock);
	qp->attr.qp_state = IBV_QPS_RESET;
	qp->attr.cur_qp_state = IBV_QPS_RESET;
	qp->attr.path_mtu = (enum ibv_mtu)qp->port->active_mtu;
	qp->attr.port_num = 1;
	qp->attr.cap = cap;
	if (qp->upd)
		atomic_fetch_add(&qp->upd->users, 1);
	if (qp->scq)
		atomic_fetch_add(&qp->scq->users, 1);
	if (qp->rcq)
		atomic_fetch_add(&qp->rcq->users, 1);
	if (qp->srq)
		atomic_fetch_add(&qp->srq->users, 1);
	if (qp->xrcd)
		atomic_fetch_add(&qp->xrcd->users, 1);
	atomic_store_explicit(&g_qps[qpn], qp, memory_order_release);
	rte_spinlock_unlock(&g_qp_lock);
	if (qp->rc)
		dpv_conn_add(qp);
	return ib;
}

/**
 * ibv_create_qp: RETURN VALUE: the QP, or NULL with errno: EINVAL (NULL
 * pd/attr/CQs, objects of another context, capabilities above the device
 * limits), EOPNOTSUPP (QP types other than RC, UC, UD, XRC_SEND/XRC_RECV;
 * creation flags), ENOMEM.
 */
DPV_EXPORT struct ibv_qp *ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
	if (!pd || !attr) {
		errno = EINVAL;
		return NULL;
	}
	struct ibv_qp_init_attr_ex ex;
	memset(&ex, 0, sizeof(ex));
	memcpy(&ex, attr, sizeof(*attr));
	ex.comp_mask = IBV_QP_INIT_ATTR_PD;
	ex.pd = pd;
	struct ibv_qp *qp = dpv_create_qp_ex(pd->context, &ex);
	if (qp)
		attr->cap = ex.cap;
	return qp;
}

static void cq_clean_qp(struct dpv_qp *qp)
{
	uint32_t qpn = dqp_ib(qp)->qp_num;
	if (qp->scq)
		dpv_cq_clean(qp->scq, qpn);
	if (qp->rcq && qp->rcq != qp->scq)
		dpv_cq_clean(qp->rcq, qpn);
}

/**
 * ibv_destroy_qp: 0, EINVAL for NULL, EBUSY for an XRC target QP that
 * handles from ibv_open_qp still use. Outstanding WRs are discarded and the
 * QP's completions not polled yet are removed from its CQs.
 */
DPV_EXPORT int ibv_destroy_qp(struct ibv_qp *ib)
{
	if (!ib)
		return EINVAL;
	struct dpv_qp *qp = to_dqp(ib);
	if (qp->opened) {
		/* a handle from ibv_open_qp: drop the reference only */
		atomic_fetch_sub(&qp->opened->open_refs, 1);
		atomic_fetch_sub(&qp->xrcd->users, 1);
		pthread_mutex_destroy(&ib->mutex);
		pthread_cond_destroy(&ib->cond);
		free(qp);
		return 0;
	}
	if (atomic_load(&qp->open_refs) > 0)
		return EBUSY;
	rte_spinlock_lock(&g_qp_lock);
	atomic_store_explicit(&g_qps[ib->qp_num], NULL, memory_order_release);
	g_n_qps--;
	rte_spinlock_unlock(&g_qp_lock);
	if (qp->rc)
		dpv_conn_del(qp);
	/* wait until no engine context is inside this QP's receive path or
	 * reading its counters (dpv_stats_publish runs on port 0) */
	struct dpv_runtime *rt = dpv_runtime_peek();
	for (unsigned int i = 0; rt && i < rt->n_ports; i++) {
		struct dpv_port *p = &rt->ports[i];
		for (uint16_t q = 0; q < p->n_qctx; q++) {
			rte_spinlock_lock(&p->qctx[q].rx_lock);
			rte_spinlock_unlock(&p->qctx[q].rx_lock);
		}
	}
	cq_clean_qp(qp);
	if (qp->upd)
		atomic_fetch_sub(&qp->upd->users, 1);
	if (qp->scq)
		atomic_fetch_sub(&qp->scq->users, 1);
	if (qp->rcq)
		atomic_fetch_sub(&qp->rcq->users, 1);
	if (qp->srq)
		atomic_fetch_sub(&qp->srq->users, 1);
	if (qp->xrcd)
		atomic_fetch_sub(&qp->xrcd->users, 1);
	pthread_mutex_destroy(&ib->mutex);
	pthread_cond_destroy(&ib->cond);
	dpv_bufs_free_all(&qp->bufs); /* the QP itself last */
	return 0;
}

/* ---- state machine ---- */

struct qp_trans {
	bool ok;
	uint32_t req;
	uint32_t opt;
};

#define T(r, o) {true, (r), (o)}
#define RC_PATH (IBV_QP_ALT_PATH | IBV_QP_PATH_MIG_STATE)

/* IBA 10.3.1 table 91 (RC, UC, UD columns): required and optional
 * attributes of each legal modify-QP transition. */
static const struct qp_trans tr_ud[IBV_QPS_ERR + 1][IBV_QPS_ERR + 1] = {
	[IBV_QPS_RESET][IBV_QPS_INIT] = T(IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY, 0),
	[IBV_QPS_INIT][IBV_QPS_INIT] = T(0, IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY),
	[IBV_QPS_INIT][IBV_QPS_RTR] = T(0, IBV_QP_PKEY_INDEX | IBV_QP_QKEY),
	[IBV_QPS_RTR][IBV_QPS_RTS] = T(IBV_QP_SQ_PSN, IBV_QP_CUR_STATE | IBV_QP_QKEY),
	[IBV_QPS_RTS][IBV_QPS_RTS] = T(0, IBV_QP_CUR_STATE | IBV_QP_QKEY),
	[IBV_QPS_RTS][IBV_QPS_SQD] = T(0, IBV_QP_EN_SQD_ASYNC_NOTIFY),
	[IBV_QPS_SQD][IBV_QPS_RTS] = T(0, IBV_QP_CUR_STATE | IBV_QP_QKEY),
	[IBV_QPS_SQD][IBV_QPS_SQD] = T(0, IBV_QP_PKEY_INDEX | IBV_QP_QKEY),
	[IBV_QPS_SQE][IBV_QPS_RTS] = T(0, IBV_QP_CUR_STATE | IBV_QP_QKEY),
};

static const struct qp_trans tr_rc[IBV_QPS_ERR + 1][IBV_QPS_ERR + 1] = {
	[IBV_QPS_RESET][IBV_QPS_INIT] = T(IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, 0),
	[IBV_QPS_INIT][IBV_QPS_INIT] = T(0, IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS),
	[IBV_QPS_INIT][IBV_QPS_RTR] = T(IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
					IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER,
					IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX),
	[IBV_QPS_RTR][IBV_QPS_RTS] = T(IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				       IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC,
				       IBV_QP_CUR_STATE | RC_PATH | IBV_QP_ACCESS_FLAGS |
				       IBV_QP_MIN_RNR_TIMER),
	[IBV_QPS_RTS][IBV_QPS_RTS] = T(0, IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS | RC_PATH |
				       IBV_QP_MIN_RNR_TIMER),
	[IBV_QPS_RTS][IBV_QPS_SQD] = T(0, IBV_QP_EN_SQD_ASYNC_NOTIFY),
	[IBV_QPS_SQD][IBV_QPS_RTS] = T(0, IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS | RC_PATH |
				       IBV_QP_MIN_RNR_TIMER),
	[IBV_QPS_SQD][IBV_QPS_SQD] = T(0, IBV_QP_AV | RC_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX |
				       IBV_QP_MIN_RNR_TIMER | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				       IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC |
				       IBV_QP_MAX_DEST_RD_ATOMIC),
};

static const struct qp_trans tr_uc[IBV_QPS_ERR + 1][IBV_QPS_ERR + 1] = {
	[IBV_QPS_RESET][IBV_QPS_INIT] = T(IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, 0),
	[IBV_QPS_INIT][IBV_QPS_INIT] = T(0, IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS),
	[IBV_QPS_INIT][IBV_QPS_RTR] = T(IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN,
					IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX),
	[IBV_QPS_RTR][IBV_QPS_RTS] = T(IBV_QP_SQ_PSN, IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS | RC_PATH),
	[IBV_QPS_RTS][IBV_QPS_RTS] = T(0, IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS | RC_PATH),
	[IBV_QPS_RTS][IBV_QPS_SQD] = T(0, IBV_QP_EN_SQD_ASYNC_NOTIFY),
	[IBV_QPS_SQD][IBV_QPS_RTS] = T(0, IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS | RC_PATH),
	[IBV_QPS_SQD][IBV_QPS_SQD] = T(0, IBV_QP_AV | RC_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX),
	[IBV_QPS_SQE][IBV_QPS_RTS] = T(0, IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS),
};
/* Linux's XRC_INI / XRC_TGT columns, with the RC attributes the other side
 * of each pair needs accepted as optional. */
static const struct qp_trans tr_xrc_ini[IBV_QPS_ERR + 1][IBV_QPS_ERR + 1] = {
	[IBV_QPS_RESET][IBV_QPS_INIT] = T(IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, 0),
	[IBV_QPS_INIT][IBV_QPS_INIT] = T(0, IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS),
	[IBV_QPS_INIT][IBV_QPS_RTR] = T(IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN,
					IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX |
					IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER),
	[IBV_QPS_RTR][IBV_QPS_RTS] = T(IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				       IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC,
				       IBV_QP_CUR_STATE | RC_PATH | IBV_QP_ACCESS_FLAGS |
				       IBV_QP_MIN_RNR_TIMER),
	[IBV_QPS_RTS][IBV_QPS_RTS] = T(0, IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS | RC_PATH |
				       IBV_QP_MIN_RNR_TIMER),
	[IBV_QPS_RTS][IBV_QPS_SQD] = T(0, IBV_QP_EN_SQD_ASYNC_NOTIFY),
	[IBV_QPS_SQD][IBV_QPS_RTS] = T(0, IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS | RC_PATH |
				       IBV_QP_MIN_RNR_TIMER),
};

static const struct qp_trans tr_xrc_tgt[IBV_QPS_ERR + 1][IBV_QPS_ERR + 1] = {
	[IBV_QPS_RESET][IBV_QPS_INIT] = T(IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, 0),
	[IBV_QPS_INIT][IBV_QPS_INIT] = T(0, IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS),
	[IBV_QPS_INIT][IBV_QPS_RTR] = T(IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
					IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER,
					IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX),
	[IBV_QPS_RTR][IBV_QPS_RTS] = T(IBV_QP_SQ_PSN | IBV_QP_TIMEOUT,
				       IBV_QP_CUR_STATE | RC_PATH | IBV_QP_ACCESS_FLAGS |
				       IBV_QP_MIN_RNR_TIMER | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
				       IBV_QP_MAX_QP_RD_ATOMIC),
	[IBV_QPS_RTS][IBV_QPS_RTS] = T(0, IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS | RC_PATH |
				       IBV_QP_MIN_RNR_TIMER),
};
#undef T

static const struct qp_trans *trans_for(enum ibv_qp_type t, enum ibv_qp_state from, enum ibv_qp_state to)
{
	static const struct qp_trans any = {true, 0, 0};
	if (from > IBV_QPS_ERR || to > IBV_QPS_ERR)
		return NULL;
	if (to == IBV_QPS_RESET || to == IBV_QPS_ERR)
		return &any; /* from any state */
	const struct qp_trans *tr = t == IBV_QPT_UD ? &tr_ud[from][to]
				  : t == IBV_QPT_RC ? &tr_rc[from][to]
				  : t == IBV_QPT_UC ? &tr_uc[from][to]
				  : t == IBV_QPT_XRC_SEND ? &tr_xrc_ini[from][to]
				  : t == IBV_QPT_XRC_RECV ? &tr_xrc_tgt[from][to] : NULL;
	return tr && tr->ok ? tr : NULL;
}

static void qp_reset(struct dpv_qp *qp)
{
	cq_clean_qp(qp);
	rq_lock(qp);
	qp->rq_head = qp->rq_tail = 0;
	rq_unlock(qp);
	qp->sq_outstanding = 0;
	atomic_store(&qp->sq_inflight, 0);
	qp->sq_unsig = 0;
	if (qp->rc) {
		struct dpv_rc *rc = qp->rc;
		uint8_t *sq = rc->sq;
		uint32_t size = rc->sq_size, wsz = rc->sq_wqe_size;
		memset(rc, 0, sizeof(*rc));
		rc->sq = sq;
		rc->sq_size = size;
		rc->sq_wqe_size = wsz;
	}
}

static int check_attr_values(struct dpv_qp *qp, const struct ibv_qp_attr *a, int mask)
{
	struct dpv_port *p = qp->port;
	if ((mask & IBV_QP_PORT) && a->port_num != 1)
		return EINVAL;
	if ((mask & IBV_QP_PKEY_INDEX) && a->pkey_index >= DPV_PKEY_TABLE_LEN)
		return EINVAL;
	if (mask & IBV_QP_AV) {
		const struct ibv_ah_attr *av = &a->ah_attr;
		/* RoCE: a GRH is required and the source GID must exist */
		if (!av->is_global || av->grh.sgid_index >= DPV_GID_TABLE_LEN ||
		    !p->gids[av->grh.sgid_index].valid)
			return EINVAL;
		if (dpv_gid_is_v4mapped(av->grh.dgid.raw) != (p->gids[av->grh.sgid_index].ip_ver == 4))
			return EINVAL;
	}
	if ((mask & IBV_QP_PATH_MTU) && (a->path_mtu < IBV_MTU_256 || a->path_mtu > IBV_MTU_4096))
		return EINVAL;
	if ((mask & IBV_QP_DEST_QPN) && a->dest_qp_num > 0xffffff)
		return EINVAL;
	if ((mask & IBV_QP_RETRY_CNT) && a->retry_cnt > 7)
		return EINVAL;
	if ((mask & IBV_QP_RNR_RETRY) && a->rnr_retry > 7)
		return EINVAL;
	if ((mask & IBV_QP_MIN_RNR_TIMER) && a->min_rnr_timer > 31)
		return EINVAL;
	if ((mask & IBV_QP_TIMEOUT) && a->timeout > 31)
		return EINVAL;
	if ((mask & IBV_QP_MAX_QP_RD_ATOMIC) && a->max_rd_atomic > DPV_MAX_RD_ATOMIC_DEV)
		return EINVAL;
	if ((mask & IBV_QP_MAX_DEST_RD_ATOMIC) && a->max_dest_rd_atomic > DPV_MAX_RD_ATOMIC_DEV)
		return EINVAL;
	if ((mask & IBV_QP_ACCESS_FLAGS) &&
	    (a->qp_access_flags & ~(unsigned int)(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
						  IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)))
		return EINVAL;
	return 0;
}

/**
 * ibv_modify_qp: RETURN VALUE: 0, or EINVAL (unknown mask bits, a required
 * attribute missing, an attribute not allowed in this transition, an illegal
 * transition, cur_qp_state that does not match, port_num != 1, pkey_index out
 * of range, an address vector without GRH or with an unknown source GID,
 * path_mtu, retry_cnt, rnr_retry, timeout, min_rnr_timer or rd_atomic out of
 * range).
 */
DPV_EXPORT int ibv_modify_qp(struct ibv_qp *ib, struct ibv_qp_attr *attr, int mask)
{
	if (!ib || !attr)
		return EINVAL;
	struct dpv_qp *qp = to_dqp(ib);
	if (qp->opened) {
		int r = ibv_modify_qp(dqp_ib(qp->opened), attr, mask);
		ib->state = qp->opened->state;
		return r;
	}
	const uint32_t all = (IBV_QP_RATE_LIMIT << 1) - 1;
	if ((uint32_t)mask & ~all)
		return EINVAL;
	qp_lock(qp);
	enum ibv_qp_state cur = qp->state;
	if ((mask & IBV_QP_CUR_STATE) && attr->cur_qp_state != cur) {
		qp_unlock(qp);
		return EINVAL;
	}
	enum ibv_qp_state to = (mask & IBV_QP_STATE) ? attr->qp_state : cur;
	const struct qp_trans *tr = trans_for(qp->type, cur, to);
	uint32_t m = (uint32_t)mask & ~(uint32_t)IBV_QP_STATE;
	if (!tr || (m & tr->req) != tr->req || (m & ~(tr->req | tr->opt | IBV_QP_CUR_STATE)) ||
	    check_attr_values(qp, attr, mask)) {
		qp_unlock(qp);
		return EINVAL;
	}
	struct ibv_qp_attr *q = &qp->attr;
	if (mask & IBV_QP_QKEY)
		q->qkey = attr->qkey;
	if (mask & IBV_QP_PKEY_INDEX)
		q->pkey_index = attr->pkey_index;
	if (mask & IBV_QP_PORT)
		q->port_num = attr->port_num;
	if (mask & IBV_QP_ACCESS_FLAGS)
		q->qp_access_flags = attr->qp_access_flags;
	if (mask & IBV_QP_AV) {
		q->ah_attr = attr->ah_attr;
		if (qp->rc)
			qp->rc->path_ok = false;
	}
	if (mask & IBV_QP_PATH_MTU)
		q->path_mtu = attr->path_mtu;
	if (mask & IBV_QP_DEST_QPN)
		q->dest_qp_num = attr->dest_qp_num;
	if (mask & IBV_QP_RQ_PSN)
		q->rq_psn = attr->rq_psn & 0xffffff;
	if (mask & IBV_QP_SQ_PSN)
		q->sq_psn = attr->sq_psn & 0xffffff;
	if (mask & IBV_QP_MAX_DEST_RD_ATOMIC)
		q->max_dest_rd_atomic = attr->max_dest_rd_atomic;
	if (mask & IBV_QP_MAX_QP_RD_ATOMIC)
		q->max_rd_atomic = attr->max_rd_atomic;
	if (mask & IBV_QP_MIN_RNR_TIMER)
		q->min_rnr_timer = attr->min_rnr_timer;
	if (mask & IBV_QP_TIMEOUT)
		q->timeout = attr->timeout;
	if (mask & IBV_QP_RETRY_CNT)
		q->retry_cnt = attr->retry_cnt;
	if (mask & IBV_QP_RNR_RETRY)
		q->rnr_retry = attr->rnr_retry;
	if (mask & IBV_QP_ALT_PATH) {
		q->alt_ah_attr = attr->alt_ah_attr;
		q->alt_pkey_index = attr->alt_pkey_index;
		q->alt_port_num = attr->alt_port_num;
		q->alt_timeout = attr->alt_timeout;
	}
	if (mask & IBV_QP_PATH_MIG_STATE)
		q->path_mig_state = attr->path_mig_state;
	if (mask & IBV_QP_EN_SQD_ASYNC_NOTIFY)
		q->en_sqd_async_notify = attr->en_sqd_async_notify;
	if (mask & IBV_QP_SQ_PSN)
		qp->sq_psn = q->sq_psn;
	bool sqd_event = false;
	if (mask & IBV_QP_STATE) {
		if (to == IBV_QPS_RESET)
			qp_reset(qp);
		if (qp->rc && to == IBV_QPS_RTR && cur == IBV_QPS_INIT) {
			qp->rc->epsn = q->rq_psn;
			qp->rc->msn = 0;
			/* resolve the peer's MAC now, as a RoCE NIC's driver does */
			dpv_neigh_prefetch(qp->qc, q->ah_attr.grh.dgid.raw);
		}
		if (qp->rc && to == IBV_QPS_RTS && cur == IBV_QPS_RTR) {
			qp->rc->req_psn = q->sq_psn;
			qp->rc->comp_psn = q->sq_psn;
			qp->rc->cwnd = DPV_RC_WINDOW;
			qp->rc->last_retry_psn = 0xffffffff;
		}
		if (qp->rc && to == IBV_QPS_RTS) {
			qp->rc->retry_left = q->retry_cnt;
			qp->rc->rnr_left = q->rnr_retry;
		}
		qp->state = to;
		q->qp_state = to;
		q->cur_qp_state = to;
		ib->state = to;
		if (to == IBV_QPS_SQD && q->en_sqd_async_notify) {
			if (!qp->rc || qp->rc->sq_head == qp->rc->sq_cur)
				sqd_event = true; /* nothing outstanding: drained now */
			else
				qp->rc->sqd_pending = true;
		}
		if (qp->rc && to == IBV_QPS_RTS)
			dpv_req_run(qp);
		if (qp->rc && to == IBV_QPS_ERR)
			dpv_rc_flush_sq(qp);
	}
	qp_unlock(qp);
	if ((mask & IBV_QP_STATE) && to == IBV_QPS_ERR) {
		dpv_qp_to_error(qp);
		if ((qp->srq || qp->type == IBV_QPT_XRC_RECV) && cur != IBV_QPS_ERR && cur != IBV_QPS_RESET) {
			/* IBA 11.6.3: the QP's last WQE of the SRQ has been consumed */
			struct ibv_async_event ev = {.event_type = IBV_EVENT_QP_LAST_WQE_REACHED};
			ev.element.qp = ib;
			dpv_async_event(qp->ctx, &ev);
		}
	}
	if (sqd_event) {
		struct ibv_async_event ev = {.event_type = IBV_EVENT_SQ_DRAINED};
		ev.element.qp = ib;
		dpv_async_event(qp->ctx, &ev);
	}
	return 0;
}

/** ibv_query_qp: 0 and the current attributes, or EINVAL for NULL arguments. */
DPV_EXPORT int ibv_query_qp(struct ibv_qp *ib, struct ibv_qp_attr *attr, int mask,
			    struct ibv_qp_init_attr *init_attr)
{
	if (!ib || !attr || !init_attr)
		return EINVAL;
	struct dpv_qp *qp = to_dqp(ib);
	if (qp->opened)
		qp = qp->opened;
	qp_lock(qp);
	*attr = qp->attr;
	attr->qp_state = qp->state;
	attr->cur_qp_state = qp->state;
	attr->cap = qp->cap;
	attr->sq_draining = 0;
	qp_unlock(qp);
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

/* ---- posting ---- */

/* A UD send CQE; it frees the slots of this WR and the unsignalled WRs
 * before it. Must hold sq_lock. */
static void ud_send_cqe(struct dpv_qp *qp, struct ibv_send_wr *wr, enum ibv_wc_status st)
{
	struct ibv_wc wc;
	memset(&wc, 0, sizeof(wc));
	wc.wr_id = wr->wr_id;
	wc.status = st;
	wc.opcode = IBV_WC_SEND;
	wc.qp_num = qp->ibqp.qp_base.qp_num;
	if (st == IBV_WC_SUCCESS)
		wc.byte_len = dpv_sge_total(wr->sg_list, (uint32_t)wr->num_sge);
	dpv_cq_push_retire(qp->scq, &wc, false, qp->sq_unsig);
	qp->sq_unsig = 0;
}

/**
 * post_send (ibv_post_send): RETURN VALUE: 0, or an errno value with *bad_wr
 * set to the first WR not posted: EINVAL (QP not in RTS, more SGEs than
 * max_send_sge, inline data above max_inline_data, opcode not valid for the
 * QP type, NULL or foreign AH, an XRC target QP, NULL wr), ENOMEM (send
 * queue full: max_send_wr WRs whose completions were not polled yet; or no
 * packet buffer left in the port's mempool). In ERR and SQE the WRs are
 * accepted and complete with IBV_WC_WR_FLUSH_ERR.
 * Local errors found while executing a WR (bad lkey, an lkey of another PD,
 * message longer than the path MTU) complete it with an error status and
 * move a UD QP to SQE; in ERR/SQE WRs complete with IBV_WC_WR_FLUSH_ERR.
 */
int dpv_post_send(struct ibv_qp *ib, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	struct dpv_qp *qp = to_dqp(ib);
	int ret = 0;
	if (!wr)
		return EINVAL;
	if (qp->lockless)
		dpv_td_claim(qp->upd->td);
	if (qp->rc) {
		if (!qp->rc->sq) {
			if (bad)
				*bad = wr; /* XRC target: no send queue */
			return EINVAL;
		}
		return dpv_rc_post_send(qp, wr, bad);
	}
	qp_lock(qp);
	for (; wr; wr = wr->next) {
		if (qp->state != IBV_QPS_RTS && qp->state != IBV_QPS_ERR && qp->state != IBV_QPS_SQE) {
			ret = EINVAL;
			break;
		}
		if (wr->num_sge < 0 || (uint32_t)wr->num_sge > qp->cap.max_send_sge ||
		    (wr->num_sge && !wr->sg_list)) {
			ret = EINVAL;
			break;
		}
		if (wr->opcode != IBV_WR_SEND && wr->opcode != IBV_WR_SEND_WITH_IMM) {
			ret = EINVAL;
			break;
		}
		if ((wr->send_flags & IBV_SEND_INLINE) &&
		    dpv_sge_total(wr->sg_list, (uint32_t)wr->num_sge) > qp->cap.max_inline_data) {
			ret = EINVAL;
			break;
		}
		if (!wr->wr.ud.ah || wr->wr.ud.ah->context != ib->context) {
			ret = EINVAL;
			break;
		}
		if (atomic_load_explicit(&qp->sq_inflight, memory_order_acquire) >= qp->cap.max_send_wr) {
			ret = ENOMEM;
			break;
		}
		dpv_inflight_add(qp, 1);
		qp->sq_unsig++;
		if (qp->state != IBV_QPS_RTS) {
			/* IBA 10.8.3.3: flushed */
			ud_send_cqe(qp, wr, IBV_WC_WR_FLUSH_ERR);
			continue;
		}
		int st = dpv_ud_send_one(qp, wr);
		if (st < 0) {
			dpv_inflight_add(qp, -1);
			qp->sq_unsig--;
			ret = -st;
			break;
		}
		if (st != IBV_WC_SUCCESS) {
			ud_send_cqe(qp, wr, (enum ibv_wc_status)st);
			qp->state = IBV_QPS_SQE; /* IBA 10.3.1: UD send errors move to SQE */
			ib->state = IBV_QPS_SQE;
			qp->attr.qp_state = IBV_QPS_SQE;
			continue;
		}
		if (qp->sq_sig_all || (wr->send_flags & IBV_SEND_SIGNALED))
			ud_send_cqe(qp, wr, IBV_WC_SUCCESS);
	}
	qp_unlock(qp);
	if (ret && bad)
		*bad = wr;
	return ret;
}

static int post_recv_ring(uint8_t *ring, uint32_t wqe_size, uint32_t size, uint32_t *head,
			  uint32_t *tail, uint32_t max_sge, struct ibv_recv_wr *wr)
{
	if (wr->num_sge < 0 || (uint32_t)wr->num_sge > max_sge || (wr->num_sge && !wr->sg_list))
		return EINVAL;
	if (*tail - *head >= size)
		return ENOMEM;
	struct dpv_recv_wqe *w = rq_slot(ring, wqe_size, size, *tail);
	w->wr_id = wr->wr_id;
	w->num_sge = (uint32_t)wr->num_sge;
	if (wr->num_sge)
		memcpy(w->sge, wr->sg_list, (size_t)wr->num_sge * sizeof(struct ibv_sge));
	(*tail)++;
	return 0;
}

/**
 * post_recv (ibv_post_recv): RETURN VALUE: 0, or an errno value with *bad_wr
 * set: EINVAL (QP in RESET, QP attached to an SRQ, more SGEs than
 * max_recv_sge), ENOMEM (receive queue full). In the error state the WRs are
 * completed at once with IBV_WC_WR_FLUSH_ERR.
 */
int dpv_post_recv(struct ibv_qp *ib, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	struct dpv_qp *qp = to_dqp(ib);
	int ret = 0;
	if (!wr)
		return EINVAL;
	if (qp->srq || !qp->rq || qp->state == IBV_QPS_RESET) {
		if (bad)
			*bad = wr; /* SRQ, XRC QPs and RESET take no receive WRs */
		return EINVAL;
	}
	rq_lock(qp);
	for (; wr; wr = wr->next) {
		ret = post_recv_ring(qp->rq, qp->rq_wqe_size, qp->rq_size, &qp->rq_head, &qp->rq_tail,
				     qp->cap.max_recv_sge, wr);
		if (ret)
			break;
	}
	rq_unlock(qp);
	if (ret && bad)
		*bad = wr;
	if (qp->state == IBV_QPS_ERR)
		flush_rq(qp);
	return ret;
}

/* ---- SRQ ---- */

static _Atomic uint32_t g_n_srqs;

/**
 * ibv_create_srq: RETURN VALUE: the SRQ, or NULL with errno EINVAL (NULL
 * arguments, max_wr 0, max_wr or max_sge above the device limits,
 * srq_limit > max_wr) or ENOMEM (limits.max_srq SRQs exist, no memory, no
 * SRQ number left).
 */
DPV_EXPORT struct ibv_srq *ibv_create_srq(struct ibv_pd *pd, struct ibv_srq_init_attr *attr)
{
	struct dpv_runtime *rt = dpv_runtime_peek();
	if (!pd || !attr || !rt || !attr->attr.max_wr || attr->attr.max_wr > rt->conf.max_qp_wr ||
	    attr->attr.max_sge > rt->conf.max_sge || attr->attr.srq_limit > attr->attr.max_wr) {
		errno = EINVAL;
		return NULL;
	}
	if (atomic_load(&g_n_srqs) >= RTE_MIN(rt->conf.max_srq, 65535u)) {
		errno = ENOMEM; /* limits.max_srq SRQs exist */
		return NULL;
	}
	struct dpv_bufs bs = {0};
	struct dpv_pd *upd = to_dpd(pd);
	struct dpv_srq *s = dpv_buf_alloc(upd, &bs, sizeof(*s), 64, DPV_RES_SRQ);
	if (!s)
		return NULL;
	s->max_wr = pow2(attr->attr.max_wr);
	s->max_sge = RTE_MAX(attr->attr.max_sge, 1u);
	s->wqe_size = (uint32_t)(sizeof(struct dpv_recv_wqe) + s->max_sge * sizeof(struct ibv_sge));
	s->wqes = dpv_buf_alloc(upd, &bs, (size_t)s->max_wr * s->wqe_size, 64, DPV_RES_SRQ_RING);
	if (!s->wqes) {
		dpv_bufs_free_all(&bs);
		errno = ENOMEM;
		return NULL;
	}
	s->limit = attr->attr.srq_limit;
	s->upd = upd;
	s->pd = upd->base;
	rte_spinlock_init(&s->lock);
	s->ibsrq.context = pd->context;
	s->ibsrq.srq_context = attr->srq_context;
	s->ibsrq.pd = pd;
	pthread_mutex_init(&s->ibsrq.mutex, NULL);
	pthread_cond_init(&s->ibsrq.cond, NULL);
	s->type = IBV_SRQT_BASIC;
	s->srq_num = dpv_srq_num_alloc(s);
	if (!s->srq_num) {
		dpv_bufs_free_all(&bs);
		errno = ENOMEM;
		return NULL;
	}
	s->bufs = bs;
	atomic_fetch_add(&g_n_srqs, 1);
	attr->attr.max_wr = s->max_wr;
	attr->attr.max_sge = s->max_sge;
	atomic_fetch_add(&s->upd->users, 1);
	return &s->ibsrq;
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
	rte_spinlock_lock(&s->lock);
	if (mask & IBV_SRQ_LIMIT)
		s->limit = attr->srq_limit;
	rte_spinlock_unlock(&s->lock);
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
	attr->srq_limit = s->limit;
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
	dpv_srq_num_free(s->srq_num);
	atomic_fetch_sub(&g_n_srqs, 1);
	if (s->xrcd)
		atomic_fetch_sub(&s->xrcd->users, 1);
	if (s->cq)
		atomic_fetch_sub(&s->cq->users, 1);
	atomic_fetch_sub(&s->upd->users, 1);
	dpv_bufs_free_all(&s->bufs);
	return 0;
}

int dpv_post_srq_recv(struct ibv_srq *ib, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	struct dpv_srq *s = to_dsrq(ib);
	int ret = 0;
	if (!wr)
		return EINVAL;
	rte_spinlock_lock(&s->lock);
	for (; wr; wr = wr->next) {
		ret = post_recv_ring(s->wqes, s->wqe_size, s->max_wr, &s->head, &s->tail, s->max_sge, wr);
		if (ret)
			break;
	}
	rte_spinlock_unlock(&s->lock);
	if (ret && bad)
		*bad = wr;
	return ret;
}

/** ibv_attach_mcast / ibv_detach_mcast: multicast is not supported: EOPNOTSUPP. */
DPV_EXPORT int ibv_attach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	return EOPNOTSUPP;
}

DPV_EXPORT int ibv_detach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	return EOPNOTSUPP;
}
