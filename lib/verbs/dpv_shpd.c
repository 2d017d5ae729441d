/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Shared protection domains (ibv_alloc_shpd(3), ibv_share_pd(3)): in shared
 * mode a PD is a number in dpverbsd's tables, and the daemon lets another
 * process use it when that process presents the PD's share id and key. The
 * PD of the second process is a new handle on the same protection domain:
 * MRs, QPs, SRQs and AHs created on it in any process work together. In
 * embedded mode there is no daemon to share through: EOPNOTSUPP.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dpv_verbs.h"

DPV_EXPORT struct ibv_shpd *ibv_alloc_shpd(struct ibv_pd *ibpd, uint64_t share_key, struct ibv_shpd *shpd)
{
	if (!ibpd || !shpd || to_dpd(ibpd)->parent) {
		errno = EINVAL;
		return NULL;
	}
	struct dpv_pd *pd = to_dpd(ibpd);
	struct dpv_device *d = to_dctx(ibpd->context)->dev;
	uint64_t id = 0;
	int r = dpv_ops(d)->shpd_alloc(d->drv_dev, pd->handle, share_key, &id);
	if (r) {
		errno = -r;
		return NULL;
	}
	memset(shpd, 0, sizeof(*shpd));
	shpd->id = id;
	return shpd;
}

DPV_EXPORT struct ibv_pd *ibv_share_pd(struct ibv_context *context, struct ibv_shpd *shpd, uint64_t share_key)
{
	if (!context || !shpd) {
		errno = EINVAL;
		return NULL;
	}
	if (!dpv_core_get())
		return NULL;
	struct dpv_device *d = to_dctx(context)->dev;
	uint32_t pdn = 0;
	int r = dpv_ops(d)->shpd_share(d->drv_dev, shpd->id, share_key, &pdn);
	if (r) {
		errno = -r;
		return NULL;
	}
	struct dpv_pd *pd = calloc(1, sizeof(*pd));
	if (!pd || dpv_pool_add_at(DPV_OBJ_PD, pd, pdn) != 0) {
		/* this process holds the PD already (shared twice): one handle
		 * per process and domain, as the daemon counts them */
		dpv_ops(d)->dealloc_pd(d->drv_dev, pdn);
		free(pd);
		errno = pd ? EEXIST : ENOMEM;
		return NULL;
	}
	pd->handle = pdn;
	pd->foreign = true;
	pd->ibpd.context = context;
	pd->ibpd.handle = pdn;
	pd->base = pd;
	return &pd->ibpd;
}
