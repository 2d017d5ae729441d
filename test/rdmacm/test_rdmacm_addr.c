/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Addresses and routes of the drop-in librdmacm (compat/rdmacm/
 * dpv_rdmacm_addr.c, dpv_rdmacm_gai.c) on dpverbs' default configuration
 * (dpv0 192.0.2.1/24, dpv1 192.0.2.2/24):
 *  - rdma_bind_addr: dpv0's IPv4 address binds to dpv0 (id->verbs, port 1,
 *    the source address); dpv0's link-local GID as IPv6 with a scope id
 *    binds too, without one EINVAL; the wildcard and loopback addresses
 *    (127.0.0.1, ::1) bind without a device, keeping the address, and
 *    collide on a port as the wildcard does;
 *    port 0 takes an ephemeral port (32768..60999); the same specific
 *    address and port again: EADDRINUSE, the wildcard on it: EADDRNOTAVAIL,
 *    both with REUSEADDR: allowed; the port is free again once the id is
 *    destroyed; an address no port has: EADDRNOTAVAIL; a bound id: EINVAL;
 *    AF_UNIX: EINVAL;
 *  - rdma_resolve_addr dpv0 -> dpv1's address: 0 at once, then
 *    RDMA_CM_EVENT_ADDR_RESOLVED (status 0) on the channel's fd, id->verbs
 *    dpv0, the GIDs, rdma_get_local_addr/peer_addr, src/dst ports; without
 *    a source the port comes from the subnet (dpv1's address from a
 *    wildcard id: dpv0, the first port that reaches it); a destination
 *    outside every subnet: -1 ENETUNREACH, no event; dpv1's link-local
 *    IPv6 GID with a scope id from a wildcard id; global IPv6 addresses
 *    when the configuration has them (rdmacm-addr-ipv6); a NULL-channel id
 *    gets its event in id->event;
 *  - rdma_resolve_route: EINVAL before the address is resolved, then
 *    ROUTE_RESOLVED and a path record (sgid, dgid, the port's active MTU,
 *    hop limit 64, P_Key 0xffff, one path);
 *  - rdma_getaddrinfo: numeric IPv4 and IPv6, RAI_PASSIVE, UDP port space,
 *    the hints' source copied, no node nor service (the hints; EINVAL
 *    without hints), bad input (-1, errno EAI_NONAME, as rdma-core's ERR).
 * Prints "N passed, N failed".
 */
#include <arpa/inet.h>
#include <netdb.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include "dpv_rdmacm.h"
#include "dpvt_verbs.h"

static struct ibv_context *g_ctx[2];

static struct sockaddr_in sin4(const char *ip, uint16_t port)
{
	struct sockaddr_in s = { .sin_family = AF_INET, .sin_port = htons(port) };

	inet_pton(AF_INET, ip, &s.sin_addr);
	return s;
}

/* Waits (poll on the fd, 2 s) for the next event; NULL on time-out. */
static struct rdma_cm_event *next_event(struct rdma_event_channel *ch)
{
	struct pollfd pfd = { .fd = ch->fd, .events = POLLIN };
	struct rdma_cm_event *ev = NULL;

	if (poll(&pfd, 1, 2000) != 1)
		return NULL;
	return rdma_get_cm_event(ch, &ev) == 0 ? ev : NULL;
}

static bool fd_readable(struct rdma_event_channel *ch)
{
	struct pollfd pfd = { .fd = ch->fd, .events = POLLIN };

	return poll(&pfd, 1, 0) == 1;
}

static void test_bind(void)
{
	struct sockaddr_in a = sin4("192.0.2.1", 7471), any = sin4("0.0.0.0", 7471);
	struct rdma_cm_id *id, *id2, *id3;
	int one = 1;

	if (!CHECK(rdma_create_id(NULL, &id, NULL, RDMA_PS_TCP) == 0, "id"))
		return;
	CHECK_RET_ERRNO(rdma_bind_addr(id, (struct sockaddr *)&a), 0, 0);
	CHECK(id->verbs == g_ctx[0], "bound to dpv0");
	CHECK_EQ(id->port_num, 1, "port 1");
	CHECK(id->pd != NULL, "the device's PD");
	CHECK(memcmp(rdma_get_local_addr(id), &a, sizeof(a)) == 0, "the source address");
	CHECK_EQ(ntohs(rdma_get_src_port(id)), 7471, "the source port");
	CHECK_RET_ERRNO(rdma_bind_addr(id, (struct sockaddr *)&a), -1, EINVAL); /* not idle */

	rdma_create_id(NULL, &id2, NULL, RDMA_PS_TCP);
	CHECK_RET_ERRNO(rdma_bind_addr(id2, (struct sockaddr *)&a), -1, EADDRINUSE);
	CHECK_RET_ERRNO(rdma_bind_addr(id2, (struct sockaddr *)&any), -1, EADDRNOTAVAIL);
	rdma_create_id(NULL, &id3, NULL, RDMA_PS_UDP);
	CHECK_RET_ERRNO(rdma_bind_addr(id3, (struct sockaddr *)&a), 0, 0); /* another port space */
	rdma_destroy_id(id3);
	rdma_destroy_id(id);
	CHECK_RET_ERRNO(rdma_bind_addr(id2, (struct sockaddr *)&a), 0, 0); /* free again */
	rdma_destroy_id(id2);

	rdma_create_id(NULL, &id, NULL, RDMA_PS_TCP);
	rdma_create_id(NULL, &id2, NULL, RDMA_PS_TCP);
	rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_REUSEADDR, &one, sizeof(one));
	rdma_set_option(id2, RDMA_OPTION_ID, RDMA_OPTION_ID_REUSEADDR, &one, sizeof(one));
	CHECK_RET_ERRNO(rdma_bind_addr(id, (struct sockaddr *)&a), 0, 0);
	CHECK_RET_ERRNO(rdma_bind_addr(id2, (struct sockaddr *)&a), 0, 0); /* both REUSEADDR */
	rdma_destroy_id(id2);
	rdma_destroy_id(id);
}

