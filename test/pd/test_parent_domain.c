/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Thread domains and parent domains (doc/man/ibv_alloc_td.3.md,
 * doc/man/ibv_alloc_parent_domain.3.md):
 *  - ibv_alloc_td/ibv_dealloc_td and ibv_alloc_parent_domain argument checks;
 *  - a parent domain is accepted by every verb taking a PD (MR, RC/UC/UD QP,
 *    SRQ, AH, ibv_create_cq_ex with IBV_CQ_INIT_ATTR_MASK_PD) and is the same
 *    protection domain as its base PD (MRs of one work with QPs of the other);
 *    ibv_dealloc_pd returns EBUSY while objects use it;
 *  - custom allocators: exactly which buffers (resource codes) each object
 *    takes, the callback arguments, free exactly once per successful alloc,
 *    IBV_ALLOCATOR_USE_DEFAULT, allocation failures without leaks;
 *  - traffic (RC SEND/WRITE/READ, UD, SRQ) through custom-allocated queues;
 *  - thread domains: lockless QPs/CQs driven by their owner thread while
 *    another thread drives the engine (packets deferred to the TD).
 *
 * Black-box (libdpverbs.so, <infiniband/verbs.h>, <dpverbs.h>), one process,
 * the built-in default configuration (dpv0 <-> dpv1).
 */
#include <stdatomic.h>

#include "dpvt_ca.h"

static struct ibv_context *ctx0, *ctx1;

/* ---- ibv_alloc_td / ibv_dealloc_td ---- */

static void test_td_api(void)
{
	struct ibv_td_init_attr ta = {.comp_mask = 0};
	struct ibv_td *td;

	errno = 0;
	td = ibv_alloc_td(ctx0, NULL);
	CHECK(!td && errno == EINVAL, "alloc_td(attr NULL): NULL/EINVAL, got %p errno %d", (void *)td, errno);
	ta.comp_mask = 1;
	errno = 0;
	td = ibv_alloc_td(ctx0, &ta);
	CHECK(!td && errno == EINVAL, "alloc_td(comp_mask 1): NULL/EINVAL, got %p errno %d", (void *)td, errno);
	ta.comp_mask = 1u << 31;
	errno = 0;
	td = ibv_alloc_td(ctx0, &ta);
	CHECK(!td && errno == EINVAL, "alloc_td(comp_mask 1<<31): NULL/EINVAL, got errno %d", errno);

	ta.comp_mask = 0;
	td = ibv_alloc_td(ctx0, &ta);
	CHECK(td != NULL, "alloc_td: %s", strerror(errno));
	if (!td)
		return;
	CHECK(td->context == ctx0, "td->context is the context");
	/* several TDs per context */
	struct ibv_td *td2 = ibv_alloc_td(ctx0, &ta);
	CHECK(td2 != NULL && td2 != td, "second alloc_td");

	struct ibv_pd *pd = ibv_alloc_pd(ctx0);
	struct ibv_parent_domain_init_attr pa;
	memset(&pa, 0, sizeof(pa));
	pa.pd = pd;
	pa.td = td;
	struct ibv_pd *p1 = ibv_alloc_parent_domain(ctx0, &pa);
	struct ibv_pd *p2 = ibv_alloc_parent_domain(ctx0, &pa);
	CHECK(p1 && p2 && p1 != p2, "two parent domains on one TD");
	CHECK_EQ(ibv_dealloc_td(td), EBUSY, "dealloc_td while two parent domains use it");
	CHECK_EQ(ibv_dealloc_pd(p1), 0, "dealloc parent 1");
	CHECK_EQ(ibv_dealloc_td(td), EBUSY, "dealloc_td while one parent domain uses it");
	CHECK_EQ(ibv_dealloc_pd(p2), 0, "dealloc parent 2");
	CHECK_EQ(ibv_dealloc_td(td), 0, "dealloc_td once unused");
	if (td2)
		CHECK_EQ(ibv_dealloc_td(td2), 0, "dealloc_td (never used)");

	/* a TD of another context: EINVAL */
	struct ibv_td *td1 = ibv_alloc_td(ctx1, &ta);
	CHECK(td1 != NULL, "alloc_td on ctx1");
	pa.td = td1;
	errno = 0;
	struct ibv_pd *px = ibv_alloc_parent_domain(ctx0, &pa);
	CHECK(!px && errno == EINVAL, "parent domain with a TD of another context: EINVAL, got %p errno %d",
	      (void *)px, errno);
	if (px)
		ibv_dealloc_pd(px);
	if (td1)
		CHECK_EQ(ibv_dealloc_td(td1), 0, "dealloc td1 (the failed parent domain took no reference)");
	CHECK_EQ(ibv_dealloc_pd(pd), 0, "dealloc base pd");
}

/* ---- ibv_alloc_parent_domain argument checks ---- */

static void *dummy_alloc(struct ibv_pd *pd, void *ctx, size_t size, size_t align, uint64_t type)
{
	(void)pd, (void)ctx, (void)size, (void)align, (void)type;
	return IBV_ALLOCATOR_USE_DEFAULT;
}
static void dummy_free(struct ibv_pd *pd, void *ctx, void *p, uint64_t type)
{
	(void)pd, (void)ctx, (void)p, (void)type;
}

