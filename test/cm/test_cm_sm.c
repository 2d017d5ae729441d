/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_cm_sm RDMA_CM_SEND.PCAP
 * lib/cm's connection manager state machine (dpv_cm.h) with two agents on
 * an in-memory wire and a fake clock (test_cm_sm_harness.c):
 *  - connect (REQ/REP/RTU) and disconnect (DREQ/DREP), every MAD's fields,
 *    the events and their private data, TIMEWAIT and its end;
 *  - Linux rxe's side of the capture: its REQ answered with a REP for its
 *    comm ID and TID, its RTU, then the crossed DREQs of frames 73-76;
 *  - lost REQ, all REQs lost (timeout at the IBA time), lost RTU (REP
 *    retransmitted, RTU resent), lost DREP, DREQ timeout, crossed DREQs,
 *    duplicate REQ/REP, stale connection, MRA, REJ (no listener, consumer),
 *    SIDR (and its timeout), unique comm IDs, DREQ while the RTU is lost,
 *    DREQ after TIMEWAIT, MRA of a REP, REJ while ESTABLISHED, destroying a
 *    connected id, 200 connect/disconnect runs on a wire losing 20%,
 *    malformed MADs (mutation loop); SIDR at rdma_cm's timing, duplicate
 *    SIDR_REQ, lost SIDR_REP, destroy (test_cm_sm_sidr.c).
 */
#include "test_cm_sm.h"


static void check_req_mad(const struct dpv_cm_mad *m, const struct dpv_cm_id *a)
{
	const struct dpv_cm_req *r = &m->req;

	CHECK_EQ(m->hdr.attr_id, DPV_CM_ATTR_REQ, "REQ attribute");
	CHECK(m->hdr.tid == ((2ull << 32) | a->local_id), "REQ TID agent<<32|comm ID");
	CHECK_EQ(r->local_comm_id, a->local_id, "REQ local comm ID");
	CHECK(r->service_id == SID, "REQ service ID");
	CHECK(r->local_ca_guid == 0x505400fffe770000ull, "REQ CA GUID");
	CHECK_EQ(r->local_qpn, 0x1d, "REQ QPN");
	CHECK_EQ(r->starting_psn, 0x07c411, "REQ PSN");
	CHECK_EQ(r->responder_resources, 4, "REQ responder resources");
	CHECK_EQ(r->initiator_depth, 2, "REQ initiator depth");
	CHECK_EQ(r->remote_cm_response_timeout, 10, "REQ remote CM timeout");
	CHECK_EQ(r->local_cm_response_timeout, 11, "REQ local CM timeout");
	CHECK_EQ(r->transport_service_type, DPV_CM_TST_RC, "REQ RC");
	CHECK_EQ(r->retry_count, 7, "REQ retry count");
	CHECK_EQ(r->rnr_retry_count, 6, "REQ RNR retry");
	CHECK_EQ(r->max_cm_retries, 3, "REQ max CM retries");
	CHECK_EQ(r->path_mtu, 3, "REQ MTU");
	CHECK_EQ(r->pkey, 0xffff, "REQ P_Key");
	CHECK_EQ(r->primary.local_lid, 0xffff, "REQ local LID");
	CHECK(r->primary.remote_gid[15] == 3 && r->primary.local_gid[15] == 2, "REQ GIDs");
	CHECK_EQ(r->primary.flow_label, 0x8f33e, "REQ flow label");
	CHECK_EQ(r->primary.traffic_class, 0x18, "REQ TC");
	CHECK_EQ(r->primary.hop_limit, 64, "REQ hop limit");
	CHECK_EQ(r->primary.local_ack_timeout, 14, "REQ ACK timeout");
	CHECK(memcmp(r->private_data, "hello-req", 9) == 0 && r->private_data[9] == 0, "REQ pd");
}

