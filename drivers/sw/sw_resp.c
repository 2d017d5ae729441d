/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Responder (RC, UC, XRC target): request packets -> PSN and sequence
 * checks, duplicate handling, placement of SEND and RDMA WRITE payloads,
 * READ responses, atomics, RDMA ATOMIC WRITE and FLUSH (annex A19), receive
 * completions, ACK/NAK (IBA 9.7.4, 9.7.5.1, 9.9.2, as rxe_resp.c). Each request runs through a state machine (enum
 * resp_state) whose transitions can be traced (log level 8 of pmd.dpv.sw).
 */
#include <errno.h>
#include <string.h>
#include <endian.h>

#include "sw_copy.h"
#include "sw_loc.h"
#include "sw_log.h"
#include "sw_qp_lock.h"

enum resp_state {
	RESPST_CHK_PSN,         /* expected, duplicate or out of sequence */
	RESPST_CHK_OP_SEQ,      /* FIRST/MIDDLE/LAST of one message in order */
	RESPST_CHK_LENGTH,      /* every packet but the last is one MTU */
	RESPST_CHK_XRC_SRQ,     /* XRC target: the XRCETH names an SRQ of its domain */
	RESPST_CHK_RESOURCE,    /* a receive WQE, or a READ/atomic resource */
	RESPST_EXEC_SEND,       /* scatter a SEND payload into the receive WQE */
	RESPST_CHK_RKEY,        /* RDMA WRITE: rkey, rights, bounds (first packet) */
	RESPST_EXEC_WRITE,      /* place an RDMA WRITE payload */
	RESPST_READ_REPLY,      /* execute a READ: queue its responses */
	RESPST_ATOMIC_REPLY,    /* execute an atomic: queue its acknowledge */
	RESPST_ATOMIC_WRITE,    /* execute an ATOMIC WRITE: queue its empty READ response */
	RESPST_FLUSH,           /* execute a FLUSH: queue its empty READ response */
	RESPST_COMPLETE,        /* receive completion */
	RESPST_ACKNOWLEDGE,     /* next PSN; coalesced ACK if asked */
	RESPST_DUPLICATE,       /* re-ACK, replay a READ, return a saved atomic */
	RESPST_ERR_PSN_SEQ,     /* PSN sequence error NAK (once per expected PSN) */
	RESPST_ERR_RNR,         /* no receive WQE: RNR NAK */
	RESPST_ERROR,           /* NAK, complete the WQE held, QP to ERR */
	RESPST_DONE,
};

static const char *const resp_state_name[] = {
	[RESPST_CHK_PSN] = "CHK_PSN", [RESPST_CHK_OP_SEQ] = "CHK_OP_SEQ", [RESPST_CHK_LENGTH] = "CHK_LENGTH",
	[RESPST_CHK_XRC_SRQ] = "CHK_XRC_SRQ", [RESPST_CHK_RESOURCE] = "CHK_RESOURCE",
	[RESPST_EXEC_SEND] = "EXEC_SEND", [RESPST_CHK_RKEY] = "CHK_RKEY", [RESPST_EXEC_WRITE] = "EXEC_WRITE",
	[RESPST_READ_REPLY] = "READ_REPLY", [RESPST_ATOMIC_REPLY] = "ATOMIC_REPLY",
	[RESPST_ATOMIC_WRITE] = "ATOMIC_WRITE", [RESPST_FLUSH] = "FLUSH",
	[RESPST_COMPLETE] = "COMPLETE", [RESPST_ACKNOWLEDGE] = "ACKNOWLEDGE", [RESPST_DUPLICATE] = "DUPLICATE",
	[RESPST_ERR_PSN_SEQ] = "ERR_PSN_SEQ", [RESPST_ERR_RNR] = "ERR_RNR", [RESPST_ERROR] = "ERROR",
	[RESPST_DONE] = "DONE",
};

enum { MSG_NONE = 0, MSG_SEND = 1, MSG_WRITE = 2 };

/* What the state machine carries from one state to the next. */
struct resp_ctx {
	struct dpv_pkt_info *pi;
	const uint8_t *pay;        /* payload */
	uint32_t plen;
	uint8_t op;                /* opcode without the transport bits */
	uint8_t kind;              /* MSG_SEND, MSG_WRITE or MSG_NONE (READ, atomic) */
	bool starts, ends;
	uint8_t nak;               /* RESPST_ERROR: NAK syndrome */
	enum ibv_wc_status status; /* RESPST_ERROR: status of the receive WQE held */
	enum ibv_wc_opcode wc_op;  /* RESPST_COMPLETE */
	uint32_t wc_len;
	bool acked;                /* RESPST_COMPLETE sent this packet's ACK already */
};

static enum resp_state fail(struct resp_ctx *x, uint8_t nak, enum ibv_wc_status st)
{
	x->nak = nak;
	x->status = st;
	return RESPST_ERROR;
}

