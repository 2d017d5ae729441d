/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * EAL bring-up from the configuration: the argument vector (file prefix,
 * lcores, memory, devices, --no-pci), what other processes left behind
 * (runtime directories of dead processes, stale memif socket files), and a
 * clear message when the EAL identity is held by another process.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <dirent.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <rte_eal.h>
#include <rte_errno.h>

#include "dpv_port.h"

void dpv_runtime_fail(struct dpv_runtime *rt, int err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(rt->init_msg, sizeof(rt->init_msg), fmt, ap);
	va_end(ap);
	rt->init_err = err;
	fprintf(stderr, "dpverbs: %s\n", rt->init_msg);
}

int dpv_rm_tree(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char path[512];
	if (!d)
		return -1;
	while ((e = readdir(d)) != NULL) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		unlink(path);
	}
	closedir(d);
	return rmdir(dir);
}

bool dpv_memif_socket_path(const struct dpv_conf_port *cp, bool server_only, char *out, size_t len)
{
	const char *a = cp->devargs;
	out[0] = 0;
	if (cp->type != DPV_DEV_VDEV || strncmp(a, "net_memif", 9) != 0 ||
	    !strstr(a, "socket-abstract=no") || (server_only && !strstr(a, "role=server")))
		return false;
	const char *p = strstr(a, "socket=");
	if (!p)
		return false;
	p += 7;
	size_t n = strcspn(p, ",");
	if (n == 0 || n >= len || n >= sizeof(((struct sockaddr_un *)0)->sun_path))
		return false;
	memcpy(out, p, n);
	out[n] = 0;
	return true;
}

/* Remove /var/run/dpdk/dpv-<pid> directories of dpverbs processes that died
 * without exiting (our default file prefix; configured prefixes are reused
 * by EAL itself). */
static void sweep_runtime_dirs(void)
{
	DIR *d = opendir("/var/run/dpdk");
	struct dirent *e;
	if (!d)
		return;
	while ((e = readdir(d)) != NULL) {
		if (strncmp(e->d_name, "dpv-", 4) != 0)
			continue;
		char *end;
		long pid = strtol(e->d_name + 4, &end, 10);
		if (*end || pid <= 0 || pid == getpid() || kill((pid_t)pid, 0) == 0 || errno != ESRCH)
			continue;
		char path[300];
		snprintf(path, sizeof(path), "/var/run/dpdk/%s", e->d_name);
		dpv_rm_tree(path);
	}
	closedir(d);
}

/* Is a socket bound to path listening in this network namespace? (the
 * __SO_ACCEPTCON flag in /proc/net/unix; true when that cannot be read,
 * so that nothing is removed on a guess). No connect(): a connection that
 * is closed at once can bring a DPDK 22.11 memif server down (its listener
 * keeps a closed fd registered with EAL's interrupt thread). */
static bool unix_listening(const char *path)
{
	FILE *f = fopen("/proc/net/unix", "r");
	char line[DPV_PATH_MAX + 128], name[DPV_PATH_MAX];
	unsigned long flags;
	bool found = false;
	if (!f)
		return true;
	while (!found && fgets(line, sizeof(line), f))
		if (sscanf(line, "%*s %*s %*s %lx %*s %*s %*s %4095s", &flags, name) == 2)
			found = (flags & 0x10000) && !strcmp(name, path);
	fclose(f);
	return found;
}

/*
 * A memif server's socket file left by a process that was killed (SIGINT,
 * SIGKILL: no exit handler ran) makes DPDK's bind fail and the device
 * vanish. Before EAL probes the devices: a socket file nobody listens on is
 * stale and removed; one a live server listens on is an error.
 * Returns 0, or -1 after dpv_runtime_fail.
 */
