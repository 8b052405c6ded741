#!/usr/bin/env python3
"""Soak test: one mount, rotating readers for a long time, resources sampled throughout.

Mounts a generated dataset (bench/make_dataset.py) with the one shared mount helper of the
integration tests (tests/integration/conftest.py: `mounted`), and until the time is up runs
workloads in rotation, each checked byte for byte against `youmufs cat` of the same file:

    sequential   one whole epoch, read(2) with a random request size       (sha256 of the file)
    random       random preads of 1..16 aligned 64 KiB blocks of an epoch  (sha256 per block)
    parts        the 4 parts of an epoch read at once by 4 threads         (sha256 of each part)
    epochs       several whole epochs one after another, `cat` processes   (sha256 of each)
    concurrent   8 threads and 2 `cat` processes mixing all of the above

Every 10 s it samples the daemon: VmRSS, VmHWM, open descriptors (/proc/PID/fd), threads, and
throughput (bytes_served of stats.json, and bytes the readers got). At the end it writes a
markdown summary: drift of RSS, descriptors and threads between the first and the last quarter
of the run (after a warm-up), read errors, wrong bytes, and the daemon's exit.

    python3 bench/soak.py                           # 1 hour, bench/data/soak-200M
    python3 bench/soak.py --minutes 3 --out bench/results/soak.md
    python3 bench/soak.py --dataset DIR --mem 64M --bin build-asan/youmufs

Exit status: 0 if no read failed, no byte was wrong, the daemon exited cleanly and the drift is
within --max-rss-drift / --max-fd-drift / --max-thread-drift; 1 otherwise.
"""
import argparse
import hashlib
import json
import os
import random
import statistics
import subprocess
import sys
import threading
import time
import traceback
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))

BLOCK = 64 << 10
MIB = 1 << 20
PARTS = 4


def parse_size(text):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    t = text.strip().upper().removesuffix("B").removesuffix("I")
    return int(float(t[:-1]) * units[t[-1]]) if t and t[-1] in units else int(t)


# ---------------------------------------------------------------------------------------------
# references: `youmufs cat`, hashed

class References:
    """sha256 of every file the workloads read, and per-64-KiB-block hashes of whole epochs,
    from `youmufs cat` (no mount involved)."""

    def __init__(self, conftest, dataset, options, epochs):
        self.whole = {}         # name -> (sha256, size)
        self.blocks = {}        # epoch name -> [sha256 of block i]
        names = [f"epoch-{e}.jsonl" for e in range(epochs)]
        names += [f"epoch-{e}.part-{i}-of-{PARTS}.jsonl" for e in range(epochs) for i in range(PARTS)]
        for n in names:
            data = conftest.run_cat(dataset, n, options, timeout=900).stdout
            self.whole[n] = (hashlib.sha256(data).hexdigest(), len(data))
            if ".part-" not in n:
                self.blocks[n] = [hashlib.sha256(data[o:o + BLOCK]).hexdigest()
                                  for o in range(0, len(data), BLOCK)]
            del data
        self.epochs = [f"epoch-{e}.jsonl" for e in range(epochs)]


# ---------------------------------------------------------------------------------------------
# bookkeeping shared by readers and the sampler

class Tally:
    def __init__(self):
        self.lock = threading.Lock()
        self.bytes = 0
        self.reads = {}         # workload -> count of files/blocks checked
        self.errors = []        # (time, workload, text)
        self.wrong = []         # (time, workload, text)

    def add_bytes(self, n):
        with self.lock:
            self.bytes += n

    def ok(self, kind, n=1):
        with self.lock:
            self.reads[kind] = self.reads.get(kind, 0) + n

    def error(self, kind, text):
        with self.lock:
            self.errors.append((time.strftime("%H:%M:%S"), kind, text))

    def mismatch(self, kind, text):
        with self.lock:
            self.wrong.append((time.strftime("%H:%M:%S"), kind, text))


# ---------------------------------------------------------------------------------------------
# readers

def read_whole(path, tally, chunk):
    h, n = hashlib.sha256(), 0
    with open(path, "rb", buffering=0) as f:
        while True:
            b = f.read(chunk)
            if not b:
                break
            h.update(b)
            n += len(b)
            tally.add_bytes(len(b))
    return h.hexdigest(), n


def check_whole(m, refs, name, tally, kind, rng):
    try:
        got = read_whole(m.p(name), tally, rng.choice([4096, 65536, 131072, MIB, 4 * MIB]))
    except OSError as e:
        tally.error(kind, f"{name}: {e!r}")
        return
    if got != refs.whole[name]:
        tally.mismatch(kind, f"{name}: got sha256 {got[0][:16]} ({got[1]} bytes), "
                             f"want {refs.whole[name][0][:16]} ({refs.whole[name][1]} bytes)")
    else:
        tally.ok(kind)


