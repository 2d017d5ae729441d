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
 *
 * The files are listed in udp_pingpong.h; this one holds main, the command
 * line and --help.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "udp_pingpong.h"

const char *prog = "udp_pingpong";
struct pt_report rep;

/* a failure on the sending side: reported, and the run stops there */
void fail(const char *fmt, ...)
{
	char m[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(m, sizeof(m), fmt, ap);
	va_end(ap);
	pt_report_fail(&rep, "%s", m);
	pt_stop = 1;
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

int set_test(struct opts *o, const char *name)
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


/* the options with a number; -1 (after a message) if it is out of range */
static int parse_num(int c, struct opts *o)
{
	uint64_t v;

	switch (c) {
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
	default:
		usage(stderr);
		return -1;
	}
	return 0;
}

/* one option from getopt_long; the numbers go to parse_num() */
static int parse_opt(int c, struct opts *o)
{
	switch (c) {
	case 't':
		if (set_test(o, optarg)) {
			fprintf(stderr, "%s: unknown test \"%s\" (udp_lat, udp_bw, tcp_bw)\n", prog, optarg);
			return -1;
		}
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
		return parse_num(c, o);
	}
	return 0;
}

/* after the options: the server host, the mode, the size for the test */
static int check_args(int argc, char **argv, struct opts *o)
{
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
	int c;

	while ((c = getopt_long(argc, argv, "t:s:n:r:p:h", lo, NULL)) != -1) {
		if (parse_opt(c, o))
			return -1;
	}
	return check_args(argc, argv, o);
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
	struct conn c = {.lfd = -1, .cfd = -1, .ufd = -1, .ufd2 = -1, .dfd = -1, .dlfd = -1};
	int rc = 2;

	if (parse_args(argc, argv, &o))
		return 2;
	pt_signals_init(argv[0], o.timeout_s);
	pt_report_init(&rep, prog, o.test_name);
	rep.mode = o.loopback ? "loopback" : "two-process";
	rep.role = o.loopback ? "both" : (o.server ? "server" : "client");
	pt_clock_init(o.clock);

	if (o.server ? conn_server(&o, &c) : o.host ? conn_client(&o, &c) : conn_loopback(&o, &c))
		goto out;
	add_params(&o);
	rc = 1;
	if (o.tcp) {
		tcp_run(&o, c.cfd, c.dfd, c.dlfd);
	} else if (udp_run(&o, &c)) {
		rc = 2;
		goto out;
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
	conn_close(&c);
	json_decref(rep.params);
	return rc;
}
