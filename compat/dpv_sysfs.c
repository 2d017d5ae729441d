/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The sysfs emulation of the drop-in: the few attribute files that tools
 * read through ibv_read_sysfs_file() below a device's ibdev_path
 * (/sys/class/infiniband/<dev>): board_id, node_type, fw_ver, hw_rev,
 * node_desc. There is no kernel behind dpverbs, so no real sysfs either.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "dpv_verbs.h"

/**
 * dpv_sysfs_read - the hook ibv_read_sysfs_file() calls (dpv_abi_stubs.c).
 * RETURN VALUE: the number of bytes stored in buf (the value and a newline,
 * truncated to size), or -1 with errno ENOENT for a directory or file that
 * is not emulated.
 */
DPV_EXPORT int dpv_sysfs_read(const char *dir, const char *file, char *buf, size_t size);
int dpv_sysfs_read(const char *dir, const char *file, char *buf, size_t size)
{
	struct dpv_core *c = dpv_core_get();
	for (unsigned int i = 0; c && i < c->n_devs; i++) {
		struct dpv_device *d = &c->devs[i];
		if (strcmp(dir, d->ibdev.ibdev_path) != 0)
			continue;
		const char *val = NULL;
		char tmp[96];
		if (!strcmp(file, "board_id"))
			val = DPV_BOARD_ID;
		else if (!strcmp(file, "node_type"))
			val = "1: CA";
		else if (!strcmp(file, "fw_ver"))
			val = DPV_FW_VER;
		else if (!strcmp(file, "hw_rev"))
			val = RTE_STR(DPV_HW_VER);
		else if (!strcmp(file, "node_desc")) {
			snprintf(tmp, sizeof(tmp), "dpverbs %s", d->ibdev.name);
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
