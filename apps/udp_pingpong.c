/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * udp_pingpong: the kernel UDP socket baseline for dpv_perf. Same tests,
 * same checks and the same report (text or --json):
 *
 *   udp_lat  ping-pong; one-way latency = RTT/2 (min, p50, p99, p99.9, max,
 *            mean) and round trips per second;
 *   udp_bw   streaming with receiver credits (the receiver reports how many
 *            messages it consumed every --rx-depth/4 messages; the sender
 *            keeps at most --rx-depth in flight), messages/s and Gbit/s.
 *   tcp_bw   the kernel TCP baseline: one TCP connection, the client writes
 *            --size bytes at a time (default 64 KiB) for --duration seconds,
 *            the server reads to the end of the stream. Every byte is
 *            counted (the server's count must equal the client's) and the
 *            first 8 bytes of every --size block of the stream carry the
 *            block's number, checked by the server; the rate is the
 *            receiver's (first to last byte). "Messages" are the --size
 *            blocks.
 *
 * Modes: --loopback (two threads in one process, 127.0.0.1), or --server and
 * a client given the server's host; TCP carries the parameters and the UDP
 * port (tcp_bw: the port of the data connection, which the server listens on
 * at the address the client reached it by). Receiving blocks in recv() by
 * default; --busy spins on recv(MSG_DONTWAIT) instead.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>

#include "perf_common.h"

#define DEF_TCP_PORT 18601
#define CREDIT_FLAG (1ull << 63)
#define MAX_SIZE 65000
#define TCP_MAX_SIZE (16u << 20)
#define TCP_DEF_SIZE 65536

struct opts {
	const char *test_name;
	bool lat, tcp;
	bool size_set;
	uint32_t size, rx_depth;
	unsigned int duration_s;
	uint64_t iters, warmup;
	unsigned int timeout_s, msg_timeout_ms;
	int tcp_port;
	const char *host;
	bool server, loopback, json, busy;
	int clock;
};

/* receiver/echo side */
struct srv {
	int fd;
	const struct opts *o;
	uint64_t total;
	uint64_t received, good, corrupt, out_of_order, expected;
	uint64_t t_ref, t_last;
	char err[200];
};

static const char *prog = "udp_pingpong";
static struct pt_report rep;

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

static int udp_socket(int family, const struct opts *o)
{
	int fd = socket(family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	/* room for a full credit window of datagrams (skb overhead included) */
	int sz = (int)(o->rx_depth * (o->size + 2048u) + 65536u);
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &sz, sizeof(sz)))
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
	if (!o->busy) {
		struct timeval tv = {0, 50000};
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	}
	return fd;
}

static int bind_any(int fd, int family, const char *addr)
{
	struct sockaddr_storage ss;
	memset(&ss, 0, sizeof(ss));
	if (family == AF_INET6) {
		struct sockaddr_in6 *s = (struct sockaddr_in6 *)&ss;
		s->sin6_family = AF_INET6;
		s->sin6_addr = in6addr_any;
		if (addr)
			inet_pton(AF_INET6, addr, &s->sin6_addr);
		return bind(fd, (struct sockaddr *)s, sizeof(*s));
	}
	struct sockaddr_in *s = (struct sockaddr_in *)&ss;
	s->sin_family = AF_INET;
	s->sin_addr.s_addr = htonl(INADDR_ANY);
	if (addr)
		inet_pton(AF_INET, addr, &s->sin_addr);
	return bind(fd, (struct sockaddr *)s, sizeof(*s));
}

static int local_port(int fd)
{
	struct sockaddr_storage ss;
	socklen_t l = sizeof(ss);
	if (getsockname(fd, (struct sockaddr *)&ss, &l))
		return -1;
	return ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
					      : ((struct sockaddr_in *)&ss)->sin_port);
}

