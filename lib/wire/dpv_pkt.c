/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * RoCEv2 frame parsing and building:
 *   Ethernet [802.1Q] / IPv4 | IPv6 / UDP 4791 / BTH / ext headers /
 *   payload / pad / ICRC      (IBA annex A17, RoCEv2)
 * All multi-byte fields are big endian on the wire except the ICRC, which is
 * sent least significant byte first.
 */
#include <endian.h>
#include <string.h>

#include "dpv_wire.h"

#define ETH_P_IPV4 0x0800
#define ETH_P_IPV6 0x86dd
#define ETH_P_8021Q 0x8100
#define IPPROTO_UDP_ 17
#define IPV4_DF 0x4000
#define IPV4_MF 0x2000
#define IPV4_FRAG_OFF 0x1fff
#define DPV_VLAN_HLEN 4

/* ---- byte order helpers: one unaligned big-endian access each ---- */
static inline uint16_t ld16(const uint8_t *p)
{
	uint16_t v;
	memcpy(&v, p, 2);
	return be16toh(v);
}

static inline uint32_t ld24(const uint8_t *p)
{
	return (uint32_t)p[0] << 16 | ld16(p + 1);
}

static inline uint32_t ld32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return be32toh(v);
}

static inline uint64_t ld64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return be64toh(v);
}

static inline void st16(uint8_t *p, uint16_t v)
{
	v = htobe16(v);
	memcpy(p, &v, 2);
}

static inline void st24(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 16);
	st16(p + 1, (uint16_t)v);
}

static inline void st32(uint8_t *p, uint32_t v)
{
	v = htobe32(v);
	memcpy(p, &v, 4);
}

static inline void st64(uint8_t *p, uint64_t v)
{
	v = htobe64(v);
	memcpy(p, &v, 8);
}

/* BTH (IBA 9.2, figure 41): byte 0 opcode | 1 SE M PadCnt(2) TVer(4) |
 * 2-3 P_Key | 4 FECN BECN resv6 | 5-7 DestQP | 8 AckReq resv7 | 9-11 PSN;
 * the accessors are inline in dpv_wire.h. */

/* ---- errors ---- */
static const char *const parse_err_str[DPV_PARSE_NERR] = {
	[0] = "ok",
	[-DPV_PARSE_NOT_ROCE] = "not a RoCEv2 packet",
	[-DPV_PARSE_SHORT] = "truncated packet",
	[-DPV_PARSE_BAD_IP] = "bad IP header",
	[-DPV_PARSE_BAD_UDP] = "bad UDP length",
	[-DPV_PARSE_BAD_OPCODE] = "invalid BTH opcode",
	[-DPV_PARSE_BAD_TVER] = "BTH transport header version not 0",
	[-DPV_PARSE_BAD_PAD] = "bad pad count or payload length",
	[-DPV_PARSE_BAD_ICRC] = "ICRC mismatch",
};

const char *dpv_parse_err_str(int err)
{
	if (err > 0 || err <= -DPV_PARSE_NERR)
		return "unknown parse error";
	return parse_err_str[-err];
}

/* ---- parse ---- */
static void ipv4_mapped(uint8_t gid[16], const uint8_t *addr)
{
	memset(gid, 0, 10);
	gid[10] = 0xff;
	gid[11] = 0xff;
	memcpy(gid + 12, addr, 4);
}

