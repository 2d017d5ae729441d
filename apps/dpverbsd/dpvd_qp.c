/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpverbsd: QPs, SRQs and XRC domains of applications. Creation checks every
 * number (the application's own CQs, SRQ, a PD it may use, a domain it has
 * open), the capabilities against the device limits and the rings against
 * the regions it added, and gives the engine its own translation of them;
 * modify checks the transition and the attribute values exactly as the
 * façade does and keeps the QP's attributes here, so the engine never sees
 * a value the application did not have checked.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dpvd.h"

/* The CQ handle h of c on device dev, created, or NULL. */
static struct dpvd_obj *cq_of(struct dpvd_client *c, uint32_t h, uint32_t dev)
{
	struct dpvd_obj *o = dpvd_obj_get(c, DPV_OBJ_CQ, h, true);
	return o && o->dev == dev ? o : NULL;
}

static void use(struct dpvd_obj *o, unsigned int i, struct dpvd_obj *u)
{
	if (u) {
		o->uses[i] = u;
		u->users++;
	}
}

struct dpvd_xrcd *dpvd_xrcd_held(struct dpvd_client *c, uint32_t num)
{
	struct dpvd_xref *r;
	TAILQ_FOREACH(r, &c->xrefs, next)
		if (r->x->num == num)
			return r->x;
	return NULL;
}

int dpvd_srq_create(struct dpvd_client *c, struct dpv_shm_srq *s)
{
	const struct dpv_params *p = dpvd_global.params;
	struct dpvd_obj *o = dpvd_obj_get(c, DPV_OBJ_SRQ, s->srqn, false);
	struct dpvd_mem *m = dpvd_ring_check(c, s->ring, s->ring_size, s->ring_stride);
	if (!dpv_host_dev_ok(s->dev) || !o || o->created || !m || !dpvd_ctx_ok(c, s->ctx, s->dev) ||
	    !dpvd_pd_usable(c, s->pd) || !s->max_sge || s->max_sge > p->max_srq_sge ||
	    s->ring_size > rte_align32pow2(p->max_srq_wr) ||
	    s->ring_stride < sizeof(struct dpv_recv_wqe) + s->max_sge * sizeof(struct dpv_sge))
		return -EINVAL;
	struct dpvd_obj *cq = NULL;
	struct dpvd_xrcd *x = NULL;
	if (s->xrcd) {
		x = dpvd_xrcd_held(c, s->xrcd);
		cq = cq_of(c, s->cq, s->dev);
		if (!x || !cq)
			return -EINVAL;
	}
	if (s->tm_ops) { /* tag matching: its area after the ring is the client's too */
		cq = cq_of(c, s->cq, s->dev);
		uint64_t area = s->ring + dpv_tm_area_off(s->ring_size, s->ring_stride);
		if (s->xrcd || !cq || (s->tm_ops & (s->tm_ops - 1)) || s->tm_ops > DPV_TM_MAX_OPS ||
		    !s->tm_tags || s->tm_tags > DPV_TM_MAX_TAGS ||
		    dpvd_mem_find(c, area, dpv_tm_area_bytes(s->tm_ops, s->tm_tags)) != m)
			return -EINVAL;
	}
	struct dpv_srq_cfg cfg = {.srqn = s->srqn, .ring = dpvd_mem_xlate(m, s->ring), .ring_size = s->ring_size,
				  .ring_stride = s->ring_stride, .pd = s->pd, .xrcd = x ? x->num : 0,
				  .cq = cq ? cq->drv : NULL, .max_sge = s->max_sge, .ctx = s->ctx, .cookie = s->cookie,
				  .tm_ops = s->tm_ops, .tm_tags = s->tm_tags, .owner = c->id};
	void *drv = dpv_host_create_srq(s->dev, &cfg);
	if (!drv)
		return -(errno ? errno : ENOMEM);
	dpvd_obj_created(o, s->dev, s->ctx, s->cookie, m, NULL);
	use(o, 0, dpv_pool_get(DPV_OBJ_PD, s->pd));
	use(o, 1, cq);
	if (x) {
		o->xrcd = x;
		x->users++;
	}
	rte_spinlock_lock(&dpvd_global.evlock);
	o->drv = drv;
	o->created = true;
	rte_spinlock_unlock(&dpvd_global.evlock);
	return 0;
}

