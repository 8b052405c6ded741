#!/usr/bin/env bash
# The debugging tour: an epoch is a plain file, so the ordinary tools work on it.
#
#   youmufs -o column=text,buffer=500 examples/sample /tmp/yfs
#   bash examples/shell.sh /tmp/yfs [EPOCH]
#   fusermount3 -u /tmp/yfs
#
# Each step prints the command, then its output; the few self-checks print "OK ..." and the
# script exits non-zero if one fails. Works on a jsonl mount (the default format).
set -euo pipefail
mnt=${1:?usage: shell.sh MOUNTPOINT [EPOCH]}
k=${2:-0}
f="$mnt/epoch-$k.jsonl"
show() { echo "\$ $*"; "$@"; }
fail() { echo "FAIL $*" >&2; exit 1; }

# What is mounted: the epoch files (part files are not listed, they open by name).
show ls -la "$mnt"

# The first records, in the epoch's shuffled order.
show head -n 3 "$f"

# st_size is exact: ls/stat know the epoch's size before a byte of it is read.
size=$(stat -c %s "$f")
echo "\$ stat -c %s $f"
echo "$size"

# Random access: dd reads one 4 KiB block at an offset (block 2 = bytes 8192..12287), then
# 200 bytes from byte 1000. A read at any offset returns the bytes a sequential read would.
block=$(mktemp)
trap 'rm -f "$block"' EXIT
show dd if="$f" bs=4096 skip=2 count=1 status=none of="$block"
echo "  ($(stat -c %s "$block") bytes)"
echo "\$ dd if=$f iflag=skip_bytes,count_bytes skip=1000 count=200 status=none"
dd if="$f" iflag=skip_bytes,count_bytes skip=1000 count=200 status=none; echo
cmp -s "$block" <(tail -c +$((2 * 4096 + 1)) "$f" | head -c 4096) ||
  fail "dd block 2 differs from the same bytes of a sequential read"
echo "OK dd at an offset = the same bytes of a sequential read"

# Record counts: the whole epoch, and 3 parts (any n works) that together hold exactly it.
show wc -l "$f" "$mnt/epoch-$k.part-0-of-3.jsonl" "$mnt/epoch-$k.part-1-of-3.jsonl" \
  "$mnt/epoch-$k.part-2-of-3.jsonl"
lines=$(wc -l < "$f")
parts=$(cat "$mnt/epoch-$k.part-"{0,1,2}"-of-3.jsonl" | wc -l)
[ "$lines" -eq "$parts" ] || fail "parts hold $parts records, the epoch $lines"
cmp -s <(sort "$f") <(cat "$mnt/epoch-$k.part-"{0,1,2}"-of-3.jsonl" | sort) ||
  fail "the 3 parts together are not the epoch's records"
echo "OK $lines records; the 3 parts together are exactly the epoch"
[ "$(wc -c < "$f")" -eq "$size" ] || fail "st_size $size != bytes read"
echo "OK st_size = bytes read ($size)"

# Another epoch is another order of the same records.
next="$mnt/epoch-$((k + 1)).jsonl"
echo "\$ cmp $f $next   # epoch $((k + 1)) opens by name even if not listed"
if cmp -s "$f" "$next"; then fail "epoch $((k + 1)) is byte-identical to epoch $k"; fi
cmp -s <(sort "$f") <(sort "$next") || fail "epoch $((k + 1)) holds other records"
echo "OK epoch $((k + 1)) differs in order, not in records"

# What was indexed and how long it took; live counters of the read path.
show cat "$mnt/.youmufs/index.json"; echo
show cat "$mnt/.youmufs/stats.json"; echo
grep -Eq "\"records\": *$lines\b" "$mnt/.youmufs/index.json" ||
  fail "index.json does not report $lines records"
echo "OK index.json reports $lines records"

# Read-only: a write fails (EROFS).
echo "\$ touch $mnt/x"
if touch "$mnt/x" 2>/dev/null; then fail "a write succeeded"; fi
echo "OK writes fail: $(touch "$mnt/x" 2>&1 || true)"
echo "OK shell tour"
