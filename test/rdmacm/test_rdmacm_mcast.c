/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Multicast through the drop-in librdmacm (dpv_rdmacm_mcast.c) on the
 * default configuration (dpv0 192.0.2.1, dpv1 192.0.2.2), one process:
 *  - three RDMA_PS_UDP ids, A and S bound to 192.0.2.1 and C to 192.0.2.2,
 *    resolve the group 230.0.2.1 (ADDR_RESOLVED: a group is reachable from
 *    the bound port), make UD QPs; A and C join (A with
 *    rdma_join_multicast, C with rdma_join_multicast_ex FULLMEMBER), S
 *    joins SENDONLY_FULLMEMBER;
 *  - each gets MULTICAST_JOIN with param.ud as Linux fills it: the group's
 *    GID ::ffff:230.0.2.1, global, the id's source GID index, hop limit 64,
 *    qp_num 0xFFFFFF, qkey RDMA_UDP_QKEY, private_data = the join context;
 *  - S sends to the group with the event's AH (rdma_post_ud_send): A
 *    (dpv0, loopback) and C (dpv1, wire) receive the payload;
 *  - A leaves: C still receives, A does not; A leaves again: EADDRNOTAVAIL;
 *  - errors: a unicast address, join flags RESERVED, a join_ex without
 *    the address bit: EINVAL; a sync id (NULL channel) joins and returns
 *    with the event in id->event.
 * Every wait ends after 3 s. Prints "N passed, N failed".
 */
#include <arpa/inet.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include "dpv_rdmacm.h"
#include "dpvt_verbs.h"
#include "rdmacm_test.h"

#define LEN 200

struct node {
	struct rdma_cm_id *id;
	struct ibv_mr *mr;
	uint8_t buf[4096];
	struct ibv_ah *ah;
	uint32_t rqpn, rqkey;
};

static bool node_up(struct node *n, struct rdma_event_channel *ch, const char *src)
{
	struct sockaddr_in s = rt_sin4(src, 0), g = rt_sin4("230.0.2.1", 0);
	struct ibv_qp_init_attr qa = {.qp_type = IBV_QPT_UD,
				      .cap = {.max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1, .max_recv_sge = 1}};

	if (!CHECK(rdma_create_id(ch, &n->id, n, RDMA_PS_UDP) == 0, "%s: UDP id", src))
		return false;
	CHECK(rdma_bind_addr(n->id, (struct sockaddr *)&s) == 0, "%s: bind", src);
	CHECK(rdma_resolve_addr(n->id, (struct sockaddr *)&s, (struct sockaddr *)&g, 2000) == 0,
	      "%s: resolve the group: %s", src, strerror(errno));
	rt_ack_next(ch, RDMA_CM_EVENT_ADDR_RESOLVED);
	CHECK(rdma_create_qp(n->id, NULL, &qa) == 0, "%s: UD QP: %s", src, strerror(errno));
	n->mr = ibv_reg_mr(n->id->pd, n->buf, sizeof(n->buf), IBV_ACCESS_LOCAL_WRITE);
	return CHECK(n->id->qp != NULL && n->mr != NULL, "%s: QP and MR", src);
}

static void joined(struct node *n, struct rdma_event_channel *ch, void *ctx, int sgid_index, const char *who)
{
	struct rdma_cm_event *ev = rt_wait_event(ch, RDMA_CM_EVENT_MULTICAST_JOIN);
	union ibv_gid g;

	if (ev == NULL)
		return;
	inet_pton(AF_INET6, "::ffff:230.0.2.1", g.raw);
	const struct rdma_ud_param *u = &ev->param.ud;
	CHECK(ev->id == n->id && ev->status == 0 && u->private_data == ctx && u->qp_num == 0xffffff &&
		      u->qkey == RDMA_UDP_QKEY,
	      "%s: JOIN event: id, status %d, context, qp_num %#x, qkey %#x", who, ev->status, u->qp_num, u->qkey);
	CHECK(u->ah_attr.is_global && !memcmp(&u->ah_attr.grh.dgid, &g, 16) &&
		      u->ah_attr.grh.sgid_index == sgid_index && u->ah_attr.grh.hop_limit == 64 && u->ah_attr.port_num == 1,
	      "%s: JOIN ah_attr: the group, sgid_index %u, hop limit %u", who, u->ah_attr.grh.sgid_index,
	      u->ah_attr.grh.hop_limit);
	n->ah = ibv_create_ah(n->id->pd, (struct ibv_ah_attr *)&u->ah_attr);
	n->rqpn = u->qp_num;
	n->rqkey = u->qkey;
	CHECK(n->ah != NULL, "%s: AH from the event", who);
	rdma_ack_cm_event(ev);
}

static bool got(struct node *n, int seq)
{
	struct ibv_wc wc;

	if (dpvt_poll_n(n->id->recv_cq, &wc, 1, 3000) != 1)
		return false;
	return wc.status == IBV_WC_SUCCESS && wc.byte_len == 40 + LEN && dpvt_pat_check(n->buf + 40, LEN, 3, (uint64_t)seq) < 0;
}

