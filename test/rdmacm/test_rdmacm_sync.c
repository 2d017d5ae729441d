/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Synchronous ids, rdma_create_ep, rdma_get_request, connections without a
 * QP (rdma_init_qp_attr, rdma_establish, rdma_notify) on the drop-in
 * librdmacm, default configuration (dpv0 192.0.2.1, dpv1 192.0.2.2), one
 * process:
 *  1. as rdma_server/rdma_client: a passive endpoint (rdma_getaddrinfo
 *     RAI_PASSIVE + rdma_create_ep with qp_init_attr) listens in a thread,
 *     rdma_get_request gives an id with a QP and the CONNECT_REQUEST in
 *     id->event; an active endpoint (rdma_create_ep, QP made) connects
 *     with private data: rdma_connect and rdma_accept return once
 *     ESTABLISHED (id->event); ai_connect goes before the private data,
 *     ai_route resolves the route (path MTU 512 on the QP); a
 *     SEND; rdma_disconnect on both sides returns with DISCONNECTED in
 *     id->event;
 *  1b. the same with UD endpoints (RDMA_PS_UDP, SIDR): the synchronous
 *     rdma_connect returns once ESTABLISHED (param.ud: the server's QPN and
 *     Q_Key), rdma_accept does not wait;
 *  1c. XRC endpoints as rdma_xserver/rdma_xclient -c x: the request's id is
 *     XRC_RECV with its QP, an XRC SRQ in the device's XRC domain, the SRQ
 *     number in the REP's private data, a SEND from the XRC_SEND QP lands
 *     in the SRQ;
 *  2. a synchronous rdma_connect to a port nobody listens on: -1
 *     ECONNREFUSED (REJECTED in id->event, status 8);
 *  3. without QPs on the ids (conn_param->qp_num): CONNECT_RESPONSE on the
 *     active side; rdma_init_qp_attr INIT/RTR/RTS on both sides give
 *     crossed QPNs and PSNs and the ACK timeouts ib_cm computes (the
 *     active side's ACK timeout option 12 makes the path's packet life time
 *     11, the REQ's local ACK timeout 15, the passive QP's timeout); the passive side's rdma_notify(COMM_EST) gives
 *     ESTABLISHED before the RTU, a second one EISCONN; rdma_establish
 *     sends the RTU, then EINVAL; a SEND over the application's QPs;
 *  4. when every id is gone the CM thread stops, and starts again for the
 *     next connection (case 2 runs after it);
 *  5. a slow accept (600 ms) while the client's REQ times out after 67 ms
 *     with 2 retries (DPVERBS_RDMACM_CM_TIMEOUT=14, _RETRIES=2): the
 *     retransmitted REQ is answered with the kept MRA (Linux's
 *     CMA_CM_MRA_SETTING), the client waits (MRA_REQ_RCVD, no UNREACHABLE)
 *     and the late rdma_accept connects.
 * Every wait ends after 3 s (the server thread's after 5 s). Prints
 * "N passed, N failed".
 */
#include <endian.h>
#include <arpa/inet.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dpv_rdmacm.h"
#include "dpv_rdmacm_cmsvc.h"
#include "dpvt_verbs.h"
#include "rdmacm_test.h"

/* ---- 1. endpoints ---- */

/* What the server thread saw (checked in main: CHECK is not thread-safe). */
struct srv {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool listening, done;
	int create_ep, listen, get_request, accept, recv, disconnect;
	int req_event, req_pd_ok, has_qp, est_event, disc_event;
	char rbuf[32];
};

static void *server_main(void *arg)
{
	struct srv *s = arg;
	struct rdma_addrinfo hints = {.ai_flags = RAI_PASSIVE, .ai_port_space = RDMA_PS_TCP}, *res = NULL;
	struct ibv_qp_init_attr qa = {.cap = {.max_send_wr = 2, .max_recv_wr = 2, .max_send_sge = 1,
					      .max_recv_sge = 1}, .sq_sig_all = 1};
	struct rdma_cm_id *l = NULL, *id = NULL;
	struct ibv_wc wc;

	s->create_ep = -1;
	if (rdma_getaddrinfo("192.0.2.2", "7472", &hints, &res) == 0)
		s->create_ep = rdma_create_ep(&l, res, NULL, &qa);
	if (s->create_ep == 0)
		s->listen = rdma_listen(l, 1);
	rt_flag_set(&s->lock, &s->cond, &s->listening);
	if (s->create_ep != 0 || s->listen != 0)
		goto out;
	s->get_request = rdma_get_request(l, &id);
	if (s->get_request != 0)
		goto out;
	s->req_event = id->event ? (int)id->event->event : -1;
	s->req_pd_ok = id->event && id->event->param.conn.private_data_len == 56 &&
		       memcmp(id->event->param.conn.private_data, "AC" "ep-pd", 8) == 0;
	s->has_qp = id->qp != NULL && id->recv_cq != NULL && id->send_cq != NULL;
	struct ibv_mr *mr = rdma_reg_msgs(id, s->rbuf, sizeof(s->rbuf));
	if (mr == NULL || rdma_post_recv(id, NULL, s->rbuf, sizeof(s->rbuf), mr) != 0)
		goto out_id;
	s->accept = rdma_accept(id, NULL);
	s->est_event = id->event ? (int)id->event->event : -1;
	if (s->accept == 0)
		s->recv = rdma_get_recv_comp(id, &wc) == 1 && wc.status == IBV_WC_SUCCESS ? 0 : -1;
	s->disconnect = rdma_disconnect(id);
	s->disc_event = id->event ? (int)id->event->event : -1;
	rdma_dereg_mr(mr);
out_id:
	rdma_destroy_ep(id);
out:
	rdma_destroy_ep(l);
	rdma_freeaddrinfo(res);
	rt_flag_set(&s->lock, &s->cond, &s->done);
	return NULL;
}

static void client_ep(void)
{
	struct rdma_addrinfo hints = {.ai_port_space = RDMA_PS_TCP}, *res = NULL;
	struct ibv_qp_init_attr qa = {.cap = {.max_send_wr = 2, .max_recv_wr = 2, .max_send_sge = 1,
					      .max_recv_sge = 1}, .sq_sig_all = 1};
	static char msg[32] = "sync hello";
	struct rdma_cm_id *id = NULL;
	struct ibv_wc wc;

	if (!CHECK(rdma_getaddrinfo("192.0.2.2", "7472", &hints, &res) == 0, "getaddrinfo"))
		return;
	CHECK(res->ai_qp_type == IBV_QPT_RC && res->ai_port_space == RDMA_PS_TCP, "RC, TCP");
	/* ai_connect (as ibacm would give): before the caller's private data */
	res->ai_connect = malloc(2);
	if (res->ai_connect) {
		memcpy(res->ai_connect, "AC", 2);
		res->ai_connect_len = 2;
	}
	/* ai_route (as ibacm would give): the route through
	 * RDMA_OPTION_IB_PATH instead of rdma_resolve_route; path MTU 512 */
	struct ibv_path_data *pd = calloc(1, sizeof(*pd));
	if (pd) {
		pd->flags = IBV_PATH_FLAG_GMP | IBV_PATH_FLAG_PRIMARY | IBV_PATH_FLAG_BIDIRECTIONAL;
		pd->path.flowlabel_hoplimit = htobe32(64);
		pd->path.reversible_numpath = 0x81;
		pd->path.pkey = htobe16(0xffff);
		pd->path.mtu = 2 << 6 | IBV_MTU_512;
		pd->path.packetlifetime = 2 << 6 | 18;
		res->ai_route = pd;
		res->ai_route_len = sizeof(*pd);
	}
	if (!CHECK(rdma_create_ep(&id, res, NULL, &qa) == 0, "create_ep: %s", strerror(errno)))
		goto out;
	CHECK(id->qp && id->send_cq && id->recv_cq && id->qp_type == IBV_QPT_RC, "active ep: QP and CQs");
	CHECK(id->event && id->event->event == RDMA_CM_EVENT_ROUTE_RESOLVED, "id->event ROUTE_RESOLVED");
	CHECK(!pd || (id->route.path_rec && id->route.path_rec->mtu == IBV_MTU_512), "route from ai_route: MTU %d",
	      id->route.path_rec ? id->route.path_rec->mtu : -1);
	struct rdma_conn_param cp = {.private_data = "ep-pd", .private_data_len = 6, .retry_count = 7,
				     .rnr_retry_count = 7, .responder_resources = 1, .initiator_depth = 1};
	CHECK(rdma_connect(id, &cp) == 0, "sync connect: %s", strerror(errno));
	CHECK(id->event && id->event->event == RDMA_CM_EVENT_ESTABLISHED, "id->event ESTABLISHED");
	struct ibv_qp_attr qpa;
	struct ibv_qp_init_attr qpi;
	CHECK(!pd || (ibv_query_qp(id->qp, &qpa, IBV_QP_PATH_MTU, &qpi) == 0 && qpa.path_mtu == IBV_MTU_512),
	      "QP path MTU %d, want 2 (ai_route's)", qpa.path_mtu);
	struct ibv_mr *mr = rdma_reg_msgs(id, msg, sizeof(msg));
	CHECK(mr && rdma_post_send(id, NULL, msg, sizeof(msg), mr, 0) == 0, "post_send");
	CHECK(rdma_get_send_comp(id, &wc) == 1 && wc.status == IBV_WC_SUCCESS, "send completion");
	CHECK(rdma_disconnect(id) == 0, "sync disconnect: %s", strerror(errno));
	CHECK(id->event && id->event->event == RDMA_CM_EVENT_DISCONNECTED, "id->event DISCONNECTED");
	if (mr)
		rdma_dereg_mr(mr);
	rdma_destroy_ep(id);
out:
	rdma_freeaddrinfo(res);
}

static void endpoints(void)
{
	struct srv s = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};
	pthread_t t;

	if (!CHECK(pthread_create(&t, NULL, server_main, &s) == 0, "server thread"))
		return;
	CHECK(rt_flag_wait(&s.lock, &s.cond, &s.listening) && s.create_ep == 0 && s.listen == 0, "passive ep listens");
	client_ep();
	if (!CHECK(rt_flag_wait(&s.lock, &s.cond, &s.done), "server thread done")) {
		pthread_detach(t);
		return;
	}
	pthread_join(t, NULL);
	CHECK(s.get_request == 0 && s.req_event == RDMA_CM_EVENT_CONNECT_REQUEST, "get_request: CONNECT_REQUEST");
	CHECK(s.req_pd_ok, "request private data");
	CHECK(s.has_qp, "request id has the QP of qp_init_attr");
	CHECK(s.accept == 0 && s.est_event == RDMA_CM_EVENT_ESTABLISHED, "sync accept waits for ESTABLISHED");
	CHECK(s.recv == 0 && strcmp(s.rbuf, "sync hello") == 0, "server received the SEND");
	CHECK(s.disconnect == 0 && s.disc_event == RDMA_CM_EVENT_DISCONNECTED, "server disconnect: DISCONNECTED");
}

