/* SPDX-License-Identifier: BSD-3-Clause */
/* Latency statistics: see perf_stats.h. */
#include <math.h>
#include <stdlib.h>

#include "perf_stats.h"

#define HIST_SUB 8 /* histogram buckets per power of two (about 9 % wide) */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

void ps_sort(uint64_t *v, uint64_t n) { qsort(v, n, sizeof(v[0]), cmp_u64); }

uint64_t ps_pct(const uint64_t *s, uint64_t n, double p)
{
	double r = p / 100.0 * (double)n;
	uint64_t k = (uint64_t)r;
	if ((double)k < r)
		k++;
	return s[k < 1 ? 0 : (k > n ? n - 1 : k - 1)];
}

void ps_summary(const uint64_t *s, uint64_t n, double scale, struct ps_sum *o)
{
	double sum = 0;
	*o = (struct ps_sum){0};
	if (!n)
		return;
	for (uint64_t i = 0; i < n; i++)
		sum += (double)s[i];
	o->min = (double)s[0] * scale;
	o->p50 = (double)ps_pct(s, n, 50) * scale;
	o->p99 = (double)ps_pct(s, n, 99) * scale;
	o->p999 = (double)ps_pct(s, n, 99.9) * scale;
	o->max = (double)s[n - 1] * scale;
	o->mean = sum / (double)n * scale;
}

json_t *ps_sum_json(const struct ps_sum *l)
{
	return json_pack("{s:f, s:f, s:f, s:f, s:f, s:f}", "min", l->min, "p50", l->p50, "p99", l->p99,
			 "p99_9", l->p999, "max", l->max, "mean", l->mean);
}

json_t *ps_cdf(const uint64_t *s, uint64_t n, double scale)
{
	static const double tail[] = {99.5, 99.9, 99.99, 100.0};
	json_t *a = json_array();
	if (!n)
		return a;
	json_array_append_new(a, json_pack("[f, f]", 0.0, (double)s[0] * scale));
	for (int p = 1; p < 100; p++)
		json_array_append_new(a, json_pack("[f, f]", (double)p, (double)ps_pct(s, n, p) * scale));
	for (size_t i = 0; i < sizeof(tail) / sizeof(tail[0]); i++)
		json_array_append_new(a, json_pack("[f, f]", tail[i], (double)ps_pct(s, n, tail[i]) * scale));
	return a;
}

json_t *ps_hist(const uint64_t *s, uint64_t n, double scale, double ns_per_unit)
{
	json_t *a = json_array();
	uint64_t i = 0;
	while (i < n) {
		double v = (double)s[i] * scale * ns_per_unit; /* ns */
		int b = v < 1.0 ? 0 : (int)floor(log2(v) * HIST_SUB);
		double lo = b ? exp2((double)b / HIST_SUB) : 0.0, hi = exp2((double)(b + 1) / HIST_SUB);
		uint64_t c = 0;
		while (i < n && (double)s[i] * scale * ns_per_unit < hi) {
			i++;
			c++;
		}
		if (!c) { /* rounding at the edge: take the sample into this bucket */
			i++;
			c = 1;
		}
		json_array_append_new(a, json_pack("[f, f, I]", lo / ns_per_unit, hi / ns_per_unit, (json_int_t)c));
	}
	return a;
}
