/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpv_sysfs: what the kernel would show in sysfs for the dpverbs devices of
 * a configuration (lib/conf/dpv_view.c), without starting EAL or touching a
 * NIC: only the configuration is read.
 *
 *   dpv_sysfs [-c CONFIG]                 print every file and its text
 *   dpv_sysfs [-c CONFIG] -o DIR          write the files below DIR (DIR/class/...)
 *   dpv_sysfs [-c CONFIG] --ifaces        one line per port: NAME MAC ADDR/PREFIX...
 *   dpv_sysfs [-c CONFIG] --exec PROG ARGS...
 *                                         PROG in a private mount namespace that
 *                                         shows the view (dpverbs-run --view)
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "dpv_conf.h"
#include "dpv_sysfs.h"

enum mode { MODE_PRINT, MODE_WRITE, MODE_IFACES, MODE_EXEC };

static void usage(FILE *f)
{
	fprintf(f, "usage: dpv_sysfs [-c CONFIG] [-o DIR | --ifaces | --exec PROGRAM [ARGS...]]\n"
		   "  -c, --config FILE  configuration (default: $DPVERBS_CONFIG, else the built-in one)\n"
		   "  -o, --output DIR   write the files below DIR (DIR/class/infiniband/...)\n"
		   "      --ifaces       print NAME MAC ADDRESS/PREFIX... per port\n"
		   "      --exec         run PROGRAM in a private mount namespace showing the view\n"
		   "  -h, --help\n"
		   "Without -o, --ifaces or --exec: print every file of the view and its text.\n");
}

/* ---- writing the files ---- */

static int mkdirs(char *path, char *msg, size_t len)
{
	for (char *p = path + 1; ; p++) {
		if (*p != '/' && *p != '\0')
			continue;
		char c = *p;
		*p = '\0';
		int r = mkdir(path, 0755);
		int e = errno;
		*p = c;
		if (r != 0 && e != EEXIST) {
			snprintf(msg, len, "mkdir %.*s: %s", (int)(p - path), path, strerror(e));
			return -1;
		}
		if (c == '\0')
			return 0;
	}
}

struct writer {
	const char *root;
	char *msg;
	size_t len;
};

static int write_one(void *arg, const char *rel, const char *val)
{
	struct writer *w = arg;
	char path[4096];

	snprintf(path, sizeof(path), "%s/%s", w->root, rel);
	if (!val)
		return mkdirs(path, w->msg, w->len);
	char *slash = strrchr(path, '/');
	*slash = '\0';
	if (mkdirs(path, w->msg, w->len))
		return -1;
	*slash = '/';
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0444);
	size_t n = strlen(val);
	bool ok = fd >= 0 && write(fd, val, n) == (ssize_t)n && write(fd, "\n", 1) == 1;
	int e = errno;
	if (fd >= 0 && close(fd) != 0 && ok) {
		ok = false;
		e = errno;
	}
	if (!ok) {
		snprintf(w->msg, w->len, "%s: %s", path, strerror(e));
		return -1;
	}
	return 0;
}

int dpv_view_write(const char *root, const struct dpv_view_dev *devs, unsigned int n, char *msg, size_t len)
{
	struct writer w = {.root = root, .msg = msg, .len = len};
	if (dpv_view_walk_class(write_one, &w))
		return -1;
	for (unsigned int i = 0; i < n; i++)
		if (dpv_view_walk_dev(&devs[i], write_one, &w))
			return -1;
	return 0;
}

/* ---- printing ---- */

static int print_one(void *arg, const char *rel, const char *val)
{
	(void)arg;
	if (val)
		printf("/sys/%s: %s\n", rel, val);
	else
		printf("/sys/%s/\n", rel);
	return 0;
}

static void print_view(const struct dpv_view_dev *devs, unsigned int n)
{
	dpv_view_walk_class(print_one, NULL);
	for (unsigned int i = 0; i < n; i++)
		dpv_view_walk_dev(&devs[i], print_one, NULL);
}

/* NAME MAC ADDR/PREFIX...: what an interface holding the port's addresses
 * needs (dpverbs-run --netns-iface); MAC "-" when none is configured. A
 * port beside a kernel interface ("af_xdp", "kernel_iface") has one. */
