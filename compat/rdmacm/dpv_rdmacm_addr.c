/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * Addresses and routes of the drop-in librdmacm.so.1: rdma_bind_addr,
 * rdma_resolve_addr, rdma_resolve_route, from dpverbs' own GID tables
 * (ibv_query_gid on the contexts rdma_get_devices opens), never the
 * kernel's interfaces. The rules are Linux's (drivers/infiniband/core/cma.c
 * and addr.c, seen through rdma-core 44's librdmacm):
 *  - bind: a specific address binds the id to the port whose GID table
 *    holds it (IPv4: its IPv4-mapped GID ::ffff:a.b.c.d); an address no
 *    port has: EADDRNOTAVAIL (rdma_translate_ip); a link-local IPv6 address
 *    without sin6_scope_id: EINVAL (cma_check_linklocal); the wildcard and
 *    loopback addresses (cma_any_addr) bind without a device; port 0
 *    takes a free port of 32768..60999 (Linux's default
 *    ip_local_port_range); the same (port space, port) bound twice:
 *    EADDRINUSE for the same specific address, EADDRNOTAVAIL when one of
 *    the two is a wildcard or loopback address (cma_check_port), unless
 *    both set REUSEADDR;
 *  - resolve_addr: the source is the port whose configured IPv4 subnet or
 *    IPv6 prefix holds the destination (dpverbs has no gateways: no such
 *    port is Linux's "no route", rdma_resolve_addr fails at once with
 *    ENETUNREACH as ip_route_output_key); a port beside a kernel interface
 *    ("af_xdp", "kernel_iface") is the source when the kernel's route to
 *    the destination leaves through that interface (RTM_GETROUTE, as Linux
 *    itself decides); then the neighbour (ARP/ND, by
 *    dpverbs' own table: dpv_query_neigh) as Linux's rdma_resolve_ip:
 *    RDMA_CM_EVENT_ADDR_RESOLVED once it answered, RDMA_CM_EVENT_ADDR_ERROR
 *    with status -ETIMEDOUT when it did not within timeout_ms
 *    (dpv_rdmacm_resolve.c);
 *  - resolve_route: a RoCE path record (cma_resolve_iboe_route) and
 *    RDMA_CM_EVENT_ROUTE_RESOLVED; EINVAL unless the address is resolved.
 * An id of a NULL channel waits for its event, as rdma-core's
 * ucma_complete: the event stays in id->event until the next call.
 */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <net/if.h>

#include <infiniband/ib.h>

#include "dpv_conf.h"
#include "dpv_nl.h"
#include "dpv_rdmacm.h"
#include "dpv_rdmacm_cmsvc.h"

#define EPHEMERAL_LO 32768u /* Linux's default net.ipv4.ip_local_port_range */
#define EPHEMERAL_HI 60999u
#define GID_SCAN_MAX 16u    /* GID indexes looked at per port */
#define ROCE_HOP_LIMIT 64   /* IPv4 default TTL / IPv6 default hop limit */
#define IBOE_PACKET_LIFETIME 18 /* cma.c CMA_IBOE_PACKET_LIFETIME (Linux >= 5.13) */

/* ---- process-wide table of bound addresses ---- */

struct binding {
	struct dpv_rdmacm_id *id;
	enum rdma_port_space ps;
	uint16_t port;
	struct sockaddr_storage addr;
	struct binding *next;
};

static pthread_mutex_t g_bind_lock = PTHREAD_MUTEX_INITIALIZER;
static struct binding *g_binds;
static unsigned int g_bind_calls; /* ephemeral allocations so far (g_bind_lock) */

/*
 * cma_any_addr: the wildcard or a loopback address (127/8, ::1). Linux binds
 * both without a device (libfabric's verbs provider binds "localhost" and
 * then takes the addresses of its interfaces) and resolves both to the
 * id's own port (cma_resolve_loopback).
 */
static bool addr_is_any(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET) {
		uint32_t a = ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr);

		return a == INADDR_ANY || (a >> 24) == IN_LOOPBACKNET;
	}
	return IN6_IS_ADDR_UNSPECIFIED(&((const struct sockaddr_in6 *)sa)->sin6_addr) ||
	       IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)sa)->sin6_addr);
}

