/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * The QP attributes of a connected (RC) id once the CM has a connection:
 * what rdma_init_qp_attr gives for INIT, RTR and RTS, and the transitions
 * the library itself makes (rdma_accept, the REP on the active side), as
 * Linux's ib_cm_init_qp_attr and rdma_init_qp_attr compute them:
 *  - INIT: P_Key index, port, remote write, plus remote read and atomic
 *    when the connection has responder resources;
 *  - RTR: the path (GRH to the peer's GID from the id's source GID), path
 *    MTU, the peer's QPN, the receive PSN, responder resources;
 *  - RTS: the send PSN, the local ACK timeout (Linux's ib_cm av.timeout:
 *    the REQ's primary local ACK timeout on the passive side; on the active
 *    side the path's packet life time + 1, then recomputed from the REP's
 *    target ACK delay; RDMA_OPTION_ID_ACK_TIMEOUT replaces it), retry and
 *    RNR retry counts, initiator depth.
 * The states in which each is valid are ib_cm's (EINVAL otherwise); XRC
 * QPs get ib_cm's subsets (the initiator no responder attributes in RTR,
 * the target only SQ PSN and timeout in RTS).
 * min_rnr_timer is 0 (655.36 ms), as Linux's cm_init_qp_rtr_attr gives
 * it: rdma-core's pyverbs rdma_cm test with an external QP answers before
 * its peer has posted the receive and relies on that wait (with 0.64 ms
 * and 5 RNR retries it failed under load).
 */
#include <errno.h>
#include <string.h>

#include "dpv_rdmacm.h"
#include "dpv_rdmacm_cmsvc.h"

#define CONN_MIN_RNR_TIMER 0 /* IBA table 45: 655.36 ms, as Linux's ib_cm */
#define GID_SCAN 16

uint8_t dpv_rdmacm_ack_timeout(uint8_t ca_ack_delay, uint8_t packet_life_time)
{
	/* IBA 9.7.6.1.3: the timeout covers twice the packet life time plus the
	 * CA's ACK delay; in log2 units: the larger of the two, plus one when
	 * the other is within one of it (Linux cm_ack_timeout) */
	int plt2 = packet_life_time + 1;
	int t;

	if (plt2 >= ca_ack_delay)
		t = plt2 + (ca_ack_delay + 1 >= plt2 ? 1 : 0);
	else
		t = ca_ack_delay + (plt2 + 1 >= ca_ack_delay ? 1 : 0);
	return (uint8_t)(t > 31 ? 31 : t);
}

uint8_t dpv_rdmacm_ca_ack_delay(struct rdma_cm_id *id)
{
	struct ibv_device_attr da;

	if (id->verbs == NULL || ibv_query_device(id->verbs, &da) != 0)
		return 0;
	return da.local_ca_ack_delay;
}

/* The GID index of gid on the id's port, or 0. */
static int gid_index(struct rdma_cm_id *id, const union ibv_gid *gid)
{
	union ibv_gid g;

	for (int i = 0; i < GID_SCAN; i++)
		if (ibv_query_gid(id->verbs, id->port_num, i, &g) == 0 && memcmp(&g, gid, 16) == 0)
			return i;
	return 0;
}

static bool cm_state_in(enum dpv_cm_state s, bool init)
{
	switch (s) {
	case DPV_CM_REQ_SENT:
	case DPV_CM_MRA_REQ_RCVD:
		return init; /* INIT only: the path is not agreed yet */
	case DPV_CM_REQ_RCVD:
	case DPV_CM_MRA_REQ_SENT:
	case DPV_CM_REP_RCVD:
	case DPV_CM_MRA_REP_SENT:
	case DPV_CM_REP_SENT:
	case DPV_CM_MRA_REP_RCVD:
	case DPV_CM_ESTABLISHED:
		return true;
	default:
		return false;
	}
}

