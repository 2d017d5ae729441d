/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file dpv_queue.h
 * The queue interface between the verbs façade (lib/verbs) and a transport
 * engine (drivers/): work-queue rings, completion rings and doorbells, laid
 * out the way an RNIC's are. doc/queues.md is the reference; this header is
 * its C form.
 *
 * Every ring is one buffer: a 128-byte header (struct dpv_ring_hdr, two cache
 * lines: one written by the producer, one by the consumer) followed by
 * `size` entries of `stride` bytes (size a power of two, indices free-running
 * 32-bit counters, slot = index & (size - 1)). Buffers come from the engine's
 * queue memory (DPDK hugepage memory for the software driver) or from a
 * parent domain's allocator with the ring's resource type, so the engine can
 * reach them from another thread or another process.
 *
 * Rings and their directions:
 *   SQ   producer: façade (ibv_post_send)      consumer: engine
 *   RQ   producer: façade (ibv_post_recv)      consumer: engine
 *   SRQ  producer: façade (ibv_post_srq_recv)  consumer: engine (any QP's)
 *   CQ   producer: engine                      consumer: façade (ibv_poll_cq)
 *
 * Memory ordering (C11): a producer writes entries, then publishes `pi` with
 * a release store; a consumer loads `pi` with acquire before reading entries,
 * and publishes `ci` with release after it has finished with them; the
 * producer loads `ci` with acquire before reusing slots. SQ slots are not
 * freed by `ci`: a send WQE's slot is reused only after a CQE naming it (or a
 * later WQE of the same SQ) has been polled (struct dpv_cqe.wqe_index), as on
 * ConnectX, because the engine keeps reading a WQE until it is complete
 * (retransmission).
 *
 * Doorbells: after publishing SQ `pi` the façade rings the QP's doorbell
 * (struct dpv_verbs_ops.sq_doorbell), which tells the engine that the QP has
 * work: in run-to-completion mode the engine runs on the caller's thread, in
 * service mode the QP number is queued to the engine context that owns it.
 * RQ and SRQ producer indices are read by the engine when it needs a receive
 * WQE (a doorbell record, no doorbell). A CQ is armed by writing `arm`
 * (DPV_CQ_ARM_*); the engine that writes the next matching CQE clears it
 * (atomic exchange) and signals the completion channel.
 */
#ifndef DPV_QUEUE_H
#define DPV_QUEUE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define DPV_RING_HDR_SIZE 128u

/** Ring header: the first 128 bytes of every ring buffer. */
struct dpv_ring_hdr {
	/* ---- producer cache line ---- */
	_Atomic uint32_t pi;      /**< next index the producer writes */
	uint32_t size;            /**< entries (power of two) */
	uint32_t stride;          /**< bytes per entry */
	uint32_t kind;            /**< enum dpv_ring_kind */
	_Atomic uint32_t flags;   /**< producer flags (DPV_RING_F_*) */
	_Atomic uint32_t db;      /**< SQ/RQ, shared mode: a doorbell for this ring is
				       queued (set by the producer, cleared by the engine) */
	_Atomic uint32_t arm;     /**< CQ: DPV_CQ_ARM_* written by the consumer, cleared by
				       the producer (here, not on the consumer's line: the
				       producer reads it for every CQE, the consumer writes
				       it only to arm) */
	uint8_t pad0[36];
	/* ---- consumer cache line ---- */
	_Atomic uint32_t ci;      /**< next index the consumer reads */
	_Atomic uint32_t limit;   /**< SRQ: armed limit (0 = off), cleared by the engine */
	uint8_t pad1[56];
};
_Static_assert(sizeof(struct dpv_ring_hdr) == DPV_RING_HDR_SIZE, "ring header is 128 bytes");

enum dpv_ring_kind {
	DPV_RING_SQ = 1,
	DPV_RING_RQ = 2,
	DPV_RING_SRQ = 3,
	DPV_RING_CQ = 4,
};

/** CQ producer flag: a CQE was lost because the CQ was full (IBA 11.4.2.1). */
#define DPV_RING_F_OVERRUN 1u
/** CQ producer flag: the CQ is in error after an overrun (a CQ created
 *  without IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN): the producer writes nothing
 *  more into it; the CQEs already there stay for the consumer. */
