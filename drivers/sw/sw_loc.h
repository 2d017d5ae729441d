/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The software RoCEv2 transport ("sw" driver): what its files share with
 * each other, as Linux rxe's rxe_loc.h: the prototypes of each .c file's
 * non-static functions (and the declarations of its non-static variables),
 * one group per file under a comment naming it, the groups in the order of
 * the driver's file map (doc/architecture.md, section 3, "The software
 * engine"). Nothing else: the objects are in sw_obj.h, the inline helpers
 * in sw_log.h, sw_qp_lock.h, sw_opcode.h, sw_queue.h and sw_copy.h.
 * scripts/check_swloc.py (test "swloc") keeps it so.
 */
#ifndef SW_LOC_H
#define SW_LOC_H

#include "sw_obj.h"

/* sw.c */
extern int sw_logtype;
/* Is pmd.dpv.sw at debug level? Read from the log system when the driver
 * starts and then by every timer scan (sw_timer.c), so that the data path
 * tests a flag instead of calling into EAL per packet (sw_log.h). */
extern bool sw_debug_on;
/* The calling thread becomes the TD's owner if it has none: true if it is the owner. */
bool sw_td_claim(struct sw_td *td);
bool sw_lcore_mode(void);

/* sw_tab.c */
int sw_tab_init(void);
int sw_tab_qp_set(uint32_t qpn, struct sw_qp *qp);
/* The engine QP of a QPN, or NULL (not created, or being destroyed). */
struct sw_qp *sw_qp_lookup(uint32_t qpn);
int sw_tab_srq_set(uint32_t srqn, struct sw_srq *s);
struct sw_srq *sw_srq_lookup(uint32_t srqn);
int sw_reg_mr(void *dev, const struct dpv_mr_desc *d);
int sw_dereg_mr(void *dev, uint32_t key, bool force);
/* The entry of table index i (an MR or a memory window), NULL out of
 * range; its writers hold the table lock. */
struct sw_mr *sw_tab_mpt(uint32_t i);
void sw_tab_lock(void);
void sw_tab_unlock(void);
/* The entry of an lkey/rkey (its full 32-bit value), MR or window, or NULL. */
const struct sw_mr *sw_mpt_lookup(uint32_t key);
/* The MR of an lkey/rkey (its full 32-bit value), or NULL. */
const struct sw_mr *sw_mr_lookup(uint32_t key);
/* The MR of key if it is still registered, covers [addr, addr + len) and
 * belongs to protection domain pd (unless pd is 0: SW_PD_CHECKED); NULL
 * otherwise. With pd 0 key may be a window's rkey (an SGE the responder
 * built): the MR it is bound to, if the window still covers the bytes. */
const struct sw_mr *sw_mr_range(uint32_t pd, uint32_t key, uint64_t addr, uint32_t len);
/* Is any registered MR in another process' memory (shared mode)? Then
 * every SGE takes the slow path (sw_mem.c: batched system calls). So does
 * every SGE once the engine serves other processes (sw_db_attach): their
 * rings are memory they write, an SGE read there may have changed since
 * it was checked, and a raw SGE address is never to be used
 * (sw_any_remote_mr, sw_copy.h). */
extern _Atomic uint32_t sw_remote_mrs;
extern _Atomic bool sw_serves_apps;
int sw_create_ah(void *dev, const struct dpv_ah_desc *d);
void sw_destroy_ah(void *dev, uint32_t handle);
const struct sw_ah *sw_ah_lookup(uint32_t handle);
/* The GSI QP of a port (QP 1 on the wire), or NULL. */
struct sw_qp *sw_gsi_lookup(const struct dpv_port *port, const uint8_t sgid[16], const uint8_t *mad,
			     uint32_t len);
void sw_gsi_demux(dpv_gsi_demux_fn fn, dpv_gsi_tx_fn tx, void *arg);
/* dpverbsd's send filter for a gsi_shared QP's MAD (true: send it). */
bool sw_gsi_tx_ok(const struct sw_qp *qp, const uint8_t dgid[16], const uint8_t *mad, uint32_t len);
/* The port's GSI QP goes from old to qp: -EEXIST if it was not old. */
int sw_tab_gsi_set(const struct dpv_port *port, struct sw_qp *old, struct sw_qp *qp);

