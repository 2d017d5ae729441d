/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fuzzer of dpverbsd's request path (apps/dpverbsd/dpvd_*.c): the daemon's
 * core is brought up in this process exactly as apps/dpverbsd does it
 * (dpv_host_start, a shared-mode configuration with two net_ring ports,
 * dpvd_init), several fake applications are attached with dpvd_client_new()
 * on one end of a socketpair, and dpvd_client_request() is called directly
 * with:
 *   (a) random messages: any op (invalid ones too), any length, random body,
 *       random descriptors attached;
 *   (b) structure-aware mutations of valid requests: a valid request of a
 *       random op whose fields (numbers, addresses, sizes, strides, ...) are
 *       replaced by interesting values: 0, 1, -1, UINT32_MAX, numbers of the
 *       same client, of ANOTHER client, freshly released numbers, addresses
 *       inside/outside the memfd regions of MEM_ADD, misaligned, overflowing;
 *   (c) valid requests (HELLO, CTX_OPEN with a pipe, MEM_ADD of a sealed
 *       memfd mapped here, NUM_RESERVE, PD_ALLOC, MR_REG, CQ_CREATE with a
 *       ring in a region, SRQ, AH, QP_CREATE, QP_MODIFY through the states,
 *       shared PDs, imported contexts, XRC domains, destroys, releases),
 *       which must succeed, interleaved with the others and with garbage
 *       written into the clients' own SQ/RQ rings and doorbell rings (the
 *       engine runs between requests, as the daemon's main thread does);
 *   (d) attacks: client Y names the objects of client X (QP_DESTROY,
 *       QP_MODIFY, QP_QUERY, NUM_RELEASE, CQ/SRQ/AH destroy, MR_DEREG,
 *       creation on X's reserved numbers): each must fail and X's object
 *       must still exist and answer X's QP_QUERY in the same state.
 * Clients are destroyed (dpvd_client_gone) and created all along.
 *
 * Invariants checked after every request:
 *   - the status is 0 or a negative errno; the answer's length is the
 *     header plus the op's body (the header alone for an unknown op);
 *     descriptors come back only with status 0; a wrong length gives
 *     -EINVAL, a command before HELLO -EPROTO, a second HELLO -EALREADY;
 *   - no other client's state changed (objects, numbers, engine objects,
 *     QP states, regions, contexts), and a failed request changed nothing
 *     of the requester's;
 *   - the daemon's books balance (WHITE-BOX audit): every object number in
 *     the pool is an object of a live client (or a PD held by sharers),
 *     every "uses" pointer names a live object, every user, reference,
 *     region-busy and XRC domain count equals what points at it, and the
 *     pool counts equal the objects;
 *   - periodically: the descriptors the process holds are exactly ours plus
 *     the daemon's (no descriptor leaked).
 * At the end every client is gone: every pool is empty (dpv_pool_count), no
 * XRC domain remains, and the process holds the descriptors it started
 * with. A crash (or an ASan/UBSan report) is caught by the supervising
 * parent process, which always removes the temporary directory and the EAL
 * runtime directory.
 *
 *   fuzz_daemon [SEED [ITERATIONS [SECONDS]]]
 *   env: DPV_FUZZ_SEED, DPV_FUZZ_ITERS (default 200000), DPV_FUZZ_SECONDS
 *   (default 5). The seed is printed; the request stream is a function of
 *   the seed and the daemon's answers (the engine's retransmission timers
 *   run on wall-clock time, which can make long runs diverge slightly).
 *
 * Prints "N passed, N failed" (dpvt_check.h); exit status 1 on a failure.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "dpv_port.h"  /* WHITE-BOX: dpv_progress_all (the daemon's inline engine) */
#include "dpv_verbs.h" /* WHITE-BOX: the core, the pools */
#include "dpvd.h"      /* WHITE-BOX: the daemon's state */
#include "dpvt_check.h"

/* ------------------------------------------------------------------ */
/* random numbers: SplitMix64, reproducible from the seed */

static uint64_t g_rng;

static uint64_t rnd(void)
{
	uint64_t z = (g_rng += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}
static uint32_t rn(uint32_t n)
{
	return n ? (uint32_t)(rnd() % n) : 0;
}
static bool chance(unsigned int pct)
{
	return rn(100) < pct;
}

/* ------------------------------------------------------------------ */
/* fake applications */

#define MAX_CLIENTS 6
#define MAX_REGIONS 6
#define MAX_QPT 32
#define REGION_MIN (64u << 10)

/* A region of a client: a sealed memfd mapped here at p (its address in
 * the client's requests), rings bump-allocated in it. */
struct region {
	uint8_t *p;
	size_t size, used;
};

/* Rings of a QP this client created (valid requests), for the engine
 * pokes: valid while the daemon's object has the same engine object. */
struct qpt {
	uint32_t qpn;
	void *drv;
	uint32_t dev;
	struct dpv_ring_hdr *sq, *rq;
	uint32_t sq_size, sq_stride, rq_size, rq_stride;
};

struct fclient {
	struct dpvd_client *c; /* NULL: the slot is free */
	int peer;              /* our end of the socketpair */
	uint8_t *db;           /* the doorbell rings (HELLO's memfd), mapped here */
	size_t db_bytes;
	struct region reg[MAX_REGIONS];
	unsigned int n_reg;
	int token[DPVD_MAX_CTX]; /* command descriptors of its contexts, -1 */
	struct qpt qp[MAX_QPT];
	unsigned int n_qp;
};

static struct fclient g_cl[MAX_CLIENTS];
static struct dpv_shm_hello g_w; /* a welcome (the same for every client) */
static bool g_have_w;
static uint64_t g_seq;
static char g_tmp[256];          /* the temporary directory */
static uint8_t g_heap[1 << 20] __attribute__((aligned(4096))); /* MRs of "process memory" */

/* numbers given back lately (NUM_RELEASE, clients gone) */
static struct {
	uint32_t type, num;
} g_released[32];
static unsigned int g_n_released;

static void released_add(uint32_t type, uint32_t num)
{
	g_released[g_n_released++ % RTE_DIM(g_released)].type = type;
	g_released[(g_n_released - 1) % RTE_DIM(g_released)].num = num;
}

/* shared PDs: ids and keys seen (SHPD_ALLOC answers) */
static struct {
	uint64_t id, key;
	uint32_t dev;
} g_shares[16];
static unsigned int g_n_shares;

/* statistics */
static uint64_t g_op_n[DPV_SHM_OP_NR], g_op_ok[DPV_SHM_OP_NR];
static uint64_t g_n_req, g_n_mode[5], g_n_ok, g_n_clients, g_n_gone, g_n_pokes, g_n_attacks;

/* ------------------------------------------------------------------ */
/* failure reporting */

static uint64_t g_seed, g_iter;
static int g_fatal; /* an audit failed: the state cannot be trusted, stop */

#define FAILF(...)                                                                      \
	do {                                                                            \
		dpvt_fail(__FILE__, __LINE__, "invariant", __VA_ARGS__);                \
		fprintf(stderr, "  (seed %" PRIu64 ", iteration %" PRIu64 ")\n", g_seed, g_iter); \
		if (dpvt_fail_count() >= 20)                                            \
			g_fatal = 1; /* enough to go on */                              \
	} while (0)

/* ------------------------------------------------------------------ */
/* descriptors */

static int fd_count(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;
	if (!d)
		return -1;
	for (struct dirent *e; (e = readdir(d));)
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n - 1; /* the directory's own */
}

static int new_pipe_end(bool write_end)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) != 0)
		return -1;
	close(p[write_end ? 0 : 1]);
	return p[write_end ? 1 : 0];
}

/* A memfd of size bytes; sealed against shrinking and growing if sealed. */
static int new_memfd(size_t size, bool sealed)
{
	int fd = memfd_create("fuzz-region", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return -1;
	if (ftruncate(fd, (off_t)size) != 0 ||
	    (sealed && fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) != 0)) {
		close(fd);
		return -1;
	}
	return fd;
}

enum fd_kind {
	FK_PIPE_W, FK_PIPE_R, FK_FILE, FK_DEVNULL, FK_MEMFD_UNSEALED, FK_MEMFD_WRONG, FK_MEMFD_SEALED,
	FK_MEMFD_WSEAL, FK_SOCKET, FK_EVENTFD, FK_DIR, FK_TOKEN, FK_NR,
};

static int token_of_someone(void)
{
	for (unsigned int k = 0; k < 4; k++) {
		struct fclient *f = &g_cl[rn(MAX_CLIENTS)];
		if (!f->c)
			continue;
		int i = (int)rn(DPVD_MAX_CTX);
		for (int j = 0; j < DPVD_MAX_CTX; j++)
			if (f->token[(i + j) % DPVD_MAX_CTX] >= 0)
				return fcntl(f->token[(i + j) % DPVD_MAX_CTX], F_DUPFD_CLOEXEC, 0);
	}
	return -1;
}

/* A fresh descriptor of a random kind (the request takes it). size: what a
 * memfd should measure (0: random). */
static int random_fd(size_t size)
{
	char path[300];
	if (!size)
		size = (size_t)(rn(16) + 1) << 12;
	switch ((enum fd_kind)rn(FK_NR)) {
	case FK_PIPE_W:
		return new_pipe_end(true);
	case FK_PIPE_R:
		return new_pipe_end(false);
	case FK_FILE: {
		snprintf(path, sizeof(path), "%s/file", g_tmp);
		int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
		if (fd >= 0 && ftruncate(fd, (off_t)size) != 0) {
			close(fd);
			return -1;
		}
		return fd;
	}
	case FK_DEVNULL:
		return open("/dev/null", O_RDWR | O_CLOEXEC);
	case FK_MEMFD_UNSEALED:
		return new_memfd(size, false);
	case FK_MEMFD_WRONG:
		return new_memfd(size > 4096 ? size - 4096 : size + 4096, true);
	case FK_MEMFD_SEALED:
		return new_memfd(size, true);
	case FK_MEMFD_WSEAL: {
		int fd = new_memfd(size, true);
		if (fd >= 0)
			fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE);
		return fd;
	}
	case FK_SOCKET: {
		int sp[2];
		if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) != 0)
			return -1;
		close(sp[1]);
		return sp[0];
	}
	case FK_EVENTFD:
		return eventfd(0, EFD_CLOEXEC);
	case FK_DIR:
		return open(g_tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	case FK_TOKEN:
		return token_of_someone();
	default:
		return -1;
	}
}

/* ------------------------------------------------------------------ */
/* WHITE-BOX: the daemon's state */

static struct dpvd_obj *pick_obj(struct dpvd_client *c, int type, int created)
{
	struct dpvd_obj *o, *pick = NULL;
	unsigned int n = 0;
	if (!c)
		return NULL;
	TAILQ_FOREACH(o, &c->objs, next) {
		if (type >= 0 && (int)o->type != type)
			continue;
		if (created >= 0 && o->created != (created != 0))
			continue;
		if (rn(++n) == 0)
			pick = o;
	}
	return pick;
}

static struct fclient *other_client(struct fclient *f)
{
	unsigned int i = rn(MAX_CLIENTS);
	for (unsigned int k = 0; k < MAX_CLIENTS; k++) {
		struct fclient *g = &g_cl[(i + k) % MAX_CLIENTS];
		if (g != f && g->c)
			return g;
	}
	return NULL;
}

static uint32_t pick_ctx(struct dpvd_client *c, uint32_t dev, bool any_dev)
{
	uint32_t pick = 0, n = 0;
	for (unsigned int i = 0; i < DPVD_MAX_CTX; i++)
		if (c->ctx[i].token_fd >= 0 && (any_dev || c->ctx[i].dev == dev) && rn(++n) == 0)
			pick = i + 1;
	return pick;
}

static bool ctx_slots_free(struct dpvd_client *c)
{
	for (unsigned int i = 0; i < DPVD_MAX_CTX; i++)
		if (c->ctx[i].async_fd < 0 && c->ctx[i].token_fd < 0)
			return true;
	return false;
}

/* A PD c may use on dev (its own or one it holds a handle on). */
static uint32_t pick_usable_pd(struct dpvd_client *c, uint32_t dev)
{
	uint32_t pick = 0, n = 0;
	struct dpvd_obj *o;
	TAILQ_FOREACH(o, &c->objs, next)
		if (o->type == DPV_OBJ_PD && o->created && o->dev == dev && dpvd_pd_usable(c, o->num) && rn(++n) == 0)
			pick = o->num;
	struct dpvd_pdref *r;
	TAILQ_FOREACH(r, &c->pdrefs, next)
		if (r->pd->dev == dev && rn(++n) == 0)
			pick = r->pd->num;
	return pick;
}

/* ------------------------------------------------------------------ */
/* the audit: the daemon's books balance */

struct live {
	struct dpvd_obj **v;
	size_t n, cap;
};

static int ptr_cmp(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t) * (void *const *)a, y = (uintptr_t) * (void *const *)b;
	return x < y ? -1 : x > y;
}

static void live_add(struct live *l, struct dpvd_obj *o)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 256;
		l->v = realloc(l->v, l->cap * sizeof(*l->v));
		if (!l->v)
			abort();
	}
	l->v[l->n++] = o;
}

