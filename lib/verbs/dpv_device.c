/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Devices and contexts: discovery, open/close, device/port/GID/P_Key queries,
 * async events. One verbs device per configured port, one port each.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <endian.h>

#include "dpv_verbs.h"
#include <rte_cycles.h>

static struct dpv_device g_devs[DPV_MAX_PORTS];
static unsigned int g_ndevs;
static pthread_once_t g_devs_once = PTHREAD_ONCE_INIT;

struct dpv_runtime *dpv_rt(void)
{
	return dpv_runtime_get();
}

static void devs_init(void)
{
	struct dpv_runtime *rt = dpv_runtime_get();
	if (!rt)
		return;
	dpv_port_set_rx_handler(dpv_transport_rx);
	dpv_port_set_poll_handler(dpv_transport_poll);
	for (unsigned int i = 0; i < rt->n_ports; i++) {
		struct dpv_device *d = &g_devs[i];
		struct dpv_port *p = &rt->ports[i];
		d->port = p;
		d->index = i;
		d->ibdev.node_type = IBV_NODE_CA;
		d->ibdev.transport_type = IBV_TRANSPORT_IB;
		snprintf(d->ibdev.name, sizeof(d->ibdev.name), "%s", p->name);
		snprintf(d->ibdev.dev_name, sizeof(d->ibdev.dev_name), "uverbs-%s", p->name);
		snprintf(d->ibdev.dev_path, sizeof(d->ibdev.dev_path),
			 "/sys/class/infiniband_verbs/uverbs-%s", p->name);
		snprintf(d->ibdev.ibdev_path, sizeof(d->ibdev.ibdev_path), "/sys/class/infiniband/%s",
			 p->name);
		/* node GUID: modified EUI-64 of the MAC, as rxe does */
		uint8_t g[8] = {(uint8_t)(p->mac[0] ^ 2), p->mac[1], p->mac[2], 0xff, 0xfe,
				p->mac[3], p->mac[4], p->mac[5]};
		memcpy(&d->guid, g, 8);
	}
	g_ndevs = rt->n_ports;
}

struct dpv_device *dpv_devices(unsigned int *n)
{
	pthread_once(&g_devs_once, devs_init);
	*n = g_ndevs;
	return g_ndevs ? g_devs : NULL;
}

/* Hook for ibv_read_sysfs_file: the few sysfs files tools read. */
DPV_EXPORT int dpv_sysfs_read(const char *dir, const char *file, char *buf, size_t size);
int dpv_sysfs_read(const char *dir, const char *file, char *buf, size_t size)
{
	unsigned int n;
	struct dpv_device *d = dpv_devices(&n);
	for (unsigned int i = 0; i < n; i++) {
		if (strcmp(dir, d[i].ibdev.ibdev_path) != 0)
			continue;
		const char *val = NULL;
		char tmp[96];
		if (!strcmp(file, "board_id"))
			val = "DPVERBS_DPDK_ROCEV2";
		else if (!strcmp(file, "node_type"))
			val = "1: CA";
		else if (!strcmp(file, "fw_ver"))
			val = "0.1.0";
		else if (!strcmp(file, "hw_rev"))
			val = "1";
		else if (!strcmp(file, "node_desc")) {
			snprintf(tmp, sizeof(tmp), "dpverbs %s", d[i].ibdev.name);
			val = tmp;
		}
		if (!val)
			break;
		int len = snprintf(buf, size, "%s\n", val);
		return len < (int)size ? len : (int)size;
	}
	errno = ENOENT;
	return -1;
}

DPV_EXPORT struct ibv_device **ibv_get_device_list(int *num_devices)
{
	unsigned int n;
	struct dpv_device *d = dpv_devices(&n);
	if (num_devices)
		*num_devices = 0;
	if (!d) {
		struct dpv_runtime *rt = dpv_runtime_get();
		errno = rt ? ENODEV : (errno ? errno : ENODEV);
		return NULL;
	}
	struct ibv_device **list = calloc(n + 1, sizeof(*list));
	if (!list) {
		errno = ENOMEM;
		return NULL;
	}
	for (unsigned int i = 0; i < n; i++)
		list[i] = &d[i].ibdev;
	if (num_devices)
		*num_devices = (int)n;
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
	if (!device)
		return 0;
	return container_of(device, struct dpv_device, ibdev)->guid;
}

