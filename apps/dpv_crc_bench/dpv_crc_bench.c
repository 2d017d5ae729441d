/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpv_crc_bench: CRC-32 and RoCEv2 ICRC cost of each implementation, in one
 * thread, no EAL and no ports.
 *
 * Implementations:
 *   sb8         slicing-by-8 tables (lib/wire, the portable fallback)
 *   clmul       carry-less multiply, PCLMULQDQ folding, 128 bits (lib/wire)
 *   vpclmul     the same with 512-bit VPCLMULQDQ (AVX-512), when the CPU has it
 *   rte-sse42   DPDK rte_net_crc_calc(RTE_NET_CRC32_ETH), RTE_NET_CRC_SSE42
 *   rte-avx512  the same with RTE_NET_CRC_AVX512 (VPCLMULQDQ), when the CPU
 *               has it (DPDK falls back to SSE4.2 otherwise: reported)
 * rte_net_crc has no seed, so its ICRC is computed over the frame in place:
 * the 8 bytes before the IP header (end of the Ethernet header) become
 * 0xFF, the variant header fields are set to ones, one call covers the
 * contiguous range, then every changed byte is restored.
 *
 * Two tables, each for payload sizes 0, 64, 256, 1024, 4096 (--sizes):
 *   crc   CRC over a buffer of that many bytes (64-byte aligned);
 *   icrc  whole-frame ICRC of a UD SEND ONLY frame with that payload
 *         (IPv4, or IPv6 with --ipv6): bytes = IP header to ICRC.
 * Per cell: TSC ticks per call (rte_rdtsc), bytes per tick, ns per call
 * (TSC frequency calibrated against CLOCK_MONOTONIC), the median of
 * --rounds rounds of --iters calls; implementations alternate within each
 * round so that frequency drift and neighbours' load hit all of them.
 * Every implementation's result is first checked against sb8.
 *
 * Usage: dpv_crc_bench [--iters N] [--rounds R] [--sizes a,b,...] [--ipv6]
 *                      [--impl LIST] [--json]
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rte_cycles.h>
#include <rte_net_crc.h>
#include <rte_vect.h>

#include "dpv_crc.h"
#include "dpv_wire.h"

#define MAX_SIZES 16
#define MAX_PAYLOAD 65536

enum impl { I_SB8, I_CLMUL, I_VPCLMUL, I_RTE_SSE42, I_RTE_AVX512, I_N };

static const char *const impl_name[I_N] = { "sb8", "clmul", "vpclmul", "rte-sse42",
					    "rte-avx512" };
#define IS_RTE(i) ((i) >= I_RTE_SSE42)

struct opts {
	uint64_t iters;
	unsigned rounds;
	uint32_t sizes[MAX_SIZES];
	unsigned nsizes;
	bool ipv6, json;
	bool use[I_N];
};

static double tsc_hz;
static enum rte_net_crc_alg rte_alg_now = (enum rte_net_crc_alg)-1;

