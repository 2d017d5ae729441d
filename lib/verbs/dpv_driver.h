/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file dpv_driver.h
 * The interface between the verbs façade (lib/verbs) and a transport driver
 * (drivers/): what a driver implements, one table per role (struct
 * dpv_verbs_ops, the verbs provider; struct dpv_engine_ops, the engine's
 * services to dpverbsd; struct dpv_gsi_ops, an application's GSI QP in
 * shared mode), registered with DPV_DRIVER_REGISTER the way DPDK drivers
 * register with their library, and what the façade offers drivers in return
 * (the object pool, events, buffers).
 *
 * The data path crosses this boundary only through the rings and doorbells
 * of dpv_queue.h; the ops below are the control path (the commands a verbs
 * provider sends to its RNIC) plus the doorbell and the progress call.
 * Direction: drivers include lib headers and call lib functions; lib calls a
 * driver only through its tables and never includes a driver's headers
 * (test/abi/check_layers.py checks it).
 *
 * Error convention: ops return 0 or a negative errno value; constructors
 * return the driver object or NULL with rte_errno-style errno set.
 */
#ifndef DPV_DRIVER_H
#define DPV_DRIVER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>
#include <infiniband/verbs.h>

#include <rte_common.h>

#include "dpv_conf.h"
#include "dpv_obj.h"
#include "dpv_param.h"
#include "dpv_pool.h"
#include "dpv_counters.h"
#include "dpv_queue.h"
#include "dpv_rawkey.h"
#include "dpverbs.h"

/** A GID table entry as a driver reports it. */
struct dpv_gid {
	uint8_t raw[16];
	bool valid;
	uint8_t ip_ver;          /**< 4 for IPv4-mapped, 6 otherwise */
};

/** What a driver tells the façade about one device at probe time. */
struct dpv_dev_info {
	char name[64];           /**< verbs device name ("dpv0") */
	uint8_t mac[6];          /**< node GUID = modified EUI-64 of it */
	void *drv;               /**< the driver's device object */
	uint64_t dm_size;        /**< bytes of device memory (ibv_alloc_dm) it offers: the
				      port's "dm_size"; 0: none */
};

/** Device memory (ibv_alloc_dm): memory the engine reaches directly, that
 *  this process reads and writes at addr (ibv_memcpy_to_dm) and that MRs
 *  name by handle and offset (ibv_reg_dm_mr). */
struct dpv_dm_desc {
	uint32_t handle;         /**< the driver's number of it (ibv_dm.handle) */
	uint64_t length;         /**< bytes, as asked */
	uint8_t *addr;           /**< where this process reaches it */
};

/** A memory region as the engine keeps it (the "register MR" command, as
 *  an RNIC's memory protection table entry). */
struct dpv_mr_desc {
	uint32_t key;                  /**< lkey == rkey: pool index << 8 | 8-bit key */
	uint32_t pd;                   /**< protection domain number */
	uint64_t addr;                 /**< the memory, as the registering process addresses it */
	uint64_t iova;                 /**< address the peer names (rkey space) */
	uint64_t length;
	int access;                    /**< IBV_ACCESS_* */
	int32_t pid;                   /**< 0: the engine reaches the memory directly (at
					    engine_addr); else the process whose address
					    space addr belongs to (copied with
					    process_vm_readv/writev) */
	uint64_t engine_addr;          /**< pid 0: where the engine's process maps addr (shared
					    memory mapped at another address); 0: at addr */
	uint32_t dm;                   /**< ibv_reg_dm_mr: the device memory's handle (0: none);
					    addr and iova are then 0 (zero-based), engine_addr
					    its bytes at dm_offset in this process */
	uint64_t dm_offset;            /**< the MR's first byte in the device memory */
};

/** A memory window as the engine keeps it (the "allocate MW" command): an
 *  entry of the same table as MRs (one key space, as an RNIC's MPT holds
 *  both), not bound yet. Binding and invalidation are work requests. */
struct dpv_mw_desc {
	uint32_t key;                  /**< rkey: pool index << 8 | 8-bit key */
	uint32_t pd;                   /**< protection domain number */
	uint32_t type;                 /**< IBV_MW_TYPE_1 or IBV_MW_TYPE_2 (type 2B) */
};

