/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Receive: one frame an engine context took from its RX queue or its
 * loopback ring. Classified (raw packet QPs' steering rules, the kernel's
 * frames on a port with an exception path, ARP/ND to the neighbour table),
 * checked as far as no QP is needed (parse, ICRC unless looped back
 * trusted, destination MAC and GID), counted, and handed to the
 * transport's receive handler (dpv_port_set_rx_handler). A frame that fails
 * a check is dropped and counted by reason (struct dpv_port_stats drop[]).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_ethdev.h>

#include "dpv_engine.h"
#include "dpv_fault.h"

static dpv_roce_rx_fn g_rx_fn;

void dpv_port_set_rx_handler(dpv_roce_rx_fn fn) { g_rx_fn = fn; }

/* The drop counter of each parse error, indexed by -enum dpv_parse_err. */
static const enum dpv_drop_reason parse_drop[DPV_PARSE_NERR] = {
	[-DPV_PARSE_NOT_ROCE] = DPV_DROP_NOT_ROCE,	[-DPV_PARSE_SHORT] = DPV_DROP_SHORT,
	[-DPV_PARSE_BAD_IP] = DPV_DROP_BAD_IP,		[-DPV_PARSE_BAD_UDP] = DPV_DROP_BAD_UDP,
	[-DPV_PARSE_BAD_OPCODE] = DPV_DROP_BAD_OPCODE,	[-DPV_PARSE_BAD_TVER] = DPV_DROP_BAD_TVER,
	[-DPV_PARSE_BAD_PAD] = DPV_DROP_BAD_PAD,	[-DPV_PARSE_BAD_ICRC] = DPV_DROP_BAD_ICRC,
};

static bool frame_for_us(const struct dpv_port *p, const struct dpv_pkt_info *pi)
{
	if (dpv_gid_is_mcast(pi->dgid)) {
		uint8_t mac[6];
		dpv_gid_mcast_mac(pi->dgid, mac);
		return !memcmp(pi->dst_mac, mac, 6) || !memcmp(pi->dst_mac, p->mac, 6);
	}
	if (memcmp(pi->dst_mac, p->mac, 6) != 0)
		return false;
	return dpv_port_gid_find(p, pi->dgid) >= 0;
}

void dpv_port_rx_frame(struct dpv_qctx *qc, struct rte_mbuf *m, bool from_lo)
{
	struct dpv_port *p = qc->port;
	struct dpv_pkt_info pi;
	const uint8_t *frame = rte_pktmbuf_mtod(m, const uint8_t *);
	uint32_t len = rte_pktmbuf_data_len(m);

	DPV_STAT_ADD(p, rx_pkts, 1);
	DPV_STAT_ADD(p, rx_bytes, len);
	if (m->nb_segs != 1) {
		/* frames larger than one mbuf are not expected at our MTU */
		if (rte_pktmbuf_linearize(m) != 0) {
			DPV_STAT_ADD(p, drop[DPV_DROP_SHORT], 1);
			rte_pktmbuf_free(m);
			return;
		}
		frame = rte_pktmbuf_mtod(m, const uint8_t *);
		len = rte_pktmbuf_data_len(m);
	}
	/* raw packet QPs' steering rules first (dpv_rawflow.c); a port
	 * without any pays this one load */
	const struct dpv_raw_tab *rt = atomic_load_explicit(&p->raw, memory_order_acquire);
	if (unlikely(rt != NULL) || unlikely(from_lo && (m->ol_flags & dpv_lo_raw_flag))) {
		bool raw_lo = from_lo && (m->ol_flags & dpv_lo_raw_flag);
		if ((rt && dpv_raw_rx(qc, rt, frame, len, raw_lo)) || (raw_lo && !dpv_pkt_is_roce(frame, len))) {
			rte_pktmbuf_free(m); /* taken by a rule, or a raw QP's copy nobody wanted */
			return;
		}
	}
	/* a port with an exception path: what is not RoCEv2 is the kernel's */
	if (p->exc.on && !from_lo && !dpv_pkt_is_roce(frame, len)) {
		dpv_exc_to_kernel(p, m);
		return;
	}
	if (!from_lo && dpv_neigh_rx(qc, m))
		return;
	int r = from_lo && (m->ol_flags & dpv_lo_trusted_flag)
		? dpv_pkt_parse_trusted(frame, len, &pi) : dpv_pkt_parse_check(frame, len, &pi);
	if (r != 0) {
		DPV_STAT_ADD(p, drop[parse_drop[-r]], 1);
		rte_pktmbuf_free(m);
		return;
	}
	if (!frame_for_us(p, &pi)) {
		DPV_STAT_ADD(p, drop[DPV_DROP_NOT_FOR_US], 1);
		rte_pktmbuf_free(m);
		return;
	}
	DPV_STAT_ADD(p, rx_roce, 1);
	if (from_lo)
		DPV_STAT_ADD(p, rx_loopback, 1);
	if (p->n_qctx > 1 && unlikely(dpv_port_qctx_of(p, pi.dqpn) != qc))
		DPV_STAT_ADD(p, rx_other_ctx, 1); /* handled here, under the QP's lock */
	if (!g_rx_fn) {
		DPV_STAT_ADD(p, drop[DPV_DROP_NO_QP], 1);
		rte_pktmbuf_free(m);
		return;
	}
	g_rx_fn(qc, m, &pi);
}
