/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Fuzz what rpcrdma-nfs3d decodes from a client before touching a file:
 * the arguments of every NFSv3 procedure (rpcgen's routines from our
 * nfs3.x, RFC 1813) and the file handle they start with (tools/nfs3d/
 * fh.c, nfs3d_fh_parse).  Input: one byte choosing the procedure, then
 * the XDR arguments.  What decodes must encode again to at most as many
 * bytes as it took (not the same bytes: libtirpc decodes any non-zero
 * bool as TRUE, skips pad bytes unread, and cuts a string at a NUL) and
 * decode again; a handle the parser takes must format back to exactly
 * itself.  No input may make the decoders allocate what the message does
 * not carry (libFuzzer's malloc limit): nfs3.x bounds its strings.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "nfs3d.h"

struct nfs3d *nfs3d;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1 || size > 65536)
		return 0;
	unsigned proc = 1u + data[0] % (NFS3D_NPROC - 1);
	xdrproc_t xargs, xres;
	if (!nfs3d_proc_xdr(proc, &xargs, &xres))
		abort();
	/* libtirpc's memory stream wants a writable, aligned buffer. */
	size_t n = size - 1;
	char *in = malloc(n ? n : 1);
	memcpy(in, data + 1, n);
	_Alignas(8) uint8_t args[NFS3D_ARGS_MAX];
	memset(args, 0, sizeof(args));
	XDR x;
	xdrmem_create(&x, in, (u_int)n, XDR_DECODE);
	if (xargs(&x, args)) {
		u_int used = XDR_GETPOS(&x);
		/* Every procedure's arguments start with an nfs_fh3. */
		const nfs_fh3 *fh = (const nfs_fh3 *)(void *)args;
		struct nfs3d_fh f;
		if (nfs3d_fh_parse(fh->data.data_val, fh->data.data_len, &f) == NFS3_OK) {
			uint8_t back[NFS3_FHSIZE];
			size_t bl = nfs3d_fh_format(&f, back);
			if (bl != fh->data.data_len || memcmp(back, fh->data.data_val, bl))
				abort();
		}
		/* Shorter only when a string held a NUL (xdr_string keeps
		 * what precedes it; the server answers NFS3ERR_ACCES). */
		u_int len = xdr_sizeof(xargs, args);
		if (len > used)
			abort();
		char *out = malloc(len ? len : 1);
		XDR e;
		xdrmem_create(&e, out, len, XDR_ENCODE);
		if (!xargs(&e, args) || XDR_GETPOS(&e) != len)
			abort();
		_Alignas(8) uint8_t again[NFS3D_ARGS_MAX];
		memset(again, 0, sizeof(again));
		XDR d;
		xdrmem_create(&d, out, len, XDR_DECODE);
		if (!xargs(&d, again) || XDR_GETPOS(&d) != len)
			abort();
		xdr_free(xargs, (char *)again);
		free(out);
	}
	xdr_free(xargs, (char *)args);
	free(in);
	return 0;
}
