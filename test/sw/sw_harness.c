/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The port layer as the sw driver sees it, replaced for unit tests
 * (sw_harness.h): one port, frames captured instead of sent, received
 * frames injected by the test. WHITE-BOX: it implements lib/port's
 * internal interface (dpv_port.h, dpv_engine.h, dpv_fault.h,
 * dpv_telemetry.h) and reads the engine's QP state (sw_loc.h, sw_qp_lock.h).
 */
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include "dpv_engine.h"
#include "dpv_fault.h"
#include "dpv_port.h"
#include "dpv_telemetry.h"
#include "dpvt_wire.h"
#include "sw_harness.h"
#include "sw_loc.h"
#include "sw_qp_lock.h"

#define MAX_SENT 512

const uint8_t sw_h_peer_gid[16] = { [10] = 0xff, [11] = 0xff, 192, 0, 2, 2 };
static const uint8_t port_gid[16] = { [10] = 0xff, [11] = 0xff, 192, 0, 2, 1 };
static const uint8_t port_mac[6] = { 0x02, 0x64, 0x70, 0x76, 0x00, 0x01 };
static const uint8_t peer_mac[6] = { 0x02, 0x64, 0x70, 0x76, 0x00, 0x02 };

static struct dpv_runtime g_rt;
static bool g_up;
static dpv_roce_rx_fn g_rx;
static dpv_poll_fn g_poll;
static struct sw_h_frame *g_sent;
static unsigned int g_nsent;
static int g_xmit_result;
static struct dpv_fault_stats g_fault_stats;

/* ---- the port layer's interface, as the driver calls it ---- */

/* Counter names (lib/port/dpv_port.c has the real ones): only published. */
const char *const dpv_drop_reason_names[DPV_DROP_NR] = { [0 ... DPV_DROP_NR - 1] = "drop" };
const char *const dpv_cnt_names[DPV_CNT_NR] = { [0 ... DPV_CNT_NR - 1] = "cnt" };

struct dpv_runtime *dpv_runtime_start(const struct dpv_conf *conf)
{
	if (!g_up) {
		errno = ENODEV;
		return NULL;
	}
	g_rt.conf = *conf;
	return &g_rt;
}

struct dpv_runtime *dpv_runtime_peek(void)
{
	return g_up ? &g_rt : NULL;
}

void dpv_port_set_rx_handler(dpv_roce_rx_fn fn)
{
	g_rx = fn;
}

void dpv_port_set_poll_handler(dpv_poll_fn fn)
{
	g_poll = fn;
}

/* raw packet QPs: the fake port has no steering rules */
void dpv_port_set_raw_handler(dpv_raw_rx_fn fn)
{
	(void)fn;
}

int dpv_raw_rule_add(struct dpv_port *p, struct dpv_raw_rule *r, struct dpv_raw_tab **old)
{
	(void)p, (void)r;
	*old = NULL;
	return -EOPNOTSUPP;
}

int dpv_raw_rule_del(struct dpv_port *p, uint32_t handle, uint32_t qpn, struct dpv_raw_tab **old)
{
	(void)p, (void)handle, (void)qpn;
	*old = NULL;
	return -ENOENT;
}

uint64_t dpv_lo_trusted_flag; /* the harness checks every frame in full */

__thread unsigned int dpv_stat_tslot __attribute__((tls_model("initial-exec")));

unsigned int dpv_stat_slot_assign(void)
{
	return DPV_STAT_SHARED; /* every harness thread counts in the shared slot */
}

struct dpv_port *dpv_port_loopback_dst(const uint8_t dgid[16])
{
	(void)dgid; /* the harness' peer is on the "wire" */
	return NULL;
}

bool dpv_port_gid_get(const struct dpv_port *port, unsigned int idx, struct dpv_gid_entry *out)
{
	if (idx >= DPV_GID_TABLE_LEN)
		return false;
	*out = port->gids[idx];
	return true;
}

