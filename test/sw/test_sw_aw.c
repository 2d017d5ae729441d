/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * RDMA ATOMIC WRITE and RDMA FLUSH (IBA 1.5 annex A19) in the engine, below
 * the verbs API (sw_harness.h), as Linux rxe implements them:
 *   requester  the frames built for ibv_wr_atomic_write, ibv_post_send's
 *              IBV_WR_ATOMIC_WRITE and dpv_wr_flush (rdma-core 45's
 *              ibv_wr_flush), checked byte by byte (BTH opcode 0x1d, RETH,
 *              8 bytes of data; 0x1c, FETH, RETH, no data) and with their
 *              ICRC; completion on a zero-length RDMA READ RESPONSE ONLY;
 *              a response with data is IBV_WC_BAD_RESP_ERR; an ACK past an
 *              unanswered ATOMIC WRITE makes the requester send it again;
 *   responder  execution (the 8 bytes land; a FLUSH's range or MR), the
 *              zero-length READ RESPONSE ONLY with AETH and MSN, duplicates
 *              answered from the saved resource and never executed twice,
 *              and the NAKs: unaligned or short ATOMIC WRITE, FLUSH of no
 *              or an unknown placement type (invalid request), no remote
 *              write right, no FLUSH right, FLUSH range outside the MR,
 *              bad rkey (remote access error), no responder resources.
 * With an argument, every frame the engine sent is also written to that
 * pcap file (check_aw_capture.py has tshark and icrc_check.py read it).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dpverbs.h"
#include "dpvt_check.h"
#include "dpvt_wire.h"
#include "sw_harness.h"

#define RQ_PSN 0x100u
#define SQ_PSN 0x800u
#define FLUSH_ALL (DPV_ACCESS_FLUSH_GLOBAL | DPV_ACCESS_FLUSH_PERSISTENT)
#define ACCESS_STD (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | \
		    IBV_ACCESS_REMOTE_ATOMIC)

static struct dpv_pkt_build b;
static FILE *g_pcap;
static uint32_t g_pcap_n;

/* Keep what the engine sent (pcap), then forget it. */
static void clear(void)
{
	for (unsigned int i = 0; g_pcap && i < sw_h_nsent(); i++) {
		const struct sw_h_frame *f = sw_h_sent(i);
		g_pcap_n++;
		CHECK(dpvt_pcap_write_pkt(g_pcap, 1700000000u + g_pcap_n, 0, f->bytes, f->len) == 0, "pcap write");
	}
	sw_h_clear();
}

static const struct sw_h_frame *one_frame(const char *what)
{
	CHECK(sw_h_nsent() == 1, "%s: one frame sent (got %u)", what, sw_h_nsent());
	return sw_h_nsent() >= 1 ? sw_h_sent(sw_h_nsent() - 1) : NULL;
}

static int new_qp(struct sw_h_qp *h, int access, uint64_t ops, uint8_t rd_atomic)
{
	sw_h_access = access;
	sw_h_send_ops = ops;
	int r = sw_h_qp_create(h, IBV_QPT_RC, RQ_PSN, SQ_PSN, rd_atomic, 12, 7, 7);
	sw_h_access = 0;
	sw_h_send_ops = 0;
	CHECK(r == 0, "RC QP to RTS: %s", strerror(errno));
	clear();
	return r;
}

static uint64_t be64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* The BTH of a request the engine sent: opcode, AckReq, PSN, no pad
 * unless paylen says so, and a good ICRC. Returns the BTH or NULL. */
static const uint8_t *req_bth(const struct sw_h_frame *f, uint8_t op, uint32_t psn, uint32_t paylen,
			      const char *what)
{
	struct dpv_pkt_info pi;
	if (!f)
		return NULL;
	const uint8_t *bth = f->bytes + f->pi.bth_off;
	CHECK(dpv_pkt_parse_check(f->bytes, f->len, &pi) == DPV_PARSE_OK, "%s: parses, ICRC good", what);
	CHECK(bth[0] == op, "%s: BTH opcode 0x%02x (want 0x%02x)", what, bth[0], op);
	CHECK(((bth[1] >> 4) & 3) == ((4 - paylen % 4) % 4), "%s: pad count", what);
	CHECK(bth[8] & 0x80, "%s: AckReq", what);
	CHECK((uint32_t)(bth[9] << 16 | bth[10] << 8 | bth[11]) == psn, "%s: PSN %#x", what, psn);
	CHECK(pi.payload_len == paylen, "%s: %u bytes of payload (got %u)", what, paylen, pi.payload_len);
	CHECK(f->len == (uint32_t)f->pi.bth_off + dpv_opcode_table[op].hdr_len + paylen + (4 - paylen % 4) % 4 + 4,
	      "%s: frame length %u", what, f->len);
	return bth;
}

