/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * AF_XDP ports beside the kernel: DPDK's net_af_xdp on a kernel interface,
 * with dpverbs' XDP program (bpf/dpv_xdp.bpf.c, built into the library and
 * handed to the PMD as a memfd) that takes only RoCEv2 for the port's
 * addresses and passes every other frame to the kernel.
 *
 * Before the device exists (dpv_xdp_prepare) every reason to refuse is
 * checked, with a message naming the field: no such interface, missing
 * capabilities, more queues than the interface has, a kernel that refuses
 * the program, "xdp_mode": "native" on a driver without native XDP, and
 * another XDP program on the interface (never replaced). A program of ours
 * whose owner is dead (SIGKILL between attach and the link below) is
 * removed; one whose owner lives is that process' (refused).
 *
 * The PMD attaches the program through rtnetlink, which outlives the
 * process. Once the port has started (dpv_xdp_attach), dpverbs moves it to
 * a bpf_link instead: the kernel detaches it by itself when the last
 * descriptor of the link closes, so a process killed with SIGKILL leaves
 * nothing on the interface. Children of fork() drop the link descriptor
 * (dpv_xdp_forget).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <dirent.h>
#include <net/if.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <linux/capability.h>
#include <sys/ioctl.h>
#include <linux/ethtool.h>
#include <linux/if_link.h>
#include <linux/if_xdp.h>
#include <linux/sockios.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <sys/syscall.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <rte_dev.h>
#include <rte_ethdev.h>
#include <rte_log.h>

#include "dpv_port.h"
#include "dpv_nl.h"

#ifndef SO_PREFER_BUSY_POLL
#define SO_PREFER_BUSY_POLL 69
#endif
#ifndef SO_BUSY_POLL_BUDGET
#define SO_BUSY_POLL_BUDGET 70
#endif
#ifndef CAP_BPF
#define CAP_BPF 39
#endif

static int xsk_fds(int *out, int max);

/* The program, compiled by meson (clang -target bpf) into dpv_xdp_obj.c. */
extern const unsigned char dpv_xdp_obj[];
extern const unsigned int dpv_xdp_obj_len;

static int libbpf_log(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	/* libbpf speaks for the PMD too (its netlink calls): our log type,
	 * DEBUG for its chatter */
	uint32_t lvl = level == LIBBPF_WARN ? RTE_LOG_INFO : RTE_LOG_DEBUG;
	if (!rte_log_can_log(dpv_port_logtype, lvl))
		return 0;
	char buf[512];
	vsnprintf(buf, sizeof(buf), fmt, ap);
	buf[strcspn(buf, "\n")] = 0;
	rte_log(lvl, dpv_port_logtype, "dpverbs: libbpf: %s\n", buf);
	return 0;
}

/* Field 22 of /proc/<pid>/stat: start time in clock ticks since boot. */
static unsigned long long proc_start_ticks(pid_t pid)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	char *p = strrchr(buf, ')'); /* comm may hold spaces */
	if (!p)
		return 0;
	unsigned long long v = 0;
	/* after ") ": state is field 3, start time field 22 */
	if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu",
		   &v) != 1)
		return 0;
	return v;
}

static void proc_comm(pid_t pid, char *out, size_t len)
{
	char path[64];
	snprintf(out, len, "?");
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return;
	if (fgets(out, (int)len, f))
		out[strcspn(out, "\n")] = 0;
	fclose(f);
}

/* Effective capabilities the port needs: NET_ADMIN (XDP, the interface),
 * NET_RAW (AF_XDP sockets), BPF or SYS_ADMIN (loading the program). */
