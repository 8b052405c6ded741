"""Issue 3: files from several Parquet writers, every column type of a tokenized-dataset table,
against the record contract of tests/CONTRACT-TYPES.md with pyarrow as the oracle.

Writers (tests/integration/writers/): pyarrow (Arrow C++), DuckDB (C++, npm @duckdb/node-api),
arrow-rs (Rust, npm parquet-wasm), polars (its own Rust writer), fastparquet (Python), each with
option variants (codecs, dictionary on/off and fallback, data page v1/v2, page and row group
sizes, statistics and page index, BYTE_STREAM_SPLIT, DELTA_* encodings): typed_data.VARIANTS.
Every variant holds the same logical table (typed_data.logical_table): a string column with
awkward values and one > 1 MiB value in some variants, int32 / int64 (extremes, negatives,
runs), float / double (NaN, +-inf, -0.0, subnormals), boolean, small token ids (`tok`) and a
`list<int32>` `input_ids` column (empty lists, null lists, a few null elements, a few long
lists spanning pages), all with nulls.

Through `youmufs cat` for the full matrix (variant x column):
  jsonl rowid          every record byte-exact for its _row, every non-null row once
  jsonl shuffle=none   the exact concatenation of the records in natural order
  raw shuffle=none     the exact concatenation of every record's little-endian values
  raw shuffle=page     the same values as a multiset
  raw sep=N            natural order with N after every record; shuffled: #N == #records
  raw dtype=           narrowing and widening that fit give exact bytes; a value that does not
                       fit fails with a message naming the value
Through the mount for the first variant of each writer: jsonl rowid and raw, st_size exact.
"""

import os
import re

import pytest

import typed_data as td
from typed_data import VARIANTS, WVariant

REQUIRE = os.environ.get("YOUMUFS_REQUIRE") == "1"
NUMERIC = ["i32", "i64", "f32", "f64", "b", "tok", "input_ids"]


def _cells(columns_filter):
    out = []
    for v in VARIANTS:
        for c in v.columns:
            if c in columns_filter:
                out.append(pytest.param(v, c, id=f"{v.id}-{c}"))
    return out


ALL_CELLS = _cells(td.COLUMNS)
NUM_CELLS = _cells(NUMERIC)
FIRST = {}
for _v in VARIANTS:
    FIRST.setdefault(_v.writer, _v)
MOUNT_CELLS = [pytest.param(v, c, id=f"{v.id}-{c}") for v in FIRST.values() for c in v.columns]


@pytest.fixture(scope="session")
def tc():
    return td.typed_cache()


class Cell:
    """One (variant, column): its dataset and oracle, or why pyarrow cannot read it."""

    def __init__(self, tc, v: WVariant, col: str):
        self.v, self.col = v, col
        try:
            self.path = tc.path(v)
        except td.WriterUnavailable as e:
            if REQUIRE:
                pytest.fail(f"{e} (YOUMUFS_REQUIRE=1)")
            pytest.skip(str(e))
        self.unreadable = None
        try:
            self.leaf = tc.leaf(v, col)
        except OSError as e:          # pyarrow cannot read what this writer wrote
            self.leaf = None
            self.unreadable = str(e)

    def opts(self, **kw):
        o = {"column": self.col}
        o.update(kw)
        return o


def _pyarrow_cannot_read(cell, cat, name, opts):
    """The writer produced a column pyarrow refuses (DuckDB's PARQUET_VERSION V2 int32
    DELTA_BINARY_PACKED: pyarrow says 'InitBlock EOF', DuckDB reads its values back). There is
    no oracle: youmufs must either serve exactly the logical table or fail cleanly."""
    p = cat(cell.path, name, opts, check=False)
    if p.returncode != 0:
        err = p.stderr.decode("utf-8", "replace")
        assert err.strip(), "failed without a message"
        pytest.xfail(f"pyarrow cannot read {cell.v.id}/{cell.col} ({cell.unreadable}); "
                     f"youmufs refuses too: {err.strip()[:200]}")
    return p


