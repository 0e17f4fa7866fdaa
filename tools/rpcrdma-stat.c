/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * rpcrdma-stat PID: the RPC-over-RDMA transport counters of a running
 * program, per server or client and per connection, the way nfsstat and
 * /proc/self/mountstats show the kernel's xprtrdma.  Nothing in the
 * program changes: the library answers on a socket of its own (the
 * mechanism and format: rpc/stats_export.h, rpcrdma-stat(1)).
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "rpc/stats_export.h"

static const char *prog_name = "rpcrdma-stat";

static void usage(FILE *f)
{
	fprintf(f,
		"usage: %s [-a] [-r] [-t] PID\n"
		"       %s -l\n"
		"Show the RPC-over-RDMA counters of running process PID.\n"
		"  -a, --all          also counters that are zero\n"
		"  -r, --raw          one 'entry name value' line per counter,\n"
		"                     for scripts\n"
		"  -t, --totals       servers and clients only, not each connection\n"
		"  -l, --list         list the processes whose counters can be read\n"
		"  -h, --help         this help\n"
		"  -V, --version      the version\n",
		prog_name, prog_name);
}

/* The snapshot, mapped. */
struct snap {
	const uint8_t *p;
	size_t len;
	const struct rpcrdma_statx_hdr *h;
	const struct rpcrdma_statx_field *fields;
};

static int fetch(long pid, struct snap *sn)
{
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -errno;
	struct sockaddr_un a;
	memset(&a, 0, sizeof a);
	a.sun_family = AF_UNIX;
	int n = snprintf(a.sun_path + 1, sizeof a.sun_path - 1, "%s%ld",
			 RPCRDMA_STATX_SOCKET, pid);
	socklen_t alen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 +
				     (size_t)n);
	if (connect(s, (struct sockaddr *)&a, alen) != 0) {
		int e = errno;
		close(s);
		return -e;
	}
	/* The process's loop threads answer within a tick or two. */
	struct pollfd pf = {.fd = s, .events = POLLIN};
	if (poll(&pf, 1, 5000) != 1) {
		close(s);
		return -ETIMEDOUT;
	}
	char byte;
	struct iovec iov = {&byte, 1};
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} u;
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1,
			   .msg_control = u.buf, .msg_controllen = sizeof u.buf};
	ssize_t r = recvmsg(s, &m, MSG_CMSG_CLOEXEC);
	close(s);
	struct cmsghdr *cm = r == 1 ? CMSG_FIRSTHDR(&m) : NULL;
	if (!cm || cm->cmsg_type != SCM_RIGHTS)
		return -EACCES; /* closed without a snapshot: not allowed */
	int fd;
	memcpy(&fd, CMSG_DATA(cm), sizeof fd);
	struct stat st;
	if (fstat(fd, &st) != 0 || st.st_size < (off_t)sizeof(*sn->h)) {
		close(fd);
		return -EPROTO;
	}
	void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		return -errno;
	sn->p = p;
	sn->len = (size_t)st.st_size;
	sn->h = p;
	const struct rpcrdma_statx_hdr *h = sn->h;
	/* Sizes from the header are the process's; check them all. */
	uint64_t need = (uint64_t)h->hdr_size +
			(uint64_t)h->nfields * h->field_size +
			(uint64_t)h->nentries * (h->entry_size + h->stats_size);
	if (memcmp(h->magic, RPCRDMA_STATX_MAGIC, 8) ||
	    h->version != RPCRDMA_STATX_VERSION ||
	    h->hdr_size < sizeof *h ||
	    h->field_size < sizeof(struct rpcrdma_statx_field) ||
	    h->entry_size < sizeof(struct rpcrdma_statx_entry) ||
	    need > sn->len)
		return -EPROTO;
	sn->fields = (const void *)(sn->p + h->hdr_size);
	return 0;
}

static const struct rpcrdma_statx_entry *entry(const struct snap *sn,
					       uint32_t i, const uint8_t **stats)
{
	const struct rpcrdma_statx_hdr *h = sn->h;
	const uint8_t *p = sn->p + h->hdr_size + (size_t)h->nfields * h->field_size +
			   (size_t)i * (h->entry_size + h->stats_size);
	*stats = p + h->entry_size;
	return (const void *)p;
}

static const struct rpcrdma_statx_field *field(const struct snap *sn,
					       uint32_t i)
{
	return (const void *)((const uint8_t *)sn->fields +
			      (size_t)i * sn->h->field_size);
}

