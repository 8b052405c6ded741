"""Deterministic Parquet datasets for the youmufs integration tests, and the pyarrow oracle.

Everything here is independent of youmufs: datasets are written with pyarrow, and the oracle is what
pyarrow reads back. The tests compare what youmufs serves against `oracle()` and `frame()`.

A dataset is a directory of several files x several row groups x many small pages. `Spec` holds the
knobs; `write_dataset(spec, root)` writes it (same spec + seed -> same bytes on every run).
"""

from __future__ import annotations

import dataclasses
import json
import os
import random
import struct
from collections import Counter
from typing import Iterable, Optional

import pyarrow as pa
import pyarrow.parquet as pq

CODECS = ("none", "snappy", "gzip", "brotli", "zstd", "lz4")
EXTENSIONS = {"jsonl": "jsonl", "text": "txt", "len32": "len32"}


@dataclasses.dataclass(frozen=True)
class Spec:
    """Knobs of one generated dataset. Frozen, so it can key the per-session cache."""

    compression: str = "snappy"          # one of CODECS, or "mixed": a different codec per file
    page_version: str = "1.0"            # data_page_version: "1.0" or "2.0"
    dictionary: bool = True              # use_dictionary
    nulls: bool = False                  # optional column with ~10% nulls; else a REQUIRED column
    page_index: bool = False             # write_page_index (OffsetIndex/ColumnIndex)
    newlines: bool = True                # value mix includes values containing "\n"
    large: int = 0                       # number of values over 1 MiB
    encoding: Optional[str] = None       # column_encoding for the text column (needs dictionary=False)
    files: int = 3
    rows_per_file: int = 1200
    row_group_size: int = 300
    page_size: int = 512                 # data_page_size in bytes: small, so pages are many
    column: str = "text"
    seed: int = 0

    @property
    def name(self) -> str:
        parts = [self.compression, "v" + self.page_version[0],
                 "dict" if self.dictionary else "plain",
                 "nulls" if self.nulls else "req"]
        if self.page_index:
            parts.append("pidx")
        if not self.newlines:
            parts.append("nonl")
        if self.large:
            parts.append(f"large{self.large}")
        if self.encoding:
            parts.append(self.encoding.lower())
        if (self.files, self.rows_per_file) != (3, 1200):
            parts.append(f"{self.files}x{self.rows_per_file}")
        if self.column != "text":
            parts.append("col-" + self.column)
        if self.seed:
            parts.append(f"s{self.seed}")
        return "-".join(parts)


# ---------------------------------------------------------------------------------------------
# value mix

_WORDS = ("the quick brown fox jumps over a lazy dog while parquet pages shuffle under fuse "
          "epoch record column reader training loader sample token batch gradient").split()
_UNICODE = [
    "日本語のテキスト", "中文字符测试", "한국어 문장", "emoji 😀🚀🎉", "👩‍👩‍👧‍👦 family",
    "combining e\u0301 a\u0308 o\u0302\u0323", "Ελληνικά", "кириллица", "עברית", "العربية",
    "\u2028line sep\u2029para sep", "zero\u200bwidth", "\ufeffbom", "replacement \ufffd",
    "astral \U0001d11e \U0010fffd",
]
_SPECIAL = [
    "", "", '"', '\\', '\\"', '"quoted" and \\backslash\\', "{\"json\": [1, 2]}",
    "tab\there", "cr\rhere", "crlf\r\nhere", "\x7f DEL", "\x00 nul byte", "\x1b[31mansi\x1b[0m",
    "".join(chr(c) for c in range(0x20)),   # every control byte in one value
    " leading and trailing spaces ", "/", "\u00e9\u00e8\u00ea latin-1 range \u00ff",
]


def _sentence(rng: random.Random, lo: int = 1, hi: int = 30) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(rng.randint(lo, hi)))


