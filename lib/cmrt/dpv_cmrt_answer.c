/* SPDX-License-Identifier: BSD-3-Clause */
/* The stateless CM answerer (dpv_cmrt_answer.h): lib/cm's answers of an
 * agent with no listener and no id (dpv_cm_answer). */
#include "dpv_cm.h"
#include "dpv_cmrt_answer.h"

int dpv_cmrt_answer(const uint8_t *mad, size_t len, uint8_t out[DPV_CMRT_MAD_SIZE])
{
	return dpv_cm_answer(mad, len, out);
}
