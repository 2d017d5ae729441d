/* SPDX-License-Identifier: BSD-3-Clause */
/* Devices, endpoints, queues and the connection sequence (dpvt_verbs.h). */
#include <stdio.h>
#include <stdlib.h>

#include "dpvt_verbs.h"

struct ibv_context *dpvt_open_dev(const char *name)
{
	int n = 0;
	struct ibv_device **l = ibv_get_device_list(&n);
	struct ibv_context *c = NULL;

	if (!l) {
		fprintf(stderr, "ibv_get_device_list: %s\n", strerror(errno));
		return NULL;
	}
	for (int i = 0; i < n && !c; i++)
		if (!strcmp(ibv_get_device_name(l[i]), name))
			c = ibv_open_device(l[i]);
	ibv_free_device_list(l);
	if (!c)
		fprintf(stderr, "cannot open %s\n", name);
	return c;
}

/* ---- endpoints ---- */

int dpvt_ep_open(struct dpvt_ep *e, const char *dev, int cqe, bool channel)
{
	memset(e, 0, sizeof(*e));
	e->ctx = dpvt_open_dev(dev);
	if (!e->ctx)
		return -1;
	e->pd = ibv_alloc_pd(e->ctx);
	if (channel)
		e->ch = ibv_create_comp_channel(e->ctx);
	e->scq = ibv_create_cq(e->ctx, cqe, NULL, NULL, 0);
	e->rcq = ibv_create_cq(e->ctx, cqe, e, e->ch, 0);
	if (!e->pd || !e->scq || !e->rcq || (channel && !e->ch)) {
		fprintf(stderr, "%s: PD/CQ/channel creation failed: %s\n", dev, strerror(errno));
		return -1;
	}
	/* async events are read with a timeout (dpvt_wait_async) */
	return dpvt_async_nonblock(e->ctx);
}

int dpvt_ep_buf(struct dpvt_ep *e, struct ibv_pd *pd, size_t len, unsigned int access)
{
	e->buf = aligned_alloc(4096, (len + 4095) & ~(size_t)4095);
	if (!e->buf)
		return -1;
	e->buf_len = len;
	memset(e->buf, 0, len);
	e->mr = ibv_reg_mr(pd ? pd : e->pd, e->buf, len, (int)access);
	return e->mr ? 0 : -1;
}