static void test_bind_other(void)
{
	struct sockaddr_in any = sin4("0.0.0.0", 0), none = sin4("198.51.100.7", 0), lo = sin4("127.0.0.1", 7473);
	struct sockaddr_in6 ll = { .sin6_family = AF_INET6 };
	struct sockaddr_in6 lo6 = { .sin6_family = AF_INET6, .sin6_port = htons(7473), .sin6_addr = IN6ADDR_LOOPBACK_INIT };
	struct sockaddr_un_like { sa_family_t f; char p[30]; } un = { .f = AF_UNIX };
	union ibv_gid g;
	struct rdma_cm_id *id, *id2;
	uint16_t port;

	rdma_create_id(NULL, &id, NULL, RDMA_PS_TCP);
	CHECK_RET_ERRNO(rdma_bind_addr(id, (struct sockaddr *)&any), 0, 0);
	CHECK(id->verbs == NULL, "the wildcard: no device (as Linux)");
	port = ntohs(rdma_get_src_port(id));
	CHECK(port >= 32768 && port <= 60999, "port 0: an ephemeral port (%u)", port);
	rdma_destroy_id(id);

	/* loopback binds as the wildcard (cma_any_addr); libfabric's verbs provider binds "localhost" */
	rdma_create_id(NULL, &id, NULL, RDMA_PS_TCP);
	CHECK_RET_ERRNO(rdma_bind_addr(id, (struct sockaddr *)&lo), 0, 0);
	CHECK(id->verbs == NULL, "127.0.0.1: no device (as Linux)");
	CHECK(memcmp(rdma_get_local_addr(id), &lo, sizeof(lo)) == 0, "127.0.0.1 kept as the source");
	rdma_create_id(NULL, &id2, NULL, RDMA_PS_TCP);
	CHECK_RET_ERRNO(rdma_bind_addr(id2, (struct sockaddr *)&lo), -1, EADDRNOTAVAIL); /* cma_check_port */
	CHECK_RET_ERRNO(rdma_bind_addr(id2, (struct sockaddr *)&lo6), -1, EADDRNOTAVAIL); /* not AF_ONLY */
	lo6.sin6_port = htons(7474);
	CHECK_RET_ERRNO(rdma_bind_addr(id2, (struct sockaddr *)&lo6), 0, 0);
	CHECK(id2->verbs == NULL, "::1: no device");
	rdma_destroy_id(id2);
	rdma_destroy_id(id);

	rdma_create_id(NULL, &id, NULL, RDMA_PS_TCP);
	CHECK_RET_ERRNO(rdma_bind_addr(id, (struct sockaddr *)&none), -1, EADDRNOTAVAIL);
	CHECK_RET_ERRNO(rdma_bind_addr(id, (struct sockaddr *)&un), -1, EINVAL);
	CHECK_RET_ERRNO(rdma_bind_addr(id, NULL), -1, EINVAL);
	if (CHECK(ibv_query_gid(g_ctx[1], 1, 0, &g) == 0, "dpv1 GID 0")) {
		memcpy(&ll.sin6_addr, g.raw, 16);
		CHECK_RET_ERRNO(rdma_bind_addr(id, (struct sockaddr *)&ll), -1, EINVAL); /* no scope id */
		ll.sin6_scope_id = 2;
		CHECK_RET_ERRNO(rdma_bind_addr(id, (struct sockaddr *)&ll), 0, 0);
		CHECK(id->verbs == g_ctx[1], "link-local GID 0 of dpv1: dpv1");
	}
	rdma_destroy_id(id);
}

