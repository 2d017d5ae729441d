/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Hostile applications against a live dpverbsd (run under
 * test/shared/with_daemon.sh: $DPV_SHARED_SOCK, $DPV_DAEMON_PID). Every
 * connection here speaks the wire protocol itself (lib/shm/dpv_shm_proto.h,
 * raw SOCK_SEQPACKET messages; no libdpverbs), and misbehaves:
 *   - garbage bytes, truncated headers, a wrong magic, a length that is not
 *     the datagram's, datagrams larger than any message: the daemon closes
 *     that connection (and only that one);
 *   - unknown ops, bodies of the wrong size, requests before HELLO, a second
 *     HELLO: answered with -EINVAL, -EPROTO, -EALREADY, the connection stays;
 *   - descriptors of the wrong kind (a file, a socket, /dev/null where a
 *     pipe or a sealed memfd belongs), none where one is needed, more than a
 *     message carries;
 *   - MEM_ADD of an unsealed memfd, of one smaller than claimed, sealed
 *     against shrinking only, sealed against writes, at a misaligned or
 *     overflowing address, over a region it has;
 *   - rings outside the regions it added (beyond the end, misaligned, in
 *     another connection's region);
 *   - the numbers of another connection (QP_DESTROY, QP_MODIFY, QP_QUERY,
 *     NUM_RELEASE, CQ_DESTROY, MR_DEREG, PD_DEALLOC, MR_REG on its PD): all
 *     refused, and that connection's QP still answers in the same state;
 *   - another connection's XRC target QP: OPEN_QP through a domain it does
 *     not hold (-EINVAL), through another domain or of an RC QP
 *     (-ENOENT), without a context or pointer; QP_QUERY and QP_MODIFY only
 *     with a handle and the domain (-EINVAL once the domain is closed);
 *     QP_DESTROY only by its creator;
 *   - a well-formed connection with a CQ and an RC QP in RTS that writes
 *     garbage into its own SQ (random WQEs, huge num_sge, huge inline
 *     lengths, bad opcodes, producer indices far ahead and behind), its RQ
 *     (producer index far ahead, then the QP to ERR: a flush) and its CQ and
 *     doorbell ring headers, rings its doorbells as drivers/remote does, and
 *     names other processes' QPNs in them;
 *   - a WQE whose SGE is rewritten after the engine checked it (length 0 at
 *     the check, then an address of the daemon's and a length, or an MR
 *     deregistered meanwhile), with no other application holding MRs;
 *   - a flood of connections (more than a doorbell table holds).
 * Meanwhile a well-behaved application keeps working: pairs of Debian's
 * ibv_rc_pingpong (dpv0 <-> dpv1, -c: data checked; libdpverbs through
 * LD_LIBRARY_PATH from with_daemon.sh) run one after another through the
 * whole hostile part and must each succeed. Afterwards the daemon is alive,
 * answers a fresh HELLO, one more pingpong pair succeeds, and the daemon
 * holds the descriptors it held before (nothing leaked).
 *
 * Prints "N passed, N failed" (dpvt_check.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <dirent.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <rte_common.h> /* RTE_MIN, RTE_DIM, ...: macros only */

#include "dpv_pool.h"  /* enum dpv_obj_type: the number spaces of NUM_RESERVE */
#include "dpv_queue.h" /* ring, WQE and doorbell ring layouts */
#include "dpv_shm_proto.h"
#include "dpvt_check.h"

static const char *g_sock;
static pid_t g_dpid;
static const char *g_tmp;
static uint64_t g_rng = 0x5eed;

static uint64_t rnd(void)
{
	uint64_t z = (g_rng += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* ------------------------------------------------------------------ */
/* the daemon */

static bool daemon_alive(void)
{
	return kill(g_dpid, 0) == 0;
}

static int daemon_fds(void)
{
	char p[64];
	snprintf(p, sizeof(p), "/proc/%d/fd", (int)g_dpid);
	DIR *d = opendir(p);
	int n = 0;
	if (!d)
		return -1;
	for (struct dirent *e; (e = readdir(d));)
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

/* The daemon's descriptors back at base (connections are reclaimed when
 * it sees them close): waits up to 3 s. */
static int daemon_fds_settle(int base)
{
	int n = daemon_fds();
	for (int i = 0; i < 150 && n != base; i++) {
		dpvt_sleep_ms(20);
		n = daemon_fds();
	}
	return n;
}

/* The daemon's descriptors once it is quiet: a connection just closed
 * (daemon_serves' HELLO) is reclaimed when the daemon's control thread
 * sees it close, so the count must hold still for 200 ms (up to 3 s). */
static int daemon_fds_quiet(void)
{
	int n = daemon_fds(), same = 0;
	for (int i = 0; i < 150 && same < 10; i++) {
		dpvt_sleep_ms(20);
		int m = daemon_fds();
		same = m == n ? same + 1 : 0;
		n = m;
	}
	return n;
}

/* ------------------------------------------------------------------ */
/* the wire protocol, by hand */

#define BODY(f) sizeof(((struct dpv_shm_msg *)0)->u.f)

/* The body of each op, from the protocol header (the daemon's table is
 * lib/shm/dpv_shm_msg.c: this is an independent one). */
static size_t body_len(uint16_t op)
{
	switch (op) {
	case DPV_SHM_HELLO: return BODY(hello);
	case DPV_SHM_QUERY_PORT: return BODY(port);
	case DPV_SHM_CTX_OPEN:
	case DPV_SHM_CTX_CLOSE:
	case DPV_SHM_CTX_IMPORT: return BODY(dev);
	case DPV_SHM_MEM_ADD:
	case DPV_SHM_MEM_DEL: return BODY(mem);
	case DPV_SHM_NUM_RESERVE:
	case DPV_SHM_NUM_RELEASE: return BODY(num);
	case DPV_SHM_PD_ALLOC:
	case DPV_SHM_PD_DEALLOC: return BODY(pd);
	case DPV_SHM_MR_REG:
	case DPV_SHM_MR_DEREG: return BODY(mr);
	case DPV_SHM_AH_CREATE:
	case DPV_SHM_AH_DESTROY: return BODY(ah);
	case DPV_SHM_CQ_CREATE:
	case DPV_SHM_CQ_DESTROY:
	case DPV_SHM_CQ_RESIZE: return BODY(cq);
	case DPV_SHM_SRQ_CREATE:
	case DPV_SHM_SRQ_DESTROY: return BODY(srq);
	case DPV_SHM_QP_CREATE:
	case DPV_SHM_QP_DESTROY: return BODY(qp);
	case DPV_SHM_QP_MODIFY: return BODY(qpm);
	case DPV_SHM_QP_QUERY: return BODY(qpq);
	case DPV_SHM_SHPD_ALLOC:
	case DPV_SHM_SHPD_SHARE: return BODY(shpd);
	case DPV_SHM_IMPORT_PD:
	case DPV_SHM_IMPORT_MR: return BODY(imp);
	case DPV_SHM_XRCD_OPEN:
	case DPV_SHM_XRCD_CLOSE: return BODY(xrcd);
	case DPV_SHM_OPEN_QP: return BODY(oqp);
	case DPV_SHM_GSI_LISTEN: return BODY(gsil);
	case DPV_SHM_MCAST: return BODY(mcast);
	case DPV_SHM_NEIGH: return BODY(neigh);
	case DPV_SHM_MW_ALLOC:
	case DPV_SHM_MW_DEALLOC: return BODY(mw);
	case DPV_SHM_DM_ALLOC:
	case DPV_SHM_DM_FREE:
	case DPV_SHM_DM_IMPORT: return BODY(dm);
	case DPV_SHM_FLOW: return BODY(flow);
	default: return 0;
	}
}

/* call()'s results besides 0 and -errno */
#define R_CLOSED 1  /* the daemon closed the connection */
#define R_TIMEOUT 2 /* no answer within 5 s */
#define R_BADANS 3  /* an answer that does not match the request */

static int connect_daemon(void)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", g_sock);
	int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -1;
	if (connect(s, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		close(s);
		return -1;
	}
	return s;
}

static int raw_send(int s, const void *buf, size_t len, const int *fds, unsigned int nfd)
{
	struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};
	union {
		char b[CMSG_SPACE(8 * sizeof(int))];
		struct cmsghdr align;
	} c;
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
	if (nfd) {
		memset(&c, 0, sizeof(c));
		mh.msg_control = c.b;
		mh.msg_controllen = CMSG_SPACE(nfd * sizeof(int));
		struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(nfd * sizeof(int));
		memcpy(CMSG_DATA(cm), fds, nfd * sizeof(int));
	}
	ssize_t n = sendmsg(s, &mh, MSG_NOSIGNAL);
	return n == (ssize_t)len ? 0 : -1;
}

/* One datagram: its length, 0 when the peer closed, -1 on timeout/error.
 * fds: the descriptors that came (-1 where none). */
static ssize_t raw_recv(int s, void *buf, size_t cap, int fds[2], int timeout_ms)
{
	fds[0] = fds[1] = -1;
	struct pollfd p = {.fd = s, .events = POLLIN};
	if (poll(&p, 1, timeout_ms) <= 0)
		return -1;
	struct iovec iov = {.iov_base = buf, .iov_len = cap};
	union {
		char b[CMSG_SPACE(8 * sizeof(int))];
		struct cmsghdr align;
	} c;
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = c.b, .msg_controllen = sizeof(c.b)};
	ssize_t n = recvmsg(s, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
	if (n < 0)
		return errno == ECONNRESET ? 0 : -1;
	unsigned int k = 0;
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm))
		if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS)
			for (size_t i = 0; i < (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++) {
				int f;
				memcpy(&f, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
				if (k < 2)
					fds[k++] = f;
				else
					close(f);
			}
	return n;
}

/* Does the daemon close s (within 3 s)? Answers that come first are read. */
static bool closed_by_daemon(int s)
{
	struct dpv_shm_msg m;
	int fds[2];
	for (int i = 0; i < 30; i++) {
		ssize_t n = raw_recv(s, &m, sizeof(m), fds, 100);
		for (int k = 0; k < 2; k++)
			if (fds[k] >= 0)
				close(fds[k]);
		if (n == 0)
			return true;
	}
	return false;
}

struct conn {
	int s;
	uint64_t seq;
	struct dpv_shm_hello w;
	uint8_t *db;
	size_t db_bytes;
};

/* One request: body (blen bytes, sent as they are, the header's len says
 * so) with nfd descriptors; the answer's body replaces it. The answer
 * must repeat op and seq and have the op's layout. Returns the status, or
 * R_CLOSED / R_TIMEOUT / R_BADANS. */
static int call(struct conn *c, uint16_t op, void *body, size_t blen, const int *fds, unsigned int nfd, int *out_fd)
{
	struct dpv_shm_msg m;
	int in[2];
	if (out_fd)
		*out_fd = -1;
	memset(&m.h, 0, sizeof(m.h));
	m.h.magic = DPV_SHM_MAGIC;
	m.h.op = op;
	m.h.len = (uint16_t)(sizeof(m.h) + blen);
	m.h.seq = ++c->seq;
	if (blen)
		memcpy(&m.u, body, blen);
	if (raw_send(c->s, &m, sizeof(m.h) + blen, fds, nfd) != 0)
		return R_CLOSED;
	ssize_t n = raw_recv(c->s, &m, sizeof(m), in, 5000);
	if (n == 0)
		return R_CLOSED;
	if (n < 0)
		return R_TIMEOUT;
	size_t want = sizeof(m.h) + body_len(op);
	if ((size_t)n != m.h.len || m.h.magic != DPV_SHM_MAGIC || m.h.op != op || m.h.seq != c->seq ||
	    m.h.len != want || (m.h.status != 0 && (in[0] >= 0 || in[1] >= 0)) || m.h.status > 0 ||
	    m.h.status < -4095) {
		fprintf(stderr, "  bad answer to op %u: %zd bytes, len %u (want %zu), op %u, seq %" PRIu64 "/%" PRIu64
				", status %d\n",
			op, n, m.h.len, want, m.h.op, m.h.seq, c->seq, m.h.status);
		for (int k = 0; k < 2; k++)
			if (in[k] >= 0)
				close(in[k]);
		return R_BADANS;
	}
	if (body && body_len(op))
		memcpy(body, &m.u, RTE_MIN(blen, body_len(op)));
	if (out_fd) {
		*out_fd = in[0];
		in[0] = -1;
	}
	for (int k = 0; k < 2; k++)
		if (in[k] >= 0)
			close(in[k]);
	return m.h.status;
}

/* call() with the op's own body size */
#define CALL(c, op, body, fds, nfd, out) call((c), (op), (body), body_len(op), (fds), (nfd), (out))

static void conn_close(struct conn *c)
{
	if (c->db)
		munmap(c->db, c->db_bytes);
	if (c->s >= 0)
		close(c->s);
	memset(c, 0, sizeof(*c));
	c->s = -1;
}

/* Connect and say HELLO; the doorbell rings mapped. */
static bool conn_open(struct conn *c, bool hello)
{
	memset(c, 0, sizeof(*c));
	c->s = connect_daemon();
	if (c->s < 0)
		return false;
	if (!hello)
		return true;
	c->w.version = DPV_SHM_VERSION;
	c->w.pid = getpid();
	int fd;
	int st = CALL(c, DPV_SHM_HELLO, &c->w, NULL, 0, &fd);
	if (st != 0 || fd < 0)
		return false;
	size_t one = dpv_db_ring_bytes(c->w.db_size);
	c->db_bytes = RTE_ALIGN_CEIL(RTE_MAX((size_t)c->w.n_db, (size_t)1) * one, 4096);
	void *p = mmap(NULL, c->db_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		return false;
	c->db = p;
	return true;
}

static int new_memfd(size_t size, unsigned int seals)
{
	int fd = memfd_create("hostile", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return -1;
	if (ftruncate(fd, (off_t)size) != 0 || (seals && fcntl(fd, F_ADD_SEALS, seals) != 0)) {
		close(fd);
		return -1;
	}
	return fd;
}

/* A region: a sealed memfd mapped here and given to the daemon. */
static uint8_t *region_add(struct conn *c, size_t size)
{
	int fd = new_memfd(size, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
	if (fd < 0)
		return NULL;
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		close(fd);
		return NULL;
	}
	struct dpv_shm_mem m = {.addr = (uintptr_t)p, .size = size};
	int st = CALL(c, DPV_SHM_MEM_ADD, &m, &fd, 1, NULL);
	close(fd);
	if (st != 0) {
		munmap(p, size);
		return NULL;
	}
	return p;
}

static uint32_t reserve(struct conn *c, enum dpv_obj_type t)
{
	struct dpv_shm_num n = {.type = t};
	return CALL(c, DPV_SHM_NUM_RESERVE, &n, NULL, 0, NULL) == 0 ? n.num : 0;
}

static int pipe_w(int *rd)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC | O_NONBLOCK) != 0)
		return -1;
	if (rd)
		*rd = p[0];
	else
		close(p[0]);
	return p[1];
}

/* ------------------------------------------------------------------ */
/* a well-formed application of our own: CQ and RC QP in RTS */

struct app {
	struct conn c;
	uint32_t dev, ctx, pdn, mr, mrkey, cq, qpn, db;
	int async_rd;
	uint8_t *reg;
	size_t reg_size;
	struct dpv_ring_hdr *cqr, *sq, *rq;
	uint32_t cq_size, sq_size, sq_stride, rq_size, rq_stride;
	uint8_t *buf; /* MR memory (in the region) */
	size_t buf_len;
};

#define REG_SIZE (4u << 20)

/* gid index of dev used as source (pingpong's -g 1 when valid) */
static unsigned int sgid_of(const struct dpv_shm_hello *w, uint32_t dev)
{
	if (w->devs[dev].gid_valid[1])
		return 1;
	for (unsigned int g = 0; g < DPV_SHM_GIDS; g++)
		if (w->devs[dev].gid_valid[g])
			return g;
	return 0;
}

static int modify(struct app *a, enum ibv_qp_state to, int mask, const struct ibv_qp_attr *attr)
{
	struct dpv_shm_qp_modify q = {.qpn = a->qpn, .mask = mask | IBV_QP_STATE, .to = to};
	if (attr)
		q.attr = *attr;
	return CALL(&a->c, DPV_SHM_QP_MODIFY, &q, NULL, 0, NULL);
}

/* RESET -> INIT -> RTR -> RTS towards dest_qpn on the other device. */
static bool app_to_rts(struct app *a, uint32_t dest_qpn, uint8_t timeout)
{
	struct ibv_qp_attr at;
	memset(&at, 0, sizeof(at));
	at.port_num = 1;
	at.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	if (modify(a, IBV_QPS_INIT, IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, &at) != 0)
		return false;
	const struct dpv_shm_hello *w = &a->c.w;
	uint32_t other = (a->dev + 1) % RTE_MAX(w->n_devs, 1u);
	unsigned int sg = sgid_of(w, a->dev), dg = sgid_of(w, other);
	memset(&at, 0, sizeof(at));
	at.ah_attr.is_global = 1;
	at.ah_attr.port_num = 1;
	at.ah_attr.grh.sgid_index = (uint8_t)sg;
	at.ah_attr.grh.hop_limit = 64;
	memcpy(at.ah_attr.grh.dgid.raw, w->devs[other].gid[dg], 16);
	at.path_mtu = IBV_MTU_1024;
	at.dest_qp_num = dest_qpn;
	at.rq_psn = 0;
	at.max_dest_rd_atomic = 1;
	at.min_rnr_timer = 12;
	if (modify(a, IBV_QPS_RTR,
		   IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
			   IBV_QP_MIN_RNR_TIMER,
		   &at) != 0)
		return false;
	memset(&at, 0, sizeof(at));
	at.sq_psn = 0;
	at.timeout = timeout;
	at.retry_cnt = 7;
	at.rnr_retry = 7;
	at.max_rd_atomic = 1;
	return modify(a, IBV_QPS_RTS,
		      IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC,
		      &at) == 0;
}

static bool app_open(struct app *a, uint32_t dev, bool with_mr)
{
	memset(a, 0, sizeof(*a));
	a->async_rd = -1;
	a->dev = dev;
	if (!conn_open(&a->c, true))
		return false;
	int wfd = pipe_w(&a->async_rd);
	struct dpv_shm_dev_ref r = {.dev = dev};
	int tok = -1;
	if (CALL(&a->c, DPV_SHM_CTX_OPEN, &r, &wfd, 1, &tok) != 0)
		return false;
	close(wfd);
	if (tok >= 0)
		close(tok);
	a->ctx = r.ctx;
	a->reg_size = REG_SIZE;
	a->reg = region_add(&a->c, REG_SIZE);
	if (!a->reg)
		return false;
	a->pdn = reserve(&a->c, DPV_OBJ_PD);
	struct dpv_shm_pd pd = {.dev = dev, .pdn = a->pdn};
	if (!a->pdn || CALL(&a->c, DPV_SHM_PD_ALLOC, &pd, NULL, 0, NULL) != 0)
		return false;
	a->buf = a->reg + REG_SIZE / 2;
	a->buf_len = REG_SIZE / 2;
	if (with_mr) {
		a->mr = reserve(&a->c, DPV_OBJ_MR);
		a->mrkey = a->mr << 8 | 0x5a;
		struct dpv_shm_mr m = {.dev = dev, .key = a->mrkey, .pd = a->pdn,
				       .access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ,
				       .addr = (uintptr_t)a->buf, .iova = (uintptr_t)a->buf, .length = a->buf_len};
		if (!a->mr || CALL(&a->c, DPV_SHM_MR_REG, &m, NULL, 0, NULL) != 0)
			return false;
	}
	/* rings: CQ 256 entries, SQ 64 x 128 bytes, RQ 64 x 128 bytes */
	uint8_t *at = a->reg;
	a->cq_size = 256;
	a->cqr = (struct dpv_ring_hdr *)at;
	at += RTE_ALIGN_CEIL(dpv_ring_bytes(a->cq_size, 64), 4096);
	a->sq_size = 64;
	a->sq_stride = 128;
	a->sq = (struct dpv_ring_hdr *)at;
	at += RTE_ALIGN_CEIL(dpv_ring_bytes(a->sq_size, a->sq_stride), 4096);
	a->rq_size = 64;
	a->rq_stride = 128;
	a->rq = (struct dpv_ring_hdr *)at;
	dpv_ring_init(a->cqr, DPV_RING_CQ, a->cq_size, 64);
	dpv_ring_init(a->sq, DPV_RING_SQ, a->sq_size, a->sq_stride);
	dpv_ring_init(a->rq, DPV_RING_RQ, a->rq_size, a->rq_stride);
	a->cq = reserve(&a->c, DPV_OBJ_CQ);
	struct dpv_shm_cq cq = {.dev = dev, .handle = a->cq, .ctx = a->ctx, .ring = (uintptr_t)a->cqr,
				.ring_size = a->cq_size, .cookie = 0xc0};
	if (!a->cq || CALL(&a->c, DPV_SHM_CQ_CREATE, &cq, NULL, 0, NULL) != 0)
		return false;
	a->qpn = reserve(&a->c, DPV_OBJ_QP);
	struct dpv_shm_qp q = {.dev = dev, .qpn = a->qpn, .ctx = a->ctx, .type = IBV_QPT_RC,
			       .sq = (uintptr_t)a->sq, .rq = (uintptr_t)a->rq, .sq_size = a->sq_size,
			       .sq_stride = a->sq_stride, .rq_size = a->rq_size, .rq_stride = a->rq_stride,
			       .scq = a->cq, .rcq = a->cq, .pd = a->pdn, .cookie = 0x9b};
	q.cap = (struct ibv_qp_cap){.max_send_wr = 64, .max_recv_wr = 64, .max_send_sge = 4, .max_recv_sge = 4,
				    .max_inline_data = 64};
	if (!a->qpn || CALL(&a->c, DPV_SHM_QP_CREATE, &q, NULL, 0, NULL) != 0)
		return false;
	a->db = q.db;
	return a->db < a->c.w.devs[dev].n_db;
}

static void app_close(struct app *a)
{
	if (a->reg)
		munmap(a->reg, a->reg_size);
	if (a->async_rd >= 0)
		close(a->async_rd);
	conn_close(&a->c);
	memset(a, 0, sizeof(*a));
	a->async_rd = -1;
	a->c.s = -1;
}

static struct dpv_db_ring *app_db(struct app *a)
{
	size_t one = dpv_db_ring_bytes(a->c.w.db_size);
	return (struct dpv_db_ring *)(a->c.db + (a->c.w.devs[a->dev].db_first + a->db) * one);
}

/* dpv_db_ring_put with bounded tries (after we scribbled on the ring) */
static void db_put(struct dpv_db_ring *r, uint32_t mask, uint32_t val)
{
	for (int k = 0; k < 8; k++) {
		uint32_t pos = atomic_load_explicit(&r->head, memory_order_relaxed);
		struct dpv_db_slot *s = &r->slot[pos & mask];
		if (atomic_load_explicit(&s->seq, memory_order_acquire) != pos)
			continue;
		if (atomic_compare_exchange_strong(&r->head, &pos, pos + 1)) {
			s->val = val;
			atomic_store_explicit(&s->seq, pos + 1, memory_order_release);
			return;
		}
	}
}

/* As drivers/remote/remote_ops.c ring(): at most one entry per queue
 * queued (the ring header's db flag), force: queue anyway. */
static void ring_db(struct app *a, struct dpv_ring_hdr *h, uint32_t val, bool force)
{
	if (atomic_exchange_explicit(&h->db, 1, memory_order_seq_cst) && !force)
		return;
	db_put(app_db(a), a->c.w.db_size - 1, val);
}

static int qp_state(struct conn *c, uint32_t qpn)
{
	struct dpv_shm_qp_query q = {.qpn = qpn};
	int st = CALL(c, DPV_SHM_QP_QUERY, &q, NULL, 0, NULL);
	return st == 0 ? (int)q.state : st < 0 ? st : -1000 - st;
}

/* ------------------------------------------------------------------ */
/* the well-behaved application: ibv_rc_pingpong pairs */

static struct {
	pid_t srv, cli;
	uint64_t t0;
	unsigned int started, ok, bad;
	int port;
	char out_srv[300], out_cli[300];
	bool stopping;
} pp;

static bool port_listening(int port)
{
	static const char *const files[] = {"/proc/net/tcp", "/proc/net/tcp6"};
	char line[512], la[80], ra[80];
	for (unsigned int i = 0; i < 2; i++) {
		FILE *f = fopen(files[i], "r");
		if (!f)
			continue;
		bool found = false;
		while (!found && fgets(line, sizeof(line), f)) {
			unsigned int lport, rport, st;
			if (sscanf(line, " %*u: %79[0-9A-Fa-f]:%x %79[0-9A-Fa-f]:%x %x", la, &lport, ra, &rport, &st) == 5)
				found = (int)lport == port && st == 0x0a; /* TCP_LISTEN */
		}
		fclose(f);
		if (found)
			return true;
	}
	return false;
}

static pid_t spawn(const char *out, char *const argv[])
{
	pid_t p = fork();
	if (p == 0) {
		int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
			close(fd);
		}
		execvp(argv[0], argv);
		_exit(127);
	}
	return p;
}

#define PP_ITERS "3000"

static void pp_start(void)
{
	char port[16];
	pp.port = 20000 + (int)(rnd() % 30000);
	for (int k = 0; k < 20 && port_listening(pp.port); k++)
		pp.port = 20000 + (int)(rnd() % 30000);
	snprintf(port, sizeof(port), "%d", pp.port);
	snprintf(pp.out_srv, sizeof(pp.out_srv), "%s/pp%u.server", g_tmp, pp.started);
	snprintf(pp.out_cli, sizeof(pp.out_cli), "%s/pp%u.client", g_tmp, pp.started);
	char *srv[] = {"ibv_rc_pingpong", "-d", "dpv0", "-g", "1", "-c", "-s", "4096", "-n", PP_ITERS, "-p", port, NULL};
	char *cli[] = {"ibv_rc_pingpong", "-d", "dpv1", "-g", "1", "-c", "-s", "4096", "-n", PP_ITERS, "-p", port,
		       "127.0.0.1", NULL};
	pp.t0 = dpvt_now_ms();
	pp.srv = spawn(pp.out_srv, srv);
	for (int i = 0; i < 250 && !port_listening(pp.port); i++)
		dpvt_sleep_ms(20);
	pp.cli = spawn(pp.out_cli, cli);
	pp.started++;
}

static bool file_has(const char *path, const char *what)
{
	char line[512];
	bool found = false;
	FILE *f = fopen(path, "r");
	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f))
		found = strstr(line, what) != NULL;
	fclose(f);
	return found;
}