/* ---- 1b. UD endpoints ---- */

struct udsrv {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool listening, done;
	int create_ep, listen, get_request, accept, req_ud, qpn;
};

static void *ud_server_main(void *arg)
{
	struct udsrv *s = arg;
	struct rdma_addrinfo hints = {.ai_flags = RAI_PASSIVE, .ai_port_space = RDMA_PS_UDP}, *res = NULL;
	struct ibv_qp_init_attr qa = {.cap = {.max_send_wr = 2, .max_recv_wr = 2, .max_send_sge = 1,
					      .max_recv_sge = 1}};
	struct rdma_cm_id *l = NULL, *id = NULL;

	s->create_ep = -1;
	if (rdma_getaddrinfo("192.0.2.2", "7474", &hints, &res) == 0)
		s->create_ep = rdma_create_ep(&l, res, NULL, &qa);
	if (s->create_ep == 0)
		s->listen = rdma_listen(l, 1);
	rt_flag_set(&s->lock, &s->cond, &s->listening);
	if (s->create_ep == 0 && s->listen == 0) {
		s->get_request = rdma_get_request(l, &id);
		if (s->get_request == 0) {
			s->req_ud = id->qp_type == IBV_QPT_UD && id->qp != NULL;
			s->qpn = id->qp ? (int)id->qp->qp_num : -1;
			s->accept = rdma_accept(id, NULL);
			s->accept |= id->event != NULL; /* acknowledged, not waited for */
			rdma_destroy_ep(id);
		}
	}
	rdma_destroy_ep(l);
	rdma_freeaddrinfo(res);
	rt_flag_set(&s->lock, &s->cond, &s->done);
	return NULL;
}

