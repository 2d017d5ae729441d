/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The GSI QP (dpv_create_gsi_qp): QP 1 of a port, for connection managers.
 * On the built-in default configuration (dpv0 and dpv1 back to back, one
 * process):
 *   - one per port: a second one on the same device fails with EEXIST,
 *     one on the other device works; not UD: EINVAL; NULL: EINVAL;
 *   - (over IPv4 and IPv6 GIDs; wc.sl is 2 for IPv4, 1 for IPv6, as ConnectX)
 *   - a MAD-sized UD SEND from dpv0's GSI QP to QP 1 of dpv1's GID arrives
 *     at dpv1's GSI QP with source QP 1 (the DETH carries 1, not the local
 *     number) and its bytes intact; the answer goes back the same way;
 *   - an ordinary UD QP sending to QP 1 reaches the GSI QP too, and the GSI
 *     QP answers to the sender's real QPN;
 *   - once dpv1's GSI QP is destroyed, a send to QP 1 of dpv1 is dropped
 *     (no completion), and a new GSI QP can be created and receives.
 * Black-box: only the exported API.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dpvt_check.h"
#include "dpvt_verbs.h"
#include "dpverbs.h"

#define MAD_LEN 256
#define GRH_LEN 40
#define QKEY_GSI 0x80010000u

static struct ibv_qp *gsi_new(struct dpvt_ep *e)
{
	struct ibv_qp_init_attr a = {.send_cq = e->scq, .recv_cq = e->rcq, .qp_type = IBV_QPT_UD,
				     .cap = {.max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1,
					     .max_recv_sge = 1}};
	struct ibv_qp *qp = dpv_create_gsi_qp(e->pd, &a);
	if (qp && dpvt_ud_to_rts(qp, QKEY_GSI) != 0) {
		ibv_destroy_qp(qp);
		return NULL;
	}
	return qp;
}

static void fill(uint8_t *p, uint8_t seed)
{
	for (unsigned int i = 0; i < MAD_LEN; i++)
		p[i] = (uint8_t)(seed + i * 7);
}

/* A MAD from qp (of e, AH to peer's GID 1) to QP 1 of peer; checks that
 * peer's GSI QP g receives it from source QP src. */
static void mad_to_qp1(struct dpvt_ep *e, struct ibv_qp *qp, struct dpvt_ep *peer, struct ibv_qp *g,
		       uint32_t src, uint8_t seed, const char *what)
{
	/* odd seeds over IPv4 (GID 1), even ones over IPv6 (GID 0, link-local) */
	int gid = seed & 1;
	struct ibv_ah *ah = dpvt_ah_new(e->pd, peer->ctx, gid, gid);
	CHECK(ah != NULL, "%s: AH: %s", what, strerror(errno));
	if (!ah)
		return;
	memset(peer->buf, 0, GRH_LEN + MAD_LEN);
	CHECK(dpvt_post_recv(g, peer->mr, 7, 0, GRH_LEN + MAD_LEN) == 0, "%s: post recv", what);
	fill(e->buf + 4096, seed);
	CHECK(dpvt_post_ud_send(qp, ah, 1, QKEY_GSI, 9, e->mr, 4096, MAD_LEN, IBV_SEND_SIGNALED) == 0,
	      "%s: post send", what);
	struct ibv_wc wc;
	CHECK(dpvt_poll_n(e->scq, &wc, 1, 3000) == 1 && wc.status == IBV_WC_SUCCESS, "%s: send completion", what);
	int n = dpvt_poll_n(peer->rcq, &wc, 1, 3000);
	CHECK(n == 1 && wc.status == IBV_WC_SUCCESS && wc.wr_id == 7, "%s: receive (%d, status %d)", what, n,
	      n == 1 ? (int)wc.status : -1);
	if (n == 1) {
		CHECK(wc.src_qp == src, "%s: source QP %u, expected %u", what, wc.src_qp, src);
		CHECK(wc.qp_num == g->qp_num, "%s: received on QP %u, not the GSI QP %u", what, wc.qp_num,
		      g->qp_num);
		CHECK(wc.byte_len == GRH_LEN + MAD_LEN && (wc.wc_flags & IBV_WC_GRH), "%s: %u bytes", what,
		      wc.byte_len);
		/* the network header type, as ConnectX reports it on RoCEv2 */
		CHECK(wc.sl == (gid ? 2 : 1), "%s: sl %u over IPv%d", what, wc.sl, gid ? 4 : 6);
		uint8_t want[MAD_LEN];
		fill(want, seed);
		CHECK(memcmp(peer->buf + GRH_LEN, want, MAD_LEN) == 0, "%s: payload differs", what);
	}
	ibv_destroy_ah(ah);
}