static void check_addr_resolved(struct rdma_event_channel *ch, struct rdma_cm_id *id)
{
	struct rdma_cm_event *ev = next_event(ch);

	if (!CHECK(ev != NULL, "an event on the channel's fd"))
		return;
	CHECK(ev->id == id && ev->event == RDMA_CM_EVENT_ADDR_RESOLVED && ev->status == 0,
	      "ADDR_RESOLVED status 0 (got %s %d)", rdma_event_str(ev->event), ev->status);
	rdma_ack_cm_event(ev);
}

static void test_resolve(void)
{
	struct sockaddr_in src = sin4("192.0.2.1", 0), dst = sin4("192.0.2.2", 7471);
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *id;
	union ibv_gid g0, g1;

	if (!CHECK(ch != NULL, "channel") || !CHECK(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) == 0, "id"))
		return;
	CHECK_RET_ERRNO(rdma_resolve_route(id, 1000), -1, EINVAL); /* idle */
	CHECK_RET_ERRNO(rdma_resolve_addr(id, (struct sockaddr *)&src, (struct sockaddr *)&dst, 1000), 0, 0);
	CHECK(id->verbs == g_ctx[0], "dpv0");
	check_addr_resolved(ch, id);
	CHECK(!fd_readable(ch), "one event");
	CHECK(((struct sockaddr_in *)rdma_get_peer_addr(id))->sin_addr.s_addr == dst.sin_addr.s_addr,
	      "the peer address");
	CHECK(((struct sockaddr_in *)rdma_get_local_addr(id))->sin_addr.s_addr == src.sin_addr.s_addr,
	      "the local address");
	CHECK_EQ(ntohs(rdma_get_dst_port(id)), 7471, "the destination port");
	CHECK(ntohs(rdma_get_src_port(id)) >= 32768, "an ephemeral source port");
	ibv_query_gid(g_ctx[0], 1, 1, &g0);
	ibv_query_gid(g_ctx[1], 1, 1, &g1);
	CHECK(memcmp(&id->route.addr.addr.ibaddr.sgid, &g0, 16) == 0, "sgid: dpv0's GID 1");
	CHECK(memcmp(&id->route.addr.addr.ibaddr.dgid, &g1, 16) == 0, "dgid: dpv1's GID 1");
	CHECK_RET_ERRNO(rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst, 1000), -1, EINVAL); /* resolved */
	rdma_destroy_id(id);

	/* no source: the port whose subnet holds dst; the wildcard becomes its address */
	rdma_create_id(ch, &id, NULL, RDMA_PS_UDP);
	CHECK_RET_ERRNO(rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst, 1000), 0, 0);
	CHECK(id->verbs == g_ctx[0], "dpv0 reaches 192.0.2.2 first");
	CHECK(((struct sockaddr_in *)rdma_get_local_addr(id))->sin_addr.s_addr == htonl(0xc0000201),
	      "source 192.0.2.1");
	check_addr_resolved(ch, id);
	rdma_destroy_id(id);
	rdma_destroy_event_channel(ch);
}

