/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * dpverbs test library, checks and small utilities (libdpvtest_check.a).
 *
 * Every C test counts its assertions with CHECK() and friends and ends with
 * `return dpvt_finish();`, which prints the last line "N passed, N failed"
 * and gives the exit status (0 when nothing failed). A failed check prints
 * "FAIL file:line: expression: message" on stderr (stdout is flushed first,
 * so the two streams stay in order in a log). The counters are atomic: checks
 * may run on several threads.
 *
 * This part depends on nothing but libc; the verbs part (dpvt_verbs.h) and
 * the wire part (dpvt_wire.h) build on it.
 */
#ifndef DPVT_CHECK_H
#define DPVT_CHECK_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Counts one passed check when ok; returns ok. Used by the CHECK macros. */
bool dpvt_result(bool ok);

/**
 * Counts one failed check and prints "FAIL file:line: expr: " followed by
 * the printf-style message; returns false. Used by the CHECK macros.
 */
bool dpvt_fail(const char *file, int line, const char *expr, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/**
 * A check that exposes a known library bug failed: counted as "known" (not
 * failed) when DPVERBS_FUNC_XFAIL=1 is in the environment, else as failed.
 * Returns false. Used by KNOWN_BUG().
 */
bool dpvt_known_bug(const char *file, int line, const char *expr, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/**
 * CHECK(cond, fmt, ...): one assertion. Evaluates cond once; the message
 * arguments are evaluated only when cond is false. An expression of type
 * bool (the outcome), usable as a statement.
 */
#define CHECK(cond, ...) dpvt_result((cond) ? true : dpvt_fail(__FILE__, __LINE__, #cond, __VA_ARGS__))

/** CHECK_EQ(a, b, what): a == b, compared as long long; prints both values. */
#define CHECK_EQ(a, b, what)                                                                     \
	do {                                                                                     \
		long long _dpvt_a = (long long)(a), _dpvt_b = (long long)(b);                    \
		CHECK(_dpvt_a == _dpvt_b, "%s: got %lld, expected %lld", what, _dpvt_a, _dpvt_b); \
	} while (0)

/** CHECK_NULL_ERRNO(expr, e): errno cleared, expr returns NULL and sets errno e. */
#define CHECK_NULL_ERRNO(expr, e)                                                                \
	do {                                                                                     \
		errno = 0;                                                                       \
		void *_dpvt_p = (void *)(expr);                                                  \
		int _dpvt_e = errno;                                                             \
		CHECK(_dpvt_p == NULL && _dpvt_e == (e),                                         \
		      "%s: got %p errno %d (%s), expected NULL errno %d", #expr, _dpvt_p, _dpvt_e, \
		      strerror(_dpvt_e), (e));                                                   \
	} while (0)

/** CHECK_RET_ERRNO(expr, ret, e): errno cleared, expr returns ret (an integer) and sets errno e. */
#define CHECK_RET_ERRNO(expr, ret, e)                                                            \
	do {                                                                                     \
		errno = 0;                                                                       \
		long long _dpvt_r = (long long)(expr);                                           \
		int _dpvt_e = errno;                                                             \
		CHECK(_dpvt_r == (long long)(ret) && _dpvt_e == (e),                             \
		      "%s: got %lld errno %d (%s), expected %lld errno %d", #expr, _dpvt_r,        \
		      _dpvt_e, strerror(_dpvt_e), (long long)(ret), (e));                        \
	} while (0)

/**
 * KNOWN_BUG(cond, fmt, ...): a check that exposes a known library bug. It
 * counts as a failure (so the bug stays visible) unless DPVERBS_FUNC_XFAIL=1
 * is set in the environment; then it is counted as "known" instead.
 */
#define KNOWN_BUG(cond, ...) dpvt_result((cond) ? true : dpvt_known_bug(__FILE__, __LINE__, #cond, __VA_ARGS__))

/** Checks passed so far. */
int dpvt_pass_count(void);
/** Checks failed so far (known bugs tolerated by DPVERBS_FUNC_XFAIL excluded). */
int dpvt_fail_count(void);

/**
 * Prints "(N known bugs tolerated by DPVERBS_FUNC_XFAIL)" when there were
 * any, then "N passed, N failed" on stdout, flushed.
 * @return the exit status for main(): 1 if a check failed, else 0.
 */
int dpvt_finish(void);

/* ---- time ---- */

/** CLOCK_MONOTONIC in milliseconds. */
uint64_t dpvt_now_ms(void);
/** Sleeps ms milliseconds (restarted after signals). */
void dpvt_sleep_ms(unsigned int ms);

/* ---- deterministic payloads ---- */

/** SplitMix64 finaliser: a well-mixed 64-bit hash of x. */
uint64_t dpvt_mix64(uint64_t x);

/** Fills n bytes with a simple byte pattern of seed (byte i depends on seed and i). */
void dpvt_fill_pattern(uint8_t *p, size_t n, unsigned int seed);
/** Offset of the first byte that differs from dpvt_fill_pattern(seed), or -1. */
long dpvt_check_pattern(const uint8_t *p, size_t n, unsigned int seed);

/**
 * Fills len bytes with message seq of the stream seed: 64-bit word 0 is seq
 * (little-endian host order), the following words a hash of (seed, seq,
 * word index); a tail shorter than a word holds the start of the next word.
 */
void dpvt_pat_fill(uint8_t *p, size_t len, uint64_t seed, uint64_t seq);
/** Offset of the first byte that differs from dpvt_pat_fill(seed, seq), or -1. */
long dpvt_pat_check(const uint8_t *p, size_t len, uint64_t seed, uint64_t seq);

/* ---- bytes ---- */

/** Big-endian 16-bit load. */
static inline uint16_t dpvt_get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

/** Big-endian 16-bit store. */
static inline void dpvt_put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

/**
 * Internet checksum (RFC 1071) of len bytes at p, added to the partial sum
 * initial (0, or a pseudo-header sum); returns the complemented result.
 * An independent implementation: the tests check lib/wire with it.
 */
uint16_t dpvt_inet_csum(const uint8_t *p, size_t len, uint32_t initial);

/**
 * ICMPv6 checksum of len bytes at icmp, with the pseudo-header of the IPv6
 * header ip6 (source, destination; next header 58). 0 means valid when the
 * checksum field in icmp holds the transmitted value.
 */
uint16_t dpvt_icmp6_csum(const uint8_t *ip6, const uint8_t *icmp, uint32_t len);

/**
 * Decodes hex digits of s into out (anything not a hex digit is skipped, so
 * "52 54 00" and "525400" both work); at most max bytes are written.
 * @return the number of bytes decoded (may exceed max: then out is truncated).
 */
uint32_t dpvt_unhex(const char *s, uint8_t *out, uint32_t max);

#ifdef __cplusplus
}
#endif

#endif /* DPVT_CHECK_H */
