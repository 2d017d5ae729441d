/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpverbsd: device memory (ibv_alloc_dm) of the applications. Each device
 * has its port's dm_size bytes (dpv_host_dev.dm_size, reported to the
 * applications in the welcome); every allocation is counted against it in
 * DPV_DM_UNIT units, as a ConnectX counts its MEMIC, and is a memfd of its
 * own that the daemon makes, maps and hands to the application, which maps
 * it too: the application's ibv_memcpy_to_dm writes the pages the engine
 * reads at the daemon's mapping (an MR on it is direct: pid 0, the MR's
 * delta). One memfd per allocation, so that no process can map another's
 * device memory (a pool in one memfd would hand every holder the whole
 * pool). Hugepage-backed (MFD_HUGETLB) when the length is a multiple of
 * 2 MiB and the system has them to spare.
 *
 * A process holds a handle per allocation and per import (DM_IMPORT: from
 * a context imported from the owner's, as IMPORT_MR); DM_FREE drops one,
 * refused (EBUSY) while that is the process' last and an MR of its own is
 * on it. The memory goes with the last handle and the last MR on it (an
 * MR of an importer keeps it after its owner freed it), and with a process
 * that goes away its handles go after its MRs (dpvd_client_gone).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>

#include "dpvd.h"

#ifndef MFD_HUGETLB
#define MFD_HUGETLB 0x0004U
#endif
#define DM_HUGE (2ull << 20)

static struct dpvd_dm *dm_find(uint32_t handle)
{
	struct dpvd_dm *dm;
	TAILQ_FOREACH(dm, &dpvd_global.dms, next)
		if (dm->handle == handle)
			return dm;
	return NULL;
}

/* c's handle on handle (one of them), or NULL. */
static struct dpvd_dmref *dmref_find(struct dpvd_client *c, uint32_t handle)
{
	struct dpvd_dmref *r;
	TAILQ_FOREACH(r, &c->dmrefs, next)
		if (r->dm->handle == handle)
			return r;
	return NULL;
}

struct dpvd_dm *dpvd_dm_held(struct dpvd_client *c, uint32_t handle)
{
	struct dpvd_dmref *r = dmref_find(c, handle);
	return r ? r->dm : NULL;
}

/* The memory goes when nobody holds it and no MR is on it. */
static void dm_maybe_free(struct dpvd_dm *dm)
{
	if (dm->refs || dm->mrs)
		return;
	TAILQ_REMOVE(&dpvd_global.dms, dm, next);
	if (dm->dev < DPV_MAX_PORTS)
		dpvd_global.dm_used[dm->dev] -= RTE_MIN(dm->units, dpvd_global.dm_used[dm->dev]);
	munmap(dm->addr, dm->map_bytes);
	close(dm->fd);
	free(dm);
}

void dpvd_dm_mr_put(struct dpvd_dm *dm)
{
	if (dm->mrs)
		dm->mrs--;
	dm_maybe_free(dm);
}

static int dmref_add(struct dpvd_client *c, struct dpvd_dm *dm)
{
	struct dpvd_dmref *r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->dm = dm;
	dm->refs++;
	TAILQ_INSERT_TAIL(&c->dmrefs, r, next);
	return 0;
}

static void dmref_drop(struct dpvd_client *c, struct dpvd_dmref *r)
{
	struct dpvd_dm *dm = r->dm;
	TAILQ_REMOVE(&c->dmrefs, r, next);
	free(r);
	dm->refs--;
	dm_maybe_free(dm);
}

/* A memfd of bytes, sealed against resizing (the application maps it: it
 * must never shrink under the engine), mapped here. */
static int dm_memfd(size_t bytes, uint8_t **addr)
{
	int fd = -1;
	if (bytes % DM_HUGE == 0)
		fd = memfd_create("dpverbs-dm", MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_HUGETLB);
	if (fd < 0 || ftruncate(fd, (off_t)bytes) != 0) { /* no hugepages to spare: ordinary pages */
		if (fd >= 0)
			close(fd);
		fd = memfd_create("dpverbs-dm", MFD_CLOEXEC | MFD_ALLOW_SEALING);
		if (fd < 0)
			return -errno;
		if (ftruncate(fd, (off_t)bytes) != 0) {
			int e = errno;
			close(fd);
			return -e;
		}
	}
	void *p = MAP_FAILED;
	if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0 ||
	    (p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0)) == MAP_FAILED) {
		close(fd);
		return -ENOMEM;
	}
	*addr = p;
	return fd;
}