void sw_resp_reset(struct sw_qp *qp)
{
	struct sw_resp *r = &qp->resp;
	r->psn = qp->attr.rq_psn;
	r->msn = 0;
	r->nak_sent = false;
	r->in_msg = MSG_NONE;
	r->uc_drop = false;
	r->n_res = qp->attr.max_dest_rd_atomic;
	r->rndv.phase = SW_RNDV_IDLE;
	r->rndv_qn = 0;
}

/* Where receive completions of this QP go: an XRC target's go to the CQ of
 * the XRC SRQ that took the message (IBA A14). */
static struct sw_cq *resp_cq(struct sw_qp *qp)
{
	if (qp->type == IBV_QPT_XRC_RECV)
		return qp->resp.xsrq ? qp->resp.xsrq->cq : NULL;
	if (qp->srq && qp->srq->tm)
		return qp->srq->cq; /* a tag matching SRQ's completions go to its CQ */
	return qp->rcq;
}

/* The protection domain of the responder's accesses: an XRC target has
 * none, the SRQ named by the request gives it (IBA A14.4.1). */
static uint32_t resp_pd(const struct sw_qp *qp)
{
	return qp->type == IBV_QPT_XRC_RECV ? (qp->resp.xsrq ? qp->resp.xsrq->pd : 0) : qp->pd;
}

/* Remote access check (IBA 10.6.3.2, 9.7.4.1.5): rkey, PD, access right of
 * the MR, or of the memory window the rkey names (sw_mw.c: its range, and
 * for type 2B this QP), and of the QP, bounds. true and *addr: the address
 * in the MR's own address space, what its SGEs name (0 is one: a
 * zero-based MR on device memory names its bytes from 0). */
static bool rkey_check(struct sw_qp *qp, uint32_t rkey, uint64_t va, uint64_t len, int access,
		       const struct sw_mr **mrp, uint64_t *addr)
{
	const struct sw_mr *mr = sw_mpt_lookup(rkey);
	uint32_t pd = resp_pd(qp);
	if (!mr || !pd || !(qp->attr.qp_access_flags & access))
		return false;
	if (mr->kind != SW_MPT_MR) {
		/* a window is never on device memory (ibv_reg_dm_mr gives no
		 * MW_BIND): its NULL is a refusal */
		uint8_t *a = sw_mw_resolve(mr, rkey, pd, qp->uid, va, len, access, mrp);
		*addr = (uint64_t)(uintptr_t)a;
		return a != NULL;
	}
	if (mr->pd != pd || (mr->access & access) != access)
		return false;
	if (va < mr->iova || va + len > mr->iova + mr->length || va + len < va)
		return false;
	*mrp = mr;
	/* in integers: the implicit ODP MR's addr is NULL, a DM MR's is 0 */
	*addr = (uint64_t)(uintptr_t)mr->addr + (va - mr->iova);
	return true;
}

/* x: the first packet of a SEND (NULL for a WRITE with immediate), whose
 * tag matching header decides on a TM SRQ of an RC QP. */
static bool take_rwqe(struct sw_qp *qp, const struct resp_ctx *x)
{
	struct sw_resp *r = &qp->resp;
	if (r->have_rwqe)
		return true;
	r->tm = (struct sw_tm_msg){0};
	if (x && qp->srq && qp->srq->tm && qp->type == IBV_QPT_RC) {
		if (!sw_tm_take(qp->srq, x->pay, x->plen, &r->rwqe, &r->tm))
			return false;
		sw_tm_rndv_check(qp);
	} else if (qp->type == IBV_QPT_XRC_RECV) {
		if (!r->xsrq || !sw_srq_pop(r->xsrq, &r->rwqe))
			return false;
	} else if (!sw_rq_pop(qp, &r->rwqe)) {
		return false;
	}
	r->have_rwqe = true;
	r->recv_off = 0;
	return true;
}

/* The requests that take a responder resource (packet opcode without the
 * transport bits). */
static bool is_rd_atomic(uint8_t op)
{
	return op == DPV_OPC_READ_REQUEST || op == DPV_OPC_CMP_SWAP || op == DPV_OPC_FETCH_ADD ||
	       op == DPV_OPC_ATOMIC_WRITE || op == DPV_OPC_FLUSH;
}

