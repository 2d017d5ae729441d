/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The CRC-32 implementations (lib/wire/dpv_crc.h: slicing-by-8, PCLMULQDQ,
 * VPCLMULQDQ, each where the CPU has it) and the dispatcher against a
 * bit-at-a-time reference:
 *  - every length 0..4096 at every alignment 0..15, with random seeds
 *    (plus 0 and all ones); each buffer ends where its allocation ends, so
 *    ASan reports any read past it;
 *  - random (seed, alignment, length) cases, the reference computed afresh;
 *  - chained (incremental) use split at every offset of a 4096-byte buffer,
 *    and the two-segment form (a 16-byte-multiple block then anything);
 *  - the two-segment form of both carry-less versions;
 *  - ICRC: every implementation equals a bitwise reference ICRC built from
 *    the spec's wording, for IPv4 (every IHL), IPv6 and non-IP first bytes
 *    over every length 0..1100 (random contents), and the
 *    dispatcher picks the widest implementation the CPU has (or the one
 *    DPVERBS_CRC names: meson runs this test again with the fallback
 *    forced).
 * The golden rxe captures are checked by test_icrc and test_captures.
 *
 * usage: test_crc [SEED]
 */
#include <stdlib.h>
#include <string.h>

#include "dpv_crc.h"
#include "dpv_wire.h"
#include "dpvt_wire.h"

#define MAXLEN 4096

static uint64_t rng_state;

static uint32_t rnd(void)
{
	/* xorshift64* */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return (uint32_t)((rng_state * 0x2545F4914F6CDD1Dull) >> 32);
}

static uint32_t bit_step(uint32_t crc, uint8_t b)
{
	crc ^= b;
	for (int k = 0; k < 8; k++)
		crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1)));
	return crc;
}

static uint32_t crc_bitwise(uint32_t crc, const uint8_t *p, size_t n)
{
	while (n--)
		crc = bit_step(crc, *p++);
	return crc;
}

/* under test: the dispatcher, then each implementation this CPU has */
#define N_UT (1 + DPV_CRC_N_IMPL)
static bool ut_on[N_UT];
static const char *ut_name[N_UT];

static uint32_t impl_crc(int i, uint32_t crc, const void *p, size_t n)
{
	if (i == 0)
		return dpv_crc32_update(crc, p, n);
	return dpv_crc32_update_with((enum dpv_crc_impl)(i - 1), crc, p, n);
}

static uint32_t impl_icrc(int i, const uint8_t *l3, uint32_t n)
{
	if (i == 0)
		return dpv_icrc_compute(l3, n);
	return dpv_icrc_compute_with((enum dpv_crc_impl)(i - 1), l3, n);
}

/*
 * Every length at every alignment: for one alignment and seed, the
 * reference runs once along the source (prefix CRCs), and each length is
 * copied to the end of its own allocation of exactly align + len bytes.
 */
static void test_all_lengths(const uint8_t *src)
{
	long bad = 0, n = 0;

	for (unsigned align = 0; align < 16 && bad < 10; align++) {
		uint32_t seeds[4] = { 0xffffffffu, 0, rnd(), rnd() };

		for (unsigned s = 0; s < 4; s++) {
			uint32_t ref = seeds[s];

			for (size_t len = 0; len <= MAXLEN; len++) {
				uint8_t *blk = malloc(align + len + 1);
				uint8_t *p = blk + align;

				memcpy(p, src, len);
				for (int i = 0; i < N_UT; i++) {
					uint32_t got;

					if (!ut_on[i])
						continue;
					got = impl_crc(i, seeds[s], p, len);
					n++;
					if (got != ref && bad++ < 10)
						CHECK(got == ref,
						      "%s align %u len %zu seed 0x%08x: 0x%08x != 0x%08x",
						      ut_name[i], align, len, seeds[s], got, ref);
				}
				free(blk);
				if (len < MAXLEN)
					ref = bit_step(ref, src[len]);
			}
		}
	}
	CHECK(bad == 0, "%ld of %ld length/alignment/seed cases differ", bad, n);
	printf("all lengths 0..%d x alignments 0..15 x 4 seeds: %ld cases\n", MAXLEN, n);
}

/*
 * Exact allocations (data starts and ends at the allocation's edges) and a
 * fresh reference for random seeds, alignments and lengths.
 */
