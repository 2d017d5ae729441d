/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The responder (drivers/sw/sw_resp.c, sw_resp_q.c) driven by packets below
 * the verbs API (sw_harness.h): each case builds request frames from a peer
 * that does not exist, hands them to the driver's receive hook and checks
 * what the engine sends back (ACK/NAK syndromes and PSNs, MSNs, READ
 * responses, atomic acknowledges), what lands in memory and the receive
 * completions. IBA references are to release 1.4, volume 1.
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

/* The only frame sent since the last clear, or NULL (a failure is counted). */
static const struct dpv_pkt_info *one_sent(const char *what)
{
	CHECK(sw_h_nsent() == 1, "%s: one frame sent (got %u)", what, sw_h_nsent());
	return sw_h_nsent() >= 1 ? &sw_h_sent(sw_h_nsent() - 1)->pi : NULL;
}

static int new_qp(struct sw_h_qp *h, uint8_t rd_atomic, uint8_t min_rnr)
{
	int r = sw_h_qp_create(h, IBV_QPT_RC, RQ_PSN, SQ_PSN, rd_atomic, min_rnr, 7, 7);

	CHECK(r == 0, "RC QP to RTS: %s", strerror(errno));
	sw_h_clear();
	return r;
}

/* IBA 9.7.4.1.2, 9.7.5.1.1: SEND ONLY in order with AckReq: placed, one
 * receive completion, one ACK for its PSN with MSN 1. */
static void send_in_order(void)
{
	struct sw_h_qp h;
	struct ibv_wc wc;
	uint8_t pay[200];

	if (new_qp(&h, 4, 12))
		return;
	for (unsigned int i = 0; i < sizeof(pay); i++)
		pay[i] = (uint8_t)(i * 7 + 1);
	CHECK(sw_h_post_recv(&h, 11, 0, 4096) == 0, "post_recv");
	sw_h_req(&b, &h, DPV_OPC_SEND_ONLY, RQ_PSN);
	b.ackreq = true;
	CHECK(sw_h_rx(&b, pay, sizeof(pay)) == 0, "rx");
	CHECK(sw_h_nsent() == 0, "the ACK is coalesced until the end of the burst");
	sw_h_poll();
	const struct dpv_pkt_info *a = one_sent("SEND ONLY");
	if (a) {
		CHECK(a->opcode == DPV_OPC_ACK, "ACK opcode 0x%02x", a->opcode);
		CHECK(a->dqpn == SW_H_PEER_QPN, "ACK to the peer QPN");
		CHECK(a->psn == RQ_PSN, "ACK PSN %#x", a->psn);
		CHECK((a->aeth_syndrome & DPV_AETH_TYPE_MASK) == DPV_AETH_ACK, "ACK syndrome %#x",
		      a->aeth_syndrome);
		CHECK(a->aeth_msn == 1, "MSN %u", a->aeth_msn);
	}
	CHECK(sw_h_poll_cq(&h, &wc) == 1, "receive completion");
	CHECK(wc.wr_id == 11 && wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RECV &&
	      wc.byte_len == sizeof(pay), "wc: wr_id %llu status %d opcode %d len %u",
	      (unsigned long long)wc.wr_id, wc.status, wc.opcode, wc.byte_len);
	CHECK(memcmp(h.buf, pay, sizeof(pay)) == 0, "payload placed");

	/* IBA 9.9.2.1: the same SEND again is a duplicate: re-ACKed with the
	 * last PSN acknowledged, not placed or completed again */
	sw_h_clear();
	memset(h.buf, 0, sizeof(pay));
	CHECK(sw_h_post_recv(&h, 12, 0, 4096) == 0, "post_recv");
	CHECK(sw_h_rx(&b, pay, sizeof(pay)) == 0, "rx duplicate");
	sw_h_poll();
	a = one_sent("duplicate SEND");
	if (a) {
		CHECK(a->opcode == DPV_OPC_ACK && a->psn == RQ_PSN, "re-ACK of PSN %#x (got %#x)", RQ_PSN,
		      a->psn);
		CHECK(a->aeth_msn == 1, "MSN still 1 (got %u)", a->aeth_msn);
	}
	CHECK(sw_h_poll_cq(&h, &wc) == 0, "no second completion");
	CHECK(h.buf[0] == 0, "the duplicate was not placed");
	/* a duplicate without AckReq is dropped silently */
	sw_h_clear();
	b.ackreq = false;
	CHECK(sw_h_rx(&b, pay, sizeof(pay)) == 0, "rx duplicate without AckReq");
	sw_h_poll();
	CHECK(sw_h_nsent() == 0, "no ACK for a duplicate that did not ask");
	sw_h_qp_destroy(&h);
}

/* IBA 9.7.4.1.3 and 9.7.5.1.2: a PSN ahead of the expected one gets one
 * PSN sequence error NAK carrying the expected PSN; the packets after it do
 * not get another; the expected PSN is then accepted. */
