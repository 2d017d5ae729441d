/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Malformed frames: each defect gives exactly one dpv_parse_err, and no
 * truncation crashes (run under ASan/UBSan in CI). Frames are made with the
 * builder, so the test also shows that everything it builds parses back.
 */
#include <string.h>

#include "dpv_wire.h"
#include "dpvt_wire.h"

static void base_build(struct dpv_pkt_build *b, uint8_t ip_ver, uint8_t opcode)
{
	static const uint8_t a4[16] = { [10] = 0xff, [11] = 0xff, 10, 77, 0, 3 };
	static const uint8_t b4[16] = { [10] = 0xff, [11] = 0xff, 10, 77, 0, 2 };
	static const uint8_t a6[16] = { 0xfe, 0x80, [8] = 0x50, 0x54, 0, 0xff, 0xfe, 0x77, 0, 3 };
	static const uint8_t b6[16] = { 0xfe, 0x80, [8] = 0x50, 0x54, 0, 0xff, 0xfe, 0x77, 0, 2 };

	memset(b, 0, sizeof(*b));
	memcpy(b->dst_mac, "\x52\x54\x00\x77\x00\x02", 6);
	memcpy(b->src_mac, "\x52\x54\x00\x77\x00\x03", 6);
	b->ip_ver = ip_ver;
	memcpy(b->sgid, ip_ver == 4 ? a4 : a6, 16);
	memcpy(b->dgid, ip_ver == 4 ? b4 : b6, 16);
	b->hop_limit = 64;
	b->ip_id = 0x1234;
	b->udp_sport = 0xc123;
	b->opcode = opcode;
	b->pkey = 0xffff;
	b->dqpn = 0x12;
	b->psn = 0xabcdef;
	b->ackreq = true;
	b->reth_va = 0x1122334455667788ull;
	b->reth_rkey = 0x1000;
	b->reth_len = 13;
	b->immdt = 0xdeadbeef;
	b->deth_qkey = 0x11111111;
	b->deth_sqpn = 0x13;
}

/* build a frame of paylen bytes (payload 0x5a), return its length */
static uint32_t make(uint8_t *buf, size_t cap, uint8_t ip_ver, uint8_t opcode, uint32_t paylen)
{
	struct dpv_pkt_build b;
	uint8_t pay[512];

	if (paylen > sizeof(pay))
		return 0;
	base_build(&b, ip_ver, opcode);
	memset(pay, 0x5a, paylen);
	return dpvt_frame_build(buf, cap, &b, pay, paylen);
}

static void fix_ip4(uint8_t *f)
{
	dpvt_ipv4_fix_cksum(f);
}

static void refinish(uint8_t *f, uint32_t len)
{
	/* recompute the ICRC (dpv_pkt_finish also zeroes the pad) */
	dpv_pkt_finish(f, len);
}

#define EXPECT(f, len, want, what)                                             \
	do {                                                                   \
		struct dpv_pkt_info pi_;                                       \
		int r_ = dpv_pkt_parse_check((f), (len), &pi_);               \
		CHECK(r_ == (want), "%s: got %d (%s), want %d (%s)", (what), r_, \
		      dpv_parse_err_str(r_), (want), dpv_parse_err_str(want)); \
	} while (0)

