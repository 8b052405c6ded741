"""One node of a cluster: a mount that reads one part of n alone, as each rank of a training
job mounts the dataset for itself and reads epoch-<e>.part-<rank>-of-<n>. Per shape of
bench/make_shapes.py and per added latency (YOUMUFS_READ_DELAY_US), one mount reads part
--part of --parts of epoch 0, then of epoch 1; for each epoch: MB/s of framed bytes, time to
the first byte, and MB fetched from the source files (the daemon's read(2)/pread(2) bytes,
/proc/PID/io rchar: reads ahead fetched and never used count too, which stats.json's
bytes_read leaves out). With --old-bin, the same runs on another build side by side,
binaries alternating.

    python3 bench/node_bench.py --bin build/youmufs --old-bin /tmp/old/youmufs \\
        --data bench/data/shapes-1 --out bench/results/node_parts.md

The persistent index is built first (a mount with no delay), so the figures are reads only.
"""
import argparse
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


def fetched(pid):
    """Bytes the process read through read(2) and pread(2) so far."""
    with open(f"/proc/{pid}/io") as f:
        for line in f:
            if line.startswith("rchar:"):
                return int(line.split()[1])
    raise RuntimeError("no rchar in /proc/PID/io")


def read_part(path):
    """(bytes, seconds, seconds to the first byte) of reading path to its end."""
    n, first, t0 = 0, None, time.monotonic()
    with open(path, "rb", buffering=0) as f:
        while True:
            b = f.read(READ_BYTES)
            if first is None:
                first = time.monotonic() - t0
            if not b:
                break
            n += len(b)
    return n, time.monotonic() - t0, first


def one_run(binary, dataset, options, delay_us, part, parts, ext):
    """Per epoch 0 and 1: {mbs, first_ms, fetched_mb, served_mb, from_marks}."""
    env = {"YOUMUFS_READ_DELAY_US": str(delay_us)} if delay_us else None
    out = []
    with timed_mount(binary, dataset, options, env=env) as (mnt, _, proc):
        for epoch in (0, 1):
            before = fetched(proc.pid)
            marks = json.loads(open(os.path.join(mnt, ".youmufs/stats.json")).read())
            n, sec, first = read_part(os.path.join(mnt, f"epoch-{epoch}.part-{part}-of-"
                                                        f"{parts}.{ext}"))
            stats = json.loads(open(os.path.join(mnt, ".youmufs/stats.json")).read())
            out.append({"mbs": n / sec / 1e6, "first_ms": first * 1000,
                        "fetched_mb": (fetched(proc.pid) - before) / 1e6,
                        "served_mb": n / 1e6,
                        "from_marks": stats["streams_from_marks"] -
                        marks["streams_from_marks"]})
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", required=True)
    ap.add_argument("--old-bin", help="a build to compare with, side by side")
    ap.add_argument("--shapes", default="a-pyarrow-text-1m,b-pyarrow-text-64k,c-duckdb-text,"
                    "d-pyarrow-tokens,d-duckdb-tokens,e-pyarrow-int32-jsonl,f-pyarrow-chat")
    ap.add_argument("--data", default=os.path.join(os.path.dirname(__file__), "data", "shapes"))
    ap.add_argument("--delays-ms", default="0,10,50")
    ap.add_argument("--part", type=int, default=3)
    ap.add_argument("--parts", type=int, default=8)
    ap.add_argument("--mem", default="256M")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--out")
    args = ap.parse_args()

    bins = {"new": os.path.abspath(args.bin)}
    if args.old_bin:
        bins["old"] = os.path.abspath(args.old_bin)
    rows = []
    for name, shape, dataset in make_shapes.present(args.data, args.shapes):
        with tempfile.TemporaryDirectory(prefix="yfs-node-") as cache_root:
            caches = {tag: os.path.join(cache_root, tag) for tag in bins}
            opts = {tag: f"{shape.mount_options()},mem={args.mem},epochs=2,"
                         f"cache={caches[tag]}" for tag in bins}
            make_shapes.warm_page_cache(dataset)  # every run from memory
            for tag, b in bins.items():  # the persistent index, outside the timing
                os.mkdir(caches[tag])
                with timed_mount(b, dataset, opts[tag]):
                    pass
            for delay in (int(float(d) * 1000) for d in args.delays_ms.split(",")):
                runs = {tag: [] for tag in bins}
                for _ in range(args.repeat):
                    for tag, b in bins.items():
                        runs[tag].append(one_run(b, dataset, opts[tag], delay, args.part,
                                                 args.parts, shape.ext))
                for epoch in (0, 1):
                    row = {"shape": name, "delay_ms": delay / 1000, "epoch": epoch}
                    for tag in bins:
                        for k in ("mbs", "first_ms", "fetched_mb", "served_mb", "from_marks"):
                            row[f"{tag}_{k}"] = statistics.median(r[epoch][k]
                                                                  for r in runs[tag])
                    rows.append(row)
                    print(json.dumps(row), flush=True)
    if args.out:
        write_report(args, bins, rows)


def write_report(args, bins, rows):
    lines = ["# One node of a cluster: one part read alone", "",
             "```", "python3 bench/node_bench.py " + " ".join(sys.argv[1:]), "```", "",
             f"Part {args.part} of {args.parts} of epochs 0 and 1 read by one mount, "
             f"mem={args.mem}; every read of a source file delayed by the added latency; "
             f"median of {args.repeat} run(s), binaries alternating; 2 cores. MB/s of framed "
             "bytes; first: ms to the first byte; fetched: MB the daemon read from the "
             "source files (rchar), served: MB of the part; marks: units resumed from "
             "marks.", ""]
    tags = list(bins)
    head = "| shape | latency | epoch |" + "".join(
        f" {t} MB/s | {t} first ms | {t} fetched MB | {t} marks |" for t in tags) + \
        " served MB |"
    lines += [head, "|---|---:|---:|" + "---:|" * (4 * len(tags) + 1)]
    for r in rows:
        line = f"| {r['shape']} | {r['delay_ms']:g} ms | {r['epoch']} |"
        for t in tags:
            line += (f" {r[t + '_mbs']:.0f} | {r[t + '_first_ms']:.0f} | "
                     f"{r[t + '_fetched_mb']:.0f} | {r[t + '_from_marks']:.0f} |")
        line += f" {r['new_served_mb']:.0f} |"
        lines.append(line)
    with open(args.out, "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
