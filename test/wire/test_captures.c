/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Every packet of every golden capture in test/data/wire/ (Linux rxe):
 *  - dpv_pkt_parse_check() accepts it and the recomputed ICRC equals the wire;
 *  - opcode, QPN, PSN equal the values read independently from fixed offsets,
 *    and the opcode, QPN and frame length equal tshark's packet list stored
 *    in NAME.txt ("RC Send Only QP=0x000012");
 *  - the per-file opcode set equals the table of test/data/wire/CAPTURES.md;
 *  - PSNs of each request stream are consecutive (a READ REQUEST takes one
 *    PSN per response packet, path MTU 1024), responses carry PSNs of that
 *    stream, and every stream starts at a PSN that the tools printed;
 *  - R_Keys in RETH/IETH and immediate data appear in the tools' output;
 *  - round trip: dpv_pkt_build_hdrs() + payload + dpv_pkt_finish() from the
 *    parsed fields rebuilds the captured frame byte for byte (ICRC included).
 *
 * usage: test_captures DIR   (a missing or incomplete DIR is a failure)
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <sys/stat.h>

#include "dpv_crc.h"
#include "dpv_wire.h"
#include "dpvt_wire.h"

#define PMTU 1024

/* CAPTURES.md table, "BTH opcodes (hex)" column. */
static const struct {
	const char *file;
	uint8_t ops[8];
	int nops;
} expect_ops[] = {
	{ "ud_send", { 0x64 }, 1 },
	{ "rc_send", { 0x04, 0x11 }, 2 },
	{ "rc_send_multi", { 0x00, 0x01, 0x02, 0x11 }, 4 },
	{ "uc_send", { 0x24 }, 1 },
	{ "rc_send_lat", { 0x04, 0x11 }, 2 },
	{ "rc_write", { 0x0a, 0x11 }, 2 },
	{ "rc_write_multi", { 0x06, 0x07, 0x08, 0x11 }, 4 },
	{ "rc_read", { 0x0c, 0x10 }, 2 },
	{ "rc_read_multi", { 0x0c, 0x0d, 0x0e, 0x0f }, 4 },
	{ "rc_atomic_fadd", { 0x14, 0x12 }, 2 },
	{ "rc_atomic_cswap", { 0x13, 0x12 }, 2 },
	{ "rc_send_ipv6", { 0x04, 0x11 }, 2 },
	{ "rdma_cm_send", { 0x64, 0x04, 0x11 }, 3 },
	{ "rc_send_imm", { 0x05, 0x11 }, 2 },
	{ "rc_send_imm_multi", { 0x00, 0x01, 0x03, 0x11 }, 4 },
	{ "rc_write_imm", { 0x0b, 0x11 }, 2 },
	{ "rc_write_imm_multi", { 0x06, 0x07, 0x09, 0x11 }, 4 },
	{ "rc_send_inv", { 0x17, 0x11 }, 2 },
	{ "rc_send_inv_multi", { 0x00, 0x01, 0x16, 0x11 }, 4 },
	{ "ud_send_pad", { 0x64 }, 1 },
	{ "rc_send_pad", { 0x00, 0x02, 0x11 }, 3 },
	{ "rc_write_imm_pad", { 0x0b, 0x11 }, 2 },
};
#define N_EXPECT (int)(sizeof(expect_ops) / sizeof(expect_ops[0]))

