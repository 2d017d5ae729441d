/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpverbsd's own connection-manager endpoint on QP 1 of every port: the CM
 * MADs no application claims (dpvd_gsi.c) come here, to a lib/cmrt runtime
 * on this file's transport (dpv_cmrt_xport.h: the rings below send, the
 * receive completions feed dpv_cmrt_input_grh); its agent, with no listener
 * and no connection of its own, answers them as Linux's CM answers an
 * unknown service or comm ID (a REQ: REJ "invalid service ID"; a SIDR_REQ:
 * SIDR_REP "unsupported"; a DREQ: DREP; anything else is counted and
 * dropped). The daemon also sends from here, through the runtime, what
 * Linux's CM sends for the connections of a process that goes away
 * (dpvd_gsi_client_gone -> dpv_cmrt_abandon: DREQ for an established
 * connection, REJ for one being set up).
 *
 * The endpoint is the daemon acting as one of its own applications
 * (g_self, not on the list of connections, so no application can name its
 * objects): a memfd region holds its rings and buffers, and every object
 * (context, PD, MR, CQ, the GSI QP, AHs) is made by the same request
 * handlers an application's commands run, so it is checked and reclaimed
 * the same way. It is made on every port when the first application
 * creates a GSI QP (a daemon whose applications do not use the CM spends
 * nothing on it: no PD, MR, CQ or QP of its limits); its slot, 1, the
 * lowest, is taken at start, so it is every port's fallback. It runs on the control
 * thread: the CQ's completion channel wakes it (dpvd_cm_fd), and the
 * runtime's timers set the control thread's epoll timeout (dpvd_cm_timeout_ms).
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "dpv_cmrt_xport.h"
#include "dpvd.h"

#define NRECV 32u
#define NSEND 256u                  /* a dead process's teardown (up to 256 MADs) in one go */
#define GRH 40u
#define RSLOT (GRH + DPV_CMRT_MAD_SIZE)
#define SQ_STRIDE 128u              /* 64-byte WQE + one SGE, a power of two */
#define RQ_STRIDE 32u               /* 16-byte WQE + one SGE */
#define CQ_SIZE 512u                /* > NSEND + NRECV: never overruns */
#define NAH 64u
#define ALIGN64(x) (((x) + 63u) & ~(size_t)63u)

struct cm_port {
	bool ok;
	uint32_t dev, ctx, cq, key;
	uint8_t *mem;                   /* our mapping (also the "application" address) */
	size_t len;
	struct dpv_ring_hdr *sq, *rq, *cqr;
	uint8_t *rbuf, *sbuf;
	uint32_t sq_pi, rq_pi, cq_ci, sq_done;
	struct dpvd_obj *qp;
	uint32_t pd;
	struct {
		uint8_t gid[16];
		uint32_t handle;
	} ah[NAH];
	uint32_t nah;
	uint8_t lgid4[16], lgid6[16];
	bool has4, has6;
	struct dpv_cmrt *rt;            /* the CM runtime on this port's rings */
};

static struct dpvd_client g_self;
static struct cm_port g_port[DPV_MAX_PORTS];
static int g_chan[2] = {-1, -1};   /* completion channel: read end polled, write end per CQ */
static bool g_started, g_opened;

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* One request of g_self through the handlers applications' commands run. */
static int req(uint16_t op, void *body, size_t len, int fd)
{
	struct dpv_shm_msg m;
	int fds[DPV_SHM_MAX_FDS] = {fd, -1}, out[DPV_SHM_MAX_FDS];
	unsigned int n = 0;
	memset(&m, 0, sizeof(m));
	m.h.magic = DPV_SHM_MAGIC;
	m.h.op = op;
	m.h.len = (uint16_t)(sizeof(m.h) + dpv_shm_body_len(op));
	memcpy(&m.u, body, len);
	dpvd_client_request(&g_self, &m, fds, out, &n);
	for (unsigned int i = 0; i < n; i++)
		close(out[i]);
	memcpy(body, &m.u, len);
	return m.h.status;
}

