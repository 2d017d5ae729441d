/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The QP state machine of the façade: which modify-QP transitions are legal
 * and which attributes each requires or allows (IBA 10.3.1, table 91),
 * attribute value checks, and ibv_modify_qp, which applies a validated
 * transition through the driver (the engine keeps the transport state: PSNs,
 * windows, timers).
 */
#include <errno.h>
#include <string.h>

#include "dpv_verbs.h"

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
/* Linux's RAW_PACKET column (ib_modify_qp_is_ok): the port at INIT, nothing
 * else; the rate limit (RTR->RTS, RTS->RTS) is not supported. */
static const struct qp_trans tr_raw[IBV_QPS_ERR + 1][IBV_QPS_ERR + 1] = {
	[IBV_QPS_RESET][IBV_QPS_INIT] = T(IBV_QP_PORT, 0),
	[IBV_QPS_INIT][IBV_QPS_INIT] = T(0, IBV_QP_PORT),
	[IBV_QPS_INIT][IBV_QPS_RTR] = T(0, 0),
	[IBV_QPS_RTR][IBV_QPS_RTS] = T(0, 0),
	[IBV_QPS_RTS][IBV_QPS_RTS] = T(0, 0),
	[IBV_QPS_RTS][IBV_QPS_SQD] = T(0, IBV_QP_EN_SQD_ASYNC_NOTIFY),
	[IBV_QPS_SQD][IBV_QPS_RTS] = T(0, 0),
	[IBV_QPS_SQD][IBV_QPS_SQD] = T(0, 0),
	[IBV_QPS_SQE][IBV_QPS_RTS] = T(0, 0),
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
				  : t == IBV_QPT_XRC_RECV ? &tr_xrc_tgt[from][to]
				  : t == IBV_QPT_RAW_PACKET ? &tr_raw[from][to] : NULL;
	return tr && tr->ok ? tr : NULL;
}

static int check_attr_values(struct dpv_device *dev, const struct ibv_qp_attr *a, int mask)
{
	const struct dpv_params *p = &dpv_core_peek()->params;
	struct dpv_gid sgid;
	if ((mask & IBV_QP_PORT) && a->port_num != DPV_PORT_NUM)
		return EINVAL;
	if ((mask & IBV_QP_PKEY_INDEX) && a->pkey_index >= DPV_PKEY_TABLE_LEN)
		return EINVAL;
	/* RoCE: a GRH is required and the source GID must exist */
	if ((mask & IBV_QP_AV) && dpv_av_check(dev, &a->ah_attr, &sgid))
		return EINVAL;
	if ((mask & IBV_QP_PATH_MTU) && (a->path_mtu < IBV_MTU_256 || a->path_mtu > IBV_MTU_4096))
		return EINVAL;
	if ((mask & IBV_QP_DEST_QPN) && a->dest_qp_num > DPV_QPN_MASK)
		return EINVAL;
	if ((mask & IBV_QP_RETRY_CNT) && a->retry_cnt > 7)
		return EINVAL;
	if ((mask & IBV_QP_RNR_RETRY) && a->rnr_retry > 7)
		return EINVAL;
	if ((mask & IBV_QP_MIN_RNR_TIMER) && a->min_rnr_timer > 31)
		return EINVAL;
	if ((mask & IBV_QP_TIMEOUT) && a->timeout > 31)
		return EINVAL;
	if ((mask & IBV_QP_MAX_QP_RD_ATOMIC) && a->max_rd_atomic > p->max_qp_init_rd_atom)
		return EINVAL;
	if ((mask & IBV_QP_MAX_DEST_RD_ATOMIC) && a->max_dest_rd_atomic > p->max_qp_rd_atom)
		return EINVAL;
	/* the MR-only bits an application passes along with the remote rights
	 * (pyverbs gives a QP its MR's access, IBV_ACCESS_ON_DEMAND included)
	 * are ignored, as the kernel and mlx5 do; unknown bits are not */
	if ((mask & IBV_QP_ACCESS_FLAGS) &&
	    (a->qp_access_flags & ~(unsigned int)(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
						  IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC |
						  IBV_ACCESS_MW_BIND | IBV_ACCESS_ZERO_BASED |
						  IBV_ACCESS_ON_DEMAND | IBV_ACCESS_HUGETLB |
						  DPV_ACCESS_FLUSH_GLOBAL | DPV_ACCESS_FLUSH_PERSISTENT)))
		return EINVAL;
	return 0;
}


int dpv_qp_modify_check(enum ibv_qp_type type, struct dpv_device *dev, enum ibv_qp_state cur,
			const struct ibv_qp_attr *attr, int mask, enum ibv_qp_state *to)
{
	const uint32_t all = (IBV_QP_RATE_LIMIT << 1) - 1;
	if ((uint32_t)mask & ~all)
		return EINVAL;
	if ((mask & IBV_QP_CUR_STATE) && attr->cur_qp_state != cur)
		return EINVAL;
	*to = (mask & IBV_QP_STATE) ? attr->qp_state : cur;
	const struct qp_trans *tr = trans_for(type, cur, *to);
	uint32_t m = (uint32_t)mask & ~(uint32_t)IBV_QP_STATE;
	if (!tr || (m & tr->req) != tr->req || (m & ~(tr->req | tr->opt | IBV_QP_CUR_STATE)) ||
	    check_attr_values(dev, attr, mask))
		return EINVAL;
	return 0;
}

