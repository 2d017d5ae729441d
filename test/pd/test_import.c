/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ibv_import_device, ibv_import_pd, ibv_import_mr and their unimports
 * (doc/man/ibv_import_device.3.md), as rdma-core's pyverbs test_shared_pd
 * uses them: a context made from another context's cmd_fd (a dup of it)
 * imports that context's PD and MR, and a QP of the imported PD sends from
 * and receives into the imported MR. Runs in embedded mode (a context of
 * the same process) and in shared mode under with_daemon.sh (the daemon's
 * contexts; $DPV_SHARED_TMP set).
 *
 * Errors: cmd_fd -1 or a descriptor that is no context's EBADF, a closed
 * context's EBADF; ibv_import_pd through a context not made by
 * ibv_import_device EINVAL; a PD or MR that is not the exporting context's
 * ENOENT; ibv_dereg_mr of an imported MR EINVAL. In embedded mode the
 * original PD cannot be deallocated while an imported handle on it exists
 * (EBUSY).
 *
 * Black-box (libdpverbs.so + <infiniband/verbs.h>). Prints "N passed, N
 * failed".
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dpvt_check.h"
#include "dpvt_verbs.h"

#define LEN 4096

static bool g_shared;

static void errors(struct ibv_context *ctx, struct ibv_pd *pd)
{
	CHECK_NULL_ERRNO(ibv_import_device(-1), EBADF);
	char path[] = "/tmp/dpv-import-XXXXXX";
	int f = mkstemp(path);
	CHECK(f >= 0, "a temporary file");
	if (f >= 0) {
		CHECK_NULL_ERRNO(ibv_import_device(f), EBADF);
		close(f);
		unlink(path);
	}
	CHECK_NULL_ERRNO(ibv_import_pd(ctx, pd->handle), EINVAL);
	CHECK_NULL_ERRNO(ibv_import_pd(NULL, pd->handle), EINVAL);
	CHECK_NULL_ERRNO(ibv_import_mr(NULL, 1), EINVAL);
	/* a context that was closed names nothing any more */
	struct ibv_context *tmp = dpvt_open_dev("dpv0");
	int dfd = tmp ? dup(tmp->cmd_fd) : -1;
	if (tmp)
		ibv_close_device(tmp);
	CHECK(dfd >= 0, "dup of a context's cmd_fd");
	if (dfd >= 0) {
		CHECK_NULL_ERRNO(ibv_import_device(dfd), EBADF);
		close(dfd);
	}
}

/* peer's QP b writes into the imported MR, then the imported PD's QP a
 * sends from it: both sides' keys work. */
static void traffic(struct ibv_context *ictx, struct ibv_pd *ipd, struct ibv_mr *imr, uint8_t *buf,
		    struct ibv_context *peer)
{
	struct ibv_cq *acq = ibv_create_cq(ictx, 16, NULL, NULL, 0);
	struct ibv_pd *bpd = ibv_alloc_pd(peer);
	struct ibv_cq *bcq = ibv_create_cq(peer, 16, NULL, NULL, 0);
	uint8_t *bbuf = aligned_alloc(4096, LEN);
	struct ibv_mr *bmr = bpd && bbuf ? ibv_reg_mr(bpd, bbuf, LEN, IBV_ACCESS_LOCAL_WRITE) : NULL;
	struct dpvt_qp_caps ca = {8, 8, 1, 1, 0, 0}, cb = ca;
	struct ibv_qp *a = acq ? dpvt_qp_create(ipd, IBV_QPT_RC, acq, acq, NULL, &ca) : NULL;
	struct ibv_qp *b = bmr && bcq ? dpvt_qp_create(bpd, IBV_QPT_RC, bcq, bcq, NULL, &cb) : NULL;
	CHECK(a && b, "an RC QP on the imported PD, one on the peer");
	int conn = a && b ? dpvt_connect(a, ictx, NULL, b, peer, NULL, false) : -1;
	CHECK_EQ(conn, 0, "connect them");
	if (!conn) {
		memset(bbuf, 0x5a, LEN);
		struct ibv_sge sg = {(uintptr_t)bbuf, LEN, bmr->lkey};
		struct ibv_send_wr wr = {.wr_id = 1, .sg_list = &sg, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
					 .send_flags = IBV_SEND_SIGNALED}, *bad;
		wr.wr.rdma.remote_addr = (uintptr_t)imr->addr;
		wr.wr.rdma.rkey = imr->rkey;
		struct ibv_wc wc;
		CHECK(ibv_post_send(b, &wr, &bad) == 0 && dpvt_poll_n(bcq, &wc, 1, 3000) == 1 &&
			      wc.status == IBV_WC_SUCCESS,
		      "RDMA WRITE into the imported MR with its rkey");
		CHECK(buf[0] == 0x5a && buf[LEN - 1] == 0x5a, "the exporter's buffer has the data");
		memset(bbuf, 0, LEN);
		memset(buf, 0xa7, LEN);
		CHECK_EQ(dpvt_post_recv(b, bmr, 2, 0, LEN), 0, "peer receive");
		CHECK_EQ(dpvt_post_wr(a, IBV_WR_SEND, 3, buf, LEN, imr->lkey, 0, 0, 0, IBV_SEND_SIGNALED), 0, "SEND with the imported lkey");
		CHECK(dpvt_poll_n(acq, &wc, 1, 3000) == 1 && wc.status == IBV_WC_SUCCESS, "the SEND completes");
		CHECK(dpvt_poll_n(bcq, &wc, 1, 3000) == 1 && wc.status == IBV_WC_SUCCESS && bbuf[7] == 0xa7,
		      "the peer received it");
	}
	if (a)
		ibv_destroy_qp(a);
	if (b)
		ibv_destroy_qp(b);
	if (bmr)
		ibv_dereg_mr(bmr);
	if (acq)
		ibv_destroy_cq(acq);
	if (bcq)
		ibv_destroy_cq(bcq);
	if (bpd)
		ibv_dealloc_pd(bpd);
	free(bbuf);
}

