/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Raw packet QPs and steering rules (ibv_create_flow) on the two net_ring
 * ports (black-box, libdpverbs.so; also run in shared mode under
 * with_daemon.sh, where the rules live in dpverbsd's engine):
 *   - ibv_query_device reports max_raw_ethy_qp; RESET->INIT needs
 *     IBV_QP_PORT (EINVAL without), INIT->RTR->RTS with IBV_QP_STATE only;
 *     ibv_query_qp gives RTS and IBV_QPT_RAW_PACKET;
 *   - sender S and receiver R on dpv0 (two contexts), W on dpv1: a rule
 *     ETH(dst multicast, IPv4) + IPV4 + UDP(dst port) on R and on W; a
 *     frame S sends reaches R through the port's loopback and W over the
 *     wire, whole (byte_len = frame length, bytes equal, no GRH); a frame
 *     to another UDP port reaches neither;
 *   - priorities: a second rule of R2 at priority 0 takes the frame from R
 *     (priority 1), with its flow tag in an extended CQ
 *     (ibv_wc_read_flow_tag); destroyed, R gets it again; a DROP rule at
 *     priority 0 leaves nobody anything; an IPv6 + TCP rule;
 *   - copies: a DONT_TRAP rule of R2 at priority 0 and R's rule at priority 1
 *     both get the frame, and a SNIFFER on W (dpv1) a copy from the wire;
 *     MC_DEFAULT on W takes a multicast frame no NORMAL rule took; a raw QP
 *     on an SRQ receives through the SRQ;
 *   - RoCEv2 is never taken: a rule matching every IPv4 frame on dpv1, and
 *     UD traffic dpv0 -> dpv1 still arrives, W gets none of it;
 *   - ALL_DEFAULT on W: a unicast frame no NORMAL rule takes;
 *   - errors: flows on an RC QP (EINVAL) and a UD QP (EOPNOTSUPP), VXLAN,
 *     inner ETH and egress (EOPNOTSUPP: the port cannot), comp_mask, port
 *     2, a short spec, a 25-bit tag, a match spec on ALL_DEFAULT (EINVAL);
 *     ibv_destroy_qp with a flow (EBUSY); RDMA WRITE on a raw QP (EINVAL);
 *     a frame shorter than an Ethernet header (IBV_WC_LOC_LEN_ERR).
 * Prints "N passed, N failed".
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dpvt_check.h"
#include "dpvt_verbs.h"

#define FRAME 300
#define DPORT 5678
static const uint8_t MCAST_MAC[6] = {0x01, 0x50, 0x56, 0x19, 0x20, 0xa7};
static const uint8_t SRC_MAC[6] = {0x24, 0x8a, 0x07, 0xa5, 0x28, 0xc8};

/* Eth | IPv4 or IPv6 | UDP or TCP | pattern, len bytes, into buf. */
static uint32_t make_frame(uint8_t *buf, uint32_t len, const uint8_t dmac[6], int ipv, int proto, uint16_t dport,
			   uint8_t seed)
{
	memset(buf, 0, len);
	memcpy(buf, dmac, 6);
	memcpy(buf + 6, SRC_MAC, 6);
	uint8_t *ip = buf + 14;
	uint32_t l4;
	if (ipv == 4) {
		buf[12] = 0x08, buf[13] = 0x00;
		ip[0] = 0x45, ip[8] = 64, ip[9] = (uint8_t)proto;
		uint16_t tl = htons((uint16_t)(len - 14));
		memcpy(ip + 2, &tl, 2);
		inet_pton(AF_INET, "1.1.1.1", ip + 12);
		inet_pton(AF_INET, "2.2.2.2", ip + 16);
		l4 = 34;
	} else {
		buf[12] = 0x86, buf[13] = 0xdd;
		ip[0] = 0x60, ip[6] = (uint8_t)proto, ip[7] = 64;
		uint16_t pl = htons((uint16_t)(len - 54));
		memcpy(ip + 4, &pl, 2);
		inet_pton(AF_INET6, "a0a1::a2a3:a4a5:a6a7:a8a9", ip + 8);
		inet_pton(AF_INET6, "b0b1::b2b3:b4b5:b6b7:b8b9", ip + 24);
		l4 = 54;
	}
	uint16_t sp = htons(1234), dp = htons(dport);
	memcpy(buf + l4, &sp, 2);
	memcpy(buf + l4 + 2, &dp, 2);
	for (uint32_t i = l4 + 20; i < len; i++)
		buf[i] = (uint8_t)(seed + i);
	return len;
}

struct spec_buf {
	struct ibv_flow_attr attr;
	uint8_t specs[512];
};

static void *add_spec(struct spec_buf *b, size_t *off, const void *spec, size_t size)
{
	memcpy(b->specs + *off, spec, size);
	*off += size;
	b->attr.num_of_specs++;
	return b->specs + *off - size;
}

static void attr_init(struct spec_buf *b, uint16_t prio)
{
	memset(b, 0, sizeof(*b));
	b->attr.type = IBV_FLOW_ATTR_NORMAL;
	b->attr.size = sizeof(b->attr);
	b->attr.priority = prio;
	b->attr.port = 1;
}

/* ETH(dst MCAST_MAC, type) [+ IPv4 dst 2.2.2.2 + UDP dport] rule. */
static void rule_v4_udp(struct spec_buf *b, uint16_t prio, bool l3l4)
{
	size_t off = 0;
	attr_init(b, prio);
	struct ibv_flow_spec_eth eth = {.type = IBV_FLOW_SPEC_ETH, .size = sizeof(eth)};
	memcpy(eth.val.dst_mac, MCAST_MAC, 6);
	memset(eth.mask.dst_mac, 0xff, 6);
	eth.val.ether_type = htons(0x0800);
	eth.mask.ether_type = 0xffff;
	add_spec(b, &off, &eth, sizeof(eth));
	if (!l3l4)
		return;
	struct ibv_flow_spec_ipv4 ip = {.type = IBV_FLOW_SPEC_IPV4, .size = sizeof(ip)};
	inet_pton(AF_INET, "2.2.2.2", &ip.val.dst_ip);
	ip.mask.dst_ip = 0xffffffff;
	add_spec(b, &off, &ip, sizeof(ip));
	struct ibv_flow_spec_tcp_udp udp = {.type = IBV_FLOW_SPEC_UDP, .size = sizeof(udp)};
	udp.val.dst_port = htons(DPORT);
	udp.mask.dst_port = 0xffff;
	add_spec(b, &off, &udp, sizeof(udp));
}

/* A raw QP on e (its CQs, or cq for both) brought to RTS. */
static struct ibv_qp *raw_qp(struct dpvt_ep *e, struct ibv_cq *cq)
{
	struct ibv_qp_init_attr ia = {.send_cq = cq ? cq : e->scq, .recv_cq = cq ? cq : e->rcq,
				      .qp_type = IBV_QPT_RAW_PACKET,
				      .cap = {.max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 2, .max_recv_sge = 2}};
	struct ibv_qp *qp = ibv_create_qp(e->pd, &ia);
	if (!qp)
		return NULL;
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .port_num = 1};
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PORT) || dpvt_qp_set_state(qp, IBV_QPS_RTR) ||
	    dpvt_qp_set_state(qp, IBV_QPS_RTS)) {
		ibv_destroy_qp(qp);
		return NULL;
	}
	return qp;
}

