"""Issue 13: nested fields (structs, lists of lists, lists inside structs, lists of structs) from
several Parquet writers, against pyarrow's to_pylist() as tests/CONTRACT-TYPES.md renders it.

The table (nested_table) has nulls at every level, empty lists, and every 150th row a long
list that spans pages. Each writer (tests/integration/writers/: pyarrow, DuckDB, arrow-rs via
parquet-wasm, polars; fastparquet writes no nested types) writes it with small pages, with and
without dictionaries, data page v1 and v2.

Through `youmufs cat`, per (variant, column):
  jsonl shuffle=none,rowid   byte-exactly the records of pyarrow's values in natural order
  jsonl rowid (page shuffle) every record exact for its _row, every non-null row once
Names: a leaf's path inside a list serves the list; a dotted path into structs serves that
field. Formats that cannot carry the field (raw, text) are refused with a message.
Through the mount for the first variant of each writer: st_size exact, the bytes equal cat's.
"""

import os
import random

import pyarrow as pa
import pytest

import typed_data as td
from typed_data import WVariant, _o

REQUIRE = os.environ.get("YOUMUFS_REQUIRE") == "1"

SCHEMA = pa.schema([
    ("ll", pa.list_(pa.list_(pa.int32()))),
    ("sl", pa.struct([("tags", pa.list_(pa.string()))])),
    ("ls", pa.list_(pa.struct([("x", pa.int64())]))),
    ("ss", pa.struct([("inner", pa.struct([("v", pa.float64())]))])),
    ("lll", pa.list_(pa.list_(pa.list_(pa.string())))),
])
COLUMNS = [f.name for f in SCHEMA]


def _maybe(rng, p, make):
    return None if rng.random() < p else make()


def _list(rng, make, most, long_row):
    n = 300 if long_row else rng.choice([0, 0, 1, 2, 3, most])
    return [make() for _ in range(n)]


def nested_table(file_no: int, rows: int, large: bool) -> pa.Table:
    rng = random.Random(1300 + file_no)
    words = ["a", "", "tag", "ünï", "x" * 40, 'q"\\']
    cols = {c: [] for c in COLUMNS}
    for r in range(rows):
        long_row = r % 150 == 149

        def ints():
            return _list(rng, lambda: _maybe(rng, 0.1, lambda: rng.randint(-2**31, 2**31 - 1)),
                         6, False)

        def strs():
            return _list(rng, lambda: _maybe(rng, 0.1, lambda: rng.choice(words)), 4, False)

        cols["ll"].append(_maybe(rng, 0.08, lambda: _list(
            rng, lambda: _maybe(rng, 0.1, ints), 5, long_row)))
        cols["sl"].append(_maybe(rng, 0.1, lambda: {"tags": _maybe(rng, 0.15, lambda: _list(
            rng, lambda: _maybe(rng, 0.1, lambda: rng.choice(words)), 5, long_row))}))
        cols["ls"].append(_maybe(rng, 0.08, lambda: _list(
            rng, lambda: _maybe(rng, 0.1, lambda: {"x": _maybe(rng, 0.2, lambda: rng.randint(
                -2**63, 2**63 - 1))}), 4, long_row)))
        cols["ss"].append(_maybe(rng, 0.1, lambda: {"inner": _maybe(rng, 0.15, lambda: {
            "v": _maybe(rng, 0.2, lambda: rng.choice([0.5, -0.0, 1e300, rng.random()]))})}))
        cols["lll"].append(_maybe(rng, 0.08, lambda: _list(
            rng, lambda: _maybe(rng, 0.1, lambda: _list(rng, lambda: _maybe(rng, 0.1, strs), 3,
                                                        False)), 3, long_row)))
    return pa.table({c: pa.array(cols[c], SCHEMA.field(c).type) for c in COLUMNS}, schema=SCHEMA)


