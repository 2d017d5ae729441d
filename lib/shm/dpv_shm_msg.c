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

_Static_assert(sizeof(struct dpv_shm_msg) == DPV_SHM_MAX_MSG, "message buffer");
_Static_assert(sizeof(struct dpv_shm_hello) + sizeof(struct dpv_shm_hdr) <= DPV_SHM_MAX_MSG, "welcome fits");

size_t dpv_shm_body_len(uint16_t op)
{
	static const size_t len[DPV_SHM_OP_NR] = {
		[DPV_SHM_HELLO] = BODY(hello),
		[DPV_SHM_QUERY_PORT] = BODY(port),
		[DPV_SHM_CTX_OPEN] = BODY(dev),
		[DPV_SHM_CTX_CLOSE] = BODY(dev),
		[DPV_SHM_CTX_IMPORT] = BODY(dev),
		[DPV_SHM_MEM_ADD] = BODY(mem),
		[DPV_SHM_MEM_DEL] = BODY(mem),
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
		[DPV_SHM_OPEN_QP] = BODY(oqp),
		[DPV_SHM_GSI_LISTEN] = BODY(gsil),
		[DPV_SHM_MCAST] = BODY(mcast),
		[DPV_SHM_NEIGH] = BODY(neigh),
		[DPV_SHM_MW_ALLOC] = BODY(mw),
		[DPV_SHM_MW_DEALLOC] = BODY(mw),
		[DPV_SHM_DM_ALLOC] = BODY(dm),
		[DPV_SHM_DM_FREE] = BODY(dm),
		[DPV_SHM_DM_IMPORT] = BODY(dm),
		[DPV_SHM_FLOW] = BODY(flow),
	};
	return op < DPV_SHM_OP_NR ? len[op] : 0;
}

void dpv_shm_close_fds(int fds[DPV_SHM_MAX_FDS])
{
	for (unsigned int i = 0; i < DPV_SHM_MAX_FDS; i++)
		if (fds[i] >= 0) {
			close(fds[i]);
			fds[i] = -1;
		}
}

int dpv_shm_send(int sock, const struct dpv_shm_msg *msg, const int *fds, unsigned int nfd)
{
	struct iovec iov = {.iov_base = (void *)msg, .iov_len = msg->h.len};
	union {
		char buf[CMSG_SPACE(DPV_SHM_MAX_FDS * sizeof(int))];
		struct cmsghdr align;
	} c;
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
	if (nfd > DPV_SHM_MAX_FDS)
		return -EINVAL;
	if (nfd) {
		memset(&c, 0, sizeof(c));
		mh.msg_control = c.buf;
		mh.msg_controllen = CMSG_SPACE(nfd * sizeof(int));
		struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(nfd * sizeof(int));
		memcpy(CMSG_DATA(cm), fds, nfd * sizeof(int));
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

/* Keep the first DPV_SHM_MAX_FDS descriptors a message brought, close the rest. */
static void take_fds(struct msghdr *mh, int fds[DPV_SHM_MAX_FDS])
{
	unsigned int k = 0;
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(mh); cm; cm = CMSG_NXTHDR(mh, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		size_t n = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < n; i++) {
			int f;
			memcpy(&f, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
			if (k < DPV_SHM_MAX_FDS)
				fds[k++] = f;
			else
				close(f);
		}
	}
}

int dpv_shm_recv(int sock, struct dpv_shm_msg *msg, int fds[DPV_SHM_MAX_FDS], int timeout_ms)
{
	for (unsigned int i = 0; i < DPV_SHM_MAX_FDS; i++)
		fds[i] = -1;
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
		char buf[CMSG_SPACE(8 * sizeof(int))];
		struct cmsghdr align;
	} c;
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = c.buf, .msg_controllen = sizeof(c.buf)};
	ssize_t n;
	do
		n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno == EAGAIN ? -EAGAIN : -errno;
	take_fds(&mh, fds);
	if (n == 0)
		return 0;
	if ((size_t)n < sizeof(msg->h) || msg->h.magic != DPV_SHM_MAGIC || msg->h.len != (size_t)n ||
	    (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC))) {
		dpv_shm_close_fds(fds);
		return -EPROTO;
	}
	return (int)n;
}
