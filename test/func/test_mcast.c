/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Multicast (ibv_attach_mcast / ibv_detach_mcast) on the two net_ring ports
 * (black-box, libdpverbs.so; also run in shared mode under with_daemon.sh):
 *   - ibv_query_device reports max_mcast_grp 64, max_mcast_qp_attach 32 and
 *     their product as max_total_mcast_qp_attach;
 *   - UD QPs A and B on dpv0 and C on dpv1 attach to group 230.0.2.1
 *     (::ffff:230.0.2.1); a sender S on dpv0, attached to nothing, sends to
 *     the group (QP 0xFFFFFF): A and B get it through the port's own
 *     loopback, C from the wire; payload, source QP, and the GRH's IPv4
 *     header (destination 230.0.2.1) checked;
 *   - the group ff0e::6470:1 (IPv6) the same for A and C;
 *   - B detached: the next message reaches A and C, B gets nothing;
 *     attaching twice is not an error, detaching a group the QP is not in
 *     is EINVAL;
 *   - errors as Linux ib_attach_mcast: an RC QP, a unicast GID: EINVAL;
 *   - sends posted unsignaled and their AH destroyed at once (as mckey
 *     does) still arrive: an RNIC executes the doorbells rung before a
 *     later command (in shared mode the daemon runs them before the
 *     destroy);
 *   - A destroyed while attached: C still receives.
 * Prints "N passed, N failed".
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dpvt_check.h"
#include "dpvt_verbs.h"

#define QKEY 0x01234567u
#define LEN 300

static union ibv_gid g4, g6;

static struct ibv_ah *group_ah(struct ibv_pd *pd, const union ibv_gid *mgid, uint8_t sgid_index)
{
	struct ibv_ah_attr a = {.is_global = 1, .port_num = 1};
	a.grh.dgid = *mgid;
	a.grh.sgid_index = sgid_index;
	a.grh.hop_limit = 1;
	return ibv_create_ah(pd, &a);
}

/* One message from s to the group; each of to[] receives it (wr_id tag). */
static void send_to_group(struct dpvt_ep *s, struct ibv_ah *ah, struct dpvt_ep **to, int n, int tag,
			  bool v4, const char *what)
{
	for (int i = 0; i < n; i++) {
		memset(to[i]->buf, 0, 4096);
		CHECK_EQ(dpvt_ep_post_recv(to[i], (uint64_t)tag, 0, 4096), 0, "post_recv");
	}
	dpvt_pat_fill(s->buf + 8192, LEN, 7, (uint64_t)tag);
	CHECK_EQ(dpvt_post_ud_send(s->qp, ah, 0xffffff, QKEY, (uint64_t)tag, s->mr, 8192, LEN, IBV_SEND_SIGNALED),
		 0, "post the SEND to the group");
	struct ibv_wc wc;
	CHECK(dpvt_poll_n(s->scq, &wc, 1, 3000) == 1 && wc.status == IBV_WC_SUCCESS, "%s: sent", what);
	for (int i = 0; i < n; i++) {
		int got = dpvt_poll_n(to[i]->rcq, &wc, 1, 3000);
		CHECK(got == 1 && wc.status == IBV_WC_SUCCESS && wc.wr_id == (uint64_t)tag &&
			      wc.byte_len == 40 + LEN && wc.src_qp == s->qp->qp_num && (wc.wc_flags & IBV_WC_GRH),
		      "%s: receiver %d got it (n %d, status %d, %u bytes, src QP %u)", what, i, got, wc.status,
		      wc.byte_len, wc.src_qp);
		CHECK(dpvt_pat_check(to[i]->buf + 40, LEN, 7, (uint64_t)tag) < 0, "%s: receiver %d payload", what, i);
		if (v4)
			CHECK(!memcmp(to[i]->buf + 20 + 16, g4.raw + 12, 4), "%s: GRH destination 230.0.2.1", what);
		else
			CHECK(!memcmp(to[i]->buf + 24, g6.raw, 16), "%s: GRH destination ff0e::6470:1", what);
	}
}

static void errors(struct dpvt_ep *a, struct dpvt_ep *s)
{
	struct ibv_qp *rc = dpvt_ep_qp(s, IBV_QPT_RC, 4, 4, NULL);
	union ibv_gid uni;
	CHECK(rc != NULL, "an RC QP");
	if (rc) {
		CHECK_EQ(ibv_attach_mcast(rc, &g4, 0), EINVAL, "attach an RC QP: EINVAL");
		ibv_destroy_qp(rc);
	}
	CHECK_EQ(ibv_query_gid(a->ctx, 1, 1, &uni), 0, "dpv0's GID 1");
	CHECK_EQ(ibv_attach_mcast(a->qp, &uni, 0), EINVAL, "attach to a unicast GID: EINVAL");
	CHECK_EQ(ibv_detach_mcast(s->qp, &g4, 0), EINVAL, "detach from a group the QP is not in: EINVAL");
}

