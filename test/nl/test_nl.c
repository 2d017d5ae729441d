/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit test of lib/nl (the rtnetlink client) against the running kernel, in
 * a network namespace of the test's own (unshare(CLONE_NEWNET); skipped,
 * exit 77, without the right to): a veth pair nlt0/nlt1 whose nlt1 end is
 * moved into the namespace of a child process (the peer), which holds
 * 10.77.0.2/24 and fd00:77::2/64 and so answers ARP and neighbour
 * solicitations. Checked: links by name and index (MAC, MTU, kind, queues,
 * flags), MTU/MAC/up changes, addresses (add, -EEXIST, the list with the
 * link-local one), routes, neighbour lookups and resolutions done by the
 * kernel (NTF_USE) with their notifications, link and address
 * notifications, and the -ENOBUFS of an overflowed monitor socket.
 * Everything is bounded in time; nothing outlives the test: the child's
 * namespace (and nlt1 with it, and so nlt0) goes with the child, the test's
 * with the test.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <linux/if_addr.h>
#include <linux/neighbour.h>
#include <linux/rtnetlink.h>

#include "dpv_nl.h"
#include "dpvt_check.h"

#define IF0 "nlt0"
#define IF1 "nlt1"
#define OPER_UP 6                  /* IF_OPER_UP (linux/if.h clashes with net/if.h) */
#define EV_WAIT_MS 3000            /* the longest wait for a notification */
#define NO_IFINDEX 999999

static pid_t peer_pid = -1;
static int peer_rd = -1, peer_wr = -1;
static uint8_t peer_mac[6];

/* An address from text: "::ffff:10.77.0.1" for IPv4. */
static const uint8_t *ip(const char *s)
{
	static uint8_t ring[8][16];
	static unsigned int next;
	uint8_t *a = ring[next++ % 8];

	if (inet_pton(AF_INET6, s, a) != 1)
		abort();
	return a;
}

static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...)
{
	char cmd[256];
	va_list ap;
	int st;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	st = system(cmd);
	return st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Reads n bytes from fd within ms; false on timeout, EOF or error. */
static bool read_full(int fd, void *buf, size_t n, int ms)
{
	uint64_t end = dpvt_now_ms() + (uint64_t)ms;
	size_t got = 0;

	while (got < n) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		int64_t left = (int64_t)(end - dpvt_now_ms());

		if (left <= 0 || poll(&p, 1, (int)left) <= 0)
			return false;
		ssize_t r = read(fd, (char *)buf + got, n - got);
		if (r <= 0)
			return false;
		got += (size_t)r;
	}
	return true;
}

/* ---- the peer: a child in a namespace of its own, holding nlt1 ---- */

static int peer_setup(uint8_t mac[6])
{
	struct dpv_nl_link lo, l;
	int ret;

	if ((ret = dpv_nl_link_by_name("lo", &lo)) < 0 ||
	    (ret = dpv_nl_link_set_up(lo.ifindex, true)) < 0 ||
	    (ret = dpv_nl_link_by_name(IF1, &l)) < 0 ||
	    (ret = dpv_nl_link_set_up(l.ifindex, true)) < 0 ||
	    (ret = dpv_nl_addr_add(l.ifindex, ip("::ffff:10.77.0.2"), 24)) < 0 ||
	    (ret = dpv_nl_addr_add(l.ifindex, ip("fd00:77::2"), 64)) < 0)
		return ret;
	memcpy(mac, l.mac, 6);
	return 0;
}

static void peer_main(int rd, int wr)
{
	struct { int ret; uint8_t mac[6]; } msg = {0};
	char c = 'u';

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	alarm(60);
	if (unshare(CLONE_NEWNET) < 0)
		_exit(2);
	if (write(wr, &c, 1) != 1 || read(rd, &c, 1) != 1)   /* the parent moves nlt1 here */
		_exit(3);
	msg.ret = peer_setup(msg.mac);
	if (write(wr, &msg, sizeof(msg)) != (ssize_t)sizeof(msg))
		_exit(4);
	while (read(rd, &c, 1) > 0)                          /* until the parent closes */
		;
	_exit(0);
}