int main(void)
{
	struct dpvt_ep a = {0}, b = {0};
	if (dpvt_ep_open(&a, "dpv0", 64, false) || dpvt_ep_open(&b, "dpv1", 64, false) ||
	    dpvt_ep_buf(&a, NULL, 8192, IBV_ACCESS_LOCAL_WRITE) || dpvt_ep_buf(&b, NULL, 8192, IBV_ACCESS_LOCAL_WRITE)) {
		CHECK(0, "devices");
		return dpvt_finish();
	}
	/* argument checks */
	struct ibv_qp_init_attr bad = {.send_cq = a.scq, .recv_cq = a.rcq, .qp_type = IBV_QPT_RC,
				       .cap = {.max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1}};
	errno = 0;
	CHECK(dpv_create_gsi_qp(a.pd, &bad) == NULL && errno == EINVAL, "an RC GSI QP: errno %d", errno);
	errno = 0;
	CHECK(dpv_create_gsi_qp(NULL, &bad) == NULL && errno == EINVAL, "NULL pd: errno %d", errno);

	struct ibv_qp *ga = gsi_new(&a), *gb = gsi_new(&b);
	CHECK(ga && gb, "a GSI QP on each device: %s", strerror(errno));
	if (!ga || !gb)
		return dpvt_finish();
	errno = 0;
	struct ibv_qp *again = gsi_new(&a);
	CHECK(again == NULL && errno == EEXIST, "a second GSI QP on dpv0: errno %d", errno);
	CHECK(ga->qp_num != 1 && gb->qp_num != 1 && ga->qp_num != gb->qp_num, "local numbers 0x%x 0x%x",
	      ga->qp_num, gb->qp_num);

	mad_to_qp1(&a, ga, &b, gb, 1, 1, "dpv0 GSI -> dpv1 QP 1");
	mad_to_qp1(&b, gb, &a, ga, 1, 2, "dpv1 GSI -> dpv0 QP 1");

	/* an ordinary UD QP reaches QP 1 too; the GSI QP sees its real QPN */
	a.qkey = QKEY_GSI;
	struct ibv_qp *u = dpvt_ud_qp(&a, 0, 1, 1); /* in RTS with a.qkey */
	CHECK(u != NULL, "an ordinary UD QP on dpv0: %s", strerror(errno));
	if (u) {
		mad_to_qp1(&a, u, &b, gb, u->qp_num, 3, "UD QP -> dpv1 QP 1");
		ibv_destroy_qp(u);
	}

	/* no GSI QP on dpv1: dropped; then a new one receives */
	CHECK(ibv_destroy_qp(gb) == 0, "destroy dpv1's GSI QP");
	struct ibv_ah *ah = dpvt_ah_new(a.pd, b.ctx, 1, 1);
	CHECK(ah && dpvt_post_ud_send(ga, ah, 1, QKEY_GSI, 11, a.mr, 4096, MAD_LEN, IBV_SEND_SIGNALED) == 0,
	      "send to a port without GSI QP");
	struct ibv_wc wc;
	CHECK(dpvt_poll_n(a.scq, &wc, 1, 3000) == 1, "its send completion");
	CHECK(dpvt_poll_quiet(b.rcq, 100) == 0, "nothing received on dpv1");
	if (ah)
		ibv_destroy_ah(ah);
	gb = gsi_new(&b);
	CHECK(gb != NULL, "a new GSI QP on dpv1: %s", strerror(errno));
	if (gb) {
		mad_to_qp1(&a, ga, &b, gb, 1, 4, "dpv0 GSI -> new dpv1 GSI");
		ibv_destroy_qp(gb);
	}
	ibv_destroy_qp(ga);
	dpvt_ep_close(&a);
	dpvt_ep_close(&b);
	return dpvt_finish();
}
