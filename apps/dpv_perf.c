/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpv_perf: latency and message-rate benchmark for dpverbs (any verbs
 * provider, in fact: it uses only the ibv_* API).
 *
 * Tests (transport_test):
 *   ud_lat  UD ping-pong: the client sends a message, the server echoes it;
 *           every round trip is timed, one-way latency is reported as RTT/2.
 *   ud_bw   UD streaming: the client sends with up to -w sends outstanding
 *           (signalled every --signal), the server keeps its RQ full and
 *           returns credits so the sender never overruns it (UD has no
 *           flow control of its own; --no-fc turns the credits off).
 *
 * Modes:
 *   --loopback          one process, two devices (default dpv0 and dpv1 of
 *                       the built-in configuration), both ends driven from
 *                       the same thread;
 *   --server / <host>   two processes exchanging QPN/GID/Q_Key over TCP,
 *                       each with its own DPVERBS_CONFIG.
 *
 * Every received payload is checked (sequence number + pattern); lost or
 * corrupt messages make the exit status non-zero.
 *
 * Adding RC: write a struct transport with qp_type IBV_QPT_RC, an init()
 * that stops at INIT, a connect() that does RTR/RTS with the remote
 * QPN/PSN/GID, rx_hdr 0 and a post_send() without AH; then add rc_lat/rc_bw
 * rows to the tests[] table. The test loops do not depend on the QP type.
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "perf_common.h"

#define DEF_TCP_PORT 18600
#define DEF_QKEY 0x64707631u      /* "dpv1" */
#define CREDIT_FLAG (1ull << 63)  /* seq field of a credit message */
#define CTRL_DEPTH 64             /* RQ/SQ depth of the side that only gets credits */

struct opts {
	const char *test_name;
	uint32_t size;
	uint64_t iters, warmup;
	uint32_t window, signal_every, rx_depth;
	unsigned int timeout_s, msg_timeout_ms;
	const char *dev, *dev2;
	int ib_port, gid_idx, tcp_port;
	const char *host;
	bool server, loopback, json, no_inline, no_fc;
	int clock;
};

struct remote {
	uint32_t qpn, qkey, psn, mtu;
	union ibv_gid gid;
};

struct ep;
struct transport {
	const char *name;
	enum ibv_qp_type qpt;
	uint32_t rx_hdr; /* bytes in front of the payload in a receive buffer */
	/* after QP creation: states up to what can be done without the peer */
	int (*init)(struct ep *e);
	/* with the peer's address: the rest (UD: address handle) */
	int (*connect)(struct ep *e, const struct remote *r);
	int (*post_send)(struct ep *e, uint8_t *buf, uint32_t len, uint64_t wr_id, bool signal);
};

struct ep {
	const char *name;
	const struct transport *tr;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *scq, *rcq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	struct ibv_ah *ah;
	uint8_t *buf, *rxbuf, *txbuf;
	size_t buf_len;
	uint32_t size, rx_slot, tx_slot;
	uint32_t rx_depth, tx_depth, sig;
	uint32_t max_inline;
	bool use_inline;
	uint8_t ib_port;
	int gid_idx;
	union ibv_gid gid;
	uint32_t psn, qkey, mtu;
	struct remote rem;
	uint64_t tx_posted, tx_done;
	uint64_t tx_sig_end;      /* 1 + id of the last signalled send */
};

/* receive-side state of a test */
struct rx_state {
	uint64_t total;       /* messages expected */
	uint64_t expected;    /* next sequence number */
	uint64_t received, good, corrupt, out_of_order, gap;
	uint64_t credited;    /* received count last reported to the sender */
	uint64_t t_ref, t_last;
	uint64_t warmup;
	bool echo;            /* ud_lat server: send every message back */
	bool credits;         /* ud_bw receiver: return credits */
	uint32_t credit_every;
};

struct test {
	const char *name;
	const struct transport *tr;
	bool lat;
};

static const char *prog = "dpv_perf";
static struct pt_report rep;

/* ---------------------------------------------------------------- UD --- */

static int ud_init(struct ep *e)
{
	struct ibv_qp_attr a;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = e->ib_port;
	a.qkey = e->qkey;
	if (ibv_modify_qp(e->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY)) {
		fprintf(stderr, "%s: %s: modify QP to INIT failed\n", prog, e->name);
		return -1;
	}
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(e->qp, &a, IBV_QP_STATE)) {
		fprintf(stderr, "%s: %s: modify QP to RTR failed\n", prog, e->name);
		return -1;
	}
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = e->psn;
	if (ibv_modify_qp(e->qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN)) {
		fprintf(stderr, "%s: %s: modify QP to RTS failed\n", prog, e->name);
		return -1;
	}
	return 0;
}

static int ud_connect(struct ep *e, const struct remote *r)
{
	struct ibv_ah_attr ah;
	memset(&ah, 0, sizeof(ah));
	ah.is_global = 1;
	ah.grh.dgid = r->gid;
	ah.grh.sgid_index = (uint8_t)e->gid_idx;
	ah.grh.hop_limit = 64;
	ah.port_num = e->ib_port;
	e->ah = ibv_create_ah(e->pd, &ah);
	if (!e->ah) {
		fprintf(stderr, "%s: %s: ibv_create_ah failed: %s\n", prog, e->name, strerror(errno));
		return -1;
	}
	e->rem = *r;
	return 0;
}

static int ud_post_send(struct ep *e, uint8_t *buf, uint32_t len, uint64_t wr_id, bool signal)
{
	struct ibv_sge sge = {.addr = (uintptr_t)buf, .length = len, .lkey = e->mr->lkey};
	struct ibv_send_wr wr, *bad;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = (signal ? IBV_SEND_SIGNALED : 0) |
			(e->use_inline && len <= e->max_inline ? IBV_SEND_INLINE : 0);
	wr.wr.ud.ah = e->ah;
	wr.wr.ud.remote_qpn = e->rem.qpn;
	wr.wr.ud.remote_qkey = e->rem.qkey;
	return ibv_post_send(e->qp, &wr, &bad);
}

