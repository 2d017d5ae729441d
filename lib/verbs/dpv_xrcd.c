/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * XRC domains opened by inode (ibv_open_xrcd / ibv_close_xrcd) and sharing
 * XRC target QPs (ibv_open_qp).
 *
 * A domain (struct dpv_xrc_dom) exists once per inode per process; every
 * ibv_open_xrcd returns a new handle (struct dpv_xrcd) on it, as the kernel
 * gives a new uobject per open. ibv_close_xrcd fails with EBUSY while an XRC
 * SRQ or target QP created through the handle exists; the last handle's
 * close destroys the domain. The engine compares domains by number (the
 * pool index): an XRC target QP accepts a message only for an XRC SRQ of
 * its own domain. In shared mode the domain table is dpverbsd's (the
 * driver's xrcd_open), so one inode reaches one domain from every process
 * (doc/shared-mode.md); in embedded mode domains are per process.
 *
 * ibv_open_qp handles: on a QP of this process the handle forwards modify
 * and query to the real QP (struct dpv_qp.opened); on another process' QP
 * (shared mode) it is the driver's handle (foreign), which the daemon lets
 * modify and query the QP by number while the process holds the domain.
 * The QP's events reach every handle: in embedded mode through the real
 * QP's list of handles (open_first), in shared mode from the daemon, which
 * registers every handle of every process.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "dpv_verbs.h"

static rte_spinlock_t g_xrc_lock = RTE_SPINLOCK_INITIALIZER;
static struct dpv_xrc_dom *g_doms;

/* The record of the daemon's domain num (one per number in this process),
 * made on first use. Holds g_xrc_lock. */
static struct dpv_xrc_dom *dom_remote(uint32_t num)
{
	struct dpv_xrc_dom *d;
	for (d = g_doms; d; d = d->next)
		if (d->remote && d->num == num)
			return d;
	d = calloc(1, sizeof(*d));
	if (!d)
		return NULL;
	d->remote = true;
	d->num = num;
	d->next = g_doms;
	g_doms = d;
	return d;
}

/* This process' domain of the inode st (NULL: a new anonymous one) under
 * oflags: found or made. 0, EINVAL (O_CREAT|O_EXCL on an inode with a
 * domain), EAGAIN (no domain and no O_CREAT), ENOMEM. Holds g_xrc_lock. */
static int dom_local(const struct stat *st, int oflags, struct dpv_xrc_dom **out)
{
	struct dpv_xrc_dom *d = NULL;
	if (st)
		for (d = g_doms; d; d = d->next)
			if (!d->remote && d->has_inode && d->dev == st->st_dev && d->ino == st->st_ino)
				break;
	if (d && (oflags & O_CREAT) && (oflags & O_EXCL))
		return EINVAL;
	if (!d && st && !(oflags & O_CREAT))
		return EAGAIN;
	if (!d) {
		d = calloc(1, sizeof(*d));
		if (!d)
			return ENOMEM;
		if (dpv_pool_add(DPV_OBJ_XRCD, d, &d->num) != 0) {
			free(d);
			return ENOMEM;
		}
		d->has_inode = st != NULL;
		if (st) {
			d->dev = st->st_dev;
			d->ino = st->st_ino;
		}
		d->next = g_doms;
		g_doms = d;
	}
	*out = d;
	return 0;
}

/**
 * open_xrcd (ibv_open_xrcd): see doc/man/ibv_open_xrcd.3.md.
 * RETURN VALUE: the XRCD handle, or NULL with errno: EINVAL (NULL attr,
 * unknown comp_mask bits, FD or OFLAGS missing from comp_mask, oflags other
 * than O_CREAT/O_EXCL, O_CREAT|O_EXCL when the inode already has a domain),
 * EAGAIN (no O_CREAT and no domain for the inode), EBADF (fd is not an open
 * descriptor), ENOMEM.
 */
struct ibv_xrcd *dpv_open_xrcd(struct ibv_context *context, struct ibv_xrcd_init_attr *a)
{
	if (!context || !a || (a->comp_mask & ~(uint32_t)(IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS)) ||
	    !(a->comp_mask & IBV_XRCD_INIT_ATTR_FD) || !(a->comp_mask & IBV_XRCD_INIT_ATTR_OFLAGS) ||
	    (a->oflags & ~(O_CREAT | O_EXCL))) {
		errno = EINVAL;
		return NULL;
	}
	bool has_inode = a->fd != -1;
	struct stat st;
	if (has_inode && fstat(a->fd, &st) != 0) {
		errno = EBADF;
		return NULL;
	}
	struct dpv_xrcd *h = calloc(1, sizeof(*h));
	if (!h) {
		errno = ENOMEM;
		return NULL;
	}
	struct dpv_device *dev = to_dctx(context)->dev;
	uint32_t rnum = 0;
	int rr = dpv_ops(dev)->xrcd_open(dev->drv_dev, has_inode ? a->fd : -1, a->oflags, &rnum);
	if (rr && rr != -EOPNOTSUPP) {
		free(h);
		errno = -rr;
		return NULL;
	}
	rte_spinlock_lock(&g_xrc_lock);
	struct dpv_xrc_dom *d = NULL;
	int err = 0;
	if (rr == 0) { /* the daemon's domain rnum */
		d = dom_remote(rnum);
		err = d ? 0 : ENOMEM;
	} else {
		err = dom_local(has_inode ? &st : NULL, a->oflags, &d);
	}
	if (err) {
		rte_spinlock_unlock(&g_xrc_lock);
		if (rr == 0)
			dpv_ops(dev)->xrcd_close(dev->drv_dev, rnum);
		free(h);
		errno = err;
		return NULL;
	}
	d->handles++;
	rte_spinlock_unlock(&g_xrc_lock);
	h->ibxrcd.context = context;
	h->dom = d;
	return &h->ibxrcd;
}

