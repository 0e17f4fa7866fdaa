/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/* rpc/ address strings: "host", "host:port", "[v6]:port", bare v6, with
 * the RPC-over-RDMA default port 20049 (RFC 8166 §9.1). */
#include <arpa/inet.h>
#include <netinet/in.h>

#include "rpc/rpc_internal.h"
#include "test.h"

static int port_of(const char *s, int *family)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int rc = rpcrdma_rpc_parse_addr(s, &ss, &len);
	if (rc < 0)
		return rc;
	*family = ss.ss_family;
	if (ss.ss_family == AF_INET6)
		return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
	return ntohs(((struct sockaddr_in *)&ss)->sin_port);
}

int main(void)
{
	int f = 0;
	CHECK_EQ(port_of("127.0.0.1", &f), RPCRDMA_DEFAULT_PORT);
	CHECK_EQ(f, AF_INET);
	CHECK_EQ(port_of("127.0.0.1:5", &f), 5);
	CHECK_EQ(port_of("127.0.0.1:0", &f), 0);
	CHECK_EQ(port_of("[::1]:7", &f), 7);
	CHECK_EQ(f, AF_INET6);
	CHECK_EQ(port_of("[::1]", &f), RPCRDMA_DEFAULT_PORT);
	CHECK_EQ(port_of("::1", &f), RPCRDMA_DEFAULT_PORT);
	CHECK_EQ(f, AF_INET6);
	CHECK_EQ(port_of("[::1", &f), RPCRDMA_ERR_ADDR);
	CHECK_EQ(port_of("[::1]x", &f), RPCRDMA_ERR_ADDR);
	CHECK_EQ(port_of("127.0.0.1:65536", &f), RPCRDMA_ERR_ADDR);
	CHECK_EQ(port_of("127.0.0.1:abc", &f), RPCRDMA_ERR_ADDR);
	CHECK_EQ(port_of("", &f), RPCRDMA_ERR_ADDR);
	CHECK_EQ(port_of(NULL, &f), RPCRDMA_ERR_ADDR);
	TEST_MAIN_END();
}
