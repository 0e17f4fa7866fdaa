/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/* Text / JSON emitter for rpcrdma-dump (see dump_out.h). */
#include "dump_out.h"

#include <inttypes.h>
#include <string.h>

void dump_out_init(struct dump_out *o, FILE *f, bool json)
{
	o->f = f;
	o->json = json;
	o->depth = 0;
	o->any[0] = false;
	o->is_array[0] = false;
	o->index[0] = 0;
	o->inline_obj[0] = false;
}

void dump_out_finish(struct dump_out *o)
{
	if (o->json)
		fputc('\n', o->f);
	fflush(o->f);
}

static void indent(struct dump_out *o, int level)
{
	for (int i = 0; i < level; i++)
		fputs("  ", o->f);
}

static bool in_inline(const struct dump_out *o)
{
	return o->depth > 0 && o->inline_obj[o->depth];
}

static void json_string(FILE *f, const char *s, size_t len)
{
	fputc('"', f);
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20 || c >= 0x7f)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

/*
 * Start a member: the separator and key (JSON), or the indentation and
 * label (text).  For text, a scalar value follows on the same line.
 */
static void member_start_ex(struct dump_out *o, const char *key,
			    bool container)
{
	int d = o->depth;
	if (o->json) {
		if (d > 0 && o->any[d])
			fputc(',', o->f);
		if (key && d > 0 && !o->is_array[d]) {
			json_string(o->f, key, strlen(key));
			fputc(':', o->f);
		}
		if (d > 0)
			o->any[d] = true;
		return;
	}
	if (d == 0)
		return;
	if (in_inline(o)) {
		if (o->any[d])
			fputc(' ', o->f);
		o->any[d] = true;
		if (key)
			fprintf(o->f, "%s ", key);
		return;
	}
	o->any[d] = true;
	indent(o, d - 1);
	if (o->is_array[d])
		fprintf(o->f, container ? "[%u]" : "[%u] ", o->index[d]++);
	else if (key)
		fprintf(o->f, container ? "%s:" : "%s: ", key);
}

static void member_start(struct dump_out *o, const char *key)
{
	member_start_ex(o, key, false);
}

static void member_end(struct dump_out *o)
{
	if (!o->json && o->depth > 0 && !in_inline(o))
		fputc('\n', o->f);
}

static void push(struct dump_out *o, bool array, bool inl)
{
	if (o->depth + 1 >= DUMP_OUT_MAX_DEPTH)
		return; /* the decoder never nests this deep */
	o->depth++;
	o->any[o->depth] = false;
	o->is_array[o->depth] = array;
	o->index[o->depth] = 0;
	o->inline_obj[o->depth] = inl;
}

static void container_begin(struct dump_out *o, const char *key, bool array,
			    bool inl)
{
	bool parent_inline = in_inline(o);
	member_start_ex(o, key, !inl && !parent_inline);
	if (o->json) {
		fputc(array ? '[' : '{', o->f);
	} else if (o->depth > 0 && !inl && !parent_inline) {
		fputc('\n', o->f);
	}
	push(o, array, inl || parent_inline);
}

void dump_obj_begin(struct dump_out *o, const char *key)
{
	container_begin(o, key, false, false);
}

void dump_obj_begin_inline(struct dump_out *o, const char *key)
{
	container_begin(o, key, false, true);
}

void dump_arr_begin(struct dump_out *o, const char *key)
{
	container_begin(o, key, true, false);
}

static void container_end(struct dump_out *o, bool array)
{
	int d = o->depth;
	bool was_inline = o->inline_obj[d];
	bool was_empty = !o->any[d];
	if (o->json) {
		fputc(array ? ']' : '}', o->f);
	} else if (was_empty && !was_inline) {
		indent(o, d - 1);
		fputs("(none)\n", o->f);
	}
	if (d > 0)
		o->depth--;
	/* An inline container closing inside a block container ends the
	 * line; one nested in another inline container does not. */
	if (!o->json && was_inline && o->depth > 0 && !in_inline(o))
		fputc('\n', o->f);
}

void dump_obj_end(struct dump_out *o)
{
	container_end(o, false);
}

void dump_arr_end(struct dump_out *o)
{
	container_end(o, true);
}

static void note_end(struct dump_out *o, const char *note)
{
	if (!o->json && note)
		fprintf(o->f, " (%s)", note);
	member_end(o);
}

void dump_u32(struct dump_out *o, const char *key, uint32_t v, const char *note)
{
	member_start(o, key);
	fprintf(o->f, "%" PRIu32, v);
	note_end(o, note);
}

void dump_x32(struct dump_out *o, const char *key, uint32_t v, const char *note)
{
	member_start(o, key);
	if (o->json)
		fprintf(o->f, "%" PRIu32, v);
	else
		fprintf(o->f, "0x%08" PRIx32, v);
	note_end(o, note);
}

void dump_x64(struct dump_out *o, const char *key, uint64_t v)
{
	member_start(o, key);
	if (o->json)
		fprintf(o->f, "%" PRIu64, v);
	else
		fprintf(o->f, "0x%016" PRIx64, v);
	member_end(o);
}

void dump_bool(struct dump_out *o, const char *key, bool v)
{
	member_start(o, key);
	fputs(v ? "true" : "false", o->f);
	member_end(o);
}

void dump_null(struct dump_out *o, const char *key)
{
	member_start(o, key);
	fputs(o->json ? "null" : "(absent)", o->f);
	member_end(o);
}

void dump_str(struct dump_out *o, const char *key, const char *s, size_t len)
{
	member_start(o, key);
	if (!s)
		len = 0;
	/* Text output shows plain printable strings as they are and
	 * escapes anything else: the bytes come from the wire. */
	bool plain = !o->json && len > 0;
	for (size_t i = 0; plain && i < len; i++)
		plain = s[i] > 0x20 && s[i] < 0x7f && s[i] != '"' && s[i] != '\\';
	if (plain)
		fwrite(s, 1, len, o->f);
	else
		json_string(o->f, s ? s : "", len);
	member_end(o);
}

void dump_cstr(struct dump_out *o, const char *key, const char *s)
{
	dump_str(o, key, s, s ? strlen(s) : 0);
}

void dump_hex(struct dump_out *o, const char *key, const uint8_t *p, size_t len)
{
	member_start(o, key);
	if (o->json)
		fputc('"', o->f);
	for (size_t i = 0; i < len; i++)
		fprintf(o->f, "%02x", p[i]);
	if (o->json)
		fputc('"', o->f);
	else if (len == 0)
		fputs("(empty)", o->f);
	member_end(o);
}
