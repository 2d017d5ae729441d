/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Receive-side scaling of raw packet QPs (black-box, libdpverbs.so; also in
 * shared mode under with_daemon.sh):
 *   - two receive WQs on two CQs (ibv_create_wq, ready with ibv_modify_wq),
 *     an indirection table of both, an RSS QP (IBV_QP_INIT_ATTR_RX_HASH,
 *     Toeplitz on the IPv4 addresses) with a rule on a multicast MAC; a raw
 *     QP on the same port sends 32 frames from 32 source addresses: all 32
 *     arrive whole, each in the CQ of the WQ whose wq_num the completion
 *     names, and both WQs get some;
 *   - errors: another hash function or IPsec SPI fields (EOPNOTSUPP), a
 *     key of 39 bytes (EINVAL), RX_HASH without IND_TABLE (EINVAL), RSS on
 *     a UD QP (EINVAL); a WQ type other than RQ (EOPNOTSUPP), WQ flags
 *     (EOPNOTSUPP), a wrong current state (EINVAL); a table of 2^9 WQs
 *     (EINVAL); destroying a WQ its table lists, or a table its QP uses
 *     (EBUSY).
 * Prints "N passed, N failed".
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dpvt_check.h"
#include "dpvt_verbs.h"

#define FRAME 200
#define NPKT 32
static const uint8_t MAC[6] = {0x01, 0x50, 0x56, 0x19, 0x20, 0xa8};
static uint8_t hkey[40] = {0x2c, 0xc6, 0x81, 0xd1, 0x5b, 0xdb, 0xf4, 0xf7, 0xfc, 0xa2, 0x83, 0x19, 0xdb, 0x1a,
			   0x3e, 0x94, 0x6b, 0x9e, 0x38, 0xd9, 0x2c, 0x9c, 0x03, 0xd1, 0xad, 0x99, 0x44, 0xa7,
			   0xd9, 0x56, 0x3d, 0x59, 0x06, 0x3c, 0x25, 0xf3, 0xfc, 0x1f, 0xdc, 0x2a};

static void frame(uint8_t *f, int i)
{
	memset(f, 0, FRAME);
	memcpy(f, MAC, 6);
	f[6] = 0x02;
	f[12] = 0x08;
	f[14] = 0x45, f[22] = 64, f[23] = 17;
	f[26] = (uint8_t)i, f[27] = (uint8_t)(i + 1), f[28] = (uint8_t)(i + 2), f[29] = (uint8_t)(i + 3);
	inet_pton(AF_INET, "2.2.2.2", f + 30);
	for (int j = 42; j < FRAME; j++)
		f[j] = (uint8_t)(i * 7 + j);
}

static struct ibv_qp *rss_qp(struct dpvt_ep *e, struct ibv_rwq_ind_table *t, uint8_t fn, uint8_t klen, uint64_t fields,
			     uint32_t mask)
{
	struct ibv_qp_init_attr_ex a = {.qp_type = IBV_QPT_RAW_PACKET, .pd = e->pd, .rwq_ind_tbl = t,
					.comp_mask = mask ? mask : IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_IND_TABLE |
								       IBV_QP_INIT_ATTR_RX_HASH,
					.rx_hash_conf = {.rx_hash_function = fn, .rx_hash_key_len = klen,
							 .rx_hash_key = hkey, .rx_hash_fields_mask = fields}};
	errno = 0;
	return ibv_create_qp_ex(e->ctx, &a);
}

