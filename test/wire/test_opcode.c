/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Invariants of dpv_opcode_table, checked against an independent description
 * of IBA 9.2.1 table 35 written here from the opcode names.
 */
#include <stdbool.h>
#include <string.h>

#include "dpv_wire.h"
#include "dpvt_wire.h"

/* Operation names by the low 5 bits of the opcode (IBA 9.2.1 table 35). */
static const char *const op_names[32] = {
	[0x00] = "SEND_FIRST",
	[0x01] = "SEND_MIDDLE",
	[0x02] = "SEND_LAST",
	[0x03] = "SEND_LAST_WITH_IMMEDIATE",
	[0x04] = "SEND_ONLY",
	[0x05] = "SEND_ONLY_WITH_IMMEDIATE",
	[0x06] = "RDMA_WRITE_FIRST",
	[0x07] = "RDMA_WRITE_MIDDLE",
	[0x08] = "RDMA_WRITE_LAST",
	[0x09] = "RDMA_WRITE_LAST_WITH_IMMEDIATE",
	[0x0a] = "RDMA_WRITE_ONLY",
	[0x0b] = "RDMA_WRITE_ONLY_WITH_IMMEDIATE",
	[0x0c] = "RDMA_READ_REQUEST",
	[0x0d] = "RDMA_READ_RESPONSE_FIRST",
	[0x0e] = "RDMA_READ_RESPONSE_MIDDLE",
	[0x0f] = "RDMA_READ_RESPONSE_LAST",
	[0x10] = "RDMA_READ_RESPONSE_ONLY",
	[0x11] = "ACKNOWLEDGE",
	[0x12] = "ATOMIC_ACKNOWLEDGE",
	[0x13] = "COMPARE_SWAP",
	[0x14] = "FETCH_ADD",
	[0x16] = "SEND_LAST_WITH_INVALIDATE",
	[0x17] = "SEND_ONLY_WITH_INVALIDATE",
	[0x1c] = "FLUSH",        /* IBA 1.5 annex A19, RC only */
	[0x1d] = "ATOMIC_WRITE", /* IBA 1.5 annex A19, RC only */
};

static bool expect_valid(unsigned op)
{
	unsigned t = op & 0xe0, low = op & 0x1f;

	switch (t) {
	case DPV_TR_RC:
		return low <= 0x14 || low == 0x16 || low == 0x17 || low == 0x1c || low == 0x1d;
	case DPV_TR_XRC:
		return low <= 0x14 || low == 0x16 || low == 0x17;
	case DPV_TR_UC:
		return low <= 0x0b;
	case DPV_TR_UD:
		return low == 0x04 || low == 0x05;
	default:
		return false;
	}
}

static const char *tr_prefix(unsigned op)
{
	switch (op & 0xe0) {
	case DPV_TR_RC: return "IB_OPCODE_RC_";
	case DPV_TR_UC: return "IB_OPCODE_UC_";
	case DPV_TR_UD: return "IB_OPCODE_UD_";
	case DPV_TR_XRC: return "IB_OPCODE_XRC_";
	default: return "?";
	}
}

static bool has(const char *name, const char *sub)
{
	return strstr(name, sub) != NULL;
}

static bool ends_with(const char *s, const char *suf)
{
	size_t a = strlen(s), b = strlen(suf);

	return a >= b && strcmp(s + a - b, suf) == 0;
}

/* IBA order of the extension headers after the BTH */
static const struct {
	uint32_t bit;
	unsigned len;
	size_t off; /* offsetof the offset field */
	const char *name;
} hdr_order[] = {
	{ DPV_HDR_XRCETH, DPV_XRCETH_LEN, offsetof(struct dpv_opcode_info, off_xrceth), "XRCETH" },
	{ DPV_HDR_DETH, DPV_DETH_LEN, offsetof(struct dpv_opcode_info, off_deth), "DETH" },
	{ DPV_HDR_FETH, DPV_FETH_LEN, offsetof(struct dpv_opcode_info, off_feth), "FETH" },
	{ DPV_HDR_RETH, DPV_RETH_LEN, offsetof(struct dpv_opcode_info, off_reth), "RETH" },
	{ DPV_HDR_ATMETH, DPV_ATMETH_LEN, offsetof(struct dpv_opcode_info, off_atmeth), "AtomicETH" },
	{ DPV_HDR_AETH, DPV_AETH_LEN, offsetof(struct dpv_opcode_info, off_aeth), "AETH" },
	{ DPV_HDR_ATMACK, DPV_ATMACK_LEN, offsetof(struct dpv_opcode_info, off_atmack), "AtomicAckETH" },
	{ DPV_HDR_IMMDT, DPV_IMMDT_LEN, offsetof(struct dpv_opcode_info, off_immdt), "ImmDt" },
	{ DPV_HDR_IETH, DPV_IETH_LEN, offsetof(struct dpv_opcode_info, off_ieth), "IETH" },
};

