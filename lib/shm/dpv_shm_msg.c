/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Shared mode: message I/O on the SOCK_SEQPACKET connection between an
 * application and dpverbsd (one message per datagram, an optional file
 * descriptor attached with SCM_RIGHTS).
 */
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "dpv_shm_proto.h"

#define BODY(field) sizeof(((struct dpv_shm_msg *)0)->u.field)

size_t dpv_shm_req_len(uint16_t op)
{
	static const size_t len[DPV_SHM_OP_NR] = {
		[DPV_SHM_HELLO] = BODY(hello),
		[DPV_SHM_QUERY_PORT] = BODY(dev),
		[DPV_SHM_CTX_OPEN] = BODY(dev),
		[DPV_SHM_CTX_CLOSE] = BODY(dev),
		[DPV_SHM_QUEUE_ALLOC] = BODY(queue),
		[DPV_SHM_QUEUE_FREE] = BODY(queue),
		[DPV_SHM_NUM_RESERVE] = BODY(num),
		[DPV_SHM_NUM_RELEASE] = BODY(num),
		[DPV_SHM_PD_ALLOC] = BODY(pd),
		[DPV_SHM_PD_DEALLOC] = BODY(pd),
		[DPV_SHM_MR_REG] = BODY(mr),
		[DPV_SHM_MR_DEREG] = BODY(mr),
		[DPV_SHM_AH_CREATE] = BODY(ah),
		[DPV_SHM_AH_DESTROY] = BODY(ah),
		[DPV_SHM_CQ_CREATE] = BODY(cq),
		[DPV_SHM_CQ_DESTROY] = BODY(cq),
		[DPV_SHM_CQ_RESIZE] = BODY(cq),
		[DPV_SHM_SRQ_CREATE] = BODY(srq),
		[DPV_SHM_SRQ_DESTROY] = BODY(srq),
		[DPV_SHM_QP_CREATE] = BODY(qp),
		[DPV_SHM_QP_DESTROY] = BODY(qp),
		[DPV_SHM_QP_MODIFY] = BODY(qpm),
		[DPV_SHM_QP_QUERY] = BODY(qpq),
		[DPV_SHM_SHPD_ALLOC] = BODY(shpd),
		[DPV_SHM_SHPD_SHARE] = BODY(shpd),
		[DPV_SHM_IMPORT_PD] = BODY(imp),
		[DPV_SHM_IMPORT_MR] = BODY(imp),
		[DPV_SHM_XRCD_OPEN] = BODY(xrcd),
		[DPV_SHM_XRCD_CLOSE] = BODY(xrcd),
	};
	return op < DPV_SHM_OP_NR ? len[op] : 0;
}

int dpv_shm_send(int sock, const struct dpv_shm_msg *msg, int fd)
{
	struct iovec iov = {.iov_base = (void *)msg, .iov_len = msg->h.len};
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} c;
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
	if (fd >= 0) {
		memset(&c, 0, sizeof(c));
		mh.msg_control = c.buf;
		mh.msg_controllen = sizeof(c.buf);
		struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	}
	for (;;) {
		ssize_t n = sendmsg(sock, &mh, MSG_NOSIGNAL);
		if (n == (ssize_t)msg->h.len)
			return 0;
		if (n < 0 && errno == EINTR)
			continue;
		return n < 0 ? -errno : -EIO;
	}
}

/* Close every descriptor a message brought but the first (kept in *fd). */
static void take_fds(struct msghdr *mh, int *fd)
{
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(mh); cm; cm = CMSG_NXTHDR(mh, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		size_t n = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < n; i++) {
			int f;
			memcpy(&f, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
			if (*fd < 0)
				*fd = f;
			else
				close(f);
		}
	}
}

int dpv_shm_recv(int sock, struct dpv_shm_msg *msg, int *fd, int timeout_ms)
{
	*fd = -1;
	struct pollfd pf = {.fd = sock, .events = POLLIN};
	for (;;) {
		int r = poll(&pf, 1, timeout_ms);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			return -ETIMEDOUT;
		break;
	}
	struct iovec iov = {.iov_base = msg, .iov_len = sizeof(*msg)};
	union {
		char buf[CMSG_SPACE(4 * sizeof(int))];
		struct cmsghdr align;
	} c;
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = c.buf, .msg_controllen = sizeof(c.buf)};
	ssize_t n;
	do
		n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	take_fds(&mh, fd);
	if (n == 0)
		return 0;
	if ((size_t)n < sizeof(msg->h) || msg->h.magic != DPV_SHM_MAGIC || msg->h.len != (size_t)n ||
	    (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC))) {
		if (*fd >= 0) {
			close(*fd);
			*fd = -1;
		}
		return -EPROTO;
	}
	return (int)n;
}