static void send_seq(struct node *s, int seq)
{
	struct ibv_wc wc;

	dpvt_pat_fill(s->buf + 2048, LEN, 3, (uint64_t)seq);
	CHECK(rdma_post_ud_send(s->id, NULL, s->buf + 2048, LEN, s->mr, IBV_SEND_SIGNALED, s->ah, s->rqpn) == 0,
	      "post to the group");
	CHECK(dpvt_poll_n(s->id->send_cq, &wc, 1, 3000) == 1 && wc.status == IBV_WC_SUCCESS, "sent %d", seq);
}

static void errors(struct node *a)
{
	struct sockaddr_in uni = rt_sin4("192.0.2.9", 0), g = rt_sin4("230.0.2.7", 0);
	struct rdma_cm_join_mc_attr_ex x = {.comp_mask = RDMA_CM_JOIN_MC_ATTR_ADDRESS |
							  RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS,
					    .join_flags = RDMA_MC_JOIN_FLAG_RESERVED, .addr = (struct sockaddr *)&g};
	struct rdma_cm_id *sync = NULL;

	CHECK_RET_ERRNO(rdma_join_multicast(a->id, (struct sockaddr *)&uni, NULL), -1, EINVAL);
	CHECK_RET_ERRNO(rdma_join_multicast_ex(a->id, &x, NULL), -1, EINVAL);
	x.comp_mask = RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS;
	x.join_flags = RDMA_MC_JOIN_FLAG_FULLMEMBER;
	CHECK_RET_ERRNO(rdma_join_multicast_ex(a->id, &x, NULL), -1, EINVAL);
	/* a sync id: rdma_join_multicast returns with the event */
	struct sockaddr_in s = rt_sin4("192.0.2.1", 0);
	CHECK(rdma_create_id(NULL, &sync, NULL, RDMA_PS_UDP) == 0 && rdma_bind_addr(sync, (struct sockaddr *)&s) == 0,
	      "sync id bound");
	CHECK(rdma_join_multicast(sync, (struct sockaddr *)&g, &uni) == 0 && sync->event != NULL &&
		      sync->event->event == RDMA_CM_EVENT_MULTICAST_JOIN && sync->event->param.ud.private_data == &uni,
	      "sync id: joined, the event in id->event");
	CHECK(rdma_leave_multicast(sync, (struct sockaddr *)&g) == 0, "sync id leaves");
	rdma_destroy_id(sync);
}

int main(void)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct node *a = calloc(1, sizeof(*a)), *c = calloc(1, sizeof(*c)), *s = calloc(1, sizeof(*s));
	struct sockaddr_in g = rt_sin4("230.0.2.1", 0);
	int ctx_a, ctx_c, ctx_s;

	if (!ch || !a || !c || !s || !node_up(a, ch, "192.0.2.1") || !node_up(c, ch, "192.0.2.2") ||
	    !node_up(s, ch, "192.0.2.1"))
		return dpvt_finish();
	CHECK(rdma_join_multicast(a->id, (struct sockaddr *)&g, &ctx_a) == 0, "A joins: %s", strerror(errno));
	joined(a, ch, &ctx_a, 1, "A");
	struct rdma_cm_join_mc_attr_ex x = {.comp_mask = RDMA_CM_JOIN_MC_ATTR_ADDRESS | RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS,
					    .join_flags = RDMA_MC_JOIN_FLAG_FULLMEMBER, .addr = (struct sockaddr *)&g};
	CHECK(rdma_join_multicast_ex(c->id, &x, &ctx_c) == 0, "C joins (ex): %s", strerror(errno));
	joined(c, ch, &ctx_c, 1, "C");
	x.join_flags = RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER;
	CHECK(rdma_join_multicast_ex(s->id, &x, &ctx_s) == 0, "S joins send-only: %s", strerror(errno));
	joined(s, ch, &ctx_s, 1, "S");
	if (!s->ah)
		return dpvt_finish();
	for (int i = 1; i <= 3; i++) {
		CHECK(rdma_post_recv(a->id, NULL, a->buf, 1024, a->mr) == 0 &&
			      rdma_post_recv(c->id, NULL, c->buf, 1024, c->mr) == 0, "post receives");
		send_seq(s, i);
		CHECK(got(a, i), "A (dpv0) got message %d", i);
		CHECK(got(c, i), "C (dpv1) got message %d", i);
	}
	CHECK(rdma_leave_multicast(a->id, (struct sockaddr *)&g) == 0, "A leaves");
	CHECK_RET_ERRNO(rdma_leave_multicast(a->id, (struct sockaddr *)&g), -1, EADDRNOTAVAIL);
	CHECK(rdma_post_recv(a->id, NULL, a->buf, 1024, a->mr) == 0 &&
		      rdma_post_recv(c->id, NULL, c->buf, 1024, c->mr) == 0, "post receives");
	send_seq(s, 4);
	CHECK(got(c, 4), "C got message 4");
	CHECK(dpvt_poll_quiet(a->id->recv_cq, 200) == 0, "A, gone from the group, got nothing");
	errors(a);
	struct node *all[] = {a, c, s};
	for (int i = 0; i < 3; i++) {
		if (all[i]->ah)
			ibv_destroy_ah(all[i]->ah);
		ibv_dereg_mr(all[i]->mr);
		rdma_destroy_qp(all[i]->id);
		rdma_destroy_id(all[i]->id); /* C still in the group: destroy leaves it */
		free(all[i]);
	}
	rdma_destroy_event_channel(ch);
	return dpvt_finish();
}
