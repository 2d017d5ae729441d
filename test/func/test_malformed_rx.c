/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * White-box receive-path test: frames built with lib/wire, broken in one way
 * each, are transmitted on dpv0's ethdev (dpv_port_tx_raw: the net_ring wire)
 * or enqueued into dpv1's software-loopback ring, addressed to a UD QP of
 * dpv1. Each must be dropped with exactly one increment of the right
 * per-reason counter in struct dpv_port_stats, and nothing delivered; good
 * frames are delivered. ARP and IPv6 neighbour solicitations for dpv1's
 * addresses get answers, captured raw on dpv0.
 */
#include <unistd.h>

#include "dpvt_verbs.h"
#include "dpvt_wire.h"

/* WHITE-BOX: internal headers and DPDK. The whole test works below the
 * verbs API (frames injected into the ports, per-reason drop counters, the
 * neighbour table); every such use is in this file. test/lib (dpvt_*.h)
 * uses only the public verbs API and lib/wire. */
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_ring.h>
#include <rte_spinlock.h>

#include "dpv_verbs.h"
#include "dpv_port.h"

#define QKEY 0x0badcafeu

static struct dpvt_ep E1;
static struct dpv_port *P0, *P1;
static struct ibv_qp *QP_NORECV, *QP_INIT;

static void base_build(struct dpv_pkt_build *b, int ipver)
{
	memset(b, 0, sizeof(*b));
	memcpy(b->src_mac, P0->mac, 6);
	memcpy(b->dst_mac, P1->mac, 6);
	b->ip_ver = (uint8_t)ipver;
	int gi = ipver == 4 ? 1 : 0;
	memcpy(b->sgid, P0->gids[gi].gid, 16);
	memcpy(b->dgid, P1->gids[gi].gid, 16);
	b->hop_limit = 64;
	b->udp_sport = 0xc123;
	b->opcode = DPV_TR_UD | DPV_OPC_SEND_ONLY;
	b->pkey = 0xffff;
	b->dqpn = E1.qp->qp_num;
	b->psn = 7;
	b->deth_qkey = QKEY;
	b->deth_sqpn = 0x123;
}

/* A frame of b with paylen payload bytes (i * 3 + 1) into f (2048 bytes). */
static uint32_t build(uint8_t *f, const struct dpv_pkt_build *b, uint32_t paylen)
{
	uint8_t pay[2048];

	for (uint32_t i = 0; i < paylen && i < sizeof(pay); i++)
		pay[i] = (uint8_t)(i * 3 + 1);
	return dpvt_frame_build(f, 2048, b, pay, paylen);
}

static struct rte_mbuf *to_mbuf(struct dpv_port *p, const uint8_t *f, uint32_t len)
{
	struct rte_mbuf *m = dpv_port_alloc_mbuf(p);
	if (!m)
		return NULL;
	uint8_t *d = (uint8_t *)rte_pktmbuf_append(m, (uint16_t)len);
	if (!d) {
		rte_pktmbuf_free(m);
		return NULL;
	}
	memcpy(d, f, len);
	return m;
}

struct snap {
	uint64_t drop[DPV_DROP_NR];
	uint64_t rx_pkts, rx_roce, arp_rx, arp_tx, nd_rx, nd_tx;
};

static void snap_take(struct dpv_port *p, struct snap *s)
{
	for (int i = 0; i < DPV_DROP_NR; i++)
		s->drop[i] = DPV_STAT_READ(p, drop[i]);
	s->rx_pkts = DPV_STAT_READ(p, rx_pkts);
	s->rx_roce = DPV_STAT_READ(p, rx_roce);
	s->arp_rx = DPV_STAT_READ(p, arp_rx);
	s->arp_tx = DPV_STAT_READ(p, arp_tx);
	s->nd_rx = DPV_STAT_READ(p, nd_rx);
	s->nd_tx = DPV_STAT_READ(p, nd_tx);
}

