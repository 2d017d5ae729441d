/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Tag matching SRQs (IBV_SRQT_TM), the façade side: the device's tm_caps,
 * the checks of ibv_create_srq_ex's tm_cap, and ibv_post_srq_ops. An op
 * (TAG_ADD, TAG_DEL, TAG_SYNC) goes into the ops ring of the SRQ's tag
 * matching area (dpv_queue.h, struct dpv_tm_hdr) and the driver's
 * srq_doorbell makes the engine execute it; the engine keeps the tag list,
 * matches incoming messages against it and writes the completions
 * (drivers/sw/sw_tm.c). A TAG_ADD's handle is a free entry of the area's
 * handle states, taken here and free again when software has polled the
 * tag's last completion (dpv_tm_cqe_free, as mlx5 frees it in its poll) or,
 * after an unsignalled TAG_DEL, when the engine removed it.
 */
#include <errno.h>
#include <string.h>

#include "dpv_verbs.h"

/* The device's tm_caps: none where the driver has no tag matching (null). */
void dpv_tm_caps(struct ibv_tm_caps *caps)
{
	if (!dpv_core_has_tm()) {
		memset(caps, 0, sizeof(*caps));
		return;
	}
	caps->max_rndv_hdr_size = DPV_TM_MAX_RNDV_HDR;
	caps->max_num_tags = DPV_TM_MAX_TAGS;
	caps->flags = IBV_TM_CAP_RC;
	caps->max_ops = DPV_TM_MAX_OPS;
	caps->max_sge = DPV_TM_MAX_SGE;
}

/* IBV_SRQT_TM needs IBV_SRQ_INIT_ATTR_TM and a CQ of the context (its
 * completions, as on a ConnectX), and tm_cap within the device's tm_caps. */
bool dpv_srq_tm_attr_ok(struct ibv_context *c, const struct ibv_srq_init_attr_ex *a)
{
	const uint32_t need = IBV_SRQ_INIT_ATTR_TM | IBV_SRQ_INIT_ATTR_CQ;
	if ((a->comp_mask & need) != need || !a->cq || a->cq->context != c)
		return false;
	return a->tm_cap.max_num_tags >= 1 && a->tm_cap.max_num_tags <= DPV_TM_MAX_TAGS &&
	       a->tm_cap.max_ops >= 1 && a->tm_cap.max_ops <= DPV_TM_MAX_OPS;
}

void dpv_tm_cqe_free(const struct dpv_cqe *e)
{
	struct dpv_srq *s = dpv_pool_get(DPV_OBJ_SRQ, e->wqe_index >> 8);
	uint32_t h = e->wqe_index & 0xff;
	if (s && s->tm && h < s->tm_tags)
		atomic_store_explicit(&dpv_tm_states(s->tm, s->tm_ops)[h], DPV_TM_FREE, memory_order_release);
}

/* A free handle for a TAG_ADD (its state becomes USED), or -1. */
static int tm_take_handle(struct dpv_srq *s)
{
	_Atomic uint32_t *st = dpv_tm_states(s->tm, s->tm_ops);
	for (uint32_t n = 0; n < s->tm_tags; n++) {
		uint32_t h = (s->tm_next + n) % s->tm_tags;
		uint32_t v = DPV_TM_FREE;
		if (atomic_compare_exchange_strong(&st[h], &v, DPV_TM_USED)) {
			s->tm_next = (h + 1) % s->tm_tags;
			return (int)h;
		}
	}
	return -1;
}

/* Write one op into the ops ring: 0 or an errno value. Holds s->lock. */
static int tm_op_write(struct dpv_srq *s, struct ibv_ops_wr *wr)
{
	uint32_t ci = atomic_load_explicit(&s->tm->ops_ci, memory_order_acquire);
	if (s->tm_pi - ci >= s->tm_ops)
		return ENOMEM; /* ops not executed yet fill the ring (mlx5: its queue overflows) */
	struct dpv_tm_op op = {.wr_id = wr->wr_id, .opcode = (uint8_t)wr->opcode,
			       .flags = (uint8_t)(wr->flags & (IBV_OPS_SIGNALED | IBV_OPS_TM_SYNC)),
			       .unexp_cnt = wr->tm.unexpected_cnt};
	switch (wr->opcode) {
	case IBV_WR_TAG_ADD: {
		if (wr->tm.add.num_sge < 0 || (uint32_t)wr->tm.add.num_sge > DPV_TM_MAX_SGE ||
		    (wr->tm.add.num_sge && !wr->tm.add.sg_list))
			return EINVAL;
		int h = tm_take_handle(s);
		if (h < 0)
			return ENOMEM; /* max_num_tags tags are in the list */
		op.handle = (uint32_t)h;
		op.recv_wr_id = wr->tm.add.recv_wr_id;
		op.tag = wr->tm.add.tag;
		op.mask = wr->tm.add.mask;
		op.num_sge = (uint16_t)wr->tm.add.num_sge;
		if (op.num_sge)
			op.sge = (struct dpv_sge){.addr = wr->tm.add.sg_list[0].addr,
						  .length = wr->tm.add.sg_list[0].length,
						  .lkey = wr->tm.add.sg_list[0].lkey};
		wr->tm.handle = (uint32_t)h;
		break;
	}
	case IBV_WR_TAG_DEL:
		op.handle = wr->tm.handle; /* the engine answers IBV_WC_TM_ERR for one not in its list */
		break;
	case IBV_WR_TAG_SYNC:
		break;
	default:
		return EINVAL;
	}
	dpv_tm_ops(s->tm)[s->tm_pi & (s->tm_ops - 1)] = op;
	s->tm_pi++;
	return 0;
}

/**
 * post_srq_ops (ibv_post_srq_ops): TAG_ADD, TAG_DEL and TAG_SYNC on a tag
 * matching SRQ, in order; the engine executes them and completes them on the
 * SRQ's CQ (IBV_WC_TM_ADD, IBV_WC_TM_DEL, IBV_WC_TM_SYNC) when
 * IBV_OPS_SIGNALED, and always with an error status.
 * RETURN VALUE: 0, or an errno value with *bad the first op not posted:
 * EINVAL (NULL, not a tag matching SRQ, unknown opcode, num_sge above
 * tm_caps.max_sge), ENOMEM (TAG_ADD with max_num_tags tags in the list, or
 * more than max_ops ops not executed yet).
 */
int dpv_post_srq_ops(struct ibv_srq *ib, struct ibv_ops_wr *wr, struct ibv_ops_wr **bad)
{
	if (!ib || !wr) {
		if (bad)
			*bad = wr;
		return EINVAL;
	}
	struct dpv_srq *s = to_dsrq(ib);
	if (!s->tm) {
		if (bad)
			*bad = wr;
		return EINVAL; /* as mlx5 for an SRQ without tag matching */
	}
	int ret = 0;
	rte_spinlock_lock(&s->lock);
	uint32_t pi0 = s->tm_pi;
	for (; wr; wr = wr->next)
		if ((ret = tm_op_write(s, wr)) != 0)
			break;
	bool rung = s->tm_pi != pi0;
	if (rung)
		atomic_store_explicit(&s->tm->ops_pi, s->tm_pi, memory_order_release);
	rte_spinlock_unlock(&s->lock);
	if (rung)
		ctx_ops(ib->context)->srq_doorbell(s->drv);
	if (ret && bad)
		*bad = wr;
	return ret;
}