def _expect_from_logical_table(cell):
    """Leaf built from the logical table the writer was given (for pyarrow-unreadable files)."""
    import pyarrow as pa
    rows, raw, base = [], [], 0
    for f in range(cell.v.files):
        arr = td.logical_table(f, cell.v.rows, cell.v.large).column(cell.col)
        for i, (t, val) in enumerate(zip(td.render_array(arr), arr.to_pylist())):
            if t is not None:
                rows.append((base + i, t))
                raw.append((base + i, [e for e in val if e is not None] if isinstance(val, list)
                            else [val]))
        base += len(arr)
    typ = td.SCHEMA.field(cell.col).type
    is_list = pa.types.is_list(typ)
    return td.Leaf(cell.col, cell.col, is_list, typ.value_type if is_list else typ, rows, raw,
                   [], False)


def _leaf_or_fallback(cell, cat, name, opts):
    if cell.leaf is not None:
        return cell.leaf, cat(cell.path, name, opts)
    p = _pyarrow_cannot_read(cell, cat, name, opts)
    return _expect_from_logical_table(cell), p


# ---------------------------------------------------------------------------------------------
# jsonl

@pytest.mark.parametrize("v,col", ALL_CELLS)
def test_cat_jsonl_rowid_exact(v, col, tc, cat):
    """epoch-0 (page shuffle) with rowid: each record is exactly the contract's rendering of
    pyarrow's value at _row; every non-null row exactly once."""
    cell = Cell(tc, v, col)
    leaf, p = _leaf_or_fallback(cell, cat, "epoch-0.jsonl", cell.opts(rowid=True))
    problem = td.check_rowid_records(p.stdout, leaf)
    assert not problem, f"{v.id} column={col}: {problem}"


@pytest.mark.parametrize("v,col", ALL_CELLS)
def test_cat_jsonl_natural_order_exact(v, col, tc, cat):
    """shuffle=none without rowid: the file is exactly the records in dataset order."""
    cell = Cell(tc, v, col)
    leaf, p = _leaf_or_fallback(cell, cat, "epoch-0.jsonl", cell.opts(shuffle="none"))
    want = b"".join(leaf.expected_jsonl(rowid=False))
    if leaf.loose:
        pytest.skip("binary column: compared as JSON values in the rowid test")
    diff = td.first_difference(p.stdout, want, width=40)
    assert not diff, f"{v.id} column={col} shuffle=none: {diff}"


# ---------------------------------------------------------------------------------------------
# raw

@pytest.mark.parametrize("v,col", NUM_CELLS)
def test_cat_raw_natural_order_exact(v, col, tc, cat):
    """format=raw,shuffle=none: every record's values little-endian in the column's own dtype,
    back to back in dataset order, null elements skipped."""
    cell = Cell(tc, v, col)
    leaf, p = _leaf_or_fallback(cell, cat, "epoch-0.bin", cell.opts(format="raw", shuffle="none"))
    diff = td.first_difference(p.stdout, leaf.expected_raw())
    assert not diff, f"{v.id} column={col} format=raw dtype={leaf.raw_dtype()}: {diff}"


@pytest.mark.parametrize("v,col", NUM_CELLS)
def test_cat_raw_shuffled_multiset(v, col, tc, cat):
    """format=raw with the default page shuffle: the same values as a multiset."""
    cell = Cell(tc, v, col)
    leaf, p = _leaf_or_fallback(cell, cat, "epoch-0.bin", cell.opts(format="raw"))
    dt = leaf.raw_dtype()
    found = sorted(map(td.sort_key, td.unpack_all(p.stdout, dt)))
    want = sorted(map(td.sort_key, td.unpack_all(leaf.expected_raw(), dt)))
    if found != want:
        from collections import Counter
        cf, cw = Counter(found), Counter(want)
        pytest.fail(f"{v.id} column={col} format=raw: {len(found)} values, expected {len(want)}; "
                    f"missing {list((cw - cf).items())[:5]}, unexpected "
                    f"{list((cf - cw).items())[:5]}")
    if len(leaf.raw) > 50:
        assert p.stdout != leaf.expected_raw(), "shuffle=page returned the natural order"


def _sep_value(leaf):
    """A separator that is not a value of the column (EOS for token ids)."""
    vals = set(leaf.values_flat())
    if leaf.raw_dtype() == "u8":
        return 2
    if leaf.is_float:     # an integer N, stored as the float dtype's value (-7 -> -7.0)
        return next(x for x in (-7, 12345, -1) if float(x) not in vals)
    return next(x for x in (td.EOS, 7, 99991, -3) if x not in vals)


