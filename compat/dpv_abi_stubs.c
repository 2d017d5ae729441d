/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * Exports of rdma-core 44's libibverbs.so.1 in its public version nodes
 * (IBVERBS_1.x) that dpverbs does not implement for real, plus the few
 * small ones that need no device (fork helpers, sysfs helpers, kernel-ABI
 * marshalling). The provider interface (IBVERBS_PRIVATE_34: verbs_*,
 * execute_ioctl, ibv_cmd_*) is in dpv_abi_provider.c.
 *
 * Why they exist: every Debian binary and library involved (ibverbs-utils,
 * perftest, librdmacm.so.1, libmlx5.so.1, libefa.so.1) is linked with
 * BIND_NOW, so the dynamic loader resolves every imported symbol at start-up
 * even if the code path is never taken, and refuses to start when a version
 * node or a symbol is missing. The IBVERBS_PRIVATE_34 node is imported by
 * libmlx5/libefa (NEEDED by perftest) and by ibv_devinfo.
 *
 * Conventions (they follow rdma-core so that callers' error paths work):
 *  - functions returning a pointer return NULL and set errno = EOPNOTSUPP;
 *  - functions returning an errno value return EOPNOTSUPP (and also set
 *    errno = EOPNOTSUPP);
 *  - ibv_read_sysfs_file, whose rdma-core contract is "-1 and errno",
 *    returns -1;
 *  - void functions do nothing.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <infiniband/sa.h>
#include <infiniband/verbs.h>
#include <rdma/ib_user_sa.h>
#include <rdma/ib_user_verbs.h>
#include "dpv_abi.h"

/*
 * Everything defined here with external linkage is an ABI export; the version
 * script (compat/libibverbs.map) decides what is exported. Default visibility
 * keeps that true even if the library is built with -fvisibility=hidden.
 */
#pragma GCC visibility push(default)

/* Declarations of exports that no installed header declares. */
const char *ibv_get_sysfs_path(void);
int ibv_read_sysfs_file(const char *dir, const char *file, char *buf, size_t size);
int ibv_dontfork_range(void *base, size_t size);
int ibv_dofork_range(void *base, size_t size);
void ibv_copy_ah_attr_from_kern(struct ibv_ah_attr *dst, struct ib_uverbs_ah_attr *src);
void ibv_copy_qp_attr_from_kern(struct ibv_qp_attr *dst, struct ib_uverbs_qp_attr *src);
void ibv_copy_path_rec_from_kern(struct ibv_sa_path_rec *dst, struct ib_user_path_rec *src);
void ibv_copy_path_rec_to_kern(struct ib_user_path_rec *dst, struct ibv_sa_path_rec *src);

/**
 * Optional sysfs emulation hook, provided by the verbs core (weak: may be
 * absent). Same contract as ibv_read_sysfs_file(): store at most @p size bytes
 * of the attribute @p file of directory @p dir (e.g. the ibdev_path of a
 * dpverbs device, "/sys/class/infiniband/dpv0", and "board_id") into @p buf
 * and return the number of bytes stored, or -1 with errno set (ENOENT for an
 * unknown path). @p dir is never NULL.
 */
extern int dpv_sysfs_read(const char *dir, const char *file, char *buf, size_t size)
	__attribute__((weak));


/* ======================================================================== */
/* Public verbs that dpverbs does not support (yet).                         */
/* ======================================================================== */

/**
 * ibv_reg_dmabuf_mr - register a dma-buf backed region.
 * Not supported: a software RNIC cannot map a dma-buf of another device.
 * @return NULL, errno = EOPNOTSUPP.
 */
struct ibv_mr *ibv_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset, size_t length,
				 uint64_t iova, int fd, int access)
{
	return dpv_null_eopnotsupp();
}

/**
 * @name Enhanced Connection Establishment (ECE)
 * dpverbs negotiates no vendor ECE options.
 * @return EOPNOTSUPP (an errno value, as in rdma-core), errno = EOPNOTSUPP.
 * librdmacm tolerates EOPNOTSUPP from both (it then skips ECE).
 * @{
 */
int ibv_query_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	return dpv_eopnotsupp();
}

int ibv_set_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	return dpv_eopnotsupp();
}
/** @} */

