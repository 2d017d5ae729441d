/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The device-free part of the drop-in librdmacm (compat/rdmacm/), against
 * rdma-core 44's behaviour:
 *  - event channels: the fd is pollable (readable exactly while an event is
 *    queued), O_NONBLOCK set with fcntl makes rdma_get_cm_event fail with
 *    EAGAIN, a blocking rdma_get_cm_event waits for the next event, events
 *    come out in the order they were queued with their private data;
 *  - rdma_destroy_id drops the id's queued events and waits until the
 *    events it handed out are acknowledged; rdma_migrate_id moves them;
 *  - rdma_create_id port spaces (TCP/IB: RC, UDP/IPoIB: UD, others EINVAL),
 *    a NULL channel; rdma_event_str (compared with Debian's library when it
 *    can be loaded); ports and addresses; rdma_set_option's checks; ECE;
 *  - the connection and multicast calls without a
 *    connection with the errno rdma-core gets from the kernel (EINVAL;
 *    rdma_get_request: EINVAL on an async id, EAGAIN on a non-blocking sync
 *    id that does not listen), every rsocket call with EOPNOTSUPP; QP calls on an id without a device
 *    with EINVAL.
 * WHITE-BOX: events are queued with dpv_rdmacm_event_post(), the
 * connection manager's entry point (dpv_rdmacm.h). No device is opened.
 * Prints "N passed, N failed".
 */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <unistd.h>

#include <infiniband/ib.h>
#include <rdma/rsocket.h>

#include "dpv_rdmacm.h"
#include "dpvt_check.h"

#define DEBIAN_LIBRDMACM "/usr/lib/x86_64-linux-gnu/librdmacm.so.1"

/* 1 if fd is readable now, 0 if not, -1 on error */
static int readable(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	int n = poll(&p, 1, 0);

	return n < 0 ? -1 : n == 1 && (p.revents & POLLIN);
}

static int post(struct rdma_cm_id *id, enum rdma_cm_event_type type, int status, const char *pdata)
{
	struct rdma_cm_event ev = { .id = id, .event = type, .status = status };

	return dpv_rdmacm_event_post(to_did(id), &ev, pdata, pdata ? strlen(pdata) + 1 : 0);
}

static void set_nonblock(struct rdma_event_channel *ch, bool on)
{
	int fl = fcntl(ch->fd, F_GETFL);

	CHECK(fl >= 0 && fcntl(ch->fd, F_SETFL, on ? fl | O_NONBLOCK : fl & ~O_NONBLOCK) == 0, "fcntl O_NONBLOCK");
}

static void test_order_and_readiness(void)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_event *ev = NULL;
	struct rdma_cm_id *id;
	static const enum rdma_cm_event_type types[] = { RDMA_CM_EVENT_ADDR_RESOLVED, RDMA_CM_EVENT_ROUTE_RESOLVED,
							 RDMA_CM_EVENT_ESTABLISHED, RDMA_CM_EVENT_DISCONNECTED };

	CHECK(ch != NULL && ch->fd >= 0, "rdma_create_event_channel: %s", strerror(errno));
	if (ch == NULL)
		return;
	CHECK(!(fcntl(ch->fd, F_GETFL) & O_NONBLOCK), "the fd blocks by default (as rdma-core's)");
	CHECK(fcntl(ch->fd, F_GETFD) & FD_CLOEXEC, "the fd is close-on-exec");
	CHECK_EQ(readable(ch->fd), 0, "empty channel not readable");
	set_nonblock(ch, true);
	CHECK_RET_ERRNO(rdma_get_cm_event(ch, &ev), -1, EAGAIN);
	CHECK_EQ(rdma_create_id(ch, &id, (void *)0x1234, RDMA_PS_TCP), 0, "rdma_create_id");
	for (int i = 0; i < 4; i++) {
		char pd[16];

		snprintf(pd, sizeof(pd), "event %d", i);
		CHECK_EQ(post(id, types[i], -i, i == 1 ? NULL : pd), 0, "post");
		CHECK_EQ(readable(ch->fd), 1, "readable while events are queued");
	}
	for (int i = 0; i < 4; i++) {
		char pd[16];

		snprintf(pd, sizeof(pd), "event %d", i);
		CHECK_EQ(readable(ch->fd), 1, "readable before each get");
		ev = NULL;
		CHECK_EQ(rdma_get_cm_event(ch, &ev), 0, "rdma_get_cm_event");
		if (ev == NULL)
			break;
		CHECK(ev->id == id && ev->id->context == (void *)0x1234, "event %d: id and context", i);
		CHECK_EQ(ev->event, types[i], "event type in queue order");
		CHECK_EQ(ev->status, -i, "status");
		if (i == 1)
			CHECK(ev->param.conn.private_data == NULL && ev->param.conn.private_data_len == 0, "no pdata");
		else
			CHECK(ev->param.conn.private_data_len == strlen(pd) + 1 &&
				      strcmp(ev->param.conn.private_data, pd) == 0,
			      "private data copied: %d", i);
		CHECK_EQ(rdma_ack_cm_event(ev), 0, "rdma_ack_cm_event");
	}
	CHECK_EQ(readable(ch->fd), 0, "not readable once drained");
	CHECK_RET_ERRNO(rdma_get_cm_event(ch, &ev), -1, EAGAIN);
	set_nonblock(ch, false);
	CHECK_EQ(rdma_destroy_id(id), 0, "rdma_destroy_id");
	rdma_destroy_event_channel(ch);
}

