/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * rpcrdma-dump: decode RPC-over-RDMA messages for people (text) and for
 * programs (--json).
 *
 *   rpcrdma-dump [-V] [--json] [FILTER] FILE
 *                                  a file holding one message, as raw
 *                                  bytes or as hex text, or a pcap/pcapng
 *                                  capture of iWARP (MPA/DDP/RDMAP) TCP
 *   rpcrdma-dump [...] [-]         the same, read from standard input
 *   rpcrdma-dump [--json] --hex HEXSTRING
 *
 * A capture is shown one line per message unless -V (every field) or
 * --json; FILTER (--xid, --prog, --type) selects messages either way.
 *
 * One message is a v1 or v2 transport header (told apart by the version
 * word) with the ONC RPC header after RDMA_MSG / RDMA_MSGP / RDMA2_MSG, or
 * RFC 8797 CM private data (first word 0xf6ab0e18).
 *
 * Hex text: hex digit pairs, optionally separated by white space, ':' or
 * '-'; '#' starts a comment that runs to the end of the line.  A file is
 * taken as hex text when it consists only of those (a binary transport
 * header never does: its version word holds zero bytes).
 *
 * Exit status: 0 decoded, 1 bad input (the message names the byte
 * offset and what was expected there), 2 usage or I/O error.
 */
#include <errno.h>
#include <getopt.h>
#include <netdb.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dump_msg.h"
#include "dump_out.h"
#include "dump_pcap.h"
#include "dump_summary.h"

#define MAX_INPUT (256u * 1024u * 1024u)

static void usage(FILE *f)
{
	fputs("usage: rpcrdma-dump [-V] [--json] [-x XID] [-p PROG] [-t TYPE]\n"
	      "                    [FILE | - | --hex HEXSTRING]\n"
	      "Decode one RPC-over-RDMA v1/v2 transport header (with its ONC RPC\n"
	      "header) or RFC 8797 CM private data, given as raw bytes or hex\n"
	      "text; or every RPC-over-RDMA message in a pcap/pcapng capture of\n"
	      "iWARP over TCP, one line per message.\n"
	      "  -V, --verbose        every field of each message of a capture\n"
	      "  -j, --json           JSON, every field (for programs)\n"
	      "  -x, --xid XID        only messages with this XID (0x-hex or decimal)\n"
	      "  -p, --prog PROG      only calls of this program (number or /etc/rpc\n"
	      "                       name) and the replies to them\n"
	      "  -t, --type TYPE      only call, reply, error, msg, nomsg, msgp,\n"
	      "                       done or connprop messages\n"
	      "      --hex HEX        decode HEX (hex digit pairs) instead of a file\n"
	      "  -h, --help           this help\n"
	      "      --version        the version\n"
	      "Exit status: 0 ok, 1 bad input, 2 usage/I-O.\n",
	      f);
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

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/*
 * Parse hex text into out (capacity >= len / 2).  Returns the number of
 * bytes, -1 if the text is not hex text at all (a byte that is neither a
 * hex digit, a separator nor inside a comment), or -2 for an odd digit
 * count.
 */
static long parse_hex(const char *s, size_t len, uint8_t *out)
{
	size_t n = 0;
	int hi = -1;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '#') {
			while (i < len && s[i] != '\n') {
				unsigned char k = (unsigned char)s[i];
				if ((k < 0x20 && k != '\t' && k != '\r') || k == 0x7f)
					return -1;
				i++;
			}
			continue;
		}
		if (c == ' ' || c == '\t' || c == '\r' || c == '\n' ||
		    c == ':' || c == '-')
			continue;
		/* "0x" prefixes of whole words are allowed */
		if (c == '0' && hi < 0 && i + 1 < len &&
		    (s[i + 1] == 'x' || s[i + 1] == 'X')) {
			i++;
			continue;
		}
		int v = hexval(c);
		if (v < 0)
			return -1;
		if (hi < 0) {
			hi = v;
		} else {
			out[n++] = (uint8_t)(hi << 4 | v);
			hi = -1;
		}
	}
	return hi >= 0 ? -2 : (long)n;
}

static int read_all(FILE *f, uint8_t **buf, size_t *len)
{
	size_t cap = 4096, n = 0;
	uint8_t *b = malloc(cap);
	if (!b)
		return -1;
	for (;;) {
		if (n == cap) {
			if (cap >= MAX_INPUT) {
				free(b);
				errno = EFBIG;
				return -1;
			}
			uint8_t *nb = realloc(b, cap * 2);
			if (!nb) {
				free(b);
				return -1;
			}
			b = nb;
			cap *= 2;
		}
		size_t got = fread(b + n, 1, cap - n, f);
		n += got;
		if (got == 0) {
			if (ferror(f)) {
				free(b);
				return -1;
			}
			break;
		}
	}
	*buf = b;
	*len = n;
	return 0;
}

