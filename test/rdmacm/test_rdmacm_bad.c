/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Bad input to the drop-in librdmacm, one process on the default
 * configuration (dpv0 192.0.2.1/24, dpv1 192.0.2.2/24 on a ring pair), the
 * events and errno being those of Linux's rdma_cm seen through rdma-core 44
 * (drivers/infiniband/core/addr.c, cma.c, cm.c; librdmacm/cma.c):
 *  - rdma_resolve_addr to 192.0.2.77 (on-link, nobody answers ARP),
 *    timeout 300 ms: returns 0, then RDMA_CM_EVENT_ADDR_ERROR with status
 *    -ETIMEDOUT (addr.c: the neighbour stays unresolved until the timeout);
 *    the id is ADDR_BOUND again: rdma_resolve_route gives EINVAL, and a new
 *    rdma_resolve_addr to 192.0.2.2 on the same id resolves;
 *  - the same on a synchronous id (NULL channel): -1, errno ETIMEDOUT
 *    (librdmacm's ucma_complete);
 *  - rdma_resolve_addr to 203.0.113.5 (no port's subnet: no route): -1,
 *    errno ENETUNREACH, no event;
 *  - with the argument "unreachable" (test rdmacm-bad-unreachable, run with
 *    DPVERBS_FAULT=drop=1: every RoCEv2 frame sent is lost, ARP is not, so
 *    the peer is a host that never answers the CM), only this:
 *    rdma_connect to 192.0.2.2:7471 with DPVERBS_RDMACM_CM_TIMEOUT=14
 *    (67 ms) and DPVERBS_RDMACM_CM_RETRIES=2: RDMA_CM_EVENT_UNREACHABLE,
 *    status -ETIMEDOUT (cma.c, IB_CM_REQ_ERROR) after the 3 sends;
 *  - rdma_connect to 192.0.2.2:7999 (nobody listens) while no id uses dpv1
 *    (no GSI QP there: the port's own CM, drivers/sw/sw_gsi_fb.c, answers
 *    as a Linux host's kernel CM does), and again once dpv1 listens on
 *    7471: RDMA_CM_EVENT_REJECTED, status 8 (IB_CM_REJ_INVALID_SERVICE_ID,
 *    the reason as Linux's cma_ib_handler reports it), private_data_len 148
 *    (IB_CM_REJ_PRIVATE_DATA_SIZE).
 *  - RDMA_OPTION_IB_PATH (as Linux's ucma_set_ib_path / rdma_set_ib_path):
 *    EINVAL on an id whose address is not resolved, for a length that is
 *    not a whole number of struct ibv_path_data, for records none of which
 *    is flagged GMP | PRIMARY | BIDIRECTIONAL; a good record (MTU 512, hop
 *    limit 7, flow label 0x12345, traffic class 0x20, SL 3, packet lifetime
 *    14) gives ROUTE_RESOLVED and id->route.path_rec with those values; a
 *    second one EINVAL (route resolved); rdma_connect on that route to a
 *    listener on 192.0.2.2:7490 is established with path MTU 512 on both
 *    QPs and hop limit 7 on the client's.
 *  - with the argument "fork" (test rdmacm-fork-exit): a listener on
 *    192.0.2.2:7480 (the CM thread runs), then fork(); the child calls
 *    exit(0), which runs the atexit handlers it inherited: it must end at
 *    once (no join of the parent's CM thread, no DREQ/REJ for the parent's
 *    ids, no teardown of the parent's ports in the shared DPDK memory);
 *    then the parent's listener still gets a CONNECT_REQUEST from dpv0.
 * Every wait ends after 5 s. Prints "N passed, N failed".
 */
#include <arpa/inet.h>
#include <endian.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>
#include <sys/wait.h>
#include <stdlib.h>
#include <string.h>

#include "dpv_rdmacm.h"
#include "dpvt_verbs.h"
#include "rdmacm_test.h"

static void unknown_onlink(struct rdma_event_channel *ch)
{
	struct rdma_cm_id *id = NULL;
	struct sockaddr_in nobody = rt_sin4("192.0.2.77", 7471), peer = rt_sin4("192.0.2.2", 7471);

	CHECK(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) == 0, "create_id");
	CHECK(rdma_resolve_addr(id, NULL, (struct sockaddr *)&nobody, 300) == 0,
	      "resolve_addr 192.0.2.77: %s", strerror(errno));
	rt_expect(ch, RDMA_CM_EVENT_ADDR_ERROR, -ETIMEDOUT);
	errno = 0;
	CHECK(rdma_resolve_route(id, 1000) == -1 && errno == EINVAL, "resolve_route after ADDR_ERROR: errno %d",
	      errno);
	CHECK(rdma_resolve_addr(id, NULL, (struct sockaddr *)&peer, 2000) == 0, "resolve_addr again: %s",
	      strerror(errno));
	rt_expect(ch, RDMA_CM_EVENT_ADDR_RESOLVED, 0);
	rdma_destroy_id(id);

	/* a synchronous id waits for the event: -1 ETIMEDOUT */
	CHECK(rdma_create_id(NULL, &id, NULL, RDMA_PS_TCP) == 0, "create_id (sync)");
	errno = 0;
	CHECK(rdma_resolve_addr(id, NULL, (struct sockaddr *)&nobody, 200) == -1 && errno == ETIMEDOUT,
	      "sync resolve_addr 192.0.2.77: errno %d, want ETIMEDOUT", errno);
	rdma_destroy_id(id);

	/* destroyed while resolving: no event, no crash */
	CHECK(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) == 0, "create_id");
	CHECK(rdma_resolve_addr(id, NULL, (struct sockaddr *)&nobody, 2000) == 0, "resolve_addr");
	CHECK(rdma_destroy_id(id) == 0, "destroy while resolving");
}

static void no_route(struct rdma_event_channel *ch)
{
	struct rdma_cm_id *id = NULL;
	struct sockaddr_in far = rt_sin4("203.0.113.5", 7471);
	struct pollfd pfd = {.fd = ch->fd, .events = POLLIN};

	CHECK(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) == 0, "create_id");
	errno = 0;
	CHECK(rdma_resolve_addr(id, NULL, (struct sockaddr *)&far, 2000) == -1 && errno == ENETUNREACH,
	      "resolve_addr 203.0.113.5: errno %d, want ENETUNREACH", errno);
	CHECK(poll(&pfd, 1, 100) == 0, "no event after a failed rdma_resolve_addr");
	rdma_destroy_id(id);
}

/* A connected-to-be client id on 192.0.2.2:port with an RC QP. */
static struct rdma_cm_id *client_to(struct rdma_event_channel *ch, uint16_t port)
{
	struct rdma_cm_id *id = NULL;
	struct sockaddr_in dst = rt_sin4("192.0.2.2", port);
	struct ibv_qp_init_attr a = {.qp_type = IBV_QPT_RC,
				     .cap = {.max_send_wr = 2, .max_recv_wr = 2, .max_send_sge = 1,
					     .max_recv_sge = 1}};

	CHECK(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) == 0, "client id");
	CHECK(rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst, 2000) == 0, "resolve_addr");
	rt_expect(ch, RDMA_CM_EVENT_ADDR_RESOLVED, 0);
	CHECK(rdma_resolve_route(id, 2000) == 0, "resolve_route");
	rt_expect(ch, RDMA_CM_EVENT_ROUTE_RESOLVED, 0);
	CHECK(rdma_create_qp(id, NULL, &a) == 0, "create_qp: %s", strerror(errno));
	return id;
}

static void unreachable(struct rdma_event_channel *ch)
{
	struct rdma_cm_id *c = client_to(ch, 7471);

	CHECK(rdma_connect(c, NULL) == 0, "connect: %s", strerror(errno));
	rt_expect(ch, RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT);
	rdma_destroy_qp(c);
	rdma_destroy_id(c);
}

/* rdma_connect to 192.0.2.2:port, where nobody listens: REJECTED 8, 148 bytes. */
static void connect_rejected(struct rdma_event_channel *ch, uint16_t port, const char *what)
{
	struct rdma_cm_id *c = client_to(ch, port);
	struct rdma_cm_event *ev;

	CHECK(rdma_connect(c, NULL) == 0, "%s: connect to %u", what, port);
	if ((ev = rt_wait_event(ch, RDMA_CM_EVENT_REJECTED))) {
		CHECK(ev->status == 8, "%s: REJECTED status %d, want 8", what, ev->status);
		CHECK(ev->param.conn.private_data_len == 148, "%s: REJECTED private_data_len %u, want 148", what,
		      ev->param.conn.private_data_len);
		rdma_ack_cm_event(ev);
	} else {
		CHECK(0, "%s: no REJECTED", what);
	}
	rdma_destroy_qp(c);
	rdma_destroy_id(c);
}

static void rejected(struct rdma_event_channel *ch)
{
	struct rdma_cm_id *l = NULL;
	struct sockaddr_in sa = rt_sin4("192.0.2.2", 7471);

	/* no id on dpv1 yet, so no GSI QP: the port's own CM answers, as a
	 * Linux host's kernel CM does for a program that uses no rdma_cm */
	connect_rejected(ch, 7999, "dpv1 without CM");
	CHECK(rdma_create_id(ch, &l, NULL, RDMA_PS_TCP) == 0, "listen id");
	CHECK(rdma_bind_addr(l, (struct sockaddr *)&sa) == 0, "bind: %s", strerror(errno));
	CHECK(rdma_listen(l, 4) == 0, "listen: %s", strerror(errno));
	connect_rejected(ch, 7999, "dpv1 listening on 7471");
	rdma_destroy_id(l);
}

static void ib_path(struct rdma_event_channel *ch)
{
	struct rdma_event_channel *sch = rdma_create_event_channel();
	struct rdma_cm_id *l = NULL, *c = NULL, *child = NULL;
	struct sockaddr_in sa = rt_sin4("192.0.2.2", 7490);
	struct ibv_path_data pd[2];
	struct rdma_cm_event *ev;
	struct ibv_qp_init_attr a = {.qp_type = IBV_QPT_RC, .cap = {.max_send_wr = 4, .max_recv_wr = 4,
					.max_send_sge = 1, .max_recv_sge = 1}};
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qi;

	CHECK(sch != NULL, "server channel");
	if (sch == NULL)
		return;
	CHECK(rdma_create_id(sch, &l, NULL, RDMA_PS_TCP) == 0 && rdma_bind_addr(l, (struct sockaddr *)&sa) == 0 &&
	      rdma_listen(l, 4) == 0, "listener on 7490: %s", strerror(errno));
	CHECK(rdma_create_id(ch, &c, NULL, RDMA_PS_TCP) == 0, "client id");
	memset(pd, 0, sizeof(pd));
	pd[0].flags = IBV_PATH_FLAG_GMP | IBV_PATH_FLAG_PRIMARY; /* not bidirectional */
	pd[1].flags = IBV_PATH_FLAG_GMP | IBV_PATH_FLAG_PRIMARY | IBV_PATH_FLAG_BIDIRECTIONAL;
	struct ibv_path_record *r = &pd[1].path;
	r->flowlabel_hoplimit = htobe32(0x12345u << 8 | 7);
	r->tclass = 0x20;
	r->reversible_numpath = 0x81;
	r->pkey = htobe16(0xffff);
	r->qosclass_sl = htobe16(3);
	r->mtu = 2 << 6 | IBV_MTU_512;
	r->rate = 2 << 6 | 3;
	r->packetlifetime = 2 << 6 | 14;
	errno = 0;
	CHECK(rdma_set_option(c, RDMA_OPTION_IB, RDMA_OPTION_IB_PATH, pd, sizeof(pd)) == -1 && errno == EINVAL,
	      "IB_PATH before the address is resolved: errno %d, want EINVAL", errno);
	struct sockaddr_in dst = rt_sin4("192.0.2.2", 7490);
	CHECK(rdma_resolve_addr(c, NULL, (struct sockaddr *)&dst, 2000) == 0, "resolve_addr");
	rt_expect(ch, RDMA_CM_EVENT_ADDR_RESOLVED, 0);
	r->sgid = c->route.addr.addr.ibaddr.sgid;
	r->dgid = c->route.addr.addr.ibaddr.dgid;
	errno = 0;
	CHECK(rdma_set_option(c, RDMA_OPTION_IB, RDMA_OPTION_IB_PATH, pd, sizeof(pd) - 1) == -1 && errno == EINVAL,
	      "IB_PATH of %zu bytes: errno %d, want EINVAL", sizeof(pd) - 1, errno);
	errno = 0;
	CHECK(rdma_set_option(c, RDMA_OPTION_IB, RDMA_OPTION_IB_PATH, pd, sizeof(pd[0])) == -1 && errno == EINVAL,
	      "IB_PATH without a bidirectional primary record: errno %d, want EINVAL", errno);
	CHECK(rdma_set_option(c, RDMA_OPTION_IB, RDMA_OPTION_IB_PATH, pd, sizeof(pd)) == 0, "IB_PATH: %s",
	      strerror(errno));
	rt_expect(ch, RDMA_CM_EVENT_ROUTE_RESOLVED, 0);
	const struct ibv_sa_path_rec *pr = c->route.path_rec;
	CHECK(c->route.num_paths == 1 && pr != NULL, "num_paths %d", c->route.num_paths);
	if (pr != NULL) {
		CHECK(pr->mtu == IBV_MTU_512 && pr->mtu_selector == 2, "path MTU %u selector %u", pr->mtu,
		      pr->mtu_selector);
		CHECK(pr->hop_limit == 7 && be32toh(pr->flow_label) == 0x12345 && pr->traffic_class == 0x20,
		      "hop limit %u, flow label %#x, traffic class %#x", pr->hop_limit, be32toh(pr->flow_label),
		      pr->traffic_class);
		CHECK(pr->sl == 3 && pr->packet_life_time == 14 && pr->reversible == 1 && pr->numb_path == 1 &&
		      pr->rate == 3 && be16toh(pr->pkey) == 0xffff, "SL %u, packet lifetime %u, reversible %d, "
		      "numb_path %u, rate %u", pr->sl, pr->packet_life_time, pr->reversible, pr->numb_path, pr->rate);
		CHECK(memcmp(&pr->dgid, &r->dgid, 16) == 0, "dgid as given");
	}
	errno = 0;
	CHECK(rdma_set_option(c, RDMA_OPTION_IB, RDMA_OPTION_IB_PATH, pd, sizeof(pd)) == -1 && errno == EINVAL,
	      "a second IB_PATH: errno %d, want EINVAL", errno);
	struct ibv_qp_init_attr a2 = a; /* rdma_create_qp fills in the CQs it made */
	CHECK(rdma_create_qp(c, NULL, &a) == 0, "client QP: %s", strerror(errno));
	CHECK(rdma_connect(c, NULL) == 0, "connect on the given route: %s", strerror(errno));
	if ((ev = rt_wait_event(sch, RDMA_CM_EVENT_CONNECT_REQUEST)) != NULL) {
		child = ev->id;
		rdma_ack_cm_event(ev);
		CHECK(rdma_create_qp(child, NULL, &a2) == 0, "server QP: %s", strerror(errno));
		CHECK(rdma_accept(child, NULL) == 0, "accept: %s", strerror(errno));
	}
	rt_expect(ch, RDMA_CM_EVENT_ESTABLISHED, 0);
	rt_expect(sch, RDMA_CM_EVENT_ESTABLISHED, 0);
	CHECK(c->qp && ibv_query_qp(c->qp, &qa, IBV_QP_PATH_MTU | IBV_QP_AV, &qi) == 0 &&
	      qa.path_mtu == IBV_MTU_512 && qa.ah_attr.grh.hop_limit == 7,
	      "client QP: path MTU %d, hop limit %u, want 2 and 7", qa.path_mtu, qa.ah_attr.grh.hop_limit);
	CHECK(child && child->qp && ibv_query_qp(child->qp, &qa, IBV_QP_PATH_MTU, &qi) == 0 &&
	      qa.path_mtu == IBV_MTU_512, "server QP: path MTU %d, want 2 (the REQ's)", qa.path_mtu);
	rdma_disconnect(c);
	rt_expect(ch, RDMA_CM_EVENT_DISCONNECTED, 0);
	rt_expect(sch, RDMA_CM_EVENT_DISCONNECTED, 0);
	if (child) {
		rdma_destroy_qp(child);
		rdma_destroy_id(child);
	}
	rdma_destroy_qp(c);
	rdma_destroy_id(c);
	rdma_destroy_id(l);
	rdma_destroy_event_channel(sch);
}

/* LeakSanitizer's hook (read only in the ASan build): its exit-time check
 * in a child of fork() of this multi-threaded process can wait for ever on
 * an allocator lock another thread of the parent held at the fork (LSan's
 * own limitation, seen here about 1 run in 5), so the child skips it; the
 * parent's check still runs. */
static volatile int lsan_off;
int __lsan_is_turned_off(void);
int __lsan_is_turned_off(void)
{
	return lsan_off;
}

static void fork_exit(struct rdma_event_channel *ch)
{
	struct rdma_cm_id *l = NULL, *c;
	struct sockaddr_in sa = rt_sin4("192.0.2.2", 7480);
	int st = -1;

	CHECK(rdma_create_id(ch, &l, NULL, RDMA_PS_TCP) == 0, "listen id");
	CHECK(rdma_bind_addr(l, (struct sockaddr *)&sa) == 0, "bind: %s", strerror(errno));
	CHECK(rdma_listen(l, 4) == 0, "listen: %s", strerror(errno));
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		lsan_off = 1;
		exit(0); /* the inherited atexit handlers run here */
	}
	CHECK(pid > 0, "fork");
	bool done = false;
	for (int i = 0; pid > 0 && i < 50 && !done; i++) {
		done = waitpid(pid, &st, WNOHANG) == pid;
		if (!done)
			usleep(100000);
	}
	CHECK(done && WIFEXITED(st) && WEXITSTATUS(st) == 0, "child's exit(0) within 5 s (status 0x%x)", st);
	if (!done && pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
	}
	c = client_to(ch, 7480);
	CHECK(rdma_connect(c, NULL) == 0, "connect after the child's exit");
	struct rdma_cm_event *ev = rt_wait_event(ch, RDMA_CM_EVENT_CONNECT_REQUEST);
	if (ev != NULL) {
		struct rdma_cm_id *child = ev->id;
		rdma_ack_cm_event(ev);
		rdma_reject(child, NULL, 0);
		rdma_destroy_id(child);
	}
	rdma_destroy_qp(c);
	rdma_destroy_id(c);
	rdma_destroy_id(l);
}

int main(int argc, char **argv)
{
	struct rdma_event_channel *ch;

	rt_wait_ms = 5000;
	setenv("DPVERBS_RDMACM_CM_TIMEOUT", "14", 1);
	setenv("DPVERBS_RDMACM_CM_RETRIES", "2", 1);
	ch = rdma_create_event_channel();
	CHECK(ch != NULL, "channel");
	if (ch == NULL)
		return dpvt_finish();
	if (argc > 1 && strcmp(argv[1], "unreachable") == 0) {
		unreachable(ch);
	} else if (argc > 1 && strcmp(argv[1], "fork") == 0) {
		fork_exit(ch);
	} else {
		unknown_onlink(ch);
		no_route(ch);
		rejected(ch);
		ib_path(ch);
	}
	rdma_destroy_event_channel(ch);
	return dpvt_finish();
}
