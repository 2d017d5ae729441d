/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_cm_mad RDMA_CM_SEND.PCAP
 * lib/cm's codec (dpv_cm_mad.h, dpv_cm_ip.h):
 *  - the golden rxe capture, field by field and byte for byte
 *    (test_cm_golden.c);
 *  - MADs built here byte by byte from IBA tables 106-120 for what the
 *    capture lacks (MRA, REJ, SIDR_REQ, SIDR_REP, the vendor ID and SAP
 *    bits), decoded and re-encoded;
 *  - layout coverage: a MAD whose every non-reserved bit is 1 decodes and
 *    re-encodes to exactly that, reserved bits (listed below from the IBA
 *    tables) come out 0;
 *  - every message type round trips (bytes -> struct -> bytes -> struct)
 *    with random field values;
 *  - values too wide for their field are refused by the encoder;
 *  - malformed MADs (truncated, wrong versions, class, method, unknown or
 *    unsupported attributes, length fields over their arrays) give the
 *    documented error, and a random mutation loop never crashes and never
 *    yields a MAD that does not round trip;
 *  - the rdma_cm IP header and service IDs.
 */
#include "test_cm.h"

#define OFF(x) (DPV_MAD_HDR_LEN + (x)) /* CM message byte x in the MAD */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	rng_state = dpvt_mix64(rng_state);
	return rng_state;
}

/* A valid CM Send() header for attr at the start of mad. */
static void raw_hdr(uint8_t *mad, uint16_t attr, uint64_t tid)
{
	mad[0] = 1;
	mad[1] = 7;
	mad[2] = 2;
	mad[3] = 3;
	for (int i = 0; i < 8; i++)
		mad[8 + i] = (uint8_t)(tid >> (56 - 8 * i));
	mad[16] = (uint8_t)(attr >> 8);
	mad[17] = (uint8_t)attr;
}

static void put_be(uint8_t *p, uint64_t v, int n)
{
	for (int i = n; i-- > 0; v >>= 8)
		p[i] = (uint8_t)v;
}

static void fill(uint8_t *p, size_t n, uint8_t seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(seed + 13 * i);
}

/* decode raw, compare with nothing, re-encode: must give raw back */
static bool reencodes(const uint8_t *raw, const struct dpv_cm_mad *m)
{
	uint8_t out[DPV_MAD_SIZE];

	return dpv_cm_mad_encode(m, out) == 0 && memcmp(out, raw, DPV_MAD_SIZE) == 0;
}

/* ---- MADs written byte by byte from the IBA tables ---- */

static void test_hand_mra_rej(void)
{
	uint8_t raw[DPV_MAD_SIZE] = { 0 };
	struct dpv_cm_mad m;

	/* MRA (table 107): comm IDs, MRAed in bits 0-1 of byte 8, timeout bits 0-4 of byte 9 */
	raw_hdr(raw, DPV_CM_ATTR_MRA, 0x1122334455667788ull);
	put_be(raw + OFF(0), 0xa1a2a3a4, 4);
	put_be(raw + OFF(4), 0xb1b2b3b4, 4);
	raw[OFF(8)] = 2 << 6;      /* message MRAed: other (LAP) */
	raw[OFF(9)] = 0x17 << 3;   /* service timeout 23 */
	fill(raw + OFF(10), DPV_CM_MRA_PRIVATE_LEN, 0x10);
	CHECK_EQ(dpv_cm_mad_decode(raw, sizeof(raw), &m), 0, "hand MRA decodes");
	CHECK(m.hdr.tid == 0x1122334455667788ull, "MRA TID");
	CHECK_EQ(m.mra.local_comm_id, 0xa1a2a3a4, "MRA local comm ID");
	CHECK_EQ(m.mra.remote_comm_id, 0xb1b2b3b4, "MRA remote comm ID");
	CHECK_EQ(m.mra.message_mraed, DPV_CM_MSG_OTHER, "MRA message MRAed");
	CHECK_EQ(m.mra.service_timeout, 0x17, "MRA service timeout");
	CHECK(memcmp(m.mra.private_data, raw + OFF(10), DPV_CM_MRA_PRIVATE_LEN) == 0, "MRA private data");
	CHECK(reencodes(raw, &m), "hand MRA re-encodes");

	/* REJ (table 108): rejected in bits 0-1 of byte 8, info length bits 0-6 of byte 9 */
	memset(raw, 0, sizeof(raw));
	raw_hdr(raw, DPV_CM_ATTR_REJ, 7);
	put_be(raw + OFF(0), 0xc1c2c3c4, 4);
	put_be(raw + OFF(4), 0xd1d2d3d4, 4);
	raw[OFF(8)] = 1 << 6;      /* message rejected: REP */
	raw[OFF(9)] = 16 << 1;     /* ARI length 16 */
	put_be(raw + OFF(10), DPV_CM_REJ_CONSUMER_DEFINED, 2);
	fill(raw + OFF(12), 16, 0x80);
	fill(raw + OFF(84), DPV_CM_REJ_PRIVATE_LEN, 0x20);
	CHECK_EQ(dpv_cm_mad_decode(raw, sizeof(raw), &m), 0, "hand REJ decodes");
	CHECK_EQ(m.rej.local_comm_id, 0xc1c2c3c4, "REJ local comm ID");
	CHECK_EQ(m.rej.remote_comm_id, 0xd1d2d3d4, "REJ remote comm ID");
	CHECK_EQ(m.rej.message_rejected, DPV_CM_MSG_REP, "REJ message rejected");
	CHECK_EQ(m.rej.ari_length, 16, "REJ ARI length");
	CHECK_EQ(m.rej.reason, 28, "REJ reason");
	CHECK(memcmp(m.rej.ari, raw + OFF(12), DPV_CM_REJ_ARI_LEN) == 0, "REJ ARI");
	CHECK(memcmp(m.rej.private_data, raw + OFF(84), DPV_CM_REJ_PRIVATE_LEN) == 0, "REJ private data");
	CHECK(reencodes(raw, &m), "hand REJ re-encodes");
}

