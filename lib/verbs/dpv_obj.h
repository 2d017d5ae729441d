/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file dpv_obj.h
 * The verbs façade's objects. Each embeds the rdma-core structure and
 * converts back with container_of (as providers/rxe/rxe.h to_rqp does).
 *
 * Drivers may include this header and read the fields marked "engine": they
 * are what an RNIC's object tables hold (an MR's translation and rights, an
 * AH's resolved path, a PD's number). Everything else belongs to the façade.
 * A driver's own per-object state hangs off `drv` and is opaque here.
 */
#ifndef DPV_OBJ_H
#define DPV_OBJ_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <pthread.h>
#include <sys/queue.h>
#include <sys/types.h>
#include <infiniband/verbs.h>

#include <rte_spinlock.h>

#include "dpv_queue.h"
#include "dpverbs.h"

#define DPV_EXPORT __attribute__((visibility("default")))

#ifndef container_of
#define container_of(ptr, type, member) ((type *)((char *)(ptr) - offsetof(type, member)))
#endif

struct dpv_verbs_ops;
struct dpv_engine_ops;
struct dpv_gsi_ops;
struct dpv_context;
struct dpv_dm;

struct dpv_device {
	struct ibv_device ibdev;
	const struct dpv_verbs_ops *ops;  /* its driver's tables (defaults filled in) */
	const struct dpv_engine_ops *engine;
	const struct dpv_gsi_ops *gsi;
	void *drv_dev;               /* the driver's device object */
	__be64 guid;
	uint8_t mac[6];
	unsigned int index;
	uint64_t dm_size;            /* device memory it offers (max_dm_size), 0: none */
	rte_spinlock_t ctx_lock;     /* contexts, for port events */
	LIST_HEAD(, dpv_context) ctxs;
};

struct dpv_context {
	struct verbs_context vctx;
	struct dpv_device *dev;
	int async_wfd;               /* write end of the async event pipe */
	uint32_t drv_ctx;            /* the driver's id of this context (ctx_open) */
	bool imported;               /* embedded mode's ibv_import_device: made from the
					context whose cmd_fd is the inode below */
	dev_t imp_dev;
	ino_t imp_ino;
	rte_spinlock_t async_lock;
	LIST_ENTRY(dpv_context) next;
};

struct dpv_td {
	struct ibv_td ibtd;
	_Atomic int users;           /* parent domains using it */
	void *drv;                   /* the driver's TD object */
};

struct dpv_pd {
	struct ibv_pd ibpd;
	uint32_t handle;             /* engine: protection domain number */
	_Atomic int users;           /* MRs, QPs, AHs, SRQs, CQs, parent domains */
	/* parent domain (ibv_alloc_parent_domain) */
	bool parent;
	bool foreign;                /* a handle on another process' PD (ibv_share_pd): its
					number is not this process' to give back */
	struct dpv_pd *base;         /* the protection domain: itself for a plain PD */
	struct dpv_pd *imported;     /* embedded mode's ibv_import_pd: the PD of this process
					it is (one user of it while this handle exists) */
	struct dpv_td *td;
	void *(*alloc)(struct ibv_pd *pd, void *pd_context, size_t size, size_t alignment,
		       uint64_t resource_type);
	void (*free)(struct ibv_pd *pd, void *pd_context, void *ptr, uint64_t resource_type);
	void *pd_context;
};

/* Buffers of one object, each from the parent domain's allocator, the
 * driver's queue memory (rings) or the C heap; freed exactly once when the
 * object is destroyed. */
#define DPV_OBJ_BUFS 8
enum dpv_buf_src { DPV_BUF_HEAP = 0, DPV_BUF_CUSTOM, DPV_BUF_QUEUE };
struct dpv_buf {
	void *p;
	uint32_t code;               /* enum dpv_resource_code */
	uint8_t src;                 /* enum dpv_buf_src */
};
struct dpv_bufs {
	struct dpv_pd *pd;
	struct dpv_device *dev;      /* queue memory comes from its driver */
	struct dpv_buf b[DPV_OBJ_BUFS];
	unsigned int n;
};

/* The first member of struct dpv_mr and struct dpv_mw, which share the MR
 * pool (one key space): which of the two an entry of the pool is. */
enum dpv_key_kind {
	DPV_KEY_MR = 0,
	DPV_KEY_MW,
};

struct dpv_mr {
	uint32_t kind;               /* DPV_KEY_MR */
	struct ibv_mr ibmr;
	/* engine: */
	uint32_t pd;                 /* protection domain number */
	uint8_t *addr;               /* local virtual address */
	uint64_t iova;               /* address the peer uses (rkey space) */
	uint64_t length;
	int access;
	/* façade: */
	uint32_t index;
	struct dpv_pd *upd;          /* the PD given (parent domain or plain) */
	struct dpv_dm *dm;           /* ibv_reg_dm_mr: the device memory it is on */
	uint64_t dm_offset;          /* ... and where in it the MR starts */
};