int dpvd_srq_destroy(struct dpvd_client *c, struct dpv_shm_srq *s)
{
	struct dpvd_obj *o = dpvd_obj_get(c, DPV_OBJ_SRQ, s->srqn, true);
	if (!o)
		return -EINVAL;
	if (o->users)
		return -EBUSY;
	dpvd_obj_destroy(o);
	return 0;
}

/* What a QP creation names, each checked. */
struct qp_parts {
	struct dpvd_obj *scq, *rcq, *srq, *pd;
	struct dpvd_mem *sm, *rm;
	struct dpvd_xrcd *x;
};

/* A raw packet QP with receive-side scaling: a PD, no rings or CQs, and
 * receive WQs that are raw packet QPs of the caller on the same device. */
static int rss_parts(struct dpvd_client *c, struct dpv_shm_qp *q, enum ibv_qp_type t, struct qp_parts *p)
{
	struct dpv_rss_cfg *r = &q->rss;
	struct dpvd_obj *pd = dpvd_pd_usable(c, q->pd) ? dpv_pool_get(DPV_OBJ_PD, q->pd) : NULL;
	if (t != IBV_QPT_RAW_PACKET || q->has_rss != 1 || !pd || pd->dev != q->dev || !r->n ||
	    r->n > DPV_RSS_TABLE_MAX || (r->n & (r->n - 1)) || q->sq || q->rq || q->srq)
		return -EINVAL;
	for (uint32_t i = 0; i < r->n; i++) {
		struct dpvd_obj *w = dpvd_obj_get(c, DPV_OBJ_QP, r->wqn[i], true);
		if (!w || w->dev != q->dev || w->qp_type != IBV_QPT_RAW_PACKET)
			return -EINVAL;
	}
	q->cap = (struct ibv_qp_cap){0};
	q->sq_size = q->rq_size = 0;
	*p = (struct qp_parts){.pd = pd};
	return 0;
}

static int qp_parts(struct dpvd_client *c, struct dpv_shm_qp *q, enum ibv_qp_type t, struct qp_parts *p)
{
	if (q->has_rss)
		return rss_parts(c, q, t, p);
	bool has_sq = t != IBV_QPT_XRC_RECV;
	bool has_rq = has_sq && t != IBV_QPT_XRC_SEND && !q->srq;
	struct dpvd_obj *scq = NULL, *rcq = NULL, *srq = NULL, *pd = NULL;
	struct dpvd_mem *sm = NULL, *rm = NULL;
	struct dpvd_xrcd *x = NULL;
	if (has_sq) {
		pd = dpvd_pd_usable(c, q->pd) ? dpv_pool_get(DPV_OBJ_PD, q->pd) : NULL;
		scq = cq_of(c, q->scq, q->dev);
		sm = dpvd_ring_check(c, q->sq, q->sq_size, q->sq_stride);
		uint32_t need = sizeof(struct dpv_send_wqe) +
				RTE_MAX(RTE_MAX(q->cap.max_send_sge, 1u) * (uint32_t)sizeof(struct dpv_sge),
					q->cap.max_inline_data);
		if (!pd || pd->dev != q->dev || !scq || !sm || q->sq_stride < need || q->sq_size < q->cap.max_send_wr)
			return -EINVAL;
	} else {
		x = dpvd_xrcd_held(c, q->xrcd);
		if (!x)
			return -EINVAL;
	}
	if (t != IBV_QPT_XRC_RECV && t != IBV_QPT_XRC_SEND) {
		rcq = cq_of(c, q->rcq, q->dev);
		if (!rcq)
			return -EINVAL;
		if (q->srq) {
			srq = dpvd_obj_get(c, DPV_OBJ_SRQ, q->srq, true);
			if (!srq || srq->dev != q->dev || srq->xrcd)
				return -EINVAL;
		}
	}
	if (has_rq) {
		rm = dpvd_ring_check(c, q->rq, q->rq_size, q->rq_stride);
		if (!rm || q->rq_stride < sizeof(struct dpv_recv_wqe) + RTE_MAX(q->cap.max_recv_sge, 1u) * sizeof(struct dpv_sge) ||
		    q->rq_size < q->cap.max_recv_wr)
			return -EINVAL;
	} else {
		q->cap.max_recv_wr = q->cap.max_recv_sge = 0;
	}
	*p = (struct qp_parts){.scq = scq, .rcq = rcq, .srq = srq, .pd = pd, .sm = sm, .rm = rm, .x = x};
	return 0;
}

