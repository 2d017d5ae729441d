/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Shared pieces of the benchmark tools (dpv_perf, udp_pingpong): timer,
 * latency statistics, payload stamping/checking, the TCP control channel,
 * the global timeout and the text/JSON report, so that both tools measure
 * and print the same way.
 */
#ifndef PERF_COMMON_H
#define PERF_COMMON_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

/* ---- timer ---------------------------------------------------------------
 * Ticks are TSC cycles (x86-64 with an invariant TSC) or nanoseconds from
 * CLOCK_MONOTONIC. The TSC rate is calibrated against CLOCK_MONOTONIC at
 * start and refined over the whole run by pt_clock_finish(). */
struct pt_clock {
	bool tsc;
	double ns_per_tick;
	uint64_t t0;            /* ticks at pt_clock_init */
	uint64_t ns0;           /* CLOCK_MONOTONIC at pt_clock_init */
};

extern struct pt_clock pt_clk;

uint64_t pt_mono_ns(void);
/* use_tsc: -1 auto, 0 force CLOCK_MONOTONIC, 1 force TSC (if available) */
void pt_clock_init(int use_tsc);
void pt_clock_finish(void);
const char *pt_clock_name(void);

static inline uint64_t pt_now(void)
{
#if defined(__x86_64__) || defined(__i386__)
	if (pt_clk.tsc)
		return __builtin_ia32_rdtsc();
#endif
	return pt_mono_ns();
}

static inline double pt_ticks_ns(uint64_t ticks) { return (double)ticks * pt_clk.ns_per_tick; }

/* ---- statistics ---------------------------------------------------------- */
struct pt_lat {
	/* one-way latency = RTT / 2, microseconds */
	double min, p50, p99, p999, max, mean;
};

/* rtt: n round-trip times in ticks (sorted in place) */
void pt_lat_summary(uint64_t *rtt, uint64_t n, struct pt_lat *out);

/* ---- payload -------------------------------------------------------------
 * First 8 bytes: sequence number (little endian), then a pattern that
 * depends on the sequence number and the offset, so a stale or shifted
 * buffer is detected. */
#define PT_MIN_SIZE 8
void pt_fill(uint8_t *buf, uint32_t size, uint64_t seq);
uint64_t pt_seq(const uint8_t *buf);
void pt_put_seq(uint8_t *buf, uint64_t seq);
/* true if the pattern after the sequence number matches seq */
bool pt_check(const uint8_t *buf, uint32_t size, uint64_t seq);

/* ---- stop flag and timeout -------------------------------------------------
 * pt_stop becomes non-zero on SIGINT/SIGTERM or when the global timeout
 * expires (SIGALRM, installed without SA_RESTART so blocking calls return
 * EINTR). If the program still runs 5 s after the timeout it is ended. */
extern volatile sig_atomic_t pt_stop;
extern volatile sig_atomic_t pt_timed_out;
void pt_signals_init(const char *prog, unsigned int timeout_s);

/* ---- TCP control channel (text lines) ------------------------------------ */
int pt_tcp_listen(const char *host, int port);
int pt_tcp_accept(int lfd);
/* retries until the server listens, pt_stop or timeout */
int pt_tcp_connect(const char *host, int port, unsigned int timeout_s);
int pt_send_line(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* reads one line (without '\n'); 0 on success, -1 on error/EOF/stop */
int pt_recv_line(int fd, char *buf, size_t len);
/* true if a complete line is waiting (non-blocking peek), or the peer closed */
int pt_line_ready(int fd);
/* value of "key=" in a line of "key=value" words; false if absent */
bool pt_kv_u64(const char *line, const char *key, uint64_t *v);
bool pt_kv_str(const char *line, const char *key, char *out, size_t len);

/* ---- report ---------------------------------------------------------------- */
struct pt_report {
	const char *tool, *test, *mode, *role;
	json_t *params;          /* tool-specific parameters (owned, may be NULL) */
	uint32_t size;
	uint64_t iters, warmup;
	/* latency test */
	bool has_lat;
	struct pt_lat lat;
	uint64_t lat_samples;
	double rtt_per_s;        /* round trips per second over the measured interval */
	/* rate test */
	bool has_rate;
	uint64_t sent, received;
	double duration_s;       /* measured interval (receiver side) */
	double msg_per_s, gbit_per_s;
	double tx_msg_per_s;     /* sender side */
	/* checks */
	uint64_t lost, corrupt, out_of_order;
	bool ok;
	char error[256];
};

void pt_report_init(struct pt_report *r, const char *tool, const char *test);
void pt_report_fail(struct pt_report *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* prints text or JSON; returns the exit code (0 pass, 1 fail) */
int pt_report_print(struct pt_report *r, bool json);

#endif /* PERF_COMMON_H */
