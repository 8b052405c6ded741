#!/usr/bin/env python3
"""youmufs against the peers a user would pick instead, for one shuffled epoch over the same
Parquet files ("Remote storage at full speed", acceptance point 3).

    python3 -m pip install --no-deps -r bench/requirements-peers.txt
    python3 bench/peers.py --out bench/results/peers.md --plot bench/results/peers.png

Systems, each run in its own subprocess (so that peak RSS figures are independent), on every
shape of --shapes (bench/make_shapes.py's generators, written at --scale into --root):

  youmufs          `youmufs -f -o cache=<fresh dir>,mem=256M,<shape options> DATASET MNT`, then
                   epoch-0.<ext> read sequentially to EOF in 1 MiB read(2) calls, records
                   counted (newlines for jsonl, sep tokens for raw). The persistent index is
                   built by this mount (a fresh cache= directory): the first mount of the data.
  youmufs-cached   the same, mounted a second time on the index the first run saved.
  litdata          litdata.index_parquet_dataset(<dir of symlinks to the files>) then
                   StreamingDataset(dir, item_loader=ParquetLoader(low_memory=True,
                   columns=[col]), shuffle=True, seed=0), iterated in the process.
  mosaic           Conversion to MDS with MDSWriter (text as `str`; tokens as ndarray:uint16
                   for shape d, the dtype youmufs serves, ndarray:int32 for shape e), then
                   streaming.StreamingDataset(local=<mds>, shuffle=True, shuffle_seed=0,
                   batch_size=--mosaic-batch-size) iterated in the process.
  hf-stream        datasets.load_dataset("parquet", data_files=files, split="train",
                   streaming=True, columns=[col]).shuffle(buffer_size=10000, seed=0), iterated.
  pyarrow-random   the naive map-style Dataset: a seeded permutation of global row ids, each
                   fetched by __getitem__ = ParquetFile.read_row_group(rg, columns=[col])
                   .column(0).take([i]) (the files opened once; nothing decoded kept between
                   rows). A full epoch would take hours: --pyarrow-seconds of it are timed and
                   the epoch time extrapolated (marked "sampled" in the tables).

Figures per system: setup (mount / indexing / conversion / footers), time to first sample
(TTFS: from the start of the system's setup until the first record is in hand; for youmufs
from starting the daemon, so the mount and its index pass are included; for the Python peers
from after the worker's imports, which are reported apart), epoch time (from opening the
epoch / starting iteration until the last record is in hand; a library's shutdown after the
last record is noted, not counted), records/s and MB/s of decoded column values
(string bytes; for list columns values x the Parquet element width: int64 8 B, int32 4 B;
the same numerator for every system, so MB/s ratios equal records/s ratios), peak RSS of the
whole process tree (worker + every descendant, e.g. the youmufs daemon, summed, sampled every
20 ms with psutil). Every system's record count is checked against pyarrow's.

--read-delay-us N sets YOUMUFS_READ_DELAY_US=N (microseconds slept before each source read)
for the youmufs daemon only; the peers read the local disk without added latency.
--also-delay-us N adds two rows per shape: youmufs (first mount and cached) with N, next to
the undelayed youmufs rows, a stand-in for remote storage that only youmufs is given.
The page cache is warm for everyone (the files are read once before each shape); this
machine cannot drop caches.
"""
import argparse
import datetime
import hashlib
import json
import os
import platform
import resource
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from benchmount import timed_mount  # noqa: E402

READ_SIZE = 1 << 20
MB = 1e6
EOS = 50256                       # make_shapes' separator token (raw format sep=)
SYSTEMS = ["youmufs", "youmufs-cached", "youmufs-cached-decode", "litdata", "mosaic",
           "hf-stream", "pyarrow-random"]
# youmufs again with --also-delay-us of injected latency per source read (peers get none)
DELAYED = ["youmufs-delay", "youmufs-cached-delay"]
# shape letter -> make_shapes name; d uses the pyarrow-written tokens (format=raw,dtype=u16)
SHAPE_ALIASES = {"a": "a-pyarrow-text-1m", "b": "b-pyarrow-text-64k", "c": "c-duckdb-text",
                 "d": "d-pyarrow-tokens", "d-duckdb": "d-duckdb-tokens",
                 "e": "e-pyarrow-int32-jsonl"}
PACKAGES = ["litdata", "mosaicml-streaming", "datasets", "pyarrow", "polars", "numpy", "torch",
            "psutil", "matplotlib"]


