/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Regression checks for library bugs found while writing
 * test_parent_domain.c and test_hugepage_alloc.c (all fixed): a thread
 * domain's QP with CQs of another thread domain (EINVAL), errno after an
 * allocator's free callback changed it (ENOMEM), and a NUMA socket that does
 * not exist for the hugepage allocator (EINVAL).
 *
 * Black-box (libdpverbs.so, <infiniband/verbs.h>, <dpverbs.h>), one process,
 * the built-in default configuration (dpv0 <-> dpv1).
 */
#include "dpvt_ca.h"

static struct ibv_context *ctx0;

/*
 * Regression (fixed bug): a QP of one thread domain is accepted with the CQs of another
 * thread domain. lib/verbs/dpv_qp.c dpv_create_qp_ex() only compares
 * to_dcq(cq)->lockless with want_lockless; both CQs are lockless, but their
 * TDs (hence their owner threads) differ: TD A's owner pushes the QP's
 * completions into TD B's CQ without a lock while TD B's owner polls it
 * (a data race on cq->tail/ring), and packets of the QP are deferred to TD
 * A's ring while TD B's owner polls the CQ (they are never processed if TD A
 * has no thread polling). Fix: also require
 * to_dcq(cq)->upd->td == to_dpd(a->pd)->td for send_cq and recv_cq
 * (EINVAL otherwise).
 */
static void bug_td_cq_of_other_td(void)
{
	struct ibv_td_init_attr ta = {0};
	struct ibv_td *tda = ibv_alloc_td(ctx0, &ta), *tdb = ibv_alloc_td(ctx0, &ta);
	struct ibv_pd *pd = ibv_alloc_pd(ctx0);
	struct ibv_pd *pa = dpvt_parent_new(pd, tda, NULL), *pb = dpvt_parent_new(pd, tdb, NULL);
	if (!pa || !pb)
		return;
	struct ibv_cq *cqa = dpvt_cq_new(ctx0, pa, 16), *cqb = dpvt_cq_new(ctx0, pb, 16);
	CHECK(cqa && cqb, "TD CQs");
	struct ibv_qp *qp = dpvt_qp_new_ex(pa, IBV_QPT_RC, cqb, cqb, NULL, 0);
	int err = errno;
	CHECK(!qp && err == EINVAL, "QP of TD A with CQs of TD B: expected EINVAL, got %p errno %d", (void *)qp,
		  err);
	if (qp)
		ibv_destroy_qp(qp);
	qp = dpvt_qp_new_ex(pa, IBV_QPT_UD, cqa, cqb, NULL, 0);
	err = errno;
	CHECK(!qp && err == EINVAL, "QP of TD A with a recv CQ of TD B: expected EINVAL, got %p errno %d",
		  (void *)qp, err);
	if (qp)
		ibv_destroy_qp(qp);
	ibv_destroy_cq(cqa);
	ibv_destroy_cq(cqb);
	ibv_dealloc_pd(pa);
	ibv_dealloc_pd(pb);
	ibv_dealloc_td(tda);
	ibv_dealloc_td(tdb);
	ibv_dealloc_pd(pd);
}

/*
 * Regression (fixed bug): errno is not ENOMEM when an allocation fails after other
 * buffers of the object were allocated and the application's free callback
 * changes errno (which free callbacks may do: munmap, rte_free, logging).
 * dpv_buf_alloc() sets errno = ENOMEM, then the caller runs
 * dpv_bufs_free_all() -- which calls the free callback -- and returns NULL
 * without setting errno again:
 *   lib/verbs/dpv_qp.c dpv_create_qp_ex(), "if (!qp->rq)" branch;
 *   lib/verbs/dpv_cq.c dpvt_cq_new(), "if (!cq->ring)" branch;
 *   lib/verbs/dpv_qp.c ibv_create_srq(), "if (!s->wqes)" branch.
 * (The WRB/RC/SQ path already sets errno = ENOMEM after freeing.) Fix: set
 * errno = ENOMEM after dpv_bufs_free_all() in those three places, or save
 * and restore errno inside dpv_bufs_free_all()/buf_release().
 */
static int g_fail_code;
static void *errno_alloc(struct ibv_pd *pd, void *ctx, size_t size, size_t align, uint64_t type)
{
	(void)pd, (void)ctx;
	if ((int)DPV_RESOURCE_CODE(type) == g_fail_code)
		return NULL;
	void *p = NULL;
	if (posix_memalign(&p, align < sizeof(void *) ? sizeof(void *) : align, size))
		return NULL;
	memset(p, 0, size);
	return p;
}
static void errno_free(struct ibv_pd *pd, void *ctx, void *p, uint64_t type)
{
	(void)pd, (void)ctx, (void)type;
	free(p);
	errno = EIO; /* as a callback that logs or unmaps may leave it */
}