static void test_parent_args(void)
{
	struct ibv_pd *pd = ibv_alloc_pd(ctx0), *pd1 = ibv_alloc_pd(ctx1);
	struct ibv_parent_domain_init_attr a;
	struct ibv_pd *p;

	errno = 0;
	p = ibv_alloc_parent_domain(ctx0, NULL);
	CHECK(!p && errno == EINVAL, "attr NULL: NULL/EINVAL, got %p errno %d", (void *)p, errno);

	memset(&a, 0, sizeof(a));
	errno = 0;
	p = ibv_alloc_parent_domain(ctx0, &a);
	CHECK(!p && errno == EINVAL, "pd NULL: NULL/EINVAL, got %p errno %d", (void *)p, errno);

	a.pd = pd1;
	errno = 0;
	p = ibv_alloc_parent_domain(ctx0, &a);
	CHECK(!p && errno == EINVAL, "pd of another context: EINVAL, got errno %d", errno);

	a.pd = pd;
	a.comp_mask = 1u << 2;
	errno = 0;
	p = ibv_alloc_parent_domain(ctx0, &a);
	CHECK(!p && errno == EINVAL, "comp_mask bit 2: EINVAL, got errno %d", errno);
	a.comp_mask = IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT | (1u << 31);
	errno = 0;
	p = ibv_alloc_parent_domain(ctx0, &a);
	CHECK(!p && errno == EINVAL, "comp_mask bit 31: EINVAL, got errno %d", errno);

	a.comp_mask = IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS;
	a.alloc = NULL;
	a.free = dummy_free;
	errno = 0;
	p = ibv_alloc_parent_domain(ctx0, &a);
	CHECK(!p && errno == EINVAL, "ALLOCATORS, alloc NULL: EINVAL, got errno %d", errno);
	a.alloc = dummy_alloc;
	a.free = NULL;
	errno = 0;
	p = ibv_alloc_parent_domain(ctx0, &a);
	CHECK(!p && errno == EINVAL, "ALLOCATORS, free NULL: EINVAL, got errno %d", errno);
	a.alloc = NULL;
	errno = 0;
	p = ibv_alloc_parent_domain(ctx0, &a);
	CHECK(!p && errno == EINVAL, "ALLOCATORS, both NULL: EINVAL, got errno %d", errno);

	/* the callbacks are ignored without ALLOCATORS (no comp_mask bit) */
	a.comp_mask = 0;
	a.alloc = NULL;
	a.free = dummy_free;
	p = ibv_alloc_parent_domain(ctx0, &a);
	CHECK(p != NULL, "no comp_mask, stray free callback: allowed (%s)", strerror(errno));
	CHECK(p && p->context == ctx0, "parent domain's context");

	/* a parent domain as the pd of another parent domain: EINVAL */
	if (p) {
		struct ibv_parent_domain_init_attr a2;
		memset(&a2, 0, sizeof(a2));
		a2.pd = p;
		errno = 0;
		struct ibv_pd *pp = ibv_alloc_parent_domain(ctx0, &a2);
		CHECK(!pp && errno == EINVAL, "pd that is a parent domain: EINVAL, got %p errno %d", (void *)pp,
		      errno);
		CHECK_EQ(ibv_dealloc_pd(pd), EBUSY, "dealloc base PD while a parent domain exists");
		CHECK_EQ(ibv_dealloc_pd(p), 0, "dealloc parent domain");
	}

	/* PD_CONTEXT alone, ALLOCATORS alone, both, with TD */
	a.comp_mask = IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT;
	a.pd_context = &a;
	p = ibv_alloc_parent_domain(ctx0, &a);
	CHECK(p != NULL, "PD_CONTEXT alone: %s", strerror(errno));
	if (p)
		CHECK_EQ(ibv_dealloc_pd(p), 0, "dealloc");
	a.comp_mask = IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS;
	a.alloc = dummy_alloc;
	a.free = dummy_free;
	p = ibv_alloc_parent_domain(ctx0, &a);
	CHECK(p != NULL, "ALLOCATORS alone: %s", strerror(errno));
	if (p)
		CHECK_EQ(ibv_dealloc_pd(p), 0, "dealloc");
	struct ibv_td_init_attr ta = {0};
	struct ibv_td *td = ibv_alloc_td(ctx0, &ta);
	a.td = td;
	a.comp_mask = IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS | IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT;
	p = ibv_alloc_parent_domain(ctx0, &a);
	CHECK(p != NULL, "ALLOCATORS + PD_CONTEXT + TD: %s", strerror(errno));
	if (p) {
		CHECK_EQ(ibv_dealloc_pd(pd), EBUSY, "dealloc base PD while a parent domain with TD exists");
		CHECK_EQ(ibv_dealloc_td(td), EBUSY, "dealloc TD while a parent domain uses it");
		CHECK_EQ(ibv_dealloc_pd(p), 0, "dealloc");
	}
	if (td)
		CHECK_EQ(ibv_dealloc_td(td), 0, "dealloc td");
	/* failed ibv_alloc_parent_domain calls took no reference */
	CHECK_EQ(ibv_dealloc_pd(pd), 0, "dealloc base PD");
	CHECK_EQ(ibv_dealloc_pd(pd1), 0, "dealloc pd1");
}

/* ---- a parent domain works wherever a PD does ---- */