def log(msg):
    print(f"[peers {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def parquet_files(d):
    return sorted(os.path.join(d, x) for x in os.listdir(d)
                  if x.endswith(".parquet") and not x.startswith("."))


# ------------------------------------------------------------------ workers (one per process)

def value_units(v):
    """Length of one sampled value: characters of a str (the text here is ASCII, so bytes;
    checked against pyarrow's byte count), elements of a list or array."""
    return len(v)


def w_youmufs(spec):
    """Mount, read epoch-0 to EOF in 1 MiB reads, unmount."""
    env = {"YOUMUFS_READ_DELAY_US": str(spec["read_delay_us"])} if spec["read_delay_us"] else None
    mnt = spec["mountpoint"]
    os.makedirs(mnt, exist_ok=True)
    opts = f"cache={spec['cache_dir']},mem={spec['mem']},{spec['options']}"
    raw = "format=raw" in spec["options"]
    out = {"options": opts, "delay_us": spec["read_delay_us"]}
    t0 = time.monotonic()
    with timed_mount(spec["bin"], spec["dataset"], opts, env=env, timeout=spec["timeout"],
                     mountpoint=mnt) as (_, setup_s, _proc):
        out["setup_s"] = setup_s
        path = os.path.join(mnt, f"epoch-0.{spec['ext']}")
        out["epoch_bytes"] = os.stat(path).st_size
        t1 = time.monotonic()
        if spec.get("decode"):
            r = read_decoded(path, raw, spec["column"], t0)
        else:
            r = read_counted(path, raw, t0)
        out["epoch_s"] = time.monotonic() - t1
        out.update(r)
        with open(os.path.join(mnt, ".youmufs", "index.json")) as f:
            index = json.load(f)
        out["index_note"] = {k: index[k] for k in ("pages", "files", "cached_files",
                                                  "index_seconds") if k in index}
    return out


def read_counted(path, raw, t0):
    """The epoch file read to EOF in 1 MiB read(2) calls, records counted (newlines, or sep
    tokens of a raw u16 stream), nothing else done with them (what `cat` costs)."""
    import numpy as np
    buf = bytearray(READ_SIZE)
    mv = memoryview(buf)
    records = nbytes = 0
    carry = b""          # raw: an odd trailing byte of a short read, for the next one
    ttfs = None
    fd = os.open(path, os.O_RDONLY)
    try:
        while True:
            k = os.readv(fd, [mv])
            if k == 0:
                break
            nbytes += k
            if raw:
                data = carry + bytes(mv[:k]) if carry else mv[:k]
                even = len(data) & ~1
                records += int(np.count_nonzero(np.frombuffer(data[:even], np.uint16) == EOS))
                carry = bytes(data[even:])
            else:
                records += buf.count(b"\n", 0, k)
            if ttfs is None and records:
                ttfs = time.monotonic() - t0       # first whole record in hand
    finally:
        os.close(fd)
    return {"ttfs_s": ttfs, "records": records, "read_bytes": nbytes}


def read_decoded(path, raw, column, t0):
    """The epoch file read to EOF (1 MiB buffered reads) with every record turned into what
    the peers hand out: jsonl lines json.loads-ed to a str / list, raw u16 records cut at the
    sep token into numpy arrays. Counts records and value units, like the peers' loop."""
    import numpy as np
    records = units = 0
    ttfs = None
    with open(path, "rb", buffering=READ_SIZE) as f:
        if not raw:
            for line in f:
                v = json.loads(line)[column]
                if ttfs is None:
                    ttfs = time.monotonic() - t0
                records += 1
                units += len(v)
        else:
            tail = np.empty(0, np.uint16)
            carry = b""
            while True:
                data = f.read(READ_SIZE)
                if not data:
                    break
                data = carry + data if carry else data
                even = len(data) & ~1
                carry = data[even:]
                a = np.frombuffer(data[:even], np.uint16)
                if tail.size:
                    a = np.concatenate([tail, a])
                start = 0
                for end in np.flatnonzero(a == EOS).tolist():
                    rec = a[start:end]              # one record, as a numpy array
                    if ttfs is None:
                        ttfs = time.monotonic() - t0
                    records += 1
                    units += len(rec)
                    start = end + 1
                tail = a[start:].copy()
    return {"ttfs_s": ttfs, "records": records, "units": units}


def w_litdata(spec):
    import litdata
    from litdata.streaming.item_loader import ParquetLoader
    col = spec["column"]
    # A directory of symlinks: index.json is written next to the files, and a fresh one per
    # run makes the indexing part of every run (and keeps litdata out of the data directory).
    d = os.path.join(spec["workdir"], "litdata")
    os.makedirs(d)
    for f in spec["files"]:
        os.symlink(f, os.path.join(d, os.path.basename(f)))
    t0 = time.monotonic()
    litdata.index_parquet_dataset(d)
    index_s = time.monotonic() - t0
    ds = litdata.StreamingDataset(d, item_loader=ParquetLoader(low_memory=True, columns=[col]),
                                  shuffle=True, seed=0)
    out = {"setup_s": time.monotonic() - t0, "index_s": index_s}
    return out | iterate(ds, lambda ex: ex[col], t0)


def w_mosaic(spec):
    import numpy as np
    import pyarrow.parquet as pq
    from streaming import MDSWriter, StreamingDataset
    from streaming.base.util import clean_stale_shared_memory
    col, mds_type = spec["column"], spec["mds_type"]
    mds = os.path.join(spec["workdir"], "mds")
    t0 = time.monotonic()
    with MDSWriter(out=mds, columns={col: mds_type}) as w:
        for f in spec["files"]:
            for batch in pq.ParquetFile(f).iter_batches(batch_size=8192, columns=[col]):
                arr = batch.column(0)
                if mds_type == "str":
                    for v in arr.to_pylist():
                        if v is not None:
                            w.write({col: v})
                else:
                    # list<int>: slice the flat values by the offsets (no Python lists)
                    dtype = np.dtype(mds_type.split(":")[1])
                    offs = arr.offsets.to_numpy()
                    vals = arr.values.to_numpy(zero_copy_only=False).astype(dtype)
                    base = offs[0]
                    valid = arr.is_valid().to_numpy(zero_copy_only=False)
                    for i in range(len(arr)):
                        if valid[i]:
                            w.write({col: vals[offs[i] - base:offs[i + 1] - base]})
    convert_s = time.monotonic() - t0
    clean_stale_shared_memory()
    # batch_size matters: its prefetch runs at most predownload = 8 x batch_size samples ahead
    # and its threads poll every 7 ms, so batch_size=1 caps it near 1,100 samples/s
    ds = StreamingDataset(local=mds, shuffle=True, shuffle_seed=0,
                          batch_size=spec["mosaic_batch_size"])
    out = {"setup_s": time.monotonic() - t0, "convert_s": convert_s,
           "mds_bytes": sum(os.path.getsize(os.path.join(mds, x)) for x in os.listdir(mds))}
    return out | iterate(ds, lambda ex: ex[col], t0)


def w_hf_stream(spec):
    import datasets
    datasets.logging.set_verbosity_error()
    datasets.disable_progress_bars()
    col = spec["column"]
    t0 = time.monotonic()
    ds = datasets.load_dataset("parquet", data_files=spec["files"], split="train",
                               streaming=True, columns=[col])
    ds = ds.shuffle(buffer_size=10000, seed=0)
    out = {"setup_s": time.monotonic() - t0,
           "shutdown_sleep_s": getattr(datasets.config, "SLEEP_TIME_ON_THREADS_SHUTDOWN", None)}
    return out | iterate(ds, lambda ex: ex[col], t0)


def w_pyarrow_random(spec):
    from row_access import RowGroupIndex
    t0 = time.monotonic()
    index = RowGroupIndex(spec["files"], spec["column"])          # footers, once
    at, order, getitem = index.rows, index.shuffled(), index.row
    out = {"setup_s": time.monotonic() - t0, "total_rows": at}
    limit = spec["pyarrow_seconds"]
    records = units = 0
    ttfs = None
    t1 = time.monotonic()
    for idx in order.tolist():
        v = getitem(idx)
        if v.is_valid:
            records += 1
            units += value_units(v.as_py())
        if ttfs is None:
            ttfs = time.monotonic() - t0
        if time.monotonic() - t1 > limit:
            break
    elapsed = time.monotonic() - t1
    out.update(ttfs_s=ttfs, sampled_rows=records, sampled_s=elapsed, records=records,
               units=units, sampled=records < at)
    # extrapolated to the whole epoch at the sampled rate
    out["epoch_s"] = elapsed * at / max(1, records)
    return out


def iterate(ds, value_of, t0):
    """Iterate a dataset to its end: count records and value units. TTFS from t0; the epoch
    ends at the last record (last_s); loop_s is until the loop returned, which for some
    libraries is later (HF datasets sleeps 5 s when its shuffled iterator shuts down)."""
    records = units = 0
    ttfs = None
    t1 = time.monotonic()
    last = t1
    for ex in ds:
        v = value_of(ex)
        if ttfs is None:
            ttfs = time.monotonic() - t0
        if v is not None:
            records += 1
            units += value_units(v)
        last = time.monotonic()
    return {"ttfs_s": ttfs, "epoch_s": last - t1, "loop_s": time.monotonic() - t1,
            "records": records, "units": units}


WORKERS = {"youmufs": w_youmufs, "youmufs-cached": w_youmufs, "youmufs-delay": w_youmufs,
           "youmufs-cached-delay": w_youmufs, "youmufs-cached-decode": w_youmufs,
           "litdata": w_litdata,
           "mosaic": w_mosaic, "hf-stream": w_hf_stream, "pyarrow-random": w_pyarrow_random}


def worker_main(system, spec_json):
    spec = json.loads(spec_json)
    t = time.monotonic()
    # the imports are done here, before the timed part, and reported apart
    if system == "litdata":
        import litdata  # noqa: F401
        from litdata.streaming.item_loader import ParquetLoader  # noqa: F401
    elif system == "mosaic":
        import streaming  # noqa: F401
    elif system == "hf-stream":
        # local files only: no hub look-ups, caches in the work directory (read at import)
        os.environ["HF_HUB_OFFLINE"] = "1"
        os.environ["HF_DATASETS_OFFLINE"] = "1"
        os.environ["HF_HOME"] = os.path.join(spec["workdir"], "hf")
        import datasets  # noqa: F401
    elif system == "pyarrow-random":
        import pyarrow.parquet  # noqa: F401
    import_s = time.monotonic() - t
    out = WORKERS[system](spec)
    out["import_s"] = import_s
    print("RESULT " + json.dumps(out), flush=True)


# ------------------------------------------------------------------ orchestration

def mounts_under(prefix):
    """Mount points at or below prefix (from /proc/self/mounts: also finds a dead FUSE mount,
    which os.path.ismount cannot stat)."""
    prefix = os.path.realpath(prefix)
    out = []
    with open("/proc/self/mounts") as f:
        for line in f:
            mp = line.split()[1].replace("\\040", " ")
            if mp == prefix or mp.startswith(prefix + "/"):
                out.append(mp)
    return out


def tree_rss(proc):
    """Summed RSS (bytes) of proc and all its descendants, 0 if it is gone."""
    import psutil
    try:
        procs = [proc] + proc.children(recursive=True)
    except psutil.Error:
        return 0
    total = 0
    for p in procs:
        try:
            total += p.memory_info().rss
        except psutil.Error:
            pass
    return total


def run_system(system, spec, timeout):
    """One worker process; returns its result dict with peak_rss (process tree) added, or
    {'error': ...}. The worker runs in its own session so a timeout kills its whole group."""
    import psutil
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", system,
           "--spec", json.dumps(spec)]
    errpath = os.path.join(spec["workdir"], "worker.stderr")
    load0 = os.getloadavg()[0]
    ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    with open(errpath, "w+") as err:
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, text=True,
                             start_new_session=True)
        ps = psutil.Process(p.pid)
        peak = [0]
        done = threading.Event()

        def sample():
            while not done.is_set():
                peak[0] = max(peak[0], tree_rss(ps))
                done.wait(0.02)

        th = threading.Thread(target=sample, daemon=True)
        th.start()
        try:
            stdout, _ = p.communicate(timeout=timeout)
            error = None if p.returncode == 0 else f"exit {p.returncode}"
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)            # the worker's own group only
            stdout, _ = p.communicate()
            error = f"no result within {timeout:.0f} s (killed)"
        done.set()
        th.join()
        # CPU time of the worker and every descendant it waited for (the youmufs daemon):
        # the reaped tree's user + system seconds, insensitive to other load on the machine
        ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu_s = (ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime)
        err.seek(0)
        err_text = err.read()
    for mp in mounts_under(spec["workdir"]):            # a killed youmufs worker's mount
        subprocess.run(["fusermount3", "-u", "-z", mp])
    res = None
    for line in (stdout or "").splitlines():
        if line.startswith("RESULT "):
            res = json.loads(line[len("RESULT "):])
    if res is None:
        tail = [x for x in err_text.strip().splitlines() if x.strip()][-3:]
        return {"error": (error or "no result") + ": " + " | ".join(tail)[-600:]}
    res.update(peak_rss=peak[0], cpu_s=cpu_s, load=[load0, os.getloadavg()[0]])
    return res


