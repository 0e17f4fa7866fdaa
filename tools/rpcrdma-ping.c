/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * rpcrdma-ping: the NULL procedure (procedure 0, RFC 5531 §12.1) of a
 * program over RPC-over-RDMA, as rpcinfo -T does over TCP and ping and
 * rping do for their protocols: a line per reply with its round trip,
 * a summary at the end (or on Ctrl-C).  rpcrdma-ping(1).
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <netdb.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rpcrdma/rpcrdma.h"

static const char *prog_name = "rpcrdma-ping";
static volatile sig_atomic_t interrupted;

static void on_int(int sig)
{
	(void)sig;
	interrupted = 1;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: %s [-c COUNT] [-i INTERVAL] [-W TIMEOUT] [-q] "
		"HOST[:PORT] PROGRAM VERSION\n"
		"Call the NULL procedure of PROGRAM (a number, 0x-hex, or a name\n"
		"from /etc/rpc) version VERSION at HOST (port 20049 by default)\n"
		"over RPC-over-RDMA, and print each round trip.\n"
		"  -c, --count COUNT        stop after COUNT calls (default: until\n"
		"                           interrupted)\n"
		"  -i, --interval SECONDS   wait between calls (default 1; may be\n"
		"                           a fraction, 0: back to back)\n"
		"  -W, --timeout SECONDS    time to wait for each reply (default 5)\n"
		"  -q, --quiet              print only the summary\n"
		"  -h, --help               this help\n"
		"  -V, --version            the version\n"
		"The provider and other options come from the environment\n"
		"(RPCRDMA_PROVIDER, RPCRDMA_VERSIONS ...; rpcrdma(7)).\n"
		"Exit status: 0 if any reply came, 1 if none, 2 on bad usage.\n",
		prog_name);
}

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static bool parse_seconds(const char *s, double *out)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || *end || end == s || v < 0 || v > 86400)
		return false;
	*out = v;
	return true;
}

static bool parse_u32(const char *s, uint32_t *out)
{
	char *end;
	errno = 0;
	unsigned long v = strtoul(s, &end, 0);
	if (errno || *end || end == s || *s == '-' || v > UINT32_MAX)
		return false;
	*out = (uint32_t)v;
	return true;
}

