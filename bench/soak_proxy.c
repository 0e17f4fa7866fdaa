/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * The soak's TCP proxy (soak.h).  One thread, poll() over every
 * connection pair.  The faults are what reach an iWARP connection when
 * the network misbehaves and netem/iptables are not at hand: data that
 * arrives late, a direction that stalls, segments cut small (MPA must
 * reassemble FPDUs from any split, RFC 5044 §5), and a connection reset.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif
#include "soak.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "perf.h"

#define MAX_PAIRS 256
#define BUF 65536

struct dir {
	uint8_t buf[BUF];
	size_t off, len;      /* pending bytes buf[off, off + len) */
	uint64_t release_ns;  /* nothing forwarded before (delay, stall) */
};

struct pair {
	int fd[2];            /* 0: client side, 1: upstream */
	bool connecting;      /* upstream connect() in progress */
	struct dir d[2];      /* d[0]: client -> upstream, d[1]: back */
};

struct soak_proxy {
	struct soak_proxy_cfg cfg;
	int lfd;
	int wake[2];
	pthread_t thread;
	atomic_bool stop, reset_all;
	pthread_mutex_t lock; /* stats */
	struct soak_proxy_stats st;
	struct pair *pairs[MAX_PAIRS];
	uint64_t rng;
	uint64_t next_reset_ns, next_stall_ns;
};

static uint32_t rnd(struct soak_proxy *p)
{
	p->rng ^= p->rng << 13;
	p->rng ^= p->rng >> 7;
	p->rng ^= p->rng << 17;
	return (uint32_t)(p->rng >> 16);
}

