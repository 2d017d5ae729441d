/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Shared protection domains across processes (ibv_alloc_shpd(3),
 * ibv_share_pd(3)) on one dpverbsd (run by with_daemon.sh). Black-box: only
 * the exported API of libdpverbs.so.
 *
 * One binary, four processes. The orchestrator (role A) forks and execs
 * itself (/proc/self/exe B|C|P FD) before it opens any verbs device, and
 * drives the others step by step over SOCK_SEQPACKET socketpairs carrying
 * one fixed struct msg per message.
 *
 *   A  dpv0: a PD, an MR (local write, remote write, remote read) on an
 *      aligned_alloc'd 64 KiB buffer with known patterns, ibv_alloc_shpd.
 *      Asserts: a second ibv_alloc_shpd on the PD is EBUSY, NULL arguments
 *      and a parent domain EINVAL, sharing the PD in its own process
 *      EEXIST. Hands the struct ibv_shpd bytes and the MR's
 *      addr/lkey/rkey/length to B, C and P.
 *   B, C  dpv0: ibv_share_pd with a wrong key (EACCES), an unknown id
 *      (ENOENT), NULL arguments (EINVAL), then the right key (a PD), then
 *      again (EEXIST); the handle dropped and taken again; ibv_alloc_shpd on
 *      the shared handle (EBUSY). A CQ pair and an RC QP on the shared PD,
 *      connected (QPN, GID, PSN relayed by A) to a QP of P. B uses A's
 *      bytes [0, 32K), C [32K, 64K).
 *   P  dpv1: a PD and an MR of its own and one RC QP per B and C; on dpv0 a
 *      PD of its own for the isolation pairs (dpv1 <-> dpv0, both P's).
 *
 * Data movement (4096 bytes each, verified byte for byte by the process
 * that owns the memory, B and C concurrently):
 *   T1  B/C SEND with A's lkey and address               -> P checks
 *   T2  P SEND; B/C's receive SGE is A's MR              -> A checks
 *   T3  B/C RDMA WRITE from A's MR into P's MR           -> P checks
 *   T4  B/C RDMA READ from P's MR into A's MR            -> A checks
 *   T5  P RDMA WRITE with A's rkey through its QP to B/C -> A checks
 * Isolation (P): an RDMA WRITE with A's rkey to P's own dpv0 QP (P's PD,
 * not A's) completes with IBV_WC_REM_ACCESS_ERR; a SEND whose SGE is A's
 * lkey on P's own dpv0 QP completes with IBV_WC_LOC_PROT_ERR and delivers
 * nothing; A's canary bytes stay untouched. ibv_share_pd on dpv1 (another
 * device) is ENOENT.
 * Lifetime: A's ibv_dealloc_pd is EBUSY while its MR exists, then 0 after
 * ibv_dereg_mr, while B and C still hold the domain; P can still share it
 * (and drops its handle); B and C register new MRs on their handles and
 * move data both ways (SEND to P, RDMA WRITE from P); A's deregistered keys
 * are refused (P's RDMA WRITE with its rkey through B's QP:
 * IBV_WC_REM_ACCESS_ERR; C's SEND with its lkey: IBV_WC_LOC_PROT_ERR), A's
 * bytes stay as they were; B/C's ibv_dealloc_pd is EBUSY while their
 * objects exist, then 0; afterwards the share id is gone (ENOENT).
 *
 * Every process counts its checks; the children report their counts to A
 * and exit 0 only when all passed. A waits for them (bounded; on timeout it
 * kills its own children by PID), prints the total "N passed, N failed"
 * and exits non-zero on any failure. Every wait is bounded: completions
 * 5 s, replies 20 s, commands 30 s. The whole run takes about a second.
 */
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <dpverbs.h>

#include "dpvt_verbs.h"

#define KEY 0x5348504453484b59ull /* the share key */
#define BUF_LEN (64u * 1024)
#define REGION (32u * 1024)  /* B: A's [0, 32K), C: [32K, 64K) */
#define LEN 4096u
/* offsets in A's region of B/C */
#define A_T1 0u             /* SEND source */
#define A_T2 (4u * 1024)    /* receive target */
#define A_T3 (8u * 1024)    /* RDMA WRITE source */
#define A_T4 (12u * 1024)   /* RDMA READ target */
#define A_T5 (16u * 1024)   /* P's RDMA WRITE target */
#define A_CANARY (56u * 1024) /* absolute: must never change */
/* offsets in P's region for B/C */
#define P_T1 0u             /* receive target of T1 */
#define P_T2 (4u * 1024)    /* SEND source of T2 */
#define P_T3 (8u * 1024)    /* RDMA WRITE target of T3 */
#define P_T4 (12u * 1024)   /* RDMA READ source of T4 */
#define P_T5 (16u * 1024)   /* RDMA WRITE source of T5 */
#define P_L1 (20u * 1024)   /* receive target of B/C's SEND from its new MR */
#define P_L2 (24u * 1024)   /* RDMA WRITE source into B/C's new MR */
#define P_ISO (28u * 1024)  /* isolation sources and targets */
/* B/C's new MR (after A dropped its handle) */
#define N_LEN (8u * 1024)   /* [0, 4K) SEND source, [4K, 8K) P's RDMA WRITE target */

#define POLL_MS 5000u
#define MSG_MS 20000       /* A waits this long for a reply */
#define CHILD_MS 30000     /* a child for the next command: longer, so A notices a hang first */
#define SEED 0x5348504400000000ull
/* the pattern of step s for child i (0: B, 1: C) */
#define PAT(s) (SEED + (s))
enum { S_T1 = 1, S_T2, S_T3, S_T4, S_T5, S_L1, S_L2, S_CANARY };

enum op {
	M_INFO = 1, /* A -> B, C, P: shpd, key, A's MR */
	M_QPINFO,   /* B, C, P -> A: QPN(s), PSN(s), GID */
	M_CONNECT,  /* A -> B, C, P: the peers' QPN, PSN, GID (and P's MR) */
	M_READY,    /* after RTS */
	M_T1,       /* B, C: SEND from A's MR */
	M_C1,       /* P: check T1 */
	M_T2,       /* P: SEND to B, C */
	M_T2W,      /* B, C: the receive completion of T2 */
	M_T3,       /* B, C: RDMA WRITE from A's MR */
	M_C3,       /* P: check T3 */
	M_T4,       /* B, C: RDMA READ into A's MR */
	M_T5,       /* P: RDMA WRITE with A's rkey */
	M_ISO,      /* P: isolation */
	M_L1,       /* B, C: new MR on the shared handle, SEND from it */
	M_L2,       /* P: share while alive, check the SENDs, RDMA WRITE into the new MRs */
	M_STALE_R,  /* P: RDMA WRITE with A's deregistered rkey through its QP to B */
	M_STALE_L,  /* C: SEND with A's deregistered lkey */
	M_L3,       /* B, C: check P's write, destroy everything, dealloc the handle */
	M_FINAL,    /* P: the share id is gone, destroy everything */
	M_EXIT,     /* all: report the counts and exit */
};

struct msg {
	uint32_t op;
	int32_t ok;
	struct ibv_shpd shpd;
	uint64_t key;
	uint64_t a_addr, a_len;
	uint32_t a_lkey, a_rkey;
	uint64_t p_addr;
	uint32_t p_rkey, pad;
	uint32_t qpn[2], psn[2];
	uint8_t gid[2][16];
	uint64_t n_addr[2];
	uint32_t n_rkey[2];
	int32_t npass, nfail;
};

static const char *g_role = "A";

static int msg_send(int fd, struct msg *m)
{
	return send(fd, m, sizeof(*m), MSG_NOSIGNAL) == (ssize_t)sizeof(*m) ? 0 : -1;
}

/* One message within timeout_ms; -1 on timeout, EOF, error or a short message. */
static int msg_recv(int fd, struct msg *m, int timeout_ms)
{
	uint64_t end = dpvt_now_ms() + (uint64_t)timeout_ms;
	for (;;) {
		int left = (int)(end - dpvt_now_ms());
		struct pollfd p = {.fd = fd, .events = POLLIN};
		if (left <= 0)
			return -1;
		int r = poll(&p, 1, left);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		ssize_t n = recv(fd, m, sizeof(*m), 0);
		if (n < 0 && errno == EINTR)
			continue;
		return n == (ssize_t)sizeof(*m) ? 0 : -1;
	}
}

/* ---- verbs helpers (all bounded) ---- */

static int post1(struct ibv_qp *qp, enum ibv_wr_opcode op, uint64_t wr_id, uint64_t addr, uint32_t len, uint32_t lkey,
		 uint64_t raddr, uint32_t rkey)
{
	struct ibv_sge sge = {.addr = addr, .length = len, .lkey = lkey};
	struct ibv_send_wr wr, *bad = NULL;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = op;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	return ibv_post_send(qp, &wr, &bad);
}

static int recv1(struct ibv_qp *qp, uint64_t wr_id, uint64_t addr, uint32_t len, uint32_t lkey)
{
	struct ibv_sge sge = {.addr = addr, .length = len, .lkey = lkey};
	struct ibv_recv_wr wr, *bad = NULL;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	return ibv_post_recv(qp, &wr, &bad);
}

/* One completion within POLL_MS with status st, opcode op, wr_id (checks counted). */
static bool wait_wc(struct ibv_cq *cq, uint64_t wr_id, enum ibv_wc_status st, enum ibv_wc_opcode op, uint32_t byte_len,
		    const char *what)
{
	struct ibv_wc wc;
	memset(&wc, 0, sizeof(wc));
	if (!CHECK(dpvt_poll_n(cq, &wc, 1, POLL_MS) == 1, "[%s] %s: no completion within %u ms", g_role, what,
		   POLL_MS))
		return false;
	bool ok = CHECK(wc.status == st, "[%s] %s: status %s (%d), expected %s", g_role, what,
			ibv_wc_status_str(wc.status), wc.status, ibv_wc_status_str(st));
	ok &= CHECK(wc.wr_id == wr_id, "[%s] %s: wr_id %llu, expected %llu", g_role, what,
		    (unsigned long long)wc.wr_id, (unsigned long long)wr_id);
	if (st == IBV_WC_SUCCESS) {
		ok &= CHECK(wc.opcode == op, "[%s] %s: opcode %d, expected %d", g_role, what, wc.opcode, op);
		if (op == IBV_WC_RECV)
			ok &= CHECK(wc.byte_len == byte_len, "[%s] %s: byte_len %u, expected %u", g_role, what,
				    wc.byte_len, byte_len);
	}
	return ok;
}

static bool check_pat(const uint8_t *p, uint64_t seed, uint64_t seq, const char *what)
{
	long off = dpvt_pat_check(p, LEN, seed, seq);
	return CHECK(off < 0, "[%s] %s: first differing byte at offset %ld of %u", g_role, what, off, LEN);
}

static void get_gid(struct ibv_context *ctx, uint8_t out[16])
{
	union ibv_gid g;
	memset(&g, 0, sizeof(g));
	CHECK_EQ(ibv_query_gid(ctx, 1, 1, &g), 0, "ibv_query_gid port 1 index 1");
	memcpy(out, g.raw, 16);
}

/* RESET -> INIT with our send PSN and the peer's. */
static struct dpvt_conn conn_of(uint32_t my_psn, uint32_t peer_psn)
{
	struct dpvt_conn o = dpvt_conn_default();
	o.sq_psn = my_psn;
	o.rq_psn = peer_psn;
	return o;
}

static bool qp_connect(struct ibv_qp *qp, const struct dpvt_conn *o, const uint8_t gid[16], uint32_t qpn)
{
	union ibv_gid g;
	memcpy(g.raw, gid, 16);
	int r = dpvt_qp_to_rtr(qp, &g, qpn, o);
	if (!r)
		r = dpvt_qp_to_rts(qp, o);
	return CHECK(r == 0, "[%s] RTR/RTS towards QP 0x%x: %s", g_role, qpn, strerror(r));
}

/* ---- child side ---- */

static int g_fd = -1;

/* The next command from A; leaves (status 1) when A is gone. */
static void child_recv(struct msg *m)
{
	if (msg_recv(g_fd, m, CHILD_MS) != 0) {
		CHECK(false, "[%s] no command from the orchestrator within %d ms (or it is gone)", g_role, CHILD_MS);
		printf("[%s] %d passed, %d failed (orchestrator lost)\n", g_role, dpvt_pass_count(), dpvt_fail_count());
		_exit(1);
	}
}

static void child_reply(struct msg *m, int fails_before)
{
	m->ok = dpvt_fail_count() == fails_before;
	m->npass = dpvt_pass_count();
	m->nfail = dpvt_fail_count();
	if (msg_send(g_fd, m) != 0) {
		fprintf(stderr, "[%s] cannot reply to the orchestrator\n", g_role);
		_exit(1);
	}
}

static int child_exit(struct msg *m)
{
	m->op = M_EXIT;
	child_reply(m, dpvt_fail_count());
	return dpvt_fail_count() ? 1 : 0;
}

/* B (idx 0) and C (idx 1): the shared PD's second and third handle. */
static int role_bc(int idx)
{
	struct msg m, info;
	child_recv(&info);
	if (!CHECK(info.op == M_INFO, "[%s] first message %u, expected INFO", g_role, info.op))
		return 1;
	int f0 = dpvt_fail_count();
	const uint64_t abase = info.a_addr + (uint64_t)idx * REGION;
	struct ibv_context *ctx = dpvt_open_dev("dpv0");
	if (!CHECK(ctx != NULL, "[%s] open dpv0", g_role))
		return 1;

	/* the refusals first */
	struct ibv_shpd s = info.shpd, bad = info.shpd;
	bad.id ^= 0x123456789ull;
	CHECK_NULL_ERRNO(ibv_share_pd(ctx, &s, KEY ^ 1), EACCES);
	CHECK_NULL_ERRNO(ibv_share_pd(ctx, &s, 0), EACCES);
	CHECK_NULL_ERRNO(ibv_share_pd(ctx, &bad, KEY), ENOENT);
	CHECK_NULL_ERRNO(ibv_share_pd(NULL, &s, KEY), EINVAL);
	CHECK_NULL_ERRNO(ibv_share_pd(ctx, NULL, KEY), EINVAL);
	errno = 0;
	struct ibv_pd *pd = ibv_share_pd(ctx, &s, KEY);
	if (!CHECK(pd != NULL, "[%s] ibv_share_pd with the right key: %s", g_role, strerror(errno)))
		return 1;
	CHECK(pd->context == ctx, "[%s] the shared PD's context", g_role);
	CHECK(memcmp(&s, &info.shpd, sizeof(s)) == 0, "[%s] ibv_share_pd left *shpd alone", g_role);
	CHECK_NULL_ERRNO(ibv_share_pd(ctx, &s, KEY), EEXIST);
	/* a handle dropped can be taken again */
	CHECK_EQ(ibv_dealloc_pd(pd), 0, "dealloc the first shared handle");
	errno = 0;
	pd = ibv_share_pd(ctx, &s, KEY);
	if (!CHECK(pd != NULL, "[%s] ibv_share_pd after dropping the handle: %s", g_role, strerror(errno)))
		return 1;
	struct ibv_shpd again;
	CHECK_NULL_ERRNO(ibv_alloc_shpd(pd, KEY, &again), EBUSY);

	/* a CQ pair and an RC QP on the shared PD */
	struct ibv_cq *scq = ibv_create_cq(ctx, 64, NULL, NULL, 0), *rcq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	CHECK(scq && rcq, "[%s] CQs", g_role);
	struct dpvt_qp_caps caps = {.max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1, .max_recv_sge = 1};
	struct ibv_qp *qp = scq && rcq ? dpvt_qp_create(pd, IBV_QPT_RC, scq, rcq, NULL, &caps) : NULL;
	if (!CHECK(qp != NULL, "[%s] RC QP on the shared PD", g_role))
		return 1;
	const uint32_t my_psn = 0x1000 + 0x100 * (uint32_t)idx;
	struct dpvt_conn o = conn_of(my_psn, 0);
	CHECK_EQ(dpvt_qp_to_init(qp, &o), 0, "QP to INIT");
	/* T2's receive: A's lkey and address */
	CHECK_EQ(recv1(qp, 2, abase + A_T2, LEN, info.a_lkey), 0, "post receive into A's MR");

	memset(&m, 0, sizeof(m));
	m.op = M_QPINFO;
	m.qpn[0] = qp->qp_num;
	m.psn[0] = my_psn;
	get_gid(ctx, m.gid[0]);
	child_reply(&m, f0);

	child_recv(&m);
	if (!CHECK(m.op == M_CONNECT, "[%s] CONNECT expected, got %u", g_role, m.op))
		return 1;
	f0 = dpvt_fail_count();
	const uint64_t pbase = m.p_addr + (uint64_t)idx * REGION;
	const uint32_t p_rkey = m.p_rkey;
	o = conn_of(my_psn, m.psn[0]);
	qp_connect(qp, &o, m.gid[0], m.qpn[0]);
	m.op = M_READY;
	child_reply(&m, f0);

	uint8_t *nbuf = NULL;
	struct ibv_mr *nmr = NULL;
	for (;;) {
		child_recv(&m);
		f0 = dpvt_fail_count();
		switch (m.op) {
		case M_T1:
			CHECK_EQ(post1(qp, IBV_WR_SEND, 11, abase + A_T1, LEN, info.a_lkey, 0, 0), 0, "T1 post SEND");
			wait_wc(scq, 11, IBV_WC_SUCCESS, IBV_WC_SEND, 0, "T1 SEND from A's MR");
			break;
		case M_T2W:
			wait_wc(rcq, 2, IBV_WC_SUCCESS, IBV_WC_RECV, LEN, "T2 receive into A's MR");
			break;
		case M_T3:
			CHECK_EQ(post1(qp, IBV_WR_RDMA_WRITE, 13, abase + A_T3, LEN, info.a_lkey, pbase + P_T3, p_rkey), 0,
				 "T3 post RDMA WRITE");
			wait_wc(scq, 13, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, 0, "T3 RDMA WRITE from A's MR");
			break;
		case M_T4:
			CHECK_EQ(post1(qp, IBV_WR_RDMA_READ, 14, abase + A_T4, LEN, info.a_lkey, pbase + P_T4, p_rkey), 0,
				 "T4 post RDMA READ");
			wait_wc(scq, 14, IBV_WC_SUCCESS, IBV_WC_RDMA_READ, 0, "T4 RDMA READ into A's MR");
			break;
		case M_L1:
			/* A has dropped its handle: the domain lives on in ours */
			CHECK_NULL_ERRNO(ibv_share_pd(ctx, &s, KEY), EEXIST);
			nbuf = aligned_alloc(4096, N_LEN);
			if (!CHECK(nbuf != NULL, "[%s] aligned_alloc", g_role))
				break;
			dpvt_pat_fill(nbuf, LEN, PAT(S_L1), (uint64_t)idx);
			memset(nbuf + LEN, 0, N_LEN - LEN);
			errno = 0;
			nmr = ibv_reg_mr(pd, nbuf, N_LEN,
					 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
			if (!CHECK(nmr != NULL, "[%s] a new MR on the shared PD after A's dealloc: %s", g_role,
				   strerror(errno)))
				break;
			CHECK(nmr->pd == pd, "[%s] new MR's PD", g_role);
			CHECK_EQ(post1(qp, IBV_WR_SEND, 21, (uintptr_t)nbuf, LEN, nmr->lkey, 0, 0), 0, "L1 post SEND");
			wait_wc(scq, 21, IBV_WC_SUCCESS, IBV_WC_SEND, 0, "L1 SEND from the new MR");
			m.n_addr[0] = (uintptr_t)nbuf;
			m.n_rkey[0] = nmr->rkey;
			break;
		case M_STALE_L:
			/* A's MR is gone: its lkey is refused here too (this QP errs) */
			CHECK_EQ(post1(qp, IBV_WR_SEND, 41, abase + A_T1, LEN, info.a_lkey, 0, 0), 0,
				 "post SEND with A's deregistered lkey");
			wait_wc(scq, 41, IBV_WC_LOC_PROT_ERR, IBV_WC_SEND, 0, "SEND with A's deregistered lkey");
			break;
		case M_L3:
			if (nbuf)
				check_pat(nbuf + LEN, PAT(S_L2), (uint64_t)idx, "L2 P's RDMA WRITE into the new MR");
			CHECK_EQ(ibv_dealloc_pd(pd), EBUSY, "dealloc of the shared handle while its QP and MR exist");
			CHECK_EQ(ibv_destroy_qp(qp), 0, "destroy QP");
			CHECK_EQ(ibv_destroy_cq(scq), 0, "destroy send CQ");
			CHECK_EQ(ibv_destroy_cq(rcq), 0, "destroy receive CQ");
			if (nmr)
				CHECK_EQ(ibv_dereg_mr(nmr), 0, "dereg the new MR");
			free(nbuf);
			CHECK_EQ(ibv_dealloc_pd(pd), 0, "dealloc the shared handle");
			CHECK_EQ(ibv_close_device(ctx), 0, "close dpv0");
			break;
		case M_EXIT:
			return child_exit(&m);
		default:
			CHECK(false, "[%s] unexpected command %u", g_role, m.op);
			return child_exit(&m);
		}
		child_reply(&m, f0);
	}
}

/* P: the peer, with its own PDs and MRs. */
static int role_p(void)
{
	struct msg m, info;
	child_recv(&info);
	if (!CHECK(info.op == M_INFO, "[%s] first message %u, expected INFO", g_role, info.op))
		return 1;
	int f0 = dpvt_fail_count();
	struct ibv_context *ctx1 = dpvt_open_dev("dpv1"), *ctx0 = dpvt_open_dev("dpv0");
	if (!CHECK(ctx1 && ctx0, "[%s] open dpv1 and dpv0", g_role))
		return 1;
	struct ibv_pd *pd1 = ibv_alloc_pd(ctx1), *pd0 = ibv_alloc_pd(ctx0);
	uint8_t *buf = aligned_alloc(4096, BUF_LEN), *buf0 = aligned_alloc(4096, 4096);
	if (!CHECK(pd1 && pd0 && buf && buf0, "[%s] PDs and buffers", g_role))
		return 1;
	memset(buf, 0, BUF_LEN);
	memset(buf0, 0, 4096);
	for (int i = 0; i < 2; i++) {
		uint8_t *b = buf + (size_t)i * REGION;
		dpvt_pat_fill(b + P_T2, LEN, PAT(S_T2), (uint64_t)i);
		dpvt_pat_fill(b + P_T4, LEN, PAT(S_T4), (uint64_t)i);
		dpvt_pat_fill(b + P_T5, LEN, PAT(S_T5), (uint64_t)i);
		dpvt_pat_fill(b + P_L2, LEN, PAT(S_L2), (uint64_t)i);
	}
	const int all = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	struct ibv_mr *mr = ibv_reg_mr(pd1, buf, BUF_LEN, all), *mr0 = ibv_reg_mr(pd0, buf0, 4096, all);
	if (!CHECK(mr && mr0, "[%s] MRs", g_role))
		return 1;

	/* a PD shared on dpv0 is not found through dpv1 */
	struct ibv_shpd s = info.shpd;
	CHECK_NULL_ERRNO(ibv_share_pd(ctx1, &s, KEY), ENOENT);

	struct dpvt_qp_caps caps = {.max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1, .max_recv_sge = 1};
	struct ibv_cq *scq[2], *rcq[2];
	struct ibv_qp *qp[2];
	uint32_t psn[2];
	for (int i = 0; i < 2; i++) {
		uint64_t pb = (uintptr_t)buf + (uint64_t)i * REGION;
		scq[i] = ibv_create_cq(ctx1, 64, NULL, NULL, 0);
		rcq[i] = ibv_create_cq(ctx1, 64, NULL, NULL, 0);
		qp[i] = scq[i] && rcq[i] ? dpvt_qp_create(pd1, IBV_QPT_RC, scq[i], rcq[i], NULL, &caps) : NULL;
		if (!CHECK(qp[i] != NULL, "[%s] QP %d", g_role, i))
			return 1;
		psn[i] = 0x2000 + 0x100 * (uint32_t)i;
		struct dpvt_conn o = conn_of(psn[i], 0);
		CHECK_EQ(dpvt_qp_to_init(qp[i], &o), 0, "P QP to INIT");
		CHECK_EQ(recv1(qp[i], 1, pb + P_T1, LEN, mr->lkey), 0, "post T1 receive");
		CHECK_EQ(recv1(qp[i], 2, pb + P_L1, LEN, mr->lkey), 0, "post L1 receive");
	}

	/* isolation pairs, both ends P's: dpv1 (pd1) <-> dpv0 (pd0, not A's PD) */
	struct ibv_cq *icq1 = ibv_create_cq(ctx1, 16, NULL, NULL, 0), *icq0 = ibv_create_cq(ctx0, 16, NULL, NULL, 0);
	struct ibv_cq *icq1r = ibv_create_cq(ctx1, 16, NULL, NULL, 0);
	struct ibv_qp *iso_req = NULL, *iso_resp = NULL, *iso_snd = NULL, *iso_rcv = NULL;
	if (CHECK(icq1 && icq0 && icq1r, "[%s] isolation CQs", g_role)) {
		struct dpvt_qp_caps c2 = caps;
		iso_req = dpvt_qp_create(pd1, IBV_QPT_RC, icq1, icq1, NULL, &c2);
		c2 = caps;
		iso_resp = dpvt_qp_create(pd0, IBV_QPT_RC, icq0, icq0, NULL, &c2);
		c2 = caps;
		iso_snd = dpvt_qp_create(pd0, IBV_QPT_RC, icq0, icq0, NULL, &c2);
		c2 = caps;
		iso_rcv = dpvt_qp_create(pd1, IBV_QPT_RC, icq1r, icq1r, NULL, &c2);
		CHECK(iso_req && iso_resp && iso_snd && iso_rcv, "[%s] isolation QPs", g_role);
		if (iso_req && iso_resp && iso_snd && iso_rcv) {
			CHECK_EQ(dpvt_connect(iso_req, ctx1, NULL, iso_resp, ctx0, NULL, false), 0, "isolation pair 1");
			CHECK_EQ(dpvt_connect(iso_snd, ctx0, NULL, iso_rcv, ctx1, NULL, false), 0, "isolation pair 2");
			CHECK_EQ(recv1(iso_rcv, 9, (uintptr_t)buf + P_ISO, 64, mr->lkey), 0, "isolation receive");
		}
	}

	memset(&m, 0, sizeof(m));
	m.op = M_QPINFO;
	for (int i = 0; i < 2; i++) {
		m.qpn[i] = qp[i]->qp_num;
		m.psn[i] = psn[i];
	}
	get_gid(ctx1, m.gid[0]);
	m.p_addr = (uintptr_t)buf;
	m.p_rkey = mr->rkey;
	child_reply(&m, f0);

	child_recv(&m);
	if (!CHECK(m.op == M_CONNECT, "[%s] CONNECT expected, got %u", g_role, m.op))
		return 1;
	f0 = dpvt_fail_count();
	for (int i = 0; i < 2; i++) {
		struct dpvt_conn o = conn_of(psn[i], m.psn[i]);
		qp_connect(qp[i], &o, m.gid[i], m.qpn[i]);
	}
	m.op = M_READY;
	child_reply(&m, f0);

	static const char *const who[2] = {"B", "C"};
	char what[96];
	for (;;) {
		child_recv(&m);
		f0 = dpvt_fail_count();
		switch (m.op) {
		case M_C1:
			for (int i = 0; i < 2; i++) {
				snprintf(what, sizeof(what), "T1 %s's SEND from A's MR", who[i]);
				if (wait_wc(rcq[i], 1, IBV_WC_SUCCESS, IBV_WC_RECV, LEN, what))
					check_pat(buf + (size_t)i * REGION + P_T1, PAT(S_T1), (uint64_t)i, what);
			}
			break;
		case M_T2:
			for (int i = 0; i < 2; i++)
				CHECK_EQ(post1(qp[i], IBV_WR_SEND, 12, (uintptr_t)buf + (uint64_t)i * REGION + P_T2, LEN,
					       mr->lkey, 0, 0),
					 0, "T2 post SEND");
			for (int i = 0; i < 2; i++) {
				snprintf(what, sizeof(what), "T2 SEND to %s", who[i]);
				wait_wc(scq[i], 12, IBV_WC_SUCCESS, IBV_WC_SEND, 0, what);
			}
			break;
		case M_C3:
			for (int i = 0; i < 2; i++) {
				snprintf(what, sizeof(what), "T3 %s's RDMA WRITE from A's MR", who[i]);
				check_pat(buf + (size_t)i * REGION + P_T3, PAT(S_T3), (uint64_t)i, what);
			}
			break;
		case M_T5:
			for (int i = 0; i < 2; i++)
				CHECK_EQ(post1(qp[i], IBV_WR_RDMA_WRITE, 15, (uintptr_t)buf + (uint64_t)i * REGION + P_T5,
					       LEN, mr->lkey, info.a_addr + (uint64_t)i * REGION + A_T5, info.a_rkey),
					 0, "T5 post RDMA WRITE with A's rkey");
			for (int i = 0; i < 2; i++) {
				snprintf(what, sizeof(what), "T5 RDMA WRITE with A's rkey through the QP of %s", who[i]);
				wait_wc(scq[i], 15, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, 0, what);
			}
			break;
		case M_ISO:
			if (!iso_req || !iso_snd)
				break;
			/* A's rkey at a QP of P's PD: the responder refuses it */
			CHECK_EQ(post1(iso_req, IBV_WR_RDMA_WRITE, 31, (uintptr_t)buf + P_ISO + 1024, 64, mr->lkey,
				       info.a_addr + A_CANARY, info.a_rkey),
				 0, "post RDMA WRITE with A's rkey to P's own PD");
			wait_wc(icq1, 31, IBV_WC_REM_ACCESS_ERR, IBV_WC_RDMA_WRITE, 0,
				"RDMA WRITE with A's rkey to a QP of another PD");
			/* A's lkey in a QP of P's PD (same device as A's MR) */
			CHECK_EQ(post1(iso_snd, IBV_WR_SEND, 32, info.a_addr + A_CANARY, 64, info.a_lkey, 0, 0), 0,
				 "post SEND with A's lkey on P's own PD");
			wait_wc(icq0, 32, IBV_WC_LOC_PROT_ERR, IBV_WC_SEND, 0, "SEND with A's lkey on another PD");
			CHECK_EQ(dpvt_poll_quiet(icq1r, 200), 0, "nothing delivered from A's memory");
			break;
		case M_L2: {
			/* the domain outlives A's handle: P can still share it */
			errno = 0;
			struct ibv_pd *sp = ibv_share_pd(ctx0, &s, KEY);
			if (CHECK(sp != NULL, "[%s] ibv_share_pd after A's dealloc (B and C hold it): %s", g_role,
				  strerror(errno)))
				CHECK_EQ(ibv_dealloc_pd(sp), 0, "dealloc P's handle");
			for (int i = 0; i < 2; i++) {
				snprintf(what, sizeof(what), "L1 %s's SEND from its new MR", who[i]);
				if (wait_wc(rcq[i], 2, IBV_WC_SUCCESS, IBV_WC_RECV, LEN, what))
					check_pat(buf + (size_t)i * REGION + P_L1, PAT(S_L1), (uint64_t)i, what);
			}
			for (int i = 0; i < 2; i++)
				CHECK_EQ(post1(qp[i], IBV_WR_RDMA_WRITE, 22, (uintptr_t)buf + (uint64_t)i * REGION + P_L2,
					       LEN, mr->lkey, m.n_addr[i] + LEN, m.n_rkey[i]),
					 0, "L2 post RDMA WRITE into the new MR");
			for (int i = 0; i < 2; i++) {
				snprintf(what, sizeof(what), "L2 RDMA WRITE into %s's new MR", who[i]);
				wait_wc(scq[i], 22, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, 0, what);
			}
			break;
		}
		case M_STALE_R:
			/* A's MR is gone: its rkey is refused at B's QP (which errs) */
			CHECK_EQ(post1(qp[0], IBV_WR_RDMA_WRITE, 42, (uintptr_t)buf + P_T2, LEN, mr->lkey,
				       info.a_addr + A_T5, info.a_rkey),
				 0, "post RDMA WRITE with A's deregistered rkey");
			wait_wc(scq[0], 42, IBV_WC_REM_ACCESS_ERR, IBV_WC_RDMA_WRITE, 0,
				"RDMA WRITE with A's deregistered rkey through the QP of B");
			break;
		case M_FINAL:
			/* every handle is gone: so is the domain and its share id */
			CHECK_NULL_ERRNO(ibv_share_pd(ctx0, &s, KEY), ENOENT);
			for (int i = 0; i < 2; i++) {
				CHECK_EQ(ibv_destroy_qp(qp[i]), 0, "destroy QP");
				CHECK_EQ(ibv_destroy_cq(scq[i]), 0, "destroy CQ");
				CHECK_EQ(ibv_destroy_cq(rcq[i]), 0, "destroy CQ");
			}
			if (iso_req)
				CHECK_EQ(ibv_destroy_qp(iso_req), 0, "destroy QP");
			if (iso_resp)
				CHECK_EQ(ibv_destroy_qp(iso_resp), 0, "destroy QP");
			if (iso_snd)
				CHECK_EQ(ibv_destroy_qp(iso_snd), 0, "destroy QP");
			if (iso_rcv)
				CHECK_EQ(ibv_destroy_qp(iso_rcv), 0, "destroy QP");
			CHECK_EQ(ibv_destroy_cq(icq1), 0, "destroy CQ");
			CHECK_EQ(ibv_destroy_cq(icq0), 0, "destroy CQ");
			CHECK_EQ(ibv_destroy_cq(icq1r), 0, "destroy CQ");
			CHECK_EQ(ibv_dereg_mr(mr), 0, "dereg MR");
			CHECK_EQ(ibv_dereg_mr(mr0), 0, "dereg MR");
			CHECK_EQ(ibv_dealloc_pd(pd1), 0, "dealloc PD");
			CHECK_EQ(ibv_dealloc_pd(pd0), 0, "dealloc PD");
			CHECK_EQ(ibv_close_device(ctx1), 0, "close dpv1");
			CHECK_EQ(ibv_close_device(ctx0), 0, "close dpv0");
			free(buf);
			free(buf0);
			break;
		case M_EXIT:
			return child_exit(&m);
		default:
			CHECK(false, "[%s] unexpected command %u", g_role, m.op);
			return child_exit(&m);
		}
		child_reply(&m, f0);
	}
}

/* ---- the orchestrator ---- */

enum { CB, CC, CP, NCHILD };
static const char *const g_names[NCHILD] = {"B", "C", "P"};

struct child {
	pid_t pid;
	int fd;
	bool reported;
	int npass, nfail;
};
static struct child g_ch[NCHILD];

static bool spawn(int k, const char *self)
{
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
		perror("socketpair");
		return false;
	}
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		perror("fork");
		close(sv[0]);
		close(sv[1]);
		return false;
	}
	if (pid == 0) {
		/* the child's end survives exec (dup2 clears FD_CLOEXEC) */
		int fd = dup2(sv[1], 100 + k);
		char fds[16];
		snprintf(fds, sizeof(fds), "%d", fd);
		char *const args[] = {(char *)self, (char *)g_names[k], fds, NULL};
		execv("/proc/self/exe", args);
		_exit(127);
	}
	close(sv[1]);
	g_ch[k].pid = pid;
	g_ch[k].fd = sv[0];
	return true;
}

static bool g_lost; /* a child stopped answering: the protocol is abandoned */

static void cmd(int k, struct msg *m, uint32_t op)
{
	if (g_lost)
		return;
	m->op = op;
	if (!CHECK(msg_send(g_ch[k].fd, m) == 0, "[A] send command %u to %s", op, g_names[k]))
		g_lost = true;
}

/* The reply of child k to op; its own checks are counted in the child. */
static bool reply(int k, struct msg *m, uint32_t op)
{
	if (g_lost)
		return false;
	int r = msg_recv(g_ch[k].fd, m, MSG_MS);
	if (!CHECK(r == 0 && m->op == op, "[A] reply of %s to command %u (got %s, op %u)", g_names[k], op,
		   r ? "nothing" : "a message", r ? 0 : m->op)) {
		g_lost = true;
		return false;
	}
	if (!m->ok)
		fprintf(stderr, "[A] %s reports failed checks in step %u\n", g_names[k], op);
	return m->ok != 0;
}

/* A command to B and C at once (they run it concurrently), then both replies. */
static void cmd_bc(struct msg *m, uint32_t op, struct msg out[2])
{
	cmd(CB, m, op);
	cmd(CC, m, op);
	reply(CB, &out[0], op);
	reply(CC, &out[1], op);
}

static void step(int k, uint32_t op)
{
	struct msg m;
	memset(&m, 0, sizeof(m));
	cmd(k, &m, op);
	reply(k, &m, op);
}

/* Waits up to ms for the children; kills (by PID) those still running. */
static void reap(unsigned int ms)
{
	uint64_t end = dpvt_now_ms() + ms;
	int left = 0;
	for (int k = 0; k < NCHILD; k++)
		left += g_ch[k].pid > 0;
	while (left > 0) {
		for (int k = 0; k < NCHILD; k++) {
			int st;
			if (g_ch[k].pid <= 0 || waitpid(g_ch[k].pid, &st, WNOHANG) != g_ch[k].pid)
				continue;
			CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "[A] %s exited with %s %d", g_names[k],
			      WIFEXITED(st) ? "status" : "signal", WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
			g_ch[k].pid = 0;
			left--;
		}
		if (left && dpvt_now_ms() > end) {
			for (int k = 0; k < NCHILD; k++)
				if (g_ch[k].pid > 0) {
					CHECK(false, "[A] %s (pid %d) did not exit within %u ms: killed", g_names[k],
					      (int)g_ch[k].pid, ms);
					kill(g_ch[k].pid, SIGKILL);
					waitpid(g_ch[k].pid, NULL, 0);
					g_ch[k].pid = 0;
				}
			break;
		}
		if (left)
			dpvt_sleep_ms(10);
	}
}

static int role_a(const char *self)
{
	/* the others first: none of them may inherit a dpverbs context */
	for (int k = 0; k < NCHILD; k++)
		if (!CHECK(spawn(k, self), "[A] start %s", g_names[k])) {
			g_lost = true;
			break;
		}

	struct ibv_context *ctx = g_lost ? NULL : dpvt_open_dev("dpv0");
	struct ibv_pd *pd = ctx ? ibv_alloc_pd(ctx) : NULL;
	uint8_t *buf = aligned_alloc(4096, BUF_LEN);
	struct ibv_mr *mr = NULL;
	struct ibv_shpd shpd;
	memset(&shpd, 0xa5, sizeof(shpd));
	if (!CHECK(ctx && pd && buf, "[A] open dpv0, PD, buffer"))
		g_lost = true;
	if (!g_lost) {
		memset(buf, 0, BUF_LEN);
		for (int i = 0; i < 2; i++) {
			uint8_t *b = buf + (size_t)i * REGION;
			dpvt_pat_fill(b + A_T1, LEN, PAT(S_T1), (uint64_t)i);
			dpvt_pat_fill(b + A_T3, LEN, PAT(S_T3), (uint64_t)i);
		}
		dpvt_pat_fill(buf + A_CANARY, LEN, PAT(S_CANARY), 0);
		mr = ibv_reg_mr(pd, buf, BUF_LEN,
				IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
		if (!CHECK(mr != NULL, "[A] ibv_reg_mr: %s", strerror(errno)))
			g_lost = true;
	}
	if (!g_lost) {
		errno = 0;
		struct ibv_shpd *r = ibv_alloc_shpd(pd, KEY, &shpd);
		if (!CHECK(r == &shpd, "[A] ibv_alloc_shpd: %s", strerror(errno)))
			g_lost = true;
		CHECK(shpd.id != 0 && !shpd.rsvd[0] && !shpd.rsvd[1] && !shpd.rsvd[2], "[A] shpd id 0x%llx, rsvd zero",
		      (unsigned long long)shpd.id);
		struct ibv_shpd s2;
		CHECK_NULL_ERRNO(ibv_alloc_shpd(pd, KEY, &s2), EBUSY);
		CHECK_NULL_ERRNO(ibv_alloc_shpd(pd, KEY + 1, &s2), EBUSY);
		CHECK_NULL_ERRNO(ibv_alloc_shpd(NULL, KEY, &s2), EINVAL);
		CHECK_NULL_ERRNO(ibv_alloc_shpd(pd, KEY, NULL), EINVAL);
		/* a parent domain is not shareable (EINVAL), even over a shared PD */
		struct ibv_parent_domain_init_attr pa;
		memset(&pa, 0, sizeof(pa));
		pa.pd = pd;
		errno = 0;
		struct ibv_pd *par = ibv_alloc_parent_domain(ctx, &pa);
		if (CHECK(par != NULL, "[A] ibv_alloc_parent_domain: %s", strerror(errno))) {
			CHECK_NULL_ERRNO(ibv_alloc_shpd(par, KEY, &s2), EINVAL);
			CHECK_EQ(ibv_dealloc_pd(par), 0, "[A] dealloc the parent domain");
		}
		/* the creator holds the domain already: one handle per process */
		CHECK_NULL_ERRNO(ibv_share_pd(ctx, &shpd, KEY), EEXIST);
	}

	struct msg m, qb[2], qp;
	memset(&m, 0, sizeof(m));
	m.shpd = shpd;
	m.key = 0; /* the key is not in the message: B, C, P know it */
	if (mr) {
		m.a_addr = (uintptr_t)mr->addr;
		m.a_len = mr->length;
		m.a_lkey = mr->lkey;
		m.a_rkey = mr->rkey;
		CHECK(mr->addr == buf && mr->length == BUF_LEN, "[A] MR addr/length");
	}
	for (int k = 0; k < NCHILD; k++)
		cmd(k, &m, M_INFO);
	reply(CB, &qb[0], M_QPINFO);
	reply(CC, &qb[1], M_QPINFO);
	reply(CP, &qp, M_QPINFO);

	/* relay QPN, PSN, GID (and P's MR to B and C) */
	for (int i = 0; i < 2 && !g_lost; i++) {
		memset(&m, 0, sizeof(m));
		m.qpn[0] = qp.qpn[i];
		m.psn[0] = qp.psn[i];
		memcpy(m.gid[0], qp.gid[0], 16);
		m.p_addr = qp.p_addr;
		m.p_rkey = qp.p_rkey;
		cmd(i == 0 ? CB : CC, &m, M_CONNECT);
	}
	memset(&m, 0, sizeof(m));
	for (int i = 0; i < 2; i++) {
		m.qpn[i] = qb[i].qpn[0];
		m.psn[i] = qb[i].psn[0];
		memcpy(m.gid[i], qb[i].gid[0], 16);
	}
	cmd(CP, &m, M_CONNECT);
	for (int k = 0; k < NCHILD; k++)
		reply(k, &m, M_READY);

	struct msg out[2];
	memset(&m, 0, sizeof(m));
	/* T1: B/C SEND from A's MR, P verifies */
	cmd_bc(&m, M_T1, out);
	step(CP, M_C1);
	/* T2: P SENDs into A's MR through B/C's receives */
	step(CP, M_T2);
	cmd_bc(&m, M_T2W, out);
	for (int i = 0; i < 2 && !g_lost; i++)
		check_pat(buf + (size_t)i * REGION + A_T2, PAT(S_T2), (uint64_t)i, i ? "T2 P -> C into A's MR"
										      : "T2 P -> B into A's MR");
	/* T3: B/C RDMA WRITE from A's MR into P's, P verifies */
	cmd_bc(&m, M_T3, out);
	step(CP, M_C3);
	/* T4: B/C RDMA READ from P's MR into A's */
	cmd_bc(&m, M_T4, out);
	for (int i = 0; i < 2 && !g_lost; i++)
		check_pat(buf + (size_t)i * REGION + A_T4, PAT(S_T4), (uint64_t)i, i ? "T4 C's RDMA READ into A's MR"
										      : "T4 B's RDMA READ into A's MR");
	/* T5: P RDMA WRITEs with A's rkey through its QPs to B and C */
	step(CP, M_T5);
	for (int i = 0; i < 2 && !g_lost; i++)
		check_pat(buf + (size_t)i * REGION + A_T5, PAT(S_T5), (uint64_t)i, i ? "T5 P's RDMA WRITE via C's QP"
										      : "T5 P's RDMA WRITE via B's QP");
	/* isolation: A's keys through P's own PD */
	step(CP, M_ISO);
	if (!g_lost) {
		check_pat(buf + A_CANARY, PAT(S_CANARY), 0, "canary after the isolation checks");
		for (int i = 0; i < 2; i++) {
			check_pat(buf + (size_t)i * REGION + A_T1, PAT(S_T1), (uint64_t)i, "SEND source unchanged");
			check_pat(buf + (size_t)i * REGION + A_T3, PAT(S_T3), (uint64_t)i, "WRITE source unchanged");
		}
	}

	/* lifetime: A drops its handle while B and C hold theirs */
	if (pd && mr) {
		CHECK_EQ(ibv_dealloc_pd(pd), EBUSY, "[A] ibv_dealloc_pd while A's MR exists");
		CHECK_EQ(ibv_dereg_mr(mr), 0, "[A] ibv_dereg_mr");
		CHECK_EQ(ibv_dealloc_pd(pd), 0, "[A] ibv_dealloc_pd while B and C hold the domain");
		pd = NULL;
	}
	cmd_bc(&m, M_L1, out);
	memset(&m, 0, sizeof(m));
	for (int i = 0; i < 2; i++) {
		m.n_addr[i] = out[i].n_addr[0];
		m.n_rkey[i] = out[i].n_rkey[0];
	}
	cmd(CP, &m, M_L2);
	reply(CP, &m, M_L2);
	memset(&m, 0, sizeof(m));
	/* A's deregistered keys: refused remotely (P -> B) and locally (C) */
	step(CP, M_STALE_R);
	step(CC, M_STALE_L);
	if (!g_lost)
		for (int i = 0; i < 2; i++)
			check_pat(buf + (size_t)i * REGION + A_T5, PAT(S_T5), (uint64_t)i,
				  "A's buffer unchanged after its MR is gone");
	cmd_bc(&m, M_L3, out);
	step(CP, M_FINAL);

	/* the children's counts */
	for (int k = 0; k < NCHILD; k++)
		cmd(k, &m, M_EXIT);
	for (int k = 0; k < NCHILD; k++) {
		struct msg e;
		if (g_lost || msg_recv(g_ch[k].fd, &e, MSG_MS) != 0 || e.op != M_EXIT) {
			CHECK(false, "[A] no final report from %s", g_names[k]);
			continue;
		}
		g_ch[k].reported = true;
		g_ch[k].npass = e.npass;
		g_ch[k].nfail = e.nfail;
	}
	for (int k = 0; k < NCHILD; k++)
		if (g_ch[k].fd > 0)
			close(g_ch[k].fd); /* a child still waiting sees EOF and leaves */
	reap(g_lost ? 2000 : 10000);

	if (pd)
		ibv_dealloc_pd(pd);
	if (ctx)
		CHECK_EQ(ibv_close_device(ctx), 0, "[A] close dpv0");
	free(buf);

	int pass = dpvt_pass_count(), fail = dpvt_fail_count();
	for (int k = 0; k < NCHILD; k++) {
		printf("[%s] %d passed, %d failed%s\n", g_names[k], g_ch[k].npass, g_ch[k].nfail,
		       g_ch[k].reported ? "" : " (no report)");
		pass += g_ch[k].npass;
		fail += g_ch[k].nfail;
	}
	printf("[A] %d passed, %d failed\n", dpvt_pass_count(), dpvt_fail_count());
	printf("%d passed, %d failed\n", pass, fail);
	fflush(stdout);
	return fail ? 1 : 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	unsetenv("DPVERBS_FAULT");
	if (argc == 3) {
		g_role = argv[1];
		g_fd = atoi(argv[2]);
		alarm(90); /* a last resort: every wait below is bounded */
		if (!strcmp(g_role, "B"))
			return role_bc(0);
		if (!strcmp(g_role, "C"))
			return role_bc(1);
		if (!strcmp(g_role, "P"))
			return role_p();
		fprintf(stderr, "unknown role %s\n", g_role);
		return 2;
	}
	if (!getenv("DPVERBS_CONFIG")) {
		printf("needs a dpverbsd (run through test/shared/with_daemon.sh): skipped\n");
		return 77;
	}
	return role_a(argv[0]);
}
