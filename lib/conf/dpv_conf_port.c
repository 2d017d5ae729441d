/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Configuration loader, ports[]: the device of each port (ring, vdev, pci,
 * af_xdp), its addresses (MAC, IPv4, IPv6), lcores and limits, the kernel
 * interface of the exception path, then the checks that span ports (unique
 * names, MACs, addresses, devices and kernel interfaces; ring peers).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "dpv_conf_priv.h"

/* ------------------------------------------------------------------ */
/* ports                                                               */

/* Per-port facts kept for the cross-port checks. */
struct port_aux {
	char dev_id[DPV_DEVARGS_MAX + 8]; /* "vdev:NAME", "pci:DDDD:BB:DD.F", "ring:NAME", "af_xdp:IFACE" */
	bool dev_queues;                  /* device.queues was given (af_xdp) */
};

/* A Linux interface name: 1 to IFNAMSIZ - 1 characters, not "." or "..",
 * no '/', ':' or white space (dev_valid_name()); ours: [A-Za-z0-9_.-]. */
static bool ifname_ok(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n >= DPV_IFNAME_MAX || !strcmp(s, ".") || !strcmp(s, ".."))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '_' || s[i] == '.' || s[i] == '-'))
			return false;
	return true;
}

/* Read the interface name obj.key (optional) into out[DPV_IFNAME_MAX].
 * Returns 1 when set, 0 when absent, -1 (reported) when not a name. */
static int get_ifname(struct ctx *x, json_t *obj, const char *path, const char *key, char *out)
{
	char fp[CONF_PATH_LEN];
	const char *s;
	int r = conf_get_str(x, obj, path, key, &s);

	if (r <= 0)
		return r;
	if (!ifname_ok(s)) {
		conf_pjoin(fp, path, key);
		return conf_fail(x, fp, "must be a network interface name, 1 to %d characters from "
				 "[A-Za-z0-9_.-] (got %s)", DPV_IFNAME_MAX - 1, REPR(json_object_get(obj, key)));
	}
	snprintf(out, DPV_IFNAME_MAX, "%s", s);
	return 1;
}

/* "type": "af_xdp": AF_XDP sockets on a kernel interface, beside the kernel */
static int device_af_xdp(struct ctx *x, json_t *dev, const char *path,
			 struct dpv_conf_port *p, struct port_aux *aux)
{
	static const char *const modes[] = { "auto", "native", "generic", NULL };
	int m = 0, r;

	p->type = DPV_DEV_AF_XDP;
	r = get_ifname(x, dev, path, "iface", p->iface);
	if (r < 0)
		return -1;
	if (r == 0)
		return conf_missing(x, path, "iface");
	r = conf_get_u16(x, dev, path, "queues", 1, DPV_MAX_QUEUES, false, &p->n_queues);
	if (r < 0)
		return -1;
	aux->dev_queues = r == 1;
	if (conf_get_enum(x, dev, path, "xdp_mode", modes, &m) < 0)
		return -1;
	p->xdp_mode = (enum dpv_xdp_mode)(DPV_XDP_AUTO + m);
	snprintf(aux->dev_id, sizeof(aux->dev_id), "af_xdp:%s", p->iface);
	return 0;
}

/* "type": "ring": a peer port of this process */
static int device_ring(struct ctx *x, json_t *dev, const char *path,
		       struct dpv_conf_port *p, struct port_aux *aux)
{
	char fp[CONF_PATH_LEN];
	const char *s;
	int r;

	p->type = DPV_DEV_RING;
	r = conf_get_str(x, dev, path, "peer", &s);
	if (r < 0)
		return -1;
	if (r == 0)
		return conf_missing(x, path, "peer");
	conf_pjoin(fp, path, "peer");
	if (!conf_name_ok(s, NULL))
		return conf_fail(x, fp, "must be a port name (got %s)",
				 REPR(json_object_get(dev, "peer")));
	snprintf(p->peer, sizeof(p->peer), "%s", s);
	snprintf(aux->dev_id, sizeof(aux->dev_id), "ring:%s", p->name);
	return 0;
}