void dpv_port_tx_begin(struct dpv_qctx *qc)
{
	(void)qc; /* the harness sends at once */
}

void dpv_port_tx_end(struct dpv_qctx *qc)
{
	(void)qc;
}

void dpv_port_tx_push(struct dpv_qctx *qc)
{
	(void)qc;
}

uint16_t dpv_port_lid(const struct dpv_port *port)
{
	(void)port;
	return 0;
}

void dpv_kif_info(const struct dpv_port *p, struct dpv_kif_info *out)
{
	(void)p; /* the harness' port has no kernel interface */
	memset(out, 0, sizeof(*out));
}

void dpv_port_set_gid_handler(dpv_gid_fn fn)
{
	(void)fn;
}

void dpv_port_set_link_handler(dpv_link_fn fn)
{
	(void)fn; /* the harness' link never changes */
}

struct rte_mbuf *dpv_port_alloc_mbuf(struct dpv_port *port)
{
	return rte_pktmbuf_alloc(port->pool);
}

/* Every frame the engine transmits ends here: captured, then freed. */
static int h_xmit(struct dpv_qctx *qc, struct rte_mbuf *m, const uint8_t dgid[16])
{
	int r = g_xmit_result;
	(void)qc;

	if (r == 0 && g_nsent < MAX_SENT) {
		struct sw_h_frame *f = &g_sent[g_nsent];
		uint32_t len = rte_pktmbuf_data_len(m);

		f->len = len < sizeof(f->bytes) ? len : sizeof(f->bytes);
		memcpy(f->bytes, rte_pktmbuf_mtod(m, const uint8_t *), f->len);
		if (dpv_pkt_parse_check(f->bytes, f->len, &f->pi) != 0) {
			fprintf(stderr, "sw_harness: the engine sent a frame that does not parse\n");
			abort();
		}
		if (memcmp(f->pi.dgid, dgid, 16) != 0) {
			fprintf(stderr, "sw_harness: dgid argument and frame disagree\n");
			abort();
		}
		g_nsent++;
	}
	rte_pktmbuf_free(m);
	return r;
}

/* The engine's two transmit paths end in the same capture (the harness
 * has no local ports: dpv_port_loopback_dst says every GID is remote). */
int dpv_port_xmit_remote(struct dpv_qctx *qc, struct rte_mbuf *m, const uint8_t dgid[16])
{
	return h_xmit(qc, m, dgid);
}

int dpv_port_xmit_mcast(struct dpv_qctx *qc, struct rte_mbuf *m, const uint8_t dgid[16])
{
	return h_xmit(qc, m, dgid);
}

int dpv_port_xmit_raw(struct dpv_qctx *qc, struct rte_mbuf *m)
{
	(void)qc; /* no raw packet QP sends on the harness' port */
	rte_pktmbuf_free(m);
	return 0;
}

int dpv_port_xmit_local(struct dpv_qctx *qc, struct dpv_port *lp, struct rte_mbuf *m)
{
	(void)lp;
	fprintf(stderr, "sw_harness: a frame for a local port\n");
	abort();
	return h_xmit(qc, m, NULL);
}

int dpv_progress_all(void)
{
	return 0; /* the test drives the engine itself */
}

void dpv_neigh_prefetch(struct dpv_qctx *qc, const uint8_t ip[16])
{
}

bool dpv_neigh_ready(struct dpv_qctx *qc, const uint8_t ip[16])
{
	return true;
}

int dpv_neigh_lookup(struct dpv_qctx *qc, const uint8_t ip[16], uint8_t mac[6])
{
	memset(mac, 0, 6);
	return 0; /* every neighbour is known, as dpv_neigh_ready says */
}

bool dpv_engine_lcore_mode(void)
{
	return false;
}

void dpv_engine_app_blocking(bool on)
{
	(void)on; /* no assist thread here */
}

const struct dpv_fault_stats *dpv_fault_stats(void)
{
	return &g_fault_stats;
}

bool dpv_telemetry_enabled(const struct dpv_runtime *rt)
{
	return false;
}

