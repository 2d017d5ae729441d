/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpv_stat: read the counters that running dpverbs processes publish in
 * /dev/shm/dpverbs-stats.<pid> (port traffic, drops by reason, transport
 * counters per port and per QP, fault injection).
 *
 *   dpv_stat                 every live process, non-zero counters
 *   dpv_stat -p PID -a       one process, all counters
 *   dpv_stat --json          one JSON document
 *   dpv_stat -w 1            repeat every second
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <jansson.h>

#include "dpv_stats.h"

static const char *const qp_types[] = {[2] = "RC", [3] = "UC", [4] = "UD", [9] = "XRC_SEND", [10] = "XRC_RECV"};
static const char *const qp_states[] = {"RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR"};

static void usage(const char *argv0)
{
	printf("usage: %s [options]\n"
	       "  -p, --pid PID      only this process\n"
	       "  -a, --all          print zero counters too\n"
	       "  -j, --json         JSON output\n"
	       "  -w, --watch SEC    repeat every SEC seconds\n"
	       "  -h, --help\n"
	       "Reads " DPV_STATS_PREFIX "<pid>, written by every process using dpverbs.\n",
	       argv0);
}

/* Copy a consistent snapshot (the writer's seq is odd while it writes). A
 * writer preempted in the middle keeps seq odd for as long as it is off the
 * CPU (milliseconds on a loaded machine): after a few quick tries, wait 1 ms
 * between tries, up to about 2 s, before giving up with EAGAIN. */
static int snapshot(const char *path, struct dpv_stats_shm *out)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct stat st;
	if (fstat(fd, &st) != 0 || (size_t)st.st_size < sizeof(*out)) {
		close(fd);
		return -EINVAL;
	}
	const struct dpv_stats_shm *s = mmap(NULL, sizeof(*s), PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (s == MAP_FAILED)
		return -errno;
	int r = -EAGAIN;
	for (int tries = 0; tries < 2000; tries++) {
		if (tries >= 10) {
			const struct timespec ms = {0, 1000000};
			nanosleep(&ms, NULL);
		}
		uint64_t a = __atomic_load_n(&s->seq, __ATOMIC_ACQUIRE);
		if (a & 1)
			continue;
		memcpy(out, s, sizeof(*out));
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&s->seq, __ATOMIC_ACQUIRE) == a) {
			r = 0;
			break;
		}
	}
	munmap((void *)s, sizeof(*s));
	if (!r && (memcmp(out->magic, DPV_STATS_MAGIC, 8) || out->version != DPV_STATS_VERSION))
		r = -EPROTO;
	return r;
}

static void print_text(const struct dpv_stats_shm *s, bool all)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	int64_t age = (int64_t)((uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec - s->updated_ns);
	printf("process %d (updated %.3f s ago)\n", s->pid, (double)(age > 0 ? age : 0) / 1e9);
	for (uint32_t i = 0; i < s->n_ports && i < DPV_MAX_PORTS; i++) {
		const struct dpv_stats_port *p = &s->ports[i];
		printf("  port %s: rx %llu pkts %llu B, tx %llu pkts %llu B, roce rx %llu tx %llu, loopback rx %llu tx %llu,"
		       " arp rx %llu tx %llu, nd rx %llu tx %llu\n",
		       p->name, (unsigned long long)p->rx_pkts, (unsigned long long)p->rx_bytes,
		       (unsigned long long)p->tx_pkts, (unsigned long long)p->tx_bytes,
		       (unsigned long long)p->rx_roce, (unsigned long long)p->tx_roce,
		       (unsigned long long)p->rx_loopback, (unsigned long long)p->tx_loopback,
		       (unsigned long long)p->arp_rx, (unsigned long long)p->arp_tx, (unsigned long long)p->nd_rx,
		       (unsigned long long)p->nd_tx);
		if (p->xdp_mode[0])
			printf("    af_xdp on %s: XDP %s; to dpverbs %llu, to the kernel %llu, no socket %llu;"
			       " sockets: RX ring full %llu, fill ring empty %llu, dropped %llu\n",
			       p->kernel_iface, p->xdp_mode, (unsigned long long)p->xdp_roce,
			       (unsigned long long)p->xdp_pass, (unsigned long long)p->xdp_no_xsk,
			       (unsigned long long)p->xsk_rx_ring_full, (unsigned long long)p->xsk_fill_empty,
			       (unsigned long long)p->xsk_rx_dropped);
		else if (p->kernel_iface[0])
			printf("    kernel interface %s: to the kernel %llu, from the kernel %llu, dropped %llu\n",
			       p->kernel_iface, (unsigned long long)p->exc_to_kernel,
			       (unsigned long long)p->exc_from_kernel, (unsigned long long)p->exc_drops);
		for (uint32_t k = 0; k < s->n_drop && k < DPV_STATS_MAX_CNT; k++)
			if (all || p->drop[k])
				printf("    drop.%-24s %llu\n", s->drop_names[k], (unsigned long long)p->drop[k]);
		for (uint32_t k = 0; k < s->n_cnt && k < DPV_STATS_MAX_CNT; k++)
			if (all || p->cnt[k])
				printf("    %-29s %llu\n", s->cnt_names[k], (unsigned long long)p->cnt[k]);
	}
	for (uint32_t i = 0; i < s->n_qps && i < DPV_STATS_MAX_QPS; i++) {
		const struct dpv_stats_qp *q = &s->qps[i];
		const char *t = q->type < 11 && qp_types[q->type] ? qp_types[q->type] : "?";
		const char *st = q->state < 7 ? qp_states[q->state] : "?";
		printf("  qp %#x %s %s port %s:", q->qpn, t, st,
		       q->port < DPV_MAX_PORTS ? s->ports[q->port].name : "?");
		for (uint32_t k = 0; k < s->n_cnt && k < DPV_STATS_MAX_CNT; k++)
			if (all || q->cnt[k])
				printf(" %s=%llu", s->cnt_names[k], (unsigned long long)q->cnt[k]);
		printf("\n");
	}
	if (all || s->fault_dropped || s->fault_duplicated || s->fault_reordered || s->fault_corrupted)
		printf("  fault injection: dropped %llu duplicated %llu reordered %llu corrupted %llu\n",
		       (unsigned long long)s->fault_dropped, (unsigned long long)s->fault_duplicated,
		       (unsigned long long)s->fault_reordered, (unsigned long long)s->fault_corrupted);
}

