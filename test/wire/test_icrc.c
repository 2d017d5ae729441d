/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * CRC-32 and ICRC: known vectors, the worked example of
 * test/data/wire/CAPTURES.md (rc_send.pcap frame 2) with each implementation,
 * slicing-by-8 against a bitwise reference, and which header fields the
 * ICRC must ignore. test_crc checks the carry-less-multiply CRC in depth.
 */
#include <string.h>

#include "dpv_crc.h"
#include "dpv_wire.h"
#include "dpvt_wire.h"

static uint32_t crc32_std(const void *p, size_t n)
{
	return ~dpv_crc32_update(0xffffffffu, p, n);
}

/* bit-at-a-time reference, reflected polynomial 0xEDB88320 */
static uint32_t crc32_bitwise(uint32_t crc, const uint8_t *p, size_t n)
{
	while (n--) {
		crc ^= *p++;
		for (int k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1)));
	}
	return crc;
}

/* README worked example: rc_send.pcap frame 2, an ACK of 62 bytes */
static const char readme_frame[] =
	"525400770003 525400770002 0800"
	"45000030edda400040113844 0a4d0002 0a4d0003"
	"c14412b7001c0000"
	"1100ffff00000012 00b761df"
	"1f000001"
	"9b126525";

/* the README's masked pseudo packet (what zlib.crc32 is applied to) */
static const char readme_masked[] =
	"ffffffffffffffff"
	"45ff0030edda4000ff11ffff0a4d00020a4d0003"
	"c14412b7001cffff"
	"1100ffffff00001200b761df"
	"1f000001";

static void test_vectors(void)
{
	static const char fox[] = "The quick brown fox jumps over the lazy dog";
	uint8_t buf[1024];
	uint32_t x = 12345;

	CHECK(crc32_std("123456789", 9) == 0xCBF43926u, "check value 0x%08x",
	      crc32_std("123456789", 9));
	CHECK(crc32_std("", 0) == 0, "empty");
	CHECK(crc32_std(fox, strlen(fox)) == 0x414FA339u, "fox 0x%08x",
	      crc32_std(fox, strlen(fox)));
	memset(buf, 0, 32);
	CHECK(crc32_std(buf, 32) == 0x190A55ADu, "32 zero bytes 0x%08x", crc32_std(buf, 32));

	/* slicing-by-8 == bitwise, for every length and alignment, and
	 * update() composes over any split point */
	for (size_t i = 0; i < sizeof(buf); i++) {
		x = x * 1103515245u + 12345u;
		buf[i] = (uint8_t)(x >> 16);
	}
	for (size_t off = 0; off < 8; off++) {
		for (size_t n = 0; n + off <= 300; n++) {
			uint32_t a = dpv_crc32_update_sb8(0xffffffffu, buf + off, n);
			uint32_t b = crc32_bitwise(0xffffffffu, buf + off, n);

			if (a != b) {
				CHECK(a == b, "off %zu len %zu: 0x%08x != 0x%08x", off, n, a, b);
				return;
			}
		}
	}
	CHECK(1, "slicing-by-8 matches bitwise for all lengths/alignments");
	for (size_t cut = 0; cut <= sizeof(buf); cut += 37) {
		uint32_t a = dpv_crc32_update_sb8(dpv_crc32_update_sb8(7, buf, cut), buf + cut,
						  sizeof(buf) - cut);

		CHECK(a == dpv_crc32_update_sb8(7, buf, sizeof(buf)), "split at %zu", cut);
	}
}

static void test_readme_example(void)
{
	uint8_t fr[64], masked[64];
	uint32_t n = dpvt_unhex(readme_frame, fr, sizeof(fr));
	uint32_t m = dpvt_unhex(readme_masked, masked, sizeof(masked));
	struct dpv_pkt_info pi;
	uint32_t icrc;

	CHECK(n == 62, "frame length %u", n);
	CHECK(m == 8 + 20 + 8 + 12 + 4, "masked length %u", m);
	/* the README: struct.pack('<I', zlib.crc32(masked)) == 9b126525 */
	CHECK(crc32_std(masked, m) == 0x2565129bu, "zlib-style crc 0x%08x",
	      crc32_std(masked, m));

	icrc = dpv_icrc_compute(fr + DPV_ETH_HLEN, n - DPV_ETH_HLEN - DPV_ICRC_LEN);
	CHECK(icrc == 0x2565129bu, "ICRC 0x%08x, want 0x2565129b", icrc);
	for (int i = 0; i < DPV_CRC_N_IMPL; i++) {
		enum dpv_crc_impl im = (enum dpv_crc_impl)i;

		if (!dpv_crc_impl_supported(im))
			continue;
		icrc = dpv_icrc_compute_with(im, fr + DPV_ETH_HLEN, n - DPV_ETH_HLEN - DPV_ICRC_LEN);
		CHECK(icrc == 0x2565129bu, "%s ICRC 0x%08x", dpv_crc_impl_name(im), icrc);
		CHECK(~dpv_crc32_update_with(im, 0xffffffffu, masked, m) == 0x2565129bu,
		      "%s crc of the masked packet", dpv_crc_impl_name(im));
	}
	icrc = dpv_icrc_compute(fr + DPV_ETH_HLEN, n - DPV_ETH_HLEN - DPV_ICRC_LEN);
	CHECK((icrc & 0xff) == fr[58] && (icrc >> 8 & 0xff) == fr[59] &&
		      (icrc >> 16 & 0xff) == fr[60] && icrc >> 24 == fr[61],
	      "wire bytes are the CRC least significant byte first");

	/* IPv4 header checksum of the example: 0x3844 */
	CHECK(dpv_ipv4_cksum(fr + 14) == 0, "valid header sums to 0");
	fr[24] = fr[25] = 0;
	CHECK(dpv_ipv4_cksum(fr + 14) == 0x3844, "checksum 0x%04x, want 0x3844",
	      dpv_ipv4_cksum(fr + 14));
	fr[24] = 0x38;
	fr[25] = 0x44;

	CHECK(dpv_pkt_parse_check(fr, n, &pi) == 0, "parse_check");
	CHECK(pi.opcode == DPV_OPC_ACK && pi.dqpn == 0x12 && pi.psn == 0xb761df &&
		      pi.pkey == 0xffff && pi.aeth_syndrome == 0x1f && pi.aeth_msn == 1 &&
		      pi.ip_id == 0xedda && pi.hop_limit == 64 && pi.udp_sport == 0xc144 &&
		      pi.icrc == 0x2565129bu && pi.payload_len == 0,
	      "parsed fields");
}

