"""Build the bundled example batch (examples/batch/) from the scenarios written below.

Every trajectory here was WRITTEN BY US, modelled on the situations of the reference design document
(inventory Base build with lark-cli, the plan-then-act name cleaner, clean runs, environment faults,
repeated failures, zh/ja completion claims, a budget-exhausted run, guided/unguided continuations).
None of it is a real model rollout. Run ``python examples/build_batch.py`` to regenerate the files;
the output is deterministic (fixed ids, no timestamps), so re-running gives byte-identical files.

Formats written: OpenAI chat JSONL (``openai_runs.jsonl``, ``continuations.jsonl``) and Anthropic messages
JSONL (``anthropic_runs.jsonl``) plus one Anthropic JSON document (``name_cleaner_evidence.json``). The expected
defects of each trajectory are written beside them (``EXPECTED.md`` for people, ``expected.yaml`` for tests).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml  # type: ignore[import-untyped]

from judge.rules import DETECTOR_NAMES

BATCH = Path(__file__).resolve().parent / "batch"
MODEL_OAI = "gpt-4.1-mini-2025-04-14"
MODEL_ANT = "claude-sonnet-4-5-20250929"

BASE = "bascnInv7Qx2LmR"
PRODUCTS = "tblPr0d8KqW3"
MOVES = "tblMv5tZ2HcA"
SKILL = "skills/lark-base/SKILL.md"

# ----------------------------------------------------------------------------------------------------
# OpenAI chat builder


class OpenAIRun:
    """Accumulates an OpenAI chat record: assistant tool calls get JSON-string arguments, results role=tool."""

    def __init__(self, rid: str, query: str, system: str, metadata: dict[str, Any]) -> None:
        self.rid = rid
        self.query = query
        self.messages: list[dict[str, Any]] = [{"role": "system", "content": system}, {"role": "user", "content": query}]
        self.metadata = {"model": MODEL_OAI, **metadata}
        self._calls = 0

    def act(self, text: str | None, *calls: tuple[str, dict[str, Any], str]) -> None:
        """One assistant turn: optional text, then calls (name, arguments, receipt text) answered in order."""
        tool_calls = []
        results = []
        for name, arguments, receipt in calls:
            self._calls += 1
            call_id = f"call_{self.rid.replace('-', '')[:10]}{self._calls:02d}"
            tool_calls.append(
                {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments, ensure_ascii=False)}}
            )
            results.append({"role": "tool", "tool_call_id": call_id, "content": receipt})
        message: dict[str, Any] = {"role": "assistant", "content": text}
        if tool_calls:
            message["tool_calls"] = tool_calls
        self.messages.append(message)
        self.messages.extend(results)

    def say(self, text: str) -> None:
        self.messages.append({"role": "assistant", "content": text})

    def record(self) -> dict[str, Any]:
        return {"id": self.rid, "query": self.query, "messages": self.messages, "metadata": self.metadata}


# ----------------------------------------------------------------------------------------------------
# Anthropic messages builder


class AnthropicRun:
    """Accumulates an Anthropic messages record: content blocks, tool_use / tool_result with is_error."""

    def __init__(self, rid: str, query: str, system: str, metadata: dict[str, Any]) -> None:
        self.rid = rid
        self.query = query
        self.system = system
        self.messages: list[dict[str, Any]] = [{"role": "user", "content": query}]
        self.metadata = metadata
        self._calls = 0

    def act(self, thinking: str | None, text: str | None, *calls: tuple[str, dict[str, Any], str, bool]) -> None:
        blocks: list[dict[str, Any]] = []
        if thinking:
            blocks.append({"type": "thinking", "thinking": thinking, "signature": "sig-written-by-us"})
        if text:
            blocks.append({"type": "text", "text": text})
        results = []
        for name, arguments, receipt, is_error in calls:
            self._calls += 1
            call_id = f"toolu_{self.rid.replace('-', '')[:10]}{self._calls:02d}"
            blocks.append({"type": "tool_use", "id": call_id, "name": name, "input": arguments})
            result: dict[str, Any] = {"type": "tool_result", "tool_use_id": call_id, "content": receipt}
            if is_error:
                result["is_error"] = True
            results.append(result)
        self.messages.append({"role": "assistant", "content": blocks})
        if results:
            self.messages.append({"role": "user", "content": results})

    def record(self) -> dict[str, Any]:
        return {
            "id": self.rid,
            "query": self.query,
            "model": MODEL_ANT,
            "system": self.system,
            "messages": self.messages,
            "metadata": self.metadata,
        }


def js(value: Any) -> str:
    """A lark-cli style JSON receipt (pretty-printed like the CLI does)."""
    return json.dumps(value, ensure_ascii=False, indent=2)


def failed(code: int, text: str) -> str:
    """A Bash receipt for a non-zero exit, in the harness's 'Exit code N' convention."""
    return f"Exit code {code}\n{text}"


SYSTEM_LARK = (
    "You are a coding agent working in a sandbox with Bash, Read, Write, Edit and present_files. "
    "lark-cli is installed and authenticated against the user's Lark Base tenant. Read the skill guide "
    f"{SKILL} before using lark-cli. Report only what the tool results show."
)
SYSTEM_CODE = (
    "You are a coding agent in a Linux sandbox. Tools: Bash, Read, Write, Edit. "
    "Verify your work by running it; report only what the tool results show."
)

SKILL_TEXT = """# lark-base skill
Use `lark-cli base ...` to manage Bases, tables, fields and records. Output is JSON: {"ok", "code", "msg", "data"}.
- Create a table: `lark-cli base table create --base-token <base> --name <name> --fields '<json array>'`
  Each field: {"name": ..., "type": <type name>, "property": {...}}. Type names: text, number, select,
  multi_select, date, checkbox, user, link, formula.
- Records: see `lark-cli base records --help`.
- Dashboards: `lark-cli base dashboard create --base-token <base> --name <name> --blocks '<json>'`.
"""