struct later {
	struct rdma_cm_id *id;
	struct rdma_cm_event *ev;
	unsigned int ms;
	int ret;
	volatile bool done;
};

static void *post_later(void *arg)
{
	struct later *l = arg;

	dpvt_sleep_ms(l->ms);
	l->ret = post(l->id, RDMA_CM_EVENT_CONNECT_RESPONSE, 0, "late");
	return NULL;
}

static void test_blocking_get(void)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_event *ev = NULL;
	struct later l = { .ms = 150 };
	pthread_t t;
	uint64_t t0;

	if (!CHECK(ch != NULL, "channel") || !CHECK(rdma_create_id(ch, &l.id, NULL, RDMA_PS_UDP) == 0, "id"))
		return;
	CHECK_EQ(l.id->qp_type, IBV_QPT_UD, "RDMA_PS_UDP: UD");
	t0 = dpvt_now_ms();
	CHECK_EQ(pthread_create(&t, NULL, post_later, &l), 0, "thread");
	CHECK_EQ(rdma_get_cm_event(ch, &ev), 0, "blocking rdma_get_cm_event returns the later event");
	CHECK(dpvt_now_ms() - t0 >= 100, "it waited for the event (%llu ms)", (unsigned long long)(dpvt_now_ms() - t0));
	pthread_join(t, NULL);
	CHECK_EQ(l.ret, 0, "post from another thread");
	if (ev != NULL) {
		CHECK(ev->event == RDMA_CM_EVENT_CONNECT_RESPONSE && ev->id == l.id, "the posted event");
		CHECK(ev->param.ud.private_data_len == 5 && strcmp(ev->param.ud.private_data, "late") == 0,
		      "UD id: private data in param.ud");
		rdma_ack_cm_event(ev);
	}
	CHECK_EQ(rdma_destroy_id(l.id), 0, "destroy");
	rdma_destroy_event_channel(ch);
}

static void *destroy_thread(void *arg)
{
	struct later *l = arg;

	l->ret = rdma_destroy_id(l->id);
	l->done = true;
	return NULL;
}

/* rdma_destroy_id drops queued events of the id, then waits for the acks of the retrieved ones. */
static void test_destroy_waits(void)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *a = NULL, *b = NULL;
	struct rdma_cm_event *ev = NULL, *ev2 = NULL;
	struct later l = { 0 };
	pthread_t t;

	if (!CHECK(ch != NULL, "channel"))
		return;
	CHECK(rdma_create_id(ch, &a, NULL, RDMA_PS_TCP) == 0 && rdma_create_id(ch, &b, NULL, RDMA_PS_TCP) == 0, "ids");
	post(a, RDMA_CM_EVENT_ADDR_RESOLVED, 0, NULL);
	post(b, RDMA_CM_EVENT_ADDR_ERROR, -1, NULL);
	post(a, RDMA_CM_EVENT_ROUTE_RESOLVED, 0, NULL);
	post(a, RDMA_CM_EVENT_ESTABLISHED, 0, NULL);
	CHECK(rdma_get_cm_event(ch, &ev) == 0 && ev->id == a, "a's first event retrieved, not acked");
	l.id = a;
	CHECK_EQ(pthread_create(&t, NULL, destroy_thread, &l), 0, "thread");
	dpvt_sleep_ms(200);
	CHECK(!l.done, "rdma_destroy_id waits while an event of the id is not acked");
	rdma_ack_cm_event(ev);
	pthread_join(t, NULL);
	CHECK(l.done && l.ret == 0, "rdma_destroy_id returns once it is acked");
	set_nonblock(ch, true);
	CHECK(rdma_get_cm_event(ch, &ev2) == 0 && ev2->id == b && ev2->event == RDMA_CM_EVENT_ADDR_ERROR,
	      "b's event still queued, a's two unretrieved ones dropped");
	if (ev2 != NULL)
		rdma_ack_cm_event(ev2);
	CHECK_EQ(readable(ch->fd), 0, "nothing left: not readable");
	CHECK_RET_ERRNO(rdma_get_cm_event(ch, &ev2), -1, EAGAIN);
	post(b, RDMA_CM_EVENT_DISCONNECTED, 0, NULL);
	CHECK_EQ(rdma_destroy_id(b), 0, "destroy with a queued, never retrieved event: no wait");
	CHECK_EQ(readable(ch->fd), 0, "its event is gone: not readable");
	rdma_destroy_event_channel(ch);
}

