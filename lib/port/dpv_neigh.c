/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Neighbour resolution done by the stack itself (a DPDK port has no kernel
 * behind it): ARP (RFC 826) for IPv4-mapped GIDs, IPv6 neighbour discovery
 * (RFC 4861) for IPv6 GIDs. Answers requests for the port's addresses, asks
 * for unknown neighbours and holds frames until the answer arrives.
 *
 * A port beside the kernel (an "af_xdp" port, or one with "kernel_iface")
 * leaves ARP/ND to the kernel, which owns the addresses: the table below
 * is then filled from the kernel's (dpv_kif_neigh_ask, and its
 * notifications through dpv_neigh_kernel_learn), and nothing is answered
 * or asked on the wire by dpverbs itself, so that every request gets one
 * answer.
 */
#include <errno.h>
#include <string.h>
#include <arpa/inet.h>

#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_ip.h>

#include "dpv_port.h"

#define ETH_P_ARP 0x0806
#define ETH_P_IPV4 0x0800
#define ETH_P_IPV6 0x86dd
#define ICMP6_NS 135
#define ICMP6_NA 136
#define NEIGH_RETRY_MS 100
#define NEIGH_MAX_TRIES 30

static const uint8_t bcast[6] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};

static void put16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)(v >> 8); p[1] = (uint8_t)v; }
static uint16_t get16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }

static struct rte_mbuf *new_frame(struct dpv_port *p, uint32_t len)
{
	struct rte_mbuf *m = dpv_port_alloc_mbuf(p);
	if (!m)
		return NULL;
	if (!rte_pktmbuf_append(m, (uint16_t)len)) {
		rte_pktmbuf_free(m);
		return NULL;
	}
	memset(rte_pktmbuf_mtod(m, uint8_t *), 0, len);
	return m;
}

/* ---- ARP ---- */

static void arp_send(struct dpv_qctx *qc, uint16_t op, const uint8_t *dmac, const uint8_t *tha,
		     const uint8_t tpa[4])
{
	struct dpv_port *p = qc->port;
	struct rte_mbuf *m = new_frame(p, 60);
	if (!m) {
		DPV_STAT_ADD(p, drop[DPV_DROP_NOMEM], 1);
		return;
	}
	uint8_t *f = rte_pktmbuf_mtod(m, uint8_t *);
	memcpy(f, dmac, 6);
	memcpy(f + 6, p->mac, 6);
	put16(f + 12, ETH_P_ARP);
	uint8_t *a = f + 14;
	put16(a, 1);          /* Ethernet */
	put16(a + 2, ETH_P_IPV4);
	a[4] = 6;
	a[5] = 4;
	put16(a + 6, op);
	memcpy(a + 8, p->mac, 6);
	memcpy(a + 14, &p->ipv4, 4);
	memcpy(a + 18, tha, 6);
	memcpy(a + 24, tpa, 4);
	DPV_STAT_ADD(p, arp_tx, 1);
	dpv_port_tx_raw(qc, m);
}

/* ---- IPv6 ND ---- */

