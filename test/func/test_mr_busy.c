/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ibv_dereg_mr while RC work requests still use the MR, between dpv0 (A)
 * and dpv1 (B). Once ibv_dereg_mr has returned, the engine never touches
 * the MR's memory again: a retransmission, a READ response or a later
 * packet of a message completes its WQE in error instead (as an RNIC whose
 * key was invalidated: IBV_WC_LOC_PROT_ERR, QP to ERR), so the application
 * may unmap or reuse the memory at once.
 *
 * Each part unmaps the memory right after the dereg (or maps a poison
 * pattern over it): an engine copy from unmapped memory would be caught by
 * the copy guard (sw_fault.c) and counted in sw_mem_faults, which must not
 * move; poison bytes must never reach the peer.
 *   (a) a SEND retried after RNR NAKs (rnr_retry 7): LOC_PROT_ERR at the
 *       next retry, the WR behind it flushed;
 *   (b) an RDMA WRITE to a silent peer (retransmitted by the tail-loss
 *       probe): LOC_PROT_ERR at the next probe;
 *   (c) an RDMA READ whose local buffer is deregistered before its
 *       responses arrive: LOC_PROT_ERR, nothing written.
 * In shared mode (test_mr_busy_bb under dpverbsd: the engine reads the
 * application's memory with process_vm_readv, which returns an error, not
 * a fault, for unmapped memory) only what reaches dpv1 and the completions
 * are checked.
 *   test_mr_busy          (a) to (c)
 *   test_mr_busy lossy    64 SENDs and WRITEs of 16 KiB under DPVERBS_FAULT
 *                         drop (set by the test unless given), a second
 *                         thread posting WRITEs on the same QP from another
 *                         MR (so that its doorbells resend rewound WQEs);
 *                         the MR is deregistered in mid-stream and poisoned:
 *                         each WR completes SUCCESS (acknowledged before),
 *                         then one LOC_PROT_ERR at most and the rest
 *                         flushed; no poison byte reaches dpv1.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
#include <sys/mman.h>
#include <unistd.h>

#include "dpvt_verbs.h"

static struct dpvt_ep A, B;
static uint8_t *bbuf;
static struct ibv_mr *bmr;
#define BUFSZ (1u << 20)
#define POISON 0xee

#ifndef MR_BUSY_BLACKBOX
/* WHITE-BOX: internal headers and the copy guard's fault counter. Their
 * uses stay in this file, each marked WHITE-BOX. Built with
 * MR_BUSY_BLACKBOX (test_mr_busy_bb, shared mode: the engine is in
 * dpverbsd) the waits are timed and only the data is checked. */
#include "dpv_verbs.h"
#include "dpv_port.h"
#include "dpv_fault.h"
extern uint64_t sw_mem_faults;
static struct dpv_port *P0;
static uint64_t cnt(struct dpv_port *p, enum dpv_cnt c) { return DPV_STAT_READ(p, cnt[c]); }
static uint64_t faults(void) { return __atomic_load_n(&sw_mem_faults, __ATOMIC_RELAXED); }
#define CNT(c) cnt(P0, c)
#else
enum { DPV_CNT_RNR_NAK_RCVD, DPV_CNT_PROBE };
static uint64_t faults(void) { return 0; }
#define CNT(c) 0ull
#endif

static int pair(struct ibv_qp **qa, struct ibv_qp **qb, const struct dpvt_conn *oa)
{
	struct dpvt_conn da = dpvt_conn_default(), db = dpvt_conn_default();
	*qa = dpvt_ep_qp(&A, IBV_QPT_RC, 128, 128, NULL);
	*qb = dpvt_ep_qp(&B, IBV_QPT_RC, 128, 128, NULL);
	if (!*qa || !*qb)
		return -1;
	return dpvt_connect(*qa, A.ctx, oa ? oa : &da, *qb, B.ctx, &db, false);
}

static void unpair(struct ibv_qp *qa, struct ibv_qp *qb)
{
	if (qa)
		ibv_destroy_qp(qa);
	if (qb)
		ibv_destroy_qp(qb);
	struct ibv_wc wc[16];
	while (ibv_poll_cq(A.scq, 16, wc) > 0 || ibv_poll_cq(A.rcq, 16, wc) > 0 || ibv_poll_cq(B.scq, 16, wc) > 0 ||
	       ibv_poll_cq(B.rcq, 16, wc) > 0)
		;
	dpvt_drain_async(A.ctx);
	dpvt_drain_async(B.ctx);
}

