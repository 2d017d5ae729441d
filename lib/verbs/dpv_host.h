/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file dpv_host.h
 * What an engine host such as dpverbsd may use of libdpverbs: the core
 * brought up in the host's role (the process runs the configuration's
 * driver and its engine and serves other processes' objects on it), the
 * devices by index, the engine's commands on them, the checks of the
 * façade a host makes again on the requests it receives, and the engine's
 * services to a host (other processes' doorbell rings, the demultiplexer
 * of QP 1, progress).
 *
 * A host includes this header, the public headers (<infiniband/verbs.h>,
 * dpverbs.h) and its own protocol's (lib/shm/dpv_shm_proto.h), and no
 * other header of lib/verbs nor any of lib/port (test/abi/check_layers.py).
 * The types it passes come with this header: from the driver interface
 * (dpv_driver.h: the descriptors and creation parameters of engine
 * objects, the GSI hook types, struct dpv_event_sink), the queue formats
 * (dpv_queue.h: rings, WQEs, CQEs, doorbell rings, the wake word) and the
 * object pool (dpv_pool.h). Of those headers' functions a host calls the
 * object pool's numbering (dpv_pool_add, dpv_pool_get, dpv_pool_del,
 * dpv_pool_range: a host numbers the objects of every process it serves,
 * in the tables the façade numbers its own in) and the queue formats'
 * inline helpers; everything else it calls is declared below. None of it
 * lets a host reach the façade's objects or its driver's tables.
 *
 * Devices are named by index (0 .. dpv_host_n_devs() - 1, the
 * configuration's order); engine objects (CQs, SRQs, QPs, doorbell ring
 * handles) are the opaque pointers the functions that make them return.
 *
 * Error convention (that of dpv_driver.h's ops): functions return 0 or a
 * negative errno value; those that make an object return it, or NULL with
 * errno set. An index that names no device gives -ENODEV (NULL with errno
 * ENODEV); the functions without a result then do nothing.
 *
 * Threads: one thread (a host's control thread) makes the calls, except
 * dpv_host_progress (any thread that drives the engine); the event sink
 * and the GSI hooks are called on engine threads.
 */
#ifndef DPV_HOST_H
#define DPV_HOST_H

#include <stdbool.h>
#include <stdint.h>
#include <infiniband/verbs.h>

#include "dpv_driver.h"

/* ---- the core, in the host's role ---- */

/**
 * Bring the core up as the host of the configuration's engine
 * (DPVERBS_CONFIG, else the built-in default): its driver is the
 * configuration's even in shared mode, where applications get "remote".
 * Once per process, before any other call of this header.
 * @return the configuration it runs, or NULL with errno: EINVAL (the
 * configuration is invalid; the reason is logged), ENODEV (no such driver
 * in this build), ENOMEM, or what the driver's probe returned (e.g. EIO).
 */
const struct dpv_conf *dpv_host_start(void);

/** @return the number of devices (0 before dpv_host_start). */
unsigned int dpv_host_n_devs(void);

/**
 * Does dev name a device? The façade's own check of a device index (the
 * device ibv_import_device's context is on).
 * @return true for 0 .. dpv_host_n_devs() - 1.
 */
bool dpv_host_dev_ok(uint32_t dev);

/** @return the limits every verb checks (dpv_param.h), NULL before
 *  dpv_host_start. */
const struct dpv_params *dpv_host_params(void);

/** What a host tells other processes of a device. */
struct dpv_host_dev {
	char name[64];               /**< verbs device name ("dpv0") */
	uint8_t mac[6];              /**< its port's MAC */
	uint64_t node_guid;          /**< node GUID, host byte order */
	uint64_t dm_size;            /**< device memory it offers (max_dm_size), 0: none */
};

/** Fill *out for device dev. @return 0, -ENODEV. */
int dpv_host_dev_query(uint32_t dev, struct dpv_host_dev *out);

/**
 * The index of the device whose driver object is drv_dev (the `dev` of
 * struct dpv_event_sink's async callback).
 * @return the index, or -ENODEV when drv_dev is no device's.
 */
int dpv_host_dev_index(const void *drv_dev);

/**
 * The engine's events go to sink instead of the façade's objects (a host
 * delivers them to the process that owns the object); NULL: to the
 * façade again. The callbacks run on engine threads.
 */
void dpv_host_set_event_sink(const struct dpv_event_sink *sink);

/* ---- devices ---- */

/** Port attributes (state, MTU, speed, counters) of dev into *attr.
 *  @return 0, -ENODEV, or the driver's -errno. */
int dpv_host_query_port(uint32_t dev, struct ibv_port_attr *attr);

/** GID table entry index of dev. @return 0, -EINVAL (index out of the
 *  table), -ENODEV. */
int dpv_host_query_gid(uint32_t dev, uint32_t index, struct dpv_gid *gid);

/** The MAC of neighbour ip (a GID: IPv4-mapped or IPv6) on dev's port;
 *  never blocks. @return 0 with mac set, -EAGAIN (being resolved: asked
 *  now if nobody was asking), -EOPNOTSUPP (the driver keeps no
 *  neighbours), -ENODEV. */
int dpv_host_neigh_query(uint32_t dev, const uint8_t ip[16], uint8_t mac[6]);

/* ---- protection domains, memory regions, address handles ---- */

/** PD number pdn exists on dev from now on (the engine compares numbers).
 *  @return 0, -ENODEV, or the driver's -errno. */
int dpv_host_alloc_pd(uint32_t dev, uint32_t pdn);
/** PD number pdn no longer exists on dev. */
void dpv_host_dealloc_pd(uint32_t dev, uint32_t pdn);

/** Register (same key: re-register) the memory region *mr: after this the
 *  engine accepts its key as lkey and rkey. @return 0, -EINVAL, -EBUSY
 *  (the key's index is another MR's), -EFAULT (memory the engine cannot
 *  reach), -ENODEV. */
int dpv_host_reg_mr(uint32_t dev, const struct dpv_mr_desc *mr);
/** The key is no longer valid (packets using it are refused from now).
 *  @return 0, -EBUSY (memory windows are bound to it: nothing done) unless
 *  force (then the windows open onto nothing), -ENODEV. */
int dpv_host_dereg_mr(uint32_t dev, uint32_t key, bool force);

/** A memory window *mw, not bound (its number is one of the MR pool).
 *  @return 0, -EINVAL, -EBUSY (the index is taken), -EOPNOTSUPP (a driver
 *  without windows), -ENODEV. */
int dpv_host_alloc_mw(uint32_t dev, const struct dpv_mw_desc *mw);
/** The window of index key >> 8 goes, bound or not. */
void dpv_host_dealloc_mw(uint32_t dev, uint32_t key);

/** A new address handle *ah (the engine may start resolving its
 *  neighbour). @return 0, -ENODEV, or the driver's -errno (-ENOMEM). */
int dpv_host_create_ah(uint32_t dev, const struct dpv_ah_desc *ah);
/** The address handle number handle goes. */
void dpv_host_destroy_ah(uint32_t dev, uint32_t handle);

/* ---- CQs, SRQs ---- */

/** A CQ of dev on cfg's ring. @return the engine's CQ, or NULL with errno
 *  (ENOMEM, EINVAL, EOPNOTSUPP: the driver makes none, ENODEV). */
void *dpv_host_create_cq(uint32_t dev, const struct dpv_cq_cfg *cfg);
/** Destroy cq: no CQE is written to its ring after this returns. */
void dpv_host_destroy_cq(uint32_t dev, void *cq);
/** Move cq to ring (size entries), copying the CQEs not consumed yet; the
 *  caller holds off the consumer (and takes the doorbells queued before,
 *  dpv_host_db_sync). @return 0, -EINVAL (they do not fit), -EOPNOTSUPP,
 *  -ENODEV. */
int dpv_host_resize_cq(uint32_t dev, void *cq, struct dpv_ring_hdr *ring, uint32_t size);

/** An SRQ of dev on cfg's ring. @return the engine's SRQ, or NULL with
 *  errno (ENOMEM, EINVAL, EOPNOTSUPP, ENODEV). */
void *dpv_host_create_srq(uint32_t dev, const struct dpv_srq_cfg *cfg);
/** Destroy srq. */
void dpv_host_destroy_srq(uint32_t dev, void *srq);

/* ---- QPs ---- */

/**
 * A QP of dev as cfg describes it; cfg->dev and cfg->bufs are filled here
 * (leave them). *bufs receives the memory of the engine's QP context, to
 * be given back to dpv_host_destroy_qp (nothing is left in it on failure).
 * @return the engine's QP, or NULL with errno: EINVAL, ENOMEM, EEXIST (a
 * GSI QP where the port has one), EOPNOTSUPP (the driver makes none),
 * ENODEV.
 */
void *dpv_host_create_qp(uint32_t dev, struct dpv_qp_cfg *cfg, struct dpv_bufs *bufs);
/** Stop qp for good (no CQE for it is written after this returns) and free
 *  *bufs. */
void dpv_host_destroy_qp(uint32_t dev, void *qp, struct dpv_bufs *bufs);

/** Apply a transition checked with dpv_host_qp_modify_check (attr: every
 *  attribute of the QP, as dpv_qp_attr_store keeps them). cur: the state
 *  the check saw. @return 0, -EAGAIN (the engine moved on from cur: check again),
 *  -EOPNOTSUPP, -ENODEV. */
int dpv_host_modify_qp(uint32_t dev, void *qp, const struct ibv_qp_attr *attr, int mask,
		       enum ibv_qp_state cur, enum ibv_qp_state to);
/** @return qp's current state (the engine moves it to ERR or SQE itself);
 *  IBV_QPS_ERR for an index that names no device. */
enum ibv_qp_state dpv_host_qp_state(uint32_t dev, void *qp);
/** qp's transport counters (enum dpv_cnt), n of them, into cnt (zeros for
 *  an index that names no device). */
void dpv_host_qp_counters(uint32_t dev, void *qp, uint64_t *cnt, unsigned int n);
/** A UD QP joins (attach) or leaves the multicast group gid (checked by
 *  the caller: dpv_gid_is_mcast). @return 0, -ENOMEM (too many groups or
 *  QPs in the group), -EINVAL (leaving a group it is not in), -EOPNOTSUPP
 *  (no multicast), -ENODEV. */
int dpv_host_mcast(uint32_t dev, void *qp, const uint8_t gid[16], bool attach);
/** ibv_create_flow (rule non-NULL: *handle gets the rule's) or
 *  ibv_destroy_flow (rule NULL: *handle names it) on raw packet QP qp of
 *  device dev. @return 0, -EINVAL (not a raw packet QP), -ENOMEM (too many
 *  rules on the port), -ENOENT (no such rule of qp), -EOPNOTSUPP, -ENODEV. */
int dpv_host_flow(uint32_t dev, void *qp, const struct dpv_raw_rule *rule, uint32_t *handle);
/** qp's SQ producer index moved (a host that posts work itself). */
void dpv_host_sq_doorbell(uint32_t dev, void *qp);

/* ---- checks of the façade, made again by a host ---- */

/**
 * Are a QP's capabilities within the limits p (max_qp_wr, max_sge,
 * max_inline)? no_rq: the QP has no receive queue of its own (an SRQ, an
 * XRC QP), its receive capabilities are not looked at. ibv_create_qp's
 * check (dpv_qp.c).
 * @return true within them; ibv_create_qp refuses with EINVAL otherwise.
 */
bool dpv_qp_cap_ok(const struct dpv_params *p, const struct ibv_qp_cap *cap, bool no_rq);

/**
 * May a QP of type type in state cur on device dev make the modify (attr,
 * mask)? ibv_modify_qp's check (IBA 10.3.1, table 91, and the values'
 * ranges; an address vector's GID index against dev's table).
 * @return 0 with *to the state it goes to, -EINVAL (refused), -ENODEV.
 */
int dpv_host_qp_modify_check(enum ibv_qp_type type, uint32_t dev, enum ibv_qp_state cur,
			     const struct ibv_qp_attr *attr, int mask, enum ibv_qp_state *to);
/** Copy into q the attributes of attr that mask names, as ibv_modify_qp
 *  keeps them (what ibv_query_qp reports). */
void dpv_qp_attr_store(struct ibv_qp_attr *q, const struct ibv_qp_attr *attr, int mask);

/* ---- the engine's services to a host ---- */

/** @return the doorbell rings a process needs for dev (one per engine
 *  context); 0 when the driver runs no engine here, or for no device. */
unsigned int dpv_host_db_count(uint32_t dev);
/**
 * Serve ring (size slots) as process owner's doorbell ring index of dev.
 * @return a handle for dpv_host_db_detach, or NULL with errno: ENOMEM,
 * EINVAL, EOPNOTSUPP (no engine in this process), ENODEV.
 */
void *dpv_host_db_attach(uint32_t dev, unsigned int index, struct dpv_db_ring *ring, uint32_t size,
			 uint32_t owner);
/** Stop serving db: no engine thread reads its ring after this returns. */
void dpv_host_db_detach(uint32_t dev, void *db);
/** @return the doorbell ring index that serves qp (0 for no device). */
unsigned int dpv_host_qp_db_index(uint32_t dev, void *qp);
/** Take every doorbell queued for dev now (before a command that must see
 *  the work posted before it: a CQ resize, an AH destroyed). */
void dpv_host_db_sync(uint32_t dev);
/** Install (fn NULL: remove) QP 1's demultiplexer and send filter on every
 *  port; nothing when there is no device (or no engine). */
void dpv_host_gsi_demux(dpv_gsi_demux_fn fn, dpv_gsi_tx_fn tx, void *arg);

/** Drive the engine once on the calling thread (every engine context not
 *  driven elsewhere). @return the events processed (0 when the engine
 *  runs on its own threads). */
int dpv_host_progress(void);
/** @return true when the engine runs on threads of its own (progress
 *  "lcore"): a host need not call dpv_host_progress. */
bool dpv_host_progress_is_background(void);

#endif /* DPV_HOST_H */