/* A response (opcode, psn, syndrome, msn) from the peer to h's QP. */
static void respond(const struct sw_h_qp *h, uint8_t opcode, uint32_t psn, uint8_t syndrome, uint32_t msn,
		    const void *pay, uint32_t len)
{
	memset(&b, 0, sizeof(b));
	b.opcode = opcode;
	b.dqpn = h->qp->qp_num;
	b.psn = psn;
	b.aeth_syndrome = syndrome;
	b.aeth_msn = msn;
	CHECK(sw_h_rx(&b, pay, len) == 0, "response 0x%02x psn %#x built", opcode, psn);
}

static void expect_wc(struct sw_h_qp *h, uint64_t wr_id, enum ibv_wc_status st, int op, uint32_t len,
		      const char *what)
{
	struct ibv_wc wc;
	sw_h_poll();
	int n = sw_h_poll_cq(h, &wc);
	CHECK(n == 1, "%s: a completion", what);
	if (n != 1)
		return;
	CHECK(wc.wr_id == wr_id && wc.status == st, "%s: wr_id %llu %s (want %llu %s)", what,
	      (unsigned long long)wc.wr_id, ibv_wc_status_str(wc.status), (unsigned long long)wr_id,
	      ibv_wc_status_str(st));
	if (st == IBV_WC_SUCCESS)
		CHECK((int)wc.opcode == op && wc.byte_len == len, "%s: opcode %d byte_len %u (want %d %u)", what,
		      wc.opcode, wc.byte_len, op, len);
}

/* ibv_wr_atomic_write, ibv_post_send(IBV_WR_ATOMIC_WRITE) and dpv_wr_flush:
 * the frames, then the completions on their responses. */