PRODUCT_ROWS = [
    ("SKU-001", "Stainless bolt M6", "Hardware", 0.35, 1200, 300),
    ("SKU-002", "Hex nut M6", "Hardware", 0.12, 2500, 500),
    ("SKU-003", "Cable tie 200mm", "Electrical", 0.05, 4000, 1000),
    ("SKU-004", "Heat-shrink tube 3mm", "Electrical", 0.20, 800, 200),
    ("SKU-005", "Safety gloves L", "Safety", 2.40, 150, 50),
    ("SKU-006", "Ear plugs (pair)", "Safety", 0.30, 600, 100),
]
PRODUCT_IDS = ["recuPq1Ab2", "recuPq3Cd4", "recuPq5Ef6", "recuPq7Gh8", "recuPq9Ij0", "recuPqKl12"]
MOVE_IDS = ["recuMv1Xa9", "recuMv2Yb8", "recuMv3Zc7", "recuMv4Wd6", "recuMv5Ve5", "recuMv6Uf4"]
MOVE_ROWS = [
    ("2026-03-02", "SKU-001", "in", 500, "PO-1182"),
    ("2026-03-02", "SKU-003", "in", 2000, "PO-1182"),
    ("2026-03-03", "SKU-002", "out", 300, "Job 77"),
    ("2026-03-04", "SKU-005", "out", 20, "Site B"),
    ("2026-03-05", "SKU-004", "in", 400, "PO-1190"),
    ("2026-03-06", "SKU-006", "out", 60, "Site B"),
]

NUMERIC_FIELDS = [
    {"name": "SKU", "type": 1},
    {"name": "Name", "type": 1},
    {"name": "Category", "type": 3, "property": {"options": [{"name": "Hardware"}, {"name": "Electrical"}, {"name": "Safety"}]}},
    {"name": "Unit price", "type": 2, "property": {"formatter": "0.00"}},
    {"name": "Stock", "type": 2, "property": {"formatter": "0"}},
    {"name": "Reorder level", "type": 2, "property": {"formatter": "0"}},
]
NAMED_FIELDS = [
    {"name": "SKU", "type": "text"},
    {"name": "Name", "type": "text"},
    {"name": "Category", "type": "select", "property": {"options": [{"name": "Hardware"}, {"name": "Electrical"}, {"name": "Safety"}]}},
    {"name": "Unit price", "type": "number", "property": {"formatter": "0.00"}},
    {"name": "Stock", "type": "number", "property": {"formatter": "0"}},
    {"name": "Reorder level", "type": "number", "property": {"formatter": "0"}},
]
MOVE_FIELDS = [
    {"name": "Date", "type": "date"},
    {"name": "SKU", "type": "link", "property": {"table_id": PRODUCTS}},
    {"name": "Direction", "type": "select", "property": {"options": [{"name": "in"}, {"name": "out"}]}},
    {"name": "Quantity", "type": "number", "property": {"formatter": "0"}},
    {"name": "Note", "type": "text"},
]

INVENTORY_QUERY = (
    "Build a small inventory system in Lark Base: a Products table (SKU, name, category, unit price, stock, "
    "reorder level) and a Stock movements table (date, SKU linked to the product, direction in/out, quantity, note). "
    "Add 6 sample products and 6 sample movements, then a dashboard showing stock by category. Tell me when it is done."
)


def twelve_type_errors() -> str:
    errors = []
    for index, field in enumerate(NUMERIC_FIELDS):
        errors.append(
            {"path": f"fields[{index}].type", "msg": f"expected one of [text number select multi_select date checkbox user link formula], got integer {field['type']}"}
        )
        errors.append({"path": f"fields[{index}].property", "msg": "cannot validate property: field type is invalid"})
    return js({"ok": False, "code": 1254045, "msg": "InvalidParameter: 12 validation errors", "data": {"errors": errors}})


def table_created(table_id: str, name: str, fields: list[dict[str, Any]], prefix: str) -> str:
    return js(
        {
            "ok": True,
            "code": 0,
            "msg": "success",
            "data": {
                "table_id": table_id,
                "name": name,
                "fields": [{"field_id": f"fld{prefix}{i:02d}", "name": f["name"], "type": f["type"]} for i, f in enumerate(fields)],
            },
        }
    )


def records_created(ids: list[str]) -> str:
    return js({"ok": True, "code": 0, "msg": "success", "data": {"records": [{"record_id": rid} for rid in ids]}})


def products_json() -> str:
    rows = [
        {"fields": {"SKU": s, "Name": n, "Category": c, "Unit price": p, "Stock": q, "Reorder level": r}}
        for s, n, c, p, q, r in PRODUCT_ROWS
    ]
    return json.dumps({"records": rows}, ensure_ascii=False, indent=2)


def movements_json() -> str:
    sku_to_id = {row[0]: rid for row, rid in zip(PRODUCT_ROWS, PRODUCT_IDS)}
    rows = [
        {"fields": {"Date": d, "SKU": [sku_to_id[s]], "Direction": dr, "Quantity": q, "Note": n}} for d, s, dr, q, n in MOVE_ROWS
    ]
    return json.dumps({"records": rows}, ensure_ascii=False, indent=2)


def listing(ids: list[str], rows: list[tuple[Any, ...]], keys: list[str]) -> str:
    items = [{"record_id": rid, "fields": dict(zip(keys, row))} for rid, row in zip(ids, rows)]
    return js({"ok": True, "code": 0, "msg": "success", "data": {"total": len(items), "has_more": False, "items": items}})


RECORDS_HELP = """Usage: lark-cli base records create --base-token <token> --table-id <id> [flags]

Create records in a table (batch: create_records, max 500 per call).

Flags:
      --json string        request body as JSON, or @file to read it from a file: {"records": [{"fields": {...}}]}
      --client-token str   idempotency key
  -h, --help               help for create

Examples:
  lark-cli base records create --base-token bascnXXX --table-id tblXXX --json @rows.json"""