static enum resp_state chk_psn(struct sw_qp *qp, struct resp_ctx *x)
{
	struct sw_resp *r = &qp->resp;
	uint32_t psn = x->pi->psn;
	if (qp->type == IBV_QPT_UC) {
		/* IBA 9.8.4 (UC): no ACKs; a gap drops the rest of the message,
		 * the next FIRST/ONLY starts afresh at whatever PSN it carries */
		if (psn == r->psn && !r->uc_drop)
			return RESPST_CHK_OP_SEQ;
		if (r->in_msg == MSG_SEND && r->have_rwqe)
			r->recv_off = 0; /* keep the WQE for the next message */
		r->in_msg = MSG_NONE;
		if (x->starts) {
			r->uc_drop = false;
			return RESPST_CHK_OP_SEQ;
		}
		r->uc_drop = true;
		sw_cnt(qp, DPV_CNT_OOS_REQ);
		return RESPST_DONE;
	}
	int d = dpv_psn_cmp(psn, r->psn);
	if (d < 0)
		return RESPST_DUPLICATE;   /* IBA 9.7.4.1.2 */
	if (d > 0)
		return RESPST_ERR_PSN_SEQ; /* IBA 9.7.4.1.3 */
	return RESPST_CHK_OP_SEQ;
}

/* IBA 9.7.4.1.4: a FIRST must not arrive in the middle of a message
 * and each packet must be of the same kind as its message. */
static enum resp_state chk_op_seq(struct sw_qp *qp, struct resp_ctx *x)
{
	uint8_t in = qp->resp.in_msg;
	if ((in && (x->starts || x->kind != in)) || (!in && !x->starts && x->kind))
		return fail(x, DPV_AETH_NAK_INV_REQ, IBV_WC_REM_INV_REQ_ERR);
	return RESPST_CHK_LENGTH;
}

static enum resp_state chk_length(struct sw_qp *qp, struct resp_ctx *x)
{
	uint32_t mtu = sw_qp_mtu(qp);
	if (x->kind && ((!x->ends && x->plen != mtu) || x->plen > mtu))
		return fail(x, DPV_AETH_NAK_INV_REQ, IBV_WC_REM_INV_REQ_ERR);
	if ((x->pi->mask & DPV_HDR_RETH) && x->pi->reth_len > DPV_MAX_MSG_SZ)
		return fail(x, DPV_AETH_NAK_INV_REQ, IBV_WC_REM_INV_REQ_ERR);
	return qp->type == IBV_QPT_XRC_RECV ? RESPST_CHK_XRC_SRQ : RESPST_CHK_RESOURCE;
}

static enum resp_state chk_xrc_srq(struct sw_qp *qp, struct resp_ctx *x)
{
	if (!x->starts && x->kind)
		return RESPST_CHK_RESOURCE; /* the message's SRQ was checked on its first packet */
	struct sw_srq *ss = sw_srq_lookup(x->pi->xrc_srqn);
	if (!ss || !ss->xrcd || ss->xrcd != qp->xrcd) {
		qp->resp.xsrq = NULL;
		return fail(x, DPV_AETH_NAK_INV_REQ, IBV_WC_REM_INV_REQ_ERR);
	}
	qp->resp.xsrq = ss;
	return RESPST_CHK_RESOURCE;
}

static enum resp_state chk_resource(struct sw_qp *qp, struct resp_ctx *x)
{
	if (x->kind == MSG_SEND) {
		if (x->starts && !take_rwqe(qp, x))
			return RESPST_ERR_RNR;
		return RESPST_EXEC_SEND;
	}
	if (x->kind == MSG_WRITE) {
		if (x->ends && (x->pi->mask & DPV_HDR_IMMDT) && !take_rwqe(qp, NULL))
			return RESPST_ERR_RNR; /* WRITE with immediate consumes a receive WQE */
		return x->starts ? RESPST_CHK_RKEY : RESPST_EXEC_WRITE;
	}
	if (!is_rd_atomic(x->op))
		return fail(x, DPV_AETH_NAK_INV_REQ, IBV_WC_REM_INV_REQ_ERR);
	/* IBA 9.7.4.1.7: READ/atomic (and annex A19's ATOMIC WRITE and
	 * FLUSH) need responder resources; a QP given max_dest_rd_atomic 0
	 * has none */
	if (!qp->resp.n_res)
		return fail(x, DPV_AETH_NAK_INV_REQ, IBV_WC_REM_INV_REQ_ERR);
	switch (x->op) {
	case DPV_OPC_READ_REQUEST: return RESPST_READ_REPLY;
	case DPV_OPC_ATOMIC_WRITE: return RESPST_ATOMIC_WRITE;
	case DPV_OPC_FLUSH: return RESPST_FLUSH;
	default: return RESPST_ATOMIC_REPLY;
	}
}

