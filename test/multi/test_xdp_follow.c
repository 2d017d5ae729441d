/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * An "af_xdp" port without "ipv4"/"ipv6"/"mtu" follows its kernel interface
 * while it runs (lib/port/dpv_kif.c): run as root; the test unshares a
 * network namespace of its own with a veth pair in it and changes the
 * interface under a running device:
 *   - at start: GID 1 is the interface's IPv4 address, the port ACTIVE,
 *     the active MTU the one of its 1500-byte MTU (1024), the LID the low
 *     16 bits of the address;
 *   - an IPv6 global address added: IBV_EVENT_GID_CHANGE and GID 2 is it;
 *   - the IPv4 address removed: the event again, GID 1 empty, LID 0;
 *     another added: GID 1 is that one;
 *   - the MTU set to 1000: active MTU 512; back to 1500: 1024;
 *   - link down: IBV_EVENT_PORT_ERR and DOWN; up: IBV_EVENT_PORT_ACTIVE and
 *     ACTIVE, and the IPv6 address gone from GID 2 as from the interface;
 *   - the XDP program's address map holds the new addresses and not the
 *     removed one (bpftool map dump name dpv_addrs).
 * Exit 77 when not root or without network namespaces / AF_XDP.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dpvt_check.h"
#include "dpvt_verbs.h"

#define IF_A "xfa"
#define IF_B "xfb"

static int sh(const char *cmd)
{
	int r = system(cmd);
	if (r != 0)
		fprintf(stderr, "xdp_follow: '%s' exited %d\n", cmd, r);
	return r;
}

static bool gid_is(struct ibv_context *ctx, int idx, const char *addr)
{
	union ibv_gid g, want;
	memset(&want, 0, sizeof(want));
	if (addr && strchr(addr, ':')) {
		inet_pton(AF_INET6, addr, want.raw);
	} else if (addr) {
		want.raw[10] = want.raw[11] = 0xff;
		inet_pton(AF_INET, addr, want.raw + 12);
	}
	return ibv_query_gid(ctx, 1, idx, &g) == 0 && !memcmp(g.raw, want.raw, 16);
}

/* Polls (bounded) until port attribute check holds, driving progress. */
static bool port_until(struct ibv_context *ctx, bool (*ok)(const struct ibv_port_attr *, long), long arg)
{
	for (int i = 0; i < 300; i++) {
		struct ibv_port_attr pa;
		if (ibv_query_port(ctx, 1, &pa) == 0 && ok(&pa, arg))
			return true;
		usleep(10000);
	}
	return false;
}

static bool mtu_is(const struct ibv_port_attr *pa, long m) { return pa->active_mtu == (enum ibv_mtu)m; }
static bool state_is(const struct ibv_port_attr *pa, long s) { return pa->state == (enum ibv_port_state)s; }

static bool setup(char *cfg_path, size_t len)
{
	if (getuid() != 0 || unshare(CLONE_NEWNET) != 0) {
		printf("xdp_follow: needs root and network namespaces: skipped\n");
		return false;
	}
	if (sh("ip link set lo up && ip link add " IF_A " type veth peer name " IF_B " && "
	       "sysctl -qw net.ipv6.conf." IF_A ".accept_dad=0 net.ipv6.conf." IF_B ".accept_dad=0 && "
	       "ip addr add 10.61.0.1/24 dev " IF_A " && ip addr add 10.61.0.2/24 dev " IF_B " && "
	       "ip link set " IF_A " up && ip link set " IF_B " up") != 0)
		return false;
	snprintf(cfg_path, len, "/tmp/dpvt-xdp-follow.%d.json", (int)getpid());
	FILE *f = fopen(cfg_path, "w");
	if (!f)
		return false;
	fprintf(f, "{\"eal\": {\"hugepages\": false}, \"ports\": ["
		   "{\"name\": \"dpv0\", \"device\": {\"type\": \"af_xdp\", \"iface\": \"" IF_A "\"}}]}\n");
	fclose(f);
	setenv("DPVERBS_CONFIG", cfg_path, 1);
	return true;
}

