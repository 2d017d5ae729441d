/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The public structures of librdmacm, as this build's <rdma/rdma_cma.h>
 * lays them out, against rdma-core 44's layout on x86_64 (measured with
 * sizeof/offsetof/_Alignof on Debian 12, librdmacm-dev 44.0-2). The drop-in
 * librdmacm.so.1 (compat/rdmacm/) does not define these structures: it
 * compiles against the system header, so a header whose layout differs
 * from the one Debian's binaries were built with fails here first. Also
 * the ABI constants (enum values, option numbers, Q_Key, AI flags).
 * Prints "N passed, N failed".
 */
#include <stddef.h>

#include <rdma/rdma_cma.h>
#include <rdma/rsocket.h>

#include "dpvt_check.h"

/* sizeof and _Alignof of struct t */
#define SIZE(t, size, align)                                                       \
	do {                                                                       \
		CHECK_EQ(sizeof(struct t), size, "sizeof(struct " #t ")");         \
		CHECK_EQ(_Alignof(struct t), align, "_Alignof(struct " #t ")");    \
	} while (0)

/* offsetof and size of member f of struct t */
#define FIELD(t, f, off, size)                                                     \
	do {                                                                       \
		CHECK_EQ(offsetof(struct t, f), off, "offsetof(" #t ", " #f ")");  \
		CHECK_EQ(sizeof(((struct t *)0)->f), size, "sizeof(" #t "." #f ")"); \
	} while (0)

static void layouts(void)
{
	SIZE(rdma_ib_addr, 40, 8);
	FIELD(rdma_ib_addr, sgid, 0, 16);
	FIELD(rdma_ib_addr, dgid, 16, 16);
	FIELD(rdma_ib_addr, pkey, 32, 2);

	SIZE(rdma_addr, 296, 8);
	FIELD(rdma_addr, src_addr, 0, 16);
	FIELD(rdma_addr, src_sin, 0, 16);
	FIELD(rdma_addr, src_sin6, 0, 28);
	FIELD(rdma_addr, src_storage, 0, 128);
	FIELD(rdma_addr, dst_addr, 128, 16);
	FIELD(rdma_addr, dst_sin, 128, 16);
	FIELD(rdma_addr, dst_sin6, 128, 28);
	FIELD(rdma_addr, dst_storage, 128, 128);
	FIELD(rdma_addr, addr, 256, 40);
	FIELD(rdma_addr, addr.ibaddr, 256, 40);

	SIZE(rdma_route, 312, 8);
	FIELD(rdma_route, addr, 0, 296);
	FIELD(rdma_route, path_rec, 296, 8);
	FIELD(rdma_route, num_paths, 304, 4);

	SIZE(rdma_event_channel, 4, 4);
	FIELD(rdma_event_channel, fd, 0, 4);

	SIZE(rdma_cm_id, 416, 8);
	FIELD(rdma_cm_id, verbs, 0, 8);
	FIELD(rdma_cm_id, channel, 8, 8);
	FIELD(rdma_cm_id, context, 16, 8);
	FIELD(rdma_cm_id, qp, 24, 8);
	FIELD(rdma_cm_id, route, 32, 312);
	FIELD(rdma_cm_id, ps, 344, 4);
	FIELD(rdma_cm_id, port_num, 348, 1);
	FIELD(rdma_cm_id, event, 352, 8);
	FIELD(rdma_cm_id, send_cq_channel, 360, 8);
	FIELD(rdma_cm_id, send_cq, 368, 8);
	FIELD(rdma_cm_id, recv_cq_channel, 376, 8);
	FIELD(rdma_cm_id, recv_cq, 384, 8);
	FIELD(rdma_cm_id, srq, 392, 8);
	FIELD(rdma_cm_id, pd, 400, 8);
	FIELD(rdma_cm_id, qp_type, 408, 4);

	SIZE(rdma_conn_param, 24, 8);
	FIELD(rdma_conn_param, private_data, 0, 8);
	FIELD(rdma_conn_param, private_data_len, 8, 1);
	FIELD(rdma_conn_param, responder_resources, 9, 1);
	FIELD(rdma_conn_param, initiator_depth, 10, 1);
	FIELD(rdma_conn_param, flow_control, 11, 1);
	FIELD(rdma_conn_param, retry_count, 12, 1);
	FIELD(rdma_conn_param, rnr_retry_count, 13, 1);
	FIELD(rdma_conn_param, srq, 14, 1);
	FIELD(rdma_conn_param, qp_num, 16, 4);

	SIZE(rdma_ud_param, 56, 8);
	FIELD(rdma_ud_param, private_data, 0, 8);
	FIELD(rdma_ud_param, private_data_len, 8, 1);
	FIELD(rdma_ud_param, ah_attr, 16, 32);
	FIELD(rdma_ud_param, qp_num, 48, 4);
	FIELD(rdma_ud_param, qkey, 52, 4);

	SIZE(rdma_cm_event, 80, 8);
	FIELD(rdma_cm_event, id, 0, 8);
	FIELD(rdma_cm_event, listen_id, 8, 8);
	FIELD(rdma_cm_event, event, 16, 4);
	FIELD(rdma_cm_event, status, 20, 4);
	FIELD(rdma_cm_event, param, 24, 56);
	FIELD(rdma_cm_event, param.conn, 24, 24);
	FIELD(rdma_cm_event, param.ud, 24, 56);

	SIZE(rdma_addrinfo, 96, 8);
	FIELD(rdma_addrinfo, ai_flags, 0, 4);
	FIELD(rdma_addrinfo, ai_family, 4, 4);
	FIELD(rdma_addrinfo, ai_qp_type, 8, 4);
	FIELD(rdma_addrinfo, ai_port_space, 12, 4);
	FIELD(rdma_addrinfo, ai_src_len, 16, 4);
	FIELD(rdma_addrinfo, ai_dst_len, 20, 4);
	FIELD(rdma_addrinfo, ai_src_addr, 24, 8);
	FIELD(rdma_addrinfo, ai_dst_addr, 32, 8);
	FIELD(rdma_addrinfo, ai_src_canonname, 40, 8);
	FIELD(rdma_addrinfo, ai_dst_canonname, 48, 8);
	FIELD(rdma_addrinfo, ai_route_len, 56, 8);
	FIELD(rdma_addrinfo, ai_route, 64, 8);
	FIELD(rdma_addrinfo, ai_connect_len, 72, 8);
	FIELD(rdma_addrinfo, ai_connect, 80, 8);
	FIELD(rdma_addrinfo, ai_next, 88, 8);

	SIZE(rdma_cm_join_mc_attr_ex, 16, 8);
	FIELD(rdma_cm_join_mc_attr_ex, comp_mask, 0, 4);
	FIELD(rdma_cm_join_mc_attr_ex, join_flags, 4, 4);
	FIELD(rdma_cm_join_mc_attr_ex, addr, 8, 8);
}

static void constants(void)
{
	CHECK_EQ(sizeof(enum rdma_port_space), 4, "sizeof(enum rdma_port_space)");
	CHECK_EQ(sizeof(enum rdma_cm_event_type), 4, "sizeof(enum rdma_cm_event_type)");
	CHECK_EQ(RDMA_PS_IPOIB, 0x0002, "RDMA_PS_IPOIB");
	CHECK_EQ(RDMA_PS_TCP, 0x0106, "RDMA_PS_TCP");
	CHECK_EQ(RDMA_PS_UDP, 0x0111, "RDMA_PS_UDP");
	CHECK_EQ(RDMA_PS_IB, 0x013F, "RDMA_PS_IB");
	CHECK_EQ(RDMA_CM_EVENT_ADDR_RESOLVED, 0, "RDMA_CM_EVENT_ADDR_RESOLVED");
	CHECK_EQ(RDMA_CM_EVENT_CONNECT_REQUEST, 4, "RDMA_CM_EVENT_CONNECT_REQUEST");
	CHECK_EQ(RDMA_CM_EVENT_ESTABLISHED, 9, "RDMA_CM_EVENT_ESTABLISHED");
	CHECK_EQ(RDMA_CM_EVENT_DISCONNECTED, 10, "RDMA_CM_EVENT_DISCONNECTED");
	CHECK_EQ(RDMA_CM_EVENT_TIMEWAIT_EXIT, 15, "RDMA_CM_EVENT_TIMEWAIT_EXIT");
	CHECK_EQ(RDMA_UDP_QKEY, 0x01234567, "RDMA_UDP_QKEY");
	CHECK_EQ(RDMA_OPTION_ID, 0, "RDMA_OPTION_ID");
	CHECK_EQ(RDMA_OPTION_IB, 1, "RDMA_OPTION_IB");
	CHECK_EQ(RDMA_OPTION_ID_TOS, 0, "RDMA_OPTION_ID_TOS");
	CHECK_EQ(RDMA_OPTION_ID_REUSEADDR, 1, "RDMA_OPTION_ID_REUSEADDR");
	CHECK_EQ(RDMA_OPTION_ID_AFONLY, 2, "RDMA_OPTION_ID_AFONLY");
	CHECK_EQ(RDMA_OPTION_ID_ACK_TIMEOUT, 3, "RDMA_OPTION_ID_ACK_TIMEOUT");
	CHECK_EQ(RDMA_OPTION_IB_PATH, 1, "RDMA_OPTION_IB_PATH");
	CHECK_EQ(sizeof(struct ibv_path_data), 72, "sizeof(struct ibv_path_data)");
	CHECK_EQ(RAI_PASSIVE, 1, "RAI_PASSIVE");
	CHECK_EQ(RAI_NUMERICHOST, 2, "RAI_NUMERICHOST");
	CHECK_EQ(RAI_NOROUTE, 4, "RAI_NOROUTE");
	CHECK_EQ(RAI_FAMILY, 8, "RAI_FAMILY");
	CHECK_EQ(RDMA_MAX_RESP_RES, 0xFF, "RDMA_MAX_RESP_RES");
	CHECK_EQ(RDMA_MAX_INIT_DEPTH, 0xFF, "RDMA_MAX_INIT_DEPTH");
	CHECK_EQ(RDMA_CM_JOIN_MC_ATTR_ADDRESS, 1, "RDMA_CM_JOIN_MC_ATTR_ADDRESS");
	CHECK_EQ(RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS, 2, "RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS");
	CHECK_EQ(RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER, 1, "RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER");
	CHECK_EQ(SOL_RDMA, 0x10000, "SOL_RDMA");
	CHECK_EQ(RDMA_ROUTE, 4, "RDMA_ROUTE");
}

int main(void)
{
	layouts();
	constants();
	return dpvt_finish();
}
