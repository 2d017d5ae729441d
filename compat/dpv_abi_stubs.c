/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * Exports of rdma-core 44's libibverbs.so.1 that dpverbs does not implement
 * for real, plus the few small ones that need no device (fork helpers,
 * sysfs helpers, kernel-ABI marshalling).
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
 *  - ibv_cmd_* and other functions returning an errno value return
 *    EOPNOTSUPP (and also set errno = EOPNOTSUPP);
 *  - functions whose rdma-core contract is "-1 and errno" (ibv_cmd_poll_cq,
 *    ibv_read_ibdev_sysfs_file, ibv_read_sysfs_file) return -1;
 *  - void functions do nothing.
 *
 * Prototypes of the IBVERBS_PRIVATE_34 functions follow rdma-core v44's
 * libibverbs/driver.h and cmd_ioctl.h (not installed by libibverbs-dev); the
 * provider-internal structures are only used through pointers and are left
 * incomplete here. C symbol binding does not check signatures; they are
 * spelled out for documentation and to get each return type right.
 *
 * ibv_query_gid_type@IBVERBS_PRIVATE_34 is implemented by the verbs core, not
 * here.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <infiniband/sa.h>
#include <infiniband/verbs.h>
#include <rdma/ib_user_sa.h>
#include <rdma/ib_user_verbs.h>

/*
 * Everything defined here with external linkage is an ABI export; the version
 * script (compat/libibverbs.map) decides what is exported. Default visibility
 * keeps that true even if the library is built with -fvisibility=hidden.
 */
#pragma GCC visibility push(default)

/* ------------------------------------------------------------------------ */
/* Provider-internal types of rdma-core (driver.h / kern-abi.h): opaque.     */

struct verbs_device_ops;
struct verbs_context_ops;
struct verbs_sysfs_dev;
struct verbs_xrcd;
struct verbs_mr;
struct verbs_cq;
struct verbs_srq;
struct verbs_qp;
struct verbs_dm;
struct verbs_counters;
struct verbs_flow_action;
struct ibv_command_buffer;
/* Command structs of kern-abi.h (struct ibv_<verb> wrapping ib_uverbs_<verb>). */
struct ibv_get_context;
struct ibv_query_port;
struct ibv_alloc_pd;
struct ibv_open_xrcd;
struct ibv_reg_mr;
struct ibv_rereg_mr;
struct ibv_alloc_mw;
struct ibv_create_cq;
struct ibv_create_cq_ex;
struct ibv_resize_cq;
struct ibv_modify_cq;
struct ibv_create_srq;
struct ibv_create_xsrq;
struct ibv_modify_srq;
struct ibv_query_srq;
struct ibv_create_qp;
struct ibv_create_qp_ex;
struct ibv_open_qp;
struct ibv_query_qp;
struct ibv_modify_qp;
struct ibv_modify_qp_ex;
struct ibv_create_wq;
struct ibv_modify_wq;

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

/** Helper: fail a pointer-returning verb. */
static void *dpv_null_eopnotsupp(void)
{
	errno = EOPNOTSUPP;
	return NULL;
}

/** Helper: fail an errno-returning verb. */
static int dpv_eopnotsupp(void)
{
	errno = EOPNOTSUPP;
	return EOPNOTSUPP;
}

/* ======================================================================== */
/* Public verbs that dpverbs does not support (yet).                         */
/* ======================================================================== */

/**
 * @name Import of device memory
 * dpverbs has no device memory (ibv_alloc_dm fails), so none can be
 * imported: ibv_import_dm returns NULL with errno = EOPNOTSUPP and
 * ibv_unimport_dm does nothing. Contexts, PDs and MRs are imported in
 * shared mode (lib/verbs/dpv_import.c).
 * @{
 */
struct ibv_dm *ibv_import_dm(struct ibv_context *context, uint32_t dm_handle)
{
	return dpv_null_eopnotsupp();
}

void ibv_unimport_dm(struct ibv_dm *dm)
{
}
/** @} */

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

/* ======================================================================== */
/* IBVERBS_PRIVATE_34: the provider interface of rdma-core.                  */
/* dpverbs loads no rdma-core provider; these only have to exist so that     */
/* libmlx5.so.1 / libefa.so.1 (NEEDED by perftest) load under BIND_NOW.      */
/* ======================================================================== */