static enum resp_state exec_send(struct sw_qp *qp, struct resp_ctx *x)
{
	struct sw_resp *r = &qp->resp;
	if (x->starts && r->tm.skip) {
		/* a tagged buffer receives what follows the tag matching header */
		x->pay += r->tm.skip;
		x->plen -= r->tm.skip;
	}
	if (r->tm.rndv)
		x->plen = 0; /* a rendezvous' data comes by the READ, not in the message */
	if (r->recv_off + x->plen > sw_sge_total(r->rwqe.sge, r->rwqe.num_sge))
		return fail(x, DPV_AETH_NAK_INV_REQ, IBV_WC_LOC_LEN_ERR);
	if (x->starts && sw_sge_check(r->rwqe.pd, r->rwqe.sge, r->rwqe.num_sge, IBV_ACCESS_LOCAL_WRITE))
		return fail(x, DPV_AETH_NAK_REM_OP, IBV_WC_LOC_PROT_ERR);
	if (sw_sge_copy_in(r->rwqe.pd, r->rwqe.sge, r->rwqe.num_sge, r->recv_off, x->pay, x->plen))
		return fail(x, DPV_AETH_NAK_REM_OP, IBV_WC_LOC_PROT_ERR); /* unmapped under its MR */
	r->recv_off += x->plen;
	r->in_msg = x->ends ? MSG_NONE : MSG_SEND;
	if (!x->ends)
		return RESPST_ACKNOWLEDGE;
	/* SEND with invalidate (IBA 9.4.1.1, 10.6.7.2.5): the rkey must name a
	 * type 2B window bound to this QP; otherwise the receive completes in
	 * error, the requester gets an invalid request NAK and both QPs go to
	 * ERR (as rxe's class J, which acknowledges the SEND though) */
	if ((x->pi->mask & DPV_HDR_IETH) && sw_mw_invalidate(resp_pd(qp), qp->uid, x->pi->ieth_rkey))
		return fail(x, DPV_AETH_NAK_INV_REQ, IBV_WC_REM_INV_REQ_ERR);
	x->wc_op = IBV_WC_RECV;
	x->wc_len = r->recv_off;
	return RESPST_COMPLETE;
}

static enum resp_state chk_rkey(struct sw_qp *qp, struct resp_ctx *x)
{
	struct sw_resp *r = &qp->resp;
	struct dpv_pkt_info *pi = x->pi;
	/* a zero-length WRITE needs no rkey (IBA 9.4.3) */
	const struct sw_mr *mr;
	uint64_t dst = 0;
	if (pi->reth_len && !rkey_check(qp, pi->reth_rkey, pi->reth_va, pi->reth_len, IBV_ACCESS_REMOTE_WRITE,
					&mr, &dst))
		return fail(x, DPV_AETH_NAK_REM_ACC, IBV_WC_REM_ACCESS_ERR);
	r->wr_addr = dst;
	r->wr_rkey = pi->reth_rkey;
	r->wr_left = pi->reth_len;
	r->wr_total = pi->reth_len;
	return RESPST_EXEC_WRITE;
}

static enum resp_state exec_write(struct sw_qp *qp, struct resp_ctx *x)
{
	struct sw_resp *r = &qp->resp;
	if (x->plen > r->wr_left || (x->ends && x->plen != r->wr_left))
		return fail(x, DPV_AETH_NAK_INV_REQ, IBV_WC_REM_INV_REQ_ERR);
	if (x->plen) {
		/* the placement is a one-element SGE in the MR of the rkey (lkey
		 * == rkey): memory of this process or, shared mode, another's */
		struct dpv_sge s = {.addr = r->wr_addr, .length = x->plen, .lkey = r->wr_rkey};
		if (sw_sge_copy_in(SW_PD_CHECKED, &s, 1, 0, x->pay, x->plen))
			return fail(x, DPV_AETH_NAK_REM_ACC, IBV_WC_REM_ACCESS_ERR); /* unmapped under its MR */
	}
	r->wr_addr += x->plen;
	r->wr_left -= x->plen;
	r->in_msg = x->ends ? MSG_NONE : MSG_WRITE;
	if (!x->ends || !(x->pi->mask & DPV_HDR_IMMDT))
		return RESPST_ACKNOWLEDGE;
	x->wc_op = IBV_WC_RECV_RDMA_WITH_IMM;
	x->wc_len = r->wr_total;
	return RESPST_COMPLETE;
}

static void save_res(struct sw_qp *qp, uint8_t op, uint32_t first, uint32_t last, uint64_t orig)
{
	struct sw_resp *r = &qp->resp;
	struct sw_rd_res *res = &r->res[r->res_next++ % r->n_res];
	*res = (struct sw_rd_res){.valid = true, .op = op, .first_psn = first, .last_psn = last, .orig = orig};
}

static enum resp_state read_reply(struct sw_qp *qp, struct resp_ctx *x)
{
	struct sw_resp *r = &qp->resp;
	struct dpv_pkt_info *pi = x->pi;
	uint32_t mtu = sw_qp_mtu(qp);
	const struct sw_mr *mr;
	uint64_t src = 0;
	if (pi->reth_len && !rkey_check(qp, pi->reth_rkey, pi->reth_va, pi->reth_len, IBV_ACCESS_REMOTE_READ,
					&mr, &src))
		return fail(x, DPV_AETH_NAK_REM_ACC, IBV_WC_REM_ACCESS_ERR);
	uint32_t n = pi->reth_len ? (pi->reth_len + mtu - 1) / mtu : 1;
	r->msn = dpv_psn_add(r->msn, 1);
	save_res(qp, x->op, pi->psn, dpv_psn_add(pi->psn, n - 1), 0);
	sw_resp_flush_ack(qp);
	sw_resp_read(qp, src, pi->reth_rkey, pi->reth_len, pi->psn, pi->psn);
	r->psn = dpv_psn_add(pi->psn, n); /* the responses take the READ's PSN range */
	r->nak_sent = false;
	return RESPST_DONE;
}

