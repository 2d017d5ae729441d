/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * UD ids of the drop-in librdmacm (compat/rdmacm/dpv_rdmacm_ud.c: SIDR on
 * the IB CM of QP 1, through the CM service's thread) on the default
 * configuration (dpv0 192.0.2.1, dpv1 192.0.2.2), one process, RDMA_PS_UDP:
 *  - a server id bound to 192.0.2.2:7472 listens; a client id resolves
 *    addr/route to it, creates a UD QP (RTS, Q_Key RDMA_UDP_QKEY) and
 *    connects with private data (SIDR_REQ);
 *  - the server gets CONNECT_REQUEST on a new UD id: param.ud with the
 *    client's private data, private_data_len 180, qp_num 0, the client's
 *    address; it creates a UD QP and accepts with private data (SIDR_REP);
 *    a second rdma_accept fails with EINVAL;
 *  - the client gets ESTABLISHED: param.ud.qp_num = the server's QP,
 *    qkey RDMA_UDP_QKEY, private_data_len 136 with the server's data,
 *    ah_attr global with the route's GIDs, hop limit 64, the id's port;
 *  - a UD SEND with an AH made from that ah_attr reaches the server's QP
 *    (GRH, source QP); the server answers with ibv_create_ah_from_wc, as
 *    udaddy does;
 *  - rdma_reject: the client gets UNREACHABLE status 2 (IB_SIDR_REJECT)
 *    with the reject's private data;
 *  - a SIDR_REQ to a port nobody listens on: UNREACHABLE status 1
 *    (IB_SIDR_UNSUPPORTED), as Linux rdma_cm;
 *  - the CM's SIDR timeout (white-box: the event lib/cm gives after its
 *    retries) becomes UNREACHABLE -ETIMEDOUT;
 *  - private data over 180 bytes: rdma_connect EINVAL; rdma_disconnect
 *    on a UD id: 0, QP in ERR.
 * Every wait ends after 3 s. Prints "N passed, N failed".
 * With the argument "loopback" the server is bound to 192.0.2.1 and the
 * client resolves from 192.0.2.1 to it: both ends on dpv0, one CM agent
 * holding both sides of the SIDR exchange (as pyverbs' rdma_cm UDP test
 * connects a device to its own address).
 */
#include <arpa/inet.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dpv_rdmacm.h"
#include "dpv_rdmacm_cmsvc.h"
#include "dpvt_verbs.h"
#include "rdmacm_test.h"

#define PORT 7472
#define GRH 40

static void make_qp(struct rdma_cm_id *id)
{
	struct ibv_qp_init_attr a = {.qp_type = IBV_QPT_UD,
				     .cap = {.max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1,
					     .max_recv_sge = 1}};
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qi;

	CHECK(rdma_create_qp(id, NULL, &a) == 0, "create_qp: %s", strerror(errno));
	if (id->qp == NULL)
		return;
	CHECK(ibv_query_qp(id->qp, &qa, IBV_QP_STATE | IBV_QP_QKEY, &qi) == 0 && qa.qp_state == IBV_QPS_RTS &&
	      qa.qkey == RDMA_UDP_QKEY, "UD QP in RTS with RDMA_UDP_QKEY");
}

static int post_recv(struct rdma_cm_id *id, struct ibv_mr *mr, char *buf, size_t len)
{
	struct ibv_sge sge = {.addr = (uintptr_t)buf, .length = (uint32_t)len, .lkey = mr->lkey};
	struct ibv_recv_wr wr = {.sg_list = &sge, .num_sge = 1}, *bad;

	return ibv_post_recv(id->qp, &wr, &bad);
}

static int post_send(struct rdma_cm_id *id, struct ibv_mr *mr, const char *buf, size_t len, struct ibv_ah *ah,
		     uint32_t qpn, uint32_t qkey)
{
	struct ibv_sge sge = {.addr = (uintptr_t)buf, .length = (uint32_t)len, .lkey = mr->lkey};
	struct ibv_send_wr wr = {.sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
				 .send_flags = IBV_SEND_SIGNALED}, *bad;

	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = qpn;
	wr.wr.ud.remote_qkey = qkey;
	return ibv_post_send(id->qp, &wr, &bad);
}

