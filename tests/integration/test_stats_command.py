"""`youmufs stats MOUNTPOINT`: one line per interval of a mount's live figures, read from its
.youmufs/stats.json; --json prints them as JSON Lines. The bytes a reader reads during the
lines are the bytes the lines report served, and the gauges come back to zero when reads end."""
import json
import os
import subprocess
import threading
import time

from conftest import BIN
from datasets import BASIC


def _stats(mnt, *args, timeout=60):
    return subprocess.run([BIN, "stats", *args, mnt], capture_output=True, text=True,
                          timeout=timeout)


def test_json_lines_count_what_a_reader_reads(ds, mount):
    with mount(ds.path(BASIC), "epochs=4,mem=64M,readahead=0") as m:
        names = [f"epoch-{k}.jsonl" for k in range(4)]
        read = [0]
        stop = threading.Event()

        def reader():  # reads the epochs one after the other, slowly, in 64 KiB requests
            with open(m.p(names[0]), "rb", buffering=0):
                pass
            for name in names:
                with open(m.p(name), "rb", buffering=0) as f:
                    while not stop.is_set():
                        b = f.read(1 << 16)
                        if not b:
                            break
                        read[0] += len(b)
                        time.sleep(0.002)

        before = json.loads(open(m.p(".youmufs/stats.json")).read())["bytes_served"]
        t = threading.Thread(target=reader)
        p = subprocess.Popen([BIN, "stats", "--json", "-n", "6", "-i", "0.25", m.path],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(0.05)
        t.start()
        out, err = p.communicate(timeout=60)
        stop.set()
        t.join()
        assert p.returncode == 0, err
        lines = [json.loads(line) for line in out.splitlines()]
        assert len(lines) == 6
        for r in lines:
            assert 0.2 < r["seconds"] < 5
            assert r["memory_limit"] > 0 and 0 <= r["memory_used"]
            assert r["read_errors"] == 0
            assert abs(r["served_mb_s"] - r["bytes_served"] / r["seconds"] / 1e6) < 0.1
        served = sum(r["bytes_served"] for r in lines)
        assert served > 0, "a reader read during the lines, none was served"
        after = json.loads(open(m.p(".youmufs/stats.json")).read())
        # what the lines saw served lies within what the mount served since the first sample
        assert served <= after["bytes_served"] - before
        # gauges: nothing in flight once the reader stopped
        assert after["reads_in_flight"] == 0 and after["reads_waiting"] == 0
        assert after["memory"]["demand_waiting"] == 0


def test_table_has_a_header_and_a_line_per_interval(ds, mount):
    with mount(ds.path(BASIC)) as m:
        m.read("epoch-0.jsonl")
        p = _stats(m.path, "-n", "3", "-i", "0.1")
        assert p.returncode == 0, p.stderr
        rows = p.stdout.splitlines()
        assert rows[0].split()[:3] == ["served", "MB/s", "read"]
        assert len(rows) == 4
        for row in rows[1:]:
            cols = row.split()
            assert len(cols) == 11, row
            served, read_mb, ampl = map(float, cols[:3])
            used, limit = map(int, cols[3].split("/"))
            assert served == 0 and read_mb == 0, "nothing read during the lines"
            assert 0 <= used <= limit and limit > 0
            assert int(cols[9]) == 0, "no storage read in flight while nothing is read"
            assert float(cols[10]) >= 0


def test_refuses_what_is_not_a_mount_and_bad_arguments(tmp_path):
    p = _stats(str(tmp_path), "-n", "1")
    assert p.returncode == 1
    assert "stats.json" in p.stderr and str(tmp_path) in p.stderr
    for args in (["-n", "x"], ["-i", "0"], ["-i", "nan"], ["--bogus"]):
        p = _stats(str(tmp_path), *args)
        assert p.returncode == 2, args
        assert "youmufs" in p.stderr
    assert subprocess.run([BIN, "stats"], capture_output=True).returncode == 2
