/* SPDX-License-Identifier: BSD-3-Clause */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_ethdev.h>
#include <rte_spinlock.h>

#include "dpv_fault.h"
#include "dpv_port.h"

static struct dpv_conf_fault g_f;
bool dpv_fault_on;
static uint64_t g_state;
static rte_spinlock_t g_lock = RTE_SPINLOCK_INITIALIZER;
static struct dpv_fault_stats g_stats;

/* splitmix64: small, seedable, same sequence on every machine */
static uint64_t next_u64(void)
{
	uint64_t z = (g_state += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static double next_unit(void)
{
	return (double)(next_u64() >> 11) / (double)(1ULL << 53);
}

int dpv_fault_parse_env(const char *spec, struct dpv_conf_fault *f, char *err, size_t errlen)
{
	char buf[256];
	snprintf(buf, sizeof(buf), "%s", spec);
	for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '=');
		char *end;
		if (!eq) {
			snprintf(err, errlen, "DPVERBS_FAULT: %s: expected name=value", tok);
			return -1;
		}
		*eq = 0;
		const char *v = eq + 1;
		if (!strcmp(tok, "seed")) {
			f->seed = strtoull(v, &end, 0);
			if (!*v || *end) {
				snprintf(err, errlen, "DPVERBS_FAULT: seed: not an integer (got %s)", v);
				return -1;
			}
			continue;
		}
		double d = strtod(v, &end);
		if (!*v || *end || d < 0 || d > 1) {
			snprintf(err, errlen, "DPVERBS_FAULT: %s: must be a number between 0 and 1 (got %s)", tok, v);
			return -1;
		}
		if (!strcmp(tok, "drop"))
			f->drop = d;
		else if (!strcmp(tok, "duplicate"))
			f->duplicate = d;
		else if (!strcmp(tok, "reorder"))
			f->reorder = d;
		else if (!strcmp(tok, "corrupt"))
			f->corrupt = d;
		else {
			snprintf(err, errlen, "DPVERBS_FAULT: %s: unknown field (drop, duplicate, reorder, corrupt, seed)",
				 tok);
			return -1;
		}
	}
	return 0;
}

void dpv_fault_init(const struct dpv_conf_fault *f)
{
	g_f = *f;
	g_state = f->seed;
	dpv_fault_on = f->drop > 0 || f->duplicate > 0 || f->reorder > 0 || f->corrupt > 0;
}

const struct dpv_fault_stats *dpv_fault_stats(void) { return &g_stats; }

/* one held-back frame per context for reordering */
static struct rte_mbuf *g_held[DPV_MAX_PORTS][DPV_MAX_QUEUES];

static bool is_roce(struct rte_mbuf *m)
{
	const uint8_t *f = rte_pktmbuf_mtod(m, const uint8_t *);
	uint16_t et = (uint16_t)(f[12] << 8 | f[13]);
	return et == 0x0800 || et == 0x86dd;
}

static bool apply(struct dpv_qctx *qc, struct rte_mbuf **mp, bool tx, struct rte_mbuf **dupp)
{
	struct rte_mbuf *m = *mp;
	double d, u, r, c;
	if (!dpv_fault_on || !is_roce(m))
		return false;
	rte_spinlock_lock(&g_lock);
	d = next_unit();
	u = next_unit();
	r = next_unit();
	c = next_unit();
	uint64_t bit = next_u64();
	rte_spinlock_unlock(&g_lock);
	if (tx && d < g_f.drop) {
		atomic_fetch_add(&g_stats.dropped, 1);
		DPV_STAT_ADD(qc->port, drop[DPV_DROP_FAULT], 1);
		rte_pktmbuf_free(m);
		return true;
	}
	if (tx && c < g_f.corrupt) {
		uint32_t len = rte_pktmbuf_data_len(m);
		/* flip one bit past the Ethernet header: IP, UDP, BTH, payload or ICRC */
		if (len > 14) {
			uint32_t off = 14 + (uint32_t)(bit % ((len - 14) * 8ULL)) / 8;
			rte_pktmbuf_mtod(m, uint8_t *)[off] ^= (uint8_t)(1u << (bit & 7));
			atomic_fetch_add(&g_stats.corrupted, 1);
		}
	}
	if (u < g_f.duplicate && tx && dupp) {
		*dupp = rte_pktmbuf_copy(m, m->pool, 0, UINT32_MAX);
		if (*dupp)
			atomic_fetch_add(&g_stats.duplicated, 1);
	}
	if (r < g_f.reorder && !tx) {
		struct rte_mbuf **h = &g_held[qc->port->index][qc->qid];
		struct rte_mbuf *prev = *h;
		*h = m;
		atomic_fetch_add(&g_stats.reordered, 1);
		if (!prev)
			return true;
		*mp = prev; /* deliver the older one now, the new one later */
	}
	return false;
}

bool dpv_fault_tx_apply(struct dpv_qctx *qc, struct rte_mbuf **m, struct rte_mbuf **dup)
{
	return apply(qc, m, true, dup);
}
bool dpv_fault_rx_apply(struct dpv_qctx *qc, struct rte_mbuf **m) { return apply(qc, m, false, NULL); }

struct rte_mbuf *dpv_fault_take_held(struct dpv_qctx *qc)
{
	struct rte_mbuf **h = &g_held[qc->port->index][qc->qid];
	struct rte_mbuf *m = *h;
	*h = NULL;
	return m;
}
