/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The kernel interface a port lives beside (dpv_kif.h): the "iface" of an
 * "af_xdp" port, or the "kernel_iface" of a port's exception path.
 *
 * The kernel owns ARP and IPv6 ND on it. dpverbs never answers them; it
 * reads a neighbour's MAC from the kernel's table and, for one the kernel
 * does not know, asks it to resolve the address (RTM_NEWNEIGH with
 * NTF_USE, as if the kernel were about to send it a packet); the answer
 * arrives as an RTM_NEWNEIGH notification.
 *
 * An "af_xdp" port without "ipv4"/"ipv6" takes its GIDs from the
 * interface's addresses, and without "mtu" its MTU; its link state is the
 * interface's (up, with carrier). One rtnetlink socket per process,
 * subscribed to link, address and neighbour changes, is read on EAL's
 * interrupt thread (where the link alarm runs too), and each change is
 * applied at once: GID table (IBV_EVENT_GID_CHANGE through the driver's
 * hook), the XDP program's address map, MTU, link (dpv_link.c).
 */
/* rte_intr_instance_alloc and its setters are experimental in DPDK 22.11
 * (stable from 23.11 on): the rtnetlink socket is read on EAL's interrupt
 * thread through them */
#define ALLOW_EXPERIMENTAL_API 1
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <net/if.h>
#include <arpa/inet.h>
#include <linux/rtnetlink.h>

#include <rte_interrupts.h>
#include <rte_ethdev.h>

#include "dpv_port.h"
#include "dpv_nl.h"

static dpv_gid_fn g_gid_fn;
static int g_mon_sock = -1;
static struct rte_intr_handle *g_mon_intr;
static struct dpv_runtime *g_mon_rt;

void dpv_port_set_gid_handler(dpv_gid_fn fn) { g_gid_fn = fn; }

int dpv_kif_init(struct dpv_runtime *rt, struct dpv_port *p, const char *name, unsigned int idx)
{
	const struct dpv_conf_port *cp = p->conf;
	struct dpv_kif *k = &p->kif;

	memset(k, 0, sizeof(*k));
	k->req_sock = -1;
	rte_spinlock_init(&k->req_lock);
	k->ifindex = (int)if_nametoindex(name);
	if (!k->ifindex) {
		dpv_runtime_fail(rt, ENODEV, "%s: ports[%u].%s: no interface \"%s\" in this network namespace",
				 rt->conf.source, idx, cp->type == DPV_DEV_AF_XDP ? "device.iface" : "kernel_iface",
				 name);
		return -1;
	}
	snprintf(k->name, sizeof(k->name), "%s", name);
	k->kernel_neigh = true;
	k->follow_addrs = dpv_conf_port_follows_kernel(cp);
	k->follow_mtu = cp->type == DPV_DEV_AF_XDP && !cp->mtu_set;
	k->follow_link = cp->type == DPV_DEV_AF_XDP;
	k->req_sock = dpv_nl_open(0, true);
	if (k->req_sock < 0) {
		dpv_runtime_fail(rt, -k->req_sock, "port %s: cannot open an rtnetlink socket: %s", p->name,
				 strerror(-k->req_sock));
		return -1;
	}
	return 0;
}

/* Interface MTU to port MTU: what the buffers carry at most. */
static void mtu_apply(struct dpv_port *p, uint32_t mtu)
{
	if (mtu > p->mtu_cap && p->mtu_cap) {
		if (p->mtu != p->mtu_cap)
			DPV_PORT_LOG(NOTICE, "port %s: %s has MTU %u; RoCEv2 uses %u (the port's buffers)",
				     p->name, p->kif.name, mtu, p->mtu_cap);
		mtu = p->mtu_cap;
	}
	if (mtu < DPV_CONF_MIN_MTU)
		mtu = DPV_CONF_MIN_MTU;
	if (mtu == p->mtu)
		return;
	p->mtu = (uint16_t)mtu;
	p->active_mtu = dpv_eth_mtu_to_ib(p->mtu, 6);
	p->path_mtu_bytes = 128u << p->active_mtu;
}

int dpv_kif_sync(struct dpv_port *p, bool at_start)
{
	struct dpv_kif *k = &p->kif;
	struct dpv_nl_link l;
	struct dpv_nl_addr a[2 * DPV_GID_TABLE_LEN];

	if (!k->ifindex)
		return 0;
	int r = dpv_nl_link_by_index(k->ifindex, &l);
	if (r)
		return r;
	if (k->follow_link) {
		/* up, with carrier: IFF_LOWER_UP, or operstate UP/UNKNOWN */
		bool up = (l.flags & IFF_UP) && (l.flags & IFF_RUNNING);
		atomic_store(&k->link_up, up);
	}
	if (k->follow_mtu)
		mtu_apply(p, l.mtu);
	if (!k->follow_addrs)
		return 0;
	int n = dpv_nl_addrs(k->ifindex, a, 2 * DPV_GID_TABLE_LEN);
	if (n < 0)
		return n;
	if (n > 2 * DPV_GID_TABLE_LEN)
		n = 2 * DPV_GID_TABLE_LEN;
	struct dpv_gid_entry tbl[DPV_GID_TABLE_LEN];
	struct in_addr v4;
	uint8_t v4p;
	uint8_t mac[6];
	bool ether = memcmp(l.mac, "\0\0\0\0\0\0", 6) != 0;
	memcpy(mac, ether ? l.mac : p->mac, 6);
	unsigned int ignored = dpv_conf_gid_table_addrs(mac, a, n, tbl, &v4, &v4p);
	if (ignored && ignored != k->addrs_ignored)
		DPV_PORT_LOG(NOTICE, "port %s: %u address(es) of %s have no GID (one IPv4 and %d IPv6 "
			     "addresses are RoCEv2 GIDs)", p->name, ignored, k->name, DPV_MAX_IPV6_PER_PORT);
	k->addrs_ignored = ignored;
	if (!dpv_port_gid_set(p, tbl, v4, v4p, mac) || at_start)
		return 0;
	dpv_xdp_sync_addrs(p);
	char a4[INET_ADDRSTRLEN] = "-";
	if (v4.s_addr)
		inet_ntop(AF_INET, &v4, a4, sizeof(a4));
	DPV_PORT_LOG(NOTICE, "port %s: addresses of %s changed (IPv4 %s): GID table updated", p->name,
		     k->name, a4);
	if (g_gid_fn)
		g_gid_fn(p);
	return 0;
}

