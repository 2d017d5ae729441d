/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A port's GID table and node GUID from its configuration and MAC: the one
 * derivation that the port layer (lib/port, at start), the verbs façade
 * (node GUID) and the sysfs view (dpv_view.c, apps/dpv_sysfs) share, so that
 * what a program reads from a file equals what ibv_query_gid returns. Needs
 * no EAL and touches no device.
 */
#include <string.h>
#include <sys/socket.h>
#include <linux/if_addr.h>
#include <linux/rtnetlink.h>

#include "dpv_conf.h"
#include "dpv_nl.h"

void dpv_mac_eui64(const uint8_t mac[6], uint8_t out[8])
{
	/* modified EUI-64 (RFC 4291 2.5.1, appendix A): U/L bit inverted */
	out[0] = mac[0] ^ 0x02;
	out[1] = mac[1];
	out[2] = mac[2];
	out[3] = 0xff;
	out[4] = 0xfe;
	out[5] = mac[3];
	out[6] = mac[4];
	out[7] = mac[5];
}

static void gid_v4(struct dpv_gid_entry *e, struct in_addr a)
{
	memset(e->gid, 0, 16);
	e->gid[10] = 0xff;
	e->gid[11] = 0xff;
	memcpy(&e->gid[12], &a, 4);
	e->valid = true;
	e->ip_ver = 4;
}

static void gid_v6(struct dpv_gid_entry *e, const struct in6_addr *a)
{
	memcpy(e->gid, a, 16);
	e->valid = true;
	e->ip_ver = 6;
}

/* GID 0: fe80::/64 with the modified EUI-64 of the MAC. */
static void gid_linklocal(struct dpv_gid_entry *e, const uint8_t mac[6])
{
	memset(e->gid, 0, 16);
	e->gid[0] = 0xfe;
	e->gid[1] = 0x80;
	dpv_mac_eui64(mac, &e->gid[8]);
	e->valid = true;
	e->ip_ver = 6;
}

void dpv_conf_gid_table(const struct dpv_conf_port *cp, const uint8_t mac[6],
			struct dpv_gid_entry tbl[DPV_GID_TABLE_LEN])
{
	memset(tbl, 0, sizeof(*tbl) * DPV_GID_TABLE_LEN);
	gid_linklocal(&tbl[0], mac);
	if (cp->ipv4.s_addr)
		gid_v4(&tbl[1], cp->ipv4);
	for (unsigned int i = 0; i < cp->n_ipv6 && i < DPV_MAX_IPV6_PER_PORT && 2 + i < DPV_GID_TABLE_LEN; i++)
		gid_v6(&tbl[2 + i], &cp->ipv6[i].addr);
}

unsigned int dpv_conf_gid_table_addrs(const uint8_t mac[6], const struct dpv_nl_addr *a, int n,
				      struct dpv_gid_entry tbl[DPV_GID_TABLE_LEN], struct in_addr *v4,
				      uint8_t *v4_prefix)
{
	unsigned int next = 2, ignored = 0;

	memset(tbl, 0, sizeof(*tbl) * DPV_GID_TABLE_LEN);
	gid_linklocal(&tbl[0], mac);
	v4->s_addr = 0;
	*v4_prefix = 0;
	for (int i = 0; i < n; i++) {
		if (a[i].flags & (IFA_F_TENTATIVE | IFA_F_DADFAILED) || a[i].scope == RT_SCOPE_HOST)
			continue;
		if (a[i].family == AF_INET) {
			if (v4->s_addr) {
				ignored++;
				continue;
			}
			memcpy(&v4->s_addr, a[i].addr + 12, 4);
			*v4_prefix = a[i].prefix;
			gid_v4(&tbl[1], *v4);
		} else if (a[i].scope == RT_SCOPE_UNIVERSE) {
			if (next >= 2 + DPV_MAX_IPV6_PER_PORT) {
				ignored++;
				continue;
			}
			gid_v6(&tbl[next++], (const struct in6_addr *)a[i].addr);
		}
	}
	return ignored;
}
