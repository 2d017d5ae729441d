/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Device memory (ibv_alloc_dm): memory of the device, as a ConnectX's MEMIC,
 * that the application fills and reads with ibv_memcpy_to_dm /
 * ibv_memcpy_from_dm and registers as a zero-based MR (ibv_reg_dm_mr), which
 * SENDs, RDMA WRITEs, READs and atomics use as local or remote memory. Each
 * device has the port's "dm_size" bytes of it (ibv_query_device_ex's
 * max_dm_size; 0: none). The driver gives the memory: in embedded mode the
 * sw driver carves it from a hugepage memzone on the port's NUMA node
 * (drivers/sw/sw_dm.c), in shared mode dpverbsd makes a memfd per
 * allocation that both processes map (apps/dpverbsd/dpvd_dm.c). Errors as
 * mlx5 and ib_core give them (doc/man/ibv_alloc_dm.3.md).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "dpv_verbs.h"

/* This process' allocations, for ibv_import_dm from a context of its own
 * (embedded mode), and the holders of their memory. */
static pthread_mutex_t g_dm_lock = PTHREAD_MUTEX_INITIALIZER;
static LIST_HEAD(, dpv_dm) g_dms = LIST_HEAD_INITIALIZER(g_dms);

/* ibv_reg_dm_mr's access flags (mlx5: MLX5_DM_ALLOWED_ACCESS). */
#define DPV_DM_ACCESS                                                                            \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |             \
	 IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_ZERO_BASED | IBV_ACCESS_OPTIONAL_RANGE)

/* [off, off + len) inside the DM and 4-byte aligned, as mlx5's
 * memcpy_to_dm asks: EFAULT outside, EINVAL unaligned (in that order). */
static int dm_range(const struct dpv_dm *dm, uint64_t off, size_t len)
{
	if (off > dm->length || len > dm->length - off)
		return EFAULT;
	if ((off & 3) || (len & 3))
		return EINVAL;
	return 0;
}

static int dm_memcpy_to(struct ibv_dm *ibdm, uint64_t dm_offset, const void *host_addr, size_t length)
{
	struct dpv_dm *dm = to_ddm(ibdm);
	int r = dm_range(dm, dm_offset, length);
	if (r)
		return r;
	if (length)
		memcpy(dm->addr + dm_offset, host_addr, length);
	return 0;
}

static int dm_memcpy_from(void *host_addr, struct ibv_dm *ibdm, uint64_t dm_offset, size_t length)
{
	struct dpv_dm *dm = to_ddm(ibdm);
	int r = dm_range(dm, dm_offset, length);
	if (r)
		return r;
	if (length)
		memcpy(host_addr, dm->addr + dm_offset, length);
	return 0;
}

static struct dpv_dm *dm_new(struct ibv_context *context, const struct dpv_dm_desc *d, bool imported)
{
	struct dpv_dm *dm = calloc(1, sizeof(*dm));
	if (!dm)
		return NULL;
	dm->ibdm.context = context;
	dm->ibdm.memcpy_to_dm = dm_memcpy_to;
	dm->ibdm.memcpy_from_dm = dm_memcpy_from;
	dm->ibdm.handle = d->handle;
	dm->handle = d->handle;
	dm->length = d->length;
	dm->addr = d->addr;
	dm->imported = imported;
	return dm;
}

static void dm_desc(const struct dpv_dm *dm, struct dpv_dm_desc *d)
{
	d->handle = dm->handle;
	d->length = dm->length;
	d->addr = dm->addr;
}

/**
 * ibv_alloc_dm (verbs_context.alloc_dm) - attr->length bytes of device
 * memory, aligned to 2^attr->log_align_req.
 * RETURN VALUE: the DM, or NULL with errno: EINVAL (a comp_mask bit, zero
 * length or above max_dm_size, log_align_req above 12), ENOMEM (not that
 * much device memory left, or no memory), EOPNOTSUPP (max_dm_size is 0),
 * EIO (shared mode: the daemon is gone).
 */