int dpv_kif_neigh_ask(struct dpv_port *p, const uint8_t ip[16], uint8_t mac[6])
{
	struct dpv_kif *k = &p->kif;
	uint16_t state = 0;

	if (dpv_nl_neigh_get(k->ifindex, ip, mac, &state) == 0 && dpv_nl_nud_valid(state))
		return 1;
	rte_spinlock_lock(&k->req_lock);
	dpv_nl_neigh_resolve(k->req_sock, k->ifindex, ip);
	rte_spinlock_unlock(&k->req_lock);
	return 0;
}

void dpv_kif_info(const struct dpv_port *p, struct dpv_kif_info *out)
{
	memset(out, 0, sizeof(*out));
	if (!p->kif.ifindex)
		return;
	snprintf(out->iface, sizeof(out->iface), "%s", p->kif.name);
	if (p->conf->type == DPV_DEV_AF_XDP) {
		bool zc = p->xdp.n_xsk && p->xdp.n_zc == p->xdp.n_xsk;
		snprintf(out->xdp_mode, sizeof(out->xdp_mode), "%s %s%s", p->xdp.mode,
			 zc ? "zero-copy" : p->xdp.n_zc ? "partly-zero-copy" : "copy",
			 p->xdp.busy_poll ? " busy-poll" : "");
		dpv_xdp_read_stats(p, out->xdp);
		dpv_xdp_xsk_stats(p, out);
	}
	out->exc_to_kernel = atomic_load_explicit(&p->exc.to_kernel, memory_order_relaxed);
	out->exc_from_kernel = atomic_load_explicit(&p->exc.from_kernel, memory_order_relaxed);
	out->exc_drops = atomic_load_explicit(&p->exc.drops, memory_order_relaxed);
}

/* ---- notifications (EAL's interrupt thread) ---- */

static struct dpv_port *port_of_ifindex(struct dpv_runtime *rt, int ifindex)
{
	for (unsigned int i = 0; i < rt->n_ports; i++)
		if (rt->ports[i].kif.ifindex && rt->ports[i].kif.ifindex == ifindex)
			return &rt->ports[i];
	return NULL;
}

struct mon_pass {
	struct dpv_runtime *rt;
	bool dirty[DPV_MAX_PORTS];
};

static void mon_event(void *arg, const struct dpv_nl_ev *ev)
{
	struct mon_pass *m = arg;
	struct dpv_port *p = port_of_ifindex(m->rt, ev->ifindex);
	if (!p)
		return;
	if (ev->type != DPV_NL_EV_NEIGH) {
		m->dirty[p->index] = true;
		return;
	}
	if (!ev->del && ev->neigh.has_mac && dpv_nl_nud_valid(ev->neigh.state) && p->n_qctx)
		dpv_neigh_kernel_learn(&p->qctx[0], ev->neigh.addr, ev->neigh.mac);
}

static void mon_read(void *arg)
{
	struct mon_pass m = {.rt = arg};
	int r;
	while ((r = dpv_nl_mon_read(g_mon_sock, mon_event, &m)) > 0)
		;
	/* notifications lost (-ENOBUFS): read every interface again */
	for (unsigned int i = 0; i < m.rt->n_ports; i++)
		if (m.rt->ports[i].kif.ifindex && (m.dirty[i] || r == -ENOBUFS))
			dpv_kif_sync(&m.rt->ports[i], false);
}

int dpv_kif_monitor_start(struct dpv_runtime *rt)
{
	bool any = false;
	for (unsigned int i = 0; i < rt->n_ports; i++)
		any |= rt->ports[i].kif.ifindex != 0;
	if (!any)
		return 0;
	g_mon_sock = dpv_nl_open(RTMGRP_LINK | RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR | RTMGRP_NEIGH, true);
	if (g_mon_sock < 0)
		return g_mon_sock;
	g_mon_intr = rte_intr_instance_alloc(RTE_INTR_INSTANCE_F_PRIVATE);
	if (!g_mon_intr || rte_intr_fd_set(g_mon_intr, g_mon_sock) ||
	    rte_intr_type_set(g_mon_intr, RTE_INTR_HANDLE_EXT) ||
	    rte_intr_callback_register(g_mon_intr, mon_read, rt)) {
		dpv_kif_monitor_stop();
		return -EIO;
	}
	g_mon_rt = rt;
	/* what changed between the first read and the subscription */
	for (unsigned int i = 0; i < rt->n_ports; i++)
		dpv_kif_sync(&rt->ports[i], false);
	return 0;
}

void dpv_kif_monitor_stop(void)
{
	if (g_mon_intr && g_mon_rt) {
		/* waits for a running callback; -EAGAIN while it runs */
		while (rte_intr_callback_unregister(g_mon_intr, mon_read, g_mon_rt) == -EAGAIN)
			usleep(1000);
	}
	if (g_mon_intr)
		rte_intr_instance_free(g_mon_intr);
	g_mon_intr = NULL;
	g_mon_rt = NULL;
	if (g_mon_sock >= 0)
		close(g_mon_sock);
	g_mon_sock = -1;
}
