/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpverbsd internals: the daemon of shared mode. It is the DPDK primary
 * process that owns the ports and runs the engine (the configuration's
 * driver, "sw"), and it executes the commands applications send through
 * their "remote" driver (lib/shm/dpv_shm_proto.h) on that engine, on behalf
 * of the application, with every number and address checked against what
 * the application owns.
 *
 * Threads: one control thread runs the connections (accepting applications
 * and executing their commands, one at a time: every handler runs on it);
 * the engine runs on the configuration's lcores or on the daemon's main
 * thread; the engine's event callbacks (dpvd_events.c) run on engine
 * threads and take dpvd_global.evlock to read the objects they deliver to.
 *
 * An application of libdpverbs: it uses the library through the engine
 * host's API (lib/verbs/dpv_host.h) and the public headers, and speaks
 * lib/shm's protocol (test/abi/check_layers.py). Not installed; the dpvd_
 * files are also linked into the fuzzer of the request path
 * (test/fuzz/fuzz_daemon.c).
 */
#ifndef DPVD_H
#define DPVD_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>
#include <sys/types.h>

#include <rte_log.h>
#include <rte_spinlock.h>

#include "dpv_host.h"
#include "dpv_shm_proto.h"

#ifndef TAILQ_FOREACH_SAFE /* BSD's; glibc's sys/queue.h lacks it */
#define TAILQ_FOREACH_SAFE(var, head, field, tvar) \
	for ((var) = TAILQ_FIRST(head); (var) && ((tvar) = TAILQ_NEXT(var, field), 1); (var) = (tvar))
#endif

struct dpvd_client;
struct dpvd_xrcd;
struct dpvd_dm;

/* An object number an application reserved, and what it became. */
struct dpvd_obj {
	enum dpv_obj_type type;
	uint32_t num;
	struct dpvd_client *owner;   /* who reserved the number (NULL: a PD whose creator is gone) */
	bool created;                /* the engine object exists */
	uint32_t dev;                /* device index */
	uint32_t ctx;                /* the owner's context id (events) */
	uint64_t cookie;             /* the owner's object pointer (events) */
	void *drv;                   /* CQ, SRQ, QP: the engine object */
	int chan_fd;                 /* CQ: completion channel, -1 */
	struct dpvd_mem *ring[2];    /* memory its rings are in (kept while it exists) */
	uint32_t users;              /* CQ/SRQ: QPs and SRQs using it; PD: MRs, QPs, ... */
	struct dpvd_obj *uses[4];    /* objects this one holds a user count on */
	struct dpvd_xrcd *xrcd;      /* XRC SRQ and target QP: their domain */
	struct dpv_bufs bufs;        /* QP: memory of the engine's QP context */
	enum ibv_qp_type qp_type;    /* QP */
	bool gsi;                    /* QP: a GSI QP (dpvd_gsi.c) */
	struct ibv_qp_attr attr;     /* QP: attributes as checked and applied here (cap as created) */
	bool sq_sig_all;             /* QP: as created */
	uint32_t n_openers;          /* XRC target QP: OPEN_QP handles on it (dpvd_global.qpopens);
					while it has some it outlives its creator (owner NULL) */
	/* MR, and memory window (a number of the MR pool: mw set) */
	bool mw;                     /* a memory window (MW_ALLOC), not an MR */
	uint64_t addr, length;       /* as the owner addresses it */
	uint64_t iova;
	int access;
	uint32_t key;
	bool direct;                 /* in a region of the owner (the engine maps it), not
					reached in the owner's address space */
	struct dpvd_dm *dm;          /* an MR on device memory: it (counted in its mrs) */
	/* PD */
	uint32_t refs;               /* process handles (creator, sharers, importers) */
	bool owner_handle;           /* the creator still holds its handle */
	bool shared;                 /* ibv_alloc_shpd was called */
	uint64_t share_id, share_key;
	TAILQ_ENTRY(dpvd_obj) next;  /* the owner's list */
};
TAILQ_HEAD(dpvd_obj_list, dpvd_obj);

