/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The requester and the completer (drivers/sw/sw_req.c, sw_comp.c,
 * sw_timer.c) driven by packets below the verbs API (sw_harness.h): work
 * requests are posted with the verbs API, the request packets the engine
 * sends are captured, and the test answers as the peer would (ACK, NAK,
 * RNR NAK, READ responses, atomic acknowledges) or not at all (timers).
 * IBA references are to release 1.4, volume 1.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dpvt_check.h"
#include "sw_harness.h"

#define RQ_PSN 0x100u
#define SQ_PSN 0x800u

static struct dpv_pkt_build b;

static int new_qp(struct sw_h_qp *h, uint8_t retry_cnt, uint8_t rnr_retry)
{
	int r = sw_h_qp_create(h, IBV_QPT_RC, RQ_PSN, SQ_PSN, 4, 12, retry_cnt, rnr_retry);

	CHECK(r == 0, "RC QP to RTS: %s", strerror(errno));
	sw_h_clear();
	return r;
}

static int post(struct sw_h_qp *h, uint64_t wr_id, enum ibv_wr_opcode op, uint32_t off, uint32_t len,
		unsigned int flags)
{
	struct ibv_sge sge = { .addr = (uintptr_t)h->buf + off, .length = len, .lkey = h->mr->lkey };
	struct ibv_send_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1, .opcode = op,
				  .send_flags = IBV_SEND_SIGNALED | flags }, *bad;

	if (op == IBV_WR_RDMA_READ || op == IBV_WR_RDMA_WRITE) {
		wr.wr.rdma.remote_addr = 0x10000;
		wr.wr.rdma.rkey = 0x77;
	} else if (op == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		wr.wr.atomic.remote_addr = 0x20000;
		wr.wr.atomic.rkey = 0x77;
		wr.wr.atomic.compare_add = 3;
	}
	return ibv_post_send(h->qp, &wr, &bad);
}

/* A response (opcode, psn, syndrome, msn) from the peer to h's QP. */
static void respond(const struct sw_h_qp *h, uint8_t opcode, uint32_t psn, uint8_t syndrome,
		    uint32_t msn, const void *pay, uint32_t len)
{
	memset(&b, 0, sizeof(b));
	b.opcode = opcode;
	b.dqpn = h->qp->qp_num;
	b.psn = psn;
	b.aeth_syndrome = syndrome;
	b.aeth_msn = msn;
	CHECK(sw_h_rx(&b, pay, len) == 0, "response 0x%02x psn %#x built", opcode, psn);
}

/* How many captured frames carry this opcode and PSN. */
static unsigned int count(uint8_t opcode, uint32_t psn)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < sw_h_nsent(); i++)
		if (sw_h_sent(i)->pi.opcode == opcode && sw_h_sent(i)->pi.psn == psn)
			n++;
	return n;
}

static int poll_n(struct sw_h_qp *h, struct ibv_wc *wc, int n)
{
	int got = 0;

	while (got < n && sw_h_poll_cq(h, &wc[got]) == 1)
		got++;
	return got;
}

/* IBA 9.2.1, 9.7.3: a 2500-byte SEND goes out as FIRST, MIDDLE, LAST on
 * consecutive PSNs with the path MTU, AckReq on the LAST; one ACK for the
 * last PSN completes it. Three SENDs are completed in order by one
 * (coalesced) ACK of the last, and not before. */