static long live_find(const struct live *l, const void *o)
{
	size_t lo = 0, hi = l->n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if ((uintptr_t)l->v[mid] == (uintptr_t)o)
			return (long)mid;
		if ((uintptr_t)l->v[mid] < (uintptr_t)o)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

static bool xrcd_known(const struct dpvd_xrcd *x)
{
	struct dpvd_xrcd *y;
	TAILQ_FOREACH(y, &dpvd_global.xrcds, next)
		if (y == x)
			return true;
	return false;
}

/* Device memory: each one's handles are the processes' dmrefs, its MRs the
 * live MR objects on it, and each device's books the sum of its units. */
static bool audit_dm(char *why, size_t wl)
{
	uint64_t used[DPV_MAX_PORTS] = {0};
	struct dpvd_dm *dm;
	TAILQ_FOREACH(dm, &dpvd_global.dms, next) {
		uint32_t refs = 0, mrs = 0;
		struct dpvd_client *c;
		TAILQ_FOREACH(c, &dpvd_global.clients, next) {
			struct dpvd_dmref *r;
			TAILQ_FOREACH(r, &c->dmrefs, next)
				refs += r->dm == dm;
			struct dpvd_obj *o;
			TAILQ_FOREACH(o, &c->objs, next)
				mrs += o->type == DPV_OBJ_MR && o->created && o->dm == dm;
		}
		if (refs != dm->refs || mrs != dm->mrs || (!refs && !mrs) || dm->dev >= DPV_MAX_PORTS) {
			snprintf(why, wl, "device memory %u: refs %u (counted %u), mrs %u (counted %u), dev %u", dm->handle,
				 dm->refs, refs, dm->mrs, mrs, dm->dev);
			return false;
		}
		used[dm->dev] += dm->units;
	}
	for (unsigned int d = 0; d < DPV_MAX_PORTS; d++)
		if (used[d] != dpvd_global.dm_used[d]) {
			snprintf(why, wl, "device %u: %llu units of device memory used, the books say %llu", d,
				 (unsigned long long)used[d], (unsigned long long)dpvd_global.dm_used[d]);
			return false;
		}
	return true;
}

/* Returns false (with why) when something does not balance. */
static bool audit(char *why, size_t wl)
{
	if (!audit_dm(why, wl))
		return false;
	static struct live l;
	static uint32_t *users, *refs;
	static size_t ucap;
	struct dpvd_client *c;
	struct dpvd_obj *o;
	l.n = 0;
	TAILQ_FOREACH(c, &dpvd_global.clients, next) {
		TAILQ_FOREACH(o, &c->objs, next) {
			if (o->owner != c) {
				snprintf(why, wl, "object %p (type %d num %u) on the list of connection %u has owner %p",
					 (void *)o, o->type, o->num, c->id, (void *)o->owner);
				return false;
			}
			live_add(&l, o);
		}
	}
	if (l.n > 1)
		qsort(l.v, l.n, sizeof(*l.v), ptr_cmp);
	/* ownerless PDs are reachable only through the handles of sharers */
	TAILQ_FOREACH(c, &dpvd_global.clients, next) {
		struct dpvd_pdref *r;
		TAILQ_FOREACH(r, &c->pdrefs, next) {
			if (live_find(&l, r->pd) >= 0)
				continue;
			live_add(&l, r->pd);
			qsort(l.v, l.n, sizeof(*l.v), ptr_cmp);
		}
	}
	/* XRC target QPs whose creator is gone live through OPEN_QP handles */
	struct dpvd_qpopen *h;
	TAILQ_FOREACH(h, &dpvd_global.qpopens, next) {
		if (live_find(&l, h->qp) >= 0)
			continue;
		if (h->qp->owner || !h->qp->n_openers || h->qp->type != DPV_OBJ_QP) {
			snprintf(why, wl, "an OPEN_QP handle names %p (qp %u), no live QP of a connection", (void *)h->qp,
				 h->qp->num);
			return false;
		}
		live_add(&l, h->qp);
		qsort(l.v, l.n, sizeof(*l.v), ptr_cmp);
	}
	if (ucap < l.n) {
		ucap = l.n + 256;
		users = realloc(users, ucap * sizeof(*users));
		refs = realloc(refs, ucap * sizeof(*refs));
		if (!users || !refs)
			abort();
	}
	if (l.n) {
		memset(users, 0, l.n * sizeof(*users));
		memset(refs, 0, l.n * sizeof(*refs));
	}
	uint32_t count[DPV_OBJ_NR] = {0};
	for (size_t i = 0; i < l.n; i++) {
		o = l.v[i];
		if ((unsigned int)o->type >= DPV_OBJ_NR || o->type == DPV_OBJ_XRCD) {
			snprintf(why, wl, "object %p has type %d", (void *)o, o->type);
			return false;
		}
		count[o->type]++;
		if (dpv_pool_get(o->type, o->num) != o) {
			snprintf(why, wl, "%s %u: the pool has %p for its number, not the object %p",
				 dpv_pool_name(o->type), o->num, dpv_pool_get(o->type, o->num), (void *)o);
			return false;
		}
		for (unsigned int k = 0; k < RTE_DIM(o->uses); k++) {
			if (!o->uses[k])
				continue;
			long j = live_find(&l, o->uses[k]);
			if (j < 0) {
				snprintf(why, wl, "%s %u (connection %u) uses %p, which is no live object (freed?)",
					 dpv_pool_name(o->type), o->num, o->owner ? o->owner->id : 0, (void *)o->uses[k]);
				return false;
			}
			users[j]++;
		}
		if (!o->created) {
			bool clean = o->chan_fd < 0 && !o->drv && !o->xrcd && !o->ring[0] && !o->ring[1];
			for (unsigned int k = 0; k < RTE_DIM(o->uses); k++)
				clean = clean && !o->uses[k];
			if (!clean) {
				snprintf(why, wl, "%s %u is not created but holds resources", dpv_pool_name(o->type), o->num);
				return false;
			}
		} else if ((o->type == DPV_OBJ_QP || o->type == DPV_OBJ_CQ || o->type == DPV_OBJ_SRQ) && !o->drv) {
			snprintf(why, wl, "%s %u is created without an engine object", dpv_pool_name(o->type), o->num);
			return false;
		}
		if (o->created && o->type == DPV_OBJ_MR && (o->key >> 8) != o->num) {
			snprintf(why, wl, "mr %u has key %#x", o->num, o->key);
			return false;
		}
		if (o->xrcd && !xrcd_known(o->xrcd)) {
			snprintf(why, wl, "%s %u names a freed XRC domain", dpv_pool_name(o->type), o->num);
			return false;
		}
		for (unsigned int k = 0; k < 2; k++) {
			if (!o->ring[k])
				continue;
			struct dpvd_mem *m;
			bool found = false;
			if (o->owner)
				TAILQ_FOREACH(m, &o->owner->mem, next)
					found = found || m == o->ring[k];
			if (!found) {
				snprintf(why, wl, "%s %u has a ring in a region its owner does not have",
					 dpv_pool_name(o->type), o->num);
				return false;
			}
		}
	}
	TAILQ_FOREACH(c, &dpvd_global.clients, next) {
		struct dpvd_pdref *r;
		TAILQ_FOREACH(r, &c->pdrefs, next)
			refs[live_find(&l, r->pd)]++;
	}
	for (size_t i = 0; i < l.n; i++) {
		o = l.v[i];
		if (o->users != users[i]) {
			snprintf(why, wl, "%s %u: users %u, but %u objects use it", dpv_pool_name(o->type), o->num,
				 o->users, users[i]);
			return false;
		}
		if (o->type != DPV_OBJ_PD)
			continue;
		uint32_t want = (o->owner_handle ? 1u : 0u) + refs[i];
		if (o->refs != want || (o->created && !o->refs) || (!o->created && o->refs) ||
		    (!o->owner && (o->owner_handle || !refs[i]))) {
			snprintf(why, wl, "pd %u: refs %u (owner handle %d, %u sharers), created %d, owner %p", o->num,
				 o->refs, o->owner_handle, refs[i], o->created, (void *)o->owner);
			return false;
		}
	}
	for (unsigned int t = 0; t < DPV_OBJ_NR; t++) {
		uint32_t want = count[t];
		if (t == DPV_OBJ_XRCD) {
			struct dpvd_xrcd *x;
			want = 0;
			TAILQ_FOREACH(x, &dpvd_global.xrcds, next)
				want++;
		}
		if (dpv_pool_count((enum dpv_obj_type)t) != want) {
			snprintf(why, wl, "pool %s holds %u objects, the daemon knows %u", dpv_pool_name((enum dpv_obj_type)t),
				 dpv_pool_count((enum dpv_obj_type)t), want);
			return false;
		}
	}
	/* regions: busy counts, totals */
	TAILQ_FOREACH(c, &dpvd_global.clients, next) {
		struct dpvd_mem *m;
		uint64_t total = 0;
		TAILQ_FOREACH(m, &c->mem, next) {
			uint32_t busy = 0;
			TAILQ_FOREACH(o, &c->objs, next)
				busy += (o->ring[0] == m) + (o->ring[1] == m);
			if (m->busy != busy) {
				snprintf(why, wl, "connection %u: region %#" PRIx64 " busy %u, %u rings in it", c->id,
					 m->caddr, m->busy, busy);
				return false;
			}
			total += m->size;
		}
		if (c->mem_total != total) {
			snprintf(why, wl, "connection %u: mem_total %" PRIu64 ", regions %" PRIu64, c->id, c->mem_total,
				 total);
			return false;
		}
	}
	/* XRC domains: openings and users */
	struct dpvd_xrcd *x;
	TAILQ_FOREACH(x, &dpvd_global.xrcds, next) {
		uint32_t opens = 0, xu = 0;
		TAILQ_FOREACH(c, &dpvd_global.clients, next) {
			struct dpvd_xref *r;
			TAILQ_FOREACH(r, &c->xrefs, next)
				opens += r->x == x;
		}
		for (size_t i = 0; i < l.n; i++)
			xu += l.v[i]->xrcd == x;
		if (x->opens != opens || x->users != xu || (!opens && !xu) || dpv_pool_get(DPV_OBJ_XRCD, x->num) != x) {
			snprintf(why, wl, "xrcd %u: opens %u (%u openings), users %u (%u objects)", x->num, x->opens, opens,
				 x->users, xu);
			return false;
		}
	}
	TAILQ_FOREACH(c, &dpvd_global.clients, next) {
		struct dpvd_xref *r;
		TAILQ_FOREACH(r, &c->xrefs, next)
			if (!xrcd_known(r->x)) {
				snprintf(why, wl, "connection %u holds an opening of a freed XRC domain", c->id);
				return false;
			}
	}
	return true;
}

/* Descriptors the daemon holds for its clients. */
static int daemon_fds(void)
{
	int n = 0;
	struct dpvd_client *c;
	TAILQ_FOREACH(c, &dpvd_global.clients, next) {
		n++; /* the connection */
		for (unsigned int i = 0; i < DPVD_MAX_CTX; i++)
			n += (c->ctx[i].async_fd >= 0) + (c->ctx[i].token_fd >= 0);
		struct dpvd_obj *o;
		TAILQ_FOREACH(o, &c->objs, next)
			n += o->chan_fd >= 0;
	}
	struct dpvd_dm *dm; /* a memfd per device memory */
	TAILQ_FOREACH(dm, &dpvd_global.dms, next)
		n++;
	return n;
}

static int our_fds(void)
{
	int n = 0;
	for (unsigned int i = 0; i < MAX_CLIENTS; i++) {
		if (!g_cl[i].c)
			continue;
		n++;
		for (unsigned int k = 0; k < DPVD_MAX_CTX; k++)
			n += g_cl[i].token[k] >= 0;
	}
	return n;
}

/* ------------------------------------------------------------------ */
/* snapshots: what a request must not change */

struct snap {
	uint64_t *w;
	size_t n, cap;
};

static void put(struct snap *s, uint64_t v)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 1024;
		s->w = realloc(s->w, s->cap * sizeof(*s->w));
		if (!s->w)
			abort();
	}
	s->w[s->n++] = v;
}

static void snap_client(struct snap *s, struct dpvd_client *c)
{
	put(s, c->id);
	put(s, c->hello);
	put(s, (uintptr_t)c->db_mem);
	struct dpvd_obj *o;
	TAILQ_FOREACH(o, &c->objs, next) {
		put(s, (uintptr_t)o);
		put(s, (uint64_t)o->type << 32 | o->num);
		if (o->type == DPV_OBJ_PD) {
			/* another process may let go of a PD whose creator let go */
			put(s, o->owner_handle);
			put(s, o->owner_handle ? o->created : 2);
			put(s, o->dev);
			continue;
		}
		put(s, o->created);
		put(s, (uintptr_t)o->drv);
		put(s, o->dev);
		put(s, o->ctx);
		put(s, o->cookie);
		put(s, (uint64_t)o->chan_fd);
		put(s, (uintptr_t)o->ring[0]);
		put(s, (uintptr_t)o->ring[1]);
		put(s, (uintptr_t)o->xrcd);
		for (unsigned int k = 0; k < RTE_DIM(o->uses); k++)
			put(s, (uintptr_t)o->uses[k]);
		put(s, o->key);
		put(s, o->addr);
		put(s, o->length);
		put(s, (uint64_t)o->access);
		/* the daemon's record of the QP's state (the engine's own moves on
		 * by itself: retries exhausted, errors, on the engine's threads) */
		if (o->type == DPV_OBJ_QP && o->created)
			put(s, o->attr.qp_state);
	}
	struct dpvd_mem *m;
	TAILQ_FOREACH(m, &c->mem, next) {
		put(s, m->caddr);
		put(s, (uintptr_t)m->addr);
		put(s, m->size);
		put(s, m->busy);
	}
	for (unsigned int i = 0; i < DPVD_MAX_CTX; i++) {
		put(s, (uint64_t)c->ctx[i].async_fd << 32 | (uint32_t)c->ctx[i].token_fd);
		put(s, c->ctx[i].dev);
	}
	struct dpvd_pdref *r;
	TAILQ_FOREACH(r, &c->pdrefs, next)
		put(s, (uintptr_t)r->pd);
	struct dpvd_xref *x;
	TAILQ_FOREACH(x, &c->xrefs, next)
		put(s, (uintptr_t)x->x);
	put(s, ~0ull);
}

static void snap_others(struct snap *s, struct dpvd_client *me)
{
	s->n = 0;
	struct dpvd_client *c;
	TAILQ_FOREACH(c, &dpvd_global.clients, next)
		if (c != me)
			snap_client(s, c);
}

/* ------------------------------------------------------------------ */
/* one request */

enum expect {
	EXP_ANY,     /* only the generic invariants */
	EXP_OK,      /* a valid request: must succeed */
	EXP_OK_BUSY, /* valid, but the object may be in use: 0 or -EBUSY */
	EXP_FAIL,    /* must fail (another client's object) */
};

static const char *op_name(uint16_t op)
{
	return dpvd_op_name(op);
}

static void post_request(struct fclient *f, const struct dpv_shm_msg *req, struct dpv_shm_msg *m, int *outs,
			 unsigned int n_out);

/* Send m (its length as set) from f with fd0/fd1 attached (taken; -1:
 * none); checks the invariants; returns the status. out: the answer's
 * descriptor (-1 if none) if wanted, else it is closed. */
