/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Raw Ethernet steering rules (ibv_create_flow): the fields of a frame that
 * a rule matches, extracted once per frame into a fixed 64-byte key, and a
 * rule as a value/mask pair over that key plus what to do with a frame that
 * matches (deliver to a raw packet QP, with a flow tag, or drop). The façade
 * compiles struct ibv_flow_attr into a rule, shared mode carries it in a
 * request, the port layer's classifier (lib/port/dpv_rawflow.c) applies it.
 */
#ifndef DPV_RAWKEY_H
#define DPV_RAWKEY_H

#include <stdbool.h>
#include <stdint.h>

/** What a rule matches, all multi-byte fields in network order. */
struct dpv_raw_key {
	uint8_t dmac[6];
	uint8_t smac[6];
	uint16_t ethertype;       /**< after an 802.1Q tag */
	uint16_t vlan_tci;        /**< 0 when untagged */
	uint8_t vlan;             /**< 1: the frame has an 802.1Q tag */
	uint8_t ip_ver;           /**< 4, 6, or 0: neither (or a truncated header) */
	uint8_t proto;            /**< IPv4 protocol / IPv6 next header */
	uint8_t tos;              /**< IPv4 TOS / IPv6 traffic class */
	uint8_t ttl;              /**< IPv4 TTL / IPv6 hop limit */
	uint8_t ipv4_flags;       /**< the 3 flag bits of the IPv4 header */
	uint8_t l4;               /**< 1: UDP or TCP ports follow (no later fragment) */
	uint8_t rsvd;
	uint32_t flow_label;      /**< IPv6: the 20-bit flow label */
	uint8_t sip[16];          /**< IPv4: the first 4 bytes */
	uint8_t dip[16];
	uint16_t sport, dport;
};

#define DPV_RAW_KEY_WORDS 8
union dpv_raw_keyw {
	struct dpv_raw_key k;
	uint64_t w[DPV_RAW_KEY_WORDS];
};
_Static_assert(sizeof(struct dpv_raw_key) == 8 * DPV_RAW_KEY_WORDS, "the key is 64 bytes");

/** Rule types (IBV_FLOW_ATTR_*). */
enum dpv_raw_type {
	DPV_RAW_NORMAL = 0,       /**< matches its value/mask */
	DPV_RAW_ALL_DEFAULT = 1,  /**< what no NORMAL rule took and nobody else would */
	DPV_RAW_MC_DEFAULT = 2,   /**< the same, multicast destinations only */
	DPV_RAW_SNIFFER = 3,      /**< a copy of every frame the port receives or a raw QP sends */
};

#define DPV_RAW_F_DROP 0x01u      /**< IBV_FLOW_SPEC_ACTION_DROP: matching frames are dropped */
#define DPV_RAW_F_TAG 0x02u       /**< IBV_FLOW_SPEC_ACTION_TAG: tag in the completion */
#define DPV_RAW_F_DONT_TRAP 0x04u /**< IBV_FLOW_ATTR_FLAGS_DONT_TRAP: a copy, the frame goes on */

/** A steering rule. */
struct dpv_raw_rule {
	union dpv_raw_keyw val;   /**< value, already ANDed with mask */
	union dpv_raw_keyw mask;
	uint32_t qpn;             /**< the raw packet QP that receives */
	uint32_t tag;             /**< flow tag (DPV_RAW_F_TAG) */
	uint32_t handle;          /**< set by the port layer */
	uint16_t priority;        /**< lower first */
	uint8_t type;             /**< enum dpv_raw_type */
	uint8_t flags;            /**< DPV_RAW_F_* */
	uint32_t rsvd;
	uint64_t hw;              /**< the port layer's: its PMD rule (an rte_flow), 0 for none;
				       what a caller passes is overwritten */
};

/** Receive-side scaling of a raw packet QP (IBV_QP_INIT_ATTR_RX_HASH):
 *  the Toeplitz hash of the fields selected (IBV_RX_HASH_* bits: IPv4 and
 *  IPv6 addresses, TCP and UDP ports) picks the receive WQ at hash modulo
 *  the table's size. */
#define DPV_RSS_KEY_LEN 40
#define DPV_RSS_TABLE_MAX 256
struct dpv_rss_cfg {
	uint8_t key[DPV_RSS_KEY_LEN];
	uint32_t n;               /**< table entries, a power of two (0: no RSS) */
	uint64_t fields;          /**< IBV_RX_HASH_* */
	uint32_t wqn[DPV_RSS_TABLE_MAX]; /**< the receive WQs (their QP numbers) */
};

/** The Toeplitz hash of a key's fields as cfg selects them (Microsoft's
 *  RSS order: source and destination address, source and destination
 *  port); 0 when the frame has none of them. */
uint32_t dpv_raw_rss_hash(const struct dpv_rss_cfg *cfg, const union dpv_raw_keyw *key);

/** Extract the key of a frame of len bytes (fields a short frame lacks
 *  stay 0). */
void dpv_raw_key_extract(const uint8_t *frame, uint32_t len, union dpv_raw_keyw *key);

/** Does the key match the rule's value under its mask? */
static inline bool dpv_raw_match(const struct dpv_raw_rule *r, const union dpv_raw_keyw *key)
{
	uint64_t d = 0;
	for (unsigned int i = 0; i < DPV_RAW_KEY_WORDS; i++)
		d |= (key->w[i] & r->mask.w[i]) ^ r->val.w[i];
	return d == 0;
}

/** Is the key's frame a RoCEv2 candidate (UDP to 4791)? */
static inline bool dpv_raw_key_is_roce(const union dpv_raw_keyw *key)
{
	return key->k.ip_ver && key->k.l4 && key->k.proto == 17 && key->k.dport == __builtin_bswap16(4791);
}

#endif