static int caps_check(struct dpv_runtime *rt, const struct dpv_port *p)
{
	struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
	struct __user_cap_data_struct d[2];
	memset(d, 0, sizeof(d));
	if (syscall(SYS_capget, &h, d) != 0)
		return 0; /* cannot tell: let the kernel say */
	uint64_t eff = (uint64_t)d[1].effective << 32 | d[0].effective;
#define HAS(c) ((eff >> (c)) & 1)
	char missing[128] = "";
	if (!HAS(CAP_NET_ADMIN))
		strcat(missing, " CAP_NET_ADMIN");
	if (!HAS(CAP_NET_RAW))
		strcat(missing, " CAP_NET_RAW");
	if (!HAS(CAP_BPF) && !HAS(CAP_SYS_ADMIN))
		strcat(missing, " CAP_BPF");
#undef HAS
	if (!missing[0])
		return 0;
	dpv_runtime_fail(rt, EPERM, "%s: ports[%u] (%s): device.type \"af_xdp\" needs the capabilities"
			 "%s (AF_XDP sockets and an XDP program on %s): run as root, or grant them "
			 "(setcap cap_net_admin,cap_net_raw,cap_bpf+ep PROGRAM), or use shared mode, "
			 "where only dpverbsd needs them", rt->conf.source, p->index, p->name, missing,
			 p->conf->iface);
	return -1;
}

/* The queues of the interface as DPDK's net_af_xdp counts them: its
 * combined channels (ETHTOOL_GCHANNELS), 1 when it has none (a veth reports
 * separate RX and TX channels only) or cannot tell. */
static unsigned int iface_queues(const char *name)
{
	struct ethtool_channels ch = {.cmd = ETHTOOL_GCHANNELS};
	struct ifreq ifr;
	unsigned int n = 1;
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return 1;
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name);
	ifr.ifr_data = (void *)&ch;
	if (ioctl(fd, SIOCETHTOOL, &ifr) == 0 && ch.max_combined && ch.combined_count)
		n = ch.combined_count;
	close(fd);
	return n;
}

/* The RX queues the kernel has for the interface (/sys/class/net/X/queues). */
static unsigned int iface_rx_queues(const char *name)
{
	char path[128];
	unsigned int n = 0;
	snprintf(path, sizeof(path), "/sys/class/net/%s/queues", name);
	DIR *d = opendir(path);
	struct dirent *e;
	while (d && (e = readdir(d)) != NULL)
		n += !strncmp(e->d_name, "rx-", 3);
	if (d)
		closedir(d);
	return n ? n : 1;
}

/* Program facts by id: its name and a map of it by name (fd, or -1). */
static int prog_info(uint32_t id, char name[BPF_OBJ_NAME_LEN], const char *map, int *map_fd)
{
	int fd = bpf_prog_get_fd_by_id(id);
	if (fd < 0)
		return -errno;
	uint32_t ids[16];
	struct bpf_prog_info info;
	uint32_t len = sizeof(info);
	memset(&info, 0, sizeof(info));
	info.nr_map_ids = 16;
	info.map_ids = (uint64_t)(uintptr_t)ids;
	int r = bpf_obj_get_info_by_fd(fd, &info, &len);
	if (r) {
		r = -errno;
		close(fd);
		return r;
	}
	memcpy(name, info.name, BPF_OBJ_NAME_LEN);
	name[BPF_OBJ_NAME_LEN - 1] = 0;
	if (map_fd)
		*map_fd = -1;
	for (uint32_t i = 0; map && map_fd && i < info.nr_map_ids && i < 16; i++) {
		int mfd = bpf_map_get_fd_by_id(ids[i]);
		struct bpf_map_info mi;
		uint32_t mlen = sizeof(mi);
		memset(&mi, 0, sizeof(mi));
		if (mfd >= 0 && bpf_obj_get_info_by_fd(mfd, &mi, &mlen) == 0 && !strcmp(mi.name, map)) {
			*map_fd = mfd;
			break;
		}
		if (mfd >= 0)
			close(mfd);
	}
	return fd;
}

/* The bpf_link holding prog_id on ifindex, as a descriptor, or -1. */
static int link_of(int ifindex, uint32_t prog_id)
{
	uint32_t id = 0;
	while (bpf_link_get_next_id(id, &id) == 0) {
		int fd = bpf_link_get_fd_by_id(id);
		if (fd < 0)
			continue;
		struct bpf_link_info li;
		uint32_t len = sizeof(li);
		memset(&li, 0, sizeof(li));
		if (bpf_obj_get_info_by_fd(fd, &li, &len) == 0 && li.type == BPF_LINK_TYPE_XDP &&
		    (int)li.xdp.ifindex == ifindex && li.prog_id == prog_id)
			return fd;
		close(fd);
	}
	return -1;
}

