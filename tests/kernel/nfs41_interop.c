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

#include <rpc/rpc.h>

#include "nfs41.h"
#ifdef RPCRDMA_HAVE_TIRPC
#include "rpcrdma/tirpc.h"
#endif

static int failures;
static unsigned nops[64];   /* operations we sent, by opnum */
static unsigned ncompound;  /* COMPOUND procedures we sent */

static void fail(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "nfs41_interop: FAIL: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	failures++;
}

static void note(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	printf("nfs41_interop: ");
	vprintf(fmt, ap);
	printf("\n");
	va_end(ap);
	fflush(stdout);
}

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

/* ------------------------------------------------------------------ */
/* The callback program, served in the reverse direction over RDMA. */

static atomic_uint cb_nulls, cb_compounds, cb_sequences;

#ifdef RPCRDMA_HAVE_TIRPC
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
#endif

/* ------------------------------------------------------------------ */

static int read_ops(const char *path, unsigned long ops[64], unsigned long rpc[5])
{
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	char line[4096];
	int got = 0;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "rpc ", 4) == 0 &&
		    sscanf(line + 4, "%lu %lu %lu %lu %lu", &rpc[0], &rpc[1],
			   &rpc[2], &rpc[3], &rpc[4]) == 5)
			got |= 1;
		if (strncmp(line, "proc4ops ", 9) == 0) {
			char *p = line + 9, *end;
			unsigned long n = strtoul(p, &end, 10);
			p = end;
			for (unsigned long i = 0; i < n && i < 64; i++) {
				ops[i] = strtoul(p, &end, 10);
				p = end;
			}
			got |= 2;
		}
	}
	fclose(f);
	return got == 3 ? 0 : -1;
}

static void check_server_counters(const char *before)
{
	unsigned long ob[64] = { 0 }, oa[64] = { 0 }, rb[5], ra[5];
	if (!before) {
		note("NFSD_STATS not set: server counters not checked");
		return;
	}
	if (read_ops(before, ob, rb) < 0 || read_ops("/proc/net/rpc/nfsd", oa, ra) < 0) {
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

int main(int argc, char **argv)
{
	const char *transport = "rdma", *provider = "verbs";
	const char *server = getenv("NFS_SERVER");
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
#ifdef RPCRDMA_HAVE_TIRPC
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
#else
		(void)provider;
		fail("built without rpcrdma/tirpc.h: no rdma transport");
#endif
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
	if (rdma && have_session) {
		sequenceid4 sseq = 1;
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
#ifdef RPCRDMA_HAVE_TIRPC
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
#endif
	}

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
