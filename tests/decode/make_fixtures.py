#!/usr/bin/env python3
r"""Generate the Parquet fixtures of tests/decode and their expected values.

Run from anywhere:  python3 tests/decode/make_fixtures.py [PARQUET_TESTING_DATA_DIR]

Writes into tests/decode/fixtures/:
  - gen_*.parquet: small files written by pyarrow, one per combination of
    codec / data page version / dictionary / value encoding we want covered;
  - copies of a few files of apache/parquet-testing (Apache License 2.0, see
    fixtures/LICENSE-parquet-testing.txt) written by other writers (parquet-mr,
    old parquet-cpp): Hadoop-framed LZ4, concatenated gzip members, ...;
  - <file>.expect: the values pyarrow reads, which the C test compares with
    what decode/ produces (the gen_* files share gen_table.expect: they hold
    the same table written with different options);
  - MANIFEST: one line per fixture: "<parquet file> <expect file>".

.expect format, one section per checked column:
    column <dotted path> <mode> <number of lines that follow>
    <one line per entry>
mode "flat":    one line per row: "-" for null, else "=" and the value's
                bytes (the physical PLAIN bytes: strings/binary as is, ints
                and floats little-endian, booleans one byte 0/1), with bytes
                outside printable ASCII and the backslash written as \xHH;
                or "#" and the bytes in hex when that is shorter;
mode "leaf":    nested column: only the non-null leaf values, in order;
mode "decimal": one line per row: "-" or the unscaled integer in decimal
                (for BYTE_ARRAY decimals, whose byte width is writer-specific).
Requires pyarrow; the C tests never need python.
"""
import os
import random
import shutil
import struct
import sys

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "fixtures")
ROWS = 80