static void test_connect_disconnect(void)
{
	struct dpv_cm_req_param p;
	struct dpv_cm_rep_param rp = { .qpn = 0x1e, .starting_psn = 0xf2ed4b, .rnr_retry_count = 7,
				       .responder_resources = 2, .initiator_depth = 4,
				       .private_data = "ok", .private_len = 2 };
	struct dpv_cm_id *a, *b, *lis;
	struct dpv_cm_mad m;
	uint64_t tid;

	harness_init(1);
	lis = dpv_cm_listen(&sides[1].agent, SID, (void *)0x1234);
	CHECK(lis && lis->state == DPV_CM_LISTEN, "listen");
	CHECK_NULL_ERRNO(dpv_cm_listen(&sides[1].agent, SID, NULL), EADDRINUSE);
	a = dpv_cm_create_id(&sides[0].agent, NULL);
	req_param(&p, 0, SID);
	p.qpn = 1u << 24;
	CHECK_EQ(dpv_cm_send_req(a, &p, now_ns), -EINVAL, "25-bit QPN refused");
	p.qpn = 0x1d;
	p.private_len = DPV_CM_REQ_PRIVATE_LEN + 1;
	CHECK_EQ(dpv_cm_send_req(a, &p, now_ns), -EINVAL, "93 bytes of private data refused");
	p.private_len = 9;
	CHECK(a->state == DPV_CM_IDLE && nwire == 0, "nothing sent, still IDLE");
	CHECK_EQ(dpv_cm_send_req(a, &p, now_ns), 0, "send REQ");
	CHECK_EQ(a->state, DPV_CM_REQ_SENT, "A REQ_SENT");
	CHECK_EQ(dpv_cm_send_req(a, &p, now_ns), -EISCONN, "second REQ refused");
	CHECK(dpv_cm_next_deadline(&sides[0].agent) == now_ns + T10, "REQ deadline 4.096us*2^10");
	CHECK(nwire == 1 && wire_decode(0, &m), "one REQ on the wire");
	check_req_mad(&m, a);
	tid = m.hdr.tid;
	CHECK_EQ(deliver(0), 0, "B takes the REQ");
	CHECK(last_ev(1) && last_ev(1)->type == DPV_CM_EV_REQ, "B: REQ event");
	b = last_ev(1)->id;
	CHECK(b && b->state == DPV_CM_REQ_RCVD && b->ctx == (void *)0x1234, "B id REQ_RCVD, listener ctx");
	CHECK(last_ev(1)->pd_len == DPV_CM_REQ_PRIVATE_LEN && !memcmp(last_ev(1)->pd, "hello-req", 9),
	      "REQ event private data");
	CHECK_EQ(b->remote_id, a->local_id, "B remote comm ID");
	CHECK(b->local_id != 0 && b->local_id != a->local_id, "B local comm ID");
	CHECK_EQ(dpv_cm_send_rtu(b, NULL, 0), -EPROTO, "RTU refused in REQ_RCVD");
	CHECK_EQ(dpv_cm_send_rep(b, &rp, now_ns), 0, "send REP");
	CHECK_EQ(b->state, DPV_CM_REP_SENT, "B REP_SENT");
	CHECK(wire_decode(0, &m) && m.hdr.attr_id == DPV_CM_ATTR_REP, "REP on the wire");
	CHECK(m.hdr.tid == tid, "REP repeats the REQ TID");
	CHECK_EQ(m.rep.local_comm_id, b->local_id, "REP local comm ID");
	CHECK_EQ(m.rep.remote_comm_id, a->local_id, "REP remote comm ID");
	CHECK_EQ(m.rep.local_qpn, 0x1e, "REP QPN");
	CHECK_EQ(m.rep.starting_psn, 0xf2ed4b, "REP PSN");
	CHECK_EQ(m.rep.responder_resources, 2, "REP responder resources");
	CHECK_EQ(m.rep.initiator_depth, 4, "REP initiator depth");
	CHECK_EQ(m.rep.rnr_retry_count, 7, "REP RNR retry");
	CHECK(m.rep.local_ca_guid == 0x505400fffe770001ull, "REP CA GUID");
	CHECK(!memcmp(m.rep.private_data, "ok", 2), "REP pd");
	CHECK(dpv_cm_next_deadline(&sides[1].agent) == now_ns + T11, "REP deadline from REQ local timeout");
	deliver(0);
	CHECK(last_ev(0) && last_ev(0)->type == DPV_CM_EV_REP && last_ev(0)->id == a, "A: REP event");
	CHECK(!memcmp(last_ev(0)->pd, "ok", 2), "REP event pd");
	CHECK(a->state == DPV_CM_REP_RCVD && a->remote_id == b->local_id && a->remote_qpn == 0x1e,
	      "A REP_RCVD, remote comm ID and QPN");
	CHECK(dpv_cm_next_deadline(&sides[0].agent) == DPV_CM_NO_DEADLINE, "A: no timer after REP");
	CHECK_EQ(dpv_cm_send_rtu(a, "rtu", 3), 0, "send RTU");
	CHECK_EQ(a->state, DPV_CM_ESTABLISHED, "A ESTABLISHED");
	CHECK(wire_decode(0, &m) && m.hdr.attr_id == DPV_CM_ATTR_RTU && m.hdr.tid == tid, "RTU, REQ TID");
	CHECK(m.rtu.local_comm_id == a->local_id && m.rtu.remote_comm_id == b->local_id, "RTU comm IDs");
	deliver(0);
	CHECK(last_ev(1)->type == DPV_CM_EV_ESTABLISHED && b->state == DPV_CM_ESTABLISHED, "B ESTABLISHED");
	CHECK(!memcmp(last_ev(1)->pd, "rtu", 3), "RTU event pd");
	CHECK(dpv_cm_next_deadline(&sides[1].agent) == DPV_CM_NO_DEADLINE, "B: no timer after RTU");

	/* disconnect */
	CHECK_EQ(dpv_cm_send_dreq(a, "dq", 2, now_ns), 0, "send DREQ");
	CHECK_EQ(a->state, DPV_CM_DREQ_SENT, "A DREQ_SENT");
	CHECK(wire_decode(0, &m) && m.hdr.attr_id == DPV_CM_ATTR_DREQ, "DREQ on the wire");
	CHECK(m.dreq.local_comm_id == a->local_id && m.dreq.remote_comm_id == b->local_id, "DREQ IDs");
	CHECK_EQ(m.dreq.remote_qpn_eecn, 0x1e, "DREQ remote QPN");
	tid = m.hdr.tid;
	deliver(0);
	CHECK(last_ev(1)->type == DPV_CM_EV_DREQ && b->state == DPV_CM_DREQ_RCVD, "B DREQ_RCVD");
	CHECK(!memcmp(last_ev(1)->pd, "dq", 2), "DREQ event pd");
	CHECK_EQ(dpv_cm_send_drep(b, "dp", 2, now_ns), 0, "send DREP");
	CHECK_EQ(b->state, DPV_CM_TIMEWAIT, "B TIMEWAIT");
	CHECK(wire_decode(0, &m) && m.hdr.attr_id == DPV_CM_ATTR_DREP && m.hdr.tid == tid, "DREP, DREQ TID");
	CHECK(m.drep.local_comm_id == b->local_id && m.drep.remote_comm_id == a->local_id, "DREP IDs");
	deliver(0);
	CHECK(last_ev(0)->type == DPV_CM_EV_DISCONNECTED && a->state == DPV_CM_TIMEWAIT, "A TIMEWAIT");
	CHECK(!memcmp(last_ev(0)->pd, "dp", 2), "DREP event pd");
	clock_to(now_ns + 50000000 - 1);
	CHECK(a->state == DPV_CM_TIMEWAIT && b->state == DPV_CM_TIMEWAIT, "TIMEWAIT not over yet");
	clock_to(now_ns + 1);
	CHECK(a->state == DPV_CM_IDLE && b->state == DPV_CM_IDLE, "TIMEWAIT over: IDLE");
	CHECK(last_ev(0)->type == DPV_CM_EV_TIMEWAIT_EXIT, "TIMEWAIT exit event");
	dpv_cm_destroy_id(b);
	CHECK(!b->in_use, "B id freed");
	CHECK_EQ(nwire, 0, "nothing more sent");
	harness_fini();
}