static void pp_dump(const char *path)
{
	char line[512];
	FILE *f = fopen(path, "r");
	if (!f)
		return;
	fprintf(stderr, "  --- %s:\n", path);
	while (fgets(line, sizeof(line), f))
		fprintf(stderr, "  %s", line);
	fclose(f);
}

/* Reap a finished pair (and start the next unless stopping); wait: block
 * until the current pair is done. */
static void pp_poll(bool wait)
{
	if (!pp.srv && !pp.cli) {
		if (!pp.stopping)
			pp_start();
		return;
	}
	for (;;) {
		int st;
		if (pp.srv && waitpid(pp.srv, &st, WNOHANG) == pp.srv) {
			pp.srv = 0;
			if (!(WIFEXITED(st) && WEXITSTATUS(st) == 0))
				pp.bad |= 1u << 30;
		}
		if (pp.cli && waitpid(pp.cli, &st, WNOHANG) == pp.cli) {
			pp.cli = 0;
			if (!(WIFEXITED(st) && WEXITSTATUS(st) == 0))
				pp.bad |= 1u << 30;
		}
		uint64_t dt = dpvt_now_ms() - pp.t0;
		if ((pp.srv || pp.cli) && dt > 60000) {
			/* ours to stop: only the PIDs we started */
			if (pp.srv)
				kill(pp.srv, SIGKILL);
			if (pp.cli)
				kill(pp.cli, SIGKILL);
			pp.bad |= 1u << 29;
			continue;
		}
		if (!pp.srv && !pp.cli)
			break;
		if (!wait)
			return;
		dpvt_sleep_ms(20);
	}
	bool ok = !(pp.bad & (3u << 29)) && file_has(pp.out_srv, PP_ITERS " iters in") &&
		  file_has(pp.out_cli, PP_ITERS " iters in") && !file_has(pp.out_srv, "invalid data") &&
		  !file_has(pp.out_cli, "invalid data");
	if (!CHECK(ok, "ibv_rc_pingpong pair %u (port %d) failed while hostile connections ran", pp.started, pp.port)) {
		pp_dump(pp.out_srv);
		pp_dump(pp.out_cli);
		pp.bad++;
	} else {
		pp.ok++;
	}
	pp.bad &= ~(3u << 29);
	if (!pp.stopping)
		pp_start();
}

