/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Device memory (ibv_alloc_dm, ibv_free_dm, ibv_memcpy_to_dm,
 * ibv_memcpy_from_dm, ibv_reg_dm_mr, ibv_import_dm), black-box, on dpv0 and
 * dpv1 of the built-in configuration (each port's "dm_size" 256 KiB, the
 * default); the shared suite runs it on dpverbsd (test/shared/meson.build).
 *
 *   - max_dm_size; the errors mlx5 and ib_core give: a comp_mask bit, zero
 *     length, above max_dm_size, an alignment above a page (EINVAL), not
 *     that much left (ENOMEM); ibv_memcpy_to/from_dm outside the DM (EFAULT)
 *     or not 4-byte aligned (EINVAL), returned as errno values;
 *     ibv_reg_dm_mr without IBV_ACCESS_ZERO_BASED, outside the DM, remote
 *     write without local write, an access bit mlx5 refuses (EINVAL);
 *     ibv_free_dm while an MR is on it (EBUSY); ibv_rereg_mr of an MR on
 *     device memory (EINVAL); the memory of a DM freed is whole again;
 *   - RC traffic with zero-based MRs on device memory as local and remote
 *     memory: SEND from and into device memory, RDMA WRITE into it, RDMA
 *     READ from it into device memory, FETCH_AND_ADD and CMP_AND_SWP on it,
 *     an MR at an offset of its DM; a remote access past the MR
 *     (IBV_WC_REM_ACCESS_ERR), a local SGE past it (IBV_WC_LOC_PROT_ERR);
 *   - a child of fork() allocates device memory on its parent's context
 *     (pyverbs' test_multi_process_alloc_dm), the device's books count it;
 *   - UD: a SEND from device memory into device memory;
 *   - ibv_import_dm through a context imported from (a duplicate of) this
 *     one's command descriptor, the memory kept by the import after the
 *     owner frees it; with the argument "shared" (the shared suite): a
 *     process killed holding all the device memory gives it back.
 * With the argument "config" (test/func/func-dm.json): dpv0 has no device
 * memory (max_dm_size 0, EOPNOTSUPP), dpv1 128 bytes.
 * Prints "N passed, N failed"; exit status 1 on any failure.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <signal.h>
#include <sys/wait.h>

#include "dpvt_check.h"
#include "dpvt_verbs.h"

#define DM_DEFAULT (256u << 10)
#define DM_ACC (IBV_ACCESS_ZERO_BASED | IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
		IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)

static uint64_t max_dm(struct ibv_context *ctx)
{
	struct ibv_device_attr_ex a;
	memset(&a, 0, sizeof(a));
	if (ibv_query_device_ex(ctx, NULL, &a))
		return 0;
	return a.max_dm_size;
}

static struct ibv_dm *dm_alloc(struct ibv_context *ctx, size_t len, uint32_t log_align)
{
	struct ibv_alloc_dm_attr a = {.length = len, .log_align_req = log_align};
	errno = 0;
	return ibv_alloc_dm(ctx, &a);
}

