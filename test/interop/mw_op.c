/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mw_op: memory windows between two verbs stacks, by hand (test/interop/README.md).
 *
 *   server: mw_op [-d DEV] [-g GIDX] [-p PORT] -o OP
 *   client: mw_op [-d DEV] [-g GIDX] [-p PORT] -o OP SERVER_IP
 *
 * The server owns 4 KiB of memory registered with IBV_ACCESS_MW_BIND and a
 * type 2 memory window; it binds the window (IBV_WR_BIND_MW, remote write,
 * the whole buffer) and tells the client the window's rkey and address.
 *   OP write     the client writes 64 bytes through the window; the server
 *                checks them.
 *   OP send_inv  the client sends SEND_WITH_INV with the window's rkey; the
 *                server checks IBV_WC_WITH_INV and invalidated_rkey; then the
 *                client writes through the stale rkey.
 *   OP stale     the server invalidates the window itself (IBV_WR_LOCAL_INV);
 *                the client writes through the stale rkey.
 * The write through a stale rkey must complete with IBV_WC_REM_ACCESS_ERR at
 * the client (the responder NAKs it: remote access error). Every completion
 * is printed; exit 0 only if each side saw what the IBA asks for.
 *
 * Connection: TCP port PORT (default 18516), then {qpn, psn, gid} each way,
 * both QPs to RTS, then the window {rkey, addr} from the server, one byte
 * each way per step. Uses only <infiniband/verbs.h>: it runs on rdma-core
 * over Linux rxe and on dpverbs' drop-in alike.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <infiniband/verbs.h>
#include <netdb.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define BUF 4096
#define WLEN 64

struct wire {
	uint32_t qpn, psn, rkey, pad;
	uint64_t addr;
	uint8_t gid[16];
};

struct ctx {
	struct ibv_context *vc;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	struct ibv_mw *mw;
	char *buf;
	int sock;
	int gidx;
};

static int die(const char *what)
{
	fprintf(stderr, "mw_op: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void xfer(int s, void *p, size_t n, int out)
{
	size_t d = 0;
	while (d < n) {
		ssize_t r = out ? write(s, (char *)p + d, n - d) : read(s, (char *)p + d, n - d);
		if (r <= 0)
			die(out ? "tcp write" : "tcp read");
		d += (size_t)r;
	}
}

static void sync_byte(struct ctx *c)
{
	char b = 'x';
	xfer(c->sock, &b, 1, 1);
	xfer(c->sock, &b, 1, 0);
}

static int tcp_connect(const char *host, int port)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	int s = socket(AF_INET, SOCK_STREAM, 0), one = 1;
	if (s < 0)
		die("socket");
	if (!host) {
		setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(s, (struct sockaddr *)&a, sizeof(a)) || listen(s, 1))
			die("bind/listen");
		int c = accept(s, NULL, NULL);
		close(s);
		return c < 0 ? die("accept") : c;
	}
	if (inet_pton(AF_INET, host, &a.sin_addr) != 1)
		die("server address");
	for (int i = 0; i < 100; i++) {
		if (connect(s, (struct sockaddr *)&a, sizeof(a)) == 0)
			return s;
		usleep(100000);
	}
	return die("connect");
}

/* One completion (10 s at most); prints it; returns its status. */
static int poll_one(struct ctx *c, const char *what, struct ibv_wc *out)
{
	struct ibv_wc wc;
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		int n = ibv_poll_cq(c->cq, 1, &wc);
		if (n < 0)
			die("ibv_poll_cq");
		if (n == 1)
			break;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (t.tv_sec - t0.tv_sec > 10) {
			printf("%s: no completion in 10 s\n", what);
			return -1;
		}
	}
	printf("%s: status %s (%d), opcode %d, byte_len %u, wc_flags %#x", what, ibv_wc_status_str(wc.status),
	       wc.status, wc.opcode, wc.byte_len, wc.wc_flags);
	if (wc.wc_flags & IBV_WC_WITH_INV)
		printf(", invalidated_rkey %#x", wc.invalidated_rkey);
	printf("\n");
	if (out)
		*out = wc;
	return wc.status;
}

