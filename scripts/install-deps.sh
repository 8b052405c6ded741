#!/usr/bin/env bash
# Installs what youmufs needs on Debian 12. With no argument, what building and mounting need:
# the compiler, CMake, FUSE, the codec and JSON libraries and libcurl (s3:// datasets). With --tests, also what the test
# command needs: Criterion, pyarrow/pytest (the oracle), the other Parquet writers, the S3
# server of the s3:// tests, the examples' frameworks, and liburing (only bench/io_engine_bench.c
# links it: the test command builds it, so that the I/O engine's measurement keeps compiling).
# Idempotent: skips what is already present.
set -euo pipefail
tests=0
case "${1:-}" in
  "") ;;
  --tests) tests=1 ;;
  *) echo "usage: $0 [--tests]" >&2; exit 2 ;;
esac

packages=(build-essential cmake pkg-config fuse3 libfuse3-dev libzstd-dev libsnappy-dev
          liblz4-dev libjansson-dev zlib1g-dev libbrotli-dev libcurl4-openssl-dev)
((tests)) && packages+=(libcriterion-dev python3-pip liburing-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}"
fi
((tests)) || exit 0

python3 -c "import pyarrow, pytest" 2>/dev/null ||
  python3 -m pip install --quiet pyarrow pytest

# Parquet writers other than pyarrow for tests/integration/test_writers.py: polars and
# fastparquet from PyPI, DuckDB and arrow-rs (parquet-wasm) from npm (tests/integration/writers).
python3 -c "import polars, fastparquet" 2>/dev/null ||
  python3 -m pip install --quiet polars fastparquet
writers="$(cd "$(dirname "$0")/.." && pwd)/tests/integration/writers"
if command -v npm >/dev/null &&
   ! [ -d "$writers/node_modules/parquet-wasm" -a -d "$writers/node_modules/@duckdb/node-api" ]; then
  (cd "$writers" && npm install --no-audit --no-fund --silent)
fi

# tests/integration/test_s3.py and bench/s3_bench.py: a real S3 server on 127.0.0.1, the Versity
# S3 gateway (its posix backend serves each directory as a bucket), built by the Go toolchain.
go=$(command -v go || echo /usr/local/go/bin/go)
if ! command -v versitygw >/dev/null && ! [ -x "$("$go" env GOPATH 2>/dev/null || echo "$HOME/go")/bin/versitygw" ]; then
  [ -x "$go" ] || { echo "install-deps.sh: the Go toolchain is needed to build versitygw" >&2; exit 1; }
  "$go" install github.com/versity/versitygw/cmd/versitygw@v1.8.0
fi

# examples/ (tests/integration/test_examples.py): numpy, Hugging Face datasets, torch on CPU.
# PyPI's Linux torch wheel needs its nvidia-* dependencies even to import on CPU (--no-deps
# fails with "libcudart.so.13: cannot open shared object file"), so it is the full install.
python3 -c "import numpy" 2>/dev/null || python3 -m pip install --quiet numpy
python3 -c "import datasets.load" 2>/dev/null || python3 -m pip install --quiet datasets
python3 -c "import torch.distributed" 2>/dev/null || python3 -m pip install --quiet torch
