/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ibv_open_xrcd / ibv_close_xrcd (doc/man/ibv_open_xrcd.3.md): one check per
 * sentence of the man page and per errno, plus the XRC objects that hold a
 * domain (XRC SRQs from ibv_create_srq_ex, XRC target QPs, ibv_open_qp
 * handles). Sameness of two handles' domains is proved functionally: a
 * target QP created through one handle is found by ibv_open_qp through the
 * other (ENOENT when the domains differ). The target QP's events reach every
 * ibv_open_qp handle (test_open_qp_events).
 *
 * Black-box (libdpverbs.so + <infiniband/verbs.h>), one process, the
 * built-in default configuration (dpv0, dpv1).
 */
#include <fcntl.h>
#include <unistd.h>

#include "dpvt_verbs.h"

static struct ibv_context *ctx0, *ctx0b, *ctx1;
static struct ibv_pd *pd0, *pd0b, *pd1;
static struct ibv_cq *cq0, *cq0b, *cq1;
static char tmpdir[] = "/tmp/dpv-xrcd-XXXXXX";

/* A new empty file under tmpdir, open O_RDWR; its path in path. */
static int new_file(char *path, size_t len, const char *name)
{
	snprintf(path, len, "%s/%s", tmpdir, name);
	int fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
	if (fd < 0)
		fprintf(stderr, "open %s: %s\n", path, strerror(errno));
	return fd;
}

/* "ibv_open_xrcd() open an XRC domain for the RDMA device context context";
 * xrcd_init_attr validation. */
static void test_attr_checks(int fd)
{
	struct ibv_xrcd *x;
	errno = 0;
	x = ibv_open_xrcd(ctx0, NULL);
	CHECK(!x && errno == EINVAL, "open_xrcd(attr NULL): EINVAL, got %p errno %d", (void *)x, errno);

	/* unknown comp_mask bits: EINVAL (IBV_XRCD_INIT_ATTR_RESERVED and above) */
	x = dpvt_xrcd_open(ctx0, -1, O_CREAT, DPVT_XRCD_MASK | IBV_XRCD_INIT_ATTR_RESERVED);
	CHECK(!x && errno == EINVAL, "comp_mask RESERVED bit: EINVAL, got errno %d", errno);
	x = dpvt_xrcd_open(ctx0, -1, O_CREAT, DPVT_XRCD_MASK | (1u << 31));
	CHECK(!x && errno == EINVAL, "comp_mask bit 31: EINVAL, got errno %d", errno);
	x = dpvt_xrcd_open(ctx0, fd, O_CREAT, DPVT_XRCD_MASK | (1u << 5));
	CHECK(!x && errno == EINVAL, "comp_mask bit 5 with a file fd: EINVAL, got errno %d", errno);

	/* both fields are required (as rdma-core's ibv_cmd_open_xrcd) */
	x = dpvt_xrcd_open(ctx0, -1, O_CREAT, IBV_XRCD_INIT_ATTR_OFLAGS);
	CHECK(!x && errno == EINVAL, "comp_mask without FD: EINVAL, got errno %d", errno);
	x = dpvt_xrcd_open(ctx0, -1, O_CREAT, IBV_XRCD_INIT_ATTR_FD);
	CHECK(!x && errno == EINVAL, "comp_mask without OFLAGS: EINVAL, got errno %d", errno);
	x = dpvt_xrcd_open(ctx0, -1, O_CREAT, 0);
	CHECK(!x && errno == EINVAL, "comp_mask 0: EINVAL, got errno %d", errno);
	x = dpvt_xrcd_open(ctx0, fd, O_CREAT, IBV_XRCD_INIT_ATTR_FD);
	CHECK(!x && errno == EINVAL, "file fd, comp_mask without OFLAGS: EINVAL, got errno %d", errno);

	/* oflags: only O_CREAT and O_EXCL are accepted (Linux ignores others) */
	x = dpvt_xrcd_open(ctx0, -1, O_CREAT | O_RDWR, DPVT_XRCD_MASK);
	CHECK(!x && errno == EINVAL, "oflags O_CREAT|O_RDWR: EINVAL, got errno %d", errno);
	x = dpvt_xrcd_open(ctx0, fd, O_CREAT | O_TRUNC, DPVT_XRCD_MASK);
	CHECK(!x && errno == EINVAL, "oflags O_CREAT|O_TRUNC: EINVAL, got errno %d", errno);
	x = dpvt_xrcd_open(ctx0, fd, O_CREAT | O_CLOEXEC, DPVT_XRCD_MASK);
	CHECK(!x && errno == EINVAL, "oflags O_CREAT|O_CLOEXEC: EINVAL, got errno %d", errno);
	x = dpvt_xrcd_open(ctx0, fd, O_WRONLY, DPVT_XRCD_MASK);
	CHECK(!x && errno == EINVAL, "oflags O_WRONLY: EINVAL, got errno %d", errno);
	/* the checks come first: nothing was created on fd's inode */
	x = dpvt_xrcd_open(ctx0, fd, 0, DPVT_XRCD_MASK);
	CHECK(!x && errno == EAGAIN, "rejected opens created no domain: EAGAIN, got errno %d", errno);
}

/* "If fd equals -1, no inode is associated with the XRCD. To indicate that
 * XRCD should be created, use oflag = O_CREAT." */