/**
 * verbs_allow_disassociate_destroy - rdma-core's flag that lets destroy
 * calls succeed after a device was hot-unplugged. A 1-byte bool data object
 * that providers read; always false here.
 */
bool verbs_allow_disassociate_destroy;

/**
 * verbs_register_driver_34 - called by every rdma-core provider's ELF
 * constructor (Debian's libmlx5/libefa run it when perftest loads them).
 * Must stay a harmless no-op: dpverbs never dispatches to those providers.
 */
void verbs_register_driver_34(const struct verbs_device_ops *ops)
{
}

/**
 * @name Provider context / CQ helpers
 * _verbs_init_and_alloc_context() and verbs_open_device() return NULL with
 * errno = EOPNOTSUPP; verbs_uninit_context(), verbs_set_ops() and
 * verbs_init_cq() do nothing; __verbs_log() discards the message.
 * @{
 */
void *_verbs_init_and_alloc_context(struct ibv_device *device, int cmd_fd, size_t alloc_size,
				    struct verbs_context *context_offset, uint32_t driver_id)
{
	return dpv_null_eopnotsupp();
}

struct ibv_context *verbs_open_device(struct ibv_device *device, void *private_data)
{
	return dpv_null_eopnotsupp();
}

void verbs_uninit_context(struct verbs_context *context)
{
}

void verbs_set_ops(struct verbs_context *vctx, const struct verbs_context_ops *ops)
{
}

void verbs_init_cq(struct ibv_cq *cq, struct ibv_context *context,
		   struct ibv_comp_channel *channel, void *cq_context)
{
}

void __verbs_log(struct verbs_context *ctx, uint32_t level, const char *fmt, ...)
{
}
/** @} */

/**
 * @name ioctl command machinery
 * execute_ioctl() returns EOPNOTSUPP (errno value), errno = EOPNOTSUPP.
 * __ioctl_final_num_attrs() returns @p num_attrs unchanged: it sizes a
 * caller's on-stack attribute array, and since execute_ioctl() never merges
 * linked buffers here, the caller's own count is always enough.
 * @{
 */
int execute_ioctl(struct ibv_context *context, struct ibv_command_buffer *cmd)
{
	return dpv_eopnotsupp();
}

unsigned int __ioctl_final_num_attrs(unsigned int num_attrs, struct ibv_command_buffer *link)
{
	return num_attrs;
}
/** @} */

/**
 * ibv_read_ibdev_sysfs_file - read an attribute below a provider's
 * verbs_sysfs_dev. No provider device exists in dpverbs.
 * @return -1 with errno = EINVAL for a NULL @p sysfs_dev, else -1 with
 *         errno = EOPNOTSUPP (rdma-core's contract is "-1 and errno", never
 *         a positive errno value, which callers would take as a length).
 */
int ibv_read_ibdev_sysfs_file(char *buf, size_t size, struct verbs_sysfs_dev *sysfs_dev,
			      const char *fnfmt, ...)
{
	errno = sysfs_dev == NULL ? EINVAL : EOPNOTSUPP;
	return -1;
}

/**
 * ibv_cmd_poll_cq - uverbs write() fallback of poll_cq.
 * @return -1 with errno = EOPNOTSUPP (its contract is a completion count or
 *         -1, so a positive errno value would read as completions).
 */
int ibv_cmd_poll_cq(struct ibv_cq *cq, int ne, struct ibv_wc *wc)
{
	errno = EOPNOTSUPP;
	return -1;
}

/**
 * @name Post fallbacks
 * @return EOPNOTSUPP (errno value), errno = EOPNOTSUPP, and *@p bad_wr set
 *         to the first work request (none was posted).
 * @{
 */
int ibv_cmd_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr)
{
	if (bad_wr != NULL)
		*bad_wr = wr;
	return dpv_eopnotsupp();
}

int ibv_cmd_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr)
{
	if (bad_wr != NULL)
		*bad_wr = wr;
	return dpv_eopnotsupp();
}

int ibv_cmd_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr,
			  struct ibv_recv_wr **bad_wr)
{
	if (bad_wr != NULL)
		*bad_wr = wr;
	return dpv_eopnotsupp();
}
/** @} */

