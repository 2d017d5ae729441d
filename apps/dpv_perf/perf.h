/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpv_perf internals: a verbs benchmark that uses only the public ibv_* API.
 *
 *   dpv_perf.c    main: set-up, the rounds (one per message size), the two
 *                 modes (loopback in one thread; server/client over TCP)
 *   perf_opts.c   command line (getopt_long), --help, checks
 *   perf_ep.c     endpoints: device, PD, CQs, buffers, MR, XRC domain; QPs
 *                 of every type (RC, UC, UD, XRC) and their connection
 *   perf_wr.c     work requests: payload stamps, post lists, completions
 *   perf_xchg.c   the TCP exchange (parameters, QPNs, PSNs, GID, rkey, ...)
 *   perf_lat.c    latency tests (ping-pong, WRITE ping-pong, READ/atomic RTT)
 *   perf_bw.c     throughput tests (window, post lists, unsignalled WRs,
 *                 credits, round-robin over QPs)
 *   perf_out.c    statistics, text table, JSON, CSV
 *
 * Every message carries a stamp: its round and per-QP index, in the last
 * min(size, 8) bytes of the payload (the last bytes to land, which the
 * WRITE latency test polls). Receivers check it (and the immediate data,
 * the byte count); --verify also fills and checks the rest of the payload.
 */
#ifndef PERF_H
#define PERF_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <infiniband/verbs.h>
#include <dpverbs.h>
#include <jansson.h>

#include "perf_common.h"
#include "perf_stats.h"

#define PF_DEF_TCP_PORT 18600
#define PF_QKEY 0x64707631u            /* "dpv1" */
#define PF_MAX_QPS 1024u
#define PF_MAX_SIZE (1u << 20)
#define PF_MAX_POST_LIST 256u
#define PF_CREDIT_FLAG (1ull << 63)    /* stamp of a credit message */
#define PF_ROUND_SHIFT 40              /* stamp = round << 40 | (index + 1) */
#define PF_IDX_MASK ((1ull << PF_ROUND_SHIFT) - 1)
#define PF_GRH 40                      /* UD receive buffers start with the GRH */
#define PF_REGION_CAP (64u << 20)      /* per QP and direction: slots are cut to fit */

enum pf_qpt { PF_RC, PF_UC, PF_UD, PF_XRC, PF_QPT_N };
enum pf_op { PF_SEND, PF_SEND_IMM, PF_WRITE, PF_WRITE_IMM, PF_READ, PF_FADD, PF_CSWAP, PF_OP_N };
enum pf_kind { PF_LAT, PF_BW };
enum pf_mode { PF_LOOPBACK, PF_SERVER, PF_CLIENT };

struct pf_opts {
	enum pf_qpt qpt;
	enum pf_op op;
	enum pf_kind kind;
	enum pf_mode mode;
	uint32_t size_min, size_max;   /* equal unless --sweep */
	uint64_t iters, warmup, max_bytes;
	uint32_t window, post_list, signal, rx_depth, qps;
	bool rx_depth_set, max_bytes_set, mode_given;
	bool verify, no_inline, no_fc, json, hist;
	bool td;                        /* QPs and CQs in a parent domain with a thread domain */
	bool hugebuf;                   /* data buffers from dpv_hugepage_alloc */
	const char *csv;
	const char *host, *dev, *dev2;
	int ib_port, gid_idx, tcp_port;
	unsigned int timeout_s, msg_timeout_ms;
	int clock;
};

/* one connection: the local side of one QP pair */
struct pf_qp {
	uint32_t idx;
	struct ibv_qp *qp;      /* RC/UC/UD: the QP; XRC: the XRC_SEND (initiator) QP */
	struct ibv_qp *tgt;     /* XRC: the XRC_RECV (target) QP */
	uint32_t psn, srqn;     /* srqn: XRC, the endpoint's SRQ */
	uint32_t r_qpn, r_tgt, r_srqn, r_psn;   /* the peer's */
	uint8_t *tx, *rx;       /* this connection's slots */
	uint64_t r_rx;          /* address of the peer's rx slots of this connection */
	/* send queue, over the whole run (wr_id = idx << 40 | sq_posted) */
	uint64_t sq_posted, sq_done, sig_end, round_base;
	/* this round */
	uint64_t quota;         /* messages this connection carries */
	uint64_t granted;       /* credits: messages the receiver has consumed */
	bool have_credit;
	uint64_t expected, received, credited;
	uint64_t checked;       /* READ/atomics: results checked up to here */
};

