/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Raw Ethernet steering: the software classifier of the rules that
 * ibv_create_flow puts on a port for its raw packet QPs. It runs in the
 * receive path before anything else looks at a frame (dpv_rx.c), only on a
 * port that has rules, and decides, in this order:
 *   1. SNIFFER rules get a copy of every frame;
 *   2. a frame that is not a RoCEv2 candidate (UDP to 4791 belongs to the
 *      RoCE transport, as on a ConnectX) goes to the NORMAL rules of the
 *      highest priority (lowest value) that has a match: every matching rule
 *      of that priority gets it (DROP: nobody), and it goes no further
 *      unless they all say DONT_TRAP (then to the next priority's matches,
 *      and on);
 *   3. a frame nobody else takes (not ARP or IPv6 neighbour discovery, not
 *      for the kernel interface of an exception path) goes to MC_DEFAULT
 *      (multicast destination) or ALL_DEFAULT rules.
 * What is left goes on as before: RoCEv2, ARP/ND, the kernel interface.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dpv_engine.h"

static dpv_raw_rx_fn g_raw_fn;
uint64_t dpv_lo_raw_flag;

void dpv_port_set_raw_handler(dpv_raw_rx_fn fn) { g_raw_fn = fn; }

static int type_rank(uint8_t t)
{
	return t == DPV_RAW_SNIFFER ? 0 : t == DPV_RAW_NORMAL ? 1 : t == DPV_RAW_MC_DEFAULT ? 2 : 3;
}

static int rule_cmp(const void *a, const void *b)
{
	const struct dpv_raw_rule *x = a, *y = b;
	int d = type_rank(x->type) - type_rank(y->type);
	if (d)
		return d;
	if (x->priority != y->priority)
		return x->priority < y->priority ? -1 : 1;
	return x->handle < y->handle ? -1 : x->handle > y->handle;
}

/* A new table of n rules (sorted, counted) replacing the port's. */
static void tab_publish(struct dpv_port *p, struct dpv_raw_tab *t, struct dpv_raw_tab **old)
{
	if (t) {
		qsort(t->r, t->n, sizeof(t->r[0]), rule_cmp);
		t->n_sniff = t->n_normal = 0;
		for (unsigned int i = 0; i < t->n; i++) {
			t->n_sniff += t->r[i].type == DPV_RAW_SNIFFER;
			t->n_normal += t->r[i].type == DPV_RAW_NORMAL;
		}
	}
	*old = atomic_exchange_explicit(&p->raw, t, memory_order_acq_rel);
}

int dpv_raw_rule_add(struct dpv_port *p, struct dpv_raw_rule *r, struct dpv_raw_tab **old)
{
	*old = NULL;
	struct rte_flow *hw = NULL;
	int e = dpv_flow_raw_add(p, r, &hw); /* an isolated port: the PMD must bring the frames */
	if (e)
		return e;
	r->hw = (uintptr_t)hw;
	rte_spinlock_lock(&p->raw_lock);
	struct dpv_raw_tab *cur = atomic_load_explicit(&p->raw, memory_order_relaxed);
	unsigned int n = cur ? cur->n : 0;
	struct dpv_raw_tab *t = n < DPV_RAW_RULES_MAX ? malloc(sizeof(*t) + (n + 1) * sizeof(t->r[0])) : NULL;
	if (!t) {
		rte_spinlock_unlock(&p->raw_lock);
		dpv_flow_raw_del(p, hw);
		return -ENOMEM;
	}
	if (n)
		memcpy(t->r, cur->r, n * sizeof(t->r[0]));
	if (++p->raw_next == 0)
		p->raw_next = 1;
	r->handle = p->raw_next;
	t->r[n] = *r;
	t->n = n + 1;
	tab_publish(p, t, old);
	rte_spinlock_unlock(&p->raw_lock);
	return 0;
}

int dpv_raw_rule_del(struct dpv_port *p, uint32_t handle, uint32_t qpn, struct dpv_raw_tab **old)
{
	*old = NULL;
	rte_spinlock_lock(&p->raw_lock);
	struct dpv_raw_tab *cur = atomic_load_explicit(&p->raw, memory_order_relaxed);
	unsigned int n = cur ? cur->n : 0, keep = 0;
	for (unsigned int i = 0; i < n; i++)
		keep += !(cur->r[i].qpn == qpn && (!handle || cur->r[i].handle == handle));
	if (keep == n) {
		rte_spinlock_unlock(&p->raw_lock);
		return -ENOENT;
	}
	struct dpv_raw_tab *t = NULL;
	unsigned int n_hw = 0;
	uint64_t *hw = malloc((n - keep) * sizeof(*hw));
	for (unsigned int i = 0; hw && i < n; i++)
		if (cur->r[i].qpn == qpn && (!handle || cur->r[i].handle == handle) && cur->r[i].hw)
			hw[n_hw++] = cur->r[i].hw;
	if (keep) {
		t = malloc(sizeof(*t) + keep * sizeof(t->r[0]));
		if (!t) { /* disabled in place: it matches nothing and names no QP */
			for (unsigned int i = 0; i < n; i++)
				if (cur->r[i].qpn == qpn && (!handle || cur->r[i].handle == handle)) {
					memset(&cur->r[i].mask, 0, sizeof(cur->r[i].mask));
					cur->r[i].val.w[0] = ~0ull;
					cur->r[i].qpn = 0;
				}
			rte_spinlock_unlock(&p->raw_lock);
			free(hw); /* the PMD's rules stay: frames for no QP */
			return 0;
		}
		t->n = 0;
		for (unsigned int i = 0; i < n; i++)
			if (!(cur->r[i].qpn == qpn && (!handle || cur->r[i].handle == handle)))
				t->r[t->n++] = cur->r[i];
	}
	tab_publish(p, t, old);
	rte_spinlock_unlock(&p->raw_lock);
	for (unsigned int i = 0; i < n_hw; i++)
		dpv_flow_raw_del(p, (struct rte_flow *)(uintptr_t)hw[i]);
	free(hw);
	return 0;
}

