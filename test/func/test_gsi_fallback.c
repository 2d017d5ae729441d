/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The port's own CM when no GSI QP is there (drivers/sw/sw_gsi_fb.c): on the
 * built-in default configuration (dpv0 and dpv1 back to back, one process),
 * dpv0 has a GSI QP, dpv1 has none, and MADs from dpv0's GSI QP to QP 1 of
 * dpv1 are answered as a Linux host's kernel CM answers them:
 *   - REQ to a service nobody listens on: REJ, reason 8 (invalid service
 *     ID), message rejected REQ, remote comm ID = the REQ's local comm ID,
 *     local comm ID 0, the same TID, from source QP 1 (over IPv4 and IPv6);
 *   - SIDR_REQ: SIDR_REP status 1 (unsupported), the request ID and
 *     service ID echoed;
 *   - DREQ for an unknown connection: DREP with the comm IDs swapped;
 *   - REP for an unknown connection, a MAD of another class, garbage: no
 *     answer; each counted (drop "gsi_unanswered" in the stats snapshot);
 *     the answers counted as "cm_fallback_reply";
 *   - once dpv1 has a GSI QP, it gets the REQ, and no answer comes from the
 *     fallback; destroyed again, the fallback answers again;
 *   - a flood of 200 REQs gets at most the rate limit's burst of answers
 *     (32) plus what the rate refills (not all 200).
 */
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <fcntl.h>
#include <unistd.h>
#include <time.h>

#include "dpv_cm_mad.h"
#include "dpv_stats.h"
#include "dpvt_check.h"
#include "dpvt_verbs.h"
#include "dpverbs.h"

#define GRH_LEN 40
#define RSLOT (GRH_LEN + DPV_MAD_SIZE)
#define NRECV 8

static struct dpvt_ep g_a, g_b;
static struct ibv_qp *g_ga;
static struct ibv_ah *g_ah;

static struct ibv_qp *gsi_new(struct dpvt_ep *e)
{
	struct ibv_qp_init_attr a = {.send_cq = e->scq, .recv_cq = e->rcq, .qp_type = IBV_QPT_UD,
				     .cap = {.max_send_wr = 256, .max_recv_wr = 64, .max_send_sge = 1,
					     .max_recv_sge = 1}};
	struct ibv_qp *qp = dpv_create_gsi_qp(e->pd, &a);
	if (qp && dpvt_ud_to_rts(qp, DPV_GSI_QKEY) != 0) {
		ibv_destroy_qp(qp);
		return NULL;
	}
	return qp;
}

static void send_mad(const uint8_t mad[DPV_MAD_SIZE], uint64_t wr_id)
{
	memcpy(g_a.buf + 4096, mad, DPV_MAD_SIZE);
	CHECK(dpvt_post_ud_send(g_ga, g_ah, 1, DPV_GSI_QKEY, wr_id, g_a.mr, 4096, DPV_MAD_SIZE, IBV_SEND_SIGNALED) == 0,
	      "post send %llu", (unsigned long long)wr_id);
	struct ibv_wc wc;
	CHECK(dpvt_poll_n(g_a.scq, &wc, 1, 3000) == 1 && wc.status == IBV_WC_SUCCESS, "send completion");
}

static void post_recvs(void)
{
	for (uint32_t i = 0; i < NRECV; i++)
		CHECK(dpvt_post_recv(g_ga, g_a.mr, i, (size_t)i * RSLOT, RSLOT) == 0, "post recv %u", i);
}

/* The next answer on dpv0's GSI QP, decoded (false: none within ms). */
static bool answer(struct dpv_cm_mad *m, unsigned int ms)
{
	struct ibv_wc wc;
	if (dpvt_poll_n(g_a.rcq, &wc, 1, ms) != 1)
		return false;
	CHECK(wc.status == IBV_WC_SUCCESS && wc.src_qp == 1 && wc.byte_len == RSLOT,
	      "answer: status %d, source QP %u, %u bytes", (int)wc.status, wc.src_qp, wc.byte_len);
	const uint8_t *b = g_a.buf + (size_t)wc.wr_id * RSLOT;
	int e = dpv_cm_mad_decode(b + GRH_LEN, DPV_MAD_SIZE, m);
	CHECK(e == 0, "answer decodes: %d", e);
	CHECK(dpvt_post_recv(g_ga, g_a.mr, wc.wr_id, (size_t)wc.wr_id * RSLOT, RSLOT) == 0, "repost");
	return e == 0;
}

