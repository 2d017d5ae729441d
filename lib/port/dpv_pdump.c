/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The packet capture server of a dpverbs primary process (dpv_pdump.h).
 *
 * dpdk-dumpcap and dpdk-pdump are DPDK secondary processes: they ask the
 * primary, through EAL's multi-process action "mp_pdump", to copy what a
 * port's queues receive and send into a ring of theirs, and read the
 * capture statistics from the memzone "rte_pdump_stats". DPDK 22.11's
 * librte_pdump answers them with rte_pdump_init(), but its server has a
 * race (fixed upstream only in DPDK 25.11, "pdump: fix races in
 * callbacks"): on DISABLE it unlinks the ethdev callback and replies at
 * once, while a poll may still be inside the callback; the client then
 * frees its ring and mempool, and the poll dies in rte_pktmbuf_free_bulk
 * or rte_pcapng_copy. With dpverbs that was a SIGSEGV of the application
 * when dpdk-dumpcap ended during traffic, about one capture in six
 * (test/multi/tooling.sh).
 *
 * This server speaks the same requests, replies and statistics layout as
 * DPDK 22.11's (the request has not changed up to 25.07, but
 * rte_pcapng_copy has, so it is built for 22.x only; other DPDK versions use
 * rte_pdump_init) and closes the race with what the engine already
 * guarantees: every rte_eth_rx_burst of a context runs under its rx_lock
 * and every rte_eth_tx_burst under its tx_lock (dpv_engine.c). After the
 * unlink, taking and releasing that lock waits out the one burst that may
 * still see the callback; only then are the filter freed and the reply
 * sent. Captures are refused for ports and queues dpverbs does not run
 * (their bursts are not under those locks), and the server is not started
 * in a process whose EAL the application brought up (the application
 * may have ports of its own and call rte_pdump_init itself).
 *
 * The requests arrive on EAL's multi-process thread, one at a time; the
 * callbacks run on the polling threads.
 */
#define ALLOW_EXPERIMENTAL_API 1 /* rte_pcapng_copy is experimental in 22.11 */

#include <errno.h>
#include <stdint.h>
#include <string.h>

#include <rte_bpf.h>
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_log.h>
#include <rte_mbuf.h>
#include <rte_memzone.h>
#include <rte_pcapng.h>
#include <rte_pdump.h>
#include <rte_ring.h>
#include <rte_string_fns.h>
#include <rte_version.h>

#include "dpv_pdump.h"
#include "dpv_port.h"

