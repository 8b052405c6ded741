"""One epoch over slow storage, and what the daemon says about it: a mount of one shape of
bench/make_shapes.py with its persistent index built beforehand (outside the timing), the
epoch (or `--parts` part files at once, one process each) read whole, MB/s printed and the
mount's .youmufs/stats.json saved beside it. For looking into one cell of
bench/latency_bench.py's matrix, run after run, without the matrix.

    python3 bench/epoch_stats.py --bin build/youmufs --data bench/data/shapes-1 \\
        --shape c-duckdb-text --delay-ms 50 --parts 8 --out /tmp/c-50-8.json

Extra environment variables (a throwaway build's switches) pass through to the daemon.
"""
import argparse
import concurrent.futures
import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_shapes  # noqa: E402
from benchmount import timed_mount  # noqa: E402
from latency_bench import epoch_names, read_file  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", required=True)
    ap.add_argument("--data", default=os.path.join(os.path.dirname(__file__), "data", "shapes"))
    ap.add_argument("--shape", required=True)
    ap.add_argument("--delay-ms", type=float, default=0)
    ap.add_argument("--parts", type=int, default=1)
    ap.add_argument("--mem", default="256M")
    ap.add_argument("--cache", help="the persistent index's directory, kept between runs "
                    "(default: a temporary one, built first)")
    ap.add_argument("--options", help="more mount options, appended (threads=8,...)")
    ap.add_argument("--out", help="where stats.json goes")
    args = ap.parse_args()

    _, shape, dataset = next(make_shapes.present(args.data, args.shape))
    with tempfile.TemporaryDirectory(prefix="yfs-stats-") as tmp:
        cache = args.cache or os.path.join(tmp, "cache")
        opts = f"{shape.mount_options()},mem={args.mem},cache={cache}"
        if args.options:
            opts += "," + args.options
        if not os.path.isdir(cache):
            os.mkdir(cache)
            with timed_mount(args.bin, dataset, opts) as (mnt, _, _proc):
                read_file(os.path.join(mnt, epoch_names(mnt, 1)[0]), None)
        make_shapes.warm_page_cache(dataset)
        delay_us = int(args.delay_ms * 1000)
        env = {"YOUMUFS_READ_DELAY_US": str(delay_us)} if delay_us else None
        with timed_mount(args.bin, dataset, opts, env=env) as (mnt, _, _proc):
            names = epoch_names(mnt, args.parts)
            t0 = time.monotonic()
            with concurrent.futures.ProcessPoolExecutor(args.parts) as pool:
                total = sum(pool.map(read_file, [os.path.join(mnt, n) for n in names],
                                     [None] * args.parts))
            seconds = time.monotonic() - t0
            with open(os.path.join(mnt, ".youmufs", "stats.json")) as f:
                stats = json.load(f)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(stats, f, indent=1)
    print(f"{args.shape} {args.delay_ms:g} ms, {args.parts} part(s), mem={args.mem}: "
          f"{total / seconds / 1e6:.0f} MB/s ({total / 1e6:.0f} MB in {seconds:.2f} s)")


if __name__ == "__main__":
    main()
