/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file dpv_cm_mad.h
 * Communication Management MADs (IBA Vol 1 ch. 12.6 and 13.4): the 256-byte
 * management datagram the connection manager sends and receives on QP1, as
 * host-order C structs, with an encoder and a decoder. Pure: no I/O, no
 * allocation, no global state; libc only.
 *
 * On RoCEv2 a CM MAD is the whole payload of a UD SEND ONLY (BTH opcode
 * 0x64) to destination QP 1 with DETH Q_Key 0x80010000 and source QP 1,
 * P_Key 0xffff: the layout below starts after BTH+DETH and is exactly
 * DPV_MAD_SIZE bytes (test/data/wire/rdma_cm_send.pcap, Linux rxe).
 *
 * Byte order and bits: every multi-byte field is big endian on the wire; a
 * field narrower than its bytes occupies the most significant bits first
 * (IBA's bit numbering), e.g. the REQ local QPN is the top 24 bits of the
 * 32-bit word at data byte 32 and responder resources its last byte.
 * The encoder writes every reserved bit as 0; the decoder ignores reserved
 * bits (IBA: receivers do not check them).
 *
 * Messages: REQ, MRA, REJ, REP, RTU, DREQ, DREP, SIDR_REQ, SIDR_REP. LAP and
 * APR (alternate path load/response, attributes 0x0019/0x001A) are not
 * encoded: Linux's rdma_cm never sends them (it sets up no alternate path,
 * and RoCE has no path migration); the decoder reports them as -EOPNOTSUPP
 * so a connection manager can tell "known but unsupported" from garbage.
 * ClassPortInfo (0x0001) is likewise -EOPNOTSUPP.
 *
 * Vendor ID fields (Enhanced Connection Establishment, IBTA 1.4; Linux
 * "ece") are carried in REQ, REP and SIDR_REP; the ECE options travel in the
 * MAD header's attribute modifier, which the header struct carries as is.
 */
#ifndef DPV_CM_MAD_H
#define DPV_CM_MAD_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the MAD (IBA 13.4.2, 13.4.3) ---- */
#define DPV_MAD_SIZE 256          /**< bytes of every CM MAD */
#define DPV_MAD_HDR_LEN 24        /**< the common MAD header */
#define DPV_MAD_DATA_LEN 232      /**< the CM message after the header */

#define DPV_MAD_BASE_VERSION 1    /**< IB base version (OPA's 0x80 is not accepted) */
#define DPV_MGMT_CLASS_CM 0x07    /**< Communication Management class */
#define DPV_CM_CLASS_VERSION 2    /**< the CM class version Linux ib_cm speaks */
#define DPV_MAD_METHOD_SEND 0x03  /**< every CM message is a Send() */

/** GSI: the CM's queue pair and its well-known Q_Key (IBA 13.5.1). */
#define DPV_GSI_QPN 1
#define DPV_GSI_QKEY 0x80010000u

/** CM attribute IDs (IBA table 104). */
enum dpv_cm_attr {
	DPV_CM_ATTR_CLASS_PORT_INFO = 0x0001, /**< not supported (-EOPNOTSUPP) */
	DPV_CM_ATTR_REQ = 0x0010,
	DPV_CM_ATTR_MRA = 0x0011,
	DPV_CM_ATTR_REJ = 0x0012,
	DPV_CM_ATTR_REP = 0x0013,
	DPV_CM_ATTR_RTU = 0x0014,
	DPV_CM_ATTR_DREQ = 0x0015,
	DPV_CM_ATTR_DREP = 0x0016,
	DPV_CM_ATTR_SIDR_REQ = 0x0017,
	DPV_CM_ATTR_SIDR_REP = 0x0018,
	DPV_CM_ATTR_LAP = 0x0019,             /**< not supported (-EOPNOTSUPP) */
	DPV_CM_ATTR_APR = 0x001a,             /**< not supported (-EOPNOTSUPP) */
};

