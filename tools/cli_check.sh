#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# Every tool and subcommand follows the conventions: --version prints
# "NAME VERSION" and exits 0; -h and --help exit 0 and print one line of
# meaning for each option ("  -x, --long ARG   what it does").
#   cli_check.sh VERSION TOOL... [-- PERF]
set -u
version=$1
shift
pass=0 fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
T=$(mktemp)
trap 'rm -f "$T"' EXIT

# check NAME CMD...: CMD --version / -h / --help
check() {
	name=$1
	shift
	out=$("$@" --version 2>&1); rc=$?
	if [ $rc -eq 0 ] && [ "$out" = "$name $version" ]; then ok; else
		bad "$* --version: exit $rc, '$out'"; fi
	for h in -h --help; do
		"$@" $h >"$T" 2>&1; rc=$?
		[ $rc -eq 0 ] && ok || bad "$* $h: exit $rc"
		# option lines: "  -x ..." or "  --x ...", each with a meaning
		n=$(grep -c '^ \{1,4\}--\?[A-Za-z]' "$T")
		[ "$n" -ge 2 ] && ok || bad "$* $h: $n option lines"
		if grep '^ \{1,4\}--\?[A-Za-z]' "$T" | grep -v '[^ ]  \+[^ ]' >/dev/null; then
			bad "$* $h: an option without a meaning:
$(grep '^ \{1,4\}--\?[A-Za-z]' "$T" | grep -v '[^ ]  \+[^ ]')"
		else
			ok
		fi
	done
}

perf=
for t in "$@"; do
	case $t in
	*rpcrdma-perf) perf=$t ;;
	*) check "$(basename "$t")" "$t" ;;
	esac
done
if [ -n "$perf" ]; then
	out=$("$perf" --version); rc=$?
	[ $rc -eq 0 ] && [ "$out" = "rpcrdma-perf $version" ] && ok ||
		bad "rpcrdma-perf --version: exit $rc, '$out'"
	"$perf" --help >/dev/null; [ $? -eq 0 ] && ok || bad "rpcrdma-perf --help"
	for sub in provider rpc server client cost; do
		check rpcrdma-perf "$perf" $sub
	done
fi
echo "$pass passed, $fail failed"
[ $fail -eq 0 ] && [ $pass -gt 0 ]
