/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Protection domains and parent domains (ibv_alloc_parent_domain(3)): a
 * parent domain is accepted wherever a PD is and adds a thread domain and
 * custom allocators for the buffers of the objects created with it.
 */
#include <errno.h>
#include <stdlib.h>

#include "dpv_verbs.h"

/**
 * ibv_alloc_pd: a new PD. RETURN VALUE: the PD, or NULL with errno EINVAL
 * (NULL context), ENOMEM (limits.max_pd PDs exist, or no memory), or the
 * errno of a failed start of dpverbs.
 */
DPV_EXPORT struct ibv_pd *ibv_alloc_pd(struct ibv_context *context)
{
	if (!context) {
		errno = EINVAL;
		return NULL;
	}
	if (!dpv_core_get())
		return NULL;
	struct dpv_pd *pd = calloc(1, sizeof(*pd));
	if (!pd) {
		errno = ENOMEM;
		return NULL;
	}
	int pe = dpv_pool_add(DPV_OBJ_PD, pd, &pd->handle);
	if (pe != 0) {
		free(pd);
		errno = dpv_pool_errno(pe); /* limits.max_pd PDs exist */
		return NULL;
	}
	struct dpv_device *d = to_dctx(context)->dev;
	int r = dpv_ops(d)->alloc_pd(d->drv_dev, pd->handle);
	if (r) {
		dpv_pool_del(DPV_OBJ_PD, pd->handle, pd);
		free(pd);
		errno = -r;
		return NULL;
	}
	pd->ibpd.context = context;
	pd->ibpd.handle = pd->handle;
	pd->base = pd;
	return &pd->ibpd;
}

/**
 * ibv_dealloc_pd: deallocates a PD or a parent domain. RETURN VALUE 0,
 * EINVAL for NULL, EBUSY while MRs, QPs, AHs, SRQs, CQs or parent domains
 * created with it exist.
 */
DPV_EXPORT int ibv_dealloc_pd(struct ibv_pd *ibpd)
{
	if (!ibpd)
		return EINVAL;
	struct dpv_pd *pd = to_dpd(ibpd);
	if (atomic_load(&pd->users) > 0)
		return EBUSY;
	if (pd->imported) {
		atomic_fetch_sub(&pd->imported->users, 1); /* embedded mode's import: a handle only */
	} else if (pd->parent) {
		atomic_fetch_sub(&pd->base->users, 1);
		if (pd->td)
			atomic_fetch_sub(&pd->td->users, 1);
	} else {
		struct dpv_device *d = to_dctx(ibpd->context)->dev;
		dpv_ops(d)->dealloc_pd(d->drv_dev, pd->handle);
		if (pd->foreign)
			dpv_pool_del_at(DPV_OBJ_PD, pd->handle, pd);
		else
			dpv_pool_del(DPV_OBJ_PD, pd->handle, pd);
	}
	free(pd);
	return 0;
}

/**
 * alloc_parent_domain (ibv_alloc_parent_domain): RETURN VALUE the parent
 * domain as a struct ibv_pd, or NULL with errno: EINVAL (NULL context or
 * attr, NULL pd, pd that is itself a parent domain, pd or td of another
 * context, unknown comp_mask bits, ALLOCATORS without both callbacks),
 * ENOMEM.
 */
struct ibv_pd *dpv_alloc_parent_domain(struct ibv_context *context, struct ibv_parent_domain_init_attr *a)
{
	const uint32_t known = IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS | IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT;
	if (!context || !a || !a->pd || a->pd->context != context || to_dpd(a->pd)->parent ||
	    (a->td && a->td->context != context) || (a->comp_mask & ~known) ||
	    ((a->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS) && (!a->alloc || !a->free))) {
		errno = EINVAL;
		return NULL;
	}
	struct dpv_pd *pd = calloc(1, sizeof(*pd));
	if (!pd) {
		errno = ENOMEM;
		return NULL;
	}
	pd->ibpd.context = context;
	pd->ibpd.handle = a->pd->handle; /* protection comes from the base PD */
	pd->parent = true;
	pd->base = to_dpd(a->pd);
	pd->handle = pd->base->handle;
	pd->td = a->td ? to_dtd(a->td) : NULL;
	if (a->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS) {
		pd->alloc = a->alloc;
		pd->free = a->free;
	}
	if (a->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT)
		pd->pd_context = a->pd_context;
	atomic_fetch_add(&pd->base->users, 1);
	if (pd->td)
		atomic_fetch_add(&pd->td->users, 1);
	return &pd->ibpd;
}
