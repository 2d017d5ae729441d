/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpverbsd: application connections. Each connection is one process (its
 * pid and uid from SO_PEERCRED); every number it reserved, every region it
 * added and every domain it opened is on its lists, so that when it goes
 * away (exit, SIGKILL, a closed socket, a protocol error) everything is
 * destroyed in the right order: its doorbell rings first (the engine stops
 * reading them), then QPs (peers see them as a dead host would leave them:
 * no answer, their retries run out; an XRC target QP that other processes
 * opened lives on until their handles go), SRQs and CQs, AHs and MRs, PDs
 * (a PD shared with other processes lives on), device memory handles, XRC
 * domain openings, regions and contexts.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <rte_cycles.h>

#include "dpvd.h"

struct dpvd dpvd_global = {.evlock = RTE_SPINLOCK_INITIALIZER};

RTE_LOG_REGISTER(dpvd_logtype, dpverbs.daemon, INFO);

const char *dpvd_op_name(uint16_t op)
{
	static const char *const n[DPV_SHM_OP_NR] = {
		[DPV_SHM_HELLO] = "HELLO", [DPV_SHM_QUERY_PORT] = "QUERY_PORT", [DPV_SHM_CTX_OPEN] = "CTX_OPEN",
		[DPV_SHM_CTX_CLOSE] = "CTX_CLOSE", [DPV_SHM_CTX_IMPORT] = "CTX_IMPORT", [DPV_SHM_MEM_ADD] = "MEM_ADD",
		[DPV_SHM_MEM_DEL] = "MEM_DEL", [DPV_SHM_NUM_RESERVE] = "NUM_RESERVE",
		[DPV_SHM_NUM_RELEASE] = "NUM_RELEASE", [DPV_SHM_PD_ALLOC] = "PD_ALLOC",
		[DPV_SHM_PD_DEALLOC] = "PD_DEALLOC", [DPV_SHM_MR_REG] = "MR_REG", [DPV_SHM_MR_DEREG] = "MR_DEREG",
		[DPV_SHM_AH_CREATE] = "AH_CREATE", [DPV_SHM_AH_DESTROY] = "AH_DESTROY",
		[DPV_SHM_CQ_CREATE] = "CQ_CREATE", [DPV_SHM_CQ_DESTROY] = "CQ_DESTROY",
		[DPV_SHM_CQ_RESIZE] = "CQ_RESIZE", [DPV_SHM_SRQ_CREATE] = "SRQ_CREATE",
		[DPV_SHM_SRQ_DESTROY] = "SRQ_DESTROY", [DPV_SHM_QP_CREATE] = "QP_CREATE",
		[DPV_SHM_QP_DESTROY] = "QP_DESTROY", [DPV_SHM_QP_MODIFY] = "QP_MODIFY",
		[DPV_SHM_QP_QUERY] = "QP_QUERY", [DPV_SHM_SHPD_ALLOC] = "SHPD_ALLOC",
		[DPV_SHM_SHPD_SHARE] = "SHPD_SHARE", [DPV_SHM_IMPORT_PD] = "IMPORT_PD",
		[DPV_SHM_IMPORT_MR] = "IMPORT_MR", [DPV_SHM_XRCD_OPEN] = "XRCD_OPEN",
		[DPV_SHM_XRCD_CLOSE] = "XRCD_CLOSE", [DPV_SHM_OPEN_QP] = "OPEN_QP",
		[DPV_SHM_GSI_LISTEN] = "GSI_LISTEN", [DPV_SHM_MCAST] = "MCAST",
		[DPV_SHM_NEIGH] = "NEIGH", [DPV_SHM_MW_ALLOC] = "MW_ALLOC", [DPV_SHM_MW_DEALLOC] = "MW_DEALLOC",
		[DPV_SHM_DM_ALLOC] = "DM_ALLOC", [DPV_SHM_DM_FREE] = "DM_FREE", [DPV_SHM_DM_IMPORT] = "DM_IMPORT",
		[DPV_SHM_FLOW] = "FLOW",
	};
	return op < DPV_SHM_OP_NR && n[op] ? n[op] : "?";
}