/** An address handle as the engine keeps it (the "create AH" command). */
struct dpv_ah_desc {
	uint32_t handle;               /**< the number UD WQEs carry */
	uint32_t pd;                   /**< its protection domain's number */
	uint8_t sgid[16], dgid[16];
	uint8_t ip_ver;                /**< 4 (IPv4-mapped GIDs) or 6 */
	uint8_t tclass, hop_limit;
	uint32_t flow_label;
};

/** Creation parameters of a CQ (the "create CQ" command). */
struct dpv_cq_cfg {
	uint32_t handle;               /**< CQ number (events name it) */
	struct dpv_ring_hdr *ring;     /**< CQ ring, initialised */
	uint32_t ring_size;            /**< its entries (the engine never re-reads the header's) */
	void *td;                      /**< driver TD object, or NULL */
	bool timestamps;               /**< write dpv_cqe.ts (else 0): an extended CQ asked for them */
	bool ignore_overrun;           /**< IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN: a CQE that does not
					    fit is lost (and counted), the CQ does not go to error */
	uint32_t ctx;                  /**< the driver's context id (ctx_open) */
	uint64_t cookie;               /**< the application's struct ibv_cq * (events carry it) */
	int chan_fd;                   /**< completion channel (pipe write end), -1: none */
	struct dpv_wake *wake;         /**< shared mode: the owner's wake word (bumped after
					    every CQE, futex woken when it has waiters), or NULL */
};

/** Creation parameters of an SRQ. */
struct dpv_srq_cfg {
	uint32_t srqn;                 /**< SRQ number (XRCETH names it) */
	struct dpv_ring_hdr *ring;     /**< SRQ ring, initialised */
	uint32_t ring_size, ring_stride; /**< its geometry */
	uint32_t pd;                   /**< protection domain handle */
	uint32_t xrcd;                 /**< XRC domain number, 0 for a basic SRQ */
	void *cq;                      /**< XRC and tag matching SRQ: driver CQ of its completions */
	uint32_t max_sge;
	uint32_t ctx;                  /**< the driver's context id (ctx_open) */
	uint64_t cookie;               /**< the application's struct ibv_srq * */
	uint32_t tm_ops;               /**< tag matching SRQ: ops ring entries (power of two),
					    the area at dpv_tm_area_off of the ring; 0: none */
	uint32_t tm_tags;              /**< tag matching SRQ: max_num_tags */
	uint32_t owner;                /**< shared mode: the application whose doorbell rings
					    may name the SRQ (0: any) */
};

/** Creation parameters of a QP. */
struct dpv_qp_cfg {
	uint32_t qpn;
	enum ibv_qp_type type;
	void *dev;                     /**< driver device object */
	struct dpv_ring_hdr *sq, *rq;  /**< NULL when the QP has none */
	uint32_t sq_size, sq_stride;   /**< their geometry: the engine uses these, never the */
	uint32_t rq_size, rq_stride;   /**< headers' fields (another process can write those) */
	uint32_t owner;                /**< shared mode: the application whose doorbell rings
					    may name the QP (0: any) */
	void *scq, *rcq, *srq;         /**< driver objects, NULL when none */
	void *td;                      /**< driver TD object, or NULL */
	uint32_t pd;                   /**< protection domain handle (0: XRC target) */
	uint32_t xrcd;                 /**< XRC target: domain number */
	struct ibv_qp_cap cap;
	bool sq_sig_all;
	struct dpv_pd *alloc_pd;       /**< allocate engine state with dpv_buf_alloc(alloc_pd, bufs, ...) */
	struct dpv_bufs *bufs;
	uint32_t ctx;                  /**< the driver's context id (ctx_open) */
	uint64_t cookie;               /**< the application's struct ibv_qp * */
	bool gsi;                      /**< UD QP serving QP 1 of the device's port (IBA 13.5:
					    the GSI); -EEXIST when the port has one */
	const struct dpv_rss_cfg *rss; /**< raw packet QP with receive-side scaling (no rings):
					    the receive WQs its frames go to (copied) */
	bool gsi_shared;               /**< dpverbsd: one of several UD QPs that send with
					    source QP 1 and receive what the GSI demultiplexer
					    (gsi_demux) hands them; the port keeps no single one */
};