static void send_and_ack(void)
{
	struct sw_h_qp h;
	struct ibv_wc wc[4];

	if (new_qp(&h, 7, 7))
		return;
	CHECK(post(&h, 1, IBV_WR_SEND, 0, 2500, 0) == 0, "post SEND 2500");
	CHECK(sw_h_nsent() >= 3, "3 packets sent (got %u)", sw_h_nsent());
	if (sw_h_nsent() >= 3) {
		const struct dpv_pkt_info *p0 = &sw_h_sent(0)->pi, *p1 = &sw_h_sent(1)->pi,
					   *p2 = &sw_h_sent(2)->pi;
		CHECK(p0->opcode == DPV_OPC_SEND_FIRST && p1->opcode == DPV_OPC_SEND_MIDDLE &&
		      p2->opcode == DPV_OPC_SEND_LAST, "FIRST, MIDDLE, LAST");
		CHECK(p0->psn == SQ_PSN && p1->psn == SQ_PSN + 1 && p2->psn == SQ_PSN + 2, "PSNs");
		CHECK(p0->payload_len == 1024 && p1->payload_len == 1024 && p2->payload_len == 452,
		      "payload split by the path MTU");
		CHECK(p2->ackreq, "AckReq on the last packet");
		CHECK(p0->dqpn == SW_H_PEER_QPN, "to the peer QP");
	}
	CHECK(poll_n(&h, wc, 1) == 0, "no completion before the ACK");
	respond(&h, DPV_OPC_ACK, SQ_PSN + 1, DPV_AETH_CREDIT_INVALID, 0, NULL, 0);
	CHECK(poll_n(&h, wc, 1) == 0, "no completion for an ACK of the middle");
	respond(&h, DPV_OPC_ACK, SQ_PSN + 2, DPV_AETH_CREDIT_INVALID, 1, NULL, 0);
	CHECK(poll_n(&h, wc, 1) == 1 && wc[0].wr_id == 1 && wc[0].status == IBV_WC_SUCCESS &&
	      wc[0].opcode == IBV_WC_SEND, "SEND completed");

	sw_h_clear();
	for (uint64_t i = 0; i < 3; i++)
		CHECK(post(&h, 10 + i, IBV_WR_SEND, 0, 64, 0) == 0, "post SEND %llu",
		      (unsigned long long)i);
	CHECK(count(DPV_OPC_SEND_ONLY, SQ_PSN + 3) == 1 && count(DPV_OPC_SEND_ONLY, SQ_PSN + 5) == 1,
	      "three SEND ONLY on PSN +3..+5");
	respond(&h, DPV_OPC_ACK, SQ_PSN + 5, DPV_AETH_CREDIT_INVALID, 4, NULL, 0);
	CHECK(poll_n(&h, wc, 4) == 3 && wc[0].wr_id == 10 && wc[1].wr_id == 11 && wc[2].wr_id == 12,
	      "one ACK of the last completes all three, in order");
	sw_h_qp_destroy(&h);
}

/* IBA 9.7.5.2.4: a PSN sequence error NAK acknowledges what is before its
 * PSN and makes the requester resend from it. */
static void nak_seq(void)
{
	struct sw_h_qp h;
	struct ibv_wc wc[4];

	if (new_qp(&h, 7, 7))
		return;
	for (uint64_t i = 0; i < 3; i++)
		CHECK(post(&h, 20 + i, IBV_WR_SEND, 0, 64, 0) == 0, "post");
	sw_h_clear();
	respond(&h, DPV_OPC_ACK, SQ_PSN + 1, DPV_AETH_NAK_PSN_SEQ, 1, NULL, 0);
	CHECK(poll_n(&h, wc, 4) == 1 && wc[0].wr_id == 20 && wc[0].status == IBV_WC_SUCCESS,
	      "the WQE before the NAK's PSN completes");
	CHECK(count(DPV_OPC_SEND_ONLY, SQ_PSN + 1) == 1 && count(DPV_OPC_SEND_ONLY, SQ_PSN + 2) == 1,
	      "resent from PSN +1 (sent %u)", sw_h_nsent());
	CHECK(count(DPV_OPC_SEND_ONLY, SQ_PSN) == 0, "PSN +0 not resent");
	respond(&h, DPV_OPC_ACK, SQ_PSN + 2, DPV_AETH_CREDIT_INVALID, 3, NULL, 0);
	CHECK(poll_n(&h, wc, 4) == 2 && wc[0].wr_id == 21 && wc[1].wr_id == 22, "the rest completes");
	CHECK(sw_h_qp_state(&h) == IBV_QPS_RTS, "QP in RTS");
	sw_h_qp_destroy(&h);
}

