/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * Internals of dpverbs' drop-in librdmacm.so.1 (compat/rdmacm/).
 *
 * The public objects are rdma-core's, from <rdma/rdma_cma.h>: each private
 * object embeds the public one first and converts back with container_of,
 * as the verbs façade does (dpv_obj.h). Nothing here is exported: the
 * version script (librdmacm.map) ends with "local: *".
 *
 * What the address resolution (dpv_rdmacm_addr.c) and the connection
 * manager (dpv_rdmacm_conn*.c, dpv_rdmacm_cmsvc.c, dpv_rdmacm_ud.c) share:
 *  - dpv_rdmacm_event_post() queues an event for the application;
 *  - dpv_rdmacm_id_set_device() gives an id its device, port and shared PD
 *    (what rdma_bind_addr / rdma_resolve_addr do in rdma-core);
 *  - struct dpv_rdmacm_id keeps the options rdma_set_option stored and the
 *    id's state.
 *
 * Locking: a channel's lock protects its queue, the eventfd counter and the
 * events_reported counters of the ids whose events it holds; an id's lock
 * protects events_acked, the options and the ECE fields. When both are
 * needed the channel lock is taken first. id->channel is written only with
 * every involved channel lock held (rdma_migrate_id) and read with an
 * atomic load. An id's state changes in the calls the application makes on
 * it (which it must not make concurrently with rdma_destroy_id);
 * DPV_RDMACM_DESTROYING is set under the channel lock, where
 * dpv_rdmacm_event_post() reads it.
 */
#ifndef DPV_RDMACM_H
#define DPV_RDMACM_H

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/queue.h>

#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

#ifndef container_of
#define container_of(ptr, type, member) ((type *)((char *)(ptr) - offsetof(type, member)))
#endif

/** Largest private data an IB CM message carries (SIDR_REQ 216, DREQ 220, MRA 222). */
#define DPV_RDMACM_MAX_PRIVATE_DATA 256

/** rdma_cm_id states, as Linux's rdma_cm_state names them. */
enum dpv_rdmacm_state {
	DPV_RDMACM_IDLE,
	DPV_RDMACM_ADDR_QUERY,
	DPV_RDMACM_ADDR_RESOLVED,
	DPV_RDMACM_ROUTE_QUERY,
	DPV_RDMACM_ROUTE_RESOLVED,
	DPV_RDMACM_CONNECT,
	DPV_RDMACM_DISCONNECT,
	DPV_RDMACM_ADDR_BOUND,
	DPV_RDMACM_LISTEN,
	DPV_RDMACM_DEVICE_REMOVAL,
	DPV_RDMACM_DESTROYING,
};

struct dpv_rdmacm_event;
struct dpv_cm_id;

/**
 * An event channel. ch.fd is an eventfd whose counter is 1 while events are
 * queued and 0 otherwise (so poll/select/epoll report exactly "an event is
 * waiting"); the application may set O_NONBLOCK on it with fcntl.
 */
struct dpv_rdmacm_channel {
	struct rdma_event_channel ch;
	pthread_mutex_t lock;
	TAILQ_HEAD(, dpv_rdmacm_event) queue;
	unsigned int queued;
	unsigned int waiters;  /* threads inside rdma_get_cm_event */
	bool destroyed;        /* rdma_destroy_event_channel ran while some waited */
};

/** A communication identifier. */
struct dpv_rdmacm_id {
	struct rdma_cm_id id;
	pthread_mutex_t lock;
	pthread_cond_t acked_cond;
	uint64_t events_reported; /* handed out by rdma_get_cm_event (channel lock) */
	uint64_t events_acked;    /* acknowledged (id lock) */
	bool sync;                /* id.channel was created for this id (NULL channel) */
	enum dpv_rdmacm_state state;
	struct dpv_rdmacm_dev *dev; /* set by dpv_rdmacm_id_set_device() */
	/* rdma_set_option (RDMA_OPTION_ID) */
	bool tos_set, ack_timeout_set;
	uint8_t tos, ack_timeout;
	bool reuseaddr, afonly;
	/* rdma_set_local_ece / rdma_get_remote_ece */
	uint32_t local_ece_vendor, local_ece_options;
	uint32_t remote_ece_vendor, remote_ece_options;
	/* connection (dpv_rdmacm_conn.c; under the CM service lock) */
	struct dpv_cm_id *cm;            /* the IB CM connection */
	struct dpv_cm_id *cm_listen[16]; /* listeners, one per device */
	unsigned int ncm_listen;
	uint32_t remote_qpn, sq_psn, rq_psn;
	uint8_t path_mtu, resp_res, init_depth, retry, rnr_retry;
	bool dreq_rcvd;
	struct dpv_rdmacm_mc *mc;        /* groups joined (dpv_rdmacm_mcast.c; id lock) */
	/* rdma_create_ep, sync ids, QP attributes (dpv_rdmacm_ep.c, _sync.c, _qpattr.c) */
	struct ibv_qp_init_attr *qp_init_attr; /* passive ep: the QP rdma_get_request creates */
	uint8_t *connect;                      /* ai_connect: put before the REQ's private data */
	uint8_t connect_len;
	uint8_t qp_timeout;                    /* the QP's local ACK timeout (Linux ib_cm av.timeout) */
	bool connect_error;                    /* CONNECT_ERROR reported: no REJECTED/DISCONNECTED after */
};

