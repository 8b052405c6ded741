#!/usr/bin/env python3
"""`youmufs index --shard`: how long building the persistent index takes in one process and in
N shard processes at once, side by side in one run, and that a mount afterwards reads no page.

    python3 bench/index_shards.py --dataset bench/data/2g --shards 2 --out bench/results/index_shards.md

For each of the configurations below, a fresh cache directory, warm page cache (the dataset's
files read just before), wall time from start to the last process's exit:
  one      one `youmufs index` (threads= default: every core)
  shards   N `youmufs index --shard i/N` at once, each with the default threads
  one/t1   one process with threads=1 pinned to one core, and shards/t1: N processes with
           threads=1, each pinned to a core of its own: what N nodes of one core each gain over
           one such node. Pinned, because threads=1 bounds the decoding threads only: a
           process's reads still run on threads of their own, and unpinned they would borrow
           the core a node of one core does not have (N must not exceed this machine's cores)
After each, a `youmufs cat .youmufs/index.json` with the same cache must reuse every file and
scan no byte (bytes_scanned 0). Each configuration runs --repeat times, alternating; the median
counts.
"""
import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def warm(dataset):
    for dirpath, _, names in os.walk(dataset):
        for n in names:
            if n.endswith(".parquet"):
                with open(os.path.join(dirpath, n), "rb") as f:
                    while f.read(1 << 24):
                        pass


def pin_to(core):
    """A preexec_fn that runs the child on one core only."""
    return lambda: os.sched_setaffinity(0, {core})


def run(binary, dataset, options, shards, cache, pinned):
    opts = f"{options},cache={cache}"
    t0 = time.monotonic()
    cmds = ([[binary, "index", "-o", opts, dataset]] if shards == 1 else
            [[binary, "index", "-o", opts, "--shard", f"{i}/{shards}", dataset]
             for i in range(shards)])
    procs = [subprocess.Popen(c, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              preexec_fn=pin_to(i) if pinned else None)
             for i, c in enumerate(cmds)]
    for p in procs:
        out, err = p.communicate()
        if p.returncode != 0:
            sys.exit(f"{shlex.join(p.args)} failed: {err}")
    seconds = time.monotonic() - t0
    p = subprocess.run([binary, "cat", "-o", opts, dataset, ".youmufs/index.json"],
                       capture_output=True, text=True, check=True)
    ix = json.loads(p.stdout)
    return seconds, ix


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "youmufs"))
    ap.add_argument("--dataset", required=True)
    ap.add_argument("--options", default="column=text")
    ap.add_argument("--shards", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out")
    args = ap.parse_args()
    if args.shards > os.cpu_count():
        sys.exit(f"--shards {args.shards} exceeds the {os.cpu_count()} cores to pin them to")
    configs = [("one", 1, ""), ("shards", args.shards, ""),
               ("one/t1", 1, ",threads=1"), ("shards/t1", args.shards, ",threads=1")]
    times = {name: [] for name, _, _ in configs}
    checks = []
    warm(args.dataset)
    for _ in range(args.repeat):
        for name, shards, extra in configs:
            with tempfile.TemporaryDirectory(prefix="yfs-ixbench-") as cache:
                seconds, ix = run(args.bin, args.dataset, args.options + extra, shards, cache,
                                  pinned=name.endswith("/t1"))
            times[name].append(seconds)
            reused = ix["persistent_index"]["files_reused"]
            checks.append((name, reused == ix["files"] and ix["bytes_scanned"] == 0))
            print(f"{name}: {seconds:.2f} s, mount after: {reused}/{ix['files']} files reused, "
                  f"{ix['bytes_scanned']} bytes scanned", file=sys.stderr)
    med = {k: statistics.median(v) for k, v in times.items()}
    files, pages = ix["files"], ix["pages"]
    gb = sum(f["bytes"] for f in ix["file_list"]) / 1e9
    lines = [
        "# Building the persistent index ahead: one process against shards (issue 15)", "",
        "```", "python3 " + shlex.join([os.path.relpath(sys.argv[0], ROOT)] + sys.argv[1:]),
        "```", "",
        f"Dataset `{args.dataset}`: {files} files, {pages:,} pages, {gb:.2f} GB; options "
        f"`{args.options}`; {os.cpu_count()} cores; median of {args.repeat} runs, "
        "configurations alternating.", "",
        "| configuration | processes | seconds (runs) | / one process |", "|---|---:|---|---:|"]
    for name, shards, _ in configs:
        base = med["one/t1" if name.endswith("/t1") else "one"]
        runs = ", ".join(f"{t:.2f}" for t in times[name])
        lines.append(f"| {name} | {shards} | {med[name]:.2f} ({runs}) | "
                     f"{med[name] / base:.2f} |")
    ok = all(good for _, good in checks)
    lines += ["", f"Mount after every run reused every file and scanned no byte: "
              f"{'yes' if ok else '**NO**'}.", ""]
    text = "\n".join(lines)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
