/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Devices and contexts: discovery, open/close, device/port/GID/P_Key
 * queries. One verbs device per device the driver reports, one port each.
 * Device attributes come from the parameters (dpv_param.h); port state and
 * GIDs from the driver.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <endian.h>

#include <rte_cycles.h>

#include "dpv_verbs.h"

DPV_EXPORT struct ibv_device **ibv_get_device_list(int *num_devices)
{
	struct dpv_core *c = dpv_core_get();
	if (num_devices)
		*num_devices = 0;
	if (!c)
		return NULL; /* errno set by dpv_core_get */
	if (!c->n_devs) {
		errno = ENODEV;
		return NULL;
	}
	struct ibv_device **list = calloc(c->n_devs + 1, sizeof(*list));
	if (!list) {
		errno = ENOMEM;
		return NULL;
	}
	for (unsigned int i = 0; i < c->n_devs; i++)
		list[i] = &c->devs[i].ibdev;
	if (num_devices)
		*num_devices = (int)c->n_devs;
	return list;
}

DPV_EXPORT void ibv_free_device_list(struct ibv_device **list)
{
	free(list);
}

DPV_EXPORT const char *ibv_get_device_name(struct ibv_device *device)
{
	return device ? device->name : NULL;
}

DPV_EXPORT __be64 ibv_get_device_guid(struct ibv_device *device)
{
	return device ? to_ddev(device)->guid : 0;
}

DPV_EXPORT int ibv_get_device_index(struct ibv_device *device)
{
	return device ? (int)to_ddev(device)->index : -1;
}

/* ---- GIDs ---- */

int dpv_dev_gid(struct dpv_device *d, uint32_t index, struct dpv_gid *gid)
{
	if (index >= DPV_GID_TABLE_LEN)
		return EINVAL;
	return -dpv_ops(d)->query_gid(d->drv_dev, index, gid);
}

int dpv_dev_gid_find(struct dpv_device *d, const uint8_t raw[16])
{
	struct dpv_gid g;
	for (uint32_t i = 0; i < DPV_GID_TABLE_LEN; i++)
		if (!dpv_dev_gid(d, i, &g) && g.valid && !memcmp(g.raw, raw, 16))
			return (int)i;
	return -1;
}

/* ---- device and port attributes ---- */

static void fill_device_attr(struct dpv_device *d, struct ibv_device_attr *a)
{
	const struct dpv_params *p = &dpv_core_peek()->params;
	memset(a, 0, sizeof(*a));
	snprintf(a->fw_ver, sizeof(a->fw_ver), DPV_FW_VER);
	a->node_guid = d->guid;
	a->sys_image_guid = d->guid;
	a->max_mr_size = p->max_mr_size;
	a->page_size_cap = 0xfffff000; /* any 4 KiB multiple */
	a->vendor_id = DPV_VENDOR_ID;
	a->vendor_part_id = DPV_VENDOR_PART_ID;
	a->hw_ver = DPV_HW_VER;
	a->max_qp = (int)p->max_qp;
	a->max_qp_wr = (int)p->max_qp_wr;
	a->device_cap_flags = IBV_DEVICE_SYS_IMAGE_GUID | IBV_DEVICE_RC_RNR_NAK_GEN | IBV_DEVICE_XRC |
			      IBV_DEVICE_CHANGE_PHY_PORT | IBV_DEVICE_UD_AV_PORT_ENFORCE |
			      IBV_DEVICE_N_NOTIFY_CQ | IBV_DEVICE_PORT_ACTIVE_EVENT;
	a->max_sge = (int)p->max_sge;
	a->max_sge_rd = (int)p->max_sge;
	a->max_cq = (int)p->max_cq;
	a->max_cqe = (int)p->max_cqe;
	a->max_mr = (int)p->max_mr;
	if (dpv_core_has_mw()) {
		/* windows take numbers of the MR pool: one limit for both (as an
		 * RNIC's MPT), type 1 and type 2B as rxe has them */
		a->max_mw = (int)p->max_mr;
		a->device_cap_flags |= IBV_DEVICE_MEM_WINDOW | IBV_DEVICE_MEM_WINDOW_TYPE_2B;
	}
	a->max_pd = (int)p->max_pd;
	a->max_qp_rd_atom = (int)p->max_qp_rd_atom;
	a->max_res_rd_atom = (int)RTE_MIN((uint64_t)p->max_qp * p->max_qp_rd_atom, (uint64_t)INT32_MAX);
	a->max_qp_init_rd_atom = (int)p->max_qp_init_rd_atom;
	a->atomic_cap = IBV_ATOMIC_HCA;
	a->max_ah = (int)p->max_ah;
	a->max_srq = (int)p->max_srq;
	a->max_srq_wr = (int)p->max_srq_wr;
	a->max_srq_sge = (int)p->max_srq_sge;
	a->max_pkeys = DPV_PKEY_TABLE_LEN;
	if (dpv_core_has_mcast()) { /* the driver attaches UD QPs to groups */
		a->max_mcast_grp = DPV_MAX_MCAST_GRP;
		a->max_mcast_qp_attach = DPV_MAX_MCAST_QP_ATTACH;
		a->max_total_mcast_qp_attach = DPV_MAX_MCAST_GRP * DPV_MAX_MCAST_QP_ATTACH;
	}
	if (dpv_core_has_raw()) /* raw packet QPs: the driver has ports */
		a->max_raw_ethy_qp = (int)p->max_qp;
	a->local_ca_ack_delay = DPV_LOCAL_CA_ACK_DELAY;
	a->phys_port_cnt = DPV_PHYS_PORT_CNT;
}