struct pf_ep {
	const char *name;
	struct dpv_hugepage_allocator *hp; /* --hugepage-buf */
	const struct pf_opts *o;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_td *td;              /* --td: the thread domain ... */
	struct ibv_pd *pdom;            /* ... and the parent domain of the QPs and CQs */
	struct ibv_cq *scq, *rcq;
	struct ibv_mr *mr;
	struct ibv_ah *ah;              /* UD: one address handle for the peer */
	uint8_t *buf;
	size_t buf_len;
	char xrcd_path[64];
	int xrcd_fd;
	struct ibv_xrcd *xrcd;
	struct ibv_srq *srq;            /* XRC: one SRQ receives for every connection */
	uint32_t srqn;
	uint64_t *tgt_map;              /* XRC: sorted (XRC_RECV QPN << 32 | connection) */
	struct pf_qp *q;
	uint32_t nq;
	/* port */
	uint8_t port;
	int gid_idx;
	union ibv_gid gid;
	uint32_t mtu;                   /* active MTU in bytes */
	enum ibv_mtu mtu_enum;
	struct ibv_device_attr dev_attr;
	uint32_t max_inline;
	/* geometry: per connection tx_slots * slot, then rx_slots * rx_slot */
	uint32_t hdr, slot, rx_slot, tx_slots, rx_slots, window, rx_depth, sig;
	size_t stride;
	/* the peer */
	union ibv_gid r_gid;
	uint32_t r_mtu, r_rkey;
	uint64_t r_base, r_stride;
	uint32_t r_qkey;
	/* this round */
	uint64_t round;
	uint32_t size;
};

/* Set-up cost of the QPs, measured around their creation and connection. */
struct pf_setup {
	uint32_t created;       /* connections created in this process */
	double create_s, connect_s;
	long long rss0, rss1, huge0, huge1;   /* bytes, /proc/self/status */
};

/* the result of one round (one message size) */
struct pf_row {
	uint32_t size;
	uint64_t iters, warmup;
	bool has_lat, one_way;          /* one_way: RTT/2; else a round trip */
	struct ps_sum lat;
	uint64_t lat_samples;
	double lat_ops_per_s;           /* round trips (or operations) per second */
	json_t *cdf, *hist;             /* owned */
	bool has_bw;
	double msg_per_s, bytes_per_s, gbit_per_s, tx_msg_per_s, duration_s;
	uint64_t sent, received, lost, corrupt, ooo;
	bool ok;
	char error[256];
};

/* receive / echo state of the passive side of a round */
struct pf_pass {
	struct pf_ep *e;
	uint64_t total, next;           /* next: WRITE latency, the ping awaited */
	uint64_t clock_at;              /* bw: the good arrival that starts the clock */
	uint64_t received, good, corrupt, ooo, lost;
	uint64_t t_ref, t_last;
};

/* one round as the active side runs it */
struct pf_run {
	const struct pf_opts *o;
	struct pf_ep *a;                /* client / sender */
	struct pf_pass *b;              /* loopback: the passive side, else NULL */
	struct pf_row *row;
	uint64_t total;
};

/* perf_opts.c */
int pf_parse_args(int argc, char **argv, struct pf_opts *o);
void pf_opts_default(struct pf_opts *o);
const char *pf_qpt_name(enum pf_qpt t);
const char *pf_op_name(enum pf_op op);
const char *pf_kind_name(enum pf_kind k);
int pf_qpt_parse(const char *s);
int pf_op_parse(const char *s);
int pf_check_combo(const struct pf_opts *o);
void pf_test_name(const struct pf_opts *o, char *buf, size_t len);
/* does the operation consume a receive WQE at the target? */
static inline bool pf_op_recv(enum pf_op op) { return op == PF_SEND || op == PF_SEND_IMM || op == PF_WRITE_IMM; }
static inline bool pf_op_atomic(enum pf_op op) { return op == PF_FADD || op == PF_CSWAP; }
static inline bool pf_op_imm(enum pf_op op) { return op == PF_SEND_IMM || op == PF_WRITE_IMM; }

/* perf_ep.c */
int pf_ep_open(struct pf_ep *e, struct ibv_device *dev, const struct pf_opts *o);
int pf_shape(struct pf_opts *o, const struct pf_ep *e);
int pf_ep_alloc(struct pf_ep *e);
int pf_ep_create_qps(struct pf_ep *e);
int pf_ep_post_all_recv(struct pf_ep *e);
int pf_ep_connect(struct pf_ep *e);
void pf_ep_close(struct pf_ep *e);
int pf_ep_post_recv(struct pf_ep *e, struct pf_qp *q, uint32_t slot);
/* the connection a receive completion belongs to (XRC: by wc->qp_num, the
 * XRC_RECV QP; the buffer is always that of q[wr_id >> 32]) */
