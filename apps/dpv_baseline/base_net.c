/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpv_baseline kernel network tests, on 127.0.0.1 between two threads of
 * this process (the kernel's loopback: no NIC, as dpverbs' loopback):
 *
 *   udp_lat  ping-pong of --udp-size datagrams; one-way = RTT / 2
 *   udp_bw   a stream of datagrams with receiver credits (the receiver
 *            reports its count every window/4 messages; the sender keeps
 *            at most --window in flight), rate at the receiver, as
 *            dpv_perf's UD SEND bw
 *   tcp_bw   one TCP connection, --tcp-chunk writes for --duration
 *
 * Receivers block in recv() by default; --busy makes them spin on
 * MSG_DONTWAIT. With --pin, sender and receiver run on --cpus A and B.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include "base.h"

#define CREDIT (1ull << 63)

/* a socket on 127.0.0.1, ephemeral port, receive timeout 200 ms */
static int sock_lo(int type, struct sockaddr_in *addr)
{
	socklen_t len = sizeof(*addr);
	struct timeval tv = {.tv_sec = 0, .tv_usec = 200000};
	int fd = socket(AF_INET, type | SOCK_CLOEXEC, 0), big = 4 << 20;
	if (fd < 0)
		return -1;
	memset(addr, 0, sizeof(*addr));
	addr->sin_family = AF_INET;
	addr->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (type == SOCK_DGRAM)
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &big, sizeof(big));
	if (bind(fd, (struct sockaddr *)addr, sizeof(*addr)) || getsockname(fd, (struct sockaddr *)addr, &len)) {
		close(fd);
		return -1;
	}
	return fd;
}

/* two connected UDP sockets */
static int udp_pair(int fd[2])
{
	struct sockaddr_in a[2];
	fd[0] = sock_lo(SOCK_DGRAM, &a[0]);
	fd[1] = sock_lo(SOCK_DGRAM, &a[1]);
	if (fd[0] < 0 || fd[1] < 0 || connect(fd[0], (struct sockaddr *)&a[1], sizeof(a[1])) ||
	    connect(fd[1], (struct sockaddr *)&a[0], sizeof(a[0]))) {
		fprintf(stderr, "dpv_baseline: UDP sockets on 127.0.0.1: %s\n", strerror(errno));
		if (fd[0] >= 0)
			close(fd[0]);
		if (fd[1] >= 0)
			close(fd[1]);
		return -1;
	}
	return 0;
}

/* one datagram: its length, 0 if none within the time limit, -1 on error */
static ssize_t rx(int fd, uint8_t *buf, size_t len, bool busy, uint64_t limit_ns)
{
	uint64_t t0 = busy ? pt_mono_ns() : 0;
	for (;;) {
		ssize_t n = recv(fd, buf, len, busy ? MSG_DONTWAIT : 0);
		if (n >= 0)
			return n;
		if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
			return -1;
		if (pt_stop || !busy || pt_mono_ns() - t0 > limit_ns)
			return 0;
	}
}

static uint64_t get_seq(const uint8_t *b) { uint64_t v; memcpy(&v, b, 8); return v; }
static void put_seq(uint8_t *b, uint64_t v) { memcpy(b, &v, 8); }

struct udp_side {
	const struct base_opts *o;
	int fd;
	uint64_t total, received, good, lost, ooo, t_ref, t_last;
	volatile int stop;
};

/* ---- ping-pong ---- */

static void *udp_echo(void *arg)
{
	struct udp_side *s = arg;
	uint8_t buf[65536];
	if (s->o->pin)
		base_pin(s->o->cpu_b);
	while (!s->stop && !pt_stop && s->received < s->total) {
		ssize_t n = rx(s->fd, buf, sizeof(buf), s->o->busy, 200000000ull);
		if (n < 0)
			break;
		if (n > 0) {
			s->received++;
			if (send(s->fd, buf, (size_t)n, 0) != n)
				break;
		}
	}
	return NULL;
}

static uint64_t udp_pings(const struct base_opts *o, int fd, uint64_t *rtt, uint64_t *span)
{
	uint8_t buf[65536] = {0}, in[65536];
	uint64_t total = o->warmup + o->udp_iters, n = 0, t_first = 0, t_last = 0;
	if (o->pin)
		base_pin(o->cpu_a);
	for (uint64_t i = 0; i < total && !pt_stop; i++) {
		put_seq(buf, i);
		uint64_t t0 = pt_now();
		if (send(fd, buf, o->udp_size, 0) != (ssize_t)o->udp_size)
			break;
		ssize_t r = rx(fd, in, sizeof(in), o->busy, 1000000000ull);
		uint64_t t1 = pt_now();
		if (r != (ssize_t)o->udp_size || get_seq(in) != i)
			break;
		if (i == o->warmup)
			t_first = t0;
		if (i >= o->warmup)
			rtt[n++] = t1 - t0;
		t_last = t1;
	}
	*span = t_last - t_first;
	return n;
}

