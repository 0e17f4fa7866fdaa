/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * CRC-32C (Castagnoli), as MPA uses for its FPDU CRC (RFC 5044 §4.4 and
 * Appendix B; the polynomial is the one iSCSI uses, RFC 3385).
 *
 * Reflected polynomial 0x82F63B78, initial value and final xor 0xFFFFFFFF.
 * On the MPA wire the resulting 32-bit value is sent least-significant byte
 * first (RFC 5044 §4.4; verified against tshark by provider_capture_tshark).
 */
#ifndef RPCRDMA_WIRE_CRC32C_H
#define RPCRDMA_WIRE_CRC32C_H
#include <stddef.h>
#include <stdint.h>

/* Continue a CRC over more bytes.  Start with rpcrdma_crc32c_init(), end
 * with rpcrdma_crc32c_final(). */
uint32_t rpcrdma_crc32c_update(uint32_t crc, const void *buf, size_t len);

static inline uint32_t rpcrdma_crc32c_init(void) { return 0xFFFFFFFFu; }
static inline uint32_t rpcrdma_crc32c_final(uint32_t crc) { return crc ^ 0xFFFFFFFFu; }

/* One-shot CRC-32C of a buffer. */
static inline uint32_t rpcrdma_crc32c(const void *buf, size_t len)
{
	return rpcrdma_crc32c_final(
		rpcrdma_crc32c_update(rpcrdma_crc32c_init(), buf, len));
}
#endif
