"""Epoch throughput over slow storage (the remote-storage issue): every read of a source
file is delayed by YOUMUFS_READ_DELAY_US, as a network filesystem or an object store
delays its first byte. Per shape of bench/make_shapes.py, per added latency, one reader
(epoch-0 read whole) and 8 parts read at once by 8 processes, mem=256M; each figure as
a ratio to the same binary with no added latency, measured in the same run. With
--old-bin, the same runs on another build (before the I/O engine) side by side.

    python3 bench/latency_bench.py --bin build/youmufs --old-bin /tmp/old/youmufs \\
        --out bench/results/latency.md

The persistent index is built first (a mount with no delay, which reads one epoch
untimed), so the figures are reads only. Runs alternate between binaries and, within
each repeat, between latencies; the median of --repeat runs is kept.
"""
import argparse
import concurrent.futures
import json
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_shapes  # noqa: E402
from benchmount import timed_mount  # noqa: E402

READ_BYTES = 1 << 20


def read_file(path, limit):
    """Bytes read from path, sequentially, up to limit (None: to the end)."""
    n = 0
    with open(path, "rb", buffering=0) as f:
        while limit is None or n < limit:
            b = f.read(READ_BYTES)
            if not b:
                break
            n += len(b)
    return n


def epoch_names(mnt, parts):
    ext = next(n.split(".")[-1] for n in os.listdir(mnt) if n.startswith("epoch-0."))
    if parts == 1:
        return [f"epoch-0.{ext}"]
    return [f"epoch-0.part-{i}-of-{parts}.{ext}" for i in range(parts)]


def cpu_seconds(pid):
    """User and system CPU time process pid has used so far (/proc/PID/stat)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def one_run(binary, dataset, options, delay_us, parts, limit):
    """MB/s of one mount reading `parts` files at once (up to limit bytes in all), the
    daemon's CPU seconds per GB it served meanwhile, and the engine figures stats.json
    reported at the end."""
    env = {"YOUMUFS_READ_DELAY_US": str(delay_us)} if delay_us else None
    with timed_mount(binary, dataset, options, env=env) as (mnt, _, proc):
        names = epoch_names(mnt, parts)
        per = None if limit is None else limit // parts
        cpu0, t0 = cpu_seconds(proc.pid), time.monotonic()
        with concurrent.futures.ProcessPoolExecutor(parts) as pool:
            total = sum(pool.map(read_file, [os.path.join(mnt, n) for n in names],
                                 [per] * parts))
        seconds, cpu = time.monotonic() - t0, cpu_seconds(proc.pid) - cpu0
        with open(os.path.join(mnt, ".youmufs", "stats.json")) as f:
            stats = json.load(f)
    return total / seconds / 1e6, cpu / (total / 1e9), stats.get("io", {})


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", required=True)
    ap.add_argument("--old-bin", help="a build to compare with, side by side")
    ap.add_argument("--shapes", default="a-pyarrow-text-1m,b-pyarrow-text-64k,c-duckdb-text,"
                    "d-pyarrow-tokens,e-pyarrow-int32-jsonl")
    ap.add_argument("--data", default=os.path.join(os.path.dirname(__file__), "data", "shapes"))
    ap.add_argument("--delays-ms", default="0,2,10,50")
    ap.add_argument("--readers", default="1,8")
    ap.add_argument("--mem", default="256M")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--limit-mb", type=int, default=0,
                    help="read at most this many MB per run (0: the whole epoch)")
    ap.add_argument("--out")
    args = ap.parse_args()

    bins = {"new": os.path.abspath(args.bin)}
    if args.old_bin:
        bins["old"] = os.path.abspath(args.old_bin)
    delays = [int(float(d) * 1000) for d in args.delays_ms.split(",")]
    readers = [int(r) for r in args.readers.split(",")]
    limit = args.limit_mb * 1000000 or None
    rows = []
    for name, shape, dataset in make_shapes.present(args.data, args.shapes):
        with tempfile.TemporaryDirectory(prefix="yfs-lat-") as cache_root:
            rows += run_shape(args, bins, name, shape, dataset, cache_root, delays, readers,
                              limit)
    if args.out:
        write_report(args, bins, rows)


def run_shape(args, bins, name, shape, dataset, cache_root, delays, readers, limit):
    """The rows of one shape: every (readers, delay) cell, binaries alternating. Each
    binary's persistent index lives under cache_root, removed by the caller."""
    rows = []
    caches = {tag: os.path.join(cache_root, tag) for tag in bins}
    opts = {tag: f"{shape.mount_options()},mem={args.mem},cache={caches[tag]}" for tag in bins}
    make_shapes.warm_page_cache(dataset)  # every run from memory
    # The persistent index, built once, outside the timing, and one epoch read untimed:
    # the first epoch read of a shape ran at 0.5-0.8 of the next ones (2026-12-04,
    # every shape), which made a first 0 ms cell the slowest of its row.
    for tag, b in bins.items():
        os.mkdir(caches[tag])
        with timed_mount(b, dataset, opts[tag]) as (mnt, _, _proc):
            read_file(os.path.join(mnt, epoch_names(mnt, 1)[0]), None)
    for parts in readers:
        # Every repeat runs every latency in turn, so that the machine's drift over
        # minutes (a 0 ms cell of 8 parts read 134-205 MB/s within an hour on
        # 2026-12-04) falls on all the latencies alike, not on one ratio.
        got = {(delay, tag): [] for delay in delays for tag in bins}
        cpu = {(delay, tag): [] for delay in delays for tag in bins}
        io = {}
        for _ in range(args.repeat):
            for delay in delays:
                for tag, b in bins.items():
                    mbs, cpu_gb, io[delay, tag] = one_run(b, dataset, opts[tag], delay, parts,
                                                          limit)
                    got[delay, tag].append(mbs)
                    cpu[delay, tag].append(cpu_gb)
        for delay in delays:
            row = {"shape": name, "readers": parts, "delay_ms": delay / 1000}
            for tag in bins:
                row[tag] = statistics.median(got[delay, tag])
                row[tag + "_runs"] = got[delay, tag]
                row[tag + "_cpu_s_per_gb"] = statistics.median(cpu[delay, tag])
            row["io"] = io.get((delay, "new"), {})
            rows.append(row)
            print(json.dumps(row), flush=True)
    return rows