/* sw_dm.c */
/* Device d's dm_size bytes of device memory (a memzone on its port's NUMA
 * node): the bytes it offers (0: none, or no memory for them). */
uint64_t sw_dm_init(struct sw_dev *d, uint32_t dm_size);
int sw_alloc_dm(void *dev, uint32_t ctx, uint64_t length, uint32_t log_align, struct dpv_dm_desc *dm);
int sw_free_dm(void *dev, const struct dpv_dm_desc *dm);
/* sw_mw.c */
int sw_alloc_mw(void *dev, const struct dpv_mw_desc *d);
void sw_dealloc_mw(void *dev, uint32_t key);
/* Execute the BIND_MW WQE w of qp: IBV_WC_SUCCESS or IBV_WC_MW_BIND_ERR. */
enum ibv_wc_status sw_mw_bind(const struct sw_qp *qp, const struct dpv_send_wqe *w);
/* Invalidate the type 2 window of rkey for the QP of uid qp_uid in
 * protection domain pd (LOCAL_INV, SEND with invalidate): 0, -EINVAL (no
 * bound type 2 window has this rkey), -EACCES (another PD's or QP's). */
int sw_mw_invalidate(uint32_t pd, uint64_t qp_uid, uint32_t rkey);
/* A remote access through window e of rkey (the responder's check): the
 * address of [va, va + len) in its MR (*mrp), or NULL. */
uint8_t *sw_mw_resolve(const struct sw_mr *e, uint32_t rkey, uint32_t pd, uint64_t qp_uid, uint64_t va,
		       uint64_t len, int access, const struct sw_mr **mrp);
/* sw_mr_range for a window's key: its MR if the window still covers the
 * engine-side bytes [addr, addr + len), else NULL. */
const struct sw_mr *sw_mw_range(const struct sw_mr *e, uint32_t key, uint64_t addr, uint32_t len);

/* sw_qp.c */
void *sw_create_qp(const struct dpv_qp_cfg *cfg);
void sw_destroy_qp(void *qp);
/* Engine work on the calling thread outside every context's rx_lock (an
 * inline doorbell, modify_qp, destroy_qp, a thread domain's progress) runs
 * between these (nested calls count once). */
void sw_sect_enter(void);
void sw_sect_exit(void);
/* Wait until no engine context is inside a poll turn (every rx_lock taken
 * once) and no thread inside a section that began before: after this,
 * objects removed from the tables (a QP, an MR's key) are unreachable. */
void sw_quiesce(void);
int sw_modify_qp(void *qp, const struct ibv_qp_attr *attr, int mask, enum ibv_qp_state cur, enum ibv_qp_state to);
enum ibv_qp_state sw_query_qp_state(void *qp);
void sw_query_qp_counters(void *qp, uint64_t *cnt, unsigned int n);
/* The QP goes to ERR: flush its receive queue (IBA 10.3.1). Must hold the QP lock. */
void sw_qp_to_error(struct sw_qp *qp);
/* A CQ the QP completes into is in error (sw_qp_cq_due): the QP goes to
 * ERR with IBV_EVENT_QP_FATAL (and LAST_WQE_REACHED with an SRQ), once.
 * Must hold the QP lock, outside the completer's and responder's loops. */
void sw_qp_cq_fatal(struct sw_qp *qp);
/* Raise an async event on the QP. */
void sw_qp_event(struct sw_qp *qp, enum ibv_event_type type);
uint32_t sw_qp_mtu(const struct sw_qp *qp);

/* sw_doorbell.c */
/* ibv_post_send / ibv_post_recv on the QP (driver operations). */
void sw_sq_doorbell(void *qp);
void sw_rq_doorbell(void *qp);
/* Run the send side of a QP (requester for RC/UC/XRC, sender for UD; an
 * ACK it deferred leaves first). Must hold the QP lock. */
