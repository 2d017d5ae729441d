/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The port layer's telemetry commands (dpv_telemetry.h); the capture server
 * is started from here (dpv_pdump.c).
 *
 * The callbacks run on a telemetry client thread of EAL, concurrently with
 * the engine: they read the counters with relaxed atomic loads (as the
 * engine adds to them) and the port table, which is fixed once the runtime
 * is up (dpv_runtime_peek() is NULL before and after).
 */
#include <errno.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <linux/magic.h>
#include <sys/vfs.h>

#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_log.h>
#include <rte_telemetry.h>

#include "dpv_fault.h"
#include "dpv_pdump.h"
#include "dpv_port.h"
#include "dpv_telemetry.h"

RTE_LOG_REGISTER(dpv_tel_logtype, lib.dpv.telemetry, NOTICE);
#define TEL_LOG(level, fmt, ...) \
	rte_log(RTE_LOG_##level, dpv_tel_logtype, "dpverbs telemetry: " fmt "\n", ##__VA_ARGS__)

#define LD(x) atomic_load_explicit(&(x), memory_order_relaxed)

static const char *mode_name(enum dpv_mode m)
{
	return m == DPV_MODE_SHARED ? "shared" : "embedded";
}

static const char *progress_name(enum dpv_progress p)
{
	return p == DPV_PROGRESS_LCORE ? "lcore" : "inline";
}

/* /dpverbs/info */
static int tel_info(const char *cmd, const char *params, struct rte_tel_data *d)
{
	struct dpv_runtime *rt = dpv_runtime_peek();
	(void)cmd;
	(void)params;
	if (!rt)
		return -ENODEV;
	rte_tel_data_start_dict(d);
	rte_tel_data_add_dict_int(d, "pid", (int)getpid());
	rte_tel_data_add_dict_string(d, "config", rt->conf.source);
	rte_tel_data_add_dict_string(d, "driver", rt->conf.driver);
	rte_tel_data_add_dict_string(d, "mode", mode_name(rt->conf.mode));
	rte_tel_data_add_dict_string(d, "progress", progress_name(rt->conf.progress));
	rte_tel_data_add_dict_string(d, "runtime_dir", rte_eal_get_runtime_dir());
	rte_tel_data_add_dict_int(d, "eal_ours", rt->eal_ours);
	rte_tel_data_add_dict_int(d, "hugepages", rt->conf.huge);
	rte_tel_data_add_dict_int(d, "n_ports", (int)rt->n_ports);
	return 0;
}

/* /dpverbs/ports: ["dpv0", "dpv1"] */
static int tel_ports(const char *cmd, const char *params, struct rte_tel_data *d)
{
	struct dpv_runtime *rt = dpv_runtime_peek();
	(void)cmd;
	(void)params;
	if (!rt)
		return -ENODEV;
	rte_tel_data_start_array(d, RTE_TEL_STRING_VAL);
	for (unsigned int i = 0; i < rt->n_ports; i++)
		rte_tel_data_add_array_string(d, rt->ports[i].name);
	return 0;
}

/* A port by name, or by index in the port table ("0"). */
static struct dpv_port *port_param(struct dpv_runtime *rt, const char *params)
{
	char *end;
	if (!params || !*params)
		return NULL;
	for (unsigned int i = 0; i < rt->n_ports; i++)
		if (!strcmp(rt->ports[i].name, params))
			return &rt->ports[i];
	unsigned long i = strtoul(params, &end, 10);
	if (*end || i >= rt->n_ports)
		return NULL;
	return &rt->ports[i];
}

static void add_port_identity(struct rte_tel_data *d, const struct dpv_port *p)
{
	char buf[INET6_ADDRSTRLEN + 8];
	rte_tel_data_add_dict_string(d, "name", p->name);
	rte_tel_data_add_dict_int(d, "index", (int)p->index);
	rte_tel_data_add_dict_int(d, "ethdev_port", p->eth_port);
	rte_tel_data_add_dict_string(d, "device", p->conf->type == DPV_DEV_RING ? "net_ring"
						  : p->conf->type == DPV_DEV_AF_XDP ? "net_af_xdp"
						  : p->conf->devargs);
	rte_tel_data_add_dict_int(d, "link_up", dpv_port_link_up(p)); /* the state reported */
	rte_tel_data_add_dict_int(d, "link_status", atomic_load(&p->link_up)); /* the link as read */
	rte_tel_data_add_dict_int(d, "mtu", p->mtu);
	rte_tel_data_add_dict_int(d, "path_mtu", (int)p->path_mtu_bytes);
	rte_tel_data_add_dict_u64(d, "speed_mbps", p->eth_speed_mbps);
	snprintf(buf, sizeof(buf), "%02x:%02x:%02x:%02x:%02x:%02x", p->mac[0], p->mac[1],
		 p->mac[2], p->mac[3], p->mac[4], p->mac[5]);
	rte_tel_data_add_dict_string(d, "mac", buf);
	if (p->ipv4.s_addr && inet_ntop(AF_INET, &p->ipv4, buf, sizeof(buf)))
		rte_tel_data_add_dict_string(d, "ipv4", buf);
	rte_tel_data_add_dict_string(d, "pmd", p->pmd_name);
	rte_tel_data_add_dict_int(d, "queues", p->n_qctx);
	rte_tel_data_add_dict_string(d, "flow", dpv_flow_mode_name(p->conf->flow));
	rte_tel_data_add_dict_int(d, "flow_isolated", p->flow.isolated);
	rte_tel_data_add_dict_string(d, "steering", dpv_flow_steering_name(p));
	struct dpv_kif_info ki;
	dpv_kif_info(p, &ki);
	if (!ki.iface[0])
		return;
	rte_tel_data_add_dict_string(d, "kernel_iface", ki.iface);
	if (ki.xdp_mode[0]) {
		rte_tel_data_add_dict_string(d, "xdp_mode", ki.xdp_mode);
		rte_tel_data_add_dict_u64(d, "xdp_roce", ki.xdp[DPV_XDP_ST_ROCE]);
		rte_tel_data_add_dict_u64(d, "xdp_pass", ki.xdp[DPV_XDP_ST_PASS]);
		rte_tel_data_add_dict_u64(d, "xdp_no_xsk", ki.xdp[DPV_XDP_ST_NO_XSK]);
		rte_tel_data_add_dict_u64(d, "xsk_rx_ring_full", ki.xsk_rx_ring_full);
		rte_tel_data_add_dict_u64(d, "xsk_fill_empty", ki.xsk_fill_empty);
		rte_tel_data_add_dict_u64(d, "xsk_rx_dropped", ki.xsk_rx_dropped);
	} else {
		rte_tel_data_add_dict_u64(d, "exc_to_kernel", ki.exc_to_kernel);
		rte_tel_data_add_dict_u64(d, "exc_from_kernel", ki.exc_from_kernel);
		rte_tel_data_add_dict_u64(d, "exc_drops", ki.exc_drops);
	}
}

static void add_port_counters(struct rte_tel_data *d, struct dpv_port *p)
{
	char key[48];
	uint64_t drops = 0;
	/* the engine counts a frame in rx_pkts before rx_roce: reading rx_roce
	 * first keeps rx_pkts >= rx_roce in one reply while traffic runs */
	uint64_t rx_roce = DPV_STAT_READ(p, rx_roce);
	rte_tel_data_add_dict_u64(d, "rx_pkts", DPV_STAT_READ(p, rx_pkts));
	rte_tel_data_add_dict_u64(d, "rx_bytes", DPV_STAT_READ(p, rx_bytes));
	rte_tel_data_add_dict_u64(d, "tx_pkts", DPV_STAT_READ(p, tx_pkts));
	rte_tel_data_add_dict_u64(d, "tx_bytes", DPV_STAT_READ(p, tx_bytes));
	rte_tel_data_add_dict_u64(d, "rx_roce", rx_roce);
	rte_tel_data_add_dict_u64(d, "tx_roce", DPV_STAT_READ(p, tx_roce));
	rte_tel_data_add_dict_u64(d, "rx_loopback", DPV_STAT_READ(p, rx_loopback));
	rte_tel_data_add_dict_u64(d, "tx_loopback", DPV_STAT_READ(p, tx_loopback));
	rte_tel_data_add_dict_u64(d, "arp_rx", DPV_STAT_READ(p, arp_rx));
	rte_tel_data_add_dict_u64(d, "arp_tx", DPV_STAT_READ(p, arp_tx));
	rte_tel_data_add_dict_u64(d, "nd_rx", DPV_STAT_READ(p, nd_rx));
	rte_tel_data_add_dict_u64(d, "nd_tx", DPV_STAT_READ(p, nd_tx));
	rte_tel_data_add_dict_u64(d, "link_ups", DPV_STAT_READ(p, link_ups));
	rte_tel_data_add_dict_u64(d, "link_downs", DPV_STAT_READ(p, link_downs));
	rte_tel_data_add_dict_u64(d, "link_restarts", DPV_STAT_READ(p, link_restarts));
	rte_tel_data_add_dict_u64(d, "memif_prefault_kib", DPV_STAT_READ(p, memif_prefault_kib));
	rte_tel_data_add_dict_u64(d, "rx_other_ctx", DPV_STAT_READ(p, rx_other_ctx));
	for (unsigned int k = 0; k < DPV_DROP_NR; k++)
		drops += DPV_STAT_READ(p, drop[k]);
	rte_tel_data_add_dict_u64(d, "drops", drops);
	for (unsigned int k = 0; k < DPV_DROP_NR; k++) {
		snprintf(key, sizeof(key), "drop_%s", dpv_drop_reason_names[k]);
		rte_tel_data_add_dict_u64(d, key, DPV_STAT_READ(p, drop[k]));
	}
	for (unsigned int k = 0; k < DPV_CNT_NR; k++)
		rte_tel_data_add_dict_u64(d, dpv_cnt_names[k], DPV_STAT_READ(p, cnt[k]));
}

/* /dpverbs/port,<name|index> */
static int tel_port(const char *cmd, const char *params, struct rte_tel_data *d)
{
	struct dpv_runtime *rt = dpv_runtime_peek();
	(void)cmd;
	if (!rt)
		return -ENODEV;
	struct dpv_port *p = port_param(rt, params);
	if (!p)
		return -EINVAL;
	rte_tel_data_start_dict(d);
	add_port_identity(d, p);
	add_port_counters(d, p);
	return 0;
}

/* "ok", "not asked" or "<errno name>: <PMD message>" */
static void flow_answer(char *buf, size_t len, int r, const char *msg)
{
	if (r == 0)
		snprintf(buf, len, "ok");
	else if (r == DPV_FLOW_NOT_ASKED)
		snprintf(buf, len, "not asked");
	else
		snprintf(buf, len, "%s: %s", strerrorname_np(-r) ? strerrorname_np(-r) : "?", msg);
}

/* /dpverbs/flow,<name|index>: the port's rte_flow rules and the PMD's answers */
static int tel_flow(const char *cmd, const char *params, struct rte_tel_data *d)
{
	struct dpv_runtime *rt = dpv_runtime_peek();
	char key[32], buf[RTE_TEL_MAX_STRING_LEN];
	(void)cmd;
	if (!rt)
		return -ENODEV;
	struct dpv_port *p = port_param(rt, params);
	if (!p)
		return -EINVAL;
	const struct dpv_flow_state *fs = &p->flow;
	rte_tel_data_start_dict(d);
	rte_tel_data_add_dict_string(d, "name", p->name);
	rte_tel_data_add_dict_string(d, "pmd", p->pmd_name);
	rte_tel_data_add_dict_int(d, "queues", p->n_qctx);
	rte_tel_data_add_dict_string(d, "flow", dpv_flow_mode_name(p->conf->flow));
	rte_tel_data_add_dict_int(d, "isolated", fs->isolated);
	rte_tel_data_add_dict_string(d, "steering", dpv_flow_steering_name(p));
	snprintf(buf, sizeof(buf), "%.*s", RTE_TEL_MAX_STRING_LEN - 1, fs->reason); /* cut */
	rte_tel_data_add_dict_string(d, "reason", buf);
	rte_tel_data_add_dict_int(d, "rules", (int)fs->n_results);
	rte_tel_data_add_dict_int(d, "flows", (int)fs->n_flows);
	/* raw packet QPs' steering rules (dpv_rawflow.c): the table is read
	 * under its writers' lock (it is freed only after a change) */
	unsigned int n_raw = 0, n_hw = 0;
	rte_spinlock_lock(&p->raw_lock);
	const struct dpv_raw_tab *rt_raw = atomic_load(&p->raw);
	for (unsigned int i = 0; rt_raw && i < rt_raw->n; i++, n_raw++)
		n_hw += rt_raw->r[i].hw != 0;
	rte_spinlock_unlock(&p->raw_lock);
	rte_tel_data_add_dict_int(d, "raw_rules", (int)n_raw);
	rte_tel_data_add_dict_int(d, "raw_rules_pmd", (int)n_hw);
	for (unsigned int i = 0; i < fs->n_results; i++) {
		const struct dpv_flow_result *res = &fs->results[i];
		struct rte_tel_data *r = rte_tel_data_alloc();
		if (!r)
			return -ENOMEM;
		rte_tel_data_start_dict(r);
		rte_tel_data_add_dict_string(r, "match", res->desc);
		flow_answer(buf, sizeof(buf), res->validate, res->msg);
		rte_tel_data_add_dict_string(r, "validate", buf);
		flow_answer(buf, sizeof(buf), res->create, res->msg);
		rte_tel_data_add_dict_string(r, "create", buf);
		snprintf(key, sizeof(key), "rule_%u", i);
		rte_tel_data_add_dict_container(d, key, r, 0);
	}
	return 0;
}

static void add_prob(struct rte_tel_data *d, const char *key, double v)
{
	char buf[32];
	snprintf(buf, sizeof(buf), "%g", v); /* no floating-point values in 22.11 */
	rte_tel_data_add_dict_string(d, key, buf);
}

/* /dpverbs/fault */
static int tel_fault(const char *cmd, const char *params, struct rte_tel_data *d)
{
	struct dpv_runtime *rt = dpv_runtime_peek();
	(void)cmd;
	(void)params;
	if (!rt)
		return -ENODEV;
	const struct dpv_conf_fault *f = &rt->conf.fault;
	const struct dpv_fault_stats *fs = dpv_fault_stats();
	rte_tel_data_start_dict(d);
	rte_tel_data_add_dict_int(d, "enabled", dpv_fault_enabled());
	add_prob(d, "drop", f->drop);
	add_prob(d, "duplicate", f->duplicate);
	add_prob(d, "reorder", f->reorder);
	add_prob(d, "corrupt", f->corrupt);
	rte_tel_data_add_dict_u64(d, "seed", f->seed);
	rte_tel_data_add_dict_u64(d, "dropped", LD(fs->dropped));
	rte_tel_data_add_dict_u64(d, "duplicated", LD(fs->duplicated));
	rte_tel_data_add_dict_u64(d, "reordered", LD(fs->reordered));
	rte_tel_data_add_dict_u64(d, "corrupted", LD(fs->corrupted));
	return 0;
}

/*
 * EAL runs without --huge-unlink so that secondary processes (dpdk-dumpcap)
 * can map our hugepage files by name. At exit remove the files this process
 * maps ("<hugetlbfs>/<file prefix>map_<n>", found in /proc/self/maps): the
 * mappings, ours and an attached secondary's, stay valid until unmapped.
 * A process that dies without exiting leaves them to the next EAL primary,
 * which removes every hugepage file no live process holds locked.
 */
static void huge_files_remove(void)
{
	char pat[300], line[512 + PATH_MAX];
	const char *dir = rte_eal_get_runtime_dir();
	const char *prefix = strrchr(dir, '/');
	FILE *f = fopen("/proc/self/maps", "re");
	if (!f || !prefix || !prefix[1]) {
		if (f)
			fclose(f);
		return;
	}
	snprintf(pat, sizeof(pat), "%smap_", prefix); /* "/<prefix>map_" */
	while (fgets(line, sizeof(line), f)) {
		char *path = strchr(line, '/');
		struct statfs fs;
		if (!path || !strstr(path, pat))
			continue;
		path[strcspn(path, "\n")] = 0;
		if (statfs(path, &fs) == 0 && (uint32_t)fs.f_type == HUGETLBFS_MAGIC)
			unlink(path);
	}
	fclose(f);
}

bool dpv_telemetry_enabled(const struct dpv_runtime *rt)
{
	return rt && rt->conf.telemetry;
}

static void register_cmd(const char *cmd, telemetry_cb fn, const char *help)
{
	int r = rte_telemetry_register_cmd(cmd, fn, help);
	if (r)
		TEL_LOG(WARNING, "cannot register %s: %s", cmd, strerror(-r));
}

void dpv_telemetry_init(struct dpv_runtime *rt)
{
	static bool done;
	if (done)
		return;
	done = true;
	/* dpdk-dumpcap asks the primary to copy its ports' packets */
	dpv_pdump_init(rt);
	if (rt->eal_ours && rt->conf.huge && rte_eal_process_type() == RTE_PROC_PRIMARY)
		atexit(huge_files_remove);
	if (!dpv_telemetry_enabled(rt))
		return;
	register_cmd("/dpverbs/info", tel_info, "dpverbs process and configuration. No parameters");
	register_cmd("/dpverbs/ports", tel_ports, "dpverbs port names. No parameters");
	register_cmd("/dpverbs/port", tel_port, "One dpverbs port's counters. Parameter: name or index");
	register_cmd("/dpverbs/flow", tel_flow, "One dpverbs port's rte_flow rules and the PMD's answers. "
		     "Parameter: name or index");
	register_cmd("/dpverbs/fault", tel_fault, "dpverbs fault injection. No parameters");
}
