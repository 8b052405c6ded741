"""A real S3 server for the s3:// tests and benchmarks: the Versity S3 gateway (versitygw, its
posix backend: each directory of the root a bucket), started on 127.0.0.1, and what the tests
need around it:

- S3Server: start / kill / restart the gateway on a fixed port, a SigV4 client of its own
  (independent of youmufs and libcurl: hashlib + hmac + http.client) to create buckets, put,
  replace and delete objects, and upload a dataset directory under a prefix;
- FaultProxy: a small HTTP proxy in front of it that counts requests and client connections,
  records their headers (what a client sent: signed or not, with a session token or not), can
  answer 503 SlowDown
  for a while, and can add a delay to every request (the benchmark's 50 ms per request);
- public_read: a bucket policy that lets anonymous requests list a bucket and read its objects
  (the gateway's own bucket policies: Principal "*").

versitygw comes from scripts/install-deps.sh --tests (`go install`); VERSITYGW names another
binary. Nothing here is mocked: youmufs talks HTTP to the real server (through the proxy or not).
"""

from __future__ import annotations

import contextlib
import datetime
import hashlib
import hmac
import http.client
import http.server
import json
import os
import shutil
import signal
import socket
import socketserver
import subprocess
import tempfile
import threading
import time
import urllib.parse

ACCESS_KEY = "YFSTESTACCESSKEY0001"
SECRET_KEY = "yfs-test-secret-9f1c2e7a5b3d4c6e8a0b"
REGION = "us-east-1"


def versitygw_binary():
    """The gateway's path, or None."""
    explicit = os.environ.get("VERSITYGW")
    if explicit:
        return explicit if os.access(explicit, os.X_OK) else None
    found = shutil.which("versitygw")
    if found:
        return found
    gopath = subprocess.run(["go", "env", "GOPATH"], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True).stdout.strip() \
        if shutil.which("go") else ""
    for d in (os.path.join(gopath, "bin") if gopath else "",
              os.path.expanduser("~/go/bin")):
        p = os.path.join(d, "versitygw") if d else ""
        if p and os.access(p, os.X_OK):
            return p
    return None


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_port(port, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
            return True
        time.sleep(0.05)
    return False


# ---------------------------------------------------------------------------------------------
# SigV4, written from AWS's description of the signing process

def _sha256(b):
    return hashlib.sha256(b).hexdigest()


def _hmac(key, msg):
    return hmac.new(key, msg.encode(), hashlib.sha256).digest()


def sign(method, host, path, query, access=ACCESS_KEY, secret=SECRET_KEY, region=REGION,
         headers=None):
    """Headers (with Authorization) for a request with an unsigned payload."""
    now = datetime.datetime.now(datetime.timezone.utc)
    amz_date = now.strftime("%Y%m%dT%H%M%SZ")
    day = amz_date[:8]
    h = {"host": host, "x-amz-content-sha256": "UNSIGNED-PAYLOAD", "x-amz-date": amz_date}
    for k, v in (headers or {}).items():
        h[k.lower()] = v
    names = sorted(h)
    canonical_query = "&".join(
        f"{urllib.parse.quote(k, safe='-_.~')}={urllib.parse.quote(v, safe='-_.~')}"
        for k, v in sorted(query.items()))
    canonical = "\n".join([method, urllib.parse.quote(path, safe="/-_.~"), canonical_query,
                           "".join(f"{k}:{h[k].strip()}\n" for k in names), ";".join(names),
                           "UNSIGNED-PAYLOAD"])
    scope = f"{day}/{region}/s3/aws4_request"
    to_sign = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope, _sha256(canonical.encode())])
    key = _hmac(_hmac(_hmac(_hmac(("AWS4" + secret).encode(), day), region), "s3"),
                "aws4_request")
    signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    h["Authorization"] = (f"AWS4-HMAC-SHA256 Credential={access}/{scope}, "
                          f"SignedHeaders={';'.join(names)}, Signature={signature}")
    return h


