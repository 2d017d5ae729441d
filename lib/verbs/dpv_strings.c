/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * Enum-to-string helpers and static-rate conversions of the libibverbs ABI.
 *
 * The strings and the numeric tables are part of the observable behaviour of
 * rdma-core 44 (applications print them, test suites compare them), so they
 * are reproduced exactly; test/abi/test_strings.c checks every entry and, when
 * Debian's libibverbs.so.1 is installed, compares against it value by value.
 *
 * Exports (see compat/libibverbs.map):
 *   IBVERBS_1.0: ibv_rate_to_mult, mult_to_ibv_rate
 *   IBVERBS_1.1: ibv_wc_status_str, ibv_event_type_str, ibv_node_type_str,
 *                ibv_port_state_str, ibv_rate_to_mbps, mbps_to_ibv_rate
 */
#include <stddef.h>

#include <infiniband/verbs.h>

/*
 * Everything defined here with external linkage is an ABI export; the version
 * script (compat/libibverbs.map) decides what is exported. Default visibility
 * keeps that true even if the library is built with -fvisibility=hidden.
 */
#pragma GCC visibility push(default)

#define DPV_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/** Name returned for any value outside a table (matches rdma-core). */
static const char dpv_unknown_str[] = "unknown";

/**
 * Look up @p value in a name table indexed by enum value.
 * Negative values, values past the end and holes give "unknown".
 */
static const char *dpv_enum_name(const char *const *names, size_t n, long value)
{
	if (value < 0 || (size_t)value >= n || names[value] == NULL)
		return dpv_unknown_str;
	return names[value];
}

static const char *const dpv_node_type_names[] = {
	[IBV_NODE_CA] = "InfiniBand channel adapter",
	[IBV_NODE_SWITCH] = "InfiniBand switch",
	[IBV_NODE_ROUTER] = "InfiniBand router",
	[IBV_NODE_RNIC] = "iWARP NIC",
	[IBV_NODE_USNIC] = "usNIC",
	[IBV_NODE_USNIC_UDP] = "usNIC UDP",
	[IBV_NODE_UNSPECIFIED] = "unspecified",
};

/**
 * ibv_node_type_str - name of an enum ibv_node_type value.
 * @return a static string; "unknown" for IBV_NODE_UNKNOWN (-1) and any other
 *         value outside IBV_NODE_CA..IBV_NODE_UNSPECIFIED. Never NULL.
 */
const char *ibv_node_type_str(enum ibv_node_type node_type)
{
	return dpv_enum_name(dpv_node_type_names,
			     DPV_ARRAY_SIZE(dpv_node_type_names), (long)node_type);
}

static const char *const dpv_port_state_names[] = {
	[IBV_PORT_NOP] = "no state change (NOP)",
	[IBV_PORT_DOWN] = "down",
	[IBV_PORT_INIT] = "init",
	[IBV_PORT_ARMED] = "armed",
	[IBV_PORT_ACTIVE] = "active",
	[IBV_PORT_ACTIVE_DEFER] = "active defer",
};

/**
 * ibv_port_state_str - name of an enum ibv_port_state value.
 * Note: these are the library's strings ("active"); ibv_devinfo prints its
 * own "PORT_ACTIVE" names and does not call this function.
 * @return a static string; "unknown" outside IBV_PORT_NOP..IBV_PORT_ACTIVE_DEFER.
 */
const char *ibv_port_state_str(enum ibv_port_state port_state)
{
	return dpv_enum_name(dpv_port_state_names,
			     DPV_ARRAY_SIZE(dpv_port_state_names), (long)port_state);
}