static void ud_endpoints(void)
{
	struct udsrv s = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};
	struct rdma_addrinfo hints = {.ai_port_space = RDMA_PS_UDP}, *res = NULL;
	struct ibv_qp_init_attr qa = {.cap = {.max_send_wr = 2, .max_recv_wr = 2, .max_send_sge = 1,
					      .max_recv_sge = 1}};
	struct rdma_cm_id *id = NULL;
	pthread_t t;

	if (!CHECK(pthread_create(&t, NULL, ud_server_main, &s) == 0, "UD server thread"))
		return;
	CHECK(rt_flag_wait(&s.lock, &s.cond, &s.listening) && s.create_ep == 0 && s.listen == 0, "passive UD ep listens");
	if (CHECK(rdma_getaddrinfo("192.0.2.2", "7474", &hints, &res) == 0 && res->ai_qp_type == IBV_QPT_UD,
		  "UD getaddrinfo") &&
	    CHECK(rdma_create_ep(&id, res, NULL, &qa) == 0, "UD create_ep: %s", strerror(errno))) {
		CHECK(rdma_connect(id, NULL) == 0, "sync UD connect: %s", strerror(errno));
		CHECK(id->event && id->event->event == RDMA_CM_EVENT_ESTABLISHED &&
		      id->event->param.ud.qkey == RDMA_UDP_QKEY, "id->event ESTABLISHED with param.ud");
		if (CHECK(rt_flag_wait(&s.lock, &s.cond, &s.done), "UD server done"))
			CHECK(id->event && (int)id->event->param.ud.qp_num == s.qpn, "param.ud: the server's QPN");
		rdma_destroy_ep(id);
	}
	rdma_freeaddrinfo(res);
	if (!rt_flag_wait(&s.lock, &s.cond, &s.done)) {
		pthread_detach(t);
		return;
	}
	pthread_join(t, NULL);
	CHECK(s.get_request == 0 && s.req_ud, "UD request id with its UD QP");
	CHECK_EQ(s.accept, 0, "UD accept returns at once, the request's event acknowledged");
}