/**
 * ibv_query_device - device attributes.
 * RETURN VALUE: 0, or EINVAL for a NULL argument.
 */
DPV_EXPORT int ibv_query_device(struct ibv_context *context, struct ibv_device_attr *attr)
{
	if (!context || !attr)
		return EINVAL;
	fill_device_attr(to_dctx(context)->dev, attr);
	return 0;
}

/* On-demand paging: every MR is on demand already (nothing is pinned; the
 * engine copies at the registered virtual addresses), so every operation of
 * every transport supports it, implicit MRs included. The bits are those a
 * ConnectX reports (mlx5 internal_fill_odp_caps); a ConnectX-5 has fewer for
 * UD (SEND, SRQ_RECV) and none for UC. There is no max_size in rdma-core
 * 44's ibv_odp_caps (max_mr_size bounds explicit MRs, implicit ones cover
 * everything) nor a device_cap_flags bit for ODP. */
#define DPV_ODP_ALL                                                                              \
	(IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV | IBV_ODP_SUPPORT_WRITE | IBV_ODP_SUPPORT_READ | \
	 IBV_ODP_SUPPORT_ATOMIC | IBV_ODP_SUPPORT_SRQ_RECV)

static void fill_odp_caps(struct ibv_device_attr_ex *a)
{
	a->odp_caps.general_caps = IBV_ODP_SUPPORT | IBV_ODP_SUPPORT_IMPLICIT;
	a->odp_caps.per_transport_caps.rc_odp_caps = DPV_ODP_ALL;
	a->odp_caps.per_transport_caps.uc_odp_caps =
		IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV | IBV_ODP_SUPPORT_WRITE | IBV_ODP_SUPPORT_SRQ_RECV;
	a->odp_caps.per_transport_caps.ud_odp_caps =
		IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV | IBV_ODP_SUPPORT_SRQ_RECV;
	a->xrc_odp_caps = DPV_ODP_ALL;
}