/* ------------------------------------------------------------------ */
/* the hostile parts */

/* A fresh connection's HELLO is answered: the daemon serves. */
static bool daemon_serves(void)
{
	struct conn c;
	bool ok = conn_open(&c, true) && c.w.version == DPV_SHM_VERSION && c.w.n_devs >= 2 && c.db;
	conn_close(&c);
	return ok && daemon_alive();
}

/* Inputs that are no dpverbs message: the daemon ends the connection. */
static void part_not_messages(void)
{
	struct {
		const char *what;
		size_t len;
		int kind;
	} cases[] = {
		{"1 garbage byte", 1, 0},	{"23 garbage bytes", 23, 0},	   {"garbage, a message's size", 64, 0},
		{"garbage, 4096 bytes", 4096, 0}, {"a truncated header", 12, 1},   {"a header without its last byte", 23, 1},
		{"a wrong magic", 0, 2},	  {"len says more than sent", 0, 3}, {"len says less than sent", 0, 4},
		{"len 0xffff", 0, 5},		  {"a datagram of 64 KiB", 65536, 6}, {"an empty datagram", 0, 7},
	};
	static uint8_t buf[65536];
	for (unsigned int i = 0; i < RTE_DIM(cases); i++) {
		struct conn c;
		if (!CHECK(conn_open(&c, i % 2 == 0), "connect for %s", cases[i].what))
			continue;
		struct dpv_shm_msg *m = (struct dpv_shm_msg *)buf;
		size_t len = cases[i].len;
		for (size_t k = 0; k < sizeof(buf); k += 8) {
			uint64_t r = rnd();
			memcpy(buf + k, &r, 8);
		}
		switch (cases[i].kind) {
		case 1: /* a real header, cut */
			m->h.magic = DPV_SHM_MAGIC;
			m->h.op = DPV_SHM_QUERY_PORT;
			m->h.len = (uint16_t)(sizeof(m->h) + body_len(DPV_SHM_QUERY_PORT));
			break;
		case 2:
			m->h.magic = DPV_SHM_MAGIC ^ 0x01000000u;
			m->h.op = DPV_SHM_QUERY_PORT;
			len = m->h.len = (uint16_t)(sizeof(m->h) + body_len(DPV_SHM_QUERY_PORT));
			break;
		case 3:
			m->h.magic = DPV_SHM_MAGIC;
			m->h.op = DPV_SHM_QUERY_PORT;
			m->h.len = (uint16_t)(sizeof(m->h) + body_len(DPV_SHM_QUERY_PORT));
			len = m->h.len - 4;
			break;
		case 4:
			m->h.magic = DPV_SHM_MAGIC;
			m->h.op = DPV_SHM_QUERY_PORT;
			m->h.len = (uint16_t)(sizeof(m->h) + body_len(DPV_SHM_QUERY_PORT));
			len = m->h.len + 8;
			break;
		case 5:
			m->h.magic = DPV_SHM_MAGIC;
			m->h.op = DPV_SHM_HELLO;
			m->h.len = 0xffff;
			len = 4096;
			break;
		case 6:
			m->h.magic = DPV_SHM_MAGIC;
			m->h.op = DPV_SHM_QUERY_PORT;
			m->h.len = 0; /* 65536 as uint16 */
			break;
		default:
			break;
		}
		/* a descriptor along with it, which the daemon must close */
		int fd = (i % 3 == 0) ? pipe_w(NULL) : -1;
		bool sent = raw_send(c.s, buf, len, &fd, fd >= 0 ? 1 : 0) == 0;
		if (fd >= 0)
			close(fd);
		/* (an empty datagram reads as the end of the stream: closed too) */
		CHECK(sent && closed_by_daemon(c.s), "%s: the daemon kept the connection", cases[i].what);
		conn_close(&c);
		CHECK(daemon_alive(), "the daemon died on %s", cases[i].what);
		pp_poll(false);
	}
}

