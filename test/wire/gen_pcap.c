/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gen_pcap OUT.pcap [--zero]
 * Writes packets built with dpv_pkt_build_hdrs()/dpv_pkt_finish(): for every
 * opcode in dpv_opcode_table, over IPv4 and over IPv6, one packet per pad
 * count 0..3 (opcodes with a payload) or one packet (no payload).
 * With --zero, also one zero-length packet of every payload opcode.
 * Prints a manifest on stdout, one line per frame:
 *   FRAME OPCODE IPVER PAYLEN PADCNT DQPN PSN MASK SE ACKREQ AETH_MSN ICRC
 * (OPCODE, DQPN, PSN, MASK in hex; ICRC = the 4 wire bytes read big endian,
 * as Wireshark shows "Invariant CRC"). Every other header field is a
 * constant, see emit().
 */
#include <string.h>

#include "dpv_wire.h"
#include "dpvt_wire.h"

static uint32_t frame_no;

static int emit(FILE *f, uint8_t op, uint8_t ip_ver, uint32_t paylen)
{
	static const uint8_t s4[16] = { [10] = 0xff, [11] = 0xff, 192, 168, 77, 3 };
	static const uint8_t d4[16] = { [10] = 0xff, [11] = 0xff, 192, 168, 77, 2 };
	static const uint8_t s6[16] = { 0x20, 0x01, 0x0d, 0xb8, [15] = 3 };
	static const uint8_t d6[16] = { 0x20, 0x01, 0x0d, 0xb8, [15] = 2 };
	struct dpv_pkt_build b;
	uint8_t buf[2048], pay[2048];
	uint32_t len;
	const struct dpv_opcode_info *oi = &dpv_opcode_table[op];

	memset(&b, 0, sizeof(b));
	memcpy(b.dst_mac, "\x02\x00\x00\x00\x00\x02", 6);
	memcpy(b.src_mac, "\x02\x00\x00\x00\x00\x03", 6);
	b.ip_ver = ip_ver;
	memcpy(b.sgid, ip_ver == 4 ? s4 : s6, 16);
	memcpy(b.dgid, ip_ver == 4 ? d4 : d6, 16);
	b.tclass = ip_ver == 4 ? 0x02 : 0x00;
	b.flow_label = ip_ver == 6 ? 0x12345 : 0;
	b.hop_limit = 64;
	b.ip_id = 0;
	b.udp_sport = (uint16_t)(0xc000 | (frame_no & 0x3fff));
	b.opcode = op;
	b.se = (oi->mask & DPV_OP_COMP) && (frame_no & 1);
	b.ackreq = (oi->mask & DPV_OP_REQ) && (oi->mask & DPV_OP_END);
	b.pkey = 0xffff;
	b.dqpn = 0x000100 + (frame_no & 0xff); /* never QP1: no MAD decoding */
	b.psn = (0x123400 + frame_no) & 0xffffff;
	b.deth_qkey = 0x11111111;
	b.deth_sqpn = 0x000042;
	b.reth_va = 0x00007f0012345000ull + frame_no;
	b.reth_rkey = 0x00001234;
	b.reth_len = paylen ? paylen : 4096;
	b.aeth_syndrome = 0x1f; /* ACK, credits invalid (31) */
	b.aeth_msn = frame_no;
	b.immdt = 0x11223344;
	b.ieth_rkey = 0x080001e5;
	b.atm_va = 0x00007f0012346000ull;
	b.atm_rkey = 0x00005678;
	b.atm_swap_add = 0x0102030405060708ull;
	b.atm_cmp = 0x1112131415161718ull;
	b.atmack_orig = 0x2122232425262728ull;
	b.xrc_srqn = 0x000077;

	if (paylen > sizeof(pay))
		return -1;
	for (uint32_t i = 0; i < paylen; i++)
		pay[i] = (uint8_t)(0x41 + i % 26);
	len = dpvt_frame_build(buf, sizeof(buf), &b, paylen ? pay : NULL, paylen);
	if (!len)
		return -1;
	frame_no++;
	if (dpvt_pcap_write_pkt(f, 1700000000u + frame_no, 0, buf, len))
		return -1;
	printf("%u 0x%02x %u %u %u 0x%06x 0x%06x 0x%05x %d %d %u 0x%02x%02x%02x%02x\n",
	       frame_no, op, ip_ver, paylen, (4 - paylen % 4) % 4, b.dqpn, b.psn, oi->mask,
	       b.se, b.ackreq, b.aeth_msn, buf[len - 4], buf[len - 3], buf[len - 2],
	       buf[len - 1]);
	return 0;
}

int main(int argc, char **argv)
{
	bool zero = argc > 2 && strcmp(argv[2], "--zero") == 0;
	FILE *f;

	if (argc < 2) {
		fprintf(stderr, "usage: gen_pcap OUT.pcap [--zero]\n");
		return 2;
	}
	f = fopen(argv[1], "wb");
	if (!f || dpvt_pcap_write_hdr(f)) {
		perror(argv[1]);
		return 1;
	}
	for (int op = 0; op < 256; op++) {
		if (!dpv_opcode_valid((uint8_t)op))
			continue;
		for (uint8_t v = 4; v <= 6; v += 2) {
			if (dpv_opcode_table[op].mask & DPV_HDR_PAYLOAD) {
				/* 16..19 bytes: pad 0, 3, 2, 1 */
				for (uint32_t pl = 16; pl < 20; pl++)
					if (emit(f, (uint8_t)op, v, pl))
						return 1;
				if (zero && emit(f, (uint8_t)op, v, 0))
					return 1;
			} else if (emit(f, (uint8_t)op, v, 0)) {
				return 1;
			}
		}
	}
	if (fclose(f))
		return 1;
	return 0;
}
