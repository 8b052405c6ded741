#!/usr/bin/env bash
# Every test of youmufs, from a fresh clone: installs what is missing, builds
# the release and the sanitizer builds, runs the Criterion unit tests of both,
# a bounded libFuzzer run of the decoder, then the mounted integration tests
# (pyarrow as the oracle), then the integration tests again on the sanitizer
# binary.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

scripts/install-deps.sh --tests
scripts/build.sh --asan
# Packagers build Release (-O3), whose warnings differ (maybe-uninitialized): it must
# compile warning-free too.
cmake -S "$root" -B "$root/build-release" -DCMAKE_BUILD_TYPE=Release >/dev/null
make -C "$root/build-release" -j"$(nproc)" --no-print-directory youmufs >/dev/null
# The Debian package, installed: tests/integration/test_mount_helper.py checks it and mounts
# through it (mount -t fuse.youmufs, fstab). A copy an earlier `cmake --install` left in
# /usr/local would come first on mount.fuse3's PATH: removed when no package owns it.
rm -f build/youmufs_*.deb
cmake --build build --target package >/dev/null
if [ "$(id -u)" = 0 ]; then
  for f in /usr/local/bin/youmufs /usr/local/share/man/man1/youmufs.1; do
    if [ -e "$f" ] && ! dpkg-query -S "$f" >/dev/null 2>&1; then rm -f "$f"; fi
  done
  dpkg -i build/youmufs_*.deb >/dev/null
fi

echo "== unit tests (release)"
ctest --test-dir build --output-on-failure --no-tests=error
echo "== unit tests (AddressSanitizer + UBSan)"
ASAN_OPTIONS=detect_leaks=1 ctest --test-dir build-asan --output-on-failure --no-tests=error

echo "== fuzzing the decoder (libFuzzer, 20 s per target)"
bash tests/fuzz/run.sh 20

echo "== integration tests (mounted, pyarrow oracle)"
export YOUMUFS_REQUIRE=1  # a missing FUSE fails the run, never skips it
YOUMUFS_BIN="$root/build/youmufs" python3 -m pytest -q tests/integration
echo "== integration tests on the sanitizer build"
# All but the framework examples (slow under ASan, no youmufs code of their
# own), the RSS bounds (meaningless under ASan) and the mount(8) tests (they
# need the installed binary, which is the release one).
YOUMUFS_BIN="$root/build-asan/youmufs" python3 -m pytest -q tests/integration \
  --ignore=tests/integration/test_examples.py --ignore=tests/integration/test_memory.py \
  --ignore=tests/integration/test_mount_helper.py
