/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * RC stress: one QP pair dpv0 -> dpv1 in one process moves DPV_STRESS_BYTES
 * (default below) of a deterministic stream of SEND, SEND_WITH_IMM,
 * RDMA WRITE + SEND_WITH_IMM notification, RDMA WRITE_WITH_IMM, RDMA READ,
 * FETCH_ADD and CMP_SWAP (successful chains and deliberate misses), sizes 1 B
 * to 1 MiB (MTU multiples and MTU +-1 included).
 *
 * Message i of the stream is a pure function of (seed, i); its payload is
 * word 0 = i, then a hash of (seed, i, word). The receiver walks the stream
 * itself: every receive completion must be the next receive-consuming
 * message, with the right opcode, immediate (= i), length and every byte;
 * WRITE data is checked in the target ring at the offset the receiver
 * computes (and, for the notified kind, the offset the notification names).
 * READ data is compared with the source; every FETCH_ADD must return the
 * running sum and every CMP_SWAP the previous chain value; the final counter
 * and chain values are checked at the end, and no completion may arrive
 * after the last expected one.
 *
 *   test_rc_stress [fault|clean] [seed]
 *   env DPV_STRESS_BYTES (K/M/G suffixes; default 1G clean, 256M under faults)
 *       DPV_STRESS_MIX=all|noread|norda, DPV_STRESS_LIMIT_S (default 170: after it no new
 *       message is posted, those posted are drained and verified; not a failure), DPV_STRESS_SEED,
 *       DPVERBS_FAULT (fault mode: set from the seed unless given)
 *
 * Replaying: the message stream is exactly the same for a seed; the fault
 * generator is seeded too, but which frame draws which number depends on
 * timing (retransmission timers), so a replay is close, not bit-exact.
 */
#include "dpvt_verbs.h"

/* WHITE-BOX: internal headers. Their uses stay in this file, each marked
 * WHITE-BOX; test/lib (dpvt_*.h) uses only the public verbs API. */
#include "dpv_verbs.h"
#include "dpv_port.h"
#include "dpv_fault.h"
#include "sw_obj.h"
#include "sw_opcode.h"
#include "sw_qp_lock.h"
#include "sw_queue.h"

#define MAX_MSG (1u << 20)
#define SQ_DEPTH 256
#define NRECV 128
#define RECV_BUF (MAX_MSG + 64) /* 64 canary bytes after each buffer */
#define RING_SZ (64u << 20)     /* WRITE target ring on dpv1 */
#define SRC_SZ (64u << 20)      /* send/write source ring on dpv0 */
#define RSRC_SZ (8u << 20)      /* READ source on dpv1 */
#define NRDBUF 16
#define CANARY 0xa5
#define DEFAULT_BYTES (1ULL << 30)       /* clean */
#define DEFAULT_FAULT_BYTES (256ULL << 20) /* under faults: ~10-25 MiB/s here */
#define FAULT_SPEC "drop=0.05,duplicate=0.01,reorder=0.01,corrupt=0.001"

enum kind { K_SEND, K_SEND_IMM, K_WRITE_NOTIFY, K_WRITE_IMM, K_READ, K_FADD, K_CAS, K_CAS_FAIL, K_NR };
static const char *const kind_name[K_NR] = {"SEND", "SEND_IMM", "WRITE+notify", "WRITE_IMM",
					    "READ", "FETCH_ADD", "CMP_SWAP", "CMP_SWAP(miss)"};

struct msg {
	enum kind k;
	uint32_t len;
	uint32_t roff; /* READ: offset in the read source */
	uint64_t val;  /* FETCH_ADD: value to add */
};

static uint64_t g_seed;
static int g_mix; /* 0 all, 1 no READ, 2 no READ/atomics (DPV_STRESS_MIX all|noread|norda) */

static const uint32_t special_len[] = {
	1, 2, 7, 8, 9, 63, 64, 65, 1023, 1024, 1025, 2047, 2048, 2049, 3071, 3072, 3073,
	4096, 8191, 8192, 8193, 32767, 32768, 32769, 65536, 262143, 262144, 262145,
	1048575, 1048576,
};