void dpv_raw_port_teardown(struct dpv_port *p)
{
	const struct dpv_raw_tab *t = atomic_load(&p->raw);
	for (unsigned int i = 0; t && i < t->n; i++)
		dpv_flow_raw_del(p, (struct rte_flow *)(uintptr_t)t->r[i].hw);
}

static void deliver(struct dpv_qctx *qc, const uint8_t *frame, uint32_t len, const struct dpv_raw_rule *r)
{
	if (g_raw_fn && !(r->flags & DPV_RAW_F_DROP))
		g_raw_fn(qc, frame, len, r);
}

/* Step 2: the NORMAL rules, priority after priority: every matching rule
 * of a priority gets the frame; it goes no further unless they all said
 * DONT_TRAP (then the next priorities are looked at). True when taken. */
static bool normal(struct dpv_qctx *qc, const struct dpv_raw_tab *t, const uint8_t *frame, uint32_t len,
		   const union dpv_raw_keyw *key)
{
	unsigned int end = t->n_sniff + t->n_normal, i = t->n_sniff;
	while (i < end) {
		if (!dpv_raw_match(&t->r[i], key)) {
			i++;
			continue;
		}
		uint16_t prio = t->r[i].priority;
		bool trap = false;
		for (; i < end && t->r[i].priority == prio; i++) {
			if (!dpv_raw_match(&t->r[i], key))
				continue;
			trap |= !(t->r[i].flags & DPV_RAW_F_DONT_TRAP);
			deliver(qc, frame, len, &t->r[i]);
		}
		if (trap)
			return true;
	}
	return false;
}

/* ARP or an IPv6 neighbour solicitation/advertisement: the port's. */
static bool neigh_frame(const union dpv_raw_keyw *key, const uint8_t *frame, uint32_t len)
{
	if (key->k.ethertype == __builtin_bswap16(0x0806))
		return true;
	if (key->k.ip_ver != 6 || key->k.proto != 58)
		return false;
	uint32_t off = (key->k.vlan ? 18u : 14u) + 40u;
	return len > off && (frame[off] == 135 || frame[off] == 136);
}

bool dpv_raw_rx(struct dpv_qctx *qc, const struct dpv_raw_tab *t, const uint8_t *frame, uint32_t len, bool raw_lo)
{
	union dpv_raw_keyw key;
	dpv_raw_key_extract(frame, len, &key);
	for (unsigned int i = 0; i < t->n_sniff; i++)
		deliver(qc, frame, len, &t->r[i]);
	bool roce = dpv_raw_key_is_roce(&key);
	if (roce)
		return false;
	if (t->n_normal && normal(qc, t, frame, len, &key))
		return true;
	unsigned int d = t->n_sniff + t->n_normal;
	if (d == t->n || (qc->port->exc.on && !raw_lo) || neigh_frame(&key, frame, len))
		return false;
	bool mc = key.k.dmac[0] & 1;
	bool taken = false;
	for (unsigned int pass = mc ? 0 : 1; pass < 2 && !taken; pass++)
		for (unsigned int i = d; i < t->n; i++) {
			const struct dpv_raw_rule *r = &t->r[i];
			if (r->type != (pass ? DPV_RAW_ALL_DEFAULT : DPV_RAW_MC_DEFAULT))
				continue;
			deliver(qc, frame, len, r);
			taken = true;
		}
	return taken;
}

int dpv_port_xmit_raw(struct dpv_qctx *qc, struct rte_mbuf *m)
{
	struct dpv_port *p = qc->port;
	if (atomic_load_explicit(&p->raw, memory_order_acquire) && dpv_lo_raw_flag) {
		struct rte_mbuf *lo = rte_pktmbuf_copy(m, m->pool, 0, UINT32_MAX);
		if (!lo) {
			DPV_STAT_ADD(p, drop[DPV_DROP_NOMEM], 1);
		} else {
			lo->ol_flags |= dpv_lo_raw_flag;
			if (rte_ring_mp_enqueue(qc->lo_ring, lo) != 0) {
				DPV_STAT_ADD(p, drop[DPV_DROP_TX_FULL], 1);
				rte_pktmbuf_free(lo);
			}
		}
	}
	return dpv_port_tx_raw(qc, m);
}