/* Remove our program left on ifindex by a dead process. */
static int remove_stale(int ifindex, uint32_t prog_id, int prog_fd)
{
	int lfd = link_of(ifindex, prog_id);
	int r;
	if (lfd >= 0) {
		r = bpf_link_detach(lfd) ? -errno : 0;
		close(lfd);
		return r;
	}
	struct bpf_xdp_query_opts q = {.sz = sizeof(q)};
	if (bpf_xdp_query(ifindex, 0, &q))
		return -errno;
	uint32_t mode = q.drv_prog_id == prog_id ? XDP_FLAGS_DRV_MODE
		      : q.skb_prog_id == prog_id ? XDP_FLAGS_SKB_MODE : XDP_FLAGS_HW_MODE;
	struct bpf_xdp_attach_opts o = {.sz = sizeof(o), .old_prog_fd = prog_fd};
	return bpf_xdp_detach(ifindex, mode | XDP_FLAGS_REPLACE, &o);
}

/* What is on the interface now: nothing, our program of a dead process
 * (removed), or something we must not touch (error). */
static int check_attached(struct dpv_runtime *rt, struct dpv_port *p)
{
	const char *ifn = p->conf->iface;
	struct bpf_xdp_query_opts q = {.sz = sizeof(q)};
	if (bpf_xdp_query(p->kif.ifindex, 0, &q)) {
		dpv_runtime_fail(rt, errno, "%s: ports[%u].device.iface: cannot query XDP on %s: %s "
				 "(a kernel without XDP?)", rt->conf.source, p->index, ifn, strerror(errno));
		return -1;
	}
	uint32_t ids[3] = {q.drv_prog_id, q.skb_prog_id, q.hw_prog_id};
	for (int i = 0; i < 3; i++) {
		if (!ids[i])
			continue;
		char name[BPF_OBJ_NAME_LEN] = "?";
		int owner_fd = -1;
		int fd = prog_info(ids[i], name, DPV_XDP_MAP_OWNER, &owner_fd);
		bool ours = fd >= 0 && !strcmp(name, DPV_XDP_PROG_NAME);
		struct dpv_xdp_owner o;
		uint32_t key = 0;
		memset(&o, 0, sizeof(o));
		if (owner_fd >= 0)
			bpf_map_lookup_elem(owner_fd, &key, &o);
		else if (ours && (owner_fd = link_of(p->kif.ifindex, ids[i])) >= 0)
			o.pid = ~0u; /* held by a link but no owner recorded: in use */
		if (owner_fd >= 0)
			close(owner_fd);
		if (!ours) {
			if (fd >= 0)
				close(fd);
			dpv_runtime_fail(rt, EBUSY, "%s: ports[%u].device.iface: %s already has an XDP "
					 "program (id %u, \"%s\"): dpverbs never replaces another program; "
					 "detach it first if it is not needed (ip link set dev %s xdp off)",
					 rt->conf.source, p->index, ifn, ids[i], name, ifn);
			return -1;
		}
		bool alive = o.pid == ~0u || (o.pid && kill((pid_t)o.pid, 0) == 0 &&
					       proc_start_ticks((pid_t)o.pid) == o.start_ticks);
		if (alive) {
			char comm[64], who[96] = "another dpverbs process";
			if (o.pid != ~0u) {
				proc_comm((pid_t)o.pid, comm, sizeof(comm));
				snprintf(who, sizeof(who), "dpverbs process %u (%s)", o.pid, comm);
			}
			close(fd);
			dpv_runtime_fail(rt, EBUSY, "%s: ports[%u].device.iface: %s is in use by %s: one "
					 "process owns an AF_XDP port; run the programs as applications of "
					 "one dpverbsd (\"mode\": \"shared\")", rt->conf.source, p->index, ifn,
					 who);
			return -1;
		}
		int r = remove_stale(p->kif.ifindex, ids[i], fd);
		close(fd);
		if (r) {
			dpv_runtime_fail(rt, -r, "%s: ports[%u].device.iface: cannot remove the XDP program "
					 "left on %s by dead dpverbs process %u: %s", rt->conf.source,
					 p->index, ifn, o.pid, strerror(-r));
			return -1;
		}
		if (o.pid)
			fprintf(stderr, "dpverbs: port %s: removed the XDP program dpverbs process %u left "
				"on %s (it is gone)\n", p->name, o.pid, ifn);
		else
			fprintf(stderr, "dpverbs: port %s: removed the XDP program a dpverbs process left on "
				"%s before it finished starting\n", p->name, ifn);
	}
	return 0;
}