int dpvt_ep_traffic_buf(struct dpvt_ep *e, struct ibv_pd *pd)
{
	return dpvt_ep_buf(e, pd, DPVT_TRAFFIC_BUF_LEN,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
}

int dpvt_ud_ep_open(struct dpvt_ep *e, const char *dev, uint32_t qkey, bool channel)
{
	if (dpvt_ep_open(e, dev, 256, channel))
		return -1;
	e->qkey = qkey;
	if (dpvt_ep_buf(e, NULL, 1 << 16, IBV_ACCESS_LOCAL_WRITE))
		return -1;
	e->qp = dpvt_ud_qp(e, 0, 4, 4);
	return e->qp ? 0 : -1;
}

/* With a label, r is checked to be 0 (counted). */
static void released(int r, const char *label, const char *what)
{
	if (label)
		CHECK(r == 0, "%s: %s: %s", label, what, strerror(r));
}

void dpvt_ep_release(struct dpvt_ep *e, const char *label)
{
	if (e->qp)
		released(ibv_destroy_qp(e->qp), label, "destroy_qp");
	if (e->srq)
		released(ibv_destroy_srq(e->srq), label, "destroy_srq");
	if (e->scq)
		released(ibv_destroy_cq(e->scq), label, "destroy scq");
	if (e->rcq && e->rcq != e->scq)
		released(ibv_destroy_cq(e->rcq), label, "destroy rcq");
	if (e->mr)
		released(ibv_dereg_mr(e->mr), label, "dereg_mr");
	free(e->buf);
	e->qp = NULL;
	e->srq = NULL;
	e->scq = e->rcq = NULL;
	e->mr = NULL;
	e->buf = NULL;
	e->buf_len = 0;
}

void dpvt_ep_close(struct dpvt_ep *e)
{
	dpvt_ep_release(e, NULL);
	if (e->ch)
		ibv_destroy_comp_channel(e->ch);
	if (e->pd)
		ibv_dealloc_pd(e->pd);
	if (e->ctx)
		ibv_close_device(e->ctx);
	memset(e, 0, sizeof(*e));
}

/* ---- queues ---- */

struct ibv_qp *dpvt_qp_create(struct ibv_pd *pd, enum ibv_qp_type t, struct ibv_cq *scq, struct ibv_cq *rcq,
			      struct ibv_srq *srq, struct dpvt_qp_caps *caps)
{
	struct ibv_qp_init_attr ia;

	memset(&ia, 0, sizeof(ia));
	ia.send_cq = scq;
	ia.recv_cq = rcq;
	ia.srq = srq;
	ia.qp_type = t;
	ia.sq_sig_all = caps->sq_sig_all;
	ia.cap.max_send_wr = caps->max_send_wr;
	ia.cap.max_recv_wr = caps->max_recv_wr;
	ia.cap.max_send_sge = caps->max_send_sge;
	ia.cap.max_recv_sge = caps->max_recv_sge;
	ia.cap.max_inline_data = caps->max_inline_data;
	struct ibv_qp *qp = ibv_create_qp(pd, &ia);
	if (!qp) {
		fprintf(stderr, "ibv_create_qp: %s\n", strerror(errno));
		return NULL;
	}
	caps->max_send_wr = ia.cap.max_send_wr;
	caps->max_recv_wr = ia.cap.max_recv_wr;
	caps->max_send_sge = ia.cap.max_send_sge;
	caps->max_recv_sge = ia.cap.max_recv_sge;
	caps->max_inline_data = ia.cap.max_inline_data;
	return qp;
}

struct ibv_qp *dpvt_ep_qp(struct dpvt_ep *e, enum ibv_qp_type t, uint32_t sq, uint32_t rq, struct ibv_srq *srq)
{
	struct dpvt_qp_caps c = {
		.max_send_wr = sq,
		.max_recv_wr = srq ? 0 : rq,
		.max_send_sge = 4,
		.max_recv_sge = srq ? 0 : 4,
		.max_inline_data = 64,
	};

	return dpvt_qp_create(e->pd, t, e->scq, e->rcq, srq, &c);
}

struct ibv_qp *dpvt_ud_qp(struct dpvt_ep *e, int sq_sig_all, uint32_t max_recv_sge, uint32_t max_send_sge)
{
	struct dpvt_qp_caps c = {
		.max_send_wr = 64,
		.max_recv_wr = 64,
		.max_send_sge = max_send_sge,
		.max_recv_sge = max_recv_sge,
		.max_inline_data = 64,
		.sq_sig_all = sq_sig_all,
	};
	struct ibv_qp *qp = dpvt_qp_create(e->pd, IBV_QPT_UD, e->scq, e->rcq, NULL, &c);

	if (qp && dpvt_ud_to_rts(qp, e->qkey)) {
		fprintf(stderr, "UD QP to RTS failed\n");
		ibv_destroy_qp(qp);
		return NULL;
	}
	return qp;
}

struct ibv_qp *dpvt_qp_new_ex(struct ibv_pd *pd, enum ibv_qp_type t, struct ibv_cq *scq, struct ibv_cq *rcq,
			      struct ibv_srq *srq, uint64_t send_ops)
{
	struct ibv_qp_init_attr_ex a;

	memset(&a, 0, sizeof(a));
	a.qp_type = t;
	a.send_cq = scq;
	a.recv_cq = rcq;
	a.srq = srq;
	a.cap.max_send_wr = 64;
	a.cap.max_recv_wr = srq ? 0 : 64;
	a.cap.max_send_sge = 2;
	a.cap.max_recv_sge = srq ? 0 : 2;
	a.cap.max_inline_data = 64;
	a.comp_mask = IBV_QP_INIT_ATTR_PD;
	a.pd = pd;
	if (send_ops) {
		a.comp_mask |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
		a.send_ops_flags = send_ops;
	}
	errno = 0;
	return ibv_create_qp_ex(pd->context, &a);
}

struct ibv_cq *dpvt_cq_new(struct ibv_context *ctx, struct ibv_pd *pd, int cqe)
{
	errno = 0;
	if (!pd)
		return ibv_create_cq(ctx, cqe, NULL, NULL, 0);
	struct ibv_cq_init_attr_ex a;
	memset(&a, 0, sizeof(a));
	a.cqe = (uint32_t)cqe;
	a.wc_flags = IBV_WC_STANDARD_FLAGS;
	a.comp_mask = IBV_CQ_INIT_ATTR_MASK_PD;
	a.parent_domain = pd;
	struct ibv_cq_ex *x = ibv_create_cq_ex(ctx, &a);
	return x ? ibv_cq_ex_to_cq(x) : NULL;
}

struct ibv_srq *dpvt_srq_new(struct ibv_pd *pd, uint32_t max_wr)
{
	struct ibv_srq_init_attr a;

	memset(&a, 0, sizeof(a));
	a.attr.max_wr = max_wr;
	a.attr.max_sge = 2;
	errno = 0;
	return ibv_create_srq(pd, &a);
}

enum ibv_qp_state dpvt_qp_state(struct ibv_qp *qp)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	memset(&a, 0, sizeof(a));
	if (ibv_query_qp(qp, &a, IBV_QP_STATE, &ia))
		return (enum ibv_qp_state)-1;
	return a.qp_state;
}

int dpvt_qp_set_state(struct ibv_qp *qp, enum ibv_qp_state st)
{
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = st;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE);
}

/* ---- connection: the one implementation of each transition ---- */

struct dpvt_conn dpvt_conn_default(void)
{
	struct dpvt_conn o = {
		.access = DPVT_ACCESS_ALL,
		.qkey = 0,
		.port_num = 1,
		.pkey_index = 0,
		.mtu = IBV_MTU_1024,
		.rq_psn = 0x100,
		.max_dest_rd_atomic = 16,
		.min_rnr_timer = 1,
		.gid_index = 1,
		.hop_limit = 64,
		.sq_psn = 0x100,
		.timeout = 14,
		.retry_cnt = 7,
		.rnr_retry = 7,
		.max_rd_atomic = 16,
	};
	return o;
}