static int request(struct fclient *f, struct dpv_shm_msg *m, int fd0, int fd1, enum expect ex, int *out)
{
	static struct snap before, after, mine, mine_after;
	struct dpv_shm_msg req = *m;
	int fds[DPV_SHM_MAX_FDS] = {fd0, fd1}, outs[DPV_SHM_MAX_FDS] = {-1, -1};
	unsigned int n_out = 99;
	char why[512];
	bool hello_before = f->c->hello;
	if (out)
		*out = -1;
	m->h.magic = DPV_SHM_MAGIC;
	m->h.seq = ++g_seq;
	req.h = m->h;
	snap_others(&before, f->c);
	mine.n = 0;
	snap_client(&mine, f->c);
	g_n_req++;

	dpvd_client_request(f->c, m, fds, outs, &n_out);

	int st = m->h.status;
	size_t want = dpv_shm_body_len(req.h.op);
	bool ok = true;
	if (!(st == 0 || (st < 0 && st >= -4095))) {
		FAILF("%s (%u): status %d is neither 0 nor -errno", op_name(req.h.op), req.h.op, st);
		ok = false;
	}
	if (m->h.len != sizeof(m->h) + want) {
		FAILF("%s (%u): answer length %u, the op's is %zu", op_name(req.h.op), req.h.op, m->h.len,
		      sizeof(m->h) + want);
		ok = false;
	}
	if (m->h.op != req.h.op || m->h.seq != req.h.seq || m->h.magic != DPV_SHM_MAGIC) {
		FAILF("%s: the answer's header changed (op %u seq %" PRIu64 ")", op_name(req.h.op), m->h.op, m->h.seq);
		ok = false;
	}
	if (n_out > DPV_SHM_MAX_FDS || (st != 0 && n_out)) {
		FAILF("%s: %u descriptors with status %d", op_name(req.h.op), n_out, st);
		ok = false;
		n_out = n_out > DPV_SHM_MAX_FDS ? 0 : n_out;
	}
	for (unsigned int i = 0; i < n_out; i++)
		if (fcntl(outs[i], F_GETFD) < 0) {
			FAILF("%s: answer descriptor %d is not open", op_name(req.h.op), outs[i]);
			ok = false;
		}
	if (fds[0] != -1 || fds[1] != -1) {
		FAILF("%s: the request's descriptors were not taken or closed", op_name(req.h.op));
		ok = false;
	}
	/* what the request path must answer before any handler */
	int forced = 0;
	if (!want || req.h.len != sizeof(req.h) + want)
		forced = -EINVAL;
	else if (!hello_before && req.h.op != DPV_SHM_HELLO)
		forced = -EPROTO;
	else if (hello_before && req.h.op == DPV_SHM_HELLO)
		forced = -EALREADY;
	if (forced && st != forced) {
		FAILF("%s (%u, len %u, hello %d): status %d, expected %d", op_name(req.h.op), req.h.op, req.h.len,
		      hello_before, st, forced);
		ok = false;
	}
	switch (ex) {
	case EXP_OK:
		if (st != 0) {
			FAILF("valid %s refused: %d (%s)", op_name(req.h.op), st, strerror(-st));
			ok = false;
		}
		break;
	case EXP_OK_BUSY:
		if (st != 0 && st != -EBUSY) {
			FAILF("valid %s refused: %d (%s)", op_name(req.h.op), st, strerror(-st));
			ok = false;
		}
		break;
	case EXP_FAIL:
		if (st == 0) {
			FAILF("%s on another client's object succeeded", op_name(req.h.op));
			ok = false;
		}
		break;
	default:
		break;
	}
	if (st == 0)
		g_n_ok++;
	if (req.h.op < DPV_SHM_OP_NR) {
		g_op_n[req.h.op]++;
		g_op_ok[req.h.op] += st == 0;
	}
	/* no other client's state changed; a failed request changed nothing */
	snap_others(&after, f->c);
	if (before.n != after.n || memcmp(before.w, after.w, before.n * sizeof(*before.w))) {
		FAILF("%s (status %d) of connection %u changed another connection's state", op_name(req.h.op), st,
		      f->c->id);
		ok = false;
	}
	if (st != 0) {
		mine_after.n = 0;
		snap_client(&mine_after, f->c);
		if (mine.n != mine_after.n || memcmp(mine.w, mine_after.w, mine.n * sizeof(*mine.w))) {
			FAILF("%s failed (%d) but changed the state of its connection %u", op_name(req.h.op), st,
			      f->c->id);
			ok = false;
		}
	}
	if (!audit(why, sizeof(why))) {
		FAILF("after %s (status %d) of connection %u: %s", op_name(req.h.op), st, f->c->id, why);
		ok = false;
		g_fatal = 1;
	}
	dpvt_result(ok);
	post_request(f, &req, m, outs, n_out);
	if (out && n_out) {
		*out = outs[0];
		outs[0] = -1;
	}
	for (unsigned int i = 0; i < n_out; i++)
		if (outs[i] >= 0)
			close(outs[i]);
	return st;
}

/* Bookkeeping of our side after an answer (descriptors, regions, ...). */
static void post_request(struct fclient *f, const struct dpv_shm_msg *req, struct dpv_shm_msg *m, int *outs,
			 unsigned int n_out)
{
	if (m->h.status != 0)
		return;
	switch (req->h.op) {
	case DPV_SHM_HELLO:
		if (n_out && outs[0] >= 0 && !f->db) {
			size_t one = dpv_db_ring_bytes(m->u.hello.db_size);
			size_t bytes = RTE_ALIGN_CEIL(RTE_MAX((size_t)m->u.hello.n_db, (size_t)1) * one, 4096);
			void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, outs[0], 0);
			if (p != MAP_FAILED) {
				f->db = p;
				f->db_bytes = bytes;
			}
		}
		if (!g_have_w) {
			g_w = m->u.hello;
			g_have_w = true;
		}
		break;
	case DPV_SHM_CTX_OPEN:
	case DPV_SHM_CTX_IMPORT:
		if (n_out && m->u.dev.ctx >= 1 && m->u.dev.ctx <= DPVD_MAX_CTX) {
			int *t = &f->token[m->u.dev.ctx - 1];
			if (*t >= 0)
				close(*t);
			*t = outs[0];
			outs[0] = -1;
		}
		break;
	case DPV_SHM_CTX_CLOSE:
		if (req->u.dev.ctx >= 1 && req->u.dev.ctx <= DPVD_MAX_CTX && f->token[req->u.dev.ctx - 1] >= 0) {
			close(f->token[req->u.dev.ctx - 1]);
			f->token[req->u.dev.ctx - 1] = -1;
		}
		break;
	case DPV_SHM_NUM_RELEASE:
		released_add(req->u.num.type, req->u.num.num);
		break;
	case DPV_SHM_SHPD_ALLOC:
		g_shares[g_n_shares % RTE_DIM(g_shares)].id = m->u.shpd.id;
		g_shares[g_n_shares % RTE_DIM(g_shares)].key = req->u.shpd.key;
		g_shares[g_n_shares % RTE_DIM(g_shares)].dev = req->u.shpd.dev;
		g_n_shares++;
		break;
	default:
		break;
	}
}

static void msg_init(struct dpv_shm_msg *m, uint16_t op)
{
	memset(m, 0, sizeof(*m));
	m->h.op = op;
	m->h.len = (uint16_t)(sizeof(m->h) + dpv_shm_body_len(op));
}

/* ------------------------------------------------------------------ */
/* regions and rings */

/* Our regions that the daemon still has at our address (MEM_DEL, mutated
 * requests): the others are unmapped here. */
static void regions_sync(struct fclient *f)
{
	for (unsigned int i = 0; i < f->n_reg;) {
		struct region *r = &f->reg[i];
		struct dpvd_mem *m;
		bool found = false;
		TAILQ_FOREACH(m, &f->c->mem, next)
			found = found || (m->caddr == (uintptr_t)r->p && m->size == r->size);
		if (found) {
			i++;
			continue;
		}
		munmap(r->p, r->size);
		f->reg[i] = f->reg[--f->n_reg];
	}
}