/* Element k of field f, or false when it lies outside the counters. */
static bool value(const struct snap *sn, const struct rpcrdma_statx_field *f,
		  uint32_t k, const uint8_t *stats, uint64_t *v)
{
	uint64_t off = (uint64_t)f->offset + (uint64_t)k * f->size;
	if (off + f->size > sn->h->stats_size)
		return false;
	const uint8_t *q = stats + off;
	switch (f->size) {
	case 1: *v = *q; return true;
	case 2: { uint16_t x; memcpy(&x, q, 2); *v = x; return true; }
	case 4: { uint32_t x; memcpy(&x, q, 4); *v = x; return true; }
	case 8: memcpy(v, q, 8); return true;
	}
	return false;
}

static bool opt_all, opt_raw, opt_totals;

/* The counters of RDMA_ERROR / RDMA2_ERROR messages are arrays indexed by
 * error code (draft-cel-nfsv4-rpcrdma-version-two §5.3; codes 1 and 2 are
 * version 1's ERR_VERS and ERR_CHUNK): named by kind, not by index. */
static const char *err_kind(const char *field, uint32_t k)
{
	static const char *const kinds[] = {
		NULL, "VERS", "CHUNK/BAD_XDR", "INVAL_HTYPE",
		"READ_CHUNKS", "WRITE_CHUNKS", "SEGMENTS", "WRITE_RESOURCE",
		"REPLY_RESOURCE", "SYSTEM",
	};
	if (strncmp(field, "v2_err_", 7) || k >= sizeof kinds / sizeof kinds[0])
		return NULL;
	return kinds[k];
}

static const char *kind_name(uint32_t k)
{
	return k == RPCRDMA_STATX_SERVER ? "server"
	       : k == RPCRDMA_STATX_CLIENT ? "client" : "connection";
}

/* Every counter of one entry: three to a line, as nfsstat lays out
 * its tables, or one per line with --raw. */
static void counters(const struct snap *sn, const struct rpcrdma_statx_entry *e,
		     const uint8_t *stats, const char *indent)
{
	unsigned col = 0;
	for (uint32_t i = 0; i < sn->h->nfields; i++) {
		const struct rpcrdma_statx_field *f = field(sn, i);
		char name[sizeof f->name + 1];
		memcpy(name, f->name, sizeof f->name);
		name[sizeof f->name] = 0;
		for (uint32_t k = 0; k < f->count; k++) {
			uint64_t v;
			if (!value(sn, f, k, stats, &v) || (!v && !opt_all))
				continue;
			char label[64];
			const char *kind = err_kind(name, k);
			if (kind && !opt_raw)
				snprintf(label, sizeof label, "%s %s",
					 !strcmp(name, "v2_err_sent") ? "err_sent"
					 : !strcmp(name, "v2_err_recv") ? "err_recv"
									: name,
					 kind);
			else if (f->count > 1)
				snprintf(label, sizeof label, "%s[%u]", name, k);
			else
				snprintf(label, sizeof label, "%s", name);
			if (opt_raw) {
				printf("%s %.64s %s %llu\n", kind_name(e->kind),
				       e->name, label, (unsigned long long)v);
				continue;
			}
			if (col == 0)
				printf("%s", indent);
			printf("%-24s %12llu%s", label, (unsigned long long)v,
			       col == 2 ? "\n" : "   ");
			col = (col + 1) % 3;
		}
	}
	if (!opt_raw && col)
		printf("\n");
}