static void test_fd_minus_one(void)
{
	struct ibv_xrcd *a = dpvt_xrcd_open(ctx0, -1, O_CREAT, DPVT_XRCD_MASK);
	CHECK(a != NULL, "fd -1, O_CREAT: %s", strerror(errno));
	if (!a)
		return;
	CHECK(a->context == ctx0, "xrcd->context is the context passed");
	/* dpverbs, like Linux's uverbs, creates a domain for fd -1 whatever
	 * oflags says (there is no inode to look an existing one up by) */
	struct ibv_xrcd *b = dpvt_xrcd_open(ctx0, -1, 0, DPVT_XRCD_MASK);
	CHECK(b != NULL, "fd -1 without O_CREAT creates a domain too: %s", strerror(errno));
	struct ibv_xrcd *c = dpvt_xrcd_open(ctx0, -1, O_CREAT | O_EXCL, DPVT_XRCD_MASK);
	CHECK(c != NULL, "fd -1, O_CREAT|O_EXCL creates a domain: %s", strerror(errno));
	struct ibv_xrcd *d = dpvt_xrcd_open(ctx0, -1, O_EXCL, DPVT_XRCD_MASK);
	CHECK(d != NULL, "fd -1, O_EXCL creates a domain: %s", strerror(errno));
	/* each is a domain of its own, not tied to any inode */
	if (b)
		CHECK_EQ(dpvt_xrc_same_domain(ctx0, a, ctx0, b), 0, "fd -1 (O_CREAT) vs fd -1 (0): different domains");
	if (c)
		CHECK_EQ(dpvt_xrc_same_domain(ctx0, c, ctx0, a), 0, "two fd -1 domains differ");
	CHECK_EQ(dpvt_xrc_same_domain(ctx0, a, ctx0, a), 1, "a handle reaches its own domain");
	/* an anonymous domain lives while its handle does: a target QP keeps it */
	struct ibv_qp *t = dpvt_xrc_tgt_new(ctx0, a);
	CHECK(t != NULL, "target QP in fd -1 domain: %s", strerror(errno));
	CHECK_EQ(ibv_close_xrcd(a), EBUSY, "close fd -1 domain with a target QP");
	if (t)
		CHECK_EQ(ibv_destroy_qp(t), 0, "destroy target QP");
	CHECK_EQ(ibv_close_xrcd(a), 0, "close fd -1 domain");
	if (b)
		CHECK_EQ(ibv_close_xrcd(b), 0, "close fd -1 domain (no O_CREAT)");
	if (c)
		CHECK_EQ(ibv_close_xrcd(c), 0, "close fd -1 domain (O_EXCL)");
	if (d)
		CHECK_EQ(ibv_close_xrcd(d), 0, "close fd -1 domain (O_EXCL only)");
}

/* O_CREAT: "Indicates that an XRCD should be created and associated with the
 * inode referenced by the given fd. If the XRCD exists, this flag has no
 * effect except as noted under O_EXCL below." O_EXCL: "If O_EXCL and O_CREAT
 * are set, open will fail if an XRCD associated with the inode exists." */