json_t *base_udp_lat(const struct base_opts *o)
{
	struct udp_side s = {.o = o, .total = o->warmup + o->udp_iters};
	int fd[2];
	pthread_t t;
	uint64_t *rtt = malloc(sizeof(uint64_t) * (o->udp_iters ? o->udp_iters : 1)), span = 0;
	if (!rtt || udp_pair(fd)) {
		free(rtt);
		return NULL;
	}
	s.fd = fd[1];
	pthread_create(&t, NULL, udp_echo, &s);
	uint64_t n = udp_pings(o, fd[0], rtt, &span);
	s.stop = 1;
	pthread_join(t, NULL);
	close(fd[0]);
	close(fd[1]);
	struct ps_sum sum;
	double us = pt_clk.ns_per_tick / 1000.0 / 2.0, ns = pt_ticks_ns(span);
	ps_sort(rtt, n);
	ps_summary(rtt, n, us, &sum);
	json_t *j = json_pack("{s:s, s:i, s:s, s:s, s:I, s:o, s:f, s:o}", "what",
			      "kernel UDP ping-pong on 127.0.0.1, two threads", "size", o->udp_size, "recv",
			      o->busy ? "busy" : "blocking", "latency_definition", "one-way = RTT/2",
			      "samples", (json_int_t)n, "one_way_us", ps_sum_json(&sum),
			      "round_trips_per_s", ns > 0 ? (double)n / ns * 1e9 : 0, "cdf_us", ps_cdf(rtt, n, us));
	json_object_set_new(j, "status", json_string(n == o->udp_iters ? "pass" : "fail"));
	free(rtt);
	return j;
}

/* ---- stream ---- */

static void *udp_sink(void *arg)
{
	struct udp_side *s = arg;
	uint8_t buf[65536], cr[8];
	uint64_t every = s->o->window / 4 ? s->o->window / 4 : 1, credited = 0;
	uint64_t clock_at = s->o->warmup ? s->o->warmup : 1, expected = 0;
	if (s->o->pin)
		base_pin(s->o->cpu_b);
	while (!s->stop && !pt_stop && s->received < s->total) {
		ssize_t n = rx(s->fd, buf, sizeof(buf), s->o->busy, 200000000ull);
		if (n <= 0)
			break; /* 200 ms without a datagram: the rest is lost */
		uint64_t now = pt_now(), seq = get_seq(buf);
		s->received++;
		if (seq < expected) {
			s->ooo++;
		} else {
			s->lost += seq - expected;
			expected = seq + 1;
			s->good++;
		}
		if (s->good == clock_at)
			s->t_ref = now;
		s->t_last = now;
		if (s->received - credited >= every || s->received == 1 || s->received == s->total) {
			put_seq(cr, CREDIT | s->received);
			credited = s->received;
			if (send(s->fd, cr, 8, 0) != 8)
				break;
		}
	}
	return NULL;
}

/* the sender: at most window datagrams beyond the receiver's last credit */
static uint64_t udp_stream(const struct base_opts *o, int fd, uint64_t total)
{
	uint8_t buf[65536] = {0}, cr[64];
	uint64_t granted = 0, i = 0;
	if (o->pin)
		base_pin(o->cpu_a);
	while (i < total && !pt_stop) {
		bool blocked = i >= granted + o->window || (i > 0 && granted == 0);
		ssize_t n = blocked ? rx(fd, cr, sizeof(cr), o->busy, 1000000000ull) : recv(fd, cr, sizeof(cr), MSG_DONTWAIT);
		if (n == 8 && (get_seq(cr) & CREDIT) && (get_seq(cr) & ~CREDIT) > granted)
			granted = get_seq(cr) & ~CREDIT;
		else if (blocked && n <= 0)
			break; /* no credit for a second */
		if (i >= granted + o->window || (i > 0 && granted == 0))
			continue;
		put_seq(buf, i);
		if (send(fd, buf, o->udp_size, 0) == (ssize_t)o->udp_size)
			i++;
	}
	return i;
}