/* Private data bytes of each message (IBA tables 106-120). */
#define DPV_CM_REQ_PRIVATE_LEN 92
#define DPV_CM_MRA_PRIVATE_LEN 222
#define DPV_CM_REJ_PRIVATE_LEN 148
#define DPV_CM_REP_PRIVATE_LEN 196
#define DPV_CM_RTU_PRIVATE_LEN 224
#define DPV_CM_DREQ_PRIVATE_LEN 220
#define DPV_CM_DREP_PRIVATE_LEN 224
#define DPV_CM_SIDR_REQ_PRIVATE_LEN 216
#define DPV_CM_SIDR_REP_PRIVATE_LEN 136
#define DPV_CM_REJ_ARI_LEN 72         /**< REJ additional reject information */
#define DPV_CM_SIDR_REP_INFO_LEN 72   /**< SIDR_REP additional information */

/** REQ transport service type (2 bits) and extended transport type (3 bits). */
enum dpv_cm_tst {
	DPV_CM_TST_RC = 0,
	DPV_CM_TST_UC = 1,
	DPV_CM_TST_RD = 2,
	DPV_CM_TST_EXTENDED = 3,      /**< see extended_transport_type */
};
#define DPV_CM_EXT_TRANSPORT_XRC 1  /**< with DPV_CM_TST_EXTENDED */

/** MRA "message MRAed" and REJ "message rejected" (2 bits). */
enum dpv_cm_msg_ref {
	DPV_CM_MSG_REQ = 0,
	DPV_CM_MSG_REP = 1,
	DPV_CM_MSG_OTHER = 2,         /**< LAP for MRA; REJ: anything else */
};

/** REJ reason codes (IBA table 109), numbered as Linux ib_cm_rej_reason. */
enum dpv_cm_rej_reason {
	DPV_CM_REJ_NO_QP = 1,
	DPV_CM_REJ_NO_EEC = 2,
	DPV_CM_REJ_NO_RESOURCES = 3,
	DPV_CM_REJ_TIMEOUT = 4,
	DPV_CM_REJ_UNSUPPORTED = 5,
	DPV_CM_REJ_INVALID_COMM_ID = 6,
	DPV_CM_REJ_INVALID_COMM_INSTANCE = 7,
	DPV_CM_REJ_INVALID_SERVICE_ID = 8,
	DPV_CM_REJ_INVALID_TRANSPORT_TYPE = 9,
	DPV_CM_REJ_STALE_CONN = 10,
	DPV_CM_REJ_RDC_NOT_EXIST = 11,
	DPV_CM_REJ_INVALID_GID = 12,
	DPV_CM_REJ_INVALID_LID = 13,
	DPV_CM_REJ_INVALID_SL = 14,
	DPV_CM_REJ_INVALID_TRAFFIC_CLASS = 15,
	DPV_CM_REJ_INVALID_HOP_LIMIT = 16,
	DPV_CM_REJ_INVALID_PACKET_RATE = 17,
	DPV_CM_REJ_INVALID_ALT_GID = 18,
	DPV_CM_REJ_INVALID_ALT_LID = 19,
	DPV_CM_REJ_INVALID_ALT_SL = 20,
	DPV_CM_REJ_INVALID_ALT_TRAFFIC_CLASS = 21,
	DPV_CM_REJ_INVALID_ALT_HOP_LIMIT = 22,
	DPV_CM_REJ_INVALID_ALT_PACKET_RATE = 23,
	DPV_CM_REJ_PORT_CM_REDIRECT = 24,
	DPV_CM_REJ_PORT_REDIRECT = 25,
	DPV_CM_REJ_INVALID_MTU = 26,
	DPV_CM_REJ_INSUFFICIENT_RESP_RESOURCES = 27,
	DPV_CM_REJ_CONSUMER_DEFINED = 28,
	DPV_CM_REJ_INVALID_RNR_RETRY = 29,
	DPV_CM_REJ_DUPLICATE_LOCAL_COMM_ID = 30,
	DPV_CM_REJ_INVALID_CLASS_VERSION = 31,
	DPV_CM_REJ_INVALID_FLOW_LABEL = 32,
	DPV_CM_REJ_INVALID_ALT_FLOW_LABEL = 33,
	DPV_CM_REJ_VENDOR_OPTION_NOT_SUPPORTED = 35,
};

