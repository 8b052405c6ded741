#!/usr/bin/env python3
"""Equal parts and elastic resume (issue 14) against today's parts, side by side: what cutting
segments costs (time to stat the parts, whose sizes need the segments they cut built), what
reading costs (MB/s with 8 parts read at once) and peak RSS, on the shapes of bench/make_shapes.py.

    python3 bench/even_bench.py --bin build/youmufs --root bench/data/shapes \\
        --out bench/results/even_bench.md

Per shape, one mount per configuration (`-o <shape options>,mem=256M,cache=<per shape>`; the
persistent index is built once before, untimed), warm page cache:
  off          epoch-0.part-<i>-of-8 with even=off (the baseline: whole segments)
  pad / drop   the same names with even=pad / even=drop (every part cut to the same records)
  resume       epoch-0.resume-8-<R>.part-<i>-of-4 with R = half a part's records
               (the 8 parts' heads are cut, the rest dealt into 4)
stat s = wall time of os.stat of every part file, in order, on a fresh mount (the cut
segments are built then); MB/s = bytes of all parts / wall time of the readers (one thread
per part, 1 MiB read(2) calls, at once); ratios are to `off` of the same shape and run.
"""
import argparse
import json
import os
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import make_shapes  # noqa: E402
from benchmount import timed_mount  # noqa: E402
from epoch_bench import MB, MIB, peak_rss_kib, read_file, warm_up  # noqa: E402
from machine import cpu_model, report  # noqa: E402

PARTS = 8
RESUMED = 4


def names(kind, ext, records):
    if kind == "resume":
        given = records // PARTS // 2
        return [f"epoch-0.resume-{PARTS}-{given}.part-{i}-of-{RESUMED}.{ext}"
                for i in range(RESUMED)]
    return [f"epoch-0.part-{i}-of-{PARTS}.{ext}" for i in range(PARTS)]


def run(binary, d, shape, kind, cache):
    even = {"pad": "pad", "drop": "drop"}.get(kind, "off")
    opts = f"{shape.mount_options()},mem=256M,cache={cache},even={even}"
    with timed_mount(binary, d, opts) as (mnt, mount_s, proc):
        with open(os.path.join(mnt, ".youmufs", "index.json")) as f:
            records = json.load(f)["records"]
        paths = [os.path.join(mnt, n) for n in names(kind, shape.ext, records)]
        t = time.monotonic()
        sizes = [os.stat(p).st_size for p in paths]
        stat_s = time.monotonic() - t
        got = [0] * len(paths)

        def reader(i):
            got[i] = read_file(paths[i])[0]
        threads = [threading.Thread(target=reader, args=(i,)) for i in range(len(paths))]
        t = time.monotonic()
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        seconds = time.monotonic() - t
        rss = peak_rss_kib(proc.pid) * 1024
    if got != sizes:
        raise SystemExit(f"{shape.name} {kind}: read {got}, st_size {sizes}")
    return {"stat_s": stat_s, "mb_s": sum(got) / seconds / MB, "bytes": sum(got),
            "rss_mib": rss / MIB, "files": len(paths)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default=os.path.join(HERE, "..", "build", "youmufs"))
    ap.add_argument("--root", default=os.path.join(HERE, "data", "shapes"))
    ap.add_argument("--shapes", default="a-pyarrow-text-1m,b-pyarrow-text-64k,d-pyarrow-tokens")
    ap.add_argument("--out")
    args = ap.parse_args()
    kinds = ["off", "pad", "drop", "resume"]
    rows = []
    with tempfile.TemporaryDirectory() as caches:
        for name in args.shapes.split(","):
            shape = make_shapes.SHAPES[name]
            d = os.path.join(args.root, name)
            cache = os.path.join(caches, name)
            with timed_mount(args.bin, d, f"{shape.mount_options()},cache={cache}"):
                pass                                       # the persistent index, untimed
            warm_up(sorted(os.path.join(d, x) for x in os.listdir(d)))
            res = {k: run(args.bin, d, shape, k, cache) for k in kinds}
            for k in kinds:
                r = res[k]
                rows.append(f"| {name} | {k} | {r['files']} | {r['bytes'] / MB:.0f} | "
                            f"{r['stat_s'] * 1000:.0f} | {r['mb_s']:.0f} | "
                            f"{r['mb_s'] / res['off']['mb_s']:.2f} | {r['rss_mib']:.0f} |")
                print(rows[-1], flush=True)
    table = ["| shape | parts | files | MB | stat all ms | MB/s | ÷ off | peak RSS MiB |",
             "|---|---|---|---|---|---|---|---|"] + rows
    text = (f"# even= and elastic resume against today's parts\n\n"
            f"`{' '.join(sys.argv)}` on {cpu_model()}, {os.cpu_count()} cores.\n\n"
            + "\n".join(table) + "\n")
    report(text, args.out)


if __name__ == "__main__":
    main()