static void peer_stop(void)
{
	if (peer_wr >= 0)
		close(peer_wr);
	if (peer_rd >= 0)
		close(peer_rd);
	peer_wr = peer_rd = -1;
	if (peer_pid > 0) {
		uint64_t end = dpvt_now_ms() + 3000;

		while (waitpid(peer_pid, NULL, WNOHANG) == 0) {
			if (dpvt_now_ms() > end) {
				kill(peer_pid, SIGKILL);
				waitpid(peer_pid, NULL, 0);
				break;
			}
			dpvt_sleep_ms(10);
		}
		peer_pid = -1;
	}
}

static bool peer_start(void)
{
	struct { int ret; uint8_t mac[6]; } msg;
	int to[2], from[2];
	char c;

	if (pipe2(to, O_CLOEXEC) < 0 || pipe2(from, O_CLOEXEC) < 0)
		return false;
	fflush(NULL);
	peer_pid = fork();
	if (peer_pid == 0) {
		close(to[1]);
		close(from[0]);
		peer_main(to[0], from[1]);
	}
	close(to[0]);
	close(from[1]);
	peer_wr = to[1];
	peer_rd = from[0];
	if (peer_pid < 0 || !read_full(peer_rd, &c, 1, 5000))
		return false;
	if (sh("ip link set dev " IF1 " netns %d", (int)peer_pid) != 0)
		return false;
	if (write(peer_wr, "m", 1) != 1)
		return false;
	if (!read_full(peer_rd, &msg, sizeof(msg), 5000))
		return false;
	if (msg.ret < 0)
		fprintf(stderr, "peer setup: %s\n", strerror(-msg.ret));
	memcpy(peer_mac, msg.mac, 6);
	return msg.ret == 0;
}

/* ---- waiting for a notification ---- */

struct want {
	enum dpv_nl_ev_type type;
	int ifindex;
	bool del;
	const char *addr;          /* ADDR, NEIGH: this address (NULL: any) */
	int up;                    /* LINK: IFF_UP set (1), clear (0), any (-1) */
	bool valid;                /* NEIGH: a dpv_nl_nud_valid() state */
	bool found;
	int events;
	struct dpv_nl_ev ev;
};

static void want_cb(void *arg, const struct dpv_nl_ev *ev)
{
	struct want *w = arg;

	w->events++;
	if (w->found || ev->type != w->type || ev->ifindex != w->ifindex || ev->del != w->del)
		return;
	if (ev->type == DPV_NL_EV_LINK && w->up >= 0 && !!(ev->link.flags & IFF_UP) != w->up)
		return;
	if (ev->type == DPV_NL_EV_ADDR && w->addr && memcmp(ev->addr.addr, ip(w->addr), 16) != 0)
		return;
	if (ev->type == DPV_NL_EV_NEIGH &&
	    ((w->addr && memcmp(ev->neigh.addr, ip(w->addr), 16) != 0) ||
	     (w->valid && !dpv_nl_nud_valid(ev->neigh.state))))
		return;
	w->ev = *ev;
	w->found = true;
}

/* Reads mon until an event matching w comes (true) or EV_WAIT_MS pass. */
static bool wait_ev(int mon, struct want *w)
{
	uint64_t end = dpvt_now_ms() + EV_WAIT_MS;

	while (!w->found) {
		struct pollfd p = {.fd = mon, .events = POLLIN};
		int64_t left = (int64_t)(end - dpvt_now_ms());
		int n;

		if (left <= 0)
			break;
		(void)poll(&p, 1, (int)left);
		n = dpv_nl_mon_read(mon, want_cb, w);
		if (n < 0)
			CHECK(false, "dpv_nl_mon_read: %s", strerror(-n));
	}
	return w->found;
}

static void drain(int mon)
{
	struct want w = {.type = 0};

	(void)dpv_nl_mon_read(mon, want_cb, &w);
}

/* ---- the checks ---- */

