/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The CM runtime (lib/cmrt/dpv_cmrt.h): lib/cm's agent on the GSI QP. On
 * the built-in default configuration (dpv0 and dpv1 back to back, one
 * process), a runtime on each device, both polled by this thread:
 *   - B listens on the rdma_cm service ID of TCP port 7471; A sends a REQ
 *     to B's GID 1 (IPv4-mapped) with the rdma_cm IP header and more as
 *     private data: B gets the REQ event (A's QPN, PSN, GUID, GID and the
 *     private data intact), answers with a REP: A gets the REP event (B's
 *     QPN and private data), sends the RTU: B is ESTABLISHED;
 *   - A sends a DREQ: B gets it, answers with a DREP: A is DISCONNECTED,
 *     in TIMEWAIT, B in TIMEWAIT or already past it (it began with B's
 *     DREP), then both IDLE after the (short) TIMEWAIT;
 *   - a REQ to a service nobody listens on: A gets a REJ, reason 8
 *     (invalid service ID), over IPv4 (GID 1) and over IPv6 (GID 0: B
 *     answers to the GRH's IPv6 source);
 *   - the runtimes' and agents' counters agree.
 * With argument "lossy" (test cmrt_lossy, frames dropped): the same
 * exchanges complete through the agents' retransmissions.
 * Under a shared daemon (test shared_cmrt) the same on the daemon's QP 1:
 * the two runtimes are one process' (one comm-ID slot, two GSI QPs), and
 * the REJs for the unknown service come from the daemon's own endpoint;
 * with "hostile" (test shared_cmrt_hostile) after a process flooded it
 * (hostile_child); with "dead" (test shared_cmrt_dead) dead_requester only.
 * Every wait ends after 3 s with a CHECK failure. Uses libdpverbs.so's
 * exported API and the static lib/cmrt + lib/cm.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>

#include "dpv_cm_ip.h"
#include "dpv_cmrt.h"
#include "dpvt_check.h"
#include "dpvt_verbs.h"
#include "dpverbs.h"

#define WAIT_NS 3000000000ull

/* argv[1] "lossy" (run with DPVERBS_FAULT=drop=...): short CM timeouts and
 * more retries, so that retransmissions complete the exchanges within the
 * waits; the exact counter checks are skipped. */
static bool lossy;
/* under a shared daemon (DPV_SHARED_SOCK, set by test/shared/with_daemon.sh) */
static bool shared;

struct side {
	const char *name;
	struct dpv_cmrt *rt;
	unsigned int ev[DPV_CM_EV_TIMEWAIT_EXIT + 1];
	struct dpv_cm_id *last_id;
	uint8_t pd[DPV_MAD_SIZE]; /**< private data of the last event */
	size_t pd_len;
	uint16_t rej_reason;
	uint32_t qpn, psn;       /**< of the last REQ/REP received */
	uint64_t guid;
	uint8_t gid[16];         /**< sender of the last REQ */
};

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void on_event(void *arg, const struct dpv_cm_event *ev)
{
	struct side *s = arg;
	s->ev[ev->type]++;
	s->last_id = ev->id;
	if (ev->private_data && ev->private_len <= sizeof(s->pd)) {
		memcpy(s->pd, ev->private_data, ev->private_len);
		s->pd_len = ev->private_len;
	}
	if (ev->type == DPV_CM_EV_REJ)
		s->rej_reason = ev->rej_reason;
	if (ev->type == DPV_CM_EV_REQ) {
		s->qpn = ev->mad->req.local_qpn;
		s->psn = ev->mad->req.starting_psn;
		s->guid = ev->mad->req.local_ca_guid;
		memcpy(s->gid, ev->id->peer.gid, 16);
	} else if (ev->type == DPV_CM_EV_REP) {
		s->qpn = ev->mad->rep.local_qpn;
		s->psn = ev->mad->rep.starting_psn;
	}
}

/* Polls both runtimes until s has seen `count` events of `type` or 3 s. */
static bool wait_ev(struct side *a, struct side *b, struct side *s, enum dpv_cm_event_type type,
		    unsigned int count, const char *what)
{
	uint64_t end = now_ns() + WAIT_NS;
	while (s->ev[type] < count && now_ns() < end) {
		int ra = dpv_cmrt_poll(a->rt, now_ns()), rb = dpv_cmrt_poll(b->rt, now_ns());
		if (ra < 0 || rb < 0) {
			CHECK(0, "%s: poll %d %d", what, ra, rb);
			return false;
		}
	}
	CHECK(s->ev[type] >= count, "%s: %s has %u events of type %d after 3 s", what, s->name, s->ev[type],
	      (int)type);
	return s->ev[type] >= count;
}

static struct dpv_cm_req_param req_param(struct side *a, const uint8_t peer[16], uint64_t sid,
					 const uint8_t *pd, uint8_t len)
{
	struct dpv_cm_req_param p = {.service_id = sid, .qpn = 0x12345, .starting_psn = 0x6789a,
				     .responder_resources = 4, .initiator_depth = 4,
				     .peer = {.qpn = DPV_GSI_QPN, .qkey = DPV_GSI_QKEY}, .path_mtu = 3,
				     .hop_limit = 64, .local_ack_timeout = 14, .retry_count = 7,
				     .rnr_retry_count = 7, .remote_cm_response_timeout = lossy ? 13 : 18,
				     .local_cm_response_timeout = lossy ? 13 : 18,
				     .max_cm_retries = lossy ? 15 : 3,
				     .private_data = pd, .private_len = len};
	memcpy(p.peer.gid, peer, 16);
	CHECK(dpv_cmrt_local_gid(a->rt, peer, p.local_gid) == 0, "local GID of %s", a->name);
	return p;
}

static void connect_and_disconnect(struct side *a, struct side *b, const uint8_t gid_a[16],
				   const uint8_t gid_b[16], uint64_t sid)
{
	struct dpv_cm_id *lid = dpv_cm_listen(dpv_cmrt_agent(b->rt), sid, NULL);
	CHECK(lid != NULL, "listen: %s", strerror(errno));
	struct dpv_cma_hdr h, h2;
	dpv_cma_hdr_ipv4(&h, gid_a + 12, gid_b + 12, 40000);
	uint8_t pd[DPV_CMA_HDR_LEN + 8];
	CHECK(dpv_cma_hdr_encode(&h, pd, sizeof(pd)) == DPV_CMA_HDR_LEN, "cma header");
	memcpy(pd + DPV_CMA_HDR_LEN, "req-data", 8);
	struct dpv_cm_id *ia = dpv_cm_create_id(dpv_cmrt_agent(a->rt), NULL);
	struct dpv_cm_req_param p = req_param(a, gid_b, sid, pd, sizeof(pd));
	CHECK(ia && dpv_cm_send_req(ia, &p, now_ns()) == 0, "REQ sent");
	if (!ia || !wait_ev(a, b, b, DPV_CM_EV_REQ, 1, "REQ"))
		return;
	struct dpv_cm_id *ib = b->last_id;
	CHECK(b->qpn == 0x12345 && b->psn == 0x6789a, "REQ: QPN 0x%x PSN 0x%x", b->qpn, b->psn);
	CHECK(memcmp(b->gid, gid_a, 16) == 0, "REQ from A's IPv4-mapped GID");
	CHECK(b->pd_len >= sizeof(pd) && memcmp(b->pd, pd, sizeof(pd)) == 0, "REQ private data (%zu bytes)",
	      b->pd_len);
	CHECK(dpv_cma_hdr_decode(b->pd, b->pd_len, &h2) == DPV_CMA_HDR_LEN && h2.ip_version == 4 &&
	      h2.src_port == 40000 && memcmp(h2.src_addr + 12, gid_a + 12, 4) == 0, "cma header decoded");
	CHECK(ib->state == DPV_CM_REQ_RCVD && ib->remote_qpn == 0x12345, "B: %s", dpv_cm_state_name(ib->state));
	struct dpv_cm_rep_param rp = {.qpn = 0x54321, .starting_psn = 0xa9876, .responder_resources = 4,
				      .initiator_depth = 4, .rnr_retry_count = 7, .private_data = "rep-data",
				      .private_len = 8};
	CHECK(dpv_cm_send_rep(ib, &rp, now_ns()) == 0, "REP sent");
	if (!wait_ev(a, b, a, DPV_CM_EV_REP, 1, "REP"))
		return;
	CHECK(a->last_id == ia && a->qpn == 0x54321 && a->psn == 0xa9876, "REP: QPN 0x%x PSN 0x%x", a->qpn,
	      a->psn);
	CHECK(a->pd_len >= 8 && memcmp(a->pd, "rep-data", 8) == 0, "REP private data");
	CHECK(dpv_cm_send_rtu(ia, "rtu", 3) == 0 && ia->state == DPV_CM_ESTABLISHED, "RTU: A %s",
	      dpv_cm_state_name(ia->state));
	if (!wait_ev(a, b, b, DPV_CM_EV_ESTABLISHED, 1, "RTU"))
		return;
	CHECK(ib->state == DPV_CM_ESTABLISHED, "B: %s", dpv_cm_state_name(ib->state));
	CHECK(dpv_cm_send_dreq(ia, NULL, 0, now_ns()) == 0, "DREQ sent");
	if (!wait_ev(a, b, b, DPV_CM_EV_DREQ, 1, "DREQ"))
		return;
	CHECK(dpv_cm_send_drep(ib, NULL, 0, now_ns()) == 0, "DREP sent");
	if (!wait_ev(a, b, a, DPV_CM_EV_DISCONNECTED, 1, "DREP"))
		return;
	/* B's TIMEWAIT started when it sent its DREP and may be over by now: on a
	 * loaded machine more than timewait_ns can pass before A's poll sees the
	 * DREP, and under loss A's DISCONNECTED may come from its DREQ timing out
	 * (its retransmissions reach B's IDLE id, which ignores them, as Linux's
	 * cm_dreq_handler does). A's own TIMEWAIT runs only when A is polled. */
	bool b_done = ib->state == DPV_CM_IDLE && b->ev[DPV_CM_EV_TIMEWAIT_EXIT] == 1;
	CHECK(ia->state == DPV_CM_TIMEWAIT && (ib->state == DPV_CM_TIMEWAIT || b_done),
	      "TIMEWAIT: A %s, B %s (%u TIMEWAIT exits)", dpv_cm_state_name(ia->state),
	      dpv_cm_state_name(ib->state), b->ev[DPV_CM_EV_TIMEWAIT_EXIT]);
	wait_ev(a, b, a, DPV_CM_EV_TIMEWAIT_EXIT, 1, "A's TIMEWAIT ends");
	wait_ev(a, b, b, DPV_CM_EV_TIMEWAIT_EXIT, 1, "B's TIMEWAIT ends");
	CHECK(ia->state == DPV_CM_IDLE && ib->state == DPV_CM_IDLE, "IDLE");
}

static void reject_unknown_service(struct side *a, struct side *b, const uint8_t gid_b[16], uint64_t sid,
				   unsigned int nth)
{
	struct dpv_cm_id *ia = dpv_cm_create_id(dpv_cmrt_agent(a->rt), NULL);
	struct dpv_cm_req_param p = req_param(a, gid_b, sid, NULL, 0);
	CHECK(ia && dpv_cm_send_req(ia, &p, now_ns()) == 0, "REQ to an unknown service");
	if (ia && wait_ev(a, b, a, DPV_CM_EV_REJ, nth, "REJ"))
		CHECK(a->rej_reason == DPV_CM_REJ_INVALID_SERVICE_ID && ia->state == DPV_CM_IDLE,
		      "REJ reason %u, A %s", a->rej_reason, dpv_cm_state_name(ia->state));
}

static void check_counters(struct side *a, struct side *b)
{
	if (lossy) {
		const struct dpv_cm_stats *ca = &dpv_cmrt_agent(a->rt)->stats;
		printf("lossy: A's agent tx %lu, retransmits %lu\n", (unsigned long)ca->tx,
		       (unsigned long)ca->retransmits);
		return;
	}
	struct dpv_cmrt_stats sa, sb;
	CHECK(dpv_cmrt_stats(a->rt, &sa) == 0 && dpv_cmrt_stats(b->rt, &sb) == 0, "stats");
	const struct dpv_cm_stats *ca = &dpv_cmrt_agent(a->rt)->stats, *cb = &dpv_cmrt_agent(b->rt)->stats;
	/* A: REQ, RTU, DREQ, REQ, REQ; B: REP, DREP, REJ, REJ (no retransmission expected). In
	 * shared mode the daemon owns QP 1: it answers the two REQs for a service nobody
	 * listens on itself (B never sees them), and B's one AH is IPv4's */
	unsigned int rej = shared ? 2 : 0;
	CHECK(sa.tx == ca->tx && sb.tx == cb->tx, "tx: runtime %lu/%lu, agent %lu/%lu", (unsigned long)sa.tx,
	      (unsigned long)sb.tx, (unsigned long)ca->tx, (unsigned long)cb->tx);
	CHECK(sa.tx >= 5 && sb.tx + 2 * rej >= 4 && sa.rx == sb.tx + rej && sb.rx + rej == sa.tx,
	      "A tx %lu rx %lu, B tx %lu rx %lu", (unsigned long)sa.tx, (unsigned long)sa.rx, (unsigned long)sb.tx,
	      (unsigned long)sb.rx);
	CHECK(sa.rx == ca->rx && sb.rx == cb->rx, "rx: runtime and agent agree");
	CHECK(sa.rx_dropped == 0 && sb.rx_dropped == 0 && sa.tx_errors == 0 && sb.tx_errors == 0 &&
	      ca->rx_malformed == 0 && cb->rx_malformed == 0, "no drops or errors");
	CHECK(sa.ahs == 2 && sb.ahs == (shared ? 1u : 2u), "two cached AHs each, IPv4 and IPv6 (%lu, %lu)",
	      (unsigned long)sa.ahs, (unsigned long)sb.ahs);
}


/* Sends one REQ for sid with local comm ID lid from the raw GSI QP. */
static void raw_req(struct ibv_qp *qp, struct ibv_cq *cq, struct ibv_ah *ah, struct ibv_mr *mr, uint8_t *buf,
		    uint64_t sid, uint32_t lid)
{
	struct dpv_cm_mad m;
	dpv_cm_mad_init(&m, DPV_CM_ATTR_REQ, (uint64_t)2 << 32 | lid);
	m.req.local_comm_id = lid;
	m.req.service_id = sid;
	m.req.local_qpn = 0x111;
	m.req.starting_psn = 0x222;
	m.req.path_mtu = 3;
	m.req.remote_cm_response_timeout = 18;
	m.req.local_cm_response_timeout = 18;
	m.req.max_cm_retries = 3;
	CHECK(dpv_cm_mad_encode(&m, buf) == 0, "spoof: encode a REQ");
	struct ibv_sge sge = {.addr = (uintptr_t)buf, .length = DPV_MAD_SIZE, .lkey = mr->lkey};
	struct ibv_send_wr wr = {.sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED,
				 .wr.ud = {.ah = ah, .remote_qpn = 1, .remote_qkey = DPV_GSI_QKEY}}, *bad;
	struct ibv_wc wc;
	int n = 0;
	CHECK(ibv_post_send(qp, &wr, &bad) == 0, "spoof: post");
	for (uint64_t end = now_ns() + WAIT_NS; n == 0 && now_ns() < end;)
		n = ibv_poll_cq(cq, 1, &wc);
	CHECK(n == 1 && wc.status == IBV_WC_SUCCESS, "spoof: send completion");
}

/* The send filter: from its raw GSI QP on dpv1 the process sends two REQs to
 * its own listener on dpv0 (a runtime of the same process): one with a comm
 * ID of the daemon's range (slot 1), which the daemon must refuse to send,
 * and one with a comm ID of its own range, which must arrive. */
static void spoof_check(struct ibv_context *c0, struct ibv_qp *qp, struct ibv_cq *cq, struct ibv_ah *ah,
			struct ibv_mr *mr, uint8_t (*buf)[DPV_MAD_SIZE], uint32_t prefix)
{
	static struct side l = {.name = "L"};
	struct dpv_cmrt_cfg cfg = {.event = on_event, .arg = &l, .seed = 5};
	uint64_t sid = dpv_cma_service_id(0x0106, 7490);
	l.rt = dpv_cmrt_open(c0, &cfg);
	if (!CHECK(l.rt && dpv_cm_listen(dpv_cmrt_agent(l.rt), sid, NULL), "spoof: a listener on dpv0"))
		return;
	raw_req(qp, cq, ah, mr, buf[0], sid, 0x01000000u | 0x1234); /* the daemon's slot */
	raw_req(qp, cq, ah, mr, buf[1], sid, prefix | 0x5678);      /* its own */
	for (uint64_t end = now_ns() + 500000000ull; now_ns() < end;)
		dpv_cmrt_poll(l.rt, now_ns());
	CHECK(l.ev[DPV_CM_EV_REQ] == 1 && l.last_id && l.last_id->remote_id == (prefix | 0x5678),
	      "spoof: %u REQ(s) arrived (comm ID %#x): only the one of its own range", l.ev[DPV_CM_EV_REQ],
	      l.last_id ? l.last_id->remote_id : 0);
	dpv_cmrt_close(l.rt);
}

/* Shared mode, argument "hostile": a process that abuses the daemon's QP 1
 * before the ordinary exchanges run (in another process, which must not
 * notice): its GSI QP's comm-ID range is its own (not the daemon's slot 1),
 * a second GSI QP on the port and GSI_LISTEN on a QP that is not a GSI QP
 * are refused, a REQ with another process' comm ID is not sent (the send
 * filter, spoof_check), and it floods QP 1 of dpv0 with 3000 MADs: random bytes of
 * random lengths, and CM headers with random attributes and bodies (REQs
 * for random services, REJ/DREQ/RTU for random comm IDs). The daemon must
 * survive it: the exchanges that follow are the test's ordinary ones. */
static int hostile_child(void)
{
	struct ibv_context *c = dpvt_open_dev("dpv1");
	struct ibv_pd *pd = c ? ibv_alloc_pd(c) : NULL;
	struct ibv_cq *cq = pd ? ibv_create_cq(c, 128, NULL, NULL, 0) : NULL;
	struct ibv_qp_init_attr ia = {.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_UD,
				      .cap = {.max_send_wr = 64, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1}};
	struct ibv_qp *qp = cq ? dpv_create_gsi_qp(pd, &ia) : NULL;
	if (!CHECK(qp != NULL, "hostile: a GSI QP: %s", strerror(errno)))
		return 1;
	uint32_t prefix = 0, mask = 0;
	CHECK(dpv_gsi_comm_ids(qp, &prefix, &mask) == 0 && mask == 0xff000000u && (prefix >> 24) >= 2 &&
	      !(prefix & ~mask), "hostile: its comm-ID range %#x/%#x", prefix, mask);
	errno = 0;
	CHECK(dpv_create_gsi_qp(pd, &ia) == NULL && errno == EEXIST, "hostile: a second GSI QP: errno %d", errno);
	ia.cap.max_send_wr = 1;
	struct ibv_qp *ud = ibv_create_qp(pd, &ia);
	CHECK(ud && dpv_gsi_listen(ud, 0x0106000000001234ull, 1) == EINVAL, "hostile: listen on a plain UD QP");
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = DPV_GSI_QKEY};
	int rc = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY);
	a.qp_state = IBV_QPS_RTR;
	rc = rc ? rc : ibv_modify_qp(qp, &a, IBV_QP_STATE);
	a.qp_state = IBV_QPS_RTS;
	rc = rc ? rc : ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
	static uint8_t buf[64][DPV_MAD_SIZE];
	struct ibv_mr *mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	union ibv_gid g = {0};
	struct ibv_context *c0 = dpvt_open_dev("dpv0");
	CHECK(c0 && ibv_query_gid(c0, 1, 1, &g) == 0, "hostile: dpv0's GID 1");
	struct ibv_ah_attr aa = {.is_global = 1, .port_num = 1, .grh = {.dgid = g, .sgid_index = 1, .hop_limit = 64}};
	struct ibv_ah *ah = mr ? ibv_create_ah(pd, &aa) : NULL;
	if (!CHECK(rc == 0 && ah, "hostile: RTS, MR, AH"))
		return 1;
	spoof_check(c0, qp, cq, ah, mr, buf, prefix);
	uint64_t x = 0x9e3779b97f4a7c15ull;
	unsigned int sent = 0, done = 0;
	for (unsigned int i = 0; i < 3000; i++) {
		uint8_t *m = buf[i % 64];
		for (unsigned int k = 0; k < DPV_MAD_SIZE; k++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			m[k] = (uint8_t)x;
		}
		uint32_t len = DPV_MAD_SIZE;
		if (i % 3 == 0) { /* a CM header, a random CM attribute (0x10 .. 0x1a), a comm ID of its
				   * own range (so that what decodes passes the send filter) */
			m[0] = 1, m[1] = 0x07, m[2] = 2, m[3] = 3, m[16] = 0, m[17] = (uint8_t)(0x10 + x % 11);
			m[24] = (uint8_t)(prefix >> 24);
		} else if (i % 3 == 1) {
			len = (uint32_t)(x % DPV_MAD_SIZE);
		}
		struct ibv_sge sge = {.addr = (uintptr_t)m, .length = len, .lkey = mr->lkey};
		struct ibv_send_wr wr = {.wr_id = i, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
					 .send_flags = IBV_SEND_SIGNALED,
					 .wr.ud = {.ah = ah, .remote_qpn = 1, .remote_qkey = DPV_GSI_QKEY}}, *bad;
		while (sent - done >= 32) { /* the slot is reused only once its send completed */
			struct ibv_wc wc[16];
			int n = ibv_poll_cq(cq, 16, wc);
			done += n > 0 ? (unsigned int)n : 0;
		}
		if (ibv_post_send(qp, &wr, &bad) == 0)
			sent++;
	}
	CHECK(sent == 3000, "hostile: %u MADs sent to QP 1 of dpv0", sent);
	return 0; /* exit: the daemon reclaims the rest */
}

