/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The device part of the drop-in librdmacm (compat/rdmacm/) on dpverbs'
 * default configuration (two ports, dpv0 and dpv1):
 *  - rdma_get_devices lists dpv0 and dpv1, the same open contexts on every
 *    call, NULL-terminated; rdma_free_devices;
 *  - an id given a device (WHITE-BOX: dpv_rdmacm_id_set_device(), what
 *    rdma_bind_addr/rdma_resolve_addr do) has id->verbs, the port and
 *    a PD shared by the ids of the device;
 *  - rdma_init_qp_attr (INIT for RC and UD, UD RTR/RTS, RC RTR -> ENOSYS);
 *  - rdma_create_qp: RC in INIT (P_Key index 0, the port, no remote
 *    access), UD in RTS with Q_Key RDMA_UDP_QKEY; CQs and completion
 *    channels made when the caller gives none, kept when it does; the
 *    caller's PD, a PD of another device refused; rdma_destroy_qp;
 *  - rdma_create_srq / rdma_destroy_srq, an SRQ used by the next QP;
 *    rdma_destroy_ep;
 *  - with the sw driver (suite func): UD traffic both ways between the QP
 *    rdma_create_qp made and a plain UD QP on dpv1, then the same through
 *    <rdma/rdma_verbs.h>'s helpers, whose blocking completion calls use the
 *    completion channels rdma_create_qp made (with the null driver, suite
 *    unit, receives never complete: skipped).
 * Prints "N passed, N failed".
 */
#include <stdlib.h>
#include <string.h>

#include <rdma/rdma_verbs.h>

#include "dpv_rdmacm.h"
#include "dpvt_verbs.h"

static struct ibv_context *g_ctx[2];

static void test_devices(void)
{
	struct ibv_context **l1, **l2;
	int n = -1, n2 = -1;

	l1 = rdma_get_devices(&n);
	CHECK(l1 != NULL, "rdma_get_devices: %s", strerror(errno));
	if (l1 == NULL)
		return;
	CHECK_EQ(n, 2, "two devices in the default configuration");
	CHECK(l1[n < 0 ? 0 : n] == NULL, "NULL-terminated");
	for (int i = 0; i < 2 && i < n; i++) {
		char want[8];

		snprintf(want, sizeof(want), "dpv%d", i);
		CHECK(l1[i] != NULL && strcmp(ibv_get_device_name(l1[i]->device), want) == 0, "device %d is %s (%s)",
		      i, want, l1[i] ? ibv_get_device_name(l1[i]->device) : "NULL");
		g_ctx[i] = l1[i];
	}
	l2 = rdma_get_devices(&n2);
	CHECK(l2 != NULL && n2 == n && l2 != l1, "a second call: a new array");
	for (int i = 0; l2 != NULL && i < n && i < n2; i++)
		CHECK(l2[i] == l1[i], "the same open context %d (opened once, as rdma-core)", i);
	rdma_free_devices(l2);
	l2 = rdma_get_devices(NULL);
	CHECK(l2 != NULL, "num_devices may be NULL");
	rdma_free_devices(l2);
	rdma_free_devices(l1);
	if (g_ctx[0] != NULL) {
		struct ibv_device_attr da;
		CHECK_EQ(ibv_query_device(g_ctx[0], &da), 0, "the context stays open after rdma_free_devices");
	}
}

static struct rdma_cm_id *id_on(enum rdma_port_space ps, int dev)
{
	struct rdma_cm_id *id = NULL;

	if (rdma_create_id(NULL, &id, NULL, ps) != 0)
		return NULL;
	if (dpv_rdmacm_id_set_device(to_did(id), g_ctx[dev], 1) != 0) {
		CHECK(false, "dpv_rdmacm_id_set_device: %s", strerror(errno));
		rdma_destroy_id(id);
		return NULL;
	}
	return id;
}

static void test_set_device(void)
{
	struct rdma_cm_id *a = id_on(RDMA_PS_TCP, 0), *b = id_on(RDMA_PS_UDP, 0), *c;

	CHECK(a && b, "ids with a device");
	if (!a || !b)
		return;
	CHECK(a->verbs == g_ctx[0] && a->port_num == 1 && a->pd != NULL && a->pd->context == g_ctx[0], "id fields");
	CHECK(b->pd == a->pd, "the ids of a device share its PD");
	CHECK_EQ(be16toh(a->route.addr.addr.ibaddr.pkey), 0xffff, "default P_Key");
	CHECK_RET_ERRNO(dpv_rdmacm_id_set_device(to_did(a), g_ctx[1], 1), -1, EINVAL);
	CHECK_EQ(rdma_create_id(NULL, &c, NULL, RDMA_PS_TCP), 0, "id");
	CHECK_RET_ERRNO(dpv_rdmacm_id_set_device(to_did(c), g_ctx[0], 0), -1, EINVAL);
	CHECK_RET_ERRNO(dpv_rdmacm_id_set_device(to_did(c), g_ctx[0], 2), -1, EINVAL);
	CHECK_RET_ERRNO(dpv_rdmacm_id_set_device(to_did(c), (struct ibv_context *)&c, 1), -1, EINVAL);
	CHECK(rdma_destroy_id(c) == 0 && rdma_destroy_id(b) == 0 && rdma_destroy_id(a) == 0, "destroy");
	a = id_on(RDMA_PS_TCP, 1);
	CHECK(a != NULL && a->pd != NULL && a->pd->context == g_ctx[1], "a PD again after the last user left");
	if (a)
		rdma_destroy_id(a);
}