/* A ring of bytes in one of f's regions (64-aligned), or 0. */
static uint64_t ring_alloc(struct fclient *f, size_t bytes)
{
	unsigned int start = rn(f->n_reg + 1);
	for (unsigned int k = 0; k < f->n_reg; k++) {
		struct region *r = &f->reg[(start + k) % f->n_reg];
		size_t at = RTE_ALIGN_CEIL(r->used, 64);
		if (at + bytes <= r->size) {
			r->used = at + bytes;
			return (uintptr_t)r->p + at;
		}
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* valid requests: built from the daemon's state of f (WHITE-BOX) */

struct vreq {
	struct dpv_shm_msg m;
	int fd[2];
	enum expect ex;
	/* MEM_ADD: our mapping, kept if the daemon takes it at our address */
	uint8_t *map;
	size_t map_size;
	/* QP_CREATE: the rings */
	bool is_qp;
};

static uint32_t n_devs(void)
{
	return g_have_w ? RTE_MAX(g_w.n_devs, 1u) : 2;
}

/* A valid GID index of dev and a destination GID of the same family on
 * another device (AV of INIT->RTR). */
static void av_fill(struct ibv_ah_attr *ah, uint32_t dev)
{
	memset(ah, 0, sizeof(*ah));
	ah->is_global = 1;
	ah->port_num = 1;
	if (!g_have_w)
		return;
	const struct dpv_shm_dev *sd = &g_w.devs[dev % DPV_SHM_MAX_DEVS];
	const struct dpv_shm_dev *dd = &g_w.devs[(dev + 1) % RTE_MAX(g_w.n_devs, 1u)];
	unsigned int s = rn(DPV_SHM_GIDS);
	for (unsigned int k = 0; k < DPV_SHM_GIDS; k++, s = (s + 1) % DPV_SHM_GIDS)
		if (sd->gid_valid[s])
			break;
	ah->grh.sgid_index = (uint8_t)s;
	for (unsigned int g = 0; g < DPV_SHM_GIDS; g++)
		if (dd->gid_valid[g] && dd->gid_ip_ver[g] == sd->gid_ip_ver[s]) {
			memcpy(ah->grh.dgid.raw, dd->gid[g], 16);
			break;
		}
	ah->grh.hop_limit = 64;
}

/* Fill v with a valid request of op for f; false when f is not ready for
 * it (then v holds a plausible request anyway, for mutations). */
static bool build_valid(struct fclient *f, uint16_t op, struct vreq *v)
{
	struct dpvd_client *c = f->c;
	struct dpv_shm_msg *m = &v->m;
	const struct dpv_params *p = dpvd_global.params;
	uint32_t dev = rn(n_devs());
	bool ok = c->hello || op == DPV_SHM_HELLO;
	struct dpvd_obj *o;
	msg_init(m, op);
	v->fd[0] = v->fd[1] = -1;
	v->ex = EXP_OK;
	v->map = NULL;
	v->is_qp = false;
	switch (op) {
	case DPV_SHM_HELLO:
		m->u.hello.version = DPV_SHM_VERSION;
		m->u.hello.pid = getpid();
		ok = !c->hello;
		break;
	case DPV_SHM_QUERY_PORT:
		m->u.port.dev = dev;
		break;
	case DPV_SHM_CTX_OPEN:
		m->u.dev.dev = dev;
		v->fd[0] = new_pipe_end(true);
		ok = ok && (pick_ctx(c, 0, true) == 0 || chance(30));
		if (!ctx_slots_free(c))
			v->ex = EXP_ANY; /* -EMFILE */
		break;
	case DPV_SHM_CTX_CLOSE:
		m->u.dev.ctx = pick_ctx(c, 0, true);
		ok = ok && m->u.dev.ctx;
		break;
	case DPV_SHM_CTX_IMPORT: {
		v->fd[0] = token_of_someone();
		v->fd[1] = new_pipe_end(true);
		ok = ok && v->fd[0] >= 0;
		if (!ctx_slots_free(c))
			v->ex = EXP_ANY; /* -EMFILE */
		break;
	}
	case DPV_SHM_MEM_ADD: {
		size_t size = (size_t)(rn(8) + 1) * REGION_MIN;
		int fd = new_memfd(size, true);
		void *p2 = fd >= 0 ? mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
		if (p2 == MAP_FAILED) {
			if (fd >= 0)
				close(fd);
			fd = -1;
			p2 = NULL;
		}
		v->fd[0] = fd;
		v->map = p2;
		v->map_size = size;
		m->u.mem.addr = (uintptr_t)p2;
		m->u.mem.size = size;
		ok = ok && p2 && f->n_reg < MAX_REGIONS;
		/* a mutated MEM_ADD may have claimed these addresses already */
		struct dpvd_mem *dm;
		TAILQ_FOREACH(dm, &c->mem, next)
			if (p2 && (uintptr_t)p2 < dm->caddr + dm->size && dm->caddr < (uintptr_t)p2 + size)
				v->ex = EXP_ANY;
		if (!ok)
			break;
		return true;
	}
	case DPV_SHM_MEM_DEL: {
		if (!f->n_reg) {
			ok = false;
			break;
		}
		struct region *r = &f->reg[rn(f->n_reg)];
		m->u.mem.addr = (uintptr_t)r->p;
		m->u.mem.size = r->size;
		v->ex = EXP_OK_BUSY;
		break;
	}
	case DPV_SHM_NUM_RESERVE: {
		static const uint32_t types[] = {DPV_OBJ_PD, DPV_OBJ_MR, DPV_OBJ_AH, DPV_OBJ_CQ, DPV_OBJ_QP, DPV_OBJ_SRQ};
		m->u.num.type = types[rn(RTE_DIM(types))];
		/* the table full (every client's numbers count): -ENOMEM */
		if (dpv_pool_count(m->u.num.type) >= dpv_pool_limit(m->u.num.type))
			v->ex = EXP_FAIL;
		break;
	}
	case DPV_SHM_NUM_RELEASE:
		o = pick_obj(c, -1, -1);
		ok = ok && o;
		if (o) {
			m->u.num.type = o->type;
			m->u.num.num = o->num;
			v->ex = EXP_OK_BUSY;
		}
		break;
	case DPV_SHM_PD_ALLOC:
		o = pick_obj(c, DPV_OBJ_PD, 0);
		ok = ok && o;
		m->u.pd.dev = dev;
		m->u.pd.pdn = o ? o->num : 0;
		break;
	case DPV_SHM_PD_DEALLOC:
		m->u.pd.pdn = pick_usable_pd(c, dev);
		m->u.pd.dev = dev;
		ok = ok && m->u.pd.pdn;
		v->ex = EXP_OK_BUSY;
		break;
	case DPV_SHM_MR_REG: {
		o = pick_obj(c, DPV_OBJ_MR, -1);
		if (o && o->created)
			dev = o->dev;
		m->u.mr.dev = dev;
		m->u.mr.pd = pick_usable_pd(c, dev);
		m->u.mr.key = o ? (o->created ? o->key : (o->num << 8 | (rn(255) + 1))) : 0;
		m->u.mr.access = (int32_t)(rnd() & (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
						    IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC));
		if (f->n_reg && chance(60)) {
			struct region *r = &f->reg[rn(f->n_reg)];
			uint64_t off = rn((uint32_t)r->size / 2);
			m->u.mr.addr = (uintptr_t)r->p + off;
			m->u.mr.length = rn((uint32_t)(r->size - off)) + 1;
		} else {
			uint64_t off = rn(sizeof(g_heap) / 2);
			m->u.mr.addr = (uintptr_t)g_heap + off;
			m->u.mr.length = rn((uint32_t)(sizeof(g_heap) - off)) + 1;
		}
		m->u.mr.iova = chance(50) ? m->u.mr.addr : rnd();
		struct dpvd_dmref *dr = TAILQ_FIRST(&c->dmrefs);
		if (dr && o && !o->created && chance(40)) { /* zero-based, on device memory it holds */
			m->u.mr.dev = dr->dm->dev;
			m->u.mr.pd = pick_usable_pd(c, dr->dm->dev);
			m->u.mr.dm = dr->dm->handle;
			m->u.mr.dm_offset = rn((uint32_t)dr->dm->length + 1);
			m->u.mr.length = rn((uint32_t)(dr->dm->length - m->u.mr.dm_offset) + 1);
			m->u.mr.addr = m->u.mr.iova = 0;
		}
		ok = ok && o && !o->mw && m->u.mr.pd; /* a window's number is no MR's */
		if (ok && o->created && o->dm)
			v->ex = EXP_FAIL; /* an MR on device memory is not re-registered */
		break;
	}
	case DPV_SHM_MR_DEREG:
		o = pick_obj(c, DPV_OBJ_MR, 1);
		ok = ok && o && !o->mw;
		m->u.mr.key = o ? o->key : 0;
		m->u.mr.dev = o ? o->dev : dev;
		v->ex = EXP_OK_BUSY; /* a window a poked WQE bound keeps it */
		break;
	case DPV_SHM_MW_ALLOC:
		o = pick_obj(c, DPV_OBJ_MR, 0);
		m->u.mw.dev = dev;
		m->u.mw.pd = pick_usable_pd(c, dev);
		m->u.mw.key = o ? (o->num << 8 | (rn(255) + 1)) : 0;
		m->u.mw.type = chance(50) ? IBV_MW_TYPE_1 : IBV_MW_TYPE_2;
		ok = ok && o && m->u.mw.pd;
		break;
	case DPV_SHM_MW_DEALLOC:
		o = pick_obj(c, DPV_OBJ_MR, 1);
		ok = ok && o && o->mw;
		m->u.mw.key = o ? o->key : 0;
		m->u.mw.dev = o ? o->dev : dev;
		break;
	case DPV_SHM_AH_CREATE: {
		o = pick_obj(c, DPV_OBJ_AH, 0);
		m->u.ah.dev = dev;
		m->u.ah.handle = o ? o->num : 0;
		m->u.ah.pd = pick_usable_pd(c, dev);
		struct ibv_ah_attr a;
		av_fill(&a, dev);
		memcpy(m->u.ah.dgid, a.grh.dgid.raw, 16);
		if (g_have_w)
			memcpy(m->u.ah.sgid, g_w.devs[dev].gid[a.grh.sgid_index], 16);
		m->u.ah.ip_ver = g_have_w ? g_w.devs[dev].gid_ip_ver[a.grh.sgid_index] : 4;
		if (m->u.ah.ip_ver != 4 && m->u.ah.ip_ver != 6)
			m->u.ah.ip_ver = 4;
		m->u.ah.hop_limit = 64;
		m->u.ah.flow_label = (uint32_t)rnd();
		ok = ok && o && m->u.ah.pd;
		break;
	}
	case DPV_SHM_AH_DESTROY:
		o = pick_obj(c, DPV_OBJ_AH, 1);
		ok = ok && o;
		m->u.ah.handle = o ? o->num : 0;
		m->u.ah.dev = o ? o->dev : dev;
		break;
	case DPV_SHM_CQ_CREATE: {
		o = pick_obj(c, DPV_OBJ_CQ, 0);
		uint32_t size = 2u << rn(7);
		m->u.cq.dev = dev;
		m->u.cq.handle = o ? o->num : 0;
		m->u.cq.ctx = pick_ctx(c, dev, false);
		m->u.cq.timestamps = rn(2);
		m->u.cq.ignore_overrun = rn(2);
		m->u.cq.ring_size = size;
		m->u.cq.ring = ring_alloc(f, dpv_ring_bytes(size, sizeof(struct dpv_cqe)));
		m->u.cq.cookie = rnd();
		if (m->u.cq.ring)
			dpv_ring_init((struct dpv_ring_hdr *)(uintptr_t)m->u.cq.ring, DPV_RING_CQ, size,
				      sizeof(struct dpv_cqe));
		if (chance(40)) {
			m->u.cq.has_channel = 1;
			v->fd[0] = new_pipe_end(true);
		}
		ok = ok && o && m->u.cq.ctx && m->u.cq.ring;
		break;
	}
	case DPV_SHM_CQ_RESIZE: {
		o = pick_obj(c, DPV_OBJ_CQ, 1);
		uint32_t size = 2u << rn(7);
		m->u.cq.handle = o ? o->num : 0;
		m->u.cq.ring_size = size;
		m->u.cq.ring = ring_alloc(f, dpv_ring_bytes(size, sizeof(struct dpv_cqe)));
		if (m->u.cq.ring)
			dpv_ring_init((struct dpv_ring_hdr *)(uintptr_t)m->u.cq.ring, DPV_RING_CQ, size,
				      sizeof(struct dpv_cqe));
		v->ex = EXP_ANY; /* -EINVAL when the CQEs not consumed do not fit */
		ok = ok && o && m->u.cq.ring;
		break;
	}
	case DPV_SHM_CQ_DESTROY:
		o = pick_obj(c, DPV_OBJ_CQ, 1);
		ok = ok && o;
		m->u.cq.handle = o ? o->num : 0;
		v->ex = EXP_OK_BUSY;
		break;
	case DPV_SHM_SRQ_CREATE: {
		o = pick_obj(c, DPV_OBJ_SRQ, 0);
		struct dpv_shm_srq *s = &m->u.srq;
		s->dev = dev;
		s->srqn = o ? o->num : 0;
		s->ctx = pick_ctx(c, dev, false);
		s->pd = pick_usable_pd(c, dev);
		s->max_sge = rn(RTE_MIN(p->max_srq_sge, 4u)) + 1;
		s->ring_stride = rte_align32pow2(sizeof(struct dpv_recv_wqe) + s->max_sge * sizeof(struct dpv_sge));
		s->ring_size = RTE_MIN(2u << rn(6), rte_align32pow2(p->max_srq_wr));
		s->ring = ring_alloc(f, dpv_ring_bytes(s->ring_size, s->ring_stride));
		if (s->ring)
			dpv_ring_init((struct dpv_ring_hdr *)(uintptr_t)s->ring, DPV_RING_SRQ, s->ring_size,
				      s->ring_stride);
		s->cookie = rnd();
		if (chance(30) && !TAILQ_EMPTY(&c->xrefs)) { /* an XRC SRQ */
			struct dpvd_xref *x = TAILQ_FIRST(&c->xrefs);
			struct dpvd_obj *cq = pick_obj(c, DPV_OBJ_CQ, 1);
			s->xrcd = x->x->num;
			s->cq = cq && cq->dev == dev ? cq->num : 0;
			ok = ok && s->cq;
		}
		ok = ok && o && s->ctx && s->pd && s->ring;
		break;
	}
	case DPV_SHM_SRQ_DESTROY:
		o = pick_obj(c, DPV_OBJ_SRQ, 1);
		ok = ok && o;
		m->u.srq.srqn = o ? o->num : 0;
		v->ex = EXP_OK_BUSY;
		break;
	case DPV_SHM_QP_CREATE: {
		static const enum ibv_qp_type types[] = {IBV_QPT_RC, IBV_QPT_RC, IBV_QPT_UC, IBV_QPT_UD,
							 IBV_QPT_XRC_SEND, IBV_QPT_XRC_RECV};
		struct dpv_shm_qp *q = &m->u.qp;
		enum ibv_qp_type t = types[rn(RTE_DIM(types))];
		o = pick_obj(c, DPV_OBJ_QP, 0);
		struct dpvd_obj *scq = NULL, *rcq = NULL, *srq = NULL;
		for (unsigned int k = 0; k < 4 && !(scq && scq->dev == dev); k++)
			scq = pick_obj(c, DPV_OBJ_CQ, 1);
		for (unsigned int k = 0; k < 4 && !(rcq && rcq->dev == dev); k++)
			rcq = pick_obj(c, DPV_OBJ_CQ, 1);
		q->dev = dev;
		q->qpn = o ? o->num : 0;
		q->ctx = pick_ctx(c, dev, false);
		q->type = t;
		q->pd = pick_usable_pd(c, dev);
		q->scq = scq && scq->dev == dev ? scq->num : 0;
		q->rcq = rcq && rcq->dev == dev ? rcq->num : 0;
		q->cap.max_send_wr = rn(16) + 1;
		q->cap.max_recv_wr = rn(16) + 1;
		q->cap.max_send_sge = rn(RTE_MIN(p->max_sge, 4u)) + 1;
		q->cap.max_recv_sge = rn(RTE_MIN(p->max_sge, 4u)) + 1;
		q->cap.max_inline_data = chance(50) ? rn(RTE_MIN(p->max_inline, 256u) + 1) : 0;
		q->sq_sig_all = rn(2);
		q->cookie = rnd();
		q->gsi = t == IBV_QPT_UD && chance(25); /* a GSI QP: one per process and port */
		struct dpvd_obj *g;
		TAILQ_FOREACH(g, &c->objs, next)
			if (q->gsi && g->type == DPV_OBJ_QP && g->created && g->gsi && g->dev == dev)
				q->gsi = 0;
		bool has_sq = t != IBV_QPT_XRC_RECV;
		if (t != IBV_QPT_XRC_SEND && t != IBV_QPT_XRC_RECV && chance(25)) {
			srq = pick_obj(c, DPV_OBJ_SRQ, 1);
			if (srq && srq->dev == dev && !srq->xrcd)
				q->srq = srq->num;
		}
		bool has_rq = has_sq && t != IBV_QPT_XRC_SEND && !q->srq;
		if (has_sq) {
			q->sq_size = rte_align32pow2(q->cap.max_send_wr);
			q->sq_stride = rte_align32pow2(sizeof(struct dpv_send_wqe) +
						       RTE_MAX(q->cap.max_send_sge * (uint32_t)sizeof(struct dpv_sge),
							       q->cap.max_inline_data));
			q->sq = ring_alloc(f, dpv_ring_bytes(q->sq_size, q->sq_stride));
			if (q->sq)
				dpv_ring_init((struct dpv_ring_hdr *)(uintptr_t)q->sq, DPV_RING_SQ, q->sq_size, q->sq_stride);
			ok = ok && q->sq && q->pd && q->scq;
		} else {
			struct dpvd_xref *x = TAILQ_FIRST(&c->xrefs);
			q->xrcd = x ? x->x->num : 0;
			ok = ok && q->xrcd;
		}
		if (has_rq) {
			q->rq_size = rte_align32pow2(q->cap.max_recv_wr);
			q->rq_stride = rte_align32pow2(sizeof(struct dpv_recv_wqe) +
						       RTE_MAX(q->cap.max_recv_sge, 1u) * (uint32_t)sizeof(struct dpv_sge));
			q->rq = ring_alloc(f, dpv_ring_bytes(q->rq_size, q->rq_stride));
			if (q->rq)
				dpv_ring_init((struct dpv_ring_hdr *)(uintptr_t)q->rq, DPV_RING_RQ, q->rq_size, q->rq_stride);
			ok = ok && q->rq;
		}
		if (t != IBV_QPT_XRC_SEND && t != IBV_QPT_XRC_RECV)
			ok = ok && q->rcq;
		ok = ok && o && q->ctx;
		v->is_qp = true;
		break;
	}
	case DPV_SHM_QP_DESTROY:
		o = pick_obj(c, DPV_OBJ_QP, 1);
		ok = ok && o;
		m->u.qp.qpn = o ? o->num : 0;
		if (o && o->n_openers)
			v->ex = EXP_OK_BUSY; /* ibv_open_qp handles on it */
		break;
	case DPV_SHM_QP_MODIFY: {
		struct dpv_shm_qp_modify *q = &m->u.qpm;
		o = pick_obj(c, DPV_OBJ_QP, 1);
		ok = ok && o;
		if (!o)
			break;
		enum ibv_qp_state cur = dpv_host_qp_state(o->dev, o->drv);
		enum ibv_qp_type t = o->qp_type;
		bool conn = t != IBV_QPT_UD;
		q->qpn = o->num;
		q->mask = IBV_QP_STATE;
		struct ibv_qp_attr *a = &q->attr;
		unsigned int r = rn(100);
		if (r < 8) {
			q->to = IBV_QPS_ERR;
		} else if (r < 14) {
			q->to = IBV_QPS_RESET;
		} else if (cur == IBV_QPS_RESET) {
			q->to = IBV_QPS_INIT;
			q->mask |= IBV_QP_PKEY_INDEX | IBV_QP_PORT | (conn ? IBV_QP_ACCESS_FLAGS : IBV_QP_QKEY);
			a->port_num = 1;
			a->qkey = 0x11111111;
			a->qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
					     IBV_ACCESS_REMOTE_ATOMIC;
		} else if (cur == IBV_QPS_INIT) {
			q->to = IBV_QPS_RTR;
			if (conn) {
				q->mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
				if (t == IBV_QPT_RC || t == IBV_QPT_XRC_RECV)
					q->mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
				av_fill(&a->ah_attr, o->dev);
				a->path_mtu = IBV_MTU_1024;
				struct dpvd_obj *peer = NULL;
				struct fclient *g = chance(50) ? other_client(f) : f;
				if (g)
					peer = pick_obj(g->c, DPV_OBJ_QP, 1);
				a->dest_qp_num = peer ? peer->num : (uint32_t)rnd() & DPV_QPN_MASK;
				a->rq_psn = (uint32_t)rnd() & 0xffffff;
				a->max_dest_rd_atomic = (uint8_t)rn(p->max_qp_rd_atom + 1);
				a->min_rnr_timer = (uint8_t)rn(32);
			}
		} else if (cur == IBV_QPS_RTR) {
			q->to = IBV_QPS_RTS;
			q->mask |= IBV_QP_SQ_PSN;
			a->sq_psn = (uint32_t)rnd() & 0xffffff;
			if (t == IBV_QPT_RC || t == IBV_QPT_XRC_SEND)
				q->mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
			if (t == IBV_QPT_XRC_RECV)
				q->mask |= IBV_QP_TIMEOUT;
			a->timeout = (uint8_t)rn(8);
			a->retry_cnt = (uint8_t)rn(8);
			a->rnr_retry = (uint8_t)rn(8);
			a->max_rd_atomic = (uint8_t)rn(p->max_qp_init_rd_atom + 1);
		} else if (cur == IBV_QPS_RTS && t != IBV_QPT_XRC_RECV && chance(30)) {
			q->to = IBV_QPS_SQD;
		} else {
			q->to = chance(50) ? IBV_QPS_ERR : IBV_QPS_RESET;
		}
		/* the engine may move the QP on (ERR) before the request */
		v->ex = EXP_ANY;
		q->cur = cur;
		break;
	}
	case DPV_SHM_QP_QUERY:
		o = pick_obj(c, DPV_OBJ_QP, 1);
		ok = ok && o;
		m->u.qpq.qpn = o ? o->num : 0;
		break;
	case DPV_SHM_SHPD_ALLOC:
		m->u.shpd.dev = dev;
		m->u.shpd.pdn = pick_usable_pd(c, dev);
		m->u.shpd.key = rnd();
		ok = ok && m->u.shpd.pdn;
		if (ok) {
			struct dpvd_obj *pd = dpv_pool_get(DPV_OBJ_PD, m->u.shpd.pdn);
			v->ex = pd && pd->shared ? EXP_ANY : EXP_OK;
		}
		break;
	case DPV_SHM_SHPD_SHARE: {
		if (!g_n_shares) {
			ok = false;
			break;
		}
		unsigned int i = rn(RTE_MIN(g_n_shares, (unsigned int)RTE_DIM(g_shares)));
		m->u.shpd.dev = g_shares[i].dev;
		m->u.shpd.id = g_shares[i].id;
		m->u.shpd.key = g_shares[i].key;
		v->ex = EXP_ANY; /* the PD may be gone, or held already */
		break;
	}
	case DPV_SHM_IMPORT_PD:
	case DPV_SHM_IMPORT_MR: {
		struct dpv_shm_import *im = &m->u.imp;
		uint32_t pick = 0, n = 0;
		for (unsigned int i = 0; i < DPVD_MAX_CTX; i++)
			if (c->ctx[i].token_fd >= 0 && c->ctx[i].import_from && rn(++n) == 0)
				pick = i + 1;
		im->ctx = pick;
		ok = ok && pick;
		if (!pick)
			break;
		struct dpvd_client *src = c->ctx[pick - 1].import_from;
		im->dev = c->ctx[pick - 1].dev;
		if (op == DPV_SHM_IMPORT_PD) {
			im->handle = pick_usable_pd(src, im->dev);
			ok = im->handle != 0;
		} else {
			o = pick_obj(src, DPV_OBJ_MR, 1);
			im->handle = o ? o->num : 0;
			ok = o && !o->mw && o->dev == im->dev; /* a window is not imported */
		}
		break;
	}
	case DPV_SHM_XRCD_OPEN: {
		struct dpv_shm_xrcd *x = &m->u.xrcd;
		x->dev = dev;
		if (chance(50)) {
			char path[300];
			snprintf(path, sizeof(path), "%s/xrcd%u", g_tmp, rn(3));
			v->fd[0] = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
			x->has_fd = 1;
			x->oflags = O_CREAT;
		}
		break;
	}
	case DPV_SHM_XRCD_CLOSE: {
		struct dpvd_xref *x = TAILQ_FIRST(&c->xrefs);
		ok = ok && x;
		m->u.xrcd.num = x ? x->x->num : 0;
		break;
	}
	case DPV_SHM_GSI_LISTEN: {
		/* a QP of c (a GSI one or not), a service ID of a small set: clashes */
		o = pick_obj(c, DPV_OBJ_QP, 1);
		m->u.gsil.qpn = o ? o->num : 0;
		m->u.gsil.on = chance(70);
		m->u.gsil.service_id = 0x0106000000000000ull | rn(4);
		ok = false; /* may clash with another client's listen: not asserted to succeed */
		break;
	}
	case DPV_SHM_OPEN_QP: {
		/* an XRC target QP of any client in a domain c holds */
		struct dpvd_xref *x;
		struct dpvd_client *oc;
		ok = false;
		TAILQ_FOREACH(x, &c->xrefs, next)
			TAILQ_FOREACH(oc, &dpvd_global.clients, next)
				TAILQ_FOREACH(o, &oc->objs, next)
					if (!ok && o->type == DPV_OBJ_QP && o->created && o->qp_type == IBV_QPT_XRC_RECV &&
					    o->xrcd == x->x) {
						m->u.oqp.xrcd = x->x->num;
						m->u.oqp.qpn = o->num;
						m->u.oqp.dev = o->dev;
						ok = true;
					}
		/* a handle of one of c's contexts, with a cookie of its own */
		m->u.oqp.ctx = ok ? pick_ctx(c, 0, true) : 0;
		m->u.oqp.cookie = rnd() | 1;
		ok = ok && c->hello && m->u.oqp.ctx;
		break;
	}
	case DPV_SHM_DM_ALLOC: {
		uint64_t size = g_have_w ? g_w.devs[dev % DPV_SHM_MAX_DEVS].dm_size : 0;
		m->u.dm.dev = dev;
		m->u.dm.length = size ? rn((uint32_t)size) + 1 : 64;
		m->u.dm.log_align = rn(DPV_DM_MAX_LOG_ALIGN + 1);
		uint64_t units = (m->u.dm.length + DPV_DM_UNIT - 1) / DPV_DM_UNIT;
		if (!size || dpvd_global.dm_used[dev] + units > size / DPV_DM_UNIT)
			v->ex = EXP_FAIL; /* EOPNOTSUPP, ENOMEM */
		break;
	}
	case DPV_SHM_DM_FREE: {
		struct dpvd_dmref *r = TAILQ_LAST(&c->dmrefs, dpvd_dmref_list);
		ok = ok && r;
		if (r) {
			m->u.dm.dev = r->dm->dev;
			m->u.dm.handle = r->dm->handle;
			v->ex = EXP_OK_BUSY; /* an MR of its own on it */
		}
		break;
	}
	case DPV_SHM_DM_IMPORT: {
		/* a context imported from a process that holds device memory */
		ok = false;
		for (unsigned int i = 0; i < DPVD_MAX_CTX && !ok; i++) {
			struct dpvd_ctx *x = &c->ctx[i];
			struct dpvd_dmref *r = x->token_fd >= 0 && x->import_from ? TAILQ_FIRST(&x->import_from->dmrefs)
										: NULL;
			if (r && r->dm->dev == x->dev) {
				m->u.dm.dev = x->dev;
				m->u.dm.ctx = i + 1;
				m->u.dm.handle = r->dm->handle;
				ok = true;
			}
		}
		ok = ok && c->hello;
		break;
	}
	default:
		ok = false;
		break;
	}
	if (!ok)
		v->ex = EXP_ANY;
	return ok;
}

/* After a QP_CREATE that succeeded: remember its rings for the pokes. */
static void qp_remember(struct fclient *f, const struct dpv_shm_qp *q)
{
	struct dpvd_obj *o = dpvd_obj_get(f->c, DPV_OBJ_QP, q->qpn, true);
	if (!o)
		return;
	struct qpt *t = NULL;
	for (unsigned int i = 0; i < f->n_qp; i++)
		if (f->qp[i].qpn == q->qpn)
			t = &f->qp[i];
	if (!t) {
		if (f->n_qp == MAX_QPT)
			t = &f->qp[rn(MAX_QPT)];
		else
			t = &f->qp[f->n_qp++];
	}
	t->qpn = q->qpn;
	t->drv = o->drv;
	t->dev = q->dev;
	/* the daemon's view of the rings (the engine reads them there): a
	 * mutated request may name a region by an address this process does
	 * not map at that place */
	t->sq = o->ring[0] ? (struct dpv_ring_hdr *)dpvd_mem_xlate(o->ring[0], q->sq) : NULL;
	t->rq = o->ring[1] ? (struct dpv_ring_hdr *)dpvd_mem_xlate(o->ring[1], q->rq) : NULL;
	t->sq_size = q->sq_size;
	t->sq_stride = q->sq_stride;
	t->rq_size = q->rq_size;
	t->rq_stride = q->rq_stride;
}

/* Send a built request; our side of a MEM_ADD follows the answer. */
static int send_vreq(struct fclient *f, struct vreq *v)
{
	int out;
	struct dpv_shm_msg req = v->m;
	int st = request(f, &v->m, v->fd[0], v->fd[1], v->ex, &out);
	v->fd[0] = v->fd[1] = -1;
	if (out >= 0)
		close(out);
	if (v->map) {
		if (st == 0 && req.u.mem.addr == (uintptr_t)v->map && req.u.mem.size == v->map_size &&
		    f->n_reg < MAX_REGIONS) {
			f->reg[f->n_reg++] = (struct region){.p = v->map, .size = v->map_size, .used = 0};
		} else {
			munmap(v->map, v->map_size); /* the daemon keeps its own mapping if it took it */
		}
		v->map = NULL;
	}
	if (st == 0 && req.h.op == DPV_SHM_QP_CREATE && req.h.len == sizeof(req.h) + sizeof(req.u.qp))
		qp_remember(f, &req.u.qp);
	regions_sync(f);
	return st;
}

/* ------------------------------------------------------------------ */
/* (b) structure-aware mutations */

enum fk {
	K_ANY8, K_ANY16, K_ANY32, K_ANY64, K_DEV, K_CTX, K_NUM, K_MRKEY, K_OBJTYPE, K_ADDR, K_LEN, K_SIZE,
	K_STRIDE, K_QPTYPE, K_STATE, K_MASK, K_BOOL, K_VERSION, K_SHAREID, K_DM,
};

struct field {
	uint16_t off, width;
	uint8_t kind, ntype; /* ntype: K_NUM's object type (0xff: any) */
};

#define FLD(s, mbr, k, t) {offsetof(struct s, mbr), sizeof(((struct s *)0)->mbr), (k), (t)}
#define ANYT 0xff

static const struct field f_hello[] = {FLD(dpv_shm_hello, version, K_VERSION, 0), FLD(dpv_shm_hello, pid, K_ANY32, 0)};
static const struct field f_port[] = {FLD(dpv_shm_port, dev, K_DEV, 0)};
static const struct field f_dev[] = {FLD(dpv_shm_dev_ref, dev, K_DEV, 0), FLD(dpv_shm_dev_ref, ctx, K_CTX, 0)};
static const struct field f_mem[] = {FLD(dpv_shm_mem, addr, K_ADDR, 0), FLD(dpv_shm_mem, size, K_LEN, 0)};
static const struct field f_num[] = {FLD(dpv_shm_num, type, K_OBJTYPE, 0), FLD(dpv_shm_num, num, K_NUM, ANYT)};
static const struct field f_pd[] = {FLD(dpv_shm_pd, dev, K_DEV, 0), FLD(dpv_shm_pd, pdn, K_NUM, DPV_OBJ_PD)};
static const struct field f_mr[] = {
	FLD(dpv_shm_mr, dev, K_DEV, 0),	    FLD(dpv_shm_mr, key, K_MRKEY, 0),	FLD(dpv_shm_mr, pd, K_NUM, DPV_OBJ_PD),
	FLD(dpv_shm_mr, access, K_ANY32, 0), FLD(dpv_shm_mr, addr, K_ADDR, 0),	FLD(dpv_shm_mr, iova, K_ANY64, 0),
	FLD(dpv_shm_mr, length, K_LEN, 0),	FLD(dpv_shm_mr, dm, K_DM, 0),	FLD(dpv_shm_mr, dm_offset, K_ANY64, 0),
};
static const struct field f_dm[] = {
	FLD(dpv_shm_dm, dev, K_DEV, 0),	   FLD(dpv_shm_dm, ctx, K_CTX, 0),	 FLD(dpv_shm_dm, handle, K_DM, 0),
	FLD(dpv_shm_dm, log_align, K_ANY32, 0), FLD(dpv_shm_dm, length, K_ANY64, 0),
};
static const struct field f_mw[] = {
	FLD(dpv_shm_mw, dev, K_DEV, 0), FLD(dpv_shm_mw, key, K_MRKEY, 0), FLD(dpv_shm_mw, pd, K_NUM, DPV_OBJ_PD),
	FLD(dpv_shm_mw, type, K_ANY32, 0),
};
static const struct field f_ah[] = {
	FLD(dpv_shm_ah, dev, K_DEV, 0),	      FLD(dpv_shm_ah, handle, K_NUM, DPV_OBJ_AH), FLD(dpv_shm_ah, pd, K_NUM, DPV_OBJ_PD),
	FLD(dpv_shm_ah, ip_ver, K_ANY8, 0),   FLD(dpv_shm_ah, tclass, K_ANY8, 0),	   FLD(dpv_shm_ah, hop_limit, K_ANY8, 0),
	FLD(dpv_shm_ah, flow_label, K_ANY32, 0), FLD(dpv_shm_ah, sgid, K_ANY64, 0),	   FLD(dpv_shm_ah, dgid, K_ANY64, 0),
};
static const struct field f_cq[] = {
	FLD(dpv_shm_cq, dev, K_DEV, 0),	       FLD(dpv_shm_cq, handle, K_NUM, DPV_OBJ_CQ), FLD(dpv_shm_cq, ctx, K_CTX, 0),
	FLD(dpv_shm_cq, timestamps, K_BOOL, 0), FLD(dpv_shm_cq, ring, K_ADDR, 0),	    FLD(dpv_shm_cq, ring_size, K_SIZE, 0),
	FLD(dpv_shm_cq, has_channel, K_BOOL, 0), FLD(dpv_shm_cq, cookie, K_ANY64, 0),
	FLD(dpv_shm_cq, ignore_overrun, K_BOOL, 0),
};
static const struct field f_srq[] = {
	FLD(dpv_shm_srq, dev, K_DEV, 0),	  FLD(dpv_shm_srq, srqn, K_NUM, DPV_OBJ_SRQ),
	FLD(dpv_shm_srq, ctx, K_CTX, 0),	  FLD(dpv_shm_srq, pd, K_NUM, DPV_OBJ_PD),
	FLD(dpv_shm_srq, xrcd, K_NUM, DPV_OBJ_XRCD), FLD(dpv_shm_srq, cq, K_NUM, DPV_OBJ_CQ),
	FLD(dpv_shm_srq, max_sge, K_SIZE, 0),	  FLD(dpv_shm_srq, ring_size, K_SIZE, 0),
	FLD(dpv_shm_srq, ring_stride, K_STRIDE, 0), FLD(dpv_shm_srq, ring, K_ADDR, 0),
	FLD(dpv_shm_srq, tm_ops, K_SIZE, 0),	  FLD(dpv_shm_srq, tm_tags, K_SIZE, 0),
};
static const struct field f_qp[] = {
	FLD(dpv_shm_qp, dev, K_DEV, 0),
	FLD(dpv_shm_qp, qpn, K_NUM, DPV_OBJ_QP),
	FLD(dpv_shm_qp, ctx, K_CTX, 0),
	FLD(dpv_shm_qp, type, K_QPTYPE, 0),
	FLD(dpv_shm_qp, sq, K_ADDR, 0),
	FLD(dpv_shm_qp, rq, K_ADDR, 0),
	FLD(dpv_shm_qp, sq_size, K_SIZE, 0),
	FLD(dpv_shm_qp, sq_stride, K_STRIDE, 0),
	FLD(dpv_shm_qp, rq_size, K_SIZE, 0),
	FLD(dpv_shm_qp, rq_stride, K_STRIDE, 0),
	FLD(dpv_shm_qp, scq, K_NUM, DPV_OBJ_CQ),
	FLD(dpv_shm_qp, rcq, K_NUM, DPV_OBJ_CQ),
	FLD(dpv_shm_qp, srq, K_NUM, DPV_OBJ_SRQ),
	FLD(dpv_shm_qp, pd, K_NUM, DPV_OBJ_PD),
	FLD(dpv_shm_qp, xrcd, K_NUM, DPV_OBJ_XRCD),
	FLD(dpv_shm_qp, sq_sig_all, K_BOOL, 0),
	FLD(dpv_shm_qp, cap.max_send_wr, K_SIZE, 0),
	FLD(dpv_shm_qp, cap.max_recv_wr, K_SIZE, 0),
	FLD(dpv_shm_qp, cap.max_send_sge, K_SIZE, 0),
	FLD(dpv_shm_qp, cap.max_recv_sge, K_SIZE, 0),
	FLD(dpv_shm_qp, cap.max_inline_data, K_SIZE, 0),
	FLD(dpv_shm_qp, gsi, K_BOOL, 0),
	FLD(dpv_shm_qp, has_rss, K_BOOL, 0),
	FLD(dpv_shm_qp, rss.n, K_SIZE, 0),
	FLD(dpv_shm_qp, rss.fields, K_ANY64, 0),
	FLD(dpv_shm_qp, rss.wqn[0], K_NUM, DPV_OBJ_QP),
	FLD(dpv_shm_qp, rss.wqn[1], K_NUM, DPV_OBJ_QP),
};
static const struct field f_qpm[] = {
	FLD(dpv_shm_qp_modify, qpn, K_NUM, DPV_OBJ_QP),
	FLD(dpv_shm_qp_modify, mask, K_MASK, 0),
	FLD(dpv_shm_qp_modify, cur, K_STATE, 0),
	FLD(dpv_shm_qp_modify, to, K_STATE, 0),
	FLD(dpv_shm_qp_modify, attr.qkey, K_ANY32, 0),
	FLD(dpv_shm_qp_modify, attr.rq_psn, K_ANY32, 0),
	FLD(dpv_shm_qp_modify, attr.sq_psn, K_ANY32, 0),
	FLD(dpv_shm_qp_modify, attr.dest_qp_num, K_NUM, DPV_OBJ_QP),
	FLD(dpv_shm_qp_modify, attr.qp_access_flags, K_ANY32, 0),
	FLD(dpv_shm_qp_modify, attr.path_mtu, K_ANY32, 0),
	FLD(dpv_shm_qp_modify, attr.pkey_index, K_ANY16, 0),
	FLD(dpv_shm_qp_modify, attr.alt_pkey_index, K_ANY16, 0),
	FLD(dpv_shm_qp_modify, attr.ah_attr.grh.sgid_index, K_ANY8, 0),
	FLD(dpv_shm_qp_modify, attr.ah_attr.is_global, K_ANY8, 0),
	FLD(dpv_shm_qp_modify, attr.ah_attr.port_num, K_ANY8, 0),
	FLD(dpv_shm_qp_modify, attr.alt_ah_attr.grh.sgid_index, K_ANY8, 0),
	FLD(dpv_shm_qp_modify, attr.alt_port_num, K_ANY8, 0),
	FLD(dpv_shm_qp_modify, attr.port_num, K_ANY8, 0),
	FLD(dpv_shm_qp_modify, attr.max_rd_atomic, K_ANY8, 0),
	FLD(dpv_shm_qp_modify, attr.max_dest_rd_atomic, K_ANY8, 0),
	FLD(dpv_shm_qp_modify, attr.min_rnr_timer, K_ANY8, 0),
	FLD(dpv_shm_qp_modify, attr.timeout, K_ANY8, 0),
	FLD(dpv_shm_qp_modify, attr.retry_cnt, K_ANY8, 0),
	FLD(dpv_shm_qp_modify, attr.rnr_retry, K_ANY8, 0),
	FLD(dpv_shm_qp_modify, attr.en_sqd_async_notify, K_ANY8, 0),
};
static const struct field f_qpq[] = {FLD(dpv_shm_qp_query, qpn, K_NUM, DPV_OBJ_QP)};
static const struct field f_shpd[] = {FLD(dpv_shm_shpd, dev, K_DEV, 0), FLD(dpv_shm_shpd, pdn, K_NUM, DPV_OBJ_PD),
				      FLD(dpv_shm_shpd, key, K_ANY64, 0), FLD(dpv_shm_shpd, id, K_SHAREID, 0)};
static const struct field f_imp[] = {FLD(dpv_shm_import, dev, K_DEV, 0), FLD(dpv_shm_import, ctx, K_CTX, 0),
				     FLD(dpv_shm_import, handle, K_NUM, ANYT)};
static const struct field f_xrcd[] = {FLD(dpv_shm_xrcd, dev, K_DEV, 0), FLD(dpv_shm_xrcd, oflags, K_ANY32, 0),
				      FLD(dpv_shm_xrcd, has_fd, K_BOOL, 0), FLD(dpv_shm_xrcd, num, K_NUM, DPV_OBJ_XRCD)};
static const struct field f_oqp[] = {FLD(dpv_shm_open_qp, dev, K_DEV, 0), FLD(dpv_shm_open_qp, xrcd, K_NUM, DPV_OBJ_XRCD),
				     FLD(dpv_shm_open_qp, qpn, K_NUM, DPV_OBJ_QP), FLD(dpv_shm_open_qp, ctx, K_CTX, 0),
				     FLD(dpv_shm_open_qp, cookie, K_ANY64, 0), FLD(dpv_shm_open_qp, close, K_BOOL, 0)};

static const struct field f_mcast[] = {FLD(dpv_shm_mcast, qpn, K_NUM, DPV_OBJ_QP),
				       FLD(dpv_shm_mcast, attach, K_BOOL, 0)};
static const struct field f_neigh[] = {FLD(dpv_shm_neigh, dev, K_DEV, 0)};
static const struct field f_flow[] = {FLD(dpv_shm_flow, qpn, K_NUM, DPV_OBJ_QP), FLD(dpv_shm_flow, create, K_BOOL, 0),
				      FLD(dpv_shm_flow, handle, K_ANY32, 0), FLD(dpv_shm_flow, rule.type, K_ANY8, 0),
				      FLD(dpv_shm_flow, rule.flags, K_ANY8, 0),
				      FLD(dpv_shm_flow, rule.priority, K_ANY16, 0),
				      FLD(dpv_shm_flow, rule.mask.w[0], K_ANY64, 0),
				      FLD(dpv_shm_flow, rule.val.w[0], K_ANY64, 0)};
static const struct field f_gsil[] = {FLD(dpv_shm_gsi_listen, qpn, K_NUM, DPV_OBJ_QP),
				      FLD(dpv_shm_gsi_listen, on, K_BOOL, 0),
				      FLD(dpv_shm_gsi_listen, service_id, K_ANY64, 0)};

static const struct field *op_fields(uint16_t op, unsigned int *n)
{
#define R(a)                     \
	do {                     \
		*n = RTE_DIM(a); \
		return a;        \
	} while (0)
	switch (op) {
	case DPV_SHM_HELLO: R(f_hello);
	case DPV_SHM_QUERY_PORT: R(f_port);
	case DPV_SHM_CTX_OPEN:
	case DPV_SHM_CTX_CLOSE:
	case DPV_SHM_CTX_IMPORT: R(f_dev);
	case DPV_SHM_MEM_ADD:
	case DPV_SHM_MEM_DEL: R(f_mem);
	case DPV_SHM_NUM_RESERVE:
	case DPV_SHM_NUM_RELEASE: R(f_num);
	case DPV_SHM_PD_ALLOC:
	case DPV_SHM_PD_DEALLOC: R(f_pd);
	case DPV_SHM_MR_REG:
	case DPV_SHM_MR_DEREG: R(f_mr);
	case DPV_SHM_AH_CREATE:
	case DPV_SHM_AH_DESTROY: R(f_ah);
	case DPV_SHM_CQ_CREATE:
	case DPV_SHM_CQ_DESTROY:
	case DPV_SHM_CQ_RESIZE: R(f_cq);
	case DPV_SHM_SRQ_CREATE:
	case DPV_SHM_SRQ_DESTROY: R(f_srq);
	case DPV_SHM_QP_CREATE:
	case DPV_SHM_QP_DESTROY: R(f_qp);
	case DPV_SHM_QP_MODIFY: R(f_qpm);
	case DPV_SHM_QP_QUERY: R(f_qpq);
	case DPV_SHM_SHPD_ALLOC:
	case DPV_SHM_SHPD_SHARE: R(f_shpd);
	case DPV_SHM_IMPORT_PD:
	case DPV_SHM_IMPORT_MR: R(f_imp);
	case DPV_SHM_XRCD_OPEN:
	case DPV_SHM_XRCD_CLOSE: R(f_xrcd);
	case DPV_SHM_OPEN_QP: R(f_oqp);
	case DPV_SHM_GSI_LISTEN: R(f_gsil);
	case DPV_SHM_MCAST: R(f_mcast);
	case DPV_SHM_NEIGH: R(f_neigh);
	case DPV_SHM_MW_ALLOC:
	case DPV_SHM_MW_DEALLOC: R(f_mw);
	case DPV_SHM_DM_ALLOC:
	case DPV_SHM_DM_FREE:
	case DPV_SHM_DM_IMPORT: R(f_dm);
	case DPV_SHM_FLOW: R(f_flow);
	default:
		*n = 0;
		return NULL;
	}
#undef R
}

static uint64_t any_int(void)
{
	static const uint64_t v[] = {0, 1, 2, 3, 7, 8, 15, 16, 63, 64, 65, 127, 128, 255, 256, 4095, 4096, 65535, 65536,
				     0x7fffffff, 0x80000000, 0xffffffff, 0x100000000ull, 0x7fffffffffffffffull,
				     0x8000000000000000ull, ~0ull, ~0ull - 1, ~0ull - 63, ~0ull - 4095};
	return chance(80) ? v[rn(RTE_DIM(v))] : rnd() >> rn(64);
}

/* An object number of type t: f's own, another client's, a released one,
 * the bounds of the number space, or anything. */
static uint32_t any_num(struct fclient *f, int t)
{
	if (t == ANYT || (t == DPV_OBJ_XRCD && chance(30)))
		t = (int)rn(DPV_OBJ_NR);
	unsigned int r = rn(100);
	if (t == DPV_OBJ_XRCD && r < 60) {
		struct dpvd_xrcd *x;
		uint32_t pick = 0, n = 0;
		TAILQ_FOREACH(x, &dpvd_global.xrcds, next)
			if (rn(++n) == 0)
				pick = x->num;
		if (pick)
			return pick;
	}
	if (r < 35) {
		struct dpvd_obj *o = pick_obj(f->c, t, -1);
		if (o)
			return o->num;
	} else if (r < 70) {
		struct fclient *g = other_client(f);
		struct dpvd_obj *o = g ? pick_obj(g->c, t, -1) : NULL;
		if (o)
			return o->num;
	} else if (r < 80 && g_n_released) {
		unsigned int i = rn(RTE_MIN(g_n_released, (unsigned int)RTE_DIM(g_released)));
		return g_released[i].num;
	} else if (r < 90) {
		uint32_t first, last;
		dpv_pool_range((enum dpv_obj_type)(t % DPV_OBJ_NR), &first, &last);
		static const int64_t d[] = {-1, 0, 1};
		return (uint32_t)((chance(50) ? first : last) + d[rn(3)]);
	}
	return (uint32_t)any_int();
}

static uint64_t any_addr(struct fclient *f)
{
	struct fclient *g = chance(75) ? f : other_client(f);
	struct dpvd_mem *m = NULL, *x;
	unsigned int n = 0;
	if (g)
		TAILQ_FOREACH(x, &g->c->mem, next)
			if (rn(++n) == 0)
				m = x;
	if (m && chance(80)) {
		static const int64_t off[] = {0, 1, 8, 63, 64, 128, 4096, -64, -1};
		switch (rn(6)) {
		case 0:
			return m->caddr;
		case 1:
			return m->caddr + m->size;
		case 2:
			return m->caddr + m->size - 64 * (rn(4) + 1);
		case 3:
			return m->caddr + (rnd() % m->size);
		case 4:
			return m->caddr + RTE_ALIGN_FLOOR(rnd() % m->size, 64);
		default:
			return m->caddr + (uint64_t)off[rn(RTE_DIM(off))];
		}
	}
	static const uint64_t a[] = {0, 1, 64, 4096, 0x7fffffffe000ull, 0x800000000000ull, 0xffff800000000000ull,
				     ~0ull - 63, ~0ull - 4095, ~0ull};
	if (chance(30))
		return (uintptr_t)g_heap + rn(sizeof(g_heap) + 1);
	return chance(70) ? a[rn(RTE_DIM(a))] : rnd();
}

static uint64_t field_value(struct fclient *f, const struct field *fl, const uint8_t *body)
{
	switch ((enum fk)fl->kind) {
	case K_DEV: {
		static const uint32_t v[] = {0, 1, 2, 7, 8, 9, 0xffffffff, 0x80000000};
		return v[rn(RTE_DIM(v))];
	}
	case K_CTX: {
		if (chance(40) && f->c) {
			uint32_t x = pick_ctx(f->c, 0, true);
			if (x)
				return x;
		}
		static const uint32_t v[] = {0, 1, 2, 63, 64, 65, 0xffffffff, 0x80000000};
		return v[rn(RTE_DIM(v))];
	}
	case K_NUM:
		return any_num(f, fl->ntype);
	case K_MRKEY:
		return (uint64_t)any_num(f, DPV_OBJ_MR) << 8 | rn(256);
	case K_OBJTYPE:
		return chance(80) ? rn(DPV_OBJ_NR + 2) : any_int();
	case K_ADDR:
		return any_addr(f);
	case K_LEN: {
		uint64_t base;
		memcpy(&base, body + (fl->off == offsetof(struct dpv_shm_mr, length) ? offsetof(struct dpv_shm_mr, addr) : 0),
		       8);
		switch (rn(8)) {
		case 0:
			return -base; /* addr + len wraps to 0 */
		case 1:
			return -base + 1;
		case 2:
			return 1ull << 34;
		case 3:
			return (1ull << 34) + 4096;
		default:
			return any_int();
		}
	}
	case K_SIZE: {
		static const uint32_t v[] = {0, 1, 2, 3, 4, 5, 16, 17, 64, 1024, 1u << 16, 1u << 24, (1u << 24) + 1,
					     1u << 25, 0x7fffffff, 0x80000000, 0xffffffff};
		return chance(70) ? v[rn(RTE_DIM(v))] : 1u << rn(32);
	}
	case K_STRIDE: {
		static const uint32_t v[] = {0, 1, 8, 15, 16, 17, 32, 48, 64, 80, 128, 4096, 1u << 16, 1u << 17,
					     0x80000000, 0xffffffff};
		return v[rn(RTE_DIM(v))];
	}
	case K_QPTYPE: {
		static const uint32_t v[] = {IBV_QPT_RC, IBV_QPT_UC, IBV_QPT_UD, IBV_QPT_RAW_PACKET, IBV_QPT_XRC_SEND,
					     IBV_QPT_XRC_RECV, IBV_QPT_DRIVER, 0, 1, 5, 0xffffffff};
		return v[rn(RTE_DIM(v))];
	}
	case K_STATE:
		return chance(80) ? rn(IBV_QPS_ERR + 3) : any_int();
	case K_MASK: {
		uint32_t m2;
		memcpy(&m2, body + fl->off, 4);
		switch (rn(5)) {
		case 0:
			return m2 ^ (1u << rn(32));
		case 1:
			return (IBV_QP_RATE_LIMIT << 1) - 1;
		case 2:
			return 0;
		case 3:
			return (uint32_t)rnd();
		default:
			return m2 | (1u << rn(26));
		}
	}
	case K_BOOL: {
		static const uint32_t v[] = {0, 1, 2, 0xffffffff};
		return v[rn(4)];
	}
	case K_VERSION: {
		static const uint32_t v[] = {DPV_SHM_VERSION, DPV_SHM_VERSION - 1, DPV_SHM_VERSION + 1, 0, 0xffffffff};
		return v[rn(5)];
	}
	case K_DM: { /* a device memory handle of any process, or anything */
		uint32_t pick = 0, n = 0;
		struct dpvd_dm *dm;
		TAILQ_FOREACH(dm, &dpvd_global.dms, next)
			if (rn(++n) == 0)
				pick = dm->handle;
		if (pick && chance(70))
			return pick;
		return chance(50) ? rn(4) : any_int();
	}
	case K_SHAREID:
		if (g_n_shares && chance(60))
			return g_shares[rn(RTE_MIN(g_n_shares, (unsigned int)RTE_DIM(g_shares)))].id ^
			       (chance(50) ? 0 : 1ull << rn(64));
		return any_int();
	default:
		return any_int();
	}
}

static void mutate(struct fclient *f, struct dpv_shm_msg *m)
{
	unsigned int n;
	const struct field *fl = op_fields(m->h.op, &n);
	size_t blen = dpv_shm_body_len(m->h.op);
	unsigned int k = rn(3) + 1;
	for (unsigned int i = 0; i < k; i++) {
		if (fl && n && chance(85)) {
			const struct field *x = &fl[rn(n)];
			uint64_t v = field_value(f, x, m->u.raw);
			memcpy(m->u.raw + x->off, &v, RTE_MIN((size_t)x->width, sizeof(v)));
		} else if (blen) {
			/* any aligned word, or a byte */
			unsigned int w = chance(50) ? 4 : chance(50) ? 8 : 1;
			if (blen < w)
				continue;
			size_t off = RTE_ALIGN_FLOOR(rn((uint32_t)(blen - w + 1)), w);
			uint64_t v = chance(50) ? any_int() : (uint64_t)any_num(f, ANYT);
			memcpy(m->u.raw + off, &v, w);
		}
	}
}

/* ------------------------------------------------------------------ */
/* the engine: garbage into a client's own rings, its doorbells rung */

/* dpv_db_ring_put with a bounded number of tries: after the scribbles
 * below the ring's head may say anything (only the producer spins on it;
 * the engine keeps its position in its own memory). */
static void db_put(struct dpv_db_ring *r, uint32_t mask, uint32_t val)
{
	for (unsigned int k = 0; k < 8; k++) {
		uint32_t pos = atomic_load_explicit(&r->head, memory_order_relaxed);
		struct dpv_db_slot *s = &r->slot[pos & mask];
		uint32_t seq = atomic_load_explicit(&s->seq, memory_order_acquire);
		if (seq != pos)
			continue;
		if (atomic_compare_exchange_strong(&r->head, &pos, pos + 1)) {
			s->val = val;
			atomic_store_explicit(&s->seq, pos + 1, memory_order_release);
			return;
		}
	}
}

static void poke(struct fclient *f)
{
	if (!f->n_qp || !f->db || !g_have_w)
		return;
	struct qpt *t = &f->qp[rn(f->n_qp)];
	struct dpvd_obj *o = dpvd_obj_get(f->c, DPV_OBJ_QP, t->qpn, true);
	if (!o || o->drv != t->drv)
		return; /* gone or another incarnation */
	unsigned int dbi = dpv_host_qp_db_index(t->dev, o->drv);
	size_t one = dpv_db_ring_bytes(g_w.db_size);
	if ((g_w.devs[t->dev].db_first + dbi + 1) * one > f->db_bytes)
		return;
	struct dpv_db_ring *db = (struct dpv_db_ring *)(f->db + (g_w.devs[t->dev].db_first + dbi) * one);
	struct dpvd_obj *mr = pick_obj(f->c, DPV_OBJ_MR, 1);
	if (mr && mr->mw)
		mr = NULL; /* a memory window: no memory of its own */
	struct dpvd_obj *ah = pick_obj(f->c, DPV_OBJ_AH, 1);
	bool rq = t->rq && (!t->sq || chance(35));
	struct dpv_ring_hdr *h = rq ? t->rq : t->sq;
	if (!h)
		return;
	uint32_t size = rq ? t->rq_size : t->sq_size, stride = rq ? t->rq_stride : t->sq_stride;
	uint32_t pi = atomic_load_explicit(&h->pi, memory_order_relaxed);
	unsigned int nw = rn(size) + 1;
	for (unsigned int i = 0; i < nw; i++) {
		uint8_t *e = (uint8_t *)h + DPV_RING_HDR_SIZE + (size_t)((pi + i) & (size - 1)) * stride;
		if (chance(10)) { /* pure garbage */
			for (uint32_t b = 0; b < stride; b += 8) {
				uint64_t r = rnd();
				memcpy(e + b, &r, RTE_MIN(8u, stride - b));
			}
			continue;
		}
		struct dpv_sge *sg;
		uint32_t room;
		if (rq) {
			struct dpv_recv_wqe *w = (struct dpv_recv_wqe *)e;
			w->wr_id = rnd();
			room = (stride - sizeof(*w)) / sizeof(struct dpv_sge);
			w->num_sge = chance(80) ? rn(room + 1) : (uint32_t)any_int();
			sg = w->sge;
		} else {
			struct dpv_send_wqe *w = (struct dpv_send_wqe *)e;
			memset(w, 0, sizeof(*w));
			w->wr_id = rnd();
			w->opcode = chance(85) ? (uint8_t)rn(IBV_WR_ATOMIC_FETCH_AND_ADD + 1) : (uint8_t)rnd();
			w->flags = (uint8_t)(chance(80) ? rn(16) : rnd());
			room = (stride - sizeof(*w)) / sizeof(struct dpv_sge);
			w->num_sge = (uint16_t)(chance(80) ? rn(room + 1) : rnd());
			w->length = chance(70) ? rn(8192) : (uint32_t)any_int();
			w->imm_data = (uint32_t)rnd();
			w->rkey = mr && chance(70) ? mr->key : (uint32_t)rnd();
			w->remote_addr = mr && chance(70) ? mr->addr + rn((uint32_t)RTE_MIN(mr->length, 1u << 20)) : any_int();
			w->ud.ah = ah && chance(70) ? ah->num : (uint32_t)any_int();
			w->ud.remote_qpn = (uint32_t)rnd() & DPV_QPN_MASK;
			w->ud.remote_qkey = chance(50) ? 0x11111111 : (uint32_t)rnd();
			w->remote_srqn = (uint32_t)any_num(f, DPV_OBJ_SRQ);
			sg = dpv_wqe_sge(w);
			if (w->flags & DPV_WQE_F_INLINE) {
				for (uint32_t b = sizeof(*w); b + 8 <= stride; b += 8) {
					uint64_t r = rnd();
					memcpy(e + b, &r, 8);
				}
				continue;
			}
		}
		for (uint32_t s = 0; s < room; s++) {
			if (mr && chance(75)) {
				uint64_t len = RTE_MIN(mr->length, (uint64_t)UINT32_MAX);
				uint64_t off = len ? rnd() % len : 0; /* an MR on device memory may be empty */
				sg[s].addr = mr->addr + off;
				sg[s].length = chance(80) ? (uint32_t)RTE_MIN(len - off, (uint64_t)rn(4096) + 1)
							  : (uint32_t)any_int();
				sg[s].lkey = chance(90) ? mr->key : (uint32_t)rnd();
			} else {
				sg[s].addr = any_addr(f);
				sg[s].length = (uint32_t)any_int();
				sg[s].lkey = (uint32_t)any_int();
			}
		}
	}
	uint32_t npi;
	switch (rn(10)) {
	case 0:
		npi = pi + size + rn(1u << 20); /* far ahead */
		break;
	case 1:
		npi = pi - rn(size + 1); /* behind */
		break;
	case 2:
		npi = (uint32_t)rnd();
		break;
	default:
		npi = pi + nw;
		break;
	}
	atomic_store_explicit(&h->pi, npi, memory_order_release);
	if (chance(10))
		atomic_store_explicit(&h->db, (uint32_t)rnd(), memory_order_relaxed);
	uint32_t mask = g_w.db_size - 1;
	uint32_t val = chance(90) ? (t->qpn | (rq ? DPV_DB_RQ : 0)) : (uint32_t)any_num(f, DPV_OBJ_QP);
	if (!atomic_exchange(&h->db, 1) || chance(20))
		db_put(db, mask, val);
	if (chance(3)) /* scribble on the doorbell ring itself */
		atomic_store_explicit(&db->head, (uint32_t)rnd(), memory_order_relaxed);
	g_n_pokes++;
	for (unsigned int i = 0; i < 4; i++)
		dpv_progress_all();
}

/* ------------------------------------------------------------------ */
/* clients */

static struct fclient *client_new(void)
{
	for (unsigned int i = 0; i < MAX_CLIENTS; i++) {
		struct fclient *f = &g_cl[i];
		if (f->c)
			continue;
		int sp[2];
		if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) != 0)
			return NULL;
		memset(f, 0, sizeof(*f));
		for (unsigned int k = 0; k < DPVD_MAX_CTX; k++)
			f->token[k] = -1;
		f->c = dpvd_client_new(sp[0]);
		if (!f->c) {
			close(sp[1]);
			FAILF("dpvd_client_new failed: %s", strerror(errno));
			return NULL;
		}
		CHECK(f->c->pid == getpid(), "SO_PEERCRED pid %d, ours %d", (int)f->c->pid, (int)getpid());
		f->peer = sp[1];
		g_n_clients++;
		return f;
	}
	return NULL;
}

