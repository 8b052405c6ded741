#!/usr/bin/env python3
"""Several columns per record (issue 13): column=id:C against column=C, side by side, on the
shapes of bench/make_shapes.py with an int64 id beside their column C (`+id`): text with 1 MiB
and 64 KiB pages, DuckDB text, list<int32> tokens as jsonl, chat messages (nested).

    python3 bench/make_shapes.py bench/data/shapes --scale 0.3 a-pyarrow-text-1m+id \\
        b-pyarrow-text-64k+id c-duckdb-text+id e-pyarrow-int32-jsonl+id f-pyarrow-chat+id
    python3 bench/columns_bench.py --bin build-release/youmufs --root bench/data/shapes \\
        --out bench/results/columns.md

Per shape and configuration, alternating C / id:C --repeat times, each on a fresh mount
(`-o column=...,mem=256M,cache=<per configuration>`; the persistent index built once before,
untimed), warm page cache:
  mount s    until the mount point answers
  MB/s       epoch-0 bytes / wall time of one sequential reader (1 MiB read(2) calls)
  records/s  records / the same time (both configurations serve every row: the ids have no
             nulls), the figure the ÷ C ratio is taken of
  read amp.  bytes the daemon read from storage for the epoch (stats.json bytes_read) plus
             what the mount read (index.json bytes_scanned on the cached mount), over the
             compressed column-chunk bytes of the columns served
  peak RSS   VmHWM of the daemon, beside invariant 4's bound 1.1 x (index + mem) + 16 MiB
Medians of the repeats; ratios are id:C over C from the same run.
"""
import argparse
import json
import os
import statistics
import sys
import tempfile
import time

import pyarrow.parquet as pq

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from benchmount import timed_mount  # noqa: E402
from epoch_bench import MB, MIB, peak_rss_kib, read_file, warm_up  # noqa: E402
from machine import cpu_model, report  # noqa: E402
import make_shapes  # noqa: E402

SHAPES = ("a-pyarrow-text-1m+id,b-pyarrow-text-64k+id,c-duckdb-text+id,"
          "e-pyarrow-int32-jsonl+id,f-pyarrow-chat+id")
MEM = 256 << 20


def chunk_bytes(d, columns):
    """Compressed bytes of the column chunks of `columns` in the shape's files."""
    total = 0
    for name in sorted(os.listdir(d)):
        if name.endswith(".parquet"):
            md = pq.ParquetFile(os.path.join(d, name)).metadata
            for g in range(md.num_row_groups):
                rg = md.row_group(g)
                total += sum(rg.column(j).total_compressed_size for j in range(rg.num_columns)
                             if rg.column(j).path_in_schema.split(".")[0] in columns)
    return total


def run(binary, d, column, cache):
    with timed_mount(binary, d, f"column={column},mem={MEM},cache={cache}") as (mnt, mount_s,
                                                                              proc):
        with open(os.path.join(mnt, ".youmufs", "index.json")) as f:
            idx = json.load(f)
        path = os.path.join(mnt, "epoch-0.jsonl")
        size = os.stat(path).st_size
        t = time.monotonic()
        got, lines = read_file(path, count_lines=True)
        seconds = time.monotonic() - t
        with open(os.path.join(mnt, ".youmufs", "stats.json")) as f:
            stats = json.load(f)
        rss = peak_rss_kib(proc.pid) * 1024
    if got != size or lines != idx["records"]:
        raise SystemExit(f"{d} column={column}: read {got} B and {lines} records, "
                         f"st_size {size}, index.json records {idx['records']}")
    return {"mount_s": mount_s, "mb_s": got / seconds / MB, "rec_s": lines / seconds,
            "read": stats["bytes_read"] + idx["bytes_scanned"], "rss_mib": rss / MIB,
            "bound_mib": (1.1 * (idx["index_memory_bytes"] + MEM) + 16 * MIB) / MIB,
            "bytes": got, "records": lines}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default=os.path.join(HERE, "..", "build-release", "youmufs"))
    ap.add_argument("--root", default=os.path.join(HERE, "data", "shapes"))
    ap.add_argument("--shapes", default=SHAPES)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out")
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as caches:
        for name in args.shapes.split(","):
            d = os.path.join(args.root, name)
            if not os.path.isdir(d):
                raise SystemExit(f"{d} missing: python3 bench/make_shapes.py {args.root} "
                                 f"--scale 0.3 {name}")
            column = make_shapes.SHAPES[name.removesuffix("+id")].column
            configs = [column, f"id:{column}"]
            runs = {c: [] for c in configs}
            for c in configs:
                with timed_mount(args.bin, d, f"column={c},cache={caches}/{name}-{c}"):
                    pass                                    # the persistent index, untimed
            warm_up(sorted(os.path.join(d, x) for x in os.listdir(d)))
            for _ in range(args.repeat):
                for c in configs:
                    runs[c].append(run(args.bin, d, c, f"{caches}/{name}-{c}"))
                    r = runs[c][-1]
                    print(f"{name} column={c}: {r['mb_s']:.0f} MB/s, {r['rec_s']:.0f} rec/s, "
                          f"mount {r['mount_s']:.2f} s", file=sys.stderr, flush=True)
            med = {c: {k: statistics.median(r[k] for r in runs[c]) for k in runs[c][0]}
                   for c in configs}
            for c in configs:
                m = med[c]
                amp = m["read"] / chunk_bytes(d, c.split(":"))
                spread = ", ".join(f"{r['rec_s'] / 1000:.0f}" for r in runs[c])
                rows.append(f"| {name} | {c} | {m['bytes'] / MB:.0f} | {m['records']:.0f} | "
                            f"{m['mount_s']:.2f} | {m['mb_s']:.0f} | {m['rec_s'] / 1000:.1f} "
                            f"({spread}) | {m['rec_s'] / med[column]['rec_s']:.2f} | "
                            f"{amp:.3f} | {m['rss_mib']:.0f} / {m['bound_mib']:.0f} |")
                print(rows[-1], flush=True)
    table = ["| shape | column= | epoch MB | records | mount s | MB/s | k records/s (runs) | "
             "÷ C | read amp. | peak RSS / bound MiB |",
             "|---|---|---|---|---|---|---|---|---|---|"] + rows
    text = (f"# column=id:C against column=C\n\n"
            f"`{' '.join(sys.argv)}` on {cpu_model()}, {os.cpu_count()} cores, "
            f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}.\n\n" + "\n".join(table) + "\n")
    report(text, args.out)


if __name__ == "__main__":
    main()
