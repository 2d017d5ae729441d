/* SPDX-License-Identifier: BSD-3-Clause */
/* Test frames: RoCEv2 through lib/wire's builder, ARP, IPv6 NS (dpvt_wire.h). */
#include <string.h>

#include "dpvt_wire.h"

uint32_t dpvt_frame_build(uint8_t *f, size_t cap, const struct dpv_pkt_build *b, const uint8_t *payload,
			  uint32_t paylen)
{
	uint32_t flen = dpv_pkt_frame_len(b->opcode, b->ip_ver, paylen), off;

	if (!flen || flen > cap)
		return 0;
	off = dpv_pkt_build_hdrs(f, b, paylen);
	if (!off)
		return 0;
	if (payload)
		memcpy(f + off, payload, paylen);
	dpv_pkt_finish(f, flen);
	return flen;
}

void dpvt_ipv4_fix_cksum(uint8_t *frame)
{
	uint8_t *ip = frame + 14;

	dpvt_put16(ip + 10, 0);
	dpvt_put16(ip + 10, dpv_ipv4_cksum(ip));
}

uint32_t dpvt_arp_frame(uint8_t *f, uint16_t op, const uint8_t sha[6], const uint8_t spa[4],
			const uint8_t tpa[4])
{
	uint8_t *a = f + 14;

	memset(f, 0, 60);
	memset(f, 0xff, 6);
	memcpy(f + 6, sha, 6);
	dpvt_put16(f + 12, 0x0806);
	dpvt_put16(a, 1);          /* hardware type Ethernet */
	dpvt_put16(a + 2, 0x0800); /* protocol IPv4 */
	a[4] = 6;
	a[5] = 4;
	dpvt_put16(a + 6, op);
	memcpy(a + 8, sha, 6);
	memcpy(a + 14, spa, 4);
	memcpy(a + 24, tpa, 4);
	return 60;
}

uint32_t dpvt_ns_frame(uint8_t *f, const uint8_t sha[6], const uint8_t src[16], const uint8_t target[16])
{
	const uint8_t dmac[6] = {0x33, 0x33, 0xff, target[13], target[14], target[15]};
	const uint8_t dip[16] = {0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0xff, target[13], target[14], target[15]};
	uint8_t *ip = f + 14, *ic = f + 54;

	memset(f, 0, 86);
	memcpy(f, dmac, 6);
	memcpy(f + 6, sha, 6);
	dpvt_put16(f + 12, 0x86dd);
	ip[0] = 0x60;
	dpvt_put16(ip + 4, 32); /* payload length */
	ip[6] = 58;             /* ICMPv6 */
	ip[7] = 255;
	memcpy(ip + 8, src, 16);
	memcpy(ip + 24, dip, 16);
	ic[0] = 135; /* neighbour solicitation */
	memcpy(ic + 8, target, 16);
	ic[24] = 1; /* source link-layer address option, 8 bytes */
	ic[25] = 1;
	memcpy(ic + 26, sha, 6);
	dpvt_put16(ic + 2, dpvt_icmp6_csum(ip, ic, 32));
	return 86;
}