static void errors(struct dpvt_ep *r, struct ibv_rwq_ind_table *t, struct ibv_wq *wq)
{
	uint64_t v4 = IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_DST_IPV4;
	CHECK_NULL_ERRNO(rss_qp(r, t, 2, 40, v4, 0), EOPNOTSUPP);
	CHECK_NULL_ERRNO(rss_qp(r, t, IBV_RX_HASH_FUNC_TOEPLITZ, 40, IBV_RX_HASH_IPSEC_SPI, 0), EOPNOTSUPP);
	CHECK_NULL_ERRNO(rss_qp(r, t, IBV_RX_HASH_FUNC_TOEPLITZ, 39, v4, 0), EINVAL);
	CHECK_NULL_ERRNO(rss_qp(r, t, IBV_RX_HASH_FUNC_TOEPLITZ, 40, v4, IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_RX_HASH),
			 EINVAL);
	struct ibv_qp_init_attr_ex ud = {.qp_type = IBV_QPT_UD, .pd = r->pd, .rwq_ind_tbl = t,
					 .comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_IND_TABLE |
						      IBV_QP_INIT_ATTR_RX_HASH,
					 .rx_hash_conf = {.rx_hash_function = IBV_RX_HASH_FUNC_TOEPLITZ,
							  .rx_hash_key_len = 40, .rx_hash_key = hkey,
							  .rx_hash_fields_mask = v4}};
	CHECK_NULL_ERRNO(ibv_create_qp_ex(r->ctx, &ud), EINVAL);
	struct ibv_wq_init_attr wa = {.wq_type = (enum ibv_wq_type)1, .max_wr = 4, .max_sge = 1, .pd = r->pd,
				      .cq = r->rcq};
	CHECK_NULL_ERRNO(ibv_create_wq(r->ctx, &wa), EOPNOTSUPP);
	struct ibv_wq_attr ma = {.attr_mask = IBV_WQ_ATTR_FLAGS};
	CHECK_EQ(ibv_modify_wq(wq, &ma), EOPNOTSUPP, "WQ flags: EOPNOTSUPP");
	ma = (struct ibv_wq_attr){.attr_mask = IBV_WQ_ATTR_STATE | IBV_WQ_ATTR_CURR_STATE, .wq_state = IBV_WQS_RDY,
				  .curr_wq_state = IBV_WQS_RESET};
	CHECK_EQ(ibv_modify_wq(wq, &ma), EINVAL, "a wrong current state: EINVAL");
	struct ibv_wq *big[512];
	for (int i = 0; i < 512; i++)
		big[i] = wq;
	struct ibv_rwq_ind_table_init_attr ta = {.log_ind_tbl_size = 9, .ind_tbl = big};
	CHECK_NULL_ERRNO(ibv_create_rwq_ind_table(r->ctx, &ta), EINVAL);
	CHECK_EQ(ibv_destroy_wq(wq), EBUSY, "destroy a WQ a table lists: EBUSY");
	CHECK_EQ(ibv_destroy_rwq_ind_table(t), EBUSY, "destroy a table an RSS QP uses: EBUSY");
}

