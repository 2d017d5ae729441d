/* SPDX-License-Identifier: BSD-3-Clause */
/* test_cm_mad's parts (test_cm_mad.c: synthetic MADs; test_cm_golden.c: the rxe capture). */
#ifndef TEST_CM_H
#define TEST_CM_H

#include "dpv_cm_ip.h"
#include "dpv_cm_mad.h"
#include "dpvt_wire.h"

/**
 * Decodes every CM MAD of the golden capture (test/data/wire/rdma_cm_send.pcap),
 * checks each field against the values documented in test_cm_golden.c and
 * re-encodes each one byte for byte. Counts its checks with CHECK().
 */
void cm_golden_tests(const char *pcap_path);

#endif /* TEST_CM_H */
