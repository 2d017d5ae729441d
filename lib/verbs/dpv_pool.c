/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Object pool: per type a table of atomic pointers indexed by object number,
 * a next-fit allocator over [first, last] under a spinlock, and a limit.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include <unistd.h>

#include <rte_common.h>
#include <rte_cycles.h>
#include <rte_spinlock.h>

#include "dpv_pool.h"

struct dpv_pool {
	const char *name;
	uint32_t first, last;    /* index range (of the table) */
	uint32_t range_first;    /* the type's first and last number */
	uint32_t range_last;
	uint32_t limit;          /* objects at most (configuration) */
	uint32_t count;
	uint32_t next;           /* next-fit cursor */
	rte_spinlock_t lock;
	_Atomic(void *) *table;  /* last + 1 entries */
};

static const struct dpv_pool_source *g_source;

void dpv_pool_set_source(const struct dpv_pool_source *src)
{
	g_source = src;
}

static struct dpv_pool g_pools[DPV_OBJ_NR] = {
	[DPV_OBJ_PD] = {.name = "pd", .range_first = 1, .range_last = DPV_OBJ_INDEX_LAST},
	[DPV_OBJ_MR] = {.name = "mr", .range_first = 1, .range_last = DPV_MR_INDEX_LAST},
	[DPV_OBJ_AH] = {.name = "ah", .range_first = 1, .range_last = DPV_OBJ_INDEX_LAST},
	[DPV_OBJ_CQ] = {.name = "cq", .range_first = 1, .range_last = DPV_OBJ_INDEX_LAST},
	[DPV_OBJ_QP] = {.name = "qp", .range_first = DPV_QPN_FIRST, .range_last = DPV_QPN_LAST},
	[DPV_OBJ_SRQ] = {.name = "srq", .range_first = 1, .range_last = DPV_SRQN_LAST},
	[DPV_OBJ_XRCD] = {.name = "xrcd", .range_first = 1, .range_last = DPV_OBJ_INDEX_LAST},
};

/* QP numbers start at a random place in [lo, hi]: a process started
 * again must not reuse the numbers of its previous life, or a peer still
 * holding a connection to one (rdma_cm, IB CM) takes the new connection
 * for a stale one (IBA 12.9.8.3.1). */
static uint32_t qpn_start(uint32_t lo, uint32_t hi)
{
	uint32_t r;
	if (hi <= lo)
		return lo;
	if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != (ssize_t)sizeof(r))
		r = (uint32_t)rte_rdtsc() ^ (uint32_t)getpid() << 12;
	return lo + r % (hi - lo + 1);
}

int dpv_pool_init(const struct dpv_params *p)
{
	const uint32_t limit[DPV_OBJ_NR] = {
		[DPV_OBJ_PD] = p->max_pd, [DPV_OBJ_MR] = p->max_mr, [DPV_OBJ_AH] = p->max_ah,
		[DPV_OBJ_CQ] = p->max_cq, [DPV_OBJ_QP] = p->max_qp, [DPV_OBJ_SRQ] = p->max_srq,
		[DPV_OBJ_XRCD] = p->max_pd,
	};
	for (unsigned int t = 0; t < DPV_OBJ_NR; t++) {
		struct dpv_pool *pl = &g_pools[t];
		if (pl->count)
			return -EBUSY; /* again only while empty (shared mode adopts the daemon's limits) */
		free(pl->table);
		pl->table = NULL;
		pl->first = pl->range_first;
		pl->last = pl->range_last;
		rte_spinlock_init(&pl->lock);
		pl->limit = RTE_MIN(limit[t], pl->last - pl->first + 1);
		/* the table spans the numbers the limit needs, at most the range:
		 * numbers are reused next-fit, so count <= limit keeps them below */
		if (t == DPV_OBJ_QP) {
			/* the whole 17-bit range (1 MiB of table), the cursor at a
			 * random place in it */
			pl->next = qpn_start(pl->first, pl->last);
		} else {
			pl->last = RTE_MIN(pl->last, pl->first + pl->limit - 1 + 1024u);
			pl->next = pl->first;
		}
		pl->table = calloc((size_t)pl->last + 1, sizeof(*pl->table));
		if (!pl->table)
			return -ENOMEM;
	}
	return 0;
}

void dpv_pool_forget(void)
{
	for (unsigned int t = 0; t < DPV_OBJ_NR; t++) {
		struct dpv_pool *pl = &g_pools[t];
		rte_spinlock_init(&pl->lock);
		if (pl->table)
			memset(pl->table, 0, ((size_t)pl->last + 1) * sizeof(*pl->table));
		pl->count = 0;
	}
}

