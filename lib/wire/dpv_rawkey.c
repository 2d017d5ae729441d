/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The key of a raw Ethernet frame for steering rules (dpv_rawkey.h):
 * Ethernet with at most one 802.1Q tag, IPv4 (any IHL) or IPv6 (no
 * extension headers followed), UDP or TCP ports.
 */
#include <string.h>

#include "dpv_rawkey.h"

static uint16_t ld16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }

static void l4(union dpv_raw_keyw *key, const uint8_t *frame, uint32_t len, uint32_t off)
{
	if ((key->k.proto == 17 || key->k.proto == 6) && len >= off + 4) {
		memcpy(&key->k.sport, frame + off, 2);
		memcpy(&key->k.dport, frame + off + 2, 2);
		key->k.l4 = 1;
	}
}

void dpv_raw_key_extract(const uint8_t *frame, uint32_t len, union dpv_raw_keyw *key)
{
	memset(key, 0, sizeof(*key));
	if (len < 14)
		return;
	memcpy(key->k.dmac, frame, 6);
	memcpy(key->k.smac, frame + 6, 6);
	uint32_t off = 14;
	uint16_t et = ld16(frame + 12);
	if (et == 0x8100 && len >= 18) {
		key->k.vlan = 1;
		memcpy(&key->k.vlan_tci, frame + 14, 2);
		et = ld16(frame + 16);
		off = 18;
	}
	key->k.ethertype = __builtin_bswap16(et);
	const uint8_t *ip = frame + off;
	if (et == 0x0800 && len >= off + 20 && (ip[0] >> 4) == 4) {
		uint32_t ihl = (uint32_t)(ip[0] & 0xf) * 4;
		key->k.ip_ver = 4;
		key->k.tos = ip[1];
		key->k.ipv4_flags = ip[6] >> 5;
		key->k.ttl = ip[8];
		key->k.proto = ip[9];
		memcpy(key->k.sip, ip + 12, 4);
		memcpy(key->k.dip, ip + 16, 4);
		if (ihl >= 20 && !(ld16(ip + 6) & 0x1fff)) /* not a later fragment */
			l4(key, frame, len, off + ihl);
	} else if (et == 0x86dd && len >= off + 40 && (ip[0] >> 4) == 6) {
		uint32_t fl = (uint32_t)(ip[1] & 0xf) << 16 | (uint32_t)ip[2] << 8 | ip[3];
		key->k.ip_ver = 6;
		key->k.tos = (uint8_t)((ip[0] & 0xf) << 4 | ip[1] >> 4);
		key->k.flow_label = __builtin_bswap32(fl);
		key->k.proto = ip[6];
		key->k.ttl = ip[7];
		memcpy(key->k.sip, ip + 8, 16);
		memcpy(key->k.dip, ip + 24, 16);
		l4(key, frame, len, off + 40);
	}
}

/* Toeplitz: for every input bit set, the 32 key bits starting at that bit
 * position are XORed into the result. */
static uint32_t toeplitz(const uint8_t key[DPV_RSS_KEY_LEN], const uint8_t *in, unsigned int n)
{
	uint32_t h = 0, v = (uint32_t)key[0] << 24 | (uint32_t)key[1] << 16 | (uint32_t)key[2] << 8 | key[3];
	for (unsigned int i = 0; i < n; i++) {
		uint8_t next = i + 4 < DPV_RSS_KEY_LEN ? key[i + 4] : 0;
		for (int b = 7; b >= 0; b--) {
			if (in[i] & (1u << b))
				h ^= v;
			v = v << 1 | ((next >> b) & 1u);
		}
	}
	return h;
}

uint32_t dpv_raw_rss_hash(const struct dpv_rss_cfg *cfg, const union dpv_raw_keyw *key)
{
	uint8_t in[36];
	unsigned int n = 0, alen = key->k.ip_ver == 4 ? 4 : 16;
	uint64_t f = cfg->fields;
	bool v4 = key->k.ip_ver == 4, v6 = key->k.ip_ver == 6;
	if ((v4 && (f & (1u << 0))) || (v6 && (f & (1u << 2)))) {
		memcpy(in + n, key->k.sip, alen);
		n += alen;
	}
	if ((v4 && (f & (1u << 1))) || (v6 && (f & (1u << 3)))) {
		memcpy(in + n, key->k.dip, alen);
		n += alen;
	}
	bool tcp = key->k.l4 && key->k.proto == 6, udp = key->k.l4 && key->k.proto == 17;
	if ((tcp && (f & (1u << 4))) || (udp && (f & (1u << 6)))) {
		memcpy(in + n, &key->k.sport, 2);
		n += 2;
	}
	if ((tcp && (f & (1u << 5))) || (udp && (f & (1u << 7)))) {
		memcpy(in + n, &key->k.dport, 2);
		n += 2;
	}
	return n ? toeplitz(cfg->key, in, n) : 0;
}