static void test_inode(void)
{
	char path[256], path2[256], linkp[256];
	int fd = new_file(path, sizeof(path), "a");
	if (fd < 0) {
		CHECK(0, "temp file");
		return;
	}
	/* no O_CREAT and no domain for the inode: EAGAIN */
	struct ibv_xrcd *x = dpvt_xrcd_open(ctx0, fd, 0, DPVT_XRCD_MASK);
	CHECK(!x && errno == EAGAIN, "no O_CREAT, no domain: EAGAIN, got errno %d", errno);
	x = dpvt_xrcd_open(ctx0, fd, O_EXCL, DPVT_XRCD_MASK);
	CHECK(!x && errno == EAGAIN, "O_EXCL without O_CREAT, no domain: EAGAIN, got errno %d", errno);

	/* O_CREAT: new */
	struct ibv_xrcd *h1 = dpvt_xrcd_open(ctx0, fd, O_CREAT, DPVT_XRCD_MASK);
	CHECK(h1 != NULL, "file fd, O_CREAT (new): %s", strerror(errno));
	if (!h1) {
		close(fd);
		return;
	}
	/* O_CREAT again: the existing domain (a new handle on it) */
	struct ibv_xrcd *h2 = dpvt_xrcd_open(ctx0, fd, O_CREAT, DPVT_XRCD_MASK);
	CHECK(h2 != NULL && h2 != h1, "file fd, O_CREAT (existing): a new handle");
	if (h2) {
		CHECK_EQ(dpvt_xrc_same_domain(ctx0, h1, ctx0, h2), 1, "O_CREAT twice: same domain (h1 -> h2)");
		CHECK_EQ(dpvt_xrc_same_domain(ctx0, h2, ctx0, h1), 1, "O_CREAT twice: same domain (h2 -> h1)");
	}
	/* O_CREAT|O_EXCL on an existing inode: EINVAL, the domain intact */
	x = dpvt_xrcd_open(ctx0, fd, O_CREAT | O_EXCL, DPVT_XRCD_MASK);
	CHECK(!x && errno == EINVAL, "O_CREAT|O_EXCL on existing: EINVAL, got errno %d", errno);
	CHECK_EQ(dpvt_xrc_same_domain(ctx0, h1, ctx0, h2), 1, "failed O_EXCL left the domain");
	/* O_EXCL without O_CREAT on an existing inode: dpverbs opens it (the
	 * man page gives O_EXCL a meaning only with O_CREAT; Linux's uverbs
	 * fails with EINVAL here) */
	struct ibv_xrcd *h3 = dpvt_xrcd_open(ctx0, fd, O_EXCL, DPVT_XRCD_MASK);
	CHECK(h3 != NULL, "O_EXCL alone on existing: opened, got errno %d", errno);
	if (h3) {
		CHECK_EQ(dpvt_xrc_same_domain(ctx0, h3, ctx0, h1), 1, "O_EXCL alone: same domain");
		CHECK_EQ(ibv_close_xrcd(h3), 0, "close h3");
	}
	/* no O_CREAT, domain exists: opened */
	struct ibv_xrcd *h4 = dpvt_xrcd_open(ctx0, fd, 0, DPVT_XRCD_MASK);
	CHECK(h4 != NULL, "no O_CREAT, domain exists: opened, got errno %d", errno);
	if (h4) {
		CHECK_EQ(dpvt_xrc_same_domain(ctx0, h1, ctx0, h4), 1, "oflags 0: same domain");
		CHECK_EQ(ibv_close_xrcd(h4), 0, "close h4");
	}

	/* another fd on the same file (open again, dup, a hard link) */
	int fd2 = open(path, O_RDONLY);
	struct ibv_xrcd *h5 = fd2 >= 0 ? dpvt_xrcd_open(ctx0, fd2, 0, DPVT_XRCD_MASK) : NULL;
	CHECK(h5 != NULL, "second fd on the file: opened, errno %d", errno);
	if (h5) {
		CHECK_EQ(dpvt_xrc_same_domain(ctx0, h1, ctx0, h5), 1, "second fd: same domain");
		CHECK_EQ(ibv_close_xrcd(h5), 0, "close h5");
	}
	int fd3 = dup(fd);
	struct ibv_xrcd *h6 = dpvt_xrcd_open(ctx0, fd3, O_CREAT | O_EXCL, DPVT_XRCD_MASK);
	CHECK(!h6 && errno == EINVAL, "dup'd fd, O_CREAT|O_EXCL: EINVAL (same inode), errno %d", errno);
	snprintf(linkp, sizeof(linkp), "%s/a-link", tmpdir);
	int fd4 = link(path, linkp) == 0 ? open(linkp, O_RDONLY) : -1;
	struct ibv_xrcd *h7 = fd4 >= 0 ? dpvt_xrcd_open(ctx0, fd4, 0, DPVT_XRCD_MASK) : NULL;
	CHECK(h7 != NULL, "hard link to the file: same inode, opened, errno %d", errno);
	if (h7) {
		CHECK_EQ(dpvt_xrc_same_domain(ctx0, h7, ctx0, h2), 1, "hard link: same domain");
		CHECK_EQ(ibv_close_xrcd(h7), 0, "close h7");
	}
	/* the domain belongs to the inode, not to the fd: it outlives the fds */
	close(fd2);
	close(fd3);
	close(fd4);

	/* a second ibv_context of the same device reaches the same domain */
	int fd5 = open(path, O_RDONLY);
	struct ibv_xrcd *hb = dpvt_xrcd_open(ctx0b, fd5, O_CREAT, DPVT_XRCD_MASK);
	CHECK(hb != NULL && hb->context == ctx0b, "second context of dpv0: opened");
	if (hb) {
		CHECK_EQ(dpvt_xrc_same_domain(ctx0, h1, ctx0b, hb), 1, "second context: same domain (ctx0 -> ctx0b)");
		CHECK_EQ(dpvt_xrc_same_domain(ctx0b, hb, ctx0, h1), 1, "second context: same domain (ctx0b -> ctx0)");
		/* an XRC SRQ through the handle of one context, target through
		 * the other's: objects must be of the handle's context */
		struct ibv_srq *s = dpvt_xrc_srq_new(ctx0b, pd0b, cq0b, hb, 16, 1);
		CHECK(s != NULL, "XRC SRQ through the second context's handle: %s", strerror(errno));
		struct ibv_srq *bad = dpvt_xrc_srq_new(ctx0, pd0, cq0, hb, 16, 1);
		CHECK(!bad && errno == EINVAL, "XRC SRQ with an xrcd of another context: EINVAL, errno %d", errno);
		if (s)
			CHECK_EQ(ibv_destroy_srq(s), 0, "destroy SRQ");
		CHECK_EQ(ibv_close_xrcd(hb), 0, "close hb");
	}

	/* The other device (dpv1): the domain table is per process in
	 * embedded mode, so dpv1 reaches dpv0's domain for the inode. Linux
	 * keeps one table per ib_uverbs_device (another device would create
	 * its own domain); see doc/man/ibv_open_xrcd.3.md NOTES. */
	struct ibv_xrcd *hd1 = dpvt_xrcd_open(ctx1, fd5, 0, DPVT_XRCD_MASK);
	CHECK(hd1 != NULL, "dpv1, no O_CREAT: finds the process-wide domain, errno %d", errno);
	x = dpvt_xrcd_open(ctx1, fd5, O_CREAT | O_EXCL, DPVT_XRCD_MASK);
	CHECK(!x && errno == EINVAL, "dpv1, O_CREAT|O_EXCL: EINVAL (domain exists), errno %d", errno);
	if (hd1) {
		CHECK_EQ(dpvt_xrc_same_domain(ctx0, h1, ctx1, hd1), 1, "dpv1 handle: same domain as dpv0's");
		CHECK_EQ(ibv_close_xrcd(hd1), 0, "close dpv1 handle");
	}
	close(fd5);

	/* O_CREAT|O_EXCL on a new inode: created */
	int fdn = new_file(path2, sizeof(path2), "b");
	struct ibv_xrcd *hn = fdn >= 0 ? dpvt_xrcd_open(ctx0, fdn, O_CREAT | O_EXCL, DPVT_XRCD_MASK) : NULL;
	CHECK(hn != NULL, "O_CREAT|O_EXCL on a new inode: %s", strerror(errno));
	if (hn) {
		CHECK_EQ(dpvt_xrc_same_domain(ctx0, hn, ctx0, h1), 0, "another inode: another domain");
		CHECK_EQ(ibv_close_xrcd(hn), 0, "close hn");
	}
	/* closing the only handle destroyed it */
	x = fdn >= 0 ? dpvt_xrcd_open(ctx0, fdn, 0, DPVT_XRCD_MASK) : NULL;
	CHECK(!x && errno == EAGAIN, "inode b after its last close: EAGAIN, errno %d", errno);
	if (fdn >= 0)
		close(fdn);

	if (h2)
		CHECK_EQ(ibv_close_xrcd(h2), 0, "close h2");
	CHECK_EQ(ibv_close_xrcd(h1), 0, "close h1");
	x = dpvt_xrcd_open(ctx0, fd, 0, DPVT_XRCD_MASK);
	CHECK(!x && errno == EAGAIN, "inode a after the last close: EAGAIN, errno %d", errno);
	close(fd);
	unlink(linkp);
	unlink(path);
	unlink(path2);
}

