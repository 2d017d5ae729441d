/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Importing PDs and MRs into a context made by ibv_import_device (rdma-core's
 * "shared PD" verbs): in shared mode the objects are dpverbsd's, so a
 * context imported from another context's command descriptor (of this
 * process or another) may name that context's PDs and MRs by handle. An
 * imported PD is the same protection domain (MRs, QPs, AHs of either side
 * work together); an imported MR carries the original's keys. Embedded mode
 * has no contexts to import from: ibv_import_device fails (EOPNOTSUPP).
 */
#include <errno.h>
#include <stdlib.h>

#include "dpv_verbs.h"

/**
 * ibv_import_pd: the PD pd_handle (ibv_pd.handle in the exporting process)
 * of the context this context was imported from. RETURN VALUE: the PD, or
 * NULL with errno: EINVAL (NULL context, or a context not made by
 * ibv_import_device), ENOENT (no such PD there), EOPNOTSUPP (embedded
 * mode), EIO, ENOMEM. Release with ibv_unimport_pd (or ibv_dealloc_pd: in
 * dpverbs both drop this process' handle; the domain lives while any
 * process holds one).
 */
DPV_EXPORT struct ibv_pd *ibv_import_pd(struct ibv_context *context, uint32_t pd_handle)
{
	if (!context) {
		errno = EINVAL;
		return NULL;
	}
	struct dpv_context *ctx = to_dctx(context);
	struct dpv_device *d = ctx->dev;
	struct dpv_pd *pd = calloc(1, sizeof(*pd));
	if (!pd) {
		errno = ENOMEM;
		return NULL;
	}
	int r = dpv_ops(d)->import_pd(d->drv_dev, ctx->drv_ctx, pd_handle);
	if (r) {
		free(pd);
		errno = -r;
		return NULL;
	}
	/* not in this process' pool: the number may be a PD of this process
	 * already (imported from a context of its own) */
	pd->handle = pd_handle;
	pd->ibpd.context = context;
	pd->ibpd.handle = pd_handle;
	pd->base = pd;
	return &pd->ibpd;
}

/** ibv_unimport_pd: drops the imported PD (nothing for NULL or a PD in use). */
DPV_EXPORT void ibv_unimport_pd(struct ibv_pd *pd)
{
	if (pd)
		ibv_dealloc_pd(pd);
}

/**
 * ibv_import_mr: the MR mr_handle (ibv_mr.handle) of the context pd's
 * context was imported from. RETURN VALUE: the MR (same lkey and rkey,
 * addr and length as registered), or NULL with errno: EINVAL (NULL pd),
 * ENOENT (no such MR there), EOPNOTSUPP (embedded mode), EIO, ENOMEM.
 * Release with ibv_unimport_mr; the MR itself stays registered until its
 * owner deregisters it.
 */
DPV_EXPORT struct ibv_mr *ibv_import_mr(struct ibv_pd *ibpd, uint32_t mr_handle)
{
	if (!ibpd) {
		errno = EINVAL;
		return NULL;
	}
	struct dpv_context *ctx = to_dctx(ibpd->context);
	struct dpv_device *d = ctx->dev;
	struct dpv_mr_desc desc;
	struct dpv_mr *mr = calloc(1, sizeof(*mr));
	if (!mr) {
		errno = ENOMEM;
		return NULL;
	}
	int r = dpv_ops(d)->import_mr(d->drv_dev, ctx->drv_ctx, mr_handle, &desc);
	if (r) {
		free(mr);
		errno = -r;
		return NULL;
	}
	mr->pd = desc.pd;
	mr->addr = (uint8_t *)(uintptr_t)desc.addr;
	mr->iova = desc.iova;
	mr->length = desc.length;
	mr->access = desc.access;
	mr->index = mr_handle;
	mr->upd = to_dpd(ibpd);
	mr->ibmr.context = ibpd->context;
	mr->ibmr.pd = ibpd;
	mr->ibmr.addr = mr->addr;
	mr->ibmr.length = desc.length;
	mr->ibmr.handle = mr_handle;
	mr->ibmr.lkey = mr->ibmr.rkey = desc.key;
	return &mr->ibmr;
}

/** ibv_unimport_mr: frees the imported MR's handle (the MR stays registered). */
DPV_EXPORT void ibv_unimport_mr(struct ibv_mr *mr)
{
	if (mr && dpv_pool_get(DPV_OBJ_MR, to_dmr(mr)->index) != to_dmr(mr))
		free(to_dmr(mr));
}
