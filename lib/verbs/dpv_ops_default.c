/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The defaults of the driver tables: what the façade calls for an
 * operation a driver leaves NULL, so that no dispatcher meets a NULL (as
 * rdma-core's dummy ops: EOPNOTSUPP, or nothing to do). Each table is
 * initialised positionally, in the order of its struct, so that a member
 * added to the struct without a default here is a compile error
 * (-Wmissing-field-initializers, made an error below), and a default of the
 * wrong type too. Keep them in the order of dpv_driver.h.
 */
#include <assert.h>
#include <errno.h>
#include <string.h>

#include "dpv_verbs.h"

#pragma GCC diagnostic error "-Wmissing-field-initializers"
#pragma GCC diagnostic error "-Wincompatible-pointer-types"

/* ---- struct dpv_verbs_ops ---- */

static int alloc_dm(void *dev, uint32_t ctx, uint64_t length, uint32_t log_align, struct dpv_dm_desc *dm)
{
	return -EOPNOTSUPP;
}
static int alloc_mw(void *dev, const struct dpv_mw_desc *mw) { return -EOPNOTSUPP; }
static int alloc_pd(void *dev, uint32_t pdn) { return 0; }
static void close_qp(void *qp) {}
static int create_ah(void *dev, const struct dpv_ah_desc *ah) { return 0; }
static void *create_cq(void *dev, const struct dpv_cq_cfg *cfg) { errno = EOPNOTSUPP; return NULL; }
static void *create_qp(const struct dpv_qp_cfg *cfg) { errno = EOPNOTSUPP; return NULL; }
static void *create_srq(void *dev, const struct dpv_srq_cfg *cfg) { errno = EOPNOTSUPP; return NULL; }
static void *create_td(void *dev) { return (void *)1; }
static void ctx_close(void *dev, uint32_t ctx) {}
static int ctx_import(int cmd_fd, unsigned int *dev_index, int async_wfd, int *new_cmd_fd) { return -EOPNOTSUPP; }
static int ctx_open(void *dev, int async_wfd, int *cmd_fd) { *cmd_fd = -1; return 1; }
static void dealloc_mw(void *dev, uint32_t key) {}
static void dealloc_pd(void *dev, uint32_t pdn) {}
static int dereg_mr(void *dev, uint32_t key, bool force) { return 0; }
static void destroy_ah(void *dev, uint32_t handle) {}
static void destroy_obj(void *o) {}
static int destroy_td(void *td) { return 0; }
static int flow_create(void *qp, const struct dpv_raw_rule *rule, uint32_t *handle) { return -EOPNOTSUPP; }
static int flow_destroy(void *qp, uint32_t handle) { return -EOPNOTSUPP; }
static bool no(void) { return false; }
static int free_dm(void *dev, const struct dpv_dm_desc *dm) { return 0; }
static int import_dm(void *dev, uint32_t ctx, uint32_t handle, struct dpv_dm_desc *dm) { return -EOPNOTSUPP; }
static int import_mr(void *dev, uint32_t ctx, uint32_t index, struct dpv_mr_desc *mr) { return -EOPNOTSUPP; }
static int import_pd(void *dev, uint32_t ctx, uint32_t pdn) { return -EOPNOTSUPP; }
static int mcast(void *qp, const uint8_t *gid) { return -EOPNOTSUPP; }
static int modify_qp(void *qp, const struct ibv_qp_attr *a, int mask, enum ibv_qp_state cur,
		     enum ibv_qp_state to) { return -EOPNOTSUPP; }
static int neigh_query(void *dev, const uint8_t ip[16], uint8_t mac[6]) { return -EOPNOTSUPP; }
static void *open_qp(void *dev, uint32_t ctx, uint32_t xrcd, uint32_t qpn, uint64_t cookie)
{
	errno = EOPNOTSUPP;
	return NULL;
}
static int progress(void *cq) { return 0; }
static int query_gid(void *dev, uint32_t index, struct dpv_gid *g)
{
	memset(g, 0, sizeof(*g));
	return index < DPV_GID_TABLE_LEN ? 0 : -EINVAL;
}
static int query_port(void *dev, struct ibv_port_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->state = IBV_PORT_DOWN;
	return 0;
}
static int query_qp_attr(void *qp, struct ibv_qp_attr *a, bool *sq_sig_all, uint32_t *handles)
{
	return -EOPNOTSUPP;
}
static void query_qp_counters(void *qp, uint64_t *cnt, unsigned int n) { memset(cnt, 0, n * sizeof(*cnt)); }
static enum ibv_qp_state query_qp_state(void *qp) { return IBV_QPS_ERR; }
static void *queue_alloc(void *dev, size_t size, size_t align) { return NULL; }
static void queue_free(void *dev, void *p) {}
static int reg_mr(void *dev, const struct dpv_mr_desc *mr) { return 0; }
static int resize_cq(void *cq, struct dpv_ring_hdr *ring, uint32_t size) { return -EOPNOTSUPP; }
static void doorbell(void *qp) {}
static int shpd_alloc(void *dev, uint32_t pdn, uint64_t key, uint64_t *id) { return -EOPNOTSUPP; }
static int shpd_share(void *dev, uint64_t id, uint64_t key, uint32_t *pdn) { return -EOPNOTSUPP; }
static void xrcd_close(void *dev, uint32_t num) {}
static int xrcd_open(void *dev, int fd, int oflags, uint32_t *num) { return -EOPNOTSUPP; }

const struct dpv_verbs_ops dpv_verbs_defaults = {
	alloc_dm,
	alloc_mw,
	alloc_pd,
	close_qp,
	create_ah,
	create_cq,
	create_qp,
	create_srq,
	create_td,
	ctx_close,
	ctx_import,
	ctx_open,
	dealloc_mw,
	dealloc_pd,
	dereg_mr,
	destroy_ah,
	destroy_obj,            /* destroy_cq */
	destroy_obj,            /* destroy_qp */
	destroy_obj,            /* destroy_srq */
	destroy_td,
	flow_create,
	flow_destroy,
	no,                     /* fork_safe */
	free_dm,
	import_dm,
	import_mr,
	import_pd,
	mcast,                  /* mcast_attach */
	mcast,                  /* mcast_detach */
	NULL,                   /* mem_alloc: optional */
	NULL,                   /* mem_free: optional */
	NULL,                   /* mem_is_huge: optional */
	modify_qp,
	neigh_query,
	open_qp,
	progress,
	NULL,                   /* progress_blocking: optional */
	no,                     /* progress_is_background */
	query_gid,
	query_port,
	query_qp_attr,
	query_qp_counters,
	query_qp_state,
	queue_alloc,
	queue_free,
	reg_mr,
	resize_cq,
	no,                     /* rings_queue_only */
	doorbell,               /* rq_doorbell */
	shpd_alloc,
	shpd_share,
	doorbell,               /* sq_doorbell */
	doorbell,               /* srq_doorbell */
	xrcd_close,
	xrcd_open,
};

/* ---- struct dpv_engine_ops: a driver that runs no engine in the process
 * (null, remote): dpverbsd then serves its devices with no doorbell rings
 * and no QP 1 demultiplexer (the null driver's daemon tests dpverbsd's life
 * cycle without ports) ---- */

static unsigned int db_count(void *dev) { return 0; }
static void *db_attach(void *dev, unsigned int index, struct dpv_db_ring *ring, uint32_t size, uint32_t owner)
{
	errno = EOPNOTSUPP;
	return NULL;
}
static void db_detach(void *db) {}
static unsigned int qp_db_index(void *qp) { return 0; }
static void db_sync(void *dev) {}
static void gsi_demux(dpv_gsi_demux_fn fn, dpv_gsi_tx_fn tx, void *arg) {}

const struct dpv_engine_ops dpv_engine_defaults = {
	db_count,
	db_attach,
	db_detach,
	qp_db_index,
	db_sync,
	gsi_demux,
};

/* ---- struct dpv_gsi_ops: the QP is the port's own GSI QP ---- */

static void gsi_comm_ids(void *qp, uint32_t *prefix, uint32_t *mask) { *prefix = *mask = 0; }
static int gsi_listen(void *qp, uint64_t service_id, bool on) { return 0; }

const struct dpv_gsi_ops dpv_gsi_defaults = {
	gsi_comm_ids,
	gsi_listen,
};

/* Every member of these tables is a function pointer: a NULL one of the
 * driver's is replaced by the default's, member by member. */
typedef void (*ops_fn)(void);
static_assert(sizeof(struct dpv_verbs_ops) % sizeof(ops_fn) == 0, "function pointers only");
static_assert(sizeof(struct dpv_engine_ops) % sizeof(ops_fn) == 0, "function pointers only");
static_assert(sizeof(struct dpv_gsi_ops) % sizeof(ops_fn) == 0, "function pointers only");

static void fill(void *dst, const void *drv, const void *def, size_t size)
{
	memcpy(dst, drv ? drv : def, size);
	for (size_t off = 0; off < size; off += sizeof(ops_fn)) {
		ops_fn f;
		memcpy(&f, (char *)dst + off, sizeof(f));
		if (!f)
			memcpy((char *)dst + off, (const char *)def + off, sizeof(f));
	}
}

void dpv_ops_fill(const struct dpv_driver *drv, struct dpv_verbs_ops *verbs, struct dpv_engine_ops *engine,
		  struct dpv_gsi_ops *gsi)
{
	fill(verbs, drv->verbs, &dpv_verbs_defaults, sizeof(*verbs));
	fill(engine, drv->engine, &dpv_engine_defaults, sizeof(*engine));
	fill(gsi, drv->gsi, &dpv_gsi_defaults, sizeof(*gsi));
}