/* Requests the request path refuses before any handler. */
static void part_protocol(void)
{
	struct conn c;
	if (!CHECK(conn_open(&c, false), "connect"))
		return;
	/* before HELLO: every command is -EPROTO */
	for (uint16_t op = DPV_SHM_QUERY_PORT; op < DPV_SHM_OP_NR; op++) {
		uint8_t body[DPV_SHM_MAX_MSG];
		memset(body, 0, sizeof(body));
		int fd = op == DPV_SHM_CTX_OPEN || op == DPV_SHM_MEM_ADD ? pipe_w(NULL) : -1;
		int st = call(&c, op, body, body_len(op), &fd, fd >= 0 ? 1 : 0, NULL);
		if (fd >= 0)
			close(fd);
		CHECK(st == -EPROTO, "op %u before HELLO: %d, expected -EPROTO", op, st);
	}
	/* unknown ops: -EINVAL, header alone in the answer */
	static const uint16_t bad_ops[] = {0, DPV_SHM_OP_NR, DPV_SHM_OP_NR + 1, 100, 0x7fff, 0xffff};
	for (unsigned int i = 0; i < RTE_DIM(bad_ops); i++) {
		uint8_t body[64] = {0};
		int st = call(&c, bad_ops[i], body, sizeof(body) * (i & 1), NULL, 0, NULL);
		CHECK(st == -EINVAL, "unknown op %u: %d, expected -EINVAL", bad_ops[i], st);
	}
	/* a HELLO of another version */
	struct dpv_shm_hello h = {.version = DPV_SHM_VERSION + 1};
	int fd;
	int st = CALL(&c, DPV_SHM_HELLO, &h, NULL, 0, &fd);
	CHECK(st == -EPROTONOSUPPORT && fd < 0, "HELLO version %u: %d", DPV_SHM_VERSION + 1, st);
	/* bodies of the wrong size, before and after HELLO */
	uint8_t big[DPV_SHM_MAX_MSG - sizeof(struct dpv_shm_hdr)] = {0};
	st = call(&c, DPV_SHM_HELLO, big, body_len(DPV_SHM_HELLO) - 1, NULL, 0, NULL);
	CHECK(st == -EINVAL, "HELLO one byte short: %d", st);
	st = call(&c, DPV_SHM_HELLO, big, sizeof(big), NULL, 0, NULL);
	CHECK(st == -EINVAL, "HELLO of %zu bytes: %d", sizeof(big), st);
	c.w.version = DPV_SHM_VERSION;
	st = CALL(&c, DPV_SHM_HELLO, &c.w, NULL, 0, &fd);
	CHECK(st == 0 && fd >= 0, "HELLO after refused ones: %d", st);
	if (fd >= 0)
		close(fd);
	struct dpv_shm_hello h2 = {.version = DPV_SHM_VERSION};
	st = CALL(&c, DPV_SHM_HELLO, &h2, NULL, 0, &fd);
	CHECK(st == -EALREADY && fd < 0, "a second HELLO: %d, expected -EALREADY", st);
	for (uint16_t op = DPV_SHM_QUERY_PORT; op < DPV_SHM_OP_NR; op++) {
		st = call(&c, op, big, body_len(op) + 1 + (op % 3) * 8, NULL, 0, NULL);
		CHECK(st == -EINVAL, "op %u with a longer body: %d", op, st);
		st = call(&c, op, big, body_len(op) - 1 - (op % 2), NULL, 0, NULL);
		CHECK(st == -EINVAL, "op %u with a shorter body: %d", op, st);
	}
	/* many descriptors with a request that takes none: answered, closed */
	int fds[6];
	for (int i = 0; i < 6; i++)
		fds[i] = pipe_w(NULL);
	struct dpv_shm_port p = {.dev = 0};
	st = call(&c, DPV_SHM_QUERY_PORT, &p, sizeof(p), fds, 6, NULL);
	CHECK(st == 0 && p.attr.state != 0, "QUERY_PORT with 6 descriptors: %d", st);
	for (int i = 0; i < 6; i++)
		close(fds[i]);
	p.dev = 99;
	st = CALL(&c, DPV_SHM_QUERY_PORT, &p, NULL, 0, NULL);
	CHECK(st == -EINVAL, "QUERY_PORT of device 99: %d", st);
	/* a random stream of well-framed requests of any op: each answered */
	for (int i = 0; i < 2000; i++) {
		uint16_t op = (uint16_t)(rnd() % (DPV_SHM_OP_NR + 2));
		uint8_t body[DPV_SHM_MAX_MSG - sizeof(struct dpv_shm_hdr)];
		for (size_t k = 0; k < sizeof(body); k += 8) {
			uint64_t r = rnd() >> (rnd() % 64);
			memcpy(body + k, &r, 8);
		}
		if (op == DPV_SHM_MEM_ADD || op == DPV_SHM_MEM_DEL || op == DPV_SHM_MR_REG)
			continue; /* addresses of ours: part_memory */
		int f = rnd() % 4 == 0 ? pipe_w(NULL) : -1;
		st = call(&c, op, body, body_len(op), &f, f >= 0 ? 1 : 0, NULL);
		if (f >= 0)
			close(f);
		if (!CHECK(st <= 0, "random request %d (op %u): %s", i, op,
			   st == R_CLOSED ? "connection closed" : st == R_TIMEOUT ? "no answer" : "a bad answer"))
			break;
	}
	conn_close(&c);
	CHECK(daemon_serves(), "the daemon does not serve after the protocol part");
}