/**
 * close_xrcd (ibv_close_xrcd): RETURN VALUE 0, EINVAL for NULL, EBUSY while
 * an XRC SRQ or XRC target QP created through this handle exists (the handle
 * and the domain stay intact). The last handle's close destroys the domain.
 */
int dpv_close_xrcd(struct ibv_xrcd *ib)
{
	if (!ib)
		return EINVAL;
	struct dpv_xrcd *h = to_dxrcd(ib);
	if (atomic_load(&h->users) > 0)
		return EBUSY;
	struct dpv_device *dev = to_dctx(ib->context)->dev;
	rte_spinlock_lock(&g_xrc_lock);
	struct dpv_xrc_dom *d = h->dom;
	if (d->remote)
		dpv_ops(dev)->xrcd_close(dev->drv_dev, d->num); /* every handle is an opening there */
	if (--d->handles == 0) {
		for (struct dpv_xrc_dom **pp = &g_doms; *pp; pp = &(*pp)->next)
			if (*pp == d) {
				*pp = d->next;
				break;
			}
		if (!d->remote)
			dpv_pool_del(DPV_OBJ_XRCD, d->num, d);
		free(d);
	}
	rte_spinlock_unlock(&g_xrc_lock);
	free(h);
	return 0;
}

/**
 * open_qp (ibv_open_qp): another handle on an XRC target QP of the domain.
 * RETURN VALUE: the QP, or NULL with errno: EINVAL (NULL attr, missing
 * comp_mask fields, qp_type other than IBV_QPT_XRC_RECV), ENOENT (no such
 * QP in the XRC domain), ENOMEM, EIO (shared mode: the daemon is gone).
 * modify and query act on the target QP; ibv_destroy_qp on the handle only
 * drops it; the QP's asynchronous events reach every handle, each with its
 * own pointer (as the kernel's shared QP event handler gives them to every
 * opener). In shared mode the QP may be another process' (the domain is the
 * daemon's): the daemon registers every handle (its events) and carries
 * modify and query of another process' QP by number.
 */
struct ibv_qp *dpv_open_qp(struct ibv_context *context, struct ibv_qp_open_attr *a)
{
	const uint32_t need = IBV_QP_OPEN_ATTR_NUM | IBV_QP_OPEN_ATTR_XRCD | IBV_QP_OPEN_ATTR_TYPE;
	if (!context || !a || (a->comp_mask & need) != need ||
	    (a->comp_mask & ~(uint32_t)(need | IBV_QP_OPEN_ATTR_CONTEXT)) || !a->xrcd ||
	    a->qp_type != IBV_QPT_XRC_RECV) {
		errno = EINVAL;
		return NULL;
	}
	struct dpv_qp *real = dpv_pool_get(DPV_OBJ_QP, a->qp_num);
	struct dpv_xrc_dom *dom = to_dxrcd(a->xrcd)->dom;
	if (real && (real->type != IBV_QPT_XRC_RECV || real->xrcd->dom != dom))
		real = NULL;
	if (!real && !dom->remote) {
		errno = ENOENT;
		return NULL;
	}
	struct dpv_qp *qp = calloc(1, sizeof(*qp));
	if (!qp) {
		errno = ENOMEM;
		return NULL;
	}
	struct ibv_qp *ib = dqp_ib(qp);
	if (dom->remote) {
		/* the daemon's domain: it checks the QP (any process') and
		 * sends the QP's events to this handle too */
		struct dpv_context *ctx = to_dctx(context);
		qp->drv = dpv_ops(ctx->dev)->open_qp(ctx->dev->drv_dev, ctx->drv_ctx, dom->num, a->qp_num,
						     (uintptr_t)ib);
		if (!qp->drv) {
			int e = errno;
			free(qp);
			errno = e;
			return NULL;
		}
	}
	if (real) {
		*ib = *dqp_ib(real);
		qp->opened = real;
		qp->state = real->state;
	} else {
		ib->qp_num = ib->handle = a->qp_num;
		ib->qp_type = IBV_QPT_XRC_RECV;
		ib->state = IBV_QPS_RTS; /* until a query or modify tells */
		qp->foreign = true;
		qp->state = IBV_QPS_RTS;
	}
	ib->context = context;
	ib->qp_context = (a->comp_mask & IBV_QP_OPEN_ATTR_CONTEXT) ? a->qp_context : NULL;
	pthread_mutex_init(&ib->mutex, NULL);
	pthread_cond_init(&ib->cond, NULL);
	qp->ctx = to_dctx(context);
	qp->type = IBV_QPT_XRC_RECV;
	qp->qpn = a->qp_num;
	qp->xrcd = to_dxrcd(a->xrcd);
	atomic_fetch_add(&qp->xrcd->users, 1);
	if (real) {
		atomic_fetch_add(&real->open_refs, 1);
		if (!qp->drv) { /* embedded mode: the façade gives the events */
			rte_spinlock_lock(&g_xrc_lock);
			qp->open_next = real->open_first;
			real->open_first = qp;
			rte_spinlock_unlock(&g_xrc_lock);
		}
	}
	return ib;
}