/* A descriptor of dm for the answer (the caller closes it after sending). */
static int dm_answer(struct dpvd_dm *dm, struct dpv_shm_dm *m, int *out_fd)
{
	int fd = fcntl(dm->fd, F_DUPFD_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	m->handle = dm->handle;
	m->length = dm->length;
	m->map_bytes = dm->map_bytes;
	*out_fd = fd;
	return 0;
}

static uint32_t dm_next_handle(void)
{
	for (;;) {
		uint32_t h = dpvd_global.next_dm++;
		if (h && !dm_find(h))
			return h;
	}
}

/* DM_ALLOC: the checks of ibv_alloc_dm (the façade's) again, then the
 * device's books: EINVAL for a length of 0 or above dm_size and an
 * alignment above a page, ENOMEM when not that much is left. The memory is
 * the process', whatever context asked (a child of fork() allocates on
 * its parent's context, as pyverbs' test_multi_process_alloc_dm does:
 * a context of the device is not required). */
int dpvd_dm_alloc(struct dpvd_client *c, struct dpv_shm_dm *m, int *out_fd)
{
	struct dpv_host_dev d;
	if (!dpv_host_dev_ok(m->dev) || m->dev >= DPV_MAX_PORTS || dpv_host_dev_query(m->dev, &d) != 0)
		return -EINVAL;
	if (!d.dm_size)
		return -EOPNOTSUPP;
	if (!m->length || m->length > d.dm_size || m->log_align > DPV_DM_MAX_LOG_ALIGN)
		return -EINVAL;
	uint64_t units = (m->length + DPV_DM_UNIT - 1) / DPV_DM_UNIT;
	if (dpvd_global.dm_used[m->dev] + units > d.dm_size / DPV_DM_UNIT)
		return -ENOMEM;
	struct dpvd_dm *dm = calloc(1, sizeof(*dm));
	if (!dm)
		return -ENOMEM;
	dm->map_bytes = RTE_ALIGN_CEIL(m->length, (uint64_t)4096); /* pages: any alignment up to one */
	int fd = dm_memfd(dm->map_bytes, &dm->addr);
	if (fd < 0) {
		free(dm);
		return fd;
	}
	dm->fd = fd;
	dm->dev = m->dev;
	dm->length = m->length;
	dm->units = units;
	dm->handle = dm_next_handle();
	TAILQ_INSERT_TAIL(&dpvd_global.dms, dm, next);
	dpvd_global.dm_used[m->dev] += units;
	int e = dmref_add(c, dm);
	if (!e)
		e = dm_answer(dm, m, out_fd);
	if (e) {
		struct dpvd_dmref *r = dmref_find(c, dm->handle);
		if (r)
			dmref_drop(c, r);
		else
			dm_maybe_free(dm);
	}
	return e;
}

/* DM_FREE: drop one of c's handles on it. EBUSY while it is c's last and
 * an MR of c is registered on it (ib_core's use count). */
int dpvd_dm_free(struct dpvd_client *c, struct dpv_shm_dm *m)
{
	struct dpvd_dmref *r = dmref_find(c, m->handle);
	if (!r || r->dm->dev != m->dev)
		return -EINVAL;
	unsigned int held = 0;
	struct dpvd_dmref *q;
	TAILQ_FOREACH(q, &c->dmrefs, next)
		held += q->dm == r->dm;
	if (held == 1) {
		struct dpvd_obj *o;
		TAILQ_FOREACH(o, &c->objs, next)
			if (o->type == DPV_OBJ_MR && o->created && o->dm == r->dm)
				return -EBUSY;
	}
	dmref_drop(c, r);
	return 0;
}

/* DM_IMPORT: the device memory handle of the process the context m->ctx
 * was imported from (ibv_import_device), which must hold it. */
int dpvd_dm_import(struct dpvd_client *c, struct dpv_shm_dm *m, int *out_fd)
{
	struct dpvd_ctx *x = dpvd_ctx_get(c, m->ctx);
	if (!x || !x->import_from || x->dev != m->dev)
		return -EINVAL;
	struct dpvd_dm *dm = dpvd_dm_held(x->import_from, m->handle);
	if (!dm || dm->dev != m->dev)
		return -ENOENT;
	int e = dmref_add(c, dm);
	if (!e) {
		e = dm_answer(dm, m, out_fd);
		if (e)
			dmref_drop(c, dmref_find(c, dm->handle));
	}
	return e;
}

void dpvd_dm_client_gone(struct dpvd_client *c)
{
	struct dpvd_dmref *r, *t;
	TAILQ_FOREACH_SAFE(r, &c->dmrefs, next, t)
		dmref_drop(c, r);
}
