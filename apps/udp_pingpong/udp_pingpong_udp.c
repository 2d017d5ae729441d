/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * udp_pingpong: udp_lat and udp_bw. The receiver echoes (lat) or grants
 * credits (bw), in a thread of its own (--loopback) or as the --server; the
 * client sends and times. Their counts meet in the report: directly in
 * loopback, over the TCP control connection (done/result lines) otherwise.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>

#include "udp_pingpong.h"

/* receiver/echo side */
struct srv {
	int fd;
	const struct opts *o;
	uint64_t total;
	uint64_t received, good, corrupt, out_of_order, expected;
	uint64_t t_ref, t_last;
	char err[200];
};

static uint64_t ms_ticks(unsigned int ms) { return (uint64_t)((double)ms * 1e6 / pt_clk.ns_per_tick); }

/* One datagram into buf (len bytes max). Returns its length, 0 if none
 * arrived in time (blocking mode: 50 ms slices; busy: one try), -1 error. */
static ssize_t rx(int fd, uint8_t *buf, size_t len, bool busy)
{
	ssize_t n = recv(fd, buf, len, busy ? MSG_DONTWAIT : 0);
	if (n >= 0)
		return n;
	if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
		return 0;
	return -1;
}

static int tx(int fd, const uint8_t *buf, size_t len)
{
	for (;;) {
		ssize_t n = send(fd, buf, len, 0);
		if (n == (ssize_t)len)
			return 0;
		if (n < 0 && (errno == EINTR || errno == ENOBUFS || errno == EAGAIN) && !pt_stop)
			continue;
		return -1;
	}
}

/* ------------------------------------------------------------ server --- */

