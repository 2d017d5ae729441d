/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Memory regions. An MR is the application's own virtual memory: nothing is
 * pinned, the engine copies between packet buffers and registered memory on
 * the CPU. lkey == rkey == (pool index << 8) | 8-bit key, so a stale key of
 * a reused index does not match (dpv_mr_lookup compares the whole key).
 *
 * On-demand paging (IBV_ACCESS_ON_DEMAND) changes nothing here but what the
 * engine does when a page is not there: an access to an ODP MR's page that
 * is not mapped fails its WQE (as a ConnectX's failed page fault) instead
 * of sending zeroes. An implicit ODP MR (addr NULL, length SIZE_MAX, as
 * rdma-core and mlx5) covers the whole address space at iova 0.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/uio.h>

#include <rte_cycles.h>
#include <rte_spinlock.h>

#include "dpv_verbs.h"

/* IBV_ACCESS_HUGETLB is accepted and ignored, as the kernel does (it only
 * sets the page size an RNIC's ODP MR maps with) */
#define DPV_ACCESS_SUPPORTED                                                                     \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |             \
	 IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_MW_BIND | IBV_ACCESS_ZERO_BASED |                  \
	 IBV_ACCESS_ON_DEMAND | IBV_ACCESS_HUGETLB | DPV_ACCESS_FLUSH_GLOBAL |                    \
	 DPV_ACCESS_FLUSH_PERSISTENT)

/* Serialises rereg/dereg of one MR against each other. */
static rte_spinlock_t g_mr_lock = RTE_SPINLOCK_INITIALIZER;
static _Atomic uint8_t g_key_seq;

/* The "register MR" command for the engine: mr as it stands now. */
static int mr_to_engine(struct dpv_mr *mr)
{
	struct dpv_device *d = to_dctx(mr->ibmr.context)->dev;
	struct dpv_mr_desc desc = {.key = mr->ibmr.lkey, .pd = mr->pd, .addr = (uintptr_t)mr->addr,
				   .iova = mr->iova, .length = mr->length, .access = mr->access};
	if (mr->dm) { /* zero-based: addr 0 is the byte at dm_offset */
		desc.dm = mr->dm->handle;
		desc.dm_offset = mr->dm_offset;
		desc.engine_addr = (uintptr_t)(mr->dm->addr + mr->dm_offset);
	}
	return dpv_ops(d)->reg_mr(d->drv_dev, &desc);
}

/* 0, or -EBUSY: memory windows are bound to it (nothing done). */
static int mr_from_engine(struct dpv_mr *mr)
{
	struct dpv_device *d = to_dctx(mr->ibmr.context)->dev;
	return dpv_ops(d)->dereg_mr(d->drv_dev, mr->ibmr.lkey, false);
}

/* IBA 10.6.3.1 (C10-18): remote write or atomic access needs local write. */
static bool access_ok(unsigned int acc)
{
	if (acc & ~(unsigned int)DPV_ACCESS_SUPPORTED)
		return false;
	return !((acc & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) && !(acc & IBV_ACCESS_LOCAL_WRITE));
}

/* The implicit ODP MR of rdma-core and mlx5: ibv_reg_mr(pd, NULL, SIZE_MAX,
 * IBV_ACCESS_ON_DEMAND | ...), the whole address space at iova 0. */
static bool is_implicit(const void *addr, size_t length)
{
	return !addr && length == SIZE_MAX;
}

/* A new MR on addr..addr + length, addressed as iova; on device memory dm
 * (ibv_reg_dm_mr), zero-based, at dm_offset of it. NULL with errno ENOMEM,
 * or the driver's. */
static struct ibv_mr *mr_new(struct ibv_pd *ibpd, void *addr, size_t length, uint64_t iova, unsigned int acc,
			     struct dpv_dm *dm, uint64_t dm_offset)
{
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
	mr->dm = dm;
	mr->dm_offset = dm_offset;
	mr->ibmr.context = ibpd->context;
	mr->ibmr.pd = ibpd;
	mr->ibmr.addr = dm ? dm->addr + dm_offset : addr; /* mlx5: the DM's mapping */
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
	if (dm) /* before the engine can use it: ibv_free_dm sees it from now */
		atomic_fetch_add(&dm->mrs, 1);
	int r = mr_to_engine(mr);
	if (r) {
		if (dm)
			atomic_fetch_sub(&dm->mrs, 1);
		dpv_pool_del(DPV_OBJ_MR, mr->index, mr);
		free(mr);
		errno = -r;
		return NULL;
	}
	atomic_fetch_add(&mr->upd->users, 1);
	return &mr->ibmr;
}

/**
 * ibv_reg_mr_iova2 - register addr..addr+length, addressed remotely as iova.
 * RETURN VALUE: the MR, or NULL with errno: EINVAL (NULL pd, zero length,
 * length above max_mr_size, unknown access bits, remote write/atomic without
 * local write; an implicit MR without IBV_ACCESS_ON_DEMAND or with an iova
 * other than 0), EFAULT (NULL addr), ENOMEM (limits.max_mr MRs exist, or no
 * memory).
 */