static void parse_ext_hdrs(const uint8_t *bth, struct dpv_pkt_info *pi)
{
	const struct dpv_opcode_info *oi = &dpv_opcode_table[pi->opcode];

	if (oi->mask & DPV_HDR_XRCETH) /* IBA A14 XRCETH: resv8, XRCSRQ(24) */
		pi->xrc_srqn = ld24(bth + oi->off_xrceth + 1);
	if (oi->mask & DPV_HDR_DETH) { /* IBA 9.3 DETH: Q_Key, resv8, SrcQP(24) */
		pi->deth_qkey = ld32(bth + oi->off_deth);
		pi->deth_sqpn = ld24(bth + oi->off_deth + 5);
	}
	if (oi->mask & DPV_HDR_FETH) { /* annex A19 FETH: resv26, SEL(2), PLT(4) */
		uint8_t f = bth[oi->off_feth + 3];
		pi->feth_plt = f & DPV_FETH_PLT_MASK;
		pi->feth_sel = (uint8_t)((f & DPV_FETH_SEL_MASK) >> DPV_FETH_SEL_SHIFT);
	}
	if (oi->mask & DPV_HDR_RETH) { /* IBA 9.3 RETH: VA(64), R_Key, DMALen */
		pi->reth_va = ld64(bth + oi->off_reth);
		pi->reth_rkey = ld32(bth + oi->off_reth + 8);
		pi->reth_len = ld32(bth + oi->off_reth + 12);
	}
	if (oi->mask & DPV_HDR_ATMETH) { /* IBA 9.3 AtomicETH: VA, R_Key, Swap, Cmp */
		pi->atm_va = ld64(bth + oi->off_atmeth);
		pi->atm_rkey = ld32(bth + oi->off_atmeth + 8);
		pi->atm_swap_add = ld64(bth + oi->off_atmeth + 12);
		pi->atm_cmp = ld64(bth + oi->off_atmeth + 20);
	}
	if (oi->mask & DPV_HDR_AETH) { /* IBA 9.3 AETH: Syndrome, MSN(24) */
		pi->aeth_syndrome = bth[oi->off_aeth];
		pi->aeth_msn = ld24(bth + oi->off_aeth + 1);
	}
	if (oi->mask & DPV_HDR_ATMACK) /* IBA 9.3 AtomicAckETH: OrigRemDt(64) */
		pi->atmack_orig = ld64(bth + oi->off_atmack);
	if (oi->mask & DPV_HDR_IMMDT) /* IBA 9.3 */
		pi->immdt = ld32(bth + oi->off_immdt);
	if (oi->mask & DPV_HDR_IETH) /* IBA 9.3 */
		pi->ieth_rkey = ld32(bth + oi->off_ieth);
}

/* Ethernet II, optionally one 802.1Q tag; no FCS (as DPDK delivers).
 * Returns the ethertype, -1 if the frame is too short. */
static int parse_l2(const uint8_t *frame, uint32_t len, struct dpv_pkt_info *pi)
{
	if (len < DPV_ETH_HLEN)
		return -1;
	memcpy(pi->dst_mac, frame, 6);
	memcpy(pi->src_mac, frame + 6, 6);
	uint16_t etype = ld16(frame + 12);
	uint32_t l3 = DPV_ETH_HLEN;
	if (etype == ETH_P_8021Q) {
		if (len < DPV_ETH_HLEN + DPV_VLAN_HLEN)
			return -1;
		pi->vlan = true;
		pi->vlan_tci = ld16(frame + 14);
		etype = ld16(frame + 16);
		l3 += DPV_VLAN_HLEN;
	}
	pi->l3_off = (uint16_t)l3;
	return etype;
}

bool dpv_pkt_is_roce(const uint8_t *frame, uint32_t len)
{
	uint32_t l3 = DPV_ETH_HLEN;
	if (len < DPV_ETH_HLEN)
		return false;
	uint16_t etype = ld16(frame + 12);
	if (etype == ETH_P_8021Q) {
		if (len < DPV_ETH_HLEN + DPV_VLAN_HLEN)
			return false;
		etype = ld16(frame + 16);
		l3 += DPV_VLAN_HLEN;
	}
	const uint8_t *ip = frame + l3;
	if (etype == ETH_P_IPV4 && len >= l3 + DPV_IPV4_HLEN) {
		uint32_t ihl = (uint32_t)(ip[0] & 0xf) * 4;
		return ihl >= DPV_IPV4_HLEN && ip[9] == IPPROTO_UDP_ &&
		       !(ld16(ip + 6) & (IPV4_MF | IPV4_FRAG_OFF)) && len >= l3 + ihl + 4 &&
		       ld16(ip + ihl + 2) == DPV_ROCEV2_UDP_PORT;
	}
	if (etype == ETH_P_IPV6 && len >= l3 + DPV_IPV6_HLEN + 4)
		return ip[6] == IPPROTO_UDP_ && ld16(ip + DPV_IPV6_HLEN + 2) == DPV_ROCEV2_UDP_PORT;
	return false;
}

