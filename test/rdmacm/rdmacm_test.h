/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Helpers shared by the rdmacm tests (test_rdmacm_*.c): addresses, waiting
 * for the next event of a channel, a resolved client id, bounded CQ polls
 * and the flag/condition handshake of the tests' server threads. They
 * count in the tests' CHECK totals exactly as the copies they replace did.
 */
#ifndef RDMACM_TEST_H
#define RDMACM_TEST_H

#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <rdma/rdma_cma.h>

/* How long rt_wait_event waits (ms); 3000 unless a test sets it. */
extern int rt_wait_ms;
/* The address rt_client_to connects to, and whether it resolves from that
 * same address (both ends on one port: "loopback"). */
extern const char *rt_server;
extern bool rt_loopback;

/* An AF_INET address ip:port. */
struct sockaddr_in rt_sin4(const char *ip, uint16_t port);
/* The next event of ch (rt_wait_ms), which must be `want` (one check
 * each); NULL, one failed check, when there is none. */
struct rdma_cm_event *rt_wait_event(struct rdma_event_channel *ch, enum rdma_cm_event_type want);
/* rt_wait_event, then the event's status must be `status`; acks it. */
void rt_expect(struct rdma_event_channel *ch, enum rdma_cm_event_type want, int status);
/* rt_wait_event and ack, the status not checked. */
void rt_ack_next(struct rdma_event_channel *ch, enum rdma_cm_event_type want);
/* A new id in port space ps (RDMA_PS_UDP: a UD id) on ch with address and
 * route resolved to rt_server:port (from rt_server with rt_loopback). */
struct rdma_cm_id *rt_client_to(struct rdma_event_channel *ch, uint16_t port, enum rdma_port_space ps);
/* One completion on cq within `secs` s, successful; no check. */
bool rt_poll_wc(struct ibv_cq *cq, struct ibv_wc *wc, int secs);
/* One completion on cq within 3 s: a check that it came and one that
 * it succeeded (`what` names it). */
bool rt_poll_check(struct ibv_cq *cq, struct ibv_wc *wc, const char *what);
/* Sets *flag under lock and signals cond. */
void rt_flag_set(pthread_mutex_t *lock, pthread_cond_t *cond, bool *flag);
/* Waits (5 s) until *flag is set under lock; its value. */
bool rt_flag_wait(pthread_mutex_t *lock, pthread_cond_t *cond, bool *flag);

#endif
