/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpv_mpi_pingpong: an MPI ping-pong and allreduce for comparing MPI
 * transports (Open MPI over UCX on dpverbs against ob1/tcp on the kernel).
 * Two ranks or more; ranks 0 and 1 ping-pong, every rank takes part in the
 * allreduce.
 *
 *   ping-pong  for each size from --min to --max (powers of two): --warmup
 *              untimed then --iters timed round trips; rank 0 sends, rank 1
 *              receives and sends the same number of bytes back. One-way
 *              latency = RTT/2 (p50, p99 over the round trips, and mean),
 *              bandwidth = size / mean one-way time.
 *   allreduce  MPI_SUM of int64 vectors of each size (bytes / 8 elements,
 *              at least 1), mean time per call.
 *   startup    before the sizes: the connection's first --startup round
 *              trips of --min bytes (default 2000), timed from the very
 *              first message and reported on their own. The first ~1000
 *              round trips of a dpverbs connection between two processes on
 *              this 2-CPU machine ran about 10x slower than the rest (p50
 *              30 us, then 2.4 us, whatever the size or UCX transport), so
 *              the sizes after them measure the steady state and this row
 *              the start.
 *
 * Every message is checked, not only timed: each byte of a ping-pong payload
 * is a function of (size, iteration, direction, offset), checked on arrival
 * at both ends; each allreduce result element must equal the sum over the
 * ranks of what they contributed. A wrong byte ends the run with exit 1 and
 * names the size, iteration and offset.
 *
 * Output (rank 0): one line per measurement,
 *   startup SIZE ITERS p50_us p99_us mean_us MB/s
 *   pingpong SIZE ITERS p50_us p99_us mean_us MB/s
 *   allreduce SIZE ITERS mean_us
 * and with --json FILE the same as a JSON array of objects.
 *
 * Exit status: 0 all checked, 1 a check failed, 2 bad usage or fewer than
 * two ranks.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <getopt.h>

struct opts {
	size_t min, max;
	int iters, warmup, big_iters, startup;
	int allreduce, pingpong;
	const char *json;
};

static double now_us(void)
{
	return MPI_Wtime() * 1e6;
}

/* The payload: 64-bit word w of a message is a mix of (size, iteration,
 * direction, w), stored little-endian, so byte off is byte (off & 7) of
 * word off >> 3. One mix per word: filling and checking a 1 MiB message
 * costs about as much as copying it, not the milliseconds a mix per byte
 * took (which then counted in the measured round trip). */
static uint64_t pattern_word(size_t size, int it, int dir, size_t w)
{
	uint64_t x = (uint64_t)size * 0x9E3779B97F4A7C15ull ^ (uint64_t)it * 0xBF58476D1CE4E5B9ull ^
		     (uint64_t)dir << 61 ^ (uint64_t)w * 0x94D049BB133111EBull;
	return x ^ x >> 31;
}

static void put_le64(uint8_t *b, uint64_t x, size_t n)
{
	for (size_t k = 0; k < n; k++)
		b[k] = (uint8_t)(x >> (k * 8));
}

static void fill(uint8_t *b, size_t size, int it, int dir)
{
	size_t w = 0;
	for (; (w + 1) * 8 <= size; w++) {
		uint64_t x = pattern_word(size, it, dir, w);
		if (__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__)
			memcpy(b + w * 8, &x, 8);
		else
			put_le64(b + w * 8, x, 8);
	}
	if (w * 8 < size)
		put_le64(b + w * 8, pattern_word(size, it, dir, w), size - w * 8);
}

static int check(const uint8_t *b, size_t size, int it, int dir, int rank)
{
	uint8_t want[8];
	for (size_t w = 0; w * 8 < size; w++) {
		size_t n = size - w * 8 < 8 ? size - w * 8 : 8;
		put_le64(want, pattern_word(size, it, dir, w), n);
		if (!memcmp(b + w * 8, want, n))
			continue;
		for (size_t k = 0; k < n; k++)
			if (b[w * 8 + k] != want[k]) {
				fprintf(stderr,
					"dpv_mpi_pingpong: rank %d: size %zu iteration %d: byte %zu is 0x%02x, 0x%02x expected\n",
					rank, size, it, w * 8 + k, b[w * 8 + k], want[k]);
				break;
			}
		return -1;
	}
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static int iters_for(const struct opts *o, size_t size)
{
	return size >= (1u << 20) ? o->big_iters : o->iters;
}

static void usage(void)
{
	fprintf(stderr, "usage: dpv_mpi_pingpong [--min BYTES] [--max BYTES] [--iters N] [--big-iters N]\n"
			"                        [--warmup N] [--startup N] [--no-allreduce] [--no-pingpong]\n"
			"                        [--json FILE]\n");
}

static size_t parse_size(const char *s)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 0);
	if (*end == 'k' || *end == 'K')
		v <<= 10, end++;
	else if (*end == 'm' || *end == 'M')
		v <<= 20, end++;
	return *end ? 0 : (size_t)v;
}

