/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpv_perf endpoints: device and port, the queue shape (pf_shape), buffers
 * and MR, CQs, the XRC domain, and the connections of every QP type:
 *   RC, UC   one QP per connection; INIT at creation, RTR/RTS with the peer
 *   UD       one QP per connection and one address handle for the peer
 *   XRC      per connection an XRC_SEND QP and an XRC_RECV QP, and per
 *            endpoint one XRC SRQ shared by all connections (as XRC scales),
 *            in a domain opened on a temporary file (O_CREAT), as rdma-core's
 *            ibv_xsrq_pingpong: our XRC_SEND QP talks to the peer's
 *            XRC_RECV QP and names the peer's SRQ in every WR. A receive
 *            completion names its XRC_RECV QP (wc.qp_num): pf_rx_conn.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "perf.h"

#define ALIGN64(x) (((x) + 63u) & ~63u)
#define MIN_CQ 16

const char *pf_prog = "dpv_perf";

void pf_fail(struct pf_row *row, const char *fmt, ...)
{
	va_list ap;
	pt_stop = 1;
	if (!row || !row->ok)
		return; /* keep the first error */
	row->ok = false;
	va_start(ap, fmt);
	vsnprintf(row->error, sizeof(row->error), fmt, ap);
	va_end(ap);
}

static uint32_t mtu_bytes(enum ibv_mtu m) { return m >= IBV_MTU_256 && m <= IBV_MTU_4096 ? 128u << m : 0; }

int pf_ep_open(struct pf_ep *e, struct ibv_device *dev, const struct pf_opts *o)
{
	static const uint8_t zero[16];
	struct ibv_port_attr pa;
	e->o = o;
	e->xrcd_fd = -1;
	e->port = (uint8_t)o->ib_port;
	e->gid_idx = o->gid_idx;
	e->name = ibv_get_device_name(dev);
	e->ctx = ibv_open_device(dev);
	if (!e->ctx) {
		fprintf(stderr, "%s: cannot open %s: %s\n", pf_prog, e->name, strerror(errno));
		return -1;
	}
	if (ibv_query_device(e->ctx, &e->dev_attr) || ibv_query_port(e->ctx, e->port, &pa)) {
		fprintf(stderr, "%s: %s: ibv_query_device/port %u failed\n", pf_prog, e->name, e->port);
		return -1;
	}
	if (pa.state != IBV_PORT_ACTIVE)
		fprintf(stderr, "%s: warning: %s port %u is not active (%s)\n", pf_prog, e->name, e->port,
			ibv_port_state_str(pa.state));
	e->mtu_enum = pa.active_mtu;
	e->mtu = mtu_bytes(pa.active_mtu);
	if (ibv_query_gid(e->ctx, e->port, e->gid_idx, &e->gid) || !memcmp(e->gid.raw, zero, 16)) {
		fprintf(stderr, "%s: %s: GID index %d is missing or empty\n", pf_prog, e->name, e->gid_idx);
		return -1;
	}
	return 0;
}

static uint32_t min_u32(uint64_t a, uint64_t b) { return (uint32_t)(a < b ? a : b); }

/* The queue shape every endpoint of the run uses: window (SQ depth and tx
 * slots), signalling, receive depth. Cut to the device limits and to
 * PF_REGION_CAP of buffer per QP and direction; a cut is reported. */