static void gen(uint64_t i, struct msg *m)
{
	uint64_t r = dpvt_mix64(g_seed * 0x2545f4914f6cdd1dULL ^ dpvt_mix64(i + 0x5151));
	uint64_t r2 = dpvt_mix64(r), r3 = dpvt_mix64(r2);
	unsigned int t = (unsigned int)(r % 100);
	memset(m, 0, sizeof(*m));
	m->k = t < 28 ? K_SEND : t < 38 ? K_SEND_IMM : t < 53 ? K_WRITE_NOTIFY : t < 73 ? K_WRITE_IMM
	     : t < 86 ? K_READ : t < 93 ? K_FADD : t < 98 ? K_CAS : K_CAS_FAIL;
	if ((m->k == K_READ && g_mix >= 1) || (m->k >= K_FADD && g_mix >= 2))
		m->k = (r3 & 1) ? K_SEND : K_WRITE_IMM;
	if (m->k >= K_FADD) {
		m->len = 8;
		m->val = r3 % 1000 + 1;
		return;
	}
	if ((r2 & 3) == 0) {
		m->len = special_len[(r2 >> 8) % (sizeof(special_len) / sizeof(special_len[0]))];
	} else {
		unsigned int e = (unsigned int)((r2 >> 8) % 21); /* 2^0 .. 2^20 */
		uint64_t lo = 1ULL << e;
		uint64_t len = lo + r3 % lo;
		m->len = (uint32_t)(len > MAX_MSG ? MAX_MSG : len);
	}
	if (m->k == K_READ)
		m->roff = (uint32_t)(dpvt_mix64(r3) % (RSRC_SZ - m->len + 1));
}

static bool consumes_recv(enum kind k)
{
	return k <= K_WRITE_IMM;
}

/* contiguous allocation in a ring of `size` bytes; head/tail are byte counts */
static bool ring_alloc(uint64_t *head, uint64_t tail, uint64_t size, uint32_t len, uint64_t *off)
{
	uint64_t h = *head, o = h % size;
	if (o + len > size)
		h += size - o, o = 0;
	if (h + len - tail > size)
		return false;
	*off = o;
	*head = h + len;
	return true;
}

struct notify {
	uint64_t seq, off, len;
};

/* one posted WR */
struct pend {
	uint64_t wr_id;
	uint64_t i;
	enum kind k;
	bool notify_part; /* the SEND of WRITE+notify */
	uint64_t src_end;
	uint64_t expect;
	int slot;
};

static struct dpvt_ep A, B;
static struct ibv_qp *QA, *QB;
static uint8_t *src, *rdbuf, *rbufs, *ring, *rsrc;
static uint64_t *atom_res, *atom_words;
static struct ibv_mr *mr_src, *mr_rd, *mr_res, *mr_rbufs, *mr_ring, *mr_rsrc, *mr_atom;

static struct pend pq[SQ_DEPTH];
static uint64_t pq_head, pq_tail; /* posted WRs: [head, tail) */
static uint64_t src_head, src_tail;
static uint64_t ring_head, ring_tail; /* sender's view; ring_tail advanced by the receiver */
static uint64_t rx_ring_head;         /* receiver's own allocation cursor */
static uint64_t rd_posted, rd_done;
static int recv_credits = NRECV;
static uint64_t next_post, rx_next, rx_posted_cnt, rx_done_cnt, rx_buf_next;
static uint64_t fadd_cur, cas_cur;
static uint64_t bytes_posted, bytes_done, n_msgs[K_NR];
static int hard_fail;

#define FAILSTOP(...)                                                                             \
	do {                                                                                      \
		CHECK(0, __VA_ARGS__);                                                            \
		hard_fail++;                                                                      \
	} while (0)

/* WHITE-BOX */
static uint64_t cnt(struct dpv_port *p, enum dpv_cnt c) { return DPV_STAT_READ(p, cnt[c]); }

/* WHITE-BOX: the software engine's QP contexts (drivers/sw/sw_obj.h). */
static struct sw_qp *eng(struct ibv_qp *q) { return (struct sw_qp *)to_dqp(q)->drv; }

/* WHITE-BOX: the internal QP state (struct sw_qp) on a stall. */
static void dump_state(const char *why)
{
	struct sw_qp *a = eng(QA), *b = eng(QB);
	fprintf(stderr, "%s: next_post %llu rx_next %llu posted WRs [%llu,%llu) recv credits %d\n", why,
		(unsigned long long)next_post, (unsigned long long)rx_next, (unsigned long long)pq_head,
		(unsigned long long)pq_tail, recv_credits);
	fprintf(stderr, "  A state %d sq head/cur/fetched %u/%u/%u req psn %#x comp psn %#x retry_left %u "
		"timer %llu rnr %llu rd_out %u\n", sw_qp_state(a), a->req.sq_head, a->req.sq_cur, a->req.sq_fetched,
		a->req.psn, a->comp.psn, a->comp.retry_left, (unsigned long long)a->comp.timer_deadline,
		(unsigned long long)a->comp.rnr_deadline, a->req.rd_outstanding);
	for (uint32_t k = a->req.sq_head; k != a->req.sq_fetched && k - a->req.sq_head < 4; k++) {
		struct sw_wqe *s = sw_sq_state(a, k);
		struct dpv_send_wqe *w = sw_sq_wqe(a, k);
		fprintf(stderr, "  A wqe %u: op %d state %u len %u psn %#x..%#x next_psn %#x next_off %u read_recv %u\n",
			k, w->opcode, s->state, w->length, s->first_psn, s->last_psn, s->next_psn, s->next_off,
			s->read_recv);
	}
	fprintf(stderr, "  B state %d epsn %#x in_msg %u have_rwqe %d\n", sw_qp_state(b), b->resp.psn,
		b->resp.in_msg, b->resp.have_rwqe);
}