static void client_gone(struct fclient *f)
{
	char why[512];
	struct dpvd_obj *o;
	TAILQ_FOREACH(o, &f->c->objs, next)
		released_add(o->type, o->num);
	dpvd_client_gone(f->c);
	f->c = NULL;
	close(f->peer);
	for (unsigned int k = 0; k < DPVD_MAX_CTX; k++)
		if (f->token[k] >= 0)
			close(f->token[k]);
	for (unsigned int i = 0; i < f->n_reg; i++)
		munmap(f->reg[i].p, f->reg[i].size);
	if (f->db)
		munmap(f->db, f->db_bytes);
	memset(f, 0, sizeof(*f));
	g_n_gone++;
	if (!audit(why, sizeof(why))) {
		FAILF("after a connection went away: %s", why);
		g_fatal = 1;
	}
}

static struct fclient *some_client(void)
{
	unsigned int i = rn(MAX_CLIENTS);
	for (unsigned int k = 0; k < MAX_CLIENTS; k++)
		if (g_cl[(i + k) % MAX_CLIENTS].c)
			return &g_cl[(i + k) % MAX_CLIENTS];
	return NULL;
}

/* ------------------------------------------------------------------ */
/* the four kinds of input */

/* (a) anything */
static void mode_random(struct fclient *f)
{
	struct dpv_shm_msg m;
	memset(&m, 0, sizeof(m));
	m.h.op = chance(85) ? (uint16_t)rn(DPV_SHM_OP_NR + 3) : (uint16_t)rnd();
	size_t want = dpv_shm_body_len(m.h.op);
	unsigned int r = rn(10);
	size_t len = r < 5 && want ? sizeof(m.h) + want : r < 7 ? sizeof(m.h) + rn((uint32_t)want + 65)
						 : r < 8 ? rn(sizeof(m.h) + 1) : rn(0x10000);
	m.h.len = (uint16_t)len;
	size_t fill = RTE_MIN(RTE_MAX(len, sizeof(m.h)), sizeof(m)) - sizeof(m.h);
	for (size_t i = 0; i < fill; i += 8) {
		uint64_t v = chance(30) ? any_int() : rnd();
		memcpy(m.u.raw + i, &v, RTE_MIN((size_t)8, fill - i));
	}
	if (m.h.op == DPV_SHM_HELLO && chance(50))
		m.u.hello.version = DPV_SHM_VERSION;
	int fd0 = chance(30) ? random_fd(0) : -1;
	int fd1 = chance(15) ? random_fd(0) : -1;
	g_n_mode[0]++;
	request(f, &m, fd0, fd1, EXP_ANY, NULL);
}