static void test_hand_sidr(void)
{
	uint8_t raw[DPV_MAD_SIZE] = { 0 };
	struct dpv_cm_mad m;

	/* SIDR_REQ (table 119): request ID, P_Key at 4, service ID at 8, private data at 16 */
	raw_hdr(raw, DPV_CM_ATTR_SIDR_REQ, 9);
	put_be(raw + OFF(0), 0x01020304, 4);
	put_be(raw + OFF(4), 0x7fff, 2);
	put_be(raw + OFF(8), 0x0000000001114853ull, 8);
	fill(raw + OFF(16), DPV_CM_SIDR_REQ_PRIVATE_LEN, 0x30);
	CHECK_EQ(dpv_cm_mad_decode(raw, sizeof(raw), &m), 0, "hand SIDR_REQ decodes");
	CHECK_EQ(m.sidr_req.request_id, 0x01020304, "SIDR_REQ request ID");
	CHECK_EQ(m.sidr_req.pkey, 0x7fff, "SIDR_REQ P_Key");
	CHECK(m.sidr_req.service_id == 0x0000000001114853ull, "SIDR_REQ service ID");
	CHECK(memcmp(m.sidr_req.private_data, raw + OFF(16), DPV_CM_SIDR_REQ_PRIVATE_LEN) == 0,
	      "SIDR_REQ private data");
	CHECK(reencodes(raw, &m), "hand SIDR_REQ re-encodes");

	/* SIDR_REP (table 120 + IBTA 1.4 vendor ID in bytes 6-7 and 11) */
	memset(raw, 0, sizeof(raw));
	raw_hdr(raw, DPV_CM_ATTR_SIDR_REP, 9);
	put_be(raw + OFF(0), 0x01020304, 4);
	raw[OFF(4)] = DPV_CM_SIDR_REDIRECT;
	raw[OFF(5)] = DPV_CM_SIDR_REP_INFO_LEN;
	put_be(raw + OFF(6), 0x1234, 2);       /* vendor ID bits 23..8 */
	put_be(raw + OFF(8), 0xabcdef, 3);     /* QPN */
	raw[OFF(11)] = 0x56;                   /* vendor ID bits 7..0 */
	put_be(raw + OFF(12), 0x0000000001114853ull, 8);
	put_be(raw + OFF(20), 0x11111111, 4);
	fill(raw + OFF(24), DPV_CM_SIDR_REP_INFO_LEN, 0x40);
	fill(raw + OFF(96), DPV_CM_SIDR_REP_PRIVATE_LEN, 0x50);
	CHECK_EQ(dpv_cm_mad_decode(raw, sizeof(raw), &m), 0, "hand SIDR_REP decodes");
	CHECK_EQ(m.sidr_rep.request_id, 0x01020304, "SIDR_REP request ID");
	CHECK_EQ(m.sidr_rep.status, DPV_CM_SIDR_REDIRECT, "SIDR_REP status");
	CHECK_EQ(m.sidr_rep.info_length, 72, "SIDR_REP info length");
	CHECK_EQ(m.sidr_rep.vendor_id, 0x123456, "SIDR_REP vendor ID");
	CHECK_EQ(m.sidr_rep.qpn, 0xabcdef, "SIDR_REP QPN");
	CHECK(m.sidr_rep.service_id == 0x0000000001114853ull, "SIDR_REP service ID");
	CHECK_EQ(m.sidr_rep.qkey, 0x11111111, "SIDR_REP Q_Key");
	CHECK(memcmp(m.sidr_rep.info, raw + OFF(24), DPV_CM_SIDR_REP_INFO_LEN) == 0, "SIDR_REP info");
	CHECK(memcmp(m.sidr_rep.private_data, raw + OFF(96), DPV_CM_SIDR_REP_PRIVATE_LEN) == 0,
	      "SIDR_REP private data");
	CHECK(reencodes(raw, &m), "hand SIDR_REP re-encodes");
}

