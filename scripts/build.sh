#!/usr/bin/env bash
# Configures and builds youmufs into build/ (release with debug info) and,
# with --asan, also build-asan/ (AddressSanitizer + UBSan). Run from anywhere.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
jobs=$(nproc 2>/dev/null || echo 2)

cmake -S "$root" -B "$root/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
make -C "$root/build" -j"$jobs" --no-print-directory
if [ "${1:-}" = "--asan" ]; then
  cmake -S "$root" -B "$root/build-asan" -DCMAKE_BUILD_TYPE=Debug -DYFS_SANITIZE=ON >/dev/null
  make -C "$root/build-asan" -j"$jobs" --no-print-directory
fi
