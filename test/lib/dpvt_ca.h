/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * dpverbs test library, parent domains and a counting allocator (part of
 * libdpvtest.a; needs <dpverbs.h>, the public header of dpverbs' resource
 * codes and hugepage allocator).
 *
 * struct dpvt_ca is the pd_context of a parent domain whose alloc/free
 * callbacks are dpvt_ca_alloc()/dpvt_ca_free(): it records every buffer it
 * hands out (resource code, size, alignment, frees) and counts every breach
 * of the contract of ibv_alloc_parent_domain(3) and dpverbs.h; the checks
 * below turn those counts into assertions. Buffers come from posix_memalign,
 * or from dpv_hugepage_alloc() when use_hugepage is set. Thread-safe.
 */
#ifndef DPVT_CA_H
#define DPVT_CA_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <dpverbs.h>

#include "dpvt_verbs.h"

#ifdef __cplusplus
extern "C" {
#endif

#define DPVT_CA_MAGIC 0x0ca11ca1u
/** Buffers recorded per allocator (later ones are counted but not recorded). */
#define DPVT_CA_MAX_REC 8192

/** One buffer handed out. */
struct dpvt_ca_rec {
	void *p;
	size_t size, align;
	uint32_t code;
	int frees; /**< times free was called for this buffer */
};

/** A counting allocator (set the options after dpvt_ca_init()). */
struct dpvt_ca {
	uint32_t magic;
	pthread_mutex_t lock;
	struct ibv_pd *expect_pd;      /**< the parent domain(s) the callbacks must see */
	struct ibv_pd *expect_pd2;
	uint32_t default_mask;         /**< codes (1 << code) answered IBV_ALLOCATOR_USE_DEFAULT */
	uint32_t fail_code;            /**< alloc returns NULL for this code (0: never) */
	bool use_hugepage;             /**< forward to dpv_hugepage_alloc/free with hp */
	struct dpv_hugepage_allocator *hp;
	bool check_hugepage;           /**< every buffer must be hugepage memory */
	int allocs[DPV_RES_NR];        /**< successful allocations (buffers handed out) */
	int defaults[DPV_RES_NR];      /**< IBV_ALLOCATOR_USE_DEFAULT answers */
	int fails[DPV_RES_NR];         /**< NULL answers */
	int frees[DPV_RES_NR];
	int bad_type, bad_align, bad_size, bad_pd, bad_ctx, bad_ptr_align, not_zero, not_huge;
	int free_unknown, free_twice, free_bad_type, free_bad_pd;
	struct dpvt_ca_rec rec[DPVT_CA_MAX_REC];
	int nrec;
	int live;
	uint64_t live_bytes[DPV_RES_NR];
	int live_objs[DPV_RES_NR];
};

/** Does this process run in shared mode (its configuration, DPVERBS_CONFIG,
 *  says "mode": "shared")? Then rings live in memory shared with dpverbsd
 *  and the engine's QP context in the daemon: the allocator is not asked
 *  for QP_SQ, QP_RQ, QP_RC, CQ_RING, SRQ_RING. */
bool dpvt_shared_mode(void);
/** Is a parent domain's allocator asked for buffers of this code (in the
 *  mode this process runs in)? */
bool dpvt_res_asked(int code);

/** Names of the resource codes, index = code ("none" for 0). */
extern const char *const dpvt_res_name[DPV_RES_NR];

/** Zeroes c and sets it up (magic, lock). */
void dpvt_ca_init(struct dpvt_ca *c);

/** The alloc callback (pd_context: a struct dpvt_ca). */
void *dpvt_ca_alloc(struct ibv_pd *pd, void *pd_context, size_t size, size_t alignment, uint64_t resource_type);

/** The free callback (pd_context: a struct dpvt_ca). */
void dpvt_ca_free(struct ibv_pd *pd, void *pd_context, void *ptr, uint64_t resource_type);

/** Counters of allocs/frees/defaults/fails back to zero (records of live buffers stay). */
void dpvt_ca_zero(struct dpvt_ca *c);

/** One CHECK per resource code: got[code] == exp[code]; what/label name the counter in messages. */
void dpvt_ca_expect(const int got[DPV_RES_NR], const int exp[DPV_RES_NR], const char *what, const char *label);

/** The contract held for every callback so far (11 checks). */
void dpvt_ca_check_contract(struct dpvt_ca *c, const char *label);

/** Every buffer handed out so far was freed exactly once, none live, and the contract held (13 checks). */
void dpvt_ca_check_all_freed(struct dpvt_ca *c, const char *label);

/** Is p inside a live buffer of this code? */
bool dpvt_ca_inside(struct dpvt_ca *c, const void *p, uint32_t code);

/**
 * A parent domain of pd (optionally with thread domain td); with c, the
 * counting allocator's callbacks and c as pd_context (the first parent
 * domain made with c becomes c->expect_pd, later ones c->expect_pd2).
 * NULL after a message, errno set.
 */
struct ibv_pd *dpvt_parent_new(struct ibv_pd *pd, struct ibv_td *td, struct dpvt_ca *c);

#ifdef __cplusplus
}
#endif

#endif /* DPVT_CA_H */