def table():
    rng = random.Random(42)
    words = ["", "a", "youmu", "konpaku", "\u00e9t\u00e9", "\u65e5\u672c", "x" * 40,
             "tab\there", "line\nbreak", "quote\"s"]

    def word():
        w = rng.choice(words)
        return w + str(rng.randrange(1000)) if rng.random() < 0.5 else w

    s = [None if i % 7 == 3 else word() for i in range(ROWS)]
    return pa.table({
        "s": pa.array(s, pa.string()),
        "req": pa.array(["row-%d" % (i // 3) for i in range(ROWS)], pa.string()),
        "bin": pa.array([bytes(rng.randrange(256) for _ in range(rng.randrange(6)))
                         for _ in range(ROWS)], pa.binary()),
        "i32": pa.array([rng.randrange(-1000, 1000) * (i % 5) for i in range(ROWS)],
                        pa.int32()),
        "i64": pa.array([None if i % 11 == 0 else (1 << 40) - i * 977 for i in range(ROWS)],
                        pa.int64()),
        "f64": pa.array([i / 8.0 - 3 for i in range(ROWS)], pa.float64()),
        "f32": pa.array([None if i % 13 == 5 else i * 0.5 for i in range(ROWS)], pa.float32()),
        "b": pa.array([None if i % 9 == 4 else (i * 7) % 3 == 0 for i in range(ROWS)],
                      pa.bool_()),
        "fixed": pa.array([bytes([i % 256, 7, 255 - i % 256]) for i in range(ROWS)],
                          pa.binary(3)),
        "lst": pa.array([None if i % 10 == 9 else [word() for _ in range(i % 4)]
                         for i in range(ROWS)], pa.list_(pa.string())),
    })


# (file, write_table options)
GENERATED = [
    ("gen_plain_v1_none", dict(compression="none", use_dictionary=False,
                               data_page_version="1.0")),
    ("gen_dict_v1_snappy", dict(compression="snappy", use_dictionary=True,
                                data_page_version="1.0")),
    ("gen_dict_v2_gzip", dict(compression="gzip", use_dictionary=True,
                              data_page_version="2.0")),
    ("gen_plain_v2_brotli", dict(compression="brotli", use_dictionary=False,
                                 data_page_version="2.0")),
    ("gen_dict_v1_zstd_pageindex", dict(compression="zstd", use_dictionary=True,
                                        data_page_version="1.0", write_page_index=True)),
    ("gen_plain_v2_lz4", dict(compression="lz4", use_dictionary=False,
                              data_page_version="2.0")),
    ("gen_delta_v1_zstd", dict(compression="zstd", use_dictionary=False,
                               data_page_version="1.0",
                               column_encoding={"s": "DELTA_BYTE_ARRAY",
                                                "req": "DELTA_BYTE_ARRAY",
                                                "bin": "DELTA_LENGTH_BYTE_ARRAY",
                                                "i32": "DELTA_BINARY_PACKED",
                                                "i64": "DELTA_BINARY_PACKED",
                                                "f64": "BYTE_STREAM_SPLIT",
                                                "f32": "BYTE_STREAM_SPLIT",
                                                "fixed": "DELTA_BYTE_ARRAY"})),
    ("gen_delta_v2_none", dict(compression="none", use_dictionary=False,
                               data_page_version="2.0",
                               column_encoding={"s": "DELTA_LENGTH_BYTE_ARRAY",
                                                "req": "DELTA_LENGTH_BYTE_ARRAY",
                                                "bin": "DELTA_BYTE_ARRAY",
                                                "i32": "DELTA_BINARY_PACKED",
                                                "i64": "DELTA_BINARY_PACKED",
                                                "b": "RLE"})),
]

# Files copied from apache/parquet-testing, with the columns checked.
COPIED = {
    "hadoop_lz4_compressed.parquet": None,          # LZ4 codec, Hadoop framing (parquet-mr)
    "non_hadoop_lz4_compressed.parquet": None,      # LZ4 codec, raw block (old parquet-cpp)
    "lz4_raw_compressed.parquet": None,             # LZ4_RAW
    "concatenated_gzip_members.parquet": None,      # GZIP body of several members
    "delta_length_byte_array.parquet": None,        # DELTA_LENGTH_BYTE_ARRAY, ZSTD
    "delta_encoding_required_column.parquet": [     # parquet-mr DELTA_BYTE_ARRAY / DBP
        "c_customer_sk:", "c_birth_year:", "c_customer_id:", "c_first_name:",
        "c_email_address:"],
    "datapage_v2.snappy.parquet": None,             # v2 pages, RLE booleans, nested list
    "binary.parquet": None,
    "byte_array_decimal.parquet": None,
    "rle_boolean_encoding.parquet": None,
    "page_v2_empty_compressed.parquet": None,       # v2 pages with empty value sections
    "datapage_v2_empty_datapage.snappy.parquet": None,
    "dict-page-offset-zero.parquet": None,
    "fixed_length_byte_array.parquet": None,
    "byte_stream_split.zstd.parquet": None,
    "nulls.snappy.parquet": None,
    "nested_lists.snappy.parquet": None,
}


def escape(b):
    """'=' + text with \\xHH escapes, or '#' + hex, whichever is shorter."""
    text = "".join(chr(c) if 32 <= c < 127 and c != 92 else "\\x%02x" % c for c in b)
    return "=" + text if len(text) <= 2 * len(b) else "#" + b.hex()


def physical_bytes(value, ptype):
    if ptype in ("BYTE_ARRAY", "FIXED_LEN_BYTE_ARRAY"):
        return value.encode() if isinstance(value, str) else bytes(value)
    if ptype == "BOOLEAN":
        return b"\x01" if value else b"\x00"
    fmt = {"INT32": "<i", "INT64": "<q", "FLOAT": "<f", "DOUBLE": "<d"}[ptype]
    return struct.pack(fmt, value)


def leaf_array(col, parts):
    """Flatten a nested arrow column down to the leaf named by parts."""
    arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    for part in parts:
        t = arr.type
        if pa.types.is_map(t):
            arr = arr.keys if part == "key" else arr.items if part == "value" else arr
        elif pa.types.is_list(t) or pa.types.is_large_list(t):
            if part in ("list", "bag", "array"):
                continue  # the repeated group of the 3-level list encoding
            arr = arr.flatten()
        elif pa.types.is_struct(t):
            arr = arr.flatten()[t.get_field_index(part)]  # applies parent nulls
        else:
            continue
    while pa.types.is_list(arr.type):
        arr = arr.flatten()
    return arr


def expect_lines(arr, ptype, nested):
    if pa.types.is_decimal(arr.type):
        out = []
        for v in arr.to_pylist():
            out.append("-" if v is None else str(int(v.scaleb(arr.type.scale))))
        return "decimal", out
    if pa.types.is_timestamp(arr.type) or pa.types.is_date(arr.type):
        arr = arr.cast(pa.int64() if ptype == "INT64" else pa.int32())
    vals = arr.to_pylist()
    if nested:
        return "leaf", [escape(physical_bytes(v, ptype)) for v in vals if v is not None]
    return "flat", ["-" if v is None else escape(physical_bytes(v, ptype)) for v in vals]


def write_expect(fname, expect, only=None):
    path = os.path.join(OUT, fname)
    pf = pq.ParquetFile(path)
    md = pf.metadata
    sections = []
    for i in range(md.num_columns):
        colmd = md.row_group(0).column(i)
        dotted = colmd.path_in_schema
        if only is not None and dotted not in only:
            continue
        ptype = colmd.physical_type
        if ptype == "INT96":
            continue
        top, *parts = dotted.split(".")
        col = pf.read(columns=[top]).column(0)
        nested = pf.schema.column(i).max_repetition_level > 0
        mode, lines = expect_lines(leaf_array(col, parts), ptype, nested)
        sections.append("column %s %s %d\n" % (dotted, mode, len(lines)) +
                        "".join(l + "\n" for l in lines))
    with open(os.path.join(OUT, expect), "w") as f:
        f.write("".join(sections))


# Pages bigger than the windows of tests/decode/test_stream.c (which decodes
# them through pq_stream with windows of a few KiB): a list<int64> column
# (tokens, PLAIN as DuckDB writes it), nullable strings with a few values of
# 20 KiB (a random 4 KiB block repeated: SNAPPY copies reach 4 KiB back) and
# a dictionary-encoded string column; one file per codec pyarrow writes.
STREAM_ROWS = 160
STREAM_CODECS = ["none", "snappy", "zstd", "gzip", "brotli", "lz4"]


def stream_table():
    rng = random.Random(7)
    block = bytes(rng.randrange(256) for _ in range(4096)).hex()[:4096]
    ids, text, cat = [], [], []
    for i in range(STREAM_ROWS):
        n = rng.randrange(0, 91)
        ids.append(None if i % 37 == 5 else
                   [None if rng.random() < 0.01 else rng.randrange(300) for _ in range(n)])
        if i % 80 == 17:
            text.append(block * 5)
        elif i % 9 == 2:
            text.append(None)
        else:
            text.append(" ".join(rng.choice(["youmu", "konpaku", "ghost", "garden", "sword"])
                                 for _ in range(rng.randrange(0, 60))))
        cat.append(None if i % 11 == 0 else "cat-%d" % rng.randrange(12))
    return pa.table({
        "ids": pa.array(ids, pa.list_(pa.int64())),
        "text": pa.array(text, pa.string()),
        "cat": pa.array(cat, pa.string()),
    })


def stream_fixtures():
    t = stream_table()
    names = []
    for codec in STREAM_CODECS:
        fname = "stream_%s.parquet" % codec
        pq.write_table(t, os.path.join(OUT, fname), compression=codec,
                       use_dictionary=["cat"], data_page_size=32 << 10,
                       data_page_version="1.0" if codec != "zstd" else "2.0")
        write_expect(fname, "stream_table.expect")
        names.append((fname, "stream_table.expect"))
    return names


def main():
    # the parquet-testing corpus: as the integration tests find it (tests/integration/conftest.py)
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    src = sys.argv[1] if len(sys.argv) > 1 else (
        os.environ.get("YOUMUFS_PARQUET_TESTING") or
        os.path.join(repo, "..", "shared", "parquet-testing", "data"))
    os.makedirs(OUT, exist_ok=True)
    t = table()
    names = []
    for name, opts in GENERATED:
        fname = name + ".parquet"
        # Small pages so every column chunk has several.
        pq.write_table(t, os.path.join(OUT, fname), data_page_size=256, write_batch_size=32,
                       row_group_size=50, **opts)
        write_expect(fname, "gen_table.expect")
        names.append((fname, "gen_table.expect"))
    for fname, cols in COPIED.items():
        shutil.copyfile(os.path.join(src, fname), os.path.join(OUT, fname))
        write_expect(fname, fname + ".expect", cols)
        names.append((fname, fname + ".expect"))
    names += stream_fixtures()
    lic = os.path.join(os.path.dirname(os.path.abspath(src)), "LICENSE.txt")
    if os.path.exists(lic):
        shutil.copyfile(lic, os.path.join(OUT, "LICENSE-parquet-testing.txt"))
    with open(os.path.join(OUT, "MANIFEST"), "w") as f:
        f.write("".join("%s %s\n" % n for n in names))


if __name__ == "__main__":
    main()