/* tshark 4.0 packet-list descriptions -> opcode (transport prefix + name) */
static const struct {
	const char *desc;
	uint8_t op;
} tshark_names[] = {
	{ "RC Send First", 0x00 },
	{ "RC Send Middle", 0x01 },
	{ "RC Send Last Immediate", 0x03 },
	{ "RC Send Last Invalidate", 0x16 },
	{ "RC Send Last", 0x02 },
	{ "RC Send Only Immediate", 0x05 },
	{ "RC Send Only Invalidate", 0x17 },
	{ "RC Send Only", 0x04 },
	{ "RC RDMA Write First", 0x06 },
	{ "RC RDMA Write Middle", 0x07 },
	{ "RC RDMA Write Last Immediate", 0x09 },
	{ "RC RDMA Write Last", 0x08 },
	{ "RC RDMA Write Only Immediate", 0x0b },
	{ "RC RDMA Write Only", 0x0a },
	{ "RC RDMA Read Request", 0x0c },
	{ "RC RDMA Read Response First", 0x0d },
	{ "RC RDMA Read Response Middle", 0x0e },
	{ "RC RDMA Read Response Last", 0x0f },
	{ "RC RDMA Read Response Only", 0x10 },
	{ "RC Atomic Acknowledge", 0x12 },
	{ "RC Acknowledge", 0x11 },
	{ "RC Compare Swap", 0x13 },
	{ "RC Fetch Add", 0x14 },
	{ "UC Send Only", 0x24 },
	{ "UD Send Only", 0x64 },
	{ "CM: ", 0x64 }, /* CM MADs: UD SEND ONLY to QP1 */
};

struct list_ent {
	int seen;
	uint8_t op;
	uint32_t qpn; /* 1 for CM MADs */
	uint32_t len;
	int malformed;
};

/* request streams for the PSN check */
struct stream {
	uint8_t src[16], dst[16];
	uint32_t dqpn;
	uint32_t first_psn, next_psn;
	int rc; /* reliable: responses refer to it */
};

static char *read_text(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *s;
	long n;

	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	s = malloc((size_t)n + 1);
	if (s && fread(s, 1, (size_t)n, f) != (size_t)n) {
		free(s);
		s = NULL;
	}
	if (s)
		s[n] = 0;
	fclose(f);
	return s;
}

static bool contains_ci(const char *hay, const char *needle)
{
	size_t n = strlen(needle);

	for (; *hay; hay++)
		if (strncasecmp(hay, needle, n) == 0)
			return true;
	return false;
}

/* Parse tshark's packet list of NAME.txt into ents[frame]; returns count. */
static int parse_list(const char *txt, struct list_ent *ents, int max)
{
	const char *p = strstr(txt, "## Packet list");
	int count = 0;

	if (!p)
		return 0;
	p = strchr(p, '\n');
	while (p && *++p && strncmp(p, "##", 2) != 0) {
		const char *eol = strchr(p, '\n'), *r, *d;
		char line[512];
		size_t ll = eol ? (size_t)(eol - p) : strlen(p);
		int fno;

		if (ll >= sizeof(line))
			ll = sizeof(line) - 1;
		memcpy(line, p, ll);
		line[ll] = 0;
		p = eol;
		if (sscanf(line, "%d", &fno) != 1 || fno <= 0 || fno >= max)
			continue;
		r = strstr(line, "RRoCE ");
		if (!r)
			continue;
		ents[fno].len = (uint32_t)strtoul(r + 6, (char **)&d, 10);
		while (*d == ' ')
			d++;
		ents[fno].op = 0xff;
		for (size_t i = 0; i < sizeof(tshark_names) / sizeof(tshark_names[0]); i++) {
			size_t n = strlen(tshark_names[i].desc);

			if (strncmp(d, tshark_names[i].desc, n) == 0 &&
			    (d[n] == ' ' || d[n] == 0 || tshark_names[i].desc[n - 1] == ' ')) {
				ents[fno].op = tshark_names[i].op;
				break;
			}
		}
		r = strstr(d, "QP=0x");
		ents[fno].qpn = r ? (uint32_t)strtoul(r + 5, NULL, 16) :
				    (strncmp(d, "CM: ", 4) == 0 ? 1 : 0xffffffff);
		ents[fno].malformed = strstr(d, "[Malformed Packet]") != NULL;
		ents[fno].seen = 1;
		count++;
	}
	return count;
}

/*
 * Collect every number the tools printed after KEY ("PSN", "RKey", ...):
 * "KEY 0x..." or "KEY: 0x...", any case, any number of digits.
 */