static void test_pd_everywhere(void)
{
	struct ibv_pd *pd = ibv_alloc_pd(ctx0), *pd_other = ibv_alloc_pd(ctx0), *pdb = ibv_alloc_pd(ctx1);
	struct ibv_pd *par = dpvt_parent_new(pd, NULL, NULL);
	CHECK(pd && pd_other && pdb && par, "PDs");
	if (!pd || !pd_other || !pdb || !par)
		return;

	/* CQ_ex with IBV_CQ_INIT_ATTR_MASK_PD: a parent domain (a plain PD: EINVAL) */
	struct ibv_cq *cq_plainpd = dpvt_cq_new(ctx0, pd, 16);
	CHECK(!cq_plainpd && errno == EINVAL, "create_cq_ex(MASK_PD, plain PD): EINVAL, got %p errno %d",
	      (void *)cq_plainpd, errno);
	if (cq_plainpd)
		ibv_destroy_cq(cq_plainpd);
	{
		struct ibv_cq_init_attr_ex x;
		memset(&x, 0, sizeof(x));
		x.cqe = 16;
		x.comp_mask = IBV_CQ_INIT_ATTR_MASK_PD;
		errno = 0;
		struct ibv_cq_ex *c = ibv_create_cq_ex(ctx0, &x);
		CHECK(!c && errno == EINVAL, "create_cq_ex(MASK_PD, parent_domain NULL): EINVAL, got errno %d", errno);
		struct ibv_pd *par1 = NULL;
		struct ibv_pd *pd1tmp = ibv_alloc_pd(ctx1);
		if (pd1tmp)
			par1 = dpvt_parent_new(pd1tmp, NULL, NULL);
		x.parent_domain = par1;
		errno = 0;
		c = ibv_create_cq_ex(ctx0, &x);
		CHECK(!c && errno == EINVAL, "create_cq_ex(MASK_PD, parent domain of another context): EINVAL, got errno %d",
		      errno);
		if (par1)
			ibv_dealloc_pd(par1);
		if (pd1tmp)
			ibv_dealloc_pd(pd1tmp);
	}

	struct dpvt_ep a = {.ctx = ctx0}, a2 = {.ctx = ctx0}, b = {.ctx = ctx1}, b2 = {.ctx = ctx1};
	/* MRs: a's buffer through the base PD, a2's through the parent domain */
	CHECK(dpvt_ep_traffic_buf(&a, pd) == 0, "reg_mr through the base PD");
	CHECK(dpvt_ep_traffic_buf(&a2, par) == 0, "reg_mr through the parent domain");
	CHECK(a2.mr && a2.mr->pd == par, "mr->pd is the parent domain given");
	CHECK(dpvt_ep_traffic_buf(&b, pdb) == 0 && dpvt_ep_traffic_buf(&b2, pdb) == 0, "peer MRs");

	/* a: RC QP of the parent domain with CQs of the parent domain */
	a.scq = dpvt_cq_new(ctx0, par, 64);
	a.rcq = dpvt_cq_new(ctx0, par, 64);
	CHECK(a.scq && a.rcq, "create_cq_ex(MASK_PD, parent domain): %s", strerror(errno));
	a.qp = dpvt_qp_new_ex(par, IBV_QPT_RC, a.scq, a.rcq, NULL, 0);
	CHECK(a.qp != NULL, "RC QP through the parent domain: %s", strerror(errno));
	CHECK(a.qp && a.qp->pd == par, "qp->pd is the parent domain");
	/* a2: RC QP of the base PD with plain CQs */
	a2.scq = dpvt_cq_new(ctx0, NULL, 64);
	a2.rcq = dpvt_cq_new(ctx0, NULL, 64);
	a2.qp = dpvt_qp_new_ex(pd, IBV_QPT_RC, a2.scq, a2.rcq, NULL, 0);
	CHECK(a2.qp != NULL, "RC QP through the base PD");
	b.scq = dpvt_cq_new(ctx1, NULL, 64);
	b.rcq = dpvt_cq_new(ctx1, NULL, 64);
	b.qp = dpvt_qp_new_ex(pdb, IBV_QPT_RC, b.scq, b.rcq, NULL, 0);
	b2.scq = dpvt_cq_new(ctx1, NULL, 64);
	b2.rcq = dpvt_cq_new(ctx1, NULL, 64);
	b2.qp = dpvt_qp_new_ex(pdb, IBV_QPT_RC, b2.scq, b2.rcq, NULL, 0);
	if (!a.qp || !a2.qp || !b.qp || !b2.qp)
		return;
	CHECK(dpvt_connect(a.qp, ctx0, NULL, b.qp, ctx1, NULL, false) == 0, "connect parent-domain QP");
	CHECK(dpvt_connect(a2.qp, ctx0, NULL, b2.qp, ctx1, NULL, false) == 0, "connect base-PD QP");

	/* swap the MRs: the parent domain's QP uses the base PD's MR (a.mr is
	 * already the base PD's), the base PD's QP uses the parent domain's MR
	 * (a2.mr) -- both for local keys and as the target of WRITE/READ. */
	dpvt_rc_traffic(&a, &b, 101, "parent QP + base-PD MR");
	dpvt_rc_traffic(&a2, &b2, 102, "base-PD QP + parent MR");
	/* and crossed: the parent domain's QP with the parent domain's MR */
	{
		struct dpvt_ep x = a;
		x.buf = a2.buf;
		x.mr = a2.mr;
		dpvt_rc_traffic(&x, &b, 103, "parent QP + parent MR");
		struct dpvt_ep y = a2;
		y.buf = a.buf;
		y.mr = a.mr;
		dpvt_rc_traffic(&y, &b2, 104, "base-PD QP + base-PD MR");
	}

	/* UC and UD QPs, SRQ, AH through the parent domain */
	struct ibv_qp *uc = dpvt_qp_new_ex(par, IBV_QPT_UC, a.scq, a.rcq, NULL, 0);
	CHECK(uc != NULL, "UC QP through the parent domain: %s", strerror(errno));
	struct ibv_qp *ud = dpvt_qp_new_ex(par, IBV_QPT_UD, a.scq, a.rcq, NULL, 0);
	CHECK(ud != NULL, "UD QP through the parent domain: %s", strerror(errno));
	struct ibv_srq *srq = dpvt_srq_new(par, 16);
	CHECK(srq != NULL, "SRQ through the parent domain: %s", strerror(errno));
	CHECK(srq && srq->pd == par, "srq->pd is the parent domain");
	struct ibv_qp *rc_srq = srq ? dpvt_qp_new_ex(par, IBV_QPT_RC, a.scq, a.rcq, srq, 0) : NULL;
	CHECK(rc_srq != NULL, "RC QP with the parent domain's SRQ");

	/* UD traffic: parent-domain UD QP, AH through the parent domain, the
	 * base PD's MR; and the peer's UD QP */
	if (ud) {
		CHECK(dpvt_ud_to_rts(ud, 0x1234) == 0, "UD to RTS");
		struct ibv_qp *udb = dpvt_qp_new_ex(pdb, IBV_QPT_UD, b.scq, b.rcq, NULL, 0);
		CHECK(udb && dpvt_ud_to_rts(udb, 0x1234) == 0, "peer UD QP");
		if (udb) {
			struct dpvt_ep ua = {.ctx = ctx0, .qp = ud, .scq = a.scq, .rcq = a.rcq, .buf = a.buf, .mr = a.mr};
			struct dpvt_ep ub = {.ctx = ctx1, .qp = udb, .scq = b.scq, .rcq = b.rcq, .buf = b.buf, .mr = b.mr};
			dpvt_ud_traffic(&ua, par, &ub, 0x1234, 3, 105, "UD parent -> plain, AH via parent");
			/* back: into the parent domain's UD QP, receive in the parent MR */
			struct dpvt_ep ua2 = ua;
			ua2.buf = a2.buf;
			ua2.mr = a2.mr;
			dpvt_ud_traffic(&ub, pdb, &ua2, 0x1234, 3, 106, "UD plain -> parent, parent MR");
			CHECK_EQ(ibv_destroy_qp(udb), 0, "destroy peer UD");
		}
	}
	struct ibv_ah_attr aa;
	memset(&aa, 0, sizeof(aa));
	aa.is_global = 1;
	aa.port_num = 1;
	aa.grh.sgid_index = 1;
	aa.grh.hop_limit = 64;
	ibv_query_gid(ctx1, 1, 1, &aa.grh.dgid);
	struct ibv_ah *ah = ibv_create_ah(par, &aa);
	CHECK(ah != NULL, "AH through the parent domain: %s", strerror(errno));
	CHECK(ah && ah->pd == par, "ah->pd is the parent domain");

	/* an lkey of another PD is refused: protection is really enforced */
	{
		uint8_t *ob = aligned_alloc(4096, 4096);
		struct ibv_mr *omr = ibv_reg_mr(pd_other, ob, 4096, IBV_ACCESS_LOCAL_WRITE);
		CHECK(omr != NULL, "MR of another PD");
		if (omr) {
			CHECK(dpvt_post_wr(a.qp, IBV_WR_SEND, 77, ob, 64, omr->lkey, 0, 0, 0, IBV_SEND_SIGNALED) == 0,
			      "post with a foreign lkey");
			struct ibv_wc wc;
			int n = dpvt_poll_n(a.scq, &wc, 1, 3000);
			CHECK(n == 1 && wc.wr_id == 77 && wc.status == IBV_WC_LOC_PROT_ERR,
			      "foreign lkey: LOC_PROT_ERR, got n %d status %s", n, n ? ibv_wc_status_str(wc.status) : "-");
			CHECK_EQ(ibv_dereg_mr(omr), 0, "dereg foreign MR");
		}
		free(ob);
	}

	/* ibv_dealloc_pd(parent): EBUSY while anything made through it exists */
	CHECK_EQ(ibv_dealloc_pd(pd), EBUSY, "dealloc base while the parent domain exists");
	CHECK_EQ(ibv_dealloc_pd(par), EBUSY, "dealloc parent: everything");
	if (ah)
		CHECK_EQ(ibv_destroy_ah(ah), 0, "destroy AH");
	CHECK_EQ(ibv_dealloc_pd(par), EBUSY, "dealloc parent: QPs, SRQ, CQs, MR");
	if (rc_srq)
		CHECK_EQ(ibv_destroy_qp(rc_srq), 0, "destroy RC(SRQ) QP");
	if (srq)
		CHECK_EQ(ibv_destroy_srq(srq), 0, "destroy SRQ");
	CHECK_EQ(ibv_dealloc_pd(par), EBUSY, "dealloc parent: QPs, CQs, MR");
	if (uc)
		CHECK_EQ(ibv_destroy_qp(uc), 0, "destroy UC");
	if (ud)
		CHECK_EQ(ibv_destroy_qp(ud), 0, "destroy UD");
	CHECK_EQ(ibv_destroy_qp(a.qp), 0, "destroy RC");
	a.qp = NULL;
	CHECK_EQ(ibv_dealloc_pd(par), EBUSY, "dealloc parent: CQs, MR");
	CHECK_EQ(ibv_destroy_cq(a.scq), 0, "destroy CQ_ex 1");
	CHECK_EQ(ibv_dealloc_pd(par), EBUSY, "dealloc parent: a CQ, MR");
	CHECK_EQ(ibv_destroy_cq(a.rcq), 0, "destroy CQ_ex 2");
	a.scq = a.rcq = NULL;
	CHECK_EQ(ibv_dealloc_pd(par), EBUSY, "dealloc parent: MR");
	CHECK_EQ(ibv_dereg_mr(a2.mr), 0, "dereg parent MR");
	a2.mr = NULL;
	CHECK_EQ(ibv_dealloc_pd(par), 0, "dealloc parent once unused");
	CHECK_EQ(ibv_dealloc_pd(pd), EBUSY, "dealloc base: its own QP and MR remain");
	dpvt_ep_release(&a, "a");
	dpvt_ep_release(&a2, "a2");
	dpvt_ep_release(&b, "b");
	dpvt_ep_release(&b2, "b2");
	CHECK_EQ(ibv_dealloc_pd(pd), 0, "dealloc base PD");
	CHECK_EQ(ibv_dealloc_pd(pd_other), 0, "dealloc other PD");
	CHECK_EQ(ibv_dealloc_pd(pdb), 0, "dealloc peer PD");
}

