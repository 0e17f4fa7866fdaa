/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * rpcrdma-nfs3d — a userspace NFSv3 server on RPC-over-RDMA.
 *
 *   rpcrdma-nfs3d [options] EXPORT_DIR
 *
 * NFS (program 100003, version 3, RFC 1813) on RPC-over-RDMA version 1
 * (RFC 8166; default port 20049, RFC 8267 §4.2) through svc_rdma_create,
 * with the NFS Upper-Layer Binding (RFC 8267 §4): READ data goes in the
 * client's Write chunk, WRITE data comes in a Read chunk, and READLINK's
 * path may go by DDP too.  MOUNT (program 100005, version 3) on TCP
 * through plain libtirpc, on a port of its own (default 20048).  Served
 * by one thread, the way svc_run() serves (main loop below).
 *
 * Options:
 *   -l, --listen ADDR[:PORT]  RPC-over-RDMA address (0.0.0.0:20049)
 *   -m, --mount-port PORT     MOUNT over TCP (20048; 0 picks one)
 *   -p, --provider NAME       iwarp or verbs (RPCRDMA_PROVIDER)
 *   -d, --device NAME         verbs device (RPCRDMA_DEVICE)
 *   -a, --auth POLICY         trust (default), root-squash or squash
 *       --anonuid N, --anongid N   the anonymous user (65534)
 *       --drc-entries N       duplicate-request cache entries (1024; 0 off)
 *       --drc-bytes SIZE      ... and bytes at most (4M), least recently
 *                             used out first
 *       --credits N           credits granted per connection (32)
 *   -s, --stats FILE          counters written here on SIGUSR1 and at exit
 *       --port-file FILE      "RDMA_PORT MOUNT_PORT" once both listen
 *       --rpcbind             register MOUNT with the local rpcbind
 *   -v, --verbose             log every failed procedure; twice: every
 *                             call (READ and WRITE with offset and count)
 * SIGTERM or SIGINT stops it (counters written first).
 *
 * Test hooks, for fault injection only (environment; see nfs3d.h):
 *   RPCRDMA_NFS3D_TEST_DROP=PROC:N    drop the reply of the Nth PROC call
 *   RPCRDMA_NFS3D_TEST_ERR_CHUNK=N    answer the Nth READ with ERR_CHUNK
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <rpc/pmap_clnt.h>
#include <rpc/rpc.h>
#include <rpcrdma/tirpc.h>

#include "mount3.h"
#include "nfs3d.h"

/* rpcgen's dispatch function for MOUNT (mount3_svc.c, -m: no main). */
void mount_program_3(struct svc_req *rq, SVCXPRT *x);

struct nfs3d *nfs3d;

/* Threads.  The main thread creates and destroys the transports and
 * waits for signals; a second thread serves (svc_run()'s loop, below,
 * where the adapter also polls and posts); procedures for callers other
 * than root run on cred.c's identity thread, the only one whose
 * credentials change (see cred.c for why they may not change where verbs
 * and rdma_cm calls are made). */
static atomic_int stop_req, dump_req;
static int wake_fd[2] = { -1, -1 };

static void usage_to(FILE *f)
{
	fprintf(f,
		"usage: rpcrdma-nfs3d [-l ADDR[:PORT]] [-m MOUNT_PORT] [-p iwarp|verbs]\n"
		"                     [-d DEVICE] [-a trust|root-squash|squash]\n"
		"                     [--anonuid N] [--anongid N] [--drc-entries N]\n"
		"                     [--drc-bytes SIZE] [--credits N] [-s STATS_FILE]\n"
		"                     [--port-file FILE]\n"
		"                     [--rpcbind] [-v] EXPORT_DIR\n");
}

static void usage(void)
{
	usage_to(stderr);
}

