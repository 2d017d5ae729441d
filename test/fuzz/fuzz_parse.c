/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer target for the RoCEv2 parser (lib/wire/dpv_pkt.c).
 *
 * For any input: dpv_pkt_parse() and dpv_pkt_parse_check() must not crash or
 * read out of bounds (ASan), must return 0 or a listed dpv_parse_err, and must
 * agree except for DPV_PARSE_BAD_ICRC. For an accepted frame the offsets must
 * be consistent, and rebuilding it from the parsed fields with
 * dpv_pkt_build_hdrs()/dpv_pkt_finish() must give a frame that parses back
 * to the same transport fields.
 *
 * build: clang -fsanitize=fuzzer,address,undefined with the lib/wire sources
 * compiled into the same binary (so libFuzzer sees their coverage).
 */
#include <stdlib.h>
#include <string.h>

#include "dpv_wire.h"

static void rebuild(const uint8_t *data, const struct dpv_pkt_info *pi)
{
	static uint8_t buf[70000];
	struct dpv_pkt_build b;
	struct dpv_pkt_info p2;
	uint32_t len, off;

	memset(&b, 0, sizeof(b));
	memcpy(b.dst_mac, pi->dst_mac, 6);
	memcpy(b.src_mac, pi->src_mac, 6);
	b.ip_ver = pi->ip_ver;
	memcpy(b.sgid, pi->sgid, 16);
	memcpy(b.dgid, pi->dgid, 16);
	b.tclass = pi->tclass;
	b.hop_limit = pi->hop_limit;
	b.flow_label = pi->flow_label;
	b.ip_id = pi->ip_id;
	b.udp_sport = pi->udp_sport;
	b.opcode = pi->opcode;
	b.se = pi->se;
	b.mig = pi->mig;
	b.ackreq = pi->ackreq;
	b.pkey = pi->pkey;
	b.dqpn = pi->dqpn;
	b.psn = pi->psn;
	b.deth_qkey = pi->deth_qkey;
	b.deth_sqpn = pi->deth_sqpn;
	b.reth_va = pi->reth_va;
	b.reth_rkey = pi->reth_rkey;
	b.reth_len = pi->reth_len;
	b.aeth_syndrome = pi->aeth_syndrome;
	b.aeth_msn = pi->aeth_msn;
	b.immdt = pi->immdt;
	b.ieth_rkey = pi->ieth_rkey;
	b.atm_va = pi->atm_va;
	b.atm_rkey = pi->atm_rkey;
	b.atm_swap_add = pi->atm_swap_add;
	b.atm_cmp = pi->atm_cmp;
	b.atmack_orig = pi->atmack_orig;
	b.xrc_srqn = pi->xrc_srqn;

	len = dpv_pkt_frame_len(b.opcode, b.ip_ver, pi->payload_len);
	if (len == 0 || len > sizeof(buf))
		abort();
	off = dpv_pkt_build_hdrs(buf, &b, pi->payload_len);
	if (off == 0)
		return; /* IPv4 options made the original longer than 64 KiB */
	memcpy(buf + off, data + pi->payload_off, pi->payload_len);
	dpv_pkt_finish(buf, len);
	if (dpv_pkt_parse_check(buf, len, &p2) != 0)
		abort();
	if (p2.opcode != pi->opcode || p2.dqpn != pi->dqpn || p2.psn != pi->psn ||
	    p2.payload_len != pi->payload_len || p2.mask != pi->mask ||
	    p2.immdt != pi->immdt || p2.reth_va != pi->reth_va ||
	    p2.reth_len != pi->reth_len || p2.atm_cmp != pi->atm_cmp ||
	    p2.atmack_orig != pi->atmack_orig || p2.xrc_srqn != pi->xrc_srqn ||
	    p2.deth_sqpn != pi->deth_sqpn || p2.aeth_msn != pi->aeth_msn ||
	    p2.tclass != pi->tclass || p2.flow_label != pi->flow_label ||
	    memcmp(p2.sgid, pi->sgid, 16) || memcmp(p2.dgid, pi->dgid, 16) ||
	    memcmp(buf + off, data + pi->payload_off, pi->payload_len))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dpv_pkt_info pi, pc;
	uint32_t len = size > 0xffffffffu ? 0xffffffffu : (uint32_t)size;
	int r = dpv_pkt_parse(data, len, &pi);
	int rc = dpv_pkt_parse_check(data, len, &pc);

	if (r > 0 || r <= -DPV_PARSE_NERR || r == DPV_PARSE_BAD_ICRC)
		abort();
	if (rc != r && !(r == 0 && rc == DPV_PARSE_BAD_ICRC))
		abort();
	if (dpv_parse_err_str(rc) == NULL)
		abort();
	if (r != 0)
		return 0;
	if (pi.frame_len > len || pi.payload_off + pi.payload_len + pi.padcnt +
					  DPV_ICRC_LEN != pi.frame_len ||
	    pi.bth_off + dpv_opcode_table[pi.opcode].hdr_len != pi.payload_off ||
	    (pi.payload_len + pi.padcnt) % 4 != 0)
		abort();
	rebuild(data, &pi);
	return 0;
}
