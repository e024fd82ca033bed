#!/usr/bin/env bash
# Checks that the tracked C and C++ sources are formatted as the
# .clang-format files say (clang-format 14, Debian's). Test inputs under
# test/**/Inputs are data and are left as written.
#   scripts/check_format.sh [--fix]
# Exits 77 (skipped) where clang-format-14 or git is missing.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
fmt=$(command -v clang-format-14 || true)
if [[ -z "$fmt" ]] || ! git rev-parse --git-dir >/dev/null 2>&1; then
  echo "lint.format: skipped: needs clang-format-14 and a git checkout (scripts/setup.sh installs clang-format-14)"
  exit 77
fi
mapfile -t files < <(git ls-files '*.c' '*.h' '*.cpp' | grep -v '/Inputs/')
if [[ "${1:-}" == "--fix" ]]; then
  "$fmt" -i "${files[@]}"
  exit 0
fi
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! "$fmt" --dry-run --Werror "${files[@]}" 2>"$log"; then
  grep -E '^[^ ].*: (error|warning):' "$log" | cut -d: -f1 | sort -u | sed 's/^/not formatted: /'
  echo "run scripts/check_format.sh --fix" >&2
  exit 1
fi
echo "lint.format: ${#files[@]} files formatted as .clang-format says"
