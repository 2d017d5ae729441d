/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_stubs: behaviour of compat/dpv_abi_stubs.c and dpv_abi_provider.c.
 *  - return conventions of the unsupported verbs (NULL/EOPNOTSUPP, errno
 *    values, -1 for ibv_cmd_poll_cq and the sysfs readers, fork helpers);
 *  - ibv_read_sysfs_file with and without the dpv_sysfs_read hook (this file
 *    is built twice; -DDPV_TEST_SYSFS_HOOK supplies a hook);
 *  - kernel-ABI marshalling, field by field, and (if Debian's
 *    libibverbs.so.1 is installed) byte-for-byte against rdma-core's.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/sa.h>
#include <infiniband/verbs.h>
#include <rdma/ib_user_sa.h>
#include <rdma/ib_user_verbs.h>

#include "dpvt_check.h"

/* Exports without an installed prototype (rdma-core driver.h / marshall.h). */
struct verbs_sysfs_dev;
struct ibv_command_buffer;
const char *ibv_get_sysfs_path(void);
int ibv_read_sysfs_file(const char *dir, const char *file, char *buf, size_t size);
int ibv_dontfork_range(void *base, size_t size);
int ibv_dofork_range(void *base, size_t size);
void ibv_copy_ah_attr_from_kern(struct ibv_ah_attr *dst, struct ib_uverbs_ah_attr *src);
void ibv_copy_qp_attr_from_kern(struct ibv_qp_attr *dst, struct ib_uverbs_qp_attr *src);
void ibv_copy_path_rec_from_kern(struct ibv_sa_path_rec *dst, struct ib_user_path_rec *src);
void ibv_copy_path_rec_to_kern(struct ib_user_path_rec *dst, struct ibv_sa_path_rec *src);
int ibv_cmd_poll_cq(struct ibv_cq *cq, int ne, struct ibv_wc *wc);
int ibv_cmd_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr);
int ibv_cmd_dealloc_pd(struct ibv_pd *pd);
int execute_ioctl(struct ibv_context *context, struct ibv_command_buffer *cmd);
unsigned int __ioctl_final_num_attrs(unsigned int num_attrs, struct ibv_command_buffer *link);
int ibv_read_ibdev_sysfs_file(char *buf, size_t size, struct verbs_sysfs_dev *sysfs_dev,
			      const char *fnfmt, ...);
void *_verbs_init_and_alloc_context(struct ibv_device *device, int cmd_fd, size_t alloc_size,
				    struct verbs_context *context_offset, uint32_t driver_id);
struct ibv_context *verbs_open_device(struct ibv_device *device, void *private_data);
void verbs_register_driver_34(const void *ops);
extern bool verbs_allow_disassociate_destroy;

#ifdef DPV_TEST_SYSFS_HOOK
/* A fake dpverbs device directory with a few attributes. */
int dpv_sysfs_read(const char *dir, const char *file, char *buf, size_t size);
int dpv_sysfs_read(const char *dir, const char *file, char *buf, size_t size)
{
	const char *val = NULL;
	size_t len;

	if (strcmp(dir, "/sys/class/infiniband/dpv0") != 0) {
		errno = ENOENT;
		return -1;
	}
	if (strcmp(file, "board_id") == 0)
		val = "DPV0000001\n"; /* newline as in sysfs: must be stripped */
	else if (strcmp(file, "fw_ver") == 0)
		val = "0.1.0"; /* no newline */
	else if (strcmp(file, "empty") == 0)
		val = "";
	if (val == NULL) {
		errno = ENOENT;
		return -1;
	}
	len = strlen(val);
	if (len > size)
		len = size;
	memcpy(buf, val, len);
	return (int)len;
}
#endif

