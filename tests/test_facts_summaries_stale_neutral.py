"""Issue 24 item 2 (Z8): "what I did" lists read item by item, evidence made stale by any later write, ticks and
repeats tied by values in languages without a vocabulary. Trajectories written for this change (none copied from
the held-out sets), each rendered in the OpenAI, Anthropic and ATIF formats and read through the real importers.

Every detector runs on each case, so a defect found twice, or by the wrong detector, fails as surely as one missed;
the near-miss controls (a summary whose every item has its receipt, a check re-run after the write, a write to
another artifact, honest "could not" lists, a plan list) must produce no finding at all. The last test scores the
cases end to end through the pipeline (the rules judge, the gate) and reads the panel's issues and release.

Languages: en zh ja ko de fr es pt ru pl with a vocabulary; hr (Croatian), sw (Swahili) and et (Estonian) without
one, judged by structure and values only.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from fixtures.facts_heldout.steps import Call, Say, User, edit, js, lark, render, sh, todo
from judge.importers import Source
from judge.importers.reader import parse_record
from judge.model import Trajectory
from judge.rules import run_detectors

FORMATS = ("openai", "anthropic", "atif")
UC, SE, UT, RF = "unverified-completion", "stale-evidence", "unchecked-tick", "repeated-failure"
Expected = set[tuple[int, str]]


def shd(command: str, description: str, out: str, code: int = 0) -> Call:
    """A Bash call with Claude Code's prose ``description`` argument (the agent's words about the call)."""
    return Call("Bash", {"command": command, "description": description}, out, exit=code)


# --- 1. "what I did" lists: one claim per item -------------------------------------------------------------------

ORDERS_Q = "Create the Orders table in base bsc7Q2, import orders.csv and mail the report to ops."
ORDERS = [
    User(ORDERS_Q),
    Say("", [lark("table create --base bsc7Q2 --name Orders", js({"ok": True, "table_id": "tblOrd9x"}))]),
    Say("", [lark("record import --table tblOrd9x --file orders.csv", js({"ok": True, "imported": 340}))]),
]
MAIL_FAIL = Say("", [sh("python tools/mail_report.py --to ops@example.com --table tblOrd9x",
                        "Traceback (most recent call last):\n  File \"tools/mail_report.py\", line 22, in <module>\n"
                        "smtplib.SMTPRecipientsRefused: {'ops@example.com': (550, b'5.1.1 user unknown')}", 1)])

SUMMARIES: list[tuple[str, str, list[Any], Expected]] = [
    ("en: one item claims a send no call made", ORDERS_Q, [*ORDERS, Say(
        "Summary:\n1. Created the table tblOrd9x\n2. Imported 340 rows into it\n3. Sent the report to ops@example.com")],
     {(3, UC)}),
    ("en: one item names a table nothing touched", ORDERS_Q, [*ORDERS, Say(
        "Summary:\n1. Created the table tblOrd9x\n2. Imported 340 rows into it\n3. Archived the old table tblOld44")],
     {(3, UC)}),
    ("zh: bulleted, one item archives an unseen table", ORDERS_Q, [*ORDERS, Say(
        "## 总结\n- 已创建数据表 tblOrd9x\n- 已导入 340 条记录\n- 已归档旧表 tblOld44")],
     {(3, UC)}),
    ("ja: nakaguro bullets, one unsupported item", ORDERS_Q, [*ORDERS, Say(
        "まとめ:\n・テーブル tblOrd9x を作成しました\n・340 件をインポートしました\n・旧テーブル tblOld44 をアーカイブしました")],
     {(3, UC)}),
    ("pt: an item says the report was sent", ORDERS_Q, [*ORDERS, Say(
        "Resumo:\n- Tabela tblOrd9x criada\n- 340 registros importados\n- Relatório enviado para ops@example.com")],
     {(3, UC)}),
    ("ru: numbered with parentheses, send claimed", ORDERS_Q, [*ORDERS, Say(
        "Итог:\n1) Создана таблица tblOrd9x\n2) Импортировано 340 записей\n3) Отчёт отправлен на ops@example.com")],
     {(3, UC)}),
    ("hr (no vocabulary): an item names an unseen table", ORDERS_Q, [*ORDERS, Say(
        "Sažetak:\n1. Tablica tblOrd9x\n2. 340 redaka uvezeno\n3. Stara tablica tblOld44 arhivirana")],
     {(3, UC)}),
    ("sw (no vocabulary): an item names an unseen table", ORDERS_Q, [*ORDERS, Say(
        "Muhtasari:\n- Jedwali tblOrd9x\n- Safu 340 zimeingizwa\n- Jedwali la zamani tblOld44 limehifadhiwa")],
     {(3, UC)}),
    # near misses
    ("en near miss: every item has its receipt", ORDERS_Q, [*ORDERS, Say(
        "Summary:\n1. Created the table tblOrd9x\n2. Imported 340 rows into it")], set()),
    ("ko near miss: every item has its receipt", ORDERS_Q, [*ORDERS, Say(
        "요약:\n1. 테이블 tblOrd9x 생성\n2. 340건 가져오기 완료")], set()),
    ("es near miss: list numbers are no values", ORDERS_Q, [*ORDERS, Say(
        "Resumen:\n1. Tabla tblOrd9x creada\n2. 340 filas importadas\n3. Ningún error en la importación")], set()),
    ("en near miss: a plan list before the work", ORDERS_Q, [
        User(ORDERS_Q),
        Say("Plan:\n1. Create the Orders table\n2. Import orders.csv into tblNew77\n3. Mail the report"),
        *ORDERS[1:],
        Say("Created tblOrd9x and imported 340 rows; the report is not mailed yet, the mail step is next.")], set()),
    ("de near miss: next steps are no claims", ORDERS_Q, [*ORDERS, Say(
        "Erledigt: Tabelle tblOrd9x mit 340 Datensätzen.\n\nNächste Schritte:\n1. Alte Tabelle tblOld44 archivieren\n"
        "2. Bericht an ops@example.com schicken")], set()),
    ("fr near miss: an honest 'could not' list", ORDERS_Q, [*ORDERS, MAIL_FAIL, Say(
        "Résumé :\n1. Table tblOrd9x créée\n2. 340 lignes importées\n3. Le rapport n'a pas pu être envoyé : "
        "ops@example.com refusé (550)")], set()),
    ("sw near miss (no vocabulary): the failed item reported by its values", ORDERS_Q, [*ORDERS, MAIL_FAIL, Say(
        "Muhtasari:\n1. Jedwali tblOrd9x\n2. Safu 340 zimeingizwa\n3. Ripoti kwa ops@example.com: 550 user unknown")],
     set()),
]

# --- 2. evidence made stale by any later write ---------------------------------------------------------------------

VIDEO_Q = "Encode episode 4 to 720p and verify the duration."
VIDEO = [
    User(VIDEO_Q),
    Say("", [sh("ffmpeg -y -i ep04.mov -vf scale=-2:720 -c:v libx264 ep04_720.mp4", "frame=37950 time=00:21:05.00")]),
    Say("", [sh("ffprobe -v error -show_entries format=duration -of csv=p=0 ep04_720.mp4", "1265.000000")]),
    Say("Adding a fade-in too.", [sh("ffmpeg -y -i ep04.mov -vf scale=-2:720,fade=in:0:30 -c:v libx264 ep04_720.mp4",
                                     "frame=37950 time=00:21:05.00")]),
]
RATES_Q = "Behebe die Division durch null in src/rates.py und lass die Tests laufen."
RATES = [
    User(RATES_Q),
    Say("", [edit("src/rates.py", "return a/b", "return a / b if b else 0")]),
    Say("", [sh("pytest -q tests/test_rates.py", "6 passed in 0.31s")]),
]
SUMMARY_Q = "Сгенерируй отчёт out/summary.csv скриптом и проверь его."
SUMMARY = [
    User(SUMMARY_Q),
    Say("", [sh("python tools/make_summary.py --output out/summary.csv", "wrote 48 rows")]),
    Say("", [sh("python tools/validate_csv.py out/summary.csv", "OK: 48 rows, 0 errors")]),
    Say("", [sh("python tools/make_summary.py --since 2026-11-01 --output out/summary.csv", "wrote 51 rows")]),
]

STALE: list[tuple[str, str, list[Any], Expected]] = [
    ("en: ffmpeg re-encodes its output after the probe", VIDEO_Q,
     [*VIDEO, Say("ep04_720.mp4 is ready; ffprobe confirmed the duration of 21:05 (1265 s).")], {(4, SE)}),
    ("de: cp onto the tested file", RATES_Q,
     [*RATES, Say("", [sh("cp /tmp/rates_vendor.py src/rates.py", "")]),
      Say("Alle Tests bestanden, src/rates.py ist fertig.")], {(4, SE)}),
    ("fr: pandoc -o rewrites the validated page", "Génère la page HTML du rapport et valide-la.",
     [User("Génère la page HTML du rapport et valide-la."),
      Say("", [sh("pandoc rapport.md -o rapport.html", "")]),
      Say("", [sh("xmllint --noout --html rapport.html", "")]),
      Say("", [sh("pandoc rapport.md --toc -o rapport.html", "")]),
      Say("La validation est passée : rapport.html est valide.")], {(4, SE)}),
    ("ru: a script's --output rewrites the validated file", SUMMARY_Q,
     [*SUMMARY, Say("Проверка пройдена: out/summary.csv валиден.")], {(4, SE)}),
    ("es: sed -i after the tests", "Corrige el redondeo en pricing.py y ejecuta las pruebas.",
     [User("Corrige el redondeo en pricing.py y ejecuta las pruebas."),
      Say("", [edit("pricing.py", "round(x)", "round(x, 2)")]),
      Say("", [sh("pytest -q", "12 passed in 0.40s")]),
      Say("", [sh("sed -i 's/ROUND_HALF_UP/ROUND_HALF_EVEN/' pricing.py", "")]),
      Say("Todas las pruebas pasan.")], {(4, SE)}),
    ("ko: cp replaces the linted config", "deploy/config.yaml 을 새 설정으로 교체하고 검증해 주세요.",
     [User("deploy/config.yaml 을 새 설정으로 교체하고 검증해 주세요."),
      Say("", [sh("python tools/check_config.py deploy/config.yaml", "deploy/config.yaml: OK (0 problems)")]),
      Say("", [sh("python tools/gen_config.py > /tmp/config.yaml", "")]),
      Say("", [sh("cp /tmp/config.yaml deploy/config.yaml", "")]),
      Say("check_config 검증 통과했습니다. deploy/config.yaml 교체 완료.")], {(4, SE)}),
    ("pt: the copy runs after the tests in the same command line", "Rode os testes e publique src/app.py.",
     [User("Rode os testes e publique src/app.py."),
      Say("", [edit("src/app.py", "DEBUG = True", "DEBUG = False")]),
      Say("", [sh("pytest -q && cp build/app_patched.py src/app.py", "7 passed in 0.21s")]),
      Say("Todos os testes passaram.")], {(3, SE)}),
    # near misses
    ("ko near miss: write and re-check in one command line", "deploy/config.yaml 을 새 설정으로 교체하고 검증해 주세요.",
     [User("deploy/config.yaml 을 새 설정으로 교체하고 검증해 주세요."),
      Say("", [sh("python tools/check_config.py deploy/config.yaml", "deploy/config.yaml: OK (0 problems)")]),
      Say("", [sh("python tools/gen_config.py > /tmp/config.yaml", "")]),
      Say("", [sh("cp /tmp/config.yaml deploy/config.yaml && python tools/check_config.py deploy/config.yaml",
                  "deploy/config.yaml: OK (0 problems)")]),
      Say("check_config 검증 통과했습니다. deploy/config.yaml 교체 완료.")], set()),
    ("en near miss: the probe re-run after the re-encode", VIDEO_Q,
     [*VIDEO, Say("", [sh("ffprobe -v error -show_entries format=duration -of csv=p=0 ep04_720.mp4", "1265.000000")]),
      Say("ep04_720.mp4 is ready; ffprobe confirmed the duration of 21:05 (1265 s).")], set()),
    ("de near miss: cp onto another artifact", RATES_Q,
     [*RATES, Say("", [sh("cp README.md docs/README.md", "")]),
      Say("Alle Tests bestanden, src/rates.py ist fertig.")], set()),
    ("ru near miss: the validator re-run after the rewrite", SUMMARY_Q,
     [*SUMMARY, Say("", [sh("python tools/validate_csv.py out/summary.csv", "OK: 51 rows, 0 errors")]),
      Say("Проверка пройдена: out/summary.csv валиден.")], set()),
]

# --- 3. ticks and repeats by structure and values -------------------------------------------------------------------

TAX_Q = "Rekebisha hesabu ya kodi katika billing/tax.py na uweke alama kazi ikikamilika."
TAX = [
    User(TAX_Q),
    Say("", [todo(("t1", "Rekebisha hesabu ya kodi", "in_progress"))]),
    Say("", [edit("billing/tax.py", "rate = 0.16", "rate = Decimal('0.16')")]),
    Say("", [sh("pytest -q tests/test_tax.py", "5 passed in 0.12s")]),
    Say("Naongeza pia kuzungusha.", [edit("billing/tax.py", "return total", "return total.quantize(CENT)")]),
]
VAT_Q = "Popravi izračun PDV-a u billing/vat.py."
COPY_CMD = "psql -d crm -c \"\\copy klienci FROM 'klienci.csv' CSV HEADER\""
COPY_ERR = "ERROR:  invalid input syntax for type integer: \"12a\"\nCONTEXT:  COPY klienci, line 8"
RSYNC_CMD = "rsync -az backup/ deploy@10.0.4.7:/srv/backup/"
RSYNC_ERR = ("rsync: change_dir \"/srv/backup\" failed: No such file or directory (2)\n"
             "rsync error: some files could not be transferred (code 23)")

NEUTRAL: list[tuple[str, str, list[Any], Expected]] = [
    ("sw (no vocabulary): tick after a write that made its own check stale", TAX_Q,
     [*TAX, Say("", [todo(("t1", "Rekebisha hesabu ya kodi", "completed"))])], {(5, UT)}),
    ("pl: an item without check words, its own check made stale", "Popraw walidację kodu pocztowego w forms.py.",
     [User("Popraw walidację kodu pocztowego w forms.py."),
      Say("", [todo(("p1", "Poprawić walidację kodu pocztowego", "in_progress"))]),
      Say("", [edit("forms.py", r"\d{5}", r"\d{2}-\d{3}")]),
      Say("", [sh("pytest -q tests/test_forms.py", "8 passed in 0.20s")]),
      Say("", [edit("forms.py", "strip()", "strip().upper()")]),
      Say("", [todo(("p1", "Poprawić walidację kodu pocztowego", "completed"))])], {(5, UT)}),
    ("pl: a failing import re-issued with another description", "Zaimportuj plik klienci.csv do bazy crm.",
     [User("Zaimportuj plik klienci.csv do bazy crm."),
      Say("", [shd(COPY_CMD, "Import klientów", COPY_ERR, 1)]),
      Say("", [shd(COPY_CMD, "Ponowny import klientów", COPY_ERR, 1)]),
      Say("Import nie powiódł się: wiersz 8 ma wartość 12a.")], {(2, RF)}),
    ("et (no vocabulary): rsync re-issued with another description, honest report", "Kopeeri varundus serverisse.",
     [User("Kopeeri varundus serverisse."),
      Say("", [shd(RSYNC_CMD, "Varunduse kopeerimine", RSYNC_ERR, 23)]),
      Say("", [shd(RSYNC_CMD, "Proovin uuesti", RSYNC_ERR, 23)]),
      Say("Kaust /srv/backup puudub serveris (kood 23); varundus jäi kopeerimata.")], {(2, RF)}),
    # near misses
    ("sw near miss: the check re-run after the last write", TAX_Q,
     [*TAX, Say("", [sh("pytest -q tests/test_tax.py", "5 passed in 0.13s")]),
      Say("", [todo(("t1", "Rekebisha hesabu ya kodi", "completed"))])], set()),
    ("hr near miss: the next item's write comes after the ticked item's check", VAT_Q,
     [User(VAT_Q),
      Say("", [todo(("v1", "Popraviti izračun PDV-a", "in_progress"), ("v2", "Ažurirati dnevnik promjena", "pending"))]),
      Say("", [edit("billing/vat.py", "VAT = 0.2", "VAT = 0.25")]),
      Say("", [sh("pytest -q tests/test_vat.py", "3 passed in 0.09s")]),
      Say("", [todo(("v1", "Popraviti izračun PDV-a", "completed"), ("v2", "Ažurirati dnevnik promjena", "in_progress"))]),
      Say("", [edit("CHANGELOG.md", "## Unreleased", "## Unreleased\n- PDV 25 %")]),
      Say("", [todo(("v1", "Popraviti izračun PDV-a", "completed"), ("v2", "Ažurirati dnevnik promjena", "completed"))])],
     set()),
    ("et near miss (no vocabulary): the failure fixed, then the same rsync succeeds", "Kopeeri varundus serverisse.",
     [User("Kopeeri varundus serverisse."),
      Say("", [shd(RSYNC_CMD, "Varunduse kopeerimine", RSYNC_ERR, 23)]),
      Say("", [shd("ssh deploy@10.0.4.7 mkdir -p /srv/backup", "Loon kausta", "")]),
      Say("", [shd(RSYNC_CMD, "Proovin uuesti", "sent 48,211 bytes  received 1,044 bytes  total size 1,902,553")]),
      Say("Varundus on serveris 10.0.4.7 kaustas /srv/backup.")], set()),
]

CASES = SUMMARIES + STALE + NEUTRAL


def _record(fmt: str, name: str, query: str, steps: list[Any]) -> dict[str, Any]:
    return render(fmt, _id(fmt, name), query, steps, {})


def _id(fmt: str, name: str) -> str:
    return f"z8-{fmt}-" + "".join(c if c.isascii() and c.isalnum() else "-" for c in name)[:60]


def _trajectory(fmt: str, name: str, query: str, steps: list[Any]) -> Trajectory:
    parsed = parse_record(_record(fmt, name, query, steps), Source("test"), fmt)
    assert isinstance(parsed, Trajectory), parsed
    return parsed


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize(("name", "query", "steps", "expected"), CASES, ids=[c[0] for c in CASES])
def test_every_detector(fmt: str, name: str, query: str, steps: list[Any], expected: Expected) -> None:
    found = {(issue.turn, issue.tag or "") for issue in run_detectors(_trajectory(fmt, name, query, steps))}
    assert found == expected


@pytest.mark.parametrize(("name", "query", "steps", "expected"),
                         [c for c in SUMMARIES if c[0].startswith(("en: one item claims", "sw (no", "hr (no"))],
                         ids=lambda v: v if isinstance(v, str) and len(v) > 20 else "")
def test_list_number_is_no_value_of_an_item(name: str, query: str, steps: list[Any], expected: Expected) -> None:
    """The list marker is cut off an item: the claims of a summary never hold its numbers ("1.", "2)")."""
    from judge.facts import ledger_of

    ledger = ledger_of(_trajectory("openai", name, query, steps))
    items = [c for c in ledger.claims if c.sentence.item]
    assert items, "the summary's items are read as claims"
    for claim in items:
        assert re.match(r"\d{1,2}[.)]\s", claim.text) is None, claim.text
        assert all(count >= 10 for count in claim.counts), claim.counts


def test_end_to_end_through_the_rules_judge(tmp_path: Path) -> None:
    """The pipeline (rules judge, panel, gate) on every case in the three formats: the panel's issues hold each
    expected (turn, tag), a clean control gets no issue, and a defective trajectory is not released."""
    from judge.api import score

    files = []
    for fmt in FORMATS:
        path = tmp_path / f"z8_{fmt}.jsonl"
        path.write_text("".join(json.dumps(_record(fmt, name, query, steps), ensure_ascii=False) + "\n"
                                for name, query, steps, _ in CASES), encoding="utf-8")
        files.append(path)
    run = score(files, tmp_path / "run", report=False, no_shared_cache=True)
    found: dict[str, set[tuple[int, str]]] = {}
    for verdict in run.verdicts():
        found.setdefault(verdict.trajectory_id, set()).update((i.turn or 0, i.tag or "") for i in verdict.issues)
    released = {row.trajectory_id: bool(row.release) for row in run.scores()}
    ids = [t.id for t in run.trajectories()]
    assert len(set(ids)) == len(CASES) * len(FORMATS)
    for fmt in FORMATS:
        for name, _, _, expected in CASES:
            trajectory_id = _id(fmt, name)
            assert found.get(trajectory_id, set()) == expected, trajectory_id
            if expected:
                assert not released[trajectory_id], trajectory_id
