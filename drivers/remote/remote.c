/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The remote driver: connection to dpverbsd, requests, the welcome
 * (devices, limits, doorbell rings), object numbers from the daemon, and
 * what happens when the daemon goes away (a watcher thread sees the
 * connection close: IBV_EVENT_DEVICE_FATAL on every context, a wake-up on
 * every completion channel, EIO from every later command, an error from
 * ibv_poll_cq on an empty CQ).
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/syscall.h>
#include <linux/futex.h>

#include "remote.h"

RTE_LOG_REGISTER(rm_logtype, pmd.dpv.remote, NOTICE);

struct rm_state rm_global = {.sock = -1, .lock = PTHREAD_MUTEX_INITIALIZER, .list_lock = PTHREAD_MUTEX_INITIALIZER};

void rm_fatal(const char *why)
{
	if (atomic_exchange(&rm_global.dead, true))
		return;
	shutdown(rm_global.sock, SHUT_RDWR); /* a daemon still there reclaims what we had */
	RM_LOG(ERR, "shared mode: dpverbsd (pid %d, %s) %s: every context of this process is dead "
		    "(IBV_EVENT_DEVICE_FATAL); start the application again once the daemon runs",
	       (int)rm_global.w.pid, rm_global.path, why);
	pthread_mutex_lock(&rm_global.list_lock);
	struct ibv_async_event ev = {.event_type = IBV_EVENT_DEVICE_FATAL};
	ev.element.port_num = DPV_PORT_NUM;
	for (struct rm_ctx *c = rm_global.ctxs; c; c = c->next) {
		ssize_t w = write(c->async_wfd, &ev, sizeof(ev));
		(void)w;
	}
	/* a thread blocked in ibv_get_cq_event wakes, polls, gets the error */
	for (struct rm_cq *q = rm_global.cqs; q; q = q->next) {
		ssize_t w = write(q->chan_fd, &q->cookie, sizeof(q->cookie));
		(void)w;
	}
	pthread_mutex_unlock(&rm_global.list_lock);
}

static int rm_reattach(void);

/* One request on this process' connection (rm_call after the fork check). */
static int call(uint16_t op, void *body, const int *fds, unsigned int nfd, int *out_fd)
{
	struct dpv_shm_msg m;
	size_t len = dpv_shm_body_len(op);
	int in[DPV_SHM_MAX_FDS];
	if (out_fd)
		*out_fd = -1;
	if (atomic_load(&rm_global.dead))
		return -EIO;
	memset(&m.h, 0, sizeof(m.h));
	m.h.magic = DPV_SHM_MAGIC;
	m.h.op = op;
	m.h.len = (uint16_t)(sizeof(m.h) + len);
	memcpy(&m.u, body, len);
	pthread_mutex_lock(&rm_global.lock);
	m.h.seq = ++rm_global.seq;
	uint64_t seq = m.h.seq;
	int r = dpv_shm_send(rm_global.sock, &m, fds, nfd);
	if (r == 0)
		r = dpv_shm_recv(rm_global.sock, &m, in, RM_ANSWER_MS);
	pthread_mutex_unlock(&rm_global.lock);
	if (r <= 0 || m.h.seq != seq || m.h.op != op || m.h.len != sizeof(m.h) + len) {
		if (r > 0)
			dpv_shm_close_fds(in);
		rm_fatal(r == 0 ? "closed the connection" : r == -ETIMEDOUT ? "did not answer within 30 s"
							     : "answered out of turn");
		return -EIO;
	}
	memcpy(body, &m.u, len);
	if (out_fd) {
		*out_fd = in[0];
		in[0] = -1;
	}
	dpv_shm_close_fds(in);
	return m.h.status;
}

int rm_call(uint16_t op, void *body, const int *fds, unsigned int nfd, int *out_fd)
{
	if (atomic_load(&rm_global.forked) && rm_reattach() != 0) {
		if (out_fd)
			*out_fd = -1;
		return -EIO;
	}
	return call(op, body, fds, nfd, out_fd);
}

/* The connection closing is the daemon going away (SIGKILL, crash, stop). */
static void *watcher(void *arg)
{
	(void)arg;
	struct pollfd p = {.fd = rm_global.sock, .events = POLLRDHUP};
	for (;;) {
		int r = poll(&p, 1, -1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 || (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)))
			break;
	}
	rm_fatal("went away");
	return NULL;
}