int pf_shape(struct pf_opts *o, const struct pf_ep *e)
{
	const struct ibv_device_attr *da = &e->dev_attr;
	uint32_t hdr = o->qpt == PF_UD ? PF_GRH : 0, pay = o->size_max < 8 ? 8 : o->size_max;
	uint32_t slot = ALIGN64(pay), rx_slot = ALIGN64(hdr + pay);
	uint32_t w = min_u32(o->window, min_u32((uint64_t)da->max_qp_wr, PF_REGION_CAP / slot));
	if (w < 1)
		w = 1;
	if (w != o->window)
		fprintf(stderr, "%s: note: window cut from %u to %u (device or %u MiB per QP)\n", pf_prog, o->window,
			w, PF_REGION_CAP >> 20);
	o->window = w;
	if (o->post_list > w)
		o->post_list = w;
	/* a full window must hold a signalled WR, or the sender waits for ever */
	if (o->signal > w - o->post_list + 1) {
		fprintf(stderr, "%s: note: signal cut from %u to %u (window %u, post list %u)\n", pf_prog, o->signal,
			w - o->post_list + 1, w, o->post_list);
		o->signal = w - o->post_list + 1;
	}
	uint64_t cqe = (uint64_t)o->qps * ((w + o->signal - 1) / o->signal + 2);
	if (cqe > (uint64_t)da->max_cqe) {
		fprintf(stderr, "%s: %u QPs x (window %u / signal %u + 2) = %llu send CQEs: above max_cqe %d; "
			"raise --signal or lower --window\n", pf_prog, o->qps, w, o->signal, (unsigned long long)cqe,
			da->max_cqe);
		return -1;
	}
	if (!pf_op_recv(o->op))
		return 0;
	/* XRC: one SRQ holds the receive WQEs of every connection */
	uint32_t wr_max = o->qpt == PF_XRC ? (uint32_t)da->max_srq_wr / o->qps : (uint32_t)da->max_qp_wr;
	uint32_t r = min_u32(o->rx_depth, min_u32(wr_max, PF_REGION_CAP / rx_slot));
	r = min_u32(r, (uint64_t)da->max_cqe / o->qps);
	if (r < 4) {
		fprintf(stderr, "%s: too few receive WQEs per QP (%u) for %u QPs\n", pf_prog, r, o->qps);
		return -1;
	}
	if (r != o->rx_depth && o->rx_depth_set)
		fprintf(stderr, "%s: note: rx-depth cut from %u to %u (device, CQ or buffer limits)\n", pf_prog,
			o->rx_depth, r);
	o->rx_depth = r;
	/* credits come every r/4 messages: a post list must fit in what is left */
	if (o->kind == PF_BW && !o->no_fc && o->post_list > r * 3 / 4) {
		fprintf(stderr, "%s: note: post list cut from %u to %u (rx depth %u)\n", pf_prog, o->post_list,
			r * 3 / 4, r);
		o->post_list = r * 3 / 4;
	}
	return 0;
}

static void ep_geometry(struct pf_ep *e)
{
	const struct pf_opts *o = e->o;
	uint32_t pay = o->size_max < 8 ? 8 : o->size_max;
	e->hdr = o->qpt == PF_UD ? PF_GRH : 0;
	e->slot = ALIGN64(pay);
	e->rx_slot = ALIGN64(e->hdr + pay);
	e->window = o->window;
	e->sig = o->signal;
	e->tx_slots = o->window;
	e->nq = o->qps;
	if (pf_op_recv(o->op)) {
		e->rx_depth = o->rx_depth;
		e->rx_slots = o->rx_depth;
	} else {
		/* WRITE/READ targets; atomics use the first 8 bytes of slot 0 */
		e->rx_depth = 0;
		e->rx_slots = pf_op_atomic(o->op) ? 1 : min_u32(o->window, PF_REGION_CAP / e->rx_slot);
	}
	e->stride = (size_t)e->tx_slots * e->slot + (size_t)e->rx_slots * e->rx_slot;
}

static int ep_open_xrcd(struct pf_ep *e)
{
	struct ibv_xrcd_init_attr xa;
	snprintf(e->xrcd_path, sizeof(e->xrcd_path), "/tmp/dpv_perf-xrcd-XXXXXX");
	e->xrcd_fd = mkstemp(e->xrcd_path);
	if (e->xrcd_fd < 0) {
		fprintf(stderr, "%s: cannot create the XRC domain file: %s\n", pf_prog, strerror(errno));
		e->xrcd_path[0] = 0;
		return -1;
	}
	memset(&xa, 0, sizeof(xa));
	xa.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS;
	xa.fd = e->xrcd_fd;
	xa.oflags = O_CREAT;
	e->xrcd = ibv_open_xrcd(e->ctx, &xa);
	if (!e->xrcd) {
		fprintf(stderr, "%s: %s: ibv_open_xrcd failed: %s\n", pf_prog, e->name, strerror(errno));
		return -1;
	}
	/* the domain holds the inode through the open file: no name left behind */
	unlink(e->xrcd_path);
	e->xrcd_path[0] = 0;
	return 0;
}

/* --td: a thread domain and a parent domain on e->pd for the QPs and CQs
 * (one thread drives them: the provider takes no locks for them). */
