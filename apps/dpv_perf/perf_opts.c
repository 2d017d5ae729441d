/* SPDX-License-Identifier: BSD-3-Clause */
/* dpv_perf: the command line (see perf.h and doc/man/dpv_perf.1.md). */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "perf.h"

static const char *const qpt_names[PF_QPT_N] = {"rc", "uc", "ud", "xrc"};
static const char *const op_names[PF_OP_N] = {"send", "send_imm", "write", "write_imm",
					      "read", "fadd", "cswap"};

const char *pf_qpt_name(enum pf_qpt t) { return qpt_names[t]; }
const char *pf_op_name(enum pf_op op) { return op_names[op]; }
const char *pf_kind_name(enum pf_kind k) { return k == PF_LAT ? "lat" : "bw"; }

int pf_qpt_parse(const char *s)
{
	for (int i = 0; i < PF_QPT_N; i++)
		if (!strcmp(s, qpt_names[i]))
			return i;
	return -1;
}

int pf_op_parse(const char *s)
{
	for (int i = 0; i < PF_OP_N; i++)
		if (!strcmp(s, op_names[i]))
			return i;
	if (!strcmp(s, "fetch_add"))
		return PF_FADD;
	if (!strcmp(s, "cmp_swp") || !strcmp(s, "cmp_swap"))
		return PF_CSWAP;
	return -1;
}

void pf_test_name(const struct pf_opts *o, char *buf, size_t len)
{
	snprintf(buf, len, "%s_%s_%s", pf_qpt_name(o->qpt), pf_op_name(o->op), pf_kind_name(o->kind));
}

