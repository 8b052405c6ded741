#!/usr/bin/env python3
"""Mount time of a many-file dataset, first mount against re-mount with the persistent
index, measured in one run (issue 5: re-mount of 10,000 unchanged files <= 0.2 s).

    python3 bench/remount.py --files 10000 --out bench/results/remount.md

Writes the dataset under bench/data/ (small text files, one or two row groups each),
then mounts it three ways with a fresh cache directory: first mount (page pass, saves the
index), re-mount (reuses it), and re-mount after touching 1% of the files (those are
scanned again). Time is from starting youmufs until the mount point answers.
"""
import argparse
import json
import os
import random
import shutil
import sys
import tempfile

import pyarrow as pa
import pyarrow.parquet as pq

from benchmount import timed_mount

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def make(path, files, rows):
    if os.path.isdir(path) and len(os.listdir(path)) == files:
        return
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    rng = random.Random(0)
    words = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu".split()
    for i in range(files):
        text = [" ".join(rng.choice(words) for _ in range(rng.randint(3, 40))) for _ in range(rows)]
        pq.write_table(pa.table({"text": text}), os.path.join(path, f"part-{i:05d}.parquet"),
                       row_group_size=rows // 2 + 1)


def mount_time(binary, dataset, cache):
    with timed_mount(binary, dataset, f"cache={cache}") as (mnt, elapsed, _):
        with open(os.path.join(mnt, ".youmufs", "index.json")) as f:
            return elapsed, json.load(f)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", type=int, default=10000)
    ap.add_argument("--rows", type=int, default=200)
    ap.add_argument("--binary", default=os.path.join(ROOT, "build", "youmufs"))
    ap.add_argument("--out")
    args = ap.parse_args()
    dataset = os.path.join(ROOT, "bench", "data", f"many-{args.files}")
    make(dataset, args.files, args.rows)
    cache = tempfile.mkdtemp(prefix="yfs-remount-cache-")
    try:
        first, ix = mount_time(args.binary, dataset, cache)
        again, ix2 = mount_time(args.binary, dataset, cache)
        names = sorted(os.listdir(dataset))[:: 100]
        for n in names:  # 1% of the files get a new mtime
            os.utime(os.path.join(dataset, n))
        touched, ix3 = mount_time(args.binary, dataset, cache)
    finally:
        shutil.rmtree(cache)
    rows = [("first mount (page pass, saves the index)", first, ix),
            ("re-mount, unchanged", again, ix2),
            (f"re-mount, {len(names)} files touched", touched, ix3)]
    lines = [f"{args.files} files, {ix['rows']} rows, {ix['pages']} pages, {ix['row_groups']} row groups.",
             "", "| mount | seconds | files reused | footers s | page pass s |", "|---|---|---|---|---|"]
    for name, t, i in rows:
        lines.append(f"| {name} | {t:.3f} | {i['persistent_index']['files_reused']} | "
                     f"{i['seconds_footers']:.3f} | {i['seconds_pages']:.3f} |")
    table = "\n".join(lines) + "\n"
    print(table)
    if args.out:
        with open(args.out, "w") as f:
            f.write(f"Command: `python3 bench/remount.py {' '.join(sys.argv[1:])}`\n\n" + table)


if __name__ == "__main__":
    main()
