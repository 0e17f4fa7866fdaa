/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * nfs41_interop: open an NFSv4.1 session on the Linux kernel's nfsd and
 * close it again (RFC 8881 §18.35, §18.36, §18.37, §18.50), with
 * rpcgen-generated stubs.
 *
 *   nfs41_interop [--transport tcp|rdma] [--server A] [--provider P]
 *                 [--cb-wait SECONDS]
 *
 * Over RDMA, CREATE_SESSION asks for a back channel on the same connection
 * (CREATE_SESSION4_FLAG_CONN_BACK_CHAN): the server then calls our
 * callback program in the reverse direction (RFC 8167) — at least the
 * CB_NULL probe — and we answer.  Over TCP (a baseline for the XDR and the
 * sequence) no back channel is asked for: libtirpc clients cannot serve
 * calls.  Afterwards the server's proc4ops counters must show exactly the
 * operations we sent, and no bad calls.
 */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <getopt.h>
#include <time.h>
#include <unistd.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>

#include <rpc/rpc.h>

#include "nfs41.h"
#define REPORT_NAME "nfs41_interop"
#include "interop_report.h"
#include "rpcrdma/tirpc.h"

static unsigned nops[64];   /* operations we sent, by opnum */
static unsigned ncompound;  /* COMPOUND procedures we sent */

/* One COMPOUND with one operation; returns that operation's result
 * (inside *res, which the caller frees) or NULL. */
static nfs_resop4 *compound1(CLIENT *c, nfs_argop4 *op, COMPOUND4res *res)
{
	COMPOUND4args a;
	memset(&a, 0, sizeof(a));
	a.minorversion = 1;
	a.argarray.argarray_len = 1;
	a.argarray.argarray_val = op;
	memset(res, 0, sizeof(*res));
	ncompound++;
	if (op->argop < 64)
		nops[op->argop]++;
	if (nfsproc4_compound_4(&a, res, c) != RPC_SUCCESS) {
		fail("COMPOUND(op %u): %s", op->argop, clnt_sperror(c, "call"));
		return NULL;
	}
	if (res->resarray.resarray_len != 1 ||
	    res->resarray.resarray_val[0].resop != op->argop) {
		fail("COMPOUND(op %u): status %d with %u results", op->argop,
		     res->status, res->resarray.resarray_len);
		return NULL;
	}
	return &res->resarray.resarray_val[0];
}

/* One COMPOUND of n operations; NULL unless every result came back
 * (the caller checks each status and frees *res). */
static nfs_resop4 *compoundn(CLIENT *c, nfs_argop4 *ops, unsigned n,
			     COMPOUND4res *res)
{
	COMPOUND4args a;
	memset(&a, 0, sizeof(a));
	a.minorversion = 1;
	a.argarray.argarray_len = n;
	a.argarray.argarray_val = ops;
	memset(res, 0, sizeof(*res));
	ncompound++;
	if (nfsproc4_compound_4(&a, res, c) != RPC_SUCCESS) {
		fail("COMPOUND(%u ops): %s", n, clnt_sperror(c, "call"));
		return NULL;
	}
	/* The server counts only the operations it executed. */
	for (unsigned i = 0; i < res->resarray.resarray_len && i < n; i++)
		if (ops[i].argop < 64)
			nops[ops[i].argop]++;
	if (res->resarray.resarray_len != n) {
		note("COMPOUND(%u ops): status %d after %u results", n,
		     res->status, res->resarray.resarray_len);
		return NULL;
	}
	return res->resarray.resarray_val;
}

/* ------------------------------------------------------------------ */
/* The callback program, served in the reverse direction over RDMA. */

static atomic_uint cb_nulls, cb_compounds, cb_sequences, cb_recalls;
static stateid4 recalled;

