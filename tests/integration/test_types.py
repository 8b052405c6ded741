"""CONTRACT-TYPES.md, type by type, on small pyarrow-written files: every logical type of the
contract's table in jsonl (byte-exact, shuffle=none,rowid) and, for the numeric ones, raw with
the default dtype; struct leaves keyed by dotted path; list spellings; the refusals (lists of
lists, maps, raw on strings, floats to integer dtypes); the out-of-range dtype error naming the
file, the row and the value (cat and mount).

Contract choices made here where CONTRACT-TYPES.md leaves room (what a training-cluster user
expects):
  - binary without annotation: the escape (\\u00e9) or the UTF-8 character are both accepted
    (compared as JSON values); everything else byte-exact.
  - timestamps with any time zone (not only UTC) are isAdjustedToUTC in Parquet: `Z`.
  - a date before 1970 and a timestamp before 1970 with a fraction: calendar fields and a
    non-negative fraction (1969-12-31T23:59:59.999), as Python/pyarrow show them.
  - the row in the out-of-range message may be the row within the file or the global row.
"""

import datetime
import decimal
import os
import re

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import typed_data as td

D = decimal.Decimal


def _table():
    n = 12
    cols = {
        "u8": pa.array([0, 255, 7, None, 128, 1] * 2, pa.uint8()),
        "u16": pa.array([0, 65535, 300, None, 32768, 1] * 2, pa.uint16()),
        "u32": pa.array([0, 2 ** 32 - 1, 2 ** 31, None, 7, 1] * 2, pa.uint32()),
        "u64": pa.array([0, 2 ** 64 - 1, 2 ** 63, None, 2 ** 63 - 1, 1] * 2, pa.uint64()),
        "i8": pa.array([-128, 127, 0, None, -1, 5] * 2, pa.int8()),
        "i16": pa.array([-32768, 32767, 0, None, -1, 5] * 2, pa.int16()),
        "dec_i32": pa.array([D("-12.50"), D("0.05"), D("-0.05"), None, D("9999999.99"),
                             D("0.00")] * 2, pa.decimal128(9, 2)),
        "dec_i64": pa.array([D("-12.5000"), D("0.0001"), D("99999999999999.9999"), None,
                             D("-0.0010"), D("1.0000")] * 2, pa.decimal128(18, 4)),
        "dec_flba": pa.array([D("1234567890123456789012345.12345"), D("-0.00001"), D("0"),
                              None, D("-99999999999999999999999.99999"), D("3.14159")] * 2,
                             pa.decimal128(30, 5)),
        "dec_s0": pa.array([D("-12"), D("0"), D("123456789"), None, D("7"), D("-1")] * 2,
                           pa.decimal128(9, 0)),
        "date": pa.array([0, -1, 19000, None, -719162, 2932896] * 2, pa.date32()),
        "ts_ms_utc": pa.array([0, -1, 1700000000123, None, -62135596800000, 253402300799999] * 2,
                              pa.timestamp("ms", tz="UTC")),
        "ts_us": pa.array([0, -1, 1700000000123456, None, 1, 86399999999] * 2,
                          pa.timestamp("us")),
        "ts_ns_utc": pa.array([0, -1, 1700000000123456789, None, 2 ** 62, -2 ** 62] * 2,
                              pa.timestamp("ns", tz="UTC")),
        "ts_us_ny": pa.array([0, 1700000000123456, -1, None, 5, 6] * 2,
                             pa.timestamp("us", tz="America/New_York")),
        "t_ms": pa.array([0, 86399999, 45296789, None, 1, 60000] * 2, pa.time32("ms")),
        "t_us": pa.array([0, 86399999999, 45296789012, None, 1, 60000000] * 2,
                         pa.time64("us")),
        "t_ns": pa.array([0, 86399999999999, 45296789012345, None, 1, 999999999] * 2,
                         pa.time64("ns")),
        "bin": pa.array([bytes(range(0, 64)), bytes(range(64, 128)), bytes(range(128, 256)),
                         None, b"", b"\xff\x00\"\\\n"] * 2, pa.binary()),
        "flba": pa.array([b"\x00\x01\x02\x03", b"\xff\xfe\xfd\xfc", b"abcd", None, b"\"\\\n\t",
                          b"\x80\x81\x7f\x20"] * 2, pa.binary(4)),
        "dict_s": pa.array(["a", "b", "a", None, "é\n\"", "a"] * 2).dictionary_encode(),
        "l_str": pa.array([["a", None, "é\n"], [], None, ["\"q\""], [""], ["x"] * 3] * 2,
                          pa.list_(pa.string())),
        "l_f64": pa.array([[0.1, float("nan"), float("inf")], [-0.0], None, [], [1e16, None],
                           [1.5e-7]] * 2, pa.list_(pa.float64())),
        "l_f32": pa.array([[0.1, 1.0], [], None, [None], [3.0], [-2.5]] * 2,
                          pa.list_(pa.float32())),
        "l_bool": pa.array([[True, False, None], [], None, [False], [True], [True, True]] * 2,
                           pa.list_(pa.bool_())),
        "l_i64": pa.array([[2 ** 63 - 1, -2 ** 63], [], None, [0, None, 1], [5], [-1]] * 2,
                          pa.list_(pa.int64())),
        "ll_i64": pa.array([[1, 2], [], None, [3], [4, 5, 6], [7]] * 2,
                           pa.large_list(pa.int64())),
        "l_date": pa.array([[0, -1], [], None, [19000], [1], [2]] * 2, pa.list_(pa.date32())),
        "st": pa.array([{"a": 1, "b": "x"}, {"a": None, "b": "y"}, None, {"a": -3, "b": None},
                        {"a": 2 ** 31 - 1, "b": ""}, {"a": 0, "b": "é"}] * 2,
                       pa.struct([("a", pa.int32()), ("b", pa.string())])),
        "b": pa.array([True, False, None, True, False, True] * 2, pa.bool_()),
    }
    assert all(len(a) == n for a in cols.values()), {k: len(a) for k, a in cols.items()}
    return pa.table(cols)


