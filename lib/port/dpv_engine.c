/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Engine contexts: RX burst, classification (ARP/ND vs RoCEv2), receive
 * checks that need no QP (parse, ICRC, destination), dispatch to the
 * transport, software loopback and transmission.
 */
#include <errno.h>
#include <pthread.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <linux/futex.h>

#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_launch.h>

#include "dpv_engine.h"
#include "dpv_fault.h"

uint64_t dpv_lo_trusted_flag;

static dpv_roce_rx_fn g_rx_fn;
static dpv_poll_fn g_poll_fn;
static bool g_lcore_mode;
static _Atomic bool g_stop;
/* application threads blocked in ibv_get_cq_event after driving progress,
 * and the word a parked assist thread waits on (bumped to wake it) */
static _Atomic int g_app_blocked;
static _Atomic uint32_t g_assist_wake;
static _Atomic bool g_assist_parked;
static pthread_t g_assist;
static bool g_assist_running;

void dpv_port_set_rx_handler(dpv_roce_rx_fn fn) { g_rx_fn = fn; }
void dpv_port_set_poll_handler(dpv_poll_fn fn) { g_poll_fn = fn; }
bool dpv_engine_lcore_mode(void) { return g_lcore_mode; }

/* The drop counter of each parse error, indexed by -enum dpv_parse_err. */
static const enum dpv_drop_reason parse_drop[DPV_PARSE_NERR] = {
	[-DPV_PARSE_NOT_ROCE] = DPV_DROP_NOT_ROCE,	[-DPV_PARSE_SHORT] = DPV_DROP_SHORT,
	[-DPV_PARSE_BAD_IP] = DPV_DROP_BAD_IP,		[-DPV_PARSE_BAD_UDP] = DPV_DROP_BAD_UDP,
	[-DPV_PARSE_BAD_OPCODE] = DPV_DROP_BAD_OPCODE,	[-DPV_PARSE_BAD_TVER] = DPV_DROP_BAD_TVER,
	[-DPV_PARSE_BAD_PAD] = DPV_DROP_BAD_PAD,	[-DPV_PARSE_BAD_ICRC] = DPV_DROP_BAD_ICRC,
};

/* Frames held by this thread for one context (dpv_port_tx_begin). */
struct tx_stage {
	struct dpv_qctx *qc;
	unsigned int depth;
	uint16_t n;
	struct rte_mbuf *m[DPV_BURST];
	uint32_t len[DPV_BURST];
};
static __thread struct tx_stage t_stage;

/* One burst of what the stage holds, retried a little on a full queue;
 * what does not fit is dropped (counted tx_full). */
static void stage_flush(struct tx_stage *t)
{
	struct dpv_qctx *qc = t->qc;
	struct dpv_port *p = qc->port;
	uint16_t n = t->n, sent;
	uint64_t bytes = 0;

	if (!n)
		return;
	t->n = 0;
	rte_spinlock_lock(&qc->tx_lock);
	sent = rte_eth_tx_burst(p->eth_port, qc->qid, t->m, n);
	for (unsigned int tries = 0; sent < n && tries < DPV_TX_RETRIES; tries++) {
		rte_pause();
		sent += rte_eth_tx_burst(p->eth_port, qc->qid, t->m + sent, n - sent);
	}
	rte_spinlock_unlock(&qc->tx_lock);
	for (uint16_t i = 0; i < sent; i++)
		bytes += t->len[i];
	DPV_STAT_ADD(p, tx_pkts, sent);
	DPV_STAT_ADD(p, tx_bytes, bytes);
	if (sent < n) {
		DPV_STAT_ADD(p, drop[DPV_DROP_TX_FULL], n - sent);
		rte_pktmbuf_free_bulk(t->m + sent, n - sent);
	}
}

void dpv_port_tx_begin(struct dpv_qctx *qc)
{
	if (!qc->port->tx_batch)
		return;
	if (t_stage.depth++ == 0)
		t_stage.qc = qc;
}

