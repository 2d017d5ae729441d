/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The remote driver's object commands: each is one request to dpverbsd,
 * which checks it and executes it on the engine; addresses are this
 * process' (the daemon translates). Doorbells do not cross the socket: the
 * QPN goes into the doorbell ring of the engine context that serves the QP,
 * at most once per queue until the engine has looked (the ring header's db
 * flag).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>

#include "remote.h"

static uint32_t dev_index(void *dev)
{
	return ((struct rm_dev *)dev)->index;
}

/* ---- contexts ---- */

static int rm_ctx_add(uint32_t id, int async_wfd)
{
	struct rm_ctx *c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->id = id;
	c->async_wfd = async_wfd;
	pthread_mutex_lock(&rm_global.list_lock);
	c->next = rm_global.ctxs;
	rm_global.ctxs = c;
	pthread_mutex_unlock(&rm_global.list_lock);
	return 0;
}

static int rm_ctx_open(void *dev, int async_wfd, int *cmd_fd)
{
	struct dpv_shm_dev_ref r = {.dev = dev_index(dev)};
	int fds[1] = {async_wfd};
	int e = rm_call(DPV_SHM_CTX_OPEN, &r, fds, 1, cmd_fd);
	if (e)
		return e;
	if (rm_ctx_add(r.ctx, async_wfd)) {
		rm_call(DPV_SHM_CTX_CLOSE, &r, NULL, 0, NULL);
		close(*cmd_fd);
		*cmd_fd = -1;
		return -ENOMEM;
	}
	return (int)r.ctx;
}

static void rm_ctx_close(void *dev, uint32_t ctx)
{
	struct dpv_shm_dev_ref r = {.dev = dev_index(dev), .ctx = ctx};
	rm_call(DPV_SHM_CTX_CLOSE, &r, NULL, 0, NULL);
	pthread_mutex_lock(&rm_global.list_lock);
	for (struct rm_ctx **pp = &rm_global.ctxs; *pp; pp = &(*pp)->next)
		if ((*pp)->id == ctx) {
			struct rm_ctx *c = *pp;
			*pp = c->next;
			free(c);
			break;
		}
	pthread_mutex_unlock(&rm_global.list_lock);
}

static int rm_ctx_import(int cmd_fd, unsigned int *dev_idx, int async_wfd, int *new_cmd_fd)
{
	struct dpv_shm_dev_ref r = {0};
	int fds[2] = {cmd_fd, async_wfd};
	int e = rm_call(DPV_SHM_CTX_IMPORT, &r, fds, 2, new_cmd_fd);
	if (e)
		return e;
	*dev_idx = r.dev;
	if (rm_ctx_add(r.ctx, async_wfd)) {
		rm_call(DPV_SHM_CTX_CLOSE, &r, NULL, 0, NULL);
		close(*new_cmd_fd);
		*new_cmd_fd = -1;
		return -ENOMEM;
	}
	return (int)r.ctx;
}

/* ---- PDs, MRs, AHs ---- */

static int rm_alloc_pd(void *dev, uint32_t pdn)
{
	struct dpv_shm_pd p = {.dev = dev_index(dev), .pdn = pdn};
	return rm_call(DPV_SHM_PD_ALLOC, &p, NULL, 0, NULL);
}

static void rm_dealloc_pd(void *dev, uint32_t pdn)
{
	struct dpv_shm_pd p = {.dev = dev_index(dev), .pdn = pdn};
	rm_call(DPV_SHM_PD_DEALLOC, &p, NULL, 0, NULL);
}

static int rm_shpd_alloc(void *dev, uint32_t pdn, uint64_t key, uint64_t *id)
{
	struct dpv_shm_shpd s = {.dev = dev_index(dev), .pdn = pdn, .key = key};
	int e = rm_call(DPV_SHM_SHPD_ALLOC, &s, NULL, 0, NULL);
	if (!e)
		*id = s.id;
	return e;
}