static const char *const dpv_event_type_names[] = {
	[IBV_EVENT_CQ_ERR] = "CQ error",
	[IBV_EVENT_QP_FATAL] = "local work queue catastrophic error",
	[IBV_EVENT_QP_REQ_ERR] = "invalid request local work queue error",
	[IBV_EVENT_QP_ACCESS_ERR] = "local access violation work queue error",
	[IBV_EVENT_COMM_EST] = "communication established",
	[IBV_EVENT_SQ_DRAINED] = "send queue drained",
	[IBV_EVENT_PATH_MIG] = "path migrated",
	[IBV_EVENT_PATH_MIG_ERR] = "path migration request error",
	[IBV_EVENT_DEVICE_FATAL] = "local catastrophic error",
	[IBV_EVENT_PORT_ACTIVE] = "port active",
	[IBV_EVENT_PORT_ERR] = "port error",
	[IBV_EVENT_LID_CHANGE] = "LID change",
	[IBV_EVENT_PKEY_CHANGE] = "P_Key change",
	[IBV_EVENT_SM_CHANGE] = "SM change",
	[IBV_EVENT_SRQ_ERR] = "SRQ catastrophic error",
	[IBV_EVENT_SRQ_LIMIT_REACHED] = "SRQ limit reached",
	[IBV_EVENT_QP_LAST_WQE_REACHED] = "last WQE reached",
	[IBV_EVENT_CLIENT_REREGISTER] = "client reregistration",
	[IBV_EVENT_GID_CHANGE] = "GID table change",
	[IBV_EVENT_WQ_FATAL] = "WQ fatal",
};

/**
 * ibv_event_type_str - name of an enum ibv_event_type (async event) value.
 * @return a static string; "unknown" outside IBV_EVENT_CQ_ERR..IBV_EVENT_WQ_FATAL.
 */
const char *ibv_event_type_str(enum ibv_event_type event)
{
	return dpv_enum_name(dpv_event_type_names,
			     DPV_ARRAY_SIZE(dpv_event_type_names), (long)event);
}

static const char *const dpv_wc_status_names[] = {
	[IBV_WC_SUCCESS] = "success",
	[IBV_WC_LOC_LEN_ERR] = "local length error",
	[IBV_WC_LOC_QP_OP_ERR] = "local QP operation error",
	[IBV_WC_LOC_EEC_OP_ERR] = "local EE context operation error",
	[IBV_WC_LOC_PROT_ERR] = "local protection error",
	[IBV_WC_WR_FLUSH_ERR] = "Work Request Flushed Error",
	[IBV_WC_MW_BIND_ERR] = "memory management operation error",
	[IBV_WC_BAD_RESP_ERR] = "bad response error",
	[IBV_WC_LOC_ACCESS_ERR] = "local access error",
	[IBV_WC_REM_INV_REQ_ERR] = "remote invalid request error",
	[IBV_WC_REM_ACCESS_ERR] = "remote access error",
	[IBV_WC_REM_OP_ERR] = "remote operation error",
	[IBV_WC_RETRY_EXC_ERR] = "transport retry counter exceeded",
	[IBV_WC_RNR_RETRY_EXC_ERR] = "RNR retry counter exceeded",
	[IBV_WC_LOC_RDD_VIOL_ERR] = "local RDD violation error",
	[IBV_WC_REM_INV_RD_REQ_ERR] = "remote invalid RD request",
	[IBV_WC_REM_ABORT_ERR] = "aborted error",
	[IBV_WC_INV_EECN_ERR] = "invalid EE context number",
	[IBV_WC_INV_EEC_STATE_ERR] = "invalid EE context state",
	[IBV_WC_FATAL_ERR] = "fatal error",
	[IBV_WC_RESP_TIMEOUT_ERR] = "response timeout error",
	[IBV_WC_GENERAL_ERR] = "general error",
	[IBV_WC_TM_ERR] = "TM error",
	[IBV_WC_TM_RNDV_INCOMPLETE] = "TM software rendezvous",
};

/**
 * ibv_wc_status_str - name of an enum ibv_wc_status (completion status) value.
 * @return a static string; "unknown" outside IBV_WC_SUCCESS..IBV_WC_TM_RNDV_INCOMPLETE.
 */
const char *ibv_wc_status_str(enum ibv_wc_status status)
{
	return dpv_enum_name(dpv_wc_status_names,
			     DPV_ARRAY_SIZE(dpv_wc_status_names), (long)status);
}

/*
 * Static rates. mult is the multiple of 2.5 Gb/s used by the IBA StaticRate
 * encoding; only the SDR/DDR/QDR-style rates and a few newer ones have one
 * (0 = none: ibv_rate_to_mult gives -1 and mult_to_ibv_rate never returns
 * that rate). mbps is the effective data rate after line encoding, which is
 * why FDR/EDR rates are not round numbers (e.g. 100 Gb/s EDR -> 103125).
 */
