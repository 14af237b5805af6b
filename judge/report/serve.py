"""``judge view RUN``: the run's report served on 127.0.0.1 (stdlib ``http.server``), for a browser on this machine.

It serves exactly the report's files - ``report.html`` and, for the paged layout, ``report_data/index.js`` and
``report_data/v/<k>.js`` - and nothing else of the run directory (not the trajectories, not the store). The
page is the same as when opened from disk: the index with search, filters and sorting, one trajectory at a
time in the viewer, and ``#/t/<id>`` links to a trajectory.

Only GET and HEAD; the server listens on 127.0.0.1 only and answers only requests addressed to it by that
name or ``localhost`` (another Host header is refused, so a web page cannot reach it through DNS rebinding).
Responses are not cached and carry ``nosniff``, ``no-referrer`` and ``frame-ancestors 'none'``.
"""

from __future__ import annotations

import http.server
import re
import shutil
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import unquote, urlsplit

from judge import rundir
from judge.report.paged import DATA_DIR

HOST = "127.0.0.1"
DEFAULT_PORT = 8700
_DATA_FILE = re.compile(rf"^/{DATA_DIR}/(index|v/[0-9]{{1,9}})\.js$")
_TYPES = {".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8"}


class ReportServer(http.server.ThreadingHTTPServer):
    """A server of one run's report files (see the module docstring)."""

    daemon_threads = True

    def __init__(self, run_dir: Path, port: int = DEFAULT_PORT):
        self.run_dir = Path(run_dir).resolve()
        super().__init__((HOST, port), _Handler)

    @property
    def port(self) -> int:
        return int(self.server_address[1])

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}/"

    def allowed_hosts(self) -> set[str]:
        return {f"{HOST}:{self.port}", f"localhost:{self.port}"}

    def file_for(self, path: str) -> Path | None:
        """The file a request path names, or None: only report.html and report_data's scripts are served."""
        if path in ("/", f"/{rundir.REPORT_HTML}"):
            target = self.run_dir / rundir.REPORT_HTML
        elif _DATA_FILE.match(path):
            target = self.run_dir / path.lstrip("/")
        else:
            return None
        return target if target.is_file() else None


class _Handler(http.server.BaseHTTPRequestHandler):
    server: ReportServer
    server_version = "trajudge-view"
    sys_version = ""

    def do_GET(self) -> None:
        self._answer(body=True)

    def do_HEAD(self) -> None:
        self._answer(body=False)

    def _answer(self, body: bool) -> None:
        if self.headers.get("Host", "") not in self.server.allowed_hosts():
            self.send_error(403, "this server answers only requests for 127.0.0.1 or localhost")
            return
        target = self.server.file_for(unquote(urlsplit(self.path).path))
        if target is None:
            self.send_error(404, "not a file of this report")
            return
        self.send_response(200)
        self.send_header("Content-Type", _TYPES.get(target.suffix, "application/octet-stream"))
        self.send_header("Content-Length", str(target.stat().st_size))
        self.send_header("Cache-Control", "no-cache")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "no-referrer")
        self.send_header("Content-Security-Policy", "frame-ancestors 'none'")
        self.end_headers()
        if body:
            with target.open("rb") as handle:
                shutil.copyfileobj(handle, self.wfile)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the stdlib's name
        pass


def serve(run_dir: Path, port: int = DEFAULT_PORT) -> ReportServer:
    """A server of ``run_dir``'s report on 127.0.0.1:``port`` (0 picks a free port); call ``serve_forever``."""
    return ReportServer(run_dir, port)


@contextmanager
def serving(run_dir: Path, port: int = 0) -> Iterator[ReportServer]:
    """The server running in a thread for the duration of the block (tests, notebooks)."""
    server = serve(run_dir, port)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