void dpv_open_qp_close(struct dpv_qp *qp)
{
	struct ibv_qp *ib = dqp_ib(qp);
	if (qp->drv)
		ctx_ops(ib->context)->close_qp(qp->drv); /* the daemon's events stop */
	if (qp->opened) {
		struct dpv_qp *real = qp->opened;
		rte_spinlock_lock(&g_xrc_lock);
		for (struct dpv_qp **pp = &real->open_first; *pp; pp = &(*pp)->open_next)
			if (*pp == qp) {
				*pp = qp->open_next;
				break;
			}
		rte_spinlock_unlock(&g_xrc_lock);
		atomic_fetch_sub(&real->open_refs, 1);
	}
	atomic_fetch_sub(&qp->xrcd->users, 1);
	pthread_mutex_destroy(&ib->mutex);
	pthread_cond_destroy(&ib->cond);
	free(qp);
}

void dpv_xrc_qp_event(struct dpv_qp *real, const struct ibv_async_event *ev)
{
	rte_spinlock_lock(&g_xrc_lock);
	for (struct dpv_qp *h = real->open_first; h; h = h->open_next) {
		struct ibv_async_event e = *ev;
		e.element.qp = dqp_ib(h);
		dpv_async_deliver(h->ctx, &e);
	}
	rte_spinlock_unlock(&g_xrc_lock);
}

bool dpv_xrc_attr_refresh(struct dpv_qp *qp, uint32_t *handles)
{
	struct ibv_qp_attr a;
	bool sig;
	uint32_t h = 0;
	*handles = 0;
	if (qp->type != IBV_QPT_XRC_RECV || !qp->drv ||
	    ctx_ops(dqp_ib(qp)->context)->query_qp_attr(qp->drv, &a, &sig, &h) != 0)
		return false;
	qp->attr = a;
	qp->state = a.qp_state;
	dqp_ib(qp)->state = a.qp_state;
	*handles = h;
	return true;
}

int dpv_open_qp_query(struct dpv_qp *qp, struct ibv_qp_attr *attr, struct ibv_qp_init_attr *init_attr)
{
	struct ibv_qp *ib = dqp_ib(qp);
	struct ibv_qp_attr a;
	bool sig;
	uint32_t h;
	int r = ctx_ops(ib->context)->query_qp_attr(qp->drv, &a, &sig, &h);
	if (r)
		return -r;
	*attr = a;
	attr->sq_draining = 0;
	qp->state = a.qp_state;
	ib->state = a.qp_state;
	memset(init_attr, 0, sizeof(*init_attr));
	init_attr->qp_context = ib->qp_context;
	init_attr->cap = a.cap;
	init_attr->qp_type = IBV_QPT_XRC_RECV;
	init_attr->sq_sig_all = sig;
	return 0;
}

/* As the façade's modify of its own QPs (dpv_qp_state.c): the transition
 * and values checked here, again by the daemon, applied to the real QP. */
int dpv_open_qp_modify(struct dpv_qp *qp, struct ibv_qp_attr *attr, int mask)
{
	struct ibv_qp *ib = dqp_ib(qp);
	const struct dpv_verbs_ops *o = ctx_ops(ib->context);
	struct dpv_device *dev = qp->ctx->dev;
	struct ibv_qp_attr lid_attr;
	if ((mask & IBV_QP_AV) && !attr->ah_attr.is_global) {
		lid_attr = *attr;
		dpv_av_from_lid(dev, &attr->ah_attr, &lid_attr.ah_attr);
		attr = &lid_attr;
	}
	enum ibv_qp_state cur = o->query_qp_state(qp->drv), to;
	if (dpv_qp_modify_check(IBV_QPT_XRC_RECV, dev, cur, attr, mask, &to))
		return EINVAL;
	int r = o->modify_qp(qp->drv, attr, mask, cur, to);
	if (r)
		return -r;
	qp->state = to;
	ib->state = to;
	return 0;
}
