/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * CM MAD codec (dpv_cm_mad.h). Table driven: each message is a list of
 * field descriptors (where the bits are in the MAD, where the value is in
 * struct dpv_cm_mad), and one loop encodes or decodes any message. The
 * tables transcribe IBA Vol 1 tables 106-120 (offsets there are from the
 * start of the CM message, i.e. after the 24-byte MAD header; bit 0 is the
 * most significant bit of the byte).
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "dpv_cm_mad.h"

/*
 * One field: width bits starting at bit `bit` (from the MSB) of MAD byte
 * `off`, holding bits [lsb, lsb + width) of the struct member at `soff`
 * (size `ssize`: 1, 2, 4 or 8). A value split over several places (the
 * vendor ID of REP and SIDR_REP) has one descriptor per piece; `vbits` is
 * the width of the whole value, which the encoder checks. width 0: a byte
 * array of ssize bytes copied as is.
 */
struct cm_field {
	uint16_t soff;
	uint8_t ssize;
	uint8_t off;
	uint8_t bit;
	uint8_t width;
	uint8_t lsb;
	uint8_t vbits;
};

#define MEMB(f) offsetof(struct dpv_cm_mad, f), sizeof(((struct dpv_cm_mad *)0)->f)
/* a field at CM message byte off (MAD byte DPV_MAD_HDR_LEN + off) */
#define FLD(f, off, bit, width) { MEMB(f), DPV_MAD_HDR_LEN + (off), (bit), (width), 0, (width) }
/* one piece of a split value */
#define PIECE(f, off, bit, width, lsb, vbits) \
	{ MEMB(f), DPV_MAD_HDR_LEN + (off), (bit), (width), (lsb), (vbits) }
/* a byte array (GID, ARI, private data) */
#define ARR(f, off) { MEMB(f), DPV_MAD_HDR_LEN + (off), 0, 0, 0, 0 }

/* IBA table 106: a path is 44 bytes at REQ byte 52 (primary) or 96 (alternate). */
#define PATH(p, b)                                                         \
	FLD(req.p.local_lid, (b) + 0, 0, 16), FLD(req.p.remote_lid, (b) + 2, 0, 16), \
	ARR(req.p.local_gid, (b) + 4), ARR(req.p.remote_gid, (b) + 20),      \
	FLD(req.p.flow_label, (b) + 36, 0, 20),                              \
	FLD(req.p.packet_rate, (b) + 39, 2, 6),                              \
	FLD(req.p.traffic_class, (b) + 40, 0, 8),                            \
	FLD(req.p.hop_limit, (b) + 41, 0, 8), FLD(req.p.sl, (b) + 42, 0, 4), \
	FLD(req.p.subnet_local, (b) + 42, 4, 1),                             \
	FLD(req.p.local_ack_timeout, (b) + 43, 0, 5)

/* IBA table 106, REQ. Reserved: byte 4, 24..27, the 6 bits before each
 * packet rate, the low 3 bits of bytes 94/95 (138/139 but SAP). */
static const struct cm_field req_fields[] = {
	FLD(req.local_comm_id, 0, 0, 32),
	FLD(req.vendor_id, 5, 0, 24),
	FLD(req.service_id, 8, 0, 64),
	FLD(req.local_ca_guid, 16, 0, 64),
	FLD(req.local_qkey, 28, 0, 32),
	FLD(req.local_qpn, 32, 0, 24),
	FLD(req.responder_resources, 35, 0, 8),
	FLD(req.local_eecn, 36, 0, 24),
	FLD(req.initiator_depth, 39, 0, 8),
	FLD(req.remote_eecn, 40, 0, 24),
	FLD(req.remote_cm_response_timeout, 43, 0, 5),
	FLD(req.transport_service_type, 43, 5, 2),
	FLD(req.end_to_end_flow_control, 43, 7, 1),
	FLD(req.starting_psn, 44, 0, 24),
	FLD(req.local_cm_response_timeout, 47, 0, 5),
	FLD(req.retry_count, 47, 5, 3),
	FLD(req.pkey, 48, 0, 16),
	FLD(req.path_mtu, 50, 0, 4),
	FLD(req.rdc_exists, 50, 4, 1),
	FLD(req.rnr_retry_count, 50, 5, 3),
	FLD(req.max_cm_retries, 51, 0, 4),
	FLD(req.srq, 51, 4, 1),
	FLD(req.extended_transport_type, 51, 5, 3),
	PATH(primary, 52),
	PATH(alternate, 96),
	FLD(req.sap_supported, 139, 5, 1),
	ARR(req.private_data, 140),
};

