/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Wire opcode table: one entry per BTH opcode (IBA 9.2.1 table 35), holding
 * which headers follow the BTH, where each one starts (offset from the first
 * byte of the BTH) and the packet's role.
 *
 * Header order after the BTH (IBA 9.2, figure "packet format" and 9.3):
 *   [XRCETH] [DETH] [FETH] [RETH] [AtomicETH] [AETH] [AtomicAckETH] [ImmDt] [IETH]
 * No opcode has more than three extension headers, and ImmDt and IETH never
 * occur together.
 *
 * The entries are generated per transport by the macros below so that RC,
 * UC and XRC share one description of every operation; the only differences
 * between transports are which operations exist (IBA 9.2.1 table 35) and
 * the XRCETH in front of the other headers of XRC requests (IBA annex A14).
 * RDMA FLUSH and ATOMIC WRITE (IBA 1.5 annex A19) exist for RC only, as in
 * Linux (ib_pack.h, rxe_opcode.c); both are answered with a zero-length
 * RDMA READ RESPONSE ONLY.
 */
#include "dpv_wire.h"

/* Bits used by most entries, to keep the lines short. */
#define M_BTH DPV_HDR_BTH
#define M_PL DPV_HDR_PAYLOAD
#define M_REQ DPV_OP_REQ
#define M_RESP DPV_OP_RESP
#define M_FIRST DPV_OP_START
#define M_MID DPV_OP_MIDDLE
#define M_LAST DPV_OP_END
#define M_ONLY (DPV_OP_START | DPV_OP_END)

#define B DPV_BTH_LEN

/*
 * Entry helpers. X is the XRCETH length in front of the other extension
 * headers (DPV_XRCETH_LEN for XRC requests, else 0); PFX is the name prefix
 * ("IB_OPCODE_RC_" ...). XRCETH always sits right after the BTH.
 */
#define XMASK(X) ((X) ? DPV_HDR_XRCETH : 0u)
#define XOFF(X) ((X) ? B : 0)

/* BTH [XRCETH] payload: SEND FIRST/MIDDLE/LAST, WRITE MIDDLE/LAST */
#define E_PLAIN(PFX, NAME, X, ROLE)                                          \
	{                                                                     \
		.name = PFX NAME, .mask = M_BTH | XMASK(X) | M_PL | M_REQ | (ROLE), \
		.hdr_len = B + (X), .off_xrceth = XOFF(X), .off_payload = B + (X), \
	}

/* BTH [XRCETH] ImmDt payload: SEND_LAST/ONLY_WITH_IMMEDIATE, WRITE_LAST_IMM */
#define E_IMM(PFX, NAME, X, ROLE)                                             \
	{                                                                     \
		.name = PFX NAME,                                             \
		.mask = M_BTH | XMASK(X) | DPV_HDR_IMMDT | M_PL | M_REQ | (ROLE), \
		.hdr_len = B + (X) + DPV_IMMDT_LEN, .off_xrceth = XOFF(X),    \
		.off_immdt = B + (X), .off_payload = B + (X) + DPV_IMMDT_LEN, \
	}

/* BTH [XRCETH] IETH payload: SEND_LAST/ONLY_WITH_INVALIDATE */
#define E_INV(PFX, NAME, X, ROLE)                                             \
	{                                                                     \
		.name = PFX NAME,                                             \
		.mask = M_BTH | XMASK(X) | DPV_HDR_IETH | M_PL | M_REQ | (ROLE), \
		.hdr_len = B + (X) + DPV_IETH_LEN, .off_xrceth = XOFF(X),     \
		.off_ieth = B + (X), .off_payload = B + (X) + DPV_IETH_LEN,   \
	}

/* BTH [XRCETH] RETH payload: WRITE_FIRST, WRITE_ONLY */
#define E_RETH(PFX, NAME, X, ROLE)                                            \
	{                                                                     \
		.name = PFX NAME,                                             \
		.mask = M_BTH | XMASK(X) | DPV_HDR_RETH | M_PL | M_REQ | (ROLE), \
		.hdr_len = B + (X) + DPV_RETH_LEN, .off_xrceth = XOFF(X),     \
		.off_reth = B + (X), .off_payload = B + (X) + DPV_RETH_LEN,   \
	}

