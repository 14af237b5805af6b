"""Judge prompts: versioned templates filled strictly, and trajectories rendered safely within a token budget.

Templates are files in prompts/ with a front matter (``version:`` is required) and role sections
(``<!-- role: system -->``, ``<!-- role: user -->``). Variables are written ``{{ name }}``; filling is
strict: a variable the template uses but the caller did not give, or one the caller gave but the template
does not use, is an error (simonw/llm templates).

Trajectory text is untrusted: :func:`neutralise` makes sure it cannot close the prompt's delimiters
(``</trajectory>``, ``</query>``), forge a turn header, or pose as a chat role, in the spirit of inspect_ai's
``neutralize_structural_delimiters``.

Elision (when a trajectory does not fit ``max_tokens``), in order, stopping as soon as it fits:

1. shorten long *successful* tool receipts middle-out, with caps of 8000, 4000, 2000, 1000, 500, 200 chars;
2. then shorten the bodies of the *middle* turns (assistant text, reasoning, calls) and of system/user
   messages with the same caps;
3. then shorten the protected blocks - the first and last turn and every *error* receipt - to 2000 chars.

Every cut is marked ``[... N chars elided ...]`` and every block header stays, so turn numbers are intact
and a judge can see what was cut. The original query is never cut. If the text still does not fit, the
rendering says so (``fits=False``) and the pass is unscored ``context_overflow``; nothing is dropped silently.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from judge.model import Message, Trajectory
from judge.resources import resource_path

# --- templates ---------------------------------------------------------------------------------

_VAR = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
_ROLE = re.compile(r"^<!--\s*role:\s*(system|user|assistant)\s*-->\s*$", re.MULTILINE)


class TemplateError(ValueError):
    """A template file or its filling is wrong; the message names the template."""


@dataclass(frozen=True)
class PromptTemplate:
    """A parsed prompt file: version, role sections (role, text) in order, and the variables it uses."""

    name: str
    version: str
    sections: tuple[tuple[str, str], ...]
    path: str
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def variables(self) -> frozenset[str]:
        return frozenset(m.group(1) for _, text in self.sections for m in _VAR.finditer(text))

    def render(self, **values: Any) -> list[dict[str, str]]:
        """Chat messages with every ``{{ var }}`` replaced; strict about missing and unused variables."""
        return [{"role": role, "content": text} for role, text in fill_sections(self, values)]


def load_template(name_or_path: str | Path) -> PromptTemplate:
    """Load ``prompts/<name>.md`` (or a path). Errors name the file: missing front matter, no version, no sections."""
    candidate = Path(name_or_path)
    if candidate.suffix and candidate.exists():
        path = candidate
    else:
        path = resource_path("prompts", f"{name_or_path}.md" if not str(name_or_path).endswith(".md") else str(name_or_path))
    return _load_template(str(path))


@lru_cache(maxsize=16)
def _load_template(path: str) -> PromptTemplate:
    text = Path(path).read_text(encoding="utf-8")
    if not text.startswith("---\n"):
        raise TemplateError(f"{path}:1: a prompt file starts with a '---' front matter holding 'version:'")
    end = text.find("\n---\n", 4)
    if end < 0:
        raise TemplateError(f"{path}: the front matter is not closed with '---'")
    meta = yaml.safe_load(text[4:end]) or {}
    if not isinstance(meta, dict) or not meta.get("version"):
        raise TemplateError(f"{path}: the front matter needs a 'version:'")
    body = text[end + 5:]
    markers = list(_ROLE.finditer(body))
    if not markers:
        raise TemplateError(f"{path}: no '<!-- role: system|user -->' section")
    sections = []
    for index, marker in enumerate(markers):
        stop = markers[index + 1].start() if index + 1 < len(markers) else len(body)
        sections.append((marker.group(1), body[marker.end():stop].strip("\n")))
    return PromptTemplate(name=Path(path).stem, version=str(meta["version"]), sections=tuple(sections), path=path, meta=meta)


def fill(template_text: str, values: dict[str, Any], where: str = "template") -> str:
    """Replace ``{{ name }}`` in ``template_text``; every used name must be given and every given name used."""
    used = {m.group(1) for m in _VAR.finditer(template_text)}
    _check_vars(used, values, where)
    # One pass: inserted values are never scanned again, so data cannot inject template variables.
    return _VAR.sub(lambda m: str(values[m.group(1)]), template_text)


def fill_sections(template: PromptTemplate, values: dict[str, Any]) -> list[tuple[str, str]]:
    _check_vars(set(template.variables), values, template.path)
    return [(role, _VAR.sub(lambda m: str(values[m.group(1)]), text)) for role, text in template.sections]


def _check_vars(used: set[str], values: dict[str, Any], where: str) -> None:
    missing = sorted(used - set(values))
    unused = sorted(set(values) - used)
    if missing:
        raise TemplateError(f"{where}: no value for template variable(s) {', '.join(missing)}")
    if unused:
        raise TemplateError(f"{where}: value(s) given for variable(s) the template does not use: {', '.join(unused)}")


# --- neutralisation ----------------------------------------------------------------------------

# Tags the judge prompt uses as delimiters, plus role-like tags a trajectory could use to pose as the prompt.
DELIMITER_TAGS = ("trajectory", "query", "instructions", "system", "user", "assistant", "tool", "turn", "receipt")
HEADER_OPEN, HEADER_CLOSE = "\u27e6", "\u27e7"  # ⟦ ⟧: block headers of the rendered trajectory only

_TAG = re.compile(r"<(\s*/?\s*(?:" + "|".join(DELIMITER_TAGS) + r")\b)", re.IGNORECASE)
_CHAT_TOKEN = re.compile(r"<\|")  # <|im_start|>, <|system|>, <|endoftext|> ...
_INST = re.compile(r"\[(/?)(INST|SYS)\]|<<(/?)SYS>>", re.IGNORECASE)
_ROLE_LINE = re.compile(r"^(\s*)(#{1,6}\s*)?(Human|Assistant|System|User)\s*:", re.IGNORECASE | re.MULTILINE)


def neutralise(text: str) -> str:
    """Make untrusted text safe to place inside the judge prompt's delimiters. Idempotent.

    - ``<trajectory>``, ``</query>``, ``<system>`` ... become ``&lt;trajectory>`` ...: they cannot close or
      open a delimiter of the prompt, while staying readable;
    - the block-header brackets ⟦ ⟧ become [ ], so no text can forge a turn header;
    - chat-template tokens (``<|im_start|>``, ``[INST]``, ``<<SYS>>``) are defanged;
    - lines starting ``Human:`` / ``Assistant:`` / ``System:`` are marked as quoted text.
    """
    text = text.replace(HEADER_OPEN, "[").replace(HEADER_CLOSE, "]")
    text = _TAG.sub(r"&lt;\1", text)
    text = _CHAT_TOKEN.sub("&lt;|", text)
    text = _INST.sub(lambda m: m.group(0).replace("[", "(").replace("]", ")").replace("<<", "(("), text)
    # "(quoted) Human:" no longer starts with a role word, so a second pass leaves it alone.
    return _ROLE_LINE.sub(lambda m: f"{m.group(1)}{m.group(2) or ''}(quoted) {m.group(3)}:", text)


# --- token estimate ----------------------------------------------------------------------------


def estimate_tokens(text: str) -> int:
    """Tokens in ``text``: tiktoken's o200k_base count when tiktoken is installed, else ceil(chars / 4).

    chars/4 is the usual rule of thumb for English and code; it overestimates for many scripts' tokens
    per char less than it underestimates, so budgets keep a margin (see ``max_input_tokens``).
    """
    encoder = _encoder()
    if encoder is not None:
        return len(encoder.encode(text, disallowed_special=()))
    return math.ceil(len(text) / 4)


@lru_cache(maxsize=1)
def _encoder() -> Any:
    try:
        import tiktoken  # optional, not a dependency

        return tiktoken.get_encoding("o200k_base")
    except Exception:  # not installed, or its encoding file cannot be loaded offline
        return None


# --- trajectory rendering ----------------------------------------------------------------------

RECEIPT_CAPS = (8000, 4000, 2000, 1000, 500, 200)
PROTECTED_CAP = 2000


@dataclass
class _Block:
    header: str
    body: str
    kind: str  # receipt | error_receipt | turn | context (system/user)
    turn: int
    protected: bool = False

    def text(self) -> str:
        body = self.body.strip("\n")
        return f"{self.header}\n{body}" if body else self.header


@dataclass
class RenderedTrajectory:
    """The trajectory as the judge sees it. ``fits`` is False when even full elision exceeds the budget."""

    text: str
    turn_count: int
    estimated_tokens: int
    fits: bool
    elided_chars: int = 0
    elided_blocks: int = 0

    @property
    def elided(self) -> bool:
        return self.elided_blocks > 0


def shorten_middle(text: str, cap: int) -> tuple[str, int]:
    """Keep the head and tail of ``text`` within about ``cap`` chars; return (text, chars elided)."""
    if len(text) <= cap:
        return text, 0
    cut = len(text) - cap
    head = cap // 2
    return f"{text[:head]}\n[... {cut} chars elided ...]\n{text[len(text) - (cap - head):]}", cut


def render_trajectory(trajectory: Trajectory, max_tokens: int) -> RenderedTrajectory:
    """Render messages in source order with turn headers (⟦T3 assistant⟧, ⟦T3 tool result ...⟧), eliding
    per the module docstring when the estimate exceeds ``max_tokens``."""
    blocks = _blocks(trajectory)
    turn_count = trajectory.turn_count
    originals = [b.body for b in blocks]

    def measure() -> int:
        return estimate_tokens(_join(blocks))

    stages = [
        lambda b: b.kind == "receipt" and not b.protected,
        lambda b: not b.protected,
    ]
    tokens = measure()
    for selects in stages:
        for cap in RECEIPT_CAPS:
            if tokens <= max_tokens:
                break
            for index, block in enumerate(blocks):
                if selects(block):
                    block.body = shorten_middle(originals[index], cap)[0] if len(originals[index]) > cap else block.body
            tokens = measure()
    if tokens > max_tokens:
        for index, block in enumerate(blocks):
            if block.protected:
                block.body = shorten_middle(originals[index], PROTECTED_CAP)[0]
        tokens = measure()
    elided_blocks = sum(1 for block, original in zip(blocks, originals) if block.body != original)
    elided_chars = sum(len(original) - len(block.body) for block, original in zip(blocks, originals) if block.body != original)
    return RenderedTrajectory(
        text=_join(blocks),
        turn_count=turn_count,
        estimated_tokens=tokens,
        fits=tokens <= max_tokens,
        elided_chars=max(0, elided_chars),
        elided_blocks=elided_blocks,
    )


def _join(blocks: list[_Block]) -> str:
    return "\n\n".join(block.text() for block in blocks)


def _blocks(trajectory: Trajectory) -> list[_Block]:
    last_turn = trajectory.turn_count
    blocks: list[_Block] = []
    query_shown = False
    for message in trajectory.messages:
        turn = message.turn or 0
        if message.role == "assistant":
            blocks.append(_Block(_header(f"T{turn} assistant", message.name), _assistant_body(message), "turn", turn,
                                 protected=turn in (1, last_turn)))
        elif message.role == "tool":
            receipt = message.receipt
            is_error = bool(receipt and (receipt.is_error or (receipt.exit_code not in (None, 0))))
            bits = [f"T{turn} tool result"]
            if receipt and receipt.name:
                bits.append(receipt.name)
            if receipt and receipt.call_id:
                bits.append(f"call {receipt.call_id}")
            if receipt and receipt.exit_code is not None:
                bits.append(f"exit {receipt.exit_code}")
            if is_error:
                bits.append("ERROR")
            content = receipt.content if receipt else message.content
            blocks.append(_Block(_header(" · ".join(bits)), neutralise(content or message.content),
                                 "error_receipt" if is_error else "receipt", turn, protected=is_error))
        else:
            where = "before T1" if turn == 0 else f"after T{turn}"
            body = message.content
            if message.role == "user" and not query_shown and body.strip() == trajectory.query.strip():
                query_shown = True
                body = "(the original query, shown above)"
            blocks.append(_Block(_header(f"{message.role} ({where})", message.name), neutralise(body), "context", turn))
    return blocks


def _header(label: str, name: str | None = None) -> str:
    who = f" [{neutralise(name)}]" if name else ""
    return f"{HEADER_OPEN}{label}{who}{HEADER_CLOSE}"


def _assistant_body(message: Message) -> str:
    parts = []
    if message.reasoning:
        parts.append(f"(reasoning) {message.reasoning}")
    if message.content:
        parts.append(message.content)
    for call in message.tool_calls:
        if call.arguments_error:
            arguments = f"{call.raw_arguments}  (arguments did not parse: {call.arguments_error})"
        else:
            arguments = json.dumps(call.arguments, ensure_ascii=False)
        parts.append(f"-> call {call.name} (id {call.id}): {arguments}")
    return neutralise("\n".join(parts))
