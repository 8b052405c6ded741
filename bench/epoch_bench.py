#!/usr/bin/env python3
"""Shuffled epochs at sequential speed (issue 4): one run, one dataset, every configuration.

    python3 bench/epoch_bench.py --quick                       # ~200 MB dataset, a few minutes
    python3 bench/epoch_bench.py --bin /tmp/build-bench/youmufs \\
        --out bench/results/epoch_bench.md                     # bench/data/epoch-4g, ~18 min on 2 cores

Configurations, measured side by side on the same data:

  raw              sequential read of the Parquet files themselves (the storage limit)
  none             youmufs -o shuffle=none
  page             youmufs -o shuffle=page (the default, with the default chunk=)
  page-noredirect  youmufs -o shuffle=page,chunk=0 (no physical chunks, no redirection)
  row              youmufs -o shuffle=row, on a prefix of the epoch (--row-bytes / --row-seconds)
  pyarrow-random   pyarrow row-wise random access: shuffled global row indices, each one
                   read with ParquetFile.read_row_group(rg, columns=[col]).column(0)[i]
                   (nothing decoded is kept between indices); a --sample-seconds sample
  hf-stream        Hugging Face datasets: load_dataset("parquet", streaming=True)
                   .shuffle(buffer_size=10000, seed=0), iterated (at most --hf-stream-seconds)
  hf-map           load_dataset("parquet") (arrow cache in a temporary directory, prepared
                   once and reported separately), .shuffle(seed=0), iterated; a sample

Every reader of a file (raw and the epoch files) is the same loop of 1 MiB read(2) calls
(what `cat > /dev/null` does, counting records by newline). Each youmufs configuration is a
fresh mount (persistent index in a temporary cache= directory, built by one first mount that
is timed on its own). "warm": the Parquet files are read once just before; "cold": `sync; echo
3 > /proc/sys/vm/drop_caches` before the mount and again before the timed read (root only;
the python baselines drop caches themselves after their setup).

Per configuration: mount time, epoch MB/s and records/s, peak RSS (VmHWM of the daemon;
ru_maxrss of a python baseline's own process), bytes read (youmufs: stats.json bytes_read;
others: rchar of /proc/self/io), bytes the kernel read from the disk (read_bytes of
/proc/<pid>/io), read amplification = bytes read / (Parquet column-chunk bytes x the share
of the epoch read).

Other phases: shuffle quality of each youmufs mode from a second, `-o rowid` pass (functions
of bench/quality.py); slow storage (YOUMUFS_READ_DELAY_US=--delay-us) for page, page with
chunk=0,readahead=0 and none, each as a ratio to the same configuration without delay; the
chunk= sweep (--chunks, with and without the delay: throughput, read amplification, RSS); memory
(8 part files read at once with mem=64M and mem=512M, peak RSS against 1.1 x (index + mem)).
Options a binary does not know (chunk=, readahead=, shuffle=row) make that row "not supported
by this binary" instead of stopping the run.

Dependencies: numpy, pyarrow, matplotlib, datasets (the hf-* rows say "not run" without it).
"""
import argparse
import json
import os
import platform
import resource
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

from benchmount import MountError, timed_mount  # noqa: E402
import quality  # noqa: E402

MB = 1e6
MIB = 1 << 20
READ_SIZE = 1 << 20


def parse_size(text):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    t = text.strip().upper().removesuffix("B").removesuffix("I")
    return int(float(t[:-1]) * units[t[-1]]) if t and t[-1] in units else int(t)


def log(msg):
    print(f"[{time.monotonic() - T0:7.1f}s] {msg}", file=sys.stderr, flush=True)


T0 = time.monotonic()


# ------------------------------------------------------------------ system helpers

def can_drop_caches():
    return os.geteuid() == 0 and os.access("/proc/sys/vm/drop_caches", os.W_OK)


def drop_caches():
    subprocess.run(["sync"], check=True)
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


def proc_io(pid="self"):
    """{'rchar': .., 'read_bytes': ..} of /proc/<pid>/io, or None if unreadable."""
    try:
        with open(f"/proc/{pid}/io") as f:
            kv = dict(line.split(":") for line in f if ":" in line)
        return {k: int(kv[k]) for k in ("rchar", "read_bytes")}
    except (OSError, KeyError, ValueError):
        return None


def io_delta(before, after, key):
    if before is None or after is None:
        return None
    return after[key] - before[key]


def peak_rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def read_file(path, limit_bytes=None, limit_s=None, count_lines=False, t0=None, state=None):
    """Sequential read(2) of path in READ_SIZE requests into one buffer; stops at EOF, after
    limit_bytes, or once limit_s seconds have passed since t0. Returns (bytes, newlines)."""
    buf = bytearray(READ_SIZE)
    mv = memoryview(buf)
    t0 = time.monotonic() if t0 is None else t0
    n = lines = 0
    fd = os.open(path, os.O_RDONLY)
    try:
        while True:
            want = READ_SIZE if limit_bytes is None else min(READ_SIZE, limit_bytes - n)
            if want <= 0:
                break
            k = os.readv(fd, [mv[:want]])
            if k == 0:
                break
            n += k
            if count_lines:
                lines += buf.count(b"\n", 0, k)
            if limit_s is not None and time.monotonic() - t0 > limit_s:
                if state is not None:
                    state["stopped"] = True
                break
    finally:
        os.close(fd)
    return n, lines


def parquet_files(dataset):
    if os.path.isfile(dataset):
        return [dataset]
    return sorted(os.path.join(d, x) for d, dirs, fs in os.walk(dataset) for x in fs
                  if x.endswith(".parquet") and not x.startswith("."))


def warm_up(files):
    for f in files:
        read_file(f)


# ------------------------------------------------------------------ dataset

def ensure_dataset(args):
    if os.path.isdir(args.dataset) and parquet_files(args.dataset):
        return
    cmd = [sys.executable, os.path.join(HERE, "make_dataset.py"), "--out", args.dataset,
           "--size", args.make_size, "--files", str(args.make_files),
           "--page-size", args.make_page_size, "--codec", args.make_codec]
    log("generating the dataset: " + shlex.join(cmd))
    subprocess.run(cmd, check=True)


