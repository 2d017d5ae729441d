/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit test of the sysfs view (lib/conf/dpv_view.c) and the GID table it
 * shares with lib/port (dpv_conf_gid.c), on the built-in default and on
 * pair-a.json (path given on the command line): the texts of the kernel's
 * files for the configured ports, GID types and ndevs only for valid
 * entries, the rate texts of the kernel's rate_show, uverbs names, a port
 * without "mac", reads of folders, unknown files and short buffers.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "dpv_conf.h"
#include "dpv_view.h"
#include "dpvt_check.h"

static void check_read(const struct dpv_view_dev *d, const char *path, const char *want)
{
	char buf[128];
	int n = dpv_view_read(d, path, buf, sizeof(buf));
	if (!want) {
		CHECK(n == -ENOENT, "%s: got %d, expected -ENOENT", path, n);
		return;
	}
	char line[128];
	snprintf(line, sizeof(line), "%s\n", want);
	CHECK(n == (int)strlen(line) && !memcmp(buf, line, (size_t)n), "%s: got \"%.*s\" (%d), expected \"%s\"", path,
	      n > 0 ? n : 0, buf, n, want);
}

static void test_default(void)
{
	struct dpv_conf c;
	struct dpv_view_dev d0, d1;
	char err[512];

	CHECK(dpv_conf_load(NULL, &c, err, sizeof(err)) == 0, "default: %s", err);
	CHECK(dpv_view_from_conf(&c, 0, &d0) == 0 && dpv_view_from_conf(&c, 1, &d1) == 0, "view of the default");
	CHECK(dpv_view_from_conf(&c, 2, &d1) == -EINVAL, "a third port of the default");
	dpv_view_from_conf(&c, 1, &d1);
	const char *p = "class/infiniband/dpv0/";
	char path[128];
#define AT(f) (snprintf(path, sizeof(path), "%s%s", p, f), path)
	check_read(&d0, AT("node_type"), "1: CA");
	check_read(&d0, AT("node_guid"), "0064:70ff:fe76:0001");
	check_read(&d0, AT("sys_image_guid"), "0064:70ff:fe76:0001");
	check_read(&d0, AT("fw_ver"), DPV_FW_VER);
	check_read(&d0, AT("board_id"), DPV_BOARD_ID);
	check_read(&d0, AT("node_desc"), "dpverbs dpv0");
	check_read(&d0, AT("ports/1/state"), "4: ACTIVE");
	check_read(&d0, AT("ports/1/phys_state"), "5: LinkUp");
	check_read(&d0, AT("ports/1/rate"), "10 Gb/sec (1X FDR10)");
	check_read(&d0, AT("ports/1/link_layer"), "Ethernet");
	check_read(&d0, AT("ports/1/lid_mask_count"), "0");
	check_read(&d0, AT("ports/1/lid"), "0x201"); /* LIDs on RoCE: 192.0.2.1/24 */
	check_read(&d0, AT("ports/1/cap_mask"), "0x04010000");
	check_read(&d0, AT("ports/1/pkeys/0"), "0xffff");
	check_read(&d0, AT("ports/1/gids/0"), "fe80:0000:0000:0000:0064:70ff:fe76:0001");
	check_read(&d0, AT("ports/1/gids/1"), "0000:0000:0000:0000:0000:ffff:c000:0201");
	check_read(&d0, AT("ports/1/gids/15"), "0000:0000:0000:0000:0000:0000:0000:0000");
	check_read(&d0, AT("ports/1/gids/16"), NULL);
	check_read(&d0, AT("ports/1/gid_attrs/types/1"), "RoCE v2");
	check_read(&d0, AT("ports/1/gid_attrs/ndevs/0"), "dpv0");
	check_read(&d0, AT("ports/1/gid_attrs/types/2"), NULL); /* empty entry */
	check_read(&d0, AT("device/net/dpv0"), NULL);           /* a folder */
	check_read(&d0, AT("nosuch"), NULL);
	check_read(&d0, "class/infiniband_verbs/uverbs0/ibdev", "dpv0");
	check_read(&d1, "class/infiniband_verbs/uverbs1/ibdev", "dpv1");
	check_read(&d1, "class/infiniband_verbs/uverbs0/ibdev", NULL);
	check_read(&d0, "class/infiniband_verbs/abi_version", "6");
	check_read(&d1, "class/infiniband/dpv1/ports/1/gids/1", "0000:0000:0000:0000:0000:ffff:c000:0202");
	char small[4];
	CHECK(dpv_view_read(&d0, AT("node_type"), small, sizeof(small)) == 4 && !memcmp(small, "1: ", 3),
	      "a short buffer gets the start, its length returned");
#undef AT
	/* the table is the one lib/port builds from the same port and MAC */
	struct dpv_gid_entry t[DPV_GID_TABLE_LEN];
	dpv_conf_gid_table(&c.ports[0], c.ports[0].mac, t);
	CHECK(!memcmp(t, d0.gids, sizeof(t)), "view and dpv_conf_gid_table agree");
	CHECK(t[0].valid && t[0].ip_ver == 6 && t[1].valid && t[1].ip_ver == 4 && !t[2].valid, "GID kinds");
	dpv_conf_free(&c);
}

