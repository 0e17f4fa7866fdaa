/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/* Address strings: "host", "host:port", "[v6addr]:port", "v6addr". */
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rpc/rpc_internal.h"

/* Splits s into host and port (NULL: none given).  False when s is not
 * of one of the forms. */
static bool split(const char *s, char *host, size_t cap, const char **port)
{
	*port = NULL;
	if (!s || !*s || strlen(s) >= cap)
		return false;
	if (s[0] == '[') {
		const char *end = strchr(s, ']');
		if (!end)
			return false;
		memcpy(host, s + 1, (size_t)(end - s - 1));
		host[end - s - 1] = 0;
		if (end[1] == ':')
			*port = end + 2;
		else if (end[1])
			return false;
	} else {
		const char *c = strchr(s, ':');
		strcpy(host, s);
		/* Exactly one colon: host:port; more: a bare IPv6 address. */
		if (c && !strchr(c + 1, ':')) {
			host[c - s] = 0;
			*port = c + 1;
		}
	}
	return true;
}

static bool port_ok(const char *port, unsigned long *pn)
{
	char *endp;
	if (!port || *port < '0' || *port > '9')
		return false;
	*pn = strtoul(port, &endp, 10);
	return !*endp && *pn <= 65535;
}

bool rpcrdma_rpc_addr_bad_port(const char *s)
{
	char host[256];
	const char *port;
	unsigned long pn;
	return split(s, host, sizeof host, &port) && port && *port &&
	       !port_ok(port, &pn);
}

int rpcrdma_rpc_parse_addr(const char *s, struct sockaddr_storage *ss,
			   socklen_t *len)
{
	char host[256];
	const char *port = NULL;
	char portbuf[8];

	if (!split(s, host, sizeof host, &port))
		return RPCRDMA_ERR_ADDR;
	if (!port || !*port) {
		snprintf(portbuf, sizeof(portbuf), "%u", RPCRDMA_DEFAULT_PORT);
		port = portbuf;
	}
	unsigned long pn;
	if (!port_ok(port, &pn))
		return RPCRDMA_ERR_ADDR;
	struct addrinfo hints, *res = NULL;
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	if (getaddrinfo(host, port, &hints, &res) != 0 || !res)
		return RPCRDMA_ERR_ADDR;
	if (res->ai_addrlen > sizeof(*ss)) {
		freeaddrinfo(res);
		return RPCRDMA_ERR_ADDR;
	}
	memset(ss, 0, sizeof(*ss));
	memcpy(ss, res->ai_addr, res->ai_addrlen);
	*len = res->ai_addrlen;
	freeaddrinfo(res);
	return 0;
}

uint16_t rpcrdma_rpc_addr_port(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)(const void *)ss)
				     ->sin6_port);
	if (ss->ss_family == AF_INET)
		return ntohs(((const struct sockaddr_in *)(const void *)ss)
				     ->sin_port);
	return 0;
}

void rpcrdma_rpc_addr_str(const struct sockaddr_storage *ss, char *out,
			  size_t cap)
{
	char host[INET6_ADDRSTRLEN] = "?";
	unsigned port = rpcrdma_rpc_addr_port(ss);
	if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *a = (const void *)ss;
		inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof host);
		snprintf(out, cap, "[%s]:%u", host, port);
	} else if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *a = (const void *)ss;
		inet_ntop(AF_INET, &a->sin_addr, host, sizeof host);
		snprintf(out, cap, "%s:%u", host, port);
	} else {
		snprintf(out, cap, "?");
	}
}

const char *rpcrdma_rpc_cm_event_name(int type)
{
	switch (type) {
	case RPCRDMA_CM_EVENT_CONNECT_REQUEST: return "connection request";
	case RPCRDMA_CM_EVENT_ESTABLISHED: return "established";
	case RPCRDMA_CM_EVENT_REJECTED: return "rejected";
	case RPCRDMA_CM_EVENT_CONNECT_ERROR: return "connect error";
	case RPCRDMA_CM_EVENT_UNREACHABLE: return "unreachable";
	case RPCRDMA_CM_EVENT_DISCONNECTED: return "disconnected";
	case RPCRDMA_CM_EVENT_DEVICE_REMOVAL: return "device removed";
	}
	return "unknown CM event";
}