static uint32_t mode_flags(enum dpv_xdp_mode m)
{
	return m == DPV_XDP_NATIVE ? XDP_FLAGS_DRV_MODE : m == DPV_XDP_GENERIC ? XDP_FLAGS_SKB_MODE : 0;
}

/* Load the program once as the PMD will, so that a kernel that refuses it
 * (no BPF, no XDP, lockdown) or a driver without native XDP for "native"
 * is named now; nothing stays attached. */
static int probe_program(struct dpv_runtime *rt, struct dpv_port *p)
{
	LIBBPF_OPTS(bpf_object_open_opts, oo, .object_name = "dpv_xdp");
	struct bpf_object *obj = bpf_object__open_mem(dpv_xdp_obj, dpv_xdp_obj_len, &oo);
	int r = obj ? bpf_object__load(obj) : -errno;
	if (r) {
		if (obj)
			bpf_object__close(obj);
		dpv_runtime_fail(rt, -r, "%s: ports[%u] (%s): the kernel refused dpverbs' XDP program: %s "
				 "(a kernel without BPF or XDP, or BPF locked down)", rt->conf.source,
				 p->index, p->name, strerror(-r));
		return -1;
	}
	/* net_af_xdp attaches it in the driver's default mode: try that
	 * (and native, if asked) now, by a link closed at once */
	struct bpf_program *prog = bpf_object__find_program_by_name(obj, DPV_XDP_PROG_NAME);
	bool native = p->conf->xdp_mode == DPV_XDP_NATIVE;
	LIBBPF_OPTS(bpf_link_create_opts, lo, .flags = native ? XDP_FLAGS_DRV_MODE : 0);
	int lfd = prog ? bpf_link_create(bpf_program__fd(prog), p->kif.ifindex, BPF_XDP, &lo) : -1;
	int err = lfd < 0 ? errno : 0;
	if (lfd >= 0)
		close(lfd);
	if (lfd < 0) {
		bpf_object__close(obj);
		if (native && err == EOPNOTSUPP)
			dpv_runtime_fail(rt, err, "%s: ports[%u].device.xdp_mode: \"native\": the driver of %s "
					 "has no native XDP (%s); use \"auto\" or \"generic\"", rt->conf.source,
					 p->index, p->conf->iface, strerror(err));
		else
			dpv_runtime_fail(rt, err, "%s: ports[%u].device.iface: %s refused dpverbs' XDP program "
					 "(%s)%s", rt->conf.source, p->index, p->conf->iface, strerror(err),
					 err == ERANGE ? ": its MTU is above what its driver's XDP takes (a veth: "
					 "about 3500 bytes); lower it" : "");
		return -1;
	}
	bpf_object__close(obj);
	return 0;
}

/* The object in a memfd: net_af_xdp loads xdp_prog from a path. */
static int object_memfd(struct dpv_runtime *rt, struct dpv_port *p)
{
	int fd = memfd_create("dpv_xdp", MFD_CLOEXEC);
	if (fd < 0 || write(fd, dpv_xdp_obj, dpv_xdp_obj_len) != (ssize_t)dpv_xdp_obj_len) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		dpv_runtime_fail(rt, e, "port %s: cannot write the XDP program: %s", p->name, strerror(e));
		return -1;
	}
	p->xdp.obj_fd = fd;
	return 0;
}

/*
 * One bring-up at a time per interface (two processes started at once):
 * from the look at what is attached until the program is held by our
 * link, so that the second sees the first's program and its owner (and is
 * refused by name) instead of racing it for the attachment. An flock on
 * a file named after the network namespace and the interface.
 */