/* Descriptors of the wrong kind, MEM_ADD of bad regions, rings outside. */
static void part_memory(struct app *other)
{
	struct conn c;
	if (!CHECK(conn_open(&c, true), "connect and HELLO"))
		return;
	char path[300];
	snprintf(path, sizeof(path), "%s/hostile.file", g_tmp);
	int file = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (file >= 0 && ftruncate(file, 65536) != 0) {
		close(file);
		file = -1;
	}
	int sp[2] = {-1, -1};
	socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp);
	int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
	int rd = -1;
	int wr = pipe_w(&rd);
	/* CTX_OPEN: a pipe's write end, nothing else */
	int kinds[] = {file, sp[0], devnull};
	for (unsigned int i = 0; i < RTE_DIM(kinds); i++) {
		struct dpv_shm_dev_ref r = {.dev = 0};
		int tok;
		int st = CALL(&c, DPV_SHM_CTX_OPEN, &r, &kinds[i], 1, &tok);
		CHECK(st < 0 && tok < 0, "CTX_OPEN with descriptor kind %u: %d", i, st);
		if (tok >= 0)
			close(tok);
	}
	struct dpv_shm_dev_ref r0 = {.dev = 0};
	int st = CALL(&c, DPV_SHM_CTX_OPEN, &r0, NULL, 0, NULL);
	CHECK(st < 0, "CTX_OPEN without a descriptor: %d", st);
	r0.dev = 77;
	st = CALL(&c, DPV_SHM_CTX_OPEN, &r0, &wr, 1, NULL);
	CHECK(st < 0, "CTX_OPEN of device 77: %d", st);
	/* CTX_IMPORT: a memfd that is no context's command descriptor */
	int mf = new_memfd(4096, 0);
	int two[2] = {mf, wr};
	st = CALL(&c, DPV_SHM_CTX_IMPORT, &r0, two, 2, NULL);
	CHECK(st < 0, "CTX_IMPORT of a memfd that names no context: %d", st);
	close(mf);
	/* MEM_ADD */
	struct {
		const char *what;
		int fd;
		size_t map, claim;
		int64_t addr_delta; /* added to the mapping's address */
	} mem[] = {
		{"an unsealed memfd", new_memfd(65536, 0), 65536, 65536, 0},
		{"a memfd smaller than claimed", new_memfd(65536, F_SEAL_SHRINK | F_SEAL_GROW), 65536, 131072, 0},
		{"a memfd larger than claimed", new_memfd(131072, F_SEAL_SHRINK | F_SEAL_GROW), 131072, 65536, 0},
		{"a memfd sealed against shrinking only", new_memfd(65536, F_SEAL_SHRINK), 65536, 65536, 0},
		{"a memfd sealed against growing only", new_memfd(65536, F_SEAL_GROW), 65536, 65536, 0},
		{"a memfd sealed against writes", new_memfd(65536, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE), 0, 65536, 0},
		{"a regular file", file >= 0 ? dup(file) : -1, 65536, 65536, 0},
		{"a pipe", pipe_w(NULL), 0, 65536, 0},
		{"/dev/null", open("/dev/null", O_RDWR | O_CLOEXEC), 0, 65536, 0},
		{"no descriptor", -1, 0, 65536, 0},
		{"a misaligned address", new_memfd(65536, F_SEAL_SHRINK | F_SEAL_GROW), 65536, 65536, 8},
		{"size 0", new_memfd(65536, F_SEAL_SHRINK | F_SEAL_GROW), 65536, 0, 0},
		{"an address that wraps", new_memfd(65536, F_SEAL_SHRINK | F_SEAL_GROW), 0, 65536, -1},
		{"address 0", new_memfd(65536, F_SEAL_SHRINK | F_SEAL_GROW), 0, 65536, -2},
	};
	for (unsigned int i = 0; i < RTE_DIM(mem); i++) {
		void *p = NULL;
		if (mem[i].map && mem[i].fd >= 0) {
			p = mmap(NULL, mem[i].map, PROT_READ | PROT_WRITE, MAP_SHARED, mem[i].fd, 0);
			if (p == MAP_FAILED)
				p = NULL;
		}
		struct dpv_shm_mem m = {.addr = p ? (uintptr_t)p + (uint64_t)mem[i].addr_delta : 0x7f0000000000ull,
					.size = mem[i].claim};
		if (mem[i].addr_delta == -1)
			m.addr = ~0ull - 4095;
		if (mem[i].addr_delta == -2)
			m.addr = 0;
		st = CALL(&c, DPV_SHM_MEM_ADD, &m, mem[i].fd >= 0 ? &mem[i].fd : NULL, mem[i].fd >= 0 ? 1 : 0, NULL);
		CHECK(st < 0, "MEM_ADD of %s: %d, expected a refusal", mem[i].what, st);
		if (p)
			munmap(p, mem[i].map);
		if (mem[i].fd >= 0)
			close(mem[i].fd);
	}
	/* a region of our own, then one over it */
	uint8_t *reg = region_add(&c, 1u << 20);
	CHECK(reg != NULL, "MEM_ADD of a sealed memfd");
	if (reg) {
		int fd = new_memfd(1u << 20, F_SEAL_SHRINK | F_SEAL_GROW);
		struct dpv_shm_mem m = {.addr = (uintptr_t)reg + 4096 * 16, .size = 1u << 20};
		st = CALL(&c, DPV_SHM_MEM_ADD, &m, &fd, 1, NULL);
		CHECK(st == -EEXIST, "MEM_ADD over a region it has: %d", st);
		close(fd);
		m.addr = (uintptr_t)reg + 4096;
		st = CALL(&c, DPV_SHM_MEM_DEL, &m, NULL, 0, NULL);
		CHECK(st < 0, "MEM_DEL of an address inside a region: %d", st);
	}
	/* rings outside the regions */
	r0.dev = 0;
	int tok;
	st = CALL(&c, DPV_SHM_CTX_OPEN, &r0, &wr, 1, &tok);
	CHECK(st == 0, "CTX_OPEN with a pipe: %d", st);
	if (tok >= 0)
		close(tok);
	uint32_t cqn = reserve(&c, DPV_OBJ_CQ);
	uint64_t bad_rings[] = {
		reg ? (uintptr_t)reg + (1u << 20) - 64 : 1, /* runs past the end */
		reg ? (uintptr_t)reg + 8 : 2,		     /* misaligned */
		reg ? (uintptr_t)reg + (1u << 20) : 3,	     /* just after */
		other && other->reg ? (uintptr_t)other->reg + 65536 : 4, /* another connection's region */
		(uintptr_t)&c,			      /* our stack */
		0, ~0ull - 63,
	};
	for (unsigned int i = 0; i < RTE_DIM(bad_rings); i++) {
		struct dpv_shm_cq q = {.dev = 0, .handle = cqn, .ctx = r0.ctx, .ring = bad_rings[i], .ring_size = 256};
		st = CALL(&c, DPV_SHM_CQ_CREATE, &q, NULL, 0, NULL);
		CHECK(st < 0, "CQ_CREATE with ring %u outside our regions: %d", i, st);
	}
	if (reg) {
		/* sizes that do not fit, or are no power of two; a channel that is a file */
		uint32_t sizes[] = {1u << 14, 0, 1, 3, 255, 1u << 25, 0x80000000u};
		for (unsigned int i = 0; i < RTE_DIM(sizes); i++) {
			struct dpv_shm_cq q = {.dev = 0, .handle = cqn, .ctx = r0.ctx, .ring = (uintptr_t)reg,
					       .ring_size = sizes[i]};
			st = CALL(&c, DPV_SHM_CQ_CREATE, &q, NULL, 0, NULL);
			CHECK(st < 0, "CQ_CREATE with %u entries in a 1 MiB region: %d", sizes[i], st);
		}
		struct dpv_shm_cq q = {.dev = 0, .handle = cqn, .ctx = r0.ctx, .ring = (uintptr_t)reg, .ring_size = 256,
				       .has_channel = 1};
		st = CALL(&c, DPV_SHM_CQ_CREATE, &q, &devnull, 1, NULL);
		CHECK(st < 0, "CQ_CREATE with /dev/null as its channel: %d", st);
		st = CALL(&c, DPV_SHM_CQ_CREATE, &q, NULL, 0, NULL);
		CHECK(st < 0, "CQ_CREATE that announces a channel and sends none: %d", st);
		q.ctx = 0;
		q.has_channel = 0;
		st = CALL(&c, DPV_SHM_CQ_CREATE, &q, NULL, 0, NULL);
		CHECK(st < 0, "CQ_CREATE without a context: %d", st);
		q.ctx = r0.ctx;
		st = CALL(&c, DPV_SHM_CQ_CREATE, &q, NULL, 0, NULL);
		CHECK(st == 0, "a valid CQ_CREATE after the refused ones: %d", st);
		/* QP rings in another connection's region */
		uint32_t pdn = reserve(&c, DPV_OBJ_PD), qpn = reserve(&c, DPV_OBJ_QP);
		struct dpv_shm_pd pd = {.dev = 0, .pdn = pdn};
		CHECK(CALL(&c, DPV_SHM_PD_ALLOC, &pd, NULL, 0, NULL) == 0, "PD_ALLOC");
		struct dpv_shm_qp qp = {.dev = 0, .qpn = qpn, .ctx = r0.ctx, .type = IBV_QPT_RC, .sq_size = 64,
					.sq_stride = 128, .rq_size = 64, .rq_stride = 64, .scq = cqn, .rcq = cqn, .pd = pdn};
		qp.cap = (struct ibv_qp_cap){.max_send_wr = 64, .max_recv_wr = 64, .max_send_sge = 1, .max_recv_sge = 1};
		qp.sq = other && other->reg ? (uintptr_t)other->reg + 65536 : 64;
		qp.rq = (uintptr_t)reg + 65536;
		st = CALL(&c, DPV_SHM_QP_CREATE, &qp, NULL, 0, NULL);
		CHECK(st < 0, "QP_CREATE with its SQ in another connection's region: %d", st);
		qp.sq = (uintptr_t)reg + 131072;
		qp.rq = (uintptr_t)reg + (1u << 20) - 128;
		st = CALL(&c, DPV_SHM_QP_CREATE, &qp, NULL, 0, NULL);
		CHECK(st < 0, "QP_CREATE with its RQ past the region's end: %d", st);
		qp.rq = (uintptr_t)reg + 65536;
		qp.sq_stride = 64; /* too small for a WQE with an SGE */
		st = CALL(&c, DPV_SHM_QP_CREATE, &qp, NULL, 0, NULL);
		CHECK(st < 0, "QP_CREATE with a 64-byte SQ stride: %d", st);
		qp.sq_stride = 128;
		qp.cap.max_send_wr = 65;
		st = CALL(&c, DPV_SHM_QP_CREATE, &qp, NULL, 0, NULL);
		CHECK(st < 0, "QP_CREATE with more WRs than ring entries: %d", st);
		qp.cap.max_send_wr = 64;
		qp.cap.max_inline_data = 1u << 20;
		st = CALL(&c, DPV_SHM_QP_CREATE, &qp, NULL, 0, NULL);
		CHECK(st < 0, "QP_CREATE with 1 MiB of inline data: %d", st);
		qp.cap.max_inline_data = 0;
		/* the region is busy with the CQ's ring: MEM_DEL refused */
		struct dpv_shm_mem m = {.addr = (uintptr_t)reg, .size = 1u << 20};
		st = CALL(&c, DPV_SHM_MEM_DEL, &m, NULL, 0, NULL);
		CHECK(st == -EBUSY, "MEM_DEL of a region with a CQ ring in it: %d", st);
	}
	if (rd >= 0)
		close(rd);
	close(wr);
	if (file >= 0)
		close(file);
	close(sp[0]);
	close(sp[1]);
	close(devnull);
	conn_close(&c);
	if (reg)
		munmap(reg, 1u << 20);
	CHECK(daemon_serves(), "the daemon does not serve after the memory part");
}

