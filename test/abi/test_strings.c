/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_strings: the enum-to-string and static-rate exports of the drop-in
 * libibverbs (lib/verbs/dpv_strings.c) against rdma-core 44's exact values.
 *
 * 1. Every value of every enum, the holes and out-of-range values
 *    ("unknown" / -1 / IBV_RATE_MAX) against literal expectations.
 * 2. If Debian's libibverbs.so.1 is installed (path from
 *    $DPV_REAL_IBVERBS, default /usr/lib/x86_64-linux-gnu/libibverbs.so.1;
 *    "none" disables), dlopen it by absolute path and compare all eight
 *    functions with ours over a wide input range.
 *
 * Exit 0 on success, 1 with one line per mismatch otherwise.
 */
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/verbs.h>

#include "dpvt_check.h"

static void expect_str(const char *fn, long value, const char *got, const char *want)
{
	CHECK(got != NULL && strcmp(got, want) == 0, "%s(%ld) = \"%s\", expected \"%s\"", fn, value,
	      got ? got : "(null)", want);
}

static void expect_int(const char *fn, long value, long got, long want)
{
	CHECK(got == want, "%s(%ld) = %ld, expected %ld", fn, value, got, want);
}

struct name_case {
	int value;
	const char *name;
};

static const struct name_case wc_status_cases[] = {
	{ IBV_WC_SUCCESS, "success" },
	{ IBV_WC_LOC_LEN_ERR, "local length error" },
	{ IBV_WC_LOC_QP_OP_ERR, "local QP operation error" },
	{ IBV_WC_LOC_EEC_OP_ERR, "local EE context operation error" },
	{ IBV_WC_LOC_PROT_ERR, "local protection error" },
	{ IBV_WC_WR_FLUSH_ERR, "Work Request Flushed Error" },
	{ IBV_WC_MW_BIND_ERR, "memory management operation error" },
	{ IBV_WC_BAD_RESP_ERR, "bad response error" },
	{ IBV_WC_LOC_ACCESS_ERR, "local access error" },
	{ IBV_WC_REM_INV_REQ_ERR, "remote invalid request error" },
	{ IBV_WC_REM_ACCESS_ERR, "remote access error" },
	{ IBV_WC_REM_OP_ERR, "remote operation error" },
	{ IBV_WC_RETRY_EXC_ERR, "transport retry counter exceeded" },
	{ IBV_WC_RNR_RETRY_EXC_ERR, "RNR retry counter exceeded" },
	{ IBV_WC_LOC_RDD_VIOL_ERR, "local RDD violation error" },
	{ IBV_WC_REM_INV_RD_REQ_ERR, "remote invalid RD request" },
	{ IBV_WC_REM_ABORT_ERR, "aborted error" },
	{ IBV_WC_INV_EECN_ERR, "invalid EE context number" },
	{ IBV_WC_INV_EEC_STATE_ERR, "invalid EE context state" },
	{ IBV_WC_FATAL_ERR, "fatal error" },
	{ IBV_WC_RESP_TIMEOUT_ERR, "response timeout error" },
	{ IBV_WC_GENERAL_ERR, "general error" },
	{ IBV_WC_TM_ERR, "TM error" },
	{ IBV_WC_TM_RNDV_INCOMPLETE, "TM software rendezvous" },
	{ IBV_WC_TM_RNDV_INCOMPLETE + 1, "unknown" },
	{ 100, "unknown" },
	{ -1, "unknown" },
	{ INT_MAX, "unknown" },
	{ INT_MIN, "unknown" },
};

static const struct name_case event_cases[] = {
	{ IBV_EVENT_CQ_ERR, "CQ error" },
	{ IBV_EVENT_QP_FATAL, "local work queue catastrophic error" },
	{ IBV_EVENT_QP_REQ_ERR, "invalid request local work queue error" },
	{ IBV_EVENT_QP_ACCESS_ERR, "local access violation work queue error" },
	{ IBV_EVENT_COMM_EST, "communication established" },
	{ IBV_EVENT_SQ_DRAINED, "send queue drained" },
	{ IBV_EVENT_PATH_MIG, "path migrated" },
	{ IBV_EVENT_PATH_MIG_ERR, "path migration request error" },
	{ IBV_EVENT_DEVICE_FATAL, "local catastrophic error" },
	{ IBV_EVENT_PORT_ACTIVE, "port active" },
	{ IBV_EVENT_PORT_ERR, "port error" },
	{ IBV_EVENT_LID_CHANGE, "LID change" },
	{ IBV_EVENT_PKEY_CHANGE, "P_Key change" },
	{ IBV_EVENT_SM_CHANGE, "SM change" },
	{ IBV_EVENT_SRQ_ERR, "SRQ catastrophic error" },
	{ IBV_EVENT_SRQ_LIMIT_REACHED, "SRQ limit reached" },
	{ IBV_EVENT_QP_LAST_WQE_REACHED, "last WQE reached" },
	{ IBV_EVENT_CLIENT_REREGISTER, "client reregistration" },
	{ IBV_EVENT_GID_CHANGE, "GID table change" },
	{ IBV_EVENT_WQ_FATAL, "WQ fatal" },
	{ IBV_EVENT_WQ_FATAL + 1, "unknown" },
	{ -1, "unknown" },
	{ INT_MAX, "unknown" },
	{ INT_MIN, "unknown" },
};