static int rm_shpd_share(void *dev, uint64_t id, uint64_t key, uint32_t *pdn)
{
	struct dpv_shm_shpd s = {.dev = dev_index(dev), .id = id, .key = key};
	int e = rm_call(DPV_SHM_SHPD_SHARE, &s, NULL, 0, NULL);
	if (!e)
		*pdn = s.pdn;
	return e;
}

static int rm_import_pd(void *dev, uint32_t ctx, uint32_t pdn)
{
	struct dpv_shm_import im = {.dev = dev_index(dev), .ctx = ctx, .handle = pdn};
	return rm_call(DPV_SHM_IMPORT_PD, &im, NULL, 0, NULL);
}

static int rm_import_mr(void *dev, uint32_t ctx, uint32_t index, struct dpv_mr_desc *mr)
{
	struct dpv_shm_import im = {.dev = dev_index(dev), .ctx = ctx, .handle = index};
	int e = rm_call(DPV_SHM_IMPORT_MR, &im, NULL, 0, NULL);
	if (e)
		return e;
	memset(mr, 0, sizeof(*mr));
	mr->key = im.key;
	mr->pd = im.pdn;
	mr->addr = im.addr;
	mr->iova = im.iova;
	mr->length = im.length;
	mr->access = im.access;
	return 0;
}

static int rm_reg_mr(void *dev, const struct dpv_mr_desc *d)
{
	struct dpv_shm_mr m = {.dev = dev_index(dev), .key = d->key, .pd = d->pd, .access = d->access,
			       .addr = d->addr, .iova = d->iova, .length = d->length, .dm = d->dm,
			       .dm_offset = d->dm_offset};
	return rm_call(DPV_SHM_MR_REG, &m, NULL, 0, NULL);
}

/* -EBUSY from the daemon: windows are bound to it (an application never
 * forces: the daemon does for a process that went away). */
static int rm_dereg_mr(void *dev, uint32_t key, bool force)
{
	struct dpv_shm_mr m = {.dev = dev_index(dev), .key = key};
	int e = rm_call(DPV_SHM_MR_DEREG, &m, NULL, 0, NULL);
	return e == -EBUSY ? e : 0;
}

static int rm_alloc_mw(void *dev, const struct dpv_mw_desc *d)
{
	struct dpv_shm_mw m = {.dev = dev_index(dev), .key = d->key, .pd = d->pd, .type = d->type};
	return rm_call(DPV_SHM_MW_ALLOC, &m, NULL, 0, NULL);
}

static void rm_dealloc_mw(void *dev, uint32_t key)
{
	struct dpv_shm_mw m = {.dev = dev_index(dev), .key = key};
	rm_call(DPV_SHM_MW_DEALLOC, &m, NULL, 0, NULL);
}

/* ---- device memory: a memfd per allocation, made by the daemon, mapped
 * here and there (the engine reaches it at the daemon's mapping) ---- */

static size_t dm_map_bytes(uint64_t length)
{
	return RTE_ALIGN_CEIL(length, (uint64_t)4096);
}

/* The daemon's memfd of m, mapped here (the daemon sized it as
 * dm_map_bytes says: rm_free_dm unmaps that much). */