json_t *base_udp_bw(const struct base_opts *o)
{
	struct udp_side s = {.o = o, .total = o->warmup + o->udp_msgs};
	int fd[2];
	pthread_t t;
	if (udp_pair(fd))
		return NULL;
	s.fd = fd[1];
	pthread_create(&t, NULL, udp_sink, &s);
	uint64_t sent = udp_stream(o, fd[0], s.total);
	pthread_join(t, NULL);
	close(fd[0]);
	close(fd[1]);
	uint64_t clock_at = o->warmup ? o->warmup : 1, counted = s.good > clock_at ? s.good - clock_at : 0;
	double ns = s.t_last > s.t_ref && s.t_ref ? pt_ticks_ns(s.t_last - s.t_ref) : 0;
	double rate = ns > 0 ? (double)counted / ns * 1e9 : 0;
	json_t *j = json_pack("{s:s, s:i, s:s, s:i, s:I, s:I, s:I, s:I, s:f, s:f, s:f}", "what",
			      "kernel UDP stream on 127.0.0.1 with receiver credits, rate at the receiver", "size",
			      o->udp_size, "recv", o->busy ? "busy" : "blocking", "window", o->window, "sent",
			      (json_int_t)sent, "received", (json_int_t)s.received, "lost", (json_int_t)s.lost,
			      "out_of_order", (json_int_t)s.ooo, "msg_per_s", rate, "bytes_per_s", rate * o->udp_size,
			      "gbit_per_s", rate * o->udp_size * 8 / 1e9);
	json_object_set_new(j, "status", json_string(s.received == s.total ? "pass" : "fail"));
	return j;
}

/* ---- TCP ---- */

struct tcp_side {
	const struct base_opts *o;
	struct sockaddr_in addr;
	int err;
};

static void *tcp_source(void *arg)
{
	struct tcp_side *t = arg;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	uint8_t *buf = calloc(1, t->o->tcp_chunk);
	if (t->o->pin)
		base_pin(t->o->cpu_a);
	if (fd < 0 || !buf || connect(fd, (struct sockaddr *)&t->addr, sizeof(t->addr))) {
		t->err = 1;
	} else {
		uint64_t end = pt_mono_ns() + (uint64_t)t->o->duration_ms * 4000000ull;
		while (!pt_stop && pt_mono_ns() < end)
			if (send(fd, buf, t->o->tcp_chunk, MSG_NOSIGNAL) < 0 && errno != EINTR) {
				t->err = 1;
				break;
			}
	}
	if (fd >= 0)
		close(fd);
	free(buf);
	return NULL;
}

json_t *base_tcp_bw(const struct base_opts *o)
{
	struct tcp_side t = {.o = o};
	pthread_t th;
	int lfd = sock_lo(SOCK_STREAM, &t.addr), cfd = -1;
	uint8_t *buf = malloc(o->tcp_chunk);
	uint64_t bytes = 0, t0 = 0, t1 = 0;
	if (lfd < 0 || !buf || listen(lfd, 1) || pthread_create(&th, NULL, tcp_source, &t)) {
		fprintf(stderr, "dpv_baseline: TCP on 127.0.0.1: %s\n", strerror(errno));
		if (lfd >= 0)
			close(lfd);
		free(buf);
		return NULL;
	}
	if (o->pin)
		base_pin(o->cpu_b);
	cfd = accept(lfd, NULL, NULL);
	for (ssize_t n = 1; cfd >= 0 && n > 0 && !pt_stop;) {
		n = recv(cfd, buf, o->tcp_chunk, 0);
		if (n > 0) {
			t1 = pt_mono_ns();
			t0 = t0 ? t0 : t1;
			bytes += (uint64_t)n;
		} else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
			n = 1;
		}
	}
	pthread_join(th, NULL);
	if (cfd >= 0)
		close(cfd);
	close(lfd);
	free(buf);
	double bps = t1 > t0 ? (double)bytes / (double)(t1 - t0) * 1e9 : 0;
	return json_pack("{s:s, s:i, s:I, s:f, s:f, s:f, s:s}", "what",
			 "kernel TCP stream on 127.0.0.1, one connection, rate at the receiver", "chunk",
			 o->tcp_chunk, "bytes", (json_int_t)bytes, "duration_s", (double)(t1 - t0) / 1e9,
			 "bytes_per_s", bps, "gbit_per_s", bps * 8 / 1e9, "status", t.err || !bytes ? "fail" : "pass");
}
