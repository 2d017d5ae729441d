/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * udp_pingpong: the sockets and the set-up of each mode. The server and
 * its client agree on the parameters over TCP (a "hello" line and an "ok"
 * line); the data then goes over a connected UDP socket, or for tcp_bw a
 * second TCP connection to a listener at the address the client reached
 * the server by. --loopback makes both ends on 127.0.0.1.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>

#include "udp_pingpong.h"

int udp_socket(int family, const struct opts *o)
{
	int fd = socket(family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	/* room for a full credit window of datagrams (skb overhead included) */
	int sz = (int)(o->rx_depth * (o->size + 2048u) + 65536u);
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &sz, sizeof(sz)))
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
	if (!o->busy) {
		struct timeval tv = {0, 50000};
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	}
	return fd;
}

int bind_any(int fd, int family, const char *addr)
{
	struct sockaddr_storage ss;
	memset(&ss, 0, sizeof(ss));
	if (family == AF_INET6) {
		struct sockaddr_in6 *s = (struct sockaddr_in6 *)&ss;
		s->sin6_family = AF_INET6;
		s->sin6_addr = in6addr_any;
		if (addr)
			inet_pton(AF_INET6, addr, &s->sin6_addr);
		return bind(fd, (struct sockaddr *)s, sizeof(*s));
	}
	struct sockaddr_in *s = (struct sockaddr_in *)&ss;
	s->sin_family = AF_INET;
	s->sin_addr.s_addr = htonl(INADDR_ANY);
	if (addr)
		inet_pton(AF_INET, addr, &s->sin_addr);
	return bind(fd, (struct sockaddr *)s, sizeof(*s));
}

int local_port(int fd)
{
	struct sockaddr_storage ss;
	socklen_t l = sizeof(ss);
	if (getsockname(fd, (struct sockaddr *)&ss, &l))
		return -1;
	return ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
					      : ((struct sockaddr_in *)&ss)->sin_port);
}

/* connect the UDP socket to the address of a TCP peer/local end, other port */
int connect_like(int ufd, int tcpfd, bool peer, int port)
{
	struct sockaddr_storage ss;
	socklen_t l = sizeof(ss);
	if ((peer ? getpeername : getsockname)(tcpfd, (struct sockaddr *)&ss, &l))
		return -1;
	if (ss.ss_family == AF_INET6)
		((struct sockaddr_in6 *)&ss)->sin6_port = htons((uint16_t)port);
	else
		((struct sockaddr_in *)&ss)->sin_port = htons((uint16_t)port);
	return connect(ufd, (struct sockaddr *)&ss, l);
}


/* a TCP socket connected to the peer of the control connection cfd (peer)
 * or to its local end (!peer), at another port */
int tcp_connect_like(int cfd, bool peer, int port)
{
	struct sockaddr_storage ss;
	socklen_t l = sizeof(ss);
	int fd;
	if ((peer ? getpeername : getsockname)(cfd, (struct sockaddr *)&ss, &l))
		return -1;
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (connect_like(fd, cfd, peer, port)) {
		close(fd);
		return -1;
	}
	return fd;
}

/* a TCP listener at the local address of cfd (or 127.0.0.1 if cfd < 0),
 * ephemeral port */
int tcp_listen_like(int cfd)
{
	struct sockaddr_storage ss;
	socklen_t l = sizeof(ss);
	int fd, one = 1;
	if (cfd >= 0) {
		if (getsockname(cfd, (struct sockaddr *)&ss, &l))
			return -1;
	} else {
		struct sockaddr_in *a = (struct sockaddr_in *)&ss;
		memset(&ss, 0, sizeof(ss));
		a->sin_family = AF_INET;
		a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		l = sizeof(*a);
	}
	if (ss.ss_family == AF_INET6)
		((struct sockaddr_in6 *)&ss)->sin6_port = 0;
	else
		((struct sockaddr_in *)&ss)->sin_port = 0;
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&ss, l) || listen(fd, 1)) {
		close(fd);
		return -1;
	}
	return fd;
}