static void req_mad(uint8_t out[DPV_MAD_SIZE], uint32_t comm_id, uint64_t tid)
{
	struct dpv_cm_mad m;
	dpv_cm_mad_init(&m, DPV_CM_ATTR_REQ, tid);
	m.req.local_comm_id = comm_id;
	m.req.service_id = 0x0106000000004e21ull; /* RDMA_PS_TCP port 20001 */
	m.req.local_ca_guid = 0x1122334455667788ull;
	m.req.local_qpn = 0x123;
	m.req.starting_psn = 0x4567;
	m.req.path_mtu = 3;
	m.req.pkey = 0xffff;
	m.req.max_cm_retries = 15;
	m.req.local_cm_response_timeout = 20;
	m.req.remote_cm_response_timeout = 20;
	CHECK(dpv_cm_mad_encode(&m, out) == 0, "encode REQ");
}

static void check_rej(uint32_t comm_id, uint64_t tid)
{
	struct dpv_cm_mad m;
	bool got = answer(&m, 3000);
	CHECK(got, "REQ to dpv1 (no GSI QP) answered");
	if (!got)
		return;
	CHECK(m.hdr.attr_id == DPV_CM_ATTR_REJ, "a REJ (attr 0x%x)", m.hdr.attr_id);
	CHECK(m.hdr.tid == tid, "REJ TID 0x%llx", (unsigned long long)m.hdr.tid);
	CHECK(m.rej.reason == DPV_CM_REJ_INVALID_SERVICE_ID, "REJ reason %u (8)", m.rej.reason);
	CHECK(m.rej.message_rejected == DPV_CM_MSG_REQ, "message rejected %u (REQ)", m.rej.message_rejected);
	CHECK(m.rej.remote_comm_id == comm_id && m.rej.local_comm_id == 0, "REJ comm IDs 0x%x 0x%x",
	      m.rej.local_comm_id, m.rej.remote_comm_id);
}

static void sidr_and_dreq(void)
{
	uint8_t mad[DPV_MAD_SIZE];
	struct dpv_cm_mad m;
	dpv_cm_mad_init(&m, DPV_CM_ATTR_SIDR_REQ, 0x2000000000000077ull);
	m.sidr_req.request_id = 0xabcd1234;
	m.sidr_req.pkey = 0xffff;
	m.sidr_req.service_id = 0x0111000000004e22ull; /* RDMA_PS_UDP */
	CHECK(dpv_cm_mad_encode(&m, mad) == 0, "encode SIDR_REQ");
	send_mad(mad, 2);
	bool got = answer(&m, 3000);
	CHECK(got && m.hdr.attr_id == DPV_CM_ATTR_SIDR_REP, "SIDR_REQ answered with a SIDR_REP");
	if (got)
		CHECK(m.sidr_rep.status == DPV_CM_SIDR_UNSUPPORTED && m.sidr_rep.request_id == 0xabcd1234 &&
			      m.sidr_rep.service_id == 0x0111000000004e22ull && m.hdr.tid == 0x2000000000000077ull,
		      "SIDR_REP status %u request 0x%x", m.sidr_rep.status, m.sidr_rep.request_id);

	dpv_cm_mad_init(&m, DPV_CM_ATTR_DREQ, 0x2000000000000078ull);
	m.dreq.local_comm_id = 0x11111111;
	m.dreq.remote_comm_id = 0x22222222;
	m.dreq.remote_qpn_eecn = 0x42;
	CHECK(dpv_cm_mad_encode(&m, mad) == 0, "encode DREQ");
	send_mad(mad, 3);
	got = answer(&m, 3000);
	CHECK(got && m.hdr.attr_id == DPV_CM_ATTR_DREP, "DREQ for no connection answered with a DREP");
	if (got)
		CHECK(m.drep.local_comm_id == 0x22222222 && m.drep.remote_comm_id == 0x11111111 &&
			      m.hdr.tid == 0x2000000000000078ull,
		      "DREP comm IDs 0x%x 0x%x", m.drep.local_comm_id, m.drep.remote_comm_id);
}

