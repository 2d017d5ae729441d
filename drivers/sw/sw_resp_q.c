/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The responder's output queue: every response (ACK/NAK, READ response,
 * ATOMIC acknowledge) of a QP leaves through a queue of SW_RESP_Q entries,
 * so responses go out in PSN order (IBA 9.7.5.1). A long READ is sent
 * SW_RESP_BURST packets per turn: one turn when it is queued, then one per
 * timer scan until it is out, so a 1 MiB READ does not flood the path and the
 * ACKs behind it. A full TX queue stops the pump without losing the response
 * (the timer scan pumps again). ACKs are coalesced: an ACK request is
 * remembered and one ACK per QP goes out at the end of the receive burst.
 */
#include <errno.h>
#include <string.h>

#include <rte_pause.h>

#include "sw_copy.h"
#include "sw_loc.h"
#include "sw_opcode.h"
#include "sw_qp_lock.h"
#include "sw_queue.h"

#define SW_RESP_FULL_SPINS 100000 /* waits for a full TX queue before dropping */

static int xmit_ack(struct sw_qp *qp, uint8_t syndrome, uint32_t psn, uint32_t msn)
{
	struct dpv_pkt_build b;
	sw_build_init(qp, &b, sw_qp_tr(qp) | DPV_OPC_ACK, psn);
	b.aeth_syndrome = syndrome;
	b.aeth_msn = msn;
	int r = sw_xmit(qp, &b, SW_PD_CHECKED, NULL, 0, 0, 0, NULL);
	if (r == 0 && (syndrome & DPV_AETH_TYPE_MASK) == DPV_AETH_ACK)
		sw_cnt(qp, DPV_CNT_ACK_SENT);
	return r;
}

/* One packet of a queued READ response (IBA 9.7.5.1.4: FIRST and ONLY carry
 * an AETH, every packet but the last is one MTU). 1 when the READ is out,
 * 0 when more packets remain, -ENOBUFS when the TX queue is full, -EACCES
 * when the MR of the rkey was deregistered since the READ was checked
 * (each packet resolves it again, sw_copy.h). */
static int xmit_read(struct sw_qp *qp, struct sw_resp_ent *e)
{
	uint32_t mtu = sw_qp_mtu(qp);
	uint32_t n = e->len ? (e->len + mtu - 1) / mtu : 1;
	uint32_t i = e->sent / mtu;
	uint32_t chunk = RTE_MIN(e->len - e->sent, mtu);
	uint8_t op = n == 1 ? DPV_OPC_READ_RESP_ONLY : i == 0 ? DPV_OPC_READ_RESP_FIRST
		     : i == n - 1 ? DPV_OPC_READ_RESP_LAST : DPV_OPC_READ_RESP_MIDDLE;
	struct dpv_pkt_build b;
	sw_build_init(qp, &b, sw_qp_tr(qp) | op, dpv_psn_add(e->psn, i));
	b.aeth_syndrome = DPV_AETH_CREDIT_INVALID;
	b.aeth_msn = e->msn;
	/* the data is a one-element SGE in the MR of the rkey (lkey == rkey) */
	struct dpv_sge s = {.addr = e->src, .length = e->len, .lkey = e->rkey};
	int r = sw_xmit(qp, &b, SW_PD_CHECKED, chunk ? &s : NULL, chunk ? 1 : 0, e->sent, chunk, NULL);
	if (r == -ENOBUFS || r == -EACCES)
		return r;
	e->sent += chunk; /* sent, or lost like on a wire: the requester asks again */
	return e->sent >= e->len;
}

static int xmit_atomic(struct sw_qp *qp, const struct sw_resp_ent *e)
{
	struct dpv_pkt_build b;
	sw_build_init(qp, &b, sw_qp_tr(qp) | DPV_OPC_ATOMIC_ACK, e->psn);
	b.aeth_syndrome = DPV_AETH_CREDIT_INVALID;
	b.aeth_msn = e->msn;
	b.atmack_orig = e->orig;
	return sw_xmit(qp, &b, SW_PD_CHECKED, NULL, 0, 0, 0, NULL);
}

/* The memory a READ was being answered from was deregistered: as rxe
 * (RESPST_ERR_RKEY_VIOLATION, IBA 9.7.5.2.4 class C), the responder NAKs
 * the READ with a remote access error instead of its remaining responses,
 * drops what was queued behind it (the requester fails at the NAK) and
 * the QP goes to ERR once the NAK is out of the queue. */
static void read_gone(struct sw_qp *qp, struct sw_resp_ent *e)
{
	struct sw_resp *r = &qp->resp;
	*e = (struct sw_resp_ent){.kind = RESP_ACK, .syndrome = DPV_AETH_NAK_REM_ACC, .psn = e->psn, .msn = e->msn};
	r->q_tail = r->q_head + 1;
	r->ack_pending = false;
	sw_cnt(qp, DPV_CNT_NAK_SENT);
}

