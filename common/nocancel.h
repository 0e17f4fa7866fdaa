/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * System calls made without glibc's cancellation wrappers.
 *
 * recv, recvmsg, sendmsg, poll and epoll_wait are cancellation points
 * (POSIX.1-2017 XSH 2.9.5.2).  The library makes them with a lock held
 * or a connection's state half changed: a QP's stream half framed under
 * its lock, a driver on its connection's waiters' list while it sleeps
 * on the CQ.  Its public entries hold cancellation off for that reason
 * (rpc/rpc_internal.h, "Thread cancellation"); the progress and loop
 * threads are the library's own and are never cancelled.  So nothing is
 * lost by calling the kernel directly, as glibc itself does internally
 * for the same reason, and the wrappers' two atomic updates of the
 * thread's cancellation word (some fifty instructions) go: five such
 * calls a NULL round trip on loopback.
 *
 * Sanitizer builds keep the libc calls, whose interceptors check the
 * buffers and tell ThreadSanitizer which threads synchronise through a
 * descriptor.
 */
#ifndef RPCRDMA_COMMON_NOCANCEL_H
#define RPCRDMA_COMMON_NOCANCEL_H

#include <poll.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common/sanitizers.h"

#if defined(RPCRDMA_ASAN) || defined(RPCRDMA_TSAN) || defined(RPCRDMA_MSAN)
#define rpcrdma_recv_nocancel recv
#define rpcrdma_recvmsg_nocancel recvmsg
#define rpcrdma_sendmsg_nocancel sendmsg
#define rpcrdma_epoll_wait_nocancel epoll_wait
#define rpcrdma_poll_nocancel poll
#else
/* The kernel's sigset size for the p-variants (NULL mask: none). */
#define RPCRDMA_NOCANCEL_SIGSETSIZE (_NSIG / 8)

static inline ssize_t rpcrdma_recv_nocancel(int fd, void *buf, size_t len,
					    int flags)
{
	return syscall(SYS_recvfrom, fd, buf, len, flags, NULL, NULL);
}

static inline ssize_t rpcrdma_recvmsg_nocancel(int fd, struct msghdr *m,
					       int flags)
{
	return syscall(SYS_recvmsg, fd, m, flags);
}

static inline ssize_t rpcrdma_sendmsg_nocancel(int fd, const struct msghdr *m,
					       int flags)
{
	return syscall(SYS_sendmsg, fd, m, flags);
}

/* epoll_wait, as epoll_pwait with no mask (every architecture has it). */
static inline int rpcrdma_epoll_wait_nocancel(int epfd, struct epoll_event *ev,
					      int max, int timeout_ms)
{
	return (int)syscall(SYS_epoll_pwait, epfd, ev, max, timeout_ms, NULL,
			    RPCRDMA_NOCANCEL_SIGSETSIZE);
}

/* poll, as ppoll with no mask; a negative time-out waits for ever. */
static inline int rpcrdma_poll_nocancel(struct pollfd *p, nfds_t n,
					int timeout_ms)
{
	struct timespec ts = {timeout_ms / 1000,
			      (long)(timeout_ms % 1000) * 1000000L};
	return (int)syscall(SYS_ppoll, p, n, timeout_ms < 0 ? NULL : &ts, NULL,
			    RPCRDMA_NOCANCEL_SIGSETSIZE);
}
#endif

#endif
