/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The GSI-QP runtime (dpv_cmrt.h): the runtime of dpv_cmrt.c, which hosts
 * the agent, on a transport of its own: a port's GSI QP through the public
 * verbs API.
 *
 * Buffers: one registered region, recv_bufs receive slots of GRH + MAD
 * (wr_id = slot) then send_depth send slots of one MAD. Sends are posted
 * in order, slot = sequence % send_depth, and signalled every depth/2 (and
 * when the queue would otherwise hold depth/2 unsignalled WRs); a signalled
 * completion with wr_id = sequence retires every earlier send, so a slot is
 * reused only after the send that used it completed.
 */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dpv_cmrt.h"
#include "dpv_cmrt_priv.h"
#include "dpverbs.h"

#define GRH_LEN 40
#define SLOT_LEN (GRH_LEN + DPV_MAD_SIZE)
#define DEPTH_MAX 4096
#define POLL_BATCH 16

struct cmrt_ah {
	uint8_t gid[16];
	struct ibv_ah *ah;
};

struct dpv_cmrt_qp {
	struct ibv_context *ctx;
	struct dpv_cmrt_cfg cfg;
	struct ibv_pd *pd;
	struct ibv_cq *scq, *rcq;
	struct ibv_qp *qp;
	uint8_t *buf;
	struct ibv_mr *mr;
	uint64_t sq_posted, sq_done;  /**< sends posted; sends known complete */
	struct cmrt_ah *ahs;
	uint32_t nahs, cap_ahs;
	int gid4, gid6;               /**< local GID indexes (-1: none) */
	uint8_t lgid4[16], lgid6[16];
	struct dpv_cmrt_stats *stats; /**< the runtime's */
};