/* IBA 9.7.5.2.8: an RNR NAK stops the requester for the time it names;
 * then the WQE is resent from the NAK's PSN. rnr_retry counts the RNR NAKs
 * allowed: with 1, the second one fails the WQE with RNR_RETRY_EXC_ERR and
 * the QP goes to ERR, flushing what follows. */
static void rnr_nak(void)
{
	struct sw_h_qp h;
	struct ibv_wc wc[4];

	if (new_qp(&h, 7, 1))
		return;
	CHECK(post(&h, 30, IBV_WR_SEND, 0, 64, 0) == 0 && post(&h, 31, IBV_WR_SEND, 0, 64, 0) == 0,
	      "post two SENDs");
	sw_h_clear();
	respond(&h, DPV_OPC_ACK, SQ_PSN, DPV_AETH_RNR_NAK | 1, 0, NULL, 0); /* 0.01 ms */
	CHECK(sw_h_nsent() == 0, "nothing resent at once");
	usleep(1000);
	sw_h_poll();
	CHECK(count(DPV_OPC_SEND_ONLY, SQ_PSN) >= 1, "resent after the RNR wait");
	CHECK(poll_n(&h, wc, 1) == 0, "no completion yet");
	sw_h_clear();
	respond(&h, DPV_OPC_ACK, SQ_PSN, DPV_AETH_RNR_NAK | 1, 0, NULL, 0);
	CHECK(poll_n(&h, wc, 4) == 2, "two completions after the second RNR NAK");
	CHECK(wc[0].wr_id == 30 && wc[0].status == IBV_WC_RNR_RETRY_EXC_ERR,
	      "RNR_RETRY_EXC_ERR (status %d)", wc[0].status);
	CHECK(wc[1].wr_id == 31 && wc[1].status == IBV_WC_WR_FLUSH_ERR, "then flushed");
	CHECK(sw_h_qp_state(&h) == IBV_QPS_ERR, "QP in ERR");
	sw_h_qp_destroy(&h);

	/* rnr_retry 7: retried for ever */
	if (new_qp(&h, 7, 7))
		return;
	CHECK(post(&h, 32, IBV_WR_SEND, 0, 64, 0) == 0, "post");
	for (int i = 0; i < 10; i++) {
		sw_h_clear();
		respond(&h, DPV_OPC_ACK, SQ_PSN, DPV_AETH_RNR_NAK | 1, 0, NULL, 0);
		usleep(200);
		sw_h_poll();
		CHECK(count(DPV_OPC_SEND_ONLY, SQ_PSN) >= 1, "RNR %d: resent", i);
	}
	respond(&h, DPV_OPC_ACK, SQ_PSN, DPV_AETH_CREDIT_INVALID, 1, NULL, 0);
	CHECK(poll_n(&h, wc, 1) == 1 && wc[0].status == IBV_WC_SUCCESS, "completes after 10 RNR NAKs");
	sw_h_qp_destroy(&h);
}

/* An RNR NAK whose PSN is then acknowledged before the RNR wait ends (a
 * copy sent earlier, by the tail-loss probe, found the receive WQE the
 * peer posted meanwhile): a SEND posted after that, with nothing else
 * outstanding, must go out by the time the wait (655 ms, min_rnr_timer 0 as
 * rdma_init_qp_attr gives) is over, not stall for ever. */
