/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * CRC-32 (slicing-by-8, and the choice between it and the carry-less-multiply
 * version in dpv_crc_clmul.c), the RoCEv2 invariant CRC (IBA annex A17.3.3)
 * and the IPv4 header checksum (RFC 791 / RFC 1071).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dpv_crc.h"
#include "dpv_wire.h"

/* Reflected form of the IEEE 802.3 polynomial 0x04C11DB7. */
#define DPV_CRC32_POLY 0xEDB88320u

/*
 * crc32_tab[0] is the classic byte-at-a-time table; crc32_tab[k][n] is the
 * CRC contribution of byte n followed by k zero bytes, so eight table look-ups
 * consume eight input bytes at once. 8 KiB, filled once before main() runs
 * (priority 101: ahead of any default-priority constructor that could send
 * a packet).
 */
static uint32_t crc32_tab[8][256];

static enum dpv_crc_impl crc_select(void);

/* Also picks the implementation, so that the first packet does not pay
 * for the CPU check. */
__attribute__((constructor(101))) static void dpv_crc32_init(void)
{
	for (uint32_t n = 0; n < 256; n++) {
		uint32_t c = n;

		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ ((c & 1) ? DPV_CRC32_POLY : 0);
		crc32_tab[0][n] = c;
	}
	for (uint32_t n = 0; n < 256; n++) {
		uint32_t c = crc32_tab[0][n];

		for (int t = 1; t < 8; t++) {
			c = (c >> 8) ^ crc32_tab[0][c & 0xff];
			crc32_tab[t][n] = c;
		}
	}
	crc_select();
}