/* BTH [XRCETH] RETH ImmDt payload: WRITE_ONLY_WITH_IMMEDIATE (IBA 9.2) */
#define E_RETH_IMM(PFX, NAME, X, ROLE)                                        \
	{                                                                     \
		.name = PFX NAME,                                             \
		.mask = M_BTH | XMASK(X) | DPV_HDR_RETH | DPV_HDR_IMMDT | M_PL |  \
			M_REQ | (ROLE),                                       \
		.hdr_len = B + (X) + DPV_RETH_LEN + DPV_IMMDT_LEN,            \
		.off_xrceth = XOFF(X), .off_reth = B + (X),                   \
		.off_immdt = B + (X) + DPV_RETH_LEN,                          \
		.off_payload = B + (X) + DPV_RETH_LEN + DPV_IMMDT_LEN,        \
	}

/* BTH [XRCETH] RETH, no payload: RDMA READ REQUEST */
#define E_READ_REQ(PFX, NAME, X)                                              \
	{                                                                     \
		.name = PFX NAME,                                             \
		.mask = M_BTH | XMASK(X) | DPV_HDR_RETH | M_REQ | M_ONLY |    \
			DPV_OP_READ,                                          \
		.hdr_len = B + (X) + DPV_RETH_LEN, .off_xrceth = XOFF(X),     \
		.off_reth = B + (X), .off_payload = B + (X) + DPV_RETH_LEN,   \
	}

/* BTH [XRCETH] AtomicETH, no payload: CMP_SWAP, FETCH_ADD */
#define E_ATOMIC(PFX, NAME, X)                                                \
	{                                                                     \
		.name = PFX NAME,                                             \
		.mask = M_BTH | XMASK(X) | DPV_HDR_ATMETH | M_REQ | M_ONLY |  \
			DPV_OP_ATOMIC,                                        \
		.hdr_len = B + (X) + DPV_ATMETH_LEN, .off_xrceth = XOFF(X),   \
		.off_atmeth = B + (X), .off_payload = B + (X) + DPV_ATMETH_LEN, \
	}

/*
 * Responses travel from the responder back to the requester's QP, which is
 * an ordinary send QP (XRC INI): no XRCETH in them (IBA annex A14, XRC).
 */
/* BTH AETH payload: READ RESPONSE FIRST/LAST/ONLY */
#define E_RRESP_AETH(PFX, NAME, ROLE)                                         \
	{                                                                     \
		.name = PFX NAME,                                             \
		.mask = M_BTH | DPV_HDR_AETH | M_PL | M_RESP | DPV_OP_READ | (ROLE), \
		.hdr_len = B + DPV_AETH_LEN, .off_aeth = B,                   \
		.off_payload = B + DPV_AETH_LEN,                              \
	}

/* BTH payload: READ RESPONSE MIDDLE (no AETH, IBA 9.2) */
#define E_RRESP_MID(PFX, NAME)                                                \
	{                                                                     \
		.name = PFX NAME,                                             \
		.mask = M_BTH | M_PL | M_RESP | DPV_OP_READ | M_MID,          \
		.hdr_len = B, .off_payload = B,                               \
	}

/* BTH AETH: ACKNOWLEDGE */
#define E_ACK(PFX, NAME)                                                      \
	{                                                                     \
		.name = PFX NAME, .mask = M_BTH | DPV_HDR_AETH | M_RESP | M_ONLY, \
		.hdr_len = B + DPV_AETH_LEN, .off_aeth = B,                   \
		.off_payload = B + DPV_AETH_LEN,                              \
	}