/* EBADF: fd is neither -1 nor an open descriptor. */
static void test_bad_fd(void)
{
	char path[256];
	int fd = new_file(path, sizeof(path), "closed");
	int closed = fd;
	close(fd);
	unlink(path);
	struct ibv_xrcd *x = dpvt_xrcd_open(ctx0, closed, O_CREAT, DPVT_XRCD_MASK);
	CHECK(!x && errno == EBADF, "closed fd %d, O_CREAT: EBADF, got errno %d", closed, errno);
	x = dpvt_xrcd_open(ctx0, closed, 0, DPVT_XRCD_MASK);
	CHECK(!x && errno == EBADF, "closed fd, no O_CREAT: EBADF, got errno %d", errno);
	x = dpvt_xrcd_open(ctx0, -2, O_CREAT, DPVT_XRCD_MASK);
	CHECK(!x && errno == EBADF, "fd -2: EBADF, got errno %d", errno);
	x = dpvt_xrcd_open(ctx0, 1 << 30, O_CREAT, DPVT_XRCD_MASK);
	CHECK(!x && errno == EBADF, "fd 2^30: EBADF, got errno %d", errno);
	/* validation of comp_mask/oflags comes before the fd */
	x = dpvt_xrcd_open(ctx0, closed, O_CREAT | O_RDWR, DPVT_XRCD_MASK);
	CHECK(!x && errno == EINVAL, "closed fd with bad oflags: EINVAL first, got errno %d", errno);
}

/* "ibv_close_xrcd() returns 0 on success, or the value of errno on failure";
 * "ibv_close_xrcd() may fail if any other resource is still associated with
 * the XRCD being closed": EBUSY while an XRC SRQ, an XRC target QP or an
 * ibv_open_qp handle made through it exists; the handle and domain stay. */