/** dpverbsd's GSI demultiplexer: for a MAD (UD payload) that sgid sent
 *  to QP 1 of device dev_index, the QPN of the GSI QP (gsi_shared) that
 *  gets it; 0: the port's own GSI QP (cfg.gsi), if any. Runs on engine
 *  threads. */
typedef uint32_t (*dpv_gsi_demux_fn)(void *arg, unsigned int dev_index, const uint8_t sgid[16],
				     const uint8_t *mad, uint32_t len);
/** dpverbsd's GSI send filter: may GSI QP qpn (gsi_shared) of device
 *  dev_index send this MAD from QP 1 to dgid? false: the packet is dropped
 *  (the send completes as a datagram lost on the way). Runs on engine
 *  threads. */
typedef bool (*dpv_gsi_tx_fn)(void *arg, unsigned int dev_index, uint32_t qpn, const uint8_t dgid[16],
			      const uint8_t *mad, uint32_t len);

/**
 * The engine's side of shared mode: what dpverbsd asks of the driver that
 * runs the engine in its process (sw), besides the verbs operations it
 * performs for its applications. A driver sets all of them or none (the
 * defaults: no doorbell rings, no QP 1 demultiplexer).
 */
struct dpv_engine_ops {
	/** Doorbell rings an application needs for dev (one per engine context). */
	unsigned int (*db_count)(void *dev);
	/** Serve ring (size slots) as the application owner's doorbell ring
	 *  index of dev: a handle for db_detach, NULL with errno. */
	void *(*db_attach)(void *dev, unsigned int index, struct dpv_db_ring *ring, uint32_t size, uint32_t owner);
	/** Stop serving it: no engine thread reads the ring after this returns. */
	void (*db_detach)(void *db);
	/** The doorbell ring index that serves qp. */
	unsigned int (*qp_db_index)(void *qp);
	/** Take every doorbell queued for dev now (a command that must see the
	 *  work posted before it, e.g. a CQ resize, runs after this). */
	void (*db_sync)(void *dev);
	/** Install (fn NULL: remove) the GSI demultiplexer and send filter of
	 *  every port. */
	void (*gsi_demux)(dpv_gsi_demux_fn fn, dpv_gsi_tx_fn tx, void *arg);
};

/**
 * The verbs provider: the operations the façade (lib/verbs) performs on a
 * driver for the verbs an application calls. Sorted by name, as rdma-core
 * keeps struct verbs_context_ops, so a new operation has one obvious place.
 * A member a driver leaves NULL gets the façade's default
 * (dpv_ops_default.c), which initialises every member positionally so that
 * the compiler reports one that is missing; four are optional and stay
 * NULL (mem_alloc, mem_free, mem_is_huge, progress_blocking: said below).
 * `dev` is the driver's device (dpv_dev_info.drv), `qp`, `cq`, `srq`, `td`
 * the objects its create_* returned.
 */
