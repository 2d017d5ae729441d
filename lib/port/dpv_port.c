/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Runtime bring-up: configuration -> EAL -> ports -> engine contexts.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_eth_ring.h>
#include <rte_cycles.h>
#include <rte_lcore.h>
#include <rte_log.h>
#include <rte_malloc.h>
#include <rte_mempool.h>

#include "dpv_port.h"
#include "dpv_engine.h"
#include "dpv_fault.h"
#include "dpv_telemetry.h"
#include "dpv_nl.h"

const char *const dpv_drop_reason_names[DPV_DROP_NR] = {
	[DPV_DROP_NOT_ROCE] = "not_roce",
	[DPV_DROP_SHORT] = "short",
	[DPV_DROP_BAD_IP] = "bad_ip",
	[DPV_DROP_BAD_UDP] = "bad_udp",
	[DPV_DROP_BAD_OPCODE] = "bad_opcode",
	[DPV_DROP_BAD_TVER] = "bad_tver",
	[DPV_DROP_BAD_PAD] = "bad_pad",
	[DPV_DROP_BAD_ICRC] = "bad_icrc",
	[DPV_DROP_NOT_FOR_US] = "not_for_us",
	[DPV_DROP_NO_QP] = "no_qp",
	[DPV_DROP_QP_STATE] = "qp_state",
	[DPV_DROP_BAD_QKEY] = "bad_qkey",
	[DPV_DROP_BAD_PKEY] = "bad_pkey",
	[DPV_DROP_BAD_TRANSPORT] = "bad_transport",
	[DPV_DROP_NO_RECV_WQE] = "no_recv_wqe",
	[DPV_DROP_NEIGH] = "neigh",
	[DPV_DROP_TX_FULL] = "tx_full",
	[DPV_DROP_NOMEM] = "nomem",
	[DPV_DROP_FAULT] = "fault",
	[DPV_DROP_LINK_DOWN] = "link_down",
	[DPV_DROP_GSI_UNANSWERED] = "gsi_unanswered",
	[DPV_DROP_GSI_RATE_LIMITED] = "gsi_rate_limited",
};

const char *const dpv_cnt_names[DPV_CNT_NR] = {
	[DPV_CNT_SENT_PKTS] = "sent_pkts",
	[DPV_CNT_RCVD_PKTS] = "rcvd_pkts",
	[DPV_CNT_DUP_REQ] = "duplicate_request",
	[DPV_CNT_OOS_REQ] = "out_of_seq_request",
	[DPV_CNT_RNR_NAK_SENT] = "send_rnr_nak",
	[DPV_CNT_RNR_NAK_RCVD] = "rcvd_rnr_nak",
	[DPV_CNT_SEQ_NAK_SENT] = "send_seq_nak",
	[DPV_CNT_SEQ_NAK_RCVD] = "rcvd_seq_err",
	[DPV_CNT_RETRY] = "completer_retry_err",
	[DPV_CNT_RETRY_EXC] = "retry_exceeded_err",
	[DPV_CNT_RNR_RETRY_EXC] = "retry_rnr_exceeded_err",
	[DPV_CNT_ACK_DEFERRED] = "ack_deferred",
	[DPV_CNT_ACK_SENT] = "ack_sent",
	[DPV_CNT_ACK_RCVD] = "ack_rcvd",
	[DPV_CNT_NAK_SENT] = "nak_sent",
	[DPV_CNT_NAK_RCVD] = "nak_rcvd",
	[DPV_CNT_DUP_RESP] = "duplicate_response",
	[DPV_CNT_PROBE] = "tail_loss_probe",
	[DPV_CNT_CM_FALLBACK_REPLY] = "cm_fallback_reply",
	[DPV_CNT_CQ_OVERRUN] = "cq_overrun",
};

RTE_LOG_REGISTER(dpv_port_logtype, lib.dpv.port, NOTICE);

static struct dpv_runtime g_rt;

__thread unsigned int dpv_stat_tslot __attribute__((tls_model("initial-exec")));

unsigned int dpv_stat_slot_assign(void)
{
	static _Atomic unsigned int next = 1;
	unsigned int s = atomic_fetch_add(&next, 1);
	if (s >= DPV_STAT_SLOTS)
		s = DPV_STAT_SHARED;
	dpv_stat_tslot = s + 1;
	return s;
}
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static _Atomic(struct dpv_runtime *) g_rt_ready;

