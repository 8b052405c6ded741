#!/usr/bin/env python3
"""Shuffle quality of youmufs against a streaming shuffle buffer and a full
shuffle, side by side in one run on the same dataset (issue 4, acceptance 5).

Every method is reduced to the sequence of global source rows it serves
(position in the concatenation of all files in sorted path order):

  youmufs page    `youmufs cat -o rowid,shuffle=page,buffer=B,seed=S`, the
                  "_row" field of each jsonl record (several B, two seeds)
  youmufs none    the same with shuffle=none: the natural order (the floor)
  stream 10k      a 10,000-row streaming shuffle buffer over the natural
                  order: the classic Hugging Face `datasets` buffer
                  (datasets <= 4.x BufferShuffledExamplesIterable: once the
                  buffer is full, emit a uniformly chosen slot and put the
                  incoming row in its place; at the end shuffle the rest)
  HF 5.x sim      a faithful simulation of what the installed `datasets`
                  (5.x) does for `IterableDataset.shuffle(seed, buffer_size)`
                  with default row iteration: the file (shard) list is
                  permuted with default_rng(seed), split contiguously into
                  max_buffer_input_shards=10 shard groups that are
                  interleaved 1,000 rows at a time, and the buffer is shuffled whole
                  each time it is full, half of it emitted, half kept
  HF 5.x real     the real `load_dataset("parquet", data_files=...,
                  streaming=True).shuffle(seed, buffer_size)` reading only
                  the `id` column (= global row for bench/make_dataset.py
                  data; checked), when `datasets` is importable
  full shuffle    numpy default_rng(seed).permutation(N): the ceiling

Metrics, from the row sequence r[0..N) and a row -> (file, page) map:
  |rho|        Spearman rank correlation of output position and source row
               (0 ideal)
  same page    share of neighbouring outputs (r[i], r[i+1]) from one page
  same file    the same for files
  files/win    distinct files per non-overlapping window of --window
               records (mean over windows); "% full" divides by the full
               shuffle's exact expectation (hypergeometric)
  pages/win    distinct pages per window, likewise
  MAD/N        mean |position - source row| / N (uniform permutation: 1/3)

Page boundaries are exact: the script walks the Parquet page headers of the
served column (thrift compact PageHeader, num_values / num_rows) itself,
checks that page rows add up to each row group's rows, and checks the map
against youmufs by serving one epoch with buffer=1 (each page its own
segment), where the same-page share of neighbours must equal (N-P)/(N-1).

Dependencies: numpy, pyarrow, matplotlib (pip install matplotlib), and
optionally datasets for the real Hugging Face run; build/youmufs
(bash scripts/build.sh). Nothing is added to scripts/install-deps.sh.

    python3 bench/make_dataset.py --out bench/data/quality --size 300M --files 64 --page-size 64K
    python3 bench/quality.py bench/data/quality --small-pages bench/data/quality-64k \\
        --out bench/results/quality.md --plot bench/results/quality.png

--small-pages adds a copy of the dataset whose pages really are ~64 KiB
(~100 rows): pyarrow checks data_page_size only once per write batch of
1024 rows and keeps unique documents in the dictionary page, so
make_dataset.py's ~700-byte documents get pages of >= 1024 rows whatever
--page-size says.
"""
import argparse
import math
import os
import re
import shlex
import subprocess
import sys
import time

import numpy as np
import pyarrow.parquet as pq

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROW_RE = re.compile(rb'"_row":(\d+)\}\n')


# ---------------------------------------------------------------- page map