static void help(void)
{
	usage_to(stdout);
	fputs("Serve EXPORT_DIR over NFSv3 on RPC-over-RDMA (MOUNT on TCP).\n"
	      "  -l, --listen ADDR[:PORT]   the RPC-over-RDMA address (0.0.0.0:20049)\n"
	      "  -m, --mount-port PORT      MOUNT's TCP port (20048; 0 picks one)\n"
	      "  -p, --provider NAME        iwarp or verbs (RPCRDMA_PROVIDER)\n"
	      "  -d, --device NAME          the verbs device (RPCRDMA_DEVICE)\n"
	      "  -a, --auth POLICY          AUTH_SYS identities: trust (default),\n"
	      "                             root-squash or squash\n"
	      "      --anonuid N            the anonymous user's uid (65534)\n"
	      "      --anongid N            the anonymous user's gid (65534)\n"
	      "      --drc-entries N        duplicate-request cache entries (1024; 0 off)\n"
	      "      --drc-bytes SIZE       ... and bytes, results and bookkeeping (4M;\n"
	      "                             K, M, G suffixes); least recently used out\n"
	      "      --credits N            credits granted per connection (32)\n"
	      "  -s, --stats FILE           counters written here on SIGUSR1 and at exit\n"
	      "      --port-file FILE       \"RDMA_PORT MOUNT_PORT\" once both listen\n"
	      "      --rpcbind              register MOUNT with the local rpcbind\n"
	      "  -v, --verbose              log every failed procedure; twice: every call\n"
	      "  -h, --help                 this help\n"
	      "      --version              the version\n",
	      stdout);
}

/* --------------------------------------------------------------------- */

static void write_stats(const char *path, SVCXPRT *rdma)
{
	if (!path)
		return;
	/* Written aside and renamed: a reader never sees half a file. */
	char tmp[PATH_MAX];
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	FILE *f = strcmp(path, "-") == 0 ? stderr : fopen(tmp, "w");
	if (!f) {
		fprintf(stderr, "rpcrdma-nfs3d: %s: %s\n", path, strerror(errno));
		return;
	}
	const struct nfs3d_counters *c = &nfs3d->ctr;
	for (unsigned i = 0; i < NFS3D_NPROC; i++)
		fprintf(f, "nfs.%s %llu %llu\n", nfs3d_proc_name(i),
			(unsigned long long)c->calls[i],
			(unsigned long long)c->errors[i]);
#define C(name) fprintf(f, "nfsd." #name " %llu\n", (unsigned long long)c->name)
	C(garbage_args);
	C(server_faults);
	C(send_failed);
	C(drc_hits);
	C(drc_stored);
	C(dropped);
	C(mnt);
	C(umnt);
	C(hook_drops);
	C(hook_err_chunk);
#undef C
	/* The duplicate-request cache: its bounds, what it holds, what went
	 * out of it and why (hits and stores are counted above). */
	struct nfs3d_drc_stats ds;
	nfs3d_drc_stats(nfs3d->drc, &ds);
#define D(name) fprintf(f, "nfsd.drc_" #name " %llu\n", (unsigned long long)ds.name)
	D(misses);
	D(evicted_entries);
	D(evicted_bytes);
	D(too_big);
	D(nomem);
	D(entries);
	D(bytes);
	D(max_entries);
	D(max_bytes);
#undef D
	struct rpcrdma_stats s;
	if (rdma && svc_rdma_stats(rdma, &s)) {
#define T(name) fprintf(f, "rdma." #name " %llu\n", (unsigned long long)s.name)
		T(connections);
		T(calls_received);
		T(chunked_calls_received);
		T(long_calls_received);
		T(short_replies);
		T(chunked_replies);
		T(long_replies);
		T(send_with_inv);
		T(err_chunk_sent);
		T(err_vers_sent);
		T(bad_replies);
		T(rdma_read_bytes);
		T(rdma_write_bytes);
		T(grants_raised);
		T(grants_refused);
		T(grants_lowered);
		T(grants_trimmed);
#undef T
		fprintf(f, "rdma.version %u\n", s.version);
		fprintf(f, "rdma.send_threshold %u\n", s.send_threshold);
		fprintf(f, "rdma.recv_threshold %u\n", s.recv_threshold);
		fprintf(f, "rdma.peer_remote_inv %u\n", s.peer_remote_inv ? 1u : 0u);
	}
	if (f == stderr)
		fflush(f);
	else if (fclose(f) != 0 || rename(tmp, path) < 0)
		fprintf(stderr, "rpcrdma-nfs3d: %s: %s\n", path, strerror(errno));
}

