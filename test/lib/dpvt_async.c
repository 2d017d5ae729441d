/* SPDX-License-Identifier: BSD-3-Clause */
/* Async-event waits with a timeout (dpvt_verbs.h). */
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>

#include "dpvt_verbs.h"

int dpvt_async_nonblock(struct ibv_context *ctx)
{
	int fl = fcntl(ctx->async_fd, F_GETFL);

	if (fl < 0)
		return -1;
	if (fl & O_NONBLOCK)
		return 0;
	return fcntl(ctx->async_fd, F_SETFL, fl | O_NONBLOCK) < 0 ? -1 : 0;
}

static void *element_of(const struct ibv_async_event *ev, enum ibv_event_type type)
{
	switch (type) {
	case IBV_EVENT_SRQ_LIMIT_REACHED:
	case IBV_EVENT_SRQ_ERR:
		return ev->element.srq;
	case IBV_EVENT_CQ_ERR:
		return ev->element.cq;
	default:
		return ev->element.qp;
	}
}

bool dpvt_wait_async(struct ibv_context *ctx, enum ibv_event_type type, void *obj, unsigned int timeout_ms,
		     int *others)
{
	uint64_t end = dpvt_now_ms() + timeout_ms;
	struct ibv_wc wc;
	/* inline progress: polling an empty CQ runs the engine of every port */
	struct ibv_cq *drive = ibv_create_cq(ctx, 1, NULL, NULL, 0);
	bool found = false;

	dpvt_async_nonblock(ctx);
	for (;;) {
		struct ibv_async_event ev;

		while (ibv_get_async_event(ctx, &ev) == 0) {
			bool match = ev.event_type == type && (!obj || element_of(&ev, type) == obj);

			if (!match) {
				printf("  (async event %s seen while waiting for %s)\n",
				       ibv_event_type_str(ev.event_type), ibv_event_type_str(type));
				if (others)
					(*others)++;
			}
			ibv_ack_async_event(&ev);
			if (match) {
				found = true;
				break;
			}
		}
		if (found || dpvt_now_ms() >= end)
			break;
		if (drive)
			ibv_poll_cq(drive, 1, &wc);
		struct pollfd pfd = {.fd = ctx->async_fd, .events = POLLIN};
		poll(&pfd, 1, 1);
	}
	if (drive)
		ibv_destroy_cq(drive);
	return found;
}

int dpvt_drain_async(struct ibv_context *ctx)
{
	struct ibv_async_event ev;
	int n = 0;

	dpvt_async_nonblock(ctx);
	while (ibv_get_async_event(ctx, &ev) == 0) {
		ibv_ack_async_event(&ev);
		n++;
	}
	return n;
}