static enum resp_state atomic_reply(struct sw_qp *qp, struct resp_ctx *x)
{
	struct sw_resp *r = &qp->resp;
	struct dpv_pkt_info *pi = x->pi;
	if (pi->atm_va & 7)
		return fail(x, DPV_AETH_NAK_INV_REQ, IBV_WC_REM_INV_REQ_ERR); /* IBA 9.4.5: 8-byte aligned */
	const struct sw_mr *mr;
	uint64_t a;
	bool ok = rkey_check(qp, pi->atm_rkey, pi->atm_va, 8, IBV_ACCESS_REMOTE_ATOMIC, &mr, &a);
	uint64_t *p = ok ? (uint64_t *)(uintptr_t)(a + (uint64_t)mr->delta) : NULL;
	uint64_t orig;
	if (!ok || sw_mem_atomic(mr->pid, p, x->op == DPV_OPC_CMP_SWAP, pi->atm_cmp, pi->atm_swap_add, &orig) != 0)
		return fail(x, DPV_AETH_NAK_REM_ACC, IBV_WC_REM_ACCESS_ERR);
	r->msn = dpv_psn_add(r->msn, 1);
	save_res(qp, x->op, pi->psn, pi->psn, orig);
	sw_resp_flush_ack(qp);
	sw_resp_atomic(qp, pi->psn, orig);
	r->psn = dpv_psn_add(pi->psn, 1);
	r->nak_sent = false;
	return RESPST_DONE;
}

/* The answer to an ATOMIC WRITE or FLUSH (annex A19, as rxe): an RDMA READ
 * RESPONSE ONLY without data at the request's PSN. */
static enum resp_state zero_reply(struct sw_qp *qp, struct resp_ctx *x)
{
	struct sw_resp *r = &qp->resp;
	uint32_t psn = x->pi->psn;
	r->msn = dpv_psn_add(r->msn, 1);
	save_res(qp, x->op, psn, psn, 0);
	sw_resp_flush_ack(qp);
	sw_resp_read(qp, 0, 0, 0, psn, psn);
	r->psn = dpv_psn_add(psn, 1);
	r->nak_sent = false;
	return RESPST_DONE;
}

/* RDMA ATOMIC WRITE (annex A19): the 8 bytes of payload stored at an
 * 8-byte aligned address of an MR (and QP) with remote write access, in one
 * store, after everything before it (IBA: "executed atomically"). A wrong
 * length or an unaligned address is an invalid request, as rxe's
 * RESPST_ERR_LENGTH and RESPST_ERR_MISALIGNED_ATOMIC. */
static enum resp_state atomic_write(struct sw_qp *qp, struct resp_ctx *x)
{
	struct dpv_pkt_info *pi = x->pi;
	if (pi->reth_len != 8 || x->plen != 8)
		return fail(x, DPV_AETH_NAK_INV_REQ, IBV_WC_REM_INV_REQ_ERR);
	const struct sw_mr *mr;
	uint64_t a;
	if (!rkey_check(qp, pi->reth_rkey, pi->reth_va, 8, IBV_ACCESS_REMOTE_WRITE, &mr, &a))
		return fail(x, DPV_AETH_NAK_REM_ACC, IBV_WC_REM_ACCESS_ERR);
	uint64_t *p = (uint64_t *)(uintptr_t)(a + (uint64_t)mr->delta);
	if ((pi->reth_va & 7) || ((uintptr_t)p & 7))
		return fail(x, DPV_AETH_NAK_INV_REQ, IBV_WC_REM_INV_REQ_ERR);
	uint64_t v;
	memcpy(&v, x->pay, sizeof(v)); /* the requester's bytes as they are */
	if (sw_mem_store64(mr->pid, p, v) != 0)
		return fail(x, DPV_AETH_NAK_REM_ACC, IBV_WC_REM_ACCESS_ERR); /* unmapped under its MR */
	return zero_reply(qp, x);
}

/* RDMA FLUSH (annex A19): the placement types asked (FETH) must be granted
 * by the QP and the MR (IBV_ACCESS_FLUSH_GLOBAL / _PERSISTENT); the range
 * is the RETH's (selectivity RANGE) or the whole MR (MR). What was placed
 * before it is then globally visible (a full fence) and, for PERSISTENT,
 * its cache lines written back (sw_mem_writeback). */