/* ---- numbers come from the daemon ---- */

static int src_reserve(enum dpv_obj_type t, uint32_t *num)
{
	struct dpv_shm_num n = {.type = t};
	int r = rm_call(DPV_SHM_NUM_RESERVE, &n, NULL, 0, NULL);
	if (!r)
		*num = n.num;
	return r;
}

static void src_release(enum dpv_obj_type t, uint32_t num)
{
	struct dpv_shm_num n = {.type = t, .num = num};
	rm_call(DPV_SHM_NUM_RELEASE, &n, NULL, 0, NULL);
}

static const struct dpv_pool_source rm_source = {.reserve = src_reserve, .release = src_release};

/* ---- probe ---- */

static int connect_daemon(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -errno;
	if (connect(s, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		int e = errno;
		close(s);
		return -e;
	}
	return s;
}

/* HELLO on rm_global.sock: the welcome in rm_global.w, the doorbell rings mapped, the
 * devices' GIDs and doorbells in rm_global.devs, the watcher started. The number
 * of devices, or -errno (rm_global.sock closed). */
static int hello(void)
{
	struct dpv_shm_hello *w = &rm_global.w;
	memset(w, 0, sizeof(*w));
	w->version = DPV_SHM_VERSION;
	w->pid = (int32_t)getpid();
	int db_fd = -1;
	int r = call(DPV_SHM_HELLO, w, NULL, 0, &db_fd);
	void *p = MAP_FAILED;
	size_t one = 0, bytes = 0;
	if (r || db_fd < 0 || w->version != DPV_SHM_VERSION || !w->db_size || (w->db_size & (w->db_size - 1))) {
		fprintf(stderr, "dpverbs: dpverbsd on %s refused this process: %s\n", rm_global.path,
			r == -EPROTONOSUPPORT ? "another protocol version (a daemon of another build)"
					      : strerror(r ? -r : EPROTO));
		r = r ? r : -EPROTO;
	} else {
		one = dpv_db_ring_bytes(w->db_size);
		bytes = w->db_map_bytes;
		if (w->wake_off < (uint64_t)w->n_db * one || w->wake_off % 64 ||
		    w->wake_off + sizeof(struct dpv_wake) > bytes) {
			fprintf(stderr, "dpverbs: dpverbsd on %s: a welcome with a bad doorbell layout\n", rm_global.path);
			r = -EPROTO;
		} else {
			p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, db_fd, 0);
			r = p == MAP_FAILED ? -ENOMEM : 0;
		}
	}
	if (db_fd >= 0)
		close(db_fd);
	if (r) {
		close(rm_global.sock);
		rm_global.sock = -1;
		return r;
	}
	rm_global.db_mem = p;
	rm_global.db_bytes = bytes;
	atomic_store(&rm_global.wake, (struct dpv_wake *)(rm_global.db_mem + w->wake_off));
	rm_global.db_mask = w->db_size - 1;
	/* the engine reads and writes memory this process registers (heap
	 * buffers) with process_vm_readv/writev: allow the daemon to, also
	 * where Yama restricts ptrace to descendants */
	prctl(PR_SET_PTRACER, (unsigned long)w->pid, 0, 0, 0);
	unsigned int n = RTE_MIN(w->n_devs, (uint32_t)DPV_SHM_MAX_DEVS);
	for (unsigned int i = 0; i < n; i++) {
		const struct dpv_shm_dev *sd = &w->devs[i];
		struct rm_dev *d = &rm_global.devs[i];
		d->index = i;
		for (unsigned int g = 0; g < DPV_SHM_GIDS; g++) {
			memcpy(d->gid[g].raw, sd->gid[g], 16);
			d->gid[g].valid = sd->gid_valid[g];
			d->gid[g].ip_ver = sd->gid_ip_ver[g];
		}
		free(d->db);
		d->n_db = sd->n_db;
		d->db = calloc(RTE_MAX(sd->n_db, 1u), sizeof(*d->db));
		for (uint32_t q = 0; d->db && q < sd->n_db && sd->db_first + q < w->n_db; q++)
			d->db[q] = (struct dpv_db_ring *)(rm_global.db_mem + (sd->db_first + q) * one);
	}
	if (pthread_create(&rm_global.watcher, NULL, watcher, NULL) == 0) {
		pthread_setname_np(rm_global.watcher, "dpv-remote");
		pthread_detach(rm_global.watcher);
	}
	RM_LOG(INFO, "shared mode: attached to dpverbsd (pid %d) on %s as connection %u, %u device(s)",
	       (int)w->pid, rm_global.path, w->client_id, n);
	return (int)n;
}