static int decode_one(const char *src, const uint8_t *buf, size_t len,
		      bool json)
{
	struct dump_out o;
	struct dump_error err;
	dump_out_init(&o, stdout, json);
	if (dump_message(&o, NULL, buf, len, &err) < 0) {
		fprintf(stderr, "rpcrdma-dump: %s: %s\n", src, err.msg);
		return 1;
	}
	dump_out_finish(&o);
	return 0;
}

int main(int argc, char **argv)
{
	static struct dump_view view;
	static const struct option lo[] = {
		{"json", no_argument, NULL, 'j'},
		{"verbose", no_argument, NULL, 'V'},
		{"xid", required_argument, NULL, 'x'},
		{"prog", required_argument, NULL, 'p'},
		{"type", required_argument, NULL, 't'},
		{"hex", required_argument, NULL, 'H'},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'v'},
		{NULL, 0, NULL, 0},
	};
	static const char *const types[] = {"call", "reply", "error", "msg",
					    "nomsg", "msgp", "done", "connprop",
					    NULL};
	bool json = false;
	const char *path = NULL;
	const char *hex = NULL;
	int ch;
	while ((ch = getopt_long(argc, argv, "jVx:p:t:h", lo, NULL)) != -1) {
		switch (ch) {
		case 'j': json = true; break;
		case 'V': view.detail = true; break;
		case 'x':
			if (!parse_u32(optarg, &view.xid)) {
				fprintf(stderr, "rpcrdma-dump: bad XID '%s'\n", optarg);
				return 2;
			}
			view.has_xid = true;
			break;
		case 'p':
			if (!parse_u32(optarg, &view.prog)) {
				struct rpcent *r = getrpcbyname(optarg);
				if (!r) {
					fprintf(stderr, "rpcrdma-dump: unknown "
						"program '%s'\n", optarg);
					return 2;
				}
				view.prog = (uint32_t)r->r_number;
			}
			view.has_prog = true;
			break;
		case 't': {
			size_t i = 0;
			while (types[i] && strcmp(types[i], optarg))
				i++;
			if (!types[i]) {
				fprintf(stderr, "rpcrdma-dump: --type: '%s' is not "
					"call, reply, error, msg, nomsg, msgp, "
					"done or connprop\n", optarg);
				return 2;
			}
			view.type = types[i];
			break;
		}
		case 'H':
			if (hex) {
				usage(stderr);
				return 2;
			}
			hex = optarg;
			break;
		case 'h': usage(stdout); return 0;
		case 'v':
			printf("rpcrdma-dump %s\n", RPCRDMA_VERSION_STRING);
			return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind < argc) {
		path = argv[optind++];
		if (hex || optind < argc) {
			usage(stderr);
			return 2;
		}
	}

	if (hex) {
		size_t hl = strlen(hex);
		uint8_t *b = malloc(hl / 2 + 1);
		if (!b)
			return 2;
		long n = parse_hex(hex, hl, b);
		if (n < 0) {
			fprintf(stderr, "rpcrdma-dump: --hex: %s\n",
				n == -2 ? "odd number of hex digits"
					: "not a hex string");
			free(b);
			return 1;
		}
		int rc = decode_one("--hex", b, (size_t)n, json);
		free(b);
		return rc;
	}

	const char *src = path && strcmp(path, "-") != 0 ? path : "<stdin>";
	FILE *f = path && strcmp(path, "-") != 0 ? fopen(path, "rb") : stdin;
	if (!f) {
		fprintf(stderr, "rpcrdma-dump: %s: %s\n", src, strerror(errno));
		return 2;
	}
	uint8_t *buf;
	size_t len;
	if (read_all(f, &buf, &len) < 0) {
		fprintf(stderr, "rpcrdma-dump: %s: %s\n", src, strerror(errno));
		if (f != stdin)
			fclose(f);
		return 2;
	}
	if (f != stdin)
		fclose(f);

	int rc;
	if (dump_pcap_is_capture(buf, len)) {
		rc = dump_pcap(stdout, json, &view, src, buf, len);
	} else {
		uint8_t *bin = malloc(len / 2 + 1);
		long n = bin ? parse_hex((const char *)buf, len, bin) : -1;
		if (n >= 0 && len > 0) {
			rc = decode_one(src, bin, (size_t)n, json);
		} else if (n == -2) {
			fprintf(stderr, "rpcrdma-dump: %s: hex text with an odd number of digits\n",
				src);
			rc = 1;
		} else {
			rc = decode_one(src, buf, len, json);
		}
		free(bin);
	}
	free(buf);
	return rc;
}
