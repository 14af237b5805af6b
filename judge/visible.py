"""Text from the data, made safe to show: control and bidi characters become visible escapes.

A trajectory id such as ``invoice-\\u202efdp.exe`` renders as ``invoice-exe.pdf`` when the right-to-left
override is shown raw, and an ANSI sequence in a receipt (``\\x1b[2J``) clears the terminal that prints it.
Every display of data - the terminal (``judge show``), report.md and report.html - passes text through
:func:`visible`, which writes such characters as ``\\u202e`` / ``\\x1b``. Line breaks and tabs stay.
"""

from __future__ import annotations

import re

# C0 controls except tab and line breaks, DEL, C1 controls, and the bidi embedding/override/isolate controls
# (which reorder what follows them): never meant to be seen raw. The pattern is also the report page's (its
# script renders the viewer in the browser with the same table: judge.report.render passes it on).
CONTROL_PATTERN = r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]"
CONTROL = re.compile(CONTROL_PATTERN)
# In identifiers also the invisible ones (zero-width, bidi marks, BOM), so two ids that look alike differ.
_INVISIBLE = re.compile(r"[\x00-\x1f\x7f-\x9f\u00ad\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]")


def _escape(match: re.Match[str]) -> str:
    # reports/report.js writes the same escapes (its function text)
    code = ord(match.group(0))
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: str, *, identifier: bool = False) -> str:
    """``text`` with control and bidi control characters written as escapes (``\\x1b``, ``\\u202e``).

    With ``identifier`` (ids, names) invisible characters and line breaks are escaped too.
    """
    return (_INVISIBLE if identifier else CONTROL).sub(_escape, text)
