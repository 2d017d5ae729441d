/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * dpverbs test library, wire part (libdpvtest_wire.a): classic pcap files
 * and test frames built with lib/wire. Linked by the unit tests of lib/wire,
 * gen_pcap and the white-box receive-path test; depends on dpvt_check.h and
 * lib/wire (dpv_wire.h) only.
 */
#ifndef DPVT_WIRE_H
#define DPVT_WIRE_H

#include <stdint.h>
#include <stdio.h>

#include "dpv_wire.h"
#include "dpvt_check.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- classic pcap (LINKTYPE_ETHERNET) ---- */

/** One packet read from a pcap file. */
struct dpvt_pkt {
	uint8_t *data;    /**< captured bytes (malloc'd) */
	uint32_t len;     /**< captured length */
	uint32_t wirelen; /**< original length on the wire */
};

/**
 * Reads every packet of a classic pcap file (either byte order, micro- or
 * nanosecond magic, link type Ethernet only).
 * @param path file to read
 * @param[out] out array of packets, free with dpvt_pcap_free()
 * @return the packet count, or -1 after a message on stderr (file missing,
 *         not a classic pcap, truncated, not Ethernet, out of memory).
 */
int dpvt_pcap_read(const char *path, struct dpvt_pkt **out);

/** Frees what dpvt_pcap_read() returned (n packets). */
void dpvt_pcap_free(struct dpvt_pkt *pk, int n);

/** Writes a little-endian microsecond pcap header (LINKTYPE_ETHERNET, snaplen 65535). 0 or -1. */
int dpvt_pcap_write_hdr(FILE *f);

/** Writes one record (captured = original length = len). 0 or -1. */
int dpvt_pcap_write_pkt(FILE *f, uint32_t sec, uint32_t usec, const uint8_t *data, uint32_t len);

/* ---- frames ---- */

/**
 * Builds a complete RoCEv2 frame: the headers of b (dpv_pkt_build_hdrs()),
 * paylen payload bytes copied from payload (left as they are in f when
 * payload is NULL), pad and ICRC (dpv_pkt_finish()).
 * @return the frame length, or 0 if the opcode is invalid or the frame
 *         does not fit in cap bytes.
 */
uint32_t dpvt_frame_build(uint8_t *f, size_t cap, const struct dpv_pkt_build *b, const uint8_t *payload,
			  uint32_t paylen);

/** Recomputes the IPv4 header checksum of an untagged Ethernet frame (IPv4 header at offset 14). */
void dpvt_ipv4_fix_cksum(uint8_t *frame);

/**
 * An ARP frame (Ethernet broadcast, 60 bytes, zero padded): operation op
 * (1 request, 2 reply), sender sha/spa, target tpa (target MAC zero).
 * @return 60
 */
uint32_t dpvt_arp_frame(uint8_t *f, uint16_t op, const uint8_t sha[6], const uint8_t spa[4],
			const uint8_t tpa[4]);

/**
 * An IPv6 neighbour solicitation for target from src (link-local address)
 * with source MAC sha, to the solicited-node multicast address of target,
 * hop limit 255, with a source link-layer address option and a valid
 * ICMPv6 checksum (at byte 14 + 40 + 2 of the frame).
 * @return the frame length, 86
 */
uint32_t dpvt_ns_frame(uint8_t *f, const uint8_t sha[6], const uint8_t src[16], const uint8_t target[16]);

#ifdef __cplusplus
}
#endif

#endif /* DPVT_WIRE_H */
