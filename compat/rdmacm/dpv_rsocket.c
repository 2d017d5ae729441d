/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * rsocket(7), the socket API over RDMA of rdma-core's librdmacm: exported
 * with rdma-core's prototypes (<rdma/rsocket.h>) so that programs linked
 * with it load (riostream, rstream, rcopy), and not provided by dpverbs.
 * Every call fails with errno EOPNOTSUPP: -1, or (size_t)-1 for riowrite.
 * This is permanent, not waiting for the connection manager (see
 * dpverbs_rdmacm(7)). The arguments are not looked at.
 */
#include <errno.h>
#include <stdarg.h>

#include <rdma/rsocket.h>

#include "dpv_rdmacm.h"

int rsocket(int domain, int type, int protocol)
{
	return dpv_rdmacm_err(EOPNOTSUPP);
}

int rbind(int socket, const struct sockaddr *addr, socklen_t addrlen)
{
	return dpv_rdmacm_err(EOPNOTSUPP);
}

int rlisten(int socket, int backlog)
{
	return dpv_rdmacm_err(EOPNOTSUPP);
}

int raccept(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
	return dpv_rdmacm_err(EOPNOTSUPP);
}

int rconnect(int socket, const struct sockaddr *addr, socklen_t addrlen)
{
	return dpv_rdmacm_err(EOPNOTSUPP);
}

int rshutdown(int socket, int how)
{
	return dpv_rdmacm_err(EOPNOTSUPP);
}

int rclose(int socket)
{
	return dpv_rdmacm_err(EOPNOTSUPP);
}

ssize_t rrecv(int socket, void *buf, size_t len, int flags)
{
	return dpv_rdmacm_err(EOPNOTSUPP);
}

ssize_t rrecvfrom(int socket, void *buf, size_t len, int flags, struct sockaddr *src_addr,
		  socklen_t *addrlen)
{
	return dpv_rdmacm_err(EOPNOTSUPP);
}

ssize_t rrecvmsg(int socket, struct msghdr *msg, int flags)
{
	return dpv_rdmacm_err(EOPNOTSUPP);
}

ssize_t rsend(int socket, const void *buf, size_t len, int flags)
{
	return dpv_rdmacm_err(EOPNOTSUPP);
}

ssize_t rsendto(int socket, const void *buf, size_t len, int flags, const struct sockaddr *dest_addr,
		socklen_t addrlen)
{
	return dpv_rdmacm_err(EOPNOTSUPP);
}

ssize_t rsendmsg(int socket, const struct msghdr *msg, int flags)
{
	return dpv_rdmacm_err(EOPNOTSUPP);
}

ssize_t rread(int socket, void *buf, size_t count)
{
	return dpv_rdmacm_err(EOPNOTSUPP);
}

ssize_t rreadv(int socket, const struct iovec *iov, int iovcnt)
{
	return dpv_rdmacm_err(EOPNOTSUPP);
}

ssize_t rwrite(int socket, const void *buf, size_t count)
{
	return dpv_rdmacm_err(EOPNOTSUPP);
}

ssize_t rwritev(int socket, const struct iovec *iov, int iovcnt)
{
	return dpv_rdmacm_err(EOPNOTSUPP);
}

int rpoll(struct pollfd *fds, nfds_t nfds, int timeout)
{
	return dpv_rdmacm_err(EOPNOTSUPP);
}

int rselect(int nfds, fd_set *readfds, fd_set *writefds, fd_set *exceptfds, struct timeval *timeout)
{
	return dpv_rdmacm_err(EOPNOTSUPP);
}

int rgetpeername(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
	return dpv_rdmacm_err(EOPNOTSUPP);
}

int rgetsockname(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
	return dpv_rdmacm_err(EOPNOTSUPP);
}

int rsetsockopt(int socket, int level, int optname, const void *optval, socklen_t optlen)
{
	return dpv_rdmacm_err(EOPNOTSUPP);
}

int rgetsockopt(int socket, int level, int optname, void *optval, socklen_t *optlen)
{
	return dpv_rdmacm_err(EOPNOTSUPP);
}

int rfcntl(int socket, int cmd, ...)
{
	return dpv_rdmacm_err(EOPNOTSUPP);
}

off_t riomap(int socket, void *buf, size_t len, int prot, int flags, off_t offset)
{
	return dpv_rdmacm_err(EOPNOTSUPP);
}

int riounmap(int socket, void *buf, size_t len)
{
	return dpv_rdmacm_err(EOPNOTSUPP);
}

size_t riowrite(int socket, const void *buf, size_t count, off_t offset, int flags)
{
	errno = EOPNOTSUPP;
	return (size_t)-1;
}
