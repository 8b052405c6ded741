#!/usr/bin/env python3
"""Issue 10's memory matrix: peak RSS of the daemon against 1.1 x (index + mem) + 16 MiB while
the 8 parts of one epoch are read at once, on every data shape of bench/make_shapes.py, for each
mem=; throughput of an old and a new binary side by side; shuffle quality on DuckDB's huge pages.

    python3 bench/memory_bench.py --bin /tmp/build-x/youmufs --old-bin /tmp/youmufs-before \\
        --quality --out bench/results/memory_bench.md       # bench/data/shapes, ~20 min
    python3 bench/memory_bench.py --root /tmp/shapes --scale 0.2 --shapes a-pyarrow-text-1m

Per shape and mem (acceptance 1): a fresh mount (`-o <shape options>,mem=M,cache=<per binary
and shape>`; the first mount of a shape builds its persistent index and is not timed apart),
warm page cache (the shape's files read just before), 8 threads read
`epoch-0.part-<i>-of-8.<ext>` at once in 1 MiB read(2) calls; peak RSS = VmHWM of the daemon
(also sampled during the read, so a daemon that dies still has a figure); index = index.json
`index_memory_bytes`; bound = 1.1 x (index + mem) + 16 MiB; MB/s = bytes served / wall time of
the 8 readers. A shape that fails to mount, a read error, a short read or a daemon that dies is
reported in the table, never a crash of the runner.

--old-bin (acceptance 2): the same read with a second binary at --compare-mem (512M), the two
binaries alternating run by run, --repeat times each (3: on 2 shared cores one run of 2 s
swings by a third); the ratio is of the medians.

--quality (acceptance 3): on c-duckdb-text, `-o rowid` epochs at --quality-mems: distinct
source files per 10,000-record window (mean over windows) and the share of adjacent records
whose source rows are at most 20,000 apart (global row -> file from the files' row counts);
also with --old-bin when given.
"""
import argparse
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import make_shapes  # noqa: E402
import quality  # noqa: E402
from benchmount import MountError, timed_mount  # noqa: E402
from epoch_bench import MB, MIB, parse_size, peak_rss_kib, read_file, warm_up  # noqa: E402

SLACK = 16 * MIB
T0 = time.monotonic()


def log(msg):
    print(f"[{time.monotonic() - T0:7.1f}s] {msg}", file=sys.stderr, flush=True)


def bound_bytes(index_bytes, mem_bytes):
    """Acceptance 1 of issue 10: 1.1 x (index + mem) + 16 MiB."""
    return 1.1 * (index_bytes + mem_bytes) + SLACK


def shape_files(d):
    return sorted(os.path.join(d, x) for x in os.listdir(d) if x.endswith(".parquet"))


def read_parts(mnt, proc, ext, parts, limit_s):
    """parts threads read epoch-0.part-<i>-of-<parts>.<ext> at once. Returns a dict: bytes,
    sizes, epoch size, seconds, errors, peak RSS (KiB, sampled so a dying daemon has one),
    stopped (time limit)."""
    paths = [os.path.join(mnt, f"epoch-0.part-{i}-of-{parts}.{ext}") for i in range(parts)]
    sizes = [os.stat(p).st_size for p in paths]
    epoch = os.stat(os.path.join(mnt, f"epoch-0.{ext}")).st_size
    got, errors, state = [0] * parts, [], {}
    peak = [0]
    done = threading.Event()

    def sample():
        while not done.wait(0.05):
            try:
                peak[0] = max(peak[0], peak_rss_kib(proc.pid))
            except OSError:
                return

    t1 = time.monotonic()

    def reader(i):
        try:
            got[i] = read_file(paths[i], limit_s=limit_s, t0=t1, state=state)[0]
        except OSError as e:
            errors.append(f"part {i}: {e.strerror or e}")

    # readv releases the GIL: the 8 readers really are concurrent
    threads = [threading.Thread(target=reader, args=(i,)) for i in range(parts)]
    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    seconds = time.monotonic() - t1
    done.set()
    sampler.join()
    try:
        peak[0] = max(peak[0], peak_rss_kib(proc.pid))
    except OSError:
        pass
    if proc.poll() is not None:
        errors.append(f"daemon exited ({proc.returncode})")
    short = [i for i in range(parts) if got[i] != sizes[i]]
    if short and not state and not errors:
        errors.append(f"short read of part(s) {short}")
    return {"bytes": sum(got), "sizes": sizes, "epoch": epoch, "seconds": seconds,
            "errors": errors, "rss_kib": peak[0], "stopped": bool(state),
            "parts_sum_ok": sum(sizes) == epoch}