struct pf_qp *pf_rx_conn(struct pf_ep *e, const struct ibv_wc *wc);
void pf_ep_round_reset(struct pf_ep *e, uint64_t round, uint32_t size, uint64_t total);
int pf_mem_sample(long long *rss, long long *huge);
void pf_fail(struct pf_row *row, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
extern const char *pf_prog;

/* perf_wr.c */
static inline uint64_t pf_stamp(uint64_t round, uint64_t idx) { return round << PF_ROUND_SHIFT | (idx + 1); }
/* x mod d, without a division when d is a power of two (the usual case) */
static inline uint64_t pf_mod(uint64_t x, uint64_t d) { return (d & (d - 1)) == 0 ? x & (d - 1) : x % d; }
void pf_put_stamp(uint8_t *p, uint32_t size, uint64_t v);
bool pf_stamp_ok(const uint8_t *p, uint32_t size, uint64_t v);
uint64_t pf_get_stamp(const uint8_t *p, uint32_t size);
void pf_pattern_fill(uint8_t *p, uint32_t size, uint64_t v);
bool pf_pattern_ok(const uint8_t *p, uint32_t size, uint64_t v);
uint8_t *pf_tx_slot(struct pf_ep *e, struct pf_qp *q, uint64_t sq_index);
uint8_t *pf_rx_slot(struct pf_ep *e, struct pf_qp *q, uint32_t slot);
bool pf_sq_room(const struct pf_ep *e, const struct pf_qp *q, uint32_t n);
/* post n messages of this round on q (indexes q->sq_posted - round_base ...) */
int pf_post(struct pf_ep *e, struct pf_qp *q, uint32_t n, bool force_last_signal, struct pf_row *row);
int pf_post_credit(struct pf_ep *e, struct pf_qp *q, uint64_t count, bool final, struct pf_row *row);
/* reap send completions; checks READ/atomic results; returns count or -1 */
int pf_reap(struct pf_ep *e, struct pf_row *row);
/* wait until q's send queue has room for n WRs; -1 on error/stop */
int pf_wait_room(struct pf_ep *e, struct pf_qp *q, uint32_t n, struct pf_row *row);
int pf_drain_sq(struct pf_ep *e, struct pf_row *row);
/* check received data message k of q (SEND: in the receive slot; WRITE_IMM:
 * in the slot the write targeted) */
bool pf_rx_check(struct pf_ep *e, struct pf_qp *q, const struct ibv_wc *wc, uint64_t k);
/* index of the message a receive completion carries (its stamp), or -1 */
int64_t pf_rx_index(struct pf_ep *e, struct pf_qp *q, const struct ibv_wc *wc);
uint64_t pf_ms_ticks(unsigned int ms);

/* perf_lat.c */
void pf_lat_run(struct pf_run *r);
int pf_lat_passive_step(struct pf_pass *p, struct pf_row *row);

/* perf_bw.c */
void pf_bw_run(struct pf_run *r);
int pf_bw_passive_step(struct pf_pass *p, struct pf_row *row);
void pf_bw_passive_finish(struct pf_pass *p, struct pf_row *row);
void pf_pass_init(struct pf_pass *p, struct pf_ep *e, uint64_t total, uint64_t warmup);
int pf_passive_step(struct pf_pass *p, struct pf_row *row);
void pf_drain_passive(struct pf_pass *p, struct pf_row *row, unsigned int ms);

/* perf_xchg.c */
int pf_send_hello(int fd, const struct pf_opts *o);
int pf_recv_hello(int fd, struct pf_opts *o, char *line, size_t len);
int pf_send_ep(int fd, const char *what, const struct pf_ep *e);
int pf_recv_ep(int fd, struct pf_ep *e, const char *first_line);
void pf_local_peer(struct pf_ep *a, const struct pf_ep *b);

/* perf_out.c */
void pf_row_init(struct pf_row *row, uint32_t size, uint64_t iters, uint64_t warmup);
void pf_row_free(struct pf_row *row);
void pf_lat_finish(struct pf_row *row, uint64_t *ticks, uint64_t n, bool one_way, uint64_t span_ticks);
void pf_out_header(const struct pf_opts *o, const struct pf_ep *a, const struct pf_ep *b,
		   const struct pf_setup *s);
void pf_out_row(const struct pf_opts *o, const struct pf_row *row);
int pf_out_json(const struct pf_opts *o, const struct pf_ep *a, const struct pf_ep *b, const struct pf_setup *s,
		const struct pf_row *rows, uint32_t nrows, const char *error);
int pf_out_csv(const struct pf_opts *o, const struct pf_setup *s, const struct pf_row *rows, uint32_t nrows);
void pf_out_text_end(const struct pf_row *rows, uint32_t nrows, const char *error);
const char *pf_role(const struct pf_opts *o);

#endif /* PERF_H */