static enum resp_state flush(struct sw_qp *qp, struct resp_ctx *x)
{
	struct dpv_pkt_info *pi = x->pi;
	uint8_t plt = pi->feth_plt;
	int access = ((plt & DPV_FLUSH_PLT_GLOBAL) ? DPV_ACCESS_FLUSH_GLOBAL : 0) |
		     ((plt & DPV_FLUSH_PLT_PERSISTENT) ? DPV_ACCESS_FLUSH_PERSISTENT : 0);
	if (!access || (plt & ~(DPV_FLUSH_PLT_GLOBAL | DPV_FLUSH_PLT_PERSISTENT)) || pi->feth_sel > DPV_FLUSH_SEL_MR)
		return fail(x, DPV_AETH_NAK_INV_REQ, IBV_WC_REM_INV_REQ_ERR);
	const struct sw_mr *mr = sw_mr_lookup(pi->reth_rkey);
	uint64_t va = pi->reth_va, len = pi->reth_len, a;
	if (mr && pi->feth_sel == DPV_FLUSH_SEL_MR) {
		va = mr->iova; /* the whole MR: the RETH's range is not looked at */
		len = mr->length;
	}
	if ((qp->attr.qp_access_flags & (unsigned int)access) != (unsigned int)access ||
	    !rkey_check(qp, pi->reth_rkey, va, len, access, &mr, &a))
		return fail(x, DPV_AETH_NAK_REM_ACC, IBV_WC_REM_ACCESS_ERR);
	sw_mem_flush(); /* writes batched into another process' memory are done */
	if ((plt & DPV_FLUSH_PLT_PERSISTENT) && len)
		sw_mem_writeback(mr->pid, (const void *)(uintptr_t)(a + (uint64_t)mr->delta), len);
	atomic_thread_fence(memory_order_seq_cst);
	return zero_reply(qp, x);
}

/* true when a successful CQE with these flags (DPV_CQE_F_*) pushed now
 * would signal the CQ's completion channel: a thread waits for it. */
static inline bool sw_cq_armed(struct sw_cq *cq, uint32_t flags)
{
	uint32_t arm = atomic_load_explicit(&cq->ring->arm, memory_order_relaxed);
	return arm == DPV_CQ_ARM_NEXT || (arm && (flags & DPV_CQE_F_SOLICITED));
}

static enum resp_state complete(struct sw_qp *qp, struct resp_ctx *x)
{
	struct sw_resp *r = &qp->resp;
	struct dpv_pkt_info *pi = x->pi;
	struct dpv_cqe e = {.wr_id = r->rwqe.wr_id, .status = IBV_WC_SUCCESS, .opcode = (uint8_t)x->wc_op,
			    .qp_num = qp->qpn, .src_qp = qp->attr.dest_qp_num, .byte_len = x->wc_len,
			    .flags = pi->se ? DPV_CQE_F_SOLICITED : 0};
	if (pi->mask & DPV_HDR_IMMDT) {
		e.wc_flags |= IBV_WC_WITH_IMM;
		e.imm_inv = htobe32(pi->immdt);
	}
	if (pi->mask & DPV_HDR_IETH) {
		e.wc_flags |= IBV_WC_WITH_INV;
		e.imm_inv = pi->ieth_rkey;
	}
	struct sw_tm_msg tm = {0};
	if (unlikely(r->tm.kind)) { /* a tag matching SRQ's message (sw_tm.c) */
		tm = r->tm;
		sw_tm_cqe(&r->tm, &e);
	}
	r->msn = dpv_psn_add(r->msn, 1);
	r->have_rwqe = false;
	struct sw_cq *cq = resp_cq(qp);
	/* A thread waits for this completion (its CQ is armed): the ACK
	 * leaves first, not deferred to the end of the receive burst. The
	 * waiter may end its process as soon as it wakes (fio's job processes
	 * _exit() after the client's last SEND), and an ACK still held by
	 * this thread would die with it: the peer retried its SEND into the
	 * void (fio verb=read over memif: 7 retries, 17 s). An RNIC has sent
	 * the ACK by then. Polled CQs keep the coalescing (the poller runs
	 * the burst itself, or sees the CQE a burst before the ACK at most). */
	if (sw_cq_armed(cq, e.flags)) {
		if (qp->type != IBV_QPT_UC && pi->ackreq) {
			sw_resp_queue_ack(qp, pi->psn);
			x->acked = true;
		}
		sw_resp_flush_ack(qp);
		dpv_port_tx_push(qp->qc);
	}
	if (unlikely(!sw_cq_push(qp, cq, &e))) {
		/* the receive CQ is in error (it overran now, or before): the
		 * message is not acknowledged and the QP goes to ERR (as rxe's
		 * responder on a CQ overflow, "class G") */
		r->in_msg = MSG_NONE;
		sw_qp_cq_fatal(qp);
		return RESPST_DONE;
	}
	if (unlikely(tm.rndv))
		sw_tm_rndv_start(qp, &tm, cq);
	return RESPST_ACKNOWLEDGE;
}