/* ---- counting allocators: which buffers each object takes ---- */

static struct dpvt_ca g_ca;

static void expect_codes(struct dpvt_ca *c, const int *codes, int n, const char *label)
{
	int exp[DPV_RES_NR] = {0};
	for (int i = 0; i < n; i++)
		exp[codes[i]]++;
	dpvt_ca_expect(c->allocs, exp, "allocs", label);
}

static void expect_frees_match(struct dpvt_ca *c, const char *label)
{
	/* frees of this step == allocs of this step, per code */
	dpvt_ca_expect(c->frees, c->allocs, "frees", label);
	CHECK_EQ(c->live, 0, "no live buffers");
}

static void test_counting(void)
{
	struct dpvt_ca *c = &g_ca;
	dpvt_ca_init(c);
	struct ibv_pd *pd = ibv_alloc_pd(ctx0);
	struct ibv_pd *par = dpvt_parent_new(pd, NULL, c);
	CHECK(par != NULL, "parent domain with counting allocators");
	if (!par)
		return;
	CHECK_EQ(c->nrec, 0, "no allocation at ibv_alloc_parent_domain");
	struct ibv_cq *pcq = ibv_create_cq(ctx0, 64, NULL, NULL, 0);
	CHECK(pcq != NULL, "plain CQ");
	CHECK_EQ(c->nrec, 0, "ibv_create_cq (no PD) does not use the allocator");

	/* RC: QP, SQ, RQ, RC */
	dpvt_ca_zero(c);
	struct ibv_qp *qp = dpvt_qp_new_ex(par, IBV_QPT_RC, pcq, pcq, NULL, 0);
	CHECK(qp != NULL, "RC QP: %s", strerror(errno));
	expect_codes(c, (int[]){DPV_RES_QP, DPV_RES_QP_SQ, DPV_RES_QP_RQ, DPV_RES_QP_RC}, 4, "RC");
	CHECK(qp && dpvt_ca_inside(c, qp, DPV_RES_QP), "the RC QP object lives in the DPV_RES_QP buffer");
	if (qp)
		CHECK_EQ(ibv_destroy_qp(qp), 0, "destroy RC");
	expect_frees_match(c, "RC destroyed");

	/* RC with send_ops_flags: + WRB */
	dpvt_ca_zero(c);
	qp = dpvt_qp_new_ex(par, IBV_QPT_RC, pcq, pcq, NULL, IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_WRITE);
	CHECK(qp != NULL, "RC QP (SEND_OPS_FLAGS): %s", strerror(errno));
	expect_codes(c, (int[]){DPV_RES_QP, DPV_RES_QP_SQ, DPV_RES_QP_RQ, DPV_RES_QP_RC, DPV_RES_QP_WRB}, 5,
		     "RC+ops");
	if (qp)
		CHECK_EQ(ibv_destroy_qp(qp), 0, "destroy RC+ops");
	expect_frees_match(c, "RC+ops destroyed");

	/* UC: as RC */
	dpvt_ca_zero(c);
	qp = dpvt_qp_new_ex(par, IBV_QPT_UC, pcq, pcq, NULL, 0);
	CHECK(qp != NULL, "UC QP: %s", strerror(errno));
	expect_codes(c, (int[]){DPV_RES_QP, DPV_RES_QP_SQ, DPV_RES_QP_RQ, DPV_RES_QP_RC}, 4, "UC");
	if (qp)
		CHECK_EQ(ibv_destroy_qp(qp), 0, "destroy UC");
	expect_frees_match(c, "UC destroyed");

	/* UD: QP, SQ ring, RQ ring, engine state */
	dpvt_ca_zero(c);
	qp = dpvt_qp_new_ex(par, IBV_QPT_UD, pcq, pcq, NULL, 0);
	CHECK(qp != NULL, "UD QP: %s", strerror(errno));
	expect_codes(c, (int[]){DPV_RES_QP, DPV_RES_QP_SQ, DPV_RES_QP_RQ, DPV_RES_QP_RC}, 4, "UD");
	if (qp)
		CHECK_EQ(ibv_destroy_qp(qp), 0, "destroy UD");
	expect_frees_match(c, "UD destroyed");

	/* UD with send_ops_flags: + WRB */
	dpvt_ca_zero(c);
	qp = dpvt_qp_new_ex(par, IBV_QPT_UD, pcq, pcq, NULL, IBV_QP_EX_WITH_SEND);
	CHECK(qp != NULL, "UD QP (SEND_OPS_FLAGS): %s", strerror(errno));
	expect_codes(c, (int[]){DPV_RES_QP, DPV_RES_QP_SQ, DPV_RES_QP_RQ, DPV_RES_QP_RC, DPV_RES_QP_WRB}, 5,
		     "UD+ops");
	if (qp)
		CHECK_EQ(ibv_destroy_qp(qp), 0, "destroy UD+ops");
	expect_frees_match(c, "UD+ops destroyed");

	/* SRQ: SRQ, SRQ_RING; an RC QP on it has no RQ */
	dpvt_ca_zero(c);
	struct ibv_srq *srq = dpvt_srq_new(par, 32);
	CHECK(srq != NULL, "SRQ: %s", strerror(errno));
	expect_codes(c, (int[]){DPV_RES_SRQ, DPV_RES_SRQ_RING}, 2, "SRQ");
	CHECK(srq && dpvt_ca_inside(c, srq, DPV_RES_SRQ), "the SRQ object lives in the DPV_RES_SRQ buffer");
	if (srq) {
		dpvt_ca_zero(c);
		qp = dpvt_qp_new_ex(par, IBV_QPT_RC, pcq, pcq, srq, 0);
		CHECK(qp != NULL, "RC QP on the SRQ");
		expect_codes(c, (int[]){DPV_RES_QP, DPV_RES_QP_SQ, DPV_RES_QP_RC}, 3, "RC with SRQ");
		if (qp)
			CHECK_EQ(ibv_destroy_qp(qp), 0, "destroy RC(SRQ)");
		dpvt_ca_expect(c->frees, c->allocs, "frees", "RC(SRQ) destroyed");
		dpvt_ca_zero(c);
		CHECK_EQ(ibv_destroy_srq(srq), 0, "destroy SRQ");
		int exp[DPV_RES_NR] = {0};
		exp[DPV_RES_SRQ] = exp[DPV_RES_SRQ_RING] = 1;
		dpvt_ca_expect(c->frees, exp, "frees", "SRQ destroyed");
		CHECK_EQ(c->live, 0, "no live buffers after SRQ");
	}

	/* CQ_ex: CQ, CQ_RING; resize: a new ring, the old one freed */
	dpvt_ca_zero(c);
	struct ibv_cq *cq = dpvt_cq_new(ctx0, par, 100);
	CHECK(cq != NULL, "CQ_ex: %s", strerror(errno));
	expect_codes(c, (int[]){DPV_RES_CQ, DPV_RES_CQ_RING}, 2, "CQ_ex");
	CHECK(cq && dpvt_ca_inside(c, cq, DPV_RES_CQ), "the CQ object lives in the DPV_RES_CQ buffer");
	if (cq) {
		void *ring0 = NULL;
		for (int i = c->nrec - 1; i >= 0; i--)
			if (c->rec[i].code == DPV_RES_CQ_RING && !c->rec[i].frees) {
				ring0 = c->rec[i].p;
				break;
			}
		/* a completion in the CQ survives the resize */
		struct ibv_qp *uq = dpvt_qp_new_ex(par, IBV_QPT_UD, cq, cq, NULL, 0);
		CHECK(uq && dpvt_ud_to_rts(uq, 7) == 0, "UD QP on the CQ_ex");
		uint8_t *ub = aligned_alloc(4096, 4096);
		struct ibv_mr *umr = ibv_reg_mr(par, ub, 4096, IBV_ACCESS_LOCAL_WRITE);
		int c_before = c->allocs[DPV_RES_CQ_RING];
		dpvt_ca_zero(c);
		if (uq && umr) {
			/* flush a receive: move to ERR, one FLUSH completion waits in the ring */
			CHECK(dpvt_post_recv(uq, umr, 55, 0, 1024) == 0, "post_recv");
			CHECK(dpvt_qp_set_state(uq, IBV_QPS_ERR) == 0, "UD to ERR");
		}
		CHECK_EQ(ibv_resize_cq(cq, 2000), 0, "resize_cq");
		int exp[DPV_RES_NR] = {0};
		exp[DPV_RES_CQ_RING] = 1;
		dpvt_ca_expect(c->allocs, exp, "allocs", "resize");
		dpvt_ca_expect(c->frees, exp, "frees", "resize");
		bool old_freed = false;
		for (int i = 0; i < c->nrec; i++)
			if (c->rec[i].p == ring0 && c->rec[i].code == DPV_RES_CQ_RING && c->rec[i].frees == 1)
				old_freed = true;
		CHECK(old_freed || !dpvt_res_asked(DPV_RES_CQ_RING), "resize freed the old ring (%p)", ring0);
		CHECK(cq->cqe >= 2000, "cqe after resize: %d", cq->cqe);
		if (uq && umr) {
			struct ibv_wc wc;
			int n = dpvt_poll_n(cq, &wc, 1, 1000);
			CHECK(n == 1 && wc.wr_id == 55 && wc.status == IBV_WC_WR_FLUSH_ERR,
			      "the completion survived the resize (n %d)", n);
		}
		(void)c_before;
		if (uq)
			CHECK_EQ(ibv_destroy_qp(uq), 0, "destroy UD");
		if (umr)
			ibv_dereg_mr(umr);
		free(ub);
		/* resize to a smaller ring, too */
		dpvt_ca_zero(c);
		CHECK_EQ(ibv_resize_cq(cq, 10), 0, "resize_cq smaller");
		dpvt_ca_expect(c->allocs, exp, "allocs", "resize smaller");
		dpvt_ca_expect(c->frees, exp, "frees", "resize smaller");
		dpvt_ca_zero(c);
		CHECK_EQ(ibv_destroy_cq(cq), 0, "destroy CQ_ex");
		exp[DPV_RES_CQ] = 1;
		dpvt_ca_expect(c->frees, exp, "frees", "CQ_ex destroyed");
		CHECK_EQ(c->allocs[DPV_RES_CQ_RING] + c->allocs[DPV_RES_CQ], 0, "no alloc at destroy");
	}

	/* MRs and AHs take no allocator buffers */
	dpvt_ca_zero(c);
	{
		uint8_t *b = aligned_alloc(4096, 4096);
		struct ibv_mr *mr = ibv_reg_mr(par, b, 4096, IBV_ACCESS_LOCAL_WRITE);
		CHECK(mr != NULL, "reg_mr");
		if (mr)
			ibv_dereg_mr(mr);
		free(b);
		struct ibv_ah_attr aa;
		memset(&aa, 0, sizeof(aa));
		aa.is_global = 1;
		aa.port_num = 1;
		aa.grh.sgid_index = 1;
		ibv_query_gid(ctx1, 1, 1, &aa.grh.dgid);
		struct ibv_ah *ah = ibv_create_ah(par, &aa);
		CHECK(ah != NULL, "create_ah");
		if (ah)
			ibv_destroy_ah(ah);
		int zero[DPV_RES_NR] = {0};
		dpvt_ca_expect(c->allocs, zero, "allocs", "MR + AH");
	}

	CHECK_EQ(ibv_destroy_cq(pcq), 0, "destroy plain CQ");
	CHECK_EQ(ibv_dealloc_pd(par), 0, "dealloc parent");
	CHECK_EQ(ibv_dealloc_pd(pd), 0, "dealloc pd");
	dpvt_ca_check_all_freed(c, "counting");
}