static void test_static(void)
{
	static const uint16_t valid[] = {NUD_REACHABLE, NUD_STALE, NUD_DELAY, NUD_PROBE,
					 NUD_PERMANENT, NUD_NOARP};
	static const uint16_t invalid[] = {NUD_NONE, NUD_INCOMPLETE, NUD_FAILED};
	struct dpv_nl_link l;
	uint8_t mac[6];
	uint16_t st;
	int oif;

	for (size_t i = 0; i < sizeof(valid) / sizeof(valid[0]); i++)
		CHECK(dpv_nl_nud_valid(valid[i]), "state %#x", valid[i]);
	for (size_t i = 0; i < sizeof(invalid) / sizeof(invalid[0]); i++)
		CHECK(!dpv_nl_nud_valid(invalid[i]), "state %#x", invalid[i]);
	CHECK_EQ(dpv_nl_link_by_name("nlt-none", &l), -ENODEV, "link_by_name missing");
	CHECK_EQ(dpv_nl_link_by_name("a-name-far-too-long", &l), -ENODEV, "link_by_name long");
	CHECK_EQ(dpv_nl_link_by_name("", &l), -ENODEV, "link_by_name empty");
	CHECK_EQ(dpv_nl_link_by_name(NULL, &l), -EINVAL, "link_by_name NULL");
	CHECK_EQ(dpv_nl_link_by_index(NO_IFINDEX, &l), -ENODEV, "link_by_index missing");
	CHECK_EQ(dpv_nl_link_by_index(0, &l), -ENODEV, "link_by_index 0");
	CHECK_EQ(dpv_nl_link_set_mtu(NO_IFINDEX, 1500), -ENODEV, "set_mtu missing");
	CHECK_EQ(dpv_nl_link_set_up(NO_IFINDEX, true), -ENODEV, "set_up missing");
	CHECK_EQ(dpv_nl_link_set_mac(NO_IFINDEX, (const uint8_t *)"\x02\0\0\0\0\1"), -ENODEV,
		 "set_mac missing");
	CHECK_EQ(dpv_nl_addr_add(NO_IFINDEX, ip("::ffff:10.1.1.1"), 24), -ENODEV,
		 "addr_add v4 missing");
	CHECK_EQ(dpv_nl_addr_add(NO_IFINDEX, ip("fd00:1::1"), 64), -ENODEV, "addr_add v6 missing");
	CHECK_EQ(dpv_nl_addrs(NO_IFINDEX, NULL, 0), 0, "addrs of a missing interface");
	CHECK_EQ(dpv_nl_neigh_get(NO_IFINDEX, ip("::ffff:10.1.1.1"), mac, &st), -ENODEV,
		 "neigh_get missing");
	CHECK_EQ(dpv_nl_neigh_resolve(-1, NO_IFINDEX, ip("::ffff:10.1.1.1")), -ENODEV,
		 "neigh_resolve missing");
	CHECK_EQ(dpv_nl_route_get(ip("::ffff:192.0.2.1"), &oif, NULL), -ENETUNREACH,
		 "route v4 none");
	CHECK_EQ(dpv_nl_route_get(ip("2001:db8::1"), &oif, NULL), -ENETUNREACH, "route v6 none");
}

static void test_lo(void)
{
	struct dpv_nl_link l;
	static const uint8_t zero[6];

	CHECK_EQ(dpv_nl_link_by_name("lo", &l), 0, "link_by_name lo");
	CHECK_EQ(l.ifindex, 1, "lo ifindex");
	CHECK(strcmp(l.name, "lo") == 0 && l.kind[0] == '\0', "lo: name %s kind %s", l.name,
	      l.kind);
	CHECK(memcmp(l.mac, zero, 6) == 0 && l.mtu == 65536, "lo mtu %u", l.mtu);
	CHECK_EQ(dpv_nl_link_set_up(l.ifindex, true), 0, "lo up");
	CHECK_EQ(dpv_nl_link_by_index(1, &l), 0, "link_by_index lo");
	CHECK(l.flags & IFF_UP, "lo flags %#x", l.flags);
}