/* Fields the capture has as 0: REQ vendor ID (bytes 5-7) and SAP (byte 139
 * bit 5), REP vendor ID (bytes 15, 19, 23), the REQ alternate path. */
static void test_hand_vendor(void)
{
	uint8_t raw[DPV_MAD_SIZE] = { 0 };
	struct dpv_cm_mad m;

	raw_hdr(raw, DPV_CM_ATTR_REQ, 1);
	put_be(raw + OFF(5), 0x0a0b0c, 3);
	raw[OFF(139)] = (0x0e << 3) | 0x04; /* alternate ACK timeout 14, SAP */
	put_be(raw + OFF(96), 0x0102, 2);
	put_be(raw + OFF(98), 0x0304, 2);
	fill(raw + OFF(100), 32, 0x60);
	put_be(raw + OFF(132), 0x12345u << 12 | 0x2a, 4); /* flow label, packet rate 42 */
	raw[OFF(136)] = 0xb8;
	raw[OFF(137)] = 0x02;
	raw[OFF(138)] = (0x0c << 4) | 0x08; /* SL 12, subnet local */
	CHECK_EQ(dpv_cm_mad_decode(raw, sizeof(raw), &m), 0, "hand REQ decodes");
	CHECK_EQ(m.req.vendor_id, 0x0a0b0c, "REQ vendor ID");
	CHECK_EQ(m.req.sap_supported, 1, "REQ SAP supported");
	CHECK_EQ(m.req.alternate.local_ack_timeout, 14, "REQ alternate ACK timeout");
	CHECK_EQ(m.req.alternate.local_lid, 0x0102, "REQ alternate local LID");
	CHECK_EQ(m.req.alternate.remote_lid, 0x0304, "REQ alternate remote LID");
	CHECK(memcmp(m.req.alternate.local_gid, raw + OFF(100), 16) == 0, "REQ alternate local GID");
	CHECK(memcmp(m.req.alternate.remote_gid, raw + OFF(116), 16) == 0, "REQ alternate remote GID");
	CHECK_EQ(m.req.alternate.flow_label, 0x12345, "REQ alternate flow label");
	CHECK_EQ(m.req.alternate.packet_rate, 42, "REQ alternate packet rate");
	CHECK_EQ(m.req.alternate.traffic_class, 0xb8, "REQ alternate traffic class");
	CHECK_EQ(m.req.alternate.hop_limit, 2, "REQ alternate hop limit");
	CHECK_EQ(m.req.alternate.sl, 12, "REQ alternate SL");
	CHECK_EQ(m.req.alternate.subnet_local, 1, "REQ alternate subnet local");
	CHECK(reencodes(raw, &m), "hand REQ re-encodes");

	memset(raw, 0, sizeof(raw));
	raw_hdr(raw, DPV_CM_ATTR_REP, 1);
	raw[OFF(15)] = 0xaa;
	raw[OFF(19)] = 0xbb;
	raw[OFF(23)] = 0xcc;
	put_be(raw + OFF(12), 0x123456, 3);
	put_be(raw + OFF(16), 0x654321, 3);
	put_be(raw + OFF(20), 0xfedcba, 3);
	CHECK_EQ(dpv_cm_mad_decode(raw, sizeof(raw), &m), 0, "hand REP decodes");
	CHECK_EQ(m.rep.vendor_id, 0xaabbcc, "REP vendor ID");
	CHECK_EQ(m.rep.local_qpn, 0x123456, "REP QPN beside the vendor ID");
	CHECK_EQ(m.rep.local_eecn, 0x654321, "REP EECN beside the vendor ID");
	CHECK_EQ(m.rep.starting_psn, 0xfedcba, "REP PSN beside the vendor ID");
	CHECK(reencodes(raw, &m), "hand REP re-encodes");
}

/* ---- reserved bits of each message (IBA tables 106-120), message offsets ---- */

struct resv {
	uint8_t off, mask;
};

static const struct {
	uint16_t attr;
	struct resv r[16];
} reserved[] = {
	{ DPV_CM_ATTR_REQ, { { 4, 0xff }, { 24, 0xff }, { 25, 0xff }, { 26, 0xff }, { 27, 0xff },
			     { 90, 0x0f }, { 91, 0xc0 }, { 94, 0x07 }, { 95, 0x07 },
			     { 134, 0x0f }, { 135, 0xc0 }, { 138, 0x07 }, { 139, 0x03 } } },
	{ DPV_CM_ATTR_MRA, { { 8, 0x3f }, { 9, 0x07 } } },
	{ DPV_CM_ATTR_REJ, { { 8, 0x3f }, { 9, 0x01 } } },
	{ DPV_CM_ATTR_REP, { { 27, 0x0f } } },
	{ DPV_CM_ATTR_RTU, { { 0, 0 } } },
	{ DPV_CM_ATTR_DREQ, { { 11, 0xff } } },
	{ DPV_CM_ATTR_DREP, { { 0, 0 } } },
	{ DPV_CM_ATTR_SIDR_REQ, { { 6, 0xff }, { 7, 0xff } } },
	{ DPV_CM_ATTR_SIDR_REP, { { 0, 0 } } },
};
#define N_TYPES (int)(sizeof(reserved) / sizeof(reserved[0]))