static int memif_take_over_sockets(struct dpv_runtime *rt)
{
	const struct dpv_conf *c = &rt->conf;
	for (unsigned int i = 0; i < c->n_ports; i++) {
		const struct dpv_conf_port *cp = &c->ports[i];
		char path[DPV_DEVARGS_MAX];
		struct stat st;
		if (!dpv_memif_socket_path(cp, true, path, sizeof(path)) || lstat(path, &st) != 0)
			continue;
		if (!S_ISSOCK(st.st_mode)) {
			dpv_runtime_fail(rt, EEXIST, "%s: ports[%u] (%s): memif socket %s exists and is not a socket",
					 c->source, i, cp->name, path);
			return -1;
		}
		if (unix_listening(path)) {
			dpv_runtime_fail(rt, EADDRINUSE,
					 "%s: ports[%u] (%s): memif socket %s is served by another process "
					 "(a second server with this configuration?)", c->source, i, cp->name, path);
			return -1;
		}
		fprintf(stderr, "dpverbs: port %s: removing stale memif socket %s (its server is gone)\n",
			cp->name, path);
		unlink(path);
	}
	return 0;
}

/* EAL's runtime directory for a file prefix (eal_get_runtime_dir()). */
static void eal_runtime_dir(const char *prefix, char *out, size_t len)
{
	const char *base = "/var/run";
	if (getuid() != 0) {
		const char *x = getenv("XDG_RUNTIME_DIR");
		base = x ? x : "/tmp";
	}
	snprintf(out, len, "%s/dpdk/%s", base, prefix);
}

/* The process holding EAL's lock on the prefix's config file (a running
 * primary), 0 if none. */
static pid_t prefix_holder(const char *prefix)
{
	char dir[300], path[320];
	eal_runtime_dir(prefix, dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/config", dir);
	int fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return 0;
	struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};
	pid_t pid = 0;
	if (fcntl(fd, F_GETLK, &fl) == 0 && fl.l_type != F_UNLCK)
		pid = fl.l_pid;
	close(fd);
	return pid;
}

static int prefix_busy(struct dpv_runtime *rt, const char *prefix)
{
	pid_t pid = prefix_holder(prefix);
	if (!pid)
		return 0;
	char comm[64] = "?", path[64];
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	FILE *f = fopen(path, "r");
	if (f) {
		if (fgets(comm, sizeof(comm), f))
			comm[strcspn(comm, "\n")] = 0;
		fclose(f);
	}
	dpv_runtime_fail(rt, EBUSY,
			 "%s: eal.file_prefix \"%s\" is in use by process %d (%s): two processes cannot "
			 "share one EAL identity; stop that process, or start this one with a configuration "
			 "of its own (another eal.file_prefix and ports)", rt->conf.source, prefix, (int)pid, comm);
	return -1;
}

/* The calling thread's CPU set as an EAL cpuset string "(0-1)" so that the
 * main lcore is not pinned to one CPU behind the application's back. */
static void cpuset_str(char *buf, size_t len)
{
	cpu_set_t set;
	size_t off = 0;
	int first = 1;
	if (pthread_getaffinity_np(pthread_self(), sizeof(set), &set) != 0) {
		snprintf(buf, len, "0");
		return;
	}
	off += snprintf(buf + off, len - off, "(");
	for (int c = 0; c < CPU_SETSIZE && off + 8 < len; c++) {
		if (!CPU_ISSET(c, &set))
			continue;
		off += snprintf(buf + off, len - off, "%s%d", first ? "" : ",", c);
		first = 0;
	}
	snprintf(buf + off, len - off, ")");
}

/* The EAL argument vector and the strings it points into. */
struct eal_argv {
	char *argv[DPV_MAX_EAL_ARGS + 32];
	int argc;
	char prefix[DPV_NAME_MAX + 32], mem[32], lcores[512], loglvl[32], cpus[256];
	char dev[DPV_MAX_PORTS][DPV_DEVARGS_MAX + 8];
};

/* --lcores: the main lcore on the caller's CPUs and, in service-lcore mode,
 * one lcore per distinct CPU the ports name (contexts that name the same
 * CPU are polled by the same lcore: two spinning threads on one CPU would
 * only take turns every scheduler tick). */
static void lcores_arg(const struct dpv_conf *c, struct eal_argv *a)
{
	cpuset_str(a->cpus, sizeof(a->cpus));
	int off = snprintf(a->lcores, sizeof(a->lcores), "--lcores=0@%s", a->cpus);
	if (c->progress != DPV_PROGRESS_LCORE)
		return;
	int cpus_used[DPV_MAX_PORTS * DPV_MAX_LCORES], n_used = 0;
	for (unsigned int p = 0; p < c->n_ports; p++)
		for (unsigned int q = 0; q < c->ports[p].n_lcores; q++) {
			int cpu = c->ports[p].lcores[q], k;
			for (k = 0; k < n_used; k++)
				if (cpus_used[k] == cpu)
					break;
			if (k < n_used)
				continue;
			cpus_used[n_used++] = cpu;
			off += snprintf(a->lcores + off, sizeof(a->lcores) - off, ",%d@%d", n_used, cpu);
		}
}