static int send_frame(struct dpvt_ep *s, struct ibv_qp *qp, uint32_t len, uint64_t wr_id)
{
	return dpvt_post_wr(qp, IBV_WR_SEND, wr_id, s->buf, len, s->mr->lkey, 0, 0, 0, IBV_SEND_SIGNALED);
}

/* s sends its buffer's frame of len bytes: it completes; each of to[] gets it whole. */
static void frame_to(struct dpvt_ep *s, struct ibv_qp *sqp, uint32_t len, struct dpvt_ep **to, struct ibv_qp **tq,
		     int n, const char *what)
{
	struct ibv_wc wc;
	for (int i = 0; i < n; i++) {
		memset(to[i]->buf, 0, 4096);
		CHECK_EQ(dpvt_post_recv(tq[i], to[i]->mr, 7, 0, 4096), 0, "post_recv");
	}
	CHECK_EQ(send_frame(s, sqp, len, 1), 0, "post the frame");
	CHECK(dpvt_poll_n(s->scq, &wc, 1, 3000) == 1 && wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_SEND,
	      "%s: sent (status %d)", what, wc.status);
	for (int i = 0; i < n; i++) {
		int got = dpvt_poll_n(to[i]->rcq, &wc, 1, 3000);
		CHECK(got == 1 && wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RECV && wc.byte_len == len &&
			      !(wc.wc_flags & IBV_WC_GRH) && wc.qp_num == tq[i]->qp_num,
		      "%s: receiver %d got it whole (n %d, status %d, %u bytes)", what, i, got, wc.status,
		      wc.byte_len);
		CHECK(!memcmp(to[i]->buf, s->buf, len), "%s: receiver %d: the bytes sent", what, i);
	}
}