/* A memfd region of an application, mapped here too (MEM_ADD). */
struct dpvd_mem {
	uint64_t caddr;              /* the application's address */
	uint8_t *addr;               /* ours */
	size_t size;
	uint32_t busy;               /* objects with rings in it */
	TAILQ_ENTRY(dpvd_mem) next;
};
TAILQ_HEAD(dpvd_mem_list, dpvd_mem);

/* A PD another process shared with this one (SHPD_SHARE) or that it
 * imported (IMPORT_PD). */
struct dpvd_pdref {
	struct dpvd_obj *pd;
	TAILQ_ENTRY(dpvd_pdref) next;
};
TAILQ_HEAD(dpvd_pdref_list, dpvd_pdref);

/* An XRC domain: one per inode (or anonymous), for every process. */
struct dpvd_xrcd {
	uint32_t num;
	uint32_t dev;
	bool has_inode;
	dev_t st_dev;
	ino_t st_ino;
	uint32_t opens;              /* openings by all processes */
	uint32_t users;              /* XRC SRQs and target QPs in it */
	TAILQ_ENTRY(dpvd_xrcd) next;
};
TAILQ_HEAD(dpvd_xrcd_list, dpvd_xrcd);

/* An OPEN_QP handle of a process on an XRC target QP (any process'):
 * the QP's events reach ctx with cookie. */
struct dpvd_qpopen {
	struct dpvd_client *c;
	struct dpvd_obj *qp;
	uint32_t ctx;
	uint64_t cookie;
	TAILQ_ENTRY(dpvd_qpopen) next;
};
TAILQ_HEAD(dpvd_qpopen_list, dpvd_qpopen);

/* One process' opening of a domain. */
struct dpvd_xref {
	struct dpvd_xrcd *x;
	TAILQ_ENTRY(dpvd_xref) next;
};
TAILQ_HEAD(dpvd_xref_list, dpvd_xref);

/* Device memory (dpvd_dm.c): one allocation, a memfd mapped here and by
 * every process that holds it. */
struct dpvd_dm {
	uint32_t handle;             /* ibv_dm.handle */
	uint32_t dev;
	int fd;                      /* the memfd (duplicated for each holder) */
	uint8_t *addr;               /* our mapping: the engine reaches it there */
	uint64_t map_bytes;          /* of the memfd and the mappings */
	uint64_t length;             /* as asked */
	uint64_t units;              /* counted against the device's dm_size */
	uint32_t refs;               /* handles of processes (allocations, imports) */
	uint32_t mrs;                /* MRs registered on it */
	TAILQ_ENTRY(dpvd_dm) next;
};
TAILQ_HEAD(dpvd_dm_list, dpvd_dm);

/* One handle of a process on a device memory. */
struct dpvd_dmref {
	struct dpvd_dm *dm;
	TAILQ_ENTRY(dpvd_dmref) next;
};
TAILQ_HEAD(dpvd_dmref_list, dpvd_dmref);

#define DPVD_MAX_CTX 64
#define DPVD_MAX_QPOPENS 4096 /* OPEN_QP handles of one process */

/* A context of an application. */
struct dpvd_ctx {
	int async_fd;                /* write end of its async-event pipe, -1: free */
	uint32_t dev;
	int token_fd;                /* its command descriptor (our copy) */
	dev_t token_dev;
	ino_t token_ino;
	struct dpvd_client *import_from; /* whose objects it may import */
};

