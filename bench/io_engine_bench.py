#!/usr/bin/env python3
"""The I/O engine's choice (issue 11): a pool of pread threads (what fs/yfs_io.c runs) against
io_uring at the same depth, on the same chunks of the same files, side by side in one run.

    python3 bench/io_engine_bench.py --bin build-release/bench/io_engine_bench \\
        --root bench/data/shapes --out bench/results/io_engine.md

Per shape (its Parquet files, read as 1 MiB chunks in one shuffled order, as a page-shuffled
epoch's chunk loads are), per depth and added latency (a sleep per read in a pool thread; a
timeout hard-linked before each read in io_uring, no thread waiting), warm (page cache) and
cold (posix_fadvise DONTNEED first): MB/s and CPU seconds per GB read, medians of --repeat
alternating runs. Runs with latency read depth x 40 chunks (about 40 round trips).
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from machine import cpu_model, report  # noqa: E402

SHAPES = "a-pyarrow-text-1m,c-duckdb-text,d-duckdb-tokens"
CHUNK = 1 << 20


def once(binary, engine, depth, latency_us, cold, files):
    cmd = [binary, "--engine", engine, "--depth", str(depth), "--chunk", str(CHUNK),
           "--latency-us", str(latency_us)]
    if latency_us:
        cmd += ["--limit", str(depth * 40 * CHUNK)]
    if cold:
        cmd.append("--cold")
    out = subprocess.run(cmd + files, check=True, capture_output=True, text=True).stdout.split()
    return float(out[5]), float(out[6])  # MB/s, CPU s per GB


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(HERE, "..", "build-release", "bench",
                                                  "io_engine_bench"))
    ap.add_argument("--root", default=os.path.join(HERE, "data", "shapes"))
    ap.add_argument("--shapes", default=SHAPES)
    ap.add_argument("--depths", default="1,8,64")
    ap.add_argument("--latencies-ms", default="0,10,50")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out")
    args = ap.parse_args()

    rows = []
    for shape in args.shapes.split(","):
        d = os.path.join(args.root, shape)
        files = sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(".parquet"))
        cases = [(dep, int(lat), False) for lat in args.latencies_ms.split(",")
                 for dep in map(int, args.depths.split(","))]
        cases += [(dep, 0, True) for dep in map(int, args.depths.split(","))]
        for depth, lat_ms, cold in cases:
            got = {"pool": [], "uring": []}
            for _ in range(args.repeat):
                for engine in ("pool", "uring"):
                    got[engine].append(once(args.bin, engine, depth, lat_ms * 1000, cold, files))
            med = {e: (statistics.median(v[0] for v in got[e]),
                       statistics.median(v[1] for v in got[e])) for e in got}
            rows.append((shape, depth, lat_ms, "cold" if cold else "warm", med))
            print(shape, depth, lat_ms, cold, med, flush=True)

    lines = [
        "# I/O engine: a pool of pread threads against io_uring",
        "",
        f"`python3 bench/io_engine_bench.py --repeat {args.repeat}` on {cpu_model()}, "
        f"{os.cpu_count()} cores, kernel {os.uname().release}, liburing 2.3, "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}.",
        "",
        "1 MiB chunks of each shape's files in one shuffled order; medians of "
        f"{args.repeat} alternating runs.",
        "",
        "| shape | depth | added ms | cache | pool MB/s | io_uring MB/s | io_uring ÷ pool "
        "| pool CPU s/GB | io_uring CPU s/GB |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for shape, depth, lat, cache, med in rows:
        (pm, pc), (um, uc) = med["pool"], med["uring"]
        lines.append(f"| {shape} | {depth} | {lat} | {cache} | {pm:.0f} | {um:.0f} | "
                     f"{um / pm:.2f} | {pc:.3f} | {uc:.3f} |")
    text = "\n".join(lines) + "\n"
    report(text, args.out)


if __name__ == "__main__":
    main()
