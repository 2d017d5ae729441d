/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Importing PDs and MRs into a context made by ibv_import_device (rdma-core's
 * "shared PD" verbs): in shared mode the objects are dpverbsd's, so a
 * context imported from another context's command descriptor (of this
 * process or another) may name that context's PDs and MRs by handle. An
 * imported PD is the same protection domain (MRs, QPs, AHs of either side
 * work together); an imported MR carries the original's keys. In embedded
 * mode the engine is the process' own, so only a context of the same
 * process can be imported: its stand-in command descriptor (a memfd) names
 * it by inode, and its PDs and MRs are found in this process' pool (an
 * imported PD holds a user of the original, so the original cannot be
 * deallocated under it).
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "dpv_verbs.h"

/* The context of this process whose cmd_fd has inode (dv, ino), or NULL.
 * Returns with its device's ctx_lock held when found. */
static struct dpv_context *ctx_by_inode(struct dpv_core *core, dev_t dv, ino_t ino)
{
	for (unsigned int i = 0; i < core->n_devs; i++) {
		struct dpv_device *d = &core->devs[i];
		struct dpv_context *c;
		rte_spinlock_lock(&d->ctx_lock);
		LIST_FOREACH(c, &d->ctxs, next) {
			struct stat st;
			if (fstat(c->vctx.context.cmd_fd, &st) == 0 && st.st_dev == dv && st.st_ino == ino)
				return c;
		}
		rte_spinlock_unlock(&d->ctx_lock);
	}
	return NULL;
}

int dpv_import_local_ctx(struct dpv_core *core, int fd, struct dpv_context *ctx, struct dpv_device **d)
{
	struct stat st;
	if (fstat(fd, &st) != 0)
		return -EBADF;
	struct dpv_context *from = ctx_by_inode(core, st.st_dev, st.st_ino);
	if (!from)
		return -EBADF; /* not a context of this process (another process' engine is out of reach) */
	*d = from->dev;
	ctx->imported = true;
	ctx->imp_dev = from->imported ? from->imp_dev : st.st_dev; /* an imported one's: its origin's */
	ctx->imp_ino = from->imported ? from->imp_ino : st.st_ino;
	rte_spinlock_unlock(&from->dev->ctx_lock);
	return 0;
}

struct dpv_context *dpv_import_src_lock(struct dpv_context *ctx, int *err)
{
	struct dpv_core *core = dpv_core_peek();
	struct dpv_context *from = ctx->imported && core ? ctx_by_inode(core, ctx->imp_dev, ctx->imp_ino) : NULL;
	if (!from)
		*err = ctx->imported ? ENOENT : EINVAL;
	return from;
}

/* Embedded mode: object num of type t of the context ctx was imported
 * from, with a user held on a PD (NULL: errno set, EINVAL for a context not
 * made by ibv_import_device, ENOENT for no such object there). */
static void *local_obj(struct dpv_context *ctx, enum dpv_obj_type t, uint32_t num)
{
	struct dpv_core *core = dpv_core_peek();
	struct dpv_context *from = ctx->imported && core ? ctx_by_inode(core, ctx->imp_dev, ctx->imp_ino) : NULL;
	if (!ctx->imported) {
		errno = EINVAL;
		return NULL;
	}
	void *o = from ? dpv_pool_get(t, num) : NULL;
	if (o && t == DPV_OBJ_PD) {
		struct dpv_pd *pd = o;
		if (pd->ibpd.context == &from->vctx.context && !pd->parent && !pd->imported)
			atomic_fetch_add(&pd->users, 1);
		else
			o = NULL;
	} else if (o && (dpv_pool_obj_is_mw(o) || ((struct dpv_mr *)o)->ibmr.context != &from->vctx.context)) {
		o = NULL; /* a memory window is no MR to import */
	}
	if (from)
		rte_spinlock_unlock(&from->dev->ctx_lock);
	if (!o)
		errno = ENOENT;
	return o;
}

/**
 * ibv_import_pd: the PD pd_handle (ibv_pd.handle in the exporting process)
 * of the context this context was imported from. RETURN VALUE: the PD, or
 * NULL with errno: EINVAL (NULL context, or a context not made by
 * ibv_import_device), ENOENT (no such PD there, or the context it was
 * imported from is closed), EIO, ENOMEM. Release with ibv_unimport_pd (or ibv_dealloc_pd: in
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
	if (r == -EOPNOTSUPP && !(pd->imported = local_obj(ctx, DPV_OBJ_PD, pd_handle)))
		r = -errno; /* embedded mode: a PD of this process */
	else if (r == -EOPNOTSUPP)
		r = 0;
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
 * addr and length as registered), or NULL with errno: EINVAL (NULL pd, a
 * context not made by ibv_import_device), ENOENT (no such MR there), EIO,
 * ENOMEM.
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
	if (r == -EOPNOTSUPP) { /* embedded mode: an MR of this process */
		const struct dpv_mr *o = local_obj(ctx, DPV_OBJ_MR, mr_handle);
		r = o ? 0 : -errno;
		if (o)
			desc = (struct dpv_mr_desc){.key = o->ibmr.lkey, .pd = o->pd, .addr = (uintptr_t)o->addr,
						    .iova = o->iova, .length = o->length, .access = o->access};
	}
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
