/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One side of raw Ethernet traffic between two processes (raw_memif.sh):
 *   raw_peer recv N   a raw packet QP on dpv0 with a rule on the
 *                     destination MAC 02:00:5e:10:00:01 and EtherType
 *                     0x88b5; prints "ready", then waits (15 s at most) for
 *                     N frames and checks each one whole (length, pattern)
 *   raw_peer send N   a raw packet QP on dpv0 that sends 3 N such frames,
 *                     one every 2 ms (the receiver may start its rule a
 *                     little after the link comes up)
 * Exits 0 when the check passes (prints "N passed, N failed").
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dpvt_check.h"
#include "dpvt_verbs.h"

#define FRAME 600
static const uint8_t MAC[6] = {0x02, 0x00, 0x5e, 0x10, 0x00, 0x01};

static void frame(uint8_t *f, uint32_t seq)
{
	memcpy(f, MAC, 6);
	memset(f + 6, 0x22, 6);
	f[12] = 0x88, f[13] = 0xb5;
	memcpy(f + 14, &seq, 4);
	for (int i = 18; i < FRAME; i++)
		f[i] = (uint8_t)(seq * 13 + (uint32_t)i);
}

static struct ibv_qp *raw_qp(struct dpvt_ep *e, int recv)
{
	struct ibv_qp_init_attr ia = {.send_cq = e->scq, .recv_cq = e->rcq, .qp_type = IBV_QPT_RAW_PACKET,
				      .cap = {.max_send_wr = 64, .max_recv_wr = (uint32_t)recv + 1, .max_send_sge = 1,
					      .max_recv_sge = 1}};
	struct ibv_qp *qp = ibv_create_qp(e->pd, &ia);
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .port_num = 1};
	if (!qp || ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PORT) || dpvt_qp_set_state(qp, IBV_QPS_RTR) ||
	    dpvt_qp_set_state(qp, IBV_QPS_RTS))
		return NULL;
	return qp;
}

int main(int argc, char **argv)
{
	int n = argc == 3 ? atoi(argv[2]) : 0;
	bool recv = argc == 3 && !strcmp(argv[1], "recv");
	if (n <= 0 || n > 1000 || (!recv && strcmp(argv[1], "send"))) {
		fprintf(stderr, "usage: raw_peer recv|send N\n");
		return 2;
	}
	struct dpvt_ep e = {0};
	if (dpvt_ep_open(&e, "dpv0", 4 * n + 16, false) ||
	    dpvt_ep_buf(&e, e.pd, (size_t)(n + 1) * 1024, IBV_ACCESS_LOCAL_WRITE)) {
		CHECK(0, "dpv0");
		return dpvt_finish();
	}
	struct ibv_qp *qp = raw_qp(&e, recv ? n : 0);
	CHECK(qp != NULL, "a raw packet QP (errno %d)", errno);
	if (!qp)
		return dpvt_finish();
	struct ibv_wc wc;
	if (recv) {
		struct {
			struct ibv_flow_attr a;
			struct ibv_flow_spec_eth e;
		} fa = {.a = {.type = IBV_FLOW_ATTR_NORMAL, .size = sizeof(fa), .num_of_specs = 1, .port = 1},
			.e = {.type = IBV_FLOW_SPEC_ETH, .size = sizeof(fa.e), .val.ether_type = htobe16(0x88b5),
			      .mask.ether_type = 0xffff}};
		memcpy(fa.e.val.dst_mac, MAC, 6);
		memset(fa.e.mask.dst_mac, 0xff, 6);
		struct ibv_flow *f = ibv_create_flow(qp, &fa.a);
		CHECK(f != NULL, "the rule (errno %d)", errno);
		for (int i = 0; i < n; i++)
			CHECK_EQ(dpvt_post_recv(qp, e.mr, (uint64_t)i, (size_t)i * 1024, 1024), 0, "post");
		printf("ready\n");
		fflush(stdout);
		int ok = 0, bad = 0;
		for (int i = 0; i < n; i++) {
			if (dpvt_poll_n(e.rcq, &wc, 1, 15000) != 1)
				break;
			uint8_t want[FRAME], *got = e.buf + wc.wr_id * 1024;
			uint32_t seq;
			memcpy(&seq, got + 14, 4);
			frame(want, seq);
			if (wc.status == IBV_WC_SUCCESS && wc.byte_len == FRAME && !memcmp(got, want, FRAME))
				ok++;
			else
				bad++;
		}
		CHECK(ok == n && bad == 0, "%d of %d frames from the other process whole (%d bad)", ok, n, bad);
		if (f)
			ibv_destroy_flow(f);
	} else {
		struct timespec ts = {0, 2000000};
		int sent = 0;
		for (int i = 0; i < 3 * n; i++) {
			frame(e.buf, (uint32_t)i);
			if (dpvt_post_wr(qp, IBV_WR_SEND, (uint64_t)i, e.buf, FRAME, e.mr->lkey, 0, 0, 0,
					 IBV_SEND_SIGNALED) == 0 &&
			    dpvt_poll_n(e.scq, &wc, 1, 3000) == 1 && wc.status == IBV_WC_SUCCESS)
				sent++;
			nanosleep(&ts, NULL);
		}
		CHECK(sent == 3 * n, "%d of %d frames sent", sent, 3 * n);
	}
	ibv_destroy_qp(qp);
	dpvt_ep_close(&e);
	return dpvt_finish();
}