/**
 * @name ibv_cmd_* kernel command wrappers
 * dpverbs has no uverbs kernel device to send commands to.
 * @return EOPNOTSUPP (rdma-core's ibv_cmd_* return errno values), and set
 *         errno = EOPNOTSUPP. Output arguments are not written.
 * @{
 */
int ibv_cmd_get_context(struct verbs_context *context, struct ibv_get_context *cmd,
			size_t cmd_size, struct ib_uverbs_get_context_resp *resp,
			size_t resp_size)
{
	return dpv_eopnotsupp();
}

int ibv_cmd_query_context(struct ibv_context *ctx, struct ibv_command_buffer *driver)
{
	return dpv_eopnotsupp();
}

int ibv_cmd_query_device_any(struct ibv_context *context,
			     const struct ibv_query_device_ex_input *input,
			     struct ibv_device_attr_ex *attr, size_t attr_size,
			     struct ib_uverbs_ex_query_device_resp *resp, size_t *resp_size)
{
	return dpv_eopnotsupp();
}

int ibv_cmd_query_port(struct ibv_context *context, uint8_t port_num,
		       struct ibv_port_attr *port_attr, struct ibv_query_port *cmd,
		       size_t cmd_size)
{
	return dpv_eopnotsupp();
}

int ibv_cmd_alloc_pd(struct ibv_context *context, struct ibv_pd *pd, struct ibv_alloc_pd *cmd,
		     size_t cmd_size, struct ib_uverbs_alloc_pd_resp *resp, size_t resp_size)
{
	return dpv_eopnotsupp();
}

int ibv_cmd_dealloc_pd(struct ibv_pd *pd)
{
	return dpv_eopnotsupp();
}

int ibv_cmd_open_xrcd(struct ibv_context *context, struct verbs_xrcd *xrcd, int vxrcd_size,
		      struct ibv_xrcd_init_attr *attr, struct ibv_open_xrcd *cmd,
		      size_t cmd_size, struct ib_uverbs_open_xrcd_resp *resp, size_t resp_size)
{
	return dpv_eopnotsupp();
}

int ibv_cmd_close_xrcd(struct verbs_xrcd *xrcd)
{
	return dpv_eopnotsupp();
}

int ibv_cmd_reg_mr(struct ibv_pd *pd, void *addr, size_t length, uint64_t hca_va, int access,
		   struct verbs_mr *vmr, struct ibv_reg_mr *cmd, size_t cmd_size,
		   struct ib_uverbs_reg_mr_resp *resp, size_t resp_size)
{
	return dpv_eopnotsupp();
}

int ibv_cmd_rereg_mr(struct verbs_mr *vmr, uint32_t flags, void *addr, size_t length,
		     uint64_t hca_va, int access, struct ibv_pd *pd, struct ibv_rereg_mr *cmd,
		     size_t cmd_sz, struct ib_uverbs_rereg_mr_resp *resp, size_t resp_sz)
{
	return dpv_eopnotsupp();
}

int ibv_cmd_dereg_mr(struct verbs_mr *vmr)
{
	return dpv_eopnotsupp();
}

int ibv_cmd_query_mr(struct ibv_pd *pd, struct verbs_mr *vmr, uint32_t mr_handle)
{
	return dpv_eopnotsupp();
}

int ibv_cmd_advise_mr(struct ibv_pd *pd, enum ibv_advise_mr_advice advice, uint32_t flags,
		      struct ibv_sge *sg_list, uint32_t num_sge)
{
	return dpv_eopnotsupp();
}

int ibv_cmd_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset, size_t length, uint64_t iova,
			  int fd, int access, struct verbs_mr *vmr)
{
	return dpv_eopnotsupp();
}

int ibv_cmd_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type, struct ibv_mw *mw,
		     struct ibv_alloc_mw *cmd, size_t cmd_size,
		     struct ib_uverbs_alloc_mw_resp *resp, size_t resp_size)
{
	return dpv_eopnotsupp();
}

int ibv_cmd_dealloc_mw(struct ibv_mw *mw)
{
	return dpv_eopnotsupp();
}

int ibv_cmd_create_cq(struct ibv_context *context, int cqe, struct ibv_comp_channel *channel,
		      int comp_vector, struct ibv_cq *cq, struct ibv_create_cq *cmd,
		      size_t cmd_size, struct ib_uverbs_create_cq_resp *resp, size_t resp_size)
{
	return dpv_eopnotsupp();
}