# (column= value, expected jsonl key)
SERVED = [(c, c) for c in _table().column_names if c != "st"] + [("st.a", "st.a"),
                                                                   ("st.b", "st.b")]


@pytest.fixture(scope="module")
def types_ds(tmp_path_factory):
    d = tmp_path_factory.mktemp("types")
    t = _table()
    # two files: the second written with data page v2 and no dictionary
    pq.write_table(t, str(d / "part-000.parquet"), data_page_size=64, write_batch_size=4,
                   store_decimal_as_integer=True)
    pq.write_table(t, str(d / "part-001.parquet"), data_page_version="2.0",
                   use_dictionary=False, compression="zstd", store_decimal_as_integer=True)
    return str(d)


def _check_physical(types_ds):
    md = pq.ParquetFile(os.path.join(types_ds, "part-000.parquet")).schema
    phys = {md.column(i).path: md.column(i).physical_type for i in range(len(md))}
    assert phys["dec_i32"] == "INT32" and phys["dec_i64"] == "INT64" and \
        phys["dec_flba"] == "FIXED_LEN_BYTE_ARRAY", phys


@pytest.mark.parametrize("col,key", SERVED, ids=[c for c, _k in SERVED])
def test_type_jsonl_exact(col, key, types_ds, cat):
    _check_physical(types_ds)
    leaf = td.leaf_oracle(types_ds, col)
    assert leaf.key == key
    p = cat(types_ds, "epoch-0.jsonl", {"column": col, "shuffle": "none", "rowid": True})
    if leaf.loose:
        problem = td.check_rowid_records(p.stdout, leaf)
        assert not problem, f"column={col}: {problem}"
    else:
        want = b"".join(leaf.expected_jsonl())
        diff = td.first_difference(p.stdout, want, width=60)
        assert not diff, f"column={col} ({leaf.elem_type}): {diff}"
    # and with the page shuffle
    p = cat(types_ds, "epoch-0.jsonl", {"column": col, "rowid": True})
    problem = td.check_rowid_records(p.stdout, leaf)
    assert not problem, f"column={col} shuffled: {problem}"


@pytest.mark.parametrize("col", ["u8", "u16", "u32", "u64", "i8", "i16", "date", "b", "l_f64",
                                 "l_f32", "l_bool", "l_i64", "ll_i64", "l_date", "st.a"])
def test_type_raw_default_dtype(col, types_ds, cat):
    leaf = td.leaf_oracle(types_ds, col)
    dt = leaf.raw_dtype()
    assert dt, col
    p = cat(types_ds, "epoch-0.bin", {"column": col, "shuffle": "none", "format": "raw"})
    diff = td.first_difference(p.stdout, leaf.expected_raw())
    assert not diff, f"column={col} format=raw (default dtype {dt}): {diff}"