static int vctx_query_device_ex(struct ibv_context *c, const struct ibv_query_device_ex_input *in,
				struct ibv_device_attr_ex *attr, size_t attr_size)
{
	struct ibv_device_attr_ex full;
	if (!c || !attr || (in && in->comp_mask) || attr_size < sizeof(attr->orig_attr))
		return EINVAL;
	memset(&full, 0, sizeof(full));
	fill_device_attr(to_dctx(c)->dev, &full.orig_attr);
	full.completion_timestamp_mask = UINT64_MAX; /* 64-bit TSC */
	full.hca_core_clock = dpv_tsc_hz() / 1000; /* kHz */
	/* RDMA FLUSH (both placement types) and ATOMIC WRITE, as rxe: bits
	 * rdma-core 45 names IB_UVERBS_DEVICE_FLUSH_GLOBAL ... (dpverbs.h) */
	full.device_cap_flags_ex = full.orig_attr.device_cap_flags | DPV_DEVICE_FLUSH_GLOBAL |
				   DPV_DEVICE_FLUSH_PERSISTENT | DPV_DEVICE_ATOMIC_WRITE;
	full.phys_port_cnt_ex = DPV_PHYS_PORT_CNT;
	fill_odp_caps(&full);
	dpv_tm_caps(&full.tm_caps);
	full.max_dm_size = to_dctx(c)->dev->dm_size; /* the port's "dm_size" (ibv_alloc_dm) */
	/* raw packet QPs send frames as they are and deliver them whole: no
	 * checksum offload (IBV_DEVICE_RAW_IP_CSUM), VLAN stripping, FCS or
	 * delay drop, so raw_packet_caps stays 0; no TSO. Receive-side
	 * scaling: Toeplitz over IP addresses and TCP/UDP ports (dpv_wq.c) */
	if (dpv_core_has_raw()) {
		full.rss_caps.supported_qpts = 1u << IBV_QPT_RAW_PACKET;
		full.rss_caps.max_rwq_indirection_tables = (uint32_t)full.orig_attr.max_qp;
		full.rss_caps.max_rwq_indirection_table_size = DPV_RSS_TABLE_MAX;
		full.rss_caps.rx_hash_fields_mask = IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_DST_IPV4 | IBV_RX_HASH_SRC_IPV6 |
						    IBV_RX_HASH_DST_IPV6 | IBV_RX_HASH_SRC_PORT_TCP |
						    IBV_RX_HASH_DST_PORT_TCP | IBV_RX_HASH_SRC_PORT_UDP |
						    IBV_RX_HASH_DST_PORT_UDP;
		full.rss_caps.rx_hash_function = IBV_RX_HASH_FUNC_TOEPLITZ;
		full.max_wq_type_rq = (uint32_t)full.orig_attr.max_qp;
	}
	memcpy(attr, &full, attr_size < sizeof(full) ? attr_size : sizeof(full));
	return 0;
}

/**
 * query_rt_values (ibv_query_rt_values_ex): IBV_VALUES_MASK_RAW_CLOCK is the
 * device's clock now in the units of IBV_WC_EX_WITH_COMPLETION_TIMESTAMP
 * (TSC ticks, hca_core_clock kHz), as mlx5 reports it: raw_clock.tv_sec 0,
 * raw_clock.tv_nsec the whole 64-bit count. values->comp_mask says on
 * return what was filled. RETURN VALUE: 0, or EINVAL (NULL argument, a
 * comp_mask bit other than IBV_VALUES_MASK_RAW_CLOCK).
 */
static int vctx_query_rt_values(struct ibv_context *c, struct ibv_values_ex *v)
{
	if (!c || !v || (v->comp_mask & ~(uint32_t)IBV_VALUES_MASK_RAW_CLOCK))
		return EINVAL;
	uint32_t done = 0;
	if (v->comp_mask & IBV_VALUES_MASK_RAW_CLOCK) {
		v->raw_clock.tv_sec = 0;
		v->raw_clock.tv_nsec = (long)rte_get_tsc_cycles();
		done |= IBV_VALUES_MASK_RAW_CLOCK;
	}
	v->comp_mask = done;
	return 0;
}

_Static_assert(DPV_PORT_CAP_FLAGS == (IBV_PORT_CM_SUP | IBV_PORT_IP_BASED_GIDS),
	       "the sysfs view's cap_mask is ibv_query_port's port_cap_flags");

