/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpverbsd: the commands of applications, executed on the engine. Every
 * number in a command must be one the application reserved (NUM_RESERVE)
 * or a PD it holds; every ring must lie in a region it added (MEM_ADD),
 * whose address the daemon translates to its own mapping. QPs, SRQs and
 * XRC domains are in dpvd_qp.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/uio.h>

#include "dpvd.h"

#define DPVD_MAX_REGION (1ull << 34) /* bytes of one region */

static int query_port(struct dpv_shm_port *p)
{
	if (!dpv_host_dev_ok(p->dev))
		return -EINVAL;
	memset(&p->attr, 0, sizeof(p->attr));
	return dpv_host_query_port(p->dev, &p->attr);
}

/* dpv_query_neigh of an application: the port's own ARP / ND table (any
 * application may ask, as any Linux process may read the neighbour table
 * and make the kernel resolve an address by sending to it). */
static int neigh_query(struct dpv_shm_neigh *n)
{
	if (!dpv_host_dev_ok(n->dev))
		return -EINVAL;
	memset(n->mac, 0, sizeof(n->mac));
	return dpv_host_neigh_query(n->dev, n->ip, n->mac);
}

/* A context's command descriptor: a memfd nobody writes, whose inode
 * names the context (ibv_import_device hands it back). */
static int ctx_token(struct dpvd_ctx *x, int *out_fd)
{
	int t = memfd_create("dpverbs-context", MFD_CLOEXEC);
	struct stat st;
	if (t < 0)
		return -errno;
	if (fstat(t, &st) != 0 || (*out_fd = fcntl(t, F_DUPFD_CLOEXEC, 0)) < 0) {
		int e = errno;
		close(t);
		return -e;
	}
	x->token_fd = t;
	x->token_dev = st.st_dev;
	x->token_ino = st.st_ino;
	return 0;
}

static struct dpvd_ctx *ctx_free_slot(struct dpvd_client *c, uint32_t *id)
{
	for (unsigned int i = 0; i < DPVD_MAX_CTX; i++)
		if (c->ctx[i].async_fd < 0 && c->ctx[i].token_fd < 0) {
			*id = i + 1;
			return &c->ctx[i];
		}
	return NULL;
}

static int ctx_set(struct dpvd_client *c, struct dpvd_ctx *x, uint32_t dev, int *async_fd,
		   struct dpvd_client *from, int *out_fd)
{
	int e = ctx_token(x, out_fd);
	if (e)
		return e;
	/* events are written from engine threads: never block them */
	fcntl(*async_fd, F_SETFL, fcntl(*async_fd, F_GETFL) | O_NONBLOCK);
	rte_spinlock_lock(&dpvd_global.evlock);
	x->async_fd = *async_fd;
	x->dev = dev;
	x->import_from = from;
	rte_spinlock_unlock(&dpvd_global.evlock);
	*async_fd = -1;
	return 0;
}

static int ctx_open(struct dpvd_client *c, struct dpv_shm_dev_ref *r, int fds[DPV_SHM_MAX_FDS], int *out_fd)
{
	struct stat st;
	if (!dpv_host_dev_ok(r->dev) || fds[0] < 0 || fstat(fds[0], &st) != 0 || !S_ISFIFO(st.st_mode))
		return -EINVAL;
	struct dpvd_ctx *x = ctx_free_slot(c, &r->ctx);
	if (!x)
		return -EMFILE;
	/* only a context made by CTX_IMPORT imports PDs and MRs
	 * (ibv_import_pd(3): EINVAL otherwise) */
	return ctx_set(c, x, r->dev, &fds[0], NULL, out_fd);
}

static int ctx_close(struct dpvd_client *c, struct dpv_shm_dev_ref *r)
{
	struct dpvd_ctx *x = dpvd_ctx_get(c, r->ctx);
	if (!x)
		return -EINVAL;
	rte_spinlock_lock(&dpvd_global.evlock);
	if (x->async_fd >= 0)
		close(x->async_fd);
	close(x->token_fd);
	x->async_fd = x->token_fd = -1;
	x->import_from = NULL;
	rte_spinlock_unlock(&dpvd_global.evlock);
	return 0;
}