/* ESTABLISHED's param.ud against the route and the server's QP. */
static void check_established(struct rdma_cm_id *c, const struct rdma_cm_event *ev, uint32_t sqpn)
{
	const struct rdma_ud_param *u = &ev->param.ud;
	union ibv_gid g;

	CHECK(u->qp_num == sqpn && u->qkey == RDMA_UDP_QKEY, "ud: qp_num 0x%x (server 0x%x), qkey 0x%x",
	      u->qp_num, sqpn, u->qkey);
	CHECK(u->private_data_len == 136 && u->private_data != NULL &&
	      memcmp(u->private_data, "ud-server", 10) == 0, "ud: SIDR_REP private data (%u bytes)",
	      u->private_data_len);
	CHECK(u->ah_attr.is_global == 1 && u->ah_attr.port_num == c->port_num && u->ah_attr.dlid == 0 &&
	      u->ah_attr.grh.hop_limit == 64, "ud: ah_attr global, port %u, hop limit %u", u->ah_attr.port_num,
	      u->ah_attr.grh.hop_limit);
	CHECK(memcmp(&u->ah_attr.grh.dgid, &c->route.addr.addr.ibaddr.dgid, 16) == 0, "ud: ah_attr dgid");
	CHECK(ibv_query_gid(c->verbs, c->port_num, u->ah_attr.grh.sgid_index, &g) == 0 &&
	      memcmp(&g, &c->route.addr.addr.ibaddr.sgid, 16) == 0, "ud: sgid_index %u is the source GID",
	      u->ah_attr.grh.sgid_index);
}

/* Client -> server with the ESTABLISHED AH; server -> client with an AH from the wc. */
static void traffic(struct rdma_cm_id *c, struct rdma_cm_id *s, const struct rdma_ud_param *u)
{
	static char cbuf[GRH + 64], sbuf[GRH + 64];
	struct ibv_mr *cmr = ibv_reg_mr(c->pd, cbuf, sizeof(cbuf), IBV_ACCESS_LOCAL_WRITE);
	struct ibv_mr *smr = ibv_reg_mr(s->pd, sbuf, sizeof(sbuf), IBV_ACCESS_LOCAL_WRITE);
	struct ibv_ah *ah = ibv_create_ah(c->pd, (struct ibv_ah_attr *)&u->ah_attr), *rah = NULL;
	struct ibv_wc wc;

	CHECK(cmr && smr && ah, "MRs, AH from ESTABLISHED: %s", strerror(errno));
	if (!cmr || !smr || !ah)
		goto out;
	strcpy(cbuf, "hello over SIDR");
	CHECK(post_recv(s, smr, sbuf, sizeof(sbuf)) == 0, "server post_recv");
	CHECK(post_send(c, cmr, cbuf, 16, ah, u->qp_num, u->qkey) == 0, "client UD send");
	rt_poll_check(c->send_cq, &wc, "client send");
	if (rt_poll_check(s->recv_cq, &wc, "server recv")) {
		CHECK((wc.wc_flags & IBV_WC_GRH) && wc.byte_len == GRH + 16 && wc.src_qp == c->qp->qp_num &&
		      strcmp(sbuf + GRH, "hello over SIDR") == 0, "server got it: GRH, %u bytes, src_qp 0x%x",
		      wc.byte_len, wc.src_qp);
		rah = ibv_create_ah_from_wc(s->pd, &wc, (struct ibv_grh *)sbuf, s->port_num);
		CHECK(rah != NULL, "ibv_create_ah_from_wc: %s", strerror(errno));
	}
	if (rah == NULL)
		goto out;
	strcpy(sbuf, "reply");
	CHECK(post_recv(c, cmr, cbuf, sizeof(cbuf)) == 0, "client post_recv");
	CHECK(post_send(s, smr, sbuf, 6, rah, c->qp->qp_num, RDMA_UDP_QKEY) == 0, "server UD reply");
	rt_poll_check(s->send_cq, &wc, "server send");
	if (rt_poll_check(c->recv_cq, &wc, "client recv"))
		CHECK(wc.src_qp == s->qp->qp_num && strcmp(cbuf + GRH, "reply") == 0, "client got the reply");
	ibv_destroy_ah(rah);
out:
	if (ah)
		ibv_destroy_ah(ah);
	if (cmr)
		ibv_dereg_mr(cmr);
	if (smr)
		ibv_dereg_mr(smr);
}