/* ---- 1c. XRC endpoints (as rdma_xserver/rdma_xclient -c x) ---- */

struct xsrv {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool listening, done;
	int ret, recv;
	char rbuf[16];
};

static int xrc_serve(struct xsrv *s, struct rdma_cm_id *l)
{
	struct ibv_srq_init_attr sa = {.attr = {.max_wr = 1, .max_sge = 1}};
	struct rdma_cm_id *id = NULL;
	struct ibv_wc wc;
	uint32_t srqn = 0;
	int ret = 0;

	if (rdma_get_request(l, &id) != 0)
		return 1;
	if (id->qp_type != IBV_QPT_XRC_RECV || id->qp == NULL || rdma_create_srq(id, NULL, &sa) != 0 ||
	    ibv_get_srq_num(id->srq, &srqn) != 0) {
		rdma_destroy_ep(id);
		return 2;
	}
	srqn = htonl(srqn);
	struct ibv_mr *mr = rdma_reg_msgs(id, s->rbuf, sizeof(s->rbuf));
	struct rdma_conn_param cp = {.private_data = &srqn, .private_data_len = sizeof(srqn)};
	if (mr == NULL || rdma_post_recv(id, NULL, s->rbuf, sizeof(s->rbuf), mr) != 0)
		ret = 3;
	else if (rdma_accept(id, &cp) != 0)
		ret = 4;
	else
		s->recv = rdma_get_recv_comp(id, &wc) == 1 && wc.status == IBV_WC_SUCCESS;
	rdma_disconnect(id);
	if (mr)
		rdma_dereg_mr(mr);
	rdma_destroy_ep(id);
	return ret;
}

static void *xrc_server_main(void *arg)
{
	struct xsrv *s = arg;
	struct rdma_addrinfo hints = {.ai_flags = RAI_PASSIVE, .ai_port_space = RDMA_PS_IB,
				      .ai_qp_type = IBV_QPT_XRC_RECV}, *res = NULL;
	struct ibv_qp_init_attr qa = {.cap = {.max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1,
					      .max_recv_sge = 1}};
	struct rdma_cm_id *l = NULL;

	s->ret = -1;
	if (rdma_getaddrinfo("192.0.2.2", "7477", &hints, &res) == 0 && rdma_create_ep(&l, res, NULL, &qa) == 0 &&
	    rdma_listen(l, 0) == 0)
		s->ret = 0;
	rt_flag_set(&s->lock, &s->cond, &s->listening);
	if (s->ret == 0)
		s->ret = xrc_serve(s, l);
	rdma_destroy_ep(l);
	rdma_freeaddrinfo(res);
	rt_flag_set(&s->lock, &s->cond, &s->done);
	return NULL;
}