/* connect the UDP socket to the address of a TCP peer/local end, other port */
static int connect_like(int ufd, int tcpfd, bool peer, int port)
{
	struct sockaddr_storage ss;
	socklen_t l = sizeof(ss);
	if ((peer ? getpeername : getsockname)(tcpfd, (struct sockaddr *)&ss, &l))
		return -1;
	if (ss.ss_family == AF_INET6)
		((struct sockaddr_in6 *)&ss)->sin6_port = htons((uint16_t)port);
	else
		((struct sockaddr_in *)&ss)->sin_port = htons((uint16_t)port);
	return connect(ufd, (struct sockaddr *)&ss, l);
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

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail(const char *fmt, ...)
{
	char m[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(m, sizeof(m), fmt, ap);
	va_end(ap);
	pt_report_fail(&rep, "%s", m);
	pt_stop = 1;
}

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

/* ------------------------------------------------------------ tcp_bw --- */

/* the receiving end of the stream (server, or the loopback thread) */
struct tcp_sink {
	int fd, lfd;                 /* data socket; loopback: the listener to accept from */
	const struct opts *o;
	uint64_t bytes, first_bytes; /* every byte; those of the first recv() */
	uint64_t bad_stamps;         /* block-number bytes that did not match */
	uint64_t t_first, t_last;    /* ticks of the first and the last recv() */
	bool got;
	char err[200];
};

static void tcp_sink_run(struct tcp_sink *k)
{
	const struct opts *o = k->o;
	uint64_t bs = o->size;
	size_t len = bs < TCP_DEF_SIZE ? TCP_DEF_SIZE : bs;
	uint8_t *buf;

	if (k->fd < 0 && k->lfd >= 0 && (k->fd = pt_tcp_accept(k->lfd)) < 0) {
		snprintf(k->err, sizeof(k->err), "no data connection");
		return;
	}
	if (!(buf = malloc(len))) {
		snprintf(k->err, sizeof(k->err), "out of memory");
		return;
	}
	for (;;) {
		ssize_t n = recv(k->fd, buf, len, o->busy ? MSG_DONTWAIT : 0);
		if (n == 0)
			break; /* the end of the stream */
		if (n < 0) {
			if ((errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) && !pt_stop)
				continue;
			if (!pt_stop)
				snprintf(k->err, sizeof(k->err), "recv: %s", strerror(errno));
			break;
		}
		uint64_t now = pt_now(), p = k->bytes, end = k->bytes + (uint64_t)n;
		if (!k->got) {
			k->got = true;
			k->t_first = now;
			k->first_bytes = (uint64_t)n;
		}
		k->t_last = now;
		/* the first 8 bytes of every block: its number, little endian */
		while (p < end) {
			uint64_t in = p % bs;
			if (in < 8) {
				if (buf[p - k->bytes] != (uint8_t)((p / bs) >> (8 * in)))
					k->bad_stamps++;
				p++;
			} else {
				p += bs - in;
			}
		}
		k->bytes = end;
	}
	free(buf);
}

static void *tcp_sink_thread(void *arg)
{
	tcp_sink_run(arg);
	return NULL;
}

static uint64_t tcp_rx_ns(const struct tcp_sink *k)
{
	return k->got && k->t_last > k->t_first ? (uint64_t)pt_ticks_ns(k->t_last - k->t_first) : 0;
}

/* The sending end: whole --size blocks for --duration seconds, then the end
 * of the stream (shutdown). Returns the blocks sent; *bytes: every byte. */
static uint64_t tcp_source_run(int fd, const struct opts *o, uint64_t *bytes)
{
	uint64_t bs = o->size, blocks = 0, t0, t1, end;
	uint8_t *buf = malloc(bs);

	*bytes = 0;
	if (!buf) {
		fail("out of memory");
		shutdown(fd, SHUT_WR);
		return 0;
	}
	for (uint64_t i = 8; i < bs; i++)
		buf[i] = (uint8_t)(i * 7 + 1);
	t0 = pt_mono_ns();
	end = t0 + (uint64_t)o->duration_s * 1000000000ull;
	while (!pt_stop && pt_mono_ns() < end) {
		size_t off = 0;
		pt_put_seq(buf, blocks);
		while (off < bs) {
			ssize_t n = send(fd, buf + off, bs - off, MSG_NOSIGNAL);
			if (n > 0) {
				off += (size_t)n;
				*bytes += (uint64_t)n;
				continue;
			}
			if (n < 0 && errno == EINTR && !pt_stop)
				continue;
			if (!pt_stop)
				fail("send: %s", n < 0 ? strerror(errno) : "nothing sent");
			goto out;
		}
		blocks++;
	}
out:
	t1 = pt_mono_ns();
	if (t1 > t0)
		rep.tx_msg_per_s = (double)blocks / (double)(t1 - t0) * 1e9;
	shutdown(fd, SHUT_WR);
	free(buf);
	return blocks;
}

/* rate at the receiver: the bytes after the first recv() over the interval
 * from the first to the last recv(); "messages" are --size blocks */
static void tcp_fill_rate(uint64_t bytes, uint64_t first, uint64_t rx_ns, uint32_t size)
{
	double counted = bytes > first ? (double)(bytes - first) : 0;
	rep.has_rate = true;
	rep.received = bytes / size;
	rep.duration_s = (double)rx_ns / 1e9;
	rep.msg_per_s = rx_ns ? counted / size / rep.duration_s : 0;
	rep.gbit_per_s = rx_ns ? counted * 8 / (double)rx_ns : 0;
}

/* every byte sent arrived, nothing more */
static void tcp_check(uint64_t sent_bytes, uint64_t rx_bytes, uint64_t sent_blocks, uint32_t size)
{
	rep.sent = sent_blocks;
	rep.lost = sent_blocks > rx_bytes / size ? sent_blocks - rx_bytes / size : 0;
	if (sent_bytes != rx_bytes)
		pt_report_fail(&rep, "the receiver counted %" PRIu64 " bytes, the sender sent %" PRIu64, rx_bytes,
			       sent_bytes);
	else if (!rx_bytes)
		pt_report_fail(&rep, "nothing was sent");
}

/* a TCP socket connected to the peer of the control connection cfd (peer)
 * or to its local end (!peer), at another port */
static int tcp_connect_like(int cfd, bool peer, int port)
{
	struct sockaddr_storage ss;
	socklen_t l = sizeof(ss);
	int fd;
	if ((peer ? getpeername : getsockname)(cfd, (struct sockaddr *)&ss, &l))
		return -1;
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (connect_like(fd, cfd, peer, port)) {
		close(fd);
		return -1;
	}
	return fd;
}

/* a TCP listener at the local address of cfd (or 127.0.0.1 if cfd < 0),
 * ephemeral port */
static int tcp_listen_like(int cfd)
{
	struct sockaddr_storage ss;
	socklen_t l = sizeof(ss);
	int fd, one = 1;
	if (cfd >= 0) {
		if (getsockname(cfd, (struct sockaddr *)&ss, &l))
			return -1;
	} else {
		struct sockaddr_in *a = (struct sockaddr_in *)&ss;
		memset(&ss, 0, sizeof(ss));
		a->sin_family = AF_INET;
		a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		l = sizeof(*a);
	}
	if (ss.ss_family == AF_INET6)
		((struct sockaddr_in6 *)&ss)->sin6_port = 0;
	else
		((struct sockaddr_in *)&ss)->sin_port = 0;
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&ss, l) || listen(fd, 1)) {
		close(fd);
		return -1;
	}
	return fd;
}