int dpvd_qp_create(struct dpvd_client *c, struct dpv_shm_qp *q)
{
	struct dpvd_obj *o = dpvd_obj_get(c, DPV_OBJ_QP, q->qpn, false);
	enum ibv_qp_type t = (enum ibv_qp_type)q->type;
	/* ibv_create_qp's capability check, the receive queue's too whatever
	 * the QP (qp_parts clears what it does not have) */
	if (!dpv_host_dev_ok(q->dev) || !o || o->created || !dpvd_ctx_ok(c, q->ctx, q->dev) ||
	    !dpv_qp_cap_ok(dpvd_global.params, &q->cap, false))
		return -EINVAL;
	if (t != IBV_QPT_RC && t != IBV_QPT_UC && t != IBV_QPT_UD && t != IBV_QPT_XRC_SEND && t != IBV_QPT_XRC_RECV &&
	    t != IBV_QPT_RAW_PACKET)
		return -EOPNOTSUPP;
	if (q->gsi > 1 || (q->gsi && t != IBV_QPT_UD))
		return -EINVAL;
	if (q->gsi && c != dpvd_cm_self())
		dpvd_cm_ensure(); /* the daemon's own endpoint, the fallback of QP 1 */
	struct qp_parts p;
	int e = qp_parts(c, q, t, &p);
	if (!e && q->gsi)
		e = dpvd_gsi_reserve(c, q->dev);
	if (e)
		return e;
	struct dpvd_obj *scq = p.scq, *rcq = p.rcq, *srq = p.srq, *pd = p.pd;
	struct dpvd_mem *sm = p.sm, *rm = p.rm;
	struct dpvd_xrcd *x = p.x;
	struct dpv_qp_cfg cfg = {
		.qpn = q->qpn, .type = t,
		.sq = sm ? dpvd_mem_xlate(sm, q->sq) : NULL, .rq = rm ? dpvd_mem_xlate(rm, q->rq) : NULL,
		.sq_size = sm ? q->sq_size : 0, .sq_stride = sm ? q->sq_stride : 0,
		.rq_size = rm ? q->rq_size : 0, .rq_stride = rm ? q->rq_stride : 0, .owner = c->id,
		.scq = scq ? scq->drv : NULL, .rcq = rcq ? rcq->drv : NULL, .srq = srq ? srq->drv : NULL,
		.pd = pd ? pd->num : 0, .xrcd = x ? x->num : 0, .cap = q->cap, .sq_sig_all = q->sq_sig_all != 0,
		.ctx = q->ctx, .cookie = q->cookie, .gsi_shared = q->gsi != 0,
		.rss = q->has_rss ? &q->rss : NULL,
	};
	void *drv = dpv_host_create_qp(q->dev, &cfg, &o->bufs);
	if (!drv)
		return -(errno ? errno : ENOMEM);
	dpvd_obj_created(o, q->dev, q->ctx, q->cookie, sm, rm);
	o->qp_type = t;
	memset(&o->attr, 0, sizeof(o->attr));
	o->attr.port_num = DPV_PORT_NUM;
	o->attr.cap = q->cap;
	o->sq_sig_all = q->sq_sig_all != 0;
	o->n_openers = 0;
	use(o, 0, pd);
	use(o, 1, scq);
	use(o, 2, rcq);
	use(o, 3, srq);
	if (x) {
		o->xrcd = x;
		x->users++;
	}
	q->db = dpv_host_qp_db_index(q->dev, drv);
	rte_spinlock_lock(&dpvd_global.evlock);
	o->drv = drv;
	o->created = true;
	rte_spinlock_unlock(&dpvd_global.evlock);
	o->gsi = q->gsi != 0;
	q->gsi_prefix = q->gsi_mask = 0;
	if (o->gsi)
		dpvd_gsi_attach(c, q->dev, q->qpn, &q->gsi_prefix, &q->gsi_mask);
	return 0;
}

int dpvd_qp_destroy(struct dpvd_client *c, struct dpv_shm_qp *q)
{
	struct dpvd_obj *o = dpvd_obj_get(c, DPV_OBJ_QP, q->qpn, true);
	if (!o)
		return -EINVAL;
	if (o->n_openers)
		return -EBUSY; /* ibv_destroy_qp(3): not while ibv_open_qp handles exist */
	dpvd_obj_destroy(o);
	return 0;
}

