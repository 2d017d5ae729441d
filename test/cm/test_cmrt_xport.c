/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_cmrt_xport: lib/cmrt's runtime on a caller's transport
 * (dpv_cmrt_xport.h) and its stateless answerer (dpv_cmrt_answer.h), with
 * no verbs: linked with lib/cmrt's core and lib/cm only.
 *   - the answerer gives, byte for byte, what a runtime with no listener
 *     and no id sends for every CM MAD (REQ: REJ 8, DREQ: DREP, SIDR_REQ:
 *     SIDR_REP "unsupported", nothing for the others), and nothing for a
 *     malformed MAD or LAP;
 *   - two runtimes joined by an in-memory transport connect (REQ, REP,
 *     RTU), disconnect (DREQ, DREP) and leave TIMEWAIT by dpv_cmrt_timer at
 *     dpv_cmrt_next_deadline; the listen hook sees the listener;
 *   - dpv_cmrt_input_grh takes the sender from an IPv6 GRH or the IPv4
 *     header at 20, and drops a buffer too short or with neither;
 *   - dpv_cmrt_abandon sends what Linux's cm_destroy_id sends per state;
 *   - the counters: tx, tx_full (-EAGAIN), tx_errors, rx, rx_dropped.
 */
#include <errno.h>
#include <string.h>

#include "dpv_cmrt.h"
#include "dpvt_check.h"

#define SID 0x0000000001064853ull
#define GUID_A 0x0002c90300001111ull
#define GUID_B 0x0002c90300002222ull
#define QMAX 16

struct msg {
	int to;                           /* side */
	uint8_t gid[16];
	uint32_t qpn;
	uint8_t mad[DPV_CMRT_MAD_SIZE];
};

struct side {
	struct dpv_cmrt *rt;
	uint8_t gid[16];
	int send_rc;                      /* what the transport answers */
	int listens;                      /* listen hook: on - off */
	int refuse;                       /* listen hook's answer to on */
	struct dpv_cm_id *last_id;
	int ev[16];                       /* events by type */
};

static struct side g_side[2];
static struct msg g_q[QMAX];
static int g_nq;
static uint64_t g_now = 1000000000ull;

static int side_of(struct side *s)
{
	return s == &g_side[0] ? 0 : 1;
}

static int xp_send(void *arg, const uint8_t gid[16], uint32_t qpn, const uint8_t mad[DPV_CMRT_MAD_SIZE])
{
	struct side *s = arg;
	if (s->send_rc)
		return s->send_rc;
	if (!CHECK(g_nq < QMAX, "transport queue overflow"))
		return -EAGAIN;
	struct msg *m = &g_q[g_nq++];
	m->to = !side_of(s);
	memcpy(m->gid, gid, 16);
	m->qpn = qpn;
	memcpy(m->mad, mad, DPV_CMRT_MAD_SIZE);
	return 0;
}

static int xp_listen(void *arg, uint64_t service_id, bool on)
{
	struct side *s = arg;
	(void)service_id;
	if (on && s->refuse)
		return s->refuse;
	s->listens += on ? 1 : -1;
	return 0;
}

static void on_event(void *arg, const struct dpv_cm_event *ev)
{
	struct side *s = arg;
	s->ev[ev->type]++;
	s->last_id = ev->id;
	if (ev->type == DPV_CM_EV_REQ) {
		struct dpv_cm_rep_param rp = {.qpn = 0x22, .starting_psn = 0x200, .rnr_retry_count = 7};
		CHECK_EQ(dpv_cm_send_rep(ev->id, &rp, g_now), 0, "REP from the REQ event");
	} else if (ev->type == DPV_CM_EV_REP) {
		CHECK_EQ(dpv_cm_send_rtu(ev->id, NULL, 0), 0, "RTU from the REP event");
	} else if (ev->type == DPV_CM_EV_DREQ) {
		CHECK_EQ(dpv_cm_send_drep(ev->id, NULL, 0, g_now), 0, "DREP from the DREQ event");
	}
}

/* Delivers the queue (and what the deliveries send) by dpv_cmrt_input. */
static void pump(void)
{
	for (int n = 0; g_nq && n < 64; n++) {
		struct msg m = g_q[0];
		memmove(&g_q[0], &g_q[1], (size_t)--g_nq * sizeof(g_q[0]));
		struct side *to = &g_side[m.to];
		CHECK(memcmp(m.gid, to->gid, 16) == 0, "sent to the peer's GID");
		CHECK(m.qpn == 1, "sent to QP 1 (%u)", m.qpn);
		CHECK_EQ(dpv_cmrt_input(to->rt, g_side[!m.to].gid, 1, m.mad, sizeof(m.mad), g_now), 0, "input");
	}
}

