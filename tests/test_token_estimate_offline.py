"""Token counting never downloads: tiktoken is used only when its encoding file is already cached locally."""

from __future__ import annotations

import sys
import types

import pytest

from judge import prompting


@pytest.fixture
def fake_tiktoken(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """A stand-in tiktoken whose get_encoding fetches its file through tiktoken.load.read_file, as the real one does."""
    fetched: list[str] = []
    load = types.ModuleType("tiktoken.load")

    def read_file(blobpath: str) -> bytes:
        fetched.append(blobpath)
        return b"downloaded"

    load.read_file = read_file  # type: ignore[attr-defined]
    package = types.ModuleType("tiktoken")
    package.load = load  # type: ignore[attr-defined]

    def get_encoding(name: str) -> object:
        load.read_file(f"https://example.invalid/{name}.tiktoken")  # type: ignore[attr-defined]
        return object()

    package.get_encoding = get_encoding  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "tiktoken", package)
    monkeypatch.setitem(sys.modules, "tiktoken.load", load)
    prompting._encoder.cache_clear()
    yield fetched
    prompting._encoder.cache_clear()


def test_an_uncached_tiktoken_encoding_is_not_downloaded_and_the_estimate_is_used(fake_tiktoken: list[str]) -> None:
    assert prompting._encoder() is None
    assert fake_tiktoken == []  # the download was refused before it started
    assert prompting.estimate_tokens("abcd" * 10) == 10
    # installed but not cached is not "not installed" (issue 26: the export said so)
    assert prompting.token_count_method().startswith("estimate")
    assert "tiktoken is installed, but its o200k_base file is not in its cache" in prompting.token_count_method()
    assert sys.modules["tiktoken.load"].read_file.__name__ == "read_file"  # the loader is put back


def test_without_tiktoken_the_method_says_it_is_not_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "tiktoken", None)  # import tiktoken raises ImportError
    prompting._encoder.cache_clear()
    try:
        assert prompting.token_count_method().endswith("(tiktoken is not installed)")
    finally:
        prompting._encoder.cache_clear()
