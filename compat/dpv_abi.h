/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpv_abi.h: what the ABI-only exports of the drop-in libibverbs share
 * (dpv_abi_stubs.c, dpv_abi_provider.c): how an unsupported verb fails.
 */
#ifndef DPV_ABI_H
#define DPV_ABI_H

#include <errno.h>
#include <stddef.h>

/** Fail a pointer-returning verb: NULL, errno EOPNOTSUPP. */
static inline void *dpv_null_eopnotsupp(void)
{
	errno = EOPNOTSUPP;
	return NULL;
}

/** Fail an errno-returning verb: EOPNOTSUPP, errno set too. */
static inline int dpv_eopnotsupp(void)
{
	errno = EOPNOTSUPP;
	return EOPNOTSUPP;
}

#endif /* DPV_ABI_H */
