/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Latency statistics shared by dpv_perf and dpv_baseline: nearest-rank
 * percentiles, a CDF and a log-scale histogram of a sorted sample array.
 * Samples are integers (timer ticks or ns); scale turns one into the unit
 * reported (microseconds in dpv_perf, nanoseconds where a caller wants).
 */
#ifndef PERF_STATS_H
#define PERF_STATS_H

#include <stdint.h>

#include <jansson.h>

struct ps_sum { double min, p50, p99, p999, max, mean; };

void ps_sort(uint64_t *v, uint64_t n);
/* p in 0..100, nearest rank, of a sorted array (n > 0) */
uint64_t ps_pct(const uint64_t *s, uint64_t n, double p);
void ps_summary(const uint64_t *s, uint64_t n, double scale, struct ps_sum *out);
/* {"min", "p50", "p99", "p99_9", "max", "mean"} */
json_t *ps_sum_json(const struct ps_sum *s);
/* [[percent, value], ...] at 0, 1 .. 99, 99.5, 99.9, 99.99, 100 */
json_t *ps_cdf(const uint64_t *s, uint64_t n, double scale);
/* [[low, high, count], ...]: the non-empty buckets, in the scaled unit;
 * the buckets are 8 per power of two of nanoseconds (ns_per_unit: how many
 * ns one scaled unit is, 1000 for microseconds) */
json_t *ps_hist(const uint64_t *s, uint64_t n, double scale, double ns_per_unit);

#endif /* PERF_STATS_H */
