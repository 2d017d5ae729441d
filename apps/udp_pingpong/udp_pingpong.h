/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * udp_pingpong internals: the kernel UDP/TCP baseline of dpv_perf (the
 * tests are described at the top of udp_pingpong.c).
 *
 *   udp_pingpong.c        main, the command line, --help, the report's
 *                         parameters
 *   udp_pingpong_conn.c   sockets and the set-up of each mode: the
 *                         parameter exchange of --server and its client,
 *                         the two ends of --loopback
 *   udp_pingpong_udp.c    udp_lat and udp_bw: the echo/credit receiver, the
 *                         ping-pong and streaming senders, their results
 *   udp_pingpong_tcp.c    tcp_bw: the stream's source and sink, its checks
 *
 * The hot loops and their rx()/tx() stay in one file each, as they were
 * in one, so that splitting the program does not move the baseline.
 */
#ifndef UDP_PINGPONG_H
#define UDP_PINGPONG_H

#include <stdbool.h>
#include <stdint.h>

#include "perf_common.h"

#define DEF_TCP_PORT 18601
#define CREDIT_FLAG (1ull << 63)
#define MAX_SIZE 65000
#define TCP_MAX_SIZE (16u << 20)
#define TCP_DEF_SIZE 65536

struct opts {
	const char *test_name;
	bool lat, tcp;
	bool size_set;
	uint32_t size, rx_depth;
	unsigned int duration_s;
	uint64_t iters, warmup;
	unsigned int timeout_s, msg_timeout_ms;
	int tcp_port;
	const char *host;
	bool server, loopback, json, busy;
	int clock;
};

/* the sockets of a run (-1: not open); closed by conn_close() */
struct conn {
	int lfd, cfd;   /* parameter exchange: the listener, the connection */
	int ufd, ufd2;  /* UDP: our socket; loopback: the receiver's too */
	int dfd, dlfd;  /* tcp_bw: the data connection and its listener */
};

/* udp_pingpong.c */
extern const char *prog;
extern struct pt_report rep;
void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int set_test(struct opts *o, const char *name);

/* udp_pingpong_conn.c */
int udp_socket(int family, const struct opts *o);
int bind_any(int fd, int family, const char *addr);
int local_port(int fd);
int connect_like(int ufd, int tcpfd, bool peer, int port);
int tcp_connect_like(int cfd, bool peer, int port);
int tcp_listen_like(int cfd);
int conn_server(struct opts *o, struct conn *c);
int conn_client(struct opts *o, struct conn *c);
int conn_loopback(struct opts *o, struct conn *c);
void conn_close(struct conn *c);

/* udp_pingpong_udp.c */
int udp_run(const struct opts *o, const struct conn *c);

/* udp_pingpong_tcp.c */
void tcp_run(const struct opts *o, int cfd, int dfd, int dlfd);

#endif /* UDP_PINGPONG_H */
