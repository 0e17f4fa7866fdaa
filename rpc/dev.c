/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/* The provider objects a client or server shares among its connections:
 * device, protection domain and CM event channel.
 *
 * The device itself is shared by every client and server of the process
 * that opens the same provider and device with the same parameters
 * (reference counted): with the iwarp provider a device is a progress
 * thread and its epoll set, and a program with many clients (libtirpc
 * programs make one CLIENT per server and thread) should not pay one
 * per client.  Protection domain and channel stay each owner's own.
 *
 * A forked child shares its parent's descriptors, the device's epoll set
 * among them, but none of its threads: a device the child opened through
 * its copy of the list would register the child's sockets in the
 * parent's set, for the parent's progress thread to find with the
 * child's pointers.  The child forgets the list and opens its own. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "rpc/rpc_internal.h"

struct shared_dev {
	struct shared_dev *next;
	const struct rpcrdma_provider_ops *ops;
	char name[64];
	struct rpcrdma_dev_params p; /* p.device points at name */
	struct rpcrdma_dev *dev;
	unsigned refs;
};

static pthread_mutex_t shared_lock = PTHREAD_MUTEX_INITIALIZER;
static struct shared_dev *shared;
static pthread_once_t fork_once = PTHREAD_ONCE_INIT;

static void fork_prepare(void)
{
	pthread_mutex_lock(&shared_lock);
}

static void fork_parent(void)
{
	pthread_mutex_unlock(&shared_lock);
}

static void fork_child(void)
{
	shared = NULL; /* the parent's: not this process's to close */
	pthread_mutex_unlock(&shared_lock);
}

static void fork_register(void)
{
	pthread_atfork(fork_prepare, fork_parent, fork_child);
}

static bool same(const struct shared_dev *s,
		 const struct rpcrdma_provider_ops *ops,
		 const struct rpcrdma_dev_params *p)
{
	const char *a = s->p.device ? s->p.device : "";
	const char *b = p->device ? p->device : "";
	return s->ops == ops && !strcmp(a, b) &&
	       s->p.connect_timeout_ms == p->connect_timeout_ms &&
	       s->p.mpa_crc == p->mpa_crc &&
	       s->p.mpa_require_crc == p->mpa_require_crc &&
	       s->p.max_fpdu == p->max_fpdu &&
	       s->p.manual_progress == p->manual_progress;
}

static int dev_get(const struct rpcrdma_provider_ops *ops,
		   const struct rpcrdma_dev_params *p, struct rpcrdma_dev **out)
{
	pthread_once(&fork_once, fork_register);
	pthread_mutex_lock(&shared_lock);
	for (struct shared_dev *s = shared; s; s = s->next)
		if (same(s, ops, p)) {
			s->refs++;
			*out = s->dev;
			pthread_mutex_unlock(&shared_lock);
			return 0;
		}
	struct shared_dev *s = calloc(1, sizeof(*s));
	if (!s || (p->device && strlen(p->device) >= sizeof(s->name))) {
		pthread_mutex_unlock(&shared_lock);
		free(s);
		return s ? RPCRDMA_ERR_INVAL : RPCRDMA_ERR_NOMEM;
	}
	s->ops = ops;
	s->p = *p;
	if (p->device) {
		strcpy(s->name, p->device);
		s->p.device = s->name;
	}
	int rc = ops->open(&s->p, &s->dev);
	if (rc < 0) {
		pthread_mutex_unlock(&shared_lock);
		free(s);
		return rc;
	}
	s->refs = 1;
	s->next = shared;
	shared = s;
	*out = s->dev;
	pthread_mutex_unlock(&shared_lock);
	return 0;
}

static void dev_put(struct rpcrdma_dev *dev)
{
	pthread_mutex_lock(&shared_lock);
	for (struct shared_dev **pp = &shared; *pp; pp = &(*pp)->next) {
		struct shared_dev *s = *pp;
		if (s->dev != dev)
			continue;
		if (--s->refs == 0) {
			*pp = s->next;
			s->ops->close(s->dev);
			free(s);
		}
		break;
	}
	pthread_mutex_unlock(&shared_lock);
}

int rpcrdma_rpc_dev_open(const struct rpcrdma_opts *o, struct rpc_dev *rd)
{
	struct rpcrdma_dev_params p;
	int rc;

	memset(rd, 0, sizeof(*rd));
	const struct rpcrdma_provider_ops *ops = rpcrdma_provider_find(o->provider);
	if (!ops)
		return RPCRDMA_ERR_NOTSUP;
	memset(&p, 0, sizeof(p));
	p.device = o->device;
	p.connect_timeout_ms = o->connect_timeout_ms;
	p.mpa_crc = o->mpa_crc;
	/* Every CQ of ours is attended whenever work may be pending (the
	 * caller driving it, the loop, svc_run(): progress.c). */
	p.manual_progress = true;
	rc = dev_get(ops, &p, &rd->dev);
	if (rc < 0)
		return rc;
	rd->ops = ops;
	rc = rd->ops->query(rd->dev, &rd->attr);
	if (rc == 0)
		rpcrdma_rpc_inv_choose(&rd->attr, o->remote_inv, &rd->inv);
	if (rc == 0)
		rc = rd->ops->alloc_pd(rd->dev, &rd->pd);
	if (rc == 0)
		rc = rd->ops->create_channel(rd->dev, &rd->ch);
	if (rc == 0) {
		rd->cache = rpcrdma_rpc_reg_cache_new(rd); /* NULL: none */
		rd->pool = rpcrdma_rpc_bufpool_new(rd);    /* NULL: malloc */
	}
	if (rc < 0) {
		rpcrdma_rpc_dev_close(rd);
		return rc;
	}
	return 0;
}

void rpcrdma_rpc_dev_close(struct rpc_dev *rd)
{
	if (!rd->ops)
		return;
	rpcrdma_rpc_reg_cache_free(rd->cache);
	rpcrdma_rpc_bufpool_close(rd->pool);
	if (rd->ch)
		rd->ops->destroy_channel(rd->ch);
	if (rd->pd)
		rd->ops->dealloc_pd(rd->pd);
	if (rd->dev)
		dev_put(rd->dev);
	memset(rd, 0, sizeof(*rd));
}