static struct dpv_cmrt *open_side(int i, uint64_t guid, void (*event)(void *, const struct dpv_cm_event *))
{
	struct side *s = &g_side[i];
	memset(s, 0, sizeof(*s));
	memset(s->gid, 0xa0 + i, 16);
	struct dpv_cmrt_xport_cfg cfg = {.ca_guid = guid, .timewait_ns = 1000000, .seed = 7 + (uint64_t)i,
					 .event = event, .event_arg = s};
	struct dpv_cmrt_xport xp = {.send = xp_send, .listen = xp_listen, .arg = s};
	s->rt = dpv_cmrt_open_xport(&cfg, &xp);
	CHECK(s->rt != NULL, "open side %d: errno %d", i, errno);
	return s->rt;
}

static void close_sides(void)
{
	dpv_cmrt_close(g_side[0].rt);
	dpv_cmrt_close(g_side[1].rt);
	g_side[0].rt = g_side[1].rt = NULL;
	g_nq = 0;
}

static void encode(struct dpv_cm_mad *m, uint8_t out[DPV_MAD_SIZE])
{
	CHECK_EQ(dpv_cm_mad_encode(m, out), 0, "encode");
}

/* The MADs a peer may send to a port that owns nothing. */
static int sample_mads(uint8_t mads[][DPV_MAD_SIZE])
{
	uint16_t attrs[] = {DPV_CM_ATTR_REQ, DPV_CM_ATTR_MRA, DPV_CM_ATTR_REJ, DPV_CM_ATTR_REP, DPV_CM_ATTR_RTU,
			    DPV_CM_ATTR_DREQ, DPV_CM_ATTR_DREP, DPV_CM_ATTR_SIDR_REQ, DPV_CM_ATTR_SIDR_REP};
	int n = 0;
	for (unsigned int i = 0; i < sizeof(attrs) / sizeof(attrs[0]); i++) {
		struct dpv_cm_mad m;
		dpv_cm_mad_init(&m, attrs[i], 0x1234567800000000ull | i);
		switch (attrs[i]) {
		case DPV_CM_ATTR_REQ:
			m.req.local_comm_id = 0x11223344;
			m.req.service_id = SID;
			m.req.local_qpn = 0x99;
			m.req.transport_service_type = DPV_CM_TST_RC;
			break;
		case DPV_CM_ATTR_DREQ:
			m.dreq.local_comm_id = 0x55;
			m.dreq.remote_comm_id = 0x66;
			m.dreq.remote_qpn_eecn = 0x77;
			break;
		case DPV_CM_ATTR_SIDR_REQ:
			m.sidr_req.request_id = 0x88;
			m.sidr_req.service_id = SID;
			break;
		default:
			m.rep.local_comm_id = 0x1;
			m.rep.remote_comm_id = 0x2;
			break;
		}
		encode(&m, mads[n++]);
	}
	return n;
}

