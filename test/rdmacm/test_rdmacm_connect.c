/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Connections of the drop-in librdmacm (compat/rdmacm/dpv_rdmacm_conn*.c,
 * the IB CM on QP 1 through the CM service's thread) on the default
 * configuration (dpv0 192.0.2.1, dpv1 192.0.2.2), one process:
 *  - a server id bound to 192.0.2.2:7471 listens; a client id resolves
 *    addr/route to it, creates an RC QP and connects with private data;
 *  - the server gets CONNECT_REQUEST (the client's private data, 56 bytes
 *    reported, param.conn from the REQ), creates a QP on the child and
 *    accepts: both get ESTABLISHED;
 *  - an RC SEND client -> server completes;
 *  - the client disconnects: both get DISCONNECTED;
 *  - connect and accept with RDMA_MAX_RESP_RES / RDMA_MAX_INIT_DEPTH: the
 *    device's maxima in the REQ, ESTABLISHED; a depth above them: EINVAL;
 *  - a connect to a port nobody listens on: REJECTED, status 8.
 * Every wait ends after 3 s. Prints "N passed, N failed".
 * With the argument "loopback" the server is bound to 192.0.2.1 and the
 * client resolves from 192.0.2.1 to it: both ends on dpv0, one CM agent
 * holding both sides of the connection (rdma-core's pyverbs rdma_cm tests
 * connect a device to its own address so).
 */
#include <arpa/inet.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dpv_rdmacm.h"
#include "dpvt_verbs.h"
#include "rdmacm_test.h"

static void make_qp(struct rdma_cm_id *id)
{
	struct ibv_qp_init_attr a = {.qp_type = IBV_QPT_RC,
				     .cap = {.max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1,
					     .max_recv_sge = 1}};

	CHECK(rdma_create_qp(id, NULL, &a) == 0, "create_qp: %s", strerror(errno));
}

static void send_one(struct rdma_cm_id *c, struct rdma_cm_id *s)
{
	static char sbuf[64] = "hello over rdma_cm", rbuf[64];
	struct ibv_wc wc;
	struct ibv_mr *smr = ibv_reg_mr(c->pd, sbuf, sizeof(sbuf), 0);
	struct ibv_mr *rmr = ibv_reg_mr(s->pd, rbuf, sizeof(rbuf), IBV_ACCESS_LOCAL_WRITE);

	CHECK(smr && rmr, "MRs");
	if (!smr || !rmr)
		return;
	CHECK(rdma_post_recv(s, NULL, rbuf, sizeof(rbuf), rmr) == 0, "post_recv");
	CHECK(rdma_post_send(c, NULL, sbuf, sizeof(sbuf), smr, IBV_SEND_SIGNALED) == 0, "post_send");
	rt_poll_check(c->send_cq, &wc, "send");
	if (rt_poll_check(s->recv_cq, &wc, "recv"))
		CHECK(strcmp(rbuf, sbuf) == 0, "payload");
	ibv_dereg_mr(smr);
	ibv_dereg_mr(rmr);
}

static struct rdma_cm_id *accept_request(struct rdma_event_channel *sch)
{
	struct rdma_cm_event *ev = rt_wait_event(sch, RDMA_CM_EVENT_CONNECT_REQUEST);
	struct rdma_cm_id *child = NULL;

	if (ev == NULL)
		return NULL;
	child = ev->id;
	CHECK(ev->param.conn.private_data_len == 56 &&
	      memcmp(ev->param.conn.private_data, "client-pd", 9) == 0, "REQ private data (%u bytes)",
	      ev->param.conn.private_data_len);
	CHECK(ev->param.conn.initiator_depth == 1 && ev->param.conn.responder_resources == 1 &&
	      ev->param.conn.retry_count == 7 && ev->param.conn.rnr_retry_count == 7, "REQ conn param");
	struct sockaddr_in *peer = (struct sockaddr_in *)rdma_get_peer_addr(child);
	CHECK(peer->sin_family == AF_INET && peer->sin_addr.s_addr == htonl(0xc0000201), "peer address");
	rdma_ack_cm_event(ev);
	make_qp(child);
	struct rdma_conn_param cp = {.responder_resources = 1, .initiator_depth = 1, .rnr_retry_count = 7};
	CHECK(rdma_accept(child, &cp) == 0, "accept: %s", strerror(errno));
	return child;
}

static void connect_send_disconnect(struct rdma_event_channel *cch, struct rdma_event_channel *sch)
{
	struct rdma_cm_id *c = rt_client_to(cch, 7471, RDMA_PS_TCP), *child;

	make_qp(c);
	struct rdma_conn_param cp = {.private_data = "client-pd", .private_data_len = 10,
				     .responder_resources = 1, .initiator_depth = 1, .retry_count = 7,
				     .rnr_retry_count = 7};
	CHECK(rdma_connect(c, &cp) == 0, "connect: %s", strerror(errno));
	child = accept_request(sch);
	if (child == NULL)
		return;
	rt_ack_next(cch, RDMA_CM_EVENT_ESTABLISHED);
	rt_ack_next(sch, RDMA_CM_EVENT_ESTABLISHED);
	send_one(c, child);
	CHECK(rdma_disconnect(c) == 0, "disconnect");
	rt_ack_next(sch, RDMA_CM_EVENT_DISCONNECTED);
	CHECK(rdma_disconnect(child) == 0, "server disconnect (DREP)");
	rt_ack_next(cch, RDMA_CM_EVENT_DISCONNECTED);
	rdma_destroy_qp(child);
	rdma_destroy_id(child);
	rdma_destroy_qp(c);
	rdma_destroy_id(c);
}

/*
 * RDMA_MAX_RESP_RES / RDMA_MAX_INIT_DEPTH (0xff, libfabric's verbs provider)
 * ask for the device's maxima, as librdmacm: the REQ carries
 * max_qp_rd_atom / max_qp_init_rd_atom (the CONNECT_REQUEST reports them
 * swapped, as the kernel), rdma_accept with 0xff connects; a depth above the
 * maximum is EINVAL.
 */
static void max_depths(struct rdma_event_channel *cch, struct rdma_event_channel *sch)
{
	struct rdma_cm_id *c = rt_client_to(cch, 7471, RDMA_PS_TCP), *child;
	struct rdma_conn_param big = {.responder_resources = 0xfe, .initiator_depth = 1};
	struct rdma_conn_param cp = {.responder_resources = RDMA_MAX_RESP_RES,
				     .initiator_depth = RDMA_MAX_INIT_DEPTH, .retry_count = 7, .rnr_retry_count = 7};
	struct ibv_device_attr da;
	struct rdma_cm_event *ev;

	if (!CHECK(c != NULL && ibv_query_device(c->verbs, &da) == 0, "client id, device attributes"))
		return;
	make_qp(c);
	CHECK(rdma_connect(c, &big) == -1 && errno == EINVAL, "responder_resources 254 > %d: EINVAL",
	      da.max_qp_rd_atom);
	CHECK(rdma_connect(c, &cp) == 0, "connect with 0xff depths: %s", strerror(errno));
	if ((ev = rt_wait_event(sch, RDMA_CM_EVENT_CONNECT_REQUEST)) == NULL)
		goto out;
	CHECK(ev->param.conn.initiator_depth == da.max_qp_rd_atom &&
	      ev->param.conn.responder_resources == da.max_qp_init_rd_atom,
	      "REQ depths %u/%u, the device's %d/%d", ev->param.conn.initiator_depth,
	      ev->param.conn.responder_resources, da.max_qp_rd_atom, da.max_qp_init_rd_atom);
	child = ev->id;
	rdma_ack_cm_event(ev);
	make_qp(child);
	CHECK(rdma_accept(child, &cp) == 0, "accept with 0xff depths: %s", strerror(errno));
	rt_ack_next(cch, RDMA_CM_EVENT_ESTABLISHED);
	rt_ack_next(sch, RDMA_CM_EVENT_ESTABLISHED);
	rdma_disconnect(c);
	rt_ack_next(sch, RDMA_CM_EVENT_DISCONNECTED);
	rdma_disconnect(child);
	rt_ack_next(cch, RDMA_CM_EVENT_DISCONNECTED);
	rdma_destroy_qp(child);
	rdma_destroy_id(child);
out:
	rdma_destroy_qp(c);
	rdma_destroy_id(c);
}

static void rejected(struct rdma_event_channel *cch)
{
	struct rdma_cm_id *c = rt_client_to(cch, 7999, RDMA_PS_TCP);
	struct rdma_cm_event *ev;

	make_qp(c);
	CHECK(rdma_connect(c, NULL) == 0, "connect to 7999");
	if ((ev = rt_wait_event(cch, RDMA_CM_EVENT_REJECTED))) {
		CHECK(ev->status == 8, "REJECTED status %d", ev->status);
		rdma_ack_cm_event(ev);
	}
	rdma_destroy_qp(c);
	rdma_destroy_id(c);
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "loopback")) {
		rt_loopback = true;
		rt_server = "192.0.2.1";
	}
	struct rdma_event_channel *cch = rdma_create_event_channel(), *sch = rdma_create_event_channel();
	struct rdma_cm_id *l = NULL;
	struct sockaddr_in sa = rt_sin4(rt_server, 7471);

	CHECK(cch && sch, "channels");
	CHECK(rdma_create_id(sch, &l, NULL, RDMA_PS_TCP) == 0, "listen id");
	CHECK(rdma_bind_addr(l, (struct sockaddr *)&sa) == 0, "bind: %s", strerror(errno));
	CHECK(rdma_listen(l, 4) == 0, "listen: %s", strerror(errno));
	connect_send_disconnect(cch, sch);
	max_depths(cch, sch);
	rejected(cch);
	rdma_destroy_id(l);
	rdma_destroy_event_channel(cch);
	rdma_destroy_event_channel(sch);
	return dpvt_finish();
}