/* Clears the reserved bits of the header and of the message of type t. */
static void clear_reserved(uint8_t *mad, int t)
{
	mad[18] = mad[19] = 0;
	for (int i = 0; i < 16 && reserved[t].r[i].mask; i++)
		mad[OFF(reserved[t].r[i].off)] &= (uint8_t)~reserved[t].r[i].mask;
}

/* Length fields must not exceed their arrays: set them to len. */
static void set_lengths(uint8_t *mad, uint16_t attr, uint8_t len)
{
	if (attr == DPV_CM_ATTR_REJ)
		mad[OFF(9)] = (uint8_t)(len << 1 | (mad[OFF(9)] & 1));
	else if (attr == DPV_CM_ATTR_SIDR_REP)
		mad[OFF(5)] = len;
}

/* Every non-reserved bit 1: decode + encode gives exactly that. */
static void test_coverage(void)
{
	for (int t = 0; t < N_TYPES; t++) {
		uint16_t attr = reserved[t].attr;
		uint8_t raw[DPV_MAD_SIZE], want[DPV_MAD_SIZE], out[DPV_MAD_SIZE];
		struct dpv_cm_mad m;

		memset(raw, 0xff, sizeof(raw));
		raw_hdr(raw, attr, UINT64_MAX);
		set_lengths(raw, attr, 72);
		memcpy(want, raw, sizeof(want));
		clear_reserved(want, t);
		set_lengths(want, attr, 72);
		CHECK(dpv_cm_mad_decode(raw, sizeof(raw), &m) == 0, "%s all ones decodes",
		      dpv_cm_attr_name(attr));
		CHECK(dpv_cm_mad_encode(&m, out) == 0, "%s all ones encodes", dpv_cm_attr_name(attr));
		for (int i = 0; i < DPV_MAD_SIZE; i++)
			if (!CHECK(out[i] == want[i], "%s byte %d: %#x, want %#x (reserved bits 0, others 1)",
				   dpv_cm_attr_name(attr), i, out[i], want[i]))
				break;
	}
}

/* Random bytes -> struct -> bytes (identical) -> struct (identical). */
static void test_roundtrip(void)
{
	for (int t = 0; t < N_TYPES; t++) {
		uint16_t attr = reserved[t].attr;
		int bad = 0;

		for (int it = 0; it < 2000 && bad < 3; it++) {
			uint8_t raw[DPV_MAD_SIZE], out[DPV_MAD_SIZE];
			struct dpv_cm_mad m, m2;

			for (int i = 0; i < DPV_MAD_SIZE; i += 8)
				put_be(raw + i, rnd(), 8);
			raw_hdr(raw, attr, rnd());
			clear_reserved(raw, t);
			set_lengths(raw, attr, (uint8_t)(rnd() % 73));
			if (dpv_cm_mad_decode(raw, sizeof(raw), &m) != 0 || dpv_cm_mad_encode(&m, out) != 0 ||
			    memcmp(out, raw, sizeof(raw)) != 0 || dpv_cm_mad_decode(out, sizeof(out), &m2) != 0 ||
			    memcmp(&m, &m2, sizeof(m)) != 0)
				bad++;
		}
		CHECK(bad == 0, "%s: %d of 2000 random MADs do not round trip", dpv_cm_attr_name(attr), bad);
	}
}