static void test_answer(void)
{
	uint8_t mads[9][DPV_MAD_SIZE], out[DPV_CMRT_MAD_SIZE];
	int n = sample_mads(mads), answered = 0;
	struct dpv_cmrt *rt = open_side(0, GUID_A, NULL); /* no listener, no id, no events */
	if (!rt)
		return;
	for (int i = 0; i < n; i++) {
		g_nq = 0;
		int a = dpv_cmrt_answer(mads[i], DPV_MAD_SIZE, out);
		CHECK_EQ(dpv_cmrt_input(rt, g_side[1].gid, 1, mads[i], DPV_MAD_SIZE, g_now), 0, "input");
		CHECK(a == (g_nq == 1), "MAD %d: answer %d, the runtime sent %d", i, a, g_nq);
		if (a == 1 && g_nq == 1) {
			answered++;
			CHECK(memcmp(out, g_q[0].mad, DPV_MAD_SIZE) == 0, "MAD %d: the runtime's bytes", i);
		}
	}
	CHECK_EQ(answered, 3, "REQ, DREQ and SIDR_REQ answered");
	struct dpv_cm_mad m;
	CHECK(dpv_cmrt_answer(mads[0], DPV_MAD_SIZE, out) == 1 && dpv_cm_mad_decode(out, DPV_MAD_SIZE, &m) == 0 &&
	      m.hdr.attr_id == DPV_CM_ATTR_REJ && m.rej.reason == DPV_CM_REJ_INVALID_SERVICE_ID &&
	      m.rej.remote_comm_id == 0x11223344 && m.rej.local_comm_id == 0 &&
	      m.rej.message_rejected == DPV_CM_MSG_REQ && m.hdr.tid == 0x1234567800000000ull,
	      "REQ -> REJ 8");
	CHECK(dpv_cmrt_answer(mads[5], DPV_MAD_SIZE, out) == 1 && dpv_cm_mad_decode(out, DPV_MAD_SIZE, &m) == 0 &&
	      m.hdr.attr_id == DPV_CM_ATTR_DREP && m.drep.local_comm_id == 0x66 && m.drep.remote_comm_id == 0x55,
	      "DREQ -> DREP");
	CHECK(dpv_cmrt_answer(mads[7], DPV_MAD_SIZE, out) == 1 && dpv_cm_mad_decode(out, DPV_MAD_SIZE, &m) == 0 &&
	      m.hdr.attr_id == DPV_CM_ATTR_SIDR_REP && m.sidr_rep.status == DPV_CM_SIDR_UNSUPPORTED &&
	      m.sidr_rep.request_id == 0x88 && m.sidr_rep.service_id == SID,
	      "SIDR_REQ -> SIDR_REP unsupported");
	CHECK_EQ(dpv_cmrt_answer((const uint8_t *)"x", 1, out), -EBADMSG, "1 byte: malformed");
	CHECK_EQ(dpv_cmrt_answer(NULL, 256, out), -EINVAL, "NULL MAD");
	uint8_t lap[DPV_MAD_SIZE] = {0};
	dpv_mad_hdr_encode(&(struct dpv_mad_hdr){1, 7, 2, 3, 0, 0, 1, DPV_CM_ATTR_LAP, 0}, lap);
	CHECK_EQ(dpv_cmrt_answer(lap, sizeof(lap), out), -EOPNOTSUPP, "LAP unsupported");
	uint8_t other[DPV_MAD_SIZE];
	memcpy(other, mads[0], sizeof(other));
	other[1] = 0x81; /* another management class */
	CHECK(dpv_cmrt_answer(other, sizeof(other), out) < 0, "another class: no answer");
	close_sides();
}

static void test_connect(void)
{
	struct side *a = &g_side[0], *b = &g_side[1];
	if (!open_side(0, GUID_A, on_event) || !open_side(1, GUID_B, on_event))
		return;
	b->refuse = -EADDRINUSE;
	errno = 0;
	CHECK(dpv_cm_listen(dpv_cmrt_agent(b->rt), SID, NULL) == NULL && errno == EADDRINUSE,
	      "the listen hook refuses: errno %d", errno);
	b->refuse = 0;
	struct dpv_cm_id *lis = dpv_cm_listen(dpv_cmrt_agent(b->rt), SID, NULL);
	CHECK(lis != NULL && b->listens == 1, "listener, hook told");
	struct dpv_cm_id *id = dpv_cm_create_id(dpv_cmrt_agent(a->rt), NULL);
	struct dpv_cm_req_param p = {.service_id = SID, .qpn = 0x11, .starting_psn = 0x100,
				     .remote_cm_response_timeout = 10, .local_cm_response_timeout = 10,
				     .max_cm_retries = 3, .retry_count = 7, .rnr_retry_count = 7, .path_mtu = 3};
	memcpy(p.peer.gid, b->gid, 16);
	p.peer.qpn = 1;
	memcpy(p.local_gid, a->gid, 16);
	CHECK(id && dpv_cm_send_req(id, &p, g_now) == 0, "REQ sent");
	CHECK(dpv_cmrt_next_deadline(a->rt) == g_now + dpv_cm_timeout_ns(10), "REQ retransmission deadline");
	pump();
	CHECK(id && id->state == DPV_CM_ESTABLISHED, "active side ESTABLISHED");
	CHECK(b->ev[DPV_CM_EV_ESTABLISHED] == 1 && b->last_id && b->last_id->state == DPV_CM_ESTABLISHED,
	      "passive side ESTABLISHED");
	CHECK(id && id->remote_ca_guid == GUID_B, "the REP carries B's CA GUID");
	CHECK_EQ(dpv_cmrt_next_deadline(a->rt), DPV_CMRT_NO_DEADLINE, "nothing to retransmit");
	CHECK(id && dpv_cm_send_dreq(id, NULL, 0, g_now) == 0, "DREQ sent");
	pump();
	CHECK(id && id->state == DPV_CM_TIMEWAIT && a->ev[DPV_CM_EV_DISCONNECTED] == 1, "A in TIMEWAIT");
	uint64_t t = dpv_cmrt_next_deadline(a->rt);
	CHECK(t == g_now + 1000000, "TIMEWAIT deadline");
	CHECK_EQ(dpv_cmrt_timer(a->rt, t - 1), 0, "not yet");
	CHECK(dpv_cmrt_timer(a->rt, t) >= 1 && id->state == DPV_CM_IDLE, "TIMEWAIT over");
	CHECK_EQ(dpv_cmrt_timer(NULL, t), -EINVAL, "NULL rt");
	struct dpv_cmrt_stats sa, sb;
	CHECK(dpv_cmrt_stats(a->rt, &sa) == 0 && dpv_cmrt_stats(b->rt, &sb) == 0, "stats");
	CHECK(sa.tx == 3 && sa.rx == 2 && sb.tx == 2 && sb.rx == 3, "A tx %llu rx %llu, B tx %llu rx %llu",
	      (unsigned long long)sa.tx, (unsigned long long)sa.rx, (unsigned long long)sb.tx,
	      (unsigned long long)sb.rx);
	dpv_cm_destroy_id(lis);
	CHECK_EQ(b->listens, 0, "listener gone, hook told");
	/* the transport's errors */
	a->send_rc = -EAGAIN;
	struct dpv_cm_id *id2 = dpv_cm_create_id(dpv_cmrt_agent(a->rt), NULL);
	CHECK(id2 && dpv_cm_send_req(id2, &p, g_now) == -EAGAIN, "queue full");
	a->send_rc = -ENETUNREACH;
	CHECK(dpv_cmrt_timer(a->rt, dpv_cmrt_next_deadline(a->rt)) >= 1, "retransmission");
	CHECK(dpv_cmrt_stats(a->rt, &sa) == 0 && sa.tx_full == 1 && sa.tx_errors == 1, "tx_full %llu tx_errors %llu",
	      (unsigned long long)sa.tx_full, (unsigned long long)sa.tx_errors);
	close_sides();
}