/* ibv_import_device: fds[0] is a context's command descriptor (of any
 * process), fds[1] the new context's async pipe. */
static int ctx_import(struct dpvd_client *c, struct dpv_shm_dev_ref *r, int fds[DPV_SHM_MAX_FDS], int *out_fd)
{
	struct stat st, ps;
	if (fds[0] < 0 || fds[1] < 0 || fstat(fds[0], &st) != 0 || fstat(fds[1], &ps) != 0 || !S_ISFIFO(ps.st_mode))
		return -EINVAL;
	struct dpvd_client *o;
	TAILQ_FOREACH(o, &dpvd_global.clients, next) {
		if (o->gone)
			continue;
		for (unsigned int i = 0; i < DPVD_MAX_CTX; i++) {
			struct dpvd_ctx *x = &o->ctx[i];
			if (x->token_fd < 0 || x->token_dev != st.st_dev || x->token_ino != st.st_ino)
				continue;
			struct dpvd_ctx *nx = ctx_free_slot(c, &r->ctx);
			if (!nx)
				return -EMFILE;
			r->dev = x->dev;
			return ctx_set(c, nx, x->dev, &fds[1], x->import_from ? x->import_from : o, out_fd);
		}
	}
	return -EBADF; /* not the command descriptor of a context */
}