/* Wait until dpv1 has processed one more frame (drives progress too). */
static bool wait_rx(const struct snap *before)
{
	uint64_t end = dpvt_now_ms() + 2000;
	while (dpvt_now_ms() < end) {
		if (DPV_STAT_READ(P1, rx_pkts) > before->rx_pkts)
			return true;
		dpv_qctx_poll(&P1->qctx[0]);
		usleep(50);
	}
	return false;
}

enum via { WIRE, LOOP };

/* Inject one frame; expect exactly drop[why] + 1 (why < 0: delivered). */
static void inject(const char *what, const uint8_t *f, uint32_t len, int why, enum via via)
{
	struct snap a, b;
	snap_take(P1, &a);
	if (via == WIRE) {
		struct rte_mbuf *m = to_mbuf(P0, f, len);
		if (!m) {
			CHECK(0, "%s: mbuf", what);
			return;
		}
		dpv_port_tx_raw(&P0->qctx[0], m);
	} else {
		struct rte_mbuf *m = to_mbuf(P1, f, len);
		if (!m || rte_ring_mp_enqueue(P1->qctx[0].lo_ring, m) != 0) {
			CHECK(0, "%s: lo_ring enqueue", what);
			return;
		}
	}
	bool got = wait_rx(&a);
	CHECK(got, "%s: frame reached dpv1", what);
	struct ibv_wc wc;
	int n = ibv_poll_cq(E1.rcq, 1, &wc);
	snap_take(P1, &b);
	CHECK_EQ(b.rx_pkts, a.rx_pkts + 1, what);
	for (int i = 0; i < DPV_DROP_NR; i++) {
		uint64_t want = a.drop[i] + (i == why ? 1 : 0);
		CHECK(b.drop[i] == want, "%s: drop[%s] %llu -> %llu, expected %llu", what, dpv_drop_reason_names[i],
		      (unsigned long long)a.drop[i], (unsigned long long)b.drop[i], (unsigned long long)want);
	}
	if (why >= 0) {
		CHECK(n == 0, "%s: nothing delivered (got a completion)", what);
	} else {
		CHECK(n == 1 && wc.status == IBV_WC_SUCCESS, "%s: delivered (n %d)", what, n);
		if (n == 1) {
			CHECK_EQ(wc.src_qp, 0x123, "src_qp from DETH");
			CHECK(wc.wc_flags & IBV_WC_GRH, "%s: GRH flag", what);
		}
	}
}