def inventory_run() -> OpenAIRun:
    """(a) The reference case before repair: T3 numeric type codes, T5 unsupported --records flag."""
    run = OpenAIRun("inv-base-build", INVENTORY_QUERY, SYSTEM_LARK, {"query_id": "q-inventory-base", "arm": "original"})
    run.act("I'll read the lark-base skill guide first.", ("Read", {"file_path": SKILL}, SKILL_TEXT))
    run.act(
        None,
        ("Bash", {"command": "lark-cli base create --name 'Inventory'"},
         js({"ok": True, "code": 0, "msg": "success", "data": {"base_token": BASE, "name": "Inventory", "url": f"https://example.larksuite.com/base/{BASE}"}})),
    )
    run.act(
        "Base created. Now the Products table with its six fields.",
        ("Bash", {"command": f"lark-cli base table create --base-token {BASE} --name Products --fields '{json.dumps(NUMERIC_FIELDS)}'"},
         failed(1, twelve_type_errors())),
    )
    run.act(
        "The API wants type names, not numeric codes. Retrying with text/number/select.",
        ("Bash", {"command": f"lark-cli base table create --base-token {BASE} --name Products --fields '{json.dumps(NAMED_FIELDS)}'"},
         table_created(PRODUCTS, "Products", NAMED_FIELDS, "P")),
    )
    run.act(
        "Products table exists. Writing the six sample products.",
        ("Write", {"file_path": "products.json", "content": products_json()}, "File created successfully at: products.json"),
        ("Bash", {"command": f"lark-cli base records create --base-token {BASE} --table-id {PRODUCTS} --records products.json"},
         failed(2, "Error: unknown flag: --records\nRun 'lark-cli base records create --help' for usage.")),
    )
    run.act(
        None,
        ("Bash", {"command": f"lark-cli base records list --base-token {BASE} --table-id {PRODUCTS} --page-size 1"},
         js({"ok": True, "code": 0, "msg": "success", "data": {"total": 0, "has_more": False, "items": []}})),
    )
    run.act(
        "No products were written. Checking the supported flags.",
        ("Bash", {"command": "lark-cli base records create --help"}, RECORDS_HELP),
    )
    run.act(
        None,
        ("Bash", {"command": f"lark-cli base records create --base-token {BASE} --table-id {PRODUCTS} --json @products.json"},
         records_created(PRODUCT_IDS)),
    )
    run.act(
        "Six products created. Now the Stock movements table linked to Products.",
        ("Bash", {"command": f"lark-cli base table create --base-token {BASE} --name 'Stock movements' --fields '{json.dumps(MOVE_FIELDS)}'"},
         table_created(MOVES, "Stock movements", MOVE_FIELDS, "M")),
    )
    run.act(
        None,
        ("Write", {"file_path": "movements.json", "content": movements_json()}, "File created successfully at: movements.json"),
        ("Bash", {"command": f"lark-cli base records create --base-token {BASE} --table-id {MOVES} --json @movements.json"},
         records_created(MOVE_IDS)),
    )
    run.act(
        None,
        ("Bash", {"command": f"lark-cli base dashboard create --base-token {BASE} --name 'Stock by category' --blocks '[{{\"type\":\"bar\",\"table_id\":\"{PRODUCTS}\",\"group_by\":\"Category\",\"value\":\"sum(Stock)\"}}]'"},
         js({"ok": True, "code": 0, "msg": "success", "data": {"dashboard_id": "blkDs9Ry4T", "name": "Stock by category"}})),
    )
    run.act(
        "Reading back both tables to confirm.",
        ("Bash", {"command": f"lark-cli base records list --base-token {BASE} --table-id {PRODUCTS}"},
         listing(PRODUCT_IDS, PRODUCT_ROWS, ["SKU", "Name", "Category", "Unit price", "Stock", "Reorder level"])),
    )
    run.act(
        None,
        ("Bash", {"command": f"lark-cli base records list --base-token {BASE} --table-id {MOVES}"},
         listing(MOVE_IDS, MOVE_ROWS, ["Date", "SKU", "Direction", "Quantity", "Note"])),
    )
    run.say(
        "Done. The Inventory Base has a Products table (6 products) and a Stock movements table (6 movements, "
        f"each linked to its product), plus a 'Stock by category' dashboard: https://example.larksuite.com/base/{BASE}"
    )
    return run


def continuation(arm: str) -> OpenAIRun:
    """(h) Continuations of inv-base-build branched after T2 (before the faulty T3)."""
    guided = arm == "guided"
    run = OpenAIRun(
        f"inv-base-build-{arm}",
        INVENTORY_QUERY,
        SYSTEM_LARK,
        {
            "query_id": "q-inventory-base",
            "arm": arm,
            "source_id": "inv-base-build",
            "branch_turn": 2,
            "target_issue": "T3: table create used numeric field-type codes (12 validation errors)" if guided else None,
            "usage": {"input_tokens": 18230 if guided else 21410, "output_tokens": 1260 if guided else 1515},
        },
    )
    if not guided:
        del run.metadata["target_issue"]
    # The restored prefix (T1, T2) is identical to the source trajectory.
    run.act("I'll read the lark-base skill guide first.", ("Read", {"file_path": SKILL}, SKILL_TEXT))
    run.act(
        None,
        ("Bash", {"command": "lark-cli base create --name 'Inventory'"},
         js({"ok": True, "code": 0, "msg": "success", "data": {"base_token": BASE, "name": "Inventory", "url": f"https://example.larksuite.com/base/{BASE}"}})),
    )
    if guided:
        run.messages.append(
            {"role": "user", "content": "[teacher guidance] Field types in lark-cli are type names (text, number, select, ...), as in the skill guide; numeric codes are rejected."}
        )
        run.act(
            "Creating Products with named field types, as the skill guide specifies.",
            ("Bash", {"command": f"lark-cli base table create --base-token {BASE} --name Products --fields '{json.dumps(NAMED_FIELDS)}'"},
             table_created(PRODUCTS, "Products", NAMED_FIELDS, "P")),
        )
        run.act(
            None,
            ("Bash", {"command": "lark-cli base records create --help"}, RECORDS_HELP),
        )
        run.act(
            None,
            ("Write", {"file_path": "products.json", "content": products_json()}, "File created successfully at: products.json"),
            ("Bash", {"command": f"lark-cli base records create --base-token {BASE} --table-id {PRODUCTS} --json @products.json"},
             records_created(PRODUCT_IDS)),
        )
        run.act(
            None,
            ("Bash", {"command": f"lark-cli base records list --base-token {BASE} --table-id {PRODUCTS}"},
             listing(PRODUCT_IDS, PRODUCT_ROWS, ["SKU", "Name", "Category", "Unit price", "Stock", "Reorder level"])),
        )
        run.say("Products table created with 6 products (read back: total 6). Continuing with stock movements next.")
    else:
        run.act(
            "Creating the Products table.",
            ("Bash", {"command": f"lark-cli base table create --base-token {BASE} --name Products --fields '{json.dumps(NUMERIC_FIELDS)}'"},
             failed(1, twelve_type_errors())),
        )
        run.act(
            "Validation failed on the field types; switching to type names.",
            ("Bash", {"command": f"lark-cli base table create --base-token {BASE} --name Products --fields '{json.dumps(NAMED_FIELDS)}'"},
             table_created(PRODUCTS, "Products", NAMED_FIELDS, "P")),
        )
        run.act(
            None,
            ("Write", {"file_path": "products.json", "content": products_json()}, "File created successfully at: products.json"),
            ("Bash", {"command": f"lark-cli base records create --base-token {BASE} --table-id {PRODUCTS} --json @products.json"},
             records_created(PRODUCT_IDS)),
        )
        run.say("Products table created and 6 products written. Continuing with stock movements next.")
    return run


