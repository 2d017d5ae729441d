/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpv_baseline memory tests.
 *
 * memcpy: glibc memcpy of SIZE bytes from one buffer to another, the same
 * two buffers every time (hot in the caches up to their size; 64 MiB comes
 * from DRAM), repeated for --duration on one pinned core.
 *
 * cacheline: two threads pinned to two CPUs bounce one 64-byte line: A
 * writes 2i+1, B waits for it and writes 2i+2, A waits for that. Every
 * round trip is timed on A (p50/p99...); one way is half of it.
 */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"

int base_pin(int cpu)
{
	cpu_set_t set;
	if (cpu < 0)
		return 0;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return pthread_setaffinity_np(pthread_self(), sizeof(set), &set) ? -1 : 0;
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

/* bytes per second of memcpy(dst, src, size) over about ms milliseconds */
static json_t *copy_one(uint8_t *dst, const uint8_t *src, size_t size, unsigned int ms)
{
	uint64_t reps = 0, batch = 1, t0 = pt_mono_ns(), t1 = t0, limit = (uint64_t)ms * 1000000ull;
	while (t1 - t0 < limit && !pt_stop) {
		for (uint64_t i = 0; i < batch; i++) {
			memcpy(dst, src, size);
			__asm__ volatile("" : : "r"(dst) : "memory");
		}
		reps += batch;
		t1 = pt_mono_ns();
		if (t1 - t0 < limit / 50 && batch < (1ull << 30))
			batch *= 2;
	}
	double ns = (double)(t1 - t0), bps = ns > 0 ? (double)reps * (double)size / ns * 1e9 : 0;
	return json_pack("{s:I, s:I, s:f, s:f, s:f, s:f}", "size", (json_int_t)size, "copies", (json_int_t)reps,
			 "bytes_per_s", bps, "gbit_per_s", bps * 8 / 1e9, "ns_per_copy", reps ? ns / (double)reps : 0,
			 "copies_per_s", ns > 0 ? (double)reps / ns * 1e9 : 0);
}

json_t *base_memcpy(const struct base_opts *o)
{
	size_t max = o->mem_big ? BASE_BIG : o->mem_max;
	uint8_t *src = NULL, *dst = NULL;
	if (max < o->mem_max)
		max = o->mem_max;
	if (posix_memalign((void **)&src, 4096, max) || posix_memalign((void **)&dst, 4096, max)) {
		fprintf(stderr, "dpv_baseline: memcpy: out of memory\n");
		free(src);
		return NULL;
	}
	memset(src, 0x5a, max);
	memset(dst, 0, max);
	if (base_pin(o->cpu_a))
		fprintf(stderr, "dpv_baseline: memcpy: cannot pin to CPU %d\n", o->cpu_a);
	json_t *rows = json_array();
	for (uint64_t s = o->mem_min; s <= o->mem_max && !pt_stop; s *= 2)
		json_array_append_new(rows, copy_one(dst, src, (size_t)s, o->duration_ms));
	if (o->mem_big && !pt_stop)
		json_array_append_new(rows, copy_one(dst, src, BASE_BIG, o->duration_ms * 2));
	free(src);
	free(dst);
	return json_pack("{s:s, s:i, s:o, s:s}", "what", "glibc memcpy, one core, the same two buffers each time",
			 "cpu", o->cpu_a, "rows", rows, "status", pt_stop ? "fail" : "pass");
}

/* ---- cache line ---- */

struct cl_shared {
	_Alignas(64) uint64_t flag;
	_Alignas(64) volatile int stop;
	const struct base_opts *o;
	uint64_t *rtt;
	uint64_t n;
	int err;
};

static void *cl_echo(void *arg)
{
	struct cl_shared *c = arg;
	uint64_t want = 1;
	if (base_pin(c->o->cpu_b))
		c->err = 1;
	while (!c->stop && !pt_stop) {
		if (__atomic_load_n(&c->flag, __ATOMIC_ACQUIRE) != want) {
			cpu_relax();
			continue;
		}
		__atomic_store_n(&c->flag, want + 1, __ATOMIC_RELEASE);
		want += 2;
	}
	return NULL;
}

static void *cl_ping(void *arg)
{
	struct cl_shared *c = arg;
	uint64_t total = c->o->warmup + c->o->cl_iters;
	if (base_pin(c->o->cpu_a))
		c->err = 1;
	for (uint64_t i = 0; i < total && !pt_stop; i++) {
		uint64_t t0 = pt_now();
		__atomic_store_n(&c->flag, 2 * i + 1, __ATOMIC_RELEASE);
		while (__atomic_load_n(&c->flag, __ATOMIC_ACQUIRE) != 2 * i + 2 && !pt_stop)
			cpu_relax();
		uint64_t t1 = pt_now();
		if (i >= c->o->warmup && !pt_stop)
			c->rtt[c->n++] = t1 - t0;
	}
	c->stop = 1;
	return NULL;
}

json_t *base_cacheline(const struct base_opts *o)
{
	static struct cl_shared c;
	pthread_t ta, tb;
	if (o->cpu_a < 0 || o->cpu_b < 0 || o->cpu_a == o->cpu_b) {
		fprintf(stderr, "dpv_baseline: cacheline: needs two different CPUs (--cpus)\n");
		return json_pack("{s:s, s:s}", "status", "skipped", "error", "needs two CPUs");
	}
	memset(&c, 0, sizeof(c));
	c.o = o;
	c.rtt = malloc(sizeof(uint64_t) * (o->cl_iters ? o->cl_iters : 1));
	if (!c.rtt || pthread_create(&tb, NULL, cl_echo, &c)) {
		free(c.rtt);
		return NULL;
	}
	if (pthread_create(&ta, NULL, cl_ping, &c)) {
		c.stop = 1;
		pthread_join(tb, NULL);
		free(c.rtt);
		return NULL;
	}
	pthread_join(ta, NULL);
	pthread_join(tb, NULL);
	struct ps_sum s;
	double ns = pt_clk.ns_per_tick;
	ps_sort(c.rtt, c.n);
	ps_summary(c.rtt, c.n, ns, &s);
	json_t *j = json_pack("{s:s, s:[i, i], s:I, s:o, s:f, s:o}", "what",
			      "one 64-byte line bounced between two pinned threads", "cpus", o->cpu_a, o->cpu_b,
			      "round_trips", (json_int_t)c.n, "rtt_ns", ps_sum_json(&s), "one_way_ns_p50", s.p50 / 2,
			      "cdf_rtt_ns", ps_cdf(c.rtt, c.n, ns));
	json_object_set_new(j, "status", json_string(c.err ? "fail" : c.n == o->cl_iters ? "pass" : "fail"));
	if (c.err)
		json_object_set_new(j, "error", json_string("cannot pin the threads"));
	free(c.rtt);
	return j;
}
