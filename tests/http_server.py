"""A threaded HTTP file server on 127.0.0.1 for download tests: Range requests and switchable faults.

``server.files[name] = bytes`` publishes a file at ``server.url(name)``. ``server.fault`` is None,
``"404"``, ``"500"``, ``"wrong"`` (serve the bytes with one flipped), ``"from zero"`` (answer a Range
request with 206 and the whole file from byte 0) or ``("cut", n)`` (send the headers of the whole
file, then only ``n`` bytes, then drop the connection; cleared after one use). ``server.no_length``
leaves out Content-Length (a body delimited by closing the connection); ``server.block`` bytes are
sent at a time with ``server.delay`` seconds after each (a slow or trickling server).
``server.requests`` records ``(path, Range header)`` for every GET. ``server.redirects[name] = (target,
headers)`` answers ``name`` with a 302 to ``target`` carrying ``headers`` (as the Hugging Face hub redirects a
file to its storage with ``X-Linked-Etag``).
"""
import hashlib
import os
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class _Handler(BaseHTTPRequestHandler):
    """Serves ``self.server.owner.files`` with the owner's fault applied."""

    def log_message(self, *args):
        pass

    def do_GET(self):
        owner = self.server.owner
        name = self.path.lstrip("/")
        if name in owner.redirects:  # faults apply to the file it leads to
            target, headers = owner.redirects[name]
            self.send_response(302)
            self.send_header("Location", "/" + target)
            for key, value in headers.items():
                self.send_header(key, value)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        with owner.lock:
            owner.requests.append((self.path, self.headers.get("Range")))
            fault = owner.fault
            if isinstance(fault, tuple):
                owner.fault = None
        if fault in ("404", "500") or name not in owner.files:
            code = 500 if fault == "500" else 404
            self.send_error(code)
            return
        data = owner.files[name]
        if fault == "wrong":
            data = bytes([data[0] ^ 0xFF]) + data[1:]
        start = 0
        byte_range = self.headers.get("Range")
        if byte_range and byte_range.startswith("bytes="):
            start = 0 if fault == "from zero" else int(byte_range[len("bytes="):].split("-")[0])
            if start >= len(data):
                self.send_response(416)
                self.send_header("Content-Range", f"bytes */{len(data)}")
                self.end_headers()
                return
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
        else:
            self.send_response(200)
        body = data[start:]
        if not owner.no_length:
            self.send_header("Content-Length", str(len(body)))
        self.send_header("Accept-Ranges", "bytes")
        self.end_headers()
        if isinstance(fault, tuple) and fault[0] == "cut":
            body = body[:fault[1]]
        try:
            for i in range(0, len(body), owner.block):
                self.wfile.write(body[i:i + owner.block])
                self.wfile.flush()
                time.sleep(owner.delay)
        except ConnectionError:  # the client gave up
            pass
        self.close_connection = True


class FileServer:
    """Start with ``with FileServer() as server:``; it listens on a free port of 127.0.0.1."""

    def __init__(self):
        self.files = {}
        self.redirects = {}
        self.requests = []
        self.fault = None
        self.no_length = False
        self.block = 1 << 20
        self.delay = 0.0
        self.lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._httpd.daemon_threads = True
        self._httpd.owner = self
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.05,), daemon=True)

    @property
    def base_url(self):
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/"

    def url(self, name):
        return self.base_url + name

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._httpd.shutdown()
        self._httpd.server_close()


def hub_download_worker(args):
    """Run in a child process: load ``url`` through flowvision.hub with the cache at ``home``."""
    home, url = args
    os.environ["FLOWVISION_HOME"] = home
    from flowvision import hub

    loaded = hub.load_state_dict_from_url(url, progress=False)
    return sorted((k, float(v.numpy().astype("float64").sum())) for k, v in loaded.items())


def file_download_worker(args):
    """Run in a child process: ``hub.download_url_to_file(url, dst)``; the sha256 of what ``dst`` then holds."""
    url, dst = args
    from flowvision import hub

    hub.download_url_to_file(url, dst, progress=False)
    with open(dst, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()
