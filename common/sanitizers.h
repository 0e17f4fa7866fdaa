/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Which sanitizers this translation unit is built with: gcc defines
 * __SANITIZE_ADDRESS__ and __SANITIZE_THREAD__, clang answers
 * __has_feature.  Code that takes another path under a sanitizer (memory
 * from its malloc, common/pages.h; libc's system calls for its
 * interceptors, common/nocancel.h) asks here.
 */
#ifndef RPCRDMA_COMMON_SANITIZERS_H
#define RPCRDMA_COMMON_SANITIZERS_H

#if defined(__SANITIZE_ADDRESS__)
#define RPCRDMA_ASAN 1
#endif
#if defined(__SANITIZE_THREAD__)
#define RPCRDMA_TSAN 1
#endif
#if defined(__has_feature)
#if __has_feature(address_sanitizer) && !defined(RPCRDMA_ASAN)
#define RPCRDMA_ASAN 1
#endif
#if __has_feature(thread_sanitizer) && !defined(RPCRDMA_TSAN)
#define RPCRDMA_TSAN 1
#endif
#if __has_feature(memory_sanitizer)
#define RPCRDMA_MSAN 1
#endif
#endif

#endif
