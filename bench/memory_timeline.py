"""What holds the memory while an epoch is read over slow storage: stats.json sampled
every 50 ms during the reads of bench/latency_bench.py's runs (one reader, or N parts
read at once by N processes, YOUMUFS_READ_DELAY_US added to every storage read), and per
run its MB/s, the mean bytes of each kind of memory (yfs_budget.h) and the share of the
samples in which a demand reservation was waiting for room. With --old-bin, the same
runs on another build, alternating.

    python3 bench/memory_timeline.py --bin build/youmufs --old-bin /tmp/old/youmufs \\
        --data bench/data/shapes-1 --shapes c-duckdb-text --delay-ms 50 --readers 8

The persistent index is built first, outside the runs.
"""
import argparse
import concurrent.futures
import json
import os
import statistics
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_shapes  # noqa: E402
from benchmount import timed_mount  # noqa: E402
from latency_bench import epoch_names, read_file  # noqa: E402

SAMPLE_SECONDS = 0.05


def sampled_run(binary, dataset, options, delay_us, parts, limit):
    """MB/s of one mount reading `parts` files at once, and the memory samples taken
    meanwhile: (bytes of each kind, whether a demand reservation waited)."""
    env = {"YOUMUFS_READ_DELAY_US": str(delay_us)} if delay_us else None
    samples = []
    with timed_mount(binary, dataset, options, env=env) as (mnt, _, _proc):
        stats_path = os.path.join(mnt, ".youmufs", "stats.json")
        done = threading.Event()

        def sample():
            while not done.wait(SAMPLE_SECONDS):
                with open(stats_path) as f:
                    memory = json.load(f)["memory"]
                samples.append(({k: v["bytes"] for k, v in memory["kinds"].items()},
                                memory["demand_waiting"] > 0))

        sampler = threading.Thread(target=sample)
        sampler.start()
        names = epoch_names(mnt, parts)
        per = None if limit is None else limit // parts
        t0 = time.monotonic()
        try:
            with concurrent.futures.ProcessPoolExecutor(parts) as pool:
                total = sum(pool.map(read_file, [os.path.join(mnt, n) for n in names],
                                     [per] * parts))
        finally:
            done.set()
            sampler.join()
        seconds = time.monotonic() - t0
    return total / seconds / 1e6, samples


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", required=True)
    ap.add_argument("--old-bin")
    ap.add_argument("--data", default=os.path.join(os.path.dirname(__file__), "data", "shapes"))
    ap.add_argument("--shapes", default="c-duckdb-text")
    ap.add_argument("--delay-ms", type=float, default=50)
    ap.add_argument("--readers", type=int, default=8)
    ap.add_argument("--mem", default="256M")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--limit-mb", type=int, default=600)
    ap.add_argument("--out")
    args = ap.parse_args()
    bins = {"new": os.path.abspath(args.bin)}
    if args.old_bin:
        bins["old"] = os.path.abspath(args.old_bin)
    limit = args.limit_mb * 1000000 or None
    rows = []
    for name, shape, dataset in make_shapes.present(args.data, args.shapes):
        make_shapes.warm_page_cache(dataset)
        with tempfile.TemporaryDirectory(prefix="yfs-mem-") as cache_root:
            opts = {}
            for tag, b in bins.items():
                cache = os.path.join(cache_root, tag)
                os.mkdir(cache)
                opts[tag] = f"{shape.mount_options()},mem={args.mem},cache={cache}"
                with timed_mount(b, dataset, opts[tag]):
                    pass
            for run in range(args.repeat):
                for tag, b in bins.items():
                    mbs, samples = sampled_run(b, dataset, opts[tag], int(args.delay_ms * 1000),
                                               args.readers, limit)
                    kinds = samples[0][0].keys() if samples else []
                    row = {"shape": name, "binary": tag, "run": run + 1, "mbs": mbs,
                           "samples": len(samples),
                           "mean_mb": {k: statistics.mean(s[0][k] for s in samples) / 1e6
                                       for k in kinds},
                           "waiting": statistics.mean(s[1] for s in samples) if samples else 0}
                    rows.append(row)
                    print(json.dumps(row), flush=True)
    if args.out:
        write_report(args, rows)


def write_report(args, rows):
    kinds = [k for k in rows[0]["mean_mb"] if any(r["mean_mb"][k] >= 0.05 for r in rows)]
    lines = ["# What holds the memory over slow storage", "",
             "```", "python3 bench/memory_timeline.py " + " ".join(sys.argv[1:]), "```", "",
             f"mem={args.mem}, {args.readers} reader(s), {args.delay_ms:g} ms added per "
             f"storage read, the first {args.limit_mb} MB; stats.json sampled every "
             f"{SAMPLE_SECONDS * 1000:.0f} ms. Mean MB of each kind over the samples; "
             "`waiting`: the share of samples with a demand reservation waiting for room.", "",
             "| shape | binary | run | MB/s | " + " | ".join(kinds) + " | waiting |",
             "|---|---|---:|---:|" + "---:|" * len(kinds) + "---:|"]
    for r in rows:
        lines.append(f"| {r['shape']} | {r['binary']} | {r['run']} | {r['mbs']:.0f} | "
                     + " | ".join(f"{r['mean_mb'][k]:.1f}" for k in kinds)
                     + f" | {r['waiting']:.2f} |")
    with open(args.out, "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
