/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpv_baseline: what this machine does without dpverbs, measured in the
 * same sitting as the dpverbs figures it is compared with.
 *
 *   dpv_baseline.c  command line, text/JSON/CSV output
 *   base_mem.c      memcpy bandwidth on one core; a cache line bounced
 *                   between two threads pinned to two CPUs
 *   base_net.c      kernel UDP ping-pong and UDP stream, kernel TCP stream,
 *                   all on 127.0.0.1 between two threads of this process
 *
 * Each test returns one JSON object (NULL on a set-up error, with a message
 * on stderr); "status" in it says whether its own checks passed.
 */
#ifndef BASE_H
#define BASE_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "perf_common.h"
#include "perf_stats.h"

struct base_opts {
	bool t_memcpy, t_cacheline, t_udp_lat, t_udp_bw, t_tcp_bw;
	uint32_t mem_min, mem_max;     /* memcpy sizes, powers of two */
	bool mem_big;                  /* and one 64 MiB copy (DRAM) */
	unsigned int duration_ms;      /* per memcpy size and for the TCP stream */
	uint32_t udp_size, window, tcp_chunk;
	uint64_t udp_iters, udp_msgs, cl_iters, warmup;
	int cpu_a, cpu_b;              /* -1: the first two CPUs we may run on */
	bool busy, json, pin;
	const char *csv;
	unsigned int timeout_s;
};

#define BASE_BIG (64u << 20)

/* base_mem.c */
json_t *base_memcpy(const struct base_opts *o);
json_t *base_cacheline(const struct base_opts *o);
int base_pin(int cpu);           /* pin the calling thread; 0 or -1 */

/* base_net.c */
json_t *base_udp_lat(const struct base_opts *o);
json_t *base_udp_bw(const struct base_opts *o);
json_t *base_tcp_bw(const struct base_opts *o);

#endif /* BASE_H */
