/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gen_cm_pcap OUT.pcap
 * Writes CM MADs encoded by dpv_cm_mad_encode(), each the payload of a UD
 * SEND ONLY to QP 1 (DETH Q_Key 0x80010000, source QP 1, P_Key 0xffff) in
 * a RoCEv2 frame built with lib/wire (dpvt_frame_build), as Linux sends
 * them (test/data/wire/rdma_cm_send.pcap). Every field holds a distinct,
 * nonzero value where its width allows. Prints a manifest on stdout, one
 * line per frame, read by test_cm_tshark.py:
 *   FRAME ATTR IPVER name=value ...   (values in hex; arrays as hex bytes)
 * names are the struct members (dpv_cm_mad.h; the REQ paths as
 * pri_<member> / alt_<member>, the header as tid, attr_mod), plus the
 * rdma_cm header of a REQ as cma_<member>.
 */
#include <string.h>

#include "dpv_cm_ip.h"
#include "dpv_cm_mad.h"
#include "dpvt_wire.h"

static uint32_t frame_no;

static void pr(const char *name, uint64_t v)
{
	printf(" %s=0x%llx", name, (unsigned long long)v);
}

static void pr_bytes(const char *name, const uint8_t *p, size_t n)
{
	printf(" %s=", name);
	for (size_t i = 0; i < n; i++)
		printf("%02x", p[i]);
}

static void fill(uint8_t *p, size_t n, uint8_t seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(seed + 7 * i);
}

static int emit(FILE *f, const struct dpv_cm_mad *m, uint8_t ip_ver)
{
	static const uint8_t s4[16] = { [10] = 0xff, [11] = 0xff, 10, 77, 0, 3 };
	static const uint8_t d4[16] = { [10] = 0xff, [11] = 0xff, 10, 77, 0, 2 };
	static const uint8_t s6[16] = { 0xfe, 0x80, [8] = 0x50, 0x54, 0, 0xff, 0xfe, 0x77, 0, 3 };
	static const uint8_t d6[16] = { 0xfe, 0x80, [8] = 0x50, 0x54, 0, 0xff, 0xfe, 0x77, 0, 2 };
	uint8_t mad[DPV_MAD_SIZE], buf[512];
	struct dpv_pkt_build b;
	uint32_t len;

	if (dpv_cm_mad_encode(m, mad))
		return -1;
	memset(&b, 0, sizeof(b));
	memcpy(b.dst_mac, "\x52\x54\x00\x77\x00\x02", 6);
	memcpy(b.src_mac, "\x52\x54\x00\x77\x00\x03", 6);
	b.ip_ver = ip_ver;
	memcpy(b.sgid, ip_ver == 4 ? s4 : s6, 16);
	memcpy(b.dgid, ip_ver == 4 ? d4 : d6, 16);
	b.hop_limit = 64;
	b.ip_id = (uint16_t)(0x100 + frame_no);
	b.udp_sport = 0xd872;
	b.opcode = DPV_TR_UD | DPV_OPC_SEND_ONLY;
	b.ackreq = true;
	b.pkey = 0xffff;
	b.dqpn = DPV_GSI_QPN;
	b.psn = frame_no;
	b.deth_qkey = DPV_GSI_QKEY;
	b.deth_sqpn = DPV_GSI_QPN;
	len = dpvt_frame_build(buf, sizeof(buf), &b, mad, DPV_MAD_SIZE);
	if (!len)
		return -1;
	frame_no++;
	if (dpvt_pcap_write_pkt(f, 1800000000u + frame_no, 0, buf, len))
		return -1;
	printf("%u 0x%04x %u", frame_no, m->hdr.attr_id, ip_ver);
	pr("tid", m->hdr.tid);
	pr("attr_mod", m->hdr.attr_mod);
	pr_bytes("mad", mad, DPV_MAD_SIZE);
	return 0;
}

static void set_path(struct dpv_cm_path *p, uint8_t k)
{
	p->local_lid = (uint16_t)(0x1100 + k);
	p->remote_lid = (uint16_t)(0x2200 + k);
	fill(p->local_gid, 16, (uint8_t)(0x30 + k));
	fill(p->remote_gid, 16, (uint8_t)(0x60 + k));
	p->flow_label = 0xabcde - k;
	p->packet_rate = (uint8_t)(0x15 + k);
	p->traffic_class = (uint8_t)(0x48 + k);
	p->hop_limit = (uint8_t)(0x3f + k);
	p->sl = (uint8_t)(0x9 + k);
	p->subnet_local = 1;
	p->local_ack_timeout = (uint8_t)(0x11 + k);
}

