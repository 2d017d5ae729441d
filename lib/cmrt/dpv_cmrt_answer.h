/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file dpv_cmrt_answer.h
 * The stateless CM answerer: what the CM of a port answers to a MAD on QP 1
 * when nobody there owns it (no listener, no connection): Linux's ib_cm for
 * an unknown service or comm ID. For a driver that answers on QP 1 by
 * itself when no GSI QP exists (drivers/sw/sw_gsi_fb.c): this is the one
 * header of lib/cmrt a driver may include, and it exposes no type of
 * lib/cm (test/abi/check_layers.py). libc only, thread safe, no state: the
 * caller keeps its own rate limit and counters.
 */
#ifndef DPV_CMRT_ANSWER_H
#define DPV_CMRT_ANSWER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define DPV_CMRT_MAD_SIZE 256          /**< bytes of a CM MAD (lib/cm's DPV_MAD_SIZE) */
#define DPV_CMRT_GSI_QKEY 0x80010000u  /**< the GSI Q_Key (lib/cm's DPV_GSI_QKEY) */

/**
 * The answer to one received MAD (the UD payload to QP 1): a REQ gets REJ
 * "invalid service ID" (reason 8), a SIDR_REQ a SIDR_REP "unsupported"
 * (status 1), a DREQ a DREP; REP, RTU, REJ, MRA, DREP and SIDR_REP none.
 * The same bytes lib/cmrt's agent sends when it owns none of them.
 *
 * RETURN VALUE: 1 with the 256-byte answer in out (to be sent back from
 * QP 1 to the sender's QP 1 with DPV_CMRT_GSI_QKEY); 0: no answer;
 * -EINVAL (NULL argument); -EBADMSG (malformed, or not a CM MAD);
 * -EOPNOTSUPP (LAP, APR, ClassPortInfo).
 */
int dpv_cmrt_answer(const uint8_t *mad, size_t len, uint8_t out[DPV_CMRT_MAD_SIZE]);

#ifdef __cplusplus
}
#endif
#endif /* DPV_CMRT_ANSWER_H */
