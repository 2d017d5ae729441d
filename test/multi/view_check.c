/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * view_check: run under "dpverbs-run --view" (linked with rdma-core's
 * libibverbs.so.1, so that it runs on the drop-in like any unmodified
 * program). For every device it asserts that the files of the view say what
 * the verbs say:
 *  - ports/1/gids/<i> is ibv_query_gid's GID i, for the whole table;
 *    gid_attrs/types/<i> is "RoCE v2" and gid_attrs/ndevs/<i> the device
 *    name for the valid (non-zero) entries, and absent for the empty ones;
 *  - node_guid is ibv_query_device's; ports/1/state, link_layer and
 *    cap_mask are ibv_query_port's; ibdev_path and the uverbs folder
 *    (dev_path, ibdev) name the device;
 *  - /dev/infiniband/<dev_name> is a character device, readable and
 *    writable (what UCX checks);
 *  - the drop-in's ibv_read_sysfs_file() gives the file's text for each of
 *    these files (one table behind both, lib/conf/dpv_view.c).
 * With -i it also asserts that getifaddrs() finds, on an interface named as
 * the device (dpverbs-run --netns-iface), the IPv4 address of GID 1.
 * Prints one line per failed check; exit 0 if all passed, 1 otherwise.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <ifaddrs.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include <infiniband/verbs.h>

/* rdma-core exports it without declaring it in an installed header */
int ibv_read_sysfs_file(const char *dir, const char *file, char *buf, size_t size);

static int g_fail, g_checks;

#define CHECK(cond, ...)                                                                                   \
	do {                                                                                               \
		g_checks++;                                                                                \
		if (!(cond)) {                                                                             \
			g_fail++;                                                                          \
			printf("FAIL: " __VA_ARGS__);                                                      \
			printf("\n");                                                                      \
		}                                                                                          \
	} while (0)

/* The file's text without its newline; false if it cannot be read. */
static bool read_text(const char *dir, const char *file, char *buf, size_t len)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", dir, file);
	FILE *f = fopen(path, "r");
	if (!f)
		return false;
	bool ok = fgets(buf, (int)len, f) != NULL;
	fclose(f);
	if (ok)
		buf[strcspn(buf, "\n")] = '\0';
	return ok;
}

/* The file and the drop-in's ibv_read_sysfs_file agree; returns the text. */
static bool same_text(const char *dir, const char *file, char *buf, size_t len)
{
	char hook[256];
	bool ok = read_text(dir, file, buf, len);
	CHECK(ok, "%s/%s: cannot read", dir, file);
	int n = ibv_read_sysfs_file(dir, file, hook, sizeof(hook));
	CHECK(n >= 0 && ok && !strcmp(hook, buf), "%s/%s: file \"%s\", ibv_read_sysfs_file \"%s\"", dir, file,
	      ok ? buf : "", n >= 0 ? hook : "(failed)");
	return ok;
}

static void gid_text(const uint8_t *g, char *buf, size_t len)
{
	int n = 0;
	for (int i = 0; i < 16; i += 2)
		n += snprintf(buf + n, len - (size_t)n, "%s%02x%02x", i ? ":" : "", g[i], g[i + 1]);
}

static void check_gids(struct ibv_context *ctx, const char *dir, const char *name, int tbl_len)
{
	static const uint8_t zero[16];
	char file[64], text[128], want[64];
	union ibv_gid gid;

	CHECK(tbl_len > 1, "%s: gid_tbl_len %d", name, tbl_len);
	for (int i = 0; i < tbl_len; i++) {
		CHECK(ibv_query_gid(ctx, 1, i, &gid) == 0, "%s: ibv_query_gid(%d) failed", name, i);
		gid_text(gid.raw, want, sizeof(want));
		snprintf(file, sizeof(file), "ports/1/gids/%d", i);
		if (same_text(dir, file, text, sizeof(text)))
			CHECK(!strcmp(text, want), "%s/%s: \"%s\", ibv_query_gid \"%s\"", dir, file, text, want);
		bool valid = memcmp(gid.raw, zero, 16) != 0;
		snprintf(file, sizeof(file), "ports/1/gid_attrs/types/%d", i);
		if (!valid) {
			CHECK(!read_text(dir, file, text, sizeof(text)), "%s/%s exists for an empty GID", dir, file);
			continue;
		}
		if (same_text(dir, file, text, sizeof(text)))
			CHECK(!strcmp(text, "RoCE v2"), "%s/%s: \"%s\", not \"RoCE v2\"", dir, file, text);
		snprintf(file, sizeof(file), "ports/1/gid_attrs/ndevs/%d", i);
		if (same_text(dir, file, text, sizeof(text)))
			CHECK(!strcmp(text, name), "%s/%s: \"%s\", not \"%s\"", dir, file, text, name);
	}
}

