/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file dpverbs.h
 * dpverbs' public extensions to rdma-core's verbs API (<infiniband/verbs.h>).
 *
 * - Resource types passed to the custom allocators of a parent domain
 *   (ibv_alloc_parent_domain(3)): the upper 32 bits are dpverbs' driver id,
 *   the lower 32 bits one of enum dpv_resource_code.
 * - A ready allocator that places those buffers in DPDK hugepage memory.
 */
#ifndef DPVERBS_H
#define DPVERBS_H

#include <stddef.h>
#include <stdint.h>
#include <infiniband/verbs.h>

#ifdef __cplusplus
extern "C" {
#endif

/** dpverbs' driver id (upper 32 bits of a resource type): "DP" */
#define DPV_DRIVER_ID 0x4450u

/** Buffers dpverbs allocates per object (lower 32 bits of a resource type). */
enum dpv_resource_code {
	DPV_RES_QP = 1,        /**< the QP object (state, locks, counters) */
	DPV_RES_QP_SQ = 2,     /**< RC/UC/XRC send queue ring of WQEs */
	DPV_RES_QP_RQ = 3,     /**< receive queue ring of WQEs */
	DPV_RES_QP_RC = 4,     /**< connected-transport state (PSNs, timers) */
	DPV_RES_QP_WRB = 5,    /**< ibv_wr_* batch (WRs, SGEs, inline bytes) */
	DPV_RES_CQ = 6,        /**< the CQ object */
	DPV_RES_CQ_RING = 7,   /**< CQ ring of completions */
	DPV_RES_SRQ = 8,       /**< the SRQ object */
	DPV_RES_SRQ_RING = 9,  /**< SRQ ring of receive WQEs */
	DPV_RES_NR = 10,
};

/** The resource_type value an allocator receives for a code. */
#define DPV_RESOURCE_TYPE(code) (((uint64_t)DPV_DRIVER_ID << 32) | (uint32_t)(code))
/** The code of a resource_type (0 if it is not dpverbs'). */
#define DPV_RESOURCE_CODE(type) \
	((uint32_t)((type) >> 32) == DPV_DRIVER_ID ? (uint32_t)(type) : 0u)

/* ---- Hugepage allocator ---- */

/** Opaque: pools of DPDK hugepage memory for one NUMA socket. */
struct dpv_hugepage_allocator;

/** Statistics of one resource code. */
struct dpv_hugepage_stats {
	uint64_t bytes;        /**< bytes currently allocated */
	uint64_t objects;      /**< buffers currently allocated */
	uint64_t allocs;       /**< successful allocations so far */
	uint64_t frees;        /**< frees so far */
	uint64_t failures;     /**< allocations that failed */
};

/**
 * Create a hugepage allocator: buffers come from DPDK mempools (one per
 * size class, 4 KiB to 1 MiB) in hugepage memory on NUMA socket `socket`
 * (-1: the caller's socket), larger ones from rte_zmalloc_socket. Buffers
 * are zeroed and never copy-on-write (hugepage mappings are shared).
 * Initialises dpverbs (and EAL) if needed.
 *
 * @return the allocator, or NULL with errno: ENODEV (dpverbs could not
 *   start), EINVAL (socket is neither -1 nor a NUMA socket of this machine),
 *   ENOMEM.
 */
struct dpv_hugepage_allocator *dpv_hugepage_allocator_create(int socket);

/**
 * Destroy an allocator. @return 0, EINVAL for NULL, EBUSY while buffers are
 * still allocated from it (nothing is freed then).
 */
int dpv_hugepage_allocator_destroy(struct dpv_hugepage_allocator *a);

/**
 * The alloc callback for struct ibv_parent_domain_init_attr; pd_context must
 * be the allocator. Returns a zeroed buffer aligned to `alignment` (at least
 * 64 bytes), or NULL if hugepage memory is exhausted.
 */
void *dpv_hugepage_alloc(struct ibv_pd *pd, void *pd_context, size_t size, size_t alignment,
			 uint64_t resource_type);

/** The free callback matching dpv_hugepage_alloc. */
void dpv_hugepage_free(struct ibv_pd *pd, void *pd_context, void *ptr, uint64_t resource_type);

/**
 * Statistics per resource code (index = enum dpv_resource_code; index 0
 * counts types that are not dpverbs'). @return 0, or EINVAL (NULL, code out
 * of range).
 */
int dpv_hugepage_stats(const struct dpv_hugepage_allocator *a, uint32_t code,
		       struct dpv_hugepage_stats *out);

/**
 * Is ptr inside DPDK hugepage memory (a memseg)? @return 1 yes, 0 no.
 */
int dpv_is_hugepage_memory(const void *ptr);

/**
 * Fill attr (pd, td, comp_mask with ALLOCATORS and PD_CONTEXT, alloc, free,
 * pd_context) for a parent domain whose buffers come from a.
 */
void dpv_hugepage_parent_domain_attr(struct dpv_hugepage_allocator *a, struct ibv_pd *pd,
				     struct ibv_td *td, struct ibv_parent_domain_init_attr *attr);

/* ------------------------------------------------------------------------
 * Shared protection domains (shared mode: dpverbsd), as MLNX_OFED's
 * ibv_alloc_shpd(3) / ibv_share_pd(3).
 */

/**
 * The identity of a shared PD: plain bytes that one process may hand to
 * another (pipe, socket, file) together with the share key.
 */
struct ibv_shpd {
	uint64_t id;              /**< the share id dpverbsd gave the PD */
	uint64_t rsvd[3];
};

/**
 * Make pd shareable with another process: writes the PD's unique id into
 * *shpd. Only once per PD.
 * @return shpd, or NULL with errno: EINVAL (NULL pd or shpd, a parent
 * domain), EBUSY (the PD is shared already), EOPNOTSUPP (embedded mode: no
 * daemon to share through), EIO (the daemon is gone).
 */
struct ibv_shpd *ibv_alloc_shpd(struct ibv_pd *pd, uint64_t share_key, struct ibv_shpd *shpd);

/**
 * A PD of context that is the protection domain another process made
 * shareable with ibv_alloc_shpd (id in *shpd, the same share_key). Each
 * process deallocates its own handle (ibv_dealloc_pd); the domain lives
 * until the last handle is gone.
 * @return the PD, or NULL with errno: EINVAL (NULL context or shpd),
 * ENOENT (no shared PD with that id, or on another device), EACCES (wrong
 * key), EOPNOTSUPP (embedded mode), ENOMEM, EIO.
 */
struct ibv_pd *ibv_share_pd(struct ibv_context *context, struct ibv_shpd *shpd, uint64_t share_key);

/* ---- Connection managers ---- */

/**
 * Create the GSI QP of the device's port: a UD QP that receives every
 * packet sent to QP 1 of the port's GIDs and sends with source QP 1, as
 * an RNIC's QP 1 does (IBA 13.5). For connection managers (the IB CM of
 * dpverbs' librdmacm); its Q_Key is set with ibv_modify_qp as for any UD
 * QP (GSI: 0x80010000). Its qp_num is a local number: on the wire it is 1.
 *
 * @p attr as for ibv_create_qp; qp_type must be IBV_QPT_UD.
 *
 * In shared mode the daemon owns QP 1 of each port and demultiplexes the
 * CM MADs it receives to the GSI QPs of its applications (one per process
 * and port): a REQ or SIDR_REQ goes to the process that listens on its
 * service ID (dpv_gsi_listen), every other CM MAD to the process whose
 * comm-ID range holds the comm ID it is addressed to (dpv_gsi_comm_ids);
 * what the process sends leaves with source QP 1.
 *
 * @p attr as for ibv_create_qp; qp_type must be IBV_QPT_UD.
 *
 * RETURN VALUE: the QP, or NULL with errno: EINVAL (NULL arguments,
 * qp_type not UD, a parent domain with a thread domain), EEXIST (the port
 * has a GSI QP in this process), ENOSPC (shared mode: the daemon serves
 * 254 processes with GSI QPs already), ENOMEM. Destroy it with
 * ibv_destroy_qp.
 */
struct ibv_qp *dpv_create_gsi_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr);

