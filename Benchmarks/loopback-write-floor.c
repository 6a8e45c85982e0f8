/* The kernel's floor under one delivery to one socket, without an interpreter: the same test
 * as loopback-write-floor.py. A sender writes one 62-byte WebSocket-sized frame to each of 100
 * loopback TCP connections (TCP_NODELAY) 100 times a second for 10 s; a forked reader takes
 * them with epoll. Prints the sender's CPU per send, system, user and both (BENCHMARKS.md, "A
 * floor under room-paced"). Read the total: the kernel splits CPU time between system and user
 * by sampling at its ticks, and with a sender this simple whole runs land on one side. Loopback
 * only; ends by itself.
 *
 *   cc -O2 -o /tmp/loopback-write-floor Benchmarks/loopback-write-floor.c && /tmp/loopback-write-floor
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { N = 100, RATE = 100, SECS = 10 };

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static double seconds(struct timeval t) { return t.tv_sec + t.tv_usec / 1e6; }

int main(void) {
    int srv = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    setsockopt(srv, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    if (bind(srv, (struct sockaddr *)&a, sizeof a) || listen(srv, 200) || getsockname(srv, (struct sockaddr *)&a, &len)) {
        perror("listen");
        return 1;
    }
    pid_t pid = fork();
    if (pid == 0) {
        /* The reader: N client sockets, epoll, read everything until the sender is done. */
        int ep = epoll_create1(0);
        for (int i = 0; i < N; i++) {
            int c = socket(AF_INET, SOCK_STREAM, 0);
            if (connect(c, (struct sockaddr *)&a, sizeof a)) _exit(1);
            struct epoll_event e = {.events = EPOLLIN, .data.fd = c};
            epoll_ctl(ep, EPOLL_CTL_ADD, c, &e);
        }
        char buf[65536];
        struct epoll_event ev[N];
        double end = now() + SECS + 2;
        while (now() < end) {
            int n = epoll_wait(ep, ev, N, 500);
            for (int i = 0; i < n; i++) {
                if (read(ev[i].data.fd, buf, sizeof buf) <= 0) { /* the sender is gone */ }
            }
        }
        _exit(0);
    }
    int conns[N];
    for (int i = 0; i < N; i++) {
        conns[i] = accept(srv, NULL, NULL);
        setsockopt(conns[i], IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
    char frame[62] = {(char)0x81, 0x3c};
    memset(frame + 2, 'x', 60);
    struct rusage r0, r1;
    getrusage(RUSAGE_SELF, &r0);
    double t0 = now();
    long sends = 0;
    for (int i = 0; i < RATE * SECS; i++) {
        for (int c = 0; c < N; c++) {
            if (write(conns[c], frame, sizeof frame) == sizeof frame) sends++;
        }
        double wait = t0 + (double)(i + 1) / RATE - now();
        if (wait > 0) {
            struct timespec d = {(time_t)wait, (long)((wait - (time_t)wait) * 1e9)};
            nanosleep(&d, NULL);
        }
    }
    getrusage(RUSAGE_SELF, &r1);
    double sys = 1e6 * (seconds(r1.ru_stime) - seconds(r0.ru_stime)) / sends;
    double user = 1e6 * (seconds(r1.ru_utime) - seconds(r0.ru_utime)) / sends;
    printf("writes %ld  CPU µs/write %.1f (sys %.1f, user %.1f)\n", sends, sys + user, sys, user);
    waitpid(pid, NULL, 0);
    return 0;
}