@pytest.mark.parametrize("v,col", NUM_CELLS)
def test_cat_raw_sep(v, col, tc, cat):
    """sep=N: N after every record (also after an empty list). Natural order: exact bytes.
    Page shuffle: the number of N elements equals the number of records."""
    cell = Cell(tc, v, col)
    leaf = cell.leaf
    if leaf is None:
        leaf, _ = _leaf_or_fallback(cell, cat, "epoch-0.bin", cell.opts(format="raw"))
    sep = _sep_value(leaf)
    sep_s = str(sep)
    p = cat(cell.path, "epoch-0.bin", cell.opts(format="raw", shuffle="none", sep=sep_s))
    diff = td.first_difference(p.stdout, leaf.expected_raw(sep=sep))
    assert not diff, f"{v.id} column={col} format=raw,sep={sep_s},shuffle=none: {diff}"
    p = cat(cell.path, "epoch-0.bin", cell.opts(format="raw", sep=sep_s))
    vals = td.unpack_all(p.stdout, leaf.raw_dtype())
    n = sum(1 for x in vals if x == sep)
    assert n == len(leaf.raw), (f"{v.id} column={col} format=raw,sep={sep_s}: {n} separators, "
                                f"{len(leaf.raw)} records")
    assert len(vals) == len(leaf.values_flat()) + len(leaf.raw)


# dtype cases per column: (dtype, fits). fits=False: the mount/cat must fail naming a value.
DTYPE_CASES = {
    "tok": [("u16", True), ("u32", True), ("i64", True), ("f32", True), ("i8", False)],
    "input_ids": [("u16", True), ("i64", True), ("f64", True), ("i8", False)],
    "i32": [("i64", True), ("f64", True), ("u16", False), ("u32", False), ("f32", False)],
    "i64": [("i32", False), ("u64", False), ("f64", False)],
    "f64": [("f32", True), ("i32", False)],
    "f32": [("f64", True), ("i64", False)],
    "b": [("u8", True)],
}
DTYPE_CELLS = [pytest.param(v, c, dt, fits, id=f"{v.id}-{c}-{dt}")
               for v in VARIANTS for c in v.columns for dt, fits in DTYPE_CASES.get(c, ())]


def offending_values(leaf, dtype):
    """Values of the column that cannot go to `dtype` (the message must name one of them)."""
    bad = []
    for v in leaf.values_flat():
        try:
            td.pack([v], dtype, leaf.is_float)
        except td.RangeError:
            bad.append(v)
    return bad