/* ---- the bench ---- */

static char g_rundir[PATH_MAX];

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	return remove(path);
}

/* EAL's runtime directory of this process goes with it. */
static void sw_h_exit(void)
{
	rte_eal_cleanup();
	if (g_rundir[0])
		nftw(g_rundir, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
}

int sw_h_init(int argc, char **argv)
{
	char prefix[64];
	char *eal[] = { argv[0], "--no-huge", "--no-pci", "--no-shconf", "--no-telemetry",
			"-m", "256", "--log-level=lib.eal:4", "--file-prefix", prefix };
	struct dpv_port *p = &g_rt.ports[0];
	struct dpv_qctx *qc = &p->qctx[0];

	snprintf(prefix, sizeof(prefix), "dpv-swtest-%d", (int)getpid());
	if (rte_eal_init((int)RTE_DIM(eal), eal) < 0) {
		fprintf(stderr, "sw_harness: rte_eal_init: %s\n", rte_strerror(rte_errno));
		return -1;
	}
	sw_us_cycles = rte_get_tsc_hz() / 1000000;
	snprintf(g_rundir, sizeof(g_rundir), "%s", rte_eal_get_runtime_dir());
	atexit(sw_h_exit);
	g_sent = calloc(MAX_SENT, sizeof(*g_sent));
	p->pool = rte_pktmbuf_pool_create("swh_pool", 8191, 0, 0, 4096 + RTE_PKTMBUF_HEADROOM,
					  SOCKET_ID_ANY);
	qc->db_ring = rte_ring_create("swh_db", 1024, SOCKET_ID_ANY, RING_F_SC_DEQ);
	if (!g_sent || !p->pool || !qc->db_ring) {
		fprintf(stderr, "sw_harness: no memory for the bench\n");
		return -1;
	}
	g_rt.n_ports = 1;
	g_rt.tsc_hz = rte_get_tsc_hz();
	snprintf(p->name, sizeof(p->name), "dpv0");
	memcpy(p->mac, port_mac, 6);
	p->mtu = 1500;
	p->active_mtu = IBV_MTU_1024;
	p->path_mtu_bytes = 1024;
	p->ipv4.s_addr = htonl(0xc0000201);
	p->ipv4_prefix = 24;
	memcpy(p->gids[0].gid, port_gid, 16);
	p->gids[0].valid = true;
	p->gids[0].ip_ver = 4;
	p->n_gids = DPV_GID_TABLE_LEN;
	p->link_up = true;
	p->link_seen = true;
	p->eth_speed_mbps = 10000;
	p->n_qctx = 1;
	qc->port = p;
	qc->lcore = -1;
	rte_spinlock_init(&qc->rx_lock);
	rte_spinlock_init(&qc->tx_lock);
	rte_spinlock_init(&p->neigh_lock);
	g_up = true;
	return 0;
}

unsigned int sw_h_nsent(void)
{
	return g_nsent;
}

const struct sw_h_frame *sw_h_sent(unsigned int i)
{
	return i < g_nsent ? &g_sent[i] : NULL;
}

void sw_h_clear(void)
{
	g_nsent = 0;
}

void sw_h_xmit_result(int r)
{
	g_xmit_result = r;
}

int sw_h_rx(struct dpv_pkt_build *b, const void *payload, uint32_t paylen)
{
	static const uint8_t zero[16];
	struct dpv_port *p = &g_rt.ports[0];
	struct dpv_qctx *qc = &p->qctx[0];
	struct dpv_pkt_info pi;

	if (!memcmp(b->src_mac, zero, 6))
		memcpy(b->src_mac, peer_mac, 6);
	if (!memcmp(b->dst_mac, zero, 6))
		memcpy(b->dst_mac, port_mac, 6);
	if (!memcmp(b->sgid, zero, 16))
		memcpy(b->sgid, sw_h_peer_gid, 16);
	if (!memcmp(b->dgid, zero, 16))
		memcpy(b->dgid, port_gid, 16);
	if (!b->ip_ver)
		b->ip_ver = 4;
	if (!b->pkey)
		b->pkey = DPV_DEFAULT_PKEY;
	if (!b->hop_limit)
		b->hop_limit = 64;
	if (!b->udp_sport)
		b->udp_sport = 0xc000;
	uint32_t flen = dpv_pkt_frame_len(b->opcode, b->ip_ver, paylen);
	struct rte_mbuf *m = rte_pktmbuf_alloc(p->pool);
	if (!flen || !m)
		goto fail;
	uint8_t *f = (uint8_t *)rte_pktmbuf_append(m, (uint16_t)flen);
	if (!f || dpvt_frame_build(f, flen, b, payload, paylen) != flen ||
	    dpv_pkt_parse_check(f, flen, &pi) != 0)
		goto fail;
	rte_spinlock_lock(&qc->rx_lock);
	g_rx(qc, m, &pi);
	rte_spinlock_unlock(&qc->rx_lock);
	return 0;
fail:
	rte_pktmbuf_free(m);
	return -1;
}

void sw_h_poll(void)
{
	struct dpv_qctx *qc = &g_rt.ports[0].qctx[0];
	uint64_t until = rte_get_tsc_cycles() + rte_get_tsc_hz() / 1000000 * (2 * SW_TIMER_US);

	/* the scan runs at most every SW_TIMER_US: wait that long, without
	 * sleeping (a sleep on a loaded machine can last past SW_STARVED_US,
	 * and the engine would take the delay for its own starvation) */
	while (rte_get_tsc_cycles() < until)
		rte_pause();
	rte_spinlock_lock(&qc->rx_lock);
	g_poll(qc, rte_get_tsc_cycles());
	rte_spinlock_unlock(&qc->rx_lock);
}

uint64_t sw_h_drops(int reason)
{
	return DPV_STAT_READ(&g_rt.ports[0], drop[reason]);
}

/* ---- QPs ---- */

static struct ibv_context *open_dpv0(void)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx = NULL;

	for (int i = 0; list && list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), "dpv0"))
			ctx = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	return ctx;
}