static void set_nonblock(int fd)
{
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/* Close with an RST (SO_LINGER 0), as a crashed or reset peer does. */
static void rst_close(int fd)
{
	if (fd < 0)
		return;
	struct linger l = {1, 0};
	setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
	close(fd);
}

static void drop(struct soak_proxy *p, int i, bool rst)
{
	struct pair *c = p->pairs[i];
	for (int k = 0; k < 2; k++) {
		if (rst)
			rst_close(c->fd[k]);
		else if (c->fd[k] >= 0)
			close(c->fd[k]);
	}
	free(c);
	p->pairs[i] = NULL;
}

static void accept_one(struct soak_proxy *p)
{
	int cfd = accept4(p->lfd, NULL, NULL, SOCK_CLOEXEC);
	if (cfd < 0)
		return;
	int slot = -1;
	for (int i = 0; i < MAX_PAIRS && slot < 0; i++)
		if (!p->pairs[i])
			slot = i;
	int ufd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct pair *c = slot >= 0 && ufd >= 0 ? calloc(1, sizeof(*c)) : NULL;
	if (!c) {
		rst_close(cfd);
		if (ufd >= 0)
			close(ufd);
		return;
	}
	set_nonblock(cfd);
	set_nonblock(ufd);
	struct sockaddr_in a = {.sin_family = AF_INET,
				.sin_port = htons(p->cfg.upstream_port),
				.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	int rc = connect(ufd, (struct sockaddr *)&a, sizeof(a));
	if (rc != 0 && errno != EINPROGRESS) {
		/* The server is down: the client sees a reset. */
		rst_close(cfd);
		close(ufd);
		free(c);
		pthread_mutex_lock(&p->lock);
		p->st.upstream_failed++;
		pthread_mutex_unlock(&p->lock);
		return;
	}
	c->fd[0] = cfd;
	c->fd[1] = ufd;
	c->connecting = rc != 0;
	p->pairs[slot] = c;
	pthread_mutex_lock(&p->lock);
	p->st.accepted++;
	pthread_mutex_unlock(&p->lock);
}

/* Read what side k has into its direction's buffer; false at EOF or
 * error. */
static bool pull(struct soak_proxy *p, struct pair *c, int k, uint64_t now)
{
	struct dir *d = &c->d[k];
	if (d->len)
		return true; /* the buffer is forwarded first */
	ssize_t n = read(c->fd[k], d->buf, BUF);
	if (n == 0)
		return false;
	if (n < 0)
		return errno == EAGAIN || errno == EINTR;
	d->off = 0;
	d->len = (size_t)n;
	if (p->cfg.delay_max_ms) {
		uint64_t hold = (uint64_t)(rnd(p) % (p->cfg.delay_max_ms + 1)) *
				1000000u;
		if (d->release_ns < now + hold)
			d->release_ns = now + hold;
	}
	pthread_mutex_lock(&p->lock);
	p->st.bytes += (uint64_t)n;
	pthread_mutex_unlock(&p->lock);
	return true;
}

/* Forward direction k's pending bytes (whole, or a small piece); false
 * when the other side is gone. */
static bool push(struct soak_proxy *p, struct pair *c, int k, uint64_t now)
{
	struct dir *d = &c->d[k];
	if (!d->len || now < d->release_ns)
		return true;
	size_t n = d->len;
	if (p->cfg.split_pct && rnd(p) % 100 < p->cfg.split_pct) {
		size_t piece = 1 + rnd(p) % 64;
		if (piece < n) {
			n = piece;
			pthread_mutex_lock(&p->lock);
			p->st.split_writes++;
			pthread_mutex_unlock(&p->lock);
		}
	}
	ssize_t w = send(c->fd[1 - k], d->buf + d->off, n, MSG_NOSIGNAL);
	if (w < 0)
		return errno == EAGAIN || errno == EINTR;
	d->off += (size_t)w;
	d->len -= (size_t)w;
	return true;
}

static void *proxy_main(void *arg)
{
	struct soak_proxy *p = arg;
	struct pollfd pf[2 + 2 * MAX_PAIRS];
	int who[2 + 2 * MAX_PAIRS];
	while (!atomic_load(&p->stop)) {
		uint64_t now = perf_now_ns();
		if (atomic_exchange(&p->reset_all, false)) {
			for (int i = 0; i < MAX_PAIRS; i++)
				if (p->pairs[i])
					drop(p, i, true);
		}
		/* Faults on a schedule: a reset, a stall. */
		if (p->cfg.reset_every_ms && now >= p->next_reset_ns) {
			p->next_reset_ns = now + (uint64_t)(p->cfg.reset_every_ms / 2 +
					   rnd(p) % (p->cfg.reset_every_ms + 1)) * 1000000u;
			int live[MAX_PAIRS], nl = 0;
			for (int i = 0; i < MAX_PAIRS; i++)
				if (p->pairs[i] && !p->pairs[i]->connecting)
					live[nl++] = i;
			if (nl) {
				drop(p, live[rnd(p) % (unsigned)nl], true);
				pthread_mutex_lock(&p->lock);
				p->st.resets++;
				pthread_mutex_unlock(&p->lock);
			}
		}
		if (p->cfg.stall_every_ms && now >= p->next_stall_ns) {
			p->next_stall_ns = now + (uint64_t)(p->cfg.stall_every_ms / 2 +
					   rnd(p) % (p->cfg.stall_every_ms + 1)) * 1000000u;
			int live[MAX_PAIRS], nl = 0;
			for (int i = 0; i < MAX_PAIRS; i++)
				if (p->pairs[i])
					live[nl++] = i;
			if (nl) {
				struct pair *c = p->pairs[live[rnd(p) % (unsigned)nl]];
				c->d[rnd(p) & 1].release_ns =
					now + (uint64_t)(rnd(p) % (p->cfg.stall_max_ms + 1)) *
						      1000000u;
				pthread_mutex_lock(&p->lock);
				p->st.stalls++;
				pthread_mutex_unlock(&p->lock);
			}
		}
		int n = 0;
		pf[n] = (struct pollfd){.fd = p->lfd, .events = POLLIN};
		who[n++] = -1;
		pf[n] = (struct pollfd){.fd = p->wake[0], .events = POLLIN};
		who[n++] = -2;
		int timeout = 50;
		for (int i = 0; i < MAX_PAIRS; i++) {
			struct pair *c = p->pairs[i];
			if (!c)
				continue;
			for (int k = 0; k < 2; k++) {
				short ev = 0;
				if (c->connecting) {
					ev = k == 1 ? POLLOUT : 0;
				} else {
					if (!c->d[k].len)
						ev |= POLLIN;
					if (c->d[1 - k].len) {
						if (now >= c->d[1 - k].release_ns)
							ev |= POLLOUT;
						else
							timeout = 1;
					}
				}
				pf[n] = (struct pollfd){.fd = c->fd[k], .events = ev};
				who[n++] = i * 2 + k;
			}
		}
		if (poll(pf, (nfds_t)n, timeout) < 0 && errno != EINTR)
			break;
		now = perf_now_ns();
		for (int j = 0; j < n; j++) {
			if (who[j] == -1) {
				if (pf[j].revents & POLLIN)
					accept_one(p);
				continue;
			}
			if (who[j] == -2) {
				uint8_t b[64];
				if (pf[j].revents & POLLIN &&
				    read(p->wake[0], b, sizeof(b)) < 0) {
					/* nothing to do: it only wakes us */
				}
				continue;
			}
			int i = who[j] / 2, k = who[j] % 2;
			struct pair *c = p->pairs[i];
			if (!c)
				continue;
			if (c->connecting) {
				if (!pf[j].revents)
					continue;
				int err = 0;
				socklen_t el = sizeof(err);
				getsockopt(c->fd[1], SOL_SOCKET, SO_ERROR, &err, &el);
				if (err || (pf[j].revents & (POLLERR | POLLHUP))) {
					drop(p, i, true);
					pthread_mutex_lock(&p->lock);
					p->st.upstream_failed++;
					pthread_mutex_unlock(&p->lock);
				} else {
					c->connecting = false;
				}
				continue;
			}
			bool ok = true;
			if (pf[j].revents & (POLLIN | POLLHUP | POLLERR))
				ok = pull(p, c, k, now);
			if (ok)
				ok = push(p, c, 1 - k, now);
			if (!ok)
				drop(p, i, (pf[j].revents & POLLERR) != 0);
		}
		/* Pending data whose hold has passed (no poll event for it). */
		for (int i = 0; i < MAX_PAIRS; i++) {
			struct pair *c = p->pairs[i];
			if (c && !c->connecting &&
			    (!push(p, c, 0, now) || !push(p, c, 1, now)))
				drop(p, i, false);
		}
	}
	return NULL;
}

int soak_proxy_start(const struct soak_proxy_cfg *cfg, struct soak_proxy **out)
{
	struct soak_proxy *p = calloc(1, sizeof(*p));
	if (!p)
		return -1;
	p->cfg = *cfg;
	p->rng = cfg->seed ? cfg->seed : 0x9e3779b97f4a7c15ull;
	p->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int one = 1;
	setsockopt(p->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	struct sockaddr_in a = {.sin_family = AF_INET,
				.sin_port = htons(cfg->listen_port),
				.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	if (p->lfd < 0 || bind(p->lfd, (struct sockaddr *)&a, sizeof(a)) != 0 ||
	    listen(p->lfd, 64) != 0 || pipe2(p->wake, O_CLOEXEC | O_NONBLOCK)) {
		int e = errno;
		if (p->lfd >= 0)
			close(p->lfd);
		free(p);
		errno = e;
		return -1;
	}
	pthread_mutex_init(&p->lock, NULL);
	uint64_t now = perf_now_ns();
	p->next_reset_ns = now + (uint64_t)cfg->reset_every_ms * 1000000u;
	p->next_stall_ns = now + (uint64_t)cfg->stall_every_ms * 1000000u;
	if (pthread_create(&p->thread, NULL, proxy_main, p)) {
		close(p->lfd);
		free(p);
		return -1;
	}
	*out = p;
	return 0;
}

void soak_proxy_reset_all(struct soak_proxy *p)
{
	atomic_store(&p->reset_all, true);
	if (write(p->wake[1], "r", 1) < 0) {
		/* the pipe is full: a wake-up is pending anyway */
	}
}

void soak_proxy_stats(struct soak_proxy *p, struct soak_proxy_stats *st)
{
	pthread_mutex_lock(&p->lock);
	*st = p->st;
	pthread_mutex_unlock(&p->lock);
}

void soak_proxy_stop(struct soak_proxy *p)
{
	atomic_store(&p->stop, true);
	if (write(p->wake[1], "s", 1) < 0) {
		/* as above */
	}
	pthread_join(p->thread, NULL);
	for (int i = 0; i < MAX_PAIRS; i++)
		if (p->pairs[i])
			drop(p, i, false);
	close(p->lfd);
	close(p->wake[0]);
	close(p->wake[1]);
	pthread_mutex_destroy(&p->lock);
	free(p);
}