static void test_migrate(void)
{
	struct rdma_event_channel *c1 = rdma_create_event_channel(), *c2 = rdma_create_event_channel(), *own;
	struct rdma_cm_event *ev = NULL;
	struct rdma_cm_id *id, *other;

	if (!CHECK(c1 && c2, "channels") || !CHECK(rdma_create_id(c1, &id, NULL, RDMA_PS_IB) == 0, "id"))
		return;
	CHECK_EQ(rdma_create_id(c1, &other, NULL, RDMA_PS_IB), 0, "second id");
	post(id, RDMA_CM_EVENT_ADDR_RESOLVED, 0, NULL);
	post(other, RDMA_CM_EVENT_ADDR_RESOLVED, 0, NULL);
	post(id, RDMA_CM_EVENT_ROUTE_RESOLVED, 0, NULL);
	CHECK_EQ(rdma_migrate_id(id, c2), 0, "rdma_migrate_id to c2");
	CHECK(id->channel == c2, "id->channel is c2");
	CHECK(readable(c1->fd) == 1 && readable(c2->fd) == 1, "both channels have an event");
	CHECK(rdma_get_cm_event(c2, &ev) == 0 && ev->id == id && ev->event == RDMA_CM_EVENT_ADDR_RESOLVED,
	      "moved in order (1)");
	rdma_ack_cm_event(ev);
	CHECK(rdma_get_cm_event(c2, &ev) == 0 && ev->id == id && ev->event == RDMA_CM_EVENT_ROUTE_RESOLVED,
	      "moved in order (2)");
	rdma_ack_cm_event(ev);
	CHECK_EQ(readable(c2->fd), 0, "c2 drained");
	CHECK(rdma_get_cm_event(c1, &ev) == 0 && ev->id == other, "the other id's event stayed on c1");
	rdma_ack_cm_event(ev);
	CHECK_EQ(readable(c1->fd), 0, "c1 drained");
	post(id, RDMA_CM_EVENT_ESTABLISHED, 0, NULL);
	CHECK_EQ(rdma_migrate_id(id, NULL), 0, "migrate to a channel of its own");
	CHECK(id->channel != NULL && id->channel != c1 && id->channel != c2, "a new channel");
	CHECK_EQ(readable(id->channel->fd), 1, "the queued event moved with it");
	CHECK_EQ(readable(c2->fd), 0, "and left c2");
	CHECK_RET_ERRNO(rdma_migrate_id(id, NULL), -1, EINVAL);
	own = id->channel;
	CHECK(rdma_migrate_id(id, own) == 0 && id->channel == own, "to its own channel, named: unchanged");
	CHECK_EQ(readable(own->fd), 1, "the event is still there");
	CHECK_EQ(rdma_migrate_id(id, c1), 0, "back to c1 (its own channel is destroyed)");
	CHECK(rdma_get_cm_event(c1, &ev) == 0 && ev->id == id && ev->event == RDMA_CM_EVENT_ESTABLISHED, "arrived");
	rdma_ack_cm_event(ev);
	CHECK(rdma_destroy_id(id) == 0 && rdma_destroy_id(other) == 0, "destroy");
	rdma_destroy_event_channel(c1);
	rdma_destroy_event_channel(c2);
}