/* ---- an allocation fails: ENOMEM and nothing leaks ---- */

static void test_alloc_failure(void)
{
	static struct dpvt_ca c;
	dpvt_ca_init(&c);
	struct ibv_pd *pd = ibv_alloc_pd(ctx0);
	struct ibv_pd *par = dpvt_parent_new(pd, NULL, &c);
	struct ibv_cq *pcq = ibv_create_cq(ctx0, 64, NULL, NULL, 0);
	if (!par || !pcq)
		return;
	struct {
		const char *name;
		int kind; /* 0 RC+ops, 1 UD, 2 SRQ, 3 CQ */
		int codes[6];
	} objs[] = {
		{"RC+ops QP", 0, {DPV_RES_QP, DPV_RES_QP_SQ, DPV_RES_QP_RQ, DPV_RES_QP_RC, DPV_RES_QP_WRB}},
		{"UD QP", 1, {DPV_RES_QP, DPV_RES_QP_RQ}},
		{"SRQ", 2, {DPV_RES_SRQ, DPV_RES_SRQ_RING}},
		{"CQ_ex", 3, {DPV_RES_CQ, DPV_RES_CQ_RING}},
	};
	for (unsigned int o = 0; o < sizeof(objs) / sizeof(objs[0]); o++) {
		for (int k = 0; k < 6 && objs[o].codes[k]; k++) {
			int code = objs[o].codes[k];
			if (!dpvt_res_asked(code))
				continue; /* shared mode: not asked, cannot fail */
			char l[96];
			snprintf(l, sizeof(l), "%s, alloc of %s fails", objs[o].name, dpvt_res_name[code]);
			dpvt_ca_zero(&c);
			c.fail_code = (uint32_t)code;
			void *obj = NULL;
			errno = 0;
			switch (objs[o].kind) {
			case 0:
				obj = dpvt_qp_new_ex(par, IBV_QPT_RC, pcq, pcq, NULL, IBV_QP_EX_WITH_SEND);
				break;
			case 1:
				obj = dpvt_qp_new_ex(par, IBV_QPT_UD, pcq, pcq, NULL, 0);
				break;
			case 2:
				obj = dpvt_srq_new(par, 16);
				break;
			case 3:
				obj = dpvt_cq_new(ctx0, par, 16);
				break;
			}
			int err = errno;
			c.fail_code = 0;
			CHECK(!obj && err == ENOMEM, "%s: NULL/ENOMEM, got %p errno %d", l, obj, err);
			CHECK_EQ(c.fails[code], 1, "the failing alloc was called once");
			int sum = 0;
			for (int i = 0; i < DPV_RES_NR; i++)
				sum += c.allocs[i];
			dpvt_ca_expect(c.frees, c.allocs, "frees", l);
			CHECK(c.live == 0, "%s: %d buffers leaked (%d allocated before the failure)", l, c.live, sum);
			if (obj) {
				if (objs[o].kind <= 1)
					ibv_destroy_qp(obj);
				else if (objs[o].kind == 2)
					ibv_destroy_srq(obj);
				else
					ibv_destroy_cq(obj);
			}
		}
	}
	/* resize_cq with a failing ring alloc: ENOMEM, the CQ keeps working */
	struct ibv_cq *cq = dpvt_cq_new(ctx0, par, 16);
	CHECK(cq != NULL, "CQ_ex");
	if (cq && !dpvt_res_asked(DPV_RES_CQ_RING)) { /* shared mode: the ring is not asked for */
		CHECK_EQ(ibv_destroy_cq(cq), 0, "destroy CQ");
		cq = NULL;
	}
	if (cq) {
		int cqe0 = cq->cqe;
		dpvt_ca_zero(&c);
		c.fail_code = DPV_RES_CQ_RING;
		int r = ibv_resize_cq(cq, 1000);
		c.fail_code = 0;
		CHECK_EQ(r, ENOMEM, "resize_cq with a failing alloc");
		CHECK_EQ(cq->cqe, cqe0, "cqe unchanged");
		int zero[DPV_RES_NR] = {0};
		dpvt_ca_expect(c.frees, zero, "frees", "failed resize frees nothing");
		struct ibv_qp *uq = dpvt_qp_new_ex(par, IBV_QPT_UD, cq, cq, NULL, 0);
		CHECK(uq != NULL, "QP on the CQ");
		if (uq) {
			uint8_t *ub = aligned_alloc(4096, 4096);
			struct ibv_mr *umr = ibv_reg_mr(par, ub, 4096, IBV_ACCESS_LOCAL_WRITE);
			CHECK(dpvt_ud_to_rts(uq, 1) == 0 && dpvt_post_recv(uq, umr, 9, 0, 512) == 0 &&
				      dpvt_qp_set_state(uq, IBV_QPS_ERR) == 0,
			      "flush a receive");
			struct ibv_wc wc;
			CHECK(dpvt_poll_n(cq, &wc, 1, 1000) == 1 && wc.wr_id == 9, "CQ works after failed resize");
			ibv_destroy_qp(uq);
			ibv_dereg_mr(umr);
			free(ub);
		}
		CHECK_EQ(ibv_destroy_cq(cq), 0, "destroy CQ");
	}
	/* the failures took no reference on the parent domain */
	CHECK_EQ(ibv_destroy_cq(pcq), 0, "destroy plain CQ");
	CHECK_EQ(ibv_dealloc_pd(par), 0, "dealloc parent after failures");
	CHECK_EQ(ibv_dealloc_pd(pd), 0, "dealloc pd");
	dpvt_ca_check_all_freed(&c, "failure injection");
}

