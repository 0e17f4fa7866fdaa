/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/* Address strings: "host", "host:port", "[v6addr]:port", "v6addr". */
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rpc/rpc_internal.h"

int rpcrdma_rpc_parse_addr(const char *s, struct sockaddr_storage *ss,
			   socklen_t *len)
{
	char host[256];
	const char *port = NULL;
	char portbuf[8];

	if (!s || !*s || strlen(s) >= sizeof(host))
		return RPCRDMA_ERR_ADDR;
	if (s[0] == '[') {
		const char *end = strchr(s, ']');
		if (!end)
			return RPCRDMA_ERR_ADDR;
		memcpy(host, s + 1, (size_t)(end - s - 1));
		host[end - s - 1] = 0;
		if (end[1] == ':')
			port = end + 2;
		else if (end[1])
			return RPCRDMA_ERR_ADDR;
	} else {
		const char *c = strchr(s, ':');
		strcpy(host, s);
		/* Exactly one colon: host:port; more: a bare IPv6 address. */
		if (c && !strchr(c + 1, ':')) {
			host[c - s] = 0;
			port = c + 1;
		}
	}
	if (!port || !*port) {
		snprintf(portbuf, sizeof(portbuf), "%u", RPCRDMA_DEFAULT_PORT);
		port = portbuf;
	}
	char *endp;
	unsigned long pn = strtoul(port, &endp, 10);
	if (*endp || pn > 65535)
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
