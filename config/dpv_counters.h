/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpverbs counters: why frames are dropped (per port) and the transport
 * counters (per port and per QP, named after rxe's hardware counters). Shared
 * by every layer; the names are in lib/port/dpv_port.c.
 */
#ifndef DPV_COUNTERS_H
#define DPV_COUNTERS_H

/* Why a received frame was dropped; counted per port. */
enum dpv_drop_reason {
	DPV_DROP_NOT_ROCE = 0,   /* not ARP/ND/RoCEv2: other traffic */
	DPV_DROP_SHORT,
	DPV_DROP_BAD_IP,
	DPV_DROP_BAD_UDP,
	DPV_DROP_BAD_OPCODE,
	DPV_DROP_BAD_TVER,
	DPV_DROP_BAD_PAD,
	DPV_DROP_BAD_ICRC,
	DPV_DROP_NOT_FOR_US,     /* destination IP/MAC not ours */
	DPV_DROP_NO_QP,          /* destination QP does not exist */
	DPV_DROP_QP_STATE,       /* QP not in a state that receives */
	DPV_DROP_BAD_QKEY,
	DPV_DROP_BAD_PKEY,
	DPV_DROP_BAD_TRANSPORT,  /* opcode transport does not match QP type */
	DPV_DROP_NO_RECV_WQE,    /* UD: receive queue empty */
	DPV_DROP_NEIGH,          /* unresolved neighbour, queue full or timed out */
	DPV_DROP_TX_FULL,        /* TX queue full */
	DPV_DROP_NOMEM,          /* no mbuf */
	DPV_DROP_FAULT,          /* fault injection */
	DPV_DROP_LINK_DOWN,      /* sent while the port's link was down */
	DPV_DROP_GSI_UNANSWERED, /* a MAD to QP 1, no GSI QP, no CM answer (sw_gsi_fb.c) */
	DPV_DROP_GSI_RATE_LIMITED, /* a CM answer over the port's rate */
	DPV_DROP_NR,
};
extern const char *const dpv_drop_reason_names[DPV_DROP_NR];

/* Transport counters (rxe's hw counters and a few more), per port and per QP. */
enum dpv_cnt {
	DPV_CNT_SENT_PKTS = 0,
	DPV_CNT_RCVD_PKTS,
	DPV_CNT_DUP_REQ,          /* duplicate requests received */
	DPV_CNT_OOS_REQ,          /* out-of-sequence requests received */
	DPV_CNT_RNR_NAK_SENT,
	DPV_CNT_RNR_NAK_RCVD,
	DPV_CNT_SEQ_NAK_SENT,
	DPV_CNT_SEQ_NAK_RCVD,
	DPV_CNT_RETRY,            /* retransmissions (timeouts, NAKs, RNR) */
	DPV_CNT_RETRY_EXC,        /* transport retries exceeded */
	DPV_CNT_RNR_RETRY_EXC,
	DPV_CNT_ACK_DEFERRED,     /* ACK requests coalesced into a later ACK */
	DPV_CNT_ACK_SENT,
	DPV_CNT_ACK_RCVD,
	DPV_CNT_NAK_SENT,         /* NAK invalid request / remote access / op */
	DPV_CNT_NAK_RCVD,
	DPV_CNT_DUP_RESP,         /* duplicate or unexpected responses dropped */
	DPV_CNT_PROBE,            /* tail-loss probes (go-back without a timeout) */
	DPV_CNT_CM_FALLBACK_REPLY, /* CM answers of a port without a GSI QP */
	DPV_CNT_CQ_OVERRUN,       /* completions a full CQ could not take (CQ overrun) */
	DPV_CNT_NR,
};
extern const char *const dpv_cnt_names[DPV_CNT_NR];

#endif /* DPV_COUNTERS_H */