/* "type": "vdev": EAL --vdev arguments, the instance name first */
static int device_vdev(struct ctx *x, json_t *dev, const char *path,
		       struct dpv_conf_port *p, struct port_aux *aux)
{
	char name[DPV_DEVARGS_MAX];
	struct pci_addr a;
	size_t n;
	char fp[CONF_PATH_LEN];
	const char *s;
	int r;

	p->type = DPV_DEV_VDEV;
	r = conf_get_str(x, dev, path, "args", &s);
	if (r < 0)
		return -1;
	if (r == 0)
		return conf_missing(x, path, "args");
	conf_pjoin(fp, path, "args");
	if (*s == '\0')
		return conf_fail(x, fp, "must not be empty");
	if (strlen(s) >= DPV_DEVARGS_MAX)
		return conf_fail(x, fp, "must be shorter than %d characters", DPV_DEVARGS_MAX);
	if (!conf_no_space(s))
		return conf_fail(x, fp, "must not contain spaces or control characters");
	if (conf_pci_parse(s, true, &a) || conf_pci_parse(s, false, &a))
		return conf_fail(x, fp,
				 "starts with a PCI address: use \"type\": \"pci\" with "
				 "\"address\" instead (got %s)",
				 REPR(json_object_get(dev, "args")));
	/* the instance name before the first comma, e.g. "net_memif0" */
	n = strcspn(s, ",");
	memcpy(name, s, n);
	name[n] = '\0';
	if (!conf_name_ok(name, ""))
		return conf_fail(x, fp,
				 "must start with a device name such as \"net_memif0\" (got %s)",
				 REPR(json_object_get(dev, "args")));
	snprintf(aux->dev_id, sizeof(aux->dev_id), "vdev:%s", name);
	snprintf(p->devargs, sizeof(p->devargs), "%s", s);
	return 0;
}

/* "type": "pci": an address and optional device arguments */
static int device_pci(struct ctx *x, json_t *dev, const char *path,
		      struct dpv_conf_port *p, struct port_aux *aux)
{
	struct pci_addr a;
	const char *args = NULL;
	size_t n;
	char fp[CONF_PATH_LEN];
	const char *s;
	int r;

	p->type = DPV_DEV_PCI;
	r = conf_get_str(x, dev, path, "address", &s);
	if (r < 0)
		return -1;
	if (r == 0)
		return conf_missing(x, path, "address");
	conf_pjoin(fp, path, "address");
	n = conf_pci_parse(s, true, &a);
	if (n == 0 || s[n] != '\0')
		return conf_fail(x, fp, "must be a PCI address DDDD:BB:DD.F (got %s)",
				 REPR(json_object_get(dev, "address")));
	snprintf(aux->dev_id, sizeof(aux->dev_id), "pci:%04lx:%02lx:%02lx.%lx", a.dom, a.bus,
		 a.dev, a.fn);
	if (conf_get_str(x, dev, path, "args", &args) < 0)
		return -1;
	conf_pjoin(fp, path, "args");
	if (args && !conf_no_space(args))
		return conf_fail(x, fp, "must not contain spaces or control characters");
	if (args && *args) {
		if (strlen(s) + 1 + strlen(args) >= DPV_DEVARGS_MAX)
			return conf_fail(x, fp, "must be shorter than %zu characters",
					 DPV_DEVARGS_MAX - 1 - strlen(s));
		size_t la = strlen(s);

		memcpy(p->devargs, s, la);
		p->devargs[la] = ',';
		memcpy(p->devargs + la + 1, args, strlen(args) + 1);
	} else {
		snprintf(p->devargs, sizeof(p->devargs), "%s", s);
	}
	return 0;
}