def test_raw_u64_to_i64_fails_naming_value(types_ds, cat):
    p = cat(types_ds, "epoch-0.bin", {"column": "u64", "format": "raw", "dtype": "i64"},
            check=False)
    err = p.stderr.decode("utf-8", "replace")
    assert p.returncode != 0, "u64 values >= 2^63 do not fit i64"
    assert str(2 ** 64 - 1) in err or str(2 ** 63) in err, err


@pytest.mark.parametrize("col", ["dict_s", "bin", "flba", "l_str", "st.b", "dec_i32",
                                 "dec_flba"])
def test_raw_refused_on_non_numeric(col, types_ds, cat):
    """raw is for numbers; a string/binary column (and anything not in the raw list) is refused
    at mount with a message."""
    p = cat(types_ds, "epoch-0.bin", {"column": col, "format": "raw"}, check=False)
    err = p.stderr.decode("utf-8", "replace")
    assert p.returncode != 0, f"format=raw on {col} succeeded ({len(p.stdout)} bytes)"
    assert err.strip(), f"format=raw on {col}: refused without a message"


@pytest.mark.parametrize("col", ["ts_us", "ts_ns_utc", "t_ms"])
def test_raw_timestamp_refused_or_stored_integers(col, types_ds, cat):
    """TIMESTAMP/TIME are not in the contract's raw list. Accepted: a refusal with a message, or
    the stored integers in their physical width (i64 for micros/nanos, i32 for TIME millis)."""
    p = cat(types_ds, "epoch-0.bin", {"column": col, "format": "raw", "shuffle": "none"},
            check=False)
    if p.returncode != 0:
        assert p.stderr.strip()
        return
    t = pq.read_table(types_ds).column(col)
    ints = [v for v in t.cast(pa.int32() if col == "t_ms" else pa.int64()).to_pylist()
            if v is not None]
    want = td.pack(ints, "i32" if col == "t_ms" else "i64", False)
    diff = td.first_difference(p.stdout, want)
    assert not diff, f"format=raw on {col} served, but not the stored integers: {diff}"


def test_raw_float_to_integer_dtype_refused(types_ds, cat):
    p = cat(types_ds, "epoch-0.bin", {"column": "l_f64", "format": "raw", "dtype": "i64"},
            check=False)
    assert p.returncode != 0 and p.stderr.strip()


def test_struct_null_rows_skipped_and_keyed_by_path(types_ds, cat):
    p = cat(types_ds, "epoch-0.jsonl", {"column": "st.a", "shuffle": "none"})
    lines = p.stdout.splitlines()
    assert lines[:2] == [b'{"st.a":1}', b'{"st.a":-3}'], lines[:3]


def test_large_list_and_default_key(types_ds, cat):
    """A large_list written by pyarrow is an ordinary LIST in Parquet: served by its name."""
    a = cat(types_ds, "epoch-0.jsonl", {"column": "ll_i64", "shuffle": "none"}).stdout
    assert a.startswith(b'{"ll_i64":[1,2]}\n{"ll_i64":[]}\n{"ll_i64":[3]}\n'), a[:100]


# ---------------------------------------------------------------------------------------------
# lists of lists are served (issue 13); maps are refused (small files, well within mem=)

@pytest.fixture(scope="module")
def nested_ds(tmp_path_factory):
    d = tmp_path_factory.mktemp("nested")
    t = pa.table({
        "lol": pa.array([[[1, 2], [3]], [], None, [[4]]], pa.list_(pa.list_(pa.int32()))),
        "m": pa.array([[("a", 1), ("b", 2)], [], None, [("c", 3)]],
                      pa.map_(pa.string(), pa.int32())),
        "ok": pa.array([1, 2, 3, 4], pa.int32()),
    })
    pq.write_table(t, str(d / "nested.parquet"))
    return str(d)


def _leaves(ds, prefix):
    f = os.path.join(ds, "nested.parquet")
    return [p for p, _r in td.leaf_columns(f) if p == prefix or p.startswith(prefix + ".")]


@pytest.mark.parametrize("col", ["lol", "lol.list.element.list.element"])
def test_list_of_lists_served(col, nested_ds, cat):
    """CONTRACT-TYPES: a list of lists is served as nested arrays, a name inside it serves it."""
    p = cat(nested_ds, "epoch-0.jsonl", {"column": col, "shuffle": "none"})
    assert p.stdout == b'{"lol":[[1,2],[3]]}\n{"lol":[]}\n{"lol":[[4]]}\n', p.stdout


