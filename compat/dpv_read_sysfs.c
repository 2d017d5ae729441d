/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The sysfs emulation of the drop-in: the attribute files that tools read
 * through ibv_read_sysfs_file() below a device's ibdev_path
 * (/sys/class/infiniband/<dev>: board_id, node_type, fw_ver, hw_rev,
 * node_desc, ports/1/gids/<i>, ...) or its dev_path
 * (/sys/class/infiniband_verbs/uverbs<N>: ibdev, abi_version). There is no
 * kernel behind dpverbs, so no real sysfs either.
 *
 * The texts come from the table of the sysfs view (lib/conf/dpv_view.c),
 * the same that apps/dpv_sysfs writes into the private mount namespace of
 * "dpverbs-run --view": a program that reads a file there and one that asks
 * ibv_read_sysfs_file() get the same text. The view filled here is that of
 * the running device (its MAC, its GIDs, its port's state and rate); the
 * files under --view show the configuration's (see dpv_view.h).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "dpv_verbs.h"
#include "dpv_view.h"

/* The view of a running device: GIDs, state and rate from its driver. */
static void view_of(struct dpv_device *d, struct dpv_view_dev *v)
{
	struct ibv_port_attr pa;
	struct dpv_gid g;

	const struct dpv_conf *conf = dpv_core_conf();
	const struct dpv_conf_port *cp = conf ? dpv_conf_port_by_name(conf, d->ibdev.name) : NULL;
	const char *nd = cp ? dpv_conf_port_netdev(cp) : NULL;

	memset(v, 0, sizeof(*v));
	snprintf(v->name, sizeof(v->name), "%s", d->ibdev.name);
	snprintf(v->netdev, sizeof(v->netdev), "%s", nd ? nd : d->ibdev.name);
	v->index = d->index;
	memcpy(v->mac, d->mac, 6);
	v->mac_known = true;
	for (uint32_t i = 0; i < DPV_GID_TABLE_LEN; i++) {
		if (dpv_dev_gid(d, i, &g) != 0)
			continue;
		memcpy(v->gids[i].gid, g.raw, 16);
		v->gids[i].valid = g.valid;
		v->gids[i].ip_ver = g.ip_ver;
	}
	memset(&pa, 0, sizeof(pa));
	if (dpv_ops(d)->query_port(d->drv_dev, &pa) == 0) {
		v->state = (uint8_t)pa.state;
		v->lid = pa.lid;
		v->phys_state = pa.phys_state;
		v->active_speed = pa.active_speed;
		v->active_width = pa.active_width;
	}
}

/**
 * dpv_sysfs_read - the hook ibv_read_sysfs_file() calls (dpv_abi_stubs.c).
 * RETURN VALUE: the number of bytes stored in buf (the value and a newline,
 * truncated to size), or -1 with errno ENOENT for a directory or file that
 * is not emulated.
 */
DPV_EXPORT int dpv_sysfs_read(const char *dir, const char *file, char *buf, size_t size);
int dpv_sysfs_read(const char *dir, const char *file, char *buf, size_t size)
{
	static const char root[] = "/sys/";
	struct dpv_core *c = dpv_core_get();
	char path[512];

	for (unsigned int i = 0; c && i < c->n_devs; i++) {
		struct dpv_device *d = &c->devs[i];
		if (strcmp(dir, d->ibdev.ibdev_path) != 0 && strcmp(dir, d->ibdev.dev_path) != 0)
			continue;
		int n = snprintf(path, sizeof(path), "%s/%s", dir + sizeof(root) - 1, file);
		if (n < 0 || (size_t)n >= sizeof(path))
			break;
		struct dpv_view_dev v;
		view_of(d, &v);
		int r = dpv_view_read(&v, path, buf, size);
		if (r < 0)
			break;
		return r;
	}
	errno = ENOENT;
	return -1;
}