/* Connection b names the objects of a. */
static void part_numbers(struct app *a)
{
	struct conn b;
	if (!CHECK(conn_open(&b, true), "connect and HELLO"))
		return;
	int st0 = qp_state(&a->c, a->qpn);
	struct dpv_shm_qp q = {.qpn = a->qpn};
	int st = CALL(&b, DPV_SHM_QP_DESTROY, &q, NULL, 0, NULL);
	CHECK(st < 0, "QP_DESTROY of another connection's QP: %d", st);
	struct dpv_shm_qp_modify qm = {.qpn = a->qpn, .mask = IBV_QP_STATE, .to = IBV_QPS_ERR};
	st = CALL(&b, DPV_SHM_QP_MODIFY, &qm, NULL, 0, NULL);
	CHECK(st < 0, "QP_MODIFY (to ERR) of another connection's QP: %d", st);
	qm.to = IBV_QPS_RESET;
	st = CALL(&b, DPV_SHM_QP_MODIFY, &qm, NULL, 0, NULL);
	CHECK(st < 0, "QP_MODIFY (to RESET) of another connection's QP: %d", st);
	struct dpv_shm_qp_query qq = {.qpn = a->qpn};
	st = CALL(&b, DPV_SHM_QP_QUERY, &qq, NULL, 0, NULL);
	CHECK(st < 0, "QP_QUERY of another connection's QP: %d", st);
	static const struct {
		uint32_t type;
		size_t off;
	} nums[] = {
		{DPV_OBJ_QP, offsetof(struct app, qpn)}, {DPV_OBJ_CQ, offsetof(struct app, cq)},
		{DPV_OBJ_PD, offsetof(struct app, pdn)}, {DPV_OBJ_MR, offsetof(struct app, mr)},
	};
	for (unsigned int i = 0; i < RTE_DIM(nums); i++) {
		uint32_t num;
		memcpy(&num, (uint8_t *)a + nums[i].off, 4);
		struct dpv_shm_num n = {.type = nums[i].type, .num = num};
		st = CALL(&b, DPV_SHM_NUM_RELEASE, &n, NULL, 0, NULL);
		CHECK(st < 0, "NUM_RELEASE of another connection's number (type %u): %d", nums[i].type, st);
	}
	struct dpv_shm_cq cq = {.handle = a->cq};
	st = CALL(&b, DPV_SHM_CQ_DESTROY, &cq, NULL, 0, NULL);
	CHECK(st < 0, "CQ_DESTROY of another connection's CQ: %d", st);
	struct dpv_shm_mr mr = {.dev = a->dev, .key = a->mrkey};
	st = CALL(&b, DPV_SHM_MR_DEREG, &mr, NULL, 0, NULL);
	CHECK(st < 0, "MR_DEREG of another connection's MR: %d", st);
	struct dpv_shm_pd pd = {.dev = a->dev, .pdn = a->pdn};
	st = CALL(&b, DPV_SHM_PD_DEALLOC, &pd, NULL, 0, NULL);
	CHECK(st < 0, "PD_DEALLOC of another connection's PD: %d", st);
	st = CALL(&b, DPV_SHM_PD_ALLOC, &pd, NULL, 0, NULL);
	CHECK(st < 0, "PD_ALLOC on another connection's number: %d", st);
	struct dpv_shm_shpd sh = {.dev = a->dev, .pdn = a->pdn, .key = 1};
	st = CALL(&b, DPV_SHM_SHPD_ALLOC, &sh, NULL, 0, NULL);
	CHECK(st < 0, "SHPD_ALLOC of another connection's PD: %d", st);
	/* its own MR number on the other's PD, over the other's memory */
	uint32_t mri = reserve(&b, DPV_OBJ_MR);
	struct dpv_shm_mr m2 = {.dev = a->dev, .key = mri << 8 | 1, .pd = a->pdn, .access = IBV_ACCESS_LOCAL_WRITE,
				.addr = (uintptr_t)a->buf, .length = 4096};
	st = CALL(&b, DPV_SHM_MR_REG, &m2, NULL, 0, NULL);
	CHECK(st < 0, "MR_REG on another connection's PD: %d", st);
	/* and with the other's MR index in the key */
	m2.key = a->mr << 8 | 7;
	m2.pd = 0;
	st = CALL(&b, DPV_SHM_MR_REG, &m2, NULL, 0, NULL);
	CHECK(st < 0, "MR_REG with another connection's MR index: %d", st);
	/* a's objects are as they were */
	int st1 = qp_state(&a->c, a->qpn);
	CHECK(st0 >= 0 && (st1 == st0 || st1 == IBV_QPS_ERR), "the QP of the attacked connection: state %d, was %d",
	      st1, st0);
	conn_close(&b);
}

/* XRC: another connection's target QP is reached only through a domain
 * and an OPEN_QP handle this connection holds (shared mode's ibv_open_qp). */
static void xrc_other(struct conn *b, uint32_t bctx, uint32_t xa, uint32_t tq, uint32_t rcq, int ffd)
{
	struct dpv_shm_open_qp o = {.xrcd = xa, .qpn = tq, .ctx = bctx, .cookie = 0x10};
	CHECK_EQ(CALL(b, DPV_SHM_OPEN_QP, &o, NULL, 0, NULL), -EINVAL, "OPEN_QP through a domain not held: -EINVAL");
	struct dpv_shm_qp_query qq = {.qpn = tq};
	CHECK_EQ(CALL(b, DPV_SHM_QP_QUERY, &qq, NULL, 0, NULL), -EINVAL, "QP_QUERY of its target QP: -EINVAL");
	struct dpv_shm_qp_modify qm = {.qpn = tq, .mask = IBV_QP_STATE, .to = IBV_QPS_ERR};
	CHECK_EQ(CALL(b, DPV_SHM_QP_MODIFY, &qm, NULL, 0, NULL), -EINVAL, "QP_MODIFY of its target QP: -EINVAL");
	struct dpv_shm_xrcd xb = {.oflags = 0};
	CHECK_EQ(CALL(b, DPV_SHM_XRCD_OPEN, &xb, NULL, 0, NULL), 0, "an anonymous domain");
	o.xrcd = xb.num;
	CHECK_EQ(CALL(b, DPV_SHM_OPEN_QP, &o, NULL, 0, NULL), -ENOENT, "OPEN_QP through another domain: -ENOENT");
	o.qpn = rcq;
	CHECK_EQ(CALL(b, DPV_SHM_OPEN_QP, &o, NULL, 0, NULL), -ENOENT, "OPEN_QP of an RC QP: -ENOENT");
	struct dpv_shm_xrcd xs = {.has_fd = 1};
	CHECK(CALL(b, DPV_SHM_XRCD_OPEN, &xs, &ffd, 1, NULL) == 0 && xs.num == xa, "the same file: the same domain");
	o = (struct dpv_shm_open_qp){.xrcd = xa, .qpn = tq, .ctx = 0, .cookie = 0x10};
	CHECK_EQ(CALL(b, DPV_SHM_OPEN_QP, &o, NULL, 0, NULL), -EINVAL, "OPEN_QP without a context: -EINVAL");
	o.ctx = bctx;
	o.cookie = 0;
	CHECK_EQ(CALL(b, DPV_SHM_OPEN_QP, &o, NULL, 0, NULL), -EINVAL, "OPEN_QP without a pointer: -EINVAL");
	o.cookie = 0x10;
	CHECK_EQ(CALL(b, DPV_SHM_OPEN_QP, &o, NULL, 0, NULL), 0, "OPEN_QP of the other's target QP");
	CHECK_EQ(CALL(b, DPV_SHM_OPEN_QP, &o, NULL, 0, NULL), -EINVAL, "the same handle twice: -EINVAL");
	CHECK(CALL(b, DPV_SHM_QP_QUERY, &qq, NULL, 0, NULL) == 0 && qq.handles == 1 && qq.state == IBV_QPS_RESET,
	      "QP_QUERY through the handle (handles %u, state %u)", qq.handles, qq.state);
	CHECK_EQ(CALL(b, DPV_SHM_QP_MODIFY, &qm, NULL, 0, NULL), 0, "QP_MODIFY to ERR through the handle");
	struct dpv_shm_qp q = {.qpn = tq};
	CHECK(CALL(b, DPV_SHM_QP_DESTROY, &q, NULL, 0, NULL) < 0, "QP_DESTROY by the handle's connection refused");
	xs.has_fd = 0;
	CHECK_EQ(CALL(b, DPV_SHM_XRCD_CLOSE, &xs, NULL, 0, NULL), 0, "closing the domain under the handle");
	CHECK_EQ(CALL(b, DPV_SHM_QP_QUERY, &qq, NULL, 0, NULL), -EINVAL,
		 "QP_QUERY with the handle but not the domain: -EINVAL");
	CHECK_EQ(CALL(b, DPV_SHM_QP_MODIFY, &qm, NULL, 0, NULL), -EINVAL,
		 "QP_MODIFY with the handle but not the domain: -EINVAL");
	o.close = 1;
	CHECK_EQ(CALL(b, DPV_SHM_OPEN_QP, &o, NULL, 0, NULL), 0, "OPEN_QP close of the handle");
	CHECK_EQ(CALL(b, DPV_SHM_OPEN_QP, &o, NULL, 0, NULL), -EINVAL, "closing it twice: -EINVAL");
}

