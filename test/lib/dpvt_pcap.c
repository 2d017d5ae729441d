/* SPDX-License-Identifier: BSD-3-Clause */
/* Classic pcap reader and writer, LINKTYPE_ETHERNET only (dpvt_wire.h). */
#include <stdlib.h>
#include <string.h>

#include "dpvt_wire.h"

static uint32_t rd32(const uint8_t *p, int swap)
{
	uint32_t v = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;

	if (swap)
		v = (v >> 24) | ((v >> 8) & 0xff00) | ((v << 8) & 0xff0000) | (v << 24);
	return v;
}

int dpvt_pcap_read(const char *path, struct dpvt_pkt **out)
{
	FILE *f = fopen(path, "rb");
	uint8_t gh[24], rh[16];
	struct dpvt_pkt *pk = NULL;
	int n = 0, cap = 0, swap;
	uint32_t magic;

	*out = NULL;
	if (!f) {
		perror(path);
		return -1;
	}
	if (fread(gh, 1, sizeof(gh), f) != sizeof(gh))
		goto bad;
	magic = rd32(gh, 0);
	if (magic == 0xa1b2c3d4u || magic == 0xa1b23c4du)
		swap = 0;
	else if (magic == 0xd4c3b2a1u || magic == 0x4d3cb2a1u)
		swap = 1;
	else
		goto bad;
	if (rd32(gh + 20, swap) != 1) {
		fprintf(stderr, "%s: link type is not Ethernet\n", path);
		goto err;
	}
	while (fread(rh, 1, sizeof(rh), f) == sizeof(rh)) {
		uint32_t incl = rd32(rh + 8, swap);

		if (incl > 262144)
			goto bad;
		if (n == cap) {
			struct dpvt_pkt *np;

			cap = cap ? cap * 2 : 64;
			np = realloc(pk, (size_t)cap * sizeof(*pk));
			if (!np)
				goto err;
			pk = np;
		}
		pk[n].data = malloc(incl ? incl : 1);
		pk[n].len = incl;
		pk[n].wirelen = rd32(rh + 12, swap);
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

void dpvt_pcap_free(struct dpvt_pkt *pk, int n)
{
	for (int i = 0; i < n; i++)
		free(pk[i].data);
	free(pk);
}

static void wr32le(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

int dpvt_pcap_write_hdr(FILE *f)
{
	uint8_t gh[24] = {0};

	wr32le(gh, 0xa1b2c3d4u);
	gh[4] = 2; /* version 2.4 */
	gh[6] = 4;
	wr32le(gh + 16, 65535); /* snaplen */
	wr32le(gh + 20, 1);     /* Ethernet */
	return fwrite(gh, 1, sizeof(gh), f) == sizeof(gh) ? 0 : -1;
}

int dpvt_pcap_write_pkt(FILE *f, uint32_t sec, uint32_t usec, const uint8_t *data, uint32_t len)
{
	uint8_t rh[16];

	wr32le(rh, sec);
	wr32le(rh + 4, usec);
	wr32le(rh + 8, len);
	wr32le(rh + 12, len);
	if (fwrite(rh, 1, sizeof(rh), f) != sizeof(rh))
		return -1;
	return fwrite(data, 1, len, f) == len ? 0 : -1;
}