/* Addresses come and go under a running device. */
static void addresses(struct ibv_context *a)
{
	struct ibv_port_attr pa;
	CHECK(gid_is(a, 1, "10.61.0.1"), "at start, GID 1 is the interface's 10.61.0.1");
	CHECK(ibv_query_port(a, 1, &pa) == 0 && pa.lid == 0x0001, "LID %#x: the address' low 16 bits",
	      pa.lid);
	dpvt_drain_async(a);
	sh("ip addr add fd00:61::1/64 dev " IF_A " nodad");
	CHECK(dpvt_wait_async(a, IBV_EVENT_GID_CHANGE, NULL, 3000, NULL),
	      "IBV_EVENT_GID_CHANGE after an IPv6 address was added");
	CHECK(gid_is(a, 2, "fd00:61::1"), "GID 2 is fd00:61::1");
	sh("ip addr del 10.61.0.1/24 dev " IF_A);
	CHECK(dpvt_wait_async(a, IBV_EVENT_GID_CHANGE, NULL, 3000, NULL),
	      "IBV_EVENT_GID_CHANGE after the IPv4 address was removed");
	CHECK(gid_is(a, 1, NULL), "GID 1 is empty");
	CHECK(ibv_query_port(a, 1, &pa) == 0 && pa.lid == 0, "no IPv4 address, no LID (%#x)", pa.lid);
	sh("ip addr add 10.61.0.7/24 dev " IF_A);
	CHECK(dpvt_wait_async(a, IBV_EVENT_GID_CHANGE, NULL, 3000, NULL),
	      "IBV_EVENT_GID_CHANGE after 10.61.0.7 was added");
	CHECK(gid_is(a, 1, "10.61.0.7"), "GID 1 is 10.61.0.7");
}

/* MTU and link state. */
static void mtu_and_link(struct ibv_context *a)
{
	CHECK(port_until(a, mtu_is, IBV_MTU_1024), "MTU 1500: active MTU 1024");
	sh("ip link set dev " IF_A " mtu 1000");
	CHECK(port_until(a, mtu_is, IBV_MTU_512), "MTU 1000: active MTU 512");
	sh("ip link set dev " IF_A " mtu 1500");
	CHECK(port_until(a, mtu_is, IBV_MTU_1024), "MTU 1500 again: active MTU 1024");
	dpvt_drain_async(a);
	sh("ip link set dev " IF_A " down");
	CHECK(dpvt_wait_async(a, IBV_EVENT_PORT_ERR, NULL, 3000, NULL), "IBV_EVENT_PORT_ERR on link down");
	CHECK(port_until(a, state_is, IBV_PORT_DOWN), "port DOWN");
	sh("ip link set dev " IF_A " up");
	CHECK(dpvt_wait_async(a, IBV_EVENT_PORT_ACTIVE, NULL, 5000, NULL), "IBV_EVENT_PORT_ACTIVE on link up");
	CHECK(port_until(a, state_is, IBV_PORT_ACTIVE), "port ACTIVE");
}

/* The XDP program's address map: 10.61.0.7 and fd00:61::1 in it (the key
 * bytes as bpftool -j prints them, blanks removed), 10.61.0.1 no more. */
static void addr_map(void)
{
	char out[8192] = "";
	FILE *p = popen("bpftool -j map dump name dpv_addrs 2>&1 | tr -d ' \\n'", "r");
	if (!p) {
		CHECK(false, "bpftool");
		return;
	}
	size_t n = fread(out, 1, sizeof(out) - 1, p);
	out[n] = 0;
	int rc = pclose(p);
	if (rc != 0 && strstr(out, "not found")) {
		printf("xdp_follow: bpftool not installed: address map not checked\n");
		return;
	}
	CHECK(strstr(out, "255,255,10,61,0,7]") != NULL, "the address map holds 10.61.0.7: %s", out);
	CHECK(strstr(out, "[253,0,0,97,0,0,0,0,0,0,0,0,0,0,0,1]") != NULL, "the address map holds fd00:61::1");
	CHECK(strstr(out, "255,255,10,61,0,1]") == NULL, "the address map no longer holds 10.61.0.1");
}

int main(void)
{
	char cfg[128];
	if (!setup(cfg, sizeof(cfg)))
		return getuid() != 0 ? 77 : (errno == EPERM ? 77 : 1);
	struct dpvt_ep a = {0};
	if (dpvt_ep_open(&a, "dpv0", 16, false)) {
		fprintf(stderr, "xdp_follow: cannot open the af_xdp devices (errno %d)\n", errno);
		unlink(cfg);
		return errno == EPERM ? 77 : 1;
	}
	addresses(a.ctx);
	addr_map();
	mtu_and_link(a.ctx);
	/* the kernel drops an interface's IPv6 addresses when it goes down
	 * (keep_addr_on_down 0): so does the GID table */
	CHECK(gid_is(a.ctx, 2, NULL), "GID 2 is empty after the link went down and up");
	dpvt_ep_close(&a);
	unlink(cfg);
	return dpvt_finish();
}