static const struct transport tr_ud = {
	.name = "UD",
	.qpt = IBV_QPT_UD,
	.rx_hdr = 40, /* GRH */
	.init = ud_init,
	.connect = ud_connect,
	.post_send = ud_post_send,
};

static const struct test tests[] = {
	{"ud_lat", &tr_ud, true},
	{"ud_bw", &tr_ud, false},
	/* {"rc_lat", &tr_rc, true}, {"rc_bw", &tr_rc, false}: when RC exists */
};

/* ---------------------------------------------------------- endpoint --- */

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail(const char *fmt, ...)
{
	char msg[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	pt_report_fail(&rep, "%s", msg);
	pt_stop = 1;
}

static uint32_t mtu_bytes(enum ibv_mtu m) { return m >= IBV_MTU_256 && m <= IBV_MTU_4096 ? 128u << m : 0; }

static struct ibv_device *find_dev(struct ibv_device **list, const char *name, int skip)
{
	for (int i = 0; list[i]; i++) {
		if (name && !strcmp(ibv_get_device_name(list[i]), name))
			return list[i];
		if (!name && i == skip)
			return list[i];
	}
	return NULL;
}

/* Open the device and create everything that does not depend on the test
 * parameters' remote side. size/rx_depth/tx_depth/sig must be set. */
static int ep_open(struct ep *e, struct ibv_device *dev, const struct opts *o)
{
	struct ibv_port_attr pa;
	e->name = ibv_get_device_name(dev);
	e->ctx = ibv_open_device(dev);
	if (!e->ctx) {
		fprintf(stderr, "%s: cannot open %s: %s\n", prog, e->name, strerror(errno));
		return -1;
	}
	if (ibv_query_port(e->ctx, e->ib_port, &pa)) {
		fprintf(stderr, "%s: %s: ibv_query_port %u failed\n", prog, e->name, e->ib_port);
		return -1;
	}
	if (pa.state != IBV_PORT_ACTIVE)
		fprintf(stderr, "%s: warning: %s port %u is not active (%s)\n", prog, e->name, e->ib_port,
			ibv_port_state_str(pa.state));
	e->mtu = mtu_bytes(pa.active_mtu);
	if (ibv_query_gid(e->ctx, e->ib_port, e->gid_idx, &e->gid)) {
		fprintf(stderr, "%s: %s: cannot read GID index %d\n", prog, e->name, e->gid_idx);
		return -1;
	}
	static const uint8_t zero[16];
	if (!memcmp(e->gid.raw, zero, 16)) {
		fprintf(stderr, "%s: %s: GID index %d is empty\n", prog, e->name, e->gid_idx);
		return -1;
	}
	e->pd = ibv_alloc_pd(e->ctx);
	if (!e->pd) {
		fprintf(stderr, "%s: %s: ibv_alloc_pd failed\n", prog, e->name);
		return -1;
	}
	e->rx_slot = (e->tr->rx_hdr + e->size + 63u) & ~63u;
	e->tx_slot = (e->size + 63u) & ~63u;
	e->buf_len = (size_t)e->rx_slot * e->rx_depth + (size_t)e->tx_slot * e->tx_depth;
	if (posix_memalign((void **)&e->buf, 4096, e->buf_len)) {
		fprintf(stderr, "%s: out of memory\n", prog);
		return -1;
	}
	memset(e->buf, 0, e->buf_len);
	e->rxbuf = e->buf;
	e->txbuf = e->buf + (size_t)e->rx_slot * e->rx_depth;
	e->mr = ibv_reg_mr(e->pd, e->buf, e->buf_len, IBV_ACCESS_LOCAL_WRITE);
	if (!e->mr) {
		fprintf(stderr, "%s: %s: ibv_reg_mr failed: %s\n", prog, e->name, strerror(errno));
		return -1;
	}
	e->scq = ibv_create_cq(e->ctx, (int)e->tx_depth, NULL, NULL, 0);
	e->rcq = ibv_create_cq(e->ctx, (int)e->rx_depth, NULL, NULL, 0);
	if (!e->scq || !e->rcq) {
		fprintf(stderr, "%s: %s: ibv_create_cq failed: %s\n", prog, e->name, strerror(errno));
		return -1;
	}
	struct ibv_qp_init_attr qa;
	memset(&qa, 0, sizeof(qa));
	qa.send_cq = e->scq;
	qa.recv_cq = e->rcq;
	qa.qp_type = e->tr->qpt;
	qa.cap.max_send_wr = e->tx_depth;
	qa.cap.max_recv_wr = e->rx_depth;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	qa.cap.max_inline_data = o->no_inline ? 0 : e->size;
	e->qp = ibv_create_qp(e->pd, &qa);
	if (!e->qp && qa.cap.max_inline_data) {
		/* inline not offered for this size: go without */
		qa.cap.max_inline_data = 0;
		e->qp = ibv_create_qp(e->pd, &qa);
	}
	if (!e->qp) {
		fprintf(stderr, "%s: %s: ibv_create_qp failed: %s\n", prog, e->name, strerror(errno));
		return -1;
	}
	e->max_inline = qa.cap.max_inline_data;
	e->use_inline = !o->no_inline && e->max_inline >= e->size;
	e->qkey = DEF_QKEY;
	e->psn = (uint32_t)(pt_mono_ns() & 0xffffff);
	return 0;
}

static int ep_post_recv(struct ep *e, uint32_t slot)
{
	struct ibv_sge sge = {.addr = (uintptr_t)(e->rxbuf + (size_t)slot * e->rx_slot),
			      .length = e->rx_slot, .lkey = e->mr->lkey};
	struct ibv_recv_wr wr = {.wr_id = slot, .sg_list = &sge, .num_sge = 1}, *bad;
	return ibv_post_recv(e->qp, &wr, &bad);
}

static int ep_start(struct ep *e)
{
	/* RQ first: UD drops messages that find no receive WQE */
	if (e->tr->init(e))
		return -1;
	for (uint32_t i = 0; i < e->rx_depth; i++)
		if (ep_post_recv(e, i)) {
			fprintf(stderr, "%s: %s: ibv_post_recv failed\n", prog, e->name);
			return -1;
		}
	return 0;
}

static void ep_close(struct ep *e)
{
	if (e->qp)
		ibv_destroy_qp(e->qp);
	if (e->ah)
		ibv_destroy_ah(e->ah);
	if (e->scq)
		ibv_destroy_cq(e->scq);
	if (e->rcq)
		ibv_destroy_cq(e->rcq);
	if (e->mr)
		ibv_dereg_mr(e->mr);
	if (e->pd)
		ibv_dealloc_pd(e->pd);
	if (e->ctx)
		ibv_close_device(e->ctx);
	free(e->buf);
	memset(e, 0, sizeof(*e));
}

/* Reap send completions; -1 on a failed send. */
static int ep_reap_tx(struct ep *e)
{
	struct ibv_wc wc[16];
	int n = ibv_poll_cq(e->scq, 16, wc);
	if (n < 0) {
		fail("%s: ibv_poll_cq (send) failed", e->name);
		return -1;
	}
	for (int i = 0; i < n; i++) {
		if (wc[i].status != IBV_WC_SUCCESS) {
			fail("%s: send completion with status %s", e->name, ibv_wc_status_str(wc[i].status));
			return -1;
		}
		e->tx_done = wc[i].wr_id + 1; /* sends complete in order */
	}
	return n;
}

static bool ep_tx_room(struct ep *e) { return e->tx_posted - e->tx_done < e->tx_depth; }

/* Next free send buffer; waits for send completions if the SQ is full. */
static uint8_t *ep_tx_slot(struct ep *e)
{
	while (!ep_tx_room(e)) {
		if (pt_stop || ep_reap_tx(e) < 0)
			return NULL;
	}
	return e->txbuf + (size_t)(e->tx_posted % e->tx_depth) * e->tx_slot;
}

static int ep_tx_post(struct ep *e, uint8_t *buf, uint32_t len, bool force_signal)
{
	uint64_t id = e->tx_posted;
	bool sig = force_signal || (id + 1) % e->sig == 0;
	int r = e->tr->post_send(e, buf, len, id, sig);
	if (r) {
		fail("%s: ibv_post_send failed: %s", e->name, strerror(r));
		return -1;
	}
	e->tx_posted++;
	if (sig)
		e->tx_sig_end = e->tx_posted;
	return 0;
}

/* Wait for the completion of the last signalled send (unsignalled ones
 * after it cannot be observed: callers signal their last send). */
static int ep_tx_drain(struct ep *e)
{
	while (e->tx_done < e->tx_sig_end) {
		if (pt_stop || ep_reap_tx(e) < 0)
			return -1;
	}
	return 0;
}

static int ep_send_credit(struct ep *e, uint64_t count)
{
	uint8_t *b = ep_tx_slot(e);
	if (!b)
		return -1;
	pt_put_seq(b, CREDIT_FLAG | count);
	return ep_tx_post(e, b, PT_MIN_SIZE, false);
}

/* ------------------------------------------------------- receive side --- */

/* Check one received data message; true if it is the expected one. */
static bool check_msg(struct ep *e, struct rx_state *st, const struct ibv_wc *wc, uint64_t *seq_out)
{
	const uint8_t *p = e->rxbuf + (size_t)wc->wr_id * e->rx_slot + e->tr->rx_hdr;
	uint64_t seq = pt_seq(p);
	*seq_out = seq;
	st->received++;
	if (wc->byte_len != e->tr->rx_hdr + e->size || !pt_check(p, e->size, seq)) {
		st->corrupt++;
		return false;
	}
	if (seq == st->expected) {
		st->expected++;
		st->good++;
		return true;
	}
	if (seq > st->expected && seq < st->total) {
		st->gap += seq - st->expected;
		st->expected = seq + 1;
		st->good++;
		return true;
	}
	st->out_of_order++;
	return false;
}

/* Process what has arrived for a receiving/echoing endpoint. Returns the
 * number of messages handled, -1 on error. */
static int rx_step(struct ep *e, struct rx_state *st)
{
	struct ibv_wc wc[32];
	int n = ibv_poll_cq(e->rcq, 32, wc);
	if (n < 0) {
		fail("%s: ibv_poll_cq (recv) failed", e->name);
		return -1;
	}
	for (int i = 0; i < n; i++) {
		uint64_t seq;
		if (wc[i].status != IBV_WC_SUCCESS) {
			fail("%s: receive completion with status %s", e->name, ibv_wc_status_str(wc[i].status));
			return -1;
		}
		uint64_t now = pt_now();
		bool ok = check_msg(e, st, &wc[i], &seq);
		if (ok && st->echo) {
			uint8_t *b = ep_tx_slot(e);
			if (!b)
				return -1;
			pt_fill(b, e->size, seq);
			if (ep_tx_post(e, b, e->size, seq + 1 == st->total))
				return -1;
		}
		if (ep_post_recv(e, (uint32_t)wc[i].wr_id)) {
			fail("%s: ibv_post_recv failed", e->name);
			return -1;
		}
		if (ok) {
			if (seq + 1 == st->warmup || (st->warmup == 0 && st->good == 1))
				st->t_ref = now;
			st->t_last = now;
		}
		if (st->credits && (st->received == 1 || st->received - st->credited >= st->credit_every ||
				    st->received == st->total)) {
			if (ep_send_credit(e, st->received))
				return -1;
			st->credited = st->received;
		}
	}
	if (ep_reap_tx(e) < 0)
		return -1;
	return n;
}

/* --------------------------------------------------------------- tests --- */

struct run {
	struct opts *o;
	const struct test *t;
	struct ep *a;          /* the client / sender */
	struct ep *b;          /* loopback only: the server / receiver, else NULL */
	uint64_t tx_ns;        /* sender's measured interval */
	uint64_t tx_count;
};

static uint64_t ms_ticks(unsigned int ms) { return (uint64_t)((double)ms * 1e6 / pt_clk.ns_per_tick); }

static void run_lat_client(struct run *r, struct rx_state *bst)
{
	struct ep *a = r->a;
	uint64_t total = r->o->warmup + r->o->iters;
	uint64_t *rtt = calloc(r->o->iters ? r->o->iters : 1, sizeof(uint64_t));
	uint64_t msg_to = ms_ticks(r->o->msg_timeout_ms), t_start = 0, t_end = 0, got_n = 0;
	struct ibv_wc wc;
	struct rx_state ast = {.total = total};

	if (!rtt) {
		fail("out of memory");
		return;
	}
	for (uint64_t i = 0; i < total && !pt_stop; i++) {
		uint8_t *b = ep_tx_slot(a);
		if (!b)
			break;
		pt_fill(b, a->size, i);
		uint64_t t0 = pt_now();
		if (i == r->o->warmup)
			t_start = t0;
		if (ep_tx_post(a, b, a->size, i + 1 == total))
			break;
		for (;;) {
			if (r->b && rx_step(r->b, bst) < 0)
				goto out;
			int n = ibv_poll_cq(a->rcq, 1, &wc);
			if (n < 0) {
				fail("%s: ibv_poll_cq failed", a->name);
				goto out;
			}
			if (n == 1) {
				uint64_t t1 = pt_now(), seq;
				if (wc.status != IBV_WC_SUCCESS) {
					fail("%s: receive completion with status %s", a->name,
					     ibv_wc_status_str(wc.status));
					goto out;
				}
				bool ok = check_msg(a, &ast, &wc, &seq);
				if (ep_post_recv(a, (uint32_t)wc.wr_id)) {
					fail("%s: ibv_post_recv failed", a->name);
					goto out;
				}
				if (!ok || seq != i) {
					fail("reply %" PRIu64 ": bad reply (sequence %" PRIu64 ", %s)", i, seq,
					     ok ? "out of order" : "corrupt");
					goto out;
				}
				if (i >= r->o->warmup)
					rtt[got_n++] = t1 - t0;
				t_end = t1;
				break;
			}
			if (pt_stop)
				goto out;
			if (pt_now() - t0 > msg_to) {
				rep.lost++;
				fail("message %" PRIu64 ": no reply within %u ms (lost)", i, r->o->msg_timeout_ms);
				goto out;
			}
		}
		if (ep_reap_tx(a) < 0)
			break;
	}
out:
	pt_clock_finish();
	rep.corrupt += ast.corrupt;
	rep.out_of_order += ast.out_of_order;
	rep.sent = a->tx_posted;
	rep.received = ast.received;
	rep.has_lat = got_n > 0;
	rep.lat_samples = got_n;
	if (got_n) {
		pt_lat_summary(rtt, got_n, &rep.lat);
		double ns = pt_ticks_ns(t_end - t_start);
		rep.rtt_per_s = ns > 0 ? (double)got_n / ns * 1e9 : 0;
	}
	if (got_n < r->o->iters)
		pt_report_fail(&rep, "only %" PRIu64 " of %" PRIu64 " round trips completed", got_n, r->o->iters);
	free(rtt);
}

static void run_bw_sender(struct run *r, struct rx_state *bst)
{
	struct ep *a = r->a;
	const struct opts *o = r->o;
	uint64_t total = o->warmup + o->iters;
	uint64_t granted = 0;   /* messages the receiver has consumed (credits) */
	bool have_credit = false;
	uint64_t t_start = 0, t_end = 0, idle_since = 0;
	struct ibv_wc wc[16];

	while (!pt_stop && (a->tx_posted < total || a->tx_done < a->tx_posted)) {
		/* credits from the receiver */
		int n = ibv_poll_cq(a->rcq, 16, wc);
		if (n < 0) {
			fail("%s: ibv_poll_cq failed", a->name);
			break;
		}
		for (int i = 0; i < n; i++) {
			if (wc[i].status != IBV_WC_SUCCESS) {
				fail("%s: receive completion with status %s", a->name,
				     ibv_wc_status_str(wc[i].status));
				goto out;
			}
			const uint8_t *p = a->rxbuf + (size_t)wc[i].wr_id * a->rx_slot + a->tr->rx_hdr;
			uint64_t v = pt_seq(p);
			if (!(v & CREDIT_FLAG)) {
				fail("%s: unexpected message on the sender", a->name);
				goto out;
			}
			v &= ~CREDIT_FLAG;
			if (v > granted)
				granted = v;
			have_credit = true;
			if (ep_post_recv(a, (uint32_t)wc[i].wr_id)) {
				fail("%s: ibv_post_recv failed", a->name);
				goto out;
			}
		}
		/* allowed in flight: 1 until the first credit (resolves neighbours
		 * and proves the path), then the receiver's RQ depth */
		uint64_t limit = !have_credit ? 1 : (o->no_fc ? UINT64_MAX : granted + o->rx_depth);
		int posted = 0;
		while (a->tx_posted < total && a->tx_posted < limit && ep_tx_room(a) && posted < 32) {
			uint8_t *b = a->txbuf + (size_t)(a->tx_posted % a->tx_depth) * a->tx_slot;
			pt_fill(b, a->size, a->tx_posted);
			if (a->tx_posted == o->warmup)
				t_start = pt_now();
			if (ep_tx_post(a, b, a->size, a->tx_posted + 1 == total))
				goto out;
			posted++;
		}
		int c = ep_reap_tx(a);
		if (c < 0)
			break;
		if (a->tx_done == total && !t_end)
			t_end = pt_now();
		if (r->b) {
			int m = rx_step(r->b, bst);
			if (m < 0)
				break;
			c += m;
		}
		/* a stalled sender means lost credits or a lost first message */
		if (posted || n || c) {
			idle_since = 0;
		} else if (!idle_since) {
			idle_since = pt_now();
		} else if (pt_now() - idle_since > ms_ticks(o->msg_timeout_ms)) {
			fail("sender stalled for %u ms at message %" PRIu64 " (credit %" PRIu64 ")",
			     o->msg_timeout_ms, a->tx_posted, granted);
			break;
		}
	}
out:
	if (!t_end)
		t_end = pt_now();
	r->tx_count = a->tx_posted > o->warmup ? a->tx_posted - o->warmup : 0;
	r->tx_ns = t_start ? (uint64_t)pt_ticks_ns(t_end - t_start) : 0;
}

/* Drain the receiver for a while after the sender has finished. */
static void drain_rx(struct ep *b, struct rx_state *st, unsigned int ms)
{
	uint64_t end = pt_now() + ms_ticks(ms);
	while (!pt_stop && st->received < st->total && pt_now() < end)
		if (rx_step(b, st) < 0)
			break;
}

static void fill_rate(struct rx_state *st, uint64_t warmup, uint32_t size, uint64_t rx_ns)
{
	uint64_t counted = st->good > warmup ? st->good - warmup : 0;
	if (warmup == 0 && counted)
		counted--; /* the first message only starts the clock */
	rep.has_rate = true;
	rep.duration_s = (double)rx_ns / 1e9;
	rep.msg_per_s = rx_ns ? (double)counted / rep.duration_s : 0;
	rep.gbit_per_s = rep.msg_per_s * size * 8 / 1e9;
}

static uint64_t rx_interval_ns(const struct rx_state *st)
{
	return st->t_ref && st->t_last > st->t_ref ? (uint64_t)pt_ticks_ns(st->t_last - st->t_ref) : 0;
}

/* ---------------------------------------------------------- exchange --- */

static void gid_hex(const union ibv_gid *g, char out[33])
{
	for (int i = 0; i < 16; i++)
		sprintf(out + 2 * i, "%02x", g->raw[i]);
}

static int parse_gid(const char *s, union ibv_gid *g)
{
	if (strlen(s) != 32)
		return -1;
	for (int i = 0; i < 16; i++) {
		unsigned int v;
		if (sscanf(s + 2 * i, "%2x", &v) != 1)
			return -1;
		g->raw[i] = (uint8_t)v;
	}
	return 0;
}

static int parse_remote(const char *line, struct remote *r)
{
	uint64_t qpn, qkey, psn, mtu;
	char gid[64];
	if (!pt_kv_u64(line, "qpn", &qpn) || !pt_kv_u64(line, "qkey", &qkey) || !pt_kv_u64(line, "psn", &psn) ||
	    !pt_kv_u64(line, "mtu", &mtu) || !pt_kv_str(line, "gid", gid, sizeof(gid)) || parse_gid(gid, &r->gid))
		return -1;
	r->qpn = (uint32_t)qpn;
	r->qkey = (uint32_t)qkey;
	r->psn = (uint32_t)psn;
	r->mtu = (uint32_t)mtu;
	return 0;
}

static int send_ep_line(int fd, const char *what, const struct ep *e, const char *extra)
{
	char gid[33];
	gid_hex(&e->gid, gid);
	return pt_send_line(fd, "%s qpn=%u qkey=%u psn=%u mtu=%u gid=%s%s", what, e->qp->qp_num, e->qkey, e->psn,
			    e->mtu, gid, extra ? extra : "");
}

/* ---------------------------------------------------------------- main --- */

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: %s [options] [server-host]\n"
		"       %s --server [options]\n"
		"       %s --loopback [options]\n"
		"\n"
		"Verbs latency / message-rate benchmark (UD today).\n"
		"\n"
		"Test:\n"
		"  -t, --test=NAME          ud_lat (default) or ud_bw\n"
		"  -s, --size=BYTES         payload size, 8 .. path MTU (default 64)\n"
		"  -n, --iters=N            measured messages/round trips (default 100000)\n"
		"      --warmup=N           warm-up messages/round trips, not measured (default 1000)\n"
		"  -w, --window=N           ud_bw: send WQEs outstanding; SQ depth (default 64)\n"
		"      --signal=N           signal every N-th send (default 16)\n"
		"  -r, --rx-depth=N         receive queue depth (default 512)\n"
		"      --no-fc              ud_bw: no receiver credits (messages may be dropped)\n"
		"      --no-inline          never use IBV_SEND_INLINE\n"
		"Mode:\n"
		"      --loopback           one process, two devices (default when neither\n"
		"                           --server nor a host is given and DPVERBS_CONFIG is unset)\n"
		"      --server             wait for a client; it sends the test parameters\n"
		"  server-host              run as the client of that server\n"
		"  -p, --port=PORT          TCP port of the parameter exchange (default %d)\n"
		"Device:\n"
		"  -d, --ib-dev=NAME        device (default: the first one)\n"
		"  -D, --ib-dev2=NAME       loopback: the second device (default: the second one)\n"
		"  -i, --ib-port=N          port number (default 1)\n"
		"  -g, --gid-idx=N          GID index (default 1: IPv4-mapped RoCEv2 GID)\n"
		"Run:\n"
		"      --timeout=SEC        global timeout, exit non-zero after it (default 60)\n"
		"      --msg-timeout=MS     a reply/credit missing this long is a loss (default 1000)\n"
		"      --clock=tsc|mono     timer (default: tsc if invariant, else CLOCK_MONOTONIC)\n"
		"      --json               print one JSON object instead of text\n"
		"  -h, --help               this text\n"
		"\n"
		"Latency is printed as one-way = RTT/2. Exit status: 0 pass, 1 failed\n"
		"check (lost/corrupt message, timeout), 2 usage or setup error.\n",
		prog, prog, prog, DEF_TCP_PORT);
}

