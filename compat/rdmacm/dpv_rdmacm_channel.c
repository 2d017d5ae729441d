/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * Event channels and events of the drop-in librdmacm.so.1:
 * rdma_create_event_channel, rdma_destroy_event_channel, rdma_get_cm_event,
 * rdma_ack_cm_event, rdma_event_str, and dpv_rdmacm_event_post() through
 * which the connection manager hands events to the application.
 *
 * rdma-core's channel fd is the kernel's /dev/infiniband/rdma_cm: readable
 * while events are queued, blocking unless the application sets
 * O_NONBLOCK. Ours is an eventfd kept at 1 while the queue is non-empty and
 * at 0 when it is empty (the counter only changes under the channel lock,
 * on the empty <-> non-empty transitions), so poll/select/epoll see the same
 * readiness. rdma_get_cm_event looks at the queue first; when it is empty it
 * fails with EAGAIN if the fd has O_NONBLOCK, else waits in poll() on the fd.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "dpv_rdmacm.h"

/* ---- the eventfd counter: 1 while events are queued (channel lock held) ---- */

static void fd_set_ready(struct dpv_rdmacm_channel *c)
{
	uint64_t one = 1;
	ssize_t n;

	do
		n = write(c->ch.fd, &one, sizeof(one));
	while (n < 0 && errno == EINTR);
}

static void fd_clear_ready(struct dpv_rdmacm_channel *c)
{
	uint64_t v;
	ssize_t n;

	/* the counter is 1: this read does not block even without O_NONBLOCK */
	do
		n = read(c->ch.fd, &v, sizeof(v));
	while (n < 0 && errno == EINTR);
}

static void queue_push(struct dpv_rdmacm_channel *c, struct dpv_rdmacm_event *e)
{
	TAILQ_INSERT_TAIL(&c->queue, e, link);
	if (c->queued++ == 0)
		fd_set_ready(c);
}

static void queue_remove(struct dpv_rdmacm_channel *c, struct dpv_rdmacm_event *e)
{
	TAILQ_REMOVE(&c->queue, e, link);
	if (--c->queued == 0)
		fd_clear_ready(c);
}

/* ---- channels ---- */

struct rdma_event_channel *rdma_create_event_channel(void)
{
	struct dpv_rdmacm_channel *c = calloc(1, sizeof(*c));
	struct dpv_rdmacm_dev *devs;

	/* the devices, as librdmacm's ucma_init opens them here: the first
	 * calls that need one (a listen, a bind) are quick then */
	(void)dpv_rdmacm_devices(&devs);