/* A field value wider than its wire field is refused. */
static void test_encode_range(void)
{
	struct dpv_cm_mad m;
	uint8_t out[DPV_MAD_SIZE];

#define TOO_WIDE(attr, stmt, what)                                              \
	do {                                                                    \
		dpv_cm_mad_init(&m, attr, 1);                                   \
		CHECK_EQ(dpv_cm_mad_encode(&m, out), 0, "zero " what " encodes"); \
		stmt;                                                           \
		CHECK_EQ(dpv_cm_mad_encode(&m, out), -EINVAL, what " too wide"); \
	} while (0)
	TOO_WIDE(DPV_CM_ATTR_REQ, m.req.local_qpn = 1u << 24, "REQ QPN");
	TOO_WIDE(DPV_CM_ATTR_REQ, m.req.starting_psn = 0x1000000, "REQ PSN");
	TOO_WIDE(DPV_CM_ATTR_REQ, m.req.vendor_id = 0x1000000, "REQ vendor ID");
	TOO_WIDE(DPV_CM_ATTR_REQ, m.req.remote_cm_response_timeout = 32, "REQ CM timeout");
	TOO_WIDE(DPV_CM_ATTR_REQ, m.req.transport_service_type = 4, "REQ TST");
	TOO_WIDE(DPV_CM_ATTR_REQ, m.req.srq = 2, "REQ SRQ flag");
	TOO_WIDE(DPV_CM_ATTR_REQ, m.req.path_mtu = 16, "REQ MTU");
	TOO_WIDE(DPV_CM_ATTR_REQ, m.req.primary.flow_label = 1u << 20, "REQ flow label");
	TOO_WIDE(DPV_CM_ATTR_REQ, m.req.alternate.packet_rate = 64, "REQ packet rate");
	TOO_WIDE(DPV_CM_ATTR_REQ, m.req.primary.sl = 16, "REQ SL");
	TOO_WIDE(DPV_CM_ATTR_REP, m.rep.vendor_id = 0x1000000, "REP vendor ID");
	TOO_WIDE(DPV_CM_ATTR_REP, m.rep.failover_accepted = 4, "REP failover");
	TOO_WIDE(DPV_CM_ATTR_MRA, m.mra.service_timeout = 32, "MRA timeout");
	TOO_WIDE(DPV_CM_ATTR_MRA, m.mra.message_mraed = 4, "MRA message MRAed");
	TOO_WIDE(DPV_CM_ATTR_REJ, m.rej.ari_length = 73, "REJ ARI length");
	TOO_WIDE(DPV_CM_ATTR_DREQ, m.dreq.remote_qpn_eecn = 1u << 24, "DREQ QPN");
	TOO_WIDE(DPV_CM_ATTR_SIDR_REP, m.sidr_rep.info_length = 73, "SIDR_REP info length");
	TOO_WIDE(DPV_CM_ATTR_SIDR_REP, m.sidr_rep.qpn = 1u << 24, "SIDR_REP QPN");
#undef TOO_WIDE
	dpv_cm_mad_init(&m, DPV_CM_ATTR_RTU, 1);
	CHECK_EQ(dpv_cm_mad_encode(NULL, out), -EINVAL, "encode NULL MAD");
	CHECK_EQ(dpv_cm_mad_encode(&m, NULL), -EINVAL, "encode NULL buffer");
	m.hdr.class_version = 1;
	CHECK_EQ(dpv_cm_mad_encode(&m, out), -EINVAL, "encode class version 1");
	dpv_cm_mad_init(&m, DPV_CM_ATTR_RTU, 1);
	m.hdr.method = 0x83;
	CHECK_EQ(dpv_cm_mad_encode(&m, out), -EINVAL, "encode a response method");
	dpv_cm_mad_init(&m, DPV_CM_ATTR_LAP, 1);
	CHECK_EQ(dpv_cm_mad_encode(&m, out), -EOPNOTSUPP, "encode LAP");
	dpv_cm_mad_init(&m, 0x0099, 1);
	CHECK_EQ(dpv_cm_mad_encode(&m, out), -EINVAL, "encode an unknown attribute");
}

static void check_rejected(const uint8_t *mad, size_t len, int err, const char *what)
{
	struct dpv_cm_mad m;
	uint8_t zero[sizeof(m)] = { 0 };

	memset(&m, 0x5a, sizeof(m));
	CHECK_EQ(dpv_cm_mad_decode(mad, len, &m), err, what);
	if (err == -EBADMSG)
		CHECK(memcmp(&m, zero, sizeof(m)) == 0, "%s: the struct is zeroed", what);
}

