/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The hugepage allocator of dpverbs.h: a ready pair of parent-domain
 * allocator callbacks that place QP, CQ and SRQ buffers in DPDK hugepage
 * memory (mempools per size class, rte_zmalloc beyond), with statistics per
 * resource code. In shared mode (no EAL in the application) the memory is
 * the driver's instead: 2 MiB hugepage-backed regions shared with dpverbsd
 * (ordinary pages when the system has no hugepages to spare), cut into the
 * same size classes; MRs on such buffers are reached by the engine
 * directly.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_eal.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_mempool.h>
#include <rte_memory.h>

#include "dpv_verbs.h"

/* ---- hugepage allocator ---- */

#define HP_MIN_SHIFT 12 /* 4 KiB */
#define HP_MAX_SHIFT 20 /* 1 MiB */
#define HP_CLASSES (HP_MAX_SHIFT - HP_MIN_SHIFT + 1)
#define HP_POOL_OBJS 63

#define HP_CHUNK (2u << 20) /* shared mode: bytes of one region of a size class */

struct hp_chunk {
	void *p;
	struct hp_chunk *next;
};

struct dpv_hugepage_allocator {
	int socket;
	pthread_mutex_t lock;
	const struct dpv_verbs_ops *ops; /* shared mode: the driver's memory (mem_alloc) */
	void *free_obj[HP_CLASSES];  /* shared mode: free objects of each class (linked) */
	struct hp_chunk *chunks;     /* shared mode: the class regions */
	struct rte_mempool *pools[HP_CLASSES];
	struct dpv_hugepage_stats st[DPV_RES_NR];
	uint64_t live;
};

/* Header in front of each buffer: how to give it back. */
struct hp_hdr {
	uint32_t cls;  /* size class, or HP_CLASSES for rte_zmalloc */
	uint32_t code;
	uint64_t size;
	void *base;    /* what the pool or rte_malloc returned */
};

static _Atomic unsigned int g_hp_seq;

struct dpv_hugepage_allocator *dpv_hugepage_allocator_create(int socket)
{
	struct dpv_core *core = dpv_core_get();
	bool shared = core && core->ops->mem_alloc;
	if (!core || (!shared && rte_lcore_count() == 0)) {
		errno = ENODEV; /* dpverbs (and EAL) could not start: no hugepage memory */
		return NULL;
	}
	struct dpv_hugepage_allocator *a = calloc(1, sizeof(*a));
	if (!a) {
		errno = ENOMEM;
		return NULL;
	}
	if (shared) { /* the daemon's NUMA placement: socket is not ours to choose */
		a->ops = core->ops;
		pthread_mutex_init(&a->lock, NULL);
		return a;
	}
	if (socket >= 0) {
		bool known = false;
		for (unsigned int i = 0; i < rte_socket_count(); i++)
			if (rte_socket_id_by_idx(i) == socket)
				known = true;
		if (!known) {
			free(a);
			errno = EINVAL; /* no such NUMA socket */
			return NULL;
		}
	}
	a->socket = socket < 0 ? (int)rte_socket_id() : socket;
	if (a->socket < 0 || (unsigned int)a->socket >= RTE_MAX_NUMA_NODES)
		a->socket = 0;
	pthread_mutex_init(&a->lock, NULL);
	return a;
}

int dpv_hugepage_allocator_destroy(struct dpv_hugepage_allocator *a)
{
	if (!a)
		return EINVAL;
	pthread_mutex_lock(&a->lock);
	if (a->live) {
		pthread_mutex_unlock(&a->lock);
		return EBUSY;
	}
	for (int i = 0; i < HP_CLASSES; i++)
		rte_mempool_free(a->pools[i]);
	for (struct hp_chunk *c = a->chunks, *n; c; c = n) {
		n = c->next;
		a->ops->mem_free(c->p);
		free(c);
	}
	pthread_mutex_unlock(&a->lock);
	pthread_mutex_destroy(&a->lock);
	free(a);
	return 0;
}

/* Shared mode: an object of class cls (a new region cut into objects of
 * the class when none is free), or, cls == HP_CLASSES, a region of its own
 * of need bytes. Must hold a->lock. */
static void *hp_shared_get(struct dpv_hugepage_allocator *a, unsigned int cls, size_t need)
{
	if (cls == HP_CLASSES)
		return a->ops->mem_alloc(need, true);
	size_t osz = (size_t)1 << (cls + HP_MIN_SHIFT);
	if (!a->free_obj[cls]) {
		struct hp_chunk *c = calloc(1, sizeof(*c));
		uint8_t *p = c ? a->ops->mem_alloc(HP_CHUNK, true) : NULL;
		if (!p) {
			free(c);
			return NULL;
		}
		c->p = p;
		c->next = a->chunks;
		a->chunks = c;
		for (size_t off = HP_CHUNK; off >= osz; off -= osz) {
			void **o = (void **)(p + off - osz);
			*o = a->free_obj[cls];
			a->free_obj[cls] = o;
		}
	}
	void **o = a->free_obj[cls];
	a->free_obj[cls] = *o;
	memset(o, 0, osz);
	return o;
}