static int parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out, const char *what)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 0);
	if (errno || end == s || *end || v < min || v > max || s[0] == '-') {
		fprintf(stderr, "%s: %s: must be an integer between %" PRIu64 " and %" PRIu64 " (got \"%s\")\n",
			prog, what, min, max, s);
		return -1;
	}
	*out = v;
	return 0;
}

enum {
	OPT_WARMUP = 256, OPT_SIGNAL, OPT_NO_FC, OPT_NO_INLINE, OPT_LOOPBACK, OPT_SERVER,
	OPT_TIMEOUT, OPT_MSG_TIMEOUT, OPT_CLOCK, OPT_JSON,
};

static int parse_args(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		{"test", required_argument, NULL, 't'},
		{"size", required_argument, NULL, 's'},
		{"iters", required_argument, NULL, 'n'},
		{"warmup", required_argument, NULL, OPT_WARMUP},
		{"window", required_argument, NULL, 'w'},
		{"signal", required_argument, NULL, OPT_SIGNAL},
		{"rx-depth", required_argument, NULL, 'r'},
		{"no-fc", no_argument, NULL, OPT_NO_FC},
		{"no-inline", no_argument, NULL, OPT_NO_INLINE},
		{"loopback", no_argument, NULL, OPT_LOOPBACK},
		{"server", no_argument, NULL, OPT_SERVER},
		{"port", required_argument, NULL, 'p'},
		{"ib-dev", required_argument, NULL, 'd'},
		{"ib-dev2", required_argument, NULL, 'D'},
		{"ib-port", required_argument, NULL, 'i'},
		{"gid-idx", required_argument, NULL, 'g'},
		{"timeout", required_argument, NULL, OPT_TIMEOUT},
		{"msg-timeout", required_argument, NULL, OPT_MSG_TIMEOUT},
		{"clock", required_argument, NULL, OPT_CLOCK},
		{"json", no_argument, NULL, OPT_JSON},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	uint64_t v;
	int c;

	while ((c = getopt_long(argc, argv, "t:s:n:w:r:p:d:D:i:g:h", lo, NULL)) != -1) {
		switch (c) {
		case 't':
			o->test_name = optarg;
			break;
		case 's':
			if (parse_u64(optarg, PT_MIN_SIZE, 65536, &v, "--size"))
				return -1;
			o->size = (uint32_t)v;
			break;
		case 'n':
			if (parse_u64(optarg, 1, 1000000000ull, &o->iters, "--iters"))
				return -1;
			break;
		case OPT_WARMUP:
			if (parse_u64(optarg, 0, 1000000000ull, &o->warmup, "--warmup"))
				return -1;
			break;
		case 'w':
			if (parse_u64(optarg, 1, 16384, &v, "--window"))
				return -1;
			o->window = (uint32_t)v;
			break;
		case OPT_SIGNAL:
			if (parse_u64(optarg, 1, 16384, &v, "--signal"))
				return -1;
			o->signal_every = (uint32_t)v;
			break;
		case 'r':
			if (parse_u64(optarg, 1, 16384, &v, "--rx-depth"))
				return -1;
			o->rx_depth = (uint32_t)v;
			break;
		case OPT_NO_FC:
			o->no_fc = true;
			break;
		case OPT_NO_INLINE:
			o->no_inline = true;
			break;
		case OPT_LOOPBACK:
			o->loopback = true;
			break;
		case OPT_SERVER:
			o->server = true;
			break;
		case 'p':
			if (parse_u64(optarg, 1, 65535, &v, "--port"))
				return -1;
			o->tcp_port = (int)v;
			break;
		case 'd':
			o->dev = optarg;
			break;
		case 'D':
			o->dev2 = optarg;
			break;
		case 'i':
			if (parse_u64(optarg, 1, 255, &v, "--ib-port"))
				return -1;
			o->ib_port = (int)v;
			break;
		case 'g':
			if (parse_u64(optarg, 0, 255, &v, "--gid-idx"))
				return -1;
			o->gid_idx = (int)v;
			break;
		case OPT_TIMEOUT:
			if (parse_u64(optarg, 1, 86400, &v, "--timeout"))
				return -1;
			o->timeout_s = (unsigned int)v;
			break;
		case OPT_MSG_TIMEOUT:
			if (parse_u64(optarg, 1, 600000, &v, "--msg-timeout"))
				return -1;
			o->msg_timeout_ms = (unsigned int)v;
			break;
		case OPT_CLOCK:
			if (!strcmp(optarg, "tsc"))
				o->clock = 1;
			else if (!strcmp(optarg, "mono"))
				o->clock = 0;
			else {
				fprintf(stderr, "%s: --clock: tsc or mono\n", prog);
				return -1;
			}
			break;
		case OPT_JSON:
			o->json = true;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			return -1;
		}
	}
	if (optind < argc)
		o->host = argv[optind++];
	if (optind < argc) {
		fprintf(stderr, "%s: unexpected argument \"%s\"\n", prog, argv[optind]);
		return -1;
	}
	if ((o->server ? 1 : 0) + (o->host ? 1 : 0) + (o->loopback ? 1 : 0) > 1) {
		fprintf(stderr, "%s: --server, --loopback and a server host exclude each other\n", prog);
		return -1;
	}
	if (!o->server && !o->host && !o->loopback) {
		const char *cfg = getenv("DPVERBS_CONFIG");
		if (cfg && *cfg) {
			fprintf(stderr, "%s: DPVERBS_CONFIG is set: give --server, a server host or --loopback\n",
				prog);
			return -1;
		}
		o->loopback = true;
	}
	if (o->signal_every > o->window)
		o->signal_every = o->window;
	return 0;
}