struct dpv_verbs_ops {
	/** ibv_alloc_dm: length bytes (1 .. the device's dm_size) of device
	 *  memory aligned to 2^log_align (at most DPV_DM_MAX_LOG_ALIGN) for the
	 *  context ctx: *dm filled. -EINVAL (bad length or alignment), -ENOMEM
	 *  (not that much left), -EOPNOTSUPP (default: the device has none). */
	int (*alloc_dm)(void *dev, uint32_t ctx, uint64_t length, uint32_t log_align, struct dpv_dm_desc *dm);
	/** ibv_alloc_mw: a window *mw in the key table (unbound). 0, -EBUSY
	 *  (the index is another MR's or window's), -EINVAL, -EOPNOTSUPP
	 *  (default: no memory windows; the device reports max_mw 0). */
	int (*alloc_mw)(void *dev, const struct dpv_mw_desc *mw);
	/** A PD with this number now exists (dealloc_pd: no longer exists; the
	 *  engine compares numbers, shared mode tracks who may use them). */
	int (*alloc_pd)(void *dev, uint32_t pdn);
	/** A handle from open_qp goes (ibv_destroy_qp on it): its events stop;
	 *  the QP stays. */
	void (*close_qp)(void *qp);
	/** A new AH: the engine keeps its path under its handle (and may start
	 *  resolving the neighbour). 0 or -errno. */
	int (*create_ah)(void *dev, const struct dpv_ah_desc *ah);
	/** A CQ on cfg's ring: the driver's CQ, NULL with errno (default:
	 *  EOPNOTSUPP). */
	void *(*create_cq)(void *dev, const struct dpv_cq_cfg *cfg);
	/** A QP on cfg's rings: the driver's QP, NULL with errno (default:
	 *  EOPNOTSUPP). */
	void *(*create_qp)(const struct dpv_qp_cfg *cfg);
	/** An SRQ on cfg's ring: the driver's SRQ, NULL with errno (default:
	 *  EOPNOTSUPP). */
	void *(*create_srq)(void *dev, const struct dpv_srq_cfg *cfg);
	/** A thread domain (ibv_alloc_td): the driver's TD, NULL with errno. */
	void *(*create_td)(void *dev);
	/** The context ctx (ctx_open's id) is gone. */
	void (*ctx_close)(void *dev, uint32_t ctx);
	/** ibv_import_device: the context behind cmd_fd (another context's
	 *  command descriptor): *dev_index its device; then as ctx_open.
	 *  -EOPNOTSUPP (default): the façade imports a context of this process
	 *  itself (embedded mode; import_pd and import_mr likewise). */
	int (*ctx_import)(int cmd_fd, unsigned int *dev_index, int async_wfd, int *new_cmd_fd);
	/** A context of dev was opened; its asynchronous events may also be
	 *  written to async_wfd (the pipe behind async_fd) as struct
	 *  ibv_async_event records. @return the driver's context id (> 0), or
	 *  -errno. *cmd_fd: the context's command descriptor (ibv_context.cmd_fd,
	 *  which ibv_import_device accepts), or -1 (the façade makes a stand-in). */
	int (*ctx_open)(void *dev, int async_wfd, int *cmd_fd);
	/** ibv_dealloc_mw: the window of rkey key goes, bound or not (an MR it
	 *  was bound to counts it no more); packets naming it are refused from
	 *  now. */
	void (*dealloc_mw)(void *dev, uint32_t key);
	/** The PD pdn no longer exists (alloc_pd, import_pd undone). */
	void (*dealloc_pd)(void *dev, uint32_t pdn);
	/** The key is no longer valid (packets using it are refused from now).
	 *  -EBUSY, nothing done: memory windows are bound to the MR (IBA
	 *  10.6.7.2.6), unless force (a process that went away: its windows
	 *  then open onto nothing). 0 otherwise. */
	int (*dereg_mr)(void *dev, uint32_t key, bool force);
	/** The AH handle is gone. */
	void (*destroy_ah)(void *dev, uint32_t handle);
	/** The CQ is gone: no CQE is written to its ring after this returns. */
	void (*destroy_cq)(void *cq);
	/** Stop the QP for good: no CQE for it is written after this returns. */
	void (*destroy_qp)(void *qp);
	/** The SRQ is gone: no WQE of it is taken after this returns. */
	void (*destroy_srq)(void *srq);
	/** The TD is gone: 0 or -errno. */
	int (*destroy_td)(void *td);
	/** ibv_create_flow on a raw packet QP (rule compiled and checked by the
	 *  façade; its qpn is the QP's): *handle names it for flow_destroy.
	 *  -EINVAL (not a raw packet QP), -ENOMEM (too many rules on the port).
	 *  Default: -EOPNOTSUPP, and the device has no raw packet QPs. */
	int (*flow_create)(void *qp, const struct dpv_raw_rule *rule, uint32_t *handle);
	/** ibv_destroy_flow: no frame reaches the QP through the rule once this
	 *  returns. -ENOENT (no such rule of this QP). Default: -EOPNOTSUPP. */
	int (*flow_destroy)(void *qp, uint32_t handle);
	/** May a child of fork() use the driver (objects of its own)? remote:
	 *  it attaches again; null: nothing to share. Default (sw): false, the
	 *  child has its parent's EAL, ports and engine and must not run them. */
	bool (*fork_safe)(void);
	/** ibv_free_dm, ibv_unimport_dm: this process lets go of dm (no MR of
	 *  its own is on it: the façade checks); its memory is freed with the
	 *  last holder. 0, -errno. */
	int (*free_dm)(void *dev, const struct dpv_dm_desc *dm);
	/** ibv_import_dm: the device memory handle of the context ctx was
	 *  imported from: *dm filled (addr: mapped in this process). -ENOENT,
	 *  -EOPNOTSUPP (default). */
	int (*import_dm)(void *dev, uint32_t ctx, uint32_t handle, struct dpv_dm_desc *dm);
	/** ibv_import_mr: the MR index of the context ctx, imported: *mr gets
	 *  its description. -ENOENT, -EOPNOTSUPP (default). */
	int (*import_mr)(void *dev, uint32_t ctx, uint32_t index, struct dpv_mr_desc *mr);
	/** ibv_import_pd: the PD pdn of the context ctx becomes usable by this
	 *  process (undone by dealloc_pd). -ENOENT, -EOPNOTSUPP (default). */
	int (*import_pd)(void *dev, uint32_t ctx, uint32_t pdn);
	/** ibv_attach_mcast of a UD QP (gid: a multicast GID, checked by the
	 *  façade): 0 or -errno (ENOMEM: too many groups or QPs in the group).
	 *  Default: -EOPNOTSUPP, and the device reports max_mcast_grp 0. */
	int (*mcast_attach)(void *qp, const uint8_t *gid);
	/** ibv_detach_mcast: 0 or -errno (EINVAL: a group the QP is not in).
	 *  Default: -EOPNOTSUPP. */
	int (*mcast_detach)(void *qp, const uint8_t *gid);
	/** Optional (NULL where the hugepage allocator uses DPDK memory itself:
	 *  embedded mode): memory the engine reaches directly, for the hugepage
	 *  allocator (huge: hugepage-backed when the system has them). */
	void *(*mem_alloc)(size_t size, bool huge);
	/** Optional, with mem_alloc: give p back. */
	void (*mem_free)(void *p);
	/** Optional, with mem_alloc: is p inside hugepage-backed memory of
	 *  mem_alloc? 1, 0. */
	int (*mem_is_huge)(const void *p);
	/** Apply a transition the façade has validated (IBA 10.3.1, table 91).
	 *  cur is the state the façade saw; -EAGAIN if the engine moved on (the
	 *  caller checks the transition again from the new state). */
	int (*modify_qp)(void *qp, const struct ibv_qp_attr *attr, int mask, enum ibv_qp_state cur,
			 enum ibv_qp_state to);
	/** The MAC of neighbour ip (a GID: IPv4-mapped or IPv6) on dev's port:
	 *  0 with mac set, -EAGAIN while it is being resolved (the driver asks
	 *  if nobody was asking), -EOPNOTSUPP where the driver keeps no
	 *  neighbours (default). Never blocks. */
	int (*neigh_query)(void *dev, const uint8_t ip[16], uint8_t mac[6]);
	/** ibv_open_qp in a domain of the driver (xrcd_open's number): a
	 *  handle on XRC target QP qpn of that domain, whichever process
	 *  created it, for the context ctx (ctx_open's id); the QP's events
	 *  reach it with cookie (the handle's struct ibv_qp *) as element.
	 *  modify_qp, query_qp_attr, query_qp_state and query_qp_counters take
	 *  the handle; close_qp ends it. NULL with errno: EINVAL (a domain
	 *  this process does not hold), ENOENT (no XRC target QP qpn in it),
	 *  EOPNOTSUPP (default: domains are the façade's, xrcd_open). */
	void *(*open_qp)(void *dev, uint32_t ctx, uint32_t xrcd, uint32_t qpn, uint64_t cookie);
	/** Run-to-completion progress for a caller about to poll this CQ
	 *  (NULL: any). @return events processed (0 in service mode). */
	int (*progress)(void *cq);
	/** Optional: a thread that drove progress is about to block until
	 *  an event arrives (on) or has returned (!on); the engine must not
	 *  count on it meanwhile. */
	void (*progress_blocking)(bool on);
	/** Whether ibv_get_cq_event may block in poll() (service mode). */
	bool (*progress_is_background)(void);
	/** GID table entry index (0 .. DPV_GID_TABLE_LEN-1). -EINVAL out of range. */
	int (*query_gid)(void *dev, uint32_t index, struct dpv_gid *gid);
	/** Port attributes (state, MTU, speed, counters). */
	int (*query_port)(void *dev, struct ibv_port_attr *attr);
	/** The attributes of an XRC target QP as the driver keeps them, where
	 *  handles of other processes may modify it (shared mode): *attr
	 *  (qp_state the engine's, cap as created, every value set since),
	 *  *sq_sig_all, *handles (open_qp handles on it now, every process').
	 *  -EOPNOTSUPP (default: the façade's own attributes are the QP's). */
	int (*query_qp_attr)(void *qp, struct ibv_qp_attr *attr, bool *sq_sig_all, uint32_t *handles);
	/** Transport counters of the QP (enum dpv_cnt), n entries. */
	void (*query_qp_counters)(void *qp, uint64_t *cnt, unsigned int n);
	/** The QP's current state (the engine moves it to ERR or SQE itself). */
	enum ibv_qp_state (*query_qp_state)(void *qp);
	/** Memory for rings that the engine can reach (NULL: use the C heap). */
	void *(*queue_alloc)(void *dev, size_t size, size_t align);
	/** Give queue_alloc's memory back. */
	void (*queue_free)(void *dev, void *p);
	/** Register (or, same key, re-register) a memory region: after this the
	 *  engine accepts the key as lkey and rkey. -EINVAL, -EBUSY (the index is
	 *  another MR's), -EFAULT (memory the engine cannot reach). */
	int (*reg_mr)(void *dev, const struct dpv_mr_desc *mr);
	/** Move to a new ring of size entries: copy the CQEs not consumed yet
	 *  (the façade holds its consumer lock). -EINVAL if they do not fit. */
	int (*resize_cq)(void *cq, struct dpv_ring_hdr *ring, uint32_t size);
	/** Rings must be queue memory (queue_alloc): the engine is in another
	 *  process and reaches nothing else; a parent domain's allocator is
	 *  then not asked for ring buffers. Default false. */
	bool (*rings_queue_only)(void);
	/** The RQ producer index moved (the engine flushes in ERR). */
	void (*rq_doorbell)(void *qp);
	/** ibv_alloc_shpd: make PD pdn shareable with key; *id: its share id.
	 *  -EOPNOTSUPP where PDs cannot be shared (embedded mode), -EBUSY when
	 *  the PD is shared already. */
	int (*shpd_alloc)(void *dev, uint32_t pdn, uint64_t key, uint64_t *id);
	/** ibv_share_pd: the PD behind (id, key), usable by this process from
	 *  now on. -ENOENT (unknown id), -EACCES (wrong key), -EOPNOTSUPP. */
	int (*shpd_share)(void *dev, uint64_t id, uint64_t key, uint32_t *pdn);
	/** The SQ producer index moved. */
	void (*sq_doorbell)(void *qp);
	/** A tag matching SRQ's ops ring moved (ibv_post_srq_ops): the engine
	 *  executes the ops (at once, or on its next turn). */
	void (*srq_doorbell)(void *srq);
	/** The XRC domain num is closed once (xrcd_open counted it). */
	void (*xrcd_close)(void *dev, uint32_t num);
	/** XRC domain of the inode of fd (-1: a new anonymous one), with
	 *  open(2)-style oflags (O_CREAT, O_EXCL): *num its number, counted once
	 *  per opening. -EOPNOTSUPP: domains are the façade's (per process). */
	int (*xrcd_open)(void *dev, int fd, int oflags, uint32_t *num);
};