#define DPV_RING_F_ERROR 2u

/** CQ arm requests (ibv_req_notify_cq). */
#define DPV_CQ_ARM_NEXT 1u  /**< any next completion */
#define DPV_CQ_ARM_SOL 2u   /**< solicited or error completions only */

/** Entries start right after the header. */
static inline void *dpv_ring_entry(struct dpv_ring_hdr *h, uint32_t idx)
{
	return (uint8_t *)h + DPV_RING_HDR_SIZE + (size_t)(idx & (h->size - 1)) * h->stride;
}

/** Entry idx of a ring whose geometry the caller holds itself (an engine
 *  serving another process never re-reads size and stride from the shared
 *  header, which that process can write). */
static inline void *dpv_ring_slot(struct dpv_ring_hdr *h, uint32_t idx, uint32_t size, uint32_t stride)
{
	return (uint8_t *)h + DPV_RING_HDR_SIZE + (size_t)(idx & (size - 1)) * stride;
}

/** Bytes of a ring buffer of `size` entries of `stride` bytes. */
static inline size_t dpv_ring_bytes(uint32_t size, uint32_t stride)
{
	return DPV_RING_HDR_SIZE + (size_t)size * stride;
}

static inline void dpv_ring_init(struct dpv_ring_hdr *h, enum dpv_ring_kind kind, uint32_t size,
				 uint32_t stride)
{
	atomic_store_explicit(&h->pi, 0, memory_order_relaxed);
	atomic_store_explicit(&h->ci, 0, memory_order_relaxed);
	atomic_store_explicit(&h->arm, 0, memory_order_relaxed);
	atomic_store_explicit(&h->limit, 0, memory_order_relaxed);
	atomic_store_explicit(&h->flags, 0, memory_order_relaxed);
	atomic_store_explicit(&h->db, 0, memory_order_relaxed);
	h->size = size;
	h->stride = stride;
	h->kind = (uint32_t)kind;
	atomic_thread_fence(memory_order_release);
}

/* ------------------------------------------------------------------------
 * Scatter/gather element: the layout of struct ibv_sge (16 bytes).
 */
struct dpv_sge {
	uint64_t addr;
	uint32_t length;
	uint32_t lkey;
};

/* ------------------------------------------------------------------------
 * Send WQE (SQ entry). A 64-byte control part, then either num_sge SGEs or
 * (DPV_WQE_F_INLINE) `length` bytes of inline data. The stride is a power of
 * two >= 64 + max(max_send_sge * 16, max_inline_data). An ATOMIC WRITE
 * (IBV_WR_ATOMIC_WRITE) has its 8 bytes in SGEs or, inline, in
 * atomic.compare_add (whatever max_inline_data is); a FLUSH (DPV_WR_FLUSH)
 * has no local data: length, remote_addr and rkey are its RETH, `flush`
 * its FETH.
 */
struct dpv_send_wqe {
	uint64_t wr_id;
	uint8_t opcode;           /**< enum ibv_wr_opcode */
	uint8_t flags;            /**< DPV_WQE_F_* */
	uint16_t num_sge;
	uint32_t length;          /**< bytes of the message */
	uint32_t imm_data;        /**< immediate data as given (network order) */
	uint32_t inv_rkey;        /**< SEND_WITH_INV, LOCAL_INV: rkey to invalidate;
				       BIND_MW: the window (its index << 8 names it) */
	uint32_t remote_srqn;     /**< XRC initiator: XRC SRQ number */
	uint32_t rkey;            /**< RDMA/atomic/FLUSH: remote key; BIND_MW: the window's new rkey */
	uint64_t remote_addr;     /**< RDMA/atomic/FLUSH: remote address; BIND_MW: window start */
	union {
		struct {
			uint64_t compare_add; /**< ATOMIC_WRITE with DPV_WQE_F_INLINE: its 8 bytes */
			uint64_t swap;
		} atomic;
		struct {
			uint64_t length;  /**< BIND_MW: bytes of the window (0: unbind, type 1) */
			uint32_t mr_lkey; /**< BIND_MW: the MR it opens onto (0: none) */
			uint32_t access;  /**< BIND_MW: IBV_ACCESS_* of the window */
		} bind;
		struct {
			uint8_t type;     /**< placement type (DPV_FLUSH_GLOBAL|PERSISTENT) */
			uint8_t level;    /**< selectivity level (DPV_FLUSH_RANGE, _MR) */
			uint8_t rsvd[14];
		} flush;              /**< DPV_WR_FLUSH: length is the FLUSH's length */
		struct {
			uint32_t ah;      /**< AH handle (dpverbs object pool index) */
			uint32_t remote_qpn;
			uint32_t remote_qkey;
			uint32_t rsvd;
		} ud;
	};
	uint8_t rsvd[8];
	/* then: struct dpv_sge sge[num_sge], or inline bytes */
};
_Static_assert(sizeof(struct dpv_send_wqe) == 64, "send WQE control part is 64 bytes");