static void test_init_qp_attr(void)
{
	struct rdma_cm_id *rc = id_on(RDMA_PS_TCP, 0), *ud = id_on(RDMA_PS_UDP, 0);
	struct ibv_qp_attr a;
	int mask = 0;

	if (!CHECK(rc && ud, "ids"))
		return;
	memset(&a, 0xff, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	CHECK_EQ(rdma_init_qp_attr(rc, &a, &mask), 0, "RC INIT");
	CHECK_EQ(mask, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, "RC INIT mask");
	CHECK(a.qp_state == IBV_QPS_INIT && a.pkey_index == 0 && a.port_num == 1 && a.qp_access_flags == 0 &&
		      a.qkey == 0,
	      "RC INIT values (the rest zeroed)");
	a.qp_state = IBV_QPS_INIT;
	CHECK_EQ(rdma_init_qp_attr(ud, &a, &mask), 0, "UD INIT");
	CHECK(mask == (IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY) && a.qkey == RDMA_UDP_QKEY,
	      "UD INIT: Q_Key RDMA_UDP_QKEY, mask 0x%x", mask);
	a.qp_state = IBV_QPS_RTS;
	CHECK(rdma_init_qp_attr(ud, &a, &mask) == 0 && mask == (IBV_QP_STATE | IBV_QP_SQ_PSN) && a.sq_psn == 0,
	      "UD RTS");
	/* RC before a connection: Linux's cma_ib_init_qp_attr answers with the INIT attributes */
	a.qp_state = IBV_QPS_RTR;
	CHECK(rdma_init_qp_attr(rc, &a, &mask) == 0 && a.qp_state == IBV_QPS_RTR &&
		      mask == (IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS),
	      "RC RTR without a connection: INIT attributes, mask 0x%x", mask);
	a.qp_state = IBV_QPS_ERR + 1;
	CHECK_RET_ERRNO(rdma_init_qp_attr(rc, &a, &mask), -1, EINVAL);
	a.qp_state = IBV_QPS_INIT;
	CHECK_RET_ERRNO(rdma_init_qp_attr(rc, &a, NULL), -1, EINVAL);
	rdma_destroy_id(rc);
	rdma_destroy_id(ud);
}

static struct ibv_qp_init_attr qp_attr(enum ibv_qp_type t)
{
	struct ibv_qp_init_attr qa;

	memset(&qa, 0, sizeof(qa));
	qa.qp_type = t;
	qa.cap.max_send_wr = 16;
	qa.cap.max_recv_wr = 16;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	return qa;
}

static void test_rc_qp(void)
{
	struct rdma_cm_id *id = id_on(RDMA_PS_TCP, 0);
	struct ibv_qp_init_attr qa = qp_attr(IBV_QPT_RC), qi;
	struct ibv_qp_attr a;

	if (!CHECK(id != NULL, "id"))
		return;
	CHECK_EQ(rdma_create_qp(id, NULL, &qa), 0, "rdma_create_qp RC");
	if (id->qp == NULL)
		goto out;
	CHECK(id->send_cq && id->recv_cq && id->send_cq != id->recv_cq && id->send_cq_channel && id->recv_cq_channel,
	      "CQs and completion channels made");
	CHECK(qa.send_cq == id->send_cq && qa.recv_cq == id->recv_cq, "attr written back");
	CHECK(id->qp->pd == id->pd && id->qp->qp_type == IBV_QPT_RC && id->recv_cq->cq_context == id, "QP on id->pd");
	CHECK_EQ(ibv_query_qp(id->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, &qi), 0,
		 "ibv_query_qp");
	CHECK(a.qp_state == IBV_QPS_INIT && a.port_num == 1 && a.pkey_index == 0 && a.qp_access_flags == 0,
	      "RC QP in INIT, port 1, P_Key index 0, no remote access (state %d)", a.qp_state);
	CHECK_RET_ERRNO(rdma_create_qp(id, NULL, &qa), -1, EINVAL);
	rdma_destroy_qp(id);
	CHECK(id->qp == NULL && id->send_cq == NULL && id->recv_cq == NULL && id->send_cq_channel == NULL &&
		      id->recv_cq_channel == NULL,
	      "rdma_destroy_qp: QP, CQs and channels gone");
out:
	rdma_destroy_id(id);
}

/* The caller's PD and CQs; a PD of another device. */
static void test_caller_objects(void)
{
	struct rdma_cm_id *id = id_on(RDMA_PS_IB, 0);
	struct ibv_pd *pd0 = ibv_alloc_pd(g_ctx[0]), *pd1 = ibv_alloc_pd(g_ctx[1]);
	struct ibv_cq *cq = ibv_create_cq(g_ctx[0], 32, NULL, NULL, 0);
	struct ibv_qp_init_attr qa = qp_attr(IBV_QPT_RC);

	if (!CHECK(id && pd0 && pd1 && cq, "id, PDs, CQ"))
		return;
	CHECK_RET_ERRNO(rdma_create_qp(id, pd1, &qa), -1, EINVAL);
	CHECK(id->qp == NULL && id->send_cq == NULL, "nothing made");
	qa.send_cq = cq;
	qa.recv_cq = cq;
	CHECK_EQ(rdma_create_qp(id, pd0, &qa), 0, "rdma_create_qp with the caller's PD and CQ");
	CHECK(id->qp && id->qp->pd == pd0 && id->pd == pd0, "QP on the caller's PD, id->pd follows");
	CHECK(id->send_cq == NULL && id->recv_cq == NULL && id->qp->send_cq == cq, "no CQ of the library");
	CHECK_EQ(dpvt_qp_state(id->qp), IBV_QPS_INIT, "INIT");
	rdma_destroy_qp(id);
	CHECK(ibv_destroy_cq(cq) == 0 && ibv_dealloc_pd(pd0) == 0 && ibv_dealloc_pd(pd1) == 0,
	      "the caller's objects are left to the caller");
	rdma_destroy_id(id);
}

static void test_srq_ep(void)
{
	struct rdma_cm_id *id = id_on(RDMA_PS_TCP, 1);
	struct ibv_srq_init_attr sa;
	struct ibv_qp_init_attr qa = qp_attr(IBV_QPT_RC);

	if (!CHECK(id != NULL, "id"))
		return;
	memset(&sa, 0, sizeof(sa));
	sa.attr.max_wr = 32;
	sa.attr.max_sge = 1;
	CHECK_EQ(rdma_create_srq(id, NULL, &sa), 0, "rdma_create_srq on id->pd");
	CHECK(id->srq != NULL && id->srq->pd == id->pd, "id->srq");
	rdma_destroy_srq(id);
	CHECK(id->srq == NULL, "rdma_destroy_srq");
	CHECK_EQ(rdma_create_srq(id, NULL, &sa), 0, "again");
	/* max_recv_wr sizes the receive CQ the library makes (rdma-core alike) */
	CHECK_EQ(rdma_create_qp(id, NULL, &qa), 0, "QP on the id's SRQ");
	CHECK(id->qp != NULL && id->qp->srq == id->srq && qa.srq == id->srq, "the QP uses id->srq");
	rdma_destroy_ep(id); /* QP, SRQ, CQs and the id (ASan reports anything left) */
	CHECK(true, "rdma_destroy_ep");
}

/*
 * <rdma/rdma_verbs.h>'s inline helpers, as librdmacm programs use them on
 * the QP, CQs and completion channels rdma_create_qp made: rdma_reg_msgs,
 * rdma_post_recv, rdma_post_ud_send, and rdma_get_recv_comp /
 * rdma_get_send_comp, which block on id->recv_cq_channel / send_cq_channel.
 */
static void rdma_verbs_helpers(struct rdma_cm_id *id, struct dpvt_ep *peer)
{
	static char msg[256], in[256 + 40];
	struct ibv_ah *to_peer = dpvt_ah_new(id->pd, peer->ctx, 1, 1), *to_cm = dpvt_ah_new(peer->pd, id->verbs, 1, 1);
	struct ibv_mr *mr_in = rdma_reg_msgs(id, in, sizeof(in)), *mr_msg = rdma_reg_msgs(id, msg, sizeof(msg));
	struct ibv_wc wc;

	if (!CHECK(to_peer && to_cm && mr_in && mr_msg, "AHs and rdma_reg_msgs"))
		goto out;
	/* peer -> id: rdma_post_recv, rdma_get_recv_comp */
	CHECK_EQ(rdma_post_recv(id, (void *)7, in, sizeof(in), mr_in), 0, "rdma_post_recv");
	snprintf((char *)peer->buf, 64, "to the rdma_cm id");
	CHECK_EQ(dpvt_post_ud_send(peer->qp, to_cm, id->qp->qp_num, RDMA_UDP_QKEY, 1, peer->mr, 0, 64, IBV_SEND_SIGNALED),
		 0, "peer sends");
	dpvt_wait1(peer->scq, NULL, 1, IBV_WC_SEND, "peer send CQE");
	CHECK_EQ(rdma_get_recv_comp(id, &wc), 1, "rdma_get_recv_comp (completion channel)");
	CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RECV && wc.wr_id == 7 && wc.byte_len == 40 + 64 &&
		      strcmp(in + 40, "to the rdma_cm id") == 0,
	      "received: status %d opcode %d len %u", wc.status, wc.opcode, wc.byte_len);
	/* id -> peer: rdma_post_ud_send, rdma_get_send_comp */
	CHECK_EQ(dpvt_post_recv(peer->qp, peer->mr, 9, 4096, 40 + 64), 0, "peer post_recv");
	snprintf(msg, sizeof(msg), "from the rdma_cm id");
	CHECK_EQ(rdma_post_ud_send(id, (void *)8, msg, 64, mr_msg, IBV_SEND_SIGNALED, to_peer, peer->qp->qp_num), 0,
		 "rdma_post_ud_send");
	CHECK_EQ(rdma_get_send_comp(id, &wc), 1, "rdma_get_send_comp (completion channel)");
	CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_SEND && wc.wr_id == 8, "sent");
	dpvt_wait1(peer->rcq, NULL, 9, IBV_WC_RECV, "peer recv CQE");
	CHECK(strcmp((char *)peer->buf + 4096 + 40, "from the rdma_cm id") == 0, "peer got the payload");