static void cb_dispatch(struct svc_req *rq, SVCXPRT *x)
{
	switch (rq->rq_proc) {
	case CB_NULL:
		atomic_fetch_add(&cb_nulls, 1);
		svc_sendreply(x, (xdrproc_t)xdr_void, NULL);
		return;
	case CB_COMPOUND: {
		CB_COMPOUND4args a;
		memset(&a, 0, sizeof(a));
		if (!svc_getargs(x, (xdrproc_t)xdr_CB_COMPOUND4args, (caddr_t)&a)) {
			svcerr_decode(x);
			return;
		}
		atomic_fetch_add(&cb_compounds, 1);
		/* Answer CB_SEQUENCE as RFC 8881 §20.9.3 says: echo the
		 * session, sequence and slot; the first unsupported op ends
		 * the compound with NFS4ERR_NOTSUPP (10004). */
		CB_COMPOUND4res r;
		memset(&r, 0, sizeof(r));
		nfs_cb_resop4 *ops = calloc(a.argarray.argarray_len + 1, sizeof(*ops));
		unsigned n = 0;
		for (unsigned i = 0; i < a.argarray.argarray_len; i++) {
			nfs_cb_argop4 *op = &a.argarray.argarray_val[i];
			ops[n].resop = op->argop;
			if (op->argop == OP_CB_SEQUENCE) {
				atomic_fetch_add(&cb_sequences, 1);
				CB_SEQUENCE4args *s = &op->nfs_cb_argop4_u.opcbsequence;
				CB_SEQUENCE4resok *ok = &ops[n].nfs_cb_resop4_u
					.opcbsequence.CB_SEQUENCE4res_u.csr_resok4;
				memcpy(ok->csr_sessionid, s->csa_sessionid,
				       NFS4_SESSIONID_SIZE);
				ok->csr_sequenceid = s->csa_sequenceid;
				ok->csr_slotid = s->csa_slotid;
				ok->csr_highest_slotid = s->csa_highest_slotid;
				ok->csr_target_highest_slotid = s->csa_highest_slotid;
				n++;
			} else if (op->argop == OP_CB_RECALL) {
				/* RFC 8881 §20.2.3: NFS4_OK, then the client
				 * returns the delegation with DELEGRETURN. */
				recalled = op->nfs_cb_argop4_u.opcbrecall.stateid;
				atomic_fetch_add(&cb_recalls, 1);
				ops[n].nfs_cb_resop4_u.status_only = NFS4_OK;
				n++;
			} else {
				ops[n].nfs_cb_resop4_u.status_only = 10004;
				r.status = 10004;
				n++;
				break;
			}
		}
		r.tag = a.tag;
		r.resarray.resarray_len = n;
		r.resarray.resarray_val = ops;
		svc_sendreply(x, (xdrproc_t)xdr_CB_COMPOUND4res, (caddr_t)&r);
		free(ops);
		svc_freeargs(x, (xdrproc_t)xdr_CB_COMPOUND4args, (caddr_t)&a);
		return;
	}
	default:
		svcerr_noproc(x);
	}
}

/* ------------------------------------------------------------------ */

static void check_server_counters(const char *before)
{
	unsigned long ob[64] = { 0 }, oa[64] = { 0 }, rb[5], ra[5];
	if (!before) {
		note("NFSD_STATS not set: server counters not checked");
		return;
	}
	if (nfsd_stats(before, "proc4ops", rb, ob, 64) < 0 ||
	    nfsd_stats("/proc/net/rpc/nfsd", "proc4ops", ra, oa, 64) < 0) {
		fail("cannot read nfsd statistics");
		return;
	}
	for (int i = 0; i < 64; i++) {
		if (oa[i] - ob[i] != nops[i])
			fail("server counted %lu of operation %d, we sent %u",
			     oa[i] - ob[i], i, nops[i]);
		else if (nops[i])
			note("server counter op %d +%u (matches)", i, nops[i]);
	}
	for (int i = 1; i < 5; i++)
		if (ra[i] != rb[i])
			fail("server bad-call counter %d grew by %lu", i, ra[i] - rb[i]);
	note("server rpc calls +%lu (we made %u COMPOUNDs + 1 NULL), bad calls +%lu",
	     ra[0] - rb[0], ncompound, ra[1] - rb[1]);
}

static void seq_op(nfs_argop4 *op, const sessionid4 sid, sequenceid4 *seq)
{
	memset(op, 0, sizeof(*op));
	op->argop = OP_SEQUENCE;
	memcpy(op->nfs_argop4_u.opsequence.sa_sessionid, sid, NFS4_SESSIONID_SIZE);
	op->nfs_argop4_u.opsequence.sa_sequenceid = (*seq)++;
}