int main(void)
{
	struct dpvt_ep s = {0}, r = {0};
	if (dpvt_ep_open(&s, "dpv0", 64, false) || dpvt_ep_buf(&s, s.pd, 8192, IBV_ACCESS_LOCAL_WRITE) ||
	    dpvt_ep_open(&r, "dpv0", 64, false) || dpvt_ep_buf(&r, r.pd, NPKT * 2 * 256, IBV_ACCESS_LOCAL_WRITE)) {
		CHECK(0, "two endpoints");
		return dpvt_finish();
	}
	struct ibv_cq *cq[2] = {r.scq, r.rcq};
	struct ibv_wq *wq[2];
	for (int i = 0; i < 2; i++) {
		struct ibv_wq_init_attr wa = {.wq_type = IBV_WQT_RQ, .max_wr = NPKT, .max_sge = 1, .pd = r.pd,
					      .cq = cq[i]};
		wq[i] = ibv_create_wq(r.ctx, &wa);
		CHECK(wq[i] != NULL && wa.max_wr >= NPKT, "WQ %d (errno %d)", i, errno);
		if (!wq[i])
			return dpvt_finish();
		struct ibv_wq_attr ma = {.attr_mask = IBV_WQ_ATTR_STATE, .wq_state = IBV_WQS_RDY};
		CHECK_EQ(ibv_modify_wq(wq[i], &ma), 0, "WQ ready");
		for (int j = 0; j < NPKT; j++) {
			struct ibv_sge sg = {(uintptr_t)r.buf + (size_t)(i * NPKT + j) * 256, 256, r.mr->lkey};
			struct ibv_recv_wr w = {.wr_id = (uint64_t)(i * NPKT + j), .sg_list = &sg, .num_sge = 1}, *bad;
			CHECK_EQ(ibv_post_wq_recv(wq[i], &w, &bad), 0, "post to the WQ");
		}
	}
	struct ibv_rwq_ind_table_init_attr ta = {.log_ind_tbl_size = 1, .ind_tbl = wq};
	struct ibv_rwq_ind_table *t = ibv_create_rwq_ind_table(r.ctx, &ta);
	CHECK(t != NULL, "an indirection table of 2 WQs (errno %d)", errno);
	struct ibv_qp *q = t ? rss_qp(&r, t, IBV_RX_HASH_FUNC_TOEPLITZ, 40,
				      IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_DST_IPV4, 0)
			     : NULL;
	CHECK(q != NULL, "an RSS QP (errno %d)", errno);
	if (!q)
		return dpvt_finish();
	struct {
		struct ibv_flow_attr a;
		struct ibv_flow_spec_eth e;
	} fa = {.a = {.type = IBV_FLOW_ATTR_NORMAL, .size = sizeof(fa), .num_of_specs = 1, .port = 1},
		.e = {.type = IBV_FLOW_SPEC_ETH, .size = sizeof(fa.e)}};
	memcpy(fa.e.val.dst_mac, MAC, 6);
	memset(fa.e.mask.dst_mac, 0xff, 6);
	struct ibv_flow *f = ibv_create_flow(q, &fa.a);
	CHECK(f != NULL, "a rule on the RSS QP (errno %d)", errno);
	struct ibv_qp_init_attr ia = {.send_cq = s.scq, .recv_cq = s.rcq, .qp_type = IBV_QPT_RAW_PACKET,
				      .cap = {.max_send_wr = NPKT, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1}};
	struct ibv_qp *sq = ibv_create_qp(s.pd, &ia);
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .port_num = 1};
	CHECK(sq && !ibv_modify_qp(sq, &a, IBV_QP_STATE | IBV_QP_PORT) && !dpvt_qp_set_state(sq, IBV_QPS_RTR) &&
		      !dpvt_qp_set_state(sq, IBV_QPS_RTS),
	      "the sender's raw QP");
	int got[2] = {0, 0}, bad = 0;
	struct ibv_wc wc;
	for (int i = 0; i < NPKT; i++) {
		frame(s.buf, i);
		CHECK_EQ(dpvt_post_wr(sq, IBV_WR_SEND, (uint64_t)i, s.buf, FRAME, s.mr->lkey, 0, 0, 0,
				      IBV_SEND_SIGNALED), 0, "send");
		dpvt_poll_n(s.scq, &wc, 1, 3000);
		int seen = 0;
		for (int tries = 0; tries < 3000 && !seen; tries++)
			for (int c = 0; c < 2 && !seen; c++) {
				if (dpvt_poll_n(cq[c], &wc, 1, c ? 1 : 0) != 1)
					continue;
				seen = 1;
				const uint8_t *b = r.buf + wc.wr_id * 256;
				if (wc.status != IBV_WC_SUCCESS || wc.byte_len != FRAME || wc.qp_num != wq[c]->wq_num ||
				    memcmp(b, s.buf, FRAME))
					bad++;
				got[c]++;
			}
		if (!seen)
			bad++;
	}
	CHECK(bad == 0 && got[0] + got[1] == NPKT, "%d frames arrived whole in their WQ's CQ (%d bad)",
	      got[0] + got[1], bad);
	CHECK(got[0] > 0 && got[1] > 0, "both WQs got frames (%d, %d)", got[0], got[1]);
	errors(&r, t, wq[0]);
	CHECK_EQ(ibv_destroy_flow(f), 0, "destroy the rule");
	CHECK_EQ(ibv_destroy_qp(q), 0, "destroy the RSS QP");
	CHECK_EQ(ibv_destroy_rwq_ind_table(t), 0, "destroy the table");
	CHECK_EQ(ibv_destroy_wq(wq[0]), 0, "destroy WQ 0");
	CHECK_EQ(ibv_destroy_wq(wq[1]), 0, "destroy WQ 1");
	ibv_destroy_qp(sq);
	dpvt_ep_close(&s);
	dpvt_ep_close(&r);
	return dpvt_finish();
}
