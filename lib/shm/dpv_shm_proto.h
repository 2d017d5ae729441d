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
 * The data path never crosses the socket: rings and doorbells live in DPDK
 * shared hugepage memory, which the application maps at the same addresses
 * as the daemon (it is a DPDK secondary process of the daemon).
 */
#ifndef DPV_SHM_PROTO_H
#define DPV_SHM_PROTO_H

#include <stdint.h>
#include <infiniband/verbs.h>

#define DPV_SHM_VERSION 1
#define DPV_SHM_MAGIC 0x64707673u /* "dpvs" */
#define DPV_SHM_MAX_DEVS 8
#define DPV_SHM_NAME_MAX 64
#define DPV_SHM_MAX_MSG 1024      /* bytes of any message */
#define DPV_SHM_GIDS 16

enum dpv_shm_op {
	DPV_SHM_HELLO = 1,
	DPV_SHM_QUERY_PORT,
	DPV_SHM_CTX_OPEN,         /* fd: the context's async-event pipe (write end) */
	DPV_SHM_CTX_CLOSE,
	DPV_SHM_QUEUE_ALLOC,      /* ring memory in shared hugepage memory */
	DPV_SHM_QUEUE_FREE,
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
	DPV_SHM_IMPORT_PD,        /* ibv_import_pd: a PD handle of this connection */
	DPV_SHM_IMPORT_MR,        /* ibv_import_mr */
	DPV_SHM_XRCD_OPEN,        /* fd: the file naming the domain (or none) */
	DPV_SHM_XRCD_CLOSE,
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
struct dpv_shm_hello {
	uint32_t version;         /**< DPV_SHM_VERSION */
	int32_t pid;              /**< informational: the daemon trusts SO_PEERCRED */
};

struct dpv_shm_dev {
	char name[DPV_SHM_NAME_MAX];
	uint8_t mac[6];
	uint8_t rsvd[2];
	uint8_t gid[DPV_SHM_GIDS][16];
	uint8_t gid_valid[DPV_SHM_GIDS];
	uint8_t gid_ip_ver[DPV_SHM_GIDS];
};

struct dpv_shm_welcome {
	uint32_t version;
	uint32_t client_id;       /**< the daemon's number for this connection */
	char file_prefix[DPV_SHM_NAME_MAX]; /**< EAL prefix to attach to (secondary) */
	uint32_t n_devs;
	uint32_t pool_last[8];    /**< the number spaces (enum dpv_obj_type): must match */
	struct dpv_shm_dev devs[DPV_SHM_MAX_DEVS];
};

/* ---- generic small requests ---- */
struct dpv_shm_dev_ref {
	uint32_t dev;             /**< device index from the welcome */
	uint32_t ctx;             /**< context id (CTX_OPEN's answer), 0 when none */
};

struct dpv_shm_num {
	uint32_t type;            /**< enum dpv_obj_type */
	uint32_t num;
};

struct dpv_shm_queue {
	uint32_t dev;
	uint32_t rsvd;
	uint64_t size, align;     /**< request */
	uint64_t addr;            /**< answer; QUEUE_FREE: the address */
};

struct dpv_shm_pd {
	uint32_t dev;
	uint32_t pdn;             /**< a number this connection reserved (PD_ALLOC), or holds */
};

struct dpv_shm_mr {
	uint32_t dev;
	uint32_t key;             /**< index << 8 | key; the index reserved by this connection */
	uint32_t pd;
	int32_t access;
	uint64_t addr, iova, length;
	uint32_t pid;             /**< answer: 0 = direct (shared memory), else the process read/written */
	uint32_t rsvd;
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
	uint64_t ring;            /**< from QUEUE_ALLOC */
	uint64_t cookie;          /**< written to the channel on a completion event (the
				       client's struct ibv_cq *) and in async events */
	uint32_t has_channel;     /**< an fd comes with the message */
	uint32_t rsvd;
};

struct dpv_shm_srq {
	uint32_t dev;
	uint32_t srqn;
	uint32_t ctx;
	uint32_t pd;
	uint32_t xrcd;
	uint32_t cq;              /**< XRC SRQ: CQ handle */
	uint32_t max_sge;
	uint32_t rsvd;
	uint64_t ring;
	uint64_t cookie;          /**< the client's struct ibv_srq * */
};

struct dpv_shm_qp {
	uint32_t dev;
	uint32_t qpn;
	uint32_t ctx;
	uint32_t type;            /**< enum ibv_qp_type */
	uint64_t sq, rq;          /**< rings (0: none) */
	uint32_t scq, rcq;        /**< CQ handles (0: none) */
	uint32_t srq;             /**< SRQ number (0: none) */
	uint32_t pd, xrcd;
	uint32_t sq_sig_all;
	struct ibv_qp_cap cap;
	uint64_t cookie;          /**< the client's struct ibv_qp * */
	char db_ring[32];         /**< answer: the engine context's doorbell ring */
};

struct dpv_shm_qp_modify {
	uint32_t qpn;
	int32_t mask;
	uint32_t cur, to;         /**< enum ibv_qp_state */
	struct ibv_qp_attr attr;
};

#define DPV_SHM_CNT_MAX 24
struct dpv_shm_qp_query {
	uint32_t qpn;
	uint32_t state;           /**< answer */
	uint64_t cnt[DPV_SHM_CNT_MAX]; /**< answer: enum dpv_cnt order */
};

struct dpv_shm_shpd {
	uint32_t dev;
	uint32_t pdn;             /**< ALLOC: the PD to share; SHARE: answer */
	uint64_t key;             /**< the share key */
	uint64_t id;              /**< ALLOC: answer; SHARE: request */
};

struct dpv_shm_import {
	uint32_t dev;
	uint32_t handle;          /**< PD handle / MR handle (index) */
	uint32_t pdn;             /**< answer (IMPORT_MR: the MR's PD) */
	uint32_t key;             /**< IMPORT_MR answer: lkey == rkey */
	int32_t access;           /**< IMPORT_MR answer */
	uint32_t rsvd;
	uint64_t addr, length;    /**< IMPORT_MR answer */
};

struct dpv_shm_xrcd {
	uint32_t dev;
	int32_t oflags;           /**< open(2) flags given to ibv_open_xrcd */
	uint32_t has_fd;          /**< an fd comes with the message */
	uint32_t num;             /**< answer: the domain's number; CLOSE: request */
	uint32_t handle;          /**< answer: this opening's handle; CLOSE: request */
	uint32_t rsvd;
};

/** A message: header and one of the bodies. */
struct dpv_shm_msg {
	struct dpv_shm_hdr h;
	union {
		struct dpv_shm_hello hello;
		struct dpv_shm_welcome welcome;
		struct dpv_shm_dev_ref dev;
		struct dpv_shm_num num;
		struct dpv_shm_queue queue;
		struct dpv_shm_pd pd;
		struct dpv_shm_mr mr;
		struct dpv_shm_ah ah;
		struct dpv_shm_cq cq;
		struct dpv_shm_srq srq;
		struct dpv_shm_qp qp;
		struct dpv_shm_qp_modify qpm;
		struct dpv_shm_qp_query qpq;
		struct dpv_shm_shpd shpd;
		struct dpv_shm_import imp;
		struct dpv_shm_xrcd xrcd;
		struct ibv_port_attr port;
		uint8_t raw[DPV_SHM_MAX_MSG - sizeof(struct dpv_shm_hdr)];
	} u;
};

/** Bytes of the body a request of op carries (0 if op is unknown). */
size_t dpv_shm_req_len(uint16_t op);

/**
 * Send msg (msg->h.len bytes) on sock, with fd (>= 0) attached.
 * @return 0 or -errno.
 */
int dpv_shm_send(int sock, const struct dpv_shm_msg *msg, int fd);

/**
 * Receive one message into msg; *fd gets a descriptor that came with it
 * (-1 if none; the caller owns it). Waits at most timeout_ms (-1: forever).
 * @return its length, 0 when the peer closed, -ETIMEDOUT or -errno; -EPROTO
 * for a message that is not a dpverbs message (bad magic or length).
 */
int dpv_shm_recv(int sock, struct dpv_shm_msg *msg, int *fd, int timeout_ms);

/** Default socket of the daemon when the configuration names none. */
#define DPV_SHM_DEFAULT_SOCKET "/run/dpverbs/dpverbsd.sock"

#endif /* DPV_SHM_PROTO_H */
