/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The CRC-32 implementations behind dpv_crc32_update() and
 * dpv_icrc_compute(), one by one, for the tests and the micro-benchmark
 * (apps/dpv_crc_bench/dpv_crc_bench.c). Not installed; the library's users call the
 * dispatching functions in dpv_wire.h, which pick the carry-less-multiply
 * version when the CPU has it and slicing-by-8 otherwise.
 */
#ifndef DPV_CRC_H
#define DPV_CRC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum dpv_crc_impl {
	DPV_CRC_SB8 = 0, /* slicing-by-8 tables: portable, the reference */
	DPV_CRC_CLMUL,   /* PCLMULQDQ folding, 128 bits (x86-64, PCLMUL + SSE4.1) */
	DPV_CRC_VPCLMUL, /* the same with 512-bit VPCLMULQDQ (AVX-512F/VL, AVX2) */
	DPV_CRC_N_IMPL
};

/* The implementation dpv_crc32_update()/dpv_icrc_compute() use here: the
 * last one of the enum that this CPU supports, or the one the environment
 * variable DPVERBS_CRC names by dpv_crc_impl_name() if the CPU supports it
 * (read once, before main()). */
enum dpv_crc_impl dpv_crc_impl_selected(void);
const char *dpv_crc_impl_name(enum dpv_crc_impl impl);
/* Whether this CPU (and OS) can run impl. */
bool dpv_crc_impl_supported(enum dpv_crc_impl impl);

/*
 * Raw CRC-32 updates like dpv_crc32_update() (no pre/post inversion), each
 * reading exactly buf[0..len). Call the carry-less versions only when
 * dpv_crc_impl_supported() says so.
 */
uint32_t dpv_crc32_update_sb8(uint32_t crc, const void *buf, size_t len);
uint32_t dpv_crc32_update_clmul(uint32_t crc, const void *buf, size_t len);
uint32_t dpv_crc32_update_vpclmul(uint32_t crc, const void *buf, size_t len);
/*
 * The CRC of a then b, as if they were contiguous, without reducing the
 * 128-bit folding state in between; alen must be a multiple of 16 (0 is
 * allowed).
 */
uint32_t dpv_crc32_update_clmul2(uint32_t crc, const void *a, size_t alen, const void *b,
				 size_t blen);
uint32_t dpv_crc32_update_vpclmul2(uint32_t crc, const void *a, size_t alen, const void *b,
				   size_t blen);
/* Any implementation by its enum (tests, benchmarks). */
uint32_t dpv_crc32_update_with(enum dpv_crc_impl impl, uint32_t crc, const void *buf,
			       size_t len);

/*
 * dpv_icrc_compute() with one given implementation (see dpv_wire.h). The
 * carry-less versions build IPv4 (IHL 5) and IPv6 pseudo-headers in
 * registers and hand other headers to dpv_icrc_compute_pseudo(), which
 * builds the pseudo-header in a buffer (impl: DPV_CRC_CLMUL or _VPCLMUL).
 */
uint32_t dpv_icrc_compute_sb8(const uint8_t *l3, uint32_t len_to_icrc);
uint32_t dpv_icrc_compute_clmul(const uint8_t *l3, uint32_t len_to_icrc);
uint32_t dpv_icrc_compute_vpclmul(const uint8_t *l3, uint32_t len_to_icrc);
uint32_t dpv_icrc_compute_pseudo(const uint8_t *l3, uint32_t len_to_icrc,
				 enum dpv_crc_impl impl);
uint32_t dpv_icrc_compute_with(enum dpv_crc_impl impl, const uint8_t *l3,
			       uint32_t len_to_icrc);

/*
 * ICRC variant fields of IPv4 (IHL 5) and IPv6 headers as masks ORed into
 * the bytes from the IP header on; the lengths are multiples of 8 and
 * leave 8 + length in whole 16-byte blocks (dpv_icrc.c).
 */
#define DPV_ICRC4_MASKED 40
#define DPV_ICRC6_MASKED 56
extern const uint8_t dpv_icrc4_mask[DPV_ICRC4_MASKED];
extern const uint8_t dpv_icrc6_mask[DPV_ICRC6_MASKED];

#ifdef __cplusplus
}
#endif

#endif