static void test_create_id(void)
{
	static const struct {
		enum rdma_port_space ps;
		enum ibv_qp_type qpt;
	} good[] = { { RDMA_PS_TCP, IBV_QPT_RC }, { RDMA_PS_UDP, IBV_QPT_UD }, { RDMA_PS_IB, IBV_QPT_RC },
		     { RDMA_PS_IPOIB, IBV_QPT_UD } };
	static const int bad[] = { 0, 1, 0x0105, 0x0107, 0x0110, 0x0112, 0x013E, 0x0140, -1 };
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *id = NULL;

	for (unsigned int i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		id = NULL;
		CHECK_EQ(rdma_create_id(ch, &id, &id, good[i].ps), 0, "rdma_create_id of a valid port space");
		if (id == NULL)
			continue;
		CHECK(id->ps == good[i].ps && id->qp_type == good[i].qpt, "ps 0x%x: qp_type %d", good[i].ps, id->qp_type);
		CHECK(id->channel == ch && id->context == &id && id->verbs == NULL && id->qp == NULL && id->pd == NULL &&
			      id->port_num == 0 && id->event == NULL && id->route.num_paths == 0,
		      "ps 0x%x: fields", good[i].ps);
		CHECK(rdma_get_local_addr(id)->sa_family == 0 && rdma_get_peer_addr(id)->sa_family == 0,
		      "no address yet");
		CHECK_EQ(rdma_destroy_id(id), 0, "destroy");
	}
	for (unsigned int i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		id = (void *)0x1;
		CHECK_RET_ERRNO(rdma_create_id(ch, &id, NULL, (enum rdma_port_space)bad[i]), -1, EINVAL);
		CHECK(id == (void *)0x1, "no id on failure");
	}
	CHECK_RET_ERRNO(rdma_create_id(ch, NULL, NULL, RDMA_PS_TCP), -1, EINVAL);
	CHECK_EQ(rdma_create_id(NULL, &id, NULL, RDMA_PS_TCP), 0, "a NULL channel (synchronous id)");
	CHECK(id->channel != NULL && id->channel != ch && id->channel->fd >= 0, "with a channel of its own");
	post(id, RDMA_CM_EVENT_ADDR_RESOLVED, 0, NULL);
	CHECK_EQ(rdma_get_cm_event(id->channel, &id->event), 0, "an event held in id->event");
	CHECK_EQ(rdma_destroy_id(id), 0, "destroy acks id->event and its channel");
	CHECK_RET_ERRNO(rdma_destroy_id(NULL), -1, EINVAL);
	CHECK_RET_ERRNO(rdma_ack_cm_event(NULL), -1, EINVAL);
	CHECK_RET_ERRNO(rdma_get_cm_event(ch, NULL), -1, EINVAL);
	CHECK_RET_ERRNO(rdma_get_cm_event(NULL, &id->event), -1, EINVAL);
	rdma_destroy_event_channel(ch);
	rdma_destroy_event_channel(NULL);
}

static const char *const rdma_core_names[] = {
	"RDMA_CM_EVENT_ADDR_RESOLVED", "RDMA_CM_EVENT_ADDR_ERROR", "RDMA_CM_EVENT_ROUTE_RESOLVED",
	"RDMA_CM_EVENT_ROUTE_ERROR", "RDMA_CM_EVENT_CONNECT_REQUEST", "RDMA_CM_EVENT_CONNECT_RESPONSE",
	"RDMA_CM_EVENT_CONNECT_ERROR", "RDMA_CM_EVENT_UNREACHABLE", "RDMA_CM_EVENT_REJECTED",
	"RDMA_CM_EVENT_ESTABLISHED", "RDMA_CM_EVENT_DISCONNECTED", "RDMA_CM_EVENT_DEVICE_REMOVAL",
	"RDMA_CM_EVENT_MULTICAST_JOIN", "RDMA_CM_EVENT_MULTICAST_ERROR", "RDMA_CM_EVENT_ADDR_CHANGE",
	"RDMA_CM_EVENT_TIMEWAIT_EXIT",
};

static void test_event_str(void)
{
	const char *(*deb)(enum rdma_cm_event_type) = NULL;
	/* by path: a bare name could find the drop-in through this program's run path */
	void *h = dlopen(DEBIAN_LIBRDMACM, RTLD_NOW | RTLD_LOCAL);

	for (int i = 0; i < 16; i++)
		CHECK(strcmp(rdma_event_str((enum rdma_cm_event_type)i), rdma_core_names[i]) == 0, "event %d: %s", i,
		      rdma_event_str((enum rdma_cm_event_type)i));
	CHECK(strcmp(rdma_event_str((enum rdma_cm_event_type)16), "UNKNOWN EVENT") == 0, "16: UNKNOWN EVENT");
	CHECK(strcmp(rdma_event_str((enum rdma_cm_event_type)-1), "UNKNOWN EVENT") == 0, "-1: UNKNOWN EVENT");
	if (h != NULL)
		deb = (const char *(*)(enum rdma_cm_event_type))dlsym(h, "rdma_event_str");
	if (deb != NULL && deb != rdma_event_str) {
		for (int i = -2; i < 20; i++)
			CHECK(strcmp(deb((enum rdma_cm_event_type)i), rdma_event_str((enum rdma_cm_event_type)i)) == 0,
			      "event %d: %s, rdma-core %s", i, rdma_event_str((enum rdma_cm_event_type)i),
			      deb((enum rdma_cm_event_type)i));
	} else {
		printf("note: Debian's librdmacm.so.1 not loaded (%s): compared with the built-in names only\n",
		       h ? "no rdma_event_str" : dlerror());
	}
	if (h != NULL)
		dlclose(h);
}