static inline uint32_t ld32le(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

/* eight bytes (lo: the first four, little endian) into the register */
static inline uint32_t sb8_step(uint32_t crc, uint32_t lo, uint32_t hi)
{
	lo ^= crc;
	return crc32_tab[7][lo & 0xff] ^ crc32_tab[6][(lo >> 8) & 0xff] ^
	       crc32_tab[5][(lo >> 16) & 0xff] ^ crc32_tab[4][lo >> 24] ^
	       crc32_tab[3][hi & 0xff] ^ crc32_tab[2][(hi >> 8) & 0xff] ^
	       crc32_tab[1][(hi >> 16) & 0xff] ^ crc32_tab[0][hi >> 24];
}

uint32_t dpv_crc32_update_sb8(uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	while (len >= 8) {
		crc = sb8_step(crc, ld32le(p), ld32le(p + 4));
		p += 8;
		len -= 8;
	}
	while (len--)
		crc = (crc >> 8) ^ crc32_tab[0][(crc ^ *p++) & 0xff];
	return crc;
}

/*
 * IBA A17.3.3 (RoCEv2 ICRC): the CRC covers
 *   8 bytes of 0xFF standing in for the LRH that RoCEv2 does not carry,
 *   the IP header with its variant fields set to all ones
 *     (IPv4: type of service, time to live, header checksum;
 *      IPv6: traffic class, flow label, hop limit),
 *   the UDP header with the checksum set to all ones,
 *   the BTH with its byte 4 (FECN, BECN, resv6) set to all ones,
 *   everything after the BTH up to the ICRC.
 * Initial value all ones, result inverted; the CRC goes on the wire least
 * significant byte first, like the Ethernet FCS (checked against the rxe
 * captures, see test/wire/test_icrc.c and test_captures.c).
 */

/*
 * The variant fields as byte masks (ORed into the header) for the common
 * headers, up to a multiple of 8 bytes that covers every masked byte.
 *   IPv4 (IHL 5): TOS 1, TTL 8, checksum 10-11, UDP checksum 26-27, BTH 32
 *   IPv6: traffic class + flow label 0 (low nibble) to 3, hop limit 7,
 *         UDP checksum 46-47, BTH 52
 */
const uint8_t dpv_icrc4_mask[DPV_ICRC4_MASKED] __attribute__((aligned(16))) = {
	[1] = 0xff, [8] = 0xff, [10] = 0xff, [11] = 0xff,
	[26] = 0xff, [27] = 0xff, [32] = 0xff,
};
const uint8_t dpv_icrc6_mask[DPV_ICRC6_MASKED] __attribute__((aligned(16))) = {
	[0] = 0x0f, [1] = 0xff, [2] = 0xff, [3] = 0xff, [7] = 0xff,
	[46] = 0xff, [47] = 0xff, [52] = 0xff,
};

/* 8 + largest masked prefix (IPv4 with 40 bytes of options + UDP + BTH),
 * rounded up to whole 16-byte blocks */
#define ICRC_PSEUDO_MAX 112

/*
 * Write the pseudo-header into hdr: the 8 bytes of ones, then the first
 * bytes of l3 with the variant fields set to ones. Copies at least the
 * IP + UDP + BTH headers (or all of len if shorter); with align16, also the
 * bytes after them up to a multiple of 16 in hdr, as far as len allows.
 * Returns the number of l3 bytes copied.
 */
static uint32_t icrc_pseudo_hdr(uint8_t *hdr, const uint8_t *l3, uint32_t len, bool align16)
{
	uint8_t *h = hdr + 8;
	uint32_t iphl, n, m;
	bool v6;

	memset(hdr, 0xff, 8);
	if (len == 0)
		return 0;
	v6 = (l3[0] >> 4) == 6;
	if (v6)
		iphl = DPV_IPV6_HLEN;
	else
		iphl = (uint32_t)(l3[0] & 0xf) * 4;
	n = iphl + DPV_UDP_HLEN + DPV_BTH_LEN; /* at most 60 + 8 + 12 */
	if (n > len)
		n = len;
	m = n;
	if (align16) {
		m = ((8 + n + 15) & ~15u) - 8;
		if (m > len)
			m = len;
	}
	memcpy(h, l3, m);

#define SET_ONES(off, cnt)                                                     \
	do {                                                                   \
		for (uint32_t i_ = (off); i_ < (off) + (cnt) && i_ < n; i_++) \
			h[i_] = 0xff;                                          \
	} while (0)

	if (v6) {
		h[0] |= 0x0f;    /* traffic class, high nibble */
		SET_ONES(1, 3);  /* traffic class low nibble + flow label */
		SET_ONES(7, 1);  /* hop limit */
	} else {
		SET_ONES(1, 1);  /* TOS */
		SET_ONES(8, 1);  /* TTL */
		SET_ONES(10, 2); /* header checksum */
	}
	SET_ONES(iphl + 6, 2);  /* UDP checksum */
	SET_ONES(iphl + DPV_UDP_HLEN + 4, 1); /* BTH FECN/BECN/resv6 */
#undef SET_ONES
	return m;
}

/*
 * Common headers: the masks are ORed in as the words are loaded (a copy
 * masked with byte stores then read back by words costs more than the
 * CRC of the headers: the loads wait for the stores).
 */
uint32_t dpv_icrc_compute_sb8(const uint8_t *l3, uint32_t len_to_icrc)
{
	uint8_t hdr[ICRC_PSEUDO_MAX];
	const uint8_t *mask;
	uint32_t m, crc;

	if (len_to_icrc >= DPV_ICRC6_MASKED && (l3[0] >> 4) == 6) {
		mask = dpv_icrc6_mask;
		m = DPV_ICRC6_MASKED;
	} else if (len_to_icrc >= DPV_ICRC4_MASKED && l3[0] == 0x45) {
		mask = dpv_icrc4_mask;
		m = DPV_ICRC4_MASKED;
	} else {
		m = icrc_pseudo_hdr(hdr, l3, len_to_icrc, false);
		crc = dpv_crc32_update_sb8(0xffffffffu, hdr, 8 + m);
		crc = dpv_crc32_update_sb8(crc, l3 + m, len_to_icrc - m);
		return ~crc;
	}
	crc = sb8_step(0xffffffffu, 0xffffffffu, 0xffffffffu); /* the 8 ones */
	for (uint32_t i = 0; i < m; i += 8)
		crc = sb8_step(crc, ld32le(l3 + i) | ld32le(mask + i),
			       ld32le(l3 + i + 4) | ld32le(mask + i + 4));
	return ~dpv_crc32_update_sb8(crc, l3 + m, len_to_icrc - m);
}

/*
 * The pseudo-header is built in whole 16-byte blocks (8 + 40 = 48 bytes
 * for IPv4 without options) so that the folding state runs on from it into
 * the frame without a reduction in between. dpv_crc_clmul.c builds the
 * common headers in registers and comes here for the others (IPv4 options,
 * frames shorter than the headers, anything that is not IP).
 */
uint32_t dpv_icrc_compute_pseudo(const uint8_t *l3, uint32_t len_to_icrc, enum dpv_crc_impl impl)
{
	uint8_t hdr[ICRC_PSEUDO_MAX];
	uint32_t m = icrc_pseudo_hdr(hdr, l3, len_to_icrc, true);
	uint32_t hlen = 8 + m;

	if (hlen & 15) /* short frame: all of it is in hdr */
		return ~dpv_crc32_update_with(impl, 0xffffffffu, hdr, hlen);
	if (impl == DPV_CRC_VPCLMUL)
		return ~dpv_crc32_update_vpclmul2(0xffffffffu, hdr, hlen, l3 + m,
						  len_to_icrc - m);
	if (impl == DPV_CRC_CLMUL)
		return ~dpv_crc32_update_clmul2(0xffffffffu, hdr, hlen, l3 + m, len_to_icrc - m);
	return dpv_icrc_compute_sb8(l3, len_to_icrc);
}

/* ---- selection ---- */

static int crc_impl = -1; /* enum dpv_crc_impl once chosen */

/*
 * The widest implementation the CPU has, unless DPVERBS_CRC names another
 * supported one (A/B measurements, exercising the fallback). A name that
 * is unknown or not supported here is reported once on stderr and ignored.
 */
static enum dpv_crc_impl crc_select(void)
{
	const char *want = getenv("DPVERBS_CRC");
	int impl = DPV_CRC_SB8;

	for (int i = DPV_CRC_N_IMPL - 1; i > DPV_CRC_SB8; i--) {
		if (dpv_crc_impl_supported((enum dpv_crc_impl)i)) {
			impl = i;
			break;
		}
	}
	if (want && *want) {
		int i;

		for (i = 0; i < DPV_CRC_N_IMPL; i++)
			if (!strcmp(want, dpv_crc_impl_name((enum dpv_crc_impl)i)))
				break;
		if (i < DPV_CRC_N_IMPL && dpv_crc_impl_supported((enum dpv_crc_impl)i))
			impl = i;
		else if (__atomic_load_n(&crc_impl, __ATOMIC_RELAXED) < 0)
			fprintf(stderr,
				"dpverbs: DPVERBS_CRC=%s is not an implementation this CPU "
				"has (slicing-by-8, pclmulqdq, vpclmulqdq-avx512); using %s\n",
				want, dpv_crc_impl_name((enum dpv_crc_impl)impl));
	}
	__atomic_store_n(&crc_impl, impl, __ATOMIC_RELAXED);
	return (enum dpv_crc_impl)impl;
}

/* chosen once before main() (see dpv_crc32_init); the check covers callers
 * from constructors that run earlier */
static inline enum dpv_crc_impl crc_impl_get(void)
{
	int impl = __atomic_load_n(&crc_impl, __ATOMIC_RELAXED);

	if (__builtin_expect(impl < 0, 0))
		return crc_select();
	return (enum dpv_crc_impl)impl;
}

enum dpv_crc_impl dpv_crc_impl_selected(void)
{
	return crc_impl_get();
}

const char *dpv_crc_impl_name(enum dpv_crc_impl impl)
{
	switch (impl) {
	case DPV_CRC_SB8:
		return "slicing-by-8";
	case DPV_CRC_CLMUL:
		return "pclmulqdq";
	case DPV_CRC_VPCLMUL:
		return "vpclmulqdq-avx512";
	case DPV_CRC_N_IMPL:
		break;
	}
	return "?";
}

uint32_t dpv_crc32_update_with(enum dpv_crc_impl impl, uint32_t crc, const void *buf, size_t len)
{
	switch (impl) {
	case DPV_CRC_VPCLMUL:
		return dpv_crc32_update_vpclmul(crc, buf, len);
	case DPV_CRC_CLMUL:
		return dpv_crc32_update_clmul(crc, buf, len);
	default:
		return dpv_crc32_update_sb8(crc, buf, len);
	}
}

uint32_t dpv_icrc_compute_with(enum dpv_crc_impl impl, const uint8_t *l3, uint32_t len_to_icrc)
{
	switch (impl) {
	case DPV_CRC_VPCLMUL:
		return dpv_icrc_compute_vpclmul(l3, len_to_icrc);
	case DPV_CRC_CLMUL:
		return dpv_icrc_compute_clmul(l3, len_to_icrc);
	default:
		return dpv_icrc_compute_sb8(l3, len_to_icrc);
	}
}

uint32_t dpv_crc32_update(uint32_t crc, const void *buf, size_t len)
{
	return dpv_crc32_update_with(crc_impl_get(), crc, buf, len);
}

uint32_t dpv_icrc_compute(const uint8_t *l3, uint32_t len_to_icrc)
{
	return dpv_icrc_compute_with(crc_impl_get(), l3, len_to_icrc);
}

/*
 * RFC 1071 one's complement sum over the IHL*4 bytes of the header, returned
 * complemented in host order (store it big endian at byte 10).
 * Building: with the checksum field zeroed, the result is the checksum.
 * Checking: over a header carrying its checksum, a correct header gives 0.
 */
uint16_t dpv_ipv4_cksum(const void *iphdr)
{
	const uint8_t *p = iphdr;
	uint32_t hl = (uint32_t)(p[0] & 0xf) * 4;
	uint64_t sum = 0;

	if (hl < DPV_IPV4_HLEN)
		hl = DPV_IPV4_HLEN;
	/* 32-bit words in host order: the one's complement sum does not depend
	 * on the byte order of its words (RFC 1071 2(B)); swap the result */
	for (uint32_t i = 0; i < hl; i += 4) {
		uint32_t w;
		memcpy(&w, p + i, 4);
		sum += w;
	}
	sum = (sum & 0xffffffffu) + (sum >> 32);
	sum = (sum & 0xffffffffu) + (sum >> 32);
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	uint16_t r = (uint16_t)~sum;
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	r = __builtin_bswap16(r);
#endif
	return r;
}