/* A program number, or its name in /etc/rpc ("nfs"). */
static bool parse_prog(const char *s, uint32_t *out)
{
	if (parse_u32(s, out))
		return true;
	struct rpcent *r = getrpcbyname(s);
	if (!r)
		return false;
	*out = (uint32_t)r->r_number;
	return true;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{"count", required_argument, NULL, 'c'},
		{"interval", required_argument, NULL, 'i'},
		{"timeout", required_argument, NULL, 'W'},
		{"quiet", no_argument, NULL, 'q'},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{NULL, 0, NULL, 0},
	};
	uint32_t count = 0;
	double interval = 1, timeout = 5;
	bool quiet = false;
	int c;
	while ((c = getopt_long(argc, argv, "c:i:W:qhV", lo, NULL)) != -1) {
		switch (c) {
		case 'c':
			if (!parse_u32(optarg, &count) || !count) {
				fprintf(stderr, "%s: bad count '%s'\n", prog_name,
					optarg);
				return 2;
			}
			break;
		case 'i':
			if (!parse_seconds(optarg, &interval)) {
				fprintf(stderr, "%s: bad interval '%s'\n",
					prog_name, optarg);
				return 2;
			}
			break;
		case 'W':
			if (!parse_seconds(optarg, &timeout) || timeout < 0.001) {
				fprintf(stderr, "%s: bad timeout '%s'\n",
					prog_name, optarg);
				return 2;
			}
			break;
		case 'q': quiet = true; break;
		case 'h': usage(stdout); return 0;
		case 'V':
			printf("%s %s\n", prog_name, RPCRDMA_VERSION_STRING);
			return 0;
		default: usage(stderr); return 2;
		}
	}
	if (argc - optind != 3) {
		usage(stderr);
		return 2;
	}
	const char *host = argv[optind];
	uint32_t prog, vers;
	if (!parse_prog(argv[optind + 1], &prog)) {
		fprintf(stderr, "%s: unknown program '%s'\n", prog_name,
			argv[optind + 1]);
		return 2;
	}
	if (!parse_u32(argv[optind + 2], &vers)) {
		fprintf(stderr, "%s: bad version '%s'\n", prog_name,
			argv[optind + 2]);
		return 2;
	}

	struct rpcrdma_opts o;
	rpcrdma_opts_default(&o);
	o.call_timeout_ms = (unsigned)(timeout * 1000);
	if (timeout < o.connect_timeout_ms / 1000.0)
		o.connect_timeout_ms = (unsigned)(timeout * 1000);
	struct rpcrdma_clnt *cl;
	double t0 = now_s();
	int rc = rpcrdma_clnt_create(host, prog, vers, &o, &cl);
	if (rc < 0) {
		fprintf(stderr, "%s: %s: %s\n", prog_name, host,
			rpcrdma_strerror(rc));
		return 1;
	}
	double tconn = now_s() - t0;
	signal(SIGINT, on_int);
	signal(SIGTERM, on_int);
	struct rpcrdma_stats st;
	rpcrdma_clnt_stats(cl, &st);
	printf("RPCRDMA-PING %s program %u (%#x) version %u: connected in "
	       "%.3f ms (%s)\n", host, prog, prog, vers, tconn * 1000,
	       o.provider);
	fflush(stdout);

	uint32_t sent = 0, ok = 0;
	double min = 0, max = 0, sum = 0, sum2 = 0;
	double start = now_s();
	while (!interrupted && (!count || sent < count)) {
		struct rpcrdma_call call = {.proc = 0};
		struct rpcrdma_reply rep;
		double a = now_s();
		rc = rpcrdma_clnt_call(cl, &call, &rep);
		double ms = (now_s() - a) * 1000;
		sent++;
		if (rc == 0) {
			ok++;
			sum += ms;
			sum2 += ms * ms;
			min = ok == 1 || ms < min ? ms : min;
			max = ms > max ? ms : max;
			if (!quiet)
				printf("reply from %s: xid=%#010x seq=%u "
				       "time=%.3f ms\n", host, rep.xid, sent, ms);
		} else if (!quiet) {
			printf("no reply from %s: xid=%#010x seq=%u: %s\n", host,
			       rep.xid, sent, rpcrdma_strerror(rc));
		}
		rpcrdma_reply_free(&rep);
		fflush(stdout);
		if (rc == RPCRDMA_ERR_DISCONNECTED || rc == RPCRDMA_ERR_CANCELLED)
			break; /* nothing more will get through */
		if ((count && sent >= count) || interrupted)
			break;
		double until = now_s() + interval;
		while (!interrupted && now_s() < until) {
			double left = until - now_s();
			struct timespec t = {(time_t)left,
					     (long)((left - (double)(time_t)left) *
						    1e9)};
			nanosleep(&t, NULL);
		}
	}
	double total = now_s() - start;
	rpcrdma_clnt_stats(cl, &st);
	rpcrdma_clnt_destroy(cl);
	printf("--- %s program %u version %u RPC-over-RDMA ping statistics "
	       "---\n", host, prog, vers);
	printf("%u calls, %u replies, %.0f%% failed, time %.0f ms, "
	       "RPC-over-RDMA version %u\n", sent, ok,
	       sent ? 100.0 * (sent - ok) / sent : 0.0, total * 1000, st.version);
	if (ok) {
		double avg = sum / ok;
		double var = sum2 / ok - avg * avg;
		printf("rtt min/avg/max/mdev = %.3f/%.3f/%.3f/%.3f ms\n", min, avg,
		       max, var > 0 ? sqrt(var) : 0.0);
	}
	return ok ? 0 : 1;
}