static enum resp_state acknowledge(struct sw_qp *qp, struct resp_ctx *x)
{
	struct sw_resp *r = &qp->resp;
	if (x->ends && x->kind == MSG_WRITE && !(x->pi->mask & DPV_HDR_IMMDT))
		r->msn = dpv_psn_add(r->msn, 1);
	r->psn = dpv_psn_add(x->pi->psn, 1);
	r->nak_sent = false;
	if (qp->type != IBV_QPT_UC && x->pi->ackreq && !x->acked)
		sw_resp_queue_ack(qp, x->pi->psn);
	return RESPST_DONE;
}

/* The saved resource of a duplicate READ, atomic, ATOMIC WRITE or FLUSH
 * whose PSN falls in its range, or NULL. */
static struct sw_rd_res *find_res(struct sw_qp *qp, uint8_t op, uint32_t psn)
{
	struct sw_resp *r = &qp->resp;
	for (unsigned int i = 0; i < r->n_res; i++) {
		struct sw_rd_res *res = &r->res[i];
		if (res->valid && res->op == op && dpv_psn_cmp(psn, res->first_psn) >= 0 &&
		    dpv_psn_cmp(psn, res->last_psn) <= 0)
			return res;
	}
	return NULL;
}

/* Duplicate request (PSN before the expected one): IBA 9.9.2.1/9.9.2.2. */
static enum resp_state duplicate(struct sw_qp *qp, struct resp_ctx *x)
{
	struct sw_resp *r = &qp->resp;
	struct dpv_pkt_info *pi = x->pi;
	sw_cnt(qp, DPV_CNT_DUP_REQ);
	if (is_rd_atomic(x->op)) {
		struct sw_rd_res *res = find_res(qp, x->op, pi->psn);
		if (!res) {
			SW_DBG_QP(qp, "duplicate opcode %#x psn %#x: no saved resource (epsn %#x)", x->op, pi->psn,
				  r->psn);
			return RESPST_DONE;
		}
		if (x->op != DPV_OPC_READ_REQUEST) {
			/* answered from the saved result, never executed twice
			 * (an ATOMIC WRITE or FLUSH: its empty READ response) */
			if (pi->psn != res->first_psn)
				return RESPST_DONE;
			if (x->op == DPV_OPC_CMP_SWAP || x->op == DPV_OPC_FETCH_ADD)
				sw_resp_atomic(qp, pi->psn, res->orig);
			else
				sw_resp_read(qp, 0, 0, 0, pi->psn, pi->psn);
			return RESPST_DONE;
		}
		/* replay: responses for the (possibly shortened) range asked,
		 * with the rkey checked again: its MR deregistered since is a
		 * remote access error (as rxe_recheck_mr) */
		const struct sw_mr *mr;
		uint64_t src = 0;
		if (pi->reth_len && !rkey_check(qp, pi->reth_rkey, pi->reth_va, pi->reth_len, IBV_ACCESS_REMOTE_READ,
						&mr, &src))
			return fail(x, DPV_AETH_NAK_REM_ACC, IBV_WC_REM_ACCESS_ERR);
		sw_resp_read(qp, src, pi->reth_rkey, pi->reth_len, pi->psn, res->first_psn);
		return RESPST_DONE;
	}
	/* SEND/WRITE: re-acknowledge what we have, but only for duplicates that
	 * asked for an ACK, so that a resent window does not bring back one ACK
	 * per packet */
	if (pi->ackreq) {
		sw_resp_flush_ack(qp);
		sw_resp_ack(qp, DPV_AETH_CREDIT_INVALID, dpv_psn_prev(r->psn));
	}
	return RESPST_DONE;
}

/* IBA 9.7.4.1.3: one PSN sequence error NAK per expected PSN. */
static enum resp_state err_psn_seq(struct sw_qp *qp, struct resp_ctx *x)
{
	sw_cnt(qp, DPV_CNT_OOS_REQ);
	if (!qp->resp.nak_sent) {
		qp->resp.nak_sent = true;
		sw_resp_nak(qp, DPV_AETH_NAK_PSN_SEQ, qp->resp.psn);
	}
	return RESPST_DONE;
}

/* IBA 9.7.5.1.7: no receive WQE: RNR NAK with the QP's min_rnr_timer; the
 * expected PSN stays, the requester resends. UC drops the message. */
static enum resp_state err_rnr(struct sw_qp *qp, struct resp_ctx *x)
{
	if (qp->type == IBV_QPT_UC)
		qp->resp.uc_drop = true;
	else
		sw_resp_nak(qp, DPV_AETH_RNR_NAK | (qp->attr.min_rnr_timer & 0x1f), x->pi->psn);
	return RESPST_DONE;
}