/**
 * The GSI hooks: what an application's GSI QP asks of the driver when the
 * port's QP 1 is not its own (shared mode: dpverbsd owns it and hands the
 * process its MADs). Only the remote driver has them; the defaults make
 * the QP the port's only GSI QP.
 */
struct dpv_gsi_ops {
	/** The comm-ID prefix and mask of the process (default: 0, 0: any). */
	void (*gsi_comm_ids)(void *qp, uint32_t *prefix, uint32_t *mask);
	/** The daemon hands the process of GSI QP qp the CM MADs for
	 *  service_id (on) / stops (off). 0, -EADDRINUSE (another process
	 *  listens on it), -errno. Default: 0 (the QP gets every MAD). */
	int (*gsi_listen)(void *qp, uint64_t service_id, bool on);
};

/**
 * A driver: its probe and its tables, one per role. verbs is required (its
 * NULL members get defaults); engine and gsi may be NULL (the defaults:
 * no doorbell rings, no QP 1 demultiplexer; the QP is the port's GSI QP).
 */
struct dpv_driver {
	const char *name;
	/** Bring the driver up for this configuration and list its devices
	 *  (at most max) in devs. @return the number of devices, or -errno. */
	int (*probe)(const struct dpv_conf *conf, struct dpv_dev_info *devs, unsigned int max);
	const struct dpv_verbs_ops *verbs;
	const struct dpv_engine_ops *engine;
	const struct dpv_gsi_ops *gsi;
	STAILQ_ENTRY(dpv_driver) next;
};