DPV_EXPORT struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *ibpd, void *addr, size_t length, uint64_t iova,
					   unsigned int access)
{
	struct dpv_core *core = dpv_core_peek();
	unsigned int acc = access & ~(unsigned int)IBV_ACCESS_OPTIONAL_RANGE;
	/* mlx5_ib_reg_user_mr: (NULL, SIZE_MAX) is the implicit MR, which
	 * needs ON_DEMAND and iova == addr */
	bool implicit = is_implicit(addr, length);
	if (!ibpd || !core || !access_ok(acc) || !length ||
	    (implicit ? (!(acc & IBV_ACCESS_ON_DEMAND) || iova) : length > core->params.max_mr_size)) {
		errno = EINVAL;
		return NULL;
	}
	if (!addr && !implicit) {
		errno = EFAULT;
		return NULL;
	}
	return mr_new(ibpd, addr, length, implicit ? 0 : iova, acc, NULL, 0);
}

/* ibv_reg_dm_mr (dpv_dm.c checked the arguments): the MR is zero-based,
 * its bytes named 0 .. length - 1 locally and remotely. */
struct ibv_mr *dpv_mr_reg_dm(struct ibv_pd *ibpd, struct dpv_dm *dm, uint64_t dm_offset, size_t length,
			     unsigned int acc)
{
	return mr_new(ibpd, NULL, length, 0, acc | IBV_ACCESS_ZERO_BASED, dm, dm_offset);
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

/** ibv_dereg_mr: 0, or EINVAL for NULL or an MR that is not registered,
 *  EBUSY while memory windows are bound to it (IBA 10.6.7.2.6; rxe says
 *  EINVAL): the MR stays registered. */
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
	int r = mr_from_engine(mr);
	if (r) {
		rte_spinlock_unlock(&g_mr_lock);
		return -r;
	}
	dpv_pool_del(DPV_OBJ_MR, mr->index, mr);
	rte_spinlock_unlock(&g_mr_lock);
	atomic_fetch_sub(&mr->upd->users, 1);
	if (mr->dm)
		atomic_fetch_sub(&mr->dm->mrs, 1);
	free(mr);
	return 0;
}

/**
 * ibv_rereg_mr - change the translation (addr/length), PD and/or access of
 * an MR in place; lkey and rkey stay the same.
 * RETURN VALUE: 0, or IBV_REREG_MR_ERR_INPUT with errno EINVAL (NULL MR,
 * no or unknown flags, bad access flags, NULL addr, zero length or above
 * max_mr_size, NULL PD or a PD of another context with
 * IBV_REREG_MR_CHANGE_PD; IBV_ACCESS_ON_DEMAND taken away from an implicit
 * ODP MR whose translation stays; an MR on device memory: ib_core refuses
 * those).
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
	    ((flags & IBV_REREG_MR_CHANGE_PD) && (!pd || pd->context != ibmr->context)) ||
	    ((flags & (IBV_REREG_MR_CHANGE_ACCESS | IBV_REREG_MR_CHANGE_TRANSLATION)) == IBV_REREG_MR_CHANGE_ACCESS &&
	     !(acc & IBV_ACCESS_ON_DEMAND) && is_implicit(ibmr->addr, ibmr->length)) ||
	    to_dmr(ibmr)->dm) {
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

/* ---- ibv_advise_mr (on-demand paging) ---- */

/* What an advice needs of the MR of a key, copied under the lock (the MR
 * may be deregistered meanwhile: then only the application's own memory is
 * touched, which is harmless). */
struct advise_mr {
	uint32_t pd;
	uint64_t start, length;
	int access;
};

/* As mlx5's get_prefetchable_mr: ENOENT for a key that names no MR of this
 * process or one without IBV_ACCESS_ON_DEMAND, EPERM for an MR of another
 * PD, or a write prefetch of an MR without write access (ib_access_writable). */
static int advise_lookup(const struct dpv_pd *pd, enum ibv_advise_mr_advice advice, uint32_t lkey,
			 struct advise_mr *out)
{
	const unsigned int writable = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC |
				      IBV_ACCESS_MW_BIND;
	int e = 0;
	rte_spinlock_lock(&g_mr_lock);
	const struct dpv_mr *mr = dpv_pool_get(DPV_OBJ_MR, lkey >> 8);
	if (!mr || mr->ibmr.lkey != lkey || !(mr->access & IBV_ACCESS_ON_DEMAND))
		e = ENOENT;
	else if (mr->pd != pd->base->handle ||
		 (advice == IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE && !((unsigned int)mr->access & writable)))
		e = EPERM;
	else
		*out = (struct advise_mr){.pd = mr->pd, .start = (uintptr_t)mr->addr, .length = mr->length,
					  .access = mr->access};
	rte_spinlock_unlock(&g_mr_lock);
	return e;
}