static void test_close_busy(void)
{
	/* NULL: the rdma-core 44 inline ibv_close_xrcd() dereferences
	 * xrcd->context, so the provider op is called directly */
	struct verbs_context *vc = verbs_get_ctx(ctx0);
	CHECK(vc && vc->close_xrcd, "verbs_context has close_xrcd");
	if (vc && vc->close_xrcd)
		CHECK_EQ(vc->close_xrcd(NULL), EINVAL, "close_xrcd(NULL)");

	char path[256];
	int fd = new_file(path, sizeof(path), "busy");
	struct ibv_xrcd *h = dpvt_xrcd_open(ctx0, fd, O_CREAT, DPVT_XRCD_MASK);
	CHECK(h != NULL, "open busy domain: %s", strerror(errno));
	if (!h)
		return;

	/* XRC SRQ */
	struct ibv_srq *s = dpvt_xrc_srq_new(ctx0, pd0, cq0, h, 32, 2);
	CHECK(s != NULL, "XRC SRQ: %s", strerror(errno));
	if (s) {
		uint32_t n = 0;
		CHECK_EQ(ibv_get_srq_num(s, &n), 0, "get_srq_num");
		CHECK(n != 0 && n <= 0xffffff, "SRQ number is 24-bit and non-zero: %u", n);
		CHECK_EQ(ibv_close_xrcd(h), EBUSY, "close with an XRC SRQ: EBUSY");
		CHECK_EQ(ibv_close_xrcd(h), EBUSY, "close with an XRC SRQ again: EBUSY");
		CHECK_EQ(ibv_destroy_cq(cq0), EBUSY, "destroy the XRC SRQ's CQ: EBUSY");
		/* intact: the handle is usable and the domain reachable */
		struct ibv_srq *s2 = dpvt_xrc_srq_new(ctx0, pd0, cq0, h, 8, 1);
		CHECK(s2 != NULL, "handle usable after EBUSY: another SRQ");
		if (s2) {
			CHECK(dpvt_srq_num(s2) != n, "distinct SRQ numbers");
			CHECK_EQ(ibv_destroy_srq(s2), 0, "destroy SRQ 2");
		}
		struct ibv_xrcd *o = dpvt_xrcd_open(ctx0, fd, 0, DPVT_XRCD_MASK);
		CHECK(o != NULL, "domain still found after EBUSY");
		if (o) {
			CHECK_EQ(dpvt_xrc_same_domain(ctx0, o, ctx0, h), 1, "same domain after EBUSY");
			CHECK_EQ(ibv_close_xrcd(o), 0, "close the other handle (SRQ is h's)");
		}
		/* receives go to an XRC SRQ with ibv_post_srq_recv */
		static uint8_t buf[64];
		struct ibv_mr *mr = ibv_reg_mr(pd0, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
		struct ibv_sge sg = {.addr = (uintptr_t)buf, .length = sizeof(buf), .lkey = mr ? mr->lkey : 0};
		struct ibv_recv_wr rw = {.wr_id = 1, .sg_list = &sg, .num_sge = 1}, *bad = NULL;
		CHECK_EQ(ibv_post_srq_recv(s, &rw, &bad), 0, "post_srq_recv on an XRC SRQ");
		CHECK_EQ(ibv_destroy_srq(s), 0, "destroy XRC SRQ with a posted WR");
		if (mr)
			ibv_dereg_mr(mr);
	}
	CHECK_EQ(ibv_close_xrcd(h), 0, "close after destroying the SRQ");

	/* XRC target QP */
	h = dpvt_xrcd_open(ctx0, fd, O_CREAT | O_EXCL, DPVT_XRCD_MASK);
	CHECK(h != NULL, "closed domain can be created again with O_EXCL: %s", strerror(errno));
	if (!h)
		return;
	struct ibv_qp *t = dpvt_xrc_tgt_new(ctx0, h);
	CHECK(t != NULL, "target QP: %s", strerror(errno));
	if (t) {
		CHECK_EQ(t->qp_type, IBV_QPT_XRC_RECV, "target qp_type");
		CHECK(t->pd == NULL && t->send_cq == NULL && t->recv_cq == NULL && t->srq == NULL,
		      "target QP has no PD, CQs or SRQ");
		CHECK_EQ(ibv_close_xrcd(h), EBUSY, "close with a target QP: EBUSY");
		CHECK_EQ(dpvt_qp_to_init(t, NULL), 0, "target QP usable after EBUSY: RESET->INIT");
		/* an ibv_open_qp handle through another handle holds that one */
		struct ibv_xrcd *h2 = dpvt_xrcd_open(ctx0b, fd, 0, DPVT_XRCD_MASK);
		struct ibv_qp *o = h2 ? dpvt_xrc_open_qp(ctx0b, h2, t->qp_num, NULL) : NULL;
		CHECK(o != NULL, "open_qp through a second handle: %s", strerror(errno));
		if (o) {
			CHECK_EQ(ibv_close_xrcd(h2), EBUSY, "close with an open_qp handle: EBUSY");
			CHECK_EQ(ibv_destroy_qp(t), EBUSY, "destroy target with an open_qp handle: EBUSY");
			CHECK_EQ(ibv_destroy_qp(o), 0, "destroy the open_qp handle");
		}
		if (h2)
			CHECK_EQ(ibv_close_xrcd(h2), 0, "close second handle");
		CHECK_EQ(ibv_destroy_qp(t), 0, "destroy target QP");
	}
	CHECK_EQ(ibv_close_xrcd(h), 0, "close after destroying the target QP");
	close(fd);
	unlink(path);
}

/* "ibv_close_xrcd() closes the XRCD xrcd. If this is the last reference,
 * the XRCD will be destroyed." */
static void test_last_reference(void)
{
	char path[256];
	int fd = new_file(path, sizeof(path), "last");
	struct ibv_xrcd *h1 = dpvt_xrcd_open(ctx0, fd, O_CREAT, DPVT_XRCD_MASK);
	struct ibv_xrcd *h2 = dpvt_xrcd_open(ctx0, fd, O_CREAT, DPVT_XRCD_MASK);
	CHECK(h1 && h2, "two handles on one inode");
	if (!h1 || !h2)
		return;
	/* a target QP through h2 keeps h2 busy, not h1 */
	struct ibv_qp *t = dpvt_xrc_tgt_new(ctx0, h2);
	CHECK(t != NULL, "target QP through h2: %s", strerror(errno));
	CHECK_EQ(ibv_close_xrcd(h1), 0, "close h1 (not the last reference)");
	/* the domain stays: h2 works, and it is found without O_CREAT */
	struct ibv_srq *s = dpvt_xrc_srq_new(ctx0, pd0, cq0, h2, 8, 1);
	CHECK(s != NULL, "h2 still works after h1's close: %s", strerror(errno));
	struct ibv_xrcd *h3 = dpvt_xrcd_open(ctx0, fd, 0, DPVT_XRCD_MASK);
	CHECK(h3 != NULL, "open without O_CREAT still finds it: errno %d", errno);
	struct ibv_xrcd *x = dpvt_xrcd_open(ctx0, fd, O_CREAT | O_EXCL, DPVT_XRCD_MASK);
	CHECK(!x && errno == EINVAL, "O_CREAT|O_EXCL still sees it: EINVAL, errno %d", errno);
	if (h3 && t) {
		struct ibv_qp *o = dpvt_xrc_open_qp(ctx0, h3, t->qp_num, (void *)0x1234);
		CHECK(o != NULL, "open_qp through h3 finds h2's target QP: %s", strerror(errno));
		if (o) {
			CHECK(o->qp_context == (void *)0x1234, "open_qp sets qp_context");
			CHECK_EQ(o->qp_type, IBV_QPT_XRC_RECV, "opened qp_type");
			CHECK_EQ(ibv_destroy_qp(o), 0, "destroy opened handle");
		}
	}
	if (h3)
		CHECK_EQ(ibv_close_xrcd(h3), 0, "close h3");
	CHECK_EQ(ibv_close_xrcd(h2), EBUSY, "close h2 with SRQ and target QP: EBUSY");
	if (s)
		CHECK_EQ(ibv_destroy_srq(s), 0, "destroy SRQ");
	CHECK_EQ(ibv_close_xrcd(h2), EBUSY, "close h2 with target QP: EBUSY");
	if (t)
		CHECK_EQ(ibv_destroy_qp(t), 0, "destroy target QP");
	x = dpvt_xrcd_open(ctx0, fd, 0, DPVT_XRCD_MASK);
	CHECK(x != NULL, "domain still there while h2 is open");
	if (x)
		CHECK_EQ(ibv_close_xrcd(x), 0, "close it");
	CHECK_EQ(ibv_close_xrcd(h2), 0, "close h2 (the last reference)");
	x = dpvt_xrcd_open(ctx0, fd, 0, DPVT_XRCD_MASK);
	CHECK(!x && errno == EAGAIN, "after the last close: EAGAIN, errno %d", errno);
	x = dpvt_xrcd_open(ctx0, fd, O_CREAT | O_EXCL, DPVT_XRCD_MASK);
	CHECK(x != NULL, "after the last close: O_CREAT|O_EXCL creates a new one");
	if (x)
		CHECK_EQ(ibv_close_xrcd(x), 0, "close it");
	close(fd);
	unlink(path);
}

/* The XRC objects: ibv_create_srq_ex checks, ibv_get_srq_num, XRC QP
 * creation, ibv_open_qp errors. */
static void test_xrc_objects(void)
{
	struct ibv_xrcd *h = dpvt_xrcd_open(ctx0, -1, O_CREAT, DPVT_XRCD_MASK);
	struct ibv_xrcd *other = dpvt_xrcd_open(ctx0, -1, O_CREAT, DPVT_XRCD_MASK);
	CHECK(h && other, "anonymous domains");
	if (!h || !other)
		return;
	struct ibv_srq_init_attr_ex a;
	memset(&a, 0, sizeof(a));
	a.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_CQ;
	a.srq_type = IBV_SRQT_XRC;
	a.pd = pd0;
	a.cq = cq0;
	a.xrcd = h;
	a.attr.max_wr = 8;
	a.attr.max_sge = 1;
	errno = 0;
	struct ibv_srq *s = ibv_create_srq_ex(ctx0, &a);
	CHECK(!s && errno == EINVAL, "XRC SRQ without the XRCD bit: EINVAL, errno %d", errno);
	a.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_XRCD;
	errno = 0;
	s = ibv_create_srq_ex(ctx0, &a);
	CHECK(!s && errno == EINVAL, "XRC SRQ without the CQ bit: EINVAL, errno %d", errno);
	a.comp_mask |= IBV_SRQ_INIT_ATTR_CQ;
	a.cq = cq1;
	errno = 0;
	s = ibv_create_srq_ex(ctx0, &a);
	CHECK(!s && errno == EINVAL, "XRC SRQ with a CQ of another context: EINVAL, errno %d", errno);
	a.cq = cq0;
	a.pd = pd1;
	errno = 0;
	s = ibv_create_srq_ex(ctx0, &a);
	CHECK(!s && errno == EINVAL, "XRC SRQ with a PD of another context: EINVAL, errno %d", errno);
	a.pd = pd0;
	s = ibv_create_srq_ex(ctx0, &a);
	CHECK(s != NULL, "XRC SRQ: %s", strerror(errno));
	if (s) {
		CHECK(a.attr.max_wr >= 8, "max_wr reported");
		CHECK_EQ(ibv_get_srq_num(s, NULL), EINVAL, "get_srq_num(NULL out)");
		CHECK(dpvt_srq_num(s) != 0, "XRC SRQ number");
	}

	/* XRC initiator: ibv_create_qp_ex with only the PD mask (the inline
	 * goes to ibv_create_qp) and ibv_create_qp itself */
	struct ibv_qp *ini = dpvt_xrc_ini_new(ctx0, pd0, cq0, 16, 1);
	CHECK(ini != NULL, "XRC_SEND through create_qp_ex(PD only): %s", strerror(errno));
	if (ini) {
		CHECK_EQ(ini->qp_type, IBV_QPT_XRC_SEND, "initiator qp_type");
		CHECK(ini->srq == NULL, "initiator has no SRQ");
		static uint8_t b[8];
		struct ibv_mr *mr = ibv_reg_mr(pd0, b, sizeof(b), IBV_ACCESS_LOCAL_WRITE);
		struct ibv_sge sg = {.addr = (uintptr_t)b, .length = 8, .lkey = mr ? mr->lkey : 0};
		struct ibv_recv_wr rw = {.wr_id = 1, .sg_list = &sg, .num_sge = 1}, *bad = NULL;
		CHECK_EQ(dpvt_qp_to_init(ini, NULL), 0, "initiator RESET->INIT");
		CHECK_EQ(ibv_post_recv(ini, &rw, &bad), EINVAL, "post_recv on an initiator: EINVAL");
		if (mr)
			ibv_dereg_mr(mr);
		/* not a target: ibv_open_qp does not find it */
		struct ibv_qp *o = dpvt_xrc_open_qp(ctx0, h, ini->qp_num, NULL);
		CHECK(!o && errno == ENOENT, "open_qp of an initiator: ENOENT, errno %d", errno);
	}
	struct ibv_qp_init_attr ia;
	memset(&ia, 0, sizeof(ia));
	ia.qp_type = IBV_QPT_XRC_SEND;
	ia.send_cq = cq0;
	ia.recv_cq = cq0;
	ia.cap.max_send_wr = 4;
	ia.cap.max_send_sge = 1;
	struct ibv_qp *ini2 = ibv_create_qp(pd0, &ia);
	CHECK(ini2 != NULL, "XRC_SEND through ibv_create_qp: %s", strerror(errno));
	if (ini2)
		CHECK_EQ(ia.cap.max_recv_wr, 0, "initiator max_recv_wr 0");

	/* XRC target: needs the XRCD */
	struct ibv_qp_init_attr_ex qa;
	memset(&qa, 0, sizeof(qa));
	qa.qp_type = IBV_QPT_XRC_RECV;
	qa.comp_mask = IBV_QP_INIT_ATTR_PD;
	qa.pd = pd0;
	errno = 0;
	struct ibv_qp *bt = ibv_create_qp_ex(ctx0, &qa);
	CHECK(!bt && errno == EINVAL, "XRC_RECV without an XRCD: EINVAL, errno %d", errno);
	qa.comp_mask = IBV_QP_INIT_ATTR_XRCD | IBV_QP_INIT_ATTR_PD;
	qa.xrcd = NULL;
	errno = 0;
	bt = ibv_create_qp_ex(ctx0, &qa);
	CHECK(!bt && errno == EINVAL, "XRC_RECV with xrcd NULL: EINVAL, errno %d", errno);
	errno = 0;
	bt = dpvt_xrc_tgt_new(ctx1, h);
	CHECK(!bt && errno == EINVAL, "XRC_RECV with an xrcd of another context: EINVAL, errno %d", errno);
	struct ibv_qp *t = dpvt_xrc_tgt_new(ctx0, h);
	CHECK(t != NULL, "XRC_RECV: %s", strerror(errno));
	if (t) {
		static uint8_t b[8];
		struct ibv_mr *mr = ibv_reg_mr(pd0, b, sizeof(b), IBV_ACCESS_LOCAL_WRITE);
		struct ibv_sge sg = {.addr = (uintptr_t)b, .length = 8, .lkey = mr ? mr->lkey : 0};
		struct ibv_send_wr sw, *sbad = NULL;
		memset(&sw, 0, sizeof(sw));
		sw.sg_list = &sg;
		sw.num_sge = 1;
		sw.opcode = IBV_WR_SEND;
		CHECK_EQ(ibv_post_send(t, &sw, &sbad), EINVAL, "post_send on a target QP: EINVAL");
		CHECK(sbad == &sw, "bad_wr set");
		if (mr)
			ibv_dereg_mr(mr);

		/* ibv_open_qp errors */
		struct ibv_qp_open_attr oa;
		memset(&oa, 0, sizeof(oa));
		oa.comp_mask = IBV_QP_OPEN_ATTR_NUM | IBV_QP_OPEN_ATTR_XRCD | IBV_QP_OPEN_ATTR_TYPE;
		oa.qp_num = t->qp_num;
		oa.xrcd = h;
		oa.qp_type = IBV_QPT_RC;
		errno = 0;
		CHECK(!ibv_open_qp(ctx0, &oa) && errno == EINVAL, "open_qp type RC: EINVAL, errno %d", errno);
		oa.qp_type = IBV_QPT_XRC_RECV;
		oa.comp_mask = IBV_QP_OPEN_ATTR_NUM | IBV_QP_OPEN_ATTR_XRCD;
		errno = 0;
		CHECK(!ibv_open_qp(ctx0, &oa) && errno == EINVAL, "open_qp without TYPE: EINVAL, errno %d", errno);
		oa.comp_mask = IBV_QP_OPEN_ATTR_NUM | IBV_QP_OPEN_ATTR_XRCD | IBV_QP_OPEN_ATTR_TYPE |
			       IBV_QP_OPEN_ATTR_RESERVED;
		errno = 0;
		CHECK(!ibv_open_qp(ctx0, &oa) && errno == EINVAL, "open_qp reserved bit: EINVAL, errno %d", errno);
		errno = 0;
		CHECK(!ibv_open_qp(ctx0, NULL) && errno == EINVAL, "open_qp(NULL): EINVAL, errno %d", errno);
		struct ibv_qp *o = dpvt_xrc_open_qp(ctx0, other, t->qp_num, NULL);
		CHECK(!o && errno == ENOENT, "open_qp in another domain: ENOENT, errno %d", errno);
		o = dpvt_xrc_open_qp(ctx0, h, 0xfffff0, NULL);
		CHECK(!o && errno == ENOENT, "open_qp of no QP: ENOENT, errno %d", errno);
		/* two handles on one target */
		struct ibv_qp *o1 = dpvt_xrc_open_qp(ctx0, h, t->qp_num, NULL);
		struct ibv_qp *o2 = dpvt_xrc_open_qp(ctx0b, other, t->qp_num, NULL);
		CHECK(o1 != NULL, "open_qp: %s", strerror(errno));
		CHECK(!o2 && errno == ENOENT, "open_qp of it through another domain: ENOENT");
		o2 = dpvt_xrc_open_qp(ctx0, h, t->qp_num, NULL);
		CHECK(o2 != NULL && o2 != o1, "second open_qp handle");
		CHECK_EQ(ibv_destroy_qp(t), EBUSY, "destroy target with 2 handles: EBUSY");
		if (o1)
			CHECK_EQ(ibv_destroy_qp(o1), 0, "destroy handle 1");
		CHECK_EQ(ibv_destroy_qp(t), EBUSY, "destroy target with 1 handle: EBUSY");
		if (o2)
			CHECK_EQ(ibv_destroy_qp(o2), 0, "destroy handle 2");
		CHECK_EQ(ibv_destroy_qp(t), 0, "destroy target");
	}
	if (ini)
		CHECK_EQ(ibv_destroy_qp(ini), 0, "destroy initiator");
	if (ini2)
		CHECK_EQ(ibv_destroy_qp(ini2), 0, "destroy initiator 2");
	if (s)
		CHECK_EQ(ibv_destroy_srq(s), 0, "destroy SRQ");
	CHECK_EQ(ibv_close_xrcd(h), 0, "close h");
	CHECK_EQ(ibv_close_xrcd(other), 0, "close other");
}

/* RESET -> INIT -> ERR of target QP t: IBV_EVENT_QP_LAST_WQE_REACHED (IBA
 * 11.6.3: an XRC target leaving a live state for ERR). */
static int tgt_init_err(struct ibv_qp *t)
{
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = 1};
	int r = ibv_modify_qp(t, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
	a.qp_state = IBV_QPS_ERR;
	return r ? r : ibv_modify_qp(t, &a, IBV_QP_STATE);
}

/* The target QP's events reach every ibv_open_qp handle, each with its own
 * pointer, on its own context (as the kernel's shared QP event handler);
 * a destroyed handle gets none. */
static void test_open_qp_events(void)
{
	struct ibv_xrcd *h = dpvt_xrcd_open(ctx0, -1, 0, DPVT_XRCD_MASK);
	struct ibv_qp *t = h ? dpvt_xrc_tgt_new(ctx0, h) : NULL;
	struct ibv_qp *o = t ? dpvt_xrc_open_qp(ctx0b, h, t->qp_num, (void *)0x77) : NULL;
	CHECK(o != NULL, "events: domain, target QP, a handle on another context: %s", strerror(errno));
	if (!o)
		return;
	dpvt_drain_async(ctx0);
	dpvt_drain_async(ctx0b);
	CHECK_EQ(tgt_init_err(t), 0, "events: target RESET -> INIT -> ERR");
	CHECK(dpvt_wait_async(ctx0, IBV_EVENT_QP_LAST_WQE_REACHED, t, 2000, NULL),
	      "events: LAST_WQE_REACHED for the creator's QP on its context");
	CHECK(dpvt_wait_async(ctx0b, IBV_EVENT_QP_LAST_WQE_REACHED, o, 2000, NULL),
	      "events: LAST_WQE_REACHED for the handle, with the handle as element, on its context");
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_RESET};
	CHECK_EQ(ibv_modify_qp(o, &a, IBV_QP_STATE), 0, "events: RESET through the handle");
	CHECK_EQ(ibv_destroy_qp(o), 0, "events: destroy the handle");
	CHECK_EQ(tgt_init_err(t), 0, "events: RESET -> INIT -> ERR again");
	CHECK(dpvt_wait_async(ctx0, IBV_EVENT_QP_LAST_WQE_REACHED, t, 2000, NULL), "events: the creator's again");
	int others = 0;
	CHECK(!dpvt_wait_async(ctx0b, IBV_EVENT_QP_LAST_WQE_REACHED, NULL, 300, &others) && !others,
	      "events: none for the destroyed handle (%d others)", others);
	CHECK_EQ(ibv_destroy_qp(t), 0, "events: destroy the target");
	CHECK_EQ(ibv_close_xrcd(h), 0, "events: close the domain");
}