/* Must hold a->lock. */
static struct rte_mempool *hp_pool(struct dpv_hugepage_allocator *a, unsigned int cls)
{
	if (!a->pools[cls]) {
		char name[RTE_MEMPOOL_NAMESIZE];
		snprintf(name, sizeof(name), "dpv_hp%u_%u", atomic_fetch_add(&g_hp_seq, 1), cls);
		/* no per-lcore cache: application threads are not EAL lcores */
		a->pools[cls] = rte_mempool_create(name, HP_POOL_OBJS, 1u << (cls + HP_MIN_SHIFT), 0, 0, NULL,
						   NULL, NULL, NULL, a->socket, 0);
	}
	return a->pools[cls];
}

void *dpv_hugepage_alloc(struct ibv_pd *pd, void *pd_context, size_t size, size_t alignment,
			 uint64_t resource_type)
{
	struct dpv_hugepage_allocator *a = pd_context;
	if (!a)
		return NULL;
	uint32_t code = DPV_RESOURCE_CODE(resource_type);
	if (code >= DPV_RES_NR)
		code = 0;
	if (alignment < RTE_CACHE_LINE_SIZE)
		alignment = RTE_CACHE_LINE_SIZE;
	/* header + padding to the alignment + the buffer */
	size_t need = size + alignment + sizeof(struct hp_hdr);
	unsigned int cls = HP_CLASSES;
	for (unsigned int c = 0; c < HP_CLASSES; c++)
		if (need <= (1u << (c + HP_MIN_SHIFT))) {
			cls = c;
			break;
		}
	void *base = NULL;
	pthread_mutex_lock(&a->lock);
	if (a->ops) {
		base = hp_shared_get(a, cls, need);
	} else if (cls < HP_CLASSES) {
		struct rte_mempool *mp = hp_pool(a, cls);
		if (mp && rte_mempool_get(mp, &base) != 0)
			base = NULL;
		if (base)
			memset(base, 0, 1u << (cls + HP_MIN_SHIFT));
	}
	if (!base && !a->ops) {
		cls = HP_CLASSES;
		base = rte_zmalloc_socket("dpv_hp", need, RTE_CACHE_LINE_SIZE, a->socket);
	}
	if (!base) {
		a->st[code].failures++;
		pthread_mutex_unlock(&a->lock);
		return NULL;
	}
	uintptr_t p = ((uintptr_t)base + sizeof(struct hp_hdr) + alignment - 1) & ~(uintptr_t)(alignment - 1);
	struct hp_hdr *h = (struct hp_hdr *)(p - sizeof(struct hp_hdr));
	h->cls = cls;
	h->code = code;
	h->size = size;
	h->base = base;
	a->st[code].bytes += size;
	a->st[code].objects++;
	a->st[code].allocs++;
	a->live++;
	pthread_mutex_unlock(&a->lock);
	return (void *)p;
}

void dpv_hugepage_free(struct ibv_pd *pd, void *pd_context, void *ptr, uint64_t resource_type)
{
	struct dpv_hugepage_allocator *a = pd_context;
	if (!a || !ptr)
		return;
	struct hp_hdr *h = (struct hp_hdr *)((uintptr_t)ptr - sizeof(struct hp_hdr));
	pthread_mutex_lock(&a->lock);
	a->st[h->code].bytes -= h->size;
	a->st[h->code].objects--;
	a->st[h->code].frees++;
	a->live--;
	if (a->ops && h->cls < HP_CLASSES) {
		*(void **)h->base = a->free_obj[h->cls];
		a->free_obj[h->cls] = h->base;
	} else if (a->ops) {
		a->ops->mem_free(h->base);
	} else if (h->cls < HP_CLASSES) {
		rte_mempool_put(a->pools[h->cls], h->base);
	} else {
		rte_free(h->base);
	}
	pthread_mutex_unlock(&a->lock);
}

int dpv_hugepage_stats(const struct dpv_hugepage_allocator *a, uint32_t code, struct dpv_hugepage_stats *out)
{
	if (!a || !out || code >= DPV_RES_NR)
		return EINVAL;
	pthread_mutex_lock((pthread_mutex_t *)&a->lock);
	*out = a->st[code];
	pthread_mutex_unlock((pthread_mutex_t *)&a->lock);
	return 0;
}

int dpv_is_hugepage_memory(const void *ptr)
{
	struct dpv_core *core = dpv_core_peek();
	if (core && core->ops->mem_is_huge)
		return ptr && core->ops->mem_is_huge(ptr);
	const struct rte_memseg *ms = rte_mem_virt2memseg(ptr, NULL);
	return ms && ms->hugepage_sz >= (2u << 20);
}

void dpv_hugepage_parent_domain_attr(struct dpv_hugepage_allocator *a, struct ibv_pd *pd, struct ibv_td *td,
				     struct ibv_parent_domain_init_attr *attr)
{
	memset(attr, 0, sizeof(*attr));
	attr->pd = pd;
	attr->td = td;
	attr->comp_mask = IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS | IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT;
	attr->alloc = dpv_hugepage_alloc;
	attr->free = dpv_hugepage_free;
	attr->pd_context = a;
}
