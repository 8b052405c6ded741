#!/usr/bin/env python3
"""pyarrow's single-threaded decode of one column: the reference for decode_bench.c.

    python3 bench/decode_bench.py DATASET COLUMN REPS [--json]

Every *.parquet below DATASET, in sorted path order (youmufs' order), is read
with pq.read_table(path, columns=[col], use_threads=False), with
pyarrow.set_cpu_count(1) and set_io_thread_count(1). Three timings, each best
(and median) of REPS:

Wall time is the measure; the best CPU time (time.process_time) is reported
too, as a check when other work shares the machine.

  read     read_table only. Decoding into Arrow already materialises every
           value: dictionary pages are expanded into one contiguous
           offsets + bytes buffer per row group, so each value's bytes are
           written once. This is the primary reference.
  combine  read_table, then .combine_chunks() on the column: one contiguous
           array per file (a memcpy of all value bytes). Shown because it is
           the brief's suggested "make it usable" step; it costs a copy that
           youmufs does not make.
  touch    read_table, then for every chunk the same three sums decode_bench.c
           computes (value lengths, first bytes, last bytes; 0 for an empty
           value), vectorised with numpy over the Arrow offsets and data
           buffers (zero-copy views). This is the like-for-like counterpart of
           decode_bench.c's pass, which reads every value's length, first and
           last byte; the sums are also checked against decode_bench.c's.

to_pylist() is deliberately not used: it builds one Python str per value, and
that object creation would dominate and measure the interpreter, not the
Parquet decoder. Nulls are skipped, as youmufs skips them.
"""
import argparse
import json
import os
import statistics
import sys
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq


def parquet_files(path):
    if os.path.isfile(path):
        return [path]
    out = []
    for d, _, fs in os.walk(path):
        out += [os.path.join(d, f) for f in fs if f.endswith(".parquet")]
    return sorted(out)


def chunk_sums(arr):
    """(values, bytes, sum of first bytes, sum of last bytes) of a string chunk."""
    if arr.null_count:
        arr = arr.drop_null()
    n = len(arr)
    if n == 0:
        return 0, 0, 0, 0
    large = pa.types.is_large_string(arr.type) or pa.types.is_large_binary(arr.type)
    bufs = arr.buffers()  # validity, offsets, data
    off_dtype = np.int64 if large else np.int32
    offsets = np.frombuffer(bufs[1], dtype=off_dtype, count=arr.offset + n + 1)[arr.offset:]
    data = np.frombuffer(bufs[2], dtype=np.uint8) if bufs[2] is not None else np.zeros(0, np.uint8)
    starts, ends = offsets[:-1], offsets[1:]
    nonempty = ends > starts
    first = data[starts[nonempty]].sum(dtype=np.uint64)
    last = data[ends[nonempty] - 1].sum(dtype=np.uint64)
    return n, int(ends[-1] - starts[0]), int(first), int(last)


def run(files, col, mode):
    totals = [0, 0, 0, 0]
    t0, c0 = time.perf_counter(), time.process_time()
    for f in files:
        column = pq.read_table(f, columns=[col], use_threads=False).column(0)
        if mode == "combine":
            column = column.combine_chunks()
        elif mode == "touch":
            for c in column.chunks:
                for i, x in enumerate(chunk_sums(c)):
                    totals[i] += x
    return time.perf_counter() - t0, time.process_time() - c0, totals


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dataset")
    ap.add_argument("column")
    ap.add_argument("reps", type=int)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    pa.set_cpu_count(1)
    pa.set_io_thread_count(1)
    files = parquet_files(args.dataset)
    if not files:
        sys.exit(f"decode_bench.py: no *.parquet under {args.dataset}")

    result = {"files": len(files), "reps": args.reps, "pyarrow": pa.__version__}
    modes = ("read", "combine", "touch")
    times = {m: [] for m in modes}
    cpu = {m: [] for m in modes}
    run(files, args.column, "read")  # warm-up: page cache, allocator, imports
    # Interleaved, so drift in machine speed hits the three modes alike.
    for _ in range(args.reps):
        for mode in modes:
            t, c, sums = run(files, args.column, mode)
            times[mode].append(t)
            cpu[mode].append(c)
            if mode == "touch":
                result.update(values=sums[0], value_bytes=sums[1], sum_first=sums[2],
                              sum_last=sums[3])
    for mode in modes:
        result[mode + "_best_s"] = min(times[mode])
        result[mode + "_median_s"] = statistics.median(times[mode])
        result[mode + "_best_cpu_s"] = min(cpu[mode])

    if args.json:
        print(json.dumps(result))
    else:
        mb = result["value_bytes"] / 1e6
        print(f"{args.dataset} column {args.column}: {len(files)} files, {result['values']} values, "
              f"{mb:.1f} MB of values (pyarrow {pa.__version__}, 1 thread)")
        for mode in ("read", "combine", "touch"):
            best = result[mode + "_best_s"]
            print(f"{mode:8s} best of {args.reps}: {best:.3f} s (median {result[mode + '_median_s']:.3f} s), "
                  f"best CPU {result[mode + '_best_cpu_s']:.3f} s, {result['values'] / best / 1e6:.2f} M values/s, {mb / best:.0f} MB/s")
        print(f"sums: len {result['value_bytes']} first {result['sum_first']} last {result['sum_last']}")


if __name__ == "__main__":
    main()
