/* SPDX-License-Identifier: BSD-3-Clause */
/* test_cm_sm's soak: connections on a wire that loses, duplicates and reorders. */
#include "test_cm_sm.h"

/* Delivers the wire with losses, duplicates and swaps, moving the clock on. */
static void lossy_run(uint64_t *r, uint64_t until)
{
	while (now_ns < until) {
		while (nwire) {
			*r = dpvt_mix64(*r);
			if (*r % 100 < 20)
				wire_drop(0);
			else if (*r % 100 < 30)
				wire_dup(0), deliver(0);
			else if (*r % 100 < 40 && nwire > 1)
				deliver(1);
			else
				deliver(0);
		}
		uint64_t d = dpv_cm_next_deadline(&sides[0].agent);
		uint64_t d1 = dpv_cm_next_deadline(&sides[1].agent);

		d = d1 < d ? d1 : d;
		if (d == DPV_CM_NO_DEADLINE || d > until)
			break;
		clock_to(d);
	}
}

/* An id left out of IDLE by a peer that gave up: the peer had a timeout (IBA: a REP or DREQ never answered ends on that side only). */
static bool half_open(int s, const struct dpv_cm_id *id)
{
	if (id->state != DPV_CM_ESTABLISHED)
		return false;
	for (int i = 0; i < sides[!s].nev; i++) {
		const struct ev_rec *e = &sides[!s].ev[i];

		if ((e->type == DPV_CM_EV_TIMEOUT && e->timeout_attr == DPV_CM_ATTR_REP) ||
		    (e->type == DPV_CM_EV_DISCONNECTED && e->timeout_attr == DPV_CM_ATTR_DREQ))
			return true;
	}
	return false;
}

static int count_live(int s, int *half)
{
	int live = 0;

	for (uint32_t i = 0; i < sides[s].agent.nids; i++) {
		const struct dpv_cm_id *id = &sides[s].agent.ids[i];

		if (!id->in_use || id->state == DPV_CM_IDLE || id->state == DPV_CM_LISTEN)
			continue;
		if (half_open(s, id))
			(*half)++;
		else
			live++;
	}
	return live;
}

/* 200 connections and disconnections on a wire that loses 20%, duplicates
 * and reorders: no crash, no id left behind but half-open ones whose peer
 * timed out, both sides told when a disconnection gets through. */
void test_lossy_soak(void)
{
	int connected = 0, disc = 0, dreq = 0, half = 0;
	uint64_t r = 7;

	for (int n = 0; n < 200; n++) {
		struct dpv_cm_req_param p;
		struct dpv_cm_id *a, *b = NULL;
		int live, s = n & 1;

		harness_init(100 + (uint64_t)n);
		dpv_cm_listen(&sides[1].agent, SID, NULL);
		sides[1].auto_rep = sides[0].auto_rtu = true;
		sides[0].auto_drep = sides[1].auto_drep = true;
		a = dpv_cm_create_id(&sides[0].agent, NULL);
		req_param(&p, 0, SID);
		dpv_cm_send_req(a, &p, now_ns);
		lossy_run(&r, now_ns + 10 * T11);
		for (int i = 0; i < sides[1].nev; i++)
			if (sides[1].ev[i].type == DPV_CM_EV_REQ)
				b = sides[1].ev[i].id;
		if (a->state == DPV_CM_ESTABLISHED && b && b->state == DPV_CM_ESTABLISHED) {
			connected++;
			dpv_cm_send_dreq(s ? b : a, NULL, 0, now_ns);
			lossy_run(&r, now_ns + 10 * T11);
			disc += count_ev(s, DPV_CM_EV_DISCONNECTED) == 1;
			dreq += count_ev(!s, DPV_CM_EV_DREQ) == 1;
		}
		lossy_run(&r, now_ns + 1000000000ull);
		live = count_live(0, &half) + count_live(1, &half);
		CHECK(live == 0, "run %d: every id IDLE at the end (%d live: A %s, B %s)", n, live,
		      dpv_cm_state_name(a->state), b ? dpv_cm_state_name(b->state) : "-");
		CHECK(dpv_cm_next_deadline(&sides[0].agent) == DPV_CM_NO_DEADLINE &&
		      dpv_cm_next_deadline(&sides[1].agent) == DPV_CM_NO_DEADLINE, "run %d: no timer left", n);
		harness_fini();
	}
	printf("lossy soak: %d/200 connected, %d disconnected, %d DREQ received, %d half-open\n",
	       connected, disc, dreq, half);
	CHECK(connected > 150, "most runs connect (%d/200)", connected);
	CHECK(disc == connected, "the DREQ sender always ends disconnected (%d/%d)", disc, connected);
	CHECK(dreq + 2 >= connected, "the peer gets the DREQ nearly always (%d/%d)", dreq, connected);
	CHECK(half <= 12, "few half-open ends (%d)", half);
}