def describe_dataset(files, column):
    import pyarrow.parquet as pq
    chunk_bytes = rows = row_groups = 0
    for path in files:
        md = pq.ParquetFile(path).metadata
        rows += md.num_rows
        row_groups += md.num_row_groups
        for g in range(md.num_row_groups):
            rg = md.row_group(g)
            for j in range(rg.num_columns):
                if rg.column(j).path_in_schema == column:
                    chunk_bytes += rg.column(j).total_compressed_size
    file_of, page_of, page_rows = quality.page_map(files, column)
    return {"files": len(files), "bytes": sum(os.path.getsize(f) for f in files),
            "rows": rows, "row_groups": row_groups, "column_bytes": chunk_bytes,
            "pages": len(page_rows), "rows_per_page": (float(page_rows.mean()),
                                                       int(page_rows.min()), int(page_rows.max())),
            "file_of": file_of, "page_of": page_of, "page_rows": page_rows,
            "file_rows": np.bincount(file_of, minlength=len(files))}


# ------------------------------------------------------------------ youmufs runs

class Unsupported(Exception):
    pass


def youmufs_run(args, ctx, name, options, cold, limit_bytes=None, limit_s=None, env=None,
                epoch="epoch-0.jsonl"):
    """One fresh mount, one timed read of an epoch file. Raises Unsupported when the daemon
    refuses the options."""
    opts = f"cache={ctx['cache_dir']},column={args.column}" + (f",{options}" if options else "")
    if cold:
        drop_caches()
    else:
        warm_up(ctx["files"])
    try:
        with timed_mount(args.bin, args.dataset, opts, env=env, timeout=args.mount_timeout) \
                as (mnt, mount_s, proc):
            path = os.path.join(mnt, epoch)
            size = os.stat(path).st_size
            with open(os.path.join(mnt, ".youmufs", "index.json")) as f:
                index = json.load(f)
            if cold:
                drop_caches()
            io0 = proc_io(proc.pid)
            state = {}
            t1 = time.monotonic()
            got, lines = read_file(path, limit_bytes, limit_s, count_lines=True, t0=t1,
                                   state=state)
            read_s = time.monotonic() - t1
            io1 = proc_io(proc.pid)
            with open(os.path.join(mnt, ".youmufs", "stats.json")) as f:
                stats = json.load(f)
            rss = peak_rss_kib(proc.pid)
    except MountError as e:
        raise Unsupported(e.stderr.splitlines()[0] if e.stderr else "mount refused") from None
    full = got == size
    return {"config": name, "options": opts, "cache": "cold" if cold else "warm",
            "mount_s": mount_s, "read_s": read_s, "epoch_bytes": size, "bytes": got,
            "records": lines, "full": full, "share": got / size if size else 0.0,
            "mb_s": got / read_s / MB, "rec_s": lines / read_s,
            "rss_mib": rss / 1024, "bytes_read": stats.get("bytes_read"),
            "disk_read": io_delta(io0, io1, "read_bytes"), "stats": stats, "index": index,
            "env": env or {}}


def youmufs_rowids(args, ctx, options, limit_bytes=None):
    opts = f"cache={ctx['cache_dir']},column={args.column},rowid" + (f",{options}" if options else "")
    with timed_mount(args.bin, args.dataset, opts, timeout=args.mount_timeout) as (mnt, _, _p):
        with open(os.path.join(mnt, "epoch-0.jsonl"), "rb", buffering=0) as f:
            rows, tail = quality.parse_rows(f, limit_bytes)
    if limit_bytes is None and tail:
        raise RuntimeError(f"{opts}: epoch does not end with a whole record")
    return rows


# ------------------------------------------------------------------ python baselines (workers)

def worker_main(kind, spec):
    """Runs in its own process so that ru_maxrss and /proc/self/io are its own."""
    files, column, cold, limit_s = spec["files"], spec["column"], spec["cold"], spec["limit_s"]
    out = {"config": kind}
    if kind == "pyarrow-random":
        from row_access import RowGroupIndex
        index = RowGroupIndex(files, column)  # footers: setup, outside the timing
        at, order = index.rows, index.shuffled()
        if cold:
            drop_caches()
        io0 = proc_io()
        t0 = time.monotonic()
        rows = nbytes = 0
        for idx in order.tolist():
            v = index.row(idx)
            nbytes += v.as_buffer().size if v.is_valid else 0
            rows += 1
            if time.monotonic() - t0 > limit_s or rows >= spec.get("max_rows", 1 << 62):
                break
        read_s = time.monotonic() - t0
        io1 = proc_io()
        out.update(total_rows=at)
    elif kind in ("hf-stream", "hf-map", "hf-map-prep"):
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        import datasets
        datasets.logging.set_verbosity_error()
        datasets.disable_progress_bars()
        t_setup = time.monotonic()
        if kind == "hf-stream":
            ds = datasets.load_dataset("parquet", data_files=files, split="train",
                                       streaming=True, columns=[column])
            ds = ds.shuffle(buffer_size=10000, seed=0)
        else:
            ds = datasets.load_dataset("parquet", data_files=files, split="train",
                                       cache_dir=spec["cache_dir"])
            ds = ds.select_columns([column])
        out["load_s"] = time.monotonic() - t_setup
        if kind == "hf-map-prep":
            out["cache_bytes"] = sum(os.path.getsize(os.path.join(d, x))
                                     for d, _, fs in os.walk(spec["cache_dir"]) for x in fs)
            out["rows"] = len(ds)
            out["rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            print(json.dumps(out))
            return
        if kind == "hf-map":
            t_sh = time.monotonic()
            ds = ds.shuffle(seed=0, keep_in_memory=True)
            out["shuffle_s"] = time.monotonic() - t_sh
            out["total_rows"] = len(ds)
        if cold:
            drop_caches()
        io0 = proc_io()
        t0 = time.monotonic()
        rows = nbytes = 0
        for ex in ds:
            v = ex[column]
            if v is not None:
                nbytes += len(v.encode()) if isinstance(v, str) else len(v)
            rows += 1
            if rows % 256 == 0 and time.monotonic() - t0 > limit_s:
                break
        read_s = time.monotonic() - t0
        io1 = proc_io()
    else:
        raise SystemExit(f"unknown worker {kind}")
    out.update(rows=rows, value_bytes=nbytes, read_s=read_s, rec_s=rows / read_s,
               mb_s=nbytes / read_s / MB,
               rss_mib=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
               bytes_read=io_delta(io0, io1, "rchar"), disk_read=io_delta(io0, io1, "read_bytes"))
    print(json.dumps(out))


def run_worker(kind, spec, timeout):
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", kind,
           "--worker-spec", json.dumps(spec)]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"config": kind, "error": f"no answer within {timeout:.0f} s"}
    if p.returncode != 0:
        last = (p.stderr.strip().splitlines() or ["?"])[-1]
        return {"config": kind, "error": last}
    return json.loads(p.stdout.strip().splitlines()[-1])


