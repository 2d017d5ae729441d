/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Completion queues and completion channels.
 *
 * A CQ is a ring of struct ibv_wc under a spinlock (the transport produces,
 * the application consumes). A completion channel is a pipe: arming a CQ
 * with ibv_req_notify_cq makes the next matching completion write the CQ
 * pointer into the pipe, so channel->fd is pollable as with a kernel
 * provider.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_cycles.h>

#include "dpv_verbs.h"
#include "dpv_engine.h"

/** ibv_create_comp_channel: a channel, or NULL with errno (EINVAL, EMFILE, ENOMEM). */
DPV_EXPORT struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *context)
{
	if (!context) {
		errno = EINVAL;
		return NULL;
	}
	struct dpv_comp_channel *ch = calloc(1, sizeof(*ch));
	int fds[2];
	if (!ch) {
		errno = ENOMEM;
		return NULL;
	}
	if (pipe2(fds, O_CLOEXEC) != 0) {
		free(ch);
		return NULL;
	}
	fcntl(fds[1], F_SETFL, O_NONBLOCK);
	ch->ch.context = context;
	ch->ch.fd = fds[0];
	ch->ch.refcnt = 0;
	ch->wfd = fds[1];
	return &ch->ch;
}

/** ibv_destroy_comp_channel: 0, EINVAL for NULL, EBUSY while CQs use it. */
DPV_EXPORT int ibv_destroy_comp_channel(struct ibv_comp_channel *channel)
{
	if (!channel)
		return EINVAL;
	struct dpv_comp_channel *ch = to_dch(channel);
	if (atomic_load(&ch->users) > 0)
		return EBUSY;
	close(ch->ch.fd);
	close(ch->wfd);
	free(ch);
	return 0;
}

static struct dpv_cq *cq_new(struct ibv_context *context, int cqe, void *cq_context,
			     struct ibv_comp_channel *channel, int comp_vector)
{
	struct dpv_runtime *rt = dpv_runtime_peek();
	if (!context || !rt || cqe < 1 || (uint32_t)cqe > rt->conf.max_cqe || comp_vector < 0 ||
	    comp_vector >= context->num_comp_vectors) {
		errno = EINVAL;
		return NULL;
	}
	if (channel && channel->context != context) {
		errno = EINVAL;
		return NULL;
	}
	struct dpv_cq *cq = calloc(1, sizeof(*cq));
	if (!cq) {
		errno = ENOMEM;
		return NULL;
	}
	uint32_t size = 1;
	while (size < (uint32_t)cqe + 1)
		size <<= 1;
	cq->ring = calloc(size, sizeof(struct ibv_wc));
	if (!cq->ring) {
		free(cq);
		errno = ENOMEM;
		return NULL;
	}
	cq->size = size;
	cq->cqe = (int)size - 1;
	rte_spinlock_init(&cq->lock);
	struct ibv_cq *ib = dcq_ib(cq);
	ib->context = context;
	ib->channel = channel;
	ib->cq_context = cq_context;
	ib->cqe = cq->cqe;
	pthread_mutex_init(&ib->mutex, NULL);
	pthread_cond_init(&ib->cond, NULL);
	if (channel) {
		cq->chan = to_dch(channel);
		atomic_fetch_add(&cq->chan->users, 1);
	}
	return cq;
}

/**
 * ibv_create_cq: a CQ with at least cqe entries. RETURN VALUE: the CQ, or
 * NULL with errno EINVAL (cqe < 1 or above max_cqe, bad comp_vector, channel
 * of another context) or ENOMEM.
 */
DPV_EXPORT struct ibv_cq *ibv_create_cq(struct ibv_context *context, int cqe, void *cq_context,
					struct ibv_comp_channel *channel, int comp_vector)
{
	struct dpv_cq *cq = cq_new(context, cqe, cq_context, channel, comp_vector);
	return cq ? dcq_ib(cq) : NULL;
}

