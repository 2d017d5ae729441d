/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Protection domains, memory regions and address handles.
 *
 * Memory regions are the application's own virtual memory (nothing is
 * pinned: dpverbs copies between mbufs and registered memory on the CPU).
 * lkey == rkey == (table index << 8) | 8-bit key, so a stale key of a
 * re-used index does not match.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

#include <rte_cycles.h>
#include <rte_ip.h>

#include "dpv_verbs.h"

#define MR_TABLE_SIZE 65536

static _Atomic(struct dpv_mr *) g_mrs[MR_TABLE_SIZE];
static rte_spinlock_t g_mr_lock = RTE_SPINLOCK_INITIALIZER;
static uint32_t g_mr_next = 1;
static _Atomic uint32_t g_n_mrs;
static uint8_t g_key_seed;

/* ---- PD ---- */

static _Atomic uint32_t g_n_pds;

/** ibv_alloc_pd: a new PD, or NULL with errno (EINVAL, ENOMEM: limits.max_pd
 * PDs exist or no memory). */
DPV_EXPORT struct ibv_pd *ibv_alloc_pd(struct ibv_context *context)
{
	struct dpv_runtime *rt = dpv_runtime_peek();
	if (!context) {
		errno = EINVAL;
		return NULL;
	}
	if (rt && atomic_fetch_add(&g_n_pds, 1) >= rt->conf.max_pd) {
		atomic_fetch_sub(&g_n_pds, 1);
		errno = ENOMEM;
		return NULL;
	}
	struct dpv_pd *pd = calloc(1, sizeof(*pd));
	if (!pd) {
		if (rt)
			atomic_fetch_sub(&g_n_pds, 1);
		errno = ENOMEM;
		return NULL;
	}
	pd->ibpd.context = context;
	pd->base = pd;
	static _Atomic uint32_t handles;
	pd->ibpd.handle = atomic_fetch_add(&handles, 1) + 1;
	return &pd->ibpd;
}

/**
 * ibv_dealloc_pd: deallocates a PD or a parent domain. RETURN VALUE 0,
 * EINVAL for NULL, EBUSY while MRs, QPs, AHs, SRQs, CQs or parent domains
 * created with it exist.
 */
DPV_EXPORT int ibv_dealloc_pd(struct ibv_pd *ibpd)
{
	if (!ibpd)
		return EINVAL;
	struct dpv_pd *pd = to_dpd(ibpd);
	if (atomic_load(&pd->users) > 0)
		return EBUSY;
	if (pd->parent) {
		atomic_fetch_sub(&pd->base->users, 1);
		if (pd->td)
			atomic_fetch_sub(&pd->td->users, 1);
	} else if (dpv_runtime_peek()) {
		atomic_fetch_sub(&g_n_pds, 1);
	}
	free(pd);
	return 0;
}

/* ---- MR ---- */

#define DPV_ACCESS_SUPPORTED                                                                     \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |             \
	 IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_MW_BIND | IBV_ACCESS_ZERO_BASED)

struct dpv_mr *dpv_mr_lookup(uint32_t key)
{
	struct dpv_mr *mr = atomic_load_explicit(&g_mrs[(key >> 8) % MR_TABLE_SIZE], memory_order_acquire);
	if (!mr || mr->ibmr.lkey != key)
		return NULL;
	return mr;
}

uint32_t dpv_sge_total(const struct ibv_sge *sge, uint32_t n)
{
	uint64_t t = 0;
	for (uint32_t i = 0; i < n; i++)
		t += sge[i].length;
	return t > UINT32_MAX ? UINT32_MAX : (uint32_t)t;
}

int dpv_sge_check(struct dpv_pd *pd, const struct ibv_sge *sge, uint32_t n, int access)
{
	for (uint32_t i = 0; i < n; i++) {
		if (!sge[i].length)
			continue;
		struct dpv_mr *mr = dpv_mr_lookup(sge[i].lkey);
		if (!mr || mr->pd != pd)
			return IBV_WC_LOC_PROT_ERR;
		if ((mr->access & access) != access)
			return IBV_WC_LOC_PROT_ERR;
		uint64_t start = (uint64_t)(uintptr_t)mr->addr;
		if (sge[i].addr < start || sge[i].addr + sge[i].length > start + mr->length ||
		    sge[i].addr + sge[i].length < sge[i].addr)
			return IBV_WC_LOC_PROT_ERR;
	}
	return IBV_WC_SUCCESS;
}

void dpv_sge_copy_in(const struct ibv_sge *sge, uint32_t n, uint32_t off, const void *src, uint32_t len)
{
	const uint8_t *s = src;
	for (uint32_t i = 0; i < n && len; i++) {
		if (off >= sge[i].length) {
			off -= sge[i].length;
			continue;
		}
		uint32_t chunk = sge[i].length - off;
		if (chunk > len)
			chunk = len;
		memcpy((uint8_t *)(uintptr_t)sge[i].addr + off, s, chunk);
		s += chunk;
		len -= chunk;
		off = 0;
	}
}