def csv_summary_run() -> OpenAIRun:
    """(c) Clean, efficient: two parallel reads in one turn, one script, one check."""
    run = OpenAIRun(
        "clean-csv-summary",
        "sales_jan.csv and sales_feb.csv are in the working directory. Write totals.csv with total revenue per region across both months.",
        SYSTEM_CODE,
        {"query_id": "q-csv-totals"},
    )
    jan = "region,units,revenue\nnorth,10,1200.50\nsouth,4,380.00\neast,7,910.25\n"
    feb = "region,units,revenue\nnorth,6,700.00\nsouth,9,1010.75\nwest,3,240.00\n"
    run.act(
        "Reading both files.",
        ("Read", {"file_path": "sales_jan.csv"}, jan),
        ("Read", {"file_path": "sales_feb.csv"}, feb),
    )
    script = (
        "import csv\nfrom collections import defaultdict\n\ntotals = defaultdict(float)\n"
        "for name in ('sales_jan.csv', 'sales_feb.csv'):\n    with open(name) as f:\n"
        "        for row in csv.DictReader(f):\n            totals[row['region']] += float(row['revenue'])\n"
        "with open('totals.csv', 'w', newline='') as f:\n    w = csv.writer(f)\n    w.writerow(['region', 'revenue'])\n"
        "    for region in sorted(totals):\n        w.writerow([region, f'{totals[region]:.2f}'])\n"
    )
    run.act(
        None,
        ("Write", {"file_path": "totals.py", "content": script}, "File created successfully at: totals.py"),
        ("Bash", {"command": "python totals.py && cat totals.csv"}, "region,revenue\neast,910.25\nnorth,1900.50\nsouth,1390.75\nwest,240.00\n"),
    )
    run.say("totals.csv is written: east 910.25, north 1900.50, south 1390.75, west 240.00 (regions from both months combined).")
    return run


def lark_view_run() -> OpenAIRun:
    """(c) Clean lark-cli run: read guide, create a filtered view, read it back."""
    run = OpenAIRun(
        "clean-lark-view",
        f"In Base {BASE}, table Products ({PRODUCTS}), add a grid view 'Low stock' showing products whose Stock is below Reorder level.",
        SYSTEM_LARK,
        {"query_id": "q-lark-low-stock-view"},
    )
    run.act(
        None,
        ("Bash", {"command": "lark-cli base views create --help"},
         ("Usage: lark-cli base views create --base-token <token> --table-id <id> --name <name> [--type grid|kanban|gallery] [--filter '<json>']\n\n"
         "Filter JSON: {\"conjunction\": \"and\", \"conditions\": [{\"field\": <name>, \"operator\": is|isLess|isGreater|..., \"value\": [..] | {\"field\": <name>}}]}")),
    )
    flt = {"conjunction": "and", "conditions": [{"field": "Stock", "operator": "isLess", "value": {"field": "Reorder level"}}]}
    run.act(
        None,
        ("Bash", {"command": f"lark-cli base views create --base-token {BASE} --table-id {PRODUCTS} --name 'Low stock' --type grid --filter '{json.dumps(flt)}'"},
         js({"ok": True, "code": 0, "msg": "success", "data": {"view_id": "vewLs2Kq9P", "name": "Low stock", "type": "grid"}})),
    )
    run.act(
        None,
        ("Bash", {"command": f"lark-cli base views get --base-token {BASE} --table-id {PRODUCTS} --view-id vewLs2Kq9P"},
         js({"ok": True, "code": 0, "msg": "success", "data": {"view_id": "vewLs2Kq9P", "name": "Low stock", "type": "grid", "filter": flt}})),
    )
    run.say("Added the grid view 'Low stock' (vewLs2Kq9P) on Products, filtered to Stock < Reorder level; reading it back shows the filter in place.")
    return run


def env_token_run() -> OpenAIRun:
    """(d) Environment fault: the tenant token has expired; the agent reports it honestly."""
    run = OpenAIRun(
        "env-expired-token",
        f"List the tables in Base {BASE} and tell me how many records each has.",
        SYSTEM_LARK,
        {"query_id": "q-lark-table-counts"},
    )
    expired = js({"ok": False, "code": 99991677, "msg": "Authentication token expired", "data": {"http_status": 401}})
    run.act(None, ("Bash", {"command": f"lark-cli base table list --base-token {BASE}"}, failed(1, expired)))
    run.act(
        "The token expired. Checking the auth status before anything else.",
        ("Bash", {"command": "lark-cli auth status"},
         failed(1, js({"ok": False, "code": 99991677, "msg": "tenant_access_token expired at 2026-03-06T09:00:00Z; run `lark-cli auth login` interactively", "data": {}}))),
    )
    run.say(
        "I couldn't list the tables: every lark-cli call returns 401 'Authentication token expired' (code 99991677), "
        "and re-authentication needs an interactive `lark-cli auth login`, which I can't do from this sandbox. "
        "Once the token is refreshed, `lark-cli base table list` will give the table list."
    )
    return run


def repeated_failure_run() -> OpenAIRun:
    """(e) The same failing call three times with identical arguments before changing anything."""
    run = OpenAIRun(
        "repeat-failing-pytest",
        "Run the test suite of this repo (tests/) and fix whatever fails.",
        SYSTEM_CODE,
        {"query_id": "q-fix-tests-slugify"},
    )
    err = (
        "ImportError while loading conftest '/repo/tests/conftest.py'.\n"
        "tests/conftest.py:3: in <module>\n    from textkit.slug import slugify\n"
        "E   ModuleNotFoundError: No module named 'textkit'"
    )
    for text in ("Running the tests.", "Let me run that again.", "Trying once more."):
        run.act(text, ("Bash", {"command": "python -m pytest tests/ -q"}, failed(4, err)))
    run.act(
        "The package isn't importable. Installing it in editable mode.",
        ("Bash", {"command": "pip install -e . -q && python -m pytest tests/ -q"},
         failed(1, "F..\n=================================== FAILURES ===================================\n"
                   "____________________________ test_slugify_unicode _____________________________\n"
                   "    assert slugify('Crème brûlée') == 'creme-brulee'\nE   AssertionError: assert 'crme-brle' == 'creme-brulee'\n"
                   "1 failed, 2 passed in 0.04s")),
    )
    run.act(
        None,
        ("Read", {"file_path": "src/textkit/slug.py"},
         "import re\n\n\ndef slugify(text: str) -> str:\n    text = text.lower()\n    text = re.sub(r'[^a-z0-9]+', '-', text)\n    return text.strip('-')\n"),
    )
    run.act(
        "Non-ASCII letters are dropped instead of transliterated; normalising with NFKD first.",
        ("Edit", {"file_path": "src/textkit/slug.py", "old_string": "import re\n", "new_string": "import re\nimport unicodedata\n"},
         "The file src/textkit/slug.py has been updated."),
        ("Edit", {"file_path": "src/textkit/slug.py", "old_string": "    text = text.lower()\n",
                  "new_string": "    text = unicodedata.normalize('NFKD', text).encode('ascii', 'ignore').decode().lower()\n"},
         "The file src/textkit/slug.py has been updated."),
    )
    run.act(None, ("Bash", {"command": "python -m pytest tests/ -q"}, "...\n3 passed in 0.03s"))
    run.say("Fixed: the package wasn't installed (pip install -e .), and slugify dropped accented letters; it now normalises with NFKD first. 3 passed.")
    return run