static const struct dpv_rate_info {
	enum ibv_rate rate;
	int mult;
	int mbps;
} dpv_rates[] = {
	{ IBV_RATE_2_5_GBPS, 1, 2500 },
	{ IBV_RATE_5_GBPS, 2, 5000 },
	{ IBV_RATE_10_GBPS, 4, 10000 },
	{ IBV_RATE_20_GBPS, 8, 20000 },
	{ IBV_RATE_30_GBPS, 12, 30000 },
	{ IBV_RATE_40_GBPS, 16, 40000 },
	{ IBV_RATE_60_GBPS, 24, 60000 },
	{ IBV_RATE_80_GBPS, 32, 80000 },
	{ IBV_RATE_120_GBPS, 48, 120000 },
	{ IBV_RATE_14_GBPS, 0, 14062 },
	{ IBV_RATE_56_GBPS, 0, 56250 },
	{ IBV_RATE_112_GBPS, 0, 112500 },
	{ IBV_RATE_168_GBPS, 0, 168750 },
	{ IBV_RATE_25_GBPS, 0, 25781 },
	{ IBV_RATE_100_GBPS, 0, 103125 },
	{ IBV_RATE_200_GBPS, 0, 206250 },
	{ IBV_RATE_300_GBPS, 0, 309375 },
	{ IBV_RATE_28_GBPS, 11, 28125 },
	{ IBV_RATE_50_GBPS, 20, 53125 },
	{ IBV_RATE_400_GBPS, 160, 425000 },
	{ IBV_RATE_600_GBPS, 240, 637500 },
	{ IBV_RATE_800_GBPS, 320, 850000 },
	{ IBV_RATE_1200_GBPS, 480, 1275000 },
};

static const struct dpv_rate_info *dpv_rate_find(enum ibv_rate rate)
{
	for (size_t i = 0; i < DPV_ARRAY_SIZE(dpv_rates); i++)
		if (dpv_rates[i].rate == rate)
			return &dpv_rates[i];
	return NULL;
}

/**
 * ibv_rate_to_mult - convert a static rate to a multiple of 2.5 Gb/s.
 * @return the multiplier (e.g. IBV_RATE_10_GBPS -> 4), or -1 for
 *         IBV_RATE_MAX and rates without a 2.5 Gb/s multiple (FDR/EDR/HDR...).
 */
int __attribute__((const)) ibv_rate_to_mult(enum ibv_rate rate)
{
	const struct dpv_rate_info *r = dpv_rate_find(rate);

	return (r != NULL && r->mult > 0) ? r->mult : -1;
}

/**
 * mult_to_ibv_rate - inverse of ibv_rate_to_mult.
 * @return the rate whose multiplier is @p mult, or IBV_RATE_MAX if none.
 */
enum ibv_rate __attribute__((const)) mult_to_ibv_rate(int mult)
{
	if (mult <= 0)
		return IBV_RATE_MAX;
	for (size_t i = 0; i < DPV_ARRAY_SIZE(dpv_rates); i++)
		if (dpv_rates[i].mult == mult)
			return dpv_rates[i].rate;
	return IBV_RATE_MAX;
}

/**
 * ibv_rate_to_mbps - convert a static rate to its data rate in Mb/s.
 * @return Mb/s (e.g. IBV_RATE_100_GBPS -> 103125), or -1 for IBV_RATE_MAX
 *         and unknown values.
 */
int __attribute__((const)) ibv_rate_to_mbps(enum ibv_rate rate)
{
	const struct dpv_rate_info *r = dpv_rate_find(rate);

	return r != NULL ? r->mbps : -1;
}

/**
 * mbps_to_ibv_rate - inverse of ibv_rate_to_mbps (exact match only).
 * @return the rate whose data rate is exactly @p mbps, or IBV_RATE_MAX.
 */
enum ibv_rate __attribute__((const)) mbps_to_ibv_rate(int mbps)
{
	if (mbps <= 0)
		return IBV_RATE_MAX;
	for (size_t i = 0; i < DPV_ARRAY_SIZE(dpv_rates); i++)
		if (dpv_rates[i].mbps == mbps)
			return dpv_rates[i].rate;
	return IBV_RATE_MAX;
}

#pragma GCC visibility pop