static void pr_path(const char *pre, const struct dpv_cm_path *p)
{
	char n[64];

#define PP(memb, v) (snprintf(n, sizeof(n), "%s_%s", pre, memb), pr(n, v))
	PP("local_lid", p->local_lid);
	PP("remote_lid", p->remote_lid);
	snprintf(n, sizeof(n), "%s_local_gid", pre);
	pr_bytes(n, p->local_gid, 16);
	snprintf(n, sizeof(n), "%s_remote_gid", pre);
	pr_bytes(n, p->remote_gid, 16);
	PP("flow_label", p->flow_label);
	PP("packet_rate", p->packet_rate);
	PP("traffic_class", p->traffic_class);
	PP("hop_limit", p->hop_limit);
	PP("sl", p->sl);
	PP("subnet_local", p->subnet_local);
	PP("local_ack_timeout", p->local_ack_timeout);
#undef PP
}

/* A REQ with an rdma_cm header (IPv4 or IPv6) and consumer private data. */
static int emit_req(FILE *f, uint8_t ip_ver)
{
	struct dpv_cm_mad m;
	struct dpv_cm_req *r = &m.req;
	struct dpv_cma_hdr h;
	static const uint8_t v4s[4] = { 10, 77, 0, 3 }, v4d[4] = { 10, 77, 0, 2 };

	dpv_cm_mad_init(&m, DPV_CM_ATTR_REQ, 0x0000000212345678ull + ip_ver);
	r->local_comm_id = 0x11223344;
	r->vendor_id = 0;
	r->service_id = dpv_cma_service_id(DPV_RDMA_PS_TCP, 7471);
	r->local_ca_guid = 0x505400fffe770003ull;
	r->local_qkey = 0x0badcafe;
	r->local_qpn = 0x00abcd;
	r->responder_resources = 0x10;
	r->local_eecn = 0x123456;
	r->initiator_depth = 0x08;
	r->remote_eecn = 0x654321;
	r->remote_cm_response_timeout = 0x13;
	r->transport_service_type = DPV_CM_TST_UC;
	r->end_to_end_flow_control = 1;
	r->starting_psn = 0xfedcba;
	r->local_cm_response_timeout = 0x15;
	r->retry_count = 6;
	r->pkey = 0x8001;
	r->path_mtu = 5;
	r->rdc_exists = 1;
	r->rnr_retry_count = 5;
	r->max_cm_retries = 0xe;
	r->srq = 1;
	r->extended_transport_type = 0;
	set_path(&r->primary, 0);
	set_path(&r->alternate, 1);
	if (ip_ver == 4) { /* ::ffff:10.77.0.3 -> ::ffff:10.77.0.2, as rdma_cm over IPv4 */
		memset(r->primary.local_gid, 0, 16);
		memset(r->primary.remote_gid, 0, 16);
		memcpy(r->primary.local_gid + 10, "\xff\xff\x0a\x4d\x00\x03", 6);
		memcpy(r->primary.remote_gid + 10, "\xff\xff\x0a\x4d\x00\x02", 6);
	}
	if (ip_ver == 4) {
		dpv_cma_hdr_ipv4(&h, v4s, v4d, 0xcbb5);
	} else {
		memset(&h, 0, sizeof(h));
		h.ip_version = 6;
		h.src_port = 0x9abc;
		fill(h.src_addr, 16, 0xa0);
		fill(h.dst_addr, 16, 0xc0);
	}
	if (dpv_cma_hdr_encode(&h, r->private_data, sizeof(r->private_data)) != DPV_CMA_HDR_LEN)
		return -1;
	fill(r->private_data + DPV_CMA_HDR_LEN, DPV_CMA_REQ_PRIVATE_MAX, 0x01);
	if (emit(f, &m, ip_ver))
		return -1;
	pr("local_comm_id", r->local_comm_id);
	pr("service_id", r->service_id);
	pr("local_ca_guid", r->local_ca_guid);
	pr("local_qkey", r->local_qkey);
	pr("local_qpn", r->local_qpn);
	pr("responder_resources", r->responder_resources);
	pr("local_eecn", r->local_eecn);
	pr("initiator_depth", r->initiator_depth);
	pr("remote_eecn", r->remote_eecn);
	pr("remote_cm_response_timeout", r->remote_cm_response_timeout);
	pr("transport_service_type", r->transport_service_type);
	pr("end_to_end_flow_control", r->end_to_end_flow_control);
	pr("starting_psn", r->starting_psn);
	pr("local_cm_response_timeout", r->local_cm_response_timeout);
	pr("retry_count", r->retry_count);
	pr("pkey", r->pkey);
	pr("path_mtu", r->path_mtu);
	pr("rdc_exists", r->rdc_exists);
	pr("rnr_retry_count", r->rnr_retry_count);
	pr("max_cm_retries", r->max_cm_retries);
	pr("srq", r->srq);
	pr("extended_transport_type", r->extended_transport_type);
	pr_path("pri", &r->primary);
	pr_path("alt", &r->alternate);
	pr("cma_ip_version", h.ip_version);
	pr("cma_src_port", h.src_port);
	pr_bytes("cma_src_addr", h.src_addr, 16);
	pr_bytes("cma_dst_addr", h.dst_addr, 16);
	pr_bytes("cma_private", r->private_data + DPV_CMA_HDR_LEN, DPV_CMA_REQ_PRIVATE_MAX);
	printf("\n");
	return 0;
}