static int iface_lock(struct dpv_runtime *rt, struct dpv_port *p)
{
	char ns[64] = "", path[256];
	ssize_t n = readlink("/proc/self/ns/net", ns, sizeof(ns) - 1);
	unsigned long ino = 0;
	if (n > 0) {
		ns[n] = 0;
		sscanf(ns, "net:[%lu]", &ino);
	}
	const char *dir = access("/run/dpverbs", W_OK) == 0 || mkdir("/run/dpverbs", 0755) == 0
			  ? "/run/dpverbs" : "/tmp";
	snprintf(path, sizeof(path), "%s/af_xdp.%lu.%s.lock", dir, ino, p->conf->iface);
	p->xdp.lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (p->xdp.lock_fd < 0)
		return 0; /* no lock: the checks still catch most */
	for (int i = 0; i < 300; i++) {
		if (flock(p->xdp.lock_fd, LOCK_EX | LOCK_NB) == 0)
			return 0;
		usleep(50 * 1000);
	}
	dpv_runtime_fail(rt, EBUSY, "%s: ports[%u].device.iface: another process has been starting on %s for "
			 "15 s (%s)", rt->conf.source, p->index, p->conf->iface, path);
	return -1;
}

static void iface_unlock(struct dpv_port *p)
{
	if (p->xdp.lock_fd >= 0)
		close(p->xdp.lock_fd); /* the flock goes with it */
	p->xdp.lock_fd = -1;
}

int dpv_xdp_prepare(struct dpv_runtime *rt, struct dpv_port *p)
{
	const struct dpv_conf_port *cp = p->conf;
	struct dpv_nl_link l;

	p->xdp.prog_fd = p->xdp.link_fd = p->xdp.obj_fd = p->xdp.lock_fd = -1;
	p->xdp.addrs_fd = p->xdp.stats_fd = p->xdp.owner_fd = -1;
	libbpf_set_print(libbpf_log);
	if (dpv_nl_link_by_index(p->kif.ifindex, &l) != 0) {
		dpv_runtime_fail(rt, ENODEV, "%s: ports[%u].device.iface: no interface \"%s\" in this "
				 "network namespace", rt->conf.source, p->index, cp->iface);
		return -1;
	}
	p->xdp.if_rx_queues = iface_queues(cp->iface);
	if (cp->n_queues > p->xdp.if_rx_queues) {
		dpv_runtime_fail(rt, EINVAL, "%s: ports[%u].device.queues: %u requested, interface %s has "
				 "%u combined channel(s), what DPDK's net_af_xdp serves (ethtool -l %s)",
				 rt->conf.source, p->index, cp->n_queues, cp->iface, p->xdp.if_rx_queues,
				 cp->iface);
		return -1;
	}
	if (caps_check(rt, p) || iface_lock(rt, p) || check_attached(rt, p) || probe_program(rt, p) ||
	    object_memfd(rt, p))
		return -1;
	int pre = xsk_fds(p->xdp.pre_fds, (int)RTE_DIM(p->xdp.pre_fds));
	p->xdp.n_pre = pre > 0 ? (unsigned int)pre : 0;
	/* preferred busy polling drives the NIC's NAPI from our polls: only
	 * worth its recvfrom() per empty poll with zero-copy sockets; a driver
	 * that says it has no zero-copy (generic netlink, Linux 6.3+) runs its
	 * sockets in copy mode, where the kernel delivers frames by itself */
	uint64_t feat = 0;
	int fr = dpv_nl_xdp_features(p->kif.ifindex, &feat);
	bool busy = cp->xdp_mode != DPV_XDP_GENERIC && (fr != 0 || (feat & DPV_NL_XDP_XSK_ZEROCOPY));
	char name[DPV_NAME_MAX + 16], args[DPV_DEVARGS_MAX];
	snprintf(name, sizeof(name), "net_af_xdp_%s", p->name);
	snprintf(args, sizeof(args), "%s,iface=%s,start_queue=0,queue_count=%u,xdp_prog=/proc/self/fd/%d%s%s",
		 name, cp->iface, cp->n_queues, p->xdp.obj_fd,
		 cp->xdp_mode == DPV_XDP_GENERIC ? ",force_copy=1" : "", busy ? "" : ",busy_budget=0");
	int r = rte_dev_probe(args);
	if (r == 0)
		r = rte_eth_dev_get_port_by_name(name, &p->eth_port);
	if (r) {
		dpv_runtime_fail(rt, -r, "port %s: cannot create %s: %s (see the PMD's message above)",
				 p->name, args, rte_strerror(-r));
		return -1;
	}
	unsigned int rxq = iface_rx_queues(cp->iface);
	if (cp->n_queues < rxq)
		DPV_PORT_LOG(WARNING, "port %s: %s has %u RX queues, dpverbs serves %u: RoCEv2 that RSS "
			     "puts on the others is dropped (counted as xdp_no_xsk); set device.queues to "
			     "%u, or ethtool -L %s combined %u", p->name, cp->iface, rxq, cp->n_queues, rxq,
			     cp->iface, cp->n_queues);
	return 0;
}

