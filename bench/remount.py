#!/usr/bin/env python3
"""Mount time of a many-file dataset, first mount against re-mount with the persistent
index, measured in one run (issue 5: re-mount of 10,000 unchanged files <= 0.2 s).

    python3 bench/remount.py --files 10000 --out bench/results/remount.md

Writes the dataset under bench/data/ (small text files, one or two row groups each),
then mounts it three ways, each --repeat times: first mount with an empty cache
directory (page pass, saves the index), re-mount (reuses it), and re-mount after giving
1% of the files a new mtime (those are read again). Time is from starting youmufs until
the mount point answers; the table gives the median of the repeats and their range, and
the index.json figures of the median run.
"""
import argparse
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import time

import pyarrow as pa
import pyarrow.parquet as pq

from benchmount import timed_mount

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def make(path, files, rows, ids=False):
    """files of `rows` short texts each (with ids: and an int64 id before it, as
    bench/remount_columns.py mounts column=id:text)."""
    if os.path.isdir(path) and len(os.listdir(path)) == files:
        return
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    rng = random.Random(0)
    words = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu".split()
    for i in range(files):
        text = [" ".join(rng.choice(words) for _ in range(rng.randint(3, 40))) for _ in range(rows)]
        columns = {"id": list(range(i * rows, (i + 1) * rows))} if ids else {}
        columns["text"] = text
        pq.write_table(pa.table(columns), os.path.join(path, f"part-{i:05d}.parquet"),
                       row_group_size=rows // 2 + 1)


def mount_time(binary, dataset, cache):
    with timed_mount(binary, dataset, f"cache={cache}") as (mnt, elapsed, _):
        with open(os.path.join(mnt, ".youmufs", "index.json")) as f:
            return elapsed, json.load(f)


def repeated(times, prepare, binary, dataset, cache):
    """(median seconds, min, max, index.json of the median run) of `times` mounts,
    each after prepare()."""
    runs = []
    for _ in range(times):
        prepare()
        runs.append(mount_time(binary, dataset, cache))
    runs.sort(key=lambda r: r[0])
    secs = [r[0] for r in runs]
    return statistics.median(secs), secs[0], secs[-1], runs[len(runs) // 2][1]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", type=int, default=10000)
    ap.add_argument("--rows", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=5, help="mounts of each kind (default 5)")
    ap.add_argument("--binary", default=os.path.join(ROOT, "build", "youmufs"))
    ap.add_argument("--out")
    args = ap.parse_args()
    dataset = os.path.join(ROOT, "bench", "data", f"many-{args.files}")
    make(dataset, args.files, args.rows)
    cache = tempfile.mkdtemp(prefix="yfs-remount-cache-")
    names = sorted(os.listdir(dataset))[:: 100]

    def empty_cache():
        for n in os.listdir(cache):
            os.unlink(os.path.join(cache, n))

    def touch():  # 1% of the files get a new mtime
        now = time.time()
        for n in names:
            os.utime(os.path.join(dataset, n), (now, now))

    try:
        first = repeated(args.repeat, empty_cache, args.binary, dataset, cache)
        again = repeated(args.repeat, lambda: None, args.binary, dataset, cache)
        touched = repeated(args.repeat, touch, args.binary, dataset, cache)
    finally:
        shutil.rmtree(cache)
    rows = [("first mount (page pass, saves the index)", first),
            ("re-mount, unchanged", again),
            (f"re-mount, {len(names)} files touched", touched)]
    ix = first[3]
    lines = [f"{args.files} files, {ix['rows']} rows, {ix['pages']} pages, {ix['row_groups']} row groups; "
             f"median of {args.repeat} mounts each, range in brackets.",
             "", "| mount | seconds | files reused | footers s | page pass s |", "|---|---|---|---|---|"]
    for name, (t, lo, hi, i) in rows:
        lines.append(f"| {name} | {t:.3f} [{lo:.3f}-{hi:.3f}] | "
                     f"{i['persistent_index']['files_reused']} | "
                     f"{i['seconds_footers']:.3f} | {i['seconds_pages']:.3f} |")
    table = "\n".join(lines) + "\n"
    print(table)
    if args.out:
        with open(args.out, "w") as f:
            f.write(f"Command: `python3 bench/remount.py {' '.join(sys.argv[1:])}`\n\n" + table)


if __name__ == "__main__":
    main()
