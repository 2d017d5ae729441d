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
#include <time.h>

#include <rte_cycles.h>

#include "dpv_verbs.h"
#include "dpv_engine.h"
#include "dpverbs.h"

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
			     struct ibv_comp_channel *channel, int comp_vector, struct dpv_pd *upd)
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
	struct dpv_bufs bs = {0};
	struct dpv_cq *cq = dpv_buf_alloc(upd, &bs, sizeof(*cq), 64, DPV_RES_CQ);
	if (!cq)
		return NULL;
	uint32_t size = 1;
	while (size < (uint32_t)cqe + 1)
		size <<= 1;
	cq->ring = dpv_buf_alloc(upd, &bs, (size_t)size * sizeof(struct dpv_cqe), 64, DPV_RES_CQ_RING);
	if (!cq->ring) {
		dpv_bufs_free_all(&bs);
		errno = ENOMEM;
		return NULL;
	}
	cq->bufs = bs;
	cq->upd = upd;
	cq->lockless = upd && upd->td;
	if (upd)
		atomic_fetch_add(&upd->users, 1);
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
	struct dpv_cq *cq = cq_new(context, cqe, cq_context, channel, comp_vector, NULL);
	return cq ? dcq_ib(cq) : NULL;
}

/* A polled UD send CQE frees the send-queue slots of its WRs. */
static void retire_sq(const struct dpv_cqe *e)
{
	struct dpv_qp *qp = dpv_qp_lookup(e->wc.qp_num);
	if (qp)
		dpv_inflight_add(qp, -(int32_t)e->retire);
}

/* ---- extended CQ: ibv_start_poll / ibv_next_poll / ibv_end_poll ---- */

static inline struct dpv_cq *cqx(struct ibv_cq_ex *c) { return container_of(c, struct dpv_cq, ibcq); }

static void cqx_load(struct dpv_cq *cq)
{
	cq->cur = &cq->ring[cq->poll_head & (cq->size - 1)];
	cq->ibcq.status = cq->cur->wc.status;
	cq->ibcq.wr_id = cq->cur->wc.wr_id;
}

static int cqx_start_poll(struct ibv_cq_ex *c, struct ibv_poll_cq_attr *attr)
{
	struct dpv_cq *cq = cqx(c);
	if (attr && attr->comp_mask)
		return EINVAL;
	if (cq->tail == cq->head) {
		dpv_progress_all();
		if (cq->lockless && dpv_td_claim(cq->upd->td))
			dpv_td_progress(cq->upd->td);
	}
	cq_lock(cq);
	if (cq->tail == cq->head) {
		cq_unlock(cq);
		return ENOENT; /* the lock is not held after ENOENT */
	}
	cq->poll_head = cq->head;
	cqx_load(cq);
	return 0;
}

static int cqx_next_poll(struct ibv_cq_ex *c)
{
	struct dpv_cq *cq = cqx(c);
	if (cq->poll_head + 1 == cq->tail)
		return ENOENT;
	cq->poll_head++;
	cqx_load(cq);
	return 0;
}

static void cqx_end_poll(struct ibv_cq_ex *c)
{
	struct dpv_cq *cq = cqx(c);
	for (uint32_t i = cq->head; i != cq->poll_head + 1; i++)
		if (cq->ring[i & (cq->size - 1)].retire)
			retire_sq(&cq->ring[i & (cq->size - 1)]);
	cq->head = cq->poll_head + 1;
	cq->cur = NULL;
	cq_unlock(cq);
}

static enum ibv_wc_opcode cqx_opcode(struct ibv_cq_ex *c) { return cqx(c)->cur->wc.opcode; }
static uint32_t cqx_vendor_err(struct ibv_cq_ex *c) { return cqx(c)->cur->wc.vendor_err; }
static uint32_t cqx_byte_len(struct ibv_cq_ex *c) { return cqx(c)->cur->wc.byte_len; }
static __be32 cqx_imm_data(struct ibv_cq_ex *c) { return cqx(c)->cur->wc.imm_data; }
static uint32_t cqx_qp_num(struct ibv_cq_ex *c) { return cqx(c)->cur->wc.qp_num; }
static uint32_t cqx_src_qp(struct ibv_cq_ex *c) { return cqx(c)->cur->wc.src_qp; }
static unsigned int cqx_wc_flags(struct ibv_cq_ex *c) { return cqx(c)->cur->wc.wc_flags; }
static uint32_t cqx_slid(struct ibv_cq_ex *c) { return cqx(c)->cur->wc.slid; }
static uint8_t cqx_sl(struct ibv_cq_ex *c) { return cqx(c)->cur->wc.sl; }
static uint8_t cqx_dlid_path_bits(struct ibv_cq_ex *c) { return cqx(c)->cur->wc.dlid_path_bits; }
static uint64_t cqx_completion_ts(struct ibv_cq_ex *c) { return cqx(c)->cur->ts; }