static void check_entry(unsigned op)
{
	const struct dpv_opcode_info *oi = &dpv_opcode_table[op];
	const char *n = oi->name;
	unsigned low = op & 0x1f;
	uint32_t m = oi->mask, role;
	unsigned run = DPV_BTH_LEN;
	char want[96];
	bool xrc = (op & 0xe0) == DPV_TR_XRC, ud = (op & 0xe0) == DPV_TR_UD;
	bool req, send, write, read, atomic, imm, inv, payload, flush, atomic_write;

	snprintf(want, sizeof(want), "%s%s", tr_prefix(op), op_names[low]);
	CHECK(strcmp(n, want) == 0, "0x%02x name %s, want %s", op, n, want);
	CHECK(m & DPV_HDR_BTH, "0x%02x no BTH bit", op);

	/* hdr_len = BTH + sum of present headers; offsets follow IBA order */
	for (size_t i = 0; i < sizeof(hdr_order) / sizeof(hdr_order[0]); i++) {
		uint8_t off = *((const uint8_t *)oi + hdr_order[i].off);

		if (m & hdr_order[i].bit) {
			CHECK(off == run, "0x%02x %s at %u, want %u", op, hdr_order[i].name,
			      off, run);
			run += hdr_order[i].len;
		} else {
			CHECK(off == 0, "0x%02x absent %s has offset %u", op,
			      hdr_order[i].name, off);
		}
	}
	CHECK(oi->hdr_len == run, "0x%02x hdr_len %u, want %u", op, oi->hdr_len, run);
	CHECK(oi->off_payload == oi->hdr_len, "0x%02x off_payload %u != hdr_len %u", op,
	      oi->off_payload, oi->hdr_len);
	CHECK(oi->hdr_len % 4 == 0, "0x%02x hdr_len %u not 4-aligned", op, oi->hdr_len);

	/* role bits from the name */
	req = !has(n, "RESPONSE") && !has(n, "ACKNOWLEDGE");
	CHECK(!!(m & DPV_OP_REQ) == req && !!(m & DPV_OP_RESP) == !req,
	      "0x%02x REQ/RESP wrong (mask 0x%x)", op, m);
	role = m & (DPV_OP_START | DPV_OP_MIDDLE | DPV_OP_END);
	if (ends_with(n, "_FIRST"))
		CHECK(role == DPV_OP_START, "0x%02x FIRST role 0x%x", op, role);
	else if (ends_with(n, "_MIDDLE"))
		CHECK(role == DPV_OP_MIDDLE, "0x%02x MIDDLE role 0x%x", op, role);
	else if (has(n, "_LAST"))
		CHECK(role == DPV_OP_END, "0x%02x LAST role 0x%x", op, role);
	else /* ONLY, READ_REQUEST, ACKs, atomics: single-packet messages */
		CHECK(role == (DPV_OP_START | DPV_OP_END), "0x%02x ONLY role 0x%x", op, role);

	send = has(n, "_SEND_");
	write = has(n, "RDMA_WRITE");
	read = has(n, "RDMA_READ");
	flush = ends_with(n, "_FLUSH");
	atomic_write = ends_with(n, "_ATOMIC_WRITE");
	/* ATOMIC WRITE is no AtomicETH operation: a RETH and 8 bytes of data */
	atomic = (has(n, "ATOMIC") && !atomic_write) || has(n, "COMPARE_SWAP") || has(n, "FETCH_ADD");
	CHECK(!!(m & DPV_OP_SEND) == send, "0x%02x SEND bit", op);
	CHECK(!!(m & DPV_OP_WRITE) == write, "0x%02x WRITE bit", op);
	CHECK(!!(m & DPV_OP_READ) == read, "0x%02x READ bit", op);
	CHECK(!!(m & DPV_OP_ATOMIC) == atomic, "0x%02x ATOMIC bit", op);
	CHECK(!!(m & DPV_OP_FLUSH) == flush, "0x%02x FLUSH bit", op);
	CHECK(!!(m & DPV_OP_ATOMIC_WRITE) == atomic_write, "0x%02x ATOMIC_WRITE bit", op);
	CHECK(!!(m & DPV_HDR_FETH) == flush, "0x%02x FETH presence", op);

	imm = has(n, "WITH_IMMEDIATE");
	inv = has(n, "WITH_INVALIDATE");
	CHECK(!!(m & DPV_HDR_IMMDT) == imm, "0x%02x ImmDt presence", op);
	CHECK(!!(m & DPV_HDR_IETH) == inv, "0x%02x IETH presence", op);
	CHECK(!!(m & DPV_HDR_DETH) == ud, "0x%02x DETH only on UD", op);
	CHECK(!!(m & DPV_HDR_XRCETH) == (xrc && req), "0x%02x XRCETH on XRC requests only",
	      op);
	CHECK(!!(m & DPV_HDR_RETH) ==
		      (has(n, "WRITE_FIRST") || has(n, "WRITE_ONLY") || has(n, "READ_REQUEST") || flush ||
		       atomic_write),
	      "0x%02x RETH presence", op);
	CHECK(!!(m & DPV_HDR_AETH) ==
		      (has(n, "ACKNOWLEDGE") ||
		       (has(n, "READ_RESPONSE") && !has(n, "MIDDLE"))),
	      "0x%02x AETH presence", op);
	CHECK(!!(m & DPV_HDR_ATMETH) == (has(n, "COMPARE_SWAP") || has(n, "FETCH_ADD")),
	      "0x%02x AtomicETH presence", op);
	CHECK(!!(m & DPV_HDR_ATMACK) == has(n, "ATOMIC_ACKNOWLEDGE"),
	      "0x%02x AtomicAckETH presence", op);
	payload = send || write || has(n, "READ_RESPONSE") || atomic_write;
	CHECK(!!(m & DPV_HDR_PAYLOAD) == payload, "0x%02x PAYLOAD bit", op);
	/* receive completion at the responder: last packet of a SEND, or of a
	 * WRITE with immediate */
	CHECK(!!(m & DPV_OP_COMP) ==
		      ((send && (m & DPV_OP_END)) || (write && imm)),
	      "0x%02x COMP bit", op);
	CHECK(!(imm && inv), "0x%02x ImmDt and IETH together", op);
}

