/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * The application-facing connection calls of the drop-in librdmacm.so.1
 * (rdma_listen, rdma_connect, rdma_accept, rdma_reject, rdma_disconnect)
 * on the CM service; events: dpv_rdmacm_conn.c.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <arpa/inet.h>

#include "dpv_cm_ip.h"
#include "dpv_rdmacm.h"
#include "dpv_rdmacm_depth.h"
#include "dpv_rdmacm_cmsvc.h"
#include "dpv_rdmacm_ud.h"

static uint16_t id_port(const struct sockaddr *sa)
{
	return ntohs(sa->sa_family == AF_INET6 ? ((const struct sockaddr_in6 *)sa)->sin6_port :
		     ((const struct sockaddr_in *)sa)->sin_port);
}

/* The connected port spaces: TCP, and IB with IP addresses (Linux's
 * service ID (RDMA_PS_IB << 16) + port, the rdma_cm header in the REQ);
 * RC and XRC (rdma_create_ep's ai_qp_type) ids. */
static bool conn_ps(const struct rdma_cm_id *id)
{
	bool conn_qp = id->qp_type == IBV_QPT_RC || id->qp_type == IBV_QPT_XRC_SEND ||
		       id->qp_type == IBV_QPT_XRC_RECV;

	return conn_qp && (id->ps == RDMA_PS_TCP || id->ps == RDMA_PS_IB);
}

/* Service lock held. */
static int listen_on(struct dpv_rdmacm_id *p, struct ibv_context *ctx, uint64_t sid)
{
	struct dpv_cmrt *rt = dpv_rdmacm_cmsvc_rt(ctx);

	if (rt == NULL)
		return -1;
	struct dpv_cm_id *l = dpv_cm_listen(dpv_cmrt_agent(rt), sid, p);
	if (l == NULL)
		return -1;
	p->cm_listen[p->ncm_listen++] = l;
	return 0;
}

int rdma_listen(struct rdma_cm_id *id, int backlog)
{
	struct dpv_rdmacm_id *p;
	int ret = 0;

	(void)backlog;
	if (id == NULL)
		return dpv_rdmacm_err(EINVAL);
	p = to_did(id);
	if (p->state != DPV_RDMACM_ADDR_BOUND || (!conn_ps(id) && !dpv_rdmacm_ud_id(id)))
		return dpv_rdmacm_err(p->state == DPV_RDMACM_LISTEN ? 0 : EINVAL);
	uint64_t sid = dpv_cma_service_id(id->ps, id_port(rdma_get_local_addr(id)));
	dpv_rdmacm_cmsvc_lock();
	if (id->verbs != NULL) {
		ret = listen_on(p, id->verbs, sid);
	} else {
		struct dpv_rdmacm_dev *devs;
		int n = dpv_rdmacm_devices(&devs);
		for (int i = 0; i < n && ret == 0 && i < 16; i++)
			ret = listen_on(p, devs[i].verbs, sid);
	}
	dpv_rdmacm_cmsvc_unlock();
	if (ret != 0)
		return -1;
	p->state = DPV_RDMACM_LISTEN;
	return 0;
}

/* ai_connect of rdma_create_ep, then the caller's private data, at pd; the length or -1. */
static int conn_pdata(struct dpv_rdmacm_id *p, const struct rdma_conn_param *cp, uint8_t *pd, size_t cap)
{
	size_t n = p->connect_len + (cp && cp->private_data ? cp->private_data_len : 0);

	if (n > cap)
		return -1;
	if (p->connect_len)
		memcpy(pd, p->connect, p->connect_len);
	if (cp && cp->private_data && cp->private_data_len)
		memcpy(pd + p->connect_len, cp->private_data, cp->private_data_len);
	return (int)n;
}

