#!/usr/bin/env python3
"""Mid-epoch resume by byte offset.

An epoch file's bytes depend only on the dataset, the mount options and the epoch number, and
a read at any offset returns the same bytes as a sequential read. So a data-loader checkpoint is
just (file, byte offset of the next record): after a crash -- even on another machine, after a
remount with the same options -- open the file, seek, and carry on. No replaying of consumed
records, no sampler state.

    youmufs -o column=text,buffer=500 examples/sample /tmp/yfs
    python3 examples/resume.py /tmp/yfs                  # crash in a child process, resume, check
    fusermount3 -u /tmp/yfs

Or in two steps, e.g. with a remount in between:
    python3 examples/resume.py /tmp/yfs --phase crash  --workdir /tmp/ckpt --stop-after 1000
    python3 examples/resume.py /tmp/yfs --phase resume --workdir /tmp/ckpt

The "training loop" appends every record it consumes to WORKDIR/consumed.jsonl, and saves a
checkpoint every --every records. The resumed run seeks to the checkpoint's offset; records
consumed after the last checkpoint are consumed again, as after any real crash, so the
consumed log is first cut back to the checkpoint. The check: the consumed log equals one
uninterrupted read of the file, byte for byte.

Exits non-zero if a check fails; lines starting with "OK" report passed checks.
"""

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile


def mount_identity(mount):
    """What must be equal for an offset to mean the same record: the indexed dataset and
    the options (seed, column, format, buffer, ...), from .youmufs/index.json."""
    with open(os.path.join(mount, ".youmufs", "index.json")) as f:
        ix = json.load(f)
    return {"column": ix["column"], "options": ix["options"], "records": ix["records"],
            "files": [[e["name"], e["bytes"], e["rows"]] for e in ix["file_list"]]}


def save_checkpoint(workdir, state):
    tmp = os.path.join(workdir, "checkpoint.json.tmp")
    with open(tmp, "w") as f:
        json.dump(state, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, os.path.join(workdir, "checkpoint.json"))       # atomic


def train(mount, name, workdir, offset=0, consumed=0, stop_after=None, every=100):
    """Consume records of `name` from byte `offset`; checkpoint every `every` records; with
    stop_after, die abruptly (os._exit, no cleanup) after that many records in total."""
    path = os.path.join(mount, name)
    ident = mount_identity(mount)
    size = os.path.getsize(path)
    with open(path, "rb") as f, open(os.path.join(workdir, "consumed.jsonl"), "ab") as log:
        f.seek(offset)                       # resume: one seek, youmufs serves from there
        while True:
            line = f.readline()
            if not line:
                break
            json.loads(line)                 # the "training step" on the record
            log.write(line)
            consumed += 1
            if consumed % every == 0:
                log.flush()
                save_checkpoint(workdir, {"file": name, "offset": f.tell(), "size": size,
                                          "records": consumed, "log_bytes": log.tell(),
                                          "mount": ident})
            if stop_after is not None and consumed >= stop_after:
                log.flush()
                print(f"crashing after {consumed} records at byte {f.tell()} of {size}",
                      flush=True)
                os._exit(3)                   # a crash: nothing after this runs
    return consumed


def phase_crash(args):
    os.makedirs(args.workdir, exist_ok=True)
    for leftover in ("consumed.jsonl", "checkpoint.json"):
        if os.path.exists(os.path.join(args.workdir, leftover)):
            os.remove(os.path.join(args.workdir, leftover))
    train(args.mount, args.file, args.workdir, stop_after=args.stop_after, every=args.every)
    sys.exit("FAIL: the epoch ended before --stop-after records; nothing to resume")


def phase_resume(args):
    with open(os.path.join(args.workdir, "checkpoint.json")) as f:
        ck = json.load(f)
    path = os.path.join(args.mount, ck["file"])
    # Refuse to resume on a mount whose bytes could differ (other seed, options or data).
    if ck["mount"] != mount_identity(args.mount) or os.path.getsize(path) != ck["size"]:
        sys.exit("FAIL: this mount is not the one the checkpoint was taken on (options, "
                 "dataset or size differ)")
    log_path = os.path.join(args.workdir, "consumed.jsonl")
    with open(log_path, "r+b") as log:
        redo = (os.path.getsize(log_path) - ck["log_bytes"])
        log.truncate(ck["log_bytes"])        # records after the checkpoint are consumed again
    print(f"resuming {ck['file']} at byte {ck['offset']} (record {ck['records']}; "
          f"{redo} bytes after the checkpoint will be read again)", flush=True)
    total = train(args.mount, ck["file"], args.workdir, offset=ck["offset"],
                  consumed=ck["records"], every=args.every)

    # The check: what training consumed, across the crash, is one uninterrupted read.
    def sha(p):
        h = hashlib.sha256()
        with open(p, "rb") as f:
            for b in iter(lambda: f.read(1 << 20), b""):
                h.update(b)
        return h.hexdigest()
    whole, log = sha(path), sha(log_path)
    if whole != log:
        sys.exit(f"FAIL: consumed log ({os.path.getsize(log_path)} bytes, sha256 {log[:12]}) != "
                 f"uninterrupted read ({ck['size']} bytes, sha256 {whole[:12]})")
    print(f"OK resumed: {total} records, {ck['size']} bytes; crash + resume = one "
          f"uninterrupted read (sha256 {whole[:12]})", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("mount", help="a youmufs mountpoint (jsonl format)")
    ap.add_argument("--file", default="epoch-0.jsonl", help="an epoch or part file (jsonl)")
    ap.add_argument("--phase", choices=["all", "crash", "resume"], default="all")
    ap.add_argument("--workdir", help="where the checkpoint and the consumed log go")
    ap.add_argument("--stop-after", type=int, help="crash after this many records "
                    "(default: about 40%% of the file)")
    ap.add_argument("--every", type=int, default=100, help="checkpoint every N records")
    args = ap.parse_args()

    if args.stop_after is None:
        with open(os.path.join(args.mount, args.file), "rb") as f:
            args.stop_after = max(1, sum(1 for _ in f) * 2 // 5) + args.every // 3
    if args.phase == "crash":
        phase_crash(args)
    elif args.phase == "resume":
        phase_resume(args)
    else:
        # Both phases, the crash in a child process that really dies mid-epoch.
        with tempfile.TemporaryDirectory() as tmp:
            args.workdir = args.workdir or tmp
            child = subprocess.run([sys.executable, os.path.abspath(__file__), args.mount,
                                    "--file", args.file, "--phase", "crash", "--workdir",
                                    args.workdir, "--stop-after", str(args.stop_after),
                                    "--every", str(args.every)])
            if child.returncode != 3:
                sys.exit(f"FAIL: the crashing run exited {child.returncode}, expected 3")
            phase_resume(args)
    if args.phase != "crash":
        print("OK resume", flush=True)


if __name__ == "__main__":
    main()