static void test_truncation(uint8_t ip_ver, uint8_t opcode, uint32_t paylen)
{
	uint8_t full[2048];
	uint32_t len = make(full, sizeof(full), ip_ver, opcode, paylen);
	int bad = 0;

	EXPECT(full, len, DPV_PARSE_OK, "full frame");
	for (uint32_t l = 0; l < len; l++) {
		/* a heap copy of exactly l bytes so ASan sees any overread */
		uint8_t *c = malloc(l ? l : 1);
		struct dpv_pkt_info pi;
		/* every cut lands inside the Ethernet header or before the end of
		 * the IP packet: always SHORT, never NOT_ROCE or a length error */
		int r, want = DPV_PARSE_SHORT;

		memcpy(c, full, l);
		r = dpv_pkt_parse_check(c, l, &pi);
		if (r != want) {
			if (bad++ < 5)
				CHECK(r == want, "v%u op 0x%02x cut at %u/%u: %d (%s)", ip_ver,
				      opcode, l, len, r, dpv_parse_err_str(r));
		}
		r = dpv_pkt_parse(c, l, &pi);
		if (r != want && bad++ < 5)
			CHECK(r == want, "parse() cut at %u: %d", l, r);
		free(c);
	}
	CHECK(bad == 0, "v%u op 0x%02x: %d truncations with a wrong result", ip_ver, opcode, bad);

	/* Ethernet padding after the IP packet is ignored */
	{
		uint8_t *c = calloc(1, len + 20);
		struct dpv_pkt_info pi;

		memcpy(c, full, len);
		CHECK(dpv_pkt_parse_check(c, len + 20, &pi) == 0 && pi.frame_len == len,
		      "trailer ignored");
		free(c);
	}
}

static void test_l2_l3(void)
{
	uint8_t f[256], g[256];
	uint32_t len = make(f, sizeof(f), 4, DPV_OPC_SEND_ONLY, 16), len6;
	struct dpv_pkt_info pi;

	/* not IP: ARP */
	memcpy(g, f, len);
	g[12] = 0x08;
	g[13] = 0x06;
	EXPECT(g, len, DPV_PARSE_NOT_ROCE, "ARP ethertype");
	/* VLAN tagged: accepted, TCI reported */
	memcpy(g, f, 12);
	g[12] = 0x81;
	g[13] = 0x00;
	g[14] = 0x20;
	g[15] = 0x05;
	memcpy(g + 16, f + 12, len - 12);
	CHECK(dpv_pkt_parse_check(g, len + 4, &pi) == 0 && pi.vlan && pi.vlan_tci == 0x2005 &&
		      pi.l3_off == 18 && pi.payload_len == 16,
	      "VLAN frame");
	/* QinQ is not supported */
	g[16] = 0x81;
	g[17] = 0x00;
	EXPECT(g, len + 4, DPV_PARSE_NOT_ROCE, "double VLAN tag");

	/* IPv4 */
	memcpy(g, f, len);
	g[24] ^= 0x01;
	EXPECT(g, len, DPV_PARSE_BAD_IP, "bad IPv4 checksum");
	memcpy(g, f, len);
	g[14] = 0x65; /* version 6 in an IPv4 ethertype */
	fix_ip4(g);
	EXPECT(g, len, DPV_PARSE_BAD_IP, "bad IP version");
	memcpy(g, f, len);
	g[14] = 0x44; /* IHL 4 */
	fix_ip4(g);
	EXPECT(g, len, DPV_PARSE_BAD_IP, "IHL < 5");
	memcpy(g, f, len);
	g[20] = 0x20; /* MF */
	fix_ip4(g);
	EXPECT(g, len, DPV_PARSE_BAD_IP, "IPv4 fragment (MF)");
	memcpy(g, f, len);
	g[20] = 0x40;
	g[21] = 0x10; /* fragment offset */
	fix_ip4(g);
	EXPECT(g, len, DPV_PARSE_BAD_IP, "IPv4 fragment offset");
	memcpy(g, f, len);
	g[23] = 6; /* TCP */
	fix_ip4(g);
	EXPECT(g, len, DPV_PARSE_NOT_ROCE, "TCP");
	memcpy(g, f, len);
	g[16] = 0;
	g[17] = 10; /* total length < IHL */
	fix_ip4(g);
	EXPECT(g, len, DPV_PARSE_BAD_IP, "total length < header");
	memcpy(g, f, len);
	g[17] += 4; /* total length beyond the frame */
	fix_ip4(g);
	EXPECT(g, len, DPV_PARSE_SHORT, "total length > frame");
	memcpy(g, f, len);
	g[17] -= 4; /* total length shorter than UDP length */
	fix_ip4(g);
	EXPECT(g, len, DPV_PARSE_BAD_UDP, "total length < UDP length");

	/* IPv4 options: IHL 6, one NOP word; still parses, ICRC covers it */
	memcpy(g, f, 34);
	g[14] = 0x46;
	g[34] = g[35] = g[36] = g[37] = 0x01; /* NOP options */
	memcpy(g + 38, f + 34, len - 34);
	g[17] += 4;
	fix_ip4(g);
	refinish(g, len + 4);
	CHECK(dpv_pkt_parse_check(g, len + 4, &pi) == 0 && pi.l4_off == 38 &&
		      pi.payload_len == 16 && pi.opcode == DPV_OPC_SEND_ONLY,
	      "IPv4 options skipped");

	/* UDP */
	memcpy(g, f, len);
	g[36] = 0x12;
	g[37] = 0xb8; /* port 4792 */
	EXPECT(g, len, DPV_PARSE_NOT_ROCE, "UDP port 4792");
	memcpy(g, f, len);
	g[39] += 4;
	EXPECT(g, len, DPV_PARSE_BAD_UDP, "UDP length too big");
	memcpy(g, f, len);
	g[39] -= 4;
	EXPECT(g, len, DPV_PARSE_BAD_UDP, "UDP length too small");
	memcpy(g, f, len);
	g[38] = 0;
	g[39] = 4;
	EXPECT(g, len, DPV_PARSE_BAD_UDP, "UDP length < 8");

	/* IPv6 */
	len6 = make(f, sizeof(f), 6, DPV_OPC_SEND_ONLY, 16);
	EXPECT(f, len6, DPV_PARSE_OK, "IPv6 ok");
	memcpy(g, f, len6);
	g[14] = 0x40;
	EXPECT(g, len6, DPV_PARSE_BAD_IP, "IPv6 version 4");
	memcpy(g, f, len6);
	g[20] = 0; /* next header hop-by-hop */
	EXPECT(g, len6, DPV_PARSE_NOT_ROCE, "IPv6 extension header");
	memcpy(g, f, len6);
	g[19] += 4;
	EXPECT(g, len6, DPV_PARSE_SHORT, "IPv6 payload length > frame");
	memcpy(g, f, len6);
	g[19] -= 4;
	EXPECT(g, len6, DPV_PARSE_BAD_UDP, "IPv6 payload length < UDP length");
	memcpy(g, f, len6);
	g[14 + 40 + 4] = 0;
	g[14 + 40 + 5] = 0;
	EXPECT(g, len6, DPV_PARSE_BAD_UDP, "IPv6 UDP length 0");
}

