#!/usr/bin/env python3
"""Mount time and epoch read throughput, shuffle=page against shuffle=none,
measured side by side in one run on the same dataset.

For each mode: mount (timed until the mount point answers), read the whole
epoch with `cat > /dev/null` (timed), read stats.json and the daemon's peak
RSS, unmount. With --cold the page cache is dropped before each mount and
read (needs root). Prints a markdown table; --out also writes it to a file.

    python3 bench/throughput.py bench/data/corpus-2g --cold --out bench/results/throughput.md
"""
import argparse
import json
import os
import subprocess
import sys
import time

from benchmount import timed_mount

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def drop_caches():
    subprocess.run(["sync"], check=True)
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


def dataset_bytes(path):
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path)
               for f in fs if f.endswith(".parquet"))


def peak_rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def measure(binary, dataset, options, cold):
    if cold:
        drop_caches()
    with timed_mount(binary, dataset, options) as (mnt, mount_s, proc):
        epoch = os.path.join(mnt, "epoch-0.jsonl")
        size = os.stat(epoch).st_size
        if cold:
            drop_caches()
        t1 = time.monotonic()
        subprocess.run(f"cat '{epoch}' > /dev/null", shell=True, check=True)
        read_s = time.monotonic() - t1
        with open(os.path.join(mnt, ".youmufs", "stats.json")) as f:
            stats = json.load(f)
        with open(os.path.join(mnt, ".youmufs", "index.json")) as f:
            index = json.load(f)
        rss = peak_rss_kib(proc.pid)
    return {"mount_s": mount_s, "read_s": read_s, "epoch_bytes": size,
            "mb_s": size / read_s / 1e6, "rss_mib": rss / 1024, "stats": stats, "index": index}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dataset")
    ap.add_argument("--binary", default=os.path.join(ROOT, "build", "youmufs"))
    ap.add_argument("--options", default="", help="extra -o options for every run")
    ap.add_argument("--cold", action="store_true", help="also measure with dropped page caches")
    ap.add_argument("--out", help="write the markdown table here too")
    args = ap.parse_args()

    extra = f",{args.options}" if args.options else ""
    runs = []
    for cold in ([False, True] if args.cold else [False]):
        for mode in ("none", "page"):
            r = measure(args.binary, args.dataset, f"shuffle={mode}{extra}", cold)
            r.update(mode=mode, cache="cold" if cold else "warm")
            runs.append(r)
            print(f"{r['cache']} shuffle={mode}: {r['mb_s']:.0f} MB/s", file=sys.stderr)

    idx = runs[0]["index"]
    lines = [
        f"Dataset `{args.dataset}`: {dataset_bytes(args.dataset) / 1e9:.2f} GB of Parquet in "
        f"{idx['files']} files, {idx['rows']} rows, {idx['pages']} pages; epoch file "
        f"{runs[0]['epoch_bytes'] / 1e9:.2f} GB (jsonl). Options: `{args.options or 'defaults'}`.",
        "",
        "| cache | shuffle | mount s | read s | MB/s | ratio to none | bytes read from storage | peak RSS MiB |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in runs:
        base = next(b for b in runs if b["cache"] == r["cache"] and b["mode"] == "none")
        lines.append(
            f"| {r['cache']} | {r['mode']} | {r['mount_s']:.2f} | {r['read_s']:.2f} | "
            f"{r['mb_s']:.0f} | {r['mb_s'] / base['mb_s']:.2f} | "
            f"{r['stats']['bytes_read'] / 1e6:.0f} MB | {r['rss_mib']:.0f} |")
    table = "\n".join(lines) + "\n"
    print(table)
    if args.out:
        with open(args.out, "w") as f:
            f.write(f"Command: `python3 bench/throughput.py {' '.join(sys.argv[1:])}`\n\n" + table)


if __name__ == "__main__":
    main()
