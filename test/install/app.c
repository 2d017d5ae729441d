/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A program built against an installed (or uninstalled) dpverbs.pc: uses
 * rdma-core's verbs API and dpverbs.h's extensions (hugepage allocator
 * behind a parent domain; an RC QP's send queue must come from it), as an
 * application would. Prints
 * "app: N devices, ..., ok" and exits 0, or names what failed and exits 1.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <dpverbs.h>

#define FAIL(...) do { fprintf(stderr, "app: " __VA_ARGS__); fputc('\n', stderr); return 1; } while (0)

int main(void)
{
	struct ibv_parent_domain_init_attr pattr;
	struct dpv_hugepage_allocator *alloc;
	struct ibv_device **list;
	struct ibv_context *ctx;
	struct ibv_pd *pd, *ppd;
	struct dpv_hugepage_stats st;
	struct ibv_qp_init_attr qattr;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	int n = 0;

	list = ibv_get_device_list(&n);
	if (list == NULL || n < 1)
		FAIL("no device (%s)", strerror(errno));
	ctx = ibv_open_device(list[0]);
	if (ctx == NULL)
		FAIL("ibv_open_device(%s): %s", ibv_get_device_name(list[0]), strerror(errno));
	pd = ibv_alloc_pd(ctx);
	if (pd == NULL)
		FAIL("ibv_alloc_pd: %s", strerror(errno));
	alloc = dpv_hugepage_allocator_create(-1);
	if (alloc == NULL)
		FAIL("dpv_hugepage_allocator_create: %s", strerror(errno));
	memset(&pattr, 0, sizeof(pattr));
	dpv_hugepage_parent_domain_attr(alloc, pd, NULL, &pattr);
	ppd = ibv_alloc_parent_domain(ctx, &pattr);
	if (ppd == NULL)
		FAIL("ibv_alloc_parent_domain: %s", strerror(errno));
	cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	if (cq == NULL)
		FAIL("ibv_create_cq: %s", strerror(errno));
	memset(&qattr, 0, sizeof(qattr));
	qattr.send_cq = cq;
	qattr.recv_cq = cq;
	qattr.qp_type = IBV_QPT_RC;
	qattr.cap.max_send_wr = 16;
	qattr.cap.max_recv_wr = 16;
	qattr.cap.max_send_sge = 1;
	qattr.cap.max_recv_sge = 1;
	qp = ibv_create_qp(ppd, &qattr);
	if (qp == NULL)
		FAIL("ibv_create_qp on the parent domain: %s", strerror(errno));
	if (dpv_hugepage_stats(alloc, DPV_RES_QP_SQ, &st) || st.objects != 1)
		FAIL("the send queue did not come from the hugepage allocator");
	if (ibv_destroy_qp(qp))
		FAIL("ibv_destroy_qp: %s", strerror(errno));
	if (ibv_destroy_cq(cq) || ibv_dealloc_pd(ppd) || ibv_dealloc_pd(pd))
		FAIL("destroy: %s", strerror(errno));
	if (dpv_hugepage_allocator_destroy(alloc))
		FAIL("dpv_hugepage_allocator_destroy: %s", strerror(errno));
	printf("app: %d devices, first %s, resource type of a QP 0x%016llx, ok\n", n,
	       ibv_get_device_name(list[0]), (unsigned long long)DPV_RESOURCE_TYPE(DPV_RES_QP));
	if (ibv_close_device(ctx))
		FAIL("ibv_close_device: %s", strerror(errno));
	ibv_free_device_list(list);
	return 0;
}