/* IBA table 107, MRA. Reserved: the low 6 bits of byte 8 and 3 of byte 9. */
static const struct cm_field mra_fields[] = {
	FLD(mra.local_comm_id, 0, 0, 32),
	FLD(mra.remote_comm_id, 4, 0, 32),
	FLD(mra.message_mraed, 8, 0, 2),
	FLD(mra.service_timeout, 9, 0, 5),
	ARR(mra.private_data, 10),
};

/* IBA table 108, REJ. Reserved: the low 6 bits of byte 8, bit 7 of byte 9. */
static const struct cm_field rej_fields[] = {
	FLD(rej.local_comm_id, 0, 0, 32),
	FLD(rej.remote_comm_id, 4, 0, 32),
	FLD(rej.message_rejected, 8, 0, 2),
	FLD(rej.ari_length, 9, 0, 7),
	FLD(rej.reason, 10, 0, 16),
	ARR(rej.ari, 12),
	ARR(rej.private_data, 84),
};

/* IBA table 110, REP (vendor ID: IBTA 1.4, in the bytes after the QPN, the
 * EECN and the PSN). Reserved: the low 4 bits of byte 27. */
static const struct cm_field rep_fields[] = {
	FLD(rep.local_comm_id, 0, 0, 32),
	FLD(rep.remote_comm_id, 4, 0, 32),
	FLD(rep.local_qkey, 8, 0, 32),
	FLD(rep.local_qpn, 12, 0, 24),
	PIECE(rep.vendor_id, 15, 0, 8, 16, 24),
	FLD(rep.local_eecn, 16, 0, 24),
	PIECE(rep.vendor_id, 19, 0, 8, 8, 24),
	FLD(rep.starting_psn, 20, 0, 24),
	PIECE(rep.vendor_id, 23, 0, 8, 0, 24),
	FLD(rep.responder_resources, 24, 0, 8),
	FLD(rep.initiator_depth, 25, 0, 8),
	FLD(rep.target_ack_delay, 26, 0, 5),
	FLD(rep.failover_accepted, 26, 5, 2),
	FLD(rep.end_to_end_flow_control, 26, 7, 1),
	FLD(rep.rnr_retry_count, 27, 0, 3),
	FLD(rep.srq, 27, 3, 1),
	FLD(rep.local_ca_guid, 28, 0, 64),
	ARR(rep.private_data, 36),
};

/* IBA table 111, RTU. */
static const struct cm_field rtu_fields[] = {
	FLD(rtu.local_comm_id, 0, 0, 32),
	FLD(rtu.remote_comm_id, 4, 0, 32),
	ARR(rtu.private_data, 8),
};

/* IBA table 112, DREQ. Reserved: byte 11. */
static const struct cm_field dreq_fields[] = {
	FLD(dreq.local_comm_id, 0, 0, 32),
	FLD(dreq.remote_comm_id, 4, 0, 32),
	FLD(dreq.remote_qpn_eecn, 8, 0, 24),
	ARR(dreq.private_data, 12),
};

/* IBA table 113, DREP. */
static const struct cm_field drep_fields[] = {
	FLD(drep.local_comm_id, 0, 0, 32),
	FLD(drep.remote_comm_id, 4, 0, 32),
	ARR(drep.private_data, 8),
};

/* IBA table 119, SIDR_REQ. Reserved: bytes 6, 7. */
static const struct cm_field sidr_req_fields[] = {
	FLD(sidr_req.request_id, 0, 0, 32),
	FLD(sidr_req.pkey, 4, 0, 16),
	FLD(sidr_req.service_id, 8, 0, 64),
	ARR(sidr_req.private_data, 16),
};