/* A region of the application: a sealed memfd it mapped at m->addr. */
static int mem_add(struct dpvd_client *c, struct dpv_shm_mem *r, int fds[DPV_SHM_MAX_FDS])
{
	struct stat st;
	int fd = fds[0];
	if (fd < 0 || !r->addr || (r->addr & 4095) || !r->size || r->size > DPVD_MAX_REGION ||
	    r->addr + r->size < r->addr || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
	    (uint64_t)st.st_size != r->size)
		return -EINVAL;
	/* it cannot shrink under our mapping (no SIGBUS in the engine) */
	int seals = fcntl(fd, F_GET_SEALS);
	if (seals < 0 || (seals & (F_SEAL_SHRINK | F_SEAL_GROW)) != (F_SEAL_SHRINK | F_SEAL_GROW))
		return -EPERM;
	if (c->mem_total + r->size > dpvd_global.mem_limit)
		return -ENOMEM;
	struct dpvd_mem *m;
	TAILQ_FOREACH(m, &c->mem, next)
		if (r->addr < m->caddr + m->size && m->caddr < r->addr + r->size)
			return -EEXIST; /* overlaps one it has */
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	void *p = mmap(NULL, r->size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
	if (p == MAP_FAILED) {
		free(m);
		return -ENOMEM;
	}
	m->caddr = r->addr;
	m->addr = p;
	m->size = r->size;
	c->mem_total += r->size;
	TAILQ_INSERT_TAIL(&c->mem, m, next);
	return 0;
}

static int mem_del(struct dpvd_client *c, struct dpv_shm_mem *r)
{
	struct dpvd_mem *m = dpvd_mem_find(c, r->addr, 1);
	if (!m || m->caddr != r->addr)
		return -EINVAL;
	if (m->busy)
		return -EBUSY; /* rings of objects are in it */
	/* MRs registered on it (direct) must go first; one the engine reaches
	 * in the application's address space (an implicit ODP MR covers every
	 * region) does not use our mapping */
	struct dpvd_obj *o;
	TAILQ_FOREACH(o, &c->objs, next)
		if (o->type == DPV_OBJ_MR && o->created && o->direct && !o->dm && o->addr < m->caddr + m->size &&
		    m->caddr < o->addr + o->length)
			return -EBUSY;
	TAILQ_REMOVE(&c->mem, m, next);
	c->mem_total -= m->size;
	munmap(m->addr, m->size);
	free(m);
	return 0;
}

static int num_reserve(struct dpvd_client *c, struct dpv_shm_num *n)
{
	if (n->type >= DPV_OBJ_NR || n->type == DPV_OBJ_XRCD)
		return -EINVAL; /* XRC domains are numbered by XRCD_OPEN */
	struct dpvd_obj *o = calloc(1, sizeof(*o));
	if (!o)
		return -ENOMEM;
	o->type = (enum dpv_obj_type)n->type;
	o->owner = c;
	o->chan_fd = -1;
	int r = dpv_pool_add(o->type, o, &o->num);
	if (r) {
		free(o);
		return r;
	}
	TAILQ_INSERT_TAIL(&c->objs, o, next);
	n->num = o->num;
	return 0;
}

/* May c let go of one of its handles on pd? Not if that is its last one
 * while objects of its own (MRs, AHs, SRQs, QPs) still use the PD: a PD
 * is freed with its last handle, so every user must belong to a process
 * that holds one (other processes' users keep their own handles). */
static bool pd_may_drop(struct dpvd_client *c, struct dpvd_obj *pd)
{
	unsigned int handles = pd->owner == c && pd->owner_handle;
	struct dpvd_pdref *r;
	TAILQ_FOREACH(r, &c->pdrefs, next)
		handles += r->pd == pd;
	if (handles > 1)
		return true;
	struct dpvd_obj *o;
	TAILQ_FOREACH(o, &c->objs, next)
		for (unsigned int i = 0; i < RTE_DIM(o->uses); i++)
			if (o->uses[i] == pd)
				return false;
	return true;
}

static int num_release(struct dpvd_client *c, struct dpv_shm_num *n)
{
	struct dpvd_obj *o = dpvd_obj_get(c, (enum dpv_obj_type)n->type, n->num, false);
	if (!o)
		return -EINVAL;
	if (o->type != DPV_OBJ_PD && o->users)
		return -EBUSY;
	if (o->type == DPV_OBJ_PD && o->owner_handle && !pd_may_drop(c, o))
		return -EBUSY; /* the number goes with the creator's handle */
	dpvd_obj_release(c, o);
	return 0;
}

static int pd_alloc(struct dpvd_client *c, struct dpv_shm_pd *p)
{
	struct dpvd_obj *o = dpvd_obj_get(c, DPV_OBJ_PD, p->pdn, false);
	if (!o || o->created || !dpv_host_dev_ok(p->dev))
		return -EINVAL;
	int e = dpv_host_alloc_pd(p->dev, p->pdn);
	if (e)
		return e;
	o->created = true;
	o->owner_handle = true;
	o->dev = p->dev;
	o->refs = 1;
	return 0;
}

static int pd_dealloc(struct dpvd_client *c, struct dpv_shm_pd *p)
{
	struct dpvd_pdref *r;
	TAILQ_FOREACH(r, &c->pdrefs, next)
		if (r->pd->num == p->pdn) {
			if (!pd_may_drop(c, r->pd))
				return -EBUSY;
			TAILQ_REMOVE(&c->pdrefs, r, next);
			struct dpvd_obj *pd = r->pd;
			free(r);
			dpvd_pd_unref(pd);
			return 0;
		}
	struct dpvd_obj *o = dpvd_obj_get(c, DPV_OBJ_PD, p->pdn, true);
	if (!o || !o->owner_handle)
		return -EINVAL;
	if (!pd_may_drop(c, o))
		return -EBUSY; /* MRs, QPs, ... of this process use it */
	o->owner_handle = false;
	dpvd_pd_unref(o);
	return 0;
}

/* Where the engine finds an MR's memory: directly (pid 0) at our mapping
 * when the memory is in a region the application added, else in the
 * application's address space (its pid: process_vm_readv/writev), which
 * must be readable there now. An ODP MR's memory need not be mapped yet
 * (nothing is faulted in at registration): only the right to reach the
 * process is checked, with a read at address 0, which can only fail with
 * EFAULT when the right is there. An implicit ODP MR (0, SIZE_MAX) is
 * never in a region. */
static int mr_memory(struct dpvd_client *c, const struct dpv_shm_mr *r, int32_t *pid, uint64_t *eng)
{
	struct dpvd_mem *m = dpvd_mem_find(c, r->addr, r->length);
	if (m) {
		*pid = 0;
		*eng = (uint64_t)(uintptr_t)dpvd_mem_xlate(m, r->addr);
		return 0;
	}
	bool odp = r->access & IBV_ACCESS_ON_DEMAND;
	uint8_t b;
	uint64_t probe[2] = {odp ? 0 : r->addr, r->addr + r->length - 1};
	for (unsigned int i = 0; i < (odp ? 1u : 2u); i++) {
		struct iovec l = {.iov_base = &b, .iov_len = 1};
		struct iovec rm = {.iov_base = (void *)(uintptr_t)probe[i], .iov_len = 1};
		if (process_vm_readv(c->pid, &l, 1, &rm, 1, 0) != 1 && (!odp || errno != EFAULT))
			return errno == EPERM ? -EPERM : -EFAULT; /* not mapped, or not ours to reach */
	}
	*pid = c->pid;
	*eng = 0;
	return 0;
}

/* An MR on device memory c holds (ibv_reg_dm_mr): zero-based, its bytes
 * at our mapping of the memory from dm_offset, which the MR must not pass
 * (ib_core's check, made again). */
static int mr_dm_memory(struct dpvd_client *c, const struct dpv_shm_mr *r, struct dpvd_dm **dmp, uint64_t *eng)
{
	struct dpvd_dm *dm = dpvd_dm_held(c, r->dm);
	if (!dm || dm->dev != r->dev || r->dm_offset > dm->length || r->length > dm->length - r->dm_offset ||
	    r->addr + r->length < r->addr)
		return -EINVAL;
	*dmp = dm;
	*eng = (uint64_t)(uintptr_t)(dm->addr + r->dm_offset);
	return 0;
}

static int mr_reg(struct dpvd_client *c, struct dpv_shm_mr *r)
{
	struct dpvd_obj *o = dpvd_obj_get(c, DPV_OBJ_MR, r->key >> 8, false);
	struct dpvd_obj *pd = dpv_pool_get(DPV_OBJ_PD, r->pd);
	if (!dpv_host_dev_ok(r->dev) || !o || (!r->length && !r->dm) || r->addr + r->length < r->addr ||
	    !dpvd_pd_usable(c, r->pd) || (o->created && (o->dev != r->dev || o->mw)) || (o->created && (o->dm || r->dm)))
		return -EINVAL; /* an MR on device memory is not re-registered (ib_core) */
	int32_t pid = 0;
	uint64_t eng;
	struct dpvd_dm *dm = NULL;
	int e = r->dm ? mr_dm_memory(c, r, &dm, &eng) : mr_memory(c, r, &pid, &eng);
	if (e)
		return e;
	struct dpv_mr_desc desc = {.key = r->key, .pd = r->pd, .addr = r->addr, .iova = r->iova,
				   .length = r->length, .access = r->access, .pid = pid, .engine_addr = eng};
	e = dpv_host_reg_mr(r->dev, &desc);
	if (e)
		return e;
	if (o->created && o->key != r->key)
		dpv_host_dereg_mr(r->dev, o->key, true); /* a new key for the index */
	if (!o->created) {
		o->created = true;
		o->dev = r->dev;
		o->uses[0] = pd;
		pd->users++;
		o->dm = dm;
		if (dm)
			dm->mrs++;
	} else if (o->uses[0] != pd) { /* re-registered on another PD */
		o->uses[0]->users--;
		o->uses[0] = pd;
		pd->users++;
	}
	o->key = r->key;
	o->addr = r->addr;
	o->iova = r->iova;
	o->length = r->length;
	o->access = r->access;
	o->direct = !pid;
	r->pid = (uint32_t)pid;
	return 0;
}

/* ibv_dereg_mr: an MR of c that nothing of c uses; -EBUSY from the engine
 * while memory windows are bound to it (the MR stays). */
static int mr_dereg(struct dpvd_client *c, struct dpv_shm_mr *r)
{
	struct dpvd_obj *o = dpvd_obj_get(c, DPV_OBJ_MR, r->key >> 8, true);
	if (!o || o->mw)
		return -EINVAL;
	if (o->users)
		return -EBUSY;
	int e = dpv_host_dereg_mr(o->dev, o->key, false);
	if (e)
		return e;
	dpvd_obj_destroy(o);
	return 0;
}

/* ibv_alloc_mw: a number of the MR pool c reserved, on a PD it may use. */
static int mw_alloc(struct dpvd_client *c, struct dpv_shm_mw *w)
{
	struct dpvd_obj *o = dpvd_obj_get(c, DPV_OBJ_MR, w->key >> 8, false);
	if (!dpv_host_dev_ok(w->dev) || !o || o->created || !w->key || !dpvd_pd_usable(c, w->pd) ||
	    (w->type != IBV_MW_TYPE_1 && w->type != IBV_MW_TYPE_2))
		return -EINVAL;
	struct dpv_mw_desc d = {.key = w->key, .pd = w->pd, .type = w->type};
	int e = dpv_host_alloc_mw(w->dev, &d);
	if (e)
		return e;
	o->created = true;
	o->mw = true;
	o->direct = false;
	o->dev = w->dev;
	o->key = w->key;
	o->addr = o->length = o->iova = 0;
	o->access = 0;
	o->uses[0] = dpv_pool_get(DPV_OBJ_PD, w->pd);
	o->uses[0]->users++;
	return 0;
}

static int mw_dealloc(struct dpvd_client *c, struct dpv_shm_mw *w)
{
	struct dpvd_obj *o = dpvd_obj_get(c, DPV_OBJ_MR, w->key >> 8, true);
	if (!o || !o->mw)
		return -EINVAL;
	dpvd_obj_destroy(o);
	return 0;
}

static int ah_create(struct dpvd_client *c, struct dpv_shm_ah *a)
{
	struct dpvd_obj *o = dpvd_obj_get(c, DPV_OBJ_AH, a->handle, false);
	if (!dpv_host_dev_ok(a->dev) || !o || o->created || !dpvd_pd_usable(c, a->pd) || (a->ip_ver != 4 && a->ip_ver != 6))
		return -EINVAL;
	struct dpv_ah_desc desc = {.handle = a->handle, .ip_ver = a->ip_ver, .tclass = a->tclass,
				   .hop_limit = a->hop_limit, .flow_label = a->flow_label & 0xfffff};
	memcpy(desc.sgid, a->sgid, 16);
	memcpy(desc.dgid, a->dgid, 16);
	int e = dpv_host_create_ah(a->dev, &desc);
	if (e)
		return e;
	o->created = true;
	o->dev = a->dev;
	o->uses[0] = dpv_pool_get(DPV_OBJ_PD, a->pd);
	o->uses[0]->users++;
	return 0;
}

static int cq_create(struct dpvd_client *c, struct dpv_shm_cq *q, int fds[DPV_SHM_MAX_FDS])
{
	struct dpvd_obj *o = dpvd_obj_get(c, DPV_OBJ_CQ, q->handle, false);
	struct dpvd_mem *m = dpvd_ring_check(c, q->ring, q->ring_size, sizeof(struct dpv_cqe));
	struct stat st;
	if (!dpv_host_dev_ok(q->dev) || !o || o->created || !m || q->ring_size < 2 || !dpvd_ctx_ok(c, q->ctx, q->dev) ||
	    (q->has_channel && (fds[0] < 0 || fstat(fds[0], &st) != 0 || !S_ISFIFO(st.st_mode))))
		return -EINVAL;
	struct dpv_cq_cfg cfg = {.handle = q->handle, .ring = dpvd_mem_xlate(m, q->ring), .ring_size = q->ring_size,
				 .timestamps = q->timestamps != 0, .ignore_overrun = q->ignore_overrun != 0, .ctx = q->ctx,
				 .cookie = q->cookie, .chan_fd = -1, .wake = c->wake};
	void *drv = dpv_host_create_cq(q->dev, &cfg);
	if (!drv)
		return -(errno ? errno : ENOMEM);
	dpvd_obj_created(o, q->dev, q->ctx, q->cookie, m, NULL);
	rte_spinlock_lock(&dpvd_global.evlock);
	if (q->has_channel) {
		fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) | O_NONBLOCK);
		o->chan_fd = fds[0];
		fds[0] = -1;
	}
	o->drv = drv;
	o->created = true;
	rte_spinlock_unlock(&dpvd_global.evlock);
	return 0;
}