/* ---- traffic through custom-allocated queues ---- */

/* Both sides: parent domains with allocators c0/c1, CQ_ex through them. */
static void traffic_with(struct dpvt_ca *c0, struct dpvt_ca *c1, const char *label)
{
	struct ibv_pd *pd0 = ibv_alloc_pd(ctx0), *pd1 = ibv_alloc_pd(ctx1);
	struct ibv_pd *p0 = dpvt_parent_new(pd0, NULL, c0), *p1 = dpvt_parent_new(pd1, NULL, c1);
	CHECK(p0 && p1, "%s: parent domains", label);
	if (!p0 || !p1)
		return;
	char l[128];
	struct dpvt_ep a = {.ctx = ctx0}, b = {.ctx = ctx1};
	CHECK(dpvt_ep_traffic_buf(&a, p0) == 0 && dpvt_ep_traffic_buf(&b, p1) == 0, "%s: MRs", label);
	a.scq = dpvt_cq_new(ctx0, p0, 128);
	a.rcq = dpvt_cq_new(ctx0, p0, 128);
	b.scq = dpvt_cq_new(ctx1, p1, 128);
	b.rcq = dpvt_cq_new(ctx1, p1, 128);
	CHECK(a.scq && a.rcq && b.scq && b.rcq, "%s: CQs", label);
	/* RC with its own RQ; send_ops on a to hold a WRB too */
	a.qp = dpvt_qp_new_ex(p0, IBV_QPT_RC, a.scq, a.rcq, NULL, IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_WRITE);
	b.qp = dpvt_qp_new_ex(p1, IBV_QPT_RC, b.scq, b.rcq, NULL, 0);
	CHECK(a.qp && b.qp, "%s: RC QPs", label);
	if (a.qp && b.qp && dpvt_connect(a.qp, ctx0, NULL, b.qp, ctx1, NULL, false) == 0) {
		snprintf(l, sizeof(l), "%s RC", label);
		dpvt_rc_traffic(&a, &b, 201, l);
		/* a few rounds, so the rings wrap */
		for (int i = 0; i < 20; i++)
			dpvt_rc_traffic(&a, &b, 300 + (uint64_t)i, l);
	}
	/* RC with an SRQ on b */
	struct dpvt_ep a2 = a, b2 = b;
	a2.qp = dpvt_qp_new_ex(p0, IBV_QPT_RC, a.scq, a.rcq, NULL, 0);
	b2.srq = dpvt_srq_new(p1, 64);
	b2.qp = b2.srq ? dpvt_qp_new_ex(p1, IBV_QPT_RC, b.scq, b.rcq, b2.srq, 0) : NULL;
	CHECK(a2.qp && b2.srq && b2.qp, "%s: RC pair with SRQ", label);
	if (a2.qp && b2.qp && dpvt_connect(a2.qp, ctx0, NULL, b2.qp, ctx1, NULL, false) == 0) {
		snprintf(l, sizeof(l), "%s RC+SRQ", label);
		for (int i = 0; i < 5; i++)
			dpvt_rc_traffic(&a2, &b2, 400 + (uint64_t)i, l);
	}
	/* UD both ways */
	struct dpvt_ep ua = a, ub = b;
	ua.qp = dpvt_qp_new_ex(p0, IBV_QPT_UD, a.scq, a.rcq, NULL, 0);
	ub.qp = dpvt_qp_new_ex(p1, IBV_QPT_UD, b.scq, b.rcq, NULL, 0);
	CHECK(ua.qp && ub.qp, "%s: UD QPs", label);
	if (ua.qp && ub.qp && dpvt_ud_to_rts(ua.qp, 0x77) == 0 && dpvt_ud_to_rts(ub.qp, 0x77) == 0) {
		snprintf(l, sizeof(l), "%s UD", label);
		dpvt_ud_traffic(&ua, p0, &ub, 0x77, 5, 500, l);
		dpvt_ud_traffic(&ub, p1, &ua, 0x77, 5, 501, l);
	}
	if (ua.qp)
		CHECK_EQ(ibv_destroy_qp(ua.qp), 0, "destroy UD a");
	if (ub.qp)
		CHECK_EQ(ibv_destroy_qp(ub.qp), 0, "destroy UD b");
	if (a2.qp)
		CHECK_EQ(ibv_destroy_qp(a2.qp), 0, "destroy a2");
	if (b2.qp)
		CHECK_EQ(ibv_destroy_qp(b2.qp), 0, "destroy b2");
	if (b2.srq)
		CHECK_EQ(ibv_destroy_srq(b2.srq), 0, "destroy SRQ");
	dpvt_ep_release(&a, label);
	dpvt_ep_release(&b, label);
	CHECK_EQ(ibv_dealloc_pd(p0), 0, "dealloc p0");
	CHECK_EQ(ibv_dealloc_pd(p1), 0, "dealloc p1");
	CHECK_EQ(ibv_dealloc_pd(pd0), 0, "dealloc pd0");
	CHECK_EQ(ibv_dealloc_pd(pd1), 0, "dealloc pd1");
}