static int dm_map(const struct dpv_shm_dm *m, int fd, struct dpv_dm_desc *dm)
{
	if (fd < 0 || !m->length || m->map_bytes != dm_map_bytes(m->length)) {
		if (fd >= 0)
			close(fd);
		return -EPROTO;
	}
	void *p = mmap(NULL, m->map_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		return -ENOMEM;
	dm->handle = m->handle;
	dm->length = m->length;
	dm->addr = p;
	return 0;
}

static int rm_alloc_dm(void *dev, uint32_t ctx, uint64_t length, uint32_t log_align, struct dpv_dm_desc *dm)
{
	struct dpv_shm_dm m = {.dev = dev_index(dev), .ctx = ctx, .length = length, .log_align = log_align};
	int fd = -1;
	int e = rm_call(DPV_SHM_DM_ALLOC, &m, NULL, 0, &fd);
	if (e)
		return e;
	e = dm_map(&m, fd, dm);
	if (e) {
		struct dpv_shm_dm f = {.dev = m.dev, .handle = m.handle};
		rm_call(DPV_SHM_DM_FREE, &f, NULL, 0, NULL);
	}
	return e;
}

static int rm_import_dm(void *dev, uint32_t ctx, uint32_t handle, struct dpv_dm_desc *dm)
{
	struct dpv_shm_dm m = {.dev = dev_index(dev), .ctx = ctx, .handle = handle};
	int fd = -1;
	int e = rm_call(DPV_SHM_DM_IMPORT, &m, NULL, 0, &fd);
	if (e)
		return e;
	e = dm_map(&m, fd, dm);
	if (e) {
		struct dpv_shm_dm f = {.dev = m.dev, .handle = handle};
		rm_call(DPV_SHM_DM_FREE, &f, NULL, 0, NULL);
	}
	return e;
}

/* The daemon drops this process' handle first (it refuses while an MR of
 * ours is on it); the memory stays mapped in the daemon while anyone holds
 * it. */
static int rm_free_dm(void *dev, const struct dpv_dm_desc *dm)
{
	struct dpv_shm_dm m = {.dev = dev_index(dev), .handle = dm->handle};
	int e = rm_call(DPV_SHM_DM_FREE, &m, NULL, 0, NULL);
	if (e && e != -EIO)
		return e;
	munmap(dm->addr, dm_map_bytes(dm->length));
	return e;
}

static int rm_create_ah(void *dev, const struct dpv_ah_desc *a)
{
	struct dpv_shm_ah m = {.dev = dev_index(dev), .handle = a->handle, .ip_ver = a->ip_ver,
			       .tclass = a->tclass, .hop_limit = a->hop_limit, .flow_label = a->flow_label};
	memcpy(m.sgid, a->sgid, 16);
	memcpy(m.dgid, a->dgid, 16);
	m.pd = a->pd; /* the daemon checks that this process may use it */
	return rm_call(DPV_SHM_AH_CREATE, &m, NULL, 0, NULL);
}

static void rm_destroy_ah(void *dev, uint32_t handle)
{
	struct dpv_shm_ah m = {.dev = dev_index(dev), .handle = handle};
	rm_call(DPV_SHM_AH_DESTROY, &m, NULL, 0, NULL);
}

/* ---- CQs, SRQs ---- */

static void *rm_create_cq(void *dev, const struct dpv_cq_cfg *cfg)
{
	struct rm_cq *q = calloc(1, sizeof(*q));
	if (!q) {
		errno = ENOMEM;
		return NULL;
	}
	struct dpv_shm_cq m = {.dev = dev_index(dev), .handle = cfg->handle, .ctx = cfg->ctx,
			       .timestamps = cfg->timestamps, .ring = (uintptr_t)cfg->ring,
			       .ring_size = cfg->ring_size, .has_channel = cfg->chan_fd >= 0, .cookie = cfg->cookie,
			       .ignore_overrun = cfg->ignore_overrun};
	int e = rm_call(DPV_SHM_CQ_CREATE, &m, &cfg->chan_fd, cfg->chan_fd >= 0 ? 1 : 0, NULL);
	if (e) {
		free(q);
		errno = -e;
		return NULL;
	}
	q->handle = cfg->handle;
	q->chan_fd = cfg->chan_fd;
	q->cookie = cfg->cookie;
	if (q->chan_fd >= 0) {
		pthread_mutex_lock(&rm_global.list_lock);
		q->next = rm_global.cqs;
		rm_global.cqs = q;
		pthread_mutex_unlock(&rm_global.list_lock);
	}
	return q;
}

static void rm_destroy_cq(void *p)
{
	struct rm_cq *q = p;
	struct dpv_shm_cq m = {.handle = q->handle};
	rm_call(DPV_SHM_CQ_DESTROY, &m, NULL, 0, NULL);
	pthread_mutex_lock(&rm_global.list_lock);
	for (struct rm_cq **pp = &rm_global.cqs; *pp; pp = &(*pp)->next)
		if (*pp == q) {
			*pp = q->next;
			break;
		}
	pthread_mutex_unlock(&rm_global.list_lock);
	free(q);
}

static int rm_resize_cq(void *p, struct dpv_ring_hdr *ring, uint32_t size)
{
	struct rm_cq *q = p;
	struct dpv_shm_cq m = {.handle = q->handle, .ring = (uintptr_t)ring, .ring_size = size};
	return rm_call(DPV_SHM_CQ_RESIZE, &m, NULL, 0, NULL);
}

static void *rm_create_srq(void *dev, const struct dpv_srq_cfg *cfg)
{
	struct rm_dev *d = dev;
	if (cfg->tm_ops && (!d->n_db || !d->db || !d->db[0])) {
		errno = EOPNOTSUPP; /* no doorbell ring to ring its ops on (a daemon without an engine) */
		return NULL;
	}
	struct rm_srq *s = calloc(1, sizeof(*s));
	if (!s) {
		errno = ENOMEM;
		return NULL;
	}
	struct dpv_shm_srq m = {.dev = dev_index(dev), .srqn = cfg->srqn, .ctx = cfg->ctx, .pd = cfg->pd,
				.xrcd = cfg->xrcd, .cq = cfg->cq ? ((struct rm_cq *)cfg->cq)->handle : 0,
				.max_sge = cfg->max_sge, .ring_size = cfg->ring_size, .ring_stride = cfg->ring_stride,
				.ring = (uintptr_t)cfg->ring, .cookie = cfg->cookie, .tm_ops = cfg->tm_ops,
				.tm_tags = cfg->tm_tags};
	int e = rm_call(DPV_SHM_SRQ_CREATE, &m, NULL, 0, NULL);
	if (e) {
		free(s);
		errno = -e;
		return NULL;
	}
	s->srqn = cfg->srqn;
	if (cfg->tm_ops) {
		s->tm = (struct dpv_tm_hdr *)((uint8_t *)cfg->ring + dpv_tm_area_off(cfg->ring_size, cfg->ring_stride));
		s->db = d->db[0];
	}
	return s;
}

static void rm_destroy_srq(void *p)
{
	struct rm_srq *s = p;
	struct dpv_shm_srq m = {.srqn = s->srqn};
	rm_call(DPV_SHM_SRQ_DESTROY, &m, NULL, 0, NULL);
	free(s);
}

/* ---- QPs ---- */

static void *rm_create_qp(const struct dpv_qp_cfg *cfg)
{
	struct rm_dev *d = cfg->dev;
	struct rm_qp *qp = calloc(1, sizeof(*qp));
	if (!qp) {
		errno = ENOMEM;
		return NULL;
	}
	struct dpv_shm_qp m = {
		.dev = d->index, .qpn = cfg->qpn, .ctx = cfg->ctx, .type = cfg->type,
		.sq = (uintptr_t)cfg->sq, .rq = (uintptr_t)cfg->rq, .sq_size = cfg->sq_size,
		.sq_stride = cfg->sq_stride, .rq_size = cfg->rq_size, .rq_stride = cfg->rq_stride,
		.scq = cfg->scq ? ((struct rm_cq *)cfg->scq)->handle : 0,
		.rcq = cfg->rcq ? ((struct rm_cq *)cfg->rcq)->handle : 0,
		.srq = cfg->srq ? ((struct rm_srq *)cfg->srq)->srqn : 0, .pd = cfg->pd, .xrcd = cfg->xrcd,
		.sq_sig_all = cfg->sq_sig_all, .cap = cfg->cap, .cookie = cfg->cookie, .gsi = cfg->gsi,
		.has_rss = cfg->rss != NULL,
	};
	if (cfg->rss)
		m.rss = *cfg->rss;
	int e = rm_call(DPV_SHM_QP_CREATE, &m, NULL, 0, NULL);
	if (!e && (m.db >= d->n_db || !d->db[m.db]))
		e = -EPROTO;
	if (e) {
		free(qp);
		errno = -e;
		return NULL;
	}
	qp->qpn = cfg->qpn;
	qp->sq = cfg->sq;
	qp->rq = cfg->rq;
	qp->db = d->db[m.db];
	qp->gsi_prefix = m.gsi_prefix;
	qp->gsi_mask = m.gsi_mask;
	return qp;
}

static int rm_mcast(void *p, const uint8_t *gid, bool attach)
{
	struct rm_qp *qp = p;
	struct dpv_shm_mcast m = {.qpn = qp->qpn, .attach = attach};
	memcpy(m.gid, gid, sizeof(m.gid));
	return rm_call(DPV_SHM_MCAST, &m, NULL, 0, NULL);
}

static int rm_mcast_attach(void *p, const uint8_t *gid)
{
	return rm_mcast(p, gid, true);
}

static int rm_mcast_detach(void *p, const uint8_t *gid)
{
	return rm_mcast(p, gid, false);
}

static int rm_flow_create(void *p, const struct dpv_raw_rule *rule, uint32_t *handle)
{
	struct rm_qp *qp = p;
	struct dpv_shm_flow m = {.qpn = qp->qpn, .create = 1, .rule = *rule};
	int e = rm_call(DPV_SHM_FLOW, &m, NULL, 0, NULL);
	if (!e)
		*handle = m.handle;
	return e;
}

static int rm_flow_destroy(void *p, uint32_t handle)
{
	struct rm_qp *qp = p;
	struct dpv_shm_flow m = {.qpn = qp->qpn, .create = 0, .handle = handle};
	return rm_call(DPV_SHM_FLOW, &m, NULL, 0, NULL);
}

static int rm_gsi_listen(void *p, uint64_t service_id, bool on)
{
	struct rm_qp *qp = p;
	struct dpv_shm_gsi_listen m = {.qpn = qp->qpn, .on = on, .service_id = service_id};
	return rm_call(DPV_SHM_GSI_LISTEN, &m, NULL, 0, NULL);
}

static void rm_gsi_comm_ids(void *p, uint32_t *prefix, uint32_t *mask)
{
	struct rm_qp *qp = p;
	*prefix = qp->gsi_prefix;
	*mask = qp->gsi_mask;
}

static void rm_destroy_qp(void *p)
{
	struct rm_qp *qp = p;
	struct dpv_shm_qp m = {.qpn = qp->qpn};
	rm_call(DPV_SHM_QP_DESTROY, &m, NULL, 0, NULL);
	free(qp);
}

static int rm_modify_qp(void *p, const struct ibv_qp_attr *attr, int mask, enum ibv_qp_state cur,
			enum ibv_qp_state to)
{
	struct rm_qp *qp = p;
	struct dpv_shm_qp_modify m = {.qpn = qp->qpn, .mask = mask, .cur = cur, .to = to, .attr = *attr};
	return rm_call(DPV_SHM_QP_MODIFY, &m, NULL, 0, NULL);
}

static enum ibv_qp_state rm_query_qp_state(void *p)
{
	struct rm_qp *qp = p;
	struct dpv_shm_qp_query m = {.qpn = qp->qpn};
	return rm_call(DPV_SHM_QP_QUERY, &m, NULL, 0, NULL) ? IBV_QPS_ERR : (enum ibv_qp_state)m.state;
}

static int rm_query_qp_attr(void *p, struct ibv_qp_attr *attr, bool *sq_sig_all, uint32_t *handles)
{
	struct rm_qp *qp = p;
	struct dpv_shm_qp_query m = {.qpn = qp->qpn};
	int e = rm_call(DPV_SHM_QP_QUERY, &m, NULL, 0, NULL);
	if (e)
		return e;
	*attr = m.attr;
	attr->qp_state = attr->cur_qp_state = (enum ibv_qp_state)m.state;
	*sq_sig_all = m.sq_sig_all != 0;
	*handles = m.handles;
	return 0;
}

static void rm_query_qp_counters(void *p, uint64_t *cnt, unsigned int n)
{
	struct rm_qp *qp = p;
	struct dpv_shm_qp_query m = {.qpn = qp->qpn};
	if (rm_call(DPV_SHM_QP_QUERY, &m, NULL, 0, NULL))
		memset(m.cnt, 0, sizeof(m.cnt));
	for (unsigned int i = 0; i < n; i++)
		cnt[i] = i < DPV_SHM_CNT_MAX ? m.cnt[i] : 0;
}

/* Queue the QPN (flag) unless an entry for this queue is queued already. */
static void ring(struct rm_qp *qp, struct dpv_ring_hdr *h, uint32_t v)
{
	if (atomic_exchange_explicit(&h->db, 1, memory_order_seq_cst))
		return;
	if (dpv_db_ring_put(qp->db, rm_global.db_mask, v) != 0)
		atomic_store_explicit(&h->db, 0, memory_order_release); /* full: never with a sane peer */
}

static void rm_sq_doorbell(void *p)
{
	struct rm_qp *qp = p;
	if (qp->sq)
		ring(qp, qp->sq, qp->qpn);
}

static void rm_rq_doorbell(void *p)
{
	struct rm_qp *qp = p;
	if (qp->rq)
		ring(qp, qp->rq, qp->qpn | DPV_DB_RQ);
}

/* A tag matching SRQ's ops: its number on the first doorbell ring of its
 * device, once until the engine has looked (the TM area's db flag). */
static void rm_srq_doorbell(void *p)
{
	struct rm_srq *s = p;
	if (!s->tm || !s->db || atomic_exchange_explicit(&s->tm->db, 1, memory_order_seq_cst))
		return;
	if (dpv_db_ring_put(s->db, rm_global.db_mask, s->srqn | DPV_DB_SRQ) != 0)
		atomic_store_explicit(&s->tm->db, 0, memory_order_release);
}

/* ---- XRC ---- */

static int rm_xrcd_open(void *dev, int fd, int oflags, uint32_t *num)
{
	struct dpv_shm_xrcd x = {.dev = dev_index(dev), .oflags = oflags, .has_fd = fd >= 0};
	int e = rm_call(DPV_SHM_XRCD_OPEN, &x, &fd, fd >= 0 ? 1 : 0, NULL);
	if (!e)
		*num = x.num;
	return e;
}

static void rm_xrcd_close(void *dev, uint32_t num)
{
	struct dpv_shm_xrcd x = {.dev = dev_index(dev), .num = num};
	rm_call(DPV_SHM_XRCD_CLOSE, &x, NULL, 0, NULL);
}

/* dpv_query_neigh: the daemon's table (its ports send the ARP / ND). */
static int rm_neigh_query(void *dev, const uint8_t ip[16], uint8_t mac[6])
{
	struct dpv_shm_neigh n = {.dev = dev_index(dev)};
	memcpy(n.ip, ip, 16);
	int e = rm_call(DPV_SHM_NEIGH, &n, NULL, 0, NULL);
	if (!e)
		memcpy(mac, n.mac, 6);
	return e;
}

/* ibv_open_qp: a handle on an XRC target QP of any process (the daemon
 * checks the domain); it has no rings and rings no doorbell. */
static void *rm_open_qp(void *dev, uint32_t ctx, uint32_t xrcd, uint32_t qpn, uint64_t cookie)
{
	struct rm_qp *qp = calloc(1, sizeof(*qp));
	if (!qp) {
		errno = ENOMEM;
		return NULL;
	}
	struct dpv_shm_open_qp o = {.dev = dev_index(dev), .xrcd = xrcd, .qpn = qpn, .ctx = ctx, .cookie = cookie};
	int e = rm_call(DPV_SHM_OPEN_QP, &o, NULL, 0, NULL);
	if (e) {
		free(qp);
		errno = -e;
		return NULL;
	}
	qp->qpn = qpn;
	qp->cookie = cookie;
	return qp;
}

static void rm_close_qp(void *p)
{
	struct rm_qp *qp = p;
	struct dpv_shm_open_qp o = {.qpn = qp->qpn, .cookie = qp->cookie, .close = 1};
	rm_call(DPV_SHM_OPEN_QP, &o, NULL, 0, NULL);
	free(qp);
}

/* The remote driver: every operation a request to dpverbsd, but the
 * device, progress and memory ones of remote.c. */
static const struct dpv_verbs_ops rm_verbs_ops = {
	.alloc_dm = rm_alloc_dm,
	.alloc_mw = rm_alloc_mw,
	.alloc_pd = rm_alloc_pd,
	.close_qp = rm_close_qp,
	.create_ah = rm_create_ah,
	.create_cq = rm_create_cq,
	.create_qp = rm_create_qp,
	.create_srq = rm_create_srq,
	.ctx_close = rm_ctx_close,
	.ctx_import = rm_ctx_import,
	.ctx_open = rm_ctx_open,
	.dealloc_mw = rm_dealloc_mw,
	.dealloc_pd = rm_dealloc_pd,
	.dereg_mr = rm_dereg_mr,
	.destroy_ah = rm_destroy_ah,
	.destroy_cq = rm_destroy_cq,
	.destroy_qp = rm_destroy_qp,
	.destroy_srq = rm_destroy_srq,
	.flow_create = rm_flow_create,
	.flow_destroy = rm_flow_destroy,
	.fork_safe = rm_fork_safe,
	.free_dm = rm_free_dm,
	.import_dm = rm_import_dm,
	.import_mr = rm_import_mr,
	.import_pd = rm_import_pd,
	.mcast_attach = rm_mcast_attach,
	.mcast_detach = rm_mcast_detach,
	.mem_alloc = rm_mem_alloc,
	.mem_free = rm_mem_free,
	.mem_is_huge = rm_mem_is_huge,
	.modify_qp = rm_modify_qp,
	.neigh_query = rm_neigh_query,
	.open_qp = rm_open_qp,
	.progress = rm_progress,
	.progress_is_background = rm_background,
	.query_gid = rm_query_gid,
	.query_port = rm_query_port,
	.query_qp_attr = rm_query_qp_attr,
	.query_qp_counters = rm_query_qp_counters,
	.query_qp_state = rm_query_qp_state,
	.queue_alloc = rm_queue_alloc,
	.queue_free = rm_queue_free,
	.reg_mr = rm_reg_mr,
	.resize_cq = rm_resize_cq,
	.rings_queue_only = rm_rings_queue_only,
	.rq_doorbell = rm_rq_doorbell,
	.shpd_alloc = rm_shpd_alloc,
	.shpd_share = rm_shpd_share,
	.sq_doorbell = rm_sq_doorbell,
	.srq_doorbell = rm_srq_doorbell,
	.xrcd_close = rm_xrcd_close,
	.xrcd_open = rm_xrcd_open,
};

/* an application's GSI QP: dpverbsd owns QP 1 and hands it its MADs */
static const struct dpv_gsi_ops rm_gsi_ops = {
	.gsi_comm_ids = rm_gsi_comm_ids,
	.gsi_listen = rm_gsi_listen,
};

DPV_DRIVER_REGISTER(remote, rm_probe, &rm_verbs_ops, NULL, &rm_gsi_ops);
