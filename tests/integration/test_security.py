"""Security of the mount (issue 5): read-only for everyone, default_permissions, allow_other off
unless asked for, no way to reach a source file through the mount, and dataset file names with
spaces, quotes, newlines and non-UTF-8 bytes handled safely.

Tests that switch to another user (nobody, uid 65534) need root and runuser/setpriv.
"""

from __future__ import annotations

import errno
import hashlib
import io
import json
import os
import shutil
import stat
import subprocess

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from datasets import BASIC

NOBODY = 65534


def _source_state(root):
    """sha256, size, mtime, mode, uid and gid of every file below root: any change shows."""
    out = {}
    for dirpath, _dirs, files in os.walk(root):
        for f in files:
            p = os.path.join(dirpath, f)
            st = os.lstat(p)
            with open(p, "rb") as fh:
                out[p] = (hashlib.sha256(fh.read()).hexdigest(), st.st_size, st.st_mtime_ns,
                          st.st_mode, st.st_uid, st.st_gid)
    return out


def _copy_basic(ds, tmp_path):
    d = tmp_path / "ds"
    shutil.copytree(ds.path(BASIC), d)
    return str(d)


def _errno_of(fn):
    try:
        fn()
    except OSError as e:
        return e.errno
    return 0


# ---------------------------------------------------------------------------------------------
# read-only

def test_every_change_fails_erofs_or_eperm(ds, tmp_path, mount):
    """Writes, truncation, chmod, chown, utime, xattrs, rename, link, symlink, mknod, mkdir,
    unlink on files, directories and .youmufs/: EROFS (or EPERM), and the sources are untouched
    (content, size, mtime, mode, owner)."""
    d = _copy_basic(ds, tmp_path)
    before = _source_state(d)
    with mount(d, "epochs=2") as m:
        e0, idx, root = m.p("epoch-0.jsonl"), m.p(".youmufs/index.json"), m.path
        size = m.size("epoch-0.jsonl")
        st0 = os.stat(e0)
        data0 = m.read("epoch-0.jsonl")
        ops = []
        for target in (e0, idx, m.p("epoch-7.part-1-of-3.jsonl")):
            ops += [
                (f"open O_WRONLY {target}", lambda t=target: os.open(t, os.O_WRONLY)),
                (f"open O_RDWR {target}", lambda t=target: os.open(t, os.O_RDWR)),
                (f"open O_RDONLY|O_TRUNC {target}", lambda t=target: os.open(t, os.O_RDONLY | os.O_TRUNC)),
                (f"truncate {target}", lambda t=target: os.truncate(t, 0)),
                (f"truncate grow {target}", lambda t=target: os.truncate(t, 1 << 40)),
                (f"chmod {target}", lambda t=target: os.chmod(t, 0o666)),
                (f"chown {target}", lambda t=target: os.chown(t, NOBODY, NOBODY)),
                (f"chown -1 {target}", lambda t=target: os.chown(t, -1, NOBODY)),
                (f"utime {target}", lambda t=target: os.utime(t, (1, 1))),
                (f"utime now {target}", lambda t=target: os.utime(t)),
                (f"setxattr {target}", lambda t=target: os.setxattr(t, "user.x", b"1")),
                (f"setxattr trusted {target}", lambda t=target: os.setxattr(t, "trusted.x", b"1")),
                (f"removexattr {target}", lambda t=target: os.removexattr(t, "user.x")),
                (f"rename {target}", lambda t=target: os.rename(t, m.p("moved"))),
                (f"link {target}", lambda t=target: os.link(t, m.p("hard"))),
                (f"unlink {target}", lambda t=target: os.unlink(t)),
            ]
        for dirpath in (root, m.p(".youmufs")):
            ops += [
                (f"chmod dir {dirpath}", lambda t=dirpath: os.chmod(t, 0o777)),
                (f"chown dir {dirpath}", lambda t=dirpath: os.chown(t, NOBODY, NOBODY)),
                (f"setxattr dir {dirpath}", lambda t=dirpath: os.setxattr(t, "user.x", b"1")),
                (f"symlink in {dirpath}", lambda t=dirpath: os.symlink("/etc/passwd",
                                                                      os.path.join(t, "s"))),
                (f"mkdir in {dirpath}", lambda t=dirpath: os.mkdir(os.path.join(t, "n"))),
                (f"mknod fifo in {dirpath}", lambda t=dirpath: os.mkfifo(os.path.join(t, "f"))),
                (f"create in {dirpath}", lambda t=dirpath: os.open(os.path.join(t, "c"),
                                                                  os.O_CREAT | os.O_WRONLY, 0o644)),
                (f"create excl in {dirpath}", lambda t=dirpath: os.open(
                    os.path.join(t, "epoch-0.jsonl"), os.O_CREAT | os.O_EXCL | os.O_RDONLY)),
            ]
        ops += [("rmdir .youmufs", lambda: os.rmdir(m.p(".youmufs"))),
                ("rename .youmufs", lambda: os.rename(m.p(".youmufs"), m.p("y"))),
                ("rename onto epoch", lambda: os.rename(m.p("epoch-1.jsonl"), e0)),
                ("link from outside", lambda: os.link(os.path.join(d, "part-000.parquet"),
                                                      m.p("p.parquet")))]
        bad = []
        for what, fn in ops:
            e = _errno_of(fn)
            # EXDEV: a link/rename across file systems is refused before reaching youmufs
            allowed = (errno.EROFS, errno.EPERM) + ((errno.EXDEV,) if "outside" in what else ())
            # O_CREAT|O_EXCL on an existing name: EEXIST comes first, and nothing is created
            allowed += (errno.EEXIST,) if "excl" in what else ()
            if e not in allowed:
                bad.append(f"{what}: {errno.errorcode.get(e, 'succeeded') if e else 'succeeded'}")
        assert not bad, "changes not refused with EROFS/EPERM:\n" + "\n".join(bad)
        st1 = os.stat(e0)
        assert (st1.st_size, st1.st_mode, st1.st_uid, st1.st_mtime_ns) == \
            (st0.st_size, st0.st_mode, st0.st_uid, st0.st_mtime_ns)
        assert m.size("epoch-0.jsonl") == size and m.read("epoch-0.jsonl") == data0
        assert sorted(os.listdir(root)) == [".youmufs", "epoch-0.jsonl", "epoch-1.jsonl"]
        assert sorted(os.listdir(m.p(".youmufs"))) == ["index.json", "stats.json"]
        statvfs = os.statvfs(root)
        assert statvfs.f_flag & os.ST_RDONLY, "statvfs does not report a read-only mount"
    assert _source_state(d) == before, "the source files were modified"