int main(void)
{
	g_shared = getenv("DPV_SHARED_TMP") != NULL;
	struct ibv_context *ctx = dpvt_open_dev("dpv0"), *peer = dpvt_open_dev("dpv1");
	uint8_t *buf = aligned_alloc(4096, LEN);
	struct ibv_pd *pd = ctx ? ibv_alloc_pd(ctx) : NULL, *ppd = peer ? ibv_alloc_pd(peer) : NULL;
	const int acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	struct ibv_mr *mr = pd && buf ? ibv_reg_mr(pd, buf, LEN, acc) : NULL;
	struct ibv_mr *pmr = ppd && buf ? ibv_reg_mr(ppd, buf, LEN, acc) : NULL;
	if (!CHECK(mr && pmr, "set-up: contexts, PDs, MRs"))
		return dpvt_finish();
	errors(ctx, pd);
	int dfd = dup(ctx->cmd_fd);
	struct ibv_context *ictx = ibv_import_device(dfd);
	CHECK(ictx != NULL, "ibv_import_device of a dup of cmd_fd (errno %d)", errno);
	if (!ictx)
		return dpvt_finish();
	CHECK(!strcmp(ibv_get_device_name(ictx->device), "dpv0"), "the imported context is on dpv0");
	CHECK_NULL_ERRNO(ibv_import_pd(ictx, ppd->handle), ENOENT);
	struct ibv_pd *ipd = ibv_import_pd(ictx, pd->handle);
	CHECK(ipd && ipd->handle == pd->handle && ipd->context == ictx, "ibv_import_pd (errno %d)", errno);
	if (!ipd)
		return dpvt_finish();
	CHECK_NULL_ERRNO(ibv_import_mr(ipd, pmr->handle), ENOENT);
	struct ibv_mr *imr = ibv_import_mr(ipd, mr->handle);
	CHECK(imr && imr->lkey == mr->lkey && imr->rkey == mr->rkey && imr->length == LEN && imr->addr == buf &&
		      imr->pd == ipd && imr->handle == mr->handle,
	      "ibv_import_mr: the same keys, address and length (errno %d)", errno);
	if (!imr)
		return dpvt_finish();
	CHECK_EQ(ibv_dereg_mr(imr), EINVAL, "ibv_dereg_mr of an imported MR: EINVAL");
	/* an imported context's descriptor imports the same context's objects */
	struct ibv_context *ictx2 = ibv_import_device(ictx->cmd_fd);
	struct ibv_pd *ipd2 = ictx2 ? ibv_import_pd(ictx2, pd->handle) : NULL;
	CHECK(ipd2 != NULL, "import from the imported context's cmd_fd (errno %d)", errno);
	if (ipd2)
		ibv_unimport_pd(ipd2);
	if (ictx2)
		ibv_close_device(ictx2);
	traffic(ictx, ipd, imr, buf, peer);
	if (!g_shared)
		CHECK_EQ(ibv_dealloc_pd(pd), EBUSY, "embedded: the original PD while an imported handle exists: EBUSY");
	ibv_unimport_mr(imr);
	ibv_unimport_pd(ipd);
	CHECK_EQ(ibv_close_device(ictx), 0, "close the imported context");
	close(dfd);
	CHECK_EQ(ibv_dereg_mr(mr), 0, "the original MR deregisters");
	CHECK_EQ(ibv_dealloc_pd(pd), 0, "the original PD deallocates");
	ibv_dereg_mr(pmr);
	ibv_dealloc_pd(ppd);
	ibv_close_device(peer);
	ibv_close_device(ctx);
	free(buf);
	return dpvt_finish();
}
