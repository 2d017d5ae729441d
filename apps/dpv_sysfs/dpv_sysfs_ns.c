/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The private mount namespace of dpverbs-run --view (dpv_sysfs.h).
 *
 * /sys/class and /dev are not ours to change, and a folder cannot be made
 * in either (sysfs; the host's devtmpfs): a tmpfs is mounted over the
 * folder in the private namespace, and every entry of the covered folder is
 * put back into it (directories and files bind-mounted, recursively, from
 * the covered folder reached through a descriptor opened before; symbolic
 * links copied), except the ones the view replaces. Nothing is written
 * outside the tmpfs, no temporary folder is made on the host, and the mounts
 * end with the namespace, that is with the program.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include "dpv_sysfs.h"

static int fail(char *msg, size_t len, const char *what, const char *path, int err)
{
	snprintf(msg, len, "%s %s: %s", what, path, strerror(err));
	return -1;
}

static int write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = write(fd, text, strlen(text));
	int e = errno;
	close(fd);
	errno = e;
	return n == (ssize_t)strlen(text) ? 0 : -1;
}

/* A user namespace mapping the caller's ids to themselves, and a mount
 * namespace owned by it (the caller has every capability in both until
 * it executes the program). -1: nothing changed; -2: in a user namespace
 * without its maps, where the program must not run. */
static int enter_userns(char *msg, size_t len)
{
	char map[64];
	uid_t uid = getuid();
	gid_t gid = getgid();

	if (unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0)
		return fail(msg, len, "unshare", "(user and mount namespaces)", errno);
	/* from here on there is no way back: a failure is -2 */
	if (write_file("/proc/self/setgroups", "deny") != 0 && errno != ENOENT)
		return fail(msg, len, "write", "/proc/self/setgroups", errno) - 1;
	snprintf(map, sizeof(map), "%u %u 1\n", (unsigned int)uid, (unsigned int)uid);
	if (write_file("/proc/self/uid_map", map) != 0)
		return fail(msg, len, "write", "/proc/self/uid_map", errno) - 1;
	snprintf(map, sizeof(map), "%u %u 1\n", (unsigned int)gid, (unsigned int)gid);
	if (write_file("/proc/self/gid_map", map) != 0)
		return fail(msg, len, "write", "/proc/self/gid_map", errno) - 1;
	return 0;
}

int dpv_ns_enter(char *msg, size_t len)
{
	if (unshare(CLONE_NEWNS) != 0) {
		int e = errno;
		if (e != EPERM && e != EACCES)
			return fail(msg, len, "unshare", "(mount namespace)", e);
		int r = enter_userns(msg, len);
		if (r != 0)
			return r;
	}
	/* nothing we mount may propagate to the namespace we came from */
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0)
		return fail(msg, len, "mount --make-rprivate", "/", errno);
	return 0;
}

static bool skipped(const char *name, const char *skip_prefix)
{
	return !strcmp(name, ".") || !strcmp(name, "..") ||
	       (skip_prefix && !strncmp(name, skip_prefix, strlen(skip_prefix)));
}

/* Put entry name of the covered folder (descriptor dfd) back at dir/name. */
static int restore(int dfd, const char *dir, const char *name, char *msg, size_t len)
{
	char src[PATH_MAX], dst[PATH_MAX], link[PATH_MAX];
	struct stat st;

	snprintf(dst, sizeof(dst), "%s/%s", dir, name);
	snprintf(src, sizeof(src), "/proc/self/fd/%d/%s", dfd, name);
	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
		return errno == ENOENT ? 0 : fail(msg, len, "stat", dst, errno); /* gone meanwhile */
	if (S_ISLNK(st.st_mode)) {
		ssize_t n = readlinkat(dfd, name, link, sizeof(link) - 1);
		if (n < 0)
			return fail(msg, len, "readlink", dst, errno);
		link[n] = '\0';
		return symlink(link, dst) == 0 ? 0 : fail(msg, len, "symlink", dst, errno);
	}
	if (S_ISDIR(st.st_mode)) {
		if (mkdir(dst, st.st_mode & 07777) != 0)
			return fail(msg, len, "mkdir", dst, errno);
	} else {
		int fd = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (fd < 0)
			return fail(msg, len, "create", dst, errno);
		close(fd);
	}
	if (mount(src, dst, NULL, MS_BIND | MS_REC, NULL) != 0)
		return fail(msg, len, "bind-mount onto", dst, errno);
	return 0;
}