static int cq_resize(struct dpvd_client *c, struct dpv_shm_cq *q)
{
	struct dpvd_obj *o = dpvd_obj_get(c, DPV_OBJ_CQ, q->handle, true);
	struct dpvd_mem *m = dpvd_ring_check(c, q->ring, q->ring_size, sizeof(struct dpv_cqe));
	if (!o || !m || !dpv_host_dev_ok(o->dev) || q->ring_size < 2)
		return -EINVAL;
	/* the completions of work posted before the resize are in the ring it
	 * copies (an RNIC executes doorbells before a later command) */
	for (unsigned int i = 0; i < dpvd_global.n_devs; i++)
		dpv_host_db_sync(i);
	int e = dpv_host_resize_cq(o->dev, o->drv, dpvd_mem_xlate(m, q->ring), q->ring_size);
	if (e)
		return e;
	o->ring[0]->busy--;
	o->ring[0] = m;
	m->busy++;
	return 0;
}

/* ibv_alloc_shpd: the PD gets a share id (random, never reused) and key. */
static int shpd_alloc(struct dpvd_client *c, struct dpv_shm_shpd *s)
{
	struct dpvd_obj *o = dpv_pool_get(DPV_OBJ_PD, s->pdn);
	if (!o || !dpvd_pd_usable(c, s->pdn) || o->dev != s->dev)
		return -EINVAL;
	if (o->shared)
		return -EBUSY; /* ibv_alloc_shpd(3): only once per PD */
	uint64_t id;
	if (getrandom(&id, sizeof(id), 0) != sizeof(id))
		return -EIO;
	o->shared = true;
	o->share_id = (id << 20) | (o->num & 0xfffff); /* unique: the PD number is in it */
	o->share_key = s->key;
	s->id = o->share_id;
	return 0;
}

