#!/usr/bin/env python3
"""Build the seed corpora of the fuzz targets from tests/decode/fixtures/*.parquet.

Run from anywhere:  python3 tests/fuzz/make_corpus.py
Rewrites tests/fuzz/corpus/<target>/ (files named by the SHA-1 of their
content, so identical seeds collapse):

  fuzz_thrift  the raw FileMetaData of every fixture, the first page header
               of every column chunk, and every OffsetIndex;
  fuzz_footer  every footer framed as a minimal file ("PAR1" + FileMetaData
               + length + "PAR1"), every OffsetIndex on its own, and the
               small fixture files whole (their offset indexes included);
  fuzz_page    per column chunk: the 4-byte column descriptor fuzz_page.c
               expects (type, max_def + 3 * max_rep, codec, type_length),
               then the chunk's pages (header + body) up to PAGE_BYTES.

pyarrow gives the schema (physical type, type_length, max levels); a few
lines of thrift compact decoding below give what pyarrow does not expose
(page boundaries, the codec id as stored, OffsetIndex locations).
"""
import glob
import hashlib
import os
import shutil
import struct

import pyarrow.parquet as pq

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "decode", "fixtures")
OUT = os.path.join(HERE, "corpus")
PAGE_BYTES = 8 * 1024   # pages of one chunk kept in a fuzz_page seed
WHOLE_FILE = 4 * 1024   # fixtures up to this size are fuzz_footer seeds whole

PHYSICAL = {"BOOLEAN": 0, "INT32": 1, "INT64": 2, "INT96": 3, "FLOAT": 4, "DOUBLE": 5,
            "BYTE_ARRAY": 6, "FIXED_LEN_BYTE_ARRAY": 7}


class Thrift:
    """Just enough of the compact protocol: a struct as {field id: value}."""

    def __init__(self, buf, pos=0):
        self.buf, self.pos = buf, pos

    def byte(self):
        b = self.buf[self.pos]
        self.pos += 1
        return b

    def uleb(self):
        v = shift = 0
        while True:
            b = self.byte()
            v |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                return v

    def zigzag(self):
        u = self.uleb()
        return (u >> 1) ^ -(u & 1)

    def value(self, t):
        if t in (1, 2):
            return t == 1
        if t == 3:
            return self.byte()
        if t in (4, 5, 6):
            return self.zigzag()
        if t == 7:
            self.pos += 8
            return None
        if t == 8:
            n = self.uleb()
            self.pos += n
            return self.buf[self.pos - n:self.pos]
        if t in (9, 10):
            h = self.byte()
            n = h >> 4 if h >> 4 != 15 else self.uleb()
            et = h & 0x0F
            return [self.byte() == 1 if et in (1, 2) else self.value(et) for _ in range(n)]
        if t == 11:
            n = self.uleb()
            kv = self.byte() if n else 0
            return [(self.value(kv >> 4), self.value(kv & 0x0F)) for _ in range(n)]
        if t == 12:
            return self.struct()
        raise ValueError("thrift type %d" % t)

    def struct(self):
        out, last = {}, 0
        while True:
            h = self.byte()
            t = h & 0x0F
            if t == 0:
                return out
            last = last + (h >> 4) if h >> 4 else self.zigzag()
            out[last] = self.value(t)


def footer(data):
    (mlen,) = struct.unpack("<I", data[-8:-4])
    return data[len(data) - 8 - mlen:len(data) - 8]


def chunk_pages(data, start, end, limit):
    """Bytes of the chunk's pages (header + body) that fit in limit."""
    pos = start
    while pos < end:
        t = Thrift(data, pos)
        h = t.struct()
        nxt = t.pos + h[3]  # compressed_page_size
        if nxt - start > limit:
            break
        yield data[pos:t.pos], data[pos:nxt]
        pos = nxt


def main():
    seeds = {"fuzz_thrift": set(), "fuzz_footer": set(), "fuzz_page": set()}
    for path in sorted(glob.glob(os.path.join(FIXTURES, "*.parquet"))):
        data = open(path, "rb").read()
        meta_bytes = footer(data)
        seeds["fuzz_thrift"].add(meta_bytes)
        seeds["fuzz_footer"].add(b"PAR1" + meta_bytes + struct.pack("<I", len(meta_bytes)) +
                                 b"PAR1")
        if len(data) <= WHOLE_FILE:
            seeds["fuzz_footer"].add(data)

        schema = pq.ParquetFile(path).schema  # leaf columns in chunk order
        fmeta = Thrift(meta_bytes).struct()
        for rg in fmeta.get(4, []):
            for i, cc in enumerate(rg[1]):
                if 4 in cc and 5 in cc:  # OffsetIndex offset and length
                    oi = data[cc[4]:cc[4] + cc[5]]
                    seeds["fuzz_thrift"].add(oi)
                    seeds["fuzz_footer"].add(oi)
                cm = cc[3]
                col = schema.column(i)
                if col.max_definition_level > 2 or col.max_repetition_level > 1:
                    continue
                start = cm[9]
                if cm.get(11, 0) > 0:
                    start = min(start, cm[11])
                desc = bytes([PHYSICAL[col.physical_type],
                              col.max_definition_level + 3 * col.max_repetition_level,
                              cm[4], (col.length or 0) & 0xFF])
                pages = list(chunk_pages(data, start, start + cm[7], PAGE_BYTES))
                if pages:
                    seeds["fuzz_thrift"].add(pages[0][0])
                    seeds["fuzz_page"].add(desc + b"".join(p for _, p in pages))

    for target, blobs in seeds.items():
        d = os.path.join(OUT, target)
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        for b in blobs:
            with open(os.path.join(d, hashlib.sha1(b).hexdigest()), "wb") as f:
                f.write(b)
        print("%-12s %4d seeds, %7d bytes" % (target, len(blobs), sum(map(len, blobs))))


if __name__ == "__main__":
    main()
