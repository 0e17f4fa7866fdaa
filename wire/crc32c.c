/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * CRC-32C: SSE4.2 crc32 instruction when the CPU has it (checked once at
 * run time), otherwise slicing-by-8 tables built on first use.
 */
#include "wire/crc32c.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#define CRC32C_POLY 0x82F63B78u

static uint32_t crc_table[8][256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void crc_table_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = (c & 1) ? (c >> 1) ^ CRC32C_POLY : c >> 1;
		crc_table[0][i] = c;
	}
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = crc_table[0][i];
		for (int t = 1; t < 8; t++) {
			c = crc_table[0][c & 0xff] ^ (c >> 8);
			crc_table[t][i] = c;
		}
	}
}

static uint32_t crc_soft(uint32_t crc, const uint8_t *p, size_t len)
{
	pthread_once(&crc_once, crc_table_init);
	while (len && ((uintptr_t)p & 7)) {
		crc = crc_table[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
		len--;
	}
	while (len >= 8) {
		uint64_t w;
		memcpy(&w, p, 8);
		/* Little-endian host assumed for the word path (x86, arm64
		 * LE); a big-endian host takes the byte loop below. */
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
		uint32_t lo = (uint32_t)w ^ crc, hi = (uint32_t)(w >> 32);
		crc = crc_table[7][lo & 0xff] ^ crc_table[6][(lo >> 8) & 0xff] ^
		      crc_table[5][(lo >> 16) & 0xff] ^ crc_table[4][lo >> 24] ^
		      crc_table[3][hi & 0xff] ^ crc_table[2][(hi >> 8) & 0xff] ^
		      crc_table[1][(hi >> 16) & 0xff] ^ crc_table[0][hi >> 24];
		p += 8;
		len -= 8;
#else
		break;
#endif
	}
	while (len--)
		crc = crc_table[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return crc;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2")))
static uint32_t crc_hw(uint32_t crc, const uint8_t *p, size_t len)
{
	uint64_t c = crc;
	while (len && ((uintptr_t)p & 7)) {
		c = __builtin_ia32_crc32qi((uint32_t)c, *p++);
		len--;
	}
	while (len >= 8) {
		uint64_t w;
		memcpy(&w, p, 8);
		c = __builtin_ia32_crc32di(c, w);
		p += 8;
		len -= 8;
	}
	while (len--)
		c = __builtin_ia32_crc32qi((uint32_t)c, *p++);
	return (uint32_t)c;
}
#endif

uint32_t rpcrdma_crc32c_update(uint32_t crc, const void *buf, size_t len)
{
#if defined(__x86_64__)
	/* Probed once; threads may race to do it, to the same value. */
	static atomic_int have_hw = -1;
	int hw = atomic_load_explicit(&have_hw, memory_order_relaxed);
	if (hw < 0) {
		__builtin_cpu_init();
		hw = __builtin_cpu_supports("sse4.2") ? 1 : 0;
		atomic_store_explicit(&have_hw, hw, memory_order_relaxed);
	}
	if (hw)
		return crc_hw(crc, (const uint8_t *)buf, len);
#endif
	return crc_soft(crc, (const uint8_t *)buf, len);
}