/* c's OPEN_QP handle cookie on qp (any cookie when cookie is 0), or NULL. */
static struct dpvd_qpopen *qpopen_find(struct dpvd_client *c, const struct dpvd_obj *qp, uint64_t cookie)
{
	struct dpvd_qpopen *r;
	TAILQ_FOREACH(r, &dpvd_global.qpopens, next)
		if (r->c == c && r->qp == qp && (!cookie || r->cookie == cookie))
			return r;
	return NULL;
}

/* The QP qpn that c may modify and query: its own, or an XRC target QP of
 * any process that c holds a handle on (OPEN_QP) and whose domain c still
 * holds (as the kernel's verbs reach the real QP through the opener's
 * handle, which needs the domain). */
static struct dpvd_obj *qp_usable(struct dpvd_client *c, uint32_t qpn)
{
	struct dpvd_obj *o = dpvd_obj_get(c, DPV_OBJ_QP, qpn, true);
	if (o)
		return o;
	o = dpv_pool_get(DPV_OBJ_QP, qpn);
	if (!o || o->type != DPV_OBJ_QP || !o->created || o->qp_type != IBV_QPT_XRC_RECV || !o->xrcd ||
	    !o->n_openers || !dpvd_xrcd_held(c, o->xrcd->num) || !qpopen_find(c, o, 0))
		return NULL;
	return o;
}

int dpvd_qp_modify(struct dpvd_client *c, struct dpv_shm_qp_modify *q)
{
	struct dpvd_obj *o = qp_usable(c, q->qpn);
	if (!o || !dpv_host_dev_ok(o->dev))
		return -EINVAL;
	enum ibv_qp_state cur, to;
	/* the attributes come as the façade keeps them (the QP's set), the
	 * transition in cur and to */
	if (q->mask & IBV_QP_STATE)
		q->attr.qp_state = (enum ibv_qp_state)q->to;
	if (q->mask & IBV_QP_CUR_STATE)
		q->attr.cur_qp_state = (enum ibv_qp_state)q->cur;
	struct ibv_qp_attr a;
	int r, tries = 0;
	do {
		/* -EAGAIN: the engine moved the QP (ERR, SQE) after cur was
		 * read; the transition is checked again from the new state */
		cur = dpv_host_qp_state(o->dev, o->drv);
		if (dpv_host_qp_modify_check(o->qp_type, o->dev, cur, &q->attr, q->mask, &to)) {
			DPVD_LOG(DEBUG, "pid %d: qp %#x: modify from %d with mask %#x refused", (int)c->pid, q->qpn,
				 cur, (unsigned int)q->mask);
			return -EINVAL;
		}
		a = o->attr;
		dpv_qp_attr_store(&a, &q->attr, q->mask);
		r = dpv_host_modify_qp(o->dev, o->drv, &a, q->mask, cur, to);
	} while (r == -EAGAIN && ++tries < 4);
	if (r == -EAGAIN)
		r = -EINVAL;
	if (r) {
		DPVD_LOG(DEBUG, "pid %d: qp %#x: the engine refused %d -> %d: %s", (int)c->pid, q->qpn, cur, to,
			 strerror(-r));
		return r;
	}
	o->attr = a;
	o->attr.qp_state = o->attr.cur_qp_state = to;
	q->cur = cur;
	q->to = to;
	return 0;
}

int dpvd_qp_mcast(struct dpvd_client *c, struct dpv_shm_mcast *m)
{
	struct dpvd_obj *o = dpvd_obj_get(c, DPV_OBJ_QP, m->qpn, true);
	if (!o || !dpv_host_dev_ok(o->dev) || o->qp_type != IBV_QPT_UD || o->gsi || m->attach > 1 ||
	    !dpv_gid_is_mcast(m->gid))
		return -EINVAL;
	return dpv_host_mcast(o->dev, o->drv, m->gid, m->attach != 0);
}

/* ibv_create_flow / ibv_destroy_flow on a raw packet QP of the caller: the
 * rule is re-checked where the engine relies on it (its QP, type, flags);
 * a handle names a rule of that QP only (the driver compares both). */