static void test_malformed(void)
{
	uint8_t good[DPV_MAD_SIZE + 1] = { 0 }, bad[DPV_MAD_SIZE + 1];
	static const uint16_t unknown[] = { 0x0000, 0x0002, 0x000f, 0x001b, 0x0020, 0x1010, 0xffff };
	struct dpv_cm_mad m;

	raw_hdr(good, DPV_CM_ATTR_RTU, 5);
	CHECK_EQ(dpv_cm_mad_decode(good, DPV_MAD_SIZE, &m), 0, "a zero RTU decodes");
	for (size_t len = 0; len <= DPV_MAD_SIZE + 1; len++)
		if (len != DPV_MAD_SIZE)
			check_rejected(good, len, -EBADMSG, "wrong length");
	CHECK_EQ(dpv_cm_mad_decode(NULL, DPV_MAD_SIZE, &m), -EINVAL, "decode NULL MAD");
	CHECK_EQ(dpv_cm_mad_decode(good, DPV_MAD_SIZE, NULL), -EINVAL, "decode into NULL");
	static const struct {
		int byte;
		uint8_t val;
		const char *what;
	} hdr_bad[] = {
		{ 0, 0x00, "base version 0" }, { 0, 0x02, "base version 2" },
		{ 0, 0x80, "OPA base version" }, { 1, 0x03, "SA class" }, { 1, 0x81, "class 0x81" },
		{ 2, 0x01, "class version 1" }, { 2, 0x03, "class version 3" },
		{ 3, 0x01, "method Get" }, { 3, 0x02, "method Set" }, { 3, 0x83, "response bit" },
		{ 3, 0x13, "method Report" },
	};
	for (size_t i = 0; i < sizeof(hdr_bad) / sizeof(hdr_bad[0]); i++) {
		memcpy(bad, good, DPV_MAD_SIZE);
		bad[hdr_bad[i].byte] = hdr_bad[i].val;
		check_rejected(bad, DPV_MAD_SIZE, -EBADMSG, hdr_bad[i].what);
	}
	for (size_t i = 0; i < sizeof(unknown) / sizeof(unknown[0]); i++) {
		memcpy(bad, good, DPV_MAD_SIZE);
		put_be(bad + 16, unknown[i], 2);
		check_rejected(bad, DPV_MAD_SIZE, -EBADMSG, "unknown attribute");
	}
	for (uint16_t a = DPV_CM_ATTR_LAP; a <= DPV_CM_ATTR_APR; a++) {
		memcpy(bad, good, DPV_MAD_SIZE);
		put_be(bad + 16, a, 2);
		CHECK_EQ(dpv_cm_mad_decode(bad, DPV_MAD_SIZE, &m), -EOPNOTSUPP, "LAP/APR unsupported");
		CHECK_EQ(m.hdr.attr_id, a, "LAP/APR header still decoded");
	}
	put_be(bad + 16, DPV_CM_ATTR_CLASS_PORT_INFO, 2);
	CHECK_EQ(dpv_cm_mad_decode(bad, DPV_MAD_SIZE, &m), -EOPNOTSUPP, "ClassPortInfo unsupported");
	for (int len = 73; len < 128; len++) {
		memset(bad, 0, sizeof(bad));
		raw_hdr(bad, DPV_CM_ATTR_REJ, 1);
		set_lengths(bad, DPV_CM_ATTR_REJ, (uint8_t)len);
		check_rejected(bad, DPV_MAD_SIZE, -EBADMSG, "REJ ARI length over 72");
	}
	for (int len = 73; len < 256; len++) {
		memset(bad, 0, sizeof(bad));
		raw_hdr(bad, DPV_CM_ATTR_SIDR_REP, 1);
		set_lengths(bad, DPV_CM_ATTR_SIDR_REP, (uint8_t)len);
		check_rejected(bad, DPV_MAD_SIZE, -EBADMSG, "SIDR_REP info length over 72");
	}
}

/* Random corruption of valid MADs: an error the header documents, or a
 * message that round trips. Never a crash (ASan builds run this too). */
static void test_mutation(void)
{
	int ok = 0, ebadmsg = 0, eopnotsupp = 0, other = 0, unstable = 0;

	for (int it = 0; it < 20000; it++) {
		int t = (int)(rnd() % N_TYPES), flips = 1 + (int)(rnd() % 8), r;
		uint8_t mad[DPV_MAD_SIZE], out[DPV_MAD_SIZE];
		size_t len = DPV_MAD_SIZE;
		struct dpv_cm_mad m, m2;

		for (int i = 0; i < DPV_MAD_SIZE; i += 8)
			put_be(mad + i, rnd(), 8);
		raw_hdr(mad, reserved[t].attr, rnd());
		set_lengths(mad, reserved[t].attr, (uint8_t)(rnd() % 73));
		for (int k = 0; k < flips; k++) {
			uint64_t x = rnd();
			/* mostly the header and the first message bytes, where the checks are */
			int pos = (x & 1) ? (int)((x >> 8) % 32) : (int)((x >> 8) % DPV_MAD_SIZE);

			mad[pos] ^= (uint8_t)(1u << ((x >> 16) % 8));
		}
		if (rnd() % 8 == 0)
			len = (size_t)(rnd() % (DPV_MAD_SIZE + 1));
		r = dpv_cm_mad_decode(mad, len, &m);
		if (r == 0) {
			ok++;
			if (dpv_cm_mad_encode(&m, out) != 0 || dpv_cm_mad_decode(out, sizeof(out), &m2) != 0 ||
			    memcmp(&m, &m2, sizeof(m)) != 0)
				unstable++;
		} else {
			ebadmsg += r == -EBADMSG;
			eopnotsupp += r == -EOPNOTSUPP;
			other += r != -EBADMSG && r != -EOPNOTSUPP;
		}
	}
	printf("mutation: %d decoded, %d EBADMSG, %d EOPNOTSUPP\n", ok, ebadmsg, eopnotsupp);
	CHECK_EQ(other, 0, "mutated MADs with an undocumented error");
	CHECK_EQ(unstable, 0, "decoded mutated MADs that do not round trip");
	CHECK(ok > 1000 && ebadmsg > 1000, "the mutation loop reaches both outcomes");
}

