/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * Communication identifiers of the drop-in librdmacm.so.1: rdma_create_id,
 * rdma_destroy_id, rdma_migrate_id, rdma_get_src_port, rdma_get_dst_port,
 * rdma_set_option, rdma_set_local_ece, rdma_get_remote_ece.
 *
 * The rules are Linux's (drivers/infiniband/core/ucma.c and cma.c) as seen
 * through rdma-core 44's librdmacm: the port space decides the QP type
 * (TCP and IB: RC; UDP and IPoIB: UD; anything else EINVAL); a NULL channel
 * gives the id a channel of its own; destroying or migrating an id drops or
 * moves its queued events and then waits until every event of the id that
 * the application retrieved has been acknowledged.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/ib.h>

#include "dpv_rdmacm.h"

/* Linux copies optval with memdup_user and refuses more than KMALLOC_MAX_SIZE (4 MiB on x86_64). */
#define OPTLEN_MAX (4u << 20)

static int ps_qp_type(enum rdma_port_space ps, enum ibv_qp_type *qpt)
{
	switch (ps) {
	case RDMA_PS_TCP:
	case RDMA_PS_IB:
		*qpt = IBV_QPT_RC;
		return 0;
	case RDMA_PS_UDP:
	case RDMA_PS_IPOIB:
		*qpt = IBV_QPT_UD;
		return 0;
	default:
		return -1;
	}
}

int rdma_create_id(struct rdma_event_channel *channel, struct rdma_cm_id **id, void *context,
		   enum rdma_port_space ps)
{
	struct dpv_rdmacm_id *p;
	enum ibv_qp_type qpt;

	if (id == NULL || ps_qp_type(ps, &qpt) != 0)
		return dpv_rdmacm_err(EINVAL);
	p = calloc(1, sizeof(*p));
	if (p == NULL)
		return dpv_rdmacm_err(ENOMEM);
	if (channel == NULL) {
		channel = rdma_create_event_channel();
		if (channel == NULL) {
			free(p);
			return -1;
		}
		p->sync = true;
	}
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->acked_cond, NULL);
	p->state = DPV_RDMACM_IDLE;
	p->id.channel = channel;
	p->id.context = context;
	p->id.ps = ps;
	p->id.qp_type = qpt;
	*id = &p->id;
	return 0;
}

/* Waits until the application has acknowledged `reported` events of p. */
static void wait_acked(struct dpv_rdmacm_id *p, uint64_t reported)
{
	pthread_mutex_lock(&p->lock);
	while (p->events_acked < reported)
		pthread_cond_wait(&p->acked_cond, &p->lock);
	pthread_mutex_unlock(&p->lock);
}

/*
 * The QP, SRQ and CQs stay with the application (rdma_destroy_qp,
 * rdma_destroy_srq, or rdma_destroy_ep destroy them), as in rdma-core.
 */
int rdma_destroy_id(struct rdma_cm_id *id)
{
	struct dpv_rdmacm_channel *c;
	struct dpv_rdmacm_id *p;
	uint64_t reported;

	if (id == NULL)
		return dpv_rdmacm_err(EINVAL);
	p = to_did(id);
	dpv_rdmacm_conn_release(p);
	dpv_rdmacm_mc_release(p);
	c = dpv_rdmacm_lock_channel(p);
	p->state = DPV_RDMACM_DESTROYING;
	dpv_rdmacm_move_events(c, NULL, p);
	reported = p->events_reported;
	pthread_mutex_unlock(&c->lock);
	if (id->event != NULL) {
		rdma_ack_cm_event(id->event);
		id->event = NULL;
	}
	wait_acked(p, reported);
	dpv_rdmacm_addr_release(p);
	dpv_rdmacm_id_put_device(p);
	if (p->sync)
		rdma_destroy_event_channel(id->channel);
	free(p->qp_init_attr); /* rdma_create_ep's */
	free(p->connect);
	pthread_cond_destroy(&p->acked_cond);
	pthread_mutex_destroy(&p->lock);
	free(p);
	return 0;
}

/* Locks two channels in address order (once if they are the same). */
static void lock_pair(struct dpv_rdmacm_channel *a, struct dpv_rdmacm_channel *b)
{
	if (a == b) {
		pthread_mutex_lock(&a->lock);
	} else if (a < b) {
		pthread_mutex_lock(&a->lock);
		pthread_mutex_lock(&b->lock);
	} else {
		pthread_mutex_lock(&b->lock);
		pthread_mutex_lock(&a->lock);
	}
}

static void unlock_pair(struct dpv_rdmacm_channel *a, struct dpv_rdmacm_channel *b)
{
	pthread_mutex_unlock(&a->lock);
	if (a != b)
		pthread_mutex_unlock(&b->lock);
}

/*
 * Moves the id and its queued events to channel (NULL: a new channel of its
 * own), then waits until the events it retrieved on the old channel are
 * acknowledged (rdma-core does the same, so that no event of the id is
 * handled on the old channel after the call). The caller must not migrate
 * the same id from two threads at once.
 */