/* Responder error: NAK (RC, XRC), complete the receive WQE in progress with
 * the local status, QP to ERR with both queues flushed and the async events
 * of IBA 11.6.3. UC only drops the message (IBA 9.8.4). */
static enum resp_state error(struct sw_qp *qp, struct resp_ctx *x)
{
	struct sw_resp *r = &qp->resp;
	if (qp->type != IBV_QPT_UC)
		sw_resp_nak(qp, x->nak, x->pi->psn);
	if (r->have_rwqe) {
		struct dpv_cqe e = {.wr_id = r->rwqe.wr_id, .status = (uint8_t)x->status, .opcode = IBV_WC_RECV,
				    .qp_num = qp->qpn};
		if (unlikely(r->tm.kind))
			sw_tm_cqe_error(&r->tm, &e);
		r->have_rwqe = false;
		struct sw_cq *cq = resp_cq(qp);
		if (cq)
			sw_cq_push(qp, cq, &e);
	}
	r->in_msg = MSG_NONE;
	if (qp->type == IBV_QPT_UC) {
		r->uc_drop = true;
		if (unlikely(qp->cq_fatal))
			sw_qp_cq_fatal(qp); /* the receive CQ is in error */
		return RESPST_DONE;
	}
	bool cq_err = qp->cq_fatal; /* the CQE was refused: its CQ is in error */
	sw_qp_to_error(qp);
	qp->cq_fatal = false;
	if (x->status == IBV_WC_LOC_LEN_ERR || x->status == IBV_WC_LOC_PROT_ERR || cq_err)
		sw_qp_event(qp, IBV_EVENT_QP_FATAL);
	if (qp->srq || qp->type == IBV_QPT_XRC_RECV)
		sw_qp_event(qp, IBV_EVENT_QP_LAST_WQE_REACHED);
	return RESPST_DONE;
}

static enum resp_state resp_step(struct sw_qp *qp, enum resp_state st, struct resp_ctx *x)
{
	switch (st) {
	case RESPST_CHK_PSN: return chk_psn(qp, x);
	case RESPST_CHK_OP_SEQ: return chk_op_seq(qp, x);
	case RESPST_CHK_LENGTH: return chk_length(qp, x);
	case RESPST_CHK_XRC_SRQ: return chk_xrc_srq(qp, x);
	case RESPST_CHK_RESOURCE: return chk_resource(qp, x);
	case RESPST_EXEC_SEND: return exec_send(qp, x);
	case RESPST_CHK_RKEY: return chk_rkey(qp, x);
	case RESPST_EXEC_WRITE: return exec_write(qp, x);
	case RESPST_READ_REPLY: return read_reply(qp, x);
	case RESPST_ATOMIC_REPLY: return atomic_reply(qp, x);
	case RESPST_ATOMIC_WRITE: return atomic_write(qp, x);
	case RESPST_FLUSH: return flush(qp, x);
	case RESPST_COMPLETE: return complete(qp, x);
	case RESPST_ACKNOWLEDGE: return acknowledge(qp, x);
	case RESPST_DUPLICATE: return duplicate(qp, x);
	case RESPST_ERR_PSN_SEQ: return err_psn_seq(qp, x);
	case RESPST_ERR_RNR: return err_rnr(qp, x);
	case RESPST_ERROR: return error(qp, x);
	default: return RESPST_DONE;
	}
}

/* A request packet for this QP's responder. Must hold the QP lock. */
void sw_resp_rx(struct sw_qp *qp, struct rte_mbuf *m, struct dpv_pkt_info *pi)
{
	uint32_t mk = pi->mask;
	struct resp_ctx x = {
		.pi = pi, .pay = rte_pktmbuf_mtod(m, const uint8_t *) + pi->payload_off, .plen = pi->payload_len,
		.op = pi->opcode & DPV_OPC_OP_MASK, .starts = mk & DPV_OP_START, .ends = mk & DPV_OP_END,
		.kind = (mk & DPV_OP_SEND) ? MSG_SEND : (mk & DPV_OP_WRITE) ? MSG_WRITE : MSG_NONE,
	};
	if (sw_qp_state(qp) == IBV_QPS_RTR && !qp->resp.comm_est) {
		qp->resp.comm_est = true;
		sw_qp_event(qp, IBV_EVENT_COMM_EST); /* IBA 11.6.3.1 */
	}
	enum resp_state st = RESPST_CHK_PSN;
	while (st != RESPST_DONE) {
		enum resp_state next = resp_step(qp, st, &x);
		SW_DBG_QP(qp, "resp psn %#x: %s -> %s", pi->psn, resp_state_name[st], resp_state_name[next]);
		st = next;
	}
	if (qp->type == IBV_QPT_UC && qp->resp.uc_drop)
		qp->resp.psn = dpv_psn_add(pi->psn, 1);
}
