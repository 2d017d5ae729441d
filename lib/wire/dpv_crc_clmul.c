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
 *  - four 128-bit accumulators each fold by 512 bits per 64 bytes, so the
 *    four multiplication chains run in parallel; they are then folded into
 *    one (by 384, 256 and 128 bits) and the remaining blocks fold by 128;
 *  - a last partial block (1..15 bytes) is handled by shifting the state:
 *    its first len bytes become a block of their own (leading zeros do not
 *    change a CRC with zero state) and the rest joins the tail bytes;
 *  - the 128-bit state X is reduced to X x^32 mod P: two folds to 64 bits,
 *    then Barrett reduction.
 * Lengths under 16 with no block before them go to the slicing-by-8 code.
 *
 * Only the functions marked CLMUL_TARGET use PCLMULQDQ/SSE4.1 instructions;
 * the rest of the project keeps the default compiler flags, and callers
 * check dpv_crc32_clmul_supported() first.
 */
#include <string.h>

#include "dpv_crc.h"

#if defined(__x86_64__)

#include <immintrin.h>

#include "dpv_crc_consts.h"

#define CLMUL_TARGET __attribute__((target("pclmul,sse4.1")))

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

bool dpv_crc32_clmul_supported(void)
{
	__builtin_cpu_init();
	return __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1");
}

CLMUL_TARGET static inline __m128i ld(const uint8_t *p)
{
	return _mm_loadu_si128((const __m128i *)p);
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
	const __m128i kr = _mm_set_epi64x((long long)DPV_CRC_RED_B, (long long)DPV_CRC_RED_A);
	const __m128i kb = _mm_set_epi64x((long long)DPV_CRC_POLY, (long long)DPV_CRC_MU);
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
 */
CLMUL_TARGET static inline __m128i fold_bytes(__m128i x, const uint8_t *p, size_t len, bool whole)
{
	const __m128i k128 = _mm_set_epi64x((long long)DPV_CRC_K128_HI, (long long)DPV_CRC_K128_LO);

	if (len >= 64) {
		const __m128i k512 = _mm_set_epi64x((long long)DPV_CRC_K512_HI,
						    (long long)DPV_CRC_K512_LO);
		const __m128i k384 = _mm_set_epi64x((long long)DPV_CRC_K384_HI,
						    (long long)DPV_CRC_K384_LO);
		const __m128i k256 = _mm_set_epi64x((long long)DPV_CRC_K256_HI,
						    (long long)DPV_CRC_K256_LO);
		__m128i x0 = _mm_xor_si128(fold(x, k128), ld(p));
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

CLMUL_TARGET uint32_t dpv_crc32_update_clmul2(uint32_t crc, const void *a, size_t alen,
					      const void *b, size_t blen)
{
	const uint8_t *pa = a, *pb = b;
	__m128i x;

	if (alen) {
		x = _mm_xor_si128(ld(pa), _mm_cvtsi32_si128((int)crc));
		if (alen > 16)
			x = fold_bytes(x, pa + 16, alen - 16, true);
		if (blen)
			x = fold_bytes(x, pb, blen, blen >= 16);
		return reduce(x);
	}
	if (blen < 16)
		return dpv_crc32_update_sb8(crc, pb, blen);
	x = _mm_xor_si128(ld(pb), _mm_cvtsi32_si128((int)crc));
	if (blen > 16)
		x = fold_bytes(x, pb + 16, blen - 16, true);
	return reduce(x);
}

uint32_t dpv_crc32_update_clmul(uint32_t crc, const void *buf, size_t len)
{
	return dpv_crc32_update_clmul2(crc, NULL, 0, buf, len);
}

#else /* not x86-64: never selected; defined so that tests and tools link */

bool dpv_crc32_clmul_supported(void)
{
	return false;
}

uint32_t dpv_crc32_update_clmul2(uint32_t crc, const void *a, size_t alen, const void *b,
				 size_t blen)
{
	crc = dpv_crc32_update_sb8(crc, a, alen);
	return dpv_crc32_update_sb8(crc, b, blen);
}

uint32_t dpv_crc32_update_clmul(uint32_t crc, const void *buf, size_t len)
{
	return dpv_crc32_update_sb8(crc, buf, len);
}

#endif
