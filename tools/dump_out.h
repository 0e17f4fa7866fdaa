/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Output for rpcrdma-dump: one tree-shaped emitter that writes either
 * indented text for people or JSON for programs.
 *
 * The decoder calls the same sequence for both forms: open an object or
 * an array (named by a key inside an object, unnamed inside an array or
 * at the top), emit scalar members, close.  JSON needs the key names,
 * which are the XDR field names of the specs; the text form prints the
 * same names with an optional human note ("0 (RDMA_MSG)").
 *
 * JSON strings are escaped so that any byte sequence (a machine name is
 * untrusted input) gives valid JSON: control characters and every byte
 * >= 0x80 become \u00XX.
 */
#ifndef RPCRDMA_TOOLS_DUMP_OUT_H
#define RPCRDMA_TOOLS_DUMP_OUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define DUMP_OUT_MAX_DEPTH 32

struct dump_out {
	FILE *f;
	bool json;
	int depth;
	/* Per nesting level: has a member been written (JSON comma), is
	 * this level an array (text: "[i]" labels), element counter, and
	 * is it an inline object (text: one line). */
	bool any[DUMP_OUT_MAX_DEPTH];
	bool is_array[DUMP_OUT_MAX_DEPTH];
	unsigned index[DUMP_OUT_MAX_DEPTH];
	bool inline_obj[DUMP_OUT_MAX_DEPTH];
};

void dump_out_init(struct dump_out *o, FILE *f, bool json);
/* Finish the document (JSON: final newline). */
void dump_out_finish(struct dump_out *o);

/* Objects and arrays.  key is NULL at the top level and inside arrays.
 * An inline object prints on one text line ("handle 0x1 length 2 ..."). */
void dump_obj_begin(struct dump_out *o, const char *key);
void dump_obj_begin_inline(struct dump_out *o, const char *key);
void dump_obj_end(struct dump_out *o);
void dump_arr_begin(struct dump_out *o, const char *key);
void dump_arr_end(struct dump_out *o);

/* Scalars.  note (may be NULL) is shown only in text form. */
void dump_u32(struct dump_out *o, const char *key, uint32_t v, const char *note);
/* Same value, printed in hex in text form (handles, xids); JSON gets the
 * number. */
void dump_x32(struct dump_out *o, const char *key, uint32_t v, const char *note);
void dump_x64(struct dump_out *o, const char *key, uint64_t v);
void dump_bool(struct dump_out *o, const char *key, bool v);
void dump_null(struct dump_out *o, const char *key);
void dump_str(struct dump_out *o, const char *key, const char *s, size_t len);
void dump_cstr(struct dump_out *o, const char *key, const char *s);
/* Bytes as a lower-case hex string. */
void dump_hex(struct dump_out *o, const char *key, const uint8_t *p, size_t len);

#endif
