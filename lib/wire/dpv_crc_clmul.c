/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * CRC-32 (reflected 0xEDB88320) by carry-less multiplication: the folding
 * method of Intel's white paper "Fast CRC Computation for Generic
 * Polynomials Using PCLMULQDQ Instruction" (Gopal et al., 2009), written
 * for this project. The constants and the algebra behind them are in
 * dpv_crc_consts.h and its generator, test/wire/gen_crc_consts.c.
 *
 * Outline (bit-reflected domain, 16-byte blocks read little endian):
 *  - the first block is XORed with the incoming CRC register (the register
 *    stands for the message so far times x^32, i.e. it adds to the next
 *    four message bytes);
 *  - PCLMULQDQ (128-bit): four accumulators each fold by 512 bits per 64
 *    bytes, so four multiplication chains run in parallel; they are then
 *    folded into one (by 384, 256 and 128 bits);
 *    VPCLMULQDQ (AVX-512): the same with four 512-bit accumulators of four
 *    blocks each, folding by 2048 bits per 256 bytes, then by 512 bits per
 *    64 bytes, then the four lanes of one register into one block;
 *  - the remaining whole blocks fold by 128 bits; a last partial block
 *    (1..15 bytes) is handled by shifting the state: its first len bytes
 *    become a block of their own (leading zeros do not change a CRC with
 *    zero state) and the rest joins the tail bytes;
 *  - the 128-bit state X is reduced to X x^32 mod P: two folds to 64 bits,
 *    then Barrett reduction.
 * Lengths under 16 with no block before them go to the slicing-by-8 code.
 *
 * The RoCEv2 ICRC (IBA A17.3.3, see dpv_icrc.c) of the common headers
 * (IPv4 without options, IPv6) is built in registers: 8 bytes of ones and
 * the first bytes of the IP header form the first block, the variant
 * fields are ORed with ones as the blocks are loaded, and the fold runs on
 * into the rest of the frame. Other headers go through dpv_icrc.c's
 * pseudo-header buffer and the two-segment form.
 *
 * Only functions marked CLMUL_TARGET / WIDE_TARGET use those instructions;
 * the rest of the project keeps the default compiler flags, and callers
 * check dpv_crc_impl_supported() first.
 */
#include <string.h>

#include "dpv_crc.h"

#if defined(__x86_64__)

#include <immintrin.h>

#include "dpv_crc_consts.h"

#define CLMUL_TARGET __attribute__((target("pclmul,sse4.1")))
#define WIDE_TARGET                                                            \
	__attribute__((target("pclmul,sse4.1,avx2,avx512f,avx512vl,vpclmulqdq")))

/*
 * pshufb controls: loaded at offset len, bytes 0..15 shift a vector up
 * (towards byte 15) by 16 - len bytes; loaded at 16 + len they shift it
 * down by len bytes. 0x80 selects a zero byte.
 */
static const uint8_t shift_tab[48] __attribute__((aligned(16))) = {
	0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
	0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
	0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
	0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
	0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
};

static bool cpu_has_clmul(void)
{
	__builtin_cpu_init();
	return __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1");
}

static bool cpu_has_wide(void)
{
	__builtin_cpu_init();
	/* libgcc/compiler-rt also check that the OS saves the AVX-512 state
	 * (XCR0) before they report avx512f */
	return cpu_has_clmul() && __builtin_cpu_supports("avx2") &&
	       __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
	       __builtin_cpu_supports("vpclmulqdq");
}

bool dpv_crc_impl_supported(enum dpv_crc_impl impl)
{
	switch (impl) {
	case DPV_CRC_SB8:
		return true;
	case DPV_CRC_CLMUL:
		return cpu_has_clmul();
	case DPV_CRC_VPCLMUL:
		return cpu_has_wide();
	case DPV_CRC_N_IMPL:
		break;
	}
	return false;
}

CLMUL_TARGET static inline __m128i ld(const uint8_t *p)
{
	return _mm_loadu_si128((const __m128i *)p);
}

CLMUL_TARGET static inline __m128i kpair(uint64_t lo, uint64_t hi)
{
	return _mm_set_epi64x((long long)hi, (long long)lo);
}

/* state k-bits-ahead: lane 0 times k's lane 0, lane 1 times k's lane 1 */
CLMUL_TARGET static inline __m128i fold(__m128i x, __m128i k)
{
	return _mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00),
			     _mm_clmulepi64_si128(x, k, 0x11));
}

