/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * SIDR (service ID resolution, what rdma_cm's UD ids use) in lib/cm's state
 * machine, on test_cm_sm's harness (two agents, in-memory wire, fake clock):
 *  - rdma_cm's timing (CM response timeout 20, 15 retries): the SIDR_REQ
 *    is sent 16 times, 4.096 us * 2^20 apart, then a TIMEOUT event for the
 *    SIDR_REQ, the id IDLE, no timer left;
 *  - a duplicate SIDR_REQ while the request is with the consumer: dropped
 *    and counted, no second event, nothing sent;
 *  - a lost SIDR_REP: the retransmitted SIDR_REQ is a new request once the
 *    answer went out (Linux ib_cm forgets the remote ID with the SIDR_REP),
 *    and the second answer's QPN, Q_Key and private data reach A;
 *  - a late duplicate SIDR_REP and one for an unknown request ID: counted
 *    as unmatched, no event;
 *  - destroying the passive id in SIDR_REQ_RCVD: SIDR_REP status 2
 *    (reject) with the request ID; destroying the active id in
 *    SIDR_REQ_SENT: nothing sent, no timer, a late SIDR_REP unmatched;
 *  - dpv_cm_timer's skipped scans: an id armed after a scan with an
 *    earlier deadline than the others is still retransmitted on time.
 */
#include <string.h>

#include "test_cm_sm.h"

#define SID_UDP 0x0000000001111d30ull /* rdma_cm UDP port space, port 7472 */
#define T20 (4096ull << 20)

static void sidr_param(struct dpv_cm_req_param *p)
{
	req_param(p, 0, SID_UDP);
	p->remote_cm_response_timeout = 20;
	p->max_cm_retries = 15;
	p->private_data = "sidr-req";
	p->private_len = 8;
}

/* Only A runs: every SIDR_REQ is lost. */
static void sidr_timing(void)
{
	struct dpv_cm_req_param p;
	struct dpv_cm_id *a;
	struct dpv_cm_mad m;
	uint64_t t0;
	bool spaced = true;

	harness_init(31);
	sidr_param(&p);
	a = dpv_cm_create_id(&sides[0].agent, NULL);
	t0 = now_ns;
	CHECK_EQ(dpv_cm_sidr_req(a, &p, now_ns), 0, "SIDR_REQ");
	CHECK(wire_decode(0, &m) && m.hdr.attr_id == DPV_CM_ATTR_SIDR_REQ && m.sidr_req.pkey == 0xffff &&
	      memcmp(m.sidr_req.private_data, "sidr-req", 8) == 0, "SIDR_REQ: P_Key, private data");
	for (int i = 1; i <= 15; i++) {
		nwire = 0;
		clock_to(t0 + (uint64_t)i * T20 - 1);
		spaced &= nwire == 0;
		clock_to(t0 + (uint64_t)i * T20);
		spaced &= nwire == 1 && wire_decode(0, &m) && m.hdr.attr_id == DPV_CM_ATTR_SIDR_REQ;
	}
	CHECK(spaced, "15 retransmissions, each 4.096us*2^20 after the last");
	CHECK(count_ev(0, DPV_CM_EV_TIMEOUT) == 0 && a->state == DPV_CM_SIDR_REQ_SENT, "no timeout yet");
	nwire = 0;
	clock_to(t0 + 16 * T20);
	CHECK(nwire == 0 && sides[0].sent == 16, "16 SIDR_REQs in all, no 17th");
	CHECK(last_ev(0) && last_ev(0)->type == DPV_CM_EV_TIMEOUT && last_ev(0)->timeout_attr == DPV_CM_ATTR_SIDR_REQ &&
	      last_ev(0)->at == t0 + 16 * T20, "TIMEOUT for the SIDR_REQ at 16 * 4.096us*2^20");
	CHECK(a->state == DPV_CM_IDLE && dpv_cm_next_deadline(&sides[0].agent) == DPV_CM_NO_DEADLINE &&
	      sides[0].agent.stats.timeouts == 1, "IDLE, no timer left, one timeout counted");
	harness_fini();
}

static void sidr_lost_rep(void)
{
	struct dpv_cm_req_param p;
	struct dpv_cm_id *a, *b;
	struct dpv_cm_mad m;
	uint8_t first_rep[DPV_MAD_SIZE];

	harness_init(32);
	dpv_cm_listen(&sides[1].agent, SID_UDP, NULL);
	sidr_param(&p);
	a = dpv_cm_create_id(&sides[0].agent, NULL);
	dpv_cm_sidr_req(a, &p, now_ns);
	wire_dup(0);
	deliver(0);
	b = last_ev(1)->id;
	CHECK(last_ev(1)->type == DPV_CM_EV_SIDR_REQ && last_ev(1)->pd_len == DPV_CM_SIDR_REQ_PRIVATE_LEN &&
	      memcmp(last_ev(1)->pd, "sidr-req", 8) == 0, "SIDR_REQ event, 216 bytes of private data");
	deliver(0);
	CHECK(count_ev(1, DPV_CM_EV_SIDR_REQ) == 1 && nwire == 0 && sides[1].agent.stats.rx_duplicates == 1,
	      "duplicate SIDR_REQ: dropped, counted, nothing sent");
	CHECK_EQ(dpv_cm_sidr_rep(b, DPV_CM_SIDR_SUCCESS, 0x4242, 0x01234567, "rep-1", 5), 0, "SIDR_REP");
	CHECK(b->state == DPV_CM_IDLE && nwire == 1, "B IDLE after its SIDR_REP");
	memcpy(first_rep, wire[0].mad, DPV_MAD_SIZE);
	wire_drop(0);
	CHECK_EQ(dpv_cm_sidr_rep(b, DPV_CM_SIDR_SUCCESS, 1, 1, NULL, 0), -EPROTO, "a second SIDR_REP: EPROTO");
	clock_to(now_ns + T20);
	CHECK(nwire == 1 && wire_decode(0, &m) && m.hdr.attr_id == DPV_CM_ATTR_SIDR_REQ &&
	      m.sidr_req.request_id == a->local_id, "SIDR_REQ retransmitted");
	deliver(0);
	CHECK(count_ev(1, DPV_CM_EV_SIDR_REQ) == 2 && last_ev(1)->id->state == DPV_CM_SIDR_REQ_RCVD,
	      "answered SIDR_REQ again: a new request");
	dpv_cm_sidr_rep(last_ev(1)->id, DPV_CM_SIDR_SUCCESS, 0x4343, 0x01234567, "rep-2", 5);
	CHECK(wire_decode(0, &m) && m.sidr_rep.status == DPV_CM_SIDR_SUCCESS && m.sidr_rep.qpn == 0x4343 &&
	      m.sidr_rep.qkey == 0x01234567 && m.sidr_rep.request_id == a->local_id &&
	      m.sidr_rep.service_id == SID_UDP, "SIDR_REP fields");
	deliver(0);
	CHECK(last_ev(0)->type == DPV_CM_EV_SIDR_REP && last_ev(0)->pd_len == DPV_CM_SIDR_REP_PRIVATE_LEN &&
	      memcmp(last_ev(0)->pd, "rep-2", 5) == 0 && a->state == DPV_CM_IDLE &&
	      dpv_cm_next_deadline(&sides[0].agent) == DPV_CM_NO_DEADLINE, "A: SIDR_REP event, IDLE, no timer");
	/* the first answer arrives late: no id waits for it */
	uint64_t unmatched = sides[0].agent.stats.rx_unmatched;
	CHECK_EQ(dpv_cm_rx(&sides[0].agent, &(struct dpv_cm_addr){.qpn = 1}, first_rep, DPV_MAD_SIZE, now_ns), 0,
		 "late SIDR_REP handled");
	CHECK(count_ev(0, DPV_CM_EV_SIDR_REP) == 1 && sides[0].agent.stats.rx_unmatched == unmatched + 1,
	      "late SIDR_REP: unmatched, no event");
	harness_fini();
}

static void sidr_destroy(void)
{
	struct dpv_cm_req_param p;
	struct dpv_cm_id *a;
	struct dpv_cm_mad m;

	harness_init(33);
	dpv_cm_listen(&sides[1].agent, SID_UDP, NULL);
	sidr_param(&p);
	a = dpv_cm_create_id(&sides[0].agent, NULL);
	dpv_cm_sidr_req(a, &p, now_ns);
	deliver(0);
	dpv_cm_destroy_id(last_ev(1)->id);
	CHECK(nwire == 1 && wire_decode(0, &m) && m.hdr.attr_id == DPV_CM_ATTR_SIDR_REP &&
	      m.sidr_rep.status == DPV_CM_SIDR_REJECT && m.sidr_rep.request_id == a->local_id,
	      "destroy in SIDR_REQ_RCVD: SIDR_REP status 2");
	deliver(0);
	CHECK(last_ev(0)->type == DPV_CM_EV_SIDR_REP && a->state == DPV_CM_IDLE, "A: the reject as SIDR_REP");

	/* a SIDR_REP for a request ID nobody has */
	m.sidr_rep.request_id ^= 0x5a5a;
	uint8_t raw[DPV_MAD_SIZE];
	CHECK_EQ(dpv_cm_mad_encode(&m, raw), 0, "encode");
	uint64_t unmatched = sides[0].agent.stats.rx_unmatched;
	dpv_cm_rx(&sides[0].agent, &(struct dpv_cm_addr){.qpn = 1}, raw, sizeof(raw), now_ns);
	CHECK(count_ev(0, DPV_CM_EV_SIDR_REP) == 1 && sides[0].agent.stats.rx_unmatched == unmatched + 1,
	      "SIDR_REP for an unknown request ID: unmatched");

	/* the active id destroyed while it waits */
	a = dpv_cm_create_id(&sides[0].agent, NULL);
	dpv_cm_sidr_req(a, &p, now_ns);
	uint32_t req_id = a->local_id;
	nwire = 0;
	dpv_cm_destroy_id(a);
	CHECK(nwire == 0 && dpv_cm_next_deadline(&sides[0].agent) == DPV_CM_NO_DEADLINE,
	      "destroy in SIDR_REQ_SENT: nothing sent, no timer");
	m.sidr_rep.request_id = req_id;
	dpv_cm_mad_encode(&m, raw);
	dpv_cm_rx(&sides[0].agent, &(struct dpv_cm_addr){.qpn = 1}, raw, sizeof(raw), now_ns);
	CHECK(count_ev(0, DPV_CM_EV_SIDR_REP) == 1, "late SIDR_REP to a destroyed id: no event");
	harness_fini();
}

/* dpv_cm_timer skips its scan until the earliest deadline: an id armed
 * after a scan with an earlier deadline than the others still fires on time. */
static void timer_next_due(void)
{
	struct dpv_cm_req_param p;
	struct dpv_cm_id *slow, *fast;
	struct dpv_cm_mad m;

	harness_init(34);
	sidr_param(&p); /* timeout 20 */
	slow = dpv_cm_create_id(&sides[0].agent, NULL);
	dpv_cm_sidr_req(slow, &p, now_ns);
	nwire = 0;
	clock_to(now_ns + 1000); /* a scan: nothing due before 4.096us*2^20 */
	CHECK(nwire == 0, "nothing due yet");
	uint64_t t1 = now_ns;
	p.remote_cm_response_timeout = 10;
	fast = dpv_cm_create_id(&sides[0].agent, NULL);
	dpv_cm_sidr_req(fast, &p, t1);
	nwire = 0;
	clock_to(t1 + T10 - 1);
	CHECK(nwire == 0, "the later id: nothing before its 4.096us*2^10");
	clock_to(t1 + T10);
	CHECK(nwire == 1 && wire_decode(0, &m) && m.sidr_req.request_id == fast->local_id,
	      "the later, earlier-due id retransmitted on time after a scan");
	CHECK(dpv_cm_timer(&sides[0].agent, t1 + T10 + 1) == 0, "nothing more due");
	CHECK(dpv_cm_next_deadline(&sides[0].agent) == t1 + 2 * T10, "next deadline exact");
	harness_fini();
}

void test_sidr_exchange(void)
{
	timer_next_due();
	sidr_timing();
	sidr_lost_rep();
	sidr_destroy();
}