/* ---- after the port started ---- */

/* The AF_XDP sockets of this process (descriptors whose getsockopt
 * SOL_XDP/XDP_OPTIONS answers; no sock_diag module needed), up to max:
 * their number. */
static int xsk_fds(int *out, int max)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;
	while (d && (e = readdir(d)) != NULL && n < max) {
		int fd = atoi(e->d_name);
		struct xdp_options o;
		socklen_t ol = sizeof(o);
		if (fd > 2 && fd != dirfd(d) && getsockopt(fd, SOL_XDP, XDP_OPTIONS, &o, &ol) == 0)
			out[n++] = fd;
	}
	if (d)
		closedir(d);
	return n;
}

/* Zero-copy and busy polling of the port's sockets, the ones that did not
 * exist before its device was made (ports come up one after the other). */
static void report_sockets(struct dpv_port *p)
{
	int fds[DPV_XDP_MAX_QUEUES * DPV_MAX_PORTS];
	int n = xsk_fds(fds, (int)RTE_DIM(fds));
	p->xdp.n_xsk = p->xdp.n_zc = 0;
	p->xdp.busy_poll = false;
	for (int i = 0; i < n; i++) {
		bool old = false;
		for (unsigned int k = 0; k < p->xdp.n_pre && !old; k++)
			old = p->xdp.pre_fds[k] == fds[i];
		if (old)
			continue;
		struct xdp_options o;
		socklen_t ol = sizeof(o);
		int v = 0;
		socklen_t vl = sizeof(v);
		if (p->xdp.n_xsk < DPV_XDP_MAX_QUEUES)
			p->xdp.xsk_fds[p->xdp.n_xsk] = fds[i];
		p->xdp.n_xsk++;
		if (getsockopt(fds[i], SOL_XDP, XDP_OPTIONS, &o, &ol) == 0 && (o.flags & XDP_OPTIONS_ZEROCOPY))
			p->xdp.n_zc++;
		if (getsockopt(fds[i], SOL_SOCKET, SO_PREFER_BUSY_POLL, &v, &vl) == 0 && v) {
			p->xdp.busy_poll = true;
			vl = sizeof(v);
			if (getsockopt(fds[i], SOL_SOCKET, SO_BUSY_POLL_BUDGET, &v, &vl) == 0)
				p->xdp.busy_budget = (unsigned int)v;
		}
	}
}

