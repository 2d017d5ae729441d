/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpverbs wire format: RoCEv2 (Ethernet / IPv4|IPv6 / UDP 4791 / BTH / ext /
 * payload / pad / ICRC).
 *
 * Two-level accessors in the style of rxe_hdr.h: __bth_psn(void *bth) works
 * on a raw header, the struct dpv_pkt_info carries parsed values and the
 * offsets of every extension header found through the opcode table.
 * No bitfields; every multi-byte field is big endian on the wire.
 */
#ifndef DPV_WIRE_H
#define DPV_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define DPV_ROCEV2_UDP_PORT 4791
#define DPV_MAC_LEN 6
#define DPV_GID_LEN 16
#define DPV_DEFAULT_HOP_LIMIT 64  /* IPv4 TTL / IPv6 hop limit when the AV says 0 */

/* ---- PSN arithmetic (IBA 9.7.1: 24-bit sequence numbers, modulo 2^24) ---- */
#define DPV_PSN_MASK 0xffffffu
#define DPV_QPN_MASK 0xffffffu
/** a + n modulo 2^24 */
static inline uint32_t dpv_psn_add(uint32_t a, uint32_t n) { return (a + n) & DPV_PSN_MASK; }
/** a - 1 modulo 2^24 */
static inline uint32_t dpv_psn_prev(uint32_t a) { return (a + DPV_PSN_MASK) & DPV_PSN_MASK; }
/** Signed distance a - b in the 24-bit window: < 0 when a is before b. */
static inline int32_t dpv_psn_cmp(uint32_t a, uint32_t b) { return ((int32_t)((a - b) << 8)) >> 8; }

/** Is a GID IPv4-mapped (::ffff:a.b.c.d)? */
static inline bool dpv_gid_is_v4mapped(const uint8_t *gid)
{
	uint64_t hi;
	uint32_t mid;
	__builtin_memcpy(&hi, gid, 8);
	__builtin_memcpy(&mid, gid + 8, 4);
	/* bytes 8..11 are 00 00 ff ff whatever the host byte order */
	static const uint8_t ffff[4] = {0, 0, 0xff, 0xff};
	uint32_t want;
	__builtin_memcpy(&want, ffff, 4);
	return hi == 0 && mid == want;
}

/** Is a GID a multicast group: IPv4-mapped 224.0.0.0/4, or ff00::/8
 *  (Linux rdma_is_multicast_addr)? */
static inline bool dpv_gid_is_mcast(const uint8_t *gid)
{
	return dpv_gid_is_v4mapped(gid) ? (gid[12] & 0xf0) == 0xe0 : gid[0] == 0xff;
}

/** The Ethernet address of multicast GID gid: 01:00:5e and the low 23
 *  bits of the IPv4 group (RFC 1112 6.4), 33:33 and the last 32 bits of
 *  the IPv6 one (RFC 2464 7). */
static inline void dpv_gid_mcast_mac(const uint8_t *gid, uint8_t mac[6])
{
	if (dpv_gid_is_v4mapped(gid)) {
		mac[0] = 0x01, mac[1] = 0x00, mac[2] = 0x5e;
		mac[3] = gid[13] & 0x7f, mac[4] = gid[14], mac[5] = gid[15];
	} else {
		mac[0] = 0x33, mac[1] = 0x33;
		mac[2] = gid[12], mac[3] = gid[13], mac[4] = gid[14], mac[5] = gid[15];
	}
}
#define DPV_ETH_HLEN 14
#define DPV_IPV4_HLEN 20
#define DPV_IPV6_HLEN 40
#define DPV_UDP_HLEN 8
#define DPV_ICRC_LEN 4
#define DPV_GRH_LEN 40

/* Extension header lengths (IBA 9.3). */
#define DPV_BTH_LEN 12
#define DPV_DETH_LEN 8
#define DPV_RETH_LEN 16
#define DPV_AETH_LEN 4
#define DPV_IMMDT_LEN 4
#define DPV_IETH_LEN 4
#define DPV_ATMETH_LEN 28
#define DPV_ATMACK_LEN 8
#define DPV_XRCETH_LEN 4
#define DPV_FETH_LEN 4     /* FLUSH extended transport header (IBA 1.5 annex A19) */