int dpvt_qp_to_init(struct ibv_qp *qp, const struct dpvt_conn *o)
{
	struct dpvt_conn d = dpvt_conn_default();
	struct ibv_qp_attr a;
	int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;

	if (!o)
		o = &d;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = o->pkey_index;
	a.port_num = o->port_num;
	if (qp->qp_type == IBV_QPT_UD) {
		a.qkey = o->qkey;
		mask |= IBV_QP_QKEY;
	} else {
		a.qp_access_flags = o->access;
		mask |= IBV_QP_ACCESS_FLAGS;
	}
	return ibv_modify_qp(qp, &a, mask);
}

int dpvt_qp_to_rtr(struct ibv_qp *qp, const union ibv_gid *dgid, uint32_t dqpn, const struct dpvt_conn *o)
{
	struct dpvt_conn d = dpvt_conn_default();
	struct ibv_qp_attr a;
	int mask = IBV_QP_STATE;

	if (!o)
		o = &d;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	if (qp->qp_type != IBV_QPT_UD) {
		a.path_mtu = o->mtu;
		a.dest_qp_num = dqpn;
		a.rq_psn = o->rq_psn;
		a.max_dest_rd_atomic = o->max_dest_rd_atomic;
		a.min_rnr_timer = o->min_rnr_timer;
		a.ah_attr.is_global = 1;
		a.ah_attr.port_num = o->port_num;
		a.ah_attr.grh.sgid_index = o->gid_index;
		a.ah_attr.grh.hop_limit = o->hop_limit;
		a.ah_attr.grh.dgid = *dgid;
		mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
		if (qp->qp_type == IBV_QPT_RC || qp->qp_type == IBV_QPT_XRC_RECV)
			mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
	}
	return ibv_modify_qp(qp, &a, mask);
}

int dpvt_qp_to_rts(struct ibv_qp *qp, const struct dpvt_conn *o)
{
	struct dpvt_conn d = dpvt_conn_default();
	struct ibv_qp_attr a;
	int mask = IBV_QP_STATE | IBV_QP_SQ_PSN;

	if (!o)
		o = &d;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = o->sq_psn;
	a.timeout = o->timeout;
	a.retry_cnt = o->retry_cnt;
	a.rnr_retry = o->rnr_retry;
	a.max_rd_atomic = o->max_rd_atomic;
	if (qp->qp_type == IBV_QPT_RC || qp->qp_type == IBV_QPT_XRC_SEND)
		mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
	else if (qp->qp_type == IBV_QPT_XRC_RECV)
		mask |= IBV_QP_TIMEOUT;
	return ibv_modify_qp(qp, &a, mask);
}

int dpvt_qp_up(struct ibv_qp *qp, struct ibv_context *peer, uint32_t dqpn, const struct dpvt_conn *o,
	       enum ibv_qp_state upto)
{
	struct dpvt_conn d = dpvt_conn_default();
	union ibv_gid g;
	int r;

	if (!o)
		o = &d;
	memset(&g, 0, sizeof(g));
	if (qp->qp_type != IBV_QPT_UD && upto != IBV_QPS_INIT && ibv_query_gid(peer, 1, o->gid_index, &g))
		return -1;
	r = dpvt_qp_to_init(qp, o);
	if (r || upto == IBV_QPS_INIT)
		return r;
	r = dpvt_qp_to_rtr(qp, &g, dqpn, o);
	if (r || upto == IBV_QPS_RTR)
		return r;
	return dpvt_qp_to_rts(qp, o);
}

int dpvt_connect(struct ibv_qp *a, struct ibv_context *ctx_a, const struct dpvt_conn *oa, struct ibv_qp *b,
		 struct ibv_context *ctx_b, const struct dpvt_conn *ob, bool b_rtr_only)
{
	struct dpvt_conn da = dpvt_conn_default(), db = dpvt_conn_default();
	union ibv_gid ga, gb;

	if (!oa)
		oa = &da;
	if (!ob)
		ob = &db;
	if (ibv_query_gid(ctx_b, 1, oa->gid_index, &gb) || ibv_query_gid(ctx_a, 1, ob->gid_index, &ga))
		return -1;
	if (dpvt_qp_to_init(a, oa) || dpvt_qp_to_init(b, ob))
		return -1;
	if (dpvt_qp_to_rtr(a, &gb, b->qp_num, oa) || dpvt_qp_to_rtr(b, &ga, a->qp_num, ob))
		return -1;
	if (dpvt_qp_to_rts(a, oa))
		return -1;
	if (!b_rtr_only && dpvt_qp_to_rts(b, ob))
		return -1;
	return 0;
}

int dpvt_ud_to_rts(struct ibv_qp *qp, uint32_t qkey)
{
	struct dpvt_conn o = dpvt_conn_default();

	o.qkey = qkey;
	o.sq_psn = 0;
	return dpvt_qp_up(qp, NULL, 0, &o, IBV_QPS_RTS);
}