/* The variant fields must not change the ICRC; any other byte must. */
static void test_variant_fields(void)
{
	uint8_t fr[64], orig[64];
	uint32_t n = dpvt_unhex(readme_frame, fr, sizeof(fr));
	const uint8_t *l3 = fr + 14;
	uint32_t len = n - 14 - 4, ref = dpv_icrc_compute(l3, len);
	/* offsets from the IP header: TOS, TTL, checksum(2), UDP csum(2), BTH byte 4 */
	static const unsigned variant[] = { 1, 8, 10, 11, 26, 27, 32 };

	memcpy(orig, fr, n);
	for (unsigned i = 0; i < sizeof(variant) / sizeof(variant[0]); i++) {
		fr[14 + variant[i]] ^= 0x5a;
		CHECK(dpv_icrc_compute(l3, len) == ref, "IPv4 variant byte %u changed ICRC",
		      variant[i]);
		memcpy(fr, orig, n);
	}
	for (unsigned b = 0; b < len; b++) {
		bool is_var = false;

		for (unsigned i = 0; i < sizeof(variant) / sizeof(variant[0]); i++)
			is_var |= variant[i] == b;
		if (is_var)
			continue;
		fr[14 + b] ^= 0x01;
		if (dpv_icrc_compute(l3, len) == ref)
			CHECK(0, "IPv4 invariant byte %u did not change the ICRC", b);
		memcpy(fr, orig, n);
	}
	CHECK(1, "every invariant IPv4 byte is covered");

	/* IPv6: traffic class, flow label, hop limit are variant */
	{
		struct dpv_pkt_build b;
		uint8_t f6[128], o6[128];
		uint32_t flen, len6, ref6;

		memset(&b, 0, sizeof(b));
		b.ip_ver = 6;
		b.sgid[0] = 0xfe;
		b.sgid[1] = 0x80;
		b.sgid[15] = 2;
		memcpy(b.dgid, b.sgid, 16);
		b.dgid[15] = 3;
		b.tclass = 0x12;
		b.flow_label = 0x34567;
		b.hop_limit = 64;
		b.udp_sport = 0xc000;
		b.opcode = DPV_OPC_SEND_ONLY;
		b.pkey = 0xffff;
		b.dqpn = 0x12;
		b.psn = 1;
		flen = dpv_pkt_frame_len(b.opcode, 6, 8);
		CHECK(flen == 14 + 40 + 8 + 12 + 8 + 4, "IPv6 frame len %u", flen);
		memset(f6, 0xab, sizeof(f6));
		dpv_pkt_build_hdrs(f6, &b, 8);
		dpv_pkt_finish(f6, flen);
		len6 = flen - 14 - 4;
		ref6 = dpv_icrc_compute(f6 + 14, len6);
		memcpy(o6, f6, flen);
		for (unsigned v = 0; v < len6; v++) {
			bool var = v == 0 || v == 1 || v == 2 || v == 3 || v == 7 ||
				   v == 46 || v == 47 || v == 52;

			if (v == 0) { /* only the low nibble (traffic class) is variant */
				f6[14] ^= 0x0f;
				CHECK(dpv_icrc_compute(f6 + 14, len6) == ref6, "IPv6 tclass nibble");
				f6[14] ^= 0x0f ^ 0x10;
				CHECK(dpv_icrc_compute(f6 + 14, len6) != ref6, "IPv6 version nibble");
				memcpy(f6, o6, flen);
				continue;
			}
			f6[14 + v] ^= 0x01;
			if ((dpv_icrc_compute(f6 + 14, len6) == ref6) != var)
				CHECK(0, "IPv6 byte %u variant=%d mismatch", v, var);
			memcpy(f6, o6, flen);
		}
		CHECK(1, "IPv6 variant/invariant bytes");
	}
}

int main(void)
{
	test_vectors();
	test_readme_example();
	test_variant_fields();
	return dpvt_finish();
}