static int ep_thread_domain(struct pf_ep *e)
{
	struct ibv_td_init_attr ta = {.comp_mask = 0};
	e->td = ibv_alloc_td(e->ctx, &ta);
	struct ibv_parent_domain_init_attr pa = {.pd = e->pd, .td = e->td, .comp_mask = 0};
	e->pdom = e->td ? ibv_alloc_parent_domain(e->ctx, &pa) : NULL;
	if (!e->pdom) {
		fprintf(stderr, "%s: %s: thread/parent domain: %s\n", pf_prog, e->name, strerror(errno));
		return -1;
	}
	return 0;
}

/* A CQ of n entries, in the parent domain with --td. */
static struct ibv_cq *ep_cq(struct pf_ep *e, int n)
{
	if (!e->pdom)
		return ibv_create_cq(e->ctx, n, NULL, NULL, 0);
	struct ibv_cq_init_attr_ex a = {.cqe = (uint32_t)n, .wc_flags = IBV_WC_STANDARD_FLAGS,
					.comp_mask = IBV_CQ_INIT_ATTR_MASK_PD, .parent_domain = e->pdom};
	struct ibv_cq_ex *x = ibv_create_cq_ex(e->ctx, &a);
	return x ? ibv_cq_ex_to_cq(x) : NULL;
}

/* PD, buffers, MR, CQs and (XRC) the domain, after pf_shape */
int pf_ep_alloc(struct pf_ep *e)
{
	const struct pf_opts *o = e->o;
	ep_geometry(e);
	e->pd = ibv_alloc_pd(e->ctx);
	e->buf_len = e->stride * e->nq;
	if (o->hugebuf) {
		e->hp = dpv_hugepage_allocator_create(-1);
		e->buf = e->hp ? dpv_hugepage_alloc(NULL, e->hp, e->buf_len, 4096, 0) : NULL;
	}
	if (!e->pd || (o->hugebuf && !e->buf) || (!o->hugebuf && posix_memalign((void **)&e->buf, 4096, e->buf_len))) {
		fprintf(stderr, "%s: %s: ibv_alloc_pd or %zu bytes of memory failed\n", pf_prog, e->name, e->buf_len);
		return -1;
	}
	memset(e->buf, 0, e->buf_len);
	e->mr = ibv_reg_mr(e->pd, e->buf, e->buf_len,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			   (o->qpt == PF_RC || o->qpt == PF_XRC ? IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC : 0));
	if (!e->mr) {
		fprintf(stderr, "%s: %s: ibv_reg_mr of %zu bytes failed: %s\n", pf_prog, e->name, e->buf_len,
			strerror(errno));
		return -1;
	}
	int scqe = (int)(e->nq * ((e->window + e->sig - 1) / e->sig + 2));
	int rcqe = (int)(e->nq * (e->rx_depth ? e->rx_depth : 1));
	if (o->td && ep_thread_domain(e))
		return -1;
	e->scq = ep_cq(e, scqe < MIN_CQ ? MIN_CQ : scqe);
	e->rcq = ep_cq(e, rcqe < MIN_CQ ? MIN_CQ : rcqe);
	if (!e->scq || !e->rcq) {
		fprintf(stderr, "%s: %s: ibv_create_cq failed: %s\n", pf_prog, e->name, strerror(errno));
		return -1;
	}
	e->q = calloc(e->nq, sizeof(*e->q));
	if (!e->q)
		return -1;
	for (uint32_t i = 0; i < e->nq; i++) {
		struct pf_qp *q = &e->q[i];
		q->idx = i;
		q->tx = e->buf + e->stride * i;
		q->rx = q->tx + (size_t)e->tx_slots * e->slot;
		q->psn = (uint32_t)((pt_mono_ns() ^ (i * 2654435761u)) & 0xffffff);
	}
	return o->qpt == PF_XRC ? ep_open_xrcd(e) : 0;
}