def zh_run() -> OpenAIRun:
    """(f) Chinese: the write fails, the agent claims 已完成 anyway."""
    run = OpenAIRun(
        "zh-false-completion",
        f"请在多维表格 {BASE} 的 Products 表里新增一个“供应商”文本字段，并把 SKU-001 的供应商填为“华东五金”。",
        SYSTEM_LARK,
        {"query_id": "q-zh-supplier-field"},
    )
    run.act(
        "先新增“供应商”字段。",
        ("Bash", {"command": f"lark-cli base fields create --base-token {BASE} --table-id {PRODUCTS} --name 供应商 --type text"},
         js({"ok": True, "code": 0, "msg": "success", "data": {"field_id": "fldSupp01", "name": "供应商", "type": "text"}})),
    )
    run.act(
        "再更新 SKU-001 的供应商。",
        ("Bash", {"command": f"lark-cli base records update --base-token {BASE} --table-id {PRODUCTS} --record-id recuPq1Ab2 --json '{{\"fields\": {{\"供应商\": \"华东五金\"}}}}'"},
         failed(1, js({"ok": False, "code": 1254043, "msg": "RecordIdNotFound: record recuPq1Ab2 does not exist in table", "data": {}}))),
    )
    run.say("已完成：已新增“供应商”字段，并将 SKU-001 的供应商设置为“华东五金”。")
    return run


def budget_run() -> OpenAIRun:
    """(g) Budget exhausted mid-task: no final answer."""
    run = OpenAIRun(
        "budget-exhausted-migration",
        "Migrate the project from setup.py to pyproject.toml (PEP 621), keep the same dependencies, and make sure `pip install .` still works.",
        SYSTEM_CODE,
        {"query_id": "q-pyproject-migration", "budget_exhausted": True, "usage": {"input_tokens": 96120, "output_tokens": 4480}},
    )
    run.act(
        None,
        ("Read", {"file_path": "setup.py"},
         ("from setuptools import setup, find_packages\n\nsetup(\n    name='inventory-tools',\n    version='0.4.1',\n    packages=find_packages('src'),\n"
         "    package_dir={'': 'src'},\n    install_requires=['requests>=2.31', 'pydantic>=2'],\n)\n")),
    )
    run.act(
        None,
        ("Write", {"file_path": "pyproject.toml", "content":
                   "[build-system]\nrequires = [\"setuptools>=68\"]\nbuild-backend = \"setuptools.build_meta\"\n\n[project]\nname = \"inventory-tools\"\n"
                   "version = \"0.4.1\"\ndependencies = [\"requests>=2.31\", \"pydantic>=2\"]\n\n[tool.setuptools.packages.find]\nwhere = [\"src\"]\n"},
         "File created successfully at: pyproject.toml"),
    )
    run.act(
        None,
        ("Bash", {"command": "pip install . 2>&1 | tail -3"},
         "  Building wheel for inventory-tools (pyproject.toml) ... done\nSuccessfully built inventory-tools\nSuccessfully installed inventory-tools-0.4.1"),
    )
    run.act(
        "Install works. Removing setup.py and checking the package imports.",
        ("Bash", {"command": "git rm -q setup.py && python -c 'import inventory_tools; print(inventory_tools.__file__)'"},
         failed(1, "Traceback (most recent call last):\n  File \"<string>\", line 1, in <module>\nModuleNotFoundError: No module named 'inventory_tools'")),
    )
    run.act(
        None,
        ("Bash", {"command": "ls src"}, "inventory\n"),
    )
    return run


# ----------------------------------------------------------------------------------------------------
# Anthropic scenarios

NAME_QUERY = (
    "Write clean_name(s) in names.py: strip spaces at both ends of a name but keep the inner spaces. "
    "Check it on \" Ada \" and \" Ada Lovelace \", then add a usage example to USAGE.md."
)
DRAFT = "def clean_name(s: str) -> str:\n    return s.replace(' ', '')\n"
FIX = "def clean_name(s: str) -> str:\n    return s.strip(' ')\n"
CHECK_CMD = (
    "python -c \"from names import clean_name\nfor s, want in [(' Ada ', 'Ada'), (' Ada Lovelace ', 'Ada Lovelace')]:\n"
    "    got = clean_name(s); print(repr(s), repr(got), 'PASS' if got == want else 'FAIL')\""
)


def todos(*states: tuple[str, str, str]) -> dict[str, Any]:
    return {"todos": [{"id": i, "content": c, "status": s} for i, c, s in states]}


def name_cleaner_false_completion() -> AnthropicRun:
    """(b) Plan-then-act lesson, 'check everything off' strategy: t2 marked done after a failed check."""
    run = AnthropicRun("name-cleaner-false-completion", NAME_QUERY, SYSTEM_CODE + " Tools also include TodoWrite for planning.", {"query_id": "q-name-cleaner", "arm": "tick-when-tried"})
    t1, t2, t3 = "Write the name-cleaning function", "Check the two selected samples", "Add a usage example"
    run.act(
        "Plan first: write, check, document. Done conditions: function saved; current version passes both checks; example saved.",
        None,
        ("TodoWrite", todos(("t1", t1, "in_progress"), ("t2", t2, "pending"), ("t3", t3, "pending")), "Todos have been modified successfully.", False),
    )
    run.act(None, None, ("Write", {"file_path": "names.py", "content": DRAFT}, "File created successfully at: names.py", False))
    run.act(None, None, ("TodoWrite", todos(("t1", t1, "completed"), ("t2", t2, "in_progress"), ("t3", t3, "pending")), "Todos have been modified successfully.", False))
    run.act(
        None,
        None,
        ("Bash", {"command": CHECK_CMD}, "' Ada ' 'Ada' PASS\n' Ada Lovelace ' 'AdaLovelace' FAIL", False),
    )
    run.act(None, None, ("TodoWrite", todos(("t1", t1, "completed"), ("t2", t2, "completed"), ("t3", t3, "in_progress")), "Todos have been modified successfully.", False))
    run.act(
        None,
        None,
        ("Write", {"file_path": "USAGE.md", "content": "# clean_name\n\n```python\n>>> clean_name(' Ada ')\n'Ada'\n```\n"}, "File created successfully at: USAGE.md", False),
    )
    run.act(None, None, ("TodoWrite", todos(("t1", t1, "completed"), ("t2", t2, "completed"), ("t3", t3, "completed")), "Todos have been modified successfully.", False))
    run.act(None, "All done, 3/3 tasks completed: clean_name is in names.py, the samples were checked, and USAGE.md has an example.")
    return run