/* An anonymous mapping of len bytes filled with v, registered in A's PD. */
static uint8_t *map_mr(size_t len, uint8_t v, struct ibv_mr **mr)
{
	uint8_t *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return NULL;
	memset(m, v, len);
	*mr = ibv_reg_mr(A.pd, m, len, IBV_ACCESS_LOCAL_WRITE);
	if (!*mr) {
		munmap(m, len);
		return NULL;
	}
	return m;
}

/* Drive the engine (inline progress runs in the CQ polls) until counter c
 * of dpv0 reached at least want, for at most ms (black-box: 50 ms, in
 * which the RNR retries and the probes (1, 2, 4 ... ms) happen). */
static bool wait_cnt(int c, uint64_t want, unsigned int ms)
{
	struct ibv_wc wc;
#ifdef MR_BUSY_BLACKBOX
	(void)c;
	(void)want;
	for (uint64_t end = dpvt_now_ms() + 50; dpvt_now_ms() < end;)
		ibv_poll_cq(A.rcq, 1, &wc); /* nothing arrives there */
	return true;
#else
	uint64_t end = dpvt_now_ms() + ms;
	while (cnt(P0, (enum dpv_cnt)c) < want && dpvt_now_ms() < end)
		ibv_poll_cq(A.rcq, 1, &wc); /* nothing arrives there */
	return cnt(P0, (enum dpv_cnt)c) >= want;
#endif
}

static void expect(const char *what, const struct ibv_wc *wc, int got, int n, const enum ibv_wc_status *st)
{
	CHECK_EQ(got, n, what);
	for (int i = 0; i < got && i < n; i++)
		CHECK(wc[i].status == st[i] && wc[i].wr_id == (uint64_t)i + 1, "%s: completion %d: %s (wr_id %llu), %s expected",
		      what, i, ibv_wc_status_str(wc[i].status), (unsigned long long)wc[i].wr_id,
		      ibv_wc_status_str(st[i]));
}

/* No byte of [p, p + len) is the poison. */
static bool clean(const uint8_t *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] == POISON)
			return false;
	return true;
}

/* ---- (a) a SEND retried after RNR NAKs ---- */
static void t_rnr_send(void)
{
	struct ibv_qp *qa, *qb;
	struct ibv_mr *mr;
	uint8_t *m = map_mr(65536, 0x5a, &mr);
	if (!m || pair(&qa, &qb, NULL)) {
		CHECK(0, "rnr send: set-up");
		return;
	}
	uint64_t rnr0 = CNT(DPV_CNT_RNR_NAK_RCVD);
	/* 8 packets of 1 KiB; B has no receive posted: RNR NAK, for ever */
	CHECK_EQ(dpvt_post_wr(qa, IBV_WR_SEND, 1, m, 8192, mr->lkey, 0, 0, 0, IBV_SEND_SIGNALED), 0, "post SEND");
	CHECK_EQ(dpvt_post_wr(qa, IBV_WR_SEND, 2, m + 8192, 100, mr->lkey, 0, 0, 0, IBV_SEND_SIGNALED), 0,
		 "post a second SEND");
	CHECK(wait_cnt(DPV_CNT_RNR_NAK_RCVD, rnr0 + 3, 2000), "three RNR NAKs (%llu)",
	      (unsigned long long)(CNT(DPV_CNT_RNR_NAK_RCVD) - rnr0));
	uint64_t f0 = faults();
	CHECK_EQ(ibv_dereg_mr(mr), 0, "ibv_dereg_mr with the SEND still being retried");
	munmap(m, 65536);
	/* a receive now: a retry that still read the memory would be accepted */
	CHECK_EQ(dpvt_post_recv(qb, bmr, 11, 0, 16384), 0, "B posts a receive");
	struct ibv_wc wc[2];
	static const enum ibv_wc_status st[2] = {IBV_WC_LOC_PROT_ERR, IBV_WC_WR_FLUSH_ERR};
	expect("rnr send", wc, dpvt_poll_n(A.scq, wc, 2, 2000), 2, st);
	CHECK_EQ(dpvt_qp_state(qa), IBV_QPS_ERR, "A in ERR after LOC_PROT_ERR");
	CHECK_EQ(dpvt_poll_quiet(B.rcq, 50), 0, "B received nothing");
	CHECK_EQ(faults(), f0, "no engine copy touched the unmapped memory");
	unpair(qa, qb);
}