static int pdref_add(struct dpvd_client *c, struct dpvd_obj *pd)
{
	struct dpvd_pdref *r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->pd = pd;
	pd->refs++;
	TAILQ_INSERT_TAIL(&c->pdrefs, r, next);
	return 0;
}

static int shpd_share(struct dpvd_client *c, struct dpv_shm_shpd *s)
{
	uint32_t pdn = (uint32_t)(s->id & 0xfffff);
	struct dpvd_obj *o = dpv_pool_get(DPV_OBJ_PD, pdn);
	if (!o || o->type != DPV_OBJ_PD || !o->shared || o->share_id != s->id || !o->refs || o->dev != s->dev)
		return -ENOENT;
	if (o->share_key != s->key)
		return -EACCES;
	if (dpvd_pd_usable(c, pdn))
		return -EEXIST; /* one handle per process */
	int e = pdref_add(c, o);
	if (!e)
		s->pdn = pdn;
	return e;
}

/* The process a context imports from: its objects may be imported. */
static struct dpvd_client *import_src(struct dpvd_client *c, uint32_t ctx)
{
	struct dpvd_ctx *x = dpvd_ctx_get(c, ctx);
	return x ? x->import_from : NULL;
}

static int import_pd(struct dpvd_client *c, struct dpv_shm_import *im)
{
	struct dpvd_client *src = import_src(c, im->ctx);
	struct dpvd_obj *o = dpv_pool_get(DPV_OBJ_PD, im->handle);
	if (!src)
		return -EINVAL;
	if (!o || o->type != DPV_OBJ_PD || !dpvd_pd_usable(src, im->handle) || o->dev != im->dev)
		return -ENOENT;
	im->pdn = im->handle;
	return pdref_add(c, o);
}