static void requester(void)
{
	struct sw_h_qp h;
	const uint64_t ops = IBV_QP_EX_WITH_ATOMIC_WRITE | DPV_QP_EX_WITH_FLUSH | IBV_QP_EX_WITH_RDMA_WRITE;
	static const uint8_t val[8] = {0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88};
	if (new_qp(&h, ACCESS_STD, ops, 4))
		return;
	struct ibv_qp_ex *qx = ibv_qp_to_qp_ex(h.qp);
	ibv_wr_start(qx);
	qx->wr_id = 1;
	qx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_atomic_write(qx, 0x1234, 0x7f0000001008ull, val);
	CHECK(ibv_wr_complete(qx) == 0, "ibv_wr_atomic_write posted");
	const uint8_t *bth = req_bth(one_frame("ATOMIC WRITE"), 0x1d, SQ_PSN, 8, "ATOMIC WRITE");
	if (bth) {
		CHECK(be64(bth + 12) == 0x7f0000001008ull && be32(bth + 20) == 0x1234 && be32(bth + 24) == 8,
		      "ATOMIC WRITE: RETH va, rkey, length 8");
		CHECK(memcmp(bth + 28, val, 8) == 0, "ATOMIC WRITE: the 8 bytes as given");
	}
	clear();
	respond(&h, DPV_OPC_READ_RESP_ONLY, SQ_PSN, DPV_AETH_CREDIT_INVALID, 1, NULL, 0);
	expect_wc(&h, 1, IBV_WC_SUCCESS, IBV_WC_ATOMIC_WRITE, 8, "ATOMIC WRITE");

	ibv_wr_start(qx);
	qx->wr_id = 2;
	dpv_wr_flush(qx, 0x1234, 0x7f0000002000ull, 4096, DPV_FLUSH_GLOBAL | DPV_FLUSH_PERSISTENT, DPV_FLUSH_RANGE);
	qx->wr_id = 3;
	dpv_wr_flush(qx, 0x4321, 0x7f0000003000ull, 64, DPV_FLUSH_GLOBAL, DPV_FLUSH_MR);
	CHECK(ibv_wr_complete(qx) == 0, "two dpv_wr_flush posted");
	CHECK(sw_h_nsent() == 2, "two FLUSH frames (got %u)", sw_h_nsent());
	for (unsigned int i = 0; i < 2 && i < sw_h_nsent(); i++) {
		bth = req_bth(sw_h_sent(i), 0x1c, SQ_PSN + 1 + i, 0, "FLUSH");
		if (!bth)
			continue;
		static const uint8_t feth[2][4] = {{0, 0, 0, 0x03}, {0, 0, 0, 0x11}};
		CHECK(memcmp(bth + 12, feth[i], 4) == 0, "FLUSH %u: FETH %02x %02x %02x %02x", i, bth[12], bth[13],
		      bth[14], bth[15]);
		CHECK(be64(bth + 16) == (i ? 0x7f0000003000ull : 0x7f0000002000ull) &&
			      be32(bth + 24) == (i ? 0x4321u : 0x1234u) && be32(bth + 28) == (i ? 64u : 4096u),
		      "FLUSH %u: RETH after the FETH", i);
	}
	clear();
	respond(&h, DPV_OPC_READ_RESP_ONLY, SQ_PSN + 1, DPV_AETH_CREDIT_INVALID, 2, NULL, 0);
	expect_wc(&h, 2, IBV_WC_SUCCESS, DPV_WC_FLUSH, 4096, "FLUSH range");
	respond(&h, DPV_OPC_READ_RESP_ONLY, SQ_PSN + 2, DPV_AETH_CREDIT_INVALID, 3, NULL, 0);
	expect_wc(&h, 3, IBV_WC_SUCCESS, DPV_WC_FLUSH, 64, "FLUSH MR");

	/* the classic API: the 8 bytes from an SGE */
	memcpy(h.buf + 512, val, 8);
	struct ibv_sge sge = {.addr = (uintptr_t)h.buf + 512, .length = 8, .lkey = h.mr->lkey};
	struct ibv_send_wr wr = {.wr_id = 4, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_ATOMIC_WRITE,
				 .send_flags = IBV_SEND_SIGNALED}, *bad;
	wr.wr.rdma.remote_addr = 0x7f0000004000ull;
	wr.wr.rdma.rkey = 0x99;
	CHECK(ibv_post_send(h.qp, &wr, &bad) == 0, "ibv_post_send ATOMIC WRITE");
	bth = req_bth(one_frame("posted ATOMIC WRITE"), 0x1d, SQ_PSN + 3, 8, "posted ATOMIC WRITE");
	if (bth)
		CHECK(memcmp(bth + 28, val, 8) == 0 && be32(bth + 20) == 0x99, "posted ATOMIC WRITE: data, rkey");
	clear();
	/* an ACK past it without its response: it is sent again (IBA
	 * 9.7.5.2.2, an implied NAK) with its PSN */
	respond(&h, DPV_OPC_ACK, SQ_PSN + 3, DPV_AETH_CREDIT_INVALID, 4, NULL, 0);
	sw_h_poll();
	CHECK(sw_h_nsent() >= 1 && sw_h_sent(0)->pi.opcode == 0x1d && sw_h_sent(0)->pi.psn == SQ_PSN + 3,
	      "ATOMIC WRITE sent again after an ACK that skipped its response");
	clear();
	/* a response with data is no response to it */
	respond(&h, DPV_OPC_READ_RESP_ONLY, SQ_PSN + 3, DPV_AETH_CREDIT_INVALID, 4, val, 8);
	expect_wc(&h, 4, IBV_WC_BAD_RESP_ERR, 0, 0, "READ RESPONSE with data");
	CHECK(sw_h_qp_state(&h) == IBV_QPS_ERR, "QP in ERR after a bad response");
	clear();
	sw_h_qp_destroy(&h);
}

/* An ATOMIC WRITE request from the peer. */
static int rx_aw(const struct sw_h_qp *h, uint32_t psn, uint64_t va, uint32_t rkey, const void *data, uint32_t len)
{
	sw_h_req(&b, h, DPV_OPC_ATOMIC_WRITE, psn);
	b.reth_va = va;
	b.reth_rkey = rkey;
	b.reth_len = len;
	return sw_h_rx(&b, data, len);
}

