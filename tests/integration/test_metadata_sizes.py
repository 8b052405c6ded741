"""Sizes from metadata: with a page index (and size statistics for strings), len32 and
raw epochs are sized without decoding a single page at mount, and are still exact."""
import json
import os
import random
import struct

import pyarrow as pa
import pyarrow.parquet as pq
import pytest


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    d = tmp_path_factory.mktemp("page-index")
    r = random.Random(7)
    schema = pa.schema([("s", pa.string()), pa.field("n", pa.int32(), nullable=False),
                        ("o", pa.int64())])
    for f in range(3):
        s = [None if r.random() < 0.1 else "".join(r.choice('ab\n"\\x\u00e9') for _ in range(r.randint(0, 60)))
             for _ in range(4000)]
        n = [r.randint(0, 60000) for _ in range(4000)]
        o = [None if r.random() < 0.2 else r.randint(-2**40, 2**40) for _ in range(4000)]
        pq.write_table(pa.table({"s": s, "n": n, "o": o}, schema=schema), d / f"p{f}.parquet",
                       write_page_index=True, data_page_size=2048, row_group_size=1500,
                       compression="zstd")
    return d


def _oracle(d, column):
    out = []
    for f in sorted(os.listdir(d)):
        out += [v for v in pq.read_table(d / f).column(column).to_pylist() if v is not None]
    return out


def _index(cat, d, opts):
    return json.loads(cat(d, ".youmufs/index.json", opts + ",cache=none").stdout)


def _len32(data):
    out, i = [], 0
    while i < len(data):
        (n,) = struct.unpack_from("<I", data, i)
        out.append(data[i + 4:i + 4 + n].decode())
        i += 4 + n
    return out


@pytest.mark.parametrize("opts,column,decode", [
    ("format=len32,column=s", "s", _len32),
    ("format=raw,column=n", "n", lambda b: list(struct.unpack(f"<{len(b) // 4}i", b))),
    ("format=raw,column=o", "o", lambda b: list(struct.unpack(f"<{len(b) // 8}q", b))),
])
def test_sized_from_metadata_and_exact(dataset, cat, opts, column, decode):
    ix = _index(cat, dataset, opts)
    assert ix["metadata_sized_chunks"] == ix["row_groups"], ix
    assert ix["bytes_scanned"] < 20000, f"read {ix['bytes_scanned']} bytes: pages were decoded"
    natural = cat(dataset, "epoch-0.bin" if "raw" in opts else "epoch-0.len32",
                  opts + ",shuffle=none,cache=none").stdout
    assert decode(natural) == _oracle(dataset, column)
    shuffled = cat(dataset, "epoch-1.bin" if "raw" in opts else "epoch-1.len32",
                   opts + ",cache=none").stdout
    assert sorted(decode(shuffled)) == sorted(_oracle(dataset, column))


def test_jsonl_and_narrowing_still_decode(dataset, cat):
    """jsonl needs the escapes, a narrowing dtype the values: those decode at mount."""
    assert _index(cat, dataset, "column=s")["metadata_sized_chunks"] == 0
    assert _index(cat, dataset, "format=raw,column=n,dtype=i32,sep=0")["metadata_sized_chunks"] > 0
    assert _index(cat, dataset, "format=raw,column=n,dtype=u16")["metadata_sized_chunks"] == 0


@pytest.fixture(scope="module")
def plain_dataset(tmp_path_factory):
    """No page index, no dictionary: PLAIN pages, v1 and v2, required and optional."""
    d = tmp_path_factory.mktemp("plain-pages")
    r = random.Random(11)
    schema = pa.schema([("s", pa.string()), pa.field("req", pa.string(), nullable=False),
                        pa.field("n", pa.int64(), nullable=False)])
    for f, version in enumerate(["1.0", "2.0", "1.0"]):
        s = [None if r.random() < 0.1 else "x" * r.randint(0, 40) + '"\n' for _ in range(3000)]
        req = ["y" * r.randint(0, 40) for _ in range(3000)]
        n = [r.randint(-2**40, 2**40) for _ in range(3000)]
        pq.write_table(pa.table({"s": s, "req": req, "n": n}, schema=schema), d / f"p{f}.parquet",
                       use_dictionary=False, data_page_version=version, data_page_size=2048,
                       compression="snappy")
    return d


@pytest.mark.parametrize("opts,column,ext,decode,all_pages", [
    # every page of a required column is sized from its header
    ("format=len32,column=req", "req", "len32", _len32, True),
    ("format=raw,column=n", "n", "bin", lambda b: list(struct.unpack(f"<{len(b) // 8}q", b)), True),
    # an optional column: only its v2 pages (levels apart from the values)
    ("format=len32,column=s", "s", "len32", _len32, False),
])
def test_plain_pages_sized_from_their_headers(plain_dataset, cat, opts, column, ext, decode,
                                               all_pages):
    ix = _index(cat, plain_dataset, opts)
    assert ix["metadata_sized_chunks"] == 0
    if all_pages:
        assert ix["header_sized_pages"] == ix["pages"], ix
    else:
        assert 0 < ix["header_sized_pages"] < ix["pages"], ix
    natural = cat(plain_dataset, f"epoch-0.{ext}", opts + ",shuffle=none,cache=none").stdout
    assert decode(natural) == _oracle(plain_dataset, column)
    shuffled = cat(plain_dataset, f"epoch-2.{ext}", opts + ",cache=none").stdout
    assert sorted(decode(shuffled)) == sorted(_oracle(plain_dataset, column))


def test_chunk_statistics_stand_in_for_a_missing_column_index(tmp_path, cat):
    """pyarrow writes no ColumnIndex when page min/max values are too long; a chunk whose
    statistics count no nulls still needs no per-page null counts."""
    r = random.Random(5)
    vals = ["z" * r.randint(5000, 9000) + str(i) for i in range(400)]
    pq.write_table(pa.table({"s": pa.array(vals, pa.string())}), tmp_path / "long.parquet",
                   write_page_index=True, data_page_size=32768, row_group_size=100)
    ix = _index(cat, tmp_path, "format=len32")
    assert ix["metadata_sized_chunks"] == ix["row_groups"] == 4, ix
    assert _len32(cat(tmp_path, "epoch-0.len32", "format=len32,shuffle=none,cache=none").stdout) == vals