def _value(rng: random.Random, spec: Spec, pool: list) -> str:
    r = rng.random()
    if r < 0.35:
        v = rng.choice(pool)                       # repeated values: dictionary pages matter
    elif r < 0.60:
        v = _sentence(rng)
    elif r < 0.70:
        v = rng.choice(_UNICODE) + " " + _sentence(rng, 0, 5)
    elif r < 0.80:
        v = rng.choice(_SPECIAL)
    elif r < 0.85:
        v = chr(rng.randrange(0x20)) + _sentence(rng, 0, 3)   # one control char in front
    elif r < 0.90:
        v = _sentence(rng, 1, 3) + "\n" + _sentence(rng, 1, 3)
    elif r < 0.95:
        v = ""
    else:
        v = _sentence(rng, 100, 400)               # a few hundred bytes: spans pages
    if not spec.newlines:
        v = v.replace("\n", " ")
    return v


def _large_value(rng: random.Random, i: int) -> str:
    # > 1 MiB, not trivially compressible, with escapes and non-ASCII spread through it.
    chunk = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz \"\\\té日😀") for _ in range(4096))
    reps = (1 << 20) // len(chunk.encode()) + 2
    return f"LARGE-{i}:" + chunk * reps


def _column_values(spec: Spec, file_no: int) -> list:
    rng = random.Random(f"{spec.seed}/{file_no}/{spec.name}")
    pool = [_sentence(rng, 1, 6) for _ in range(40)]
    values = [_value(rng, spec, pool) for _ in range(spec.rows_per_file)]
    if spec.nulls:
        for i in range(len(values)):
            if rng.random() < 0.10:
                values[i] = None
        # a run of nulls longer than a page, so some pages may hold only nulls
        start = rng.randrange(len(values) - 80)
        for i in range(start, start + 80):
            values[i] = None
    for k in range(spec.large):
        if k % spec.files == file_no:
            values[rng.randrange(len(values))] = _large_value(rng, k)
    return values


def _codec_for_file(spec: Spec, file_no: int) -> str:
    if spec.compression == "mixed":
        return CODECS[file_no % len(CODECS)]
    return spec.compression


def write_dataset(spec: Spec, root: str) -> str:
    """Write `spec` into the directory `root` (created). Returns `root`."""
    os.makedirs(root, exist_ok=True)
    for f in range(spec.files):
        values = _column_values(spec, f)
        n = len(values)
        base = f * spec.rows_per_file
        schema = pa.schema([
            pa.field("id", pa.int64(), nullable=False),
            pa.field(spec.column, pa.string(), nullable=spec.nulls),
            pa.field("score", pa.float64()),
        ])
        table = pa.table({
            "id": pa.array(range(base, base + n), pa.int64()),
            spec.column: pa.array(values, pa.string()),
            "score": pa.array([(i * 7919 % 1000) / 10.0 for i in range(n)], pa.float64()),
        }, schema=schema)
        kwargs = dict(
            compression=_codec_for_file(spec, f),
            data_page_version=(spec.page_version if spec.compression != "mixed"
                               else ("1.0", "2.0")[f % 2]),
            use_dictionary=spec.dictionary,
            write_page_index=spec.page_index,
            data_page_size=spec.page_size,
            write_batch_size=32,
            row_group_size=spec.row_group_size,
            dictionary_pagesize_limit=4096,       # forces dictionary fallback in some chunks
            write_statistics=True,
        )
        if spec.encoding:
            kwargs["column_encoding"] = {spec.column: spec.encoding}
            kwargs["use_dictionary"] = False
        pq.write_table(table, os.path.join(root, f"part-{f:03d}.parquet"), **kwargs)
    return root


# ---------------------------------------------------------------------------------------------
# oracle

def parquet_files(root: str) -> list:
    """All *.parquet below `root` (or `root` itself if it is a file), sorted by path."""
    if os.path.isfile(root):
        return [root]
    out = []
    for dirpath, _dirs, files in os.walk(root):
        out.extend(os.path.join(dirpath, f) for f in files if f.endswith(".parquet"))
    return sorted(out)


def oracle(root: str, column: str = "text") -> list:
    """[(global_row, value)] for every non-null value of `column`, in dataset order.

    global_row counts every row (nulls too) across the files in sorted path order.
    """
    out = []
    base = 0
    for path in parquet_files(root):
        col = pq.read_table(path, columns=[column]).column(column).to_pylist()
        out.extend((base + i, v) for i, v in enumerate(col) if v is not None)
        base += len(col)
    return out


