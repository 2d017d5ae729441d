/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The completion-event handshake of a CQ ring (lib/verbs/dpv_queue.h):
 * the consumer arms (dpv_cq_ring_arm, what ibv_req_notify_cq does) and then
 * polls the producer index; the producer publishes a CQE
 * (dpv_cq_ring_put_ci) and then reads the arm. Whatever the interleaving,
 * the consumer must either see the CQE in that poll or be signalled
 * (put returns 1): otherwise a program sleeping in ibv_get_cq_event after
 * an empty poll (rping's CQ thread) waits for ever. Two threads race the
 * two halves again and again, one CQE per round; a round where neither
 * happened is a lost event. Without the fences the race lost about 1 round
 * in 700 on x86 (the load passing the store in the store buffer); it is
 * probabilistic, so the test only fails when a loss really happened.
 * Bounded: at most ROUNDS rounds or about TIME_S seconds.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <time.h>

#include "dpv_queue.h"
#include "dpvt_check.h"

#define ROUNDS 1000000u
#define TIME_S 3
#define SIZE 64u

static _Alignas(64) unsigned char mem[1 << 16];
static struct dpv_ring_hdr *r;
static _Atomic uint32_t turn, done, events;
static _Atomic bool stop;

static void *producer(void *arg)
{
	(void)arg;
	struct dpv_cqe c = {0};
	for (uint32_t i = 1;; i++) {
		while (atomic_load(&turn) != i)
			if (atomic_load(&stop))
				return NULL;
		if (dpv_cq_ring_put(r, SIZE, &c, 0) > 0)
			atomic_fetch_add(&events, 1);
		atomic_store(&done, i);
	}
}

int main(void)
{
	r = (struct dpv_ring_hdr *)mem;
	dpv_ring_init(r, DPV_RING_CQ, SIZE, sizeof(struct dpv_cqe));
	pthread_t t;
	CHECK(pthread_create(&t, NULL, producer, NULL) == 0, "producer thread");
	time_t end = time(NULL) + TIME_S;
	uint32_t ci = 0, i;
	unsigned long lost = 0;
	for (i = 1; i <= ROUNDS && ((i & 1023) || time(NULL) < end); i++) {
		uint32_t ev = atomic_load(&events);
		atomic_store(&turn, i); /* the producer pushes now, concurrently */
		dpv_cq_ring_arm(r, DPV_CQ_ARM_NEXT);
		uint32_t pi = atomic_load_explicit(&r->pi, memory_order_acquire); /* the poll */
		while (atomic_load(&done) != i)
			;
		if (pi == ci && atomic_load(&events) == ev)
			lost++;
		ci = atomic_load(&r->pi);
		atomic_store_explicit(&r->ci, ci, memory_order_release);
		atomic_store(&r->arm, 0);
	}
	atomic_store(&stop, true);
	pthread_join(t, NULL);
	printf("note: %u rounds\n", i - 1);
	CHECK(i > 1000, "rounds run (%u)", i - 1);
	CHECK(lost == 0, "no lost completion event: %lu rounds neither saw the CQE nor were signalled", lost);
	return dpvt_finish();
}
