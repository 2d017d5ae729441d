/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The sysfs view of dpverbs devices (dpv_view.h). The texts follow the
 * kernel's drivers/infiniband/core/sysfs.c (state_show, phys_state_show,
 * rate_show, show_port_gid, ...) so that parsers written for the kernel's
 * files (libibumad's sys_read_*, UCX, ibstatus) read them unchanged.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "dpv_nl.h"
#include "dpv_view.h"

#define VIEW_STR_(x) #x
#define VIEW_STR(x) VIEW_STR_(x)

uint8_t dpv_view_speed(uint64_t mbps, uint8_t *width)
{
	/* IB speed x width closest to the Ethernet link speed */
	*width = 2; /* 4X */
	if (mbps >= 200000)
		return 64; /* HDR */
	if (mbps >= 100000)
		return 32; /* EDR */
	if (mbps >= 40000)
		return 16; /* FDR */
	*width = 1;
	if (mbps >= 25000)
		return 32;
	if (mbps >= 10000)
		return 8; /* FDR10 x1 ~ 10G */
	return 1; /* SDR */
}

/* An "af_xdp" port: the interface's MAC, and its addresses' GIDs when the
 * port follows them (as the running port does, dpv_kif.c). */
static void view_kernel(const struct dpv_conf_port *cp, struct dpv_view_dev *d)
{
	struct dpv_nl_link l;
	struct dpv_nl_addr a[2 * DPV_GID_TABLE_LEN];
	struct in_addr v4;
	uint8_t v4p;

	if (dpv_nl_link_by_name(cp->iface, &l) != 0)
		return;
	memcpy(d->mac, l.mac, 6);
	d->mac_known = true;
	if (!dpv_conf_port_follows_kernel(cp)) {
		dpv_conf_gid_table(cp, d->mac, d->gids);
		return;
	}
	int n = dpv_nl_addrs(l.ifindex, a, 2 * DPV_GID_TABLE_LEN);
	if (n > 2 * DPV_GID_TABLE_LEN)
		n = 2 * DPV_GID_TABLE_LEN;
	dpv_conf_gid_table_addrs(d->mac, a, n > 0 ? n : 0, d->gids, &v4, &v4p);
	d->lid = cp->lid_off ? 0 : dpv_conf_lid_of(v4.s_addr, v4p);
}

int dpv_view_from_conf(const struct dpv_conf *c, unsigned int i, struct dpv_view_dev *d)
{
	if (!c || !d || i >= c->n_ports)
		return -EINVAL;
	const struct dpv_conf_port *cp = &c->ports[i];
	const char *nd = dpv_conf_port_netdev(cp);
	memset(d, 0, sizeof(*d));
	snprintf(d->name, sizeof(d->name), "%s", cp->name);
	snprintf(d->netdev, sizeof(d->netdev), "%s", nd ? nd : cp->name);
	d->index = i;
	d->mac_known = cp->mac_set;
	if (cp->mac_set)
		memcpy(d->mac, cp->mac, 6);
	dpv_conf_gid_table(cp, d->mac, d->gids);
	if (!cp->mac_set)
		memset(&d->gids[0], 0, sizeof(d->gids[0])); /* the PMD's MAC: not known */
	d->lid = cp->lid_off ? 0 : dpv_conf_lid_of(cp->ipv4.s_addr, cp->ipv4_prefix);
	if (cp->type == DPV_DEV_AF_XDP)
		view_kernel(cp, d);
	d->state = 4;      /* IBV_PORT_ACTIVE */
	d->phys_state = 5; /* LinkUp */
	d->active_speed = dpv_view_speed(DPV_NOMINAL_SPEED_MBPS, &d->active_width);
	return 0;
}

/* ---- texts ---- */

static const char *state_name(uint8_t s)
{
	static const char *const n[] = {"NOP", "DOWN", "INIT", "ARMED", "ACTIVE", "ACTIVE_DEFER"};
	return s < sizeof(n) / sizeof(n[0]) ? n[s] : "UNKNOWN";
}

static const char *phys_state_name(uint8_t s)
{
	static const char *const n[] = {"<unknown>", "Sleep", "Polling", "Disabled",
					"PortConfigurationTraining", "LinkUp", "LinkErrorRecovery",
					"Phy Test"};
	return s < sizeof(n) / sizeof(n[0]) ? n[s] : "<unknown>";
}

/* rate_show: "10 Gb/sec (1X FDR10)"; the lane rate in units of 100 Mb/s */
static void rate_text(uint8_t speed, uint8_t width, char *buf, size_t len)
{
	static const struct { uint8_t speed; const char *name; int rate; } sp[] = {
		{2, " DDR", 50}, {4, " QDR", 100}, {8, " FDR10", 100}, {16, " FDR", 140},
		{32, " EDR", 250}, {64, " HDR", 500}, {128, " NDR", 1000},
	};
	const char *name = " SDR";
	int rate = 25;
	for (size_t i = 0; i < sizeof(sp) / sizeof(sp[0]); i++)
		if (sp[i].speed == speed) {
			name = sp[i].name;
			rate = sp[i].rate;
		}
	int w = width == 2 ? 4 : width == 4 ? 8 : width == 8 ? 12 : width == 16 ? 2 : 1;
	rate *= w;
	snprintf(buf, len, "%d%s Gb/sec (%dX%s)", rate / 10, rate % 10 ? ".5" : "", w, name);
}

/* show_port_gid (%pI6): eight groups of four hex digits */
static void gid_text(const uint8_t g[16], char *buf, size_t len)
{
	snprintf(buf, len, "%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x",
		 g[0], g[1], g[2], g[3], g[4], g[5], g[6], g[7], g[8], g[9], g[10], g[11], g[12], g[13],
		 g[14], g[15]);
}

/* node_guid_show: the GUID in network order as four hex groups */
static void guid_text(const uint8_t g[8], char *buf, size_t len)
{
	snprintf(buf, len, "%02x%02x:%02x%02x:%02x%02x:%02x%02x", g[0], g[1], g[2], g[3], g[4], g[5], g[6],
		 g[7]);
}

/* ---- the walk ---- */

struct emit {
	dpv_view_fn fn;
	void *arg;
	int r;
};

static void put(struct emit *e, const char *val, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void put(struct emit *e, const char *val, const char *fmt, ...)
{
	char path[256];
	va_list ap;

	if (e->r)
		return;
	va_start(ap, fmt);
	vsnprintf(path, sizeof(path), fmt, ap);
	va_end(ap);
	e->r = e->fn(e->arg, path, val);
}

static void walk_device(const struct dpv_view_dev *d, struct emit *e)
{
	char guid[40], desc[DPV_NAME_MAX + 16];
	uint8_t g[8] = {0};
	const char *n = d->name;

	if (d->mac_known)
		dpv_mac_eui64(d->mac, g);
	guid_text(g, guid, sizeof(guid));
	snprintf(desc, sizeof(desc), "dpverbs %s", n);
	put(e, "1: CA", "class/infiniband/%s/node_type", n);
	put(e, guid, "class/infiniband/%s/node_guid", n);
	put(e, guid, "class/infiniband/%s/sys_image_guid", n);
	put(e, DPV_FW_VER, "class/infiniband/%s/fw_ver", n);
	put(e, VIEW_STR(DPV_HW_VER), "class/infiniband/%s/hw_rev", n);
	put(e, DPV_VIEW_HCA_TYPE, "class/infiniband/%s/hca_type", n);
	put(e, DPV_BOARD_ID, "class/infiniband/%s/board_id", n);
	put(e, desc, "class/infiniband/%s/node_desc", n);
	/* the network interface of the port (pyverbs lists device/net/) */
	put(e, NULL, "class/infiniband/%s/device/net/%s", n, d->netdev);
}

static void walk_port(const struct dpv_view_dev *d, struct emit *e)
{
	char v[64];
	const char *n = d->name;
	const int p = DPV_VIEW_PORT;

	snprintf(v, sizeof(v), "%u: %s", d->state, state_name(d->state));
	put(e, v, "class/infiniband/%s/ports/%d/state", n, p);
	snprintf(v, sizeof(v), "%u: %s", d->phys_state, phys_state_name(d->phys_state));
	put(e, v, "class/infiniband/%s/ports/%d/phys_state", n, p);
	rate_text(d->active_speed, d->active_width, v, sizeof(v));
	put(e, v, "class/infiniband/%s/ports/%d/rate", n, p);
	put(e, "Ethernet", "class/infiniband/%s/ports/%d/link_layer", n, p);
	snprintf(v, sizeof(v), "0x%x", d->lid);
	put(e, v, "class/infiniband/%s/ports/%d/lid", n, p);
	put(e, "0x0", "class/infiniband/%s/ports/%d/sm_lid", n, p);
	put(e, "0", "class/infiniband/%s/ports/%d/lid_mask_count", n, p);
	put(e, "0", "class/infiniband/%s/ports/%d/sm_sl", n, p);
	snprintf(v, sizeof(v), "0x%08x", DPV_PORT_CAP_FLAGS);
	put(e, v, "class/infiniband/%s/ports/%d/cap_mask", n, p);
	snprintf(v, sizeof(v), "0x%04x", DPV_DEFAULT_PKEY);
	put(e, v, "class/infiniband/%s/ports/%d/pkeys/0", n, p);
	/* every entry of the table; types and ndevs only for the valid ones:
	 * the kernel's read of an empty entry's type fails (EINVAL) */
	for (unsigned int i = 0; i < DPV_GID_TABLE_LEN; i++) {
		gid_text(d->gids[i].gid, v, sizeof(v));
		put(e, v, "class/infiniband/%s/ports/%d/gids/%u", n, p, i);
	}
	for (unsigned int i = 0; i < DPV_GID_TABLE_LEN; i++) {
		if (!d->gids[i].valid)
			continue;
		put(e, "RoCE v2", "class/infiniband/%s/ports/%d/gid_attrs/types/%u", n, p, i);
		put(e, d->netdev, "class/infiniband/%s/ports/%d/gid_attrs/ndevs/%u", n, p, i);
	}
}

int dpv_view_walk_dev(const struct dpv_view_dev *d, dpv_view_fn fn, void *arg)
{
	struct emit e = {.fn = fn, .arg = arg};
	char v[16];

	walk_device(d, &e);
	walk_port(d, &e);
	put(&e, d->name, "class/infiniband_verbs/uverbs%u/ibdev", d->index);
	snprintf(v, sizeof(v), "%d", DPV_VIEW_DEV_ABI);
	put(&e, v, "class/infiniband_verbs/uverbs%u/abi_version", d->index);
	return e.r;
}

int dpv_view_walk_class(dpv_view_fn fn, void *arg)
{
	struct emit e = {.fn = fn, .arg = arg};
	char v[16];

	put(&e, NULL, "class/infiniband");
	snprintf(v, sizeof(v), "%d", DPV_VIEW_UVERBS_ABI);
	put(&e, v, "class/infiniband_verbs/abi_version");
	return e.r;
}

struct find {
	const char *path;
	char *buf;
	size_t len;
};

static int find_one(void *arg, const char *path, const char *val)
{
	struct find *f = arg;
	if (strcmp(path, f->path) != 0)
		return 0;
	if (!val)
		return -ENOENT;
	int n = snprintf(f->buf, f->len, "%s\n", val);
	return n < (int)f->len ? n : (int)f->len;
}

int dpv_view_read(const struct dpv_view_dev *d, const char *path, char *buf, size_t len)
{
	struct find f = {.path = path, .buf = buf, .len = len};
	if (!d || !path || !buf || !len)
		return -ENOENT;
	int r = dpv_view_walk_dev(d, find_one, &f);
	if (r == 0)
		r = dpv_view_walk_class(find_one, &f);
	return r ? r : -ENOENT;
}