uint8_t dpv_eth_mtu_to_ib(uint16_t eth_mtu, uint8_t ip_ver)
{
	/* IP + UDP + BTH + largest ext header set + ICRC must fit (IBA A16/A17) */
	uint32_t ovh = (ip_ver == 6 ? DPV_IPV6_HLEN : DPV_IPV4_HLEN) + DPV_UDP_HLEN +
		       DPV_BTH_LEN + DPV_RETH_LEN + DPV_IMMDT_LEN + DPV_ICRC_LEN + 4 /* XRCETH */;
	uint8_t ib = 0;
	for (uint8_t m = 1; m <= 5; m++) /* IBV_MTU_256 .. IBV_MTU_4096 */
		if ((128u << m) + ovh <= eth_mtu)
			ib = m;
	return ib ? ib : 1;
}

/* The table is derived from the configuration and the MAC in lib/conf
 * (dpv_conf_gid.c), the same code the sysfs view (apps/dpv_sysfs) uses;
 * a port that follows its kernel interface's addresses builds it from
 * them instead (dpv_kif_sync). */
static void build_gid_table(struct dpv_port *p)
{
	struct dpv_gid_entry tbl[DPV_GID_TABLE_LEN];
	dpv_conf_gid_table(p->conf, p->mac, tbl);
	dpv_port_gid_set(p, tbl, p->conf->ipv4, p->conf->ipv4_prefix, p->mac);
	/* rxe exposes a fixed-size table; empty entries read back as zero GIDs */
	p->n_gids = DPV_GID_TABLE_LEN;
}

/* Readers of the table retry while a writer is inside (odd sequence) or
 * has been since they started; writers are serialised by the caller. */
static inline uint32_t gid_read_begin(const struct dpv_port *p)
{
	uint32_t s;
	while ((s = atomic_load_explicit(&p->gid_seq, memory_order_acquire)) & 1)
		rte_pause();
	return s;
}

static inline bool gid_read_retry(const struct dpv_port *p, uint32_t s)
{
	atomic_thread_fence(memory_order_acquire);
	return atomic_load_explicit(&p->gid_seq, memory_order_relaxed) != s;
}

