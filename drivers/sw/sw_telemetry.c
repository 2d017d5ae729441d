/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The software driver's telemetry commands (dpdk-telemetry.py):
 *
 *   /dpverbs/qps           {"<qpn>": "<type> <state> <port>", ...}, the first
 *                          RTE_TEL_MAX_DICT_ENTRIES QPs by number
 *   /dpverbs/qp,<qpn>      one QP (decimal or 0x hex): type, state, port,
 *                          destination QP, PSNs, window, packet counters and
 *                          the transport counters (dpv_cnt_names)
 *
 * The callbacks run on a telemetry thread of EAL. A QP found through the
 * object pool stays allocated while the reader holds the rx_lock of any
 * engine context: sw_destroy_qp() takes every context's rx_lock once after
 * the façade removed the QP from the pool, before its memory is freed. So a
 * QP is looked up and copied under the first context's rx_lock (the engine
 * skips a context whose lock is busy), and the reply is built after.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_telemetry.h>

#include "dpv_telemetry.h"
#include "sw_loc.h"
#include "sw_log.h"
#include "sw_qp_lock.h"

/* What a reply needs of one QP, copied under the lock. */
struct qp_snap {
	uint32_t qpn;
	uint8_t type;
	uint8_t state;
	uint16_t port;
	uint32_t dest_qp, sq_psn, rq_psn, cwnd;
	uint64_t tx_pkts, rx_pkts, rx_drops;
	uint64_t cnt[DPV_CNT_NR];
};

static const char *type_name(unsigned int t)
{
	static const char *const n[] = {
		[IBV_QPT_RC] = "RC", [IBV_QPT_UC] = "UC", [IBV_QPT_UD] = "UD", [IBV_QPT_RAW_PACKET] = "RAW_PACKET",
		[IBV_QPT_XRC_SEND] = "XRC_SEND", [IBV_QPT_XRC_RECV] = "XRC_RECV",
	};
	return t < RTE_DIM(n) && n[t] ? n[t] : "?";
}

static const char *state_name(unsigned int s)
{
	static const char *const n[] = {
		[IBV_QPS_RESET] = "RESET", [IBV_QPS_INIT] = "INIT", [IBV_QPS_RTR] = "RTR",
		[IBV_QPS_RTS] = "RTS", [IBV_QPS_SQD] = "SQD", [IBV_QPS_SQE] = "SQE",
		[IBV_QPS_ERR] = "ERR",
	};
	return s < RTE_DIM(n) && n[s] ? n[s] : "?";
}

#define RD(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)

static void snap_qp(struct qp_snap *o, struct sw_qp *qp, bool full)
{
	o->qpn = qp->qpn;
	o->type = (uint8_t)qp->type;
	o->state = (uint8_t)sw_qp_state(qp);
	o->port = (uint16_t)qp->port->index;
	if (!full)
		return;
	o->dest_qp = RD(qp->attr.dest_qp_num);
	o->sq_psn = RD(qp->req.psn);
	o->rq_psn = RD(qp->resp.psn);
	o->cwnd = RD(qp->req.cwnd);
	o->tx_pkts = RD(qp->tx_pkts);
	o->rx_pkts = RD(qp->rx_pkts);
	o->rx_drops = RD(qp->rx_drops);
	for (unsigned int k = 0; k < DPV_CNT_NR; k++)
		o->cnt[k] = RD(qp->cnt[k]);
}

/* The lock that keeps looked-up QPs allocated (see above). */
static rte_spinlock_t *qp_guard(struct dpv_runtime *rt)
{
	return rt && rt->n_ports && rt->ports[0].n_qctx ? &rt->ports[0].qctx[0].rx_lock : NULL;
}

/* Copy up to max QPs, by number; returns how many. */
static unsigned int snap_all(struct dpv_runtime *rt, struct qp_snap *out, unsigned int max)
{
	rte_spinlock_t *guard = qp_guard(rt);
	uint32_t first, last;
	unsigned int n = 0;
	if (!guard)
		return 0;
	dpv_pool_range(DPV_OBJ_QP, &first, &last);
	rte_spinlock_lock(guard);
	for (uint32_t qpn = first; qpn && qpn <= last && n < max; qpn++) {
		struct sw_qp *qp = sw_qp_lookup(qpn);
		if (qp)
			snap_qp(&out[n++], qp, false);
	}
	rte_spinlock_unlock(guard);
	return n;
}

