/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The verbs façade's internal interface: the core (configuration, driver,
 * devices) and the functions the façade's files share. Not installed, not
 * for drivers (they use dpv_driver.h) nor for engine hosts such as
 * dpverbsd (they use dpv_host.h, which this header includes: the checks a
 * host makes again are declared there once).
 *
 * Error convention of the façade: exported verbs follow rdma-core (an errno
 * value returned, or NULL / -1 with errno set); internal helpers return 0 or
 * a positive errno value the verb can return as is.
 */
#ifndef DPV_VERBS_H
#define DPV_VERBS_H

#include <errno.h>

#include <rte_log.h>

#include "dpv_driver.h"
#include "dpv_host.h"
#include "dpv_obj.h"
#include "dpv_param.h"
#include "dpv_pool.h"
#include "dpverbs.h"

extern int dpv_logtype_verbs;
#define DPV_LOG(level, ...) \
	rte_log(RTE_LOG_##level, dpv_logtype_verbs, "dpverbs: " __VA_ARGS__)

/* The façade's state: configuration, parameters, driver and devices. */
struct dpv_core {
	struct dpv_conf conf;
	struct dpv_params params;
	const struct dpv_driver *drv;
	const struct dpv_verbs_ops *ops;  /* the driver's, defaults filled in */
	struct dpv_device devs[DPV_MAX_PORTS];
	unsigned int n_devs;
	pid_t pid;                   /* the process that brought it up */
};

/* Who this process is in shared mode ("mode": "shared"): an application
 * (the default: its driver is "remote", which reaches dpverbsd) or the
 * daemon itself (its driver is the configuration's, it owns the ports). Set
 * before the core comes up. */
enum dpv_role {
	DPV_ROLE_APP = 0,
	DPV_ROLE_DAEMON,
};
void dpv_core_set_role(enum dpv_role role);

/* The core, brought up on first use (configuration, driver probe); NULL with
 * errno set if it could not start. */
struct dpv_core *dpv_core_get(void);
/* The core if it is up, else NULL (no initialisation). */
struct dpv_core *dpv_core_peek(void);
/* A completion timestamp (TSC ticks, the engine's clock: in shared mode
 * the daemon's, the same counter, at the rate its HELLO answer gave) as
 * CLOCK_REALTIME nanoseconds, through a calibration point of the calling
 * thread taken again every second (the wall clock may be stepped or
 * slewed; the TSC runs on). */
uint64_t dpv_tsc_realtime_ns(uint64_t tsc);
/* The device of index i of core c, or NULL when c (NULL: not up) has none
 * of that index: the one check of a device index, the façade's and an
 * engine host's (dpv_host.c). */
static inline struct dpv_device *dpv_core_dev(struct dpv_core *c, uint32_t i)
{
	return c && i < c->n_devs ? &c->devs[i] : NULL;
}
/* Does the driver attach QPs to multicast groups (max_mcast_grp > 0)? */
bool dpv_core_has_mcast(void);
/* Does the driver run tag matching SRQs (srq_doorbell)? */
bool dpv_core_has_tm(void);
/* Does the driver have memory windows (max_mw > 0, ibv_alloc_mw)? */
bool dpv_core_has_mw(void);
/* Does the driver have raw packet QPs and steering rules (flow_create)? */
bool dpv_core_has_raw(void);
/* The verbs operations of the driver of a device (defaults filled in). */
static inline const struct dpv_verbs_ops *dpv_ops(const struct dpv_device *d)
{
	return d->ops;
}
/* Its engine services (for dpverbsd) and GSI hooks. */
static inline const struct dpv_engine_ops *dpv_dev_engine(const struct dpv_device *d)
{
	return d->engine;
}
static inline const struct dpv_gsi_ops *dpv_dev_gsi(const struct dpv_device *d)
{
	return d->gsi;
}
static inline const struct dpv_verbs_ops *ctx_ops(struct ibv_context *c)
{
	return dpv_ops(to_dctx(c)->dev);
}

/* dpv_ops_default.c */
extern const struct dpv_verbs_ops dpv_verbs_defaults;
extern const struct dpv_engine_ops dpv_engine_defaults;
extern const struct dpv_gsi_ops dpv_gsi_defaults;
/* The driver's tables with every NULL member replaced by its default. */
void dpv_ops_fill(const struct dpv_driver *drv, struct dpv_verbs_ops *verbs, struct dpv_engine_ops *engine,
		  struct dpv_gsi_ops *gsi);
/* dpv_device.c */
int dpv_dev_gid(struct dpv_device *d, uint32_t index, struct dpv_gid *gid);
int dpv_dev_gid_find(struct dpv_device *d, const uint8_t raw[16]);
/* dpv_ah.c */
int dpv_av_check(struct dpv_device *d, const struct ibv_ah_attr *av, struct dpv_gid *sgid);
/* An address vector without GRH addressed by LID, as the GRH of that host
 * in the port's IPv4 /16 (dpverbs' LIDs on RoCE); else a copy. */
void dpv_av_from_lid(struct dpv_device *d, const struct ibv_ah_attr *in, struct ibv_ah_attr *out);

int dpv_query_port_full(struct ibv_context *c, uint8_t port, struct ibv_port_attr *a);
void dpv_context_ops_init(struct dpv_context *ctx);

/* dpv_context.c: queue an async event on the context (ibv_get_async_event) */
void dpv_async_deliver(struct dpv_context *ctx, const struct ibv_async_event *ev);

/* dpv_cq.c */
int dpv_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc);
int dpv_req_notify_cq(struct ibv_cq *cq, int solicited_only);
struct ibv_cq_ex *dpv_create_cq_ex(struct ibv_context *c, struct ibv_cq_init_attr_ex *a);
/* Remove the CQEs of QP qpn not consumed yet (QP reset or destroyed). */
void dpv_cq_clean(struct dpv_cq *cq, uint32_t qpn);
/* A polled send CQE frees the SQ slots up to the WQE it names. */
void dpv_cqe_retire(const struct dpv_cqe *e);
/* Run progress for a CQ about to be polled if it looks empty: what the
 * driver's progress returned (-EIO: its engine is gone). */
