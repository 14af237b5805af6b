"""Judge prompts: versioned templates filled strictly, and trajectories rendered safely within a token budget.

Templates are files in prompts/ with a front matter (``version:`` is required) and role sections
(``<!-- role: system -->``, ``<!-- role: user -->``). Variables are written ``{{ name }}``; filling is
strict: a variable the template uses but the caller did not give, or one the caller gave but the template
does not use, is an error (simonw/llm templates).

Trajectory text is untrusted: every field of a trajectory that reaches any prompt (query, content, reasoning,
names, call ids, tool names, arguments, receipts, metadata, tool schemas, reference answer; the teacher and
rewrite prompts too) goes through the one function :func:`neutralise`, so it cannot close the prompt's
delimiters (``</trajectory>``, ``</query>``), forge a turn header, or pose as a chat role, in the spirit of
inspect_ai's ``neutralize_structural_delimiters``.

Elision (when a trajectory does not fit ``max_tokens``), in order, stopping as soon as it fits:

1. shorten long *successful* tool receipts middle-out, with caps of 8000, 4000, 2000, 1000, 500, 200 chars;
2. then shorten the bodies of the *middle* turns (assistant text, reasoning, calls) and of system/user
   messages with the same caps;
3. then shorten the protected blocks - the first and last turn and every *error* receipt - to 2000 chars.

Every cut is marked ``[... N chars elided ...]`` and every block header stays, so turn numbers are intact
and a judge can see what was cut. The original query is never cut. If the text still does not fit, the
rendering says so (``fits=False``) and the pass is unscored ``context_overflow``; nothing is dropped silently.

Long trajectories (judge prompt v2): :func:`plan_windows` splits the turns into overlapping windows that each
fit the budget, with absolute turn numbers; each window's prompt keeps the query and a compact, code-made
:func:`digest` of the turns before it (``judge.judges.llm`` runs one call per window and merges the issues).
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any

import yaml

from judge.model import Message, ToolSpec, Trajectory, TrajectoryMetadata
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

    @cached_property
    def variables(self) -> frozenset[str]:
        # Read at every render and by every pass's cache key: scanned once (the sections never change).
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

# Tags the prompts use as delimiters (judge, teacher and rewrite prompts), plus role-like tags a trajectory
# could use to pose as the prompt. One list, so every prompt is protected the same way.
DELIMITER_TAGS = (
    "trajectory", "query", "instructions", "system", "user", "assistant", "tool", "tools", "turn", "receipt",
    "task_outcome", "reference_answer", "earlier_turns", "fact_log",  # judge-v2 and v3 context blocks
    "transcript", "issue", "evidence", "original", "rewrite", "failure",  # teacher / rewrite prompts
)
HEADER_OPEN, HEADER_CLOSE = "\u27e6", "\u27e7"  # ⟦ ⟧: block headers of the rendered trajectory only
_HEADER_LOOKALIKES = {HEADER_OPEN: "[", HEADER_CLOSE: "]", "\u301a": "[", "\u301b": "]"}  # ⟦ ⟧ 〚 〛
# Characters a reader does not see: every format character (Unicode category Cf: zero-width spaces and
# joiners, bidi marks and isolates, invisible operators, tags E0000-E007F) and the other default-ignorable
# code points (variation selectors FE00-FE0F and E0100-E01EF, Hangul fillers, Mongolian selectors ...).
# tests/adversarial/test_prompt_invisibles.py checks every Cf code point of the running Python is here.
_INVISIBLE = ("\u00ad\u034f\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u115f\u1160\u17b4\u17b5"
              "\u180b-\u180f\u200b-\u200f\u202a-\u202e\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0"
              "\ufff0-\ufffb\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3"
              "\U0001d173-\U0001d17a\U000e0000-\U000e0fff")
_HIDDEN = re.compile(f"[{_INVISIBLE}]+")
_GAP = f"[\\s{_INVISIBLE}]*"  # spaces or invisibles a model reads through


def _word(word: str) -> str:
    """``word`` as a pattern that also matches it with invisible characters between its letters."""
    return f"[{_INVISIBLE}]*".join(re.escape(letter) for letter in word)


_TAG_NAMES = "|".join(_word(name) for name in sorted(DELIMITER_TAGS, key=len, reverse=True))
# "<", full-width "＜" or small "﹤", then an optional "/", then a delimiter name (spaces or invisibles between).
_TAG = re.compile(rf"[<\uff1c\ufe64]((?:{_GAP}/)?{_GAP}(?:{_TAG_NAMES})(?![\w-]))", re.IGNORECASE)
_CHAT_TOKEN = re.compile(f"<[{_INVISIBLE}]*\\|")  # <|im_start|>, <|system|>, <|endoftext|> ...
_INST = re.compile(f"\\[[{_INVISIBLE}]*(/?)[{_INVISIBLE}]*({_word('INST')}|{_word('SYS')})[{_INVISIBLE}]*\\]"
                   f"|<[{_INVISIBLE}]*<[{_INVISIBLE}]*(/?)[{_INVISIBLE}]*{_word('SYS')}[{_INVISIBLE}]*>[{_INVISIBLE}]*>",
                   re.IGNORECASE)
_ROLE_WORDS = "|".join(_word(word) for word in ("Human", "Assistant", "System", "User"))
_ROLE_LINE = re.compile(rf"^({_GAP})(#{{1,6}}{_GAP})?({_ROLE_WORDS}){_GAP}:", re.IGNORECASE | re.MULTILINE)
# Line breaks, other control characters and bidi overrides: not allowed inside a one-line field (a header).
_NOT_INLINE = re.compile(r"[\x00-\x1f\x7f\x85\u2028\u2029\u202a-\u202e\u2066-\u2069]+")


def _visible(text: str) -> str:
    """``text`` without its invisible characters (used on delimiter-like sequences only)."""
    return _HIDDEN.sub("", text)


def neutralise(text: Any, *, inline: bool = False) -> str:
    """Make one untrusted field safe to place inside a prompt's data block. Idempotent.

    - ``<trajectory>``, ``</query>``, ``<system>``, ``</tools>`` ... (also written with a full-width ``＜`` or
      with invisible characters inside) become ``&lt;trajectory>`` ...: they cannot close or open a
      delimiter of any prompt, while staying readable;
    - invisible characters (every format character, category Cf, variation selectors, tags, and the other
      default-ignorable code points) are removed from inside every delimiter-like sequence (tags, chat
      tokens, ``[INST]``, role words at a line start); elsewhere they are kept, so an emoji's joiner or a
      Persian zero-width non-joiner in ordinary text is unchanged;
    - the block-header brackets ⟦ ⟧ (and look-alikes 〚 〛) become [ ], so no text can forge a turn header;
    - chat-template tokens (``<|im_start|>``, ``[INST]``, ``<<SYS>>``) are defanged;
    - lines starting ``Human:`` / ``Assistant:`` / ``System:`` are marked as quoted text;
    - ``inline=True`` (names, call ids, anything shown in a block header) also turns line breaks, control
      characters and bidi overrides into spaces, so a field cannot start a line of its own.

    ``text`` that is not a string (a number, None) is shown as ``str(text)``.
    """
    out: str = "" if text is None else str(text)
    for char, plain in _HEADER_LOOKALIKES.items():
        out = out.replace(char, plain)
    if inline:
        out = _NOT_INLINE.sub(" ", out)
    # Each pattern below needs a character that most fields lack: a field without it skips that scan. No
    # replacement is a template string ("&lt;\1"): re hashes the compiled pattern (kilobytes of code, for the
    # invisible-character classes) to look a template up on every sub() call, ~40 us a field (issue 27); the
    # functions run per match (rare) and drop invisibles from the matched delimiter only, so no scan for them.
    angle = "<" in out
    if angle or "\uff1c" in out or "\ufe64" in out:
        out = _TAG.sub(_tag, out)
    if angle:
        out = _CHAT_TOKEN.sub("&lt;|", out)  # a literal (no backslash): no template to look up
    if angle or "[" in out:
        out = _INST.sub(_inst, out)
    if ":" not in out:
        return out
    # "(quoted) Human:" no longer starts with a role word, so a second pass leaves it alone.
    return _ROLE_LINE.sub(_role, out)


def _tag(match: re.Match[str]) -> str:
    return "&lt;" + _visible(match.group(1))


def _inst(match: re.Match[str]) -> str:
    return _visible(match.group(0)).replace("[", "(").replace("]", ")").replace("<<", "((")


def _role(match: re.Match[str]) -> str:
    return f"{match.group(1)}{match.group(2) or ''}(quoted) {_visible(match.group(3))}:"


def neutralise_json(value: Any) -> str:
    """A JSON value (arguments, schemas) as compact text, neutralised (keys and strings alike)."""
    return neutralise(json.dumps(value, ensure_ascii=False, default=str))


# --- token estimate ----------------------------------------------------------------------------

def estimate_tokens(text: str) -> int:
    """Tokens in ``text``: tiktoken's o200k_base count when tiktoken is installed, else an estimate.

    The estimate is ceil(ASCII chars / 4 + other chars): chars/4 is the usual rule for English and code,
    while CJK, Cyrillic or Arabic text takes about a token per one to three characters. Counting each non-ASCII
    character as a token over-estimates those scripts, which only makes windows smaller, never too large.
    """
    encoder = _encoder()
    if encoder is not None:
        return len(encoder.encode(text, disallowed_special=()))
    # Encoding with errors="ignore" keeps exactly the ASCII characters, in C: a regex findall over a 24 KB prompt
    # cost ~2 ms per judge call, a quarter of the panel's CPU on real trajectories (issue 27).
    ascii_chars = len(text) if text.isascii() else len(text.encode("ascii", "ignore"))
    return math.ceil(ascii_chars / 4 + (len(text) - ascii_chars))


def token_count_method() -> str:
    """How :func:`estimate_tokens` counts on this machine, for reports that print token figures."""
    if _encoder() is not None:
        return "tiktoken o200k_base"
    why = ("tiktoken is installed, but its o200k_base file is not in its cache or TIKTOKEN_CACHE_DIR"
           if sys.modules.get("tiktoken") is not None else "tiktoken is not installed")  # _encoder() has tried to import it
    return f"estimate: ASCII chars / 4 + 1 per other char ({why})"


@lru_cache(maxsize=1)
def _encoder() -> Any:
    """tiktoken's o200k_base encoder if tiktoken is installed AND its encoding file is already in its local
    cache; None otherwise. tiktoken downloads a missing file on first use: counting tokens must never reach
    the network (runs are offline and a download would make window plans differ between machines)."""
    try:
        import tiktoken  # optional, not a dependency
        import tiktoken.load as tiktoken_load
    except Exception:
        return None

    def refuse_download(blobpath: str) -> bytes:
        raise OSError(f"trajudge does not download tiktoken files ({blobpath}); put it in TIKTOKEN_CACHE_DIR to use it")

    fetch = getattr(tiktoken_load, "read_file", None)
    if fetch is None:  # a tiktoken whose loader we do not know: do not risk a download
        return None
    tiktoken_load.read_file = refuse_download
    try:
        return tiktoken.get_encoding("o200k_base")
    except Exception:  # the encoding file is not cached locally
        return None
    finally:
        tiktoken_load.read_file = fetch


# --- trajectory rendering ----------------------------------------------------------------------

RECEIPT_CAPS = (8000, 4000, 2000, 1000, 500, 200)
PROTECTED_CAP = 2000
MILD_CAP = 1000  # "fits whole": successful receipts may be cut to this before a trajectory is windowed


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
    """The trajectory (or a window of it) as the judge sees it. ``fits`` is False when even full elision
    exceeds the budget."""

    text: str
    turn_count: int
    estimated_tokens: int
    fits: bool
    elided_chars: int = 0
    elided_blocks: int = 0
    first_turn: int = 1
    last_turn: int = 0

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


def render_trajectory(trajectory: Trajectory, max_tokens: int, *, turns: tuple[int, int] | None = None,
                      mild: bool = False) -> RenderedTrajectory:
    """Render messages in source order with turn headers (⟦T3 assistant⟧, ⟦T3 tool result ...⟧), eliding
    per the module docstring when the estimate exceeds ``max_tokens``.

    ``turns=(a, b)`` renders only turns a..b (the messages before T1 when a is 1), with absolute numbers.
    ``mild=True`` only shortens successful receipts, to no less than :data:`MILD_CAP` chars (used to decide
    whether a trajectory fits whole or goes to windows).
    """
    blocks = _blocks_of(trajectory)
    if turns is not None:
        first, last = turns
        blocks = [b for b in blocks if first <= b.turn <= last or (b.turn == 0 and first <= 1)]
    else:
        first, last = 1, trajectory.turn_count
    return _fit(blocks, max_tokens, trajectory.turn_count, mild=mild, span=(first, last))


def _fit(blocks: list[_Block], max_tokens: int, turn_count: int, *, mild: bool, span: tuple[int, int]) -> RenderedTrajectory:
    originals = [b.body for b in blocks]

    def measure() -> int:
        return estimate_tokens(_join(blocks))

    stages: list[Callable[[_Block], bool]] = [lambda b: b.kind == "receipt" and not b.protected]
    if not mild:
        stages.append(lambda b: not b.protected)
    caps = [cap for cap in RECEIPT_CAPS if cap >= MILD_CAP] if mild else list(RECEIPT_CAPS)
    tokens = measure()
    for selects in stages:
        for cap in caps:
            if tokens <= max_tokens:
                break
            for index, block in enumerate(blocks):
                if selects(block):
                    block.body = shorten_middle(originals[index], cap)[0] if len(originals[index]) > cap else block.body
            tokens = measure()
    if tokens > max_tokens and not mild:
        for index, block in enumerate(blocks):
            if block.protected:
                block.body = shorten_middle(originals[index], PROTECTED_CAP)[0]
        tokens = measure()
    changed = [(block, original) for block, original in zip(blocks, originals) if block.body != original]
    return RenderedTrajectory(
        text=_join(blocks),
        turn_count=turn_count,
        estimated_tokens=tokens,
        fits=tokens <= max_tokens,
        elided_chars=max(0, sum(len(original) - len(block.body) for block, original in changed)),
        elided_blocks=len(changed),
        first_turn=span[0],
        last_turn=span[1],
    )


def _join(blocks: list[_Block]) -> str:
    return "\n\n".join(block.text() for block in blocks)


# The blocks of the trajectory rendered last, kept while it is rendered again: planning a pass renders it whole,
# sizes its turns and renders each window, and every one of those neutralised every message again (a third of the
# panel's CPU on long trajectories judged in windows; issue 27). Keyed by identity; held strongly so that the id
# cannot be reused by another object while the entry is alive.
_last_blocks: tuple[Trajectory, list[_Block]] | None = None


def _blocks_of(trajectory: Trajectory) -> list[_Block]:
    """:func:`_blocks`, computed once for consecutive renders of one trajectory object; fresh copies each time
    (:func:`_fit` shortens the bodies of the blocks it is given)."""
    global _last_blocks
    if _last_blocks is None or _last_blocks[0] is not trajectory:
        _last_blocks = (trajectory, _blocks(trajectory))
    # From the fields' dict, not dataclasses.replace, which looks the fields up again for every block (2.7 -> 1 us;
    # ~27 blocks for each real trajectory).
    return [_Block(**vars(block)) for block in _last_blocks[1]]


def _blocks(trajectory: Trajectory) -> list[_Block]:
    """One block per message; every trajectory field in a header or body goes through :func:`neutralise`."""
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
                bits.append(neutralise(receipt.name, inline=True))
            if receipt and receipt.call_id:
                bits.append(f"call {neutralise(receipt.call_id, inline=True)}")
            if receipt and receipt.exit_code is not None:
                bits.append(f"exit {int(receipt.exit_code)}")
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
            else:
                body = neutralise(body)
            blocks.append(_Block(_header(f"{message.role} ({where})", message.name), body, "context", turn))
    return blocks


def _header(label: str, name: str | None = None) -> str:
    """A block header; ``label`` is built from already neutralised parts, ``name`` is neutralised here."""
    who = f" [{neutralise(name, inline=True)}]" if name else ""
    return f"{HEADER_OPEN}{label}{who}{HEADER_CLOSE}"


def _assistant_body(message: Message) -> str:
    parts = []
    if message.reasoning:
        parts.append(f"(reasoning) {neutralise(message.reasoning)}")
    if message.content:
        parts.append(neutralise(message.content))
    for call in message.tool_calls:
        if call.arguments_error:
            arguments = (f"{neutralise(call.raw_arguments)}  "
                         f"(arguments did not parse: {neutralise(call.arguments_error, inline=True)})")
        else:
            arguments = neutralise_json(call.arguments)
        parts.append(f"-> call {neutralise(call.name, inline=True)} (id {neutralise(call.id, inline=True)}): {arguments}")
    return "\n".join(parts)


# --- context blocks of judge prompt v2 --------------------------------------------------------------

NOT_RECORDED = "not recorded"
TOOL_DESCRIPTION_CAP = 200  # chars of a tool's description shown
TOOLS_CAP = 6000  # chars of the whole tool list; beyond, tools are listed by name only


def render_outcome(metadata: TrajectoryMetadata) -> str:
    """The recorded task outcome, e.g. ``failure (reward 0)``; :data:`NOT_RECORDED` when the log has none."""
    parts = []
    if metadata.outcome:
        parts.append(neutralise(metadata.outcome, inline=True))
    if metadata.reward is not None:
        parts.append(f"reward {metadata.reward:g}")
    if not parts:
        return NOT_RECORDED
    return parts[0] if len(parts) == 1 else f"{parts[0]} ({parts[1]})"


def render_reference(metadata: TrajectoryMetadata) -> str:
    """The reference answer the log records (``TrajectoryMetadata.reference_answer``), or ``none recorded``."""
    reference = metadata.reference_answer()
    return neutralise(reference) if reference else "none recorded"


def render_tools(tools: list[ToolSpec]) -> str:
    """One line per tool: ``name(param: type, optional?: type) - description``; names only past :data:`TOOLS_CAP`."""
    if not tools:
        return "no tool schemas recorded (judge the calls by their results)"
    lines = [_tool_line(tool) for tool in tools]
    text = "\n".join(lines)
    if len(text) > TOOLS_CAP:
        text = "tools (names only, the schemas are too long to show): " + ", ".join(
            neutralise(tool.name, inline=True) for tool in tools)
    return text


def _tool_line(tool: ToolSpec) -> str:
    schema = tool.parameters if isinstance(tool.parameters, dict) else {}
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        properties = {}
    required = set(schema.get("required") or []) if isinstance(schema.get("required"), list) else set()
    params = []
    for name, spec in properties.items():
        optional = "" if name in required else "?"
        params.append(f"{neutralise(name, inline=True)}{optional}: {_type_of(spec)}")
    description = " ".join(str(tool.description or "").split())
    if len(description) > TOOL_DESCRIPTION_CAP:
        description = description[:TOOL_DESCRIPTION_CAP - 3] + "..."
    line = f"{neutralise(tool.name, inline=True)}({', '.join(params)})"
    return f"{line} - {neutralise(description, inline=True)}" if description else line


def _type_of(spec: Any) -> str:
    if not isinstance(spec, dict):
        return "any"
    if isinstance(spec.get("enum"), list):
        return "|".join(neutralise_json(v) for v in spec["enum"][:8]) + ("|..." if len(spec["enum"]) > 8 else "")
    kind = spec.get("type")
    if isinstance(kind, list):
        return "|".join(neutralise(k, inline=True) for k in kind)
    if kind == "array":
        return f"{_type_of(spec.get('items'))}[]"
    return neutralise(kind, inline=True) if isinstance(kind, str) else "any"


# --- windows for long trajectories -------------------------------------------------------------------

DIGEST_LINE_CAPS = (160, 80, 40)  # chars per turn line of the digest, tried in order
OVERLAP_TURNS = 2  # a window shows up to this many turns of the previous one again, as context
OVERLAP_SHARE = 0.25  # ... if they take at most this share of the window's budget


@dataclass(frozen=True)
class Window:
    """Turns ``shown_from``..``last`` are shown; the judge reviews ``review_from``..``last`` (the turns
    before ``review_from`` were reviewed by the previous window and are shown again for context)."""

    shown_from: int
    review_from: int
    last: int


def turn_sizes(trajectory: Trajectory) -> dict[int, int]:
    """Estimated tokens of each turn's blocks (turn 0: the messages before T1), as :func:`render_trajectory`
    shows them un-elided."""
    sizes: dict[int, int] = {}
    for block in _blocks_of(trajectory):
        sizes[block.turn] = sizes.get(block.turn, 0) + estimate_tokens(block.text()) + 1
    return sizes


def plan_windows(sizes: dict[int, int], turn_count: int, budget: int) -> list[Window]:
    """Split turns 1..``turn_count`` into consecutive windows that fit ``budget`` tokens (pure).

    Turn 0 (the messages before T1) counts towards the first window. Each later window starts with up to
    :data:`OVERLAP_TURNS` turns of the previous one as context, when they fit in :data:`OVERLAP_SHARE` of the
    budget. A turn too large for a window alone gets a window of its own (its rendering is then elided).
    Every turn is reviewed by exactly one window.
    """
    windows: list[Window] = []
    start = 1
    while start <= turn_count:
        shown_from = start
        context = sizes.get(0, 0) if start == 1 else 0
        if windows:
            while shown_from > 1 and start - shown_from < OVERLAP_TURNS:
                # Showing T1 again shows the messages before it too (render_trajectory does).
                cost = sizes.get(shown_from - 1, 0) + (sizes.get(0, 0) if shown_from - 1 == 1 else 0)
                if context + cost > OVERLAP_SHARE * budget:
                    break
                shown_from -= 1
                context += cost
        end, total = start - 1, context
        while end < turn_count and total + sizes.get(end + 1, 0) <= budget:
            end += 1
            total += sizes.get(end, 0)
        if end < start:  # not even one new turn fits beside the context: this turn alone
            shown_from, end = start, start
        windows.append(Window(shown_from, start, end))
        start = end + 1
    return windows


def digest(trajectory: Trajectory, before_turn: int, max_tokens: int) -> str:
    """A compact, code-made summary of the turns before ``before_turn``: one line per turn (start of the
    text, each call and whether its receipt is an error), shortened and then thinned from the oldest turns to
    fit ``max_tokens``. Every field is neutralised."""
    if before_turn <= 1:
        return "none: the window starts at T1"
    turns = [t for t in trajectory.turns() if t.number < before_turn]
    for cap in DIGEST_LINE_CAPS:
        lines = [_digest_line(turn, cap) for turn in turns]
        text = "\n".join(lines)
        if estimate_tokens(text) <= max_tokens:
            return text
    while len(lines) > 1 and estimate_tokens("\n".join(lines)) > max_tokens:
        lines.pop(0)
    dropped = len(turns) - len(lines)
    return f"(T1 to T{dropped}: {dropped} turns not summarised)\n" + "\n".join(lines) if dropped else "\n".join(lines)


def _clip(text: str, cap: int) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= cap else flat[: max(1, cap - 3)] + "..."


def _digest_line(turn: Any, cap: int) -> str:
    message = turn.message
    who = f" [{_clip(neutralise(message.name, inline=True), 40)}]" if message.name else ""
    parts = []
    if message.content.strip():
        parts.append(f'says "{_clip(neutralise(message.content, inline=True), cap)}"')
    receipts = {r.call_id: r for r in turn.receipts if r.call_id}
    for call in message.tool_calls:
        arguments = call.raw_arguments if call.arguments_error else json.dumps(call.arguments, ensure_ascii=False, default=str)
        bit = f"calls {_clip(neutralise(call.name, inline=True), 40)} {_clip(neutralise(arguments, inline=True), cap // 2)}"
        receipt = receipts.get(call.id)
        if receipt is not None:
            failed = receipt.is_error or receipt.exit_code not in (None, 0)
            bit += f' -> {"ERROR " if failed else ""}"{_clip(neutralise(receipt.content, inline=True), cap // 2)}"'
        parts.append(bit)
    for receipt in (r for r in turn.receipts if not r.call_id):  # results paired by position (multi-agent logs)
        failed = receipt.is_error or receipt.exit_code not in (None, 0)
        parts.append(f'result {"ERROR " if failed else ""}"{_clip(neutralise(receipt.content, inline=True), cap // 2)}"')
    return f"T{turn.number}{who}: " + ("; ".join(parts) if parts else "(no text, no call)")
