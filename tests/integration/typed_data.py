"""Typed columns (issue 3): the record contract of tests/CONTRACT-TYPES.md written independently of
youmufs, a pyarrow oracle for any leaf column, and one logical table written by several Parquet
writers (pyarrow, DuckDB, arrow-rs via parquet-wasm, polars, fastparquet) with option variants.

    render_array(arr)          -> [jsonl value text or None] per element (the contract's table)
    record(key, text, row)     -> the bytes of one jsonl record
    leaf_oracle(root, path)    -> Leaf: key, [(row, text)], [(row, [values])] for raw, the type
    pack(values, dtype)        -> little-endian bytes, or RangeError naming the value
    WVariant / VARIANTS        -> writer x option variants; TypedCache.path(variant) writes one

Run as a script to write every variant into a directory and print a summary:
    python3 tests/integration/typed_data.py [OUT]
"""

from __future__ import annotations

import dataclasses
import decimal
import importlib.util
import json
import math
import os
import random
import shutil
import struct
import subprocess
import tempfile
from typing import Optional

import pyarrow as pa
import pyarrow.ipc as ipc
import pyarrow.parquet as pq

import datasets as yds

HERE = os.path.dirname(os.path.abspath(__file__))
WRITERS = os.path.join(HERE, "writers")

# ---------------------------------------------------------------------------------------------
# the contract: jsonl values


def _civil_from_days(z: int):
    """Proleptic Gregorian (y, m, d) of day z since 1970-01-01 (H. Hinnant's algorithm)."""
    z += 719468
    era = (z if z >= 0 else z - 146096) // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    y = yoe + era * 400
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    d = doy - (153 * mp + 2) // 5 + 1
    m = mp + 3 if mp < 10 else mp - 9
    return (y + 1 if m <= 2 else y), m, d


_PER_SECOND = {"s": 1, "ms": 1000, "us": 10 ** 6, "ns": 10 ** 9}
_DIGITS = {"ms": 3, "us": 6, "ns": 9}


def fmt_date(days: int) -> str:
    y, m, d = _civil_from_days(days)
    return f'"{y:04d}-{m:02d}-{d:02d}"'


def fmt_timestamp(v: int, unit: str, utc: bool) -> str:
    secs, frac = divmod(v, _PER_SECOND[unit])
    days, sod = divmod(secs, 86400)
    y, m, d = _civil_from_days(days)
    hh, rem = divmod(sod, 3600)
    mm, ss = divmod(rem, 60)
    return (f'"{y:04d}-{m:02d}-{d:02d}T{hh:02d}:{mm:02d}:{ss:02d}.{frac:0{_DIGITS[unit]}d}'
            + ("Z" if utc else "") + '"')


def fmt_time(v: int, unit: str) -> str:
    secs, frac = divmod(v, _PER_SECOND[unit])
    hh, rem = divmod(secs, 3600)
    mm, ss = divmod(rem, 60)
    return f'"{hh:02d}:{mm:02d}:{ss:02d}.{frac:0{_DIGITS[unit]}d}"'


def fmt_float(x: float) -> str:
    return json.dumps(float(x))


def fmt_string(s: str) -> str:
    return json.dumps(s, ensure_ascii=False)


def fmt_latin1(b: bytes) -> str:
    """Binary without annotation: bytes >= 0x80 as U+0080..U+00FF. The contract's text
    ("as \\u0080..\\u00ff") allows the escape or the UTF-8 character; this renders the UTF-8
    character, and binary columns are compared as JSON values (see Leaf.loose)."""
    return json.dumps(b.decode("latin-1"), ensure_ascii=False)


def fmt_decimal(d: decimal.Decimal, scale: int) -> str:
    return f"{d:.{scale}f}" if scale > 0 else f"{d:.0f}"


class Unsupported(Exception):
    """The contract does not say how this arrow type is rendered."""