/* MADV_POPULATE_READ/WRITE (Linux 5.14): known to this kernel? */
static bool populate_known(void)
{
	static int known = -1;
	if (known < 0) {
		static uint8_t probe[1];
		long pg = sysconf(_SC_PAGESIZE);
		uintptr_t a = (uintptr_t)probe & ~(uintptr_t)(pg - 1);
		known = madvise((void *)a, (size_t)pg, MADV_POPULATE_READ) == 0 || errno != EINVAL;
	}
	return known;
}

/* Fault in [addr, addr + len) of this process for reading (or writing):
 * 0, or EFAULT when a page of it cannot be (not mapped, no such access). */
static int populate(uint64_t addr, uint64_t len, bool write)
{
	uint64_t pg = (uint64_t)sysconf(_SC_PAGESIZE);
	uint64_t lo = addr & ~(pg - 1), hi = (addr + len + pg - 1) & ~(pg - 1);
	if (!len)
		return 0;
	if (hi <= lo)
		return EFAULT; /* the end of the address space */
	if (populate_known())
		return madvise((void *)(uintptr_t)lo, hi - lo, write ? MADV_POPULATE_WRITE : MADV_POPULATE_READ)
			       ? EFAULT : 0;
	/* an older kernel: read a byte of each page through the kernel, which
	 * faults it in (for reading) or answers EFAULT, never SIGSEGV */
	for (uint64_t p = lo; p < hi; p += pg) {
		uint8_t b;
		struct iovec l = {.iov_base = &b, .iov_len = 1};
		struct iovec r = {.iov_base = (void *)(uintptr_t)p, .iov_len = 1};
		if (process_vm_readv(getpid(), &l, 1, &r, 1, 0) != 1)
			return EFAULT;
	}
	return 0;
}

/* One SGE of the advice: inside its MR (EFAULT otherwise, as mlx5's
 * pagefault_mr), then faulted in unless the advice is NO_FAULT (mlx5's
 * snapshot maps only what is present; dpverbs has nothing to map). */
static int advise_one(const struct advise_mr *m, enum ibv_advise_mr_advice advice, const struct ibv_sge *s)
{
	if (s->addr < m->start || s->addr - m->start > m->length || m->length - (s->addr - m->start) < s->length)
		return EFAULT;
	if (advice == IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT)
		return 0;
	return populate(s->addr, s->length, advice == IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE);
}

/* The SGE list of an ibv_advise_mr: an ioctl attribute of at most
 * UINT16_MAX bytes, at least one SGE (uverbs: EINVAL otherwise). */
#define DPV_ADVISE_MAX_SGE (UINT16_MAX / sizeof(struct ibv_sge))

/**
 * dpv_advise_mr (verbs_context.advise_mr, ibv_advise_mr): prefetch ranges
 * of ODP MRs of pd, in the order and with the errors of uverbs and mlx5.
 * With IBV_ADVISE_MR_FLAG_FLUSH each SGE is checked and faulted in before
 * the call returns (PREFETCH: for reading, PREFETCH_WRITE: for writing,
 * NO_FAULT: nothing), the first failure returned; without it the keys are
 * checked, the ranges faulted in as far as they can be and nothing else is
 * reported (mlx5 queues that work).
 * RETURN VALUE: 0 or an errno value: EINVAL (no SGE, more than the command
 * holds, unknown flags), EFAULT (NULL sg_list; with FLUSH: a range outside
 * its MR or not mapped), EOPNOTSUPP (unknown advice), ENOENT (a key of no
 * ODP MR), EPERM (an MR of another PD; PREFETCH_WRITE of an MR without
 * write access).
 */
int dpv_advise_mr(struct ibv_pd *ibpd, enum ibv_advise_mr_advice advice, uint32_t flags, struct ibv_sge *sg_list,
		  uint32_t num_sge)
{
	if (!ibpd || !num_sge || num_sge > DPV_ADVISE_MAX_SGE || (flags & ~(uint32_t)IBV_ADVISE_MR_FLAG_FLUSH))
		return EINVAL;
	if (!sg_list)
		return EFAULT;
	if (advice != IBV_ADVISE_MR_ADVICE_PREFETCH && advice != IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE &&
	    advice != IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT)
		return EOPNOTSUPP;
	const struct dpv_pd *pd = to_dpd(ibpd);
	struct advise_mr m;
	if (flags & IBV_ADVISE_MR_FLAG_FLUSH) {
		for (uint32_t i = 0; i < num_sge; i++) {
			int e = advise_lookup(pd, advice, sg_list[i].lkey, &m);
			if (!e)
				e = advise_one(&m, advice, &sg_list[i]);
			if (e)
				return e;
		}
		return 0;
	}
	for (uint32_t i = 0; i < num_sge; i++) {
		int e = advise_lookup(pd, advice, sg_list[i].lkey, &m);
		if (e)
			return e;
	}
	for (uint32_t i = 0; i < num_sge; i++)
		if (!advise_lookup(pd, advice, sg_list[i].lkey, &m))
			(void)advise_one(&m, advice, &sg_list[i]);
	return 0;
}