/* ---- (b) an RDMA WRITE to a silent peer ---- */
static void t_silent_write(void)
{
	struct ibv_qp *qa, *qb;
	struct ibv_mr *mr;
	struct dpvt_conn oa = dpvt_conn_default();
	oa.timeout = 17; /* 537 ms: the tail-loss probe (1 ms, doubling) resends first */
	uint8_t *m = map_mr(65536, 0x6b, &mr);
	if (!m || pair(&qa, &qb, &oa)) {
		CHECK(0, "silent write: set-up");
		return;
	}
	CHECK_EQ(dpvt_qp_set_state(qb, IBV_QPS_RESET), 0, "B to RESET (drops everything)");
	uint64_t probe0 = CNT(DPV_CNT_PROBE);
	CHECK_EQ(dpvt_post_wr(qa, IBV_WR_RDMA_WRITE, 1, m, 16384, mr->lkey, (uintptr_t)bbuf, bmr->rkey, 0,
			      IBV_SEND_SIGNALED), 0, "post WRITE");
	CHECK(wait_cnt(DPV_CNT_PROBE, probe0 + 2, 2000), "two probes resent the WRITE");
	uint64_t f0 = faults();
	CHECK_EQ(ibv_dereg_mr(mr), 0, "ibv_dereg_mr with the WRITE outstanding");
	munmap(m, 65536);
	struct ibv_wc wc[1];
	static const enum ibv_wc_status st[1] = {IBV_WC_LOC_PROT_ERR};
	expect("silent write", wc, dpvt_poll_n(A.scq, wc, 1, 2000), 1, st);
	CHECK_EQ(dpvt_qp_state(qa), IBV_QPS_ERR, "A in ERR after LOC_PROT_ERR");
	CHECK_EQ(faults(), f0, "no engine copy touched the unmapped memory");
	unpair(qa, qb);
}

/* ---- (c) a READ whose local buffer goes before its responses come ---- */
static void t_read_target(void)
{
	struct ibv_qp *qa, *qb;
	struct ibv_mr *mr;
	struct dpvt_conn oa = dpvt_conn_default(), ob = dpvt_conn_default();
	oa.timeout = 17;
	uint8_t *m = map_mr(65536, 0, &mr);
	if (!m || pair(&qa, &qb, &oa)) {
		CHECK(0, "read target: set-up");
		return;
	}
	memset(bbuf, 0x7c, 16384);
	CHECK_EQ(dpvt_qp_set_state(qb, IBV_QPS_RESET), 0, "B to RESET (drops the READ)");
	uint64_t probe0 = CNT(DPV_CNT_PROBE);
	CHECK_EQ(dpvt_post_wr(qa, IBV_WR_RDMA_READ, 1, m, 16384, mr->lkey, (uintptr_t)bbuf, bmr->rkey, 0,
			      IBV_SEND_SIGNALED), 0, "post READ");
	CHECK(wait_cnt(DPV_CNT_PROBE, probe0 + 1, 2000), "a probe resent the READ");
	uint64_t f0 = faults();
	CHECK_EQ(ibv_dereg_mr(mr), 0, "ibv_dereg_mr with the READ outstanding");
	munmap(m, 65536);
	/* B back, expecting A's PSNs: the next resent READ is answered */
	CHECK_EQ(dpvt_qp_up(qb, A.ctx, qa->qp_num, &ob, IBV_QPS_RTS), 0, "B back to RTS");
	struct ibv_wc wc[1];
	static const enum ibv_wc_status st[1] = {IBV_WC_LOC_PROT_ERR};
	expect("read target", wc, dpvt_poll_n(A.scq, wc, 1, 3000), 1, st);
	CHECK_EQ(dpvt_qp_state(qa), IBV_QPS_ERR, "A in ERR after LOC_PROT_ERR");
	CHECK_EQ(faults(), f0, "no READ response was copied into the unmapped memory");
	unpair(qa, qb);
}

/* ---- lossy: a stream, the MR deregistered in mid-stream ---- */
#define LOSSY_N 64
#define LOSSY_LEN 16384u
#define LOSSY_SRC (LOSSY_N * LOSSY_LEN)
#define POSTER_BASE 1000u

struct poster {
	struct ibv_qp *qp;
	uint8_t *src;
	uint32_t lkey;
	_Atomic int outstanding;
	_Atomic bool stop;
	unsigned int posted;
};

/* A second thread posting WRITEs (from its own MR, into the upper half of
 * B's buffer) on the same QP: every post rings the doorbell, which sends
 * inline whatever the QP has to send, the rewound WQEs of the stream too. */