/* Device memory (dpv_dm.c). */
struct dpv_dm {
	struct ibv_dm ibdm;
	/* the driver's (struct dpv_dm_desc): */
	uint32_t handle;
	uint64_t length;
	uint8_t *addr;               /* where this process reaches it */
	_Atomic int mrs;             /* MRs registered on it (ibv_free_dm: EBUSY) */
	bool imported;               /* ibv_import_dm */
	/* embedded mode (dpv_dm.c's list, under its mutex): an allocation is
	 * on the list until freed and its memory goes with its last holder
	 * (itself, its imports); an import of this process' own holds origin */
	struct dpv_dm *origin;
	unsigned int holders;
	LIST_ENTRY(dpv_dm) next;
};

/* A memory window: an index of the MR pool (MRs and windows share one key
 * space, as in an RNIC's MPT); the engine keeps its binding. */
struct dpv_mw {
	uint32_t kind;               /* DPV_KEY_MW */
	struct ibv_mw ibmw;
	uint32_t index;
	struct dpv_pd *upd;          /* the PD given */
};

struct dpv_ah {
	struct ibv_ah ibah;
	/* engine: */
	uint32_t handle;
	struct dpv_device *dev;
	uint8_t sgid[16], dgid[16];
	uint8_t ip_ver;
	uint8_t tclass, hop_limit;
	uint32_t flow_label;
	/* façade: */
	struct ibv_ah_attr attr;
	struct dpv_pd *pd;
};

struct dpv_comp_channel {
	struct ibv_comp_channel ch;
	int wfd;
	_Atomic int users;
};

struct dpv_cq {
	struct ibv_cq_ex ibcq;       /* begins with the struct ibv_cq layout */
	struct dpv_bufs bufs;
	uint32_t handle;
	void *drv;
	struct dpv_ring_hdr *ring;   /* consumer view */
	uint32_t ci;                 /* next CQE to read */
	int cqe;                     /* capacity reported */
	bool lockless;               /* parent domain with a thread domain */
	bool nolock;                 /* the consumer lock is not taken: lockless, or created
					with IBV_CREATE_CQ_ATTR_SINGLE_THREADED */
	rte_spinlock_t lock;         /* consumer lock (ibv_poll_cq, ibv_start_poll ..
					ibv_end_poll, resize, clean) unless nolock */
	struct dpv_pd *upd;          /* parent domain given (IBV_CQ_INIT_ATTR_MASK_PD) */
	struct dpv_comp_channel *chan;
	_Atomic int users;           /* QPs and SRQs using the CQ */
	/* extended CQ (ibv_start_poll) */
	uint64_t wc_flags;
	bool single_threaded;        /* IBV_CREATE_CQ_ATTR_SINGLE_THREADED */
	struct dpv_cqe *cur;
	uint32_t poll_ci;
};

/* XRC domain: one per inode (or anonymous), shared by its handles. */
struct dpv_xrc_dom {
	struct dpv_xrc_dom *next;
	uint32_t num;                /* engine: domain number */
	bool has_inode;
	dev_t dev;
	ino_t ino;
	unsigned int handles;        /* open ibv_xrcd handles */
	bool remote;                 /* the driver's domain (shared mode: dpverbsd's, for
					every process); num is its number there */
};

struct dpv_xrcd {
	struct ibv_xrcd ibxrcd;
	struct dpv_xrc_dom *dom;
	_Atomic int users;           /* XRC SRQs and target QPs through this handle */
};

struct dpv_srq {
	struct ibv_srq ibsrq;
	struct dpv_bufs bufs;
	uint32_t srqn;
	void *drv;
	struct dpv_ring_hdr *ring;   /* producer view */
	uint32_t pi;
	uint32_t max_wr, max_sge;
	rte_spinlock_t lock;         /* producer lock */
	struct dpv_pd *upd;          /* the PD given */
	struct dpv_pd *pd;           /* protection domain (base) */
	enum ibv_srq_type type;
	struct dpv_xrcd *xrcd;       /* XRC SRQ */
	struct dpv_cq *cq;           /* XRC and TM SRQ: receive completions go here */
	_Atomic int users;
	/* tag matching SRQ (IBV_SRQT_TM): the area after the ring (dpv_queue.h) */
	struct dpv_tm_hdr *tm;       /* NULL for other SRQs */
	uint32_t tm_ops, tm_tags;    /* ops ring entries, max_num_tags */
	uint32_t tm_pi;              /* ops producer index (under lock) */
	uint32_t tm_next;            /* where the next free handle is looked for */
};

struct dpv_wr_batch;