# ------------------------------------------------------------------ phases

YOUMUFS_CONFIGS = [
    ("none", "shuffle=none"),
    ("page", "shuffle=page"),
    ("page-noredirect", "shuffle=page,chunk=0"),
    ("row", "shuffle=row"),
]


def median_run(runs):
    """The run with the median records/s of repeated runs, with the spread of all of them."""
    runs = sorted(runs, key=lambda r: r["rec_s"])
    r = dict(runs[len(runs) // 2])
    r["runs"] = len(runs)
    r["spread"] = (runs[0]["mb_s"], runs[-1]["mb_s"])
    return r


def raw_run(ctx, cold):
    if cold:
        drop_caches()
    else:
        warm_up(ctx["files"])
    io0 = proc_io()
    t1 = time.monotonic()
    got = sum(read_file(f)[0] for f in ctx["files"])
    read_s = time.monotonic() - t1
    io1 = proc_io()
    rows = ctx["ds"]["rows"]
    return {"config": "raw", "cache": "cold" if cold else "warm", "read_s": read_s, "bytes": got,
            "records": rows, "share": 1.0, "full": True, "mb_s": got / read_s / MB,
            "rec_s": rows / read_s, "bytes_read": io_delta(io0, io1, "rchar"),
            "disk_read": io_delta(io0, io1, "read_bytes"), "rss_mib": None}


def phase_throughput(args, ctx):
    results = []
    caches = ["warm"] + (["cold"] if ctx["cold_ok"] and not args.no_cold else [])
    ds = ctx["ds"]
    for cache in caches:
        cold = cache == "cold"
        # raw and the youmufs modes, --repeat times in turn (median kept)
        runs = {}
        unsupported = {}
        for rep in range(args.repeat):
            r = raw_run(ctx, cold)
            runs.setdefault("raw", []).append(r)
            log(f"{cache} raw #{rep + 1}: {r['mb_s']:.0f} MB/s")
            for name, opts in YOUMUFS_CONFIGS:
                if name in unsupported:
                    continue
                lb, ls = (args.row_bytes, args.row_seconds) if name == "row" else (None, args.max_seconds)
                try:
                    r = youmufs_run(args, ctx, name, opts, cold, limit_bytes=lb, limit_s=ls)
                except Unsupported as e:
                    if name in ("none", "page"):
                        raise SystemExit(f"{name}: mount failed: {e}")
                    unsupported[name] = {"config": name, "cache": cache, "unsupported": str(e),
                                         "options": opts}
                    log(f"{cache} {name}: not supported by this binary ({e})")
                    continue
                runs.setdefault(name, []).append(r)
                log(f"{cache} {name} #{rep + 1}: {r['mb_s']:.0f} MB/s, {r['rec_s']:.0f} records/s, "
                    f"{r['share'] * 100:.0f}% of the epoch, RSS {r['rss_mib']:.0f} MiB")
        for name in ["raw"] + [n for n, _ in YOUMUFS_CONFIGS]:
            results.append(median_run(runs[name]) if name in runs else unsupported[name])
        spec = {"files": ctx["files"], "column": args.column, "cold": cold,
                "limit_s": args.sample_seconds}
        for kind, limit in (("pyarrow-random", args.sample_seconds),
                            ("hf-stream", args.hf_stream_seconds),
                            ("hf-map", args.sample_seconds)):
            if kind.startswith("hf") and ctx["hf_note"]:
                results.append({"config": kind, "cache": cache, "error": ctx["hf_note"]})
                continue
            if not cold:
                warm_up(ctx["files"])
            s = dict(spec, limit_s=limit)
            if kind == "hf-map":
                if "hf_prep" not in ctx:
                    ctx["hf_prep"] = run_worker("hf-map-prep", dict(s, cache_dir=ctx["hf_cache"]),
                                                args.worker_timeout)
                    log(f"hf-map prep: {ctx['hf_prep']}")
                if "error" in ctx["hf_prep"]:
                    results.append({"config": kind, "cache": cache, "error": ctx["hf_prep"]["error"]})
                    continue
                s["cache_dir"] = ctx["hf_cache"]
            r = run_worker(kind, s, limit + args.worker_timeout)
            r["cache"] = cache
            if kind == "hf-map" and "error" not in r:
                r["bytes_read"] = None  # its arrow cache is read through mmap: rchar sees nothing
            if "error" not in r:
                total = r.get("total_rows", ds["rows"])
                r["share"] = r["rows"] / total
                r["full"] = r["rows"] == total
                log(f"{cache} {kind}: {r['rec_s']:.1f} records/s, {r['mb_s']:.2f} MB/s of values "
                    f"({r['rows']} rows in {r['read_s']:.1f} s), RSS {r['rss_mib']:.0f} MiB")
            else:
                log(f"{cache} {kind}: {r['error']}")
            results.append(r)
    for r in results:
        if r.get("bytes_read") is not None and r.get("share"):
            r["amp"] = r["bytes_read"] / (ds["column_bytes"] * r["share"])
    return results


def phase_quality(args, ctx):
    ds = ctx["ds"]
    out = []
    for name, opts in YOUMUFS_CONFIGS:
        prefix = name == "row"
        try:
            rows = youmufs_rowids(args, ctx, opts, args.row_bytes if prefix else None)
        except MountError as e:
            if name in ("none", "page"):
                raise
            out.append({"config": name, "unsupported": (e.stderr.splitlines() or ["?"])[0]})
            continue
        if not prefix and len(rows) != len(ds["file_of"]):
            raise SystemExit(f"{name}: rowid pass gave {len(rows)} records, dataset has "
                             f"{len(ds['file_of'])} rows")
        m = quality.metrics(rows, ds["file_of"], ds["page_of"], args.window, prefix=prefix)
        m.update(config=name, records=len(rows), prefix=prefix)
        out.append(m)
        log(f"quality {name}: |rho| {m['rho']:.4f}, same page {m['same_page']:.4f}, "
            f"files/window {m['files_win']:.2f}")
    n, w = len(ds["file_of"]), args.window
    exp = {"config": "full shuffle (exact expectation)", "rho": 0.0,
           "same_page": float(np.sum(ds["page_rows"] * (ds["page_rows"] - 1))) / (n * (n - 1.0)),
           "same_file": float(np.sum(ds["file_rows"] * (ds["file_rows"] - 1))) / (n * (n - 1.0)),
           "files_win": quality.expected_distinct(ds["file_rows"].tolist(), n, w),
           "pages_win": quality.expected_distinct(ds["page_rows"].tolist(), n, w), "mad": 1 / 3}
    return out, exp


def phase_latency(args, ctx):
    configs = [("page", "shuffle=page"),
               ("page chunk=0,readahead=0", "shuffle=page,chunk=0,readahead=0"),
               ("none", "shuffle=none")]
    out = []
    for name, opts in configs:
        pair = {"config": name, "options": opts}
        runs = {"base": [], "slow": []}
        for rep in range(args.latency_repeat):
            for key, delay in (("base", 0), ("slow", args.delay_us)):
                env = {"YOUMUFS_READ_DELAY_US": str(delay)}
                try:
                    r = youmufs_run(args, ctx, name, opts, False, limit_s=args.latency_seconds,
                                    env=env)
                except Unsupported as e:
                    pair["unsupported"] = str(e)
                    log(f"latency {name}: not supported by this binary ({e})")
                    break
                runs[key].append(r)
                log(f"latency {name} delay={delay}us #{rep + 1}: {r['mb_s']:.0f} MB/s "
                    f"({r['share'] * 100:.0f}% of the epoch in {r['read_s']:.1f} s)")
            if "unsupported" in pair:
                break
        if runs["slow"]:
            pair["base"], pair["slow"] = median_run(runs["base"]), median_run(runs["slow"])
            pair["ratio"] = pair["slow"]["rec_s"] / pair["base"]["rec_s"]
        out.append(pair)
    return out


def phase_chunks(args, ctx):
    """The chunk= sweep the default was chosen from: shuffle=page with each chunk size, with and
    without the injected read latency (warm cache, one read each, stopped after
    --chunk-seconds)."""
    out = []
    for chunk in args.chunks:
        opts = f"shuffle=page,chunk={chunk}"
        row = {"chunk": chunk, "options": opts}
        for key, delay in (("base", 0), ("slow", args.delay_us)):
            try:
                r = youmufs_run(args, ctx, f"page chunk={chunk}", opts, False,
                                limit_s=args.chunk_seconds,
                                env={"YOUMUFS_READ_DELAY_US": str(delay)})
            except Unsupported as e:
                row["unsupported"] = str(e)
                log(f"chunks {chunk}: not supported by this binary ({e})")
                break
            row[key] = r
            log(f"chunks {chunk} delay={delay}us: {r['mb_s']:.0f} MB/s, read amplification "
                f"{r['stats'].get('read_amplification', float('nan')):.2f}, RSS {r['rss_mib']:.0f} MiB")
        out.append(row)
    return out


def phase_memory(args, ctx):
    out = []
    n = args.parts
    for mem in args.mems:
        opts = f"cache={ctx['cache_dir']},column={args.column},mem={mem}"
        warm_up(ctx["files"])
        with timed_mount(args.bin, args.dataset, opts, timeout=args.mount_timeout) as (mnt, _, proc):
            with open(os.path.join(mnt, ".youmufs", "index.json")) as f:
                index = json.load(f)
            paths = [os.path.join(mnt, f"epoch-0.part-{i}-of-{n}.jsonl") for i in range(n)]
            sizes = [os.stat(p).st_size for p in paths]
            epoch = os.stat(os.path.join(mnt, "epoch-0.jsonl")).st_size
            got = [0] * n
            errors = []
            state = {}
            t1 = time.monotonic()

            def reader(i):
                try:
                    got[i] = read_file(paths[i], limit_s=args.max_seconds, t0=t1, state=state)[0]
                except OSError as e:
                    errors.append(f"part {i}: {e}")

            # threads: readv releases the GIL, so the 8 readers really are concurrent
            threads = [threading.Thread(target=reader, args=(i,)) for i in range(n)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            read_s = time.monotonic() - t1
            rss = peak_rss_kib(proc.pid)
        ix_bytes = index.get("index_bytes", index.get("index_memory_bytes"))
        memb = parse_size(mem)
        r = {"mem": mem, "mem_bytes": memb, "rss_mib": rss / 1024, "read_s": read_s,
             "bytes": sum(got), "mb_s": sum(got) / read_s / MB, "errors": errors,
             "parts_sum_ok": sum(sizes) == epoch and (got == sizes or bool(state)),
             "stopped": bool(state), "share": sum(got) / epoch if epoch else 0.0,
             "index_bytes": ix_bytes,
             "index_field": "index_bytes" if "index_bytes" in index else
                            ("index_memory_bytes" if "index_memory_bytes" in index else None)}
        if ix_bytes is not None:
            r["bound_mib"] = 1.1 * (ix_bytes + memb) / MIB
            r["ratio"] = rss * 1024 / (ix_bytes + memb)
        out.append(r)
        log(f"memory mem={mem}: peak RSS {r['rss_mib']:.0f} MiB, "
            f"bound {r.get('bound_mib', float('nan')):.0f} MiB, {r['mb_s']:.0f} MB/s aggregate")
    return out


# ------------------------------------------------------------------ report

def fmt_bytes(b):
    if b is None:
        return "n/a"
    return f"{b / MB:.0f} MB" if b >= 10 * MB else f"{b / MB:.2f} MB"


def num(v):
    """A rate in 3 significant digits, without exponents."""
    if v is None:
        return "n/a"
    if v >= 100:
        return f"{v:,.0f}"
    return f"{v:.3g}" if v >= 0.001 else f"{v:.1e}"


def fmt(v, spec, missing="n/a"):
    return missing if v is None else format(v, spec)


def find(results, config, cache):
    return next((r for r in results if r["config"] == config and r["cache"] == cache), None)


def usable(r):
    return r is not None and "unsupported" not in r and "error" not in r


def ratio(a, b, key="rec_s"):
    if usable(a) and usable(b) and b[key]:
        return a[key] / b[key]
    return None


def machine_info():
    nproc = subprocess.run(["nproc"], capture_output=True, text=True).stdout.strip()
    free = subprocess.run(["free", "-g"], capture_output=True, text=True).stdout.rstrip()
    from machine import cpu_model
    return nproc, free, cpu_model(), platform.release()


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def git_state():
    try:
        head = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no",
                                "--", "fs", "shuffle", "index", "decode"],
                               capture_output=True, text=True).stdout.strip()
        return head + (" (with uncommitted changes in fs/ shuffle/ index/ decode/)" if dirty else "")
    except OSError:
        return "?"


def report(args, ctx, thr, qual, exp, lat, chunks, memr, plots, elapsed):
    ds = ctx["ds"]
    nproc, free, cpu, kernel = machine_info()
    L = ["# Shuffled epochs at sequential speed (issue 4)", "",
         "Recommended command lines (quick smoke test, then the full run):", "", "```",
         "cmake -S . -B /tmp/build-bench -DCMAKE_BUILD_TYPE=Release && cmake --build /tmp/build-bench -j2",
         "python3 bench/epoch_bench.py --quick --bin /tmp/build-bench/youmufs "
         "--out /tmp/epoch_bench-quick.md",
         "python3 bench/epoch_bench.py --bin /tmp/build-bench/youmufs --out bench/results/epoch_bench.md",
         "```", "",
         "The full run writes `bench/data/epoch-4g` first if it is missing (`python3 "
         "bench/make_dataset.py --out bench/data/epoch-4g --size 4G --page-size 128K --codec snappy`).",
         "", "## This run", "", "```", ctx["cmdline"], "```", "",
         f"- binary: `{args.bin}`, built {ctx['bin_mtime']}; tree at the start of the run: "
         f"{ctx['git']}; "
         f"YOUMUFS_READ_DELAY_US known to the binary: {'yes' if ctx['delay_known'] else 'no (the delay is a no-op)'}",
         f"- machine: {nproc} CPUs ({cpu}), kernel {kernel}; `free -g`:", "", "```", free, "```", "",
         f"- dataset `{os.path.relpath(args.dataset, ROOT)}`: {ds['bytes'] / 1e9:.2f} GB of Parquet "
         f"in {ds['files']} files, {ds['row_groups']} row groups, {ds['rows']} rows; column "
         f"`{args.column}`: {ds['column_bytes'] / 1e9:.2f} GB of column chunks in {ds['pages']} "
         f"data pages, rows per page mean {ds['rows_per_page'][0]:.1f} (min {ds['rows_per_page'][1]}, "
         f"max {ds['rows_per_page'][2]}); epoch file {ctx['epoch_bytes'] / 1e9:.2f} GB (jsonl).",
         f"- first mount (page pass, writes the persistent index): {ctx['first_mount_s']:.2f} s; "
         f"index in memory: {fmt_bytes(ctx['index_bytes'])}"
         f" ({ctx['index_field'] or 'no index-memory field in index.json'}).",
         f"- run time {elapsed / 60:.1f} min; load average (1, 5, 15 min) at the start "
         f"{ctx['load_start']}, at the end {loadavg()}: other work on the machine "
         "during the run (tests, other benchmarks) shows as spread between repeated reads.", ""]

    # ratios the acceptance needs
    def rr(a, ca, b, cb):
        return ratio(find(thr, a, ca), find(thr, b, cb))
    acc = [("page ÷ none, warm (records/s)", rr("page", "warm", "none", "warm"), "≥ 0.95"),
           ("page ÷ none, cold", rr("page", "cold", "none", "cold"), "≥ 0.9"),
           ("page-noredirect ÷ none, warm", rr("page-noredirect", "warm", "none", "warm"), ""),
           ("page-noredirect ÷ none, cold", rr("page-noredirect", "cold", "none", "cold"), ""),
           ("page ÷ pyarrow-random, cold (records/s)", rr("page", "cold", "pyarrow-random", "cold"), "≥ 50"),
           ("page ÷ pyarrow-random, warm", rr("page", "warm", "pyarrow-random", "warm"), ""),
           ("page ÷ hf-map, cold (records/s)", rr("page", "cold", "hf-map", "cold"), ""),
           ("page ÷ hf-stream, cold (records/s)", rr("page", "cold", "hf-stream", "cold"), ""),
           ("none ÷ raw, cold (records/s)", rr("none", "cold", "raw", "cold"), "")]
    for p in lat:
        acc.append((f"{p['config']}: delay {args.delay_us} µs ÷ no delay", p.get("ratio"),
                    "≥ 0.8" if p["config"] == "page" else ""))
    for m in memr:
        acc.append((f"mem={m['mem']}: peak RSS ÷ (index + mem)", m.get("ratio"), "≤ 1.1"))
    L += ["## Acceptance ratios", "", "| ratio | value | target |", "|---|---:|---|"]
    for label, v, target in acc:
        L.append(f"| {label} | {'n/a (not measured or not supported)' if v is None else num(v) if v >= 100 else f'{v:.2f}'} | {target} |")
    L += ["", "Ratios of medians from this one run; on a shared machine read the spread in the "
          "throughput table before trusting a ratio near its target.", ""]

    L += ["## Epoch throughput", "",
          "MB/s: youmufs and raw count the bytes of the file read (epoch jsonl, or Parquet); "
          "the python baselines count the bytes of the values they return. Bytes read: "
          "youmufs `stats.json` bytes_read; raw and python: rchar of /proc/self/io (hf-map reads "
          "its arrow cache through mmap, which rchar does not see). Disk: read_bytes of "
          "/proc/<pid>/io (what the page cache missed). Read amp. = bytes read ÷ (column-chunk "
          "bytes × share of the epoch read). raw and youmufs: median of --repeat fresh reads "
          f"({args.repeat}), MB/s of every read in brackets. Cold python baselines drop the "
          "page cache once, after their setup: a row group or arrow page touched again later "
          "in the sample is served from the page cache.", "",
          "| cache | config | mount s | read s | share of epoch | MB/s | records/s | ÷ none | peak RSS MiB | bytes read | disk | read amp. |",
          "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in thr:
        if "unsupported" in r:
            L.append(f"| {r['cache']} | {r['config']} | not supported by this binary (`{r['options']}`: "
                     f"{r['unsupported']}) ||||||||||")
            continue
        if "error" in r:
            L.append(f"| {r['cache']} | {r['config']} | not run: {r['error']} ||||||||||")
            continue
        base = find(thr, "none", r["cache"])
        rel = ratio(r, base)
        mount = r.get("mount_s")
        if r["config"] == "hf-map":
            mount_txt = f"load {r['load_s']:.1f} + shuffle {r['shuffle_s']:.1f}"
        elif r["config"] == "hf-stream":
            mount_txt = f"load {r['load_s']:.1f}"
        else:
            mount_txt = fmt(mount, ".2f", "-")
        spread = (f" ({num(r['spread'][0])}-{num(r['spread'][1])})"
                  if r.get("runs", 1) > 1 else "")
        L.append(f"| {r['cache']} | {r['config']} | {mount_txt} | {r['read_s']:.2f} | "
                 f"{r['share'] * 100:.3g}% | {num(r['mb_s'])}{spread} | {num(r['rec_s'])} | "
                 f"{'-' if rel is None else num(rel)} | {fmt(r.get('rss_mib'), '.0f', '-')} | "
                 f"{fmt_bytes(r.get('bytes_read'))} | {fmt_bytes(r.get('disk_read'))} | "
                 f"{'n/a' if r.get('amp') is None else num(r['amp'])} |")
    prep = ctx.get("hf_prep")
    L.append("")
    if prep and "error" not in prep:
        L.append(f"hf-map preparation (load_dataset converting the Parquet files to its arrow "
                 f"cache, outside the timing): {prep['load_s']:.1f} s, cache "
                 f"{prep['cache_bytes'] / 1e9:.2f} GB, peak RSS {prep['rss_mib']:.0f} MiB.")
    L += [f"Limits: row shuffle reads the first {args.row_bytes / MIB:.0f} MiB or "
          f"{args.row_seconds:.0f} s of its epoch; pyarrow-random and hf-map sample for "
          f"{args.sample_seconds:.0f} s; hf-stream stops after {args.hf_stream_seconds:.0f} s; "
          f"other youmufs reads after {args.max_seconds:.0f} s. Python peak RSS is the whole "
          "interpreter's (ru_maxrss).", ""]

    keys = ["chunk_loads", "pages_from_chunks", "pages_read_alone", "redirections",
            "loaded_pages_dropped", "pages_decoded", "segments_prefetched", "segment_hits",
            "segment_waits", "segment_misses"]
    L += ["### youmufs counters of the reported reads (`stats.json`; `-`: not in this binary)", "",
          "| cache | config | chunk | readahead | " + " | ".join(k.replace("_", " ") for k in keys) + " |",
          "|---|---|---:|---:|" + "---:|" * len(keys)]
    for r in thr:
        if "stats" not in r:
            continue
        o = r["index"].get("options", {})
        L.append(f"| {r['cache']} | {r['config']} | {o.get('chunk', '-')} | {o.get('readahead', '-')} | "
                 + " | ".join(str(r["stats"].get(k, "-")) for k in keys) + " |")
    L.append("")

    L += ["## Shuffle quality (second pass with `-o rowid`, bench/quality.py metrics)", "",
          f"Window = {args.window} records. row: on the prefix read (rho between output position "
          "and rank within the prefix).", "",
          "| config | records | \\|rho\\| | same page | same file | files / window | % of full | pages / window | % of full |",
          "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for q in qual + [exp]:
        if "unsupported" in q:
            L.append(f"| {q['config']} | not supported by this binary ({q['unsupported']}) ||||||||")
            continue
        L.append(f"| {q['config']} | {q.get('records', '-')} | {q['rho']:.4f} | {q['same_page']:.4f} | "
                 f"{q['same_file']:.4f} | {q['files_win']:.2f} | {100 * q['files_win'] / exp['files_win']:.1f}% | "
                 f"{q['pages_win']:.1f} | {100 * q['pages_win'] / exp['pages_win']:.1f}% |")
    L.append("")

    L += [f"## Slow storage (YOUMUFS_READ_DELAY_US={args.delay_us}, warm cache)", "",
          "| config | no delay MB/s | delayed MB/s | delayed ÷ no delay | share read (delayed) | bytes read (delayed) |",
          "|---|---:|---:|---:|---:|---:|"]
    for p in lat:
        if "unsupported" in p:
            L.append(f"| {p['config']} | not supported by this binary (`{p['options']}`: {p['unsupported']}) |||||")
            continue
        b, s = p["base"], p["slow"]
        L.append(f"| {p['config']} | {b['mb_s']:.0f} | {s['mb_s']:.0f} | {p['ratio']:.2f} | "
                 f"{s['share'] * 100:.3g}% | {fmt_bytes(s['bytes_read'])} |")
    L += ["", f"Each read stops after {args.latency_seconds:.0f} s; the rate is taken over what was "
          f"read; median of {args.latency_repeat} read(s) per cell.", ""]

    if chunks:
        L += [f"## chunk= sweep (shuffle=page, warm cache, YOUMUFS_READ_DELAY_US=0 and {args.delay_us})", "",
              "| chunk | MB/s | MB/s delayed | delayed ÷ no delay | read amplification | chunk loads | pages read alone | peak RSS MiB |",
              "|---|---:|---:|---:|---:|---:|---:|---:|"]
        for c in chunks:
            if "unsupported" in c or "slow" not in c:
                L.append(f"| {c['chunk']} | not supported by this binary ({c.get('unsupported', '?')}) |||||||")
                continue
            b, s = c["base"], c["slow"]
            st = b["stats"]
            L.append(f"| {c['chunk']} | {b['mb_s']:.0f} | {s['mb_s']:.0f} | {s['rec_s'] / b['rec_s']:.2f} | "
                     f"{fmt(st.get('read_amplification'), '.2f')} | {st.get('chunk_loads', '-')} | "
                     f"{st.get('pages_read_alone', '-')} | {b['rss_mib']:.0f} |")
        L += ["", f"One read per cell, stopped after {args.chunk_seconds:.0f} s; counters from the "
              "undelayed read.", ""]

    L += [f"## Memory: {args.parts} part files read at once", "",
          "| mem | peak RSS MiB | index MiB | 1.1 × (index + mem) MiB | RSS ÷ (index + mem) | within bound | aggregate MB/s | share read | part sizes add up to the epoch |",
          "|---|---:|---:|---:|---:|---|---:|---:|---|"]
    for m in memr:
        ixm = fmt(m["index_bytes"] / MIB if m["index_bytes"] is not None else None, ".1f")
        ok = "n/a" if "ratio" not in m else ("yes" if m["ratio"] <= 1.1 else "**no**")
        L.append(f"| {m['mem']} | {m['rss_mib']:.0f} | {ixm} | {fmt(m.get('bound_mib'), '.0f')} | "
                 f"{fmt(m.get('ratio'), '.2f')} | {ok} | {m['mb_s']:.0f} | "
                 f"{m['share'] * 100:.3g}%{' (time limit)' if m['stopped'] else ''} | "
                 f"{'yes' if m['parts_sum_ok'] and not m['errors'] else 'NO ' + '; '.join(m['errors'])} |")
    field = memr[0]["index_field"] if memr else None
    L += ["", f"{args.parts} threads read `epoch-0.part-<i>-of-{args.parts}.jsonl` at once (1 MiB "
          f"read(2) calls), warm cache, stopping after {args.max_seconds:.0f} s.", ("Index size from index.json field `" + field + "`." if field else
               "index.json has no index-memory field (`index_bytes`): the bound is n/a."), ""]
    if plots:
        L += ["## Plots", ""] + [f"![{os.path.basename(p)}]({os.path.basename(p)})" for p in plots] + [""]
    return "\n".join(L)


def make_plots(prefix, args, thr, lat, memr):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    def save(fig, path):
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        plt.close(fig)
        return path
    paths = []
    configs = []
    for r in thr:
        if r["config"] not in configs:
            configs.append(r["config"])
    caches = [c for c in ("warm", "cold") if any(r["cache"] == c for r in thr)]
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    for ax, key, label in ((axes[0], "mb_s", "MB/s (epoch or value bytes)"),
                           (axes[1], "rec_s", "records / s")):
        wbar = 0.8 / len(caches)
        for ci, cache in enumerate(caches):
            xs, ys = [], []
            for i, c in enumerate(configs):
                r = find(thr, c, cache)
                if usable(r):
                    xs.append(i + ci * wbar)
                    ys.append(r[key])
            bars = ax.bar(xs, ys, wbar, label=cache)
            for b, y in zip(bars, ys):
                ax.text(b.get_x() + b.get_width() / 2, y, num(y), ha="center", va="bottom",
                        fontsize=6, rotation=90)
        for i, c in enumerate(configs):
            r = find(thr, c, caches[0])
            if r is not None and not usable(r):
                ax.text(i + wbar * (len(caches) - 1) / 2, 0.02, "not supported" if "unsupported" in r
                        else "not run", transform=ax.get_xaxis_transform(), ha="center",
                        va="bottom", fontsize=7, rotation=90)
        ax.set_xticks([i + wbar * (len(caches) - 1) / 2 for i in range(len(configs))])
        ax.set_xticklabels(configs, rotation=30, ha="right", fontsize=8)
        ax.set_yscale("log")
        ax.set_ylabel(label)
        ax.legend(fontsize=8)
    fig.suptitle("Epoch throughput per configuration (log scale; missing bar = not supported / not run)",
                 fontsize=9)
    paths.append(save(fig, prefix + "-throughput.png"))

    fig, ax = plt.subplots(figsize=(7, 4))
    names = [x["config"] for x in lat]
    base = [x["base"]["mb_s"] if "base" in x else 0 for x in lat]
    slow = [x["slow"]["mb_s"] if "slow" in x else 0 for x in lat]
    idx = np.arange(len(names))
    ax.bar(idx - 0.2, base, 0.4, label="no delay")
    ax.bar(idx + 0.2, slow, 0.4, label=f"delay {args.delay_us} µs per pread")
    for i, x in enumerate(lat):
        txt = f"× {x['ratio']:.2f}" if "ratio" in x else "not supported"
        ax.text(i, max(base[i], slow[i], 1), txt, ha="center", va="bottom", fontsize=8)
    ax.set_xticks(idx)
    ax.set_xticklabels(names, fontsize=8)
    ax.set_ylabel("epoch MB/s (warm)")
    ax.legend(fontsize=8)
    ax.set_title("Slow storage: effect of redirection and readahead", fontsize=9)
    paths.append(save(fig, prefix + "-latency.png"))

    fig, ax = plt.subplots(figsize=(6, 4))
    idx = np.arange(len(memr))
    ax.bar(idx - 0.2, [m["rss_mib"] for m in memr], 0.4, label="peak RSS (VmHWM)")
    bounds = [m.get("bound_mib") or 0 for m in memr]
    ax.bar(idx + 0.2, bounds, 0.4, label="1.1 × (index + mem)")
    for i, m in enumerate(memr):
        if not m.get("bound_mib"):
            ax.text(i + 0.2, 1, "bound n/a", ha="center", va="bottom", fontsize=8)
    ax.set_xticks(idx)
    ax.set_xticklabels([f"mem={m['mem']}" for m in memr])
    ax.set_ylabel("MiB")
    ax.legend(fontsize=8)
    ax.set_title(f"Daemon memory, {args.parts} part files read at once", fontsize=9)
    paths.append(save(fig, prefix + "-rss.png"))
    return paths


# ------------------------------------------------------------------ main

def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dataset", nargs="?", help="directory of *.parquet (default bench/data/epoch-4g, "
                                               "or bench/data/epoch-quick with --quick); made if missing")
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "youmufs"))
    ap.add_argument("--out", help="markdown report (default bench/results/epoch_bench.md; with "
                                  "--quick /tmp/epoch_bench-quick.md)")
    ap.add_argument("--plots", help="PNG path prefix (default: --out without .md)")
    ap.add_argument("--json", help="also write every raw measurement here")
    ap.add_argument("--quick", action="store_true", help="~200 MB dataset and short limits")
    ap.add_argument("--column", default="text")
    ap.add_argument("--no-cold", action="store_true", help="warm page cache only")
    ap.add_argument("--phases", default="throughput,quality,latency,chunks,memory")
    ap.add_argument("--chunks", default="256K,1M,4M,16M", help="chunk= values of the chunks phase")
    ap.add_argument("--chunk-seconds", type=float, default=None,
                    help="time limit of each read of the chunks phase (30)")
    ap.add_argument("--row-bytes", default=None, help="shuffle=row: bytes of the epoch read (64M)")
    ap.add_argument("--row-seconds", type=float, default=None, help="shuffle=row: time limit (30)")
    ap.add_argument("--sample-seconds", type=float, default=None,
                    help="pyarrow-random and hf-map sample length (30)")
    ap.add_argument("--hf-stream-seconds", type=float, default=None, help="hf-stream limit (90)")
    ap.add_argument("--max-seconds", type=float, default=None,
                    help="time limit of any other youmufs epoch read (300)")
    ap.add_argument("--latency-seconds", type=float, default=None,
                    help="time limit of each slow-storage read (90)")
    ap.add_argument("--repeat", type=int, default=3,
                    help="reads of raw and of each youmufs mode per cache state; the median is "
                         "reported, with the spread (default 3; 1 with --quick)")
    ap.add_argument("--latency-repeat", type=int, default=None,
                    help="reads per configuration and delay in the slow-storage phase, median "
                         "kept (3; 1 with --quick)")
    ap.add_argument("--delay-us", type=int, default=2000)
    ap.add_argument("--mem", default="64M,512M", help="mem= values of the memory phase")
    ap.add_argument("--parts", type=int, default=8)
    ap.add_argument("--window", type=int, default=10000)
    ap.add_argument("--mount-timeout", type=float, default=900)
    ap.add_argument("--worker-timeout", type=float, default=900,
                    help="seconds a python baseline may take beyond its limit (setup included)")
    ap.add_argument("--make-size", default=None, help="make_dataset.py --size if the dataset is made (4G)")
    ap.add_argument("--make-files", type=int, default=8)
    ap.add_argument("--make-page-size", default="128K")
    ap.add_argument("--make-codec", default="snappy")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--worker-spec", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker_main(args.worker, json.loads(args.worker_spec))
        return

    q = args.quick
    defaults = {"row_bytes": ("16M", "64M"), "row_seconds": (10, 30), "sample_seconds": (10, 30),
                "hf_stream_seconds": (15, 90), "max_seconds": (60, 300),
                "latency_seconds": (20, 90), "make_size": ("200M", "4G"), "chunk_seconds": (10, 30),
                "latency_repeat": (1, 3)}
    for k, (quick_v, full_v) in defaults.items():
        if getattr(args, k) is None:
            setattr(args, k, quick_v if q else full_v)
    args.row_bytes = parse_size(args.row_bytes)
    if q and "--repeat" not in sys.argv:
        args.repeat = 1
    args.mems = [m for m in args.mem.split(",") if m]
    args.chunks = [c for c in args.chunks.split(",") if c]
    if args.dataset is None:
        args.dataset = os.path.join(ROOT, "bench", "data", "epoch-quick" if q else "epoch-4g")
    args.dataset = os.path.abspath(args.dataset)
    args.bin = os.path.abspath(args.bin)
    if args.out is None:
        args.out = "/tmp/epoch_bench-quick.md" if q else os.path.join(ROOT, "bench", "results",
                                                                     "epoch_bench.md")
    prefix = args.plots or args.out.removesuffix(".md")
    phases = set(args.phases.split(","))
    if not os.access(args.bin, os.X_OK):
        raise SystemExit(f"{args.bin}: no such executable (build it, or pass --bin)")

    ctx = {"cmdline": "python3 " + shlex.join([os.path.relpath(os.path.abspath(sys.argv[0]), ROOT)]
                                              + sys.argv[1:]),
           "cold_ok": can_drop_caches(), "load_start": loadavg(), "git": git_state(),
           "bin_mtime": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(os.path.getmtime(args.bin)))}
    if not ctx["cold_ok"] and not args.no_cold:
        log("cannot drop the page cache (not root): warm runs only")
    with open(args.bin, "rb") as f:
        ctx["delay_known"] = b"YOUMUFS_READ_DELAY_US" in f.read()
    try:
        import datasets  # noqa: F401
        ctx["hf_note"] = None
    except ImportError as e:
        ctx["hf_note"] = f"datasets not importable ({e})"

    ensure_dataset(args)
    ctx["files"] = parquet_files(args.dataset)
    log(f"describing {args.dataset} (page map of column {args.column})")
    ctx["ds"] = describe_dataset(ctx["files"], args.column)
    tmp = tempfile.mkdtemp(prefix="epoch-bench-")
    ctx["cache_dir"] = os.path.join(tmp, "index-cache")
    ctx["hf_cache"] = os.path.join(tmp, "hf-cache")
    os.makedirs(ctx["cache_dir"])
    thr, qual, lat, chunks, memr, exp = [], [], [], [], [], None
    try:
        with timed_mount(args.bin, args.dataset, f"cache={ctx['cache_dir']},column={args.column}",
                         timeout=args.mount_timeout) as (mnt, first_s, _):
            with open(os.path.join(mnt, ".youmufs", "index.json")) as f:
                index = json.load(f)
            ctx["epoch_bytes"] = os.stat(os.path.join(mnt, "epoch-0.jsonl")).st_size
        ctx["first_mount_s"] = first_s
        ctx["index_bytes"] = index.get("index_bytes", index.get("index_memory_bytes"))
        ctx["index_field"] = ("index_bytes" if "index_bytes" in index else
                              "index_memory_bytes" if "index_memory_bytes" in index else None)
        if index["rows"] != ctx["ds"]["rows"] or index["pages"] != ctx["ds"]["pages"]:
            log(f"note: youmufs counts {index['rows']} rows / {index['pages']} pages, "
                f"the page map {ctx['ds']['rows']} / {ctx['ds']['pages']}")
        log(f"first mount {first_s:.2f} s; epoch {ctx['epoch_bytes'] / 1e9:.2f} GB")
        if "throughput" in phases:
            thr = phase_throughput(args, ctx)
        if "quality" in phases:
            qual, exp = phase_quality(args, ctx)
        if "latency" in phases:
            lat = phase_latency(args, ctx)
        if "chunks" in phases:
            chunks = phase_chunks(args, ctx)
        if "memory" in phases:
            memr = phase_memory(args, ctx)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if exp is None:
        exp = {"config": "full shuffle (exact expectation)", "rho": 0.0, "same_page": 0.0,
               "same_file": 0.0, "files_win": 1.0, "pages_win": 1.0}
    plots = make_plots(prefix, args, thr, lat, memr) if thr else []
    elapsed = time.monotonic() - T0
    text = report(args, ctx, thr, qual, exp, lat, chunks, memr, plots, elapsed)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        f.write(text)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"throughput": thr, "quality": qual, "latency": lat, "chunks": chunks,
                       "memory": memr,
                       "hf_prep": ctx.get("hf_prep")}, f, indent=1, default=str)
    print(text)
    log(f"wrote {args.out} and {len(plots)} plots in {elapsed / 60:.1f} min")


if __name__ == "__main__":
    main()
