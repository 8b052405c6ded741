#!/usr/bin/env python3
"""Writes a synthetic text corpus as Parquet with pyarrow, for benchmarks.

Documents are words drawn from a Zipf-distributed vocabulary; their lengths
follow a log-normal distribution with a long tail (most are a few hundred
bytes, a few are tens of KiB), like web text. Deterministic for a given seed.

    python3 bench/make_dataset.py --out bench/data/1g --size 1G
    python3 bench/make_dataset.py --out /tmp/d --size 200M --codec zstd --page-size 64K
"""
import argparse
import os
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

UNITS = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def parse_size(text):
    text = text.strip().upper().removesuffix("B").removesuffix("I")
    if text and text[-1] in UNITS:
        return int(float(text[:-1]) * UNITS[text[-1]])
    return int(text)


def vocabulary(rng, n):
    letters = np.array(list("etaoinshrdlucmfwypvbgkjqxz"))
    weights = np.linspace(2.0, 0.2, len(letters))
    weights /= weights.sum()
    lengths = rng.integers(2, 11, size=n)
    words = ["".join(rng.choice(letters, size=k, p=weights)) for k in lengths]
    return np.array(words, dtype=object)


def documents(rng, words, zipf_p, count):
    """count documents of log-normally distributed word counts."""
    n_words = np.clip(rng.lognormal(mean=4.2, sigma=1.1, size=count), 3, 20000).astype(np.int64)
    ids = rng.choice(len(words), size=int(n_words.sum()), p=zipf_p)
    tokens = words[ids]
    out, pos = [], 0
    for k in n_words:
        out.append(" ".join(tokens[pos:pos + k]))
        pos += k
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="output directory (created)")
    ap.add_argument("--size", default="1G", help="approximate bytes of text (e.g. 1G, 200M)")
    ap.add_argument("--files", type=int, default=8, help="number of Parquet files")
    ap.add_argument("--row-group-rows", type=int, default=50_000)
    ap.add_argument("--page-size", default="1M", help="data page size (pyarrow data_page_size)")
    ap.add_argument("--write-batch-size", type=int, default=64,
                    help="rows per write batch: pyarrow checks the page size once per batch, so "
                         "large batches of long documents overshoot --page-size")
    ap.add_argument("--codec", default="snappy", help="none, snappy, zstd, gzip, brotli, lz4")
    ap.add_argument("--no-dictionary", action="store_true")
    ap.add_argument("--page-index", action="store_true", help="write the OffsetIndex")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()

    target = parse_size(args.size)
    rng = np.random.default_rng(args.seed)
    words = vocabulary(rng, 20_000)
    ranks = np.arange(1, len(words) + 1, dtype=np.float64)
    zipf_p = 1.0 / ranks ** 1.07
    zipf_p /= zipf_p.sum()

    os.makedirs(args.out, exist_ok=True)
    per_file = target // args.files
    row = 0
    for f in range(args.files):
        path = os.path.join(args.out, f"part-{f:05d}.parquet")
        writer = None
        written = 0
        while written < per_file:
            docs = documents(rng, words, zipf_p, 20_000)
            written += sum(len(d) for d in docs)
            table = pa.table({"id": pa.array(range(row, row + len(docs)), pa.int64()),
                              "text": pa.array(docs, pa.string())})
            row += len(docs)
            if writer is None:
                writer = pq.ParquetWriter(
                    path, table.schema,
                    compression=None if args.codec == "none" else args.codec,
                    use_dictionary=not args.no_dictionary,
                    data_page_size=parse_size(args.page_size),
                    write_batch_size=args.write_batch_size,
                    write_page_index=args.page_index)
            writer.write_table(table, row_group_size=args.row_group_rows)
        writer.close()
        print(f"{path}: {written / 1e6:.0f} MB of text", file=sys.stderr)
    print(f"{row} rows in {args.files} files under {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