static void test_traffic_custom(void)
{
	static struct dpvt_ca c0, c1;
	dpvt_ca_init(&c0);
	dpvt_ca_init(&c1);
	traffic_with(&c0, &c1, "posix_memalign");
	for (int i = 1; i < DPV_RES_NR; i++) {
		if (i == DPV_RES_QP_WRB || i == DPV_RES_SRQ || i == DPV_RES_SRQ_RING)
			continue; /* SRQ on b only, WRB on a only */
		CHECK(c0.allocs[i] > 0 || !dpvt_res_asked(i), "side a allocated %s buffers", dpvt_res_name[i]);
	}
	CHECK(c0.allocs[DPV_RES_QP_WRB] == 1, "side a: one WRB");
	CHECK(c1.allocs[DPV_RES_SRQ] == 1 && c1.allocs[DPV_RES_SRQ_RING] == dpvt_res_asked(DPV_RES_SRQ_RING),
	      "side b: SRQ buffers");
	dpvt_ca_check_all_freed(&c0, "traffic side a");
	dpvt_ca_check_all_freed(&c1, "traffic side b");
}

/* IBV_ALLOCATOR_USE_DEFAULT: objects work, free is never called for them. */
static void test_use_default(void)
{
	static struct dpvt_ca c0, c1;
	dpvt_ca_init(&c0);
	dpvt_ca_init(&c1);
	c0.default_mask = c1.default_mask = ~0u;
	traffic_with(&c0, &c1, "USE_DEFAULT");
	int n0 = 0, n1 = 0, f = 0;
	for (int i = 0; i < DPV_RES_NR; i++) {
		n0 += c0.defaults[i];
		n1 += c1.defaults[i];
		f += c0.frees[i] + c1.frees[i];
	}
	CHECK(n0 > 0 && n1 > 0, "alloc was asked (%d, %d times) and answered USE_DEFAULT", n0, n1);
	CHECK_EQ(f + c0.free_unknown + c1.free_unknown, 0, "free never called for USE_DEFAULT buffers");
	dpvt_ca_check_all_freed(&c0, "USE_DEFAULT a");
	dpvt_ca_check_all_freed(&c1, "USE_DEFAULT b");

	/* mixed: odd codes default, even codes custom */
	dpvt_ca_init(&c0);
	dpvt_ca_init(&c1);
	c0.default_mask = c1.default_mask = 0x2aau; /* 1,3,5,7,9 */
	traffic_with(&c0, &c1, "mixed USE_DEFAULT");
	for (int i = 1; i < DPV_RES_NR; i += 2)
		CHECK(c0.frees[i] + c1.frees[i] == 0, "no free for defaulted code %s", dpvt_res_name[i]);
	CHECK((c0.allocs[DPV_RES_QP_SQ] > 0 || !dpvt_res_asked(DPV_RES_QP_SQ)) && c0.allocs[DPV_RES_CQ] > 0,
	      "even codes from the custom allocator");
	CHECK_EQ(c0.free_unknown + c1.free_unknown, 0, "free only for custom buffers");
	dpvt_ca_check_all_freed(&c0, "mixed a");
	dpvt_ca_check_all_freed(&c1, "mixed b");
}

/* ---- thread domains ---- */

struct td_run {
	struct dpvt_ep *a, *b;
	struct ibv_qp *ua, *ub;
	struct ibv_pd *pa, *pb;
	int rounds;
	_Atomic bool done;
};

static void *td_owner(void *arg)
{
	struct td_run *r = arg;
	for (int i = 0; i < r->rounds; i++)
		dpvt_rc_traffic(r->a, r->b, 600 + (uint64_t)i, "TD RC (owner thread)");
	if (r->ua && r->ub) {
		struct dpvt_ep ua = *r->a, ub = *r->b;
		ua.qp = r->ua;
		ub.qp = r->ub;
		dpvt_ud_traffic(&ua, r->pa, &ub, 0x99, 5, 700, "TD UD (owner thread)");
	}
	atomic_store(&r->done, true);
	return NULL;
}