static uint16_t random_op(void)
{
	return (uint16_t)(rn(DPV_SHM_OP_NR - 1) + 1);
}

/* (b) a valid request of a random op, mutated */
static void mode_mutate(struct fclient *f)
{
	struct vreq v;
	build_valid(f, random_op(), &v);
	mutate(f, &v.m);
	v.ex = EXP_ANY;
	/* descriptors: kept, replaced, added, dropped */
	if (chance(25)) {
		unsigned int i = rn(2);
		if (v.fd[i] >= 0)
			close(v.fd[i]);
		size_t sz = v.m.h.op == DPV_SHM_MEM_ADD && v.m.u.mem.size <= (1u << 22) ? v.m.u.mem.size : 0;
		v.fd[i] = chance(80) ? random_fd(sz) : -1;
	}
	g_n_mode[1]++;
	send_vreq(f, &v);
}

/* (c) a valid request (a random op f is ready for), maybe with extra
 * descriptors nobody asked for */
static void mode_valid(struct fclient *f)
{
	struct vreq v;
	if (!f->c->hello) {
		build_valid(f, DPV_SHM_HELLO, &v);
	} else {
		/* the ops that build state come more often */
		static const uint16_t heavy[] = {DPV_SHM_CTX_OPEN, DPV_SHM_MEM_ADD, DPV_SHM_NUM_RESERVE, DPV_SHM_NUM_RESERVE,
						 DPV_SHM_PD_ALLOC, DPV_SHM_MR_REG, DPV_SHM_CQ_CREATE, DPV_SHM_QP_CREATE,
						 DPV_SHM_QP_CREATE, DPV_SHM_QP_MODIFY, DPV_SHM_QP_MODIFY, DPV_SHM_SRQ_CREATE,
						 DPV_SHM_AH_CREATE, DPV_SHM_XRCD_OPEN};
		bool found = false;
		for (unsigned int k = 0; k < 12 && !found; k++) {
			uint16_t op = chance(50) ? heavy[rn(RTE_DIM(heavy))] : random_op();
			if (op == DPV_SHM_HELLO)
				continue;
			found = build_valid(f, op, &v);
			if (!found) {
				for (unsigned int i = 0; i < 2; i++)
					if (v.fd[i] >= 0)
						close(v.fd[i]);
				if (v.map)
					munmap(v.map, v.map_size);
			}
		}
		if (!found)
			return;
	}
	/* descriptors the op does not take: closed by the daemon */
	if (chance(10)) {
		for (unsigned int i = 0; i < 2; i++)
			if (v.fd[i] < 0) {
				v.fd[i] = random_fd(0);
				break;
			}
	}
	g_n_mode[2]++;
	send_vreq(f, &v);
}