int ibv_cmd_create_cq_ex(struct ibv_context *context, const struct ibv_cq_init_attr_ex *cq_attr,
			 struct verbs_cq *cq, struct ibv_create_cq_ex *cmd, size_t cmd_size,
			 struct ib_uverbs_ex_create_cq_resp *resp, size_t resp_size,
			 uint32_t cmd_flags)
{
	return dpv_eopnotsupp();
}

int ibv_cmd_req_notify_cq(struct ibv_cq *cq, int solicited_only)
{
	return dpv_eopnotsupp();
}

int ibv_cmd_resize_cq(struct ibv_cq *cq, int cqe, struct ibv_resize_cq *cmd, size_t cmd_size,
		      struct ib_uverbs_resize_cq_resp *resp, size_t resp_size)
{
	return dpv_eopnotsupp();
}

int ibv_cmd_destroy_cq(struct ibv_cq *cq)
{
	return dpv_eopnotsupp();
}

int ibv_cmd_modify_cq(struct ibv_cq *cq, struct ibv_modify_cq_attr *attr,
		      struct ibv_modify_cq *cmd, size_t cmd_size)
{
	return dpv_eopnotsupp();
}

int ibv_cmd_create_srq(struct ibv_pd *pd, struct ibv_srq *srq, struct ibv_srq_init_attr *attr,
		       struct ibv_create_srq *cmd, size_t cmd_size,
		       struct ib_uverbs_create_srq_resp *resp, size_t resp_size)
{
	return dpv_eopnotsupp();
}

int ibv_cmd_create_srq_ex(struct ibv_context *context, struct verbs_srq *srq,
			  struct ibv_srq_init_attr_ex *attr_ex, struct ibv_create_xsrq *cmd,
			  size_t cmd_size, struct ib_uverbs_create_srq_resp *resp,
			  size_t resp_size)
{
	return dpv_eopnotsupp();
}

int ibv_cmd_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr, int srq_attr_mask,
		       struct ibv_modify_srq *cmd, size_t cmd_size)
{
	return dpv_eopnotsupp();
}

int ibv_cmd_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr,
		      struct ibv_query_srq *cmd, size_t cmd_size)
{
	return dpv_eopnotsupp();
}

int ibv_cmd_destroy_srq(struct ibv_srq *srq)
{
	return dpv_eopnotsupp();
}

int ibv_cmd_create_qp(struct ibv_pd *pd, struct ibv_qp *qp, struct ibv_qp_init_attr *attr,
		      struct ibv_create_qp *cmd, size_t cmd_size,
		      struct ib_uverbs_create_qp_resp *resp, size_t resp_size)
{
	return dpv_eopnotsupp();
}

int ibv_cmd_create_qp_ex(struct ibv_context *context, struct verbs_qp *qp,
			 struct ibv_qp_init_attr_ex *attr_ex, struct ibv_create_qp *cmd,
			 size_t cmd_size, struct ib_uverbs_create_qp_resp *resp, size_t resp_size)
{
	return dpv_eopnotsupp();
}

int ibv_cmd_create_qp_ex2(struct ibv_context *context, struct verbs_qp *qp,
			  struct ibv_qp_init_attr_ex *qp_attr, struct ibv_create_qp_ex *cmd,
			  size_t cmd_size, struct ib_uverbs_ex_create_qp_resp *resp,
			  size_t resp_size)
{
	return dpv_eopnotsupp();
}

int ibv_cmd_open_qp(struct ibv_context *context, struct verbs_qp *qp, int vqp_sz,
		    struct ibv_qp_open_attr *attr, struct ibv_open_qp *cmd, size_t cmd_size,
		    struct ib_uverbs_create_qp_resp *resp, size_t resp_size)
{
	return dpv_eopnotsupp();
}

int ibv_cmd_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *qp_attr, int attr_mask,
		     struct ibv_qp_init_attr *qp_init_attr, struct ibv_query_qp *cmd,
		     size_t cmd_size)
{
	return dpv_eopnotsupp();
}

int ibv_cmd_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask,
		      struct ibv_modify_qp *cmd, size_t cmd_size)
{
	return dpv_eopnotsupp();
}

int ibv_cmd_modify_qp_ex(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask,
			 struct ibv_modify_qp_ex *cmd, size_t cmd_size,
			 struct ib_uverbs_ex_modify_qp_resp *resp, size_t resp_size)
{
	return dpv_eopnotsupp();
}