/* An application connection. */
struct dpvd_client {
	int sock;
	pid_t pid;
	uid_t uid;
	uint32_t id;
	bool hello;                  /* HELLO done */
	bool gone;                   /* closing: its objects are being destroyed */
	uint8_t gsi_slot;            /* its comm-ID range on QP 1 (dpvd_gsi.c), 0: none */
	struct dpvd_ctx ctx[DPVD_MAX_CTX]; /* context id - 1 */
	uint8_t *db_mem;             /* its doorbell rings, then its wake word */
	size_t db_bytes;
	struct dpv_wake *wake;       /* in db_mem: its CQs' engine bumps it */
	void *db[DPV_MAX_PORTS][DPV_MAX_QUEUES]; /* the engine's handles of them */
	uint64_t mem_total;          /* bytes of its regions */
	struct dpvd_obj_list objs;   /* numbers it reserved, oldest first */
	struct dpvd_mem_list mem;
	struct dpvd_pdref_list pdrefs;
	struct dpvd_xref_list xrefs;
	uint32_t n_qpopens;          /* its OPEN_QP handles */
	struct dpvd_dmref_list dmrefs; /* its handles on device memory */
	TAILQ_ENTRY(dpvd_client) next;
};
TAILQ_HEAD(dpvd_client_list, dpvd_client);

struct dpvd {
	const struct dpv_params *params; /* the limits of the core (dpv_host_params) */
	unsigned int n_devs;         /* its devices (dpv_host_n_devs) */
	struct dpvd_client_list clients;
	struct dpvd_xrcd_list xrcds;
	struct dpvd_qpopen_list qpopens; /* every OPEN_QP handle (engine threads read it
					    under evlock: events) */
	uint32_t next_id;
	uint32_t db_size;            /* slots of each doorbell ring */
	rte_spinlock_t evlock;       /* engine event callbacks vs object changes */
	uint64_t mem_limit;          /* bytes of regions one application may add */
	struct dpvd_dm_list dms;     /* device memory of every process */
	uint32_t next_dm;            /* the next device memory handle */
	uint64_t dm_used[DPV_MAX_PORTS]; /* units of each device's dm_size handed out */
};

extern struct dpvd dpvd_global;

extern int dpvd_logtype;
#define DPVD_LOG(level, fmt, ...) rte_log(RTE_LOG_##level, dpvd_logtype, "dpverbsd: " fmt "\n", ##__VA_ARGS__)

/* The name of a command (logs). */
const char *dpvd_op_name(uint16_t op);

/* dpvd_client.c */
/* The daemon's state, for the core brought up with dpv_host_start: 0, or
 * -1 with errno ENODEV when the core is not up. */
int dpvd_init(void);
/* A new application connection (takes sock); NULL after closing it. */
struct dpvd_client *dpvd_client_new(int sock);
/* Handle one message from c; false when the connection is to be closed. */
bool dpvd_client_input(struct dpvd_client *c);
/* Execute one request (m, with its descriptors fds) for c and turn m into
 * the answer; the answer's descriptors are put in out_fds (*n_out of them,
 * the caller closes them after sending). */
void dpvd_client_request(struct dpvd_client *c, struct dpv_shm_msg *m, int fds[DPV_SHM_MAX_FDS],
			 int out_fds[DPV_SHM_MAX_FDS], unsigned int *n_out);
/* Everything c owns is destroyed, its numbers and memory returned. */
void dpvd_client_gone(struct dpvd_client *c);

/* dpvd_ops.c, dpvd_qp.c: command handlers. The request is in m (checked
 * length); the answer is written into m's body; return 0 or -errno for
 * the response status. fds: descriptors that came with the request (-1
 * where none); a handler that keeps one sets it to -1. out_fd: a
 * descriptor to send with the answer (the caller closes it), -1 if none. */