/* The retransmission storm (a known bug): the head WQE is a READ/ATOMIC and
 * the responder saw far more duplicate requests than the traffic explains.
 * WHITE-BOX: reads the requester's internal state and the port counters. */
static bool rd_storm(uint64_t *dup_out)
{
	struct sw_qp *a = eng(QA);
	struct dpv_send_wqe *h = a->req.sq_head != a->req.sq_fetched ? sw_sq_wqe(a, a->req.sq_head) : NULL;
	uint64_t dup = DPV_STAT_READ(dpv_port_by_name("dpv1"), cnt[DPV_CNT_DUP_REQ]);
	*dup_out = dup;
	return h && sw_is_rd_atomic(h->opcode) && dup > 20 * (bytes_done / 1024 + 1000);
}

/* A stall or a run far too slow: name the known library bugs it matches.
 * WHITE-BOX: reads the requester's internal state and the port counters. */
static void classify_stall(bool stalled, uint64_t ms, uint64_t target)
{
	struct sw_qp *a = eng(QA);
	uint64_t dup;
	bool storm = rd_storm(&dup);
	if (sw_qp_state(a) == IBV_QPS_RTS && !a->comp.timer_deadline && !a->comp.rnr_deadline &&
	    dpv_psn_cmp(a->req.psn, a->comp.psn) > 0) {
		/* requests un-acknowledged, but no retransmission timer armed */
		KNOWN_BUG(0, "stalled: %d PSNs un-acknowledged (comp psn %#x req psn %#x) and the retransmission "
			  "timer is off: sw_req_run() arms it only when a WQE is completely sent",
			  dpv_psn_cmp(a->req.psn, a->comp.psn), a->comp.psn, a->req.psn);
	} else if (storm) {
		/* each duplicate ACK restarts go-back-N from the READ/ATOMIC */
		KNOWN_BUG(0, "%s after %llu ms: %llu of %llu bytes, %llu duplicate requests at the responder: "
			  "retransmission storm, do_ack() retries from a READ/ATOMIC on every later ACK",
			  stalled ? "stalled" : "too slow", (unsigned long long)ms, (unsigned long long)bytes_done,
			  (unsigned long long)target, (unsigned long long)dup);
	} else {
		CHECK(0, "%s after %llu ms: %llu of %llu bytes", stalled ? "no completion for 15 s" : "time limit",
		      (unsigned long long)ms, (unsigned long long)bytes_done, (unsigned long long)target);
	}
}