def reference(files, column):
    """pyarrow's figures for the column: non-null rows, value units (str chars = bytes, list
    elements), decoded value bytes, the element width."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq
    rows = units = vbytes = 0
    width = None
    for f in files:
        for batch in pq.ParquetFile(f).iter_batches(batch_size=65536, columns=[column]):
            a = batch.column(0)
            rows += len(a) - a.null_count
            if pa.types.is_string(a.type) or pa.types.is_large_string(a.type):
                n = pc.sum(pc.binary_length(a)).as_py() or 0
                units += pc.sum(pc.utf8_length(a)).as_py() or 0
                vbytes += n
            else:
                width = a.type.value_type.bit_width // 8
                n = pc.sum(pc.list_value_length(a)).as_py() or 0
                units += n
                vbytes += n * width
    return {"rows": rows, "units": units, "value_bytes": vbytes, "width": width}


def warm(files):
    for f in files:
        with open(f, "rb") as fh:
            while fh.read(1 << 24):
                pass


def mds_type_for(shape):
    if shape.column == "text":
        return "str"
    return "ndarray:uint16" if "dtype=u16" in shape.options else "ndarray:int32"


def run_shape(args, name, shapes_mod, workroot):
    shape = shapes_mod.SHAPES[name]
    d = shapes_mod.generate(args.root, name, args.scale)
    files = parquet_files(d)
    log(f"{name}: reference figures")
    ref = reference(files, shape.column)
    desc = shapes_mod.describe(d, shape.column)
    warm(files)
    runs = {system: [] for system in args.systems}
    for rep in range(args.repeat):
        # rounds: every system once per round, so slow drifts of the machine hit all alike
        for system in args.systems:
            # a fresh cache= per round (and per delay setting): the first mount indexes,
            # the cached one re-mounts on what that first mount saved
            delayed = system.endswith("-delay")
            cache_dir = os.path.join(workroot, f"{name}-cache{'-delay' if delayed else ''}-{rep}")
            wd = os.path.join(workroot, f"{name}-{system}-{rep}")
            os.makedirs(wd)
            spec = {"files": files, "dataset": d, "column": shape.column, "workdir": wd,
                    "ext": shape.ext, "options": shape.mount_options(), "bin": args.bin,
                    "mem": args.mem, "cache_dir": cache_dir,
                    "read_delay_us": args.also_delay_us if delayed else args.read_delay_us,
                    "mountpoint": os.path.join(wd, "mnt") if system.startswith("youmufs")
                    else None,
                    "timeout": args.timeout, "mds_type": mds_type_for(shape),
                    "pyarrow_seconds": args.pyarrow_seconds,
                    "mosaic_batch_size": args.mosaic_batch_size,
                    "decode": system.endswith("-decode")}
            first = system.replace("-cached", "").replace("-decode", "")
            if "-cached" in system and first not in args.systems:
                # the cached run needs the index a first mount would have saved
                os.makedirs(cache_dir, exist_ok=True)
                subprocess.run([args.bin, "index", "-o",
                                f"cache={cache_dir},{shape.mount_options()}", d],
                               check=True, capture_output=True)
            log(f"{name}: {system} (run {rep + 1}/{args.repeat})")
            r = run_system(system, spec, args.timeout)
            check_result(r, ref)
            runs[system].append(r)
            log(f"{name}: {system}: " + summary(r, ref))
            if not args.keep:
                shutil.rmtree(wd, ignore_errors=True)
    results = {system: combine(rs) for system, rs in runs.items()}
    return {"shape": name, "what": shape.what, "dir": os.path.relpath(d, ROOT),
            "options": shape.mount_options(), "ext": shape.ext, "mds_type": mds_type_for(shape),
            "ref": ref, "describe": {k: v for k, v in desc.items() if k != "file_rows"},
            "results": results}


def combine(rs):
    """The repeats of one system: the run of median epoch time stands for it, with the median
    setup, TTFS, peak RSS and CPU time of all runs, and every run kept for the spread."""
    ok = [r for r in rs if "error" not in r]
    if not ok:
        return rs[0]
    ok.sort(key=lambda r: r["epoch_s"])
    med = dict(ok[(len(ok) - 1) // 2])

    def median(key):
        v = sorted(r[key] for r in ok)
        return v[(len(v) - 1) // 2] if len(v) % 2 else (v[len(v) // 2 - 1] + v[len(v) // 2]) / 2

    for key in ("setup_s", "index_s", "convert_s"):
        if all(key in r for r in ok):
            med[key] = median(key)
    med.update(ttfs_s=median("ttfs_s"), peak_rss=median("peak_rss"), cpu_s=median("cpu_s"),
               runs=rs,
               all_epoch=[r["epoch_s"] for r in ok], all_ttfs=[r["ttfs_s"] for r in ok],
               all_load=[x for r in ok for x in r["load"]], n_runs=len(ok),
               failed_runs=[r["error"] for r in rs if "error" in r],
               mismatches=[r["mismatch"] for r in rs if r.get("mismatch")])
    med.pop("mismatch", None)
    if med["mismatches"]:
        med["mismatch"] = "; ".join(med["mismatches"])
    return med


def check_result(r, ref):
    """Mark a result whose record count (or value units) differs from pyarrow's."""
    if "error" in r:
        return
    problems = []
    if not r.get("sampled") and r.get("records") != ref["rows"]:
        problems.append(f"records {r.get('records')} != {ref['rows']}")
    if "units" in r and not r.get("sampled") and r["units"] != ref["units"]:
        problems.append(f"value units {r['units']} != {ref['units']}")
    if problems:
        r["mismatch"] = "; ".join(problems)


