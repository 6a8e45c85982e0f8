// The Linux calls the epoll door makes that Swift's Glibc module leaves out: <sys/epoll.h>,
// <sys/eventfd.h>, and two GNU extensions (accept4, pthread_setname_np) behind functions of
// our own, since they need _GNU_SOURCE. Empty elsewhere.
#ifndef C_WARREN_EPOLL_H
#define C_WARREN_EPOLL_H

#ifdef __linux__
#include <sys/epoll.h>
#include <sys/eventfd.h>

/// accept4(2) without the peer's address: the accepted descriptor, or -1 with errno set.
int warren_accept4(int fd, int flags);

/// Names the calling thread as the system shows it (top -H, perf): at most 15 bytes are kept.
int warren_name_thread(const char *name);
#endif

#endif