static void errors(struct dpvt_ep *r, struct ibv_qp *rq)
{
	struct spec_buf b;
	rule_v4_udp(&b, 0, true);
	struct ibv_qp *rc = dpvt_ep_qp(r, IBV_QPT_RC, 4, 4, NULL);
	CHECK_NULL_ERRNO(ibv_create_flow(rc, &b.attr), EINVAL);
	ibv_destroy_qp(rc);
	struct ibv_qp *ud = dpvt_ep_qp(r, IBV_QPT_UD, 4, 4, NULL);
	CHECK_NULL_ERRNO(ibv_create_flow(ud, &b.attr), EOPNOTSUPP);
	ibv_destroy_qp(ud);
	b.attr.flags = IBV_FLOW_ATTR_FLAGS_EGRESS;
	CHECK_NULL_ERRNO(ibv_create_flow(rq, &b.attr), EOPNOTSUPP);
	b.attr.flags = 0;
	b.attr.comp_mask = 1;
	CHECK_NULL_ERRNO(ibv_create_flow(rq, &b.attr), EINVAL);
	b.attr.comp_mask = 0;
	b.attr.port = 2;
	CHECK_NULL_ERRNO(ibv_create_flow(rq, &b.attr), EINVAL);
	size_t off = 0;
	attr_init(&b, 0);
	struct ibv_flow_spec_tunnel vx = {.type = IBV_FLOW_SPEC_VXLAN_TUNNEL, .size = sizeof(vx)};
	add_spec(&b, &off, &vx, sizeof(vx));
	CHECK_NULL_ERRNO(ibv_create_flow(rq, &b.attr), EOPNOTSUPP);
	off = 0;
	attr_init(&b, 0);
	struct ibv_flow_spec_eth inner = {.type = IBV_FLOW_SPEC_ETH | IBV_FLOW_SPEC_INNER, .size = sizeof(inner)};
	add_spec(&b, &off, &inner, sizeof(inner));
	CHECK_NULL_ERRNO(ibv_create_flow(rq, &b.attr), EOPNOTSUPP);
	off = 0;
	attr_init(&b, 0);
	struct ibv_flow_spec_eth shorty = {.type = IBV_FLOW_SPEC_ETH, .size = sizeof(shorty) - 4};
	add_spec(&b, &off, &shorty, sizeof(shorty));
	CHECK_NULL_ERRNO(ibv_create_flow(rq, &b.attr), EINVAL);
	off = 0;
	attr_init(&b, 0);
	struct ibv_flow_spec_action_tag tag = {.type = IBV_FLOW_SPEC_ACTION_TAG, .size = sizeof(tag),
					       .tag_id = 1u << 24};
	add_spec(&b, &off, &tag, sizeof(tag));
	CHECK_NULL_ERRNO(ibv_create_flow(rq, &b.attr), EINVAL);
	off = 0;
	attr_init(&b, 0);
	b.attr.type = IBV_FLOW_ATTR_ALL_DEFAULT;
	struct ibv_flow_spec_eth eth = {.type = IBV_FLOW_SPEC_ETH, .size = sizeof(eth)};
	add_spec(&b, &off, &eth, sizeof(eth));
	CHECK_NULL_ERRNO(ibv_create_flow(rq, &b.attr), EINVAL);
	/* RDMA WRITE on a raw QP; a frame shorter than an Ethernet header */
	CHECK_EQ(dpvt_post_wr(rq, IBV_WR_RDMA_WRITE, 1, r->buf, 64, r->mr->lkey, 0, 0, 0, IBV_SEND_SIGNALED), EINVAL,
		 "RDMA WRITE on a raw QP: EINVAL");
	struct ibv_wc wc;
	CHECK_EQ(send_frame(r, rq, 10, 9), 0, "post a 10-byte frame");
	CHECK(dpvt_poll_n(r->scq, &wc, 1, 3000) == 1 && wc.status == IBV_WC_LOC_LEN_ERR && wc.wr_id == 9,
	      "a 10-byte frame: IBV_WC_LOC_LEN_ERR (status %d)", wc.status);
}