VARIANTS = [
    WVariant("pyarrow", "snappy-v1-dict", _o(compression="snappy", data_page_size=512,
                                             row_group_size=700)),
    WVariant("pyarrow", "zstd-v2-plain", _o(compression="zstd", data_page_version="2.0",
                                            use_dictionary=False, data_page_size=700)),
    WVariant("pyarrow", "legacy-names", _o(compression="none", use_compliant_nested_type=False,
                                           store_schema=False, data_page_size=900)),
    WVariant("duckdb", "snappy", _o(COMPRESSION="snappy", ROW_GROUP_SIZE=2048)),
    WVariant("duckdb", "zstd-v2", _o(COMPRESSION="zstd", PARQUET_VERSION="V2")),
    WVariant("arrowrs", "snappy-pageindex", _o(compression="SNAPPY", dataPageSize=512,
                                               maxRowGroupSize=600, statistics="Page",
                                               writeBatchSize=32)),
    WVariant("arrowrs", "zstd-v2-nodict", _o(compression="ZSTD", writerVersion="V2",
                                             dictionary=False, dataPageSize=700,
                                             writeBatchSize=50)),
    WVariant("polars", "zstd", _o(compression="zstd", row_group_size=500, data_page_size=600)),
    WVariant("polars", "snappy-nostats", _o(compression="snappy", statistics=False,
                                            data_page_size=400)),
]
VARIANTS = [WVariant(v.writer, v.name, v.options, False, 2, 1500, tuple(COLUMNS))
            for v in VARIANTS]
CELLS = [pytest.param(v, c, id=f"{v.id}-{c}") for v in VARIANTS for c in COLUMNS]
FIRST = {}
for _v in VARIANTS:
    FIRST.setdefault(_v.writer, _v)


@pytest.fixture(scope="session")
def nc(tmp_path_factory):
    return td.TypedCache(str(tmp_path_factory.mktemp("nested")), table=nested_table)


def _path(nc, v):
    try:
        return nc.path(v)
    except td.WriterUnavailable as e:
        if REQUIRE:
            pytest.fail(f"{e} (YOUMUFS_REQUIRE=1)")
        pytest.skip(str(e))


def _oracle(nc, v, col):
    """pyarrow's values of the written file; where pyarrow cannot read what the writer wrote
    (DuckDB's PARQUET_VERSION V2 int32 DELTA_BINARY_PACKED: 'InitBlock EOF', while DuckDB
    reads its values back), the table the writer was given."""
    try:
        return nc.leaf(v, col), True
    except OSError:
        pass
    rows, base = [], 0
    for f in range(v.files):
        arr, key, is_list = td.resolve(nested_table(f, v.rows, v.large).column(col.split(".")[0]),
                                       col)
        rows += [(base + i, t) for i, t in enumerate(td.render_array(arr)) if t is not None]
        base += len(arr)
    return td.Leaf(col, key, is_list, arr.type, rows, [], [], False), False


def _cat_or_xfail(nc, v, col, cat, path, opts):
    leaf, readable = _oracle(nc, v, col)
    p = cat(path, "epoch-0.jsonl", opts, check=readable)
    if p.returncode != 0:
        err = p.stderr.decode("utf-8", "replace").strip()
        assert err, "failed without a message"
        pytest.xfail(f"pyarrow cannot read {v.id}/{col}; youmufs refuses too: {err[:200]}")
    return leaf, p


@pytest.mark.parametrize("v,col", CELLS)
def test_nested_natural_order_exact(v, col, nc, cat):
    path = _path(nc, v)
    leaf, p = _cat_or_xfail(nc, v, col, cat, path,
                            {"column": col, "shuffle": "none", "rowid": True})
    diff = td.first_difference(p.stdout, b"".join(leaf.expected_jsonl()), width=60)
    assert not diff, f"{v.id} column={col} shuffle=none: {diff}"


@pytest.mark.parametrize("v,col", CELLS)
def test_nested_shuffled_rowid_exact(v, col, nc, cat):
    path = _path(nc, v)
    leaf, p = _cat_or_xfail(nc, v, col, cat, path, {"column": col, "rowid": True})
    problem = td.check_rowid_records(p.stdout, leaf)
    assert not problem, f"{v.id} column={col}: {problem}"


# A name inside a list serves the list; a dotted path into structs serves that field.
NAMES = [("ll.list.element.list.element", "ll"), ("ll.list", "ll"), ("ss.inner", "ss.inner"),
         ("ss.inner.v", "ss.inner.v"), ("sl.tags", "sl.tags"),
         ("sl.tags.list.element", "sl.tags"), ("ls.list.element.x", "ls")]


@pytest.mark.parametrize("name,key", NAMES)
def test_nested_names(name, key, nc, cat):
    v = VARIANTS[0]
    path = _path(nc, v)
    leaf = nc.leaf(v, name)
    assert leaf.key == key, "test bug: the oracle's key"
    p = cat(path, "epoch-0.jsonl", {"column": name, "shuffle": "none", "rowid": True})
    diff = td.first_difference(p.stdout, b"".join(leaf.expected_jsonl()), width=60)
    assert not diff, f"column={name} shuffle=none: {diff}"


