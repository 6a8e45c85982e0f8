#ifdef __linux__
#define _GNU_SOURCE
#include <pthread.h>
#include <stddef.h>
#include <sys/socket.h>
#include "CWarrenEpoll.h"

int warren_accept4(int fd, int flags) {
    return accept4(fd, NULL, NULL, flags);
}

int warren_name_thread(const char *name) {
    return pthread_setname_np(pthread_self(), name);
}
#endif