static uint64_t cqx_completion_wallclock_ns(struct ibv_cq_ex *c)
{
	/* TSC -> wall clock through one calibration point taken at first use */
	static uint64_t tsc0, ns0;
	static double ns_per_tick;
	if (!ns_per_tick) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		tsc0 = rte_get_tsc_cycles();
		ns0 = (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
		ns_per_tick = 1e9 / (double)rte_get_tsc_hz();
	}
	int64_t d = (int64_t)(cqx(c)->cur->ts - tsc0);
	return ns0 + (uint64_t)((double)d * ns_per_tick);
}

#define DPV_CQ_SUP_WC_FLAGS                                                                      \
	(IBV_WC_STANDARD_FLAGS | IBV_WC_EX_WITH_COMPLETION_TIMESTAMP |                           \
	 IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK)

/**
 * create_cq_ex (ibv_create_cq_ex): an extended CQ read with ibv_start_poll
 * and the ibv_wc_read_* accessors. wc_flags may hold the standard fields and
 * both completion timestamps (TSC ticks; hca_core_clock gives their rate).
 * RETURN VALUE: the CQ, or NULL with errno: EINVAL (as ibv_create_cq, unknown
 * comp_mask or flags), EOPNOTSUPP (wc_flags dpverbs cannot provide: CVLAN,
 * flow tag, tag matching), ENOMEM.
 */
struct ibv_cq_ex *dpv_create_cq_ex(struct ibv_context *c, struct ibv_cq_init_attr_ex *a)
{
	if (!a) {
		errno = EINVAL;
		return NULL;
	}
	if (a->comp_mask & ~(uint32_t)(IBV_CQ_INIT_ATTR_MASK_FLAGS | IBV_CQ_INIT_ATTR_MASK_PD)) {
		errno = EINVAL;
		return NULL;
	}
	uint32_t flags = (a->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) ? a->flags : 0;
	if (flags & ~(uint32_t)(IBV_CREATE_CQ_ATTR_SINGLE_THREADED | IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN)) {
		errno = EINVAL;
		return NULL;
	}
	if (a->wc_flags & ~(uint64_t)DPV_CQ_SUP_WC_FLAGS) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	struct dpv_pd *upd = NULL;
	if (a->comp_mask & IBV_CQ_INIT_ATTR_MASK_PD) {
		/* must be a parent domain (as mlx5 requires) */
		if (!a->parent_domain || a->parent_domain->context != c || !to_dpd(a->parent_domain)->parent) {
			errno = EINVAL;
			return NULL;
		}
		upd = to_dpd(a->parent_domain);
	}
	struct dpv_cq *cq = cq_new(c, (int)a->cqe, a->cq_context, a->channel, (int)a->comp_vector, upd);
	if (!cq)
		return NULL;
	struct ibv_cq_ex *x = &cq->ibcq;
	cq->wc_flags = a->wc_flags;
	/* accepted as a hint: the transport still fills the CQ from engine
	 * threads, so only a thread domain (parent domain) removes its lock */
	cq->single_threaded = flags & IBV_CREATE_CQ_ATTR_SINGLE_THREADED;
	x->comp_mask = 0;
	x->start_poll = cqx_start_poll;
	x->next_poll = cqx_next_poll;
	x->end_poll = cqx_end_poll;
	x->read_opcode = cqx_opcode;
	x->read_vendor_err = cqx_vendor_err;
	x->read_byte_len = cqx_byte_len;
	x->read_imm_data = cqx_imm_data;
	x->read_qp_num = cqx_qp_num;
	x->read_src_qp = cqx_src_qp;
	x->read_wc_flags = cqx_wc_flags;
	x->read_slid = cqx_slid;
	x->read_sl = cqx_sl;
	x->read_dlid_path_bits = cqx_dlid_path_bits;
	x->read_completion_ts = cqx_completion_ts;
	x->read_completion_wallclock_ns = cqx_completion_wallclock_ns;
	return x;
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
	if (cq->upd)
		atomic_fetch_sub(&cq->upd->users, 1);
	dpv_bufs_free_all(&cq->bufs);
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
	struct dpv_cqe *ring = dpv_buf_alloc(cq->upd, &cq->bufs, (size_t)size * sizeof(*ring), 64,
					     DPV_RES_CQ_RING);
	if (!ring)
		return ENOMEM;
	cq_lock(cq);
	uint32_t n = cq->tail - cq->head;
	if (n > size - 1) {
		cq_unlock(cq);
		dpv_buf_free(&cq->bufs, ring);
		return EINVAL;
	}
	for (uint32_t i = 0; i < n; i++)
		ring[i] = cq->ring[(cq->head + i) & (cq->size - 1)];
	struct dpv_cqe *old = cq->ring;
	cq->ring = ring;
	cq->size = size;
	cq->head = 0;
	cq->tail = n;
	cq->cqe = (int)size - 1;
	ibcq->cqe = cq->cqe;
	cq_unlock(cq);
	dpv_buf_free(&cq->bufs, old);
	return 0;
}