/** An event: what rdma_get_cm_event hands out and rdma_ack_cm_event frees. */
struct dpv_rdmacm_event {
	struct rdma_cm_event event;
	TAILQ_ENTRY(dpv_rdmacm_event) link;
	struct dpv_rdmacm_id *owner; /* whose counters it moves (a listener for CONNECT_REQUEST) */
	uint8_t private_data[DPV_RDMACM_MAX_PRIVATE_DATA];
};

/** A device as the CM sees it: an open context and the PD ids share. */
struct dpv_rdmacm_dev {
	struct ibv_context *verbs;
	struct ibv_pd *pd;         /* allocated by the first id on the device */
	unsigned int pd_users;
	uint8_t port_cnt;
	struct ibv_xrcd *xrcd;     /* opened for the first XRC QP/SRQ on an id (dpv_rdmacm_xrcd) */
};

static inline struct dpv_rdmacm_channel *to_dchannel(struct rdma_event_channel *ch)
{
	return container_of(ch, struct dpv_rdmacm_channel, ch);
}

static inline struct dpv_rdmacm_id *to_did(struct rdma_cm_id *id)
{
	return container_of(id, struct dpv_rdmacm_id, id);
}

static inline struct dpv_rdmacm_event *to_devent(struct rdma_cm_event *ev)
{
	return container_of(ev, struct dpv_rdmacm_event, event);
}

/* ---- dpv_rdmacm_channel.c ---- */

/**
 * Queues an event on the channel of owner, after every event queued before
 * it, and makes the channel's fd readable. ev gives id, listen_id, event,
 * status and param; private data (pdata_len bytes, at most
 * DPV_RDMACM_MAX_PRIVATE_DATA) is copied into the event and
 * param.conn/param.ud.private_data point to the copy. owner is the id whose
 * counters the event moves: ev->id, or the listening id of a
 * CONNECT_REQUEST. Safe from any thread.
 * @return 0, or -1 with errno EINVAL (bad arguments) or ENOMEM.
 */
int dpv_rdmacm_event_post(struct dpv_rdmacm_id *owner, const struct rdma_cm_event *ev,
			  const void *pdata, size_t pdata_len);

/**
 * Locks the channel id is on (id->channel may be changed by rdma_migrate_id
 * while we wait) and returns it, locked.
 */
struct dpv_rdmacm_channel *dpv_rdmacm_lock_channel(struct dpv_rdmacm_id *p);

/**
 * Moves the queued events of p from channel from to channel to, in order,
 * and returns how many moved; to == NULL frees them instead. Both locks held
 * (from's only when to is NULL). Keeps each fd's readiness exact.
 */
unsigned int dpv_rdmacm_move_events(struct dpv_rdmacm_channel *from, struct dpv_rdmacm_channel *to,
				    struct dpv_rdmacm_id *p);

/* ---- dpv_rdmacm_dev.c ---- */

/**
 * Opens every dpverbs device once (ibv_get_device_list + ibv_open_device);
 * later calls return the same table.
 * @return the number of devices (> 0) with *devs set, or -1 with errno
 *         (ENODEV when there is none, as rdma-core).
 */
int dpv_rdmacm_devices(struct dpv_rdmacm_dev **devs);

/**
 * Gives the id the device of verbs (a context rdma_get_devices returned) and
 * port: id->verbs, id->port_num, id->pd (a PD shared by the ids of the
 * device, allocated on first use) and the default P_Key in the route. What
 * rdma_bind_addr and rdma_resolve_addr do (dpv_rdmacm_addr.c); the tests
 * also call it directly.
 * @return 0, or -1 with errno EINVAL (unknown context, port out of range,
 *         the id already has a device) or the error of ibv_alloc_pd.
 */
int dpv_rdmacm_id_set_device(struct dpv_rdmacm_id *p, struct ibv_context *verbs, uint8_t port);