static int reserve(enum dpv_obj_type t, uint32_t *num)
{
	struct dpv_shm_num n = {.type = t};
	int e = req(DPV_SHM_NUM_RESERVE, &n, sizeof(n), -1);
	*num = n.num;
	return e;
}

static uint64_t caddr(const void *p)
{
	return (uint64_t)(uintptr_t)p;
}

/* The memfd region: SQ, RQ, CQ rings, then receive and send buffers. */
static int region(struct cm_port *p)
{
	size_t sq = ALIGN64(dpv_ring_bytes(NSEND, SQ_STRIDE)), rq = ALIGN64(dpv_ring_bytes(NRECV, RQ_STRIDE));
	size_t cq = ALIGN64(dpv_ring_bytes(CQ_SIZE, sizeof(struct dpv_cqe)));
	p->len = (sq + rq + cq + NRECV * RSLOT + NSEND * DPV_CMRT_MAD_SIZE + 4095) & ~(size_t)4095;
	int fd = memfd_create("dpverbsd-cm", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return -errno;
	void *m = MAP_FAILED;
	if (ftruncate(fd, (off_t)p->len) == 0 &&
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) == 0)
		m = mmap(NULL, p->len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED) {
		close(fd);
		return -ENOMEM;
	}
	p->mem = m;
	p->sq = (struct dpv_ring_hdr *)p->mem;
	p->rq = (struct dpv_ring_hdr *)(p->mem + sq);
	p->cqr = (struct dpv_ring_hdr *)(p->mem + sq + rq);
	p->rbuf = p->mem + sq + rq + cq;
	p->sbuf = p->rbuf + NRECV * RSLOT;
	dpv_ring_init(p->sq, DPV_RING_SQ, NSEND, SQ_STRIDE);
	dpv_ring_init(p->rq, DPV_RING_RQ, NRECV, RQ_STRIDE);
	dpv_ring_init(p->cqr, DPV_RING_CQ, CQ_SIZE, sizeof(struct dpv_cqe));
	struct dpv_shm_mem r = {.addr = caddr(p->mem), .size = p->len};
	int e = req(DPV_SHM_MEM_ADD, &r, sizeof(r), fd);
	close(fd);
	return e;
}

/* Context, PD, MR over the region, the CQ with the completion channel. */
static int objects(struct cm_port *p)
{
	int pfd[2];
	if (pipe2(pfd, O_CLOEXEC | O_NONBLOCK) != 0)
		return -errno;
	struct dpv_shm_dev_ref dr = {.dev = p->dev};
	int e = req(DPV_SHM_CTX_OPEN, &dr, sizeof(dr), pfd[1]);
	close(pfd[0]); /* asynchronous events of our objects: nobody reads them */
	close(pfd[1]);
	p->ctx = dr.ctx;
	struct dpv_shm_pd pd = {.dev = p->dev};
	e = e ? e : reserve(DPV_OBJ_PD, &pd.pdn);
	e = e ? e : req(DPV_SHM_PD_ALLOC, &pd, sizeof(pd), -1);
	p->pd = pd.pdn;
	uint32_t mr = 0;
	e = e ? e : reserve(DPV_OBJ_MR, &mr);
	struct dpv_shm_mr r = {.dev = p->dev, .key = mr << 8 | 0x5a, .pd = p->pd, .access = IBV_ACCESS_LOCAL_WRITE,
			       .addr = caddr(p->mem), .iova = caddr(p->mem), .length = p->len};
	e = e ? e : req(DPV_SHM_MR_REG, &r, sizeof(r), -1);
	p->key = r.key;
	struct dpv_shm_cq c = {.dev = p->dev, .ctx = p->ctx, .ring = caddr(p->cqr), .ring_size = CQ_SIZE,
			       .has_channel = 1};
	e = e ? e : reserve(DPV_OBJ_CQ, &c.handle);
	int cfd = e ? -1 : fcntl(g_chan[1], F_DUPFD_CLOEXEC, 0);
	e = e ? e : req(DPV_SHM_CQ_CREATE, &c, sizeof(c), cfd);
	p->cq = c.handle;
	return e;
}

