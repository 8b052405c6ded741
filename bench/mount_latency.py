#!/usr/bin/env python3
"""First mount (cache=none) of a many-file dataset over slow storage (issue 11, "Mount over
slow storage"): every read of a source file waits YOUMUFS_READ_DELAY_US, and the mount's
footers, page indexes and page pass must keep many reads in flight, so that 10,000 files
cost a few round trips, not one per file.

    python3 bench/mount_latency.py --old-bin /tmp/mount-before/build/youmufs \\
        --out bench/results/mount_latency.md

Writes the dataset under bench/data/ (small pyarrow files with a page index: an int64
column `id` and a string column `text`), then times, for each added latency and each
binary, the first mount from starting youmufs until the mount point answers (the mount
returns once the index is built: it mounts only then). Two configurations:

- `column=id,format=raw`: sized from metadata (the OffsetIndex, no page decoded): one
  read of each file's footer and one of each chunk's offset index;
- `column=text` (jsonl): the page pass reads each chunk and decodes every page;
- `column=id:text` (jsonl, several columns): that, and each file's id chunk read into the
  values file (ix_others.h), the chunks of the next files read ahead at once.

The mount's size of epoch-0 is checked against what pyarrow counts (exactness smoke
check); the full record check is tests/integration/test_slow_storage.py. `--old-bin` is the
same tree before the mount read many at once (build it in a git worktree); the delay must be
applied to every read in both binaries (ix_pread.h), else the comparison is empty.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

import pyarrow as pa
import pyarrow.parquet as pq

from benchmount import timed_mount

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORDS = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu".split()
CONFIGS = [("raw of id (sized from metadata)", "column=id,format=raw"),
           ("jsonl of text (page pass)", "column=text"),
           ("jsonl of id:text (page pass, ids into the values file)", "column=id:text")]


def make(path, files, rows):
    """files small Parquet files of `rows` rows, one row group, with a page index."""
    stamp = os.path.join(path, ".complete")
    if os.path.exists(stamp):
        return
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    for i in range(files):
        ids = list(range(i * rows, (i + 1) * rows))
        text = [" ".join(WORDS[(k * 7 + j) % len(WORDS)] for j in range(1 + k % 9)) for k in ids]
        pq.write_table(pa.table({"id": pa.array(ids, pa.int64()), "text": text}),
                       os.path.join(path, f"part-{i:05d}.parquet"), write_page_index=True)
    open(stamp, "w").close()


def expected_sizes(path, files, rows):
    """Bytes of epoch-0 for each configuration, as pyarrow sees the data."""
    n = files * rows
    text_bytes = pair_bytes = 0
    for k in range(n):
        s = " ".join(WORDS[(k * 7 + j) % len(WORDS)] for j in range(1 + k % 9))
        text_bytes += len(json.dumps({"text": s}, ensure_ascii=False, separators=(",", ":"))) + 1
        pair_bytes += len(json.dumps({"id": k, "text": s}, ensure_ascii=False,
                                     separators=(",", ":"))) + 1
    return {"column=id,format=raw": 8 * n, "column=text": text_bytes,
            "column=id:text": pair_bytes}


def mount_once(binary, dataset, options, delay_ms, timeout):
    env = {"YOUMUFS_READ_DELAY_US": str(int(delay_ms * 1000))}
    with timed_mount(binary, dataset, f"cache=none,{options}", env=env,
                     timeout=timeout) as (mnt, elapsed, _):
        with open(os.path.join(mnt, ".youmufs", "index.json")) as f:
            ix = json.load(f)
        size = os.stat(os.path.join(mnt, "epoch-0" + (".bin" if "raw" in options else ".jsonl"))).st_size
    return elapsed, ix, size


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", type=int, default=10000)
    ap.add_argument("--rows", type=int, default=100)
    ap.add_argument("--delays", default="0,2,10,50", help="added ms per read, comma-separated")
    ap.add_argument("--repeat", type=int, default=1, help="mounts per cell, median (default 1)")
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "youmufs"))
    ap.add_argument("--old-bin", help="the binary before (optional): a column of its own")
    ap.add_argument("--old-timeout", type=float, default=900,
                    help="give up on an old-binary mount after this many seconds")
    ap.add_argument("--configs", default=";".join(o for _, o in CONFIGS),
                    help="the configurations' options to run, separated by ; (default: all)")
    ap.add_argument("--out")
    ap.add_argument("--append", action="store_true",
                    help="add this run's table to --out instead of replacing the file")
    args = ap.parse_args()
    delays = [float(d) for d in args.delays.split(",")]
    dataset = os.path.join(ROOT, "bench", "data", f"mount-latency-{args.files}x{args.rows}")
    t = time.monotonic()
    make(dataset, args.files, args.rows)
    print(f"dataset {dataset} ready in {time.monotonic() - t:.1f} s", file=sys.stderr)
    want = expected_sizes(dataset, args.files, args.rows)
    bins = [("after", args.bin)] + ([("before", args.old_bin)] if args.old_bin else [])

    configs = [(n, o) for n, o in CONFIGS if o in args.configs.split(";")]
    results = {}  # (config, delay, label) -> (median s, index.json)
    for name, options in configs:
        for d in delays:
            for label, binary in bins:
                runs = []
                for _ in range(args.repeat):
                    try:
                        el, ix, size = mount_once(binary, dataset, options, d,
                                                  args.old_timeout if label == "before" else None)
                    except SystemExit as e:
                        print(f"{label} {options} {d} ms: {e}", file=sys.stderr)
                        runs = None
                        break
                    if size != want[options]:
                        sys.exit(f"{label} {options}: epoch-0 is {size} bytes, pyarrow says "
                                 f"{want[options]}")
                    runs.append((el, ix))
                if runs:
                    runs.sort(key=lambda r: r[0])
                    results[(options, d, label)] = (statistics.median(r[0] for r in runs),
                                                    runs[len(runs) // 2][1])
                cell = results.get((options, d, label))
                print(f"{label:6} {options:22} delay {d:4g} ms: "
                      + (f"{cell[0]:.3f} s (footers {cell[1]['seconds_footers']:.3f}, pages "
                         f"{cell[1]['seconds_pages']:.3f})" if cell else "gave up"),
                      file=sys.stderr)

    head = "| configuration | added latency per read | after: mount s | footers s | page pass s |"
    rule = "|---|---|---|---|---|"
    if args.old_bin:
        head += " before: mount s | speedup |"
        rule += "---|---|"
    lines = [head, rule]
    for name, options in configs:
        for d in delays:
            a = results.get((options, d, "after"))
            row = f"| {name} | {d:g} ms | "
            row += (f"{a[0]:.2f} | {a[1]['seconds_footers']:.2f} | {a[1]['seconds_pages']:.2f} |"
                    if a else "- | - | - |")
            if args.old_bin:
                b = results.get((options, d, "before"))
                row += f" {b[0]:.2f} |" if b else f" > {args.old_timeout:g} |"
                row += f" {b[0] / a[0]:.1f}x |" if a and b else " - |"
            lines.append(row)
    meta = results.get((CONFIGS[0][1], delays[0], "after"))  # when raw of id ran
    note = [f"{args.files} files of {args.rows} rows (one row group, one page each, pyarrow "
            f"`write_page_index=True`); cache=none; medians of {args.repeat} mount(s) per cell; "
            f"{os.cpu_count()} cores.",
            f"Time is from starting youmufs to the mount point answering (the index is built "
            f"then)."]
    if meta:
        ix = meta[1]
        note.append(f"raw of id: {ix.get('metadata_sized_chunks', '?')} of "
                    f"{ix.get('row_groups', '?')} chunks sized from metadata.")
    table = "\n".join(lines) + "\n"
    print(table)
    if args.out:
        with open(args.out, "a" if args.append else "w") as f:
            f.write(("\n" if args.append else "")
                    + f"Command: `python3 bench/mount_latency.py {' '.join(sys.argv[1:])}`\n\n"
                    + " ".join(note) + "\n\n" + table)


if __name__ == "__main__":
    main()
