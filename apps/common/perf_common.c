/* SPDX-License-Identifier: BSD-3-Clause */
/* Shared pieces of the benchmark tools: see perf_common.h. */
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include "perf_common.h"

struct pt_clock pt_clk = {.tsc = false, .ns_per_tick = 1.0};
volatile sig_atomic_t pt_stop;
volatile sig_atomic_t pt_timed_out;
static const char *g_prog = "perf";

uint64_t pt_mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static bool cpu_has_invariant_tsc(void)
{
#if defined(__x86_64__) || defined(__i386__)
	FILE *f = fopen("/proc/cpuinfo", "r");
	char line[4096];
	bool constant = false, nonstop = false;
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "flags", 5))
			continue;
		constant = strstr(line, " constant_tsc") != NULL;
		nonstop = strstr(line, " nonstop_tsc") != NULL;
		break;
	}
	fclose(f);
	return constant && nonstop;
#else
	return false;
#endif
}

void pt_clock_init(int use_tsc)
{
	pt_clk.tsc = false;
	pt_clk.ns_per_tick = 1.0;
#if defined(__x86_64__) || defined(__i386__)
	if (use_tsc == 1 || (use_tsc < 0 && cpu_has_invariant_tsc())) {
		/* first estimate over 20 ms; refined by pt_clock_finish */
		uint64_t n0 = pt_mono_ns(), c0 = __builtin_ia32_rdtsc(), n1, c1;
		do {
			n1 = pt_mono_ns();
			c1 = __builtin_ia32_rdtsc();
		} while (n1 - n0 < 20000000ull);
		if (c1 > c0) {
			pt_clk.tsc = true;
			pt_clk.ns_per_tick = (double)(n1 - n0) / (double)(c1 - c0);
		}
	}
#endif
	pt_clk.ns0 = pt_mono_ns();
	pt_clk.t0 = pt_now();
}

void pt_clock_finish(void)
{
	if (!pt_clk.tsc)
		return;
	uint64_t n1 = pt_mono_ns(), c1 = pt_now();
	/* only refine over a span long enough to beat the first estimate */
	if (n1 - pt_clk.ns0 > 200000000ull && c1 > pt_clk.t0)
		pt_clk.ns_per_tick = (double)(n1 - pt_clk.ns0) / (double)(c1 - pt_clk.t0);
}

const char *pt_clock_name(void) { return pt_clk.tsc ? "rdtsc" : "clock_monotonic"; }

/* ---- statistics ---- */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* nearest-rank percentile of a sorted array */
static uint64_t pct(const uint64_t *s, uint64_t n, double p)
{
	double r = p / 100.0 * (double)n;
	uint64_t k = (uint64_t)r;
	if ((double)k < r)
		k++;
	if (k < 1)
		k = 1;
	if (k > n)
		k = n;
	return s[k - 1];
}

void pt_lat_summary(uint64_t *rtt, uint64_t n, struct pt_lat *o)
{
	memset(o, 0, sizeof(*o));
	if (!n)
		return;
	qsort(rtt, n, sizeof(rtt[0]), cmp_u64);
	double sum = 0;
	for (uint64_t i = 0; i < n; i++)
		sum += (double)rtt[i];
	/* ticks -> us, halved: one-way = RTT/2 */
	double k = pt_clk.ns_per_tick / 1000.0 / 2.0;
	o->min = (double)rtt[0] * k;
	o->p50 = (double)pct(rtt, n, 50) * k;
	o->p99 = (double)pct(rtt, n, 99) * k;
	o->p999 = (double)pct(rtt, n, 99.9) * k;
	o->max = (double)rtt[n - 1] * k;
	o->mean = sum / (double)n * k;
}

/* ---- payload ---- */

void pt_put_seq(uint8_t *buf, uint64_t seq)
{
	for (int i = 0; i < 8; i++)
		buf[i] = (uint8_t)(seq >> (8 * i));
}

