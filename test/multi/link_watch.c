/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * link_watch: a verbs program that follows a port's state through the
 * asynchronous events, for test/multi/link_memif.sh.
 *
 *   link_watch -d DEV -t SECONDS [-e EVENTS]
 *
 * Opens DEV, prints "ready state=<state>" and then waits up to SECONDS for
 * the port events named in EVENTS (comma-separated "err" and "active"), in
 * that order. After each one it checks that ibv_query_port agrees (DOWN
 * after IBV_EVENT_PORT_ERR, ACTIVE after IBV_EVENT_PORT_ACTIVE) and prints
 * "event <name> state=<state>". Exit 0 when every event came with the right
 * state, 1 otherwise (timeout, wrong state, unexpected event). Without -e
 * it holds the device open for SECONDS and exits 0.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static enum ibv_port_state port_state(struct ibv_context *ctx)
{
	struct ibv_port_attr pa;
	if (ibv_query_port(ctx, 1, &pa))
		return IBV_PORT_NOP;
	return pa.state;
}

/* The next port event within the deadline; -1 on timeout. */
static int next_event(struct ibv_context *ctx, double deadline)
{
	for (;;) {
		double left = deadline - now_s();
		if (left <= 0)
			return -1;
		struct pollfd pf = {.fd = ctx->async_fd, .events = POLLIN};
		int r = poll(&pf, 1, (int)(left * 1000) + 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			continue;
		struct ibv_async_event ev;
		if (ibv_get_async_event(ctx, &ev))
			return -1;
		int type = ev.event_type;
		ibv_ack_async_event(&ev);
		return type;
	}
}

int main(int argc, char **argv)
{
	const char *dev = "dpv0", *events = "";
	double secs = 10;
	int o;
	while ((o = getopt(argc, argv, "d:t:e:")) != -1) {
		switch (o) {
		case 'd': dev = optarg; break;
		case 't': secs = atof(optarg); break;
		case 'e': events = optarg; break;
		default:
			fprintf(stderr, "usage: %s -d DEV -t SECONDS [-e err,active,...]\n", argv[0]);
			return 2;
		}
	}
	int n = 0;
	struct ibv_device **list = ibv_get_device_list(&n);
	struct ibv_context *ctx = NULL;
	for (int i = 0; list && i < n && !ctx; i++)
		if (!strcmp(ibv_get_device_name(list[i]), dev))
			ctx = ibv_open_device(list[i]);
	if (!ctx) {
		fprintf(stderr, "link_watch: cannot open %s: %s\n", dev, strerror(errno));
		return 1;
	}
	printf("ready state=%s\n", ibv_port_state_str(port_state(ctx)));
	fflush(stdout);
	double deadline = now_s() + secs;
	char *want = strdup(events), *save = NULL;
	int rc = 0;
	for (char *w = strtok_r(want, ",", &save); w && !rc; w = strtok_r(NULL, ",", &save)) {
		int type = !strcmp(w, "err") ? IBV_EVENT_PORT_ERR : IBV_EVENT_PORT_ACTIVE;
		enum ibv_port_state st_want = type == IBV_EVENT_PORT_ERR ? IBV_PORT_DOWN : IBV_PORT_ACTIVE;
		int got = next_event(ctx, deadline);
		if (got < 0) {
			printf("timeout waiting for %s\n", w);
			rc = 1;
			break;
		}
		enum ibv_port_state st = port_state(ctx);
		printf("event %s state=%s\n", ibv_event_type_str(got), ibv_port_state_str(st));
		fflush(stdout);
		if (got != type || st != st_want) {
			printf("expected %s with state %s\n", ibv_event_type_str(type), ibv_port_state_str(st_want));
			rc = 1;
		}
	}
	free(want);
	while (!rc && !*events && now_s() < deadline)
		usleep(100 * 1000);
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	return rc;
}
