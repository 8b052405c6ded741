#!/usr/bin/env python3
"""stream_data.py — the files bench/stream_bench.c decodes.

    python3 bench/stream_data.py OUTDIR [--mb 200]

Writes, with pyarrow, data pages of about 1 MiB (data_page_size), one row
group, no dictionary (PLAIN values, so the pages are as large as asked):

  tokens_snappy.parquet  list<int64> `input_ids`: documents of 50-3,000
                         tokens drawn from a 50,257-word vocabulary, SNAPPY
  tokens_zstd.parquet    the same table, ZSTD
  text_snappy.parquet    string `text`: documents of 200-8,000 bytes of
                         Zipf-distributed words, SNAPPY

each about --mb MB of values uncompressed. Deterministic (seed 1).
"""
import argparse
import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

PAGE = 1 << 20


def tokens(total_bytes, rng):
    n_tokens = total_bytes // 8
    lengths = rng.integers(50, 3001, size=n_tokens // 1500 + 16)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    offsets = offsets[offsets <= n_tokens]
    values = rng.integers(0, 50257, size=int(offsets[-1]), dtype=np.int64)
    ids = pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), pa.array(values))
    return pa.table({"input_ids": ids})


def text(total_bytes, rng):
    vocab = [bytes(rng.integers(97, 123, size=int(k), dtype=np.uint8)) + b" "
             for k in rng.integers(1, 11, size=20000)]
    n_words = total_bytes // 6
    idx = np.minimum(rng.zipf(1.2, size=n_words) - 1, len(vocab) - 1)
    data = b"".join(vocab[i] for i in idx)[:total_bytes]
    lengths = rng.integers(200, 8001, size=len(data) // 4100 + 16)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    offsets = offsets[offsets <= len(data)]
    arr = pa.StringArray.from_buffers(len(offsets) - 1, pa.py_buffer(offsets.astype(np.int32)),
                                      pa.py_buffer(data))
    return pa.table({"text": arr})


def write(table, path, codec):
    # pyarrow checks the page size once per write batch: batches of 64 rows
    # keep the pages of long rows near PAGE.
    pq.write_table(table, path, compression=codec, data_page_size=PAGE, use_dictionary=False,
                   row_group_size=table.num_rows, write_batch_size=64)
    meta = pq.ParquetFile(path).metadata
    cc = meta.row_group(0).column(0)
    print(f"{path}: {table.num_rows} rows, {cc.total_uncompressed_size / 1e6:.1f} MB "
          f"uncompressed, {cc.total_compressed_size / 1e6:.1f} MB {codec}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("outdir")
    ap.add_argument("--mb", type=int, default=200)
    a = ap.parse_args()
    os.makedirs(a.outdir, exist_ok=True)
    rng = np.random.default_rng(1)
    t = tokens(a.mb * 1000 * 1000, rng)
    write(t, os.path.join(a.outdir, "tokens_snappy.parquet"), "snappy")
    write(t, os.path.join(a.outdir, "tokens_zstd.parquet"), "zstd")
    write(text(a.mb * 1000 * 1000, rng), os.path.join(a.outdir, "text_snappy.parquet"), "snappy")


if __name__ == "__main__":
    main()
