/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * UD traffic between dpv0 and dpv1 in one process, every byte verified.
 * Runs with whatever $DPVERBS_CONFIG says: the built-in default (software
 * loopback) or test/func/func-wire.json ("software_loopback": false, frames
 * cross the net_ring wire after ARP / neighbour discovery; IPv6 addresses at
 * GID 2). White-box only to read the port counters (wire vs loopback).
 */
#include "dpvt_verbs.h"

#include <inttypes.h>
#include <poll.h>
#include <endian.h>

/* WHITE-BOX: internal headers. Their uses stay in this file, each marked
 * WHITE-BOX; test/lib (dpvt_*.h) uses only the public verbs API. */
#include "dpv_verbs.h"
#include "dpv_port.h"

#define QKEY 0x11220000u
#define RBUF_OFF 0x8000    /* receive area in ep->buf */
#define RSLOT 2048         /* bytes per receive slot */

static struct dpvt_ep E0, E1;
static bool g_wire;        /* software_loopback false */

/* WHITE-BOX: per-port counters */
static struct dpv_port *port_of(const char *n) { return dpv_port_by_name(n); }

static bool gid_valid(struct ibv_context *c, int idx)
{
	struct ibv_gid_entry e;
	return ibv_query_gid_ex(c, 1, (uint32_t)idx, &e, 0) == 0;
}

/* Check the 40-byte GRH the receiver got. */
static void check_grh(const uint8_t *grh, int ipver, const uint8_t *sgid, const uint8_t *dgid,
		      uint32_t paylen, bool imm, const char *what)
{
	uint32_t pad = (4 - (paylen & 3)) & 3;
	uint32_t udp_len = 8 + 12 + 8 + (imm ? 4 : 0) + paylen + pad + 4;
	if (ipver == 4) {
		static const uint8_t z[20];
		const uint8_t *ip = grh + 20;
		CHECK(!memcmp(grh, z, 20), "%s: GRH bytes 0..19 zero for IPv4", what);
		CHECK(ip[0] == 0x45, "%s: IPv4 header at GRH offset 20 (0x%02x)", what, ip[0]);
		CHECK_EQ(dpvt_get16(ip + 2), 20 + udp_len, "IPv4 total length");
		CHECK_EQ(ip[9], 17, "IPv4 protocol UDP");
		CHECK_EQ(dpvt_inet_csum(ip, 20, 0), 0, "IPv4 header checksum");
		CHECK(!memcmp(ip + 12, sgid + 12, 4), "%s: IPv4 source", what);
		CHECK(!memcmp(ip + 16, dgid + 12, 4), "%s: IPv4 destination", what);
	} else {
		CHECK_EQ(grh[0] >> 4, 6, "IPv6 version");
		CHECK_EQ(dpvt_get16(grh + 4), udp_len, "IPv6 payload length");
		CHECK_EQ(grh[6], 17, "IPv6 next header");
		CHECK_EQ(grh[7], 64, "IPv6 hop limit (from the AH)");
		CHECK(!memcmp(grh + 8, sgid, 16), "%s: IPv6 source", what);
		CHECK(!memcmp(grh + 24, dgid, 16), "%s: IPv6 destination", what);
	}
}

static void drain(struct ibv_cq *cq)
{
	struct ibv_wc wc[16];
	while (ibv_poll_cq(cq, 16, wc) > 0)
		;
}