static void test_lost_req(void)
{
	struct dpv_cm_req_param p;
	struct dpv_cm_id *a;
	uint64_t t0;

	harness_init(2);
	dpv_cm_listen(&sides[1].agent, SID, NULL);
	sides[1].auto_rep = true;
	sides[0].auto_rtu = true;
	a = dpv_cm_create_id(&sides[0].agent, NULL);
	req_param(&p, 0, SID);
	t0 = now_ns;
	dpv_cm_send_req(a, &p, now_ns);
	wire_drop(0);
	clock_to(t0 + T10 - 1);
	CHECK_EQ(nwire, 0, "no retransmission before the timeout");
	clock_to(t0 + T10);
	CHECK_EQ(nwire, 1, "REQ retransmitted at 4.096us*2^10");
	CHECK_EQ(sides[0].agent.stats.retransmits, 1, "retransmit counted");
	pump();
	CHECK(a->state == DPV_CM_ESTABLISHED && last_ev(1)->type == DPV_CM_EV_ESTABLISHED,
	      "connected after a lost REQ");
	harness_fini();

	/* every REQ lost: 1 + max_cm_retries sends, then the timeout event */
	harness_init(3);
	a = dpv_cm_create_id(&sides[0].agent, NULL);
	t0 = now_ns;
	dpv_cm_send_req(a, &p, now_ns);
	for (int i = 1; i <= 4; i++) {
		nwire = 0;
		clock_to(t0 + (uint64_t)i * T10 - 1);
		CHECK(count_ev(0, DPV_CM_EV_TIMEOUT) == 0, "no timeout before %d*T", i);
		clock_to(t0 + (uint64_t)i * T10);
	}
	CHECK_EQ(sides[0].sent, 4, "REQ sent 1 + 3 times");
	CHECK(last_ev(0) && last_ev(0)->type == DPV_CM_EV_TIMEOUT, "timeout event");
	CHECK(last_ev(0)->at == t0 + 4 * T10, "timeout at 4 * 4.096us*2^10");
	CHECK_EQ(last_ev(0)->timeout_attr, DPV_CM_ATTR_REQ, "the REQ timed out");
	CHECK_EQ(a->state, DPV_CM_IDLE, "A IDLE after timeout");
	CHECK(dpv_cm_next_deadline(&sides[0].agent) == DPV_CM_NO_DEADLINE, "no deadline left");
	harness_fini();
}

/* RTU lost: B retransmits the REP, A (ESTABLISHED) resends the RTU. */
static void test_lost_rtu_dup_rep(void)
{
	struct dpv_cm_id *a, *b;
	struct dpv_cm_req_param p;
	struct dpv_cm_mad m;
	uint8_t rtu[DPV_MAD_SIZE];
	uint64_t t0;

	harness_init(4);
	dpv_cm_listen(&sides[1].agent, SID, NULL);
	sides[1].auto_rep = true;
	sides[0].auto_rtu = true;
	a = dpv_cm_create_id(&sides[0].agent, NULL);
	req_param(&p, 0, SID);
	dpv_cm_send_req(a, &p, now_ns);
	deliver(0);
	b = last_ev(1)->id;
	t0 = now_ns;
	deliver(0);
	CHECK(a->state == DPV_CM_ESTABLISHED && nwire == 1, "A sent the RTU");
	memcpy(rtu, wire[0].mad, DPV_MAD_SIZE);
	wire_drop(0);
	clock_to(t0 + T11);
	CHECK(wire_decode(0, &m) && m.hdr.attr_id == DPV_CM_ATTR_REP && wire[0].from == 1,
	      "REP retransmitted at the REQ's local CM response timeout");
	deliver(0);
	CHECK(nwire == 1 && !memcmp(wire[0].mad, rtu, DPV_MAD_SIZE), "duplicate REP: same RTU resent");
	CHECK_EQ(count_ev(0, DPV_CM_EV_REP), 1, "no second REP event");
	CHECK_EQ(sides[0].agent.stats.rx_duplicates, 1, "duplicate counted");
	deliver(0);
	CHECK_EQ(b->state, DPV_CM_ESTABLISHED, "B ESTABLISHED");
	harness_fini();
}

static void test_rej(void)
{
	struct dpv_cm_req_param p;
	struct dpv_cm_id *a, *b;
	struct dpv_cm_mad m;
	static const uint8_t ari[5] = { 1, 2, 3, 4, 5 };

	/* no listener: REJ invalid service ID */
	harness_init(5);
	a = dpv_cm_create_id(&sides[0].agent, NULL);
	req_param(&p, 0, SID);
	dpv_cm_send_req(a, &p, now_ns);
	deliver(0);
	CHECK(wire_decode(0, &m) && m.hdr.attr_id == DPV_CM_ATTR_REJ, "REJ for no listener");
	CHECK_EQ(m.rej.reason, DPV_CM_REJ_INVALID_SERVICE_ID, "reason 8");
	CHECK_EQ(m.rej.remote_comm_id, a->local_id, "REJ remote comm ID = REQ's");
	CHECK_EQ(m.rej.message_rejected, DPV_CM_MSG_REQ, "REJ of the REQ");
	CHECK_EQ(sides[1].nev, 0, "B: no event");
	deliver(0);
	CHECK(last_ev(0)->type == DPV_CM_EV_REJ && last_ev(0)->rej_reason == 8, "A: REJ event, 8");
	CHECK_EQ(a->state, DPV_CM_IDLE, "A IDLE");
	CHECK(dpv_cm_next_deadline(&sides[0].agent) == DPV_CM_NO_DEADLINE, "no retransmission");
	harness_fini();

	/* the listener rejects */
	harness_init(6);
	dpv_cm_listen(&sides[1].agent, SID, NULL);
	a = dpv_cm_create_id(&sides[0].agent, NULL);
	dpv_cm_send_req(a, &p, now_ns);
	deliver(0);
	b = last_ev(1)->id;
	CHECK_EQ(dpv_cm_send_rej(b, DPV_CM_REJ_CONSUMER_DEFINED, ari, 5, "no", 2), 0, "send REJ");
	CHECK_EQ(b->state, DPV_CM_IDLE, "B IDLE after rejecting the REQ (Linux)");
	CHECK(wire_decode(0, &m) && m.rej.local_comm_id == 0 && m.rej.message_rejected == DPV_CM_MSG_REQ &&
	      m.rej.remote_comm_id == a->local_id && m.rej.ari_length == 5, "REJ fields (Linux: local 0)");
	deliver(0);
	CHECK(last_ev(0)->type == DPV_CM_EV_REJ && last_ev(0)->rej_reason == 28 &&
	      last_ev(0)->ari_len == 5 && !memcmp(last_ev(0)->pd, "no", 2), "A: REJ event, 28, ARI, pd");
	CHECK_EQ(a->state, DPV_CM_IDLE, "A IDLE");
	harness_fini();
}