static void test_ports(void)
{
	struct rdma_cm_id *id;
	struct sockaddr_in *sin;
	struct sockaddr_in6 *sin6;
	struct sockaddr_ib *sib;

	if (!CHECK(rdma_create_id(NULL, &id, NULL, RDMA_PS_TCP) == 0, "id"))
		return;
	CHECK(rdma_get_src_port(id) == 0 && rdma_get_dst_port(id) == 0, "no address: port 0");
	sin = &id->route.addr.src_sin;
	sin->sin_family = AF_INET;
	sin->sin_port = htons(7471);
	sin6 = &id->route.addr.dst_sin6;
	sin6->sin6_family = AF_INET6;
	sin6->sin6_port = htons(18515);
	CHECK_EQ(ntohs(rdma_get_src_port(id)), 7471, "AF_INET source port");
	CHECK_EQ(ntohs(rdma_get_dst_port(id)), 18515, "AF_INET6 destination port");
	CHECK(rdma_get_local_addr(id) == (struct sockaddr *)sin && rdma_get_peer_addr(id) == (struct sockaddr *)sin6,
	      "rdma_get_local_addr/rdma_get_peer_addr");
	sib = (struct sockaddr_ib *)&id->route.addr.src_storage;
	memset(sib, 0, sizeof(*sib));
	sib->sib_family = AF_IB;
	sib->sib_sid = htobe64(RDMA_IB_IP_PS_TCP | 4791);
	CHECK_EQ(ntohs(rdma_get_src_port(id)), 4791, "AF_IB: low 16 bits of the service ID");
	id->route.addr.dst_addr.sa_family = AF_UNIX;
	CHECK_EQ(rdma_get_dst_port(id), 0, "other family: 0");
	CHECK(rdma_get_src_port(NULL) == 0 && rdma_get_dst_port(NULL) == 0, "NULL id: 0");
	rdma_destroy_id(id);
}