int sw_h_access;
uint64_t sw_h_send_ops;

/* ibv_create_qp, or ibv_create_qp_ex with sw_h_send_ops */
static struct ibv_qp *qp_new(struct sw_h_qp *h, struct ibv_qp_init_attr *ia)
{
	if (!sw_h_send_ops)
		return ibv_create_qp(h->pd, ia);
	struct ibv_qp_init_attr_ex x = { .qp_type = ia->qp_type, .send_cq = ia->send_cq, .recv_cq = ia->recv_cq,
					 .cap = ia->cap, .pd = h->pd, .send_ops_flags = sw_h_send_ops,
					 .comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS };
	return ibv_create_qp_ex(h->ctx, &x);
}

int sw_h_qp_create(struct sw_h_qp *h, enum ibv_qp_type type, uint32_t rq_psn, uint32_t sq_psn,
		   uint8_t max_dest_rd_atomic, uint8_t min_rnr_timer, uint8_t retry_cnt,
		   uint8_t rnr_retry)
{
	const int access = sw_h_access ? sw_h_access : IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
						       IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
	struct ibv_qp_init_attr ia = { .qp_type = type,
				       .cap = { .max_send_wr = 64, .max_recv_wr = 64, .max_send_sge = 4,
						.max_recv_sge = 4, .max_inline_data = 64 } };
	struct ibv_qp_attr a;

	memset(h, 0, sizeof(*h));
	h->len = 1 << 20;
	h->ctx = open_dpv0();
	h->buf = aligned_alloc(4096, h->len);
	if (!h->ctx || !h->buf)
		return -1;
	memset(h->buf, 0, h->len);
	h->pd = ibv_alloc_pd(h->ctx);
	h->cq = h->pd ? ibv_create_cq(h->ctx, 256, NULL, NULL, 0) : NULL;
	h->mr = h->cq ? ibv_reg_mr(h->pd, h->buf, h->len, access) : NULL;
	if (!h->mr)
		return -1;
	ia.send_cq = ia.recv_cq = h->cq;
	h->qp = qp_new(h, &ia);
	if (!h->qp)
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = access;
	if (ibv_modify_qp(h->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			  IBV_QP_ACCESS_FLAGS))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = SW_H_PEER_QPN;
	a.rq_psn = rq_psn;
	a.max_dest_rd_atomic = max_dest_rd_atomic;
	a.min_rnr_timer = min_rnr_timer;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.hop_limit = 64;
	memcpy(a.ah_attr.grh.dgid.raw, sw_h_peer_gid, 16);
	int mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
	if (type == IBV_QPT_RC)
		mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
	if (ibv_modify_qp(h->qp, &a, mask))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = sq_psn;
	a.timeout = 14;
	a.retry_cnt = retry_cnt;
	a.rnr_retry = rnr_retry;
	a.max_rd_atomic = 16;
	mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
	if (type == IBV_QPT_RC)
		mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
	return ibv_modify_qp(h->qp, &a, mask) ? -1 : 0;
}

