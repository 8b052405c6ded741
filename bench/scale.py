#!/usr/bin/env python3
"""How mount and plan costs grow with the number of pages (issue 15's scale figures).

    python3 bench/scale.py --pages 100k,1M,10M --out bench/results/scale.md

For each size, a synthetic dataset of that many data pages (pyarrow, 8 files, one short text
column, a page every --rows-per-page rows: data_page_size=1 and write_batch_size make each
batch one page), then, with a fresh persistent index directory:
  first mount      youmufs mounted (-f, cache=<dir>) until the mount point answers: the page
                   pass over every page (jsonl sizes need each value)
  re-mount         the same again, every file found in the persistent index
  index B/page     index.json index_memory_bytes / pages (what the mount keeps per page)
  cache B/page     bytes of the persistent index file per page
  plan             open() of epoch-0.jsonl, which builds the epoch's plan, and the plan's
                   bytes (stats.json memory.kinds.plans)
Per-100k-page figures make super-linear growth visible as rising numbers down the table.
Datasets are kept under --root and reused.
"""
import argparse
import glob
import json
import os
import shutil
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from benchmount import timed_mount  # noqa: E402

FILES = 8


def parse_count(text):
    text = text.strip().upper()
    mult = {"K": 1_000, "M": 1_000_000}.get(text[-1], 1)
    return int(float(text[:-1] if mult > 1 else text) * mult)


def generate(path, pages, rows_per_page):
    """FILES files of pages / FILES pages each; returns the dataset directory."""
    if os.path.isdir(path):
        return path
    tmp = path + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    rng = np.random.default_rng(7)
    words = np.array(["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"])
    per_file = pages // FILES * rows_per_page
    for f in range(FILES):
        idx = rng.integers(0, len(words), size=(per_file, 3))
        text = pa.array([" ".join(w) for w in words[idx]])
        pq.write_table(pa.table({"text": text}), os.path.join(tmp, f"part-{f:03d}.parquet"),
                       compression="snappy", use_dictionary=False, data_page_size=1,
                       write_batch_size=rows_per_page, row_group_size=1 << 22)
    os.rename(tmp, path)
    return path


def measure(binary, dataset, cache):
    opts = f"column=text,cache={cache}"
    with timed_mount(binary, dataset, opts, timeout=3600) as (mnt, first_s, _proc):
        ix = json.load(open(os.path.join(mnt, ".youmufs", "index.json")))
    with timed_mount(binary, dataset, opts, timeout=3600) as (mnt, again_s, _proc):
        again = json.load(open(os.path.join(mnt, ".youmufs", "index.json")))
        t0 = time.monotonic()
        with open(os.path.join(mnt, "epoch-0.jsonl"), "rb") as f:
            plan_s = time.monotonic() - t0
            f.read(1)
        stats = json.load(open(os.path.join(mnt, ".youmufs", "stats.json")))
    cache_bytes = sum(os.path.getsize(p) for p in glob.glob(os.path.join(cache, "*.yfsidx")))
    return {"pages": ix["pages"], "first_s": first_s, "again_s": again_s,
            "reused": again["persistent_index"]["files_reused"], "files": ix["files"],
            "index_bytes": ix["index_memory_bytes"], "cache_bytes": cache_bytes,
            "plan_s": plan_s, "plan_bytes": stats["memory"]["kinds"]["plans"]["bytes"]}


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "youmufs"))
    ap.add_argument("--root", default=os.path.join(HERE, "data", "scale"))
    ap.add_argument("--pages", default="100k,1M,10M")
    ap.add_argument("--rows-per-page", type=int, default=4)
    ap.add_argument("--out")
    args = ap.parse_args()
    rows = []
    for text in args.pages.split(","):
        n = parse_count(text)
        d = generate(os.path.join(args.root, f"pages-{text}"), n, args.rows_per_page)
        with tempfile.TemporaryDirectory(prefix="yfs-scale-") as cache:
            r = measure(args.bin, d, cache)
        r["label"] = text
        rows.append(r)
        print(f"{text}: {r}", file=sys.stderr)
    lines = ["# Scale: mount and plan costs against the number of pages (issue 15)", "",
             "```", "python3 " + " ".join([os.path.relpath(sys.argv[0], ROOT)] + sys.argv[1:]),
             "```", "",
             f"{FILES} files, one text column, {args.rows_per_page} rows per page, snappy; "
             f"{os.cpu_count()} cores; warm page cache after generation.", "",
             "| pages | first mount s | s per 100k pages | re-mount s | files reused | "
             "index B/page | cache B/page | plan (open) s | plan bytes | plan B/page |",
             "|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|"]
    for r in rows:
        p = r["pages"]
        lines.append(f"| {p:,} | {r['first_s']:.2f} | {r['first_s'] / p * 1e5:.3f} | "
                     f"{r['again_s']:.3f} | {r['reused']}/{r['files']} | "
                     f"{r['index_bytes'] / p:.1f} | {r['cache_bytes'] / p:.1f} | "
                     f"{r['plan_s']:.3f} | {r['plan_bytes']:,} | {r['plan_bytes'] / p:.1f} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