static int parse_device(struct ctx *x, json_t *dev, const char *path,
			struct dpv_conf_port *p, struct port_aux *aux)
{
	static const char *const types[] = { "ring", "vdev", "pci", "af_xdp", NULL };
	static const char *const k_ring[] = { "type", "peer", NULL };
	static const char *const k_vdev[] = { "type", "args", NULL };
	static const char *const k_pci[] = { "type", "address", "args", NULL };
	static const char *const k_xdp[] = { "type", "iface", "queues", "xdp_mode", NULL };
	static const char *const *const keys[] = { k_ring, k_vdev, k_pci, k_xdp };
	char q[64];
	int t, r;

	r = conf_get_enum(x, dev, path, "type", types, &t);
	if (r < 0)
		return -1;
	if (r == 0)
		return conf_missing(x, path, "type");
	snprintf(q, sizeof(q), " for device type \"%s\"", types[t]);
	if (conf_check_keys(x, dev, path, keys[t], q))
		return -1;
	if (t == 0)
		return device_ring(x, dev, path, p, aux);
	if (t == 1)
		return device_vdev(x, dev, path, p, aux);
	if (t == 3)
		return device_af_xdp(x, dev, path, p, aux);
	return device_pci(x, dev, path, p, aux);
}

static bool v4_unicast(uint32_t a)
{
	uint8_t o = (uint8_t)(a >> 24);

	return o != 0 && o != 127 && o < 224;
}

static int parse_ipv4(struct ctx *x, json_t *port, const char *path, struct dpv_conf_port *p)
{
	char fp[CONF_PATH_LEN], buf[INET_ADDRSTRLEN], net[INET_ADDRSTRLEN];
	const char *s;
	struct in_addr in, nin;
	uint32_t a, mask;
	int r, pfx;

	r = conf_get_str(x, port, path, "ipv4", &s);
	if (r <= 0)
		return r;
	conf_pjoin(fp, path, "ipv4");
	pfx = conf_split_prefix(s, buf, sizeof(buf), 32);
	if (pfx == -1 || inet_pton(AF_INET, buf, &in) != 1)
		return conf_fail(x, fp, "must be \"a.b.c.d/prefix\" (got %s)",
				 REPR(json_object_get(port, "ipv4")));
	if (pfx < 1)
		return conf_fail(x, fp, "prefix length must be between 1 and 32 (got %s)",
				 REPR(json_object_get(port, "ipv4")));
	a = ntohl(in.s_addr);
	if (!v4_unicast(a))
		return conf_fail(x, fp, "must be a unicast host address (got %s)",
				 REPR(json_object_get(port, "ipv4")));
	mask = pfx == 32 ? 0xffffffffu : ~(0xffffffffu >> pfx);
	nin.s_addr = htonl(a & mask);
	inet_ntop(AF_INET, &nin, net, sizeof(net));
	if (pfx <= 30 && (a & ~mask) == 0)
		return conf_fail(x, fp, "%s is the network address of %s/%d", buf, net, pfx);
	if (pfx <= 30 && (a & ~mask) == ~mask)
		return conf_fail(x, fp, "%s is the broadcast address of %s/%d", buf, net, pfx);
	p->ipv4 = in;
	p->ipv4_prefix = (uint8_t)pfx;
	return 1;
}

