#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# run-fuzz.sh BINARY CORPUS_DIR SECONDS — bounded libFuzzer run for CI.
# New inputs go to a scratch copy so the checked-in corpus only changes when
# a developer copies findings back on purpose.
set -eu
bin=$1; corpus=$2; secs=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/corpus"
[ -d "$corpus" ] && cp "$corpus"/* "$work/corpus/" 2>/dev/null || true
cd "$work"
exec "$bin" -max_total_time="$secs" -max_len=4096 -timeout=10 -rss_limit_mb=2048 \
     -print_final_stats=1 "$work/corpus"