bool dpv_port_gid_set(struct dpv_port *p, const struct dpv_gid_entry tbl[DPV_GID_TABLE_LEN],
		      struct in_addr ipv4, uint8_t ipv4_prefix, const uint8_t mac[6])
{
	bool same = !memcmp(p->gids, tbl, sizeof(p->gids)) && p->ipv4.s_addr == ipv4.s_addr &&
		    p->ipv4_prefix == ipv4_prefix && !memcmp(p->mac, mac, 6);
	if (same)
		return false;
	uint32_t s = atomic_load_explicit(&p->gid_seq, memory_order_relaxed);
	atomic_store_explicit(&p->gid_seq, s + 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
	memcpy(p->gids, tbl, sizeof(p->gids));
	p->ipv4 = ipv4;
	p->ipv4_prefix = ipv4_prefix;
	memmove(p->mac, mac, 6);
	atomic_store_explicit(&p->gid_seq, s + 2, memory_order_release);
	return true;
}

uint16_t dpv_port_lid(const struct dpv_port *p)
{
	if (p->conf->lid_off)
		return 0;
	uint32_t s, a;
	uint8_t pfx;
	do {
		s = gid_read_begin(p);
		a = p->ipv4.s_addr;
		pfx = p->ipv4_prefix;
	} while (gid_read_retry(p, s));
	return dpv_conf_lid_of(a, pfx);
}

bool dpv_port_gid_get(const struct dpv_port *p, unsigned int idx, struct dpv_gid_entry *out)
{
	if (idx >= DPV_GID_TABLE_LEN)
		return false;
	uint32_t s;
	do {
		s = gid_read_begin(p);
		*out = p->gids[idx];
	} while (gid_read_retry(p, s));
	return true;
}

static int gid_find_once(const struct dpv_port *port, const uint8_t gid[16])
{
	/* an IPv4-mapped GID can only be entry 1, the port's IPv4 address
	 * (the others are link-local and IPv6) */
	if (dpv_gid_is_v4mapped(gid))
		return port->ipv4.s_addr && port->gids[1].valid && !memcmp(gid + 12, &port->ipv4, 4) ? 1 : -1;
	for (unsigned int i = 0; i < DPV_GID_TABLE_LEN; i++)
		if (port->gids[i].valid && !memcmp(port->gids[i].gid, gid, 16))
			return (int)i;
	return -1;
}

int dpv_port_gid_find(const struct dpv_port *port, const uint8_t gid[16])
{
	uint32_t s;
	int r;
	do {
		s = gid_read_begin(port);
		r = gid_find_once(port, gid);
	} while (gid_read_retry(port, s));
	return r;
}

struct dpv_port *dpv_port_find_local_gid(const uint8_t gid[16])
{
	struct dpv_runtime *rt = atomic_load(&g_rt_ready);
	if (!rt)
		return NULL;
	for (unsigned int i = 0; i < rt->n_ports; i++)
		if (dpv_port_gid_find(&rt->ports[i], gid) >= 0)
			return &rt->ports[i];
	return NULL;
}

struct dpv_port *dpv_port_by_name(const char *name)
{
	struct dpv_runtime *rt = atomic_load(&g_rt_ready);
	if (!rt)
		return NULL;
	for (unsigned int i = 0; i < rt->n_ports; i++)
		if (!strcmp(rt->ports[i].name, name))
			return &rt->ports[i];
	return NULL;
}

struct rte_mbuf *dpv_port_alloc_mbuf(struct dpv_port *port)
{
	return rte_pktmbuf_alloc(port->pool);
}

/* Stop and close a port's ethdev. An AF_XDP port's program is held by our
 * bpf_link: net_af_xdp's own detach at close fails on it (quietly), and
 * the program leaves with the link (dpv_xdp_release). */
static void port_close(struct dpv_port *p)
{
	if (p->conf->type != DPV_DEV_AF_XDP) {
		rte_eth_dev_stop(p->eth_port);
		rte_eth_dev_close(p->eth_port);
		return;
	}
	int lvl = rte_log_get_level(rte_log_register("pmd.net.af_xdp"));
	rte_log_set_level_pattern("pmd.net.af_xdp", RTE_LOG_CRIT);
	rte_eth_dev_stop(p->eth_port);
	rte_eth_dev_close(p->eth_port);
	if (lvl > 0)
		rte_log_set_level_pattern("pmd.net.af_xdp", (uint32_t)lvl);
	dpv_xdp_release(p);
}

void dpv_runtime_shutdown(void)
{
	struct dpv_runtime *rt = atomic_exchange(&g_rt_ready, NULL);
	if (!rt)
		return;
	dpv_exc_drain(rt);
	dpv_link_stop(rt);
	dpv_kif_monitor_stop();
	for (unsigned int i = 0; i < rt->n_ports; i++) {
		const struct dpv_conf_port *cp = rt->ports[i].conf;
		dpv_exc_stop(&rt->ports[i]);
		char sock[DPV_DEVARGS_MAX];
		if (cp->type == DPV_DEV_VDEV && !strncmp(cp->devargs, "net_memif", 9)) {
			/* DPDK 22.11's memif tears its state down from the EAL
			 * interrupt thread when the peer disconnects; stopping the
			 * port here as well races with it (double free, SIGSEGV at
			 * exit). Leave the port to process exit, remove its socket. */
			if (dpv_memif_socket_path(cp, true, sock, sizeof(sock)))
				unlink(sock);
			continue;
		}
		dpv_raw_port_teardown(&rt->ports[i]);
		dpv_flow_port_teardown(&rt->ports[i]);
		port_close(&rt->ports[i]);
	}
	/* no rte_eal_cleanup(): other EAL threads (interrupts, memif) may still
	 * run at exit; the process' memory goes with it. Remove our runtime
	 * directory so that nothing is left in /var/run/dpdk. */
	if (rt->eal_ours && rt->runtime_dir[0] && !strncmp(rt->runtime_dir, "/var/run/dpdk/", 14))
		dpv_rm_tree(rt->runtime_dir);
}

static int find_eth_port(struct dpv_runtime *rt, const struct dpv_conf_port *cp, uint16_t *out)
{
	uint16_t pid;
	if (cp->type == DPV_DEV_VDEV) {
		char name[DPV_DEVARGS_MAX];
		snprintf(name, sizeof(name), "%s", cp->devargs);
		char *comma = strchr(name, ',');
		if (comma)
			*comma = 0;
		if (rte_eth_dev_get_port_by_name(name, &pid) == 0) {
			*out = pid;
			return 0;
		}
		dpv_runtime_fail(rt, ENODEV, "%s: port %s: DPDK device %s not found", rt->conf.source, cp->name, name);
		return -1;
	}
	if (cp->type == DPV_DEV_PCI) {
		char addr[DPV_DEVARGS_MAX];
		snprintf(addr, sizeof(addr), "%s", cp->devargs);
		char *comma = strchr(addr, ',');
		if (comma)
			*comma = 0;
		RTE_ETH_FOREACH_DEV(pid) {
			struct rte_eth_dev_info info;
			if (rte_eth_dev_info_get(pid, &info) == 0 && info.device &&
			    strstr(rte_dev_name(info.device), addr)) {
				*out = pid;
				return 0;
			}
		}
		dpv_runtime_fail(rt, ENODEV, "%s: port %s: PCI device %s not found", rt->conf.source, cp->name, addr);
		return -1;
	}
	return -1;
}

/* Ring pairs: both ends are created when the first of the two is set up. */
static int make_ring_pair(struct dpv_runtime *rt, unsigned int pi)
{
	struct dpv_conf *c = &rt->conf;
	const struct dpv_conf_port *cp = &c->ports[pi];
	unsigned int peer = 0;
	char n1[64], n2[64];
	for (peer = 0; peer < c->n_ports; peer++)
		if (!strcmp(c->ports[peer].name, cp->peer))
			break;
	if (peer == c->n_ports) {
		dpv_runtime_fail(rt, EINVAL, "%s: ports[%u].device.peer: no port %s", c->source, pi, cp->peer);
		return -1;
	}
	if (peer < pi)
		return 0; /* made with the peer */
	unsigned int nq = cp->n_queues;
	struct rte_ring *a[DPV_MAX_QUEUES], *b[DPV_MAX_QUEUES];
	for (unsigned int q = 0; q < nq; q++) {
		snprintf(n1, sizeof(n1), "dpv_w_%s_%u", cp->name, q);
		snprintf(n2, sizeof(n2), "dpv_w_%s_%u", cp->peer, q);
		a[q] = rte_ring_create(n1, 4096, (int)rte_socket_id(), RING_F_SP_ENQ | RING_F_SC_DEQ);
		b[q] = rte_ring_create(n2, 4096, (int)rte_socket_id(), RING_F_SP_ENQ | RING_F_SC_DEQ);
		if (!a[q] || !b[q]) {
			dpv_runtime_fail(rt, ENOMEM, "cannot create ring pair %s: %s", n1, rte_strerror(rte_errno));
			return -1;
		}
	}
	/* port pi receives from a, sends into b; the peer the other way round */
	int e1 = rte_eth_from_rings(cp->name, a, nq, b, nq, (unsigned int)rte_socket_id());
	int e2 = rte_eth_from_rings(c->ports[peer].name, b, nq, a, nq, (unsigned int)rte_socket_id());
	if (e1 < 0 || e2 < 0) {
		dpv_runtime_fail(rt, ENODEV, "cannot create net_ring pair %s/%s: %s", cp->name, cp->peer,
		     rte_strerror(rte_errno));
		return -1;
	}
	rt->ports[pi].eth_port = (uint16_t)e1;
	rt->ports[peer].eth_port = (uint16_t)e2;
	return 0;
}

/* The MTU the port starts with: the configured one, or an AF_XDP port's
 * interface's when "mtu" is not given. */
static uint32_t port_target_mtu(const struct dpv_port *p)
{
	const struct dpv_conf_port *cp = p->conf;
	struct dpv_nl_link l;
	if (p->kif.follow_mtu && dpv_nl_link_by_index(p->kif.ifindex, &l) == 0 && l.mtu >= DPV_CONF_MIN_MTU)
		return RTE_MIN(l.mtu, (uint32_t)DPV_CONF_MAX_MTU);
	return cp->mtu;
}

/* Queues, offloads and the mbuf pool of one port. */
static int port_configure(struct dpv_runtime *rt, struct dpv_port *p)
{
	const struct dpv_conf_port *cp = p->conf;
	struct rte_eth_conf ec;
	struct rte_eth_dev_info info;
	char name[64];
	int r;

	r = rte_eth_dev_info_get(p->eth_port, &info);
	if (r) {
		dpv_runtime_fail(rt, -r, "port %s: dev_info: %s", p->name, rte_strerror(-r));
		return -1;
	}
	snprintf(p->pmd_name, sizeof(p->pmd_name), "%s", info.driver_name ? info.driver_name : "?");
	/* their transmit burst is a system call: batch (dpv_port_tx_begin) */
	p->tx_batch = !strcmp(p->pmd_name, "net_af_xdp") || !strcmp(p->pmd_name, "net_af_packet");
	uint16_t nq = cp->n_queues;
	if (nq > info.max_rx_queues || nq > info.max_tx_queues) {
		dpv_runtime_fail(rt, EINVAL, "%s: port %s: queues: %u requested, PMD %s supports %u",
				 rt->conf.source, p->name, nq, info.driver_name,
				 RTE_MIN(info.max_rx_queues, info.max_tx_queues));
		return -1;
	}
	memset(&ec, 0, sizeof(ec));
	/* Use the PMD's IPv4 checksum offload where it has it. */
	if (info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_IPV4_CKSUM) {
		ec.txmode.offloads |= RTE_ETH_TX_OFFLOAD_IPV4_CKSUM;
		p->tx_ip_cksum_offload = true;
	}
	if (info.rx_offload_capa & RTE_ETH_RX_OFFLOAD_IPV4_CKSUM)
		ec.rxmode.offloads |= RTE_ETH_RX_OFFLOAD_IPV4_CKSUM;
	if (info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_MULTI_SEGS)
		ec.txmode.offloads |= RTE_ETH_TX_OFFLOAD_MULTI_SEGS;
	/* isolation is set before the port is configured (mlx5 requires it) */
	char msg[sizeof(rt->init_msg)];
	r = dpv_flow_port_isolate(p, msg, sizeof(msg));
	if (r) {
		dpv_runtime_fail(rt, -r, "%s", msg);
		return -1;
	}
	r = rte_eth_dev_configure(p->eth_port, nq, nq, &ec);
	if (r) {
		dpv_runtime_fail(rt, -r, "port %s: configure: %s", p->name, rte_strerror(-r));
		return -1;
	}
	uint16_t nrx = cp->rx_desc, ntx = cp->tx_desc;
	rte_eth_dev_adjust_nb_rx_tx_desc(p->eth_port, &nrx, &ntx);

	/* mbufs sized for one frame of the port MTU; an AF_XDP port's mbufs
	 * are its UMEM's frames, which must fit a page: DPDK's 2048 bytes of
	 * data (its MTU is then at most what net_af_xdp receives, below) */
	uint32_t mtu = port_target_mtu(p);
	uint32_t room = RTE_PKTMBUF_HEADROOM + (cp->type == DPV_DEV_AF_XDP ? 2048u : RTE_MAX(mtu + 64u, 2048u));
	p->mtu_cap = (uint16_t)RTE_MIN(room - RTE_PKTMBUF_HEADROOM - 64u, (uint32_t)DPV_CONF_MAX_MTU);
	if (info.max_rx_pktlen > RTE_ETHER_HDR_LEN + RTE_ETHER_CRC_LEN &&
	    info.max_rx_pktlen - RTE_ETHER_HDR_LEN - RTE_ETHER_CRC_LEN < p->mtu_cap)
		p->mtu_cap = (uint16_t)(info.max_rx_pktlen - RTE_ETHER_HDR_LEN - RTE_ETHER_CRC_LEN);
	int socket = rte_eth_dev_socket_id(p->eth_port) < 0 ? (int)rte_socket_id()
							     : rte_eth_dev_socket_id(p->eth_port);
	snprintf(name, sizeof(name), "dpv_pool_%s", p->name);
	p->pool = rte_pktmbuf_pool_create(name, cp->mbufs, 256, 0, (uint16_t)room, socket);
	if (!p->pool) {
		dpv_runtime_fail(rt, ENOMEM, "port %s: cannot create mbuf pool (%u mbufs): %s", p->name,
				 cp->mbufs, rte_strerror(rte_errno));
		return -1;
	}
	for (uint16_t q = 0; q < nq; q++) {
		r = rte_eth_rx_queue_setup(p->eth_port, q, nrx, (unsigned int)socket, NULL, p->pool);
		if (!r)
			r = rte_eth_tx_queue_setup(p->eth_port, q, ntx, (unsigned int)socket, NULL);
		if (r) {
			dpv_runtime_fail(rt, -r, "port %s: queue %u setup: %s", p->name, q, rte_strerror(-r));
			return -1;
		}
	}
	return 0;
}

/* MAC (configured or the PMD's), MTU, and the frames the port accepts. */
static int port_set_addr(struct dpv_runtime *rt, struct dpv_port *p)
{
	const struct dpv_conf_port *cp = p->conf;
	struct rte_ether_addr ea;
	int r;

	if (cp->type == DPV_DEV_AF_XDP) {
		/* the kernel's interface: its MAC, its MTU, never promiscuous */
		rte_eth_macaddr_get(p->eth_port, &ea);
		memcpy(p->mac, ea.addr_bytes, 6);
		p->mtu = (uint16_t)RTE_MIN(port_target_mtu(p), (uint32_t)p->mtu_cap);
		return 0;
	}
	if (cp->mac_set) {
		memcpy(ea.addr_bytes, cp->mac, 6);
		r = rte_eth_dev_default_mac_addr_set(p->eth_port, &ea);
		if (r && r != -ENOTSUP) {
			dpv_runtime_fail(rt, -r, "port %s: cannot set MAC: %s", p->name, rte_strerror(-r));
			return -1;
		}
		memcpy(p->mac, cp->mac, 6);
	} else {
		rte_eth_macaddr_get(p->eth_port, &ea);
		memcpy(p->mac, ea.addr_bytes, 6);
	}
	p->mtu = cp->mtu;
	r = rte_eth_dev_set_mtu(p->eth_port, cp->mtu);
	if (r && r != -ENOTSUP && r != -EINVAL) {
		dpv_runtime_fail(rt, -r, "port %s: cannot set MTU %u: %s", p->name, cp->mtu, rte_strerror(-r));
		return -1;
	}
	/* receive our unicast MAC; multicast for IPv6 ND */
	rte_eth_promiscuous_enable(p->eth_port);
	rte_eth_allmulticast_enable(p->eth_port);
	return 0;
}

/* rte_eth_dev_start; a net_memif client cannot start before its server has
 * created the socket: it waits for it (DPV_MEMIF_WAIT_MS). */
static int port_dev_start(struct dpv_runtime *rt, struct dpv_port *p)
{
	int r = rte_eth_dev_start(p->eth_port);
	bool memif_client = dpv_port_is_memif(p, "role=client");
	for (unsigned int waited = 0; r && memif_client && waited < DPV_MEMIF_WAIT_MS; waited += 100) {
		if (waited == 0)
			fprintf(stderr, "dpverbs: port %s: waiting for the memif server (up to %u s)\n", p->name,
				DPV_MEMIF_WAIT_MS / 1000);
		usleep(100 * 1000);
		r = rte_eth_dev_start(p->eth_port);
	}
	if (r) {
		dpv_runtime_fail(rt, -r, "port %s: start: %s%s", p->name, rte_strerror(-r),
				 memif_client ? " (no memif server: start the server side first)" : "");
		return -1;
	}
	/* the link state itself is the link monitor's (dpv_link.c) */
	struct rte_eth_link link;
	memset(&link, 0, sizeof(link));
	rte_eth_link_get_nowait(p->eth_port, &link);
	p->eth_speed_mbps = link.link_speed && link.link_speed != RTE_ETH_SPEED_NUM_UNKNOWN
			    ? link.link_speed : DPV_NOMINAL_SPEED_MBPS;
	return 0;
}

/* Engine contexts: one per RX/TX queue pair, with its loopback and doorbell rings. */
static int port_contexts(struct dpv_runtime *rt, struct dpv_port *p)
{
	char name[64];
	p->n_qctx = p->conf->n_queues;
	for (uint16_t q = 0; q < p->n_qctx; q++) {
		struct dpv_qctx *qc = &p->qctx[q];
		qc->port = p;
		qc->qid = q;
		rte_spinlock_init(&qc->rx_lock);
		rte_spinlock_init(&qc->tx_lock);
		qc->lcore = -1;
		snprintf(name, sizeof(name), "dpv_lo_%s_%u", p->name, q);
		qc->lo_ring = rte_ring_create(name, 4096, (int)rte_socket_id(), RING_F_SC_DEQ);
		snprintf(name, sizeof(name), "dpv_db_%s_%u", p->name, q);
		qc->db_ring = rte_ring_create(name, 8192, (int)rte_socket_id(), RING_F_SC_DEQ);
		if (!qc->lo_ring || !qc->db_ring) {
			dpv_runtime_fail(rt, ENOMEM, "port %s: cannot create rings", p->name);
			return -1;
		}
	}
	return 0;
}

static int port_start(struct dpv_runtime *rt, struct dpv_port *p)
{
	if (port_configure(rt, p) || port_set_addr(rt, p) || port_dev_start(rt, p))
		return -1;
	p->active_mtu = dpv_eth_mtu_to_ib(p->mtu, 6);
	p->path_mtu_bytes = 128u << p->active_mtu;
	build_gid_table(p);
	rte_spinlock_init(&p->neigh_lock);
	rte_spinlock_init(&p->raw_lock);
	/* an AF_XDP port: the interface's addresses, link and MTU, then the
	 * program's address map and the link that holds it */
	if (p->kif.ifindex && dpv_kif_sync(p, true) != 0) {
		dpv_runtime_fail(rt, ENODEV, "port %s: cannot read interface %s", p->name, p->kif.name);
		return -1;
	}
	if (p->conf->type == DPV_DEV_AF_XDP && dpv_xdp_attach(rt, p))
		return -1;
	/* the rules match the GIDs: after the table, once the port runs */
	char msg[sizeof(rt->init_msg)];
	int r = dpv_flow_port_setup(p, msg, sizeof(msg));
	if (r) {
		dpv_runtime_fail(rt, -r, "%s", msg);
		return -1;
	}
	if (port_contexts(rt, p))
		return -1;
	return p->conf->kernel_iface[0] ? dpv_exc_start(rt, p) : 0;
}

/* A memif client's connection is made by its start and completed by EAL's
 * interrupt thread: wait for the link, so that the process does not run
 * (or exit) in the middle of the handshake and its first frames are not
 * lost; the link monitor reconnects a client its server turned away.
 * A tap device and a PCI NIC come up because this process started them
 * (net_tap sets the interface up and attaches its queues; a NIC
 * autonegotiates), but their link reads down for a while: the kernel
 * reports a tap RUNNING only once its link watch has run (up to a second
 * later, more on a loaded machine). Until then every frame would be
 * dropped as link_down: an RC QP that sends at once (ibv_rc_pingpong's
 * client does) exhausts its 7 retries within half a second. Wait for
 * those links too, as DPDK's own applications wait after a start. */
static unsigned int link_start_wait_ms(const struct dpv_port *p)
{
	if (dpv_port_is_memif(p, "role=client"))
		return DPV_MEMIF_WAIT_MS;
	if (p->conf->type == DPV_DEV_PCI ||
	    (p->conf->type == DPV_DEV_VDEV && !strncmp(p->conf->devargs, "net_tap", 7)))
		return DPV_LINK_START_WAIT_MS;
	return 0; /* ring, null: up at once; af_packet, AF_XDP, a memif server: a peer's doing */
}

static void links_wait(struct dpv_runtime *rt)
{
	for (unsigned int i = 0; i < rt->n_ports; i++) {
		struct dpv_port *p = &rt->ports[i];
		unsigned int ms = link_start_wait_ms(p);
		if (!ms || dpv_link_wait(p, 200))
			continue;
		DPV_PORT_LOG(NOTICE, "port %s: waiting for the %s link (up to %u s)", p->name,
			     dpv_port_is_memif(p, NULL) ? "memif" : "port's", ms / 1000);
		if (!dpv_link_wait(p, ms))
			DPV_PORT_LOG(WARNING, "port %s: link still down after %u s: frames are dropped "
				     "until it comes up%s", p->name, ms / 1000,
				     dpv_port_is_memif(p, NULL) ? "; the client reconnects every second" : "");
	}
}

static const struct dpv_conf *g_start_conf;

/* A child of fork() does not run the ports (dpv_core.c refuses it the
 * devices): it lets go of what would keep them alive after the parent, the
 * bpf_link holding an AF_XDP port's program. */
static void port_atfork_child(void)
{
	struct dpv_runtime *rt = atomic_load(&g_rt_ready);
	for (unsigned int i = 0; rt && i < rt->n_ports; i++)
		if (rt->ports[i].conf->type == DPV_DEV_AF_XDP)
			dpv_xdp_forget(&rt->ports[i]);
}

static void runtime_init(void)
{
	struct dpv_runtime *rt = &g_rt;
	char err[1024];

	rt->conf = *g_start_conf;
	/* set-up fallback: no hugepages could be reserved on this machine */
	const char *fs = getenv("DPVERBS_FAULT");
	if (fs && *fs && dpv_fault_parse_env(fs, &rt->conf.fault, err, sizeof(err))) {
		dpv_runtime_fail(rt, EINVAL, "%s", err);
		return;
	}
	const char *h = getenv("DPVERBS_HUGEPAGES");
	if (h && !strcmp(h, "0"))
		rt->conf.huge = false;
	if (dpv_eal_up(rt))
		return;
	pthread_atfork(NULL, NULL, port_atfork_child);
	dpv_telemetry_init(rt);
	rt->tsc_hz = rte_get_tsc_hz();
	rt->n_ports = rt->conf.n_ports;
	for (unsigned int i = 0; i < rt->n_ports; i++) {
		struct dpv_port *p = &rt->ports[i];
		p->conf = &rt->conf.ports[i];
		p->index = i;
		snprintf(p->name, sizeof(p->name), "%s", p->conf->name);
	}
	for (unsigned int i = 0; i < rt->n_ports; i++) {
		const struct dpv_conf_port *cp = &rt->conf.ports[i];
		struct dpv_port *p = &rt->ports[i];
		int r = cp->type == DPV_DEV_RING ? make_ring_pair(rt, i)
			: cp->type == DPV_DEV_AF_XDP ? (dpv_kif_init(rt, p, cp->iface, i) || dpv_xdp_prepare(rt, p))
			: find_eth_port(rt, cp, &p->eth_port);
		if (r)
			return;
	}
	for (unsigned int i = 0; i < rt->n_ports; i++)
		if (port_start(rt, &rt->ports[i]))
			return;
	if (dpv_link_start(rt)) {
		dpv_runtime_fail(rt, EIO, "cannot start the link monitor (EAL alarm)");
		return;
	}
	int r = dpv_kif_monitor_start(rt);
	if (r) {
		dpv_runtime_fail(rt, -r, "cannot follow the kernel interfaces (rtnetlink): %s", strerror(-r));
		return;
	}
	links_wait(rt);
	atomic_store(&g_rt_ready, rt);
	if (dpv_engine_start(rt)) {
		atomic_store(&g_rt_ready, NULL);
		dpv_runtime_fail(rt, EIO, "cannot start the engine");
		return;
	}
}

struct dpv_runtime *dpv_runtime_start(const struct dpv_conf *conf)
{
	static pthread_mutex_t start_lock = PTHREAD_MUTEX_INITIALIZER;
	pthread_mutex_lock(&start_lock);
	if (!g_start_conf)
		g_start_conf = conf;
	pthread_mutex_unlock(&start_lock);
	pthread_once(&g_once, runtime_init);
	struct dpv_runtime *rt = atomic_load(&g_rt_ready);
	if (!rt)
		errno = g_rt.init_err ? g_rt.init_err : EIO;
	return rt;
}

struct dpv_runtime *dpv_runtime_peek(void)
{
	return atomic_load(&g_rt_ready);
}
