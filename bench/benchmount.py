"""Mounting youmufs for a benchmark: start it in the foreground, time how long until the
mount point answers, and always unmount (shared by bench/throughput.py and bench/remount.py)."""
import contextlib
import os
import subprocess
import tempfile
import time


@contextlib.contextmanager
def timed_mount(binary, dataset, options):
    """Yields (mountpoint, seconds from start until mounted, daemon process)."""
    mnt = tempfile.mkdtemp(prefix="yfs-bench-")
    t0 = time.monotonic()
    proc = subprocess.Popen([binary, "-f", "-o", options, dataset, mnt],
                            stderr=subprocess.PIPE, stdout=subprocess.DEVNULL)
    try:
        while not os.path.ismount(mnt):
            if proc.poll() is not None:
                raise SystemExit(f"mount failed: {proc.stderr.read().decode()}")
            time.sleep(0.001)
        yield mnt, time.monotonic() - t0, proc
    finally:
        if os.path.ismount(mnt):
            subprocess.run(["fusermount3", "-u", mnt])
        proc.wait(timeout=30)
        os.rmdir(mnt)
