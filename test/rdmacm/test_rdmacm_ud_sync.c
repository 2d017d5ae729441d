/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Synchronous UD ids of the drop-in librdmacm (rdma_create_ep with
 * RDMA_PS_UDP: dpv_rdmacm_ud.c on the sync machinery), one process, the
 * default configuration (dpv0 192.0.2.1, dpv1 192.0.2.2), as librdmacm's
 * ucma_complete behaves:
 *  - a server thread: rdma_create_ep (passive, UD QP attributes),
 *    rdma_listen, rdma_get_request (a new id with its UD QP, in RTS with
 *    RDMA_UDP_QKEY, the CONNECT_REQUEST in id->event with param.ud),
 *    rdma_accept(id, NULL): returns at once (a UD accept waits for
 *    nothing) and acknowledges id->event;
 *  - the client: rdma_create_ep (addr and route resolved before it
 *    returns; an ai_connect the server finds first in the private data,
 *    as librdmacm sends it), rdma_connect blocks until the SIDR_REP: 0, id->event is
 *    ESTABLISHED with qp_num = the server's QP and qkey RDMA_UDP_QKEY; a UD
 *    SEND with the AH of its ah_attr reaches the server;
 *  - a connect to a port nobody listens on: rdma_connect -1 with errno 1
 *    (the SIDR_REP status, as ucma_complete turns a positive status into
 *    errno), id->event UNREACHABLE.
 * Every wait ends after 5 s. Prints "N passed, N failed".
 */
#include <arpa/inet.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dpv_rdmacm.h"
#include "dpvt_verbs.h"
#include "rdmacm_test.h"

#define GRH 40

static struct ibv_qp_init_attr ud_attr(void)
{
	return (struct ibv_qp_init_attr){.qp_type = IBV_QPT_UD, .sq_sig_all = 1,
		.cap = {.max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1}};
}

static struct rdma_addrinfo *addr(const char *port, bool passive)
{
	struct rdma_addrinfo hints = {.ai_flags = passive ? RAI_PASSIVE : 0, .ai_port_space = RDMA_PS_UDP,
				      .ai_qp_type = IBV_QPT_UD}, *res = NULL;

	CHECK(rdma_getaddrinfo("192.0.2.2", port, &hints, &res) == 0 && res != NULL, "rdma_getaddrinfo %s", port);
	return res;
}

/* The server's findings, checked by the main thread after the join. */
struct server {
	struct rdma_cm_id *listen, *child;
	uint32_t qpn;
	bool listening, req_event, ep_connect, qp_rts, accepted, acked, got;
	int accept_errno;
	char buf[GRH + 64];
	pthread_barrier_t ready;
};

static void serve(struct server *s)
{
	struct ibv_wc wc;
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr qi;
	struct rdma_cm_event *ev = s->child->event;

	s->req_event = ev && ev->event == RDMA_CM_EVENT_CONNECT_REQUEST && ev->param.ud.private_data_len == 180;
	s->ep_connect = s->req_event && memcmp(ev->param.ud.private_data, "ep-connect", 11) == 0;
	s->qp_rts = s->child->qp && ibv_query_qp(s->child->qp, &a, IBV_QP_STATE | IBV_QP_QKEY, &qi) == 0 &&
		    a.qp_state == IBV_QPS_RTS && a.qkey == RDMA_UDP_QKEY;
	s->qpn = s->child->qp ? s->child->qp->qp_num : 0;
	struct ibv_mr *mr = s->child->qp ? rdma_reg_msgs(s->child, s->buf, sizeof(s->buf)) : NULL;
	if (mr && rdma_post_recv(s->child, NULL, s->buf, sizeof(s->buf), mr) != 0) {
		rdma_dereg_mr(mr);
		mr = NULL;
	}
	s->accepted = rdma_accept(s->child, NULL) == 0;
	s->accept_errno = errno;
	s->acked = s->child->event == NULL;
	s->got = mr && rt_poll_wc(s->child->recv_cq, &wc, 5) && strcmp(s->buf + GRH, "sync ud") == 0;
	if (mr)
		rdma_dereg_mr(mr);
}