static struct ibv_dm *dpv_alloc_dm(struct ibv_context *context, struct ibv_alloc_dm_attr *attr)
{
	if (!context || !attr || attr->comp_mask) {
		errno = EINVAL;
		return NULL;
	}
	struct dpv_context *ctx = to_dctx(context);
	struct dpv_device *d = ctx->dev;
	if (!d->dm_size) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (!attr->length || attr->length > d->dm_size || attr->log_align_req > DPV_DM_MAX_LOG_ALIGN) {
		errno = EINVAL; /* mlx5: above max_dm_size; the kernel: 0, alignment */
		return NULL;
	}
	struct dpv_dm_desc desc;
	memset(&desc, 0, sizeof(desc));
	int r = dpv_ops(d)->alloc_dm(d->drv_dev, ctx->drv_ctx, attr->length, attr->log_align_req, &desc);
	if (r) {
		errno = -r;
		return NULL;
	}
	struct dpv_dm *dm = dm_new(context, &desc, false);
	if (!dm) {
		dpv_ops(d)->free_dm(d->drv_dev, &desc);
		errno = ENOMEM;
		return NULL;
	}
	dm->holders = 1;
	pthread_mutex_lock(&g_dm_lock);
	LIST_INSERT_HEAD(&g_dms, dm, next);
	pthread_mutex_unlock(&g_dm_lock);
	return &dm->ibdm;
}

/* The driver of device d lets go of dm's memory: 0 or -errno. */
static int dm_release(struct dpv_device *d, struct dpv_dm *dm)
{
	struct dpv_dm_desc desc;
	dm_desc(dm, &desc);
	int r = dpv_ops(d)->free_dm(d->drv_dev, &desc);
	return r == -EIO ? 0 : r; /* a daemon that is gone freed it already */
}

/* An import of this process' own allocation goes: the memory goes with
 * the allocation's last holder (the kernel keeps MEMIC pages while a
 * mapping of them lives). */
static int dm_drop_local(struct dpv_dm *dm)
{
	struct dpv_dm *o = dm->origin;
	struct dpv_device *d = to_dctx(dm->ibdm.context)->dev; /* o's context may be closed */
	pthread_mutex_lock(&g_dm_lock);
	bool last = --o->holders == 0;
	pthread_mutex_unlock(&g_dm_lock);
	free(dm);
	if (last) {
		dm_release(d, o);
		free(o);
	}
	return 0;
}

/**
 * ibv_free_dm (verbs_context.free_dm): 0, or EBUSY while an MR is registered
 * on it (ib_core's use count), EINVAL for NULL. An allocation's memory
 * stays while imports of this process hold it.
 */
static int dpv_free_dm(struct ibv_dm *ibdm)
{
	if (!ibdm)
		return EINVAL;
	struct dpv_dm *dm = to_ddm(ibdm);
	if (atomic_load(&dm->mrs))
		return EBUSY;
	if (dm->origin)
		return dm_drop_local(dm);
	struct dpv_device *d = to_dctx(ibdm->context)->dev;
	if (dm->imported) { /* shared mode: the daemon's handle */
		int r = dm_release(d, dm);
		if (r)
			return -r;
		free(dm);
		return 0;
	}
	pthread_mutex_lock(&g_dm_lock);
	LIST_REMOVE(dm, next);
	bool last = --dm->holders == 0;
	pthread_mutex_unlock(&g_dm_lock);
	if (!last)
		return 0; /* its imports free it */
	int r = dm_release(d, dm);
	if (r) {
		pthread_mutex_lock(&g_dm_lock);
		dm->holders++;
		LIST_INSERT_HEAD(&g_dms, dm, next);
		pthread_mutex_unlock(&g_dm_lock);
		return -r;
	}
	free(dm);
	return 0;
}

/* Embedded mode: the import of allocation handle of the context of this
 * process ctx was imported from (ibv_import_device), or NULL with errno
 * EINVAL (ctx was not imported), ENOENT (no such allocation there). */
static struct dpv_dm *dm_import_local(struct ibv_context *context, struct dpv_context *ctx, uint32_t handle)
{
	int err = 0;
	struct dpv_context *src = dpv_import_src_lock(ctx, &err);
	if (!src) {
		errno = err;
		return NULL;
	}
	struct dpv_dm *dm = NULL, *o;
	pthread_mutex_lock(&g_dm_lock);
	LIST_FOREACH(o, &g_dms, next)
		if (o->handle == handle && o->ibdm.context == &src->vctx.context)
			break;
	if (o) {
		struct dpv_dm_desc desc;
		dm_desc(o, &desc);
		dm = dm_new(context, &desc, true);
		if (dm) {
			dm->origin = o;
			o->holders++;
		}
	}
	pthread_mutex_unlock(&g_dm_lock);
	rte_spinlock_unlock(&src->dev->ctx_lock);
	if (!dm)
		errno = o ? ENOMEM : ENOENT;
	return dm;
}

