/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * SRQ: 4 RC senders on dpv0, 4 RC receivers on dpv1 sharing one SRQ. Every
 * message (sender id, sequence, pattern) arrives once, per sender in order,
 * on the receiver QP it was sent to; ibv_query_srq / ibv_modify_srq (limit,
 * no resize), ibv_post_recv refused on an SRQ QP, ibv_destroy_srq EBUSY
 * while QPs use it.
 */
#include <arpa/inet.h>

#include "dpvt_verbs.h"

#define NQP 4
#define NMSG 300
#define SRQ_WR 64
#define SLOT 4096

int main(void)
{
	struct dpvt_ep A, B;
	unsetenv("DPVERBS_FAULT");
	if (dpvt_ep_open(&A, "dpv0", 4096, false) || dpvt_ep_open(&B, "dpv1", 4096, false)) {
		printf("0 passed, 1 failed\n");
		return 1;
	}
	uint8_t *sbuf = aligned_alloc(4096, (size_t)NQP * SLOT * 64), *rbuf = aligned_alloc(4096, (size_t)SRQ_WR * SLOT);
	struct ibv_mr *smr = ibv_reg_mr(A.pd, sbuf, (size_t)NQP * SLOT * 64, IBV_ACCESS_LOCAL_WRITE);
	struct ibv_mr *rmr = ibv_reg_mr(B.pd, rbuf, (size_t)SRQ_WR * SLOT, IBV_ACCESS_LOCAL_WRITE);
	struct ibv_srq_init_attr sia;
	memset(&sia, 0, sizeof(sia));
	sia.attr.max_wr = 50;
	sia.attr.max_sge = 2;
	struct ibv_srq *srq = ibv_create_srq(B.pd, &sia);
	CHECK(srq && smr && rmr, "SRQ and MRs");
	if (!srq)
		return dpvt_finish();
	CHECK(sia.attr.max_wr >= 50 && sia.attr.max_sge >= 2, "create reports max_wr %u max_sge %u", sia.attr.max_wr,
	      sia.attr.max_sge);
	struct ibv_srq_attr sa;
	CHECK_EQ(ibv_query_srq(srq, &sa), 0, "ibv_query_srq");
	CHECK(sa.max_wr == sia.attr.max_wr && sa.max_sge == sia.attr.max_sge && sa.srq_limit == 0, "query values");
	sa.srq_limit = 10;
	CHECK_EQ(ibv_modify_srq(srq, &sa, IBV_SRQ_LIMIT), 0, "modify limit 10");
	CHECK_EQ(ibv_query_srq(srq, &sa), 0, "query");
	CHECK_EQ(sa.srq_limit, 10, "limit reported");
	sa.srq_limit = sia.attr.max_wr + 1;
	CHECK_EQ(ibv_modify_srq(srq, &sa, IBV_SRQ_LIMIT), EINVAL, "limit above max_wr refused");
	sa.max_wr = 128;
	CHECK_EQ(ibv_modify_srq(srq, &sa, IBV_SRQ_MAX_WR), EINVAL, "resize refused (not supported, documented)");
	sa.srq_limit = 0;
	CHECK_EQ(ibv_modify_srq(srq, &sa, IBV_SRQ_LIMIT), 0, "disarm limit");

	struct ibv_qp *qa[NQP], *qb[NQP];
	struct dpvt_conn o = dpvt_conn_default();
	o.min_rnr_timer = 1;
	o.rnr_retry = 7;
	for (int q = 0; q < NQP; q++) {
		qa[q] = dpvt_ep_qp(&A, IBV_QPT_RC, 64, 16, NULL);
		qb[q] = dpvt_ep_qp(&B, IBV_QPT_RC, 16, 0, srq);
		CHECK(qa[q] && qb[q] && !dpvt_connect(qa[q], A.ctx, &o, qb[q], B.ctx, &o, false), "pair %d", q);
	}
	CHECK_EQ(dpvt_post_recv(qb[0], rmr, 0, 0, 64), EINVAL, "ibv_post_recv on an SRQ QP refused");
	CHECK_EQ(ibv_destroy_srq(srq), EBUSY, "destroy SRQ while QPs use it");
	for (int s = 0; s < SRQ_WR && s < (int)sia.attr.max_wr; s++)
		dpvt_post_srq_recv(srq, rmr, (uint64_t)s, (size_t)s * SLOT, SLOT);

	int next_send[NQP] = {0}, next_recv[NQP] = {0}, inflight[NQP] = {0}, total = 0, bad = 0;
	struct ibv_wc wc[64];
	uint64_t t0 = dpvt_now_ms();
	while (total < NQP * NMSG && dpvt_now_ms() - t0 < 20000) {
		for (int q = 0; q < NQP; q++)
			while (next_send[q] < NMSG && inflight[q] < 32) {
				int i = next_send[q];
				uint32_t len = 1 + (uint32_t)(dpvt_mix64((uint64_t)(q * 1000 + i)) % 3000);
				uint8_t *p = sbuf + ((size_t)q * 64 + (size_t)(i % 64)) * SLOT;
				dpvt_pat_fill(p, len, (uint64_t)q, (uint64_t)i);
				if (dpvt_post_wr(qa[q], IBV_WR_SEND_WITH_IMM, (uint64_t)i, p, len, smr->lkey, 0, 0,
						 (uint32_t)(q << 16 | i), IBV_SEND_SIGNALED))
					break;
				next_send[q]++;
				inflight[q]++;
			}
		for (int q = 0; q < NQP; q++) {
			int n = ibv_poll_cq(A.scq, 64, wc);
			for (int k = 0; k < n; k++) {
				if (wc[k].status != IBV_WC_SUCCESS && ++bad < 5)
					fprintf(stderr, "send: %s\n", ibv_wc_status_str(wc[k].status));
				for (int j = 0; j < NQP; j++)
					if (wc[k].qp_num == qa[j]->qp_num)
						inflight[j]--;
			}
		}
		int n = ibv_poll_cq(B.rcq, 64, wc);
		for (int k = 0; k < n; k++) {
			uint32_t imm = ntohl(wc[k].imm_data);
			int q = (int)(imm >> 16), i = (int)(imm & 0xffff);
			uint32_t len = 1 + (uint32_t)(dpvt_mix64((uint64_t)(q * 1000 + i)) % 3000);
			bool ok = wc[k].status == IBV_WC_SUCCESS && q < NQP && wc[k].qp_num == qb[q]->qp_num &&
				  wc[k].src_qp == qa[q]->qp_num && i == next_recv[q] && wc[k].byte_len == len &&
				  dpvt_pat_check(rbuf + wc[k].wr_id * SLOT, len, (uint64_t)q, (uint64_t)i) == -1;
			if (!ok && ++bad < 5)
				fprintf(stderr, "recv: %s qp %u imm %#x len %u\n", ibv_wc_status_str(wc[k].status), wc[k].qp_num,
					imm, wc[k].byte_len);
			if (q < NQP)
				next_recv[q] = i + 1;
			total++;
			dpvt_post_srq_recv(srq, rmr, wc[k].wr_id, wc[k].wr_id * SLOT, SLOT);
		}
	}
	printf("SRQ: %d messages from %d senders in %llu ms\n", total, NQP, (unsigned long long)(dpvt_now_ms() - t0));
	CHECK_EQ(total, NQP * NMSG, "all messages arrived");
	CHECK_EQ(bad, 0, "each once, in order per sender, on the right QP, intact");
	CHECK_EQ(dpvt_poll_quiet(B.rcq, 50), 0, "no extra receive completion");
	for (int q = 0; q < NQP; q++) {
		ibv_destroy_qp(qa[q]);
		ibv_destroy_qp(qb[q]);
		if (q < NQP - 1)
			CHECK_EQ(ibv_destroy_srq(srq), EBUSY, "destroy SRQ while some QPs remain");
	}
	CHECK_EQ(ibv_destroy_srq(srq), 0, "destroy SRQ after its QPs");
	ibv_dereg_mr(smr);
	ibv_dereg_mr(rmr);
	free(sbuf);
	free(rbuf);
	dpvt_ep_close(&A);
	dpvt_ep_close(&B);
	return dpvt_finish();
}