static void test_random_cases(void)
{
	long bad = 0;

	for (int t = 0; t < 20000; t++) {
		size_t len = t < 4097 ? (size_t)t : rnd() % (MAXLEN + 1);
		unsigned align = rnd() % 16;
		uint32_t seed = rnd();
		uint8_t *blk = malloc(len ? len : 1);
		uint8_t *buf = malloc(align + len + 1);
		uint32_t ref;

		for (size_t i = 0; i < len; i++)
			blk[i] = (uint8_t)rnd();
		memcpy(buf + align, blk, len);
		ref = crc_bitwise(seed, blk, len);
		for (int i = 0; i < N_UT; i++) {
			uint32_t a, b;

			if (!ut_on[i])
				continue;
			a = impl_crc(i, seed, blk, len);
			b = impl_crc(i, seed, buf + align, len);
			if ((a != ref || b != ref) && bad++ < 10)
				CHECK(0, "%s len %zu align %u seed 0x%08x: 0x%08x 0x%08x != 0x%08x",
				      ut_name[i], len, align, seed, a, b, ref);
		}
		free(blk);
		free(buf);
	}
	CHECK(bad == 0, "%ld random cases differ", bad);
}

/* chained updates split at every offset, and three-way splits */
static void test_chained(const uint8_t *src)
{
	long bad = 0;
	uint32_t seed = rnd();
	uint32_t ref = crc_bitwise(seed, src, MAXLEN);

	for (int i = 0; i < N_UT; i++) {
		if (!ut_on[i])
			continue;
		for (size_t cut = 0; cut <= MAXLEN; cut++) {
			uint32_t c = impl_crc(i, seed, src, cut);

			c = impl_crc(i, c, src + cut, MAXLEN - cut);
			if (c != ref && bad++ < 10)
				CHECK(0, "%s split at %zu: 0x%08x != 0x%08x", ut_name[i], cut, c,
				      ref);
		}
		for (int t = 0; t < 2000; t++) {
			size_t c1 = rnd() % (MAXLEN + 1), c2 = rnd() % (MAXLEN + 1), tmp;
			uint32_t c;

			if (c1 > c2) {
				tmp = c1;
				c1 = c2;
				c2 = tmp;
			}
			c = impl_crc(i, seed, src, c1);
			c = impl_crc(i, c, src + c1, c2 - c1);
			c = impl_crc(i, c, src + c2, MAXLEN - c2);
			if (c != ref && bad++ < 10)
				CHECK(0, "%s split at %zu, %zu", ut_name[i], c1, c2);
		}
	}
	CHECK(bad == 0, "%ld chained splits differ", bad);
}

/* dpv_crc32_update_{clmul,vpclmul}2: a (whole blocks) and b in separate buffers */
static void test_two_segments(const uint8_t *src)
{
	long bad = 0;

	for (int w = 0; w < 2; w++) {
		if (!dpv_crc_impl_supported(w ? DPV_CRC_VPCLMUL : DPV_CRC_CLMUL))
			continue;
		for (size_t alen = 0; alen <= 512; alen += 16) {
			for (size_t blen = 0; blen <= 700; blen++) {
				uint32_t seed = rnd();
				uint8_t *a = malloc(alen ? alen : 1), *b = malloc(blen ? blen : 1);
				uint32_t ref = crc_bitwise(crc_bitwise(seed, src, alen), src + alen,
							   blen);
				uint32_t got;

				memcpy(a, src, alen);
				memcpy(b, src + alen, blen);
				got = w ? dpv_crc32_update_vpclmul2(seed, a, alen, b, blen) :
					  dpv_crc32_update_clmul2(seed, a, alen, b, blen);
				if (got != ref && bad++ < 10)
					CHECK(0, "%s2 alen %zu blen %zu: 0x%08x != 0x%08x",
					      w ? "vpclmul" : "clmul", alen, blen, got, ref);
				free(a);
				free(b);
			}
		}
	}
	CHECK(bad == 0, "%ld two-segment cases differ", bad);
}

/*
 * The ICRC as IBA A17.3.3 words it, written independently of lib/wire: a
 * copy with 8 bytes of ones in front and the variant fields set to ones
 * (as far as the frame reaches), the bitwise CRC, inverted.
 */
