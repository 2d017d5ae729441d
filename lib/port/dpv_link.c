/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Link state. An EAL alarm (it runs on EAL's interrupt thread, where the
 * PMDs' own link handlers run, so nothing here races with them) reads every
 * port's link every DPV_LINK_POLL_MS (rte_eth_link_get_nowait: memif, ring,
 * af_packet and tap have no link-state interrupt) and on a change:
 *  - records it (what ibv_query_port reports) and counts it;
 *  - calls the driver's link hook (IBV_EVENT_PORT_ACTIVE / PORT_ERR) when
 *    the state ibv_query_port reports changes (dpv_port_link_up);
 *  - on link up, asks again at once for the neighbours still unresolved.
 * A net_memif client whose link stays down is restarted (stop, start: a
 * new connection) every DPV_MEMIF_RECONNECT_MS: DPDK 22.11's memif client
 * connects only in dev_start and never retries, so a client that reached a
 * server in the moment between its probe and its start ("ID not found"),
 * or whose server restarted, would otherwise stay down for good.
 * When a net_memif link comes up, the pages of its shared regions are
 * faulted in at once (memif_prefault), not one by one by the first packets
 * through each buffer.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include <rte_alarm.h>
#include <rte_cycles.h>
#include <rte_ethdev.h>

#include "dpv_port.h"

#define DPV_LINK_POLL_MS 100
#define DPV_MEMIF_RECONNECT_MS 1000

static dpv_link_fn g_link_fn;
static _Atomic bool g_link_running;

void dpv_port_set_link_handler(dpv_link_fn fn) { g_link_fn = fn; }

bool dpv_port_is_memif(const struct dpv_port *p, const char *role)
{
	const struct dpv_conf_port *cp = p->conf;
	return cp->type == DPV_DEV_VDEV && !strncmp(cp->devargs, "net_memif", 9) &&
	       (!role || strstr(cp->devargs, role));
}

/* Stop and start a memif client: a new connection to its server. Holds
 * every context's locks so that no poller or sender is in a burst function
 * while the rings are unmapped. */
static void memif_restart(struct dpv_port *p, uint64_t now)
{
	for (uint16_t q = 0; q < p->n_qctx; q++)
		rte_spinlock_lock(&p->qctx[q].rx_lock);
	for (uint16_t q = 0; q < p->n_qctx; q++)
		rte_spinlock_lock(&p->qctx[q].tx_lock);
	int r = rte_eth_dev_stop(p->eth_port);
	if (!r)
		r = rte_eth_dev_start(p->eth_port);
	for (uint16_t q = p->n_qctx; q-- > 0;)
		rte_spinlock_unlock(&p->qctx[q].tx_lock);
	for (uint16_t q = p->n_qctx; q-- > 0;)
		rte_spinlock_unlock(&p->qctx[q].rx_lock);
	p->link_restart_tsc = now;
	DPV_STAT_ADD(p, link_restarts, 1);
	DPV_PORT_LOG(INFO, "port %s: link down, memif client reconnects (%s)", p->name,
		     r ? rte_strerror(-r) : "started");
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif

/* Fault in every page of the memif regions this process maps (its own, a
 * client's, or a client's it received, a server's): DPDK's memif maps its
 * shared buffers with plain mmap(), so the first packet through each
 * buffer slot took a page fault, in a guest also the host's fault behind
 * it: with 2048 slots of 9216 bytes, the first 2000 round trips of every
 * connection ran at p50 38 us instead of 1.7 (dpv_perf rc_lat, memif
 * pair; Open MPI's first 2000 ping-pongs 25 us instead of 2). Populating
 * changes no byte. The regions show in /proc/self/maps by their memfd's
 * name, "memif_region_N". Returns the bytes populated. */
static size_t memif_prefault(void)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[512];
	size_t total = 0;
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;
		if (!strstr(line, "memif_region_") || sscanf(line, "%lx-%lx", &lo, &hi) != 2 || hi <= lo)
			continue;
		if (madvise((void *)lo, hi - lo, MADV_POPULATE_WRITE) != 0)
			continue;
		/* and touch every page for writing from this process: in a
		 * guest whose hypervisor shadows its page tables (PVM here) the
		 * first access of a process to a page still exits to the host
		 * even when the guest's PTE is in place. An atomic add of 0
		 * changes nothing, even where the peer writes at the moment */
		for (unsigned long a = lo; a < hi; a += 4096)
			__atomic_fetch_add((uint64_t *)a, 0, __ATOMIC_RELAXED);
		total += hi - lo;
	}
	fclose(f);
	return total;
}

