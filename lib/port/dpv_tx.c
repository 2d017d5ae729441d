/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Transmit: the frames an engine context sends. A thread's frames for one
 * context are staged and leave in bursts (dpv_port_tx_begin/_end/_push);
 * dpv_port_tx_frame / _raw put one frame on the port's TX queue (counted
 * tx_full when it stays full); dpv_port_xmit_local loops a frame back in
 * software to a local port's context (the one its BTH DestQP maps to),
 * dpv_port_xmit_remote resolves the neighbour first (or queues the frame
 * until it answers), dpv_port_xmit_mcast sends to a group and loops a copy
 * back to the port's own QPs.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_ethdev.h>

#include "dpv_engine.h"
#include "dpv_fault.h"

uint64_t dpv_lo_trusted_flag;

/* Frames held by this thread for one context (dpv_port_tx_begin). */
struct tx_stage {
	struct dpv_qctx *qc;
	unsigned int depth;
	uint16_t n;
	struct rte_mbuf *m[DPV_BURST];
	uint32_t len[DPV_BURST];
};
static __thread struct tx_stage t_stage;

/* One burst of what the stage holds, retried a little on a full queue;
 * what does not fit is dropped (counted tx_full). */
static void stage_flush(struct tx_stage *t)
{
	struct dpv_qctx *qc = t->qc;
	struct dpv_port *p = qc->port;
	uint16_t n = t->n, sent;
	uint64_t bytes = 0;

	if (!n)
		return;
	t->n = 0;
	rte_spinlock_lock(&qc->tx_lock);
	sent = rte_eth_tx_burst(p->eth_port, qc->qid, t->m, n);
	for (unsigned int tries = 0; sent < n && tries < DPV_TX_RETRIES; tries++) {
		rte_pause();
		sent += rte_eth_tx_burst(p->eth_port, qc->qid, t->m + sent, n - sent);
	}
	rte_spinlock_unlock(&qc->tx_lock);
	for (uint16_t i = 0; i < sent; i++)
		bytes += t->len[i];
	DPV_STAT_ADD(p, tx_pkts, sent);
	DPV_STAT_ADD(p, tx_bytes, bytes);
	if (sent < n) {
		DPV_STAT_ADD(p, drop[DPV_DROP_TX_FULL], n - sent);
		rte_pktmbuf_free_bulk(t->m + sent, n - sent);
	}
}

void dpv_port_tx_begin(struct dpv_qctx *qc)
{
	if (!qc->port->tx_batch)
		return;
	if (t_stage.depth++ == 0)
		t_stage.qc = qc;
}

void dpv_port_tx_end(struct dpv_qctx *qc)
{
	if (!qc->port->tx_batch || !t_stage.depth)
		return;
	if (--t_stage.depth == 0)
		stage_flush(&t_stage);
}

void dpv_port_tx_push(struct dpv_qctx *qc)
{
	if (t_stage.depth && t_stage.qc == qc)
		stage_flush(&t_stage);
}

static int tx_one(struct dpv_qctx *qc, struct rte_mbuf *m)
{
	struct dpv_port *p = qc->port;
	uint32_t len = rte_pktmbuf_pkt_len(m);
	uint16_t n;

	if (!atomic_load_explicit(&p->link_up, memory_order_relaxed)) {
		/* lost on the wire: a reliable transport retransmits and, if
		 * the link stays down, exhausts retry_cnt as on hardware */
		DPV_STAT_ADD(p, drop[DPV_DROP_LINK_DOWN], 1);
		rte_pktmbuf_free(m);
		return 0;
	}
	if (t_stage.depth && t_stage.qc == qc) {
		if (t_stage.n == DPV_BURST)
			stage_flush(&t_stage);
		t_stage.len[t_stage.n] = len;
		t_stage.m[t_stage.n++] = m;
		return 0;
	}
	rte_spinlock_lock(&qc->tx_lock);
	n = rte_eth_tx_burst(p->eth_port, qc->qid, &m, 1);
	/* a full TX ring drains quickly (af_packet hands frames to the kernel,
	 * memif to the peer): try a little before giving up; the engine then
	 * stalls the QP and retries after this context's next receive burst
	 * (the peer may be waiting for us to drain our side) */
	for (unsigned int tries = 0; n != 1 && tries < DPV_TX_RETRIES; tries++) {
		rte_pause();
		n = rte_eth_tx_burst(p->eth_port, qc->qid, &m, 1);
	}
	rte_spinlock_unlock(&qc->tx_lock);
	if (n != 1) {
		DPV_STAT_ADD(p, drop[DPV_DROP_TX_FULL], 1);
		rte_pktmbuf_free(m);
		return -ENOBUFS;
	}
	DPV_STAT_ADD(p, tx_pkts, 1);
	DPV_STAT_ADD(p, tx_bytes, len);
	return 0;
}

