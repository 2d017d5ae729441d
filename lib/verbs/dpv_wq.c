/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Receive work queues and indirection tables (ibv_create_wq,
 * ibv_create_rwq_ind_table): the receive side of raw packet QPs with
 * receive-side scaling. A WQ is a raw packet QP of its own that only
 * receives (its RQ is the WQ's ring, its receive CQ the WQ's CQ, wq_num its
 * QP number, which completions carry); "ready" is that QP in RTR. An
 * indirection table lists 2^n WQs; a raw packet QP created with it and a
 * Toeplitz hash configuration (IBV_QP_INIT_ATTR_RX_HASH) has no queues:
 * the frames its steering rules take go to the WQ the hash picks
 * (drivers/sw/sw_raw.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dpv_verbs.h"

struct dpv_wq {
	struct ibv_wq ib;
	struct ibv_qp *qp;           /* the receive-only raw packet QP */
	_Atomic int users;           /* indirection tables that list it */
};

struct dpv_ind_tbl {
	struct ibv_rwq_ind_table ib;
	_Atomic int users;           /* RSS QPs created with it */
	uint32_t n;
	struct dpv_wq *wq[];
};

static int wq_post_recv(struct ibv_wq *ib, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	return dpv_post_recv(container_of(ib, struct dpv_wq, ib)->qp, wr, bad);
}

/**
 * create_wq (ibv_create_wq): an IBV_WQT_RQ of max_wr receive WRs of max_sge
 * SGEs on pd, completing into cq. NULL with errno: EINVAL (NULL or foreign
 * objects, comp_mask or create_flags, capabilities above the limits),
 * EOPNOTSUPP (another WQ type; a driver without raw packet QPs), ENOMEM.
 */
struct ibv_wq *dpv_create_wq(struct ibv_context *c, struct ibv_wq_init_attr *a)
{
	if (!c || !a || !a->pd || !a->cq || a->pd->context != c || a->cq->context != c || a->comp_mask ||
	    a->create_flags) {
		errno = EINVAL;
		return NULL;
	}
	if (a->wq_type != IBV_WQT_RQ || !dpv_core_has_raw()) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	struct dpv_wq *wq = calloc(1, sizeof(*wq));
	if (!wq) {
		errno = ENOMEM;
		return NULL;
	}
	struct ibv_qp_init_attr_ex qa = {
		.qp_type = IBV_QPT_RAW_PACKET, .send_cq = a->cq, .recv_cq = a->cq, .pd = a->pd,
		.comp_mask = IBV_QP_INIT_ATTR_PD,
		.cap = {.max_send_wr = 1, .max_send_sge = 1, .max_recv_wr = a->max_wr, .max_recv_sge = a->max_sge},
	};
	wq->qp = dpv_create_qp_ex(c, &qa);
	if (!wq->qp) {
		int e = errno;
		free(wq);
		errno = e;
		return NULL;
	}
	a->max_wr = qa.cap.max_recv_wr;
	a->max_sge = qa.cap.max_recv_sge;
	wq->ib.context = c;
	wq->ib.pd = a->pd;
	wq->ib.cq = a->cq;
	wq->ib.wq_num = wq->qp->qp_num;
	wq->ib.handle = wq->qp->qp_num;
	wq->ib.state = IBV_WQS_RESET;
	wq->ib.wq_type = IBV_WQT_RQ;
	wq->ib.post_recv = wq_post_recv;
	return &wq->ib;
}

/* The WQ's QP from RESET to RTR (ready), or to RESET / ERR. */
static int wq_to(struct dpv_wq *wq, enum ibv_wq_state to)
{
	struct ibv_qp_attr qa = {.port_num = DPV_PORT_NUM};
	int r = 0;
	if (to == IBV_WQS_RDY) {
		if (wq->ib.state == IBV_WQS_RDY)
			return 0;
		if (wq->ib.state == IBV_WQS_ERR) {
			qa.qp_state = IBV_QPS_RESET;
			if ((r = ibv_modify_qp(wq->qp, &qa, IBV_QP_STATE)) != 0)
				return r;
		}
		qa.qp_state = IBV_QPS_INIT;
		if ((r = ibv_modify_qp(wq->qp, &qa, IBV_QP_STATE | IBV_QP_PORT)) != 0)
			return r;
		qa.qp_state = IBV_QPS_RTR;
		return ibv_modify_qp(wq->qp, &qa, IBV_QP_STATE);
	}
	qa.qp_state = to == IBV_WQS_RESET ? IBV_QPS_RESET : IBV_QPS_ERR;
	return ibv_modify_qp(wq->qp, &qa, IBV_QP_STATE);
}

/**
 * modify_wq (ibv_modify_wq): IBV_WQ_ATTR_STATE to RESET, RDY or ERR
 * (IBV_WQ_ATTR_CURR_STATE must then be the current state). 0, EINVAL
 * (unknown mask bits, a state out of range, a wrong current state),
 * EOPNOTSUPP (IBV_WQ_ATTR_FLAGS).
 */
int dpv_modify_wq(struct ibv_wq *ib, struct ibv_wq_attr *a)
{
	if (!ib || !a || (a->attr_mask & ~(uint32_t)(IBV_WQ_ATTR_STATE | IBV_WQ_ATTR_CURR_STATE | IBV_WQ_ATTR_FLAGS)))
		return EINVAL;
	if (a->attr_mask & IBV_WQ_ATTR_FLAGS)
		return EOPNOTSUPP; /* no WQ flags (CVLAN stripping, scatter FCS, ...) */
	struct dpv_wq *wq = container_of(ib, struct dpv_wq, ib);
	if ((a->attr_mask & IBV_WQ_ATTR_CURR_STATE) && a->curr_wq_state != ib->state)
		return EINVAL;
	if (!(a->attr_mask & IBV_WQ_ATTR_STATE))
		return 0;
	if (a->wq_state > IBV_WQS_ERR)
		return EINVAL;
	int r = wq_to(wq, a->wq_state);
	if (!r)
		ib->state = a->wq_state;
	return r;
}

/** destroy_wq (ibv_destroy_wq): 0, EINVAL (NULL), EBUSY (an indirection table lists it). */
int dpv_destroy_wq(struct ibv_wq *ib)
{
	if (!ib)
		return EINVAL;
	struct dpv_wq *wq = container_of(ib, struct dpv_wq, ib);
	if (atomic_load(&wq->users) > 0)
		return EBUSY;
	int r = ibv_destroy_qp(wq->qp);
	if (r)
		return r;
	pthread_mutex_destroy(&ib->mutex);
	pthread_cond_destroy(&ib->cond);
	free(wq);
	return 0;
}

/**
 * create_rwq_ind_table (ibv_create_rwq_ind_table): 2^log_ind_tbl_size WQs
 * of this context. NULL with errno: EINVAL (NULL arguments, comp_mask, a
 * size above DPV_RSS_TABLE_MAX, a NULL or foreign WQ), ENOMEM.
 */
struct ibv_rwq_ind_table *dpv_create_rwq_ind_table(struct ibv_context *c, struct ibv_rwq_ind_table_init_attr *a)
{
	if (!c || !a || !a->ind_tbl || a->comp_mask || a->log_ind_tbl_size > 8) {
		errno = EINVAL;
		return NULL;
	}
	uint32_t n = 1u << a->log_ind_tbl_size;
	for (uint32_t i = 0; i < n; i++)
		if (!a->ind_tbl[i] || a->ind_tbl[i]->context != c || a->ind_tbl[i]->wq_type != IBV_WQT_RQ) {
			errno = EINVAL;
			return NULL;
		}
	struct dpv_ind_tbl *t = calloc(1, sizeof(*t) + n * sizeof(t->wq[0]));
	if (!t) {
		errno = ENOMEM;
		return NULL;
	}
	static _Atomic int next_num;
	t->n = n;
	for (uint32_t i = 0; i < n; i++) {
		t->wq[i] = container_of(a->ind_tbl[i], struct dpv_wq, ib);
		atomic_fetch_add(&t->wq[i]->users, 1);
	}
	t->ib.context = c;
	t->ib.ind_tbl_num = t->ib.ind_tbl_handle = atomic_fetch_add(&next_num, 1) + 1;
	return &t->ib;
}

/** destroy_rwq_ind_table: 0, EINVAL (NULL), EBUSY (an RSS QP uses it). */
int dpv_destroy_rwq_ind_table(struct ibv_rwq_ind_table *ib)
{
	if (!ib)
		return EINVAL;
	struct dpv_ind_tbl *t = container_of(ib, struct dpv_ind_tbl, ib);
	if (atomic_load(&t->users) > 0)
		return EBUSY;
	for (uint32_t i = 0; i < t->n; i++)
		atomic_fetch_sub(&t->wq[i]->users, 1);
	free(t);
	return 0;
}

int dpv_rss_cfg_fill(struct ibv_context *c, const struct ibv_qp_init_attr_ex *a, struct dpv_rss_cfg *cfg)
{
	const struct ibv_rx_hash_conf *h = &a->rx_hash_conf;
	uint64_t known = IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_DST_IPV4 | IBV_RX_HASH_SRC_IPV6 | IBV_RX_HASH_DST_IPV6 |
			 IBV_RX_HASH_SRC_PORT_TCP | IBV_RX_HASH_DST_PORT_TCP | IBV_RX_HASH_SRC_PORT_UDP |
			 IBV_RX_HASH_DST_PORT_UDP;
	if (!(a->comp_mask & IBV_QP_INIT_ATTR_IND_TABLE) || !(a->comp_mask & IBV_QP_INIT_ATTR_RX_HASH) ||
	    !a->rwq_ind_tbl || a->rwq_ind_tbl->context != c)
		return EINVAL;
	if (h->rx_hash_function != IBV_RX_HASH_FUNC_TOEPLITZ || (h->rx_hash_fields_mask & ~known))
		return EOPNOTSUPP; /* Toeplitz only; no inner headers, no IPsec SPI */
	if (h->rx_hash_key_len != DPV_RSS_KEY_LEN || !h->rx_hash_key)
		return EINVAL;
	const struct dpv_ind_tbl *t = container_of(a->rwq_ind_tbl, struct dpv_ind_tbl, ib);
	memset(cfg, 0, sizeof(*cfg));
	memcpy(cfg->key, h->rx_hash_key, DPV_RSS_KEY_LEN);
	cfg->fields = h->rx_hash_fields_mask;
	cfg->n = t->n;
	for (uint32_t i = 0; i < t->n; i++)
		cfg->wqn[i] = t->wq[i]->ib.wq_num;
	return 0;
}

void dpv_rss_table_ref(struct ibv_rwq_ind_table *ib, int d)
{
	atomic_fetch_add(&container_of(ib, struct dpv_ind_tbl, ib)->users, d);
}
