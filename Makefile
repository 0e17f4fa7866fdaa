# rpcrdma — the two commands of the README:
#   make demo   build, then run the demo (DEMO_ARGS="--pcap F" saves a capture)
#   make test   install what is missing, build with ASan+UBSan (gcc) and
#               with clang -Werror + libFuzzer, run every test tier
# Everything real lives in CMake/CTest; this file only sequences it.

BUILD       ?= build
CLANG_BUILD ?= build-clang
JOBS        ?= $(shell nproc 2>/dev/null || echo 2)
CTEST_ARGS  ?=

.PHONY: all deps build build-clang build-release test test-unit test-lab fuzz demo demo-nfs install clean

all: build

deps:
	@sh scripts/deps.sh test

# The main build: gcc, -Werror, ASan+UBSan with -fno-sanitize-recover.
build:
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Debug -DRPCRDMA_SANITIZE=ON >/dev/null
	@cmake --build $(BUILD) -j$(JOBS)

# Second compiler: clang, -Werror, libFuzzer targets.
build-clang:
	@CC=clang cmake -S . -B $(CLANG_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo \
		-DRPCRDMA_FUZZ=ON -DRPCRDMA_SANITIZE=ON >/dev/null
	@cmake --build $(CLANG_BUILD) -j$(JOBS)

# Third: gcc -O2 -Werror (what `make install` builds; -O2 finds warnings
# -O0 does not).
build-release:
	@cmake -S . -B build-release -DCMAKE_BUILD_TYPE=Release >/dev/null
	@cmake --build build-release -j$(JOBS)

# Every tier: unit, provider, interop, bench smoke (in parallel), then the
# Soft-RoCE lab (it takes both cores), then a bounded fuzz run per target.
test: deps build build-clang build-release
	cd $(BUILD) && ctest --output-on-failure -j$(JOBS) -LE 'lab|fuzz' $(CTEST_ARGS)
	cd $(BUILD) && ctest --output-on-failure -L lab --no-tests=ignore $(CTEST_ARGS)
	cd $(CLANG_BUILD) && ctest --output-on-failure -L fuzz $(CTEST_ARGS)

test-unit: build
	cd $(BUILD) && ctest --output-on-failure -j$(JOBS) -L unit $(CTEST_ARGS)

test-lab: build
	cd $(BUILD) && ctest --output-on-failure -L lab $(CTEST_ARGS)

# Longer fuzzing on demand: make fuzz FUZZ_SECONDS=600
FUZZ_SECONDS ?= 60
fuzz: deps build-clang
	cmake -S . -B $(CLANG_BUILD) -DFUZZ_SECONDS=$(FUZZ_SECONDS) >/dev/null
	cd $(CLANG_BUILD) && ctest --output-on-failure -L fuzz

demo: 
	@sh scripts/deps.sh build
	@$(MAKE) --no-print-directory build >/dev/null
	@bash scripts/demo.sh $(BUILD) $(DEMO_ARGS)

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

install: build-release
	cmake --install build-release $(if $(PREFIX),--prefix $(PREFIX))

clean:
	rm -rf $(BUILD) $(CLANG_BUILD) build-release