/* nlt0 as created, then its MTU and MAC changed; returns its ifindex. */
static int test_link(void)
{
	static const uint8_t mac[6] = {0x02, 0x77, 0x00, 0x00, 0x00, 0x01};
	static const uint8_t mcast[6] = {0x01, 0x00, 0x5e, 0x00, 0x00, 0x01};
	struct dpv_nl_link a, b;

	CHECK_EQ(dpv_nl_link_by_name(IF0, &a), 0, "link_by_name " IF0);
	CHECK(a.ifindex > 1 && strcmp(a.name, IF0) == 0, "ifindex %d name %s", a.ifindex, a.name);
	CHECK(strcmp(a.kind, "veth") == 0, "kind %s", a.kind);
	CHECK_EQ(a.mtu, 1500, "mtu");
	CHECK(a.num_rx_queues >= 1 && a.num_tx_queues >= 1, "queues %u/%u", a.num_rx_queues,
	      a.num_tx_queues);
	CHECK(!(a.flags & IFF_UP) && (a.flags & IFF_BROADCAST), "flags %#x", a.flags);
	CHECK_EQ(a.xdp_prog_id, 0, "xdp prog");
	CHECK_EQ(dpv_nl_link_by_index(a.ifindex, &b), 0, "link_by_index " IF0);
	CHECK(memcmp(&a, &b, sizeof(a)) == 0, "by name and by index differ");

	CHECK_EQ(dpv_nl_link_set_mtu(a.ifindex, 9000), 0, "set_mtu 9000");
	CHECK(dpv_nl_link_by_index(a.ifindex, &b) == 0 && b.mtu == 9000, "mtu %u", b.mtu);
	CHECK(dpv_nl_link_set_mtu(a.ifindex, 1u << 20) < 0, "set_mtu 1 MiB accepted");
	CHECK_EQ(dpv_nl_link_set_mtu(a.ifindex, 1500), 0, "set_mtu 1500");
	CHECK_EQ(dpv_nl_link_set_mac(a.ifindex, mac), 0, "set_mac");
	CHECK(dpv_nl_link_set_mac(a.ifindex, mcast) < 0, "multicast MAC accepted");
	CHECK(dpv_nl_link_by_index(a.ifindex, &b) == 0 && memcmp(b.mac, mac, 6) == 0 &&
	      b.mtu == 1500, "mac %02x:..:%02x mtu %u", b.mac[0], b.mac[5], b.mtu);
	return a.ifindex;
}

static void test_up(int mon, int idx)
{
	struct want w = {.type = DPV_NL_EV_LINK, .ifindex = idx, .up = 1};
	struct dpv_nl_link l;

	CHECK_EQ(dpv_nl_mon_read(mon, want_cb, &w), 0, "mon_read with nothing waiting");
	CHECK_EQ(dpv_nl_link_set_up(idx, true), 0, "set_up");
	CHECK(dpv_nl_link_by_index(idx, &l) == 0 && (l.flags & IFF_UP), "flags %#x", l.flags);
	CHECK(wait_ev(mon, &w), "no RTM_NEWLINK with IFF_UP");
	CHECK(strcmp(w.ev.link.name, IF0) == 0 && strcmp(w.ev.link.kind, "veth") == 0,
	      "event link %s kind %s", w.ev.link.name, w.ev.link.kind);
}

/* Where a is in list[0, n), or -1. */
static int find_addr(const struct dpv_nl_addr *list, int n, const uint8_t *a)
{
	for (int i = 0; i < n; i++)
		if (memcmp(list[i].addr, a, 16) == 0)
			return i;
	return -1;
}