/* Header presence mask bits (one per header kind). */
enum dpv_hdr_mask {
	DPV_HDR_BTH = 1u << 0,
	DPV_HDR_DETH = 1u << 1,
	DPV_HDR_RETH = 1u << 2,
	DPV_HDR_AETH = 1u << 3,
	DPV_HDR_IMMDT = 1u << 4,
	DPV_HDR_IETH = 1u << 5,
	DPV_HDR_ATMETH = 1u << 6,
	DPV_HDR_ATMACK = 1u << 7,
	DPV_HDR_XRCETH = 1u << 8,
	DPV_HDR_PAYLOAD = 1u << 9, /* opcode carries a payload */
	/* packet role */
	DPV_OP_REQ = 1u << 10,  /* request (to responder) */
	DPV_OP_RESP = 1u << 11, /* response (ACK/read resp/atomic ack) */
	DPV_OP_START = 1u << 12, /* FIRST or ONLY */
	DPV_OP_MIDDLE = 1u << 13,
	DPV_OP_END = 1u << 14,   /* LAST or ONLY */
	DPV_OP_SEND = 1u << 15,
	DPV_OP_WRITE = 1u << 16,
	DPV_OP_READ = 1u << 17,
	DPV_OP_ATOMIC = 1u << 18,
	DPV_OP_COMP = 1u << 19, /* generates a receive completion */
	DPV_OP_ATOMIC_WRITE = 1u << 20, /* RDMA ATOMIC WRITE (IBA 1.5 annex A19) */
	DPV_OP_FLUSH = 1u << 21,        /* RDMA FLUSH (IBA 1.5 annex A19) */
	DPV_HDR_FETH = 1u << 22,        /* FLUSH extended transport header */
};

/* Transport (upper 3 bits of the opcode) and operation (lower 5 bits).
 * IBA 9.2.1 table 35. */
#define DPV_OPC_TR_MASK 0xe0u
#define DPV_OPC_OP_MASK 0x1fu
enum dpv_transport {
	DPV_TR_RC = 0x00,
	DPV_TR_UC = 0x20,
	DPV_TR_RD = 0x40,
	DPV_TR_UD = 0x60,
	DPV_TR_CNP = 0x80,
	DPV_TR_XRC = 0xa0,
};

/* Wire opcodes (IBA 9.2.1 table 35), names as in the spec. */
enum dpv_opcode {
	DPV_OPC_SEND_FIRST = 0x00,
	DPV_OPC_SEND_MIDDLE = 0x01,
	DPV_OPC_SEND_LAST = 0x02,
	DPV_OPC_SEND_LAST_IMM = 0x03,
	DPV_OPC_SEND_ONLY = 0x04,
	DPV_OPC_SEND_ONLY_IMM = 0x05,
	DPV_OPC_WRITE_FIRST = 0x06,
	DPV_OPC_WRITE_MIDDLE = 0x07,
	DPV_OPC_WRITE_LAST = 0x08,
	DPV_OPC_WRITE_LAST_IMM = 0x09,
	DPV_OPC_WRITE_ONLY = 0x0a,
	DPV_OPC_WRITE_ONLY_IMM = 0x0b,
	DPV_OPC_READ_REQUEST = 0x0c,
	DPV_OPC_READ_RESP_FIRST = 0x0d,
	DPV_OPC_READ_RESP_MIDDLE = 0x0e,
	DPV_OPC_READ_RESP_LAST = 0x0f,
	DPV_OPC_READ_RESP_ONLY = 0x10,
	DPV_OPC_ACK = 0x11,
	DPV_OPC_ATOMIC_ACK = 0x12,
	DPV_OPC_CMP_SWAP = 0x13,
	DPV_OPC_FETCH_ADD = 0x14,
	DPV_OPC_SEND_LAST_INV = 0x16,
	DPV_OPC_SEND_ONLY_INV = 0x17,
	DPV_OPC_FLUSH = 0x1c,        /* RC only: BTH FETH RETH, no payload */
	DPV_OPC_ATOMIC_WRITE = 0x1d, /* RC only: BTH RETH, 8 bytes of payload */
	/* OR with a transport for UC/UD/XRC: e.g. DPV_TR_UD | DPV_OPC_SEND_ONLY */
};

