/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Buffers of QPs, CQs and SRQs: through the parent domain's allocator when
 * it has one (with the resource type of dpverbs.h), else rings from the
 * driver's queue memory (reachable by the engine) and objects from the C
 * heap. In shared mode rings always come from queue memory (regions shared
 * with dpverbsd): the allocator is asked for the other resource types only.
 * Each object records its buffers and frees them exactly once.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "dpv_verbs.h"

static bool is_ring(uint32_t code)
{
	return code == DPV_RES_QP_SQ || code == DPV_RES_QP_RQ || code == DPV_RES_CQ_RING ||
	       code == DPV_RES_SRQ_RING;
}

void *dpv_buf_alloc(struct dpv_pd *pd, struct dpv_bufs *bs, size_t size, size_t align, uint32_t code)
{
	void *p = NULL;
	uint8_t src = DPV_BUF_HEAP;
	if (bs->n >= DPV_OBJ_BUFS) {
		errno = ENOMEM;
		return NULL;
	}
	if (align < 8)
		align = 8;
	if (!size)
		size = 1;
	/* shared mode: the engine reaches ring buffers only in queue memory */
	bool custom = pd && pd->parent && pd->alloc &&
		      !(is_ring(code) && bs->dev && dpv_ops(bs->dev)->rings_queue_only());
	if (custom) {
		p = pd->alloc(&pd->ibpd, pd->pd_context, size, align, DPV_RESOURCE_TYPE(code));
		if (!p) {
			errno = ENOMEM;
			return NULL;
		}
		if (p != IBV_ALLOCATOR_USE_DEFAULT)
			src = DPV_BUF_CUSTOM;
		else
			p = NULL;
	}
	if (!p && is_ring(code) && bs->dev) {
		p = dpv_ops(bs->dev)->queue_alloc(bs->dev->drv_dev, size, align);
		if (p)
			src = DPV_BUF_QUEUE;
		else if (dpv_ops(bs->dev)->rings_queue_only()) {
			if (errno != EIO)
				errno = ENOMEM; /* no heap fallback: the engine could not reach it */
			return NULL;
		}
	}
	if (!p) {
		size_t rounded = (size + align - 1) / align * align;
		p = aligned_alloc(align, rounded);
		if (!p) {
			errno = ENOMEM;
			return NULL;
		}
		memset(p, 0, rounded);
	} else if (src == DPV_BUF_QUEUE) {
		memset(p, 0, size);
	}
	bs->pd = pd;
	bs->b[bs->n].p = p;
	bs->b[bs->n].code = code;
	bs->b[bs->n].src = src;
	bs->n++;
	return p;
}

static void buf_release(const struct dpv_bufs *bs, const struct dpv_buf *b)
{
	switch (b->src) {
	case DPV_BUF_CUSTOM:
		bs->pd->free(&bs->pd->ibpd, bs->pd->pd_context, b->p, DPV_RESOURCE_TYPE(b->code));
		break;
	case DPV_BUF_QUEUE:
		dpv_ops(bs->dev)->queue_free(bs->dev->drv_dev, b->p);
		break;
	default:
		free(b->p);
		break;
	}
}

void dpv_buf_free(struct dpv_bufs *bs, void *p)
{
	for (unsigned int i = 0; i < bs->n; i++)
		if (bs->b[i].p == p) {
			buf_release(bs, &bs->b[i]);
			bs->b[i] = bs->b[--bs->n];
			return;
		}
}

/* Frees in reverse order, so that the object itself (allocated first) goes
 * last; the record is copied first because it may live inside the object. */
void dpv_bufs_free_all(struct dpv_bufs *bs)
{
	struct dpv_bufs copy = *bs;
	for (unsigned int i = copy.n; i-- > 0;)
		buf_release(&copy, &copy.b[i]);
}
