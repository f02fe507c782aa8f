/* SPDX-License-Identifier: BSD-3-Clause */
/* rsockets (the socket API over RDMA, <rdma/rsocket.h>) are not built: every entry point
 * fails with ENOSYS. They exist because rping, ucmatose, udaddy, mckey and cmtime import
 * them (rpoll, ...) and are bound at start (BIND_NOW) even when a program never calls
 * them. rpoll too fails rather than fall back to poll(2): an rsocket descriptor cannot
 * exist here, so a caller of rpoll is one that expected rsockets. */
#include <rdma/rsocket.h>

#include "rdmacm.h"

#define RS_ENOSYS rc_fail(ENOSYS)

RC_EXPORT int rsocket(int domain, int type, int protocol)
{
	(void)domain, (void)type, (void)protocol;
	return RS_ENOSYS;
}

RC_EXPORT int rbind(int socket, const struct sockaddr *addr, socklen_t addrlen)
{
	(void)socket, (void)addr, (void)addrlen;
	return RS_ENOSYS;
}

RC_EXPORT int rlisten(int socket, int backlog)
{
	(void)socket, (void)backlog;
	return RS_ENOSYS;
}

RC_EXPORT int raccept(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
	(void)socket, (void)addr, (void)addrlen;
	return RS_ENOSYS;
}

RC_EXPORT int rconnect(int socket, const struct sockaddr *addr, socklen_t addrlen)
{
	(void)socket, (void)addr, (void)addrlen;
	return RS_ENOSYS;
}

RC_EXPORT int rshutdown(int socket, int how)
{
	(void)socket, (void)how;
	return RS_ENOSYS;
}

RC_EXPORT int rclose(int socket)
{
	(void)socket;
	return RS_ENOSYS;
}

RC_EXPORT ssize_t rrecv(int socket, void *buf, size_t len, int flags)
{
	(void)socket, (void)buf, (void)len, (void)flags;
	return RS_ENOSYS;
}

RC_EXPORT ssize_t rrecvfrom(int socket, void *buf, size_t len, int flags, struct sockaddr *src_addr,
			    socklen_t *addrlen)
{
	(void)socket, (void)buf, (void)len, (void)flags, (void)src_addr, (void)addrlen;
	return RS_ENOSYS;
}

RC_EXPORT ssize_t rrecvmsg(int socket, struct msghdr *msg, int flags)
{
	(void)socket, (void)msg, (void)flags;
	return RS_ENOSYS;
}

RC_EXPORT ssize_t rsend(int socket, const void *buf, size_t len, int flags)
{
	(void)socket, (void)buf, (void)len, (void)flags;
	return RS_ENOSYS;
}

RC_EXPORT ssize_t rsendto(int socket, const void *buf, size_t len, int flags,
			  const struct sockaddr *dest_addr, socklen_t addrlen)
{
	(void)socket, (void)buf, (void)len, (void)flags, (void)dest_addr, (void)addrlen;
	return RS_ENOSYS;
}

RC_EXPORT ssize_t rsendmsg(int socket, const struct msghdr *msg, int flags)
{
	(void)socket, (void)msg, (void)flags;
	return RS_ENOSYS;
}

RC_EXPORT ssize_t rread(int socket, void *buf, size_t count)
{
	(void)socket, (void)buf, (void)count;
	return RS_ENOSYS;
}

RC_EXPORT ssize_t rreadv(int socket, const struct iovec *iov, int iovcnt)
{
	(void)socket, (void)iov, (void)iovcnt;
	return RS_ENOSYS;
}

RC_EXPORT ssize_t rwrite(int socket, const void *buf, size_t count)
{
	(void)socket, (void)buf, (void)count;
	return RS_ENOSYS;
}

RC_EXPORT ssize_t rwritev(int socket, const struct iovec *iov, int iovcnt)
{
	(void)socket, (void)iov, (void)iovcnt;
	return RS_ENOSYS;
}

RC_EXPORT int rpoll(struct pollfd *fds, nfds_t nfds, int timeout)
{
	(void)fds, (void)nfds, (void)timeout;
	return RS_ENOSYS;
}

RC_EXPORT int rselect(int nfds, fd_set *readfds, fd_set *writefds, fd_set *exceptfds,
		      struct timeval *timeout)
{
	(void)nfds, (void)readfds, (void)writefds, (void)exceptfds, (void)timeout;
	return RS_ENOSYS;
}

RC_EXPORT int rgetpeername(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
	(void)socket, (void)addr, (void)addrlen;
	return RS_ENOSYS;
}

RC_EXPORT int rgetsockname(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
	(void)socket, (void)addr, (void)addrlen;
	return RS_ENOSYS;
}

RC_EXPORT int rsetsockopt(int socket, int level, int optname, const void *optval,
			  socklen_t optlen)
{
	(void)socket, (void)level, (void)optname, (void)optval, (void)optlen;
	return RS_ENOSYS;
}

RC_EXPORT int rgetsockopt(int socket, int level, int optname, void *optval, socklen_t *optlen)
{
	(void)socket, (void)level, (void)optname, (void)optval, (void)optlen;
	return RS_ENOSYS;
}

RC_EXPORT int rfcntl(int socket, int cmd, ...)
{
	(void)socket, (void)cmd;
	return RS_ENOSYS;
}

RC_EXPORT off_t riomap(int socket, void *buf, size_t len, int prot, int flags, off_t offset)
{
	(void)socket, (void)buf, (void)len, (void)prot, (void)flags, (void)offset;
	return RS_ENOSYS;
}

RC_EXPORT int riounmap(int socket, void *buf, size_t len)
{
	(void)socket, (void)buf, (void)len;
	return RS_ENOSYS;
}

RC_EXPORT size_t riowrite(int socket, const void *buf, size_t count, off_t offset, int flags)
{
	(void)socket, (void)buf, (void)count, (void)offset, (void)flags;
	return (size_t)RS_ENOSYS; /* rsocket.h's type: (size_t)-1 */
}