static void psn_ahead(void)
{
	struct sw_h_qp h;
	struct ibv_wc wc;
	uint8_t pay[64] = { 1, 2, 3 };

	if (new_qp(&h, 4, 12))
		return;
	CHECK(sw_h_post_recv(&h, 1, 0, 1024) == 0 && sw_h_post_recv(&h, 2, 1024, 1024) == 0,
	      "post_recv");
	for (uint32_t i = 1; i <= 3; i++) {
		sw_h_req(&b, &h, DPV_OPC_SEND_ONLY, RQ_PSN + i);
		b.ackreq = true;
		CHECK(sw_h_rx(&b, pay, sizeof(pay)) == 0, "rx PSN +%u", i);
	}
	sw_h_poll();
	const struct dpv_pkt_info *n = one_sent("PSN ahead");
	if (n) {
		CHECK(n->opcode == DPV_OPC_ACK && n->aeth_syndrome == DPV_AETH_NAK_PSN_SEQ,
		      "NAK PSN sequence error (syndrome %#x)", n->aeth_syndrome);
		CHECK(n->psn == RQ_PSN, "the NAK carries the expected PSN %#x (got %#x)", RQ_PSN, n->psn);
	}
	CHECK(sw_h_poll_cq(&h, &wc) == 0, "nothing completed");
	sw_h_clear();
	sw_h_req(&b, &h, DPV_OPC_SEND_ONLY, RQ_PSN);
	b.ackreq = true;
	CHECK(sw_h_rx(&b, pay, sizeof(pay)) == 0, "rx expected PSN");
	sw_h_poll();
	n = one_sent("expected PSN after the NAK");
	CHECK(n && (n->aeth_syndrome & DPV_AETH_TYPE_MASK) == DPV_AETH_ACK && n->psn == RQ_PSN,
	      "ACK of the expected PSN");
	CHECK(sw_h_poll_cq(&h, &wc) == 1 && wc.wr_id == 1 && wc.status == IBV_WC_SUCCESS,
	      "the first receive completes");
	/* a new gap after progress gets a new NAK */
	sw_h_clear();
	sw_h_req(&b, &h, DPV_OPC_SEND_ONLY, RQ_PSN + 5);
	CHECK(sw_h_rx(&b, pay, sizeof(pay)) == 0, "rx PSN +5");
	sw_h_poll();
	n = one_sent("second gap");
	CHECK(n && n->aeth_syndrome == DPV_AETH_NAK_PSN_SEQ && n->psn == RQ_PSN + 1,
	      "second NAK for expected PSN %#x", RQ_PSN + 1);
	sw_h_qp_destroy(&h);
}

/* IBA 9.7.5.1.7: no receive WQE: RNR NAK with the QP's min_rnr_timer in the
 * syndrome, the PSN stays expected; once a WQE is posted the resent SEND is
 * accepted. */
static void rnr(void)
{
	struct sw_h_qp h;
	struct ibv_wc wc;
	uint8_t pay[32] = { 9 };

	if (new_qp(&h, 4, 14))
		return;
	sw_h_req(&b, &h, DPV_OPC_SEND_ONLY, RQ_PSN);
	b.ackreq = true;
	CHECK(sw_h_rx(&b, pay, sizeof(pay)) == 0, "rx");
	sw_h_poll();
	const struct dpv_pkt_info *n = one_sent("RNR");
	if (n) {
		CHECK(n->aeth_syndrome == (DPV_AETH_RNR_NAK | 14), "RNR NAK with timer 14 (syndrome %#x)",
		      n->aeth_syndrome);
		CHECK(n->psn == RQ_PSN, "RNR NAK PSN %#x", n->psn);
	}
	CHECK(sw_h_qp_state(&h) == IBV_QPS_RTS, "the QP stays in RTS");
	sw_h_clear();
	CHECK(sw_h_post_recv(&h, 3, 0, 64) == 0, "post_recv");
	CHECK(sw_h_rx(&b, pay, sizeof(pay)) == 0, "rx again");
	sw_h_poll();
	n = one_sent("SEND after RNR");
	CHECK(n && (n->aeth_syndrome & DPV_AETH_TYPE_MASK) == DPV_AETH_ACK && n->psn == RQ_PSN,
	      "ACK after the WQE was posted");
	CHECK(sw_h_poll_cq(&h, &wc) == 1 && wc.wr_id == 3, "completion");
	sw_h_qp_destroy(&h);
}

/* IBA 9.7.4.1.5, 10.6.3.2: RDMA WRITE with a bad rkey, out of bounds, or to
 * an MR without remote write: NAK remote access error, the QP goes to ERR. */