void pf_opts_default(struct pf_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->qpt = PF_UD;
	o->op = PF_SEND;
	o->kind = PF_LAT;
	o->size_min = o->size_max = 64;
	o->iters = 100000;
	o->warmup = 1000;
	o->window = 64;
	o->post_list = 1;
	o->signal = 16;
	o->rx_depth = 512;
	o->qps = 1;
	o->timeout_s = 60;
	o->msg_timeout_ms = 1000;
	o->ib_port = 1;
	o->gid_idx = 1;
	o->tcp_port = PF_DEF_TCP_PORT;
	o->clock = -1;
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: %s [options] [--loopback]\n"
		"       %s --server [options]\n"
		"       %s [options] server-host\n"
		"\n"
		"Verbs latency and throughput benchmark (any verbs provider: ibv_* API only).\n"
		"\n"
		"Test:\n"
		"  -t, --test=NAME        lat | bw | QPT_lat | QPT_bw | QPT_OP_lat | QPT_OP_bw\n"
		"                         (default ud_lat; e.g. ud_bw, rc_write_bw, xrc_read_lat)\n"
		"  -c, --connection=QPT   rc | uc | ud (default) | xrc\n"
		"  -o, --op=OP            send (default) | send_imm | write | write_imm | read |\n"
		"                         fadd | cswap   (UD: send*; UC: send*, write*)\n"
		"  -s, --size=BYTES       message size, 1 .. 1048576 (default 64; UD: at most the\n"
		"                         path MTU; atomics: always 8)\n"
		"      --sweep=MIN:MAX    every power of two from MIN to MAX: one row per size\n"
		"  -n, --iters=N          measured messages / round trips per row (default 100000)\n"
		"      --warmup=N         unmeasured ones before them (default 1000)\n"
		"      --max-bytes=B      cut a row's iterations to B bytes, at least 100\n"
		"                         (default: none; with --sweep 1 GiB)\n"
		"  -q, --qps=N            connections (QP pairs), 1 .. 1024, used round robin (default 1)\n"
		"  -w, --window=N         WRs outstanding per QP = send queue depth (default 64)\n"
		"  -l, --post-list=N      bw: N WRs chained in one ibv_post_send (default 1)\n"
		"      --signal=N         one signalled WR every N (default 16, at most the window)\n"
		"  -r, --rx-depth=N       receive WQEs per QP (default 512; cut to fit the CQ with -q)\n"
		"      --no-fc            bw: no receiver credits (UD/UC may drop messages)\n"
		"      --no-inline        never use IBV_SEND_INLINE\n"
		"      --verify           fill and check every payload byte (default: the stamp only)\n"
		"      --td               QPs and CQs in a parent domain with a thread domain (one\n"
		"                         thread uses them: no locks in the provider; local option)\n"
		"      --hugepage-buf     data buffers from dpverbs' hugepage allocator instead of\n"
		"                         posix_memalign (shared mode: memory the daemon maps, so\n"
		"                         the engine copies directly; local option)\n"
		"Mode:\n"
		"      --loopback         one process, two devices, one thread (default when\n"
		"                         no server or host is given and DPVERBS_CONFIG is unset)\n"
		"      --server           wait for a client; it sends the test parameters\n"
		"  server-host            run as the client of that server\n"
		"  -p, --port=PORT        TCP port of the exchange (default %d)\n"
		"Device:\n"
		"  -d, --ib-dev=NAME      device (default: the first one)\n"
		"  -D, --ib-dev2=NAME     loopback: the second device (default: the next one)\n"
		"  -i, --ib-port=N        port number (default 1)\n"
		"  -g, --gid-idx=N        GID index (default 1: IPv4-mapped RoCEv2 GID)\n"
		"Output and run:\n"
		"      --json             one JSON object (parameters, set-up, rows, histogram)\n"
		"      --csv=FILE         append one CSV row per size to FILE (header if new)\n"
		"      --histogram        text output: print the latency histogram too\n"
		"      --timeout=SEC      global timeout, exit non-zero after it (default 60)\n"
		"      --msg-timeout=MS   a reply/credit/completion missing this long fails (default 1000)\n"
		"      --clock=tsc|mono   timer (default: tsc if invariant, else CLOCK_MONOTONIC)\n"
		"  -h, --help             this text\n"
		"\n"
		"Latency: SEND, SEND_IMM, WRITE_IMM and WRITE (each side writes the peer's\n"
		"buffer and polls its own) are ping-pongs reported one-way = RTT/2; READ and\n"
		"atomics report the round trip of one operation. Exit status: 0 pass,\n"
		"1 failed check (lost/corrupt message, timeout), 2 usage or set-up error.\n",
		pf_prog, pf_prog, pf_prog, PF_DEF_TCP_PORT);
}

static int parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out, const char *what)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 0);
	if (errno || end == s || *end || v < min || v > max || s[0] == '-') {
		fprintf(stderr, "%s: %s: must be an integer between %" PRIu64 " and %" PRIu64 " (got \"%s\")\n",
			pf_prog, what, min, max, s);
		return -1;
	}
	*out = v;
	return 0;
}

static int parse_u32(const char *s, uint64_t min, uint64_t max, uint32_t *out, const char *what)
{
	uint64_t v;
	if (parse_u64(s, min, max, &v, what))
		return -1;
	*out = (uint32_t)v;
	return 0;
}

/* -t: "lat", "bw", "QPT_KIND" or "QPT_OP_KIND" */
static int parse_test(const char *s, struct pf_opts *o)
{
	char tmp[64], *kind;
	if (strlen(s) >= sizeof(tmp))
		goto bad;
	strcpy(tmp, s);
	kind = strrchr(tmp, '_');
	kind = kind ? kind + 1 : tmp;
	if (strcmp(kind, "lat") && strcmp(kind, "bw"))
		goto bad;
	o->kind = !strcmp(kind, "lat") ? PF_LAT : PF_BW;
	if (kind == tmp)
		return 0;
	kind[-1] = 0;
	char *op = strchr(tmp, '_');
	if (op)
		*op++ = 0;
	int t = pf_qpt_parse(tmp), p = op ? pf_op_parse(op) : PF_SEND;
	if (t < 0 || p < 0)
		goto bad;
	o->qpt = (enum pf_qpt)t;
	o->op = (enum pf_op)p;
	return 0;
bad:
	fprintf(stderr, "%s: --test: lat, bw, QPT_lat, QPT_bw, QPT_OP_lat or QPT_OP_bw (got \"%s\")\n", pf_prog, s);
	return -1;
}