def total_rows(root: str) -> int:
    return sum(pq.ParquetFile(p).metadata.num_rows for p in parquet_files(root))


def total_pages_lower_bound(root: str) -> int:
    """Number of row groups: every row group has at least one page per column."""
    return sum(pq.ParquetFile(p).metadata.num_row_groups for p in parquet_files(root))


# ---------------------------------------------------------------------------------------------
# framing (the contract, written independently of youmufs)

def to_bytes(value) -> bytes:
    return value if isinstance(value, bytes) else value.encode("utf-8")


def frame(fmt: str, column: str, value, row: Optional[int] = None) -> bytes:
    """The exact bytes of one record."""
    if fmt == "jsonl":
        obj = {column: value} if row is None else {column: value, "_row": row}
        return (json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
    if fmt == "text":
        return to_bytes(value) + b"\n"
    if fmt == "len32":
        b = to_bytes(value)
        return struct.pack("<I", len(b)) + b
    raise ValueError(fmt)


def expected_records(orc: list, fmt: str, column: str, rowid: bool = False) -> list:
    return [frame(fmt, column, v, r if rowid else None) for r, v in orc]


def split_records(data: bytes, fmt: str) -> list:
    """Split a served file into its records (each with its framing). Raises ValueError if the
    framing is broken (a len32 length running past the end, a missing final newline)."""
    if fmt in ("jsonl", "text"):
        if not data:
            return []
        if not data.endswith(b"\n"):
            raise ValueError(f"{fmt} file does not end with a newline (last bytes {data[-40:]!r})")
        return [line + b"\n" for line in data[:-1].split(b"\n")]
    if fmt == "len32":
        out, pos = [], 0
        while pos < len(data):
            if pos + 4 > len(data):
                raise ValueError(f"len32: truncated length prefix at offset {pos}")
            (n,) = struct.unpack_from("<I", data, pos)
            if pos + 4 + n > len(data):
                raise ValueError(f"len32: record at offset {pos} claims {n} bytes, "
                                 f"only {len(data) - pos - 4} left")
            out.append(data[pos:pos + 4 + n])
            pos += 4 + n
        return out
    raise ValueError(fmt)


def parse_jsonl_rowid(data: bytes, column: str) -> list:
    """[(row, value, record_bytes)] of a jsonl file written with rowid."""
    out = []
    for rec in split_records(data, "jsonl"):
        obj = json.loads(rec)
        if set(obj) != {column, "_row"}:
            raise ValueError(f"unexpected keys {sorted(obj)} in record {rec[:200]!r}")
        out.append((obj["_row"], obj[column], rec))
    return out


def multiset_diff(found: Iterable, expected: Iterable, limit: int = 5) -> str:
    """'' if equal as multisets, else a short human-readable description of the difference."""
    cf, ce = Counter(found), Counter(expected)
    if cf == ce:
        return ""
    missing = ce - cf
    extra = cf - ce

    def show(c):
        items = list(c.items())[:limit]
        return ", ".join(f"{(k[:80] + b'...') if isinstance(k, bytes) and len(k) > 80 else k!r}"
                         f" x{n}" for k, n in items)
    return (f"found {sum(cf.values())} records, expected {sum(ce.values())}; "
            f"{sum(missing.values())} missing (e.g. {show(missing)}); "
            f"{sum(extra.values())} unexpected (e.g. {show(extra)})")


def check_rowid_jsonl(data: bytes, orc: list, column: str) -> str:
    """Full exactness check of a jsonl+rowid epoch against the oracle. '' if fine, else why not."""
    try:
        recs = parse_jsonl_rowid(data, column)
    except ValueError as e:
        return str(e)
    by_row = dict(orc)
    seen = set()
    problems = []
    for row, _val, rec in recs:
        if row in seen:
            problems.append(f"row {row} served twice")
        seen.add(row)
        if row not in by_row:
            problems.append(f"row {row} is not a non-null row of the dataset")
            continue
        want = frame("jsonl", column, by_row[row], row)
        if rec != want:
            problems.append(f"row {row}: got {rec[:120]!r}, expected {want[:120]!r}")
        if len(problems) > 5:
            break
    missing = set(by_row) - seen
    if missing:
        problems.append(f"{len(missing)} rows never served, e.g. {sorted(missing)[:5]}")
    return "; ".join(problems)


# ---------------------------------------------------------------------------------------------
# matrix: a pairwise cover of codec x page version x dictionary x nulls (each codec appears with
# both values of every binary knob; every pair of binary knob values appears), page index and
# large values alternating, plus the delta string encodings and one dataset with everything.

_L4 = [("1.0", True, True), ("1.0", False, False), ("2.0", True, False), ("2.0", False, True)]


def matrix_specs() -> list:
    specs = []
    for i, codec in enumerate(CODECS):
        a = _L4[i % 4]
        b = ("2.0" if a[0] == "1.0" else "1.0", not a[1], not a[2])   # the complement of a
        for j, (ver, dic, nul) in enumerate((a, b)):
            specs.append(Spec(compression=codec, page_version=ver, dictionary=dic, nulls=nul,
                              page_index=bool((i + j) % 2), large=1 if (i + j) % 3 == 0 else 0))
    specs.append(Spec(compression="zstd", page_version="2.0", dictionary=False, nulls=True,
                      encoding="DELTA_LENGTH_BYTE_ARRAY"))
    specs.append(Spec(compression="snappy", page_version="1.0", dictionary=False, nulls=False,
                      encoding="DELTA_BYTE_ARRAY", page_index=True))
    specs.append(ALL_FEATURES)
    return specs


# Different codec and page version per file, dictionary with fallback, nulls, page index, large
# values, every special value, and a column name that is not "text".
ALL_FEATURES = Spec(compression="mixed", dictionary=True, nulls=True, page_index=True, large=3,
                    files=6, rows_per_file=900, column="content")

# Default dataset for the behavioural tests (determinism, seek, parts, ...): many pages, nulls,
# no huge values so reads stay fast.
def text_corpus(root, name, seed):
    """4 files x 40k rows of 200..1800 bytes of text under root/name: an epoch of ~160 MB
    (~57 MB snappy), many times the memory budgets the resource tests give youmufs.
    Written once per session; returns the directory."""
    d = os.path.join(root, name)
    if not os.path.isdir(d):
        rng = random.Random(seed)
        words = ("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi "
                 "omicron pi rho sigma tau upsilon phi chi psi omega").split()
        base = " ".join(rng.choice(words) for _ in range(400000))
        os.makedirs(d + ".tmp", exist_ok=True)
        for f in range(4):
            vals = []
            for _ in range(40000):
                o = rng.randrange(len(base) - 3000)
                vals.append(base[o:o + rng.randint(200, 1800)])
            pq.write_table(pa.table({"text": pa.array(vals)}), f"{d}.tmp/p{f}.parquet",
                           compression="snappy", row_group_size=10000)
        os.rename(d + ".tmp", d)
    return d


BASIC = Spec(compression="snappy", page_version="1.0", dictionary=True, nulls=True, large=0)
# Same without newlines, for format=text.
BASIC_NONL = dataclasses.replace(BASIC, newlines=False)


if __name__ == "__main__":
    import sys
    import tempfile
    import time
    out = sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp(prefix="yfs-ds-")
    for s in matrix_specs() + [BASIC, BASIC_NONL]:
        t = time.time()
        d = write_dataset(s, os.path.join(out, s.name))
        o = oracle(d, s.column)
        pages = 0
        for p in parquet_files(d):
            md = pq.ParquetFile(p).metadata
            pages += md.num_row_groups
        size = sum(os.path.getsize(p) for p in parquet_files(d))
        print(f"{s.name:45s} rows={total_rows(d):5d} nonnull={len(o):5d} "
              f"bytes={size:8d} {time.time() - t:.2f}s")
    print(out)
