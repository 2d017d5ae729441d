/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpv_baseline: the machine's own figures next to which dpverbs' are read
 * (memcpy bandwidth, a cache line between two cores, kernel UDP and TCP on
 * 127.0.0.1). The tests are in base_mem.c and base_net.c (see base.h);
 * this file has the command line and the text, JSON and CSV output.
 * doc/man/dpv_baseline.1.md is the manual.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base.h"

static const char *prog = "dpv_baseline";

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: %s [options]\n"
		"\n"
		"Baselines of this machine, for dpverbs' figures to be read against.\n"
		"\n"
		"  -t, --tests=LIST     comma-separated: memcpy, cacheline, udp_lat, udp_bw, tcp_bw\n"
		"                       (default: all)\n"
		"      --quick          short runs (about 3 s in all)\n"
		"      --sizes=MIN:MAX  memcpy sizes, powers of two (default 64:1048576)\n"
		"      --no-big         no 64 MiB memcpy (from DRAM)\n"
		"      --duration=MS    per memcpy size; the TCP stream runs 4 times as long (default 200)\n"
		"  -s, --udp-size=B     UDP payload, 8 .. 65000 (default 64)\n"
		"  -n, --iters=N        UDP ping-pong round trips (default 100000)\n"
		"      --msgs=N         UDP stream messages (default 200000)\n"
		"      --cl-iters=N     cache-line round trips (default 200000)\n"
		"      --warmup=N       unmeasured round trips/messages first (default 1000)\n"
		"  -w, --window=N       UDP stream: datagrams in flight (default 256)\n"
		"      --tcp-chunk=B    TCP write size (default 65536)\n"
		"      --cpus=A,B       the two CPUs of the cache-line test (default: the first two\n"
		"                       allowed); memcpy runs on A\n"
		"      --pin            UDP/TCP sender on A, receiver on B (default: not pinned)\n"
		"      --busy           UDP receivers spin on MSG_DONTWAIT (default: blocking recv)\n"
		"      --json           one JSON object\n"
		"      --csv=FILE       append rows tool,test,size,metric,value,unit (header if new)\n"
		"      --timeout=SEC    global timeout (default 120)\n"
		"  -h, --help           this text\n"
		"\n"
		"Exit status: 0 all tests passed their checks, 1 one failed, 2 usage error.\n",
		prog);
}

static int parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out, const char *what)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 0);
	if (errno || end == s || *end || v < min || v > max || s[0] == '-') {
		fprintf(stderr, "%s: %s: must be an integer between %" PRIu64 " and %" PRIu64 " (got \"%s\")\n", prog,
			what, min, max, s);
		return -1;
	}
	*out = v;
	return 0;
}

static int parse_tests(char *list, struct base_opts *o)
{
	o->t_memcpy = o->t_cacheline = o->t_udp_lat = o->t_udp_bw = o->t_tcp_bw = false;
	for (char *t = strtok(list, ","); t; t = strtok(NULL, ",")) {
		if (!strcmp(t, "memcpy"))
			o->t_memcpy = true;
		else if (!strcmp(t, "cacheline"))
			o->t_cacheline = true;
		else if (!strcmp(t, "udp_lat"))
			o->t_udp_lat = true;
		else if (!strcmp(t, "udp_bw"))
			o->t_udp_bw = true;
		else if (!strcmp(t, "tcp_bw"))
			o->t_tcp_bw = true;
		else {
			fprintf(stderr, "%s: --tests: unknown test \"%s\"\n", prog, t);
			return -1;
		}
	}
	return 0;
}

static int parse_pair(const char *s, char sep, uint64_t max, uint64_t v[2], const char *what)
{
	char a[32];
	const char *c = strchr(s, sep);
	if (!c || (size_t)(c - s) >= sizeof(a)) {
		fprintf(stderr, "%s: %s: expected A%cB (got \"%s\")\n", prog, what, sep, s);
		return -1;
	}
	memcpy(a, s, (size_t)(c - s));
	a[c - s] = 0;
	return parse_u64(a, 0, max, &v[0], what) || parse_u64(c + 1, 0, max, &v[1], what) ? -1 : 0;
}