static void test_addr_add(int mon, int idx)
{
	struct want w = {.type = DPV_NL_EV_ADDR, .ifindex = idx, .addr = "::ffff:10.77.0.1"};
	struct dpv_nl_addr list[16], one[2];
	int n, i;

	CHECK_EQ(dpv_nl_addr_add(idx, ip("::ffff:10.77.0.1"), 24), 0, "addr_add 10.77.0.1/24");
	CHECK_EQ(dpv_nl_addr_add(idx, ip("::ffff:10.77.0.1"), 24), -EEXIST, "addr_add again");
	CHECK_EQ(dpv_nl_addr_add(idx, ip("fd00:77::1"), 64), 0, "addr_add fd00:77::1/64");
	CHECK_EQ(dpv_nl_addr_add(idx, ip("fd00:78::1"), 64), 0, "addr_add fd00:78::1/64");
	CHECK_EQ(dpv_nl_addr_add(idx, ip("fd00:78::1"), 64), -EEXIST, "addr_add v6 again");
	CHECK_EQ(dpv_nl_addr_add(idx, ip("::ffff:10.78.0.1"), 33), -EINVAL, "prefix 33");
	CHECK(wait_ev(mon, &w), "no RTM_NEWADDR for 10.77.0.1");
	CHECK(w.ev.addr.family == AF_INET && w.ev.addr.prefix == 24, "event family %u prefix %u",
	      w.ev.addr.family, w.ev.addr.prefix);

	n = dpv_nl_addrs(idx, list, 16);
	CHECK_EQ(n, 3, "addresses of " IF0);
	CHECK(n > 0 && memcmp(list[0].addr, ip("::ffff:10.77.0.1"), 16) == 0 &&
	      list[0].family == AF_INET && list[0].prefix == 24 &&
	      list[0].scope == RT_SCOPE_UNIVERSE,
	      "first address: family %u prefix %u", list[0].family, list[0].prefix);
	for (int k = 0; k < 2; k++) {
		const char *s = k ? "fd00:78::1" : "fd00:77::1";

		i = find_addr(list, n, ip(s));
		CHECK(i > 0 && list[i].family == AF_INET6 && list[i].prefix == 64 &&
		      (list[i].flags & IFA_F_NODAD) && !(list[i].flags & IFA_F_TENTATIVE),
		      "%s: at %d flags %#x", s, i, i >= 0 ? list[i].flags : 0);
	}
	memset(one, 0xa5, sizeof(one));
	CHECK_EQ(dpv_nl_addrs(idx, one, 1), n, "addrs with max 1");
	CHECK(memcmp(&one[0], &list[0], sizeof(one[0])) == 0 && one[1].family == 0xa5,
	      "addrs wrote beyond max");
	CHECK_EQ(dpv_nl_addrs(idx, NULL, 0), n, "addrs count only");
	CHECK_EQ(dpv_nl_addrs(1, list, 16), 2, "addresses of lo (127.0.0.1, ::1)");
}

/*
 * After the peer is up: carrier, the IPv6 link-local address, routes. The
 * link-local address must have passed DAD before an IPv6 resolution: the
 * kernel sends its neighbour solicitations from it (ndisc_send_ns() with no
 * packet to take a source from) and sends none while it is tentative.
 */
static void test_carrier(int idx)
{
	struct dpv_nl_addr list[16];
	uint64_t end = dpvt_now_ms() + 5000;
	struct dpv_nl_link l;
	int n, ll = 0, ready = 0, oif = -1;
	uint8_t src[16];

	do {
		n = dpv_nl_addrs(idx, list, 16);
		ll = ready = 0;
		for (int i = 0; i < n && i < 16; i++) {
			if (list[i].addr[0] != 0xfe || (list[i].addr[1] & 0xc0) != 0x80)
				continue;
			ll++;
			ready += !(list[i].flags & IFA_F_TENTATIVE);
		}
		if (ready)
			break;
		dpvt_sleep_ms(20);
	} while (dpvt_now_ms() < end);
	CHECK_EQ(ready, 1, "link-local address out of DAD");
	CHECK_EQ(ll, 1, "link-local addresses once up");
	CHECK_EQ(n, 4, "addresses with the link-local one");
	for (int i = 0; i < n && i < 16; i++)
		if (list[i].addr[0] == 0xfe)
			CHECK_EQ(list[i].scope, RT_SCOPE_LINK, "link-local scope");
	CHECK(dpv_nl_link_by_index(idx, &l) == 0 && l.operstate == OPER_UP &&
	      (l.flags & IFF_RUNNING), "operstate %u flags %#x", l.operstate, l.flags);

	CHECK_EQ(dpv_nl_route_get(ip("::ffff:10.77.0.2"), &oif, src), 0, "route to 10.77.0.2");
	CHECK(oif == idx && memcmp(src, ip("::ffff:10.77.0.1"), 16) == 0, "oif %d", oif);
	CHECK_EQ(dpv_nl_route_get(ip("fd00:77::2"), &oif, src), 0, "route to fd00:77::2");
	CHECK(oif == idx && memcmp(src, ip("fd00:77::1"), 16) == 0, "oif %d", oif);
	CHECK_EQ(dpv_nl_route_get(ip("::ffff:10.77.0.1"), &oif, NULL), 0, "route to 10.77.0.1");
	CHECK_EQ(oif, 1, "a local address goes through lo");
	CHECK_EQ(dpv_nl_route_get(ip("::ffff:10.99.0.1"), &oif, src), -ENETUNREACH,
		 "route 10.99.0.1");
}