static int modify(uint32_t qpn, enum ibv_qp_state cur, enum ibv_qp_state to, int mask, struct ibv_qp_attr *a)
{
	struct dpv_shm_qp_modify m = {.qpn = qpn, .mask = mask | IBV_QP_STATE, .cur = cur, .to = to, .attr = *a};
	m.attr.qp_state = to;
	return req(DPV_SHM_QP_MODIFY, &m, sizeof(m), -1);
}

static void post_recv(struct cm_port *p, uint32_t slot)
{
	struct dpv_recv_wqe *w = dpv_ring_slot(p->rq, p->rq_pi, NRECV, RQ_STRIDE);
	w->wr_id = slot;
	w->num_sge = 1;
	w->sge[0] = (struct dpv_sge){.addr = caddr(p->rbuf + (size_t)slot * RSLOT), .length = RSLOT, .lkey = p->key};
	atomic_store_explicit(&p->rq->pi, ++p->rq_pi, memory_order_release);
}

/* The GSI QP (slot: the process' range, here the daemon's), RTS, receives posted. */
static int gsi_qp(struct cm_port *p, uint32_t *prefix, uint32_t *mask)
{
	struct dpv_shm_qp q = {.dev = p->dev, .ctx = p->ctx, .type = IBV_QPT_UD, .sq = caddr(p->sq),
			       .rq = caddr(p->rq), .sq_size = NSEND, .sq_stride = SQ_STRIDE, .rq_size = NRECV,
			       .rq_stride = RQ_STRIDE, .scq = p->cq, .rcq = p->cq, .pd = p->pd, .gsi = 1,
			       .cap = {.max_send_wr = NSEND, .max_recv_wr = NRECV, .max_send_sge = 1,
				       .max_recv_sge = 1}};
	int e = reserve(DPV_OBJ_QP, &q.qpn);
	e = e ? e : req(DPV_SHM_QP_CREATE, &q, sizeof(q), -1);
	if (e)
		return e;
	p->qp = dpvd_obj_get(&g_self, DPV_OBJ_QP, q.qpn, true);
	*prefix = q.gsi_prefix;
	*mask = q.gsi_mask;
	struct ibv_qp_attr a = {.port_num = DPV_PORT_NUM, .qkey = DPV_CMRT_GSI_QKEY};
	e = modify(q.qpn, IBV_QPS_RESET, IBV_QPS_INIT, IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY, &a);
	e = e ? e : modify(q.qpn, IBV_QPS_INIT, IBV_QPS_RTR, 0, &a);
	e = e ? e : modify(q.qpn, IBV_QPS_RTR, IBV_QPS_RTS, IBV_QP_SQ_PSN, &a);
	for (uint32_t i = 0; !e && i < NRECV; i++)
		post_recv(p, i);
	return e;
}