static int parse_ipv6(struct ctx *x, json_t *port, const char *path, struct dpv_conf_port *p)
{
	json_t *arr = json_object_get(port, "ipv6"), *v;
	char fp[CONF_PATH_LEN], ip[CONF_PATH_LEN];
	size_t i;

	if (arr == NULL)
		return 0;
	conf_pjoin(fp, path, "ipv6");
	if (!json_is_array(arr))
		return conf_fail(x, fp, "must be an array of \"address/prefix\" strings (got %s)",
				 REPR(arr));
	if (json_array_size(arr) > DPV_MAX_IPV6_PER_PORT)
		return conf_fail(x, fp, "at most %d addresses (got %zu)", DPV_MAX_IPV6_PER_PORT,
				 json_array_size(arr));
	json_array_foreach(arr, i, v) {
		char buf[INET6_ADDRSTRLEN], net[INET6_ADDRSTRLEN];
		struct in6_addr in, nin;
		const uint8_t *b = in.s6_addr;
		bool host0 = true;
		int pfx, k;
		size_t j;

		conf_pidx(ip, fp, i);
		if (!json_is_string(v))
			return conf_fail(x, ip, "must be a string (got %s)", REPR(v));
		pfx = conf_split_prefix(json_string_value(v), buf, sizeof(buf), 128);
		if (pfx == -1 || inet_pton(AF_INET6, buf, &in) != 1)
			return conf_fail(x, ip, "must be \"address/prefix\" (got %s)", REPR(v));
		if (pfx < 1)
			return conf_fail(x, ip, "prefix length must be between 1 and 128 (got %s)",
					 REPR(v));
		if (b[0] == 0xfe && (b[1] & 0xc0) == 0x80)
			return conf_fail(x, ip,
					 "link-local addresses cannot be configured: GID index 0 "
					 "is the port's link-local address (got %s)",
					 REPR(v));
		if (b[0] == 0xff || IN6_IS_ADDR_UNSPECIFIED(&in) || IN6_IS_ADDR_LOOPBACK(&in) ||
		    IN6_IS_ADDR_V4MAPPED(&in) || IN6_IS_ADDR_V4COMPAT(&in))
			return conf_fail(x, ip, "must be a unicast global or unique-local address "
					   "(got %s)", REPR(v));
		nin = in;
		for (k = 0; k < 128; k++)
			if (k >= pfx && (b[k / 8] & (0x80 >> (k % 8)))) {
				host0 = false;
				nin.s6_addr[k / 8] &= (uint8_t)~(0x80 >> (k % 8));
			}
		if (pfx <= 126 && host0) {
			inet_ntop(AF_INET6, &nin, net, sizeof(net));
			return conf_fail(x, ip, "%s is the subnet-router anycast address of %s/%d", buf,
					 net, pfx);
		}
		for (j = 0; j < p->n_ipv6; j++)
			if (memcmp(&p->ipv6[j].addr, &in, sizeof(in)) == 0) {
				inet_ntop(AF_INET6, &in, net, sizeof(net));
				return conf_fail(x, ip, "address %s is listed twice (also %s[%zu])", net,
						 fp, j);
			}
		p->ipv6[p->n_ipv6].addr = in;
		p->ipv6[p->n_ipv6].prefix = (uint8_t)pfx;
		p->n_ipv6++;
	}
	return 1;
}

static int parse_lcores(struct ctx *x, json_t *port, const char *path, struct dpv_conf_port *p)
{
	json_t *arr = json_object_get(port, "lcores"), *v;
	char fp[CONF_PATH_LEN], ip[CONF_PATH_LEN];
	size_t i, j;

	conf_pjoin(fp, path, "lcores");
	if (x->c->progress != DPV_PROGRESS_LCORE) {
		if (arr != NULL)
			return conf_fail(x, fp, "only allowed with \"progress\": \"lcore\"");
		return 0;
	}
	if (arr == NULL)
		return conf_fail(x, fp, "required field is missing (\"progress\" is \"lcore\": "
				   "list one lcore per queue)");
	if (!json_is_array(arr))
		return conf_fail(x, fp, "must be an array of lcore ids (got %s)", REPR(arr));
	if (json_array_size(arr) != p->n_queues)
		return conf_fail(x, fp, "must list exactly %u lcore(s), one per queue (got %zu)",
				 (unsigned int)p->n_queues, json_array_size(arr));
	json_array_foreach(arr, i, v) {
		long long n = json_is_integer(v) ? (long long)json_integer_value(v) : -1;

		conf_pidx(ip, fp, i);
		if (!json_is_integer(v) || n < 0 || n > DPV_CONF_MAX_LCORE)
			return conf_fail(x, ip, "must be an integer between 0 and %d (got %s)",
					 DPV_CONF_MAX_LCORE, REPR(v));
		for (j = 0; j < p->n_lcores; j++)
			if (p->lcores[j] == n)
				return conf_fail(x, ip, "duplicate lcore %lld (also %s[%zu])", n, fp, j);
		p->lcores[p->n_lcores++] = (int)n;
	}
	return 1;
}