static void test_bth(void)
{
	static const uint8_t bad_ops[] = { 0x15, 0x18, 0x1f, 0x2c, 0x40, 0x60, 0x63,
					   0x66, 0x7f, 0x80, 0x81, 0xb5, 0xc0, 0xff };
	uint8_t f[256], g[256];
	uint32_t len = make(f, sizeof(f), 4, DPV_OPC_SEND_ONLY, 16);
	const uint32_t bth = 14 + 20 + 8;

	for (size_t i = 0; i < sizeof(bad_ops); i++) {
		memcpy(g, f, len);
		g[bth] = bad_ops[i];
		refinish(g, len);
		EXPECT(g, len, DPV_PARSE_BAD_OPCODE, "bad opcode");
	}
	for (uint8_t v = 1; v < 16; v++) {
		memcpy(g, f, len);
		g[bth + 1] = (uint8_t)((g[bth + 1] & 0xf0) | v);
		refinish(g, len);
		EXPECT(g, len, DPV_PARSE_BAD_TVER, "tver != 0");
	}

	/* pad count larger than the payload: 1-byte payload (pad 3) -> claim
	 * a zero-length payload with... a 0-byte payload and pad 1..3 */
	len = make(f, sizeof(f), 4, DPV_OPC_SEND_ONLY, 0);
	for (uint8_t p = 1; p <= 3; p++) {
		memcpy(g, f, len);
		g[bth + 1] = (uint8_t)((g[bth + 1] & 0xcf) | p << 4);
		refinish(g, len);
		EXPECT(g, len, DPV_PARSE_BAD_PAD, "pad > payload (0 bytes)");
	}
	/* payload 4 with pad 1..3 is fine (payload 3, 2, 1) */
	len = make(f, sizeof(f), 4, DPV_OPC_SEND_ONLY, 4);
	for (uint8_t p = 0; p <= 3; p++) {
		struct dpv_pkt_info pi;

		memcpy(g, f, len);
		g[bth + 1] = (uint8_t)((g[bth + 1] & 0xcf) | p << 4);
		refinish(g, len);
		CHECK(dpv_pkt_parse_check(g, len, &pi) == 0 && pi.payload_len == 4u - p &&
			      pi.padcnt == p,
		      "pad %u of 4 bytes", p);
	}
	/* payload + pad not a multiple of 4: add 2 bytes to the IP/UDP lengths */
	len = make(f, sizeof(f), 4, DPV_OPC_SEND_ONLY, 4);
	memcpy(g, f, len);
	memmove(g + len - 4 + 2, g + len - 4, 4);
	g[17] += 2;
	g[39] += 2;
	fix_ip4(g);
	EXPECT(g, len + 2, DPV_PARSE_BAD_PAD, "payload+pad not 4-aligned");
	/* an ACK with payload bytes */
	len = make(f, sizeof(f), 4, DPV_OPC_ACK, 0);
	memcpy(g, f, len);
	memmove(g + len, g + len - 4, 4);
	memset(g + len - 4, 0, 4);
	g[17] += 4;
	g[39] += 4;
	fix_ip4(g);
	refinish(g, len + 4);
	EXPECT(g, len + 4, DPV_PARSE_BAD_PAD, "ACK with payload");
	/* BTH + ICRC do not fit: ACK cut to BTH only (lengths consistent) */
	len = make(f, sizeof(f), 4, DPV_OPC_ACK, 0);
	memcpy(g, f, len);
	g[17] -= 4;
	g[39] -= 4;
	fix_ip4(g);
	EXPECT(g, len - 4, DPV_PARSE_SHORT, "ACK without AETH");
	memcpy(g, f, len);
	g[17] -= 8;
	g[39] -= 8;
	fix_ip4(g);
	EXPECT(g, len - 8, DPV_PARSE_SHORT, "BTH without ICRC");
	/* RDMA WRITE ONLY too short for its RETH */
	len = make(f, sizeof(f), 4, DPV_OPC_WRITE_ONLY, 0);
	memcpy(g, f, len);
	g[17] -= 8;
	g[39] -= 8;
	fix_ip4(g);
	EXPECT(g, len - 8, DPV_PARSE_SHORT, "RETH cut");
}

