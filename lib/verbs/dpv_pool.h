/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file dpv_pool.h
 * The object pool: one table per object type (as rxe_pool.c), each with an
 * index range, a limit from the configuration and a count. An object is added
 * with dpv_pool_add(), which gives it its number (QPN, MR index, SRQ number,
 * PD/AH/CQ handle), and found again by number with dpv_pool_get() from any
 * thread (release/acquire publication, no lock on lookup).
 *
 * Functions return 0 or a negative errno; lookups return NULL when absent.
 */
#ifndef DPV_POOL_H
#define DPV_POOL_H

#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>

#include "dpv_param.h"

enum dpv_obj_type {
	DPV_OBJ_PD = 0,
	DPV_OBJ_MR,
	DPV_OBJ_AH,
	DPV_OBJ_CQ,
	DPV_OBJ_QP,
	DPV_OBJ_SRQ,
	DPV_OBJ_XRCD,      /* XRC domains (one per inode) */
	DPV_OBJ_NR,
};

/**
 * Where numbers come from when they are not this process' to give (shared
 * mode: dpverbsd numbers every object of every application, because the
 * engine's tables are one for all). reserve() returns 0 and a free number of
 * type t that this process may use, or -errno; release() gives it back.
 */
struct dpv_pool_source {
	int (*reserve)(enum dpv_obj_type t, uint32_t *num);
	void (*release)(enum dpv_obj_type t, uint32_t num);
};
/** Take numbers from src from now on (NULL: the pool's own next-fit). */
void dpv_pool_set_source(const struct dpv_pool_source *src);

/** Set the ranges and limits from the parameters (before any add; again
 *  only while every table is empty: -EBUSY otherwise). */
int dpv_pool_init(const struct dpv_params *p);
/* In a child of fork() (shared mode): every number in the tables is the
 * parent's; empty them (the objects are left alone). Async-signal-safe. */
void dpv_pool_forget(void);

/**
 * Add obj to the table of type t; *index receives its number.
 * @return 0, -ENOMEM when the limit is reached or the range is full.
 */
int dpv_pool_add(enum dpv_obj_type t, void *obj, uint32_t *index);

/**
 * Add obj under a number given elsewhere (shared mode: a PD another
 * process shares with this one). No number is reserved from the source.
 * @return 0, -ERANGE (outside the table), -EEXIST (the number is in use).
 */
int dpv_pool_add_at(enum dpv_obj_type t, void *obj, uint32_t index);

/** The errno a verb reports when dpv_pool_add returned r: EIO when the
 *  number source is gone (shared mode: the daemon), else ENOMEM (the
 *  configuration's limit is reached). */
static inline int dpv_pool_errno(int r)
{
	return r == -EIO ? EIO : ENOMEM;
}

/** Remove the object with this number (nothing if it is not obj). */
void dpv_pool_del(enum dpv_obj_type t, uint32_t index, void *obj);

/** Remove an object added with dpv_pool_add_at (its number is not this
 *  process' to give back to the source). */
void dpv_pool_del_at(enum dpv_obj_type t, uint32_t index, void *obj);

/** The object with this number, or NULL. */
void *dpv_pool_get(enum dpv_obj_type t, uint32_t index);

/** Objects of type t in the table now. */
uint32_t dpv_pool_count(enum dpv_obj_type t);

/** How many objects of type t the table takes (its limit). */
uint32_t dpv_pool_limit(enum dpv_obj_type t);

/** Lowest and highest number of type t (for iteration with dpv_pool_get). */
void dpv_pool_range(enum dpv_obj_type t, uint32_t *first, uint32_t *last);

/** The type's name ("qp", "mr", ...). */
const char *dpv_pool_name(enum dpv_obj_type t);

#endif /* DPV_POOL_H */