int ibv_cmd_destroy_qp(struct ibv_qp *qp)
{
	return dpv_eopnotsupp();
}

int ibv_cmd_create_ah(struct ibv_pd *pd, struct ibv_ah *ah, struct ibv_ah_attr *attr,
		      struct ib_uverbs_create_ah_resp *resp, size_t resp_size)
{
	return dpv_eopnotsupp();
}

int ibv_cmd_destroy_ah(struct ibv_ah *ah)
{
	return dpv_eopnotsupp();
}

int ibv_cmd_attach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	return dpv_eopnotsupp();
}

int ibv_cmd_detach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	return dpv_eopnotsupp();
}

int ibv_cmd_create_flow(struct ibv_qp *qp, struct ibv_flow *flow_id,
			struct ibv_flow_attr *flow_attr, void *ucmd, size_t ucmd_size)
{
	return dpv_eopnotsupp();
}

int ibv_cmd_destroy_flow(struct ibv_flow *flow_id)
{
	return dpv_eopnotsupp();
}

int ibv_cmd_create_flow_action_esp(struct ibv_context *ctx, struct ibv_flow_action_esp_attr *attr,
				   struct verbs_flow_action *flow_action,
				   struct ibv_command_buffer *driver)
{
	return dpv_eopnotsupp();
}

int ibv_cmd_modify_flow_action_esp(struct verbs_flow_action *flow_action,
				   struct ibv_flow_action_esp_attr *attr,
				   struct ibv_command_buffer *driver)
{
	return dpv_eopnotsupp();
}

int ibv_cmd_destroy_flow_action(struct verbs_flow_action *action)
{
	return dpv_eopnotsupp();
}

int ibv_cmd_create_wq(struct ibv_context *context, struct ibv_wq_init_attr *wq_init_attr,
		      struct ibv_wq *wq, struct ibv_create_wq *cmd, size_t cmd_size,
		      struct ib_uverbs_ex_create_wq_resp *resp, size_t resp_size)
{
	return dpv_eopnotsupp();
}

int ibv_cmd_modify_wq(struct ibv_wq *wq, struct ibv_wq_attr *attr, struct ibv_modify_wq *cmd,
		      size_t cmd_size)
{
	return dpv_eopnotsupp();
}

int ibv_cmd_destroy_wq(struct ibv_wq *wq)
{
	return dpv_eopnotsupp();
}

int ibv_cmd_create_rwq_ind_table(struct ibv_context *context,
				 struct ibv_rwq_ind_table_init_attr *init_attr,
				 struct ibv_rwq_ind_table *rwq_ind_table,
				 struct ib_uverbs_ex_create_rwq_ind_table_resp *resp,
				 size_t resp_size)
{
	return dpv_eopnotsupp();
}

int ibv_cmd_destroy_rwq_ind_table(struct ibv_rwq_ind_table *rwq_ind_table)
{
	return dpv_eopnotsupp();
}

int ibv_cmd_create_counters(struct ibv_context *context, struct ibv_counters_init_attr *init_attr,
			    struct verbs_counters *vcounters, struct ibv_command_buffer *link)
{
	return dpv_eopnotsupp();
}

int ibv_cmd_destroy_counters(struct verbs_counters *vcounters)
{
	return dpv_eopnotsupp();
}

int ibv_cmd_read_counters(struct verbs_counters *vcounters, uint64_t *counters_value,
			  uint32_t ncounters, uint32_t flags, struct ibv_command_buffer *link)
{
	return dpv_eopnotsupp();
}

int ibv_cmd_alloc_dm(struct ibv_context *ctx, const struct ibv_alloc_dm_attr *dm_attr,
		     struct verbs_dm *dm, struct ibv_command_buffer *link)
{
	return dpv_eopnotsupp();
}

int ibv_cmd_free_dm(struct verbs_dm *dm)
{
	return dpv_eopnotsupp();
}

int ibv_cmd_reg_dm_mr(struct ibv_pd *pd, struct verbs_dm *dm, uint64_t offset, size_t length,
		      unsigned int access, struct verbs_mr *vmr, struct ibv_command_buffer *link)
{
	return dpv_eopnotsupp();
}
/** @} */

#pragma GCC visibility pop
