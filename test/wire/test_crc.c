/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The CRC-32 implementations (lib/wire/dpv_crc.h) against a bit-at-a-time
 * reference:
 *  - every length 0..4096 at every alignment 0..15, with random seeds
 *    (plus 0 and all ones), for the carry-less-multiply version, slicing-by-8
 *    and the dispatcher; each buffer ends where its allocation ends, so
 *    ASan reports any read past it;
 *  - random (seed, alignment, length) cases, the reference computed afresh;
 *  - chained (incremental) use split at every offset of a 4096-byte buffer,
 *    and the two-segment form (a 16-byte-multiple block then anything);
 *  - ICRC: the carry-less-multiply ICRC equals the slicing-by-8 one for
 *    IPv4 (every IHL) and IPv6 headers over every length 0..700, and the
 *    dispatcher picks the carry-less version exactly when the CPU has it.
 * The golden rxe captures are checked by test_icrc and test_captures.
 *
 * usage: test_crc [SEED]
 */
#include <stdlib.h>
#include <string.h>

#include "dpv_crc.h"
#include "dpv_wire.h"
#include "wire_test.h"

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

static bool have_clmul;

/* the implementations under test; clmul only when the CPU has it */
static uint32_t impl_crc(int i, uint32_t crc, const void *p, size_t n)
{
	switch (i) {
	case 0:
		return dpv_crc32_update_sb8(crc, p, n);
	case 1:
		return dpv_crc32_update(crc, p, n);
	default:
		return dpv_crc32_update_clmul(crc, p, n);
	}
}

static int n_impls(void)
{
	return have_clmul ? 3 : 2;
}

static const char *const impl_names[] = { "sb8", "dispatch", "clmul" };

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
				for (int i = 0; i < n_impls(); i++) {
					uint32_t got = impl_crc(i, seeds[s], p, len);

					n++;
					if (got != ref && bad++ < 10)
						CHECK(got == ref,
						      "%s align %u len %zu seed 0x%08x: 0x%08x != 0x%08x",
						      impl_names[i], align, len, seeds[s], got, ref);
				}
				free(blk);
				if (len < MAXLEN)
					ref = bit_step(ref, src[len]);
			}
		}
	}
	CHECK(bad == 0, "%ld of %ld length/alignment/seed cases differ", bad, n);
	printf("all lengths 0..%d x alignments 0..15 x 4 seeds x %d implementations: %ld cases\n",
	       MAXLEN, n_impls(), n);
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
		for (int i = 0; i < n_impls(); i++) {
			uint32_t a = impl_crc(i, seed, blk, len);
			uint32_t b = impl_crc(i, seed, buf + align, len);

			if ((a != ref || b != ref) && bad++ < 10)
				CHECK(0, "%s len %zu align %u seed 0x%08x: 0x%08x 0x%08x != 0x%08x",
				      impl_names[i], len, align, seed, a, b, ref);
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

	for (int i = 0; i < n_impls(); i++) {
		for (size_t cut = 0; cut <= MAXLEN; cut++) {
			uint32_t c = impl_crc(i, seed, src, cut);

			c = impl_crc(i, c, src + cut, MAXLEN - cut);
			if (c != ref && bad++ < 10)
				CHECK(0, "%s split at %zu: 0x%08x != 0x%08x", impl_names[i], cut, c,
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
				CHECK(0, "%s split at %zu, %zu", impl_names[i], c1, c2);
		}
	}
	CHECK(bad == 0, "%ld chained splits differ", bad);
}

/* dpv_crc32_update_clmul2: a (whole blocks) and b in separate buffers */
static void test_two_segments(const uint8_t *src)
{
	long bad = 0;

	if (!have_clmul)
		return;
	for (size_t alen = 0; alen <= 256; alen += 16) {
		for (size_t blen = 0; blen <= 600; blen++) {
			uint32_t seed = rnd();
			uint8_t *a = malloc(alen ? alen : 1), *b = malloc(blen ? blen : 1);
			uint32_t ref = crc_bitwise(crc_bitwise(seed, src, alen), src + alen, blen);
			uint32_t got;

			memcpy(a, src, alen);
			memcpy(b, src + alen, blen);
			got = dpv_crc32_update_clmul2(seed, a, alen, b, blen);
			if (got != ref && bad++ < 10)
				CHECK(0, "clmul2 alen %zu blen %zu: 0x%08x != 0x%08x", alen, blen, got,
				      ref);
			free(a);
			free(b);
		}
	}
	CHECK(bad == 0, "%ld two-segment cases differ", bad);
}

/* random IP/UDP/BTH-looking headers: ICRC clmul == sb8 == dispatcher */
static void test_icrc_impls(void)
{
	long bad = 0, n = 0;

	for (int ver = 4; ver <= 6; ver += 2) {
		for (unsigned ihl = 0; ihl < 16; ihl++) {
			if (ver == 6 && ihl)
				break;
			for (uint32_t len = 0; len <= 700; len++) {
				uint8_t *l3 = malloc(len ? len : 1);
				uint32_t a, b, c;

				for (uint32_t i = 0; i < len; i++)
					l3[i] = (uint8_t)rnd();
				if (len)
					l3[0] = (uint8_t)(ver << 4 | (ver == 4 ? ihl : (l3[0] & 0xf)));
				a = dpv_icrc_compute_sb8(l3, len);
				b = dpv_icrc_compute(l3, len);
				c = have_clmul ? dpv_icrc_compute_clmul(l3, len) : a;
				n++;
				if ((a != b || a != c) && bad++ < 10)
					CHECK(0, "ICRC v%d ihl %u len %u: sb8 0x%08x dispatch 0x%08x clmul 0x%08x",
					      ver, ihl, len, a, b, c);
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
	have_clmul = dpv_crc32_clmul_supported();
	printf("carry-less multiply %s; dpv_crc32_update uses %s\n",
	       have_clmul ? "available" : "not available",
	       dpv_crc_impl_name(dpv_crc_impl_selected()));
	CHECK(dpv_crc_impl_selected() == (have_clmul ? DPV_CRC_CLMUL : DPV_CRC_SB8),
	      "dispatcher picks the carry-less version exactly when the CPU has it");
	for (size_t i = 0; i < MAXLEN; i++)
		src[i] = (uint8_t)rnd();
	test_all_lengths(src);
	test_random_cases();
	test_chained(src);
	test_two_segments(src);
	test_icrc_impls();
	free(src);
	return t_done();
}