static void srv_fail(struct srv *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void srv_fail(struct srv *s, const char *fmt, ...)
{
	va_list ap;
	if (s->err[0])
		return;
	va_start(ap, fmt);
	vsnprintf(s->err, sizeof(s->err), fmt, ap);
	va_end(ap);
}

/* Echo (lat) or receive with credits (bw) until all messages arrived, the
 * stop flag, or (ctl >= 0) the client reports it is done. */
static void srv_run(struct srv *s, int ctl)
{
	const struct opts *o = s->o;
	uint32_t credit_every = o->rx_depth / 4 ? o->rx_depth / 4 : 1;
	uint64_t credited = 0, idle = 0, drain_end = 0;
	uint8_t *buf = malloc(MAX_SIZE + 64), cbuf[8];

	if (!buf) {
		srv_fail(s, "out of memory");
		return;
	}
	while (!pt_stop && s->received < s->total) {
		ssize_t n = rx(s->fd, buf, MAX_SIZE + 64, o->busy);
		if (n < 0) {
			srv_fail(s, "recv: %s", strerror(errno));
			break;
		}
		if (n == 0) {
			if (drain_end && pt_now() > drain_end)
				break;
			if (ctl >= 0 && !drain_end && (++idle % (o->busy ? 65536 : 1)) == 0 && pt_line_ready(ctl))
				drain_end = pt_now() + ms_ticks(100); /* client done: last chance */
			continue;
		}
		uint64_t now = pt_now(), seq = n >= 8 ? pt_seq(buf) : UINT64_MAX;
		bool ok = false;
		s->received++;
		if ((uint32_t)n != o->size || !pt_check(buf, o->size, seq)) {
			s->corrupt++;
		} else if (seq == s->expected || (seq > s->expected && seq < s->total)) {
			s->expected = seq + 1;
			s->good++;
			ok = true;
		} else {
			s->out_of_order++;
		}
		if (ok) {
			if (seq + 1 == o->warmup || (o->warmup == 0 && s->good == 1))
				s->t_ref = now;
			s->t_last = now;
		}
		if (o->lat && ok && tx(s->fd, buf, o->size)) {
			srv_fail(s, "send: %s", strerror(errno));
			break;
		}
		if (!o->lat && (s->received == 1 || s->received - credited >= credit_every ||
				s->received == s->total)) {
			pt_put_seq(cbuf, CREDIT_FLAG | s->received);
			if (tx(s->fd, cbuf, sizeof(cbuf))) {
				srv_fail(s, "send credit: %s", strerror(errno));
				break;
			}
			credited = s->received;
		}
	}
	free(buf);
}

static void *srv_thread(void *arg)
{
	srv_run(arg, -1);
	return NULL;
}

/* ------------------------------------------------------------ client --- */

static void run_lat(int fd, const struct opts *o)
{
	uint64_t total = o->warmup + o->iters, got_n = 0, t_start = 0, t_end = 0;
	uint64_t *rtt = calloc(o->iters, sizeof(uint64_t)), msg_to = ms_ticks(o->msg_timeout_ms);
	uint8_t *sb = malloc(o->size), *rb = malloc(MAX_SIZE + 64);

	if (!rtt || !sb || !rb) {
		fail("out of memory");
		goto out;
	}
	for (uint64_t i = 0; i < total && !pt_stop; i++) {
		pt_fill(sb, o->size, i);
		uint64_t t0 = pt_now();
		if (i == o->warmup)
			t_start = t0;
		if (tx(fd, sb, o->size)) {
			fail("send: %s", strerror(errno));
			break;
		}
		for (;;) {
			ssize_t n = rx(fd, rb, MAX_SIZE + 64, o->busy);
			if (n < 0) {
				fail("recv: %s", strerror(errno));
				goto out;
			}
			if (n > 0) {
				uint64_t t1 = pt_now(), seq = n >= 8 ? pt_seq(rb) : UINT64_MAX;
				rep.received++;
				if ((uint32_t)n != o->size || !pt_check(rb, o->size, seq)) {
					rep.corrupt++;
					fail("reply %" PRIu64 ": corrupt", i);
					goto out;
				}
				if (seq != i) {
					rep.out_of_order++;
					fail("reply %" PRIu64 ": sequence %" PRIu64, i, seq);
					goto out;
				}
				if (i >= o->warmup)
					rtt[got_n++] = t1 - t0;
				t_end = t1;
				break;
			}
			if (pt_stop)
				goto out;
			if (pt_now() - t0 > msg_to) {
				rep.lost++;
				fail("message %" PRIu64 ": no reply within %u ms (lost)", i, o->msg_timeout_ms);
				goto out;
			}
		}
	}
out:
	pt_clock_finish();
	rep.sent = got_n; /* overwritten below */
	rep.has_lat = got_n > 0;
	rep.lat_samples = got_n;
	if (got_n) {
		pt_lat_summary(rtt, got_n, &rep.lat);
		double ns = pt_ticks_ns(t_end - t_start);
		rep.rtt_per_s = ns > 0 ? (double)got_n / ns * 1e9 : 0;
	}
	if (got_n < o->iters)
		pt_report_fail(&rep, "only %" PRIu64 " of %" PRIu64 " round trips completed", got_n, o->iters);
	free(rtt);
	free(sb);
	free(rb);
}

/* returns messages sent */
static uint64_t run_bw(int fd, const struct opts *o)
{
	uint64_t total = o->warmup + o->iters, sent = 0, granted = 0, t_start = 0, t_end = 0, idle_since = 0;
	bool have_credit = false;
	uint8_t *sb = malloc(o->size), rb[64];

	if (!sb) {
		fail("out of memory");
		return 0;
	}
	while (!pt_stop && sent < total) {
		uint64_t limit = !have_credit ? 1 : granted + o->rx_depth;
		/* take credits: wait for one when at the limit, else just peek */
		bool must_wait = sent >= limit;
		for (;;) {
			ssize_t n = must_wait ? rx(fd, rb, sizeof(rb), o->busy) : recv(fd, rb, sizeof(rb), MSG_DONTWAIT);
			if (n < 0 && !must_wait && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
				n = 0;
			if (n < 0) {
				fail("recv: %s", strerror(errno));
				goto out;
			}
			if (n == 0)
				break;
			uint64_t v = n == 8 ? pt_seq(rb) : 0;
			if (!(v & CREDIT_FLAG)) {
				fail("unexpected datagram on the sender");
				goto out;
			}
			v &= ~CREDIT_FLAG;
			granted = v > granted ? v : granted;
			have_credit = true;
			must_wait = false;
		}
		limit = !have_credit ? 1 : granted + o->rx_depth;
		if (sent >= limit) {
			if (!idle_since)
				idle_since = pt_now();
			else if (pt_now() - idle_since > ms_ticks(o->msg_timeout_ms)) {
				fail("sender stalled for %u ms at message %" PRIu64 " (credit %" PRIu64 ")",
				     o->msg_timeout_ms, sent, granted);
				break;
			}
			continue;
		}
		idle_since = 0;
		for (int k = 0; k < 16 && sent < limit && sent < total; k++) {
			pt_fill(sb, o->size, sent);
			if (sent == o->warmup)
				t_start = pt_now();
			if (tx(fd, sb, o->size)) {
				fail("send: %s", strerror(errno));
				goto out;
			}
			sent++;
		}
	}
	t_end = pt_now();
out:
	pt_clock_finish();
	if (t_start && t_end > t_start)
		rep.tx_msg_per_s = (double)(sent - o->warmup) / pt_ticks_ns(t_end - t_start) * 1e9;
	free(sb);
	return sent;
}

static void fill_rate(uint64_t good, uint64_t warmup, uint32_t size, uint64_t rx_ns)
{
	uint64_t counted = good > warmup ? good - warmup : 0;
	if (warmup == 0 && counted)
		counted--;
	rep.has_rate = true;
	rep.duration_s = (double)rx_ns / 1e9;
	rep.msg_per_s = rx_ns ? (double)counted / rep.duration_s : 0;
	rep.gbit_per_s = rep.msg_per_s * size * 8 / 1e9;
}

static uint64_t srv_rx_ns(const struct srv *s)
{
	return s->t_ref && s->t_last > s->t_ref ? (uint64_t)pt_ticks_ns(s->t_last - s->t_ref) : 0;
}

/* ------------------------------------------------------------ results --- */

/* --server: receive until the client is done, then trade the counts: its
 * "done" line brings what it sent, our "result" line what arrived */
static void udp_server(struct srv *s, int cfd)
{
	const struct opts *o = s->o;
	char line[1024];

	srv_run(s, cfd);
	pt_clock_finish();
	if (s->err[0])
		pt_report_fail(&rep, "%s", s->err);
	if (pt_recv_line(cfd, line, sizeof(line)) || strncmp(line, "done", 4)) {
		pt_report_fail(&rep, "client went away before the end of the test");
	} else {
		pt_send_line(cfd, "result received=%" PRIu64 " good=%" PRIu64 " corrupt=%" PRIu64 " ooo=%" PRIu64
			     " rx_ns=%" PRIu64, s->received, s->good, s->corrupt, s->out_of_order, srv_rx_ns(s));
		pt_kv_u64(line, "sent", &rep.sent);
		if (!o->lat)
			fill_rate(s->good, o->warmup, o->size, srv_rx_ns(s));
	}
	rep.received = s->received;
	rep.corrupt = s->corrupt;
	rep.out_of_order = s->out_of_order;
	rep.lost = s->total > s->received ? s->total - s->received : 0;
}

/* the receiver's counts: from its thread (loopback, which is stopped and
 * joined here) or from the server's "result" line */
struct rx_counts {
	uint64_t good, recvd, corrupt, ooo, rx_ns;
};

static void udp_rx_counts(struct srv *s, pthread_t *th, int cfd, uint64_t sent, struct rx_counts *r)
{
	const struct opts *o = s->o;
	char line[1024];

	if (o->loopback) {
		if (!o->lat) {
			/* give the receiver thread the last in-flight messages */
			uint64_t end = pt_mono_ns() + 100000000ull;
			while (s->received < s->total && pt_mono_ns() < end && !pt_stop)
				usleep(1000);
		}
		pt_stop = 1; /* ends the receiver thread if it still waits */
		pthread_join(*th, NULL);
		if (s->err[0])
			pt_report_fail(&rep, "receiver: %s", s->err);
		r->good = s->good;
		r->recvd = s->received;
		r->corrupt = s->corrupt;
		r->ooo = s->out_of_order;
		r->rx_ns = srv_rx_ns(s);
	} else if (pt_send_line(cfd, "done sent=%" PRIu64, sent) || pt_recv_line(cfd, line, sizeof(line)) ||
		   !pt_kv_u64(line, "good", &r->good) || !pt_kv_u64(line, "received", &r->recvd) ||
		   !pt_kv_u64(line, "corrupt", &r->corrupt) || !pt_kv_u64(line, "ooo", &r->ooo) ||
		   !pt_kv_u64(line, "rx_ns", &r->rx_ns)) {
		fail("no result from the server");
	}
}

/* the client, or both ends of --loopback (the receiver in a thread);
 * returns -1 when the thread cannot be started */
static int udp_client(struct srv *s, const struct conn *c)
{
	const struct opts *o = s->o;
	struct rx_counts r = {0};
	uint64_t total = s->total, sent = 0;
	pthread_t th;

	if (o->loopback) {
		s->fd = c->ufd2;
		if (pthread_create(&th, NULL, srv_thread, s)) {
			fprintf(stderr, "%s: pthread_create failed\n", prog);
			return -1;
		}
	}
	if (o->lat)
		run_lat(c->ufd, o);
	else
		sent = run_bw(c->ufd, o);
	udp_rx_counts(s, &th, c->cfd, sent, &r);
	rep.corrupt += r.corrupt;
	rep.out_of_order += r.ooo;
	if (o->lat) {
		rep.sent = rep.lat_samples + o->warmup;
		if (rep.ok && r.good != total)
			pt_report_fail(&rep, "echo side saw %" PRIu64 " good pings of %" PRIu64, r.good, total);
	} else {
		rep.sent = sent;
		rep.received = r.recvd;
		rep.lost = total > r.recvd ? total - r.recvd : 0;
		fill_rate(r.good, o->warmup, o->size, r.rx_ns);
	}
	if (o->loopback && pt_stop && !pt_timed_out && rep.ok)
		pt_stop = 0; /* we stopped the thread ourselves */
	return 0;
}

/* udp_lat or udp_bw once the sockets are made; -1: a setup error */
int udp_run(const struct opts *o, const struct conn *c)
{
	struct srv s;

	memset(&s, 0, sizeof(s));
	s.o = o;
	s.total = o->warmup + o->iters;
	if (o->server) {
		s.fd = c->ufd;
		udp_server(&s, c->cfd);
		return 0;
	}
	return udp_client(&s, c);
}