static void part_xrc(struct app *a)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/hostile_xrc", g_tmp);
	int ffd = open(path, O_CREAT | O_RDWR, 0600);
	struct dpv_shm_xrcd xa = {.dev = a->dev, .oflags = O_CREAT, .has_fd = 1};
	CHECK(ffd >= 0 && CALL(&a->c, DPV_SHM_XRCD_OPEN, &xa, &ffd, 1, NULL) == 0, "a domain on a file");
	uint32_t tq = reserve(&a->c, DPV_OBJ_QP);
	struct dpv_shm_qp q = {.dev = a->dev, .qpn = tq, .ctx = a->ctx, .type = IBV_QPT_XRC_RECV, .xrcd = xa.num,
			       .cookie = 0x20};
	int st = CALL(&a->c, DPV_SHM_QP_CREATE, &q, NULL, 0, NULL);
	struct conn b;
	if (!CHECK(st == 0, "an XRC target QP: %d", st) || !CHECK(conn_open(&b, true), "connect and HELLO")) {
		close(ffd);
		return;
	}
	int wfd = pipe_w(NULL), tok = -1;
	struct dpv_shm_dev_ref r = {.dev = a->dev};
	CHECK_EQ(CALL(&b, DPV_SHM_CTX_OPEN, &r, &wfd, 1, &tok), 0, "a context");
	close(wfd);
	if (tok >= 0)
		close(tok);
	xrc_other(&b, r.ctx, xa.num, tq, a->qpn, ffd);
	struct dpv_shm_qp_query qq = {.qpn = tq};
	CHECK(CALL(&a->c, DPV_SHM_QP_QUERY, &qq, NULL, 0, NULL) == 0 && qq.state == IBV_QPS_ERR && !qq.handles,
	      "the creator sees the handle's modify, and no handle (state %u, handles %u)", qq.state, qq.handles);
	conn_close(&b);
	q = (struct dpv_shm_qp){.qpn = tq};
	CHECK_EQ(CALL(&a->c, DPV_SHM_QP_DESTROY, &q, NULL, 0, NULL), 0, "the creator destroys it");
	struct dpv_shm_num n = {.type = DPV_OBJ_QP, .num = tq};
	CHECK_EQ(CALL(&a->c, DPV_SHM_NUM_RELEASE, &n, NULL, 0, NULL), 0, "and gives the number back");
	xa.has_fd = 0;
	CHECK_EQ(CALL(&a->c, DPV_SHM_XRCD_CLOSE, &xa, NULL, 0, NULL), 0, "and closes the domain");
	close(ffd);
	unlink(path);
}

/* Garbage in a well-formed connection's own rings. */
static void part_rings(struct app *a)
{
	const uint32_t sm = a->sq_size - 1;
	/* 1: random WQEs, a few at a time */
	for (int round = 0; round < 40; round++) {
		uint32_t pi = atomic_load(&a->sq->pi);
		unsigned int n = 1 + rnd() % 8;
		for (unsigned int i = 0; i < n; i++) {
			struct dpv_send_wqe *w = (struct dpv_send_wqe *)dpv_ring_slot(a->sq, pi + i, a->sq_size, a->sq_stride);
			uint8_t *raw = (uint8_t *)w;
			for (uint32_t k = 0; k < a->sq_stride; k += 8) {
				uint64_t r = rnd();
				memcpy(raw + k, &r, 8);
			}
			switch (rnd() % 6) {
			case 0: /* huge num_sge */
				w->flags = DPV_WQE_F_SIGNALED;
				w->opcode = IBV_WR_SEND;
				w->num_sge = 0xffff;
				w->length = (uint32_t)rnd();
				break;
			case 1: /* huge inline length */
				w->flags = DPV_WQE_F_INLINE | DPV_WQE_F_SIGNALED;
				w->opcode = (uint8_t)(rnd() % 2 ? IBV_WR_SEND : IBV_WR_RDMA_WRITE);
				w->length = 0xffffffffu - (uint32_t)(rnd() % 4096);
				break;
			case 2: /* bad opcode */
				w->opcode = (uint8_t)(11 + rnd() % 245);
				w->num_sge = 1;
				break;
			case 3: /* SGEs pointing anywhere, keys of anything */
				w->opcode = (uint8_t)(rnd() % 9);
				w->flags &= (uint8_t)~DPV_WQE_F_INLINE;
				w->num_sge = (uint16_t)(rnd() % 5);
				break;
			case 4: { /* a plausible WQE in our MR */
				memset(w, 0, sizeof(*w));
				w->opcode = (uint8_t)(rnd() % 2 ? IBV_WR_SEND : IBV_WR_RDMA_WRITE);
				w->flags = DPV_WQE_F_SIGNALED;
				w->num_sge = 1;
				w->length = 4096;
				w->rkey = a->mrkey;
				w->remote_addr = (uintptr_t)a->buf;
				struct dpv_sge *sg = dpv_wqe_sge(w);
				sg->addr = (uintptr_t)a->buf + rnd() % (a->buf_len - 4096);
				sg->length = 4096;
				sg->lkey = a->mrkey;
				break;
			}
			default: /* atomics at odd addresses */
				w->opcode = (uint8_t)(IBV_WR_ATOMIC_CMP_AND_SWP + rnd() % 2);
				w->remote_addr = rnd() | 1;
				w->num_sge = 1;
				break;
			}
		}
		atomic_store(&a->sq->pi, pi + n);
		ring_db(a, a->sq, a->qpn, round % 3 == 0);
		dpvt_sleep_ms(2);
		/* and reset the QP now and then to bring it back from ERR */
		if (round % 10 == 9) {
			modify(a, IBV_QPS_RESET, 0, NULL);
			dpv_ring_init(a->sq, DPV_RING_SQ, a->sq_size, a->sq_stride);
			dpv_ring_init(a->rq, DPV_RING_RQ, a->rq_size, a->rq_stride);
			app_to_rts(a, 0xfffff0 - round, 14);
		}
		pp_poll(false);
	}
	CHECK(daemon_alive() && qp_state(&a->c, a->qpn) >= 0, "the daemon after random WQEs");
	/* 2: producer index far ahead, then behind what the engine fetched */
	uint32_t pis[] = {atomic_load(&a->sq->pi) + (1u << 30), atomic_load(&a->sq->pi) + sm + 2, 0x7fffffffu,
			  atomic_load(&a->sq->pi) - 1, atomic_load(&a->sq->pi) - 5, 0};
	for (unsigned int i = 0; i < RTE_DIM(pis); i++) {
		atomic_store(&a->sq->pi, pis[i]);
		ring_db(a, a->sq, a->qpn, true);
		dpvt_sleep_ms(20);
		pp_poll(false);
	}
	CHECK(daemon_alive() && qp_state(&a->c, a->qpn) >= 0, "the daemon after SQ producer indices ahead and behind");
	/* 3: the RQ: its producer index far ahead and behind, then the QP to
	 * ERR (which flushes it) and more RQ doorbells in ERR */
	uint32_t rpis[] = {atomic_load(&a->rq->ci) - 1, atomic_load(&a->rq->ci) + (1u << 31), 0xdeadbeefu};
	for (unsigned int i = 0; i < RTE_DIM(rpis); i++) {
		for (uint32_t k = 0; k < a->rq_size; k++) {
			struct dpv_recv_wqe *w = dpv_ring_slot(a->rq, k, a->rq_size, a->rq_stride);
			w->wr_id = rnd();
			w->num_sge = (uint32_t)(k % 3 == 0 ? 0xffffffffu : rnd() % 8);
		}
		atomic_store(&a->rq->pi, rpis[i]);
		ring_db(a, a->rq, a->qpn | DPV_DB_RQ, true);
		if (i == 0)
			modify(a, IBV_QPS_ERR, 0, NULL);
		dpvt_sleep_ms(20);
		pp_poll(false);
	}
	uint64_t t0 = dpvt_now_ms();
	int qs = qp_state(&a->c, a->qpn);
	CHECK(qs == IBV_QPS_ERR && dpvt_now_ms() - t0 < 2000, "QP_QUERY after RQ flushes: %d in %" PRIu64 " ms", qs,
	      dpvt_now_ms() - t0);
	/* 4: the CQ ring's header: consumer far ahead, producer garbage */
	atomic_store(&a->cqr->ci, 0x80000000u);
	atomic_store(&a->cqr->pi, (uint32_t)rnd());
	atomic_store(&a->cqr->arm, 0xffffffffu);
	/* back to RTS with WQEs that complete with errors into that CQ */
	modify(a, IBV_QPS_RESET, 0, NULL);
	dpv_ring_init(a->sq, DPV_RING_SQ, a->sq_size, a->sq_stride);
	dpv_ring_init(a->rq, DPV_RING_RQ, a->rq_size, a->rq_stride);
	CHECK(app_to_rts(a, 0xfffff0, 14), "back to RTS after ERR");
	for (unsigned int i = 0; i < 8; i++) {
		struct dpv_send_wqe *w = dpv_ring_slot(a->sq, i, a->sq_size, a->sq_stride);
		memset(w, 0, sizeof(*w));
		w->opcode = IBV_WR_SEND;
		w->flags = DPV_WQE_F_SIGNALED;
		w->num_sge = 1;
		w->length = 100;
		struct dpv_sge *sg = dpv_wqe_sge(w);
		sg->addr = 0x1000;
		sg->length = 100;
		sg->lkey = 0xdead00; /* nobody's */
	}
	atomic_store(&a->sq->pi, 8);
	ring_db(a, a->sq, a->qpn, true);
	dpvt_sleep_ms(20);
	/* 5: doorbells naming QPNs that are not ours (other processes', none) */
	for (uint32_t q = 0x11; q < 0x400; q++)
		db_put(app_db(a), a->c.w.db_size - 1, q | (q & 1 ? DPV_DB_RQ : 0));
	/* and SRQ numbers (tag matching ops): others', none, not tag matching,
	 * beyond the table */
	for (uint32_t q = 0; q < 0x400; q++)
		db_put(app_db(a), a->c.w.db_size - 1, q | DPV_DB_SRQ | (q & 0x100 ? DPV_DB_RQ : 0));
	db_put(app_db(a), a->c.w.db_size - 1, 0xffffffffu);
	dpvt_sleep_ms(20);
	/* 6: the doorbell ring itself: head and sequence numbers scribbled */
	struct dpv_db_ring *db = app_db(a);
	atomic_store(&db->head, (uint32_t)rnd());
	for (uint32_t k = 0; k < 64; k++)
		atomic_store(&db->slot[rnd() & (a->c.w.db_size - 1)].seq, (uint32_t)rnd());
	db_put(db, a->c.w.db_size - 1, a->qpn);
	dpvt_sleep_ms(20);
	pp_poll(false);
	qs = qp_state(&a->c, a->qpn);
	CHECK(daemon_alive() && qs >= 0, "the daemon after garbage in the CQ and doorbell rings: QP_QUERY %d", qs);
}

