/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * udp_pingpong: tcp_bw, the kernel TCP stream. The source writes --size
 * blocks for --duration seconds, the sink reads to the end of the stream,
 * counting every byte and checking the number each block starts with.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>

#include "udp_pingpong.h"

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

/* the whole tcp_bw test once the connections are made: server (cfd, dfd
 * accepted), client (cfd, dfd connected) or loopback (dlfd listening, dfd
 * connected to it) */
void tcp_run(const struct opts *o, int cfd, int dfd, int dlfd)
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