static void write_access(void)
{
	static const char *const what[] = { "bad rkey", "beyond the MR", "MR without remote write" };

	for (int k = 0; k < 3; k++) {
		struct sw_h_qp h;
		struct ibv_mr *ro = NULL;
		uint8_t pay[64] = { 5 };

		if (new_qp(&h, 4, 12))
			return;
		sw_h_req(&b, &h, DPV_OPC_WRITE_ONLY, RQ_PSN);
		b.ackreq = true;
		b.reth_va = (uintptr_t)h.buf;
		b.reth_rkey = h.mr->rkey;
		b.reth_len = sizeof(pay);
		if (k == 0) {
			b.reth_rkey ^= 0x80;
		} else if (k == 1) {
			b.reth_va = (uintptr_t)h.buf + h.len - 32;
		} else {
			ro = ibv_reg_mr(h.pd, h.buf, 4096, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
			CHECK(ro != NULL, "read-only MR");
			b.reth_rkey = ro ? ro->rkey : 0;
		}
		CHECK(sw_h_rx(&b, pay, sizeof(pay)) == 0, "rx");
		sw_h_poll();
		const struct dpv_pkt_info *n = one_sent(what[k]);
		CHECK(n && n->aeth_syndrome == DPV_AETH_NAK_REM_ACC && n->psn == RQ_PSN,
		      "%s: NAK remote access error", what[k]);
		CHECK(sw_h_qp_state(&h) == IBV_QPS_ERR, "%s: QP in ERR", what[k]);
		CHECK(h.buf[0] == 0, "%s: nothing written", what[k]);
		if (ro)
			ibv_dereg_mr(ro);
		sw_h_qp_destroy(&h);
	}
}

/* A WRITE of three packets (FIRST, MIDDLE, LAST) lands where the RETH
 * says; WRITE LAST with immediate consumes a receive WQE; a packet of
 * another message in the middle is an invalid request (IBA 9.7.4.1.4). */
static void write_multi(void)
{
	struct sw_h_qp h;
	struct ibv_wc wc;
	static uint8_t pay[3 * 1024];

	if (new_qp(&h, 4, 12))
		return;
	for (unsigned int i = 0; i < sizeof(pay); i++)
		pay[i] = (uint8_t)(i ^ (i >> 8));
	CHECK(sw_h_post_recv(&h, 21, 0, 16) == 0, "post_recv for the immediate");
	const uint8_t ops[3] = { DPV_OPC_WRITE_FIRST, DPV_OPC_WRITE_MIDDLE, DPV_OPC_WRITE_LAST_IMM };
	for (int i = 0; i < 3; i++) {
		sw_h_req(&b, &h, ops[i], RQ_PSN + (uint32_t)i);
		b.reth_va = (uintptr_t)h.buf + 8192;
		b.reth_rkey = h.mr->rkey;
		b.reth_len = sizeof(pay);
		b.immdt = 0xa1b2c3d4;
		b.ackreq = i == 2;
		CHECK(sw_h_rx(&b, pay + i * 1024, 1024) == 0, "rx %d", i);
	}
	sw_h_poll();
	const struct dpv_pkt_info *a = one_sent("WRITE x3");
	CHECK(a && a->psn == RQ_PSN + 2 && a->aeth_msn == 1, "one ACK for the last PSN, MSN 1");
	CHECK(memcmp(h.buf + 8192, pay, sizeof(pay)) == 0, "3 KiB placed");
	CHECK(sw_h_poll_cq(&h, &wc) == 1 && wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM &&
	      wc.byte_len == sizeof(pay) && (wc.wc_flags & IBV_WC_WITH_IMM) &&
	      be32toh(wc.imm_data) == 0xa1b2c3d4, "RECV_RDMA_WITH_IMM completion with the immediate");

	/* SEND MIDDLE without a SEND FIRST: invalid request, QP to ERR */
	sw_h_clear();
	sw_h_req(&b, &h, DPV_OPC_SEND_MIDDLE, RQ_PSN + 3);
	CHECK(sw_h_rx(&b, pay, 1024) == 0, "rx");
	sw_h_poll();
	const struct dpv_pkt_info *n = one_sent("MIDDLE out of sequence");
	CHECK(n && n->aeth_syndrome == DPV_AETH_NAK_INV_REQ && n->psn == RQ_PSN + 3,
	      "NAK invalid request");
	CHECK(sw_h_qp_state(&h) == IBV_QPS_ERR, "QP in ERR");
	sw_h_qp_destroy(&h);
}

/* IBA 9.7.4.1.6: a SEND longer than the receive WQE: NAK invalid request,
 * the WQE completes with IBV_WC_LOC_LEN_ERR, the QP goes to ERR. */
static void send_too_long(void)
{
	struct sw_h_qp h;
	struct ibv_wc wc;
	uint8_t pay[200] = { 1 };

	if (new_qp(&h, 4, 12))
		return;
	CHECK(sw_h_post_recv(&h, 31, 0, 100) == 0, "post_recv of 100 bytes");
	sw_h_req(&b, &h, DPV_OPC_SEND_ONLY, RQ_PSN);
	CHECK(sw_h_rx(&b, pay, sizeof(pay)) == 0, "rx 200 bytes");
	sw_h_poll();
	const struct dpv_pkt_info *n = one_sent("SEND too long");
	CHECK(n && n->aeth_syndrome == DPV_AETH_NAK_INV_REQ, "NAK invalid request");
	CHECK(sw_h_poll_cq(&h, &wc) == 1 && wc.wr_id == 31 && wc.status == IBV_WC_LOC_LEN_ERR,
	      "LOC_LEN_ERR completion (status %d)", wc.status);
	CHECK(sw_h_qp_state(&h) == IBV_QPS_ERR, "QP in ERR");
	sw_h_qp_destroy(&h);
}

/* SEND ONLY with invalidate (IBA 9.4.1.1): of a type 2B window bound to
 * the QP, the completion says IBV_WC_WITH_INV and carries the rkey of the
 * IETH, the window is invalidated (a second one for it is refused); of an
 * rkey no bound type 2 window has, the receive completes with
 * IBV_WC_REM_INV_REQ_ERR, an invalid request NAK goes out and the QP goes
 * to ERR. */
static void send_inv(void)
{
	struct sw_h_qp h;
	struct ibv_wc wc;
	uint8_t pay[16] = { 3 };

	if (new_qp(&h, 4, 12))
		return;
	struct ibv_mr *mr = ibv_reg_mr(h.pd, h.buf, 4096, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);
	struct ibv_mw *mw = ibv_alloc_mw(h.pd, IBV_MW_TYPE_2);
	if (!CHECK(mr && mw, "MR and window"))
		return;
	struct ibv_send_wr wr, *bad = NULL;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 40;
	wr.opcode = IBV_WR_BIND_MW;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = ibv_inc_rkey(mw->rkey);
	wr.bind_mw.bind_info = (struct ibv_mw_bind_info){ .mr = mr, .addr = (uintptr_t)h.buf, .length = 4096,
							  .mw_access_flags = IBV_ACCESS_REMOTE_WRITE };
	CHECK(ibv_post_send(h.qp, &wr, &bad) == 0, "post BIND_MW");
	CHECK(sw_h_poll_cq(&h, &wc) == 1 && wc.wr_id == 40 && wc.status == IBV_WC_SUCCESS &&
	      wc.opcode == IBV_WC_BIND_MW, "bind completes (status %d), nothing sent (%u)", wc.status, sw_h_nsent());
	CHECK(sw_h_post_recv(&h, 41, 0, 64) == 0, "post_recv");
	sw_h_req(&b, &h, DPV_OPC_SEND_ONLY_INV, RQ_PSN);
	b.ieth_rkey = wr.bind_mw.rkey;
	CHECK(sw_h_rx(&b, pay, sizeof(pay)) == 0, "rx");
	CHECK(sw_h_poll_cq(&h, &wc) == 1 && wc.status == IBV_WC_SUCCESS && (wc.wc_flags & IBV_WC_WITH_INV) &&
	      wc.invalidated_rkey == wr.bind_mw.rkey, "WITH_INV, invalidated_rkey %#x", wc.invalidated_rkey);
	sw_h_clear();
	CHECK(sw_h_post_recv(&h, 42, 0, 64) == 0, "post_recv");
	sw_h_req(&b, &h, DPV_OPC_SEND_ONLY_INV, RQ_PSN + 1);
	b.ieth_rkey = wr.bind_mw.rkey; /* invalidated already */
	CHECK(sw_h_rx(&b, pay, sizeof(pay)) == 0, "rx");
	sw_h_poll();
	const struct dpv_pkt_info *n = one_sent("SEND with invalidate of a free window");
	CHECK(n && n->aeth_syndrome == DPV_AETH_NAK_INV_REQ, "NAK invalid request");
	CHECK(sw_h_poll_cq(&h, &wc) == 1 && wc.wr_id == 42 && wc.status == IBV_WC_REM_INV_REQ_ERR,
	      "REM_INV_REQ_ERR completion (status %d)", wc.status);
	CHECK(sw_h_qp_state(&h) == IBV_QPS_ERR, "QP in ERR");
	CHECK(ibv_dealloc_mw(mw) == 0 && ibv_dereg_mr(mr) == 0, "window and MR gone");
	sw_h_qp_destroy(&h);
}

/* IBA 9.7.5.2 (table 38 opcodes) and 9.4.3: a READ of 2500 bytes with path
 * MTU 1024 is answered by READ RESPONSE FIRST (AETH), MIDDLE, LAST (AETH) on
 * the READ's PSN and the next two, the data taken from memory; the next
 * request is expected after them. A duplicate READ (IBA 9.9.2.2) is
 * replayed from the saved resource, the memory read again; one for the
 * middle of the READ gets the rest, as a new response stream. */
static void read_and_replay(void)
{
	struct sw_h_qp h;

	if (new_qp(&h, 4, 12))
		return;
	for (unsigned int i = 0; i < 2500; i++)
		h.buf[4096 + i] = (uint8_t)(i * 13);
	sw_h_req(&b, &h, DPV_OPC_READ_REQUEST, RQ_PSN);
	b.reth_va = (uintptr_t)h.buf + 4096;
	b.reth_rkey = h.mr->rkey;
	b.reth_len = 2500;
	CHECK(sw_h_rx(&b, NULL, 0) == 0, "rx READ");
	sw_h_poll();
	const uint8_t want[3] = { DPV_OPC_READ_RESP_FIRST, DPV_OPC_READ_RESP_MIDDLE,
				  DPV_OPC_READ_RESP_LAST };
	const uint32_t lens[3] = { 1024, 1024, 452 };
	CHECK(sw_h_nsent() == 3, "3 responses (got %u)", sw_h_nsent());
	for (unsigned int i = 0; i < 3 && i < sw_h_nsent(); i++) {
		const struct sw_h_frame *f = sw_h_sent(i);
		CHECK(f->pi.opcode == want[i] && f->pi.psn == RQ_PSN + i && f->pi.payload_len == lens[i],
		      "response %u: opcode 0x%02x psn %#x len %u", i, f->pi.opcode, f->pi.psn,
		      f->pi.payload_len);
		CHECK(memcmp(f->bytes + f->pi.payload_off, h.buf + 4096 + 1024 * i, lens[i]) == 0,
		      "response %u carries the memory", i);
		if (i != 1)
			CHECK((f->pi.aeth_syndrome & DPV_AETH_TYPE_MASK) == DPV_AETH_ACK && f->pi.aeth_msn == 1,
			      "response %u: AETH ACK MSN 1", i);
	}
	/* duplicate: the peer lost the responses and asks again */
	sw_h_clear();
	h.buf[4096] = 0xee;
	CHECK(sw_h_rx(&b, NULL, 0) == 0, "rx duplicate READ");
	sw_h_poll();
	CHECK(sw_h_nsent() == 3, "replayed: 3 responses (got %u)", sw_h_nsent());
	if (sw_h_nsent() == 3) {
		CHECK(sw_h_sent(0)->pi.psn == RQ_PSN && sw_h_sent(2)->pi.psn == RQ_PSN + 2,
		      "same PSNs");
		CHECK(sw_h_sent(0)->bytes[sw_h_sent(0)->pi.payload_off] == 0xee,
		      "the replay reads memory again");
	}
	/* a duplicate for the middle of the READ: responses from that PSN on */
	sw_h_clear();
	sw_h_req(&b, &h, DPV_OPC_READ_REQUEST, RQ_PSN + 1);
	b.reth_va = (uintptr_t)h.buf + 4096 + 1024;
	b.reth_rkey = h.mr->rkey;
	b.reth_len = 1476;
	CHECK(sw_h_rx(&b, NULL, 0) == 0, "rx partial duplicate READ");
	sw_h_poll();
	CHECK(sw_h_nsent() == 2, "partial replay: 2 responses (got %u)", sw_h_nsent());
	if (sw_h_nsent() == 2) {
		const struct sw_h_frame *f0 = sw_h_sent(0), *f1 = sw_h_sent(1);

		/* a new response stream for the shortened READ (IBA 9.7.5.2):
		 * FIRST at the PSN asked for, then LAST */
		CHECK(f0->pi.opcode == DPV_OPC_READ_RESP_FIRST && f0->pi.psn == RQ_PSN + 1 &&
		      f0->pi.payload_len == 1024, "partial replay: FIRST at PSN %#x", RQ_PSN + 1);
		CHECK(f1->pi.opcode == DPV_OPC_READ_RESP_LAST && f1->pi.psn == RQ_PSN + 2 &&
		      f1->pi.payload_len == 452, "partial replay: LAST at PSN %#x", RQ_PSN + 2);
		CHECK(memcmp(f0->bytes + f0->pi.payload_off, h.buf + 4096 + 1024, 1024) == 0,
		      "partial replay: the data from the VA asked for");
	}
	/* the next new request is expected after the READ's range */
	sw_h_clear();
	CHECK(sw_h_post_recv(&h, 51, 0, 64) == 0, "post_recv");
	sw_h_req(&b, &h, DPV_OPC_SEND_ONLY, RQ_PSN + 3);
	b.ackreq = true;
	CHECK(sw_h_rx(&b, "x", 1) == 0, "rx SEND after the READ");
	sw_h_poll();
	const struct dpv_pkt_info *a = one_sent("SEND after READ");
	CHECK(a && a->psn == RQ_PSN + 3 && a->aeth_msn == 2, "ACK PSN %#x MSN 2", RQ_PSN + 3);
	sw_h_qp_destroy(&h);
}

/* Atomics (IBA 9.4.5, 9.9.2.3): CMP_SWAP and FETCH_ADD return the original
 * value in an ATOMIC ACKNOWLEDGE and change memory once; a duplicate is
 * answered with the saved value without executing again; a VA that is not
 * 8-byte aligned is an invalid request. */
static void atomics(void)
{
	struct sw_h_qp h;
	uint64_t *word;

	if (new_qp(&h, 4, 12))
		return;
	word = (uint64_t *)(h.buf + 256);
	*word = 100;
	sw_h_req(&b, &h, DPV_OPC_FETCH_ADD, RQ_PSN);
	b.atm_va = (uintptr_t)word;
	b.atm_rkey = h.mr->rkey;
	b.atm_swap_add = 5;
	CHECK(sw_h_rx(&b, NULL, 0) == 0, "rx FETCH_ADD");
	sw_h_poll();
	const struct dpv_pkt_info *a = one_sent("FETCH_ADD");
	CHECK(a && a->opcode == DPV_OPC_ATOMIC_ACK && a->psn == RQ_PSN && a->atmack_orig == 100,
	      "ATOMIC ACK, original 100");
	CHECK(*word == 105, "memory 105 (got %llu)", (unsigned long long)*word);
	/* duplicate: same answer, no second add */
	sw_h_clear();
	CHECK(sw_h_rx(&b, NULL, 0) == 0, "rx duplicate FETCH_ADD");
	sw_h_poll();
	a = one_sent("duplicate FETCH_ADD");
	CHECK(a && a->opcode == DPV_OPC_ATOMIC_ACK && a->atmack_orig == 100, "saved original 100");
	CHECK(*word == 105, "not executed twice (got %llu)", (unsigned long long)*word);

	sw_h_clear();
	sw_h_req(&b, &h, DPV_OPC_CMP_SWAP, RQ_PSN + 1);
	b.atm_va = (uintptr_t)word;
	b.atm_rkey = h.mr->rkey;
	b.atm_cmp = 105;
	b.atm_swap_add = 7;
	CHECK(sw_h_rx(&b, NULL, 0) == 0, "rx CMP_SWAP");
	sw_h_poll();
	a = one_sent("CMP_SWAP");
	CHECK(a && a->atmack_orig == 105 && *word == 7, "swapped: original 105, memory 7");
	sw_h_clear();
	sw_h_req(&b, &h, DPV_OPC_CMP_SWAP, RQ_PSN + 2);
	b.atm_va = (uintptr_t)word;
	b.atm_rkey = h.mr->rkey;
	b.atm_cmp = 1;
	b.atm_swap_add = 9;
	CHECK(sw_h_rx(&b, NULL, 0) == 0, "rx CMP_SWAP, compare fails");
	sw_h_poll();
	a = one_sent("CMP_SWAP no swap");
	CHECK(a && a->atmack_orig == 7 && *word == 7, "not swapped: original 7, memory 7");

	sw_h_clear();
	sw_h_req(&b, &h, DPV_OPC_FETCH_ADD, RQ_PSN + 3);
	b.atm_va = (uintptr_t)word + 4;
	b.atm_rkey = h.mr->rkey;
	b.atm_swap_add = 1;
	CHECK(sw_h_rx(&b, NULL, 0) == 0, "rx misaligned FETCH_ADD");
	sw_h_poll();
	a = one_sent("misaligned");
	CHECK(a && a->aeth_syndrome == DPV_AETH_NAK_INV_REQ, "NAK invalid request");
	CHECK(*word == 7, "memory untouched");
	CHECK(sw_h_qp_state(&h) == IBV_QPS_ERR, "QP in ERR");
	sw_h_qp_destroy(&h);
}

/* IBA 9.7.4.1.7: max_dest_rd_atomic bounds the saved resources: with 2,
 * the READ three READs back is no longer replayed. With 0, a READ is an
 * invalid request. */
static void resources(void)
{
	struct sw_h_qp h;

	if (new_qp(&h, 2, 12))
		return;
	for (uint32_t i = 0; i < 3; i++) {
		sw_h_req(&b, &h, DPV_OPC_READ_REQUEST, RQ_PSN + i);
		b.reth_va = (uintptr_t)h.buf;
		b.reth_rkey = h.mr->rkey;
		b.reth_len = 8;
		CHECK(sw_h_rx(&b, NULL, 0) == 0, "rx READ %u", i);
	}
	sw_h_poll();
	CHECK(sw_h_nsent() == 3, "three READ RESPONSE ONLY");
	sw_h_clear();
	sw_h_req(&b, &h, DPV_OPC_READ_REQUEST, RQ_PSN);
	b.reth_va = (uintptr_t)h.buf;
	b.reth_rkey = h.mr->rkey;
	b.reth_len = 8;
	CHECK(sw_h_rx(&b, NULL, 0) == 0, "rx the first READ again");
	sw_h_poll();
	CHECK(sw_h_nsent() == 0, "its resource was reused: no replay (sent %u)", sw_h_nsent());
	sw_h_clear();
	sw_h_req(&b, &h, DPV_OPC_READ_REQUEST, RQ_PSN + 2);
	b.reth_va = (uintptr_t)h.buf;
	b.reth_rkey = h.mr->rkey;
	b.reth_len = 8;
	CHECK(sw_h_rx(&b, NULL, 0) == 0, "rx the last READ again");
	sw_h_poll();
	CHECK(sw_h_nsent() == 1, "the last READ is replayed");
	sw_h_qp_destroy(&h);

	if (new_qp(&h, 0, 12))
		return;
	sw_h_req(&b, &h, DPV_OPC_READ_REQUEST, RQ_PSN);
	b.reth_va = (uintptr_t)h.buf;
	b.reth_rkey = h.mr->rkey;
	b.reth_len = 8;
	CHECK(sw_h_rx(&b, NULL, 0) == 0, "rx READ");
	sw_h_poll();
	const struct dpv_pkt_info *n = one_sent("READ without resources");
	CHECK(n && n->aeth_syndrome == DPV_AETH_NAK_INV_REQ, "NAK invalid request");
	sw_h_qp_destroy(&h);
}

/* ibv_dereg_mr while a message or a READ still uses the MR (the memory is
 * the application's again as soon as it returns): every packet resolves
 * the key again, so the next packet fails instead of touching the memory,
 * as rxe rechecks the MR of each READ response (rxe_recheck_mr). A SEND:
 * NAK remote operational error, the receive completes LOC_PROT_ERR; a
 * WRITE, a READ being answered or a READ replayed: NAK remote access
 * error. The QP goes to ERR. */
static struct ibv_mr *second_mr(struct sw_h_qp *h, uint8_t **m, size_t len)
{
	*m = aligned_alloc(4096, len);
	if (!*m)
		return NULL;
	memset(*m, 0, len);
	return ibv_reg_mr(h->pd, *m, len, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
}

static bool all_zero(const uint8_t *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (p[i])
			return false;
	return true;
}

static void mr_gone(void)
{
	struct sw_h_qp h;
	struct ibv_wc wc;
	static uint8_t pay[1024];
	uint8_t *m;
	struct ibv_mr *mr;
	const struct dpv_pkt_info *n;

	memset(pay, 0x5c, sizeof(pay));
	/* a SEND whose receive buffer is deregistered after its FIRST packet */
	if (new_qp(&h, 4, 12))
		return;
	mr = second_mr(&h, &m, 8192);
	struct ibv_sge sge = { .addr = (uintptr_t)m, .length = 8192, .lkey = mr ? mr->lkey : 0 };
	struct ibv_recv_wr rw = { .wr_id = 31, .sg_list = &sge, .num_sge = 1 }, *bad;
	CHECK(mr && ibv_post_recv(h.qp, &rw, &bad) == 0, "post_recv into a second MR");
	sw_h_req(&b, &h, DPV_OPC_SEND_FIRST, RQ_PSN);
	CHECK(sw_h_rx(&b, pay, sizeof(pay)) == 0, "rx SEND FIRST");
	CHECK(m[0] == 0x5c, "FIRST placed");
	CHECK(ibv_dereg_mr(mr) == 0, "dereg the receive buffer's MR");
	memset(m, 0, 8192);
	sw_h_clear();
	sw_h_req(&b, &h, DPV_OPC_SEND_LAST, RQ_PSN + 1);
	b.ackreq = true;
	CHECK(sw_h_rx(&b, pay, 512) == 0, "rx SEND LAST");
	sw_h_poll();
	n = one_sent("SEND LAST into a deregistered MR");
	CHECK(n && n->aeth_syndrome == DPV_AETH_NAK_REM_OP && n->psn == RQ_PSN + 1, "NAK remote operational error");
	CHECK(sw_h_poll_cq(&h, &wc) == 1 && wc.wr_id == 31 && wc.status == IBV_WC_LOC_PROT_ERR,
	      "the receive completes LOC_PROT_ERR");
	CHECK(all_zero(m, 8192), "nothing written after the dereg");
	CHECK(sw_h_qp_state(&h) == IBV_QPS_ERR, "QP in ERR");
	sw_h_qp_destroy(&h);
	free(m);

	/* a WRITE whose target is deregistered after its FIRST packet */
	if (new_qp(&h, 4, 12))
		return;
	mr = second_mr(&h, &m, 8192);
	for (int i = 0; i < 2 && mr; i++) {
		sw_h_req(&b, &h, i ? DPV_OPC_WRITE_LAST : DPV_OPC_WRITE_FIRST, RQ_PSN + (uint32_t)i);
		b.reth_va = (uintptr_t)m;
		b.reth_rkey = mr->rkey;
		b.reth_len = 2048;
		b.ackreq = i == 1;
		if (i == 1) {
			CHECK(m[0] == 0x5c, "FIRST placed");
			CHECK(ibv_dereg_mr(mr) == 0, "dereg the WRITE's MR");
			memset(m, 0, 8192);
			sw_h_clear();
		}
		CHECK(sw_h_rx(&b, pay, 1024) == 0, "rx WRITE %d", i);
	}
	sw_h_poll();
	n = one_sent("WRITE LAST into a deregistered MR");
	CHECK(n && n->aeth_syndrome == DPV_AETH_NAK_REM_ACC && n->psn == RQ_PSN + 1, "NAK remote access error");
	CHECK(all_zero(m, 8192), "nothing written after the dereg");
	CHECK(sw_h_qp_state(&h) == IBV_QPS_ERR, "QP in ERR");
	sw_h_qp_destroy(&h);
	free(m);

	/* a READ of 100 KiB: SW_RESP_BURST (64) responses go at once, the
	 * rest one burst per timer scan; the MR goes in between */
	if (new_qp(&h, 4, 12))
		return;
	mr = second_mr(&h, &m, 128 * 1024);
	memset(m, 0x77, 128 * 1024);
	sw_h_req(&b, &h, DPV_OPC_READ_REQUEST, RQ_PSN);
	b.reth_va = (uintptr_t)m;
	b.reth_rkey = mr ? mr->rkey : 0;
	b.reth_len = 100 * 1024;
	CHECK(sw_h_rx(&b, NULL, 0) == 0, "rx READ of 100 KiB");
	CHECK(sw_h_nsent() == 64, "the first 64 responses (got %u)", sw_h_nsent());
	CHECK(ibv_dereg_mr(mr) == 0, "dereg the READ's MR");
	sw_h_clear();
	for (int i = 0; i < 1000 && sw_h_nsent() == 0; i++) {
		usleep(20);
		sw_h_poll();
	}
	n = one_sent("the rest of the READ");
	CHECK(n && n->opcode == DPV_OPC_ACK && n->aeth_syndrome == DPV_AETH_NAK_REM_ACC && n->psn == RQ_PSN,
	      "NAK remote access error for the READ instead of its responses (opcode 0x%02x)", n ? n->opcode : 0);
	CHECK(sw_h_qp_state(&h) == IBV_QPS_ERR, "QP in ERR");
	sw_h_qp_destroy(&h);
	free(m);

	/* a READ answered, its MR deregistered, the READ asked again */
	if (new_qp(&h, 4, 12))
		return;
	mr = second_mr(&h, &m, 8192);
	sw_h_req(&b, &h, DPV_OPC_READ_REQUEST, RQ_PSN);
	b.reth_va = (uintptr_t)m;
	b.reth_rkey = mr ? mr->rkey : 0;
	b.reth_len = 2048;
	CHECK(sw_h_rx(&b, NULL, 0) == 0, "rx READ");
	CHECK(sw_h_nsent() == 2, "two responses");
	CHECK(ibv_dereg_mr(mr) == 0, "dereg the READ's MR");
	sw_h_clear();
	CHECK(sw_h_rx(&b, NULL, 0) == 0, "rx the READ again");
	sw_h_poll();
	n = one_sent("replay from a deregistered MR");
	CHECK(n && n->opcode == DPV_OPC_ACK && n->aeth_syndrome == DPV_AETH_NAK_REM_ACC && n->psn == RQ_PSN,
	      "NAK remote access error instead of a replay");
	CHECK(sw_h_qp_state(&h) == IBV_QPS_ERR, "QP in ERR");
	sw_h_qp_destroy(&h);
	free(m);
}

/* A full TX queue (-ENOBUFS) holds the response, it is not lost: the next
 * poll sends it. */
static void tx_full(void)
{
	struct sw_h_qp h;

	if (new_qp(&h, 4, 12))
		return;
	sw_h_xmit_result(-ENOBUFS);
	sw_h_req(&b, &h, DPV_OPC_READ_REQUEST, RQ_PSN);
	b.reth_va = (uintptr_t)h.buf;
	b.reth_rkey = h.mr->rkey;
	b.reth_len = 16;
	CHECK(sw_h_rx(&b, NULL, 0) == 0, "rx READ");
	sw_h_poll();
	CHECK(sw_h_nsent() == 0, "nothing went out");
	sw_h_xmit_result(0);
	for (int i = 0; i < 200 && sw_h_nsent() == 0; i++)
		sw_h_poll();
	const struct dpv_pkt_info *r = one_sent("held response");
	CHECK(r && r->opcode == DPV_OPC_READ_RESP_ONLY && r->psn == RQ_PSN, "READ RESPONSE ONLY sent later");
	sw_h_qp_destroy(&h);
}

/* A QP moved to ERR while the ACK of a SEND it placed still waits for the
 * end of the burst sends that ACK at once (a NIC acks on receipt): it leaves
 * before the DREQ of an rdma_disconnect that follows the completion; the end
 * of the burst then sends nothing more. */
static void ack_before_error(void)
{
	struct sw_h_qp h;
	struct ibv_wc wc;
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };
	uint8_t pay[16] = { 9 };

	if (new_qp(&h, 4, 12))
		return;
	CHECK(sw_h_post_recv(&h, 21, 0, 1024) == 0, "post_recv");
	sw_h_req(&b, &h, DPV_OPC_SEND_ONLY, RQ_PSN);
	b.ackreq = true;
	CHECK(sw_h_rx(&b, pay, sizeof(pay)) == 0, "rx");
	CHECK(sw_h_nsent() == 0, "the ACK waits for the end of the burst");
	CHECK(sw_h_poll_cq(&h, &wc) == 1 && wc.wr_id == 21 && wc.status == IBV_WC_SUCCESS,
	      "the receive completion is there first");
	CHECK(ibv_modify_qp(h.qp, &a, IBV_QP_STATE) == 0, "QP to ERR");
	const struct dpv_pkt_info *p = one_sent("ACK on the way to ERR");
	if (p)
		CHECK(p->opcode == DPV_OPC_ACK && p->psn == RQ_PSN && p->aeth_msn == 1 &&
		      (p->aeth_syndrome & DPV_AETH_TYPE_MASK) == DPV_AETH_ACK,
		      "ACK PSN %#x MSN %u (got opcode 0x%02x PSN %#x MSN %u)", RQ_PSN, 1, p->opcode, p->psn,
		      p->aeth_msn);
	sw_h_clear();
	sw_h_poll();
	CHECK(sw_h_nsent() == 0, "the end of the burst sends no second ACK");
	sw_h_qp_destroy(&h);
}

/* A thread waits for the receive completion (the CQ is armed): the ACK
 * leaves before the completion is there, not at the end of the burst (the
 * waiter may _exit() as soon as it wakes: fio's jobs do; a held ACK would
 * die with it). A CQ armed for solicited completions only, a SEND without
 * SE: coalesced as usual; with SE: at once. */
static void ack_before_wakeup(void)
{
	struct sw_h_qp h;
	struct ibv_wc wc;
	uint8_t pay[16] = { 3 };
	const struct dpv_pkt_info *p;

	if (new_qp(&h, 4, 12))
		return;
	for (uint64_t i = 0; i < 3; i++)
		CHECK(sw_h_post_recv(&h, 31 + i, 0, 1024) == 0, "post_recv");
	CHECK(ibv_req_notify_cq(h.cq, 0) == 0, "arm the CQ (next completion)");
	sw_h_req(&b, &h, DPV_OPC_SEND_ONLY, RQ_PSN);
	b.ackreq = true;
	CHECK(sw_h_rx(&b, pay, sizeof(pay)) == 0, "rx");
	p = one_sent("ACK of a SEND an armed CQ waits for");
	if (p)
		CHECK(p->opcode == DPV_OPC_ACK && p->psn == RQ_PSN && p->aeth_msn == 1,
		      "ACK PSN %#x MSN 1 (got opcode 0x%02x PSN %#x MSN %u)", RQ_PSN, p->opcode, p->psn,
		      p->aeth_msn);
	CHECK(sw_h_poll_cq(&h, &wc) == 1 && wc.wr_id == 31 && wc.status == IBV_WC_SUCCESS,
	      "the receive completion");
	sw_h_clear();
	sw_h_poll();
	CHECK(sw_h_nsent() == 0, "the end of the burst sends no second ACK");

	CHECK(ibv_req_notify_cq(h.cq, 1) == 0, "arm the CQ (solicited only)");
	sw_h_req(&b, &h, DPV_OPC_SEND_ONLY, RQ_PSN + 1);
	b.ackreq = true;
	CHECK(sw_h_rx(&b, pay, sizeof(pay)) == 0, "rx");
	CHECK(sw_h_nsent() == 0, "no SE, solicited-only arm: the ACK is coalesced");
	sw_h_poll();
	p = one_sent("ACK at the end of the burst");
	if (p)
		CHECK(p->psn == RQ_PSN + 1 && p->aeth_msn == 2, "ACK PSN %#x MSN 2 (got %#x, %u)",
		      RQ_PSN + 1, p->psn, p->aeth_msn);
	sw_h_clear();
	sw_h_req(&b, &h, DPV_OPC_SEND_ONLY, RQ_PSN + 2);
	b.ackreq = true;
	b.se = true;
	CHECK(sw_h_rx(&b, pay, sizeof(pay)) == 0, "rx");
	b.se = false;
	p = one_sent("ACK of a solicited SEND");
	if (p)
		CHECK(p->psn == RQ_PSN + 2 && p->aeth_msn == 3, "ACK PSN %#x MSN 3 (got %#x, %u)",
		      RQ_PSN + 2, p->psn, p->aeth_msn);
	sw_h_qp_destroy(&h);
}

int main(int argc, char **argv)
{
	if (sw_h_init(argc, argv))
		return 1;
	send_in_order();
	psn_ahead();
	rnr();
	write_access();
	write_multi();
	send_too_long();
	send_inv();
	read_and_replay();
	atomics();
	resources();
	tx_full();
	mr_gone();
	ack_before_error();
	ack_before_wakeup();
	return dpvt_finish();
}
