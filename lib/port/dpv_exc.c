/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The exception path of a port dpverbs owns whole (memif, af_packet, tap,
 * PCI) with "kernel_iface": a kernel interface of that name, made by
 * DPDK's net_tap, holding the port's MAC, addresses and MTU, so that ping,
 * TCP and dpverbs' RoCEv2 share one address as on a ConnectX host.
 *
 *  - port -> kernel: every received frame that is not a RoCEv2 candidate
 *    (dpv_pkt_is_roce: UDP to 4791) is written to the tap (ARP and ND
 *    included: the kernel answers them, dpverbs does not, dpv_neigh.c);
 *  - kernel -> port: what the kernel sends on the interface is read in
 *    context 0's poll turns and sent through the port as it is.
 *
 * The kernel resolves neighbours for dpverbs too (dpv_kif.c). The tap
 * interface is not persistent: it disappears when its descriptor closes,
 * at exit or when the process is killed. An empty read of the tap costs a
 * system call, so it is polled at most every DPV_EXC_IDLE_US while it is
 * quiet, and on every turn while frames come.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <net/if.h>
#include <arpa/inet.h>

#include <rte_dev.h>
#include <rte_cycles.h>
#include <rte_ethdev.h>

#include "dpv_port.h"
#include "dpv_nl.h"

#define DPV_EXC_IDLE_US 20
#define DPV_EXC_DRAIN_MS 300 /* at exit, forward the kernel's last frames for at most this */
#define DPV_EXC_QUIET_MS 40  /* ... and until nothing moved for this long */

/* The net_tap device and its queues, on the port's mbuf pool. */
static int tap_create(struct dpv_runtime *rt, struct dpv_port *p, const char *ifname)
{
	char name[DPV_NAME_MAX + 16], args[DPV_NAME_MAX + 96];
	struct rte_eth_conf ec;
	snprintf(name, sizeof(name), "net_tap_%s", p->name);
	snprintf(args, sizeof(args), "%s,iface=%s,mac=%02x:%02x:%02x:%02x:%02x:%02x", name, ifname,
		 p->mac[0], p->mac[1], p->mac[2], p->mac[3], p->mac[4], p->mac[5]);
	/* net_tap's rte_flow needs the multiq qdisc, which kernels without
	 * sch_multiq lack; its complaints at creation are about rte_flow,
	 * which the exception path does not use: quiet while it is made */
	int lvl = rte_log_get_level(rte_log_register("pmd.net.tap"));
	rte_log_set_level_pattern("pmd.net.tap", RTE_LOG_CRIT);
	int r = rte_dev_probe(args);
	if (lvl > 0)
		rte_log_set_level_pattern("pmd.net.tap", (uint32_t)lvl);
	if (r == 0)
		r = rte_eth_dev_get_port_by_name(name, &p->exc.eth_port);
	p->exc.created = r == 0;
	if (r) {
		dpv_runtime_fail(rt, -r, "port %s: kernel_iface: cannot create %s: %s", p->name, args,
				 rte_strerror(-r));
		return -1;
	}
	memset(&ec, 0, sizeof(ec));
	int socket = p->pool->socket_id;
	r = rte_eth_dev_configure(p->exc.eth_port, 1, 1, &ec);
	if (!r)
		r = rte_eth_rx_queue_setup(p->exc.eth_port, 0, 512, (unsigned int)socket, NULL, p->pool);
	if (!r)
		r = rte_eth_tx_queue_setup(p->exc.eth_port, 0, 512, (unsigned int)socket, NULL);
	if (!r)
		r = rte_eth_dev_start(p->exc.eth_port);
	if (r) {
		dpv_runtime_fail(rt, -r, "port %s: kernel_iface %s: cannot start the tap: %s", p->name,
				 ifname, rte_strerror(-r));
		dpv_exc_stop(p);
		return -1;
	}
	return 0;
}

/* The port's MAC, MTU and addresses on the kernel interface, then up. */
static int iface_configure(struct dpv_runtime *rt, struct dpv_port *p)
{
	const struct dpv_conf_port *cp = p->conf;
	int ifi = p->kif.ifindex, r;
	uint8_t a[16] = {0};
	const char *what = "MAC";
	r = dpv_nl_link_set_mac(ifi, p->mac);
	if (!r && (what = "MTU"))
		r = dpv_nl_link_set_mtu(ifi, p->mtu);
	if (!r && cp->ipv4.s_addr && (what = "IPv4 address")) {
		a[10] = a[11] = 0xff;
		memcpy(a + 12, &cp->ipv4, 4);
		r = dpv_nl_addr_add(ifi, a, cp->ipv4_prefix);
	}
	for (unsigned int i = 0; !r && i < cp->n_ipv6; i++) {
		what = "IPv6 address";
		r = dpv_nl_addr_add(ifi, cp->ipv6[i].addr.s6_addr, cp->ipv6[i].prefix);
	}
	if (!r && (what = "state up"))
		r = dpv_nl_link_set_up(ifi, true);
	if (r) {
		dpv_runtime_fail(rt, -r, "%s: ports[%u].kernel_iface: cannot set the %s of %s: %s",
				 rt->conf.source, p->index, what, cp->kernel_iface, strerror(-r));
		return -1;
	}
	return 0;
}

