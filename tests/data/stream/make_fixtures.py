"""Writes the fixtures of tests/index/test_scan_stream.c (run from anywhere; needs pyarrow,
numpy, and node with @duckdb/node-api in tests/integration/writers):

  legacy_two_level_7.parquet   hand-written list<int32> with null and empty lists, pages of 7
                               level entries (writers/legacy_lists.py): rows continue over many
                               pages
  legacy_bare_50.parquet       the bare repeated layout, pages of 50 entries
  legacy_two_level_cut.parquet the two-level layout, 12,000 rows with null and empty lists in
                               pages of 16,001 entries: pages cut into units, rows going on in
                               the next page (cut_lists_fixture; tests/index/test_stream.c)
  duckdb_tokens.parquet        DuckDB's own writer (zstd, its defaults) on list<BIGINT> token
                               documents with null lists: pages of ~16 M values that cut rows
                               anywhere; values of few distinct tokens so the file stays small
  duckdb_text.parquet          DuckDB's writer (snappy) on a string column with nulls
  snappy_big_pages.parquet     pyarrow, SNAPPY, PLAIN, pages of about 1 MiB (many 64 KiB snappy
                               blocks each): text with nulls, and list<int64> with null and
                               empty lists (marks_fixture; tests/index/test_marks.c)
  duckdb_snappy_tokens.parquet DuckDB's writer, SNAPPY (its default), on 40,000 short token
                               lists with nulls: a page cut into units, and the marks the page
                               pass leaves at lists' units
                               (snappy_tokens_fixture; tests/index/test_stream.c)
  snappy_cut_pages.parquet     pyarrow, SNAPPY, PLAIN, v1 pages of 9,000 rows of text with
                               nulls, one page to a row group: pages cut into units, with the
                               marks the page pass leaves at them (cut_pages_fixture;
                               tests/index/test_stream.c)
"""
import os
import random
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

HERE = os.path.dirname(os.path.abspath(__file__))
WRITERS = os.path.join(HERE, "..", "..", "integration", "writers")
sys.path.insert(0, WRITERS)
import legacy_lists  # noqa: E402


def rows(rng, n):
    out = []
    for _ in range(n):
        r = rng.random()
        if r < 0.06:
            out.append(None)
        elif r < 0.12:
            out.append([])
        else:
            out.append([rng.randint(0, 50000) for _ in range(rng.choice([1, 3, 17, 120, 700]))])
    return out


def duckdb(src, out, compression, extra=""):
    script = os.path.join(WRITERS, "_stream_fixture.mjs")
    with open(script, "w") as f:
        f.write("import { DuckDBInstance } from '@duckdb/node-api';\n"
                "const inst = await DuckDBInstance.create(':memory:', { threads: '1' });\n"
                "const con = await inst.connect();\n"
                "await con.run('SET preserve_insertion_order = true');\n"
                f"await con.run(\"COPY (SELECT * FROM read_parquet('{src}')) TO '{out}' "
                f"(FORMAT parquet, COMPRESSION {compression}{extra})\");\n")
    try:
        subprocess.run(["node", script], check=True, cwd=WRITERS, timeout=600)
    finally:
        os.unlink(script)


def marks_fixture():
    rng = random.Random(11)
    words = ["parquet", "page", "stream", "mark", "block", "snappy", "epoch", "token", "shard"]
    text = [None if k % 37 == 0 else
            " ".join(rng.choice(words) + str(rng.randint(0, 99)) for _ in range(rng.randint(10, 90)))
            for k in range(3000)]
    ids = [None if k % 41 == 0 else [] if k % 43 == 0 else
           [rng.randint(0, 999) for _ in range(rng.randint(1, 80))] for k in range(3000)]
    table = pa.table({"text": pa.array(text, pa.string()),
                      "ids": pa.array(ids, pa.list_(pa.int64()))})
    pq.write_table(table, os.path.join(HERE, "snappy_big_pages.parquet"), compression="snappy",
                   use_dictionary=False, data_page_size=1 << 20, write_statistics=False,
                   row_group_size=3000)