static void test_alloc_errors(struct ibv_context *ctx)
{
	uint64_t max = max_dm(ctx);
	CHECK_EQ(max, DM_DEFAULT, "max_dm_size (the default dm_size)");
	struct ibv_alloc_dm_attr a = {.length = 64, .comp_mask = 1};
	CHECK_NULL_ERRNO(ibv_alloc_dm(ctx, &a), EINVAL);
	a.comp_mask = 0;
	a.length = 0;
	CHECK_NULL_ERRNO(ibv_alloc_dm(ctx, &a), EINVAL);
	a.length = max + 1;
	CHECK_NULL_ERRNO(ibv_alloc_dm(ctx, &a), EINVAL);
	a.length = 64;
	a.log_align_req = 13;
	CHECK_NULL_ERRNO(ibv_alloc_dm(ctx, &a), EINVAL);

	/* all of it, then nothing more */
	struct ibv_dm *all = dm_alloc(ctx, max, 12);
	CHECK(all != NULL, "all %llu bytes: errno %d", (unsigned long long)max, errno);
	CHECK_NULL_ERRNO(dm_alloc(ctx, 4, 0), ENOMEM);
	CHECK_EQ(ibv_free_dm(all), 0, "free all");
	/* two halves, then nothing more; one half back, then a half again */
	struct ibv_dm *h1 = dm_alloc(ctx, max / 2, 6), *h2 = dm_alloc(ctx, max / 2, 0);
	CHECK(h1 && h2, "two halves: errno %d", errno);
	CHECK_NULL_ERRNO(dm_alloc(ctx, 64, 0), ENOMEM);
	if (h1)
		CHECK_EQ(ibv_free_dm(h1), 0, "free a half");
	h1 = dm_alloc(ctx, max / 2, 0);
	CHECK(h1 != NULL, "a half again: errno %d", errno);
	if (h1)
		ibv_free_dm(h1);
	if (h2)
		ibv_free_dm(h2);
	/* a unit is 64 bytes: 4 bytes take one */
	struct ibv_dm *small[8];
	unsigned int n = 0;
	for (; n < 8; n++)
		if (!(small[n] = dm_alloc(ctx, 4, 0)))
			break;
	CHECK_EQ(n, 8, "eight 4-byte allocations");
	struct ibv_dm *rest = dm_alloc(ctx, max - 8 * 64, 0);
	CHECK(rest != NULL, "the rest after 8 units: errno %d", errno);
	CHECK_NULL_ERRNO(dm_alloc(ctx, 1, 0), ENOMEM);
	if (rest)
		ibv_free_dm(rest);
	while (n)
		ibv_free_dm(small[--n]);
	/* alignment: a 4 KiB-aligned allocation after a 64-byte one */
	struct ibv_dm *u = dm_alloc(ctx, 64, 0), *al = dm_alloc(ctx, 4096, 12);
	CHECK(u && al, "64 bytes, then 4096 aligned to 4096: errno %d", errno);
	if (al)
		ibv_free_dm(al);
	if (u)
		ibv_free_dm(u);
}

static void test_memcpy(struct ibv_context *ctx)
{
	struct ibv_dm *dm = dm_alloc(ctx, 100, 0);
	if (!CHECK(dm != NULL, "100 bytes: errno %d", errno))
		return;
	uint8_t in[100], out[100];
	for (unsigned int i = 0; i < sizeof(in); i++)
		in[i] = (uint8_t)(i * 7 + 1);
	memset(out, 0xee, sizeof(out));
	CHECK_EQ(ibv_memcpy_from_dm(out, dm, 0, 100), 0, "a new DM reads");
	uint8_t zero[100] = {0};
	CHECK(memcmp(out, zero, sizeof(out)) == 0, "a new DM is zeroes");
	CHECK_EQ(ibv_memcpy_to_dm(dm, 0, in, 100), 0, "to_dm 100 bytes");
	CHECK_EQ(ibv_memcpy_from_dm(out, dm, 0, 100), 0, "from_dm 100 bytes");
	CHECK(memcmp(in, out, 100) == 0, "the bytes came back");
	CHECK_EQ(ibv_memcpy_to_dm(dm, 96, in, 4), 0, "to_dm the last 4 bytes");
	CHECK_EQ(ibv_memcpy_from_dm(out, dm, 96, 4), 0, "from_dm the last 4 bytes");
	CHECK(memcmp(in, out, 4) == 0, "the last 4 bytes");
	CHECK_EQ(ibv_memcpy_to_dm(dm, 100, in, 0), 0, "0 bytes at the end");
	/* out of range: EFAULT (mlx5), before the alignment check */
	CHECK_EQ(ibv_memcpy_to_dm(dm, 104, in, 4), EFAULT, "to_dm past the end");
	CHECK_EQ(ibv_memcpy_from_dm(out, dm, 104, 4), EFAULT, "from_dm past the end");
	CHECK_EQ(ibv_memcpy_to_dm(dm, 0, in, 104), EFAULT, "to_dm too long");
	CHECK_EQ(ibv_memcpy_from_dm(out, dm, 0, 104), EFAULT, "from_dm too long");
	CHECK_EQ(ibv_memcpy_to_dm(dm, 96, in, 8), EFAULT, "to_dm across the end");
	CHECK_EQ(ibv_memcpy_to_dm(dm, UINT64_MAX - 3, in, 8), EFAULT, "to_dm offset wrapping");
	CHECK_EQ(ibv_memcpy_to_dm(dm, 3, in, 3), EINVAL, "to_dm unaligned offset and length");
	/* unaligned: EINVAL */
	CHECK_EQ(ibv_memcpy_to_dm(dm, 3, in, 4), EINVAL, "to_dm unaligned offset");
	CHECK_EQ(ibv_memcpy_to_dm(dm, 4, in, 3), EINVAL, "to_dm unaligned length");
	CHECK_EQ(ibv_memcpy_from_dm(out, dm, 3, 4), EINVAL, "from_dm unaligned offset");
	CHECK_EQ(ibv_memcpy_from_dm(out, dm, 4, 3), EINVAL, "from_dm unaligned length");
	CHECK_EQ(ibv_memcpy_from_dm(out, dm, 0, 100), 0, "from_dm after the refusals");
	CHECK(memcmp(in, out, 96) == 0, "nothing was written by a refused copy");
	CHECK_EQ(ibv_free_dm(dm), 0, "free");
}