uint64_t pt_seq(const uint8_t *buf)
{
	uint64_t s = 0;
	for (int i = 0; i < 8; i++)
		s |= (uint64_t)buf[i] << (8 * i);
	return s;
}

static inline uint8_t pat(uint64_t seq, uint32_t i) { return (uint8_t)(seq * 131u + i * 7u + 0x5a); }

void pt_fill(uint8_t *buf, uint32_t size, uint64_t seq)
{
	pt_put_seq(buf, seq);
	for (uint32_t i = PT_MIN_SIZE; i < size; i++)
		buf[i] = pat(seq, i);
}

bool pt_check(const uint8_t *buf, uint32_t size, uint64_t seq)
{
	for (uint32_t i = PT_MIN_SIZE; i < size; i++)
		if (buf[i] != pat(seq, i))
			return false;
	return true;
}

/* ---- signals / timeout ---- */

static void on_signal(int sig)
{
	static const char msg_to[] = ": global timeout expired, stopping\n";
	static const char msg_kill[] = ": still running 5 s after the timeout, exiting\n";
	if (sig == SIGALRM) {
		if (pt_timed_out) {
			/* second alarm: the program did not stop by itself */
			if (write(2, g_prog, strlen(g_prog)) < 0 || write(2, msg_kill, sizeof(msg_kill) - 1) < 0)
				_exit(3);
			_exit(3);
		}
		pt_timed_out = 1;
		if (write(2, g_prog, strlen(g_prog)) < 0 || write(2, msg_to, sizeof(msg_to) - 1) < 0)
			pt_stop = 1;
		alarm(5);
	}
	pt_stop = 1;
}

void pt_signals_init(const char *prog, unsigned int timeout_s)
{
	struct sigaction sa;
	const char *slash = strrchr(prog, '/');
	g_prog = slash ? slash + 1 : prog;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = 0; /* no SA_RESTART: blocking calls return EINTR */
	sigaction(SIGALRM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (timeout_s)
		alarm(timeout_s);
}

/* ---- TCP ---- */

static struct addrinfo *resolve(const char *host, int port, bool passive)
{
	struct addrinfo hints, *res = NULL;
	char service[16];
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = passive ? AI_PASSIVE : 0;
	snprintf(service, sizeof(service), "%d", port);
	int r = getaddrinfo(host, service, &hints, &res);
	if (r) {
		fprintf(stderr, "%s: cannot resolve %s:%d: %s\n", g_prog, host ? host : "*", port,
			gai_strerror(r));
		return NULL;
	}
	return res;
}

int pt_tcp_listen(const char *host, int port)
{
	struct addrinfo *res = resolve(host, port, true), *a;
	int fd = -1, one = 1;
	if (!res)
		return -1;
	for (a = res; a; a = a->ai_next) {
		fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
		if (fd < 0)
			continue;
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(fd, a->ai_addr, a->ai_addrlen) == 0 && listen(fd, 1) == 0)
			break;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd < 0)
		fprintf(stderr, "%s: cannot listen on TCP port %d: %s\n", g_prog, port, strerror(errno));
	return fd;
}