struct ibv_cq_ex *dpv_create_cq_ex(struct ibv_context *c, struct ibv_cq_init_attr_ex *a)
{
	/* the ibv_start_poll family arrives with the extended-verbs issue */
	errno = EOPNOTSUPP;
	return NULL;
}

/** ibv_destroy_cq: 0, EINVAL for NULL, EBUSY while a QP or SRQ uses it. */
DPV_EXPORT int ibv_destroy_cq(struct ibv_cq *ibcq)
{
	if (!ibcq)
		return EINVAL;
	struct dpv_cq *cq = to_dcq(ibcq);
	if (atomic_load(&cq->users) > 0)
		return EBUSY;
	if (cq->chan)
		atomic_fetch_sub(&cq->chan->users, 1);
	pthread_mutex_destroy(&ibcq->mutex);
	pthread_cond_destroy(&ibcq->cond);
	free(cq->ring);
	free(cq);
	return 0;
}

/**
 * ibv_resize_cq: resize to at least cqe entries, keeping the completions
 * not polled yet. RETURN VALUE: 0, or EINVAL (NULL, cqe < 1 or above
 * max_cqe, or fewer entries than completions waiting), ENOMEM.
 */
DPV_EXPORT int ibv_resize_cq(struct ibv_cq *ibcq, int cqe)
{
	struct dpv_runtime *rt = dpv_runtime_peek();
	if (!ibcq || !rt || cqe < 1 || (uint32_t)cqe > rt->conf.max_cqe)
		return EINVAL;
	struct dpv_cq *cq = to_dcq(ibcq);
	uint32_t size = 1;
	while (size < (uint32_t)cqe + 1)
		size <<= 1;
	struct ibv_wc *ring = calloc(size, sizeof(*ring));
	if (!ring)
		return ENOMEM;
	rte_spinlock_lock(&cq->lock);
	uint32_t n = cq->tail - cq->head;
	if (n > size - 1) {
		rte_spinlock_unlock(&cq->lock);
		free(ring);
		return EINVAL;
	}
	for (uint32_t i = 0; i < n; i++)
		ring[i] = cq->ring[(cq->head + i) & (cq->size - 1)];
	struct ibv_wc *old = cq->ring;
	cq->ring = ring;
	cq->size = size;
	cq->head = 0;
	cq->tail = n;
	cq->cqe = (int)size - 1;
	ibcq->cqe = cq->cqe;
	rte_spinlock_unlock(&cq->lock);
	free(old);
	return 0;
}

void dpv_cq_push(struct dpv_cq *cq, const struct ibv_wc *wc, bool solicited)
{
	bool notify = false;
	static int trace = -1;
	if (trace < 0)
		trace = getenv("DPVERBS_TRACE_CQ") != NULL;
	if (trace)
		fprintf(stderr, "dpverbs: cq %p: wr_id %#llx status %d opcode %d qp %#x len %u\n",
			(void *)cq, (unsigned long long)wc->wr_id, wc->status, wc->opcode, wc->qp_num,
			wc->byte_len);
	rte_spinlock_lock(&cq->lock);
	if (cq->tail - cq->head >= cq->size - 1) {
		/* IBA 11.4.2.1: CQ overrun is an error; keep what we have */
		if (!cq->overflow) {
			cq->overflow = true;
			rte_spinlock_unlock(&cq->lock);
			struct ibv_async_event ev = {.event_type = IBV_EVENT_CQ_ERR};
			ev.element.cq = dcq_ib(cq);
			dpv_async_event(to_dctx(dcq_ib(cq)->context), &ev);
			return;
		}
		rte_spinlock_unlock(&cq->lock);
		return;
	}
	cq->ring[cq->tail & (cq->size - 1)] = *wc;
	atomic_thread_fence(memory_order_release);
	cq->tail++;
	if (cq->armed && (!cq->solicited_only || solicited || wc->status != IBV_WC_SUCCESS)) {
		cq->armed = false;
		notify = true;
	}
	rte_spinlock_unlock(&cq->lock);
	if (notify && cq->chan) {
		struct ibv_cq *ib = dcq_ib(cq);
		ssize_t w = write(cq->chan->wfd, &ib, sizeof(ib));
		(void)w;
	}
}