static int import_mr(struct dpvd_client *c, struct dpv_shm_import *im)
{
	struct dpvd_client *src = import_src(c, im->ctx);
	if (!src)
		return -EINVAL;
	struct dpvd_obj *o = dpvd_obj_get(src, DPV_OBJ_MR, im->handle, true);
	if (!o || o->mw || o->dev != im->dev)
		return -ENOENT;
	im->pdn = o->uses[0] ? o->uses[0]->num : 0;
	im->key = o->key;
	im->access = o->access;
	im->addr = o->addr;
	im->iova = o->iova;
	im->length = o->length;
	return 0;
}

void dpvd_obj_destroy(struct dpvd_obj *o)
{
	if (!o->created || !dpv_host_dev_ok(o->dev))
		return;
	switch (o->type) {
	case DPV_OBJ_QP:
		if (o->gsi)
			dpvd_gsi_detach(o); /* no MAD is handed to it from now */
		o->gsi = false;
		dpv_host_destroy_qp(o->dev, o->drv, &o->bufs);
		break;
	case DPV_OBJ_SRQ:
		dpv_host_destroy_srq(o->dev, o->drv);
		break;
	case DPV_OBJ_CQ:
		dpv_host_destroy_cq(o->dev, o->drv);
		break;
	case DPV_OBJ_MR:
		if (o->mw)
			dpv_host_dealloc_mw(o->dev, o->key);
		else
			dpv_host_dereg_mr(o->dev, o->key, true); /* windows bound to it open onto nothing */
		o->mw = false;
		if (o->dm)
			dpvd_dm_mr_put(o->dm); /* the memory may go with its last MR */
		o->dm = NULL;
		break;
	case DPV_OBJ_AH:
		dpv_host_destroy_ah(o->dev, o->num);
		break;
	default:
		break;
	}
	rte_spinlock_lock(&dpvd_global.evlock);
	o->created = false;
	o->drv = NULL;
	if (o->chan_fd >= 0)
		close(o->chan_fd);
	o->chan_fd = -1;
	rte_spinlock_unlock(&dpvd_global.evlock);
	for (unsigned int i = 0; i < RTE_DIM(o->ring); i++)
		if (o->ring[i]) {
			o->ring[i]->busy--;
			o->ring[i] = NULL;
		}
	for (unsigned int i = 0; i < RTE_DIM(o->uses); i++)
		if (o->uses[i]) {
			o->uses[i]->users--;
			o->uses[i] = NULL;
		}
	if (o->xrcd) {
		dpvd_xrcd_unuse(o->xrcd);
		o->xrcd = NULL;
	}
}