/**
 * ibv_resolve_eth_l2_from_gid - netlink neighbour lookup used by kernel
 * providers (libmlx5 when creating a RoCE AH). dpverbs resolves L2 addresses
 * inside its own stack, and never calls this.
 * @return -EOPNOTSUPP (rdma-core returns 0 or a negative errno value),
 *         errno = EOPNOTSUPP; @p eth_mac and @p vid are not written.
 */
int ibv_resolve_eth_l2_from_gid(struct ibv_context *context, struct ibv_ah_attr *attr,
				uint8_t eth_mac[ETHERNET_LL_SIZE], uint16_t *vid)
{
	errno = EOPNOTSUPP;
	return -EOPNOTSUPP;
}

/**
 * @name fork() support
 * rdma-core marks registered memory MADV_DONTFORK so that a child's
 * copy-on-write does not move pages the HCA is DMA-ing into. dpverbs' "HCA"
 * is this process reading and writing through ordinary virtual addresses, so
 * a fork never breaks a registration and there is nothing to set up:
 *  - ibv_fork_init() returns 0 (success);
 *  - ibv_is_fork_initialized() returns IBV_FORK_UNNEEDED;
 *  - ibv_dontfork_range()/ibv_dofork_range() return 0 and change nothing.
 * @{
 */
int ibv_fork_init(void)
{
	return 0;
}

enum ibv_fork_status ibv_is_fork_initialized(void)
{
	return IBV_FORK_UNNEEDED;
}

int ibv_dontfork_range(void *base, size_t size)
{
	return 0;
}

int ibv_dofork_range(void *base, size_t size)
{
	return 0;
}
/** @} */

/**
 * @name sysfs helpers
 * dpverbs devices have no sysfs directory.
 *
 * ibv_get_sysfs_path() returns NULL. Its only known caller, Debian's
 * librdmacm (ucma ABI check), passes the result straight back to
 * ibv_read_sysfs_file(), which fails for a NULL @p dir; librdmacm then
 * assumes the newest ucma ABI.
 *
 * ibv_read_sysfs_file() forwards to the weak hook dpv_sysfs_read() when the
 * verbs core provides it (ibv_devinfo reads "board_id" below the device's
 * ibdev_path this way). Like rdma-core it strips one trailing newline and
 * NUL-terminates the result.
 * @return number of bytes in @p buf (without the NUL), or -1 with errno:
 *         ENOENT (no hook, NULL @p dir, or the hook does not know the file),
 *         EINVAL (NULL @p file or @p buf), EOVERFLOW (value does not fit).
 * @{
 */
const char *ibv_get_sysfs_path(void)
{
	return NULL;
}

int ibv_read_sysfs_file(const char *dir, const char *file, char *buf, size_t size)
{
	int (*hook)(const char *, const char *, char *, size_t) = dpv_sysfs_read;
	int len;

	if (file == NULL || buf == NULL) {
		errno = EINVAL;
		return -1;
	}
	if (dir == NULL || hook == NULL) {
		errno = ENOENT;
		return -1;
	}
	len = hook(dir, file, buf, size);
	if (len < 0)
		return -1;
	if ((size_t)len > size) {
		errno = EOVERFLOW;
		return -1;
	}
	if (len > 0 && buf[len - 1] == '\n')
		buf[--len] = '\0';
	else if ((size_t)len < size)
		buf[len] = '\0';
	else {
		/* Would need truncation to terminate: fail, as rdma-core does. */
		errno = EOVERFLOW;
		return -1;
	}
	return len;
}
/** @} */

/**
 * @name Kernel-ABI marshalling (IBVERBS_1.0/1.1, used by librdmacm)
 * Field-by-field conversions between the uverbs/ucma kernel structures
 * (<rdma/ib_user_verbs.h>, <rdma/ib_user_sa.h>) and the verbs structures.
 * Byte order is kept: both sides hold LIDs, P_Key and flow label of path
 * records in network order. These work without any device.
 * @{
 */
