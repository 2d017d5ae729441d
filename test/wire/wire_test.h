/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Helpers shared by the wire tests: pass/fail counters and a classic-pcap
 * reader/writer (LINKTYPE_ETHERNET only). Header-only, test code only.
 */
#ifndef DPV_WIRE_TEST_H
#define DPV_WIRE_TEST_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int t_pass, t_fail;

/* CHECK(cond, fmt, ...): count one assertion, print the failure. */
#define CHECK(cond, ...)                                                       \
	do {                                                                   \
		if (cond) {                                                    \
			t_pass++;                                              \
		} else {                                                       \
			t_fail++;                                              \
			printf("FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
			printf(__VA_ARGS__);                                   \
			printf("\n");                                          \
		}                                                              \
	} while (0)

static inline int t_done(void)
{
	printf("%d passed, %d failed\n", t_pass, t_fail);
	return t_fail ? 1 : 0;
}

/* ---- classic pcap ---- */
struct t_pkt {
	uint8_t *data;
	uint32_t len;     /* captured length */
	uint32_t wirelen; /* original length */
};

static inline uint32_t t_rd32(const uint8_t *p, int swap)
{
	uint32_t v = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
		     (uint32_t)p[3] << 24;
	if (swap)
		v = (v >> 24) | ((v >> 8) & 0xff00) | ((v << 8) & 0xff0000) | (v << 24);
	return v;
}

/*
 * Read every packet of a classic pcap file (either byte order, micro- or
 * nanosecond magic). Returns the packet count, or -1 with a message.
 */
static inline int t_pcap_read(const char *path, struct t_pkt **out)
{
	FILE *f = fopen(path, "rb");
	uint8_t gh[24], rh[16];
	struct t_pkt *pk = NULL;
	int n = 0, cap = 0, swap;
	uint32_t magic;

	*out = NULL;
	if (!f) {
		perror(path);
		return -1;
	}
	if (fread(gh, 1, sizeof(gh), f) != sizeof(gh))
		goto bad;
	magic = t_rd32(gh, 0);
	if (magic == 0xa1b2c3d4u || magic == 0xa1b23c4du)
		swap = 0;
	else if (magic == 0xd4c3b2a1u || magic == 0x4d3cb2a1u)
		swap = 1;
	else
		goto bad;
	if (t_rd32(gh + 20, swap) != 1) {
		fprintf(stderr, "%s: link type is not Ethernet\n", path);
		goto err;
	}
	while (fread(rh, 1, sizeof(rh), f) == sizeof(rh)) {
		uint32_t incl = t_rd32(rh + 8, swap);

		if (incl > 262144)
			goto bad;
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			pk = realloc(pk, (size_t)cap * sizeof(*pk));
			if (!pk)
				goto err;
		}
		pk[n].data = malloc(incl ? incl : 1);
		pk[n].len = incl;
		pk[n].wirelen = t_rd32(rh + 12, swap);
		if (!pk[n].data || fread(pk[n].data, 1, incl, f) != incl) {
			free(pk[n].data);
			goto bad;
		}
		n++;
	}
	fclose(f);
	*out = pk;
	return n;
bad:
	fprintf(stderr, "%s: not a classic pcap file or truncated\n", path);
err:
	for (int i = 0; i < n; i++)
		free(pk[i].data);
	free(pk);
	fclose(f);
	return -1;
}

static inline void t_pcap_free(struct t_pkt *pk, int n)
{
	for (int i = 0; i < n; i++)
		free(pk[i].data);
	free(pk);
}

static inline void t_wr32le(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

/* Write a little-endian microsecond pcap header (LINKTYPE_ETHERNET). */
static inline int t_pcap_write_hdr(FILE *f)
{
	uint8_t gh[24] = { 0 };

	t_wr32le(gh, 0xa1b2c3d4u);
	gh[4] = 2; /* version 2.4 */
	gh[6] = 4;
	t_wr32le(gh + 16, 65535); /* snaplen */
	t_wr32le(gh + 20, 1);     /* Ethernet */
	return fwrite(gh, 1, sizeof(gh), f) == sizeof(gh) ? 0 : -1;
}

static inline int t_pcap_write_pkt(FILE *f, uint32_t sec, uint32_t usec,
				   const uint8_t *data, uint32_t len)
{
	uint8_t rh[16];

	t_wr32le(rh, sec);
	t_wr32le(rh + 4, usec);
	t_wr32le(rh + 8, len);
	t_wr32le(rh + 12, len);
	if (fwrite(rh, 1, sizeof(rh), f) != sizeof(rh))
		return -1;
	return fwrite(data, 1, len, f) == len ? 0 : -1;
}

static inline int t_hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Decode hex digits (spaces ignored) into out; returns the byte count. */
static inline uint32_t t_unhex(const char *s, uint8_t *out, uint32_t max)
{
	uint32_t n = 0;
	int hi = -1;

	for (; *s; s++) {
		int v = t_hexval(*s);

		if (v < 0)
			continue;
		if (hi < 0) {
			hi = v;
		} else {
			if (n < max)
				out[n] = (uint8_t)(hi << 4 | v);
			n++;
			hi = -1;
		}
	}
	return n;
}

#endif
