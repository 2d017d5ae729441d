/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer target for the whole receive path: parse, receive checks,
 * dispatch by QPN and the transports (UD responder, RC responder and
 * completer, UC responder). Each input is a frame given to dpv1's engine
 * context through its software loopback ring. Before that, the destination
 * MAC and IP are pointed at dpv1 and the IPv4 checksum and ICRC are redone
 * when the input has the room, so that mutations reach the transports and
 * not only the ICRC check. dpv1 has a UD QP (QPN 0x11, as in the captures),
 * an RC QP (0x12) and a UC QP (0x13) in RTS with receives posted, and no
 * GSI QP: frames to QP 1 reach the port's own CM (drivers/sw/sw_gsi_fb.c),
 * seeded by the CM MADs of rdma_cm_send.pcap. A raw packet QP of dpv1 has
 * steering rules (a sniffer, ALL_DEFAULT, and IPv6/TCP to port 80 with a
 * tag), so that every input also goes through the classifier
 * (lib/port/dpv_rawflow.c) and the key extraction.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/verbs.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include "dpv_port.h" /* WHITE-BOX: the port's loopback ring, MAC, IPv4 address */
#include "dpv_wire.h"
#include "dpvt_verbs.h"

#define NRECV 64
static struct ibv_qp *qps[4]; /* UD, RC, UC, raw packet */
static struct ibv_cq *cq;
static struct ibv_mr *mr;
static uint8_t *buf;
static struct dpv_port *port; /* WHITE-BOX */

static void post_recvs(struct ibv_qp *qp, int n)
{
	for (int i = 0; i < n; i++) {
		struct ibv_sge sge = {.addr = (uintptr_t)buf, .length = 8192, .lkey = mr->lkey};
		struct ibv_recv_wr wr = {.wr_id = 1, .sg_list = &sge, .num_sge = 1}, *bad;
		if (ibv_post_recv(qp, &wr, &bad))
			break;
	}
}

/* A QP of type t on dpv1 in RTS (UD: Q_Key 0x11111111; RC/UC: towards QPN
 * 0x11 at peer, PSNs 0) with NRECV receives posted (test/lib connection). */
static struct ibv_qp *make_qp(struct ibv_pd *pd, enum ibv_qp_type t, const union ibv_gid *peer)
{
	struct dpvt_qp_caps caps = {.max_send_wr = 64, .max_recv_wr = NRECV, .max_send_sge = 1, .max_recv_sge = 1};
	struct dpvt_conn o = dpvt_conn_default();
	struct ibv_qp *qp = dpvt_qp_create(pd, t, cq, cq, NULL, &caps);

	o.qkey = 0x11111111;
	o.sq_psn = 0;
	o.rq_psn = 0;
	if (!qp || dpvt_qp_to_init(qp, &o))
		abort();
	post_recvs(qp, NRECV);
	if (dpvt_qp_to_rtr(qp, peer, 0x11, &o) || dpvt_qp_to_rts(qp, &o))
		abort();
	return qp;
}

/* A raw packet QP on dpv1 in RTS with NRECV receives and three rules. */
static struct ibv_qp *make_raw_qp(struct ibv_pd *pd)
{
	struct dpvt_qp_caps caps = {.max_send_wr = 4, .max_recv_wr = NRECV, .max_send_sge = 1, .max_recv_sge = 1};
	struct ibv_qp *qp = dpvt_qp_create(pd, IBV_QPT_RAW_PACKET, cq, cq, NULL, &caps);
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .port_num = 1};
	if (!qp || ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PORT) || dpvt_qp_set_state(qp, IBV_QPS_RTR) ||
	    dpvt_qp_set_state(qp, IBV_QPS_RTS))
		abort();
	post_recvs(qp, NRECV);
	struct ibv_flow_attr sn = {.type = IBV_FLOW_ATTR_SNIFFER, .size = sizeof(sn), .port = 1};
	struct ibv_flow_attr all = {.type = IBV_FLOW_ATTR_ALL_DEFAULT, .size = sizeof(all), .port = 1};
	struct {
		struct ibv_flow_attr a;
		struct ibv_flow_spec_ipv6 ip;
		struct ibv_flow_spec_tcp_udp tcp;
		struct ibv_flow_spec_action_tag tag;
	} n = {.a = {.type = IBV_FLOW_ATTR_NORMAL, .size = sizeof(n), .num_of_specs = 3, .port = 1},
	       .ip = {.type = IBV_FLOW_SPEC_IPV6, .size = sizeof(n.ip)},
	       .tcp = {.type = IBV_FLOW_SPEC_TCP, .size = sizeof(n.tcp), .val.dst_port = 0x5000,
		       .mask.dst_port = 0xffff},
	       .tag = {.type = IBV_FLOW_SPEC_ACTION_TAG, .size = sizeof(n.tag), .tag_id = 7}};
	if (!ibv_create_flow(qp, &sn) || !ibv_create_flow(qp, &all) || !ibv_create_flow(qp, &n.a))
		abort();
	return qp;
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	setenv("DPVERBS_CONFIG", "", 1);
	setenv("DPVERBS_FAULT", "", 1);
	int n;
	struct ibv_device **devs = ibv_get_device_list(&n);
	if (!devs || n < 2)
		abort();
	struct ibv_context *c1 = ibv_open_device(devs[1]), *c0 = ibv_open_device(devs[0]);
	union ibv_gid g0;
	if (!c1 || !c0 || ibv_query_gid(c0, 1, 1, &g0))
		abort();
	struct ibv_pd *pd = ibv_alloc_pd(c1);
	cq = ibv_create_cq(c1, 4096, NULL, NULL, 0);
	buf = aligned_alloc(4096, 1 << 20);
	mr = ibv_reg_mr(pd, buf, 1 << 20, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
	if (!pd || !cq || !mr)
		abort();
	qps[0] = make_qp(pd, IBV_QPT_UD, &g0);
	qps[1] = make_qp(pd, IBV_QPT_RC, &g0);
	qps[2] = make_qp(pd, IBV_QPT_UC, &g0);
	qps[3] = make_raw_qp(pd);
	port = dpv_port_by_name("dpv1"); /* WHITE-BOX */
	if (!port)
		abort();
	return 0;
}