/* dpv1's link-local GID 0 from a wildcard id: dpv0 (fe80::/64 is on every port), sgid its GID 0. */
static void test_resolve_ll(void)
{
	struct sockaddr_in6 dst = { .sin6_family = AF_INET6, .sin6_port = htons(7471), .sin6_scope_id = 5 };
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct sockaddr_in6 *src;
	union ibv_gid g0, g1;
	struct rdma_cm_id *id;

	if (!CHECK(ch != NULL, "channel") || !CHECK(ibv_query_gid(g_ctx[1], 1, 0, &g1) == 0, "dpv1 GID 0") ||
	    !CHECK(ibv_query_gid(g_ctx[0], 1, 0, &g0) == 0, "dpv0 GID 0"))
		return;
	memcpy(&dst.sin6_addr, g1.raw, 16);
	rdma_create_id(ch, &id, NULL, RDMA_PS_TCP);
	CHECK_RET_ERRNO(rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst, 1000), 0, 0);
	CHECK(id->verbs == g_ctx[0], "IPv6 link-local: dpv0");
	src = (struct sockaddr_in6 *)rdma_get_local_addr(id);
	CHECK(src->sin6_family == AF_INET6 && memcmp(&src->sin6_addr, g0.raw, 16) == 0 && src->sin6_scope_id == 5,
	      "source: dpv0's link-local GID, the destination's scope id");
	CHECK(memcmp(&id->route.addr.addr.ibaddr.dgid, g1.raw, 16) == 0, "dgid: the IPv6 address");
	check_addr_resolved(ch, id);
	rdma_destroy_id(id);
	rdma_destroy_event_channel(ch);
}

/*
 * With a configuration whose ports have global IPv6 addresses (GID 2:
 * rdmacm-addr-ipv6 runs test/func/func-queues-lo.json, dpv0
 * fd00:6470:7600::1/64, dpv1 ::2/64): bind, resolve within the prefix,
 * ENETUNREACH outside it. Skipped when dpv0 has no GID 2.
 */
static void test_ipv6(void)
{
	struct sockaddr_in6 a = { .sin6_family = AF_INET6 }, b = a, far = a;
	struct rdma_event_channel *ch;
	union ibv_gid g0, g1;
	struct rdma_cm_id *id;

	if (ibv_query_gid(g_ctx[0], 1, 2, &g0) != 0 || IN6_IS_ADDR_UNSPECIFIED((struct in6_addr *)g0.raw) ||
	    ibv_query_gid(g_ctx[1], 1, 2, &g1) != 0) {
		printf("note: no IPv6 address configured on dpv0: IPv6 cases not run\n");
		return;
	}
	memcpy(&a.sin6_addr, g0.raw, 16);
	memcpy(&b.sin6_addr, g1.raw, 16);
	b.sin6_port = htons(7471);
	inet_pton(AF_INET6, "2001:db8:1::7", &far.sin6_addr);
	ch = rdma_create_event_channel();
	if (!CHECK(ch != NULL, "channel"))
		return;
	rdma_create_id(ch, &id, NULL, RDMA_PS_TCP);
	CHECK_RET_ERRNO(rdma_bind_addr(id, (struct sockaddr *)&a), 0, 0);
	CHECK(id->verbs == g_ctx[0], "IPv6 GID 2 of dpv0: dpv0");
	CHECK_RET_ERRNO(rdma_resolve_addr(id, NULL, (struct sockaddr *)&far, 1000), -1, ENETUNREACH);
	CHECK_RET_ERRNO(rdma_resolve_addr(id, NULL, (struct sockaddr *)&b, 1000), 0, 0);
	CHECK(memcmp(&id->route.addr.addr.ibaddr.sgid, g0.raw, 16) == 0, "sgid: dpv0's IPv6 address");
	CHECK(memcmp(&id->route.addr.addr.ibaddr.dgid, g1.raw, 16) == 0, "dgid: dpv1's IPv6 address");
	check_addr_resolved(ch, id);
	rdma_destroy_id(id);
	rdma_create_id(ch, &id, NULL, RDMA_PS_TCP);
	CHECK_RET_ERRNO(rdma_resolve_addr(id, NULL, (struct sockaddr *)&b, 1000), 0, 0);
	CHECK(memcmp(&((struct sockaddr_in6 *)rdma_get_local_addr(id))->sin6_addr, g0.raw, 16) == 0,
	      "no source: dpv0's global address, not its link-local one");
	check_addr_resolved(ch, id);
	rdma_destroy_id(id);
	rdma_destroy_event_channel(ch);
}