static void check_port(struct ibv_context *ctx, const char *dir, const char *name)
{
	struct ibv_port_attr pa;
	char text[128], want[64];

	CHECK(ibv_query_port(ctx, 1, &pa) == 0, "%s: ibv_query_port failed", name);
	snprintf(want, sizeof(want), "%d: %s", pa.state, pa.state == IBV_PORT_ACTIVE ? "ACTIVE" : "DOWN");
	if (same_text(dir, "ports/1/state", text, sizeof(text)))
		CHECK(!strcmp(text, want) && pa.state == IBV_PORT_ACTIVE, "%s: state \"%s\", query_port \"%s\"",
		      name, text, want);
	if (same_text(dir, "ports/1/link_layer", text, sizeof(text)))
		CHECK(!strcmp(text, "Ethernet") && pa.link_layer == IBV_LINK_LAYER_ETHERNET,
		      "%s: link_layer \"%s\" (query_port %d)", name, text, pa.link_layer);
	snprintf(want, sizeof(want), "0x%08x", pa.port_cap_flags);
	if (same_text(dir, "ports/1/cap_mask", text, sizeof(text)))
		CHECK(!strcmp(text, want), "%s: cap_mask \"%s\", port_cap_flags %s", name, text, want);
	same_text(dir, "ports/1/rate", text, sizeof(text));
	same_text(dir, "ports/1/phys_state", text, sizeof(text));
	check_gids(ctx, dir, name, pa.gid_tbl_len);
}

static void check_node(struct ibv_device *dev, struct ibv_context *ctx)
{
	const char *name = ibv_get_device_name(dev);
	struct ibv_device_attr da;
	char text[128], want[64], path[512];
	struct stat st;

	CHECK(ibv_query_device(ctx, &da) == 0, "%s: ibv_query_device failed", name);
	uint64_t g = be64toh(da.node_guid);
	snprintf(want, sizeof(want), "%04x:%04x:%04x:%04x", (unsigned int)(g >> 48) & 0xffff,
		 (unsigned int)(g >> 32) & 0xffff, (unsigned int)(g >> 16) & 0xffff, (unsigned int)g & 0xffff);
	if (same_text(dev->ibdev_path, "node_guid", text, sizeof(text)))
		CHECK(!strcmp(text, want), "%s: node_guid \"%s\", ibv_query_device \"%s\"", name, text, want);
	if (same_text(dev->ibdev_path, "fw_ver", text, sizeof(text)))
		CHECK(!strcmp(text, da.fw_ver), "%s: fw_ver \"%s\", ibv_query_device \"%s\"", name, text, da.fw_ver);
	same_text(dev->ibdev_path, "board_id", text, sizeof(text));
	same_text(dev->ibdev_path, "node_type", text, sizeof(text));
	if (same_text(dev->dev_path, "ibdev", text, sizeof(text)))
		CHECK(!strcmp(text, name), "%s/ibdev: \"%s\", not \"%s\"", dev->dev_path, text, name);
	snprintf(path, sizeof(path), "/dev/infiniband/%s", dev->dev_name);
	CHECK(stat(path, &st) == 0 && S_ISCHR(st.st_mode), "%s: not a character device", path);
	CHECK(access(path, R_OK | W_OK) == 0, "%s: not readable and writable", path);
	snprintf(path, sizeof(path), "%s/device/net/%s", dev->ibdev_path, name);
	CHECK(stat(path, &st) == 0 && S_ISDIR(st.st_mode), "%s: no such folder", path);
}

/* getifaddrs() holds GID 1's IPv4 address on the interface named like dev. */
static void check_ifaddr(struct ibv_context *ctx, const char *name)
{
	union ibv_gid gid;
	struct ifaddrs *ifa = NULL;
	bool found = false;

	CHECK(ibv_query_gid(ctx, 1, 1, &gid) == 0, "%s: ibv_query_gid(1) failed", name);
	CHECK(getifaddrs(&ifa) == 0, "getifaddrs failed");
	for (struct ifaddrs *i = ifa; i; i = i->ifa_next)
		if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET && !strcmp(i->ifa_name, name) &&
		    !memcmp(&((struct sockaddr_in *)i->ifa_addr)->sin_addr, &gid.raw[12], 4))
			found = true;
	if (ifa)
		freeifaddrs(ifa);
	char a[INET_ADDRSTRLEN];
	CHECK(found, "getifaddrs: no interface %s with %s", name, inet_ntop(AF_INET, &gid.raw[12], a, sizeof(a)));
}

int main(int argc, char **argv)
{
	bool ifaddrs = argc > 1 && !strcmp(argv[1], "-i");
	int n = 0;
	struct ibv_device **list = ibv_get_device_list(&n);

	CHECK(list && n >= 1, "no devices");
	for (int i = 0; list && i < n; i++) {
		const char *name = ibv_get_device_name(list[i]);
		struct ibv_context *ctx = ibv_open_device(list[i]);
		CHECK(ctx != NULL, "%s: ibv_open_device failed", name);
		if (!ctx)
			continue;
		check_node(list[i], ctx);
		check_port(ctx, list[i]->ibdev_path, name);
		if (ifaddrs)
			check_ifaddr(ctx, name);
		ibv_close_device(ctx);
		printf("%s: %s, %s checked\n", name, list[i]->ibdev_path, list[i]->dev_name);
	}
	if (list)
		ibv_free_device_list(list);
	printf("view_check: %d checks, %d failed\n", g_checks, g_fail);
	return g_fail ? 1 : 0;
}
