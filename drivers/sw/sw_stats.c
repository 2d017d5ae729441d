/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Counters published for other processes (apps/dpv_stat): the port
 * counters of the port layer and this engine's per-QP counters, in
 * /dev/shm/dpverbs-stats.<pid> (format: lib/port/dpv_stats.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <dirent.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mman.h>

#include <rte_cycles.h>

#include "dpv_fault.h"
#include "dpv_stats.h"
#include "sw_loc.h"
#include "sw_qp_lock.h"

static struct dpv_stats_shm *g_shm;
static char g_path[64];
static uint64_t g_next_tsc;
static bool g_failed;

/* At exit: stop publishing and remove the file. The mapping stays: an
 * engine thread may still be inside sw_stats_publish (process exit unmaps). */
static void stats_remove(void)
{
	g_failed = true;
	if (g_shm)
		unlink(g_path);
}

/* Remove files left by dpverbs processes that died without exiting. */
static void stats_sweep(void)
{
	DIR *d = opendir("/dev/shm");
	struct dirent *e;
	const char *pfx = strrchr(DPV_STATS_PREFIX, '/') + 1;
	if (!d)
		return;
	while ((e = readdir(d)) != NULL) {
		if (strncmp(e->d_name, pfx, strlen(pfx)) != 0)
			continue;
		int pid = atoi(e->d_name + strlen(pfx));
		if (pid > 0 && kill(pid, 0) != 0 && errno == ESRCH) {
			char path[300];
			snprintf(path, sizeof(path), "/dev/shm/%s", e->d_name);
			unlink(path);
		}
	}
	closedir(d);
}

static int stats_open(struct dpv_runtime *rt)
{
	stats_sweep();
	snprintf(g_path, sizeof(g_path), DPV_STATS_PREFIX "%d", (int)getpid());
	int fd = open(g_path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, sizeof(struct dpv_stats_shm)) != 0) {
		close(fd);
		unlink(g_path);
		return -errno;
	}
	void *p = mmap(NULL, sizeof(struct dpv_stats_shm), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED) {
		unlink(g_path);
		return -errno;
	}
	g_shm = p;
	memcpy(g_shm->magic, DPV_STATS_MAGIC, 8);
	g_shm->version = DPV_STATS_VERSION;
	g_shm->pid = (int32_t)getpid();
	g_shm->n_ports = rt->n_ports;
	g_shm->n_drop = DPV_DROP_NR;
	g_shm->n_cnt = DPV_CNT_NR;
	for (unsigned int i = 0; i < DPV_DROP_NR; i++)
		snprintf(g_shm->drop_names[i], 32, "%s", dpv_drop_reason_names[i]);
	for (unsigned int i = 0; i < DPV_CNT_NR; i++)
		snprintf(g_shm->cnt_names[i], 32, "%s", dpv_cnt_names[i]);
	atexit(stats_remove);
	return 0;
}

#define LD(x) atomic_load_explicit(&(x), memory_order_relaxed)

/* Refresh the snapshot at most every DPV_STATS_PERIOD_MS. Called by the
 * engine from the poll hook of the first port's first context. */
void sw_stats_publish(uint64_t now)
{
	if (now < g_next_tsc || g_failed)
		return;
	struct dpv_runtime *rt = dpv_runtime_peek();
	if (!rt)
		return;
	g_next_tsc = now + rte_get_tsc_hz() / 1000 * DPV_STATS_PERIOD_MS;
	if (!g_shm && stats_open(rt) != 0) {
		g_failed = true; /* no /dev/shm: counters stay in-process */
		return;
	}
	struct dpv_stats_shm *s = g_shm;
	atomic_thread_fence(memory_order_release);
	s->seq++;
	atomic_thread_fence(memory_order_release);
	for (unsigned int i = 0; i < rt->n_ports && i < DPV_MAX_PORTS; i++) {
		struct dpv_port *p = &rt->ports[i];
		struct dpv_stats_port *o = &s->ports[i];
		snprintf(o->name, sizeof(o->name), "%s", p->name);
		o->rx_pkts = DPV_STAT_READ(p, rx_pkts);
		o->rx_bytes = DPV_STAT_READ(p, rx_bytes);
		o->tx_pkts = DPV_STAT_READ(p, tx_pkts);
		o->tx_bytes = DPV_STAT_READ(p, tx_bytes);
		o->rx_roce = DPV_STAT_READ(p, rx_roce);
		o->tx_roce = DPV_STAT_READ(p, tx_roce);
		o->rx_loopback = DPV_STAT_READ(p, rx_loopback);
		o->tx_loopback = DPV_STAT_READ(p, tx_loopback);
		o->arp_rx = DPV_STAT_READ(p, arp_rx);
		o->arp_tx = DPV_STAT_READ(p, arp_tx);
		o->nd_rx = DPV_STAT_READ(p, nd_rx);
		o->nd_tx = DPV_STAT_READ(p, nd_tx);
		for (unsigned int k = 0; k < DPV_DROP_NR; k++)
			o->drop[k] = DPV_STAT_READ(p, drop[k]);
		for (unsigned int k = 0; k < DPV_CNT_NR; k++)
			o->cnt[k] = DPV_STAT_READ(p, cnt[k]);
		struct dpv_kif_info ki;
		dpv_kif_info(p, &ki);
		snprintf(o->kernel_iface, sizeof(o->kernel_iface), "%s", ki.iface);
		snprintf(o->xdp_mode, sizeof(o->xdp_mode), "%s", ki.xdp_mode);
		o->xdp_roce = ki.xdp[DPV_XDP_ST_ROCE];
		o->xdp_pass = ki.xdp[DPV_XDP_ST_PASS];
		o->xdp_no_xsk = ki.xdp[DPV_XDP_ST_NO_XSK];
		o->xsk_rx_ring_full = ki.xsk_rx_ring_full;
		o->xsk_fill_empty = ki.xsk_fill_empty;
		o->xsk_rx_dropped = ki.xsk_rx_dropped;
		o->exc_to_kernel = ki.exc_to_kernel;
		o->exc_from_kernel = ki.exc_from_kernel;
		o->exc_drops = ki.exc_drops;
	}
	uint32_t n = 0, first, last;
	dpv_pool_range(DPV_OBJ_QP, &first, &last);
	for (uint32_t qpn = first; qpn && qpn <= last && n < DPV_STATS_MAX_QPS; qpn++) {
		struct sw_qp *qp = sw_qp_lookup(qpn);
		if (!qp)
			continue;
		struct dpv_stats_qp *o = &s->qps[n++];
		o->qpn = qpn;
		o->type = qp->type;
		o->state = (uint32_t)sw_qp_state(qp);
		o->port = qp->port->index;
		for (unsigned int k = 0; k < DPV_CNT_NR; k++)
			o->cnt[k] = __atomic_load_n(&qp->cnt[k], __ATOMIC_RELAXED);
	}
	s->n_qps = n;
	const struct dpv_fault_stats *fs = dpv_fault_stats();
	s->fault_dropped = LD(fs->dropped);
	s->fault_duplicated = LD(fs->duplicated);
	s->fault_reordered = LD(fs->reordered);
	s->fault_corrupted = LD(fs->corrupted);
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	s->updated_ns = (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
	atomic_thread_fence(memory_order_release);
	s->seq++;
}
