#!/usr/bin/env python3
"""PyTorch DataLoader over a two-source mixture, on CPU.

A mixture file names the sources and their weights; youmufs serves each epoch interleaved in
those proportions, and its parts deal every source's share, so each DataLoader worker reads
one part file as it would read a single dataset:

    cat > /tmp/mix.json <<'JSON'
    {"sources": [{"path": "/data/web", "weight": 0.7}, {"path": "/data/code", "weight": 0.3}],
     "records": 2000}
    JSON
    youmufs -o column=text,rowid,even=pad /tmp/mix.json /tmp/yfs
    python3 examples/mixture_dataloader.py /tmp/yfs --weights 0.7,0.3 --records 2000
    fusermount3 -u /tmp/yfs

(`rowid` adds "_source", the source's position in the mixture file, and "_row", the record's
row in that source; the script uses them only to check the mixture. A real job needs neither.)

It reads epoch 0 with a DataLoader of 2 workers, each on its own part
(epoch-0.part-<w>-of-2.jsonl), in batches of 32, checks that the epoch holds `records` records
with each source's share as the weights say (largest remainders), that the parts are equally
long (even=pad), and that every window of 200 records is within 10 percentage points of the
weights; exits non-zero if a check fails. Lines starting with "OK" report passed checks.
"""

import argparse
import json
import os
import sys
from collections import Counter
from fractions import Fraction

from torch.utils.data import DataLoader, IterableDataset, get_worker_info


class MixturePart(IterableDataset):
    """Worker w of n reads epoch-<epoch>.part-<w>-of-<n>.jsonl and yields (source, text)."""

    def __init__(self, root, epoch):
        self.root, self.epoch = root, epoch

    def __iter__(self):
        info = get_worker_info()
        w, n = (info.id, info.num_workers) if info else (0, 1)
        name = os.path.join(self.root, f"epoch-{self.epoch}.part-{w}-of-{n}.jsonl")
        with open(name, encoding="utf-8") as f:
            for line in f:
                r = json.loads(line)
                yield r["_source"], r["text"]


def shares(weights, records):
    exact = [Fraction(w) * records / sum(Fraction(x) for x in weights) for w in weights]
    counts = [int(e) for e in exact]
    order = sorted(range(len(weights)), key=lambda i: (-(exact[i] - counts[i]), i))
    for i in order[:records - sum(counts)]:
        counts[i] += 1
    return counts


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mountpoint")
    ap.add_argument("--weights", required=True, help="comma-separated, as in the mixture file")
    ap.add_argument("--records", type=int, required=True)
    a = ap.parse_args()
    weights = [w for w in a.weights.split(",")]

    loader = DataLoader(MixturePart(a.mountpoint, 0), batch_size=32, num_workers=2,
                        collate_fn=lambda batch: batch)
    seen = [r for batch in loader for r in batch]
    counts = Counter(s for s, _ in seen)
    want = shares(weights, a.records)
    got = [counts[i] for i in range(len(weights))]
    if got != want:
        sys.exit(f"FAIL: records per source {got}, expected {want}")
    print(f"OK {len(seen)} records, per source {got} as weights {a.weights} say")

    sizes = [sum(1 for _ in open(os.path.join(a.mountpoint, f"epoch-0.part-{w}-of-2.jsonl")))
             for w in range(2)]
    if len(set(sizes)) != 1:
        sys.exit(f"FAIL: parts of {sizes} records under even=pad")
    print(f"OK parts of {sizes[0]} records each")

    with open(os.path.join(a.mountpoint, "epoch-0.jsonl"), encoding="utf-8") as f:
        order = [json.loads(line)["_source"] for line in f]
    total = sum(float(w) for w in weights)
    for start in range(0, len(order) - 200 + 1):
        window = Counter(order[start:start + 200])
        for i, w in enumerate(weights):
            if abs(window[i] / 200 - float(w) / total) > 0.10:
                sys.exit(f"FAIL: window at {start}: source {i} {window[i]} of 200")
    print("OK every 200-record window within 10 points of the weights")
    print("OK mixture_dataloader")


if __name__ == "__main__":
    main()