class Compact:
    """Just enough of the thrift compact protocol to read a PageHeader."""

    def __init__(self, buf):
        self.b, self.p = buf, 0

    def byte(self):
        v = self.b[self.p]
        self.p += 1
        return v

    def varint(self):
        shift = v = 0
        while True:
            x = self.byte()
            v |= (x & 0x7F) << shift
            if not x & 0x80:
                return v
            shift += 7

    def zigzag(self):
        v = self.varint()
        return (v >> 1) ^ -(v & 1)

    def skip(self, t):
        if t in (1, 2):
            return
        if t == 3:
            self.p += 1
        elif t in (4, 5, 6):
            self.varint()
        elif t == 7:
            self.p += 8
        elif t == 8:
            n = self.varint()  # not `self.p += self.varint()`: p is read first
            self.p += n
        elif t in (9, 10):
            h = self.byte()
            n = h >> 4
            if n == 15:
                n = self.varint()
            for _ in range(n):
                self.skip_elem(h & 0x0F)
        elif t == 11:
            n = self.varint()
            if n:
                kv = self.byte()
                for _ in range(n):
                    self.skip_elem(kv >> 4)
                    self.skip_elem(kv & 0x0F)
        elif t == 12:
            self.struct({})
        else:
            raise ValueError(f"thrift type {t}")
        if self.p > len(self.b):
            raise IndexError

    def skip_elem(self, t):
        if t in (1, 2):  # booleans in containers take one byte
            self.p += 1
        else:
            self.skip(t)

    def struct(self, want):
        """Read a struct; returns {field id: value} for ids in `want`
        (value: an int, or a nested dict when want[id] is a dict)."""
        out, last = {}, 0
        while True:
            h = self.byte()
            if h == 0:
                return out
            t, d = h & 0x0F, h >> 4
            fid = last + d if d else self.zigzag()
            last = fid
            sub = want.get(fid)
            if isinstance(sub, dict) and t == 12:
                out[fid] = self.struct(sub)
            elif sub is not None and t in (4, 5, 6):
                out[fid] = self.zigzag()
            else:
                self.skip(t)


def chunk_page_rows(f, start, length):
    """Rows of each data page of the column chunk at [start, start+length)."""
    rows, pos, end = [], start, start + length
    while pos < end:
        size = 4096
        while True:
            f.seek(pos)
            c = Compact(f.read(size))
            try:
                h = c.struct({1: 1, 3: 1, 5: {1: 1}, 8: {1: 1, 3: 1}})
                break
            except IndexError:
                if size > (64 << 20):
                    raise
                size *= 4
        ptype = h[1]
        if ptype == 0:  # DATA_PAGE: flat column, no repetition -> values = rows
            rows.append(h[5][1])
        elif ptype == 3:  # DATA_PAGE_V2
            rows.append(h[8][3])
        pos += c.p + h[3]
    return rows


def page_map(files, column):
    """Per global row: file number and global page number, plus page sizes."""
    file_of, page_rows = [], []
    for fi, path in enumerate(files):
        md = pq.ParquetFile(path).metadata
        with open(path, "rb") as f:
            for g in range(md.num_row_groups):
                rg = md.row_group(g)
                col = next(rg.column(j) for j in range(rg.num_columns)
                           if rg.column(j).path_in_schema == column)
                offs = [col.data_page_offset]
                if col.has_dictionary_page and col.dictionary_page_offset:
                    offs.append(col.dictionary_page_offset)
                pr = chunk_page_rows(f, min(offs), col.total_compressed_size)
                if sum(pr) != rg.num_rows:
                    sys.exit(f"{path} row group {g}: page rows {sum(pr)} != {rg.num_rows} "
                             "(nested or nullable column? use a flat one)")
                page_rows += pr
                file_of += [fi] * len(pr)
    page_rows = np.array(page_rows, dtype=np.int64)
    page_of_row = np.repeat(np.arange(len(page_rows)), page_rows)
    file_of_row = np.repeat(np.array(file_of), page_rows)
    return file_of_row, page_of_row, page_rows


# ---------------------------------------------------------------- methods

def parse_rows(stream, limit=None):
    """The "_row" fields of `-o rowid` jsonl read from a binary stream (a pipe or an
    epoch file of a mount), in order, as int64. Stops after about `limit` bytes if given
    (whole records only). Returns (rows, trailing bytes that are not a whole record)."""
    parts, tail, got = [], b"", 0
    while limit is None or got < limit:
        buf = stream.read(64 << 20 if limit is None else min(64 << 20, limit - got))
        if not buf:
            break
        got += len(buf)
        buf = tail + buf
        cut = buf.rfind(b"\n") + 1
        tail = buf[cut:]
        parts.append(np.array(ROW_RE.findall(buf, 0, cut), dtype=np.int64))
    rows = np.concatenate(parts) if parts else np.empty(0, dtype=np.int64)
    return rows, tail


