/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Device memory (ibv_alloc_dm) of the engine's devices, as a ConnectX's
 * MEMIC: each device has its port's "dm_size" bytes in one DPDK memzone on
 * the port's NUMA node (hugepages unless EAL runs with --no-huge), reserved
 * when the driver starts, and hands them out in DPV_DM_UNIT (64-byte) units
 * at the alignment asked (up to a page). The books (a bitmap of units, under
 * a spinlock) live in the memzone itself, before the memory they describe:
 * a child of fork() shares them with its parent as processes share an
 * RNIC's memory (pyverbs' test_multi_process_alloc_dm), wherever EAL's
 * memory is shared (hugepage files; --no-huge memory is the child's copy).
 *
 * The memory is this process': the façade copies into it (ibv_memcpy_to_dm)
 * and the engine reaches an MR on it (ibv_reg_dm_mr) at its address, the
 * MR's delta from its zero-based addresses (sw_tab.c). In shared mode
 * dpverbsd gives device memory itself (memfds both processes map:
 * apps/dpverbsd/dpvd_dm.c) and never calls these.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <rte_errno.h>
#include <rte_memzone.h>
#include <rte_spinlock.h>

#include "sw_log.h"
#include "sw_loc.h"

#define DM_PAGE 4096u

/* The head of a device's memzone; the bitmap follows, the memory starts at
 * the next page. */
struct sw_dm_pool {
	rte_spinlock_t lock;
	uint32_t n_units;         /* dm_size / DPV_DM_UNIT */
	uint32_t used;            /* units handed out */
	uint32_t data_off;        /* bytes from the head to the memory */
	uint64_t map[];           /* bit set: unit in use */
};

static struct sw_dm_pool *g_pool[DPV_MAX_PORTS];

static inline uint8_t *pool_mem(struct sw_dm_pool *p)
{
	return (uint8_t *)p + p->data_off;
}

static inline bool unit_used(const struct sw_dm_pool *p, uint32_t u)
{
	return p->map[u / 64] >> (u % 64) & 1;
}

static void units_set(struct sw_dm_pool *p, uint32_t first, uint32_t n, bool on)
{
	for (uint32_t u = first; u < first + n; u++) {
		if (on)
			p->map[u / 64] |= 1ull << (u % 64);
		else
			p->map[u / 64] &= ~(1ull << (u % 64));
	}
}

uint64_t sw_dm_init(struct sw_dev *d, uint32_t dm_size)
{
	if (!dm_size || d->index >= DPV_MAX_PORTS)
		return 0;
	uint32_t n_units = dm_size / DPV_DM_UNIT;
	size_t head = sizeof(struct sw_dm_pool) + (size_t)(n_units + 63) / 64 * sizeof(uint64_t);
	size_t data_off = RTE_ALIGN_CEIL(head, (size_t)DM_PAGE);
	char name[RTE_MEMZONE_NAMESIZE];
	snprintf(name, sizeof(name), "dpv_dm%u", d->index);
	int socket = d->port->pool ? d->port->pool->socket_id : SOCKET_ID_ANY;
	const struct rte_memzone *mz = rte_memzone_reserve_aligned(name, data_off + dm_size, socket, 0, DM_PAGE);
	if (!mz && socket != SOCKET_ID_ANY)
		mz = rte_memzone_reserve_aligned(name, data_off + dm_size, SOCKET_ID_ANY, 0, DM_PAGE);
	if (!mz) {
		SW_LOG(WARNING, "port %s: no memory for its %u bytes of device memory (\"dm_size\"): %s; "
		       "it offers none", d->port->name, dm_size, rte_strerror(rte_errno));
		return 0;
	}
	struct sw_dm_pool *p = mz->addr;
	memset(p, 0, data_off);
	rte_spinlock_init(&p->lock);
	p->n_units = n_units;
	p->data_off = (uint32_t)data_off;
	g_pool[d->index] = p;
	return dm_size;
}

int sw_alloc_dm(void *dev, uint32_t ctx, uint64_t length, uint32_t log_align, struct dpv_dm_desc *dm)
{
	struct sw_dev *d = dev;
	struct sw_dm_pool *p = d->index < DPV_MAX_PORTS ? g_pool[d->index] : NULL;
	if (!p)
		return -EOPNOTSUPP;
	if (!length || length > (uint64_t)p->n_units * DPV_DM_UNIT || log_align > DPV_DM_MAX_LOG_ALIGN)
		return -EINVAL;
	uint32_t n = (uint32_t)((length + DPV_DM_UNIT - 1) / DPV_DM_UNIT);
	uint32_t step = RTE_MAX((1u << log_align) / DPV_DM_UNIT, 1u);
	uint32_t found = UINT32_MAX;
	rte_spinlock_lock(&p->lock);
	/* first fit at the alignment: a used unit moves the search past it */
	for (uint32_t i = 0; p->used + n <= p->n_units && i + n <= p->n_units;) {
		uint32_t j = 0;
		while (j < n && !unit_used(p, i + j))
			j++;
		if (j == n) {
			found = i;
			break;
		}
		i = RTE_ALIGN_CEIL(i + j + 1, step);
	}
	if (found != UINT32_MAX) {
		units_set(p, found, n, true);
		p->used += n;
	}
	rte_spinlock_unlock(&p->lock);
	if (found == UINT32_MAX)
		return -ENOMEM; /* the kernel's answer when MEMIC has no room */
	dm->handle = found + 1;
	dm->length = length;
	dm->addr = pool_mem(p) + (size_t)found * DPV_DM_UNIT;
	memset(dm->addr, 0, (size_t)n * DPV_DM_UNIT); /* nothing of its last user */
	return 0;
}

int sw_free_dm(void *dev, const struct dpv_dm_desc *dm)
{
	struct sw_dev *d = dev;
	struct sw_dm_pool *p = d->index < DPV_MAX_PORTS ? g_pool[d->index] : NULL;
	if (!p || !dm->handle || dm->handle > p->n_units || dm->addr != pool_mem(p) + (size_t)(dm->handle - 1) * DPV_DM_UNIT)
		return -EINVAL;
	uint32_t n = (uint32_t)((dm->length + DPV_DM_UNIT - 1) / DPV_DM_UNIT);
	if (dm->handle - 1 + n > p->n_units)
		return -EINVAL;
	rte_spinlock_lock(&p->lock);
	units_set(p, dm->handle - 1, n, false);
	p->used -= RTE_MIN(n, p->used);
	rte_spinlock_unlock(&p->lock);
	return 0;
}
