"""Writes the logical table with pyarrow (Arrow C++ Parquet writer).

    python3 pyarrow_write.py SPEC.json
SPEC: {"sources": [{"arrows": PATH, "parquet": PATH}, ...], "out_dir": DIR,
       "options": {pq.write_table keyword arguments}, "columns": [names]}
Writes DIR/part-000.parquet, part-001.parquet, ... one per source, same rows in the same order.
"""
import json
import os
import sys

import pyarrow.ipc as ipc
import pyarrow.parquet as pq


def write(spec):
    opts = dict(spec["options"])
    opts.setdefault("write_batch_size", 64)      # lets small data_page_size values take effect
    for i, src in enumerate(spec["sources"]):
        with ipc.open_stream(src["arrows"]) as r:
            t = r.read_all().select(spec["columns"])
        pq.write_table(t, os.path.join(spec["out_dir"], f"part-{i:03d}.parquet"), **opts)


if __name__ == "__main__":
    with open(sys.argv[1]) as f:
        write(json.load(f))