/* The REQ of rdma_connect: header, private data, path, counts. */
static int fill_req(struct dpv_rdmacm_id *p, const struct rdma_conn_param *cp, struct dpv_cm_req_param *r,
		    uint8_t *pd)
{
	struct rdma_cm_id *id = &p->id;
	const struct sockaddr *src = rdma_get_local_addr(id), *dst = rdma_get_peer_addr(id);
	struct dpv_cma_hdr h = {.cma_version = DPV_CMA_VERSION};

	if (src->sa_family == AF_INET) {
		dpv_cma_hdr_ipv4(&h, (const uint8_t *)&((const struct sockaddr_in *)src)->sin_addr,
				 (const uint8_t *)&((const struct sockaddr_in *)dst)->sin_addr, id_port(src));
	} else {
		h.ip_version = 6;
		h.src_port = id_port(src);
		memcpy(h.src_addr, &((const struct sockaddr_in6 *)src)->sin6_addr, 16);
		memcpy(h.dst_addr, &((const struct sockaddr_in6 *)dst)->sin6_addr, 16);
	}
	int plen = conn_pdata(p, cp, pd + DPV_CMA_HDR_LEN, DPV_CMA_REQ_PRIVATE_MAX);
	if (dpv_cma_hdr_encode(&h, pd, DPV_CMA_HDR_LEN) < 0 || plen < 0)
		return EINVAL;
	uint32_t rnd = 0;
	if (getrandom(&rnd, sizeof(rnd), 0) != sizeof(rnd))
		rnd = (uint32_t)dpv_rdmacm_now_ns();
	p->rq_psn = rnd & 0xffffff;
	p->path_mtu = id->route.path_rec ? id->route.path_rec->mtu : IBV_MTU_1024;
	if (dpv_rdmacm_depths(p, cp, false) != 0)
		return EINVAL;
	/* ib_cm: av.timeout = packet life time + 1; the REQ's from the CA's ACK delay too */
	uint8_t plt = id->route.path_rec ? id->route.path_rec->packet_life_time : 18;
	p->qp_timeout = (uint8_t)(plt + 1);
	p->retry = cp ? (cp->retry_count > 7 ? 7 : cp->retry_count) : 7;
	p->rnr_retry = cp ? (cp->rnr_retry_count > 7 ? 7 : cp->rnr_retry_count) : 7;
	*r = (struct dpv_cm_req_param){.service_id = dpv_cma_service_id(id->ps, id_port(dst)),
		.qpn = id->qp ? id->qp->qp_num : (cp ? cp->qp_num : 0), .starting_psn = p->rq_psn,
		.responder_resources = p->resp_res, .initiator_depth = p->init_depth,
		.peer = {.qpn = DPV_GSI_QPN, .qkey = DPV_GSI_QKEY}, .path_mtu = p->path_mtu,
		.hop_limit = 64, .local_ack_timeout = dpv_rdmacm_ack_timeout(dpv_rdmacm_ca_ack_delay(id), plt),
		.retry_count = p->retry, .rnr_retry_count = p->rnr_retry,
		.remote_cm_response_timeout = dpv_rdmacm_cm_timeout(),
		.local_cm_response_timeout = dpv_rdmacm_cm_timeout(), .max_cm_retries = dpv_rdmacm_cm_retries(),
		.srq = id->qp ? id->qp->srq != NULL : (cp ? cp->srq : 0), .xrc = id->qp_type == IBV_QPT_XRC_SEND,
		.private_data = pd, .private_len = (uint8_t)(DPV_CMA_HDR_LEN + plen)};
	memcpy(r->peer.gid, id->route.addr.addr.ibaddr.dgid.raw, 16);
	memcpy(r->local_gid, id->route.addr.addr.ibaddr.sgid.raw, 16);
	return 0;
}

int rdma_connect(struct rdma_cm_id *id, struct rdma_conn_param *conn_param)
{
	struct dpv_cm_req_param r;
	uint8_t pd[DPV_CM_REQ_PRIVATE_LEN] = {0};
	struct dpv_rdmacm_id *p;
	int ret;

	if (id == NULL)
		return dpv_rdmacm_err(EINVAL);
	p = to_did(id);
	if (p->state == DPV_RDMACM_ROUTE_RESOLVED && dpv_rdmacm_ud_id(id))
		/* SIDR: dpv_rdmacm_ud.c; a sync id waits for ESTABLISHED/UNREACHABLE (ucma_complete) */
		return dpv_rdmacm_ud_connect(p, conn_param) ? -1 : dpv_rdmacm_complete(p);
	if (p->state != DPV_RDMACM_ROUTE_RESOLVED || !conn_ps(id))
		return dpv_rdmacm_err(EINVAL);
	/* librdmacm's ucma_valid_param: an RC connect needs a QP or a conn_param */
	ret = id->ps == RDMA_PS_TCP && id->qp == NULL && conn_param == NULL ? EINVAL :
	      fill_req(p, conn_param, &r, pd);
	if (ret)
		return dpv_rdmacm_err(ret);
	dpv_rdmacm_cmsvc_lock();
	struct dpv_cmrt *rt = dpv_rdmacm_cmsvc_rt(id->verbs);
	p->cm = rt ? dpv_cm_create_id(dpv_cmrt_agent(rt), p) : NULL;
	ret = p->cm ? dpv_cm_send_req(p->cm, &r, dpv_rdmacm_now_ns()) : -errno;
	if (ret == -EINVAL || ret == -EISCONN) {
		if (p->cm)
			dpv_cm_destroy_id(p->cm);
		p->cm = NULL;
	}
	dpv_rdmacm_cmsvc_unlock();
	if (p->cm == NULL)
		return dpv_rdmacm_err(ret < 0 ? -ret : EIO);
	p->state = DPV_RDMACM_CONNECT;
	free(p->connect); /* sent once, as librdmacm */
	p->connect = NULL;
	p->connect_len = 0;
	return dpv_rdmacm_complete(p);
}