/* The kernel resolves addr for us; sock: the monitor or -1. */
static void test_resolve(int mon, int sock, int idx, const char *addr)
{
	struct want w = {.type = DPV_NL_EV_NEIGH, .ifindex = idx, .addr = addr, .valid = true};
	uint8_t a[16], mac[6];
	uint16_t st = 0;
	uint64_t t0;

	memcpy(a, ip(addr), 16);
	CHECK_EQ(dpv_nl_neigh_get(idx, a, mac, &st), -ENOENT, "neigh_get before");
	drain(mon);
	t0 = dpvt_now_ms();
	CHECK_EQ(dpv_nl_neigh_resolve(sock, idx, a), 0, "neigh_resolve");
	CHECK(wait_ev(mon, &w), "%s: no valid RTM_NEWNEIGH", addr);
	printf("%s resolved in %llu ms (socket %s)\n", addr,
	       (unsigned long long)(dpvt_now_ms() - t0), sock < 0 ? "of its own" : "the monitor's");
	CHECK(w.ev.neigh.has_mac && memcmp(w.ev.neigh.mac, peer_mac, 6) == 0 &&
	      (w.ev.neigh.state & NUD_REACHABLE), "%s: event state %#x", addr, w.ev.neigh.state);
	CHECK_EQ(dpv_nl_neigh_get(idx, a, mac, &st), 0, "neigh_get after");
	CHECK(memcmp(mac, peer_mac, 6) == 0 && dpv_nl_nud_valid(st), "%s: state %#x", addr, st);
	CHECK_EQ(dpv_nl_neigh_resolve(sock, idx, a), 0, "neigh_resolve a valid entry");
	CHECK(dpv_nl_neigh_get(idx, a, mac, &st) == 0 && dpv_nl_nud_valid(st), "state %#x", st);
}

/* Nobody answers for 10.77.0.99: the entry stays unresolved, its MAC meaningless. */
static void test_unanswered(int idx)
{
	const uint8_t *a = ip("::ffff:10.77.0.99");
	uint8_t mac[6];
	uint16_t st = 0;

	CHECK_EQ(dpv_nl_neigh_resolve(-1, idx, a), 0, "neigh_resolve 10.77.0.99");
	CHECK_EQ(dpv_nl_neigh_get(idx, a, mac, &st), 0, "neigh_get 10.77.0.99");
	CHECK(st & (NUD_INCOMPLETE | NUD_FAILED), "state %#x", st);
	CHECK(!dpv_nl_nud_valid(st), "state %#x valid", st);
}

