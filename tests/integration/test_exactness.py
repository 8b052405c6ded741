"""Invariant 1, exactness: an epoch holds exactly the column's non-null values as pyarrow reads
them (a multiset), framed byte-exactly, through the mount and through `youmufs cat`.

The matrix is a pairwise cover of codec x data page v1/v2 x dictionary x nulls (see
datasets.matrix_specs), plus the delta string encodings and one dataset with every feature.
"""

import dataclasses
import os
import shutil

import pytest

import datasets as yds
from conftest import PARQUET_TESTING
from datasets import (ALL_FEATURES, BASIC, BASIC_NONL, Spec, check_rowid_jsonl,
                      expected_records, multiset_diff, split_records)

MATRIX = yds.matrix_specs()
IDS = [s.name for s in MATRIX]

# Datasets without newlines for format=text: one per codec family, dictionary and delta encodings.
TEXT_SPECS = [
    BASIC_NONL,
    Spec(compression="zstd", page_version="2.0", dictionary=False, nulls=True, newlines=False,
         large=1),
    Spec(compression="gzip", page_version="1.0", dictionary=True, nulls=False, newlines=False,
         page_index=True),
    Spec(compression="lz4", page_version="2.0", dictionary=True, nulls=True, newlines=False),
    Spec(compression="brotli", page_version="1.0", dictionary=False, nulls=False, newlines=False,
         encoding="DELTA_BYTE_ARRAY"),
    dataclasses.replace(ALL_FEATURES, newlines=False),
]


def _exact_rowid(data, spec, ds):
    problem = check_rowid_jsonl(data, ds.oracle(spec), spec.column)
    assert not problem, f"{spec.name}: {problem}"


def _exact_multiset(data, spec, ds, fmt):
    try:
        recs = split_records(data, fmt)
    except ValueError as e:
        pytest.fail(f"{spec.name} format={fmt}: broken framing: {e}")
    diff = multiset_diff(recs, expected_records(ds.oracle(spec), fmt, spec.column))
    assert not diff, f"{spec.name} format={fmt}: {diff}"


@pytest.mark.parametrize("spec", MATRIX, ids=IDS)
def test_mount_jsonl_rowid_byte_exact(spec, ds, mount):
    """Every record equals json.dumps of pyarrow's value at its _row; every non-null row once."""
    with mount(ds.path(spec), "rowid") as m:
        data = m.read("epoch-0.jsonl")
        size = m.size("epoch-0.jsonl")
    _exact_rowid(data, spec, ds)
    assert size == len(data), f"st_size {size} != bytes read {len(data)}"


@pytest.mark.parametrize("spec", MATRIX, ids=IDS)
def test_cat_jsonl_rowid_byte_exact(spec, ds, cat):
    data = cat(ds.path(spec), "epoch-0.jsonl", "rowid").stdout
    _exact_rowid(data, spec, ds)


@pytest.mark.parametrize("spec", MATRIX, ids=IDS)
def test_cat_jsonl_multiset(spec, ds, cat):
    """Without rowid: the records are exactly {"col": value} for the non-null values."""
    _exact_multiset(cat(ds.path(spec), "epoch-0.jsonl").stdout, spec, ds, "jsonl")


@pytest.mark.parametrize("spec", MATRIX, ids=IDS)
def test_mount_len32_multiset(spec, ds, mount):
    with mount(ds.path(spec), "format=len32") as m:
        data = m.read("epoch-0.len32")
    _exact_multiset(data, spec, ds, "len32")


@pytest.mark.parametrize("spec", MATRIX, ids=IDS)
def test_cat_len32_multiset(spec, ds, cat):
    _exact_multiset(cat(ds.path(spec), "epoch-0.len32", "format=len32").stdout, spec, ds, "len32")


@pytest.mark.parametrize("spec", TEXT_SPECS, ids=[s.name for s in TEXT_SPECS])
def test_mount_text_multiset(spec, ds, mount):
    with mount(ds.path(spec), "format=text") as m:
        data = m.read("epoch-0.txt")
    _exact_multiset(data, spec, ds, "text")