/* A memif port's link is up: its regions faulted in, counted and logged. */
static void memif_link_up(struct dpv_port *p)
{
	uint64_t t0 = rte_get_tsc_cycles();
	size_t b = memif_prefault();
	DPV_STAT_ADD(p, memif_prefault_kib, b >> 10);
	DPV_PORT_LOG(INFO, "port %s: %zu KiB of memif buffers faulted in (%.1f ms)", p->name, b >> 10,
		     (double)(rte_get_tsc_cycles() - t0) * 1000.0 / (double)rte_get_tsc_hz());
}

static void link_check(struct dpv_port *p, uint64_t now, uint64_t hz)
{
	struct rte_eth_link l;
	memset(&l, 0, sizeof(l));
	if (rte_eth_link_get_nowait(p->eth_port, &l) != 0)
		return;
	/* an AF_XDP port's link is its kernel interface's (dpv_kif.c): the
	 * PMD reports up for as long as it runs */
	bool up = p->kif.follow_link ? atomic_load(&p->kif.link_up) : l.link_status == RTE_ETH_LINK_UP;
	bool was = atomic_load(&p->link_up);
	if (up != was) {
		bool reported = dpv_port_link_up(p);
		atomic_store(&p->link_up, up);
		if (up) {
			p->link_seen = true;
			if (l.link_speed && l.link_speed != RTE_ETH_SPEED_NUM_UNKNOWN)
				p->eth_speed_mbps = l.link_speed;
			dpv_neigh_link_up(p);
			if (dpv_port_is_memif(p, NULL))
				memif_link_up(p);
		}
		if (up)
			DPV_STAT_ADD(p, link_ups, 1);
		else
			DPV_STAT_ADD(p, link_downs, 1);
		DPV_PORT_LOG(NOTICE, "port %s: link %s", p->name, up ? "up" : "down");
		/* events follow the state ibv_query_port reports */
		if (g_link_fn && reported != dpv_port_link_up(p))
			g_link_fn(p, up);
	}
	if (!up && dpv_port_is_memif(p, "role=client") &&
	    now - p->link_restart_tsc >= hz / 1000 * DPV_MEMIF_RECONNECT_MS)
		memif_restart(p, now);
}

static void link_alarm(void *arg)
{
	struct dpv_runtime *rt = arg;
	uint64_t now = rte_get_tsc_cycles(), hz = rte_get_tsc_hz();
	if (!atomic_load(&g_link_running))
		return;
	for (unsigned int i = 0; i < rt->n_ports; i++)
		link_check(&rt->ports[i], now, hz);
	if (rte_eal_alarm_set(DPV_LINK_POLL_MS * 1000, link_alarm, rt) != 0)
		atomic_store(&g_link_running, false);
}

int dpv_link_start(struct dpv_runtime *rt)
{
	uint64_t now = rte_get_tsc_cycles();
	for (unsigned int i = 0; i < rt->n_ports; i++) {
		struct dpv_port *p = &rt->ports[i];
		struct rte_eth_link l;
		memset(&l, 0, sizeof(l));
		rte_eth_link_get_nowait(p->eth_port, &l);
		bool up = p->kif.follow_link ? atomic_load(&p->kif.link_up) : l.link_status == RTE_ETH_LINK_UP;
		atomic_store(&p->link_up, up);
		if (up && dpv_port_is_memif(p, NULL))
			memif_link_up(p);
		/* an interface the kernel reports down is down from the start */
		p->link_seen = up || p->kif.follow_link;
		p->link_restart_tsc = now;
	}
	atomic_store(&g_link_running, true);
	int r = rte_eal_alarm_set(DPV_LINK_POLL_MS * 1000, link_alarm, rt);
	if (r) {
		atomic_store(&g_link_running, false);
		return r;
	}
	return 0;
}

void dpv_link_stop(struct dpv_runtime *rt)
{
	if (!atomic_exchange(&g_link_running, false))
		return;
	rte_eal_alarm_cancel(link_alarm, rt); /* waits for a running callback */
}

bool dpv_link_wait(struct dpv_port *p, unsigned int ms)
{
	for (unsigned int waited = 0; !atomic_load(&p->link_up) && waited < ms; waited += 10)
		rte_delay_us_sleep(10 * 1000);
	return atomic_load(&p->link_up);
}