RTE_LOG_REGISTER(dpv_pdump_logtype, lib.dpv.pdump, NOTICE);
#define PD_LOG(level, fmt, ...) \
	rte_log(RTE_LOG_##level, dpv_pdump_logtype, "dpverbs pdump: " fmt "\n", ##__VA_ARGS__)

#if RTE_VERSION >= RTE_VERSION_NUM(22, 11, 0, 0) && RTE_VERSION < RTE_VERSION_NUM(23, 0, 0, 0)
#define DPV_OWN_PDUMP 1
#else
#define DPV_OWN_PDUMP 0
#endif

#if DPV_OWN_PDUMP

#define PD_ACTION "mp_pdump"
#define PD_STATS_MZ "rte_pdump_stats"

/* The wire of the "mp_pdump" action (librte_pdump 22.11): one request, one
 * reply; pointers are the client's, valid here because both processes map
 * the same hugepage memory at the same addresses. */
enum { PD_DISABLE = 1, PD_ENABLE = 2 };
enum { PD_V1 = 1 /* plain copy */, PD_V2 = 2 /* pcapng blocks */ };

struct pd_request {
	uint16_t ver;
	uint16_t op;
	uint32_t flags;
	char device[RTE_DEV_NAME_MAX_LEN];
	uint16_t queue;
	struct rte_ring *ring;
	struct rte_mempool *mp;
	const struct rte_bpf_prm *prm;
	uint32_t snaplen;
};

struct pd_response {
	uint16_t ver;
	uint16_t res_op;
	int32_t err_value;
};

_Static_assert(sizeof(struct pd_request) <= RTE_MP_MAX_PARAM_LEN, "pdump request fits an IPC message");

/* The statistics memzone as the clients' rte_pdump_stats() reads it. */
struct pd_stats {
	struct rte_pdump_stats rx[RTE_MAX_ETHPORTS][RTE_MAX_QUEUES_PER_PORT];
	struct rte_pdump_stats tx[RTE_MAX_ETHPORTS][RTE_MAX_QUEUES_PER_PORT];
	const struct rte_memzone *mz;
};

/* One capture: a direction of one queue of one dpverbs port. */
struct pd_cap {
	const struct rte_eth_rxtx_callback *cb; /* NULL: not capturing */
	struct rte_ring *ring;
	struct rte_mempool *mp;
	struct rte_bpf *filter;
	struct rte_pdump_stats *stats;
	uint32_t snaplen;
	uint16_t ver;
	enum rte_pcapng_direction dir;
};

enum { PD_RX, PD_TX };

static struct pd_stats *g_stats;
static struct pd_cap g_caps[DPV_MAX_PORTS][DPV_MAX_QUEUES][2];

static void stat_add(uint64_t *c, uint64_t n)
{
	__atomic_fetch_add(c, n, __ATOMIC_RELAXED);
}

/* Copy a burst into the client's ring: what the filter accepts, cut to the
 * snap length, as a pcapng block (V2) or a plain mbuf (V1). */
static void cap_copy(const struct pd_cap *c, uint16_t port, uint16_t queue, struct rte_mbuf **pkts,
		     uint16_t n)
{
	struct rte_mbuf *dup[DPV_BURST];
	uint64_t rc[DPV_BURST];
	uint64_t ts = rte_get_tsc_cycles();

	for (uint16_t off = 0; off < n; off += DPV_BURST) {
		uint16_t m = (uint16_t)RTE_MIN(n - off, DPV_BURST), nd = 0;
		if (c->filter)
			rte_bpf_exec_burst(c->filter, (void **)&pkts[off], rc, m);
		for (uint16_t i = 0; i < m; i++) {
			if (c->filter && rc[i] == 0) {
				stat_add(&c->stats->filtered, 1);
				continue;
			}
			struct rte_mbuf *p = c->ver == PD_V2
				? rte_pcapng_copy(port, queue, pkts[off + i], c->mp, c->snaplen, ts, c->dir)
				: rte_pktmbuf_copy(pkts[off + i], c->mp, 0, c->snaplen);
			if (p == NULL)
				stat_add(&c->stats->nombuf, 1);
			else
				dup[nd++] = p;
		}
		stat_add(&c->stats->accepted, nd);
		unsigned int q = rte_ring_enqueue_burst(c->ring, (void **)dup, nd, NULL);
		if (q < nd) {
			stat_add(&c->stats->ringfull, nd - q);
			rte_pktmbuf_free_bulk(&dup[q], nd - q);
		}
	}
}

static uint16_t cap_rx(uint16_t port, uint16_t queue, struct rte_mbuf **pkts, uint16_t n, uint16_t max,
		       void *arg)
{
	(void)max;
	cap_copy(arg, port, queue, pkts, n);
	return n;
}

static uint16_t cap_tx(uint16_t port, uint16_t queue, struct rte_mbuf **pkts, uint16_t n, void *arg)
{
	cap_copy(arg, port, queue, pkts, n);
	return n;
}

/* Unlink a capture's callback, wait out a burst that may still run it,
 * then forget it. */
static int cap_stop(struct dpv_port *p, uint16_t q, int dir)
{
	struct pd_cap *c = &g_caps[p->index][q][dir];
	struct dpv_qctx *qc = &p->qctx[q];
	int r;

	if (c->cb == NULL)
		return -EINVAL;
	r = dir == PD_RX ? rte_eth_remove_rx_callback(p->eth_port, q, c->cb)
			 : rte_eth_remove_tx_callback(p->eth_port, q, c->cb);
	if (r != 0) {
		PD_LOG(ERR, "%s queue %u: cannot remove the %s callback: %s", p->name, q,
		       dir == PD_RX ? "rx" : "tx", strerror(-r));
		return r;
	}
	/* a burst that saw the callback runs under this lock: once we hold
	 * it, none does, and the next sees the unlinked list (the lock orders
	 * the unlink before it). rte_eth_remove_*_callback leaves the
	 * callback's own memory allocated, as its callers expect. */
	rte_spinlock_t *l = dir == PD_RX ? &qc->rx_lock : &qc->tx_lock;
	rte_spinlock_lock(l);
	rte_spinlock_unlock(l);
	if (c->filter)
		rte_bpf_destroy(c->filter);
	memset(c, 0, sizeof(*c));
	return 0;
}

static int cap_start(struct dpv_port *p, uint16_t q, int dir, const struct pd_request *req)
{
	struct pd_cap *c = &g_caps[p->index][q][dir];

	if (c->cb != NULL) {
		PD_LOG(ERR, "%s queue %u: %s already captured", p->name, q, dir == PD_RX ? "rx" : "tx");
		return -EEXIST;
	}
	if (req->prm != NULL && (c->filter = rte_bpf_load(req->prm)) == NULL) {
		PD_LOG(ERR, "cannot load the BPF filter: %s", rte_strerror(rte_errno));
		return -rte_errno;
	}
	c->ring = req->ring;
	c->mp = req->mp;
	c->snaplen = req->snaplen;
	c->ver = req->ver;
	c->dir = dir == PD_RX ? RTE_PCAPNG_DIRECTION_IN : RTE_PCAPNG_DIRECTION_OUT;
	c->stats = dir == PD_RX ? &g_stats->rx[p->eth_port][q] : &g_stats->tx[p->eth_port][q];
	memset(c->stats, 0, sizeof(*c->stats));
	/* the ethdev publishes the callback after its fields (release) */
	c->cb = dir == PD_RX ? rte_eth_add_first_rx_callback(p->eth_port, q, cap_rx, c)
			     : rte_eth_add_tx_callback(p->eth_port, q, cap_tx, c);
	if (c->cb == NULL) {
		int e = rte_errno ? rte_errno : EINVAL;
		PD_LOG(ERR, "%s queue %u: cannot add the %s callback: %s", p->name, q,
		       dir == PD_RX ? "rx" : "tx", rte_strerror(e));
		if (c->filter)
			rte_bpf_destroy(c->filter);
		memset(c, 0, sizeof(*c));
		return -e;
	}
	return 0;
}

static struct dpv_port *port_by_device(struct dpv_runtime *rt, const char *device)
{
	uint16_t eth;
	if (rte_eth_dev_get_port_by_name(device, &eth) != 0)
		return NULL;
	for (unsigned int i = 0; i < rt->n_ports; i++)
		if (rt->ports[i].eth_port == eth)
			return &rt->ports[i];
	return NULL;
}

static int pd_handle(const struct pd_request *req)
{
	struct dpv_runtime *rt = dpv_runtime_peek();
	char dev[RTE_DEV_NAME_MAX_LEN];
	struct dpv_port *p;
	int r = 0;

	if (req->ver != PD_V1 && req->ver != PD_V2) {
		PD_LOG(ERR, "client request version %u: not 1 or 2 (a DPDK other than 22.11?)", req->ver);
		return -EINVAL;
	}
	if (req->op != PD_ENABLE && req->op != PD_DISABLE) {
		PD_LOG(ERR, "unknown operation %u", req->op);
		return -EINVAL;
	}
	if ((req->flags & RTE_PDUMP_FLAG_RXTX) == 0)
		return -EINVAL;
	if (req->op == PD_ENABLE && (req->ring == NULL || req->mp == NULL))
		return -EINVAL;
	if (req->op == PD_ENABLE && req->prm != NULL && req->prm->prog_arg.type != RTE_BPF_ARG_PTR_MBUF) {
		PD_LOG(ERR, "BPF program argument type %u: not an mbuf", req->prm->prog_arg.type);
		return -EINVAL;
	}
	rte_strscpy(dev, req->device, sizeof(dev));
	if (rt == NULL)
		return -ENODEV;
	if ((p = port_by_device(rt, dev)) == NULL) {
		PD_LOG(ERR, "device %s: not a dpverbs port", dev);
		return -EINVAL;
	}
	uint16_t q0 = req->queue, q1 = (uint16_t)(req->queue + 1);
	if (req->queue == RTE_PDUMP_ALL_QUEUES) {
		q0 = 0;
		q1 = p->n_qctx;
	} else if (req->queue >= p->n_qctx) {
		PD_LOG(ERR, "%s: queue %u, the port has %u", p->name, req->queue, p->n_qctx);
		return -EINVAL;
	}
	/* the (direction, queue) pairs of the request, in order */
	int dirs[2], nd = 0;
	if (req->flags & RTE_PDUMP_FLAG_RX)
		dirs[nd++] = PD_RX;
	if (req->flags & RTE_PDUMP_FLAG_TX)
		dirs[nd++] = PD_TX;
	unsigned int nq = (unsigned int)(q1 - q0), n = (unsigned int)nd * nq;
	for (unsigned int k = 0; k < n; k++) {
		int dir = dirs[k / nq];
		uint16_t q = (uint16_t)(q0 + k % nq);
		if (req->op == PD_DISABLE) {
			int e = cap_stop(p, q, dir);
			r = r ? r : e; /* stop what can be stopped */
		} else if ((r = cap_start(p, q, dir, req)) != 0) {
			while (k-- > 0) /* all or nothing: undo what this request started */
				cap_stop(p, (uint16_t)(q0 + k % nq), dirs[k / nq]);
			return r;
		}
	}
	PD_LOG(INFO, "%s %s queues %u..%u, flags %#x: %d", req->op == PD_ENABLE ? "capture" : "end capture of",
	       p->name, q0, q1 - 1, req->flags, r);
	return r;
}

static int pd_server(const struct rte_mp_msg *msg, const void *peer)
{
	struct rte_mp_msg reply;
	struct pd_response *resp = (struct pd_response *)reply.param;

	memset(&reply, 0, sizeof(reply));
	if (msg->len_param != (int)sizeof(struct pd_request)) {
		PD_LOG(ERR, "request of %d bytes, want %zu", msg->len_param, sizeof(struct pd_request));
		resp->err_value = -EINVAL;
	} else {
		struct pd_request req;
		memcpy(&req, msg->param, sizeof(req));
		resp->ver = req.ver;
		resp->res_op = req.op;
		resp->err_value = pd_handle(&req);
	}
	rte_strscpy(reply.name, PD_ACTION, sizeof(reply.name));
	reply.len_param = sizeof(*resp);
	if (rte_mp_reply(&reply, peer) < 0) {
		PD_LOG(ERR, "cannot reply: %s", rte_strerror(rte_errno));
		return -1;
	}
	return 0;
}

static int pd_own_init(void)
{
	const struct rte_memzone *mz =
		rte_memzone_reserve(PD_STATS_MZ, sizeof(struct pd_stats), rte_socket_id(), 0);
	if (mz == NULL)
		return -rte_errno; /* EEXIST: the application runs librte_pdump */
	g_stats = mz->addr;
	memset(g_stats, 0, sizeof(*g_stats));
	g_stats->mz = mz;
	if (rte_mp_action_register(PD_ACTION, pd_server) != 0) {
		int e = rte_errno;
		rte_memzone_free(mz);
		g_stats = NULL;
		return -e;
	}
	return 0;
}
#endif /* DPV_OWN_PDUMP */

int dpv_pdump_init(const struct dpv_runtime *rt)
{
	int r;
	if (rte_eal_process_type() != RTE_PROC_PRIMARY)
		return 0; /* a secondary's primary has the server */
#if DPV_OWN_PDUMP
	if (rt->eal_ours) {
		r = pd_own_init();
		if (r != 0)
			PD_LOG(INFO, "capture server not started: %s", strerror(-r));
		return r;
	}
#endif
	r = rte_pdump_init() == 0 ? 0 : -rte_errno;
	if (r != 0)
		PD_LOG(INFO, "librte_pdump's capture server not started: %s", rte_strerror(-r));
	return r;
}