static void *poster_main(void *arg)
{
	struct poster *p = arg;
	while (!atomic_load(&p->stop)) {
		if (atomic_load(&p->outstanding) >= 8) {
			usleep(50);
			continue;
		}
		uint64_t id = POSTER_BASE + p->posted;
		size_t off = BUFSZ / 2 + (p->posted % 8) * 4096;
		if (dpvt_post_wr(p->qp, IBV_WR_RDMA_WRITE, id, p->src, 4096, p->lkey, (uintptr_t)bbuf + off, bmr->rkey, 0,
				 IBV_SEND_SIGNALED) != 0)
			break;
		atomic_fetch_add(&p->outstanding, 1);
		p->posted++;
		usleep(200);
	}
	return NULL;
}

static void t_lossy(void)
{
	struct ibv_qp *qa, *qb;
	struct ibv_mr *mr, *mr2;
	uint8_t *m = map_mr(LOSSY_SRC, 0, &mr), *m2 = map_mr(4096, 0x33, &mr2);
	if (!m || !m2 || pair(&qa, &qb, NULL)) {
		CHECK(0, "lossy: set-up");
		return;
	}
	for (uint32_t i = 0; i < LOSSY_N; i++)
		memset(m + (size_t)i * LOSSY_LEN, (int)(0x10 + i), LOSSY_LEN);
	memset(bbuf, 0, BUFSZ);
	/* even WRs are SENDs into receive i/2, odd ones WRITEs to slot i/2 of
	 * the lower half's upper quarter */
	for (uint32_t i = 0; i < LOSSY_N / 2; i++)
		CHECK_EQ(dpvt_post_recv(qb, bmr, 100 + i, (size_t)i * LOSSY_LEN / 2, LOSSY_LEN / 2), 0, "post receive");
	struct poster p = {.qp = qa, .src = m2, .lkey = mr2->lkey};
	pthread_t th;
	CHECK_EQ(pthread_create(&th, NULL, poster_main, &p), 0, "poster thread");
	uint64_t f0 = faults();
	for (uint32_t i = 0; i < LOSSY_N; i++) {
		bool send = (i & 1) == 0;
		size_t woff = BUFSZ / 4 + (size_t)(i / 2) * LOSSY_LEN / 2;
		CHECK_EQ(dpvt_post_wr(qa, send ? IBV_WR_SEND : IBV_WR_RDMA_WRITE, i + 1, m + (size_t)i * LOSSY_LEN,
				      LOSSY_LEN / 2, mr->lkey, send ? 0 : (uintptr_t)bbuf + woff, send ? 0 : bmr->rkey, 0,
				      IBV_SEND_SIGNALED), 0, "post");
	}
	enum ibv_wc_status st[LOSSY_N + 1];
	int done = 0, other = 0;
	bool dereg = false;
	uint64_t end = dpvt_now_ms() + 20000;
	while (done < LOSSY_N && dpvt_now_ms() < end) {
		struct ibv_wc wc[16];
		int n = ibv_poll_cq(A.scq, 16, wc);
		for (int k = 0; k < n; k++) {
			if (wc[k].wr_id >= POSTER_BASE) {
				atomic_fetch_sub(&p.outstanding, 1);
				other++;
				continue;
			}
			if (wc[k].wr_id >= 1 && wc[k].wr_id <= LOSSY_N && (int)wc[k].wr_id == done + 1)
				st[done++] = wc[k].status;
			else
				CHECK(0, "lossy: completion out of order: wr_id %llu after %d", (unsigned long long)wc[k].wr_id,
				      done);
		}
		if (!dereg && done >= 8) {
			/* a quarter of the stream is acknowledged: the rest is in
			 * flight, some of it being retransmitted */
			dereg = true;
#ifndef MR_BUSY_BLACKBOX
			printf("lossy: ibv_dereg_mr after %d completions (%llu go-backs, %llu probes so far)\n", done,
			       (unsigned long long)CNT(DPV_CNT_RETRY), (unsigned long long)CNT(DPV_CNT_PROBE));
#else
			printf("lossy: ibv_dereg_mr after %d completions\n", done);
#endif
			CHECK_EQ(ibv_dereg_mr(mr), 0, "ibv_dereg_mr in mid-stream");
			/* the same addresses, now poison: a copy after the dereg
			 * would send it */
			CHECK(mmap(m, LOSSY_SRC, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == m,
			      "poison mapping");
			memset(m, POISON, LOSSY_SRC);
		}
	}
	atomic_store(&p.stop, true);
	pthread_join(th, NULL);
	CHECK_EQ(done, LOSSY_N, "every WR of the stream completes");
	int ok = 0, prot = 0, flushed = 0, bad = 0;
	for (int i = 0; i < done; i++) {
		if (st[i] == IBV_WC_SUCCESS && !prot && !flushed)
			ok++;
		else if (st[i] == IBV_WC_LOC_PROT_ERR)
			prot++;
		else if (st[i] == IBV_WC_WR_FLUSH_ERR)
			flushed++;
		else {
			bad++;
			CHECK(0, "lossy: WR %d: %s", i + 1, ibv_wc_status_str(st[i]));
		}
	}
	printf("lossy: %d succeeded, %d LOC_PROT_ERR, %d flushed; the other thread posted %u WRITEs (%d completed)\n",
	       ok, prot, flushed, p.posted, other);
	CHECK(prot <= 1 && ok + prot + flushed + bad == done, "SUCCESS first, then one LOC_PROT_ERR at most, then flushed");
	CHECK(ok < LOSSY_N, "the dereg came while WRs were outstanding");
	if (ok < LOSSY_N)
		CHECK_EQ(dpvt_qp_state(qa), IBV_QPS_ERR, "A in ERR");
	/* what B holds is the stream's data or zero, never the poison */
	struct ibv_wc wc[LOSSY_N];
	int nr = dpvt_poll_n(B.rcq, wc, LOSSY_N / 2, 200);
	for (int k = 0; k < nr; k++) {
		if (wc[k].status != IBV_WC_SUCCESS)
			continue;
		uint32_t j = (uint32_t)(wc[k].wr_id - 100);
		const uint8_t *r = bbuf + (size_t)j * LOSSY_LEN / 2;
		bool same = wc[k].byte_len == LOSSY_LEN / 2;
		for (uint32_t b = 0; same && b < LOSSY_LEN / 2; b++)
			same = r[b] == (uint8_t)(0x10 + 2 * j);
		CHECK(same, "lossy: receive %u holds SEND %u's data", j, 2 * j + 1);
	}
	CHECK(clean(bbuf, BUFSZ), "no poison byte reached dpv1");
	CHECK_EQ(faults(), f0, "no engine copy faulted");
	unpair(qa, qb);
	ibv_dereg_mr(mr2);
	munmap(m2, 4096);
	munmap(m, LOSSY_SRC);
}

int main(int argc, char **argv)
{
	bool lossy = argc > 1 && !strcmp(argv[1], "lossy");
	if (lossy) {
		const char *f = getenv("DPVERBS_FAULT");
		if (!f || !*f)
			setenv("DPVERBS_FAULT", "drop=0.1,seed=5", 1);
		printf("DPVERBS_FAULT=%s\n", getenv("DPVERBS_FAULT"));
	} else {
		unsetenv("DPVERBS_FAULT");
	}
	if (dpvt_ep_open(&A, "dpv0", 1024, false) || dpvt_ep_open(&B, "dpv1", 1024, false)) {
		printf("0 passed, 1 failed\n");
		return 1;
	}
#ifndef MR_BUSY_BLACKBOX
	P0 = dpv_port_by_name("dpv0"); /* WHITE-BOX */
	if (!P0) {
		printf("0 passed, 1 failed\n");
		return 1;
	}
#endif
	bbuf = aligned_alloc(4096, BUFSZ);
	if (bbuf)
		memset(bbuf, 0, BUFSZ);
	bmr = bbuf ? ibv_reg_mr(B.pd, bbuf, BUFSZ, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				 IBV_ACCESS_REMOTE_READ) : NULL;
	if (!bmr) {
		printf("0 passed, 1 failed\n");
		return 1;
	}
	if (lossy) {
#ifndef MR_BUSY_BLACKBOX
		CHECK(dpv_fault_enabled(), "fault injection on"); /* WHITE-BOX */
#endif
		t_lossy();
		return dpvt_finish();
	}
	static const struct {
		const char *name;
		void (*fn)(void);
	} parts[] = {
		{"(a) SEND retried after RNR", t_rnr_send},
		{"(b) WRITE to a silent peer", t_silent_write},
		{"(c) READ target", t_read_target},
	};
	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
		int f0 = dpvt_fail_count();
		uint64_t t0 = dpvt_now_ms();
		parts[i].fn();
		printf("%-30s %s (%llu ms)\n", parts[i].name, dpvt_fail_count() == f0 ? "ok" : "FAILED",
		       (unsigned long long)(dpvt_now_ms() - t0));
		fflush(stdout);
	}
	return dpvt_finish();
}