class S3Server:
    """The gateway over a temporary root, on 127.0.0.1:port."""

    def __init__(self, binary, root=None, port=None):
        self.binary = binary
        self.own_root = root is None   # made here: removed by stop()
        self.root = root or tempfile.mkdtemp(prefix="yfs-s3-")
        self.port = port or free_port()
        self.proc = None
        self.log = os.path.join(os.path.dirname(os.path.abspath(self.root)),
                                os.path.basename(self.root) + ".log")
        self._conn = None

    @property
    def endpoint(self):
        return f"http://127.0.0.1:{self.port}"

    def env(self, **extra):
        """The environment youmufs needs to reach this server (credentials included)."""
        e = {"AWS_ACCESS_KEY_ID": ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
             "AWS_REGION": REGION, "AWS_ENDPOINT_URL": self.endpoint}
        e.update(extra)
        return e

    def start(self):
        assert self.proc is None
        logf = open(self.log, "ab")
        self.proc = subprocess.Popen(
            [self.binary, "--access", ACCESS_KEY, "--secret", SECRET_KEY, "--region", REGION,
             "--port", f"127.0.0.1:{self.port}", "--keep-alive", "--quiet", "posix", self.root],
            stdin=subprocess.DEVNULL, stdout=logf, stderr=logf, start_new_session=True)
        logf.close()
        if not _wait_port(self.port, 20):
            self.kill()
            raise RuntimeError(f"versitygw did not listen on {self.port}: see {self.log}")
        return self

    def kill(self):
        """SIGKILL, as a crash: no goodbye to open connections."""
        if self.proc:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)
            self.proc = None
        self._conn = None

    def restart(self):
        self.kill()
        return self.start()

    def stop(self):
        """Kill the server; remove its root and log if this object made them."""
        self.kill()
        if self.own_root:
            shutil.rmtree(self.root, ignore_errors=True)
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.log)

    # -- a client of its own ------------------------------------------------------------------

    def request(self, method, path, query=None, body=b"", headers=None):
        query = query or {}
        for attempt in range(3):
            if self._conn is None:
                self._conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
            h = sign(method, f"127.0.0.1:{self.port}", path, query, headers=headers)
            url = urllib.parse.quote(path, safe="/-_.~")
            if query:
                url += "?" + urllib.parse.urlencode(query, quote_via=urllib.parse.quote)
            try:
                self._conn.request(method, url, body=body, headers=h)
                r = self._conn.getresponse()
                data = r.read()
                return r.status, data, dict(r.getheaders())
            except (ConnectionError, http.client.HTTPException):
                self._conn = None
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def make_bucket(self, bucket):
        status, data, _ = self.request("PUT", f"/{bucket}")
        assert status in (200, 409), (status, data)

    def put(self, bucket, key, data: bytes):
        status, body, headers = self.request("PUT", f"/{bucket}/{key}", body=data)
        assert status == 200, (status, body)
        return headers.get("ETag") or headers.get("Etag")

    def delete(self, bucket, key):
        status, body, _ = self.request("DELETE", f"/{bucket}/{key}")
        assert status in (200, 204), (status, body)

    def public_read(self, bucket):
        """Let anyone, unsigned, list `bucket` and GET its objects (PutBucketPolicy)."""
        policy = {"Version": "2012-10-17", "Statement": [{
            "Effect": "Allow", "Principal": "*", "Action": ["s3:GetObject", "s3:ListBucket"],
            "Resource": [f"arn:aws:s3:::{bucket}", f"arn:aws:s3:::{bucket}/*"]}]}
        status, body, _ = self.request("PUT", f"/{bucket}", query={"policy": ""},
                                       body=json.dumps(policy).encode())
        assert status in (200, 204), (status, body)

    def object_path(self, bucket, key):
        """Where the posix backend keeps an object (its ETag is the xattr user.etag)."""
        return os.path.join(self.root, bucket, key)

    def upload_dir(self, local, bucket, prefix):
        """Every file below `local` as PREFIX/RELATIVE_PATH. Returns the s3:// URL."""
        self.make_bucket(bucket)
        for dirpath, _, files in os.walk(local):
            for f in sorted(files):
                p = os.path.join(dirpath, f)
                rel = os.path.relpath(p, local).replace(os.sep, "/")
                with open(p, "rb") as fh:
                    self.put(bucket, f"{prefix}/{rel}" if prefix else rel, fh.read())
        return f"s3://{bucket}/{prefix}" if prefix else f"s3://{bucket}"