/* Copy one QP; false if there is none with this number. */
static bool snap_one(struct dpv_runtime *rt, uint32_t qpn, struct qp_snap *out)
{
	rte_spinlock_t *guard = qp_guard(rt);
	if (!guard)
		return false;
	rte_spinlock_lock(guard);
	struct sw_qp *qp = sw_qp_lookup(qpn);
	if (qp)
		snap_qp(out, qp, true);
	rte_spinlock_unlock(guard);
	return qp != NULL;
}

/* /dpverbs/qps */
static int tel_qps(const char *cmd, const char *params, struct rte_tel_data *d)
{
	struct dpv_runtime *rt = dpv_runtime_peek();
	char key[16], val[64];
	(void)cmd;
	(void)params;
	if (!rt)
		return -ENODEV;
	struct qp_snap *s = calloc(RTE_TEL_MAX_DICT_ENTRIES, sizeof(*s));
	if (!s)
		return -ENOMEM;
	unsigned int n = snap_all(rt, s, RTE_TEL_MAX_DICT_ENTRIES);
	rte_tel_data_start_dict(d);
	for (unsigned int i = 0; i < n; i++) {
		snprintf(key, sizeof(key), "%u", s[i].qpn);
		snprintf(val, sizeof(val), "%s %s %s", type_name(s[i].type), state_name(s[i].state),
			 s[i].port < rt->n_ports ? rt->ports[s[i].port].name : "?");
		rte_tel_data_add_dict_string(d, key, val);
	}
	free(s);
	return 0;
}

/* /dpverbs/qp,<qpn> */
static int tel_qp(const char *cmd, const char *params, struct rte_tel_data *d)
{
	struct dpv_runtime *rt = dpv_runtime_peek();
	struct qp_snap s;
	char *end;
	(void)cmd;
	if (!rt)
		return -ENODEV;
	if (!params || !*params)
		return -EINVAL;
	unsigned long qpn = strtoul(params, &end, 0);
	if (*end || qpn == 0 || qpn > DPV_QPN_MASK)
		return -EINVAL;
	if (!snap_one(rt, (uint32_t)qpn, &s))
		return -ENOENT;
	rte_tel_data_start_dict(d);
	rte_tel_data_add_dict_u64(d, "qpn", s.qpn);
	rte_tel_data_add_dict_string(d, "type", type_name(s.type));
	rte_tel_data_add_dict_string(d, "state", state_name(s.state));
	rte_tel_data_add_dict_string(d, "port", s.port < rt->n_ports ? rt->ports[s.port].name : "?");
	rte_tel_data_add_dict_u64(d, "dest_qp", s.dest_qp);
	rte_tel_data_add_dict_u64(d, "sq_psn", s.sq_psn);
	rte_tel_data_add_dict_u64(d, "rq_psn", s.rq_psn);
	rte_tel_data_add_dict_u64(d, "cwnd", s.cwnd);
	rte_tel_data_add_dict_u64(d, "tx_pkts", s.tx_pkts);
	rte_tel_data_add_dict_u64(d, "rx_pkts", s.rx_pkts);
	rte_tel_data_add_dict_u64(d, "rx_drops", s.rx_drops);
	for (unsigned int k = 0; k < DPV_CNT_NR; k++)
		rte_tel_data_add_dict_u64(d, dpv_cnt_names[k], s.cnt[k]);
	return 0;
}

void sw_telemetry_init(struct dpv_runtime *rt)
{
	static bool done;
	if (done || !dpv_telemetry_enabled(rt))
		return;
	done = true;
	if (rte_telemetry_register_cmd("/dpverbs/qps", tel_qps,
				       "dpverbs QPs: type state port. No parameters") ||
	    rte_telemetry_register_cmd("/dpverbs/qp", tel_qp,
				       "One dpverbs QP's counters. Parameter: QPN"))
		SW_LOG(WARNING, "cannot register the telemetry commands /dpverbs/qps, /dpverbs/qp");
}
