"""Epoch throughput from object storage (issue 12, acceptance 2 and 3): the same files read from
local disk and from a local S3 server (the Versity gateway of tests/integration/s3server.py,
its posix backend on the same disk), in the same run, per data shape of bench/make_shapes.py;
and from S3 with 50 ms added to every request against none. Then the re-mount of 1,000
unchanged objects with the persistent index, against the same 1,000 files on disk.

    python3 bench/make_shapes.py                     # bench/data/shapes, once
    python3 bench/s3_bench.py --bin build/youmufs --out bench/results/s3.md

The 50 ms are added by youmufs itself (YOUMUFS_READ_DELAY_US, slept before each request to
the store, as bench/latency_bench.py does for files): a proxy in Python in the data path would
measure the proxy. Objects are uploaded through S3 (PutObject), so the server knows their
ETags and every GET carries If-Match, as in production. Each shape's persistent index is built
first (a mount), so the figures are the epoch's reads only. Runs alternate between the
sources; the median of --repeat runs is kept. MB/s of framed epoch bytes.

The server shares the machine's cores with youmufs and its readers, unless --server-cpu N
gives it CPU N alone and youmufs and the readers the others, in the disk runs too: as when
the store is another machine, youmufs then has the same cores from disk and from S3.
"""
import argparse
import concurrent.futures
import json
import os
import shutil
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests", "integration"))
import make_shapes  # noqa: E402
from benchmount import timed_mount  # noqa: E402
from latency_bench import cpu_seconds, epoch_names, read_file  # noqa: E402
from s3server import S3Server, versitygw_binary  # noqa: E402

BUCKET = "bench"


def one_run(binary, dataset, options, env, parts, limit, server):
    """MB/s of one mount reading `parts` epoch files at once, stats.json's io figures, and
    the CPU seconds youmufs and the gateway spent during the reads with the bytes read from
    storage (where the 2 cores go)."""
    with timed_mount(binary, dataset, options, env=env) as (mnt, _, proc):
        names = epoch_names(mnt, parts)
        per = None if limit is None else limit // parts
        cpu0 = cpu_seconds(proc.pid), cpu_seconds(server.proc.pid)
        t0 = time.monotonic()
        with concurrent.futures.ProcessPoolExecutor(parts) as pool:
            total = sum(pool.map(read_file, [os.path.join(mnt, n) for n in names],
                                 [per] * parts))
        seconds = time.monotonic() - t0
        cpu = cpu_seconds(proc.pid) - cpu0[0], cpu_seconds(server.proc.pid) - cpu0[1]
        with open(os.path.join(mnt, ".youmufs", "stats.json")) as f:
            stats = json.load(f)
    io = dict(stats.get("io", {}), youmufs_cpu_s=cpu[0], gateway_cpu_s=cpu[1],
              bytes_read=stats.get("bytes_read", 0), seconds=seconds)
    return total / seconds / 1e6, io


def upload_shape(server, local, prefix):
    """The s3:// URL of `local` uploaded under prefix (once per server), its bytes, and the
    seconds the upload took (0 when it was there)."""
    uploaded = server.__dict__.setdefault("bench_uploaded", {})
    t0 = time.monotonic()
    if prefix not in uploaded:
        uploaded[prefix] = server.upload_dir(local, BUCKET, prefix)
    size = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(local) for f in fs)
    return uploaded[prefix], size, time.monotonic() - t0


def throughput(args, server, rows):
    delay_env = {"YOUMUFS_READ_DELAY_US": str(int(args.delay_ms * 1000))}
    limit = args.limit_mb * 1000000 or None
    for name in args.shapes.split(","):
        shape = make_shapes.SHAPES[name]
        local = os.path.join(args.data, name)
        if not os.path.isdir(local):
            print(f"{name}: no data at {local} (bench/make_shapes.py makes it)", file=sys.stderr)
            continue
        url, size, up = upload_shape(server, local, name)
        print(f"{name}: uploaded {size / 1e6:.0f} MB in {up:.1f} s", file=sys.stderr)
        sources = {"disk": (local, None), "s3": (url, server.env()),
                   "s3+delay": (url, dict(server.env(), **delay_env))}
        caches = {"disk": tempfile.mkdtemp(prefix="yfs-s3b-"), "s3": tempfile.mkdtemp(prefix="yfs-s3b-")}
        opts = {k: f"{shape.mount_options()},mem={args.mem},cache={caches['disk' if k == 'disk' else 's3']}"
                for k in sources}
        for k in ("disk", "s3"):  # the persistent index, outside the timing
            with timed_mount(args.bin, sources[k][0], opts[k], env=sources[k][1]):
                pass
        for parts in [int(r) for r in args.readers.split(",")]:
            got = {k: [] for k in sources}
            io = {}
            for _ in range(args.repeat):
                for k, (ds, env) in sources.items():
                    mbs, run_io = one_run(args.bin, ds, opts[k], env, parts, limit, server)
                    io.setdefault(k, []).append(run_io)
                    got[k].append(mbs)
            row = {"shape": name, "readers": parts, "mb": size / 1e6}
            for k in sources:
                row[k] = statistics.median(got[k])
                row[k + "_runs"] = got[k]
            row["io"] = io
            rows.append(row)
            print(json.dumps(row), flush=True)
        for c in caches.values():
            shutil.rmtree(c, ignore_errors=True)