static int qp_init_attr(struct pf_ep *e, struct ibv_qp *qp, enum pf_qpt t)
{
	struct ibv_qp_attr a;
	int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = e->port;
	if (t == PF_UD) {
		a.qkey = PF_QKEY;
		mask |= IBV_QP_QKEY;
	} else {
		a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				    (t == PF_UC ? 0 : IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
		mask |= IBV_QP_ACCESS_FLAGS;
	}
	return ibv_modify_qp(qp, &a, mask);
}

/* create one send-capable QP (RC/UC/UD, or XRC_SEND) with inline data if offered */
static struct ibv_qp *create_send_qp(struct pf_ep *e, bool with_rq)
{
	const struct pf_opts *o = e->o;
	static const enum ibv_qp_type types[PF_QPT_N] = {IBV_QPT_RC, IBV_QPT_UC, IBV_QPT_UD, IBV_QPT_XRC_SEND};
	struct ibv_qp_init_attr_ex a;
	uint32_t pay = o->size_max < 8 ? 8 : o->size_max;
	memset(&a, 0, sizeof(a));
	a.qp_type = types[o->qpt];
	a.comp_mask = IBV_QP_INIT_ATTR_PD;
	a.pd = e->pdom ? e->pdom : e->pd;
	a.send_cq = e->scq;
	a.recv_cq = o->qpt == PF_XRC ? e->scq : e->rcq;
	a.cap.max_send_wr = e->window;
	a.cap.max_send_sge = 1;
	if (o->qpt != PF_XRC) {
		a.cap.max_recv_wr = with_rq && e->rx_depth ? e->rx_depth : 1;
		a.cap.max_recv_sge = 1;
	}
	a.cap.max_inline_data = o->no_inline || pf_op_atomic(o->op) || o->op == PF_READ ? 0 : (pay < 512 ? pay : 512);
	struct ibv_qp *qp = ibv_create_qp_ex(e->ctx, &a);
	if (!qp && a.cap.max_inline_data) {
		a.cap.max_inline_data = 0; /* inline not offered for this size: go without */
		qp = ibv_create_qp_ex(e->ctx, &a);
	}
	if (qp)
		e->max_inline = a.cap.max_inline_data;
	return qp;
}

static int create_xrc_srq(struct pf_ep *e)
{
	struct ibv_srq_init_attr_ex sa;
	memset(&sa, 0, sizeof(sa));
	sa.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_XRCD |
		       IBV_SRQ_INIT_ATTR_CQ;
	sa.srq_type = IBV_SRQT_XRC;
	sa.pd = e->pd;
	sa.cq = e->rcq;
	sa.xrcd = e->xrcd;
	sa.attr.max_wr = e->rx_depth ? e->rx_depth * e->nq : 1;
	sa.attr.max_sge = 1;
	e->srq = ibv_create_srq_ex(e->ctx, &sa);
	if (!e->srq || ibv_get_srq_num(e->srq, &e->srqn)) {
		fprintf(stderr, "%s: %s: creating the XRC SRQ failed: %s\n", pf_prog, e->name, strerror(errno));
		return -1;
	}
	e->tgt_map = calloc(e->nq, sizeof(*e->tgt_map));
	return e->tgt_map ? 0 : -1;
}

static int create_xrc_tgt(struct pf_ep *e, struct pf_qp *q)
{
	struct ibv_qp_init_attr_ex ta;
	q->srqn = e->srqn;
	memset(&ta, 0, sizeof(ta));
	ta.qp_type = IBV_QPT_XRC_RECV;
	ta.comp_mask = IBV_QP_INIT_ATTR_XRCD;
	ta.xrcd = e->xrcd;
	q->tgt = ibv_create_qp_ex(e->ctx, &ta);
	if (!q->tgt)
		return -1;
	e->tgt_map[q->idx] = (uint64_t)q->tgt->qp_num << 32 | q->idx;
	return qp_init_attr(e, q->tgt, PF_XRC);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* Create every connection's QP(s) and move them to INIT. */
int pf_ep_create_qps(struct pf_ep *e)
{
	if (e->o->qpt == PF_XRC && create_xrc_srq(e))
		return -1;
	for (uint32_t i = 0; i < e->nq; i++) {
		struct pf_qp *q = &e->q[i];
		q->qp = create_send_qp(e, true);
		if (!q->qp || qp_init_attr(e, q->qp, e->o->qpt) || (e->o->qpt == PF_XRC && create_xrc_tgt(e, q))) {
			fprintf(stderr, "%s: %s: creating QP %u of %u failed: %s\n", pf_prog, e->name, i + 1, e->nq,
				strerror(errno));
			return -1;
		}
	}
	if (e->tgt_map)
		qsort(e->tgt_map, e->nq, sizeof(*e->tgt_map), cmp_u64);
	return 0;
}

struct pf_qp *pf_rx_conn(struct pf_ep *e, const struct ibv_wc *wc)
{
	if (!e->tgt_map)
		return &e->q[wc->wr_id >> 32];
	uint32_t lo = 0, hi = e->nq;
	while (lo < hi) {
		uint32_t mid = (lo + hi) / 2;
		uint32_t qpn = (uint32_t)(e->tgt_map[mid] >> 32);
		if (qpn == wc->qp_num)
			return &e->q[(uint32_t)e->tgt_map[mid]];
		if (qpn < wc->qp_num)
			lo = mid + 1;
		else
			hi = mid;
	}
	return &e->q[wc->wr_id >> 32]; /* not ours: checked as corrupt */
}

int pf_ep_post_recv(struct pf_ep *e, struct pf_qp *q, uint32_t slot)
{
	struct ibv_sge sge = {.addr = (uintptr_t)pf_rx_slot(e, q, slot), .length = e->rx_slot, .lkey = e->mr->lkey};
	struct ibv_recv_wr wr = {.wr_id = (uint64_t)q->idx << 32 | slot, .sg_list = &sge, .num_sge = 1}, *bad;
	return e->srq ? ibv_post_srq_recv(e->srq, &wr, &bad) : ibv_post_recv(q->qp, &wr, &bad);
}

int pf_ep_post_all_recv(struct pf_ep *e)
{
	for (uint32_t i = 0; i < e->nq; i++)
		for (uint32_t s = 0; s < e->rx_depth; s++)
			if (pf_ep_post_recv(e, &e->q[i], s)) {
				fprintf(stderr, "%s: %s: ibv_post_recv failed\n", pf_prog, e->name);
				return -1;
			}
	return 0;
}

static void fill_av(const struct pf_ep *e, struct ibv_ah_attr *ah)
{
	memset(ah, 0, sizeof(*ah));
	ah->is_global = 1;
	ah->grh.dgid = e->r_gid;
	ah->grh.sgid_index = (uint8_t)e->gid_idx;
	ah->grh.hop_limit = 64;
	ah->port_num = e->port;
}

static int to_rtr(struct pf_ep *e, struct ibv_qp *qp, uint32_t dqpn, uint32_t rq_psn, bool rd_atomic)
{
	struct ibv_qp_attr a;
	int mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = e->mtu_enum;
	if (e->r_mtu && e->r_mtu < e->mtu)
		a.path_mtu = e->r_mtu >= 4096 ? IBV_MTU_4096 : e->r_mtu >= 2048 ? IBV_MTU_2048 :
			     e->r_mtu >= 1024 ? IBV_MTU_1024 : e->r_mtu >= 512 ? IBV_MTU_512 : IBV_MTU_256;
	a.dest_qp_num = dqpn;
	a.rq_psn = rq_psn;
	fill_av(e, &a.ah_attr);
	if (rd_atomic) {
		a.max_dest_rd_atomic = 16;
		a.min_rnr_timer = 1;
		mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
	}
	return ibv_modify_qp(qp, &a, mask);
}

static int to_rts(struct ibv_qp *qp, uint32_t sq_psn, bool reliable)
{
	struct ibv_qp_attr a;
	int mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = sq_psn;
	if (reliable) {
		a.timeout = 14;
		a.retry_cnt = 7;
		a.rnr_retry = 7;
		a.max_rd_atomic = 16;
		mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
	}
	return ibv_modify_qp(qp, &a, mask);
}

static int connect_one(struct pf_ep *e, struct pf_qp *q)
{
	struct ibv_qp_attr a;
	switch (e->o->qpt) {
	case PF_UD:
		memset(&a, 0, sizeof(a));
		a.qp_state = IBV_QPS_RTR;
		if (ibv_modify_qp(q->qp, &a, IBV_QP_STATE))
			return -1;
		return to_rts(q->qp, q->psn, false);
	case PF_UC:
		return to_rtr(e, q->qp, q->r_qpn, q->r_psn, false) || to_rts(q->qp, q->psn, false) ? -1 : 0;
	case PF_RC:
		return to_rtr(e, q->qp, q->r_qpn, q->r_psn, true) || to_rts(q->qp, q->psn, true) ? -1 : 0;
	case PF_XRC:
		/* target: receives from the peer's initiator; initiator: sends to the peer's target */
		if (to_rtr(e, q->tgt, q->r_qpn, q->r_psn, true))
			return -1;
		return to_rtr(e, q->qp, q->r_tgt, 0, false) || to_rts(q->qp, q->psn, true) ? -1 : 0;
	default:
		return -1;
	}
}

/* RTR/RTS with the peer's numbers (set by the exchange); UD: the AH */
int pf_ep_connect(struct pf_ep *e)
{
	if (e->o->qpt == PF_UD) {
		struct ibv_ah_attr ah;
		fill_av(e, &ah);
		e->ah = ibv_create_ah(e->pd, &ah);
		if (!e->ah) {
			fprintf(stderr, "%s: %s: ibv_create_ah failed: %s\n", pf_prog, e->name, strerror(errno));
			return -1;
		}
	}
	for (uint32_t i = 0; i < e->nq; i++)
		if (connect_one(e, &e->q[i])) {
			fprintf(stderr, "%s: %s: connecting QP %u failed: %s\n", pf_prog, e->name, i, strerror(errno));
			return -1;
		}
	return 0;
}

void pf_ep_close(struct pf_ep *e)
{
	for (uint32_t i = 0; e->q && i < e->nq; i++) {
		if (e->q[i].qp)
			ibv_destroy_qp(e->q[i].qp);
		if (e->q[i].tgt)
			ibv_destroy_qp(e->q[i].tgt);
	}
	free(e->q);
	free(e->tgt_map);
	if (e->srq)
		ibv_destroy_srq(e->srq);
	if (e->ah)
		ibv_destroy_ah(e->ah);
	if (e->xrcd)
		ibv_close_xrcd(e->xrcd);
	if (e->xrcd_fd >= 0)
		close(e->xrcd_fd);
	if (e->xrcd_path[0])
		unlink(e->xrcd_path);
	if (e->scq)
		ibv_destroy_cq(e->scq);
	if (e->rcq)
		ibv_destroy_cq(e->rcq);
	if (e->mr)
		ibv_dereg_mr(e->mr);
	if (e->pdom)
		ibv_dealloc_pd(e->pdom);
	if (e->td)
		ibv_dealloc_td(e->td);
	if (e->pd)
		ibv_dealloc_pd(e->pd);
	if (e->ctx)
		ibv_close_device(e->ctx);
	if (e->hp) {
		dpv_hugepage_free(NULL, e->hp, e->buf, 0);
		dpv_hugepage_allocator_destroy(e->hp);
	} else {
		free(e->buf);
	}
	memset(e, 0, sizeof(*e));
	e->xrcd_fd = -1;
}

/* Start of a round: clear the WRITE targets and atomic counters, stamp
 * READ sources, reset the per-round counters; message quotas round robin
 * over the QPs. Receive buffers are left alone: a late credit of the last
 * round may sit in one, its completion not yet polled (it is ignored by its
 * round number, but must still look like a credit). */
void pf_ep_round_reset(struct pf_ep *e, uint64_t round, uint32_t size, uint64_t total)
{
	e->round = round;
	e->size = size;
	for (uint32_t i = 0; i < e->nq; i++) {
		struct pf_qp *q = &e->q[i];
		if (e->o->op == PF_WRITE || pf_op_atomic(e->o->op))
			memset(q->rx, 0, (size_t)e->rx_slots * e->rx_slot);
		if (e->o->op == PF_READ)
			for (uint32_t s = 0; s < e->rx_slots; s++) {
				if (e->o->verify)
					pf_pattern_fill(q->rx + (size_t)s * e->rx_slot, size, pf_stamp(round, s));
				pf_put_stamp(q->rx + (size_t)s * e->rx_slot, size, pf_stamp(round, s));
			}
		q->round_base = q->sq_posted;
		q->quota = total / e->nq + (i < total % e->nq ? 1 : 0);
		q->granted = q->expected = q->received = q->credited = q->checked = 0;
		q->have_credit = false;
	}
}

/* VmRSS and HugetlbPages of this process, bytes (-1 if not readable) */
int pf_mem_sample(long long *rss, long long *huge)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long long v;
	*rss = *huge = -1;
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "VmRSS: %lld kB", &v) == 1)
			*rss = v * 1024;
		else if (sscanf(line, "HugetlbPages: %lld kB", &v) == 1)
			*huge = v * 1024;
	}
	fclose(f);
	return 0;
}
