/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * Devices of the drop-in librdmacm.so.1: rdma_get_devices,
 * rdma_free_devices, and the device an id is bound to.
 *
 * As in rdma-core, every device is opened once (ibv_get_device_list +
 * ibv_open_device of the dpverbs library this one is linked with) and its
 * context stays open for the life of the process: rdma_get_devices returns
 * the same contexts on every call and rdma_free_devices frees only the
 * array. The ids bound to a device share one PD (id->pd), allocated by the
 * first and deallocated when the last is destroyed. Devices are opened on
 * first use, not when the library loads: a program that only creates event
 * channels and ids never starts the dpverbs engine.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>

#include "dpv_rdmacm.h"

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static struct dpv_rdmacm_dev *g_devs; /* g_ndev entries once opened */
static int g_ndev;

/* Opens the devices (once). g_lock held. */
static int open_devices(void)
{
	struct ibv_device **list;
	struct dpv_rdmacm_dev *devs;
	int n = 0, k = 0;

	if (g_ndev > 0)
		return g_ndev;
	list = ibv_get_device_list(&n);
	if (list == NULL)
		return -1;
	devs = n > 0 ? calloc((size_t)n, sizeof(*devs)) : NULL;
	for (int i = 0; devs != NULL && i < n; i++) {
		struct ibv_device_attr attr;
		struct ibv_context *ctx = ibv_open_device(list[i]);

		if (ctx == NULL)
			continue; /* rdma-core leaves a device it cannot open out */
		if (ibv_query_device(ctx, &attr) != 0) {
			ibv_close_device(ctx);
			continue;
		}
		devs[k].verbs = ctx;
		devs[k].port_cnt = attr.phys_port_cnt;
		k++;
	}
	ibv_free_device_list(list);
	if (k == 0) {
		free(devs);
		return dpv_rdmacm_err(n > 0 && devs == NULL ? ENOMEM : ENODEV);
	}
	g_devs = devs;
	g_ndev = k;
	return k;
}

int dpv_rdmacm_devices(struct dpv_rdmacm_dev **devs)
{
	int n;

	pthread_mutex_lock(&g_lock);
	n = open_devices();
	if (n > 0)
		*devs = g_devs;
	pthread_mutex_unlock(&g_lock);
	return n;
}

/*
 * A NULL-terminated array of the open contexts, *num_devices set (0 on
 * failure, NULL returned with errno ENODEV when there is no device).
 */
struct ibv_context **rdma_get_devices(int *num_devices)
{
	struct ibv_context **list = NULL;
	struct dpv_rdmacm_dev *devs;
	int n = dpv_rdmacm_devices(&devs);

	if (n > 0) {
		list = calloc((size_t)n + 1, sizeof(*list));
		if (list == NULL)
			errno = ENOMEM;
		for (int i = 0; list != NULL && i < n; i++)
			list[i] = devs[i].verbs;
	}
	if (num_devices != NULL)
		*num_devices = list != NULL ? n : 0;
	return list;
}

void rdma_free_devices(struct ibv_context **list)
{
	free(list);
}

static struct dpv_rdmacm_dev *find_dev(struct ibv_context *verbs)
{
	for (int i = 0; i < g_ndev; i++)
		if (g_devs[i].verbs == verbs)
			return &g_devs[i];
	return NULL;
}

int dpv_rdmacm_id_set_device(struct dpv_rdmacm_id *p, struct ibv_context *verbs, uint8_t port)
{
	struct dpv_rdmacm_dev *d;
	int ret = 0;

	pthread_mutex_lock(&g_lock);
	d = find_dev(verbs);
	if (d == NULL || p->dev != NULL || port < 1 || port > d->port_cnt) {
		ret = dpv_rdmacm_err(EINVAL);
		goto out;
	}
	if (d->pd == NULL) {
		d->pd = ibv_alloc_pd(verbs);
		if (d->pd == NULL) {
			ret = -1;
			goto out;
		}
	}
	d->pd_users++;
	p->dev = d;
	p->id.verbs = verbs;
	p->id.pd = d->pd;
	p->id.port_num = port;
	p->id.route.addr.addr.ibaddr.pkey = htobe16(0xffff); /* the default P_Key (RoCE) */
out:
	pthread_mutex_unlock(&g_lock);
	return ret;
}

struct ibv_xrcd *dpv_rdmacm_xrcd(struct dpv_rdmacm_id *p)
{
	struct ibv_xrcd_init_attr a = {.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS,
				       .fd = -1, .oflags = O_CREAT};
	struct ibv_xrcd *x;

	if (p->dev == NULL) {
		errno = EINVAL;
		return NULL;
	}
	pthread_mutex_lock(&g_lock);
	if (p->dev->xrcd == NULL)
		p->dev->xrcd = ibv_open_xrcd(p->dev->verbs, &a);
	x = p->dev->xrcd;
	pthread_mutex_unlock(&g_lock);
	return x;
}

void dpv_rdmacm_id_put_device(struct dpv_rdmacm_id *p)
{
	struct dpv_rdmacm_dev *d = p->dev;

	if (d == NULL)
		return;
	pthread_mutex_lock(&g_lock);
	/* a PD the application still uses (an MR left on it) stays for the next id */
	if (--d->pd_users == 0) {
		if (d->xrcd != NULL && ibv_close_xrcd(d->xrcd) == 0)
			d->xrcd = NULL;
		if (ibv_dealloc_pd(d->pd) == 0)
			d->pd = NULL;
	}
	pthread_mutex_unlock(&g_lock);
	p->dev = NULL;
}