# ---------------------------------------------------------------------------------------------
# a proxy that counts, delays and fails

class FaultProxy:
    """HTTP/1.1 proxy on 127.0.0.1 in front of a server: forwards every request as it came
    (the Host header too, so signatures hold), counts requests by method and path kind,
    answers 503 SlowDown while `failing` (a deadline), and sleeps `delay` seconds first."""

    def __init__(self, upstream_port):
        self.upstream_port = upstream_port
        self.delay = 0.0
        self.fail_until = 0.0
        self.lock = threading.Lock()
        self.counts = {"GET": 0, "LIST": 0, "503": 0}
        self.requests = []   # (method, path, {header name in lower case: value}), in order
        self.connections = set()   # the client addresses (host, port) requests came from
        self.open_now = self.most_open = 0   # client connections open, and the most at once
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def setup(self):
                super().setup()
                with proxy.lock:
                    proxy.open_now += 1
                    proxy.most_open = max(proxy.most_open, proxy.open_now)

            def finish(self):
                with proxy.lock:
                    proxy.open_now -= 1
                super().finish()

            def _forward(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                listing = "list-type=" in self.path
                with proxy.lock:
                    proxy.counts["LIST" if listing else self.command] = \
                        proxy.counts.get("LIST" if listing else self.command, 0) + 1
                    proxy.requests.append((self.command, self.path,
                                           {k.lower(): v for k, v in self.headers.items()}))
                    proxy.connections.add(self.client_address)
                if proxy.delay:
                    time.sleep(proxy.delay)
                if time.monotonic() < proxy.fail_until:
                    with proxy.lock:
                        proxy.counts["503"] += 1
                    msg = (b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>SlowDown'
                           b'</Code><Message>Please reduce your request rate.</Message></Error>')
                    self.send_response(503)
                    self.send_header("Content-Type", "application/xml")
                    self.send_header("Content-Length", str(len(msg)))
                    self.end_headers()
                    self.wfile.write(msg)
                    return
                conn = getattr(self, "_up", None) or http.client.HTTPConnection(
                    "127.0.0.1", proxy.upstream_port, timeout=60)
                self._up = conn
                try:
                    conn.putrequest(self.command, self.path, skip_host=True,
                                    skip_accept_encoding=True)
                    for k, v in self.headers.items():
                        conn.putheader(k, v)
                    conn.endheaders(body or None)
                    r = conn.getresponse()
                    data = r.read()
                except (ConnectionError, http.client.HTTPException, OSError):
                    self._up = None
                    self.close_connection = True
                    return  # the client sees a reset
                self.send_response(r.status)
                for k, v in r.getheaders():
                    if k.lower() not in ("content-length", "connection", "transfer-encoding"):
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_PUT = do_HEAD = do_DELETE = do_POST = _forward

        class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
            daemon_threads = True
            allow_reuse_address = True
            request_queue_size = 1024   # a mount opens hundreds of connections at once

        self.server = Server(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def endpoint(self):
        return f"http://127.0.0.1:{self.port}"

    def fail_for(self, seconds):
        self.fail_until = time.monotonic() + seconds

    def reset_counts(self):
        with self.lock:
            self.counts = {"GET": 0, "LIST": 0, "503": 0}
            self.requests = []
            self.connections = set()
            self.most_open = self.open_now

    def close(self):
        self.server.shutdown()
        self.server.server_close()