static int emit_rep(FILE *f)
{
	struct dpv_cm_mad m;
	struct dpv_cm_rep *r = &m.rep;

	dpv_cm_mad_init(&m, DPV_CM_ATTR_REP, 0x0000000212345678ull);
	r->local_comm_id = 0x55667788;
	r->remote_comm_id = 0x11223344;
	r->local_qkey = 0x01020304;
	r->local_qpn = 0x00beef;
	r->local_eecn = 0x0a0b0c;
	r->starting_psn = 0x123abc;
	r->responder_resources = 0x04;
	r->initiator_depth = 0x02;
	r->target_ack_delay = 0x1d;
	r->failover_accepted = 2;
	r->end_to_end_flow_control = 1;
	r->rnr_retry_count = 3;
	r->srq = 1;
	r->local_ca_guid = 0x505400fffe770002ull;
	fill(r->private_data, sizeof(r->private_data), 0x33);
	if (emit(f, &m, 4))
		return -1;
	pr("local_comm_id", r->local_comm_id);
	pr("remote_comm_id", r->remote_comm_id);
	pr("local_qkey", r->local_qkey);
	pr("local_qpn", r->local_qpn);
	pr("local_eecn", r->local_eecn);
	pr("starting_psn", r->starting_psn);
	pr("responder_resources", r->responder_resources);
	pr("initiator_depth", r->initiator_depth);
	pr("target_ack_delay", r->target_ack_delay);
	pr("failover_accepted", r->failover_accepted);
	pr("end_to_end_flow_control", r->end_to_end_flow_control);
	pr("rnr_retry_count", r->rnr_retry_count);
	pr("srq", r->srq);
	pr("local_ca_guid", r->local_ca_guid);
	pr_bytes("private_data", r->private_data, sizeof(r->private_data));
	printf("\n");
	return 0;
}

/* RTU, DREQ, DREP: the two comm IDs (+ the QPN of a DREQ) and private data. */
static int emit_short(FILE *f, uint16_t attr)
{
	struct dpv_cm_mad m;
	uint8_t *priv;
	size_t plen;

	dpv_cm_mad_init(&m, attr, 0x0000000300000000ull + attr);
	m.rtu.local_comm_id = 0x11223344; /* same place in RTU, DREQ, DREP */
	m.rtu.remote_comm_id = 0x55667788;
	if (attr == DPV_CM_ATTR_DREQ)
		m.dreq.remote_qpn_eecn = 0x00beef;
	priv = dpv_cm_mad_private_data(&m, &plen);
	fill(priv, plen, (uint8_t)attr);
	if (emit(f, &m, 4))
		return -1;
	pr("local_comm_id", m.rtu.local_comm_id);
	pr("remote_comm_id", m.rtu.remote_comm_id);
	if (attr == DPV_CM_ATTR_DREQ)
		pr("remote_qpn_eecn", m.dreq.remote_qpn_eecn);
	pr_bytes("private_data", priv, plen);
	printf("\n");
	return 0;
}

