/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpv_sysfs: the sysfs view of the configured dpverbs devices (dpv_sysfs.c)
 * and the private mount namespace that shows it to a program
 * (dpv_sysfs_ns.c), for dpverbs-run --view. See dpv_sysfs(1).
 */
#ifndef DPV_SYSFS_H
#define DPV_SYSFS_H

#include <stddef.h>

#include "dpv_view.h"

/*
 * Enter a private mount namespace (every mount made private first, so that
 * nothing reaches the caller's namespace): a mount namespace when the
 * process may (CAP_SYS_ADMIN), else a user namespace that maps the caller's
 * uid and gid to themselves plus a mount namespace (unprivileged user
 * namespaces). The process is then the only user of both; they end with it.
 * Returns 0, or with the reason in msg -1 (nothing changed: the program may
 * run without the view) or -2 (in a user namespace whose id maps could not
 * be written: the program must not run there).
 */
int dpv_ns_enter(char *msg, size_t len);
/*
 * Show the view in the current (private) mount namespace: /sys/class
 * covered by a tmpfs that holds bind mounts of its entries except
 * infiniband*, the view's files written into it, then made read-only;
 * /dev/infiniband (a tmpfs, or a new folder of a tmpfs covering /dev the
 * same way when there is none) with uverbs0..n-1, each /dev/null bound onto
 * it (a placeholder that no dpverbs code opens). On failure what was mounted
 * is detached again and -1 returned with the reason in msg.
 */
int dpv_ns_show(const struct dpv_view_dev *devs, unsigned int n, char *msg, size_t len);
/* Write the view's files of n devices below root (a sysfs root: root/class/...).
 * Returns 0, or -1 with the reason in msg. */
int dpv_view_write(const char *root, const struct dpv_view_dev *devs, unsigned int n, char *msg, size_t len);

#endif /* DPV_SYSFS_H */