/* Private data: at the end of every MAD, of the documented length. */
static void test_private_data(void)
{
	static const struct {
		uint16_t attr;
		size_t len;
	} want[] = {
		{ DPV_CM_ATTR_REQ, 92 }, { DPV_CM_ATTR_MRA, 222 }, { DPV_CM_ATTR_REJ, 148 },
		{ DPV_CM_ATTR_REP, 196 }, { DPV_CM_ATTR_RTU, 224 }, { DPV_CM_ATTR_DREQ, 220 },
		{ DPV_CM_ATTR_DREP, 224 }, { DPV_CM_ATTR_SIDR_REQ, 216 }, { DPV_CM_ATTR_SIDR_REP, 136 },
	};
	struct dpv_cm_mad m;
	uint8_t out[DPV_MAD_SIZE];
	size_t len = 1;

	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		uint8_t *p;

		dpv_cm_mad_init(&m, want[i].attr, 1);
		p = dpv_cm_mad_private_data(&m, &len);
		CHECK(p && len == want[i].len, "%s private data length %zu", dpv_cm_attr_name(want[i].attr), len);
		if (!p)
			continue;
		memset(p, 0xa5, len);
		CHECK_EQ(dpv_cm_mad_encode(&m, out), 0, "private data encodes");
		CHECK(out[DPV_MAD_SIZE - len - 1] != 0xa5 && out[DPV_MAD_SIZE - len] == 0xa5 &&
		      out[DPV_MAD_SIZE - 1] == 0xa5, "%s private data ends the MAD", dpv_cm_attr_name(want[i].attr));
	}
	dpv_cm_mad_init(&m, DPV_CM_ATTR_APR, 1);
	CHECK(dpv_cm_mad_private_data(&m, &len) == NULL && len == 0, "APR: no private data");
	CHECK(dpv_cm_mad_private_data(NULL, &len) == NULL && len == 0, "NULL: no private data");
	CHECK(strcmp(dpv_cm_attr_name(DPV_CM_ATTR_SIDR_REP), "SIDR_REP") == 0, "attribute name");
	CHECK(strcmp(dpv_cm_attr_name(DPV_CM_ATTR_LAP), "LAP") == 0, "LAP name");
	CHECK(strcmp(dpv_cm_attr_name(0x4242), "unknown") == 0, "unknown attribute name");
}

static void test_mad_hdr(void)
{
	struct dpv_mad_hdr h = { 0x81, 0x03, 0x02, 0x95, 0x1234, 0x5678, 0x0102030405060708ull, 0x00aa,
				 0xdeadbeef }, h2;
	uint8_t b[DPV_MAD_HDR_LEN];
	static const uint8_t want[DPV_MAD_HDR_LEN] = { 0x81, 0x03, 0x02, 0x95, 0x12, 0x34, 0x56, 0x78,
						       1, 2, 3, 4, 5, 6, 7, 8, 0x00, 0xaa, 0, 0,
						       0xde, 0xad, 0xbe, 0xef };

	memset(b, 0xff, sizeof(b));
	CHECK_EQ(dpv_mad_hdr_encode(&h, b), 0, "any MAD header encodes");
	CHECK(memcmp(b, want, sizeof(b)) == 0, "MAD header layout (IBA 13.4.3)");
	CHECK_EQ(dpv_mad_hdr_decode(b, sizeof(b), &h2), 0, "MAD header decodes");
	/* field by field: the struct has padding (after attr_id) */
	CHECK(h.base_version == h2.base_version && h.mgmt_class == h2.mgmt_class &&
		      h.class_version == h2.class_version && h.method == h2.method && h.status == h2.status &&
		      h.class_specific == h2.class_specific && h.tid == h2.tid && h.attr_id == h2.attr_id &&
		      h.attr_mod == h2.attr_mod,
	      "MAD header round trip");
	CHECK_EQ(dpv_mad_hdr_decode(b, sizeof(b) - 1, &h2), -EBADMSG, "short MAD header");
	CHECK_EQ(dpv_mad_hdr_encode(NULL, b), -EINVAL, "NULL header");
}