/* The program as the PMD attached it: fds of it and its maps. */
static int take_program(struct dpv_runtime *rt, struct dpv_port *p, uint32_t *cur_mode)
{
	struct bpf_xdp_query_opts q = {.sz = sizeof(q)};
	if (bpf_xdp_query(p->kif.ifindex, 0, &q) != 0 || !(q.drv_prog_id || q.skb_prog_id)) {
		dpv_runtime_fail(rt, EIO, "port %s: net_af_xdp attached no XDP program to %s", p->name,
				 p->conf->iface);
		return -1;
	}
	p->xdp.prog_id = q.drv_prog_id ? q.drv_prog_id : q.skb_prog_id;
	*cur_mode = q.drv_prog_id ? XDP_FLAGS_DRV_MODE : XDP_FLAGS_SKB_MODE;
	char name[BPF_OBJ_NAME_LEN];
	p->xdp.prog_fd = prog_info(p->xdp.prog_id, name, DPV_XDP_MAP_OWNER, &p->xdp.owner_fd);
	if (p->xdp.prog_fd < 0 || strcmp(name, DPV_XDP_PROG_NAME) != 0 || p->xdp.owner_fd < 0) {
		dpv_runtime_fail(rt, EBUSY, "port %s: the XDP program on %s is not dpverbs' (\"%s\")",
				 p->name, p->conf->iface, name);
		return -1;
	}
	char n2[BPF_OBJ_NAME_LEN];
	int fd = prog_info(p->xdp.prog_id, n2, DPV_XDP_MAP_ADDRS, &p->xdp.addrs_fd);
	if (fd >= 0)
		close(fd);
	fd = prog_info(p->xdp.prog_id, n2, DPV_XDP_MAP_STATS, &p->xdp.stats_fd);
	if (fd >= 0)
		close(fd);
	if (p->xdp.addrs_fd < 0 || p->xdp.stats_fd < 0) {
		dpv_runtime_fail(rt, EIO, "port %s: the maps of the XDP program are missing", p->name);
		return -1;
	}
	struct dpv_xdp_owner o = {.pid = (unsigned int)getpid(), .start_ticks = proc_start_ticks(getpid())};
	uint32_t key = 0;
	bpf_map_update_elem(p->xdp.owner_fd, &key, &o, BPF_ANY);
	return 0;
}

/* From the PMD's rtnetlink attachment to a bpf_link of ours. */
static int hold_by_link(struct dpv_runtime *rt, struct dpv_port *p, uint32_t cur_mode)
{
	struct bpf_xdp_attach_opts o = {.sz = sizeof(o), .old_prog_fd = p->xdp.prog_fd};
	int r = bpf_xdp_detach(p->kif.ifindex, cur_mode | XDP_FLAGS_REPLACE, &o);
	if (r) {
		dpv_runtime_fail(rt, -r, "port %s: cannot take over the XDP program on %s: %s", p->name,
				 p->conf->iface, strerror(-r));
		return -1;
	}
	p->xdp.attach_flags = mode_flags(p->conf->xdp_mode);
	LIBBPF_OPTS(bpf_link_create_opts, lo, .flags = p->xdp.attach_flags);
	p->xdp.link_fd = bpf_link_create(p->xdp.prog_fd, p->kif.ifindex, BPF_XDP, &lo);
	if (p->xdp.link_fd < 0) {
		int e = errno;
		/* put it back as it was, so that the sockets keep working */
		bpf_xdp_attach(p->kif.ifindex, p->xdp.prog_fd, cur_mode | XDP_FLAGS_UPDATE_IF_NOEXIST, NULL);
		dpv_runtime_fail(rt, e, "port %s: cannot attach the XDP program to %s by a link: %s",
				 p->name, p->conf->iface, strerror(e));
		return -1;
	}
	struct bpf_xdp_query_opts q = {.sz = sizeof(q)};
	bpf_xdp_query(p->kif.ifindex, 0, &q);
	snprintf(p->xdp.mode, sizeof(p->xdp.mode), "%s",
		 q.attach_mode == XDP_ATTACHED_DRV ? "native" : q.attach_mode == XDP_ATTACHED_SKB ? "generic"
		 : q.attach_mode == XDP_ATTACHED_HW ? "offload" : "?");
	return 0;
}