static void test_set_option(void)
{
	struct rdma_cm_id *rc, *ud;
	struct ibv_path_data paths[2];
	uint8_t u8 = 5;
	int one = 1;

	if (!CHECK(rdma_create_id(NULL, &rc, NULL, RDMA_PS_TCP) == 0 &&
			   rdma_create_id(NULL, &ud, NULL, RDMA_PS_UDP) == 0, "ids"))
		return;
	CHECK_EQ(rdma_set_option(rc, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, &u8, 1), 0, "TOS, 1 byte");
	CHECK_RET_ERRNO(rdma_set_option(rc, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, &one, sizeof(one)), -1, EINVAL);
	CHECK_EQ(rdma_set_option(rc, RDMA_OPTION_ID, RDMA_OPTION_ID_REUSEADDR, &one, sizeof(one)), 0, "REUSEADDR");
	CHECK_RET_ERRNO(rdma_set_option(rc, RDMA_OPTION_ID, RDMA_OPTION_ID_REUSEADDR, &u8, 1), -1, EINVAL);
	CHECK_EQ(rdma_set_option(rc, RDMA_OPTION_ID, RDMA_OPTION_ID_AFONLY, &one, sizeof(one)), 0, "AFONLY");
	CHECK_RET_ERRNO(rdma_set_option(rc, RDMA_OPTION_ID, RDMA_OPTION_ID_AFONLY, &one, 8), -1, EINVAL);
	CHECK_EQ(rdma_set_option(rc, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT, &u8, 1), 0, "ACK_TIMEOUT on RC");
	CHECK_RET_ERRNO(rdma_set_option(ud, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT, &u8, 1), -1, EINVAL);
	CHECK_RET_ERRNO(rdma_set_option(rc, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT, &one, 4), -1, EINVAL);
	CHECK_RET_ERRNO(rdma_set_option(rc, RDMA_OPTION_ID, 99, &one, sizeof(one)), -1, ENOSYS);
	CHECK_RET_ERRNO(rdma_set_option(rc, 7, RDMA_OPTION_ID_TOS, &u8, 1), -1, ENOSYS);
	CHECK_RET_ERRNO(rdma_set_option(rc, RDMA_OPTION_IB, 2, &u8, 1), -1, ENOSYS);
	CHECK_RET_ERRNO(rdma_set_option(rc, RDMA_OPTION_IB, RDMA_OPTION_IB_PATH, paths, 10), -1, EINVAL);
	memset(paths, 0, sizeof(paths));
	/* no record flagged GMP | PRIMARY | BIDIRECTIONAL, an unresolved id:
	 * EINVAL as Linux's ucma_set_ib_path (test rdmacm-bad sets a good one) */
	CHECK_RET_ERRNO(rdma_set_option(rc, RDMA_OPTION_IB, RDMA_OPTION_IB_PATH, paths, sizeof(paths)), -1, EINVAL);
	CHECK_RET_ERRNO(rdma_set_option(rc, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, NULL, 1), -1, EFAULT);
	CHECK_RET_ERRNO(rdma_set_option(rc, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, NULL, 0), -1, EINVAL);
	CHECK_RET_ERRNO(rdma_set_option(rc, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, &u8, (size_t)8 << 20), -1, EINVAL);
	CHECK_RET_ERRNO(rdma_set_option(NULL, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, &u8, 1), -1, EINVAL);
	/* WHITE-BOX: the stored values */
	CHECK(to_did(rc)->tos == 5 && to_did(rc)->tos_set && to_did(rc)->reuseaddr && to_did(rc)->afonly &&
		      to_did(rc)->ack_timeout == 5 && to_did(rc)->ack_timeout_set,
	      "options stored for the connection manager");
	to_did(rc)->state = DPV_RDMACM_LISTEN;
	CHECK_RET_ERRNO(rdma_set_option(rc, RDMA_OPTION_ID, RDMA_OPTION_ID_REUSEADDR, &one, sizeof(one)), -1, EINVAL);
	CHECK_RET_ERRNO(rdma_set_option(rc, RDMA_OPTION_ID, RDMA_OPTION_ID_AFONLY, &one, sizeof(one)), -1, EINVAL);
	to_did(rc)->state = DPV_RDMACM_ADDR_BOUND;
	CHECK_EQ(rdma_set_option(rc, RDMA_OPTION_ID, RDMA_OPTION_ID_REUSEADDR, &one, sizeof(one)), 0, "bound: set");
	one = 0;
	CHECK_RET_ERRNO(rdma_set_option(rc, RDMA_OPTION_ID, RDMA_OPTION_ID_REUSEADDR, &one, sizeof(one)), -1, EINVAL);
	to_did(rc)->state = DPV_RDMACM_IDLE;
	rdma_destroy_id(rc);
	rdma_destroy_id(ud);
}

static void test_ece(void)
{
	struct ibv_ece ece = { .vendor_id = 0x15b3, .options = 7 }, out = { .vendor_id = 1, .comp_mask = 3 };
	struct rdma_cm_id *id;

	if (!CHECK(rdma_create_id(NULL, &id, NULL, RDMA_PS_TCP) == 0, "id"))
		return;
	CHECK_EQ(rdma_set_local_ece(id, &ece), 0, "rdma_set_local_ece");
	CHECK(to_did(id)->local_ece_vendor == 0x15b3 && to_did(id)->local_ece_options == 7, "stored");
	CHECK_EQ(rdma_get_remote_ece(id, &out), 0, "rdma_get_remote_ece");
	CHECK(out.vendor_id == 0 && out.options == 0 && out.comp_mask == 0, "no peer yet: zeros");
	ece.vendor_id = 0;
	CHECK_RET_ERRNO(rdma_set_local_ece(id, &ece), -1, EINVAL);
	ece.vendor_id = 1;
	ece.comp_mask = 1;
	CHECK_RET_ERRNO(rdma_set_local_ece(id, &ece), -1, EINVAL);
	CHECK_RET_ERRNO(rdma_set_local_ece(id, NULL), -1, EINVAL);
	CHECK_RET_ERRNO(rdma_get_remote_ece(id, NULL), -1, EINVAL);
	CHECK_RET_ERRNO(rdma_get_remote_ece(NULL, &out), -1, EINVAL);
	rdma_destroy_id(id);
}

/*
 * The connection calls on an id that has no connection: rdma-core's
 * errors (multicast: EINVAL/EADDRNOTAVAIL without an address). Addresses and routes are tested in test_rdmacm_addr.c; here
 * only their failures without a device: 203.0.113.7 is no port's address
 * (127.0.0.1 would bind, as on Linux).
 */
