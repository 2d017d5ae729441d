/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Memory regions. An MR is the application's own virtual memory: nothing is
 * pinned, the engine copies between packet buffers and registered memory on
 * the CPU. lkey == rkey == (pool index << 8) | 8-bit key, so a stale key of
 * a reused index does not match (dpv_mr_lookup compares the whole key).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_spinlock.h>

#include "dpv_verbs.h"

#define DPV_ACCESS_SUPPORTED                                                                     \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |             \
	 IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_MW_BIND | IBV_ACCESS_ZERO_BASED)

/* Serialises rereg/dereg of one MR against each other. */
static rte_spinlock_t g_mr_lock = RTE_SPINLOCK_INITIALIZER;
static _Atomic uint8_t g_key_seq;

/* The "register MR" command for the engine: mr as it stands now. */
static int mr_to_engine(struct dpv_mr *mr)
{
	struct dpv_device *d = to_dctx(mr->ibmr.context)->dev;
	struct dpv_mr_desc desc = {.key = mr->ibmr.lkey, .pd = mr->pd, .addr = (uintptr_t)mr->addr,
				   .iova = mr->iova, .length = mr->length, .access = mr->access};
	return dpv_ops(d)->reg_mr(d->drv_dev, &desc);
}

static void mr_from_engine(struct dpv_mr *mr)
{
	struct dpv_device *d = to_dctx(mr->ibmr.context)->dev;
	dpv_ops(d)->dereg_mr(d->drv_dev, mr->ibmr.lkey);
}

/* IBA 10.6.3.1 (C10-18): remote write or atomic access needs local write. */
static bool access_ok(unsigned int acc)
{
	if (acc & ~(unsigned int)DPV_ACCESS_SUPPORTED)
		return false;
	return !((acc & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) && !(acc & IBV_ACCESS_LOCAL_WRITE));
}

/**
 * ibv_reg_mr_iova2 - register addr..addr+length, addressed remotely as iova.
 * RETURN VALUE: the MR, or NULL with errno: EINVAL (NULL pd, zero length,
 * length above max_mr_size, unknown access bits, remote write/atomic without
 * local write), EFAULT (NULL addr), ENOMEM (limits.max_mr MRs exist, or no
 * memory).
 */
DPV_EXPORT struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *ibpd, void *addr, size_t length, uint64_t iova,
					   unsigned int access)
{
	struct dpv_core *core = dpv_core_peek();
	unsigned int acc = access & ~(unsigned int)IBV_ACCESS_OPTIONAL_RANGE;
	if (!ibpd || !core || !access_ok(acc) || !length || length > core->params.max_mr_size) {
		errno = EINVAL;
		return NULL;
	}
	if (!addr) {
		errno = EFAULT;
		return NULL;
	}
	struct dpv_mr *mr = calloc(1, sizeof(*mr));
	if (!mr) {
		errno = ENOMEM;
		return NULL;
	}
	mr->upd = to_dpd(ibpd);
	mr->pd = mr->upd->base->handle;
	mr->addr = addr;
	mr->length = length;
	mr->iova = (acc & IBV_ACCESS_ZERO_BASED) ? 0 : iova;
	mr->access = (int)acc;
	mr->ibmr.context = ibpd->context;
	mr->ibmr.pd = ibpd;
	mr->ibmr.addr = addr;
	mr->ibmr.length = length;
	uint8_t key = atomic_fetch_add(&g_key_seq, 1) + (uint8_t)(rte_get_tsc_cycles() >> 4);
	/* the key must be right before the MR can be found: publish with it */
	int pe = dpv_pool_add(DPV_OBJ_MR, mr, &mr->index);
	if (pe != 0) {
		free(mr);
		errno = dpv_pool_errno(pe); /* limits.max_mr MRs exist */
		return NULL;
	}
	mr->ibmr.handle = mr->index;
	__atomic_store_n(&mr->ibmr.lkey, mr->index << 8 | key, __ATOMIC_RELEASE);
	mr->ibmr.rkey = mr->ibmr.lkey;
	int r = mr_to_engine(mr);
	if (r) {
		dpv_pool_del(DPV_OBJ_MR, mr->index, mr);
		free(mr);
		errno = -r;
		return NULL;
	}
	atomic_fetch_add(&mr->upd->users, 1);
	return &mr->ibmr;
}