static uint32_t icrc_ref(const uint8_t *l3, uint32_t len)
{
	uint8_t *b = malloc(8 + (size_t)len), *h = b + 8;
	uint32_t iphl, crc;
	bool v6;

	memset(b, 0xff, 8);
	memcpy(h, l3, len);
	if (len) {
		v6 = (l3[0] >> 4) == 6;
		iphl = v6 ? 40 : (uint32_t)(l3[0] & 0xf) * 4;
		const uint32_t ones4[] = { 1, 8, 10, 11 }, ones6[] = { 1, 2, 3, 7 };
		const uint32_t *ip = v6 ? ones6 : ones4;
		const uint32_t tail[] = { iphl + 6, iphl + 7, iphl + 8 + 4 };

		if (v6)
			h[0] |= 0x0f;
		for (int i = 0; i < 4; i++)
			if (ip[i] < len)
				h[ip[i]] = 0xff;
		for (int i = 0; i < 3; i++)
			if (tail[i] < len)
				h[tail[i]] = 0xff;
	}
	crc = ~crc_bitwise(0xffffffffu, b, 8 + (size_t)len);
	free(b);
	return crc;
}

/*
 * Random IP/UDP/BTH-looking headers (IPv4 with every IHL, IPv6, and other
 * version nibbles) at the end of exact allocations: every implementation
 * and the dispatcher give the reference ICRC.
 */
static void test_icrc_impls(void)
{
	static const uint8_t first[] = { 0x40, 0x60, 0x00, 0x70 };
	long bad = 0, n = 0;

	for (unsigned v = 0; v < sizeof(first); v++) {
		for (unsigned ihl = 0; ihl < 16; ihl++) {
			if (first[v] != 0x40 && ihl)
				break;
			for (uint32_t len = 0; len <= 1100; len++) {
				uint8_t *l3 = malloc(len ? len : 1);
				uint32_t ref;

				for (uint32_t i = 0; i < len; i++)
					l3[i] = (uint8_t)rnd();
				if (len)
					l3[0] = (uint8_t)(first[v] | (first[v] == 0x40 ? ihl : (l3[0] & 0xf)));
				ref = icrc_ref(l3, len);
				for (int i = 0; i < N_UT; i++) {
					uint32_t got;

					if (!ut_on[i])
						continue;
					got = impl_icrc(i, l3, len);
					n++;
					if (got != ref && bad++ < 10)
						CHECK(0, "%s ICRC 0x%02x len %u: 0x%08x != 0x%08x",
						      ut_name[i], l3[0], len, got, ref);
				}
				free(l3);
			}
		}
	}
	CHECK(bad == 0, "%ld of %ld ICRC cases differ", bad, n);
}

int main(int argc, char **argv)
{
	uint8_t *src = malloc(MAXLEN);

	rng_state = argc > 1 ? strtoull(argv[1], NULL, 0) : 0x9E3779B97F4A7C15ull;
	if (!rng_state)
		rng_state = 1;
	printf("seed 0x%llx\n", (unsigned long long)rng_state);
	ut_on[0] = true;
	ut_name[0] = "dispatch";
	for (int i = 0; i < DPV_CRC_N_IMPL; i++) {
		ut_on[1 + i] = dpv_crc_impl_supported((enum dpv_crc_impl)i);
		ut_name[1 + i] = dpv_crc_impl_name((enum dpv_crc_impl)i);
		printf("%-18s %s\n", ut_name[1 + i], ut_on[1 + i] ? "tested" : "not on this CPU");
	}
	printf("dpv_crc32_update uses %s\n", dpv_crc_impl_name(dpv_crc_impl_selected()));
	CHECK(ut_on[0 + 1], "slicing-by-8 is always supported");
	{
		const char *env = getenv("DPVERBS_CRC");
		int best = DPV_CRC_SB8;

		for (int i = 0; i < DPV_CRC_N_IMPL; i++)
			if (ut_on[1 + i])
				best = i;
		for (int i = 0; env && i < DPV_CRC_N_IMPL; i++)
			if (ut_on[1 + i] && !strcmp(env, ut_name[1 + i]))
				best = i;
		CHECK((int)dpv_crc_impl_selected() == best,
		      "dispatcher picks the widest implementation the CPU has, or DPVERBS_CRC's");
	}
	for (size_t i = 0; i < MAXLEN; i++)
		src[i] = (uint8_t)rnd();
	test_all_lengths(src);
	test_random_cases();
	test_chained(src);
	test_two_segments(src);
	test_icrc_impls();
	free(src);
	return dpvt_finish();
}