static void usage(const char *prog)
{
	fprintf(stderr,
		"usage: %s [--iters N] [--rounds R] [--sizes a,b,...] [--ipv6] [--impl LIST] [--json]\n"
		"  --iters N     calls per implementation and round (default 20000)\n"
		"  --rounds R    rounds, the median is reported (default 9)\n"
		"  --sizes LIST  payload sizes in bytes (default 0,64,256,1024,4096)\n"
		"  --ipv6        ICRC over IPv6 frames (default IPv4)\n"
		"  --impl LIST   subset of sb8,clmul,vpclmul,rte-sse42,rte-avx512 (default all)\n"
		"  --json        one JSON object instead of tables\n",
		prog);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void calibrate_tsc(void)
{
	double t0 = now_s(), t1;
	uint64_t c0 = rte_rdtsc(), c1;

	do {
		t1 = now_s();
	} while (t1 - t0 < 0.2);
	c1 = rte_rdtsc();
	tsc_hz = (double)(c1 - c0) / (t1 - t0);
}

static void rte_alg(enum impl i)
{
	enum rte_net_crc_alg a = i == I_RTE_AVX512 ? RTE_NET_CRC_AVX512 : RTE_NET_CRC_SSE42;

	if (a != rte_alg_now) {
		rte_net_crc_set_alg(a);
		rte_alg_now = a;
	}
}

/* ---- the raw CRC of a buffer ---- */

static uint32_t crc_once(enum impl i, const uint8_t *p, uint32_t n)
{
	if (IS_RTE(i))
		return rte_net_crc_calc(p, n, RTE_NET_CRC32_ETH);
	return ~dpv_crc32_update_with((enum dpv_crc_impl)i, 0xffffffffu, p, n);
}

/* ---- the ICRC of a frame ---- */

/*
 * rte_net_crc over the frame with the pseudo-header made in place. l3 must
 * have 8 writable bytes before it. IBA A17.3.3 masks, as in dpv_icrc.c.
 */
static uint32_t icrc_rte_inplace(uint8_t *l3, uint32_t len)
{
	uint8_t save_pre[8], save_hdr[DPV_IPV6_HLEN + DPV_UDP_HLEN + DPV_BTH_LEN];
	uint32_t iphl = (l3[0] >> 4) == 6 ? DPV_IPV6_HLEN : (uint32_t)(l3[0] & 0xf) * 4;
	uint32_t n = iphl + DPV_UDP_HLEN + DPV_BTH_LEN;
	uint8_t *udp = l3 + iphl, *bth = udp + DPV_UDP_HLEN;
	uint32_t crc;

	if (n > sizeof(save_hdr) || n > len)
		return dpv_icrc_compute_sb8(l3, len); /* options or short: not timed here */
	memcpy(save_pre, l3 - 8, 8);
	memcpy(save_hdr, l3, n);
	memset(l3 - 8, 0xff, 8);
	if (iphl == DPV_IPV6_HLEN) {
		l3[0] |= 0x0f;
		l3[1] = l3[2] = l3[3] = 0xff;
		l3[7] = 0xff;
	} else {
		l3[1] = 0xff;
		l3[8] = 0xff;
		l3[10] = l3[11] = 0xff;
	}
	udp[6] = udp[7] = 0xff;
	bth[4] = 0xff;
	crc = rte_net_crc_calc(l3 - 8, len + 8, RTE_NET_CRC32_ETH);
	memcpy(l3 - 8, save_pre, 8);
	memcpy(l3, save_hdr, n);
	return crc;
}

static uint32_t icrc_once(enum impl i, uint8_t *l3, uint32_t len)
{
	if (IS_RTE(i))
		return icrc_rte_inplace(l3, len);
	return dpv_icrc_compute_with((enum dpv_crc_impl)i, l3, len);
}

/* UD SEND ONLY with paylen payload bytes; returns the frame length */
static uint32_t build_frame(uint8_t *f, uint32_t paylen, bool v6)
{
	struct dpv_pkt_build b;
	uint32_t flen, off;

	memset(&b, 0, sizeof(b));
	memcpy(b.dst_mac, "\x52\x54\x00\x77\x00\x03", 6);
	memcpy(b.src_mac, "\x52\x54\x00\x77\x00\x02", 6);
	b.ip_ver = v6 ? 6 : 4;
	if (v6) {
		b.sgid[0] = 0xfe;
		b.sgid[1] = 0x80;
		b.sgid[15] = 2;
		memcpy(b.dgid, b.sgid, 16);
		b.dgid[15] = 3;
	} else {
		static const uint8_t m4[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

		memcpy(b.sgid, m4, 12);
		memcpy(b.dgid, m4, 12);
		memcpy(b.sgid + 12, "\x0a\x4d\x00\x02", 4);
		memcpy(b.dgid + 12, "\x0a\x4d\x00\x03", 4);
	}
	b.hop_limit = 64;
	b.ip_id = 1;
	b.udp_sport = 0xc144;
	b.opcode = DPV_TR_UD | DPV_OPC_SEND_ONLY;
	b.pkey = 0xffff;
	b.dqpn = 0x12;
	b.psn = 1;
	b.deth_qkey = 0x11111111;
	b.deth_sqpn = 0x13;
	flen = dpv_pkt_frame_len(b.opcode, b.ip_ver, paylen);
	if (!flen)
		return 0;
	off = dpv_pkt_build_hdrs(f, &b, paylen);
	if (!off)
		return 0;
	for (uint32_t i = 0; i < paylen; i++)
		f[off + i] = (uint8_t)(i * 131 + 7);
	dpv_pkt_finish(f, flen);
	return flen;
}

/* ---- timing ---- */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static volatile uint32_t sink;

/* TSC ticks per call, one round */
static double time_round(enum impl i, bool icrc, uint8_t *p, uint32_t n, uint64_t iters)
{
	uint32_t acc = 0;
	uint64_t t0, t1;

	if (IS_RTE(i))
		rte_alg(i);
	t0 = rte_rdtsc_precise();
	if (icrc) {
		for (uint64_t k = 0; k < iters; k++)
			acc ^= icrc_once(i, p, n);
	} else {
		for (uint64_t k = 0; k < iters; k++)
			acc ^= crc_once(i, p, n);
	}
	t1 = rte_rdtsc_precise();
	sink ^= acc;
	return (double)(t1 - t0) / (double)iters;
}

struct cell {
	double ticks, ticks_min;
};

static int parse_list(const char *s, struct opts *o)
{
	char *dup = strdup(s), *save = NULL;

	o->nsizes = 0;
	for (char *t = strtok_r(dup, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		char *end;
		unsigned long v = strtoul(t, &end, 0);

		if (*end || v > MAX_PAYLOAD || o->nsizes == MAX_SIZES) {
			free(dup);
			return -1;
		}
		o->sizes[o->nsizes++] = (uint32_t)v;
	}
	free(dup);
	return o->nsizes ? 0 : -1;
}

static int parse_impls(const char *s, struct opts *o)
{
	char *dup = strdup(s), *save = NULL;

	memset(o->use, 0, sizeof(o->use));
	for (char *t = strtok_r(dup, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		int k;

		for (k = 0; k < I_N; k++)
			if (!strcmp(t, impl_name[k]))
				break;
		if (k == I_N) {
			free(dup);
			return -1;
		}
		o->use[k] = true;
	}
	free(dup);
	return 0;
}

/* The inputs of every cell: one buffer for the CRC, one frame per size. */
struct inputs {
	uint8_t *buf;                   /* MAX_PAYLOAD bytes, 64-byte aligned */
	uint8_t *frames[MAX_SIZES];     /* at the IP header (l3) */
	uint32_t l3len[MAX_SIZES];      /* IP header .. payload, ICRC excluded */
};

/* Parse the options into o: -1 to go on, else the exit status. */
static int parse_opts(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		{ "iters", required_argument, NULL, 'n' },
		{ "rounds", required_argument, NULL, 'r' },
		{ "sizes", required_argument, NULL, 's' },
		{ "ipv6", no_argument, NULL, '6' },
		{ "impl", required_argument, NULL, 'i' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	while ((c = getopt_long(argc, argv, "n:r:s:6i:jh", lo, NULL)) != -1) {
		switch (c) {
		case 'n':
			o->iters = strtoull(optarg, NULL, 0);
			break;
		case 'r':
			o->rounds = (unsigned)strtoul(optarg, NULL, 0);
			break;
		case 's':
			if (parse_list(optarg, o)) {
				fprintf(stderr, "bad --sizes (at most %d, each <= %d)\n", MAX_SIZES,
					MAX_PAYLOAD);
				return 2;
			}
			break;
		case '6':
			o->ipv6 = true;
			break;
		case 'i':
			if (parse_impls(optarg, o)) {
				fprintf(stderr, "bad --impl\n");
				return 2;
			}
			break;
		case 'j':
			o->json = true;
			break;
		case 'h':
			usage(argv[0]);
			return 0;
		default:
			usage(argv[0]);
			return 2;
		}
	}
	if (!o->iters || !o->rounds) {
		usage(argv[0]);
		return 2;
	}
	return -1;
}

/* The CRC buffer and one UD SEND ONLY frame per payload size. */
static int make_inputs(const struct opts *o, struct inputs *in)
{
	in->buf = aligned_alloc(64, MAX_PAYLOAD);
	for (uint32_t k = 0; k < MAX_PAYLOAD; k++)
		in->buf[k] = (uint8_t)(k * 2654435761u >> 13);
	for (unsigned s = 0; s < o->nsizes; s++) {
		uint32_t flen;

		/* 2 bytes in so that the IP header is 16-byte aligned, as in an
		 * mbuf whose data starts at RTE_PKTMBUF_HEADROOM + 2 */
		in->frames[s] = aligned_alloc(64, ((o->sizes[s] + 256) + 63) & ~(size_t)63);
		flen = build_frame(in->frames[s] + 2, o->sizes[s], o->ipv6);
		if (!flen) {
			fprintf(stderr, "cannot build a frame with %u bytes of payload\n",
				o->sizes[s]);
			return -1;
		}
		in->frames[s] += 2 + DPV_ETH_HLEN; /* l3 */
		in->l3len[s] = flen - DPV_ETH_HLEN - DPV_ICRC_LEN;
	}
	return 0;
}

/*
 * Every implementation against sb8 (the CRC) and against the ICRC on the
 * wire; the in-place rte ICRC must also leave the frame as it found it.
 * Returns the number of mismatches.
 */
static int check_impls(const struct opts *o, const struct inputs *in)
{
	int bad = 0;

	for (int i = 0; i < I_N; i++) {
		if (!o->use[i])
			continue;
		if (IS_RTE(i))
			rte_alg((enum impl)i);
		for (unsigned s = 0; s < o->nsizes; s++) {
			uint8_t *l3 = in->frames[s];
			const uint8_t *ic = l3 + in->l3len[s];
			uint32_t wire = (uint32_t)ic[0] | (uint32_t)ic[1] << 8 |
					(uint32_t)ic[2] << 16 | (uint32_t)ic[3] << 24;
			uint8_t before[64];

			memcpy(before, l3 - 8, sizeof(before));
			if (crc_once((enum impl)i, in->buf, o->sizes[s]) !=
			    crc_once(I_SB8, in->buf, o->sizes[s])) {
				fprintf(stderr, "MISMATCH: %s crc of %u bytes\n", impl_name[i],
					o->sizes[s]);
				bad++;
			}
			if (icrc_once((enum impl)i, l3, in->l3len[s]) != wire ||
			    memcmp(before, l3 - 8, sizeof(before))) {
				fprintf(stderr, "MISMATCH: %s ICRC of the %u-byte payload frame\n",
					impl_name[i], o->sizes[s]);
				bad++;
			}
		}
	}
	return bad;
}

/*
 * Fill res[icrc][impl][size] with the median and the minimum of the rounds
 * (at most 64 kept). Within a round the implementations run one after the
 * other, so that drift and neighbours' load hit all of them alike.
 */
static void measure(const struct opts *o, const struct inputs *in,
		    struct cell res[2][I_N][MAX_SIZES])
{
	double *samples = calloc(o->rounds, sizeof(double));

	for (int icrc = 0; icrc < 2; icrc++) {
		for (unsigned s = 0; s < o->nsizes; s++) {
			double all[I_N][64];
			unsigned rounds = o->rounds > 64 ? 64 : o->rounds;
			uint8_t *p = icrc ? in->frames[s] : in->buf;
			uint32_t n = icrc ? in->l3len[s] : o->sizes[s];

			for (int i = 0; i < I_N; i++) /* warm-up */
				if (o->use[i])
					time_round((enum impl)i, icrc, p, n, o->iters / 10 + 1);
			for (unsigned r = 0; r < rounds; r++)
				for (int i = 0; i < I_N; i++)
					if (o->use[i])
						all[i][r] = time_round((enum impl)i, icrc, p, n,
								       o->iters);
			for (int i = 0; i < I_N; i++) {
				if (!o->use[i])
					continue;
				memcpy(samples, all[i], rounds * sizeof(double));
				qsort(samples, rounds, sizeof(double), cmp_double);
				res[icrc][i][s].ticks = samples[rounds / 2];
				res[icrc][i][s].ticks_min = samples[0];
			}
		}
	}
	free(samples);
}

/* --json: one object, a flat list of cells (crc first, then icrc) */
static void print_json(const struct opts *o, const struct inputs *in,
		       struct cell res[2][I_N][MAX_SIZES])
{
	bool first = true;

	printf("{\"tsc_hz\": %.0f, \"ip\": %d, \"iters\": %" PRIu64 ", \"rounds\": %u, "
	       "\"selected\": \"%s\", \"results\": [",
	       tsc_hz, o->ipv6 ? 6 : 4, o->iters, o->rounds,
	       dpv_crc_impl_name(dpv_crc_impl_selected()));
	for (int icrc = 0; icrc < 2; icrc++)
		for (unsigned s = 0; s < o->nsizes; s++)
			for (int i = 0; i < I_N; i++) {
				uint32_t bytes = icrc ? in->l3len[s] : o->sizes[s];
				double t = res[icrc][i][s].ticks;

				if (!o->use[i])
					continue;
				printf("%s{\"test\": \"%s\", \"impl\": \"%s\", \"payload\": %u, "
				       "\"bytes\": %u, \"ticks\": %.1f, \"ticks_min\": %.1f, "
				       "\"bytes_per_tick\": %.3f, \"ns\": %.2f}",
				       first ? "" : ", ", icrc ? "icrc" : "crc", impl_name[i],
				       o->sizes[s], bytes, t, res[icrc][i][s].ticks_min,
				       t > 0 ? bytes / t : 0.0, t / tsc_hz * 1e9);
				first = false;
			}
	printf("]}\n");
}

/* the two tables, crc then icrc */
static void print_tables(const struct opts *o, const struct inputs *in,
			 struct cell res[2][I_N][MAX_SIZES])
{
	printf("TSC %.3f GHz; median of %u rounds x %" PRIu64 " calls; library uses %s\n",
	       tsc_hz / 1e9, o->rounds, o->iters, dpv_crc_impl_name(dpv_crc_impl_selected()));
	for (int icrc = 0; icrc < 2; icrc++) {
		if (icrc)
			printf("\nICRC of a whole UD SEND ONLY frame (IPv%d), bytes = IP header .. ICRC\n",
			       o->ipv6 ? 6 : 4);
		else
			printf("\nCRC-32 of a buffer\n");
		printf("%-11s %8s %6s", "impl", "payload", "bytes");
		printf(" %10s %10s %9s\n", "ticks/call", "bytes/tick", "ns/call");
		for (unsigned s = 0; s < o->nsizes; s++) {
			for (int i = 0; i < I_N; i++) {
				uint32_t bytes = icrc ? in->l3len[s] : o->sizes[s];
				double t = res[icrc][i][s].ticks;

				if (!o->use[i])
					continue;
				printf("%-11s %8u %6u %10.1f %10.2f %9.1f\n", impl_name[i], o->sizes[s],
				       bytes, t, t > 0 ? bytes / t : 0.0, t / tsc_hz * 1e9);
			}
		}
	}
}

int main(int argc, char **argv)
{
	struct opts o = { .iters = 20000, .rounds = 9, .sizes = { 0, 64, 256, 1024, 4096 },
			  .nsizes = 5, .use = { true, true, true, true, true } };
	static struct cell res[2][I_N][MAX_SIZES];
	struct inputs in;
	int rc;

	rc = parse_opts(argc, argv, &o);
	if (rc >= 0)
		return rc;
	if (!dpv_crc_impl_supported(DPV_CRC_CLMUL))
		o.use[I_CLMUL] = false;
	if (!dpv_crc_impl_supported(DPV_CRC_VPCLMUL))
		o.use[I_VPCLMUL] = false;
	/* without EAL the SIMD limit is unset; DPDK reads it at its first
	 * rte_net_crc_set_alg() */
	rte_vect_set_max_simd_bitwidth(RTE_VECT_SIMD_512);
	calibrate_tsc();

	if (make_inputs(&o, &in))
		return 1;
	/* correctness first: no figures for an implementation that is wrong */
	if (check_impls(&o, &in))
		return 1;
	measure(&o, &in, res);
	if (o.json)
		print_json(&o, &in, res);
	else
		print_tables(&o, &in, res);
	return 0;
}