/* (d) client y names the objects of client x: every such request fails,
 * and x's object is untouched (its QP still answers x's QP_QUERY). */
static void mode_attack(struct fclient *y)
{
	struct fclient *x = other_client(y);
	if (!x || !y->c->hello)
		return;
	struct dpvd_obj *o = pick_obj(x->c, chance(60) ? DPV_OBJ_QP : -1, -1);
	if (!o)
		return;
	uint32_t type = o->type, num = o->num;
	bool created = o->created;
	void *drv = o->drv;
	enum ibv_qp_state st0 = IBV_QPS_RESET;
	if (type == DPV_OBJ_QP && created)
		st0 = dpv_host_qp_state(o->dev, o->drv);
	struct vreq v;
	uint16_t op;
	switch (type) {
	case DPV_OBJ_QP: {
		struct dpvd_qpopen *h;
		TAILQ_FOREACH(h, &dpvd_global.qpopens, next)
			if (h->c == y->c && h->qp == o)
				return; /* y opened it (OPEN_QP): may modify and query it */
		static const uint16_t ops[] = {DPV_SHM_QP_DESTROY, DPV_SHM_QP_MODIFY, DPV_SHM_QP_QUERY, DPV_SHM_NUM_RELEASE,
					       DPV_SHM_QP_CREATE};
		op = ops[rn(RTE_DIM(ops))];
		break;
	}
	case DPV_OBJ_CQ: {
		static const uint16_t ops[] = {DPV_SHM_CQ_DESTROY, DPV_SHM_CQ_RESIZE, DPV_SHM_CQ_CREATE, DPV_SHM_NUM_RELEASE};
		op = ops[rn(RTE_DIM(ops))];
		break;
	}
	case DPV_OBJ_SRQ: {
		static const uint16_t ops[] = {DPV_SHM_SRQ_DESTROY, DPV_SHM_SRQ_CREATE, DPV_SHM_NUM_RELEASE};
		op = ops[rn(RTE_DIM(ops))];
		break;
	}
	case DPV_OBJ_MR: {
		static const uint16_t ops[] = {DPV_SHM_MR_DEREG, DPV_SHM_MR_REG, DPV_SHM_NUM_RELEASE, DPV_SHM_MW_ALLOC,
					       DPV_SHM_MW_DEALLOC};
		op = ops[rn(RTE_DIM(ops))];
		break;
	}
	case DPV_OBJ_AH: {
		static const uint16_t ops[] = {DPV_SHM_AH_DESTROY, DPV_SHM_AH_CREATE, DPV_SHM_NUM_RELEASE};
		op = ops[rn(RTE_DIM(ops))];
		break;
	}
	case DPV_OBJ_PD: {
		if (dpvd_pd_usable(y->c, num))
			return; /* y holds a handle on it (shared, imported): not an attack */
		static const uint16_t ops[] = {DPV_SHM_PD_DEALLOC, DPV_SHM_PD_ALLOC, DPV_SHM_NUM_RELEASE,
					       DPV_SHM_SHPD_ALLOC};
		op = ops[rn(RTE_DIM(ops))];
		break;
	}
	default:
		return;
	}
	/* the best request y can make, with x's number in it */
	build_valid(y, op, &v);
	struct dpv_shm_msg *m = &v.m;
	switch (op) {
	case DPV_SHM_QP_DESTROY:
	case DPV_SHM_QP_CREATE:
		m->u.qp.qpn = num;
		break;
	case DPV_SHM_QP_MODIFY:
		m->u.qpm.qpn = num;
		m->u.qpm.mask = IBV_QP_STATE;
		m->u.qpm.to = chance(50) ? IBV_QPS_ERR : IBV_QPS_RESET;
		break;
	case DPV_SHM_QP_QUERY:
		m->u.qpq.qpn = num;
		break;
	case DPV_SHM_NUM_RELEASE:
		m->u.num.type = type;
		m->u.num.num = num;
		break;
	case DPV_SHM_CQ_DESTROY:
	case DPV_SHM_CQ_RESIZE:
	case DPV_SHM_CQ_CREATE:
		m->u.cq.handle = num;
		break;
	case DPV_SHM_SRQ_DESTROY:
	case DPV_SHM_SRQ_CREATE:
		m->u.srq.srqn = num;
		break;
	case DPV_SHM_MR_DEREG:
	case DPV_SHM_MR_REG:
		m->u.mr.key = created ? o->key : (num << 8 | 1);
		break;
	case DPV_SHM_MW_ALLOC:
	case DPV_SHM_MW_DEALLOC:
		m->u.mw.key = created ? o->key : (num << 8 | 1);
		break;
	case DPV_SHM_AH_DESTROY:
	case DPV_SHM_AH_CREATE:
		m->u.ah.handle = num;
		break;
	case DPV_SHM_PD_DEALLOC:
	case DPV_SHM_PD_ALLOC:
		m->u.pd.pdn = num;
		m->u.pd.dev = o->dev;
		break;
	case DPV_SHM_SHPD_ALLOC:
		m->u.shpd.pdn = num;
		m->u.shpd.dev = o->dev;
		break;
	default:
		break;
	}
	v.ex = EXP_FAIL;
	g_n_mode[3]++;
	g_n_attacks++;
	send_vreq(y, &v);
	/* x's object is still there, the same */
	struct dpvd_obj *o2 = dpvd_obj_get(x->c, (enum dpv_obj_type)type, num, false);
	bool same = o2 == o && o2->created == created && o2->drv == drv;
	CHECK(same, "connection %u's %s %u changed after connection %u's %s", x->c->id,
	      dpv_pool_name((enum dpv_obj_type)type), num, y->c->id, op_name(op));
	if (same && type == DPV_OBJ_QP && created) {
		struct dpv_shm_msg q;
		msg_init(&q, DPV_SHM_QP_QUERY);
		q.u.qpq.qpn = num;
		int st = request(x, &q, -1, -1, EXP_OK, NULL);
		/* the engine may have moved it to ERR itself meanwhile (retries) */
		CHECK(st == 0 && (q.u.qpq.state == st0 || q.u.qpq.state == IBV_QPS_ERR || q.u.qpq.state == IBV_QPS_SQE),
		      "connection %u's QP %#x: QP_QUERY %d, state %u (was %u) after connection %u's %s", x->c->id, num, st,
		      q.u.qpq.state, st0, y->c->id, op_name(op));
	}
}