static void test_cma(void)
{
	static const uint8_t v4a[4] = { 192, 168, 1, 1 }, v4b[4] = { 192, 168, 1, 2 };
	struct dpv_cma_hdr h, h2;
	uint8_t buf[DPV_CMA_HDR_LEN + 4];
	uint16_t ps = 7, port = 7;

	CHECK(dpv_cma_service_id(DPV_RDMA_PS_TCP, 18515) == 0x0000000001064853ull, "TCP service ID");
	CHECK(dpv_cma_service_id(DPV_RDMA_PS_UDP, 1) == 0x0000000001110001ull, "UDP service ID");
	CHECK(dpv_cma_service_id(DPV_RDMA_PS_IB, 0xffff) == 0x00000000013fffffull, "IB service ID");
	CHECK(dpv_cma_service_id(DPV_RDMA_PS_IPOIB, 2) == 0x0000000000020002ull, "IPoIB service ID");
	CHECK((dpv_cma_service_id(DPV_RDMA_PS_TCP, 9) & DPV_CMA_SERVICE_ID_MASK) == DPV_CMA_SERVICE_ID,
	      "TCP service IDs are rdma_cm's");
	CHECK_EQ(dpv_cma_service_id_parse(0x00000000013f1234ull, &ps, &port), 0, "IB service ID parses");
	CHECK(ps == DPV_RDMA_PS_IB && port == 0x1234, "IB port space and port");
	CHECK_EQ(dpv_cma_service_id_parse(0x0000000001074853ull, &ps, &port), -EINVAL, "port space 0x107");
	CHECK_EQ(dpv_cma_service_id_parse(0x1000000001064853ull, &ps, &port), -EINVAL, "high bits set");
	CHECK_EQ(dpv_cma_service_id_parse(0x0200000000000001ull, NULL, NULL), -EINVAL, "IB CM assigned ID");
	CHECK(ps == DPV_RDMA_PS_IB && port == 0x1234, "failed parses leave ps/port alone");

	dpv_cma_hdr_ipv4(&h, v4a, v4b, 0x1234);
	CHECK_EQ(dpv_cma_hdr_encode(&h, buf, sizeof(buf)), DPV_CMA_HDR_LEN, "IPv4 header encodes");
	CHECK(buf[0] == 0 && buf[1] == 0x40 && buf[2] == 0x12 && buf[3] == 0x34 && buf[16] == 192 &&
	      buf[19] == 1 && buf[32] == 192 && buf[35] == 2 && buf[4] == 0 && buf[20] == 0, "IPv4 layout");
	memset(&h, 0, sizeof(h));
	h.ip_version = 6;
	h.src_port = 0xfffe;
	fill(h.src_addr, 16, 1);
	fill(h.dst_addr, 16, 2);
	CHECK_EQ(dpv_cma_hdr_encode(&h, buf, sizeof(buf)), DPV_CMA_HDR_LEN, "IPv6 header encodes");
	CHECK_EQ(buf[1], 0x60, "IPv6 version nibble");
	CHECK_EQ(dpv_cma_hdr_decode(buf, DPV_CMA_HDR_LEN, &h2), DPV_CMA_HDR_LEN, "IPv6 header decodes");
	CHECK(memcmp(&h, &h2, sizeof(h)) == 0, "IPv6 header round trip");
	buf[1] = 0x6f; /* the reserved nibble is ignored */
	CHECK(dpv_cma_hdr_decode(buf, DPV_CMA_HDR_LEN, &h2) == DPV_CMA_HDR_LEN && h2.ip_version == 6,
	      "reserved nibble ignored");
	CHECK_EQ(dpv_cma_hdr_decode(buf, DPV_CMA_HDR_LEN - 1, &h2), -EBADMSG, "short IP CM header");
	buf[1] = 0x50;
	CHECK_EQ(dpv_cma_hdr_decode(buf, DPV_CMA_HDR_LEN, &h2), -EAFNOSUPPORT, "IP version 5");
	buf[1] = 0x40;
	buf[0] = 0x10;
	CHECK_EQ(dpv_cma_hdr_decode(buf, DPV_CMA_HDR_LEN, &h2), -EBADMSG, "CM version 1.0");
	CHECK_EQ(dpv_cma_hdr_decode(NULL, DPV_CMA_HDR_LEN, &h2), -EINVAL, "decode NULL");
	h.ip_version = 5;
	CHECK_EQ(dpv_cma_hdr_encode(&h, buf, sizeof(buf)), -EAFNOSUPPORT, "encode IP version 5");
	h.ip_version = 4;
	CHECK_EQ(dpv_cma_hdr_encode(&h, buf, DPV_CMA_HDR_LEN - 1), -EINVAL, "encode into a short buffer");
	h.cma_version = 1;
	CHECK_EQ(dpv_cma_hdr_encode(&h, buf, sizeof(buf)), -EINVAL, "encode version 1");
	CHECK_EQ(DPV_CMA_REQ_PRIVATE_MAX, 56, "rdma_connect private data limit");
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: test_cm_mad test/data/wire/rdma_cm_send.pcap\n");
		return 2;
	}
	cm_golden_tests(argv[1]);
	test_hand_mra_rej();
	test_hand_sidr();
	test_hand_vendor();
	test_coverage();
	test_roundtrip();
	test_encode_range();
	test_malformed();
	test_mutation();
	test_private_data();
	test_mad_hdr();
	test_cma();
	return dpvt_finish();
}