static void test_unsupported(void)
{
	struct ibv_send_wr wr, *bad = NULL;
	char buf[16];

	/* (contexts, PDs, MRs and device memory are imported by the façade
	 * in shared mode: test/shared, test/func/test_dm.c) */
	errno = 0;
	CHECK(ibv_reg_dmabuf_mr(NULL, 0, 4096, 0, -1, 0) == NULL && errno == EOPNOTSUPP,
	      "errno %d", errno);
	CHECK(ibv_query_ece(NULL, NULL) == EOPNOTSUPP, "query_ece");
	CHECK(ibv_set_ece(NULL, NULL) == EOPNOTSUPP, "set_ece");
	CHECK(ibv_resolve_eth_l2_from_gid(NULL, NULL, NULL, NULL) == -EOPNOTSUPP, "resolve");

	CHECK(ibv_fork_init() == 0, "fork_init");
	CHECK(ibv_is_fork_initialized() == IBV_FORK_UNNEEDED, "fork status");
	CHECK(ibv_dontfork_range(buf, sizeof(buf)) == 0, "dontfork");
	CHECK(ibv_dofork_range(buf, sizeof(buf)) == 0, "dofork");

	/* provider interface */
	verbs_register_driver_34(NULL);
	CHECK(verbs_allow_disassociate_destroy == false, "flag");
	CHECK(sizeof(verbs_allow_disassociate_destroy) == 1, "size");
	errno = 0;
	CHECK(ibv_cmd_poll_cq(NULL, 4, NULL) == -1 && errno == EOPNOTSUPP, "poll_cq errno %d", errno);
	CHECK(ibv_cmd_post_send(NULL, &wr, &bad) == EOPNOTSUPP && bad == &wr, "post_send");
	CHECK(ibv_cmd_dealloc_pd(NULL) == EOPNOTSUPP, "dealloc_pd");
	CHECK(execute_ioctl(NULL, NULL) == EOPNOTSUPP, "execute_ioctl");
	CHECK(__ioctl_final_num_attrs(7, NULL) == 7, "final_num_attrs");
	errno = 0;
	CHECK(_verbs_init_and_alloc_context(NULL, -1, 1024, NULL, 0) == NULL && errno == EOPNOTSUPP,
	      "init_and_alloc");
	errno = 0;
	CHECK(verbs_open_device(NULL, NULL) == NULL && errno == EOPNOTSUPP, "open_device");
	errno = 0;
	CHECK(ibv_read_ibdev_sysfs_file(buf, sizeof(buf), NULL, "%s", "x") == -1 && errno == EINVAL,
	      "ibdev_sysfs NULL");
	errno = 0;
	CHECK(ibv_read_ibdev_sysfs_file(buf, sizeof(buf), (struct verbs_sysfs_dev *)buf, "%s", "x") == -1 &&
		      errno == EOPNOTSUPP,
	      "ibdev_sysfs");
}

static void test_sysfs(void)
{
	char buf[32];
	const char *dev = "/sys/class/infiniband/dpv0";

	CHECK(ibv_get_sysfs_path() == NULL, "sysfs path");
	/* librdmacm's ucma ABI check: ibv_read_sysfs_file(ibv_get_sysfs_path(), ...) */
	errno = 0;
	CHECK(ibv_read_sysfs_file(ibv_get_sysfs_path(), "class/misc/rdma_cm/abi_version", buf,
				  sizeof(buf)) < 0 && errno == ENOENT,
	      "NULL dir errno %d", errno);
	errno = 0;
	CHECK(ibv_read_sysfs_file(dev, NULL, buf, sizeof(buf)) == -1 && errno == EINVAL, "NULL file");

#ifdef DPV_TEST_SYSFS_HOOK
	memset(buf, 'x', sizeof(buf));
	CHECK(ibv_read_sysfs_file(dev, "board_id", buf, sizeof(buf)) == 10 &&
		      strcmp(buf, "DPV0000001") == 0,
	      "board_id \"%.32s\"", buf);
	memset(buf, 'x', sizeof(buf));
	CHECK(ibv_read_sysfs_file(dev, "fw_ver", buf, sizeof(buf)) == 5 && strcmp(buf, "0.1.0") == 0,
	      "fw_ver \"%.32s\"", buf);
	memset(buf, 'x', sizeof(buf));
	CHECK(ibv_read_sysfs_file(dev, "empty", buf, sizeof(buf)) == 0 && buf[0] == '\0', "empty");
	/* exactly fills the buffer without a newline: cannot be terminated */
	errno = 0;
	CHECK(ibv_read_sysfs_file(dev, "fw_ver", buf, 5) == -1 && errno == EOVERFLOW, "overflow");
	/* newline is the last byte that fits: stripped, fits */
	CHECK(ibv_read_sysfs_file(dev, "board_id", buf, 11) == 10 && strcmp(buf, "DPV0000001") == 0,
	      "exact fit");
	errno = 0;
	CHECK(ibv_read_sysfs_file(dev, "nope", buf, sizeof(buf)) == -1 && errno == ENOENT, "unknown");
	errno = 0;
	CHECK(ibv_read_sysfs_file("/sys/class/infiniband/mlx5_0", "board_id", buf, sizeof(buf)) == -1 &&
		      errno == ENOENT,
	      "other dev");
	printf("sysfs: hook path tested\n");
#else
	errno = 0;
	CHECK(ibv_read_sysfs_file(dev, "board_id", buf, sizeof(buf)) == -1 && errno == ENOENT,
	      "no hook errno %d", errno);
	printf("sysfs: no-hook path tested\n");
#endif
}