/* Remove the completions of QP qpn that were not polled yet (a QP moved to
 * RESET or destroyed, as mlx5 does). */
void dpv_cq_clean(struct dpv_cq *cq, uint32_t qpn)
{
	rte_spinlock_lock(&cq->lock);
	uint32_t w = cq->head;
	for (uint32_t r = cq->head; r != cq->tail; r++) {
		struct ibv_wc *e = &cq->ring[r & (cq->size - 1)];
		if (e->qp_num == qpn)
			continue;
		if (w != r)
			cq->ring[w & (cq->size - 1)] = *e;
		w++;
	}
	cq->tail = w;
	rte_spinlock_unlock(&cq->lock);
}

int dpv_poll_cq(struct ibv_cq *ibcq, int n, struct ibv_wc *wc)
{
	struct dpv_cq *cq = to_dcq(ibcq);
	int got = 0;
	if (n < 0)
		return -EINVAL;
	/* run to completion: the caller's thread drives RX (and timers) */
	if (cq->tail == cq->head)
		dpv_progress_all();
	if (cq->tail == cq->head)
		return 0;
	rte_spinlock_lock(&cq->lock);
	while (got < n && cq->head != cq->tail) {
		wc[got] = cq->ring[cq->head & (cq->size - 1)];
		cq->head++;
		got++;
	}
	rte_spinlock_unlock(&cq->lock);
	return got;
}

int dpv_req_notify_cq(struct ibv_cq *ibcq, int solicited_only)
{
	struct dpv_cq *cq = to_dcq(ibcq);
	rte_spinlock_lock(&cq->lock);
	cq->armed = true;
	cq->solicited_only = solicited_only != 0;
	rte_spinlock_unlock(&cq->lock);
	return 0;
}

/**
 * ibv_get_cq_event: waits for the next event on channel (blocking unless
 * channel->fd was made non-blocking). In inline progress mode the waiting
 * thread drives the engine while it waits.
 * RETURN VALUE: 0, or -1 with errno (EAGAIN non-blocking and none pending,
 * EINVAL NULL argument).
 */
DPV_EXPORT int ibv_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq, void **cq_context)
{
	if (!channel || !cq || !cq_context) {
		errno = EINVAL;
		return -1;
	}
	int fl = fcntl(channel->fd, F_GETFL);
	bool nonblock = fl >= 0 && (fl & O_NONBLOCK);
	uint64_t start = rte_get_tsc_cycles();
	uint64_t spin = rte_get_tsc_hz() / 10000; /* 100 us of busy progress */
	struct pollfd pfd = {.fd = channel->fd, .events = POLLIN};
	for (;;) {
		int r = poll(&pfd, 1, 0);
		if (r > 0)
			break;
		if (nonblock) {
			errno = EAGAIN;
			return -1;
		}
		if (!dpv_engine_lcore_mode() && rte_get_tsc_cycles() - start < spin) {
			dpv_progress_all();
			continue;
		}
		r = poll(&pfd, 1, dpv_engine_lcore_mode() ? -1 : 1);
		if (r > 0)
			break;
		if (r < 0 && errno != EINTR)
			return -1;
		dpv_progress_all();
	}
	struct ibv_cq *got;
	ssize_t r = read(channel->fd, &got, sizeof(got));
	if (r != (ssize_t)sizeof(got)) {
		errno = r < 0 ? errno : EIO;
		return -1;
	}
	*cq = got;
	*cq_context = got->cq_context;
	return 0;
}

/** ibv_ack_cq_events: counts acknowledged events (nothing waits on them). */
DPV_EXPORT void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int nevents)
{
	if (!cq)
		return;
	pthread_mutex_lock(&cq->mutex);
	cq->comp_events_completed += nevents;
	pthread_cond_signal(&cq->cond);
	pthread_mutex_unlock(&cq->mutex);
}
