# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# rpcrdma — the two commands of the README:
#   make demo   build optimized (build-opt/), then run the demo next to
#               libtirpc/TCP (DEMO_ARGS="--pcap F" saves a capture)
#   make test   install what is missing, build with ASan+UBSan (gcc), with
#               clang + libFuzzer and in every build type with gcc and clang
#               (all -Werror), run every test tier
# Everything real lives in CMake/CTest; this file only sequences it.

BUILD       ?= build
CLANG_BUILD ?= build-clang
OPT_BUILD   ?= build-opt
TSAN_BUILD  ?= build-tsan
MATRIX      ?= build-matrix
JOBS        ?= $(shell nproc 2>/dev/null || echo 2)
CTEST_ARGS  ?=
# The developer and CI builds treat warnings as errors; CMake's own default
# (RPCRDMA_WERROR OFF) is for packagers and the optimized build of `make
# demo` / `make install`, which must not break on a newer compiler.
WERROR      ?= ON
# Every CMAKE_BUILD_TYPE with both compilers (scripts/build-matrix.sh).
MATRIX_CONFIGS ?= gcc/Debug gcc/Release gcc/RelWithDebInfo gcc/MinSizeRel \
		  clang/Debug clang/Release clang/RelWithDebInfo clang/MinSizeRel

.PHONY: all deps build build-clang build-release build-opt build-matrix build-tsan test test-unit \
	test-tsan test-tsan-run test-lab test-package fuzz fuzz-long demo demo-nfs install clean

all: build

deps:
	@sh scripts/deps.sh test

# The main build: gcc, -Werror, ASan+UBSan with -fno-sanitize-recover.
build:
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Debug -DRPCRDMA_SANITIZE=ON \
		-DRPCRDMA_WERROR=$(WERROR) >/dev/null
	@cmake --build $(BUILD) -j$(JOBS)

