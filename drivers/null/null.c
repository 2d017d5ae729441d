/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The null driver: devices without a network. Every send work request
 * completes at once (as if the wire swallowed it), receives wait until the
 * QP is flushed, and nothing needs EAL, hugepages or ports. It proves the
 * façade/driver interface (a second implementation of every op) and lets
 * the façade be tested alone: DPVERBS_DRIVER=null or "driver": "null".
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rte_cycles.h>

#include "dpv_driver.h"

struct null_dev {
	const struct dpv_conf_port *port;
};

struct null_cq {
	uint32_t handle;
	struct dpv_ring_hdr *ring;
	rte_spinlock_t lock;
	bool err;                 /* overran: in error, nothing more is written */
	bool ignore_overrun;      /* IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN */
};

struct null_qp {
	uint32_t qpn;
	enum ibv_qp_type type;
	_Atomic int state;
	rte_spinlock_t lock;
	struct dpv_ring_hdr *sq, *rq;
	uint32_t sq_ci, rq_ci;
	struct null_cq *scq, *rcq;
	uint64_t sent;
};

static struct null_dev g_devs[DPV_MAX_PORTS];

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Completion timestamps are TSC ticks as with the other drivers; without
 * EAL nobody measured the TSC's rate: 2 ms against CLOCK_MONOTONIC. */
static void tsc_calibrate(void)
{
	if (dpv_tsc_hz())
		return;
	uint64_t n0 = now_ns(), c0 = rte_get_tsc_cycles(), n1;
	while ((n1 = now_ns()) - n0 < 2000000)
		;
	uint64_t c1 = rte_get_tsc_cycles();
	dpv_core_set_tsc_hz((c1 - c0) * 1000000000ull / (n1 - n0));
}

static int null_probe(const struct dpv_conf *conf, struct dpv_dev_info *devs, unsigned int max)
{
	unsigned int n = RTE_MIN(conf->n_ports, max);
	tsc_calibrate();
	for (unsigned int i = 0; i < n; i++) {
		const struct dpv_conf_port *cp = &conf->ports[i];
		g_devs[i].port = cp;
		snprintf(devs[i].name, sizeof(devs[i].name), "%s", cp->name);
		static const uint8_t def[6] = {0x02, 0x64, 0x70, 0x76, 0xff, 0x00};
		memcpy(devs[i].mac, cp->mac_set ? cp->mac : def, 6);
		if (!cp->mac_set)
			devs[i].mac[5] = (uint8_t)i;
		devs[i].drv = &g_devs[i];
	}
	return (int)n;
}

static int null_query_port(void *d, struct ibv_port_attr *a)
{
	a->state = IBV_PORT_ACTIVE;
	a->phys_state = 5; /* LinkUp */
	a->max_mtu = IBV_MTU_4096;
	a->active_mtu = IBV_MTU_1024;
	a->active_speed = 8;
	a->active_width = 1;
	return 0;
}

/* GID 0 link-local from the MAC's EUI-64, GID 1 the port's IPv4 address. */
static int null_query_gid(void *d, uint32_t index, struct dpv_gid *g)
{
	const struct dpv_conf_port *cp = ((struct null_dev *)d)->port;
	memset(g, 0, sizeof(*g));
	if (index >= DPV_GID_TABLE_LEN)
		return -EINVAL;
	if (index == 0) {
		g->raw[0] = 0xfe;
		g->raw[1] = 0x80;
		g->raw[8] = (uint8_t)(cp->mac[0] ^ 2);
		g->raw[9] = cp->mac[1];
		g->raw[10] = cp->mac[2];
		g->raw[11] = 0xff;
		g->raw[12] = 0xfe;
		memcpy(&g->raw[13], &cp->mac[3], 3);
		g->valid = true;
		g->ip_ver = 6;
	} else if (index == 1 && cp->ipv4.s_addr) {
		g->raw[10] = g->raw[11] = 0xff;
		memcpy(&g->raw[12], &cp->ipv4, 4);
		g->valid = true;
		g->ip_ver = 4;
	}
	return 0;
}

static void *null_create_cq(void *dev, const struct dpv_cq_cfg *cfg)
{
	struct null_cq *cq = calloc(1, sizeof(*cq));
	if (!cq) {
		errno = ENOMEM;
		return NULL;
	}
	cq->handle = cfg->handle;
	cq->ring = cfg->ring;
	cq->ignore_overrun = cfg->ignore_overrun;
	rte_spinlock_init(&cq->lock);
	return cq;
}

