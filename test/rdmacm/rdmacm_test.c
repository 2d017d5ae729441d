/* SPDX-License-Identifier: BSD-3-Clause */
/* Helpers shared by the rdmacm tests: see rdmacm_test.h. */
#include "rdmacm_test.h"

#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <time.h>

#include "dpvt_verbs.h"

int rt_wait_ms = 3000;
const char *rt_server = "192.0.2.2";
bool rt_loopback;

struct sockaddr_in rt_sin4(const char *ip, uint16_t port)
{
	struct sockaddr_in s = {.sin_family = AF_INET, .sin_port = htons(port)};

	inet_pton(AF_INET, ip, &s.sin_addr);
	return s;
}

struct rdma_cm_event *rt_wait_event(struct rdma_event_channel *ch, enum rdma_cm_event_type want)
{
	struct pollfd pfd = {.fd = ch->fd, .events = POLLIN};
	struct rdma_cm_event *ev = NULL;

	if (poll(&pfd, 1, rt_wait_ms) != 1 || rdma_get_cm_event(ch, &ev) != 0) {
		CHECK(0, "no event (wanted %s)", rdma_event_str(want));
		return NULL;
	}
	CHECK(ev->event == want, "event %s (status %d), wanted %s", rdma_event_str(ev->event), ev->status,
	      rdma_event_str(want));
	return ev;
}

void rt_expect(struct rdma_event_channel *ch, enum rdma_cm_event_type want, int status)
{
	struct rdma_cm_event *ev = rt_wait_event(ch, want);

	if (ev == NULL)
		return;
	CHECK(ev->status == status, "%s: status %d, want %d", rdma_event_str(want), ev->status, status);
	rdma_ack_cm_event(ev);
}

void rt_ack_next(struct rdma_event_channel *ch, enum rdma_cm_event_type want)
{
	struct rdma_cm_event *ev = rt_wait_event(ch, want);

	if (ev)
		rdma_ack_cm_event(ev);
}

struct rdma_cm_id *rt_client_to(struct rdma_event_channel *ch, uint16_t port, enum rdma_port_space ps)
{
	struct rdma_cm_id *id = NULL;
	struct sockaddr_in dst = rt_sin4(rt_server, port), src = rt_sin4(rt_server, 0);
	bool ud = ps == RDMA_PS_UDP;

	CHECK(rdma_create_id(ch, &id, NULL, ps) == 0 && (!ud || id->qp_type == IBV_QPT_UD), "%s",
	      ud ? "client UD id" : "client id");
	CHECK(rdma_resolve_addr(id, rt_loopback ? (struct sockaddr *)&src : NULL, (struct sockaddr *)&dst, 2000) == 0,
	      "resolve_addr");
	rt_ack_next(ch, RDMA_CM_EVENT_ADDR_RESOLVED);
	CHECK(rdma_resolve_route(id, 2000) == 0, "resolve_route");
	rt_ack_next(ch, RDMA_CM_EVENT_ROUTE_RESOLVED);
	return id;
}

/* 1: a completion (status in wc), 0: none within secs. */
static int poll_until(struct ibv_cq *cq, struct ibv_wc *wc, int secs)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		if (ibv_poll_cq(cq, 1, wc) == 1)
			return 1;
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while (t.tv_sec - t0.tv_sec < secs);
	return 0;
}

bool rt_poll_wc(struct ibv_cq *cq, struct ibv_wc *wc, int secs)
{
	return poll_until(cq, wc, secs) == 1 && wc->status == IBV_WC_SUCCESS;
}

bool rt_poll_check(struct ibv_cq *cq, struct ibv_wc *wc, const char *what)
{
	if (!poll_until(cq, wc, 3)) {
		CHECK(0, "%s: no completion", what);
		return false;
	}
	CHECK(wc->status == IBV_WC_SUCCESS, "%s: %s", what, ibv_wc_status_str(wc->status));
	return wc->status == IBV_WC_SUCCESS;
}

void rt_flag_set(pthread_mutex_t *lock, pthread_cond_t *cond, bool *flag)
{
	pthread_mutex_lock(lock);
	*flag = true;
	pthread_cond_signal(cond);
	pthread_mutex_unlock(lock);
}

bool rt_flag_wait(pthread_mutex_t *lock, pthread_cond_t *cond, bool *flag)
{
	struct timespec dl;

	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += 5;
	pthread_mutex_lock(lock);
	while (!*flag && pthread_cond_timedwait(cond, lock, &dl) == 0)
		;
	bool ok = *flag;
	pthread_mutex_unlock(lock);
	return ok;
}