/* Point the frame at dpv1 and redo the checksums when it is long enough to
 * hold the headers (mutations elsewhere still go through). WHITE-BOX: the
 * port's MAC and IPv4 address. */
static void retarget(uint8_t *f, uint32_t len)
{
	struct dpv_pkt_info pi;
	if (len < 14 + 20 + 8 + 12 + 4)
		return;
	memcpy(f, port->mac, 6);
	if (f[12] == 0x08 && f[13] == 0x00 && (f[14] >> 4) == 4) {
		uint8_t *ip = f + 14;
		memcpy(ip + 16, &port->ipv4, 4);
		ip[10] = ip[11] = 0;
		uint16_t ck = dpv_ipv4_cksum(ip);
		ip[10] = (uint8_t)(ck >> 8);
		ip[11] = (uint8_t)ck;
	}
	if (dpv_pkt_parse(f, len, &pi) == 0) {
		uint32_t icrc = dpv_icrc_compute(f + pi.l3_off, pi.frame_len - pi.l3_off - DPV_ICRC_LEN);
		uint8_t *p = f + pi.frame_len - DPV_ICRC_LEN;
		p[0] = (uint8_t)icrc;
		p[1] = (uint8_t)(icrc >> 8);
		p[2] = (uint8_t)(icrc >> 16);
		p[3] = (uint8_t)(icrc >> 24);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 2000)
		return 0;
	/* WHITE-BOX: the frame goes into dpv1's software loopback ring */
	struct rte_mbuf *m = dpv_port_alloc_mbuf(port);
	if (!m)
		return 0;
	uint8_t *f = (uint8_t *)rte_pktmbuf_append(m, (uint16_t)size);
	if (!f && size) {
		rte_pktmbuf_free(m);
		return 0;
	}
	if (size)
		memcpy(f, data, size);
	if (size && (data[0] & 1) == 0)
		retarget(f, (uint32_t)size); /* keep some inputs untouched */
	if (rte_ring_mp_enqueue(port->qctx[0].lo_ring, m) != 0) {
		rte_pktmbuf_free(m);
		return 0;
	}
	dpv_qctx_poll(&port->qctx[0]);
	/* drain completions and keep the receive queues full */
	struct ibv_wc wc[64];
	int got = ibv_poll_cq(cq, 64, wc);
	for (int i = 0; i < got; i++)
		for (int q = 0; q < 4; q++)
			if (wc[i].qp_num == qps[q]->qp_num && wc[i].opcode & IBV_WC_RECV)
				post_recvs(qps[q], 1);
	/* a QP an input drove into ERR is reset for the next one */
	for (int q = 0; q < 3; q++) {
		struct ibv_qp_attr a;
		struct ibv_qp_init_attr ia;
		if (!ibv_query_qp(qps[q], &a, IBV_QP_STATE, &ia) && a.qp_state == IBV_QPS_ERR) {
			struct ibv_pd *pd = qps[q]->pd;
			enum ibv_qp_type t = qps[q]->qp_type;
			union ibv_gid g0 = a.ah_attr.grh.dgid;
			while (ibv_poll_cq(cq, 64, wc) > 0)
				;
			ibv_destroy_qp(qps[q]);
			qps[q] = make_qp(pd, t, &g0);
		}
	}
	return 0;
}