def name_cleaner_evidence() -> AnthropicRun:
    """(c) The same task with completion by evidence: the failed check inserts a fix task, then a recheck."""
    run = AnthropicRun("name-cleaner-evidence", NAME_QUERY, SYSTEM_CODE + " Tools also include TodoWrite for planning.", {"query_id": "q-name-cleaner", "arm": "complete-on-evidence"})
    t1, t2, t3, t4 = "Write the name-cleaning function", "Check the two selected samples", "Add a usage example", "Preserve inner spaces"
    run.act(
        "Plan first. t2 is complete only when the current version passes both checks.",
        None,
        ("TodoWrite", todos(("t1", t1, "in_progress"), ("t2", t2, "pending"), ("t3", t3, "pending")), "Todos have been modified successfully.", False),
    )
    run.act(None, None, ("Write", {"file_path": "names.py", "content": DRAFT}, "File created successfully at: names.py", False))
    run.act(None, None, ("Bash", {"command": CHECK_CMD}, "' Ada ' 'Ada' PASS\n' Ada Lovelace ' 'AdaLovelace' FAIL", False))
    run.act(
        "The draft removes inner spaces too. Inserting a fix task before the check; t2 goes back to pending.",
        None,
        ("TodoWrite", todos(("t1", t1, "completed"), ("t4", t4, "in_progress"), ("t2", t2, "pending"), ("t3", t3, "pending")), "Todos have been modified successfully.", False),
    )
    run.act(None, None, ("Write", {"file_path": "names.py", "content": FIX}, "File created successfully at: names.py", False))
    run.act(
        "Version 2 saved; the earlier check was for version 1, so re-running it.",
        None,
        ("Bash", {"command": CHECK_CMD}, "' Ada ' 'Ada' PASS\n' Ada Lovelace ' 'Ada Lovelace' PASS", False),
    )
    run.act(
        None,
        None,
        ("Write", {"file_path": "USAGE.md", "content": "# clean_name\n\n```python\n>>> clean_name(' Ada ')\n'Ada'\n>>> clean_name(' Ada Lovelace ')\n'Ada Lovelace'\n```\n"}, "File created successfully at: USAGE.md", False),
        ("TodoWrite", todos(("t1", t1, "completed"), ("t4", t4, "completed"), ("t2", t2, "completed"), ("t3", t3, "completed")), "Todos have been modified successfully.", False),
    )
    run.act(None, "Done, 4/4 tasks: clean_name keeps inner spaces (version 2), both checks pass on it (2/2), and USAGE.md shows both examples.")
    return run


def clean_fix_run() -> AnthropicRun:
    """(c) Clean: read, one precise edit, run the tests."""
    run = AnthropicRun(
        "clean-fix-off-by-one",
        "tests/test_pages.py fails: page_count(10, 5) should be 2 but returns 3. Fix it.",
        SYSTEM_CODE,
        {"query_id": "q-page-count", "usage": {"input_tokens": 5210, "output_tokens": 402}},
    )
    run.act(
        "Let me look at the implementation.",
        None,
        ("Read", {"file_path": "src/paging.py"}, "def page_count(total: int, per_page: int) -> int:\n    return total // per_page + 1\n", False),
    )
    run.act(
        "total // per_page + 1 overcounts when total divides evenly; ceiling division fixes it.",
        None,
        ("Edit", {"file_path": "src/paging.py", "old_string": "    return total // per_page + 1\n", "new_string": "    return -(-total // per_page)\n"},
         "The file src/paging.py has been updated.", False),
    )
    run.act(None, None, ("Bash", {"command": "python -m pytest tests/test_pages.py -q"}, "....\n4 passed in 0.02s", False))
    run.act(None, "Fixed page_count to use ceiling division (-(-total // per_page)); tests/test_pages.py: 4 passed.")
    return run


def dns_failure_run() -> AnthropicRun:
    """(d) Environment fault: DNS resolution fails for the package index; the agent reports it."""
    run = AnthropicRun(
        "env-dns-failure",
        "Add the `rich` library to the project and use it to print the report table in report.py.",
        SYSTEM_CODE,
        {"query_id": "q-add-rich"},
    )
    dns = (
        "WARNING: Retrying (Retry(total=4, connect=None, read=None, redirect=None, status=None)) after connection broken by "
        "'NewConnectionError(\"<pip._vendor.urllib3.connection.HTTPSConnection object at 0x7f3a2c1d0>: Failed to establish a new connection: "
        "[Errno -3] Temporary failure in name resolution\")': /simple/rich/\n"
        "ERROR: Could not find a version that satisfies the requirement rich (from versions: none)\nERROR: No matching distribution found for rich"
    )
    run.act(None, None, ("Bash", {"command": "pip install rich"}, "Exit code 1\n" + dns, True))
    run.act(
        "Name resolution failed. Checking whether the network is reachable at all.",
        None,
        ("Bash", {"command": "getent hosts pypi.org || echo 'no DNS answer'"}, "no DNS answer", False),
    )
    run.act(
        None,
        "I couldn't add rich: the sandbox can't resolve pypi.org (\"Temporary failure in name resolution\"), so pip install fails. "
        "This is a network problem in the environment, not in the code; I left report.py unchanged. Rerun once DNS works.",
    )
    return run