void ibv_copy_ah_attr_from_kern(struct ibv_ah_attr *dst, struct ib_uverbs_ah_attr *src)
{
	struct ibv_global_route *grh = &dst->grh;

	memcpy(grh->dgid.raw, src->grh.dgid, sizeof(grh->dgid.raw));
	grh->flow_label = src->grh.flow_label;
	grh->sgid_index = src->grh.sgid_index;
	grh->hop_limit = src->grh.hop_limit;
	grh->traffic_class = src->grh.traffic_class;
	dst->dlid = src->dlid;
	dst->sl = src->sl;
	dst->src_path_bits = src->src_path_bits;
	dst->static_rate = src->static_rate;
	dst->is_global = src->is_global;
	dst->port_num = src->port_num;
}

/*
 * dst->qp_state is deliberately left alone (rdma-core does the same):
 * rdma_init_qp_attr() stores the requested state there before asking the
 * kernel, and callers rely on it afterwards. rate_limit has no kernel field.
 */
void ibv_copy_qp_attr_from_kern(struct ibv_qp_attr *dst, struct ib_uverbs_qp_attr *src)
{
	dst->cur_qp_state = (enum ibv_qp_state)src->cur_qp_state;
	dst->path_mtu = (enum ibv_mtu)src->path_mtu;
	dst->path_mig_state = (enum ibv_mig_state)src->path_mig_state;
	dst->qkey = src->qkey;
	dst->rq_psn = src->rq_psn;
	dst->sq_psn = src->sq_psn;
	dst->dest_qp_num = src->dest_qp_num;
	dst->qp_access_flags = src->qp_access_flags;

	dst->cap = (struct ibv_qp_cap){
		.max_send_wr = src->max_send_wr,
		.max_recv_wr = src->max_recv_wr,
		.max_send_sge = src->max_send_sge,
		.max_recv_sge = src->max_recv_sge,
		.max_inline_data = src->max_inline_data,
	};
	ibv_copy_ah_attr_from_kern(&dst->ah_attr, &src->ah_attr);
	ibv_copy_ah_attr_from_kern(&dst->alt_ah_attr, &src->alt_ah_attr);

	dst->pkey_index = src->pkey_index;
	dst->alt_pkey_index = src->alt_pkey_index;
	dst->en_sqd_async_notify = src->en_sqd_async_notify;
	dst->sq_draining = src->sq_draining;
	dst->max_rd_atomic = src->max_rd_atomic;
	dst->max_dest_rd_atomic = src->max_dest_rd_atomic;
	dst->min_rnr_timer = src->min_rnr_timer;
	dst->port_num = src->port_num;
	dst->timeout = src->timeout;
	dst->retry_cnt = src->retry_cnt;
	dst->rnr_retry = src->rnr_retry;
	dst->alt_port_num = src->alt_port_num;
	dst->alt_timeout = src->alt_timeout;
}

/*
 * The two path-record layouts hold the same fields in a different order and
 * with different widths (ibv_sa_path_rec: int raw_traffic/reversible, uint8_t
 * mtu; kernel: __u32); one macro list keeps both directions in step.
 */
#define DPV_PATH_REC_FIELDS(X)                                                  \
	X(dlid) X(slid) X(raw_traffic) X(flow_label) X(hop_limit)               \
	X(traffic_class) X(reversible) X(numb_path) X(pkey) X(sl)               \
	X(mtu_selector) X(mtu) X(rate_selector) X(rate)                         \
	X(packet_life_time_selector) X(packet_life_time) X(preference)
#define DPV_COPY_FIELD(f) dst->f = src->f;

void ibv_copy_path_rec_from_kern(struct ibv_sa_path_rec *dst, struct ib_user_path_rec *src)
{
	memcpy(dst->dgid.raw, src->dgid, sizeof(dst->dgid.raw));
	memcpy(dst->sgid.raw, src->sgid, sizeof(dst->sgid.raw));
	DPV_PATH_REC_FIELDS(DPV_COPY_FIELD)
}

void ibv_copy_path_rec_to_kern(struct ib_user_path_rec *dst, struct ibv_sa_path_rec *src)
{
	memcpy(dst->dgid, src->dgid.raw, sizeof(dst->dgid));
	memcpy(dst->sgid, src->sgid.raw, sizeof(dst->sgid));
	DPV_PATH_REC_FIELDS(DPV_COPY_FIELD)
}
#undef DPV_COPY_FIELD
#undef DPV_PATH_REC_FIELDS
/** @} */

#pragma GCC visibility pop