void sw_qp_send(struct sw_qp *qp);
/* The QP's sending stopped on a full TX queue (or loopback ring): queue it
 * on its context's ring so that the context's next poll turn, after
 * receiving, runs it again. Not for a thread domain's QPs (their owner's
 * timer pass does). Must hold the QP lock. */
void sw_qp_kick(struct sw_qp *qp);
/* The QPs queued on the context's ring run: how many. */
int sw_doorbells_drain(struct dpv_qctx *qc);

/* sw_dbring.c */
unsigned int sw_db_count(void *dev);
unsigned int sw_qp_db_index(void *qp);
void *sw_db_attach(void *dev, unsigned int index, struct dpv_db_ring *ring, uint32_t size, uint32_t owner);
void sw_db_detach(void *db);
void sw_db_sync(void *dev);
/* Take the doorbells rung on the context's attached rings: how many. */
int sw_db_poll(struct dpv_qctx *qc);

/* sw_cq.c */
/* Orders QPs leaving RESET (sw_qp.up_epoch) and CQs going to error
 * (sw_cq.err_epoch): one count for both (sw_qp_cq_due). */
extern _Atomic uint64_t sw_cq_epoch;
/* Write a completion of qp into cq; raises the channel event when armed.
 * false: the CQ is in error (it overran now, or before) and the CQE was
 * not written; qp->cq_fatal is set and the QP must go to ERR
 * (sw_qp_cq_fatal) once the caller is at a safe point. A CQ created with
 * IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN loses a CQE that does not fit and
 * returns true. Must hold the QP lock. qp NULL: a completion of no QP (tag
 * matching ops), which only the CQ going to error follows. */
bool sw_cq_push(struct sw_qp *qp, struct sw_cq *cq, const struct dpv_cqe *cqe);
void *sw_create_cq(void *dev, const struct dpv_cq_cfg *cfg);
void sw_destroy_cq(void *cq);
int sw_resize_cq(void *cq, struct dpv_ring_hdr *ring, uint32_t size);

/* sw_rq.c */
void *sw_create_srq(void *dev, const struct dpv_srq_cfg *cfg);
void sw_destroy_srq(void *srq);
/* Take the next receive WQE of an SRQ or of the QP's RQ. */
bool sw_srq_pop(struct sw_srq *s, struct sw_rwqe *out);
/* sw_srq_pop with s->lock held: *limit_ev set when the limit event is due
 * (raised by the caller after unlocking). */
bool sw_srq_pop_locked(struct sw_srq *s, struct sw_rwqe *out, bool *limit_ev);
bool sw_rq_pop(struct sw_qp *qp, struct sw_rwqe *out);
/* Complete every receive WQE of the QP's RQ with IBV_WC_WR_FLUSH_ERR. */
void sw_rq_flush(struct sw_qp *qp);

/* sw_tm.c */
/* The tag matching state of a TM SRQ (cfg->tm_ops), none otherwise: 0 or -errno. */
int sw_tm_create(struct sw_srq *s, const struct dpv_srq_cfg *cfg);
void sw_tm_destroy(struct sw_srq *s);
/* Execute the ops queued on a TM SRQ (driver op srq_doorbell). */
void sw_srq_doorbell(void *srq);
/* Shared mode: its doorbell was taken (before the ops are read). */
void sw_tm_db_clear(struct sw_srq *s);
/* A message starts (its first packet's payload): where it goes, by its
 * TMH, into *out and *m; false when it needs an ordinary WQE and none is
 * posted (RNR). */
bool sw_tm_take(struct sw_srq *s, const uint8_t *pay, uint32_t plen, struct sw_rwqe *out, struct sw_tm_msg *m);
/* The receive completion of such a message: opcode, flags, tag (m is reset). */
void sw_tm_cqe(struct sw_tm_msg *m, struct dpv_cqe *e);
/* ... and its completion with an error status (e->status set). */
void sw_tm_cqe_error(struct sw_tm_msg *m, struct dpv_cqe *e);

/* sw_tm_rndv.c */
/* A matched rendezvous the QP cannot run (one in progress, a buffer too
 * small) is left to software. Must hold the QP lock, as all below. */