static void test_unreachable(void)
{
	struct sockaddr_in dst = sin4("198.51.100.7", 7471);
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *id;

	if (!CHECK(ch != NULL, "channel"))
		return;
	rdma_create_id(ch, &id, NULL, RDMA_PS_TCP);
	CHECK_RET_ERRNO(rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst, 1000), -1, ENETUNREACH);
	CHECK(!fd_readable(ch), "no event (Linux: no route fails at once)");
	CHECK(id->verbs == NULL, "no device");
	CHECK_RET_ERRNO(rdma_resolve_route(id, 1000), -1, EINVAL);
	rdma_destroy_id(id);
	rdma_destroy_event_channel(ch);
}

static void test_route(void)
{
	struct sockaddr_in src = sin4("192.0.2.1", 0), dst = sin4("192.0.2.2", 7471);
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct ibv_sa_path_rec *pr;
	struct ibv_port_attr pa;
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;

	if (!CHECK(ch != NULL, "channel"))
		return;
	rdma_create_id(ch, &id, NULL, RDMA_PS_TCP);
	CHECK_RET_ERRNO(rdma_bind_addr(id, (struct sockaddr *)&src), 0, 0);
	CHECK_RET_ERRNO(rdma_resolve_route(id, 1000), -1, EINVAL); /* bound, not resolved */
	CHECK_RET_ERRNO(rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst, 1000), 0, 0);
	check_addr_resolved(ch, id);
	CHECK_RET_ERRNO(rdma_resolve_route(id, 1000), 0, 0);
	ev = next_event(ch);
	if (CHECK(ev != NULL, "route event")) {
		CHECK(ev->event == RDMA_CM_EVENT_ROUTE_RESOLVED && ev->status == 0, "ROUTE_RESOLVED (got %s %d)",
		      rdma_event_str(ev->event), ev->status);
		rdma_ack_cm_event(ev);
	}
	pr = id->route.path_rec;
	CHECK_EQ(id->route.num_paths, 1, "one path");
	if (CHECK(pr != NULL, "a path record") && CHECK(ibv_query_port(g_ctx[0], 1, &pa) == 0, "port")) {
		CHECK(memcmp(&pr->sgid, &id->route.addr.addr.ibaddr.sgid, 16) == 0, "path sgid");
		CHECK(memcmp(&pr->dgid, &id->route.addr.addr.ibaddr.dgid, 16) == 0, "path dgid");
		CHECK(pr->dgid.raw[10] == 0xff && pr->dgid.raw[11] == 0xff &&
		      memcmp(&pr->dgid.raw[12], &dst.sin_addr, 4) == 0, "dgid ::ffff:192.0.2.2");
		CHECK_EQ(pr->mtu, pa.active_mtu, "the port's active MTU");
		CHECK_EQ(pr->hop_limit, 64, "hop limit");
		CHECK_EQ(pr->traffic_class, 0, "traffic class");
		CHECK_EQ(be16toh(pr->pkey), 0xffff, "P_Key");
	}
	CHECK_RET_ERRNO(rdma_resolve_route(id, 1000), -1, EINVAL); /* resolved already */
	rdma_destroy_id(id);
	rdma_destroy_event_channel(ch);
}

/* A NULL-channel id: the call waits for its event, left in id->event (rdma-core's ucma_complete). */
static void test_sync(void)
{
	struct sockaddr_in dst = sin4("192.0.2.1", 7471);
	struct rdma_cm_id *id;

	rdma_create_id(NULL, &id, NULL, RDMA_PS_TCP);
	CHECK_RET_ERRNO(rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst, 1000), 0, 0);
	CHECK(id->event != NULL && id->event->event == RDMA_CM_EVENT_ADDR_RESOLVED, "id->event ADDR_RESOLVED");
	CHECK_RET_ERRNO(rdma_resolve_route(id, 1000), 0, 0);
	CHECK(id->event != NULL && id->event->event == RDMA_CM_EVENT_ROUTE_RESOLVED, "id->event ROUTE_RESOLVED");
	CHECK(!fd_readable(id->channel), "nothing left queued");
	rdma_destroy_id(id); /* acks id->event */
}

