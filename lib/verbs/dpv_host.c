/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The engine host's API (dpv_host.h): the core in the host's role, its
 * devices by index, and the driver's operations a host needs, each reached
 * here through the device's tables (dpv_ops: the verbs operations,
 * dpv_dev_engine: the engine's services; defaults filled in by the core),
 * so that a host never touches the tables, the core or the façade's
 * objects.
 */
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "dpv_verbs.h"

/* The device of index dev, or NULL (errno ENODEV). */
static struct dpv_device *dev_of(uint32_t dev)
{
	struct dpv_device *d = dpv_core_dev(dpv_core_peek(), dev);
	if (!d)
		errno = ENODEV;
	return d;
}

const struct dpv_conf *dpv_host_start(void)
{
	dpv_core_set_role(DPV_ROLE_DAEMON);
	struct dpv_core *c = dpv_core_get();
	return c ? &c->conf : NULL;
}

unsigned int dpv_host_n_devs(void)
{
	struct dpv_core *c = dpv_core_peek();
	return c ? c->n_devs : 0;
}

bool dpv_host_dev_ok(uint32_t dev)
{
	return dpv_core_dev(dpv_core_peek(), dev) != NULL;
}

const struct dpv_params *dpv_host_params(void)
{
	struct dpv_core *c = dpv_core_peek();
	return c ? &c->params : NULL;
}

int dpv_host_dev_query(uint32_t dev, struct dpv_host_dev *out)
{
	struct dpv_device *d = dev_of(dev);
	if (!d)
		return -ENODEV;
	memset(out, 0, sizeof(*out));
	snprintf(out->name, sizeof(out->name), "%s", d->ibdev.name);
	memcpy(out->mac, d->mac, sizeof(out->mac));
	out->node_guid = be64toh(d->guid);
	out->dm_size = d->dm_size;
	return 0;
}

int dpv_host_dev_index(const void *drv_dev)
{
	struct dpv_core *c = dpv_core_peek();
	for (unsigned int i = 0; c && i < c->n_devs; i++)
		if (c->devs[i].drv_dev == drv_dev)
			return (int)i;
	return -ENODEV;
}

void dpv_host_set_event_sink(const struct dpv_event_sink *sink)
{
	dpv_event_set_sink(sink);
}

/* ---- devices ---- */

int dpv_host_query_port(uint32_t dev, struct ibv_port_attr *attr)
{
	struct dpv_device *d = dev_of(dev);
	return d ? dpv_ops(d)->query_port(d->drv_dev, attr) : -ENODEV;
}

int dpv_host_query_gid(uint32_t dev, uint32_t index, struct dpv_gid *gid)
{
	struct dpv_device *d = dev_of(dev);
	return d ? dpv_ops(d)->query_gid(d->drv_dev, index, gid) : -ENODEV;
}

int dpv_host_neigh_query(uint32_t dev, const uint8_t ip[16], uint8_t mac[6])
{
	struct dpv_device *d = dev_of(dev);
	return d ? dpv_ops(d)->neigh_query(d->drv_dev, ip, mac) : -ENODEV;
}

/* ---- PDs, MRs, AHs ---- */

int dpv_host_alloc_pd(uint32_t dev, uint32_t pdn)
{
	struct dpv_device *d = dev_of(dev);
	return d ? dpv_ops(d)->alloc_pd(d->drv_dev, pdn) : -ENODEV;
}

void dpv_host_dealloc_pd(uint32_t dev, uint32_t pdn)
{
	struct dpv_device *d = dev_of(dev);
	if (d)
		dpv_ops(d)->dealloc_pd(d->drv_dev, pdn);
}

int dpv_host_reg_mr(uint32_t dev, const struct dpv_mr_desc *mr)
{
	struct dpv_device *d = dev_of(dev);
	return d ? dpv_ops(d)->reg_mr(d->drv_dev, mr) : -ENODEV;
}

int dpv_host_dereg_mr(uint32_t dev, uint32_t key, bool force)
{
	struct dpv_device *d = dev_of(dev);
	return d ? dpv_ops(d)->dereg_mr(d->drv_dev, key, force) : -ENODEV;
}

int dpv_host_alloc_mw(uint32_t dev, const struct dpv_mw_desc *mw)
{
	struct dpv_device *d = dev_of(dev);
	return d ? dpv_ops(d)->alloc_mw(d->drv_dev, mw) : -ENODEV;
}

void dpv_host_dealloc_mw(uint32_t dev, uint32_t key)
{
	struct dpv_device *d = dev_of(dev);
	if (d)
		dpv_ops(d)->dealloc_mw(d->drv_dev, key);
}

int dpv_host_create_ah(uint32_t dev, const struct dpv_ah_desc *ah)
{
	struct dpv_device *d = dev_of(dev);
	return d ? dpv_ops(d)->create_ah(d->drv_dev, ah) : -ENODEV;
}

void dpv_host_destroy_ah(uint32_t dev, uint32_t handle)
{
	struct dpv_device *d = dev_of(dev);
	if (d)
		dpv_ops(d)->destroy_ah(d->drv_dev, handle);
}

/* ---- CQs, SRQs ---- */

void *dpv_host_create_cq(uint32_t dev, const struct dpv_cq_cfg *cfg)
{
	struct dpv_device *d = dev_of(dev);
	return d ? dpv_ops(d)->create_cq(d->drv_dev, cfg) : NULL;
}

void dpv_host_destroy_cq(uint32_t dev, void *cq)
{
	struct dpv_device *d = dev_of(dev);
	if (d)
		dpv_ops(d)->destroy_cq(cq);
}

int dpv_host_resize_cq(uint32_t dev, void *cq, struct dpv_ring_hdr *ring, uint32_t size)
{
	struct dpv_device *d = dev_of(dev);
	return d ? dpv_ops(d)->resize_cq(cq, ring, size) : -ENODEV;
}