int dpvd_init(void)
{
	dpvd_global.params = dpv_host_params();
	dpvd_global.n_devs = dpv_host_n_devs();
	if (!dpvd_global.params) {
		errno = ENODEV; /* dpv_host_start first */
		return -1;
	}
	TAILQ_INIT(&dpvd_global.clients);
	TAILQ_INIT(&dpvd_global.xrcds);
	TAILQ_INIT(&dpvd_global.qpopens);
	TAILQ_INIT(&dpvd_global.dms);
	dpvd_global.next_id = 1;
	dpvd_global.next_dm = 1;
	/* every QP has at most one SQ and one RQ doorbell queued at a time
	 * (the rings' db flags): twice the QPs never fill a ring */
	uint32_t want = rte_align32pow2(RTE_MAX(2 * dpvd_global.params->max_qp, 1024u));
	dpvd_global.db_size = RTE_MIN(want, 1u << 19);
	dpvd_global.mem_limit = 64ull << 30;
	dpvd_events_init();
	dpvd_gsi_init();
	return 0;
}

struct dpvd_ctx *dpvd_ctx_get(struct dpvd_client *c, uint32_t ctx)
{
	return ctx && ctx <= DPVD_MAX_CTX && c->ctx[ctx - 1].token_fd >= 0 ? &c->ctx[ctx - 1] : NULL;
}

bool dpvd_ctx_ok(struct dpvd_client *c, uint32_t ctx, uint32_t dev)
{
	struct dpvd_ctx *x = dpvd_ctx_get(c, ctx);
	return x && x->dev == dev;
}

struct dpvd_client *dpvd_client_new(int sock)
{
	struct ucred cr;
	socklen_t len = sizeof(cr);
	struct dpvd_client *c = calloc(1, sizeof(*c));
	if (!c || getsockopt(sock, SOL_SOCKET, SO_PEERCRED, &cr, &len) != 0) {
		free(c);
		close(sock);
		return NULL;
	}
	c->sock = sock;
	c->pid = cr.pid;
	c->uid = cr.uid;
	c->id = dpvd_global.next_id++;
	if (!dpvd_global.next_id)
		dpvd_global.next_id = 1; /* 0 means "any owner" to the engine */
	for (unsigned int i = 0; i < DPVD_MAX_CTX; i++) {
		c->ctx[i].async_fd = -1;
		c->ctx[i].token_fd = -1;
	}
	TAILQ_INIT(&c->objs);
	TAILQ_INIT(&c->mem);
	TAILQ_INIT(&c->pdrefs);
	TAILQ_INIT(&c->xrefs);
	TAILQ_INIT(&c->dmrefs);
	rte_spinlock_lock(&dpvd_global.evlock); /* engine threads walk the list (port events) */
	TAILQ_INSERT_TAIL(&dpvd_global.clients, c, next);
	rte_spinlock_unlock(&dpvd_global.evlock);
	return c;
}

struct dpvd_obj *dpvd_obj_get(struct dpvd_client *c, enum dpv_obj_type t, uint32_t num, bool created)
{
	if ((unsigned int)t >= DPV_OBJ_NR)
		return NULL;
	struct dpvd_obj *o = dpv_pool_get(t, num);
	if (!o || o->type != t || (created && !o->created))
		return NULL;
	return o->owner == c ? o : NULL;
}

bool dpvd_pd_usable(struct dpvd_client *c, uint32_t pdn)
{
	struct dpvd_obj *o = dpv_pool_get(DPV_OBJ_PD, pdn);
	if (!o || o->type != DPV_OBJ_PD || !o->refs)
		return false;
	if (o->owner == c && o->created && o->owner_handle)
		return true; /* not once its creator let go of its handle */
	struct dpvd_pdref *r;
	TAILQ_FOREACH(r, &c->pdrefs, next)
		if (r->pd == o)
			return true;
	return false;
}

