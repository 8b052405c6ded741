"""Rows that span pages: a list column whose v1 data pages cut rows anywhere (a row begins on
one page and goes on in the next, or over several), as DuckDB writes long token lists. Every
framing serves each row whole and exactly once, against pyarrow; st_size, seeks and parts hold.

Files: the hand-written writer (writers/legacy_lists.py, entries_per_page=) at several cuts, so
rows continue over 2..many pages, with null and empty lists; and DuckDB's own writer with its
defaults on enough tokens to fill more than one of its ~16 M-value pages."""

import json
import os
import random
import subprocess

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import typed_data as td
from test_types import _legacy_writer


def _rows(rng, n, nulls):
    rows = []
    for _ in range(n):
        r = rng.random()
        if nulls and r < 0.06:
            rows.append(None)
        elif r < 0.12:
            rows.append([])
        else:
            size = rng.choice([1, 3, 17, 120, 700, 2500])
            rows.append([rng.randint(0, td.TOKEN_MAX) for _ in range(size)])
    return rows


@pytest.fixture(scope="module", params=[("two_level", 7), ("two_level", 333),
                                        ("bare", 50), ("two_level", 4096)])
def split_ds(request, tmp_path_factory):
    """(layout, entries per page, directory, pages that start inside a row)."""
    layout, per_page = request.param
    mod = _legacy_writer()
    d = tmp_path_factory.mktemp(f"span-{layout}-{per_page}")
    rng = random.Random(per_page)
    group, max_def = 111, 2 if layout == "two_level" else 1
    continued = 0
    for f in range(3):
        rows = _rows(rng, 300, layout == "two_level")
        mod.write_legacy(str(d / f"part-{f:03d}.parquet"), layout, rows, rows_per_group=group,
                         entries_per_page=per_page)
        for g in range(0, len(rows), group):
            reps = mod._levels(rows[g:g + group], max_def)[0]
            continued += sum(1 for k in range(per_page, len(reps), per_page) if reps[k])
    return layout, per_page, str(d), continued


def test_rows_spanning_pages_exact(split_ds, cat):
    layout, per_page, d, continued = split_ds
    assert continued > 0, "the writer cut no row: nothing tested"
    leaf = td.leaf_oracle(d, "ids")
    assert len(leaf.rows) > 700

    p = cat(d, "epoch-0.jsonl", {"column": "ids", "shuffle": "none", "rowid": True})
    diff = td.first_difference(p.stdout, b"".join(leaf.expected_jsonl()), width=60)
    assert not diff, f"{layout}/{per_page} natural order: {diff}"

    p2 = cat(d, "epoch-0.jsonl", {"column": "ids", "rowid": True, "seed": 3})
    problem = td.check_rowid_records(p2.stdout, leaf)
    assert not problem, f"{layout}/{per_page} shuffled: {problem}"

    p3 = cat(d, "epoch-0.bin", {"column": "ids", "shuffle": "none", "format": "raw",
                                "dtype": "u16", "sep": td.EOS})
    diff = td.first_difference(p3.stdout, leaf.expected_raw(dtype="u16", sep=td.EOS))
    assert not diff, f"{layout}/{per_page} raw u16 sep: {diff}"

    # chunk=0 reads every index entry on its own (no chunk loads): same bytes
    p4 = cat(d, "epoch-0.jsonl", {"column": "ids", "rowid": True, "seed": 3, "chunk": 0})
    assert p4.stdout == p2.stdout


def test_rows_spanning_pages_mounted(split_ds, mount):
    """Through the mount: exact st_size, parts that add up to the epoch, random preads equal to
    the sequential bytes."""
    layout, per_page, d, _continued = split_ds
    leaf = td.leaf_oracle(d, "ids")
    with mount(d, "column=ids,rowid,seed=5") as m:
        whole = m.read("epoch-0.jsonl")
        assert len(whole) == m.size("epoch-0.jsonl")
        assert not td.check_rowid_records(whole, leaf)
        parts = [m.read(f"epoch-0.part-{i}-of-5.jsonl") for i in range(5)]
        assert sorted(b"".join(parts).splitlines()) == sorted(whole.splitlines())
        rng = random.Random(1)
        with open(m.p("epoch-0.jsonl"), "rb", buffering=0) as f:
            for _ in range(40):
                off = rng.randrange(len(whole))
                n = rng.choice([1, 100, 70000])
                assert os.pread(f.fileno(), n, off) == whole[off:off + n]


def _duckdb_write(src, out):
    script = (
        "import { DuckDBInstance } from '@duckdb/node-api';\n"
        "const inst = await DuckDBInstance.create(':memory:', { threads: '1' });\n"
        "const con = await inst.connect();\n"
        "await con.run('SET preserve_insertion_order = true');\n"
        f"await con.run(\"COPY (SELECT * FROM read_parquet('{src}')) TO '{out}' "
        "(FORMAT parquet)\");\n")
    path = os.path.join(td.WRITERS, "_span_duckdb.mjs")
    with open(path, "w") as f:
        f.write(script)
    try:
        subprocess.run(["node", path], check=True, cwd=td.WRITERS, timeout=300)
    finally:
        os.unlink(path)


def test_duckdb_token_lists(tmp_path, cat):
    """DuckDB's default writer on list<BIGINT> token documents: pages of ~16 M values cut
    rows anywhere. Raw u16 with a separator (the nanoGPT path) and jsonl, exact."""
    problem = td.writer_problem("duckdb")
    if problem:
        pytest.fail(f"DuckDB writer unavailable: {problem}")
    import numpy as np
    g = np.random.default_rng(7)
    lens = g.integers(200, 3000, 11000)
    docs = [g.integers(0, td.TOKEN_MAX, int(n)).tolist() for n in lens]
    src = tmp_path / "src.parquet"
    pq.write_table(pa.table({"input_ids": pa.array(docs, type=pa.list_(pa.int64()))}),
                   str(src))
    d = tmp_path / "duck"
    d.mkdir()
    _duckdb_write(str(src), str(d / "part-000.parquet"))
    md = pq.ParquetFile(str(d / "part-000.parquet")).metadata
    assert md.num_rows == len(docs)
    p = cat(str(d), "epoch-0.bin", {"column": "input_ids", "shuffle": "none", "format": "raw",
                                    "dtype": "u16", "sep": td.EOS})
    want = td.pack([t for doc in docs for t in doc + [td.EOS]], "u16", False)
    assert p.stdout == want
    p2 = cat(str(d), "epoch-0.jsonl", {"column": "input_ids", "rowid": True})
    rows = {}
    for line in p2.stdout.splitlines():
        obj = json.loads(line)
        assert obj["_row"] not in rows
        rows[obj["_row"]] = obj["input_ids"]
    assert len(rows) == len(docs) and all(rows[i] == docs[i] for i in range(len(docs)))