static void xrc_client(void)
{
	struct rdma_addrinfo hints = {.ai_port_space = RDMA_PS_IB, .ai_qp_type = IBV_QPT_XRC_SEND}, *res = NULL;
	struct ibv_qp_init_attr qa = {.cap = {.max_send_wr = 1, .max_send_sge = 1}, .sq_sig_all = 1};
	static char msg[16] = "xrc hello";
	struct rdma_cm_id *id = NULL;
	struct ibv_wc wc;
	uint32_t srqn = 0;

	if (!CHECK(rdma_getaddrinfo("192.0.2.2", "7477", &hints, &res) == 0, "XRC getaddrinfo") ||
	    !CHECK(rdma_create_ep(&id, res, NULL, &qa) == 0, "XRC create_ep: %s", strerror(errno))) {
		rdma_freeaddrinfo(res);
		return;
	}
	CHECK(id->qp && id->qp->qp_type == IBV_QPT_XRC_SEND, "XRC_SEND QP");
	if (!CHECK(rdma_connect(id, NULL) == 0, "XRC connect: %s", strerror(errno))) {
		rdma_destroy_ep(id);
		rdma_freeaddrinfo(res);
		return;
	}
	if (CHECK(id->event && id->event->param.conn.private_data_len >= 4, "REP private data: the SRQ number"))
		memcpy(&srqn, id->event->param.conn.private_data, 4);
	struct ibv_mr *mr = rdma_reg_msgs(id, msg, sizeof(msg));
	struct ibv_sge sge = {.addr = (uintptr_t)msg, .length = sizeof(msg), .lkey = mr ? mr->lkey : 0};
	struct ibv_send_wr wr = {.sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
				 .send_flags = IBV_SEND_SIGNALED}, *bad;
	wr.qp_type.xrc.remote_srqn = ntohl(srqn);
	CHECK(mr && ibv_post_send(id->qp, &wr, &bad) == 0, "XRC post_send");
	CHECK(rdma_get_send_comp(id, &wc) == 1 && wc.status == IBV_WC_SUCCESS, "XRC send completion");
	rdma_disconnect(id);
	if (mr)
		rdma_dereg_mr(mr);
	rdma_destroy_ep(id);
	rdma_freeaddrinfo(res);
}

static void xrc_endpoints(void)
{
	struct xsrv s = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};
	pthread_t t;

	if (!CHECK(pthread_create(&t, NULL, xrc_server_main, &s) == 0, "XRC server thread"))
		return;
	CHECK(rt_flag_wait(&s.lock, &s.cond, &s.listening) && s.ret == 0, "passive XRC ep listens");
	xrc_client();
	if (!CHECK(rt_flag_wait(&s.lock, &s.cond, &s.done), "XRC server done")) {
		pthread_detach(t);
		return;
	}
	pthread_join(t, NULL);
	CHECK(s.ret == 0, "XRC server: get_request, XRC_RECV QP, XRC SRQ, accept (step %d failed)", s.ret);
	CHECK(s.recv && strcmp(s.rbuf, "xrc hello") == 0, "the XRC SRQ received the SEND");
}

/* ---- 2. a refused synchronous connect ---- */

static void refused(void)
{
	struct rdma_cm_id *id = NULL, *l = NULL;
	struct sockaddr_in dst = rt_sin4("192.0.2.2", 7999), la = rt_sin4("192.0.2.2", 7475);

	/* a listener makes dpv1's CM run (it answers the REQ to 7999 with REJ 8) */
	CHECK(rdma_create_id(NULL, &l, NULL, RDMA_PS_TCP) == 0 && rdma_bind_addr(l, (struct sockaddr *)&la) == 0 &&
	      rdma_listen(l, 1) == 0, "listener on dpv1");
	if (!CHECK(rdma_create_id(NULL, &id, NULL, RDMA_PS_TCP) == 0, "sync id"))
		return;
	CHECK(rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst, 2000) == 0, "sync resolve_addr");
	CHECK(id->event && id->event->event == RDMA_CM_EVENT_ADDR_RESOLVED, "id->event ADDR_RESOLVED");
	CHECK(rdma_resolve_route(id, 2000) == 0, "sync resolve_route");
	/* rdma-core: an RC connect needs a QP or a conn_param */
	CHECK_RET_ERRNO(rdma_connect(id, NULL), -1, EINVAL);
	struct rdma_conn_param cp = {.qp_num = 0x1234};
	CHECK_RET_ERRNO(rdma_connect(id, &cp), -1, ECONNREFUSED);
	CHECK(id->event && id->event->event == RDMA_CM_EVENT_REJECTED && id->event->status == 8,
	      "id->event REJECTED status 8");
	rdma_destroy_id(id);
	rdma_destroy_id(l);
}

/* ---- 3. connections without a QP on the id ---- */

static struct ibv_qp *own_qp(struct rdma_cm_id *id, struct ibv_cq **cq)
{
	*cq = ibv_create_cq(id->verbs, 8, NULL, NULL, 0);
	struct ibv_qp_init_attr a = {.send_cq = *cq, .recv_cq = *cq, .qp_type = IBV_QPT_RC,
				     .cap = {.max_send_wr = 2, .max_recv_wr = 2, .max_send_sge = 1,
					     .max_recv_sge = 1}};
	return *cq ? ibv_create_qp(id->pd, &a) : NULL;
}