/* FETH (IBA 1.5 annex A19, as Linux rxe: rxe_hdr.h): 26 reserved bits,
 * the selectivity level (2 bits), the placement type (4 bits): the last
 * byte is level << 4 | type. Placement type bits and selectivity levels
 * have rdma-core's values (IBV_FLUSH_GLOBAL ..., IBV_FLUSH_RANGE ...). */
#define DPV_FETH_PLT_MASK 0x0fu
#define DPV_FETH_SEL_SHIFT 4
#define DPV_FETH_SEL_MASK 0x30u
#define DPV_FLUSH_PLT_GLOBAL 1u      /* global visibility */
#define DPV_FLUSH_PLT_PERSISTENT 2u  /* persistence */
#define DPV_FLUSH_SEL_RANGE 0u       /* the RETH's range */
#define DPV_FLUSH_SEL_MR 1u          /* the whole memory region of the R_Key */

/* AETH syndrome (IBA 9.7.5.1, table 43): type in bits 7..5, value in 4..0. */
#define DPV_AETH_TYPE_MASK 0xe0u
#define DPV_AETH_ACK 0x00u          /* value: credit count */
#define DPV_AETH_RNR_NAK 0x20u      /* value: RNR timer (table 45) */
#define DPV_AETH_NAK 0x60u          /* value: NAK code (table 44) */
#define DPV_AETH_NAK_PSN_SEQ 0x60u  /* PSN sequence error */
#define DPV_AETH_NAK_INV_REQ 0x61u  /* invalid request */
#define DPV_AETH_NAK_REM_ACC 0x62u  /* remote access error */
#define DPV_AETH_NAK_REM_OP 0x63u   /* remote operational error */
#define DPV_AETH_NAK_INV_RD 0x64u   /* invalid RD request */
#define DPV_AETH_CREDIT_INVALID 0x1fu /* "invalid" credit count: no end-to-end flow control, as rxe */

/* One entry per wire opcode (256 entries, indexed by the BTH opcode). */
struct dpv_opcode_info {
	const char *name;     /* e.g. "IB_OPCODE_UD_SEND_ONLY"; NULL: invalid */
	uint32_t mask;        /* enum dpv_hdr_mask bits */
	uint8_t hdr_len;      /* BTH + all extension headers, bytes */
	/* offset of each extension header from the start of BTH, 0 if absent */
	uint8_t off_deth, off_reth, off_aeth, off_immdt, off_ieth, off_atmeth,
		off_atmack, off_xrceth, off_feth, off_payload;
};

extern const struct dpv_opcode_info dpv_opcode_table[256];

static inline bool dpv_opcode_valid(uint8_t opcode)
{
	return dpv_opcode_table[opcode].name != NULL;
}

/* ---- BTH raw accessors (IBA 9.2) ---- */
static inline uint8_t __bth_opcode(const void *bth) { return ((const uint8_t *)bth)[0]; }
static inline bool __bth_se(const void *bth) { return ((const uint8_t *)bth)[1] & 0x80; }
static inline bool __bth_mig(const void *bth) { return ((const uint8_t *)bth)[1] & 0x40; }
static inline uint8_t __bth_pad(const void *bth) { return (((const uint8_t *)bth)[1] >> 4) & 3; }
static inline uint8_t __bth_tver(const void *bth) { return ((const uint8_t *)bth)[1] & 0xf; }
static inline uint16_t __bth_pkey(const void *bth)
{
	const uint8_t *b = (const uint8_t *)bth;
	return (uint16_t)(b[2] << 8 | b[3]);
}
static inline bool __bth_fecn(const void *bth) { return ((const uint8_t *)bth)[4] & 0x80; }
static inline bool __bth_becn(const void *bth) { return ((const uint8_t *)bth)[4] & 0x40; }
static inline uint32_t __bth_qpn(const void *bth)
{
	const uint8_t *b = (const uint8_t *)bth;
	return (uint32_t)b[5] << 16 | (uint32_t)b[6] << 8 | b[7];
}
static inline bool __bth_ack(const void *bth) { return ((const uint8_t *)bth)[8] & 0x80; }
static inline uint32_t __bth_psn(const void *bth)
{
	const uint8_t *b = (const uint8_t *)bth;
	return (uint32_t)b[9] << 16 | (uint32_t)b[10] << 8 | b[11];
}