static bool addr_eq(const struct sockaddr *a, const struct sockaddr *b)
{
	if (a->sa_family != b->sa_family)
		return false;
	if (a->sa_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	return IN6_ARE_ADDR_EQUAL(&((const struct sockaddr_in6 *)a)->sin6_addr,
				  &((const struct sockaddr_in6 *)b)->sin6_addr);
}

static uint16_t sa_port(const struct sockaddr *sa)
{
	return ntohs(sa->sa_family == AF_INET ? ((const struct sockaddr_in *)sa)->sin_port
					      : ((const struct sockaddr_in6 *)sa)->sin6_port);
}

static void sa_set_port(struct sockaddr *sa, uint16_t port)
{
	if (sa->sa_family == AF_INET)
		((struct sockaddr_in *)sa)->sin_port = htons(port);
	else
		((struct sockaddr_in6 *)sa)->sin6_port = htons(port);
}

static size_t sa_len(const struct sockaddr *sa)
{
	return sa->sa_family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
}

/* cma_check_port: 0, EADDRINUSE or EADDRNOTAVAIL. g_bind_lock held. */
static int port_conflict(const struct dpv_rdmacm_id *p, enum rdma_port_space ps, uint16_t port,
			 const struct sockaddr *sa)
{
	for (const struct binding *b = g_binds; b != NULL; b = b->next) {
		const struct sockaddr *cur = (const struct sockaddr *)&b->addr;

		if (b->ps != ps || b->port != port)
			continue;
		if (p->reuseaddr && b->id->reuseaddr)
			continue;
		if (p->afonly && b->id->afonly && sa->sa_family != cur->sa_family)
			continue;
		if (addr_is_any(sa) || addr_is_any(cur))
			return EADDRNOTAVAIL;
		if (addr_eq(sa, cur))
			return EADDRINUSE;
	}
	return 0;
}

static bool port_used(enum rdma_port_space ps, uint16_t port)
{
	for (const struct binding *b = g_binds; b != NULL; b = b->next)
		if (b->ps == ps && b->port == port)
			return true;
	return false;
}

/* Records p's binding of sa (port 0: a free ephemeral port, written into sa). */
static int bind_record(struct dpv_rdmacm_id *p, struct sockaddr *sa)
{
	uint16_t port = sa_port(sa);
	struct binding *b = calloc(1, sizeof(*b));
	int ret = 0;

	if (b == NULL)
		return ENOMEM;
	pthread_mutex_lock(&g_bind_lock);
	if (port == 0) {
		unsigned int n = EPHEMERAL_HI - EPHEMERAL_LO + 1;
		/* a start that differs per process and per call, without touching random()'s state */
		unsigned int start = ((unsigned int)getpid() * 2654435761u + g_bind_calls++ * 7919u) % n;

		ret = EADDRNOTAVAIL; /* cma_alloc_any_port when the range is exhausted */
		for (unsigned int i = 0; i < n && ret != 0; i++) {
			port = (uint16_t)(EPHEMERAL_LO + (start + i) % n);
			if (!port_used(p->id.ps, port))
				ret = 0;
		}
	} else {
		ret = port_conflict(p, p->id.ps, port, sa);
	}
	if (ret == 0) {
		sa_set_port(sa, port);
		b->id = p;
		b->ps = p->id.ps;
		b->port = port;
		memcpy(&b->addr, sa, sa_len(sa));
		b->next = g_binds;
		g_binds = b;
		b = NULL;
	}
	pthread_mutex_unlock(&g_bind_lock);
	free(b);
	return ret;
}

/* Changes the address of p's binding (the wildcard turned into the source). */
static void bind_update(struct dpv_rdmacm_id *p, const struct sockaddr *sa)
{
	pthread_mutex_lock(&g_bind_lock);
	for (struct binding *b = g_binds; b != NULL; b = b->next)
		if (b->id == p)
			memcpy(&b->addr, sa, sa_len(sa));
	pthread_mutex_unlock(&g_bind_lock);
}

void dpv_rdmacm_addr_release(struct dpv_rdmacm_id *p)
{
	dpv_rdmacm_neigh_cancel(p);
	pthread_mutex_lock(&g_bind_lock);
	for (struct binding **pb = &g_binds; *pb != NULL;) {
		struct binding *b = *pb;

		if (b->id == p) {
			*pb = b->next;
			free(b);
		} else {
			pb = &b->next;
		}
	}
	pthread_mutex_unlock(&g_bind_lock);
	free(p->id.route.path_rec);
	p->id.route.path_rec = NULL;
	p->id.route.num_paths = 0;
}

/* ---- the GID tables and the configured prefixes ---- */

/* The GID an address is (IPv4: ::ffff:a.b.c.d). */
static void addr_gid(const struct sockaddr *sa, union ibv_gid *gid)
{
	memset(gid, 0, sizeof(*gid));
	if (sa->sa_family == AF_INET) {
		gid->raw[10] = 0xff;
		gid->raw[11] = 0xff;
		memcpy(&gid->raw[12], &((const struct sockaddr_in *)sa)->sin_addr, 4);
	} else {
		memcpy(gid->raw, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
	}
}

/* Finds the device and port whose GID table holds sa; 0 or -1. */
static int find_local(const struct sockaddr *sa, struct ibv_context **ctx, uint8_t *port)
{
	struct dpv_rdmacm_dev *devs;
	int n = dpv_rdmacm_devices(&devs);
	union ibv_gid want, g;

	addr_gid(sa, &want);
	for (int d = 0; d < n; d++) {
		for (uint8_t pn = 1; pn <= devs[d].port_cnt; pn++) {
			for (unsigned int i = 0; i < GID_SCAN_MAX; i++) {
				if (ibv_query_gid(devs[d].verbs, pn, (int)i, &g) != 0)
					break;
				if (memcmp(g.raw, want.raw, 16) == 0) {
					*ctx = devs[d].verbs;
					*port = pn;
					return 0;
				}
			}
		}
	}
	return -1;
}

static bool prefix_match(const uint8_t *a, const uint8_t *b, unsigned int bits)
{
	unsigned int bytes = bits / 8, rest = bits % 8;

	if (memcmp(a, b, bytes) != 0)
		return false;
	return rest == 0 || ((a[bytes] ^ b[bytes]) & (uint8_t)(0xff << (8 - rest))) == 0;
}

/* Does the kernel route dst through interface netdev (a port beside the
 * kernel: the kernel owns its addresses and routes)? */
static bool kernel_reaches(const char *netdev, const struct sockaddr *dst)
{
	uint8_t a[16] = {0};
	int oif = 0;

	if (dst->sa_family == AF_INET) {
		a[10] = a[11] = 0xff;
		memcpy(a + 12, &((const struct sockaddr_in *)dst)->sin_addr, 4);
	} else {
		memcpy(a, &((const struct sockaddr_in6 *)dst)->sin6_addr, 16);
	}
	return dpv_nl_route_get(a, &oif, NULL) == 0 && oif > 0 && (unsigned int)oif == if_nametoindex(netdev);
}

/* Does the configured port (by device name) have dst in one of its subnets? */
static bool conf_reaches(const struct dpv_conf *conf, const char *name, const struct sockaddr *dst)
{
	const struct dpv_conf_port *cp = dpv_conf_port_by_name(conf, name);

	if (cp == NULL)
		return false;
	/* a group: every port sends to it (Linux routes it by the bound
	 * source's device, or the route to the group) */
	if (dst->sa_family == AF_INET ? IN_MULTICAST(ntohl(((const struct sockaddr_in *)dst)->sin_addr.s_addr))
				      : IN6_IS_ADDR_MULTICAST(&((const struct sockaddr_in6 *)dst)->sin6_addr))
		return true;
	const char *netdev = dpv_conf_port_netdev(cp);

	if (dst->sa_family == AF_INET6 && IN6_IS_ADDR_LINKLOCAL(&((const struct sockaddr_in6 *)dst)->sin6_addr))
		return true; /* fe80::/64: every port's link */
	if (netdev != NULL)
		return kernel_reaches(netdev, dst);
	if (dst->sa_family == AF_INET) {
		const struct sockaddr_in *s4 = (const struct sockaddr_in *)dst;

		return cp->ipv4.s_addr != 0 && prefix_match((const uint8_t *)&cp->ipv4, (const uint8_t *)&s4->sin_addr,
							    cp->ipv4_prefix);
	}
	const struct in6_addr *a6 = &((const struct sockaddr_in6 *)dst)->sin6_addr;

	if (IN6_IS_ADDR_LINKLOCAL(a6))
		return true; /* fe80::/64: every port's link */
	for (unsigned int i = 0; i < cp->n_ipv6; i++)
		if (prefix_match(cp->ipv6[i].addr.s6_addr, a6->s6_addr, cp->ipv6[i].prefix))
			return true;
	return false;
}

/*
 * The port that reaches dst: want (if not NULL) or the first one whose
 * subnet holds dst. 0 with ctx and port set, or ENETUNREACH.
 */
static int route_lookup(const struct sockaddr *dst, struct ibv_context *want, struct ibv_context **ctx,
			uint8_t *port)
{
	struct dpv_rdmacm_dev *devs;
	struct dpv_conf conf;
	char err[256];
	int n, ret = ENETUNREACH;

	n = dpv_rdmacm_devices(&devs);
	if (n < 0)
		return errno;
	if (dpv_conf_load(NULL, &conf, err, sizeof(err)) != 0)
		return ENETUNREACH;
	for (int d = 0; d < n && ret != 0; d++) {
		if (want != NULL && devs[d].verbs != want)
			continue;
		if (conf_reaches(&conf, ibv_get_device_name(devs[d].verbs->device), dst)) {
			*ctx = devs[d].verbs;
			*port = 1;
			ret = 0;
		}
	}
	dpv_conf_free(&conf);
	return ret;
}

/* The source address of port for dst's family: GID 1 (IPv4) or the first GID of dst's kind. */
static int port_src_addr(struct ibv_context *ctx, uint8_t port, const struct sockaddr *dst,
			 struct sockaddr_storage *out)
{
	const struct in6_addr *d6 = &((const struct sockaddr_in6 *)dst)->sin6_addr;
	union ibv_gid g;

	for (unsigned int i = 0; i < GID_SCAN_MAX; i++) {
		if (ibv_query_gid(ctx, port, (int)i, &g) != 0)
			break;
		bool v4 = IN6_IS_ADDR_V4MAPPED((struct in6_addr *)g.raw);

		if (dst->sa_family == AF_INET && v4) {
			struct sockaddr_in *s4 = (struct sockaddr_in *)out;

			memset(out, 0, sizeof(*out));
			s4->sin_family = AF_INET;
			memcpy(&s4->sin_addr, &g.raw[12], 4);
			return 0;
		}
		if (dst->sa_family == AF_INET6 && !v4 && !IN6_IS_ADDR_UNSPECIFIED((struct in6_addr *)g.raw) &&
		    IN6_IS_ADDR_LINKLOCAL((struct in6_addr *)g.raw) == IN6_IS_ADDR_LINKLOCAL(d6)) {
			struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)out;

			memset(out, 0, sizeof(*out));
			s6->sin6_family = AF_INET6;
			memcpy(&s6->sin6_addr, g.raw, 16);
			if (IN6_IS_ADDR_LINKLOCAL(d6))
				s6->sin6_scope_id = ((const struct sockaddr_in6 *)dst)->sin6_scope_id;
			return 0;
		}
	}
	return EADDRNOTAVAIL;
}

/* ---- the calls ---- */

/* rdma-core's ucma_addrlen: 0 for a family it does not know. */
static int check_family(const struct sockaddr *sa)
{
	if (sa == NULL)
		return EINVAL;
	switch (sa->sa_family) {
	case AF_INET:
	case AF_INET6:
		return 0;
	case AF_IB:
		return EAFNOSUPPORT; /* dpverbs: no AF_IB addressing */
	default:
		return EINVAL;
	}
}

/* cma_bind_addr/rdma_bind_addr on an idle id; 0 or an errno. */
static int do_bind(struct dpv_rdmacm_id *p, const struct sockaddr *addr)
{
	struct sockaddr_storage sa;
	struct ibv_context *ctx = NULL;
	uint8_t port = 0;
	int ret;

	memset(&sa, 0, sizeof(sa));
	memcpy(&sa, addr, sa_len(addr));
	if (addr->sa_family == AF_INET6 &&
	    IN6_IS_ADDR_LINKLOCAL(&((const struct sockaddr_in6 *)addr)->sin6_addr) &&
	    ((const struct sockaddr_in6 *)addr)->sin6_scope_id == 0)
		return EINVAL; /* cma_check_linklocal */
	if (!addr_is_any(addr) && find_local(addr, &ctx, &port) != 0)
		return EADDRNOTAVAIL; /* rdma_translate_ip */
	ret = bind_record(p, (struct sockaddr *)&sa);
	if (ret != 0)
		return ret;
	if (ctx != NULL && dpv_rdmacm_id_set_device(p, ctx, port) != 0) {
		ret = errno;
		dpv_rdmacm_addr_release(p);
		return ret;
	}
	memcpy(&p->id.route.addr.src_addr, &sa, sa_len(addr));
	p->state = DPV_RDMACM_ADDR_BOUND;
	return 0;
}

/*
 * A bound id listens or connects next: open the connection manager of its
 * device (of every device for a wildcard) now, so that rdma_listen is as
 * quick as the kernel's. A program that sends its port to the peer before
 * it listens (Debian's qperf 0.4.11 server) must not lose the race to the
 * peer's REQ (REJ "invalid service ID") because the listen waited for a
 * GSI QP to be made. Failures are reported by the listen or connect.
 */
static void warm_cm(struct rdma_cm_id *id)
{
	struct dpv_rdmacm_dev *devs;
	int n = id->verbs ? 0 : dpv_rdmacm_devices(&devs);

	dpv_rdmacm_cmsvc_lock();
	if (id->verbs)
		dpv_rdmacm_cmsvc_rt(id->verbs);
	for (int i = 0; i < n && i < 16; i++)
		dpv_rdmacm_cmsvc_rt(devs[i].verbs);
	dpv_rdmacm_cmsvc_unlock();
}

int rdma_bind_addr(struct rdma_cm_id *id, struct sockaddr *addr)
{
	struct dpv_rdmacm_id *p;
	int ret;

	if (id == NULL)
		return dpv_rdmacm_err(EINVAL);
	ret = check_family(addr);
	if (ret != 0)
		return dpv_rdmacm_err(ret);
	p = to_did(id);
	if (p->state != DPV_RDMACM_IDLE)
		return dpv_rdmacm_err(EINVAL);
	ret = do_bind(p, addr);
	if (ret)
		return dpv_rdmacm_err(ret);
	warm_cm(id);
	return 0;
}

static int post_event(struct dpv_rdmacm_id *p, enum rdma_cm_event_type type, int status)
{
	struct rdma_cm_event ev = { .id = &p->id, .event = type, .status = status };

	if (dpv_rdmacm_event_post(p, &ev, NULL, 0) != 0)
		return -1;
	return dpv_rdmacm_complete(p);
}

/* The wildcard of dst's family, port 0 (cma_bind_addr when no source is given). */
static void any_of(const struct sockaddr *dst, struct sockaddr_storage *out)
{
	memset(out, 0, sizeof(*out));
	out->ss_family = dst->sa_family;
	if (dst->sa_family == AF_INET6 &&
	    IN6_IS_ADDR_LINKLOCAL(&((const struct sockaddr_in6 *)dst)->sin6_addr))
		((struct sockaddr_in6 *)out)->sin6_scope_id =
			((const struct sockaddr_in6 *)dst)->sin6_scope_id;
}

/*
 * A wildcard destination is the id's own source (cma_resolve_loopback): the
 * bound address, or the first port's address of that family.
 */
static int loopback_dst(struct dpv_rdmacm_id *p, struct sockaddr_storage *dst)
{
	const struct sockaddr *src = &p->id.route.addr.src_addr;
	struct dpv_rdmacm_dev *devs;
	uint16_t port = sa_port((const struct sockaddr *)dst);

	if (!addr_is_any(src)) {
		memcpy(dst, src, sa_len(src));
	} else {
		if (dpv_rdmacm_devices(&devs) < 0)
			return errno;
		if (port_src_addr(devs[0].verbs, 1, (const struct sockaddr *)dst, dst) != 0)
			return EADDRNOTAVAIL;
	}
	sa_set_port((struct sockaddr *)dst, port);
	return 0;
}

/* ADDR_BOUND -> ADDR_RESOLVED: the port, the source address, the GIDs. */
static int resolve(struct dpv_rdmacm_id *p, struct sockaddr_storage *dst)
{
	struct sockaddr *src = &p->id.route.addr.src_addr;
	struct ibv_context *ctx;
	uint8_t port;
	int ret;

	if (addr_is_any((struct sockaddr *)dst)) {
		ret = loopback_dst(p, dst);
		if (ret != 0)
			return ret;
	}
	ret = route_lookup((struct sockaddr *)dst, p->id.verbs, &ctx, &port);
	if (ret != 0)
		return ret;
	if (p->id.verbs == NULL) {
		struct sockaddr_storage s;
		uint16_t sport = sa_port(src);

		ret = port_src_addr(ctx, port, (struct sockaddr *)dst, &s);
		if (ret != 0)
			return ret;
		if (dpv_rdmacm_id_set_device(p, ctx, port) != 0)
			return errno;
		sa_set_port((struct sockaddr *)&s, sport);
		memcpy(src, &s, sa_len((struct sockaddr *)&s));
		bind_update(p, src);
	}
	memcpy(&p->id.route.addr.dst_addr, dst, sa_len((struct sockaddr *)dst));
	addr_gid(src, &p->id.route.addr.addr.ibaddr.sgid);
	addr_gid((struct sockaddr *)dst, &p->id.route.addr.addr.ibaddr.dgid);
	p->state = DPV_RDMACM_ADDR_RESOLVED;
	return 0;
}

/*
 * rdma_resolve_addr: binds (src, or the wildcard of dst's family) an idle
 * id, finds the port that reaches dst, then waits (at most timeout_ms, in
 * the CM service's thread) for dst's Ethernet address: ADDR_RESOLVED or
 * ADDR_ERROR -ETIMEDOUT (dpv_rdmacm_resolve.c).
 */
int rdma_resolve_addr(struct rdma_cm_id *id, struct sockaddr *src_addr, struct sockaddr *dst_addr,
		      int timeout_ms)
{
	struct sockaddr_storage dst, any;
	struct dpv_rdmacm_id *p;
	int ret;

	if (id == NULL)
		return dpv_rdmacm_err(EINVAL);
	ret = check_family(dst_addr);
	if (ret == 0 && src_addr != NULL)
		ret = check_family(src_addr);
	if (ret != 0)
		return dpv_rdmacm_err(ret);
	p = to_did(id);
	if (p->state == DPV_RDMACM_IDLE) {
		if (src_addr == NULL)
			any_of(dst_addr, &any);
		ret = do_bind(p, src_addr != NULL ? src_addr : (struct sockaddr *)&any);
		if (ret != 0)
			return dpv_rdmacm_err(ret);
	}
	if (p->state != DPV_RDMACM_ADDR_BOUND || id->route.addr.src_addr.sa_family != dst_addr->sa_family)
		return dpv_rdmacm_err(EINVAL);
	memset(&dst, 0, sizeof(dst));
	memcpy(&dst, dst_addr, sa_len(dst_addr));
	ret = resolve(p, &dst);
	if (ret != 0)
		return dpv_rdmacm_err(ret);
	ret = dpv_rdmacm_neigh_start(p, timeout_ms);
	if (ret < 0)
		return -1;
	if (ret == 1)
		return dpv_rdmacm_complete(p); /* the CM service's thread posts the event */
	return post_event(p, RDMA_CM_EVENT_ADDR_RESOLVED, 0);
}

/* A RoCE path record, as cma_resolve_iboe_route fills it. */
static int fill_path(struct dpv_rdmacm_id *p, struct ibv_sa_path_rec *pr)
{
	struct ibv_port_attr pa;

	if (ibv_query_port(p->id.verbs, p->id.port_num, &pa) != 0)
		return errno ? errno : EIO;
	memset(pr, 0, sizeof(*pr));
	pr->sgid = p->id.route.addr.addr.ibaddr.sgid;
	pr->dgid = p->id.route.addr.addr.ibaddr.dgid;
	pr->hop_limit = ROCE_HOP_LIMIT;
	pr->traffic_class = p->tos_set ? p->tos : 0;
	pr->reversible = 1;
	pr->numb_path = 1;
	pr->pkey = htobe16(0xffff);
	pr->mtu_selector = 2; /* exactly */
	pr->mtu = pa.active_mtu;
	pr->rate_selector = 2;
	pr->rate = 0;
	pr->packet_life_time_selector = 2;
	/* cma_resolve_iboe_route: the ACK timeout option, when set, gives it */
	pr->packet_life_time = p->ack_timeout_set && p->ack_timeout ? p->ack_timeout - 1 : IBOE_PACKET_LIFETIME;
	return 0;
}

int rdma_resolve_route(struct rdma_cm_id *id, int timeout_ms)
{
	struct ibv_sa_path_rec *pr;
	struct dpv_rdmacm_id *p;
	int ret;

	(void)timeout_ms;
	if (id == NULL)
		return dpv_rdmacm_err(EINVAL);
	p = to_did(id);
	if (p->state != DPV_RDMACM_ADDR_RESOLVED)
		return dpv_rdmacm_err(EINVAL);
	pr = id->route.path_rec != NULL ? id->route.path_rec : calloc(1, sizeof(*pr));
	if (pr == NULL)
		return dpv_rdmacm_err(ENOMEM);
	ret = fill_path(p, pr);
	if (ret != 0) {
		if (pr != id->route.path_rec)
			free(pr);
		return dpv_rdmacm_err(ret);
	}
	id->route.path_rec = pr;
	id->route.num_paths = 1;
	p->state = DPV_RDMACM_ROUTE_RESOLVED;
	return post_event(p, RDMA_CM_EVENT_ROUTE_RESOLVED, 0);
}

/* RDMA_OPTION_IB_PATH: the route from a path record the caller got
 * elsewhere (ibacm, an SA), as Linux's ucma_set_ib_path and
 * rdma_set_ib_path: the first record flagged GMP | PRIMARY | BIDIRECTIONAL,
 * in the SA's wire layout, becomes id->route.path_rec (LIDs 0, as Linux
 * reports them on RoCE) on an id whose address is resolved; then
 * ROUTE_RESOLVED, as rdma_resolve_route. A path MTU that is no IB MTU
 * (1..5) is refused here rather than at rdma_connect. */
int dpv_rdmacm_set_ib_path(struct dpv_rdmacm_id *p, const void *optval, size_t optlen)
{
	const uint32_t want = IBV_PATH_FLAG_GMP | IBV_PATH_FLAG_PRIMARY | IBV_PATH_FLAG_BIDIRECTIONAL;
	const struct ibv_path_data *d = optval;
	const struct ibv_path_record *r = NULL;

	if (optlen == 0 || optlen % sizeof(*d) != 0)
		return dpv_rdmacm_err(EINVAL);
	for (size_t i = 0; i < optlen / sizeof(*d) && r == NULL; i++)
		if (d[i].flags == want)
			r = &d[i].path;
	if (r == NULL || p->state != DPV_RDMACM_ADDR_RESOLVED || (r->mtu & 0x3f) < IBV_MTU_256 ||
	    (r->mtu & 0x3f) > IBV_MTU_4096)
		return dpv_rdmacm_err(EINVAL);
	struct ibv_sa_path_rec *pr = p->id.route.path_rec != NULL ? p->id.route.path_rec : calloc(1, sizeof(*pr));
	if (pr == NULL)
		return dpv_rdmacm_err(ENOMEM);
	uint32_t fh = be32toh(r->flowlabel_hoplimit);
	memset(pr, 0, sizeof(*pr));
	pr->dgid = r->dgid;
	pr->sgid = r->sgid;
	pr->flow_label = htobe32((fh >> 8) & 0xfffff);
	pr->hop_limit = (uint8_t)fh;
	pr->traffic_class = r->tclass;
	pr->reversible = r->reversible_numpath >> 7;
	pr->numb_path = r->reversible_numpath & 0x7f;
	pr->pkey = r->pkey;
	pr->sl = be16toh(r->qosclass_sl) & 0xf;
	pr->mtu_selector = r->mtu >> 6;
	pr->mtu = r->mtu & 0x3f;
	pr->rate_selector = r->rate >> 6;
	pr->rate = r->rate & 0x3f;
	pr->packet_life_time_selector = r->packetlifetime >> 6;
	pr->packet_life_time = r->packetlifetime & 0x3f;
	pr->preference = r->preference;
	p->id.route.path_rec = pr;
	p->id.route.num_paths = 1;
	p->state = DPV_RDMACM_ROUTE_RESOLVED;
	return post_event(p, RDMA_CM_EVENT_ROUTE_RESOLVED, 0);
}