void sw_tm_rndv_check(struct sw_qp *qp);
/* The rendezvous of m starts (its completions go to cq). */
void sw_tm_rndv_start(struct sw_qp *qp, const struct sw_tm_msg *m, struct sw_cq *cq);
/* Send its READ if the requester is idle. */
void sw_tm_rndv_kick(struct sw_qp *qp);
/* Does a rendezvous hold the QP's send side? (starts a waiting one) */
bool sw_tm_rndv_busy(struct sw_qp *qp);
/* A response packet while a rendezvous runs: true if it took it. */
bool sw_tm_rndv_rx(struct sw_qp *qp, struct rte_mbuf *m, struct dpv_pkt_info *pi);
/* A timer asks again: the READ for what has not arrived, or the FIN. */
void sw_tm_rndv_resend(struct sw_qp *qp);
/* retry_cnt spent: the rendezvous fails (IBV_WC_RETRY_EXC_ERR, QP to ERR). */
void sw_tm_rndv_timeout(struct sw_qp *qp);

/* sw_req.c */
/* Give the WQEs published since the last look their engine state. */
void sw_req_fetch(struct sw_qp *qp);
/* Fetch newly posted WQEs and send what the window allows. Must hold the QP lock. */
void sw_req_run(struct sw_qp *qp);
void sw_req_read_more(struct sw_qp *qp, struct sw_wqe *s, struct dpv_send_wqe *w);
/* Go back to psn. force: a timer expired; otherwise (NAK, implied NAK, read
 * gap) a second go-back to the same PSN without progress is ignored. */
void sw_req_retry(struct sw_qp *qp, uint32_t psn, bool force, bool probe);

/* sw_comp.c */
void sw_comp_rx(struct sw_qp *qp, struct rte_mbuf *m, struct dpv_pkt_info *pi);
/* Complete the WQE at index i (in order), and after a success the memory
 * window operations executed behind it. Must hold the QP lock. */
void sw_comp_wqe_done(struct sw_qp *qp, uint32_t i, enum ibv_wc_status st);
/* Complete the memory window operations at the head of the send queue that
 * were executed (sw_req.c): every WQE before them has completed. */
void sw_comp_local(struct sw_qp *qp);
/* Complete WQE i with an error; the QP goes to ERR and everything flushes. */
void sw_comp_error(struct sw_qp *qp, uint32_t i, enum ibv_wc_status st);
void sw_comp_flush_sq(struct sw_qp *qp);

/* sw_resp.c */
void sw_resp_rx(struct sw_qp *qp, struct rte_mbuf *m, struct dpv_pkt_info *pi);
/* The QP's responder state starts afresh (RTR). */
void sw_resp_reset(struct sw_qp *qp);

/* sw_resp_q.c */
void sw_resp_ack(struct sw_qp *qp, uint8_t syndrome, uint32_t psn);
void sw_resp_nak(struct sw_qp *qp, uint8_t syndrome, uint32_t psn);
/* Remember an ACK to send at the end of the burst (coalesced). */
void sw_resp_queue_ack(struct sw_qp *qp, uint32_t psn);
void sw_resp_flush_ack(struct sw_qp *qp);
void sw_resp_read(struct sw_qp *qp, uint64_t src, uint32_t rkey, uint32_t len, uint32_t psn,
		  uint32_t req_psn);
void sw_resp_atomic(struct sw_qp *qp, uint32_t psn, uint64_t orig);
/* Send up to budget queued response packets; true if some remain. */
bool sw_resp_pump(struct sw_qp *qp, unsigned int budget);

/* sw_recv.c */
void sw_rx(struct dpv_qctx *qc, struct rte_mbuf *m, struct dpv_pkt_info *pi);
/* A TD's owner: process the packets deferred to it. */
int sw_td_rx(struct sw_td *td);

/* sw_ud.c */
void sw_ud_send(struct sw_qp *qp);
void sw_ud_rx(struct sw_qp *qp, struct dpv_qctx *qc, struct rte_mbuf *m, struct dpv_pkt_info *pi);

