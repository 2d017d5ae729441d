/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The sysfs view of dpverbs devices: the attribute files that the kernel
 * would show below /sys/class/infiniband/<dev> and
 * /sys/class/infiniband_verbs/uverbs<N> for an RDMA device, generated from
 * what dpverbs itself knows, for the programs that read them instead of
 * asking libibverbs (UCX, libibumad's ibstat, ibstatus, pyverbs' tests).
 *
 * Two producers share this one table, so that both give the same text:
 *  - apps/dpv_sysfs (dpverbs-run --view) fills a struct dpv_view_dev from
 *    the configuration alone (dpv_view_from_conf: no EAL, no NIC) and writes
 *    the files into a private mount namespace;
 *  - the drop-in's ibv_read_sysfs_file() hook (compat/dpv_read_sysfs.c) fills it
 *    from the running device and answers from the same table.
 * They differ only where the configuration cannot know the running value:
 * the port state and rate (the view shows the port ACTIVE at the nominal
 * DPV_NOMINAL_SPEED_MBPS) and, for a port without "mac", the MAC.
 *
 * Paths are relative to the sysfs root: "class/infiniband/dpv0/node_guid".
 * Values are given without the trailing newline that a read adds.
 */
#ifndef DPV_VIEW_H
#define DPV_VIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dpv_conf.h"
#include "dpv_limits.h"

#ifdef __cplusplus
extern "C" {
#endif

#define DPV_VIEW_PORT 1              /* the only port number of a device */
#define DPV_VIEW_HCA_TYPE "dpverbs"  /* hca_type (ibstat's "CA type") */
#define DPV_VIEW_UVERBS_ABI 6        /* class/infiniband_verbs/abi_version (IB_USER_VERBS_ABI_VERSION) */
#define DPV_VIEW_DEV_ABI 1           /* uverbs<N>/abi_version: the provider ABI */

/* What the view shows of one device. */
struct dpv_view_dev {
	char name[DPV_NAME_MAX];     /* verbs device name: the port's "name" */
	char netdev[DPV_NAME_MAX];   /* its network interface: the kernel interface of an
				      * "af_xdp" port or of "kernel_iface", else the port's
				      * name (dpverbs-run --netns-iface makes one of it) */
	unsigned int index;          /* configuration order: uverbs<index> */
	uint8_t mac[6];
	bool mac_known;              /* false: no "mac" configured, the PMD's is not known */
	struct dpv_gid_entry gids[DPV_GID_TABLE_LEN];
	uint16_t lid;                /* the port's LID (dpverbs' LIDs on RoCE; 0: none) */
	uint8_t state;               /* enum ibv_port_state: 4 ACTIVE, 1 DOWN */
	uint8_t phys_state;          /* 5 LinkUp, 2 Polling */
	uint8_t active_speed;        /* ibv_port_attr encodings */
	uint8_t active_width;
};

/*
 * Called for each file (val: its text) or directory that is empty otherwise
 * (val NULL), path relative to the sysfs root. A non-zero return stops the
 * walk and is returned by it.
 */
typedef int (*dpv_view_fn)(void *arg, const char *path, const char *val);

/* IB speed x width closest to an Ethernet link speed (ibv_port_attr
 * active_speed, *width active_width). */
uint8_t dpv_view_speed(uint64_t mbps, uint8_t *width);
/* Port i of the configuration as the view shows it before any start: ACTIVE
 * at DPV_NOMINAL_SPEED_MBPS. Returns 0, or -EINVAL for a bad index. Without
 * a configured "mac" (mac_known false) the node GUID and GID 0 are zero. An
 * "af_xdp" port that follows its interface shows the interface's MAC and
 * the GIDs of its addresses (read from the kernel now). */
int dpv_view_from_conf(const struct dpv_conf *c, unsigned int i, struct dpv_view_dev *d);
/* Every file of the device: class/infiniband/<name>/... (device attributes,
 * ports/1/..., gids, gid_attrs/types and ndevs of the valid GIDs, pkeys,
 * device/net/<name>/) and class/infiniband_verbs/uverbs<index>/... */
int dpv_view_walk_dev(const struct dpv_view_dev *d, dpv_view_fn fn, void *arg);
/* The files that are not a device's: class/infiniband_verbs/abi_version and
 * the directory class/infiniband (there even without devices). */
int dpv_view_walk_class(dpv_view_fn fn, void *arg);
/* Read one file of the device's view as sysfs does: the text and a newline
 * into buf (truncated to len). Returns the length, or -ENOENT (no such file
 * or a directory). */
int dpv_view_read(const struct dpv_view_dev *d, const char *path, char *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif /* DPV_VIEW_H */
