/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Memory windows (IBA 10.6.7): type 1 and type 2B. A window takes a number
 * of the MR pool: MRs and windows share one key space, as an RNIC's memory
 * protection table holds both, and an rkey names either (the engine tells
 * them apart by its table entry). Allocating and deallocating a window are
 * commands to the engine (alloc_mw, dealloc_mw); binding and invalidating
 * one are work requests, executed by the engine in the order of their send
 * queue: ibv_bind_mw posts an IBV_WR_BIND_MW for a type 1 window, as
 * rdma-core's providers do, and a type 2 window is bound by the
 * application's own IBV_WR_BIND_MW (ibv_wr_bind_mw), invalidated by
 * IBV_WR_LOCAL_INV or by the peer's SEND with invalidate.
 */
#include <errno.h>
#include <stdlib.h>

#include <rte_cycles.h>
#include <rte_spinlock.h>

#include "dpv_verbs.h"

/* Serialises deallocations of one window against each other. */
static rte_spinlock_t g_mw_lock = RTE_SPINLOCK_INITIALIZER;
static _Atomic uint8_t g_mw_key_seq;

/**
 * ibv_alloc_mw (context->ops.alloc_mw): a window of type 1 or 2 (type 2B:
 * bound to the QP that binds it) on pd, not bound; its rkey is index << 8
 * and an 8-bit key. RETURN VALUE: the window, or NULL with errno:
 * EOPNOTSUPP (a driver without memory windows), EINVAL (NULL pd, a type
 * other than IBV_MW_TYPE_1 and IBV_MW_TYPE_2, as rxe and mlx5 refuse it),
 * ENOMEM (limits.max_mr MRs and windows exist: they share the limit), EIO
 * (shared mode: the daemon is gone).
 */
struct ibv_mw *dpv_alloc_mw(struct ibv_pd *ibpd, enum ibv_mw_type type)
{
	if (!dpv_core_has_mw()) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (!ibpd || (type != IBV_MW_TYPE_1 && type != IBV_MW_TYPE_2)) {
		errno = EINVAL;
		return NULL;
	}
	struct dpv_mw *mw = calloc(1, sizeof(*mw));
	if (!mw) {
		errno = ENOMEM;
		return NULL;
	}
	mw->kind = DPV_KEY_MW;
	mw->upd = to_dpd(ibpd);
	int pe = dpv_pool_add(DPV_OBJ_MR, mw, &mw->index);
	if (pe != 0) {
		free(mw);
		errno = dpv_pool_errno(pe);
		return NULL;
	}
	uint8_t key = atomic_fetch_add(&g_mw_key_seq, 1) + (uint8_t)(rte_get_tsc_cycles() >> 4);
	mw->ibmw.context = ibpd->context;
	mw->ibmw.pd = ibpd;
	mw->ibmw.type = type;
	mw->ibmw.handle = mw->index;
	mw->ibmw.rkey = mw->index << 8 | key;
	struct dpv_device *d = to_dctx(ibpd->context)->dev;
	struct dpv_mw_desc desc = {.key = mw->ibmw.rkey, .pd = mw->upd->base->handle, .type = (uint32_t)type};
	int r = dpv_ops(d)->alloc_mw(d->drv_dev, &desc);
	if (r) {
		dpv_pool_del(DPV_OBJ_MR, mw->index, mw);
		free(mw);
		errno = -r;
		return NULL;
	}
	atomic_fetch_add(&mw->upd->users, 1);
	return &mw->ibmw;
}

/**
 * ibv_dealloc_mw (context->ops.dealloc_mw): the window goes, bound or not;
 * its rkeys are refused from now on (a remote access with one is a remote
 * access error). RETURN VALUE: 0, or EINVAL (NULL, or not an allocated
 * window).
 */
int dpv_dealloc_mw(struct ibv_mw *ibmw)
{
	if (!ibmw)
		return EINVAL;
	struct dpv_mw *mw = to_dmw(ibmw);
	rte_spinlock_lock(&g_mw_lock);
	if (dpv_pool_get(DPV_OBJ_MR, mw->index) != mw) {
		rte_spinlock_unlock(&g_mw_lock);
		return EINVAL;
	}
	struct dpv_device *d = to_dctx(ibmw->context)->dev;
	dpv_ops(d)->dealloc_mw(d->drv_dev, mw->index << 8);
	dpv_pool_del(DPV_OBJ_MR, mw->index, mw);
	rte_spinlock_unlock(&g_mw_lock);
	atomic_fetch_sub(&mw->upd->users, 1);
	free(mw);
	return 0;
}

/**
 * ibv_bind_mw (context->ops.bind_mw, after verbs.h's checks: a type 1
 * window; no MR only with addr and length 0; the MR's PD is the window's):
 * posts an IBV_WR_BIND_MW on qp's send queue with the window's next rkey
 * (ibv_inc_rkey), which mw->rkey holds on return. The bind itself is
 * checked by the engine when it executes the work request: a bad one
 * completes with IBV_WC_MW_BIND_ERR and the QP goes to ERR. Length 0
 * unbinds the window. RETURN VALUE: 0, or an errno value: EINVAL (NULL
 * arguments, objects of another context, IBV_ACCESS_ZERO_BASED in the
 * window's or in the MR's access: a type 1 window is never zero-based,
 * IBA o10-36.2.2), or what ibv_post_send(3) returns.
 */
int dpv_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mw_bind *bind)
{
	if (!qp || !mw || !bind || qp->context != mw->context)
		return EINVAL;
	const struct ibv_mw_bind_info *bi = &bind->bind_info;
	if ((bi->mw_access_flags & IBV_ACCESS_ZERO_BASED) ||
	    (bi->mr && (bi->mr->context != mw->context || (to_dmr(bi->mr)->access & IBV_ACCESS_ZERO_BASED))))
		return EINVAL;
	struct ibv_send_wr wr = {.wr_id = bind->wr_id, .opcode = IBV_WR_BIND_MW, .send_flags = bind->send_flags};
	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = ibv_inc_rkey(mw->rkey);
	wr.bind_mw.bind_info = *bi;
	int r = dpv_post_bind_mw(qp, &wr);
	if (!r)
		mw->rkey = wr.bind_mw.rkey;
	return r;
}
