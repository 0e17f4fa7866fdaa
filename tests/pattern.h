/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * A byte pattern for data tests: every (seed, offset) gives a byte, so a
 * buffer can be checked without keeping a copy, and a byte from another
 * seed or offset shows.
 */
#ifndef RPCRDMA_TEST_PATTERN_H
#define RPCRDMA_TEST_PATTERN_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

static inline uint8_t pat(uint32_t seed, size_t i)
{
	uint32_t x = (uint32_t)i * 2654435761u ^ seed * 40503u;
	x ^= x >> 13;
	return (uint8_t)(x + (i >> 8) + seed);
}

static inline void fill(uint8_t *p, size_t n, uint32_t seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = pat(seed, i);
}

static inline bool same(const uint8_t *p, size_t n, uint32_t seed)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != pat(seed, i))
			return false;
	return true;
}
#endif