int rdma_migrate_id(struct rdma_cm_id *id, struct rdma_event_channel *channel)
{
	struct dpv_rdmacm_channel *from, *to;
	struct rdma_event_channel *old;
	struct dpv_rdmacm_id *p;
	uint64_t reported;
	bool sync;

	if (id == NULL)
		return dpv_rdmacm_err(EINVAL);
	p = to_did(id);
	if (p->sync && channel == NULL)
		return dpv_rdmacm_err(EINVAL);
	/* its own channel named explicitly: it stays its own */
	sync = channel == NULL || (p->sync && channel == id->channel);
	if (channel == NULL) {
		channel = rdma_create_event_channel();
		if (channel == NULL)
			return -1;
	}
	old = __atomic_load_n(&id->channel, __ATOMIC_ACQUIRE);
	from = to_dchannel(old);
	to = to_dchannel(channel);
	lock_pair(from, to);
	if (from != to)
		dpv_rdmacm_move_events(from, to, p);
	__atomic_store_n(&id->channel, channel, __ATOMIC_RELEASE);
	reported = p->events_reported;
	unlock_pair(from, to);
	if (p->sync && from != to) {
		if (id->event != NULL) {
			rdma_ack_cm_event(id->event);
			id->event = NULL;
		}
		rdma_destroy_event_channel(old);
	}
	p->sync = sync;
	wait_acked(p, reported);
	return 0;
}

static __be16 addr_port(const struct sockaddr *sa)
{
	switch (sa->sa_family) {
	case AF_INET:
		return ((const struct sockaddr_in *)sa)->sin_port;
	case AF_INET6:
		return ((const struct sockaddr_in6 *)sa)->sin6_port;
	case AF_IB:
		/* the port is the low 16 bits of the service ID */
		return htobe16((uint16_t)be64toh(((const struct sockaddr_ib *)sa)->sib_sid));
	default:
		return 0;
	}
}

__be16 rdma_get_src_port(struct rdma_cm_id *id)
{
	return id == NULL ? 0 : addr_port(&id->route.addr.src_addr);
}

__be16 rdma_get_dst_port(struct rdma_cm_id *id)
{
	return id == NULL ? 0 : addr_port(&id->route.addr.dst_addr);
}

/* RDMA_OPTION_ID: Linux's ucma_set_option_id and the cma.c setters it calls. Id lock held. */
static int set_option_id(struct dpv_rdmacm_id *p, int optname, const void *optval, size_t optlen)
{
	int v;

	switch (optname) {
	case RDMA_OPTION_ID_TOS:
		if (optlen != sizeof(uint8_t))
			return EINVAL;
		p->tos = *(const uint8_t *)optval;
		p->tos_set = true;
		return 0;
	case RDMA_OPTION_ID_REUSEADDR:
		if (optlen != sizeof(int))
			return EINVAL;
		memcpy(&v, optval, sizeof(v));
		/* rdma_set_reuseaddr: any value while idle, setting it until listening */
		if (p->state != DPV_RDMACM_IDLE && !(v && p->state != DPV_RDMACM_LISTEN))
			return EINVAL;
		p->reuseaddr = v != 0;
		return 0;
	case RDMA_OPTION_ID_AFONLY:
		if (optlen != sizeof(int))
			return EINVAL;
		if (p->state != DPV_RDMACM_IDLE && p->state != DPV_RDMACM_ADDR_BOUND)
			return EINVAL;
		memcpy(&v, optval, sizeof(v));
		p->afonly = v != 0;
		return 0;
	case RDMA_OPTION_ID_ACK_TIMEOUT:
		if (optlen != sizeof(uint8_t))
			return EINVAL;
		if (p->id.qp_type != IBV_QPT_RC)
			return EINVAL;
		p->ack_timeout = *(const uint8_t *)optval;
		p->ack_timeout_set = true;
		return 0;
	default:
		return ENOSYS;
	}
}

/*
 * Linux's checks, in its order: optlen bound, optval readable (EFAULT),
 * level and name (ENOSYS when unknown), then each option's length and state.
 */
int rdma_set_option(struct rdma_cm_id *id, int level, int optname, void *optval, size_t optlen)
{
	struct dpv_rdmacm_id *p;
	int ret;

	if (id == NULL || optlen > OPTLEN_MAX)
		return dpv_rdmacm_err(EINVAL);
	if (optlen > 0 && optval == NULL)
		return dpv_rdmacm_err(EFAULT);
	p = to_did(id);
	switch (level) {
	case RDMA_OPTION_ID:
		pthread_mutex_lock(&p->lock);
		ret = set_option_id(p, optname, optval, optlen);
		pthread_mutex_unlock(&p->lock);
		break;
	case RDMA_OPTION_IB:
		if (optname != RDMA_OPTION_IB_PATH)
			ret = ENOSYS;
		else
			return dpv_rdmacm_set_ib_path(p, optval, optlen);
		break;
	default:
		ret = ENOSYS;
		break;
	}
	return ret ? dpv_rdmacm_err(ret) : 0;
}

int rdma_set_local_ece(struct rdma_cm_id *id, struct ibv_ece *ece)
{
	struct dpv_rdmacm_id *p;

	if (id == NULL || id->qp != NULL || ece == NULL || ece->vendor_id == 0 || ece->comp_mask != 0)
		return dpv_rdmacm_err(EINVAL);
	p = to_did(id);
	pthread_mutex_lock(&p->lock);
	p->local_ece_vendor = ece->vendor_id;
	p->local_ece_options = ece->options;
	pthread_mutex_unlock(&p->lock);
	return 0;
}

/* Zeros until a connection manager receives the peer's ECE. */
int rdma_get_remote_ece(struct rdma_cm_id *id, struct ibv_ece *ece)
{
	struct dpv_rdmacm_id *p;

	if (id == NULL || id->qp != NULL || ece == NULL)
		return dpv_rdmacm_err(EINVAL);
	p = to_did(id);
	pthread_mutex_lock(&p->lock);
	ece->vendor_id = p->remote_ece_vendor;
	ece->options = p->remote_ece_options;
	ece->comp_mask = 0;
	pthread_mutex_unlock(&p->lock);
	return 0;
}