/* the whole tcp_bw test once the connections are made: server (cfd, dfd
 * accepted), client (cfd, dfd connected) or loopback (dlfd listening, dfd
 * connected to it) */
static void tcp_run(const struct opts *o, int cfd, int dfd, int dlfd)
{
	char line[1024];
	uint64_t sent_bytes = 0, sent_blocks = 0;

	if (o->server) {
		struct tcp_sink k = {.fd = dfd, .lfd = -1, .o = o};
		tcp_sink_run(&k);
		pt_clock_finish();
		if (k.err[0])
			pt_report_fail(&rep, "%s", k.err);
		if (pt_recv_line(cfd, line, sizeof(line)) || strncmp(line, "done", 4) ||
		    !pt_kv_u64(line, "bytes", &sent_bytes) || !pt_kv_u64(line, "sent", &sent_blocks)) {
			pt_report_fail(&rep, "client went away before the end of the test");
		} else {
			pt_send_line(cfd, "result bytes=%" PRIu64 " first=%" PRIu64 " corrupt=%" PRIu64 " rx_ns=%" PRIu64,
				     k.bytes, k.first_bytes, k.bad_stamps, tcp_rx_ns(&k));
			tcp_check(sent_bytes, k.bytes, sent_blocks, o->size);
		}
		rep.corrupt = k.bad_stamps;
		tcp_fill_rate(k.bytes, k.first_bytes, tcp_rx_ns(&k), o->size);
		return;
	}
	uint64_t rx_bytes = 0, first = 0, corrupt = 0, rx_ns = 0;
	struct tcp_sink k = {.fd = -1, .lfd = dlfd, .o = o};
	pthread_t th;
	if (o->loopback && pthread_create(&th, NULL, tcp_sink_thread, &k)) {
		fail("pthread_create failed");
		return;
	}
	sent_blocks = tcp_source_run(dfd, o, &sent_bytes);
	if (o->loopback) {
		pthread_join(th, NULL);
		if (k.fd >= 0)
			close(k.fd);
		if (k.err[0])
			pt_report_fail(&rep, "receiver: %s", k.err);
		rx_bytes = k.bytes;
		first = k.first_bytes;
		corrupt = k.bad_stamps;
		rx_ns = tcp_rx_ns(&k);
	} else if (pt_send_line(cfd, "done sent=%" PRIu64 " bytes=%" PRIu64, sent_blocks, sent_bytes) ||
		   pt_recv_line(cfd, line, sizeof(line)) || !pt_kv_u64(line, "bytes", &rx_bytes) ||
		   !pt_kv_u64(line, "first", &first) || !pt_kv_u64(line, "corrupt", &corrupt) ||
		   !pt_kv_u64(line, "rx_ns", &rx_ns)) {
		fail("no result from the server");
	}
	pt_clock_finish();
	rep.corrupt += corrupt;
	tcp_check(sent_bytes, rx_bytes, sent_blocks, o->size);
	tcp_fill_rate(rx_bytes, first, rx_ns, o->size);
}