static void test_reg(struct ibv_context *ctx, struct ibv_pd *pd)
{
	struct ibv_dm *dm = dm_alloc(ctx, 128, 0);
	if (!CHECK(dm != NULL, "128 bytes: errno %d", errno))
		return;
	CHECK_NULL_ERRNO(ibv_reg_dm_mr(pd, dm, 0, 128, IBV_ACCESS_LOCAL_WRITE), EINVAL);
	CHECK_NULL_ERRNO(ibv_reg_dm_mr(pd, dm, 0, 132, IBV_ACCESS_ZERO_BASED | IBV_ACCESS_LOCAL_WRITE), EINVAL);
	CHECK_NULL_ERRNO(ibv_reg_dm_mr(pd, dm, 64, 68, IBV_ACCESS_ZERO_BASED | IBV_ACCESS_LOCAL_WRITE), EINVAL);
	CHECK_NULL_ERRNO(ibv_reg_dm_mr(pd, dm, 132, 0, IBV_ACCESS_ZERO_BASED | IBV_ACCESS_LOCAL_WRITE), EINVAL);
	CHECK_NULL_ERRNO(ibv_reg_dm_mr(pd, dm, 0, 64, IBV_ACCESS_ZERO_BASED | IBV_ACCESS_REMOTE_WRITE), EINVAL);
	CHECK_NULL_ERRNO(ibv_reg_dm_mr(pd, dm, 0, 64, IBV_ACCESS_ZERO_BASED | IBV_ACCESS_LOCAL_WRITE |
				       IBV_ACCESS_MW_BIND), EINVAL);
	struct ibv_mr *z = ibv_reg_dm_mr(pd, dm, 128, 0, IBV_ACCESS_ZERO_BASED);
	CHECK(z != NULL, "0 bytes at the end (ib_core accepts it): errno %d", errno);
	if (z)
		CHECK_EQ(ibv_dereg_mr(z), 0, "dereg the empty MR");
	struct ibv_mr *mr = ibv_reg_dm_mr(pd, dm, 64, 64, DM_ACC | IBV_ACCESS_OPTIONAL_RANGE);
	if (!CHECK(mr != NULL, "64 bytes at offset 64: errno %d", errno)) {
		ibv_free_dm(dm);
		return;
	}
	CHECK(mr->length == 64 && mr->lkey == mr->rkey && mr->pd == pd, "the MR's fields");
	CHECK_EQ(ibv_free_dm(dm), EBUSY, "free with an MR on it");
	errno = 0;
	CHECK_EQ(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0, IBV_ACCESS_LOCAL_WRITE),
		 IBV_REREG_MR_ERR_INPUT, "rereg of an MR on device memory");
	CHECK_EQ(errno, EINVAL, "rereg errno");
	CHECK_EQ(ibv_dereg_mr(mr), 0, "dereg");
	CHECK_EQ(ibv_free_dm(dm), 0, "free once the MR is gone");
}

static int post_recv_at(struct ibv_qp *qp, uint64_t wr_id, uint64_t addr, uint32_t len, uint32_t lkey)
{
	struct ibv_sge s = {.addr = addr, .length = len, .lkey = lkey};
	struct ibv_recv_wr wr = {.wr_id = wr_id, .sg_list = &s, .num_sge = 1}, *bad = NULL;
	return ibv_post_recv(qp, &wr, &bad);
}