/* REP for no connection, a MAD of another class, garbage: counted, no answer. */
static void unanswered(void)
{
	uint64_t before = dpvt_stat(true, "gsi_unanswered");
	CHECK(before != UINT64_MAX, "the stats snapshot has gsi_unanswered");
	uint8_t mad[DPV_MAD_SIZE];
	struct dpv_cm_mad m;
	dpv_cm_mad_init(&m, DPV_CM_ATTR_REP, 0x2000000000000079ull);
	m.rep.local_comm_id = 0x33333333;
	m.rep.remote_comm_id = 0x44444444;
	m.rep.local_qpn = 0x77;
	CHECK(dpv_cm_mad_encode(&m, mad) == 0, "encode REP");
	send_mad(mad, 4);
	memcpy(mad, (const uint8_t[]){1, 0x04, 1, 1}, 4); /* the Performance Management class */
	send_mad(mad, 5);
	for (unsigned int i = 0; i < DPV_MAD_SIZE; i++)
		mad[i] = (uint8_t)(i * 37 + 5);
	send_mad(mad, 6);
	CHECK(dpvt_poll_quiet(g_a.rcq, 200) == 0, "no answer to REP, PMA MAD, garbage");
	uint64_t after = dpvt_stat_wait(true, "gsi_unanswered", before + 3);
	CHECK(after == before + 3, "gsi_unanswered %llu -> %llu (+3)", (unsigned long long)before,
	      (unsigned long long)after);
}

/* dpv1's own GSI QP takes precedence; the fallback comes back after it. */
static void precedence(void)
{
	struct ibv_qp *gb = gsi_new(&g_b);
	CHECK(gb != NULL, "a GSI QP on dpv1: %s", strerror(errno));
	if (!gb)
		return;
	CHECK(dpvt_post_recv(gb, g_b.mr, 9, 0, RSLOT) == 0, "dpv1 post recv");
	uint8_t mad[DPV_MAD_SIZE];
	req_mad(mad, 0x5555aaaa, 0x200000000000007aull);
	send_mad(mad, 7);
	struct ibv_wc wc;
	CHECK(dpvt_poll_n(g_b.rcq, &wc, 1, 3000) == 1 && wc.wr_id == 9, "dpv1's GSI QP gets the REQ");
	CHECK(dpvt_poll_quiet(g_a.rcq, 200) == 0, "no answer from the fallback while dpv1 has a GSI QP");
	CHECK(ibv_destroy_qp(gb) == 0, "destroy dpv1's GSI QP");
	req_mad(mad, 0x5555aaab, 0x200000000000007bull);
	send_mad(mad, 8);
	check_rej(0x5555aaab, 0x200000000000007bull);
}

/* 200 REQs posted at once: every one either answered or counted as
 * rate-limited, and no more answers than the limiter allows in the time the
 * flood took (its burst of 32 plus 200 a second; measured from before the
 * first post to when all 200 are counted, an upper bound of the time the
 * engine had, so a slow machine cannot make the check fail). */