/* A child of dead_requester: connects to sid on dpv0 from dpv1 when told
 * (pipe go), as far as `established` says (REQ only, or REQ/REP/RTU, then
 * waits for the second word on go), then dies (_exit: SIGKILL-like, nothing
 * torn down by the process itself). */
static void dead_child(int go, uint64_t sid, bool established)
{
	static struct side c = {.name = "C"};
	char ch;
	struct ibv_context *cc = dpvt_open_dev("dpv1"), *c0 = dpvt_open_dev("dpv0");
	struct dpv_cmrt_cfg cfg = {.event = on_event, .arg = &c, .seed = established ? 6 : 3};
	union ibv_gid g;
	c.rt = cc ? dpv_cmrt_open(cc, &cfg) : NULL;
	if (!c.rt || !c0 || ibv_query_gid(c0, 1, 1, &g) != 0 || read(go, &ch, 1) != 1)
		_exit(1);
	struct dpv_cm_id *id = dpv_cm_create_id(dpv_cmrt_agent(c.rt), NULL);
	struct dpv_cm_req_param p = req_param(&c, g.raw, sid, NULL, 0);
	if (!id || dpv_cm_send_req(id, &p, now_ns()) != 0)
		_exit(1);
	uint64_t end = now_ns() + (established ? WAIT_NS : 200000000ull);
	while (now_ns() < end && !(established && c.ev[DPV_CM_EV_REP]))
		dpv_cmrt_poll(c.rt, now_ns());
	if (established) {
		if (!c.ev[DPV_CM_EV_REP] || dpv_cm_send_rtu(id, NULL, 0) != 0 || read(go, &ch, 1) != 1)
			_exit(1);
	}
	_exit(0);
}

