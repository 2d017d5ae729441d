/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The configuration's "limits" are enforced, not only reported:
 * func-limits.json sets max_pd 4, max_srq 2, max_mr 3. Creating one more
 * fails with ENOMEM; after one is destroyed, creating works again.
 */
#include "dpvt_verbs.h"

int main(void)
{
	struct ibv_context *ctx = dpvt_open_dev("dpv0");
	if (!ctx) {
		printf("0 passed, 1 failed\n");
		return 1;
	}
	struct ibv_device_attr da;
	CHECK_EQ(ibv_query_device(ctx, &da), 0, "query_device");
	CHECK_EQ(da.max_pd, 4, "max_pd reported from the configuration");
	CHECK_EQ(da.max_srq, 2, "max_srq reported");
	CHECK_EQ(da.max_mr, 3, "max_mr reported");

	struct ibv_pd *pd[5];
	for (int i = 0; i < 4; i++) {
		pd[i] = ibv_alloc_pd(ctx);
		CHECK(pd[i] != NULL, "PD %d of 4", i);
	}
	errno = 0;
	pd[4] = ibv_alloc_pd(ctx);
	CHECK(pd[4] == NULL && errno == ENOMEM, "fifth PD: NULL/ENOMEM (got %p errno %d)", (void *)pd[4], errno);
	CHECK_EQ(ibv_dealloc_pd(pd[3]), 0, "dealloc one PD");
	pd[3] = ibv_alloc_pd(ctx);
	CHECK(pd[3] != NULL, "a PD again after one was freed");

	struct ibv_srq_init_attr sa;
	struct ibv_srq *srq[3];
	for (int i = 0; i < 3; i++) {
		memset(&sa, 0, sizeof(sa));
		sa.attr.max_wr = 8;
		sa.attr.max_sge = 1;
		errno = 0;
		srq[i] = ibv_create_srq(pd[0], &sa);
		if (i < 2)
			CHECK(srq[i] != NULL, "SRQ %d of 2", i);
		else
			CHECK(srq[i] == NULL && errno == ENOMEM, "third SRQ: NULL/ENOMEM (errno %d)", errno);
	}
	CHECK_EQ(ibv_destroy_srq(srq[1]), 0, "destroy one SRQ");
	memset(&sa, 0, sizeof(sa));
	sa.attr.max_wr = 8;
	sa.attr.max_sge = 1;
	srq[1] = ibv_create_srq(pd[0], &sa);
	CHECK(srq[1] != NULL, "an SRQ again after one was destroyed");

	static uint8_t buf[4096];
	struct ibv_mr *mr[4];
	for (int i = 0; i < 4; i++) {
		errno = 0;
		mr[i] = ibv_reg_mr(pd[1], buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
		if (i < 3)
			CHECK(mr[i] != NULL, "MR %d of 3", i);
		else
			CHECK(mr[i] == NULL && errno == ENOMEM, "fourth MR: NULL/ENOMEM (errno %d)", errno);
	}
	for (int i = 0; i < 3; i++)
		ibv_dereg_mr(mr[i]);
	ibv_destroy_srq(srq[0]);
	ibv_destroy_srq(srq[1]);
	for (int i = 0; i < 4; i++)
		CHECK_EQ(ibv_dealloc_pd(pd[i]), 0, "dealloc PD");
	ibv_close_device(ctx);
	return dpvt_finish();
}