/* ------------------------------------------------------------ server --- */

/* tcp_bw: the data connection, from a listener at the address the client
 * reached us by; its port goes back in the "ok" line */
static int server_tcp(struct opts *o, struct conn *c, const char *line)
{
	uint64_t d;

	if (pt_kv_u64(line, "duration", &d) && d >= 1 && d <= 3600)
		o->duration_s = (unsigned int)d;
	c->dlfd = tcp_listen_like(c->cfd);
	if (c->dlfd < 0 || pt_send_line(c->cfd, "ok udpport=0 tcpport=%d", local_port(c->dlfd))) {
		fprintf(stderr, "%s: TCP data listener: %s\n", prog, strerror(errno));
		return -1;
	}
	c->dfd = pt_tcp_accept(c->dlfd);
	if (c->dfd < 0)
		return -1;
	return 0;
}

/* UDP: a socket of the control connection's family, connected to the
 * client's UDP port at the client's address; its port goes back */
static int server_udp(const struct opts *o, struct conn *c, int port)
{
	struct sockaddr_storage ss;
	socklen_t l = sizeof(ss);

	getsockname(c->cfd, (struct sockaddr *)&ss, &l);
	c->ufd = udp_socket(ss.ss_family, o);
	if (c->ufd < 0 || bind_any(c->ufd, ss.ss_family, NULL) || connect_like(c->ufd, c->cfd, true, port)) {
		fprintf(stderr, "%s: UDP socket: %s\n", prog, strerror(errno));
		return -1;
	}
	if (pt_send_line(c->cfd, "ok udpport=%d", local_port(c->ufd)))
		return -1;
	return 0;
}

/* --server: wait for a client; its "hello" line sets the test and the
 * parameters (ours on the command line give way) */
int conn_server(struct opts *o, struct conn *c)
{
	char line[1024], tname[32];
	uint64_t v[6];

	c->lfd = pt_tcp_listen(NULL, o->tcp_port);
	if (c->lfd < 0)
		return -1;
	if (!o->json)
		printf("%s: waiting for a client on TCP port %d\n", prog, o->tcp_port);
	fflush(stdout);
	c->cfd = pt_tcp_accept(c->lfd);
	if (c->cfd < 0)
		return -1;
	if (pt_recv_line(c->cfd, line, sizeof(line)) || strncmp(line, "hello ", 6) ||
	    !pt_kv_str(line, "test", tname, sizeof(tname)) || set_test(o, tname) ||
	    !pt_kv_u64(line, "size", &v[0]) || !pt_kv_u64(line, "iters", &v[1]) ||
	    !pt_kv_u64(line, "warmup", &v[2]) || !pt_kv_u64(line, "rxdepth", &v[3]) ||
	    !pt_kv_u64(line, "busy", &v[4]) || !pt_kv_u64(line, "udpport", &v[5]) || v[0] < PT_MIN_SIZE ||
	    v[0] > (o->tcp ? TCP_MAX_SIZE : MAX_SIZE)) {
		fprintf(stderr, "%s: bad parameters from the client\n", prog);
		return -1;
	}
	o->size = (uint32_t)v[0];
	o->iters = v[1];
	o->warmup = v[2];
	o->rx_depth = (uint32_t)v[3];
	o->busy = v[4] != 0;
	rep.test = o->test_name;
	if (o->tcp)
		return server_tcp(o, c, line);
	return server_udp(o, c, (int)v[5]);
}

/* ------------------------------------------------------------ client --- */

/* tcp_bw: send the parameters, connect to the data port the server gives */
static int client_tcp(const struct opts *o, struct conn *c)
{
	char line[1024];
	uint64_t port;

	if (pt_send_line(c->cfd, "hello test=%s size=%u iters=0 warmup=0 rxdepth=0 busy=%d udpport=0 duration=%u",
			 o->test_name, o->size, o->busy, o->duration_s) ||
	    pt_recv_line(c->cfd, line, sizeof(line)) || !pt_kv_u64(line, "tcpport", &port) ||
	    (c->dfd = tcp_connect_like(c->cfd, true, (int)port)) < 0) {
		fprintf(stderr, "%s: parameter exchange or data connection with the server failed\n", prog);
		return -1;
	}
	return 0;
}