static void test_disconnect_faults(void)
{
	struct dpv_cm_id *a, *b;
	uint64_t t0;

	/* lost DREP: DREQ retransmitted, B resends its DREP from TIMEWAIT */
	harness_init(7);
	dpv_cm_listen(&sides[1].agent, SID, NULL);
	a = connect_ab(SID, &b);
	CHECK(a && a->state == DPV_CM_ESTABLISHED && b->state == DPV_CM_ESTABLISHED, "connected");
	sides[1].auto_drep = true;
	t0 = now_ns;
	dpv_cm_send_dreq(a, NULL, 0, now_ns);
	deliver(0);
	CHECK(b->state == DPV_CM_TIMEWAIT && nwire == 1, "B answered DREP");
	wire_drop(0);
	clock_to(t0 + T10);
	CHECK(nwire == 1 && wire[0].from == 0, "DREQ retransmitted");
	deliver(0);
	CHECK(nwire == 1 && wire[0].from == 1, "DREP resent from TIMEWAIT");
	CHECK_EQ(count_ev(1, DPV_CM_EV_DREQ), 1, "one DREQ event");
	deliver(0);
	CHECK(a->state == DPV_CM_TIMEWAIT && last_ev(0)->type == DPV_CM_EV_DISCONNECTED, "A disconnected");
	harness_fini();

	/* every DREQ lost: disconnected anyway after max retries */
	harness_init(8);
	dpv_cm_listen(&sides[1].agent, SID, NULL);
	a = connect_ab(SID, &b);
	t0 = now_ns;
	dpv_cm_send_dreq(a, NULL, 0, now_ns);
	for (int i = 1; i <= 4; i++) {
		nwire = 0;
		clock_to(t0 + (uint64_t)i * T10);
	}
	CHECK(last_ev(0)->type == DPV_CM_EV_DISCONNECTED && last_ev(0)->timeout_attr == DPV_CM_ATTR_DREQ,
	      "DREQ timeout: disconnected");
	CHECK(last_ev(0)->at == t0 + 4 * T10 && a->state == DPV_CM_TIMEWAIT, "at 4T, TIMEWAIT");
	harness_fini();

	/* crossed DREQs (rdma_cm_send.pcap frames 73-76) */
	harness_init(9);
	dpv_cm_listen(&sides[1].agent, SID, NULL);
	a = connect_ab(SID, &b);
	sides[0].auto_drep = sides[1].auto_drep = true;
	dpv_cm_send_dreq(a, NULL, 0, now_ns);
	dpv_cm_send_dreq(b, NULL, 0, now_ns);
	CHECK_EQ(nwire, 2, "two DREQs in flight");
	pump();
	CHECK(a->state == DPV_CM_TIMEWAIT && b->state == DPV_CM_TIMEWAIT, "crossed DREQs: both TIMEWAIT");
	CHECK(count_ev(0, DPV_CM_EV_DREQ) == 1 && count_ev(1, DPV_CM_EV_DREQ) == 1, "each got a DREQ");
	CHECK(sides[0].sent == 4 && sides[1].sent == 3, "A: REQ RTU DREQ DREP, B: REP DREQ DREP");
	CHECK(dpv_cm_next_deadline(&sides[0].agent) == now_ns + 50000000, "only the TIMEWAIT timer");
	harness_fini();
}

static void test_dup_stale_mra(void)
{
	struct dpv_cm_req_param p;
	struct dpv_cm_id *a, *b, *a2;
	struct dpv_cm_mad m;
	uint64_t t0;

	harness_init(10);
	dpv_cm_listen(&sides[1].agent, SID, NULL);
	a = dpv_cm_create_id(&sides[0].agent, NULL);
	req_param(&p, 0, SID);
	t0 = now_ns;
	dpv_cm_send_req(a, &p, now_ns);
	wire_dup(0);
	deliver(0);
	deliver(0);
	CHECK(count_ev(1, DPV_CM_EV_REQ) == 1 && nwire == 0, "duplicate REQ in REQ_RCVD dropped");
	b = last_ev(1)->id;
	CHECK_EQ(dpv_cm_send_mra(b, 18, "wait", 4), 0, "send MRA");
	CHECK_EQ(b->state, DPV_CM_MRA_REQ_SENT, "B MRA_REQ_SENT");
	CHECK(wire_decode(0, &m) && m.mra.message_mraed == DPV_CM_MSG_REQ && m.mra.service_timeout == 18 &&
	      m.mra.remote_comm_id == a->local_id, "MRA fields");
	now_ns = t0 + 1000;
	deliver(0);
	CHECK(a->state == DPV_CM_MRA_REQ_RCVD && last_ev(0)->type == DPV_CM_EV_MRA, "A MRA_REQ_RCVD");
	CHECK(!memcmp(last_ev(0)->pd, "wait", 4), "MRA event pd");
	clock_to(t0 + 4 * T10);
	CHECK(nwire == 0 && a->state == DPV_CM_MRA_REQ_RCVD, "MRA: no retransmission nor timeout at 4T");
	clock_to(t0 + 1000 + (4096ull << 18));
	CHECK(nwire == 1 && wire[0].from == 0, "REQ retransmitted after the MRA's service timeout");
	deliver(0);
	CHECK(nwire == 1 && wire_decode(0, &m) && m.hdr.attr_id == DPV_CM_ATTR_MRA,
	      "duplicate REQ in MRA_REQ_SENT: MRA resent");
	wire_drop(0);
	dpv_cm_send_rep(b, &(struct dpv_cm_rep_param){ .qpn = 0x1e }, now_ns);
	sides[0].auto_rtu = true;
	pump();
	CHECK(a->state == DPV_CM_ESTABLISHED && b->state == DPV_CM_ESTABLISHED, "connected after MRA");

	/* the REQ again while ESTABLISHED: a duplicate, dropped (Linux ib_cm) */
	dpv_cm_mad_init(&m, DPV_CM_ATTR_REQ, 4);
	m.req.local_comm_id = a->local_id;
	m.req.local_ca_guid = sides[0].agent.cfg.ca_guid;
	m.req.local_qpn = 0x1d;
	m.req.service_id = SID;
	CHECK(dpv_cm_mad_encode(&m, wire[0].mad) == 0, "duplicate REQ encoded");
	wire[0].from = 0;
	nwire = 1;
	t0 = sides[1].agent.stats.rx_duplicates;
	deliver(0);
	CHECK(nwire == 0 && b->state == DPV_CM_ESTABLISHED, "duplicate REQ in ESTABLISHED dropped");
	CHECK_EQ(sides[1].agent.stats.rx_duplicates, t0 + 1, "duplicate counted");

	/* stale: a new REQ from the same GID and QPN while connected */
	a2 = dpv_cm_create_id(&sides[0].agent, NULL);
	dpv_cm_send_req(a2, &p, now_ns);
	deliver(0);
	CHECK(wire_decode(0, &m) && m.hdr.attr_id == DPV_CM_ATTR_REJ &&
	      m.rej.reason == DPV_CM_REJ_STALE_CONN && m.rej.remote_comm_id == a2->local_id,
	      "REJ stale connection");
	CHECK_EQ(sides[1].agent.stats.rx_stale, 1, "stale counted");
	deliver(0);
	CHECK(last_ev(0)->type == DPV_CM_EV_REJ && last_ev(0)->id == a2 && a2->state == DPV_CM_TIMEWAIT,
	      "stale REJ: TIMEWAIT");

	/* a REQ duplicate of a connection in TIMEWAIT: stale */
	sides[1].auto_drep = true;
	dpv_cm_send_dreq(a, NULL, 0, now_ns);
	pump();
	CHECK_EQ(b->state, DPV_CM_TIMEWAIT, "B TIMEWAIT");
	dpv_cm_mad_init(&m, DPV_CM_ATTR_REQ, 5);
	m.req.local_comm_id = a->local_id;
	m.req.local_ca_guid = sides[0].agent.cfg.ca_guid;
	m.req.service_id = SID;
	CHECK(dpv_cm_mad_encode(&m, wire[0].mad) == 0, "old REQ encoded");
	wire[0].from = 0;
	nwire = 1;
	deliver(0);
	CHECK(wire_decode(0, &m) && m.rej.reason == DPV_CM_REJ_STALE_CONN, "old REQ in TIMEWAIT: REJ stale");
	harness_fini();
}