static int parse_sweep(const char *s, struct pf_opts *o)
{
	char lo[32], *colon = strchr(s, ':');
	if (!colon || (size_t)(colon - s) >= sizeof(lo)) {
		fprintf(stderr, "%s: --sweep: MIN:MAX (got \"%s\")\n", pf_prog, s);
		return -1;
	}
	memcpy(lo, s, (size_t)(colon - s));
	lo[colon - s] = 0;
	if (parse_u32(lo, 1, PF_MAX_SIZE, &o->size_min, "--sweep MIN") ||
	    parse_u32(colon + 1, 1, PF_MAX_SIZE, &o->size_max, "--sweep MAX"))
		return -1;
	if (o->size_min > o->size_max) {
		fprintf(stderr, "%s: --sweep: MIN above MAX\n", pf_prog);
		return -1;
	}
	return 0;
}

enum {
	OPT_WARMUP = 256, OPT_SIGNAL, OPT_NO_FC, OPT_NO_INLINE, OPT_LOOPBACK, OPT_SERVER, OPT_TIMEOUT,
	OPT_MSG_TIMEOUT, OPT_CLOCK, OPT_JSON, OPT_SWEEP, OPT_CSV, OPT_VERIFY, OPT_TD, OPT_HUGEBUF, OPT_MAX_BYTES, OPT_HIST,
};

static const struct option long_opts[] = {
	{"test", required_argument, NULL, 't'},
	{"connection", required_argument, NULL, 'c'},
	{"op", required_argument, NULL, 'o'},
	{"size", required_argument, NULL, 's'},
	{"sweep", required_argument, NULL, OPT_SWEEP},
	{"iters", required_argument, NULL, 'n'},
	{"warmup", required_argument, NULL, OPT_WARMUP},
	{"max-bytes", required_argument, NULL, OPT_MAX_BYTES},
	{"qps", required_argument, NULL, 'q'},
	{"window", required_argument, NULL, 'w'},
	{"post-list", required_argument, NULL, 'l'},
	{"signal", required_argument, NULL, OPT_SIGNAL},
	{"rx-depth", required_argument, NULL, 'r'},
	{"no-fc", no_argument, NULL, OPT_NO_FC},
	{"no-inline", no_argument, NULL, OPT_NO_INLINE},
	{"verify", no_argument, NULL, OPT_VERIFY},
	{"td", no_argument, NULL, OPT_TD},
	{"hugepage-buf", no_argument, NULL, OPT_HUGEBUF},
	{"loopback", no_argument, NULL, OPT_LOOPBACK},
	{"server", no_argument, NULL, OPT_SERVER},
	{"port", required_argument, NULL, 'p'},
	{"ib-dev", required_argument, NULL, 'd'},
	{"ib-dev2", required_argument, NULL, 'D'},
	{"ib-port", required_argument, NULL, 'i'},
	{"gid-idx", required_argument, NULL, 'g'},
	{"json", no_argument, NULL, OPT_JSON},
	{"csv", required_argument, NULL, OPT_CSV},
	{"histogram", no_argument, NULL, OPT_HIST},
	{"timeout", required_argument, NULL, OPT_TIMEOUT},
	{"msg-timeout", required_argument, NULL, OPT_MSG_TIMEOUT},
	{"clock", required_argument, NULL, OPT_CLOCK},
	{"help", no_argument, NULL, 'h'},
	{NULL, 0, NULL, 0},
};