static int rx_flush(const struct sw_h_qp *h, uint32_t psn, uint64_t va, uint32_t rkey, uint32_t len,
		    uint8_t type, uint8_t level)
{
	sw_h_req(&b, h, DPV_OPC_FLUSH, psn);
	b.reth_va = va;
	b.reth_rkey = rkey;
	b.reth_len = len;
	b.feth_plt = type;
	b.feth_sel = level;
	return sw_h_rx(&b, NULL, 0);
}

/* The zero-length READ RESPONSE ONLY the responder answers with. */
static void expect_zero_resp(uint32_t psn, uint32_t msn, const char *what)
{
	sw_h_poll();
	const struct sw_h_frame *f = one_frame(what);
	if (!f)
		return;
	CHECK(f->pi.opcode == DPV_OPC_READ_RESP_ONLY && f->pi.psn == psn && f->pi.payload_len == 0,
	      "%s: READ RESPONSE ONLY psn %#x without data (opcode 0x%02x psn %#x len %u)", what, psn, f->pi.opcode,
	      f->pi.psn, f->pi.payload_len);
	CHECK(f->pi.aeth_syndrome == DPV_AETH_CREDIT_INVALID && f->pi.aeth_msn == msn, "%s: AETH ACK, MSN %u (got %u)",
	      what, msn, f->pi.aeth_msn);
	clear();
}

static void responder(void)
{
	struct sw_h_qp h;
	static const uint8_t val[8] = {0xa1, 0xb2, 0xc3, 0xd4, 0xe5, 0xf6, 0x07, 0x18};
	if (new_qp(&h, ACCESS_STD | FLUSH_ALL, 0, 4))
		return;
	uint8_t *w = h.buf + 64;
	CHECK(rx_aw(&h, RQ_PSN, (uintptr_t)w, h.mr->rkey, val, 8) == 0, "rx ATOMIC WRITE");
	expect_zero_resp(RQ_PSN, 1, "ATOMIC WRITE");
	CHECK(memcmp(w, val, 8) == 0, "the 8 bytes landed");
	/* duplicate: answered again, not executed again */
	memset(w, 0x5a, 8);
	CHECK(rx_aw(&h, RQ_PSN, (uintptr_t)w, h.mr->rkey, val, 8) == 0, "rx duplicate ATOMIC WRITE");
	expect_zero_resp(RQ_PSN, 1, "duplicate ATOMIC WRITE");
	CHECK(w[0] == 0x5a && w[7] == 0x5a, "a duplicate ATOMIC WRITE is not executed twice");

	CHECK(rx_flush(&h, RQ_PSN + 1, (uintptr_t)h.buf, h.mr->rkey, 4096, DPV_FLUSH_GLOBAL, DPV_FLUSH_RANGE) == 0,
	      "rx FLUSH global range");
	expect_zero_resp(RQ_PSN + 1, 2, "FLUSH global");
	/* selectivity MR: the RETH's range is not looked at */
	CHECK(rx_flush(&h, RQ_PSN + 2, 1, h.mr->rkey, 0x7fffffff, DPV_FLUSH_PERSISTENT | DPV_FLUSH_GLOBAL,
		       DPV_FLUSH_MR) == 0, "rx FLUSH persistent MR");
	expect_zero_resp(RQ_PSN + 2, 3, "FLUSH persistent, whole MR");
	CHECK(rx_flush(&h, RQ_PSN + 2, 1, h.mr->rkey, 0x7fffffff, DPV_FLUSH_PERSISTENT | DPV_FLUSH_GLOBAL,
		       DPV_FLUSH_MR) == 0, "rx duplicate FLUSH");
	expect_zero_resp(RQ_PSN + 2, 3, "duplicate FLUSH");
	/* a SEND after them is acknowledged as usual: the PSNs moved on */
	CHECK(sw_h_post_recv(&h, 7, 2048, 64) == 0, "post receive");
	sw_h_req(&b, &h, DPV_OPC_SEND_ONLY, RQ_PSN + 3);
	b.ackreq = true;
	CHECK(sw_h_rx(&b, "abcd", 4) == 0, "rx SEND");
	sw_h_poll();
	const struct sw_h_frame *f = one_frame("SEND after");
	CHECK(f && f->pi.opcode == DPV_OPC_ACK && f->pi.psn == RQ_PSN + 3 && f->pi.aeth_msn == 4, "ACK, MSN 4");
	clear();
	sw_h_qp_destroy(&h);
}