int dpvd_dispatch(struct dpvd_client *c, struct dpv_shm_msg *m, int fds[DPV_SHM_MAX_FDS], int *out_fd);
int dpvd_qp_create(struct dpvd_client *c, struct dpv_shm_qp *q);
int dpvd_qp_destroy(struct dpvd_client *c, struct dpv_shm_qp *q);
int dpvd_qp_modify(struct dpvd_client *c, struct dpv_shm_qp_modify *q);
int dpvd_qp_query(struct dpvd_client *c, struct dpv_shm_qp_query *q);
int dpvd_srq_create(struct dpvd_client *c, struct dpv_shm_srq *s);
int dpvd_srq_destroy(struct dpvd_client *c, struct dpv_shm_srq *s);
int dpvd_open_qp(struct dpvd_client *c, struct dpv_shm_open_qp *o);
int dpvd_xrcd_open(struct dpvd_client *c, struct dpv_shm_xrcd *x, int *fd);
int dpvd_xrcd_close(struct dpvd_client *c, struct dpv_shm_xrcd *x);
/* An XRC SRQ or target QP in x is gone (x goes when unused and closed). */
void dpvd_xrcd_unuse(struct dpvd_xrcd *x);
/* Drop every opening c holds. */
void dpvd_xrcd_gone(struct dpvd_client *c);
/* Drop every OPEN_QP handle of c (first when c goes: a target QP only
 * other processes' handles keep outlives its creator). */
void dpvd_qpopen_gone(struct dpvd_client *c);
/* A QP event of type for every OPEN_QP handle on qp, each with its own
 * pointer as element, on its context's pipe. Caller holds evlock. */
void dpvd_qpopen_event(struct dpvd_obj *qp, enum ibv_event_type type);
/* The domain num if c holds an opening of it, else NULL. */
struct dpvd_xrcd *dpvd_xrcd_held(struct dpvd_client *c, uint32_t num);

/* Objects: the one of type t and number num that c reserved, else NULL.
 * created: must exist in the engine. */
struct dpvd_obj *dpvd_obj_get(struct dpvd_client *c, enum dpv_obj_type t, uint32_t num, bool created);
/* May c use PD pdn (its own, or shared with it, or imported)? */
bool dpvd_pd_usable(struct dpvd_client *c, uint32_t pdn);
/* The region of c that holds [caddr, caddr + len) (application
 * addresses), or NULL. */
struct dpvd_mem *dpvd_mem_find(struct dpvd_client *c, uint64_t caddr, uint64_t len);
/* An engine object now exists for o: whose it is (device, context,
 * cookie for events) and the regions its rings are in (held while it
 * exists; NULL: none). */
static inline void dpvd_obj_created(struct dpvd_obj *o, uint32_t dev, uint32_t ctx, uint64_t cookie,
				    struct dpvd_mem *r0, struct dpvd_mem *r1)
{
	o->dev = dev;
	o->ctx = ctx;
	o->cookie = cookie;
	o->ring[0] = r0;
	o->ring[1] = r1;
	if (r0)
		r0->busy++;
	if (r1)
		r1->busy++;
}

/* Our address of the application's caddr inside m. */
static inline void *dpvd_mem_xlate(const struct dpvd_mem *m, uint64_t caddr)
{
	return m->addr + (caddr - m->caddr);
}
/* A PD handle of a process goes: the domain goes with the last one. */
void dpvd_pd_unref(struct dpvd_obj *pd);
/* Give number o of c back (its engine object destroyed first); a PD that
 * other processes still hold stays, without owner, until the last one
 * lets go. */
void dpvd_obj_release(struct dpvd_client *c, struct dpvd_obj *o);
/* Destroy what obj is in the engine (not its number). */
void dpvd_obj_destroy(struct dpvd_obj *o);
/* The context ctx (its id: 1 .. DPVD_MAX_CTX) of c, if c has it open,
 * else NULL. dpvd_ctx_ok: and it is on device dev (objects made in a
 * context are on its device). */
struct dpvd_ctx *dpvd_ctx_get(struct dpvd_client *c, uint32_t ctx);
bool dpvd_ctx_ok(struct dpvd_client *c, uint32_t ctx, uint32_t dev);
/* A ring of c at application address caddr, entries of stride bytes, size
 * entries: its region, or NULL when it is not entirely in one. */