static int parse_vals(const char *txt, const char *key, uint32_t *v, int max)
{
	size_t kl = strlen(key);
	int n = 0;

	for (const char *p = txt; *p; p++) {
		const char *q = p + kl;

		if (strncasecmp(p, key, kl) != 0)
			continue;
		if (*q == ':')
			q++;
		if (*q++ != ' ' || strncmp(q, "0x", 2) != 0)
			continue;
		if (n < max)
			v[n++] = (uint32_t)strtoul(q + 2, NULL, 16);
	}
	return n;
}

static bool in_set(const uint32_t *v, int n, uint32_t x)
{
	for (int i = 0; i < n; i++)
		if (v[i] == x)
			return true;
	return false;
}

/* rdma_cm: starting PSNs travel in CM REQ/REP MADs (UD to QP1) */
static bool psn_in_mads(const struct dpvt_pkt *pk, int upto, uint32_t psn)
{
	for (int i = 0; i < upto; i++) {
		struct dpv_pkt_info pi;
		const uint8_t *p;

		if (dpv_pkt_parse(pk[i].data, pk[i].len, &pi) || pi.dqpn != 1)
			continue;
		p = pk[i].data + pi.payload_off;
		for (uint32_t k = 0; k + 3 <= pi.payload_len; k++)
			if (p[k] == (psn >> 16) && p[k + 1] == ((psn >> 8) & 0xff) &&
			    p[k + 2] == (psn & 0xff))
				return true;
	}
	return false;
}

/* Independent extraction: fixed offsets, no library code. */
static int raw_bth(const uint8_t *f, uint32_t len, uint32_t *bth_off)
{
	uint32_t l3 = 14;
	unsigned et = (unsigned)(f[12] << 8 | f[13]);

	if (et == 0x8100) {
		et = (unsigned)(f[16] << 8 | f[17]);
		l3 = 18;
	}
	if (et == 0x0800)
		*bth_off = l3 + (uint32_t)(f[l3] & 0x0f) * 4 + 8;
	else if (et == 0x86dd)
		*bth_off = l3 + 40 + 8;
	else
		return -1;
	return *bth_off + 12 <= len ? 0 : -1;
}

static void build_from_info(const struct dpv_pkt_info *pi, struct dpv_pkt_build *b)
{
	memset(b, 0, sizeof(*b));
	memcpy(b->dst_mac, pi->dst_mac, 6);
	memcpy(b->src_mac, pi->src_mac, 6);
	b->ip_ver = pi->ip_ver;
	memcpy(b->sgid, pi->sgid, 16);
	memcpy(b->dgid, pi->dgid, 16);
	b->tclass = pi->tclass;
	b->hop_limit = pi->hop_limit;
	b->flow_label = pi->flow_label;
	b->ip_id = pi->ip_id;
	b->udp_sport = pi->udp_sport;
	b->opcode = pi->opcode;
	b->se = pi->se;
	b->mig = pi->mig;
	b->ackreq = pi->ackreq;
	b->pkey = pi->pkey;
	b->dqpn = pi->dqpn;
	b->psn = pi->psn;
	b->deth_qkey = pi->deth_qkey;
	b->deth_sqpn = pi->deth_sqpn;
	b->reth_va = pi->reth_va;
	b->reth_rkey = pi->reth_rkey;
	b->reth_len = pi->reth_len;
	b->aeth_syndrome = pi->aeth_syndrome;
	b->aeth_msn = pi->aeth_msn;
	b->immdt = pi->immdt;
	b->ieth_rkey = pi->ieth_rkey;
	b->atm_va = pi->atm_va;
	b->atm_rkey = pi->atm_rkey;
	b->atm_swap_add = pi->atm_swap_add;
	b->atm_cmp = pi->atm_cmp;
	b->atmack_orig = pi->atmack_orig;
	b->xrc_srqn = pi->xrc_srqn;
}