/* rdma_init_qp_attr + ibv_modify_qp to state s; the attributes in *a. */
static bool move(struct rdma_cm_id *id, struct ibv_qp *qp, enum ibv_qp_state s, struct ibv_qp_attr *a)
{
	int mask = 0;

	memset(a, 0, sizeof(*a));
	a->qp_state = s;
	if (!CHECK(rdma_init_qp_attr(id, a, &mask) == 0, "init_qp_attr %d: %s", s, strerror(errno)))
		return false;
	return CHECK(ibv_modify_qp(qp, a, mask) == 0, "modify to %d", s);
}

struct side {
	struct rdma_cm_id *id;
	struct ibv_qp *qp;
	struct ibv_cq *cq;
	struct ibv_qp_attr rtr, rts;
};

static void noqp_accept(struct rdma_event_channel *sch, struct side *s)
{
	struct rdma_cm_event *ev = rt_wait_event(sch, RDMA_CM_EVENT_CONNECT_REQUEST);
	struct ibv_qp_attr a;

	if (ev == NULL)
		return;
	s->id = ev->id;
	rdma_ack_cm_event(ev);
	s->qp = own_qp(s->id, &s->cq);
	if (!CHECK(s->qp != NULL, "server's own QP"))
		return;
	/* before rdma_accept, as libfabric/UCX do */
	if (move(s->id, s->qp, IBV_QPS_INIT, &a))
		CHECK(a.qp_access_flags == (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
					    IBV_ACCESS_REMOTE_ATOMIC), "INIT access 0x%x", a.qp_access_flags);
	if (move(s->id, s->qp, IBV_QPS_RTR, &s->rtr))
		move(s->id, s->qp, IBV_QPS_RTS, &s->rts);
	struct rdma_conn_param cp = {.qp_num = s->qp->qp_num, .responder_resources = 1, .initiator_depth = 1,
				     .rnr_retry_count = 7};
	CHECK(rdma_accept(s->id, &cp) == 0, "accept with qp_num: %s", strerror(errno));
}

static void noqp_check(struct side *c, struct side *s)
{
	CHECK(c->rtr.dest_qp_num == s->qp->qp_num && s->rtr.dest_qp_num == c->qp->qp_num, "crossed QPNs");
	CHECK(c->rtr.rq_psn == s->rts.sq_psn && s->rtr.rq_psn == c->rts.sq_psn, "crossed PSNs");
	/* the option (12) made the path's packet life time 11: REQ local ACK timeout cm_ack_timeout(15, 11) */
	CHECK(s->rts.timeout == 15, "passive ACK timeout %u (the REQ's: 15)", s->rts.timeout);
	CHECK(c->rts.timeout == 12, "active ACK timeout %u (the option: 12)", c->rts.timeout);
	CHECK(c->rtr.max_dest_rd_atomic == 1 && c->rts.max_rd_atomic == 1 && s->rtr.max_dest_rd_atomic == 1,
	      "depths");
	CHECK(c->rtr.ah_attr.is_global && c->rtr.path_mtu == s->rtr.path_mtu, "path");
}

static void noqp_send(struct side *c, struct side *s)
{
	static char sbuf[16] = "no-qp hello", rbuf[16];
	struct ibv_mr *smr = ibv_reg_mr(c->id->pd, sbuf, sizeof(sbuf), 0);
	struct ibv_mr *rmr = ibv_reg_mr(s->id->pd, rbuf, sizeof(rbuf), IBV_ACCESS_LOCAL_WRITE);
	struct ibv_sge ss = {.addr = (uintptr_t)sbuf, .length = sizeof(sbuf), .lkey = smr ? smr->lkey : 0};
	struct ibv_sge rs = {.addr = (uintptr_t)rbuf, .length = sizeof(rbuf), .lkey = rmr ? rmr->lkey : 0};
	struct ibv_send_wr swr = {.sg_list = &ss, .num_sge = 1, .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED}, *bs;
	struct ibv_recv_wr rwr = {.sg_list = &rs, .num_sge = 1}, *br;
	struct ibv_wc wc;

	if (CHECK(smr && rmr && ibv_post_recv(s->qp, &rwr, &br) == 0 && ibv_post_send(c->qp, &swr, &bs) == 0,
		  "posts")) {
		CHECK(rt_poll_wc(c->cq, &wc, 3), "send completion");
		CHECK(rt_poll_wc(s->cq, &wc, 3) && strcmp(rbuf, sbuf) == 0, "received over the application's QPs");
	}
	if (smr)
		ibv_dereg_mr(smr);
	if (rmr)
		ibv_dereg_mr(rmr);
}

