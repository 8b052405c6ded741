#!/usr/bin/env python3
"""Hugging Face `datasets`: the json loader over a youmufs epoch file, streaming and not.

An epoch file is plain JSON Lines, so the stock "json" builder reads it; nothing
youmufs-specific is installed or imported.

    youmufs -o column=text,buffer=500 examples/sample /tmp/yfs
    python3 examples/hf_datasets_stream.py /tmp/yfs
    fusermount3 -u /tmp/yfs

  1. streaming=True over epoch-<k>.jsonl: an IterableDataset that reads the file as it goes
     (nothing is copied or cached); the first records are printed and compared with the file.
  2. streaming=False over one part, epoch-<k>.part-<i>-of-<n>.jsonl: datasets converts it to an
     Arrow table in its cache (here a temporary cache_dir) and gives random access.

Caching note: `datasets` fingerprints a local data file by its path and modification time.
Every epoch file of a mount has the same path pattern and the dataset's time, so a second
mount with another seed (or other options) at the same mountpoint can hit the Arrow cache of
the first. Use a cache_dir per mount (as here), or download_mode="force_redownload", or stream.

Exits non-zero if a check fails; lines starting with "OK" report passed checks.
"""

import argparse
import json
import os
import sys
import tempfile

os.environ.setdefault("HF_HUB_OFFLINE", "1")         # the json builder needs no network
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

import datasets  # noqa: E402  (after the environment above)
from datasets import load_dataset  # noqa: E402


def read_jsonl(path):
    with open(path, "rb") as f:
        return [json.loads(line) for line in f]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("mount", help="a youmufs mountpoint (jsonl format)")
    ap.add_argument("--epoch", type=int, default=0)
    ap.add_argument("--column", default="text")
    ap.add_argument("--show", type=int, default=3, help="records to print")
    args = ap.parse_args()
    datasets.disable_progress_bars()
    epoch_file = os.path.join(args.mount, f"epoch-{args.epoch}.jsonl")

    with tempfile.TemporaryDirectory() as cache:
        # 1. Streaming over the whole epoch: iterate a few records.
        stream = load_dataset("json", data_files=epoch_file, split="train", streaming=True,
                              cache_dir=cache)
        first = []
        for rec in stream:
            first.append(rec)
            if len(first) == 50:
                break
        for rec in first[:args.show]:
            print("  ", json.dumps(rec)[:100])
        # The same records, in the same order, as a plain read of the file's first lines.
        with open(epoch_file, "rb") as f:
            expect = [json.loads(next(f)) for _ in range(len(first))]
        if first != expect:
            sys.exit("FAIL streaming: records differ from the file's first lines")
        print(f"OK streaming: first {len(first)} records of {os.path.basename(epoch_file)} "
              f"match the file, in order", flush=True)

        # A streamed dataset composes like any other: shuffle buffer, map, take.
        lengths = [len(r[args.column]) for r in
                   stream.shuffle(seed=1, buffer_size=100).take(10)]
        print(f"   10 lengths after an extra shuffle buffer: {lengths}")

        # 2. Non-streaming over one part file: an Arrow-backed Dataset with len() and indexing.
        part = os.path.join(args.mount, f"epoch-{args.epoch}.part-1-of-2.jsonl")
        ds = load_dataset("json", data_files=part, split="train", cache_dir=cache)
        expect = read_jsonl(part)
        if len(ds) != len(expect) or len(ds) == 0:
            sys.exit(f"FAIL part: datasets has {len(ds)} rows, the file {len(expect)} lines")
        if ds[0] != expect[0] or ds[len(ds) - 1] != expect[-1] or ds[args.column] != \
                [r[args.column] for r in expect]:
            sys.exit("FAIL part: rows differ from the file")
        print(f"OK non-streaming: {os.path.basename(part)} loaded as {len(ds)} rows "
              f"({ds.features}), equal to the file", flush=True)
    print("OK hf_datasets_stream", flush=True)


if __name__ == "__main__":
    main()
