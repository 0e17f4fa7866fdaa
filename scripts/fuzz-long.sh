#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# fuzz-long.sh BUILD_DIR CORPUS_DIR SECONDS [RUNS [TARGET...]]
#
# Runs every libFuzzer target of BUILD_DIR (a clang build with
# RPCRDMA_FUZZ, `make build-clang`) in turn, one at a time, each for
# SECONDS or RUNS executions, whichever comes first (RUNS 0: no bound),
# and prints per target: executions, executions per second of wall-clock
# and of CPU time (the machine may be shared), libFuzzer's coverage
# (cov: edges, ft: features), the corpus size and the crashes.
#
# The corpora are kept: CORPUS_DIR/<target> grows from run to run (the
# checked-in seeds of fuzz/corpus/<target> are read along with it), and
# anything found goes to CORPUS_DIR/<target>.artifacts.  Exit status 1
# when a target crashed, leaked or timed out.
#
# Environment: FUZZ_NICE (default 19: `nice -n 19`, as long CPU-heavy jobs
# must on a shared machine), FUZZ_MAX_LEN (default 4096) and
# FUZZ_ENGINE_MAX_LEN (default 512, the fuzz_engine_* targets: each byte
# of their input drives the engine, and an input's cost grows with its
# length; see docs/CONFORMANCE.md, "Fuzzing").
set -eu
build=$1; corpora=$2; secs=$3; runs=${4:-0}
[ $# -ge 4 ] && shift 4 || shift $#
src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "$build" && pwd)
nice_level=${FUZZ_NICE:-19}
max_len=${FUZZ_MAX_LEN:-4096}
engine_max_len=${FUZZ_ENGINE_MAX_LEN:-512}

targets=${*:-}
if [ -z "$targets" ]; then
	for b in "$build"/fuzz/fuzz_*; do
		[ -x "$b" ] && [ -f "$b" ] && targets="$targets $(basename "$b")"
	done
fi
[ -n "$targets" ] || { echo "no fuzz targets in $build/fuzz (make build-clang)" >&2; exit 2; }
mkdir -p "$corpora"
corpora=$(cd "$corpora" && pwd)

printf '%-24s %7s %13s %9s %9s %6s %7s %7s %s\n' target seconds executions \
	'exec/s' 'exec/cpu' cov ft corpus found
status=0
for t in $targets; do
	bin="$build/fuzz/$t"
	[ -x "$bin" ] || { echo "$t: no binary $bin" >&2; status=1; continue; }
	corpus="$corpora/$t"
	art="$corpora/$t.artifacts"
	mkdir -p "$corpus" "$art"
	seeds="$src/fuzz/corpus/$t"
	[ -d "$seeds" ] || seeds=
	len=$max_len
	case $t in fuzz_engine_*) len=$engine_max_len ;; esac
	before=$(ls "$art" | wc -l)
	log="$corpora/$t.log"
	bound=
	[ "$runs" -gt 0 ] && bound="-runs=$runs"
	start=$(date +%s)
	# CPU time of the child from /proc (no dependency on GNU time).
	rc=0
	( cd "$art" && exec nice -n "$nice_level" "$bin" -max_total_time="$secs" \
		$bound -max_len="$len" -timeout=10 -rss_limit_mb=2048 \
		-print_final_stats=1 -artifact_prefix="$art/" \
		"$corpus" $seeds ) >"$log" 2>&1 &
	pid=$!
	cpu=0
	while kill -0 "$pid" 2>/dev/null; do
		# utime + stime of the fuzzer process, in clock ticks
		c=$(awk '{print $14 + $15}' "/proc/$pid/stat" 2>/dev/null || echo "")
		[ -n "$c" ] && cpu=$c
		sleep 0.2
	done
	wait "$pid" || rc=$?
	end=$(date +%s)
	hz=$(getconf CLK_TCK)
	wall=$((end - start))
	[ "$wall" -gt 0 ] || wall=1
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
	execs=${execs:-0}
	last=$(grep -E '^#[0-9]+.*cov: ' "$log" | tail -1 || true)
	cov=$(echo "$last" | sed -n 's/.*cov: \([0-9]*\).*/\1/p')
	ft=$(echo "$last" | sed -n 's/.* ft: \([0-9]*\).*/\1/p')
	ncorp=$(ls "$corpus" | wc -l)
	found=$(( $(ls "$art" | wc -l) - before ))
	cpus=$(awk -v c="$cpu" -v h="$hz" 'BEGIN { printf "%.1f", c / h }')
	per_cpu=$(awk -v e="$execs" -v c="$cpu" -v h="$hz" \
		'BEGIN { if (c > 0) printf "%d", e / (c / h); else print "-" }')
	printf '%-24s %7s %13s %9s %9s %6s %7s %7s %s\n' "$t" "$wall" "$execs" \
		$((execs / wall)) "$per_cpu" "${cov:--}" "${ft:--}" "$ncorp" \
		"$found (cpu ${cpus}s, rc $rc)"
	if [ "$found" -gt 0 ] || [ "$rc" -ne 0 ]; then
		status=1
		grep -E 'ERROR|invariant|SUMMARY|Test unit written' "$log" | head -5 >&2 || true
	fi
done
exit $status
