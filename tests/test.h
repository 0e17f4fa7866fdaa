/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Minimal test harness: CHECK() records a failure with file:line and goes
 * on; TEST_MAIN_END prints "N passed, N failed" and sets the exit code.
 * Every check counts, so a test that asserts nothing prints "0 passed".
 */
#ifndef RPCRDMA_TEST_H
#define RPCRDMA_TEST_H
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static int test_passed, test_failed;

#define CHECK(cond)                                                        \
	do {                                                               \
		if (cond) {                                                \
			test_passed++;                                     \
		} else {                                                   \
			test_failed++;                                     \
			fprintf(stderr, "%s:%d: CHECK failed: %s\n",       \
				__FILE__, __LINE__, #cond);                \
		}                                                          \
	} while (0)

#define CHECK_EQ(a, b)                                                     \
	do {                                                               \
		long long _a = (long long)(a), _b = (long long)(b);        \
		if (_a == _b) {                                            \
			test_passed++;                                     \
		} else {                                                   \
			test_failed++;                                     \
			fprintf(stderr, "%s:%d: CHECK_EQ failed: %s == %s "  \
				"(%lld != %lld)\n", __FILE__, __LINE__,    \
				#a, #b, _a, _b);                           \
		}                                                          \
	} while (0)

#define CHECK_MEM(a, b, n)                                                 \
	do {                                                               \
		if (memcmp((a), (b), (n)) == 0) {                          \
			test_passed++;                                     \
		} else {                                                   \
			test_failed++;                                     \
			fprintf(stderr, "%s:%d: CHECK_MEM failed: %s vs %s "  \
				"(%zu bytes)\n", __FILE__, __LINE__, #a,   \
				#b, (size_t)(n));                          \
		}                                                          \
	} while (0)

#define TEST_MAIN_END()                                                    \
	do {                                                               \
		printf("%d passed, %d failed\n", test_passed, test_failed); \
		return (test_failed || !test_passed) ? 1 : 0;              \
	} while (0)

#endif