static void *server_thread(void *arg)
{
	struct server *s = arg;
	struct ibv_qp_init_attr qa = ud_attr();
	struct rdma_addrinfo *res = addr("7473", true);

	s->listening = res && rdma_create_ep(&s->listen, res, NULL, &qa) == 0 && rdma_listen(s->listen, 1) == 0;
	pthread_barrier_wait(&s->ready);
	if (s->listening && rdma_get_request(s->listen, &s->child) == 0)
		serve(s);
	if (res)
		rdma_freeaddrinfo(res);
	return NULL;
}

static void connect_send(void)
{
	struct server s = {0};
	struct rdma_cm_id *c = NULL;
	struct ibv_qp_init_attr qa = ud_attr();
	struct rdma_addrinfo *res;
	pthread_t th;
	static char msg[16] = "sync ud";

	pthread_barrier_init(&s.ready, NULL, 2);
	pthread_create(&th, NULL, server_thread, &s);
	pthread_barrier_wait(&s.ready);
	res = addr("7473", false);
	if (res) { /* what ibacm would give: rdma_create_ep keeps it for the SIDR_REQ */
		res->ai_connect = strdup("ep-connect");
		res->ai_connect_len = 11;
	}
	if (res && CHECK(rdma_create_ep(&c, res, NULL, &qa) == 0, "active rdma_create_ep: %s", strerror(errno))) {
		CHECK(rdma_connect(c, NULL) == 0, "sync UD connect: %s", strerror(errno));
		struct rdma_cm_event *ev = c->event;
		if (CHECK(ev && ev->event == RDMA_CM_EVENT_ESTABLISHED, "ESTABLISHED in id->event")) {
			CHECK(ev->param.ud.qkey == RDMA_UDP_QKEY && ev->param.ud.qp_num == s.qpn,
			      "ud: qp_num 0x%x (server 0x%x)", ev->param.ud.qp_num, s.qpn);
			struct ibv_ah *ah = ibv_create_ah(c->pd, &ev->param.ud.ah_attr);
			struct ibv_mr *mr = rdma_reg_msgs(c, msg, sizeof(msg));
			struct ibv_wc wc;
			CHECK(ah && mr && rdma_post_ud_send(c, NULL, msg, 8, mr, IBV_SEND_SIGNALED, ah,
							    ev->param.ud.qp_num) == 0 && rt_poll_wc(c->send_cq, &wc, 5),
			      "UD SEND with the ESTABLISHED AH");
			if (mr)
				rdma_dereg_mr(mr);
			if (ah)
				ibv_destroy_ah(ah);
		}
	}
	pthread_join(th, NULL);
	CHECK(s.listening, "passive rdma_create_ep + rdma_listen");
	CHECK(s.child != NULL && s.req_event, "get_request: CONNECT_REQUEST in id->event, 180 bytes of private data");
	CHECK(s.ep_connect, "ai_connect at the start of the SIDR_REQ's private data");
	CHECK(s.qp_rts, "get_request's UD QP in RTS with RDMA_UDP_QKEY");
	CHECK(s.accepted, "sync UD accept: %s", strerror(s.accept_errno));
	CHECK(s.acked, "accept acknowledged id->event");
	CHECK(s.got, "the server received the message");
	if (c)
		rdma_destroy_ep(c);
	if (s.child)
		rdma_destroy_ep(s.child);
	if (s.listen)
		rdma_destroy_ep(s.listen);
	if (res)
		rdma_freeaddrinfo(res);
	pthread_barrier_destroy(&s.ready);
}

static void refused(void)
{
	struct rdma_cm_id *c = NULL;
	struct ibv_qp_init_attr qa = ud_attr();
	struct rdma_addrinfo *res = addr("7999", false);

	if (res && CHECK(rdma_create_ep(&c, res, NULL, &qa) == 0, "rdma_create_ep to 7999")) {
		errno = 0;
		CHECK(rdma_connect(c, NULL) == -1 && errno == 1, "connect to a closed port: -1, errno %d", errno);
		CHECK(c->event && c->event->event == RDMA_CM_EVENT_UNREACHABLE && c->event->status == 1,
		      "UNREACHABLE status 1 in id->event");
		rdma_destroy_ep(c);
	}
	if (res)
		rdma_freeaddrinfo(res);
}

int main(void)
{
	connect_send();
	refused();
	return dpvt_finish();
}