static void rnr_acked_meanwhile(void)
{
	struct sw_h_qp h;
	struct ibv_wc wc[4];

	if (new_qp(&h, 7, 7))
		return;
	CHECK(post(&h, 40, IBV_WR_SEND, 0, 64, 0) == 0, "post SEND 40");
	sw_h_clear();
	respond(&h, DPV_OPC_ACK, SQ_PSN, DPV_AETH_RNR_NAK | 0, 0, NULL, 0); /* 655.36 ms */
	respond(&h, DPV_OPC_ACK, SQ_PSN, DPV_AETH_CREDIT_INVALID, 1, NULL, 0);
	CHECK(poll_n(&h, wc, 4) == 1 && wc[0].wr_id == 40 && wc[0].status == IBV_WC_SUCCESS,
	      "SEND 40 completes with the late ACK");
	CHECK(post(&h, 41, IBV_WR_SEND, 0, 64, 0) == 0, "post SEND 41");
	sw_h_expire_timers(&h);
	sw_h_poll();
	CHECK(count(DPV_OPC_SEND_ONLY, SQ_PSN + 1) >= 1, "SEND 41 sent (sent %u frames)", sw_h_nsent());
	respond(&h, DPV_OPC_ACK, SQ_PSN + 1, DPV_AETH_CREDIT_INVALID, 2, NULL, 0);
	CHECK(poll_n(&h, wc, 4) == 1 && wc[0].wr_id == 41 && wc[0].status == IBV_WC_SUCCESS,
	      "SEND 41 completes");
	CHECK(count(DPV_OPC_SEND_ONLY, SQ_PSN) == 0, "the acknowledged SEND 40 not resent");
	sw_h_qp_destroy(&h);
}

/* IBA 9.7.5.2.5: remote access error NAK: the WQE it names completes with
 * REM_ACCESS_ERR (and an invalid request NAK with REM_INV_REQ_ERR), the QP
 * goes to ERR, the rest is flushed. */
static void nak_fatal(void)
{
	static const uint8_t syn[2] = { DPV_AETH_NAK_REM_ACC, DPV_AETH_NAK_INV_REQ };
	static const enum ibv_wc_status st[2] = { IBV_WC_REM_ACCESS_ERR, IBV_WC_REM_INV_REQ_ERR };

	for (int k = 0; k < 2; k++) {
		struct sw_h_qp h;
		struct ibv_wc wc[4];

		if (new_qp(&h, 7, 7))
			return;
		CHECK(post(&h, 40, IBV_WR_RDMA_WRITE, 0, 64, 0) == 0 &&
		      post(&h, 41, IBV_WR_SEND, 0, 64, 0) == 0, "post WRITE, SEND");
		respond(&h, DPV_OPC_ACK, SQ_PSN, syn[k], 0, NULL, 0);
		CHECK(poll_n(&h, wc, 4) == 2, "two completions");
		CHECK(wc[0].wr_id == 40 && wc[0].status == st[k], "NAK %#x: status %d", syn[k],
		      wc[0].status);
		CHECK(wc[1].wr_id == 41 && wc[1].status == IBV_WC_WR_FLUSH_ERR, "flushed");
		CHECK(sw_h_qp_state(&h) == IBV_QPS_ERR, "QP in ERR");
		sw_h_qp_destroy(&h);
	}
}

/* IBA 9.7.5.1.6: READ responses FIRST/MIDDLE/LAST fill the local buffer and
 * complete the READ; an atomic acknowledge writes the original value to the
 * local buffer. */