static const struct test *find_test(const char *name)
{
	for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++)
		if (!strcmp(tests[i].name, name))
			return &tests[i];
	return NULL;
}

static void add_params(const struct opts *o, const struct ep *a, const struct ep *b)
{
	json_t *p = rep.params;
	json_object_set_new(p, "size", json_integer(o->size));
	json_object_set_new(p, "iters", json_integer((json_int_t)o->iters));
	json_object_set_new(p, "warmup", json_integer((json_int_t)o->warmup));
	json_object_set_new(p, "window", json_integer(o->window));
	json_object_set_new(p, "signal", json_integer(o->signal_every));
	json_object_set_new(p, "rx_depth", json_integer(o->rx_depth));
	json_object_set_new(p, "flow_control", json_boolean(!o->no_fc));
	json_object_set_new(p, "inline", json_boolean(a->use_inline));
	json_object_set_new(p, "transport", json_string(a->tr->name));
	json_object_set_new(p, "device", json_string(a->name ? a->name : ""));
	if (b)
		json_object_set_new(p, "device2", json_string(b->name ? b->name : ""));
	json_object_set_new(p, "gid_idx", json_integer(o->gid_idx));
	json_object_set_new(p, "mtu", json_integer(a->mtu));
	json_object_set_new(p, "timeout_s", json_integer(o->timeout_s));
	const char *cfg = getenv("DPVERBS_CONFIG");
	json_object_set_new(p, "config", json_string(cfg && *cfg ? cfg : "<built-in default>"));
}

