#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# tests/lab/perftest-lib.sh — sourced by the lab's perf scripts
# (perf-compare.sh, siw/perf.sh) inside the guest: runs perftest pairs over
# rdma_cm and reads numbers out of perftest's and rpcrdma-perf's output.
# The caller sets dev, addr and port (the last perftest port used) and
# defines bad() (a failure message that sets its status);
# pt_clock_warn collects the tools whose clock calibration failed.
pt_clock_warn=${pt_clock_warn:-}

# A perftest pair: server in the background, client in the foreground once
# the server's rdma_cm id listens.  Prints the client's output.
perftest_run() {  # PORT TOOL ARGS...
	local port=$1 tool=$2; shift 2
	local slog
	slog=$(mktemp)
	"$tool" -R -d "$dev" -p "$port" -F "$@" >"$slog" 2>&1 &
	local spid=$!
	# rdma_cm listeners show up in `rdma resource show cm_id`.
	local i
	for i in $(seq 100); do
		rdma resource show cm_id 2>/dev/null |
			grep -Eq "state LISTEN.*src-addr [^ ]*:$port( |\$)" && break
		kill -0 "$spid" 2>/dev/null || break
		sleep 0.1
	done
	local out rc t0
	t0=$(date +%s.%N)
	out=$(timeout 60 "$tool" -R -d "$dev" -p "$port" -F "$@" "$addr" 2>&1)
	rc=$?
	# A failed client leaves its server waiting for ever.
	if [ "$rc" != 0 ] || ! wait_pid "$spid" 30; then
		kill "$spid" 2>/dev/null
		wait "$spid" 2>/dev/null
	fi
	echo "$out"
	echo "($tool: listener after $(( (i - 1) * 100 )) ms wait, run $(awk -v a="$t0" \
		-v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')s)"
	if [ "$rc" != 0 ]; then
		echo "--- $tool client exit status $rc; server said:"
		cat "$slog"
	fi
	rm -f "$slog"
	return "$rc"
}

wait_pid() {  # PID SECONDS: 0 once PID has exited
	local n
	for n in $(seq $(($2 * 10))); do
		kill -0 "$1" 2>/dev/null || { wait "$1" 2>/dev/null; return 0; }
		sleep 0.1
	done
	return 1
}

# The first data row of perftest's table (the line after the "#bytes"
# header), field N.
pt_field() {  # OUTPUT FIELD
	awk -v f="$2" '/^ *#bytes/ { hdr = 1; next }
		hdr && NF >= f && $1 ~ /^[0-9]+$/ { print $f; exit }' <<<"$1"
}

# A number from rpcrdma-perf's --json output.
js() {  # JSON REGEX-BEFORE-NUMBER
	grep -o "$2[0-9.]*" <<<"$1" | head -1 | sed "s/.*[^0-9.]//"
}

is_num() { [[ ${1:-} =~ ^[0-9]+(\.[0-9]+)?$ ]]; }

# --- perftest -------------------------------------------------------------
run_pt() {  # VAR TOOL FIELD ARGS...: runs, prints, stores field FIELD
	local var=$1 tool=$2 field=$3; shift 3
	local out try
	# perftest's rdma_cm set-up is not robust on a loaded TCG guest (seen:
	# the client's REQ rejected with "invalid service id" although the
	# server listened, then a crash); one retry on a fresh port.
	for try in 1 2; do
		port=$((port + 1))
		say "$tool $* (port $port, try $try)"
		out=$(perftest_run "$port" "$tool" "$@")
		local rc=$?
		echo "$out" | sed 's/^/    /'
		[ $rc = 0 ] && break
		[ $try = 2 ] && bad "$tool $* failed twice"
	done
	# perftest converts cycles with a CPU clock it calibrates itself; on a
	# loaded TCG guest that calibration fails (it warns, and -F carries
	# on), and its numbers for that run may be 0 or far off.
	grep -q "Correlation coefficient" <<<"$out" &&
		pt_clock_warn="$pt_clock_warn $tool"
	printf -v "$var" '%s' "$(pt_field "$out" "$field")"
}
