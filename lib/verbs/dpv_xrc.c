/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * XRC: domains opened by inode (ibv_open_xrcd / ibv_close_xrcd), SRQ numbers,
 * XRC SRQs (ibv_create_srq_ex) and sharing target QPs (ibv_open_qp).
 *
 * A domain (struct dpv_xrc_dom) exists once per inode per process; every
 * ibv_open_xrcd returns a new handle (struct dpv_xrcd) on it, as the kernel
 * gives a new uobject per open. ibv_close_xrcd fails with EBUSY while an XRC
 * SRQ or target QP created through the handle exists; the last handle's
 * close destroys the domain. Across processes the same rule applies in
 * shared mode, where the daemon keeps the table (see doc/architecture.md).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "dpv_rc.h"

static rte_spinlock_t g_xrc_lock = RTE_SPINLOCK_INITIALIZER;
static struct dpv_xrc_dom *g_doms;

#define SRQ_TABLE_SIZE 65536
static _Atomic(struct dpv_srq *) g_srqs[SRQ_TABLE_SIZE];
static uint32_t g_srq_next = 1;

struct dpv_srq *dpv_srq_lookup(uint32_t srqn)
{
	if (srqn >= SRQ_TABLE_SIZE)
		return NULL;
	return atomic_load_explicit(&g_srqs[srqn], memory_order_acquire);
}

uint32_t dpv_srq_num_alloc(struct dpv_srq *s)
{
	uint32_t n = 0;
	rte_spinlock_lock(&g_xrc_lock);
	for (uint32_t k = 0; k < SRQ_TABLE_SIZE; k++) {
		uint32_t i = (g_srq_next + k) % SRQ_TABLE_SIZE;
		if (i && !atomic_load(&g_srqs[i])) {
			n = i;
			break;
		}
	}
	if (n) {
		g_srq_next = n + 1;
		atomic_store_explicit(&g_srqs[n], s, memory_order_release);
	}
	rte_spinlock_unlock(&g_xrc_lock);
	return n;
}