void dpv_port_tx_end(struct dpv_qctx *qc)
{
	if (!qc->port->tx_batch || !t_stage.depth)
		return;
	if (--t_stage.depth == 0)
		stage_flush(&t_stage);
}

void dpv_port_tx_push(struct dpv_qctx *qc)
{
	if (t_stage.depth && t_stage.qc == qc)
		stage_flush(&t_stage);
}

static int tx_one(struct dpv_qctx *qc, struct rte_mbuf *m)
{
	struct dpv_port *p = qc->port;
	uint32_t len = rte_pktmbuf_pkt_len(m);
	uint16_t n;

	if (!atomic_load_explicit(&p->link_up, memory_order_relaxed)) {
		/* lost on the wire: a reliable transport retransmits and, if
		 * the link stays down, exhausts retry_cnt as on hardware */
		DPV_STAT_ADD(p, drop[DPV_DROP_LINK_DOWN], 1);
		rte_pktmbuf_free(m);
		return 0;
	}
	if (t_stage.depth && t_stage.qc == qc) {
		if (t_stage.n == DPV_BURST)
			stage_flush(&t_stage);
		t_stage.len[t_stage.n] = len;
		t_stage.m[t_stage.n++] = m;
		return 0;
	}
	rte_spinlock_lock(&qc->tx_lock);
	n = rte_eth_tx_burst(p->eth_port, qc->qid, &m, 1);
	/* a full TX ring drains quickly (af_packet hands frames to the kernel,
	 * memif to the peer): try a little before giving up; the engine then
	 * stalls the QP and retries after this context's next receive burst
	 * (the peer may be waiting for us to drain our side) */
	for (unsigned int tries = 0; n != 1 && tries < DPV_TX_RETRIES; tries++) {
		rte_pause();
		n = rte_eth_tx_burst(p->eth_port, qc->qid, &m, 1);
	}
	rte_spinlock_unlock(&qc->tx_lock);
	if (n != 1) {
		DPV_STAT_ADD(p, drop[DPV_DROP_TX_FULL], 1);
		rte_pktmbuf_free(m);
		return -ENOBUFS;
	}
	DPV_STAT_ADD(p, tx_pkts, 1);
	DPV_STAT_ADD(p, tx_bytes, len);
	return 0;
}

int dpv_port_tx_frame(struct dpv_qctx *qc, struct rte_mbuf *m)
{
	return tx_one(qc, m);
}

int dpv_port_tx_raw(struct dpv_qctx *qc, struct rte_mbuf *m)
{
	struct rte_mbuf *dup;
	if (dpv_fault_tx(qc, &m, &dup))
		return 0; /* dropped by fault injection: lost on the wire */
	int r = tx_one(qc, m);
	if (dup)
		tx_one(qc, dup);
	return r;
}

static int lo_enqueue(struct dpv_port *p, struct dpv_qctx *lq, struct rte_mbuf *m)
{
	if (rte_ring_mp_enqueue(lq->lo_ring, m) != 0) {
		DPV_STAT_ADD(p, drop[DPV_DROP_TX_FULL], 1);
		rte_pktmbuf_free(m);
		return -ENOBUFS;
	}
	DPV_STAT_ADD(p, tx_loopback, 1);
	return 0;
}

struct dpv_port *dpv_port_loopback_dst(const uint8_t dgid[16])
{
	struct dpv_runtime *rt = dpv_runtime_peek();
	return rt && rt->conf.sw_loopback ? dpv_port_find_local_gid(dgid) : NULL;
}