#undef ibv_reg_mr
#undef ibv_reg_mr_iova
/** ibv_reg_mr: ibv_reg_mr_iova2 with iova = addr. */
DPV_EXPORT struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t length, int access)
{
	return ibv_reg_mr_iova2(pd, addr, length, (uintptr_t)addr, (unsigned int)access);
}

/** ibv_reg_mr_iova: ibv_reg_mr_iova2 with int access flags. */
DPV_EXPORT struct ibv_mr *ibv_reg_mr_iova(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova,
					  int access)
{
	return ibv_reg_mr_iova2(pd, addr, length, iova, (unsigned int)access);
}

/** ibv_dereg_mr: 0, or EINVAL for NULL or an MR that is not registered. */
DPV_EXPORT int ibv_dereg_mr(struct ibv_mr *ibmr)
{
	if (!ibmr)
		return EINVAL;
	struct dpv_mr *mr = to_dmr(ibmr);
	rte_spinlock_lock(&g_mr_lock);
	if (dpv_pool_get(DPV_OBJ_MR, mr->index) != mr) {
		rte_spinlock_unlock(&g_mr_lock);
		return EINVAL;
	}
	mr_from_engine(mr);
	dpv_pool_del(DPV_OBJ_MR, mr->index, mr);
	rte_spinlock_unlock(&g_mr_lock);
	atomic_fetch_sub(&mr->upd->users, 1);
	free(mr);
	return 0;
}

/**
 * ibv_rereg_mr - change the translation (addr/length), PD and/or access of
 * an MR in place; lkey and rkey stay the same.
 * RETURN VALUE: 0, or IBV_REREG_MR_ERR_INPUT with errno EINVAL (NULL MR,
 * no or unknown flags, bad access flags, NULL addr, zero length or above
 * max_mr_size, NULL PD or a PD of another context with
 * IBV_REREG_MR_CHANGE_PD).
 */
DPV_EXPORT int ibv_rereg_mr(struct ibv_mr *ibmr, int flags, struct ibv_pd *pd, void *addr, size_t length,
			    int access)
{
	const int known = IBV_REREG_MR_CHANGE_TRANSLATION | IBV_REREG_MR_CHANGE_PD | IBV_REREG_MR_CHANGE_ACCESS;
	struct dpv_core *core = dpv_core_peek();
	unsigned int acc = (unsigned int)access & ~(unsigned int)IBV_ACCESS_OPTIONAL_RANGE;
	if (!ibmr || !flags || (flags & ~known) || ((flags & IBV_REREG_MR_CHANGE_ACCESS) && !access_ok(acc)) ||
	    ((flags & IBV_REREG_MR_CHANGE_TRANSLATION) &&
	     (!addr || !length || (core && length > core->params.max_mr_size))) ||
	    ((flags & IBV_REREG_MR_CHANGE_PD) && (!pd || pd->context != ibmr->context))) {
		errno = EINVAL;
		return IBV_REREG_MR_ERR_INPUT;
	}
	struct dpv_mr *mr = to_dmr(ibmr);
	rte_spinlock_lock(&g_mr_lock);
	if (flags & IBV_REREG_MR_CHANGE_PD) {
		atomic_fetch_sub(&mr->upd->users, 1);
		mr->upd = to_dpd(pd);
		mr->pd = mr->upd->base->handle;
		atomic_fetch_add(&mr->upd->users, 1);
		ibmr->pd = pd;
	}
	if (flags & IBV_REREG_MR_CHANGE_TRANSLATION) {
		mr->addr = addr;
		mr->length = length;
		if (!(mr->access & IBV_ACCESS_ZERO_BASED))
			mr->iova = (uintptr_t)addr;
		ibmr->addr = addr;
		ibmr->length = length;
	}
	if (flags & IBV_REREG_MR_CHANGE_ACCESS)
		mr->access = (int)acc;
	int r = mr_to_engine(mr);
	rte_spinlock_unlock(&g_mr_lock);
	if (r) {
		errno = -r;
		return IBV_REREG_MR_ERR_CMD;
	}
	return 0;
}