/** Register a driver (from a constructor: DPV_DRIVER_REGISTER). */
void dpv_driver_register(struct dpv_driver *drv);

/** Register the driver `nm` at load time, as RTE_PMD_REGISTER_* does:
 *  its probe function and its tables (engine_, gsi_: NULL for none). */
#define DPV_DRIVER_REGISTER(nm, probe_, verbs_, engine_, gsi_)                  \
	static struct dpv_driver dpv_driver_##nm = {.name = RTE_STR(nm), .probe = (probe_), \
		.verbs = (verbs_), .engine = (engine_), .gsi = (gsi_)};           \
	RTE_INIT(dpv_driver_init_##nm) { dpv_driver_register(&dpv_driver_##nm); }

/* ------------------------------------------------------------------------
 * Services of the façade for drivers.
 */

/** Adopt other limits (the remote driver's probe: the daemon's), before any
 *  object exists. 0 or -errno. */
int dpv_core_set_params(const struct dpv_params *p);

/** TSC ticks per second: EAL's, or what a driver without EAL (remote) set. */
uint64_t dpv_tsc_hz(void);
void dpv_core_set_tsc_hz(uint64_t hz);

/** The configuration the façade was started with. */
const struct dpv_conf *dpv_core_conf(void);
const struct dpv_params *dpv_core_params(void);

/**
 * Where the events of the engine go instead of the façade's own objects
 * (dpverbsd: to the application that owns the object). NULL: the façade.
 */
struct dpv_event_sink {
	void (*async)(void *dev, enum ibv_event_type type, uint32_t num);
	void (*comp)(uint32_t cq_handle);
};
void dpv_event_set_sink(const struct dpv_event_sink *sink);

/** Deliver an asynchronous event. For QP events `num` is the QPN, for
 *  SRQ_LIMIT_REACHED the SRQ number, for CQ_ERR the CQ handle; for port
 *  events `dev` names the device (num unused). dev may be NULL otherwise. */
void dpv_event_async(void *dev, enum ibv_event_type type, uint32_t num);

/** A CQ armed with DPV_CQ_ARM_* got a matching completion: signal its
 *  completion channel. */
void dpv_event_comp(uint32_t cq_handle);

/** The completion opcode of a send WQE's opcode (IBV_WR_* to IBV_WC_*). */
static inline enum ibv_wc_opcode dpv_wc_opcode(uint8_t wr_opcode)
{
	switch (wr_opcode) {
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		return IBV_WC_RDMA_WRITE;
	case IBV_WR_RDMA_READ:
		return IBV_WC_RDMA_READ;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
		return IBV_WC_COMP_SWAP;
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		return IBV_WC_FETCH_ADD;
	case IBV_WR_BIND_MW:
		return IBV_WC_BIND_MW;
	case IBV_WR_LOCAL_INV:
		return IBV_WC_LOCAL_INV;
	case IBV_WR_ATOMIC_WRITE:
		return IBV_WC_ATOMIC_WRITE;
	case DPV_WR_FLUSH:
		return (enum ibv_wc_opcode)DPV_WC_FLUSH;
	default:
		return IBV_WC_SEND;
	}
}

/** Look an AH up by handle, or NULL. */

#endif /* DPV_DRIVER_H */