static void mac_str(const uint8_t *m, char *buf)
{
	snprintf(buf, 18, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5]);
}

/* Checks port i against ports 0..i-1 (names, devices, MACs, addresses). */
static int check_unique(struct ctx *x, unsigned int i, const char *path, struct port_aux *aux)
{
	const struct dpv_conf_port *p = &x->c->ports[i];
	char fp[CONF_PATH_LEN], buf[INET6_ADDRSTRLEN];
	unsigned int j, k, l;

	for (j = 0; j < i; j++) {
		const struct dpv_conf_port *o = &x->c->ports[j];

		if (strcmp(p->name, o->name) == 0) {
			conf_pjoin(fp, path, "name");
			return conf_fail(x, fp, "duplicate port name \"%s\" (also ports[%u].name)",
					 p->name, j);
		}
	}
	for (j = 0; j < i; j++) {
		if (strcmp(aux[i].dev_id, aux[j].dev_id) == 0) {
			conf_pjoin(fp, path, p->type == DPV_DEV_PCI ? "device.address" :
					     p->type == DPV_DEV_AF_XDP ? "device.iface" : "device.args");
			return conf_fail(x, fp, "device %s is already used by ports[%u]",
					 strchr(aux[i].dev_id, ':') + 1, j);
		}
	}
	for (j = 0; j < i; j++) {
		const char *mine = dpv_conf_port_netdev(p), *other = dpv_conf_port_netdev(&x->c->ports[j]);

		if (mine && other && strcmp(mine, other) == 0) {
			conf_pjoin(fp, path, p->type == DPV_DEV_AF_XDP ? "device.iface" : "kernel_iface");
			return conf_fail(x, fp, "interface %s is already used by ports[%u]", mine, j);
		}
	}
	for (j = 0; j < i; j++) {
		const struct dpv_conf_port *o = &x->c->ports[j];

		if (p->mac_set && o->mac_set && memcmp(p->mac, o->mac, 6) == 0) {
			conf_pjoin(fp, path, "mac");
			mac_str(p->mac, buf);
			return conf_fail(x, fp, "MAC address %s is already used by ports[%u]", buf, j);
		}
	}
	for (j = 0; j < i; j++) {
		const struct dpv_conf_port *o = &x->c->ports[j];

		if (p->ipv4.s_addr != 0 && p->ipv4.s_addr == o->ipv4.s_addr) {
			conf_pjoin(fp, path, "ipv4");
			inet_ntop(AF_INET, &p->ipv4, buf, sizeof(buf));
			return conf_fail(x, fp, "address %s is already used by ports[%u]", buf, j);
		}
	}
	for (k = 0; k < p->n_ipv6; k++)
		for (j = 0; j < i; j++)
			for (l = 0; l < x->c->ports[j].n_ipv6; l++)
				if (memcmp(&p->ipv6[k].addr, &x->c->ports[j].ipv6[l].addr,
					   sizeof(struct in6_addr)) == 0) {
					char ip[CONF_PATH_LEN];

					conf_pjoin(fp, path, "ipv6");
					conf_pidx(ip, fp, k);
					inet_ntop(AF_INET6, &p->ipv6[k].addr, buf, sizeof(buf));
					return conf_fail(x, ip, "address %s is already used by ports[%u]",
							 buf, j);
				}
	return 0;
}

/* mac: optional; a unicast address, not all zeros */
static int parse_mac(struct ctx *x, json_t *pj, const char *path, struct dpv_conf_port *p)
{
	static const uint8_t zero[6];
	char fp[CONF_PATH_LEN];
	const char *s;
	int r;

	r = conf_get_str(x, pj, path, "mac", &s);
	if (r <= 0)
		return r;
	conf_pjoin(fp, path, "mac");
	if (!conf_mac_parse(s, p->mac))
		return conf_fail(x, fp, "must be a MAC address xx:xx:xx:xx:xx:xx (got %s)",
				 REPR(json_object_get(pj, "mac")));
	if (memcmp(p->mac, zero, 6) == 0)
		return conf_fail(x, fp, "must not be all zeros");
	if (p->mac[0] & 1)
		return conf_fail(x, fp, "must be a unicast address: the least significant "
				 "bit of the first octet must be 0 (got %s)",
				 REPR(json_object_get(pj, "mac")));
	p->mac_set = true;
	return 0;
}

