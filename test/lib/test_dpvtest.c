/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit test of the test library itself (suite 'unit'): the check counting
 * and exit status (in child processes, whose output is read back), that a
 * passing CHECK does not evaluate its message, KNOWN_BUG with and without
 * DPVERBS_FUNC_XFAIL, the errno macros, the payload patterns, the
 * checksums against lib/wire, the pcap writer and reader, and the frame
 * builders (every frame parses back with dpv_pkt_parse_check()).
 */
#include <sys/wait.h>
#include <unistd.h>

#include "dpvt_wire.h"

/* Runs fn in a child with stdout and stderr to a pipe; returns the exit
 * status (-1 if it did not exit) and the output in out. */
static int run_child(void (*fn)(void), char *out, size_t len)
{
	int pfd[2];

	if (pipe(pfd))
		return -1;
	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();
	if (pid == 0) {
		dup2(pfd[1], 1);
		dup2(pfd[1], 2);
		close(pfd[0]);
		fn();
		_exit(99); /* fn calls exit() */
	}
	close(pfd[1]);
	size_t got = 0;
	ssize_t r;
	while (got + 1 < len && (r = read(pfd[0], out + got, len - 1 - got)) > 0)
		got += (size_t)r;
	out[got] = '\0';
	close(pfd[0]);
	int st;
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

static void child_mixed(void)
{
	CHECK(1 + 1 == 2, "passes");
	CHECK(1 + 1 == 3, "fails with %d", 42);
	CHECK_EQ(7, 8, "seven");
	KNOWN_BUG(0, "a known bug");
	KNOWN_BUG(1, "a fixed bug");
	exit(dpvt_finish());
}

static void child_all_pass(void)
{
	for (int i = 0; i < 5; i++)
		CHECK(i >= 0, "i %d", i);
	exit(dpvt_finish());
}

static void child_xfail(void)
{
	setenv("DPVERBS_FUNC_XFAIL", "1", 1);
	KNOWN_BUG(0, "tolerated");
	CHECK(1, "passes");
	exit(dpvt_finish());
}

static int side_effects;

static int count_side_effect(void)
{
	return ++side_effects;
}

static void *null_errno(int e)
{
	errno = e;
	return NULL;
}

static int minus_one_errno(int e)
{
	errno = e;
	return -1;
}

static void test_checks(void)
{
	/* the children start with this process' counters: run them first */
	char out[3][4096];
	int st[3] = {run_child(child_mixed, out[0], sizeof(out[0])), run_child(child_all_pass, out[1], sizeof(out[1])),
		     run_child(child_xfail, out[2], sizeof(out[2]))};

	CHECK_EQ(st[0], 1, "exit status after failures");
	CHECK(strstr(out[0], "\n2 passed, 3 failed\n") != NULL, "mixed: final line, got:\n%s", out[0]);
	CHECK(strstr(out[0], "FAIL ") && strstr(out[0], "fails with 42"), "mixed: failure message printed");
	CHECK(strstr(out[0], "seven: got 7, expected 8") != NULL, "mixed: CHECK_EQ message");
	CHECK(strstr(out[0], "FAIL (KNOWN BUG)") != NULL, "mixed: a known bug fails without XFAIL");
	CHECK_EQ(st[1], 0, "exit status when all passed");
	CHECK(!strcmp(out[1], "5 passed, 0 failed\n"), "all pass: output \"%s\"", out[1]);
	CHECK_EQ(st[2], 0, "exit status with a tolerated known bug");
	CHECK(strstr(out[2], "(1 known bugs tolerated by DPVERBS_FUNC_XFAIL)\n1 passed, 0 failed\n") != NULL,
	      "xfail: output \"%s\"", out[2]);

	/* the message arguments are evaluated only on failure */
	side_effects = 0;
	CHECK(side_effects == 0, "never printed %d", count_side_effect());
	CHECK_EQ(side_effects, 0, "message of a passing CHECK not evaluated");
	CHECK(CHECK(true, "x") == true, "CHECK is true when it passes");

	CHECK_NULL_ERRNO(null_errno(EINVAL), EINVAL);
	CHECK_RET_ERRNO(minus_one_errno(ENOENT), -1, ENOENT);
	errno = EBUSY;
	CHECK_RET_ERRNO(0, 0, 0); /* errno is cleared before the expression */
}

static void test_patterns(void)
{
	uint8_t a[300], b[300];
	int bad = 0;

	for (size_t len = 0; len <= sizeof(a); len += 13) {
		dpvt_pat_fill(a, len, 5, 77);
		if (dpvt_pat_check(a, len, 5, 77) != -1)
			bad++;
		for (size_t k = 0; k < len; k++) {
			memcpy(b, a, len);
			b[k] ^= 0x10;
			if (dpvt_pat_check(b, len, 5, 77) != (long)k)
				bad++;
		}
		if (len >= 8 && (dpvt_pat_check(a, len, 5, 78) == -1 || dpvt_pat_check(a, len, 6, 77) == -1))
			bad++;
		dpvt_fill_pattern(a, len, 9);
		if (dpvt_check_pattern(a, len, 9) != -1 || (len > 0 && dpvt_check_pattern(a, len, 10) != 0))
			bad++;
	}
	CHECK_EQ(bad, 0, "patterns verify and find the first wrong byte");
	uint64_t w;
	dpvt_pat_fill((uint8_t *)&w, 8, 1, 123456);
	CHECK_EQ(w, 123456, "word 0 of a message is its sequence number");
}

static void test_bytes(void)
{
	uint8_t h[20], out[8];
	int bad = 0;
	uint32_t x = 1;

	for (int it = 0; it < 1000; it++) {
		for (int i = 0; i < 20; i++) {
			x = x * 1103515245u + 12345u;
			h[i] = (uint8_t)(x >> 16);
		}
		h[0] = 0x45; /* lib/wire sums IHL * 4 bytes */
		h[10] = h[11] = 0;
		if (dpvt_inet_csum(h, 20, 0) != dpv_ipv4_cksum(h))
			bad++;
		dpvt_put16(h + 10, dpvt_inet_csum(h, 20, 0));
		if (dpvt_inet_csum(h, 20, 0) != 0)
			bad++;
	}
	CHECK_EQ(bad, 0, "inet checksum equals lib/wire's IPv4 checksum, and verifies to 0");
	CHECK_EQ(dpvt_unhex("52 54:0a-ff", out, sizeof(out)), 4, "unhex length");
	CHECK(out[0] == 0x52 && out[1] == 0x54 && out[2] == 0x0a && out[3] == 0xff, "unhex bytes");
	CHECK_EQ(dpvt_unhex("0102030405", out, 2), 5, "unhex counts past max");
	dpvt_put16(out, 0xbeef);
	CHECK(out[0] == 0xbe && out[1] == 0xef && dpvt_get16(out) == 0xbeef, "put16/get16 big-endian");
}

static void base(struct dpv_pkt_build *b, uint8_t ip_ver, uint8_t opcode)
{
	static const uint8_t s4[16] = {[10] = 0xff, [11] = 0xff, 192, 0, 2, 1};
	static const uint8_t d4[16] = {[10] = 0xff, [11] = 0xff, 192, 0, 2, 2};
	static const uint8_t s6[16] = {0xfe, 0x80, [15] = 1};
	static const uint8_t d6[16] = {0xfe, 0x80, [15] = 2};

	memset(b, 0, sizeof(*b));
	memcpy(b->src_mac, "\x02\x00\x00\x00\x00\x01", 6);
	memcpy(b->dst_mac, "\x02\x00\x00\x00\x00\x02", 6);
	b->ip_ver = ip_ver;
	memcpy(b->sgid, ip_ver == 4 ? s4 : s6, 16);
	memcpy(b->dgid, ip_ver == 4 ? d4 : d6, 16);
	b->hop_limit = 64;
	b->udp_sport = 0xc001;
	b->opcode = opcode;
	b->pkey = 0xffff;
	b->dqpn = 0x11;
	b->psn = 5;
	b->deth_qkey = 0x1234;
	b->deth_sqpn = 0x12;
}

static void test_frames_and_pcap(void)
{
	uint8_t f[2048], pay[1024];
	struct dpv_pkt_build b;
	struct dpv_pkt_info pi;
	char path[] = "/tmp/dpvtest-XXXXXX";
	int fd = mkstemp(path);
	FILE *pf = fd >= 0 ? fdopen(fd, "wb") : NULL;
	uint32_t lens[8];
	int n = 0;

	CHECK(pf && dpvt_pcap_write_hdr(pf) == 0, "pcap header written");
	dpvt_fill_pattern(pay, sizeof(pay), 3);
	for (uint8_t v = 4; v <= 6; v += 2) {
		for (int k = 0; k < 2; k++) {
			uint32_t plen = k ? 1024 : 13;
			base(&b, v, (uint8_t)(DPV_TR_UD | DPV_OPC_SEND_ONLY));
			uint32_t len = dpvt_frame_build(f, sizeof(f), &b, pay, plen);
			CHECK(len == dpv_pkt_frame_len(b.opcode, v, plen), "IPv%u frame of %u B: length %u", v, plen, len);
			CHECK(dpv_pkt_parse_check(f, len, &pi) == 0 && pi.payload_len == plen &&
				      !memcmp(f + pi.payload_off, pay, plen) && pi.dqpn == 0x11,
			      "IPv%u frame of %u B parses back with its payload", v, plen);
			lens[n++] = len;
			CHECK(pf && dpvt_pcap_write_pkt(pf, 1, (uint32_t)n, f, len) == 0, "pcap record written");
		}
	}
	CHECK_EQ(dpvt_frame_build(f, 100, &b, pay, 1024), 0, "a frame larger than the buffer is refused");
	CHECK_EQ(dpvt_frame_build(f, sizeof(f), &(struct dpv_pkt_build){.opcode = 0x15, .ip_ver = 4}, NULL, 0), 0,
		 "an invalid opcode is refused");
	base(&b, 4, (uint8_t)(DPV_TR_UD | DPV_OPC_SEND_ONLY));
	uint32_t len = dpvt_frame_build(f, sizeof(f), &b, pay, 32);
	f[14 + 8] = 7; /* TTL: the IPv4 checksum no longer matches */
	CHECK(dpv_pkt_parse_check(f, len, &pi) != 0, "stale IPv4 checksum detected");
	dpvt_ipv4_fix_cksum(f);
	CHECK(dpv_ipv4_cksum(f + 14) == 0 && dpv_pkt_parse_check(f, len, &pi) == 0,
	      "dpvt_ipv4_fix_cksum (TTL is not covered by the ICRC)");

	if (pf)
		fclose(pf);
	struct dpvt_pkt *pk = NULL;
	int got = dpvt_pcap_read(path, &pk);
	CHECK_EQ(got, n, "pcap packets read back");
	for (int i = 0; i < got && i < n; i++)
		CHECK(pk[i].len == lens[i] && pk[i].wirelen == lens[i] && dpv_pkt_parse_check(pk[i].data, pk[i].len, &pi) == 0,
		      "pcap packet %d: length and content", i);
	dpvt_pcap_free(pk, got);
	unlink(path);
	CHECK_EQ(dpvt_pcap_read("/nonexistent/dpvtest.pcap", &pk), -1, "missing pcap file");

	static const uint8_t sha[6] = {0x02, 0, 0, 0, 0, 0x77}, spa[4] = {192, 0, 2, 77}, tpa[4] = {192, 0, 2, 2};
	CHECK_EQ(dpvt_arp_frame(f, 1, sha, spa, tpa), 60, "ARP frame length");
	CHECK(dpvt_get16(f + 12) == 0x0806 && dpvt_get16(f + 20) == 1 && !memcmp(f + 22, sha, 6) &&
		      !memcmp(f + 28, spa, 4) && !memcmp(f + 38, tpa, 4),
	      "ARP request fields");
	static const uint8_t src6[16] = {0xfe, 0x80, [15] = 0x77}, tgt6[16] = {0xfe, 0x80, [13] = 1, 2, 3};
	CHECK_EQ(dpvt_ns_frame(f, sha, src6, tgt6), 86, "NS frame length");
	CHECK_EQ(dpvt_icmp6_csum(f + 14, f + 54, 32), 0, "NS ICMPv6 checksum verifies");
	CHECK(f[0] == 0x33 && f[1] == 0x33 && f[2] == 0xff && f[5] == 3 && f[54] == 135 && !memcmp(f + 62, tgt6, 16),
	      "NS to the solicited-node group, target");
}

int main(void)
{
	test_checks();
	test_patterns();
	test_bytes();
	test_frames_and_pcap();
	return dpvt_finish();
}