int dpv_xdp_attach(struct dpv_runtime *rt, struct dpv_port *p)
{
	uint32_t cur_mode = 0;
	if (p->xdp.obj_fd >= 0) {
		close(p->xdp.obj_fd); /* loaded by the PMD at queue set-up */
		p->xdp.obj_fd = -1;
	}
	if (take_program(rt, p, &cur_mode))
		return -1;
	dpv_xdp_sync_addrs(p);
	if (hold_by_link(rt, p, cur_mode))
		return -1;
	iface_unlock(p);
	report_sockets(p);
	DPV_PORT_LOG(NOTICE, "port %s: AF_XDP on %s, %u queue(s) of %u, XDP %s (program %u), %s, "
		     "preferred busy polling %s", p->name, p->conf->iface, p->n_qctx ? p->n_qctx
		     : p->conf->n_queues, p->xdp.if_rx_queues, p->xdp.mode, p->xdp.prog_id,
		     p->xdp.n_zc && p->xdp.n_zc == p->xdp.n_xsk ? "zero-copy" : "copy mode",
		     p->xdp.busy_poll ? "on" : "off");
	return 0;
}

void dpv_xdp_sync_addrs(struct dpv_port *p)
{
	uint8_t want[DPV_GID_TABLE_LEN][16], cur[DPV_XDP_MAX_ADDRS][16], key[16];
	unsigned int nw = 0, nc = 0;
	if (p->xdp.addrs_fd < 0)
		return;
	for (unsigned int i = 0; i < DPV_GID_TABLE_LEN; i++) {
		struct dpv_gid_entry g;
		if (dpv_port_gid_get(p, i, &g) && g.valid)
			memcpy(want[nw++], g.gid, 16);
	}
	void *prev = NULL;
	while (nc < DPV_XDP_MAX_ADDRS && bpf_map_get_next_key(p->xdp.addrs_fd, prev, key) == 0) {
		memcpy(cur[nc], key, 16);
		prev = cur[nc++];
	}
	for (unsigned int i = 0; i < nc; i++) {
		bool keep = false;
		for (unsigned int k = 0; k < nw && !keep; k++)
			keep = !memcmp(cur[i], want[k], 16);
		if (!keep)
			bpf_map_delete_elem(p->xdp.addrs_fd, cur[i]);
	}
	uint32_t one = 1;
	for (unsigned int k = 0; k < nw; k++)
		bpf_map_update_elem(p->xdp.addrs_fd, want[k], &one, BPF_ANY);
}

void dpv_xdp_xsk_stats(const struct dpv_port *p, struct dpv_kif_info *out)
{
	for (unsigned int i = 0; i < p->xdp.n_xsk && i < DPV_XDP_MAX_QUEUES; i++) {
		struct xdp_statistics st;
		socklen_t len = sizeof(st);
		if (getsockopt(p->xdp.xsk_fds[i], SOL_XDP, XDP_STATISTICS, &st, &len) != 0)
			continue;
		out->xsk_rx_ring_full += st.rx_ring_full;
		out->xsk_fill_empty += st.rx_fill_ring_empty_descs;
		out->xsk_rx_dropped += st.rx_dropped + st.rx_invalid_descs;
	}
}

int dpv_xdp_read_stats(const struct dpv_port *p, uint64_t out[DPV_XDP_ST_NR])
{
	memset(out, 0, sizeof(uint64_t) * DPV_XDP_ST_NR);
	if (p->xdp.stats_fd < 0)
		return -ENODEV;
	int ncpu = libbpf_num_possible_cpus();
	if (ncpu <= 0 || ncpu > 4096)
		return -EIO;
	uint64_t v[ncpu];
	for (uint32_t k = 0; k < DPV_XDP_ST_NR; k++) {
		if (bpf_map_lookup_elem(p->xdp.stats_fd, &k, v) != 0)
			return -errno;
		for (int c = 0; c < ncpu; c++)
			out[k] += v[c];
	}
	return 0;
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

void dpv_xdp_release(struct dpv_port *p)
{
	/* the link goes last: the kernel then detaches the program (the PMD's
	 * own detach at close found it held by the link and left it) */
	close_fd(&p->xdp.addrs_fd);
	close_fd(&p->xdp.stats_fd);
	close_fd(&p->xdp.owner_fd);
	close_fd(&p->xdp.obj_fd);
	close_fd(&p->xdp.lock_fd);
	close_fd(&p->xdp.link_fd);
	close_fd(&p->xdp.prog_fd);
}

void dpv_xdp_forget(struct dpv_port *p)
{
	dpv_xdp_release(p);
}