int pt_tcp_accept(int lfd)
{
	int fd, one = 1;
	do {
		fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	} while (fd < 0 && errno == EINTR && !pt_stop);
	if (fd < 0) {
		if (!pt_stop)
			fprintf(stderr, "%s: accept: %s\n", g_prog, strerror(errno));
		return -1;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

int pt_tcp_connect(const char *host, int port, unsigned int timeout_s)
{
	uint64_t end = pt_mono_ns() + (uint64_t)timeout_s * 1000000000ull;
	int err = 0, one = 1;
	while (!pt_stop) {
		struct addrinfo *res = resolve(host, port, false), *a;
		if (!res)
			return -1;
		for (a = res; a; a = a->ai_next) {
			int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
			if (fd < 0)
				continue;
			if (connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
				freeaddrinfo(res);
				setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
				return fd;
			}
			err = errno;
			close(fd);
		}
		freeaddrinfo(res);
		if (pt_mono_ns() > end)
			break;
		usleep(50000); /* server not listening yet */
	}
	fprintf(stderr, "%s: cannot connect to %s:%d: %s\n", g_prog, host, port,
		pt_stop ? "interrupted" : strerror(err));
	return -1;
}

int pt_send_line(int fd, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof(buf) - 1, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(buf) - 1)
		return -1;
	buf[n++] = '\n';
	for (int off = 0; off < n;) {
		ssize_t w = send(fd, buf + off, (size_t)(n - off), MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR && !pt_stop)
			continue;
		if (w <= 0)
			return -1;
		off += (int)w;
	}
	return 0;
}

int pt_recv_line(int fd, char *buf, size_t len)
{
	size_t n = 0;
	while (n + 1 < len) {
		char c;
		ssize_t r = recv(fd, &c, 1, 0);
		if (r < 0 && errno == EINTR && !pt_stop)
			continue;
		if (r <= 0)
			return -1;
		if (c == '\n') {
			buf[n] = 0;
			return 0;
		}
		buf[n++] = c;
	}
	return -1;
}

int pt_line_ready(int fd)
{
	char tmp[1024];
	ssize_t r = recv(fd, tmp, sizeof(tmp), MSG_PEEK | MSG_DONTWAIT);
	if (r == 0)
		return 1; /* EOF: the reader will see it */
	if (r < 0)
		return (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) ? 0 : 1;
	return memchr(tmp, '\n', (size_t)r) != NULL;
}

static const char *kv_find(const char *line, const char *key)
{
	size_t kl = strlen(key);
	for (const char *p = line; (p = strstr(p, key)) != NULL; p += kl)
		if ((p == line || p[-1] == ' ') && p[kl] == '=')
			return p + kl + 1;
	return NULL;
}

bool pt_kv_u64(const char *line, const char *key, uint64_t *v)
{
	const char *p = kv_find(line, key);
	char *end;
	if (!p)
		return false;
	errno = 0;
	*v = strtoull(p, &end, 0);
	return errno == 0 && end != p && (*end == ' ' || *end == 0);
}

bool pt_kv_str(const char *line, const char *key, char *out, size_t len)
{
	const char *p = kv_find(line, key);
	if (!p)
		return false;
	size_t n = strcspn(p, " ");
	if (n >= len)
		return false;
	memcpy(out, p, n);
	out[n] = 0;
	return true;
}

/* ---- report ---- */

void pt_report_init(struct pt_report *r, const char *tool, const char *test)
{
	memset(r, 0, sizeof(*r));
	r->tool = tool;
	r->test = test;
	r->ok = true;
	r->params = json_object();
}

void pt_report_fail(struct pt_report *r, const char *fmt, ...)
{
	va_list ap;
	if (!r->ok)
		return; /* keep the first error */
	r->ok = false;
	va_start(ap, fmt);
	vsnprintf(r->error, sizeof(r->error), fmt, ap);
	va_end(ap);
}

static json_t *lat_json(const struct pt_lat *l)
{
	return json_pack("{s:f, s:f, s:f, s:f, s:f, s:f}", "min", l->min, "p50", l->p50, "p99", l->p99,
			 "p99_9", l->p999, "max", l->max, "mean", l->mean);
}

static void print_text(const struct pt_report *r)
{
	const char *k;
	json_t *v;
	printf("%s: test %s, mode %s, role %s\n", r->tool, r->test, r->mode, r->role);
	printf("  parameters:");
	json_object_foreach(r->params, k, v) {
		if (json_is_string(v))
			printf(" %s=%s", k, json_string_value(v));
		else if (json_is_integer(v))
			printf(" %s=%lld", k, (long long)json_integer_value(v));
		else if (json_is_real(v))
			printf(" %s=%g", k, json_real_value(v));
		else if (json_is_boolean(v))
			printf(" %s=%s", k, json_is_true(v) ? "yes" : "no");
	}
	printf("\n  timer: %s", pt_clock_name());
	if (pt_clk.tsc)
		printf(" (%.4f GHz, calibrated against CLOCK_MONOTONIC)", 1.0 / pt_clk.ns_per_tick);
	printf("\n");
	if (r->has_lat) {
		printf("  one-way latency = RTT/2, %llu samples, microseconds:\n",
		       (unsigned long long)r->lat_samples);
		printf("  %10s %10s %10s %10s %10s %10s\n", "min", "p50", "p99", "p99.9", "max", "mean");
		printf("  %10.3f %10.3f %10.3f %10.3f %10.3f %10.3f\n", r->lat.min, r->lat.p50, r->lat.p99,
		       r->lat.p999, r->lat.max, r->lat.mean);
		printf("  rate: %.0f round trips/s (%.0f messages/s both directions)\n", r->rtt_per_s,
		       2 * r->rtt_per_s);
	}
	if (r->has_rate) {
		printf("  sent %llu, received %llu in %.6f s (receiver's interval)\n",
		       (unsigned long long)r->sent, (unsigned long long)r->received, r->duration_s);
		printf("  message rate: %.0f messages/s, %.3f Gbit/s payload (sender side %.0f messages/s)\n",
		       r->msg_per_s, r->gbit_per_s, r->tx_msg_per_s);
	}
	printf("  checks: %llu lost, %llu corrupt, %llu out of order\n", (unsigned long long)r->lost,
	       (unsigned long long)r->corrupt, (unsigned long long)r->out_of_order);
	if (r->ok)
		printf("  result: PASS\n");
	else
		printf("  result: FAIL: %s\n", r->error);
}

int pt_report_print(struct pt_report *r, bool json)
{
	if (r->ok && (r->lost || r->corrupt))
		pt_report_fail(r, "%llu messages lost, %llu corrupt", (unsigned long long)r->lost,
			       (unsigned long long)r->corrupt);
	if (!json) {
		print_text(r);
		fflush(stdout);
		return r->ok ? 0 : 1;
	}
	json_t *o = json_object(), *res = json_object();
	json_object_set_new(o, "tool", json_string(r->tool));
	json_object_set_new(o, "test", json_string(r->test));
	json_object_set_new(o, "mode", json_string(r->mode));
	json_object_set_new(o, "role", json_string(r->role));
	json_object_set(o, "params", r->params);
	json_object_set_new(o, "timer", json_pack("{s:s, s:f}", "source", pt_clock_name(), "ghz",
						  1.0 / pt_clk.ns_per_tick));
	if (r->has_lat) {
		json_object_set_new(res, "latency_definition", json_string("one-way = RTT/2"));
		json_object_set_new(res, "samples", json_integer((json_int_t)r->lat_samples));
		json_object_set_new(res, "one_way_us", lat_json(&r->lat));
		json_object_set_new(res, "round_trips_per_s", json_real(r->rtt_per_s));
		json_object_set_new(res, "msg_per_s", json_real(2 * r->rtt_per_s));
	}
	if (r->has_rate) {
		json_object_set_new(res, "sent", json_integer((json_int_t)r->sent));
		json_object_set_new(res, "received", json_integer((json_int_t)r->received));
		json_object_set_new(res, "duration_s", json_real(r->duration_s));
		json_object_set_new(res, "msg_per_s", json_real(r->msg_per_s));
		json_object_set_new(res, "gbit_per_s", json_real(r->gbit_per_s));
		json_object_set_new(res, "tx_msg_per_s", json_real(r->tx_msg_per_s));
	}
	json_object_set_new(res, "lost", json_integer((json_int_t)r->lost));
	json_object_set_new(res, "corrupt", json_integer((json_int_t)r->corrupt));
	json_object_set_new(res, "out_of_order", json_integer((json_int_t)r->out_of_order));
	json_object_set_new(o, "results", res);
	json_object_set_new(o, "status", json_string(r->ok ? "pass" : "fail"));
	if (!r->ok)
		json_object_set_new(o, "error", json_string(r->error));
	json_dumpf(o, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(9));
	printf("\n");
	fflush(stdout);
	json_decref(o);
	return r->ok ? 0 : 1;
}
