/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Tag matching SRQs (IBV_SRQT_TM), black-box (also run by the shared suite
 * on dpverbsd): the device's tm_caps; ibv_create_srq_ex's checks of tm_cap;
 * ibv_post_srq_ops on a basic SRQ (EINVAL), with an unknown opcode
 * (EINVAL), TAG_ADD beyond max_num_tags (ENOMEM, *bad_wr the op), TAG_DEL
 * of a handle not in the list (an IBV_WC_TM_ERR completion, signalled or
 * not), a handle reused after its TAG_DEL; then RC traffic dpv0 -> dpv1
 * into the TM SRQ: an EAGER message matched by tag & mask (payload after
 * the TMH in the tagged buffer, tag and app_ctx in ibv_wc_read_tm_info),
 * NO_TAG and unexpected messages whole in ordinary receive WQEs, matching
 * paused after an unexpected message (TAG_ADD completes with
 * IBV_WC_TM_SYNC_REQ, a matching message is unexpected too) until a
 * TAG_SYNC with the count, and a rendezvous of 10000 bytes (TM_MATCH, then
 * the data READ into the tagged buffer, TM_DATA_VALID, and the FIN in the
 * sender's receive queue); with "lossy", under packet drops, 20
 * rendezvous (the READ and the FIN retransmitted).
 */
#include <endian.h>
#include <infiniband/tm_types.h>

#include "dpvt_verbs.h"

#define TMH 16
#define BUF 131072
#define SLOT 16384
#define RNDV_LEN 10000

struct got {
	int n;
	uint64_t wr_id;
	enum ibv_wc_status status;
	enum ibv_wc_opcode opcode;
	unsigned int flags;
	uint32_t len;
	struct ibv_wc_tm_info tm;
};

static struct ibv_cq *drive_cq;
static int rndv_rounds = 1;

/* The next completion of an extended CQ (3 s at most), progress driven on
 * drive_cq too. */
static struct got poll_ex(struct ibv_cq_ex *cq)
{
	struct got g = {0};
	struct ibv_poll_cq_attr pa = {0};
	struct ibv_wc dummy;
	uint64_t end = dpvt_now_ms() + 3000;
	int r;
	while ((r = ibv_start_poll(cq, &pa)) == ENOENT && dpvt_now_ms() < end)
		if (drive_cq)
			ibv_poll_cq(drive_cq, 0, &dummy);
	if (r != 0)
		return g;
	g.n = 1;
	g.wr_id = cq->wr_id;
	g.status = cq->status;
	g.opcode = ibv_wc_read_opcode(cq);
	g.flags = ibv_wc_read_wc_flags(cq);
	g.len = ibv_wc_read_byte_len(cq);
	ibv_wc_read_tm_info(cq, &g.tm);
	ibv_end_poll(cq);
	return g;
}

static int post_op(struct ibv_srq *srq, enum ibv_ops_wr_opcode op, uint64_t wr_id, int flags, uint32_t cnt,
		   uint32_t *handle, uint64_t tag, struct ibv_sge *sge, struct ibv_ops_wr **bad)
{
	struct ibv_ops_wr wr = {.wr_id = wr_id, .opcode = op, .flags = flags};
	struct ibv_ops_wr *b = NULL;
	wr.tm.unexpected_cnt = cnt;
	wr.tm.handle = handle ? *handle : 0;
	wr.tm.add.recv_wr_id = wr_id + 1000;
	wr.tm.add.tag = tag;
	wr.tm.add.mask = 0xffff;
	wr.tm.add.sg_list = sge;
	wr.tm.add.num_sge = sge ? 1 : 0;
	int r = ibv_post_srq_ops(srq, &wr, &b);
	if (bad)
		*bad = b == &wr ? (struct ibv_ops_wr *)1 : b;
	if (!r && handle && op == IBV_WR_TAG_ADD)
		*handle = wr.tm.handle;
	return r;
}

static struct ibv_srq *tm_srq(struct dpvt_ep *e, struct ibv_cq_ex *cq, uint32_t tags, uint32_t ops, bool with_cq)
{
	struct ibv_srq_init_attr_ex a = {.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD |
						      IBV_SRQ_INIT_ATTR_TM | (with_cq ? IBV_SRQ_INIT_ATTR_CQ : 0),
					 .srq_type = IBV_SRQT_TM, .pd = e->pd, .cq = ibv_cq_ex_to_cq(cq)};
	a.attr.max_wr = 64;
	a.attr.max_sge = 1;
	a.tm_cap.max_num_tags = tags;
	a.tm_cap.max_ops = ops;
	return ibv_create_srq_ex(e->ctx, &a);
}

static void caps_and_create(struct dpvt_ep *B, struct ibv_cq_ex *cq)
{
	struct ibv_device_attr_ex da;
	CHECK_EQ(ibv_query_device_ex(B->ctx, NULL, &da), 0, "ibv_query_device_ex");
	CHECK(da.tm_caps.flags == IBV_TM_CAP_RC && da.tm_caps.max_num_tags == 127 && da.tm_caps.max_ops == 32768 &&
	      da.tm_caps.max_sge == 1 && da.tm_caps.max_rndv_hdr_size == 64,
	      "tm_caps: flags %#x tags %u ops %u sge %u rndv_hdr %u", da.tm_caps.flags, da.tm_caps.max_num_tags,
	      da.tm_caps.max_ops, da.tm_caps.max_sge, da.tm_caps.max_rndv_hdr_size);
	errno = 0;
	CHECK(!tm_srq(B, cq, 4, 8, false) && errno == EINVAL, "TM SRQ without a CQ: EINVAL (errno %d)", errno);
	errno = 0;
	CHECK(!tm_srq(B, cq, 0, 8, true) && errno == EINVAL, "max_num_tags 0: EINVAL (errno %d)", errno);
	errno = 0;
	CHECK(!tm_srq(B, cq, 128, 8, true) && errno == EINVAL, "max_num_tags above tm_caps: EINVAL (errno %d)", errno);
	errno = 0;
	CHECK(!tm_srq(B, cq, 4, 32769, true) && errno == EINVAL, "max_ops above tm_caps: EINVAL (errno %d)", errno);
	struct ibv_srq *basic = dpvt_srq_new(B->pd, 16);
	struct ibv_ops_wr *bad = NULL;
	CHECK_EQ(post_op(basic, IBV_WR_TAG_SYNC, 1, IBV_OPS_SIGNALED, 0, NULL, 0, NULL, &bad), EINVAL,
		 "ibv_post_srq_ops on a basic SRQ");
	CHECK(bad == (struct ibv_ops_wr *)1, "bad_wr is the op");
	ibv_destroy_srq(basic);
}

/* Ops alone: ENOMEM beyond max_num_tags, TM_ERR for unknown handles. */
static void ops_checks(struct dpvt_ep *B, struct ibv_cq_ex *cq, struct ibv_mr *mr)
{
	struct ibv_srq *srq = tm_srq(B, cq, 2, 4, true);
	CHECK(srq != NULL, "TM SRQ with 2 tags, 4 ops");
	if (!srq)
		return;
	struct ibv_sge sge = {.addr = (uintptr_t)mr->addr, .length = 64, .lkey = mr->lkey};
	uint32_t h[3] = {0};
	struct ibv_ops_wr *bad = NULL;
	CHECK_EQ(post_op(srq, IBV_WR_TAG_ADD, 1, IBV_OPS_SIGNALED, 0, &h[0], 1, &sge, NULL), 0, "TAG_ADD 1");
	CHECK_EQ(post_op(srq, IBV_WR_TAG_ADD, 2, IBV_OPS_SIGNALED, 0, &h[1], 2, &sge, NULL), 0, "TAG_ADD 2");
	CHECK(h[0] != h[1] && h[0] < 2 && h[1] < 2, "distinct handles %u %u", h[0], h[1]);
	CHECK_EQ(post_op(srq, IBV_WR_TAG_ADD, 3, IBV_OPS_SIGNALED, 0, &h[2], 3, &sge, &bad), ENOMEM,
		 "TAG_ADD beyond max_num_tags");
	CHECK(bad == (struct ibv_ops_wr *)1, "bad_wr is the third TAG_ADD");
	CHECK_EQ(post_op(srq, (enum ibv_ops_wr_opcode)77, 4, IBV_OPS_SIGNALED, 0, NULL, 0, NULL, NULL), EINVAL,
		 "unknown opcode");
	for (int i = 1; i <= 2; i++) {
		struct got g = poll_ex(cq);
		CHECK(g.n && g.status == IBV_WC_SUCCESS && g.opcode == IBV_WC_TM_ADD && g.wr_id == (uint64_t)i &&
		      g.flags == 0, "TM_ADD %d completes: status %d opcode %d wr_id %llu flags %#x", i, g.status,
		      g.opcode, (unsigned long long)g.wr_id, g.flags);
	}
	CHECK_EQ(post_op(srq, IBV_WR_TAG_DEL, 5, IBV_OPS_SIGNALED, 0, &h[0], 0, NULL, NULL), 0, "TAG_DEL");
	struct got g = poll_ex(cq);
	CHECK(g.n && g.status == IBV_WC_SUCCESS && g.opcode == IBV_WC_TM_DEL && g.wr_id == 5, "TM_DEL completes");
	CHECK_EQ(post_op(srq, IBV_WR_TAG_DEL, 6, IBV_OPS_SIGNALED, 0, &h[0], 0, NULL, NULL), 0, "TAG_DEL again");
	g = poll_ex(cq);
	CHECK(g.n && g.status == IBV_WC_TM_ERR && g.opcode == IBV_WC_TM_DEL && g.wr_id == 6,
	      "TAG_DEL of a removed tag: IBV_WC_TM_ERR (status %d opcode %d)", g.status, g.opcode);
	uint32_t unknown = 1000;
	CHECK_EQ(post_op(srq, IBV_WR_TAG_DEL, 7, 0, 0, &unknown, 0, NULL, NULL), 0, "unsignalled TAG_DEL 1000");
	g = poll_ex(cq);
	CHECK(g.n && g.status == IBV_WC_TM_ERR && g.opcode == IBV_WC_TM_DEL && g.wr_id == 7,
	      "TAG_DEL of an unknown handle completes with IBV_WC_TM_ERR although unsignalled");
	CHECK_EQ(post_op(srq, IBV_WR_TAG_ADD, 8, 0, 0, &h[2], 3, &sge, NULL), 0, "TAG_ADD after a TAG_DEL");
	CHECK_EQ(h[2], h[0], "the removed tag's handle is used again");
	CHECK_EQ(post_op(srq, IBV_WR_TAG_SYNC, 9, IBV_OPS_SIGNALED | IBV_OPS_TM_SYNC, 0, NULL, 0, NULL, NULL), 0,
		 "TAG_SYNC");
	g = poll_ex(cq);
	CHECK(g.n && g.status == IBV_WC_SUCCESS && g.opcode == IBV_WC_TM_SYNC && g.wr_id == 9 && g.flags == 0,
	      "TM_SYNC completes (unsignalled TAG_ADD: none)");
	CHECK_EQ(ibv_destroy_srq(srq), 0, "destroy TM SRQ with tags in its list");
}

static void send_tmh(struct ibv_qp *qa, struct ibv_mr *smr, uint8_t op, uint64_t tag, uint32_t ctx, uint32_t len,
		     uint64_t wr_id)
{
	struct ibv_tmh *h = smr->addr;
	memset(h, 0, sizeof(*h));
	h->opcode = op;
	h->app_ctx = htobe32(ctx);
	h->tag = htobe64(tag);
	dpvt_pat_fill((uint8_t *)smr->addr + TMH, len - TMH, 7, wr_id);
	dpvt_post_wr(qa, IBV_WR_SEND, wr_id, smr->addr, len, smr->lkey, 0, 0, 0, IBV_SEND_SIGNALED);
}


static uint32_t add_tag(struct ibv_srq *srq, struct ibv_cq_ex *cq, uint64_t wr_id, uint64_t tag, struct ibv_sge *sge,
			uint32_t flags, uint32_t cnt, unsigned int want_flags)
{
	uint32_t h = 0;
	CHECK_EQ(post_op(srq, IBV_WR_TAG_ADD, wr_id, (int)flags, cnt, &h, tag, sge, NULL), 0, "TAG_ADD");
	struct got g = poll_ex(cq);
	CHECK(g.n && g.status == IBV_WC_SUCCESS && g.opcode == IBV_WC_TM_ADD && g.wr_id == wr_id &&
	      g.flags == want_flags, "TM_ADD %llu: status %d flags %#x (want %#x)", (unsigned long long)wr_id,
	      g.status, g.flags, want_flags);
	return h;
}

/* A message and its receive completion on the TM SRQ's CQ. */
static struct got xfer(struct ibv_qp *qa, struct dpvt_ep *A, struct ibv_cq_ex *cq, struct ibv_mr *smr, uint8_t op,
		       uint64_t tag, uint32_t len, uint64_t wr_id)
{
	send_tmh(qa, smr, op, tag, 0xabcd, len, wr_id);
	dpvt_wait1(A->scq, ibv_cq_ex_to_cq(cq), wr_id, IBV_WC_SEND, "SEND");
	return poll_ex(cq);
}

static void rndv(struct ibv_qp *qa, struct dpvt_ep *A, struct ibv_srq *srq, struct ibv_cq_ex *cq,
		 struct ibv_mr *smr, struct ibv_mr *rmr, int it)
{
	uint8_t *src = (uint8_t *)smr->addr + 32768, *dst = rmr->addr;
	memset(dst, 0, RNDV_LEN);
	dpvt_pat_fill(src, RNDV_LEN, 9, (uint64_t)it);
	dpvt_post_recv(qa, smr, 500 + (uint64_t)it, 65536, 64);
	struct ibv_sge sge = {.addr = (uintptr_t)dst, .length = RNDV_LEN, .lkey = rmr->lkey};
	add_tag(srq, cq, 40, 7, &sge, IBV_OPS_SIGNALED, 2, 0);
	struct ibv_tmh *h = smr->addr;
	struct ibv_rvh *v = (struct ibv_rvh *)(h + 1);
	memset(h, 0, sizeof(*h));
	h->opcode = IBV_TMH_RNDV;
	h->app_ctx = htobe32(0x55);
	h->tag = htobe64(7);
	v->va = htobe64((uintptr_t)src);
	v->rkey = htobe32(smr->rkey);
	v->len = htobe32(RNDV_LEN);
	dpvt_post_wr(qa, IBV_WR_SEND, 41, smr->addr, sizeof(*h) + sizeof(*v), smr->lkey, 0, 0, 0, IBV_SEND_SIGNALED);
	dpvt_wait1(A->scq, ibv_cq_ex_to_cq(cq), 41, IBV_WC_SEND, "RNDV SEND");
	struct got g = poll_ex(cq);
	CHECK(g.n && g.status == IBV_WC_SUCCESS && g.opcode == IBV_WC_TM_RECV && g.flags == IBV_WC_TM_MATCH &&
	      g.wr_id == 1040 && g.tm.tag == 7 && g.tm.priv == 0x55,
	      "RNDV matched: status %d opcode %d flags %#x wr_id %llu tag %llu", g.status, g.opcode, g.flags,
	      (unsigned long long)g.wr_id, (unsigned long long)g.tm.tag);
	g = poll_ex(cq);
	CHECK(g.n && g.status == IBV_WC_SUCCESS && g.opcode == IBV_WC_TM_RECV && g.flags == IBV_WC_TM_DATA_VALID &&
	      g.wr_id == 1040 && g.len == RNDV_LEN, "RNDV data valid: status %d flags %#x len %u", g.status, g.flags,
	      g.len);
	CHECK_EQ(dpvt_pat_check(dst, RNDV_LEN, 9, (uint64_t)it), -1, "RNDV data READ into the tagged buffer");
	if (dpvt_wait1(A->rcq, ibv_cq_ex_to_cq(cq), 500 + (uint64_t)it, IBV_WC_RECV, "FIN at the sender")) {
		struct ibv_tmh *fin = (struct ibv_tmh *)((uint8_t *)smr->addr + 65536);
		CHECK(fin->opcode == IBV_TMH_FIN && be64toh(fin->tag) == 7 && be32toh(fin->app_ctx) == 0x55,
		      "FIN: opcode %u tag %llu", fin->opcode, (unsigned long long)be64toh(fin->tag));
	}
}

/* A consumed tag's handle is free once its completion is polled, not
 * before (mlx5): with one tag, TAG_ADD is ENOMEM until then. */
static void handle_after_poll(struct dpvt_ep *A, struct dpvt_ep *B, struct ibv_cq_ex *cq, struct ibv_mr *smr,
			      struct ibv_mr *rmr)
{
	struct ibv_srq *srq = tm_srq(B, cq, 1, 4, true);
	struct dpvt_qp_caps caps = {.max_send_wr = 4, .max_send_sge = 1};
	struct ibv_qp *qa = dpvt_ep_qp(A, IBV_QPT_RC, 16, 16, NULL);
	struct ibv_qp *qb = srq ? dpvt_qp_create(B->pd, IBV_QPT_RC, B->scq, ibv_cq_ex_to_cq(cq), srq, &caps) : NULL;
	CHECK(srq && qa && qb && !dpvt_connect(qa, A->ctx, NULL, qb, B->ctx, NULL, false), "RC pair, 1 tag");
	if (!qb)
		return;
	struct ibv_sge sge = {.addr = (uintptr_t)rmr->addr, .length = SLOT, .lkey = rmr->lkey};
	uint32_t h0 = add_tag(srq, cq, 50, 11, &sge, IBV_OPS_SIGNALED, 0, 0), h1 = 99;
	send_tmh(qa, smr, IBV_TMH_EAGER, 11, 0, 100, 51);
	dpvt_wait1(A->scq, ibv_cq_ex_to_cq(cq), 51, IBV_WC_SEND, "SEND acknowledged: the tag was consumed");
	struct ibv_ops_wr *bad = NULL;
	CHECK_EQ(post_op(srq, IBV_WR_TAG_ADD, 52, IBV_OPS_SIGNALED, 0, &h1, 12, &sge, &bad), ENOMEM,
		 "TAG_ADD before the consumed tag's completion is polled");
	struct got g = poll_ex(cq);
	CHECK(g.n && g.opcode == IBV_WC_TM_RECV && g.wr_id == 1050 && g.tm.tag == 11, "the consumed tag completes");
	h1 = add_tag(srq, cq, 53, 12, &sge, IBV_OPS_SIGNALED, 0, 0);
	CHECK_EQ(h1, h0, "its handle is free once polled");
	ibv_destroy_qp(qb);
	ibv_destroy_qp(qa);
	CHECK_EQ(ibv_destroy_srq(srq), 0, "destroy the 1-tag SRQ");
}

static void traffic(struct dpvt_ep *A, struct dpvt_ep *B, struct ibv_cq_ex *cq, struct ibv_mr *smr,
		    struct ibv_mr *rmr)
{
	struct ibv_srq *srq = tm_srq(B, cq, 8, 16, true);
	struct dpvt_qp_caps caps = {.max_send_wr = 16, .max_send_sge = 1};
	struct ibv_qp *qa = dpvt_ep_qp(A, IBV_QPT_RC, 16, 16, NULL);
	struct ibv_qp *qb = srq ? dpvt_qp_create(B->pd, IBV_QPT_RC, B->scq, ibv_cq_ex_to_cq(cq), srq, &caps) : NULL;
	CHECK(srq && qa && qb && !dpvt_connect(qa, A->ctx, NULL, qb, B->ctx, NULL, false), "RC pair on a TM SRQ");
	if (!qb)
		return;
	for (int i = 0; i < 6; i++)
		dpvt_post_srq_recv(srq, rmr, 100 + (uint64_t)i, (size_t)(1 + i) * SLOT, SLOT);
	uint8_t *rb = rmr->addr;
	struct ibv_sge sge = {.addr = (uintptr_t)rb, .length = SLOT, .lkey = rmr->lkey};
	add_tag(srq, cq, 20, 0x10005, &sge, IBV_OPS_SIGNALED, 0, 0);
	struct got g = xfer(qa, A, cq, smr, IBV_TMH_EAGER, 0x70005, 1000, 1);
	CHECK(g.n && g.status == IBV_WC_SUCCESS && g.opcode == IBV_WC_TM_RECV &&
	      g.flags == (IBV_WC_TM_MATCH | IBV_WC_TM_DATA_VALID) && g.wr_id == 1020 && g.len == 1000 - TMH &&
	      g.tm.tag == 0x70005 && g.tm.priv == 0xabcd, "EAGER matched by tag & mask: opcode %d flags %#x wr_id "
	      "%llu len %u tag %#llx priv %#x", g.opcode, g.flags, (unsigned long long)g.wr_id, g.len,
	      (unsigned long long)g.tm.tag, g.tm.priv);
	CHECK_EQ(dpvt_pat_check(rb, 1000 - TMH, 7, 1), -1, "payload after the TMH in the tagged buffer");
	g = xfer(qa, A, cq, smr, IBV_TMH_NO_TAG, 0x1234, 500, 2);
	CHECK(g.n && g.status == IBV_WC_SUCCESS && g.opcode == IBV_WC_TM_NO_TAG && g.flags == 0 && g.wr_id == 100 &&
	      g.len == 500 && g.tm.tag == 0, "NO_TAG: opcode %d flags %#x wr_id %llu len %u", g.opcode, g.flags,
	      (unsigned long long)g.wr_id, g.len);
	CHECK_EQ(dpvt_pat_check(rb + SLOT + TMH, 500 - TMH, 7, 2), -1, "NO_TAG message whole in an ordinary WQE");
	g = xfer(qa, A, cq, smr, IBV_TMH_EAGER, 0x99, 300, 3);
	CHECK(g.n && g.status == IBV_WC_SUCCESS && g.opcode == IBV_WC_TM_RECV && g.flags == 0 && g.wr_id == 101 &&
	      g.len == 300 && g.tm.tag == 0, "unexpected: opcode %d flags %#x wr_id %llu len %u", g.opcode, g.flags,
	      (unsigned long long)g.wr_id, g.len);
	CHECK_EQ(dpvt_pat_check(rb + 2 * SLOT + TMH, 300 - TMH, 7, 3), -1, "unexpected message whole");
	add_tag(srq, cq, 30, 6, &sge, IBV_OPS_SIGNALED, 0, IBV_WC_TM_SYNC_REQ);
	g = xfer(qa, A, cq, smr, IBV_TMH_EAGER, 6, 200, 4);
	CHECK(g.n && g.opcode == IBV_WC_TM_RECV && g.flags == 0 && g.wr_id == 102,
	      "matching paused until software syncs: unexpected (flags %#x wr_id %llu)", g.flags,
	      (unsigned long long)g.wr_id);
	CHECK_EQ(post_op(srq, IBV_WR_TAG_SYNC, 31, IBV_OPS_SIGNALED | IBV_OPS_TM_SYNC, 2, NULL, 0, NULL, NULL), 0,
		 "TAG_SYNC with 2 unexpected");
	g = poll_ex(cq);
	CHECK(g.n && g.opcode == IBV_WC_TM_SYNC && g.flags == 0 && g.wr_id == 31, "TM_SYNC, in sync");
	g = xfer(qa, A, cq, smr, IBV_TMH_EAGER, 6, 200, 5);
	CHECK(g.n && g.opcode == IBV_WC_TM_RECV && g.flags == (IBV_WC_TM_MATCH | IBV_WC_TM_DATA_VALID) &&
	      g.wr_id == 1030 && g.tm.tag == 6, "matching again after the sync (flags %#x wr_id %llu)", g.flags,
	      (unsigned long long)g.wr_id);
	for (int it = 0; it < rndv_rounds; it++)
		rndv(qa, A, srq, cq, smr, rmr, it);
	CHECK_EQ(ibv_destroy_qp(qb), 0, "destroy the TM SRQ's QP");
	CHECK_EQ(ibv_destroy_srq(srq), 0, "destroy the TM SRQ");
	ibv_destroy_qp(qa);
}

/* "lossy": under the DPVERBS_FAULT the test is given, 20 rendezvous. */
int main(int argc, char **argv)
{
	struct dpvt_ep A, B;
	if (argc > 1 && strcmp(argv[1], "lossy") == 0)
		rndv_rounds = 20;
	else
		unsetenv("DPVERBS_FAULT");
	if (dpvt_ep_open(&A, "dpv0", 256, false) || dpvt_ep_open(&B, "dpv1", 256, false)) {
		printf("0 passed, 1 failed\n");
		return 1;
	}
	struct ibv_cq_init_attr_ex ca = {.cqe = 256, .wc_flags = IBV_WC_STANDARD_FLAGS | IBV_WC_EX_WITH_TM_INFO};
	struct ibv_cq_ex *cq = ibv_create_cq_ex(B.ctx, &ca);
	CHECK(cq != NULL, "extended CQ with IBV_WC_EX_WITH_TM_INFO");
	uint8_t *sbuf = aligned_alloc(4096, BUF), *rbuf = aligned_alloc(4096, BUF);
	memset(rbuf, 0, BUF);
	int acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ;
	struct ibv_mr *smr = ibv_reg_mr(A.pd, sbuf, BUF, acc), *rmr = ibv_reg_mr(B.pd, rbuf, BUF, acc);
	if (!cq || !smr || !rmr)
		return dpvt_finish();
	drive_cq = A.scq;
	caps_and_create(&B, cq);
	ops_checks(&B, cq, rmr);
	traffic(&A, &B, cq, smr, rmr);
	handle_after_poll(&A, &B, cq, smr, rmr);
	ibv_dereg_mr(smr);
	ibv_dereg_mr(rmr);
	ibv_destroy_cq(ibv_cq_ex_to_cq(cq));
	free(sbuf);
	free(rbuf);
	dpvt_ep_close(&A);
	dpvt_ep_close(&B);
	return dpvt_finish();
}