/* CONNECT_REQUEST of a UD client on the listener's channel; returns the new id. */
static struct rdma_cm_id *conn_request(struct rdma_event_channel *sch, struct rdma_cm_id *l, struct rdma_cm_id *c)
{
	struct rdma_cm_event *ev = rt_wait_event(sch, RDMA_CM_EVENT_CONNECT_REQUEST);
	struct rdma_cm_id *child;

	if (ev == NULL)
		return NULL;
	child = ev->id;
	CHECK(child != l && ev->listen_id == l && child->qp_type == IBV_QPT_UD && child->ps == RDMA_PS_UDP,
	      "CONNECT_REQUEST on a new UD id");
	CHECK(ev->param.ud.private_data_len == 180 && memcmp(ev->param.ud.private_data, "ud-client", 10) == 0,
	      "SIDR_REQ private data (%u bytes)", ev->param.ud.private_data_len);
	CHECK(ev->param.ud.qp_num == 0 && ev->param.ud.qkey == 0, "no QP number in a SIDR_REQ");
	struct sockaddr_in *peer = (struct sockaddr_in *)rdma_get_peer_addr(child);
	struct sockaddr_in *mine = (struct sockaddr_in *)rdma_get_local_addr(c);
	CHECK(peer->sin_family == AF_INET && peer->sin_addr.s_addr == htonl(0xc0000201) &&
	      peer->sin_port == mine->sin_port, "peer address 192.0.2.1:%u", ntohs(peer->sin_port));
	CHECK(ntohs(rdma_get_src_port(child)) == PORT, "local port %u", ntohs(rdma_get_src_port(child)));
	rdma_ack_cm_event(ev);
	return child;
}

static void accept_and_send(struct rdma_event_channel *cch, struct rdma_event_channel *sch, struct rdma_cm_id *l)
{
	struct rdma_cm_id *c = rt_client_to(cch, PORT, RDMA_PS_UDP), *child;
	struct rdma_conn_param cp = {.private_data = "ud-client", .private_data_len = 10};
	struct rdma_cm_event *ev;

	make_qp(c);
	CHECK(rdma_connect(c, &cp) == 0, "connect: %s", strerror(errno));
	if ((child = conn_request(sch, l, c)) == NULL)
		return;
	make_qp(child);
	struct rdma_conn_param sp = {.private_data = "ud-server", .private_data_len = 10,
				     .qp_num = child->qp ? child->qp->qp_num : 0};
	CHECK(rdma_accept(child, &sp) == 0, "accept: %s", strerror(errno));
	CHECK_RET_ERRNO(rdma_accept(child, &sp), -1, EINVAL);
	if ((ev = rt_wait_event(cch, RDMA_CM_EVENT_ESTABLISHED))) {
		check_established(c, ev, child->qp ? child->qp->qp_num : 0);
		struct rdma_ud_param u = ev->param.ud;
		rdma_ack_cm_event(ev);
		traffic(c, child, &u);
	}
	CHECK(rdma_disconnect(c) == 0, "disconnect a UD id: %s", strerror(errno));
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qi;
	CHECK(ibv_query_qp(c->qp, &qa, IBV_QP_STATE, &qi) == 0 && qa.qp_state == IBV_QPS_ERR, "QP in ERR");
	rdma_destroy_qp(child);
	rdma_destroy_id(child);
	rdma_destroy_qp(c);
	rdma_destroy_id(c);
}

