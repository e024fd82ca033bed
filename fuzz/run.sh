#!/usr/bin/env bash
# Builds the seed corpora and runs the four fuzzers.
#   fuzz/run.sh BUILD_DIR SECONDS
# Seeds: the ONNX backend test models (importer), the descriptors of
# artifacts compiled from the e2e models (loader), and the backend tests'
# .pb tensors, a few models and .npy files (tensor files), and the model
# fuzzer's own seeds (real artifacts linked into it). Corpora grow in
# BUILD_DIR/fuzz/corpus-*; crashes are written to BUILD_DIR/fuzz/.
set -euo pipefail
build=$(cd "${1:?build dir}" && pwd)
seconds=${2:-60}
src=$(cd "$(dirname "$0")/.." && pwd)
suite=${KILN_ONNX_BACKEND_TESTS:-$src/../shared/onnx-backend-tests}
work=$build/fuzz
mkdir -p "$work/corpus-import" "$work/corpus-artifact" "$work/corpus-tensor-file" "$work/corpus-model"
if [ -d "$suite/node" ] && [ -z "$(ls -A "$work/corpus-import")" ]; then
  for f in "$suite"/node/*/model.onnx "$suite"/pytorch-converted/*/model.onnx; do
    cp "$f" "$work/corpus-import/$(basename "$(dirname "$f")").onnx"
  done
fi
if [ -z "$(ls -A "$work/corpus-artifact")" ]; then
  "$src/.venv/bin/python" "$src/fuzz/make_artifact_corpus.py" "$build" "$work/corpus-artifact"
fi
if [ -d "$suite/node" ] && [ -z "$(ls -A "$work/corpus-tensor-file")" ]; then
  for d in "$suite"/node/test_*/; do
    name=$(basename "$d")
    for f in "$d"test_data_set_0/*.pb; do
      [ -f "$f" ] && cp "$f" "$work/corpus-tensor-file/$name.$(basename "$f")"
    done
  done
  cp "$suite"/node/test_add/model.onnx "$suite"/node/test_matmul_2d/model.onnx \
    "$work/corpus-tensor-file/" 2>/dev/null || true
  "$src/.venv/bin/python" - "$work/corpus-tensor-file" <<'PY'
import sys, numpy as np
out = sys.argv[1]
for i, a in enumerate([np.zeros((2, 3), np.float32), np.arange(5, dtype=np.int64),
                       np.ones((), np.float64), np.array([True, False])]):
    np.save(f"{out}/seed{i}.npy", a)
PY
fi
if [ -z "$(ls -A "$work/corpus-model")" ]; then
  # The model fuzzer writes its own seeds: the descriptors and a state file
  # of the artifacts linked into it, and input values.
  KILN_FUZZ_SEEDS="$work/corpus-model" "$build/bin/kiln-fuzz-model" -runs=0 >/dev/null 2>&1
fi
cd "$work"
# Leak checks stay on; allocations are capped so a hostile size is a finding.
# Findings are written to BUILD_DIR/fuzz/TARGET-crash-*, -leak-*, -timeout-*
# and -oom-*; rerun one with BUILD_DIR/bin/kiln-fuzz-TARGET FILE.
for target in import artifact tensor-file model; do
  echo "== kiln-fuzz-$target for ${seconds}s"
  # The whole log stays in BUILD_DIR/fuzz/TARGET.log; the summary is printed.
  ASAN_OPTIONS=${ASAN_OPTIONS:-} "$build/bin/kiln-fuzz-$target" -max_total_time="$seconds" \
    -rss_limit_mb=4096 -malloc_limit_mb=2048 -timeout=30 -print_final_stats=1 \
    -fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 \
    -artifact_prefix="$target-" "corpus-$target" >"$target.log" 2>&1 || status=$?
  # Fork mode keeps going past a finding, so one run collects all of them.
  grep -E '^#[0-9]+: ' "$target.log" | tail -1 || true
  grep -E 'CRASH|Test unit written|ERROR|SUMMARY' "$target.log" | sort | uniq -c || true
  if [ -n "${status:-}" ]; then
    echo "kiln-fuzz-$target stopped with status $status: see $work/$target.log" >&2
    exit 1
  fi
done
