"""Row-wise random access with pyarrow, the way a naive map-style Dataset does it: row i is
found through the row groups' row counts, and its row group is read for it
(`read_row_group`). Shared by bench/epoch_bench.py and bench/peers.py."""
import numpy as np
import pyarrow.parquet as pq


class RowGroupIndex:
    """The files' footers, read once: total rows, and each row group's first row."""

    def __init__(self, files, column):
        self.column = column
        self.files = [pq.ParquetFile(f) for f in files]
        starts, self.where = [], []
        at = 0
        for fi, pf in enumerate(self.files):
            for g in range(pf.metadata.num_row_groups):
                starts.append(at)
                self.where.append((fi, g))
                at += pf.metadata.row_group(g).num_rows
        self.starts = np.array(starts)
        self.rows = at

    def row(self, i):
        """Row i's value (a pyarrow scalar), its whole row group read for it."""
        k = int(np.searchsorted(self.starts, i, side="right")) - 1
        fi, g = self.where[k]
        table = self.files[fi].read_row_group(g, columns=[self.column])
        return table.column(0)[i - int(self.starts[k])]

    def shuffled(self, seed=0):
        """A permutation of the row numbers."""
        return np.random.default_rng(seed).permutation(self.rows)