@pytest.mark.parametrize("spec", TEXT_SPECS, ids=[s.name for s in TEXT_SPECS])
def test_cat_text_multiset(spec, ds, cat):
    _exact_multiset(cat(ds.path(spec), "epoch-0.txt", "format=text").stdout, spec, ds, "text")


def test_text_with_newline_values_refused_at_mount(ds, mount_fails):
    spec = BASIC
    assert any("\n" in v for _, v in ds.oracle(spec)), "dataset must contain a newline value"
    p = mount_fails(ds.path(spec), "format=text")
    err = p.stderr.decode("utf-8", "replace")
    assert p.returncode != 0
    assert "newline" in err.lower(), f"stderr does not mention 'newline': {err!r}"


def test_text_with_newline_values_refused_by_cat(ds, cat):
    p = cat(ds.path(BASIC), "epoch-0.txt", "format=text", check=False)
    err = p.stderr.decode("utf-8", "replace")
    assert p.returncode != 0, "cat format=text succeeded on a column with newlines"
    assert "newline" in err.lower(), f"stderr does not mention 'newline': {err!r}"
    # Whatever was written must not pass for a complete epoch.
    assert len(p.stdout) < len(b"".join(expected_records(ds.oracle(BASIC), "text", "text")))


def test_explicit_column_option(ds, cat):
    """column= selects the column by name (same bytes as the default when it is the only one)."""
    spec = BASIC
    a = cat(ds.path(spec), "epoch-0.jsonl", "column=text,rowid").stdout
    b = cat(ds.path(spec), "epoch-0.jsonl", "rowid").stdout
    _exact_rowid(a, spec, ds)
    assert a == b