/* the options of the test itself; 1 if c is not one of them */
static int opt_test(int c, struct pf_opts *o)
{
	int v;
	switch (c) {
	case 't':
		return parse_test(optarg, o) ? -1 : 0;
	case 'c':
		if ((v = pf_qpt_parse(optarg)) < 0) {
			fprintf(stderr, "%s: --connection: rc, uc, ud or xrc (got \"%s\")\n", pf_prog, optarg);
			return -1;
		}
		o->qpt = (enum pf_qpt)v;
		return 0;
	case 'o':
		if ((v = pf_op_parse(optarg)) < 0) {
			fprintf(stderr, "%s: --op: send, send_imm, write, write_imm, read, fadd or cswap (got \"%s\")\n",
				pf_prog, optarg);
			return -1;
		}
		o->op = (enum pf_op)v;
		return 0;
	case 's':
		if (parse_u32(optarg, 1, PF_MAX_SIZE, &o->size_min, "--size"))
			return -1;
		o->size_max = o->size_min;
		return 0;
	case OPT_SWEEP:
		return parse_sweep(optarg, o);
	case 'n':
		return parse_u64(optarg, 1, 1000000000ull, &o->iters, "--iters");
	case OPT_WARMUP:
		return parse_u64(optarg, 0, 1000000000ull, &o->warmup, "--warmup");
	case OPT_MAX_BYTES:
		o->max_bytes_set = true;
		return parse_u64(optarg, 1, UINT64_MAX, &o->max_bytes, "--max-bytes");
	default:
		return 1;
	}
}

/* queue shape and payload options; 1 if c is not one of them */
static int opt_queue(int c, struct pf_opts *o)
{
	switch (c) {
	case 'q':
		return parse_u32(optarg, 1, PF_MAX_QPS, &o->qps, "--qps");
	case 'w':
		return parse_u32(optarg, 1, 16384, &o->window, "--window");
	case 'l':
		return parse_u32(optarg, 1, PF_MAX_POST_LIST, &o->post_list, "--post-list");
	case OPT_SIGNAL:
		return parse_u32(optarg, 1, 16384, &o->signal, "--signal");
	case 'r':
		o->rx_depth_set = true;
		return parse_u32(optarg, 1, 16384, &o->rx_depth, "--rx-depth");
	case OPT_NO_FC:
		o->no_fc = true;
		return 0;
	case OPT_NO_INLINE:
		o->no_inline = true;
		return 0;
	case OPT_VERIFY:
		o->verify = true;
		return 0;
	case OPT_TD:
		o->td = true;
		return 0;
	case OPT_HUGEBUF:
		o->hugebuf = true;
		return 0;
	default:
		return 1;
	}
}

/* mode, device and output options; 1 if c is not one of them */
static int opt_run(int c, struct pf_opts *o)
{
	uint64_t v;
	switch (c) {
	case OPT_LOOPBACK:
	case OPT_SERVER:
		if (o->mode_given) {
			fprintf(stderr, "%s: give one of --server and --loopback\n", pf_prog);
			return -1;
		}
		o->mode_given = true;
		o->mode = c == OPT_SERVER ? PF_SERVER : PF_LOOPBACK;
		return 0;
	case 'p':
		return parse_u64(optarg, 1, 65535, &v, "--port") ? -1 : (o->tcp_port = (int)v, 0);
	case 'd':
		o->dev = optarg;
		return 0;
	case 'D':
		o->dev2 = optarg;
		return 0;
	case 'i':
		return parse_u64(optarg, 1, 255, &v, "--ib-port") ? -1 : (o->ib_port = (int)v, 0);
	case 'g':
		return parse_u64(optarg, 0, 255, &v, "--gid-idx") ? -1 : (o->gid_idx = (int)v, 0);
	case OPT_JSON:
		o->json = true;
		return 0;
	case OPT_CSV:
		o->csv = optarg;
		return 0;
	case OPT_HIST:
		o->hist = true;
		return 0;
	case OPT_TIMEOUT:
		return parse_u64(optarg, 1, 86400, &v, "--timeout") ? -1 : (o->timeout_s = (unsigned int)v, 0);
	case OPT_MSG_TIMEOUT:
		return parse_u64(optarg, 1, 600000, &v, "--msg-timeout") ? -1 :
			(o->msg_timeout_ms = (unsigned int)v, 0);
	case OPT_CLOCK:
		if (strcmp(optarg, "tsc") && strcmp(optarg, "mono")) {
			fprintf(stderr, "%s: --clock: tsc or mono\n", pf_prog);
			return -1;
		}
		o->clock = !strcmp(optarg, "tsc");
		return 0;
	default:
		return 1;
	}
}