#define DPV_WQE_F_SIGNALED 0x01u   /**< write a CQE when it completes */
#define DPV_WQE_F_SOLICITED 0x02u  /**< set SE on the last packet */
#define DPV_WQE_F_INLINE 0x04u     /**< data follows the control part */
#define DPV_WQE_F_FENCE 0x08u      /**< wait for earlier READ/atomics */

static inline struct dpv_sge *dpv_wqe_sge(struct dpv_send_wqe *w)
{
	return (struct dpv_sge *)(w + 1);
}
static inline uint8_t *dpv_wqe_inline(struct dpv_send_wqe *w)
{
	return (uint8_t *)(w + 1);
}

/* ------------------------------------------------------------------------
 * Receive WQE (RQ and SRQ entry): 16 bytes, then num_sge SGEs. The stride is
 * a power of two >= 16 + max_recv_sge * 16.
 */
struct dpv_recv_wqe {
	uint64_t wr_id;
	uint32_t num_sge;
	uint32_t rsvd;
	struct dpv_sge sge[];
};

/* ------------------------------------------------------------------------
 * Completion queue entry: 64 bytes. The fields are those of struct ibv_wc
 * plus the completion timestamp and, for send completions, the SQ index of
 * the WQE completed (every earlier WQE of that SQ is complete as well).
 */
struct dpv_cqe {
	uint64_t wr_id;
	uint64_t ts;              /**< TSC at completion (0 unless the CQ asked for timestamps) */
	uint32_t qp_num;
	uint32_t byte_len;
	uint32_t src_qp;
	uint32_t imm_inv;         /**< imm_data (network order) or invalidated rkey */
	uint32_t wqe_index;       /**< DPV_CQE_F_SQ: SQ index of the WQE; DPV_CQE_F_TM_FREE: the tag */
	uint16_t pkey_index;
	uint16_t slid;
	uint8_t status;           /**< enum ibv_wc_status */
	uint8_t opcode;           /**< enum ibv_wc_opcode */
	uint8_t wc_flags;         /**< enum ibv_wc_flags (low 8 bits) */
	uint8_t sl;
	uint8_t dlid_path_bits;
	uint8_t flags;            /**< DPV_CQE_F_* */
	uint16_t vendor_err;
	uint64_t tm_tag;          /**< tag matching: the TMH's tag (IBV_WC_TM_MATCH), else 0 */
	uint32_t tm_priv;         /**< tag matching: the TMH's app_ctx (host order) */
	uint32_t flow_tag;        /**< raw packet QP: the tag of the steering rule (ibv_wc_read_flow_tag) */
};
_Static_assert(sizeof(struct dpv_cqe) == 64, "CQE is 64 bytes");

#define DPV_CQE_F_SQ 0x01u        /**< completes a send WQE: wqe_index is valid */
#define DPV_CQE_F_SOLICITED 0x02u /**< the message had SE set */
#define DPV_CQE_F_TM_FREE 0x04u   /**< tag matching: the last completion of a tag; wqe_index
				       is srqn << 8 | handle, free again once polled */