def _mount_options(path):
    with open("/proc/mounts") as f:
        for line in f:
            fields = line.split()
            if len(fields) > 3 and fields[1] == path:
                return fields[3].split(",")
    raise AssertionError(f"{path} not in /proc/mounts")


def test_mount_flags_and_modes(ds, mount):
    """ro, nosuid, nodev and default_permissions in /proc/mounts; allow_other absent by default;
    files 0444, directories 0555, nothing executable, nothing a symlink."""
    with mount(ds.path(BASIC), "epochs=2") as m:
        opts = _mount_options(m.path)
        for want in ("ro", "nosuid", "nodev", "default_permissions"):
            assert want in opts, f"mount option {want} missing: {opts}"
        assert "allow_other" not in opts, f"allow_other on by default: {opts}"
        for name in ("", ".youmufs"):
            st = os.lstat(m.p(name) if name else m.path)
            assert stat.S_ISDIR(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o555, \
                f"{name or '/'}: mode {oct(st.st_mode)}"
        for name in ("epoch-0.jsonl", "epoch-1.jsonl", "epoch-3.part-2-of-5.jsonl",
                     ".youmufs/index.json", ".youmufs/stats.json"):
            st = os.lstat(m.p(name))
            assert stat.S_ISREG(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o444, \
                f"{name}: mode {oct(st.st_mode)}"
            assert _errno_of(lambda n=name: os.readlink(m.p(n))) == errno.EINVAL


# ---------------------------------------------------------------------------------------------
# other users

def _as_nobody(argv):
    if shutil.which("runuser"):
        cmd = ["runuser", "-u", "nobody", "--", *argv]
    elif shutil.which("setpriv"):
        cmd = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", *argv]
    else:
        pytest.skip("neither runuser nor setpriv")
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60,
                          stdin=subprocess.DEVNULL)


# Runs as nobody with coreutils only (an interpreter under /root may not be reachable).
NOBODY_SH = r"""
root=$1; control=$2; f="$root/epoch-0.jsonl"
try() {
  name=$1; shift
  out=$("$@" 2>&1); rc=$?
  out=$(printf '%s' "$out" | tr '\n' ' ')
  if [ "$rc" = 0 ]; then echo "$name ok ${out%% *}"; else echo "$name err $out"; fi
}
try read sha256sum "$f"
try stat stat "$f"
try list ls -a "$root"
try write sh -c ': >> "$1"' - "$f"
try create sh -c ': > "$1/x"' - "$root"
try chmod chmod 666 "$f"
try control cat "$control"
"""

ERRORS = {"Permission denied": "EACCES", "Read-only file system": "EROFS",
          "Operation not permitted": "EPERM", "No such file": "ENOENT"}


def _nobody_view(m):
    """What user nobody can do with the mount. The mount's parent directory is opened up to
    others (mkdtemp makes it 0700), and a world-readable control file next to it proves that
    whatever nobody is refused is refused by the mount, not by the path to it."""
    if os.geteuid() != 0:
        pytest.skip("switching to user nobody needs root")
    parent = os.path.dirname(m.path)
    os.chmod(parent, 0o755)
    control = os.path.join(parent, "control.txt")
    with open(control, "w") as f:
        f.write("x")
    os.chmod(control, 0o644)
    p = _as_nobody(["sh", "-c", NOBODY_SH, "-", m.path, control])
    assert p.returncode == 0, p.stderr.decode()
    out = {}
    for line in p.stdout.decode("utf-8", "replace").splitlines():
        name, status, text = (line.split(" ", 2) + [""])[:3]
        if status == "ok":
            out[name] = "ok" if name != "read" else text
        else:
            out[name] = next((v for k, v in ERRORS.items() if k in text), text)
    print(f"\nuser nobody: {out}")
    assert out["control"] == "ok", f"nobody cannot reach the mount's directory at all: {out}"
    return out


def test_other_users_shut_out_by_default(ds, mount):
    with mount(ds.path(BASIC)) as m:
        out = _nobody_view(m)
    for k in ("read", "stat", "list"):
        assert out[k] == "EACCES", f"without allow_other, user nobody could {k}: {out}"


def test_allow_other_lets_others_read_only(ds, mount):
    """-o allow_other (as root no /etc/fuse.conf change is needed): nobody reads exactly what
    root reads; nobody still cannot write, create or chmod."""
    if os.geteuid() != 0:
        pytest.skip("allow_other as a non-root user needs user_allow_other in /etc/fuse.conf; "
                    "switching to nobody needs root")
    with mount(ds.path(BASIC), "allow_other") as m:
        assert "allow_other" in _mount_options(m.path)
        want = hashlib.sha256(m.read("epoch-0.jsonl")).hexdigest()
        out = _nobody_view(m)
    assert out["read"] == want, f"nobody read something else: {out['read']} != {want}"
    assert out["stat"] == "ok" and out["list"] == "ok", out
    for k in ("write", "create", "chmod"):
        assert out[k] in ("EROFS", "EPERM", "EACCES"), f"nobody could {k}: {out}"


# ---------------------------------------------------------------------------------------------
# names

def test_no_source_path_reachable(ds, tmp_path, mount):
    """Names that try to reach the dataset through the mount: the source files' own names,
    absolute and relative paths to them, escapes, symlink-looking and NUL-looking names, names
    with '/', over-long names. Each lookup fails (ENOENT, ENOTDIR for a path below a file,
    ENAMETOOLONG over 255 bytes); nothing that opens returns Parquet bytes."""
    d = _copy_basic(ds, tmp_path)
    sources = sorted(f for f in os.listdir(d) if f.endswith(".parquet"))
    src0 = os.path.join(d, sources[0])
    with mount(d) as m:
        names = list(sources) + [
            src0.lstrip("/"),                                # mnt/tmp/.../part-000.parquet
            os.path.relpath(src0, m.path),                   # ../../.../part-000.parquet
            ".youmufs/../" + sources[0], ".youmufs/" + sources[0],
            "..%2f" + sources[0], "%2e%2e%2f" + sources[0], "..\\" + sources[0],
            "epoch-0.jsonl/../" + sources[0], "epoch-0.jsonl/x", "epoch-0.jsonl/",
            "epoch-0.jsonl/.", ".youmufs/index.json/x",
            "epoch-0.jsonl -> " + src0, "@" + src0, "~/" + sources[0], "$HOME",
            "epoch-0.jsonl\\0", "epoch-0.jsonl%00", "epoch-0.jsonl\\x00" + sources[0],
            "\\u0000", "epoch-0.jsonl\n", "epoch-0.jsonl ", " epoch-0.jsonl",
            "epoch-0.jsonl.", "EPOCH-0.JSONL", "epoch-0.jsonl\u200b", "epoch-\uff10.jsonl",
            "epoch-0.part-0-of-1.jsonl/..", "epoch-+0.jsonl", "epoch--1.jsonl", "epoch-0x1.jsonl",
            "epoch-00.jsonl", "epoch-0.part-00-of-2.jsonl", "epoch-0.part-0-of-02.jsonl",
            "epoch-0.parquet", "epoch-0.part-1-of-1.jsonl", "epoch-0.part-0-of-0.jsonl",
            "x" * 255, "epoch-0." + "j" * 247, "x" * 256, "epoch-0.jsonl" + "/x" * 3000,
            "." * 255, ".youmufs/" + "y" * 300,
        ]
        bad = []
        for n in names:
            p = os.path.join(m.path, n)
            if os.path.realpath(p) != p and not os.path.realpath(p).startswith(m.path + "/") \
                    and os.path.realpath(p) != m.path:
                # '..' leaves the mount in the VFS, before youmufs sees anything: not ours
                continue
            try:
                with open(p, "rb") as f:
                    head = f.read(4)
            except OSError as e:
                long_name = any(len(c.encode()) > 255 for c in n.split("/")) or len(p) >= 4096
                ok = {errno.ENOENT, errno.ENOTDIR} | ({errno.ENAMETOOLONG} if long_name else set())
                if e.errno == errno.EISDIR and n.rstrip("/").endswith((".youmufs", "..")):
                    continue
                if e.errno not in ok:
                    bad.append(f"{n[:80]!r}: {errno.errorcode.get(e.errno, e.errno)}")
                continue
            bad.append(f"{n[:80]!r}: opened (first bytes {head!r})")
        for n in ("epoch-0.jsonl\0", "\0"):
            with pytest.raises(ValueError):
                os.stat(os.path.join(m.path, n))   # a NUL never reaches the kernel
        assert m.read("epoch-0.jsonl")
    assert not bad, "names that should not resolve:\n" + "\n".join(bad)


def _odd_dataset(root):
    """Files whose names hold a space, quotes, a newline, a tab, a backslash, '%', '$(...)',
    non-ASCII UTF-8 and non-UTF-8 bytes, also in a subdirectory name."""
    names = [b"with space.parquet", b"quote'\"s.parquet", b"new\nline.parquet",
             b"tab\there.parquet", b"back\\slash.parquet", b"per%cent %s %n.parquet",
             b"$(touch pwned).parquet", "caf\u00e9 \u65e5\u672c.parquet".encode(),
             b"latin1-\xe9\xff.parquet", b"bad\xc3(.parquet", b"sub dir\n\xfe/inner.parquet"]
    rows = {}
    rootb = os.fsencode(root)
    os.makedirs(rootb, exist_ok=True)
    for i, n in enumerate(names):
        vals = [f"file {i} row {j}" for j in range(50 + i)]
        buf = io.BytesIO()
        pq.write_table(pa.table({"text": pa.array(vals)}), buf)
        p = os.path.join(rootb, n)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "wb") as f:
            f.write(buf.getvalue())
        rows[n] = vals
    return names, rows