static int parse(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		{"min", 1, 0, 'a'},	   {"max", 1, 0, 'b'},		 {"iters", 1, 0, 'n'},
		{"big-iters", 1, 0, 'N'}, {"warmup", 1, 0, 'w'},	 {"no-allreduce", 0, 0, 'R'},
		{"no-pingpong", 0, 0, 'P'}, {"json", 1, 0, 'j'},	 {"startup", 1, 0, 's'},
		{0, 0, 0, 0},
	};
	*o = (struct opts){.min = 8, .max = 4u << 20, .iters = 1000, .warmup = 50, .big_iters = 100,
			   .startup = 2000, .allreduce = 1, .pingpong = 1};
	int c;
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'a': o->min = parse_size(optarg); break;
		case 'b': o->max = parse_size(optarg); break;
		case 'n': o->iters = atoi(optarg); break;
		case 'N': o->big_iters = atoi(optarg); break;
		case 'w': o->warmup = atoi(optarg); break;
		case 'R': o->allreduce = 0; break;
		case 'P': o->pingpong = 0; break;
		case 'j': o->json = optarg; break;
		case 's': o->startup = atoi(optarg); break;
		default: return -1;
		}
	}
	if (optind != argc || !o->min || o->max < o->min || o->iters < 1 || o->big_iters < 1 || o->warmup < 0 ||
	    o->startup < 0)
		return -1;
	return 0;
}

struct result {
	const char *what;
	size_t size;
	int iters;
	double p50, p99, mean, mbps;
};

