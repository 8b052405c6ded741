#!/usr/bin/env python3
"""Mixtures (issue 14, acceptance 4), side by side in one run:

  1. mount of a mixture of ten sources whose indexes are cached (cache=): the time of
     `youmufs -o cache=DIR mix.json MNT` until it returns (the mount is ready), median of 3;
  2. epoch throughput of a mixture against a single dataset of the same bytes: the 8 files of
     a shape of bench/make_shapes.py, mounted as one directory and as a mixture of 8 one-file
     sources weighted by their records (so the mixture's epoch holds exactly the same records),
     each epoch read whole with one reader (1 MiB reads), alternating, median of --repeat runs.

    python3 bench/mixture_bench.py --bin build-release/youmufs --root bench/data/shapes \\
        --out bench/results/mixture.md
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import pyarrow.parquet as pq

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_shapes  # noqa: E402


def mount(binary, dataset, mnt, options):
    t0 = time.monotonic()
    subprocess.run([binary, "-o", options, dataset, mnt], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.monotonic() - t0


def unmount(mnt):
    subprocess.run(["fusermount3", "-u", mnt], check=True)


def read_epoch(path):
    t0 = time.monotonic()
    n = 0
    with open(path, "rb", buffering=0) as f:
        while True:
            b = f.read(1 << 20)
            if not b:
                break
            n += len(b)
    return n, time.monotonic() - t0


def files_of(d):
    return sorted(os.path.join(d, x) for x in os.listdir(d) if x.endswith(".parquet"))


def write_mix(path, sources):
    with open(path, "w") as f:
        json.dump({"sources": [{"path": p, "weight": pq.ParquetFile(p).metadata.num_rows}
                               for p in sources]}, f)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--root", default="bench/data/shapes")
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--shapes", default="a-pyarrow-text-1m,b-pyarrow-text-64k,c-duckdb-text,"
                                        "d-pyarrow-tokens,"
                                        "e-pyarrow-int32-jsonl")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out")
    a = ap.parse_args()
    a.root = os.path.abspath(a.root)  # a mixture file's relative paths are from its directory
    work = tempfile.mkdtemp(prefix="yfs-mixbench-")
    mnt = os.path.join(work, "mnt")
    os.mkdir(mnt)
    cache = os.path.join(work, "cache")
    lines = ["# Mixtures: mount of ten cached sources, throughput against one dataset", "",
             f"`python3 bench/mixture_bench.py --scale {a.scale} --repeat {a.repeat}` "
             f"({os.cpu_count()} cores, shared; release build), "
             f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}. Same run, side by side.", ""]

    shapes = a.shapes.split(",")
    first = make_shapes.generate(a.root, shapes[0], a.scale)
    shape = make_shapes.SHAPES[shapes[0]]
    files = files_of(first)
    ten = [files[i % len(files)] for i in range(10)]
    mix10 = os.path.join(work, "mix10.json")
    write_mix(mix10, ten)
    opts = f"{shape.mount_options()},cache={cache}"
    first_mount = mount(a.bin, mix10, mnt, opts)
    unmount(mnt)
    times = []
    for _ in range(3):
        times.append(mount(a.bin, mix10, mnt, opts))
        unmount(mnt)
    mount(a.bin, first, mnt, opts)  # the directory has its own cache entry: fill it
    unmount(mnt)
    single = mount(a.bin, first, mnt, opts)
    unmount(mnt)
    lines += ["## 1. Mount of a mixture of ten sources, indexes cached", "",
              "| what | seconds |", "|---|---|",
              f"| first mount of the 10 sources ({shapes[0]}, {len(files)} files, "
              f"2 listed twice), cache empty | {first_mount:.3f} |",
              f"| re-mount, every index cached (median of 3: {', '.join(f'{t:.3f}' for t in times)})"
              f" | **{statistics.median(times):.3f}** |",
              f"| the same 8 files as one dataset (a directory), cached | {single:.3f} |", ""]

    lines += ["## 2. Epoch throughput: mixture of the 8 files against the directory", "",
              "| shape | epoch MB | one dataset MB/s | mixture MB/s | mixture / one | runs (one; mix) |",
              "|---|---|---|---|---|---|"]
    for name in shapes:
        d = make_shapes.generate(a.root, name, a.scale)
        shape = make_shapes.SHAPES[name]
        mix = os.path.join(work, f"{name}.json")
        write_mix(mix, files_of(d))
        opts = f"{shape.mount_options()},cache={cache}"
        epoch = f"epoch-0.{shape.ext}"
        rates = {"one": [], "mix": []}
        sizes = {}
        for r in range(a.repeat):
            for kind, ds in (("one", d), ("mix", mix)) if r % 2 == 0 else (("mix", mix), ("one", d)):
                mount(a.bin, ds, mnt, opts)
                try:
                    n, secs = read_epoch(os.path.join(mnt, epoch))
                finally:
                    unmount(mnt)
                sizes[kind] = n
                rates[kind].append(n / secs / 1e6)
        assert sizes["one"] == sizes["mix"], f"{name}: the mixture's epoch is not the same bytes"
        one, mx = statistics.median(rates["one"]), statistics.median(rates["mix"])
        runs = "; ".join(" ".join(f"{x:.0f}" for x in rates[k]) for k in ("one", "mix"))
        lines.append(f"| {name} | {sizes['one'] / 1e6:.0f} | {one:.0f} | {mx:.0f} | "
                     f"**{mx / one:.2f}** | {runs} |")
        print(lines[-1], flush=True)
    text = "\n".join(lines) + "\n"
    print(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
