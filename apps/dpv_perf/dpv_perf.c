/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpv_perf: latency and throughput benchmark of verbs (RC, UC, UD, XRC;
 * SEND, SEND_WITH_IMM, RDMA WRITE [WITH_IMM], RDMA READ, atomics), using
 * only the ibv_* API, so it runs on dpverbs and on any verbs provider.
 * The files are listed in perf.h; doc/man/dpv_perf.1.md is the manual.
 *
 * This file: set-up (devices, QPs with their creation cost, the exchange),
 * and the rounds, one per message size:
 *   --loopback        both endpoints in this process, driven by this thread:
 *                     the active one runs the test and steps the passive one
 *   --server / host   two processes; per round the client sends
 *                     "round r= size= iters= warmup=", the server answers
 *                     "ready", the client runs, sends "done sent=", and the
 *                     server answers with what it received ("result ...").
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "perf.h"

struct perf {
	struct pf_opts o;
	struct pf_ep a, b;                 /* a: client/sender/server; b: loopback's passive side */
	struct pf_setup setup;
	struct pf_row *rows;
	uint32_t nrows;
	struct ibv_device **list;
	int ndev, lfd, cfd;
	char line[1024];
	char error[256];
};

/* what the passive side saw in a round */
struct rx_sum {
	uint64_t received, good, corrupt, ooo, lost, counted, rx_ns;
};

static struct ibv_device *find_dev(struct perf *p, const char *name, struct ibv_device *not)
{
	for (int i = 0; i < p->ndev; i++) {
		if (name && !strcmp(ibv_get_device_name(p->list[i]), name))
			return p->list[i];
		if (!name && p->list[i] != not)
			return p->list[i];
	}
	return NULL;
}

static int open_devices(struct perf *p)
{
	struct ibv_device *da = find_dev(p, p->o.dev, NULL), *db = NULL;
	if (!da) {
		fprintf(stderr, "%s: no device %s\n", pf_prog, p->o.dev ? p->o.dev : "");
		return -1;
	}
	if (pf_ep_open(&p->a, da, &p->o))
		return -1;
	if (p->o.mode != PF_LOOPBACK)
		return 0;
	db = find_dev(p, p->o.dev2, da);
	if (!db || db == da) {
		fprintf(stderr, "%s: --loopback needs a second device (-D)\n", pf_prog);
		return -1;
	}
	return pf_ep_open(&p->b, db, &p->o);
}

static double secs(uint64_t ns0, uint64_t ns1) { return (double)(ns1 - ns0) / 1e9; }

/* allocate and create the QPs of the endpoints of this process, timed */
static int create_all(struct perf *p)
{
	bool two = p->o.mode == PF_LOOPBACK;
	if (pf_ep_alloc(&p->a) || (two && pf_ep_alloc(&p->b)))
		return -1;
	pf_mem_sample(&p->setup.rss0, &p->setup.huge0);
	uint64_t t0 = pt_mono_ns();
	if (pf_ep_create_qps(&p->a) || (two && pf_ep_create_qps(&p->b)))
		return -1;
	p->setup.create_s = secs(t0, pt_mono_ns());
	p->setup.created = p->o.qps * (two ? 2 : 1);
	return pf_ep_post_all_recv(&p->a) || (two && pf_ep_post_all_recv(&p->b)) ? -1 : 0;
}

static int connect_all(struct perf *p)
{
	uint64_t t0 = pt_mono_ns();
	if (pf_ep_connect(&p->a) || (p->o.mode == PF_LOOPBACK && pf_ep_connect(&p->b)))
		return -1;
	p->setup.connect_s = secs(t0, pt_mono_ns());
	pf_mem_sample(&p->setup.rss1, &p->setup.huge1);
	return 0;
}

static int setup_loopback(struct perf *p)
{
	if (pf_shape(&p->o, &p->a) || create_all(p))
		return -1;
	pf_local_peer(&p->a, &p->b);
	pf_local_peer(&p->b, &p->a);
	return connect_all(p);
}

static int setup_client(struct perf *p)
{
	if (pf_shape(&p->o, &p->a))
		return -1;
	p->cfd = pt_tcp_connect(p->o.host, p->o.tcp_port, p->o.timeout_s);
	if (p->cfd < 0 || pf_send_hello(p->cfd, &p->o) || create_all(p) || pf_send_ep(p->cfd, "ep", &p->a))
		return -1;
	if (pt_recv_line(p->cfd, p->line, sizeof(p->line)) || strncmp(p->line, "ok ", 3)) {
		fprintf(stderr, "%s: the server refused: %s\n", pf_prog, p->line);
		return -1;
	}
	return pf_recv_ep(p->cfd, &p->a, p->line) || connect_all(p) ? -1 : 0;
}