static void null_destroy(void *p)
{
	free(p);
}

static int null_resize_cq(void *p, struct dpv_ring_hdr *ring, uint32_t size)
{
	struct null_cq *cq = p;
	rte_spinlock_lock(&cq->lock);
	struct dpv_ring_hdr *old = cq->ring;
	uint32_t ci = atomic_load(&old->ci), n = atomic_load(&old->pi) - ci;
	if (n > size - 1) {
		rte_spinlock_unlock(&cq->lock);
		return -EINVAL;
	}
	for (uint32_t i = 0; i < n; i++)
		memcpy(dpv_ring_entry(ring, i), dpv_ring_entry(old, ci + i), sizeof(struct dpv_cqe));
	atomic_store(&ring->arm, atomic_load(&old->arm));
	if (cq->err)
		atomic_store(&ring->flags, DPV_RING_F_OVERRUN | DPV_RING_F_ERROR);
	atomic_store_explicit(&ring->pi, n, memory_order_release);
	cq->ring = ring;
	rte_spinlock_unlock(&cq->lock);
	return 0;
}

/* As the sw driver's (drivers/sw/sw_cq.c): a CQE that does not fit puts
 * the CQ in error (IBV_EVENT_CQ_ERR, once; nothing more is written), unless
 * the CQ ignores overruns (the CQE is lost). false: the CQ is in error, the
 * QP whose CQE it was goes to ERR (here only that QP: the null driver keeps
 * no list of a CQ's QPs). */
static bool cq_push(struct null_cq *cq, const struct dpv_cqe *e)
{
	rte_spinlock_lock(&cq->lock);
	bool was = cq->err;
	int r = was ? -1 : dpv_cq_ring_put(cq->ring, cq->ring->size, e, rte_get_tsc_cycles());
	if (r < 0 && !cq->ignore_overrun) {
		cq->err = true;
		atomic_fetch_or(&cq->ring->flags, DPV_RING_F_ERROR);
	}
	rte_spinlock_unlock(&cq->lock);
	if (r < 0 && !was && !cq->ignore_overrun)
		dpv_event_async(NULL, IBV_EVENT_CQ_ERR, cq->handle);
	if (r > 0)
		dpv_event_comp(cq->handle);
	return r >= 0 || cq->ignore_overrun;
}

static void *null_create_srq(void *dev, const struct dpv_srq_cfg *cfg)
{
	return calloc(1, 1); /* the WQEs wait in the ring: nothing arrives */
}

static void *null_create_qp(const struct dpv_qp_cfg *cfg)
{
	struct null_qp *qp = calloc(1, sizeof(*qp));
	if (!qp) {
		errno = ENOMEM;
		return NULL;
	}
	qp->qpn = cfg->qpn;
	qp->type = cfg->type;
	qp->sq = cfg->sq;
	qp->rq = cfg->rq;
	qp->scq = cfg->scq;
	qp->rcq = cfg->rcq;
	rte_spinlock_init(&qp->lock);
	return qp;
}

static void flush_rq(struct null_qp *qp);

/* Complete what is posted: success in RTS, flushed in ERR/SQE, nothing in
 * the other states; a send CQ in error moves the QP to ERR with
 * IBV_EVENT_QP_FATAL and the rest is flushed. Must hold qp->lock. */
static void run_sq(struct null_qp *qp)
{
	enum ibv_qp_state st = (enum ibv_qp_state)atomic_load(&qp->state);
	uint32_t pi = atomic_load_explicit(&qp->sq->pi, memory_order_acquire);
	bool fatal = false;
	if (st != IBV_QPS_RTS && st != IBV_QPS_ERR && st != IBV_QPS_SQE)
		return;
	for (; qp->sq_ci != pi; qp->sq_ci++) {
		struct dpv_send_wqe *w = dpv_ring_entry(qp->sq, qp->sq_ci);
		bool ok = st == IBV_QPS_RTS;
		if (ok && !(w->flags & DPV_WQE_F_SIGNALED)) {
			qp->sent++;
			continue;
		}
		struct dpv_cqe e = {.wr_id = w->wr_id, .status = ok ? IBV_WC_SUCCESS : IBV_WC_WR_FLUSH_ERR,
				    .opcode = (uint8_t)dpv_wc_opcode(w->opcode), .qp_num = qp->qpn,
				    .byte_len = ok ? w->length : 0, .flags = DPV_CQE_F_SQ, .wqe_index = qp->sq_ci};
		if (ok && (w->opcode == IBV_WR_ATOMIC_CMP_AND_SWP || w->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD))
			e.byte_len = 8;
		qp->sent += ok;
		if (!cq_push(qp->scq, &e) && st != IBV_QPS_ERR) {
			st = IBV_QPS_ERR; /* the send CQ overran */
			atomic_store(&qp->state, (int)st);
			fatal = true;
		}
	}
	if (fatal) {
		flush_rq(qp);
		dpv_event_async(NULL, IBV_EVENT_QP_FATAL, qp->qpn);
	}
}

