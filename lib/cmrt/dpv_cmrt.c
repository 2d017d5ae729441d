/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The CM runtime (dpv_cmrt.h): lib/cm's agent on a port's GSI QP.
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
#include <time.h>

#include "dpv_cmrt.h"
#include "dpverbs.h"

#define GRH_LEN 40
#define SLOT_LEN (GRH_LEN + DPV_MAD_SIZE)
#define DEPTH_MAX 4096
#define POLL_BATCH 16

struct cmrt_ah {
	uint8_t gid[16];
	struct ibv_ah *ah;
};

struct dpv_cmrt {
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
	struct dpv_cm_agent agent;
	bool agent_ok;
	struct dpv_cmrt_stats stats;
};

static const uint8_t v4map[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

static bool gid_is_v4(const uint8_t g[16])
{
	return memcmp(g, v4map, sizeof(v4map)) == 0;
}

static uint8_t *send_slot(struct dpv_cmrt *rt, uint64_t seq)
{
	return rt->buf + (size_t)rt->cfg.recv_bufs * SLOT_LEN + (seq % rt->cfg.send_depth) * DPV_MAD_SIZE;
}

static int post_recv(struct dpv_cmrt *rt, uint32_t slot)
{
	struct ibv_sge sge = {.addr = (uintptr_t)(rt->buf + (size_t)slot * SLOT_LEN), .length = SLOT_LEN,
			      .lkey = rt->mr->lkey};
	struct ibv_recv_wr wr = {.wr_id = slot, .sg_list = &sge, .num_sge = 1}, *bad;
	int rc = ibv_post_recv(rt->qp, &wr, &bad);
	return rc > 0 ? -rc : rc;
}

/* Reaps send completions. RETURN VALUE: 0 or -errno of ibv_poll_cq. */
static int reap_sends(struct dpv_cmrt *rt)
{
	struct ibv_wc wc[POLL_BATCH];
	int n;
	while ((n = ibv_poll_cq(rt->scq, POLL_BATCH, wc)) > 0) {
		for (int i = 0; i < n; i++) {
			if (wc[i].status != IBV_WC_SUCCESS)
				rt->stats.tx_errors++;
			if (wc[i].wr_id + 1 > rt->sq_done)
				rt->sq_done = wc[i].wr_id + 1;
		}
	}
	return n < 0 ? (errno ? -errno : -EIO) : 0;
}

/* The cached AH to gid, created on first use. NULL with errno on failure. */
static struct ibv_ah *ah_for(struct dpv_cmrt *rt, const uint8_t gid[16])
{
	for (uint32_t i = 0; i < rt->nahs; i++)
		if (memcmp(rt->ahs[i].gid, gid, 16) == 0)
			return rt->ahs[i].ah;
	int sgid = gid_is_v4(gid) ? rt->gid4 : rt->gid6;
	if (sgid < 0) {
		errno = ENETUNREACH;
		return NULL;
	}
	if (rt->nahs == rt->cap_ahs) {
		uint32_t cap = rt->cap_ahs ? rt->cap_ahs * 2 : 8;
		struct cmrt_ah *n = realloc(rt->ahs, cap * sizeof(*n));
		if (!n)
			return NULL;
		rt->ahs = n;
		rt->cap_ahs = cap;
	}
	struct ibv_ah_attr a = {.is_global = 1, .port_num = rt->cfg.port_num,
				.grh = {.sgid_index = (uint8_t)sgid, .hop_limit = 64}};
	memcpy(a.grh.dgid.raw, gid, 16);
	struct ibv_ah *ah = ibv_create_ah(rt->pd, &a);
	if (!ah)
		return NULL;
	memcpy(rt->ahs[rt->nahs].gid, gid, 16);
	rt->ahs[rt->nahs++].ah = ah;
	rt->stats.ahs++;
	return ah;
}

/* The agent's send callback: one 256-byte UD SEND to QP 1 of `to`. */
static int cmrt_send(void *arg, const struct dpv_cm_addr *to, const uint8_t mad[DPV_MAD_SIZE])
{
	struct dpv_cmrt *rt = arg;
	uint32_t depth = rt->cfg.send_depth;
	if (rt->sq_posted - rt->sq_done >= depth) {
		int rc = reap_sends(rt);
		if (rc < 0)
			return rc;
		if (rt->sq_posted - rt->sq_done >= depth) {
			rt->stats.tx_full++;
			return -EAGAIN;
		}
	}
	struct ibv_ah *ah = ah_for(rt, to->gid);
	if (!ah) {
		rt->stats.tx_errors++;
		return errno ? -errno : -ENOMEM;
	}
	uint64_t seq = rt->sq_posted;
	uint8_t *slot = send_slot(rt, seq);
	memcpy(slot, mad, DPV_MAD_SIZE);
	struct ibv_sge sge = {.addr = (uintptr_t)slot, .length = DPV_MAD_SIZE, .lkey = rt->mr->lkey};
	struct ibv_send_wr wr = {.wr_id = seq, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
				 .wr.ud = {.ah = ah, .remote_qpn = to->qpn ? to->qpn : DPV_GSI_QPN,
					   .remote_qkey = DPV_GSI_QKEY}}, *bad;
	/* signalled every depth/2: at most depth/2 unsignalled WRs behind the last signalled one */
	if ((seq + 1) % (depth / 2 ? depth / 2 : 1) == 0)
		wr.send_flags = IBV_SEND_SIGNALED;
	int rc = ibv_post_send(rt->qp, &wr, &bad);
	if (rc) {
		rt->stats.tx_errors++;
		return rc > 0 ? -rc : rc;
	}
	rt->sq_posted++;
	rt->stats.tx++;
	return 0;
}

/* The agent's listen callback: in shared mode the daemon hands this
 * process the REQs for service_id from now on (and stops). */
static int cmrt_listen(void *arg, uint64_t service_id, bool on)
{
	struct dpv_cmrt *rt = arg;
	int e = dpv_gsi_listen(rt->qp, service_id, on);
	return on && e ? -e : 0;
}

static void cmrt_event(void *arg, const struct dpv_cm_event *ev)
{
	struct dpv_cmrt *rt = arg;
	rt->cfg.event(rt->cfg.arg, ev);
}

/* The sender of a received MAD from its GRH area. false: unusable. */
static bool grh_source(const uint8_t *grh, uint8_t gid[16])
{
	if ((grh[0] >> 4) == 6) { /* an IPv6 header: the GRH proper */
		memcpy(gid, grh + 8, 16);
		return true;
	}
	const uint8_t *ip4 = grh + 20; /* RoCEv2 over IPv4: the IPv4 header at 20 */
	if ((ip4[0] >> 4) != 4)
		return false;
	memcpy(gid, v4map, sizeof(v4map));
	memcpy(gid + 12, ip4 + 12, 4);
	return true;
}

static int handle_recv(struct dpv_cmrt *rt, const struct ibv_wc *wc, uint64_t now)
{
	if (wc->status == IBV_WC_WR_FLUSH_ERR)
		return 0; /* the QP is going away: not reposted */
	uint32_t slot = (uint32_t)wc->wr_id;
	const uint8_t *p = rt->buf + (size_t)slot * SLOT_LEN;
	struct dpv_cm_addr from = {.qpn = wc->src_qp, .qkey = DPV_GSI_QKEY};
	int handled = 0;
	if (wc->status != IBV_WC_SUCCESS || wc->byte_len <= GRH_LEN || !(wc->wc_flags & IBV_WC_GRH) ||
	    !grh_source(p, from.gid)) {
		rt->stats.rx_dropped++;
	} else {
		rt->stats.rx++;
		if (dpv_cm_rx(&rt->agent, &from, p + GRH_LEN, wc->byte_len - GRH_LEN, now) == 0)
			handled = 1;
	}
	int rc = post_recv(rt, slot);
	return rc < 0 ? rc : handled;
}

int dpv_cmrt_poll(struct dpv_cmrt *rt, uint64_t now)
{
	if (!rt)
		return -EINVAL;
	struct ibv_wc wc[POLL_BATCH];
	int total = 0, n;
	while ((n = ibv_poll_cq(rt->rcq, POLL_BATCH, wc)) > 0) {
		for (int i = 0; i < n; i++) {
			int rc = handle_recv(rt, &wc[i], now);
			if (rc < 0)
				return rc;
			total += rc;
		}
	}
	if (n < 0)
		return errno ? -errno : -EIO;
	int rc = reap_sends(rt);
	if (rc < 0)
		return rc;
	dpv_cm_timer(&rt->agent, now);
	return total;
}

/* The first IPv4-mapped and the first other non-zero GID of the port. */
static int find_gids(struct dpv_cmrt *rt)
{
	struct ibv_port_attr pa;
	int rc = ibv_query_port(rt->ctx, rt->cfg.port_num, &pa);
	if (rc)
		return rc > 0 ? -rc : rc;
	static const uint8_t zero[16];
	rt->gid4 = rt->gid6 = -1;
	for (int i = 0; i < pa.gid_tbl_len; i++) {
		union ibv_gid g;
		if (ibv_query_gid(rt->ctx, rt->cfg.port_num, i, &g) || memcmp(g.raw, zero, 16) == 0)
			continue;
		if (gid_is_v4(g.raw) && rt->gid4 < 0) {
			rt->gid4 = i;
			memcpy(rt->lgid4, g.raw, 16);
		} else if (!gid_is_v4(g.raw) && rt->gid6 < 0) {
			rt->gid6 = i;
			memcpy(rt->lgid6, g.raw, 16);
		}
	}
	return rt->gid4 < 0 && rt->gid6 < 0 ? -ENODEV : 0;
}

/* PD, CQs, buffers and MR, the GSI QP in RTS. 0 or -errno. */
static int open_verbs(struct dpv_cmrt *rt)
{
	uint32_t nr = rt->cfg.recv_bufs, ns = rt->cfg.send_depth;
	rt->pd = ibv_alloc_pd(rt->ctx);
	if (!rt->pd)
		return -errno;
	rt->scq = ibv_create_cq(rt->ctx, (int)ns, NULL, NULL, 0);
	rt->rcq = rt->scq ? ibv_create_cq(rt->ctx, (int)nr, NULL, NULL, 0) : NULL;
	if (!rt->rcq)
		return -errno;
	size_t len = (size_t)nr * SLOT_LEN + (size_t)ns * DPV_MAD_SIZE;
	rt->buf = calloc(1, len);
	if (!rt->buf)
		return -ENOMEM;
	rt->mr = ibv_reg_mr(rt->pd, rt->buf, len, IBV_ACCESS_LOCAL_WRITE);
	if (!rt->mr)
		return -errno;
	struct ibv_qp_init_attr ia = {.send_cq = rt->scq, .recv_cq = rt->rcq, .qp_type = IBV_QPT_UD,
				      .cap = {.max_send_wr = ns, .max_recv_wr = nr, .max_send_sge = 1,
					      .max_recv_sge = 1}};
	rt->qp = dpv_create_gsi_qp(rt->pd, &ia);
	if (!rt->qp)
		return -errno;
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = rt->cfg.port_num,
				.qkey = DPV_GSI_QKEY};
	int rc = ibv_modify_qp(rt->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY);
	a.qp_state = IBV_QPS_RTR;
	rc = rc ? rc : ibv_modify_qp(rt->qp, &a, IBV_QP_STATE);
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0;
	rc = rc ? rc : ibv_modify_qp(rt->qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
	for (uint32_t i = 0; !rc && i < nr; i++)
		rc = post_recv(rt, i);
	return rc > 0 ? -rc : rc;
}

static int open_agent(struct dpv_cmrt *rt)
{
	struct ibv_device_attr da;
	int rc = ibv_query_device(rt->ctx, &da);
	if (rc)
		return rc > 0 ? -rc : rc;
	uint64_t seed = rt->cfg.seed;
	if (!seed) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		seed = ((uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec) ^ (uintptr_t)rt;
	}
	struct dpv_cm_agent_cfg ac = {.ca_guid = be64toh(da.node_guid), .send = cmrt_send,
				      .event = cmrt_event, .arg = rt, .max_ids = rt->cfg.max_ids,
				      .seed = seed, .timewait_ns = rt->cfg.timewait_ns, .agent_no = 2,
				      .listen = cmrt_listen};
	/* shared mode: local comm IDs in the range the daemon gave this process */
	rc = dpv_gsi_comm_ids(rt->qp, &ac.id_prefix, &ac.id_mask);
	if (rc)
		return -rc;
	rc = dpv_cm_agent_init(&rt->agent, &ac);
	rt->agent_ok = rc == 0;
	return rc;
}

struct dpv_cmrt *dpv_cmrt_open(struct ibv_context *ctx, const struct dpv_cmrt_cfg *cfg)
{
	if (!ctx || !cfg || !cfg->event || cfg->recv_bufs > DEPTH_MAX || cfg->send_depth > DEPTH_MAX) {
		errno = EINVAL;
		return NULL;
	}
	struct dpv_cmrt *rt = calloc(1, sizeof(*rt));
	if (!rt)
		return NULL;
	rt->ctx = ctx;
	rt->cfg = *cfg;
	if (!rt->cfg.port_num)
		rt->cfg.port_num = 1;
	if (!rt->cfg.recv_bufs)
		rt->cfg.recv_bufs = 512;
	if (!rt->cfg.send_depth)
		rt->cfg.send_depth = 128;
	int rc = find_gids(rt);
	rc = rc ? rc : open_verbs(rt);
	rc = rc ? rc : open_agent(rt);
	if (rc) {
		dpv_cmrt_close(rt);
		errno = rc < 0 ? -rc : rc;
		return NULL;
	}
	return rt;
}

struct dpv_cm_agent *dpv_cmrt_agent(struct dpv_cmrt *rt)
{
	if (!rt) {
		errno = EINVAL;
		return NULL;
	}
	return &rt->agent;
}

int dpv_cmrt_local_gid(const struct dpv_cmrt *rt, const uint8_t peer[16], uint8_t gid[16])
{
	if (!rt || !peer || !gid)
		return -EINVAL;
	bool v4 = gid_is_v4(peer);
	if ((v4 ? rt->gid4 : rt->gid6) < 0)
		return -ENODEV;
	memcpy(gid, v4 ? rt->lgid4 : rt->lgid6, 16);
	return 0;
}

int dpv_cmrt_stats(const struct dpv_cmrt *rt, struct dpv_cmrt_stats *st)
{
	if (!rt || !st)
		return -EINVAL;
	*st = rt->stats;
	return 0;
}

void dpv_cmrt_close(struct dpv_cmrt *rt)
{
	if (!rt)
		return;
	if (rt->agent_ok)
		dpv_cm_agent_fini(&rt->agent);
	if (rt->qp)
		ibv_destroy_qp(rt->qp);
	for (uint32_t i = 0; i < rt->nahs; i++)
		ibv_destroy_ah(rt->ahs[i].ah);
	free(rt->ahs);
	if (rt->mr)
		ibv_dereg_mr(rt->mr);
	free(rt->buf);
	if (rt->rcq)
		ibv_destroy_cq(rt->rcq);
	if (rt->scq)
		ibv_destroy_cq(rt->scq);
	if (rt->pd)
		ibv_dealloc_pd(rt->pd);
	free(rt);
}