static void test_pair_a(const char *path)
{
	struct dpv_conf c;
	struct dpv_view_dev d;
	char err[512];

	if (!CHECK(path != NULL, "pair-a.json not given"))
		return;
	CHECK(dpv_conf_load(path, &c, err, sizeof(err)) == 0, "%s", err);
	dpv_view_from_conf(&c, 0, &d);
	check_read(&d, "class/infiniband/dpv0/ports/1/gids/2", "fd00:6470:7600:0000:0000:0000:0000:0001");
	check_read(&d, "class/infiniband/dpv0/ports/1/gid_attrs/types/2", "RoCE v2");
	check_read(&d, "class/infiniband/dpv0/ports/1/gid_attrs/types/3", NULL);
	check_read(&d, "class/infiniband/dpv0/node_guid", "0064:70ff:fe76:0a01");
	dpv_conf_free(&c);
}

/* A port whose MAC is the PMD's: zeros where the MAC is needed. */
static void test_no_mac(void)
{
	static const char json[] = "{\"ports\":[{\"name\":\"p0\",\"device\":{\"type\":\"vdev\",\"args\":\"net_null0\"},"
				   "\"ipv4\":\"198.51.100.7/24\"}]}";
	struct dpv_conf c;
	struct dpv_view_dev d;
	char err[512];

	CHECK(dpv_conf_parse_string(json, "no-mac", &c, err, sizeof(err)) == 0, "%s", err);
	dpv_view_from_conf(&c, 0, &d);
	CHECK(!d.mac_known && !d.gids[0].valid, "no MAC: GID 0 not shown as valid");
	check_read(&d, "class/infiniband/p0/node_guid", "0000:0000:0000:0000");
	check_read(&d, "class/infiniband/p0/ports/1/gids/0", "0000:0000:0000:0000:0000:0000:0000:0000");
	check_read(&d, "class/infiniband/p0/ports/1/gid_attrs/types/0", NULL);
	check_read(&d, "class/infiniband/p0/ports/1/gids/1", "0000:0000:0000:0000:0000:ffff:c633:6407");
	dpv_conf_free(&c);
}

/* rate_show's texts for the speeds the sw driver reports. */
static void test_rates(void)
{
	static const struct { uint64_t mbps; const char *text; } r[] = {
		{1000, "2.5 Gb/sec (1X SDR)"},    {10000, "10 Gb/sec (1X FDR10)"}, {25000, "25 Gb/sec (1X EDR)"},
		{40000, "56 Gb/sec (4X FDR)"},    {100000, "100 Gb/sec (4X EDR)"}, {200000, "200 Gb/sec (4X HDR)"},
	};
	struct dpv_conf c;
	struct dpv_view_dev d;
	char err[512];

	CHECK(dpv_conf_load(NULL, &c, err, sizeof(err)) == 0, "default: %s", err);
	dpv_view_from_conf(&c, 0, &d);
	for (size_t i = 0; i < sizeof(r) / sizeof(r[0]); i++) {
		d.active_speed = dpv_view_speed(r[i].mbps, &d.active_width);
		check_read(&d, "class/infiniband/dpv0/ports/1/rate", r[i].text);
	}
	d.state = 1;
	d.phys_state = 2;
	check_read(&d, "class/infiniband/dpv0/ports/1/state", "1: DOWN");
	check_read(&d, "class/infiniband/dpv0/ports/1/phys_state", "2: Polling");
	dpv_conf_free(&c);
}

int main(int argc, char **argv)
{
	test_default();
	test_pair_a(argc > 1 ? argv[1] : NULL);
	test_no_mac();
	test_rates();
	return dpvt_finish();
}