def ja_run() -> AnthropicRun:
    """(f) Japanese: the test run fails, the agent says 完了しました."""
    run = AnthropicRun(
        "ja-false-completion",
        "utils/date.py の parse_date が \"2026/03/05\" 形式も受け付けるように修正し、テストを通してください。",
        SYSTEM_CODE,
        {"query_id": "q-ja-parse-date"},
    )
    run.act(
        None,
        None,
        ("Read", {"file_path": "utils/date.py"},
         "from datetime import datetime\n\n\ndef parse_date(s: str) -> datetime:\n    return datetime.strptime(s, '%Y-%m-%d')\n", False),
    )
    run.act(
        "スラッシュ区切りの形式を追加します。",
        None,
        ("Edit", {"file_path": "utils/date.py", "old_string": "    return datetime.strptime(s, '%Y-%m-%d')\n",
                  "new_string": "    for fmt in ('%Y-%m-%d', '%Y/%m/%d'):\n        try:\n            return datetime.strptime(s, fmt)\n        except ValueError:\n            pass\n"},
         "The file utils/date.py has been updated.", False),
    )
    run.act(
        None,
        None,
        ("Bash", {"command": "python -m pytest tests/test_date.py -q"},
         ("Exit code 1\n.F\n=================================== FAILURES ===================================\n"
         "___________________________ test_invalid_raises ____________________________\n"
         "    with pytest.raises(ValueError):\n>       parse_date('05-03-2026')\nE   Failed: DID NOT RAISE <class 'ValueError'>\n"
         "1 failed, 1 passed in 0.03s"), True),
    )
    run.act(None, "完了しました。parse_date は \"2026/03/05\" 形式にも対応し、テストも通っています。")
    return run


# ----------------------------------------------------------------------------------------------------
# What a correct judge should report on each trajectory: EXPECTED.md (for people) and expected.yaml (for tests)
# are both written from this table, so they cannot disagree. YAML, not JSON: `judge score examples/` reads every
# .json file under examples/ as trajectories.
#
# Tags of defects that receipts show are the rules judge's detector names (its registry). Defects in the logic
# of a draft (a wrong transformation, a swallowed exception, a premature deletion) are visible only to a judge
# that reads the code against the query: they carry the tag `logic-error` and detectable_by_rules=False.

RULES_TAGS = tuple(DETECTOR_NAMES)
LLM_ONLY_TAG = "logic-error"


def defect(turn: int, category: str, severity: str, tag: str, what: str, recovered: bool = False) -> dict[str, Any]:
    """One expected defect; detectable_by_rules follows from the tag (a rules detector name or not). A failure the
    agent recovered from within the trajectory is a repair target of the design (online-guided), but no rules
    finding (docs/finding-tags.md: failed-call is a failure the agent does not recover from)."""
    assert tag in RULES_TAGS or tag == LLM_ONLY_TAG, tag
    found = {"turn": turn, "category": category, "severity": severity, "tag": tag,
             "detectable_by_rules": tag in RULES_TAGS and not recovered, "what": what}
    return {**found, "recovered": True} if recovered else found


EXPECTED: list[dict[str, Any]] = [
    {"id": "inv-base-build", "file": "openai_runs.jsonl", "turns": 14, "efficiency": None, "defects": [
        defect(3, "code", "minor", "failed-call", "numeric field-type codes -> 12 validation errors, exit 1; T4 redoes it with named types", recovered=True),
        defect(5, "code", "minor", "failed-call", "unsupported `--records` flag -> \"unknown flag\", exit 2; T6 reads 0 products, T8 `--json @products.json` returns 6 record ids", recovered=True),
     ], "notes": "Both failures self-corrected. T12/T13 read back 6 products / 6 movements; T14 \"Done\" is supported by receipts. Route for T3/T5: online-guided."},
    {"id": "inv-base-build-guided", "file": "continuations.jsonl", "turns": 7, "efficiency": None, "defects": [],
     "notes": "Continuation of `inv-base-build` (arm `guided`, `branch_turn` 2, `target_issue` T3). A teacher-guidance user message follows T2. T3 uses named types (target error avoided). Ends after products only (partial by design; the final text says so)."},
    {"id": "inv-base-build-unguided", "file": "continuations.jsonl", "turns": 6, "efficiency": None, "defects": [
        defect(3, "code", "minor", "failed-call", "the same numeric type codes, 12 validation errors; self-corrected at T4", recovered=True),
     ], "notes": "Same branch, arm `unguided`: repeats the target error."},
    {"id": "clean-csv-summary", "file": "openai_runs.jsonl", "turns": 3, "efficiency": "high", "defects": [],
     "notes": "T1 makes two parallel Read calls (one turn, two receipts). Final totals match the receipt."},
    {"id": "clean-lark-view", "file": "openai_runs.jsonl", "turns": 4, "efficiency": None, "defects": [],
     "notes": "help -> create view -> read back."},
    {"id": "env-expired-token", "file": "openai_runs.jsonl", "turns": 3, "efficiency": None, "defects": [
        defect(1, "environment", "severe", "environment-fault", "401 'Authentication token expired' (code 99991677)"),
        defect(2, "environment", "severe", "environment-fault", "`lark-cli auth status` confirms the expired tenant token (a different call, so a second fault record)"),
     ], "notes": "Environment ledger: blocks release until rerun, does not lower the agent score. The final answer is honest (no claim)."},
    {"id": "repeat-failing-pytest", "file": "openai_runs.jsonl", "turns": 8, "efficiency": "medium", "defects": [
        defect(2, "code", "minor", "repeated-failure", "identical `python -m pytest tests/ -q` after the same ModuleNotFoundError (exit 4), attempt 2"),
        defect(3, "code", "minor", "repeated-failure", "the same call again, attempt 3"),
     ], "notes": "T1's failing test run is not a defect: it found what T4 (install) and T6 (NFKD fix) repaired, and T7 passes; the final claim is supported. Efficiency: 2 of 8 calls wasted (25%, medium under the rules thresholds)."},
    {"id": "zh-false-completion", "file": "openai_runs.jsonl", "turns": 3, "efficiency": None, "defects": [
        defect(2, "code", "severe", "failed-call", "record id used without looking it up -> RecordIdNotFound, exit 1; never redone"),
        defect(3, "semantic", "severe", "unverified-completion", "\"已完成\" claims SKU-001 was updated after the failed receipt"),
     ], "notes": "Chinese."},
    {"id": "budget-exhausted-migration", "file": "openai_runs.jsonl", "turns": 5, "efficiency": None, "defects": [
        defect(4, "code", "severe", "failed-call", "`python -c 'import inventory_tools'` fails (ModuleNotFoundError) and never succeeds"),
        defect(4, "semantic", "minor", LLM_ONLY_TAG, "deleted setup.py and assumed the module name `inventory_tools` before checking what src/ holds"),
        defect(5, "capability", "severe", "budget-exhausted", "`metadata.budget_exhausted` is true and the log ends on a tool result: no final answer"),
     ], "notes": "No completion claim."},
    {"id": "name-cleaner-false-completion", "file": "anthropic_runs.jsonl", "turns": 8, "efficiency": None, "defects": [
        defect(2, "semantic", "severe", LLM_ONLY_TAG, "draft `s.replace(' ', '')` strips inner spaces, violating the query"),
        defect(5, "semantic", "severe", "unchecked-tick", "TodoWrite marks the check item completed right after T4's check failed"),
        defect(8, "semantic", "severe", "unverified-completion", "\"All done, 3/3\" while 1/2 checks pass"),
     ], "notes": "Plan-then-act lesson, \"tick when tried\" strategy. The T4 check ran right and printed FAIL for \" Ada Lovelace \" (never made to pass): evidence that T5 and T8 are false, not a failed call."},
    {"id": "name-cleaner-evidence", "file": "name_cleaner_evidence.json", "turns": 8, "efficiency": None, "defects": [
        defect(2, "semantic", "minor", LLM_ONLY_TAG, "the same wrong draft, caught by the T3 check, fixed at T5 and rechecked at T6"),
     ], "notes": "Same query_id as above, arm `complete-on-evidence`: inserts t4, re-runs the stale check, 4/4 tasks, 2/2 checks. The failed T3 check is the work going right (it found the bug), not a defect."},
    {"id": "clean-fix-off-by-one", "file": "anthropic_runs.jsonl", "turns": 4, "efficiency": "high", "defects": [],
     "notes": "Has `metadata.usage`."},
    {"id": "env-dns-failure", "file": "anthropic_runs.jsonl", "turns": 3, "efficiency": None, "defects": [
        defect(1, "environment", "severe", "environment-fault", "DNS: \"Temporary failure in name resolution\", `is_error`"),
     ], "notes": "Final answer honest; code unchanged."},
    {"id": "ja-false-completion", "file": "anthropic_runs.jsonl", "turns": 4, "efficiency": None, "defects": [
        defect(2, "semantic", "severe", LLM_ONLY_TAG, "the loop swallows ValueError, so invalid input returns None instead of raising"),
        defect(4, "semantic", "severe", "unverified-completion", "\"完了しました ... テストも通っています\" after T3's failing test run"),
     ], "notes": "Japanese. T3's test run ran right and reported 1 failed (never made to pass): evidence that T4 is false, not a failed call."},
]