int dpv_exc_start(struct dpv_runtime *rt, struct dpv_port *p)
{
	const struct dpv_conf_port *cp = p->conf;
	const char *ifname = cp->kernel_iface;
	if (if_nametoindex(ifname)) {
		dpv_runtime_fail(rt, EEXIST, "%s: ports[%u].kernel_iface: interface %s exists already: "
				 "dpverbs makes it (and removes it at exit); name another one, or remove "
				 "it (ip link del %s)", rt->conf.source, p->index, ifname, ifname);
		return -1;
	}
	rte_spinlock_init(&p->exc.lock);
	if (tap_create(rt, p, ifname))
		return -1;
	if (dpv_kif_init(rt, p, ifname, p->index) || iface_configure(rt, p)) {
		dpv_exc_stop(p);
		return -1;
	}
	p->exc.on = true;
	char a4[INET_ADDRSTRLEN] = "-";
	if (cp->ipv4.s_addr)
		inet_ntop(AF_INET, &cp->ipv4, a4, sizeof(a4));
	DPV_PORT_LOG(NOTICE, "port %s: exception path to kernel interface %s (IPv4 %s, %u IPv6, MTU %u)",
		     p->name, ifname, a4, cp->n_ipv6, p->mtu);
	return 0;
}

void dpv_exc_to_kernel(struct dpv_port *p, struct rte_mbuf *m)
{
	uint16_t n;
	rte_spinlock_lock(&p->exc.lock);
	n = rte_eth_tx_burst(p->exc.eth_port, 0, &m, 1);
	rte_spinlock_unlock(&p->exc.lock);
	if (n == 1) {
		atomic_fetch_add_explicit(&p->exc.to_kernel, 1, memory_order_relaxed);
		return;
	}
	atomic_fetch_add_explicit(&p->exc.drops, 1, memory_order_relaxed);
	rte_pktmbuf_free(m);
}

int dpv_exc_poll(struct dpv_qctx *qc)
{
	struct dpv_port *p = qc->port;
	struct rte_mbuf *pkts[DPV_BURST];
	if (!p->exc.on || qc->qid != 0)
		return 0;
	uint64_t now = rte_get_tsc_cycles();
	if (now < p->exc.next_tsc)
		return 0;
	uint16_t n = rte_eth_rx_burst(p->exc.eth_port, 0, pkts, DPV_BURST);
	p->exc.next_tsc = n ? 0 : now + rte_get_tsc_hz() / 1000000 * DPV_EXC_IDLE_US;
	for (uint16_t i = 0; i < n; i++) {
		if (dpv_port_tx_frame(qc, pkts[i]) != 0)
			atomic_fetch_add_explicit(&p->exc.drops, 1, memory_order_relaxed);
		else
			atomic_fetch_add_explicit(&p->exc.from_kernel, 1, memory_order_relaxed);
	}
	return n;
}

void dpv_exc_drain(struct dpv_runtime *rt)
{
	uint64_t hz = rte_get_tsc_hz(), start = rte_get_tsc_cycles(), quiet_since = start;
	uint64_t seen = 0;
	bool any = false;
	for (unsigned int i = 0; i < rt->n_ports; i++)
		any |= rt->ports[i].exc.on;
	if (!any)
		return;
	/* what the kernel sent before the process exits (the last TCP data of
	 * this very process) must leave before the interface goes, and the
	 * peer's acknowledgements come in through the port */
	for (uint64_t now = start; now - start < hz / 1000 * DPV_EXC_DRAIN_MS &&
				   now - quiet_since < hz / 1000 * DPV_EXC_QUIET_MS;
	     now = rte_get_tsc_cycles()) {
		uint64_t n = 0;
		for (unsigned int i = 0; i < rt->n_ports; i++) {
			struct dpv_port *p = &rt->ports[i];
			for (uint16_t q = 0; q < p->n_qctx; q++)
				dpv_qctx_poll(&p->qctx[q]);
			n += atomic_load(&p->exc.from_kernel) + atomic_load(&p->exc.to_kernel);
		}
		if (n != seen)
			quiet_since = now;
		seen = n;
		rte_delay_us_sleep(DPV_EXC_IDLE_US);
	}
}

void dpv_exc_stop(struct dpv_port *p)
{
	p->exc.on = false;
	if (!p->exc.created)
		return;
	p->exc.created = false;
	rte_eth_dev_stop(p->exc.eth_port);
	rte_eth_dev_close(p->exc.eth_port); /* the tap interface goes with it */
}