/* IBA table 120, SIDR_REP (vendor ID: IBTA 1.4, bytes 6-7 and 11). */
static const struct cm_field sidr_rep_fields[] = {
	FLD(sidr_rep.request_id, 0, 0, 32),
	FLD(sidr_rep.status, 4, 0, 8),
	FLD(sidr_rep.info_length, 5, 0, 8),
	PIECE(sidr_rep.vendor_id, 6, 0, 16, 8, 24),
	FLD(sidr_rep.qpn, 8, 0, 24),
	PIECE(sidr_rep.vendor_id, 11, 0, 8, 0, 24),
	FLD(sidr_rep.service_id, 12, 0, 64),
	FLD(sidr_rep.qkey, 20, 0, 32),
	ARR(sidr_rep.info, 24),
	ARR(sidr_rep.private_data, 96),
};

#define NFIELDS(t) (uint8_t)(sizeof(t) / sizeof((t)[0]))
#define PRIV(f) offsetof(struct dpv_cm_mad, f), sizeof(((struct dpv_cm_mad *)0)->f)

struct cm_msg {
	uint16_t attr;
	const char *name;
	const struct cm_field *fields;
	uint8_t nfields;
	uint16_t priv_off;    /* private data in struct dpv_cm_mad */
	uint8_t priv_len;
};

static const struct cm_msg cm_msgs[] = {
	{ DPV_CM_ATTR_REQ, "REQ", req_fields, NFIELDS(req_fields), PRIV(req.private_data) },
	{ DPV_CM_ATTR_MRA, "MRA", mra_fields, NFIELDS(mra_fields), PRIV(mra.private_data) },
	{ DPV_CM_ATTR_REJ, "REJ", rej_fields, NFIELDS(rej_fields), PRIV(rej.private_data) },
	{ DPV_CM_ATTR_REP, "REP", rep_fields, NFIELDS(rep_fields), PRIV(rep.private_data) },
	{ DPV_CM_ATTR_RTU, "RTU", rtu_fields, NFIELDS(rtu_fields), PRIV(rtu.private_data) },
	{ DPV_CM_ATTR_DREQ, "DREQ", dreq_fields, NFIELDS(dreq_fields), PRIV(dreq.private_data) },
	{ DPV_CM_ATTR_DREP, "DREP", drep_fields, NFIELDS(drep_fields), PRIV(drep.private_data) },
	{ DPV_CM_ATTR_SIDR_REQ, "SIDR_REQ", sidr_req_fields, NFIELDS(sidr_req_fields),
	  PRIV(sidr_req.private_data) },
	{ DPV_CM_ATTR_SIDR_REP, "SIDR_REP", sidr_rep_fields, NFIELDS(sidr_rep_fields),
	  PRIV(sidr_rep.private_data) },
};
#define N_MSGS (sizeof(cm_msgs) / sizeof(cm_msgs[0]))

static const struct cm_msg *cm_msg_find(uint16_t attr)
{
	for (size_t i = 0; i < N_MSGS; i++)
		if (cm_msgs[i].attr == attr)
			return &cm_msgs[i];
	return NULL;
}

/* CM attributes the codec knows but does not handle. */
static bool cm_attr_unsupported(uint16_t attr)
{
	return attr == DPV_CM_ATTR_CLASS_PORT_INFO || attr == DPV_CM_ATTR_LAP ||
	       attr == DPV_CM_ATTR_APR;
}

/* ---- bits ---- */

static uint64_t width_mask(unsigned int width)
{
	return width >= 64 ? UINT64_MAX : (UINT64_C(1) << width) - 1;
}

/* Bytes a field touches: bits [bit, bit + width) from the MSB of mad[off]. */
static unsigned int field_bytes(const struct cm_field *f)
{
	return (f->bit + f->width + 7u) / 8u;
}

static uint64_t bits_get(const uint8_t *mad, const struct cm_field *f)
{
	unsigned int n = field_bytes(f);
	uint64_t v = 0;

	for (unsigned int i = 0; i < n; i++)
		v = v << 8 | mad[f->off + i];
	return (v >> (n * 8u - f->bit - f->width)) & width_mask(f->width);
}

