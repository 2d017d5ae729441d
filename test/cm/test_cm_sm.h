/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_cm_sm's harness (test_cm_sm.c): two CM agents A (side 0) and B
 * (side 1) joined by an in-memory wire, a queue of MADs the test can drop,
 * duplicate, reorder or deliver one by one, and a fake clock.
 */
#ifndef TEST_CM_SM_H
#define TEST_CM_SM_H

#include "dpv_cm.h"
#include "test_cm.h"

#define SID 0x0000000001064853ull /* rdma_cm TCP port space, port 18515 */
#define T10 (4096ull << 10)       /* the harness's REQ remote CM response timeout */
#define T11 (4096ull << 11)       /* its local one: the passive side's REP/DREQ timeout */

#define WIRE_MAX 64
#define EV_MAX 64

struct wire_mad {
	int from;                   /* side that sent it */
	struct dpv_cm_addr to;
	uint8_t mad[DPV_MAD_SIZE];
	uint64_t at;                /* fake time it was sent */
};

struct ev_rec {
	enum dpv_cm_event_type type;
	struct dpv_cm_id *id;
	uint16_t rej_reason, timeout_attr;
	uint8_t ari_len;
	uint8_t pd[DPV_MAD_SIZE];
	size_t pd_len;
	uint64_t at;
	enum dpv_cm_state state;    /* id's state during the callback */
};

struct side {
	struct dpv_cm_agent agent;
	uint8_t gid[16];
	struct ev_rec ev[EV_MAX];
	int nev;
	/* answers the event callback gives by itself */
	bool auto_rep, auto_rtu, auto_drep;
	uint32_t qpn;               /* data QP of the auto REP */
	uint64_t sent;              /* MADs this side sent */
};

extern struct side sides[2];
extern struct wire_mad wire[WIRE_MAX];
extern int nwire;
extern uint64_t now_ns;

void harness_init(uint64_t seed);
void harness_fini(void);
/** Delivers wire[i] to the other side and removes it; returns dpv_cm_rx()'s value. */
int deliver(int i);
/** Delivers everything, also what the deliveries cause (bounded). */
void pump(void);
void wire_drop(int i);
void wire_dup(int i);
/** Decodes wire[i] into m; true on success. */
bool wire_decode(int i, struct dpv_cm_mad *m);
/** Advances the fake clock to t and runs both agents' timers. */
void clock_to(uint64_t t);
/** The last event of side s, or NULL. */
struct ev_rec *last_ev(int s);
/** Number of events of type t side s got. */
int count_ev(int s, enum dpv_cm_event_type t);
/** A REQ param from side s to the other side. */
void req_param(struct dpv_cm_req_param *p, int s, uint64_t service_id);
/** Connects A -> B through the listener of service_id: A's id on success. */
struct dpv_cm_id *connect_ab(uint64_t service_id, struct dpv_cm_id **b_id);

/** SIDR timing, duplicates, loss and destroy (test_cm_sm_sidr.c). */
void test_sidr_exchange(void);

/** 200 lossy connect/disconnect runs (test_cm_sm_soak.c). */
void test_lossy_soak(void);

#endif /* TEST_CM_SM_H */
