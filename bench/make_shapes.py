#!/usr/bin/env python3
"""The data shapes of issue 10's memory matrix, 8 Parquet files each, deterministic (seeded):

  a-pyarrow-text-1m      pyarrow text, default writer settings (1 MiB pages, snappy,
                         dictionary that falls back to plain), documents of ~0.9 KB
  b-pyarrow-text-64k     the same documents, 64 KiB pages (no dictionary, write batches of
                         16 rows, so pages really are ~64 KiB: bench/quality.py small_pages)
  c-duckdb-text          DuckDB's default writer (snappy, 122,880-row row groups, pages cut
                         at ~100 MB uncompressed) over documents of ~5 KB: huge pages
  d-pyarrow-tokens       list<int64> `input_ids`, documents of 50..3000 token ids < 50256
                         (log-uniform, so small ids are frequent), pyarrow, zstd
  d-duckdb-tokens        the same files rewritten by DuckDB with its defaults: list<BIGINT>,
                         pages of ~100 MB in which rows (lists) continue on the next page
  e-pyarrow-int32-jsonl  list<int32> `input_ids`, pyarrow defaults, served as jsonl
  f-pyarrow-chat         chat `messages`, list<struct<role: string, content: string>> of 2..8
                         turns of ~0.6 KB (the same documents' words), pyarrow defaults, jsonl

A shape's name with "+id" (a-pyarrow-text-1m+id) is the same data with an int64 `id` column
beside it (the row's number in the shape), for column=id:<column> (issue 13); every shape but
the raw token ones (d-) has one.

SHAPES gives each one's column, mount options and epoch file extension. Full scale is about
1.5 GB of decoded data per shape (text: epoch bytes; tokens: 512M ids, a 1 GB u16 epoch);
--small (0.2: DuckDB's token pages still hold rows that span pages) is what
tests/integration/test_memory.py uses.

    python3 bench/make_shapes.py                       # every shape under bench/data/shapes
    python3 bench/make_shapes.py /tmp/s --small c-duckdb-text
    python3 bench/make_shapes.py --describe bench/data/shapes     # pages of what is there

DuckDB runs through the npm package of tests/integration/writers (node_modules/@duckdb/
node-api, `npm install` there) and its duckdb_write.mjs, which rewrites pyarrow-written sources.
"""
import argparse
import dataclasses
import json
import os
import shutil
import subprocess
import sys
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
WRITERS = os.path.join(ROOT, "tests", "integration", "writers")
sys.path.insert(0, HERE)

import make_dataset  # noqa: E402  (vocabulary)
import quality  # noqa: E402  (Compact, small_pages)

FILES = 8
EOS = 50256
SMALL = 0.2


@dataclasses.dataclass(frozen=True)
class Shape:
    name: str
    what: str           # one line for tables
    column: str
    options: str        # mount options besides column=
    ext: str            # epoch file extension
    writer: str         # pyarrow or duckdb

    def mount_options(self):
        return f"column={self.column}" + (f",{self.options}" if self.options else "")


TOKENS_RAW = f"format=raw,dtype=u16,sep={EOS}"
SHAPES = {s.name: s for s in [
    Shape("a-pyarrow-text-1m", "(a) pyarrow text, default 1 MiB pages", "text", "", "jsonl",
          "pyarrow"),
    Shape("b-pyarrow-text-64k", "(b) pyarrow text, 64 KiB pages", "text", "", "jsonl", "pyarrow"),
    Shape("c-duckdb-text", "(c) DuckDB text, default writer (huge pages)", "text", "", "jsonl",
          "duckdb"),
    Shape("d-pyarrow-tokens", f"(d) pyarrow list<int64> tokens, {TOKENS_RAW}", "input_ids",
          TOKENS_RAW, "bin", "pyarrow"),
    Shape("d-duckdb-tokens", f"(d) DuckDB list<int64> tokens, {TOKENS_RAW}", "input_ids",
          TOKENS_RAW, "bin", "duckdb"),
    Shape("e-pyarrow-int32-jsonl", "(e) pyarrow list<int32> tokens as jsonl", "input_ids", "",
          "jsonl", "pyarrow"),
    Shape("f-pyarrow-chat", "(f) pyarrow chat messages list<struct<role, content>> as jsonl",
          "messages", "", "jsonl", "pyarrow"),
]}