static void test_icrc_flips(void)
{
	uint8_t f[512];
	uint32_t len = make(f, sizeof(f), 4, DPV_OPC_WRITE_ONLY_IMM, 33), len6;
	int bad = 0;

	/* every bit of the invariant part after the IP header, and the ICRC */
	for (uint32_t byte = 14 + 20 + 8; byte < len; byte++) {
		for (int bit = 0; bit < 8; bit++) {
			struct dpv_pkt_info pi;
			int r, want = DPV_PARSE_BAD_ICRC;

			if (byte == 14 + 20 + 8 + 4)
				continue; /* FECN/BECN/resv6: variant, not covered */
			f[byte] ^= (uint8_t)(1 << bit);
			r = dpv_pkt_parse_check(f, len, &pi);
			/* header bits may trip an earlier check first: another
			 * opcode changes the header layout (any error will do) */
			if (byte == 14 + 20 + 8 && r != 0)
				want = r;
			if (byte == 14 + 20 + 8 + 1 && bit < 4)
				want = DPV_PARSE_BAD_TVER;
			if (r != want && bad++ < 5)
				CHECK(r == want, "flip byte %u bit %d: %d", byte, bit, r);
			f[byte] ^= (uint8_t)(1 << bit);
		}
	}
	CHECK(bad == 0, "ICRC catches every single-bit flip (%d wrong)", bad);
	{
		struct dpv_pkt_info pi;

		f[len - 1] ^= 0x80;
		EXPECT(f, len, DPV_PARSE_BAD_ICRC, "ICRC byte flipped");
		CHECK(dpv_pkt_parse(f, len, &pi) == 0, "parse() does not check the ICRC");
		f[len - 1] ^= 0x80;
		f[14 + 20 + 8 + 1] ^= 0x10; /* pad 3 -> 2: one payload byte more */
		CHECK(dpv_pkt_parse(f, len, &pi) == 0 && pi.payload_len == 34,
		      "pad count moves the payload end");
		EXPECT(f, len, DPV_PARSE_BAD_ICRC, "pad count covered by the ICRC");
		f[14 + 20 + 8 + 1] ^= 0x10;
	}
	/* IPv6: flipping a GID bit */
	len6 = make(f, sizeof(f), 6, DPV_TR_UD | DPV_OPC_SEND_ONLY, 5);
	EXPECT(f, len6, DPV_PARSE_OK, "UD IPv6");
	f[14 + 8 + 3] ^= 0x04;
	EXPECT(f, len6, DPV_PARSE_BAD_ICRC, "IPv6 source address bit flipped");
	f[14 + 8 + 3] ^= 0x04;
	f[14 + 7] = 1; /* hop limit is variant */
	EXPECT(f, len6, DPV_PARSE_OK, "IPv6 hop limit change keeps ICRC");
}