/**
 * The Ethernet address of neighbour @p gid (IPv4-mapped or IPv6) on port
 * @p port_num of the device, from dpverbs' own ARP / IPv6 neighbour
 * discovery; never blocks (what the kernel's neighbour table gives
 * rdma_resolve_addr on Linux: dpverbs' librdmacm polls it).
 *
 * RETURN VALUE: 0 with @p mac set (a local address carried by software
 * loopback: that port's MAC); EAGAIN while the neighbour is being resolved
 * (a request is sent when none is outstanding; one that never answers stays
 * EAGAIN); EINVAL (NULL argument, port_num != 1); EIO (shared mode: the
 * daemon is gone); EOPNOTSUPP (the driver keeps no neighbours: null driver).
 * errno is not set.
 */
int dpv_query_neigh(struct ibv_context *context, uint8_t port_num, const union ibv_gid *gid,
		    uint8_t mac[6]);

/**
 * Shared mode: ask the daemon to hand the GSI QP qp (dpv_create_gsi_qp)
 * the REQs and SIDR_REQs for service_id (on non-zero), or to stop (on 0).
 * Embedded mode: nothing to do (the process' GSI QP gets every MAD).
 *
 * RETURN VALUE: 0, or an errno value: EINVAL (qp is not a GSI QP),
 * EADDRINUSE (another process listens on service_id on that port),
 * ENOSPC (the process listens on 128 service IDs already, or the daemon
 * on 1024), ENOENT (on 0: qp does not listen on it), EIO (the daemon is
 * gone).
 */