/* ---- Parsed packet ---- */
struct dpv_pkt_info {
	/* L2 */
	uint8_t dst_mac[6];
	uint8_t src_mac[6];
	uint16_t vlan_tci;      /* 0 if untagged */
	bool vlan;
	/* L3: GIDs are IPv4-mapped (::ffff:a.b.c.d) for IPv4 */
	uint8_t ip_ver;         /* 4 or 6 */
	uint8_t sgid[16];
	uint8_t dgid[16];
	uint8_t tclass;         /* IPv4 TOS or IPv6 traffic class */
	uint8_t hop_limit;      /* TTL or hop limit */
	uint32_t flow_label;    /* IPv6 only, 0 for IPv4 */
	uint16_t ip_id;         /* IPv4 identification, 0 for IPv6 */
	/* L4 */
	uint16_t udp_sport;
	uint16_t udp_dport;
	/* offsets into the frame */
	uint16_t l3_off;        /* IP header */
	uint16_t l4_off;        /* UDP header */
	uint16_t bth_off;       /* BTH */
	uint32_t frame_len;     /* bytes in the frame as parsed (trailer cut) */
	/* BTH */
	uint8_t opcode;
	bool se, mig, fecn, becn, ackreq;
	uint8_t padcnt;
	uint8_t tver;
	uint16_t pkey;
	uint32_t dqpn;          /* 24 bits */
	uint32_t psn;           /* 24 bits */
	uint32_t mask;          /* dpv_opcode_table[opcode].mask */
	/* extension headers, valid when the mask says so */
	uint32_t deth_qkey, deth_sqpn;
	uint64_t reth_va;
	uint32_t reth_rkey, reth_len;
	uint8_t aeth_syndrome;
	uint32_t aeth_msn;
	uint32_t immdt;         /* host order value of the 4 wire bytes (be32toh) */
	uint32_t ieth_rkey;
	uint64_t atm_va;
	uint32_t atm_rkey;
	uint64_t atm_swap_add, atm_cmp;
	uint64_t atmack_orig;
	uint32_t xrc_srqn;
	uint8_t feth_plt, feth_sel; /* FETH: placement type, selectivity level */
	/* payload (after all headers, before pad) */
	uint32_t payload_off;   /* from frame start */
	uint32_t payload_len;   /* without pad and ICRC */
	uint32_t icrc;          /* ICRC as found in the frame (wire bytes, LE) */
};

/* Parse results: 0 or one of these (negative). */
enum dpv_parse_err {
	DPV_PARSE_OK = 0,
	DPV_PARSE_NOT_ROCE = -1,  /* not IPv4/IPv6 UDP to 4791 (ARP etc.) */
	DPV_PARSE_SHORT = -2,     /* truncated frame or length fields too short */
	DPV_PARSE_BAD_IP = -3,    /* IP version/IHL/length/checksum wrong */
	DPV_PARSE_BAD_UDP = -4,   /* UDP length inconsistent */
	DPV_PARSE_BAD_OPCODE = -5,/* opcode not in the table */
	DPV_PARSE_BAD_TVER = -6,  /* BTH transport header version != 0 */
	DPV_PARSE_BAD_PAD = -7,   /* pad count larger than the payload, payload+pad
	                           * not a multiple of 4, or payload bytes on an
	                           * opcode without payload (ACK, READ REQ, atomics,
	                           * FLUSH) */
	DPV_PARSE_BAD_ICRC = -8,  /* ICRC mismatch (only from dpv_pkt_parse_check) */
	DPV_PARSE_NERR = 9,
};
const char *dpv_parse_err_str(int err);

/*
 * Parse an Ethernet frame (no FCS; one 802.1Q tag allowed; IPv4 options are
 * skipped; no IPv6 extension headers). Bytes after the IP packet (Ethernet
 * padding) are ignored: pi->frame_len is where the IP packet ends.
 * Does not check the ICRC. pi is zeroed first and filled as far as parsing
 * got, also on error. Never reads beyond frame[len - 1].
 */
int dpv_pkt_parse(const uint8_t *frame, uint32_t len, struct dpv_pkt_info *pi);
/* As dpv_pkt_parse, with every structural check, but without the IPv4
 * header checksum: for frames this process built that never left it
 * (software loopback), or frames already checked. */