/* ------------------------------------------------------------------ */

static int rm_entry(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(p);
}

static void rm_tree(const char *path)
{
	nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static int fuzz(uint64_t iters, unsigned int seconds)
{
	signal(SIGPIPE, SIG_IGN); /* as dpverbsd: events into pipes whose reader is gone */
	const struct dpv_conf *conf = dpv_host_start();
	if (!conf) {
		fprintf(stderr, "fuzz_daemon: dpverbs could not start: %s\n", strerror(errno));
		return 1;
	}
	CHECK(conf->mode == DPV_MODE_SHARED, "the configuration is not shared");
	CHECK(dpv_host_n_devs() >= 2, "%u devices", dpv_host_n_devs());
	CHECK(dpvd_init() == 0, "dpvd_init: %s", strerror(errno));
	for (unsigned int i = 0; i < MAX_CLIENTS; i++)
		g_cl[i].c = NULL;
	/* EAL's threads open and close a descriptor or two while they start */
	int fd_base = fd_count();
	for (unsigned int i = 0; i < 50; i++) {
		usleep(20000);
		int n = fd_count();
		if (n == fd_base && i >= 5)
			break;
		fd_base = n;
	}
	uint64_t end = now_ms() + (uint64_t)seconds * 1000;
	for (unsigned int i = 0; i < 3; i++)
		client_new();
	for (g_iter = 0; g_iter < iters && !g_fatal; g_iter++) {
		if ((g_iter & 255) == 0 && now_ms() > end)
			break;
		unsigned int r = rn(1000);
		if (r < 4) { /* churn */
			struct fclient *f = some_client();
			if (f && (chance(50) || !client_new()))
				client_gone(f);
			continue;
		}
		if (r < 10 || !some_client()) {
			client_new();
			continue;
		}
		struct fclient *f = some_client();
		if (r < 110)
			mode_random(f);
		else if (r < 400)
			mode_mutate(f);
		else if (r < 900)
			mode_valid(f);
		else if (r < 960)
			mode_attack(f);
		else
			poke(f);
		if ((g_iter & 15) == 0)
			dpv_progress_all();
		if ((g_iter & 1023) == 0) {
			int want = fd_base + our_fds() + daemon_fds();
			int have = fd_count();
			if (!CHECK(have == want, "%d descriptors open, expected %d (%d at start + %d ours + %d the daemon's)",
				   have, want, fd_base, our_fds(), daemon_fds()))
				g_fatal = 1;
		}
	}
	/* everyone goes: nothing may remain */
	for (unsigned int i = 0; i < MAX_CLIENTS; i++)
		if (g_cl[i].c)
			client_gone(&g_cl[i]);
	for (unsigned int i = 0; i < 8; i++)
		dpv_progress_all();
	CHECK(TAILQ_EMPTY(&dpvd_global.clients), "connections left");
	CHECK(TAILQ_EMPTY(&dpvd_global.xrcds), "XRC domains left after every connection went away");
	for (unsigned int t = 0; t < DPV_OBJ_NR; t++)
		CHECK(dpv_pool_count((enum dpv_obj_type)t) == 0, "pool %s: %u objects left after every connection went away",
		      dpv_pool_name((enum dpv_obj_type)t), dpv_pool_count((enum dpv_obj_type)t));
	int have = fd_count();
	CHECK(have == fd_base, "%d descriptors open after every connection went away, %d at start", have, fd_base);
	printf("fuzz_daemon: seed %" PRIu64 ": %" PRIu64 " iterations, %" PRIu64 " requests (%" PRIu64 " random, %" PRIu64
	       " mutated, %" PRIu64 " valid, %" PRIu64 " attacks), %" PRIu64 " succeeded; %" PRIu64 " ring pokes; %" PRIu64
	       " connections, %" PRIu64 " gone\n",
	       g_seed, g_iter, g_n_req, g_n_mode[0], g_n_mode[1], g_n_mode[2], g_n_mode[3], g_n_ok, g_n_pokes,
	       g_n_clients, g_n_gone);
	printf("fuzz_daemon: succeeded/sent by op:");
	for (unsigned int op = 1; op < DPV_SHM_OP_NR; op++)
		printf(" %s %" PRIu64 "/%" PRIu64, op_name((uint16_t)op), g_op_ok[op], g_op_n[op]);
	printf("\n");
	return dpvt_finish();
}

static volatile sig_atomic_t g_stop;

static void on_stop(int sig)
{
	(void)sig;
	g_stop = 1;
}

static uint64_t arg_u64(int argc, char **argv, int i, const char *env, uint64_t def)
{
	const char *s = i < argc ? argv[i] : getenv(env);
	return s && *s ? strtoull(s, NULL, 0) : def;
}

int main(int argc, char **argv)
{
	g_seed = arg_u64(argc, argv, 1, "DPV_FUZZ_SEED", 0);
	if (!g_seed) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		g_seed = (uint64_t)ts.tv_nsec ^ (uint64_t)ts.tv_sec << 20 ^ (uint64_t)getpid() << 40;
	}
	uint64_t iters = arg_u64(argc, argv, 2, "DPV_FUZZ_ITERS", 200000);
	unsigned int seconds = (unsigned int)arg_u64(argc, argv, 3, "DPV_FUZZ_SECONDS", 5);
	g_rng = g_seed;
	printf("fuzz_daemon: seed %" PRIu64 " (rerun: fuzz_daemon %" PRIu64 " %" PRIu64 " %u), at most %" PRIu64
	       " iterations in %u s\n",
	       g_seed, g_seed, iters, seconds, iters, seconds);
	fflush(stdout);

	/* the configuration: two net_ring ports, shared mode, an EAL prefix
	 * and a socket of our own in a temporary directory */
	snprintf(g_tmp, sizeof(g_tmp), "/tmp/dpv-fuzzd.XXXXXX");
	if (!mkdtemp(g_tmp)) {
		perror("mkdtemp");
		return 1;
	}
	char conf[300], prefix[64], rundir[128];
	snprintf(prefix, sizeof(prefix), "dpvfzd-%d", (int)getpid());
	snprintf(rundir, sizeof(rundir), "/var/run/dpdk/%s", prefix);
	snprintf(conf, sizeof(conf), "%s/shared.json", g_tmp);
	FILE *cf = fopen(conf, "w");
	if (!cf) {
		perror(conf);
		rm_tree(g_tmp);
		return 1;
	}
	fprintf(cf,
		"{\"mode\": \"shared\", \"shared\": {\"socket\": \"%s/dpverbsd.sock\"},\n"
		" \"eal\": {\"file_prefix\": \"%s\", \"hugepages\": false, \"memory_mb\": 256},\n"
		" \"ports\": [\n"
		"  {\"name\": \"dpv0\", \"device\": {\"type\": \"ring\", \"peer\": \"dpv1\"}, \"mac\": \"02:64:70:76:00:01\",\n"
		"   \"ipv4\": \"192.0.2.1/24\", \"rx_desc\": 256, \"tx_desc\": 256, \"mbufs\": 2047},\n"
		"  {\"name\": \"dpv1\", \"device\": {\"type\": \"ring\", \"peer\": \"dpv0\"}, \"mac\": \"02:64:70:76:00:02\",\n"
		"   \"ipv4\": \"192.0.2.2/24\", \"rx_desc\": 256, \"tx_desc\": 256, \"mbufs\": 2047}],\n"
		" \"limits\": {\"max_qp\": 256, \"max_cq\": 256, \"max_mr\": 1024, \"max_pd\": 256, \"max_ah\": 1024,\n"
		"   \"max_srq\": 64}\n"
		"}\n",
		g_tmp, prefix);
	fclose(cf);
	setenv("DPVERBS_CONFIG", conf, 1);
	unsetenv("DPVERBS_DRIVER");
	unsetenv("DPVERBS_FAULT");

	/* the daemon's core runs in a child: a crash, a sanitizer report or a
	 * hang is reported here, and the temporary files always go */
	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0) {
		perror("fork");
		rm_tree(g_tmp);
		return 1;
	}
	if (pid == 0)
		exit(fuzz(iters, seconds)); /* exit: the sanitizers' leak check runs */
	int status = 0;
	uint64_t limit = now_ms() + ((uint64_t)seconds + 90) * 1000;
	pid_t w;
	struct sigaction sa = {.sa_handler = on_stop};
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	while ((w = waitpid(pid, &status, WNOHANG)) == 0 && now_ms() < limit && !g_stop)
		usleep(20000);
	int rc;
	if (w == 0 && g_stop) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		fprintf(stderr, "fuzz_daemon: stopped by a signal (seed %" PRIu64 ")\n", g_seed);
		printf("0 passed, 1 failed\n");
		rc = 1;
	} else if (w == 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		fprintf(stderr, "fuzz_daemon: HANG: the daemon's core did not finish within %u s (seed %" PRIu64 ")\n",
			seconds + 90, g_seed);
		printf("0 passed, 1 failed\n");
		rc = 1;
	} else if (WIFSIGNALED(status)) {
		fprintf(stderr, "fuzz_daemon: CRASH: the daemon's core died of signal %d (%s) (seed %" PRIu64 ")\n",
			WTERMSIG(status), strsignal(WTERMSIG(status)), g_seed);
		printf("0 passed, 1 failed\n");
		rc = 1;
	} else {
		rc = WEXITSTATUS(status);
		if (rc)
			fprintf(stderr, "fuzz_daemon: failed, exit status %d (seed %" PRIu64 ")\n", rc, g_seed);
	}
	rm_tree(g_tmp);
	rm_tree(rundir);
	return rc;
}
