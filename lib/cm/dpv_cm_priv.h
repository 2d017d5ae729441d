/* SPDX-License-Identifier: BSD-3-Clause */
/* Internals shared by dpv_cm.c (ids, timers, sends) and dpv_cm_rx.c (receive). */
#ifndef DPV_CM_PRIV_H
#define DPV_CM_PRIV_H

#include "dpv_cm.h"

/** Encodes m and sends it from id; keeps it in id->out; retrans: retransmit. */
int cm_id_send(struct dpv_cm_id *id, struct dpv_cm_mad *m, bool retrans, uint64_t now);
/** Resends id->out once (a duplicate's answer). */
int cm_id_resend(struct dpv_cm_id *id);
/** Sets id's timer to deadline (every finite deadline is set this way:
 * the agent's next_due lets dpv_cm_timer() skip its scan until then). */
void cm_id_arm(struct dpv_cm_id *id, uint64_t deadline);
/** Stops retransmitting. */
void cm_id_stop(struct dpv_cm_id *id);
/** TIMEWAIT until now + timewait_ns. */
void cm_id_timewait(struct dpv_cm_id *id, uint64_t now);
/** Back to IDLE (or freed when destroyed). */
void cm_id_idle(struct dpv_cm_id *id);
/** A free id with a fresh local communication ID, or NULL. */
struct dpv_cm_id *cm_id_alloc(struct dpv_cm_agent *a, void *ctx);
/** Sends a MAD that belongs to no id (REJ to an unknown REQ). */
int cm_send_raw(struct dpv_cm_agent *a, const struct dpv_cm_addr *to, struct dpv_cm_mad *m);
/** Delivers an event (private data and length filled from ev->mad). */
void cm_event(struct dpv_cm_id *id, struct dpv_cm_event *ev);
/** A TID for a new request of id. */
uint64_t cm_new_tid(const struct dpv_cm_id *id);
/** Copies len bytes of pd into dst (cap bytes); -EINVAL when too long. */
int cm_copy_pd(uint8_t *dst, size_t cap, const void *pd, size_t len);

#endif /* DPV_CM_PRIV_H */