# Second compiler: clang -O2 (RelWithDebInfo), -Werror, libFuzzer targets.
build-clang:
	@CC=clang cmake -S . -B $(CLANG_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo \
		-DRPCRDMA_FUZZ=ON -DRPCRDMA_SANITIZE=ON -DRPCRDMA_WERROR=$(WERROR) >/dev/null
	@cmake --build $(CLANG_BUILD) -j$(JOBS)

# gcc with ThreadSanitizer (RelWithDebInfo, -Werror): the connection
# layer's locking (rpc/) is checked by the unit and end-to-end tiers run
# in it (`make test-tsan`, part of `make test`).
build-tsan:
	@cmake -S . -B $(TSAN_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo \
		-DCMAKE_C_FLAGS=-fsanitize=thread \
		-DCMAKE_EXE_LINKER_FLAGS=-fsanitize=thread \
		-DCMAKE_SHARED_LINKER_FLAGS=-fsanitize=thread \
		-DRPCRDMA_WERROR=$(WERROR) >/dev/null
	@cmake --build $(TSAN_BUILD) -j$(JOBS)

# Debug, Release, RelWithDebInfo and MinSizeRel with gcc and clang, without
# sanitizers, -Werror: what packagers build (each full build takes seconds).
build-matrix:
	@JOBS=$(JOBS) sh scripts/build-matrix.sh $(MATRIX) $(MATRIX_CONFIGS)

# For benchmark numbers (README, rpcrdma-perf): gcc Release, no sanitizer.
# Not part of `make test` (build-matrix builds the same configuration).
build-release:
	@cmake -S . -B build-release -DCMAKE_BUILD_TYPE=Release \
		-DRPCRDMA_WERROR=$(WERROR) >/dev/null
	@cmake --build build-release -j$(JOBS)

# The optimized build users get: `make demo` runs it, `make install`
# installs it.  gcc -O2 -g, no sanitizer, warnings not fatal.
build-opt:
	@cmake -S . -B $(OPT_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	@cmake --build $(OPT_BUILD) -j$(JOBS)

# Every tier: unit, provider, interop, e2e, bench smoke (in parallel), then
# the Soft-RoCE lab (it takes both cores), the Debian packages, a bounded
# fuzz run per target, and `make demo` itself.
test: deps build build-clang build-matrix build-tsan
	cd $(BUILD) && ctest --output-on-failure -j$(JOBS) -LE 'lab|fuzz|package' $(CTEST_ARGS)
	@$(MAKE) --no-print-directory test-tsan-run
	cd $(BUILD) && ctest --output-on-failure -L lab --no-tests=ignore $(CTEST_ARGS)
	cd $(BUILD) && ctest --output-on-failure -L package $(CTEST_ARGS)
	cd $(CLANG_BUILD) && ctest --output-on-failure -L fuzz $(CTEST_ARGS)
	@# The build users get, without the sanitizers' interceptors (some
	@# system calls take another path there: common/nocancel.h).
	cd $(MATRIX)/gcc-Release && ctest --output-on-failure -j$(JOBS) \
		-L 'unit|e2e' -E '^install_' $(CTEST_ARGS)
	@$(MAKE) --no-print-directory demo

# The install tests build programs of their own against the installed
# library, without -fsanitize=thread: not run here.
test-tsan: build-tsan
	@$(MAKE) --no-print-directory test-tsan-run
test-tsan-run:
	cd $(TSAN_BUILD) && TSAN_OPTIONS=halt_on_error=1 ctest --output-on-failure \
		-j$(JOBS) -L 'unit|e2e' -E '^install_' $(CTEST_ARGS)

test-unit: build
	cd $(BUILD) && ctest --output-on-failure -j$(JOBS) -L unit $(CTEST_ARGS)

test-lab: build
	cd $(BUILD) && ctest --output-on-failure -L lab $(CTEST_ARGS)

# dpkg-buildpackage + lintian + the packages' file lists (slow: a whole
# package build).
test-package: build
	cd $(BUILD) && ctest --output-on-failure -L package $(CTEST_ARGS)

# Longer fuzzing on demand: make fuzz FUZZ_SECONDS=600
FUZZ_SECONDS ?= 60
fuzz: deps build-clang
	cmake -S . -B $(CLANG_BUILD) -DFUZZ_SECONDS=$(FUZZ_SECONDS) >/dev/null
	cd $(CLANG_BUILD) && ctest --output-on-failure -L fuzz

# Deep fuzzing: every target in turn (one at a time, under nice -n 19),
# FUZZ_SECONDS each or FUZZ_RUNS executions (0: no bound), corpora kept
# in FUZZ_CORPUS from run to run; prints executions, exec/s and coverage
# per target (scripts/fuzz-long.sh).  make fuzz-long FUZZ_RUNS=10000000
# FUZZ_SECONDS=3600 gives the table of docs/CONFORMANCE.md.
FUZZ_RUNS   ?= 0
FUZZ_CORPUS ?= $(CLANG_BUILD)/fuzz-corpus
fuzz-long: deps build-clang
	sh scripts/fuzz-long.sh $(CLANG_BUILD) $(FUZZ_CORPUS) $(FUZZ_SECONDS) $(FUZZ_RUNS) $(FUZZ_TARGETS)

# Only what the demo runs is built here; `make install` builds the rest.
demo:
	@sh scripts/deps.sh build
	@cmake -S . -B $(OPT_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	@cmake --build $(OPT_BUILD) -j$(JOBS) --target blockstore_server blockstore_client >/dev/null
	@bash scripts/demo.sh $(OPT_BUILD) $(DEMO_ARGS)

# The second demo: boots the Soft-RoCE lab (tests/lab/run.sh), where the
# guest's Linux NFS client mounts rpcrdma-nfs3d over RDMA, runs the
# workload and prints the numbers against the kernel's nfsd
# (docs/NFS3D.md).  A few minutes under TCG.
demo-nfs:
	@sh scripts/deps.sh test
	@$(MAKE) --no-print-directory build-release >/dev/null
	RPCRDMA_NFS3D_PHASES="workload numbers" tests/lab/run.sh tests/kernel/nfsd-up.sh \
		tests/nfs3d/lab-nfs3d.sh build-release/tools/nfs3d/rpcrdma-nfs3d \
		build-release/tests/kernel/nfs3_interop

install: build-opt
	cmake --install $(OPT_BUILD) $(if $(PREFIX),--prefix $(PREFIX))

clean:
	rm -rf $(BUILD) $(CLANG_BUILD) $(OPT_BUILD) $(MATRIX) build-release $(TSAN_BUILD)