/* Add obj at a number the source gave (shared mode). */
static int pool_add_sourced(struct dpv_pool *pl, enum dpv_obj_type t, void *obj, uint32_t *index)
{
	uint32_t num;
	int r = g_source->reserve(t, &num);
	if (r)
		return r;
	if (!pl->table || num < pl->first || num > pl->last) {
		g_source->release(t, num);
		return -ERANGE; /* the daemon's number spaces differ from ours */
	}
	rte_spinlock_lock(&pl->lock);
	if (atomic_load_explicit(&pl->table[num], memory_order_relaxed)) {
		rte_spinlock_unlock(&pl->lock);
		g_source->release(t, num);
		return -EEXIST;
	}
	atomic_store_explicit(&pl->table[num], obj, memory_order_release);
	pl->count++;
	rte_spinlock_unlock(&pl->lock);
	*index = num;
	return 0;
}

int dpv_pool_add_at(enum dpv_obj_type t, void *obj, uint32_t index)
{
	struct dpv_pool *pl = &g_pools[t];
	if (!pl->table || index < pl->first || index > pl->last)
		return -ERANGE;
	int r = -EEXIST;
	rte_spinlock_lock(&pl->lock);
	if (!atomic_load_explicit(&pl->table[index], memory_order_relaxed)) {
		atomic_store_explicit(&pl->table[index], obj, memory_order_release);
		pl->count++;
		r = 0;
	}
	rte_spinlock_unlock(&pl->lock);
	return r;
}

int dpv_pool_add(enum dpv_obj_type t, void *obj, uint32_t *index)
{
	struct dpv_pool *pl = &g_pools[t];
	uint32_t span = pl->last - pl->first + 1;
	int ret = -ENOMEM;

	if (g_source)
		return pool_add_sourced(pl, t, obj, index);

	rte_spinlock_lock(&pl->lock);
	if (pl->table && pl->count < pl->limit) {
		for (uint32_t k = 0; k < span; k++) {
			uint32_t i = pl->first + (pl->next - pl->first + k) % span;
			if (atomic_load_explicit(&pl->table[i], memory_order_relaxed))
				continue;
			atomic_store_explicit(&pl->table[i], obj, memory_order_release);
			pl->count++;
			pl->next = i == pl->last ? pl->first : i + 1;
			*index = i;
			ret = 0;
			break;
		}
	}
	rte_spinlock_unlock(&pl->lock);
	return ret;
}

static void pool_del(enum dpv_obj_type t, uint32_t index, void *obj, bool give_back);

void dpv_pool_del(enum dpv_obj_type t, uint32_t index, void *obj)
{
	pool_del(t, index, obj, true);
}

void dpv_pool_del_at(enum dpv_obj_type t, uint32_t index, void *obj)
{
	pool_del(t, index, obj, false);
}

static void pool_del(enum dpv_obj_type t, uint32_t index, void *obj, bool give_back)
{
	struct dpv_pool *pl = &g_pools[t];
	if (!pl->table || index < pl->first || index > pl->last)
		return;
	bool gone = false;
	rte_spinlock_lock(&pl->lock);
	if (atomic_load_explicit(&pl->table[index], memory_order_relaxed) == obj) {
		atomic_store_explicit(&pl->table[index], NULL, memory_order_release);
		pl->count--;
		gone = true;
	}
	rte_spinlock_unlock(&pl->lock);
	if (gone && g_source && give_back)
		g_source->release(t, index);
}

void *dpv_pool_get(enum dpv_obj_type t, uint32_t index)
{
	struct dpv_pool *pl = &g_pools[t];
	if (!pl->table || index < pl->first || index > pl->last)
		return NULL;
	return atomic_load_explicit(&pl->table[index], memory_order_acquire);
}

uint32_t dpv_pool_count(enum dpv_obj_type t)
{
	struct dpv_pool *pl = &g_pools[t];
	rte_spinlock_lock(&pl->lock);
	uint32_t n = pl->count;
	rte_spinlock_unlock(&pl->lock);
	return n;
}

uint32_t dpv_pool_limit(enum dpv_obj_type t)
{
	return g_pools[t].table ? g_pools[t].limit : 0;
}

void dpv_pool_range(enum dpv_obj_type t, uint32_t *first, uint32_t *last)
{
	*first = g_pools[t].first;
	*last = g_pools[t].table ? g_pools[t].last : 0;
}

const char *dpv_pool_name(enum dpv_obj_type t)
{
	return t < DPV_OBJ_NR ? g_pools[t].name : "?";
}