/**
 * ibv_reg_mr_iova2 - register addr..addr+length, addressed remotely as iova.
 * RETURN VALUE: the MR, or NULL with errno: EINVAL (NULL pd, zero length,
 * length above max_mr_size, unknown access bits, remote write/atomic without
 * local write), EFAULT (NULL addr), ENOMEM (table full).
 */
DPV_EXPORT struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *ibpd, void *addr, size_t length, uint64_t iova,
					   unsigned int access)
{
	struct dpv_runtime *rt = dpv_runtime_peek();
	if (!ibpd || !rt) {
		errno = EINVAL;
		return NULL;
	}
	unsigned int acc = access & ~(unsigned int)IBV_ACCESS_OPTIONAL_RANGE;
	if (acc & ~(unsigned int)DPV_ACCESS_SUPPORTED) {
		errno = EINVAL;
		return NULL;
	}
	if ((acc & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) && !(acc & IBV_ACCESS_LOCAL_WRITE)) {
		errno = EINVAL; /* IBA C10-18 */
		return NULL;
	}
	if (!length) {
		errno = EINVAL;
		return NULL;
	}
	if (!addr) {
		errno = EFAULT;
		return NULL;
	}
	if (length > rt->conf.max_mr_size) {
		errno = EINVAL;
		return NULL;
	}
	if (atomic_load(&g_n_mrs) >= rt->conf.max_mr) {
		errno = ENOMEM;
		return NULL;
	}
	struct dpv_mr *mr = calloc(1, sizeof(*mr));
	if (!mr) {
		errno = ENOMEM;
		return NULL;
	}
	rte_spinlock_lock(&g_mr_lock);
	uint32_t idx = 0;
	for (uint32_t k = 0; k < MR_TABLE_SIZE; k++) {
		uint32_t i = (g_mr_next + k) % MR_TABLE_SIZE;
		if (i && !atomic_load(&g_mrs[i])) {
			idx = i;
			break;
		}
	}
	if (!idx) {
		rte_spinlock_unlock(&g_mr_lock);
		free(mr);
		errno = ENOMEM;
		return NULL;
	}
	g_mr_next = idx + 1;
	if (!g_key_seed)
		g_key_seed = (uint8_t)(rte_get_tsc_cycles() | 1);
	uint8_t key = g_key_seed++;
	mr->ibmr.context = ibpd->context;
	mr->ibmr.pd = ibpd;
	mr->ibmr.addr = addr;
	mr->ibmr.length = length;
	mr->ibmr.handle = idx;
	mr->ibmr.lkey = mr->ibmr.rkey = idx << 8 | key;
	mr->upd = to_dpd(ibpd);
	mr->pd = mr->upd->base;
	mr->addr = addr;
	mr->length = length;
	mr->iova = (acc & IBV_ACCESS_ZERO_BASED) ? 0 : iova;
	mr->access = (int)acc;
	mr->index = idx;
	atomic_fetch_add(&mr->upd->users, 1);
	atomic_fetch_add(&g_n_mrs, 1);
	atomic_store_explicit(&g_mrs[idx], mr, memory_order_release);
	rte_spinlock_unlock(&g_mr_lock);
	return &mr->ibmr;
}

#undef ibv_reg_mr
#undef ibv_reg_mr_iova
/** ibv_reg_mr: ibv_reg_mr_iova2 with iova = addr. */
DPV_EXPORT struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t length, int access)
{
	return ibv_reg_mr_iova2(pd, addr, length, (uintptr_t)addr, (unsigned int)access);
}

/** ibv_reg_mr_iova: ibv_reg_mr_iova2 with int access flags. */
DPV_EXPORT struct ibv_mr *ibv_reg_mr_iova(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova,
					  int access)
{
	return ibv_reg_mr_iova2(pd, addr, length, iova, (unsigned int)access);
}

/** ibv_dereg_mr: 0, or EINVAL for NULL or an MR that is not registered. */
DPV_EXPORT int ibv_dereg_mr(struct ibv_mr *ibmr)
{
	if (!ibmr)
		return EINVAL;
	struct dpv_mr *mr = to_dmr(ibmr);
	rte_spinlock_lock(&g_mr_lock);
	if (atomic_load(&g_mrs[mr->index]) != mr) {
		rte_spinlock_unlock(&g_mr_lock);
		return EINVAL;
	}
	atomic_store_explicit(&g_mrs[mr->index], NULL, memory_order_release);
	rte_spinlock_unlock(&g_mr_lock);
	atomic_fetch_sub(&mr->upd->users, 1);
	atomic_fetch_sub(&g_n_mrs, 1);
	free(mr);
	return 0;
}

/**
 * ibv_rereg_mr - change the translation (addr/length), PD and/or access of
 * an MR in place; lkey and rkey stay the same.
 * RETURN VALUE: 0, or IBV_REREG_MR_ERR_INPUT with errno EINVAL (NULL MR,
 * no or unknown flags, bad access flags, NULL addr, zero length or above
 * max_mr_size, NULL PD or a PD of another context with
 * IBV_REREG_MR_CHANGE_PD).
 */