static void test_thread_domain(void)
{
	struct ibv_td_init_attr ta = {0};
	struct ibv_td *td0 = ibv_alloc_td(ctx0, &ta), *td1 = ibv_alloc_td(ctx1, &ta);
	struct ibv_pd *pd0 = ibv_alloc_pd(ctx0), *pd1 = ibv_alloc_pd(ctx1);
	static struct dpvt_ca c0, c1;
	dpvt_ca_init(&c0);
	dpvt_ca_init(&c1);
	struct ibv_pd *p0 = dpvt_parent_new(pd0, td0, &c0), *p1 = dpvt_parent_new(pd1, td1, &c1);
	struct ibv_pd *p0n = dpvt_parent_new(pd0, NULL, NULL); /* parent domain without TD */
	CHECK(td0 && td1 && p0 && p1 && p0n, "TDs and parent domains");
	if (!td0 || !td1 || !p0 || !p1 || !p0n)
		return;

	struct dpvt_ep a = {.ctx = ctx0}, b = {.ctx = ctx1};
	CHECK(dpvt_ep_traffic_buf(&a, p0) == 0 && dpvt_ep_traffic_buf(&b, p1) == 0, "MRs");
	a.scq = dpvt_cq_new(ctx0, p0, 128);
	a.rcq = dpvt_cq_new(ctx0, p0, 128);
	b.scq = dpvt_cq_new(ctx1, p1, 128);
	b.rcq = dpvt_cq_new(ctx1, p1, 128);
	CHECK(a.scq && a.rcq && b.scq && b.rcq, "TD CQs");

	/* a TD QP needs TD CQs; a QP without TD needs CQs without TD */
	struct ibv_cq *plain = dpvt_cq_new(ctx0, NULL, 16), *pnocq = dpvt_cq_new(ctx0, p0n, 16);
	struct ibv_qp *bad = dpvt_qp_new_ex(p0, IBV_QPT_RC, plain, plain, NULL, 0);
	CHECK(!bad && errno == EINVAL, "TD QP with plain CQs: EINVAL, got %p errno %d", (void *)bad, errno);
	if (bad)
		ibv_destroy_qp(bad);
	bad = dpvt_qp_new_ex(p0, IBV_QPT_UD, a.scq, plain, NULL, 0);
	CHECK(!bad && errno == EINVAL, "TD UD QP with a plain recv CQ: EINVAL, got errno %d", errno);
	if (bad)
		ibv_destroy_qp(bad);
	bad = dpvt_qp_new_ex(p0, IBV_QPT_RC, pnocq, a.rcq, NULL, 0);
	CHECK(!bad && errno == EINVAL, "TD QP with a CQ of a parent domain without TD: EINVAL, got errno %d", errno);
	if (bad)
		ibv_destroy_qp(bad);
	bad = dpvt_qp_new_ex(pd0, IBV_QPT_RC, a.scq, a.rcq, NULL, 0);
	CHECK(!bad && errno == EINVAL, "plain QP with TD CQs: EINVAL, got errno %d", errno);
	if (bad)
		ibv_destroy_qp(bad);
	bad = dpvt_qp_new_ex(p0n, IBV_QPT_RC, a.scq, a.rcq, NULL, 0);
	CHECK(!bad && errno == EINVAL, "QP of a parent domain without TD, TD CQs: EINVAL, got errno %d", errno);
	if (bad)
		ibv_destroy_qp(bad);

	a.qp = dpvt_qp_new_ex(p0, IBV_QPT_RC, a.scq, a.rcq, NULL, 0);
	b.qp = dpvt_qp_new_ex(p1, IBV_QPT_RC, b.scq, b.rcq, NULL, 0);
	CHECK(a.qp && b.qp, "TD RC QPs: %s", strerror(errno));
	struct ibv_qp *ua = dpvt_qp_new_ex(p0, IBV_QPT_UD, a.scq, a.rcq, NULL, 0);
	struct ibv_qp *ub = dpvt_qp_new_ex(p1, IBV_QPT_UD, b.scq, b.rcq, NULL, 0);
	CHECK(ua && ub && dpvt_ud_to_rts(ua, 0x99) == 0 && dpvt_ud_to_rts(ub, 0x99) == 0, "TD UD QPs");
	if (a.qp && b.qp && dpvt_connect(a.qp, ctx0, NULL, b.qp, ctx1, NULL, false) == 0) {
		/* The owner thread (first to post/poll) runs the traffic; this
		 * thread meanwhile drives the engine by polling a plain CQ, so
		 * packets for the TD's QPs arrive on a non-owner thread and are
		 * deferred to the TD. */
		struct td_run r = {.a = &a, .b = &b, .ua = ua, .ub = ub, .pa = p0, .pb = p1, .rounds = 30};
		pthread_t th;
		CHECK(pthread_create(&th, NULL, td_owner, &r) == 0, "owner thread");
		struct ibv_wc wc;
		uint64_t end = dpvt_now_ms() + 60000;
		while (!atomic_load(&r.done) && dpvt_now_ms() < end)
			ibv_poll_cq(plain, 1, &wc);
		pthread_join(th, NULL);
	}
	if (ua)
		CHECK_EQ(ibv_destroy_qp(ua), 0, "destroy TD UD a");
	if (ub)
		CHECK_EQ(ibv_destroy_qp(ub), 0, "destroy TD UD b");
	dpvt_ep_release(&a, "TD a");
	dpvt_ep_release(&b, "TD b");
	ibv_destroy_cq(plain);
	ibv_destroy_cq(pnocq);
	CHECK_EQ(ibv_dealloc_td(td0), EBUSY, "dealloc TD while its parent domain exists");
	CHECK_EQ(ibv_dealloc_pd(p0), 0, "dealloc p0");
	CHECK_EQ(ibv_dealloc_pd(p1), 0, "dealloc p1");
	CHECK_EQ(ibv_dealloc_pd(p0n), 0, "dealloc p0n");
	CHECK_EQ(ibv_dealloc_td(td0), 0, "dealloc td0");
	CHECK_EQ(ibv_dealloc_td(td1), 0, "dealloc td1");
	CHECK_EQ(ibv_dealloc_pd(pd0), 0, "dealloc pd0");
	CHECK_EQ(ibv_dealloc_pd(pd1), 0, "dealloc pd1");
	dpvt_ca_check_all_freed(&c0, "TD a");
	dpvt_ca_check_all_freed(&c1, "TD b");
}

/* A TD in the single-thread case: the creating thread is also the owner. */
static void test_thread_domain_same_thread(void)
{
	struct ibv_td_init_attr ta = {0};
	struct ibv_td *td0 = ibv_alloc_td(ctx0, &ta), *td1 = ibv_alloc_td(ctx1, &ta);
	struct ibv_pd *pd0 = ibv_alloc_pd(ctx0), *pd1 = ibv_alloc_pd(ctx1);
	struct ibv_pd *p0 = dpvt_parent_new(pd0, td0, NULL), *p1 = dpvt_parent_new(pd1, td1, NULL);
	if (!p0 || !p1)
		return;
	struct dpvt_ep a = {.ctx = ctx0}, b = {.ctx = ctx1};
	CHECK(dpvt_ep_traffic_buf(&a, pd0) == 0 && dpvt_ep_traffic_buf(&b, pd1) == 0, "MRs (base PDs)");
	a.scq = dpvt_cq_new(ctx0, p0, 64);
	a.rcq = dpvt_cq_new(ctx0, p0, 64);
	b.scq = dpvt_cq_new(ctx1, p1, 64);
	b.rcq = dpvt_cq_new(ctx1, p1, 64);
	a.qp = dpvt_qp_new_ex(p0, IBV_QPT_RC, a.scq, a.rcq, NULL, 0);
	b.qp = dpvt_qp_new_ex(p1, IBV_QPT_RC, b.scq, b.rcq, NULL, 0);
	CHECK(a.qp && b.qp, "TD QPs");
	if (a.qp && b.qp && dpvt_connect(a.qp, ctx0, NULL, b.qp, ctx1, NULL, false) == 0)
		for (int i = 0; i < 10; i++)
			dpvt_rc_traffic(&a, &b, 800 + (uint64_t)i, "TD RC (one thread)");
	dpvt_ep_release(&a, "TD1 a");
	dpvt_ep_release(&b, "TD1 b");
	CHECK_EQ(ibv_dealloc_pd(p0), 0, "dealloc");
	CHECK_EQ(ibv_dealloc_pd(p1), 0, "dealloc");
	CHECK_EQ(ibv_dealloc_td(td0), 0, "dealloc td0");
	CHECK_EQ(ibv_dealloc_td(td1), 0, "dealloc td1");
	CHECK_EQ(ibv_dealloc_pd(pd0), 0, "dealloc");
	CHECK_EQ(ibv_dealloc_pd(pd1), 0, "dealloc");
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	ctx0 = dpvt_open_dev("dpv0");
	ctx1 = dpvt_open_dev("dpv1");
	if (!ctx0 || !ctx1)
		return 1;
	struct {
		const char *name;
		void (*fn)(void);
	} tests[] = {
		{"td_api", test_td_api},
		{"parent_args", test_parent_args},
		{"pd_everywhere", test_pd_everywhere},
		{"counting", test_counting},
		{"alloc_failure", test_alloc_failure},
		{"traffic_custom", test_traffic_custom},
		{"use_default", test_use_default},
		{"thread_domain_same_thread", test_thread_domain_same_thread},
		{"thread_domain", test_thread_domain},
	};
	for (unsigned int i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
		int f0 = dpvt_fail_count();
		tests[i].fn();
		printf("%-28s %s\n", tests[i].name, dpvt_fail_count() == f0 ? "ok" : "FAILED");
	}
	ibv_close_device(ctx0);
	ibv_close_device(ctx1);
	return dpvt_finish();
}