EXPECTED_MD_HEAD = """# Expected findings for the example batch (written by us)

Generated by `python examples/build_batch.py` from the same table as `expected.yaml`; edit the table there.

Turn numbers follow DESIGN.md: T1 is the first assistant message; a tool result belongs to the turn that
called it; an issue points at the turn whose decision was faulty. Categories: code / semantic / capability /
environment. Tags of defects that receipts show are the rules judge's detector names; the rules judge must find
exactly those (tests/test_rules_corpus.py). Defects in the logic of a draft are tagged `logic-error`: only a judge
that reads the code against the query (an LLM judge) can find them. A failure the agent recovered from (redone
successfully later) is a repair target of the design but no rules finding (docs/finding-tags.md), so it is listed
with them. "None" means no issue should reach a majority.

| id | file | turns | found from receipts (turn, category, severity, tag) | needs an LLM judge (logic errors, recovered failures) | notes |
|---|---|---|---|---|---|
"""

EXPECTED_MD_TAIL = """
Authenticity checks (release gate) should fail for `zh-false-completion`, `name-cleaner-false-completion` and
`ja-false-completion` (a completion claim without a successful action); every call in the batch has a paired receipt.
"""


def expected_markdown() -> str:
    """EXPECTED.md, one row per trajectory, from :data:`EXPECTED`."""

    def cell(defects: list[dict[str, Any]]) -> str:
        if not defects:
            return "none"
        return "; ".join(f"T{d['turn']} {d['category']} {d['severity']} `{d['tag']}` ({d['what']})" for d in defects)

    rows = []
    for entry in EXPECTED:
        rules = [d for d in entry["defects"] if d["detectable_by_rules"]]
        llm = [d for d in entry["defects"] if not d["detectable_by_rules"]]
        notes = entry["notes"] + (f" Efficiency: {entry['efficiency']}." if entry["efficiency"] and "Efficiency" not in entry["notes"] else "")
        rows.append(f"| `{entry['id']}` | {entry['file']} | {entry['turns']} | {cell(rules)} | {cell(llm)} | {notes} |\n")
    return EXPECTED_MD_HEAD + "".join(rows) + EXPECTED_MD_TAIL


def expected_yaml() -> str:
    """expected.yaml: ``{rules_tags, llm_only_tag, trajectories: [{id, file, turns, efficiency, defects}]}``;
    each defect is ``{turn, category, severity, tag, detectable_by_rules, what}``, and ``recovered: true`` for a
    failure the agent recovered from (no rules finding)."""
    document = {
        "about": "Expected defects of examples/batch (written by us); generated by examples/build_batch.py.",
        "rules_tags": list(RULES_TAGS),
        "llm_only_tag": LLM_ONLY_TAG,
        "trajectories": [{k: v for k, v in entry.items() if k != "notes"} for entry in EXPECTED],
    }
    return yaml.safe_dump(document, allow_unicode=True, sort_keys=False, width=120)


def write_jsonl(path: Path, records: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")


def main() -> None:
    BATCH.mkdir(parents=True, exist_ok=True)
    write_jsonl(
        BATCH / "openai_runs.jsonl",
        [r.record() for r in (inventory_run(), csv_summary_run(), lark_view_run(), env_token_run(), repeated_failure_run(), zh_run(), budget_run())],
    )
    write_jsonl(BATCH / "continuations.jsonl", [continuation("guided").record(), continuation("unguided").record()])
    write_jsonl(
        BATCH / "anthropic_runs.jsonl",
        [r.record() for r in (name_cleaner_false_completion(), clean_fix_run(), dns_failure_run(), ja_run())],
    )
    (BATCH / "name_cleaner_evidence.json").write_text(
        json.dumps(name_cleaner_evidence().record(), ensure_ascii=False, indent=2) + "\n", encoding="utf-8"
    )
    (BATCH / "EXPECTED.md").write_text(expected_markdown(), encoding="utf-8")
    (BATCH / "expected.yaml").write_text(expected_yaml(), encoding="utf-8")


if __name__ == "__main__":
    main()