struct dpvd_mem *dpvd_mem_find(struct dpvd_client *c, uint64_t caddr, uint64_t len)
{
	if (caddr + len < caddr)
		return NULL;
	struct dpvd_mem *m;
	TAILQ_FOREACH(m, &c->mem, next)
		if (caddr >= m->caddr && caddr + len <= m->caddr + m->size)
			return m;
	return NULL;
}

struct dpvd_mem *dpvd_ring_check(struct dpvd_client *c, uint64_t caddr, uint32_t size, uint32_t stride)
{
	if (!caddr || (caddr & 63) || !size || (size & (size - 1)) || stride < 16 || (stride & (stride - 1)) ||
	    size > (1u << 24) || stride > (1u << 16))
		return NULL;
	return dpvd_mem_find(c, caddr, dpv_ring_bytes(size, stride));
}

void dpvd_pd_unref(struct dpvd_obj *pd)
{
	if (pd->refs)
		pd->refs--;
	if (pd->refs)
		return;
	if (pd->created && dpv_host_dev_ok(pd->dev))
		dpv_host_dealloc_pd(pd->dev, pd->num);
	pd->created = false;
	pd->shared = false;
	if (!pd->owner) { /* the creator gave the number back already */
		rte_spinlock_lock(&dpvd_global.evlock);
		dpv_pool_del(DPV_OBJ_PD, pd->num, pd);
		rte_spinlock_unlock(&dpvd_global.evlock);
		free(pd);
	}
}

/* The order of destruction: what uses others first. */
static const enum dpv_obj_type g_order[] = {
	DPV_OBJ_QP, DPV_OBJ_SRQ, DPV_OBJ_CQ, DPV_OBJ_AH, DPV_OBJ_MR, DPV_OBJ_PD,
};

void dpvd_obj_release(struct dpvd_client *c, struct dpvd_obj *o)
{
	TAILQ_REMOVE(&c->objs, o, next);
	if (o->type == DPV_OBJ_PD && o->created) {
		/* without owner from now; freed with the last handle */
		o->owner = NULL;
		if (o->owner_handle) {
			o->owner_handle = false;
			dpvd_pd_unref(o); /* may free it */
		}
		return;
	}
	if (o->type == DPV_OBJ_QP && o->created && o->n_openers) {
		/* an XRC target QP that other processes' ibv_open_qp handles
		 * keep: it lives, without owner, until the last one goes (as
		 * the kernel keeps the real QP while handles exist) */
		rte_spinlock_lock(&dpvd_global.evlock);
		o->owner = NULL;
		o->ctx = 0;
		rte_spinlock_unlock(&dpvd_global.evlock);
		return;
	}
	if (o->created)
		dpvd_obj_destroy(o);
	rte_spinlock_lock(&dpvd_global.evlock);
	dpv_pool_del(o->type, o->num, o);
	rte_spinlock_unlock(&dpvd_global.evlock);
	free(o);
}

static void objs_gone(struct dpvd_client *c)
{
	for (unsigned int k = 0; k < RTE_DIM(g_order); k++) {
		struct dpvd_obj *o, *tmp;
		TAILQ_FOREACH_SAFE(o, &c->objs, next, tmp)
			if (o->type == g_order[k])
				dpvd_obj_release(c, o);
	}
	struct dpvd_obj *o, *tmp; /* numbers never used (XRCD and the like) */
	TAILQ_FOREACH_SAFE(o, &c->objs, next, tmp)
		dpvd_obj_release(c, o);
}

/* The engine stops reading the doorbell rings. */
static void db_detach(struct dpvd_client *c)
{
	for (unsigned int d = 0; d < DPV_MAX_PORTS; d++)
		for (unsigned int q = 0; q < DPV_MAX_QUEUES; q++)
			if (c->db[d][q]) {
				dpv_host_db_detach(d, c->db[d][q]); /* nothing if d is no device */
				c->db[d][q] = NULL;
			}
}

/* The doorbell memfd goes: after db_detach and after the CQs (whose
 * engine writes the wake word in it). */