struct local_open {
	const char *path;
	double took_ms;
	int err;
};

/* A local writer: its open() breaks the NFS client's read delegation
 * (the kernel's lease) and waits until the delegation is returned. */
static void *local_open_fn(void *arg)
{
	struct local_open *lo = arg;
	double t0 = now_ms();
	int fd = open(lo->path, O_WRONLY);
	lo->took_ms = now_ms() - t0;
	lo->err = fd < 0 ? errno : 0;
	if (fd >= 0) {
		ssize_t w = write(fd, "x", 1);
		(void)w;
		close(fd);
	}
	return NULL;
}

static void delegation_recall(CLIENT *c, const sessionid4 sid, sequenceid4 *seq,
			      clientid4 clientid, const char *export)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/cbfile", export);
	int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
	if (fd < 0) {
		fail("create %s: %s", path, strerror(errno));
		return;
	}
	ssize_t w = write(fd, "delegated\n", 10);
	(void)w;
	close(fd);

	/* RFC 8881 §18.51: RECLAIM_COMPLETE before any non-reclaim OPEN. */
	nfs_argop4 ops[4];
	COMPOUND4res res;
	seq_op(&ops[0], sid, seq);
	memset(&ops[1], 0, sizeof(ops[1]));
	ops[1].argop = OP_RECLAIM_COMPLETE;
	nfs_resop4 *r = compoundn(c, ops, 2, &res);
	if (!r || r[1].nfs_resop4_u.status_only != NFS4_OK)
		fail("RECLAIM_COMPLETE: status %d", res.status);
	clnt_freeres(c, (xdrproc_t)xdr_COMPOUND4res, (char *)&res);

	/* OPEN for reading, asking for a read delegation; the server's
	 * grace period (10 s here) answers NFS4ERR_GRACE (10013) first. */
	char owner[] = "rpcrdma-open-owner";
	stateid4 open_sid, deleg_sid;
	nfs_fh4 fh = { 0, NULL };
	int deleg = -1;
	for (int attempt = 0; attempt < 30; attempt++) {
		seq_op(&ops[0], sid, seq);
		memset(&ops[1], 0, sizeof(ops[1]));
		ops[1].argop = OP_PUTROOTFH;
		memset(&ops[2], 0, sizeof(ops[2]));
		ops[2].argop = OP_OPEN;
		OPEN4args *oa = &ops[2].nfs_argop4_u.opopen;
		oa->share_access = OPEN4_SHARE_ACCESS_READ |
				   OPEN4_SHARE_ACCESS_WANT_READ_DELEG;
		oa->share_deny = OPEN4_SHARE_DENY_NONE;
		oa->owner.clientid = clientid;
		oa->owner.owner.owner_len = (u_int)strlen(owner);
		oa->owner.owner.owner_val = owner;
		oa->openhow.opentype = OPEN4_NOCREATE;
		oa->claim.claim = CLAIM_NULL;
		oa->claim.open_claim4_u.file.utf8str_cs_len = 6;
		oa->claim.open_claim4_u.file.utf8str_cs_val = "cbfile";
		memset(&ops[3], 0, sizeof(ops[3]));
		ops[3].argop = OP_GETFH;
		r = compoundn(c, ops, 4, &res);
		if (!r && res.status == 10013) { /* NFS4ERR_GRACE */
			clnt_freeres(c, (xdrproc_t)xdr_COMPOUND4res, (char *)&res);
			sleep(1);
			continue;
		}
		if (!r) {
			fail("OPEN cbfile: status %d", res.status);
			clnt_freeres(c, (xdrproc_t)xdr_COMPOUND4res, (char *)&res);
			return;
		}
		OPEN4resok *ok = &r[2].nfs_resop4_u.opopen.OPEN4res_u.resok4;
		open_sid = ok->stateid;
		deleg = ok->delegation.delegation_type;
		if (deleg == OPEN_DELEGATE_NONE_EXT && attempt < 29) {
			/* WND4_* reason (RFC 8881 §18.16.3).  Linux refuses
			 * delegations while any grace period runs (lockd's
			 * too): close and ask again a little later. */
			note("OPEN: no delegation yet (why %d); retrying",
			     ok->delegation.open_delegation4_u.od_whynone.ond_why);
			nfs_fh4 *gfh = &r[3].nfs_resop4_u.opgetfh.GETFH4res_u.resok4.object;
			nfs_argop4 cl[3];
			COMPOUND4res cres;
			seq_op(&cl[0], sid, seq);
			memset(&cl[1], 0, sizeof(cl[1]));
			cl[1].argop = OP_PUTFH;
			cl[1].nfs_argop4_u.opputfh = *gfh;
			memset(&cl[2], 0, sizeof(cl[2]));
			cl[2].argop = OP_CLOSE;
			cl[2].nfs_argop4_u.opclose.open_stateid = open_sid;
			if (!compoundn(c, cl, 3, &cres))
				fail("CLOSE before retrying OPEN: status %d", cres.status);
			clnt_freeres(c, (xdrproc_t)xdr_COMPOUND4res, (char *)&cres);
			clnt_freeres(c, (xdrproc_t)xdr_COMPOUND4res, (char *)&res);
			deleg = -1;
			sleep(1);
			continue;
		}
		if (deleg == OPEN_DELEGATE_READ)
			deleg_sid = ok->delegation.open_delegation4_u.read.stateid;
		GETFH4resok *g = &r[3].nfs_resop4_u.opgetfh.GETFH4res_u.resok4;
		fh.nfs_fh4_len = g->object.nfs_fh4_len;
		fh.nfs_fh4_val = malloc(fh.nfs_fh4_len);
		memcpy(fh.nfs_fh4_val, g->object.nfs_fh4_val, fh.nfs_fh4_len);
		note("OPEN cbfile after %d grace retries: delegation type %d",
		     attempt, deleg);
		clnt_freeres(c, (xdrproc_t)xdr_COMPOUND4res, (char *)&res);
		break;
	}
	if (deleg < 0) {
		fail("OPEN cbfile: no usable open after 30 s");
		return;
	}
	if (deleg != OPEN_DELEGATE_READ) {
		fail("no read delegation granted (type %d): no recall to observe", deleg);
	} else {
		struct local_open lo = { .path = path };
		pthread_t th;
		pthread_create(&th, NULL, local_open_fn, &lo);
		for (int i = 0; i < 150 && atomic_load(&cb_recalls) == 0; i++)
			usleep(100 * 1000);
		if (atomic_load(&cb_recalls) == 0) {
			fail("no CB_RECALL within 15 s of the conflicting local open");
		} else {
			if (memcmp(recalled.other, deleg_sid.other, 12) != 0)
				fail("CB_RECALL names another stateid");
			note("CB_RECALL received in the reverse direction "
			     "(CB_SEQUENCE %u); returning the delegation",
			     atomic_load(&cb_sequences));
		}
		seq_op(&ops[0], sid, seq);
		memset(&ops[1], 0, sizeof(ops[1]));
		ops[1].argop = OP_PUTFH;
		ops[1].nfs_argop4_u.opputfh = fh;
		memset(&ops[2], 0, sizeof(ops[2]));
		ops[2].argop = OP_DELEGRETURN;
		ops[2].nfs_argop4_u.opdelegreturn.deleg_stateid = deleg_sid;
		r = compoundn(c, ops, 3, &res);
		if (!r || r[2].nfs_resop4_u.status_only != NFS4_OK)
			fail("DELEGRETURN: status %d", res.status);
		clnt_freeres(c, (xdrproc_t)xdr_COMPOUND4res, (char *)&res);
		pthread_join(th, NULL);
		if (lo.err)
			fail("local open: %s", strerror(lo.err));
		else
			note("the local writer's open() returned after %.0f ms", lo.took_ms);
	}
	/* CLOSE the open (§18.2) so DESTROY_CLIENTID finds no state. */
	seq_op(&ops[0], sid, seq);
	memset(&ops[1], 0, sizeof(ops[1]));
	ops[1].argop = OP_PUTFH;
	ops[1].nfs_argop4_u.opputfh = fh;
	memset(&ops[2], 0, sizeof(ops[2]));
	ops[2].argop = OP_CLOSE;
	ops[2].nfs_argop4_u.opclose.open_stateid = open_sid;
	r = compoundn(c, ops, 3, &res);
	if (!r || r[2].nfs_resop4_u.opclose.status != NFS4_OK)
		fail("CLOSE: status %d", res.status);
	clnt_freeres(c, (xdrproc_t)xdr_COMPOUND4res, (char *)&res);
	free(fh.nfs_fh4_val);
}