/* One send of len bytes (opcode, flags) from qp0 via ah to E1.qp, verified end to end. */
static void one_message(struct ibv_qp *sqp, struct ibv_ah *ah, int ipver, const uint8_t *sgid,
			const uint8_t *dgid, uint32_t len, bool imm, int flags, const char *what)
{
	char w[128];
	snprintf(w, sizeof(w), "%s len %u%s%s", what, len, imm ? " imm" : "",
		 (flags & IBV_SEND_INLINE) ? " inline" : "");
	uint8_t *rb = E1.buf + RBUF_OFF;
	memset(rb, 0xee, RSLOT);
	CHECK_EQ(dpvt_post_recv(E1.qp, E1.mr, 0x5000 + len, RBUF_OFF, 40 + 1024 + 16), 0, "post_recv");
	uint8_t *sb = E0.buf;
	dpvt_fill_pattern(sb, len, len + (imm ? 7 : 0));
	struct ibv_sge s = {.addr = (uintptr_t)sb, .length = len, .lkey = E0.mr->lkey};
	struct ibv_send_wr wr, *bad = NULL;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 0x9000 + len;
	wr.sg_list = len ? &s : NULL;
	wr.num_sge = len ? 1 : 0;
	wr.opcode = imm ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND;
	wr.imm_data = htobe32(0xa1b2c3d4u ^ len);
	wr.send_flags = (unsigned int)flags | IBV_SEND_SIGNALED;
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = E1.qp->qp_num;
	wr.wr.ud.remote_qkey = QKEY;
	int r = ibv_post_send(sqp, &wr, &bad);
	CHECK(r == 0, "%s: post_send %d", w, r);
	struct ibv_wc wc;
	int n = dpvt_poll_n(E0.scq, &wc, 1, 2000);
	CHECK(n == 1 && wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_SEND && wc.wr_id == wr.wr_id,
	      "%s: send completion (n %d status %d)", w, n, n ? (int)wc.status : -1);
	n = dpvt_poll_n(E1.rcq, &wc, 1, 2000);
	CHECK(n == 1, "%s: receive completion", w);
	if (n != 1)
		return;
	CHECK(wc.status == IBV_WC_SUCCESS, "%s: recv status %s", w, ibv_wc_status_str(wc.status));
	CHECK_EQ(wc.opcode, IBV_WC_RECV, "recv opcode");
	CHECK_EQ(wc.wr_id, 0x5000 + len, "recv wr_id");
	CHECK_EQ(wc.byte_len, len + 40, "byte_len = payload + 40");
	CHECK_EQ(wc.src_qp, sqp->qp_num, "src_qp");
	CHECK_EQ(wc.qp_num, E1.qp->qp_num, "qp_num");
	CHECK(wc.wc_flags & IBV_WC_GRH, "%s: IBV_WC_GRH", w);
	CHECK_EQ(!!(wc.wc_flags & IBV_WC_WITH_IMM), imm, "IBV_WC_WITH_IMM");
	if (imm)
		CHECK_EQ(be32toh(wc.imm_data), 0xa1b2c3d4u ^ len, "imm_data");
	CHECK_EQ(wc.pkey_index, 0, "pkey_index");
	check_grh(rb, ipver, sgid, dgid, len, imm, w);
	CHECK(!memcmp(rb + 40, sb, len), "%s: payload bytes", w);
	CHECK(rb[40 + len] == 0xee, "%s: nothing written past the payload", w);
}

