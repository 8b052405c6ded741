"""A minimal Parquet writer for the legacy list layouts no maintained writer produces any more:

    bare      message m { required int32 id; repeated int32 ids; }
    two_level message m { required int32 id; optional group ids (LIST) { repeated int32 element; } }

CONTRACT-TYPES.md says both are served like the standard 3-level LIST. Hand-written thrift
compact protocol, one uncompressed PLAIN data page v1 per column chunk per row group, levels as
RLE runs of one. pyarrow reads these files (it is the oracle).

    write_legacy(path, layout, rows, rows_per_group=..., empty_kv_type0=False,
                 entries_per_page=None)
        rows: list of (list of int) or None; empty_kv_type0 adds fastparquet's empty
        key_value_metadata (list header 0x00) to every ColumnMetaData; entries_per_page cuts
        the list column's level entries into data pages of that many entries wherever the cut
        falls, so rows continue on the next page (as DuckDB writes long lists)
"""

import struct


def _uvarint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _zz(n):
    return _uvarint((n << 1) ^ (n >> 63))


class _Struct:
    """Thrift compact struct builder: fields must be added in increasing id order."""

    def __init__(self):
        self.buf = bytearray()
        self.last = 0

    def _head(self, fid, ttype):
        d = fid - self.last
        if 0 < d <= 15:
            self.buf.append((d << 4) | ttype)
        else:
            self.buf.append(ttype)
            self.buf += _zz(fid)
        self.last = fid

    def i32(self, fid, v):
        self._head(fid, 5)
        self.buf += _zz(v)
        return self

    def i64(self, fid, v):
        self._head(fid, 6)
        self.buf += _zz(v)
        return self

    def binary(self, fid, b):
        if isinstance(b, str):
            b = b.encode()
        self._head(fid, 8)
        self.buf += _uvarint(len(b)) + b
        return self

    def struct(self, fid, s):
        self._head(fid, 12)
        self.buf += s.done()
        return self

    def list(self, fid, etype, items):
        self._head(fid, 9)
        n = len(items)
        self.buf += bytes([(n << 4) | etype]) if n < 15 else bytes([0xF0 | etype]) + _uvarint(n)
        for it in items:
            if etype == 5:
                self.buf += _zz(it)
            elif etype == 8:
                b = it.encode() if isinstance(it, str) else it
                self.buf += _uvarint(len(b)) + b
            elif etype == 12:
                self.buf += it.done()
            else:
                raise ValueError(etype)
        return self

    def empty_list_type0(self, fid):
        """An empty list whose header byte is 0x00 (element type 0), as fastparquet writes an
        empty key_value_metadata. Thrift readers accept it: no element is ever read."""
        self._head(fid, 9)
        self.buf.append(0)
        return self

    def done(self):
        return bytes(self.buf) + b"\x00"


def _rle_levels(levels, bit_width):
    out = bytearray()
    nbytes = (bit_width + 7) // 8
    i = 0
    while i < len(levels):                 # RLE runs of equal values
        j = i
        while j < len(levels) and levels[j] == levels[i]:
            j += 1
        out += _uvarint((j - i) << 1) + levels[i].to_bytes(nbytes, "little")
        i = j
    return struct.pack("<I", len(out)) + bytes(out)


INT32, REQUIRED, OPTIONAL, REPEATED, LIST_CT = 1, 0, 1, 2, 3


def _schema(layout):
    root = _Struct().binary(4, "m").i32(5, 2)
    idf = _Struct().i32(1, INT32).i32(3, REQUIRED).binary(4, "id")
    if layout == "bare":
        return [root, idf, _Struct().i32(1, INT32).i32(3, REPEATED).binary(4, "ids")], \
            ["ids"], 1
    if layout == "two_level":
        grp = _Struct().i32(3, OPTIONAL).binary(4, "ids").i32(5, 1).i32(6, LIST_CT)
        el = _Struct().i32(1, INT32).i32(3, REPEATED).binary(4, "element")
        return [root, idf, grp, el], ["ids", "element"], 2
    raise ValueError(layout)


def _levels(rows, max_def):
    reps, defs, vals = [], [], []
    for r in rows:
        if r is None:
            if max_def == 1:
                raise ValueError("a bare repeated field has no null lists")
            reps.append(0)
            defs.append(0)
        elif not r:
            reps.append(0)
            defs.append(max_def - 1)
        else:
            for k, v in enumerate(r):
                reps.append(0 if k == 0 else 1)
                defs.append(max_def)
                vals.append(v)
    return reps, defs, vals


def _page(body_parts, num_values):
    body = b"".join(body_parts)
    dph = _Struct().i32(1, num_values).i32(2, 0).i32(3, 3).i32(4, 3)   # PLAIN, RLE, RLE
    ph = _Struct().i32(1, 0).i32(2, len(body)).i32(3, len(body)).struct(5, dph)
    return ph.done() + body


def _list_pages(reps, defs, vals, max_def, entries_per_page):
    """The list column's data pages: one, or one per entries_per_page level entries."""
    step = entries_per_page or max(len(reps), 1)
    pages, v = [], 0
    for a in range(0, max(len(reps), 1), step):
        r, d = reps[a:a + step], defs[a:a + step]
        n = sum(1 for x in d if x == max_def)
        pages.append(_page([_rle_levels(r, 1), _rle_levels(d, max_def.bit_length()),
                            struct.pack(f"<{n}i", *vals[v:v + n])], len(r)))
        v += n
    return b"".join(pages)


def write_legacy(path, layout, rows, rows_per_group=50, empty_kv_type0=False,
                 entries_per_page=None):
    schema, list_path, max_def = _schema(layout)
    out = bytearray(b"PAR1")
    groups = []
    for g in range(0, len(rows), rows_per_group):
        chunk_rows = rows[g:g + rows_per_group]
        n = len(chunk_rows)
        cols = []
        # id: required int32, the global row number
        off = len(out)
        page = _page([struct.pack(f"<{n}i", *range(g, g + n))], n)
        out += page
        cols.append((["id"], off, len(page), n))
        reps, defs, vals = _levels(chunk_rows, max_def)
        off = len(out)
        page = _list_pages(reps, defs, vals, max_def, entries_per_page)
        out += page
        cols.append((list_path, off, len(page), len(reps)))
        ccs = []
        for pth, off, size, nv in cols:
            md = (_Struct().i32(1, INT32).list(2, 5, [0, 3]).list(3, 8, pth).i32(4, 0)
                  .i64(5, nv).i64(6, size).i64(7, size))
            if empty_kv_type0:
                md.empty_list_type0(8)
            md.i64(9, off)
            ccs.append(_Struct().i64(2, off).struct(3, md))
        groups.append(_Struct().list(1, 12, ccs).i64(2, sum(c[2] for c in cols)).i64(3, n))
    fmd = (_Struct().i32(1, 1).list(2, 12, schema).i64(3, len(rows)).list(4, 12, groups)
           .binary(6, "youmufs tests legacy_lists.py"))
    footer = fmd.done()
    out += footer + struct.pack("<I", len(footer)) + b"PAR1"
    with open(path, "wb") as f:
        f.write(out)
