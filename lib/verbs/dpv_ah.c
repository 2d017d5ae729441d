/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Address handles (RoCEv2: always with a GRH) and the AHs built from
 * received completions (ibv_init_ah_from_wc, ibv_create_ah_from_wc(3)).
 * An AH holds its resolved path (source and destination GID, IP version,
 * traffic class, hop limit, flow label) for the engine, which finds it by
 * handle from a UD send WQE.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <endian.h>

#include "dpv_verbs.h"
#include "dpv_wire.h"

/* Check an address vector for this device: RoCE needs a GRH, a valid
 * source GID and a destination of the same IP family. 0 or EINVAL; the
 * source GID is returned in sgid. */
int dpv_av_check(struct dpv_device *d, const struct ibv_ah_attr *av, struct dpv_gid *sgid)
{
	if (!av->is_global || av->grh.sgid_index >= DPV_GID_TABLE_LEN ||
	    dpv_dev_gid(d, av->grh.sgid_index, sgid) || !sgid->valid)
		return EINVAL;
	if (dpv_gid_is_v4mapped(av->grh.dgid.raw) != (sgid->ip_ver == 4))
		return EINVAL; /* IPv4 destination needs an IPv4 source GID and vice versa */
	return 0;
}

/*
 * LIDs on RoCE (a dpverbs extension, "lid": "auto"): a port reports the low
 * 16 bits of its IPv4 address as its LID (dpv_port_lid), so that programs
 * that address by LID (qperf's UD tests, pingpongs without a GID index)
 * work within the port's /16: an address vector without GRH whose DLID is
 * a unicast LID becomes one with the GRH of that IPv4 address in the
 * port's /16, from GID 1. Anything else is left as it is (and refused by
 * dpv_av_check, as on ConnectX: RoCE needs a GRH).
 */
void dpv_av_from_lid(struct dpv_device *d, const struct ibv_ah_attr *in, struct ibv_ah_attr *out)
{
	struct ibv_port_attr pa;
	struct dpv_gid g;

	*out = *in;
	if (in->is_global || !in->dlid || in->dlid > 0xbfff)
		return;
	memset(&pa, 0, sizeof(pa));
	if (dpv_ops(d)->query_port(d->drv_dev, &pa) || !pa.lid || dpv_dev_gid(d, 1, &g) || !g.valid ||
	    g.ip_ver != 4)
		return;
	memset(&out->grh, 0, sizeof(out->grh));
	memcpy(out->grh.dgid.raw, g.raw, 14);
	out->grh.dgid.raw[14] = (uint8_t)(in->dlid >> 8);
	out->grh.dgid.raw[15] = (uint8_t)in->dlid;
	out->grh.sgid_index = 1;
	out->grh.hop_limit = DPV_DEFAULT_HOP_LIMIT;
	out->is_global = 1;
}

/**
 * ibv_create_ah: an AH for RoCEv2. RETURN VALUE: the AH, or NULL with errno
 * EINVAL (NULL pd/attr, port_num != 1, is_global == 0 (RoCE needs a GRH)
 * unless dlid is the LID of a host in the port's IPv4 /16 (dpverbs' LIDs on
 * RoCE, see dpv_av_from_lid),
 * empty or out-of-range sgid_index, zero dgid, a destination of another IP
 * family than the source GID), ENOMEM (limits.max_ah AHs exist, no memory).
 */
DPV_EXPORT struct ibv_ah *ibv_create_ah(struct ibv_pd *ibpd, struct ibv_ah_attr *given)
{
	static const uint8_t zero[16];
	struct dpv_gid sgid;
	struct ibv_ah_attr lid_av, *attr = given;
	if (ibpd && given && !given->is_global) {
		dpv_av_from_lid(to_dctx(ibpd->context)->dev, given, &lid_av);
		attr = &lid_av;
	}
	if (!ibpd || !attr || attr->port_num != DPV_PORT_NUM || !memcmp(attr->grh.dgid.raw, zero, 16) ||
	    dpv_av_check(to_dctx(ibpd->context)->dev, attr, &sgid)) {
		errno = EINVAL;
		return NULL;
	}
	struct dpv_ah *ah = calloc(1, sizeof(*ah));
	if (!ah) {
		errno = ENOMEM;
		return NULL;
	}
	ah->ibah.context = ibpd->context;
	ah->ibah.pd = ibpd;
	ah->attr = *attr;
	ah->pd = to_dpd(ibpd);
	ah->dev = to_dctx(ibpd->context)->dev;
	memcpy(ah->sgid, sgid.raw, 16);
	memcpy(ah->dgid, attr->grh.dgid.raw, 16);
	ah->ip_ver = sgid.ip_ver;
	ah->tclass = attr->grh.traffic_class;
	ah->hop_limit = attr->grh.hop_limit ? attr->grh.hop_limit : DPV_DEFAULT_HOP_LIMIT;
	ah->flow_label = attr->grh.flow_label;
	int pe = dpv_pool_add(DPV_OBJ_AH, ah, &ah->handle);
	if (pe != 0) {
		free(ah);
		errno = dpv_pool_errno(pe); /* limits.max_ah AHs exist */
		return NULL;
	}
	ah->ibah.handle = ah->handle;
	struct dpv_ah_desc d = {.handle = ah->handle, .pd = ah->pd->base->handle, .ip_ver = ah->ip_ver, .tclass = ah->tclass,
				.hop_limit = ah->hop_limit, .flow_label = ah->flow_label};
	memcpy(d.sgid, ah->sgid, 16);
	memcpy(d.dgid, ah->dgid, 16);
	int r = dpv_ops(ah->dev)->create_ah(ah->dev->drv_dev, &d);
	if (r) {
		dpv_pool_del(DPV_OBJ_AH, ah->handle, ah);
		free(ah);
		errno = -r;
		return NULL;
	}
	atomic_fetch_add(&ah->pd->users, 1);
	return &ah->ibah;
}