/* One completion of wr_id with status st (drive polls the peer's CQs). */
static bool wait_status(struct ibv_cq *cq, uint64_t wr_id, enum ibv_wc_status st, const char *label)
{
	struct ibv_wc wc;
	int n = dpvt_poll_n(cq, &wc, 1, 3000);
	return CHECK(n == 1 && wc.wr_id == wr_id && wc.status == st, "%s: %d completion(s), wr_id %llu status %s",
		     label, n, n ? (unsigned long long)wc.wr_id : 0ull, n ? ibv_wc_status_str(wc.status) : "-");
}

static void test_traffic(void)
{
	struct dpvt_ep a = {0}, b = {0};
	if (dpvt_ep_open(&a, "dpv0", 64, false) || dpvt_ep_open(&b, "dpv1", 64, false) ||
	    dpvt_ep_buf(&a, NULL, 4096, DPVT_ACCESS_ALL) || !(a.qp = dpvt_ep_qp(&a, IBV_QPT_RC, 16, 16, NULL)) ||
	    !(b.qp = dpvt_ep_qp(&b, IBV_QPT_RC, 16, 16, NULL)) ||
	    dpvt_connect(a.qp, a.ctx, NULL, b.qp, b.ctx, NULL, false)) {
		CHECK(0, "two connected RC endpoints");
		dpvt_ep_close(&a);
		dpvt_ep_close(&b);
		return;
	}
	struct ibv_dm *da = dm_alloc(a.ctx, 1024, 0), *db = dm_alloc(b.ctx, 1024, 0);
	struct ibv_mr *ma = da ? ibv_reg_dm_mr(a.pd, da, 0, 1024, DM_ACC) : NULL;
	struct ibv_mr *mb = db ? ibv_reg_dm_mr(b.pd, db, 0, 1024, DM_ACC) : NULL;
	/* an MR at offset 512 of b's DM: its address 0 is the DM's byte 512 */
	struct ibv_mr *mb2 = db ? ibv_reg_dm_mr(b.pd, db, 512, 256, DM_ACC) : NULL;
	if (!CHECK(ma && mb && mb2, "DMs and zero-based MRs on both sides: errno %d", errno))
		goto out;
	uint8_t pat[512], got[512];
	for (unsigned int i = 0; i < sizeof(pat); i++)
		pat[i] = (uint8_t)(i * 13 + 5);

	/* SEND from a's DM (bytes 64..319) into b's DM (at 256) */
	CHECK_EQ(ibv_memcpy_to_dm(da, 64, pat, 256), 0, "fill a's DM");
	CHECK_EQ(post_recv_at(b.qp, 1, 256, 256, mb->lkey), 0, "receive into b's DM at 256");
	CHECK_EQ(dpvt_post_wr(a.qp, IBV_WR_SEND, 2, (void *)(uintptr_t)64, 256, ma->lkey, 0, 0, 0, IBV_SEND_SIGNALED),
		 0, "SEND from a's DM at 64");
	dpvt_wait1(a.scq, b.rcq, 2, IBV_WC_SEND, "SEND from device memory");
	dpvt_wait1(b.rcq, NULL, 1, IBV_WC_RECV, "receive into device memory");
	memset(got, 0, sizeof(got));
	ibv_memcpy_from_dm(got, db, 256, 256);
	CHECK(memcmp(got, pat, 256) == 0, "the SEND's bytes in b's DM");

	/* RDMA WRITE from a's heap buffer into b's DM at 0 (zero-based) */
	memcpy(a.buf, pat + 100, 128);
	CHECK_EQ(dpvt_post_wr(a.qp, IBV_WR_RDMA_WRITE, 3, a.buf, 128, a.mr->lkey, 0, mb->rkey, 0, IBV_SEND_SIGNALED),
		 0, "RDMA WRITE to address 0 of b's DM MR");
	dpvt_wait1(a.scq, b.rcq, 3, IBV_WC_RDMA_WRITE, "RDMA WRITE into device memory");
	ibv_memcpy_from_dm(got, db, 0, 128);
	CHECK(memcmp(got, pat + 100, 128) == 0, "the WRITE's bytes in b's DM");

	/* RDMA WRITE through the MR at offset 512: its address 16 is byte 528 */
	CHECK_EQ(dpvt_post_wr(a.qp, IBV_WR_RDMA_WRITE, 4, a.buf, 64, a.mr->lkey, 16, mb2->rkey, 0, IBV_SEND_SIGNALED),
		 0, "RDMA WRITE to address 16 of the MR at offset 512");
	dpvt_wait1(a.scq, b.rcq, 4, IBV_WC_RDMA_WRITE, "RDMA WRITE through an MR at an offset");
	ibv_memcpy_from_dm(got, db, 528, 64);
	CHECK(memcmp(got, pat + 100, 64) == 0, "the bytes at 528 of b's DM");

	/* RDMA READ from b's DM (at 256) into a's DM (at 512) */
	CHECK_EQ(dpvt_post_wr(a.qp, IBV_WR_RDMA_READ, 5, (void *)(uintptr_t)512, 200, ma->lkey, 256, mb->rkey, 0,
			      IBV_SEND_SIGNALED), 0, "RDMA READ from b's DM into a's DM");
	dpvt_wait1(a.scq, b.rcq, 5, IBV_WC_RDMA_READ, "RDMA READ device memory to device memory");
	ibv_memcpy_from_dm(got, da, 512, 200);
	CHECK(memcmp(got, pat, 200) == 0, "the READ's bytes in a's DM");

	/* atomics on b's DM at 640; the original value into a's DM at 8 */
	uint64_t v = 1000, r = 0;
	ibv_memcpy_to_dm(db, 640, &v, 8);
	CHECK_EQ(dpvt_post_atomic(a.qp, IBV_WR_ATOMIC_FETCH_AND_ADD, 6, (uint64_t *)(uintptr_t)8, ma->lkey, 640,
				  mb->rkey, 23, 0, NULL), 0, "FETCH_AND_ADD on b's DM");
	dpvt_wait1(a.scq, b.rcq, 6, IBV_WC_FETCH_ADD, "FETCH_AND_ADD on device memory");
	ibv_memcpy_from_dm(&r, da, 8, 8);
	CHECK_EQ(r, 1000, "the original value in a's DM");
	ibv_memcpy_from_dm(&r, db, 640, 8);
	CHECK_EQ(r, 1023, "the sum in b's DM");
	CHECK_EQ(dpvt_post_atomic(a.qp, IBV_WR_ATOMIC_CMP_AND_SWP, 7, (uint64_t *)(uintptr_t)16, ma->lkey, 640,
				  mb->rkey, 1023, 77, NULL), 0, "CMP_AND_SWP on b's DM");
	dpvt_wait1(a.scq, b.rcq, 7, IBV_WC_COMP_SWAP, "CMP_AND_SWP on device memory");
	ibv_memcpy_from_dm(&r, db, 640, 8);
	CHECK_EQ(r, 77, "swapped in b's DM");

	/* a local SGE past a's DM MR: the WR fails locally */
	CHECK_EQ(dpvt_post_wr(a.qp, IBV_WR_RDMA_WRITE, 8, (void *)(uintptr_t)1000, 64, ma->lkey, 0, mb->rkey, 0,
			      IBV_SEND_SIGNALED), 0, "RDMA WRITE from past a's DM MR");
	wait_status(a.scq, 8, IBV_WC_LOC_PROT_ERR, "a local SGE past the DM MR");
	/* the QP is in error now: a new pair (and CQs) for the remote violation */
	dpvt_ep_release(&a, NULL);
	dpvt_ep_release(&b, NULL);
	a.scq = a.rcq = ibv_create_cq(a.ctx, 64, NULL, NULL, 0);
	b.scq = b.rcq = ibv_create_cq(b.ctx, 64, NULL, NULL, 0);
	if (!a.scq || !b.scq || dpvt_ep_buf(&a, NULL, 4096, DPVT_ACCESS_ALL) || !(a.qp = dpvt_ep_qp(&a, IBV_QPT_RC, 16, 16, NULL)) ||
	    !(b.qp = dpvt_ep_qp(&b, IBV_QPT_RC, 16, 16, NULL)) ||
	    dpvt_connect(a.qp, a.ctx, NULL, b.qp, b.ctx, NULL, false)) {
		CHECK(0, "a second pair");
		goto out;
	}
	CHECK_EQ(dpvt_post_wr(a.qp, IBV_WR_RDMA_WRITE, 9, a.buf, 64, a.mr->lkey, 200, mb2->rkey, 0, IBV_SEND_SIGNALED),
		 0, "RDMA WRITE past the MR at offset 512 (256 bytes)");
	wait_status(a.scq, 9, IBV_WC_REM_ACCESS_ERR, "a remote write past the DM MR");
	ibv_memcpy_from_dm(got, db, 768, 64);
	uint8_t zero[64] = {0};
	CHECK(memcmp(got, zero, 64) == 0, "nothing written past the MR");
out:
	if (mb2)
		ibv_dereg_mr(mb2);
	if (mb)
		ibv_dereg_mr(mb);
	if (ma)
		ibv_dereg_mr(ma);
	if (db)
		CHECK_EQ(ibv_free_dm(db), 0, "free b's DM");
	if (da)
		CHECK_EQ(ibv_free_dm(da), 0, "free a's DM");
	dpvt_ep_close(&a);
	dpvt_ep_close(&b);
}