/* Post message next_post if resources allow; returns false if it must wait. */
static bool post_one(void)
{
	struct msg m;
	gen(next_post, &m);
	uint64_t i = next_post;
	int nwr = m.k == K_WRITE_NOTIFY ? 2 : 1;
	if (pq_tail - pq_head + (uint64_t)nwr > SQ_DEPTH)
		return false;
	if (consumes_recv(m.k) && recv_credits <= 0)
		return false;
	if (m.k == K_READ && rd_posted - rd_done >= NRDBUF)
		return false;
	uint64_t soff = 0, roff = 0, sh = src_head, rh = ring_head;
	if (m.k <= K_WRITE_IMM && !ring_alloc(&sh, src_tail, SRC_SZ, m.len, &soff))
		return false;
	if ((m.k == K_WRITE_NOTIFY || m.k == K_WRITE_IMM) && !ring_alloc(&rh, ring_tail, RING_SZ, m.len, &roff))
		return false;
	src_head = sh;
	ring_head = rh;

	struct pend *p = &pq[pq_tail % SQ_DEPTH];
	memset(p, 0, sizeof(*p));
	p->wr_id = (i << 1);
	p->i = i;
	p->k = m.k;
	p->src_end = src_head;
	int r = 0;
	switch (m.k) {
	case K_SEND:
	case K_SEND_IMM:
		dpvt_pat_fill(src + soff, m.len, g_seed, i);
		r = dpvt_post_wr(QA, m.k == K_SEND ? IBV_WR_SEND : IBV_WR_SEND_WITH_IMM, p->wr_id, src + soff, m.len,
				 mr_src->lkey, 0, 0, (uint32_t)i, IBV_SEND_SIGNALED);
		break;
	case K_WRITE_NOTIFY: {
		dpvt_pat_fill(src + soff, m.len, g_seed, i);
		r = dpvt_post_wr(QA, IBV_WR_RDMA_WRITE, p->wr_id, src + soff, m.len, mr_src->lkey,
				 (uintptr_t)ring + roff, mr_ring->rkey, 0, IBV_SEND_SIGNALED);
		if (r)
			break;
		pq_tail++;
		struct notify n = {i, roff, m.len};
		p = &pq[pq_tail % SQ_DEPTH];
		memset(p, 0, sizeof(*p));
		p->wr_id = (i << 1) | 1;
		p->i = i;
		p->k = m.k;
		p->notify_part = true;
		p->src_end = src_head;
		r = dpvt_post_wr(QA, IBV_WR_SEND_WITH_IMM, p->wr_id, &n, sizeof(n), 0, 0, 0, (uint32_t)i,
				 IBV_SEND_SIGNALED | IBV_SEND_INLINE);
		break;
	}
	case K_WRITE_IMM:
		dpvt_pat_fill(src + soff, m.len, g_seed, i);
		r = dpvt_post_wr(QA, IBV_WR_RDMA_WRITE_WITH_IMM, p->wr_id, src + soff, m.len, mr_src->lkey,
				 (uintptr_t)ring + roff, mr_ring->rkey, (uint32_t)i, IBV_SEND_SIGNALED);
		break;
	case K_READ:
		p->slot = (int)(rd_posted % NRDBUF);
		memset(rdbuf + (size_t)p->slot * MAX_MSG, 0, m.len);
		r = dpvt_post_wr(QA, IBV_WR_RDMA_READ, p->wr_id, rdbuf + (size_t)p->slot * MAX_MSG, m.len, mr_rd->lkey,
				 (uintptr_t)rsrc + m.roff, mr_rsrc->rkey, 0, IBV_SEND_SIGNALED);
		rd_posted++;
		break;
	case K_FADD:
	case K_CAS:
	case K_CAS_FAIL: {
		p->slot = (int)(pq_tail % SQ_DEPTH);
		atom_res[p->slot] = 0xdeadbeefdeadbeefULL;
		p->expect = m.k == K_FADD ? fadd_cur : cas_cur;
		uint64_t cmp = m.k == K_FADD ? m.val : m.k == K_CAS ? cas_cur : cas_cur ^ 1;
		uint64_t swap = m.k == K_CAS ? dpvt_mix64(i ^ 0xc0ffee) : 0x1234;
		uint64_t raddr = (uintptr_t)&atom_words[m.k == K_FADD ? 0 : 1];
		r = dpvt_post_atomic(QA, m.k == K_FADD ? IBV_WR_ATOMIC_FETCH_AND_ADD : IBV_WR_ATOMIC_CMP_AND_SWP,
				     p->wr_id, &atom_res[p->slot], mr_res->lkey, raddr, mr_atom->rkey, cmp, swap, NULL);
		if (m.k == K_FADD)
			fadd_cur += m.val;
		else if (m.k == K_CAS)
			cas_cur = swap;
		break;
	}
	default:
		break;
	}
	if (r) {
		FAILSTOP("post of message %llu (%s, %u B) failed: %s", (unsigned long long)i, kind_name[m.k], m.len,
			 strerror(r));
		return false;
	}
	pq_tail++;
	if (consumes_recv(m.k)) {
		recv_credits--;
		rx_posted_cnt++;
	}
	n_msgs[m.k]++;
	if (m.k <= K_READ)
		bytes_posted += m.len;
	next_post++;
	return true;
}