int main(int argc, char **argv)
{
	const char *transport = "rdma", *provider = "verbs";
	const char *server = getenv("NFS_SERVER");
	const char *export = getenv("NFS_EXPORT");
	int cb_wait = 15;
	bool cb_optional = false;
	static const struct option lo[] = {
		{ "transport", required_argument, NULL, 't' },
		{ "server", required_argument, NULL, 's' },
		{ "provider", required_argument, NULL, 'p' },
		{ "cb-wait", required_argument, NULL, 'w' },
		{ "cb-optional", no_argument, NULL, 'o' },
		{ NULL, 0, NULL, 0 }
	};
	int ch;
	while ((ch = getopt_long(argc, argv, "t:s:p:w:o", lo, NULL)) != -1) {
		switch (ch) {
		case 't': transport = optarg; break;
		case 's': server = optarg; break;
		case 'p': provider = optarg; break;
		case 'w': cb_wait = atoi(optarg); break;
		case 'o': cb_optional = true; break;
		default:
			fprintf(stderr, "usage: %s [--transport tcp|rdma] [--server A] "
					"[--provider P] [--cb-wait S]\n", argv[0]);
			return 2;
		}
	}
	if (!server)
		server = "192.0.2.1";
	bool rdma = strcmp(transport, "rdma") == 0;
	note("transport %s, server %s", transport, server);

	CLIENT *c = NULL;
	if (!rdma) {
		c = clnt_create(server, NFS4_PROGRAM, NFS_V4, "tcp");
		if (!c)
			fail("clnt_create: %s", clnt_spcreateerror(server));
	} else {
		char addr[300];
		snprintf(addr, sizeof(addr), "%s:20049", server);
		struct rpcrdma_opts o;
		rpcrdma_opts_default(&o);
		o.provider = provider;
		c = clnt_rdma_create(addr, NFS4_PROGRAM, NFS_V4, &o);
		if (!c)
			fail("clnt_rdma_create: %s", clnt_spcreateerror(addr));
		else if (!clnt_rdma_register_callback(c, NFS4_CALLBACK, NFS_CB,
						      cb_dispatch))
			fail("cannot register the callback program");
	}
	if (!c)
		return 1;
	auth_destroy(c->cl_auth);
	c->cl_auth = authunix_create_default();

	char nul;
	if (nfsproc4_null_4(NULL, &nul, c) != RPC_SUCCESS)
		fail("NULL: %s", clnt_sperror(c, "null"));

	/* EXCHANGE_ID (RFC 8881 §18.35): a fresh owner each run. */
	char owner[96];
	snprintf(owner, sizeof(owner), "rpcrdma-nfs41-interop-%ld-%d",
		 (long)time(NULL), (int)getpid());
	nfs_argop4 op;
	memset(&op, 0, sizeof(op));
	op.argop = OP_EXCHANGE_ID;
	EXCHANGE_ID4args *ea = &op.nfs_argop4_u.opexchange_id;
	memcpy(ea->eia_clientowner.co_verifier, "rpcrdma1", 8);
	ea->eia_clientowner.co_ownerid.co_ownerid_len = (u_int)strlen(owner);
	ea->eia_clientowner.co_ownerid.co_ownerid_val = owner;
	ea->eia_state_protect.spa_how = SP4_NONE;
	COMPOUND4res res;
	clientid4 clientid = 0;
	sequenceid4 seq = 0;
	int have_client = 0;
	nfs_resop4 *r = compound1(c, &op, &res);
	if (r) {
		EXCHANGE_ID4res *er = &r->nfs_resop4_u.opexchange_id;
		if (er->eir_status != NFS4_OK) {
			fail("EXCHANGE_ID: status %d", er->eir_status);
		} else {
			clientid = er->EXCHANGE_ID4res_u.eir_resok4.eir_clientid;
			seq = er->EXCHANGE_ID4res_u.eir_resok4.eir_sequenceid;
			have_client = 1;
			note("EXCHANGE_ID: clientid %llx, sequence %u, flags %#x",
			     (unsigned long long)clientid, seq,
			     er->EXCHANGE_ID4res_u.eir_resok4.eir_flags);
		}
	}
	clnt_freeres(c, (xdrproc_t)xdr_COMPOUND4res, (char *)&res);

	/* CREATE_SESSION (§18.36), with the back channel on this
	 * connection when the transport can serve reverse calls. */
	sessionid4 sid;
	int have_session = 0;
	if (have_client) {
		memset(&op, 0, sizeof(op));
		op.argop = OP_CREATE_SESSION;
		CREATE_SESSION4args *ca = &op.nfs_argop4_u.opcreate_session;
		ca->csa_clientid = clientid;
		ca->csa_sequence = seq;
		ca->csa_flags = rdma ? CREATE_SESSION4_FLAG_CONN_BACK_CHAN : 0;
		ca->csa_fore_chan_attrs = (channel_attrs4){
			.ca_maxrequestsize = 1049620, .ca_maxresponsesize = 1049480,
			.ca_maxresponsesize_cached = 2048, .ca_maxoperations = 8,
			.ca_maxrequests = 16 };
		ca->csa_back_chan_attrs = (channel_attrs4){
			.ca_maxrequestsize = 4096, .ca_maxresponsesize = 4096,
			.ca_maxresponsesize_cached = 0, .ca_maxoperations = 2,
			.ca_maxrequests = 1 };
		ca->csa_cb_program = NFS4_CALLBACK;
		callback_sec_parms4 sp = { .cb_secflavor = 0 };
		ca->csa_sec_parms.csa_sec_parms_len = 1;
		ca->csa_sec_parms.csa_sec_parms_val = &sp;
		r = compound1(c, &op, &res);
		if (r) {
			CREATE_SESSION4res *cr = &r->nfs_resop4_u.opcreate_session;
			if (cr->csr_status != NFS4_OK) {
				fail("CREATE_SESSION: status %d", cr->csr_status);
			} else {
				CREATE_SESSION4resok *ok = &cr->CREATE_SESSION4res_u.csr_resok4;
				memcpy(sid, ok->csr_sessionid, sizeof(sid));
				have_session = 1;
				note("CREATE_SESSION: flags %#x, fore max req %u resp %u, "
				     "back max req %u resp %u",
				     ok->csr_flags, ok->csr_fore_chan_attrs.ca_maxrequestsize,
				     ok->csr_fore_chan_attrs.ca_maxresponsesize,
				     ok->csr_back_chan_attrs.ca_maxrequestsize,
				     ok->csr_back_chan_attrs.ca_maxresponsesize);
				if (rdma && !(ok->csr_flags & CREATE_SESSION4_FLAG_CONN_BACK_CHAN))
					fail("CREATE_SESSION: back channel refused");
			}
		}
		clnt_freeres(c, (xdrproc_t)xdr_COMPOUND4res, (char *)&res);
	}

	/* The server probes a new back channel with CB_NULL; meanwhile we
	 * send SEQUENCE once a second, as a client renewing its lease does,
	 * and report what the server says of the back channel. */
	sequenceid4 sseq = 1;
	if (rdma && have_session) {
		for (int i = 0; i < cb_wait * 10 && atomic_load(&cb_nulls) == 0; i++) {
			if (i % 10 == 0) {
				memset(&op, 0, sizeof(op));
				op.argop = OP_SEQUENCE;
				SEQUENCE4args *sa = &op.nfs_argop4_u.opsequence;
				memcpy(sa->sa_sessionid, sid, sizeof(sid));
				sa->sa_sequenceid = sseq++;
				r = compound1(c, &op, &res);
				if (r && r->nfs_resop4_u.opsequence.sr_status != NFS4_OK)
					fail("SEQUENCE: status %d",
					     r->nfs_resop4_u.opsequence.sr_status);
				else if (r) {
					unsigned fl = r->nfs_resop4_u.opsequence
							      .SEQUENCE4res_u.sr_resok4
							      .sr_status_flags;
					note("SEQUENCE %u: status flags %#x", sseq - 1, fl);
					/* RFC 8881 §18.46.3: CB_PATH_DOWN (1),
					 * CB_PATH_DOWN_SESSION (0x100),
					 * BACKCHANNEL_FAULT (0x400). */
					if (fl & (0x1 | 0x100 | 0x400))
						fail("the server reports the back channel down "
						     "(flags %#x)", fl);
				}
				clnt_freeres(c, (xdrproc_t)xdr_COMPOUND4res, (char *)&res);
			}
			usleep(100 * 1000);
		}
		if (atomic_load(&cb_nulls) == 0 && cb_optional)
			note("no CB_NULL within %d s: expected from Linux nfsd, "
			     "which marks a v4.1 back channel UP without "
			     "probing it; SEQUENCE reports it up", cb_wait);
		else if (atomic_load(&cb_nulls) == 0)
			fail("no CB_NULL arrived within %d s", cb_wait);
		note("reverse-direction calls answered: CB_NULL %u, CB_COMPOUND %u "
		     "(CB_SEQUENCE %u)", atomic_load(&cb_nulls),
		     atomic_load(&cb_compounds), atomic_load(&cb_sequences));
		struct rpcrdma_stats st;
		if (clnt_rdma_stats(c, &st))
			note("RPC-over-RDMA: %llu reverse-direction calls received, "
			     "%llu replies sent (%llu Short), %llu bad replies "
			     "dropped; thresholds %u/%u, credits %u",
			     (unsigned long long)st.calls_received,
			     (unsigned long long)(st.short_replies + st.chunked_replies +
						  st.long_replies),
			     (unsigned long long)st.short_replies,
			     (unsigned long long)st.bad_replies,
			     st.send_threshold, st.recv_threshold,
			     st.credits_granted);
	}

	/* A real callback: a read delegation on a file, then a local write
	 * to it, which makes the server recall the delegation with
	 * CB_COMPOUND { CB_SEQUENCE, CB_RECALL } on our connection
	 * (RFC 8881 §10.4.1, §20.2; RFC 8167 on RPC-over-RDMA). */
	if (rdma && have_session && export)
		delegation_recall(c, sid, &sseq, clientid, export);

	if (have_session) {
		memset(&op, 0, sizeof(op));
		op.argop = OP_DESTROY_SESSION;
		memcpy(op.nfs_argop4_u.opdestroy_session.dsa_sessionid, sid, sizeof(sid));
		r = compound1(c, &op, &res);
		if (r && r->nfs_resop4_u.opdestroy_session.dsr_status != NFS4_OK)
			fail("DESTROY_SESSION: status %d",
			     r->nfs_resop4_u.opdestroy_session.dsr_status);
		else if (r)
			note("DESTROY_SESSION: ok");
		clnt_freeres(c, (xdrproc_t)xdr_COMPOUND4res, (char *)&res);
	}
	if (have_client) {
		memset(&op, 0, sizeof(op));
		op.argop = OP_DESTROY_CLIENTID;
		op.nfs_argop4_u.opdestroy_clientid.dca_clientid = clientid;
		r = compound1(c, &op, &res);
		if (r && r->nfs_resop4_u.opdestroy_clientid.dcr_status != NFS4_OK)
			fail("DESTROY_CLIENTID: status %d",
			     r->nfs_resop4_u.opdestroy_clientid.dcr_status);
		else if (r)
			note("DESTROY_CLIENTID: ok");
		clnt_freeres(c, (xdrproc_t)xdr_COMPOUND4res, (char *)&res);
	}

	auth_destroy(c->cl_auth);
	clnt_destroy(c);
	check_server_counters(getenv("NFSD_STATS"));
	if (failures) {
		note("%d failure(s)", failures);
		return 1;
	}
	note("all checks passed");
	return 0;
}
