#!/usr/bin/env python3
"""Peak resident memory of column=prompt:response at mem=16M, two long columns whose
responses (the values beside the paged prompts, ~50 MB) are far over mem= (issue 13).

    python3 bench/columns_pairs_rss.py BINARY [BINARY ...]

The dataset is tests/integration/test_columns.py's `_long_pairs` (14,000 rows in 2 files),
written under bench/data/. Each binary mounts it (mem=16M, cache=none); the 4 parts of
epoch 0 are read at once in 1 MiB reads; the daemon's VmHWM is compared with invariant 4's
bound, 1.1 x (index + mem) + 16 MiB, as tests/integration/test_memory.py does.
"""
import json
import os
import sys
import threading

from benchmount import MountError, timed_mount

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
import test_columns  # noqa: E402  (the dataset's one generator)

MEM = 16 << 20


def read_parts(mnt, parts):
    served = [0] * parts

    def reader(i):
        with open(os.path.join(mnt, f"epoch-0.part-{i}-of-{parts}.jsonl"), "rb",
                  buffering=0) as f:
            while True:
                b = f.read(1 << 20)
                if not b:
                    break
                served[i] += len(b)

    threads = [threading.Thread(target=reader, args=(i,)) for i in range(parts)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sum(served)


def measure(binary, path):
    try:
        with timed_mount(binary, path, "column=prompt:response,mem=16M,cache=none") as \
                (mnt, _elapsed, proc):
            with open(os.path.join(mnt, ".youmufs", "index.json")) as f:
                idx = json.load(f)
            served = read_parts(mnt, 4)
            with open(f"/proc/{proc.pid}/status") as f:
                hwm = next(int(line.split()[1]) * 1024 for line in f
                           if line.startswith("VmHWM:"))
    except MountError as e:  # a binary that refuses the mount says why
        return f"mount failed: {e.stderr[:300]}"
    bound = 1.1 * (idx["index_memory_bytes"] + MEM) + (16 << 20)
    others = idx.get("other_columns") or {}
    return (f"{served / 2**20:.1f} MiB served; index {idx['index_memory_bytes']} B; peak RSS "
            f"{hwm / 2**20:.1f} MiB, bound {bound / 2**20:.1f} MiB; values file "
            f"{others.get('file_bytes', 0) / 2**20:.1f} MiB")


def main():
    root = os.path.join(ROOT, "bench", "data", "columns-pairs")
    os.makedirs(root, exist_ok=True)
    path = test_columns._long_pairs(root)
    for binary in sys.argv[1:]:
        print(f"{binary}: {measure(binary, path)}")


if __name__ == "__main__":
    main()