int main(void)
{
	unsigned nvalid = 0;

	for (unsigned op = 0; op < 256; op++) {
		const struct dpv_opcode_info *oi = &dpv_opcode_table[op];
		bool v = expect_valid(op);

		CHECK(dpv_opcode_valid((uint8_t)op) == v, "opcode 0x%02x valid=%d, want %d",
		      op, dpv_opcode_valid((uint8_t)op), v);
		if (!v) {
			CHECK(oi->mask == 0 && oi->hdr_len == 0,
			      "invalid 0x%02x has mask/len", op);
			continue;
		}
		if (!oi->name)
			continue;
		nvalid++;
		check_entry(op);
	}
	/* 25 RC + 12 UC + 2 UD + 23 XRC */
	CHECK(nvalid == 62, "%u valid opcodes, want 62", nvalid);

	/* spot checks against hand-computed IBA lengths */
	CHECK(dpv_opcode_table[0x0b].hdr_len == 12 + 16 + 4, "RC WRITE_ONLY_IMM len");
	CHECK(dpv_opcode_table[0x0b].off_immdt == 28, "RC WRITE_ONLY_IMM ImmDt after RETH");
	CHECK(dpv_opcode_table[0x65].hdr_len == 12 + 8 + 4, "UD SEND_ONLY_IMM len");
	CHECK(dpv_opcode_table[0x65].off_immdt == 20, "UD ImmDt after DETH");
	CHECK(dpv_opcode_table[0x12].hdr_len == 24, "ATOMIC_ACK len");
	CHECK(dpv_opcode_table[0x12].off_atmack == 16, "AtomicAckETH after AETH");
	CHECK(dpv_opcode_table[0xb3].hdr_len == 12 + 4 + 28, "XRC CMP_SWAP len");
	CHECK(dpv_opcode_table[0xab].off_immdt == 12 + 4 + 16, "XRC WRITE_ONLY_IMM ImmDt");
	CHECK(dpv_opcode_table[0xb1].hdr_len == 16, "XRC ACK has no XRCETH");
	CHECK(dpv_opcode_table[0x0e].hdr_len == 12, "READ_RESPONSE_MIDDLE no AETH");
	/* annex A19, as rxe_opcode.c: FLUSH = BTH FETH RETH, ATOMIC WRITE = BTH RETH + 8 */
	CHECK(dpv_opcode_table[0x1c].hdr_len == 12 + 4 + 16 && dpv_opcode_table[0x1c].off_feth == 12 &&
		      dpv_opcode_table[0x1c].off_reth == 16, "RC FLUSH: FETH at 12, RETH at 16");
	CHECK(dpv_opcode_table[0x1d].hdr_len == 12 + 16 && dpv_opcode_table[0x1d].off_reth == 12,
	      "RC ATOMIC_WRITE: RETH at 12");
	CHECK(!dpv_opcode_valid(0xbc) && !dpv_opcode_valid(0xbd) && !dpv_opcode_valid(0x3c) &&
		      !dpv_opcode_valid(0x3d), "FLUSH and ATOMIC WRITE: RC only");
	CHECK(!dpv_opcode_valid(0x15) && !dpv_opcode_valid(0x1f) && !dpv_opcode_valid(0x7f) &&
		      !dpv_opcode_valid(0x81) && !dpv_opcode_valid(0x2c) &&
		      !dpv_opcode_valid(0x60) && !dpv_opcode_valid(0xb5),
	      "reserved opcodes invalid");
	CHECK(DPV_OPC_SEND_ONLY_INV == 0x17 && (DPV_TR_UD | DPV_OPC_SEND_ONLY) == 0x64,
	      "enum values");
	return dpvt_finish();
}