/* Destroy commands of AHs and CQs: the object must be c's and unused. */
static int obj_destroy_cmd(struct dpvd_client *c, enum dpv_obj_type t, uint32_t num)
{
	struct dpvd_obj *o = dpvd_obj_get(c, t, num, true);
	if (!o)
		return -EINVAL;
	if (o->users)
		return -EBUSY;
	dpvd_obj_destroy(o);
	return 0;
}

/* An RNIC executes the doorbells rung before a later command: UD WQEs
 * posted before ibv_destroy_ah go out with the AH (mckey posts its sends
 * unsignaled and destroys the AH at once; the engine looks the AH up when
 * it sends, after this request otherwise). */
static int ah_destroy(struct dpvd_client *c, struct dpv_shm_ah *a)
{
	struct dpvd_obj *o = dpvd_obj_get(c, DPV_OBJ_AH, a->handle, true);
	if (o)
		dpv_host_db_sync(o->dev); /* nothing if it names no device */
	return obj_destroy_cmd(c, DPV_OBJ_AH, a->handle);
}

int dpvd_dispatch(struct dpvd_client *c, struct dpv_shm_msg *m, int fds[DPV_SHM_MAX_FDS], int *out_fd)
{
	switch (m->h.op) {
	case DPV_SHM_QUERY_PORT: return query_port(&m->u.port);
	case DPV_SHM_CTX_OPEN: return ctx_open(c, &m->u.dev, fds, out_fd);
	case DPV_SHM_CTX_CLOSE: return ctx_close(c, &m->u.dev);
	case DPV_SHM_CTX_IMPORT: return ctx_import(c, &m->u.dev, fds, out_fd);
	case DPV_SHM_MEM_ADD: return mem_add(c, &m->u.mem, fds);
	case DPV_SHM_MEM_DEL: return mem_del(c, &m->u.mem);
	case DPV_SHM_NUM_RESERVE: return num_reserve(c, &m->u.num);
	case DPV_SHM_NUM_RELEASE: return num_release(c, &m->u.num);
	case DPV_SHM_PD_ALLOC: return pd_alloc(c, &m->u.pd);
	case DPV_SHM_PD_DEALLOC: return pd_dealloc(c, &m->u.pd);
	case DPV_SHM_MR_REG: return mr_reg(c, &m->u.mr);
	case DPV_SHM_MR_DEREG: return mr_dereg(c, &m->u.mr);
	case DPV_SHM_MW_ALLOC: return mw_alloc(c, &m->u.mw);
	case DPV_SHM_MW_DEALLOC: return mw_dealloc(c, &m->u.mw);
	case DPV_SHM_AH_CREATE: return ah_create(c, &m->u.ah);
	case DPV_SHM_AH_DESTROY: return ah_destroy(c, &m->u.ah);
	case DPV_SHM_CQ_CREATE: return cq_create(c, &m->u.cq, fds);
	case DPV_SHM_CQ_DESTROY: return obj_destroy_cmd(c, DPV_OBJ_CQ, m->u.cq.handle);
	case DPV_SHM_CQ_RESIZE: return cq_resize(c, &m->u.cq);
	case DPV_SHM_SRQ_CREATE: return dpvd_srq_create(c, &m->u.srq);
	case DPV_SHM_SRQ_DESTROY: return dpvd_srq_destroy(c, &m->u.srq);
	case DPV_SHM_QP_CREATE: return dpvd_qp_create(c, &m->u.qp);
	case DPV_SHM_QP_DESTROY: return dpvd_qp_destroy(c, &m->u.qp);
	case DPV_SHM_QP_MODIFY: return dpvd_qp_modify(c, &m->u.qpm);
	case DPV_SHM_QP_QUERY: return dpvd_qp_query(c, &m->u.qpq);
	case DPV_SHM_SHPD_ALLOC: return shpd_alloc(c, &m->u.shpd);
	case DPV_SHM_SHPD_SHARE: return shpd_share(c, &m->u.shpd);
	case DPV_SHM_IMPORT_PD: return import_pd(c, &m->u.imp);
	case DPV_SHM_IMPORT_MR: return import_mr(c, &m->u.imp);
	case DPV_SHM_XRCD_OPEN: return dpvd_xrcd_open(c, &m->u.xrcd, &fds[0]);
	case DPV_SHM_XRCD_CLOSE: return dpvd_xrcd_close(c, &m->u.xrcd);
	case DPV_SHM_OPEN_QP: return dpvd_open_qp(c, &m->u.oqp);
	case DPV_SHM_GSI_LISTEN: return dpvd_gsi_listen(c, &m->u.gsil);
	case DPV_SHM_MCAST: return dpvd_qp_mcast(c, &m->u.mcast);
	case DPV_SHM_NEIGH: return neigh_query(&m->u.neigh);
	case DPV_SHM_DM_ALLOC: return dpvd_dm_alloc(c, &m->u.dm, out_fd);
	case DPV_SHM_DM_FREE: return dpvd_dm_free(c, &m->u.dm);
	case DPV_SHM_DM_IMPORT: return dpvd_dm_import(c, &m->u.dm, out_fd);
	case DPV_SHM_FLOW: return dpvd_qp_flow(c, &m->u.flow);
	default: return -EOPNOTSUPP;
	}
}
