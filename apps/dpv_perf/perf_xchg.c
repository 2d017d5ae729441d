/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpv_perf: what the two sides tell each other, as text lines over TCP
 * (pt_send_line / pt_recv_line), or directly in loopback mode.
 *
 *   client: hello v=2 qpt= op= kind= qps= smin= smax= iters= warmup= maxb=
 *                 window= plist= signal= rxdepth= fc= verify= inline= msgto=
 *   client: ep gid= mtu= rkey= base= stride=          then one line per QP:
 *           q i= qpn= tgt= srqn= psn=                 and "end"
 *   server: ok gid= ... (the same endpoint block), or "err <reason>"
 *   per round (dpv_perf.c): round / ready / done / result; at the end bye
 *
 * base is the address of the first connection's receive (target) slots;
 * connection i's are at base + i * stride.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "perf.h"

int pf_send_hello(int fd, const struct pf_opts *o)
{
	return pt_send_line(fd,
			    "hello v=2 qpt=%s op=%s kind=%s qps=%u smin=%u smax=%u iters=%" PRIu64
			    " warmup=%" PRIu64 " maxb=%" PRIu64 " window=%u plist=%u signal=%u rxdepth=%u fc=%d"
			    " verify=%d inline=%d msgto=%u",
			    pf_qpt_name(o->qpt), pf_op_name(o->op), pf_kind_name(o->kind), o->qps, o->size_min,
			    o->size_max, o->iters, o->warmup, o->max_bytes, o->window, o->post_list, o->signal,
			    o->rx_depth, !o->no_fc, o->verify, !o->no_inline, o->msg_timeout_ms);
}

static bool kv_u32(const char *line, const char *key, uint32_t *out, uint32_t max)
{
	uint64_t v;
	if (!pt_kv_u64(line, key, &v) || v > max)
		return false;
	*out = (uint32_t)v;
	return true;
}

/* the test parameters from the client's hello line (already in line) */
static int parse_hello(const char *line, struct pf_opts *o)
{
	char qpt[16], op[16], kind[16];
	uint32_t fc, verify, inl, v;
	int t, p;
	if (strncmp(line, "hello ", 6) || !kv_u32(line, "v", &v, 99) || v != 2 ||
	    !pt_kv_str(line, "qpt", qpt, sizeof(qpt)) || !pt_kv_str(line, "op", op, sizeof(op)) ||
	    !pt_kv_str(line, "kind", kind, sizeof(kind)) || (t = pf_qpt_parse(qpt)) < 0 ||
	    (p = pf_op_parse(op)) < 0 || (strcmp(kind, "lat") && strcmp(kind, "bw")))
		return -1;
	o->qpt = (enum pf_qpt)t;
	o->op = (enum pf_op)p;
	o->kind = strcmp(kind, "lat") ? PF_BW : PF_LAT;
	if (!kv_u32(line, "qps", &o->qps, PF_MAX_QPS) || !o->qps || !kv_u32(line, "smin", &o->size_min, PF_MAX_SIZE) ||
	    !kv_u32(line, "smax", &o->size_max, PF_MAX_SIZE) || !pt_kv_u64(line, "iters", &o->iters) ||
	    !pt_kv_u64(line, "warmup", &o->warmup) || !pt_kv_u64(line, "maxb", &o->max_bytes) ||
	    !kv_u32(line, "window", &o->window, 16384) || !kv_u32(line, "plist", &o->post_list, PF_MAX_POST_LIST) ||
	    !kv_u32(line, "signal", &o->signal, 16384) || !kv_u32(line, "rxdepth", &o->rx_depth, 16384) ||
	    !kv_u32(line, "fc", &fc, 1) || !kv_u32(line, "verify", &verify, 1) || !kv_u32(line, "inline", &inl, 1) ||
	    !kv_u32(line, "msgto", &o->msg_timeout_ms, 600000))
		return -1;
	if (!o->size_min || o->size_min > o->size_max || !o->window || !o->signal || !o->post_list)
		return -1;
	o->no_fc = !fc;
	o->verify = verify;
	o->no_inline = !inl;
	o->rx_depth_set = true;
	return pf_check_combo(o);
}

