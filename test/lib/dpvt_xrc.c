/* SPDX-License-Identifier: BSD-3-Clause */
/* XRC domains, SRQs, initiator/target QPs and their connection (dpvt_verbs.h). */
#include "dpvt_verbs.h"

struct ibv_xrcd *dpvt_xrcd_open(struct ibv_context *ctx, int fd, int oflags, uint32_t comp_mask)
{
	struct ibv_xrcd_init_attr a;

	memset(&a, 0, sizeof(a));
	a.comp_mask = comp_mask;
	a.fd = fd;
	a.oflags = oflags;
	errno = 0;
	return ibv_open_xrcd(ctx, &a);
}

struct ibv_srq *dpvt_xrc_srq_new(struct ibv_context *ctx, struct ibv_pd *pd, struct ibv_cq *cq,
				 struct ibv_xrcd *xrcd, uint32_t max_wr, uint32_t max_sge)
{
	struct ibv_srq_init_attr_ex a;

	memset(&a, 0, sizeof(a));
	a.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ;
	a.srq_type = IBV_SRQT_XRC;
	a.pd = pd;
	a.cq = cq;
	a.xrcd = xrcd;
	a.attr.max_wr = max_wr;
	a.attr.max_sge = max_sge;
	errno = 0;
	return ibv_create_srq_ex(ctx, &a);
}

uint32_t dpvt_srq_num(struct ibv_srq *s)
{
	uint32_t n = 0;

	if (ibv_get_srq_num(s, &n))
		return 0;
	return n;
}

struct ibv_qp *dpvt_xrc_tgt_new(struct ibv_context *ctx, struct ibv_xrcd *xrcd)
{
	struct ibv_qp_init_attr_ex a;

	memset(&a, 0, sizeof(a));
	a.qp_type = IBV_QPT_XRC_RECV;
	a.comp_mask = IBV_QP_INIT_ATTR_XRCD;
	a.xrcd = xrcd;
	errno = 0;
	return ibv_create_qp_ex(ctx, &a);
}

struct ibv_qp *dpvt_xrc_ini_new(struct ibv_context *ctx, struct ibv_pd *pd, struct ibv_cq *scq, uint32_t max_send_wr,
				uint32_t max_send_sge)
{
	struct ibv_qp_init_attr_ex a;

	memset(&a, 0, sizeof(a));
	a.qp_type = IBV_QPT_XRC_SEND;
	a.comp_mask = IBV_QP_INIT_ATTR_PD;
	a.pd = pd;
	a.send_cq = scq;
	a.recv_cq = scq;
	a.cap.max_send_wr = max_send_wr;
	a.cap.max_send_sge = max_send_sge;
	errno = 0;
	return ibv_create_qp_ex(ctx, &a);
}

struct ibv_qp *dpvt_xrc_open_qp(struct ibv_context *ctx, struct ibv_xrcd *xrcd, uint32_t qpn, void *qp_context)
{
	struct ibv_qp_open_attr a;

	memset(&a, 0, sizeof(a));
	a.comp_mask = IBV_QP_OPEN_ATTR_NUM | IBV_QP_OPEN_ATTR_XRCD | IBV_QP_OPEN_ATTR_TYPE |
		      (qp_context ? IBV_QP_OPEN_ATTR_CONTEXT : 0);
	a.qp_num = qpn;
	a.xrcd = xrcd;
	a.qp_type = IBV_QPT_XRC_RECV;
	a.qp_context = qp_context;
	errno = 0;
	return ibv_open_qp(ctx, &a);
}

int dpvt_xrc_same_domain(struct ibv_context *ctx_a, struct ibv_xrcd *a, struct ibv_context *ctx_b,
			 struct ibv_xrcd *b)
{
	struct ibv_qp *t = dpvt_xrc_tgt_new(ctx_a, a);
	int ret;

	if (!t)
		return -1;
	struct ibv_qp *o = dpvt_xrc_open_qp(ctx_b, b, t->qp_num, NULL);
	if (o) {
		ret = 1;
		if (o->qp_num != t->qp_num || ibv_destroy_qp(o))
			ret = -1;
	} else {
		ret = errno == ENOENT ? 0 : -1;
	}
	if (ibv_destroy_qp(t))
		ret = -1;
	return ret;
}

int dpvt_xrc_tgt_connect(struct ibv_qp *t, struct ibv_context *peer, uint32_t ini_qpn, uint32_t psn)
{
	struct dpvt_conn o = dpvt_conn_default();

	o.rq_psn = psn;
	return dpvt_qp_up(t, peer, ini_qpn, &o, IBV_QPS_RTR);
}

int dpvt_xrc_ini_connect(struct ibv_qp *q, struct ibv_context *peer, uint32_t tgt_qpn, uint32_t psn, uint8_t timeout)
{
	struct dpvt_conn o = dpvt_conn_default();

	o.sq_psn = psn;
	o.rq_psn = 0;
	o.timeout = timeout;
	return dpvt_qp_up(q, peer, tgt_qpn, &o, IBV_QPS_RTS);
}