static void db_unmap(struct dpvd_client *c)
{
	if (c->db_mem)
		munmap(c->db_mem, c->db_bytes);
	c->db_mem = NULL;
	c->wake = NULL;
}

void dpvd_client_gone(struct dpvd_client *c)
{
	c->gone = true;
	db_detach(c);
	dpvd_qpopen_gone(c); /* before its QPs: those only others' handles keep live on */
	objs_gone(c);
	db_unmap(c);
	dpvd_gsi_client_gone(c); /* after its GSI QPs */
	dpvd_dm_client_gone(c); /* after its MRs (on device memory) */
	/* handles on other processes' PDs: after this process' QPs and MRs
	 * (which count as users of them) are gone */
	struct dpvd_pdref *r, *rt;
	TAILQ_FOREACH_SAFE(r, &c->pdrefs, next, rt) {
		TAILQ_REMOVE(&c->pdrefs, r, next);
		dpvd_pd_unref(r->pd);
		free(r);
	}
	dpvd_xrcd_gone(c);
	struct dpvd_mem *m, *mt;
	TAILQ_FOREACH_SAFE(m, &c->mem, next, mt) {
		TAILQ_REMOVE(&c->mem, m, next);
		munmap(m->addr, m->size);
		free(m);
	}
	rte_spinlock_lock(&dpvd_global.evlock);
	for (unsigned int i = 0; i < DPVD_MAX_CTX; i++) {
		if (c->ctx[i].async_fd >= 0)
			close(c->ctx[i].async_fd);
		if (c->ctx[i].token_fd >= 0)
			close(c->ctx[i].token_fd);
		c->ctx[i].async_fd = c->ctx[i].token_fd = -1;
	}
	TAILQ_REMOVE(&dpvd_global.clients, c, next);
	rte_spinlock_unlock(&dpvd_global.evlock);
	/* contexts of other processes that imported from this one lose the
	 * right (their imported PDs stay theirs) */
	struct dpvd_client *o2;
	TAILQ_FOREACH(o2, &dpvd_global.clients, next)
		for (unsigned int i = 0; i < DPVD_MAX_CTX; i++)
			if (o2->ctx[i].import_from == c)
				o2->ctx[i].import_from = NULL;
	close(c->sock);
	free(c);
}

/* HELLO: the doorbell rings (one memfd, one ring per engine context of
 * every device) and what the application needs to know of the devices. */