static const struct name_case node_cases[] = {
	{ IBV_NODE_UNKNOWN, "unknown" },
	{ IBV_NODE_CA, "InfiniBand channel adapter" },
	{ IBV_NODE_SWITCH, "InfiniBand switch" },
	{ IBV_NODE_ROUTER, "InfiniBand router" },
	{ IBV_NODE_RNIC, "iWARP NIC" },
	{ IBV_NODE_USNIC, "usNIC" },
	{ IBV_NODE_USNIC_UDP, "usNIC UDP" },
	{ IBV_NODE_UNSPECIFIED, "unspecified" },
	{ 0, "unknown" }, /* IBV_NODE_CA is 1: 0 is a hole */
	{ IBV_NODE_UNSPECIFIED + 1, "unknown" },
	{ -2, "unknown" },
	{ INT_MAX, "unknown" },
	{ INT_MIN, "unknown" },
};

static const struct name_case port_state_cases[] = {
	{ IBV_PORT_NOP, "no state change (NOP)" },
	{ IBV_PORT_DOWN, "down" },
	{ IBV_PORT_INIT, "init" },
	{ IBV_PORT_ARMED, "armed" },
	{ IBV_PORT_ACTIVE, "active" },
	{ IBV_PORT_ACTIVE_DEFER, "active defer" },
	{ IBV_PORT_ACTIVE_DEFER + 1, "unknown" },
	{ -1, "unknown" },
	{ INT_MAX, "unknown" },
	{ INT_MIN, "unknown" },
};

/* rate, multiple of 2.5 Gb/s (-1: none), Mb/s */
static const struct {
	int rate;
	int mult;
	int mbps;
} rate_cases[] = {
	{ IBV_RATE_MAX, -1, -1 },
	{ 1, -1, -1 }, /* hole in enum ibv_rate */
	{ IBV_RATE_2_5_GBPS, 1, 2500 },
	{ IBV_RATE_10_GBPS, 4, 10000 },
	{ IBV_RATE_30_GBPS, 12, 30000 },
	{ IBV_RATE_5_GBPS, 2, 5000 },
	{ IBV_RATE_20_GBPS, 8, 20000 },
	{ IBV_RATE_40_GBPS, 16, 40000 },
	{ IBV_RATE_60_GBPS, 24, 60000 },
	{ IBV_RATE_80_GBPS, 32, 80000 },
	{ IBV_RATE_120_GBPS, 48, 120000 },
	{ IBV_RATE_14_GBPS, -1, 14062 },
	{ IBV_RATE_56_GBPS, -1, 56250 },
	{ IBV_RATE_112_GBPS, -1, 112500 },
	{ IBV_RATE_168_GBPS, -1, 168750 },
	{ IBV_RATE_25_GBPS, -1, 25781 },
	{ IBV_RATE_100_GBPS, -1, 103125 },
	{ IBV_RATE_200_GBPS, -1, 206250 },
	{ IBV_RATE_300_GBPS, -1, 309375 },
	{ IBV_RATE_28_GBPS, 11, 28125 },
	{ IBV_RATE_50_GBPS, 20, 53125 },
	{ IBV_RATE_400_GBPS, 160, 425000 },
	{ IBV_RATE_600_GBPS, 240, 637500 },
	{ IBV_RATE_800_GBPS, 320, 850000 },
	{ IBV_RATE_1200_GBPS, 480, 1275000 },
	{ IBV_RATE_1200_GBPS + 1, -1, -1 },
	{ -1, -1, -1 },
	{ INT_MAX, -1, -1 },
};

#define N(a) (sizeof(a) / sizeof((a)[0]))