int main(void)
{
	struct dpvt_ep a = {0}, b = {0}, c = {0}, s = {0};
	inet_pton(AF_INET6, "::ffff:230.0.2.1", g4.raw);
	inet_pton(AF_INET6, "ff0e::6470:1", g6.raw);
	if (dpvt_ud_ep_open(&a, "dpv0", QKEY, false) || dpvt_ud_ep_open(&b, "dpv0", QKEY, false) ||
	    dpvt_ud_ep_open(&c, "dpv1", QKEY, false) || dpvt_ud_ep_open(&s, "dpv0", QKEY, false)) {
		CHECK(0, "four UD endpoints");
		return dpvt_finish();
	}
	struct ibv_device_attr da;
	CHECK(ibv_query_device(a.ctx, &da) == 0 && da.max_mcast_grp == 64 && da.max_mcast_qp_attach == 32 &&
		      da.max_total_mcast_qp_attach == 64 * 32,
	      "max_mcast_grp %d, max_mcast_qp_attach %d, max_total %d", da.max_mcast_grp, da.max_mcast_qp_attach,
	      da.max_total_mcast_qp_attach);
	CHECK_EQ(ibv_attach_mcast(a.qp, &g4, 0), 0, "A attaches to 230.0.2.1");
	CHECK_EQ(ibv_attach_mcast(b.qp, &g4, 0), 0, "B attaches");
	CHECK_EQ(ibv_attach_mcast(c.qp, &g4, 0), 0, "C (dpv1) attaches");
	CHECK_EQ(ibv_attach_mcast(a.qp, &g4, 0), 0, "A attaches again: not an error");
	struct ibv_ah *ah4 = group_ah(s.pd, &g4, 1), *ah6 = group_ah(s.pd, &g6, 0);
	CHECK(ah4 && ah6, "AHs to the groups (errno %d)", errno);
	if (!ah4 || !ah6)
		return dpvt_finish();
	struct dpvt_ep *abc[] = {&a, &b, &c}, *ac[] = {&a, &c}, *conly[] = {&c};
	send_to_group(&s, ah4, abc, 3, 1, true, "IPv4 group, A B C");
	send_to_group(&s, ah4, abc, 3, 2, true, "IPv4 group again");
	CHECK_EQ(ibv_attach_mcast(a.qp, &g6, 0), 0, "A attaches to ff0e::6470:1");
	CHECK_EQ(ibv_attach_mcast(c.qp, &g6, 0), 0, "C attaches to ff0e::6470:1");
	send_to_group(&s, ah6, ac, 2, 3, false, "IPv6 group, A C");
	CHECK_EQ(ibv_detach_mcast(b.qp, &g4, 0), 0, "B detaches");
	CHECK_EQ(dpvt_ep_post_recv(&b, 99, 0, 4096), 0, "B posts a receive");
	send_to_group(&s, ah4, ac, 2, 4, true, "after B left, A C");
	CHECK_EQ(dpvt_poll_quiet(b.rcq, 200), 0, "B gets nothing after leaving");
	CHECK_EQ(ibv_detach_mcast(b.qp, &g4, 0), EINVAL, "B detaches again: EINVAL");
	errors(&a, &s);
	/* three unsignaled sends, the AH destroyed right after posting */
	struct ibv_ah *tmp = group_ah(s.pd, &g4, 1);
	for (int i = 0; i < 3; i++)
		CHECK_EQ(dpvt_ep_post_recv(&c, (uint64_t)(10 + i), (size_t)i * 1024, 1024), 0, "C: post_recv");
	for (int i = 0; i < 3 && tmp; i++)
		CHECK_EQ(dpvt_post_ud_send(s.qp, tmp, 0xffffff, QKEY, (uint64_t)i, s.mr, 8192, LEN, 0), 0,
			 "unsignaled SEND to the group");
	CHECK(tmp && ibv_destroy_ah(tmp) == 0, "AH destroyed right after posting");
	struct ibv_wc w3[3];
	int n3 = dpvt_poll_n(c.rcq, w3, 3, 3000);
	CHECK(n3 == 3 && w3[0].status == IBV_WC_SUCCESS && w3[2].status == IBV_WC_SUCCESS,
	      "the three sends posted before ibv_destroy_ah arrived (%d)", n3);
	dpvt_ep_close(&a); /* destroyed while attached to both groups */
	send_to_group(&s, ah4, conly, 1, 5, true, "A destroyed while attached, C");
	ibv_destroy_ah(ah4);
	ibv_destroy_ah(ah6);
	dpvt_ep_close(&b);
	dpvt_ep_close(&c);
	dpvt_ep_close(&s);
	return dpvt_finish();
}