static void show(const struct snap *sn)
{
	const struct rpcrdma_statx_hdr *h = sn->h;
	if (!opt_raw)
		printf("pid %u (%.16s), librpcrdma %.16s, counting for %.1f s\n",
		       h->pid, h->comm, h->lib_version, h->uptime_ms / 1000.0);
	for (uint32_t i = 0; i < h->nentries; i++) {
		const uint8_t *stats;
		const struct rpcrdma_statx_entry *e = entry(sn, i, &stats);
		if (e->kind == RPCRDMA_STATX_CONN && opt_totals)
			continue;
		if (opt_raw) {
			counters(sn, e, stats, "");
			continue;
		}
		const char *ind = e->kind == RPCRDMA_STATX_CONN ? "    " : "  ";
		uint64_t vers = 0, cred = 0, st = 0, rt = 0;
		for (uint32_t k = 0; k < h->nfields; k++) {
			const struct rpcrdma_statx_field *f = field(sn, k);
			if (!strcmp(f->name, "version"))
				value(sn, f, 0, stats, &vers);
			else if (!strcmp(f->name, "credits_granted"))
				value(sn, f, 0, stats, &cred);
			else if (!strcmp(f->name, "send_threshold"))
				value(sn, f, 0, stats, &st);
			else if (!strcmp(f->name, "recv_threshold"))
				value(sn, f, 0, stats, &rt);
		}
		printf("\n");
		switch (e->kind) {
		case RPCRDMA_STATX_SERVER:
			printf("server %.64s (%.16s): %u connection%s open\n",
			       e->name, e->provider, e->live,
			       e->live == 1 ? "" : "s");
			break;
		case RPCRDMA_STATX_CLIENT:
			printf("client of %.64s, program %#x version %u "
			       "(%.16s): %s, RPC-over-RDMA version %llu, "
			       "credits %llu, inline %llu/%llu\n",
			       e->name, e->prog, e->vers, e->provider,
			       e->live ? "connected" : "not connected",
			       (unsigned long long)vers,
			       (unsigned long long)cred, (unsigned long long)st,
			       (unsigned long long)rt);
			break;
		default:
			printf("  connection from %.64s: %s, RPC-over-RDMA "
			       "version %llu, inline %llu/%llu\n",
			       e->name, e->live ? "up" : "closing",
			       (unsigned long long)vers, (unsigned long long)st,
			       (unsigned long long)rt);
			break;
		}
		counters(sn, e, stats, ind);
	}
}

/* Processes with the socket open: /proc/net/unix lists abstract names
 * with a leading '@'. */
static int list(void)
{
	FILE *f = fopen("/proc/net/unix", "r");
	if (!f) {
		fprintf(stderr, "%s: /proc/net/unix: %s\n", prog_name,
			strerror(errno));
		return 1;
	}
	char line[512];
	const char *key = "@" RPCRDMA_STATX_SOCKET;
	int n = 0;
	while (fgets(line, sizeof line, f)) {
		const char *p = strstr(line, key);
		if (!p)
			continue;
		long pid = strtol(p + strlen(key), NULL, 10);
		char path[64], comm[64] = "?";
		snprintf(path, sizeof path, "/proc/%ld/comm", pid);
		FILE *c = fopen(path, "r");
		if (c) {
			if (fgets(comm, sizeof comm, c))
				comm[strcspn(comm, "\n")] = 0;
			fclose(c);
		}
		printf("%ld %s\n", pid, comm);
		n++;
	}
	fclose(f);
	if (!n)
		fprintf(stderr, "%s: no process exports RPC-over-RDMA counters\n",
			prog_name);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{"all", no_argument, NULL, 'a'},
		{"raw", no_argument, NULL, 'r'},
		{"totals", no_argument, NULL, 't'},
		{"list", no_argument, NULL, 'l'},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{NULL, 0, NULL, 0},
	};
	bool do_list = false;
	int c;
	while ((c = getopt_long(argc, argv, "artlhV", lo, NULL)) != -1) {
		switch (c) {
		case 'a': opt_all = true; break;
		case 'r': opt_raw = true; break;
		case 't': opt_totals = true; break;
		case 'l': do_list = true; break;
		case 'h': usage(stdout); return 0;
		case 'V':
			printf("%s %s\n", prog_name, RPCRDMA_VERSION_STRING);
			return 0;
		default: usage(stderr); return 2;
		}
	}
	if (do_list)
		return list();
	if (optind != argc - 1) {
		usage(stderr);
		return 2;
	}
	char *end;
	long pid = strtol(argv[optind], &end, 10);
	if (*end || pid <= 0) {
		fprintf(stderr, "%s: '%s' is not a process id\n", prog_name,
			argv[optind]);
		return 2;
	}
	struct snap sn;
	int rc = fetch(pid, &sn);
	if (rc < 0) {
		if (rc == -ECONNREFUSED || rc == -ENOENT)
			fprintf(stderr, "%s: process %ld has no RPC-over-RDMA "
				"client or server (or is not running)\n",
				prog_name, pid);
		else if (rc == -EACCES)
			fprintf(stderr, "%s: process %ld: not allowed (another "
				"user's process; root may read any)\n",
				prog_name, pid);
		else
			fprintf(stderr, "%s: process %ld: %s\n", prog_name, pid,
				strerror(-rc));
		return 1;
	}
	show(&sn);
	munmap((void *)(uintptr_t)sn.p, sn.len);
	return 0;
}