/* mbufs: at least enough to fill every RX ring and every TX ring */
static int parse_mbufs(struct ctx *x, json_t *pj, const char *path, struct dpv_conf_port *p)
{
	uint32_t need = (uint32_t)p->n_queues * ((uint32_t)p->rx_desc + p->tx_desc);
	char fp[CONF_PATH_LEN];
	long long n;
	int r;

	r = conf_get_int(x, pj, path, "mbufs", DPV_CONF_MIN_MBUFS, DPV_CONF_MAX_MBUFS, false, &n);
	if (r < 0)
		return -1;
	if (r == 1) {
		if (n < need) {
			conf_pjoin(fp, path, "mbufs");
			return conf_fail(x, fp,
					 "must be at least queues * (rx_desc + tx_desc) = %" PRIu32
					 " (got %lld)", need, n);
		}
		p->mbufs = (uint32_t)n;
		return 0;
	}
	/* default: 8191, or the next 2^k - 1 that covers the rings */
	p->mbufs = DPV_CONF_DEF_MBUFS;
	while (p->mbufs < need)
		p->mbufs = p->mbufs * 2 + 1;
	return 0;
}

/* flow: "auto" (default), "off" or "isolate"; a net_ring pair has no rte_flow */
static int parse_flow(struct ctx *x, json_t *pj, const char *path, struct dpv_conf_port *p)
{
	static const char *const modes[] = { "auto", "off", "isolate", NULL };
	char fp[CONF_PATH_LEN];
	int m = 0, r;

	r = conf_get_enum(x, pj, path, "flow", modes, &m);
	if (r < 0)
		return -1;
	p->flow = (enum dpv_flow_mode)(DPV_FLOW_AUTO + m);
	if (p->flow == DPV_FLOW_ISOLATE && p->type == DPV_DEV_RING) {
		conf_pjoin(fp, path, "flow");
		return conf_fail(x, fp, "\"isolate\" needs a device with rte_flow rules: a \"ring\" "
				 "device has none (use \"auto\" or \"off\")");
	}
	return 0;
}

/* queues: ports[].queues, or device.queues of an af_xdp port (not both
 * with different values) */
static int parse_queues(struct ctx *x, json_t *pj, const char *path, struct dpv_conf_port *p,
			const struct port_aux *aux)
{
	uint16_t dq = p->n_queues, n = p->n_queues;
	char fp[CONF_PATH_LEN];
	int r;

	r = conf_get_u16(x, pj, path, "queues", 1, DPV_MAX_QUEUES, false, &n);
	if (r < 0)
		return -1;
	if (r == 1 && aux->dev_queues && n != dq) {
		conf_pjoin(fp, path, "queues");
		return conf_fail(x, fp, "%u differs from device.queues %u: give the number once",
				 (unsigned int)n, (unsigned int)dq);
	}
	p->n_queues = n;
	return 0;
}

/* kernel_iface: the exception path's kernel interface, for ports dpverbs
 * owns whole (vdev, pci); an af_xdp port is beside the kernel already */
static int parse_kernel_iface(struct ctx *x, json_t *pj, const char *path, struct dpv_conf_port *p)
{
	char fp[CONF_PATH_LEN], name[DPV_IFNAME_MAX];
	int r;

	r = get_ifname(x, pj, path, "kernel_iface", name);
	if (r <= 0)
		return r;
	conf_pjoin(fp, path, "kernel_iface");
	if (p->type == DPV_DEV_AF_XDP)
		return conf_fail(x, fp, "an \"af_xdp\" port shares its interface (%s) with the "
				 "kernel already: no exception path is needed", p->iface);
	if (p->type == DPV_DEV_RING)
		return conf_fail(x, fp, "a \"ring\" device has no wire for the kernel's frames: "
				 "use it with vdev or pci devices");
	memcpy(p->kernel_iface, name, sizeof(name));
	return 0;
}

