/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * The CM service of the drop-in librdmacm.so.1 (dpv_rdmacm_cmsvc.c) and the
 * connection calls built on it (dpv_rdmacm_conn.c). Internal.
 */
#ifndef DPV_RDMACM_CMSVC_H
#define DPV_RDMACM_CMSVC_H

#include <stdbool.h>
#include <stdint.h>

#include "dpv_cm.h"
#include "dpv_cmrt.h"

/** CLOCK_MONOTONIC in ns. */
uint64_t dpv_rdmacm_now_ns(void);

/** Linux's CMA_CM_RESPONSE_TIMEOUT and CMA_MAX_CM_RETRIES (kernel 6.1). */
#define DPV_RDMACM_CM_TIMEOUT 20
#define DPV_RDMACM_CM_RETRIES 15
/**
 * The CM response timeout (4.096 us * 2^t) and the retries a REQ announces
 * and uses: DPV_RDMACM_CM_TIMEOUT / DPV_RDMACM_CM_RETRIES unless the
 * environment sets DPVERBS_RDMACM_CM_TIMEOUT (0..31) or
 * DPVERBS_RDMACM_CM_RETRIES (0..15) (dpverbs_rdmacm(7)).
 */
uint8_t dpv_rdmacm_cm_timeout(void);
uint8_t dpv_rdmacm_cm_retries(void);

/** Takes / releases the service lock (every runtime and agent use). */
void dpv_rdmacm_cmsvc_lock(void);
void dpv_rdmacm_cmsvc_unlock(void);

/**
 * The runtime of ctx, opened (and the polling thread started) on first use.
 * Service lock held.
 * @return the runtime, or NULL with errno set.
 */
struct dpv_cmrt *dpv_rdmacm_cmsvc_rt(struct ibv_context *ctx);

/**
 * True once the process is exiting (the service's atexit handler or the
 * library destructor ran): the CM ids are destroyed, the runtimes closed.
 * Service lock held.
 */
bool dpv_rdmacm_cmsvc_exiting(void);

/** Whether the polling thread runs (tests: it stops when no CM id is left). */
bool dpv_rdmacm_cmsvc_running(void);

/** The device whose runtime owns agent, or NULL. Service lock held. */
struct ibv_context *dpv_rdmacm_cmsvc_ctx(const struct dpv_cm_agent *agent);

/** The runtimes' event callback (dpv_rdmacm_conn.c); service lock held. */
void dpv_rdmacm_cm_event(void *arg, const struct dpv_cm_event *ev);

struct dpv_rdmacm_id;
/** Moves the id's QP INIT -> RTR -> RTS with its connection values. */
int dpv_rdmacm_qp_connect(struct dpv_rdmacm_id *p);

#endif /* DPV_RDMACM_CMSVC_H */