/* UD: a SEND from device memory into device memory (after the 40-byte
 * GRH the receive buffer starts with). */
static void test_ud(void)
{
	const uint32_t qkey = 0x11111111;
	struct dpvt_ep a = {0}, b = {0};
	if (dpvt_ud_ep_open(&a, "dpv0", qkey, false) || dpvt_ud_ep_open(&b, "dpv1", qkey, false)) {
		CHECK(0, "two UD endpoints");
		dpvt_ep_close(&a);
		dpvt_ep_close(&b);
		return;
	}
	struct ibv_dm *da = dm_alloc(a.ctx, 256, 0), *db = dm_alloc(b.ctx, 256, 0);
	struct ibv_mr *ma = da ? ibv_reg_dm_mr(a.pd, da, 0, 256, DM_ACC) : NULL;
	struct ibv_mr *mb = db ? ibv_reg_dm_mr(b.pd, db, 0, 256, DM_ACC) : NULL;
	struct ibv_ah *ah = dpvt_ah_new(a.pd, b.ctx, 1, 1);
	if (CHECK(ma && mb && ah, "UD: DMs, MRs and an AH: errno %d", errno)) {
		uint8_t pat[100], got[100];
		for (unsigned int i = 0; i < sizeof(pat); i++)
			pat[i] = (uint8_t)(0x5a ^ (i * 3));
		CHECK_EQ(ibv_memcpy_to_dm(da, 128, pat, 100), 0, "fill a's DM");
		CHECK_EQ(post_recv_at(b.qp, 11, 0, 40 + 100, mb->lkey), 0, "UD receive into b's DM");
		struct ibv_sge sg = {.addr = 128, .length = 100, .lkey = ma->lkey};
		struct ibv_send_wr wr = {.wr_id = 12, .sg_list = &sg, .num_sge = 1, .opcode = IBV_WR_SEND,
					 .send_flags = IBV_SEND_SIGNALED}, *bad = NULL;
		wr.wr.ud.ah = ah;
		wr.wr.ud.remote_qpn = b.qp->qp_num;
		wr.wr.ud.remote_qkey = qkey;
		CHECK_EQ(ibv_post_send(a.qp, &wr, &bad), 0, "UD SEND from a's DM at 128");
		dpvt_wait1(a.scq, b.rcq, 12, IBV_WC_SEND, "UD SEND from device memory");
		dpvt_wait1(b.rcq, NULL, 11, IBV_WC_RECV, "UD receive into device memory");
		memset(got, 0, sizeof(got));
		ibv_memcpy_from_dm(got, db, 40, 100);
		CHECK(memcmp(got, pat, 100) == 0, "the UD payload after the GRH in b's DM");
	}
	if (ah)
		ibv_destroy_ah(ah);
	if (mb)
		ibv_dereg_mr(mb);
	if (ma)
		ibv_dereg_mr(ma);
	if (db)
		ibv_free_dm(db);
	if (da)
		ibv_free_dm(da);
	dpvt_ep_close(&a);
	dpvt_ep_close(&b);
}