def youmufs_rows(binary, dataset, opts):
    cmd = [binary, "cat", "-o", opts, dataset, "epoch-0.jsonl"]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    rows, tail = parse_rows(p.stdout)
    if p.wait() != 0 or tail:
        sys.exit(f"{shlex.join(cmd)} failed (exit {p.returncode})")
    return rows


def classic_buffer(src, buffer_size, seed):
    """datasets <= 4.x BufferShuffledExamplesIterable.__iter__, on row ids."""
    rng = np.random.default_rng(seed)
    out = np.empty(len(src), dtype=np.int64)
    buf = list(src[:buffer_size])
    n = 0
    rand = iter(())
    for x in src[buffer_size:].tolist():
        i = next(rand, None)
        if i is None:
            rand = iter(rng.integers(0, buffer_size, size=1000).tolist())
            i = next(rand)
        out[n] = buf[i]
        n += 1
        buf[i] = x
    rng.shuffle(buf)
    out[n:] = buf
    return out


def hf5_sim(file_rows, buffer_size, seed, max_input_shards=10):
    """datasets 5.x IterableDataset.shuffle(seed, buffer_size) with default
    (row) iteration: shard list permuted (_shuffle_gen_kwargs on a copy of
    default_rng(seed)), contiguous split into min(shards, 10) groups
    (_distribute_shards) interleaved in batches of buffer_size // 10 rows
    (CyclingMultiSources, all_exhausted_without_replacement), then BufferShuffledExamplesIterable:
    at buffer_size rows permute the buffer, emit all but buffer_size//2."""
    nf = len(file_rows)
    starts = np.concatenate([[0], np.cumsum(file_rows)])
    order = list(range(nf))
    np.random.default_rng(seed).shuffle(order)
    k = min(nf, max_input_shards)
    sizes = [nf // k + (1 if i < nf % k else 0) for i in range(k)]
    groups, at = [], 0
    for s in sizes:
        groups.append(np.concatenate([np.arange(starts[f], starts[f + 1]) for f in order[at:at + s]]))
        at += s
    # round robin over the groups, one batch of buffer_size // 10 rows at a
    # time (RebatchedArrowExamplesIterable under CyclingMultiSources; with
    # buffer_size=1 this is row by row), skipping exhausted groups
    b = max(1, buffer_size // max(1, max_input_shards))
    chunks = [[g[i:i + b] for i in range(0, len(g), b)] for g in groups]
    stream = np.concatenate([c[t] for t in range(max(len(c) for c in chunks))
                             for c in chunks if t < len(c)])
    rng = np.random.default_rng(seed)
    out, buf, keep = [], np.empty(0, dtype=np.int64), buffer_size // 2
    pos = 0
    while pos < len(stream):
        take = buffer_size - len(buf)
        buf = np.concatenate([buf, stream[pos:pos + take]])
        pos += take
        if len(buf) >= buffer_size:
            idx = rng.permutation(len(buf))
            out.append(buf[idx[:len(buf) - keep]])
            buf = buf[idx[len(buf) - keep:]]
    if len(buf):
        out.append(buf[rng.permutation(len(buf))])
    return np.concatenate(out)


def hf5_real(files, buffer_size, seed):
    import datasets
    datasets.logging.set_verbosity_error()
    datasets.disable_progress_bars()
    ds = datasets.load_dataset("parquet", data_files=files, split="train", streaming=True,
                               columns=["id"])
    ds = ds.shuffle(seed=seed, buffer_size=buffer_size)
    return np.fromiter((ex["id"] for ex in ds), dtype=np.int64), datasets.__version__


# ---------------------------------------------------------------- metrics

def expected_distinct(sizes, n, w):
    """E[distinct groups] in w rows drawn without replacement from n rows."""
    lc = lambda a, b: math.lgamma(a + 1) - math.lgamma(b + 1) - math.lgamma(a - b + 1)
    base = lc(n, w)
    return sum(1.0 - (math.exp(lc(n - s, w) - base) if n - s >= w else 0.0) for s in sizes)


def metrics(r, file_of, page_of, window, prefix=False):
    """Quality metrics of the row sequence r. r must be a permutation of all rows,
    unless prefix=True: then r is the first len(r) records of an epoch, rho is taken
    between output position and the rank of the source row within r, and MAD/N uses the
    dataset's row count."""
    n = len(r)
    if prefix:
        if n < 2 or np.unique(r).size != n:
            raise ValueError("a prefix needs at least two distinct rows")
        ranks = np.empty(n, dtype=np.float64)
        ranks[np.argsort(r, kind="stable")] = np.arange(n)
        d = np.arange(n, dtype=np.float64) - ranks
        rho = 1.0 - 6.0 * float(np.dot(d, d)) / (n * (n * n - 1.0))
        d = np.arange(n, dtype=np.float64) - r
        n_all = len(file_of)
    else:
        if not np.array_equal(np.sort(r), np.arange(n)):
            raise ValueError("not a permutation of the rows")
        pos = np.arange(n, dtype=np.float64)
        d = pos - r
        rho = 1.0 - 6.0 * float(np.dot(d, d)) / (n * (n * n - 1.0))
        n_all = n
    f, p = file_of[r], page_of[r]
    nw = n // window
    fw = f[:nw * window].reshape(nw, window)
    pw = p[:nw * window].reshape(nw, window)
    distinct = lambda m: float(np.mean([np.unique(row).size for row in m]))
    return {"rho": abs(rho), "same_page": float(np.mean(p[1:] == p[:-1])),
            "same_file": float(np.mean(f[1:] == f[:-1])),
            "files_win": distinct(fw) if nw else float("nan"),
            "pages_win": distinct(pw) if nw else float("nan"),
            "mad": float(np.mean(np.abs(d))) / n_all}


# ---------------------------------------------------------------- main

def small_pages(src, dst, page_size, batch):
    """Copy src to dst with pages that really are about page_size: pyarrow
    checks the page size only after each write batch (1024 rows by default)
    and dictionary pages hold the values, so make_dataset.py's ~700-byte
    documents give pages of >= 1024 rows whatever --page-size says."""
    os.makedirs(dst, exist_ok=True)
    for name in sorted(x for x in os.listdir(src) if x.endswith(".parquet")):
        pf = pq.ParquetFile(os.path.join(src, name))
        with pq.ParquetWriter(os.path.join(dst, name), pf.schema_arrow, compression="snappy",
                              use_dictionary=False, data_page_size=page_size,
                              write_batch_size=batch) as w:
            for g in range(pf.num_row_groups):
                w.write_table(pf.read_row_group(g))


def evaluate(dataset, args, seeds, buffers, log, hf_cache):
    files = sorted(os.path.join(d, x) for d, _, fs in os.walk(dataset) for x in fs
                   if x.endswith(".parquet"))
    file_of, page_of, page_rows = page_map(files, args.column)
    n, npages = len(file_of), len(page_rows)
    file_rows = np.bincount(file_of, minlength=len(files))
    log(f"{dataset}: {len(files)} files, {n} rows, {npages} pages of '{args.column}' "
        f"(rows/page: mean {page_rows.mean():.1f}, min {page_rows.min()}, max {page_rows.max()})")

    runs = []  # (label, group, seed, rows, metrics)

    def add(label, group, seed, rows):
        runs.append((label, group, seed, rows, metrics(rows, file_of, page_of, args.window)))
        log(f"  {label}, seed {seed}: done")

    base = "rowid,column=" + args.column
    none = youmufs_rows(args.binary, dataset, base + ",shuffle=none")
    if not np.array_equal(none, np.arange(n)):
        sys.exit("shuffle=none is not the natural order")
    add("youmufs shuffle=none", "none", None, none)

    # page-map check: buffer=1 makes every page its own segment
    one = youmufs_rows(args.binary, dataset, base + ",buffer=1,seed=0")
    same = int(np.sum(page_of[one][1:] == page_of[one][:-1]))
    page_check = same == n - npages
    log(f"  page map check (buffer=1): {same} same-page neighbours, expected {n - npages}: "
        f"{'ok' if page_check else 'MISMATCH'}")

    for b in buffers:
        for s in seeds:
            add(f"youmufs shuffle=page buffer={b}", f"page{b}", s,
                youmufs_rows(args.binary, dataset, f"{base},shuffle=page,buffer={b},seed={s}"))

    sb = args.stream_buffer
    for s in seeds:
        add(f"stream buffer {sb} over the natural order (classic HF buffer)", "stream", s,
            classic_buffer(np.arange(n), sb, s))
    for s in seeds:
        add(f"HF datasets 5.x shuffle(buffer_size={sb}), simulated", "hf5sim", s,
            hf5_sim(file_rows, sb, s))
    hf_note = "not run (--no-hf)"
    sim0 = next(r for lab, g, s, r, _ in runs if g == "hf5sim")
    if not args.no_hf:
        key = tuple(file_rows.tolist())  # the HF order depends only on files and rows
        try:
            if key not in hf_cache:
                starts = np.cumsum(file_rows) - file_rows
                for f, a, c in zip(files, starts, file_rows):
                    ids = pq.read_table(f, columns=["id"]).column(0).to_numpy()
                    if not np.array_equal(ids, np.arange(a, a + c)):
                        raise RuntimeError(f"{f}: column id is not the global row")
                hf_cache[key] = hf5_real(files, sb, seeds[0])
            real, ver = hf_cache[key]
            add(f"HF datasets {ver} shuffle(buffer_size={sb}), real", "hf5real", seeds[0], real)
            hf_note = (f"datasets {ver}, seed {seeds[0]}: the real order is "
                       f"{'identical to' if np.array_equal(real, sim0) else 'DIFFERENT from'} "
                       "the simulation's")
        except Exception as e:  # datasets missing or failing: report, keep going
            hf_note = f"not run: {type(e).__name__}: {e}"
        log(f"  HF real: {hf_note}")

    for s in seeds:
        add("full shuffle (uniform permutation)", "full", s, np.random.default_rng(s).permutation(n))

    w = args.window
    exp_files = expected_distinct(file_rows.tolist(), n, w)
    exp_pages = expected_distinct(page_rows.tolist(), n, w)
    exp_same_page = float(np.sum(page_rows * (page_rows - 1))) / (n * (n - 1.0))
    exp_same_file = float(np.sum(file_rows * (file_rows - 1))) / (n * (n - 1.0))
    L = [f"## `{dataset}`", "",
         f"{len(files)} files, {n} rows, column `{args.column}` in {npages} pages (rows per page: "
         f"mean {page_rows.mean():.1f}, min {page_rows.min()}, max {page_rows.max()}; rows per "
         f"file {file_rows.min()}-{file_rows.max()}). Window = {w} records ({n // w} "
         f"non-overlapping windows). Page map check against youmufs (buffer=1: one page per "
         f"segment, so same-page neighbours must be N-P): {'passed' if page_check else 'FAILED'}.", "",
         "| method | seed | \\|rho\\| | same page | same file | files / window | % of full | pages / window | % of full | MAD/N |",
         "|---|---|---|---|---|---|---|---|---|---|"]
    for label, g, s, r, m in runs:
        L.append(f"| {label} | {'-' if s is None else s} | {m['rho']:.4f} | {m['same_page']:.4f} | "
                 f"{m['same_file']:.4f} | {m['files_win']:.2f} | {100 * m['files_win'] / exp_files:.1f}% | "
                 f"{m['pages_win']:.1f} | {100 * m['pages_win'] / exp_pages:.1f}% | {m['mad']:.4f} |")
    L.append(f"| *uniform shuffle, exact expectation* | | 0 | {exp_same_page:.4f} | {exp_same_file:.4f} | "
             f"{exp_files:.2f} | 100% | {exp_pages:.1f} | 100% | 0.3333 |")
    L += ["", f"Real Hugging Face run: {hf_note}.", ""]
    return L, runs, n


def plot(path, title, runs, n):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    shown = {}
    for label, g, s, r, m in runs:
        if g not in shown and g != "hf5sim":
            shown[g] = (f"{label}, seed {s}" if s is not None else label, r)
    cols = math.ceil(len(shown) / 2)
    fig, axes = plt.subplots(2, cols, figsize=(3.6 * cols, 7.6), squeeze=False)
    pick = np.sort(np.random.default_rng(0).choice(n, size=min(n, 20000), replace=False))
    for ax, (g, (label, r)) in zip(axes.ravel(), shown.items()):
        ax.scatter(pick, r[pick], s=0.3, alpha=0.5, rasterized=True)
        ax.set_title(label.replace(" shuffle=", "\n").replace(", ", "\n"), fontsize=7)
        ax.set_xlabel("output position", fontsize=7)
        ax.set_ylabel("source row", fontsize=7)
        ax.tick_params(labelsize=6)
    for ax in axes.ravel()[len(shown):]:
        ax.axis("off")
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dataset", help="directory of *.parquet (bench/make_dataset.py output)")
    ap.add_argument("--column", default="text")
    ap.add_argument("--buffers", default="1000,10000,100000", help="youmufs buffer= values")
    ap.add_argument("--seeds", default="0,1", help="seeds for youmufs and the shuffles")
    ap.add_argument("--window", type=int, default=10000, help="records per window")
    ap.add_argument("--stream-buffer", type=int, default=10000)
    ap.add_argument("--small-pages", metavar="DIR",
                    help="also measure DIR: a copy of DATASET (made if missing) written without "
                         "dictionary and with write_batch_size=16, so pages are ~--page-size")
    ap.add_argument("--page-size", default="64K", help="data_page_size of --small-pages")
    ap.add_argument("--no-hf", action="store_true", help="skip the real datasets run")
    ap.add_argument("--binary", default=os.path.join(ROOT, "build", "youmufs"))
    ap.add_argument("--out", help="write the markdown report here")
    ap.add_argument("--plot", help="PNG of source row against output position (the --small-pages "
                                   "dataset gets a second PNG, -small-pages before .png)")
    args = ap.parse_args()
    t0 = time.time()
    seeds = [int(s) for s in args.seeds.split(",")]
    buffers = [int(b) for b in args.buffers.split(",")]
    log = lambda msg: print(f"[{time.time() - t0:6.1f}s] {msg}", file=sys.stderr, flush=True)

    datasets_ = [args.dataset]
    if args.small_pages:
        if not os.path.isdir(args.small_pages):
            unit = {"K": 1 << 10, "M": 1 << 20}
            ps = args.page_size.upper()
            ps = int(float(ps[:-1]) * unit[ps[-1]]) if ps[-1] in unit else int(ps)
            log(f"writing {args.small_pages} (data_page_size={ps}, write_batch_size=16, no dictionary)")
            small_pages(args.dataset, args.small_pages, ps, 16)
        datasets_.append(args.small_pages)

    cmdline = "python3 " + shlex.join([os.path.relpath(sys.argv[0], ROOT)] + sys.argv[1:])
    L = ["# Shuffle quality: youmufs shuffle=page vs streaming buffer vs full shuffle", "",
         "```", cmdline, "```", ""]
    hf_cache, plots = {}, []
    for i, d in enumerate(datasets_):
        lines, runs, n = evaluate(d, args, seeds, buffers, log, hf_cache)
        L += lines
        if args.plot:
            path = args.plot if i == 0 else args.plot.removesuffix(".png") + "-small-pages.png"
            plot(path, f"{d}: source row vs output position (20,000 of {n} records)", runs, n)
            plots.append(path)
            log(f"wrote {path}")
    L += ["Columns: |rho| = Spearman rank correlation of output position and source row (0 ideal); "
          "same page / same file = share of neighbouring records from one page / one file; "
          f"files (pages) / window = distinct files (pages) per {args.window}-record window, mean over "
          "windows, and as % of a uniform shuffle's exact (hypergeometric) expectation; "
          "MAD/N = mean |position - source row| / N (1/3 for a uniform permutation).", "",
          f"Plots: {', '.join('`' + os.path.relpath(p, ROOT) + '`' for p in plots) or 'none'}. "
          f"Run time {time.time() - t0:.0f} s.", ""]
    text = "\n".join(L)
    print(text)
    if args.out:
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        with open(args.out, "w") as fh:
            fh.write(text)


if __name__ == "__main__":
    main()