int dpv_pkt_parse_trusted(const uint8_t *frame, uint32_t len, struct dpv_pkt_info *pi);
/*
 * Is the frame a RoCEv2 candidate: IPv4 (not a fragment) or IPv6 (UDP as
 * the next header) carrying UDP to port 4791, after at most one 802.1Q tag?
 * Cheap, no checksum: what an exception path asks before it hands a frame
 * to the kernel (everything else is the kernel's); candidates are then
 * parsed and checked in full.
 */
bool dpv_pkt_is_roce(const uint8_t *frame, uint32_t len);
/* Parse and verify the ICRC. */
int dpv_pkt_parse_check(const uint8_t *frame, uint32_t len, struct dpv_pkt_info *pi);

/* ---- Build ---- */
struct dpv_pkt_build {
	uint8_t dst_mac[6], src_mac[6];
	uint8_t ip_ver;         /* 4 or 6; for 4 the GIDs must be IPv4-mapped */
	uint8_t sgid[16], dgid[16];
	uint8_t tclass, hop_limit;
	uint32_t flow_label;
	uint16_t ip_id;         /* IPv4 identification (rxe: nonzero; 0 is fine with DF) */
	uint16_t udp_sport;
	uint8_t opcode;
	bool se, mig, ackreq;
	uint16_t pkey;
	uint32_t dqpn, psn;
	/* extension headers; only the ones the opcode has are written */
	uint32_t deth_qkey, deth_sqpn;
	uint64_t reth_va;
	uint32_t reth_rkey, reth_len;
	uint8_t aeth_syndrome;
	uint32_t aeth_msn;
	uint32_t immdt;         /* written as htobe32(immdt) */
	uint32_t ieth_rkey;
	uint64_t atm_va;
	uint32_t atm_rkey;
	uint64_t atm_swap_add, atm_cmp;
	uint64_t atmack_orig;
	uint32_t xrc_srqn;
	uint8_t feth_plt, feth_sel; /* FETH: placement type (4 bits), selectivity level (2 bits) */
};

/* Bytes of Ethernet+IP+UDP+BTH+ext headers for this opcode/IP version. */
uint32_t dpv_pkt_hdr_len(uint8_t opcode, uint8_t ip_ver); /* 0: invalid */
/* Total frame length for a payload (headers + payload + pad + ICRC). */
uint32_t dpv_pkt_frame_len(uint8_t opcode, uint8_t ip_ver, uint32_t paylen); /* 0: invalid */

/*
 * Write every header into buf (which must hold dpv_pkt_frame_len bytes):
 * Ethernet, IPv4 (DF, header checksum computed) or IPv6, UDP (checksum 0),
 * BTH (pad count from paylen), extension headers. Returns the payload offset.
 * The caller then copies paylen payload bytes at buf + return value and calls
 * dpv_pkt_finish(), which zeroes the pad and writes the ICRC.
 * Returns 0 for an invalid opcode or ip_ver, or an IP packet over 64 KiB.
 * IPv4 identification is b->ip_id; FECN/BECN and reserved bits are 0.
 */
uint32_t dpv_pkt_build_hdrs(uint8_t *buf, const struct dpv_pkt_build *b, uint32_t paylen);
void dpv_pkt_finish(uint8_t *buf, uint32_t frame_len);

/* ---- ICRC (IBA A17.3.3) ---- */
/* CRC-32 (reflected 0xEDB88320), raw update without pre/post inversion. */
uint32_t dpv_crc32_update(uint32_t crc, const void *buf, size_t len);
/*
 * ICRC of a RoCEv2 packet given its IP header at l3 and the number of bytes
 * from the IP header up to (not including) the ICRC. Returns the value whose
 * little-endian bytes are the 4 ICRC bytes on the wire.
 */
uint32_t dpv_icrc_compute(const uint8_t *l3, uint32_t len_to_icrc);

/*
 * Internet checksum of an IPv4 header (IHL*4 bytes), host order: with the
 * checksum field zeroed it is the value to store (big endian) at byte 10;
 * over a header that carries its checksum it is 0 when the header is valid.
 */
uint16_t dpv_ipv4_cksum(const void *iphdr);

#ifdef __cplusplus
}
#endif
#endif /* DPV_WIRE_H */
