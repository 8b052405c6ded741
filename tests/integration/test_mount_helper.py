"""mount -t fuse.youmufs and /etc/fstab entries (through mount.fuse3), read-only whatever
mount(8) passes. Uses an alternative fstab (mount -T) so the system's is never touched.

mount.fuse3 finds `youmufs` on a fixed PATH, so these tests need the binary installed
(`cmake --install build`, which tests/run-all.sh does) and identical to the one tested."""
import filecmp
import os
import subprocess
import tempfile

import pytest

from conftest import BIN, REPO, require_fuse

SAMPLE = os.path.join(REPO, "examples", "sample")


def _installed():
    for d in ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"):
        path = os.path.join(d, "youmufs")
        if os.path.exists(path):
            return path
    return None


def _mounted(mnt):
    with open("/proc/mounts") as f:
        return [line.split() for line in f if line.split()[1] == mnt]


@pytest.fixture
def mountpoint():
    require_fuse()
    if os.geteuid() != 0:
        pytest.skip("mount(8) with fuse helpers needs root here")
    installed = _installed()
    if not installed or not filecmp.cmp(installed, BIN, shallow=False):
        pytest.fail(f"youmufs installed at {installed} is not {BIN}: run cmake --install build",
                    pytrace=False)
    mnt = tempfile.mkdtemp(prefix="yfs-mt-")
    yield mnt
    if _mounted(mnt):
        subprocess.run(["umount", mnt])
    os.rmdir(mnt)


def _check(mnt, epochs):
    entries = _mounted(mnt)
    assert entries, f"{mnt} is not mounted"
    source, _, fstype, opts = entries[0][:4]
    assert fstype == "fuse.youmufs" and source == SAMPLE, entries
    assert "ro" in opts.split(","), f"mounted {opts}, not read-only"
    assert sorted(os.listdir(mnt)) == [".youmufs"] + [f"epoch-{k}.jsonl" for k in range(epochs)]
    with open(os.path.join(mnt, "epoch-0.jsonl"), "rb") as f:
        assert f.readline().startswith(b'{"text":')
    with pytest.raises(OSError):
        open(os.path.join(mnt, "new-file"), "w")


def test_mount_dash_t(mountpoint):
    p = subprocess.run(["mount", "-t", "fuse.youmufs", "-o", "column=text,seed=3,epochs=2",
                        SAMPLE, mountpoint], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    _check(mountpoint, 2)
    assert subprocess.run(["umount", mountpoint]).returncode == 0
    assert not _mounted(mountpoint)


def test_fstab_entry(mountpoint, tmp_path):
    fstab = tmp_path / "fstab"
    fstab.write_text(f"{SAMPLE} {mountpoint} fuse.youmufs column=text,epochs=3,noauto 0 0\n")
    p = subprocess.run(["mount", "-T", str(fstab), mountpoint], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    _check(mountpoint, 3)
