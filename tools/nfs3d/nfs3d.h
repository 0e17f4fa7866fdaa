/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * rpcrdma-nfs3d: a userspace NFSv3 server (RFC 1813) on RPC-over-RDMA
 * (RFC 8166, with the NFS Upper-Layer Binding of RFC 8267) through the
 * libtirpc adapters (svc_rdma_create), with MOUNT v3 on TCP.
 *
 * Internal interfaces of tools/nfs3d/, one concept per file:
 *   fh.c        file handles (nfs_fh3) that survive a restart
 *   attr.c      fattr3 / wcc_data / sattr3 and errno -> nfsstat3
 *   cred.c      AUTH_SYS policy (trust, root-squash, squash) applied
 *               with the file-system uid/gid of the serving thread
 *   drc.c       duplicate-request cache
 *   nfs3_*.c    the NFSv3 procedures
 *   dispatch.c  the NFS program's dispatch function
 *   mount3.c    the MOUNT program
 *   main.c      options, transports, the service loop, counters
 *
 * Threads: every procedure runs on the one thread that runs the service
 * loop (libtirpc's model), so nothing here is locked.
 */
#ifndef RPCRDMA_NFS3D_H
#define RPCRDMA_NFS3D_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <rpc/rpc.h>

#include "nfs3.h"

/* Largest READ and WRITE (FSINFO rtmax/wtmax): the Linux client's
 * largest rsize/wsize over RDMA. */
#define NFS3D_MAX_IO (1024u * 1024u)
/* FSINFO dtpref: READDIR(PLUS) replies this large go in a Reply chunk. */
#define NFS3D_DTPREF (64u * 1024u)

/* ---------------------------------------------------------------------
 * The export (fh.c)
 */
struct nfs3d_export {
	char *path;          /* canonical (realpath) */
	int mount_fd;        /* O_RDONLY|O_DIRECTORY: open_by_handle_at */
	int mount_id;        /* name_to_handle_at's: we do not cross mounts */
	dev_t dev;           /* the exported file system */
	uint64_t fsid;       /* fattr3.fsid and the handle's export key */
	nfs_fh3 root;        /* the root's handle */
	bool mount_root;     /* path is the root of its file system */
};

/* Opens the export: realpath, handle of the root.  Returns 0, or -errno
 * with a message on stderr. */
int nfs3d_export_open(struct nfs3d_export *e, const char *path);
void nfs3d_export_close(struct nfs3d_export *e);

/* The kernel handle inside one of our handles. */
#define NFS3D_FH_HDR 16u
#define NFS3D_FH_MAX_KERNEL (NFS3_FHSIZE - NFS3D_FH_HDR)
struct nfs3d_fh {
	uint64_t key;          /* export key */
	int32_t type;          /* file_handle.handle_type */
	uint32_t len;          /* file_handle.handle_bytes */
	uint8_t bytes[NFS3D_FH_MAX_KERNEL];
};

/* Pure decoder of an nfs_fh3's bytes (fuzzed): NFS3_OK, or
 * NFS3ERR_BADHANDLE for anything we never made. */
nfsstat3 nfs3d_fh_parse(const void *data, size_t len, struct nfs3d_fh *out);
/* Encoder: len bytes written to out (NFS3_FHSIZE at most). */
size_t nfs3d_fh_format(const struct nfs3d_fh *fh, uint8_t *out);

/* The object a handle names, opened O_PATH (closed by the caller) and
 * its attributes.  NFS3ERR_BADHANDLE (not ours), NFS3ERR_STALE (gone, or
 * another export), NFS3ERR_SERVERFAULT (no CAP_DAC_READ_SEARCH). */
nfsstat3 nfs3d_fh_open(const struct nfs3d_export *e, const nfs_fh3 *fh,
		       int *fd, struct stat *st);
/* The handle of dirfd/name ("" : dirfd itself); data is malloc'd. */
nfsstat3 nfs3d_fh_of(const struct nfs3d_export *e, int dirfd,
		     const char *name, nfs_fh3 *out);
/* Frees out->data (xdr_free would too). */
void nfs3d_fh_free(nfs_fh3 *fh);
/* "/proc/self/fd/N": reopens an O_PATH descriptor for I/O. */
void nfs3d_fd_path(int fd, char *buf, size_t cap);

/* How every procedure on one object starts: results zeroed, the object
 * open on fd (O_PATH; its attributes in st, the caller closes it), or
 * the handle's error returned as the procedure's status. */
#define NFS3D_OPEN_OBJECT(r, fh)                                            \
	int fd;                                                             \
	struct stat st;                                                     \
	memset((r), 0, sizeof(*(r)));                                       \
	(r)->status = nfs3d_fh_open(&nfs3d->exp, (fh), &fd, &st);           \
	if ((r)->status != NFS3_OK)                                         \
		return TRUE

/* ---------------------------------------------------------------------
 * Attributes (attr.c)
 */
nfsstat3 nfs3d_errno(int err);
void nfs3d_fattr(const struct nfs3d_export *e, const struct stat *st,
		 fattr3 *out);
void nfs3d_post_attr(const struct nfs3d_export *e, int fd, post_op_attr *out);
void nfs3d_post_attr_st(const struct nfs3d_export *e, const struct stat *st,
			post_op_attr *out);
void nfs3d_pre_attr(const struct stat *st, pre_op_attr *out);
/* wcc_data from the attributes before (NULL: none) and fd's now. */
void nfs3d_wcc(const struct nfs3d_export *e, const struct stat *before,
	       int fd, wcc_data *out);
/* Applies a sattr3 to the object open (O_PATH) on fd.  Mode, owner,
 * size and times, in that order (RFC 1813 §3.3.2 leaves the order open;
 * size before times so that an explicit mtime wins). */
nfsstat3 nfs3d_sattr_apply(int fd, const struct stat *st, const sattr3 *a);
/* RFC 1813 §3.3.4: the ACCESS bits cred has on st. */
uint32_t nfs3d_access(const struct stat *st, uint32_t want);

/* ---------------------------------------------------------------------
 * Credentials (cred.c)
 */
enum nfs3d_auth_policy {
	NFS3D_AUTH_TRUST,       /* AUTH_SYS uid/gid/gids as sent, root too */
	NFS3D_AUTH_ROOT_SQUASH, /* as sent, but uid 0 -> anonymous */
	NFS3D_AUTH_SQUASH,      /* everyone anonymous */
};

struct nfs3d_cred {
	uid_t uid;
	gid_t gid;
	unsigned ngids;
	gid_t gids[16];
};

struct nfs3d_cred_policy {
	enum nfs3d_auth_policy policy;
	uid_t anon_uid;
	gid_t anon_gid;
	bool can_switch;        /* we run as root: setfsuid() works */
};

/* The credential a request is served with (AUTH_NONE: anonymous). */
void nfs3d_cred_of(const struct nfs3d_cred_policy *p, const struct svc_req *rq,
		   struct nfs3d_cred *out);
/* Runs a procedure, fn(args, res, rq), as c: in place for root (the
 * server's own identity), on the identity thread for anyone else (see
 * cred.c for why never on svc_run()'s thread).  Between start and stop;
 * before start (or not root), always in place as ourselves. */
int nfs3d_cred_start(const struct nfs3d_cred_policy *p);
void nfs3d_cred_stop(void);
void nfs3d_cred_run(const struct nfs3d_cred_policy *p, const struct nfs3d_cred *c,
		    bool_t (*fn)(void *, void *, struct svc_req *),
		    void *args, void *res, struct svc_req *rq);
/* Around what only the server itself may do (open_by_handle_at needs
 * CAP_DAC_READ_SEARCH) and the owner's override (nfs3_file.c): back to
 * our identity for a moment, then to the caller's again. */
void nfs3d_cred_suspend(void);
void nfs3d_cred_resume(void);
/* The credential being served (ACCESS computes with it). */
const struct nfs3d_cred *nfs3d_cred_current(void);
/* Parses "trust" / "root-squash" / "squash".  -1 if none. */
int nfs3d_auth_policy_parse(const char *s, enum nfs3d_auth_policy *out);

/* ---------------------------------------------------------------------
 * Duplicate-request cache (drc.c)
 *
 * RFC 1813 §4.5 and RFC 8166 §4.5.5: after a connection loss the client
 * sends every call still unanswered again, with its XID; a
 * non-idempotent call (REMOVE, RENAME, CREATE ...) that had been done
 * must not be done twice.  The key is what identifies a retransmission:
 * XID, the client's address (without the port: a new connection has a
 * new one), program, version, procedure, and the argument length and
 * CRC-32C of its first 256 bytes (as Linux nfsd does, against XID
 * reuse).  The value is the encoded results alone, without the RPC
 * header or any RPC-over-RDMA framing: the retransmission comes with new
 * chunks on a new connection, and the adapter frames the replay for
 * them.
 */
struct nfs3d_drc_key {
	uint32_t xid, prog, vers, proc;
	uint32_t args_len, args_crc;
	uint8_t addr[16];     /* IPv4 in the first 4, or IPv6 */
	uint8_t family;
};

struct nfs3d_drc;

/* What the cache holds and did (counted since it was made). */
struct nfs3d_drc_stats {
	uint64_t hits, misses;     /* lookups of retransmittable calls */
	uint64_t stored;           /* results put in */
	uint64_t evicted_entries;  /* the least recently used, out to stay
				      within max_entries */
	uint64_t evicted_bytes;    /* ... to stay within max_bytes */
	uint64_t too_big;          /* results larger than max_bytes alone:
				      not kept */
	uint64_t nomem;            /* an entry or a hit's copy not made */
	unsigned entries, max_entries;
	size_t bytes, max_bytes;   /* results plus bookkeeping per entry */
};

/* Bounded in entries and in bytes, least recently used out first.
 * max_entries 0: a cache that never holds anything. */
struct nfs3d_drc *nfs3d_drc_create(unsigned max_entries, size_t max_bytes);
void nfs3d_drc_destroy(struct nfs3d_drc *d);
/* A copy of the cached results of key in *res (malloc'd: the caller
 * frees it) and *len; the entry becomes the most recently used.  false
 * (and *res NULL) when there is none. */
bool nfs3d_drc_get(struct nfs3d_drc *d, const struct nfs3d_drc_key *k,
		   uint8_t **res, size_t *len);
/* Stores (a copy of) the results, evicting the least recently used
 * entries until it fits both bounds.  false when it was not stored: too
 * large for max_bytes alone, out of memory, or a cache of size 0
 * (nothing is lost but the cache entry). */
bool nfs3d_drc_put(struct nfs3d_drc *d, const struct nfs3d_drc_key *k,
		   const void *res, size_t len);
void nfs3d_drc_stats(struct nfs3d_drc *d, struct nfs3d_drc_stats *out);
unsigned nfs3d_drc_count(struct nfs3d_drc *d);

/* ---------------------------------------------------------------------
 * Server state and counters (main.c, dispatch.c)
 */
#define NFS3D_NPROC 22

struct nfs3d_counters {
	uint64_t calls[NFS3D_NPROC];
	uint64_t errors[NFS3D_NPROC];   /* replies with nfsstat3 != NFS3_OK */
	uint64_t garbage_args;          /* arguments that did not decode */
	uint64_t server_faults;         /* NFS3ERR_SERVERFAULT / IO replies */
	uint64_t send_failed;           /* svc_sendreply refused */
	uint64_t drc_hits, drc_stored;
	uint64_t dropped;               /* calls dropped by svc_rdma_drop */
	uint64_t mnt, umnt;
	uint64_t hook_drops, hook_err_chunk;
};

struct nfs3d_hooks {
	/* RPCRDMA_NFS3D_TEST_DROP=PROC:N — the Nth call of procedure PROC
	 * is carried out and then dropped: its connection closes with no
	 * reply (svc_rdma_drop), as if the reply were lost. */
	int drop_proc;            /* -1: off */
	uint64_t drop_nth;
	/* RPCRDMA_NFS3D_TEST_ERR_CHUNK=N — the Nth READ is answered with
	 * more data than any Write chunk the client can have offered, so
	 * the transport answers RDMA_ERROR / ERR_CHUNK (RFC 8166 §4.5.3). */
	uint64_t err_chunk_nth;   /* 0: off */
	uint64_t reads_seen;
};

struct nfs3d {
	struct nfs3d_export exp;
	struct nfs3d_cred_policy auth;
	struct nfs3d_drc *drc;
	uint8_t write_verf[NFS3_WRITEVERFSIZE]; /* new for every start */
	struct nfs3d_counters ctr;
	struct nfs3d_hooks hooks;
	int verbose;        /* 1: failed procedures; 2: every call */
};

/* The one server of the process (procedures reach it from here). */
extern struct nfs3d *nfs3d;

/* Procedure names, for counters and hooks ("GETATTR"...); -1 if none. */
const char *nfs3d_proc_name(unsigned proc);
int nfs3d_proc_number(const char *name);
/* The rpcgen XDR routines of a procedure's arguments and results. */
bool nfs3d_proc_xdr(unsigned proc, xdrproc_t *args, xdrproc_t *res);
/* Big enough for the arguments of any procedure (dispatch.c's union). */
#define NFS3D_ARGS_MAX 256

/* The NFS program's dispatch function (dispatch.c), registered with
 * svc_register() on the RDMA transport. */
void nfs3d_nfs_dispatch(struct svc_req *rq, SVCXPRT *x);
/* MOUNT (mount3.c; rpcgen's mount_program_3 dispatches it): forget
 * every client recorded for DUMP. */
void nfs3d_mount_forget_all(void);

/* Names in requests (RFC 1813 §3.2 "filename3"): a single component,
 * not "." or ".." where an entry is created or removed. */
nfsstat3 nfs3d_check_name(const char *name, bool allow_dots);

#endif