/* -------------------------------------------------------------- main --- */

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: %s [options] [server-host]\n"
		"       %s --server [options]\n"
		"       %s --loopback [options]\n"
		"\n"
		"Kernel socket baselines: UDP ping-pong latency and message rate, TCP stream.\n"
		"\n"
		"  -t, --test=NAME          udp_lat (default), udp_bw or tcp_bw (also: lat, bw)\n"
		"  -s, --size=BYTES         payload size, 8 .. %d (default 64); tcp_bw: the\n"
		"                           size of each write, 8 .. %u (default %d)\n"
		"      --duration=SEC       tcp_bw: how long the client writes (default 3)\n"
		"  -n, --iters=N            measured messages/round trips (default 100000)\n"
		"      --warmup=N           warm-up messages/round trips (default 1000)\n"
		"  -r, --rx-depth=N         udp_bw: messages in flight allowed by the\n"
		"                           receiver's credits (default 512)\n"
		"      --busy               spin on recv(MSG_DONTWAIT) instead of blocking\n"
		"      --loopback           both ends in this process, two threads (default\n"
		"                           when neither --server nor a host is given)\n"
		"      --server             wait for a client; it sends the parameters\n"
		"  server-host              run as the client of that server\n"
		"  -p, --port=PORT          TCP port of the parameter exchange (default %d)\n"
		"      --timeout=SEC        global timeout, exit non-zero after it (default 60)\n"
		"      --msg-timeout=MS     a reply/credit missing this long is a loss (default 1000)\n"
		"      --clock=tsc|mono     timer (default: tsc if invariant, else CLOCK_MONOTONIC)\n"
		"      --json               print one JSON object instead of text\n"
		"  -h, --help               this text\n"
		"\n"
		"Latency is printed as one-way = RTT/2. tcp_bw counts every byte (the\n"
		"server's count must equal the client's) and checks the block number in\n"
		"the first 8 bytes of every --size block; its \"messages\" are these blocks.\n"
		"Exit status: 0 pass, 1 failed check or timeout, 2 usage or setup error.\n",
		prog, prog, prog, MAX_SIZE, TCP_MAX_SIZE, TCP_DEF_SIZE, DEF_TCP_PORT);
}

static int parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out, const char *what)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 0);
	if (errno || end == s || *end || v < min || v > max || s[0] == '-') {
		fprintf(stderr, "%s: %s: must be an integer between %" PRIu64 " and %" PRIu64 " (got \"%s\")\n",
			prog, what, min, max, s);
		return -1;
	}
	*out = v;
	return 0;
}