static void test_sizes(int sidx, int didx, int ipver)
{
	union ibv_gid sg, dg;
	ibv_query_gid(E0.ctx, 1, sidx, &sg);
	ibv_query_gid(E1.ctx, 1, didx, &dg);
	struct ibv_ah *ah = dpvt_ah_new(E0.pd, E1.ctx, sidx, didx);
	char what[64];
	snprintf(what, sizeof(what), "IPv%d GID %d->%d", ipver, sidx, didx);
	CHECK(ah != NULL, "%s: create_ah: %s", what, strerror(errno));
	if (!ah)
		return;
	static const uint32_t sizes[] = {0, 1, 13, 64, 1023, 1024};
	for (unsigned int i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		one_message(E0.qp, ah, ipver, sg.raw, dg.raw, sizes[i], false, 0, what);
	one_message(E0.qp, ah, ipver, sg.raw, dg.raw, 100, true, 0, what);
	one_message(E0.qp, ah, ipver, sg.raw, dg.raw, 0, true, 0, what);
	one_message(E0.qp, ah, ipver, sg.raw, dg.raw, 61, false, IBV_SEND_INLINE, what);

	/* 1025 > path MTU 1024: IBV_WC_LOC_LEN_ERR, QP to SQE, nothing received */
	CHECK_EQ(dpvt_post_recv(E1.qp, E1.mr, 0x6000, RBUF_OFF, RSLOT), 0, "post_recv");
	CHECK_EQ(dpvt_post_ud_send(E0.qp, ah, E1.qp->qp_num, QKEY, 0x1025, E0.mr, 0, 1025, 0), 0,
		 "post_send 1025 (unsignaled: errors complete anyway)");
	struct ibv_wc wc;
	int n = dpvt_poll_n(E0.scq, &wc, 1, 1000);
	CHECK(n == 1 && wc.wr_id == 0x1025 && wc.status == IBV_WC_LOC_LEN_ERR,
	      "%s: 1025 bytes -> IBV_WC_LOC_LEN_ERR (n %d status %s)", what, n,
	      n ? ibv_wc_status_str(wc.status) : "-");
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qia;
	ibv_query_qp(E0.qp, &qa, IBV_QP_STATE, &qia);
	CHECK_EQ(qa.qp_state, IBV_QPS_SQE, "QP state after a local length error");
	CHECK_EQ(E0.qp->state, IBV_QPS_SQE, "ibv_qp.state after a local length error");
	/* in SQE further sends are flushed */
	CHECK_EQ(dpvt_post_ud_send(E0.qp, ah, E1.qp->qp_num, QKEY, 0x1026, E0.mr, 0, 8, 0), 0, "post_send in SQE");
	n = dpvt_poll_n(E0.scq, &wc, 1, 1000);
	CHECK(n == 1 && wc.wr_id == 0x1026 && wc.status == IBV_WC_WR_FLUSH_ERR, "%s: send in SQE flushed", what);
	CHECK_EQ(dpvt_poll_quiet(E1.rcq, 30), 0, "nothing received from SQE");
	memset(&qa, 0, sizeof(qa));
	qa.qp_state = IBV_QPS_RTS;
	qa.cur_qp_state = IBV_QPS_SQE;
	CHECK_EQ(ibv_modify_qp(E0.qp, &qa, IBV_QP_STATE | IBV_QP_CUR_STATE), 0, "SQE->RTS");
	/* the receive posted above is still there */
	CHECK_EQ(dpvt_post_ud_send(E0.qp, ah, E1.qp->qp_num, QKEY, 0x1027, E0.mr, 0, 8, IBV_SEND_SIGNALED), 0, "send after SQE->RTS");
	n = dpvt_poll_n(E1.rcq, &wc, 1, 2000);
	CHECK(n == 1 && wc.wr_id == 0x6000 && wc.status == IBV_WC_SUCCESS && wc.byte_len == 48,
	      "%s: receive after recovery", what);
	n = dpvt_poll_n(E0.scq, &wc, 1, 1000);
	CHECK(n == 1 && wc.wr_id == 0x1027, "send completion after recovery");
	ibv_destroy_ah(ah);
}

static void test_sge_and_signaling(void)
{
	struct ibv_ah *ah = dpvt_ah_new(E0.pd, E1.ctx, 1, 1);
	struct ibv_wc wc[8];
	int n;
	/* gather 3 SGEs, scatter into 4 (GRH exactly fills the first) */
	uint8_t *sb = E0.buf;
	dpvt_fill_pattern(sb, 512, 99);
	struct ibv_sge ss[3] = {{(uintptr_t)sb, 5, E0.mr->lkey},
				{(uintptr_t)sb + 100, 100, E0.mr->lkey},
				{(uintptr_t)sb + 300, 7, E0.mr->lkey}};
	uint8_t *rb = E1.buf + RBUF_OFF;
	memset(rb, 0xee, 4096);
	struct ibv_sge rs[4] = {{(uintptr_t)rb, 40, E1.mr->lkey},
				{(uintptr_t)rb + 1000, 50, E1.mr->lkey},
				{(uintptr_t)rb + 2000, 3, E1.mr->lkey},
				{(uintptr_t)rb + 3000, 200, E1.mr->lkey}};
	struct ibv_recv_wr rw = {.wr_id = 0x77, .sg_list = rs, .num_sge = 4}, *rbad;
	CHECK_EQ(ibv_post_recv(E1.qp, &rw, &rbad), 0, "post_recv 4 SGEs");
	struct ibv_send_wr wr, *bad;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 0x78;
	wr.sg_list = ss;
	wr.num_sge = 3;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = E1.qp->qp_num;
	wr.wr.ud.remote_qkey = QKEY;
	CHECK_EQ(ibv_post_send(E0.qp, &wr, &bad), 0, "post_send 3 SGEs");
	n = dpvt_poll_n(E1.rcq, wc, 1, 2000);
	CHECK(n == 1 && wc[0].status == IBV_WC_SUCCESS && wc[0].byte_len == 40 + 112, "multi-SGE receive");
	uint8_t want[112];
	memcpy(want, sb, 5);
	memcpy(want + 5, sb + 100, 100);
	memcpy(want + 105, sb + 300, 7);
	CHECK(rb[0] == 0 && rb[20] == 0x45, "GRH in the first SGE");
	CHECK(!memcmp(rb + 1000, want, 50), "scatter SGE 1");
	CHECK(!memcmp(rb + 2000, want + 50, 3), "scatter SGE 2");
	CHECK(!memcmp(rb + 3000, want + 53, 59), "scatter SGE 3");
	CHECK(rb[3000 + 59] == 0xee && rb[1050] == 0xee && rb[2003] == 0xee, "no overrun of the SGEs");
	n = dpvt_poll_n(E0.scq, wc, 1, 1000);
	CHECK(n == 1 && wc[0].wr_id == 0x78 && wc[0].byte_len == 112, "send completion byte_len %u", n ? wc[0].byte_len : 0);

	/* inline from unregistered stack memory, overwritten right after posting */
	uint8_t stackbuf[48];
	dpvt_fill_pattern(stackbuf, sizeof(stackbuf), 5);
	uint8_t copy[48];
	memcpy(copy, stackbuf, sizeof(copy));
	CHECK_EQ(dpvt_post_recv(E1.qp, E1.mr, 0x79, RBUF_OFF, RSLOT), 0, "post_recv");
	struct ibv_sge is = {(uintptr_t)stackbuf, sizeof(stackbuf), 0 /* no MR */};
	wr.wr_id = 0x7a;
	wr.sg_list = &is;
	wr.num_sge = 1;
	wr.send_flags = IBV_SEND_INLINE | IBV_SEND_SIGNALED;
	CHECK_EQ(ibv_post_send(E0.qp, &wr, &bad), 0, "post_send inline, lkey 0");
	memset(stackbuf, 0, sizeof(stackbuf));
	n = dpvt_poll_n(E1.rcq, wc, 1, 2000);
	CHECK(n == 1 && wc[0].status == IBV_WC_SUCCESS && !memcmp(rb + 40, copy, sizeof(copy)),
	      "inline payload (copied at post time)");
	n = dpvt_poll_n(E0.scq, wc, 1, 1000);
	CHECK(n == 1 && wc[0].wr_id == 0x7a, "inline send completion");

	/* unsignaled sends produce no completion on a sq_sig_all=0 QP */
	for (int i = 0; i < 4; i++)
		dpvt_post_recv(E1.qp, E1.mr, 0x100 + (uint64_t)i, RBUF_OFF + (size_t)i * RSLOT, RSLOT);
	for (int i = 0; i < 3; i++)
		CHECK_EQ(dpvt_post_ud_send(E0.qp, ah, E1.qp->qp_num, QKEY, 0x200 + (uint64_t)i, E0.mr, 0, 16, 0), 0, "unsignaled");
	CHECK_EQ(dpvt_post_ud_send(E0.qp, ah, E1.qp->qp_num, QKEY, 0x203, E0.mr, 0, 16, IBV_SEND_SIGNALED), 0, "signaled");
	n = dpvt_poll_n(E1.rcq, wc, 4, 2000);
	CHECK_EQ(n, 4, "4 receives");
	for (int i = 0; i < n; i++)
		CHECK_EQ(wc[i].wr_id, 0x100 + i, "receives in order");
	n = dpvt_poll_n(E0.scq, wc, 2, 200);
	CHECK(n == 1 && wc[0].wr_id == 0x203, "only the signaled send completed (n %d)", n);

	/* sq_sig_all = 1: every send completes */
	struct ibv_qp *qpa = dpvt_ud_qp(&E0, 1, 1, 1);
	CHECK(qpa != NULL, "sq_sig_all QP");
	if (qpa) {
		for (int i = 0; i < 2; i++)
			dpvt_post_recv(E1.qp, E1.mr, 0x300 + (uint64_t)i, RBUF_OFF + (size_t)i * RSLOT, RSLOT);
		for (int i = 0; i < 2; i++)
			dpvt_post_ud_send(qpa, ah, E1.qp->qp_num, QKEY, 0x400 + (uint64_t)i, E0.mr, 0, 8, 0);
		n = dpvt_poll_n(E0.scq, wc, 2, 2000);
		CHECK(n == 2 && wc[0].wr_id == 0x400 && wc[1].wr_id == 0x401, "sq_sig_all: both sends completed");
		n = dpvt_poll_n(E1.rcq, wc, 2, 2000);
		CHECK(n == 2 && wc[0].src_qp == qpa->qp_num, "sq_sig_all: received from the second QP");
		ibv_destroy_qp(qpa);
	}
	ibv_destroy_ah(ah);
}

static void test_qkey_and_errors(void)
{
	struct ibv_ah *ah = dpvt_ah_new(E0.pd, E1.ctx, 1, 1);
	struct ibv_wc wc[4];
	struct ibv_port_attr pa;
	int n;
	ibv_query_port(E1.ctx, 1, &pa);
	uint32_t viol0 = pa.qkey_viol_cntr;
	CHECK_EQ(dpvt_post_recv(E1.qp, E1.mr, 0x501, RBUF_OFF, RSLOT), 0, "post_recv");
	CHECK_EQ(dpvt_post_ud_send(E0.qp, ah, E1.qp->qp_num, QKEY ^ 1, 0x502, E0.mr, 0, 8, IBV_SEND_SIGNALED), 0,
		 "send with a wrong Q_Key");
	n = dpvt_poll_n(E0.scq, wc, 1, 1000);
	CHECK(n == 1 && wc[0].status == IBV_WC_SUCCESS, "the sender sees success");
	CHECK_EQ(dpvt_poll_quiet(E1.rcq, 100), 0, "Q_Key mismatch: nothing received");
	ibv_query_port(E1.ctx, 1, &pa);
	CHECK_EQ(pa.qkey_viol_cntr, viol0 + 1, "qkey_viol_cntr +1");

	/* remote_qkey with the high bit: the sending QP's own Q_Key (QKEY) is used */
	CHECK_EQ(dpvt_post_ud_send(E0.qp, ah, E1.qp->qp_num, 0x8000abcdu, 0x503, E0.mr, 0, 8, IBV_SEND_SIGNALED), 0,
		 "send with remote_qkey 0x8000abcd");
	n = dpvt_poll_n(E1.rcq, wc, 1, 2000);
	CHECK(n == 1 && wc[0].wr_id == 0x501 && wc[0].status == IBV_WC_SUCCESS,
	      "high-bit remote_qkey: delivered with the QP's Q_Key");
	dpvt_poll_n(E0.scq, wc, 1, 1000);
	/* ... and a sender QP whose own Q_Key differs is rejected */
	struct ibv_qp *qpx = dpvt_ud_qp(&E0, 1, 1, 1);
	if (qpx) {
		struct ibv_qp_attr a = {.qkey = QKEY + 5};
		CHECK_EQ(ibv_modify_qp(qpx, &a, IBV_QP_QKEY), 0, "RTS->RTS Q_Key change");
		CHECK_EQ(dpvt_post_recv(E1.qp, E1.mr, 0x504, RBUF_OFF, RSLOT), 0, "post_recv");
		dpvt_post_ud_send(qpx, ah, E1.qp->qp_num, 0x80000000u, 0x505, E0.mr, 0, 8, 0);
		CHECK_EQ(dpvt_poll_quiet(E1.rcq, 100), 0, "high-bit remote_qkey with another QP Q_Key: dropped");
		ibv_query_port(E1.ctx, 1, &pa);
		CHECK_EQ(pa.qkey_viol_cntr, viol0 + 2, "qkey_viol_cntr +2");
		dpvt_poll_n(E0.scq, wc, 1, 500);
		ibv_destroy_qp(qpx);
		/* consume the receive left posted */
		dpvt_post_ud_send(E0.qp, ah, E1.qp->qp_num, QKEY, 0x506, E0.mr, 0, 8, 0);
		n = dpvt_poll_n(E1.rcq, wc, 1, 2000);
		CHECK(n == 1 && wc[0].wr_id == 0x504, "left-over receive consumed");
	}

	/* receive buffer too small: IBV_WC_LOC_LEN_ERR on the receiver */
	struct dpvt_ep tmp = E1;
	struct ibv_qp *qps = dpvt_ud_qp(&tmp, 0, 1, 1);
	if (qps) {
		CHECK_EQ(dpvt_post_recv(qps, E1.mr, 0x601, RBUF_OFF, 40 + 10), 0, "post small receive");
		dpvt_post_ud_send(E0.qp, ah, qps->qp_num, QKEY, 0x602, E0.mr, 0, 11, 0);
		n = dpvt_poll_n(E1.rcq, wc, 1, 2000);
		CHECK(n == 1 && wc[0].wr_id == 0x601 && wc[0].status == IBV_WC_LOC_LEN_ERR,
		      "receive too small: LOC_LEN_ERR (n %d status %s)", n, n ? ibv_wc_status_str(wc[0].status) : "-");
		/* exactly fitting: fine */
		struct ibv_qp *qpf = dpvt_ud_qp(&tmp, 0, 1, 1);
		if (qpf) {
			dpvt_post_recv(qpf, E1.mr, 0x603, RBUF_OFF, 40 + 10);
			dpvt_post_ud_send(E0.qp, ah, qpf->qp_num, QKEY, 0x604, E0.mr, 0, 10, 0);
			n = dpvt_poll_n(E1.rcq, wc, 1, 2000);
			CHECK(n == 1 && wc[0].wr_id == 0x603 && wc[0].status == IBV_WC_SUCCESS, "exact-size receive");
			ibv_destroy_qp(qpf);
		}
		ibv_destroy_qp(qps);
	}

	/* lkey of another PD: IBV_WC_LOC_PROT_ERR, QP to SQE */
	struct ibv_pd *pd2 = ibv_alloc_pd(E0.ctx);
	static uint8_t other[256];
	struct ibv_mr *mr2 = ibv_reg_mr(pd2, other, sizeof(other), IBV_ACCESS_LOCAL_WRITE);
	CHECK(mr2 != NULL, "MR in a second PD");
	if (mr2) {
		dpvt_post_recv(E1.qp, E1.mr, 0x701, RBUF_OFF, RSLOT);
		struct ibv_sge s = {(uintptr_t)other, 32, mr2->lkey};
		struct ibv_send_wr wr, *bad;
		memset(&wr, 0, sizeof(wr));
		wr.wr_id = 0x702;
		wr.sg_list = &s;
		wr.num_sge = 1;
		wr.opcode = IBV_WR_SEND;
		wr.wr.ud.ah = ah;
		wr.wr.ud.remote_qpn = E1.qp->qp_num;
		wr.wr.ud.remote_qkey = QKEY;
		CHECK_EQ(ibv_post_send(E0.qp, &wr, &bad), 0, "post_send with a foreign lkey");
		n = dpvt_poll_n(E0.scq, wc, 1, 1000);
		CHECK(n == 1 && wc[0].wr_id == 0x702 && wc[0].status == IBV_WC_LOC_PROT_ERR,
		      "foreign-PD lkey: LOC_PROT_ERR (n %d status %s)", n, n ? ibv_wc_status_str(wc[0].status) : "-");
		struct ibv_qp_attr qs;
		struct ibv_qp_init_attr qi;
		CHECK(ibv_query_qp(E0.qp, &qs, IBV_QP_STATE, &qi) == 0 && qs.qp_state == IBV_QPS_SQE,
		      "QP in SQE (ibv_query_qp)");
		CHECK_EQ(dpvt_poll_quiet(E1.rcq, 30), 0, "nothing sent");
		/* a bad lkey of the right PD: also LOC_PROT_ERR (after recovery) */
		struct ibv_qp_attr qa = {.qp_state = IBV_QPS_RTS};
		CHECK_EQ(ibv_modify_qp(E0.qp, &qa, IBV_QP_STATE), 0, "SQE->RTS");
		s.addr = (uintptr_t)E0.buf + E0.buf_len - 8; /* runs past the MR */
		s.lkey = E0.mr->lkey;
		wr.wr_id = 0x703;
		CHECK_EQ(ibv_post_send(E0.qp, &wr, &bad), 0, "post_send beyond the MR");
		n = dpvt_poll_n(E0.scq, wc, 1, 1000);
		CHECK(n == 1 && wc[0].wr_id == 0x703 && wc[0].status == IBV_WC_LOC_PROT_ERR, "SGE beyond the MR: LOC_PROT_ERR");
		CHECK_EQ(ibv_modify_qp(E0.qp, &qa, IBV_QP_STATE), 0, "SQE->RTS");
		dpvt_post_ud_send(E0.qp, ah, E1.qp->qp_num, QKEY, 0x704, E0.mr, 0, 8, 0);
		n = dpvt_poll_n(E1.rcq, wc, 1, 2000);
		CHECK(n == 1 && wc[0].wr_id == 0x701, "traffic after recovery");
		ibv_dereg_mr(mr2);
	}
	ibv_dealloc_pd(pd2);

	/* no receive posted: silently dropped, counted (WHITE-BOX: drop counter) */
	struct dpv_port *p1 = port_of("dpv1");
	uint64_t d0 = DPV_STAT_READ(p1, drop[DPV_DROP_NO_RECV_WQE]);
	dpvt_post_ud_send(E0.qp, ah, E1.qp->qp_num, QKEY, 0x801, E0.mr, 0, 8, 0);
	CHECK_EQ(dpvt_poll_quiet(E1.rcq, 50), 0, "no receive WQE: nothing");
	CHECK_EQ(DPV_STAT_READ(p1, drop[DPV_DROP_NO_RECV_WQE]), d0 + 1, "no_recv_wqe counter");
	ibv_destroy_ah(ah);
}

/* The receiver answers through ibv_create_ah_from_wc. */
static void test_reply(int sidx, int didx)
{
	struct ibv_ah *ah = dpvt_ah_new(E0.pd, E1.ctx, sidx, didx);
	struct ibv_wc wc;
	int n;
	char what[64];
	snprintf(what, sizeof(what), "reply GID %d->%d", sidx, didx);
	if (!ah) {
		CHECK(0, "%s: AH", what);
		return;
	}
	union ibv_gid sg;
	ibv_query_gid(E0.ctx, 1, sidx, &sg);
	dpvt_post_recv(E1.qp, E1.mr, 0x901, RBUF_OFF, RSLOT);
	dpvt_post_recv(E0.qp, E0.mr, 0x902, RBUF_OFF, RSLOT);
	dpvt_post_ud_send(E0.qp, ah, E1.qp->qp_num, QKEY, 0x903, E0.mr, 0, 20, 0);
	n = dpvt_poll_n(E1.rcq, &wc, 1, 2000);
	CHECK(n == 1 && wc.status == IBV_WC_SUCCESS, "%s: request received", what);
	if (n != 1)
		goto out;
	struct ibv_ah_attr aa;
	struct ibv_grh *grh = (struct ibv_grh *)(E1.buf + RBUF_OFF);
	CHECK_EQ(ibv_init_ah_from_wc(E1.ctx, 1, &wc, grh, &aa), 0, "init_ah_from_wc");
	CHECK(!memcmp(aa.grh.dgid.raw, sg.raw, 16), "%s: init_ah_from_wc dgid = sender's GID", what);
	CHECK_EQ(aa.grh.sgid_index, didx, "init_ah_from_wc sgid_index = receiving GID index");
	CHECK_EQ(aa.is_global, 1, "init_ah_from_wc is_global");
	CHECK_EQ(aa.port_num, 1, "init_ah_from_wc port_num");
	struct ibv_ah *rah = ibv_create_ah_from_wc(E1.pd, &wc, grh, 1);
	CHECK(rah != NULL, "%s: create_ah_from_wc: %s", what, strerror(errno));
	if (rah) {
		dpvt_fill_pattern(E1.buf, 33, 1234);
		CHECK_EQ(dpvt_post_ud_send(E1.qp, rah, wc.src_qp, QKEY, 0x904, E1.mr, 0, 33, 0), 0, "reply post_send");
		n = dpvt_poll_n(E0.rcq, &wc, 1, 2000);
		CHECK(n == 1 && wc.status == IBV_WC_SUCCESS && wc.wr_id == 0x902 && wc.byte_len == 73 &&
			      wc.src_qp == E1.qp->qp_num && !memcmp(E0.buf + RBUF_OFF + 40, E1.buf, 33),
		      "%s: reply received", what);
		ibv_destroy_ah(rah);
	}
out:
	ibv_destroy_ah(ah);
}

static void test_channel(void)
{
	struct ibv_ah *ah = dpvt_ah_new(E0.pd, E1.ctx, 1, 1);
	struct ibv_wc wc;
	struct pollfd pfd = {.fd = E1.ch->fd, .events = POLLIN};
	struct ibv_cq *ecq = NULL;
	void *ectx = NULL;
	int n;

	CHECK_EQ(ibv_req_notify_cq(E1.rcq, 0), 0, "req_notify_cq");
	CHECK_EQ(poll(&pfd, 1, 20), 0, "no event before traffic");
	dpvt_post_recv(E1.qp, E1.mr, 0xa01, RBUF_OFF, RSLOT);
	dpvt_post_ud_send(E0.qp, ah, E1.qp->qp_num, QKEY, 0xa02, E0.mr, 0, 8, 0);
	/* nobody polls: the assist thread (inline) or the lcore delivers */
	n = poll(&pfd, 1, 3000);
	CHECK_EQ(n, 1, "channel fd readable after a completion");
	CHECK_EQ(ibv_get_cq_event(E1.ch, &ecq, &ectx), 0, "get_cq_event");
	CHECK(ecq == E1.rcq && ectx == &E1, "event names the CQ and its cq_context");
	ibv_ack_cq_events(E1.rcq, 1);
	CHECK_EQ(E1.rcq->comp_events_completed, 1, "ack counted");
	n = dpvt_poll_n(E1.rcq, &wc, 1, 1000);
	CHECK(n == 1 && wc.wr_id == 0xa01, "completion behind the event");
	CHECK_EQ(poll(&pfd, 1, 0), 0, "one event per arming");

	/* solicited-only: an unsolicited message does not wake, a solicited one does */
	CHECK_EQ(ibv_req_notify_cq(E1.rcq, 1), 0, "req_notify_cq solicited only");
	dpvt_post_recv(E1.qp, E1.mr, 0xa03, RBUF_OFF, RSLOT);
	dpvt_post_recv(E1.qp, E1.mr, 0xa04, RBUF_OFF + RSLOT, RSLOT);
	dpvt_post_ud_send(E0.qp, ah, E1.qp->qp_num, QKEY, 0xa05, E0.mr, 0, 8, 0);
	CHECK_EQ(poll(&pfd, 1, 300), 0, "unsolicited message: no event");
	n = dpvt_poll_n(E1.rcq, &wc, 1, 1000);
	CHECK(n == 1 && wc.wr_id == 0xa03, "the unsolicited message did arrive");
	CHECK_EQ(poll(&pfd, 1, 0), 0, "still no event after polling it");
	dpvt_post_ud_send(E0.qp, ah, E1.qp->qp_num, QKEY, 0xa06, E0.mr, 0, 8, IBV_SEND_SOLICITED);
	n = poll(&pfd, 1, 3000);
	CHECK_EQ(n, 1, "solicited message wakes the channel");
	if (n == 1) {
		CHECK_EQ(ibv_get_cq_event(E1.ch, &ecq, &ectx), 0, "get_cq_event (solicited)");
		ibv_ack_cq_events(ecq, 1);
	}
	n = dpvt_poll_n(E1.rcq, &wc, 1, 1000);
	CHECK(n == 1 && wc.wr_id == 0xa04, "solicited completion");
	/* blocking ibv_get_cq_event with the fd not yet readable */
	CHECK_EQ(ibv_req_notify_cq(E1.rcq, 0), 0, "re-arm");
	dpvt_post_recv(E1.qp, E1.mr, 0xa07, RBUF_OFF, RSLOT);
	dpvt_post_ud_send(E0.qp, ah, E1.qp->qp_num, QKEY, 0xa08, E0.mr, 0, 8, 0);
	CHECK_EQ(ibv_get_cq_event(E1.ch, &ecq, &ectx), 0, "blocking get_cq_event");
	ibv_ack_cq_events(ecq, 1);
	n = dpvt_poll_n(E1.rcq, &wc, 1, 1000);
	CHECK(n == 1 && wc.wr_id == 0xa07, "completion after blocking wait");
	drain(E0.scq);
	ibv_destroy_ah(ah);
}

/* WHITE-BOX: the engine contexts and the port's steering (dpv_flow.c). A
 * net_ring pair delivers a frame on the queue it was sent from: the
 * sender's QP context, not the receiver's, unless both QPNs agree modulo
 * the queues; software loopback delivers to the receiver's context. */
static void check_contexts(struct dpv_port *p0, struct dpv_port *p1)
{
	uint64_t o0 = DPV_STAT_READ(p0, rx_other_ctx), o1 = DPV_STAT_READ(p1, rx_other_ctx);
	printf("queues %u/%u, steering %s/%s, rx_other_ctx %" PRIu64 "/%" PRIu64 "\n", p0->n_qctx,
	       p1->n_qctx, dpv_flow_steering_name(p0), dpv_flow_steering_name(p1), o0, o1);
	CHECK(!p0->flow.steering && !p1->flow.steering, "net_ring: software steering");
	if (p0->conf->flow == DPV_FLOW_AUTO)
		CHECK(p0->flow.n_results >= 1 && p0->flow.results[0].validate == -ENOSYS &&
		      strstr(p0->flow.reason, "net_ring"), "auto on net_ring: rte_flow_validate "
		      "answers ENOSYS (%d), fallback (%s)", p0->flow.results[0].validate, p0->flow.reason);
	if (p1->conf->flow == DPV_FLOW_OFF)
		CHECK(p1->flow.n_results == 0, "off: no rule asked for");
	if (p0->n_qctx == 1 || !g_wire) {
		CHECK(o0 == 0 && o1 == 0, "one context, or loopback to the QP's context: no frame "
		      "on another context");
		return;
	}
	bool differ = E0.qp->qp_num % p0->n_qctx != E1.qp->qp_num % p1->n_qctx;
	CHECK(!differ || (o0 > 0 && o1 > 0), "QPs %u and %u on different contexts: frames "
	      "received on the other one are counted", E0.qp->qp_num, E1.qp->qp_num);
}

int main(void)
{
	if (dpvt_ud_ep_open(&E0, "dpv0", QKEY, false) || dpvt_ud_ep_open(&E1, "dpv1", QKEY, true)) {
		printf("0 passed, 1 failed\n");
		return 1;
	}
	/* WHITE-BOX: the configuration and the port counters (wire vs loopback) */
	struct dpv_runtime *rt = dpv_runtime_peek();
	g_wire = !rt->conf.sw_loopback;
	printf("config: %s, software_loopback %s\n", rt->conf.source, g_wire ? "false" : "true");
	struct dpv_port *p0 = port_of("dpv0"), *p1 = port_of("dpv1");

	test_sizes(1, 1, 4);
	if (g_wire) {
		CHECK(DPV_STAT_READ(p0, arp_tx) >= 1, "wire: dpv0 sent an ARP request");
		CHECK(DPV_STAT_READ(p1, arp_rx) >= 1 && DPV_STAT_READ(p1, arp_tx) >= 1, "wire: dpv1 answered ARP");
		CHECK_EQ(DPV_STAT_READ(p0, tx_loopback), 0, "wire: no software loopback");
		CHECK(DPV_STAT_READ(p1, rx_roce) >= 8 && DPV_STAT_READ(p0, tx_pkts) >= 8, "wire: frames crossed the ring");
	} else {
		CHECK(DPV_STAT_READ(p0, tx_loopback) >= 8, "loopback: frames looped in software");
		CHECK_EQ(DPV_STAT_READ(p0, arp_tx), 0, "loopback: no ARP");
		CHECK_EQ(DPV_STAT_READ(p0, tx_pkts), 0, "loopback: nothing on the wire");
	}
	test_sizes(0, 0, 6);
	if (g_wire)
		CHECK(DPV_STAT_READ(p0, nd_tx) >= 1 && DPV_STAT_READ(p1, nd_rx) >= 1, "wire: IPv6 neighbour discovery");
	if (gid_valid(E0.ctx, 2) && gid_valid(E1.ctx, 2)) {
		test_sizes(2, 2, 6);
		test_reply(2, 2);
	} else {
		printf("no IPv6 GID 2 configured: skipping the global IPv6 pass\n");
	}
	test_sge_and_signaling();
	test_qkey_and_errors();
	test_reply(1, 1);
	test_reply(0, 0);
	test_channel();
	check_contexts(p0, p1);
	dpvt_ep_close(&E0);
	dpvt_ep_close(&E1);
	return dpvt_finish();
}