static void without_qp(void)
{
	struct rdma_event_channel *cch = rdma_create_event_channel(), *sch = rdma_create_event_channel();
	struct sockaddr_in sa = rt_sin4("192.0.2.2", 7473);
	struct rdma_cm_id *l = NULL;
	struct side c = {0}, s = {0};
	struct rdma_cm_event *ev;
	uint8_t t12 = 12;

	CHECK(rdma_create_id(sch, &l, NULL, RDMA_PS_TCP) == 0 && rdma_bind_addr(l, (struct sockaddr *)&sa) == 0 &&
	      rdma_listen(l, 1) == 0, "listener");
	CHECK(rdma_create_id(cch, &c.id, NULL, RDMA_PS_TCP) == 0, "client id");
	CHECK(rdma_set_option(c.id, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT, &t12, 1) == 0, "ack timeout 12");
	CHECK(rdma_resolve_addr(c.id, NULL, (struct sockaddr *)&sa, 2000) == 0, "resolve_addr");
	rt_ack_next(cch, RDMA_CM_EVENT_ADDR_RESOLVED);
	CHECK(rdma_resolve_route(c.id, 2000) == 0, "resolve_route");
	rt_ack_next(cch, RDMA_CM_EVENT_ROUTE_RESOLVED);
	c.qp = own_qp(c.id, &c.cq);
	if (!CHECK(c.qp != NULL, "client's own QP"))
		return;
	struct ibv_qp_attr a;
	CHECK(move(c.id, c.qp, IBV_QPS_INIT, &a), "client INIT before connect");
	a.qp_state = IBV_QPS_RTR;
	CHECK_RET_ERRNO(rdma_init_qp_attr(c.id, &a, &(int){0}), 0, 0);
	struct rdma_conn_param cp = {.qp_num = c.qp->qp_num, .responder_resources = 1, .initiator_depth = 1,
				     .retry_count = 7, .rnr_retry_count = 7};
	CHECK(rdma_connect(c.id, &cp) == 0, "connect with qp_num: %s", strerror(errno));
	a.qp_state = IBV_QPS_RTR; /* the REQ is out, no REP yet: ib_cm says EINVAL */
	CHECK_RET_ERRNO(rdma_init_qp_attr(c.id, &a, &(int){0}), -1, EINVAL);
	noqp_accept(sch, &s);
	if ((ev = rt_wait_event(cch, RDMA_CM_EVENT_CONNECT_RESPONSE))) {
		CHECK(ev->param.conn.qp_num == (s.qp ? s.qp->qp_num : 0), "CONNECT_RESPONSE: the peer's QPN");
		rdma_ack_cm_event(ev);
	}
	if (move(c.id, c.qp, IBV_QPS_RTR, &c.rtr))
		move(c.id, c.qp, IBV_QPS_RTS, &c.rts);
	if (s.id && c.qp && s.qp)
		noqp_check(&c, &s);
	/* the first packet before the RTU: the passive side tells the CM */
	CHECK(s.id && rdma_notify(s.id, IBV_EVENT_COMM_EST) == 0, "notify COMM_EST");
	rt_ack_next(sch, RDMA_CM_EVENT_ESTABLISHED);
	CHECK_RET_ERRNO(rdma_notify(s.id, IBV_EVENT_COMM_EST), -1, EISCONN);
	CHECK_RET_ERRNO(rdma_notify(s.id, IBV_EVENT_QP_FATAL), -1, EINVAL);
	CHECK(rdma_establish(c.id) == 0, "establish: %s", strerror(errno));
	CHECK_RET_ERRNO(rdma_establish(c.id), -1, EINVAL);
	if (s.qp)
		noqp_send(&c, &s);
	CHECK(rdma_disconnect(c.id) == 0, "disconnect");
	rt_ack_next(sch, RDMA_CM_EVENT_DISCONNECTED);
	rdma_disconnect(s.id);
	rt_ack_next(cch, RDMA_CM_EVENT_DISCONNECTED);
	ibv_destroy_qp(c.qp);
	ibv_destroy_cq(c.cq);
	if (s.qp) {
		ibv_destroy_qp(s.qp);
		ibv_destroy_cq(s.cq);
	}
	rdma_destroy_id(s.id);
	rdma_destroy_id(c.id);
	rdma_destroy_id(l);
	rdma_destroy_event_channel(cch);
	rdma_destroy_event_channel(sch);
}

/* ---- 5. a slow accept: the MRA keeps the client waiting ---- */

static enum dpv_cm_state cm_state(struct rdma_cm_id *id)
{
	dpv_rdmacm_cmsvc_lock();
	enum dpv_cm_state st = to_did(id)->cm ? to_did(id)->cm->state : DPV_CM_IDLE;
	dpv_rdmacm_cmsvc_unlock();
	return st;
}