static int setup_server(struct perf *p)
{
	p->lfd = pt_tcp_listen(NULL, p->o.tcp_port);
	if (p->lfd < 0)
		return -1;
	if (!p->o.json)
		printf("%s: waiting for a client on TCP port %d\n", pf_prog, p->o.tcp_port);
	fflush(stdout);
	p->cfd = pt_tcp_accept(p->lfd);
	if (p->cfd < 0 || pf_recv_hello(p->cfd, &p->o, p->line, sizeof(p->line)))
		return -1;
	struct pf_opts want = p->o;
	if (pf_shape(&p->o, &p->a) || p->o.window != want.window || p->o.rx_depth != want.rx_depth) {
		pt_send_line(p->cfd, "err the server's device cannot take this window/rx-depth");
		return -1;
	}
	if (create_all(p) || pt_recv_line(p->cfd, p->line, sizeof(p->line)) || strncmp(p->line, "ep ", 3) ||
	    pf_recv_ep(p->cfd, &p->a, p->line) || pf_send_ep(p->cfd, "ok", &p->a))
		return -1;
	return connect_all(p);
}

/* ---- rounds ---- */

static uint32_t path_mtu(const struct pf_ep *e) { return e->r_mtu && e->r_mtu < e->mtu ? e->r_mtu : e->mtu; }

/* the sizes of the rows; UD stops at the path MTU (a UD message is one packet) */
static int plan_rows(struct perf *p)
{
	uint32_t n = 0, cap = p->o.qpt == PF_UD ? path_mtu(&p->a) : PF_MAX_SIZE;
	p->rows = calloc(32, sizeof(*p->rows));
	if (!p->rows)
		return -1;
	for (uint64_t s = p->o.size_min; s <= p->o.size_max && n < 32;) {
		if (s > cap) {
			fprintf(stderr, "%s: %s: sizes above the path MTU %u skipped (a UD message is one packet)\n",
				pf_prog, p->o.size_min == p->o.size_max ? "--size" : "--sweep", cap);
			break;
		}
		uint64_t it = p->o.iters;
		if (p->o.max_bytes && it * s > p->o.max_bytes)
			it = p->o.max_bytes / s < 100 ? 100 : p->o.max_bytes / s;
		pf_row_init(&p->rows[n++], (uint32_t)s, it, p->o.warmup < it ? p->o.warmup : it);
		uint64_t next = 1;
		while (next <= s)
			next <<= 1;
		s = next;
	}
	p->nrows = n;
	return n ? 0 : -1;
}

static void rx_summary(const struct pf_pass *ps, struct rx_sum *s)
{
	memset(s, 0, sizeof(*s));
	s->received = ps->received;
	s->good = ps->good;
	s->corrupt = ps->corrupt;
	s->ooo = ps->ooo;
	s->lost = ps->lost;
	s->counted = ps->good > ps->clock_at ? ps->good - ps->clock_at : 0;
	if (ps->t_ref && ps->t_last > ps->t_ref)
		s->rx_ns = (uint64_t)pt_ticks_ns(ps->t_last - ps->t_ref);
}

/* the passive side's numbers into the row (both modes) */
static void merge_rx(const struct pf_opts *o, struct pf_row *row, const struct rx_sum *s, uint64_t total)
{
	row->corrupt += s->corrupt;
	row->ooo += s->ooo;
	if (pf_op_recv(o->op) || (o->kind == PF_LAT && o->op == PF_WRITE)) {
		row->received = s->received;
		uint64_t missing = total > s->received ? total - s->received : 0;
		if (o->kind == PF_BW || missing > row->lost)
			row->lost = missing;
	}
	if (o->kind == PF_BW && pf_op_recv(o->op) && s->rx_ns) {
		row->msg_per_s = (double)s->counted / (double)s->rx_ns * 1e9;
		row->duration_s = (double)s->rx_ns / 1e9;
	}
	if (o->kind == PF_BW) {
		row->bytes_per_s = row->msg_per_s * row->size;
		row->gbit_per_s = row->bytes_per_s * 8 / 1e9;
	}
	if (row->lost || row->corrupt)
		pf_fail(row, "%" PRIu64 " messages lost, %" PRIu64 " corrupt", row->lost, row->corrupt);
}