def gateway_cost(args, server):
    """The gateway's CPU seconds for --gateway-mb of the first shape's objects read with
    ranged GETs of 256 KiB to 16 MiB, over the bench client's one connection."""
    name = args.shapes.split(",")[0]
    local = os.path.join(args.data, name)
    if not os.path.isdir(local):
        return None
    url, _, _ = upload_shape(server, local, name)
    files = sorted(os.path.relpath(os.path.join(d, f), local)
                   for d, _, fs in os.walk(local) for f in fs)
    out = []
    for size in (256 << 10, 1 << 20, 4 << 20, 16 << 20):
        requests = got = 0
        before = cpu_seconds(server.proc.pid)
        for f in files:
            length = os.path.getsize(os.path.join(local, f))
            for offset in range(0, length, size):
                if got >= args.gateway_mb * 1e6:
                    break
                status, body, _ = server.request(
                    "GET", f"/{BUCKET}/{name}/{f}",
                    headers={"Range": f"bytes={offset}-{min(offset + size, length) - 1}"})
                assert status == 206, status
                requests += 1
                got += len(body)
        out.append({"size": size, "requests": requests, "bytes": got,
                    "cpu": cpu_seconds(server.proc.pid) - before})
        print(json.dumps(out[-1]), flush=True)
    return out