static const uint8_t v4map[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

static void local_gids(struct cm_port *p)
{
	for (uint32_t i = 0; i < DPV_GID_TABLE_LEN; i++) {
		struct dpv_gid g;
		if (dpv_host_query_gid(p->dev, i, &g) != 0 || !g.valid)
			continue;
		bool v4 = memcmp(g.raw, v4map, sizeof(v4map)) == 0;
		if (v4 && !p->has4) {
			memcpy(p->lgid4, g.raw, 16);
			p->has4 = true;
		} else if (!v4 && !p->has6) {
			memcpy(p->lgid6, g.raw, 16);
			p->has6 = true;
		}
	}
}

/* The AH to gid, made on first use (at most NAH peers; then the oldest goes). */
static int ah_for(struct cm_port *p, const uint8_t gid[16], uint32_t *handle)
{
	for (uint32_t i = 0; i < p->nah; i++)
		if (memcmp(p->ah[i].gid, gid, 16) == 0) {
			*handle = p->ah[i].handle;
			return 0;
		}
	bool v4 = memcmp(gid, v4map, sizeof(v4map)) == 0;
	if (v4 ? !p->has4 : !p->has6)
		return -ENETUNREACH;
	struct dpv_shm_ah a = {.dev = p->dev, .pd = p->pd, .ip_ver = v4 ? 4 : 6, .hop_limit = 64};
	memcpy(a.sgid, v4 ? p->lgid4 : p->lgid6, 16);
	memcpy(a.dgid, gid, 16);
	if (p->nah == NAH) { /* a destroyed AH only fails WQEs still naming it: ours completed */
		struct dpv_shm_ah old = {.handle = p->ah[0].handle};
		req(DPV_SHM_AH_DESTROY, &old, sizeof(old), -1);
		struct dpv_shm_num n = {.type = DPV_OBJ_AH, .num = old.handle};
		req(DPV_SHM_NUM_RELEASE, &n, sizeof(n), -1);
		memmove(&p->ah[0], &p->ah[1], (NAH - 1) * sizeof(p->ah[0]));
		p->nah--;
	}
	int e = reserve(DPV_OBJ_AH, &a.handle);
	e = e ? e : req(DPV_SHM_AH_CREATE, &a, sizeof(a), -1);
	if (e)
		return e;
	memcpy(p->ah[p->nah].gid, gid, 16);
	p->ah[p->nah++].handle = a.handle;
	*handle = a.handle;
	return 0;
}

/* Send one MAD to QP qpn (0: 1) of gid (the runtime's transport). */
static int port_send(void *arg, const uint8_t gid[16], uint32_t qpn, const uint8_t mad[DPV_CMRT_MAD_SIZE])
{
	struct cm_port *p = arg;
	uint32_t ah;
	if (p->sq_pi - p->sq_done >= NSEND)
		return -EAGAIN;
	int e = ah_for(p, gid, &ah);
	if (e)
		return e;
	uint8_t *buf = p->sbuf + (size_t)(p->sq_pi % NSEND) * DPV_CMRT_MAD_SIZE;
	memcpy(buf, mad, DPV_CMRT_MAD_SIZE);
	struct dpv_send_wqe *w = dpv_ring_slot(p->sq, p->sq_pi, NSEND, SQ_STRIDE);
	memset(w, 0, sizeof(*w));
	w->wr_id = p->sq_pi;
	w->opcode = IBV_WR_SEND;
	w->flags = DPV_WQE_F_SIGNALED;
	w->num_sge = 1;
	w->length = DPV_CMRT_MAD_SIZE;
	w->ud.ah = ah;
	w->ud.remote_qpn = qpn ? qpn : 1;
	w->ud.remote_qkey = DPV_CMRT_GSI_QKEY;
	dpv_wqe_sge(w)[0] = (struct dpv_sge){.addr = caddr(buf), .length = DPV_CMRT_MAD_SIZE, .lkey = p->key};
	atomic_store_explicit(&p->sq->pi, ++p->sq_pi, memory_order_release);
	dpv_host_sq_doorbell(p->dev, p->qp->drv);
	return 0;
}

static int port_open(struct cm_port *p, uint32_t dev)
{
	uint32_t prefix = 0, mask = 0;
	p->dev = dev;
	local_gids(p);
	int e = region(p);
	e = e ? e : objects(p);
	e = e ? e : gsi_qp(p, &prefix, &mask);
	if (e)
		return e;
	/* no event callback: no listener, no connection, nothing reaches us but
	 * the answers the runtime's agent makes itself */
	struct dpv_host_dev hd = {0};
	dpv_host_dev_query(dev, &hd);
	struct dpv_cmrt_xport_cfg cfg = {.ca_guid = hd.node_guid, .max_ids = 16,
					 .seed = now_ns() ^ dev, .id_prefix = prefix, .id_mask = mask};
	struct dpv_cmrt_xport xp = {.send = port_send, .arg = p};
	p->rt = dpv_cmrt_open_xport(&cfg, &xp);
	e = p->rt ? 0 : -errno;
	atomic_store_explicit(&p->cqr->arm, DPV_CQ_ARM_NEXT, memory_order_release);
	return e;
}

int dpvd_cm_start(void)
{
	if (pipe2(g_chan, O_CLOEXEC | O_NONBLOCK) != 0)
		return -1;
	g_self.sock = -1;
	g_self.pid = getpid();
	g_self.id = dpvd_global.next_id++;
	for (unsigned int i = 0; i < DPVD_MAX_CTX; i++)
		g_self.ctx[i].async_fd = g_self.ctx[i].token_fd = -1;
	TAILQ_INIT(&g_self.objs);
	TAILQ_INIT(&g_self.mem);
	TAILQ_INIT(&g_self.pdrefs);
	TAILQ_INIT(&g_self.xrefs);
	TAILQ_INIT(&g_self.dmrefs);
	struct dpv_shm_hello h = {.version = DPV_SHM_VERSION};
	/* the lowest slot is the daemon's: its endpoint is the fallback */
	if (req(DPV_SHM_HELLO, &h, sizeof(h), -1) != 0 || dpvd_gsi_reserve(&g_self, 0) != 0) {
		close(g_chan[0]);
		close(g_chan[1]);
		g_chan[0] = g_chan[1] = -1;
		return -1;
	}
	g_started = true;
	return g_chan[0];
}

void dpvd_cm_ensure(void)
{
	if (!g_started || g_opened)
		return;
	g_opened = true;
	for (uint32_t d = 0; d < dpvd_global.n_devs && d < DPV_MAX_PORTS; d++) {
		int e = port_open(&g_port[d], d);
		g_port[d].ok = e == 0;
		if (e)
			DPVD_LOG(WARNING, "device %u: the daemon's CM endpoint on QP 1: %s", d, strerror(-e));
	}
}

/* A completion of port p. */
static void port_cqe(struct cm_port *p, const struct dpv_cqe *c, uint64_t now)
{
	if (c->flags & DPV_CQE_F_SQ) {
		p->sq_done = c->wqe_index + 1; /* every earlier send is complete too */
		return;
	}
	uint32_t slot = (uint32_t)c->wr_id;
	if (slot >= NRECV)
		return;
	if (c->status == IBV_WC_SUCCESS && p->rt) /* the sender from the GRH area */
		dpv_cmrt_input_grh(p->rt, c->src_qp, p->rbuf + (size_t)slot * RSLOT, c->byte_len, now);
	if (c->status != IBV_WC_WR_FLUSH_ERR)
		post_recv(p, slot);
}

void dpvd_cm_poll(void)
{
	uint8_t junk[64];
	while (g_chan[0] >= 0 && read(g_chan[0], junk, sizeof(junk)) > 0)
		;
	uint64_t now = now_ns();
	for (uint32_t d = 0; d < DPV_MAX_PORTS; d++) {
		struct cm_port *p = &g_port[d];
		if (!p->ok)
			continue;
		for (int pass = 0; pass < 2; pass++) {
			while (p->cq_ci != atomic_load_explicit(&p->cqr->pi, memory_order_acquire)) {
				struct dpv_cqe c = *(struct dpv_cqe *)dpv_ring_slot(p->cqr, p->cq_ci, CQ_SIZE,
										    sizeof(struct dpv_cqe));
				atomic_store_explicit(&p->cqr->ci, ++p->cq_ci, memory_order_release);
				port_cqe(p, &c, now);
			}
			/* armed again, then looked at once more: nothing slips between */
			dpv_cq_ring_arm(p->cqr, DPV_CQ_ARM_NEXT);
		}
		dpv_cmrt_timer(p->rt, now);
	}
}

int dpvd_cm_timeout_ms(void)
{
	uint64_t next = DPV_CMRT_NO_DEADLINE, now = now_ns();
	for (uint32_t d = 0; d < DPV_MAX_PORTS; d++)
		if (g_port[d].ok) {
			uint64_t t = dpv_cmrt_next_deadline(g_port[d].rt);
			next = t < next ? t : next;
		}
	if (next == DPV_CMRT_NO_DEADLINE)
		return -1;
	return next <= now ? 0 : (int)((next - now) / 1000000u + 1);
}

int dpvd_cm_abandon(uint32_t dev, const struct dpv_cmrt_orphan *o)
{
	if (dev >= DPV_MAX_PORTS || !g_port[dev].ok)
		return -ENODEV;
	return dpv_cmrt_abandon(g_port[dev].rt, o);
}

struct dpvd_client *dpvd_cm_self(void)
{
	return &g_self;
}