static int set_test(struct opts *o, const char *name)
{
	if (!strcmp(name, "udp_lat") || !strcmp(name, "lat"))
		o->lat = true, o->tcp = false, o->test_name = "udp_lat";
	else if (!strcmp(name, "udp_bw") || !strcmp(name, "bw"))
		o->lat = false, o->tcp = false, o->test_name = "udp_bw";
	else if (!strcmp(name, "tcp_bw"))
		o->lat = false, o->tcp = true, o->test_name = "tcp_bw";
	else
		return -1;
	return 0;
}

enum { OPT_WARMUP = 256, OPT_BUSY, OPT_LOOPBACK, OPT_SERVER, OPT_TIMEOUT, OPT_MSG_TIMEOUT, OPT_CLOCK, OPT_JSON,
       OPT_DURATION };

static int parse_args(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		{"test", required_argument, NULL, 't'},
		{"size", required_argument, NULL, 's'},
		{"iters", required_argument, NULL, 'n'},
		{"warmup", required_argument, NULL, OPT_WARMUP},
		{"rx-depth", required_argument, NULL, 'r'},
		{"busy", no_argument, NULL, OPT_BUSY},
		{"loopback", no_argument, NULL, OPT_LOOPBACK},
		{"server", no_argument, NULL, OPT_SERVER},
		{"port", required_argument, NULL, 'p'},
		{"timeout", required_argument, NULL, OPT_TIMEOUT},
		{"msg-timeout", required_argument, NULL, OPT_MSG_TIMEOUT},
		{"clock", required_argument, NULL, OPT_CLOCK},
		{"json", no_argument, NULL, OPT_JSON},
		{"duration", required_argument, NULL, OPT_DURATION},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	uint64_t v;
	int c;
	while ((c = getopt_long(argc, argv, "t:s:n:r:p:h", lo, NULL)) != -1) {
		switch (c) {
		case 't':
			if (set_test(o, optarg)) {
				fprintf(stderr, "%s: unknown test \"%s\" (udp_lat, udp_bw, tcp_bw)\n", prog, optarg);
				return -1;
			}
			break;
		case 's':
			/* the range of the test is checked after the options */
			if (parse_u64(optarg, PT_MIN_SIZE, TCP_MAX_SIZE, &v, "--size"))
				return -1;
			o->size = (uint32_t)v;
			o->size_set = true;
			break;
		case OPT_DURATION:
			if (parse_u64(optarg, 1, 3600, &v, "--duration"))
				return -1;
			o->duration_s = (unsigned int)v;
			break;
		case 'n':
			if (parse_u64(optarg, 1, 1000000000ull, &o->iters, "--iters"))
				return -1;
			break;
		case OPT_WARMUP:
			if (parse_u64(optarg, 0, 1000000000ull, &o->warmup, "--warmup"))
				return -1;
			break;
		case 'r':
			if (parse_u64(optarg, 1, 65536, &v, "--rx-depth"))
				return -1;
			o->rx_depth = (uint32_t)v;
			break;
		case OPT_BUSY:
			o->busy = true;
			break;
		case OPT_LOOPBACK:
			o->loopback = true;
			break;
		case OPT_SERVER:
			o->server = true;
			break;
		case 'p':
			if (parse_u64(optarg, 1, 65535, &v, "--port"))
				return -1;
			o->tcp_port = (int)v;
			break;
		case OPT_TIMEOUT:
			if (parse_u64(optarg, 1, 86400, &v, "--timeout"))
				return -1;
			o->timeout_s = (unsigned int)v;
			break;
		case OPT_MSG_TIMEOUT:
			if (parse_u64(optarg, 1, 600000, &v, "--msg-timeout"))
				return -1;
			o->msg_timeout_ms = (unsigned int)v;
			break;
		case OPT_CLOCK:
			if (!strcmp(optarg, "tsc"))
				o->clock = 1;
			else if (!strcmp(optarg, "mono"))
				o->clock = 0;
			else {
				fprintf(stderr, "%s: --clock: tsc or mono\n", prog);
				return -1;
			}
			break;
		case OPT_JSON:
			o->json = true;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			return -1;
		}
	}
	if (optind < argc)
		o->host = argv[optind++];
	if (optind < argc) {
		fprintf(stderr, "%s: unexpected argument \"%s\"\n", prog, argv[optind]);
		return -1;
	}
	if ((o->server ? 1 : 0) + (o->host ? 1 : 0) + (o->loopback ? 1 : 0) > 1) {
		fprintf(stderr, "%s: --server, --loopback and a server host exclude each other\n", prog);
		return -1;
	}
	if (!o->server && !o->host)
		o->loopback = true;
	if (o->tcp && !o->size_set)
		o->size = TCP_DEF_SIZE;
	if (!o->tcp && o->size > MAX_SIZE) {
		fprintf(stderr, "%s: --size: must be an integer between %d and %d (got %u)\n", prog, PT_MIN_SIZE,
			MAX_SIZE, o->size);
		return -1;
	}
	return 0;
}