static void eal_args_build(const struct dpv_conf *c, struct eal_argv *a)
{
	bool has_pci = false;
	a->argc = 0;
	a->argv[a->argc++] = (char *)"dpverbs";
	if (c->file_prefix[0])
		snprintf(a->prefix, sizeof(a->prefix), "--file-prefix=%s", c->file_prefix);
	else
		snprintf(a->prefix, sizeof(a->prefix), "--file-prefix=dpv-%d", (int)getpid());
	a->argv[a->argc++] = a->prefix;
	lcores_arg(c, a);
	a->argv[a->argc++] = a->lcores;
	if (!c->huge)
		a->argv[a->argc++] = (char *)"--no-huge";
	if (c->memory_mb || !c->huge) {
		/* without hugepages EAL reserves only 64 MiB unless told */
		snprintf(a->mem, sizeof(a->mem), "-m%u", c->memory_mb ? c->memory_mb : 512);
		a->argv[a->argc++] = a->mem;
	}
	snprintf(a->loglvl, sizeof(a->loglvl), "--log-level=%d", c->log_level);
	a->argv[a->argc++] = a->loglvl;
	/* hugepage files keep their names: dpdk-dumpcap attaches as a secondary */
	if (!c->telemetry)
		a->argv[a->argc++] = (char *)"--no-telemetry";
	for (unsigned int p = 0; p < c->n_ports; p++) {
		if (c->ports[p].type == DPV_DEV_VDEV) {
			snprintf(a->dev[p], sizeof(a->dev[p]), "--vdev=%s", c->ports[p].devargs);
			a->argv[a->argc++] = a->dev[p];
		} else if (c->ports[p].type == DPV_DEV_PCI) {
			snprintf(a->dev[p], sizeof(a->dev[p]), "-a%s", c->ports[p].devargs);
			a->argv[a->argc++] = a->dev[p];
			has_pci = true;
		}
	}
	/* Safety: never touch the machine's own PCI devices unless named. */
	if (!has_pci)
		a->argv[a->argc++] = (char *)"--no-pci";
	for (unsigned int i = 0; i < c->n_eal_args; i++)
		a->argv[a->argc++] = c->eal_args[i];
	a->argv[a->argc] = NULL;
}

int dpv_eal_up(struct dpv_runtime *rt)
{
	struct dpv_conf *c = &rt->conf;
	static struct eal_argv a; /* EAL keeps pointers into argv */

	if (c->file_prefix[0]) {
		if (prefix_busy(rt, c->file_prefix))
			return -1;
	} else {
		sweep_runtime_dirs();
	}
	if (memif_take_over_sockets(rt))
		return -1;
	eal_args_build(c, &a);
	if (rte_log_can_log(dpv_port_logtype, RTE_LOG_DEBUG)) {
		char line[4096];
		size_t off = 0;
		for (int i = 0; i < a.argc && off < sizeof(line); i++)
			off += (size_t)snprintf(line + off, sizeof(line) - off, " %s", a.argv[i]);
		DPV_PORT_LOG(DEBUG, "EAL args:%s", line);
	}
	int r = rte_eal_init(a.argc, a.argv);
	if (r < 0) {
		if (rte_errno == EALREADY) {
			rt->eal_ours = false;
			return 0;
		}
		/* lost a race for the prefix with a process started at once */
		if (c->file_prefix[0] && prefix_busy(rt, c->file_prefix))
			return -1;
		if (rte_errno)
			dpv_runtime_fail(rt, rte_errno, "EAL initialisation failed: %s (config %s)",
					 rte_strerror(rte_errno), c->source);
		else
			dpv_runtime_fail(rt, EIO, "EAL initialisation failed (config %s): see EAL's "
					 "message above", c->source);
		return -1;
	}
	rt->eal_ours = true;
	snprintf(rt->runtime_dir, sizeof(rt->runtime_dir), "%s", rte_eal_get_runtime_dir());
	return 0;
}