def run_one(args, binary, label, shape, mem, cache_dir):
    """One mount of one shape with one binary and mem; a result dict whatever happens."""
    d = os.path.join(args.root, shape.name)
    opts = f"{shape.mount_options()},mem={mem},cache={cache_dir}"
    r = {"shape": shape.name, "bin": label, "mem": mem, "mem_bytes": parse_size(mem),
         "options": opts, "status": "ok", "errors": []}
    warm_up(shape_files(d))
    watchdog = None
    try:
        with timed_mount(binary, d, opts, timeout=args.mount_timeout) as (mnt, mount_s, proc):
            def kill():                      # a hung read must not hang the runner
                r["errors"].append(f"watchdog: killed after {args.max_seconds + 120:.0f} s")
                proc.kill()
                subprocess.run(["fusermount3", "-uz", mnt], stderr=subprocess.DEVNULL)
            watchdog = threading.Timer(args.max_seconds + 120, kill)
            watchdog.start()
            with open(os.path.join(mnt, ".youmufs", "index.json")) as f:
                index = json.load(f)
            r["mount_s"] = mount_s
            r["index_bytes"] = index.get("index_memory_bytes")
            r.update(read_parts(mnt, proc, shape.ext, args.parts, args.max_seconds))
    except MountError as e:
        r["status"] = "mount failed: " + (e.stderr.strip().splitlines() or ["?"])[-1]
        return r
    except OSError as e:
        r["status"] = f"failed: {e}"
        return r
    finally:
        if watchdog:
            watchdog.cancel()
    if r["errors"]:
        r["status"] = "read failed: " + "; ".join(sorted(set(r["errors"]))[:3])
    r["mb_s"] = r["bytes"] / r["seconds"] / MB if r["seconds"] else 0.0
    if r["index_bytes"] is not None:
        b = bound_bytes(r["index_bytes"], r["mem_bytes"])
        r["bound_mib"] = b / MIB
        r["ratio"] = r["rss_kib"] * 1024 / (r["index_bytes"] + r["mem_bytes"])
        r["within"] = r["rss_kib"] * 1024 <= b
    log(f"{shape.name} {label} mem={mem}: {r['status']}, peak RSS {r['rss_kib'] / 1024:.0f} MiB"
        f" (bound {r.get('bound_mib', float('nan')):.0f}), {r['mb_s']:.0f} MB/s, "
        f"{r['seconds']:.1f} s")
    return r


# ------------------------------------------------------------------ quality (acceptance 3)

def quality_one(args, binary, shape, mem, cache_dir, file_rows, page_of):
    d = os.path.join(args.root, shape.name)
    opts = f"{shape.mount_options()},rowid,mem={mem},cache={cache_dir}"
    try:
        with timed_mount(binary, d, opts, timeout=args.mount_timeout) as (mnt, _s, _p):
            with open(os.path.join(mnt, f"epoch-0.{shape.ext}"), "rb", buffering=0) as f:
                rows, tail = quality.parse_rows(f)
    except (MountError, OSError) as e:
        return {"mem": mem, "status": f"failed: {getattr(e, 'stderr', e)}"}
    n = int(sum(file_rows))
    if tail or len(rows) != n:
        return {"mem": mem, "status": f"{len(rows)} records of {n}"}
    file_of = np.repeat(np.arange(len(file_rows)), file_rows)
    m = quality.metrics(rows, file_of, page_of, args.window)
    m["near"] = float(np.mean(np.abs(np.diff(rows)) <= args.near))
    m.update(mem=mem, status="ok")
    return m


def phase_quality(args, bins, shape, caches):
    d = os.path.join(args.root, shape.name)
    files = shape_files(d)
    file_of, page_of, page_rows = quality.page_map(files, shape.column)
    file_rows = np.bincount(file_of, minlength=len(files))
    n = int(file_rows.sum())
    out = []
    for label, binary in bins:
        for mem in args.quality_mems:
            m = quality_one(args, binary, shape, mem, caches[label, shape.name], file_rows,
                            page_of)
            m["bin"] = label
            out.append(m)
            log(f"quality {label} mem={mem}: {m['status']}"
                + (f", files/window {m['files_win']:.2f}, near {m['near'] * 100:.1f}%"
                   if m["status"] == "ok" else ""))
    uniform = {"files_win": quality.expected_distinct(file_rows.tolist(), n, args.window),
               "near": min(1.0, 2 * args.near / n)}   # about, for a uniform permutation
    return out, uniform, {"rows": n, "pages": len(page_rows)}


# ------------------------------------------------------------------ report