def summary(r, ref):
    if "error" in r:
        return "ERROR " + r["error"]
    return (f"ttfs {r['ttfs_s']:.2f} s, epoch {r['epoch_s']:.2f} s, "
            f"{ref['rows'] / r['epoch_s']:,.0f} rec/s, peak RSS {r['peak_rss'] / 2**20:.0f} MiB"
            + (f", MISMATCH {r['mismatch']}" if r.get("mismatch") else ""))


# ------------------------------------------------------------------ report

LABELS = {"youmufs": "youmufs (first mount, index built)",
          "youmufs-cached": "youmufs (re-mount, cached index)",
          "youmufs-cached-decode": "youmufs (cached index), records decoded in Python",
          "youmufs-delay": "youmufs + injected read latency (first mount)",
          "youmufs-cached-delay": "youmufs + injected read latency (cached index)",
          "litdata": "LitData ParquetLoader", "mosaic": "MosaicML Streaming (MDS)",
          "hf-stream": "HF datasets streaming", "pyarrow-random": "pyarrow row-wise random"}


def fnum(v, spec):
    return "n/a" if v is None else format(v, spec)


def setup_note(system, r):
    if system.startswith("youmufs"):
        return f"mount {r['setup_s']:.2f} s"
    if system == "litdata":
        return f"index_parquet_dataset {r['index_s']:.2f} s"
    if system == "mosaic":
        return f"MDS conversion {r['convert_s']:.1f} s ({r['mds_bytes'] / MB:.0f} MB)"
    if system == "hf-stream":
        return f"load_dataset {r['setup_s']:.2f} s"
    if system == "pyarrow-random":
        return f"footers {r['setup_s']:.2f} s"
    return ""