DPV_EXPORT int ibv_rereg_mr(struct ibv_mr *ibmr, int flags, struct ibv_pd *pd, void *addr, size_t length,
			    int access)
{
	const int known = IBV_REREG_MR_CHANGE_TRANSLATION | IBV_REREG_MR_CHANGE_PD |
			  IBV_REREG_MR_CHANGE_ACCESS;
	if (!ibmr || !flags || (flags & ~known)) {
		errno = EINVAL;
		return IBV_REREG_MR_ERR_INPUT;
	}
	struct dpv_mr *mr = to_dmr(ibmr);
	unsigned int acc = (unsigned int)access & ~(unsigned int)IBV_ACCESS_OPTIONAL_RANGE;
	if ((flags & IBV_REREG_MR_CHANGE_ACCESS) &&
	    ((acc & ~(unsigned int)DPV_ACCESS_SUPPORTED) ||
	     ((acc & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) && !(acc & IBV_ACCESS_LOCAL_WRITE)))) {
		errno = EINVAL;
		return IBV_REREG_MR_ERR_INPUT;
	}
	struct dpv_runtime *rt = dpv_runtime_peek();
	if (((flags & IBV_REREG_MR_CHANGE_TRANSLATION) &&
	     (!addr || !length || (rt && length > rt->conf.max_mr_size))) ||
	    ((flags & IBV_REREG_MR_CHANGE_PD) && (!pd || pd->context != ibmr->context))) {
		errno = EINVAL;
		return IBV_REREG_MR_ERR_INPUT;
	}
	rte_spinlock_lock(&g_mr_lock);
	if (flags & IBV_REREG_MR_CHANGE_PD) {
		atomic_fetch_sub(&mr->upd->users, 1);
		mr->upd = to_dpd(pd);
		mr->pd = mr->upd->base;
		atomic_fetch_add(&mr->upd->users, 1);
		ibmr->pd = pd;
	}
	if (flags & IBV_REREG_MR_CHANGE_TRANSLATION) {
		mr->addr = addr;
		mr->length = length;
		if (!(mr->access & IBV_ACCESS_ZERO_BASED))
			mr->iova = (uintptr_t)addr;
		ibmr->addr = addr;
		ibmr->length = length;
	}
	if (flags & IBV_REREG_MR_CHANGE_ACCESS)
		mr->access = (int)acc;
	rte_spinlock_unlock(&g_mr_lock);
	return 0;
}

/* ---- AH ---- */

static _Atomic uint32_t g_n_ahs;

/**
 * ibv_create_ah: an AH for RoCEv2. RETURN VALUE: the AH, or NULL with errno
 * EINVAL (NULL pd/attr, port_num != 1, is_global == 0 (RoCE needs a GRH),
 * empty or out-of-range sgid_index, zero dgid), ENOMEM.
 */
DPV_EXPORT struct ibv_ah *ibv_create_ah(struct ibv_pd *ibpd, struct ibv_ah_attr *attr)
{
	struct dpv_runtime *rt = dpv_runtime_peek();
	static const uint8_t zero[16];
	if (!ibpd || !attr || !rt) {
		errno = EINVAL;
		return NULL;
	}
	struct dpv_port *p = to_dctx(ibpd->context)->dev->port;
	if (attr->port_num != 1 || !attr->is_global || attr->grh.sgid_index >= DPV_GID_TABLE_LEN ||
	    !p->gids[attr->grh.sgid_index].valid || !memcmp(attr->grh.dgid.raw, zero, 16)) {
		errno = EINVAL;
		return NULL;
	}
	bool d4 = dpv_gid_is_v4mapped(attr->grh.dgid.raw);
	if (d4 != (p->gids[attr->grh.sgid_index].ip_ver == 4)) {
		errno = EINVAL; /* IPv4 destination needs an IPv4 source GID and vice versa */
		return NULL;
	}
	if (atomic_load(&g_n_ahs) >= rt->conf.max_ah) {
		errno = ENOMEM;
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
	ah->port = p;
	memcpy(ah->sgid, p->gids[attr->grh.sgid_index].gid, 16);
	memcpy(ah->dgid, attr->grh.dgid.raw, 16);
	ah->ip_ver = d4 ? 4 : 6;
	atomic_fetch_add(&ah->pd->users, 1);
	atomic_fetch_add(&g_n_ahs, 1);
	dpv_neigh_prefetch(&p->qctx[0], ah->dgid); /* resolve the MAC now */
	return &ah->ibah;
}

/** ibv_destroy_ah: 0, or EINVAL for NULL. */
DPV_EXPORT int ibv_destroy_ah(struct ibv_ah *ibah)
{
	if (!ibah)
		return EINVAL;
	struct dpv_ah *ah = to_dah(ibah);
	atomic_fetch_sub(&ah->pd->users, 1);
	atomic_fetch_sub(&g_n_ahs, 1);
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
	if (!context || !wc || !grh || !ah_attr || port_num != 1) {
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
	int idx = dpv_port_gid_find(to_dctx(context)->dev->port, dgid);
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
