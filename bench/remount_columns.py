#!/usr/bin/env python3
"""Re-mount time and epoch read time of column=id:text, two binaries in one run (issue 13:
the values beside the paged column kept in a file beside the persistent index).

    python3 bench/remount_columns.py --before OLD/youmufs --after NEW/youmufs \
        --out bench/results/remount_columns.md

Two datasets under bench/data/: many small files (--files of --rows rows: an int64 id and a
short text, bench/remount.py's generator), and a few large ones (--large-rows rows in 4
files). For each binary and dataset, with its own cache directory: a first mount (empty
cache: footers, the others' values decoded, page pass), --repeat re-mounts of the unchanged
files (time from starting youmufs until the mount point answers: median and range), then
`youmufs cat ... epoch-0.jsonl` with the cache filled (median of 3 wall times; both
binaries' epochs must be byte-identical). index.json figures are the last re-mount's (the
binary before has no `other_columns`: it decodes the others at every mount).
"""
import argparse
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time

import pyarrow as pa
import pyarrow.parquet as pq

from benchmount import MountError, timed_mount
from remount import make

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORDS = ["alpha", "beta", "gamma", "delta", "epsilon"]


def make_large(path, rows, files=4):
    """`rows` rows of an int64 id and a text of two words and the row number."""
    if os.path.isdir(path) and len(os.listdir(path)) == files:
        return
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    per = rows // files
    for k in range(files):
        ids = range(k * per, (k + 1) * per)
        text = [f"{WORDS[i % 5]} {WORDS[i * 7 % 5]} {i}" for i in ids]
        pq.write_table(pa.table({"id": pa.array(ids, pa.int64()), "text": text}),
                       os.path.join(path, f"part-{k}.parquet"))


def mount_once(binary, dataset, options):
    with timed_mount(binary, dataset, options) as (mnt, elapsed, _):
        with open(os.path.join(mnt, ".youmufs", "index.json")) as f:
            return elapsed, json.load(f)


def epoch(binary, dataset, options):
    """(median wall seconds of 3 reads of epoch 0 through `youmufs cat`, md5 of it)."""
    secs, digest = [], None
    for _ in range(3):
        t0 = time.monotonic()
        out = subprocess.run([binary, "cat", "-o", options, dataset, "epoch-0.jsonl"],
                             capture_output=True, check=True).stdout
        secs.append(time.monotonic() - t0)
        digest = hashlib.md5(out).hexdigest()
    return statistics.median(secs), digest


def measure(binary, dataset, repeat, mem):
    cache = tempfile.mkdtemp(prefix="yfs-remount-columns-")
    options = f"column=id:text,mem={mem},cache={cache}"
    try:
        first, _ = mount_once(binary, dataset, options)
        runs = [mount_once(binary, dataset, options) for _ in range(repeat)]
        read, digest = epoch(binary, dataset, options)
    except MountError as e:
        return {"failed": e.stderr}
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    secs = sorted(r[0] for r in runs)
    return {"first": first, "median": statistics.median(secs), "lo": secs[0], "hi": secs[-1],
            "idx": runs[-1][1], "epoch": read, "md5": digest}


def table(title, results):
    lines = [title, "", "| binary | first mount s | re-mount s | files reused | bytes read at "
             "re-mount | others file reused | index memory MB | epoch read s |",
             "|---|---|---|---|---|---|---|---|"]
    for name, r in results:
        if "failed" in r:
            lines.append(f"| {name} | mount refused: {r['failed'][:160]} | | | | | | |")
            continue
        idx = r["idx"]
        others = idx.get("other_columns") or {}
        lines.append(f"| {name} | {r['first']:.3f} | {r['median']:.3f} [{r['lo']:.3f}-"
                     f"{r['hi']:.3f}] | {idx['persistent_index']['files_reused']} | "
                     f"{idx['bytes_scanned']} | {others.get('reused', 'n/a')} | "
                     f"{idx['index_memory_bytes'] / 1e6:.1f} | {r['epoch']:.2f} |")
    digests = {r["md5"] for _n, r in results if "md5" in r}
    assert len(digests) <= 1, f"the binaries' epochs differ: {results}"
    return lines + [""]


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", type=int, default=1000)
    ap.add_argument("--rows", type=int, default=200)
    ap.add_argument("--large-rows", type=int, default=10_000_000)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--before", required=True, help="youmufs built from main")
    ap.add_argument("--after", required=True, help="youmufs built from this branch")
    ap.add_argument("--out")
    a = ap.parse_args()
    small = os.path.join(ROOT, "bench", "data", f"remount-ids-{a.files}x{a.rows}")
    make(small, a.files, a.rows, ids=True)
    large = os.path.join(ROOT, "bench", "data", f"ids-{a.large_rows}")
    make_large(large, a.large_rows)
    lines = [f"Command: `python3 bench/remount_columns.py --files {a.files} --rows {a.rows} "
             f"--large-rows {a.large_rows} --repeat {a.repeat} --before {a.before} "
             f"--after {a.after}`", ""]
    for title, path, mem in [
            (f"{a.files} files of {a.rows} rows (int64 id, short text), mem=256M", small, "256M"),
            (f"{a.large_rows} rows in 4 files, mem=256M", large, "256M"),
            (f"{a.large_rows} rows in 4 files, mem=64M", large, "64M")]:
        results = [(name, measure(b, path, a.repeat, mem))
                   for name, b in (("before", a.before), ("after", a.after))]
        lines += table(f"### {title}", results)
    text = "\n".join(lines)
    print(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