/**
 * Producer side of a CQ ring of `size` entries (the geometry the producer
 * holds; *ci_cache its last view of the consumer index, which never runs
 * ahead of the real one): write cqe (with timestamp ts) into the next
 * slot and publish it. The caller serialises producers. A ring holds
 * size - 1 CQEs: when it is full the CQE is lost, DPV_RING_F_OVERRUN is set
 * (IBA 11.4.2.1) and -1 returned. Returns 1 when the consumer's arm request
 * matches this CQE (the arm is cleared: signal the completion channel),
 * 0 otherwise.
 */
static inline int dpv_cq_ring_put_ci(struct dpv_ring_hdr *r, uint32_t size, uint32_t *ci_cache,
				     const struct dpv_cqe *cqe, uint64_t ts)
{
	uint32_t pi = atomic_load_explicit(&r->pi, memory_order_relaxed);
	/* the consumer's line is read only when the ring looks full by the
	 * last value seen (a consumer in another process or on another core
	 * costs a cache miss per read) */
	if (pi - *ci_cache >= size - 1)
		*ci_cache = atomic_load_explicit(&r->ci, memory_order_acquire);
	if (pi - *ci_cache >= size - 1) {
		atomic_fetch_or_explicit(&r->flags, DPV_RING_F_OVERRUN, memory_order_relaxed);
		return -1;
	}
	struct dpv_cqe *e = (struct dpv_cqe *)dpv_ring_slot(r, pi, size, sizeof(struct dpv_cqe));
	*e = *cqe;
	e->ts = ts;
	atomic_store_explicit(&r->pi, pi + 1, memory_order_release);
	/* Dekker with dpv_req_notify_cq (store arm, fence, load pi): without
	 * the fence the load of arm may pass the store of pi (x86 store
	 * buffer), both sides see the old values and the consumer sleeps on a
	 * CQE that signals nobody (a lost completion event) */
	atomic_thread_fence(memory_order_seq_cst);
	uint32_t arm = atomic_load_explicit(&r->arm, memory_order_acquire);
	if (arm && (arm == DPV_CQ_ARM_NEXT || (cqe->flags & DPV_CQE_F_SOLICITED) || cqe->status != 0))
		return atomic_exchange_explicit(&r->arm, 0, memory_order_acq_rel) != 0;
	return 0;
}

/**
 * Consumer: arm the CQ (DPV_CQ_ARM_*). The fence orders the arm before the
 * consumer's next read of the producer index (Dekker with
 * dpv_cq_ring_put_ci): a CQE published meanwhile is either seen by that
 * poll or signals the completion channel, never neither.
 */
static inline void dpv_cq_ring_arm(struct dpv_ring_hdr *r, uint32_t how)
{
	atomic_store_explicit(&r->arm, how, memory_order_release);
	atomic_thread_fence(memory_order_seq_cst);
}

/** dpv_cq_ring_put_ci without a cached consumer index. */
static inline int dpv_cq_ring_put(struct dpv_ring_hdr *r, uint32_t size, const struct dpv_cqe *cqe, uint64_t ts)
{
	uint32_t ci = atomic_load_explicit(&r->ci, memory_order_acquire);
	return dpv_cq_ring_put_ci(r, size, &ci, cqe, ts);
}

/* ------------------------------------------------------------------------
 * Tag matching area of a tag-matching SRQ (IBV_SRQT_TM): right after the
 * SRQ ring's entries, at dpv_tm_area_off(size, stride), in the same buffer.
 * A header, an ops ring of ops_size struct dpv_tm_op (producer: the façade's
 * ibv_post_srq_ops; consumer: the engine), and max_tags 32-bit handle states
 * (DPV_TM_FREE: the façade may give the handle to a new TAG_ADD, which sets
 * DPV_TM_USED; it is free again when software has polled the tag's last
 * completion, DPV_CQE_F_TM_FREE: a message consumed it, or a signalled
 * TAG_DEL removed it; an unsignalled TAG_DEL frees it in the engine, as
 * mlx5 frees it at once). The engine keeps its own copy of every tag: it
 * reads an op once, when it executes it, and never trusts the states.
 */