/* fork(): the child inherits the parent's connection (its descriptor, its
 * doorbell rings), the parent's objects and regions. It may use none of
 * them: a request on the parent's socket interleaves with the parent's,
 * the daemon takes both for one process and an answer goes to the wrong
 * one (then both lose their connection). The child forgets them here and
 * gets a connection of its own at its first request (rm_reattach), as a
 * child under the kernel opens its own context; the parent's objects stay
 * the parent's (ibv_fork_init(3)). Only async-signal-safe work here. */
static void rm_atfork_child(void)
{
	pthread_mutex_init(&rm_global.lock, NULL);
	pthread_mutex_init(&rm_global.list_lock, NULL);
	if (rm_global.sock >= 0)
		close(rm_global.sock);
	rm_global.sock = -1;
	rm_global.ctxs = NULL;
	rm_global.cqs = NULL;
	rm_mem_forget();
	dpv_pool_forget();
	atomic_store(&rm_global.dead, false);
	atomic_store(&rm_global.forked, true);
}

static int rm_reattach(void)
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	int r = 0;
	pthread_mutex_lock(&lock);
	if (atomic_load(&rm_global.forked)) {
		atomic_store(&rm_global.wake, NULL);
		if (rm_global.db_mem)
			munmap(rm_global.db_mem, rm_global.db_bytes); /* the parent's doorbell rings */
		rm_global.db_mem = NULL;
		rm_global.sock = connect_daemon(rm_global.path);
		r = rm_global.sock < 0 ? rm_global.sock : hello();
		if (r < 0) {
			RM_LOG(ERR, "shared mode: a child of pid %d cannot attach to dpverbsd on %s: %s",
			       (int)getppid(), rm_global.path, strerror(-r));
			atomic_store(&rm_global.dead, true);
		}
		atomic_store(&rm_global.forked, false);
	}
	pthread_mutex_unlock(&lock);
	return r < 0 ? r : 0;
}

int rm_probe(const struct dpv_conf *conf, struct dpv_dev_info *devs, unsigned int max)
{
	snprintf(rm_global.path, sizeof(rm_global.path), "%s", conf->shared_socket);
	rm_global.idle_yield = conf->shared_idle_yield;
	int s = connect_daemon(rm_global.path);
	if (s < 0) {
		fprintf(stderr, "dpverbs: %s: \"mode\" is \"shared\" but dpverbsd does not answer on %s: %s "
				"(start it first: dpverbsd %s)\n",
			conf->source, rm_global.path, strerror(-s), conf->source);
		return -ENODEV;
	}
	rm_global.sock = s;
	int r = hello();
	if (r < 0)
		return r;
	if (dpv_core_set_params(&rm_global.w.params) != 0)
		RM_LOG(WARNING, "shared mode: cannot adopt the daemon's limits");
	dpv_core_set_tsc_hz(rm_global.w.tsc_hz);
	dpv_pool_set_source(&rm_source);
	unsigned int n = RTE_MIN((unsigned int)r, max);
	for (unsigned int i = 0; i < n; i++) {
		snprintf(devs[i].name, sizeof(devs[i].name), "%s", rm_global.w.devs[i].name);
		memcpy(devs[i].mac, rm_global.w.devs[i].mac, 6);
		devs[i].drv = &rm_global.devs[i];
		devs[i].dm_size = rm_global.w.devs[i].dm_size;
	}
	pthread_atfork(NULL, NULL, rm_atfork_child);
	return (int)n;
}

int rm_query_gid(void *dev, uint32_t index, struct dpv_gid *gid)
{
	struct rm_dev *d = dev;
	if (index >= DPV_SHM_GIDS) {
		memset(gid, 0, sizeof(*gid));
		return index < DPV_GID_TABLE_LEN ? 0 : -EINVAL;
	}
	*gid = d->gid[index];
	return 0;
}

int rm_query_port(void *dev, struct ibv_port_attr *attr)
{
	struct dpv_shm_port p = {.dev = ((struct rm_dev *)dev)->index};
	int r = rm_call(DPV_SHM_QUERY_PORT, &p, NULL, 0, NULL);
	if (r == -EIO) {
		memset(attr, 0, sizeof(*attr));
		attr->state = IBV_PORT_DOWN;
		attr->phys_state = 3; /* Disabled: the daemon is gone */
		return 0;
	}
	if (!r)
		*attr = p.attr;
	return r;
}