static void slow_accept(void)
{
	struct rdma_event_channel *cch = rdma_create_event_channel(), *sch = rdma_create_event_channel();
	struct sockaddr_in sa = rt_sin4("192.0.2.2", 7476);
	struct rdma_cm_id *l = NULL, *c = NULL, *child = NULL;
	struct rdma_cm_event *ev;
	struct pollfd pfd = {.fd = cch->fd, .events = POLLIN};

	/* the client retransmits its REQ after 67 ms, twice: without the MRA it
	 * would give up (UNREACHABLE) after ~200 ms */
	setenv("DPVERBS_RDMACM_CM_TIMEOUT", "14", 1);
	setenv("DPVERBS_RDMACM_CM_RETRIES", "2", 1);
	CHECK(rdma_create_id(sch, &l, NULL, RDMA_PS_TCP) == 0 && rdma_bind_addr(l, (struct sockaddr *)&sa) == 0 &&
	      rdma_listen(l, 1) == 0, "listener");
	CHECK(rdma_create_id(cch, &c, NULL, RDMA_PS_TCP) == 0 &&
	      rdma_resolve_addr(c, NULL, (struct sockaddr *)&sa, 2000) == 0, "client");
	rt_ack_next(cch, RDMA_CM_EVENT_ADDR_RESOLVED);
	CHECK(rdma_resolve_route(c, 2000) == 0, "resolve_route");
	rt_ack_next(cch, RDMA_CM_EVENT_ROUTE_RESOLVED);
	struct ibv_qp_init_attr qa = {.qp_type = IBV_QPT_RC, .cap = {.max_send_wr = 2, .max_recv_wr = 2,
								     .max_send_sge = 1, .max_recv_sge = 1}};
	CHECK(rdma_create_qp(c, NULL, &qa) == 0, "client QP");
	CHECK(rdma_connect(c, NULL) == 0, "connect");
	if ((ev = rt_wait_event(sch, RDMA_CM_EVENT_CONNECT_REQUEST))) {
		child = ev->id;
		rdma_ack_cm_event(ev);
	}
	CHECK(child && cm_state(child) == DPV_CM_MRA_REQ_SENT, "request: MRA_REQ_SENT, the MRA kept");
	/* the application is slow: 600 ms, the REQ is retransmitted, the MRA answers it */
	CHECK(poll(&pfd, 1, 600) == 0, "no event for the client while the server is slow (no UNREACHABLE)");
	CHECK(cm_state(c) == DPV_CM_MRA_REQ_RCVD, "client got the MRA (MRA_REQ_RCVD), state %d", cm_state(c));
	if (child) {
		struct ibv_qp_init_attr sqa = {.qp_type = IBV_QPT_RC, .cap = {.max_send_wr = 2, .max_recv_wr = 2,
									      .max_send_sge = 1, .max_recv_sge = 1}};
		CHECK(rdma_create_qp(child, NULL, &sqa) == 0, "server QP");
		CHECK(rdma_accept(child, NULL) == 0, "late accept: %s", strerror(errno));
		rt_ack_next(cch, RDMA_CM_EVENT_ESTABLISHED);
		rt_ack_next(sch, RDMA_CM_EVENT_ESTABLISHED);
		rdma_destroy_qp(child);
		rdma_destroy_id(child);
	}
	unsetenv("DPVERBS_RDMACM_CM_TIMEOUT");
	unsetenv("DPVERBS_RDMACM_CM_RETRIES");
	rdma_destroy_qp(c);
	rdma_destroy_id(c);
	rdma_destroy_id(l);
	rdma_destroy_event_channel(cch);
	rdma_destroy_event_channel(sch);
}

/* ---- 4. the CM thread ---- */

static void thread_stops(void)
{
	for (int i = 0; i < 300 && dpv_rdmacm_cmsvc_running(); i++)
		usleep(10000);
	CHECK(!dpv_rdmacm_cmsvc_running(), "CM thread stopped with no id left");
}

int main(void)
{
	endpoints();
	ud_endpoints();
	xrc_endpoints();
	without_qp();
	slow_accept();
	thread_stops();
	refused(); /* the thread starts again */
	thread_stops();
	/* Linux's cm_ack_timeout: packet life time 18 (RoCE) and CA ACK delay 15 give 19 */
	CHECK(dpv_rdmacm_ack_timeout(15, 18) == 19 && dpv_rdmacm_ack_timeout(15, 11) == 15 &&
	      dpv_rdmacm_ack_timeout(0, 0) == 2 && dpv_rdmacm_ack_timeout(31, 31) == 31, "ack timeouts");
	return dpvt_finish();
}