/* MOUNT's TCP listener. */
static SVCXPRT *mount_listen(uint16_t port, uint16_t *bound)
{
	int fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int v6 = fd >= 0;
	if (fd < 0)
		fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return NULL;
	int one = 1, zero = 0;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	struct sockaddr_storage ss;
	socklen_t sl;
	memset(&ss, 0, sizeof(ss));
	if (v6) {
		/* Both families on one socket. */
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
		a->sin6_family = AF_INET6;
		a->sin6_port = htons(port);
		a->sin6_addr = in6addr_any;
		sl = sizeof(*a);
	} else {
		struct sockaddr_in *a = (struct sockaddr_in *)&ss;
		a->sin_family = AF_INET;
		a->sin_port = htons(port);
		sl = sizeof(*a);
	}
	if (bind(fd, (struct sockaddr *)&ss, sl) < 0 || listen(fd, 64) < 0) {
		fprintf(stderr, "rpcrdma-nfs3d: MOUNT port %u: %s\n", port, strerror(errno));
		close(fd);
		return NULL;
	}
	sl = sizeof(ss);
	getsockname(fd, (struct sockaddr *)&ss, &sl);
	*bound = ntohs(v6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
			  : ((struct sockaddr_in *)&ss)->sin_port);
	SVCXPRT *x = svc_vc_create(fd, 0, 0);
	if (!x)
		close(fd);
	return x;
}

/* The test hooks (nfs3d.h), from the environment. */
static int read_hooks(struct nfs3d_hooks *h)
{
	h->drop_proc = -1;
	const char *s = getenv("RPCRDMA_NFS3D_TEST_DROP");
	if (s && *s) {
		char proc[32]; /* ("name" is MOUNT's typedef) */
		unsigned long long n;
		if (sscanf(s, "%31[A-Za-z]:%llu", proc, &n) != 2 || !n ||
		    (h->drop_proc = nfs3d_proc_number(proc)) < 1) {
			fprintf(stderr, "rpcrdma-nfs3d: RPCRDMA_NFS3D_TEST_DROP=%s: "
					"want PROC:N, e.g. REMOVE:1\n", s);
			return -1;
		}
		h->drop_nth = n;
		fprintf(stderr, "rpcrdma-nfs3d: TEST HOOK: the reply to %s call "
				"#%llu will be dropped\n", proc, n);
	}
	s = getenv("RPCRDMA_NFS3D_TEST_ERR_CHUNK");
	if (s && *s) {
		char *end;
		h->err_chunk_nth = strtoull(s, &end, 10);
		if (*end || !h->err_chunk_nth) {
			fprintf(stderr, "rpcrdma-nfs3d: RPCRDMA_NFS3D_TEST_ERR_CHUNK=%s: "
					"want N >= 1\n", s);
			return -1;
		}
		fprintf(stderr, "rpcrdma-nfs3d: TEST HOOK: READ #%llu will be "
				"answered with ERR_CHUNK\n",
			(unsigned long long)h->err_chunk_nth);
	}
	return 0;
}

struct serve_args {
	const char *stats;
	SVCXPRT *rdma;
};

/* svc_run(), plus a wake-up pipe so that it can be left (libtirpc's own
 * loop can only be left from a dispatch function). */
