/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The CM MADs of test/data/wire/rdma_cm_send.pcap (two Linux 6.1 rxe hosts,
 * perftest ib_send_lat -R: rdma_cm connects twice, then disconnects), each
 * decoded by dpv_cm_mad_decode() and compared field by field with the values
 * below, then re-encoded by dpv_cm_mad_encode() and compared byte for byte
 * with the 256 captured bytes.
 *
 * Where the expected values come from (written down while making this test,
 * not computed by the code under test):
 *  - rdma_cm_send.txt: the hosts (server peer1 10.77.0.2, GID
 *    ::ffff:10.77.0.2; client peer2 10.77.0.3), perftest's "QPN 0x001e"
 *    (the second connection; the first one's QP is 0x1d, see the packet
 *    list: RC SENDs to QP 0x1d, later to 0x1e), the packet list (frames 1,
 *    2, 3, 24, 25, 26, 71-76 are "CM: ..."), and its tshark -V decode of
 *    frame 1 (the first REQ);
 *  - `tshark -r test/data/wire/rdma_cm_send.pcap -V -d udp.port==4791,infiniband`
 *    (TShark 4.0.17) for the other eleven MADs: communication IDs, TIDs,
 *    QPNs, starting PSNs, CA GUIDs, timeouts, retry counts, IP CM header.
 *  - perftest prints PSN 0xfbf27a (server) and 0xaad0d8 (client), but with
 *    -R those are not used: rdma_cm chooses its own starting PSNs, and the
 *    data frames carry the PSNs of the REQ/REP (checked below, frames 4, 6,
 *    47, 49).
 *  - Flow label: tshark 4.0 shows "Primary Flow Label: 0x008f3", which is a
 *    Wireshark bug (it reads 3 bytes, see test_cm_tshark.py). IBA puts the
 *    20-bit label in the top of the 32-bit word at REQ byte 88: 0x8f33e.
 *    Independent proof: Linux derives the data QP's UDP source port from it
 *    (rdma_flow_label_to_udp_sport), and 0x8f33e gives 62237, the source
 *    port of frame 4 (QP 0x1d); 0xb1541 gives 54637, frame 47 (QP 0x1e).
 *
 * Note for the connection manager (what Linux does, seen here): a reply
 * (REP, RTU, DREP) repeats the TID of the message it answers; a request
 * (REQ, DREQ) has the sender's agent number in the upper 32 bits (2 on both
 * hosts) and its local communication ID, byte-swapped, in the lower 32
 * (ib_cm's cm_form_tid on a little-endian host). The crossed DREQs are
 * those of the first connection (QP 0x1d, frames 73 and 74).
 */
#include "test_cm.h"

#define TID_C1 0x000000024524e467ull /* client, 1st connection (local ID 0x67e42445) */
#define TID_C2 0x000000024524e466ull /* client, 2nd connection (local ID 0x66e42445) */
#define TID_S1 0x000000028169e924ull /* server's DREQ, 1st connection (0x24e96981) */

struct golden {
	int frame;
	uint16_t attr;
	uint64_t tid;
	int from_client;        /* 10.77.0.3 -> 10.77.0.2 */
	uint32_t local_id, remote_id;
	uint32_t qpn;           /* REQ/REP local QPN, DREQ remote QPN */
	uint32_t psn;           /* REQ/REP starting PSN */
	uint32_t flow_label;    /* REQ primary path */
	uint16_t cma_port;      /* REQ: rdma_cm source port (IP CM header) */
	int psn_frame;          /* the first data frame that starts at psn */
	int sport_frame;        /* REQ: the data frame whose UDP source port the flow label gives */
};

static const struct golden golden[] = {
	{ 1, DPV_CM_ATTR_REQ, TID_C1, 1, 0x67e42445, 0, 0x1d, 0x07c411, 0x8f33e, 0xcbb5, 6, 4 },
	{ 2, DPV_CM_ATTR_REP, TID_C1, 0, 0x24e96981, 0x67e42445, 0x1d, 0xf2ed4b, 0, 0, 4, 0 },
	{ 3, DPV_CM_ATTR_RTU, TID_C1, 1, 0x67e42445, 0x24e96981, 0, 0, 0, 0, 0, 0 },
	{ 24, DPV_CM_ATTR_REQ, TID_C2, 1, 0x66e42445, 0, 0x1e, 0x0602dd, 0xb1541, 0xdd52, 49, 47 },
	{ 25, DPV_CM_ATTR_REP, TID_C2, 0, 0x26e96981, 0x66e42445, 0x1e, 0x39f288, 0, 0, 47, 0 },
	{ 26, DPV_CM_ATTR_RTU, TID_C2, 1, 0x66e42445, 0x26e96981, 0, 0, 0, 0, 0, 0 },
	{ 71, DPV_CM_ATTR_DREQ, TID_C2, 1, 0x66e42445, 0x26e96981, 0x1e, 0, 0, 0, 0, 0 },
	{ 72, DPV_CM_ATTR_DREP, TID_C2, 0, 0x26e96981, 0x66e42445, 0, 0, 0, 0, 0, 0 },
	{ 73, DPV_CM_ATTR_DREQ, TID_S1, 0, 0x24e96981, 0x67e42445, 0x1d, 0, 0, 0, 0, 0 },
	{ 74, DPV_CM_ATTR_DREQ, TID_C1, 1, 0x67e42445, 0x24e96981, 0x1d, 0, 0, 0, 0, 0 },
	{ 75, DPV_CM_ATTR_DREP, TID_C1, 0, 0x24e96981, 0x67e42445, 0, 0, 0, 0, 0, 0 },
	{ 76, DPV_CM_ATTR_DREP, TID_S1, 1, 0x67e42445, 0x24e96981, 0, 0, 0, 0, 0, 0 },
};
#define N_GOLDEN (int)(sizeof(golden) / sizeof(golden[0]))

static const uint8_t ip_server[4] = { 10, 77, 0, 2 }, ip_client[4] = { 10, 77, 0, 3 };
#define CA_GUID_SERVER 0x505400fffe770002ull /* EUI-64 of 52:54:00:77:00:02 */
#define CA_GUID_CLIENT 0x505400fffe770003ull
#define PERFTEST_PORT 18515                  /* 0x4853, perftest's default port */

static bool all_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

static bool gid_is(const uint8_t *gid, const uint8_t ip[4])
{
	static const uint8_t pre[12] = { [10] = 0xff, [11] = 0xff };

	return memcmp(gid, pre, 12) == 0 && memcmp(gid + 12, ip, 4) == 0;
}

/* Linux rdma_flow_label_to_udp_sport(): the RoCEv2 source port of a flow label. */
static uint16_t flow_label_sport(uint32_t fl)
{
	uint32_t lo = fl & 0x3fff, hi = fl & 0xfc000;

	lo ^= hi >> 14;
	return (uint16_t)(lo | 0xc000);
}

/* rdma_cm's REQ values, the same in both REQs (tshark decode of frames 1, 24). */
static void check_req_common(const struct dpv_cm_req *r)
{
	CHECK_EQ(r->vendor_id, 0, "REQ vendor ID (no ECE on rxe)");
	CHECK(r->service_id == 0x0000000001064853ull, "REQ service ID %#llx",
	      (unsigned long long)r->service_id);
	CHECK(r->local_ca_guid == CA_GUID_CLIENT, "REQ CA GUID");
	CHECK_EQ(r->local_qkey, 0, "REQ Q_Key");
	CHECK_EQ(r->responder_resources, 0, "REQ responder resources");
	CHECK_EQ(r->initiator_depth, 0, "REQ initiator depth");
	CHECK_EQ(r->local_eecn, 0, "REQ local EECN");
	CHECK_EQ(r->remote_eecn, 0, "REQ remote EECN");
	CHECK_EQ(r->remote_cm_response_timeout, 20, "REQ remote CM response timeout");
	CHECK_EQ(r->transport_service_type, DPV_CM_TST_RC, "REQ transport service type");
	CHECK_EQ(r->end_to_end_flow_control, 0, "REQ end-to-end flow control");
	CHECK_EQ(r->local_cm_response_timeout, 20, "REQ local CM response timeout");
	CHECK_EQ(r->retry_count, 7, "REQ retry count");
	CHECK_EQ(r->pkey, 0xffff, "REQ P_Key");
	CHECK_EQ(r->path_mtu, 3, "REQ path MTU (1024)");
	CHECK_EQ(r->rdc_exists, 0, "REQ RDC exists");
	CHECK_EQ(r->rnr_retry_count, 7, "REQ RNR retry count");
	CHECK_EQ(r->max_cm_retries, 15, "REQ max CM retries");
	CHECK_EQ(r->srq, 0, "REQ SRQ");
	CHECK_EQ(r->extended_transport_type, 0, "REQ extended transport");
	CHECK_EQ(r->primary.local_lid, 0xffff, "REQ primary local LID");
	CHECK_EQ(r->primary.remote_lid, 0xffff, "REQ primary remote LID");
	CHECK(gid_is(r->primary.local_gid, ip_client), "REQ primary local GID ::ffff:10.77.0.3");
	CHECK(gid_is(r->primary.remote_gid, ip_server), "REQ primary remote GID ::ffff:10.77.0.2");
	CHECK_EQ(r->primary.packet_rate, 0, "REQ primary packet rate");
	CHECK_EQ(r->primary.traffic_class, 0, "REQ primary traffic class");
	CHECK_EQ(r->primary.hop_limit, 64, "REQ primary hop limit");
	CHECK_EQ(r->primary.sl, 0, "REQ primary SL");
	CHECK_EQ(r->primary.subnet_local, 0, "REQ primary subnet local");
	CHECK_EQ(r->primary.local_ack_timeout, 19, "REQ primary local ACK timeout");
	CHECK(all_zero((const uint8_t *)&r->alternate, sizeof(r->alternate)), "REQ: no alternate path");
	CHECK_EQ(r->sap_supported, 0, "REQ SAP supported");
}

/* The rdma_cm IP header at the start of the REQ private data, and the rest. */
static void check_req_cma(const struct dpv_cm_req *r, const struct golden *g)
{
	struct dpv_cma_hdr h, h2;
	uint8_t buf[DPV_CMA_HDR_LEN];
	uint16_t ps = 0, port = 0;

	CHECK_EQ(dpv_cma_service_id_parse(r->service_id, &ps, &port), 0, "REQ service ID parses");
	CHECK_EQ(ps, DPV_RDMA_PS_TCP, "service ID port space");
	CHECK_EQ(port, PERFTEST_PORT, "service ID port");
	CHECK_EQ(dpv_cma_hdr_decode(r->private_data, sizeof(r->private_data), &h), DPV_CMA_HDR_LEN,
		 "IP CM header decodes");
	CHECK_EQ(h.cma_version, 0, "IP CM version");
	CHECK_EQ(h.ip_version, 4, "IP CM IP version");
	CHECK_EQ(h.src_port, g->cma_port, "IP CM source port");
	CHECK(all_zero(h.src_addr, 12) && memcmp(h.src_addr + 12, ip_client, 4) == 0,
	      "IP CM source 10.77.0.3");
	CHECK(all_zero(h.dst_addr, 12) && memcmp(h.dst_addr + 12, ip_server, 4) == 0,
	      "IP CM destination 10.77.0.2");
	CHECK(all_zero(r->private_data + DPV_CMA_HDR_LEN, DPV_CMA_REQ_PRIVATE_MAX),
	      "REQ consumer private data empty");
	dpv_cma_hdr_ipv4(&h2, ip_client, ip_server, g->cma_port);
	CHECK_EQ(dpv_cma_hdr_encode(&h2, buf, sizeof(buf)), DPV_CMA_HDR_LEN, "IP CM header encodes");
	CHECK(memcmp(buf, r->private_data, DPV_CMA_HDR_LEN) == 0, "IP CM header re-encoded byte for byte");
}

static void check_rep(const struct dpv_cm_rep *r)
{
	CHECK_EQ(r->local_qkey, 0, "REP Q_Key");
	CHECK_EQ(r->local_eecn, 0, "REP EECN");
	CHECK_EQ(r->vendor_id, 0, "REP vendor ID");
	CHECK_EQ(r->responder_resources, 0, "REP responder resources");
	CHECK_EQ(r->initiator_depth, 0, "REP initiator depth");
	CHECK_EQ(r->target_ack_delay, 15, "REP target ACK delay");
	CHECK_EQ(r->failover_accepted, 0, "REP failover accepted");
	CHECK_EQ(r->end_to_end_flow_control, 0, "REP end-to-end flow control");
	CHECK_EQ(r->rnr_retry_count, 7, "REP RNR retry count");
	CHECK_EQ(r->srq, 0, "REP SRQ");
	CHECK(r->local_ca_guid == CA_GUID_SERVER, "REP CA GUID");
}

/* The message fields of one golden MAD. */
static void check_msg(struct dpv_cm_mad *m, const struct golden *g, struct dpvt_pkt *pk, int npk)
{
	struct dpv_pkt_info pi;
	size_t plen;
	uint8_t *priv = dpv_cm_mad_private_data(m, &plen);

	/* local and remote comm IDs are the first two words of every message here */
	CHECK_EQ(m->rtu.local_comm_id, g->local_id, "local comm ID");
	if (g->attr != DPV_CM_ATTR_REQ)
		CHECK_EQ(m->rtu.remote_comm_id, g->remote_id, "remote comm ID");
	if (g->attr == DPV_CM_ATTR_REQ) {
		check_req_common(&m->req);
		check_req_cma(&m->req, g);
		CHECK_EQ(m->req.local_qpn, g->qpn, "REQ QPN");
		CHECK_EQ(m->req.starting_psn, g->psn, "REQ starting PSN");
		CHECK_EQ(m->req.primary.flow_label, g->flow_label, "REQ flow label");
		/* the flow label gives the data QP's RoCEv2 UDP source port */
		if (CHECK(dpv_pkt_parse_check(pk[g->sport_frame - 1].data, pk[g->sport_frame - 1].len, &pi) == 0,
			  "data frame %d parses", g->sport_frame))
			CHECK_EQ(flow_label_sport(g->flow_label), pi.udp_sport, "UDP sport from the flow label");
		CHECK_EQ(g->tid & 0xffffffffu, __builtin_bswap32(g->local_id), "request TID (cm_form_tid)");
		priv = NULL; /* checked with the IP CM header */
	} else if (g->attr == DPV_CM_ATTR_REP) {
		check_rep(&m->rep);
		CHECK_EQ(m->rep.local_qpn, g->qpn, "REP QPN");
		CHECK_EQ(m->rep.starting_psn, g->psn, "REP starting PSN");
	} else if (g->attr == DPV_CM_ATTR_DREQ) {
		CHECK_EQ(m->dreq.remote_qpn_eecn, g->qpn, "DREQ remote QPN");
		CHECK_EQ(g->tid & 0xffffffffu, __builtin_bswap32(g->local_id), "request TID (cm_form_tid)");
	}
	if (priv)
		CHECK(all_zero(priv, plen), "%s private data empty", dpv_cm_attr_name(g->attr));
	/* the peer's first data SEND on the QP starts at this PSN */
	if (g->psn_frame && g->psn_frame <= npk &&
	    CHECK(dpv_pkt_parse_check(pk[g->psn_frame - 1].data, pk[g->psn_frame - 1].len, &pi) == 0,
		  "data frame %d parses", g->psn_frame)) {
		CHECK_EQ(pi.opcode, DPV_OPC_SEND_ONLY, "data frame is an RC SEND ONLY");
		CHECK_EQ(pi.dqpn, g->qpn, "data frame QPN");
		CHECK_EQ(pi.psn, g->psn, "data frame PSN = the CM starting PSN");
	}
}

/* One CM frame: BTH/DETH as Linux sends a GMP, the MAD decoded, re-encoded. */
static void check_frame(const struct golden *g, struct dpvt_pkt *pk, int npk)
{
	struct dpv_pkt_info pi;
	struct dpv_cm_mad m;
	uint8_t out[DPV_MAD_SIZE];
	const uint8_t *mad;
	const struct dpvt_pkt *p = &pk[g->frame - 1];

	if (!CHECK(dpv_pkt_parse_check(p->data, p->len, &pi) == 0, "frame %d parses", g->frame))
		return;
	CHECK_EQ(pi.opcode, DPV_TR_UD | DPV_OPC_SEND_ONLY, "CM frame opcode");
	CHECK_EQ(pi.dqpn, DPV_GSI_QPN, "CM frame to QP 1");
	CHECK_EQ(pi.deth_sqpn, DPV_GSI_QPN, "CM frame from QP 1");
	CHECK_EQ(pi.deth_qkey, DPV_GSI_QKEY, "GSI Q_Key");
	CHECK_EQ(pi.pkey, 0xffff, "P_Key");
	CHECK_EQ(pi.sgid[15], g->from_client ? 3 : 2, "sender");
	if (!CHECK(pi.payload_len == DPV_MAD_SIZE, "frame %d MAD length %u", g->frame, pi.payload_len))
		return;
	mad = p->data + pi.payload_off;
	if (!CHECK(dpv_cm_mad_decode(mad, pi.payload_len, &m) == 0, "frame %d decodes", g->frame))
		return;
	CHECK_EQ(m.hdr.base_version, 1, "base version");
	CHECK_EQ(m.hdr.mgmt_class, 7, "class");
	CHECK_EQ(m.hdr.class_version, 2, "class version");
	CHECK_EQ(m.hdr.method, 3, "method");
	CHECK_EQ(m.hdr.status, 0, "status");
	CHECK_EQ(m.hdr.class_specific, 0, "class specific");
	CHECK(m.hdr.tid == g->tid, "frame %d TID %#llx", g->frame, (unsigned long long)m.hdr.tid);
	CHECK_EQ(m.hdr.attr_id, g->attr, "attribute ID");
	CHECK_EQ(m.hdr.attr_mod, 0, "attribute modifier");
	check_msg(&m, g, pk, npk);
	CHECK(dpv_cm_mad_encode(&m, out) == 0 && memcmp(out, mad, DPV_MAD_SIZE) == 0,
	      "frame %d (%s) re-encoded byte for byte", g->frame, dpv_cm_attr_name(g->attr));
}

void cm_golden_tests(const char *pcap_path)
{
	struct dpvt_pkt *pk;
	int n = dpvt_pcap_read(pcap_path, &pk), ncm = 0;

	if (!CHECK(n == 76, "%s: %d packets, CAPTURES.md says 76", pcap_path, n)) {
		if (n > 0)
			dpvt_pcap_free(pk, n);
		return;
	}
	/* exactly the golden frames are CM MADs (UD to QP 1) */
	for (int i = 0; i < n; i++) {
		struct dpv_pkt_info pi;
		int want = 0;

		if (dpv_pkt_parse_check(pk[i].data, pk[i].len, &pi) || pi.dqpn != DPV_GSI_QPN)
			continue;
		ncm++;
		for (int k = 0; k < N_GOLDEN; k++)
			want |= golden[k].frame == i + 1;
		CHECK(want, "frame %d is a CM MAD the test does not expect", i + 1);
	}
	CHECK_EQ(ncm, N_GOLDEN, "CM MADs in the capture");
	for (int k = 0; k < N_GOLDEN; k++)
		check_frame(&golden[k], pk, n);
	dpvt_pcap_free(pk, n);
}