/**
 * The XRC domain of the id's device that rdma_create_qp/rdma_create_srq use
 * when the caller gives none (rdma-core's ucma_get_xrcd: ibv_open_xrcd with
 * no file, opened once, closed with the device's shared PD).
 * @return the domain, or NULL with errno.
 */
struct ibv_xrcd *dpv_rdmacm_xrcd(struct dpv_rdmacm_id *p);

/** Drops the id's use of its device's shared PD (rdma_destroy_id). */
void dpv_rdmacm_id_put_device(struct dpv_rdmacm_id *p);

/* ---- dpv_rdmacm_addr.c ---- */

/**
 * Forgets the id's bound address (its port becomes free) and frees its path
 * record (rdma_destroy_id).
 */
void dpv_rdmacm_addr_release(struct dpv_rdmacm_id *p);

/* ---- dpv_rdmacm_resolve.c (the neighbour step of rdma_resolve_addr) ---- */

/**
 * After the route lookup of rdma_resolve_addr: 0 when the destination's
 * Ethernet address is known (the caller posts ADDR_RESOLVED); 1 when it is
 * being resolved: the id is ADDR_QUERY and the CM service's thread posts
 * ADDR_RESOLVED, or ADDR_ERROR -ETIMEDOUT after timeout_ms; -1 with errno.
 */
int dpv_rdmacm_neigh_start(struct dpv_rdmacm_id *p, int timeout_ms);
/** One round of the pending resolutions (the CM service's thread). */
int dpv_rdmacm_neigh_poll(uint64_t now);
/** Forgets p's pending resolution (rdma_destroy_id). */
void dpv_rdmacm_neigh_cancel(struct dpv_rdmacm_id *p);
/** A child of fork() forgets the parent's pending resolutions. */
void dpv_rdmacm_neigh_forget(void);
/** Whether an rdma_resolve_addr waits for its neighbour (the CM thread keeps running). */
bool dpv_rdmacm_neigh_pending(void);

/* ---- dpv_rdmacm_conn.c ---- */

/** Detaches the id from the CM (rdma_destroy_id): REJ/DREQ as lib/cm does. */
void dpv_rdmacm_conn_release(struct dpv_rdmacm_id *p);
/** rdma_destroy_id: leave every group the id joined (dpv_rdmacm_mcast.c). */
void dpv_rdmacm_mc_release(struct dpv_rdmacm_id *p);

/* ---- dpv_rdmacm_sync.c ---- */

/**
 * rdma-core's ucma_complete: for an id of its own channel (NULL channel,
 * rdma_create_ep) acknowledges id->event, waits for the next event into
 * id->event and turns its status into the call's result (REJECTED:
 * ECONNREFUSED; a negative status: its errno). Other ids: 0 at once.
 * @return 0, or -1 with errno.
 */
int dpv_rdmacm_complete(struct dpv_rdmacm_id *p);

/* rdma_set_option(RDMA_OPTION_IB, RDMA_OPTION_IB_PATH): the route from a
 * path record (dpv_rdmacm_addr.c); ROUTE_RESOLVED posted, and waited for on
 * a synchronous id. 0, or -1 with errno EINVAL / ENOMEM. */
int dpv_rdmacm_set_ib_path(struct dpv_rdmacm_id *p, const void *optval, size_t optlen);

/* ---- dpv_rdmacm_qpattr.c ---- */

/**
 * The INIT/RTR/RTS attributes of a connected (RC) id's QP once the CM has a
 * connection (Linux ib_cm_init_qp_attr + rdma_init_qp_attr). Service lock
 * held. @return 0, or -1 with errno EINVAL (no connection, wrong state).
 */
int dpv_rdmacm_conn_qp_attr(struct dpv_rdmacm_id *p, struct ibv_qp_attr *a, int *mask);

/** Linux's cm_ack_timeout: a QP's local ACK timeout from the CA's ACK delay and the path's packet life time. */
uint8_t dpv_rdmacm_ack_timeout(uint8_t ca_ack_delay, uint8_t packet_life_time);

/** The local CA ACK delay of the id's device (ibv_query_device), 0 when unknown. */
uint8_t dpv_rdmacm_ca_ack_delay(struct rdma_cm_id *id);

/* ---- dpv_rdmacm_qp.c ---- */

/** The P_Key index of the id's route P_Key, or -1 with errno EINVAL. */
int dpv_rdmacm_pkey_index(struct rdma_cm_id *id);

/** Sets errno to e and returns -1 (rdma-core's ERR()). */
static inline int dpv_rdmacm_err(int e)
{
	errno = e;
	return -1;
}

#endif /* DPV_RDMACM_H */