int dpv_cq_progress(struct dpv_cq *cq);

/* dpv_qp.c (and dpv_qp_cap_ok, dpv_host.h) */
struct ibv_qp *dpv_create_qp_ex(struct ibv_context *c, struct ibv_qp_init_attr_ex *attr);
/* dpv_ibflow.c: ibv_create_flow / ibv_destroy_flow (verbs_context slots) */
struct ibv_flow *dpv_create_flow(struct ibv_qp *qp, struct ibv_flow_attr *attr);
int dpv_destroy_flow(struct ibv_flow *flow);
/* dpv_wq.c: receive WQs and indirection tables (verbs_context slots), and
 * the receive-side scaling of a raw packet QP created with them */
struct ibv_wq *dpv_create_wq(struct ibv_context *c, struct ibv_wq_init_attr *attr);
int dpv_modify_wq(struct ibv_wq *wq, struct ibv_wq_attr *attr);
int dpv_destroy_wq(struct ibv_wq *wq);
struct ibv_rwq_ind_table *dpv_create_rwq_ind_table(struct ibv_context *c, struct ibv_rwq_ind_table_init_attr *attr);
int dpv_destroy_rwq_ind_table(struct ibv_rwq_ind_table *t);
/* An RSS QP's configuration from its creation attributes: 0, EINVAL, EOPNOTSUPP. */
int dpv_rss_cfg_fill(struct ibv_context *c, const struct ibv_qp_init_attr_ex *a, struct dpv_rss_cfg *cfg);
/* An RSS QP holds (d 1) or lets go of (d -1) its indirection table. */
void dpv_rss_table_ref(struct ibv_rwq_ind_table *t, int d);
enum ibv_qp_state dpv_qp_state(struct dpv_qp *qp);

/* dpv_qp_state.c: is the modify (attr, mask) legal for a QP of type in
 * state cur on dev (IBA 10.3.1 and the value ranges)? 0 and *to, or EINVAL.
 * dpv_qp_attr_store (dpv_host.h) copies the attributes mask names into q. */
int dpv_qp_modify_check(enum ibv_qp_type type, struct dpv_device *dev, enum ibv_qp_state cur,
			const struct ibv_qp_attr *attr, int mask, enum ibv_qp_state *to);

/* dpv_mr.c: verbs_context.advise_mr (ibv_advise_mr) */
int dpv_advise_mr(struct ibv_pd *pd, enum ibv_advise_mr_advice advice, uint32_t flags, struct ibv_sge *sg_list,
		  uint32_t num_sge);
/* dpv_dm.c: the verbs_context slots of device memory */
void dpv_dm_ops_init(struct verbs_context *v);
/* dpv_mr.c: ibv_reg_dm_mr once its arguments are checked */
struct ibv_mr *dpv_mr_reg_dm(struct ibv_pd *ibpd, struct dpv_dm *dm, uint64_t dm_offset, size_t length,
			     unsigned int acc);

