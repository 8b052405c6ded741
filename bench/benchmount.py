"""Mounting youmufs for a benchmark: start it in the foreground, time how long until the
mount point answers, and always unmount (shared by bench/throughput.py, bench/remount.py
and bench/epoch_bench.py)."""
import contextlib
import os
import subprocess
import tempfile
import time


class MountError(SystemExit):
    """The daemon exited before the mount point answered (bad option, bad dataset).
    A SystemExit, so a script that does not catch it stops with the daemon's message;
    `.stderr` holds that message for scripts that do."""

    def __init__(self, stderr):
        super().__init__(f"mount failed: {stderr}")
        self.stderr = stderr


@contextlib.contextmanager
def timed_mount(binary, dataset, options, env=None, timeout=None, mountpoint=None):
    """Yields (mountpoint, seconds from start until mounted, daemon process).

    env: extra environment variables for the daemon (e.g. YOUMUFS_READ_DELAY_US).
    timeout: seconds to wait for the mount before giving up (None: wait as long as the
    daemon lives). mountpoint: an empty directory to mount on (kept afterwards), else a
    temporary one is made and removed. The daemon's stderr goes to a temporary file, not a
    pipe, so a chatty daemon never blocks on a full pipe during a long benchmark. Only this
    mount point is ever unmounted."""
    mnt = mountpoint or tempfile.mkdtemp(prefix="yfs-bench-")
    log = tempfile.TemporaryFile()
    full_env = dict(os.environ, **env) if env else None
    t0 = time.monotonic()
    proc = subprocess.Popen([binary, "-f", "-o", options, dataset, mnt],
                            stderr=log, stdout=subprocess.DEVNULL, env=full_env)

    def stderr_text():
        log.seek(0)
        return log.read().decode(errors="replace").strip()

    try:
        while not os.path.ismount(mnt):
            if proc.poll() is not None:
                raise MountError(stderr_text())
            if timeout is not None and time.monotonic() - t0 > timeout:
                raise MountError(f"not mounted after {timeout} s: {stderr_text()}")
            time.sleep(0.001)
        yield mnt, time.monotonic() - t0, proc
    finally:
        if os.path.ismount(mnt):
            subprocess.run(["fusermount3", "-u", mnt])
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
        if not mountpoint:
            os.rmdir(mnt)