static void test_grh(void)
{
	if (!open_side(0, GUID_A, NULL))
		return;
	uint8_t mads[9][DPV_MAD_SIZE], buf[40 + DPV_MAD_SIZE];
	sample_mads(mads);
	memset(buf, 0, sizeof(buf));
	buf[0] = 0x60; /* IPv6 */
	memset(buf + 8, 0xfe, 16);
	memcpy(buf + 40, mads[0], DPV_MAD_SIZE);
	g_nq = 0;
	CHECK_EQ(dpv_cmrt_input_grh(g_side[0].rt, 1, buf, sizeof(buf), g_now), 0, "IPv6 GRH");
	uint8_t want6[16];
	memset(want6, 0xfe, 16);
	CHECK(g_nq == 1 && memcmp(g_q[0].gid, want6, 16) == 0, "the REJ goes to the GRH's source");
	memset(buf, 0, 40);
	buf[20] = 0x45; /* IPv4 at 20, source 10.0.0.9 */
	buf[32] = 10, buf[35] = 9;
	g_nq = 0;
	CHECK_EQ(dpv_cmrt_input_grh(g_side[0].rt, 1, buf, sizeof(buf), g_now), 0, "IPv4 header");
	static const uint8_t want4[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 9};
	CHECK(g_nq == 1 && memcmp(g_q[0].gid, want4, 16) == 0, "the REJ goes to the IPv4-mapped source");
	memset(buf, 0, 40);
	CHECK_EQ(dpv_cmrt_input_grh(g_side[0].rt, 1, buf, sizeof(buf), g_now), -EPROTO, "no IP header");
	CHECK_EQ(dpv_cmrt_input_grh(g_side[0].rt, 1, buf, 40, g_now), -EPROTO, "GRH only");
	struct dpv_cmrt_stats st;
	CHECK(dpv_cmrt_stats(g_side[0].rt, &st) == 0 && st.rx == 2 && st.rx_dropped == 2, "rx %llu dropped %llu",
	      (unsigned long long)st.rx, (unsigned long long)st.rx_dropped);
	CHECK_EQ(dpv_cmrt_input_grh(NULL, 1, buf, sizeof(buf), g_now), -EINVAL, "NULL rt");
	close_sides();
}