int rdma_accept(struct rdma_cm_id *id, struct rdma_conn_param *cp)
{
	uint8_t pd[DPV_CM_REP_PRIVATE_LEN];
	struct dpv_rdmacm_id *p;
	int ret, plen;

	if (id == NULL)
		return dpv_rdmacm_err(EINVAL);
	p = to_did(id);
	if (dpv_rdmacm_ud_id(id)) {
		if (dpv_rdmacm_ud_accept(p, cp) != 0)
			return -1;
		if (p->sync && id->event != NULL) {
			/* librdmacm: a UD accept does not wait; the request's event is done */
			rdma_ack_cm_event(id->event);
			id->event = NULL;
		}
		return 0;
	}
	/* librdmacm's ucma_valid_param: an RC accept needs a QP or a conn_param */
	if (p->cm == NULL || (id->ps == RDMA_PS_TCP && id->qp == NULL && cp == NULL))
		return dpv_rdmacm_err(EINVAL);
	ret = dpv_rdmacm_depths(p, cp, true);
	plen = conn_pdata(p, cp, pd, sizeof(pd));
	if (ret != 0 || plen < 0)
		return dpv_rdmacm_err(EINVAL);
	if (cp && cp->rnr_retry_count < p->rnr_retry)
		p->rnr_retry = cp->rnr_retry_count;
	struct dpv_cm_rep_param r = {.qpn = id->qp ? id->qp->qp_num : (cp ? cp->qp_num : 0),
		.starting_psn = p->rq_psn, .responder_resources = p->resp_res,
		.initiator_depth = p->init_depth, .rnr_retry_count = p->rnr_retry,
		.target_ack_delay = dpv_rdmacm_ca_ack_delay(id),
		.srq = id->qp ? id->qp->srq != NULL : (cp ? cp->srq : 0), .xrc = id->qp_type == IBV_QPT_XRC_RECV,
		.private_data = pd, .private_len = (uint8_t)plen};
	dpv_rdmacm_cmsvc_lock();
	ret = dpv_rdmacm_qp_connect(p);
	if (ret == 0)
		ret = dpv_cm_send_rep(p->cm, &r, dpv_rdmacm_now_ns());
	dpv_rdmacm_cmsvc_unlock();
	if (ret != 0) {
		/* ib_cm answers EINVAL for a REP in the wrong state */
		ret = ret < 0 ? -ret : ret;
		return dpv_rdmacm_err(ret == EPROTO ? EINVAL : ret);
	}
	return dpv_rdmacm_complete(p);
}

int rdma_reject(struct rdma_cm_id *id, const void *private_data, uint8_t private_data_len)
{
	struct dpv_rdmacm_id *p;
	int ret;

	if (id == NULL || to_did(id)->cm == NULL)
		return dpv_rdmacm_err(EINVAL);
	p = to_did(id);
	if (dpv_rdmacm_ud_id(id))
		return dpv_rdmacm_ud_reject(p, private_data, private_data_len);
	dpv_rdmacm_cmsvc_lock();
	ret = dpv_cm_send_rej(p->cm, DPV_CM_REJ_CONSUMER_DEFINED, NULL, 0, private_data, private_data_len);
	dpv_rdmacm_cmsvc_unlock();
	return ret ? dpv_rdmacm_err(-ret) : 0;
}

int rdma_reject_ece(struct rdma_cm_id *id, const void *private_data, uint8_t private_data_len)
{
	return rdma_reject(id, private_data, private_data_len);
}

int rdma_disconnect(struct rdma_cm_id *id)
{
	struct dpv_rdmacm_id *p;

	if (id == NULL || to_did(id)->cm == NULL)
		return dpv_rdmacm_err(EINVAL);
	p = to_did(id);
	if (dpv_rdmacm_ud_id(id))
		return dpv_rdmacm_ud_disconnect(p);
	/* rdma-core's ucma_shutdown: the QP to ERR first (its failure is the call's) */
	int e = id->qp ? ibv_modify_qp(id->qp, &(struct ibv_qp_attr){.qp_state = IBV_QPS_ERR}, IBV_QP_STATE) : 0;
	if (e != 0)
		return dpv_rdmacm_err(e);
	/* Linux: a DREQ, or else a DREP; neither failing is reported */
	dpv_rdmacm_cmsvc_lock();
	if (dpv_cm_send_dreq(p->cm, NULL, 0, dpv_rdmacm_now_ns()) != 0 && p->cm->state == DPV_CM_DREQ_RCVD)
		dpv_cm_send_drep(p->cm, NULL, 0, dpv_rdmacm_now_ns());
	dpv_rdmacm_cmsvc_unlock();
	return dpv_rdmacm_complete(p);
}

void dpv_rdmacm_conn_release(struct dpv_rdmacm_id *p)
{
	if (p->cm == NULL && p->ncm_listen == 0)
		return;
	dpv_rdmacm_cmsvc_lock();
	if (dpv_rdmacm_cmsvc_exiting()) { /* the service destroyed every CM id */
		p->cm = NULL;
		p->ncm_listen = 0;
		dpv_rdmacm_cmsvc_unlock();
		return;
	}
	if (p->cm) {
		p->cm->ctx = NULL;
		dpv_cm_destroy_id(p->cm);
		p->cm = NULL;
	}
	for (unsigned int i = 0; i < p->ncm_listen; i++) {
		p->cm_listen[i]->ctx = NULL;
		dpv_cm_destroy_id(p->cm_listen[i]);
	}
	p->ncm_listen = 0;
	dpv_rdmacm_cmsvc_unlock();
}
