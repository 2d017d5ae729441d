/* SPDX-License-Identifier: BSD-3-Clause */
/* test_cm_sm's wire, clock and event recorder (test_cm_sm.h). */
#include "test_cm_sm.h"

struct side sides[2];
struct wire_mad wire[WIRE_MAX];
int nwire;
uint64_t now_ns;

static int side_of(void *arg)
{
	return (int)((struct side *)arg - sides);
}

static int h_send(void *arg, const struct dpv_cm_addr *to, const uint8_t mad[DPV_MAD_SIZE])
{
	int s = side_of(arg);

	sides[s].sent++;
	if (nwire >= WIRE_MAX)
		return -ENOBUFS;
	wire[nwire].from = s;
	wire[nwire].to = *to;
	memcpy(wire[nwire].mad, mad, DPV_MAD_SIZE);
	wire[nwire].at = now_ns;
	nwire++;
	return 0;
}

static void h_auto(struct side *sd, const struct dpv_cm_event *ev)
{
	struct dpv_cm_rep_param rp = { 0 };

	if (ev->type == DPV_CM_EV_REQ && sd->auto_rep) {
		rp.qpn = sd->qpn;
		rp.starting_psn = 0x123456;
		rp.rnr_retry_count = 7;
		rp.private_data = "rep-pd";
		rp.private_len = 6;
		dpv_cm_send_rep(ev->id, &rp, now_ns);
	} else if (ev->type == DPV_CM_EV_REP && sd->auto_rtu) {
		dpv_cm_send_rtu(ev->id, NULL, 0);
	} else if (ev->type == DPV_CM_EV_DREQ && sd->auto_drep) {
		dpv_cm_send_drep(ev->id, "bye", 3, now_ns);
	}
}

static void h_event(void *arg, const struct dpv_cm_event *ev)
{
	struct side *sd = arg;
	struct ev_rec *r;

	if (sd->nev >= EV_MAX)
		return;
	r = &sd->ev[sd->nev++];
	memset(r, 0, sizeof(*r));
	r->type = ev->type;
	r->id = ev->id;
	r->rej_reason = ev->rej_reason;
	r->timeout_attr = ev->timeout_attr;
	r->ari_len = ev->ari_len;
	r->at = now_ns;
	r->state = ev->id->state;
	if (ev->private_data) {
		r->pd_len = ev->private_len;
		memcpy(r->pd, ev->private_data, ev->private_len);
	}
	h_auto(sd, ev);
}

void harness_init(uint64_t seed)
{
	for (int s = 0; s < 2; s++) {
		struct dpv_cm_agent_cfg cfg = {
			.ca_guid = 0x505400fffe770000ull + (uint64_t)s,
			.send = h_send,
			.event = h_event,
			.arg = &sides[s],
			.max_ids = 16,
			.seed = seed * 2 + (uint64_t)s,
			.timewait_ns = 50000000, /* 50 ms */
			.agent_no = 2,
		};

		memset(&sides[s], 0, sizeof(sides[s]));
		sides[s].gid[10] = 0xff;
		sides[s].gid[11] = 0xff;
		sides[s].gid[12] = 10;
		sides[s].gid[15] = (uint8_t)(2 + s);
		sides[s].qpn = 0x1d + (uint32_t)s;
		CHECK_EQ(dpv_cm_agent_init(&sides[s].agent, &cfg), 0, "agent init");
	}
	nwire = 0;
	now_ns = 1000;
}

void harness_fini(void)
{
	for (int s = 0; s < 2; s++)
		dpv_cm_agent_fini(&sides[s].agent);
}

int deliver(int i)
{
	struct wire_mad w = wire[i];
	struct dpv_cm_addr from = { .qpn = DPV_GSI_QPN, .qkey = DPV_GSI_QKEY };
	int to = !w.from;

	memcpy(from.gid, sides[w.from].gid, 16);
	wire_drop(i);
	return dpv_cm_rx(&sides[to].agent, &from, w.mad, DPV_MAD_SIZE, now_ns);
}

void pump(void)
{
	for (int n = 0; nwire && n < 100; n++)
		deliver(0);
}

void wire_drop(int i)
{
	memmove(&wire[i], &wire[i + 1], sizeof(wire[0]) * (size_t)(nwire - i - 1));
	nwire--;
}

void wire_dup(int i)
{
	if (nwire < WIRE_MAX)
		wire[nwire++] = wire[i];
}

bool wire_decode(int i, struct dpv_cm_mad *m)
{
	return i < nwire && dpv_cm_mad_decode(wire[i].mad, DPV_MAD_SIZE, m) == 0;
}

void clock_to(uint64_t t)
{
	now_ns = t;
	dpv_cm_timer(&sides[0].agent, t);
	dpv_cm_timer(&sides[1].agent, t);
}

struct ev_rec *last_ev(int s)
{
	return sides[s].nev ? &sides[s].ev[sides[s].nev - 1] : NULL;
}

int count_ev(int s, enum dpv_cm_event_type t)
{
	int n = 0;

	for (int i = 0; i < sides[s].nev; i++)
		n += sides[s].ev[i].type == t;
	return n;
}

void req_param(struct dpv_cm_req_param *p, int s, uint64_t service_id)
{
	memset(p, 0, sizeof(*p));
	p->service_id = service_id;
	p->qpn = sides[s].qpn;
	p->starting_psn = 0x07c411;
	p->responder_resources = 4;
	p->initiator_depth = 2;
	p->peer.qpn = DPV_GSI_QPN;
	p->peer.qkey = DPV_GSI_QKEY;
	memcpy(p->peer.gid, sides[!s].gid, 16);
	memcpy(p->local_gid, sides[s].gid, 16);
	p->path_mtu = 3;
	p->traffic_class = 0x18;
	p->hop_limit = 64;
	p->flow_label = 0x8f33e;
	p->local_ack_timeout = 14;
	p->retry_count = 7;
	p->rnr_retry_count = 6;
	p->remote_cm_response_timeout = 10; /* 4.19 ms */
	p->local_cm_response_timeout = 11;
	p->max_cm_retries = 3;
	p->private_data = "hello-req";
	p->private_len = 9;
}

struct dpv_cm_id *connect_ab(uint64_t service_id, struct dpv_cm_id **b_id)
{
	struct dpv_cm_req_param p;
	struct dpv_cm_id *a = dpv_cm_create_id(&sides[0].agent, NULL);

	sides[1].auto_rep = true;
	sides[0].auto_rtu = true;
	req_param(&p, 0, service_id);
	if (!a || dpv_cm_send_req(a, &p, now_ns))
		return NULL;
	pump();
	if (b_id)
		*b_id = last_ev(1) ? last_ev(1)->id : NULL;
	sides[1].auto_rep = false;
	sides[0].auto_rtu = false;
	return a;
}
