/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The remote driver: how an application reaches the engine in dpverbsd in
 * shared mode. Every control command is a request on the process' one
 * connection to the daemon (lib/shm/dpv_shm_proto.h); rings live in memfd
 * regions the process creates and hands to the daemon; doorbells are
 * entries in the doorbell rings the daemon gave it. No EAL in the
 * application.
 */
#ifndef REMOTE_H
#define REMOTE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include <rte_log.h>

#include "dpv_driver.h"
#include "dpv_shm_proto.h"

extern int rm_logtype;
/* A daemon that answers nothing this long is as good as gone (a hung
 * daemon must not hang its applications for ever). */
#define RM_ANSWER_MS 30000
#define RM_LOG(level, fmt, ...) rte_log(RTE_LOG_##level, rm_logtype, "dpverbs: " fmt "\n", ##__VA_ARGS__)

struct rm_dev {
	unsigned int index;
	struct dpv_gid gid[DPV_SHM_GIDS];
	struct dpv_db_ring **db;     /* its doorbell rings (one per engine context) */
	uint32_t n_db;
};

/* A context: where its async events go when the daemon is gone. */
struct rm_ctx {
	uint32_t id;
	int async_wfd;
	struct rm_ctx *next;
};

struct rm_cq {
	uint32_t handle;
	int chan_fd;                 /* the façade's channel write end, -1 */
	uint64_t cookie;
	struct rm_cq *next;          /* CQs with a channel (woken when the daemon is gone) */
};

struct rm_srq {
	uint32_t srqn;
	struct dpv_tm_hdr *tm;       /* tag matching SRQ: its area (the db flag), or NULL */
	struct dpv_db_ring *db;      /* ... and the doorbell ring its ops are rung on */
};

struct rm_qp {
	uint32_t qpn;
	struct dpv_ring_hdr *sq, *rq;
	struct dpv_db_ring *db;      /* the doorbell ring that serves it */
	uint32_t gsi_prefix, gsi_mask; /* GSI QP: the process' comm-ID range */
	uint64_t cookie;             /* open_qp handle: its struct ibv_qp * (0: a QP of ours) */
};

struct rm_state {
	int sock;
	pthread_mutex_t lock;        /* one request at a time */
	uint64_t seq;
	atomic_bool dead;
	atomic_bool forked;          /* a child of fork(): no connection of its own yet */
	struct dpv_shm_hello w;      /* the welcome */
	uint8_t *db_mem;
	size_t db_bytes;
	uint32_t db_mask;
	struct dpv_wake *_Atomic wake; /* in db_mem: the engine bumps it per CQE of ours */
	struct rm_dev devs[DPV_SHM_MAX_DEVS];
	pthread_mutex_t list_lock;   /* ctxs, cqs */
	struct rm_ctx *ctxs;
	struct rm_cq *cqs;
	pthread_t watcher;
	char path[108];
	uint32_t idle_yield;         /* empty polls of a thread per contention check (0: never) */
};

extern struct rm_state rm_global;

/* One request: body (len bytes, the op's layout) is sent with fds and
 * replaced by the answer; *out_fd gets a descriptor that came back (or -1;
 * NULL: none expected). 0 or the daemon's -errno; -EIO when the daemon is
 * gone. */
int rm_call(uint16_t op, void *body, const int *fds, unsigned int nfd, int *out_fd);
/* The daemon is gone: every context gets IBV_EVENT_DEVICE_FATAL, every CQ
 * with a channel an event, and every later request fails with EIO. */
void rm_fatal(const char *why);

/* remote_mem.c: regions (memfd, sealed, added to the daemon). */
void *rm_mem_alloc(size_t size, bool huge);
/* A child of fork(): the regions in the list are the parent's (forgotten,
 * left mapped). */
void rm_mem_forget(void);
void rm_mem_free(void *p);
int rm_mem_is_huge(const void *p);

/* remote.c: the driver's device, progress and memory operations (its
 * table, with the object commands, is in remote_ops.c). */
int rm_probe(const struct dpv_conf *conf, struct dpv_dev_info *devs, unsigned int max);
int rm_query_gid(void *dev, uint32_t index, struct dpv_gid *gid);
int rm_query_port(void *dev, struct ibv_port_attr *attr);
int rm_progress(void *cq);
bool rm_background(void);
void *rm_queue_alloc(void *dev, size_t size, size_t align);
void rm_queue_free(void *dev, void *p);
bool rm_rings_queue_only(void);
bool rm_fork_safe(void);

#endif /* REMOTE_H */