int dpv_query_port_full(struct ibv_context *c, uint8_t port, struct ibv_port_attr *a)
{
	if (!c || !a || port != DPV_PORT_NUM)
		return EINVAL;
	struct dpv_device *d = to_dctx(c)->dev;
	memset(a, 0, sizeof(*a));
	int r = dpv_ops(d)->query_port(d->drv_dev, a);
	if (r)
		return -r;
	a->gid_tbl_len = DPV_GID_TABLE_LEN;
	a->pkey_tbl_len = DPV_PKEY_TABLE_LEN;
	a->max_msg_sz = DPV_MAX_MSG_SZ;
	a->port_cap_flags = DPV_PORT_CAP_FLAGS;
	a->max_vl_num = 1;
	a->link_layer = IBV_LINK_LAYER_ETHERNET;
	a->flags = IBV_QPF_GRH_REQUIRED;
	return 0;
}

static int vctx_query_port(struct ibv_context *c, uint8_t port, struct ibv_port_attr *a, size_t len)
{
	struct ibv_port_attr full;
	int r = dpv_query_port_full(c, port, &full);
	if (r)
		return r;
	memcpy(a, &full, len < sizeof(full) ? len : sizeof(full));
	return 0;
}

/**
 * ibv_query_port (exported, old ABI): copies the 48 bytes of
 * struct _compat_ibv_port_attr, as rdma-core does, since binaries built
 * against old headers pass the short struct. The verbs.h inline reaches the
 * full 52-byte query through verbs_context.query_port.
 * RETURN VALUE: 0, or EINVAL (NULL argument, port != 1).
 */
#undef ibv_query_port
DPV_EXPORT int ibv_query_port(struct ibv_context *context, uint8_t port_num,
			      struct _compat_ibv_port_attr *port_attr);
int ibv_query_port(struct ibv_context *context, uint8_t port_num, struct _compat_ibv_port_attr *port_attr)
{
	struct ibv_port_attr full;
	int r = dpv_query_port_full(context, port_num, &full);
	if (r)
		return r;
	memcpy(port_attr, &full, offsetof(struct ibv_port_attr, port_cap_flags2)); /* 48 bytes */
	return 0;
}

/**
 * ibv_query_gid: 0 and the GID (all zero for an empty entry below
 * gid_tbl_len), or -1 with errno EINVAL for a bad port or index.
 */
DPV_EXPORT int ibv_query_gid(struct ibv_context *context, uint8_t port_num, int index, union ibv_gid *gid)
{
	struct dpv_gid g;
	if (!context || !gid || port_num != DPV_PORT_NUM || index < 0 ||
	    dpv_dev_gid(to_dctx(context)->dev, (uint32_t)index, &g)) {
		errno = EINVAL;
		return -1;
	}
	memcpy(gid->raw, g.raw, 16);
	return 0;
}

/* enum ibv_gid_type_sysfs in rdma-core's driver.h */
#define DPV_GID_TYPE_SYSFS_IB_ROCE_V1 0
#define DPV_GID_TYPE_SYSFS_ROCE_V2 1

/**
 * ibv_query_gid_type (IBVERBS_PRIVATE_34): 0 and the sysfs GID type (1 =
 * RoCE v2 for every valid entry, 0 for empty ones), -1 with errno EINVAL for
 * a bad port or index.
 */
DPV_EXPORT int ibv_query_gid_type(struct ibv_context *context, uint8_t port_num, unsigned int index,
				  int *type);
int ibv_query_gid_type(struct ibv_context *context, uint8_t port_num, unsigned int index, int *type)
{
	struct dpv_gid g;
	if (!context || !type || port_num != DPV_PORT_NUM || dpv_dev_gid(to_dctx(context)->dev, index, &g)) {
		errno = EINVAL;
		return -1;
	}
	*type = g.valid ? DPV_GID_TYPE_SYSFS_ROCE_V2 : DPV_GID_TYPE_SYSFS_IB_ROCE_V1;
	return 0;
}

static void fill_gid_entry(const struct dpv_gid *g, uint32_t i, struct ibv_gid_entry *e)
{
	memset(e, 0, sizeof(*e));
	memcpy(e->gid.raw, g->raw, 16);
	e->gid_index = i;
	e->port_num = DPV_PORT_NUM;
	e->gid_type = IBV_GID_TYPE_ROCE_V2;
}

/**
 * _ibv_query_gid_ex: 0, ENODATA for an empty entry, EINVAL for a bad port,
 * index, flags or entry size.
 */