static void test_abandon(void)
{
	if (!open_side(0, GUID_A, NULL))
		return;
	static const struct {
		enum dpv_cmrt_orphan_state st;
		uint16_t attr, reason;
		uint8_t msg;
		uint32_t local, remote;
	} t[] = {
		{DPV_CMRT_ORPHAN_ESTABLISHED, DPV_CM_ATTR_DREQ, 0, 0, 0x0a000001, 0x77},
		{DPV_CMRT_ORPHAN_REQ_RCVD, DPV_CM_ATTR_REJ, DPV_CM_REJ_CONSUMER_DEFINED, DPV_CM_MSG_REQ, 0, 0x77},
		{DPV_CMRT_ORPHAN_REP_SENT, DPV_CM_ATTR_REJ, DPV_CM_REJ_CONSUMER_DEFINED, DPV_CM_MSG_REP, 0x0a000001, 0x77},
		{DPV_CMRT_ORPHAN_REP_RCVD, DPV_CM_ATTR_REJ, DPV_CM_REJ_CONSUMER_DEFINED, DPV_CM_MSG_REP, 0x0a000001, 0x77},
		{DPV_CMRT_ORPHAN_REQ_SENT, DPV_CM_ATTR_REJ, DPV_CM_REJ_TIMEOUT, DPV_CM_MSG_REQ, 0x0a000001, 0},
	};
	for (unsigned int i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct dpv_cmrt_orphan o = {.state = t[i].st, .local_id = t[i].st == DPV_CMRT_ORPHAN_REQ_RCVD ? 0 : 0x0a000001,
					    .remote_id = t[i].st == DPV_CMRT_ORPHAN_REQ_SENT ? 0 : 0x77, .remote_qpn = 0x99};
		memset(o.gid, 0xb1, 16);
		g_nq = 0;
		struct dpv_cm_mad m;
		CHECK(dpv_cmrt_abandon(g_side[0].rt, &o) == 0 && g_nq == 1 &&
		      dpv_cm_mad_decode(g_q[0].mad, DPV_MAD_SIZE, &m) == 0, "case %u sent", i);
		if (g_nq != 1)
			continue;
		CHECK(g_q[0].gid[0] == 0xb1 && g_q[0].qpn == 1, "case %u: to QP 1 of the peer", i);
		CHECK(m.hdr.attr_id == t[i].attr, "case %u: attribute %#x", i, m.hdr.attr_id);
		CHECK(m.hdr.tid == (2ull << 32 | (o.local_id ? o.local_id : o.remote_id)), "case %u: TID", i);
		if (t[i].attr == DPV_CM_ATTR_DREQ) {
			CHECK(m.dreq.local_comm_id == t[i].local && m.dreq.remote_comm_id == t[i].remote &&
			      m.dreq.remote_qpn_eecn == 0x99, "DREQ fields");
			continue;
		}
		CHECK(m.rej.local_comm_id == t[i].local && m.rej.remote_comm_id == t[i].remote &&
		      m.rej.reason == t[i].reason && m.rej.message_rejected == t[i].msg,
		      "case %u: REJ local %#x remote %#x reason %u msg %u", i, m.rej.local_comm_id,
		      m.rej.remote_comm_id, m.rej.reason, m.rej.message_rejected);
		if (t[i].reason == DPV_CM_REJ_TIMEOUT) {
			uint64_t g = 0;
			for (int k = 0; k < 8; k++)
				g = g << 8 | m.rej.ari[k];
			CHECK(m.rej.ari_length == 8 && g == GUID_A, "REJ timeout: our CA GUID as ARI");
		}
	}
	struct dpv_cmrt_orphan bad = {.state = (enum dpv_cmrt_orphan_state)9};
	CHECK_EQ(dpv_cmrt_abandon(g_side[0].rt, &bad), -EINVAL, "unknown state");
	CHECK_EQ(dpv_cmrt_abandon(NULL, &bad), -EINVAL, "NULL rt");
	close_sides();
}

int main(void)
{
	errno = 0;
	CHECK(dpv_cmrt_open_xport(NULL, NULL) == NULL && errno == EINVAL, "NULL: EINVAL");
	errno = 0;
	CHECK(dpv_cmrt_open_xport(&(struct dpv_cmrt_xport_cfg){0}, &(struct dpv_cmrt_xport){0}) == NULL &&
	      errno == EINVAL, "no send callback: EINVAL");
	CHECK_EQ(dpv_cmrt_next_deadline(NULL), DPV_CMRT_NO_DEADLINE, "NULL rt: no deadline");
	dpv_cmrt_close(NULL);
	test_answer();
	test_connect();
	test_grh();
	test_abandon();
	return dpvt_finish();
}