int dpv_port_xmit_local(struct dpv_qctx *qc, struct dpv_port *lp, struct rte_mbuf *m)
{
	struct dpv_port *p = qc->port;
	uint8_t *eth = rte_pktmbuf_mtod(m, uint8_t *);
	struct dpv_qctx *lq = &lp->qctx[0];
	struct rte_mbuf *dup;

	DPV_STAT_ADD(p, tx_roce, 1);
	if (lp->n_qctx > 1) {
		/* to the context of the destination QP, as a NIC that could
		 * steer by BTH DestQP would deliver it */
		uint32_t bth = DPV_ETH_HLEN + DPV_UDP_HLEN +
			       ((eth[DPV_ETH_HLEN] >> 4) == 4 ? DPV_IPV4_HLEN : DPV_IPV6_HLEN);
		lq = dpv_port_qctx_of(lp, __bth_qpn(eth + bth));
	}
	memcpy(eth, lp->mac, 6);
	if (dpv_fault_tx(qc, &m, &dup))
		return 0; /* dropped by fault injection */
	int r = lo_enqueue(p, lq, m);
	if (dup)
		lo_enqueue(p, lq, dup);
	return r;
}

int dpv_port_xmit_remote(struct dpv_qctx *qc, struct rte_mbuf *m, const uint8_t dgid[16])
{
	struct dpv_port *p = qc->port;
	uint8_t *eth = rte_pktmbuf_mtod(m, uint8_t *);

	DPV_STAT_ADD(p, tx_roce, 1);
	uint8_t mac[6];
	int r = dpv_neigh_resolve_or_queue(qc, dgid, m, mac);
	if (r < 0)
		return r;
	if (r == 0)
		return 0; /* queued until the neighbour answers */
	memcpy(eth, mac, 6);
	return dpv_port_tx_raw(qc, m);
}

/* A multicast frame goes on the wire to the group's Ethernet address, and
 * a copy to the port itself (as a NIC loops multicast back to its own QPs
 * attached to the group); the engine delivers it to every attached QP. */
int dpv_port_xmit_mcast(struct dpv_qctx *qc, struct rte_mbuf *m, const uint8_t dgid[16])
{
	struct dpv_port *p = qc->port;
	uint8_t *eth = rte_pktmbuf_mtod(m, uint8_t *);
	struct rte_mbuf *lo = rte_pktmbuf_copy(m, m->pool, 0, UINT32_MAX);
	if (lo)
		dpv_port_xmit_local(qc, p, lo);
	else
		DPV_STAT_ADD(p, drop[DPV_DROP_NOMEM], 1);
	DPV_STAT_ADD(p, tx_roce, 1);
	dpv_gid_mcast_mac(dgid, eth);
	return dpv_port_tx_raw(qc, m);
}

static bool frame_for_us(const struct dpv_port *p, const struct dpv_pkt_info *pi)
{
	if (dpv_gid_is_mcast(pi->dgid)) {
		uint8_t mac[6];
		dpv_gid_mcast_mac(pi->dgid, mac);
		return !memcmp(pi->dst_mac, mac, 6) || !memcmp(pi->dst_mac, p->mac, 6);
	}
	if (memcmp(pi->dst_mac, p->mac, 6) != 0)
		return false;
	return dpv_port_gid_find(p, pi->dgid) >= 0;
}

