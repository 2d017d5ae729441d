/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The key of a raw Ethernet frame and the Toeplitz hash of receive-side
 * scaling (lib/wire/dpv_rawkey.[ch]):
 *   - fields of an Eth/IPv4/TCP frame, an 802.1Q-tagged Eth/IPv6/UDP frame,
 *     a later IPv4 fragment (no ports), a truncated frame;
 *   - dpv_raw_match under masks; RoCEv2 recognised;
 *   - the hash against Microsoft's RSS verification vectors (IPv4 only and
 *     IPv4 with TCP ports), with the key of that document.
 */
#include <arpa/inet.h>
#include <string.h>

#include "dpv_rawkey.h"
#include "dpvt_wire.h"

static const uint8_t ms_key[DPV_RSS_KEY_LEN] = {
	0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67, 0x25, 0x3d, 0x43, 0xa3,
	0x8f, 0xb0, 0xd0, 0xca, 0x2b, 0xcb, 0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3,
	0x80, 0x30, 0xf2, 0x0c, 0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa,
};

static uint32_t v4_frame(uint8_t *f, const char *src, const char *dst, uint16_t sp, uint16_t dp, uint8_t proto,
			 uint16_t frag)
{
	memset(f, 0, 128);
	memset(f, 0x11, 6);
	memset(f + 6, 0x22, 6);
	f[12] = 0x08;
	f[14] = 0x45, f[15] = 0x10, f[22] = 64, f[23] = proto;
	f[20] = (uint8_t)(frag >> 8), f[21] = (uint8_t)frag;
	inet_pton(AF_INET, src, f + 26);
	inet_pton(AF_INET, dst, f + 30);
	f[34] = (uint8_t)(sp >> 8), f[35] = (uint8_t)sp, f[36] = (uint8_t)(dp >> 8), f[37] = (uint8_t)dp;
	return 74;
}

static void hashes(void)
{
	static const struct {
		const char *dst, *src;
		uint16_t dp, sp;
		uint32_t ip, tcp;
	} v[] = {
		{"161.142.100.80", "66.9.149.187", 1766, 2794, 0x323e8fc2, 0x51ccc178},
		{"65.69.140.83", "199.92.111.2", 4739, 14230, 0xd718262a, 0xc626b0ea},
		{"12.22.207.184", "24.19.198.95", 38024, 12898, 0xd2d0a5de, 0x5c2b394a},
	};
	struct dpv_rss_cfg cfg;
	memset(&cfg, 0, sizeof(cfg));
	memcpy(cfg.key, ms_key, sizeof(ms_key));
	for (unsigned int i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		uint8_t f[128];
		union dpv_raw_keyw k;
		dpv_raw_key_extract(f, v4_frame(f, v[i].src, v[i].dst, v[i].sp, v[i].dp, 6, 0), &k);
		cfg.fields = (1u << 0) | (1u << 1); /* IBV_RX_HASH_SRC_IPV4 | DST_IPV4 */
		uint32_t h = dpv_raw_rss_hash(&cfg, &k);
		CHECK(h == v[i].ip, "vector %u, IPv4 only: %#x, expected %#x", i, h, v[i].ip);
		cfg.fields |= (1u << 4) | (1u << 5); /* TCP ports */
		h = dpv_raw_rss_hash(&cfg, &k);
		CHECK(h == v[i].tcp, "vector %u, IPv4 with TCP: %#x, expected %#x", i, h, v[i].tcp);
		cfg.fields = (1u << 6) | (1u << 7); /* UDP ports of a TCP frame: nothing */
		CHECK(dpv_raw_rss_hash(&cfg, &k) == 0, "vector %u: UDP fields of a TCP frame hash to 0", i);
	}
}

static void keys(void)
{
	uint8_t f[128];
	union dpv_raw_keyw k;
	dpv_raw_key_extract(f, v4_frame(f, "1.1.1.1", "2.2.2.2", 1234, 4791, 17, 0x4000), &k);
	CHECK(k.k.ip_ver == 4 && k.k.proto == 17 && k.k.l4 && k.k.tos == 0x10 && k.k.ttl == 64 &&
		      k.k.ipv4_flags == 2 && k.k.ethertype == htons(0x0800) && !k.k.vlan,
	      "IPv4/UDP: version, protocol, TOS, TTL, DF");
	CHECK(k.k.sport == htons(1234) && k.k.dport == htons(4791) && !memcmp(k.k.dip, "\x02\x02\x02\x02", 4),
	      "IPv4/UDP: ports and address");
	CHECK(dpv_raw_key_is_roce(&k), "UDP to 4791 is RoCEv2");
	dpv_raw_key_extract(f, v4_frame(f, "1.1.1.1", "2.2.2.2", 1234, 80, 6, 0x0010), &k);
	CHECK(k.k.ip_ver == 4 && !k.k.l4 && !k.k.sport, "a later fragment has no ports");
	/* 802.1Q + IPv6 + UDP */
	memset(f, 0, sizeof(f));
	f[12] = 0x81, f[14] = 0xa0, f[15] = 0x0c, f[16] = 0x86, f[17] = 0xdd;
	uint8_t *ip = f + 18;
	ip[0] = 0x6a, ip[1] = 0xb1, ip[2] = 0x23, ip[3] = 0x45, ip[6] = 17, ip[7] = 5;
	inet_pton(AF_INET6, "b0b1::b8b9", ip + 24);
	ip[40] = 0x04, ip[41] = 0xd2, ip[42] = 0x16, ip[43] = 0x2e;
	dpv_raw_key_extract(f, 18 + 48, &k);
	CHECK(k.k.vlan && k.k.vlan_tci == htons(0xa00c) && k.k.ethertype == htons(0x86dd) && k.k.ip_ver == 6 &&
		      k.k.tos == 0xab && k.k.flow_label == htonl(0x12345) && k.k.ttl == 5 && k.k.l4 &&
		      k.k.sport == htons(1234) && k.k.dport == htons(5678),
	      "802.1Q/IPv6/UDP: tag, traffic class, flow label, hop limit, ports");
	dpv_raw_key_extract(f, 30, &k);
	CHECK(k.k.vlan && k.k.ip_ver == 0 && !k.k.l4, "a truncated IPv6 header: no IP fields");
	/* a rule: IPv6, UDP destination 5678 */
	struct dpv_raw_rule r;
	memset(&r, 0, sizeof(r));
	r.mask.k.ip_ver = 0xff, r.val.k.ip_ver = 6;
	r.mask.k.dport = 0xffff, r.val.k.dport = htons(5678);
	dpv_raw_key_extract(f, 18 + 48, &k);
	CHECK(dpv_raw_match(&r, &k), "the IPv6 UDP rule matches");
	r.val.k.dport = htons(5679);
	CHECK(!dpv_raw_match(&r, &k), "another port does not");
	memset(&r.mask, 0, sizeof(r.mask));
	memset(&r.val, 0, sizeof(r.val));
	CHECK(dpv_raw_match(&r, &k), "an empty mask matches everything");
}

int main(void)
{
	keys();
	hashes();
	return dpvt_finish();
}