/* Linux's rdma_cm answers the REQ with a delayed MRA (IB_CM_MRA_FLAG_DELAY |
 * 24): nothing is sent until the peer retransmits its REQ; the user's
 * IBV_EVENT_COMM_EST (dpv_cm_establish) ends the wait for the RTU. */
static void test_mra_delay_establish(void)
{
	struct dpv_cm_req_param p;
	struct dpv_cm_id *a, *b;
	struct dpv_cm_mad m;
	uint64_t t0;

	harness_init(12);
	dpv_cm_listen(&sides[1].agent, SID, NULL);
	CHECK_EQ(dpv_cm_ids_in_use(&sides[1].agent), 1, "a listener in use");
	a = dpv_cm_create_id(&sides[0].agent, NULL);
	req_param(&p, 0, SID);
	t0 = now_ns;
	dpv_cm_send_req(a, &p, now_ns);
	deliver(0);
	b = last_ev(1)->id;
	CHECK_EQ(dpv_cm_send_mra(b, DPV_CM_MRA_FLAG_DELAY | 24, NULL, 0), 0, "delayed MRA");
	CHECK(b->state == DPV_CM_MRA_REQ_SENT && nwire == 0, "MRA_REQ_SENT, nothing sent");
	CHECK_EQ(dpv_cm_send_mra(b, DPV_CM_MRA_FLAG_DELAY | 24, NULL, 0), -EPROTO, "twice: wrong state");
	CHECK_EQ(dpv_cm_send_mra(b, DPV_CM_MRA_FLAG_DELAY | 32, NULL, 0), -EINVAL, "timeout 32");
	clock_to(t0 + T10);
	CHECK(nwire == 1 && wire[0].from == 0, "REQ retransmitted (the application is slow)");
	deliver(0);
	CHECK(nwire == 1 && wire_decode(0, &m) && m.hdr.attr_id == DPV_CM_ATTR_MRA &&
	      m.mra.service_timeout == 24 && m.mra.message_mraed == DPV_CM_MSG_REQ &&
	      m.mra.remote_comm_id == a->local_id, "the duplicate REQ gets the MRA (timeout 24)");
	deliver(0);
	CHECK(a->state == DPV_CM_MRA_REQ_RCVD, "A MRA_REQ_RCVD");
	clock_to(t0 + 8 * T10);
	CHECK(nwire == 0 && a->state == DPV_CM_MRA_REQ_RCVD, "A waits the MRA's time, no retransmission");
	CHECK_EQ(dpv_cm_establish(b), -EINVAL, "establish before the REP: EINVAL");
	dpv_cm_send_rep(b, &(struct dpv_cm_rep_param){ .qpn = 0x1e }, now_ns);
	CHECK_EQ(dpv_cm_establish(b), 0, "COMM_EST in REP_SENT");
	CHECK(b->state == DPV_CM_ESTABLISHED && dpv_cm_next_deadline(&sides[1].agent) == DPV_CM_NO_DEADLINE,
	      "B ESTABLISHED, the REP no longer retransmitted");
	CHECK_EQ(dpv_cm_establish(b), -EISCONN, "again: EISCONN");
	sides[0].auto_rtu = true;
	pump();
	CHECK(a->state == DPV_CM_ESTABLISHED && b->state == DPV_CM_ESTABLISHED &&
	      count_ev(1, DPV_CM_EV_ESTABLISHED) == 0, "the late RTU is ignored");
	harness_fini();
}