/* IPv4 header at pi->l3_off: sets l4_off and frame_len (end of the IP
 * packet: Ethernet padding beyond it is ignored). */
static int parse_ipv4(const uint8_t *frame, uint32_t len, struct dpv_pkt_info *pi, bool csum)
{
	uint32_t l3 = pi->l3_off;
	const uint8_t *ip = frame + l3;
	if (len < l3 + DPV_IPV4_HLEN)
		return DPV_PARSE_SHORT;
	uint32_t ihl = (uint32_t)(ip[0] & 0xf) * 4;
	if ((ip[0] >> 4) != 4 || ihl < DPV_IPV4_HLEN)
		return DPV_PARSE_BAD_IP;
	if (len < l3 + ihl)
		return DPV_PARSE_SHORT;
	if (csum && dpv_ipv4_cksum(ip) != 0)
		return DPV_PARSE_BAD_IP;
	/* RoCEv2 is sent with DF and never fragmented (IBA annex A17) */
	if (ld16(ip + 6) & (IPV4_MF | IPV4_FRAG_OFF))
		return DPV_PARSE_BAD_IP;
	if (ip[9] != IPPROTO_UDP_)
		return DPV_PARSE_NOT_ROCE;
	uint32_t tot = ld16(ip + 2);
	if (tot < ihl)
		return DPV_PARSE_BAD_IP;
	if (tot < ihl + DPV_UDP_HLEN || len - l3 < tot)
		return DPV_PARSE_SHORT;
	pi->ip_ver = 4;
	ipv4_mapped(pi->sgid, ip + 12);
	ipv4_mapped(pi->dgid, ip + 16);
	pi->tclass = ip[1];
	pi->hop_limit = ip[8];
	pi->ip_id = ld16(ip + 4);
	pi->l4_off = (uint16_t)(l3 + ihl);
	pi->frame_len = l3 + tot;
	return DPV_PARSE_OK;
}

/* IPv6 header at pi->l3_off (no extension headers: RoCEv2 senders do not
 * use them). */
static int parse_ipv6(const uint8_t *frame, uint32_t len, struct dpv_pkt_info *pi)
{
	uint32_t l3 = pi->l3_off;
	const uint8_t *ip = frame + l3;
	if (len < l3 + DPV_IPV6_HLEN)
		return DPV_PARSE_SHORT;
	if ((ip[0] >> 4) != 6)
		return DPV_PARSE_BAD_IP;
	if (ip[6] != IPPROTO_UDP_)
		return DPV_PARSE_NOT_ROCE;
	uint32_t ip_plen = ld16(ip + 4);
	if (ip_plen < DPV_UDP_HLEN || len - l3 - DPV_IPV6_HLEN < ip_plen)
		return DPV_PARSE_SHORT;
	pi->ip_ver = 6;
	memcpy(pi->sgid, ip + 8, 16);
	memcpy(pi->dgid, ip + 24, 16);
	pi->tclass = (uint8_t)(ld16(ip) >> 4);
	pi->flow_label = ld32(ip) & 0xfffff;
	pi->hop_limit = ip[7];
	pi->l4_off = (uint16_t)(l3 + DPV_IPV6_HLEN);
	pi->frame_len = pi->l4_off + ip_plen;
	return DPV_PARSE_OK;
}

/* UDP: destination port 4791 identifies RoCEv2 (IBA annex A17), and the
 * datagram fills the IP payload exactly. Returns bytes from BTH to the end
 * of the ICRC in *data. */
static int parse_udp(const uint8_t *frame, struct dpv_pkt_info *pi, uint32_t *data)
{
	const uint8_t *udp = frame + pi->l4_off;
	pi->udp_sport = ld16(udp);
	pi->udp_dport = ld16(udp + 2);
	if (pi->udp_dport != DPV_ROCEV2_UDP_PORT)
		return DPV_PARSE_NOT_ROCE;
	uint32_t udp_len = ld16(udp + 4);
	if (udp_len != pi->frame_len - pi->l4_off)
		return DPV_PARSE_BAD_UDP;
	pi->bth_off = (uint16_t)(pi->l4_off + DPV_UDP_HLEN);
	*data = udp_len - DPV_UDP_HLEN;
	return DPV_PARSE_OK;
}