static void test_enosys(void)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(7471) };
	struct sockaddr *sa = (struct sockaddr *)&sin;
	struct rdma_cm_join_mc_attr_ex mc = { .comp_mask = RDMA_CM_JOIN_MC_ATTR_ADDRESS, .addr = sa };
	struct rdma_conn_param cp = { .responder_resources = 1, .initiator_depth = 1 };
	struct ibv_qp_init_attr qa = { .qp_type = IBV_QPT_RC };
	struct rdma_cm_id *id, *req = NULL, *ep = NULL;

	if (!CHECK(rdma_create_id(NULL, &id, NULL, RDMA_PS_TCP) == 0, "id"))
		return;
	sin.sin_addr.s_addr = htonl(0xcb007107); /* 203.0.113.7, TEST-NET-3 */
	CHECK_RET_ERRNO(rdma_bind_addr(id, sa), -1, EADDRNOTAVAIL);
	CHECK_RET_ERRNO(rdma_resolve_addr(id, NULL, sa, 2000), -1, ENETUNREACH);
	CHECK_RET_ERRNO(rdma_resolve_route(id, 2000), -1, EINVAL);
	/* the connection calls (rdma-connect tests them): EINVAL without a route or a connection */
	CHECK_RET_ERRNO(rdma_connect(id, &cp), -1, EINVAL);
	/* no connection: what the kernel answers (ucma ACCEPT / NOTIFY on an unconnected id) */
	CHECK_RET_ERRNO(rdma_establish(id), -1, EINVAL);
	/* a sync id that does not listen: rdma-core waits for an event; O_NONBLOCK makes that EAGAIN */
	int fl = fcntl(id->channel->fd, F_GETFL);
	CHECK(fcntl(id->channel->fd, F_SETFL, fl | O_NONBLOCK) == 0, "O_NONBLOCK on the id's channel");
	CHECK_RET_ERRNO(rdma_get_request(id, &req), -1, EAGAIN);
	CHECK(fcntl(id->channel->fd, F_SETFL, fl) == 0, "blocking again");
	CHECK_RET_ERRNO(rdma_accept(id, &cp), -1, EINVAL);
	CHECK_RET_ERRNO(rdma_reject(id, "no", 3), -1, EINVAL);
	CHECK_RET_ERRNO(rdma_reject_ece(id, NULL, 0), -1, EINVAL);
	CHECK_RET_ERRNO(rdma_notify(id, IBV_EVENT_COMM_EST), -1, EINVAL);
	CHECK_RET_ERRNO(rdma_disconnect(id), -1, EINVAL);
	/* multicast (rdmacm-mcast tests it): EINVAL without an address, as Linux; JOIN_FLAGS missing */
	CHECK_RET_ERRNO(rdma_join_multicast(id, sa, NULL), -1, EINVAL);
	CHECK_RET_ERRNO(rdma_join_multicast_ex(id, &mc, NULL), -1, EINVAL);
	CHECK_RET_ERRNO(rdma_leave_multicast(id, sa), -1, EADDRNOTAVAIL);
	CHECK_RET_ERRNO(rdma_create_ep(&ep, NULL, NULL, &qa), -1, EINVAL);
	/* rdma_get_request on an id with an event channel: EINVAL (librdmacm: not sync) */
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *aid = NULL;
	if (CHECK(ch && rdma_create_id(ch, &aid, NULL, RDMA_PS_TCP) == 0, "async id")) {
		CHECK_RET_ERRNO(rdma_get_request(aid, &req), -1, EINVAL);
		rdma_destroy_id(aid);
	}
	rdma_destroy_event_channel(ch);
	CHECK(req == NULL && ep == NULL, "no id returned");
	/* without a device (the failed resolve bound the wildcard only) the QP calls fail as rdma-core's on an unbound id */
	CHECK_RET_ERRNO(rdma_create_qp(id, NULL, &qa), -1, EINVAL);
	CHECK_RET_ERRNO(rdma_init_qp_attr(id, &(struct ibv_qp_attr){ .qp_state = IBV_QPS_INIT }, &(int){ 0 }), -1,
			EINVAL);
	rdma_destroy_qp(id);
	rdma_destroy_srq(id);
	rdma_destroy_ep(id); /* destroys the id */
	rdma_destroy_ep(NULL);
}