void dpv_cq_push(struct dpv_cq *cq, const struct ibv_wc *wc, bool solicited)
{
	dpv_cq_push_retire(cq, wc, solicited, 0);
}

void dpv_cq_push_retire(struct dpv_cq *cq, const struct ibv_wc *wc, bool solicited, uint32_t retire)
{
	bool notify = false;
	static int trace = -1;
	if (trace < 0)
		trace = getenv("DPVERBS_TRACE_CQ") != NULL;
	if (trace)
		fprintf(stderr, "dpverbs: cq %p: wr_id %#llx status %d opcode %d qp %#x len %u\n",
			(void *)cq, (unsigned long long)wc->wr_id, wc->status, wc->opcode, wc->qp_num,
			wc->byte_len);
	cq_lock(cq);
	if (cq->tail - cq->head >= cq->size - 1) {
		/* IBA 11.4.2.1: CQ overrun is an error; keep what we have */
		if (!cq->overflow) {
			cq->overflow = true;
			cq_unlock(cq);
			struct ibv_async_event ev = {.event_type = IBV_EVENT_CQ_ERR};
			ev.element.cq = dcq_ib(cq);
			dpv_async_event(to_dctx(dcq_ib(cq)->context), &ev);
			return;
		}
		cq_unlock(cq);
		return;
	}
	struct dpv_cqe *e = &cq->ring[cq->tail & (cq->size - 1)];
	e->wc = *wc;
	e->ts = rte_get_tsc_cycles();
	e->retire = retire;
	atomic_thread_fence(memory_order_release);
	cq->tail++;
	if (cq->armed && (!cq->solicited_only || solicited || wc->status != IBV_WC_SUCCESS)) {
		cq->armed = false;
		notify = true;
	}
	cq_unlock(cq);
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
	cq_lock(cq);
	uint32_t w = cq->head;
	for (uint32_t r = cq->head; r != cq->tail; r++) {
		struct dpv_cqe *e = &cq->ring[r & (cq->size - 1)];
		if (e->wc.qp_num == qpn)
			continue;
		if (w != r)
			cq->ring[w & (cq->size - 1)] = *e;
		w++;
	}
	cq->tail = w;
	cq_unlock(cq);
}

int dpv_poll_cq(struct ibv_cq *ibcq, int n, struct ibv_wc *wc)
{
	struct dpv_cq *cq = to_dcq(ibcq);
	int got = 0;
	if (n < 0)
		return -EINVAL;
	/* run to completion: the caller's thread drives RX (and timers) */
	if (cq->tail == cq->head) {
		dpv_progress_all();
		if (cq->lockless && dpv_td_claim(cq->upd->td))
			dpv_td_progress(cq->upd->td);
	}
	if (cq->tail == cq->head)
		return 0;
	cq_lock(cq);
	while (got < n && cq->head != cq->tail) {
		struct dpv_cqe *e = &cq->ring[cq->head & (cq->size - 1)];
		wc[got] = e->wc;
		if (e->retire)
			retire_sq(e);
		cq->head++;
		got++;
	}
	cq_unlock(cq);
	return got;
}

int dpv_req_notify_cq(struct ibv_cq *ibcq, int solicited_only)
{
	struct dpv_cq *cq = to_dcq(ibcq);
	cq_lock(cq);
	cq->armed = true;
	cq->solicited_only = solicited_only != 0;
	cq_unlock(cq);
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