/* Priorities, flow tag, DROP, IPv6+TCP. */
static void priorities(struct dpvt_ep *s, struct ibv_qp *sqp, struct dpvt_ep *r, struct ibv_qp *rq)
{
	struct ibv_cq_init_attr_ex cqa = {.cqe = 16, .wc_flags = IBV_WC_STANDARD_FLAGS | IBV_WC_EX_WITH_FLOW_TAG};
	struct ibv_cq_ex *cqx = ibv_create_cq_ex(r->ctx, &cqa);
	CHECK(cqx != NULL, "an extended CQ with flow tags (errno %d)", errno);
	if (!cqx)
		return;
	struct ibv_qp *r2 = raw_qp(r, ibv_cq_ex_to_cq(cqx));
	CHECK(r2 != NULL, "a second raw QP R2 on the extended CQ");
	struct spec_buf b;
	rule_v4_udp(&b, 0, true);
	size_t off = sizeof(struct ibv_flow_spec_eth) + sizeof(struct ibv_flow_spec_ipv4) +
		     sizeof(struct ibv_flow_spec_tcp_udp);
	struct ibv_flow_spec_action_tag tag = {.type = IBV_FLOW_SPEC_ACTION_TAG, .size = sizeof(tag), .tag_id = 0xabcde};
	add_spec(&b, &off, &tag, sizeof(tag));
	struct ibv_flow *f2 = ibv_create_flow(r2, &b.attr);
	CHECK(f2 != NULL, "R2's tagged rule at priority 0 (errno %d)", errno);
	CHECK_EQ(dpvt_post_recv(rq, r->mr, 5, 0, 4096), 0, "R posts a receive");
	CHECK_EQ(dpvt_post_recv(r2, r->mr, 6, 4096, 4096), 0, "R2 posts a receive");
	CHECK_EQ(send_frame(s, sqp, FRAME, 2), 0, "post");
	struct ibv_wc wc;
	dpvt_poll_n(s->scq, &wc, 1, 3000);
	struct ibv_poll_cq_attr pa = {0};
	int rc = ENOENT;
	for (int i = 0; i < 3000000 && rc == ENOENT; i++)
		rc = ibv_start_poll(cqx, &pa);
	CHECK(rc == 0 && cqx->status == IBV_WC_SUCCESS && cqx->wr_id == 6 && ibv_wc_read_byte_len(cqx) == FRAME &&
		      ibv_wc_read_flow_tag(cqx) == 0xabcde,
	      "R2 (priority 0) got the frame with flow tag 0xabcde (rc %d)", rc);
	if (rc == 0)
		ibv_end_poll(cqx);
	CHECK_EQ(dpvt_poll_quiet(r->rcq, 200), 0, "R (priority 1) got nothing");
	CHECK_EQ(ibv_destroy_qp(r2), EBUSY, "destroy a raw QP with a flow: EBUSY");
	CHECK_EQ(ibv_destroy_flow(f2), 0, "destroy R2's rule");
	struct dpvt_ep *to[] = {r};
	struct ibv_qp *tq[] = {rq};
	/* R's receive posted above is still there: it takes the next frame */
	CHECK_EQ(send_frame(s, sqp, FRAME, 3), 0, "post");
	dpvt_poll_n(s->scq, &wc, 1, 3000);
	CHECK(dpvt_poll_n(r->rcq, &wc, 1, 3000) == 1 && wc.wr_id == 5 && wc.byte_len == FRAME,
	      "R gets the frame again once R2's rule is gone");
	/* DROP at priority 0 */
	off = 0;
	attr_init(&b, 0);
	rule_v4_udp(&b, 0, false);
	off = sizeof(struct ibv_flow_spec_eth);
	struct ibv_flow_spec_action_drop dr = {.type = IBV_FLOW_SPEC_ACTION_DROP, .size = sizeof(dr)};
	add_spec(&b, &off, &dr, sizeof(dr));
	struct ibv_flow *fd = ibv_create_flow(r2, &b.attr);
	CHECK(fd != NULL, "a DROP rule at priority 0 (errno %d)", errno);
	CHECK_EQ(dpvt_post_recv(rq, r->mr, 8, 0, 4096), 0, "R posts a receive");
	CHECK_EQ(send_frame(s, sqp, FRAME, 4), 0, "post");
	dpvt_poll_n(s->scq, &wc, 1, 3000);
	CHECK_EQ(dpvt_poll_quiet(r->rcq, 200), 0, "DROP: R gets nothing");
	CHECK_EQ(ibv_destroy_flow(fd), 0, "destroy the DROP rule");
	frame_to(s, sqp, FRAME, to, tq, 1, "after the DROP rule"); /* R's posted receive and one more */
	dpvt_poll_n(r->rcq, &wc, 1, 1000);
	/* IPv6 + TCP */
	off = 0;
	attr_init(&b, 3);
	struct ibv_flow_spec_ipv6 ip6 = {.type = IBV_FLOW_SPEC_IPV6, .size = sizeof(ip6)};
	inet_pton(AF_INET6, "b0b1::b2b3:b4b5:b6b7:b8b9", ip6.val.dst_ip);
	memset(ip6.mask.dst_ip, 0xff, 16);
	add_spec(&b, &off, &ip6, sizeof(ip6));
	struct ibv_flow_spec_tcp_udp tcp = {.type = IBV_FLOW_SPEC_TCP, .size = sizeof(tcp)};
	tcp.val.dst_port = htons(DPORT);
	tcp.mask.dst_port = 0xffff;
	add_spec(&b, &off, &tcp, sizeof(tcp));
	struct ibv_flow *f6 = ibv_create_flow(r2, &b.attr);
	CHECK(f6 != NULL, "an IPv6 + TCP rule (errno %d)", errno);
	CHECK_EQ(dpvt_post_recv(r2, r->mr, 11, 4096, 4096), 0, "R2 posts a receive");
	make_frame(s->buf, FRAME, MCAST_MAC, 6, 6, DPORT, 9);
	CHECK_EQ(send_frame(s, sqp, FRAME, 5), 0, "post the IPv6 TCP frame");
	dpvt_poll_n(s->scq, &wc, 1, 3000);
	rc = ENOENT;
	for (int i = 0; i < 3000000 && rc == ENOENT; i++)
		rc = ibv_start_poll(cqx, &pa);
	CHECK(rc == 0 && cqx->wr_id == 11 && ibv_wc_read_flow_tag(cqx) == 0, "R2 got the IPv6 TCP frame, no tag");
	if (rc == 0)
		ibv_end_poll(cqx);
	CHECK(!memcmp(r->buf + 4096, s->buf, FRAME), "the IPv6 frame's bytes");
	CHECK_EQ(dpvt_poll_quiet(r->rcq, 100), 0, "R (IPv4 rule) got nothing of it");
	CHECK_EQ(ibv_destroy_flow(f6), 0, "destroy the IPv6 rule");
	CHECK_EQ(ibv_destroy_qp(r2), 0, "destroy R2");
	ibv_destroy_cq(ibv_cq_ex_to_cq(cqx));
	make_frame(s->buf, FRAME, MCAST_MAC, 4, 17, DPORT, 1);
}