static uint16_t icmp6_cksum(const uint8_t *ip6, const uint8_t *icmp, uint32_t len)
{
	uint32_t sum = 0;
	for (int i = 8; i < 40; i += 2) /* source and destination address */
		sum += get16(ip6 + i);
	sum += len >> 16;
	sum += len & 0xffff;
	sum += 58;
	for (uint32_t i = 0; i + 1 < len; i += 2)
		sum += get16(icmp + i);
	if (len & 1)
		sum += (uint32_t)icmp[len - 1] << 8;
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

static void port_src_v6(const struct dpv_port *p, const uint8_t *target, uint8_t src[16])
{
	/* same-scope source: link-local for fe80::/10 targets, else the first
	 * configured global address */
	struct dpv_gid_entry g;
	if (!(target[0] == 0xfe && (target[1] & 0xc0) == 0x80))
		for (unsigned int i = 2; i < DPV_GID_TABLE_LEN; i++)
			if (dpv_port_gid_get(p, i, &g) && g.valid && g.ip_ver == 6) {
				memcpy(src, g.gid, 16);
				return;
			}
	dpv_port_gid_get(p, 0, &g);
	memcpy(src, g.gid, 16);
}

static void nd_send(struct dpv_qctx *qc, uint8_t type, const uint8_t *dmac, const uint8_t *dip,
		    const uint8_t *target, const uint8_t *src_ip)
{
	struct dpv_port *p = qc->port;
	uint32_t icmp_len = 24 + 8; /* header + target + link-layer option */
	struct rte_mbuf *m = new_frame(p, 14 + 40 + icmp_len);
	if (!m) {
		DPV_STAT_ADD(p, drop[DPV_DROP_NOMEM], 1);
		return;
	}
	uint8_t *f = rte_pktmbuf_mtod(m, uint8_t *);
	memcpy(f, dmac, 6);
	memcpy(f + 6, p->mac, 6);
	put16(f + 12, ETH_P_IPV6);
	uint8_t *ip = f + 14;
	ip[0] = 0x60;
	put16(ip + 4, (uint16_t)icmp_len);
	ip[6] = 58;
	ip[7] = 255; /* RFC 4861 7.1.1: hop limit 255 */
	memcpy(ip + 8, src_ip, 16);
	memcpy(ip + 24, dip, 16);
	uint8_t *ic = ip + 40;
	ic[0] = type;
	if (type == ICMP6_NA)
		ic[4] = 0x60; /* solicited + override */
	memcpy(ic + 8, target, 16);
	ic[24] = type == ICMP6_NS ? 1 : 2; /* source / target link-layer address */
	ic[25] = 1;
	memcpy(ic + 26, p->mac, 6);
	put16(ic + 2, icmp6_cksum(ip, ic, icmp_len));
	DPV_STAT_ADD(p, nd_tx, 1);
	dpv_port_tx_raw(qc, m);
}

static void neigh_learn(struct dpv_qctx *qc, const uint8_t ip[16], const uint8_t mac[6], bool create);

static void send_request(struct dpv_qctx *qc, const uint8_t ip[16])
{
	if (qc->port->kif.kernel_neigh) {
		uint8_t mac[6];
		if (dpv_kif_neigh_ask(qc->port, ip, mac) == 1)
			neigh_learn(qc, ip, mac, false);
		return;
	}
	if (dpv_gid_is_v4mapped(ip)) {
		static const uint8_t zero[6];
		arp_send(qc, 1, bcast, zero, ip + 12);
	} else {
		/* solicited-node multicast ff02::1:ffXX:XXXX */
		uint8_t dip[16] = {0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0xff, ip[13], ip[14], ip[15]};
		uint8_t dmac[6] = {0x33, 0x33, 0xff, ip[13], ip[14], ip[15]};
		uint8_t src[16];
		port_src_v6(qc->port, ip, src);
		nd_send(qc, ICMP6_NS, dmac, dip, ip, src);
	}
}

/* ---- table ---- */

/* Must hold neigh_lock. */
static struct dpv_neigh *neigh_find(struct dpv_port *p, const uint8_t ip[16])
{
	for (unsigned int i = 0; i < DPV_NEIGH_MAX; i++)
		if (p->neigh[i].state != DPV_NEIGH_FREE && !memcmp(p->neigh[i].ip, ip, 16))
			return &p->neigh[i];
	return NULL;
}

/* Must hold neigh_lock. */
static struct dpv_neigh *neigh_alloc(struct dpv_port *p, const uint8_t ip[16])
{
	for (unsigned int i = 0; i < DPV_NEIGH_MAX; i++)
		if (p->neigh[i].state == DPV_NEIGH_FREE) {
			struct dpv_neigh *n = &p->neigh[i];
			memset(n, 0, sizeof(*n));
			memcpy(n->ip, ip, 16);
			return n;
		}
	return NULL;
}

static void neigh_learn(struct dpv_qctx *qc, const uint8_t ip[16], const uint8_t mac[6], bool create)
{
	struct dpv_port *p = qc->port;
	struct rte_mbuf *out[DPV_NEIGH_PENDING_MAX];
	unsigned int n_out = 0;

	rte_spinlock_lock(&p->neigh_lock);
	struct dpv_neigh *n = neigh_find(p, ip);
	if (!n && create)
		n = neigh_alloc(p, ip);
	if (n) {
		memcpy(n->mac, mac, 6);
		if (n->state == DPV_NEIGH_INCOMPLETE)
			atomic_fetch_sub(&p->neigh_incomplete, 1);
		n->state = DPV_NEIGH_REACHABLE;
		memcpy(out, n->pending, n->n_pending * sizeof(out[0]));
		n_out = n->n_pending;
		n->n_pending = 0;
	}
	rte_spinlock_unlock(&p->neigh_lock);
	for (unsigned int i = 0; i < n_out; i++) {
		memcpy(rte_pktmbuf_mtod(out[i], uint8_t *), mac, 6);
		dpv_port_tx_raw(qc, out[i]);
	}
}

void dpv_neigh_kernel_learn(struct dpv_qctx *qc, const uint8_t ip[16], const uint8_t mac[6])
{
	neigh_learn(qc, ip, mac, false);
}

int dpv_neigh_resolve_or_queue(struct dpv_qctx *qc, const uint8_t ip[16], struct rte_mbuf *m,
			       uint8_t mac_out[6])
{
	struct dpv_port *p = qc->port;
	bool ask = false;
	int ret;

	rte_spinlock_lock(&p->neigh_lock);
	struct dpv_neigh *n = neigh_find(p, ip);
	if (n && n->state == DPV_NEIGH_REACHABLE) {
		memcpy(mac_out, n->mac, 6);
		rte_spinlock_unlock(&p->neigh_lock);
		return 1;
	}
	if (!n) {
		n = neigh_alloc(p, ip);
		if (n) {
			n->state = DPV_NEIGH_INCOMPLETE;
			atomic_fetch_add(&p->neigh_incomplete, 1);
			n->next_tsc = rte_get_tsc_cycles() + rte_get_tsc_hz() / 1000 * NEIGH_RETRY_MS;
			n->tries = 1;
			ask = true;
		}
	}
	if (n && n->n_pending < DPV_NEIGH_PENDING_MAX) {
		n->pending[n->n_pending++] = m;
		ret = 0;
	} else {
		DPV_STAT_ADD(p, drop[DPV_DROP_NEIGH], 1);
		rte_pktmbuf_free(m);
		ret = -EHOSTUNREACH;
	}
	rte_spinlock_unlock(&p->neigh_lock);
	if (ask)
		send_request(qc, ip);
	return ret;
}

/* Is ip's MAC known (or ip local)? Starts resolving it if not. */
bool dpv_neigh_ready(struct dpv_qctx *qc, const uint8_t ip[16])
{
	struct dpv_port *p = qc->port;
	struct dpv_runtime *rt = dpv_runtime_peek();
	if (rt && rt->conf.sw_loopback && dpv_port_find_local_gid(ip))
		return true;
	rte_spinlock_lock(&p->neigh_lock);
	struct dpv_neigh *n = neigh_find(p, ip);
	bool ok = n && n->state == DPV_NEIGH_REACHABLE;
	rte_spinlock_unlock(&p->neigh_lock);
	if (!ok && !n)
		dpv_neigh_prefetch(qc, ip);
	return ok;
}

/* For a caller that must know before it sends (rdma_resolve_addr through
 * dpv_query_neigh): 0 with mac set (a local address carried by software
 * loopback: that port's MAC), -EAGAIN while ip is being resolved (asked
 * now if nobody was; a neighbour that never answers stays -EAGAIN: the
 * caller keeps its own deadline). */
int dpv_neigh_lookup(struct dpv_qctx *qc, const uint8_t ip[16], uint8_t mac[6])
{
	struct dpv_port *p = qc->port;
	struct dpv_runtime *rt = dpv_runtime_peek();
	struct dpv_port *lp = rt && rt->conf.sw_loopback ? dpv_port_find_local_gid(ip) : NULL;
	if (lp) {
		memcpy(mac, lp->mac, 6);
		return 0;
	}
	rte_spinlock_lock(&p->neigh_lock);
	struct dpv_neigh *n = neigh_find(p, ip);
	bool ok = n && n->state == DPV_NEIGH_REACHABLE;
	if (ok)
		memcpy(mac, n->mac, 6);
	rte_spinlock_unlock(&p->neigh_lock);
	if (ok)
		return 0;
	if (!n)
		dpv_neigh_prefetch(qc, ip);
	return -EAGAIN;
}

/* Start resolving ip now (an address handle or a connected QP's path was
 * set up), so that the first message does not wait in the pending queue. */
void dpv_neigh_prefetch(struct dpv_qctx *qc, const uint8_t ip[16])
{
	struct dpv_port *p = qc->port;
	bool ask = false;
	struct dpv_runtime *rt = dpv_runtime_peek();
	if (rt && rt->conf.sw_loopback && dpv_port_find_local_gid(ip))
		return; /* software loopback */
	if (dpv_gid_is_mcast(ip))
		return; /* a group: its MAC comes from its address, no ARP/ND */
	rte_spinlock_lock(&p->neigh_lock);
	if (!neigh_find(p, ip)) {
		struct dpv_neigh *n = neigh_alloc(p, ip);
		if (n) {
			n->state = DPV_NEIGH_INCOMPLETE;
			n->next_tsc = rte_get_tsc_cycles() + rte_get_tsc_hz() / 1000 * NEIGH_RETRY_MS;
			n->tries = 1;
			atomic_fetch_add(&p->neigh_incomplete, 1);
			ask = true;
		}
	}
	rte_spinlock_unlock(&p->neigh_lock);
	if (ask)
		send_request(qc, ip);
}

void dpv_neigh_timer(struct dpv_qctx *qc, uint64_t now)
{
	struct dpv_port *p = qc->port;
	uint8_t ask[8][16];
	unsigned int n_ask = 0;

	if (qc->qid != 0 || !atomic_load_explicit(&p->neigh_incomplete, memory_order_relaxed) ||
	    now < p->neigh_next_tsc)
		return;
	p->neigh_next_tsc = now + rte_get_tsc_hz() / 1000; /* every ms at most */
	rte_spinlock_lock(&p->neigh_lock);
	for (unsigned int i = 0; i < DPV_NEIGH_MAX; i++) {
		struct dpv_neigh *n = &p->neigh[i];
		if (n->state != DPV_NEIGH_INCOMPLETE || now < n->next_tsc)
			continue;
		if (n->tries >= NEIGH_MAX_TRIES) {
			for (unsigned int k = 0; k < n->n_pending; k++)
				rte_pktmbuf_free(n->pending[k]);
			DPV_STAT_ADD(p, drop[DPV_DROP_NEIGH], n->n_pending);
			n->n_pending = 0;
			n->state = DPV_NEIGH_FREE;
			atomic_fetch_sub(&p->neigh_incomplete, 1);
			continue;
		}
		n->tries++;
		n->next_tsc = now + rte_get_tsc_hz() / 1000 * NEIGH_RETRY_MS;
		if (n_ask < 8)
			memcpy(ask[n_ask++], n->ip, 16);
	}
	rte_spinlock_unlock(&p->neigh_lock);
	for (unsigned int i = 0; i < n_ask; i++)
		send_request(qc, ask[i]);
}

void dpv_neigh_link_up(struct dpv_port *p)
{
	rte_spinlock_lock(&p->neigh_lock);
	for (unsigned int i = 0; i < DPV_NEIGH_MAX; i++)
		if (p->neigh[i].state == DPV_NEIGH_INCOMPLETE) {
			p->neigh[i].tries = 1; /* what was asked while down never left */
			p->neigh[i].next_tsc = 0;
		}
	p->neigh_next_tsc = 0;
	rte_spinlock_unlock(&p->neigh_lock);
}

static bool is_our_v6(const struct dpv_port *p, const uint8_t *ip)
{
	return !dpv_gid_is_v4mapped(ip) && dpv_port_gid_find(p, ip) >= 0;
}

/* Returns 1 if the frame was ARP/ND (consumed), 0 otherwise. */
int dpv_neigh_rx(struct dpv_qctx *qc, struct rte_mbuf *m)
{
	struct dpv_port *p = qc->port;
	const uint8_t *f = rte_pktmbuf_mtod(m, const uint8_t *);
	uint32_t len = rte_pktmbuf_data_len(m);
	if (len < 14 || p->kif.kernel_neigh)
		return 0; /* the kernel's (dpv_kif.c) */
	uint16_t et = get16(f + 12);

	if (et == ETH_P_ARP) {
		DPV_STAT_ADD(p, arp_rx, 1);
		if (len < 14 + 28 || get16(f + 14) != 1 || get16(f + 16) != ETH_P_IPV4 || f[18] != 6 ||
		    f[19] != 4) {
			DPV_STAT_ADD(p, drop[DPV_DROP_SHORT], 1);
			rte_pktmbuf_free(m);
			return 1;
		}
		const uint8_t *a = f + 14;
		uint16_t op = get16(a + 6);
		uint8_t sha[6], spa[4], tpa[4], ip[16] = {0};
		memcpy(sha, a + 8, 6);
		memcpy(spa, a + 14, 4);
		memcpy(tpa, a + 24, 4);
		ip[10] = ip[11] = 0xff;
		memcpy(ip + 12, spa, 4);
		bool for_us = p->ipv4.s_addr && !memcmp(tpa, &p->ipv4, 4);
		rte_pktmbuf_free(m);
		/* RFC 826: merge the sender if known, add it if the request is for us */
		neigh_learn(qc, ip, sha, for_us);
		if (for_us && op == 1)
			arp_send(qc, 2, sha, sha, spa);
		return 1;
	}
	if (et == ETH_P_IPV6 && len >= 14 + 40 + 24 && f[14 + 6] == 58) {
		const uint8_t *ip6 = f + 14;
		const uint8_t *ic = ip6 + 40;
		uint8_t type = ic[0];
		if (type != ICMP6_NS && type != ICMP6_NA)
			return 0;
		DPV_STAT_ADD(p, nd_rx, 1);
		uint32_t plen = get16(ip6 + 4);
		if (ip6[7] != 255 || plen < 24 || 14 + 40 + plen > len ||
		    icmp6_cksum(ip6, ic, plen) != 0) {
			DPV_STAT_ADD(p, drop[DPV_DROP_BAD_IP], 1);
			rte_pktmbuf_free(m);
			return 1;
		}
		uint8_t target[16], src[16], lladdr[6];
		bool have_ll = false;
		memcpy(target, ic + 8, 16);
		memcpy(src, ip6 + 8, 16);
		for (uint32_t o = 24; o + 8 <= plen;) {
			uint32_t olen = ic[o + 1] * 8u;
			if (!olen)
				break;
			if ((ic[o] == 1 || ic[o] == 2) && olen >= 8) {
				memcpy(lladdr, ic + o + 2, 6);
				have_ll = true;
			}
			o += olen;
		}
		rte_pktmbuf_free(m);
		if (type == ICMP6_NS) {
			if (!is_our_v6(p, target))
				return 1;
			static const uint8_t unspec[16];
			if (have_ll && memcmp(src, unspec, 16))
				neigh_learn(qc, src, lladdr, true);
			if (have_ll)
				nd_send(qc, ICMP6_NA, lladdr, src, target, target);
		} else if (have_ll) {
			neigh_learn(qc, target, lladdr, false);
		}
		return 1;
	}
	return 0;
}
