"""Ids that differ only by a control character each open their own trajectory in the report (issue 28 item 9).

The report shows a control character of an id as an escape (``v\\u202ex``), so the id ``v<U+202E>x`` and the
literal id ``v\\u202ex`` look the same. Before, the paged index keyed rows by that shown form: both rows opened
the first, and a ``#/t/<id>`` link to an id with a control character found nothing. Now every row and link
carries the id's address (the id percent-encoded, one per id).
"""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import quote, unquote

import pytest
from typer.testing import CliRunner

from judge.cli import app
from judge.report import build_report
from judge.report.viewer import anchor_id
from judge.testing.chromium import Chromium, find_chromium
from judge.testing.synthetic import make_trajectory
from judge.visible import visible

runner = CliRunner()
CONTROL_ID = "v\u202ex"  # a right-to-left override inside
LITERAL_ID = "v\\u202ex"  # a backslash, "u202e": shown exactly as CONTROL_ID is
IDS = [CONTROL_ID, LITERAL_ID, "v\x1bx", "v\\x1bx", "v\u2066x", "v\x85x", "plain/id?#%"]
CHROMIUM = find_chromium()


def make_run(tmp_path: Path) -> Path:
    batch = tmp_path / "batch.jsonl"
    steps = [{"text": "listing", "calls": [("bash", {"cmd": "ls"}, "a.txt", False, 0)]}, {"text": "done"}]
    batch.write_text("".join(make_trajectory(tid, f"query number {n}", steps).to_json_line() + "\n"
                             for n, tid in enumerate(IDS)))
    run_dir = tmp_path / "run"
    result = runner.invoke(app, ["score", str(batch), "--out", str(run_dir), "--embedder", "lexical"])
    assert result.exit_code in (0, 4), result.output
    return run_dir


def index_rows(run_dir: Path) -> tuple[list[list], dict]:
    text = (run_dir / "report_data" / "index.js").read_text(encoding="utf-8")
    match = re.fullmatch(r'trajudgeData\("index", (\[.*\]), (\{.*\})\);\s*', text, re.DOTALL)
    assert match, text[:200]
    return json.loads(match.group(1)), json.loads(match.group(2))


def test_the_ids_look_alike_as_shown() -> None:
    assert visible(CONTROL_ID) == visible(LITERAL_ID) == LITERAL_ID  # the confusion this file is about


def test_the_paged_index_addresses_each_row_by_a_key_unique_to_its_id(tmp_path: Path) -> None:
    run_dir = make_run(tmp_path)
    build_report(run_dir, layout="paged")
    rows, meta = index_rows(run_dir)
    assert "address" in meta["columns"], meta["columns"]
    column = meta["columns"].index("address")
    addresses = [row[column] for row in rows]
    assert len(set(addresses)) == len(IDS) == len(rows)
    assert all(a.isascii() and a.isprintable() and "/" not in a and "#" not in a for a in addresses)
    # The page decodes a link with decodeURIComponent: the address decodes to the id itself.
    assert sorted(unquote(a) for a in addresses) == sorted(IDS)


def test_the_single_file_rows_and_the_summary_links_carry_the_address(tmp_path: Path) -> None:
    run_dir = make_run(tmp_path)
    page = build_report(run_dir, layout="single")["report_html"].read_text(encoding="utf-8")

    class Rows(HTMLParser):
        found: list[str] = []

        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            values = dict(attrs)
            if tag == "tr" and "data-trajectory" in values:
                self.found.append(values.get("data-address") or "")

    parser = Rows()
    parser.feed(page)
    assert len(parser.found) == len(IDS) and len(set(parser.found)) == len(IDS), parser.found


def test_an_address_is_unique_per_id_for_every_control_character() -> None:
    from judge.report import viewer  # read as an attribute: address() is new

    controls = [chr(c) for c in [*range(0x00, 0x20), *range(0x7F, 0xA0), *range(0x202A, 0x202F), *range(0x2066, 0x206A)]]
    ids = {f"v{c}x" for c in controls} | {visible(f"v{c}x") for c in controls}  # each, and its look-alike
    addresses = {viewer.address(tid) for tid in ids}
    assert len(addresses) == len(ids)
    assert all(a.isascii() and a.isprintable() for a in addresses)


@pytest.mark.parametrize(
    ("tid", "expected"),  # what JavaScript's encodeURIComponent writes
    [("plain-id_1.2~x", "plain-id_1.2~x"), ("a b/c?d#e%f", "a%20b%2Fc%3Fd%23e%25f"), ("!*'()", "!*'()"),
     (LITERAL_ID, "v%5Cu202ex"), (CONTROL_ID, "v%E2%80%AEx"), ("\x00\x1b\x85", "%00%1B%C2%85"), ("caf\u00e9", "caf%C3%A9")],
)
def test_address_is_encode_uri_component(tid: str, expected: str) -> None:
    from judge.report import viewer

    assert viewer.address(tid) == expected


# --- in a browser --------------------------------------------------------------------------------

needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)")
READY = "document.readyState === 'complete' && document.getElementById('trajectories').dataset.state === 'ready'"
OPENED = "document.querySelector('#viewer section.trajectory') && document.querySelector('#viewer section.trajectory').id"


@needs_chromium
@pytest.mark.slow
def test_each_look_alike_id_opens_its_own_trajectory_by_link_and_by_row(tmp_path: Path) -> None:
    run_dir = make_run(tmp_path)
    paged = build_report(run_dir, layout="paged")["report_html"].resolve().as_uri()
    with Chromium(CHROMIUM, window=(1280, 1400)) as browser:
        browser.open(paged, ready=READY)
        for tid in IDS:  # a link to the id itself, as encodeURIComponent writes it
            browser.timed(f"location.hash = '#/t/' + encodeURIComponent({json.dumps(tid)})",
                          done=f"{OPENED} === {json.dumps(anchor_id(tid))}")
        rows = browser.evaluate("document.querySelectorAll('#index .vrow:not([hidden])').length")
        assert rows == len(IDS)
        hrefs = browser.evaluate("Array.from(document.querySelectorAll('#index .vrow')).map(a => a.getAttribute('href'))")
        opened = set()
        for position, href in enumerate(hrefs):  # each row of the index opens its own trajectory
            expected = anchor_id(unquote(href.removeprefix("#/t/")))
            browser.evaluate("location.hash = '#trajectories'")
            browser.timed(f"document.querySelectorAll('#index .vrow')[{position}].click()",
                          done=f"location.hash === {json.dumps(href)} && {OPENED} === {json.dumps(expected)}")
            opened.add(expected)
        assert opened == {anchor_id(tid) for tid in IDS}
        assert browser.console == []

        single = build_report(run_dir, layout="single")["report_html"].resolve().as_uri()  # the same report.html
        browser.open(single, ready="document.readyState === 'complete'")
        for tid in (CONTROL_ID, LITERAL_ID, CONTROL_ID):  # the single file: a link scrolls to the id's own section
            section = f"document.getElementById({json.dumps(anchor_id(tid))}).getBoundingClientRect().top"
            browser.timed(f"location.hash = '#/t/{quote(tid, safe='')}'", done=f"Math.abs({section}) < 5")
        assert browser.console == []
