#!/usr/bin/env bash
# From a fresh clone: install dependencies, build, mount the bundled sample
# dataset, show the first records of epoch 0, and unmount.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/install-deps.sh"
"$root/scripts/build.sh"

mnt=$(mktemp -d)
trap 'fusermount3 -u "$mnt" 2>/dev/null || true; rmdir "$mnt"' EXIT
"$root/build/youmufs" -o column=text,seed=0,epochs=2,buffer=500 "$root/examples/sample" "$mnt"

echo "\$ ls -a $mnt"
ls -a "$mnt"
echo "\$ head -n 5 $mnt/epoch-0.jsonl"
head -n 5 "$mnt/epoch-0.jsonl"
echo "\$ wc -l $mnt/epoch-0.jsonl $mnt/epoch-0.part-0-of-2.jsonl $mnt/epoch-0.part-1-of-2.jsonl"
wc -l "$mnt/epoch-0.jsonl" "$mnt/epoch-0.part-0-of-2.jsonl" "$mnt/epoch-0.part-1-of-2.jsonl"