@pytest.mark.parametrize("col,fmt", [("ll", "raw"), ("ls", "raw"), ("ss", "raw"),
                                     ("sl", "text"), ("sl.tags", "len32")])
def test_nested_formats_refused(col, fmt, nc, cat):
    path = _path(nc, VARIANTS[0])
    ext = {"raw": "bin", "text": "txt", "len32": "len32"}[fmt]
    p = cat(path, f"epoch-0.{ext}", {"column": col, "format": fmt}, check=False)
    err = p.stderr.decode("utf-8", "replace")
    assert p.returncode != 0 and "format=" in err and col.split(".")[0] in err, \
        f"column={col} format={fmt}: exit {p.returncode}, {err.strip()[:300]!r}"


@pytest.mark.parametrize("v", list(FIRST.values()), ids=lambda v: v.id)
def test_nested_mount_sizes(v, nc, cat, mount):
    """Through the mount, every column: st_size exact and the bytes equal cat's."""
    path = _path(nc, v)
    for col in COLUMNS:
        want = cat(path, "epoch-1.jsonl", {"column": col, "rowid": True, "epochs": 2}).stdout
        with mount(path, {"column": col, "rowid": True, "epochs": 2}) as m:
            assert m.size("epoch-1.jsonl") == len(want), f"{v.id} column={col}: st_size"
            assert m.read("epoch-1.jsonl") == want, f"{v.id} column={col}: bytes differ from cat"


def test_files_nested_differently_refused(tmp_path, cat):
    """Same leaf path and levels, other struct nullability: the first file's nesting decides
    how rows are read, so a file that differs is refused, naming it and the field; the leaf's
    own dotted path (no struct in the output) still serves both files."""
    inner = pa.struct([pa.field("x", pa.int32(), nullable=False)])
    a = pa.table({"s": pa.array([{"x": 1}, None], inner)})
    outer = pa.schema([pa.field("s", pa.struct([pa.field("x", pa.int32())]), nullable=False)])
    b = pa.table({"s": pa.array([{"x": None}, {"x": 2}], outer.field("s").type)}, schema=outer)
    import pyarrow.parquet as pq
    pq.write_table(a, str(tmp_path / "a.parquet"))
    pq.write_table(b, str(tmp_path / "b.parquet"))
    p = cat(str(tmp_path), "epoch-0.jsonl", {"column": "s"}, check=False)
    err = p.stderr.decode("utf-8", "replace")
    assert p.returncode != 0 and "b.parquet" in err and "nested differently" in err, err
    p = cat(str(tmp_path), "epoch-0.jsonl", {"column": "s.x", "shuffle": "none"})
    assert p.stdout == b'{"s.x":1}\n{"s.x":2}\n', p.stdout


@pytest.mark.parametrize("col", ["lll", "ls", "sl"])
def test_nested_parts_seek_determinism(col, nc, cat, mount):
    """Invariants 2 and 3 and the parts contract for nested fields: parts hold exactly the
    epoch's records; a read at any offset equals the sequential read; the bytes do not depend
    on threads or mem."""
    import collections
    v = VARIANTS[0]
    path = _path(nc, v)
    leaf = nc.leaf(v, col)
    opts = {"column": col, "rowid": True, "buffer": 200}
    whole = cat(path, "epoch-0.jsonl", opts).stdout
    assert not td.check_rowid_records(whole, leaf)
    for o in ({"threads": 1}, {"threads": 3, "mem": "2M"}):
        assert cat(path, "epoch-0.jsonl", {**opts, **o}).stdout == whole, f"{o} changed bytes"
    with mount(path, opts) as m:
        parts = [m.read(f"epoch-0.part-{i}-of-3.jsonl") for i in range(3)]
        assert sum(m.size(f"epoch-0.part-{i}-of-3.jsonl") for i in range(3)) == len(whole)
        assert collections.Counter(b"".join(parts).splitlines()) == \
            collections.Counter(whole.splitlines()), "parts do not hold the epoch's records"
        rng = random.Random(col)
        with open(m.p("epoch-0.jsonl"), "rb", buffering=0) as f:
            for _ in range(200):
                off = rng.randrange(len(whole) + 10)
                n = rng.choice([1, 7, 4096, 65537])
                assert os.pread(f.fileno(), n, off) == whole[off:off + n], f"pread({n}, {off})"