void dpv_qp_attr_store(struct ibv_qp_attr *q, const struct ibv_qp_attr *attr, int mask)
{
	if (mask & IBV_QP_QKEY)
		q->qkey = attr->qkey;
	if (mask & IBV_QP_PKEY_INDEX)
		q->pkey_index = attr->pkey_index;
	if (mask & IBV_QP_PORT)
		q->port_num = attr->port_num;
	if (mask & IBV_QP_ACCESS_FLAGS)
		q->qp_access_flags = attr->qp_access_flags;
	if (mask & IBV_QP_AV)
		q->ah_attr = attr->ah_attr;
	if (mask & IBV_QP_PATH_MTU)
		q->path_mtu = attr->path_mtu;
	if (mask & IBV_QP_DEST_QPN)
		q->dest_qp_num = attr->dest_qp_num;
	if (mask & IBV_QP_RQ_PSN)
		q->rq_psn = attr->rq_psn & DPV_PSN_MASK;
	if (mask & IBV_QP_SQ_PSN)
		q->sq_psn = attr->sq_psn & DPV_PSN_MASK;
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
}

/* RESET: the rings start empty again (the engine has stopped reading them)
 * and the QP's completions not polled yet are removed from its CQs. */
static void rings_reset(struct dpv_qp *qp)
{
	if (qp->sq)
		dpv_ring_init(qp->sq, DPV_RING_SQ, qp->sq->size, qp->sq->stride);
	if (qp->rq)
		dpv_ring_init(qp->rq, DPV_RING_RQ, qp->rq->size, qp->rq->stride);
	qp->sq_pi = 0;
	qp->rq_pi = 0;
	atomic_store(&qp->sq_retired, 0);
	if (qp->scq)
		dpv_cq_clean(qp->scq, qp->qpn);
	if (qp->rcq && qp->rcq != qp->scq)
		dpv_cq_clean(qp->rcq, qp->qpn);
}

/* Must hold qp->lock. 0 or EINVAL. */
static int modify_locked(struct dpv_qp *qp, struct ibv_qp_attr *attr, int mask)
{
	enum ibv_qp_state cur = dpv_qp_state(qp);
	enum ibv_qp_state to;
	struct ibv_qp_attr lid_attr;
	if ((mask & IBV_QP_AV) && !attr->ah_attr.is_global) {
		/* addressed by LID: the GRH of that host (dpv_av_from_lid) */
		lid_attr = *attr;
		dpv_av_from_lid(qp->ctx->dev, &attr->ah_attr, &lid_attr.ah_attr);
		attr = &lid_attr;
	}
	struct ibv_qp_attr saved = qp->attr;
	int r, tries = 0;
	do {
		/* -EAGAIN: the engine moved the QP (ERR, SQE) after cur was
		 * read; the transition is checked again from the new state */
		if (tries)
			cur = dpv_qp_state(qp);
		if (dpv_qp_modify_check(qp->type, qp->ctx->dev, cur, attr, mask, &to))
			return EINVAL;
		qp->attr = saved;
		dpv_qp_attr_store(&qp->attr, attr, mask);
		/* the engine gets the whole attribute set, as a QP context */
		r = ctx_ops(dqp_ib(qp)->context)->modify_qp(qp->drv, &qp->attr, mask, cur, to);
	} while (r == -EAGAIN && ++tries < 4);
	if (r) {
		qp->attr = saved;
		return r == -EAGAIN ? EINVAL : -r;
	}
	if (to == IBV_QPS_RESET)
		rings_reset(qp);
	qp->state = to;
	qp->attr.qp_state = qp->attr.cur_qp_state = to;
	dqp_ib(qp)->state = to;
	return 0;
}

/**
 * ibv_modify_qp: RETURN VALUE: 0, or EINVAL (unknown mask bits, a required
 * attribute missing, an attribute not allowed in this transition, an illegal
 * transition (also from a state the engine moved the QP to: ERR, SQE),
 * cur_qp_state that does not match, port_num != 1, pkey_index out of range,
 * an address vector without GRH (unless its DLID is a host's in the port's
 * IPv4 /16: dpverbs' LIDs on RoCE), with an unknown source GID or another IP
 * family, path_mtu, retry_cnt, rnr_retry, timeout, min_rnr_timer,
 * max_rd_atomic or max_dest_rd_atomic out of range).
 */
DPV_EXPORT int ibv_modify_qp(struct ibv_qp *ib, struct ibv_qp_attr *attr, int mask)
{
	if (!ib || !attr)
		return EINVAL;
	struct dpv_qp *qp = to_dqp(ib);
	if (qp->foreign)
		return dpv_open_qp_modify(qp, attr, mask); /* another process' QP (shared mode) */
	if (qp->opened) {
		int r = ibv_modify_qp(dqp_ib(qp->opened), attr, mask);
		ib->state = qp->opened->state;
		return r;
	}
	const uint32_t all = (IBV_QP_RATE_LIMIT << 1) - 1;
	if ((uint32_t)mask & ~all)
		return EINVAL;
	if (!qp->lockless) {
		rte_spinlock_lock(&qp->lock);
		rte_spinlock_lock(&qp->rq_lock);
	}
	int r = modify_locked(qp, attr, mask);
	if (!qp->lockless) {
		rte_spinlock_unlock(&qp->rq_lock);
		rte_spinlock_unlock(&qp->lock);
	}
	return r;
}