/* dpv_post.c */
int dpv_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad);
/* ibv_bind_mw's work request: dpv_post_send of one IBV_WR_BIND_MW, which
 * may name a type 1 window (ibv_post_send refuses those). */
int dpv_post_bind_mw(struct ibv_qp *qp, struct ibv_send_wr *wr);
/* dpv_post_send for the WRs ibv_wr_complete posts: also DPV_WR_FLUSH, its
 * length, type and level in wr.atomic (compare_add; swap: type | level << 8). */
int dpv_post_send_ext(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad);
int dpv_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);
int dpv_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);
uint32_t dpv_sge_total(const struct ibv_sge *sge, uint32_t n);

/* dpv_mw.c: the context->ops slots of memory windows */
struct ibv_mw *dpv_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type);
int dpv_dealloc_mw(struct ibv_mw *mw);
int dpv_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mw_bind *bind);

/* dpv_qpex.c */
uint64_t dpv_qpex_supported_ops(enum ibv_qp_type t);
int dpv_qpex_init(struct dpv_qp *qp, uint64_t ops, struct dpv_bufs *bs);

/* dpv_pd.c, dpv_td.c */
struct ibv_pd *dpv_alloc_parent_domain(struct ibv_context *c, struct ibv_parent_domain_init_attr *a);
struct ibv_td *dpv_alloc_td(struct ibv_context *c, struct ibv_td_init_attr *a);
int dpv_dealloc_td(struct ibv_td *td);

/* dpv_srq.c */
struct ibv_srq *dpv_create_srq_ex(struct ibv_context *c, struct ibv_srq_init_attr_ex *a);
int dpv_get_srq_num(struct ibv_srq *srq, uint32_t *srq_num);
/* dpv_srq_tm.c: tag matching SRQs */
bool dpv_srq_tm_attr_ok(struct ibv_context *c, const struct ibv_srq_init_attr_ex *a);
int dpv_post_srq_ops(struct ibv_srq *srq, struct ibv_ops_wr *wr, struct ibv_ops_wr **bad);
void dpv_tm_caps(struct ibv_tm_caps *caps);
/* A polled DPV_CQE_F_TM_FREE completion: its tag's handle is free again. */
void dpv_tm_cqe_free(const struct dpv_cqe *e);

/* dpv_import.c: embedded mode's ibv_import_device within the process (the
 * context whose stand-in cmd_fd, a memfd, has the inode of fd): 0 with *d
 * its device and ctx marked imported, or -EBADF. */
int dpv_import_local_ctx(struct dpv_core *core, int fd, struct dpv_context *ctx, struct dpv_device **d);

/* dpv_import.c: embedded mode: the context of this process ctx was
 * imported from, returned with its device's ctx_lock held (release it with
 * rte_spinlock_unlock(&src->dev->ctx_lock)); NULL with *err EINVAL (ctx
 * was not imported) or ENOENT (that context is closed). */
struct dpv_context *dpv_import_src_lock(struct dpv_context *ctx, int *err);

/* dpv_xrcd.c */
struct ibv_xrcd *dpv_open_xrcd(struct ibv_context *c, struct ibv_xrcd_init_attr *a);
int dpv_close_xrcd(struct ibv_xrcd *x);
struct ibv_qp *dpv_open_qp(struct ibv_context *c, struct ibv_qp_open_attr *a);
/* An ibv_open_qp handle goes (ibv_destroy_qp): the QP stays. */
void dpv_open_qp_close(struct dpv_qp *h);
/* ibv_query_qp / ibv_modify_qp of a handle on another process' QP (shared
 * mode: the daemon's QP by number). 0 or an errno value. */
int dpv_open_qp_query(struct dpv_qp *h, struct ibv_qp_attr *attr, struct ibv_qp_init_attr *init_attr);
int dpv_open_qp_modify(struct dpv_qp *h, struct ibv_qp_attr *attr, int mask);
/* An XRC target QP's attributes where other processes' handles may change
 * them (shared mode): qp->attr and qp->state refreshed from the driver;
 * false where the façade's own are the QP's. *handles: ibv_open_qp handles
 * on it, every process'. Caller holds qp->lock (or is destroying it). */
bool dpv_xrc_attr_refresh(struct dpv_qp *qp, uint32_t *handles);
/* A QP event for the ibv_open_qp handles of this process on the real QP
 * (embedded mode: the façade's own table), each with its own pointer. */
void dpv_xrc_qp_event(struct dpv_qp *real, const struct ibv_async_event *ev);


#endif /* DPV_VERBS_H */
