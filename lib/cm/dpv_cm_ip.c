/* SPDX-License-Identifier: BSD-3-Clause */
/* rdma_cm IP addressing: service IDs and the private-data header (dpv_cm_ip.h). */
#include <errno.h>
#include <string.h>

#include "dpv_cm_ip.h"

int dpv_cma_service_id_parse(uint64_t sid, uint16_t *ps, uint16_t *port)
{
	uint64_t space = sid >> 16;

	if (space != DPV_RDMA_PS_TCP && space != DPV_RDMA_PS_UDP && space != DPV_RDMA_PS_IB &&
	    space != DPV_RDMA_PS_IPOIB)
		return -EINVAL;
	if (ps)
		*ps = (uint16_t)space;
	if (port)
		*port = (uint16_t)sid;
	return 0;
}

void dpv_cma_hdr_ipv4(struct dpv_cma_hdr *h, const uint8_t src[4], const uint8_t dst[4],
		      uint16_t src_port)
{
	if (!h || !src || !dst)
		return;
	memset(h, 0, sizeof(*h));
	h->cma_version = DPV_CMA_VERSION;
	h->ip_version = 4;
	h->src_port = src_port;
	memcpy(h->src_addr + 12, src, 4);
	memcpy(h->dst_addr + 12, dst, 4);
}

int dpv_cma_hdr_encode(const struct dpv_cma_hdr *h, uint8_t *buf, size_t len)
{
	if (!h || !buf || len < DPV_CMA_HDR_LEN || h->cma_version != DPV_CMA_VERSION)
		return -EINVAL;
	if (h->ip_version != 4 && h->ip_version != 6)
		return -EAFNOSUPPORT;
	buf[0] = h->cma_version;
	buf[1] = (uint8_t)(h->ip_version << 4);
	buf[2] = (uint8_t)(h->src_port >> 8);
	buf[3] = (uint8_t)h->src_port;
	memcpy(buf + 4, h->src_addr, 16);
	memcpy(buf + 20, h->dst_addr, 16);
	if (h->ip_version == 4) {
		memset(buf + 4, 0, 12);
		memset(buf + 20, 0, 12);
	}
	return DPV_CMA_HDR_LEN;
}

int dpv_cma_hdr_decode(const uint8_t *buf, size_t len, struct dpv_cma_hdr *h)
{
	if (!buf || !h)
		return -EINVAL;
	memset(h, 0, sizeof(*h));
	if (len < DPV_CMA_HDR_LEN || buf[0] != DPV_CMA_VERSION)
		return -EBADMSG;
	h->cma_version = buf[0];
	h->ip_version = buf[1] >> 4;
	if (h->ip_version != 4 && h->ip_version != 6)
		return -EAFNOSUPPORT;
	h->src_port = (uint16_t)(buf[2] << 8 | buf[3]);
	memcpy(h->src_addr, buf + 4, 16);
	memcpy(h->dst_addr, buf + 20, 16);
	return DPV_CMA_HDR_LEN;
}