def check_cat_process(m, refs, name, tally, kind):
    """`cat FILE | sha256sum`-equivalent in a separate process."""
    try:
        p = subprocess.run(["sha256sum", m.p(name)], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=900)
    except subprocess.TimeoutExpired:
        tally.error(kind, f"{name}: sha256sum process hung (900 s)")
        return
    if p.returncode != 0:
        tally.error(kind, f"{name}: sha256sum exit {p.returncode}: {p.stderr.decode()[-200:]}")
        return
    tally.add_bytes(refs.whole[name][1])
    if p.stdout.split()[0].decode() != refs.whole[name][0]:
        tally.mismatch(kind, f"{name}: process read sha256 {p.stdout.split()[0][:16]!r}")
    else:
        tally.ok(kind)


def check_random(m, refs, name, tally, kind, rng, count):
    blocks = refs.blocks[name]
    try:
        with open(m.p(name), "rb", buffering=0) as f:
            for _ in range(count):
                first = rng.randrange(len(blocks))
                k = min(rng.randint(1, 16), len(blocks) - first)
                data = os.pread(f.fileno(), k * BLOCK, first * BLOCK)
                tally.add_bytes(len(data))
                for j in range(k):
                    if hashlib.sha256(data[j * BLOCK:(j + 1) * BLOCK]).hexdigest() != blocks[first + j]:
                        tally.mismatch(kind, f"{name}: block {first + j} (offset "
                                             f"{(first + j) * BLOCK}) differs")
                        return
                tally.ok(kind, k)
    except OSError as e:
        tally.error(kind, f"{name}: {e!r}")


def workload_sequential(m, refs, tally, rng):
    check_whole(m, refs, rng.choice(refs.epochs), tally, "sequential", rng)


def workload_random(m, refs, tally, rng):
    check_random(m, refs, rng.choice(refs.epochs), tally, "random", rng, 400)


def workload_parts(m, refs, tally, rng):
    e = rng.randrange(len(refs.epochs))
    names = [f"epoch-{e}.part-{i}-of-{PARTS}.jsonl" for i in range(PARTS)]
    with ThreadPoolExecutor(PARTS) as ex:
        list(ex.map(lambda n: check_whole(m, refs, n, tally, "parts", random.Random(rng.random())),
                    names))


def workload_epochs(m, refs, tally, rng):
    for name in refs.epochs:
        check_cat_process(m, refs, name, tally, "epochs")


def workload_concurrent(m, refs, tally, rng):
    jobs = []
    for i in range(8):
        r = random.Random(rng.random())
        kind = i % 3
        if kind == 0:
            jobs.append(lambda r=r: check_whole(m, refs, r.choice(refs.epochs), tally,
                                                "concurrent", r))
        elif kind == 1:
            jobs.append(lambda r=r: check_random(m, refs, r.choice(refs.epochs), tally,
                                                 "concurrent", r, 150))
        else:
            e, p = r.randrange(len(refs.epochs)), r.randrange(PARTS)
            jobs.append(lambda r=r, n=f"epoch-{e}.part-{p}-of-{PARTS}.jsonl":
                        check_whole(m, refs, n, tally, "concurrent", r))
    for _ in range(2):
        n = rng.choice(refs.epochs)
        jobs.append(lambda n=n: check_cat_process(m, refs, n, tally, "concurrent"))
    with ThreadPoolExecutor(len(jobs)) as ex:
        for f in [ex.submit(j) for j in jobs]:
            f.result()


WORKLOADS = [("sequential", workload_sequential), ("random", workload_random),
             ("parts", workload_parts), ("epochs", workload_epochs),
             ("concurrent", workload_concurrent)]


# ---------------------------------------------------------------------------------------------
# sampling

def proc_status(pid):
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("VmRSS", "VmHWM", "Threads"):
                out[k] = int(v.split()[0])
    out["fds"] = len(os.listdir(f"/proc/{pid}/fd"))
    return out


def stats_json(m):
    with open(m.p(".youmufs/stats.json"), "rb") as f:
        return json.loads(f.read())


def sampler(m, tally, samples, stop, interval, t0):
    last_t, last_served, last_bytes = time.monotonic(), None, 0
    while not stop.wait(interval if samples else 0.5):
        now = time.monotonic()
        try:
            st = proc_status(m.proc.pid)
            js = stats_json(m)
        except (OSError, ValueError) as e:
            tally.error("sampler", repr(e))
            continue
        served = js.get("bytes_served", 0)
        with tally.lock:
            got = tally.bytes
        dt = now - last_t
        samples.append({
            "t": now - t0, "rss": st["VmRSS"] * 1024, "hwm": st["VmHWM"] * 1024,
            "fds": st["fds"], "threads": st["Threads"],
            "served_mbs": (served - last_served) / dt / MIB if last_served is not None else 0.0,
            "client_mbs": (got - last_bytes) / dt / MIB,
            "read_errors": js.get("read_errors", 0), "read_amp": js.get("read_amplification", 0),
        })
        last_t, last_served, last_bytes = now, served, got