/* BTH, extension headers, payload and pad; data = bytes from BTH to the end
 * of the ICRC. */
static int parse_bth(const uint8_t *frame, struct dpv_pkt_info *pi, uint32_t data)
{
	const uint8_t *bth = frame + pi->bth_off;
	if (data < DPV_BTH_LEN + DPV_ICRC_LEN)
		return DPV_PARSE_SHORT;
	pi->opcode = __bth_opcode(bth);
	pi->se = __bth_se(bth);
	pi->mig = __bth_mig(bth);
	pi->padcnt = __bth_pad(bth);
	pi->tver = __bth_tver(bth);
	pi->pkey = __bth_pkey(bth);
	pi->fecn = __bth_fecn(bth);
	pi->becn = __bth_becn(bth);
	pi->dqpn = __bth_qpn(bth);
	pi->ackreq = __bth_ack(bth);
	pi->psn = __bth_psn(bth);
	if (pi->tver != 0) /* IBA 9.2 (TVer): only version 0 is defined */
		return DPV_PARSE_BAD_TVER;
	if (!dpv_opcode_valid(pi->opcode))
		return DPV_PARSE_BAD_OPCODE;
	const struct dpv_opcode_info *oi = &dpv_opcode_table[pi->opcode];
	pi->mask = oi->mask;
	if (data < (uint32_t)oi->hdr_len + DPV_ICRC_LEN)
		return DPV_PARSE_SHORT;
	uint32_t tail = data - oi->hdr_len - DPV_ICRC_LEN; /* payload + pad */
	/*
	 * IBA 9.2 (PadCnt): pad bytes align the payload to 4 bytes, so payload
	 * plus pad is a multiple of 4 and the pad never exceeds the payload;
	 * opcodes without a payload carry neither (IBA 9.6 packet length checks).
	 */
	if (pi->padcnt > tail || (tail & 3) != 0 || (!(oi->mask & DPV_HDR_PAYLOAD) && tail != 0))
		return DPV_PARSE_BAD_PAD;
	pi->payload_off = pi->bth_off + oi->hdr_len;
	pi->payload_len = tail - pi->padcnt;
	parse_ext_hdrs(bth, pi);
	const uint8_t *ic = frame + pi->frame_len - DPV_ICRC_LEN;
	pi->icrc = (uint32_t)ic[0] | (uint32_t)ic[1] << 8 | (uint32_t)ic[2] << 16 | (uint32_t)ic[3] << 24;
	return DPV_PARSE_OK;
}

static int pkt_parse(const uint8_t *frame, uint32_t len, struct dpv_pkt_info *pi, bool csum)
{
	uint32_t data;
	int r;

	memset(pi, 0, sizeof(*pi));
	int etype = parse_l2(frame, len, pi);
	if (etype < 0)
		return DPV_PARSE_SHORT;
	if (etype == ETH_P_IPV4)
		r = parse_ipv4(frame, len, pi, csum);
	else if (etype == ETH_P_IPV6)
		r = parse_ipv6(frame, len, pi);
	else
		r = DPV_PARSE_NOT_ROCE;
	if (r == DPV_PARSE_OK)
		r = parse_udp(frame, pi, &data);
	if (r == DPV_PARSE_OK)
		r = parse_bth(frame, pi, data);
	return r;
}

int dpv_pkt_parse(const uint8_t *frame, uint32_t len, struct dpv_pkt_info *pi)
{
	return pkt_parse(frame, len, pi, true);
}

int dpv_pkt_parse_trusted(const uint8_t *frame, uint32_t len, struct dpv_pkt_info *pi)
{
	return pkt_parse(frame, len, pi, false);
}

int dpv_pkt_parse_check(const uint8_t *frame, uint32_t len, struct dpv_pkt_info *pi)
{
	int ret = dpv_pkt_parse(frame, len, pi);

	if (ret != DPV_PARSE_OK)
		return ret;
	/* IBA A17.3.3 */
	if (dpv_icrc_compute(frame + pi->l3_off,
			     pi->frame_len - pi->l3_off - DPV_ICRC_LEN) != pi->icrc)
		return DPV_PARSE_BAD_ICRC;
	return DPV_PARSE_OK;
}