/* BTH AETH AtomicAckETH: ATOMIC ACKNOWLEDGE */
#define E_ATOMIC_ACK(PFX, NAME)                                               \
	{                                                                     \
		.name = PFX NAME,                                             \
		.mask = M_BTH | DPV_HDR_AETH | DPV_HDR_ATMACK | M_RESP | M_ONLY | \
			DPV_OP_ATOMIC,                                        \
		.hdr_len = B + DPV_AETH_LEN + DPV_ATMACK_LEN, .off_aeth = B,  \
		.off_atmack = B + DPV_AETH_LEN,                               \
		.off_payload = B + DPV_AETH_LEN + DPV_ATMACK_LEN,             \
	}

/* BTH FETH RETH, no payload: RC FLUSH (annex A19) */
#define E_FLUSH(PFX, NAME)                                                    \
	{                                                                     \
		.name = PFX NAME,                                             \
		.mask = M_BTH | DPV_HDR_FETH | DPV_HDR_RETH | M_REQ | M_ONLY | \
			DPV_OP_FLUSH,                                         \
		.hdr_len = B + DPV_FETH_LEN + DPV_RETH_LEN, .off_feth = B,    \
		.off_reth = B + DPV_FETH_LEN,                                 \
		.off_payload = B + DPV_FETH_LEN + DPV_RETH_LEN,               \
	}

/* BTH RETH payload (8 bytes): RC ATOMIC WRITE (annex A19) */
#define E_ATOMIC_WRITE(PFX, NAME)                                             \
	{                                                                     \
		.name = PFX NAME,                                             \
		.mask = M_BTH | DPV_HDR_RETH | M_PL | M_REQ | M_ONLY |        \
			DPV_OP_ATOMIC_WRITE,                                  \
		.hdr_len = B + DPV_RETH_LEN, .off_reth = B,                   \
		.off_payload = B + DPV_RETH_LEN,                              \
	}

#define SEND_ROLE_LAST (M_LAST | DPV_OP_SEND | DPV_OP_COMP)
#define SEND_ROLE_ONLY (M_ONLY | DPV_OP_SEND | DPV_OP_COMP)

/*
 * SEND and RDMA WRITE: present in RC, UC and XRC (IBA 9.2.1 table 35).
 * A receive completion is generated at the responder by the last packet of
 * a SEND and by the last packet of an RDMA WRITE with immediate (IBA 9.7.5,
 * "receive completion"): those carry DPV_OP_COMP.
 */
#define SEND_WRITE_OPS(T, PFX, X)                                             \
	[T | 0x00] = E_PLAIN(PFX, "SEND_FIRST", X, M_FIRST | DPV_OP_SEND),    \
	[T | 0x01] = E_PLAIN(PFX, "SEND_MIDDLE", X, M_MID | DPV_OP_SEND),     \
	[T | 0x02] = E_PLAIN(PFX, "SEND_LAST", X, SEND_ROLE_LAST),            \
	[T | 0x03] = E_IMM(PFX, "SEND_LAST_WITH_IMMEDIATE", X, SEND_ROLE_LAST), \
	[T | 0x04] = E_PLAIN(PFX, "SEND_ONLY", X, SEND_ROLE_ONLY),            \
	[T | 0x05] = E_IMM(PFX, "SEND_ONLY_WITH_IMMEDIATE", X, SEND_ROLE_ONLY), \
	[T | 0x06] = E_RETH(PFX, "RDMA_WRITE_FIRST", X, M_FIRST | DPV_OP_WRITE), \
	[T | 0x07] = E_PLAIN(PFX, "RDMA_WRITE_MIDDLE", X, M_MID | DPV_OP_WRITE), \
	[T | 0x08] = E_PLAIN(PFX, "RDMA_WRITE_LAST", X, M_LAST | DPV_OP_WRITE), \
	[T | 0x09] = E_IMM(PFX, "RDMA_WRITE_LAST_WITH_IMMEDIATE", X,          \
			   M_LAST | DPV_OP_WRITE | DPV_OP_COMP),              \
	[T | 0x0a] = E_RETH(PFX, "RDMA_WRITE_ONLY", X, M_ONLY | DPV_OP_WRITE), \
	[T | 0x0b] = E_RETH_IMM(PFX, "RDMA_WRITE_ONLY_WITH_IMMEDIATE", X,     \
				M_ONLY | DPV_OP_WRITE | DPV_OP_COMP)