# full-scale sizes, per file
TEXT_BYTES = 190 << 20          # text of (a), (b), (c): ~1.5 GB in 8 files
TOKENS = 64 << 20               # ids per file of (d): 512M in all
TOKENS_E = 32 << 20             # ids per file of (e): ~1.5 GB of jsonl in all


def present(data, names):
    """(name, Shape, dataset directory) of each shape named (a comma-separated list) whose
    data is under `data`; a shape with none is said on stderr and left out."""
    for name in names.split(","):
        dataset = os.path.join(data, name)
        if os.path.isdir(dataset):
            yield name, SHAPES[name], dataset
        else:
            print(f"{name}: no data at {dataset} (bench/make_shapes.py makes it)",
                  file=sys.stderr)


def warm_page_cache(dataset):
    """Read every file of the dataset once, so that the runs of a side-by-side comparison
    all find it in the page cache: the first binary to read a shape read it from disk, the
    others from memory (one node's part of f-pyarrow-chat: 133 against 647 MB/s)."""
    for name in sorted(os.listdir(dataset)):
        with open(os.path.join(dataset, name), "rb") as f:
            while f.read(8 << 20):
                pass


def log(msg):
    print(f"[make_shapes {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# ------------------------------------------------------------------ generators

def base_text(seed, n_words=8_000_000):
    """~55 MB of Zipf-distributed words (make_dataset.py's vocabulary); documents are slices."""
    rng = np.random.default_rng(seed)
    words = make_dataset.vocabulary(rng, 20_000)
    p = 1.0 / np.arange(1, len(words) + 1, dtype=np.float64) ** 1.07
    return " ".join(words[rng.choice(len(words), size=n_words, p=p / p.sum())].tolist())


def text_docs(rng, base, total_bytes, log_mean, log_sigma, lo, hi):
    """Documents of log-normal length (bytes) cut from base at word starts, until total_bytes."""
    docs, n = [], 0
    while n < total_bytes:
        lens = np.clip(rng.lognormal(log_mean, log_sigma, 4096), lo, hi).astype(np.int64)
        starts = rng.integers(0, len(base) - hi - 64, len(lens))
        for s, k in zip(starts.tolist(), lens.tolist()):
            s = base.find(" ", s) + 1
            docs.append(base[s:s + k].strip())
            n += k
            if n >= total_bytes:
                break
    return docs


def token_lists(rng, total, dtype):
    """Lists of 50..3000 ids < EOS (log-uniform: id k has probability ~ 1/(k+1)), ~total ids."""
    n = max(1, int(total / 1525))
    lens = rng.integers(50, 3001, n)
    offsets = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(lens, out=offsets[1:])
    ids = np.exp(rng.random(int(offsets[-1])) * np.log(EOS)).astype(np.int64) - 1
    values = pa.array(ids.astype(np.dtype(dtype)))
    return pa.ListArray.from_arrays(pa.array(offsets), values)


def _with_ids(cols, first):
    """cols with an int64 `id` after them: first, first + 1, ... (the rows' numbers)."""
    n = len(next(iter(cols.values())))
    return {**cols, "id": pa.array(np.arange(first, first + n, dtype=np.int64))}, first + n


def write_text(out, seed, scale, log_mean, log_sigma, lo, hi, ids=False, **writer_opts):
    """The documents; with ids, an int64 `id` column after `text` (page_table takes the first
    field for the served one)."""
    base = base_text(seed)
    rng = np.random.default_rng(seed + 1)
    first = 0
    for f in range(FILES):
        docs = text_docs(rng, base, int(TEXT_BYTES * scale), log_mean, log_sigma, lo, hi)
        cols = {"text": pa.array(docs, pa.string())}
        if ids:
            cols, first = _with_ids(cols, first)
        pq.write_table(pa.table(cols), os.path.join(out, f"part-{f:03d}.parquet"), **writer_opts)


def write_tokens(out, seed, total, dtype, ids=False, **writer_opts):
    rng = np.random.default_rng(seed)
    first = 0
    for f in range(FILES):
        cols = {"input_ids": token_lists(rng, total, dtype)}
        if ids:
            cols, first = _with_ids(cols, first)
        pq.write_table(pa.table(cols), os.path.join(out, f"part-{f:03d}.parquet"),
                       **writer_opts)


def write_chat(out, seed, scale, ids=False):
    """Conversations of 2..8 turns, roles user / assistant in turn, contents cut from the
    documents' text (log-normal, ~0.6 KB), TEXT_BYTES * scale of contents a file."""
    base = base_text(seed)
    rng = np.random.default_rng(seed + 1)
    first = 0
    for f in range(FILES):
        contents = text_docs(rng, base, int(TEXT_BYTES * scale), 6.0, 0.9, 5, 20_000)
        turns = rng.integers(2, 9, len(contents) // 2)
        offsets = np.concatenate([[0], np.cumsum(turns)])
        offsets = offsets[offsets <= len(contents)].astype(np.int32)
        n = int(offsets[-1])
        position = np.arange(n) - np.repeat(offsets[:-1], np.diff(offsets))
        roles = pa.array(np.where(position % 2 == 0, "user", "assistant"))
        turn = pa.StructArray.from_arrays([roles, pa.array(contents[:n], pa.string())],
                                          names=["role", "content"])
        cols = {"messages": pa.ListArray.from_arrays(pa.array(offsets), turn)}
        if ids:
            cols, first = _with_ids(cols, first)
        pq.write_table(pa.table(cols), os.path.join(out, f"part-{f:03d}.parquet"))


def duckdb_problem():
    if not shutil.which("node"):
        return "node is not on PATH"
    if not os.path.isdir(os.path.join(WRITERS, "node_modules", "@duckdb", "node-api")):
        return f"npm package @duckdb/node-api missing: run `npm install` in {WRITERS}"
    return None


def duckdb_rewrite(src_dir, out, columns):
    """Every part of src_dir rewritten by DuckDB with its default Parquet writer settings."""
    problem = duckdb_problem()
    if problem:
        raise RuntimeError(f"DuckDB writer unavailable: {problem}")
    srcs = sorted(x for x in os.listdir(src_dir) if x.endswith(".parquet"))
    spec = {"sources": [{"parquet": os.path.join(src_dir, x)} for x in srcs], "out_dir": out,
            "options": {}, "columns": columns}
    spec_path = os.path.join(out, ".spec.json")
    with open(spec_path, "w") as fh:
        json.dump(spec, fh)
    p = subprocess.run(["node", os.path.join(WRITERS, "duckdb_write.mjs"), spec_path],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=3600)
    os.remove(spec_path)
    if p.returncode != 0:
        raise RuntimeError(f"duckdb_write.mjs failed:\n{p.stdout.decode()[-3000:]}")


def generate(root, name, scale=1.0, seed=10):
    """root/name with the 8 files of shape `name` at `scale` (written once: an existing
    directory is kept). Returns the directory."""
    d = os.path.join(root, name)
    if os.path.isdir(d):
        return d
    ids = name.endswith("+id")
    if ids:
        name = name[:-len("+id")]
        if name.startswith("d-"):
            raise ValueError(f"+id: the raw token shapes serve one column: no {name!r}+id")
    if name == "d-duckdb-tokens":
        generate(root, "d-pyarrow-tokens", scale, seed)     # the same lists, rewritten
    tmp = d + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    t0 = time.monotonic()
    doc1k = dict(log_mean=6.5, log_sigma=0.8, lo=20, hi=60_000)       # mean ~0.9 KB
    if name == "a-pyarrow-text-1m":
        write_text(tmp, seed, scale, ids=ids, **doc1k)
    elif name == "b-pyarrow-text-64k":
        src = tmp + "-src"
        shutil.rmtree(src, ignore_errors=True)
        os.makedirs(src)
        write_text(src, seed, scale, ids=ids, **doc1k)      # the documents of (a)
        quality.small_pages(src, tmp, 64 << 10, 16)
        shutil.rmtree(src)
    elif name == "c-duckdb-text":
        src = tmp + "-src"
        shutil.rmtree(src, ignore_errors=True)
        os.makedirs(src)
        write_text(src, seed + 2, scale, log_mean=8.45, log_sigma=0.35, lo=500, hi=40_000,
                   ids=ids, compression="none", use_dictionary=False)   # mean ~5 KB
        duckdb_rewrite(src, tmp, ["text", "id"] if ids else ["text"])
        shutil.rmtree(src)
    elif name == "d-pyarrow-tokens":
        write_tokens(tmp, seed + 3, int(TOKENS * scale), "int64", compression="zstd")
    elif name == "d-duckdb-tokens":
        duckdb_rewrite(os.path.join(root, "d-pyarrow-tokens"), tmp, ["input_ids"])
    elif name == "e-pyarrow-int32-jsonl":
        write_tokens(tmp, seed + 4, int(TOKENS_E * scale), "int32", ids=ids)
    elif name == "f-pyarrow-chat":
        write_chat(tmp, seed + 5, scale, ids=ids)
    else:
        raise ValueError(f"unknown shape {name!r} (known: {', '.join(SHAPES)})")
    os.rename(tmp, d)
    log(f"{d}: {sum(os.path.getsize(os.path.join(d, x)) for x in os.listdir(d)) / 1e6:.0f} MB "
        f"in {time.monotonic() - t0:.0f} s")
    return d


# ------------------------------------------------------------------ page description

def _rep_zeros(buf, n_values):
    """Rows starting in a v1 data page (repetition levels of bit width 1 come first: a 4-byte
    length, then the RLE/bit-packed hybrid): the number of level-0 entries, and the first level."""
    end = 4 + int.from_bytes(buf[:4], "little")
    c = quality.Compact(buf[:end])
    c.p = 4
    zeros = seen = 0
    first = None
    while seen < n_values and c.p < end:
        h = c.varint()
        if h & 1:                                   # bit-packed: (h >> 1) groups of 8
            nb = h >> 1
            bits = np.unpackbits(np.frombuffer(buf[c.p:c.p + nb], np.uint8), bitorder="little")
            bits = bits[:n_values - seen]
            c.p += nb
        else:                                       # RLE: h >> 1 copies of one byte
            v = buf[c.p]
            c.p += 1
            bits = np.full(min(h >> 1, n_values - seen), v, np.uint8)
        if first is None and len(bits):
            first = int(bits[0])
        zeros += int(len(bits) - np.count_nonzero(bits))
        seen += len(bits)
    return zeros, first


def page_table(path, column):
    """One dict per data page of `column` in path: rows (rows that start in the page), values,
    decoded (uncompressed page bytes), spans (the page starts inside a row)."""
    pf = pq.ParquetFile(path)
    md = pf.metadata
    nested = column != pf.schema_arrow.field(0).name or \
        pa.types.is_list(pf.schema_arrow.field(column).type)
    out = []
    with open(path, "rb") as f:
        for g in range(md.num_row_groups):
            rg = md.row_group(g)
            col = next(rg.column(j) for j in range(rg.num_columns)
                       if rg.column(j).path_in_schema.split(".")[0] == column)
            codec = pa.Codec(col.compression.lower()) if col.compression != "UNCOMPRESSED" else None
            start = col.data_page_offset
            if col.has_dictionary_page and col.dictionary_page_offset:
                start = min(start, col.dictionary_page_offset)
            pos, end = start, start + col.total_compressed_size
            while pos < end:
                f.seek(pos)
                head = f.read(1 << 16)
                c = quality.Compact(head)
                h = c.struct({1: 1, 2: 1, 3: 1, 5: {1: 1}, 8: {1: 1, 3: 1}})
                ptype, usize, csize = h[1], h[2], h[3]
                body_at = pos + c.p
                pos = body_at + csize
                if ptype == 3:
                    out.append({"rows": h[8][3], "values": h[8][1], "decoded": usize,
                                "spans": False})
                elif ptype == 0:
                    n = h[5][1]
                    rows, first = n, 0
                    if nested:
                        f.seek(body_at)
                        body = f.read(csize)
                        if codec is not None:
                            body = codec.decompress(body, decompressed_size=usize).to_pybytes()
                        rows, first = _rep_zeros(body, n)
                    out.append({"rows": rows, "values": n, "decoded": usize,
                                "spans": first not in (0, None)})
    return out


def describe(d, column):
    """Pages of one shape directory, summed up in a dict (and the per-page list)."""
    files = sorted(os.path.join(d, x) for x in os.listdir(d) if x.endswith(".parquet"))
    pages = [p for f in files for p in page_table(f, column)]
    rows = np.array([p["rows"] for p in pages])
    dec = np.array([p["decoded"] for p in pages])
    meta = [pq.ParquetFile(f).metadata for f in files]
    return {"files": len(files), "bytes": sum(os.path.getsize(f) for f in files),
            "rows": int(sum(m.num_rows for m in meta)),
            "file_rows": [m.num_rows for m in meta],
            "row_groups": int(sum(m.num_row_groups for m in meta)),
            "created_by": meta[0].created_by, "pages": len(pages),
            "pages_per_file": len(pages) / max(1, len(files)),
            "rows_per_page": (float(rows.mean()), int(rows.min()), int(rows.max())),
            "decoded_per_page": (float(dec.mean()), int(dec.min()), int(dec.max())),
            "decoded": int(dec.sum()),
            "spanning": int(sum(p["spans"] for p in pages)),
            "values_per_page": float(np.mean([p["values"] for p in pages]))}


def describe_line(name, s):
    r, dcd = s["rows_per_page"], s["decoded_per_page"]
    return (f"| {name} | {s['files']} | {s['rows']:,} | {s['bytes'] / 1e6:.0f} | "
            f"{s['decoded'] / 1e6:.0f} | {s['row_groups']} | {s['pages']} | "
            f"{s['pages_per_file']:.1f} | {r[0]:,.0f} ({r[1]:,}-{r[2]:,}) | "
            f"{dcd[0] / 1e6:.2f} ({dcd[1] / 1e6:.2f}-{dcd[2] / 1e6:.2f}) | "
            f"{s['spanning']} | {s['created_by'].split(' (')[0]} |")


DESCRIBE_HEADER = [
    "| shape | files | rows | file MB | decoded MB | row groups | pages | pages/file | "
    "rows/page mean (min-max) | decoded MB/page mean (min-max) | pages starting mid-row | "
    "writer |",
    "|---|---:|---:|---:|---:|---:|---:|---:|---|---|---:|---|"]


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("root", nargs="?", default=os.path.join(HERE, "data", "shapes"))
    ap.add_argument("shapes", nargs="*", help=f"default: all ({', '.join(SHAPES)})")
    ap.add_argument("--small", action="store_true", help=f"scale {SMALL} (tests)")
    ap.add_argument("--scale", type=float, help="fraction of the full size")
    ap.add_argument("--describe", action="store_true", help="print the page table of each shape")
    args = ap.parse_intermixed_args()
    scale = args.scale if args.scale else (SMALL if args.small else 1.0)
    names = args.shapes or list(SHAPES)
    for n in names:
        if n.removesuffix("+id") not in SHAPES:
            sys.exit(f"unknown shape {n!r} (known: {', '.join(SHAPES)}, and those but d- +id)")
    if not args.describe:
        for n in names:
            generate(args.root, n, scale)
    print("\n".join(DESCRIBE_HEADER))
    for n in names:
        d = os.path.join(args.root, n)
        if os.path.isdir(d):
            print(describe_line(n, describe(d, SHAPES[n.removesuffix("+id")].column)), flush=True)


if __name__ == "__main__":
    main()