def _numbers_in(text):
    return set(re.findall(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?", text))


def check_dtype_failure(p, leaf, dtype, what):
    err = p.stderr.decode("utf-8", "replace")
    assert p.returncode != 0, f"{what}: dtype={dtype} should fail, exit 0"
    assert err.strip(), f"{what}: dtype={dtype} failed without a message"
    if leaf.is_float and DTYPES_INT(dtype):
        assert dtype in err or "float" in err.lower() or "integer" in err.lower(), \
            f"{what}: float column with dtype={dtype}: message says neither: {err!r}"
        return
    bad = offending_values(leaf, dtype)
    assert bad, f"test bug: no value of the column is out of range for {dtype}"
    named = {str(b) for b in bad} & _numbers_in(err)
    assert named, (f"{what}: dtype={dtype}: the message names none of the {len(bad)} values "
                   f"that do not fit (e.g. {bad[:3]}): {err.strip()[:400]!r}")


def DTYPES_INT(dtype):
    return td.DTYPES[dtype][1] is not None


@pytest.mark.parametrize("v,col,dtype,fits", DTYPE_CELLS)
def test_cat_raw_dtype(v, col, dtype, fits, tc, cat):
    cell = Cell(tc, v, col)
    leaf = cell.leaf
    opts = cell.opts(format="raw", shuffle="none", dtype=dtype)
    if leaf is None:              # pyarrow cannot read it: the table the writer was given
        leaf = _expect_from_logical_table(cell)
    p = cat(cell.path, "epoch-0.bin", opts, check=False)
    what = f"{v.id} column={col} format=raw,dtype={dtype}"
    if fits:
        assert p.returncode == 0, f"{what}: exit {p.returncode}: {p.stderr.decode()[-500:]}"
        diff = td.first_difference(p.stdout, leaf.expected_raw(dtype=dtype))
        assert not diff, f"{what}: {diff}"
    else:
        check_dtype_failure(p, leaf, dtype, what)


# ---------------------------------------------------------------------------------------------
# column= aliases for lists

@pytest.mark.parametrize("v", [v for v in VARIANTS if "input_ids" in v.columns], ids=lambda v: v.id)
def test_cat_list_leaf_path_alias(v, tc, cat):
    """column=input_ids and column=<the leaf's dotted path> (input_ids.list.element, or
    .list.item for legacy/arrow-rs names) serve the same bytes, keyed "input_ids"."""
    cell = Cell(tc, v, "input_ids")
    first = os.path.join(cell.path, sorted(os.listdir(cell.path))[0])
    leaves = [p for p, _r in td.leaf_columns(first) if p.startswith("input_ids.")]
    assert len(leaves) == 1, leaves
    a = cat(cell.path, "epoch-0.jsonl", {"column": "input_ids", "rowid": True}).stdout
    b = cat(cell.path, "epoch-0.jsonl", {"column": leaves[0], "rowid": True}).stdout
    assert a == b, f"{v.id}: column=input_ids and column={leaves[0]} differ"


# ---------------------------------------------------------------------------------------------
# through the mount (first variant of each writer)

@pytest.mark.parametrize("v,col", MOUNT_CELLS)
def test_mount_jsonl_rowid_and_raw(v, col, tc, mount):
    cell = Cell(tc, v, col)
    if cell.leaf is None:
        pytest.skip(f"pyarrow cannot read {v.id}/{col}: covered by the cat tests")
    leaf = cell.leaf
    with mount(cell.path, cell.opts(rowid=True)) as m:
        data = m.read("epoch-0.jsonl")
        size = m.size("epoch-0.jsonl")
    problem = td.check_rowid_records(data, leaf)
    assert not problem, f"{v.id} column={col} (mounted): {problem}"
    assert size == len(data), f"st_size {size} != bytes read {len(data)}"
    if leaf.raw_dtype() is None:
        return
    with mount(cell.path, cell.opts(format="raw", shuffle="none")) as m:
        names = os.listdir(m.path)
        assert "epoch-0.bin" in names, f"format=raw: root lists {names}"
        data = m.read("epoch-0.bin", chunk=4093)     # reads not aligned to values
        size = m.size("epoch-0.bin")
    diff = td.first_difference(data, leaf.expected_raw())
    assert not diff, f"{v.id} column={col} format=raw (mounted): {diff}"
    assert size == len(data), f"st_size {size} != bytes read {len(data)}"


@pytest.mark.parametrize("col,dtype", [("input_ids", "i8"), ("i32", "u16"), ("i64", "i32")])
def test_mount_dtype_out_of_range_fails(col, dtype, tc, mount_fails):
    """A value that does not fit the dtype is a mount error naming the value."""
    v = FIRST["pyarrow"]
    cell = Cell(tc, v, col)
    p = mount_fails(cell.path, cell.opts(format="raw", dtype=dtype))
    check_dtype_failure(p, cell.leaf, dtype, f"mount {v.id} column={col}")


@pytest.mark.parametrize("col", ["tok", "input_ids"])
def test_mount_dtype_u16_tokens(col, tc, mount):
    """The tokenized-dataset use: input ids as u16 with an EOS separator, through the mount."""
    v = FIRST["pyarrow"]
    cell = Cell(tc, v, col)
    with mount(cell.path, cell.opts(format="raw", dtype="u16", sep=td.EOS,
                                    shuffle="none")) as m:
        data = m.read("epoch-0.bin", chunk=4095)
        size = m.size("epoch-0.bin")
    diff = td.first_difference(data, cell.leaf.expected_raw(dtype="u16", sep=td.EOS))
    assert not diff, f"{v.id} column={col} dtype=u16,sep={td.EOS} (mounted): {diff}"
    assert size == len(data)


def test_writer_variants_hold_the_logical_table(tc):
    """Sanity of the test data itself: what pyarrow reads back is the table each writer was
    given (floats compared by value and NaN-ness; DuckDB merges 0.0/-0.0 in float dictionaries;
    fastparquet, going through pandas, stores NaN as null; columns pyarrow cannot read are
    listed)."""
    import math
    import pyarrow.parquet as pq
    import datasets as yds

    def norm(x, nan_is_null=False):
        if isinstance(x, float):
            return (None if nan_is_null else "nan") if math.isnan(x) else (0.0 if x == 0 else x)
        if isinstance(x, list):
            return [norm(e) for e in x]
        return x
    problems, unreadable = [], []
    for v in VARIANTS:
        try:
            d = tc.path(v)
        except td.WriterUnavailable as e:
            if REQUIRE:
                pytest.fail(str(e))
            continue
        for i, f in enumerate(yds.parquet_files(d)):
            want = td.logical_table(i, v.rows, v.large)
            for c in v.columns:
                try:
                    got = pq.read_table(f, columns=[c]).column(c).to_pylist()
                except OSError as e:
                    unreadable.append(f"{v.id}/{os.path.basename(f)}/{c}: {e}")
                    continue
                fp = v.writer == "fastparquet"
                if [norm(x, fp) for x in got] != [norm(x, fp) for x in
                                                  want.column(c).to_pylist()]:
                    problems.append(f"{v.id}/{os.path.basename(f)}/{c}")
    print("columns pyarrow cannot read:", unreadable)
    assert not problems, f"writers changed the data: {problems}"


# ---------------------------------------------------------------------------------------------
# raw with parts, seeks and determinism (the invariants README.md states for the raw framing)

@pytest.mark.parametrize("col", ["input_ids", "f64"])
def test_cat_raw_parts_union_is_the_epoch(col, tc, cat):
    """The 4 parts of epoch 1 (sep after every record) hold the epoch's values and records."""
    v = FIRST["pyarrow"]
    cell = Cell(tc, v, col)
    leaf = cell.leaf
    sep = _sep_value(leaf)
    dt = leaf.raw_dtype()
    vals, seps = [], 0
    for i in range(4):
        p = cat(cell.path, f"epoch-1.part-{i}-of-4.bin",
                cell.opts(format="raw", sep=sep, buffer=200))
        part = td.unpack_all(p.stdout, dt)
        seps += sum(1 for x in part if x == sep)
        vals += [x for x in part if x != sep]
    assert seps == len(leaf.raw), f"{seps} separators in the parts, {len(leaf.raw)} records"
    assert sorted(map(td.sort_key, vals)) == sorted(map(td.sort_key, leaf.values_flat()))


def test_cat_raw_deterministic_and_fresh(tc, cat):
    v = FIRST["pyarrow"]
    cell = Cell(tc, v, "input_ids")
    a = cat(cell.path, "epoch-1.bin", cell.opts(format="raw", seed=5)).stdout
    b = cat(cell.path, "epoch-1.bin", cell.opts(format="raw", seed=5, threads=1)).stdout
    c = cat(cell.path, "epoch-2.bin", cell.opts(format="raw", seed=5)).stdout
    assert a == b, "same seed and epoch, different thread count: different bytes"
    assert a != c, "epochs 1 and 2 are identical"


def test_mount_raw_random_reads(tc, mount):
    """Seekability on raw: preads at random (unaligned) offsets equal the sequential bytes."""
    import random
    v = FIRST["pyarrow"]
    cell = Cell(tc, v, "input_ids")
    with mount(cell.path, cell.opts(format="raw", dtype="u16", sep=td.EOS)) as m:
        whole = m.read("epoch-0.bin")
        rng = random.Random(3)
        fd = os.open(m.p("epoch-0.bin"), os.O_RDONLY)
        try:
            for _ in range(200):
                off = rng.randrange(len(whole))
                n = rng.choice([1, 3, 4095, 65537])
                got = os.pread(fd, n, off)
                assert got == whole[off:off + n], f"pread({n}, {off}) differs"
            assert os.pread(fd, 10, len(whole)) == b""
        finally:
            os.close(fd)
    vals = td.unpack_all(whole, "u16")
    assert sum(1 for x in vals if x == td.EOS) == len(cell.leaf.raw)