static void attr_rtr(struct dpv_rdmacm_id *p, struct ibv_qp_attr *a, int *mask)
{
	struct rdma_cm_id *id = &p->id;

	a->path_mtu = (enum ibv_mtu)p->path_mtu;
	a->dest_qp_num = p->remote_qpn;
	a->rq_psn = p->rq_psn;
	a->max_dest_rd_atomic = p->resp_res;
	a->min_rnr_timer = CONN_MIN_RNR_TIMER;
	a->ah_attr.is_global = 1;
	a->ah_attr.grh.dgid = id->route.addr.addr.ibaddr.dgid;
	a->ah_attr.grh.sgid_index = (uint8_t)gid_index(id, &id->route.addr.addr.ibaddr.sgid);
	a->ah_attr.grh.hop_limit = id->route.path_rec ? id->route.path_rec->hop_limit : 64;
	a->ah_attr.grh.traffic_class = p->tos_set ? p->tos : 0;
	a->ah_attr.port_num = id->port_num;
	*mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
	/* ib_cm: the responder's attributes for RC and the XRC target only */
	if (id->qp_type != IBV_QPT_XRC_SEND)
		*mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
}

/* ib_cm's RTS: an XRC target has no send queue to retry on. */
static void attr_rts(struct dpv_rdmacm_id *p, struct ibv_qp_attr *a, int *mask)
{
	a->sq_psn = p->sq_psn;
	a->timeout = p->ack_timeout_set ? p->ack_timeout : p->qp_timeout;
	*mask = IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT;
	if (p->id.qp_type == IBV_QPT_XRC_RECV)
		return;
	a->retry_cnt = p->retry;
	a->rnr_retry = p->rnr_retry;
	a->max_rd_atomic = p->init_depth;
	*mask |= IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
}

int dpv_rdmacm_conn_qp_attr(struct dpv_rdmacm_id *p, struct ibv_qp_attr *a, int *mask)
{
	enum ibv_qp_state want = a->qp_state;
	struct rdma_cm_id *id = &p->id;
	int idx;

	if (p->cm == NULL || !cm_state_in(p->cm->state, want == IBV_QPS_INIT))
		return dpv_rdmacm_err(EINVAL);
	memset(a, 0, sizeof(*a));
	a->qp_state = want;
	switch (want) {
	case IBV_QPS_INIT:
		idx = dpv_rdmacm_pkey_index(id);
		if (idx < 0)
			return -1;
		a->pkey_index = (uint16_t)idx;
		a->port_num = id->port_num;
		a->qp_access_flags = IBV_ACCESS_REMOTE_WRITE |
				     (p->resp_res ? IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC : 0);
		*mask = IBV_QP_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
		return 0;
	case IBV_QPS_RTR:
		attr_rtr(p, a, mask);
		return 0;
	case IBV_QPS_RTS:
		attr_rts(p, a, mask);
		return 0;
	default:
		return dpv_rdmacm_err(EINVAL);
	}
}

static int modify_to(struct dpv_rdmacm_id *p, enum ibv_qp_state s)
{
	struct ibv_qp_attr a = {.qp_state = s};
	int mask, ret;

	if (dpv_rdmacm_conn_qp_attr(p, &a, &mask) != 0)
		return errno;
	ret = ibv_modify_qp(p->id.qp, &a, mask);
	return ret;
}

/*
 * INIT (again: the access flags of the connection) -> RTR -> RTS, as
 * librdmacm's ucma_modify_qp_rtr/rts with the kernel's attributes. Service
 * lock held. No QP: nothing to do (the application moves its own QP).
 */
int dpv_rdmacm_qp_connect(struct dpv_rdmacm_id *p)
{
	int ret;

	if (p->id.qp == NULL)
		return 0;
	ret = modify_to(p, IBV_QPS_INIT);
	if (ret == 0)
		ret = modify_to(p, IBV_QPS_RTR);
	if (ret == 0)
		ret = modify_to(p, IBV_QPS_RTS);
	return ret;
}