static void *serve(void *arg)
{
	const struct serve_args *sa = arg;
	struct pollfd *p = NULL;
	int cap = 0;
	while (!atomic_load(&stop_req)) {
		if (atomic_exchange(&dump_req, 0))
			write_stats(sa->stats, sa->rdma);
		int n = svc_max_pollfd + 1;
		if (n > cap) {
			struct pollfd *q = realloc(p, (size_t)n * sizeof(*p));
			if (!q)
				break;
			p = q;
			cap = n;
		}
		/* A copy: dispatching may register or drop transports. */
		memcpy(p, svc_pollfd, (size_t)(n - 1) * sizeof(*p));
		p[n - 1] = (struct pollfd){ .fd = wake_fd[0], .events = POLLIN };
		int r = poll(p, (nfds_t)n, -1);
		if (r < 0 && errno != EINTR) {
			fprintf(stderr, "rpcrdma-nfs3d: poll: %s\n", strerror(errno));
			break;
		}
		if (r > 0 && p[n - 1].revents) {
			char b[64];
			ssize_t k = read(wake_fd[0], b, sizeof(b));
			(void)k;
			r--;
		}
		if (r > 0)
			svc_getreq_poll(p, r);
	}
	free(p);
	write_stats(sa->stats, sa->rdma);
	atomic_store(&stop_req, 1);
	return NULL;
}

/* "4194304", "512K", "4M", "1G": 1 byte to 64 GiB.  0 or -1. */
static int parse_bytes(const char *s, unsigned long long *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	unsigned shift = 0;
	if (*end == 'K' || *end == 'k')
		shift = 10;
	else if (*end == 'M' || *end == 'm')
		shift = 20;
	else if (*end == 'G' || *end == 'g')
		shift = 30;
	if (shift)
		end++;
	if (*s < '0' || *s > '9' || errno || *end || !v ||
	    v > (64ull << 30) >> shift)
		return -1;
	*out = v << shift;
	return 0;
}

static void wake(void)
{
	ssize_t k = write(wake_fd[1], "", 1);
	(void)k;
}

