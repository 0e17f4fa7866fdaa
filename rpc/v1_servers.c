/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Servers known to speak only version 1 (draft-cel-nfsv4-rpcrdma-version-
 * two §7.2: "a client can avoid a possible version negotiation loop when
 * re-establishing another connection by assuming that particular server
 * does not support RPC-over-RDMA version 2").  Process-wide, by address;
 * a handful is plenty, the oldest entry makes room.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "rpc/rpc_internal.h"

#define V1_SERVERS 32
static pthread_mutex_t v1_lock = PTHREAD_MUTEX_INITIALIZER;
static char v1_servers[V1_SERVERS][64];
static unsigned v1_next;

void rpcrdma_rpc_v1_server_key(const struct sockaddr_storage *ss, char *out,
			       size_t cap)
{
	char host[INET6_ADDRSTRLEN] = "?";
	unsigned port = rpcrdma_rpc_addr_port(ss);
	if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *a = (const void *)ss;
		inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof host);
	} else if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *a = (const void *)ss;
		inet_ntop(AF_INET, &a->sin_addr, host, sizeof host);
	}
	snprintf(out, cap, "%s/%u", host, port);
}

bool rpcrdma_rpc_v1_server_known(const char *key)
{
	bool hit = false;
	pthread_mutex_lock(&v1_lock);
	for (unsigned i = 0; i < V1_SERVERS && !hit; i++)
		hit = !strcmp(v1_servers[i], key);
	pthread_mutex_unlock(&v1_lock);
	return hit;
}

void rpcrdma_rpc_v1_server_remember(const char *key)
{
	if (!*key || rpcrdma_rpc_v1_server_known(key))
		return;
	pthread_mutex_lock(&v1_lock);
	snprintf(v1_servers[v1_next++ % V1_SERVERS], sizeof v1_servers[0],
		 "%s", key);
	pthread_mutex_unlock(&v1_lock);
}
