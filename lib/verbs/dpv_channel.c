/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Completion channels. A channel is a pipe: arming a CQ with
 * ibv_req_notify_cq makes the engine that writes the next matching
 * completion write the CQ's pointer into the pipe (dpv_event_comp), so
 * channel->fd is pollable as with a kernel provider.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <unistd.h>

#include <rte_cycles.h>

#include "dpv_verbs.h"

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

/**
 * ibv_get_cq_event: waits for the next event on channel (blocking unless
 * channel->fd was made non-blocking). In run-to-completion mode the waiting
 * thread drives the engine itself for its first 100 us; then it blocks in
 * read() on the channel as rdma-core's does (the assist thread drives the
 * engine meanwhile), so that a signal interrupts the wait exactly as it
 * interrupts rdma-core's: EINTR for a handler without SA_RESTART (qperf's
 * test timer ends its test this way), a restarted wait with it.
 * RETURN VALUE: 0, or -1 with errno (EAGAIN non-blocking and none pending,
 * EINTR interrupted by a signal, EINVAL NULL argument).
 */
DPV_EXPORT int ibv_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq, void **cq_context)
{
	if (!channel || !cq || !cq_context) {
		errno = EINVAL;
		return -1;
	}
	const struct dpv_verbs_ops *ops = ctx_ops(channel->context);
	int fl = fcntl(channel->fd, F_GETFL);
	bool nonblock = fl >= 0 && (fl & O_NONBLOCK);
	bool background = ops->progress_is_background();
	uint64_t start = rte_get_tsc_cycles();
	uint64_t spin = dpv_tsc_hz() / 10000; /* 100 us of busy progress */
	struct pollfd pfd = {.fd = channel->fd, .events = POLLIN};
	bool will_block = false; /* the loop ended with no event pending */
	while (poll(&pfd, 1, 0) <= 0) {
		if (nonblock) {
			errno = EAGAIN;
			return -1;
		}
		if (background || rte_get_tsc_cycles() - start >= spin) {
			will_block = true;
			break;
		}
		ops->progress(NULL);
	}
	struct ibv_cq *got;
	/* this thread stops driving the engine: the assist thread must not
	 * sleep out its park (up to 1 ms) while nobody polls */
	bool hint = will_block && !background && ops->progress_blocking;
	if (hint)
		ops->progress_blocking(true);
	ssize_t r = read(channel->fd, &got, sizeof(got));
	if (hint)
		ops->progress_blocking(false);
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