/* X x^32 mod P for the 128-bit reflected state X (see gen_crc_consts.c) */
CLMUL_TARGET static inline uint32_t reduce(__m128i x)
{
	const __m128i kr = kpair(DPV_CRC_RED_A, DPV_CRC_RED_B);
	const __m128i kb = kpair(DPV_CRC_MU, DPV_CRC_POLY);
	const __m128i lo32 = _mm_set_epi32(0, 0, 0, -1);
	__m128i y, z, q;

	/* H x^96 + L x^32: H (x^95 mod P) x lands in bits 32..127, L moves
	 * from bits 64..127 to 32..95 */
	y = _mm_xor_si128(_mm_clmulepi64_si128(x, kr, 0x00),
			  _mm_slli_si128(_mm_srli_si128(x, 8), 4));
	/* A x^64 with A in bits 32..63: A (x^63 mod P) x lands in lane 1 */
	z = _mm_xor_si128(_mm_clmulepi64_si128(y, kr, 0x10), y);
	z = _mm_srli_si128(z, 8); /* the 64-bit remainder candidate, lane 0 */
	/* Barrett: q = floor(Zh mu / x^32) in bits 0..31, then Zl + q P */
	q = _mm_and_si128(_mm_clmulepi64_si128(_mm_and_si128(z, lo32), kb, 0x00), lo32);
	z = _mm_xor_si128(z, _mm_clmulepi64_si128(q, kb, 0x10));
	return (uint32_t)_mm_extract_epi32(z, 1);
}

/*
 * Fold every byte of p[0..len) into the state x (which stands for all the
 * message before p). whole says whether p[len-16..len) is readable (p is
 * inside a buffer of at least 16 bytes that ends at p + len).
 * fresh: nothing came before p; x then holds the CRC register in its low
 * 32 bits, XORed into the first block, and len must be at least 16.
 */
CLMUL_TARGET static inline __m128i fold_bytes(__m128i x, const uint8_t *p, size_t len, bool whole,
					      bool fresh)
{
	const __m128i k128 = kpair(DPV_CRC_K128_LO, DPV_CRC_K128_HI);

	if (len >= 64) {
		const __m128i k512 = kpair(DPV_CRC_K512_LO, DPV_CRC_K512_HI);
		const __m128i k384 = kpair(DPV_CRC_K384_LO, DPV_CRC_K384_HI);
		const __m128i k256 = kpair(DPV_CRC_K256_LO, DPV_CRC_K256_HI);
		__m128i x0 = _mm_xor_si128(fresh ? x : fold(x, k128), ld(p));
		__m128i x1 = ld(p + 16), x2 = ld(p + 32), x3 = ld(p + 48);

		p += 64;
		len -= 64;
		while (len >= 64) {
			x0 = _mm_xor_si128(fold(x0, k512), ld(p));
			x1 = _mm_xor_si128(fold(x1, k512), ld(p + 16));
			x2 = _mm_xor_si128(fold(x2, k512), ld(p + 32));
			x3 = _mm_xor_si128(fold(x3, k512), ld(p + 48));
			p += 64;
			len -= 64;
		}
		x = _mm_xor_si128(_mm_xor_si128(fold(x0, k384), fold(x1, k256)),
				  _mm_xor_si128(fold(x2, k128), x3));
	} else if (fresh) {
		x = _mm_xor_si128(x, ld(p));
		p += 16;
		len -= 16;
	}
	while (len >= 16) {
		x = _mm_xor_si128(fold(x, k128), ld(p));
		p += 16;
		len -= 16;
	}
	if (len) {
		/* state bytes s0..s15 then tail t0..t(len-1):
		 *   [0 x (16-len), s0..s(len-1)] and [s(len)..s15, t0..t(len-1)] */
		const __m128i up = ld(shift_tab + len);
		const __m128i down = ld(shift_tab + 16 + len);
		__m128i tail, hi, lo;

		if (whole) {
			tail = ld(p + len - 16);
		} else {
			uint8_t t[16] = { 0 };

			memcpy(t + 16 - len, p, len);
			tail = ld(t);
		}
		hi = _mm_shuffle_epi8(x, up);
		lo = _mm_blendv_epi8(tail, _mm_shuffle_epi8(x, down), up);
		x = _mm_xor_si128(fold(hi, k128), lo);
	}
	return x;
}

/* ---- AVX-512 / VPCLMULQDQ: four blocks per instruction ---- */

WIDE_TARGET static inline __m512i kbcast(uint64_t lo, uint64_t hi)
{
	return _mm512_broadcast_i32x4(_mm_set_epi64x((long long)hi, (long long)lo));
}