enum {
	O_QUICK = 256, O_SIZES, O_NO_BIG, O_DURATION, O_MSGS, O_CL_ITERS, O_WARMUP, O_TCP_CHUNK, O_CPUS, O_PIN,
	O_BUSY, O_JSON, O_CSV, O_TIMEOUT,
};

static const struct option long_opts[] = {
	{"tests", required_argument, NULL, 't'}, {"quick", no_argument, NULL, O_QUICK},
	{"sizes", required_argument, NULL, O_SIZES}, {"no-big", no_argument, NULL, O_NO_BIG},
	{"duration", required_argument, NULL, O_DURATION}, {"udp-size", required_argument, NULL, 's'},
	{"iters", required_argument, NULL, 'n'}, {"msgs", required_argument, NULL, O_MSGS},
	{"cl-iters", required_argument, NULL, O_CL_ITERS}, {"warmup", required_argument, NULL, O_WARMUP},
	{"window", required_argument, NULL, 'w'}, {"tcp-chunk", required_argument, NULL, O_TCP_CHUNK},
	{"cpus", required_argument, NULL, O_CPUS}, {"pin", no_argument, NULL, O_PIN},
	{"busy", no_argument, NULL, O_BUSY}, {"json", no_argument, NULL, O_JSON},
	{"csv", required_argument, NULL, O_CSV}, {"timeout", required_argument, NULL, O_TIMEOUT},
	{"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0},
};

/* one option; -1 on error */
static int one_opt(int c, struct base_opts *o)
{
	uint64_t v, p[2];
	switch (c) {
	case 't': return parse_tests(optarg, o);
	case O_QUICK:
		o->duration_ms = 40;
		o->udp_iters = 20000;
		o->udp_msgs = 50000;
		o->cl_iters = 50000;
		return 0;
	case O_SIZES:
		if (parse_pair(optarg, ':', 1u << 30, p, "--sizes") || !p[0] || p[0] > p[1])
			return -1;
		o->mem_min = (uint32_t)p[0];
		o->mem_max = (uint32_t)p[1];
		return 0;
	case O_NO_BIG: o->mem_big = false; return 0;
	case O_DURATION: return parse_u64(optarg, 1, 60000, &v, "--duration") ? -1 : (o->duration_ms = (unsigned)v, 0);
	case 's': return parse_u64(optarg, 8, 65000, &v, "--udp-size") ? -1 : (o->udp_size = (uint32_t)v, 0);
	case 'n': return parse_u64(optarg, 1, 100000000, &o->udp_iters, "--iters");
	case O_MSGS: return parse_u64(optarg, 1, 1000000000, &o->udp_msgs, "--msgs");
	case O_CL_ITERS: return parse_u64(optarg, 1, 100000000, &o->cl_iters, "--cl-iters");
	case O_WARMUP: return parse_u64(optarg, 0, 100000000, &o->warmup, "--warmup");
	case 'w': return parse_u64(optarg, 4, 65536, &v, "--window") ? -1 : (o->window = (uint32_t)v, 0);
	case O_TCP_CHUNK:
		return parse_u64(optarg, 1, 16u << 20, &v, "--tcp-chunk") ? -1 : (o->tcp_chunk = (uint32_t)v, 0);
	case O_CPUS:
		if (parse_pair(optarg, ',', CPU_SETSIZE - 1, p, "--cpus"))
			return -1;
		o->cpu_a = (int)p[0];
		o->cpu_b = (int)p[1];
		return 0;
	case O_PIN: o->pin = true; return 0;
	case O_BUSY: o->busy = true; return 0;
	case O_JSON: o->json = true; return 0;
	case O_CSV: o->csv = optarg; return 0;
	case O_TIMEOUT: return parse_u64(optarg, 1, 86400, &v, "--timeout") ? -1 : (o->timeout_s = (unsigned)v, 0);
	default: usage(stderr); return -1;
	}
}

static int parse_args(int argc, char **argv, struct base_opts *o)
{
	int c;
	*o = (struct base_opts){
		.t_memcpy = true, .t_cacheline = true, .t_udp_lat = true, .t_udp_bw = true, .t_tcp_bw = true,
		.mem_min = 64, .mem_max = 1u << 20, .mem_big = true, .duration_ms = 200, .udp_size = 64,
		.window = 256, .tcp_chunk = 65536, .udp_iters = 100000, .udp_msgs = 200000, .cl_iters = 200000,
		.warmup = 1000, .cpu_a = -1, .cpu_b = -1, .timeout_s = 120,
	};
	while ((c = getopt_long(argc, argv, "t:s:n:w:h", long_opts, NULL)) != -1) {
		if (c == 'h') {
			usage(stdout);
			exit(0);
		}
		if (one_opt(c, o))
			return -1;
	}
	if (optind < argc) {
		fprintf(stderr, "%s: unexpected argument \"%s\"\n", prog, argv[optind]);
		return -1;
	}
	return 0;
}

/* the first two CPUs this process may run on, unless --cpus said */
static void default_cpus(struct base_opts *o)
{
	cpu_set_t set;
	if (o->cpu_a >= 0 || sched_getaffinity(0, sizeof(set), &set))
		return;
	for (int i = 0; i < CPU_SETSIZE && o->cpu_b < 0; i++)
		if (CPU_ISSET(i, &set)) {
			if (o->cpu_a < 0)
				o->cpu_a = i;
			else
				o->cpu_b = i;
		}
}

/* ---- output ---- */

static double num(json_t *o, const char *k) { return json_number_value(json_object_get(o, k)); }
static double num2(json_t *o, const char *a, const char *b) { return num(json_object_get(o, a), b); }

static void text_out(json_t *r)
{
	json_t *t, *row;
	size_t i;
	printf("%s: %d CPUs, timer %s\n", prog, (int)json_integer_value(json_object_get(r, "cpus")), pt_clock_name());
	if ((t = json_object_get(r, "memcpy"))) {
		printf("  memcpy, one core (CPU %d), hot buffers:\n  %10s %10s %10s %12s\n",
		       (int)json_integer_value(json_object_get(t, "cpu")), "size", "GB/s", "Gb/s", "ns/copy");
		json_array_foreach(json_object_get(t, "rows"), i, row)
			printf("  %10.0f %10.3f %10.3f %12.2f\n", num(row, "size"), num(row, "bytes_per_s") / 1e9,
			       num(row, "gbit_per_s"), num(row, "ns_per_copy"));
	}
	if ((t = json_object_get(r, "cacheline")) && json_object_get(t, "rtt_ns"))
		printf("  cache line round trip between two CPUs: p50 %.1f ns, p99 %.1f ns, max %.1f ns "
		       "(one way p50 %.1f ns)\n", num2(t, "rtt_ns", "p50"), num2(t, "rtt_ns", "p99"),
		       num2(t, "rtt_ns", "max"), num(t, "one_way_ns_p50"));
	if ((t = json_object_get(r, "udp_lat")))
		printf("  kernel UDP ping-pong, %.0f B, %s: one-way p50 %.3f us, p99 %.3f us, p99.9 %.3f us; %.0f round "
		       "trips/s\n", num(t, "size"), json_string_value(json_object_get(t, "recv")),
		       num2(t, "one_way_us", "p50"), num2(t, "one_way_us", "p99"), num2(t, "one_way_us", "p99_9"),
		       num(t, "round_trips_per_s"));
	if ((t = json_object_get(r, "udp_bw")))
		printf("  kernel UDP stream, %.0f B: %.0f msg/s, %.3f Gb/s (%.0f lost)\n", num(t, "size"),
		       num(t, "msg_per_s"), num(t, "gbit_per_s"), num(t, "lost"));
	if ((t = json_object_get(r, "tcp_bw")))
		printf("  kernel TCP stream, %.0f B writes: %.3f GB/s, %.3f Gb/s\n", num(t, "chunk"),
		       num(t, "bytes_per_s") / 1e9, num(t, "gbit_per_s"));
	printf("  result: %s\n", strcmp(json_string_value(json_object_get(r, "status")), "pass") ? "FAIL" : "PASS");
}

static void csv_row(FILE *f, const char *test, double size, const char *metric, double v, const char *unit)
{
	fprintf(f, "dpv_baseline,%s,%.0f,%s,%.6g,%s\n", test, size, metric, v, unit);
}

static int csv_out(const char *path, json_t *r)
{
	struct stat st;
	bool fresh = stat(path, &st) || !st.st_size;
	FILE *f = fopen(path, "a");
	json_t *t, *row;
	size_t i;
	if (!f)
		return -1;
	if (fresh)
		fputs("tool,test,size,metric,value,unit\n", f);
	json_array_foreach(json_object_get(json_object_get(r, "memcpy"), "rows"), i, row)
		csv_row(f, "memcpy", num(row, "size"), "bytes_per_s", num(row, "bytes_per_s"), "B/s");
	if ((t = json_object_get(r, "cacheline")) && json_object_get(t, "rtt_ns")) {
		csv_row(f, "cacheline", 64, "rtt_p50", num2(t, "rtt_ns", "p50"), "ns");
		csv_row(f, "cacheline", 64, "rtt_p99", num2(t, "rtt_ns", "p99"), "ns");
	}
	if ((t = json_object_get(r, "udp_lat"))) {
		csv_row(f, "udp_lat", num(t, "size"), "one_way_p50", num2(t, "one_way_us", "p50"), "us");
		csv_row(f, "udp_lat", num(t, "size"), "one_way_p99", num2(t, "one_way_us", "p99"), "us");
	}
	if ((t = json_object_get(r, "udp_bw")))
		csv_row(f, "udp_bw", num(t, "size"), "msg_per_s", num(t, "msg_per_s"), "msg/s");
	if ((t = json_object_get(r, "tcp_bw")))
		csv_row(f, "tcp_bw", num(t, "chunk"), "bytes_per_s", num(t, "bytes_per_s"), "B/s");
	return fclose(f);
}

/* ---- main ---- */

static void add(json_t *r, const char *name, json_t *v, bool *ok)
{
	if (!v)
		v = json_pack("{s:s, s:s}", "status", "fail", "error", "set-up failed (see stderr)");
	const char *st = json_string_value(json_object_get(v, "status"));
	if (st && !strcmp(st, "fail"))
		*ok = false;
	json_object_set_new(r, name, v);
}

int main(int argc, char **argv)
{
	struct base_opts o;
	bool ok = true;
	if (parse_args(argc, argv, &o))
		return 2;
	pt_signals_init(argv[0], o.timeout_s);
	pt_clock_init(-1);
	default_cpus(&o);
	json_t *r = json_pack("{s:s, s:i, s:[i, i]}", "tool", prog, "cpus", (int)sysconf(_SC_NPROCESSORS_ONLN),
			      "cpu_pair", o.cpu_a, o.cpu_b);
	if (o.t_memcpy)
		add(r, "memcpy", base_memcpy(&o), &ok);
	if (o.t_cacheline)
		add(r, "cacheline", base_cacheline(&o), &ok);
	if (o.t_udp_lat)
		add(r, "udp_lat", base_udp_lat(&o), &ok);
	if (o.t_udp_bw)
		add(r, "udp_bw", base_udp_bw(&o), &ok);
	if (o.t_tcp_bw)
		add(r, "tcp_bw", base_tcp_bw(&o), &ok);
	pt_clock_finish();
	if (pt_stop)
		ok = false;
	json_object_set_new(r, "timer", json_pack("{s:s, s:f}", "source", pt_clock_name(), "ghz",
						  1.0 / pt_clk.ns_per_tick));
	json_object_set_new(r, "status", json_string(ok ? "pass" : "fail"));
	if (o.json) {
		json_dumpf(r, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(9));
		printf("\n");
	} else {
		text_out(r);
	}
	if (o.csv && csv_out(o.csv, r))
		fprintf(stderr, "%s: cannot write %s\n", prog, o.csv);
	json_decref(r);
	return ok ? 0 : 1;
}