void *dpv_host_create_srq(uint32_t dev, const struct dpv_srq_cfg *cfg)
{
	struct dpv_device *d = dev_of(dev);
	return d ? dpv_ops(d)->create_srq(d->drv_dev, cfg) : NULL;
}

void dpv_host_destroy_srq(uint32_t dev, void *srq)
{
	struct dpv_device *d = dev_of(dev);
	if (d)
		dpv_ops(d)->destroy_srq(srq);
}

/* ---- QPs ---- */

void *dpv_host_create_qp(uint32_t dev, struct dpv_qp_cfg *cfg, struct dpv_bufs *bufs)
{
	struct dpv_device *d = dev_of(dev);
	memset(bufs, 0, sizeof(*bufs));
	if (!d)
		return NULL;
	bufs->dev = d; /* the engine's QP context may be in its queue memory */
	cfg->dev = d->drv_dev;
	cfg->bufs = bufs;
	void *qp = dpv_ops(d)->create_qp(cfg);
	if (!qp) {
		int e = errno;
		dpv_bufs_free_all(bufs);
		memset(bufs, 0, sizeof(*bufs));
		errno = e;
	}
	return qp;
}

void dpv_host_destroy_qp(uint32_t dev, void *qp, struct dpv_bufs *bufs)
{
	struct dpv_device *d = dev_of(dev);
	if (!d)
		return;
	dpv_ops(d)->destroy_qp(qp);
	dpv_bufs_free_all(bufs);
}

int dpv_host_modify_qp(uint32_t dev, void *qp, const struct ibv_qp_attr *attr, int mask,
		       enum ibv_qp_state cur, enum ibv_qp_state to)
{
	struct dpv_device *d = dev_of(dev);
	return d ? dpv_ops(d)->modify_qp(qp, attr, mask, cur, to) : -ENODEV;
}

enum ibv_qp_state dpv_host_qp_state(uint32_t dev, void *qp)
{
	struct dpv_device *d = dev_of(dev);
	return d ? dpv_ops(d)->query_qp_state(qp) : IBV_QPS_ERR;
}

void dpv_host_qp_counters(uint32_t dev, void *qp, uint64_t *cnt, unsigned int n)
{
	struct dpv_device *d = dev_of(dev);
	if (d)
		dpv_ops(d)->query_qp_counters(qp, cnt, n);
	else
		memset(cnt, 0, n * sizeof(*cnt));
}

int dpv_host_mcast(uint32_t dev, void *qp, const uint8_t gid[16], bool attach)
{
	struct dpv_device *d = dev_of(dev);
	if (!d)
		return -ENODEV;
	return attach ? dpv_ops(d)->mcast_attach(qp, gid) : dpv_ops(d)->mcast_detach(qp, gid);
}

int dpv_host_flow(uint32_t dev, void *qp, const struct dpv_raw_rule *rule, uint32_t *handle)
{
	struct dpv_device *d = dev_of(dev);
	if (!d)
		return -ENODEV;
	return rule ? dpv_ops(d)->flow_create(qp, rule, handle) : dpv_ops(d)->flow_destroy(qp, *handle);
}

void dpv_host_sq_doorbell(uint32_t dev, void *qp)
{
	struct dpv_device *d = dev_of(dev);
	if (d)
		dpv_ops(d)->sq_doorbell(qp);
}

/* ---- checks ---- */

int dpv_host_qp_modify_check(enum ibv_qp_type type, uint32_t dev, enum ibv_qp_state cur,
			     const struct ibv_qp_attr *attr, int mask, enum ibv_qp_state *to)
{
	struct dpv_device *d = dev_of(dev);
	if (!d)
		return -ENODEV;
	return dpv_qp_modify_check(type, d, cur, attr, mask, to) ? -EINVAL : 0;
}

/* ---- the engine's services ---- */

unsigned int dpv_host_db_count(uint32_t dev)
{
	struct dpv_device *d = dev_of(dev);
	return d ? dpv_dev_engine(d)->db_count(d->drv_dev) : 0;
}

void *dpv_host_db_attach(uint32_t dev, unsigned int index, struct dpv_db_ring *ring, uint32_t size,
			 uint32_t owner)
{
	struct dpv_device *d = dev_of(dev);
	return d ? dpv_dev_engine(d)->db_attach(d->drv_dev, index, ring, size, owner) : NULL;
}

void dpv_host_db_detach(uint32_t dev, void *db)
{
	struct dpv_device *d = dev_of(dev);
	if (d)
		dpv_dev_engine(d)->db_detach(db);
}

unsigned int dpv_host_qp_db_index(uint32_t dev, void *qp)
{
	struct dpv_device *d = dev_of(dev);
	return d ? dpv_dev_engine(d)->qp_db_index(qp) : 0;
}

void dpv_host_db_sync(uint32_t dev)
{
	struct dpv_device *d = dev_of(dev);
	if (d)
		dpv_dev_engine(d)->db_sync(d->drv_dev);
}

void dpv_host_gsi_demux(dpv_gsi_demux_fn fn, dpv_gsi_tx_fn tx, void *arg)
{
	struct dpv_device *d = dpv_core_dev(dpv_core_peek(), 0);
	if (d) /* one driver: its engine serves every port */
		dpv_dev_engine(d)->gsi_demux(fn, tx, arg);
}

int dpv_host_progress(void)
{
	struct dpv_core *c = dpv_core_peek();
	return c ? c->ops->progress(NULL) : 0;
}

bool dpv_host_progress_is_background(void)
{
	struct dpv_core *c = dpv_core_peek();
	return c && c->ops->progress_is_background();
}
