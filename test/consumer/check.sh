#!/usr/bin/env bash
# CTest's install.consumer: installs Kiln from BUILD into a temporary prefix,
# configures and builds the consumer project (test/consumer) against it with
# find_package(Kiln), runs it on the example's input, and checks its output
# against the example's own program (mlp_demo, built in BUILD), and that the
# pkg-config file links a program too.
#
#   test/consumer/check.sh SOURCE BUILD
set -euo pipefail
src="$1"
build="$2"
work="$(mktemp -d "${TMPDIR:-/tmp}/kiln-consumer.XXXXXX")"
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" >/dev/null
for f in bin/kilnc bin/kiln-run lib/libkiln_runtime.a lib/libkiln_runtime.so include/kiln/runtime.h \
         lib/cmake/Kiln/KilnConfig.cmake lib/cmake/Kiln/KilnModel.cmake lib/pkgconfig/kiln-runtime.pc; do
  [[ -e "$work/prefix/$f" ]] || { echo "install: $f is missing"; exit 1; }
done
cmake -G Ninja -S "$src/test/consumer" -B "$work/build" -DCMAKE_PREFIX_PATH="$work/prefix" \
  -DKILN_EXAMPLE_MODEL="$src/examples/mlp.onnx" >/dev/null
cmake --build "$work/build" >/dev/null
"$work/build/consumer" "$src/examples/mlp_input.bin" | tee "$work/consumer.txt"
# The probabilities the in-tree example prints (compiled for another CPU
# here, so equal within float rounding).
"$build/bin/mlp_demo" "$src/examples/mlp_input.bin" | grep '^probabilities:' >"$work/demo.txt"
grep '^probabilities:' "$work/consumer.txt" | paste -d' ' - "$work/demo.txt" | awk '{
  n = (NF - 2) / 2; if (n < 1) exit 1
  for (i = 2; i <= n + 1; ++i) { d = $i - $(i + n + 1); if (d < 0) d = -d; if (d > 1e-5) exit 1 } }' ||
  { echo "install.consumer: the consumer's probabilities differ from mlp_demo's"; exit 1; }
# A rebuild with nothing changed runs no kilnc.
if cmake --build "$work/build" -- -n -d explain 2>&1 | grep -q kilnc; then
  echo "install.consumer: a rebuild with nothing changed runs kilnc again"; exit 1
fi
# pkg-config (relocatable: found from the .pc file's folder): the runtime's
# flags build a program of the generic API (linked to libkiln_runtime.so).
cat >"$work/pc.c" <<'C'
#include <kiln/runtime.h>
#include <stdio.h>
int main(void) { printf("%s\n", kiln_runtime_version_string()); return 0; }
C
PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig" cc "$work/pc.c" -o "$work/pc" \
  $(PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig" pkg-config --cflags --libs --static kiln-runtime)
LD_LIBRARY_PATH="$work/prefix/lib" "$work/pc"
echo "install.consumer: ok"