struct dpv_tm_hdr {
	_Atomic uint32_t ops_pi;  /**< façade: next op index */
	uint32_t ops_size;        /**< ops ring entries (power of two) */
	uint32_t max_tags;        /**< handle states */
	_Atomic uint32_t db;      /**< shared mode: a doorbell for the ops is queued */
	uint8_t pad0[48];
	_Atomic uint32_t ops_ci;  /**< engine: next op it executes */
	_Atomic uint32_t unexp;   /**< engine: unexpected messages so far */
	uint8_t pad1[56];
};
_Static_assert(sizeof(struct dpv_tm_hdr) == 128, "TM header is 128 bytes");

/** One ibv_post_srq_ops work request (64 bytes). */
struct dpv_tm_op {
	uint64_t wr_id;           /**< the op's wr_id (TM_ADD/DEL/SYNC completion) */
	uint64_t recv_wr_id;      /**< TAG_ADD: wr_id of the TM_RECV completion */
	uint64_t tag, mask;       /**< TAG_ADD */
	uint32_t handle;          /**< TAG_ADD, TAG_DEL */
	uint32_t unexp_cnt;       /**< with DPV_TM_OP_SYNC: unexpected messages SW handled */
	uint8_t opcode;           /**< enum ibv_ops_wr_opcode */
	uint8_t flags;            /**< IBV_OPS_SIGNALED, IBV_OPS_TM_SYNC */
	uint16_t num_sge;         /**< TAG_ADD: 0 or 1 */
	uint32_t rsvd;
	struct dpv_sge sge;       /**< TAG_ADD: the tagged buffer */
};
_Static_assert(sizeof(struct dpv_tm_op) == 64, "TM op is 64 bytes");

#define DPV_TM_FREE 0u
#define DPV_TM_USED 1u

static inline size_t dpv_tm_area_off(uint32_t size, uint32_t stride)
{
	return (dpv_ring_bytes(size, stride) + 63) & ~(size_t)63;
}

static inline size_t dpv_tm_area_bytes(uint32_t ops_size, uint32_t max_tags)
{
	return sizeof(struct dpv_tm_hdr) + (size_t)ops_size * sizeof(struct dpv_tm_op) +
	       (((size_t)max_tags * 4 + 63) & ~(size_t)63);
}

static inline struct dpv_tm_op *dpv_tm_ops(struct dpv_tm_hdr *h)
{
	return (struct dpv_tm_op *)(h + 1);
}

static inline _Atomic uint32_t *dpv_tm_states(struct dpv_tm_hdr *h, uint32_t ops_size)
{
	return (_Atomic uint32_t *)(dpv_tm_ops(h) + ops_size);
}