static void test_sidr_ids(void)
{
	struct dpv_cm_req_param p;
	struct dpv_cm_id *a, *b, *ids[16];
	struct dpv_cm_mad m;

	harness_init(11);
	dpv_cm_listen(&sides[1].agent, SID, NULL);
	a = dpv_cm_create_id(&sides[0].agent, NULL);
	req_param(&p, 0, SID);
	CHECK_EQ(dpv_cm_sidr_req(a, &p, now_ns), 0, "SIDR_REQ");
	CHECK(wire_decode(0, &m) && m.sidr_req.request_id == a->local_id && m.sidr_req.service_id == SID,
	      "SIDR_REQ fields");
	deliver(0);
	b = last_ev(1)->id;
	CHECK(last_ev(1)->type == DPV_CM_EV_SIDR_REQ && b->state == DPV_CM_SIDR_REQ_RCVD, "SIDR_REQ event");
	CHECK_EQ(dpv_cm_sidr_rep(b, DPV_CM_SIDR_SUCCESS, 0x42, 0x11111111, NULL, 0), 0, "SIDR_REP");
	CHECK(wire_decode(0, &m) && m.sidr_rep.qpn == 0x42 && m.sidr_rep.request_id == a->local_id,
	      "SIDR_REP fields");
	deliver(0);
	CHECK(last_ev(0)->type == DPV_CM_EV_SIDR_REP && a->state == DPV_CM_IDLE, "SIDR_REP event");
	p.service_id = SID + 1;
	dpv_cm_sidr_req(a, &p, now_ns);
	deliver(0);
	CHECK(wire_decode(0, &m) && m.sidr_rep.status == DPV_CM_SIDR_UNSUPPORTED, "SIDR no listener");
	harness_fini();

	/* comm IDs: non-zero and distinct; ENOMEM when every id is used */
	harness_init(12);
	for (int i = 0; i < 16; i++)
		ids[i] = dpv_cm_create_id(&sides[0].agent, NULL);
	for (int i = 0; i < 16; i++)
		for (int j = 0; j < i; j++)
			CHECK(ids[i] && ids[j] && ids[i]->local_id && ids[i]->local_id != ids[j]->local_id,
			      "comm IDs %d %d distinct", i, j);
	CHECK_NULL_ERRNO(dpv_cm_create_id(&sides[0].agent, NULL), ENOMEM);
	dpv_cm_destroy_id(ids[3]);
	CHECK(dpv_cm_create_id(&sides[0].agent, NULL) != NULL, "id reusable after destroy");
	harness_fini();
}

/* Reordering and the less common paths. */
static void test_more(void)
{
	struct dpv_cm_req_param p;
	struct dpv_cm_id *a, *b;
	struct dpv_cm_mad m;
	uint64_t t0;

	/* RTU lost, then the DREQ arrives in REP_SENT: DREQ_RCVD, REP no longer resent */
	harness_init(20);
	dpv_cm_listen(&sides[1].agent, SID, NULL);
	sides[1].auto_rep = true;
	sides[1].auto_drep = true;
	sides[0].auto_rtu = true;
	a = dpv_cm_create_id(&sides[0].agent, NULL);
	req_param(&p, 0, SID);
	dpv_cm_send_req(a, &p, now_ns);
	deliver(0);
	b = last_ev(1)->id;
	deliver(0);
	wire_drop(0);
	CHECK(a->state == DPV_CM_ESTABLISHED && b->state == DPV_CM_REP_SENT, "RTU lost");
	dpv_cm_send_dreq(a, NULL, 0, now_ns);
	deliver(0);
	CHECK(count_ev(1, DPV_CM_EV_DREQ) == 1 && b->state == DPV_CM_TIMEWAIT, "DREQ in REP_SENT accepted");
	deliver(0);
	CHECK(a->state == DPV_CM_TIMEWAIT, "A TIMEWAIT");
	/* both TIMEWAITs over, the DREQ again: a DREP anyway (Linux cm_issue_drep) */
	clock_to(now_ns + 60000000);
	CHECK(a->state == DPV_CM_IDLE && b->state == DPV_CM_IDLE, "IDLE");
	t0 = b->local_id;
	dpv_cm_mad_init(&m, DPV_CM_ATTR_DREQ, 77);
	m.dreq.local_comm_id = 0x11112222;
	m.dreq.remote_comm_id = 0x33334444;
	CHECK(dpv_cm_mad_encode(&m, wire[0].mad) == 0, "DREQ encoded");
	wire[0].from = 0;
	nwire = 1;
	deliver(0);
	CHECK(wire_decode(0, &m) && m.hdr.attr_id == DPV_CM_ATTR_DREP && m.hdr.tid == 77 &&
	      m.drep.local_comm_id == 0x33334444 && m.drep.remote_comm_id == 0x11112222,
	      "DREQ for no connection: DREP from its IDs");
	CHECK(b->local_id == t0, "no id touched");
	harness_fini();

	/* MRA for the REP; REJ while ESTABLISHED; destroy while ESTABLISHED */
	harness_init(21);
	dpv_cm_listen(&sides[1].agent, SID, NULL);
	a = dpv_cm_create_id(&sides[0].agent, NULL);
	sides[1].auto_rep = true;
	dpv_cm_send_req(a, &p, now_ns);
	deliver(0);
	b = last_ev(1)->id;
	t0 = now_ns;
	deliver(0);
	CHECK_EQ(a->state, DPV_CM_REP_RCVD, "A REP_RCVD");
	CHECK_EQ(dpv_cm_send_mra(a, 20, NULL, 0), 0, "MRA for the REP");
	CHECK(a->state == DPV_CM_MRA_REP_SENT && wire_decode(0, &m) && m.mra.message_mraed == DPV_CM_MSG_REP,
	      "MRA_REP_SENT, MRA of the REP");
	deliver(0);
	CHECK(b->state == DPV_CM_MRA_REP_RCVD && last_ev(1)->type == DPV_CM_EV_MRA, "B MRA_REP_RCVD");
	clock_to(t0 + 4 * T11);
	CHECK(nwire == 0 && b->state == DPV_CM_MRA_REP_RCVD, "B waits the MRA's timeout");
	CHECK_EQ(dpv_cm_send_rtu(a, NULL, 0), 0, "RTU from MRA_REP_SENT");
	deliver(0);
	CHECK(b->state == DPV_CM_ESTABLISHED && dpv_cm_next_deadline(&sides[1].agent) == DPV_CM_NO_DEADLINE,
	      "B ESTABLISHED, timer stopped");
	dpv_cm_mad_init(&m, DPV_CM_ATTR_REJ, 5);
	m.rej.local_comm_id = a->local_id;
	m.rej.remote_comm_id = b->local_id;
	m.rej.reason = DPV_CM_REJ_CONSUMER_DEFINED;
	dpv_cm_mad_encode(&m, wire[0].mad);
	wire[0].from = 0;
	nwire = 1;
	deliver(0);
	CHECK(b->state == DPV_CM_TIMEWAIT && last_ev(1)->type == DPV_CM_EV_REJ, "REJ in ESTABLISHED: TIMEWAIT");
	dpv_cm_destroy_id(a);
	CHECK(a->in_use && a->state == DPV_CM_TIMEWAIT && wire_decode(0, &m) &&
	      m.hdr.attr_id == DPV_CM_ATTR_DREQ, "destroy in ESTABLISHED: DREQ, TIMEWAIT");
	clock_to(now_ns + 60000000);
	CHECK(!a->in_use, "destroyed id freed after TIMEWAIT");
	harness_fini();

	/* destroy in REQ_SENT: REJ timeout with our CA GUID; the passive id goes IDLE */
	harness_init(23);
	dpv_cm_listen(&sides[1].agent, SID, NULL);
	a = dpv_cm_create_id(&sides[0].agent, NULL);
	dpv_cm_send_req(a, &p, now_ns);
	deliver(0);
	b = last_ev(1)->id;
	dpv_cm_destroy_id(a);
	CHECK(!a->in_use && wire_decode(0, &m) && m.rej.reason == DPV_CM_REJ_TIMEOUT &&
	      m.rej.ari_length == 8 && m.rej.ari[7] == 0x00 && m.rej.ari[0] == 0x50 &&
	      m.rej.message_rejected == DPV_CM_MSG_OTHER, "destroy in REQ_SENT: REJ timeout, ARI GUID");
	deliver(0);
	CHECK(b->state == DPV_CM_IDLE && last_ev(1)->type == DPV_CM_EV_REJ &&
	      last_ev(1)->rej_reason == DPV_CM_REJ_TIMEOUT, "B: REJ event, IDLE");
	CHECK(dpv_cm_next_deadline(&sides[0].agent) == DPV_CM_NO_DEADLINE, "A: no timer left");
	harness_fini();

	/* SIDR_REQ unanswered: retransmitted, then a timeout */
	harness_init(22);
	a = dpv_cm_create_id(&sides[0].agent, NULL);
	t0 = now_ns;
	dpv_cm_sidr_req(a, &p, now_ns);
	for (int i = 1; i <= 4; i++)
		clock_to(t0 + (uint64_t)i * T10);
	CHECK(sides[0].sent == 4 && last_ev(0)->type == DPV_CM_EV_TIMEOUT &&
	      last_ev(0)->timeout_attr == DPV_CM_ATTR_SIDR_REQ && a->state == DPV_CM_IDLE, "SIDR timeout");
	harness_fini();
}

