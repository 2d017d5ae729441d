/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file dpv_shm_proto.h
 * Shared mode: the commands an application (the "remote" driver in
 * drivers/remote) sends to dpverbsd, the daemon that owns the ports and runs
 * the engine. One Unix SOCK_SEQPACKET connection per application process;
 * every request is answered by exactly one response with the same sequence
 * number, in order. File descriptors (completion-channel and async-event
 * pipes, XRC domain files) travel with SCM_RIGHTS. doc/shared-mode.md is
 * the reference; the daemon checks every field (size of the message,
 * numbers owned by the sender, addresses of memory it gave the sender).
 *
 * The data path never crosses the socket: rings, doorbell rings and the
 * hugepage allocator's buffers live in memfd regions that the application
 * creates, seals against resizing and hands to the daemon (MEM_ADD), which
 * maps them too (at another address: every address in a command is the
 * application's, the daemon translates). The doorbell rings come the other
 * way, with the welcome. The application does not run EAL.
 */
#ifndef DPV_SHM_PROTO_H
#define DPV_SHM_PROTO_H

#include <stdint.h>
#include <infiniband/verbs.h>

#include "dpv_param.h"
#include "dpv_rawkey.h"

#define DPV_SHM_VERSION 10
#define DPV_SHM_MAGIC 0x64707673u /* "dpvs" */
#define DPV_SHM_MAX_DEVS 8
#define DPV_SHM_NAME_MAX 64
#define DPV_SHM_MAX_MSG 4096      /* bytes of any message */
#define DPV_SHM_GIDS 16
#define DPV_SHM_MAX_FDS 2         /* descriptors one message carries */

enum dpv_shm_op {
	DPV_SHM_HELLO = 1,        /* answer fd: the doorbell rings and wake word (memfd) */
	DPV_SHM_QUERY_PORT,
	DPV_SHM_CTX_OPEN,         /* fd: the context's async-event pipe (write end);
				     answer fd: the context's command descriptor */
	DPV_SHM_CTX_CLOSE,
	DPV_SHM_CTX_IMPORT,       /* fds: another context's command descriptor, the
				     async-event pipe; answer fd: a command descriptor */
	DPV_SHM_MEM_ADD,          /* fd: a sealed memfd the application mapped */
	DPV_SHM_MEM_DEL,
	DPV_SHM_NUM_RESERVE,      /* an object number (QPN, MR index, ...) */
	DPV_SHM_NUM_RELEASE,
	DPV_SHM_PD_ALLOC,
	DPV_SHM_PD_DEALLOC,
	DPV_SHM_MR_REG,
	DPV_SHM_MR_DEREG,
	DPV_SHM_AH_CREATE,
	DPV_SHM_AH_DESTROY,
	DPV_SHM_CQ_CREATE,        /* fd: completion channel pipe (write end), optional */
	DPV_SHM_CQ_DESTROY,
	DPV_SHM_CQ_RESIZE,
	DPV_SHM_SRQ_CREATE,
	DPV_SHM_SRQ_DESTROY,
	DPV_SHM_QP_CREATE,
	DPV_SHM_QP_DESTROY,
	DPV_SHM_QP_MODIFY,
	DPV_SHM_QP_QUERY,         /* state and transport counters */
	DPV_SHM_SHPD_ALLOC,       /* ibv_alloc_shpd */
	DPV_SHM_SHPD_SHARE,       /* ibv_share_pd */
	DPV_SHM_IMPORT_PD,        /* ibv_import_pd */
	DPV_SHM_IMPORT_MR,        /* ibv_import_mr */
	DPV_SHM_XRCD_OPEN,        /* fd: the file naming the domain (or none) */
	DPV_SHM_XRCD_CLOSE,
	DPV_SHM_OPEN_QP,          /* ibv_open_qp, and ibv_destroy_qp of such a handle */
	DPV_SHM_GSI_LISTEN,       /* dpv_gsi_listen: REQs for a service ID to a GSI QP */
	DPV_SHM_MCAST,            /* ibv_attach_mcast / ibv_detach_mcast */
	DPV_SHM_NEIGH,            /* dpv_query_neigh: the daemon's ARP / ND table */
	DPV_SHM_MW_ALLOC,         /* ibv_alloc_mw */
	DPV_SHM_MW_DEALLOC,       /* ibv_dealloc_mw */
	DPV_SHM_DM_ALLOC,         /* ibv_alloc_dm; answer fd: the device memory (memfd) */
	DPV_SHM_DM_FREE,          /* ibv_free_dm, ibv_unimport_dm */
	DPV_SHM_DM_IMPORT,        /* ibv_import_dm; answer fd: the device memory (memfd) */
	DPV_SHM_FLOW,             /* ibv_create_flow / ibv_destroy_flow */
	DPV_SHM_OP_NR,
};

/** Every message starts with this. */
struct dpv_shm_hdr {
	uint32_t magic;           /**< DPV_SHM_MAGIC */
	uint16_t op;              /**< enum dpv_shm_op */
	uint16_t len;             /**< bytes of the whole message */
	uint64_t seq;             /**< the response repeats it */
	int32_t status;           /**< response: 0 or -errno */
	uint32_t rsvd;
};

/* ---- HELLO ---- */
struct dpv_shm_dev {
	char name[DPV_SHM_NAME_MAX];
	uint8_t mac[6];
	uint8_t rsvd[2];
	uint32_t db_first;        /**< its doorbell rings: index of the first ... */
	uint32_t n_db;            /**< ... and how many (one per engine context) */
	uint8_t gid[DPV_SHM_GIDS][16];
	uint8_t gid_valid[DPV_SHM_GIDS];
	uint8_t gid_ip_ver[DPV_SHM_GIDS];
	uint64_t dm_size;         /**< its device memory (max_dm_size), 0: none */
};

struct dpv_shm_hello {
	uint32_t version;         /**< request: DPV_SHM_VERSION; answer: the daemon's */
	int32_t pid;              /**< request, informational (the daemon trusts SO_PEERCRED);
				       answer: the daemon's pid */
	uint32_t client_id;       /**< answer: the daemon's number for this connection */
	uint32_t n_devs;
	uint32_t pool_last[8];    /**< answer: the number spaces (enum dpv_obj_type) */
	struct dpv_params params; /**< answer: the daemon's limits (the application adopts them) */
	uint64_t tsc_hz;          /**< answer: the TSC frequency the engine uses */
	uint32_t db_size;         /**< answer: slots of each doorbell ring */
	uint32_t n_db;            /**< answer: doorbell rings in the memfd (dpv_db_ring_bytes each) */
	uint64_t db_map_bytes;    /**< answer: bytes of the memfd (rings, then the wake word) */
	uint64_t wake_off;        /**< answer: offset of the application's struct dpv_wake in it */
	struct dpv_shm_dev devs[DPV_SHM_MAX_DEVS];
};

/* ---- generic small requests ---- */
struct dpv_shm_dev_ref {
	uint32_t dev;             /**< device index from the welcome */
	uint32_t ctx;             /**< context id (CTX_OPEN's answer), 0 when none */
};

struct dpv_shm_port {
	uint32_t dev, rsvd;
	struct ibv_port_attr attr; /**< answer */
};

struct dpv_shm_num {
	uint32_t type;            /**< enum dpv_obj_type */
	uint32_t num;
};

struct dpv_shm_mem {
	uint64_t addr;            /**< where the application mapped the memfd */
	uint64_t size;            /**< bytes (the memfd's size) */
};

struct dpv_shm_pd {
	uint32_t dev;
	uint32_t pdn;             /**< a number this connection reserved (PD_ALLOC), or holds */
};
/* PD_DEALLOC drops one handle of the connection on the PD: one it got by
 * SHPD_SHARE or IMPORT_PD if it has one, else its creator's handle. */

struct dpv_shm_mr {
	uint32_t dev;
	uint32_t key;             /**< index << 8 | key; the index reserved by this connection */
	uint32_t pd;
	int32_t access;
	uint64_t addr, iova, length;
	uint32_t pid;             /**< answer: 0 = direct (memory given with MEM_ADD), else the
				       process read/written */
	uint32_t dm;              /**< ibv_reg_dm_mr: a device memory handle the connection
				       holds (0: none); addr and iova are then the MR's
				       zero-based addresses */
	uint64_t dm_offset;       /**< the MR's first byte in the device memory */
};

/* MR_DEREG: -EBUSY while memory windows are bound to the MR. */

/** MW_ALLOC, MW_DEALLOC: a memory window, whose number is one of the MR
 *  pool the connection reserved (windows and MRs share the key space). */
struct dpv_shm_mw {
	uint32_t dev;
	uint32_t key;             /**< rkey: index << 8 | key (DEALLOC: the index names it) */
	uint32_t pd;              /**< ALLOC: a PD the connection may use */
	uint32_t type;            /**< ALLOC: IBV_MW_TYPE_1 or IBV_MW_TYPE_2 */
};

struct dpv_shm_ah {
	uint32_t dev;
	uint32_t handle;
	uint32_t pd;
	uint8_t sgid[16], dgid[16];
	uint8_t ip_ver, tclass, hop_limit, rsvd;
	uint32_t flow_label;
};

struct dpv_shm_cq {
	uint32_t dev;
	uint32_t handle;          /**< reserved by this connection */
	uint32_t ctx;
	uint32_t timestamps;
	uint64_t ring;            /**< in memory given with MEM_ADD */
	uint32_t ring_size;       /**< entries */
	uint32_t has_channel;     /**< an fd comes with the message */
	uint64_t cookie;          /**< written to the channel on a completion event (the
				       client's struct ibv_cq *) and in async events */
	uint32_t ignore_overrun;  /**< IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN: a CQE that does not
				       fit is lost, the CQ does not go to error */
	uint32_t rsvd;
};

struct dpv_shm_srq {
	uint32_t dev;
	uint32_t srqn;
	uint32_t ctx;
	uint32_t pd;
	uint32_t xrcd;            /**< XRC SRQ: domain number (XRCD_OPEN's answer) */
	uint32_t cq;              /**< XRC SRQ: CQ handle */
	uint32_t max_sge;
	uint32_t ring_size, ring_stride;
	uint32_t tm_ops;          /**< tag matching SRQ: ops ring entries (0: not one); its
				       area follows the ring (dpv_tm_area_off), cq its CQ */
	uint64_t ring;
	uint64_t cookie;          /**< the client's struct ibv_srq * */
	uint32_t tm_tags;         /**< tag matching SRQ: max_num_tags */
	uint32_t rsvd;
};

struct dpv_shm_qp {
	uint32_t dev;
	uint32_t qpn;
	uint32_t ctx;
	uint32_t type;            /**< enum ibv_qp_type */
	uint64_t sq, rq;          /**< rings (0: none) */
	uint32_t sq_size, sq_stride, rq_size, rq_stride;
	uint32_t scq, rcq;        /**< CQ handles (0: none) */
	uint32_t srq;             /**< SRQ number (0: none) */
	uint32_t pd, xrcd;
	uint32_t sq_sig_all;
	struct ibv_qp_cap cap;
	uint32_t db;              /**< answer: the doorbell ring that serves the QP */
	uint64_t cookie;          /**< the client's struct ibv_qp * */
	uint32_t gsi;             /**< a GSI QP (dpv_create_gsi_qp) */
	uint32_t gsi_prefix, gsi_mask; /**< answer, GSI QP: the process' comm-ID range */
	uint32_t has_rss;         /**< a raw packet QP with receive-side scaling (no rings, no CQs) */
	struct dpv_rss_cfg rss;   /**< with has_rss: hash and receive WQs (raw QPs of the process) */
};

/** DPV_SHM_GSI_LISTEN. */
struct dpv_shm_gsi_listen {
	uint32_t qpn;             /**< the process' GSI QP */
	uint32_t on;              /**< 1: listen, 0: stop */
	uint64_t service_id;
};

/** DPV_SHM_MCAST. */
struct dpv_shm_mcast {
	uint32_t qpn;             /**< a UD QP of the process */
	uint32_t attach;          /**< 1: attach, 0: detach */
	uint8_t gid[16];          /**< the group (a multicast GID) */
};

/** DPV_SHM_FLOW: a steering rule of a raw packet QP of the process
 *  (create: rule in, handle out; destroy: handle in). */
struct dpv_shm_flow {
	uint32_t qpn;             /**< a raw packet QP of the process */
	uint32_t create;          /**< 1: ibv_create_flow, 0: ibv_destroy_flow */
	uint32_t handle;          /**< the rule (answer of create) */
	uint32_t rsvd;
	struct dpv_raw_rule rule; /**< create: compiled by the façade; qpn and handle are the daemon's */
};

/** dpv_query_neigh through the daemon: status 0 with mac, -EAGAIN while
 *  the port resolves ip (a request goes out if none is outstanding). */
struct dpv_shm_neigh {
	uint32_t dev;             /**< device index from the welcome */
	uint32_t rsvd;
	uint8_t ip[16];           /**< IPv6 or IPv4-mapped (a GID) */
	uint8_t mac[6];           /**< answer */
	uint8_t rsvd2[2];
};

struct dpv_shm_qp_modify {
	uint32_t qpn;
	int32_t mask;
	uint32_t cur, to;         /**< enum ibv_qp_state */
	struct ibv_qp_attr attr;
};

#define DPV_SHM_CNT_MAX 24
struct dpv_shm_qp_query {
	uint32_t qpn;             /**< a QP of the connection, or one it opened (OPEN_QP) */
	uint32_t state;           /**< answer */
	uint64_t cnt[DPV_SHM_CNT_MAX]; /**< answer: enum dpv_cnt order */
	uint32_t handles;         /**< answer: OPEN_QP handles on the QP, every process' */
	uint32_t sq_sig_all;      /**< answer: as created */
	struct ibv_qp_attr attr;  /**< answer: the attributes as the daemon keeps them
				       (cap as created, qp_state the engine's) */
};

struct dpv_shm_shpd {
	uint32_t dev;
	uint32_t pdn;             /**< ALLOC: the PD to share; SHARE: answer */
	uint64_t key;             /**< the share key */
	uint64_t id;              /**< ALLOC: answer; SHARE: request */
};

struct dpv_shm_import {
	uint32_t dev;
	uint32_t ctx;             /**< the importing context (CTX_IMPORT's answer) */
	uint32_t handle;          /**< PD number / MR index */
	uint32_t pdn;             /**< IMPORT_MR answer: the MR's PD */
	uint32_t key;             /**< IMPORT_MR answer: lkey == rkey */
	int32_t access;           /**< IMPORT_MR answer */
	uint64_t addr, iova, length; /**< IMPORT_MR answer */
};

struct dpv_shm_xrcd {
	uint32_t dev;
	int32_t oflags;           /**< open(2) flags given to ibv_open_xrcd */
	uint32_t has_fd;          /**< an fd comes with the message (else anonymous) */
	uint32_t num;             /**< answer: the domain's number; CLOSE: request */
};

/** OPEN_QP: a handle on XRC target QP qpn of a domain the connection
 *  holds (any process' QP); its events go to context ctx, with cookie as
 *  the element. close 1: the handle cookie on qpn goes (the QP stays). */
struct dpv_shm_open_qp {
	uint32_t dev;
	uint32_t xrcd;            /**< domain number */
	uint32_t qpn;
	uint32_t ctx;             /**< the opening context (its async-event pipe) */
	uint64_t cookie;          /**< the handle's struct ibv_qp * */
	uint32_t close;
	uint32_t rsvd;
};

/** DPV_SHM_DM_ALLOC, DPV_SHM_DM_FREE, DPV_SHM_DM_IMPORT: device memory, one
 *  memfd per allocation that the daemon makes and both processes map. */
struct dpv_shm_dm {
	uint32_t dev;
	uint32_t ctx;             /**< IMPORT: the importing context (ALLOC: informational) */
	uint32_t handle;          /**< ALLOC: answer; FREE, IMPORT: request */
	uint32_t log_align;       /**< ALLOC: 2^log_align alignment asked */
	uint64_t length;          /**< ALLOC: request; IMPORT: answer */
	uint64_t map_bytes;       /**< answer: bytes of the memfd that comes with it */
};

/** A message: header and one of the bodies. */
struct dpv_shm_msg {
	struct dpv_shm_hdr h;
	union {
		struct dpv_shm_hello hello;
		struct dpv_shm_dev_ref dev;
		struct dpv_shm_port port;
		struct dpv_shm_num num;
		struct dpv_shm_mem mem;
		struct dpv_shm_pd pd;
		struct dpv_shm_mr mr;
		struct dpv_shm_mw mw;
		struct dpv_shm_ah ah;
		struct dpv_shm_cq cq;
		struct dpv_shm_srq srq;
		struct dpv_shm_qp qp;
		struct dpv_shm_qp_modify qpm;
		struct dpv_shm_qp_query qpq;
		struct dpv_shm_shpd shpd;
		struct dpv_shm_import imp;
		struct dpv_shm_xrcd xrcd;
		struct dpv_shm_open_qp oqp;
		struct dpv_shm_gsi_listen gsil;
		struct dpv_shm_mcast mcast;
		struct dpv_shm_neigh neigh;
		struct dpv_shm_dm dm;
		struct dpv_shm_flow flow;
		uint8_t raw[DPV_SHM_MAX_MSG - sizeof(struct dpv_shm_hdr)];
	} u;
};

/** Bytes of the body of op (request and answer have one layout); 0 if op
 *  is unknown. */
size_t dpv_shm_body_len(uint16_t op);

/**
 * Send msg (msg->h.len bytes) on sock with the nfd descriptors of fds
 * attached (nfd <= DPV_SHM_MAX_FDS).
 * @return 0 or -errno.
 */
int dpv_shm_send(int sock, const struct dpv_shm_msg *msg, const int *fds, unsigned int nfd);

/**
 * Receive one message into msg; fds[0..DPV_SHM_MAX_FDS-1] get the
 * descriptors that came with it (-1 where none; the caller owns them).
 * Waits at most timeout_ms (-1: forever).
 * @return its length, 0 when the peer closed, -ETIMEDOUT or -errno; -EPROTO
 * for a message that is not a dpverbs message (bad magic or length).
 */
int dpv_shm_recv(int sock, struct dpv_shm_msg *msg, int fds[DPV_SHM_MAX_FDS], int timeout_ms);

/** Close the descriptors of fds that are set (>= 0) and mark them -1. */
void dpv_shm_close_fds(int fds[DPV_SHM_MAX_FDS]);

/** Default socket of the daemon when the configuration names none. */
#define DPV_SHM_DEFAULT_SOCKET "/run/dpverbs/dpverbsd.sock"

#endif /* DPV_SHM_PROTO_H */