/* Cover dir with a tmpfs holding its entries again, except those whose name
 * starts with skip_prefix (NULL: none). */
static int cover(const char *dir, const char *skip_prefix, char *msg, size_t len)
{
	char opts[64];
	struct stat st;
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0 || fstat(dfd, &st) != 0)
		return fail(msg, len, "open", dir, errno);
	snprintf(opts, sizeof(opts), "mode=%o,size=8m", (unsigned int)(st.st_mode & 07777));
	if (mount("dpverbs-view", dir, "tmpfs", MS_NOSUID, opts) != 0) {
		fail(msg, len, "mount tmpfs on", dir, errno);
		close(dfd);
		return -1;
	}
	DIR *d = fdopendir(dup(dfd));
	int r = d ? 0 : fail(msg, len, "read", dir, errno);
	for (struct dirent *e; r == 0 && (e = readdir(d)) != NULL;)
		if (!skipped(e->d_name, skip_prefix))
			r = restore(dfd, dir, e->d_name, msg, len);
	if (d)
		closedir(d);
	close(dfd);
	if (r != 0)
		umount2(dir, MNT_DETACH);
	return r;
}

/* /dev/infiniband/uverbs<i>: the character device UCX insists on
 * (stat, S_ISCHR, access R_OK|W_OK), /dev/null bound onto an empty file. */
static int dev_nodes(unsigned int n, char *msg, size_t len)
{
	char path[64];
	for (unsigned int i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "/dev/infiniband/uverbs%u", i);
		int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (fd < 0)
			return fail(msg, len, "create", path, errno);
		close(fd);
		if (mount("/dev/null", path, NULL, MS_BIND, NULL) != 0)
			return fail(msg, len, "bind-mount /dev/null onto", path, errno);
	}
	return 0;
}

/* /dev/infiniband: its own tmpfs when the folder exists (hiding the kernel's
 * devices, as the view hides its sysfs devices), else a new folder in a
 * tmpfs covering /dev. Sets *covered to the mount to detach on failure. */
static int dev_folder(const char **covered, char *msg, size_t len)
{
	struct stat st;
	if (stat("/dev/infiniband", &st) == 0 && S_ISDIR(st.st_mode)) {
		if (mount("dpverbs-view", "/dev/infiniband", "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=755,size=64k"))
			return fail(msg, len, "mount tmpfs on", "/dev/infiniband", errno);
		*covered = "/dev/infiniband";
		return 0;
	}
	if (cover("/dev", NULL, msg, len) != 0)
		return -1;
	*covered = "/dev";
	if (mkdir("/dev/infiniband", 0755) != 0)
		return fail(msg, len, "mkdir", "/dev/infiniband", errno);
	return 0;
}

int dpv_ns_show(const struct dpv_view_dev *devs, unsigned int n, char *msg, size_t len)
{
	const char *dev_cover = NULL;
	if (cover("/sys/class", "infiniband", msg, len) != 0)
		return -1;
	if (dpv_view_write("/sys", devs, n, msg, len) != 0)
		goto undo;
	if (mount(NULL, "/sys/class", NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID, NULL) != 0) {
		fail(msg, len, "remount read-only", "/sys/class", errno);
		goto undo;
	}
	if (dev_folder(&dev_cover, msg, len) != 0 || dev_nodes(n, msg, len) != 0)
		goto undo;
	return 0;
undo:
	if (dev_cover)
		umount2(dev_cover, MNT_DETACH);
	umount2("/sys/class", MNT_DETACH);
	return -1;
}