int dpv_port_tx_frame(struct dpv_qctx *qc, struct rte_mbuf *m)
{
	return tx_one(qc, m);
}

int dpv_port_tx_raw(struct dpv_qctx *qc, struct rte_mbuf *m)
{
	struct rte_mbuf *dup;
	if (dpv_fault_tx(qc, &m, &dup))
		return 0; /* dropped by fault injection: lost on the wire */
	int r = tx_one(qc, m);
	if (dup)
		tx_one(qc, dup);
	return r;
}

static int lo_enqueue(struct dpv_port *p, struct dpv_qctx *lq, struct rte_mbuf *m)
{
	if (rte_ring_mp_enqueue(lq->lo_ring, m) != 0) {
		DPV_STAT_ADD(p, drop[DPV_DROP_TX_FULL], 1);
		rte_pktmbuf_free(m);
		return -ENOBUFS;
	}
	DPV_STAT_ADD(p, tx_loopback, 1);
	return 0;
}

struct dpv_port *dpv_port_loopback_dst(const uint8_t dgid[16])
{
	struct dpv_runtime *rt = dpv_runtime_peek();
	return rt && rt->conf.sw_loopback ? dpv_port_find_local_gid(dgid) : NULL;
}

int dpv_port_xmit_local(struct dpv_qctx *qc, struct dpv_port *lp, struct rte_mbuf *m)
{
	struct dpv_port *p = qc->port;
	uint8_t *eth = rte_pktmbuf_mtod(m, uint8_t *);
	struct dpv_qctx *lq = &lp->qctx[0];
	struct rte_mbuf *dup;

	DPV_STAT_ADD(p, tx_roce, 1);
	if (lp->n_qctx > 1) {
		/* to the context of the destination QP, as a NIC that could
		 * steer by BTH DestQP would deliver it */
		uint32_t bth = DPV_ETH_HLEN + DPV_UDP_HLEN +
			       ((eth[DPV_ETH_HLEN] >> 4) == 4 ? DPV_IPV4_HLEN : DPV_IPV6_HLEN);
		lq = dpv_port_qctx_of(lp, __bth_qpn(eth + bth));
	}
	memcpy(eth, lp->mac, 6);
	if (dpv_fault_tx(qc, &m, &dup))
		return 0; /* dropped by fault injection */
	int r = lo_enqueue(p, lq, m);
	if (dup)
		lo_enqueue(p, lq, dup);
	return r;
}

int dpv_port_xmit_remote(struct dpv_qctx *qc, struct rte_mbuf *m, const uint8_t dgid[16])
{
	struct dpv_port *p = qc->port;
	uint8_t *eth = rte_pktmbuf_mtod(m, uint8_t *);

	DPV_STAT_ADD(p, tx_roce, 1);
	uint8_t mac[6];
	int r = dpv_neigh_resolve_or_queue(qc, dgid, m, mac);
	if (r < 0)
		return r;
	if (r == 0)
		return 0; /* queued until the neighbour answers */
	memcpy(eth, mac, 6);
	return dpv_port_tx_raw(qc, m);
}

/* A multicast frame goes on the wire to the group's Ethernet address, and
 * a copy to the port itself (as a NIC loops multicast back to its own QPs
 * attached to the group); the engine delivers it to every attached QP. */
int dpv_port_xmit_mcast(struct dpv_qctx *qc, struct rte_mbuf *m, const uint8_t dgid[16])
{
	struct dpv_port *p = qc->port;
	uint8_t *eth = rte_pktmbuf_mtod(m, uint8_t *);
	struct rte_mbuf *lo = rte_pktmbuf_copy(m, m->pool, 0, UINT32_MAX);
	if (lo)
		dpv_port_xmit_local(qc, p, lo);
	else
		DPV_STAT_ADD(p, drop[DPV_DROP_NOMEM], 1);
	DPV_STAT_ADD(p, tx_roce, 1);
	dpv_gid_mcast_mac(dgid, eth);
	return dpv_port_tx_raw(qc, m);
}