static void test_events(int mon, int idx)
{
	struct want down = {.type = DPV_NL_EV_LINK, .ifindex = idx, .up = 0};
	struct want up = {.type = DPV_NL_EV_LINK, .ifindex = idx, .up = 1};
	struct want del = {.type = DPV_NL_EV_ADDR, .ifindex = idx, .del = true,
			   .addr = "fd00:78::1"};

	/* First: IPv6 addresses do not survive the link going down (keep_addr_on_down 0). */
	drain(mon);
	CHECK_EQ(sh("ip addr del fd00:78::1/64 dev " IF0), 0, "ip addr del");
	CHECK(wait_ev(mon, &del), "no RTM_DELADDR for fd00:78::1");
	CHECK(del.ev.addr.family == AF_INET6 && del.ev.addr.prefix == 64, "prefix %u",
	      del.ev.addr.prefix);
	CHECK_EQ(dpv_nl_link_set_up(idx, false), 0, "set_up false");
	CHECK(wait_ev(mon, &down), "no RTM_NEWLINK without IFF_UP");
	CHECK_EQ(dpv_nl_link_set_up(idx, true), 0, "set_up true");
	CHECK(wait_ev(mon, &up), "no RTM_NEWLINK with IFF_UP");
}

/* A monitor socket whose buffer overflows reports -ENOBUFS, then works on. */
static void test_overflow(int idx)
{
	struct want w = {.type = 0};
	int small = 1, mon = dpv_nl_open(RTMGRP_LINK, true), n;

	CHECK(mon >= 0, "dpv_nl_open: %d", mon);
	if (mon < 0)
		return;
	CHECK(setsockopt(mon, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small)) == 0, "SO_RCVBUF");
	for (int i = 0; i < 20; i++)
		(void)dpv_nl_link_set_mtu(idx, i & 1 ? 1500 : 1400);
	n = dpv_nl_mon_read(mon, want_cb, &w);
	CHECK_EQ(n, -ENOBUFS, "mon_read after an overflow");
	CHECK_EQ(dpv_nl_link_set_mtu(idx, 1500), 0, "set_mtu");
	n = dpv_nl_mon_read(mon, want_cb, &w);
	CHECK(n >= 0, "mon_read after -ENOBUFS: %d", n);
	close(mon);
}

/* The peer's namespace goes with it, nlt1 with the namespace and nlt0 with nlt1. */
static void test_gone(int idx)
{
	uint64_t t0 = dpvt_now_ms();
	struct dpv_nl_link l;
	int ret;

	while ((ret = dpv_nl_link_by_index(idx, &l)) == 0 && dpvt_now_ms() - t0 < 10000)
		dpvt_sleep_ms(10);
	CHECK_EQ(ret, -ENODEV, IF0 " after the peer exited");
	printf(IF0 " gone %llu ms after the peer\n", (unsigned long long)(dpvt_now_ms() - t0));
}

static void cleanup(void)
{
	peer_stop();
}

int main(void)
{
	bool peer_ok;
	int idx, mon;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (unshare(CLONE_NEWNET) < 0) {
		printf("SKIP: unshare(CLONE_NEWNET): %s (needs CAP_SYS_ADMIN)\n", strerror(errno));
		return 77;
	}
	if (sh("ip link add name " IF0 " type veth peer name " IF1) != 0) {
		printf("SKIP: `ip link add ... type veth` failed"
		       " (iproute2, the veth module, CAP_NET_ADMIN)\n");
		return 77;
	}
	atexit(cleanup);
	test_static();
	test_lo();
	idx = test_link();
	mon = dpv_nl_open(RTMGRP_LINK | RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR | RTMGRP_NEIGH,
			  true);
	CHECK(mon >= 0, "dpv_nl_open: %d", mon);
	if (mon < 0)
		return dpvt_finish();
	test_up(mon, idx);
	test_addr_add(mon, idx);
	peer_ok = CHECK(peer_start(), "the peer did not start");
	if (peer_ok) {
		test_carrier(idx);
		test_resolve(mon, mon, idx, "::ffff:10.77.0.2");
		test_resolve(mon, -1, idx, "fd00:77::2");
		test_unanswered(idx);
	}
	test_events(mon, idx);
	test_overflow(idx);
	close(mon);
	peer_stop();
	if (peer_ok)
		test_gone(idx);
	return dpvt_finish();
}