static void send_completion(const struct ibv_wc *wc)
{
	if (pq_head == pq_tail) {
		FAILSTOP("send completion wr_id %#llx with nothing outstanding", (unsigned long long)wc->wr_id);
		return;
	}
	struct pend *p = &pq[pq_head % SQ_DEPTH];
	if (wc->status != IBV_WC_SUCCESS || wc->wr_id != p->wr_id) {
		FAILSTOP("send completion: status %s wr_id %#llx, expected success of %#llx (message %llu %s)",
			 ibv_wc_status_str(wc->status), (unsigned long long)wc->wr_id, (unsigned long long)p->wr_id,
			 (unsigned long long)p->i, kind_name[p->k]);
		dump_state("bad send completion");
		return;
	}
	struct msg m;
	gen(p->i, &m);
	enum ibv_wc_opcode want = p->k == K_READ ? IBV_WC_RDMA_READ : p->k == K_FADD ? IBV_WC_FETCH_ADD
				: p->k >= K_CAS ? IBV_WC_COMP_SWAP
				: (p->k == K_WRITE_IMM || (p->k == K_WRITE_NOTIFY && !p->notify_part)) ? IBV_WC_RDMA_WRITE
				: IBV_WC_SEND;
	if (wc->opcode != want)
		FAILSTOP("message %llu: send completion opcode %d, expected %d", (unsigned long long)p->i, wc->opcode,
			 want);
	if (p->k == K_READ) {
		const uint8_t *got = rdbuf + (size_t)p->slot * MAX_MSG;
		if (wc->byte_len != m.len || memcmp(got, rsrc + m.roff, m.len)) {
			long bad = -1;
			for (uint32_t j = 0; j < m.len && bad < 0; j++)
				if (got[j] != rsrc[m.roff + j])
					bad = j;
			FAILSTOP("READ %llu (%u B at %u): byte_len %u, first wrong byte %ld", (unsigned long long)p->i,
				 m.len, m.roff, wc->byte_len, bad);
		}
		rd_done++;
		bytes_done += m.len;
	} else if (p->k >= K_FADD) {
		if (atom_res[p->slot] != p->expect)
			FAILSTOP("%s %llu returned %#llx, expected %#llx", kind_name[p->k], (unsigned long long)p->i,
				 (unsigned long long)atom_res[p->slot], (unsigned long long)p->expect);
	}
	src_tail = p->src_end;
	pq_head++;
}

static void recv_completion(const struct ibv_wc *wc)
{
	struct msg m;
	uint64_t i = rx_next;
	for (gen(i, &m); !consumes_recv(m.k); gen(++i, &m))
		;
	rx_next = i + 1;
	uint64_t bi = rx_buf_next++ % NRECV;
	uint8_t *buf = rbufs + bi * RECV_BUF;
	if (rx_done_cnt >= rx_posted_cnt) {
		FAILSTOP("receive completion (wr_id %llu, %u B) beyond the %llu messages sent",
			 (unsigned long long)wc->wr_id, wc->byte_len, (unsigned long long)rx_posted_cnt);
		return;
	}
	rx_done_cnt++;
	if (wc->status != IBV_WC_SUCCESS || wc->wr_id != bi) {
		FAILSTOP("receive of message %llu (%s): status %s wr_id %llu, expected buffer %llu",
			 (unsigned long long)i, kind_name[m.k], ibv_wc_status_str(wc->status),
			 (unsigned long long)wc->wr_id, (unsigned long long)bi);
		return;
	}
	bool imm = wc->wc_flags & IBV_WC_WITH_IMM;
	uint32_t immv = ntohl(wc->imm_data);
	enum ibv_wc_opcode want = m.k == K_WRITE_IMM ? IBV_WC_RECV_RDMA_WITH_IMM : IBV_WC_RECV;
	if (wc->opcode != want || imm != (m.k != K_SEND) || (imm && immv != (uint32_t)i)) {
		FAILSTOP("message %llu (%s): receive opcode %d imm %d/%#x, expected opcode %d imm %d/%#x",
			 (unsigned long long)i, kind_name[m.k], wc->opcode, imm, immv, want, m.k != K_SEND,
			 (uint32_t)i);
		return;
	}
	if (m.k == K_SEND || m.k == K_SEND_IMM) {
		long bad = wc->byte_len == m.len ? dpvt_pat_check(buf, m.len, g_seed, i) : -2;
		if (bad != -1)
			FAILSTOP("message %llu (%s, %u B): byte_len %u, first wrong byte %ld (word 0 = %#llx)",
				 (unsigned long long)i, kind_name[m.k], m.len, wc->byte_len, bad,
				 (unsigned long long)(m.len >= 8 ? *(uint64_t *)buf : 0));
	} else {
		uint64_t off = 0;
		if (!ring_alloc(&rx_ring_head, ring_tail, RING_SZ, m.len, &off))
			FAILSTOP("receiver ring accounting broken at message %llu", (unsigned long long)i);
		if (m.k == K_WRITE_NOTIFY) {
			struct notify n;
			memcpy(&n, buf, sizeof(n));
			if (wc->byte_len != sizeof(n) || n.seq != i || n.off != off || n.len != m.len)
				FAILSTOP("notification of WRITE %llu: %u B {seq %llu off %llu len %llu}, expected "
					 "{%llu %llu %u}", (unsigned long long)i, wc->byte_len,
					 (unsigned long long)n.seq, (unsigned long long)n.off, (unsigned long long)n.len,
					 (unsigned long long)i, (unsigned long long)off, m.len);
		} else if (wc->byte_len != m.len) {
			FAILSTOP("WRITE_IMM %llu: byte_len %u, expected %u", (unsigned long long)i, wc->byte_len, m.len);
		}
		long bad = dpvt_pat_check(ring + off, m.len, g_seed, i);
		if (bad != -1)
			FAILSTOP("WRITE %llu (%s, %u B at ring %llu): first wrong byte %ld", (unsigned long long)i,
				 kind_name[m.k], m.len, (unsigned long long)off, bad);
		ring_tail = rx_ring_head; /* verified: the sender may reuse it */
	}
	for (int j = 0; j < 64; j++)
		if (buf[MAX_MSG + j] != CANARY) {
			FAILSTOP("receive buffer %llu overrun (message %llu)", (unsigned long long)bi,
				 (unsigned long long)i);
			break;
		}
	bytes_done += m.len;
	if (dpvt_post_recv(QB, mr_rbufs, bi, bi * RECV_BUF, MAX_MSG))
		FAILSTOP("re-posting receive %llu failed", (unsigned long long)bi);
	recv_credits++;
}