static void fill(void *p, size_t n, unsigned seed)
{
	unsigned char *b = p;

	for (size_t i = 0; i < n; i++)
		b[i] = (unsigned char)(seed + i * 7u);
}

static void test_marshall(void)
{
	struct ib_uverbs_qp_attr kqp;
	struct ibv_qp_attr qp;
	struct ib_user_path_rec kpr, kpr2;
	struct ibv_sa_path_rec pr;

	fill(&kqp, sizeof(kqp), 1);
	memset(&qp, 0xee, sizeof(qp));
	qp.qp_state = IBV_QPS_RTR;
	ibv_copy_qp_attr_from_kern(&qp, &kqp);
	CHECK(qp.qp_state == IBV_QPS_RTR, "qp_state must be preserved");
	CHECK(qp.cur_qp_state == (enum ibv_qp_state)kqp.cur_qp_state, "cur_qp_state");
	CHECK(qp.qkey == kqp.qkey && qp.rq_psn == kqp.rq_psn && qp.sq_psn == kqp.sq_psn, "psn");
	CHECK(qp.dest_qp_num == kqp.dest_qp_num && qp.qp_access_flags == kqp.qp_access_flags, "qpn");
	CHECK(qp.cap.max_inline_data == kqp.max_inline_data && qp.cap.max_recv_sge == kqp.max_recv_sge,
	      "cap");
	CHECK(memcmp(qp.ah_attr.grh.dgid.raw, kqp.ah_attr.grh.dgid, 16) == 0, "dgid");
	CHECK(qp.ah_attr.grh.flow_label == kqp.ah_attr.grh.flow_label, "flow_label");
	CHECK(qp.alt_ah_attr.dlid == kqp.alt_ah_attr.dlid && qp.alt_ah_attr.port_num ==
		      kqp.alt_ah_attr.port_num, "alt ah");
	CHECK(qp.ah_attr.is_global == kqp.ah_attr.is_global && qp.ah_attr.sl == kqp.ah_attr.sl, "ah");
	CHECK(qp.alt_timeout == kqp.alt_timeout && qp.rnr_retry == kqp.rnr_retry &&
		      qp.pkey_index == kqp.pkey_index && qp.sq_draining == kqp.sq_draining,
	      "tail fields");
	CHECK(qp.rate_limit == 0xeeeeeeeeu, "rate_limit must be untouched");

	fill(&kpr, sizeof(kpr), 3);
	memset(&pr, 0, sizeof(pr));
	ibv_copy_path_rec_from_kern(&pr, &kpr);
	CHECK(memcmp(pr.sgid.raw, kpr.sgid, 16) == 0 && pr.dlid == kpr.dlid && pr.pkey == kpr.pkey &&
		      pr.flow_label == kpr.flow_label && pr.preference == kpr.preference &&
		      pr.raw_traffic == (int)kpr.raw_traffic && pr.mtu == (uint8_t)kpr.mtu,
	      "path rec from kern");
	/* round trip: fields whose width is the same on both sides survive */
	memset(&kpr2, 0, sizeof(kpr2));
	ibv_copy_path_rec_to_kern(&kpr2, &pr);
	CHECK(memcmp(kpr2.dgid, kpr.dgid, 16) == 0 && kpr2.slid == kpr.slid &&
		      kpr2.reversible == kpr.reversible && kpr2.numb_path == kpr.numb_path &&
		      kpr2.packet_life_time_selector == kpr.packet_life_time_selector &&
		      kpr2.mtu == (uint8_t)kpr.mtu,
	      "path rec to kern");
}