static void setup(struct ctx *c, const char *dev)
{
	int n;
	struct ibv_device **l = ibv_get_device_list(&n);
	if (!l)
		die("ibv_get_device_list");
	for (int i = 0; i < n && !c->vc; i++)
		if (!dev || !strcmp(ibv_get_device_name(l[i]), dev))
			c->vc = ibv_open_device(l[i]);
	if (!c->vc)
		die("no such device");
	c->pd = ibv_alloc_pd(c->vc);
	c->cq = ibv_create_cq(c->vc, 16, NULL, NULL, 0);
	struct ibv_qp_init_attr qa = {.send_cq = c->cq, .recv_cq = c->cq, .qp_type = IBV_QPT_RC,
				      .cap = {.max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1,
					      .max_recv_sge = 1}};
	c->qp = c->pd && c->cq ? ibv_create_qp(c->pd, &qa) : NULL;
	if (!c->qp)
		die("pd/cq/qp");
	c->buf = aligned_alloc(4096, BUF);
	memset(c->buf, 0, BUF);
	c->mr = ibv_reg_mr(c->pd, c->buf, BUF,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
				   IBV_ACCESS_MW_BIND);
	if (!c->mr)
		die("ibv_reg_mr (MW_BIND)");
}

static void to_rts(struct ctx *c, const struct wire *me, const struct wire *peer)
{
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .port_num = 1,
				.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ};
	if (ibv_modify_qp(c->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		die("INIT");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = ntohl(peer->qpn);
	a.rq_psn = ntohl(peer->psn);
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	memcpy(a.ah_attr.grh.dgid.raw, peer->gid, 16);
	a.ah_attr.grh.sgid_index = (uint8_t)c->gidx;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.port_num = 1;
	if (ibv_modify_qp(c->qp, &a,
			  IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
				  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		die("RTR");
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = ntohl(me->psn);
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	if (ibv_modify_qp(c->qp, &a,
			  IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
				  IBV_QP_MAX_QP_RD_ATOMIC))
		die("RTS");
}

static void post(struct ctx *c, struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad;
	if (ibv_post_send(c->qp, wr, &bad))
		die("ibv_post_send");
}

static int server(struct ctx *c, const char *op)
{
	int ok = 1;
	c->mw = ibv_alloc_mw(c->pd, IBV_MW_TYPE_2);
	if (!c->mw)
		die("ibv_alloc_mw(type 2)");
	struct ibv_send_wr wr = {.wr_id = 1, .opcode = IBV_WR_BIND_MW, .send_flags = IBV_SEND_SIGNALED};
	wr.bind_mw.mw = c->mw;
	wr.bind_mw.rkey = ibv_inc_rkey(c->mw->rkey);
	wr.bind_mw.bind_info.mr = c->mr;
	wr.bind_mw.bind_info.addr = (uintptr_t)c->buf;
	wr.bind_mw.bind_info.length = BUF;
	wr.bind_mw.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_WRITE;
	post(c, &wr);
	ok &= poll_one(c, "server: BIND_MW", NULL) == IBV_WC_SUCCESS;
	uint32_t rkey = wr.bind_mw.rkey;
	printf("server: window rkey %#x addr %p (mr lkey %#x rkey %#x)\n", rkey, (void *)c->buf, c->mr->lkey,
	       c->mr->rkey);
	struct ibv_sge sge = {.addr = (uintptr_t)c->buf + BUF / 2, .length = BUF / 2, .lkey = c->mr->lkey};
	struct ibv_recv_wr rw = {.wr_id = 2, .sg_list = &sge, .num_sge = 1}, *rbad;
	if (ibv_post_recv(c->qp, &rw, &rbad))
		die("ibv_post_recv");
	struct wire w = {.rkey = htonl(rkey), .addr = (uint64_t)(uintptr_t)c->buf};
	xfer(c->sock, &w, sizeof(w), 1);
	if (!strcmp(op, "write")) {
		sync_byte(c); /* the client's write completed */
		int good = 1;
		for (int i = 0; i < WLEN; i++)
			good &= c->buf[i] == (char)('a' + i % 26);
		printf("server: the 64 bytes written through the window %s\n", good ? "are there" : "are NOT there");
		ok &= good;
	} else if (!strcmp(op, "send_inv")) {
		struct ibv_wc wc;
		ok &= poll_one(c, "server: RECV", &wc) == IBV_WC_SUCCESS;
		ok &= (wc.wc_flags & IBV_WC_WITH_INV) && wc.invalidated_rkey == rkey;
		sync_byte(c); /* tell the client: the window is invalid now */
		sync_byte(c); /* the client's stale write completed */
	} else {
		struct ibv_send_wr inv = {.wr_id = 3, .opcode = IBV_WR_LOCAL_INV, .send_flags = IBV_SEND_SIGNALED};
		inv.invalidate_rkey = rkey;
		post(c, &inv);
		ok &= poll_one(c, "server: LOCAL_INV", NULL) == IBV_WC_SUCCESS;
		sync_byte(c);
		sync_byte(c);
	}
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qi;
	if (!ibv_query_qp(c->qp, &qa, IBV_QP_STATE, &qi))
		printf("server: QP state now %d (%s)\n", qa.qp_state, qa.qp_state == IBV_QPS_ERR ? "ERR" : "not ERR");
	return ok;
}

static int client(struct ctx *c, const char *op)
{
	int ok = 1;
	struct wire w;
	xfer(c->sock, &w, sizeof(w), 0);
	uint32_t rkey = ntohl(w.rkey);
	printf("client: window rkey %#x addr %#llx\n", rkey, (unsigned long long)w.addr);
	for (int i = 0; i < WLEN; i++)
		c->buf[i] = (char)('a' + i % 26);
	struct ibv_sge sge = {.addr = (uintptr_t)c->buf, .length = WLEN, .lkey = c->mr->lkey};
	struct ibv_send_wr wr = {.wr_id = 1, .sg_list = &sge, .num_sge = 1, .send_flags = IBV_SEND_SIGNALED};
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.wr.rdma.remote_addr = w.addr;
	wr.wr.rdma.rkey = rkey;
	if (!strcmp(op, "write")) {
		post(c, &wr);
		ok &= poll_one(c, "client: RDMA_WRITE through the window", NULL) == IBV_WC_SUCCESS;
		sync_byte(c);
		return ok;
	}
	if (!strcmp(op, "send_inv")) {
		struct ibv_send_wr s = {.wr_id = 2, .sg_list = &sge, .num_sge = 1, .send_flags = IBV_SEND_SIGNALED,
					.opcode = IBV_WR_SEND_WITH_INV};
		s.invalidate_rkey = rkey;
		post(c, &s);
		ok &= poll_one(c, "client: SEND_WITH_INV", NULL) == IBV_WC_SUCCESS;
	}
	sync_byte(c); /* the window is invalid now */
	post(c, &wr);
	ok &= poll_one(c, "client: RDMA_WRITE through the stale rkey", NULL) == IBV_WC_REM_ACCESS_ERR;
	sync_byte(c);
	return ok;
}

int main(int argc, char **argv)
{
	struct ctx c = {.gidx = 1};
	const char *dev = NULL, *op = "write";
	int port = 18516, o;
	while ((o = getopt(argc, argv, "d:g:p:o:")) != -1) {
		switch (o) {
		case 'd': dev = optarg; break;
		case 'g': c.gidx = atoi(optarg); break;
		case 'p': port = atoi(optarg); break;
		case 'o': op = optarg; break;
		default:
			fprintf(stderr, "usage: mw_op [-d dev] [-g gidx] [-p port] -o write|send_inv|stale [server]\n");
			return 2;
		}
	}
	if (strcmp(op, "write") && strcmp(op, "send_inv") && strcmp(op, "stale"))
		return fprintf(stderr, "mw_op: unknown op %s\n", op), 2;
	const char *host = optind < argc ? argv[optind] : NULL;
	setup(&c, dev);
	c.sock = tcp_connect(host, port);
	srand((unsigned int)getpid());
	struct wire me = {.qpn = htonl(c.qp->qp_num), .psn = htonl((uint32_t)rand() & 0xffffff)}, peer;
	union ibv_gid g;
	if (ibv_query_gid(c.vc, 1, c.gidx, &g))
		die("ibv_query_gid");
	memcpy(me.gid, g.raw, 16);
	xfer(c.sock, &me, sizeof(me), 1);
	xfer(c.sock, &peer, sizeof(peer), 0);
	to_rts(&c, &me, &peer);
	sync_byte(&c); /* both RTS */
	int ok = host ? client(&c, op) : server(&c, op);
	printf("%s %s: %s\n", host ? "client" : "server", op, ok ? "PASS" : "FAIL");
	close(c.sock);
	return ok ? 0 : 1;
}
