/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * RPCRDMA_STATS_FIELDS (rpcrdma.h) names every field of struct
 * rpcrdma_stats, in order, which is what rpcrdma-stat prints: the table
 * the library exports covers every byte of the struct but padding, so a
 * counter appended to the struct without its name leaves a gap this
 * test finds (unless it hides in the struct's tail padding, which the
 * comparison with the header's field list below catches too).
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "rpc/stats_export.h"
#include "rpcrdma/rpcrdma.h"
#include "test.h"

int main(int argc, char **argv)
{
	unsigned n;
	const struct rpcrdma_statx_field *f = rpcrdma_rpc_stats_fields(&n);
	size_t end = 0;
	CHECK(n > 40);
	for (unsigned i = 0; i < n; i++) {
		/* In order, no overlap, any gap only alignment padding. */
		CHECK(f[i].offset >= end);
		CHECK(f[i].offset - end < f[i].size);
		CHECK(f[i].size == 1 || f[i].size == 4 || f[i].size == 8);
		end = f[i].offset + (size_t)f[i].size * f[i].count;
	}
	CHECK(sizeof(struct rpcrdma_stats) - end < 8);
	/* Every field the header declares, by name, in its order: the
	 * struct's text without comments, declarations split at ';', names
	 * at ','. */
	if (argc > 1) {
		FILE *h = fopen(argv[1], "r");
		CHECK(h != NULL);
		static char body[16384];
		size_t len = 0;
		char line[512];
		bool in = false;
		while (h && fgets(line, sizeof line, h)) {
			if (strstr(line, "struct rpcrdma_stats {")) {
				in = true;
				continue;
			}
			if (in && !strncmp(line, "};", 2))
				break;
			if (in && len + strlen(line) < sizeof body) {
				memcpy(body + len, line, strlen(line));
				len += strlen(line);
			}
		}
		body[len] = 0;
		if (h)
			fclose(h);
		/* Comments become blanks. */
		for (char *c = strstr(body, "/*"); c; c = strstr(c, "/*")) {
			char *e = strstr(c + 2, "*/");
			if (!e)
				break;
			memset(c, ' ', (size_t)(e + 2 - c));
		}
		unsigned k = 0;
		char *save = NULL;
		for (char *d = strtok_r(body, ";", &save); d;
		     d = strtok_r(NULL, ";", &save)) {
			d += strspn(d, " \t\n");
			if (!*d)
				continue;
			d += strcspn(d, " \t\n"); /* the type */
			char *s2 = NULL;
			for (char *nm = strtok_r(d, ",", &s2); nm;
			     nm = strtok_r(NULL, ",", &s2)) {
				nm += strspn(nm, " \t\n");
				nm[strcspn(nm, " \t\n[")] = 0;
				bool ok = k < n && !strcmp(nm, f[k].name);
				if (!ok)
					fprintf(stderr, "header field %s is not "
						"entry %u of RPCRDMA_STATS_FIELDS\n",
						nm, k);
				CHECK(ok);
				k++;
			}
		}
		CHECK_EQ(k, n);
	}
	TEST_MAIN_END();
}