struct dpvd_mem *dpvd_ring_check(struct dpvd_client *c, uint64_t caddr, uint32_t size, uint32_t stride);

/* dpvd_dm.c: device memory. alloc, free, import: the DM_ALLOC, DM_FREE
 * and DM_IMPORT commands (out_fd: the memfd for the answer). held: the
 * device memory handle if c holds it, else NULL. mr_put: an MR on dm is
 * gone (dm may go with it). client_gone: c's handles go (after its MRs). */
int dpvd_dm_alloc(struct dpvd_client *c, struct dpv_shm_dm *m, int *out_fd);
int dpvd_dm_free(struct dpvd_client *c, struct dpv_shm_dm *m);
int dpvd_dm_import(struct dpvd_client *c, struct dpv_shm_dm *m, int *out_fd);
struct dpvd_dm *dpvd_dm_held(struct dpvd_client *c, uint32_t handle);
void dpvd_dm_mr_put(struct dpvd_dm *dm);
void dpvd_dm_client_gone(struct dpvd_client *c);

/* dpvd_gsi.c: QP 1 of every port, demultiplexed to the applications' GSI
 * QPs. init installs the engine's demultiplexer. reserve: may c create a
 * GSI QP on dev (its slot allocated on first use)? 0, -EEXIST (it has one
 * there), -ENOSPC (no slot free). attach: the GSI QP qpn exists; *prefix,
 * *mask: c's comm-ID range. detach: the GSI QP goes (its listens too),
 * before the engine's QP. client_gone: c's slot is free again. listen: the
 * GSI_LISTEN command. */
void dpvd_gsi_init(void);
int dpvd_gsi_reserve(struct dpvd_client *c, uint32_t dev);
void dpvd_gsi_attach(struct dpvd_client *c, uint32_t dev, uint32_t qpn, uint32_t *prefix, uint32_t *mask);
void dpvd_gsi_detach(struct dpvd_obj *qp);
void dpvd_gsi_client_gone(struct dpvd_client *c);
int dpvd_gsi_listen(struct dpvd_client *c, struct dpv_shm_gsi_listen *l);
/* Logs the demultiplexer's counters (daemon stop). */
void dpvd_gsi_log_stats(void);
/* ibv_attach_mcast / ibv_detach_mcast of a UD QP the client created (a
 * destroyed QP leaves its groups in the engine). */
int dpvd_qp_mcast(struct dpvd_client *c, struct dpv_shm_mcast *m);
int dpvd_qp_flow(struct dpvd_client *c, struct dpv_shm_flow *f);

/* dpvd_cm.c: the daemon's own CM endpoint on QP 1 of every port (the
 * fallback of the demultiplexer). start: before any application attaches
 * (it takes the lowest slot); returns the descriptor the control thread
 * polls (its completion channel), -1 when it could not be made. ensure:
 * its objects are made on every port (the first GSI QP of an application
 * calls it). poll: completions, answers and timers. timeout_ms:
 * until the runtimes' next timer (-1: none). abandon: what Linux's CM sends
 * for a connection of a process that went away, from QP 1 of dev
 * (dpv_cmrt_abandon); 0 or -errno. */
int dpvd_cm_start(void);
void dpvd_cm_ensure(void);
/* The daemon as its own application (its endpoint's objects). */
struct dpvd_client *dpvd_cm_self(void);
void dpvd_cm_poll(void);
int dpvd_cm_timeout_ms(void);
struct dpv_cmrt_orphan;
int dpvd_cm_abandon(uint32_t dev, const struct dpv_cmrt_orphan *o);

/* dpvd_events.c: the engine's events, delivered to the owners. */
void dpvd_events_init(void);
/* Tell every context of every application (daemon shutting down). */
void dpvd_events_fatal_all(void);

#endif /* DPVD_H */