static void ep_setup_sizes(struct ep *e, const struct opts *o, const struct test *t, bool sender)
{
	e->tr = t->tr;
	e->size = o->size;
	e->ib_port = (uint8_t)o->ib_port;
	e->gid_idx = o->gid_idx;
	/* the side that only receives credits needs a small RQ; everyone else o->rx_depth */
	e->rx_depth = (!t->lat && sender) ? CTRL_DEPTH : o->rx_depth;
	e->tx_depth = (!t->lat && !sender) ? CTRL_DEPTH : o->window;
	e->sig = o->signal_every < e->tx_depth ? o->signal_every : e->tx_depth;
}

static int check_size(const struct ep *e, uint32_t remote_mtu)
{
	uint32_t mtu = e->mtu < remote_mtu ? e->mtu : remote_mtu;
	if (e->size > mtu) {
		fprintf(stderr, "%s: --size %u is above the path MTU %u (a UD message is one packet)\n", prog,
			e->size, mtu);
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct opts o = {
		.test_name = "ud_lat", .size = 64, .iters = 100000, .warmup = 1000, .window = 64,
		.signal_every = 16, .rx_depth = 512, .timeout_s = 60, .msg_timeout_ms = 1000,
		.ib_port = 1, .gid_idx = 1, .tcp_port = DEF_TCP_PORT, .clock = -1,
	};
	struct ep a, b;
	struct ibv_device **list = NULL;
	int lfd = -1, cfd = -1, rc = 2, ndev = 0;
	char line[1024];

	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	if (parse_args(argc, argv, &o))
		return 2;
	const struct test *t = find_test(o.test_name);
	if (!t) {
		fprintf(stderr, "%s: unknown test \"%s\" (ud_lat, ud_bw)\n", prog, o.test_name);
		return 2;
	}
	pt_signals_init(argv[0], o.timeout_s);
	pt_report_init(&rep, prog, t->name);
	rep.mode = o.loopback ? "loopback" : "two-process";
	rep.role = o.loopback ? "both" : (o.server ? "server" : "client");

	/* Bring the runtime up first: a memif server creates its socket here,
	 * before the client is told (by our listening) that it may start. */
	pt_clock_init(o.clock);
	list = ibv_get_device_list(&ndev);
	if (!list || ndev == 0) {
		fprintf(stderr, "%s: no RDMA device (is DPVERBS_CONFIG right?)\n", prog);
		goto out;
	}
	/* server: the parameters come from the client */
	if (o.server) {
		lfd = pt_tcp_listen(NULL, o.tcp_port);
		if (lfd < 0)
			goto out;
		if (!o.json)
			printf("%s: waiting for a client on TCP port %d\n", prog, o.tcp_port);
		fflush(stdout);
		cfd = pt_tcp_accept(lfd);
		if (cfd < 0)
			goto out;
		if (pt_recv_line(cfd, line, sizeof(line))) {
			fprintf(stderr, "%s: no parameters from the client\n", prog);
			goto out;
		}
		char tname[32];
		uint64_t v[7];
		if (strncmp(line, "hello ", 6) || !pt_kv_str(line, "test", tname, sizeof(tname)) ||
		    !pt_kv_u64(line, "size", &v[0]) || !pt_kv_u64(line, "iters", &v[1]) ||
		    !pt_kv_u64(line, "warmup", &v[2]) || !pt_kv_u64(line, "window", &v[3]) ||
		    !pt_kv_u64(line, "signal", &v[4]) || !pt_kv_u64(line, "rxdepth", &v[5]) ||
		    !pt_kv_u64(line, "fc", &v[6]) || !(t = find_test(tname))) {
			fprintf(stderr, "%s: bad parameters from the client: %s\n", prog, line);
			goto out;
		}
		o.size = (uint32_t)v[0];
		o.iters = v[1];
		o.warmup = v[2];
		o.window = (uint32_t)v[3];
		o.signal_every = (uint32_t)v[4];
		o.rx_depth = (uint32_t)v[5];
		o.no_fc = !v[6];
		o.test_name = t->name;
		rep.test = t->name;
	}

	struct ibv_device *da = find_dev(list, o.dev, 0);
	if (!da) {
		fprintf(stderr, "%s: no device %s\n", prog, o.dev ? o.dev : "");
		goto out;
	}
	/* a: client/sender (or server), b: loopback's server/receiver */
	ep_setup_sizes(&a, &o, t, !o.server);
	if (ep_open(&a, da, &o) || ep_start(&a))
		goto out;
	if (o.loopback) {
		struct ibv_device *db = o.dev2 ? find_dev(list, o.dev2, 0) : NULL;
		if (!o.dev2)
			for (int i = 0; i < ndev && !db; i++)
				if (list[i] != da)
					db = list[i];
		if (!db || db == da) {
			fprintf(stderr, "%s: --loopback needs a second device (-D)\n", prog);
			goto out;
		}
		ep_setup_sizes(&b, &o, t, false);
		if (ep_open(&b, db, &o) || ep_start(&b))
			goto out;
		struct remote ra = {.qpn = a.qp->qp_num, .qkey = a.qkey, .psn = a.psn, .mtu = a.mtu, .gid = a.gid};
		struct remote rb = {.qpn = b.qp->qp_num, .qkey = b.qkey, .psn = b.psn, .mtu = b.mtu, .gid = b.gid};
		if (check_size(&a, b.mtu) || a.tr->connect(&a, &rb) || b.tr->connect(&b, &ra))
			goto out;
	} else if (o.server) {
		struct remote rc_;
		if (parse_remote(line, &rc_)) {
			fprintf(stderr, "%s: bad address from the client: %s\n", prog, line);
			goto out;
		}
		if (check_size(&a, rc_.mtu)) {
			pt_send_line(cfd, "err size above the server's MTU");
			goto out;
		}
		if (a.tr->connect(&a, &rc_))
			goto out;
		if (send_ep_line(cfd, "ok", &a, NULL))
			goto out;
	} else {
		char extra[256];
		cfd = pt_tcp_connect(o.host, o.tcp_port, o.timeout_s);
		if (cfd < 0)
			goto out;
		snprintf(extra, sizeof(extra),
			 " test=%s size=%u iters=%" PRIu64 " warmup=%" PRIu64 " window=%u signal=%u rxdepth=%u fc=%d",
			 t->name, o.size, o.iters, o.warmup, o.window, o.signal_every, o.rx_depth, !o.no_fc);
		if (send_ep_line(cfd, "hello", &a, extra) || pt_recv_line(cfd, line, sizeof(line))) {
			fprintf(stderr, "%s: parameter exchange with the server failed\n", prog);
			goto out;
		}
		struct remote rs;
		if (strncmp(line, "ok ", 3) || parse_remote(line, &rs)) {
			fprintf(stderr, "%s: server refused: %s\n", prog, line);
			goto out;
		}
		if (check_size(&a, rs.mtu) || a.tr->connect(&a, &rs))
			goto out;
	}
	add_params(&o, &a, o.loopback ? &b : NULL);
	rc = 1;

	/* ---- run ---- */
	uint64_t total = o.warmup + o.iters;
	struct rx_state st = {.total = total, .warmup = o.warmup, .echo = t->lat, .credits = !t->lat,
			      .credit_every = o.rx_depth / 4 ? o.rx_depth / 4 : 1};
	struct run r = {.o = &o, .t = t, .a = &a, .b = o.loopback ? &b : NULL};

	if (o.server) {
		/* server: echo (lat) or receive (bw) until all arrived or the client is done */
		uint64_t idle = 0;
		bool done_seen = false;
		while (!pt_stop && st.received < total) {
			int n = rx_step(&a, &st);
			if (n < 0)
				break;
			if (n > 0) {
				idle = 0;
				continue;
			}
			if (++idle % 65536 == 0 && pt_line_ready(cfd)) {
				done_seen = true;
				break;
			}
		}
		if (done_seen) /* client finished: give the last messages a moment */
			drain_rx(&a, &st, 100);
		if (ep_tx_drain(&a) < 0 && !pt_stop)
			fail("%s: send drain failed", a.name);
		pt_clock_finish();
		if (pt_recv_line(cfd, line, sizeof(line)) || strncmp(line, "done", 4)) {
			fail("client went away before the end of the test");
		} else {
			uint64_t rx_ns = rx_interval_ns(&st);
			pt_send_line(cfd, "result received=%" PRIu64 " good=%" PRIu64 " corrupt=%" PRIu64
				     " ooo=%" PRIu64 " rx_ns=%" PRIu64,
				     st.received, st.good, st.corrupt, st.out_of_order, rx_ns);
			uint64_t sent = 0;
			pt_kv_u64(line, "sent", &sent);
			rep.sent = sent;
			if (!t->lat)
				fill_rate(&st, o.warmup, o.size, rx_ns);
		}
		rep.received = st.received;
		rep.corrupt = st.corrupt;
		rep.out_of_order = st.out_of_order;
		rep.lost = total > st.received ? total - st.received : 0;
	} else {
		if (t->lat)
			run_lat_client(&r, &st);
		else
			run_bw_sender(&r, &st);
		if (o.loopback) {
			if (!t->lat)
				drain_rx(&b, &st, 100);
			pt_clock_finish();
			if (!t->lat) {
				fill_rate(&st, o.warmup, o.size, rx_interval_ns(&st));
				rep.sent = a.tx_posted;
				rep.received = st.received;
				rep.corrupt += st.corrupt;
				rep.out_of_order += st.out_of_order;
				rep.lost = total > st.received ? total - st.received : 0;
			} else if (rep.ok && (st.corrupt || st.good != total)) {
				rep.corrupt += st.corrupt;
				pt_report_fail(&rep, "echo side saw %" PRIu64 " good of %" PRIu64, st.good, total);
			}
		} else {
			pt_clock_finish();
			uint64_t rx_ns = 0, good = 0, corrupt = 0, ooo = 0, recvd = 0;
			if (pt_send_line(cfd, "done sent=%" PRIu64, a.tx_posted) ||
			    pt_recv_line(cfd, line, sizeof(line)) || !pt_kv_u64(line, "good", &good) ||
			    !pt_kv_u64(line, "rx_ns", &rx_ns) || !pt_kv_u64(line, "corrupt", &corrupt) ||
			    !pt_kv_u64(line, "ooo", &ooo) || !pt_kv_u64(line, "received", &recvd)) {
				fail("no result from the server");
			} else if (!t->lat) {
				struct rx_state rs = {.good = good};
				fill_rate(&rs, o.warmup, o.size, rx_ns);
				rep.sent = a.tx_posted;
				rep.received = recvd;
				rep.corrupt += corrupt;
				rep.out_of_order += ooo;
				rep.lost = total > recvd ? total - recvd : 0;
			} else {
				rep.corrupt += corrupt;
				if (rep.ok && good != total)
					pt_report_fail(&rep, "server saw %" PRIu64 " good pings of %" PRIu64, good, total);
			}
		}
		if (!t->lat)
			rep.tx_msg_per_s = r.tx_ns ? (double)r.tx_count / (double)r.tx_ns * 1e9 : 0;
	}
	if (pt_timed_out)
		pt_report_fail(&rep, "global timeout of %u s expired", o.timeout_s);
	else if (pt_stop && rep.ok)
		pt_report_fail(&rep, "interrupted");
	rc = pt_report_print(&rep, o.json);
out:
	if (rc == 2 && rep.tool) {
		/* setup failed: still one JSON object when asked */
		if (o.json) {
			pt_report_fail(&rep, "setup failed (see stderr)");
			pt_report_print(&rep, true);
		}
	}
	ep_close(&b);
	ep_close(&a);
	if (list)
		ibv_free_device_list(list);
	if (cfd >= 0)
		close(cfd);
	if (lfd >= 0)
		close(lfd);
	json_decref(rep.params);
	return rc;
}