int dpvd_qp_flow(struct dpvd_client *c, struct dpv_shm_flow *f)
{
	struct dpvd_obj *o = dpvd_obj_get(c, DPV_OBJ_QP, f->qpn, true);
	if (!o || !dpv_host_dev_ok(o->dev) || f->create > 1)
		return -EINVAL;
	if (o->qp_type != IBV_QPT_RAW_PACKET)
		return -EINVAL;
	if (!f->create)
		return dpv_host_flow(o->dev, o->drv, NULL, &f->handle);
	struct dpv_raw_rule *r = &f->rule;
	if (r->type > DPV_RAW_SNIFFER || (r->flags & ~(DPV_RAW_F_DROP | DPV_RAW_F_TAG | DPV_RAW_F_DONT_TRAP)))
		return -EINVAL;
	for (unsigned int i = 0; i < DPV_RAW_KEY_WORDS; i++)
		r->val.w[i] &= r->mask.w[i];
	r->qpn = f->qpn;
	return dpv_host_flow(o->dev, o->drv, r, &f->handle);
}

int dpvd_qp_query(struct dpvd_client *c, struct dpv_shm_qp_query *q)
{
	struct dpvd_obj *o = qp_usable(c, q->qpn);
	if (!o || !dpv_host_dev_ok(o->dev))
		return -EINVAL;
	q->state = dpv_host_qp_state(o->dev, o->drv);
	dpv_host_qp_counters(o->dev, o->drv, q->cnt, DPV_SHM_CNT_MAX);
	q->handles = o->n_openers;
	q->sq_sig_all = o->sq_sig_all;
	q->attr = o->attr;
	q->attr.qp_state = q->attr.cur_qp_state = (enum ibv_qp_state)q->state;
	return 0;
}

/* A target QP whose creator is gone goes with the last handle on it. */
static void qp_orphan_check(struct dpvd_obj *o)
{
	if (o->owner || o->n_openers)
		return;
	dpvd_obj_destroy(o);
	rte_spinlock_lock(&dpvd_global.evlock);
	dpv_pool_del(DPV_OBJ_QP, o->num, o);
	rte_spinlock_unlock(&dpvd_global.evlock);
	free(o);
}

static void qpopen_drop(struct dpvd_qpopen *r)
{
	struct dpvd_obj *o = r->qp;
	rte_spinlock_lock(&dpvd_global.evlock); /* no event reaches the handle from now */
	TAILQ_REMOVE(&dpvd_global.qpopens, r, next);
	o->n_openers--;
	rte_spinlock_unlock(&dpvd_global.evlock);
	r->c->n_qpopens--;
	free(r);
	qp_orphan_check(o);
}

/* OPEN_QP with close: ibv_destroy_qp of the handle cookie on qpn. */
static int qpopen_close(struct dpvd_client *c, struct dpv_shm_open_qp *oq)
{
	struct dpvd_obj *o = dpv_pool_get(DPV_OBJ_QP, oq->qpn);
	struct dpvd_qpopen *r = o && o->type == DPV_OBJ_QP && oq->cookie ? qpopen_find(c, o, oq->cookie) : NULL;
	if (!r)
		return -EINVAL;
	qpopen_drop(r);
	return 0;
}

/* ibv_open_qp: a handle of context ctx on an XRC target QP (created by any
 * process) of a domain the caller holds. */
int dpvd_open_qp(struct dpvd_client *c, struct dpv_shm_open_qp *oq)
{
	if (oq->close)
		return qpopen_close(c, oq);
	struct dpvd_xrcd *x = dpvd_xrcd_held(c, oq->xrcd);
	struct dpvd_obj *o = dpv_pool_get(DPV_OBJ_QP, oq->qpn);
	if (!x)
		return -EINVAL;
	if (!o || o->type != DPV_OBJ_QP || !o->created || o->qp_type != IBV_QPT_XRC_RECV || o->xrcd != x)
		return -ENOENT;
	if (!dpvd_ctx_get(c, oq->ctx) || !oq->cookie || qpopen_find(c, o, oq->cookie))
		return -EINVAL;
	if (c->n_qpopens >= DPVD_MAX_QPOPENS)
		return -ENOMEM;
	struct dpvd_qpopen *r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->c = c;
	r->qp = o;
	r->ctx = oq->ctx;
	r->cookie = oq->cookie;
	c->n_qpopens++;
	rte_spinlock_lock(&dpvd_global.evlock);
	TAILQ_INSERT_TAIL(&dpvd_global.qpopens, r, next);
	o->n_openers++;
	rte_spinlock_unlock(&dpvd_global.evlock);
	return 0;
}

