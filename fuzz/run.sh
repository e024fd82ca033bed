#!/usr/bin/env bash
# Builds the seed corpora and runs both fuzzers.
#   fuzz/run.sh BUILD_DIR SECONDS
# Seeds: the ONNX backend test models (importer) and the descriptors of
# artifacts compiled from the e2e models (loader). Corpora grow in
# BUILD_DIR/fuzz/corpus-*; crashes are written to BUILD_DIR/fuzz/.
set -euo pipefail
build=${1:?build dir}
seconds=${2:-60}
src=$(cd "$(dirname "$0")/.." && pwd)
suite=${KILN_ONNX_BACKEND_TESTS:-$src/../shared/onnx-backend-tests}
work=$build/fuzz
mkdir -p "$work/corpus-import" "$work/corpus-artifact"
if [ -d "$suite/node" ] && [ -z "$(ls -A "$work/corpus-import")" ]; then
  for f in "$suite"/node/*/model.onnx "$suite"/pytorch-converted/*/model.onnx; do
    cp "$f" "$work/corpus-import/$(basename "$(dirname "$f")").onnx"
  done
fi
if [ -z "$(ls -A "$work/corpus-artifact")" ]; then
  "$src/.venv/bin/python" "$src/fuzz/make_artifact_corpus.py" "$build" "$work/corpus-artifact"
fi
cd "$work"
# Leak checks stay on; allocations are capped so a hostile size is a finding.
for target in import artifact; do
  echo "== kiln-fuzz-$target for ${seconds}s"
  ASAN_OPTIONS=${ASAN_OPTIONS:-} "$build/bin/kiln-fuzz-$target" -max_total_time="$seconds" \
    -rss_limit_mb=4096 -malloc_limit_mb=2048 -timeout=30 -print_final_stats=1 \
    "corpus-$target" 2>&1 | grep -E 'stat::|Done|ERROR|SUMMARY|crash-|leak|timeout' || true
done