static int hello(struct dpvd_client *c, struct dpv_shm_msg *m, int *out_fd)
{
	if (m->u.hello.version != DPV_SHM_VERSION)
		return -EPROTONOSUPPORT;
	struct dpv_shm_hello *w = &m->u.hello;
	memset(w, 0, sizeof(*w));
	w->version = DPV_SHM_VERSION;
	w->pid = (int32_t)getpid();
	w->client_id = c->id;
	w->n_devs = RTE_MIN(dpvd_global.n_devs, (unsigned int)DPV_SHM_MAX_DEVS);
	w->tsc_hz = rte_get_tsc_hz();
	w->params = *dpvd_global.params;
	w->db_size = dpvd_global.db_size;
	for (unsigned int t = 0; t < DPV_OBJ_NR && t < RTE_DIM(w->pool_last); t++) {
		uint32_t first;
		dpv_pool_range((enum dpv_obj_type)t, &first, &w->pool_last[t]);
	}
	uint32_t n_db = 0;
	for (unsigned int i = 0; i < w->n_devs; i++) {
		struct dpv_host_dev d;
		struct dpv_shm_dev *sd = &w->devs[i];
		dpv_host_dev_query(i, &d);
		snprintf(sd->name, sizeof(sd->name), "%s", d.name);
		memcpy(sd->mac, d.mac, 6);
		sd->dm_size = d.dm_size;
		sd->db_first = n_db;
		sd->n_db = RTE_MIN(dpv_host_db_count(i), (unsigned int)DPV_MAX_QUEUES);
		n_db += sd->n_db;
		for (unsigned int g = 0; g < DPV_SHM_GIDS; g++) {
			struct dpv_gid gid;
			if (dpv_host_query_gid(i, g, &gid) == 0) {
				memcpy(sd->gid[g], gid.raw, 16);
				sd->gid_valid[g] = gid.valid;
				sd->gid_ip_ver[g] = gid.ip_ver;
			}
		}
	}
	w->n_db = n_db;
	size_t one = dpv_db_ring_bytes(dpvd_global.db_size);
	size_t wake_off = RTE_ALIGN_CEIL((size_t)n_db * one, RTE_CACHE_LINE_SIZE);
	size_t bytes = RTE_ALIGN_CEIL(wake_off + sizeof(struct dpv_wake), 4096);
	w->db_map_bytes = bytes;
	w->wake_off = wake_off;
	int fd = memfd_create("dpverbs-doorbells", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return -errno;
	void *p = MAP_FAILED;
	if (ftruncate(fd, (off_t)bytes) != 0 ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0 ||
	    (p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED) {
		int e = errno;
		close(fd);
		return -e;
	}
	c->db_mem = p;
	c->db_bytes = bytes;
	c->wake = (struct dpv_wake *)(c->db_mem + wake_off); /* zero: a new memfd */
	for (unsigned int i = 0; i < w->n_devs; i++) {
		for (unsigned int q = 0; q < w->devs[i].n_db; q++) {
			struct dpv_db_ring *r = (struct dpv_db_ring *)(c->db_mem + (w->devs[i].db_first + q) * one);
			dpv_db_ring_init(r, dpvd_global.db_size);
			c->db[i][q] = dpv_host_db_attach(i, q, r, dpvd_global.db_size, c->id);
			if (!c->db[i][q]) {
				int e = errno ? errno : ENOMEM;
				db_detach(c);
				db_unmap(c);
				close(fd);
				return -e;
			}
		}
	}
	c->hello = true;
	*out_fd = fd;
	return 0;
}

void dpvd_client_request(struct dpvd_client *c, struct dpv_shm_msg *m, int fds[DPV_SHM_MAX_FDS],
			 int out_fds[DPV_SHM_MAX_FDS], unsigned int *n_out)
{
	size_t want = dpv_shm_body_len(m->h.op);
	int st, out_fd = -1;
	*n_out = 0;
	if (!want || m->h.len != sizeof(m->h) + want)
		st = -EINVAL; /* unknown command or a body of the wrong size */
	else if (!c->hello && m->h.op != DPV_SHM_HELLO)
		st = -EPROTO;
	else if (m->h.op == DPV_SHM_HELLO)
		st = c->hello ? -EALREADY : hello(c, m, &out_fd);
	else
		st = dpvd_dispatch(c, m, fds, &out_fd);
	dpv_shm_close_fds(fds);
	if (st)
		DPVD_LOG(DEBUG, "pid %d: %s (%u): %s", (int)c->pid, dpvd_op_name(m->h.op), m->h.op, strerror(-st));
	m->h.status = st;
	/* the answer has the request's layout; an unknown command is
	 * answered with the header alone */
	m->h.len = (uint16_t)(sizeof(m->h) + want);
	if (out_fd >= 0) {
		if (st == 0)
			out_fds[(*n_out)++] = out_fd;
		else
			close(out_fd);
	}
}

bool dpvd_client_input(struct dpvd_client *c)
{
	struct dpv_shm_msg m;
	int fds[DPV_SHM_MAX_FDS], out[DPV_SHM_MAX_FDS];
	unsigned int n_out;
	int n = dpv_shm_recv(c->sock, &m, fds, 0);
	if (n == -ETIMEDOUT || n == -EAGAIN)
		return true;
	if (n <= 0)
		return false; /* closed, or not a dpverbs message: the connection ends */
	dpvd_client_request(c, &m, fds, out, &n_out);
	bool ok = dpv_shm_send(c->sock, &m, out, n_out) == 0;
	for (unsigned int i = 0; i < n_out; i++)
		close(out[i]);
	return ok;
}