static void bits_put(uint8_t *mad, const struct cm_field *f, uint64_t val)
{
	unsigned int n = field_bytes(f);
	unsigned int shift = n * 8u - f->bit - f->width;
	uint64_t mask = width_mask(f->width) << shift;
	uint64_t v = 0;

	for (unsigned int i = 0; i < n; i++)
		v = v << 8 | mad[f->off + i];
	v = (v & ~mask) | ((val << shift) & mask);
	for (unsigned int i = n; i-- > 0; v >>= 8)
		mad[f->off + i] = (uint8_t)v;
}

/* ---- struct members of 1, 2, 4 or 8 bytes ---- */

static uint64_t member_get(const struct dpv_cm_mad *m, const struct cm_field *f)
{
	const uint8_t *p = (const uint8_t *)m + f->soff;
	uint8_t v8;
	uint16_t v16;
	uint32_t v32;
	uint64_t v64;

	switch (f->ssize) {
	case 1:
		memcpy(&v8, p, 1);
		return v8;
	case 2:
		memcpy(&v16, p, 2);
		return v16;
	case 4:
		memcpy(&v32, p, 4);
		return v32;
	default:
		memcpy(&v64, p, 8);
		return v64;
	}
}

static void member_or(struct dpv_cm_mad *m, const struct cm_field *f, uint64_t val)
{
	uint8_t *p = (uint8_t *)m + f->soff;
	uint64_t v = member_get(m, f) | val;
	uint8_t v8 = (uint8_t)v;
	uint16_t v16 = (uint16_t)v;
	uint32_t v32 = (uint32_t)v;

	switch (f->ssize) {
	case 1:
		memcpy(p, &v8, 1);
		break;
	case 2:
		memcpy(p, &v16, 2);
		break;
	case 4:
		memcpy(p, &v32, 4);
		break;
	default:
		memcpy(p, &v, 8);
		break;
	}
}

/* ---- the common MAD header ---- */

static void st_be(uint8_t *p, uint64_t v, unsigned int n)
{
	for (unsigned int i = n; i-- > 0; v >>= 8)
		p[i] = (uint8_t)v;
}

static uint64_t ld_be(const uint8_t *p, unsigned int n)
{
	uint64_t v = 0;

	for (unsigned int i = 0; i < n; i++)
		v = v << 8 | p[i];
	return v;
}

int dpv_mad_hdr_encode(const struct dpv_mad_hdr *h, uint8_t *mad)
{
	if (!h || !mad)
		return -EINVAL;
	mad[0] = h->base_version;
	mad[1] = h->mgmt_class;
	mad[2] = h->class_version;
	mad[3] = h->method;
	st_be(mad + 4, h->status, 2);
	st_be(mad + 6, h->class_specific, 2);
	st_be(mad + 8, h->tid, 8);
	st_be(mad + 16, h->attr_id, 2);
	st_be(mad + 18, 0, 2); /* reserved */
	st_be(mad + 20, h->attr_mod, 4);
	return 0;
}

int dpv_mad_hdr_decode(const uint8_t *mad, size_t len, struct dpv_mad_hdr *h)
{
	if (!mad || !h)
		return -EINVAL;
	if (len < DPV_MAD_HDR_LEN)
		return -EBADMSG;
	h->base_version = mad[0];
	h->mgmt_class = mad[1];
	h->class_version = mad[2];
	h->method = mad[3];
	h->status = (uint16_t)ld_be(mad + 4, 2);
	h->class_specific = (uint16_t)ld_be(mad + 6, 2);
	h->tid = ld_be(mad + 8, 8);
	h->attr_id = (uint16_t)ld_be(mad + 16, 2);
	h->attr_mod = (uint32_t)ld_be(mad + 20, 4);
	return 0;
}

/* A CM Send(): the only kind of MAD the CM class exchanges. */
static bool cm_hdr_ok(const struct dpv_mad_hdr *h)
{
	return h->base_version == DPV_MAD_BASE_VERSION && h->mgmt_class == DPV_MGMT_CLASS_CM &&
	       h->class_version == DPV_CM_CLASS_VERSION && h->method == DPV_MAD_METHOD_SEND;
}