/* random garbage and random mutations of valid frames must never crash */
static void test_random(void)
{
	uint8_t f[600], g[600];
	uint32_t x = 1;
	int ok = 0;

	for (int it = 0; it < 200000; it++) {
		struct dpv_pkt_info pi;
		uint32_t len;
		int r;

		x = x * 1664525u + 1013904223u;
		len = make(f, sizeof(f), (x >> 8) & 1 ? 4 : 6, (uint8_t)((x >> 9) & 1 ? 0x0b : 0x64),
			   (x >> 10) % 300);
		memcpy(g, f, len);
		for (int k = 0; k < 1 + (int)((x >> 20) & 3); k++) {
			x = x * 1664525u + 1013904223u;
			g[(x >> 8) % len] = (uint8_t)(x >> 24);
		}
		x = x * 1664525u + 1013904223u;
		if ((x >> 8) & 1)
			len = (x >> 9) % (len + 1);
		r = dpv_pkt_parse_check(g, len, &pi);
		CHECK(r <= 0 && r > -DPV_PARSE_NERR, "result %d", r);
		if (r == 0) {
			ok++;
			CHECK(pi.payload_off + pi.payload_len + pi.padcnt + 4 == pi.frame_len &&
				      pi.frame_len <= len,
			      "accepted frame consistent");
		}
	}
	CHECK(ok > 0, "some mutations are benign (%d)", ok);
}

int main(void)
{
	/* every valid opcode, both IP versions, pad 0..3 */
	for (int op = 0; op < 256; op++) {
		if (!dpv_opcode_valid((uint8_t)op))
			continue;
		for (uint8_t v = 4; v <= 6; v += 2) {
			uint32_t pl = (dpv_opcode_table[op].mask & DPV_HDR_PAYLOAD) ? 7 : 0;

			test_truncation(v, (uint8_t)op, pl);
		}
	}
	test_l2_l3();
	test_bth();
	test_icrc_flips();
	test_random();
	for (int e = 0; e >= -9; e--)
		CHECK(dpv_parse_err_str(e) != NULL, "err str %d", e);
	CHECK(strcmp(dpv_parse_err_str(DPV_PARSE_BAD_ICRC), "ICRC mismatch") == 0, "err str");
	return dpvt_finish();
}