@pytest.mark.parametrize("col", ["m", "m.key_value.key", "m.key_value.value"])
def test_maps_served(col, nested_ds, cat, mount):
    """CONTRACT-TYPES: a map (two leaf columns, issue 13) is an object when its keys are
    strings; a name inside it serves it; through the mount too."""
    want = b'{"m":{"a":1,"b":2}}\n{"m":{}}\n{"m":{"c":3}}\n'
    p = cat(nested_ds, "epoch-0.jsonl", {"column": col, "shuffle": "none"})
    assert p.stdout == want, p.stdout
    with mount(nested_ds, f"column={col},shuffle=none") as m:
        assert m.read("epoch-0.jsonl") == want


def test_maps_refused_by_one_column_formats(nested_ds, cat):
    p = cat(nested_ds, "epoch-0.txt", {"column": "m", "format": "text"}, check=False)
    err = p.stderr.decode("utf-8", "replace")
    assert p.returncode != 0 and "format=text" in err and "column=m" in err, err


def test_ok_column_beside_nested_ones(nested_ds, cat):
    p = cat(nested_ds, "epoch-0.jsonl", {"column": "ok", "shuffle": "none"})
    assert p.stdout == b'{"ok":1}\n{"ok":2}\n{"ok":3}\n{"ok":4}\n'


# ---------------------------------------------------------------------------------------------
# out of range: the error names the file, the row and the value

@pytest.fixture(scope="module")
def oor_ds(tmp_path_factory):
    d = tmp_path_factory.mktemp("oor")
    for f in range(3):
        vals = [(i * 37 + f) % 1000 for i in range(500)]
        if f == 1:
            vals[137] = 70000
        pq.write_table(pa.table({"tok": pa.array(vals, pa.int32())}),
                       str(d / f"part-{f:03d}.parquet"), data_page_size=256)
    return str(d)


def _check_oor_message(err):
    assert "70000" in err, f"message does not name the value 70000: {err!r}"
    assert "part-001.parquet" in err, f"message does not name the file: {err!r}"
    nums = set(re.findall(r"\d+", err))
    assert "137" in nums or "637" in nums, f"message names neither row 137 (in file) nor 637 " \
                                           f"(global): {err!r}"


def test_out_of_range_cat(oor_ds, cat):
    p = cat(oor_ds, "epoch-0.bin", {"format": "raw", "dtype": "u16", "column": "tok"},
            check=False)
    assert p.returncode != 0, "70000 does not fit u16"
    _check_oor_message(p.stderr.decode("utf-8", "replace"))
    ok = cat(oor_ds, "epoch-0.bin", {"format": "raw", "dtype": "u32", "column": "tok",
                                     "shuffle": "none"})
    assert len(ok.stdout) == 1500 * 4


def test_out_of_range_mount(oor_ds, mount_fails):
    p = mount_fails(oor_ds, "column=tok,format=raw,dtype=u16")
    assert p.returncode != 0
    _check_oor_message(p.stderr.decode("utf-8", "replace"))


def test_int96_timestamps(tmp_path, cat):
    """INT96 (deprecated Spark/Impala timestamps) render as TIMESTAMP nanos without Z."""
    t = pa.table({"ts": pa.array([0, -1, 1700000000123456789, None, 86400 * 10 ** 9 + 5],
                                 pa.timestamp("ns"))})
    pq.write_table(t, str(tmp_path / "int96.parquet"), use_deprecated_int96_timestamps=True)
    assert pq.ParquetFile(str(tmp_path / "int96.parquet")).schema.column(0).physical_type == \
        "INT96"
    p = cat(str(tmp_path), "epoch-0.jsonl", {"column": "ts", "shuffle": "none"})
    assert p.stdout == (b'{"ts":"1970-01-01T00:00:00.000000000"}\n'
                        b'{"ts":"1969-12-31T23:59:59.999999999"}\n'
                        b'{"ts":"2023-11-14T22:13:20.123456789"}\n'
                        b'{"ts":"1970-01-02T00:00:00.000000005"}\n'), p.stdout