static void run_active(struct perf *p, struct pf_pass *passive, struct pf_row *row, uint64_t total)
{
	struct pf_run r = {.o = &p->o, .a = &p->a, .b = passive, .row = row, .total = total};
	if (p->o.kind == PF_LAT)
		pf_lat_run(&r);
	else
		pf_bw_run(&r);
}

static void finish_passive(struct pf_pass *ps, struct pf_row *row)
{
	if (ps->e->o->kind == PF_BW)
		pf_bw_passive_finish(ps, row);
	else
		pf_drain_passive(ps, row, 100);
}

static void round_loopback(struct perf *p, uint64_t round, struct pf_row *row)
{
	uint64_t total = row->warmup + row->iters;
	struct pf_pass ps;
	struct rx_sum s;
	pf_ep_round_reset(&p->a, round, row->size, total);
	pf_ep_round_reset(&p->b, round, row->size, total);
	pf_pass_init(&ps, &p->b, total, row->warmup);
	run_active(p, &ps, row, total);
	finish_passive(&ps, row);
	rx_summary(&ps, &s);
	merge_rx(&p->o, row, &s, total);
}

static void round_client(struct perf *p, uint64_t round, struct pf_row *row)
{
	uint64_t total = row->warmup + row->iters;
	struct rx_sum s;
	if (pt_send_line(p->cfd, "round r=%" PRIu64 " size=%u iters=%" PRIu64 " warmup=%" PRIu64, round, row->size,
			 row->iters, row->warmup) ||
	    pt_recv_line(p->cfd, p->line, sizeof(p->line)) || strcmp(p->line, "ready")) {
		pf_fail(row, "the server did not start round %" PRIu64, round);
		return;
	}
	pf_ep_round_reset(&p->a, round, row->size, total);
	run_active(p, NULL, row, total);
	memset(&s, 0, sizeof(s));
	if (pt_send_line(p->cfd, "done sent=%" PRIu64, row->sent) || pt_recv_line(p->cfd, p->line, sizeof(p->line)) ||
	    !pt_kv_u64(p->line, "received", &s.received) || !pt_kv_u64(p->line, "good", &s.good) ||
	    !pt_kv_u64(p->line, "corrupt", &s.corrupt) || !pt_kv_u64(p->line, "ooo", &s.ooo) ||
	    !pt_kv_u64(p->line, "lost", &s.lost) || !pt_kv_u64(p->line, "counted", &s.counted) ||
	    !pt_kv_u64(p->line, "rx_ns", &s.rx_ns)) {
		pf_fail(row, "no result from the server");
		return;
	}
	merge_rx(&p->o, row, &s, total);
}

/* server: the passive side until the client says "done" */
static void serve_round(struct perf *p, struct pf_pass *ps, struct pf_row *row)
{
	uint64_t idle = 0;
	while (!pt_stop) {
		int n = pf_passive_step(ps, row);
		if (n < 0)
			break;
		idle = n ? 0 : idle + 1;
		if ((idle && idle % 4096 == 0) && pt_line_ready(p->cfd))
			break;
	}
	if (pt_recv_line(p->cfd, p->line, sizeof(p->line)) || strncmp(p->line, "done", 4)) {
		pf_fail(row, "the client went away during the round");
		return;
	}
	pt_kv_u64(p->line, "sent", &row->sent);
	finish_passive(ps, row);
}

static int serve(struct perf *p)
{
	uint64_t round, size, iters, warmup;
	while (!pt_stop && !pt_recv_line(p->cfd, p->line, sizeof(p->line)) && strcmp(p->line, "bye")) {
		if (strncmp(p->line, "round ", 6) || !pt_kv_u64(p->line, "r", &round) ||
		    !pt_kv_u64(p->line, "size", &size) || !pt_kv_u64(p->line, "iters", &iters) ||
		    !pt_kv_u64(p->line, "warmup", &warmup) || size > p->o.size_max || !size || p->nrows >= 32) {
			fprintf(stderr, "%s: bad round from the client: %s\n", pf_prog, p->line);
			return -1;
		}
		struct pf_row *row = &p->rows[p->nrows++];
		struct pf_pass ps;
		struct rx_sum s;
		pf_row_init(row, (uint32_t)size, iters, warmup);
		pf_ep_round_reset(&p->a, round, row->size, warmup + iters);
		pf_pass_init(&ps, &p->a, warmup + iters, warmup);
		if (pt_send_line(p->cfd, "ready"))
			return -1;
		serve_round(p, &ps, row);
		rx_summary(&ps, &s);
		pt_send_line(p->cfd, "result received=%" PRIu64 " good=%" PRIu64 " corrupt=%" PRIu64 " ooo=%" PRIu64
			     " lost=%" PRIu64 " counted=%" PRIu64 " rx_ns=%" PRIu64,
			     s.received, s.good, s.corrupt, s.ooo, s.lost, s.counted, s.rx_ns);
		merge_rx(&p->o, row, &s, warmup + iters);
		if (!p->o.json)
			pf_out_row(&p->o, row);
	}
	return 0;
}

