/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * UD ids of the drop-in librdmacm.so.1 (dpv_rdmacm_ud.c): SIDR on the IB
 * CM. The connection calls (dpv_rdmacm_conncall.c) and the CM event
 * callback (dpv_rdmacm_conn.c) hand UD ids to these. Internal.
 */
#ifndef DPV_RDMACM_UD_H
#define DPV_RDMACM_UD_H

#include <stdbool.h>

#include "dpv_cm.h"
#include "dpv_rdmacm.h"

/** True for an id whose QP type is UD (RDMA_PS_UDP, RDMA_PS_IPOIB). */
bool dpv_rdmacm_ud_id(const struct rdma_cm_id *id);

/**
 * rdma_connect on a UD id in ROUTE_RESOLVED: SIDR_REQ (state CONNECT).
 * @return 0, or -1 with errno EINVAL (private data over 180 bytes, no
 *         addresses) or the CM's error.
 */
int dpv_rdmacm_ud_connect(struct dpv_rdmacm_id *p, const struct rdma_conn_param *cp);

/** rdma_accept on a UD id: SIDR_REP status 0. @return 0, or -1 with errno EINVAL. */
int dpv_rdmacm_ud_accept(struct dpv_rdmacm_id *p, const struct rdma_conn_param *cp);

/** rdma_reject on a UD id: SIDR_REP status 2. @return 0, or -1 with errno EINVAL. */
int dpv_rdmacm_ud_reject(struct dpv_rdmacm_id *p, const void *pd, uint8_t len);

/** rdma_disconnect on a UD id: QP to ERR. @return 0, or -1 with errno. */
int dpv_rdmacm_ud_disconnect(struct dpv_rdmacm_id *p);

/**
 * The CM events of UD ids (SIDR_REQ, SIDR_REP, a SIDR_REQ's timeout);
 * service lock held.
 * @return true when the event was one of those (handled), false otherwise.
 */
bool dpv_rdmacm_ud_event(const struct dpv_cm_event *ev);

struct dpv_cma_hdr;

/**
 * The addresses of a child id (REQ or SIDR_REQ) from the cma header, as
 * Linux's cma_save_net_info: source = the header's destination with local
 * port lport, destination = the header's source address and port; the
 * dgid peer_gid and the port's sgid for it.
 */
void dpv_rdmacm_child_addrs(struct dpv_rdmacm_id *c, const struct dpv_cma_hdr *h, uint16_t lport,
			    const uint8_t peer_gid[16]);

#endif /* DPV_RDMACM_UD_H */