/** SIDR_REP status (IBA table 121). */
enum dpv_cm_sidr_status {
	DPV_CM_SIDR_SUCCESS = 0,
	DPV_CM_SIDR_UNSUPPORTED = 1,  /**< service ID not supported */
	DPV_CM_SIDR_REJECT = 2,
	DPV_CM_SIDR_NO_QP = 3,
	DPV_CM_SIDR_REDIRECT = 4,
	DPV_CM_SIDR_UNSUPPORTED_VERSION = 5,
};

/** The common MAD header (IBA 13.4.3, 24 bytes), host order. */
struct dpv_mad_hdr {
	uint8_t base_version;     /**< DPV_MAD_BASE_VERSION */
	uint8_t mgmt_class;       /**< DPV_MGMT_CLASS_CM */
	uint8_t class_version;    /**< DPV_CM_CLASS_VERSION */
	uint8_t method;           /**< DPV_MAD_METHOD_SEND (R bit and method) */
	uint16_t status;          /**< 0 in every CM Send */
	uint16_t class_specific;  /**< 0 for the CM class */
	uint64_t tid;             /**< transaction ID */
	uint16_t attr_id;         /**< enum dpv_cm_attr */
	uint32_t attr_mod;        /**< attribute modifier (ECE options in REQ/REP) */
};

/*
 * Field comments give the wire width in bits where it is not the member's
 * whole size; the encoder rejects a value that does not fit (-EINVAL).
 * Flags (1 bit) are 0 or 1.
 */

/** A REQ path (primary or alternate; IBA table 106). */
struct dpv_cm_path {
	uint16_t local_lid;           /**< 0xffff on RoCE (permissive LID) */
	uint16_t remote_lid;
	uint8_t local_gid[16];        /**< the active side's GID */
	uint8_t remote_gid[16];
	uint32_t flow_label;          /**< 20 bits */
	uint8_t packet_rate;          /**< 6 bits, IBA static rate (0: port current) */
	uint8_t traffic_class;
	uint8_t hop_limit;
	uint8_t sl;                   /**< 4 bits */
	uint8_t subnet_local;         /**< 1 bit */
	uint8_t local_ack_timeout;    /**< 5 bits: 4.096 us * 2^n */
};

/** REQ, connection request (IBA 12.6.5, table 106). */
struct dpv_cm_req {
	uint32_t local_comm_id;
	uint32_t vendor_id;           /**< 24 bits (ECE) */
	uint64_t service_id;
	uint64_t local_ca_guid;
	uint32_t local_qkey;
	uint32_t local_qpn;           /**< 24 bits */
	uint8_t responder_resources;
	uint32_t local_eecn;          /**< 24 bits */
	uint8_t initiator_depth;
	uint32_t remote_eecn;         /**< 24 bits */
	uint8_t remote_cm_response_timeout; /**< 5 bits */
	uint8_t transport_service_type;     /**< 2 bits, enum dpv_cm_tst */
	uint8_t end_to_end_flow_control;    /**< 1 bit */
	/**
	 * 24 bits. The PSN the *passive* side sends first, i.e. the active
	 * side's expected receive PSN (Linux sets the active QP's rq_psn to
	 * it; rdma_cm_send.pcap: REQ 0x07c411, then the server's first SEND).
	 */
	uint32_t starting_psn;
	uint8_t local_cm_response_timeout;  /**< 5 bits */
	uint8_t retry_count;                /**< 3 bits */
	uint16_t pkey;
	uint8_t path_mtu;             /**< 4 bits, IB MTU enum (3 = 1024) */
	uint8_t rdc_exists;           /**< 1 bit */
	uint8_t rnr_retry_count;      /**< 3 bits */
	uint8_t max_cm_retries;       /**< 4 bits */
	uint8_t srq;                  /**< 1 bit */
	uint8_t extended_transport_type; /**< 3 bits */
	struct dpv_cm_path primary;
	struct dpv_cm_path alternate; /**< all zero when there is none */
	uint8_t sap_supported;        /**< 1 bit (IBTA 1.4) */
	uint8_t private_data[DPV_CM_REQ_PRIVATE_LEN];
};