/* Shared mode: a process killed with device memory gives it back (the
 * daemon reclaims it when its connection closes). */
static void test_kill(struct ibv_context *ctx)
{
	uint64_t max = max_dm(ctx);
	int pfd[2];
	if (!CHECK(pipe(pfd) == 0, "pipe"))
		return;
	fflush(NULL);
	pid_t p = fork();
	if (p == 0) {
		close(pfd[0]);
		char ok = dm_alloc(ctx, max, 0) ? 1 : 0; /* all of it, never freed */
		if (write(pfd[1], &ok, 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	close(pfd[1]);
	char ok = 0;
	CHECK(p > 0 && read(pfd[0], &ok, 1) == 1 && ok, "the child holds all of the device memory");
	close(pfd[0]);
	CHECK_NULL_ERRNO(dm_alloc(ctx, 64, 0), ENOMEM);
	if (p > 0) {
		kill(p, SIGKILL);
		waitpid(p, NULL, 0);
	}
	struct ibv_dm *dm = NULL;
	for (int i = 0; i < 200 && !dm; i++) { /* the daemon notices the closed connection */
		dm = dm_alloc(ctx, max, 0);
		if (!dm)
			usleep(10000);
	}
	CHECK(dm != NULL, "all of it again after the child was killed: errno %d", errno);
	if (dm)
		ibv_free_dm(dm);
}

/* A child of fork() allocates on its parent's context: the device's books
 * (a device's, shared by every process) count the parent's half. */
static void test_fork(struct ibv_context *ctx)
{
	uint64_t max = max_dm(ctx);
	struct ibv_dm *half = dm_alloc(ctx, max / 2, 0);
	if (!CHECK(half != NULL, "a half in the parent: errno %d", errno))
		return;
	fflush(NULL);
	pid_t p = fork();
	if (p == 0) {
		struct ibv_dm *c1 = dm_alloc(ctx, max / 2, 0);
		int ok = c1 != NULL;
		ok = ok && !dm_alloc(ctx, 64, 0) && errno == ENOMEM;
		uint32_t w = 0xc0ffee, r = 0;
		ok = ok && ibv_memcpy_to_dm(c1, 0, &w, 4) == 0 && ibv_memcpy_from_dm(&r, c1, 0, 4) == 0 && r == w;
		ok = ok && ibv_free_dm(c1) == 0;
		_exit(ok ? 0 : 1);
	}
	int st = -1;
	CHECK(p > 0 && waitpid(p, &st, 0) == p && WIFEXITED(st) && WEXITSTATUS(st) == 0,
	      "the child allocated the other half, no more, wrote, read and freed it (status %#x)", st);
	struct ibv_dm *again = dm_alloc(ctx, max / 2, 0);
	CHECK(again != NULL, "the other half is free again after the child: errno %d", errno);
	if (again)
		ibv_free_dm(again);
	CHECK_EQ(ibv_free_dm(half), 0, "free the parent's half");
}

static bool g_shared; /* argument "shared": run by the shared suite on dpverbsd */

static void test_import(struct ibv_context *ctx, struct ibv_pd *pd)
{
	struct ibv_dm *dm = dm_alloc(ctx, 256, 0);
	if (!CHECK(dm != NULL, "256 bytes: errno %d", errno))
		return;
	CHECK_NULL_ERRNO(ibv_import_dm(NULL, dm->handle), EINVAL);
	/* a context not made by ibv_import_device imports nothing */
	CHECK_NULL_ERRNO(ibv_import_dm(ctx, dm->handle), EINVAL);
	int dfd = dup(ctx->cmd_fd);
	errno = 0;
	struct ibv_context *ic = dfd >= 0 ? ibv_import_device(dfd) : NULL;
	if (dfd >= 0)
		close(dfd);
	if (!CHECK(ic != NULL, "ibv_import_device of a duplicate of cmd_fd: errno %d", errno)) {
		ibv_free_dm(dm);
		return;
	}
	CHECK_NULL_ERRNO(ibv_import_dm(ic, dm->handle + 1000), ENOENT);
	struct ibv_dm *im = ibv_import_dm(ic, dm->handle);
	if (CHECK(im != NULL, "import: errno %d", errno)) {
		CHECK_EQ(im->handle, dm->handle, "the imported DM's handle");
		uint8_t w[256], r[256];
		for (unsigned int i = 0; i < sizeof(w); i++)
			w[i] = (uint8_t)(0xab ^ i);
		CHECK_EQ(ibv_memcpy_to_dm(dm, 0, w, 256), 0, "write the original");
		CHECK_EQ(ibv_memcpy_from_dm(r, im, 0, 256), 0, "read the import");
		CHECK(memcmp(w, r, 256) == 0, "the import sees the original's bytes");
		CHECK_EQ(ibv_memcpy_to_dm(im, 252, w, 8), EFAULT, "the import's bounds");
		/* an MR on the imported DM keeps it after the owner frees it */
		struct ibv_pd *ipd = ibv_alloc_pd(ic);
		struct ibv_mr *imr = ipd ? ibv_reg_dm_mr(ipd, im, 0, 256, IBV_ACCESS_ZERO_BASED | IBV_ACCESS_LOCAL_WRITE)
					 : NULL;
		CHECK(imr != NULL, "an MR on the imported DM: errno %d", errno);
		CHECK_EQ(ibv_free_dm(dm), 0, "the owner frees its DM (the import holds it)");
		dm = NULL;
		CHECK_EQ(ibv_memcpy_from_dm(r, im, 0, 256), 0, "the import still reads");
		CHECK(memcmp(w, r, 256) == 0, "... the same bytes");
		uint64_t max = max_dm(ctx);
		CHECK_NULL_ERRNO(dm_alloc(ctx, max, 0), ENOMEM); /* the import's 256 bytes are still out */
		ibv_unimport_dm(im); /* an MR of this process is on it: nothing */
		CHECK_EQ(ibv_memcpy_from_dm(r, im, 0, 4), 0, "the import is still there");
		if (imr)
			CHECK_EQ(ibv_dereg_mr(imr), 0, "dereg the MR on the import");
		if (ipd)
			ibv_dealloc_pd(ipd);
		ibv_unimport_dm(im);
		struct ibv_dm *all = dm_alloc(ctx, max, 0);
		CHECK(all != NULL, "all of the device memory once the import let go: errno %d", errno);
		if (all)
			ibv_free_dm(all);
	}
	if (dm)
		ibv_free_dm(dm);
	CHECK_EQ(ibv_close_device(ic), 0, "close the imported context");
	(void)pd;
}

static void test_config(void)
{
	struct ibv_context *c0 = dpvt_open_dev("dpv0"), *c1 = dpvt_open_dev("dpv1");
	if (!CHECK(c0 && c1, "dpv0 and dpv1"))
		return;
	CHECK_EQ(max_dm(c0), 0, "dpv0: dm_size 0");
	CHECK_NULL_ERRNO(dm_alloc(c0, 64, 0), EOPNOTSUPP);
	CHECK_EQ(max_dm(c1), 128, "dpv1: dm_size 128");
	struct ibv_dm *d = dm_alloc(c1, 128, 0);
	CHECK(d != NULL, "dpv1: all 128 bytes: errno %d", errno);
	CHECK_NULL_ERRNO(dm_alloc(c1, 4, 0), ENOMEM);
	CHECK_NULL_ERRNO(dm_alloc(c1, 192, 0), EINVAL);
	if (d)
		ibv_free_dm(d);
	ibv_close_device(c0);
	ibv_close_device(c1);
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "config") == 0) {
		test_config();
		return dpvt_finish();
	}
	g_shared = argc > 1 && strcmp(argv[1], "shared") == 0;
	struct ibv_context *ctx = dpvt_open_dev("dpv0");
	struct ibv_pd *pd = ctx ? ibv_alloc_pd(ctx) : NULL;
	if (!CHECK(ctx && pd, "dpv0 and a PD"))
		return dpvt_finish();
	test_alloc_errors(ctx);
	test_memcpy(ctx);
	test_reg(ctx, pd);
	test_traffic();
	test_ud();
	test_fork(ctx);
	test_import(ctx, pd);
	if (g_shared)
		test_kill(ctx);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	return dpvt_finish();
}