/* Byte-for-byte comparison with rdma-core's implementation, when installed. */
static void test_marshall_vs_rdma_core(void)
{
	const char *path = getenv("DPV_REAL_IBVERBS");
	void (*qp_fn)(struct ibv_qp_attr *, struct ib_uverbs_qp_attr *);
	void (*from_fn)(struct ibv_sa_path_rec *, struct ib_user_path_rec *);
	void (*to_fn)(struct ib_user_path_rec *, struct ibv_sa_path_rec *);
	void *h;

	if (path == NULL)
		path = "/usr/lib/x86_64-linux-gnu/libibverbs.so.1";
	if (strcmp(path, "none") == 0 || path[0] != '/' ||
	    (h = dlopen(path, RTLD_NOW | RTLD_LOCAL)) == NULL) {
		printf("marshall vs rdma-core: skipped\n");
		return;
	}
	if (dlsym(h, "ibv_alloc_shpd") != NULL) {
		printf("marshall vs rdma-core: skipped (not rdma-core's library)\n");
		dlclose(h);
		return;
	}
	*(void **)&qp_fn = dlsym(h, "ibv_copy_qp_attr_from_kern");
	*(void **)&from_fn = dlsym(h, "ibv_copy_path_rec_from_kern");
	*(void **)&to_fn = dlsym(h, "ibv_copy_path_rec_to_kern");
	CHECK(qp_fn && from_fn && to_fn, "symbols missing in %s", path);
	if (qp_fn && from_fn && to_fn) {
		for (unsigned seed = 0; seed < 8; seed++) {
			struct ib_uverbs_qp_attr kqp;
			struct ibv_qp_attr a, b;
			struct ib_user_path_rec kpr, ka, kb;
			struct ibv_sa_path_rec pa, pb;

			fill(&kqp, sizeof(kqp), seed * 13);
			fill(&a, sizeof(a), seed * 5);
			memcpy(&b, &a, sizeof(a));
			ibv_copy_qp_attr_from_kern(&a, &kqp);
			qp_fn(&b, &kqp);
			CHECK(memcmp(&a, &b, sizeof(a)) == 0, "qp_attr differs (seed %u)", seed);

			fill(&kpr, sizeof(kpr), seed * 11);
			fill(&pa, sizeof(pa), seed * 3);
			memcpy(&pb, &pa, sizeof(pa));
			ibv_copy_path_rec_from_kern(&pa, &kpr);
			from_fn(&pb, &kpr);
			CHECK(memcmp(&pa, &pb, sizeof(pa)) == 0, "path_rec_from differs (seed %u)", seed);

			fill(&ka, sizeof(ka), seed * 17);
			memcpy(&kb, &ka, sizeof(ka));
			ibv_copy_path_rec_to_kern(&ka, &pa);
			to_fn(&kb, &pa);
			CHECK(memcmp(&ka, &kb, sizeof(ka)) == 0, "path_rec_to differs (seed %u)", seed);
		}
		printf("marshall vs rdma-core: done against %s\n", path);
	}
	dlclose(h);
}

int main(void)
{
	test_unsupported();
	test_sysfs();
	test_marshall();
	test_marshall_vs_rdma_core();
	return dpvt_finish();
}