static void test_getaddrinfo(void)
{
	struct rdma_addrinfo hints = { 0 }, *res = NULL;
	struct sockaddr_in src = sin4("192.0.2.1", 0);

	CHECK_RET_ERRNO(rdma_getaddrinfo("192.0.2.2", "7471", NULL, &res), 0, 0);
	if (CHECK(res != NULL && res->ai_dst_addr != NULL, "a destination")) {
		CHECK(res->ai_family == AF_INET && res->ai_port_space == RDMA_PS_TCP && res->ai_qp_type == IBV_QPT_RC,
		      "AF_INET, RDMA_PS_TCP, RC by default");
		CHECK(res->ai_dst_len == sizeof(struct sockaddr_in) &&
		      ((struct sockaddr_in *)res->ai_dst_addr)->sin_port == htons(7471), "the port");
		CHECK(res->ai_src_addr == NULL && res->ai_next == NULL, "no source, one answer");
	}
	rdma_freeaddrinfo(res);
	res = NULL;
	hints.ai_flags = RAI_PASSIVE | RAI_NUMERICHOST;
	hints.ai_port_space = RDMA_PS_UDP;
	CHECK_RET_ERRNO(rdma_getaddrinfo(NULL, "7471", &hints, &res), 0, 0);
	if (CHECK(res != NULL && res->ai_src_addr != NULL, "passive: a source")) {
		CHECK(res->ai_dst_addr == NULL && res->ai_port_space == RDMA_PS_UDP && res->ai_qp_type == IBV_QPT_UD,
		      "RDMA_PS_UDP -> UD");
		CHECK(res->ai_flags == RAI_PASSIVE, "ai_flags RAI_PASSIVE only (as rdma-core)");
	}
	rdma_freeaddrinfo(res);
	res = NULL;
	hints = (struct rdma_addrinfo){ .ai_family = AF_INET6, .ai_flags = RAI_NUMERICHOST };
	hints.ai_src_addr = (struct sockaddr *)&src;
	hints.ai_src_len = sizeof(src);
	CHECK_RET_ERRNO(rdma_getaddrinfo("fe80::1", "18515", &hints, &res), 0, 0);
	if (CHECK(res != NULL && res->ai_dst_addr != NULL, "IPv6")) {
		CHECK(res->ai_family == AF_INET6 && res->ai_dst_len == sizeof(struct sockaddr_in6), "AF_INET6");
		CHECK(res->ai_src_addr != NULL && memcmp(res->ai_src_addr, &src, sizeof(src)) == 0,
		      "the hints' source copied");
	}
	rdma_freeaddrinfo(res);
	res = NULL;
	CHECK_RET_ERRNO(rdma_getaddrinfo("not-an-address", "1", &hints, &res), -1, EAI_NONAME);
	CHECK(res == NULL, "no result");
	CHECK_RET_ERRNO(rdma_getaddrinfo(NULL, NULL, NULL, &res), -1, EINVAL);
	hints = (struct rdma_addrinfo){ .ai_port_space = RDMA_PS_UDP, .ai_qp_type = IBV_QPT_UD };
	hints.ai_dst_addr = (struct sockaddr *)&src;
	hints.ai_dst_len = sizeof(src);
	CHECK_RET_ERRNO(rdma_getaddrinfo(NULL, NULL, &hints, &res), 0, 0);
	CHECK(res != NULL && res->ai_port_space == RDMA_PS_UDP && res->ai_dst_addr != NULL &&
	      memcmp(res->ai_dst_addr, &src, sizeof(src)) == 0, "no node nor service: the hints");
	rdma_freeaddrinfo(res);
	CHECK_RET_ERRNO(rdma_getaddrinfo("192.0.2.2", "1", NULL, NULL), -1, EINVAL);
}

int main(void)
{
	struct ibv_context **l = rdma_get_devices(NULL);

	if (!CHECK(l != NULL && l[0] != NULL && l[1] != NULL, "two devices"))
		return dpvt_finish();
	g_ctx[0] = l[0];
	g_ctx[1] = l[1];
	rdma_free_devices(l);
	test_bind();
	test_bind_other();
	test_resolve();
	test_resolve_ll();
	test_unreachable();
	test_ipv6();
	test_route();
	test_sync();
	test_getaddrinfo();
	return dpvt_finish();
}