void dpv_srq_num_free(uint32_t n)
{
	if (n && n < SRQ_TABLE_SIZE)
		atomic_store_explicit(&g_srqs[n], NULL, memory_order_release);
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
	rte_spinlock_lock(&g_xrc_lock);
	struct dpv_xrc_dom *d = NULL;
	if (has_inode)
		for (d = g_doms; d; d = d->next)
			if (d->has_inode && d->dev == st.st_dev && d->ino == st.st_ino)
				break;
	if (d && (a->oflags & O_CREAT) && (a->oflags & O_EXCL)) {
		rte_spinlock_unlock(&g_xrc_lock);
		free(h);
		errno = EINVAL;
		return NULL;
	}
	if (!d && has_inode && !(a->oflags & O_CREAT)) {
		rte_spinlock_unlock(&g_xrc_lock);
		free(h);
		errno = EAGAIN;
		return NULL;
	}
	if (!d) {
		d = calloc(1, sizeof(*d));
		if (!d) {
			rte_spinlock_unlock(&g_xrc_lock);
			free(h);
			errno = ENOMEM;
			return NULL;
		}
		d->has_inode = has_inode;
		if (has_inode) {
			d->dev = st.st_dev;
			d->ino = st.st_ino;
		}
		d->next = g_doms;
		g_doms = d;
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
	rte_spinlock_lock(&g_xrc_lock);
	struct dpv_xrc_dom *d = h->dom;
	if (--d->handles == 0) {
		for (struct dpv_xrc_dom **pp = &g_doms; *pp; pp = &(*pp)->next)
			if (*pp == d) {
				*pp = d->next;
				break;
			}
		free(d);
	}
	rte_spinlock_unlock(&g_xrc_lock);
	free(h);
	return 0;
}

/**
 * create_srq_ex (ibv_create_srq_ex): basic SRQs (IBV_SRQT_BASIC, needs PD)
 * and XRC SRQs (IBV_SRQT_XRC, needs PD, XRCD and CQ).
 * RETURN VALUE: the SRQ, or NULL with errno: EINVAL (missing or unknown
 * comp_mask fields, objects of another context, limits as ibv_create_srq),
 * EOPNOTSUPP (tag-matching SRQs), ENOMEM.
 */
struct ibv_srq *dpv_create_srq_ex(struct ibv_context *context, struct ibv_srq_init_attr_ex *a)
{
	const uint32_t known = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_XRCD |
			       IBV_SRQ_INIT_ATTR_CQ;
	if (!context || !a || !(a->comp_mask & IBV_SRQ_INIT_ATTR_PD) || !a->pd || a->pd->context != context) {
		errno = EINVAL;
		return NULL;
	}
	if (a->comp_mask & IBV_SRQ_INIT_ATTR_TM) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (a->comp_mask & ~known) {
		errno = EINVAL;
		return NULL;
	}
	enum ibv_srq_type t = (a->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) ? a->srq_type : IBV_SRQT_BASIC;
	if (t == IBV_SRQT_TM) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (t != IBV_SRQT_BASIC && t != IBV_SRQT_XRC) {
		errno = EINVAL;
		return NULL;
	}
	if (t == IBV_SRQT_XRC &&
	    (!(a->comp_mask & IBV_SRQ_INIT_ATTR_XRCD) || !(a->comp_mask & IBV_SRQ_INIT_ATTR_CQ) || !a->xrcd ||
	     !a->cq || a->xrcd->context != context || a->cq->context != context)) {
		errno = EINVAL;
		return NULL;
	}
	struct ibv_srq_init_attr ia = {.srq_context = a->srq_context, .attr = a->attr};
	struct ibv_srq *ib = ibv_create_srq(a->pd, &ia);
	if (!ib)
		return NULL;
	a->attr = ia.attr;
	struct dpv_srq *s = to_dsrq(ib);
	s->type = t;
	if (t == IBV_SRQT_XRC) {
		s->xrcd = to_dxrcd(a->xrcd);
		s->cq = to_dcq(a->cq);
		atomic_fetch_add(&s->xrcd->users, 1);
		atomic_fetch_add(&s->cq->users, 1);
	}
	return ib;
}

/** get_srq_num (ibv_get_srq_num): 0 and the SRQ number, or EINVAL. */
int dpv_get_srq_num(struct ibv_srq *srq, uint32_t *srq_num)
{
	if (!srq || !srq_num)
		return EINVAL;
	*srq_num = to_dsrq(srq)->srq_num;
	return 0;
}

/**
 * open_qp (ibv_open_qp): another handle on an XRC target QP of the domain.
 * RETURN VALUE: the QP, or NULL with errno: EINVAL (NULL attr, missing
 * comp_mask fields, qp_type other than IBV_QPT_XRC_RECV), ENOENT (no such
 * QP in the XRC domain), ENOMEM.
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
	struct dpv_qp *real = dpv_qp_lookup(a->qp_num);
	if (!real || real->type != IBV_QPT_XRC_RECV || real->xrcd->dom != to_dxrcd(a->xrcd)->dom) {
		errno = ENOENT;
		return NULL;
	}
	struct dpv_qp *qp = calloc(1, sizeof(*qp));
	if (!qp) {
		errno = ENOMEM;
		return NULL;
	}
	struct ibv_qp *ib = dqp_ib(qp);
	*ib = *dqp_ib(real);
	ib->context = context;
	ib->qp_context = (a->comp_mask & IBV_QP_OPEN_ATTR_CONTEXT) ? a->qp_context : NULL;
	pthread_mutex_init(&ib->mutex, NULL);
	pthread_cond_init(&ib->cond, NULL);
	qp->opened = real;
	qp->type = IBV_QPT_XRC_RECV;
	qp->xrcd = to_dxrcd(a->xrcd);
	atomic_fetch_add(&qp->xrcd->users, 1);
	atomic_fetch_add(&real->open_refs, 1);
	return ib;
}