/* ibv_poll_cq found the CQ empty. The daemon's engine makes the progress;
 * this thread only waits. Busy-polling threads that share a CPU with each
 * other (or with the daemon's engine) would see each other only once per
 * scheduler time slice (milliseconds); so every shared.idle_yield empty
 * polls the thread asks the kernel whether it was preempted lately (its
 * involuntary context switches, getrusage(RUSAGE_THREAD)) and, if it was
 * within RM_CONTENDED_NS, gives its CPU away until the engine writes a
 * completion for this process: it sleeps on the wake word (struct
 * dpv_wake), which the engine bumps after every CQE of ours and wakes when
 * someone sleeps on it. It sleeps only when the word has not moved since
 * its previous look, shared.idle_yield empty polls ago: every completion
 * counted by then was there for those polls to find. Alone on its CPU it
 * never sleeps. Not sched_yield(): on EEVDF kernels (6.6+) a sched_yield()
 * loop of two such threads starved every other task of both CPUs for
 * seconds (measured on 6.18, 2 vCPUs). Not a fixed nanosleep() either
 * (what this did before): with the default timer slack it slept 50-60 us,
 * every message of a ping-pong. */
#define RM_CONTENDED_NS 10000000ull /* preempted within 10 ms: keep giving away */
#define RM_WAIT_NS 1000000          /* a sleep on the wake word lasts at most this */
#define RM_SETTLED_POLLS 32         /* empty polls with the word unmoved before a sleep:
				       every CQ an application polls in turn (UCX: 4) is
				       looked at after the last completion counted */

static uint64_t rm_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int rm_progress(void *cq)
{
	static __thread uint32_t idle, seen, settled;
	static __thread long nivcsw;
	static __thread uint64_t contended_until;
	(void)cq;
	if (!rm_global.idle_yield)
		return atomic_load_explicit(&rm_global.dead, memory_order_relaxed) ? -EIO : 0;
	if (++idle >= rm_global.idle_yield) {
		struct rusage ru;
		idle = 0;
		if (getrusage(RUSAGE_THREAD, &ru) == 0 && ru.ru_nivcsw != nivcsw) {
			nivcsw = ru.ru_nivcsw;
			contended_until = rm_now_ns() + RM_CONTENDED_NS;
		}
	}
	/* the wake word is read only while contended: alone on its CPU the
	 * thread never touches the line the engine writes per CQE */
	struct dpv_wake *w = contended_until ? atomic_load_explicit(&rm_global.wake, memory_order_acquire) : NULL;
	if (!w)
		return atomic_load_explicit(&rm_global.dead, memory_order_relaxed) ? -EIO : 0;
	uint32_t s = atomic_load_explicit(&w->seq, memory_order_acquire);
	if (s != seen) {
		seen = s;
		settled = 0;
	} else {
		settled++;
	}
	if (settled >= RM_SETTLED_POLLS && !atomic_load(&rm_global.dead)) {
		if (rm_now_ns() >= contended_until) {
			contended_until = 0; /* the next contended period counts its own polls */
			settled = 0;
		} else {
			struct timespec t = {0, RM_WAIT_NS};
			atomic_fetch_add_explicit(&w->waiters, 1, memory_order_seq_cst);
			syscall(SYS_futex, &w->seq, FUTEX_WAIT, s, &t, NULL, 0);
			atomic_fetch_sub_explicit(&w->waiters, 1, memory_order_relaxed);
			settled = 0;
		}
	}
	return atomic_load_explicit(&rm_global.dead, memory_order_relaxed) ? -EIO : 0;
}

bool rm_background(void)
{
	return true; /* the daemon's engine makes progress: completion channels may block */
}

void *rm_queue_alloc(void *dev, size_t size, size_t align)
{
	(void)dev;
	if (align > 4096) {
		errno = EINVAL;
		return NULL;
	}
	return rm_mem_alloc(size, false);
}

void rm_queue_free(void *dev, void *p)
{
	(void)dev;
	rm_mem_free(p);
}

bool rm_rings_queue_only(void)
{
	return true;
}

bool rm_fork_safe(void)
{
	return true; /* a child attaches on its own (rm_atfork_child) */
}