def fmt(v, spec, none="n/a"):
    return none if v is None else format(v, spec)


def report(args, shapes, described, results, qual, cmdline, elapsed):
    L = ["# Memory matrix (issue 10): peak RSS with 8 parts read at once, every data shape", "",
         "```", cmdline, "```", "",
         f"Binary: `{args.bin}`" + (f"; old binary: `{args.old_bin}`" if args.old_bin else "")
         + f". Data: `{os.path.relpath(args.root, ROOT)}` (bench/make_shapes.py). "
         f"{os.cpu_count()} cores. Run time {elapsed / 60:.1f} min.", "",
         "## Shapes", ""] + make_shapes.DESCRIBE_HEADER
    for s in shapes:
        if s.name in described:
            L.append(make_shapes.describe_line(s.name, described[s.name]))
    L += ["", "decoded = uncompressed page bytes (Parquet encoding, before the values are "
          "materialized: pyarrow's dictionary-encoded pages are small here, and an int64 list "
          "holds 8 B per id once decoded); rows/page counts the rows that start in the page.", ""]
    for s in shapes:
        L.append(f"- `{s.name}`: {s.what}; mounted `-o {s.mount_options()}`, epoch "
                 f"`epoch-0.{s.ext}`")
    L += ["", "## Acceptance 1: peak RSS <= 1.1 x (index + mem) + 16 MiB", "",
          "| shape | binary | mem | result | peak RSS MiB | index MiB | bound MiB | "
          "RSS / (index + mem) | within bound | MB/s | s | share read | mount s |",
          "|---|---|---|---|---:|---:|---:|---:|---|---:|---:|---:|---:|"]
    for r in results:
        ix = r.get("index_bytes")
        within = r.get("within")
        L.append(
            f"| {r['shape']} | {r['bin']} | {r['mem']} | {r['status']} | "
            f"{fmt(r.get('rss_kib', None) and r['rss_kib'] / 1024, '.0f')} | "
            f"{fmt(ix / MIB if ix is not None else None, '.1f')} | "
            f"{fmt(r.get('bound_mib'), '.0f')} | {fmt(r.get('ratio'), '.2f')} | "
            f"{'n/a' if within is None or 'rss_kib' not in r else ('yes' if within else '**NO**')} | "
            f"{fmt(r.get('mb_s'), '.0f')} | {fmt(r.get('seconds'), '.1f')} | "
            f"{fmt(r['bytes'] / r['epoch'] * 100 if r.get('epoch') else None, '.3g')}"
            f"{'%' if r.get('epoch') else ''} | "
            f"{fmt(r.get('mount_s'), '.1f')} |")
    L += ["", f"{args.parts} threads read `epoch-0.part-<i>-of-{args.parts}.<ext>` at once, "
          f"1 MiB read(2) calls, warm page cache, stopped after {args.max_seconds:.0f} s "
          "(share read < 100%). mount s includes building the persistent index on a shape's "
          "first mount by a binary.", ""]
    if args.old_bin:
        L += [f"## Acceptance 2: throughput at mem={args.compare_mem}, old and new binary", "",
              "| shape | old MB/s | new MB/s | new / old (medians) | old peak RSS MiB | "
              "new peak RSS MiB |",
              "|---|---:|---:|---:|---:|---:|"]
        for s in shapes:
            runs = {label: [r for r in results if r["shape"] == s.name and r["bin"] == label
                            and r["mem"] == args.compare_mem] for label in ("old", "new")}
            if not runs["old"] or not runs["new"]:
                continue
            cell, median = {}, {}
            for label, rs in runs.items():
                bad = [r["status"] for r in rs if r["status"] != "ok"]
                if bad:
                    cell[label], median[label] = bad[0], None
                    continue
                speeds = sorted(r["mb_s"] for r in rs)
                median[label] = statistics.median(speeds)
                cell[label] = (f"{median[label]:.0f}" + (
                    " (" + ", ".join(f"{v:.0f}" for v in speeds) + ")" if len(speeds) > 1 else ""))
            rss = {label: max((r["rss_kib"] for r in rs if "rss_kib" in r), default=None)
                   for label, rs in runs.items()}
            o, n = median["old"], median["new"]
            L.append(f"| {s.name} | {cell['old']} | {cell['new']} | "
                     f"{fmt(n / o if o and n else None, '.2f')} | "
                     f"{fmt(rss['old'] and rss['old'] / 1024, '.0f')} | "
                     f"{fmt(rss['new'] and rss['new'] / 1024, '.0f')} |")
        L += ["", f"MB/s: the median of {args.repeat} runs per binary (all runs in brackets), "
              "the two binaries alternating run by run, same data, same warm cache; new / old "
              "is the ratio of the medians; peak RSS the largest of the runs.", ""]
    if qual:
        out, uniform, info = qual
        L += [f"## Acceptance 3: shuffle quality on c-duckdb-text ({info['rows']:,} rows, "
              f"{info['pages']} pages)", "",
              f"| binary | mem | result | files / {args.window:,}-record window | "
              f"adjacent records <= {args.near:,} rows apart | same page | pages / window | |rho| |",
              "|---|---|---|---:|---:|---:|---:|---:|"]
        for m in out:
            if m["status"] != "ok":
                L.append(f"| {m['bin']} | {m['mem']} | {m['status']} | | | | | |")
                continue
            L.append(f"| {m['bin']} | {m['mem']} | ok | {m['files_win']:.2f} | "
                     f"{m['near'] * 100:.1f}% | {m['same_page'] * 100:.1f}% | "
                     f"{m['pages_win']:.1f} | {m['rho']:.3f} |")
        L.append(f"| *uniform shuffle* | | | {uniform['files_win']:.2f} | "
                 f"~{uniform['near'] * 100:.1f}% | | | 0 |")
        L += ["", "From one `-o rowid` epoch read sequentially per cell: `_row` of each record, "
              "file of a row from the files' row counts; windows do not overlap.", ""]
    return "\n".join(L) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--root", default=os.path.join(HERE, "data", "shapes"),
                    help="shapes directory (bench/make_shapes.py; made if missing)")
    ap.add_argument("--scale", type=float, default=1.0, help="scale of shapes made here")
    ap.add_argument("--shapes", default=",".join(make_shapes.SHAPES))
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "youmufs"))
    ap.add_argument("--old-bin", help="second binary, measured at --compare-mem (acceptance 2)")
    ap.add_argument("--mems", default="64M,512M")
    ap.add_argument("--compare-mem", default="512M")
    ap.add_argument("--repeat", type=int, default=3,
                    help="runs of each binary at --compare-mem, alternating (the median counts)")
    ap.add_argument("--parts", type=int, default=8)
    ap.add_argument("--max-seconds", type=float, default=120.0,
                    help="stop each read after this long")
    ap.add_argument("--mount-timeout", type=float, default=900.0)
    ap.add_argument("--quality", action="store_true", help="acceptance 3 on c-duckdb-text")
    ap.add_argument("--quality-mems", default="64M,256M,1G")
    ap.add_argument("--window", type=int, default=10_000)
    ap.add_argument("--near", type=int, default=20_000)
    ap.add_argument("--out", help="write the markdown table here "
                                  "(bench/results/memory_bench.md by convention)")
    args = ap.parse_args()
    args.mems = args.mems.split(",")
    args.quality_mems = args.quality_mems.split(",")
    cmdline = "python3 " + shlex.join([os.path.relpath(sys.argv[0], ROOT)] + sys.argv[1:])
    shapes = [make_shapes.SHAPES[n] for n in args.shapes.split(",")]
    bins = [("new", args.bin)] + ([("old", args.old_bin)] if args.old_bin else [])

    described = {}
    for s in shapes:
        try:
            make_shapes.generate(args.root, s.name, args.scale)
            described[s.name] = make_shapes.describe(os.path.join(args.root, s.name), s.column)
        except Exception as e:          # e.g. DuckDB missing: that shape's rows say so
            log(f"{s.name}: not generated: {e}")
    tmp = tempfile.mkdtemp(prefix="yfs-membench-")
    caches = {}
    for label, _ in bins:
        for s in shapes:
            caches[label, s.name] = os.path.join(tmp, f"{label}-{s.name}")
            os.makedirs(caches[label, s.name])
    results = []
    try:
        for s in shapes:
            if s.name not in described:
                results.append({"shape": s.name, "bin": "new", "mem": "-",
                                "status": "dataset not generated", "errors": []})
                continue
            for mem in args.mems:
                compared = len(bins) > 1 and mem == args.compare_mem
                for _ in range(args.repeat if compared else 1):
                    for label, binary in bins:
                        if label == "old" and not compared:
                            continue
                        results.append(run_one(args, binary, label, s, mem,
                                               caches[label, s.name]))
        qual = None
        c = make_shapes.SHAPES["c-duckdb-text"]
        if args.quality and c.name in described:
            qual = phase_quality(args, bins, c, caches)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    text = report(args, shapes, described, results, qual, cmdline, time.monotonic() - T0)
    print(text)
    if args.out:
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        with open(args.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