def cut_pages_fixture():
    rng = random.Random(13)
    words = ["unit", "mark", "page", "cut", "resume", "node", "rank", "part"]
    text = [None if k % 29 == 0 else
            " ".join(rng.choice(words) + str(rng.randint(0, 999)) for _ in range(rng.randint(1, 12)))
            for k in range(18000)]
    pq.write_table(pa.table({"text": pa.array(text, pa.string())}),
                   os.path.join(HERE, "snappy_cut_pages.parquet"), compression="snappy",
                   use_dictionary=False, data_page_size=64 << 20, write_statistics=False,
                   row_group_size=9000)


def token_lists(lens, seed, shift, null_every):
    """list<int64> documents of the given lengths, each the first tokens of one fixed
    permutation of 50,000 token ids (shifted by k % shift): too many distinct values for a
    dictionary (DuckDB writes PLAIN, as for real tokens), yet the repeats compress to little.
    Every null_every-th document is null."""
    seq = np.random.default_rng(seed).permutation(50000).astype(np.int64)
    flat = np.concatenate([seq[k % shift:k % shift + n] for k, n in enumerate(lens)])
    offsets = np.concatenate([[0], np.cumsum(lens)]).astype(np.int32)
    mask = np.zeros(len(lens), bool)
    mask[::null_every] = True
    return pa.ListArray.from_arrays(pa.array(offsets), pa.array(flat), mask=pa.array(mask))


def snappy_tokens_fixture():
    """DuckDB's writer with its default codec (SNAPPY) on short token lists: one page of
    40,000 rows cut into units, with the marks the page pass leaves at them
    (tests/index/test_stream.c)."""
    ids = token_lists([(i * 7919) % 23 + 1 for i in range(40000)], 5, 13, 97)
    tmp = os.path.join(HERE, "_src_snappy.parquet")
    pq.write_table(pa.table({"input_ids": ids}), tmp)
    try:
        duckdb(tmp, os.path.join(HERE, "duckdb_snappy_tokens.parquet"), "snappy",
               ", DICTIONARY_SIZE_LIMIT 1")
    finally:
        os.unlink(tmp)


def cut_lists_fixture():
    """Lists cut into pages wherever the cut falls (as DuckDB cuts long lists), uncompressed,
    pages of ~4,000 rows each cut into units: the marks the page pass leaves at lists' units
    whose entry ends in the next page (tests/index/test_stream.c)."""
    rng = random.Random(17)
    rows_ = [None if k % 89 == 0 else [] if k % 97 == 0 else
             [rng.randint(0, 999) for _ in range(rng.randint(1, 7))] for k in range(12000)]
    legacy_lists.write_legacy(os.path.join(HERE, "legacy_two_level_cut.parquet"), "two_level",
                              rows_, rows_per_group=12000, entries_per_page=16001)


def main():
    marks_fixture()
    cut_pages_fixture()
    snappy_tokens_fixture()
    cut_lists_fixture()
    rng = random.Random(7)
    legacy_lists.write_legacy(os.path.join(HERE, "legacy_two_level_7.parquet"), "two_level",
                              rows(rng, 200), rows_per_group=70, entries_per_page=7)
    bare = [r if r is not None else [] for r in rows(rng, 200)]
    legacy_lists.write_legacy(os.path.join(HERE, "legacy_bare_50.parquet"), "bare", bare,
                              rows_per_group=90, entries_per_page=50)

    tmp = os.path.join(HERE, "_src.parquet")
    lens, total, i = [], 0, 0
    while total < 34_000_000:
        n = 200 + (i * 7919) % 2800
        lens.append(n)
        total += n
        i += 1
    ids = token_lists(lens, 7, 7, 101)
    pq.write_table(pa.table({"input_ids": ids}), tmp)
    duckdb(tmp, os.path.join(HERE, "duckdb_tokens.parquet"), "zstd", ", DICTIONARY_SIZE_LIMIT 1")

    words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta"]
    text = [None if k % 53 == 0 else " ".join(words[(k + j) % 6] for j in range(k % 40))
            for k in range(300_000)]
    pq.write_table(pa.table({"text": pa.array(text, pa.string())}), tmp)
    duckdb(tmp, os.path.join(HERE, "duckdb_text.parquet"), "snappy")
    os.unlink(tmp)


if __name__ == "__main__":
    main()