/* One frame: each CQ of cqs[] gets one completion of it, the bytes at the
 * start of bufs[]. */
static void got_copy(struct dpvt_ep *s, struct ibv_qp *sqp, struct ibv_cq **cqs, uint8_t **bufs, int n,
		     const char *what)
{
	struct ibv_wc wc;
	CHECK_EQ(dpvt_post_wr(sqp, IBV_WR_SEND, 40, s->buf, FRAME, s->mr->lkey, 0, 0, 0, IBV_SEND_SIGNALED), 0, "post");
	dpvt_poll_n(s->scq, &wc, 1, 3000);
	for (int i = 0; i < n; i++)
		CHECK(dpvt_poll_n(cqs[i], &wc, 1, 3000) == 1 && wc.status == IBV_WC_SUCCESS && wc.byte_len == FRAME &&
			      !memcmp(bufs[i], s->buf, FRAME),
		      "%s: receiver %d got the frame", what, i);
}

/* DONT_TRAP and SNIFFER copies, MC_DEFAULT. */
static void copies(struct dpvt_ep *s, struct ibv_qp *sqp, struct dpvt_ep *r, struct ibv_qp *rq, struct dpvt_ep *w,
		   struct ibv_qp *wq)
{
	struct ibv_cq *cq2 = ibv_create_cq(r->ctx, 16, NULL, NULL, 0);
	struct ibv_qp *r2 = cq2 ? raw_qp(r, cq2) : NULL;
	CHECK(r2 != NULL, "R2 on a CQ of its own");
	if (!r2)
		return;
	dpvt_poll_quiet(r->rcq, 10);
	dpvt_poll_quiet(w->rcq, 10);
	struct spec_buf b;
	rule_v4_udp(&b, 0, false);
	b.attr.flags = IBV_FLOW_ATTR_FLAGS_DONT_TRAP;
	struct ibv_flow *fc = ibv_create_flow(r2, &b.attr);
	struct ibv_flow_attr sa = {.type = IBV_FLOW_ATTR_SNIFFER, .size = sizeof(sa), .port = 1};
	struct ibv_flow *fs = ibv_create_flow(wq, &sa);
	CHECK(fc && fs, "a DONT_TRAP rule of R2 at priority 0, a sniffer on W (errno %d)", errno);
	CHECK_EQ(dpvt_post_recv(rq, r->mr, 41, 0, 4096), 0, "R posts");
	CHECK_EQ(dpvt_post_recv(r2, r->mr, 42, 4096, 4096), 0, "R2 posts");
	CHECK_EQ(dpvt_post_recv(wq, w->mr, 43, 0, 4096), 0, "W posts");
	memset(r->buf, 0, 8192);
	memset(w->buf, 0, 4096);
	struct ibv_cq *cqs[] = {cq2, r->rcq, w->rcq};
	uint8_t *bufs[] = {r->buf + 4096, r->buf, w->buf};
	got_copy(s, sqp, cqs, bufs, 3, "DONT_TRAP (R2), then priority 1 (R), sniffer (W)");
	CHECK_EQ(ibv_destroy_flow(fs), 0, "destroy the sniffer");
	CHECK_EQ(ibv_destroy_flow(fc), 0, "destroy the DONT_TRAP rule");
	struct ibv_flow_attr ma = {.type = IBV_FLOW_ATTR_MC_DEFAULT, .size = sizeof(ma), .port = 1};
	struct ibv_flow *fm = ibv_create_flow(wq, &ma);
	CHECK(fm != NULL, "MC_DEFAULT on W (errno %d)", errno);
	CHECK_EQ(dpvt_post_recv(wq, w->mr, 44, 0, 4096), 0, "W posts");
	CHECK_EQ(dpvt_post_recv(rq, r->mr, 45, 0, 4096), 0, "R posts");
	memset(w->buf, 0, 4096);
	struct ibv_cq *cqw[] = {w->rcq, r->rcq};
	uint8_t *bufw[] = {w->buf, r->buf};
	got_copy(s, sqp, cqw, bufw, 2, "MC_DEFAULT (W, dpv1: no NORMAL rule there), R's rule on dpv0");
	CHECK_EQ(ibv_destroy_flow(fm), 0, "destroy MC_DEFAULT");
	CHECK_EQ(ibv_destroy_qp(r2), 0, "destroy R2");
	/* a raw QP on an SRQ */
	struct ibv_srq *srq = dpvt_srq_new(r->pd, 8);
	struct ibv_qp_init_attr ia = {.send_cq = cq2, .recv_cq = cq2, .srq = srq, .qp_type = IBV_QPT_RAW_PACKET,
				      .cap = {.max_send_wr = 1, .max_send_sge = 1}};
	struct ibv_qp *r3 = srq ? ibv_create_qp(r->pd, &ia) : NULL;
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .port_num = 1};
	CHECK(r3 && !ibv_modify_qp(r3, &a, IBV_QP_STATE | IBV_QP_PORT) && !dpvt_qp_set_state(r3, IBV_QPS_RTR),
	      "a raw QP on an SRQ, in RTR (errno %d)", errno);
	rule_v4_udp(&b, 0, false);
	b.attr.flags = IBV_FLOW_ATTR_FLAGS_DONT_TRAP;
	struct ibv_flow *f3 = r3 ? ibv_create_flow(r3, &b.attr) : NULL;
	CHECK(f3 != NULL, "its DONT_TRAP rule");
	CHECK_EQ(dpvt_post_srq_recv(srq, r->mr, 46, 4096, 4096), 0, "post to the SRQ");
	CHECK_EQ(dpvt_post_recv(rq, r->mr, 47, 0, 4096), 0, "R posts");
	memset(r->buf, 0, 8192);
	got_copy(s, sqp, cqs, bufs, 2, "through the SRQ (R3), and R");
	if (f3)
		ibv_destroy_flow(f3);
	if (r3)
		CHECK_EQ(ibv_destroy_qp(r3), 0, "destroy R3");
	if (srq)
		ibv_destroy_srq(srq);
	ibv_destroy_cq(cq2);
}