static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void flood(void)
{
	uint64_t lim0 = dpvt_stat(true, "gsi_rate_limited"), rep0 = dpvt_stat(false, "cm_fallback_reply");
	uint64_t rep = 0, lim = 0;
	int sent = 0;
	double t0 = now_s();
	for (int i = 0; i < 200; i++) {
		uint8_t *mad = g_a.buf + 4096 + (size_t)i * DPV_MAD_SIZE;
		req_mad(mad, 0x7000 + (uint32_t)i, 0x2000000000001000ull + (uint64_t)i);
		sent += dpvt_post_ud_send(g_ga, g_ah, 1, DPV_GSI_QKEY, 100, g_a.mr, 4096 + (size_t)i * DPV_MAD_SIZE,
					  DPV_MAD_SIZE, i == 199 ? IBV_SEND_SIGNALED : 0) == 0;
	}
	struct ibv_wc wc;
	CHECK(sent == 200 && dpvt_poll_n(g_a.scq, &wc, 1, 3000) == 1, "200 REQs posted (%d) and sent", sent);
	/* both counters together: one read can fall between two frames */
	for (int i = 0; i < 30 && rep + lim < 200; i++) {
		rep = dpvt_stat(false, "cm_fallback_reply") - rep0;
		lim = dpvt_stat(true, "gsi_rate_limited") - lim0;
	}
	double took = now_s() - t0;
	uint64_t allowed = 32 + (uint64_t)(200.0 * took) + 1;
	CHECK(lim + rep == 200, "every REQ answered (%llu) or rate-limited (%llu)", (unsigned long long)rep,
	      (unsigned long long)lim);
	CHECK(rep >= 32 && rep <= allowed, "the burst answered (%llu), at most %llu in %.3f s",
	      (unsigned long long)rep, (unsigned long long)allowed, took);
	printf("flood: %d REQs, %llu answers, %llu rate-limited\n", sent, (unsigned long long)rep,
	       (unsigned long long)lim);
	while (dpvt_poll_quiet(g_a.rcq, 100) > 0)
		;
}

int main(void)
{
	if (dpvt_ep_open(&g_a, "dpv0", 256, false) || dpvt_ep_open(&g_b, "dpv1", 64, false) ||
	    dpvt_ep_buf(&g_a, NULL, 4096 + 200 * DPV_MAD_SIZE, IBV_ACCESS_LOCAL_WRITE) || dpvt_ep_buf(&g_b, NULL, 8192, IBV_ACCESS_LOCAL_WRITE)) {
		CHECK(0, "devices");
		return dpvt_finish();
	}
	g_ga = gsi_new(&g_a);
	g_ah = dpvt_ah_new(g_a.pd, g_b.ctx, 1, 1);
	CHECK(g_ga && g_ah, "dpv0's GSI QP and an AH to dpv1: %s", strerror(errno));
	if (!g_ga || !g_ah)
		return dpvt_finish();
	post_recvs();
	uint64_t r0 = dpvt_stat(false, "cm_fallback_reply");
	uint8_t mad[DPV_MAD_SIZE];
	req_mad(mad, 0x0badcafe, 0x2000000000000076ull);
	send_mad(mad, 1);
	check_rej(0x0badcafe, 0x2000000000000076ull);
	sidr_and_dreq();
	/* over IPv6 (GID 0, link-local) too: the answer goes back the same way */
	struct ibv_ah *v4 = g_ah;
	g_ah = dpvt_ah_new(g_a.pd, g_b.ctx, 0, 0);
	CHECK(g_ah != NULL, "an IPv6 AH to dpv1");
	if (g_ah) {
		req_mad(mad, 0x0badcaff, 0x200000000000007full);
		send_mad(mad, 10);
		check_rej(0x0badcaff, 0x200000000000007full);
		ibv_destroy_ah(g_ah);
	}
	g_ah = v4;
	uint64_t r1 = dpvt_stat_wait(false, "cm_fallback_reply", r0 + 4);
	CHECK(r0 != UINT64_MAX && r1 == r0 + 4, "cm_fallback_reply %llu -> %llu (+4)", (unsigned long long)r0,
	      (unsigned long long)r1);
	unanswered();
	precedence();
	flood();
	ibv_destroy_ah(g_ah);
	ibv_destroy_qp(g_ga);
	dpvt_ep_close(&g_a);
	dpvt_ep_close(&g_b);
	return dpvt_finish();
}