static const uint8_t v4map[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

static bool gid_is_v4(const uint8_t g[16])
{
	return memcmp(g, v4map, sizeof(v4map)) == 0;
}

static uint8_t *send_slot(struct dpv_cmrt_qp *q, uint64_t seq)
{
	return q->buf + (size_t)q->cfg.recv_bufs * SLOT_LEN + (seq % q->cfg.send_depth) * DPV_MAD_SIZE;
}

static int post_recv(struct dpv_cmrt_qp *q, uint32_t slot)
{
	struct ibv_sge sge = {.addr = (uintptr_t)(q->buf + (size_t)slot * SLOT_LEN), .length = SLOT_LEN,
			      .lkey = q->mr->lkey};
	struct ibv_recv_wr wr = {.wr_id = slot, .sg_list = &sge, .num_sge = 1}, *bad;
	int rc = ibv_post_recv(q->qp, &wr, &bad);
	return rc > 0 ? -rc : rc;
}

/* Reaps send completions. RETURN VALUE: 0 or -errno of ibv_poll_cq. */
static int reap_sends(struct dpv_cmrt_qp *q)
{
	struct ibv_wc wc[POLL_BATCH];
	int n;
	while ((n = ibv_poll_cq(q->scq, POLL_BATCH, wc)) > 0) {
		for (int i = 0; i < n; i++) {
			if (wc[i].status != IBV_WC_SUCCESS)
				q->stats->tx_errors++;
			if (wc[i].wr_id + 1 > q->sq_done)
				q->sq_done = wc[i].wr_id + 1;
		}
	}
	return n < 0 ? (errno ? -errno : -EIO) : 0;
}

/* The cached AH to gid, created on first use. NULL with errno on failure. */
static struct ibv_ah *ah_for(struct dpv_cmrt_qp *q, const uint8_t gid[16])
{
	for (uint32_t i = 0; i < q->nahs; i++)
		if (memcmp(q->ahs[i].gid, gid, 16) == 0)
			return q->ahs[i].ah;
	int sgid = gid_is_v4(gid) ? q->gid4 : q->gid6;
	if (sgid < 0) {
		errno = ENETUNREACH;
		return NULL;
	}
	if (q->nahs == q->cap_ahs) {
		uint32_t cap = q->cap_ahs ? q->cap_ahs * 2 : 8;
		struct cmrt_ah *n = realloc(q->ahs, cap * sizeof(*n));
		if (!n)
			return NULL;
		q->ahs = n;
		q->cap_ahs = cap;
	}
	struct ibv_ah_attr a = {.is_global = 1, .port_num = q->cfg.port_num,
				.grh = {.sgid_index = (uint8_t)sgid, .hop_limit = 64}};
	memcpy(a.grh.dgid.raw, gid, 16);
	struct ibv_ah *ah = ibv_create_ah(q->pd, &a);
	if (!ah)
		return NULL;
	memcpy(q->ahs[q->nahs].gid, gid, 16);
	q->ahs[q->nahs++].ah = ah;
	q->stats->ahs++;
	return ah;
}

/* The transport's send: one 256-byte UD SEND to QP 1 of `gid` (the
 * runtime counts tx, tx_full and tx_errors from the result). */
static int qp_send(void *arg, const uint8_t gid[16], uint32_t qpn, const uint8_t mad[DPV_MAD_SIZE])
{
	struct dpv_cmrt_qp *q = arg;
	uint32_t depth = q->cfg.send_depth;
	if (q->sq_posted - q->sq_done >= depth) {
		int rc = reap_sends(q);
		if (rc < 0)
			return rc;
		if (q->sq_posted - q->sq_done >= depth)
			return -EAGAIN;
	}
	struct ibv_ah *ah = ah_for(q, gid);
	if (!ah)
		return errno ? -errno : -ENOMEM;
	uint64_t seq = q->sq_posted;
	uint8_t *slot = send_slot(q, seq);
	memcpy(slot, mad, DPV_MAD_SIZE);
	struct ibv_sge sge = {.addr = (uintptr_t)slot, .length = DPV_MAD_SIZE, .lkey = q->mr->lkey};
	struct ibv_send_wr wr = {.wr_id = seq, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
				 .wr.ud = {.ah = ah, .remote_qpn = qpn ? qpn : DPV_GSI_QPN,
					   .remote_qkey = DPV_GSI_QKEY}}, *bad;
	/* signalled every depth/2: at most depth/2 unsignalled WRs behind the last signalled one */
	if ((seq + 1) % (depth / 2 ? depth / 2 : 1) == 0)
		wr.send_flags = IBV_SEND_SIGNALED;
	int rc = ibv_post_send(q->qp, &wr, &bad);
	if (rc)
		return rc > 0 ? -rc : rc;
	q->sq_posted++;
	return 0;
}

/* The transport's listen: in shared mode the daemon hands this process
 * the REQs for service_id from now on (and stops). */
static int qp_listen(void *arg, uint64_t service_id, bool on)
{
	struct dpv_cmrt_qp *q = arg;
	int e = dpv_gsi_listen(q->qp, service_id, on);
	return on && e ? -e : 0;
}

static int handle_recv(struct dpv_cmrt *rt, const struct ibv_wc *wc, uint64_t now)
{
	struct dpv_cmrt_qp *q = rt->qp;
	if (wc->status == IBV_WC_WR_FLUSH_ERR)
		return 0; /* the QP is going away: not reposted */
	uint32_t slot = (uint32_t)wc->wr_id;
	const uint8_t *p = q->buf + (size_t)slot * SLOT_LEN;
	int handled = 0;
	if (wc->status != IBV_WC_SUCCESS || !(wc->wc_flags & IBV_WC_GRH))
		rt->stats.rx_dropped++;
	else if (dpv_cmrt_input_grh(rt, wc->src_qp, p, wc->byte_len, now) == 0)
		handled = 1;
	int rc = post_recv(q, slot);
	return rc < 0 ? rc : handled;
}

int dpv_cmrt_poll(struct dpv_cmrt *rt, uint64_t now)
{
	if (!rt || !rt->qp)
		return -EINVAL;
	struct ibv_wc wc[POLL_BATCH];
	int total = 0, n;
	while ((n = ibv_poll_cq(rt->qp->rcq, POLL_BATCH, wc)) > 0) {
		for (int i = 0; i < n; i++) {
			int rc = handle_recv(rt, &wc[i], now);
			if (rc < 0)
				return rc;
			total += rc;
		}
	}
	if (n < 0)
		return errno ? -errno : -EIO;
	int rc = reap_sends(rt->qp);
	if (rc < 0)
		return rc;
	dpv_cmrt_timer(rt, now);
	return total;
}

/* The first IPv4-mapped and the first other non-zero GID of the port. */
static int find_gids(struct dpv_cmrt_qp *q)
{
	struct ibv_port_attr pa;
	int rc = ibv_query_port(q->ctx, q->cfg.port_num, &pa);
	if (rc)
		return rc > 0 ? -rc : rc;
	static const uint8_t zero[16];
	q->gid4 = q->gid6 = -1;
	for (int i = 0; i < pa.gid_tbl_len; i++) {
		union ibv_gid g;
		if (ibv_query_gid(q->ctx, q->cfg.port_num, i, &g) || memcmp(g.raw, zero, 16) == 0)
			continue;
		if (gid_is_v4(g.raw) && q->gid4 < 0) {
			q->gid4 = i;
			memcpy(q->lgid4, g.raw, 16);
		} else if (!gid_is_v4(g.raw) && q->gid6 < 0) {
			q->gid6 = i;
			memcpy(q->lgid6, g.raw, 16);
		}
	}
	return q->gid4 < 0 && q->gid6 < 0 ? -ENODEV : 0;
}

/* PD, CQs, buffers and MR, the GSI QP in RTS. 0 or -errno. */
static int open_verbs(struct dpv_cmrt_qp *q)
{
	uint32_t nr = q->cfg.recv_bufs, ns = q->cfg.send_depth;
	q->pd = ibv_alloc_pd(q->ctx);
	if (!q->pd)
		return -errno;
	q->scq = ibv_create_cq(q->ctx, (int)ns, NULL, NULL, 0);
	q->rcq = q->scq ? ibv_create_cq(q->ctx, (int)nr, NULL, NULL, 0) : NULL;
	if (!q->rcq)
		return -errno;
	size_t len = (size_t)nr * SLOT_LEN + (size_t)ns * DPV_MAD_SIZE;
	q->buf = calloc(1, len);
	if (!q->buf)
		return -ENOMEM;
	q->mr = ibv_reg_mr(q->pd, q->buf, len, IBV_ACCESS_LOCAL_WRITE);
	if (!q->mr)
		return -errno;
	struct ibv_qp_init_attr ia = {.send_cq = q->scq, .recv_cq = q->rcq, .qp_type = IBV_QPT_UD,
				      .cap = {.max_send_wr = ns, .max_recv_wr = nr, .max_send_sge = 1,
					      .max_recv_sge = 1}};
	q->qp = dpv_create_gsi_qp(q->pd, &ia);
	if (!q->qp)
		return -errno;
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = q->cfg.port_num,
				.qkey = DPV_GSI_QKEY};
	int rc = ibv_modify_qp(q->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY);
	a.qp_state = IBV_QPS_RTR;
	rc = rc ? rc : ibv_modify_qp(q->qp, &a, IBV_QP_STATE);
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0;
	rc = rc ? rc : ibv_modify_qp(q->qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
	for (uint32_t i = 0; !rc && i < nr; i++)
		rc = post_recv(q, i);
	return rc > 0 ? -rc : rc;
}

/* The runtime's agent on this transport (CA GUID: the node GUID). */
static int open_agent(struct dpv_cmrt *rt)
{
	struct dpv_cmrt_qp *q = rt->qp;
	struct ibv_device_attr da;
	int rc = ibv_query_device(q->ctx, &da);
	if (rc)
		return rc > 0 ? -rc : rc;
	struct dpv_cmrt_xport_cfg xc = {.ca_guid = be64toh(da.node_guid), .max_ids = q->cfg.max_ids,
					.timewait_ns = q->cfg.timewait_ns, .seed = q->cfg.seed,
					.event = q->cfg.event, .event_arg = q->cfg.arg};
	struct dpv_cmrt_xport xp = {.send = qp_send, .listen = qp_listen, .arg = q};
	/* shared mode: local comm IDs in the range the daemon gave this process */
	rc = dpv_gsi_comm_ids(q->qp, &xc.id_prefix, &xc.id_mask);
	if (rc)
		return -rc;
	return dpv_cmrt_start(rt, &xc, &xp);
}

/* Frees the transport (the agent is gone). */
static void qp_fini(struct dpv_cmrt *rt)
{
	struct dpv_cmrt_qp *q = rt->qp;
	if (q->qp)
		ibv_destroy_qp(q->qp);
	for (uint32_t i = 0; i < q->nahs; i++)
		ibv_destroy_ah(q->ahs[i].ah);
	free(q->ahs);
	if (q->mr)
		ibv_dereg_mr(q->mr);
	free(q->buf);
	if (q->rcq)
		ibv_destroy_cq(q->rcq);
	if (q->scq)
		ibv_destroy_cq(q->scq);
	if (q->pd)
		ibv_dealloc_pd(q->pd);
	free(q);
	rt->qp = NULL;
}

struct dpv_cmrt *dpv_cmrt_open(struct ibv_context *ctx, const struct dpv_cmrt_cfg *cfg)
{
	if (!ctx || !cfg || !cfg->event || cfg->recv_bufs > DEPTH_MAX || cfg->send_depth > DEPTH_MAX) {
		errno = EINVAL;
		return NULL;
	}
	struct dpv_cmrt *rt = calloc(1, sizeof(*rt));
	struct dpv_cmrt_qp *q = rt ? calloc(1, sizeof(*q)) : NULL;
	if (!q) {
		free(rt);
		return NULL;
	}
	rt->qp = q;
	rt->qp_fini = qp_fini;
	q->stats = &rt->stats;
	q->ctx = ctx;
	q->cfg = *cfg;
	if (!q->cfg.port_num)
		q->cfg.port_num = 1;
	if (!q->cfg.recv_bufs)
		q->cfg.recv_bufs = 512;
	if (!q->cfg.send_depth)
		q->cfg.send_depth = 128;
	int rc = find_gids(q);
	rc = rc ? rc : open_verbs(q);
	rc = rc ? rc : open_agent(rt);
	if (rc) {
		dpv_cmrt_close(rt);
		errno = rc < 0 ? -rc : rc;
		return NULL;
	}
	return rt;
}

int dpv_cmrt_local_gid(const struct dpv_cmrt *rt, const uint8_t peer[16], uint8_t gid[16])
{
	if (!rt || !peer || !gid)
		return -EINVAL;
	const struct dpv_cmrt_qp *q = rt->qp;
	bool v4 = gid_is_v4(peer);
	if (!q || (v4 ? q->gid4 : q->gid6) < 0)
		return -ENODEV;
	memcpy(gid, v4 ? q->lgid4 : q->lgid6, 16);
	return 0;
}