/* RoCEv2 stays the transport's; ALL_DEFAULT on W. */
static void roce_and_default(struct dpvt_ep *s, struct ibv_qp *sqp, struct dpvt_ep *w, struct ibv_qp *wq)
{
	struct spec_buf b;
	rule_v4_udp(&b, 0, false);
	struct ibv_flow_spec_eth *eth = (struct ibv_flow_spec_eth *)b.specs;
	memset(eth->mask.dst_mac, 0, 6); /* every IPv4 frame */
	struct ibv_flow *f = ibv_create_flow(wq, &b.attr);
	CHECK(f != NULL, "W: a rule on every IPv4 frame (errno %d)", errno);
	struct dpvt_ep u0 = {0}, u1 = {0};
	if (dpvt_ud_ep_open(&u0, "dpv0", 0x1234, false) == 0 && dpvt_ud_ep_open(&u1, "dpv1", 0x1234, false) == 0) {
		CHECK_EQ(dpvt_post_recv(wq, w->mr, 21, 0, 4096), 0, "W posts a receive");
		dpvt_ud_traffic(&u0, u0.pd, &u1, 0x1234, 20, 5, "UD dpv0 -> dpv1 beside a rule on all IPv4");
		CHECK_EQ(dpvt_poll_quiet(w->rcq, 100), 0, "W got no RoCEv2 frame");
	} else {
		CHECK(0, "two UD endpoints");
	}
	dpvt_ep_close(&u0);
	dpvt_ep_close(&u1);
	CHECK_EQ(ibv_destroy_flow(f), 0, "destroy W's IPv4 rule");
	struct ibv_flow_attr da = {.type = IBV_FLOW_ATTR_ALL_DEFAULT, .size = sizeof(da), .port = 1};
	struct ibv_flow *fd = ibv_create_flow(wq, &da);
	CHECK(fd != NULL, "W: ALL_DEFAULT (errno %d)", errno);
	static const uint8_t other[6] = {0x02, 0x11, 0x22, 0x33, 0x44, 0x55};
	make_frame(s->buf, FRAME, other, 4, 17, 9999, 3);
	struct ibv_wc wc;
	CHECK_EQ(send_frame(s, sqp, FRAME, 6), 0, "post a unicast frame for nobody");
	dpvt_poll_n(s->scq, &wc, 1, 3000);
	CHECK(dpvt_poll_n(w->rcq, &wc, 1, 3000) == 1 && wc.byte_len == FRAME &&
		      !memcmp(w->buf, s->buf, FRAME),
	      "W's ALL_DEFAULT got the unicast frame no rule took");
	CHECK_EQ(ibv_destroy_flow(fd), 0, "destroy ALL_DEFAULT");
	make_frame(s->buf, FRAME, MCAST_MAC, 4, 17, DPORT, 1);
}

