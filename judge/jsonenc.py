"""JSON encoders built once: the run encodes several small values per trajectory (argument texts and hashes,
rows of the report and of the run directory)."""

from __future__ import annotations

import json
from collections.abc import Callable
from json.encoder import c_make_encoder, encode_basestring, encode_basestring_ascii  # type: ignore[attr-defined]
from typing import Any


def encoder_once(encoder: json.JSONEncoder) -> Callable[[Any], str]:
    """``encoder.encode`` with its C encoder built once: ``JSONEncoder.encode`` builds one at every call (~1 us,
    a fifth of a summary row's cost). The same C function writes the same text. Circular references are not
    looked for (the values are trees read from JSON or dumped from models). The json module's own ``encode``
    where it has no C encoder (CPython's accelerator is not public API: absent elsewhere, and untyped)."""
    if c_make_encoder is None:
        return encoder.encode
    if encoder.indent is not None:
        raise ValueError("encoder_once: the C encoder does not indent")
    escape = encode_basestring_ascii if encoder.ensure_ascii else encode_basestring
    made = c_make_encoder(None, encoder.default, escape, None, encoder.key_separator, encoder.item_separator,
                          encoder.sort_keys, encoder.skipkeys, encoder.allow_nan)

    def encode(value: Any) -> str:
        return "".join(made(value, 0))

    return encode


# The two plain encoders of the run's rows (no sorted keys: the key order is the row's own).
row_json = encoder_once(json.JSONEncoder(ensure_ascii=False, default=str))
"""``json.dumps(value, ensure_ascii=False, default=str)``: a JSONL row of a dict (summary rows, dict rows)."""
compact_json = encoder_once(json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=str))
"""The same without spaces: the report's page data (index rows, the free-form parts of a view)."""

# The two sorted-key encoders (the text of a value whatever order its keys came in).
canonical_json = encoder_once(json.JSONEncoder(ensure_ascii=False, sort_keys=True, default=str))
"""``json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)``: the argument text the rules judge reads."""
sorted_compact_json = encoder_once(json.JSONEncoder(ensure_ascii=False, sort_keys=True, default=str,
                                                    separators=(",", ":")))
"""The same without spaces: what content and argument hashes are taken of."""