static int emit_rej(FILE *f, uint8_t ari_len)
{
	struct dpv_cm_mad m;
	struct dpv_cm_rej *r = &m.rej;

	dpv_cm_mad_init(&m, DPV_CM_ATTR_REJ, 0x0000000212345678ull);
	r->local_comm_id = 0x55667788;
	r->remote_comm_id = ari_len ? 0x11223344 : 0;
	r->message_rejected = ari_len ? DPV_CM_MSG_REP : DPV_CM_MSG_REQ;
	r->ari_length = ari_len;
	r->reason = ari_len ? DPV_CM_REJ_INVALID_GID : DPV_CM_REJ_CONSUMER_DEFINED;
	fill(r->ari, ari_len, 0x90);
	fill(r->private_data, sizeof(r->private_data), 0x44);
	if (emit(f, &m, 4))
		return -1;
	pr("local_comm_id", r->local_comm_id);
	pr("remote_comm_id", r->remote_comm_id);
	pr("message_rejected", r->message_rejected);
	pr("ari_length", r->ari_length);
	pr("reason", r->reason);
	pr_bytes("ari", r->ari, sizeof(r->ari));
	pr_bytes("private_data", r->private_data, sizeof(r->private_data));
	printf("\n");
	return 0;
}

/* MRA, SIDR_REQ, SIDR_REP: Wireshark 4.0 names them but decodes no field. */
static int emit_other(FILE *f, uint16_t attr)
{
	struct dpv_cm_mad m;
	uint8_t *priv;
	size_t plen;

	dpv_cm_mad_init(&m, attr, 0x0000000400000000ull + attr);
	if (attr == DPV_CM_ATTR_MRA) {
		m.mra.local_comm_id = 0x55667788;
		m.mra.remote_comm_id = 0x11223344;
		m.mra.message_mraed = DPV_CM_MSG_REQ;
		m.mra.service_timeout = 0x17;
	} else if (attr == DPV_CM_ATTR_SIDR_REQ) {
		m.sidr_req.request_id = 0x0a0b0c0d;
		m.sidr_req.pkey = 0xffff;
		m.sidr_req.service_id = dpv_cma_service_id(DPV_RDMA_PS_UDP, 7471);
	} else {
		m.sidr_rep.request_id = 0x0a0b0c0d;
		m.sidr_rep.status = DPV_CM_SIDR_SUCCESS;
		m.sidr_rep.qpn = 0x000123;
		m.sidr_rep.service_id = dpv_cma_service_id(DPV_RDMA_PS_UDP, 7471);
		m.sidr_rep.qkey = 0x01234567;
	}
	priv = dpv_cm_mad_private_data(&m, &plen);
	fill(priv, plen, (uint8_t)attr);
	if (emit(f, &m, 4))
		return -1;
	pr_bytes("private_data", priv, plen);
	printf("\n");
	return 0;
}

int main(int argc, char **argv)
{
	FILE *f;
	int err = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: gen_cm_pcap OUT.pcap\n");
		return 2;
	}
	f = fopen(argv[1], "wb");
	if (!f || dpvt_pcap_write_hdr(f)) {
		perror(argv[1]);
		return 1;
	}
	err |= emit_req(f, 4);
	err |= emit_req(f, 6);
	err |= emit_rep(f);
	err |= emit_short(f, DPV_CM_ATTR_RTU);
	err |= emit_rej(f, 0);
	err |= emit_rej(f, 16);
	err |= emit_short(f, DPV_CM_ATTR_DREQ);
	err |= emit_short(f, DPV_CM_ATTR_DREP);
	err |= emit_other(f, DPV_CM_ATTR_MRA);
	err |= emit_other(f, DPV_CM_ATTR_SIDR_REQ);
	err |= emit_other(f, DPV_CM_ATTR_SIDR_REP);
	if (fclose(f) || err) {
		fprintf(stderr, "gen_cm_pcap: failed to build a frame\n");
		return 1;
	}
	return 0;
}