/* rsocket(7): EOPNOTSUPP, permanently. */
static void test_rsocket(void)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	struct sockaddr *sa = (struct sockaddr *)&sin;
	socklen_t len = sizeof(sin);
	struct iovec iov = { 0 };
	struct msghdr msg = { 0 };
	struct pollfd pfd = { .fd = 3, .events = POLLIN };
	char buf[8];
	int v;

	CHECK_RET_ERRNO(rsocket(AF_INET, SOCK_STREAM, 0), -1, EOPNOTSUPP);
	CHECK_RET_ERRNO(rbind(3, sa, len), -1, EOPNOTSUPP);
	CHECK_RET_ERRNO(rlisten(3, 1), -1, EOPNOTSUPP);
	CHECK_RET_ERRNO(raccept(3, sa, &len), -1, EOPNOTSUPP);
	CHECK_RET_ERRNO(rconnect(3, sa, len), -1, EOPNOTSUPP);
	CHECK_RET_ERRNO(rshutdown(3, SHUT_RDWR), -1, EOPNOTSUPP);
	CHECK_RET_ERRNO(rclose(3), -1, EOPNOTSUPP);
	CHECK_RET_ERRNO(rrecv(3, buf, sizeof(buf), 0), -1, EOPNOTSUPP);
	CHECK_RET_ERRNO(rrecvfrom(3, buf, sizeof(buf), 0, sa, &len), -1, EOPNOTSUPP);
	CHECK_RET_ERRNO(rrecvmsg(3, &msg, 0), -1, EOPNOTSUPP);
	CHECK_RET_ERRNO(rsend(3, buf, sizeof(buf), 0), -1, EOPNOTSUPP);
	CHECK_RET_ERRNO(rsendto(3, buf, sizeof(buf), 0, sa, len), -1, EOPNOTSUPP);
	CHECK_RET_ERRNO(rsendmsg(3, &msg, 0), -1, EOPNOTSUPP);
	CHECK_RET_ERRNO(rread(3, buf, sizeof(buf)), -1, EOPNOTSUPP);
	CHECK_RET_ERRNO(rreadv(3, &iov, 1), -1, EOPNOTSUPP);
	CHECK_RET_ERRNO(rwrite(3, buf, sizeof(buf)), -1, EOPNOTSUPP);
	CHECK_RET_ERRNO(rwritev(3, &iov, 1), -1, EOPNOTSUPP);
	CHECK_RET_ERRNO(rpoll(&pfd, 1, 0), -1, EOPNOTSUPP);
	CHECK_RET_ERRNO(rselect(0, NULL, NULL, NULL, NULL), -1, EOPNOTSUPP);
	CHECK_RET_ERRNO(rgetpeername(3, sa, &len), -1, EOPNOTSUPP);
	CHECK_RET_ERRNO(rgetsockname(3, sa, &len), -1, EOPNOTSUPP);
	CHECK_RET_ERRNO(rsetsockopt(3, SOL_RDMA, RDMA_SQSIZE, &v, sizeof(v)), -1, EOPNOTSUPP);
	CHECK_RET_ERRNO(rgetsockopt(3, SOL_RDMA, RDMA_SQSIZE, &v, &len), -1, EOPNOTSUPP);
	CHECK_RET_ERRNO(rfcntl(3, F_GETFL), -1, EOPNOTSUPP);
	CHECK_RET_ERRNO(riomap(3, buf, sizeof(buf), PROT_WRITE, 0, -1), -1, EOPNOTSUPP);
	CHECK_RET_ERRNO(riounmap(3, buf, sizeof(buf)), -1, EOPNOTSUPP);
	CHECK_RET_ERRNO(riowrite(3, buf, sizeof(buf), 0, 0), (size_t)-1, EOPNOTSUPP);
}

/* A list as rdma_getaddrinfo will return it: every field freed (leaks show under ASan). */
static void test_freeaddrinfo(void)
{
	struct rdma_addrinfo *a = calloc(1, sizeof(*a)), *b = calloc(1, sizeof(*b));

	if (!CHECK(a && b, "calloc"))
		return;
	a->ai_src_addr = calloc(1, sizeof(struct sockaddr_in));
	a->ai_dst_addr = calloc(1, sizeof(struct sockaddr_in6));
	a->ai_src_canonname = strdup("src");
	a->ai_dst_canonname = strdup("dst");
	a->ai_route = calloc(1, 72);
	a->ai_connect = calloc(1, 56);
	a->ai_next = b;
	rdma_freeaddrinfo(a);
	rdma_freeaddrinfo(NULL);
	CHECK(true, "rdma_freeaddrinfo");
}

int main(void)
{
	test_order_and_readiness();
	test_blocking_get();
	test_destroy_waits();
	test_migrate();
	test_create_id();
	test_event_str();
	test_ports();
	test_set_option();
	test_ece();
	test_enosys();
	test_rsocket();
	test_freeaddrinfo();
	return dpvt_finish();
}