/* UDP: our socket's port goes with the parameters; it is then connected
 * to the server's UDP port at the server's address */
static int client_udp(const struct opts *o, struct conn *c)
{
	struct sockaddr_storage ss;
	socklen_t l = sizeof(ss);
	char line[1024];
	uint64_t port;

	getsockname(c->cfd, (struct sockaddr *)&ss, &l);
	c->ufd = udp_socket(ss.ss_family, o);
	if (c->ufd < 0 || bind_any(c->ufd, ss.ss_family, NULL)) {
		fprintf(stderr, "%s: UDP socket: %s\n", prog, strerror(errno));
		return -1;
	}
	if (pt_send_line(c->cfd, "hello test=%s size=%u iters=%" PRIu64 " warmup=%" PRIu64 " rxdepth=%u busy=%d udpport=%d",
			 o->test_name, o->size, o->iters, o->warmup, o->rx_depth, o->busy, local_port(c->ufd)) ||
	    pt_recv_line(c->cfd, line, sizeof(line)) || !pt_kv_u64(line, "udpport", &port) ||
	    connect_like(c->ufd, c->cfd, true, (int)port)) {
		fprintf(stderr, "%s: parameter exchange with the server failed\n", prog);
		return -1;
	}
	return 0;
}

/* the client of the server at --host */
int conn_client(struct opts *o, struct conn *c)
{
	c->cfd = pt_tcp_connect(o->host, o->tcp_port, o->timeout_s);
	if (c->cfd < 0)
		return -1;
	if (o->tcp)
		return client_tcp(o, c);
	return client_udp(o, c);
}

/* ---------------------------------------------------------- loopback --- */

/* both ends on 127.0.0.1: tcp_bw, a listener (the sink thread accepts) and
 * a connection to it; UDP, two sockets connected to each other */
int conn_loopback(struct opts *o, struct conn *c)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};

	if (o->tcp) {
		c->dlfd = tcp_listen_like(-1);
		if (c->dlfd >= 0) {
			a.sin_port = htons((uint16_t)local_port(c->dlfd));
			c->dfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		}
		if (c->dlfd < 0 || c->dfd < 0 || connect(c->dfd, (struct sockaddr *)&a, sizeof(a))) {
			fprintf(stderr, "%s: TCP on 127.0.0.1: %s\n", prog, strerror(errno));
			return -1;
		}
		return 0;
	}
	c->ufd = udp_socket(AF_INET, o);
	c->ufd2 = udp_socket(AF_INET, o);
	if (c->ufd < 0 || c->ufd2 < 0 || bind_any(c->ufd, AF_INET, "127.0.0.1") ||
	    bind_any(c->ufd2, AF_INET, "127.0.0.1")) {
		fprintf(stderr, "%s: UDP socket: %s\n", prog, strerror(errno));
		return -1;
	}
	a.sin_port = htons((uint16_t)local_port(c->ufd2));
	if (connect(c->ufd, (struct sockaddr *)&a, sizeof(a)))
		return -1;
	a.sin_port = htons((uint16_t)local_port(c->ufd));
	if (connect(c->ufd2, (struct sockaddr *)&a, sizeof(a)))
		return -1;
	return 0;
}

void conn_close(struct conn *c)
{
	if (c->ufd >= 0)
		close(c->ufd);
	if (c->ufd2 >= 0)
		close(c->ufd2);
	if (c->dfd >= 0)
		close(c->dfd);
	if (c->dlfd >= 0)
		close(c->dlfd);
	if (c->cfd >= 0)
		close(c->cfd);
	if (c->lfd >= 0)
		close(c->lfd);
}