void dpvd_qpopen_gone(struct dpvd_client *c)
{
	struct dpvd_qpopen *r, *t;
	TAILQ_FOREACH_SAFE(r, &dpvd_global.qpopens, next, t)
		if (r->c == c)
			qpopen_drop(r);
}

void dpvd_qpopen_event(struct dpvd_obj *qp, enum ibv_event_type type)
{
	struct dpvd_qpopen *r;
	TAILQ_FOREACH(r, &dpvd_global.qpopens, next) {
		if (r->qp != qp || !r->ctx || r->ctx > DPVD_MAX_CTX || r->c->ctx[r->ctx - 1].async_fd < 0)
			continue;
		struct ibv_async_event ev = {.event_type = type};
		ev.element.qp = (void *)(uintptr_t)r->cookie;
		ssize_t w = write(r->c->ctx[r->ctx - 1].async_fd, &ev, sizeof(ev));
		(void)w; /* a full pipe loses the event */
	}
}

/* ---- XRC domains: one per inode, for every process ---- */

int dpvd_xrcd_open(struct dpvd_client *c, struct dpv_shm_xrcd *r, int *fd)
{
	struct stat st;
	if (!dpv_host_dev_ok(r->dev) || (r->oflags & ~(O_CREAT | O_EXCL)) || (r->has_fd && *fd < 0) ||
	    (r->has_fd && fstat(*fd, &st) != 0))
		return -EINVAL;
	struct dpvd_xrcd *x = NULL;
	if (r->has_fd)
		TAILQ_FOREACH(x, &dpvd_global.xrcds, next)
			if (x->has_inode && x->st_dev == st.st_dev && x->st_ino == st.st_ino)
				break; /* one table for the daemon, as embedded mode's per process
					  (doc/man/ibv_open_xrcd.3.md NOTES) */
	if (x && (r->oflags & O_CREAT) && (r->oflags & O_EXCL))
		return -EINVAL; /* ibv_open_xrcd(3): O_CREAT|O_EXCL on an inode with a domain */
	if (!x && r->has_fd && !(r->oflags & O_CREAT))
		return -EAGAIN;
	struct dpvd_xref *ref = calloc(1, sizeof(*ref));
	if (!ref)
		return -ENOMEM;
	if (!x) {
		x = calloc(1, sizeof(*x));
		if (!x || dpv_pool_add(DPV_OBJ_XRCD, x, &x->num) != 0) {
			free(x);
			free(ref);
			return -ENOMEM;
		}
		x->dev = r->dev;
		x->has_inode = r->has_fd != 0;
		if (x->has_inode) {
			x->st_dev = st.st_dev;
			x->st_ino = st.st_ino;
		}
		TAILQ_INSERT_TAIL(&dpvd_global.xrcds, x, next);
	}
	x->opens++;
	ref->x = x;
	TAILQ_INSERT_TAIL(&c->xrefs, ref, next);
	r->num = x->num;
	return 0;
}

static void xrcd_free_unused(struct dpvd_xrcd *x)
{
	if (x->opens || x->users)
		return;
	TAILQ_REMOVE(&dpvd_global.xrcds, x, next);
	dpv_pool_del(DPV_OBJ_XRCD, x->num, x);
	free(x);
}

int dpvd_xrcd_close(struct dpvd_client *c, struct dpv_shm_xrcd *r)
{
	struct dpvd_xref *ref;
	TAILQ_FOREACH(ref, &c->xrefs, next)
		if (ref->x->num == r->num) {
			TAILQ_REMOVE(&c->xrefs, ref, next);
			ref->x->opens--;
			xrcd_free_unused(ref->x);
			free(ref);
			return 0;
		}
	return -EINVAL;
}

void dpvd_xrcd_gone(struct dpvd_client *c)
{
	struct dpvd_xref *ref, *t;
	TAILQ_FOREACH_SAFE(ref, &c->xrefs, next, t) {
		TAILQ_REMOVE(&c->xrefs, ref, next);
		ref->x->opens--;
		xrcd_free_unused(ref->x);
		free(ref);
	}
}

void dpvd_xrcd_unuse(struct dpvd_xrcd *x)
{
	x->users--;
	xrcd_free_unused(x);
}