DPV_EXPORT int _ibv_query_gid_ex(struct ibv_context *context, uint32_t port_num, uint32_t gid_index,
				 struct ibv_gid_entry *entry, uint32_t flags, size_t entry_size)
{
	struct dpv_gid g;
	if (!context || !entry || port_num != DPV_PORT_NUM || flags || entry_size < sizeof(*entry) ||
	    dpv_dev_gid(to_dctx(context)->dev, gid_index, &g))
		return EINVAL;
	if (!g.valid)
		return ENODATA;
	fill_gid_entry(&g, gid_index, entry);
	return 0;
}

/**
 * _ibv_query_gid_table: the number of valid entries written, or a negative
 * errno (-EINVAL for bad flags or entry size, max_entries too small).
 */
DPV_EXPORT ssize_t _ibv_query_gid_table(struct ibv_context *context, struct ibv_gid_entry *entries,
					size_t max_entries, uint32_t flags, size_t entry_size)
{
	if (!context || (!entries && max_entries) || flags || entry_size < sizeof(struct ibv_gid_entry))
		return -EINVAL;
	struct dpv_device *d = to_dctx(context)->dev;
	size_t n = 0;
	for (uint32_t i = 0; i < DPV_GID_TABLE_LEN; i++) {
		struct dpv_gid g;
		if (dpv_dev_gid(d, i, &g) || !g.valid)
			continue;
		if (n >= max_entries)
			return -EINVAL; /* as rdma-core: the buffer is too small */
		fill_gid_entry(&g, i, (struct ibv_gid_entry *)((char *)entries + n * entry_size));
		n++;
	}
	return (ssize_t)n;
}

/** ibv_query_pkey: 0 and P_Key 0xffff at index 0; -1 (errno EINVAL) otherwise. */
DPV_EXPORT int ibv_query_pkey(struct ibv_context *context, uint8_t port_num, int index, __be16 *pkey)
{
	if (!context || !pkey || port_num != DPV_PORT_NUM || index < 0 || index >= DPV_PKEY_TABLE_LEN) {
		errno = EINVAL;
		return -1;
	}
	*pkey = htobe16(DPV_DEFAULT_PKEY);
	return 0;
}

/** ibv_get_pkey_index: the index of pkey (network order) or -1. */
DPV_EXPORT int ibv_get_pkey_index(struct ibv_context *context, uint8_t port_num, __be16 pkey)
{
	if (!context || port_num != DPV_PORT_NUM)
		return -1;
	return (be16toh(pkey) & 0x7fff) == (DPV_DEFAULT_PKEY & 0x7fff) ? 0 : -1;
}

/* ---- contexts ---- */

/* A context on device d (ibv_open_device), or (d NULL, import_fd >= 0) on
 * the device of the context whose command descriptor import_fd is
 * (ibv_import_device). NULL with errno. */