static inline void dpv_tm_init(struct dpv_tm_hdr *h, uint32_t ops_size, uint32_t max_tags)
{
	atomic_store_explicit(&h->ops_pi, 0, memory_order_relaxed);
	atomic_store_explicit(&h->ops_ci, 0, memory_order_relaxed);
	atomic_store_explicit(&h->unexp, 0, memory_order_relaxed);
	atomic_store_explicit(&h->db, 0, memory_order_relaxed);
	h->ops_size = ops_size;
	h->max_tags = max_tags;
	_Atomic uint32_t *st = dpv_tm_states(h, ops_size);
	for (uint32_t i = 0; i < max_tags; i++)
		atomic_store_explicit(&st[i], DPV_TM_FREE, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
}

/* Tag matching device limits (as a ConnectX-5 reports them). */
#define DPV_TM_MAX_TAGS 127u
#define DPV_TM_MAX_OPS 32768u
#define DPV_TM_MAX_SGE 1u
#define DPV_TM_MAX_RNDV_HDR 64u

/* ------------------------------------------------------------------------
 * Doorbell ring (shared mode): how an application tells the engine in
 * dpverbsd that a QP has work. One ring per application and engine context,
 * in memory both processes map; entries are QPNs (DPV_DB_RQ set: the RQ's
 * doorbell). Many producers (the application's threads), one consumer (the
 * engine context), a bounded queue with a sequence number per slot: a
 * producer claims a position by compare-and-swap on `head`, writes the
 * value, then publishes the slot's sequence. The consumer keeps its
 * position and the mask in its own memory, so a producer that writes
 * garbage into the ring only loses its own doorbells.
 *
 * The SQ and RQ headers' `db` field keeps one entry per ring queued at a
 * time: a producer that finds it set does not queue again; the engine
 * clears it before it reads the ring.
 */
#define DPV_DB_RQ 0x80000000u
#define DPV_DB_SRQ 0x40000000u /**< the value is an SRQ number: its tag matching ops */

struct dpv_db_slot {
	_Atomic uint32_t seq;
	uint32_t val;
};

struct dpv_db_ring {
	_Atomic uint32_t head;    /**< next position a producer claims */
	uint32_t size;            /**< slots, a power of two (set by the creator) */
	uint8_t pad[56];
	struct dpv_db_slot slot[];
};

static inline size_t dpv_db_ring_bytes(uint32_t size)
{
	return sizeof(struct dpv_db_ring) + (size_t)size * sizeof(struct dpv_db_slot);
}

static inline void dpv_db_ring_init(struct dpv_db_ring *r, uint32_t size)
{
	atomic_store_explicit(&r->head, 0, memory_order_relaxed);
	r->size = size;
	for (uint32_t i = 0; i < size; i++)
		atomic_store_explicit(&r->slot[i].seq, i, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
}

/** Producer: queue val. 0, or -1 when the ring is full. */
static inline int dpv_db_ring_put(struct dpv_db_ring *r, uint32_t mask, uint32_t val)
{
	uint32_t pos = atomic_load_explicit(&r->head, memory_order_relaxed);
	for (;;) {
		struct dpv_db_slot *s = &r->slot[pos & mask];
		uint32_t seq = atomic_load_explicit(&s->seq, memory_order_acquire);
		int32_t dif = (int32_t)(seq - pos);
		if (dif == 0) {
			if (atomic_compare_exchange_weak_explicit(&r->head, &pos, pos + 1, memory_order_relaxed,
								  memory_order_relaxed)) {
				s->val = val;
				atomic_store_explicit(&s->seq, pos + 1, memory_order_release);
				return 0;
			}
		} else if (dif < 0) {
			return -1;
		} else {
			pos = atomic_load_explicit(&r->head, memory_order_relaxed);
		}
	}
}

/** Consumer: the next value into *val (its position *pos advances); false
 *  when none is ready. */
static inline bool dpv_db_ring_get(struct dpv_db_ring *r, uint32_t mask, uint32_t *pos, uint32_t *val)
{
	struct dpv_db_slot *s = &r->slot[*pos & mask];
	if (atomic_load_explicit(&s->seq, memory_order_acquire) != *pos + 1)
		return false;
	*val = s->val;
	atomic_store_explicit(&s->seq, *pos + mask + 1, memory_order_release);
	(*pos)++;
	return true;
}

/* ------------------------------------------------------------------------
 * Wake word (shared mode): how a thread of an application that found its
 * CQs empty sleeps until the engine in dpverbsd writes a completion for
 * it, instead of spinning against the engine for a CPU. One per
 * application, in the doorbell memfd after the rings. The engine bumps
 * `seq` after every CQE it publishes to one of the application's CQs and,
 * when `waiters` is not 0, wakes the futex on `seq`; a thread adds itself
 * to `waiters` and sleeps on the value of `seq` it saw before its last
 * empty polls (FUTEX_WAIT returns at once if it moved). Dekker: the
 * engine's bump and the thread's increment are full barriers, so either
 * the thread's FUTEX_WAIT sees the new `seq` or the engine sees the waiter.
 * An application that writes garbage here only wakes late or makes the
 * engine call FUTEX_WAKE for nothing.
 */
struct dpv_wake {
	_Atomic uint32_t seq;     /**< engine: CQEs published to this application */
	uint8_t pad0[60];
	_Atomic uint32_t waiters; /**< application: threads sleeping on seq */
	uint8_t pad1[60];
};

#ifdef __cplusplus
}
#endif
#endif /* DPV_QUEUE_H */
