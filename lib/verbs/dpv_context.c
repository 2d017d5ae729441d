/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Context: the ops table verbs.h's inline functions jump through
 * (context->ops and the struct verbs_context slots) and the asynchronous
 * event queue of the context (a non-blocking pipe: async_fd is its read end).
 */
#include <errno.h>
#include <unistd.h>

#include "dpv_verbs.h"

static void *op_compat_unsupported(void)
{
	errno = EOPNOTSUPP;
	return NULL;
}

static int op_compat_query_device(struct ibv_context *c, struct ibv_device_attr *a)
{
	return ibv_query_device(c, a);
}

static int op_compat_query_port(struct ibv_context *c, uint8_t p, struct _compat_ibv_port_attr *a)
{
	return ibv_query_port(c, p, (struct ibv_port_attr *)a);
}

/* Every context->ops slot points somewhere (verbs.h calls them without a
 * NULL check); the verbs_context slots dpverbs implements are set, the
 * others stay NULL so that verbs.h's inlines answer EOPNOTSUPP themselves. */
void dpv_context_ops_init(struct dpv_context *ctx)
{
	struct verbs_context *v = &ctx->vctx;
	struct ibv_context_ops *o = &v->context.ops;
	void *(*u)(void) = op_compat_unsupported;

	o->_compat_query_device = op_compat_query_device;
	o->_compat_query_port = op_compat_query_port;
	o->_compat_alloc_pd = o->_compat_dealloc_pd = o->_compat_reg_mr = u;
	o->_compat_rereg_mr = o->_compat_dereg_mr = u;
	o->alloc_mw = dpv_alloc_mw; /* EOPNOTSUPP when the driver has no windows */
	o->bind_mw = dpv_bind_mw;
	o->dealloc_mw = dpv_dealloc_mw;
	o->_compat_create_cq = u;
	o->poll_cq = dpv_poll_cq;
	o->req_notify_cq = dpv_req_notify_cq;
	o->_compat_cq_event = o->_compat_resize_cq = o->_compat_destroy_cq = u;
	o->_compat_create_srq = o->_compat_modify_srq = o->_compat_query_srq = u;
	o->_compat_destroy_srq = u;
	o->post_srq_recv = dpv_post_srq_recv;
	o->_compat_create_qp = o->_compat_query_qp = o->_compat_modify_qp = u;
	o->_compat_destroy_qp = u;
	o->post_send = dpv_post_send;
	o->post_recv = dpv_post_recv;
	o->_compat_create_ah = o->_compat_destroy_ah = u;
	o->_compat_attach_mcast = o->_compat_detach_mcast = o->_compat_async_event = u;

	v->create_qp_ex = dpv_create_qp_ex;
	v->create_cq_ex = dpv_create_cq_ex;
	v->open_xrcd = dpv_open_xrcd;
	v->close_xrcd = dpv_close_xrcd;
	v->create_srq_ex = dpv_create_srq_ex;
	v->get_srq_num = dpv_get_srq_num;
	v->post_srq_ops = dpv_post_srq_ops;
	v->open_qp = dpv_open_qp;
	v->alloc_td = dpv_alloc_td;
	v->dealloc_td = dpv_dealloc_td;
	v->alloc_parent_domain = dpv_alloc_parent_domain;
	v->advise_mr = dpv_advise_mr;
	dpv_dm_ops_init(v);
	v->ibv_create_flow = dpv_create_flow;
	v->ibv_destroy_flow = dpv_destroy_flow;
	v->create_wq = dpv_create_wq;
	v->modify_wq = dpv_modify_wq;
	v->destroy_wq = dpv_destroy_wq;
	v->create_rwq_ind_table = dpv_create_rwq_ind_table;
	v->destroy_rwq_ind_table = dpv_destroy_rwq_ind_table;
}

/* ---- asynchronous events ---- */

/* Queue an event on the context (if the pipe is full the event is lost). */
void dpv_async_deliver(struct dpv_context *ctx, const struct ibv_async_event *ev)
{
	rte_spinlock_lock(&ctx->async_lock);
	ssize_t w = write(ctx->async_wfd, ev, sizeof(*ev));
	(void)w;
	rte_spinlock_unlock(&ctx->async_lock);
}

/**
 * ibv_get_async_event: blocks until an event (unless async_fd was made
 * non-blocking). RETURN VALUE: 0, or -1 with errno (EAGAIN when
 * non-blocking and nothing is pending, EINVAL for NULL).
 */
DPV_EXPORT int ibv_get_async_event(struct ibv_context *context, struct ibv_async_event *event)
{
	if (!context || !event) {
		errno = EINVAL;
		return -1;
	}
	ssize_t r = read(context->async_fd, event, sizeof(*event));
	if (r != (ssize_t)sizeof(*event)) {
		if (r >= 0)
			errno = EIO;
		return -1;
	}
	return 0;
}

/** ibv_ack_async_event: nothing waits on acknowledgements in dpverbs. */
DPV_EXPORT void ibv_ack_async_event(struct ibv_async_event *event)
{
	(void)event;
}
