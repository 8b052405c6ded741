"""Where the daemon's threads wait while an epoch is read: a poor man's profiler for one
cell of bench/latency_bench.py. It mounts a shape of bench/make_shapes.py with the added
latency, reads the epoch (or n parts at once) as the latency benchmark does, and while
they run attaches gdb to the daemon a few times to take every thread's stack. Each stack
is folded to its innermost frames of youmufs' own code (the index/, decode/, fs/ names),
and the folds are counted over all samples: a thread asleep in a storage read, one
waiting for a stream another build holds, one decoding. Counts, not times: each sample
is one instant of every thread.

    python3 bench/stack_sample.py --bin build/youmufs --data bench/data/shapes-1 \\
        --shape c-duckdb-text --delay-ms 50 --readers 8 --samples 5

Needs gdb (apt-get install gdb) and the right to attach to the daemon (root, or
ptrace_scope 0). The persistent index is built first, outside the sampling.
"""
import argparse
import collections
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_shapes  # noqa: E402
from benchmount import timed_mount  # noqa: E402
from latency_bench import epoch_names, read_file  # noqa: E402

# Frames of youmufs' own code: its prefixes, and the static helpers of the read path
# whose names say what a thread waits for.
OWN = re.compile(r"^(yfs_|ix_|pq_|sh_|frame|stream|unit|build|worker|io_|fetch|read_|"
                 r"wait_|ahead|reserve|copy_|park|open_page|fill|take|commit)")
FRAME = re.compile(r"^#\d+\s+(?:0x[0-9a-f]+ in )?(\w+) \(", re.M)


def fold(stack, depth):
    """The innermost `depth` frames of our own code, innermost first; or the
    innermost library frames for a thread that runs none of it (fuse, libc)."""
    frames = FRAME.findall(stack)
    own = [f for f in frames if OWN.match(f)]
    return " < ".join((own or frames)[:depth])


def sample(pid, samples, interval):
    """`samples` stack dumps of every thread of pid, `interval` seconds apart."""
    dumps = []
    for _ in range(samples):
        out = subprocess.run(["gdb", "-p", str(pid), "-batch", "-ex", "thread apply all bt 16"],
                             capture_output=True, text=True).stdout
        dumps.append(out)
        time.sleep(interval)
    return dumps


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", required=True)
    ap.add_argument("--data", default=os.path.join(os.path.dirname(__file__), "data", "shapes"))
    ap.add_argument("--shape", required=True)
    ap.add_argument("--delay-ms", type=float, default=50)
    ap.add_argument("--readers", type=int, default=8)
    ap.add_argument("--mem", default="256M")
    ap.add_argument("--samples", type=int, default=5)
    ap.add_argument("--start", type=float, default=0.8,
                    help="seconds into the epoch of the first sample")
    ap.add_argument("--interval", type=float, default=0.2)
    ap.add_argument("--depth", type=int, default=4, help="frames kept per fold")
    ap.add_argument("--top", type=int, default=25)
    args = ap.parse_args()
    if not shutil.which("gdb"):
        sys.exit("stack_sample.py needs gdb: apt-get install gdb")

    found = list(make_shapes.present(args.data, args.shape))
    if len(found) != 1:
        sys.exit("--shape: one shape with its data made (bench/make_shapes.py)")
    name, shape, dataset = found[0]
    counts = collections.Counter()
    with tempfile.TemporaryDirectory(prefix="yfs-stacks-") as cache:
        opts = f"{shape.mount_options()},mem={args.mem},cache={cache}"
        make_shapes.warm_page_cache(dataset)
        with timed_mount(args.bin, dataset, opts):  # the persistent index, untimed
            pass
        env = {"YOUMUFS_READ_DELAY_US": str(int(args.delay_ms * 1000))} if args.delay_ms else None
        with timed_mount(args.bin, dataset, opts, env=env) as (mnt, _, proc):
            paths = [os.path.join(mnt, n) for n in epoch_names(mnt, args.readers)]
            readers = [threading.Thread(target=read_file, args=(p, None)) for p in paths]
            t0 = time.monotonic()
            for r in readers:
                r.start()
            time.sleep(args.start)
            dumps = sample(proc.pid, args.samples, args.interval)
            for r in readers:
                r.join()
            seconds = time.monotonic() - t0
    threads = 0
    for d in dumps:
        stacks = d.split("\nThread ")[1:]
        threads += len(stacks)
        counts.update(fold(s, args.depth) for s in stacks)
    print(f"{name}, {args.readers} reader(s), {args.delay_ms:g} ms a read, mem={args.mem}: "
          f"epoch in {seconds:.1f} s; {args.samples} samples, {threads} thread stacks\n")
    print("| threads | innermost frames of youmufs' code |\n|---:|---|")
    for f, n in counts.most_common(args.top):
        print(f"| {n} | `{f}` |")


if __name__ == "__main__":
    main()
