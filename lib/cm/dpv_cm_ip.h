/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file dpv_cm_ip.h
 * RDMA CM over IP (the "IP CM" annex of IBA, Linux rdma_cm): how rdma_cm
 * names an IP port in a CM service ID, and the addressing header it puts at
 * the start of the REQ (and SIDR_REQ) private data. Pure, libc only.
 *
 * Service ID: (port space << 16) + port, i.e. 0x0000000001PPpppp for the
 * TCP, UDP and IB port spaces; e.g. 0x0000000001064853 is RDMA_PS_TCP port
 * 18515 (perftest's default; test/data/wire/rdma_cm_send.pcap).
 *
 * Header (36 bytes, network order):
 *   byte 0      CM version, 0x00 (major nibble, minor nibble)
 *   byte 1      IP version in the upper nibble (4 or 6), low nibble reserved
 *   bytes 2-3   the active side's source port
 *   bytes 4-19  source IP; IPv4: 12 zero bytes then the address
 *   bytes 20-35 destination IP, the same way
 * The consumer's private data follows (REQ: at most
 * DPV_CMA_REQ_PRIVATE_MAX bytes). Note the IPv4 form: zeros, not the
 * ::ffff: mapped form GIDs use.
 */
#ifndef DPV_CM_IP_H
#define DPV_CM_IP_H

#include <stddef.h>
#include <stdint.h>

#include "dpv_cm_mad.h"

#ifdef __cplusplus
extern "C" {
#endif

/** rdma_cm port spaces (Linux enum rdma_ucm_port_space). */
enum dpv_rdma_ps {
	DPV_RDMA_PS_IPOIB = 0x0002,
	DPV_RDMA_PS_IB = 0x013f,
	DPV_RDMA_PS_TCP = 0x0106,
	DPV_RDMA_PS_UDP = 0x0111,
};

/** The service IDs rdma_cm listens on: 0x0000000001xxxxxx (IB_CMA_SERVICE_ID). */
#define DPV_CMA_SERVICE_ID 0x0000000001000000ull
#define DPV_CMA_SERVICE_ID_MASK 0xffffffffff000000ull
/** The port space and port part of an IP service ID. */
#define DPV_RDMA_IB_IP_PS_MASK 0xffffffffffff0000ull

#define DPV_CMA_VERSION 0x00      /**< cma_version: major 0, minor 0 */
#define DPV_CMA_HDR_LEN 36        /**< bytes of the addressing header */
/** Consumer private data rdma_connect() can add to a REQ / SIDR_REQ. */
#define DPV_CMA_REQ_PRIVATE_MAX (DPV_CM_REQ_PRIVATE_LEN - DPV_CMA_HDR_LEN)
#define DPV_CMA_SIDR_REQ_PRIVATE_MAX (DPV_CM_SIDR_REQ_PRIVATE_LEN - DPV_CMA_HDR_LEN)

/** The rdma_cm addressing header, host order. */
struct dpv_cma_hdr {
	uint8_t cma_version;      /**< DPV_CMA_VERSION */
	uint8_t ip_version;       /**< 4 or 6 */
	uint16_t src_port;        /**< the active side's port */
	/** Addresses as on the wire: IPv4 in bytes 12-15, bytes 0-11 zero. */
	uint8_t src_addr[16];
	uint8_t dst_addr[16];
};

/**
 * The service ID of an rdma_cm port, as Linux cma_get_service_id().
 *
 * RETURN VALUE: (ps << 16) + port, host order. No errno.
 */
static inline uint64_t dpv_cma_service_id(uint16_t ps, uint16_t port)
{
	return ((uint64_t)ps << 16) + port;
}

/**
 * Splits an rdma_cm service ID into port space and port.
 * @param sid the service ID (host order)
 * @param[out] ps port space (may be NULL)
 * @param[out] port port (may be NULL)
 *
 * RETURN VALUE: 0, or -EINVAL when sid is not (ps << 16) + port for one of
 * the port spaces of enum dpv_rdma_ps (ps and port are then left as they
 * were).
 */
int dpv_cma_service_id_parse(uint64_t sid, uint16_t *ps, uint16_t *port);

/**
 * Fills h for an IPv4 connection: version DPV_CMA_VERSION, ip_version 4,
 * the addresses in bytes 12-15 of the 16-byte fields.
 * @param src source address, network order bytes (4)
 * @param dst destination address, network order bytes (4)
 * Does nothing when h, src or dst is NULL.
 *
 * RETURN VALUE: none.
 */
void dpv_cma_hdr_ipv4(struct dpv_cma_hdr *h, const uint8_t src[4], const uint8_t dst[4],
		      uint16_t src_port);

/**
 * Writes h as the first DPV_CMA_HDR_LEN bytes of buf (a REQ's private
 * data); the reserved low nibble of byte 1 and, for IPv4, bytes 0-11 of
 * each address are written as 0.
 *
 * RETURN VALUE: DPV_CMA_HDR_LEN, or a negative errno value: -EINVAL when h
 * or buf is NULL, len < DPV_CMA_HDR_LEN, cma_version is not
 * DPV_CMA_VERSION; -EAFNOSUPPORT when ip_version is neither 4 nor 6.
 */
int dpv_cma_hdr_encode(const struct dpv_cma_hdr *h, uint8_t *buf, size_t len);

/**
 * Reads the addressing header at the start of buf (a REQ's private data)
 * into h, which is zeroed first. For IPv4, bytes 0-11 of each address are returned as they were (Linux
 * ignores them).
 *
 * RETURN VALUE: DPV_CMA_HDR_LEN, or a negative errno value: -EINVAL when
 * buf or h is NULL; -EBADMSG when len < DPV_CMA_HDR_LEN or the version byte
 * is not DPV_CMA_VERSION; -EAFNOSUPPORT when the IP version is neither 4
 * nor 6 (as Linux rdma_cm answers such a REQ).
 */
int dpv_cma_hdr_decode(const uint8_t *buf, size_t len, struct dpv_cma_hdr *h);

#ifdef __cplusplus
}
#endif
#endif /* DPV_CM_IP_H */