/* The engine checks a WQE's SGEs when the WQE starts and reads them again
 * from the ring for every packet (and every retransmission): an SGE that
 * passed the check (length 0, or in an MR deregistered since) and was then
 * rewritten to name the daemon's memory must not be copied from. Run with
 * no other application holding MRs. */
static void part_rewritten_sge(void)
{
	for (int variant = 0; variant < 2; variant++) {
		struct app t;
		if (!CHECK(app_open(&t, 0, variant == 1), "a connection with an RC QP (variant %d)", variant)) {
			app_close(&t);
			continue;
		}
		/* a peer QPN that does not exist: no ACK ever, retransmissions */
		CHECK(app_to_rts(&t, 0xffffee, 10), "the QP to RTS");
		struct dpv_send_wqe *w = dpv_ring_slot(t.sq, 0, t.sq_size, t.sq_stride);
		memset(w, 0, t.sq_stride);
		w->opcode = IBV_WR_SEND;
		w->flags = DPV_WQE_F_SIGNALED;
		w->num_sge = 1;
		w->length = 1u << 20; /* 1024 packets: more than a window */
		struct dpv_sge *sg = dpv_wqe_sge(w);
		if (variant == 0) {
			sg->addr = 0;
			sg->length = 0; /* nothing to check */
			sg->lkey = 0;
		} else {
			sg->addr = (uintptr_t)t.buf;
			sg->length = 1u << 20;
			sg->lkey = t.mrkey;
		}
		atomic_store(&t.sq->pi, 1);
		ring_db(&t, t.sq, t.qpn, true);
		dpvt_sleep_ms(30); /* the WQE started: the first window is out */
		if (variant == 1) {
			struct dpv_shm_mr m = {.dev = 0, .key = t.mrkey};
			CHECK(CALL(&t.c, DPV_SHM_MR_DEREG, &m, NULL, 0, NULL) == 0, "MR_DEREG");
		}
		/* now the SGE names memory of the daemon's (unmapped there) */
		sg->addr = 0x10000;
		sg->length = 0x7fffffff;
		sg->lkey = variant == 1 ? t.mrkey : 0;
		dpvt_sleep_ms(400); /* retransmissions (timeout 10: ~4 ms each) */
		CHECK(daemon_alive(), "the daemon died after the SGE was rewritten under it (variant %d)", variant);
		if (!daemon_alive()) {
			app_close(&t);
			return;
		}
		int qs = qp_state(&t.c, t.qpn);
		CHECK(qs >= 0, "QP_QUERY after the rewritten SGE: %d", qs);
		app_close(&t);
	}
}

/* More connections than a doorbell table holds, all at once. */
static void part_flood(void)
{
	enum { N = 300 };
	static struct conn cs[N];
	unsigned int hello_ok = 0, refused = 0, other = 0;
	for (unsigned int i = 0; i < N; i++) {
		cs[i].s = connect_daemon();
		if (cs[i].s < 0) {
			other++;
			continue;
		}
		cs[i].w.version = DPV_SHM_VERSION;
		int fd;
		int st = CALL(&cs[i], DPV_SHM_HELLO, &cs[i].w, NULL, 0, &fd);
		if (fd >= 0)
			close(fd);
		if (st == 0)
			hello_ok++;
		else if (st < 0)
			refused++;
		else
			other++;
	}
	CHECK(other == 0 && hello_ok >= 200, "%u connections: %u welcomed, %u refused, %u lost", N, hello_ok, refused,
	      other);
	for (unsigned int i = 0; i < N; i++)
		if (cs[i].s >= 0)
			close(cs[i].s);
	dpvt_sleep_ms(200);
	CHECK(daemon_serves(), "the daemon does not serve after the connection flood");
}

int main(void)
{
	g_sock = getenv("DPV_SHARED_SOCK");
	const char *dp = getenv("DPV_DAEMON_PID");
	g_tmp = getenv("DPV_SHARED_TMP");
	if (!g_sock || !dp || !g_tmp) {
		fprintf(stderr, "test_hostile: run under test/shared/with_daemon.sh\n");
		return 2;
	}
	g_dpid = (pid_t)atoi(dp);
	signal(SIGPIPE, SIG_IGN);
	const char *seed = getenv("DPV_HOSTILE_SEED");
	g_rng = seed ? strtoull(seed, NULL, 0) : (uint64_t)time(NULL) ^ (uint64_t)getpid() << 32;
	printf("test_hostile: daemon pid %d on %s, seed %" PRIu64 " (DPV_HOSTILE_SEED)\n", (int)g_dpid, g_sock, g_rng);
	fflush(stdout);
	if (!CHECK(daemon_serves(), "the daemon does not serve at the start"))
		return dpvt_finish();
	int fd_base = daemon_fds_quiet();

	/* the well-behaved application runs through all of it */
	pp_start();
	struct app a;
	bool a_ok = app_open(&a, 0, true) && app_to_rts(&a, 0xfffff0, 14);
	CHECK(a_ok, "a well-formed connection with a CQ and an RC QP in RTS");
	printf("test_hostile: not messages\n");
	fflush(stdout);
	part_not_messages();
	pp_poll(false);
	printf("test_hostile: protocol\n");
	fflush(stdout);
	part_protocol();
	pp_poll(false);
	printf("test_hostile: descriptors, regions, rings\n");
	fflush(stdout);
	part_memory(a_ok ? &a : NULL);
	pp_poll(false);
	if (a_ok) {
		printf("test_hostile: another connection's numbers\n");
		fflush(stdout);
		part_numbers(&a);
		pp_poll(false);
		printf("test_hostile: another connection's XRC target QP\n");
		fflush(stdout);
		part_xrc(&a);
		pp_poll(false);
		printf("test_hostile: garbage in its own rings\n");
		fflush(stdout);
		part_rings(&a);
		pp_poll(false);
	}
	app_close(&a);
	printf("test_hostile: connection flood\n");
	fflush(stdout);
	part_flood();
	/* the pingpongs end; then nobody else holds MRs */
	pp.stopping = true;
	pp_poll(true);
	CHECK(pp.ok >= 1, "no ibv_rc_pingpong pair completed during the hostile part (%u started)", pp.started);
	int n = daemon_fds_settle(fd_base);
	CHECK(n == fd_base, "the daemon holds %d descriptors after the hostile connections, %d before", n, fd_base);
	printf("test_hostile: SGEs rewritten after the check\n");
	fflush(stdout);
	part_rewritten_sge();

	/* afterwards: alive, serving, a well-behaved pair works, nothing leaked */
	CHECK(daemon_alive(), "the daemon is gone");
	CHECK(daemon_serves(), "the daemon does not answer a fresh HELLO");
	pp.stopping = false;
	pp_start();
	pp.stopping = true;
	pp_poll(true);
	n = daemon_fds_settle(fd_base);
	CHECK(n == fd_base, "the daemon holds %d descriptors at the end, %d at the start", n, fd_base);
	printf("test_hostile: %u ibv_rc_pingpong pairs completed alongside, %u failed\n", pp.ok, pp.bad);
	return dpvt_finish();
}