int main(void)
{
	ctx0 = dpvt_open_dev("dpv0");
	ctx0b = dpvt_open_dev("dpv0");
	ctx1 = dpvt_open_dev("dpv1");
	if (!ctx0 || !ctx0b || !ctx1 || !mkdtemp(tmpdir)) {
		fprintf(stderr, "set-up failed\n");
		return 1;
	}
	struct ibv_device_attr da;
	CHECK_EQ(ibv_query_device(ctx0, &da), 0, "query_device");
	CHECK(da.device_cap_flags & IBV_DEVICE_XRC, "IBV_DEVICE_XRC advertised");
	pd0 = ibv_alloc_pd(ctx0);
	pd0b = ibv_alloc_pd(ctx0b);
	pd1 = ibv_alloc_pd(ctx1);
	cq0 = ibv_create_cq(ctx0, 64, NULL, NULL, 0);
	cq0b = ibv_create_cq(ctx0b, 64, NULL, NULL, 0);
	cq1 = ibv_create_cq(ctx1, 64, NULL, NULL, 0);
	if (!pd0 || !pd0b || !pd1 || !cq0 || !cq0b || !cq1) {
		fprintf(stderr, "set-up failed\n");
		return 1;
	}
	char path[256];
	int fd = new_file(path, sizeof(path), "attr");
	test_attr_checks(fd);
	close(fd);
	unlink(path);
	test_fd_minus_one();
	test_inode();
	test_bad_fd();
	test_close_busy();
	test_last_reference();
	test_xrc_objects();
	test_open_qp_events();

	CHECK_EQ(ibv_destroy_cq(cq0), 0, "destroy cq0 (no XRC SRQ left)");
	CHECK_EQ(ibv_destroy_cq(cq0b), 0, "destroy cq0b");
	CHECK_EQ(ibv_destroy_cq(cq1), 0, "destroy cq1");
	CHECK_EQ(ibv_dealloc_pd(pd0), 0, "dealloc pd0");
	CHECK_EQ(ibv_dealloc_pd(pd0b), 0, "dealloc pd0b");
	CHECK_EQ(ibv_dealloc_pd(pd1), 0, "dealloc pd1");
	ibv_close_device(ctx0b);
	ibv_close_device(ctx1);
	ibv_close_device(ctx0);
	rmdir(tmpdir);
	return dpvt_finish();
}