static void test_drops(void)
{
	uint8_t f[2048], g[2048];
	struct dpv_pkt_build b;
	uint32_t len;
	uint8_t *bth;
	const uint32_t bth_off4 = 14 + 20 + 8;

	CHECK_EQ(dpvt_post_recv(E1.qp, E1.mr, 1, 0x1000, 2048), 0, "post_recv");

	/* a good frame first: the injection path itself works */
	base_build(&b, 4);
	len = build(f, &b, 32);
	inject("good IPv4 frame (wire)", f, len, -1, WIRE);
	dpvt_post_recv(E1.qp, E1.mr, 2, 0x1000, 2048);

	memcpy(g, f, len);
	g[len - 10] ^= 0x40; /* payload byte: ICRC no longer matches */
	inject("bad ICRC", g, len, DPV_DROP_BAD_ICRC, WIRE);

	memcpy(g, f, len);
	g[len - 1] ^= 1; /* the ICRC itself */
	inject("bad ICRC (ICRC byte)", g, len, DPV_DROP_BAD_ICRC, WIRE);

	memcpy(g, f, len);
	g[14 + 10] ^= 0x55; /* IPv4 header checksum */
	inject("bad IPv4 checksum", g, len, DPV_DROP_BAD_IP, WIRE);

	memcpy(g, f, len);
	g[14 + 6] |= 0x20; /* MF: fragments are never RoCEv2 */
	dpvt_ipv4_fix_cksum(g);
	inject("IPv4 fragment", g, len, DPV_DROP_BAD_IP, WIRE);

	inject("truncated frame", f, 14 + 20 + 8 + 6, DPV_DROP_SHORT, WIRE);
	inject("truncated to the Ethernet header", f, 14, DPV_DROP_SHORT, WIRE);

	memcpy(g, f, len);
	dpvt_put16(g + 14 + 20 + 4, (uint16_t)(dpvt_get16(g + 14 + 20 + 4) - 4)); /* UDP length */
	dpv_pkt_finish(g, len);
	inject("bad UDP length", g, len, DPV_DROP_BAD_UDP, WIRE);

	memcpy(g, f, len);
	dpvt_put16(g + 14 + 20 + 2, 4792); /* not RoCEv2 */
	inject("UDP port 4792", g, len, DPV_DROP_NOT_ROCE, WIRE);

	memcpy(g, f, len);
	bth = g + bth_off4;
	bth[0] = 0x15;
	dpv_pkt_finish(g, len);
	inject("opcode 0x15", g, len, DPV_DROP_BAD_OPCODE, WIRE);
	bth[0] = 0x7f;
	dpv_pkt_finish(g, len);
	inject("opcode 0x7f", g, len, DPV_DROP_BAD_OPCODE, WIRE);

	memcpy(g, f, len);
	bth = g + bth_off4;
	bth[1] = (uint8_t)((bth[1] & 0xf0) | 1); /* TVer 1 */
	dpv_pkt_finish(g, len);
	inject("TVer 1", g, len, DPV_DROP_BAD_TVER, WIRE);

	base_build(&b, 4);
	uint32_t l0 = build(g, &b, 0);
	g[bth_off4 + 1] |= 3 << 4; /* pad 3 with no payload */
	dpv_pkt_finish(g, l0);
	inject("pad count > payload", g, l0, DPV_DROP_BAD_PAD, WIRE);

	base_build(&b, 4);
	b.dgid[15] = 99; /* 192.0.2.99 */
	len = build(g, &b, 32);
	inject("wrong destination IP", g, len, DPV_DROP_NOT_FOR_US, WIRE);
	base_build(&b, 4);
	b.dst_mac[5] = 0x99;
	len = build(g, &b, 32);
	inject("wrong destination MAC", g, len, DPV_DROP_NOT_FOR_US, WIRE);

	base_build(&b, 4);
	b.dqpn = 0xfff0;
	len = build(g, &b, 32);
	inject("unknown QPN 0xfff0", g, len, DPV_DROP_NO_QP, WIRE);
	b.dqpn = 0xabcdef;
	len = build(g, &b, 32);
	inject("unknown QPN 0xabcdef", g, len, DPV_DROP_NO_QP, WIRE);

	base_build(&b, 4);
	b.deth_qkey = QKEY + 1;
	len = build(g, &b, 32);
	struct ibv_port_attr pa;
	ibv_query_port(E1.ctx, 1, &pa);
	uint32_t viol = pa.qkey_viol_cntr;
	inject("bad Q_Key", g, len, DPV_DROP_BAD_QKEY, WIRE);
	ibv_query_port(E1.ctx, 1, &pa);
	CHECK_EQ(pa.qkey_viol_cntr, viol + 1, "qkey_viol_cntr");

	base_build(&b, 4);
	b.pkey = 0x1234;
	len = build(g, &b, 32);
	uint32_t bp = pa.bad_pkey_cntr;
	inject("bad P_Key", g, len, DPV_DROP_BAD_PKEY, WIRE);
	ibv_query_port(E1.ctx, 1, &pa);
	CHECK_EQ(pa.bad_pkey_cntr, bp + 1, "bad_pkey_cntr");
	base_build(&b, 4);
	b.pkey = 0x7fff; /* limited member of the default partition: accepted */
	len = build(g, &b, 32);
	inject("P_Key 0x7fff (limited member)", g, len, -1, WIRE);
	dpvt_post_recv(E1.qp, E1.mr, 3, 0x1000, 2048);

	base_build(&b, 4);
	b.opcode = DPV_TR_RC | DPV_OPC_SEND_ONLY;
	len = build(g, &b, 32);
	inject("RC SEND_ONLY to a UD QP", g, len, DPV_DROP_BAD_TRANSPORT, WIRE);
	b.opcode = DPV_TR_UC | DPV_OPC_SEND_ONLY;
	len = build(g, &b, 32);
	inject("UC SEND_ONLY to a UD QP", g, len, DPV_DROP_BAD_TRANSPORT, WIRE);

	base_build(&b, 4);
	b.dqpn = QP_NORECV->qp_num;
	len = build(g, &b, 32);
	inject("no receive WQE", g, len, DPV_DROP_NO_RECV_WQE, WIRE);

	base_build(&b, 4);
	b.dqpn = QP_INIT->qp_num;
	len = build(g, &b, 32);
	inject("QP in INIT", g, len, DPV_DROP_QP_STATE, WIRE);

	/* IPv6 */
	base_build(&b, 6);
	len = build(f, &b, 13);
	memcpy(g, f, len);
	g[14] = 0x50; /* version 5 */
	dpv_pkt_finish(g, len);
	inject("IPv6 version nibble 5", g, len, DPV_DROP_BAD_IP, WIRE);
	memcpy(g, f, len);
	g[len - 6] ^= 1;
	inject("IPv6 bad ICRC", g, len, DPV_DROP_BAD_ICRC, WIRE);
	inject("good IPv6 frame (wire)", f, len, -1, WIRE);
	dpvt_post_recv(E1.qp, E1.mr, 4, 0x1000, 2048);

	/* software loopback input: the same checks apply, ARP is not handled there */
	base_build(&b, 4);
	len = build(f, &b, 100);
	memcpy(g, f, len);
	g[len - 3] ^= 0x10;
	inject("bad ICRC (loopback ring)", g, len, DPV_DROP_BAD_ICRC, LOOP);
	memcpy(g, f, len);
	g[14 + 10] ^= 1;
	inject("bad IPv4 checksum (loopback ring)", g, len, DPV_DROP_BAD_IP, LOOP);
	inject("good frame (loopback ring)", f, len, -1, LOOP);
	dpvt_post_recv(E1.qp, E1.mr, 5, 0x1000, 2048);

	/* finally the good frame is still delivered over the wire */
	base_build(&b, 4);
	len = build(f, &b, 1024);
	inject("good 1024-byte frame (wire)", f, len, -1, WIRE);
	struct ibv_wc wc;
	CHECK_EQ(ibv_poll_cq(E1.rcq, 1, &wc), 0, "no stray completions");
}

