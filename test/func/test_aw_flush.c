/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * RDMA ATOMIC WRITE and RDMA FLUSH (IBA 1.5 annex A19) between dpv0 (the
 * requester A) and dpv1 (the responder B), black-box (the shared suite runs
 * it on dpverbsd too):
 *   caps      device_cap_flags_ex has FLUSH_GLOBAL, FLUSH_PERSISTENT and
 *             ATOMIC_WRITE (rdma-core 45's bits); an RC QP takes
 *             IBV_QP_EX_WITH_ATOMIC_WRITE | FLUSH, UD and XRC do not
 *             (EOPNOTSUPP); MRs and QPs take the FLUSH access flags
 *   aw        ibv_wr_atomic_write, ibv_post_send (SGE and inline): the 8
 *             bytes land, IBV_WC_ATOMIC_WRITE with byte_len 8; a flag
 *             written after data sees the data there
 *   flush     dpv_wr_flush (rdma-core 45's ibv_wr_flush) of each placement
 *             type and selectivity level: IBV_WC_FLUSH, byte_len the length
 *   stream    16 rounds of 16 ATOMIC WRITEs (all outstanding at once) to
 *             words that B's own CPU overwrites once they completed: every
 *             word ends with B's value (a retransmitted or duplicated
 *             request is never executed again), then a FLUSH
 *   post      what ibv_post_send / ibv_wr_complete refuse (EINVAL): an
 *             ATOMIC WRITE of 4 bytes, on UC; a FLUSH through ibv_post_send,
 *             of no placement type, of an unknown level, above 2 GiB
 *   errors    what the responder refuses, as the requester's completion
 *             status (then its QP is in ERR and the next WR is flushed):
 *             unaligned ATOMIC WRITE -> IBV_WC_REM_INV_REQ_ERR; no remote
 *             write right, bad rkey, FLUSH without the MR's or the QP's
 *             FLUSH right, FLUSH outside the MR -> IBV_WC_REM_ACCESS_ERR;
 *             no responder resources -> IBV_WC_REM_INV_REQ_ERR
 * With "lossy" (DPVERBS_FAULT with drops, duplicates, reordering): caps, aw,
 * flush and post only (retransmitted and duplicate requests are answered
 * from the responder's resources, never executed twice); a fatal NAK that
 * is lost ends in IBV_WC_RETRY_EXC_ERR, as on any RC path, so the errors
 * are not checked there.
 */
#include <errno.h>
#include <string.h>

#include "dpverbs.h"
#include "dpvt_verbs.h"

#define BUFSZ (1u << 20)
#define OPS (IBV_QP_EX_WITH_ATOMIC_WRITE | DPV_QP_EX_WITH_FLUSH | IBV_QP_EX_WITH_RDMA_WRITE)
#define FLUSH_ALL (DPV_ACCESS_FLUSH_GLOBAL | DPV_ACCESS_FLUSH_PERSISTENT)

static struct dpvt_ep A, B;
static struct ibv_mr *b_ro; /* B's buffer again: local write and remote read only */

static int pair(struct ibv_qp **qa, struct ibv_qp **qb, unsigned int b_access, uint8_t b_rd_atomic)
{
	struct dpvt_conn oa = dpvt_conn_default(), ob = dpvt_conn_default();
	oa.access |= FLUSH_ALL;
	ob.access = b_access;
	ob.max_dest_rd_atomic = b_rd_atomic;
	*qa = dpvt_qp_new_ex(A.pd, IBV_QPT_RC, A.scq, A.rcq, NULL, OPS);
	*qb = dpvt_qp_new_ex(B.pd, IBV_QPT_RC, B.scq, B.rcq, NULL, OPS);
	if (!*qa || !*qb)
		return -1;
	return dpvt_connect(*qa, A.ctx, &oa, *qb, B.ctx, &ob, false);
}

static void unpair(struct ibv_qp *qa, struct ibv_qp *qb)
{
	if (qa)
		ibv_destroy_qp(qa);
	if (qb)
		ibv_destroy_qp(qb);
	struct ibv_wc wc[16];
	while (ibv_poll_cq(A.scq, 16, wc) > 0 || ibv_poll_cq(B.rcq, 16, wc) > 0)
		;
	dpvt_drain_async(A.ctx);
	dpvt_drain_async(B.ctx);
}

static void expect_ok(int n, int opcode, const uint32_t *len, const char *what)
{
	struct ibv_wc wc[16];
	int got = dpvt_poll_n(A.scq, wc, n, 3000);
	CHECK_EQ(got, n, what);
	for (int i = 0; i < got; i++)
		CHECK(wc[i].status == IBV_WC_SUCCESS && (int)wc[i].opcode == opcode && wc[i].byte_len == len[i] &&
			      wc[i].wr_id == (uint64_t)i + 1,
		      "%s: completion %d: %s opcode %d byte_len %u wr_id %llu (want opcode %d, %u bytes)", what, i,
		      ibv_wc_status_str(wc[i].status), wc[i].opcode, wc[i].byte_len, (unsigned long long)wc[i].wr_id,
		      opcode, len[i]);
}

static void t_caps(void)
{
	struct ibv_device_attr_ex ax;
	CHECK_EQ(ibv_query_device_ex(A.ctx, NULL, &ax), 0, "ibv_query_device_ex");
	uint64_t want = DPV_DEVICE_FLUSH_GLOBAL | DPV_DEVICE_FLUSH_PERSISTENT | DPV_DEVICE_ATOMIC_WRITE;
	CHECK((ax.device_cap_flags_ex & want) == want, "device_cap_flags_ex %#llx has FLUSH and ATOMIC_WRITE",
	      (unsigned long long)ax.device_cap_flags_ex);
	struct ibv_qp *q = dpvt_qp_new_ex(A.pd, IBV_QPT_UD, A.scq, A.rcq, NULL, IBV_QP_EX_WITH_ATOMIC_WRITE);
	CHECK(!q && errno == EOPNOTSUPP, "UD with ATOMIC_WRITE: EOPNOTSUPP (errno %d)", errno);
	q = dpvt_qp_new_ex(A.pd, IBV_QPT_UC, A.scq, A.rcq, NULL, DPV_QP_EX_WITH_FLUSH);
	CHECK(!q && errno == EOPNOTSUPP, "UC with FLUSH: EOPNOTSUPP (errno %d)", errno);
	q = dpvt_qp_new_ex(A.pd, IBV_QPT_RC, A.scq, A.rcq, NULL, OPS);
	CHECK(q != NULL, "RC with ATOMIC_WRITE and FLUSH: %s", strerror(errno));
	if (q)
		ibv_destroy_qp(q);
}

static void t_atomic_write(void)
{
	struct ibv_qp *qa, *qb;
	if (pair(&qa, &qb, DPVT_ACCESS_ALL | FLUSH_ALL, 16)) {
		CHECK(0, "aw: set-up");
		return;
	}
	struct ibv_qp_ex *x = ibv_qp_to_qp_ex(qa);
	uint64_t v[3] = {0x0102030405060708ull, 0x1112131415161718ull, 0xa1a2a3a4a5a6a7a8ull};
	ibv_wr_start(x);
	x->wr_flags = IBV_SEND_SIGNALED;
	for (int i = 0; i < 3; i++) {
		x->wr_id = (uint64_t)i + 1;
		ibv_wr_atomic_write(x, B.mr->rkey, (uintptr_t)B.buf + 8 * (i + 1), &v[i]);
	}
	CHECK_EQ(ibv_wr_complete(x), 0, "three ibv_wr_atomic_write");
	static const uint32_t eight[5] = {8, 8, 8, 8, 8};
	expect_ok(3, IBV_WC_ATOMIC_WRITE, eight, "ibv_wr_atomic_write");
	CHECK(memcmp(B.buf + 8, v, sizeof(v)) == 0, "the 24 bytes landed");

	/* the classic API: from an SGE, and inline */
	uint64_t w1 = 0x5555aaaa5555aaaaull, w2 = 0x0f0f0f0ff0f0f0f0ull;
	memcpy(A.buf, &w1, 8);
	CHECK_EQ(dpvt_post_wr(qa, IBV_WR_ATOMIC_WRITE, 1, A.buf, 8, A.mr->lkey, (uintptr_t)B.buf + 64, B.mr->rkey, 0,
			      IBV_SEND_SIGNALED), 0, "ibv_post_send ATOMIC_WRITE (SGE)");
	CHECK_EQ(dpvt_post_wr(qa, IBV_WR_ATOMIC_WRITE, 2, &w2, 8, 0, (uintptr_t)B.buf + 72, B.mr->rkey, 0,
			      IBV_SEND_SIGNALED | IBV_SEND_INLINE), 0, "ibv_post_send ATOMIC_WRITE (inline)");
	expect_ok(2, IBV_WC_ATOMIC_WRITE, eight, "ibv_post_send ATOMIC_WRITE");
	CHECK(memcmp(B.buf + 64, &w1, 8) == 0 && memcmp(B.buf + 72, &w2, 8) == 0, "SGE and inline bytes landed");

	/* data, then a flag: when the flag is there the data is */
	for (size_t i = 0; i < 8192; i++)
		A.buf[4096 + i] = (uint8_t)(i * 7 + 3);
	uint64_t flag = 1;
	ibv_wr_start(x);
	x->wr_id = 1;
	ibv_wr_rdma_write(x, B.mr->rkey, (uintptr_t)B.buf + 65536);
	ibv_wr_set_sge(x, A.mr->lkey, (uintptr_t)A.buf + 4096, 8192);
	x->wr_id = 2;
	ibv_wr_atomic_write(x, B.mr->rkey, (uintptr_t)B.buf + 128, &flag);
	CHECK_EQ(ibv_wr_complete(x), 0, "WRITE then ATOMIC WRITE");
	struct ibv_wc wc[2];
	CHECK_EQ(dpvt_poll_n(A.scq, wc, 2, 3000), 2, "WRITE and ATOMIC WRITE complete");
	CHECK(memcmp(B.buf + 65536, A.buf + 4096, 8192) == 0 && memcmp(B.buf + 128, &flag, 8) == 0,
	      "the data is there with the flag");
	unpair(qa, qb);
}

static void t_flush(void)
{
	struct ibv_qp *qa, *qb;
	if (pair(&qa, &qb, DPVT_ACCESS_ALL | FLUSH_ALL, 16)) {
		CHECK(0, "flush: set-up");
		return;
	}
	struct ibv_qp_ex *x = ibv_qp_to_qp_ex(qa);
	static const struct {
		uint64_t off;
		uint32_t len;
		uint8_t type, level;
	} f[] = {
		{0, 4096, DPV_FLUSH_GLOBAL, DPV_FLUSH_RANGE},
		{8192, 100, DPV_FLUSH_PERSISTENT, DPV_FLUSH_RANGE},
		{0, BUFSZ, DPV_FLUSH_GLOBAL | DPV_FLUSH_PERSISTENT, DPV_FLUSH_RANGE},
		{12, 0, DPV_FLUSH_GLOBAL, DPV_FLUSH_RANGE},
		{0, 77, DPV_FLUSH_GLOBAL | DPV_FLUSH_PERSISTENT, DPV_FLUSH_MR},
	};
	uint32_t lens[5];
	ibv_wr_start(x);
	x->wr_flags = IBV_SEND_SIGNALED;
	for (int i = 0; i < 5; i++) {
		x->wr_id = (uint64_t)i + 1;
		dpv_wr_flush(x, B.mr->rkey, (uintptr_t)B.buf + f[i].off, f[i].len, f[i].type, f[i].level);
		lens[i] = f[i].len;
	}
	CHECK_EQ(ibv_wr_complete(x), 0, "five dpv_wr_flush");
	expect_ok(5, DPV_WC_FLUSH, lens, "dpv_wr_flush");
	unpair(qa, qb);
}

static void t_stream(void)
{
	struct ibv_qp *qa, *qb;
	if (pair(&qa, &qb, DPVT_ACCESS_ALL | FLUSH_ALL, 16)) {
		CHECK(0, "stream: set-up");
		return;
	}
	struct ibv_qp_ex *x = ibv_qp_to_qp_ex(qa);
	volatile uint64_t *word = (volatile uint64_t *)(B.buf + BUFSZ / 2);
	int bad_wc = 0, bad_mem = 0;
	for (int round = 0; round < 16; round++) {
		uint64_t v[16];
		ibv_wr_start(x);
		x->wr_flags = IBV_SEND_SIGNALED;
		for (int i = 0; i < 16; i++) {
			v[i] = dpvt_mix64((uint64_t)round << 8 | (uint64_t)i) | 1;
			x->wr_id = (uint64_t)i;
			ibv_wr_atomic_write(x, B.mr->rkey, (uintptr_t)&word[round * 16 + i], &v[i]);
		}
		if (ibv_wr_complete(x)) {
			bad_wc++;
			break;
		}
		struct ibv_wc wc[16];
		int got = dpvt_poll_n(A.scq, wc, 16, 5000);
		for (int i = 0; i < got; i++)
			bad_wc += wc[i].status != IBV_WC_SUCCESS || wc[i].wr_id != (uint64_t)i;
		if (got != 16) {
			bad_wc += 16 - got;
			break;
		}
		for (int i = 0; i < 16; i++) {
			bad_mem += word[round * 16 + i] != v[i];
			word[round * 16 + i] = ~v[i]; /* B's CPU writes over it */
		}
	}
	CHECK_EQ(bad_wc, 0, "256 ATOMIC WRITEs completed in order");
	CHECK_EQ(bad_mem, 0, "each landed");
	ibv_wr_start(x);
	x->wr_id = 99;
	dpv_wr_flush(x, B.mr->rkey, (uintptr_t)word, 256 * 8, DPV_FLUSH_GLOBAL, DPV_FLUSH_RANGE);
	CHECK_EQ(ibv_wr_complete(x), 0, "FLUSH after them");
	struct ibv_wc wc;
	CHECK(dpvt_poll_n(A.scq, &wc, 1, 5000) == 1 && wc.status == IBV_WC_SUCCESS && wc.wr_id == 99, "FLUSH completes");
	int kept = 0;
	for (int round = 0; round < 16; round++)
		for (int i = 0; i < 16; i++)
			kept += word[round * 16 + i] == ~(dpvt_mix64((uint64_t)round << 8 | (uint64_t)i) | 1);
	CHECK_EQ(kept, 256, "no ATOMIC WRITE executed again over B's own writes");
	unpair(qa, qb);
}

static void t_post(void)
{
	struct ibv_qp *qa, *qb;
	if (pair(&qa, &qb, DPVT_ACCESS_ALL | FLUSH_ALL, 16)) {
		CHECK(0, "post: set-up");
		return;
	}
	CHECK_EQ(dpvt_post_wr(qa, IBV_WR_ATOMIC_WRITE, 1, A.buf, 4, A.mr->lkey, (uintptr_t)B.buf, B.mr->rkey, 0,
			      IBV_SEND_SIGNALED), EINVAL, "ATOMIC_WRITE of 4 bytes: EINVAL");
	CHECK_EQ(dpvt_post_wr(qa, (enum ibv_wr_opcode)DPV_WR_FLUSH, 1, NULL, 0, 0, (uintptr_t)B.buf, B.mr->rkey, 0,
			      IBV_SEND_SIGNALED), EINVAL, "FLUSH through ibv_post_send: EINVAL");
	struct ibv_qp_ex *x = ibv_qp_to_qp_ex(qa);
	static const struct {
		size_t len;
		uint8_t type, level;
		const char *what;
	} bad[] = {
		{64, 0, DPV_FLUSH_RANGE, "no placement type"},
		{64, 4, DPV_FLUSH_RANGE, "unknown placement type"},
		{64, DPV_FLUSH_GLOBAL, 2, "unknown selectivity level"},
		{(size_t)1 << 32, DPV_FLUSH_GLOBAL, DPV_FLUSH_RANGE, "4 GiB"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ibv_wr_start(x);
		x->wr_id = 9;
		dpv_wr_flush(x, B.mr->rkey, (uintptr_t)B.buf, bad[i].len, bad[i].type, bad[i].level);
		CHECK_EQ(ibv_wr_complete(x), EINVAL, bad[i].what);
	}
	CHECK_EQ(dpvt_poll_quiet(A.scq, 50), 0, "nothing was posted");
	struct ibv_qp *uc = dpvt_ep_qp(&A, IBV_QPT_UC, 4, 4, NULL);
	struct ibv_qp *ub = dpvt_ep_qp(&B, IBV_QPT_UC, 4, 4, NULL);
	if (uc && ub && !dpvt_connect(uc, A.ctx, NULL, ub, B.ctx, NULL, false))
		CHECK_EQ(dpvt_post_wr(uc, IBV_WR_ATOMIC_WRITE, 1, A.buf, 8, A.mr->lkey, (uintptr_t)B.buf, B.mr->rkey, 0,
				      IBV_SEND_SIGNALED), EINVAL, "ATOMIC_WRITE on UC: EINVAL");
	else
		CHECK(0, "UC set-up");
	if (uc)
		ibv_destroy_qp(uc);
	if (ub)
		ibv_destroy_qp(ub);
	unpair(qa, qb);
}

/* One refused request, then an ATOMIC WRITE behind it: the first gets st,
 * the second IBV_WC_WR_FLUSH_ERR, A's QP is in ERR. */
static void refused(const char *what, unsigned int b_access, uint8_t b_rd_atomic, bool flush, uint64_t off,
		    uint32_t len, uint8_t type, uint8_t level, uint32_t rkey, enum ibv_wc_status st)
{
	struct ibv_qp *qa, *qb;
	if (pair(&qa, &qb, b_access, b_rd_atomic)) {
		CHECK(0, "%s: set-up", what);
		return;
	}
	memset(B.buf, 0, 4096);
	struct ibv_qp_ex *x = ibv_qp_to_qp_ex(qa);
	uint64_t v = 0x7777777777777777ull;
	ibv_wr_start(x);
	x->wr_flags = IBV_SEND_SIGNALED;
	x->wr_id = 1;
	if (flush)
		dpv_wr_flush(x, rkey, (uintptr_t)B.buf + off, len, type, level);
	else
		ibv_wr_atomic_write(x, rkey, (uintptr_t)B.buf + off, &v);
	x->wr_id = 2;
	ibv_wr_atomic_write(x, B.mr->rkey, (uintptr_t)B.buf + 512, &v);
	CHECK(ibv_wr_complete(x) == 0, "%s: posted", what);
	struct ibv_wc wc[2];
	int got = dpvt_poll_n(A.scq, wc, 2, 3000);
	CHECK_EQ(got, 2, what);
	if (got >= 1)
		CHECK(wc[0].wr_id == 1 && wc[0].status == st, "%s: %s (want %s)", what, ibv_wc_status_str(wc[0].status),
		      ibv_wc_status_str(st));
	if (got == 2)
		CHECK(wc[1].wr_id == 2 && wc[1].status == IBV_WC_WR_FLUSH_ERR, "%s: the next WR %s", what,
		      ibv_wc_status_str(wc[1].status));
	CHECK(dpvt_qp_state(qa) == IBV_QPS_ERR, "%s: requester in ERR", what);
	for (int i = 0; i < 4096; i++)
		if (B.buf[i]) {
			CHECK(0, "%s: B's memory written at %d", what, i);
			break;
		}
	unpair(qa, qb);
}

static void t_errors(void)
{
	const unsigned int all = DPVT_ACCESS_ALL | FLUSH_ALL;
	const uint32_t rk = B.mr->rkey, ro = b_ro->rkey;
	const uint8_t g = DPV_FLUSH_GLOBAL, p = DPV_FLUSH_PERSISTENT, r = DPV_FLUSH_RANGE;
	refused("ATOMIC WRITE unaligned", all, 16, false, 4, 8, 0, 0, rk, IBV_WC_REM_INV_REQ_ERR);
	refused("ATOMIC WRITE, MR without remote write", all, 16, false, 0, 8, 0, 0, ro, IBV_WC_REM_ACCESS_ERR);
	refused("ATOMIC WRITE, QP without remote write", IBV_ACCESS_REMOTE_READ | FLUSH_ALL, 16, false, 0, 8, 0, 0, rk,
		IBV_WC_REM_ACCESS_ERR);
	refused("ATOMIC WRITE, bad rkey", all, 16, false, 0, 8, 0, 0, rk ^ 0x55, IBV_WC_REM_ACCESS_ERR);
	refused("ATOMIC WRITE past the MR", all, 16, false, BUFSZ - 4, 8, 0, 0, rk, IBV_WC_REM_ACCESS_ERR);
	refused("ATOMIC WRITE, no responder resources", all, 0, false, 0, 8, 0, 0, rk, IBV_WC_REM_INV_REQ_ERR);
	refused("FLUSH, MR without FLUSH rights", all, 16, true, 0, 64, g, r, ro, IBV_WC_REM_ACCESS_ERR);
	refused("FLUSH persistent, QP with the global right only", DPVT_ACCESS_ALL | DPV_ACCESS_FLUSH_GLOBAL, 16, true, 0,
		64, p, r, rk, IBV_WC_REM_ACCESS_ERR);
	refused("FLUSH past the MR", all, 16, true, 4096, BUFSZ, g, r, rk, IBV_WC_REM_ACCESS_ERR);
	refused("FLUSH, no responder resources", all, 0, true, 0, 64, g, r, rk, IBV_WC_REM_INV_REQ_ERR);
}

int main(int argc, char **argv)
{
	bool lossy = argc > 1 && strcmp(argv[1], "lossy") == 0;
	if (dpvt_ep_open(&A, "dpv0", 256, false) || dpvt_ep_open(&B, "dpv1", 256, false) ||
	    dpvt_ep_buf(&A, NULL, BUFSZ, DPVT_ACCESS_ALL) || dpvt_ep_buf(&B, NULL, BUFSZ, DPVT_ACCESS_ALL | FLUSH_ALL))
		return 1;
	b_ro = ibv_reg_mr(B.pd, B.buf, BUFSZ, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
	CHECK(b_ro != NULL, "a second MR of B's buffer");
	if (!b_ro)
		return dpvt_finish();
	t_caps();
	t_atomic_write();
	uint64_t dup0 = lossy ? dpvt_stat(false, "duplicate_request") : 0;
	t_flush();
	t_stream();
	if (lossy) {
		/* the faults did make requests come twice (the snapshot covers
		 * dpverbsd's engine in shared mode) */
		uint64_t dup = dpvt_stat_wait(false, "duplicate_request", dup0 + 1);
		printf("aw_flush lossy: %llu duplicate requests\n", (unsigned long long)(dup - dup0));
		CHECK(dup != UINT64_MAX && dup > dup0, "duplicate requests under faults");
	}
	t_post();
	if (!lossy)
		t_errors();
	ibv_dereg_mr(b_ro);
	dpvt_ep_close(&A);
	dpvt_ep_close(&B);
	return dpvt_finish();
}
