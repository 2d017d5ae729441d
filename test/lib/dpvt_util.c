/* SPDX-License-Identifier: BSD-3-Clause */
/* Time, deterministic payloads, byte helpers and checksums (dpvt_check.h). */
#include <time.h>

#include "dpvt_check.h"

uint64_t dpvt_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

void dpvt_sleep_ms(unsigned int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* ---- payloads ---- */

uint64_t dpvt_mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

static uint8_t pattern_byte(unsigned int seed, size_t i)
{
	return (uint8_t)(seed * 31u + i * 7u + (i >> 8));
}

void dpvt_fill_pattern(uint8_t *p, size_t n, unsigned int seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = pattern_byte(seed, i);
}

long dpvt_check_pattern(const uint8_t *p, size_t n, unsigned int seed)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != pattern_byte(seed, i))
			return (long)i;
	return -1;
}

static uint64_t pat_word(uint64_t base, uint64_t seq, uint64_t k)
{
	if (k == 0)
		return seq;
	uint64_t x = base + k * 0x9e3779b97f4a7c15ULL;
	x ^= x >> 29;
	x *= 0xbf58476d1ce4e5b9ULL;
	return x ^ (x >> 32);
}

static uint64_t pat_base(uint64_t seed, uint64_t seq)
{
	return dpvt_mix64(seed * 0x100000001b3ULL ^ seq);
}

void dpvt_pat_fill(uint8_t *p, size_t len, uint64_t seed, uint64_t seq)
{
	uint64_t base = pat_base(seed, seq);
	size_t k = 0;

	for (; (k + 1) * 8 <= len; k++) {
		uint64_t w = pat_word(base, seq, k);
		memcpy(p + k * 8, &w, 8);
	}
	if (k * 8 < len) {
		uint64_t w = pat_word(base, seq, k);
		memcpy(p + k * 8, &w, len - k * 8);
	}
}

long dpvt_pat_check(const uint8_t *p, size_t len, uint64_t seed, uint64_t seq)
{
	uint64_t base = pat_base(seed, seq);
	size_t k = 0;

	for (; (k + 1) * 8 <= len; k++) {
		uint64_t w = pat_word(base, seq, k), g;
		memcpy(&g, p + k * 8, 8);
		if (g != w) {
			for (size_t j = 0; j < 8; j++)
				if (((const uint8_t *)&g)[j] != ((const uint8_t *)&w)[j])
					return (long)(k * 8 + j);
		}
	}
	if (k * 8 < len) {
		uint64_t w = pat_word(base, seq, k);
		for (size_t j = 0; j < len - k * 8; j++)
			if (p[k * 8 + j] != ((const uint8_t *)&w)[j])
				return (long)(k * 8 + j);
	}
	return -1;
}

/* ---- bytes and checksums ---- */

uint16_t dpvt_inet_csum(const uint8_t *p, size_t len, uint32_t initial)
{
	uint64_t s = initial;
	size_t i;

	for (i = 0; i + 1 < len; i += 2)
		s += dpvt_get16(p + i);
	if (i < len)
		s += (uint32_t)p[i] << 8;
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)~s;
}

uint16_t dpvt_icmp6_csum(const uint8_t *ip6, const uint8_t *icmp, uint32_t len)
{
	uint32_t s = 0;

	for (int i = 8; i < 40; i += 2) /* source and destination addresses */
		s += dpvt_get16(ip6 + i);
	s += len + 58; /* upper-layer length, next header */
	return dpvt_inet_csum(icmp, len, s);
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

uint32_t dpvt_unhex(const char *s, uint8_t *out, uint32_t max)
{
	uint32_t n = 0;
	int hi = -1;

	for (; *s; s++) {
		int v = hexval(*s);

		if (v < 0)
			continue;
		if (hi < 0) {
			hi = v;
		} else {
			if (n < max)
				out[n] = (uint8_t)(hi << 4 | v);
			n++;
			hi = -1;
		}
	}
	return n;
}