int main(int argc, char **argv)
{
	const char *listen_addr = "0.0.0.0:20049", *provider = NULL,
		   *device = NULL, *stats = NULL, *port_file = NULL;
	unsigned long mount_port = 20048, drc_entries = 1024, credits = 0;
	unsigned long long drc_bytes = 4ull << 20;
	bool rpcbind = false;
	static struct nfs3d d;
	nfs3d = &d;
	d.auth.policy = NFS3D_AUTH_TRUST;
	d.auth.anon_uid = 65534;
	d.auth.anon_gid = 65534;
	enum { O_ANONUID = 256, O_ANONGID, O_DRC, O_DRC_BYTES, O_CREDITS,
	       O_PORTFILE, O_RPCBIND, O_VERSION };
	static const struct option lo[] = {
		{ "listen", required_argument, NULL, 'l' },
		{ "mount-port", required_argument, NULL, 'm' },
		{ "provider", required_argument, NULL, 'p' },
		{ "device", required_argument, NULL, 'd' },
		{ "auth", required_argument, NULL, 'a' },
		{ "anonuid", required_argument, NULL, O_ANONUID },
		{ "anongid", required_argument, NULL, O_ANONGID },
		{ "drc-entries", required_argument, NULL, O_DRC },
		{ "drc-bytes", required_argument, NULL, O_DRC_BYTES },
		{ "credits", required_argument, NULL, O_CREDITS },
		{ "stats", required_argument, NULL, 's' },
		{ "port-file", required_argument, NULL, O_PORTFILE },
		{ "rpcbind", no_argument, NULL, O_RPCBIND },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, O_VERSION },
		{ NULL, 0, NULL, 0 }
	};
	int ch;
	char *end;
	while ((ch = getopt_long(argc, argv, "l:m:p:d:a:s:vh", lo, NULL)) != -1) {
		switch (ch) {
		case 'l': listen_addr = optarg; break;
		case 'm':
			mount_port = strtoul(optarg, &end, 10);
			if (*end || mount_port > 65535) {
				usage();
				return 2;
			}
			break;
		case 'p': provider = optarg; break;
		case 'd': device = optarg; break;
		case 'a':
			if (nfs3d_auth_policy_parse(optarg, &d.auth.policy) < 0) {
				fprintf(stderr, "rpcrdma-nfs3d: --auth %s: trust, "
						"root-squash or squash\n", optarg);
				return 2;
			}
			break;
		case O_ANONUID: d.auth.anon_uid = (uid_t)strtoul(optarg, NULL, 10); break;
		case O_ANONGID: d.auth.anon_gid = (gid_t)strtoul(optarg, NULL, 10); break;
		case O_DRC:
			errno = 0;
			drc_entries = strtoul(optarg, &end, 10);
			if (errno || *end || end == optarg || drc_entries > 1u << 24) {
				fprintf(stderr, "rpcrdma-nfs3d: --drc-entries %s: 0 "
						"to 16777216\n", optarg);
				return 2;
			}
			break;
		case O_DRC_BYTES:
			if (parse_bytes(optarg, &drc_bytes) < 0) {
				fprintf(stderr, "rpcrdma-nfs3d: --drc-bytes %s: bytes "
						"from 1 to 64G, with an optional K, "
						"M or G suffix\n", optarg);
				return 2;
			}
			break;
		case O_CREDITS: credits = strtoul(optarg, NULL, 10); break;
		case 's': stats = optarg; break;
		case O_PORTFILE: port_file = optarg; break;
		case O_RPCBIND: rpcbind = true; break;
		case 'v': d.verbose++; break;
		case 'h': help(); return 0;
		case O_VERSION:
			printf("rpcrdma-nfs3d %s\n", RPCRDMA_VERSION_STRING);
			return 0;
		default:
			usage();
			return 2;
		}
	}
	if (optind != argc - 1) {
		usage();
		return 2;
	}
	if (read_hooks(&d.hooks) < 0)
		return 2;
	/* Signals go to the main thread's sigwait() only: blocked before any
	 * thread (the library's too) exists, so every thread inherits the
	 * mask. */
	sigset_t sigs;
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (pipe2(wake_fd, O_CLOEXEC | O_NONBLOCK) < 0) {
		fprintf(stderr, "rpcrdma-nfs3d: pipe: %s\n", strerror(errno));
		return 1;
	}
	if (nfs3d_export_open(&d.exp, argv[optind]) < 0)
		return 1;
	if (!d.exp.mount_root)
		fprintf(stderr, "rpcrdma-nfs3d: warning: %s is not the root of its "
				"file system: a client that forges file handles can "
				"reach the rest of it (as with Linux's "
				"no_subtree_check)\n", d.exp.path);
	d.auth.can_switch = geteuid() == 0;
	if (!d.auth.can_switch)
		fprintf(stderr, "rpcrdma-nfs3d: not root: every request is served "
				"as uid %u, whatever --auth says\n", (unsigned)geteuid());
	if (nfs3d_cred_start(&d.auth) < 0) {
		fprintf(stderr, "rpcrdma-nfs3d: cannot start the identity thread\n");
		return 1;
	}
	d.drc = nfs3d_drc_create((unsigned)drc_entries, (size_t)drc_bytes);
	if (!d.drc) {
		fprintf(stderr, "rpcrdma-nfs3d: out of memory\n");
		return 1;
	}
	/* RFC 1813 §3.3.7: "unique between instances of the NFS version 3
	 * protocol server": time and pid of this start. */
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	uint64_t verf = (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
	verf ^= (uint64_t)getpid() << 48;
	memcpy(d.write_verf, &verf, sizeof(d.write_verf));

	struct rpcrdma_opts o;
	rpcrdma_opts_default(&o);
	if (provider)
		o.provider = provider;
	if (device)
		o.device = device;
	if (credits)
		o.credits = (uint32_t)credits;
	SVCXPRT *rdma = svc_rdma_create(listen_addr, &o);
	if (!rdma) {
		clnt_pcreateerror("rpcrdma-nfs3d: svc_rdma_create");
		return 1;
	}
	if (!svc_register(rdma, NFS_PROGRAM, NFS_V3, nfs3d_nfs_dispatch, 0)) {
		fprintf(stderr, "rpcrdma-nfs3d: svc_register NFS failed\n");
		return 1;
	}
	/* RFC 8267 §4: READ3resok.data and READLINK3resok.data may be
	 * placed in the client's Write chunk.  ddp_min 1: RFC 8166
	 * §4.3.2.2 "The Responder is required to use Requester-provided
	 * Write chunks", whatever the size of the data. */
	const struct rpcrdma_ulb_proc ulb[] = {
		{ .proc = NFSPROC3_READ, .ddp_result_max = NFS3D_MAX_IO, .ddp_min = 1 },
		{ .proc = NFSPROC3_READLINK, .ddp_result_max = PATH_MAX, .ddp_min = 1 },
	};
	if (!svc_rdma_set_ulb(rdma, NFS_PROGRAM, NFS_V3, ulb, 2)) {
		fprintf(stderr, "rpcrdma-nfs3d: svc_rdma_set_ulb failed\n");
		return 1;
	}
	uint16_t mport = 0;
	SVCXPRT *mnt = mount_listen((uint16_t)mount_port, &mport);
	if (!mnt || !svc_register(mnt, MOUNT_PROGRAM, MOUNT_V3, mount_program_3, 0)) {
		fprintf(stderr, "rpcrdma-nfs3d: cannot serve MOUNT on TCP port %lu\n",
			mount_port);
		return 1;
	}
	if (rpcbind) {
		pmap_unset(MOUNT_PROGRAM, MOUNT_V3);
		if (!pmap_set(MOUNT_PROGRAM, MOUNT_V3, IPPROTO_TCP, mport))
			fprintf(stderr, "rpcrdma-nfs3d: warning: rpcbind refused "
					"the MOUNT registration\n");
	}
	uint16_t rport = svc_rdma_port(rdma);
	fprintf(stderr, "rpcrdma-nfs3d: exporting %s: NFSv3 on RPC-over-RDMA "
			"port %u (%s), MOUNT on TCP port %u, auth %s, DRC %lu entries "
			"and %llu bytes at most\n",
		d.exp.path, rport, o.provider ? o.provider : "iwarp", mport,
		d.auth.policy == NFS3D_AUTH_TRUST	? "trust"
		: d.auth.policy == NFS3D_AUTH_SQUASH ? "squash"
						      : "root-squash",
		drc_entries, drc_bytes);
	if (port_file) {
		char tmp[PATH_MAX];
		snprintf(tmp, sizeof(tmp), "%s.tmp", port_file);
		FILE *f = fopen(tmp, "w");
		if (!f || fprintf(f, "%u %u\n", rport, mport) < 0 || fclose(f) != 0 ||
		    rename(tmp, port_file) < 0) {
			fprintf(stderr, "rpcrdma-nfs3d: %s: %s\n", port_file, strerror(errno));
			return 1;
		}
	}

	struct serve_args sargs = { stats, rdma };
	pthread_t thr;
	if (pthread_create(&thr, NULL, serve, &sargs) != 0) {
		fprintf(stderr, "rpcrdma-nfs3d: cannot start the serving thread\n");
		return 1;
	}
	int sig = 0;
	const struct timespec second = { 1, 0 };
	while (!atomic_load(&stop_req)) {
		/* With a time-out: the serving thread may stop by itself. */
		int got = sigtimedwait(&sigs, NULL, &second);
		if (got < 0)
			continue;
		sig = got;
		if (sig == SIGUSR1)
			atomic_store(&dump_req, 1);
		else
			atomic_store(&stop_req, 1);
		wake();
	}
	pthread_join(thr, NULL);
	fprintf(stderr, "rpcrdma-nfs3d: stopping (signal %d)\n", sig);
	if (rpcbind)
		pmap_unset(MOUNT_PROGRAM, MOUNT_V3);
	svc_unregister(NFS_PROGRAM, NFS_V3);
	svc_unregister(MOUNT_PROGRAM, MOUNT_V3);
	svc_destroy(mnt);
	svc_destroy(rdma);
	nfs3d_cred_stop();
	nfs3d_mount_forget_all();
	nfs3d_drc_destroy(d.drc);
	nfs3d_export_close(&d.exp);
	close(wake_fd[0]);
	close(wake_fd[1]);
	return 0;
}