struct dpv_qp {
	struct ibv_qp_ex ibqp;       /* begins with struct ibv_qp */
	dpv_wr_flush_fn wr_flush;    /* rdma-core 45's ibv_qp_ex.wr_flush: right after ibqp */
	struct dpv_bufs bufs;
	struct dpv_context *ctx;
	void *drv;
	uint32_t qpn;
	enum ibv_qp_type type;
	enum ibv_qp_state state;     /* as last set or queried */
	struct dpv_pd *upd;          /* the PD given (parent domain or plain) */
	struct dpv_pd *pd;           /* protection domain (base) */
	struct dpv_cq *scq, *rcq;
	struct dpv_srq *srq;
	struct dpv_xrcd *xrcd;       /* XRC target QP (and handles from ibv_open_qp) */
	struct dpv_qp *opened;       /* ibv_open_qp handle: the real QP of this process */
	bool foreign;                /* ibv_open_qp handle on another process' QP (shared mode:
					drv is the driver's handle, open_qp) */
	struct dpv_qp *open_first;   /* real XRC target QP, embedded mode: its handles */
	struct dpv_qp *open_next;    /* handle: the next on the real QP's list */
	bool gsi;                    /* QP 1 of its port on the wire (dpv_create_gsi_qp) */
	_Atomic int open_refs;       /* handles opened on this QP */
	_Atomic int flows;           /* raw packet QP: its steering rules (ibv_create_flow) */
	struct dpv_rss_cfg *rss;     /* raw packet QP with receive-side scaling (no queues), or NULL */
	struct ibv_rwq_ind_table *ind_tbl; /* its indirection table */
	bool lockless;               /* parent domain with a thread domain */
	bool sq_sig_all;
	struct ibv_qp_cap cap;
	struct ibv_qp_attr attr;     /* attributes as set (ibv_query_qp) */
	rte_spinlock_t lock;         /* SQ producer, modify */
	struct dpv_ring_hdr *sq;     /* producer view */
	uint32_t sq_pi;
	_Atomic uint32_t sq_retired; /* SQ slots below this are free (polled CQEs) */
	rte_spinlock_t rq_lock;      /* RQ producer */
	struct dpv_ring_hdr *rq;
	uint32_t rq_pi;
	struct dpv_wr_batch *wrb;    /* ibv_wr_* batch, NULL unless SEND_OPS_FLAGS */
};
_Static_assert(offsetof(struct dpv_qp, wr_flush) == sizeof(struct ibv_qp_ex),
	       "wr_flush where rdma-core 45's struct ibv_qp_ex has it");

static inline struct dpv_context *to_dctx(struct ibv_context *c)
{
	return container_of(c, struct dpv_context, vctx.context);
}
static inline struct dpv_device *to_ddev(struct ibv_device *d) { return container_of(d, struct dpv_device, ibdev); }
static inline struct dpv_pd *to_dpd(struct ibv_pd *p) { return container_of(p, struct dpv_pd, ibpd); }
static inline struct dpv_mr *to_dmr(struct ibv_mr *m) { return container_of(m, struct dpv_mr, ibmr); }
static inline struct dpv_dm *to_ddm(struct ibv_dm *d) { return container_of(d, struct dpv_dm, ibdm); }
static inline struct dpv_ah *to_dah(struct ibv_ah *a) { return container_of(a, struct dpv_ah, ibah); }
static inline struct dpv_mw *to_dmw(struct ibv_mw *m) { return container_of(m, struct dpv_mw, ibmw); }
/* Is the MR pool's object o (a struct dpv_mr or dpv_mw) a memory window? */
static inline bool dpv_pool_obj_is_mw(const void *o) { return *(const uint32_t *)o == DPV_KEY_MW; }
static inline struct dpv_cq *to_dcq(struct ibv_cq *c)
{
	return container_of((struct ibv_cq_ex *)c, struct dpv_cq, ibcq);
}
static inline struct dpv_qp *to_dqp(struct ibv_qp *q)
{
	return container_of((struct ibv_qp_ex *)q, struct dpv_qp, ibqp);
}
static inline struct dpv_td *to_dtd(struct ibv_td *t) { return container_of(t, struct dpv_td, ibtd); }
static inline struct dpv_xrcd *to_dxrcd(struct ibv_xrcd *x) { return container_of(x, struct dpv_xrcd, ibxrcd); }
static inline struct dpv_srq *to_dsrq(struct ibv_srq *s) { return container_of(s, struct dpv_srq, ibsrq); }
static inline struct dpv_comp_channel *to_dch(struct ibv_comp_channel *c)
{
	return container_of(c, struct dpv_comp_channel, ch);
}
static inline struct ibv_cq *dcq_ib(struct dpv_cq *cq) { return ibv_cq_ex_to_cq(&cq->ibcq); }
static inline struct ibv_qp *dqp_ib(struct dpv_qp *qp) { return &qp->ibqp.qp_base; }

/* Buffers (dpv_buf.c). Allocate a zeroed buffer for an object through pd's
 * allocator (a parent domain's), else the driver's queue memory for rings,
 * else the C heap, and record it in bs. NULL with errno ENOMEM. */
void *dpv_buf_alloc(struct dpv_pd *pd, struct dpv_bufs *bs, size_t size, size_t align, uint32_t code);
void dpv_buf_free(struct dpv_bufs *bs, void *p);
void dpv_bufs_free_all(struct dpv_bufs *bs);

#endif /* DPV_OBJ_H */