static void rx_one(struct dpv_qctx *qc, struct rte_mbuf *m, bool from_lo)
{
	struct dpv_port *p = qc->port;
	struct dpv_pkt_info pi;
	const uint8_t *frame = rte_pktmbuf_mtod(m, const uint8_t *);
	uint32_t len = rte_pktmbuf_data_len(m);

	DPV_STAT_ADD(p, rx_pkts, 1);
	DPV_STAT_ADD(p, rx_bytes, len);
	if (m->nb_segs != 1) {
		/* frames larger than one mbuf are not expected at our MTU */
		if (rte_pktmbuf_linearize(m) != 0) {
			DPV_STAT_ADD(p, drop[DPV_DROP_SHORT], 1);
			rte_pktmbuf_free(m);
			return;
		}
		frame = rte_pktmbuf_mtod(m, const uint8_t *);
		len = rte_pktmbuf_data_len(m);
	}
	/* a port with an exception path: what is not RoCEv2 is the kernel's */
	if (p->exc.on && !from_lo && !dpv_pkt_is_roce(frame, len)) {
		dpv_exc_to_kernel(p, m);
		return;
	}
	if (!from_lo && dpv_neigh_rx(qc, m))
		return;
	int r = from_lo && (m->ol_flags & dpv_lo_trusted_flag)
		? dpv_pkt_parse_trusted(frame, len, &pi) : dpv_pkt_parse_check(frame, len, &pi);
	if (r != 0) {
		DPV_STAT_ADD(p, drop[parse_drop[-r]], 1);
		rte_pktmbuf_free(m);
		return;
	}
	if (!frame_for_us(p, &pi)) {
		DPV_STAT_ADD(p, drop[DPV_DROP_NOT_FOR_US], 1);
		rte_pktmbuf_free(m);
		return;
	}
	DPV_STAT_ADD(p, rx_roce, 1);
	if (from_lo)
		DPV_STAT_ADD(p, rx_loopback, 1);
	if (p->n_qctx > 1 && unlikely(dpv_port_qctx_of(p, pi.dqpn) != qc))
		DPV_STAT_ADD(p, rx_other_ctx, 1); /* handled here, under the QP's lock */
	if (!g_rx_fn) {
		DPV_STAT_ADD(p, drop[DPV_DROP_NO_QP], 1);
		rte_pktmbuf_free(m);
		return;
	}
	g_rx_fn(qc, m, &pi);
}

/* Must hold qc->rx_lock. */
static int qctx_poll_turn(struct dpv_qctx *qc, uint64_t now);

/* Must hold qc->rx_lock. What the turn sends (ACKs, responses, the
 * kernel's frames) leaves in bursts on ports where a burst is a system
 * call. */
static int qctx_poll_locked(struct dpv_qctx *qc, uint64_t now)
{
	dpv_port_tx_begin(qc);
	int n = qctx_poll_turn(qc, now);
	dpv_port_tx_end(qc);
	return n;
}

static int qctx_poll_turn(struct dpv_qctx *qc, uint64_t now)
{
	struct rte_mbuf *pkts[DPV_BURST];
	struct dpv_port *p = qc->port;
	int total = 0;
	uint16_t n;

	/* up to DPV_RX_BURSTS full bursts per turn, so that a context that
	 * receives faster than one burst per turn is not overrun */
	qc->rx_backlog = false;
	for (unsigned int b = 0; b < DPV_RX_BURSTS; b++) {
		n = rte_eth_rx_burst(p->eth_port, qc->qid, pkts, DPV_BURST);
		for (uint16_t i = 0; i < n; i++) {
			if (dpv_fault_rx(qc, &pkts[i]))
				continue;
			rx_one(qc, pkts[i], false);
		}
		total += n;
		if (n < DPV_BURST)
			break;
		qc->rx_backlog = b + 1 == DPV_RX_BURSTS;
	}
	for (unsigned int b = 0; b < DPV_RX_BURSTS; b++) {
		n = (uint16_t)rte_ring_sc_dequeue_burst(qc->lo_ring, (void **)pkts, DPV_BURST, NULL);
		for (uint16_t i = 0; i < n; i++) {
			if (dpv_fault_rx(qc, &pkts[i]))
				continue;
			rx_one(qc, pkts[i], true);
		}
		total += n;
		if (n < DPV_BURST)
			break;
	}
	if (unlikely(dpv_fault_enabled())) {
		struct rte_mbuf *held = dpv_fault_take_held(qc);
		if (held)
			rx_one(qc, held, false);
	}
	dpv_neigh_timer(qc, now);
	if (unlikely(p->exc.on))
		total += dpv_exc_poll(qc);
	if (g_poll_fn)
		total += g_poll_fn(qc, now);
	return total;
}

