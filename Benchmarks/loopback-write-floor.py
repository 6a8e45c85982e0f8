#!/usr/bin/env python3
"""The kernel's floor under one delivery to one socket: a minimal sender writes one small
WebSocket-sized frame to each of 100 loopback TCP connections (TCP_NODELAY) 100 times a
second for 10 s, read by a forked process, and prints its system and user CPU per send
(BENCHMARKS.md, "A floor under room-paced"). Loopback only; ends by itself."""
import socket, time, resource, os, sys, select
N=100; RATE=100; SECS=10
srv=socket.socket(); srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR,1); srv.bind(('127.0.0.1',0)); srv.listen(200)
port=srv.getsockname()[1]
pid=os.fork()
if pid==0:
    # reader: N client sockets, epoll, read everything
    cs=[socket.create_connection(('127.0.0.1',port)) for _ in range(N)]
    ep=select.epoll()
    for c in cs: ep.register(c.fileno(), select.EPOLLIN)
    fds={c.fileno():c for c in cs}
    t0=time.time()
    while time.time()-t0<SECS+2:
        for fd,_ in ep.poll(0.5):
            if not fds[fd].recv(65536): pass
    os._exit(0)
conns=[srv.accept()[0] for _ in range(N)]
for c in conns: c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
frame=b'\x81\x3c'+b'x'*60
r0=resource.getrusage(resource.RUSAGE_SELF)
t0=time.time(); n=0
for i in range(RATE*SECS):
    for c in conns: c.send(frame); n+=1
    nxt=t0+(i+1)/RATE
    d=nxt-time.time()
    if d>0: time.sleep(d)
r1=resource.getrusage(resource.RUSAGE_SELF)
print(f"writes {n}  sys µs/write {1e6*(r1.ru_stime-r0.ru_stime)/n:.1f}  user µs/write {1e6*(r1.ru_utime-r0.ru_utime)/n:.1f}")
os.waitpid(pid,0)