void sw_h_qp_destroy(struct sw_h_qp *h)
{
	if (h->qp)
		ibv_destroy_qp(h->qp);
	if (h->mr)
		ibv_dereg_mr(h->mr);
	if (h->cq)
		ibv_destroy_cq(h->cq);
	if (h->pd)
		ibv_dealloc_pd(h->pd);
	if (h->ctx)
		ibv_close_device(h->ctx);
	free(h->buf);
	memset(h, 0, sizeof(*h));
}

void sw_h_req(struct dpv_pkt_build *b, const struct sw_h_qp *h, uint8_t opcode, uint32_t psn)
{
	memset(b, 0, sizeof(*b));
	b->opcode = opcode;
	b->dqpn = h->qp->qp_num;
	b->psn = psn & DPV_PSN_MASK;
}

int sw_h_post_recv(struct sw_h_qp *h, uint64_t wr_id, uint32_t off, uint32_t len)
{
	struct ibv_sge sge = { .addr = (uintptr_t)h->buf + off, .length = len, .lkey = h->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 }, *bad;

	return ibv_post_recv(h->qp, &wr, &bad);
}

int sw_h_poll_cq(struct sw_h_qp *h, struct ibv_wc *wc)
{
	return ibv_poll_cq(h->cq, 1, wc);
}

enum ibv_qp_state sw_h_qp_state(const struct sw_h_qp *h)
{
	struct sw_qp *qp = sw_qp_lookup(h->qp->qp_num);

	return qp ? sw_qp_state(qp) : IBV_QPS_UNKNOWN;
}

void sw_h_expire_timers(const struct sw_h_qp *h)
{
	struct sw_qp *qp = sw_qp_lookup(h->qp->qp_num);

	if (!qp)
		return;
	/* A scan that finds the context starved (not polled for
	 * SW_STARVED_US: this process was descheduled) restarts the timer
	 * instead of retrying; try again until the timer really fired. */
	for (int i = 0; i < 100; i++) {
		sw_h_poll();
		sw_qp_lock(qp);
		uint8_t left = qp->comp.retry_left;
		bool timer = qp->comp.timer_deadline != 0, rnr = qp->comp.rnr_deadline != 0;
		if (timer)
			qp->comp.timer_deadline = 1;
		if (rnr)
			qp->comp.rnr_deadline = 1;
		sw_qp_unlock(qp);
		sw_h_poll();
		sw_qp_lock(qp);
		/* a timeout takes one retry, or with none left fails the QP */
		bool fired = (rnr && qp->comp.rnr_deadline != 1) ||
			     (timer && (left ? qp->comp.retry_left != left
					     : sw_qp_state(qp) != IBV_QPS_RTS));
		sw_qp_unlock(qp);
		if (fired || (!timer && !rnr))
			return;
	}
}