/* Random mutations of valid MADs, and every length: never a crash. */
static void test_malformed(void)
{
	struct dpv_cm_addr from = { .qpn = 1, .qkey = DPV_GSI_QKEY };
	uint64_t r = 99, bad = 0;
	uint8_t mad[DPV_MAD_SIZE + 8];
	struct dpv_cm_id *a;
	struct dpv_cm_req_param p;
	int ret;

	harness_init(13);
	dpv_cm_listen(&sides[1].agent, SID, NULL);
	a = connect_ab(SID, NULL);
	CHECK(a != NULL, "connected");
	CHECK_EQ(dpv_cm_rx(&sides[1].agent, &from, (const uint8_t *)"x", 1, now_ns), -EBADMSG, "1 byte");
	CHECK_EQ(sides[1].agent.stats.rx_malformed, 1, "counted");
	CHECK_EQ(dpv_cm_rx(NULL, &from, mad, 256, now_ns), -EINVAL, "NULL agent");
	memset(mad, 0, sizeof(mad));
	dpv_mad_hdr_encode(&(struct dpv_mad_hdr){ 1, 7, 2, 3, 0, 0, 1, DPV_CM_ATTR_LAP, 0 }, mad);
	CHECK_EQ(dpv_cm_rx(&sides[1].agent, &from, mad, 256, now_ns), -EOPNOTSUPP, "LAP unsupported");
	req_param(&p, 0, SID);
	for (int i = 0; i < 20000; i++) {
		struct dpv_cm_mad m;
		uint16_t attrs[] = { 0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18 };

		r = dpvt_mix64(r + (uint64_t)i);
		dpv_cm_mad_init(&m, attrs[r % 9], r);
		m.req.local_comm_id = (r >> 8) & 1 ? a->local_id : (uint32_t)r;
		m.rep.remote_comm_id = (r >> 9) & 1 ? a->local_id : (uint32_t)(r >> 20);
		dpv_cm_mad_encode(&m, mad);
		for (int k = 0; k < (int)(r >> 12) % 6; k++)
			mad[dpvt_mix64(r + (uint64_t)k) % DPV_MAD_SIZE] ^= (uint8_t)(r >> (8 * k));
		ret = dpv_cm_rx(&sides[i & 1].agent, &from, mad, (r >> 40) % 16 ? DPV_MAD_SIZE :
				(size_t)((r >> 44) % sizeof(mad)), now_ns);
		bad += ret == -EBADMSG;
		CHECK(ret == 0 || ret == -EBADMSG || ret == -EOPNOTSUPP, "rx returns %d", ret);
		if ((i & 255) == 0)
			clock_to(now_ns + 100000000), nwire = 0;
	}
	CHECK(bad > 0 && sides[0].agent.stats.rx_malformed + sides[1].agent.stats.rx_malformed == bad + 1,
	      "malformed counted (%llu)", (unsigned long long)bad);
	harness_fini();
}

/* The CM MAD of frame f (1-based) of the capture, decoded. */
static void mad_of(struct dpvt_pkt *pk, int f, struct dpv_cm_mad *m)
{
	struct dpv_pkt_info pi;

	CHECK(dpv_pkt_parse_check(pk[f - 1].data, pk[f - 1].len, &pi) == 0 &&
	      dpv_cm_mad_decode(pk[f - 1].data + pi.payload_off, pi.payload_len, m) == 0,
	      "frame %d decodes", f);
}