/** MRA, message receipt acknowledgement (IBA table 107). */
struct dpv_cm_mra {
	uint32_t local_comm_id;
	uint32_t remote_comm_id;
	uint8_t message_mraed;        /**< 2 bits, enum dpv_cm_msg_ref */
	uint8_t service_timeout;      /**< 5 bits */
	uint8_t private_data[DPV_CM_MRA_PRIVATE_LEN];
};

/** REJ, reject (IBA table 108). */
struct dpv_cm_rej {
	uint32_t local_comm_id;
	uint32_t remote_comm_id;      /**< 0 when rejecting a REQ not yet answered */
	uint8_t message_rejected;     /**< 2 bits, enum dpv_cm_msg_ref */
	uint8_t ari_length;           /**< 7 bits on the wire; at most DPV_CM_REJ_ARI_LEN */
	uint16_t reason;              /**< enum dpv_cm_rej_reason */
	uint8_t ari[DPV_CM_REJ_ARI_LEN];
	uint8_t private_data[DPV_CM_REJ_PRIVATE_LEN];
};

/** REP, reply to a REQ (IBA table 110). */
struct dpv_cm_rep {
	uint32_t local_comm_id;
	uint32_t remote_comm_id;
	uint32_t local_qkey;
	uint32_t local_qpn;           /**< 24 bits */
	uint32_t local_eecn;          /**< 24 bits */
	/** 24 bits: the PSN the *active* side sends first (passive rq_psn). */
	uint32_t starting_psn;
	uint32_t vendor_id;           /**< 24 bits (ECE), in three bytes on the wire */
	uint8_t responder_resources;
	uint8_t initiator_depth;
	uint8_t target_ack_delay;     /**< 5 bits */
	uint8_t failover_accepted;    /**< 2 bits */
	uint8_t end_to_end_flow_control; /**< 1 bit */
	uint8_t rnr_retry_count;      /**< 3 bits */
	uint8_t srq;                  /**< 1 bit */
	uint64_t local_ca_guid;
	uint8_t private_data[DPV_CM_REP_PRIVATE_LEN];
};

/** RTU, ready to use (IBA table 111). */
struct dpv_cm_rtu {
	uint32_t local_comm_id;
	uint32_t remote_comm_id;
	uint8_t private_data[DPV_CM_RTU_PRIVATE_LEN];
};

/** DREQ, disconnection request (IBA table 112). */
struct dpv_cm_dreq {
	uint32_t local_comm_id;
	uint32_t remote_comm_id;
	uint32_t remote_qpn_eecn;     /**< 24 bits: the receiver's QPN */
	uint8_t private_data[DPV_CM_DREQ_PRIVATE_LEN];
};

/** DREP, disconnection reply (IBA table 113). */
struct dpv_cm_drep {
	uint32_t local_comm_id;
	uint32_t remote_comm_id;
	uint8_t private_data[DPV_CM_DREP_PRIVATE_LEN];
};

/** SIDR_REQ, service ID resolution request (IBA table 119). */
struct dpv_cm_sidr_req {
	uint32_t request_id;
	uint16_t pkey;
	uint64_t service_id;
	uint8_t private_data[DPV_CM_SIDR_REQ_PRIVATE_LEN];
};

/** SIDR_REP, service ID resolution response (IBA table 120). */
struct dpv_cm_sidr_rep {
	uint32_t request_id;
	uint8_t status;               /**< enum dpv_cm_sidr_status */
	uint8_t info_length;          /**< at most DPV_CM_SIDR_REP_INFO_LEN */
	uint32_t vendor_id;           /**< 24 bits (ECE), split around the QPN on the wire */
	uint32_t qpn;                 /**< 24 bits */
	uint64_t service_id;
	uint32_t qkey;
	uint8_t info[DPV_CM_SIDR_REP_INFO_LEN]; /**< ClassPortInfo on redirect */
	uint8_t private_data[DPV_CM_SIDR_REP_PRIVATE_LEN];
};