/* Take dpv0's RX for ourselves and read what dpv1 answered. */
static int capture_p0(struct rte_mbuf **pkts, int max, unsigned int ms)
{
	int n = 0;
	uint64_t end = dpvt_now_ms() + ms;
	while (n == 0 && dpvt_now_ms() < end) {
		dpv_qctx_poll(&P1->qctx[0]);
		n = rte_eth_rx_burst(P0->eth_port, 0, pkts, (uint16_t)max);
		if (!n)
			usleep(100);
	}
	return n;
}

static void test_neigh(void)
{
	static const uint8_t sha[6] = {0x02, 0, 0, 0, 0, 0x77};
	static const uint8_t spa[4] = {192, 0, 2, 77};
	static const uint8_t tpa[4] = {192, 0, 2, 2};
	static const uint8_t other[4] = {192, 0, 2, 200};
	uint8_t f[128];
	struct rte_mbuf *pk[8];
	struct snap a, b;

	rte_spinlock_lock(&P0->qctx[0].rx_lock); /* keep the engine off dpv0's RX */
	/* drain anything pending on dpv0 */
	for (int k; (k = rte_eth_rx_burst(P0->eth_port, 0, pk, 8)) > 0;)
		for (int i = 0; i < k; i++)
			rte_pktmbuf_free(pk[i]);
	snap_take(P1, &a);
	dpvt_arp_frame(f, 1, sha, spa, tpa);
	dpv_port_tx_raw(&P0->qctx[0], to_mbuf(P0, f, 60));
	int n = capture_p0(pk, 8, 2000);
	snap_take(P1, &b);
	CHECK_EQ(b.arp_rx, a.arp_rx + 1, "dpv1 arp_rx");
	CHECK_EQ(b.arp_tx, a.arp_tx + 1, "dpv1 arp_tx (reply)");
	CHECK_EQ(n, 1, "one ARP reply captured on dpv0");
	if (n >= 1) {
		const uint8_t *r = rte_pktmbuf_mtod(pk[0], const uint8_t *);
		const uint8_t *ar = r + 14;
		CHECK(rte_pktmbuf_data_len(pk[0]) >= 42, "ARP reply length");
		CHECK(!memcmp(r, sha, 6) && !memcmp(r + 6, P1->mac, 6), "ARP reply Ethernet addresses");
		CHECK_EQ(dpvt_get16(r + 12), 0x0806, "ethertype ARP");
		CHECK_EQ(dpvt_get16(ar + 6), 2, "ARP op reply");
		CHECK(!memcmp(ar + 8, P1->mac, 6) && !memcmp(ar + 14, tpa, 4), "ARP sender = dpv1");
		CHECK(!memcmp(ar + 18, sha, 6) && !memcmp(ar + 24, spa, 4), "ARP target = requester");
	}
	for (int i = 0; i < n; i++)
		rte_pktmbuf_free(pk[i]);
	/* the requester was learned */
	bool learned = false;
	rte_spinlock_lock(&P1->neigh_lock);
	for (int i = 0; i < DPV_NEIGH_MAX; i++)
		if (P1->neigh[i].state == DPV_NEIGH_REACHABLE && !memcmp(P1->neigh[i].ip + 12, spa, 4) &&
		    !memcmp(P1->neigh[i].mac, sha, 6))
			learned = true;
	rte_spinlock_unlock(&P1->neigh_lock);
	CHECK(learned, "dpv1 learned 192.0.2.77 from the request");

	/* a request for another address: no reply */
	snap_take(P1, &a);
	dpvt_arp_frame(f, 1, sha, spa, other);
	dpv_port_tx_raw(&P0->qctx[0], to_mbuf(P0, f, 60));
	n = capture_p0(pk, 8, 200);
	snap_take(P1, &b);
	CHECK_EQ(b.arp_rx, a.arp_rx + 1, "dpv1 arp_rx (foreign request)");
	CHECK_EQ(b.arp_tx, a.arp_tx, "no reply to a foreign request");
	CHECK_EQ(n, 0, "nothing captured");
	for (int i = 0; i < n; i++)
		rte_pktmbuf_free(pk[i]);

	/* a truncated ARP: counted as short */
	snap_take(P1, &a);
	dpvt_arp_frame(f, 1, sha, spa, tpa);
	dpv_port_tx_raw(&P0->qctx[0], to_mbuf(P0, f, 30));
	n = capture_p0(pk, 8, 200);
	snap_take(P1, &b);
	CHECK_EQ(b.drop[DPV_DROP_SHORT], a.drop[DPV_DROP_SHORT] + 1, "truncated ARP: short");
	CHECK_EQ(b.arp_tx, a.arp_tx, "truncated ARP: no reply");
	for (int i = 0; i < n; i++)
		rte_pktmbuf_free(pk[i]);

	/* ARP arriving through the loopback ring is not ARP-handled */
	snap_take(P1, &a);
	dpvt_arp_frame(f, 1, sha, spa, tpa);
	struct rte_mbuf *m = to_mbuf(P1, f, 60);
	rte_ring_mp_enqueue(P1->qctx[0].lo_ring, m);
	wait_rx(&a);
	snap_take(P1, &b);
	CHECK_EQ(b.arp_rx, a.arp_rx, "ARP via lo_ring: not seen by the ARP layer");
	CHECK_EQ(b.drop[DPV_DROP_NOT_ROCE], a.drop[DPV_DROP_NOT_ROCE] + 1, "ARP via lo_ring: dropped as not RoCE");

	/* IPv6 neighbour solicitation for dpv1's link-local GID */
	const uint8_t *tgt = P1->gids[0].gid;
	uint8_t src6[16] = {0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x77};
	dpvt_ns_frame(f, sha, src6, tgt);
	uint8_t *ic = f + 54;
	snap_take(P1, &a);
	dpv_port_tx_raw(&P0->qctx[0], to_mbuf(P0, f, 86));
	n = capture_p0(pk, 8, 2000);
	snap_take(P1, &b);
	CHECK_EQ(b.nd_rx, a.nd_rx + 1, "dpv1 nd_rx");
	CHECK_EQ(b.nd_tx, a.nd_tx + 1, "dpv1 nd_tx (advertisement)");
	CHECK_EQ(n, 1, "one NA captured on dpv0");
	if (n >= 1) {
		const uint8_t *r = rte_pktmbuf_mtod(pk[0], const uint8_t *);
		const uint8_t *rip = r + 14, *ric = r + 54;
		CHECK(!memcmp(r, sha, 6) && dpvt_get16(r + 12) == 0x86dd, "NA Ethernet header");
		CHECK(rip[6] == 58 && rip[7] == 255, "NA: ICMPv6, hop limit 255");
		CHECK(!memcmp(rip + 24, src6, 16) && !memcmp(rip + 8, tgt, 16), "NA addresses");
		CHECK(ric[0] == 136 && (ric[4] & 0x40), "NA type 136, solicited");
		CHECK(!memcmp(ric + 8, tgt, 16), "NA target");
		CHECK(ric[24] == 2 && !memcmp(ric + 26, P1->mac, 6), "NA target link-layer option");
		CHECK_EQ(dpvt_icmp6_csum(rip, ric, dpvt_get16(rip + 4)), 0, "NA ICMPv6 checksum");
	}
	for (int i = 0; i < n; i++)
		rte_pktmbuf_free(pk[i]);
	/* NS with a bad checksum: dropped as bad IP */
	dpvt_put16(ic + 2, (uint16_t)(dpvt_get16(ic + 2) ^ 0x100));
	snap_take(P1, &a);
	dpv_port_tx_raw(&P0->qctx[0], to_mbuf(P0, f, 86));
	n = capture_p0(pk, 8, 200);
	snap_take(P1, &b);
	CHECK_EQ(b.drop[DPV_DROP_BAD_IP], a.drop[DPV_DROP_BAD_IP] + 1, "NS bad checksum: bad_ip");
	CHECK_EQ(b.nd_tx, a.nd_tx, "NS bad checksum: no answer");
	for (int i = 0; i < n; i++)
		rte_pktmbuf_free(pk[i]);
	rte_spinlock_unlock(&P0->qctx[0].rx_lock);
}

int main(void)
{
	if (dpvt_ud_ep_open(&E1, "dpv1", QKEY, false)) {
		printf("0 passed, 1 failed\n");
		return 1;
	}
	P0 = dpv_port_by_name("dpv0");
	P1 = dpv_port_by_name("dpv1");
	QP_NORECV = dpvt_ud_qp(&E1, 0, 1, 1);
	struct ibv_qp_init_attr ia = {.send_cq = E1.scq, .recv_cq = E1.rcq, .qp_type = IBV_QPT_UD,
				      .cap = {.max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1}};
	QP_INIT = ibv_create_qp(E1.pd, &ia);
	struct dpvt_conn o = dpvt_conn_default();
	o.qkey = QKEY;
	if (!P0 || !P1 || !QP_NORECV || !QP_INIT || dpvt_qp_to_init(QP_INIT, &o)) {
		printf("0 passed, 1 failed\n");
		return 1;
	}
	dpvt_post_recv(QP_INIT, E1.mr, 99, 0x4000, 2048); /* posted, but INIT does not receive */
	test_drops();
	test_neigh();
	ibv_destroy_qp(QP_NORECV);
	ibv_destroy_qp(QP_INIT);
	dpvt_ep_close(&E1);
	return dpvt_finish();
}