static void bug_errno_after_free_callback(void)
{
	struct ibv_pd *pd = ibv_alloc_pd(ctx0);
	struct ibv_parent_domain_init_attr a;
	memset(&a, 0, sizeof(a));
	a.pd = pd;
	a.comp_mask = IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS;
	a.alloc = errno_alloc;
	a.free = errno_free;
	struct ibv_pd *par = ibv_alloc_parent_domain(ctx0, &a);
	struct ibv_cq *pcq = ibv_create_cq(ctx0, 16, NULL, NULL, 0);
	if (!par || !pcq)
		return;
	void *o;
	int err;

	g_fail_code = DPV_RES_QP_RQ;
	o = dpvt_qp_new_ex(par, IBV_QPT_UD, pcq, pcq, NULL, 0);
	err = errno;
	/* shared mode: rings are not asked of the allocator (dpvt_res_asked) */
	CHECK((!o && err == ENOMEM) || (!dpvt_res_asked(DPV_RES_QP_RQ) && o), "QP whose RQ alloc fails: expected ENOMEM, got %p errno %d (%s)", o, err,
		  strerror(err));
	if (o)
		ibv_destroy_qp(o);

	g_fail_code = DPV_RES_CQ_RING;
	o = dpvt_cq_new(ctx0, par, 16);
	err = errno;
	/* shared mode: rings are not asked of the allocator (dpvt_res_asked) */
	CHECK((!o && err == ENOMEM) || (!dpvt_res_asked(DPV_RES_CQ_RING) && o), "CQ whose ring alloc fails: expected ENOMEM, got %p errno %d (%s)", o, err,
		  strerror(err));
	if (o)
		ibv_destroy_cq(o);

	g_fail_code = DPV_RES_SRQ_RING;
	o = dpvt_srq_new(par, 16);
	err = errno;
	/* shared mode: rings are not asked of the allocator (dpvt_res_asked) */
	CHECK((!o && err == ENOMEM) || (!dpvt_res_asked(DPV_RES_SRQ_RING) && o), "SRQ whose ring alloc fails: expected ENOMEM, got %p errno %d (%s)", o, err,
		  strerror(err));
	if (o)
		ibv_destroy_srq(o);

	/* for comparison, the paths that already get it right */
	g_fail_code = DPV_RES_QP_SQ;
	o = dpvt_qp_new_ex(par, IBV_QPT_RC, pcq, pcq, NULL, 0);
	err = errno;
	/* shared mode: rings are not asked of the allocator (dpvt_res_asked) */
	CHECK((!o && err == ENOMEM) || (!dpvt_res_asked(DPV_RES_QP_SQ) && o), "QP whose SQ alloc fails: ENOMEM, got errno %d", err);
	g_fail_code = 0;
	ibv_destroy_cq(pcq);
	ibv_dealloc_pd(par);
	ibv_dealloc_pd(pd);
}

/*
 * Regression (fixed bug): dpv_hugepage_allocator_create() accepts a NUMA socket that
 * does not exist. lib/verbs/dpv_pd.c: a socket below RTE_MAX_NUMA_NODES is
 * kept as is (e.g. 7 on a one-socket machine): the allocator is returned but
 * every dpv_hugepage_alloc() fails (mempool and rte_zmalloc_socket on an
 * empty heap), while a socket >= RTE_MAX_NUMA_NODES is silently replaced by
 * 0. Fix: fail with errno EINVAL unless socket == -1 or it is one of
 * rte_socket_id_by_idx(0 .. rte_socket_count() - 1) (and document EINVAL).
 */
static void bug_hugepage_bad_socket(void)
{
	errno = 0;
	struct dpv_hugepage_allocator *h = dpv_hugepage_allocator_create(7);
	int err = errno;
	void *p = h ? dpv_hugepage_alloc(NULL, h, 64, 64, DPV_RESOURCE_TYPE(DPV_RES_QP)) : NULL;
	/* acceptable: create fails with EINVAL, or the allocator works */
	CHECK((!h && err == EINVAL) || p, "create(socket 7): expected EINVAL or a working allocator, got %p "
		  "(errno %d) whose allocation returns %p", (void *)h, err, p);
	if (p)
		dpv_hugepage_free(NULL, h, p, DPV_RESOURCE_TYPE(DPV_RES_QP));
	if (h)
		dpv_hugepage_allocator_destroy(h);
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	ctx0 = dpvt_open_dev("dpv0");
	if (!ctx0)
		return 1;
	bug_td_cq_of_other_td();
	bug_errno_after_free_callback();
	bug_hugepage_bad_socket();
	ibv_close_device(ctx0);
	return dpvt_finish();
}