static json_t *to_json(const struct dpv_stats_shm *s)
{
	json_t *o = json_object();
	json_object_set_new(o, "pid", json_integer(s->pid));
	json_object_set_new(o, "updated_ns", json_integer((json_int_t)s->updated_ns));
	json_t *ports = json_array();
	for (uint32_t i = 0; i < s->n_ports && i < DPV_MAX_PORTS; i++) {
		const struct dpv_stats_port *p = &s->ports[i];
		json_t *jp = json_object();
		json_object_set_new(jp, "name", json_string(p->name));
		json_object_set_new(jp, "rx_pkts", json_integer((json_int_t)p->rx_pkts));
		json_object_set_new(jp, "tx_pkts", json_integer((json_int_t)p->tx_pkts));
		json_object_set_new(jp, "rx_bytes", json_integer((json_int_t)p->rx_bytes));
		json_object_set_new(jp, "tx_bytes", json_integer((json_int_t)p->tx_bytes));
		json_object_set_new(jp, "rx_roce", json_integer((json_int_t)p->rx_roce));
		json_object_set_new(jp, "tx_roce", json_integer((json_int_t)p->tx_roce));
		json_object_set_new(jp, "rx_loopback", json_integer((json_int_t)p->rx_loopback));
		json_object_set_new(jp, "tx_loopback", json_integer((json_int_t)p->tx_loopback));
		json_object_set_new(jp, "arp_rx", json_integer((json_int_t)p->arp_rx));
		json_object_set_new(jp, "arp_tx", json_integer((json_int_t)p->arp_tx));
		json_object_set_new(jp, "nd_rx", json_integer((json_int_t)p->nd_rx));
		json_object_set_new(jp, "nd_tx", json_integer((json_int_t)p->nd_tx));
		json_object_set_new(jp, "kernel_iface", json_string(p->kernel_iface));
		json_object_set_new(jp, "xdp_mode", json_string(p->xdp_mode));
		json_object_set_new(jp, "xdp_roce", json_integer((json_int_t)p->xdp_roce));
		json_object_set_new(jp, "xdp_pass", json_integer((json_int_t)p->xdp_pass));
		json_object_set_new(jp, "xdp_no_xsk", json_integer((json_int_t)p->xdp_no_xsk));
		json_object_set_new(jp, "xsk_rx_ring_full", json_integer((json_int_t)p->xsk_rx_ring_full));
		json_object_set_new(jp, "xsk_fill_empty", json_integer((json_int_t)p->xsk_fill_empty));
		json_object_set_new(jp, "xsk_rx_dropped", json_integer((json_int_t)p->xsk_rx_dropped));
		json_object_set_new(jp, "exc_to_kernel", json_integer((json_int_t)p->exc_to_kernel));
		json_object_set_new(jp, "exc_from_kernel", json_integer((json_int_t)p->exc_from_kernel));
		json_object_set_new(jp, "exc_drops", json_integer((json_int_t)p->exc_drops));
		json_t *d = json_object(), *c = json_object();
		for (uint32_t k = 0; k < s->n_drop && k < DPV_STATS_MAX_CNT; k++)
			json_object_set_new(d, s->drop_names[k], json_integer((json_int_t)p->drop[k]));
		for (uint32_t k = 0; k < s->n_cnt && k < DPV_STATS_MAX_CNT; k++)
			json_object_set_new(c, s->cnt_names[k], json_integer((json_int_t)p->cnt[k]));
		json_object_set_new(jp, "drop", d);
		json_object_set_new(jp, "counters", c);
		json_array_append_new(ports, jp);
	}
	json_object_set_new(o, "ports", ports);
	json_t *qps = json_array();
	for (uint32_t i = 0; i < s->n_qps && i < DPV_STATS_MAX_QPS; i++) {
		const struct dpv_stats_qp *q = &s->qps[i];
		json_t *jq = json_object(), *c = json_object();
		json_object_set_new(jq, "qpn", json_integer(q->qpn));
		json_object_set_new(jq, "type", json_integer(q->type));
		json_object_set_new(jq, "state", json_integer(q->state));
		json_object_set_new(jq, "port", json_string(q->port < DPV_MAX_PORTS ? s->ports[q->port].name : "?"));
		for (uint32_t k = 0; k < s->n_cnt && k < DPV_STATS_MAX_CNT; k++)
			json_object_set_new(c, s->cnt_names[k], json_integer((json_int_t)q->cnt[k]));
		json_object_set_new(jq, "counters", c);
		json_array_append_new(qps, jq);
	}
	json_object_set_new(o, "qps", qps);
	json_t *f = json_object();
	json_object_set_new(f, "dropped", json_integer((json_int_t)s->fault_dropped));
	json_object_set_new(f, "duplicated", json_integer((json_int_t)s->fault_duplicated));
	json_object_set_new(f, "reordered", json_integer((json_int_t)s->fault_reordered));
	json_object_set_new(f, "corrupted", json_integer((json_int_t)s->fault_corrupted));
	json_object_set_new(o, "fault", f);
	return o;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"pid", required_argument, NULL, 'p'}, {"all", no_argument, NULL, 'a'},
		{"json", no_argument, NULL, 'j'},      {"watch", required_argument, NULL, 'w'},
		{"help", no_argument, NULL, 'h'},      {NULL, 0, NULL, 0},
	};
	int pid = 0, watch = 0, c;
	bool all = false, json = false;
	while ((c = getopt_long(argc, argv, "p:ajw:h", opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			pid = atoi(optarg);
			break;
		case 'a':
			all = true;
			break;
		case 'j':
			json = true;
			break;
		case 'w':
			watch = atoi(optarg);
			break;
		case 'h':
			usage(argv[0]);
			return 0;
		default:
			usage(argv[0]);
			return 2;
		}
	}
	for (;;) {
		DIR *d = opendir("/dev/shm");
		if (!d) {
			perror("dpv_stat: /dev/shm");
			return 1;
		}
		json_t *arr = json ? json_array() : NULL;
		int found = 0;
		struct dirent *e;
		const char *pfx = strrchr(DPV_STATS_PREFIX, '/') + 1;
		while ((e = readdir(d)) != NULL) {
			if (strncmp(e->d_name, pfx, strlen(pfx)) != 0)
				continue;
			int p = atoi(e->d_name + strlen(pfx));
			if (p <= 0 || (pid && p != pid))
				continue;
			if (kill(p, 0) != 0 && errno == ESRCH)
				continue; /* left by a process that died */
			char path[300];
			snprintf(path, sizeof(path), "/dev/shm/%s", e->d_name);
			struct dpv_stats_shm *s = malloc(sizeof(*s));
			if (!s)
				return 1;
			int r = snapshot(path, s);
			if (r == 0) {
				found++;
				if (json)
					json_array_append_new(arr, to_json(s));
				else
					print_text(s, all);
			} else {
				fprintf(stderr, "dpv_stat: %s: %s\n", path, strerror(-r));
			}
			free(s);
		}
		closedir(d);
		if (json) {
			char *txt = json_dumps(arr, JSON_INDENT(2));
			printf("%s\n", txt);
			free(txt);
			json_decref(arr);
		} else if (!found) {
			printf(pid ? "no dpverbs process %d\n" : "no dpverbs process running\n", pid);
		}
		if (!watch)
			return found ? 0 : 1;
		fflush(stdout);
		sleep((unsigned int)watch);
	}
}