int dpv_gsi_listen(struct ibv_qp *qp, uint64_t service_id, int on);

/**
 * The comm-ID range of the process on the GSI QP qp: every local
 * communication ID (and SIDR request ID) its connection manager uses must
 * be prefix in the bits of mask. Embedded mode: 0 and 0 (any ID).
 *
 * RETURN VALUE: 0, or EINVAL (NULL argument, qp is not a GSI QP).
 */
int dpv_gsi_comm_ids(struct ibv_qp *qp, uint32_t *prefix, uint32_t *mask);

/* ---- RDMA FLUSH (IBA 1.5 annex A19) on rdma-core 44's headers ----
 *
 * rdma-core 44 (the ABI dpverbs provides) has RDMA ATOMIC WRITE
 * (IBV_WR_ATOMIC_WRITE, ibv_wr_atomic_write) but not yet RDMA FLUSH, which
 * rdma-core 45 added. These are its names with a DPV_ prefix and the same
 * values, and the same slot: struct ibv_qp_ex of rdma-core 45 has
 * wr_flush right after wr_atomic_write, and a dpverbs QP made with
 * IBV_QP_INIT_ATTR_SEND_OPS_FLAGS has it there, so a program built with
 * rdma-core 45's ibv_wr_flush() runs on dpverbs unchanged.
 * ibv_wr_flush(3) (dpverbs' man page) tells the rest. */
#define DPV_WR_FLUSH 14                       /**< IBV_WR_FLUSH (enum ibv_wr_opcode) */
#define DPV_WC_FLUSH 8                        /**< IBV_WC_FLUSH (enum ibv_wc_opcode) */
#define DPV_QP_EX_WITH_FLUSH (1u << 11)        /**< IBV_QP_EX_WITH_FLUSH (send_ops_flags) */
#define DPV_ACCESS_FLUSH_GLOBAL (1u << 8)      /**< IBV_ACCESS_FLUSH_GLOBAL (MR and QP access) */
#define DPV_ACCESS_FLUSH_PERSISTENT (1u << 9)  /**< IBV_ACCESS_FLUSH_PERSISTENT */
#define DPV_FLUSH_GLOBAL 1u                    /**< IBV_FLUSH_GLOBAL (placement type) */
#define DPV_FLUSH_PERSISTENT 2u                /**< IBV_FLUSH_PERSISTENT (placement type) */
#define DPV_FLUSH_RANGE 0u                     /**< IBV_FLUSH_RANGE (selectivity level) */
#define DPV_FLUSH_MR 1u                        /**< IBV_FLUSH_MR (selectivity level) */
/** device_cap_flags_ex bits (IB_UVERBS_DEVICE_FLUSH_GLOBAL ...). */
#define DPV_DEVICE_FLUSH_GLOBAL (1ULL << 38)
#define DPV_DEVICE_FLUSH_PERSISTENT (1ULL << 39)
#define DPV_DEVICE_ATOMIC_WRITE (1ULL << 40)

/** The signature of rdma-core 45's ibv_qp_ex.wr_flush. */
typedef void (*dpv_wr_flush_fn)(struct ibv_qp_ex *qp, uint32_t rkey, uint64_t remote_addr, size_t len,
				uint8_t type, uint8_t level);

/**
 * ibv_wr_flush() of rdma-core 45 for a QP of dpverbs: a FLUSH of len bytes
 * at remote_addr (rkey) with placement type `type` (DPV_FLUSH_GLOBAL and/or
 * DPV_FLUSH_PERSISTENT) and selectivity `level` (DPV_FLUSH_RANGE,
 * DPV_FLUSH_MR), between ibv_wr_start() and ibv_wr_complete(). The QP must
 * have been created with DPV_QP_EX_WITH_FLUSH in its send_ops_flags.
 */
static inline void dpv_wr_flush(struct ibv_qp_ex *qp, uint32_t rkey, uint64_t remote_addr, size_t len,
				uint8_t type, uint8_t level)
{
	(*(dpv_wr_flush_fn *)(qp + 1))(qp, rkey, remote_addr, len, type, level);
}

#ifdef __cplusplus
}
#endif
#endif /* DPVERBS_H */