/** ibv_destroy_ah: 0, or EINVAL for NULL. */
DPV_EXPORT int ibv_destroy_ah(struct ibv_ah *ibah)
{
	if (!ibah)
		return EINVAL;
	struct dpv_ah *ah = to_dah(ibah);
	dpv_ops(ah->dev)->destroy_ah(ah->dev->drv_dev, ah->handle);
	dpv_pool_del(DPV_OBJ_AH, ah->handle, ah);
	atomic_fetch_sub(&ah->pd->users, 1);
	free(ah);
	return 0;
}

/* Does the 20 bytes at p look like a valid IPv4 header (version, IHL 5,
 * checksum)? This is how a receiver tells an IPv4 GRH from an IPv6 one. */
static bool grh_is_ipv4(const struct ibv_grh *grh)
{
	const uint8_t *ip = (const uint8_t *)grh + 20;
	if (ip[0] != 0x45)
		return false;
	return dpv_ipv4_cksum(ip) == 0;
}

/**
 * ibv_init_ah_from_wc - fill ah_attr to reply to the sender of wc.
 * RETURN VALUE: 0 on success, -1 on error with errno: EINVAL (NULL argument,
 * port_num != 1, no GRH in the completion: RoCE always needs one), ENOENT
 * (the packet's destination address is not one of this port's GIDs).
 */
DPV_EXPORT int ibv_init_ah_from_wc(struct ibv_context *context, uint8_t port_num, struct ibv_wc *wc,
				   struct ibv_grh *grh, struct ibv_ah_attr *ah_attr)
{
	if (!context || !wc || !grh || !ah_attr || port_num != DPV_PORT_NUM) {
		errno = EINVAL;
		return -1;
	}
	memset(ah_attr, 0, sizeof(*ah_attr));
	ah_attr->dlid = wc->slid;
	ah_attr->sl = wc->sl;
	ah_attr->src_path_bits = wc->dlid_path_bits;
	ah_attr->port_num = port_num;
	if (!(wc->wc_flags & IBV_WC_GRH)) {
		errno = EINVAL;
		return -1;
	}
	uint8_t sgid[16] = {0}, dgid[16] = {0};
	uint32_t flow = 0;
	uint8_t tclass;
	if (grh_is_ipv4(grh)) {
		const uint8_t *ip = (const uint8_t *)grh + 20;
		sgid[10] = sgid[11] = dgid[10] = dgid[11] = 0xff;
		memcpy(sgid + 12, ip + 12, 4);
		memcpy(dgid + 12, ip + 16, 4);
		tclass = ip[1];
	} else {
		uint32_t vtf = be32toh(grh->version_tclass_flow);
		if ((vtf >> 28) != 6) {
			errno = EINVAL;
			return -1;
		}
		memcpy(sgid, grh->sgid.raw, 16);
		memcpy(dgid, grh->dgid.raw, 16);
		tclass = (uint8_t)(vtf >> 20);
		flow = vtf & 0xfffff;
	}
	int idx = dpv_dev_gid_find(to_dctx(context)->dev, dgid);
	if (idx < 0) {
		errno = ENOENT;
		return -1;
	}
	ah_attr->is_global = 1;
	memcpy(ah_attr->grh.dgid.raw, sgid, 16);
	ah_attr->grh.sgid_index = (uint8_t)idx;
	ah_attr->grh.flow_label = flow;
	ah_attr->grh.hop_limit = 0xff;
	ah_attr->grh.traffic_class = tclass;
	return 0;
}

/**
 * ibv_create_ah_from_wc - an AH that replies to the sender of wc.
 * RETURN VALUE: the AH, or NULL with errno as for ibv_init_ah_from_wc and
 * ibv_create_ah.
 */
DPV_EXPORT struct ibv_ah *ibv_create_ah_from_wc(struct ibv_pd *pd, struct ibv_wc *wc, struct ibv_grh *grh,
						uint8_t port_num)
{
	struct ibv_ah_attr attr;
	if (!pd) {
		errno = EINVAL;
		return NULL;
	}
	if (ibv_init_ah_from_wc(pd->context, port_num, wc, grh, &attr))
		return NULL;
	return ibv_create_ah(pd, &attr);
}

/**
 * dpv_query_neigh - the Ethernet address of a neighbour, from dpverbs' own
 * ARP / IPv6 neighbour discovery, without blocking (dpv_query_neigh(3)).
 * RETURN VALUE: 0 with mac set; EAGAIN while it is being resolved (a
 * request is sent if none was outstanding); EINVAL (NULL argument,
 * port_num != 1); EIO (shared mode: the daemon is gone); EOPNOTSUPP (the
 * driver keeps no neighbours: null driver). errno is not set.
 */
DPV_EXPORT int dpv_query_neigh(struct ibv_context *context, uint8_t port_num, const union ibv_gid *gid,
			       uint8_t mac[6])
{
	if (!context || !gid || !mac || port_num != DPV_PORT_NUM)
		return EINVAL;
	struct dpv_device *d = to_dctx(context)->dev;
	int r = dpv_ops(d)->neigh_query(d->drv_dev, gid->raw, mac);
	return r < 0 ? -r : r;
}
