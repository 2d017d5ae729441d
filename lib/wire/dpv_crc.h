/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The CRC-32 implementations behind dpv_crc32_update() and
 * dpv_icrc_compute(), one by one, for the tests and the micro-benchmark
 * (apps/dpv_crc_bench.c). Not installed; the library's users call the
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
	DPV_CRC_CLMUL,   /* PCLMULQDQ folding (x86-64 with PCLMUL + SSE4.1) */
};

/* The implementation dpv_crc32_update()/dpv_icrc_compute() use here. */
enum dpv_crc_impl dpv_crc_impl_selected(void);
const char *dpv_crc_impl_name(enum dpv_crc_impl impl);

/* Slicing-by-8, raw update (no pre/post inversion), any CPU. */
uint32_t dpv_crc32_update_sb8(uint32_t crc, const void *buf, size_t len);

/* true when this CPU can run dpv_crc32_update_clmul() (PCLMUL + SSE4.1). */
bool dpv_crc32_clmul_supported(void);
/*
 * Carry-less-multiply CRC-32, raw update like dpv_crc32_update(); call only
 * when dpv_crc32_clmul_supported(). Reads exactly buf[0..len).
 */
uint32_t dpv_crc32_update_clmul(uint32_t crc, const void *buf, size_t len);
/*
 * The CRC of a then b, as if they were contiguous, without reducing the
 * 128-bit folding state in between; alen must be a multiple of 16 (0 is
 * allowed). Call only when dpv_crc32_clmul_supported().
 */
uint32_t dpv_crc32_update_clmul2(uint32_t crc, const void *a, size_t alen, const void *b,
				 size_t blen);

/* dpv_icrc_compute() with one given implementation (see dpv_wire.h). */
uint32_t dpv_icrc_compute_sb8(const uint8_t *l3, uint32_t len_to_icrc);
uint32_t dpv_icrc_compute_clmul(const uint8_t *l3, uint32_t len_to_icrc);

#ifdef __cplusplus
}
#endif

#endif