static void flush_rq(struct null_qp *qp)
{
	if (!qp->rq)
		return;
	uint32_t pi = atomic_load_explicit(&qp->rq->pi, memory_order_acquire);
	for (; qp->rq_ci != pi; qp->rq_ci++) {
		struct dpv_recv_wqe *w = dpv_ring_entry(qp->rq, qp->rq_ci);
		struct dpv_cqe e = {.wr_id = w->wr_id, .status = IBV_WC_WR_FLUSH_ERR, .opcode = IBV_WC_RECV,
				    .qp_num = qp->qpn};
		cq_push(qp->rcq, &e);
	}
	atomic_store_explicit(&qp->rq->ci, qp->rq_ci, memory_order_release);
}

static int null_modify_qp(void *p, const struct ibv_qp_attr *attr, int mask, enum ibv_qp_state cur,
			  enum ibv_qp_state to)
{
	struct null_qp *qp = p;
	rte_spinlock_lock(&qp->lock);
	if ((enum ibv_qp_state)atomic_load(&qp->state) != cur) {
		rte_spinlock_unlock(&qp->lock);
		return -EINVAL;
	}
	atomic_store(&qp->state, (int)to);
	if (to == IBV_QPS_RESET)
		qp->sq_ci = qp->rq_ci = 0;
	if (to == IBV_QPS_ERR || to == IBV_QPS_RTS)
		if (qp->sq)
			run_sq(qp);
	if (to == IBV_QPS_ERR)
		flush_rq(qp);
	rte_spinlock_unlock(&qp->lock);
	return 0;
}

static enum ibv_qp_state null_query_qp_state(void *p)
{
	return (enum ibv_qp_state)atomic_load(&((struct null_qp *)p)->state);
}

static void null_query_qp_counters(void *p, uint64_t *cnt, unsigned int n)
{
	memset(cnt, 0, n * sizeof(*cnt));
	if (n > DPV_CNT_SENT_PKTS)
		cnt[DPV_CNT_SENT_PKTS] = ((struct null_qp *)p)->sent;
}

static void null_sq_doorbell(void *p)
{
	struct null_qp *qp = p;
	rte_spinlock_lock(&qp->lock);
	run_sq(qp);
	rte_spinlock_unlock(&qp->lock);
}

static void null_rq_doorbell(void *p)
{
	struct null_qp *qp = p;
	rte_spinlock_lock(&qp->lock);
	if (atomic_load(&qp->state) == IBV_QPS_ERR)
		flush_rq(qp);
	rte_spinlock_unlock(&qp->lock);
}

static bool null_fork_safe(void)
{
	return true; /* no EAL, nothing shared: a child's objects are its own */
}

static const struct dpv_verbs_ops null_verbs_ops = {
	.create_cq = null_create_cq,
	.create_qp = null_create_qp,
	.create_srq = null_create_srq,
	.destroy_cq = null_destroy,
	.destroy_qp = null_destroy,
	.destroy_srq = null_destroy,
	.fork_safe = null_fork_safe,
	.modify_qp = null_modify_qp,
	.query_gid = null_query_gid,
	.query_port = null_query_port,
	.query_qp_counters = null_query_qp_counters,
	.query_qp_state = null_query_qp_state,
	.resize_cq = null_resize_cq,
	.rq_doorbell = null_rq_doorbell,
	.sq_doorbell = null_sq_doorbell,
};

DPV_DRIVER_REGISTER(null, null_probe, &null_verbs_ops, NULL, NULL);