/** A decoded CM MAD: the header, and the message hdr.attr_id names. */
struct dpv_cm_mad {
	struct dpv_mad_hdr hdr;
	union {
		struct dpv_cm_req req;
		struct dpv_cm_mra mra;
		struct dpv_cm_rej rej;
		struct dpv_cm_rep rep;
		struct dpv_cm_rtu rtu;
		struct dpv_cm_dreq dreq;
		struct dpv_cm_drep drep;
		struct dpv_cm_sidr_req sidr_req;
		struct dpv_cm_sidr_rep sidr_rep;
	};
};

/**
 * Writes a common MAD header (any class) into the first DPV_MAD_HDR_LEN
 * bytes of mad; the reserved 16 bits after the attribute ID are zeroed.
 * No field is checked.
 *
 * RETURN VALUE: 0, or -EINVAL when h or mad is NULL.
 */
int dpv_mad_hdr_encode(const struct dpv_mad_hdr *h, uint8_t *mad);

/**
 * Reads a common MAD header (any class, no field checked).
 *
 * RETURN VALUE: 0; -EINVAL when mad or h is NULL; -EBADMSG when len is
 * shorter than DPV_MAD_HDR_LEN.
 */
int dpv_mad_hdr_decode(const uint8_t *mad, size_t len, struct dpv_mad_hdr *h);

/**
 * Zeroes m and fills its header for a CM message: base version 1, class
 * 0x07, class version 2, method Send, status 0, the given attribute ID and
 * transaction ID, attribute modifier 0. Does nothing when m is NULL.
 *
 * RETURN VALUE: none.
 */
void dpv_cm_mad_init(struct dpv_cm_mad *m, uint16_t attr_id, uint64_t tid);

/**
 * Encodes a CM MAD: m->hdr, then the message m->hdr.attr_id selects, into
 * exactly DPV_MAD_SIZE bytes at out, every reserved bit zero. Bytes of out
 * are undefined after a failure.
 *
 * RETURN VALUE: 0 on success, or a negative errno value:
 *  - -EINVAL: m or out is NULL; the header is not a CM Send (base version,
 *    class, class version or method differ from the DPV_* constants);
 *    a field does not fit its wire width (24-bit QPN >= 2^24, a 5-bit
 *    timeout > 31, a flag > 1, ...); REJ ari_length or SIDR_REP info_length
 *    over 72;
 *    hdr.attr_id is not a CM attribute;
 *  - -EOPNOTSUPP: hdr.attr_id is LAP, APR or ClassPortInfo (CM attributes
 *    this codec does not encode).
 */
int dpv_cm_mad_encode(const struct dpv_cm_mad *m, uint8_t out[DPV_MAD_SIZE]);

/**
 * Decodes a CM MAD of len bytes into m (zeroed first, also on failure: a
 * failed decode leaves no partial message). Reserved bits are ignored.
 *
 * RETURN VALUE: 0 on success, or a negative errno value:
 *  - -EINVAL: mad or m is NULL;
 *  - -EBADMSG: len is not DPV_MAD_SIZE (a truncated or overlong payload);
 *    base version not 1, class not CM, class version not 2, method not
 *    Send; an attribute ID the CM class does not define; REJ reject info
 *    length or SIDR_REP additional information length over 72;
 *  - -EOPNOTSUPP: a CM attribute this codec does not decode (LAP, APR,
 *    ClassPortInfo); m->hdr is filled in that case.
 */
int dpv_cm_mad_decode(const uint8_t *mad, size_t len, struct dpv_cm_mad *m);

/**
 * The private data of the message m->hdr.attr_id selects.
 * @param m a CM MAD
 * @param[out] len its length in bytes (DPV_CM_*_PRIVATE_LEN); may be NULL
 *
 * RETURN VALUE: a pointer into m (the private data always ends the MAD),
 * or NULL with *len set to 0 for an attribute without a message here or a
 * NULL m. No errno.
 */
uint8_t *dpv_cm_mad_private_data(struct dpv_cm_mad *m, size_t *len);

/**
 * The IBA name of a CM attribute ("REQ", "SIDR_REP", "LAP", ...).
 *
 * RETURN VALUE: a static string, never NULL; "unknown" for an attribute
 * the CM class lacks. No errno.
 */
const char *dpv_cm_attr_name(uint16_t attr_id);

#ifdef __cplusplus
}
#endif
#endif /* DPV_CM_MAD_H */