bool sw_resp_pump(struct sw_qp *qp, unsigned int budget)
{
	struct sw_resp *r = &qp->resp;
	bool fatal = false;
	r->stalled = false;
	sw_mem_ra_begin(); /* a READ's responses read its memory in large pieces */
	while (budget && r->q_head != r->q_tail) {
		struct sw_resp_ent *e = &r->q[r->q_head % SW_RESP_Q];
		int done;
		if (e->kind == RESP_READ)
			done = xmit_read(qp, e);
		else
			done = e->kind == RESP_ATOMIC ? xmit_atomic(qp, e) : xmit_ack(qp, e->syndrome, e->psn, e->msn);
		if (done == -EACCES) {
			read_gone(qp, e); /* sent next, in its place */
			fatal = true;
			continue;
		}
		if (done == -ENOBUFS) {
			r->stalled = true; /* the context's next turn pumps again */
			sw_qp_kick(qp);
			break;
		}
		budget--;
		if (e->kind != RESP_READ || done)
			r->q_head++;
	}
	sw_mem_ra_end();
	if (fatal && sw_qp_state(qp) != IBV_QPS_ERR)
		sw_qp_to_error(qp); /* a NAK a full TX queue holds goes out later */
	return sw_resp_pending(qp);
}

/* Send everything queued; a TX queue that stays full for long loses the
 * oldest response (the requester recovers it like a loss). */
static void pump_all(struct sw_qp *qp)
{
	for (unsigned int spins = 0; sw_resp_pump(qp, UINT32_MAX); spins++) {
		if (spins < SW_RESP_FULL_SPINS) {
			rte_pause();
			continue;
		}
		DPV_STAT_ADD(qp->port, drop[DPV_DROP_TX_FULL], 1);
		qp->resp.q_head++;
		spins = 0;
	}
}

/* Queue a response behind the ones not sent yet and send what may go. */
static void enqueue(struct sw_qp *qp, const struct sw_resp_ent *e)
{
	struct sw_resp *r = &qp->resp;
	if (e->kind == RESP_ACK && (e->syndrome & DPV_AETH_TYPE_MASK) == DPV_AETH_ACK && r->q_head != r->q_tail) {
		/* coalesce with an ACK already waiting at the tail */
		struct sw_resp_ent *t = &r->q[(r->q_tail - 1) % SW_RESP_Q];
		if (t->kind == RESP_ACK && (t->syndrome & DPV_AETH_TYPE_MASK) == DPV_AETH_ACK &&
		    r->q_tail - 1 != r->q_head) {
			t->psn = e->psn;
			t->msn = e->msn;
			sw_cnt(qp, DPV_CNT_ACK_DEFERRED);
			return;
		}
	}
	if (r->q_tail - r->q_head >= SW_RESP_Q)
		pump_all(qp);
	r->q[r->q_tail++ % SW_RESP_Q] = *e;
	sw_resp_pump(qp, SW_RESP_BURST);
}

void sw_resp_ack(struct sw_qp *qp, uint8_t syndrome, uint32_t psn)
{
	struct sw_resp_ent e = {.kind = RESP_ACK, .syndrome = syndrome, .psn = psn, .msn = qp->resp.msn};
	enqueue(qp, &e);
}

void sw_resp_flush_ack(struct sw_qp *qp)
{
	if (!qp->resp.ack_pending)
		return;
	qp->resp.ack_pending = false;
	sw_resp_ack(qp, DPV_AETH_CREDIT_INVALID, qp->resp.ack_psn);
}

void sw_resp_queue_ack(struct sw_qp *qp, uint32_t psn)
{
	if (qp->resp.ack_pending)
		sw_cnt(qp, DPV_CNT_ACK_DEFERRED);
	qp->resp.ack_pending = true;
	qp->resp.ack_psn = psn;
}

void sw_resp_nak(struct sw_qp *qp, uint8_t syndrome, uint32_t psn)
{
	sw_resp_flush_ack(qp);
	sw_resp_ack(qp, syndrome, psn);
	if (syndrome == DPV_AETH_NAK_PSN_SEQ)
		sw_cnt(qp, DPV_CNT_SEQ_NAK_SENT);
	else if ((syndrome & DPV_AETH_TYPE_MASK) == DPV_AETH_RNR_NAK)
		sw_cnt(qp, DPV_CNT_RNR_NAK_SENT);
	else
		sw_cnt(qp, DPV_CNT_NAK_SENT);
	if ((syndrome & DPV_AETH_TYPE_MASK) == DPV_AETH_NAK && syndrome != DPV_AETH_NAK_PSN_SEQ)
		pump_all(qp); /* a fatal NAK and what is queued before it go out before ERR */
}

/* READ responses for (src, len) starting at psn; req_psn is the first PSN
 * of the READ this answers (a replay answers a duplicate that may ask for
 * the rest of it only). IBA 9.9.2.2: a duplicate READ restarts its
 * responses, so those of the same READ still queued are superseded (sending
 * them would only push back the ones the requester waits for). */
void sw_resp_read(struct sw_qp *qp, uint64_t src, uint32_t rkey, uint32_t len, uint32_t psn,
		  uint32_t req_psn)
{
	struct sw_resp *r = &qp->resp;
	uint32_t w = r->q_head;
	for (uint32_t i = r->q_head; i != r->q_tail; i++) {
		struct sw_resp_ent *e = &r->q[i % SW_RESP_Q];
		if (e->kind == RESP_READ && e->req_psn == req_psn)
			continue;
		if (w != i)
			r->q[w % SW_RESP_Q] = *e;
		w++;
	}
	r->q_tail = w;
	struct sw_resp_ent e = {.kind = RESP_READ, .psn = psn, .msn = r->msn, .src = src, .rkey = rkey, .len = len,
				.req_psn = req_psn};
	enqueue(qp, &e);
}

void sw_resp_atomic(struct sw_qp *qp, uint32_t psn, uint64_t orig)
{
	struct sw_resp_ent e = {.kind = RESP_ATOMIC, .psn = psn, .msn = qp->resp.msn, .orig = orig};
	enqueue(qp, &e);
}
