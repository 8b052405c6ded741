#!/usr/bin/env python3
"""Re-mount time of column=id:text over a many-file dataset, two binaries in one run
(issue 13: the values beside the paged column kept beside the persistent index).

    python3 bench/remount_columns.py --files 1000 --before OLD/youmufs --after NEW/youmufs \
        --out bench/results/remount_columns.md

Writes the dataset under bench/data/ (small files of an int64 id and a text), then for
each binary, with its own cache directory: a first mount (empty cache: footers, the
others' values decoded, page pass) and --repeat re-mounts of the unchanged files. Time
is from starting youmufs until the mount point answers; the table gives the median and
range of the re-mounts and the index.json figures of the last one (the binary before
has no `other_columns`: it decodes the others at every mount).
"""
import argparse
import json
import os
import shutil
import statistics
import tempfile

from benchmount import timed_mount
from remount import make

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def mount_once(binary, dataset, cache):
    with timed_mount(binary, dataset, f"column=id:text,cache={cache}") as (mnt, elapsed, _):
        with open(os.path.join(mnt, ".youmufs", "index.json")) as f:
            return elapsed, json.load(f)


def measure(binary, dataset, repeat):
    cache = tempfile.mkdtemp(prefix="yfs-remount-columns-")
    try:
        first, _ = mount_once(binary, dataset, cache)
        runs = [mount_once(binary, dataset, cache) for _ in range(repeat)]
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    secs = sorted(r[0] for r in runs)
    return first, statistics.median(secs), secs[0], secs[-1], runs[-1][1]


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", type=int, default=1000)
    ap.add_argument("--rows", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--before", required=True, help="youmufs built from main")
    ap.add_argument("--after", required=True, help="youmufs built from this branch")
    ap.add_argument("--out")
    a = ap.parse_args()
    data = os.path.join(ROOT, "bench", "data", f"remount-ids-{a.files}x{a.rows}")
    make(data, a.files, a.rows, ids=True)
    rows = [("before", a.before, measure(a.before, data, a.repeat)),
            ("after", a.after, measure(a.after, data, a.repeat))]
    lines = [f"Command: `python3 bench/remount_columns.py --files {a.files} --rows {a.rows} "
             f"--repeat {a.repeat} --before {a.before} --after {a.after}`", "",
             f"{a.files} files of {a.rows} rows (int64 id, short text), `-o column=id:text`; "
             f"first mount with an empty cache directory, then the median of {a.repeat} "
             "re-mounts of the unchanged files, range in brackets.", "",
             "| binary | first mount s | re-mount s | files reused | bytes read at re-mount "
             "| others file reused |", "|---|---|---|---|---|---|"]
    for name, _binary, (first, med, lo, hi, idx) in rows:
        others = idx.get("other_columns") or {}
        lines.append(f"| {name} | {first:.3f} | {med:.3f} [{lo:.3f}-{hi:.3f}] | "
                     f"{idx['persistent_index']['files_reused']} | {idx['bytes_scanned']} | "
                     f"{others.get('reused', 'n/a')} |")
    lines += ["", f"Re-mount speed-up: {rows[0][2][1] / rows[1][2][1]:.1f}x.", ""]
    text = "\n".join(lines)
    print(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