/* the mode from --server / --loopback / a host, with the old default */
static int settle_mode(int argc, char **argv, struct pf_opts *o)
{
	bool explicit_loop = o->mode_given && o->mode == PF_LOOPBACK;
	if (optind < argc) {
		if (o->mode_given) {
			fprintf(stderr, "%s: --server, --loopback and a server host exclude each other\n", pf_prog);
			return -1;
		}
		o->host = argv[optind++];
		o->mode = PF_CLIENT;
	}
	if (optind < argc) {
		fprintf(stderr, "%s: unexpected argument \"%s\"\n", pf_prog, argv[optind]);
		return -1;
	}
	if (o->mode == PF_LOOPBACK && !explicit_loop) {
		const char *cfg = getenv("DPVERBS_CONFIG");
		if (cfg && *cfg) {
			fprintf(stderr, "%s: DPVERBS_CONFIG is set: give --server, a server host or --loopback\n",
				pf_prog);
			return -1;
		}
	}
	return 0;
}

int pf_check_combo(const struct pf_opts *o)
{
	static const bool ok[PF_QPT_N][PF_OP_N] = {
		[PF_RC] = {1, 1, 1, 1, 1, 1, 1},
		[PF_UC] = {1, 1, 1, 1, 0, 0, 0},
		[PF_UD] = {1, 1, 0, 0, 0, 0, 0},
		[PF_XRC] = {1, 1, 1, 1, 1, 1, 1},
	};
	if (!ok[o->qpt][o->op]) {
		fprintf(stderr, "%s: %s QPs cannot do %s (UD: send, send_imm; UC: send, send_imm, write, "
			"write_imm; RC and XRC: all)\n", pf_prog, pf_qpt_name(o->qpt), pf_op_name(o->op));
		return -1;
	}
	if (pf_op_atomic(o->op) && o->size_min != o->size_max) {
		fprintf(stderr, "%s: atomics have one size (8 bytes): no --sweep\n", pf_prog);
		return -1;
	}
	if (o->post_list > o->window) {
		fprintf(stderr, "%s: --post-list %u is above the window %u\n", pf_prog, o->post_list, o->window);
		return -1;
	}
	return 0;
}

int pf_parse_args(int argc, char **argv, struct pf_opts *o)
{
	int c, r;
	while ((c = getopt_long(argc, argv, "t:c:o:s:n:q:w:l:r:p:d:D:i:g:h", long_opts, NULL)) != -1) {
		if (c == 'h') {
			usage(stdout);
			exit(0);
		}
		if ((r = opt_test(c, o)) == 1 && (r = opt_queue(c, o)) == 1 && (r = opt_run(c, o)) == 1) {
			usage(stderr);
			return -1;
		}
		if (r < 0)
			return -1;
	}
	if (settle_mode(argc, argv, o))
		return -1;
	if (o->mode != PF_SERVER && pf_check_combo(o))
		return -1;
	if (pf_op_atomic(o->op))
		o->size_min = o->size_max = 8;
	if (o->signal > o->window)
		o->signal = o->window;
	if (o->size_min != o->size_max && !o->max_bytes_set)
		o->max_bytes = 1ull << 30;
	return 0;
}
