/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * Exports of rdma-core 44's libibverbs.so.1 in its IBVERBS_PRIVATE_34 node,
 * the provider interface (verbs_*, the ioctl command machinery, the ibv_cmd_*
 * kernel command wrappers), that dpverbs does not implement: dpverbs loads no
 * rdma-core provider. The public (IBVERBS_1.x) ones are in dpv_abi_stubs.c.
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
 *    ibv_read_ibdev_sysfs_file) return -1;
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

#include <infiniband/verbs.h>
#include <rdma/ib_user_verbs.h>
#include "dpv_abi.h"

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