/* RDMA READ, atomics, acknowledgements, SEND with invalidate: RC and XRC only. */
#define READ_ATOMIC_ACK_OPS(T, PFX, X)                                        \
	[T | 0x0c] = E_READ_REQ(PFX, "RDMA_READ_REQUEST", X),                 \
	[T | 0x0d] = E_RRESP_AETH(PFX, "RDMA_READ_RESPONSE_FIRST", M_FIRST),  \
	[T | 0x0e] = E_RRESP_MID(PFX, "RDMA_READ_RESPONSE_MIDDLE"),           \
	[T | 0x0f] = E_RRESP_AETH(PFX, "RDMA_READ_RESPONSE_LAST", M_LAST),    \
	[T | 0x10] = E_RRESP_AETH(PFX, "RDMA_READ_RESPONSE_ONLY", M_ONLY),    \
	[T | 0x11] = E_ACK(PFX, "ACKNOWLEDGE"),                               \
	[T | 0x12] = E_ATOMIC_ACK(PFX, "ATOMIC_ACKNOWLEDGE"),                 \
	[T | 0x13] = E_ATOMIC(PFX, "COMPARE_SWAP", X),                        \
	[T | 0x14] = E_ATOMIC(PFX, "FETCH_ADD", X),                           \
	/* 0x15 reserved; 0x18-0x1b (RESYNC ...) not supported */             \
	[T | 0x16] = E_INV(PFX, "SEND_LAST_WITH_INVALIDATE", X, SEND_ROLE_LAST), \
	[T | 0x17] = E_INV(PFX, "SEND_ONLY_WITH_INVALIDATE", X, SEND_ROLE_ONLY)

/* UD: BTH DETH [ImmDt] payload, single-packet SENDs only (IBA 9.2.1, 9.8 UD). */
#define E_UD(NAME, IMM)                                                       \
	{                                                                     \
		.name = "IB_OPCODE_UD_" NAME,                                 \
		.mask = M_BTH | DPV_HDR_DETH | ((IMM) ? DPV_HDR_IMMDT : 0u) | \
			M_PL | M_REQ | SEND_ROLE_ONLY,                        \
		.hdr_len = B + DPV_DETH_LEN + ((IMM) ? DPV_IMMDT_LEN : 0),   \
		.off_deth = B, .off_immdt = (IMM) ? B + DPV_DETH_LEN : 0,     \
		.off_payload = B + DPV_DETH_LEN + ((IMM) ? DPV_IMMDT_LEN : 0), \
	}

const struct dpv_opcode_info dpv_opcode_table[256] = {
	SEND_WRITE_OPS(DPV_TR_RC, "IB_OPCODE_RC_", 0),
	READ_ATOMIC_ACK_OPS(DPV_TR_RC, "IB_OPCODE_RC_", 0),
	[DPV_TR_RC | DPV_OPC_FLUSH] = E_FLUSH("IB_OPCODE_RC_", "FLUSH"),
	[DPV_TR_RC | DPV_OPC_ATOMIC_WRITE] = E_ATOMIC_WRITE("IB_OPCODE_RC_", "ATOMIC_WRITE"),

	/* UC: SEND and RDMA WRITE only (IBA 9.2.1 table 35: 0x20-0x2b). */
	SEND_WRITE_OPS(DPV_TR_UC, "IB_OPCODE_UC_", 0),

	/* RD (0x40-0x5f) is not supported: no entries. */

	[DPV_TR_UD | DPV_OPC_SEND_ONLY] = E_UD("SEND_ONLY", 0),
	[DPV_TR_UD | DPV_OPC_SEND_ONLY_IMM] = E_UD("SEND_ONLY_WITH_IMMEDIATE", 1),

	/* XRC: the RC operations with an XRCETH after the BTH of requests. */
	SEND_WRITE_OPS(DPV_TR_XRC, "IB_OPCODE_XRC_", DPV_XRCETH_LEN),
	READ_ATOMIC_ACK_OPS(DPV_TR_XRC, "IB_OPCODE_XRC_", DPV_XRCETH_LEN),
};