int pf_recv_hello(int fd, struct pf_opts *o, char *line, size_t len)
{
	if (pt_recv_line(fd, line, len)) {
		fprintf(stderr, "%s: no parameters from the client\n", pf_prog);
		return -1;
	}
	if (parse_hello(line, o)) {
		fprintf(stderr, "%s: bad parameters from the client: %s\n", pf_prog, line);
		return -1;
	}
	return 0;
}

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

int pf_send_ep(int fd, const char *what, const struct pf_ep *e)
{
	char gid[33];
	gid_hex(&e->gid, gid);
	if (pt_send_line(fd, "%s gid=%s mtu=%u rkey=%u base=%" PRIu64 " stride=%zu", what, gid, e->mtu,
			 e->mr->rkey, (uint64_t)(uintptr_t)e->q[0].rx, e->stride))
		return -1;
	for (uint32_t i = 0; i < e->nq; i++) {
		const struct pf_qp *q = &e->q[i];
		if (pt_send_line(fd, "q i=%u qpn=%u tgt=%u srqn=%u psn=%u", i, q->qp->qp_num,
				 q->tgt ? q->tgt->qp_num : 0, q->srqn, q->psn))
			return -1;
	}
	return pt_send_line(fd, "end");
}

static int parse_qp_line(const char *line, struct pf_ep *e, uint32_t i)
{
	struct pf_qp *q = &e->q[i];
	uint32_t idx;
	if (strncmp(line, "q ", 2) || !kv_u32(line, "i", &idx, PF_MAX_QPS) || idx != i ||
	    !kv_u32(line, "qpn", &q->r_qpn, 0xffffff) || !kv_u32(line, "tgt", &q->r_tgt, 0xffffff) ||
	    !kv_u32(line, "srqn", &q->r_srqn, UINT32_MAX) || !kv_u32(line, "psn", &q->r_psn, 0xffffff))
		return -1;
	q->r_rx = e->r_base + e->r_stride * i;
	return 0;
}

/* the peer's endpoint block; first_line is its first line, already read */
int pf_recv_ep(int fd, struct pf_ep *e, const char *first_line)
{
	char gid[64], line[256];
	if (!pt_kv_str(first_line, "gid", gid, sizeof(gid)) || parse_gid(gid, &e->r_gid) ||
	    !kv_u32(first_line, "mtu", &e->r_mtu, 65536) || !kv_u32(first_line, "rkey", &e->r_rkey, UINT32_MAX) ||
	    !pt_kv_u64(first_line, "base", &e->r_base) || !pt_kv_u64(first_line, "stride", &e->r_stride)) {
		fprintf(stderr, "%s: bad endpoint line from the peer: %s\n", pf_prog, first_line);
		return -1;
	}
	for (uint32_t i = 0; i < e->nq; i++)
		if (pt_recv_line(fd, line, sizeof(line)) || parse_qp_line(line, e, i)) {
			fprintf(stderr, "%s: bad QP line %u from the peer\n", pf_prog, i);
			return -1;
		}
	if (pt_recv_line(fd, line, sizeof(line)) || strcmp(line, "end")) {
		fprintf(stderr, "%s: the peer has more QPs than we have\n", pf_prog);
		return -1;
	}
	return 0;
}

/* loopback: a learns b's side as its peer */
void pf_local_peer(struct pf_ep *a, const struct pf_ep *b)
{
	a->r_gid = b->gid;
	a->r_mtu = b->mtu;
	a->r_rkey = b->mr->rkey;
	a->r_base = (uint64_t)(uintptr_t)b->q[0].rx;
	a->r_stride = b->stride;
	for (uint32_t i = 0; i < a->nq; i++) {
		struct pf_qp *q = &a->q[i];
		const struct pf_qp *p = &b->q[i];
		q->r_qpn = p->qp->qp_num;
		q->r_tgt = p->tgt ? p->tgt->qp_num : 0;
		q->r_srqn = p->srqn;
		q->r_psn = p->psn;
		q->r_rx = a->r_base + a->r_stride * i;
	}
}
