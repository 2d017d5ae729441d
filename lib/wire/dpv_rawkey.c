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