out:
	if (mr_in)
		rdma_dereg_mr(mr_in);
	if (mr_msg)
		rdma_dereg_mr(mr_msg);
	if (to_peer)
		ibv_destroy_ah(to_peer);
	if (to_cm)
		ibv_destroy_ah(to_cm);
}

/* UD: RTS at creation; traffic both ways with a plain UD QP on dpv1. */
static void test_ud_qp(bool traffic)
{
	struct rdma_cm_id *id = id_on(RDMA_PS_UDP, 0);
	struct ibv_qp_init_attr qa = qp_attr(IBV_QPT_UD), qi;
	struct dpvt_ep cm, peer;
	struct ibv_qp_attr a;

	if (!CHECK(id != NULL, "id"))
		return;
	qa.cap.max_send_wr = qa.cap.max_recv_wr = 64;
	CHECK_EQ(rdma_create_qp(id, NULL, &qa), 0, "rdma_create_qp UD");
	if (id->qp == NULL)
		goto out;
	CHECK_EQ(ibv_query_qp(id->qp, &a, IBV_QP_STATE | IBV_QP_QKEY | IBV_QP_SQ_PSN, &qi), 0, "ibv_query_qp");
	CHECK(a.qp_state == IBV_QPS_RTS && a.qkey == RDMA_UDP_QKEY && a.sq_psn == 0,
	      "UD QP in RTS, Q_Key 0x%x, SQ PSN %u", a.qkey, a.sq_psn);
	if (!traffic)
		goto out;
	memset(&cm, 0, sizeof(cm));
	cm.ctx = id->verbs;
	cm.pd = id->pd;
	cm.scq = id->send_cq;
	cm.rcq = id->recv_cq;
	cm.qp = id->qp;
	if (!CHECK(dpvt_ep_traffic_buf(&cm, NULL) == 0 && dpvt_ud_ep_open(&peer, "dpv1", RDMA_UDP_QKEY, false) == 0,
		   "buffers, peer UD endpoint"))
		goto out;
	dpvt_ud_traffic(&cm, cm.pd, &peer, RDMA_UDP_QKEY, 3, 11, "rdmacm UD -> dpv1");
	dpvt_ud_traffic(&peer, peer.pd, &cm, RDMA_UDP_QKEY, 3, 12, "dpv1 -> rdmacm UD");
	rdma_verbs_helpers(id, &peer);
	ibv_dereg_mr(cm.mr);
	free(cm.buf);
	dpvt_ep_close(&peer);
out:
	rdma_destroy_ep(id);
}

int main(void)
{
	const char *drv = getenv("DPVERBS_DRIVER");
	bool null_driver = drv != NULL && strcmp(drv, "null") == 0;

	test_devices();
	if (g_ctx[0] == NULL || g_ctx[1] == NULL)
		return dpvt_finish();
	test_set_device();
	test_init_qp_attr();
	test_rc_qp();
	test_caller_objects();
	test_srq_ep();
	test_ud_qp(!null_driver);
	if (null_driver)
		printf("note: null driver: UD traffic not run\n");
	return dpvt_finish();
}