WIDE_TARGET static inline __m512i ldw(const uint8_t *p)
{
	return _mm512_loadu_si512((const void *)p);
}

/* fold each of the four lanes of z by k's lane, XOR d */
WIDE_TARGET static inline __m512i foldw(__m512i z, __m512i k, __m512i d)
{
	return _mm512_ternarylogic_epi64(_mm512_clmulepi64_epi128(z, k, 0x00),
					 _mm512_clmulepi64_epi128(z, k, 0x11), d, 0x96);
}

/* fold_bytes() four blocks at a time */
WIDE_TARGET static inline __m128i fold_bytes_wide(__m128i x, const uint8_t *p, size_t len,
						  bool whole, bool fresh)
{
	if (len >= 64) {
		const __m512i k512 = kbcast(DPV_CRC_K512_LO, DPV_CRC_K512_HI);
		/* lane j of the last register folds by 128 (3 - j) bits */
		const __m512i klanes = _mm512_set_epi64(0, 0, (long long)DPV_CRC_K128_HI,
							(long long)DPV_CRC_K128_LO,
							(long long)DPV_CRC_K256_HI,
							(long long)DPV_CRC_K256_LO,
							(long long)DPV_CRC_K384_HI,
							(long long)DPV_CRC_K384_LO);
		__m512i z0 = _mm512_xor_si512(
			ldw(p),
			_mm512_inserti32x4(_mm512_setzero_si512(),
					   fresh ? x : fold(x, kpair(DPV_CRC_K128_LO, DPV_CRC_K128_HI)),
					   0));
		__m512i t;
		__m256i h;

		p += 64;
		len -= 64;
		if (len >= 192) {
			const __m512i k2048 = kbcast(DPV_CRC_K2048_LO, DPV_CRC_K2048_HI);
			__m512i z1 = ldw(p), z2 = ldw(p + 64), z3 = ldw(p + 128);

			p += 192;
			len -= 192;
			while (len >= 256) {
				z0 = foldw(z0, k2048, ldw(p));
				z1 = foldw(z1, k2048, ldw(p + 64));
				z2 = foldw(z2, k2048, ldw(p + 128));
				z3 = foldw(z3, k2048, ldw(p + 192));
				p += 256;
				len -= 256;
			}
			z0 = foldw(z0, kbcast(DPV_CRC_K1536_LO, DPV_CRC_K1536_HI),
				   foldw(z1, kbcast(DPV_CRC_K1024_LO, DPV_CRC_K1024_HI),
					 foldw(z2, k512, z3)));
		}
		while (len >= 64) {
			z0 = foldw(z0, k512, ldw(p));
			p += 64;
			len -= 64;
		}
		/* lanes 0..2 folded onto lane 3 (klanes' lane 3 is 0) */
		t = foldw(z0, klanes, _mm512_setzero_si512());
		h = _mm256_xor_si256(_mm512_castsi512_si256(t), _mm512_extracti64x4_epi64(t, 1));
		x = _mm_xor_si128(_mm_xor_si128(_mm256_castsi256_si128(h),
						_mm256_extracti128_si256(h, 1)),
				  _mm512_extracti32x4_epi32(z0, 3));
		fresh = false;
	}
	return fold_bytes(x, p, len, whole, fresh);
}

/* ---- entry points, one body for both widths ---- */

CLMUL_TARGET static inline __m128i fold_any(__m128i x, const uint8_t *p, size_t len, bool whole,
					    bool fresh, bool wide)
{
	/* fold_bytes_wide() is a call (a wider target cannot be inlined
	 * here); below 64 bytes it would only call fold_bytes() */
	return wide && len >= 64 ? fold_bytes_wide(x, p, len, whole, fresh) :
				   fold_bytes(x, p, len, whole, fresh);
}

CLMUL_TARGET static inline uint32_t crc_two(uint32_t crc, const void *a, size_t alen,
					    const void *b, size_t blen, bool wide)
{
	__m128i x = _mm_cvtsi32_si128((int)crc);

	if (alen) {
		x = fold_any(x, a, alen, true, true, wide);
		if (blen)
			x = fold_any(x, b, blen, blen >= 16, false, wide);
		return reduce(x);
	}
	if (blen < 16)
		return dpv_crc32_update_sb8(crc, b, blen);
	return reduce(fold_any(x, b, blen, true, true, wide));
}

/*
 * ICRC of IPv4 (IHL 5) / IPv6 headers, built in registers; returns the
 * inverted CRC, or falls back to the pseudo-header buffer of dpv_icrc.c.
 */