static void read_and_atomic(void)
{
	struct sw_h_qp h;
	struct ibv_wc wc[2];
	static uint8_t data[2500];

	if (new_qp(&h, 7, 7))
		return;
	for (unsigned int i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 31 + 7);
	CHECK(post(&h, 50, IBV_WR_RDMA_READ, 4096, sizeof(data), 0) == 0, "post READ");
	CHECK(sw_h_nsent() == 1, "one READ request");
	if (sw_h_nsent() == 1) {
		const struct dpv_pkt_info *r = &sw_h_sent(0)->pi;
		CHECK(r->opcode == DPV_OPC_READ_REQUEST && r->psn == SQ_PSN && r->reth_len == sizeof(data) &&
		      r->reth_va == 0x10000 && r->reth_rkey == 0x77, "READ REQUEST with the RETH");
	}
	respond(&h, DPV_OPC_READ_RESP_FIRST, SQ_PSN, DPV_AETH_CREDIT_INVALID, 0, data, 1024);
	respond(&h, DPV_OPC_READ_RESP_MIDDLE, SQ_PSN + 1, 0, 0, data + 1024, 1024);
	CHECK(poll_n(&h, wc, 1) == 0, "not complete before the LAST");
	respond(&h, DPV_OPC_READ_RESP_LAST, SQ_PSN + 2, DPV_AETH_CREDIT_INVALID, 1, data + 2048, 452);
	CHECK(poll_n(&h, wc, 1) == 1 && wc[0].wr_id == 50 && wc[0].status == IBV_WC_SUCCESS &&
	      wc[0].opcode == IBV_WC_RDMA_READ && wc[0].byte_len == sizeof(data), "READ completed");
	CHECK(memcmp(h.buf + 4096, data, sizeof(data)) == 0, "data placed");

	sw_h_clear();
	memset(h.buf + 8192, 0, 8);
	CHECK(post(&h, 51, IBV_WR_ATOMIC_FETCH_AND_ADD, 8192, 8, 0) == 0, "post FETCH_ADD");
	CHECK(count(DPV_OPC_FETCH_ADD, SQ_PSN + 3) == 1, "FETCH_ADD on PSN +3");
	if (sw_h_nsent() == 1)
		CHECK(sw_h_sent(0)->pi.atm_swap_add == 3 && sw_h_sent(0)->pi.atm_va == 0x20000,
		      "AtomicETH add 3 at 0x20000");
	memset(&b, 0, sizeof(b));
	b.opcode = DPV_OPC_ATOMIC_ACK;
	b.dqpn = h.qp->qp_num;
	b.psn = SQ_PSN + 3;
	b.aeth_syndrome = DPV_AETH_CREDIT_INVALID;
	b.aeth_msn = 2;
	b.atmack_orig = 0x1122334455667788ull;
	CHECK(sw_h_rx(&b, NULL, 0) == 0, "rx ATOMIC ACK");
	uint64_t orig;
	memcpy(&orig, h.buf + 8192, 8);
	CHECK(poll_n(&h, wc, 1) == 1 && wc[0].opcode == IBV_WC_FETCH_ADD && wc[0].byte_len == 8 &&
	      orig == 0x1122334455667788ull, "FETCH_ADD completed, original in the buffer");
	sw_h_qp_destroy(&h);
}

/* ibv_dereg_mr while WQEs still use the MR: a WQE resent after a NAK, or a
 * READ whose later responses arrive, resolves its lkey again and fails
 * with IBV_WC_LOC_PROT_ERR (as an RNIC whose key was invalidated) instead
 * of reading or writing the memory; the QP goes to ERR. */