/* the rows in turn; a failed row (or a signal) ends the run, and only the
 * rows that ran are reported */
static void run_rows(struct perf *p)
{
	uint32_t i;
	for (i = 0; i < p->nrows && !pt_stop; i++) {
		if (p->o.mode == PF_LOOPBACK)
			round_loopback(p, i + 1, &p->rows[i]);
		else
			round_client(p, i + 1, &p->rows[i]);
		if (!p->o.json)
			pf_out_row(&p->o, &p->rows[i]);
	}
	p->nrows = i;
	if (p->o.mode == PF_CLIENT)
		pt_send_line(p->cfd, "bye");
}

/* ---- main ---- */

static int setup(struct perf *p)
{
	p->list = ibv_get_device_list(&p->ndev);
	if (!p->list || !p->ndev) {
		fprintf(stderr, "%s: no RDMA device (is DPVERBS_CONFIG right?)\n", pf_prog);
		return -1;
	}
	if (p->o.mode == PF_SERVER) {
		/* the runtime is up (a memif server has its socket) before we listen */
		if (open_devices(p) || setup_server(p))
			return -1;
		p->rows = calloc(32, sizeof(*p->rows));
		return p->rows ? 0 : -1;
	}
	if (open_devices(p))
		return -1;
	if (p->o.mode == PF_LOOPBACK ? setup_loopback(p) : setup_client(p))
		return -1;
	return plan_rows(p);
}

static void cleanup(struct perf *p)
{
	for (uint32_t i = 0; p->rows && i < 32; i++)
		pf_row_free(&p->rows[i]);
	free(p->rows);
	pf_ep_close(&p->b);
	pf_ep_close(&p->a);
	if (p->list)
		ibv_free_device_list(p->list);
	if (p->cfd >= 0)
		close(p->cfd);
	if (p->lfd >= 0)
		close(p->lfd);
}

static int finish(struct perf *p)
{
	const char *err = NULL;
	bool rows_ok = true;
	for (uint32_t i = 0; i < p->nrows; i++)
		rows_ok = rows_ok && p->rows[i].ok;
	if (pt_timed_out) {
		snprintf(p->error, sizeof(p->error), "global timeout of %u s expired", p->o.timeout_s);
		err = p->error;
	} else if (pt_stop && rows_ok) {
		err = "interrupted"; /* a failing row stops the run too, and says why */
	}
	if (p->o.csv && p->o.mode != PF_SERVER && pf_out_csv(&p->o, &p->setup, p->rows, p->nrows))
		fprintf(stderr, "%s: cannot write %s\n", pf_prog, p->o.csv);
	struct pf_ep *b = p->o.mode == PF_LOOPBACK ? &p->b : NULL;
	if (p->o.json)
		return pf_out_json(&p->o, &p->a, b, &p->setup, p->rows, p->nrows, err);
	pf_out_text_end(p->rows, p->nrows, err);
	return !err && rows_ok ? 0 : 1;
}

int main(int argc, char **argv)
{
	static struct perf p;
	int rc = 2;
	p.lfd = p.cfd = -1;
	p.a.xrcd_fd = p.b.xrcd_fd = -1;
	pf_opts_default(&p.o);
	if (pf_parse_args(argc, argv, &p.o))
		return 2;
	pt_signals_init(argv[0], p.o.timeout_s);
	pt_clock_init(p.o.clock);
	if (setup(&p)) {
		if (p.o.json)
			pf_out_json(&p.o, &p.a, NULL, &p.setup, NULL, 0, pt_stop ? "interrupted during set-up" :
				    "set-up failed (see stderr)");
		goto out;
	}
	if (!p.o.json)
		pf_out_header(&p.o, &p.a, p.o.mode == PF_LOOPBACK ? &p.b : NULL, &p.setup);
	if (p.o.mode == PF_SERVER ? serve(&p) : (run_rows(&p), 0))
		goto out;
	pt_clock_finish();
	rc = finish(&p);
out:
	cleanup(&p);
	return rc;
}