int main(void)
{
	struct dpvt_ep s = {0}, r = {0}, w = {0};
	if (dpvt_ep_open(&s, "dpv0", 64, false) || dpvt_ep_buf(&s, s.pd, 8192, IBV_ACCESS_LOCAL_WRITE) ||
	    dpvt_ep_open(&r, "dpv0", 64, false) || dpvt_ep_buf(&r, r.pd, 8192, IBV_ACCESS_LOCAL_WRITE) ||
	    dpvt_ep_open(&w, "dpv1", 64, false) || dpvt_ep_buf(&w, w.pd, 8192, IBV_ACCESS_LOCAL_WRITE)) {
		CHECK(0, "three endpoints");
		return dpvt_finish();
	}
	struct ibv_device_attr da;
	CHECK(ibv_query_device(s.ctx, &da) == 0 && da.max_raw_ethy_qp == da.max_qp, "max_raw_ethy_qp %d",
	      da.max_raw_ethy_qp);
	struct ibv_qp_init_attr ia = {.send_cq = s.scq, .recv_cq = s.rcq, .qp_type = IBV_QPT_RAW_PACKET,
				      .cap = {.max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1}};
	struct ibv_qp *q = ibv_create_qp(s.pd, &ia);
	CHECK(q != NULL && q->state == IBV_QPS_RESET, "a raw packet QP in RESET (errno %d)", errno);
	if (q) {
		struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .port_num = 1};
		CHECK_EQ(ibv_modify_qp(q, &a, IBV_QP_STATE), EINVAL, "RESET->INIT without IBV_QP_PORT: EINVAL");
		ibv_destroy_qp(q);
	}
	struct ibv_qp *sq = raw_qp(&s, NULL), *rq = raw_qp(&r, NULL), *wq = raw_qp(&w, NULL);
	CHECK(sq && rq && wq, "three raw QPs in RTS (errno %d)", errno);
	if (!sq || !rq || !wq)
		return dpvt_finish();
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qia;
	CHECK(ibv_query_qp(rq, &qa, IBV_QP_STATE, &qia) == 0 && qa.qp_state == IBV_QPS_RTS &&
		      qia.qp_type == IBV_QPT_RAW_PACKET,
	      "ibv_query_qp: RTS, RAW_PACKET");
	struct spec_buf b;
	rule_v4_udp(&b, 1, true);
	struct ibv_flow *fr = ibv_create_flow(rq, &b.attr), *fw = ibv_create_flow(wq, &b.attr);
	CHECK(fr && fw, "ETH + IPV4 + UDP rules on R (dpv0) and W (dpv1) (errno %d)", errno);
	make_frame(s.buf, FRAME, MCAST_MAC, 4, 17, DPORT, 1);
	struct dpvt_ep *to[] = {&r, &w};
	struct ibv_qp *tq[] = {rq, wq};
	frame_to(&s, sq, FRAME, to, tq, 2, "matching frame, loopback and wire");
	frame_to(&s, sq, 1514, to, tq, 2, "a 1514-byte frame");
	make_frame(s.buf, FRAME, MCAST_MAC, 4, 17, DPORT, 1);
	frame_to(&s, sq, FRAME, to, tq, 2, "again");
	make_frame(s.buf, FRAME, MCAST_MAC, 4, 17, DPORT + 1, 2);
	struct ibv_wc wc;
	CHECK_EQ(dpvt_post_recv(rq, r.mr, 30, 0, 4096), 0, "R posts");
	CHECK_EQ(dpvt_post_recv(wq, w.mr, 31, 0, 4096), 0, "W posts");
	CHECK_EQ(send_frame(&s, sq, FRAME, 7), 0, "post a frame to another UDP port");
	dpvt_poll_n(s.scq, &wc, 1, 3000);
	CHECK_EQ(dpvt_poll_quiet(r.rcq, 200) + dpvt_poll_quiet(w.rcq, 100), 0, "another UDP port: nobody");
	make_frame(s.buf, FRAME, MCAST_MAC, 4, 17, DPORT, 1);
	CHECK_EQ(ibv_destroy_flow(fw), 0, "destroy W's rule");
	/* R has one receive posted (30): priorities() uses it first */
	dpvt_post_wr(sq, IBV_WR_SEND, 8, s.buf, FRAME, s.mr->lkey, 0, 0, 0, IBV_SEND_SIGNALED);
	dpvt_poll_n(s.scq, &wc, 1, 3000);
	CHECK(dpvt_poll_n(r.rcq, &wc, 1, 3000) == 1 && wc.wr_id == 30, "R takes its pending receive");
	priorities(&s, sq, &r, rq);
	copies(&s, sq, &r, rq, &w, wq);
	roce_and_default(&s, sq, &w, wq);
	errors(&r, rq);
	CHECK_EQ(ibv_destroy_flow(fr), 0, "destroy R's rule");
	CHECK_EQ(ibv_destroy_qp(sq), 0, "destroy S");
	CHECK_EQ(ibv_destroy_qp(rq), 0, "destroy R");
	CHECK_EQ(ibv_destroy_qp(wq), 0, "destroy W");
	dpvt_ep_close(&s);
	dpvt_ep_close(&r);
	dpvt_ep_close(&w);
	return dpvt_finish();
}