/* ---- build ---- */
static uint32_t ip_hlen(uint8_t ip_ver)
{
	return ip_ver == 4 ? DPV_IPV4_HLEN : ip_ver == 6 ? DPV_IPV6_HLEN : 0;
}

uint32_t dpv_pkt_hdr_len(uint8_t opcode, uint8_t ip_ver)
{
	if (!dpv_opcode_valid(opcode) || ip_hlen(ip_ver) == 0)
		return 0;
	return DPV_ETH_HLEN + ip_hlen(ip_ver) + DPV_UDP_HLEN +
	       dpv_opcode_table[opcode].hdr_len;
}

static inline uint32_t pad_of(uint32_t paylen)
{
	return (4 - (paylen & 3)) & 3; /* IBA 9.2: PadCnt */
}

uint32_t dpv_pkt_frame_len(uint8_t opcode, uint8_t ip_ver, uint32_t paylen)
{
	uint32_t h = dpv_pkt_hdr_len(opcode, ip_ver);

	if (h == 0)
		return 0;
	return h + paylen + pad_of(paylen) + DPV_ICRC_LEN;
}

static void build_ext_hdrs(uint8_t *bth, const struct dpv_pkt_build *b)
{
	const struct dpv_opcode_info *oi = &dpv_opcode_table[b->opcode];

	if (oi->mask & DPV_HDR_XRCETH) {
		bth[oi->off_xrceth] = 0;
		st24(bth + oi->off_xrceth + 1, b->xrc_srqn);
	}
	if (oi->mask & DPV_HDR_DETH) {
		st32(bth + oi->off_deth, b->deth_qkey);
		bth[oi->off_deth + 4] = 0;
		st24(bth + oi->off_deth + 5, b->deth_sqpn);
	}
	if (oi->mask & DPV_HDR_FETH) {
		memset(bth + oi->off_feth, 0, 3);
		bth[oi->off_feth + 3] = (uint8_t)(((b->feth_sel << DPV_FETH_SEL_SHIFT) & DPV_FETH_SEL_MASK) |
						  (b->feth_plt & DPV_FETH_PLT_MASK));
	}
	if (oi->mask & DPV_HDR_RETH) {
		st64(bth + oi->off_reth, b->reth_va);
		st32(bth + oi->off_reth + 8, b->reth_rkey);
		st32(bth + oi->off_reth + 12, b->reth_len);
	}
	if (oi->mask & DPV_HDR_ATMETH) {
		st64(bth + oi->off_atmeth, b->atm_va);
		st32(bth + oi->off_atmeth + 8, b->atm_rkey);
		st64(bth + oi->off_atmeth + 12, b->atm_swap_add);
		st64(bth + oi->off_atmeth + 20, b->atm_cmp);
	}
	if (oi->mask & DPV_HDR_AETH) {
		bth[oi->off_aeth] = b->aeth_syndrome;
		st24(bth + oi->off_aeth + 1, b->aeth_msn);
	}
	if (oi->mask & DPV_HDR_ATMACK)
		st64(bth + oi->off_atmack, b->atmack_orig);
	if (oi->mask & DPV_HDR_IMMDT)
		st32(bth + oi->off_immdt, b->immdt);
	if (oi->mask & DPV_HDR_IETH)
		st32(bth + oi->off_ieth, b->ieth_rkey);
}