def shape_table(s):
    ref = s["ref"]
    res = s["results"]
    base = res.get("youmufs")
    L = ["| system | setup | TTFS s | epoch s | records/s | MB/s | peak RSS MiB | CPU s | "
         "youmufs ÷ system, records/s | system TTFS ÷ youmufs TTFS | notes |",
         "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for system, r in res.items():
        if "error" in r:
            L.append(f"| {LABELS[system]} | failed | | | | | | | | | {r['error']} |")
            continue
        rec_s = ref["rows"] / r["epoch_s"]
        mb_s = ref["value_bytes"] / r["epoch_s"] / MB
        notes = [f"imports {r['import_s']:.1f} s (not in TTFS)"] if r.get("import_s", 0) > 0.05 \
            else []
        if r.get("n_runs", 1) > 1:
            notes.insert(0, f"{r['n_runs']} runs: epoch {min(r['all_epoch']):.2f}-"
                            f"{max(r['all_epoch']):.2f} s, TTFS {min(r['all_ttfs']):.2f}-"
                            f"{max(r['all_ttfs']):.2f} s")
        if r.get("failed_runs"):
            notes.append("failed runs: " + "; ".join(r["failed_runs"]))
        if r.get("sampled"):
            notes.insert(0, f"**sampled**: {r['sampled_rows']:,} rows in {r['sampled_s']:.0f} s, "
                            f"epoch time extrapolated to {ref['rows']:,} rows")
        if r.get("shutdown_sleep_s"):
            notes.append(f"epoch includes the {r['shutdown_sleep_s']} s sleep of datasets when "
                         "its file iterators shut down (config.SLEEP_TIME_ON_THREADS_SHUTDOWN), "
                         "before the shuffle buffer's last rows")
        if r.get("loop_s", 0) > r["epoch_s"] + 0.5:
            notes.append(f"the loop returned {r['loop_s'] - r['epoch_s']:.1f} s after the last "
                         "record (not counted)")
        if system.startswith("youmufs"):
            notes.append(f"epoch file {r['epoch_bytes'] / MB:.0f} MB")
        if r.get("mismatch"):
            notes.append(f"**count mismatch: {r['mismatch']}**")
        ratio_t = ratio_f = ""
        if system == "youmufs-cached-decode":
            notes.insert(0, "same mount as the cached row, but each record turned into the "
                            "Python object a peer hands out: json.loads per line (raw: the u16 "
                            "stream cut at sep into numpy arrays), and its length checked")
        if system in DELAYED:
            notes.insert(0, f"YOUMUFS_READ_DELAY_US={r['delay_us']}: every source read sleeps "
                            f"{r['delay_us'] / 1000:g} ms first (the peers read without delay)")
        if system in DELAYED or system == "youmufs-cached-decode":
            pass                    # no ratio against the first-mount row: a variant of it
        elif base and "error" not in base and system != "youmufs":
            ratio_t = f"{(ref['rows'] / base['epoch_s']) / rec_s:.2f}"
            ratio_f = f"{r['ttfs_s'] / base['ttfs_s']:.2f}"
        L.append(f"| {LABELS[system]} | {setup_note(system, r)} | {r['ttfs_s']:.2f} | "
                 f"{r['epoch_s']:.2f} | {rec_s:,.0f} | {mb_s:.1f} | "
                 f"{r['peak_rss'] / 2**20:.0f} | {r['cpu_s']:.1f} | {ratio_t} | {ratio_f} | "
                 f"{'; '.join(notes)} |")
    return L


def versions():
    from importlib.metadata import PackageNotFoundError, version
    out = []
    for p in PACKAGES:
        try:
            out.append(f"{p} {version(p)}")
        except PackageNotFoundError:
            out.append(f"{p} (not installed)")
    return ", ".join(out)


def machine():
    from machine import cpu_model
    cpu = cpu_model()
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return (f"{os.cpu_count()} cores ({cpu}), {mem:.0f} GiB RAM, Linux {platform.release()}, "
            f"Python {platform.python_version()}")


def report(args, shapes, elapsed, binary_note):
    L = ["# youmufs against its peers: one shuffled epoch over the same Parquet files", "",
         "Acceptance point 3 of \"Remote storage at full speed\". Generated by `bench/peers.py` "
         f"on {datetime.date.today().isoformat()} in {elapsed / 60:.1f} min; {args.repeat} "
         "runs of each system per shape, in rounds (each round runs every system once); the "
         "tables give the run of median epoch time with the median TTFS, peak RSS and CPU "
         "time, and the spread of all runs in the notes.",
         "", "```sh", "python3 -m pip install --no-deps -r bench/requirements-peers.txt",
         "python3 bench/peers.py " + " ".join(shlex.quote(a) for a in sys.argv[1:]), "```", "",
         f"- Machine: {machine()}. Both cores are shared by everything in a run: the youmufs "
         "daemon's threads and its reader, or a peer's Python process and its threads.",
         f"- The machine was not idle: other engineers' builds and tests shared its 2 cores "
         f"during the run (1-min load average seen around the runs: {load_range(shapes)}). "
         "Wall-clock figures carry that noise; the *CPU s* column (user + system seconds of the "
         "whole process tree over the whole run, imports and setup included) does not.",
         f"- youmufs binary: {binary_note}.",
         f"- Peers: {versions()}.",
         f"- youmufs YOUMUFS_READ_DELAY_US: {args.read_delay_us} µs"
         + (" (the daemon sleeps that long before each source read; the peers read the local "
            "disk without added latency)" if args.read_delay_us else
            " (no injected latency in the main youmufs rows)") + "."
         + (f" The rows \"youmufs + injected read latency\" run with YOUMUFS_READ_DELAY_US="
            f"{args.also_delay_us} (`--also-delay-us`): a stand-in for remote storage given to "
            "youmufs only; the peers always read the local disk without added latency."
            if args.also_delay_us else " The peers never get injected latency."),
         "- Page cache warm for every system (each shape's files are read once before its runs; "
         "this container cannot drop caches), so this compares CPU cost and access pattern, "
         "not storage latency.", "",
         "## What each system does", "",
         "| system | what is timed |", "|---|---|",
         f"| youmufs | `youmufs -f -o cache=<fresh dir>,mem={args.mem},<shape options> DIR MNT`, "
         "then `epoch-0.<ext>` read to EOF in 1 MiB `read(2)` calls, records counted (newline / "
         "sep token). TTFS: from starting the daemon (mount and the index's page pass "
         "included) to the first whole record read. Peak RSS: daemon + reader. |",
         "| youmufs, cached index | the same mount again, on the persistent index the first "
         "mount saved (`cache=`): what every later mount of unchanged files costs |",
         "| LitData | `litdata.index_parquet_dataset(dir)` then `StreamingDataset(dir, "
         "item_loader=ParquetLoader(low_memory=True, columns=[col]), shuffle=True, seed=0)`, "
         "iterated in the process (no DataLoader workers); indexing is in TTFS |",
         "| MosaicML Streaming | `MDSWriter(out=<dir>, columns={col: str / ndarray:uint16 / "
         "ndarray:int32})` fed from pyarrow batches (conversion timed, in TTFS), then "
         f"`StreamingDataset(local=<dir>, shuffle=True, shuffle_seed=0, batch_size="
         f"{args.mosaic_batch_size})` iterated in the process (batch_size sets its prefetch depth, "
         "8 × batch_size samples; with batch_size=1 its 7 ms polling caps it near 1,100 "
         "samples/s, as a first trial here showed) |",
         "| HF datasets streaming | `load_dataset(\"parquet\", data_files=files, split=\"train\", "
         "streaming=True, columns=[col]).shuffle(buffer_size=10000, seed=0)`, iterated (default "
         "format: Python str / list) |",
         "| pyarrow row-wise random | a naive map-style Dataset: seeded permutation of global row "
         "ids; `__getitem__(i)` = `ParquetFile.read_row_group(rg, columns=[col]).column(0)"
         ".take([i - start])` (files opened once, nothing decoded kept between rows). Timed for "
         f"{args.pyarrow_seconds:.0f} s and **extrapolated** to the epoch |", "",
         "Columns: *setup* is what happens before the first sample can be asked for; *TTFS* "
         "(time to first sample) counts from the start of that setup (Python imports of the "
         "peers, shown in notes, are not counted); *epoch s* is from opening the epoch / "
         "starting iteration until the last record is in hand (a library that then still "
         "holds the loop, like HF datasets' 5 s sleep when its shuffled iterator's threads "
         "shut down, has that noted, not counted); records/s = the shape's non-null rows ÷ epoch s; MB/s "
         "= decoded column values ÷ epoch s (string bytes, or list elements × the Parquet "
         "element width), the same numerator for every system; peak RSS is the summed RSS of "
         "the worker process and all its descendants, sampled every 20 ms. Ratios read as "
         "\">1: youmufs better\": youmufs records/s ÷ the system's, and the system's TTFS ÷ "
         "youmufs' TTFS (youmufs = the first mount, index built). Every full epoch's record "
         "count (and, for peers, value length) was checked against pyarrow's.", ""]
    for s in shapes:
        ds, ref = s["describe"], s["ref"]
        L += [f"## {s['what']}", "",
              f"`{s['dir']}`: {ds['files']} files, {ds['bytes'] / MB:.0f} MB of Parquet, "
              f"{ref['rows']:,} rows, {ref['value_bytes'] / MB:.0f} MB of decoded values, "
              f"{ds['row_groups']} row groups, {ds['pages']} pages "
              f"({ds['decoded_per_page'][0] / MB:.2f} MB decoded per page on average), "
              f"written by {ds['created_by'].split(' (')[0]}. youmufs options: "
              f"`{s['options']}` (epoch file `epoch-0.{s['ext']}`); MDS column type "
              f"`{s['mds_type']}`.", ""]
        L += shape_table(s)
        L.append("")
    L += ["## Summary", "", summary_lines(shapes), "",
          "![throughput and time to first sample](peers.png)", ""]
    return "\n".join(L)


def load_range(shapes):
    loads = [x for s in shapes for r in s["results"].values() for x in r.get("all_load", [])]
    return f"{min(loads):.1f} to {max(loads):.1f}" if loads else "n/a"


def summary_lines(shapes):
    """One line per shape and peer: where youmufs wins and where it loses, from the figures."""
    out = ["| shape | peer | youmufs ÷ peer, records/s (>1: youmufs faster) | youmufs with "
           "records decoded in Python ÷ peer, records/s | peer TTFS ÷ youmufs TTFS (>1: "
           "youmufs first; first mount) | peer TTFS ÷ youmufs TTFS, cached index | youmufs peak "
           "RSS ÷ peer's (<1: youmufs smaller) |",
           "|---|---|---:|---:|---:|---:|---:|"]
    for s in shapes:
        res = s["results"]
        b = res.get("youmufs")
        if not b or "error" in b:
            continue
        dec, cached = res.get("youmufs-cached-decode"), res.get("youmufs-cached")

        def ratio(other, key):
            if not other or "error" in other:
                return "n/a"
            return f"{r[key] / other[key]:.2f}"

        for system, r in res.items():
            if system.startswith("youmufs") or "error" in r:
                continue
            sampled = " (sampled)" if r.get("sampled") else ""
            out.append(f"| {s['shape']} | {LABELS[system]} | {ratio(b, 'epoch_s')}{sampled} | "
                       f"{ratio(dec, 'epoch_s')}{sampled} | {ratio(b, 'ttfs_s')} | "
                       f"{ratio(cached, 'ttfs_s')} | {b['peak_rss'] / r['peak_rss']:.2f} |")
    return "\n".join(out)


def plot(shapes, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    systems = [x for x in SYSTEMS + DELAYED if any(x in s["results"] for s in shapes)]
    fig, axes = plt.subplots(1, 2, figsize=(14, 6))
    width = 0.8 / max(1, len(systems))
    x = np.arange(len(shapes))
    for k, system in enumerate(systems):
        thr, ttfs = [], []
        for s in shapes:
            r = s["results"].get(system)
            ok = r is not None and "error" not in r
            thr.append(s["ref"]["value_bytes"] / r["epoch_s"] / MB if ok else 0)
            ttfs.append(r["ttfs_s"] if ok else 0)
        for ax, vals in ((axes[0], thr), (axes[1], ttfs)):
            bars = ax.bar(x + (k - (len(systems) - 1) / 2) * width, vals, width,
                          label=LABELS[system])
            if system == "pyarrow-random" and ax is axes[0]:
                for b in bars:
                    b.set_hatch("//")
    axes[0].set_title("epoch throughput, MB/s of decoded values (log; hatched: extrapolated)")
    axes[1].set_title("time to first sample, s (log; lower is better)")
    for ax in axes:
        ax.set_yscale("log")
        ax.set_xticks(x)
        ax.set_xticklabels([s["shape"] for s in shapes], rotation=12, fontsize=8)
        ax.grid(axis="y", alpha=0.3, which="both")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=3, fontsize=9, frameon=False)
    fig.tight_layout(rect=(0, 0.12, 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)


def binary_note(path):
    h = hashlib.sha256(open(path, "rb").read()).hexdigest()[:12]
    head = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                          capture_output=True, text=True).stdout.strip()
    return (f"`{path}` (sha256 {h}…); main was at {head or '?'} when the run started (the "
            "commit the binary was built from is not recorded in it)")


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        ap = argparse.ArgumentParser()
        ap.add_argument("--worker", choices=SYSTEMS + DELAYED)
        ap.add_argument("--spec")
        a = ap.parse_args()
        worker_main(a.worker, a.spec)
        return
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "youmufs"))
    ap.add_argument("--root", default=os.path.join(HERE, "data", "peers"),
                    help="where the shapes are (written there by make_shapes if missing)")
    ap.add_argument("--scale", type=float, default=0.2,
                    help="make_shapes scale for shapes written here (0.2: ~150-300 MB each)")
    ap.add_argument("--shapes", default="a,c,d,e",
                    help=f"comma-separated: {', '.join(SHAPE_ALIASES)} or make_shapes names")
    ap.add_argument("--systems", default=",".join(SYSTEMS))
    ap.add_argument("--mem", default="256M", help="youmufs mem=")
    ap.add_argument("--read-delay-us", type=int, default=0,
                    help="YOUMUFS_READ_DELAY_US for the youmufs daemon only")
    ap.add_argument("--also-delay-us", type=int, default=0,
                    help="also run youmufs (first mount and cached) with this "
                         "YOUMUFS_READ_DELAY_US, as extra rows")
    ap.add_argument("--pyarrow-seconds", type=float, default=20.0,
                    help="pyarrow random-access sample length, extrapolated to the epoch")
    ap.add_argument("--mosaic-batch-size", type=int, default=256,
                    help="StreamingDataset batch_size (its prefetch depth is 8 x this)")
    ap.add_argument("--repeat", type=int, default=3,
                    help="runs of every system per shape, interleaved; medians reported")
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds per system run")
    ap.add_argument("--out", help="markdown results")
    ap.add_argument("--plot", help="PNG plot")
    ap.add_argument("--json", help="raw results as JSON")
    ap.add_argument("--keep", action="store_true", help="keep work directories")
    args = ap.parse_args()
    args.bin = os.path.abspath(args.bin)
    args.systems = [x for x in args.systems.split(",") if x]
    for x in args.systems:
        if x not in SYSTEMS:
            sys.exit(f"unknown system {x!r} (known: {', '.join(SYSTEMS)})")
    if args.also_delay_us:
        args.systems += [x + "-delay" for x in ("youmufs", "youmufs-cached")
                         if x in args.systems]
    import make_shapes
    names = [SHAPE_ALIASES.get(x, x) for x in args.shapes.split(",") if x]
    for n in names:
        if n not in make_shapes.SHAPES:
            sys.exit(f"unknown shape {n!r}")
    bnote = binary_note(args.bin)
    t0 = time.monotonic()
    os.makedirs(args.root, exist_ok=True)
    workroot = tempfile.mkdtemp(prefix=".peers-work-", dir=args.root)   # same disk as the data
    shapes = []
    try:
        for n in names:
            shapes.append(run_shape(args, n, make_shapes, workroot))
            if args.json:
                with open(args.json, "w") as f:
                    json.dump(shapes, f, indent=1)
    finally:
        # every mount point made here lives under workroot: unmount any left, then clean up
        for mp in mounts_under(workroot):
            subprocess.run(["fusermount3", "-u", "-z", mp])
        if not args.keep:
            shutil.rmtree(workroot, ignore_errors=True)
    elapsed = time.monotonic() - t0
    text = report(args, shapes, elapsed, bnote)
    if args.out:
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        with open(args.out, "w") as f:
            f.write(text)
    else:
        print(text)
    if args.plot:
        plot(shapes, args.plot)
    log(f"done in {elapsed / 60:.1f} min")


if __name__ == "__main__":
    main()