int dpv_qctx_poll(struct dpv_qctx *qc)
{
	int n;
	if (!rte_spinlock_trylock(&qc->rx_lock))
		return 0;
	uint64_t now = rte_get_tsc_cycles();
	atomic_store_explicit(&qc->last_poll_tsc, now, memory_order_relaxed);
	n = qctx_poll_locked(qc, now);
	rte_spinlock_unlock(&qc->rx_lock);
	return n;
}

/* The assist thread's poll: does not count as the application polling. */
static int dpv_qctx_poll_assist(struct dpv_qctx *qc)
{
	int n;
	if (!rte_spinlock_trylock(&qc->rx_lock))
		return 0;
	n = qctx_poll_locked(qc, rte_get_tsc_cycles());
	rte_spinlock_unlock(&qc->rx_lock);
	return n;
}

int dpv_progress_all(void)
{
	struct dpv_runtime *rt = dpv_runtime_peek();
	int n = 0;
	if (!rt || g_lcore_mode)
		return 0;
	for (unsigned int i = 0; i < rt->n_ports; i++)
		for (uint16_t q = 0; q < rt->ports[i].n_qctx; q++)
			n += dpv_qctx_poll(&rt->ports[i].qctx[q]);
	return n;
}

void dpv_engine_app_blocking(bool on)
{
	if (!on) {
		atomic_fetch_sub(&g_app_blocked, 1);
		return;
	}
	atomic_fetch_add(&g_app_blocked, 1);
	atomic_fetch_add(&g_assist_wake, 1);
	if (atomic_load(&g_assist_parked))
		syscall(SYS_futex, &g_assist_wake, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

/* One turn of the assist thread: poll the contexts the application has
 * not polled lately. Returns the packets processed; *app_driving tells
 * whether the application polled every context within idle. */
static int assist_turn(struct dpv_runtime *rt, uint64_t now, uint64_t idle, bool *app_driving)
{
	int busy = 0;
	*app_driving = true;
	for (unsigned int i = 0; i < rt->n_ports; i++)
		for (uint16_t q = 0; q < rt->ports[i].n_qctx; q++) {
			struct dpv_qctx *qc = &rt->ports[i].qctx[q];
			uint64_t last = atomic_load_explicit(&qc->last_poll_tsc, memory_order_relaxed);
			if (now - last >= idle) {
				*app_driving = false;
				busy += dpv_qctx_poll_assist(qc);
			}
		}
	return busy;
}

static void *assist_main(void *arg)
{
	struct dpv_runtime *rt = arg;
	uint64_t idle = rt->tsc_hz / 1000000 * DPV_ASSIST_IDLE_US;
	uint64_t spin = rt->tsc_hz / 1000000 * DPV_ASSIST_SPIN_US;
	const struct timespec nap = {0, DPV_ASSIST_IDLE_US * 1000};
	const struct timespec park = {0, DPV_ASSIST_PARK_US * 1000};
	uint64_t last_work = 0;

	pthread_setname_np(pthread_self(), "dpv-assist");
	prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0); /* sleep as asked, not +50 us */
	while (!atomic_load(&g_stop)) {
		uint32_t wake = atomic_load(&g_assist_wake);
		uint64_t now = rte_get_tsc_cycles();
		bool app_driving;
		/* a thread that drove the engine blocks for an event: every
		 * context is ours now, however recently it was polled */
		bool blocked = atomic_load(&g_app_blocked) > 0;
		int busy = assist_turn(rt, now, blocked ? 0 : idle, &app_driving);
		if (busy) {
			last_work = now;
			continue;
		}
		/* the application polls every context itself: one spinner is
		 * enough; look again much later, or as soon as a thread of
		 * the application blocks (dpv_engine_app_blocking) */
		if (app_driving && !blocked) {
			atomic_store(&g_assist_parked, true);
			syscall(SYS_futex, &g_assist_wake, FUTEX_WAIT_PRIVATE, wake, &park, NULL, 0);
			atomic_store(&g_assist_parked, false);
			continue;
		}
		/* keep polling while traffic flows (a peer that only spins on
		 * memory, as ib_write_lat's target does, still gets its ACKs
		 * and READ responses at once); sleep once it has been quiet */
		if (now - last_work > spin)
			nanosleep(&nap, NULL);
		else
			rte_pause();
	}
	return NULL;
}

/* The contexts one service lcore polls. */
struct lcore_work {
	struct dpv_qctx *qc[DPV_MAX_PORTS * DPV_MAX_QUEUES];
	unsigned int n;
};
static struct lcore_work g_work[RTE_MAX_LCORE];

static int lcore_main(void *arg)
{
	struct lcore_work *w = arg;
	while (!atomic_load(&g_stop)) {
		for (unsigned int i = 0; i < w->n; i++) {
			struct dpv_qctx *qc = w->qc[i];
			rte_spinlock_lock(&qc->rx_lock);
			uint64_t now = rte_get_tsc_cycles();
			atomic_store_explicit(&qc->last_poll_tsc, now, memory_order_relaxed);
			qctx_poll_locked(qc, now);
			rte_spinlock_unlock(&qc->rx_lock);
		}
	}
	return 0;
}

static pid_t g_engine_pid; /* the process that runs the ports */

static void engine_stop(void)
{
	/* a child of fork() inherits this atexit handler but not the engine:
	 * stopping the ports from it would tear down the parent's (the DPDK
	 * memory is shared) and join threads it does not have */
	if (getpid() != g_engine_pid)
		return;
	atomic_store(&g_stop, true);
	if (g_assist_running)
		pthread_join(g_assist, NULL);
	g_assist_running = false;
	if (g_lcore_mode)
		rte_eal_mp_wait_lcore();
	dpv_runtime_shutdown();
}

int dpv_engine_start(struct dpv_runtime *rt)
{
	dpv_fault_init(&rt->conf.fault);
	if (!dpv_fault_enabled()) {
		static const struct rte_mbuf_dynflag lo_flag = {.name = "dpv_lo_trusted"};
		int bit = rte_mbuf_dynflag_register(&lo_flag);
		dpv_lo_trusted_flag = bit >= 0 ? RTE_BIT64(bit) : 0;
	}
	if (rt->conf.progress == DPV_PROGRESS_LCORE) {
		/* the EAL lcores were made one per distinct CPU, in the order the
		 * configuration names the CPUs (dpv_port.c eal_up) */
		int cpu_of[RTE_MAX_LCORE];
		unsigned int n_lc = 0;
		for (unsigned int i = 0; i < rt->n_ports; i++) {
			const struct dpv_conf_port *cp = rt->ports[i].conf;
			for (uint16_t q = 0; q < rt->ports[i].n_qctx; q++) {
				int cpu = q < cp->n_lcores ? cp->lcores[q] : cp->lcores[0];
				unsigned int k;
				for (k = 0; k < n_lc; k++)
					if (cpu_of[k] == cpu)
						break;
				if (k == n_lc) {
					if (n_lc + 1 >= RTE_MAX_LCORE)
						return -ENODEV;
					cpu_of[n_lc++] = cpu;
				}
				struct lcore_work *w = &g_work[k + 1];
				struct dpv_qctx *qc = &rt->ports[i].qctx[q];
				qc->lcore = (int)k + 1;
				w->qc[w->n++] = qc;
			}
		}
		for (unsigned int k = 0; k < n_lc; k++)
			if (!rte_lcore_is_enabled(k + 1) || rte_eal_remote_launch(lcore_main, &g_work[k + 1], k + 1) != 0)
				return -EBUSY;
		g_lcore_mode = true;
	} else {
		if (pthread_create(&g_assist, NULL, assist_main, rt) != 0)
			return -errno;
		g_assist_running = true;
	}
	g_engine_pid = getpid();
	atexit(engine_stop);
	return 0;
}
