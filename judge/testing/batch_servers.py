"""Fake batch APIs on 127.0.0.1: the OpenAI Batch API and Anthropic Message Batches, for the real SDKs.

:class:`FakeBatchServer` is a :class:`~judge.testing.servers.FakeLLMServer` (so direct requests still work: the
preflight, corrective retries) that also speaks its protocol's batch endpoints:

- OpenAI: ``POST /v1/files`` (multipart upload, purpose ``batch``), ``POST /v1/batches``, ``GET /v1/batches/ID``,
  ``POST /v1/batches/ID/cancel``, ``GET /v1/files/ID/content`` (the output and error files, JSONL);
- Anthropic: ``POST /v1/messages/batches``, ``GET /v1/messages/batches/ID``, ``POST .../ID/cancel``, and the
  batch's ``results_url`` (JSONL).

A batch stays ``in_progress`` for ``polls_to_finish`` status checks, then ends (never while ``held`` is set: a test
kills its client meanwhile). When it ends, each of its requests is answered like a direct request - the queue of
:class:`~judge.testing.servers.Scripted` responses first, then the responder - and lands in the output the API
would give: an answer, an error response (``Scripted.server_error()``...), or, for ``Scripted.expired()`` and
``Scripted.cancelled()``, a request that never ran (the batch then ends ``expired`` / ``cancelled`` on OpenAI).
``fail_next`` makes the next OpenAI batch fail validation (status ``failed``, no output); ``refuse_status`` makes
batch creation answer that HTTP status (a server without a batch API, a bad key). Every batch request
counts in ``request_count`` like a direct one, so a test can count what a run asked for; ``created`` lists the
batches created, ``polls`` counts status checks.
"""

from __future__ import annotations

import json
import re
import threading
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from judge.testing.servers import FakeLLMServer, Protocol, Responder, Scripted

_BATCH = re.compile(r"^/v1/batches/([\w-]+)(/cancel)?$")
_FILE = re.compile(r"^/v1/files/([\w-]+)/content$")
_MESSAGE_BATCH = re.compile(r"^/v1/messages/batches/([\w-]+)(/cancel|/results)?$")