/* Shared mode, argument "dead": what the daemon sends for the connections of
 * a process that dies, as Linux's CM does when it destroys its ids:
 *   - a process sends a REQ and dies before the answer: a REJ "timeout"
 *     with the CA GUID (comm ID 0, routed to the listener by the
 *     requester's comm ID); the listener gets it without answering;
 *   - a process with an established connection dies: a DREQ; the listener's
 *     id gets it (DREQ_RCVD) with no data traffic that could tell it
 *     otherwise. */
static void dead_requester(void)
{
	int go1[2], go2[2];
	char ch = 0;
	if (!CHECK(pipe(go1) == 0 && pipe(go2) == 0, "pipes"))
		return;
	uint64_t sid1 = dpv_cma_service_id(0x0106, 7480), sid2 = dpv_cma_service_id(0x0106, 7481);
	pid_t p1 = fork(); /* both before this process opens anything */
	if (p1 == 0)
		dead_child(go1[0], sid1, false);
	pid_t p2 = p1 > 0 ? fork() : -1;
	if (p2 == 0)
		dead_child(go2[0], sid2, true);
	static struct side l = {.name = "L"};
	struct ibv_context *cl = dpvt_open_dev("dpv0");
	struct dpv_cmrt_cfg cfg = {.event = on_event, .arg = &l, .seed = 4};
	l.rt = cl ? dpv_cmrt_open(cl, &cfg) : NULL;
	struct dpv_cm_agent *ag = l.rt ? dpv_cmrt_agent(l.rt) : NULL;
	bool lis = ag && dpv_cm_listen(ag, sid1, NULL) && dpv_cm_listen(ag, sid2, NULL);
	CHECK(lis && p1 > 0 && p2 > 0 && write(go1[1], &ch, 1) == 1, "dead: two listeners, two children");
	int st = 0;
	if (lis && wait_ev(&l, &l, &l, DPV_CM_EV_REQ, 1, "dead: the REQ")) {
		struct dpv_cm_id *id = l.last_id;
		CHECK(waitpid(p1, &st, 0) == p1 && WIFEXITED(st) && WEXITSTATUS(st) == 0,
		      "dead: the requester exited (%#x)", st);
		p1 = -1;
		if (wait_ev(&l, &l, &l, DPV_CM_EV_REJ, 1, "dead: the daemon's REJ"))
			CHECK(l.rej_reason == DPV_CM_REJ_TIMEOUT && l.last_id == id && id->state == DPV_CM_IDLE,
			      "dead: REJ reason %u (timeout: 4), the id %s", l.rej_reason,
			      dpv_cm_state_name(id->state));
	}
	if (lis && write(go2[1], &ch, 1) == 1 && wait_ev(&l, &l, &l, DPV_CM_EV_REQ, 2, "dead: the second REQ")) {
		struct dpv_cm_id *id = l.last_id;
		struct dpv_cm_rep_param r = {.qpn = 0x2468, .starting_psn = 0x1357, .rnr_retry_count = 7};
		CHECK(dpv_cm_send_rep(id, &r, now_ns()) == 0, "dead: REP");
		if (wait_ev(&l, &l, &l, DPV_CM_EV_ESTABLISHED, 1, "dead: ESTABLISHED")) {
			CHECK(write(go2[1], &ch, 1) == 1 && waitpid(p2, &st, 0) == p2 && WIFEXITED(st) &&
			      WEXITSTATUS(st) == 0, "dead: the connected process exited (%#x)", st);
			p2 = -1;
			if (wait_ev(&l, &l, &l, DPV_CM_EV_DREQ, 1, "dead: the daemon's DREQ"))
				CHECK(id->state == DPV_CM_DREQ_RCVD, "dead: the id %s", dpv_cm_state_name(id->state));
		}
	}
	if (p1 > 0)
		waitpid(p1, &st, 0);
	if (p2 > 0) {
		kill(p2, SIGKILL);
		waitpid(p2, &st, 0);
	}
	dpv_cmrt_close(l.rt);
	if (cl)
		ibv_close_device(cl);
}