def write_report(args, bins, rows):
    base = {(r["shape"], r["readers"]): r for r in rows if r["delay_ms"] == 0}
    lines = ["# Epoch throughput over slow storage", "",
             "```", "python3 bench/latency_bench.py " + " ".join(sys.argv[1:]), "```", "",
             f"mem={args.mem}; every read of a source file delayed by the added latency "
             "(YOUMUFS_READ_DELAY_US); the persistent index built beforehand; median of "
             f"{args.repeat} run(s), binaries and latencies alternating; 2 cores. MB/s of framed epoch "
             "bytes; `x` is the ratio to the same binary with no added latency.", ""]
    head = "| shape | readers | latency | new MB/s | new x |"
    sep = "|---|---:|---:|---:|---:|"
    if "old" in bins:
        head += " old MB/s | old x |"
        sep += "---:|---:|"
    # The daemon's CPU per GB served, and its ratio to no added latency: where the
    # cores are the bottleneck (2 of them here, shared with the readers), a latency
    # that costs CPU per byte costs throughput by the same ratio.
    head += " depth | read p50 / p99 ms | new CPU s/GB | CPU x |"
    sep += "---:|---|---:|---:|"
    lines += [head, sep]
    for r in rows:
        b = base.get((r["shape"], r["readers"]))
        line = (f"| {r['shape']} | {r['readers']} | {r['delay_ms']:g} ms | {r['new']:.0f} | "
                f"{r['new'] / b['new']:.2f} |" if b else "")
        if "old" in bins and b:
            line += f" {r['old']:.0f} | {r['old'] / b['old']:.2f} |"
        io = r.get("io") or {}
        line += (f" {io.get('depth', '')} | {io.get('read_latency_p50_ms', 0):.1f} / "
                 f"{io.get('read_latency_p99_ms', 0):.1f} |")
        if b:
            line += (f" {r['new_cpu_s_per_gb']:.2f} | "
                     f"{r['new_cpu_s_per_gb'] / b['new_cpu_s_per_gb']:.2f} |")
        lines.append(line)
    with open(args.out, "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