CLMUL_TARGET static inline uint32_t icrc_regs(const uint8_t *l3, uint32_t len, bool wide)
{
	const uint8_t *mask;
	uint32_t mlen;
	__m128i x;

	if (len >= DPV_ICRC6_MASKED && (l3[0] >> 4) == 6) {
		mask = dpv_icrc6_mask;
		mlen = DPV_ICRC6_MASKED;
	} else if (len >= DPV_ICRC4_MASKED && l3[0] == 0x45) {
		mask = dpv_icrc4_mask;
		mlen = DPV_ICRC4_MASKED;
	} else {
		return dpv_icrc_compute_pseudo(l3, len, wide ? DPV_CRC_VPCLMUL : DPV_CRC_CLMUL);
	}
	/* block 0: 8 bytes of ones (the absent LRH), IP header bytes 0..7;
	 * the initial CRC value (all ones) XORed into the first four ones
	 * leaves 00 00 00 00 ff ff ff ff */
	x = _mm_or_si128(_mm_loadl_epi64((const __m128i *)l3),
			 _mm_loadl_epi64((const __m128i *)mask));
	x = _mm_xor_si128(_mm_slli_si128(x, 8), _mm_set_epi32(0, 0, -1, 0));
	for (uint32_t off = 8; off < mlen; off += 16)
		x = _mm_xor_si128(fold(x, kpair(DPV_CRC_K128_LO, DPV_CRC_K128_HI)),
				  _mm_or_si128(ld(l3 + off), ld(mask + off)));
	/* the rest reads its tail back into the header when short: whole */
	if (len > mlen)
		x = fold_any(x, l3 + mlen, len - mlen, true, false, wide);
	return ~reduce(x);
}

CLMUL_TARGET uint32_t dpv_crc32_update_clmul2(uint32_t crc, const void *a, size_t alen,
					      const void *b, size_t blen)
{
	return crc_two(crc, a, alen, b, blen, false);
}

WIDE_TARGET uint32_t dpv_crc32_update_vpclmul2(uint32_t crc, const void *a, size_t alen,
					       const void *b, size_t blen)
{
	return crc_two(crc, a, alen, b, blen, true);
}

CLMUL_TARGET uint32_t dpv_crc32_update_clmul(uint32_t crc, const void *buf, size_t len)
{
	return crc_two(crc, NULL, 0, buf, len, false);
}

WIDE_TARGET uint32_t dpv_crc32_update_vpclmul(uint32_t crc, const void *buf, size_t len)
{
	return crc_two(crc, NULL, 0, buf, len, true);
}

CLMUL_TARGET uint32_t dpv_icrc_compute_clmul(const uint8_t *l3, uint32_t len_to_icrc)
{
	return icrc_regs(l3, len_to_icrc, false);
}

WIDE_TARGET uint32_t dpv_icrc_compute_vpclmul(const uint8_t *l3, uint32_t len_to_icrc)
{
	return icrc_regs(l3, len_to_icrc, true);
}

#else /* not x86-64: never selected; defined so that tests and tools link */

bool dpv_crc_impl_supported(enum dpv_crc_impl impl)
{
	return impl == DPV_CRC_SB8;
}

uint32_t dpv_crc32_update_clmul2(uint32_t crc, const void *a, size_t alen, const void *b,
				 size_t blen)
{
	crc = dpv_crc32_update_sb8(crc, a, alen);
	return dpv_crc32_update_sb8(crc, b, blen);
}

uint32_t dpv_crc32_update_vpclmul2(uint32_t crc, const void *a, size_t alen, const void *b,
				   size_t blen)
{
	return dpv_crc32_update_clmul2(crc, a, alen, b, blen);
}

uint32_t dpv_crc32_update_clmul(uint32_t crc, const void *buf, size_t len)
{
	return dpv_crc32_update_sb8(crc, buf, len);
}

uint32_t dpv_crc32_update_vpclmul(uint32_t crc, const void *buf, size_t len)
{
	return dpv_crc32_update_sb8(crc, buf, len);
}

uint32_t dpv_icrc_compute_clmul(const uint8_t *l3, uint32_t len_to_icrc)
{
	return dpv_icrc_compute_sb8(l3, len_to_icrc);
}

uint32_t dpv_icrc_compute_vpclmul(const uint8_t *l3, uint32_t len_to_icrc)
{
	return dpv_icrc_compute_sb8(l3, len_to_icrc);
}

#endif