def remount(args, server, work):
    """Seconds to mount 1,000 small unchanged objects (and files) with the persistent index."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    local = os.path.join(work, "many")
    os.makedirs(local, exist_ok=True)
    for i in range(args.objects):
        pq.write_table(pa.table({"text": [f"object {i} row {r}" for r in range(16)]}),
                       os.path.join(local, f"part-{i:05d}.parquet"))
    url, _, up = upload_shape(server, local, "many")
    print(f"{args.objects} objects uploaded in {up:.1f} s", file=sys.stderr)
    out = {}
    for k, (ds, env) in {"disk": (local, None), "s3": (url, server.env())}.items():
        cache = tempfile.mkdtemp(prefix="yfs-s3r-")
        opts = f"format=text,cache={cache}"
        with timed_mount(args.bin, ds, opts, env=env) as (_, first, _p):
            pass
        times = []
        for _ in range(args.remounts):
            with timed_mount(args.bin, ds, opts, env=env) as (mnt, seconds, _p):
                with open(os.path.join(mnt, ".youmufs", "index.json")) as f:
                    reused = json.load(f)["persistent_index"]["files_reused"]
                times.append(seconds)
        out[k] = {"first": first, "median": statistics.median(times), "runs": times,
                  "reused": reused}
        shutil.rmtree(cache, ignore_errors=True)
        print(json.dumps({k: out[k]}), flush=True)
    return out


def write_report(args, rows, rm, gw):
    lines = ["# Epoch throughput from object storage (issue 12)", "",
             "```", "python3 bench/s3_bench.py " + " ".join(sys.argv[1:]), "```", "",
             f"Local S3: the Versity gateway (versitygw, posix backend) on 127.0.0.1, objects "
             f"uploaded with PutObject, same disk as the files. mem={args.mem}; persistent index "
             f"built beforehand; median of {args.repeat} run(s), sources alternating; "
             + (f"the server alone on CPU {args.server_cpu}, youmufs and the readers on the "
                f"other {len(os.sched_getaffinity(0))} (in the disk runs too)"
                if args.server_cpu is not None else
                f"{os.cpu_count()} cores shared by the server, youmufs and the readers")
             + f". MB/s of framed epoch bytes. `s3/disk`: acceptance 2's "
             f"first ratio (>= 0.8); `+{args.delay_ms:g}ms/s3`: its second (>= 0.8), the delay "
             f"added before every request (YOUMUFS_READ_DELAY_US).", "",
             "| shape | readers | data MB | disk MB/s | s3 MB/s | s3/disk | "
             f"s3 +{args.delay_ms:g} ms MB/s | +{args.delay_ms:g}ms/s3 | depth (s3, +delay) |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        last = {k: runs[-1] for k, runs in r.get("io", {}).items()}
        lines.append(f"| {r['shape']} | {r['readers']} | {r['mb']:.0f} | {r['disk']:.0f} | "
                     f"{r['s3']:.0f} | {r['s3'] / r['disk']:.2f} | {r['s3+delay']:.0f} | "
                     f"{r['s3+delay'] / r['s3']:.2f} | {last.get('s3', {}).get('depth', '')}, "
                     f"{last.get('s3+delay', {}).get('depth', '')} |")
    lines += ["", "## Where the CPU goes", "",
              "CPU seconds (user + system) per GB read from storage during the reads, median "
              "of the runs: youmufs' own, and the gateway's (a process of its own, on the cores "
              "said above). `cores busy`: (youmufs + gateway CPU) / wall seconds.", "",
              "| shape | readers | disk: youmufs s/GB | s3: youmufs s/GB | s3: gateway s/GB "
              "| disk cores busy | s3 cores busy |", "|---|---:|---:|---:|---:|---:|---:|"]

    def per_gb(runs, key):
        return statistics.median(x[key] / max(x["bytes_read"], 1) * 1e9 for x in runs)

    def busy(runs):
        return statistics.median((x["youmufs_cpu_s"] + x["gateway_cpu_s"]) / x["seconds"]
                                 for x in runs)
    for r in rows:
        io = r.get("io", {})
        if "disk" not in io or "s3" not in io:
            continue
        lines.append(f"| {r['shape']} | {r['readers']} | {per_gb(io['disk'], 'youmufs_cpu_s'):.2f} "
                     f"| {per_gb(io['s3'], 'youmufs_cpu_s'):.2f} "
                     f"| {per_gb(io['s3'], 'gateway_cpu_s'):.2f} | {busy(io['disk']):.2f} "
                     f"| {busy(io['s3']):.2f} |")
    if gw:
        lines += ["", "## The gateway's CPU per ranged GET", "",
                  "The first objects of the first shape read with ranged GETs of each size, in "
                  "order, over one kept-alive connection (the bench's own client, not youmufs): "
                  "the gateway's CPU per request and per GB.", "",
                  "| GET size | requests | gateway ms / request | gateway s / GB |",
                  "|---:|---:|---:|---:|"]
        for g in gw:
            lines.append(f"| {g['size'] >> 10} KiB | {g['requests']} | "
                         f"{g['cpu'] / g['requests'] * 1e3:.2f} | {g['cpu'] / g['bytes'] * 1e9:.2f} |")
    if rm:
        lines += ["", f"## Re-mount of {args.objects} unchanged objects (acceptance 3: <= 0.5 s)",
                  "", "Seconds from the start of `youmufs` until the mount is ready, with the "
                  f"persistent index of a first mount; median of {args.remounts}.", "",
                  "| source | first mount s | re-mount s (median) | runs | files reused |",
                  "|---|---:|---:|---|---:|"]
        for k, v in rm.items():
            lines.append(f"| {k} | {v['first']:.2f} | {v['median']:.3f} | "
                         f"{', '.join(f'{t:.3f}' for t in v['runs'])} | {v['reused']} |")
    with open(args.out, "w") as f:
        f.write("\n".join(lines) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", required=True)
    ap.add_argument("--shapes", default="a-pyarrow-text-1m,b-pyarrow-text-64k,c-duckdb-text,"
                    "d-pyarrow-tokens,e-pyarrow-int32-jsonl")
    ap.add_argument("--data", default=os.path.join(HERE, "data", "shapes"))
    ap.add_argument("--work", default=None, help="where the server's root goes (default: /tmp)")
    ap.add_argument("--delay-ms", type=float, default=50)
    ap.add_argument("--readers", default="1")
    ap.add_argument("--mem", default="256M")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--limit-mb", type=int, default=0,
                    help="read at most this many MB per run (0: the whole epoch)")
    ap.add_argument("--gateway-mb", type=int, default=300,
                    help="MB read per GET size to measure the gateway's CPU (0: skip)")
    ap.add_argument("--objects", type=int, default=1000,
                    help="objects of the re-mount measurement (0: skip it)")
    ap.add_argument("--remounts", type=int, default=5,
                    help="re-mounts measured after the first (0: skip the measurement)")
    ap.add_argument("--server-cpu", type=int, default=None,
                    help="run the S3 server alone on this CPU, youmufs and the readers on the "
                         "others (default: everything shares every CPU)")
    ap.add_argument("--out")
    args = ap.parse_args()
    args.bin = os.path.abspath(args.bin)
    binary = versitygw_binary()
    if not binary:
        sys.exit("versitygw not found: scripts/install-deps.sh --tests installs it")
    work = tempfile.mkdtemp(prefix="yfs-s3bench-", dir=args.work)
    root = os.path.join(work, "root")
    os.makedirs(root)
    everything = os.sched_getaffinity(0)
    if args.server_cpu is not None:
        if args.server_cpu not in everything or len(everything) < 2:
            sys.exit(f"--server-cpu {args.server_cpu}: not one of CPUs {sorted(everything)}, "
                     "or no other is left")
        os.sched_setaffinity(0, {args.server_cpu})  # the server inherits it
    server = S3Server(binary, root=root).start()
    if args.server_cpu is not None:  # youmufs and the readers, started from here, the rest
        os.sched_setaffinity(0, everything - {args.server_cpu})
    try:
        server.make_bucket(BUCKET)
        rows = []
        rm = remount(args, server, work) if args.objects and args.remounts else None
        gw = gateway_cost(args, server) if args.shapes and args.gateway_mb else None
        if args.shapes:
            throughput(args, server, rows)
        if args.out:
            write_report(args, rows, rm, gw)
    finally:
        server.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