def _name_matches(json_name, raw):
    """How index.json may spell a file name given as raw bytes: exactly (UTF-8), or for bytes
    that are not UTF-8 one of the usual lossless spellings (surrogateescape, Latin-1) or, at
    least, with U+FFFD for each bad byte. Relative to the dataset or absolute."""
    spellings = {raw.decode("utf-8", "surrogateescape"), raw.decode("latin-1"),
                 raw.decode("utf-8", "replace")}
    return any(json_name == s or json_name.endswith("/" + s) for s in spellings)


def test_odd_file_names_indexed_and_named(tmp_path, mount):
    root = str(tmp_path / "odd ds \u00e9")
    names, rows = _odd_dataset(root)
    before = _source_state(root)
    with mount(root) as m:
        raw_idx = m.read(".youmufs/index.json")
        data = m.read("epoch-0.jsonl")
        log = m.stderr()
    assert not os.path.exists(os.path.join(os.getcwd(), "pwned"))
    idx = json.loads(raw_idx)
    assert idx["files"] == len(names), f"index.json files={idx['files']}, dataset has {len(names)}"
    assert idx["rows"] == sum(len(v) for v in rows.values())
    listed = [f["name"] for f in idx["file_list"]]
    missing = [n for n in names if not any(_name_matches(j, n) for j in listed)]
    assert len(listed) == len(names) and not missing, (
        f"index.json file_list has {len(listed)} entries for {len(names)} files; not named: "
        f"{missing}; listed: {listed}")
    # each entry's row count belongs to its file
    for n in names:
        entry = next(f for f in idx["file_list"] if _name_matches(f["name"], n))
        assert entry["rows"] == len(rows[n]), (n, entry)
    got = sorted(json.loads(line)["text"] for line in data.splitlines())
    assert got == sorted(v for vals in rows.values() for v in vals)
    assert _source_state(root) == before
    assert "Sanitizer" not in log