static void test_literal(void)
{
	for (size_t i = 0; i < N(wc_status_cases); i++)
		expect_str("ibv_wc_status_str", wc_status_cases[i].value,
			   ibv_wc_status_str((enum ibv_wc_status)wc_status_cases[i].value),
			   wc_status_cases[i].name);
	for (size_t i = 0; i < N(event_cases); i++)
		expect_str("ibv_event_type_str", event_cases[i].value,
			   ibv_event_type_str((enum ibv_event_type)event_cases[i].value),
			   event_cases[i].name);
	for (size_t i = 0; i < N(node_cases); i++)
		expect_str("ibv_node_type_str", node_cases[i].value,
			   ibv_node_type_str((enum ibv_node_type)node_cases[i].value),
			   node_cases[i].name);
	for (size_t i = 0; i < N(port_state_cases); i++)
		expect_str("ibv_port_state_str", port_state_cases[i].value,
			   ibv_port_state_str((enum ibv_port_state)port_state_cases[i].value),
			   port_state_cases[i].name);

	for (size_t i = 0; i < N(rate_cases); i++) {
		enum ibv_rate r = (enum ibv_rate)rate_cases[i].rate;
		int mult = rate_cases[i].mult, mbps = rate_cases[i].mbps;

		expect_int("ibv_rate_to_mult", rate_cases[i].rate, ibv_rate_to_mult(r), mult);
		expect_int("ibv_rate_to_mbps", rate_cases[i].rate, ibv_rate_to_mbps(r), mbps);
		if (mult > 0)
			expect_int("mult_to_ibv_rate", mult, mult_to_ibv_rate(mult), r);
		if (mbps > 0)
			expect_int("mbps_to_ibv_rate", mbps, mbps_to_ibv_rate(mbps), r);
	}
	/* values with no rate */
	static const int bad_mult[] = { 0, -1, 3, 5, 6, 10, 64, 100, 1000, INT_MAX, INT_MIN };
	static const int bad_mbps[] = { 0, -1, 1, 2499, 2501, 14063, 25000, 50000, 100000,
					103124, 200000, 400000, INT_MAX, INT_MIN };

	for (size_t i = 0; i < N(bad_mult); i++)
		expect_int("mult_to_ibv_rate", bad_mult[i], mult_to_ibv_rate(bad_mult[i]),
			   IBV_RATE_MAX);
	for (size_t i = 0; i < N(bad_mbps); i++)
		expect_int("mbps_to_ibv_rate", bad_mbps[i], mbps_to_ibv_rate(bad_mbps[i]),
			   IBV_RATE_MAX);
}

/* ---- optional comparison with the installed rdma-core library ------------ */

typedef const char *(*str_fn)(int);
typedef int (*int_fn)(int);

/* Our functions behind a uniform int signature (enums are ints in the ABI). */
static const char *our_wc_status_str(int v) { return ibv_wc_status_str((enum ibv_wc_status)v); }
static const char *our_event_type_str(int v) { return ibv_event_type_str((enum ibv_event_type)v); }
static const char *our_node_type_str(int v) { return ibv_node_type_str((enum ibv_node_type)v); }
static const char *our_port_state_str(int v) { return ibv_port_state_str((enum ibv_port_state)v); }
static int our_rate_to_mult(int v) { return ibv_rate_to_mult((enum ibv_rate)v); }
static int our_rate_to_mbps(int v) { return ibv_rate_to_mbps((enum ibv_rate)v); }
static int our_mult_to_rate(int v) { return (int)mult_to_ibv_rate(v); }
static int our_mbps_to_rate(int v) { return (int)mbps_to_ibv_rate(v); }

static void compare_str(void *h, const char *sym, str_fn ours)
{
	str_fn theirs = (str_fn)dlsym(h, sym);

	if (!CHECK(theirs != NULL, "reference library lacks %s", sym))
		return;
	for (int v = -300; v <= 300; v++)
		CHECK(strcmp(theirs(v), ours(v)) == 0, "%s(%d): ours \"%s\", rdma-core \"%s\"", sym, v, ours(v),
		      theirs(v));
}

static void compare_int(void *h, const char *sym, int_fn ours, int lo, int hi, int step)
{
	int_fn theirs = (int_fn)dlsym(h, sym);

	if (!CHECK(theirs != NULL, "reference library lacks %s", sym))
		return;
	for (long v = lo; v <= hi; v += step)
		CHECK(theirs((int)v) == ours((int)v), "%s(%ld): ours %d, rdma-core %d", sym, v, ours((int)v),
		      theirs((int)v));
}

static void test_against_rdma_core(void)
{
	const char *path = getenv("DPV_REAL_IBVERBS");
	void *h;

	if (path == NULL)
		path = "/usr/lib/x86_64-linux-gnu/libibverbs.so.1";
	if (strcmp(path, "none") == 0 || path[0] != '/') {
		printf("rdma-core comparison: skipped\n");
		return;
	}
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (h == NULL) {
		printf("rdma-core comparison: skipped (%s)\n", dlerror());
		return;
	}
	/* Refuse to compare against ourselves (a dpverbs drop-in at that path). */
	if (dlsym(h, "ibv_alloc_shpd") != NULL || dlsym(h, "ibv_query_gid_type") == NULL) {
		printf("rdma-core comparison: skipped (%s is not rdma-core's)\n", path);
		dlclose(h);
		return;
	}
	compare_str(h, "ibv_wc_status_str", our_wc_status_str);
	compare_str(h, "ibv_event_type_str", our_event_type_str);
	compare_str(h, "ibv_node_type_str", our_node_type_str);
	compare_str(h, "ibv_port_state_str", our_port_state_str);
	compare_int(h, "ibv_rate_to_mult", our_rate_to_mult, -300, 300, 1);
	compare_int(h, "ibv_rate_to_mbps", our_rate_to_mbps, -300, 300, 1);
	compare_int(h, "mult_to_ibv_rate", our_mult_to_rate, -10, 2000, 1);
	/* every table entry is a whole number of Mb/s; scan densely up to 1.3 Tb/s */
	compare_int(h, "mbps_to_ibv_rate", our_mbps_to_rate, -10, 1300000, 1);
	printf("rdma-core comparison: done against %s\n", path);
	dlclose(h);
}

int main(void)
{
	test_literal();
	test_against_rdma_core();
	return dpvt_finish();
}
