/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Thread domains (ibv_alloc_td(3)): the promise that one thread uses the
 * objects created through a parent domain holding the TD. The façade keeps
 * the reference counts; what a TD changes in the engine (no locks, packets
 * handed to the owner thread) is the driver's (create_td).
 */
#include <errno.h>
#include <stdlib.h>

#include "dpv_verbs.h"

/**
 * alloc_td (ibv_alloc_td): RETURN VALUE the TD, or NULL with errno EINVAL
 * (NULL argument, comp_mask != 0) or ENOMEM.
 */
struct ibv_td *dpv_alloc_td(struct ibv_context *context, struct ibv_td_init_attr *attr)
{
	if (!context || !attr || attr->comp_mask) {
		errno = EINVAL;
		return NULL;
	}
	struct dpv_td *td = calloc(1, sizeof(*td));
	if (!td) {
		errno = ENOMEM;
		return NULL;
	}
	struct dpv_device *d = to_dctx(context)->dev;
	td->drv = dpv_ops(d)->create_td(d->drv_dev);
	if (!td->drv) {
		free(td);
		errno = ENOMEM;
		return NULL;
	}
	td->ibtd.context = context;
	return &td->ibtd;
}

/** dealloc_td (ibv_dealloc_td): 0, EINVAL for NULL, EBUSY while a parent domain uses it. */
int dpv_dealloc_td(struct ibv_td *ib)
{
	if (!ib)
		return EINVAL;
	struct dpv_td *td = to_dtd(ib);
	if (atomic_load(&td->users) > 0)
		return EBUSY;
	ctx_ops(ib->context)->destroy_td(td->drv);
	free(td);
	return 0;
}