/* sw_mcast.c */
int sw_mcast_attach(void *qp, const uint8_t *mgid);
int sw_mcast_detach(void *qp, const uint8_t *mgid);
void sw_mcast_qp_gone(struct sw_qp *qp);
void sw_mcast_rx(struct dpv_qctx *qc, struct rte_mbuf *m, struct dpv_pkt_info *pi);

/* sw_raw.c */
/* Send one raw packet QP WQE: IBV_WC_SUCCESS, an IBV_WC_* error status, or
 * -ENOBUFS (nothing sent: try again later). */
int sw_raw_send_one(struct sw_qp *qp, struct dpv_send_wqe *w);
void sw_raw_rx(struct dpv_qctx *qc, const uint8_t *frame, uint32_t len, const struct dpv_raw_rule *r);
int sw_flow_create(void *qp, const struct dpv_raw_rule *rule, uint32_t *handle);
int sw_flow_destroy(void *qp, uint32_t handle);
/* The QP's rules leave its port: the old table, to free after sw_quiesce. */
struct dpv_raw_tab *sw_raw_qp_gone(struct sw_qp *qp);

/* sw_gsi_fb.c */
/* A MAD to QP 1 of a port without a GSI QP; m stays the caller's. */
void sw_gsi_fallback(struct dpv_qctx *qc, struct rte_mbuf *m, const struct dpv_pkt_info *pi);

/* sw_poll.c */
/* The per-context tasks after each RX burst (poll hook of the port layer):
 * returns the doorbells it took (work the caller did not see as packets). */
int sw_poll(struct dpv_qctx *qc, uint64_t now);
int sw_td_progress(struct sw_td *td);
/* Queue a QP with ACKs to coalesce at the end of this burst (or send now). */
void sw_defer_ack(struct sw_qp *qp, struct dpv_qctx *qc);

/* sw_timer.c */
extern uint64_t sw_us_cycles;     /* TSC ticks per microsecond (set at probe) */
/* (Re)start the retransmission timer (IBA 9.7.6.1.3) / the tail-loss probe. */
void sw_timer_restart(struct sw_qp *qp);
void sw_timer_probe_restart(struct sw_qp *qp, bool reset);
/* The QP's timers and deferred work run from its context's (or TD's) scan. */
int sw_timer_add(struct sw_qp *qp); /* 0 or -ENOMEM */
void sw_timer_del(struct sw_qp *qp);
/* The timer scan of a context, at most every SW_TIMER_US (at once when
 * starved: the context was not polled for SW_STARVED_US). */
void sw_timer_scan(struct dpv_qctx *qc, uint64_t now, bool starved);
/* A thread domain's QPs' timers, at most every SW_TIMER_US. */
void sw_timer_td(struct sw_td *td, uint64_t now);

/* sw_net.c */
void sw_build_init(struct sw_qp *qp, struct dpv_pkt_build *b, uint8_t opcode, uint32_t psn);
/* Build and send one packet; payload from SGEs at byte off, or from flat.
 * 0, -ENOBUFS (TX queue full: nothing sent, try later), -EACCES (an SGE's
 * MR was deregistered: nothing sent, the WQE fails), other -errno (dropped). */
int sw_xmit(struct sw_qp *qp, struct dpv_pkt_build *b, uint32_t pd, const struct dpv_sge *sge, uint32_t nsge,
	    uint32_t off, uint32_t len, const void *flat);
/* A frame of b's headers and len bytes of data, sent from context qc (no QP). */
int sw_xmit_flat(struct dpv_qctx *qc, const struct dpv_pkt_build *b, const void *data, uint32_t len);
uint16_t sw_udp_sport(uint32_t sqpn, uint32_t dqpn, uint32_t flow_label);
/* Check an SGE list against MRs of protection domain pd: IBV_WC_SUCCESS or
 * IBV_WC_LOC_PROT_ERR. */
