/* SPDX-License-Identifier: BSD-3-Clause */
/* Check counting and the final "N passed, N failed" line (dpvt_check.h). */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "dpvt_check.h"

static atomic_int n_pass, n_fail, n_known;

bool dpvt_result(bool ok)
{
	if (ok)
		atomic_fetch_add_explicit(&n_pass, 1, memory_order_relaxed);
	return ok;
}

static void report(const char *tag, const char *file, int line, const char *expr, const char *fmt,
		   va_list ap)
{
	fflush(stdout);
	flockfile(stderr);
	fprintf(stderr, "%s %s:%d: %s: ", tag, file, line, expr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	funlockfile(stderr);
}

bool dpvt_fail(const char *file, int line, const char *expr, const char *fmt, ...)
{
	va_list ap;

	atomic_fetch_add(&n_fail, 1);
	va_start(ap, fmt);
	report("FAIL", file, line, expr, fmt, ap);
	va_end(ap);
	return false;
}

static bool xfail(void)
{
	const char *e = getenv("DPVERBS_FUNC_XFAIL");

	return e && *e == '1';
}

bool dpvt_known_bug(const char *file, int line, const char *expr, const char *fmt, ...)
{
	va_list ap;
	bool tolerated = xfail();

	atomic_fetch_add(tolerated ? &n_known : &n_fail, 1);
	va_start(ap, fmt);
	report(tolerated ? "KNOWN BUG" : "FAIL (KNOWN BUG)", file, line, expr, fmt, ap);
	va_end(ap);
	return false;
}

int dpvt_pass_count(void)
{
	return atomic_load(&n_pass);
}

int dpvt_fail_count(void)
{
	return atomic_load(&n_fail);
}

int dpvt_finish(void)
{
	int known = atomic_load(&n_known), fail = atomic_load(&n_fail);

	fflush(stderr);
	if (known)
		printf("(%d known bugs tolerated by DPVERBS_FUNC_XFAIL)\n", known);
	printf("%d passed, %d failed\n", atomic_load(&n_pass), fail);
	fflush(stdout);
	return fail ? 1 : 0;
}