def test_all_null_and_empty_values(tmp_path, cat):
    """A column that is entirely null gives an empty epoch; empty strings are records."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    d = tmp_path / "ds"
    d.mkdir()
    pq.write_table(pa.table({"text": pa.array([None] * 500, pa.string())}),
                   d / "a.parquet", data_page_size=256, write_batch_size=32)
    pq.write_table(pa.table({"text": pa.array(["", None, ""] * 200, pa.string())}),
                   d / "b.parquet", data_page_size=256, write_batch_size=32)
    data = cat(d, "epoch-0.jsonl", "rowid").stdout
    orc = yds.oracle(str(d))
    assert len(orc) == 400
    problem = check_rowid_jsonl(data, orc, "text")
    assert not problem, problem
    assert cat(d, "epoch-0.len32", "format=len32").stdout == b"\0\0\0\0" * 400


def test_nested_directory_and_non_parquet_files_ignored(ds, tmp_path, cat):
    """DATASET is a directory: every *.parquet below it, sorted by path; other files ignored."""
    src = ds.path(BASIC)
    d = tmp_path / "nested"
    (d / "part-002").mkdir(parents=True)
    shutil.copy(os.path.join(src, "part-000.parquet"), d / "part-000.parquet")
    shutil.copy(os.path.join(src, "part-001.parquet"), d / "part-001.parquet")
    shutil.copy(os.path.join(src, "part-002.parquet"), d / "part-002" / "data.parquet")
    (d / "_SUCCESS").write_bytes(b"")
    (d / "README.txt").write_text("not parquet\n")
    orc = yds.oracle(str(d))
    assert orc == ds.oracle(BASIC)       # same rows, same global numbering
    data = cat(d, "epoch-0.jsonl", "rowid,shuffle=none").stdout
    assert data == b"".join(expected_records(orc, "jsonl", "text", rowid=True))


def test_single_file_dataset(ds, cat):
    """DATASET may be one file."""
    f = os.path.join(ds.path(BASIC), "part-001.parquet")
    orc = yds.oracle(f)
    data = cat(f, "epoch-0.jsonl", "rowid").stdout
    problem = check_rowid_jsonl(data, orc, "text")
    assert not problem, problem


# Files written by other writers (parquet-mr, Impala, ...), from apache/parquet-testing.
REAL_FILES = [
    ("alltypes_tiny_pages.parquet", "string_col"),
    ("alltypes_tiny_pages_plain.parquet", "date_string_col"),
    ("data_index_bloom_encoding_stats.parquet", "String"),
    ("datapage_v2.snappy.parquet", "a"),
    ("delta_byte_array.parquet", "c_salutation"),
    ("delta_byte_array.parquet", "c_login"),                 # all null: empty epoch
    ("delta_encoding_required_column.parquet", "c_email_address:"),
    ("delta_length_byte_array.parquet", "FRUIT"),
    ("hadoop_lz4_compressed_larger.parquet", "a"),
    ("lz4_raw_compressed_larger.parquet", "a"),
]


@pytest.mark.parametrize("fname,column", REAL_FILES, ids=[f"{f}:{c}" for f, c in REAL_FILES])
def test_parquet_testing_files(fname, column, tmp_path, cat):
    src = os.path.join(PARQUET_TESTING, fname)
    if not os.path.exists(src):
        pytest.skip(f"{src} not present")
    d = tmp_path / "ds"
    d.mkdir()
    shutil.copy(src, d / fname)
    orc = yds.oracle(str(d), column)
    natural = cat(d, "epoch-0.jsonl", f"column={column},rowid,shuffle=none").stdout
    want = b"".join(expected_records(orc, "jsonl", column, rowid=True))
    assert natural == want, (f"shuffle=none differs from pyarrow: {len(natural)} vs {len(want)} "
                             f"bytes; " + multiset_diff(split_records(natural, "jsonl"),
                                                        split_records(want, "jsonl")))
    shuffled = cat(d, "epoch-0.len32", f"column={column},format=len32").stdout
    diff = multiset_diff(split_records(shuffled, "len32"), expected_records(orc, "len32", column))
    assert not diff, diff


def test_bundled_sample_dataset(cat):
    """examples/sample (the README quickstart dataset) serves exactly its non-null texts."""
    sample = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))), "examples", "sample")
    orc = yds.oracle(sample, "text")
    assert 2000 <= len(orc) < yds.total_rows(sample), "sample should have a few nulls"
    problem = check_rowid_jsonl(cat(sample, "epoch-0.jsonl", "rowid").stdout, orc, "text")
    assert not problem, problem


def test_file_order_is_byte_sorted_path_order(ds, tmp_path, cat):
    """Global row numbers follow the files in sorted path order (byte order, not locale or
    numeric order): B < a, part-10 < part-9, and a non-ASCII name last."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    d = tmp_path / "order"
    d.mkdir()
    names = ["part-9.parquet", "a.parquet", "part-10.parquet", "B.parquet", "\u00e9t\u00e9.parquet",
             "zz dir/x.parquet"]
    for i, n in enumerate(names):
        (d / n).parent.mkdir(exist_ok=True)
        vals = [f"{n}#{j}" for j in range(50 + 10 * i)]
        pq.write_table(pa.table({"text": pa.array(vals)}), d / n, data_page_size=256,
                       write_batch_size=16)
    orc = yds.oracle(str(d))
    assert [os.path.relpath(p, d) for p in yds.parquet_files(str(d))] == \
        ["B.parquet", "a.parquet", "part-10.parquet", "part-9.parquet", "zz dir/x.parquet",
         "\u00e9t\u00e9.parquet"]
    data = cat(d, "epoch-0.jsonl", "rowid,shuffle=none").stdout
    assert data == b"".join(expected_records(orc, "jsonl", "text", rowid=True))


def test_empty_files_in_dataset(ds, tmp_path, cat):
    """Files with zero rows (or zero row groups), as Spark writes for empty partitions, add
    nothing and do not shift the row numbers."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    src = ds.path(BASIC)
    d = tmp_path / "withempty"
    d.mkdir()
    shutil.copy(os.path.join(src, "part-000.parquet"), d / "part-000.parquet")
    shutil.copy(os.path.join(src, "part-001.parquet"), d / "part-002.parquet")
    empty = pa.table({"id": pa.array([], pa.int64()), "text": pa.array([], pa.string()),
                      "score": pa.array([], pa.float64())})
    pq.write_table(empty, d / "part-001.parquet")
    pq.write_table(empty, d / "part-003.parquet")
    orc = yds.oracle(str(d))
    data = cat(d, "epoch-0.jsonl", "rowid,shuffle=none").stdout
    assert data == b"".join(expected_records(orc, "jsonl", "text", rowid=True))
    problem = check_rowid_jsonl(cat(d, "epoch-1.jsonl", "rowid").stdout, orc, "text")
    assert not problem, problem