static uint64_t parse_bytes(const char *s, uint64_t def)
{
	if (!s || !*s)
		return def;
	char *end;
	double v = strtod(s, &end);
	switch (*end) {
	case 'k': case 'K': v *= 1024; break;
	case 'm': case 'M': v *= 1024 * 1024; break;
	case 'g': case 'G': v *= 1024.0 * 1024 * 1024; break;
	default: break;
	}
	return v < 1 ? def : (uint64_t)v;
}

static void *xalloc(size_t n)
{
	void *p = aligned_alloc(4096, (n + 4095) & ~(size_t)4095);
	if (!p) {
		perror("aligned_alloc");
		exit(1);
	}
	return p;
}

int main(int argc, char **argv)
{
	bool fault = argc < 2 || strcmp(argv[1], "clean") != 0;
	const char *se = argc > 2 ? argv[2] : getenv("DPV_STRESS_SEED");
	g_seed = se && *se ? strtoull(se, NULL, 0) : 1;
	const char *mx = getenv("DPV_STRESS_MIX");
	g_mix = mx && !strcmp(mx, "noread") ? 1 : mx && !strcmp(mx, "norda") ? 2 : 0;
	uint64_t target = parse_bytes(getenv("DPV_STRESS_BYTES"), fault ? DEFAULT_FAULT_BYTES : DEFAULT_BYTES);
	uint64_t limit_ms = parse_bytes(getenv("DPV_STRESS_LIMIT_S"), 170) * 1000;
	char spec[160];
	if (fault) {
		const char *f = getenv("DPVERBS_FAULT");
		if (f && *f) {
			snprintf(spec, sizeof(spec), "%s", f);
		} else {
			snprintf(spec, sizeof(spec), "%s,seed=%llu", FAULT_SPEC, (unsigned long long)g_seed);
			setenv("DPVERBS_FAULT", spec, 1);
		}
	} else {
		unsetenv("DPVERBS_FAULT");
		snprintf(spec, sizeof(spec), "(none)");
	}
	printf("rc_stress: mode %s, mix %s, seed %llu, %llu bytes, DPVERBS_FAULT=%s\n", fault ? "fault" : "clean",
	       g_mix == 0 ? "all" : g_mix == 1 ? "noread" : "norda", (unsigned long long)g_seed, (unsigned long long)target, spec);
	printf("replay: DPV_STRESS_MIX=%s DPV_STRESS_BYTES=%llu DPVERBS_FAULT='%s' test_rc_stress %s %llu\n",
	       g_mix == 0 ? "all" : g_mix == 1 ? "noread" : "norda", (unsigned long long)target, fault ? spec : "", fault ? "fault" : "clean", (unsigned long long)g_seed);
	fflush(stdout);

	if (dpvt_ep_open(&A, "dpv0", 4096, false) || dpvt_ep_open(&B, "dpv1", 4096, false)) {
		printf("0 passed, 1 failed\n");
		return 1;
	}
	CHECK_EQ(dpv_fault_enabled(), fault, "fault injection enabled as asked"); /* WHITE-BOX */

	src = xalloc(SRC_SZ);
	rdbuf = xalloc((size_t)NRDBUF * MAX_MSG);
	atom_res = xalloc(SQ_DEPTH * 8);
	rbufs = xalloc((size_t)NRECV * RECV_BUF);
	ring = xalloc(RING_SZ);
	rsrc = xalloc(RSRC_SZ);
	atom_words = xalloc(64);
	memset(rbufs, CANARY, (size_t)NRECV * RECV_BUF);
	memset(ring, 0, RING_SZ);
	dpvt_pat_fill(rsrc, RSRC_SZ, g_seed, 0xfeedULL);
	fadd_cur = atom_words[0] = dpvt_mix64(g_seed) >> 8;
	cas_cur = atom_words[1] = dpvt_mix64(g_seed + 1);

	mr_src = ibv_reg_mr(A.pd, src, SRC_SZ, IBV_ACCESS_LOCAL_WRITE);
	mr_rd = ibv_reg_mr(A.pd, rdbuf, (size_t)NRDBUF * MAX_MSG, IBV_ACCESS_LOCAL_WRITE);
	mr_res = ibv_reg_mr(A.pd, atom_res, SQ_DEPTH * 8, IBV_ACCESS_LOCAL_WRITE);
	mr_rbufs = ibv_reg_mr(B.pd, rbufs, (size_t)NRECV * RECV_BUF, IBV_ACCESS_LOCAL_WRITE);
	mr_ring = ibv_reg_mr(B.pd, ring, RING_SZ, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	mr_rsrc = ibv_reg_mr(B.pd, rsrc, RSRC_SZ, IBV_ACCESS_REMOTE_READ);
	mr_atom = ibv_reg_mr(B.pd, atom_words, 64, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_ATOMIC);
	QA = dpvt_ep_qp(&A, IBV_QPT_RC, SQ_DEPTH, 16, NULL);
	QB = dpvt_ep_qp(&B, IBV_QPT_RC, 16, NRECV, NULL);
	struct dpvt_conn o = dpvt_conn_default();
	o.timeout = 12;   /* 16.8 ms */
	o.retry_cnt = 7;
	o.rnr_retry = 7;
	if (!mr_src || !mr_rd || !mr_res || !mr_rbufs || !mr_ring || !mr_rsrc || !mr_atom || !QA || !QB ||
	    dpvt_connect(QA, A.ctx, &o, QB, B.ctx, &o, false)) {
		CHECK(0, "set-up failed: %s", strerror(errno));
		return dpvt_finish();
	}
	for (uint64_t b = 0; b < NRECV; b++)
		if (dpvt_post_recv(QB, mr_rbufs, b, b * RECV_BUF, MAX_MSG))
			FAILSTOP("posting receive %llu", (unsigned long long)b);

	/* WHITE-BOX: transport counters before and after, fault statistics */
	struct dpv_port *P0 = dpv_port_by_name("dpv0"), *P1 = dpv_port_by_name("dpv1");
	uint64_t c0[DPV_CNT_NR], c1[DPV_CNT_NR];
	for (int c = 0; c < DPV_CNT_NR; c++)
		c0[c] = cnt(P0, (enum dpv_cnt)c), c1[c] = cnt(P1, (enum dpv_cnt)c);

	uint64_t t0 = dpvt_now_ms(), last_progress = t0, last_report = t0;
	uint64_t last_done = 0;
	bool posting = true;
	struct ibv_wc wc[64];
	while (!hard_fail) {
		while (posting && post_one())
			if (bytes_posted >= target)
				posting = false;
		int n = ibv_poll_cq(A.scq, 64, wc);
		for (int k = 0; k < n && !hard_fail; k++)
			send_completion(&wc[k]);
		n = ibv_poll_cq(B.rcq, 64, wc);
		for (int k = 0; k < n && !hard_fail; k++)
			recv_completion(&wc[k]);
		uint64_t t = dpvt_now_ms();
		if (pq_head + rx_done_cnt != last_done) {
			last_done = pq_head + rx_done_cnt;
			last_progress = t;
		}
		if (!posting && pq_head == pq_tail && rx_done_cnt == rx_posted_cnt)
			break;
		bool stalled = t - last_progress > 15000, slow = posting && t - t0 > limit_ms;
		uint64_t dup;
		if (stalled || (slow && rd_storm(&dup))) {
			dump_state(stalled ? "stalled" : "too slow");
			classify_stall(stalled, t - t0, target);
			hard_fail++;
			break;
		}
		if (slow) {
			/* The time bound is not an assertion (throughput depends on the
			 * machine's load): stop posting, drain and verify what was posted
			 * (the stall detector still bounds the drain). */
			posting = false;
			printf("  time limit %llu s: %llu of %llu bytes posted; stops posting, verifies those\n",
			       (unsigned long long)(limit_ms / 1000), (unsigned long long)bytes_posted,
			       (unsigned long long)target);
			fflush(stdout);
		}
		if (t - last_report >= 10000) {
			last_report = t;
			printf("  %6.1f s: %llu MiB verified, message %llu\n", (double)(t - t0) / 1000,
			       (unsigned long long)(bytes_done >> 20), (unsigned long long)next_post);
			fflush(stdout);
		}
	}
	uint64_t el = dpvt_now_ms() - t0;
	if (!el)
		el = 1;
	if (!hard_fail) {
		CHECK_EQ(atom_words[0], fadd_cur, "final FETCH_ADD counter");
		CHECK_EQ(atom_words[1], cas_cur, "final CMP_SWAP chain value");
		CHECK_EQ(dpvt_poll_quiet(A.scq, 200) + dpvt_poll_quiet(B.rcq, 1), 0, "no completion after the last one");
		CHECK(dpvt_pat_check(rsrc, RSRC_SZ, g_seed, 0xfeedULL) == -1, "READ source untouched");
		CHECK_EQ(bytes_done, bytes_posted, "all bytes verified");
		CHECK_EQ(dpvt_qp_state(QA), IBV_QPS_RTS, "requester still RTS");
		CHECK_EQ(dpvt_qp_state(QB), IBV_QPS_RTS, "responder still RTS");
	}
	printf("moved %llu bytes in %llu messages (%.2f s): %.1f MiB/s\n", (unsigned long long)bytes_done,
	       (unsigned long long)next_post, (double)el / 1000, (double)bytes_done / 1048576.0 / ((double)el / 1000));
	printf("messages:");
	for (int k = 0; k < K_NR; k++)
		printf(" %s %llu", kind_name[k], (unsigned long long)n_msgs[k]);
	printf("\n");
	const struct dpv_fault_stats *fs = dpv_fault_stats();
	uint64_t fd = atomic_load(&fs->dropped), fu = atomic_load(&fs->duplicated), fr = atomic_load(&fs->reordered),
		 fc = atomic_load(&fs->corrupted);
	printf("faults injected: dropped %llu duplicated %llu reordered %llu corrupted %llu\n",
	       (unsigned long long)fd, (unsigned long long)fu, (unsigned long long)fr, (unsigned long long)fc);
	printf("%-24s %12s %12s\n", "transport counter", "dpv0", "dpv1");
	for (int c = 0; c < DPV_CNT_NR; c++)
		printf("%-24s %12llu %12llu\n", dpv_cnt_names[c], (unsigned long long)(cnt(P0, (enum dpv_cnt)c) - c0[c]),
		       (unsigned long long)(cnt(P1, (enum dpv_cnt)c) - c1[c]));
	printf("rx drops:");
	for (int d = 0; d < DPV_DROP_NR; d++) {
		uint64_t v0 = DPV_STAT_READ(P0, drop[d]), v1 = DPV_STAT_READ(P1, drop[d]);
		if (v0 || v1)
			printf(" %s %llu/%llu", dpv_drop_reason_names[d], (unsigned long long)v0, (unsigned long long)v1);
	}
	printf("\n");
	if (fault && !hard_fail && bytes_done < (64u << 20))
		printf("recovery counters not checked: %llu bytes (< 64 MiB) moved\n", (unsigned long long)bytes_done);
	if (fault && !hard_fail && bytes_done >= (64u << 20)) {
		/* the run really exercised recovery */
		CHECK(fd > 0 && fu > 0 && fr > 0, "faults were injected");
		CHECK(cnt(P0, DPV_CNT_RETRY) > c0[DPV_CNT_RETRY], "requester retransmitted");
		CHECK(cnt(P1, DPV_CNT_SEQ_NAK_SENT) > c1[DPV_CNT_SEQ_NAK_SENT], "responder sent sequence NAKs");
		CHECK(cnt(P1, DPV_CNT_DUP_REQ) > c1[DPV_CNT_DUP_REQ], "responder saw duplicates");
	}
	if (!fault && !hard_fail) {
		/* a loaded machine may deschedule us past the 16.8 ms timeout: a few
		 * spurious timer retries are legitimate, sequence NAKs are not */
		CHECK(cnt(P0, DPV_CNT_RETRY) - c0[DPV_CNT_RETRY] < 50, "few retransmissions without faults");
		CHECK_EQ(cnt(P1, DPV_CNT_SEQ_NAK_SENT) - c1[DPV_CNT_SEQ_NAK_SENT], 0, "no sequence NAK without faults");
	}
	fflush(stdout);
	ibv_destroy_qp(QA);
	ibv_destroy_qp(QB);
	return dpvt_finish();
}