	if (c == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	c->ch.fd = eventfd(0, EFD_CLOEXEC);
	if (c->ch.fd < 0) {
		int e = errno;
		free(c);
		errno = e;
		return NULL;
	}
	pthread_mutex_init(&c->lock, NULL);
	TAILQ_INIT(&c->queue);
	return &c->ch;
}

/*
 * rdma-core requires every id of the channel destroyed and every event
 * acknowledged first; events still queued (never retrieved) are freed.
 */
static void channel_free(struct dpv_rdmacm_channel *c)
{
	close(c->ch.fd);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

void rdma_destroy_event_channel(struct rdma_event_channel *channel)
{
	struct dpv_rdmacm_channel *c;
	struct dpv_rdmacm_event *e;

	if (channel == NULL)
		return;
	c = to_dchannel(channel);
	pthread_mutex_lock(&c->lock);
	while ((e = TAILQ_FIRST(&c->queue)) != NULL) {
		queue_remove(c, e);
		free(e);
	}
	if (c->waiters) {
		/* another thread waits in rdma_get_cm_event (rping's cm_thread
		 * when its main thread gives up): with rdma-core that thread
		 * stays blocked in read() for ever; here it stays in poll(),
		 * and the channel's memory and fd stay until it leaves */
		c->destroyed = true;
		pthread_mutex_unlock(&c->lock);
		return;
	}
	pthread_mutex_unlock(&c->lock);
	channel_free(c);
}

struct dpv_rdmacm_channel *dpv_rdmacm_lock_channel(struct dpv_rdmacm_id *p)
{
	for (;;) {
		struct rdma_event_channel *ch = __atomic_load_n(&p->id.channel, __ATOMIC_ACQUIRE);
		struct dpv_rdmacm_channel *c = to_dchannel(ch);

		pthread_mutex_lock(&c->lock);
		if (__atomic_load_n(&p->id.channel, __ATOMIC_ACQUIRE) == ch)
			return c;
		pthread_mutex_unlock(&c->lock); /* migrated meanwhile */
	}
}

unsigned int dpv_rdmacm_move_events(struct dpv_rdmacm_channel *from, struct dpv_rdmacm_channel *to,
				    struct dpv_rdmacm_id *p)
{
	struct dpv_rdmacm_event *e, *next;
	unsigned int n = 0;

	for (e = TAILQ_FIRST(&from->queue); e != NULL; e = next) {
		next = TAILQ_NEXT(e, link);
		if (e->owner != p)
			continue;
		queue_remove(from, e);
		if (to != NULL)
			queue_push(to, e);
		else
			free(e);
		n++;
	}
	return n;
}

/* ---- events ---- */

int dpv_rdmacm_event_post(struct dpv_rdmacm_id *owner, const struct rdma_cm_event *ev,
			  const void *pdata, size_t pdata_len)
{
	struct dpv_rdmacm_channel *c;
	struct dpv_rdmacm_event *e;

	if (owner == NULL || ev == NULL || pdata_len > DPV_RDMACM_MAX_PRIVATE_DATA ||
	    (pdata_len > 0 && pdata == NULL))
		return dpv_rdmacm_err(EINVAL);
	e = calloc(1, sizeof(*e));
	if (e == NULL)
		return dpv_rdmacm_err(ENOMEM);
	e->event = *ev;
	e->owner = owner;
	if (pdata_len > 0)
		memcpy(e->private_data, pdata, pdata_len);
	/* conn and ud both start with private_data, private_data_len */
	if (ev->event == RDMA_CM_EVENT_MULTICAST_JOIN || ev->event == RDMA_CM_EVENT_MULTICAST_ERROR) {
		/* librdmacm hands the join's context over as private_data */
	} else if (ev->id != NULL && ev->id->qp_type == IBV_QPT_UD) {
		e->event.param.ud.private_data = pdata_len ? e->private_data : NULL;
		e->event.param.ud.private_data_len = (uint8_t)pdata_len;
	} else {
		e->event.param.conn.private_data = pdata_len ? e->private_data : NULL;
		e->event.param.conn.private_data_len = (uint8_t)pdata_len;
	}
	c = dpv_rdmacm_lock_channel(owner);
	if (owner->state == DPV_RDMACM_DESTROYING) {
		/* rdma_destroy_id has dropped the id's queued events: no new ones */
		pthread_mutex_unlock(&c->lock);
		free(e);
		return 0;
	}
	queue_push(c, e);
	pthread_mutex_unlock(&c->lock);
	return 0;
}

static int fd_nonblocking(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	return fl < 0 ? -1 : (fl & O_NONBLOCK) != 0;
}

/*
 * Blocks (unless O_NONBLOCK) until an event is queued. A signal does not
 * end the wait (as a restarted read of rdma-core's fd).
 */
/* The wait of rdma_get_cm_event (c->waiters counts the caller). */
static int wait_event(struct dpv_rdmacm_channel *c, struct rdma_cm_event **event)
{
	for (;;) {
		struct pollfd pfd = { .fd = c->ch.fd, .events = POLLIN };
		struct dpv_rdmacm_event *e;
		int nb;

		pthread_mutex_lock(&c->lock);
		e = c->destroyed ? NULL : TAILQ_FIRST(&c->queue);
		if (e != NULL) {
			queue_remove(c, e);
			e->owner->events_reported++;
			pthread_mutex_unlock(&c->lock);
			*event = &e->event;
			return 0;
		}
		bool gone = c->destroyed;
		pthread_mutex_unlock(&c->lock);
		if (gone)
			return dpv_rdmacm_err(EBADF);
		nb = fd_nonblocking(c->ch.fd);
		if (nb < 0)
			return -1;
		if (nb)
			return dpv_rdmacm_err(EAGAIN);
		if (poll(&pfd, 1, -1) < 0 && errno != EINTR)
			return -1;
	}
}

int rdma_get_cm_event(struct rdma_event_channel *channel, struct rdma_cm_event **event)
{
	struct dpv_rdmacm_channel *c;

	if (channel == NULL || event == NULL)
		return dpv_rdmacm_err(EINVAL);
	c = to_dchannel(channel);
	pthread_mutex_lock(&c->lock);
	c->waiters++;
	pthread_mutex_unlock(&c->lock);
	int ret = wait_event(c, event);
	int err = errno;
	if (ret == 0 && (*event)->event == RDMA_CM_EVENT_REJECTED && (*event)->id->qp != NULL) {
		/* librdmacm's ucma_modify_qp_err: in the thread that takes the
		 * event, so never under an ibv_destroy_qp of the application */
		struct ibv_qp_attr a = {.qp_state = IBV_QPS_ERR};
		ibv_modify_qp((*event)->id->qp, &a, IBV_QP_STATE);
	}
	pthread_mutex_lock(&c->lock);
	bool last = --c->waiters == 0 && c->destroyed;
	pthread_mutex_unlock(&c->lock);
	if (last)
		channel_free(c); /* destroyed while we waited */
	errno = err;
	return ret;
}

int rdma_ack_cm_event(struct rdma_cm_event *event)
{
	struct dpv_rdmacm_event *e;
	struct dpv_rdmacm_id *p;

	if (event == NULL)
		return dpv_rdmacm_err(EINVAL);
	e = to_devent(event);
	p = e->owner;
	free(e);
	/* rdma_destroy_id may free p as soon as the lock is released */
	pthread_mutex_lock(&p->lock);
	p->events_acked++;
	pthread_cond_broadcast(&p->acked_cond);
	pthread_mutex_unlock(&p->lock);
	return 0;
}

static const char *const event_names[] = {
	[RDMA_CM_EVENT_ADDR_RESOLVED] = "RDMA_CM_EVENT_ADDR_RESOLVED",
	[RDMA_CM_EVENT_ADDR_ERROR] = "RDMA_CM_EVENT_ADDR_ERROR",
	[RDMA_CM_EVENT_ROUTE_RESOLVED] = "RDMA_CM_EVENT_ROUTE_RESOLVED",
	[RDMA_CM_EVENT_ROUTE_ERROR] = "RDMA_CM_EVENT_ROUTE_ERROR",
	[RDMA_CM_EVENT_CONNECT_REQUEST] = "RDMA_CM_EVENT_CONNECT_REQUEST",
	[RDMA_CM_EVENT_CONNECT_RESPONSE] = "RDMA_CM_EVENT_CONNECT_RESPONSE",
	[RDMA_CM_EVENT_CONNECT_ERROR] = "RDMA_CM_EVENT_CONNECT_ERROR",
	[RDMA_CM_EVENT_UNREACHABLE] = "RDMA_CM_EVENT_UNREACHABLE",
	[RDMA_CM_EVENT_REJECTED] = "RDMA_CM_EVENT_REJECTED",
	[RDMA_CM_EVENT_ESTABLISHED] = "RDMA_CM_EVENT_ESTABLISHED",
	[RDMA_CM_EVENT_DISCONNECTED] = "RDMA_CM_EVENT_DISCONNECTED",
	[RDMA_CM_EVENT_DEVICE_REMOVAL] = "RDMA_CM_EVENT_DEVICE_REMOVAL",
	[RDMA_CM_EVENT_MULTICAST_JOIN] = "RDMA_CM_EVENT_MULTICAST_JOIN",
	[RDMA_CM_EVENT_MULTICAST_ERROR] = "RDMA_CM_EVENT_MULTICAST_ERROR",
	[RDMA_CM_EVENT_ADDR_CHANGE] = "RDMA_CM_EVENT_ADDR_CHANGE",
	[RDMA_CM_EVENT_TIMEWAIT_EXIT] = "RDMA_CM_EVENT_TIMEWAIT_EXIT",
};

const char *rdma_event_str(enum rdma_cm_event_type event)
{
	unsigned int i = (unsigned int)event;

	if (i < sizeof(event_names) / sizeof(event_names[0]) && event_names[i] != NULL)
		return event_names[i];
	return "UNKNOWN EVENT";
}
