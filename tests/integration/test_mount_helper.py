"""The Debian package, and mount -t fuse.youmufs and /etc/fstab entries through it (through
mount.fuse3), read-only whatever mount(8) passes. Uses an alternative fstab (mount -T) so the
system's is never touched.

tests/run-all.sh builds the package (`cmake --build build --target package`) and installs it
with dpkg; these tests check what it installed and mount through it. mount.fuse3 finds
`youmufs` on a fixed PATH, so the installed binary must be the one tested."""
import filecmp
import os
import re
import subprocess
import tempfile

import pytest

from conftest import BIN, REPO, require_fuse

SAMPLE = os.path.join(REPO, "examples", "sample")
INSTALLED = "/usr/bin/youmufs"


def _project_version():
    with open(os.path.join(REPO, "CMakeLists.txt")) as f:
        return re.search(r"project\(youmufs VERSION ([0-9.]+)", f.read()).group(1)


def _dpkg(*args):
    p = subprocess.run(["dpkg-query", *args], capture_output=True, text=True)
    return p.stdout if p.returncode == 0 else None


@pytest.fixture
def package():
    """The installed package's status fields (fails when it is not installed)."""
    if os.geteuid() != 0:
        pytest.skip("installing the package needs root here")
    status = _dpkg("-s", "youmufs")
    if status is None:
        pytest.fail("the youmufs package is not installed: tests/run-all.sh installs "
                    "build/youmufs_<version>_<arch>.deb", pytrace=False)
    return dict(re.findall(r"^([A-Za-z-]+): (.*)$", status, re.M))


def test_package_installs_the_binary_the_man_page_and_the_licence(package):
    assert package["Status"] == "install ok installed"
    assert package["Version"] == _project_version()
    files = set(_dpkg("-L", "youmufs").split())
    for path in (INSTALLED, "/usr/share/man/man1/youmufs.1",
                 "/usr/share/doc/youmufs/copyright"):
        assert path in files and os.path.exists(path), path
    assert filecmp.cmp(INSTALLED, BIN, shallow=False), \
        f"{INSTALLED} is not the binary under test ({BIN})"
    with open("/usr/share/doc/youmufs/copyright") as f, \
            open(os.path.join(REPO, "LICENSE")) as lic:
        assert f.read() == lic.read()
    # the runtime libraries from Debian (dpkg-shlibdeps), and fuse3 for mount.fuse3
    depends = {d.split()[0] for d in package["Depends"].split(", ")}
    for lib in ("fuse3", "libfuse3-3", "libzstd1", "libsnappy1v5", "liblz4-1", "libjansson4",
                "zlib1g", "libbrotli1"):
        assert lib in depends, f"{lib} missing from Depends: {package['Depends']}"
    out = subprocess.run([INSTALLED, "--version"], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.startswith(f"youmufs {_project_version()} ")


def _mounted(mnt):
    with open("/proc/mounts") as f:
        return [line.split() for line in f if line.split()[1] == mnt]


@pytest.fixture
def mountpoint(package):
    require_fuse()
    for d in ("/usr/local/sbin", "/usr/local/bin"):  # first on mount.fuse3's PATH
        if os.path.exists(os.path.join(d, "youmufs")):
            pytest.fail(f"{d}/youmufs shadows the package's {INSTALLED}", pytrace=False)
    if not filecmp.cmp(INSTALLED, BIN, shallow=False):
        pytest.fail(f"the youmufs installed at {INSTALLED} is not {BIN}: install the package "
                    "built from this tree", pytrace=False)
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