/* af_xdp: the interface's MAC is the port's; rte_flow isolation has no
 * meaning (the XDP program steers) */
static int check_af_xdp(struct ctx *x, json_t *pj, const char *path, const struct dpv_conf_port *p)
{
	char fp[CONF_PATH_LEN];

	if (p->type != DPV_DEV_AF_XDP)
		return 0;
	if (p->mac_set) {
		conf_pjoin(fp, path, "mac");
		return conf_fail(x, fp, "an \"af_xdp\" port has the MAC of its interface %s: "
				 "remove \"mac\" (or change the interface's: ip link set dev %s address ...)",
				 p->iface, p->iface);
	}
	if (p->flow == DPV_FLOW_ISOLATE) {
		conf_pjoin(fp, path, "flow");
		return conf_fail(x, fp, "\"isolate\" is for bifurcated PCI NICs: an \"af_xdp\" port "
				 "takes only RoCEv2 through its XDP program already (use \"auto\" or \"off\")");
	}
	return 0;
}

/* dm_size: bytes of device memory, 0 (none) or a multiple of the
 * allocation unit up to DPV_CONF_MAX_DM_SIZE */
static int parse_dm_size(struct ctx *x, json_t *pj, const char *path, struct dpv_conf_port *p)
{
	char fp[CONF_PATH_LEN];
	long long n;
	int r = conf_get_int(x, pj, path, "dm_size", 0, DPV_CONF_MAX_DM_SIZE, false, &n);
	if (r < 0)
		return -1;
	if (r == 0) {
		p->dm_size = DPV_CONF_DEF_DM_SIZE;
		return 0;
	}
	if (n % DPV_CONF_DM_UNIT) {
		conf_pjoin(fp, path, "dm_size");
		return conf_fail(x, fp, "must be a multiple of %u bytes (got %lld)", DPV_CONF_DM_UNIT, n);
	}
	p->dm_size = (uint32_t)n;
	return 0;
}

static int parse_port(struct ctx *x, json_t *pj, unsigned int i, struct port_aux *aux)
{
	static const char *const keys[] = { "name", "device", "mac", "ipv4", "ipv6",
					    "mtu", "rx_desc", "tx_desc", "queues", "lcores",
					    "mbufs", "flow", "kernel_iface", "lid", "dm_size", NULL };
	struct dpv_conf_port *p = &x->c->ports[i];
	char path[CONF_PATH_LEN], fp[CONF_PATH_LEN], dpath[CONF_PATH_LEN];
	const char *s;
	json_t *dev;
	int r;

	conf_pidx(path, "ports", i);
	if (!json_is_object(pj))
		return conf_fail(x, path, "must be an object (got %s)", REPR(pj));
	if (conf_check_keys(x, pj, path, keys, NULL))
		return -1;

	p->mtu = DPV_CONF_DEF_MTU;
	p->rx_desc = DPV_CONF_DEF_DESC;
	p->tx_desc = DPV_CONF_DEF_DESC;
	p->n_queues = DPV_CONF_DEF_QUEUES;

	/* name */
	r = conf_get_str(x, pj, path, "name", &s);
	if (r < 0)
		return -1;
	if (r == 0)
		return conf_missing(x, path, "name");
	if (!conf_name_ok(s, NULL)) {
		conf_pjoin(fp, path, "name");
		return conf_fail(x, fp, "must be 1 to %d characters from [a-z0-9_] (got %s)",
				 DPV_NAME_MAX - 1, REPR(json_object_get(pj, "name")));
	}
	snprintf(p->name, sizeof(p->name), "%s", s);

	/* device */
	dev = NULL;
	r = conf_get_obj(x, pj, path, "device", &dev);
	if (r < 0)
		return -1;
	if (r == 0)
		return conf_missing(x, path, "device");
	conf_pjoin(dpath, path, "device");
	if (parse_device(x, dev, dpath, p, &aux[i]))
		return -1;

	if (parse_mac(x, pj, path, p) < 0)
		return -1;
	if (parse_ipv4(x, pj, path, p) < 0 || parse_ipv6(x, pj, path, p) < 0)
		return -1;
	r = conf_get_u16(x, pj, path, "mtu", DPV_CONF_MIN_MTU, DPV_CONF_MAX_MTU, false, &p->mtu);
	if (r < 0)
		return -1;
	p->mtu_set = r == 1;
	if (conf_get_u16(x, pj, path, "rx_desc", DPV_CONF_MIN_DESC, DPV_CONF_MAX_DESC, true,
			 &p->rx_desc) < 0)
		return -1;
	if (conf_get_u16(x, pj, path, "tx_desc", DPV_CONF_MIN_DESC, DPV_CONF_MAX_DESC, true,
			 &p->tx_desc) < 0)
		return -1;
	if (parse_queues(x, pj, path, p, &aux[i]) < 0 || parse_lcores(x, pj, path, p) < 0)
		return -1;

	static const char *const lids[] = { "auto", "off", NULL };
	int lid = 0;
	if (conf_get_enum(x, pj, path, "lid", lids, &lid) < 0)
		return -1;
	p->lid_off = lid == 1;
	if (parse_mbufs(x, pj, path, p) < 0 || parse_flow(x, pj, path, p) < 0 ||
	    parse_kernel_iface(x, pj, path, p) < 0 || parse_dm_size(x, pj, path, p) < 0 ||
	    check_af_xdp(x, pj, path, p) < 0)
		return -1;
	return check_unique(x, i, path, aux);
}