static void mr_gone(void)
{
	struct sw_h_qp h;
	struct ibv_wc wc[4];
	static uint8_t data[2500];
	uint8_t *m = aligned_alloc(4096, 8192);

	if (!m || new_qp(&h, 7, 7))
		return;
	memset(m, 0x42, 8192);
	struct ibv_mr *mr = ibv_reg_mr(h.pd, m, 8192, IBV_ACCESS_LOCAL_WRITE);
	struct ibv_sge sge = { .addr = (uintptr_t)m, .length = 3000, .lkey = mr ? mr->lkey : 0 };
	struct ibv_send_wr wr = { .wr_id = 60, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	CHECK(mr && ibv_post_send(h.qp, &wr, &bad) == 0, "post SEND of 3 packets");
	CHECK(count(DPV_OPC_SEND_LAST, SQ_PSN + 2) == 1, "sent");
	CHECK(ibv_dereg_mr(mr) == 0, "dereg with the SEND outstanding");
	sw_h_clear();
	respond(&h, DPV_OPC_ACK, SQ_PSN + 1, DPV_AETH_NAK_PSN_SEQ, 0, NULL, 0);
	CHECK(sw_h_nsent() == 0, "nothing resent (sent %u)", sw_h_nsent());
	CHECK(poll_n(&h, wc, 4) == 1 && wc[0].wr_id == 60 && wc[0].status == IBV_WC_LOC_PROT_ERR,
	      "the SEND completes LOC_PROT_ERR");
	CHECK(sw_h_qp_state(&h) == IBV_QPS_ERR, "QP in ERR");
	sw_h_qp_destroy(&h);

	if (new_qp(&h, 7, 7))
		return;
	memset(m, 0, 8192);
	memset(data, 0x3d, sizeof(data));
	mr = ibv_reg_mr(h.pd, m, 8192, IBV_ACCESS_LOCAL_WRITE);
	sge = (struct ibv_sge){ .addr = (uintptr_t)m, .length = sizeof(data), .lkey = mr ? mr->lkey : 0 };
	wr = (struct ibv_send_wr){ .wr_id = 61, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_RDMA_READ,
				   .send_flags = IBV_SEND_SIGNALED };
	wr.wr.rdma.remote_addr = 0x10000;
	wr.wr.rdma.rkey = 0x77;
	CHECK(mr && ibv_post_send(h.qp, &wr, &bad) == 0, "post READ");
	respond(&h, DPV_OPC_READ_RESP_FIRST, SQ_PSN, DPV_AETH_CREDIT_INVALID, 0, data, 1024);
	CHECK(m[0] == 0x3d && m[1023] == 0x3d, "FIRST placed");
	CHECK(ibv_dereg_mr(mr) == 0, "dereg with the READ outstanding");
	memset(m, 0, 8192);
	respond(&h, DPV_OPC_READ_RESP_MIDDLE, SQ_PSN + 1, 0, 0, data + 1024, 1024);
	CHECK(poll_n(&h, wc, 4) == 1 && wc[0].wr_id == 61 && wc[0].status == IBV_WC_LOC_PROT_ERR,
	      "the READ completes LOC_PROT_ERR");
	bool zero = true;
	for (unsigned int i = 0; i < 8192; i++)
		zero = zero && m[i] == 0;
	CHECK(zero, "nothing written after the dereg");
	CHECK(sw_h_qp_state(&h) == IBV_QPS_ERR, "QP in ERR");
	sw_h_qp_destroy(&h);
	free(m);
}

/* IBA 9.7.5.1.5 (implied NAK): an ACK for a PSN after an outstanding READ
 * means its responses were lost: the READ is asked for again, not
 * completed. */
static void implied_nak(void)
{
	struct sw_h_qp h;
	struct ibv_wc wc[2];

	if (new_qp(&h, 7, 7))
		return;
	CHECK(post(&h, 60, IBV_WR_RDMA_READ, 0, 64, 0) == 0 && post(&h, 61, IBV_WR_SEND, 0, 64, 0) == 0,
	      "post READ, SEND");
	CHECK(count(DPV_OPC_READ_REQUEST, SQ_PSN) == 1 && count(DPV_OPC_SEND_ONLY, SQ_PSN + 1) == 1,
	      "READ on +0, SEND on +1");
	sw_h_clear();
	respond(&h, DPV_OPC_ACK, SQ_PSN + 1, DPV_AETH_CREDIT_INVALID, 2, NULL, 0);
	CHECK(poll_n(&h, wc, 2) == 0, "nothing completes: the READ has no data");
	CHECK(count(DPV_OPC_READ_REQUEST, SQ_PSN) == 1, "the READ is asked for again (sent %u)",
	      sw_h_nsent());
	sw_h_qp_destroy(&h);
}

/* IBA 9.7.6.1.3: without any answer the retransmission timer resends from
 * the oldest PSN, retry_cnt times; then the WQE fails with RETRY_EXC_ERR. */
static void retry_exhausted(void)
{
	struct sw_h_qp h;
	struct ibv_wc wc[2];

	if (new_qp(&h, 2, 7))
		return;
	CHECK(post(&h, 70, IBV_WR_SEND, 0, 64, 0) == 0, "post");
	for (int i = 0; i < 2; i++) {
		sw_h_clear();
		sw_h_expire_timers(&h);
		CHECK(count(DPV_OPC_SEND_ONLY, SQ_PSN) >= 1, "timeout %d: resent", i + 1);
		CHECK(poll_n(&h, wc, 1) == 0, "timeout %d: no completion", i + 1);
	}
	sw_h_expire_timers(&h);
	CHECK(poll_n(&h, wc, 1) == 1 && wc[0].wr_id == 70 && wc[0].status == IBV_WC_RETRY_EXC_ERR,
	      "RETRY_EXC_ERR after retry_cnt timeouts (status %d)", wc[0].status);
	CHECK(sw_h_qp_state(&h) == IBV_QPS_ERR, "QP in ERR");
	sw_h_qp_destroy(&h);
}

/* The congestion window bounds the PSNs in flight (SW_RC_WINDOW packets at
 * most); an ACK opens it again. A fenced WR waits for the READ before it
 * (IBA 10.8.3.3). */
static void window_and_fence(void)
{
	struct sw_h_qp h;
	struct ibv_wc wc[4];

	if (new_qp(&h, 7, 7))
		return;
	CHECK(post(&h, 80, IBV_WR_SEND, 0, 300 * 1024, 0) == 0, "post a 300-packet SEND");
	uint32_t hi = 0;
	for (unsigned int i = 0; i < sw_h_nsent(); i++)
		if (sw_h_sent(i)->pi.psn - SQ_PSN + 1 > hi)
			hi = sw_h_sent(i)->pi.psn - SQ_PSN + 1;
	CHECK(hi == 256, "256 packets in flight before any ACK (got %u)", hi);
	sw_h_clear();
	respond(&h, DPV_OPC_ACK, SQ_PSN + 99, DPV_AETH_CREDIT_INVALID, 0, NULL, 0);
	CHECK(count(DPV_OPC_SEND_MIDDLE, SQ_PSN + 256) == 1, "the window moves on after an ACK");
	CHECK(count(DPV_OPC_SEND_LAST, SQ_PSN + 299) == 1, "up to the LAST");
	respond(&h, DPV_OPC_ACK, SQ_PSN + 299, DPV_AETH_CREDIT_INVALID, 1, NULL, 0);
	CHECK(poll_n(&h, wc, 1) == 1 && wc[0].wr_id == 80 && wc[0].status == IBV_WC_SUCCESS,
	      "300-packet SEND completed");

	uint32_t p = SQ_PSN + 300;
	sw_h_clear();
	CHECK(post(&h, 81, IBV_WR_RDMA_READ, 0, 64, 0) == 0, "post READ");
	CHECK(post(&h, 82, IBV_WR_SEND, 64, 64, IBV_SEND_FENCE) == 0, "post fenced SEND");
	CHECK(count(DPV_OPC_READ_REQUEST, p) == 1, "READ sent");
	CHECK(sw_h_nsent() == 1, "the fenced SEND waits (sent %u)", sw_h_nsent());
	static uint8_t d[64];
	respond(&h, DPV_OPC_READ_RESP_ONLY, p, DPV_AETH_CREDIT_INVALID, 2, d, 64);
	CHECK(count(DPV_OPC_SEND_ONLY, p + 1) == 1, "the fenced SEND goes after the READ completed");
	respond(&h, DPV_OPC_ACK, p + 1, DPV_AETH_CREDIT_INVALID, 3, NULL, 0);
	CHECK(poll_n(&h, wc, 4) == 2 && wc[0].wr_id == 81 && wc[1].wr_id == 82, "both complete");
	sw_h_qp_destroy(&h);
}

int main(int argc, char **argv)
{
	if (sw_h_init(argc, argv))
		return 1;
	send_and_ack();
	nak_seq();
	rnr_nak();
	rnr_acked_meanwhile();
	nak_fatal();
	read_and_atomic();
	implied_nak();
	retry_exhausted();
	window_and_fence();
	mr_gone();
	return dpvt_finish();
}