# ---------------------------------------------------------------------------------------------
# report

def drift(samples, key):
    """(first-quarter median, last-quarter median, max) after dropping the first 10 % (warm-up)."""
    vals = [s[key] for s in samples]
    warm = vals[len(vals) // 10:]
    if len(warm) < 4:
        return (warm[0] if warm else 0, warm[-1] if warm else 0, max(vals or [0]))
    q = max(1, len(warm) // 4)
    return statistics.median(warm[:q]), statistics.median(warm[-q:]), max(vals)


def report(args, dataset, options, info, samples, tally, runs, exit_note, elapsed):
    rss0, rss1, rss_max = drift(samples, "rss")
    fd0, fd1, fd_max = drift(samples, "fds")
    th0, th1, th_max = drift(samples, "threads")
    hwm = max((s["hwm"] for s in samples), default=0)
    bound = info.get("index_memory_bytes", 0) + parse_size(args.mem) + 64 * MIB
    problems = []
    if tally.errors:
        problems.append(f"{len(tally.errors)} read errors")
    if tally.wrong:
        problems.append(f"{len(tally.wrong)} reads returned WRONG BYTES")
    if rss1 - rss0 > args.max_rss_drift * MIB:
        problems.append(f"RSS drift {(rss1 - rss0) / MIB:+.1f} MiB > {args.max_rss_drift} MiB")
    if fd1 - fd0 > args.max_fd_drift:
        problems.append(f"descriptor drift {fd1 - fd0:+.0f} > {args.max_fd_drift}")
    if th1 - th0 > args.max_thread_drift:
        problems.append(f"thread drift {th1 - th0:+.0f} > {args.max_thread_drift}")
    if hwm > bound:
        problems.append(f"peak RSS {hwm / MIB:.0f} MiB > index + mem + 64 MiB = {bound / MIB:.0f} MiB")
    if exit_note:
        problems.append(exit_note)
    served = sum(s["served_mbs"] for s in samples[1:]) / max(1, len(samples) - 1)
    lines = [
        "# Soak run",
        "",
        f"`python3 bench/soak.py {' '.join(sys.argv[1:])}`",
        "",
        f"- date: {time.strftime('%Y-%m-%d %H:%M:%S %Z')}; machine: {os.cpu_count()} CPUs",
        f"- binary: `{args.bin}`",
        f"- dataset: `{dataset}` ({info.get('files')} files, {info.get('pages')} pages, "
        f"{info.get('records')} records, epoch {info.get('epoch_bytes', 0) / MIB:.0f} MiB)",
        f"- options: `{options}`",
        f"- duration: {elapsed / 60:.1f} min, {len(samples)} samples every {args.interval:g} s",
        f"- verdict: **{'PASS' if not problems else 'FAIL: ' + '; '.join(problems)}**",
        "",
        "## Drift (median of the first and of the last quarter, after a 10 % warm-up)",
        "",
        "| quantity | first | last | drift | max |",
        "|---|---:|---:|---:|---:|",
        f"| RSS (MiB) | {rss0 / MIB:.1f} | {rss1 / MIB:.1f} | {(rss1 - rss0) / MIB:+.1f} | "
        f"{rss_max / MIB:.1f} |",
        f"| open descriptors | {fd0:.0f} | {fd1:.0f} | {fd1 - fd0:+.0f} | {fd_max} |",
        f"| threads | {th0:.0f} | {th1:.0f} | {th1 - th0:+.0f} | {th_max} |",
        "",
        f"Peak RSS (VmHWM) {hwm / MIB:.1f} MiB; bound index + mem + 64 MiB = {bound / MIB:.1f} MiB. "
        f"Mean throughput served by the daemon {served:.0f} MiB/s; "
        f"{tally.bytes / MIB:.0f} MiB read and checked in total.",
        "",
        "## Workloads",
        "",
        "| workload | runs | checks passed |",
        "|---|---:|---:|",
    ]
    for name, _ in WORKLOADS:
        lines.append(f"| {name} | {runs.get(name, 0)} | {tally.reads.get(name, 0)} |")
    lines += ["", "Checks: whole files and parts by sha256 of `youmufs cat` output; random reads "
              "by sha256 of each 64 KiB block.", "", "## Errors", ""]
    if not tally.errors and not tally.wrong:
        lines.append("none")
    for t, k, text in tally.errors[:50]:
        lines.append(f"- {t} {k}: error: {text}")
    for t, k, text in tally.wrong[:50]:
        lines.append(f"- {t} {k}: WRONG BYTES: {text}")
    if exit_note:
        lines.append(f"- daemon: {exit_note}")
    lines += ["", "## Samples", "",
              "| t (s) | RSS MiB | HWM MiB | fds | threads | served MiB/s | client MiB/s | "
              "read_errors | read amp. |", "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    step = max(1, len(samples) // 60)
    for s in samples[::step]:
        lines.append(f"| {s['t']:.0f} | {s['rss'] / MIB:.1f} | {s['hwm'] / MIB:.1f} | {s['fds']} | "
                     f"{s['threads']} | {s['served_mbs']:.0f} | {s['client_mbs']:.0f} | "
                     f"{s['read_errors']} | {s['read_amp']:.2f} |")
    return "\n".join(lines) + "\n", not problems


# ---------------------------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--minutes", type=float, default=60.0)
    ap.add_argument("--dataset", default=os.path.join(ROOT, "bench", "data", "soak-200M"),
                    help="dataset directory; generated with make_dataset.py if missing")
    ap.add_argument("--size", default="200M", help="size of a generated dataset")
    ap.add_argument("--bin", default=os.environ.get("YOUMUFS_BIN")
                    or os.path.join(ROOT, "build", "youmufs"))
    ap.add_argument("--mem", default="64M")
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--options", default="", help="extra -o options")
    ap.add_argument("--interval", type=float, default=10.0, help="seconds between samples")
    ap.add_argument("--seed", type=int, default=0, help="seed of the workload rotation")
    ap.add_argument("--max-rss-drift", type=float, default=16.0, help="MiB")
    ap.add_argument("--max-fd-drift", type=int, default=2)
    ap.add_argument("--max-thread-drift", type=int, default=8)
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results", "soak.md"))
    args = ap.parse_args()

    os.environ["YOUMUFS_BIN"] = args.bin
    import conftest      # the one shared mount helper; reads YOUMUFS_BIN at import

    conftest.BIN = args.bin
    if not os.path.isdir(args.dataset):
        print(f"soak: generating {args.size} dataset in {args.dataset}", flush=True)
        subprocess.run([sys.executable, os.path.join(ROOT, "bench", "make_dataset.py"),
                        "--out", args.dataset, "--size", args.size, "--files", "4"], check=True)
    options = f"mem={args.mem},epochs={args.epochs}" + (f",{args.options}" if args.options else "")

    t = time.monotonic()
    refs = References(conftest, args.dataset, options, args.epochs)
    print(f"soak: references from `youmufs cat` in {time.monotonic() - t:.0f} s", flush=True)

    tally = Tally()
    samples, runs = [], {}
    exit_note = ""
    info = {}
    duration = args.minutes * 60
    # the helper's watchdog kills a mount older than WATCHDOG: give it the run's length
    conftest.WATCHDOG = duration + 900
    t0 = time.monotonic()
    try:
        with conftest.mounted(args.dataset, options) as m:
            info = json.loads(m.read(".youmufs/index.json"))
            stop = threading.Event()
            th = threading.Thread(target=sampler, args=(m, tally, samples, stop, args.interval,
                                                        t0), daemon=True)
            th.start()
            rng = random.Random(args.seed)
            order = list(WORKLOADS)
            i = 0
            while time.monotonic() - t0 < duration:
                if i % len(order) == 0:
                    rng.shuffle(order)
                name, fn = order[i % len(order)]
                i += 1
                try:
                    fn(m, refs, tally, rng)
                except Exception:       # noqa: BLE001 - a soak reports, never stops early
                    tally.error(name, traceback.format_exc(limit=3).replace("\n", " | "))
                runs[name] = runs.get(name, 0) + 1
                print(f"soak: {time.monotonic() - t0:6.0f} s  {name:<10}  "
                      f"checked {tally.bytes / MIB:8.0f} MiB  errors {len(tally.errors)}  "
                      f"wrong {len(tally.wrong)}", flush=True)
            stop.set()
            th.join(timeout=30)
            if m.proc.poll() is not None:
                exit_note = f"daemon died during the run (status {m.proc.returncode})"
    except BaseException as e:          # noqa: B902 - pytest.fail from the helper's teardown
        if isinstance(e, KeyboardInterrupt):
            raise
        exit_note = (exit_note + "; " if exit_note else "") + \
            f"mount helper: {str(e).splitlines()[0] if str(e) else repr(e)}"[:500]
    elapsed = time.monotonic() - t0

    text, ok = report(args, args.dataset, options, info, samples, tally, runs, exit_note, elapsed)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        f.write(text)
    print(text)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