static void add_params(const struct opts *o)
{
	json_t *p = rep.params;
	json_object_set_new(p, "size", json_integer(o->size));
	if (o->tcp) {
		json_object_set_new(p, "duration_s", json_integer(o->duration_s));
	} else {
		json_object_set_new(p, "iters", json_integer((json_int_t)o->iters));
		json_object_set_new(p, "warmup", json_integer((json_int_t)o->warmup));
		json_object_set_new(p, "rx_depth", json_integer(o->rx_depth));
	}
	json_object_set_new(p, "busy_poll", json_boolean(o->busy));
	json_object_set_new(p, "transport", json_string(o->tcp ? "kernel TCP" : "kernel UDP"));
	json_object_set_new(p, "timeout_s", json_integer(o->timeout_s));
}

int main(int argc, char **argv)
{
	struct opts o = {
		.test_name = "udp_lat", .lat = true, .size = 64, .rx_depth = 512, .iters = 100000,
		.warmup = 1000, .timeout_s = 60, .msg_timeout_ms = 1000, .tcp_port = DEF_TCP_PORT, .clock = -1,
		.duration_s = 3,
	};
	int lfd = -1, cfd = -1, ufd = -1, ufd2 = -1, dfd = -1, dlfd = -1, rc = 2;
	char line[1024];
	struct srv s;

	if (parse_args(argc, argv, &o))
		return 2;
	pt_signals_init(argv[0], o.timeout_s);
	pt_report_init(&rep, prog, o.test_name);
	rep.mode = o.loopback ? "loopback" : "two-process";
	rep.role = o.loopback ? "both" : (o.server ? "server" : "client");
	pt_clock_init(o.clock);
	memset(&s, 0, sizeof(s));

	if (o.server) {
		lfd = pt_tcp_listen(NULL, o.tcp_port);
		if (lfd < 0)
			goto out;
		if (!o.json)
			printf("%s: waiting for a client on TCP port %d\n", prog, o.tcp_port);
		fflush(stdout);
		cfd = pt_tcp_accept(lfd);
		if (cfd < 0)
			goto out;
		uint64_t v[6];
		char tname[32];
		if (pt_recv_line(cfd, line, sizeof(line)) || strncmp(line, "hello ", 6) ||
		    !pt_kv_str(line, "test", tname, sizeof(tname)) || set_test(&o, tname) ||
		    !pt_kv_u64(line, "size", &v[0]) || !pt_kv_u64(line, "iters", &v[1]) ||
		    !pt_kv_u64(line, "warmup", &v[2]) || !pt_kv_u64(line, "rxdepth", &v[3]) ||
		    !pt_kv_u64(line, "busy", &v[4]) || !pt_kv_u64(line, "udpport", &v[5]) || v[0] < PT_MIN_SIZE ||
		    v[0] > (o.tcp ? TCP_MAX_SIZE : MAX_SIZE)) {
			fprintf(stderr, "%s: bad parameters from the client\n", prog);
			goto out;
		}
		o.size = (uint32_t)v[0];
		o.iters = v[1];
		o.warmup = v[2];
		o.rx_depth = (uint32_t)v[3];
		o.busy = v[4] != 0;
		rep.test = o.test_name;
		if (o.tcp) {
			/* the data connection: a listener at the address the client reached */
			uint64_t d;
			if (pt_kv_u64(line, "duration", &d) && d >= 1 && d <= 3600)
				o.duration_s = (unsigned int)d;
			dlfd = tcp_listen_like(cfd);
			if (dlfd < 0 || pt_send_line(cfd, "ok udpport=0 tcpport=%d", local_port(dlfd))) {
				fprintf(stderr, "%s: TCP data listener: %s\n", prog, strerror(errno));
				goto out;
			}
			dfd = pt_tcp_accept(dlfd);
			if (dfd < 0)
				goto out;
			goto ready;
		}
		struct sockaddr_storage ss;
		socklen_t l = sizeof(ss);
		getsockname(cfd, (struct sockaddr *)&ss, &l);
		ufd = udp_socket(ss.ss_family, &o);
		if (ufd < 0 || bind_any(ufd, ss.ss_family, NULL) || connect_like(ufd, cfd, true, (int)v[5])) {
			fprintf(stderr, "%s: UDP socket: %s\n", prog, strerror(errno));
			goto out;
		}
		if (pt_send_line(cfd, "ok udpport=%d", local_port(ufd)))
			goto out;
	} else if (o.host) {
		cfd = pt_tcp_connect(o.host, o.tcp_port, o.timeout_s);
		if (cfd < 0)
			goto out;
		if (o.tcp) {
			uint64_t port;
			if (pt_send_line(cfd, "hello test=%s size=%u iters=0 warmup=0 rxdepth=0 busy=%d udpport=0 duration=%u",
					 o.test_name, o.size, o.busy, o.duration_s) ||
			    pt_recv_line(cfd, line, sizeof(line)) || !pt_kv_u64(line, "tcpport", &port) ||
			    (dfd = tcp_connect_like(cfd, true, (int)port)) < 0) {
				fprintf(stderr, "%s: parameter exchange or data connection with the server failed\n", prog);
				goto out;
			}
			goto ready;
		}
		struct sockaddr_storage ss;
		socklen_t l = sizeof(ss);
		getsockname(cfd, (struct sockaddr *)&ss, &l);
		ufd = udp_socket(ss.ss_family, &o);
		if (ufd < 0 || bind_any(ufd, ss.ss_family, NULL)) {
			fprintf(stderr, "%s: UDP socket: %s\n", prog, strerror(errno));
			goto out;
		}
		uint64_t port;
		if (pt_send_line(cfd, "hello test=%s size=%u iters=%" PRIu64 " warmup=%" PRIu64 " rxdepth=%u busy=%d udpport=%d",
				 o.test_name, o.size, o.iters, o.warmup, o.rx_depth, o.busy, local_port(ufd)) ||
		    pt_recv_line(cfd, line, sizeof(line)) || !pt_kv_u64(line, "udpport", &port) ||
		    connect_like(ufd, cfd, true, (int)port)) {
			fprintf(stderr, "%s: parameter exchange with the server failed\n", prog);
			goto out;
		}
	} else if (o.tcp) {
		struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
		dlfd = tcp_listen_like(-1);
		if (dlfd >= 0) {
			a.sin_port = htons((uint16_t)local_port(dlfd));
			dfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		}
		if (dlfd < 0 || dfd < 0 || connect(dfd, (struct sockaddr *)&a, sizeof(a))) {
			fprintf(stderr, "%s: TCP on 127.0.0.1: %s\n", prog, strerror(errno));
			goto out;
		}
	} else {
		ufd = udp_socket(AF_INET, &o);
		ufd2 = udp_socket(AF_INET, &o);
		if (ufd < 0 || ufd2 < 0 || bind_any(ufd, AF_INET, "127.0.0.1") || bind_any(ufd2, AF_INET, "127.0.0.1")) {
			fprintf(stderr, "%s: UDP socket: %s\n", prog, strerror(errno));
			goto out;
		}
		struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
		a.sin_port = htons((uint16_t)local_port(ufd2));
		if (connect(ufd, (struct sockaddr *)&a, sizeof(a)))
			goto out;
		a.sin_port = htons((uint16_t)local_port(ufd));
		if (connect(ufd2, (struct sockaddr *)&a, sizeof(a)))
			goto out;
	}
ready:
	add_params(&o);
	rc = 1;

	uint64_t total = o.warmup + o.iters;
	s.o = &o;
	s.total = total;
	if (o.tcp) {
		tcp_run(&o, cfd, dfd, dlfd);
	} else if (o.server) {
		s.fd = ufd;
		srv_run(&s, cfd);
		pt_clock_finish();
		if (s.err[0])
			pt_report_fail(&rep, "%s", s.err);
		if (pt_recv_line(cfd, line, sizeof(line)) || strncmp(line, "done", 4)) {
			pt_report_fail(&rep, "client went away before the end of the test");
		} else {
			pt_send_line(cfd, "result received=%" PRIu64 " good=%" PRIu64 " corrupt=%" PRIu64 " ooo=%" PRIu64
				     " rx_ns=%" PRIu64, s.received, s.good, s.corrupt, s.out_of_order, srv_rx_ns(&s));
			pt_kv_u64(line, "sent", &rep.sent);
			if (!o.lat)
				fill_rate(s.good, o.warmup, o.size, srv_rx_ns(&s));
		}
		rep.received = s.received;
		rep.corrupt = s.corrupt;
		rep.out_of_order = s.out_of_order;
		rep.lost = total > s.received ? total - s.received : 0;
	} else {
		pthread_t th;
		uint64_t sent = 0;
		if (o.loopback) {
			s.fd = ufd2;
			if (pthread_create(&th, NULL, srv_thread, &s)) {
				fprintf(stderr, "%s: pthread_create failed\n", prog);
				rc = 2;
				goto out;
			}
		}
		if (o.lat)
			run_lat(ufd, &o);
		else
			sent = run_bw(ufd, &o);
		uint64_t good = 0, recvd = 0, corrupt = 0, ooo = 0, rx_ns = 0;
		if (o.loopback) {
			if (!o.lat) {
				/* give the receiver thread the last in-flight messages */
				uint64_t end = pt_mono_ns() + 100000000ull;
				while (s.received < total && pt_mono_ns() < end && !pt_stop)
					usleep(1000);
			}
			pt_stop = 1; /* ends the receiver thread if it still waits */
			pthread_join(th, NULL);
			if (s.err[0])
				pt_report_fail(&rep, "receiver: %s", s.err);
			good = s.good;
			recvd = s.received;
			corrupt = s.corrupt;
			ooo = s.out_of_order;
			rx_ns = srv_rx_ns(&s);
		} else if (pt_send_line(cfd, "done sent=%" PRIu64, sent) || pt_recv_line(cfd, line, sizeof(line)) ||
			   !pt_kv_u64(line, "good", &good) || !pt_kv_u64(line, "received", &recvd) ||
			   !pt_kv_u64(line, "corrupt", &corrupt) || !pt_kv_u64(line, "ooo", &ooo) ||
			   !pt_kv_u64(line, "rx_ns", &rx_ns)) {
			fail("no result from the server");
		}
		rep.corrupt += corrupt;
		rep.out_of_order += ooo;
		if (o.lat) {
			rep.sent = rep.lat_samples + o.warmup;
			if (rep.ok && good != total)
				pt_report_fail(&rep, "echo side saw %" PRIu64 " good pings of %" PRIu64, good, total);
		} else {
			rep.sent = sent;
			rep.received = recvd;
			rep.lost = total > recvd ? total - recvd : 0;
			fill_rate(good, o.warmup, o.size, rx_ns);
		}
		if (o.loopback && pt_stop && !pt_timed_out && rep.ok)
			pt_stop = 0; /* we stopped the thread ourselves */
	}
	if (pt_timed_out)
		pt_report_fail(&rep, "global timeout of %u s expired", o.timeout_s);
	else if (pt_stop && rep.ok)
		pt_report_fail(&rep, "interrupted");
	rc = pt_report_print(&rep, o.json);
out:
	if (rc == 2 && o.json) {
		pt_report_fail(&rep, "setup failed (see stderr)");
		pt_report_print(&rep, true);
	}
	if (ufd >= 0)
		close(ufd);
	if (ufd2 >= 0)
		close(ufd2);
	if (dfd >= 0)
		close(dfd);
	if (dlfd >= 0)
		close(dlfd);
	if (cfd >= 0)
		close(cfd);
	if (lfd >= 0)
		close(lfd);
	json_decref(rep.params);
	return rc;
}
