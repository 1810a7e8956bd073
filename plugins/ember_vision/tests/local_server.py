"""A local HTTP server on 127.0.0.1 for download tests: serves bytes by name, honours ``Range``."""
import contextlib
import http.server
import threading


class RangeHandler(http.server.BaseHTTPRequestHandler):
    """Serves ``server.files[name]``; records each request's ``Range`` header in ``server.ranges``."""

    def do_GET(self):  # noqa: N802
        data = self.server.files.get(self.path.lstrip("/"))
        if data is None:
            self.send_error(404)
            return
        rng = self.headers.get("Range")
        self.server.ranges.append(rng)
        start = int(rng.split("=")[1].rstrip("-")) if rng else 0
        self.send_response(206 if rng else 200)
        self.send_header("Content-Length", str(len(data) - start))
        self.end_headers()
        self.wfile.write(data[start:])

    def log_message(self, *args):
        pass


@contextlib.contextmanager
def serve(files: dict):
    """``with serve({"a.bin": b"..."}) as (base_url, httpd):`` -- ``httpd.ranges`` lists the Range headers."""
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), RangeHandler)
    httpd.files, httpd.ranges = dict(files), []
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/", httpd
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()
