"""The report in a real browser: headless Chromium (Debian's ``chromium``) renders report.html from disk.

Checks, on a batch whose receipts carry ``<script>``, an ``onerror`` image and links to a local "beacon"
server: the page renders (a non-trivial screenshot), the viewer's issue markers are in the DOM and painted in
their colour, our own filter script ran (its CSP hash is right), nothing from the data ran (title and body
unchanged) and nothing was fetched (the beacon server saw no request). A second case renders the report of
the bundled examples when the scoring pipeline is available.
"""

from __future__ import annotations

import http.server
import shutil
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from fixtures.report.report_runs import make_run
from judge.report import build_report
from judge.report.viewer import anchor_id

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
if CHROMIUM is None and Path("/usr/bin/chromium").exists():
    CHROMIUM = "/usr/bin/chromium"
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="Debian's chromium is not installed (.ci/run installs it: apt-get install chromium)"
)

SEVERE_BG = (253, 236, 234)  # --severe-bg in reports/report.css: the fill of a severe issue marker
MINOR_BG = (255, 244, 214)  # --minor-bg: a minor one


def chromium(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    profile = tmp_path / "profile"
    command = [
        str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--disable-dev-shm-usage", "--hide-scrollbars", f"--user-data-dir={profile}", *args,
    ]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, f"chromium failed ({result.returncode}):\n{result.stderr[-2000:]}"
    return result


class Beacon(http.server.BaseHTTPRequestHandler):
    hits: list[str] = []

    def do_GET(self) -> None:
        Beacon.hits.append(self.path)
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture()
def beacon() -> Iterator[str]:
    Beacon.hits = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Beacon)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def painted(png: Path, colour: tuple[int, int, int]) -> int:
    """How many pixels of the screenshot have exactly ``colour``."""
    import numpy as np
    from PIL import Image

    pixels = np.asarray(Image.open(png).convert("RGB"))
    return int(np.all(pixels == np.array(colour, dtype=pixels.dtype), axis=-1).sum())


@needs_chromium
def test_report_in_chromium_runs_nothing_from_the_data(tmp_path: Path, beacon: str):
    run_dir = make_run(tmp_path / "run", beacon_url=beacon)
    page = build_report(run_dir)["report_html"]
    url = page.resolve().as_uri()

    result = chromium(tmp_path, "--enable-logging=stderr", "--v=0", "--virtual-time-budget=4000", "--dump-dom", url)
    dom = result.stdout
    console = [line for line in result.stderr.splitlines() if ":CONSOLE" in line]
    assert console == [], "the page logged to the console (a CSP violation or a script error):\n" + "\n".join(console)
    assert "<title>trajudge report · run</title>" in dom, "a script from the data changed the title"
    assert "PWNED" not in dom.split("<body", 1)[1].split(">", 1)[0], "the body's attributes were changed"
    assert "data-pwned" not in dom
    assert "5 of 5 shown" in dom, "our own filter script did not run (is its CSP hash right?)"
    assert dom.count('class="issue-marker severe') >= 2 and 'class="issue-marker minor' in dom
    assert f'id="{anchor_id("t-bad")}-T2"' in dom
    assert "&lt;script&gt;document.title='PWNED'&lt;/script&gt;" in dom, "the hostile text is shown as text"

    shot = tmp_path / "report.png"
    chromium(tmp_path, "--virtual-time-budget=4000", f"--screenshot={shot}", "--window-size=1280,9000", url)
    assert shot.is_file() and shot.stat().st_size > 50_000
    assert painted(shot, SEVERE_BG) > 20_000, "severe issue markers are not painted in their colour"
    assert painted(shot, MINOR_BG) > 5_000, "the minor majority issue marker is not painted"
    assert Beacon.hits == [], f"the page fetched {Beacon.hits} from a URL found in the data"


@needs_chromium
def test_report_of_the_bundled_examples_in_chromium(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """The README's main command on the bundled examples, then its report.html in the browser."""
    from typer.testing import CliRunner

    from judge.cli import app

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    run_dir = tmp_path / "demo"
    result = CliRunner().invoke(app, ["score", str(ROOT / "examples"), "--out", str(run_dir)])
    assert result.exit_code == 0, result.output
    page = run_dir / "report.html"
    assert str(page) in result.output.strip().splitlines()[-1], "judge score must end by naming report.html"
    trajectories = sum(1 for line in (run_dir / "trajectories.jsonl").open() if line.strip())

    dom = chromium(tmp_path, "--virtual-time-budget=4000", "--dump-dom", page.resolve().as_uri()).stdout
    assert f"{trajectories} of {trajectories} shown" in dom
    assert 'class="issue-marker' in dom
    shot = tmp_path / "examples.png"
    chromium(tmp_path, "--virtual-time-budget=4000", f"--screenshot={shot}", "--window-size=1280,4000",
             page.resolve().as_uri())
    assert shot.stat().st_size > 50_000


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """report.html of the fixture batch, built once for the filter cases."""
    return build_report(make_run(tmp_path_factory.mktemp("filters") / "run"))["report_html"]


@needs_chromium
@pytest.mark.parametrize(
    ("query", "shown", "visible"),
    [
        ("score=2", 1, {"t-bad"}),
        ("category=environment", 1, {"t-env"}),
        ("tag=%3Cscript%3E", 5, None),  # not one of the options: the filter stays at "all"
    ],
)
def test_index_filters_preset_from_the_address(
    tmp_path: Path, built: Path, query: str, shown: int, visible: set[str] | None
):
    page = built
    dom = chromium(tmp_path, "--virtual-time-budget=3000", "--dump-dom", f"{page.resolve().as_uri()}?{query}").stdout
    assert f"{shown} of 5 shown" in dom
    if visible is not None:
        from judge.report.viewer import anchor_id as anchor

        for trajectory_id in ("t-clean", "t-bad", "../../etc/x", "t-env", "t-noscore"):
            before, after = dom.split(f'data-trajectory="{anchor(trajectory_id)}"', 1)
            start_tag = before.rsplit("<tr", 1)[1] + after.split(">", 1)[0]
            assert ("hidden-by-filter" in start_tag) == (trajectory_id not in visible), trajectory_id