static int total_pkts, total_files;

static void check_file(const char *dir, const char *name)
{
	char path[1024], base[256];
	struct dpvt_pkt *pk;
	struct list_ent ents[1024];
	struct stream st[32];
	uint32_t psns[64], rkeys[64];
	int n, nst = 0, nlist = 0, npsn = 0, nrkey = 0, ei = -1;
	bool seen_op[256] = { false };
	char *txt;
	size_t bl = strlen(name) - 5; /* without ".pcap" */

	snprintf(base, sizeof(base), "%.*s", (int)bl, name);
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	n = dpvt_pcap_read(path, &pk);
	CHECK(n > 0, "%s: no packets", name);
	if (n <= 0)
		return;
	total_files++;
	total_pkts += n;

	memset(ents, 0, sizeof(ents));
	snprintf(path, sizeof(path), "%s/%s.txt", dir, base);
	txt = read_text(path);
	if (txt) {
		nlist = parse_list(txt, ents, 1024);
		npsn = parse_vals(txt, "PSN", psns, 64);
		nrkey = parse_vals(txt, "rkey", rkeys, 64);
		CHECK(nlist == n, "%s: tshark list has %d frames, pcap %d", base, nlist, n);
	} else {
		CHECK(txt != NULL, "%s.txt missing", base);
	}

	for (int i = 0; i < n; i++) {
		const uint8_t *f = pk[i].data;
		struct dpv_pkt_info pi;
		struct dpv_pkt_build b;
		uint8_t rebuilt[2048];
		uint32_t boff = 0, raw_psn, raw_qpn, wire_icrc, flen, poff;
		int fno = i + 1, rc;

		rc = dpv_pkt_parse_check(f, pk[i].len, &pi);
		CHECK(rc == 0, "%s frame %d: %s", base, fno, dpv_parse_err_str(rc));
		if (rc != 0)
			continue;
		seen_op[pi.opcode] = true;

		/* independent field extraction */
		CHECK(raw_bth(f, pk[i].len, &boff) == 0 && boff == pi.bth_off,
		      "%s frame %d: BTH offset", base, fno);
		raw_qpn = (uint32_t)f[boff + 5] << 16 | (uint32_t)f[boff + 6] << 8 | f[boff + 7];
		raw_psn = (uint32_t)f[boff + 9] << 16 | (uint32_t)f[boff + 10] << 8 | f[boff + 11];
		CHECK(f[boff] == pi.opcode && raw_qpn == pi.dqpn && raw_psn == pi.psn,
		      "%s frame %d: opcode/QPN/PSN", base, fno);
		wire_icrc = (uint32_t)f[pk[i].len - 4] | (uint32_t)f[pk[i].len - 3] << 8 |
			    (uint32_t)f[pk[i].len - 2] << 16 | (uint32_t)f[pk[i].len - 1] << 24;
		CHECK(pi.frame_len == pk[i].len, "%s frame %d: frame_len %u != %u", base, fno,
		      pi.frame_len, pk[i].len);
		CHECK(dpv_icrc_compute(f + pi.l3_off, pk[i].len - pi.l3_off - 4) == wire_icrc &&
			      pi.icrc == wire_icrc,
		      "%s frame %d: ICRC", base, fno);
		/* every CRC implementation, whichever the dispatcher picked */
		for (int im = 0; im < DPV_CRC_N_IMPL; im++)
			if (dpv_crc_impl_supported((enum dpv_crc_impl)im))
				CHECK(dpv_icrc_compute_with((enum dpv_crc_impl)im, f + pi.l3_off,
							    pk[i].len - pi.l3_off - 4) == wire_icrc,
				      "%s frame %d: ICRC by %s", base, fno,
				      dpv_crc_impl_name((enum dpv_crc_impl)im));
		CHECK(pi.udp_dport == 4791 && pi.pkey == 0xffff && pi.tver == 0,
		      "%s frame %d: port/pkey/tver", base, fno);
		CHECK((pi.payload_len + pi.padcnt) % 4 == 0,
		      "%s frame %d: payload %u + pad %u", base, fno, pi.payload_len, pi.padcnt);

		/* tshark's view, stored in NAME.txt */
		if (txt && fno < 1024 && ents[fno].seen) {
			CHECK(ents[fno].op == pi.opcode, "%s frame %d: tshark opcode 0x%02x, ours 0x%02x",
			      base, fno, ents[fno].op, pi.opcode);
			CHECK(ents[fno].qpn == pi.dqpn, "%s frame %d: tshark QP 0x%x, ours 0x%x",
			      base, fno, ents[fno].qpn, pi.dqpn);
			CHECK(ents[fno].len == pk[i].len, "%s frame %d: tshark length %u", base,
			      fno, ents[fno].len);
			/*
			 * Wireshark 4.0 flags perftest's tiny sync SENDs (2 or 4
			 * bytes, not 0 as the README says) "[Malformed Packet:
			 * RPCoRDMA]": its RPC-over-RDMA heuristic reads past them.
			 */
			if (ents[fno].malformed)
				CHECK(pi.payload_len < 8, "%s frame %d: malformed but payload %u",
				      base, fno, pi.payload_len);
		}
		if (nrkey && (pi.mask & DPV_HDR_RETH))
			CHECK(in_set(rkeys, nrkey, pi.reth_rkey),
			      "%s frame %d: RETH rkey 0x%x not in the log", base, fno, pi.reth_rkey);
		if (pi.mask & DPV_HDR_IETH)
			CHECK(in_set(rkeys, nrkey, pi.ieth_rkey),
			      "%s frame %d: IETH rkey 0x%x not in the log", base, fno, pi.ieth_rkey);
		if (txt && (pi.mask & DPV_HDR_IMMDT) && strstr(txt, "imm 0x")) {
			char k[24];

			snprintf(k, sizeof(k), "imm 0x%08x", pi.immdt);
			CHECK(contains_ci(txt, k), "%s frame %d: %s not in the log", base, fno, k);
		}
		if (pi.mask & DPV_HDR_DETH) {
			/* QP1 (CM MADs) uses the well-known GSI Q_Key (IBA 13.5.1) */
			if (pi.dqpn == 1)
				CHECK(pi.deth_qkey == 0x80010000u && pi.deth_sqpn == 1,
				      "%s frame %d: GSI DETH", base, fno);
		}

		/* PSN streams */
		if (pi.mask & DPV_OP_REQ) {
			int s;

			for (s = 0; s < nst; s++)
				if (st[s].dqpn == pi.dqpn && !memcmp(st[s].src, pi.sgid, 16) &&
				    !memcmp(st[s].dst, pi.dgid, 16))
					break;
			if (s == nst && nst < 32) {
				memcpy(st[s].src, pi.sgid, 16);
				memcpy(st[s].dst, pi.dgid, 16);
				st[s].dqpn = pi.dqpn;
				st[s].first_psn = st[s].next_psn = pi.psn;
				st[s].rc = (pi.opcode & 0xe0) == DPV_TR_RC;
				nst++;
				if (pi.dqpn != 1)
					CHECK(in_set(psns, npsn, pi.psn) || psn_in_mads(pk, i, pi.psn),
					      "%s frame %d: first PSN 0x%06x neither printed by the tools nor in a CM MAD",
					      base, fno, pi.psn);
			}
			if (s < nst) {
				uint32_t npk = 1;

				CHECK(pi.psn == st[s].next_psn,
				      "%s frame %d: PSN 0x%06x, expected 0x%06x", base, fno, pi.psn,
				      st[s].next_psn);
				if (pi.opcode == DPV_OPC_READ_REQUEST && pi.reth_len > PMTU)
					npk = (pi.reth_len + PMTU - 1) / PMTU;
				st[s].next_psn = (pi.psn + npk) & 0xffffff;
			}
		} else {
			/* a response's PSN lies in a request stream in the other direction */
			bool ok = false;

			for (int s = 0; s < nst; s++) {
				uint32_t span = (st[s].next_psn - st[s].first_psn) & 0xffffff;

				if (st[s].rc && !memcmp(st[s].src, pi.dgid, 16) &&
				    !memcmp(st[s].dst, pi.sgid, 16) &&
				    ((pi.psn - st[s].first_psn) & 0xffffff) < span)
					ok = true;
			}
			CHECK(ok, "%s frame %d: response PSN 0x%06x matches no request", base, fno,
			      pi.psn);
		}

		/* round trip */
		build_from_info(&pi, &b);
		flen = dpv_pkt_frame_len(pi.opcode, pi.ip_ver, pi.payload_len);
		CHECK(flen == pk[i].len, "%s frame %d: frame_len() %u != %u", base, fno, flen,
		      pk[i].len);
		if (flen != pk[i].len || flen > sizeof(rebuilt))
			continue;
		memset(rebuilt, 0xee, sizeof(rebuilt));
		poff = dpv_pkt_build_hdrs(rebuilt, &b, pi.payload_len);
		CHECK(poff == pi.payload_off, "%s frame %d: payload offset %u != %u", base, fno,
		      poff, pi.payload_off);
		memcpy(rebuilt + poff, f + pi.payload_off, pi.payload_len);
		dpv_pkt_finish(rebuilt, flen);
		if (memcmp(rebuilt, f, flen) != 0) {
			uint32_t k = 0;

			while (k < flen && rebuilt[k] == f[k])
				k++;
			CHECK(0, "%s frame %d: rebuilt frame differs at byte %u (0x%02x vs 0x%02x)",
			      base, fno, k, rebuilt[k], f[k]);
		} else {
			CHECK(1, "round trip");
		}
	}

	/* opcode set == README table */
	for (int e = 0; e < N_EXPECT; e++)
		if (strcmp(expect_ops[e].file, base) == 0)
			ei = e;
	CHECK(ei >= 0, "%s: not in the README table", base);
	if (ei >= 0) {
		bool want[256] = { false };

		for (int k = 0; k < expect_ops[ei].nops; k++)
			want[expect_ops[ei].ops[k]] = true;
		for (int op = 0; op < 256; op++)
			CHECK(want[op] == seen_op[op], "%s: opcode 0x%02x expected %d, seen %d",
			      base, op, want[op], seen_op[op]);
	}
	free(txt);
	dpvt_pcap_free(pk, n);
}