static void print_ifaces(const struct dpv_conf *c)
{
	char a[INET6_ADDRSTRLEN];
	for (unsigned int i = 0; i < c->n_ports; i++) {
		const struct dpv_conf_port *p = &c->ports[i];
		if (dpv_conf_port_netdev(p))
			continue;
		printf("%s", p->name);
		if (p->mac_set)
			printf(" %02x:%02x:%02x:%02x:%02x:%02x", p->mac[0], p->mac[1], p->mac[2], p->mac[3],
			       p->mac[4], p->mac[5]);
		else
			printf(" -");
		if (p->ipv4.s_addr)
			printf(" %s/%u", inet_ntop(AF_INET, &p->ipv4, a, sizeof(a)), p->ipv4_prefix);
		for (unsigned int k = 0; k < p->n_ipv6; k++)
			printf(" %s/%u", inet_ntop(AF_INET6, &p->ipv6[k].addr, a, sizeof(a)), p->ipv6[k].prefix);
		printf("\n");
	}
}

/* ---- --exec ---- */

static int run(const struct dpv_view_dev *devs, unsigned int n, char **argv)
{
	char msg[512];
	const char *what = NULL;

	int r = dpv_ns_enter(msg, sizeof(msg));
	if (r == -2) {
		fprintf(stderr, "dpverbs-run: --view: %s: not running %s\n", msg, argv[0]);
		return 126;
	}
	if (r != 0)
		what = "cannot create a private mount namespace";
	else if (dpv_ns_show(devs, n, msg, sizeof(msg)) != 0)
		what = "cannot set the view up";
	if (what)
		fprintf(stderr,
			"dpverbs-run: --view: %s (%s); running %s without it: programs that read "
			"/sys/class/infiniband or /dev/infiniband will not find the dpverbs devices "
			"(--view needs root, or unprivileged user namespaces)\n",
			what, msg, argv[0]);
	execvp(argv[0], argv);
	fprintf(stderr, "dpverbs-run: %s: %s\n", argv[0], strerror(errno));
	return errno == ENOENT ? 127 : 126;
}

static int load(const char *path, struct dpv_conf *c, struct dpv_view_dev *devs, unsigned int *n, bool quiet)
{
	char err[1024];
	if (dpv_conf_load(path, c, err, sizeof(err)) != 0) {
		fprintf(stderr, "dpv_sysfs: %s\n", err);
		return -1;
	}
	for (unsigned int i = 0; i < c->n_ports; i++) {
		dpv_view_from_conf(c, i, &devs[i]);
		if (!devs[i].mac_known && !quiet)
			fprintf(stderr,
				"dpv_sysfs: port %s has no \"mac\" in %s: its MAC is the PMD's, known only "
				"once started, so node_guid and GID 0 show zeros (set ports[].mac)\n",
				c->ports[i].name, c->source);
	}
	*n = c->n_ports;
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"config", required_argument, NULL, 'c'}, {"output", required_argument, NULL, 'o'},
		{"ifaces", no_argument, NULL, 'i'},       {"exec", no_argument, NULL, 'x'},
		{"help", no_argument, NULL, 'h'},         {NULL, 0, NULL, 0},
	};
	const char *config = NULL, *out = NULL;
	enum mode mode = MODE_PRINT;
	int o;

	while (mode != MODE_EXEC && (o = getopt_long(argc, argv, "+c:o:h", opts, NULL)) != -1) {
		switch (o) {
		case 'c': config = optarg; break;
		case 'o': out = optarg; mode = MODE_WRITE; break;
		case 'i': mode = MODE_IFACES; break;
		case 'x': mode = MODE_EXEC; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (mode == MODE_EXEC && optind < argc && !strcmp(argv[optind], "--"))
		optind++;
	if ((mode == MODE_EXEC) != (optind < argc)) {
		usage(stderr);
		return 2;
	}
	struct dpv_conf c;
	struct dpv_view_dev devs[DPV_MAX_PORTS];
	unsigned int n = 0;
	if (load(config, &c, devs, &n, mode == MODE_IFACES) != 0)
		return 2;
	int rc = 0;
	char msg[4200];
	if (mode == MODE_EXEC)
		rc = run(devs, n, argv + optind);
	else if (mode == MODE_WRITE && dpv_view_write(out, devs, n, msg, sizeof(msg)) != 0) {
		fprintf(stderr, "dpv_sysfs: %s\n", msg);
		rc = 1;
	} else if (mode == MODE_IFACES)
		print_ifaces(&c);
	else if (mode == MODE_PRINT)
		print_view(devs, n);
	dpv_conf_free(&c);
	return rc;
}
