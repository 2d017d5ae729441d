/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The port's connection manager when no GSI QP is there (embedded mode: a
 * process none of whose rdma_cm ids uses the device, or that does not use
 * rdma_cm at all). A Linux host's kernel CM always answers on QP 1; so does
 * this: a MAD to QP 1 of a port without a GSI QP goes to lib/cmrt's
 * stateless answerer (dpv_cmrt_answer.h: the answers of the CM agent with
 * no listener and no id of its own, the only lib/cmrt header a driver may
 * include), which answers as Linux's ib_cm answers an unknown service or
 * comm ID (REQ: REJ "invalid service ID"; SIDR_REQ: SIDR_REP "unsupported";
 * DREQ: DREP; REP, RTU, REJ, MRA, DREP, SIDR_REP, LAP, APR: nothing). The
 * same agent answers in shared mode as dpverbsd's own endpoint
 * (apps/dpverbsd/dpvd_cm.c, on a lib/cmrt runtime). Any other MAD, a CM MAD
 * it does not answer, and a malformed one is dropped and counted
 * (drop "gsi_unanswered"); answers are limited to FB_RATE per second per
 * port with bursts of FB_BURST (the rest: drop "gsi_rate_limited"), so
 * that a flood of requests does not become a flood of answers. Answers
 * count as cnt "cm_fallback_reply". An application's GSI QP always takes
 * precedence: sw_rx comes here only when sw_gsi_lookup finds none.
 */
#include <string.h>

#include <rte_cycles.h>
#include <rte_mbuf.h>
#include <rte_spinlock.h>

#include "dpv_cmrt_answer.h"
#include "sw_loc.h"

#define FB_RATE 200u   /* answers per second and port */
#define FB_BURST 32u

struct fb_port {
	rte_spinlock_t lock;
	bool init;
	uint32_t tokens;
	uint64_t last_tsc;
	uint32_t psn;
};

static struct fb_port g_fb[DPV_MAX_PORTS];

/* One answer allowed now (token bucket, full at the first)? f->lock held. */
static bool fb_token(struct fb_port *f)
{
	uint64_t now = rte_get_tsc_cycles(), per = rte_get_tsc_hz() / FB_RATE;
	if (!f->init) {
		f->init = true;
		f->tokens = FB_BURST;
		f->last_tsc = now;
	}
	if (per && now - f->last_tsc >= per) {
		uint64_t n = (now - f->last_tsc) / per;
		f->tokens = n >= FB_BURST ? FB_BURST : (uint32_t)RTE_MIN((uint64_t)FB_BURST, f->tokens + n);
		f->last_tsc += n * per;
	}
	if (!f->tokens)
		return false;
	f->tokens--;
	return true;
}

/* The UD SEND from QP 1 back to the sender of pi. */
static void fb_reply(struct dpv_qctx *qc, const struct dpv_pkt_info *pi, const uint8_t *mad, uint32_t psn)
{
	struct dpv_port *p = qc->port;
	struct dpv_pkt_build b;
	memset(&b, 0, sizeof(b));
	memcpy(b.src_mac, p->mac, DPV_MAC_LEN);
	b.ip_ver = pi->ip_ver;
	memcpy(b.sgid, pi->dgid, DPV_GID_LEN);
	memcpy(b.dgid, pi->sgid, DPV_GID_LEN);
	b.hop_limit = DPV_DEFAULT_HOP_LIMIT;
	b.udp_sport = sw_udp_sport(DPV_QPN_GSI, pi->deth_sqpn, 0);
	b.opcode = DPV_TR_UD | DPV_OPC_SEND_ONLY;
	b.pkey = DPV_DEFAULT_PKEY;
	b.dqpn = pi->deth_sqpn;
	b.psn = psn & DPV_PSN_MASK;
	b.deth_qkey = DPV_CMRT_GSI_QKEY;
	b.deth_sqpn = DPV_QPN_GSI;
	if (sw_xmit_flat(qc, &b, mad, DPV_CMRT_MAD_SIZE) == 0)
		DPV_STAT_ADD(p, cnt[DPV_CNT_CM_FALLBACK_REPLY], 1);
}

void sw_gsi_fallback(struct dpv_qctx *qc, struct rte_mbuf *m, const struct dpv_pkt_info *pi)
{
	struct dpv_port *p = qc->port;
	const uint8_t *mad = rte_pktmbuf_mtod(m, const uint8_t *) + pi->payload_off;
	uint32_t len = pi->payload_len;
	if (p->index >= DPV_MAX_PORTS || pi->opcode != (DPV_TR_UD | DPV_OPC_SEND_ONLY) ||
	    pi->deth_qkey != DPV_CMRT_GSI_QKEY || (pi->pkey & 0x7fff) != (DPV_DEFAULT_PKEY & 0x7fff)) {
		DPV_STAT_ADD(p, drop[DPV_DROP_GSI_UNANSWERED], 1); /* what a GSI QP would not take */
		return;
	}
	struct fb_port *f = &g_fb[p->index];
	uint8_t out[DPV_CMRT_MAD_SIZE];
	bool answer = dpv_cmrt_answer(mad, len, out) == 1, limited = false;
	uint32_t psn = 0;
	if (answer) {
		rte_spinlock_lock(&f->lock);
		if (fb_token(f))
			psn = f->psn++;
		else
			answer = false, limited = true;
		rte_spinlock_unlock(&f->lock);
	}
	if (answer)
		fb_reply(qc, pi, out, psn);
	else
		DPV_STAT_ADD(p, drop[limited ? DPV_DROP_GSI_RATE_LIMITED : DPV_DROP_GSI_UNANSWERED], 1);
}