static int pingpong_n(int rank, size_t size, int iters, int warmup, struct result *r)
{
	int fail = 0;
	uint8_t *out = malloc(size), *in = malloc(size);
	double *rtt = calloc((size_t)iters, sizeof(*rtt));
	if (!out || !in || !rtt) {
		fprintf(stderr, "dpv_mpi_pingpong: out of memory for %zu bytes\n", size);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	/* Only the two messages are timed. No buffer is cleared: a message
	 * that did not arrive leaves the previous iteration's pattern, which
	 * the check tells apart. Rank 1 fills its reply before the request
	 * arrives and checks the request after replying, while rank 0 checks
	 * the reply and fills its next request (untimed, the same work). */
	if (rank == 1)
		fill(out, size, 0, 1);
	for (int it = -warmup; it < iters; it++) {
		int seq = it + warmup;
		if (rank == 0) {
			fill(out, size, seq, 0);
			double t0 = now_us();
			MPI_Send(out, (int)size, MPI_BYTE, 1, seq & 0x7fff, MPI_COMM_WORLD);
			MPI_Recv(in, (int)size, MPI_BYTE, 1, seq & 0x7fff, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			double t1 = now_us();
			if (it >= 0)
				rtt[it] = t1 - t0;
			if (!fail && check(in, size, seq, 1, rank))
				fail = 1;
		} else if (rank == 1) {
			MPI_Recv(in, (int)size, MPI_BYTE, 0, seq & 0x7fff, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			MPI_Send(out, (int)size, MPI_BYTE, 0, seq & 0x7fff, MPI_COMM_WORLD);
			if (!fail && check(in, size, seq, 0, rank))
				fail = 1;
			fill(out, size, seq + 1, 1);
		}
	}
	if (rank == 0) {
		double sum = 0;
		for (int i = 0; i < iters; i++)
			sum += rtt[i];
		qsort(rtt, (size_t)iters, sizeof(*rtt), cmp_double);
		*r = (struct result){.what = "pingpong", .size = size, .iters = iters,
				     .p50 = rtt[iters / 2] / 2, .p99 = rtt[(size_t)((iters - 1) * 0.99)] / 2,
				     .mean = sum / iters / 2};
		r->mbps = (double)size / r->mean; /* bytes per µs = MB/s */
	}
	free(out);
	free(in);
	free(rtt);
	return fail;
}

static int pingpong(const struct opts *o, int rank, size_t size, struct result *r)
{
	return pingpong_n(rank, size, iters_for(o, size), o->warmup, r);
}

static int allreduce(const struct opts *o, int rank, int nranks, size_t size, struct result *r)
{
	int iters = iters_for(o, size), fail = 0;
	size_t n = size / 8 ? size / 8 : 1;
	int64_t *in = malloc(n * 8), *out = malloc(n * 8);
	if (!in || !out) {
		fprintf(stderr, "dpv_mpi_pingpong: out of memory for %zu bytes\n", size);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	double t0 = 0;
	for (int it = -o->warmup; it < iters; it++) {
		if (it == 0) {
			MPI_Barrier(MPI_COMM_WORLD);
			t0 = now_us();
		}
		int64_t seq = it + o->warmup;
		for (size_t i = 0; i < n; i++)
			in[i] = (int64_t)(rank + 1) * (int64_t)(i + 1) + seq;
		MPI_Allreduce(in, out, (int)n, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
		/* sum over ranks r of (r+1)(i+1) + seq */
		for (size_t i = 0; i < n && !fail; i++) {
			int64_t want = (int64_t)nranks * (nranks + 1) / 2 * (int64_t)(i + 1) + nranks * seq;
			if (out[i] != want) {
				fprintf(stderr,
					"dpv_mpi_pingpong: rank %d: allreduce %zu bytes iteration %d: element %zu is %lld, %lld expected\n",
					rank, size, it, i, (long long)out[i], (long long)want);
				fail = 1;
			}
		}
	}
	double t1 = now_us();
	if (rank == 0)
		*r = (struct result){.what = "allreduce", .size = n * 8, .iters = iters, .mean = (t1 - t0) / iters};
	free(in);
	free(out);
	return fail;
}

static void print(FILE *f, const struct result *r, int json, int first)
{
	if (json) {
		fprintf(f, "%s  {\"test\": \"%s\", \"size\": %zu, \"iters\": %d, \"mean_us\": %.3f", first ? "" : ",\n",
			r->what, r->size, r->iters, r->mean);
		if (strcmp(r->what, "allreduce"))
			fprintf(f, ", \"p50_us\": %.3f, \"p99_us\": %.3f, \"MBps\": %.1f", r->p50, r->p99, r->mbps);
		fprintf(f, "}");
		return;
	}
	if (strcmp(r->what, "allreduce"))
		fprintf(f, "%s %zu %d %.3f %.3f %.3f %.1f\n", r->what, r->size, r->iters, r->p50, r->p99, r->mean,
			r->mbps);
	else
		fprintf(f, "allreduce %zu %d %.3f\n", r->size, r->iters, r->mean);
}

/* Rank 0: one result to stdout and, with --json, to jf (*any: one written). */
static void emit(const struct result *r, FILE *jf, int *any)
{
	print(stdout, r, 0, 0);
	fflush(stdout);
	if (jf)
		print(jf, r, 1, !*any);
	*any = 1;
}

int main(int argc, char **argv)
{
	struct opts o;
	int rank, nranks, fail = 0, any = 0;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);
	if (parse(argc, argv, &o) || nranks < 2) {
		if (rank == 0) {
			usage();
			if (nranks < 2)
				fprintf(stderr, "dpv_mpi_pingpong: needs two ranks or more (%d)\n", nranks);
		}
		MPI_Finalize();
		return 2;
	}
	FILE *jf = NULL;
	if (rank == 0 && o.json) {
		jf = fopen(o.json, "w");
		if (!jf) {
			perror(o.json);
			MPI_Abort(MPI_COMM_WORLD, 2);
		}
		fprintf(jf, "[\n");
	}
	if (rank == 0)
		printf("# %d ranks; startup|pingpong SIZE ITERS p50_us p99_us mean_us MB/s; allreduce SIZE ITERS "
		       "mean_us\n",
		       nranks);
	if (o.startup && o.pingpong) {
		struct result r = {0};
		int f = pingpong_n(rank, o.min, o.startup, 0, &r), all;
		r.what = "startup";
		MPI_Allreduce(&f, &all, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
		fail = all;
		if (rank == 0 && !fail)
			emit(&r, jf, &any);
	}
	for (int pass = 0; pass < 2 && !fail; pass++) {
		if ((pass == 0 && !o.pingpong) || (pass == 1 && !o.allreduce))
			continue;
		for (size_t size = o.min; size <= o.max; size *= 2) {
			struct result r = {0};
			int f = pass == 0 ? pingpong(&o, rank, size, &r) : allreduce(&o, rank, nranks, size, &r);
			int all;
			MPI_Allreduce(&f, &all, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
			if (all) {
				fail = 1;
				break;
			}
			if (rank == 0)
				emit(&r, jf, &any);
		}
		if (fail)
			break;
	}
	if (jf) {
		fprintf(jf, "\n]\n");
		fclose(jf);
	}
	if (rank == 0)
		printf("%s\n", fail ? "FAILED: a message arrived wrong" : "all messages checked");
	MPI_Finalize();
	return fail;
}