def render_array(arr) -> list:
    """[jsonl text of each element, None for a null] of a pyarrow Array or ChunkedArray."""
    if isinstance(arr, pa.ChunkedArray):
        out = []
        for ch in arr.chunks:
            out.extend(render_array(ch))
        return out
    t = arr.type
    if pa.types.is_dictionary(t):
        return render_array(arr.dictionary_decode())
    if pa.types.is_struct(t):
        valid = arr.is_valid().to_pylist()
        kids = [(json.dumps(t.field(i).name, ensure_ascii=False), render_array(c))
                for i, c in enumerate(arr.flatten())]
        return ["{" + ",".join(k + ":" + ("null" if c[r] is None else c[r]) for k, c in kids)
                + "}" if valid[r] else None for r in range(len(arr))]
    if pa.types.is_map(t):
        # an object when the keys are strings, else [key, value] pairs (CONTRACT-TYPES.md)
        offs = arr.offsets.to_pylist()
        keys, items = render_array(arr.keys), render_array(arr.items)
        valid = arr.is_valid().to_pylist()
        obj = pa.types.is_string(t.key_type) or pa.types.is_large_string(t.key_type)
        out = []
        for i in range(len(arr)):
            pairs = [(keys[j], "null" if items[j] is None else items[j])
                     for j in range(offs[i], offs[i + 1])]
            if not valid[i]:
                out.append(None)
            elif obj:
                out.append("{" + ",".join(k + ":" + v for k, v in pairs) + "}")
            else:
                out.append("[" + ",".join("[" + k + "," + v + "]" for k, v in pairs) + "]")
        return out
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        offs = arr.offsets.to_pylist()
        child = render_array(arr.values)
        valid = arr.is_valid().to_pylist()
        return ["[" + ",".join("null" if x is None else x for x in child[offs[i]:offs[i + 1]])
                + "]" if valid[i] else None for i in range(len(arr))]
    if pa.types.is_null(t):
        return [None] * len(arr)
    vals = arr.to_pylist()
    if pa.types.is_boolean(t):
        return [None if v is None else ("true" if v else "false") for v in vals]
    if pa.types.is_integer(t):
        return [None if v is None else str(v) for v in vals]
    if pa.types.is_float32(t) or pa.types.is_float64(t):
        return [None if v is None else fmt_float(v) for v in vals]
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return [None if v is None else fmt_string(v) for v in vals]
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        return [None if v is None else fmt_latin1(v) for v in vals]
    if pa.types.is_decimal(t):
        return [None if v is None else fmt_decimal(v, t.scale) for v in vals]
    if pa.types.is_date32(t):
        ints = arr.cast(pa.int32()).to_pylist()
        return [None if v is None else fmt_date(v) for v in ints]
    if pa.types.is_date64(t):
        ints = arr.cast(pa.int64()).to_pylist()
        return [None if v is None else fmt_date(v // 86400000) for v in ints]
    if pa.types.is_timestamp(t):
        ints = arr.cast(pa.int64()).to_pylist()
        return [None if v is None else fmt_timestamp(v, t.unit, t.tz is not None) for v in ints]
    if pa.types.is_time(t):
        ints = arr.cast(pa.int64() if pa.types.is_time64(t) else pa.int32()).to_pylist()
        return [None if v is None else fmt_time(v, t.unit) for v in ints]
    raise Unsupported(f"no contract rendering for arrow type {t}")


def record(key: str, text: str, row: Optional[int] = None) -> bytes:
    """One jsonl record: {"<key>":<value>} or {"<key>":<value>,"_row":N}, then a newline."""
    s = "{" + json.dumps(key, ensure_ascii=False) + ":" + text
    if row is not None:
        s += ',"_row":' + str(row)
    return (s + "}\n").encode("utf-8")


# ---------------------------------------------------------------------------------------------
# the contract: raw

DTYPES = {"i8": ("b", True, 8), "u8": ("B", False, 8), "i16": ("h", True, 16),
          "u16": ("H", False, 16), "i32": ("i", True, 32), "u32": ("I", False, 32),
          "i64": ("q", True, 64), "u64": ("Q", False, 64), "f32": ("f", None, 32),
          "f64": ("d", None, 64)}


class RangeError(ValueError):
    def __init__(self, value, dtype, why="out of range"):
        super().__init__(f"{value!r} {why} for {dtype}")
        self.value = value
        self.dtype = dtype


def default_dtype(t) -> Optional[str]:
    """The contract's default raw dtype of an arrow element type, None if raw is refused."""
    if pa.types.is_boolean(t):
        return "u8"
    if pa.types.is_date32(t):
        return "i32"
    for name, ty in (("i8", pa.int8()), ("u8", pa.uint8()), ("i16", pa.int16()),
                     ("u16", pa.uint16()), ("i32", pa.int32()), ("u32", pa.uint32()),
                     ("i64", pa.int64()), ("u64", pa.uint64()), ("f32", pa.float32()),
                     ("f64", pa.float64())):
        if t == ty:
            return name
    return None


def _f32(x: float) -> float:
    try:
        return struct.unpack("<f", struct.pack("<f", x))[0]
    except OverflowError:                  # rounds to +-inf (CPython raises exactly then)
        return math.copysign(math.inf, x)


def pack(values: list, dtype: str, is_float_src: bool) -> bytes:
    """Little-endian `dtype` values. Integers must fit (RangeError naming the value); integers go
    to floats only where exact; floats narrow to f32 with rounding; floats never to integers."""
    code, signed, bits = DTYPES[dtype]
    if signed is None:                     # float target
        out = []
        for v in values:
            if is_float_src:
                out.append(_f32(v) if dtype == "f32" else float(v))
                continue
            f = _f32(float(v)) if dtype == "f32" else float(v)
            if math.isinf(f) or int(f) != v:
                raise RangeError(v, dtype, "not exactly representable")
            out.append(f)
        return struct.pack(f"<{len(out)}{code}", *out)
    if is_float_src:
        raise RangeError(values[0] if values else None, dtype, "float to integer dtype")
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    ints = [int(v) for v in values]        # bool -> 0/1
    for v in ints:
        if v < lo or v > hi:
            raise RangeError(v, dtype)
    return struct.pack(f"<{len(ints)}{code}", *ints)


# ---------------------------------------------------------------------------------------------
# the oracle: any leaf column of a dataset


@dataclasses.dataclass
class Leaf:
    path: str                 # what to pass as column=
    key: str                  # the jsonl key (top-level name for lists, dotted path otherwise)
    is_list: bool
    elem_type: object         # arrow type of the values (list: of the elements)
    rows: list                # [(global_row, jsonl value text)] for every non-null record
    raw: list                 # [(global_row, [python values, null elements dropped])]
    files: list               # the dataset's files, sorted
    loose: bool = False       # compare parsed JSON (binary columns: two renderings allowed)

    def expected_jsonl(self, rowid=True) -> list:
        return [record(self.key, t, r if rowid else None) for r, t in self.rows]

    def raw_dtype(self) -> Optional[str]:
        return default_dtype(self.elem_type)

    @property
    def is_float(self):
        return pa.types.is_floating(self.elem_type)

    def expected_raw(self, dtype=None, sep=None) -> bytes:
        """Natural order (shuffle=none), every record's values back to back, then `sep`."""
        dtype = dtype or self.raw_dtype()
        out = []
        for _r, vals in self.raw:
            out.append(pack(vals + ([sep] if sep is not None else []), dtype, self.is_float))
        return b"".join(out)

    def values_flat(self) -> list:
        return [v for _r, vals in self.raw for v in vals]


def _struct_child(arr, name):
    """Child `name` of a StructArray with the parent's nulls applied."""
    t = arr.type
    idx = t.get_field_index(name)
    if idx < 0:
        raise KeyError(name)
    if isinstance(arr, pa.ChunkedArray):
        return pa.chunked_array([ch.flatten()[idx] for ch in arr.chunks], t.field(idx).type)
    return arr.flatten()[idx]


def _is_list(t):
    return pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t)


def served_field(top_type, path: str):
    """(key, arrow type) of the field a column= name serves (CONTRACT-TYPES.md), given the
    arrow type of its top-level field: the named field, walking structs; a name inside a list
    or map serves the list or map itself (a value inside a list is not one value per row)."""
    parts = path.split(".")
    t = top_type
    i = 1
    while i < len(parts) and pa.types.is_struct(t) and t.get_field_index(parts[i]) >= 0:
        t = t.field(t.get_field_index(parts[i])).type
        i += 1
    if i != len(parts) and not (_is_list(t) or pa.types.is_map(t)):
        raise Unsupported(f"path {path} does not reach a field")
    return ".".join(parts[:i]), t


def resolve(table_column, path: str):
    """(array, key, is_list) of the field `path` serves inside a top-level column
    (served_field)."""
    key, t = served_field(table_column.type, path)
    arr = table_column
    for name in key.split(".")[1:]:
        arr = _struct_child(arr, name)
    return arr, key, _is_list(t)


def leaf_oracle(root: str, path: str) -> Leaf:
    files = yds.parquet_files(root)
    top = path.split(".")[0]
    rows, raw = [], []
    base = 0
    key = path
    is_list = False
    elem_type = None
    loose = False
    for f in files:
        col = pq.read_table(f, columns=[top]).column(top)
        arr, key, is_list = resolve(col, path)
        texts = render_array(arr)
        t = arr.type.value_type if is_list else arr.type
        if pa.types.is_dictionary(t):
            t = t.value_type
        elem_type = t
        loose = loose or pa.types.is_binary(t) or pa.types.is_fixed_size_binary(t) or \
            pa.types.is_large_binary(t)
        pyvals = None
        if default_dtype(t) is not None:
            src = arr
            if pa.types.is_date32(t):     # raw: days as i32
                src = arr.cast(pa.list_(pa.int32()) if is_list else pa.int32())
            pyvals = [None if v is None else ([e for e in v if e is not None] if is_list
                                              else [v]) for v in src.to_pylist()]
        for i, text in enumerate(texts):
            if text is None:
                continue
            rows.append((base + i, text))
            if pyvals is not None:
                raw.append((base + i, pyvals[i]))
        base += len(texts)
    return Leaf(path, key, is_list, elem_type, rows, raw, files, loose)


def leaf_columns(path: str) -> list:
    """[(dotted leaf path, max_repetition_level)] of a Parquet file's schema."""
    s = pq.ParquetFile(path).schema
    return [(s.column(i).path, s.column(i).max_repetition_level) for i in range(len(s))]


def check_rowid_records(data: bytes, leaf: Leaf) -> str:
    """Exactness of a jsonl+rowid epoch against the leaf oracle: every record byte-exact (or
    JSON-equal for binary columns), every non-null row exactly once. '' if fine."""
    if data and not data.endswith(b"\n"):
        return f"file does not end with a newline (last bytes {data[-60:]!r})"
    recs = data[:-1].split(b"\n") if data else []
    want = {r: record(leaf.key, t, r) for r, t in leaf.rows}
    seen = set()
    problems = []
    for rec in recs:
        rec += b"\n"
        try:
            obj = json.loads(rec)
        except ValueError as e:
            problems.append(f"not JSON ({e}): {rec[:160]!r}")
            if len(problems) > 5:
                break
            continue
        if not isinstance(obj, dict) or set(obj) != {leaf.key, "_row"}:
            problems.append(f"keys {sorted(obj) if isinstance(obj, dict) else type(obj)} "
                            f"!= {sorted([leaf.key, '_row'])}: {rec[:160]!r}")
        else:
            row = obj["_row"]
            if row in seen:
                problems.append(f"row {row} served twice")
            seen.add(row)
            if row not in want:
                problems.append(f"row {row} is not a non-null row of {leaf.path}: {rec[:160]!r}")
            elif rec != want[row]:
                if not (leaf.loose and json.loads(want[row]) == obj):
                    problems.append(f"row {row}: got {rec[:200]!r}, expected {want[row][:200]!r}")
        if len(problems) > 5:
            break
    missing = set(want) - seen
    if missing and len(problems) <= 5:
        m = sorted(missing)
        problems.append(f"{len(missing)} of {len(want)} rows never served, e.g. {m[:5]} "
                        f"(expected {want[m[0]][:120]!r})")
    return "; ".join(problems)


def first_difference(found: bytes, want: bytes, width=8) -> str:
    if found == want:
        return ""
    n = min(len(found), len(want))
    i = next((k for k in range(n) if found[k] != want[k]), n)
    return (f"{len(found)} bytes, expected {len(want)}; first difference at byte {i}: "
            f"got {found[max(0, i - width):i + 3 * width].hex(' ')}, "
            f"expected {want[max(0, i - width):i + 3 * width].hex(' ')}")


def unpack_all(data: bytes, dtype: str) -> list:
    code, _s, bits = DTYPES[dtype]
    size = bits // 8
    if len(data) % size:
        raise ValueError(f"{len(data)} bytes is not a multiple of {size} ({dtype})")
    return list(struct.unpack(f"<{len(data) // size}{code}", data))


def sort_key(v):
    """Sortable key for values incl. NaN and -0.0 (bit pattern decides ties)."""
    if isinstance(v, float):
        return (1, 0.0 if math.isnan(v) else v, struct.pack(">d", v))
    return (0, v, b"")


# ---------------------------------------------------------------------------------------------
# the logical table

TOKEN_MAX = 50256           # GPT-2 vocabulary: fits u16
EOS = 50257                 # the separator used in sep= tests: never a token of the table
I32_EDGES = [0, 1, -1, 2 ** 31 - 1, -2 ** 31, 2 ** 31 - 2, -2 ** 31 + 1, 127, -128, 255, 256,
             65535, 65536, -65536, 1000000007, 123456789]
I64_EDGES = [0, 1, -1, 2 ** 63 - 1, -2 ** 63, 2 ** 53, 2 ** 53 + 1, -(2 ** 53 + 1), 2 ** 32,
             -2 ** 32, 10 ** 18, 2 ** 31, -2 ** 31 - 1]
F64_EDGES = [0.0, -0.0, 0.1, -0.1, 1.0, 1e16, 1e-7, 1.5e-07, 5e-324, 2.2250738585072014e-308,
             1.7976931348623157e308, math.inf, -math.inf, math.nan, 123456789.123, 1e22, 1e21,
             1 / 3, 2.0 ** 53, -2.5, 100.0, 1e-5, 0.0001, 3.4028235677973366e38]
F32_EDGES = [0.0, -0.0, 0.1, 1.0, 3.4028234663852886e38, 1.401298464324817e-45,
             1.1754943508222875e-38, math.inf, -math.inf, math.nan, 16777216.0, 16777218.0,
             1e10, -2.5, 0.3333333432674408]

SCHEMA = pa.schema([
    pa.field("s", pa.string()),
    pa.field("i32", pa.int32()),
    pa.field("i64", pa.int64()),
    pa.field("f32", pa.float32()),
    pa.field("f64", pa.float64()),
    pa.field("b", pa.bool_()),
    pa.field("tok", pa.int32()),
    pa.field("input_ids", pa.list_(pa.field("element", pa.int32()))),
])
COLUMNS = [f.name for f in SCHEMA]


def _with_nulls(rng, values, p=0.1, run=40):
    values = [None if rng.random() < p else v for v in values]
    start = rng.randrange(len(values) - run)
    for i in range(start, start + run):           # a null run longer than some pages
        values[i] = None
    return values


def _runs(rng, n, draw):
    out = []
    while len(out) < n:
        v = draw()
        out.extend([v] * (rng.randint(5, 40) if rng.random() < 0.1 else 1))
    return out[:n]


def _string(rng, pool):
    r = rng.random()
    if r < 0.3:
        return rng.choice(pool)
    if r < 0.55:
        return yds._sentence(rng)
    if r < 0.7:
        return rng.choice(yds._UNICODE) + " " + yds._sentence(rng, 0, 4)
    if r < 0.85:
        return rng.choice(yds._SPECIAL)
    if r < 0.9:
        return yds._sentence(rng, 1, 3) + "\n" + yds._sentence(rng, 1, 3)
    if r < 0.95:
        return ""
    return yds._sentence(rng, 80, 300)


def logical_table(file_no: int, rows: int, large: bool, seed: int = 0) -> pa.Table:
    rng = random.Random(f"typed/{seed}/{file_no}")
    pool = [yds._sentence(rng, 1, 5) for _ in range(30)]
    s = _with_nulls(rng, [_string(rng, pool) for _ in range(rows)])
    if large and file_no == 0:
        s[rng.randrange(rows)] = yds._large_value(rng, 0)

    def i32():
        r = rng.random()
        if r < 0.3:
            return rng.choice(I32_EDGES)
        w = rng.randint(1, 31)
        return rng.randint(-(1 << w), (1 << w) - 1)

    def i64():
        r = rng.random()
        if r < 0.3:
            return rng.choice(I64_EDGES)
        w = rng.randint(1, 63)
        return rng.randint(-(1 << w), (1 << w) - 1)

    def f64():
        r = rng.random()
        if r < 0.25:
            return rng.choice(F64_EDGES)
        if r < 0.5:
            return round(rng.uniform(-1000, 1000), rng.randint(0, 4))
        return rng.gauss(0, 1) * 10.0 ** rng.randint(-40, 40)

    def f32():
        return _f32(rng.choice(F32_EDGES) if rng.random() < 0.3 else f64())

    ids = []
    for _ in range(rows):
        r = rng.random()
        if r < 0.05:
            ids.append(None)
        elif r < 0.10:
            ids.append([])
        else:
            n = rng.randint(300, 700) if rng.random() < 0.02 else rng.randint(1, 40)
            lst = [rng.randint(0, TOKEN_MAX) for _ in range(n)]
            if rng.random() < 0.03:
                for _k in range(rng.randint(1, 3)):
                    lst[rng.randrange(n)] = None
            ids.append(lst)
    cols = {
        "s": s,
        "i32": _with_nulls(rng, _runs(rng, rows, i32)),
        "i64": _with_nulls(rng, _runs(rng, rows, i64)),
        "f32": _with_nulls(rng, _runs(rng, rows, f32)),
        "f64": _with_nulls(rng, _runs(rng, rows, f64)),
        "b": _with_nulls(rng, [rng.random() < 0.3 for _ in range(rows)]),
        "tok": _with_nulls(rng, _runs(rng, rows, lambda: rng.randint(0, TOKEN_MAX)), 0.05),
        "input_ids": ids,
    }
    return pa.table({k: pa.array(v, SCHEMA.field(k).type) for k, v in cols.items()},
                    schema=SCHEMA)


# ---------------------------------------------------------------------------------------------
# writers x variants


@dataclasses.dataclass(frozen=True)
class WVariant:
    writer: str               # pyarrow | duckdb | arrowrs | polars | fastparquet
    name: str
    options: tuple = ()       # ((key, value), ...): frozen, hashable
    large: bool = False       # one string value > 1 MiB
    files: int = 2
    rows: int = 1500
    columns: tuple = tuple(COLUMNS)   # what this writer can write

    @property
    def id(self):
        return f"{self.writer}-{self.name}"

    def opts(self):
        return {k: (json.loads(v) if isinstance(v, str) and v[:1] in "[{" else v)
                for k, v in self.options}


def _o(**kw):
    return tuple(sorted((k, json.dumps(v) if isinstance(v, (list, dict)) else v)
                        for k, v in kw.items()))


INTS = ["i32", "i64", "tok"]
NO_LISTS = tuple(c for c in COLUMNS if c != "input_ids")

VARIANTS = [
    # pyarrow (Arrow C++ writer)
    WVariant("pyarrow", "snappy-v1-dict", _o(compression="snappy", data_page_size=1024,
                                             row_group_size=500), large=True),
    WVariant("pyarrow", "zstd9-v2", _o(compression="zstd", compression_level=9,
                                       data_page_version="2.0", data_page_size=700)),
    WVariant("pyarrow", "gzip-plain", _o(compression="gzip", use_dictionary=False,
                                         data_page_size=900)),
    WVariant("pyarrow", "brotli-pageindex-tiny", _o(compression="brotli", write_page_index=True,
                                                    data_page_size=256, row_group_size=700)),
    WVariant("pyarrow", "lz4-dictfallback", _o(compression="lz4", dictionary_pagesize_limit=300,
                                               data_page_size=800, data_page_version="2.0")),
    WVariant("pyarrow", "bss", _o(compression="none", use_dictionary=False,
                                  use_byte_stream_split=["f32", "f64", "i32", "i64"],
                                  data_page_size=1000)),
    WVariant("pyarrow", "delta-dlba-v2", _o(
        compression="zstd", use_dictionary=False, data_page_version="2.0", data_page_size=900,
        column_encoding={"i32": "DELTA_BINARY_PACKED", "i64": "DELTA_BINARY_PACKED",
                         "tok": "DELTA_BINARY_PACKED",
                         "input_ids.list.element": "DELTA_BINARY_PACKED",
                         "s": "DELTA_LENGTH_BYTE_ARRAY"}), large=True),
    WVariant("pyarrow", "delta-dba-v1", _o(
        compression="snappy", use_dictionary=False, data_page_size=600,
        column_encoding={"i32": "DELTA_BINARY_PACKED", "i64": "DELTA_BINARY_PACKED",
                         "tok": "DELTA_BINARY_PACKED", "s": "DELTA_BYTE_ARRAY"})),
    WVariant("pyarrow", "nostats-legacynames", _o(
        compression="none", write_statistics=False, use_compliant_nested_type=False,
        store_schema=False, data_page_size=1500, row_group_size=400)),
    # DuckDB (C++), through its Node API
    WVariant("duckdb", "snappy", _o(COMPRESSION="snappy", ROW_GROUP_SIZE=2048), large=True),
    WVariant("duckdb", "zstd-v2", _o(COMPRESSION="zstd", COMPRESSION_LEVEL=7,
                                     PARQUET_VERSION="V2")),
    WVariant("duckdb", "uncompressed-nodict", _o(COMPRESSION="uncompressed",
                                                 DICTIONARY_SIZE_LIMIT=1,
                                                 STRING_DICTIONARY_PAGE_SIZE_LIMIT=1)),
    WVariant("duckdb", "gzip-v2", _o(COMPRESSION="gzip", PARQUET_VERSION="V2")),
    WVariant("duckdb", "brotli", _o(COMPRESSION="brotli")),
    WVariant("duckdb", "lz4raw-bloom", _o(COMPRESSION="lz4_raw", WRITE_BLOOM_FILTER=True)),
    # arrow-rs (Rust), through parquet-wasm
    WVariant("arrowrs", "snappy-v1-pageindex", _o(compression="SNAPPY", dataPageSize=1024,
                                                  maxRowGroupSize=500, statistics="Page",
                                                  writeBatchSize=64), large=True),
    WVariant("arrowrs", "zstd-v2-nodict", _o(compression="ZSTD", writerVersion="V2",
                                             dictionary=False, dataPageSize=700,
                                             writeBatchSize=50)),
    WVariant("arrowrs", "delta", _o(compression="LZ4_RAW", dictionary=False, dataPageSize=800,
                                    writeBatchSize=64, writerVersion="V2",
                                    columnEncoding={"i32": "DELTA_BINARY_PACKED",
                                                    "i64": "DELTA_BINARY_PACKED",
                                                    "tok": "DELTA_BINARY_PACKED",
                                                    "input_ids.list.element":
                                                        "DELTA_BINARY_PACKED",
                                                    "s": "DELTA_BYTE_ARRAY"})),
    WVariant("arrowrs", "bss-gzip-nostats", _o(compression="GZIP", dictionary=False,
                                               statistics="None", dataPageSize=900,
                                               writeBatchSize=64,
                                               columnEncoding={"f32": "BYTE_STREAM_SPLIT",
                                                               "f64": "BYTE_STREAM_SPLIT",
                                                               "s": "DELTA_LENGTH_BYTE_ARRAY"})),
    WVariant("arrowrs", "brotli-dictlimit", _o(compression="BROTLI", dictionaryPageSizeLimit=256,
                                               dataPageSize=600, writeBatchSize=32,
                                               maxRowGroupSize=700)),
    # polars (its own Rust writer, polars-parquet)
    WVariant("polars", "zstd-stats", _o(compression="zstd", statistics=True,
                                        row_group_size=500, data_page_size=1024), large=True),
    WVariant("polars", "snappy-nostats", _o(compression="snappy", statistics=False,
                                            row_group_size=700, data_page_size=600)),
    WVariant("polars", "lz4-uncompressed-pages", _o(compression="lz4", data_page_size=300)),
    WVariant("polars", "gzip9", _o(compression="gzip", compression_level=9,
                                   row_group_size=1000)),
    # fastparquet (Python, numba-free): no list columns
    WVariant("fastparquet", "snappy", _o(compression="SNAPPY", row_group_offsets=300),
             large=True, columns=NO_LISTS),
    WVariant("fastparquet", "gzip-dict", _o(compression="GZIP", row_group_offsets=500,
                                            categorical=["s"]), columns=NO_LISTS),
    WVariant("fastparquet", "zstd-nostats", _o(compression="ZSTD", row_group_offsets=200,
                                               stats=False), columns=NO_LISTS),
    WVariant("fastparquet", "uncompressed", _o(compression=None, row_group_offsets=1000),
             columns=NO_LISTS),
]

NODE_WRITERS = {"duckdb": "duckdb_write.mjs", "arrowrs": "arrowrs_write.mjs"}
PY_WRITERS = {"pyarrow": "pyarrow_write.py", "polars": "polars_write.py",
              "fastparquet": "fastparquet_write.py"}


class WriterUnavailable(Exception):
    pass


def _load_py_writer(name):
    path = os.path.join(WRITERS, PY_WRITERS[name])
    spec = importlib.util.spec_from_file_location(f"yfs_writer_{name}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def writer_problem(writer: str) -> Optional[str]:
    if writer in NODE_WRITERS:
        if not shutil.which("node"):
            return "node is not on PATH"
        pkg = {"duckdb": "@duckdb/node-api", "arrowrs": "parquet-wasm"}[writer]
        if not os.path.isdir(os.path.join(WRITERS, "node_modules", *pkg.split("/"))):
            return (f"npm package {pkg} missing: run `npm install` in {WRITERS} "
                    f"(scripts/install-deps.sh does)")
        return None
    mod = {"pyarrow": "pyarrow", "polars": "polars", "fastparquet": "fastparquet"}[writer]
    if importlib.util.find_spec(mod) is None:
        return f"python package {mod} missing (pip install {mod}; scripts/install-deps.sh does)"
    return None


class TypedCache:
    """Writes the sources and every variant once per session; caches leaf oracles. `table`
    (file_no, rows, large) -> pa.Table gives the sources' rows (default: logical_table)."""

    def __init__(self, root, table=None):
        self.root = root
        self.table = table or logical_table
        self._leaves = {}

    def sources(self, v: WVariant) -> list:
        d = os.path.join(self.root, f"src-{v.files}x{v.rows}-{'large' if v.large else 'small'}")
        if not os.path.isdir(d):
            tmp = d + ".tmp"
            shutil.rmtree(tmp, ignore_errors=True)
            os.makedirs(tmp)
            for f in range(v.files):
                t = self.table(f, v.rows, v.large)
                with ipc.new_stream(os.path.join(tmp, f"src-{f:03d}.arrows"), t.schema) as w:
                    w.write_table(t)
                pq.write_table(t, os.path.join(tmp, f"src-{f:03d}.parquet"),
                               compression="none", use_dictionary=False)
            os.rename(tmp, d)
        return [{"arrows": os.path.join(d, f"src-{f:03d}.arrows"),
                 "parquet": os.path.join(d, f"src-{f:03d}.parquet")} for f in range(v.files)]

    def path(self, v: WVariant) -> str:
        d = os.path.join(self.root, v.id)
        if os.path.isdir(d):
            return d
        problem = writer_problem(v.writer)
        if problem:
            raise WriterUnavailable(f"{v.writer}: {problem}")
        tmp = d + ".tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        os.makedirs(tmp)
        spec = {"sources": self.sources(v), "out_dir": tmp, "options": v.opts(),
                "columns": list(v.columns)}
        if v.writer in PY_WRITERS:
            _load_py_writer(v.writer).write(spec)
        else:
            spec_path = os.path.join(self.root, v.id + ".spec.json")
            with open(spec_path, "w") as f:
                json.dump(spec, f)
            p = subprocess.run(["node", os.path.join(WRITERS, NODE_WRITERS[v.writer]),
                                spec_path], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               timeout=120)
            if p.returncode != 0:
                raise RuntimeError(f"{v.id}: writer failed:\n{p.stdout.decode()[-3000:]}")
        os.rename(tmp, d)
        return d

    def leaf(self, v: WVariant, path: str) -> Leaf:
        k = (v, path)
        if k not in self._leaves:
            self._leaves[k] = leaf_oracle(self.path(v), path)
        return self._leaves[k]


_CACHE = None


def typed_cache() -> TypedCache:
    """One per process (test modules share it)."""
    global _CACHE
    if _CACHE is None:
        root = tempfile.mkdtemp(prefix="yfs-typed-")
        import atexit
        atexit.register(shutil.rmtree, root, True)
        _CACHE = TypedCache(root)
    return _CACHE


if __name__ == "__main__":
    import sys
    import time
    out = sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp(prefix="yfs-typed-")
    c = TypedCache(out)
    for v in VARIANTS:
        t = time.time()
        try:
            d = c.path(v)
        except WriterUnavailable as e:
            print(f"{v.id:40s} SKIPPED: {e}")
            continue
        files = yds.parquet_files(d)
        pages = sum(pq.ParquetFile(p).metadata.num_row_groups for p in files)
        encs = set()
        for p in files:
            md = pq.ParquetFile(p).metadata
            for rg in range(md.num_row_groups):
                for ci in range(md.num_columns):
                    cc = md.row_group(rg).column(ci)
                    encs.update(cc.encodings)
                    encs.add(cc.compression)
        size = sum(os.path.getsize(p) for p in files)
        print(f"{v.id:40s} rowgroups={pages:3d} bytes={size:8d} {time.time() - t:5.2f}s "
              f"{sorted(encs)}")
    print(out)