DPV_EXPORT int ibv_get_device_index(struct ibv_device *device)
{
	if (!device)
		return -1;
	return (int)container_of(device, struct dpv_device, ibdev)->index;
}

/* ---- context ops defaults ---- */

static void *op_compat_unsupported(void)
{
	errno = EOPNOTSUPP;
	return NULL;
}

static struct ibv_mw *op_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type)
{
	errno = EOPNOTSUPP;
	return NULL;
}

static int op_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mw_bind *b)
{
	return EOPNOTSUPP;
}

static int op_dealloc_mw(struct ibv_mw *mw)
{
	return EOPNOTSUPP;
}

static int op_compat_query_device(struct ibv_context *c, struct ibv_device_attr *a)
{
	return ibv_query_device(c, a);
}

static int op_compat_query_port(struct ibv_context *c, uint8_t p, struct _compat_ibv_port_attr *a)
{
	return ibv_query_port(c, p, (struct ibv_port_attr *)a);
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

static void fill_device_attr(struct dpv_device *d, struct ibv_device_attr *a)
{
	struct dpv_runtime *rt = dpv_runtime_peek();
	const struct dpv_conf *c = &rt->conf;
	memset(a, 0, sizeof(*a));
	snprintf(a->fw_ver, sizeof(a->fw_ver), "0.1.0");
	a->node_guid = d->guid;
	a->sys_image_guid = d->guid;
	a->max_mr_size = c->max_mr_size;
	a->page_size_cap = 0xfffff000; /* any 4 KiB multiple */
	a->vendor_id = DPV_VENDOR_ID;
	a->vendor_part_id = DPV_VENDOR_PART_ID;
	a->hw_ver = DPV_HW_VER;
	/* the object tables hold 64 Ki entries (QPN 0x11.., MR and SRQ index 1..) */
	a->max_qp = (int)RTE_MIN(c->max_qp, 65536u - DPV_QPN_FIRST);
	a->max_qp_wr = (int)c->max_qp_wr;
	a->device_cap_flags = IBV_DEVICE_SYS_IMAGE_GUID |
			      IBV_DEVICE_RC_RNR_NAK_GEN | IBV_DEVICE_XRC |
			      IBV_DEVICE_CHANGE_PHY_PORT |
			      IBV_DEVICE_UD_AV_PORT_ENFORCE | IBV_DEVICE_N_NOTIFY_CQ;
	a->max_sge = (int)c->max_sge;
	a->max_sge_rd = (int)c->max_sge;
	a->max_cq = (int)c->max_cq;
	a->max_cqe = (int)c->max_cqe;
	a->max_mr = (int)RTE_MIN(c->max_mr, 65535u);
	a->max_pd = (int)c->max_pd;
	a->max_qp_rd_atom = 16;
	a->max_ee_rd_atom = 0;
	a->max_res_rd_atom = a->max_qp * 16;
	a->max_qp_init_rd_atom = 16;
	a->max_ee_init_rd_atom = 0;
	a->atomic_cap = IBV_ATOMIC_HCA;
	a->max_ee = 0;
	a->max_rdd = 0;
	a->max_mw = 0;
	a->max_raw_ipv6_qp = 0;
	a->max_raw_ethy_qp = 0;
	a->max_mcast_grp = 0;
	a->max_mcast_qp_attach = 0;
	a->max_total_mcast_qp_attach = 0;
	a->max_ah = (int)c->max_ah;
	a->max_fmr = 0;
	a->max_map_per_fmr = 0;
	a->max_srq = (int)RTE_MIN(c->max_srq, 65535u);
	a->max_srq_wr = (int)c->max_qp_wr;
	a->max_srq_sge = (int)c->max_sge;
	a->max_pkeys = DPV_PKEY_TABLE_LEN;
	a->local_ca_ack_delay = 15;
	a->phys_port_cnt = 1;
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

static int vctx_query_device_ex(struct ibv_context *c, const struct ibv_query_device_ex_input *in,
				struct ibv_device_attr_ex *attr, size_t attr_size)
{
	struct ibv_device_attr_ex full;
	if (!c || !attr)
		return EINVAL;
	if (in && in->comp_mask)
		return EINVAL;
	if (attr_size < sizeof(attr->orig_attr))
		return EINVAL;
	memset(&full, 0, sizeof(full));
	fill_device_attr(to_dctx(c)->dev, &full.orig_attr);
	full.comp_mask = 0;
	full.completion_timestamp_mask = UINT64_MAX; /* 64-bit TSC */
	full.hca_core_clock = rte_get_tsc_hz() / 1000; /* kHz */
	full.device_cap_flags_ex = full.orig_attr.device_cap_flags;
	full.max_dm_size = 0;
	full.phys_port_cnt_ex = 1;
	full.cq_mod_caps.max_cq_count = 0;
	memcpy(attr, &full, attr_size < sizeof(full) ? attr_size : sizeof(full));
	return 0;
}

static uint8_t speed_width(uint64_t mbps, uint8_t *width)
{
	/* IB speed x width closest to the Ethernet link speed */
	*width = 2; /* 4X */
	if (mbps >= 200000)
		return 64; /* HDR */
	if (mbps >= 100000)
		return 32; /* EDR */
	if (mbps >= 40000)
		return 16; /* FDR */
	if (mbps >= 25000) {
		*width = 1;
		return 32;
	}
	if (mbps >= 10000) {
		*width = 1;
		return 8; /* FDR10 x1 ~ 10G */
	}
	*width = 1;
	return 1; /* SDR */
}

int dpv_query_port_full(struct ibv_context *c, uint8_t port, struct ibv_port_attr *a)
{
	if (!c || !a)
		return EINVAL;
	if (port != 1)
		return EINVAL;
	struct dpv_port *p = to_dctx(c)->dev->port;
	memset(a, 0, sizeof(*a));
	a->state = p->link_up ? IBV_PORT_ACTIVE : IBV_PORT_DOWN;
	a->max_mtu = IBV_MTU_4096;
	a->active_mtu = (enum ibv_mtu)p->active_mtu;
	a->gid_tbl_len = (int)p->n_gids;
	a->port_cap_flags = IBV_PORT_CM_SUP | IBV_PORT_IP_BASED_GIDS;
	a->max_msg_sz = DPV_MAX_MSG_SZ;
	a->bad_pkey_cntr = (uint32_t)atomic_load(&p->stats.drop[DPV_DROP_BAD_PKEY]);
	a->qkey_viol_cntr = (uint32_t)atomic_load(&p->stats.drop[DPV_DROP_BAD_QKEY]);
	a->pkey_tbl_len = DPV_PKEY_TABLE_LEN;
	a->lid = 0;
	a->sm_lid = 0;
	a->lmc = 0;
	a->max_vl_num = 1;
	a->sm_sl = 0;
	a->subnet_timeout = 0;
	a->init_type_reply = 0;
	a->active_speed = speed_width(p->eth_speed_mbps, &a->active_width);
	a->phys_state = p->link_up ? 5 /* LinkUp */ : 3 /* Disabled */;
	a->link_layer = IBV_LINK_LAYER_ETHERNET;
	a->flags = IBV_QPF_GRH_REQUIRED;
	a->port_cap_flags2 = 0;
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
 * gid_tbl_len), or -1 for a bad port or index.
 */
DPV_EXPORT int ibv_query_gid(struct ibv_context *context, uint8_t port_num, int index, union ibv_gid *gid)
{
	if (!context || !gid || port_num != 1 || index < 0 || index >= DPV_GID_TABLE_LEN) {
		errno = EINVAL;
		return -1;
	}
	struct dpv_port *p = to_dctx(context)->dev->port;
	memcpy(gid->raw, p->gids[index].gid, 16);
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
	if (!context || !type || port_num != 1 || index >= DPV_GID_TABLE_LEN) {
		errno = EINVAL;
		return -1;
	}
	struct dpv_port *p = to_dctx(context)->dev->port;
	*type = p->gids[index].valid ? DPV_GID_TYPE_SYSFS_ROCE_V2 : DPV_GID_TYPE_SYSFS_IB_ROCE_V1;
	return 0;
}

static void fill_gid_entry(struct dpv_port *p, uint32_t i, struct ibv_gid_entry *e)
{
	memset(e, 0, sizeof(*e));
	memcpy(e->gid.raw, p->gids[i].gid, 16);
	e->gid_index = i;
	e->port_num = 1;
	e->gid_type = IBV_GID_TYPE_ROCE_V2;
	e->ndev_ifindex = 0;
}

/**
 * _ibv_query_gid_ex: 0, ENODATA for an empty entry, EINVAL for a bad port,
 * index, flags or entry size.
 */
DPV_EXPORT int _ibv_query_gid_ex(struct ibv_context *context, uint32_t port_num, uint32_t gid_index,
				 struct ibv_gid_entry *entry, uint32_t flags, size_t entry_size)
{
	if (!context || !entry || port_num != 1 || flags || gid_index >= DPV_GID_TABLE_LEN ||
	    entry_size < sizeof(*entry))
		return EINVAL;
	struct dpv_port *p = to_dctx(context)->dev->port;
	if (!p->gids[gid_index].valid)
		return ENODATA;
	fill_gid_entry(p, gid_index, entry);
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
	struct dpv_port *p = to_dctx(context)->dev->port;
	size_t n = 0;
	for (uint32_t i = 0; i < DPV_GID_TABLE_LEN; i++) {
		if (!p->gids[i].valid)
			continue;
		if (n >= max_entries)
			return -EINVAL; /* as rdma-core: the buffer is too small */
		fill_gid_entry(p, i, (struct ibv_gid_entry *)((char *)entries + n * entry_size));
		n++;
	}
	return (ssize_t)n;
}

/** ibv_query_pkey: 0 and P_Key 0xffff at index 0; -1 (errno EINVAL) otherwise. */
DPV_EXPORT int ibv_query_pkey(struct ibv_context *context, uint8_t port_num, int index, __be16 *pkey)
{
	if (!context || !pkey || port_num != 1 || index < 0 || index >= DPV_PKEY_TABLE_LEN) {
		errno = EINVAL;
		return -1;
	}
	*pkey = htobe16(DPV_DEFAULT_PKEY);
	return 0;
}

/** ibv_get_pkey_index: the index of pkey (network order) or -1. */
DPV_EXPORT int ibv_get_pkey_index(struct ibv_context *context, uint8_t port_num, __be16 pkey)
{
	if (!context || port_num != 1)
		return -1;
	return (be16toh(pkey) & 0x7fff) == (DPV_DEFAULT_PKEY & 0x7fff) ? 0 : -1;
}

extern struct ibv_cq_ex *dpv_create_cq_ex(struct ibv_context *c, struct ibv_cq_init_attr_ex *a);

DPV_EXPORT struct ibv_context *ibv_open_device(struct ibv_device *device)
{
	if (!device) {
		errno = EINVAL;
		return NULL;
	}
	unsigned int n;
	struct dpv_device *devs = dpv_devices(&n);
	struct dpv_device *d = container_of(device, struct dpv_device, ibdev);
	if (!devs || d < devs || d >= devs + n) {
		errno = ENODEV;
		return NULL;
	}
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
	ctx->dev = d;
	ctx->async_wfd = fds[1];
	rte_spinlock_init(&ctx->async_lock);
	fcntl(fds[1], F_SETFL, O_NONBLOCK);

	struct verbs_context *v = &ctx->vctx;
	struct ibv_context *c = &v->context;
	c->device = device;
	/* no kernel command channel; an eventfd stands in so that code which
	 * dup()s or polls cmd_fd finds a valid descriptor */
	c->cmd_fd = eventfd(0, EFD_CLOEXEC);
	c->async_fd = fds[0];
	c->num_comp_vectors = 1;
	pthread_mutex_init(&c->mutex, NULL);
	c->abi_compat = __VERBS_ABI_IS_EXTENDED;
	v->sz = sizeof(*v);

	struct ibv_context_ops *o = &c->ops;
	void *(*u)(void) = op_compat_unsupported;
	o->_compat_query_device = op_compat_query_device;
	o->_compat_query_port = op_compat_query_port;
	o->_compat_alloc_pd = o->_compat_dealloc_pd = o->_compat_reg_mr = u;
	o->_compat_rereg_mr = o->_compat_dereg_mr = u;
	o->alloc_mw = op_alloc_mw;
	o->bind_mw = op_bind_mw;
	o->dealloc_mw = op_dealloc_mw;
	o->_compat_create_cq = u;
	o->poll_cq = dpv_poll_cq;
	o->req_notify_cq = dpv_req_notify_cq;
	o->_compat_cq_event = o->_compat_resize_cq = o->_compat_destroy_cq = u;
	o->_compat_create_srq = o->_compat_modify_srq = o->_compat_query_srq = u;
	o->_compat_destroy_srq = u;
	o->post_srq_recv = dpv_post_srq_recv;
	o->_compat_create_qp = o->_compat_query_qp = o->_compat_modify_qp = u;
	o->_compat_destroy_qp = u;
	o->post_send = dpv_post_send;
	o->post_recv = dpv_post_recv;
	o->_compat_create_ah = o->_compat_destroy_ah = u;
	o->_compat_attach_mcast = o->_compat_detach_mcast = o->_compat_async_event = u;

	v->query_port = vctx_query_port;
	v->query_device_ex = vctx_query_device_ex;
	v->create_qp_ex = dpv_create_qp_ex;
	v->create_cq_ex = dpv_create_cq_ex;
	v->open_xrcd = dpv_open_xrcd;
	v->close_xrcd = dpv_close_xrcd;
	v->create_srq_ex = dpv_create_srq_ex;
	v->get_srq_num = dpv_get_srq_num;
	v->open_qp = dpv_open_qp;
	v->alloc_td = dpv_alloc_td;
	v->dealloc_td = dpv_dealloc_td;
	v->alloc_parent_domain = dpv_alloc_parent_domain;
	return c;
}

/** ibv_close_device: 0, or EINVAL for NULL. */
DPV_EXPORT int ibv_close_device(struct ibv_context *context)
{
	if (!context)
		return EINVAL;
	struct dpv_context *ctx = to_dctx(context);
	close(context->async_fd);
	if (context->cmd_fd >= 0)
		close(context->cmd_fd);
	close(ctx->async_wfd);
	pthread_mutex_destroy(&context->mutex);
	free(ctx);
	return 0;
}

void dpv_async_event(struct dpv_context *ctx, const struct ibv_async_event *ev)
{
	rte_spinlock_lock(&ctx->async_lock);
	ssize_t w = write(ctx->async_wfd, ev, sizeof(*ev));
	(void)w;
	rte_spinlock_unlock(&ctx->async_lock);
}

/**
 * ibv_get_async_event: blocks until an event (unless async_fd was made
 * non-blocking). RETURN VALUE: 0, or -1 with errno (EAGAIN when
 * non-blocking and nothing is pending, EINVAL for NULL).
 */
DPV_EXPORT int ibv_get_async_event(struct ibv_context *context, struct ibv_async_event *event)
{
	if (!context || !event) {
		errno = EINVAL;
		return -1;
	}
	ssize_t r = read(context->async_fd, event, sizeof(*event));
	if (r != (ssize_t)sizeof(*event)) {
		if (r >= 0)
			errno = EIO;
		return -1;
	}
	return 0;
}

/** ibv_ack_async_event: nothing waits on acknowledgements in dpverbs. */
DPV_EXPORT void ibv_ack_async_event(struct ibv_async_event *event)
{
	(void)event;
}