static int cmpstr(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv)
{
	const char *dir = argc > 1 ? argv[1] : "test/data/wire";
	struct stat sb;
	DIR *d;
	struct dirent *de;
	char *names[256];
	int nn = 0;

	if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
		printf("FAIL: capture folder %s not found (%s)\n", dir, strerror(errno));
		return 1;
	}
	d = opendir(dir);
	if (!d) {
		printf("FAIL: cannot open %s (%s)\n", dir, strerror(errno));
		return 1;
	}
	while ((de = readdir(d)) != NULL && nn < 256) {
		size_t l = strlen(de->d_name);

		if (l > 5 && strcmp(de->d_name + l - 5, ".pcap") == 0)
			names[nn++] = strdup(de->d_name);
	}
	closedir(d);
	qsort(names, (size_t)nn, sizeof(names[0]), cmpstr);
	CHECK(nn == N_EXPECT, "%d pcap files, README lists %d", nn, N_EXPECT);
	for (int i = 0; i < nn; i++) {
		int before = dpvt_fail_count();

		check_file(dir, names[i]);
		printf("%-28s %s\n", names[i], dpvt_fail_count() == before ? "ok" : "FAILED");
		free(names[i]);
	}
	printf("%d files, %d packets\n", total_files, total_pkts);
	CHECK(total_pkts == 318, "README: 318 packets in 22 files, found %d", total_pkts);
	return dpvt_finish();
}
