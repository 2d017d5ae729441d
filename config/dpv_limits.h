/* SPDX-License-Identifier: BSD-3-Clause */
/* dpverbs compile-time limits and device parameters, in one place (as
 * rxe_param.h): the device's identity and fixed capabilities, the defaults
 * of the configuration's "limits" section (lib/verbs/dpv_param.h holds the
 * limits as run), object ranges, engine sizes. */
#ifndef DPV_LIMITS_H
#define DPV_LIMITS_H

#define DPV_NAME_MAX 64
#define DPV_DEVARGS_MAX 512
#define DPV_PATH_MAX 4096
#define DPV_MAX_PORTS 8
#define DPV_MAX_IPV6_PER_PORT 4
#define DPV_MAX_LCORES 16
#define DPV_MAX_EAL_ARGS 32
#define DPV_MAX_QUEUES 8

/* Identity: ibv_query_device, ibv_query_port and the sysfs view
 * (lib/conf/dpv_view.c) */
#define DPV_VENDOR_ID 0x026470     /* OUI-style id from our MAC prefix (perftest: unknown vendor) */
#define DPV_VENDOR_PART_ID 0x4450  /* "DP" */
#define DPV_HW_VER 1
#define DPV_FW_VER "0.1.0"
#define DPV_BOARD_ID "DPVERBS_DPDK_ROCEV2"
/* port_cap_flags: IBV_PORT_CM_SUP | IBV_PORT_IP_BASED_GIDS (checked in dpv_device.c) */
#define DPV_PORT_CAP_FLAGS 0x04010000u
/* link speed reported when the PMD does not know it, and in the sysfs view
 * (which starts no PMD) */
#define DPV_NOMINAL_SPEED_MBPS 10000

/* GID table: 0 link-local, 1 IPv4-mapped, then configured IPv6 */
#define DPV_GID_TABLE_LEN 16
#define DPV_PKEY_TABLE_LEN 1
#define DPV_DEFAULT_PKEY 0xffff

/* Defaults of the "limits" section (ibv_query_device) */
#define DPV_DEF_MAX_QP 4096
#define DPV_DEF_MAX_CQ 4096
#define DPV_DEF_MAX_MR 65536
#define DPV_DEF_MAX_PD 4096
#define DPV_DEF_MAX_AH 65536
#define DPV_DEF_MAX_SRQ 1024
#define DPV_DEF_MAX_QP_WR 16384
#define DPV_DEF_MAX_CQE 65536
#define DPV_DEF_MAX_SGE 32
#define DPV_MAX_SGE_LIMIT 64 /* hard upper bound of limits.max_sge */
#define DPV_DEF_MAX_INLINE 512
#define DPV_DEF_MAX_MR_SIZE (1ULL << 40)

/* multicast (ibv_attach_mcast): groups per device, UD QPs per group */
#define DPV_MAX_MCAST_GRP 64
#define DPV_MAX_MCAST_QP_ATTACH 32
/* Device memory (ibv_alloc_dm): the size of each device's is the port's
 * "dm_size"; an allocation takes whole units (ConnectX's MEMIC: 64 bytes)
 * and may ask an alignment of up to 2^12 (a page). */
#define DPV_DM_UNIT 64u
#define DPV_DM_MAX_LOG_ALIGN 12

#define DPV_NEIGH_MAX 256
#define DPV_NEIGH_PENDING_MAX 256 /* packets held while resolving */
#define DPV_RAW_RULES_MAX 256 /* raw packet steering rules (ibv_create_flow) per port */
#define DPV_BURST 32
#define DPV_MEMIF_WAIT_MS 10000 /* a memif client waits this long for its server */
#define DPV_LINK_START_WAIT_MS 5000 /* bring-up waits this long for a tap's or NIC's link */
#define DPV_RX_BURSTS 4 /* RX bursts per engine turn at most */
#define DPV_TX_RETRIES 64 /* tx_burst attempts on a full TX queue before giving up
			     * (the engine stalls the QP and retries after the next
			     * receive burst: spinning longer while the peer's
			     * queue is full too deadlocks two processes) */

/* ---- the device's fixed capabilities (ibv_query_device) ---- */
#define DPV_MAX_MSG_SZ (1u << 31)       /* IBA 9.4: 2^31 bytes per message */
#define DPV_MAX_QP_RD_ATOM 128          /* outstanding READ/atomic per QP, as rxe */
#define DPV_MAX_QP_INIT_RD_ATOM 128
#define DPV_LOCAL_CA_ACK_DELAY 15
#define DPV_NUM_COMP_VECTORS 1
#define DPV_PHYS_PORT_CNT 1
#define DPV_PORT_NUM 1                  /* the only port number of a device */
#define DPV_MIN_CQE_ALIGN 64            /* ring buffers: cache-line aligned */

/* Object index ranges (struct dpv_pool): 24-bit QPNs, 0 and 1 reserved (SMI,
 * GSI) and up to 0x10 kept free as rxe does; MR keys are index << 8 | key. */
#define DPV_QPN_GSI 1                   /* the GSI's QPN on the wire (IBA 13.5.1) */
#define DPV_QPN_MCAST 0xffffff          /* destination QP of multicast packets (IBA 10.5) */
#define DPV_QPN_FIRST 0x11
#define DPV_QPN_LAST 0x1ffff
#define DPV_MR_INDEX_LAST 0xffffff
#define DPV_SRQN_LAST 0xffff
#define DPV_OBJ_INDEX_LAST 0xfffff     /* PDs, AHs, CQs, XRC domains */

/* wc.sl of a UD receive: the network header type, as ConnectX reports it
 * on RoCEv2 (its CQE's L3 type; UCX's UD transport reads it to build the
 * reply's address): 2 for IPv4, 1 for IPv6 */
#define DPV_WC_SL_IPV4 2
#define DPV_WC_SL_IPV6 1

#endif