int main(int argc, char **argv)
{
	lossy = argc > 1 && strcmp(argv[1], "lossy") == 0;
	shared = getenv("DPV_SHARED_SOCK") != NULL;
	if (shared && argc > 1 && strcmp(argv[1], "dead") == 0) {
		dead_requester();
		return dpvt_finish();
	}
	if (shared && argc > 1 && strcmp(argv[1], "hostile") == 0) {
		pid_t pid = fork(); /* before this process opens anything */
		if (pid == 0)
			exit(hostile_child() == 0 && dpvt_finish() == 0 ? 0 : 1);
		int st = 0;
		CHECK(pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0,
		      "the hostile process: status %#x", st);
	}
	struct ibv_context *ca = dpvt_open_dev("dpv0"), *cb = dpvt_open_dev("dpv1");
	if (!ca || !cb) {
		CHECK(0, "devices");
		return dpvt_finish();
	}
	static struct side a = {.name = "A"}, b = {.name = "B"};
	struct dpv_cmrt_cfg cfg = {.event = on_event, .arg = &a, .timewait_ns = 50000000, .seed = 1};
	errno = 0;
	CHECK(dpv_cmrt_open(NULL, &cfg) == NULL && errno == EINVAL, "NULL context: errno %d", errno);
	a.rt = dpv_cmrt_open(ca, &cfg);
	cfg.arg = &b;
	cfg.seed = 2;
	b.rt = dpv_cmrt_open(cb, &cfg);
	CHECK(a.rt && b.rt, "a runtime on each device: %s", strerror(errno));
	if (a.rt && b.rt) {
		errno = 0;
		CHECK(dpv_cmrt_open(cb, &cfg) == NULL && errno == EEXIST, "a second runtime on dpv1: errno %d",
		      errno);
		union ibv_gid ga, gb;
		CHECK(ibv_query_gid(ca, 1, 1, &ga) == 0 && ibv_query_gid(cb, 1, 1, &gb) == 0, "GID 1");
		connect_and_disconnect(&a, &b, ga.raw, gb.raw, dpv_cma_service_id(0x0106, 7471));
		reject_unknown_service(&a, &b, gb.raw, dpv_cma_service_id(0x0106, 7472), 1);
		/* over IPv6 (GID 0): the sender's GID is the GRH's source */
		CHECK(ibv_query_gid(cb, 1, 0, &gb) == 0, "GID 0");
		reject_unknown_service(&a, &b, gb.raw, dpv_cma_service_id(0x0106, 7473), 2);
		check_counters(&a, &b);
	}
	dpv_cmrt_close(a.rt);
	dpv_cmrt_close(b.rt);
	ibv_close_device(ca);
	ibv_close_device(cb);
	return dpvt_finish();
}