/* Ring peers: must exist, differ from the port, and name each other. */
static int check_peers(struct ctx *x)
{
	struct dpv_conf *c = x->c;
	char fp[CONF_PATH_LEN];
	unsigned int i;

	for (i = 0; i < c->n_ports; i++) {
		const struct dpv_conf_port *p = &c->ports[i], *q;

		if (p->type != DPV_DEV_RING)
			continue;
		snprintf(fp, sizeof(fp), "ports[%u].device.peer", i);
		if (strcmp(p->peer, p->name) == 0)
			return conf_fail(x, fp, "must name another port, not the port itself (got \"%s\")",
					 p->peer);
		q = dpv_conf_port_by_name(c, p->peer);
		if (q == NULL)
			return conf_fail(x, fp, "no port is named \"%s\"", p->peer);
		if (q->type != DPV_DEV_RING)
			return conf_fail(x, fp, "port \"%s\" is not a ring device", p->peer);
		if (strcmp(q->peer, p->name) != 0)
			return conf_fail(x, fp,
					 "ring peers must name each other: port \"%s\" has peer \"%s\", "
					 "not \"%s\"",
					 q->name, q->peer, p->name);
	}
	return 0;
}

int conf_parse_ports(struct ctx *x, json_t *root)
{
	json_t *ports = json_object_get(root, "ports"), *pj;
	struct port_aux *aux;
	size_t i;
	int ret = 0;

	if (ports == NULL)
		return conf_fail(x, "ports", "required field is missing (at least one port)");
	if (!json_is_array(ports))
		return conf_fail(x, "ports", "must be an array of port objects (got %s)", REPR(ports));
	if (json_array_size(ports) == 0)
		return conf_fail(x, "ports", "must contain at least one port");
	if (json_array_size(ports) > DPV_MAX_PORTS)
		return conf_fail(x, "ports", "at most %d ports (got %zu)", DPV_MAX_PORTS,
				 json_array_size(ports));
	aux = calloc(DPV_MAX_PORTS, sizeof(*aux));
	if (aux == NULL)
		return conf_fail(x, "ports", "out of memory");
	json_array_foreach(ports, i, pj) {
		if (parse_port(x, pj, (unsigned int)i, aux)) {
			ret = -1;
			break;
		}
		x->c->n_ports++;
	}
	free(aux);
	if (ret == 0)
		ret = check_peers(x);
	return ret;
}