int sw_sge_check(uint32_t pd, const struct dpv_sge *sge, uint32_t n, int access);
uint32_t sw_sge_total(const struct dpv_sge *sge, uint32_t n);
/* The payload of a send WQE: its SGEs (at most the QP's max_send_sge), or
 * (returned *inl non-NULL) its inline bytes, *inl_len of them (at most
 * what the SQ's stride holds). Returns the SGE count. */
uint32_t sw_wqe_payload(const struct sw_qp *qp, struct dpv_send_wqe *w, const struct dpv_sge **sge,
			const uint8_t **inl, uint32_t *inl_len);
/* The payload of a one-packet send WQE (UD, raw) as sw_wqe_payload, its
 * length in *len (read once) and its SGEs checked against the QP's PD:
 * IBV_WC_SUCCESS, IBV_WC_LOC_QP_OP_ERR (more SGEs than the QP has) or
 * IBV_WC_LOC_PROT_ERR. */
int sw_wqe_payload_checked(const struct sw_qp *qp, struct dpv_send_wqe *w, const struct dpv_sge **sge,
			   uint32_t *nsge, const uint8_t **inl, uint32_t *len);

/* sw_mem.c */
/* Copies between the engine and memory of this or another process: 0 or
 * -errno (the process or the mapping is gone). */
int sw_mem_write(int32_t pid, void *dst, const void *src, uint32_t len);
int sw_mem_read(int32_t pid, void *dst, const void *src, uint32_t len);
/* Writes into another process' memory are batched per thread: sw_mem_flush
 * (sw_copy.h) before anything that makes them visible (a CQE, a packet,
 * the end of a poll turn). */
extern __thread uint32_t sw_mem_pending; /* writes waiting in this thread's batch */
void sw_mem_flush_slow(void);
/* Read-ahead of another process' memory within a scope (one WQE sent, one
 * run of READ responses). */
void sw_mem_ra_begin(void);
void sw_mem_ra_end(void);
/* A 64-bit atomic (compare-and-swap, else fetch-and-add) at p of process
 * pid; *orig gets the value before. */
int sw_mem_atomic(int32_t pid, uint64_t *p, bool cmp_swap, uint64_t cmp, uint64_t val, uint64_t *orig);
/* An ATOMIC WRITE's 8-byte store at p of process pid, after every write
 * before it: 0 or -errno. */
int sw_mem_store64(int32_t pid, uint64_t *p, uint64_t val);
/* A FLUSH to persistence: the cache lines of [p, p + len) written back
 * (memory of this process; another's was written by the kernel). */
void sw_mem_writeback(int32_t pid, const void *p, uint64_t len);
/* The slow paths of sw_sge_copy_in / sw_sge_copy_out (sw_copy.h). */
int sw_sge_copy_in_slow(uint32_t pd, const struct dpv_sge *sge, uint32_t n, uint32_t off, const void *src,
			 uint32_t len);
int sw_sge_copy_out_slow(uint32_t pd, const struct dpv_sge *sge, uint32_t n, uint32_t off, void *dst,
			 uint32_t len);

/* sw_fault.c */
void sw_fault_init(void);
/* memcpy, or -EFAULT (counted in sw_mem_faults, logged once) when a page of
 * dst or src is not mapped */
int sw_copy_safe(void *dst, const void *src, size_t n);
/* a 64-bit compare-and-swap (else fetch-and-add) at p, or -EFAULT */
int sw_atomic_safe(uint64_t *p, bool cmp_swap, uint64_t cmp, uint64_t val, uint64_t *orig);
/* a 64-bit store at p (sequentially consistent), or -EFAULT */
int sw_store_safe(uint64_t *p, uint64_t val);
/* the cache lines of [p, p + n) written back to memory (x86-64: CLFLUSH,
 * elsewhere a fence), or -EFAULT */
int sw_writeback_safe(const void *p, size_t n);
extern uint64_t sw_mem_faults;

/* sw_stats.c */
void sw_stats_publish(uint64_t now);

/* sw_telemetry.c */
/* Register /dpverbs/qps and /dpverbs/qp,<qpn> (once; not if eal.telemetry is false). */
void sw_telemetry_init(struct dpv_runtime *rt);

#endif /* SW_LOC_H */