static struct ibv_context *context_new(struct dpv_core *core, struct dpv_device *d, int import_fd)
{
	struct dpv_context *ctx = calloc(1, sizeof(*ctx));
	if (!ctx) {
		errno = ENOMEM;
		return NULL;
	}
	int fds[2];
	if (pipe2(fds, O_CLOEXEC) != 0) {
		free(ctx);
		return NULL;
	}
	fcntl(fds[1], F_SETFL, O_NONBLOCK);
	int cmd_fd = -1, id;
	if (!d) {
		unsigned int idx = 0;
		id = core->ops->ctx_import(import_fd, &idx, fds[1], &cmd_fd);
		if (id > 0 && !(d = dpv_core_dev(core, idx))) {
			core->ops->ctx_close(core->devs[0].drv_dev, (uint32_t)id);
			id = -ENODEV;
		}
		/* embedded mode: a context of this process (its stand-in) */
		if (id == -EOPNOTSUPP && (id = dpv_import_local_ctx(core, import_fd, ctx, &d)) == 0)
			id = d->ops->ctx_open(d->drv_dev, fds[1], &cmd_fd);
	} else {
		id = d->ops->ctx_open(d->drv_dev, fds[1], &cmd_fd);
	}
	/* no kernel command channel in embedded mode: an empty memfd stands
	 * in, so that code which dup()s or polls cmd_fd finds a valid
	 * descriptor, and its inode names the context to ibv_import_device
	 * within the process */
	if (id > 0 && cmd_fd < 0 && (cmd_fd = memfd_create("dpverbs-cmd", MFD_CLOEXEC)) < 0) {
		int e = errno;
		d->ops->ctx_close(d->drv_dev, (uint32_t)id);
		id = -e;
	}
	if (id < 0) {
		if (cmd_fd >= 0)
			close(cmd_fd);
		close(fds[0]);
		close(fds[1]);
		free(ctx);
		errno = -id;
		return NULL;
	}
	struct ibv_context *c = &ctx->vctx.context;
	c->cmd_fd = cmd_fd;
	ctx->dev = d;
	ctx->async_wfd = fds[1];
	ctx->drv_ctx = (uint32_t)id;
	rte_spinlock_init(&ctx->async_lock);
	c->device = &d->ibdev;
	c->async_fd = fds[0];
	c->num_comp_vectors = DPV_NUM_COMP_VECTORS;
	pthread_mutex_init(&c->mutex, NULL);
	c->abi_compat = __VERBS_ABI_IS_EXTENDED;
	ctx->vctx.sz = sizeof(ctx->vctx);
	dpv_context_ops_init(ctx);
	ctx->vctx.query_port = vctx_query_port;
	ctx->vctx.query_device_ex = vctx_query_device_ex;
	ctx->vctx.query_rt_values = vctx_query_rt_values;
	rte_spinlock_lock(&d->ctx_lock);
	LIST_INSERT_HEAD(&d->ctxs, ctx, next);
	rte_spinlock_unlock(&d->ctx_lock);
	return c;
}

/**
 * ibv_open_device: a context, or NULL with errno EINVAL (NULL), ENODEV (not
 * a device of this process' list), EMFILE/ENFILE (no descriptors), ENOMEM,
 * EIO (shared mode: dpverbsd is gone).
 */
DPV_EXPORT struct ibv_context *ibv_open_device(struct ibv_device *device)
{
	struct dpv_core *core = dpv_core_get();
	if (!device) {
		errno = EINVAL;
		return NULL;
	}
	struct dpv_device *d = to_ddev(device);
	if (!core || d < core->devs || d >= core->devs + core->n_devs) {
		errno = ENODEV;
		return NULL;
	}
	return context_new(core, d, -1);
}

/**
 * ibv_import_device: a new context on the same device context as the one
 * whose ibv_context.cmd_fd is cmd_fd (of this process or, passed over a
 * Unix socket, of another one); PDs and MRs of that context can then be
 * imported (ibv_import_pd, ibv_import_mr). In shared mode the command
 * descriptor names a context in dpverbsd; in embedded mode only a context
 * of this process can be imported (the engine is the process'). RETURN
 * VALUE: the context, or NULL with errno: EBADF (cmd_fd is not a context's
 * command descriptor: in embedded mode, not one of this process'), EIO
 * (the daemon is gone), ENOMEM.
 */
DPV_EXPORT struct ibv_context *ibv_import_device(int cmd_fd)
{
	struct dpv_core *core = dpv_core_get();
	if (!core)
		return NULL;
	if (cmd_fd < 0 || !core->n_devs) {
		errno = cmd_fd < 0 ? EBADF : ENODEV;
		return NULL;
	}
	return context_new(core, NULL, cmd_fd);
}

/** ibv_close_device: 0, or EINVAL for NULL. */
DPV_EXPORT int ibv_close_device(struct ibv_context *context)
{
	if (!context)
		return EINVAL;
	struct dpv_context *ctx = to_dctx(context);
	rte_spinlock_lock(&ctx->dev->ctx_lock);
	LIST_REMOVE(ctx, next);
	rte_spinlock_unlock(&ctx->dev->ctx_lock);
	ctx->dev->ops->ctx_close(ctx->dev->drv_dev, ctx->drv_ctx);
	close(context->async_fd);
	if (context->cmd_fd >= 0)
		close(context->cmd_fd);
	close(ctx->async_wfd);
	pthread_mutex_destroy(&context->mutex);
	free(ctx);
	return 0;
}