class FakeBatchServer(FakeLLMServer):
    """A fake LLM server with its protocol's batch API; see the module docstring."""

    def __init__(self, protocol: Protocol = "openai", responder: Responder | None = None, *, polls_to_finish: int = 1,
                 **kwargs: Any):
        super().__init__(protocol, responder, **kwargs)
        self.polls_to_finish = polls_to_finish
        self.held = False
        self.fail_next = False
        self.refuse_status: int | None = None
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, dict[str, Any]] = {}
        self.created: list[str] = []
        self.polls = 0
        self._batch_lock = threading.Lock()

    def release(self) -> None:
        """Let held batches end at their next status check."""
        self.held = False

    async def respond(self, method: str, path: str, headers: dict[str, str], raw: bytes) -> tuple[int, dict[str, str], bytes]:
        path = path.split("?", 1)[0]
        with self._batch_lock:
            found = (self._openai(method, path, headers, raw) if self.protocol == "openai"
                     else self._anthropic(method, path, raw))
        if found is None:
            return await super().respond(method, path, headers, raw)
        status, body = found
        if isinstance(body, bytes):
            return status, {"content-type": "application/octet-stream"}, body
        return status, {}, json.dumps(body).encode()

    # --- OpenAI ----------------------------------------------------------------------------------

    def _openai(self, method: str, path: str, headers: dict[str, str], raw: bytes) -> tuple[int, Any] | None:
        if method == "POST" and path == "/v1/files":
            content = _multipart_file(headers.get("content-type", ""), raw)
            file_id = f"file-{len(self.files) + 1}"
            self.files[file_id] = content
            return 200, _file_object(file_id, len(content), "batch")
        if method == "POST" and path == "/v1/batches" and self.refuse_status:
            return self.refuse_status, {"error": {"message": "batches are refused here", "type": "invalid_request_error",
                                                  "code": None}}
        if method == "POST" and path == "/v1/batches":
            request = json.loads(raw)
            if request.get("input_file_id") not in self.files:
                return 404, {"error": {"message": "no such file", "type": "invalid_request_error", "code": None}}
            lines = [json.loads(line) for line in self.files[request["input_file_id"]].decode().splitlines() if line.strip()]
            batch_id = f"batch_{len(self.batches) + 1}"
            self.batches[batch_id] = {
                "id": batch_id, "object": "batch", "endpoint": request["endpoint"], "errors": None,
                "input_file_id": request["input_file_id"], "completion_window": request["completion_window"],
                "status": "validating", "output_file_id": None, "error_file_id": None, "created_at": int(time.time()),
                "request_counts": {"total": len(lines), "completed": 0, "failed": 0},
                "metadata": request.get("metadata"), "_lines": lines, "_polls": 0, "_fail": self.fail_next,
            }
            self.fail_next = False
            self.created.append(batch_id)
            return 200, _public(self.batches[batch_id])
        match = _BATCH.match(path)
        if match and match.group(1) in self.batches:
            batch = self.batches[match.group(1)]
            if method == "POST" and match.group(2):
                batch["_cancel"] = True
                batch["status"] = "cancelling"
                return 200, _public(batch)
            if method == "GET":
                self.polls += 1
                batch["_polls"] += 1
                if batch["status"] in ("validating", "in_progress", "cancelling"):
                    if self.held or batch["_polls"] < self.polls_to_finish:
                        batch["status"] = "cancelling" if batch.get("_cancel") else "in_progress"
                    else:
                        self._end_openai(batch)
                return 200, _public(batch)
        match = _FILE.match(path)
        if match and method == "GET" and match.group(1) in self.files:
            return 200, self.files[match.group(1)]
        return None

    def _end_openai(self, batch: dict[str, Any]) -> None:
        if batch["_fail"]:
            batch.update(status="failed", failed_at=int(time.time()), errors={"object": "list", "data": [
                {"code": "invalid_request", "message": "scripted validation failure", "line": 1, "param": None}]})
            return
        output: list[dict[str, Any]] = []
        errors: list[dict[str, Any]] = []
        fates: set[str] = set()
        for number, line in enumerate(batch["_lines"], start=1):
            scripted = Scripted.cancelled() if batch.get("_cancel") else self._next(line["body"], {})
            row: dict[str, Any] = {"id": f"batch_req_{batch['id']}_{number}", "custom_id": line["custom_id"]}
            if scripted.batch_fate:
                fates.add(scripted.batch_fate)
                code = "batch_expired" if scripted.batch_fate == "expired" else "batch_cancelled"
                errors.append({**row, "response": None, "error": {"code": code, "message": f"scripted: {code}"}})
                continue
            status, _, body = self.render(scripted, line["body"])
            response = {"status_code": status, "request_id": f"req_{number}", "body": json.loads(body)}
            (output if status == 200 else errors).append({**row, "response": response, "error": None})
        for rows, name in ((output, "output_file_id"), (errors, "error_file_id")):
            if rows:
                file_id = f"file-{len(self.files) + 1}"
                self.files[file_id] = "".join(json.dumps(row) + "\n" for row in rows).encode()
                batch[name] = file_id
        batch["request_counts"] = {"total": len(batch["_lines"]), "completed": len(output), "failed": len(errors)}
        batch["status"] = "cancelled" if "cancelled" in fates else "expired" if "expired" in fates else "completed"
        batch[f"{batch['status']}_at"] = int(time.time())

    # --- Anthropic -------------------------------------------------------------------------------

    def _anthropic(self, method: str, path: str, raw: bytes) -> tuple[int, Any] | None:
        if method == "POST" and path == "/v1/messages/batches" and self.refuse_status:
            return self.refuse_status, {"type": "error", "error": {"type": "invalid_request_error",
                                                                   "message": "batches are refused here"}}
        if method == "POST" and path == "/v1/messages/batches":
            requests = json.loads(raw)["requests"]
            batch_id = f"msgbatch_{len(self.batches) + 1:04d}"
            now = datetime.now(UTC)
            self.batches[batch_id] = {
                "id": batch_id, "type": "message_batch", "processing_status": "in_progress",
                "request_counts": {"processing": len(requests), "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0},
                "created_at": now.isoformat(), "expires_at": (now + timedelta(hours=24)).isoformat(), "ended_at": None,
                "cancel_initiated_at": None, "archived_at": None, "results_url": None, "_requests": requests, "_polls": 0,
            }
            self.created.append(batch_id)
            return 200, _public(self.batches[batch_id])
        match = _MESSAGE_BATCH.match(path)
        if not match or match.group(1) not in self.batches:
            return None
        batch = self.batches[match.group(1)]
        if method == "POST" and match.group(2) == "/cancel":
            batch["_cancel"] = True
            batch["processing_status"] = "canceling"
            batch["cancel_initiated_at"] = datetime.now(UTC).isoformat()
            return 200, _public(batch)
        if method == "GET" and match.group(2) == "/results":
            if "_results" not in batch:
                return 404, {"type": "error", "error": {"type": "not_found_error", "message": "the batch has not ended"}}
            return 200, batch["_results"]
        if method == "GET" and not match.group(2):
            self.polls += 1
            batch["_polls"] += 1
            if batch["processing_status"] != "ended" and not self.held and batch["_polls"] >= self.polls_to_finish:
                self._end_anthropic(batch)
            return 200, _public(batch)
        return None

    def _end_anthropic(self, batch: dict[str, Any]) -> None:
        counts = {"processing": 0, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}
        lines = []
        for request in batch["_requests"]:
            params = request["params"]
            scripted = Scripted.cancelled() if batch.get("_cancel") else self._next(params, {})
            if scripted.batch_fate:
                kind = "expired" if scripted.batch_fate == "expired" else "canceled"
                result: dict[str, Any] = {"type": kind}
            else:
                status, _, body = self.render(scripted, params)
                result = ({"type": "succeeded", "message": json.loads(body)} if status == 200
                          else {"type": "errored", "error": json.loads(body)})
                kind = "succeeded" if status == 200 else "errored"
            counts[kind] += 1
            lines.append({"custom_id": request["custom_id"], "result": result})
        batch["_results"] = "".join(json.dumps(line) + "\n" for line in lines).encode()
        batch.update(processing_status="ended", request_counts=counts, ended_at=datetime.now(UTC).isoformat(),
                     results_url=f"http://127.0.0.1:{self.port}/v1/messages/batches/{batch['id']}/results")


def _public(batch: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in batch.items() if not key.startswith("_")}


def _file_object(file_id: str, size: int, purpose: str) -> dict[str, Any]:
    return {"id": file_id, "object": "file", "bytes": size, "created_at": int(time.time()), "filename": "batch.jsonl",
            "purpose": purpose, "status": "processed"}


def _multipart_file(content_type: str, raw: bytes) -> bytes:
    """The ``file`` part of a multipart/form-data body."""
    match = re.search(r'boundary="?([^";]+)"?', content_type)
    if not match:
        raise ValueError(f"not a multipart body: {content_type!r}")
    for part in raw.split(b"--" + match.group(1).encode()):
        head, _, content = part.partition(b"\r\n\r\n")
        if b'name="file"' in head:
            return content[:-2] if content.endswith(b"\r\n") else content
    raise ValueError("the multipart body has no file part")