/* One request that the responder refuses: NAK syndrome, QP to ERR, the
 * memory untouched. */
static void refused(const char *what, int access, uint8_t rd_atomic, uint8_t op, int64_t off, uint32_t len,
		    uint8_t type, uint8_t level, uint32_t rkey_xor, uint8_t syndrome)
{
	struct sw_h_qp h;
	static const uint8_t val[8] = {1, 2, 3, 4, 5, 6, 7, 8};
	if (new_qp(&h, access, 0, rd_atomic))
		return;
	uint64_t va = (uintptr_t)h.buf + 256 + off;
	uint32_t rkey = h.mr->rkey ^ rkey_xor;
	int r = op == DPV_OPC_ATOMIC_WRITE ? rx_aw(&h, RQ_PSN, va, rkey, val, len)
					   : rx_flush(&h, RQ_PSN, va, rkey, len, type, level);
	CHECK(r == 0, "%s: rx", what);
	sw_h_poll();
	const struct sw_h_frame *f = one_frame(what);
	CHECK(f && f->pi.opcode == DPV_OPC_ACK && f->pi.aeth_syndrome == syndrome && f->pi.psn == RQ_PSN,
	      "%s: NAK 0x%02x (got opcode 0x%02x syndrome 0x%02x)", what, syndrome, f ? f->pi.opcode : 0,
	      f ? f->pi.aeth_syndrome : 0);
	CHECK(sw_h_qp_state(&h) == IBV_QPS_ERR, "%s: QP in ERR", what);
	for (int i = 0; i < 512; i++)
		if (h.buf[i]) {
			CHECK(0, "%s: memory written at %d", what, i);
			break;
		}
	clear();
	sw_h_qp_destroy(&h);
}

static void refusals(void)
{
	const int std = ACCESS_STD | FLUSH_ALL;
	const uint8_t inv = DPV_AETH_NAK_INV_REQ, acc = DPV_AETH_NAK_REM_ACC;
	const uint8_t aw = DPV_OPC_ATOMIC_WRITE, fl = DPV_OPC_FLUSH;
	const uint8_t g = DPV_FLUSH_GLOBAL, p = DPV_FLUSH_PERSISTENT, rg = DPV_FLUSH_RANGE;
	refused("ATOMIC WRITE unaligned", std, 4, aw, 4, 8, 0, 0, 0, inv);
	refused("ATOMIC WRITE of 4 bytes", std, 4, aw, 0, 4, 0, 0, 0, inv);
	refused("ATOMIC WRITE, no remote write right", IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ, 4, aw, 0, 8,
		0, 0, 0, acc);
	refused("ATOMIC WRITE, bad rkey", std, 4, aw, 0, 8, 0, 0, 0x100, acc);
	refused("ATOMIC WRITE outside the MR", std, 4, aw, -4096, 8, 0, 0, 0, acc);
	refused("ATOMIC WRITE, no responder resources", std, 0, aw, 0, 8, 0, 0, 0, inv);
	refused("FLUSH, no FLUSH right", ACCESS_STD, 4, fl, 0, 64, g, rg, 0, acc);
	refused("FLUSH persistent, global right only", ACCESS_STD | DPV_ACCESS_FLUSH_GLOBAL, 4, fl, 0, 64, p, rg, 0,
		acc);
	refused("FLUSH of no placement type", std, 4, fl, 0, 64, 0, rg, 0, inv);
	refused("FLUSH of an unknown placement type", std, 4, fl, 0, 64, 4 | g, rg, 0, inv);
	refused("FLUSH range outside the MR", std, 4, fl, 0, 2u << 20, g, rg, 0, acc);
}

int main(int argc, char **argv)
{
	if (sw_h_init(1, argv))
		return 1;
	if (argc > 1) {
		g_pcap = fopen(argv[1], "wb");
		if (!g_pcap || dpvt_pcap_write_hdr(g_pcap)) {
			perror(argv[1]);
			return 1;
		}
	}
	requester();
	responder();
	refusals();
	if (g_pcap && fclose(g_pcap))
		CHECK(0, "pcap close");
	return dpvt_finish();
}