uint32_t dpv_pkt_build_hdrs(uint8_t *buf, const struct dpv_pkt_build *b, uint32_t paylen)
{
	const struct dpv_opcode_info *oi;
	uint32_t iphl = ip_hlen(b->ip_ver);
	uint32_t pad = pad_of(paylen);
	uint32_t udp_len, l4;
	uint8_t *ip, *udp, *bth;

	if (!dpv_opcode_valid(b->opcode) || iphl == 0)
		return 0;
	oi = &dpv_opcode_table[b->opcode];
	udp_len = DPV_UDP_HLEN + oi->hdr_len + paylen + pad + DPV_ICRC_LEN;
	if (udp_len + iphl > 0xffff)
		return 0;

	memcpy(buf, b->dst_mac, 6);
	memcpy(buf + 6, b->src_mac, 6);
	st16(buf + 12, b->ip_ver == 4 ? ETH_P_IPV4 : ETH_P_IPV6);

	ip = buf + DPV_ETH_HLEN;
	if (b->ip_ver == 4) {
		uint16_t tot = (uint16_t)(iphl + udp_len);
		uint32_t sa = ld32(b->sgid + 12), da = ld32(b->dgid + 12); /* ::ffff:a.b.c.d */
		ip[0] = 0x45;
		ip[1] = b->tclass;
		st16(ip + 2, tot);
		st16(ip + 4, b->ip_id);
		st16(ip + 6, IPV4_DF); /* IBA annex A17: do not fragment */
		ip[8] = b->hop_limit;
		ip[9] = IPPROTO_UDP_;
		st32(ip + 12, sa);
		st32(ip + 16, da);
		/* RFC 1071 over the header's 16-bit words, from the values (reading
		 * the bytes just stored back would stall store forwarding) */
		uint32_t sum = (0x4500u | b->tclass) + tot + b->ip_id + IPV4_DF +
			       ((uint32_t)b->hop_limit << 8 | IPPROTO_UDP_) + (sa >> 16) + (sa & 0xffff) +
			       (da >> 16) + (da & 0xffff);
		sum = (sum & 0xffff) + (sum >> 16);
		sum = (sum & 0xffff) + (sum >> 16);
		st16(ip + 10, (uint16_t)~sum);
	} else {
		st32(ip, 6u << 28 | (uint32_t)b->tclass << 20 | (b->flow_label & 0xfffff));
		st16(ip + 4, (uint16_t)udp_len);
		ip[6] = IPPROTO_UDP_;
		ip[7] = b->hop_limit;
		memcpy(ip + 8, b->sgid, 16);
		memcpy(ip + 24, b->dgid, 16);
	}

	/* UDP checksum 0: not used by RoCEv2, the ICRC covers the packet
	 * (IBA annex A17; also over IPv6, as rxe and NICs send it). */
	l4 = DPV_ETH_HLEN + iphl;
	udp = buf + l4;
	st16(udp, b->udp_sport);
	st16(udp + 2, DPV_ROCEV2_UDP_PORT);
	st16(udp + 4, (uint16_t)udp_len);
	st16(udp + 6, 0);

	bth = udp + DPV_UDP_HLEN;
	bth[0] = b->opcode;
	bth[1] = (uint8_t)((b->se ? 0x80 : 0) | (b->mig ? 0x40 : 0) | pad << 4); /* TVer 0 */
	st16(bth + 2, b->pkey);
	bth[4] = 0; /* FECN/BECN are set by the network, resv6 is 0 */
	st24(bth + 5, b->dqpn);
	bth[8] = b->ackreq ? 0x80 : 0;
	st24(bth + 9, b->psn);
	build_ext_hdrs(bth, b);
	return l4 + DPV_UDP_HLEN + oi->hdr_len;
}

void dpv_pkt_finish(uint8_t *buf, uint32_t frame_len)
{
	uint32_t l3 = DPV_ETH_HLEN, l4, pad, icrc_off;
	uint16_t etype = ld16(buf + 12);
	uint32_t crc;

	if (etype == ETH_P_8021Q) {
		l3 += DPV_VLAN_HLEN;
		etype = ld16(buf + 16);
	}
	if (etype == ETH_P_IPV4)
		l4 = l3 + (uint32_t)(buf[l3] & 0xf) * 4;
	else
		l4 = l3 + DPV_IPV6_HLEN;
	pad = __bth_pad(buf + l4 + DPV_UDP_HLEN);
	icrc_off = frame_len - DPV_ICRC_LEN;
	memset(buf + icrc_off - pad, 0, pad);
	crc = dpv_icrc_compute(buf + l3, icrc_off - l3);
	buf[icrc_off] = (uint8_t)crc;
	buf[icrc_off + 1] = (uint8_t)(crc >> 8);
	buf[icrc_off + 2] = (uint8_t)(crc >> 16);
	buf[icrc_off + 3] = (uint8_t)(crc >> 24);
}