/* Linux rxe's side of rdma_cm_send.pcap against a listening agent: the REQ
 * (frame 1) answered by a REP, the RTU (3), then the crossed DREQs (73-76),
 * the client's comm IDs kept and ours patched in. */
static void test_capture(const char *pcap)
{
	struct dpvt_pkt *pk;
	int n = dpvt_pcap_read(pcap, &pk);
	struct dpv_pkt_info pi;
	struct dpv_cm_addr from = { .qpn = 1, .qkey = DPV_GSI_QKEY };
	struct dpv_cm_mad m;
	struct dpv_cm_id *b;
	uint8_t mad[DPV_MAD_SIZE];

	if (!CHECK(n == 76, "%s: 76 packets", pcap))
		return;
	harness_init(14);
	dpv_cm_listen(&sides[1].agent, 0x0000000001064853ull, NULL);
	CHECK(dpv_pkt_parse_check(pk[0].data, pk[0].len, &pi) == 0 && pi.payload_len == DPV_MAD_SIZE,
	      "frame 1 parses");
	memcpy(from.gid, pi.sgid, 16);
	CHECK_EQ(dpv_cm_rx(&sides[1].agent, &from, pk[0].data + pi.payload_off, DPV_MAD_SIZE, now_ns), 0,
		 "Linux REQ accepted");
	b = last_ev(1) ? last_ev(1)->id : NULL;
	if (CHECK(b && last_ev(1)->type == DPV_CM_EV_REQ, "REQ event")) {
		CHECK(b->remote_id == 0x67e42445 && b->remote_qpn == 0x1d, "remote comm ID and QPN");
		CHECK(b->remote_ca_guid == 0x505400fffe770003ull, "remote CA GUID");
		CHECK(!memcmp(b->peer.gid, pi.sgid, 16), "peer GID");
		dpv_cm_send_rep(b, &(struct dpv_cm_rep_param){ .qpn = 0x1d, .starting_psn = 0xf2ed4b },
				now_ns);
		CHECK(wire_decode(0, &m) && m.hdr.attr_id == DPV_CM_ATTR_REP, "REP sent");
		CHECK(m.hdr.tid == 0x000000024524e467ull, "REP TID = the Linux REQ's");
		CHECK(m.rep.remote_comm_id == 0x67e42445 && m.rep.local_comm_id == b->local_id, "REP IDs");
		CHECK(!memcmp(wire[0].to.gid, pi.sgid, 16) && wire[0].to.qpn == 1, "REP to the client's QP 1");
		/* frame 3, the client's RTU, addressed to our comm ID */
		mad_of(pk, 3, &m);
		m.rtu.remote_comm_id = b->local_id;
		dpv_cm_mad_encode(&m, mad);
		dpv_cm_rx(&sides[1].agent, &from, mad, DPV_MAD_SIZE, now_ns);
		CHECK_EQ(b->state, DPV_CM_ESTABLISHED, "Linux RTU: ESTABLISHED");
		/* frames 73-76: our DREQ crosses the client's; each answers DREP */
		nwire = 0;
		CHECK_EQ(dpv_cm_send_dreq(b, NULL, 0, now_ns), 0, "server DREQ (frame 73)");
		CHECK(wire_decode(0, &m) && m.dreq.remote_comm_id == 0x67e42445 &&
		      m.dreq.remote_qpn_eecn == 0x1d && m.dreq.local_comm_id == b->local_id,
		      "DREQ IDs and remote QPN as frame 73");
		CHECK(m.hdr.tid == ((2ull << 32) | b->local_id), "DREQ TID: agent 2, our comm ID");
		nwire = 0;
		mad_of(pk, 74, &m);
		m.dreq.remote_comm_id = b->local_id;
		dpv_cm_mad_encode(&m, mad);
		dpv_cm_rx(&sides[1].agent, &from, mad, DPV_MAD_SIZE, now_ns);
		CHECK(b->state == DPV_CM_DREQ_RCVD, "client DREQ (frame 74) in DREQ_SENT: DREQ_RCVD");
		CHECK(dpv_cm_next_deadline(&sides[1].agent) == DPV_CM_NO_DEADLINE, "our DREQ no longer resent");
		dpv_cm_send_drep(b, NULL, 0, now_ns);
		CHECK(wire_decode(0, &m) && m.hdr.attr_id == DPV_CM_ATTR_DREP &&
		      m.hdr.tid == 0x000000024524e467ull && m.drep.remote_comm_id == 0x67e42445,
		      "DREP as frame 75 (the client's TID and comm ID)");
		CHECK_EQ(b->state, DPV_CM_TIMEWAIT, "TIMEWAIT");
		nwire = 0;
		mad_of(pk, 76, &m);
		m.drep.remote_comm_id = b->local_id;
		dpv_cm_mad_encode(&m, mad);
		CHECK_EQ(dpv_cm_rx(&sides[1].agent, &from, mad, DPV_MAD_SIZE, now_ns), 0, "client DREP (frame 76)");
		CHECK(b->state == DPV_CM_TIMEWAIT && nwire == 0, "frame 76 in TIMEWAIT: nothing more");
	}
	harness_fini();
	dpvt_pcap_free(pk, n);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: test_cm_sm test/data/wire/rdma_cm_send.pcap\n");
		return 2;
	}
	CHECK_EQ(dpv_cm_timeout_ns(0), 4096, "4.096 us");
	CHECK(dpv_cm_timeout_ns(20) == 4096ull << 20, "2^20 * 4.096 us");
	CHECK(strcmp(dpv_cm_state_name(DPV_CM_MRA_REP_RCVD), "MRA_REP_RCVD") == 0, "state name");
	test_connect_disconnect();
	test_lost_req();
	test_lost_rtu_dup_rep();
	test_rej();
	test_disconnect_faults();
	test_dup_stale_mra();
	test_mra_delay_establish();
	test_sidr_ids();
	test_sidr_exchange();
	test_more();
	test_lossy_soak();
	test_malformed();
	test_capture(argv[1]);
	return dpvt_finish();
}