/**
 * ibv_import_dm - the device memory dm_handle (ibv_dm.handle) of the context
 * this context was imported from (ibv_import_device): in shared mode
 * through dpverbsd, in embedded mode from a context of this process.
 * RETURN VALUE: the DM, or NULL with errno: EINVAL (NULL context, or a
 * context not made by ibv_import_device), ENOENT (no such device memory
 * there, or that context is closed), EIO, ENOMEM. Let go of it with
 * ibv_unimport_dm.
 */
DPV_EXPORT struct ibv_dm *ibv_import_dm(struct ibv_context *context, uint32_t dm_handle)
{
	if (!context) {
		errno = EINVAL;
		return NULL;
	}
	struct dpv_context *ctx = to_dctx(context);
	struct dpv_device *d = ctx->dev;
	struct dpv_dm_desc desc;
	memset(&desc, 0, sizeof(desc));
	int r = dpv_ops(d)->import_dm(d->drv_dev, ctx->drv_ctx, dm_handle, &desc);
	if (r == -EOPNOTSUPP) { /* embedded mode: an allocation of this process */
		struct dpv_dm *dm = dm_import_local(context, ctx, dm_handle);
		return dm ? &dm->ibdm : NULL;
	}
	if (r) {
		errno = -r;
		return NULL;
	}
	struct dpv_dm *dm = dm_new(context, &desc, true);
	if (!dm) {
		dpv_ops(d)->free_dm(d->drv_dev, &desc);
		errno = ENOMEM;
		return NULL;
	}
	return &dm->ibdm;
}

/**
 * ibv_unimport_dm - this context lets go of an imported device memory (the
 * memory stays its owner's). Nothing for NULL or while an MR of this
 * process is registered on it.
 */
DPV_EXPORT void ibv_unimport_dm(struct ibv_dm *ibdm)
{
	if (ibdm && to_ddm(ibdm)->imported)
		dpv_free_dm(ibdm);
}

/**
 * ibv_reg_dm_mr (verbs_context.reg_dm_mr) - register length bytes of dm
 * from dm_offset as a zero-based MR: SGEs and remote addresses name its
 * bytes by their offset from the MR's start (0 .. length - 1).
 * RETURN VALUE: the MR, or NULL with errno: EINVAL (NULL argument, access
 * without IBV_ACCESS_ZERO_BASED or with a bit mlx5 refuses, remote write or
 * atomic without local write, the range outside the DM (a zero length is
 * accepted, as ib_core does), a PD
 * of another device), ENOMEM (limits.max_mr MRs exist).
 */
static struct ibv_mr *dpv_reg_dm_mr(struct ibv_pd *ibpd, struct ibv_dm *ibdm, uint64_t dm_offset, size_t length,
				    unsigned int access)
{
	unsigned int acc = access & ~(unsigned int)IBV_ACCESS_OPTIONAL_RANGE;
	if (!ibpd || !ibdm || (access & ~(unsigned int)DPV_DM_ACCESS) || !(access & IBV_ACCESS_ZERO_BASED) ||
	    ((acc & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) && !(acc & IBV_ACCESS_LOCAL_WRITE)) ||
	    to_dctx(ibpd->context)->dev != to_dctx(ibdm->context)->dev) {
		errno = EINVAL;
		return NULL;
	}
	struct dpv_dm *dm = to_ddm(ibdm);
	if (dm_offset > dm->length || length > dm->length - dm_offset) {
		errno = EINVAL; /* ib_core: the range must lie inside the DM (0 bytes may) */
		return NULL;
	}
	return dpv_mr_reg_dm(ibpd, dm, dm_offset, length, acc);
}

void dpv_dm_ops_init(struct verbs_context *v)
{
	v->alloc_dm = dpv_alloc_dm;
	v->free_dm = dpv_free_dm;
	v->reg_dm_mr = dpv_reg_dm_mr;
}