def test_renderer_self_check():
    """The oracle's own renderings of a few values, checked by hand against the contract."""
    assert td.fmt_date(0) == '"1970-01-01"' and td.fmt_date(-1) == '"1969-12-31"'
    assert td.fmt_date(-719162) == '"0001-01-01"' and td.fmt_date(2932896) == '"9999-12-31"'
    assert td.fmt_timestamp(-1, "ms", True) == '"1969-12-31T23:59:59.999Z"'
    assert td.fmt_timestamp(1700000000123456, "us", False) == '"2023-11-14T22:13:20.123456"'
    assert td.fmt_time(45296789, "ms") == '"12:34:56.789"'
    assert td.fmt_decimal(D("-0.05"), 2) == "-0.05" and td.fmt_decimal(D("-12"), 0) == "-12"
    assert td.fmt_decimal(D("0E-5"), 5) == "0.00000"
    assert td.fmt_float(1e16) == "1e+16" and td.fmt_float(1.5e-7) == "1.5e-07"
    assert td.fmt_float(float("nan")) == "NaN" and td.fmt_float(-float("inf")) == "-Infinity"
    for days in (-800000, -1, 0, 59, 60, 365 * 400, 2932896):
        d = datetime.date(1970, 1, 1) + datetime.timedelta(days=days) \
            if -719162 <= days <= 2932896 else None
        if d:
            assert td.fmt_date(days) == f'"{d.isoformat()}"', days


# ---------------------------------------------------------------------------------------------
# legacy list layouts (hand-written files: writers/legacy_lists.py)

def _legacy_writer():
    import importlib.util
    spec = importlib.util.spec_from_file_location(
        "yfs_legacy_lists", os.path.join(td.WRITERS, "legacy_lists.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module", params=["bare", "two_level"])
def legacy_ds(request, tmp_path_factory):
    import random
    mod = _legacy_writer()
    d = tmp_path_factory.mktemp("legacy-" + request.param)
    rng = random.Random(request.param)
    for f in range(2):
        rows = []
        for _ in range(400):
            r = rng.random()
            if r < 0.08 and request.param == "two_level":
                rows.append(None)
            elif r < 0.15:
                rows.append([])
            else:
                rows.append([rng.randint(0, td.TOKEN_MAX)
                             for _ in range(rng.choice([1, 2, 5, 30, 200]))])
        mod.write_legacy(str(d / f"part-{f:03d}.parquet"), request.param, rows,
                         rows_per_group=37)
    return request.param, str(d)


def test_legacy_list_layouts(legacy_ds, cat):
    """A bare `repeated int32 ids` and a 2-level `group ids (LIST) { repeated int32 element }`
    are served like a standard list: key "ids", jsonl exact, raw u16 with sep exact; the leaf's
    dotted path names the same column."""
    layout, d = legacy_ds
    leaf = td.leaf_oracle(d, "ids")
    assert leaf.is_list and len(leaf.rows) > 700, (layout, len(leaf.rows))
    p = cat(d, "epoch-0.jsonl", {"column": "ids", "shuffle": "none", "rowid": True})
    diff = td.first_difference(p.stdout, b"".join(leaf.expected_jsonl()), width=60)
    assert not diff, f"{layout}: {diff}"
    p2 = cat(d, "epoch-0.jsonl", {"column": "ids", "rowid": True})
    problem = td.check_rowid_records(p2.stdout, leaf)
    assert not problem, f"{layout} shuffled: {problem}"
    leaf_path = [p for p, _r in td.leaf_columns(leaf.files[0]) if p.startswith("ids")][0]
    p3 = cat(d, "epoch-0.jsonl", {"column": leaf_path, "shuffle": "none", "rowid": True})
    assert p3.stdout == p.stdout, f"{layout}: column={leaf_path} differs from column=ids"
    p4 = cat(d, "epoch-0.bin", {"column": "ids", "shuffle": "none", "format": "raw",
                                "dtype": "u16", "sep": td.EOS})
    diff = td.first_difference(p4.stdout, leaf.expected_raw(dtype="u16", sep=td.EOS))
    assert not diff, f"{layout} raw u16 sep: {diff}"


def test_thrift_empty_list_with_element_type_zero(tmp_path, cat):
    """fastparquet writes an empty key_value_metadata in every ColumnMetaData as the list header
    byte 0x00 (size 0, element type 0). pyarrow and every thrift reader accept it; so must
    youmufs (otherwise no fastparquet file mounts)."""
    _legacy_writer().write_legacy(str(tmp_path / "kv0.parquet"), "bare",
                                  [[1, 2], [], [3]], empty_kv_type0=True)
    assert pq.read_table(str(tmp_path / "kv0.parquet")).column("ids").to_pylist() == \
        [[1, 2], [], [3]]
    p = cat(str(tmp_path), "epoch-0.jsonl", {"column": "ids", "shuffle": "none"}, check=False)
    assert p.returncode == 0, p.stderr.decode("utf-8", "replace")
    assert p.stdout == b'{"ids":[1,2]}\n{"ids":[]}\n{"ids":[3]}\n', p.stdout