/* Length fields inside a message: the bytes they count must exist. */
static bool cm_lengths_ok(const struct dpv_cm_mad *m)
{
	switch (m->hdr.attr_id) {
	case DPV_CM_ATTR_REJ:
		return m->rej.ari_length <= DPV_CM_REJ_ARI_LEN;
	case DPV_CM_ATTR_SIDR_REP:
		return m->sidr_rep.info_length <= DPV_CM_SIDR_REP_INFO_LEN;
	default:
		return true;
	}
}

void dpv_cm_mad_init(struct dpv_cm_mad *m, uint16_t attr_id, uint64_t tid)
{
	if (!m)
		return;
	memset(m, 0, sizeof(*m));
	m->hdr.base_version = DPV_MAD_BASE_VERSION;
	m->hdr.mgmt_class = DPV_MGMT_CLASS_CM;
	m->hdr.class_version = DPV_CM_CLASS_VERSION;
	m->hdr.method = DPV_MAD_METHOD_SEND;
	m->hdr.attr_id = attr_id;
	m->hdr.tid = tid;
}

int dpv_cm_mad_encode(const struct dpv_cm_mad *m, uint8_t out[DPV_MAD_SIZE])
{
	const struct cm_msg *msg;

	if (!m || !out || !cm_hdr_ok(&m->hdr))
		return -EINVAL;
	msg = cm_msg_find(m->hdr.attr_id);
	if (!msg)
		return cm_attr_unsupported(m->hdr.attr_id) ? -EOPNOTSUPP : -EINVAL;
	if (!cm_lengths_ok(m))
		return -EINVAL;
	memset(out, 0, DPV_MAD_SIZE);
	dpv_mad_hdr_encode(&m->hdr, out);
	for (uint8_t i = 0; i < msg->nfields; i++) {
		const struct cm_field *f = &msg->fields[i];
		uint64_t v;

		if (!f->width) {
			memcpy(out + f->off, (const uint8_t *)m + f->soff, f->ssize);
			continue;
		}
		v = member_get(m, f);
		if (v > width_mask(f->vbits))
			return -EINVAL;
		bits_put(out, f, v >> f->lsb);
	}
	return 0;
}

int dpv_cm_mad_decode(const uint8_t *mad, size_t len, struct dpv_cm_mad *m)
{
	const struct cm_msg *msg;

	if (!mad || !m)
		return -EINVAL;
	memset(m, 0, sizeof(*m));
	if (len != DPV_MAD_SIZE)
		return -EBADMSG;
	dpv_mad_hdr_decode(mad, len, &m->hdr);
	if (!cm_hdr_ok(&m->hdr))
		goto bad;
	msg = cm_msg_find(m->hdr.attr_id);
	if (!msg) {
		if (cm_attr_unsupported(m->hdr.attr_id))
			return -EOPNOTSUPP;
		goto bad;
	}
	for (uint8_t i = 0; i < msg->nfields; i++) {
		const struct cm_field *f = &msg->fields[i];

		if (!f->width)
			memcpy((uint8_t *)m + f->soff, mad + f->off, f->ssize);
		else
			member_or(m, f, bits_get(mad, f) << f->lsb);
	}
	if (cm_lengths_ok(m))
		return 0;
bad:
	memset(m, 0, sizeof(*m));
	return -EBADMSG;
}

uint8_t *dpv_cm_mad_private_data(struct dpv_cm_mad *m, size_t *len)
{
	const struct cm_msg *msg = m ? cm_msg_find(m->hdr.attr_id) : NULL;

	if (len)
		*len = msg ? msg->priv_len : 0;
	return msg ? (uint8_t *)m + msg->priv_off : NULL;
}

const char *dpv_cm_attr_name(uint16_t attr_id)
{
	const struct cm_msg *msg = cm_msg_find(attr_id);

	if (msg)
		return msg->name;
	switch (attr_id) {
	case DPV_CM_ATTR_CLASS_PORT_INFO:
		return "ClassPortInfo";
	case DPV_CM_ATTR_LAP:
		return "LAP";
	case DPV_CM_ATTR_APR:
		return "APR";
	default:
		return "unknown";
	}
}