static void rejected(struct rdma_event_channel *cch, struct rdma_event_channel *sch, struct rdma_cm_id *l)
{
	struct rdma_cm_id *c = rt_client_to(cch, PORT, RDMA_PS_UDP), *child;
	struct rdma_conn_param cp = {.private_data = "ud-client", .private_data_len = 10};
	struct rdma_cm_event *ev;

	CHECK(rdma_connect(c, &cp) == 0, "connect without a QP: %s", strerror(errno));
	if ((child = conn_request(sch, l, c)) == NULL)
		return;
	CHECK(rdma_reject(child, "go away", 8) == 0, "reject: %s", strerror(errno));
	if ((ev = rt_wait_event(cch, RDMA_CM_EVENT_UNREACHABLE))) {
		CHECK(ev->status == 2 && ev->param.ud.private_data_len == 136 &&
		      memcmp(ev->param.ud.private_data, "go away", 8) == 0,
		      "rejected: status %d (IB_SIDR_REJECT), private data", ev->status);
		rdma_ack_cm_event(ev);
	}
	rdma_destroy_id(child);
	rdma_destroy_id(c);
}

static void closed_port(struct rdma_event_channel *cch)
{
	struct rdma_cm_id *c = rt_client_to(cch, 7999, RDMA_PS_UDP);
	struct rdma_cm_event *ev;
	char big[181] = {0};
	struct rdma_conn_param cp = {.private_data = big, .private_data_len = sizeof(big)};

	CHECK_RET_ERRNO(rdma_connect(c, &cp), -1, EINVAL);
	cp.private_data_len = 180;
	CHECK(rdma_connect(c, &cp) == 0, "connect to 7999 with 180 bytes");
	if ((ev = rt_wait_event(cch, RDMA_CM_EVENT_UNREACHABLE))) {
		CHECK(ev->status == 1, "UNREACHABLE status %d (IB_SIDR_UNSUPPORTED)", ev->status);
		rdma_ack_cm_event(ev);
	}
	rdma_destroy_id(c);
}

/* What lib/cm reports when the SIDR_REQ retries run out, as the CM thread delivers it. */
static void timeout_event(struct rdma_event_channel *cch)
{
	struct rdma_cm_id *c = rt_client_to(cch, 7998, RDMA_PS_UDP);
	struct dpv_cm_id fake = {.ctx = to_did(c)};
	struct dpv_cm_event cev = {.type = DPV_CM_EV_TIMEOUT, .id = &fake,
				   .timeout_attr = DPV_CM_ATTR_SIDR_REQ};
	struct rdma_cm_event *ev;

	to_did(c)->state = DPV_RDMACM_CONNECT;
	dpv_rdmacm_cmsvc_lock();
	dpv_rdmacm_cm_event(NULL, &cev);
	dpv_rdmacm_cmsvc_unlock();
	if ((ev = rt_wait_event(cch, RDMA_CM_EVENT_UNREACHABLE))) {
		CHECK(ev->status == -ETIMEDOUT, "SIDR timeout: UNREACHABLE %d", ev->status);
		rdma_ack_cm_event(ev);
	}
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
	struct sockaddr_in sa = rt_sin4(rt_server, PORT);

	CHECK(cch && sch, "channels");
	CHECK(rdma_create_id(sch, &l, NULL, RDMA_PS_UDP) == 0, "listen id");
	CHECK(rdma_bind_addr(l, (struct sockaddr *)&sa) == 0, "bind: %s", strerror(errno));
	CHECK(rdma_listen(l, 4) == 0, "listen: %s", strerror(errno));
	accept_and_send(cch, sch, l);
	rejected(cch, sch, l);
	closed_port(cch);
	timeout_event(cch);
	rdma_destroy_id(l);
	rdma_destroy_event_channel(cch);
	rdma_destroy_event_channel(sch);
	return dpvt_finish();
}
