/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Helpers of the XRC tests (suite 'func'): XRC domains, XRC SRQs, XRC
 * initiator/target QPs and their connection on dpv0/dpv1. Builds on the
 * check macros and device helpers of test/func/func_common.h. Black-box:
 * only <infiniband/verbs.h> and the exported API of libdpverbs.so.
 */
#ifndef XRC_COMMON_H
#define XRC_COMMON_H

#include <fcntl.h>
#include <sys/stat.h>

#include "../func/func_common.h"

/* ibv_open_xrcd with errno cleared first; NULL on failure (errno set). */
static inline struct ibv_xrcd *xrcd_open(struct ibv_context *ctx, int fd, int oflags, uint32_t comp_mask)
{
	struct ibv_xrcd_init_attr a;
	memset(&a, 0, sizeof(a));
	a.comp_mask = comp_mask;
	a.fd = fd;
	a.oflags = oflags;
	errno = 0;
	return ibv_open_xrcd(ctx, &a);
}

#define XRCD_MASK (IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS)

/* An XRC SRQ in xrcd; receive completions go to cq. */
static inline struct ibv_srq *xrc_srq_new(struct ibv_context *ctx, struct ibv_pd *pd, struct ibv_cq *cq,
					  struct ibv_xrcd *xrcd, uint32_t max_wr, uint32_t max_sge)
{
	struct ibv_srq_init_attr_ex a;
	memset(&a, 0, sizeof(a));
	a.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_XRCD |
		      IBV_SRQ_INIT_ATTR_CQ;
	a.srq_type = IBV_SRQT_XRC;
	a.pd = pd;
	a.cq = cq;
	a.xrcd = xrcd;
	a.attr.max_wr = max_wr;
	a.attr.max_sge = max_sge;
	errno = 0;
	return ibv_create_srq_ex(ctx, &a);
}

static inline uint32_t srq_num(struct ibv_srq *s)
{
	uint32_t n = 0;
	if (ibv_get_srq_num(s, &n))
		return 0;
	return n;
}

/* An XRC target QP (IBV_QPT_XRC_RECV) in xrcd, created through ibv_create_qp_ex. */
static inline struct ibv_qp *xrc_tgt_new(struct ibv_context *ctx, struct ibv_xrcd *xrcd)
{
	struct ibv_qp_init_attr_ex a;
	memset(&a, 0, sizeof(a));
	a.qp_type = IBV_QPT_XRC_RECV;
	a.comp_mask = IBV_QP_INIT_ATTR_XRCD;
	a.xrcd = xrcd;
	errno = 0;
	return ibv_create_qp_ex(ctx, &a);
}

/* An XRC initiator QP (IBV_QPT_XRC_SEND) through ibv_create_qp_ex with only
 * IBV_QP_INIT_ATTR_PD (the verbs.h inline falls back to ibv_create_qp). */
static inline struct ibv_qp *xrc_ini_new(struct ibv_context *ctx, struct ibv_pd *pd, struct ibv_cq *scq,
					 uint32_t max_send_wr, uint32_t max_send_sge)
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

/* ibv_open_qp on the target QP number qpn in xrcd; NULL with errno. */
static inline struct ibv_qp *xrc_open_qp(struct ibv_context *ctx, struct ibv_xrcd *xrcd, uint32_t qpn,
					 void *qp_context)
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

/* Same XRC domain? Functional proof: a target QP created through a (on
 * ctx_a) is found by ibv_open_qp through b (on ctx_b). Returns 1 (same),
 * 0 (ENOENT: another domain) or -1 (set-up failure / other errno). */
static inline int xrc_same_domain(struct ibv_context *ctx_a, struct ibv_xrcd *a, struct ibv_context *ctx_b,
				  struct ibv_xrcd *b)
{
	struct ibv_qp *t = xrc_tgt_new(ctx_a, a);
	if (!t)
		return -1;
	int ret;
	struct ibv_qp *o = xrc_open_qp(ctx_b, b, t->qp_num, NULL);
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

/* ---- connecting an initiator (XRC_SEND) and a target (XRC_RECV) ---- */

static inline void xrc_av(struct ibv_ah_attr *av, struct ibv_context *peer)
{
	memset(av, 0, sizeof(*av));
	av->is_global = 1;
	av->port_num = 1;
	av->grh.sgid_index = 1; /* the IPv4 GID (RoCEv2) */
	av->grh.hop_limit = 64;
	ibv_query_gid(peer, 1, 1, &av->grh.dgid);
}

#define XRC_ACCESS (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | \
		    IBV_ACCESS_REMOTE_ATOMIC)

static inline int xrc_to_init(struct ibv_qp *qp)
{
	struct ibv_qp_attr a;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = 1;
	a.qp_access_flags = XRC_ACCESS;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
}

/* Target QP: RESET -> INIT -> RTR (it only responds; RTR is enough). */
static inline int xrc_tgt_connect(struct ibv_qp *t, struct ibv_context *peer, uint32_t ini_qpn, uint32_t psn)
{
	int r = xrc_to_init(t);
	if (r)
		return r;
	struct ibv_qp_attr a;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	xrc_av(&a.ah_attr, peer);
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = ini_qpn;
	a.rq_psn = psn;
	a.max_dest_rd_atomic = 16;
	a.min_rnr_timer = 1;
	return ibv_modify_qp(t, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
					    IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
}

/* Initiator QP: RESET -> INIT -> RTR -> RTS. timeout: IBA exponent. */
static inline int xrc_ini_connect(struct ibv_qp *q, struct ibv_context *peer, uint32_t tgt_qpn, uint32_t psn,
				  uint8_t timeout)
{
	int r = xrc_to_init(q);
	if (r)
		return r;
	struct ibv_qp_attr a;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	xrc_av(&a.ah_attr, peer);
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = tgt_qpn;
	a.rq_psn = 0;
	r = ibv_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN);
	if (r)
		return r;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = psn;
	a.timeout = timeout;
	a.retry_cnt = 7;
	a.rnr_retry = 7; /* infinite */
	a.max_rd_atomic = 16;
	return ibv_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
					    IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC);
}

static inline enum ibv_qp_state qp_state(struct ibv_qp *qp)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;
	memset(&a, 0, sizeof(a));
	if (ibv_query_qp(qp, &a, IBV_QP_STATE, &ia))
		return (enum ibv_qp_state)-1;
	return a.qp_state;
}

#endif /* XRC_COMMON_H */
