"""The judge-answer cache shared across runs: the same question scored into a new ``--out`` costs nothing.

A run's own store (:mod:`judge.store`) keeps every verdict the run used; this cache keeps the *successful* ones
(status ``ok``: parsed, validated) of every run, in one SQLite file in the user's cache directory, so another run
asking the same question takes the answer instead of paying for it again. Failures are never shared: a rerun
must be able to try them again, and a parse error of one run says nothing about another's.

The key (:func:`shared_key`) is content-addressed: the run store's key of the pass (trajectory content hash,
prompt version, provider, model, parameters such as endpoint, temperature, seed, output schema, windows, and the
pass index; secrets redacted) plus a hash of the prompt template's text, so an edited template that kept its
version number is a different question. No spec, URL or parameter is stored unredacted, and a stored answer is
scrubbed of registered secret values (:mod:`judge.secrets`).

Location: ``--cache-dir`` (``cache-dir:`` in a config file), else ``$TRAJUDGE_CACHE_DIR``, else
``$XDG_CACHE_HOME/trajudge``, else ``~/.cache/trajudge``; ``--no-shared-cache`` (``no-shared-cache: true``) turns
it off. Several processes may use it at once: SQLite in WAL mode, a busy timeout, and writes that are each one
short transaction (the first answer stored for a key is kept). A cache that cannot be opened is skipped with a
warning: it saves money, a run never depends on it.
"""

from __future__ import annotations

import copy
import fnmatch
import hashlib
import json
import os
import sqlite3
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, overload

from judge.secrets import redact, scrub
from judge.store import cache_key

CACHE_FILE = "cache.sqlite"
ENV_DIR = "TRAJUDGE_CACHE_DIR"
BUSY_TIMEOUT_S = 60.0  # other processes' writes are short: waiting is always better than failing a run
PUTS_CHUNK = 64  # answers :meth:`SharedCache.add` keeps before it stores them in one transaction
KEY_VERSION = 1
SHARED = "shared"  # Verdict.cached_from of an answer taken from this cache

MIGRATIONS: list[str] = [
    """
    CREATE TABLE verdicts (
        key TEXT PRIMARY KEY,
        judge TEXT NOT NULL,
        provider TEXT NOT NULL,
        model TEXT NOT NULL,
        prompt_version TEXT,
        pass_index INTEGER NOT NULL,
        trajectory_hash TEXT NOT NULL,
        verdict TEXT NOT NULL,
        cost_usd REAL,
        output_tokens INTEGER,
        calls INTEGER NOT NULL,
        bytes INTEGER NOT NULL,
        created REAL NOT NULL,
        last_used REAL NOT NULL,
        hits INTEGER NOT NULL DEFAULT 0
    );
    CREATE INDEX verdicts_last_used ON verdicts(last_used);
    CREATE INDEX verdicts_judge ON verdicts(judge);
    """,
]


def default_cache_dir() -> Path:
    """``$TRAJUDGE_CACHE_DIR``, else ``$XDG_CACHE_HOME/trajudge``, else ``~/.cache/trajudge``."""
    if os.environ.get(ENV_DIR):
        return Path(os.environ[ENV_DIR]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).expanduser() / "trajudge"


def cache_path(directory: Path | str | None = None) -> Path:
    """The cache file in ``directory`` (default :func:`default_cache_dir`)."""
    return (Path(directory).expanduser() if directory else default_cache_dir()) / CACHE_FILE


def template_hash(judge: Any) -> str | None:
    """A hash of the judge's prompt template text (sections and front matter), or None for a judge without one."""
    template = getattr(judge, "template", None)
    sections = getattr(template, "sections", None)
    if sections is None:
        return None
    meta = getattr(template, "meta", {})
    # Every pass asks for it (its shared key), and the template's JSON is a few KB: computed once per template
    # object, and again if its sections or front matter were replaced or changed since.
    kept = _template_hashes.get(id(template))
    if kept is not None and kept[0] is template and kept[1] is sections and kept[2] == meta:
        return kept[3]
    payload = json.dumps([meta, sections], sort_keys=True, ensure_ascii=False, default=str)
    digest = hashlib.sha256(payload.encode("utf-8")).hexdigest()
    if len(_template_hashes) >= 64:
        _template_hashes.clear()
    _template_hashes[id(template)] = (template, sections, copy.deepcopy(meta), digest)  # held: its id stays its own
    return digest


_template_hashes: dict[int, tuple[Any, Any, Any, str]] = {}


def shared_key(run_key: str, judge: Any) -> str:
    """The shared-cache key of a pass whose run-store key is ``run_key`` (see the module docstring)."""
    return cache_key(kind="judge-verdict", version=KEY_VERSION, run_key=run_key, template=template_hash(judge))


@dataclass(frozen=True)
class CachedAnswer:
    """A shared verdict: the verdict row (run-specific fields to be replaced) and what it cost when it was paid."""

    verdict: dict[str, Any]
    cost_usd: float | None


@dataclass
class JudgeStats:
    judge: str
    model: str
    entries: int
    hits: int
    bytes: int
    cost_usd: float  # what the stored answers cost when they were paid for
    saved_usd: float  # hits x cost: what runs did not pay again


@dataclass
class CacheStats:
    """``judge cache stats``: the file, its entries and how often they were used."""

    path: str
    exists: bool
    entries: int = 0
    hits: int = 0
    file_bytes: int = 0
    payload_bytes: int = 0
    saved_usd: float = 0.0
    oldest: float | None = None
    newest: float | None = None
    by_judge: list[JudgeStats] = field(default_factory=list)


@dataclass
class PruneResult:
    removed: int
    kept: int
    bytes_before: int
    bytes_after: int


class SharedCache:
    """The shared cache file. One instance per process (not shared across threads); see the module docstring."""

    def __init__(self, path: Path, db: sqlite3.Connection, readonly: bool):
        self.path = path
        self._db = db
        self.readonly = readonly
        self._pending: list[tuple[str, dict[str, Any], dict[str, Any]]] = []  # add()ed, not stored yet

    @overload
    @classmethod
    def open(cls, directory: Path | str | None = None, *, readonly: Literal[False] = False) -> SharedCache: ...

    @overload
    @classmethod
    def open(cls, directory: Path | str | None = None, *, readonly: bool) -> SharedCache | None: ...

    @classmethod
    def open(cls, directory: Path | str | None = None, *, readonly: bool = False) -> SharedCache | None:
        """The cache in ``directory`` (default :func:`default_cache_dir`). Read-only: None when there is no file
        yet (nothing is created). Raises ``sqlite3.Error``/``OSError`` when it cannot be opened."""
        path = cache_path(directory)
        if readonly:
            if not path.exists():
                return None
            db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=BUSY_TIMEOUT_S,
                                 isolation_level=None)
            return cls(path, db, readonly=True)
        path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
        db.execute(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT_S * 1000)}")
        db.execute("PRAGMA journal_mode=WAL")  # readers never block the writer, nor the writer them
        db.execute("PRAGMA synchronous=NORMAL")
        cache = cls(path, db, readonly=False)
        cache._migrate()
        return cache

    def _migrate(self) -> None:
        # IMMEDIATE: two processes opening a new cache at once must not both create the tables.
        self._db.execute("BEGIN IMMEDIATE")
        try:
            current = int(self._db.execute("PRAGMA user_version").fetchone()[0])
            if current > len(MIGRATIONS):
                raise sqlite3.DatabaseError(f"{self.path} has schema version {current}, newer than this trajudge "
                                            f"knows ({len(MIGRATIONS)})")
            for version, sql in enumerate(MIGRATIONS[current:], start=current + 1):
                for statement in (s.strip() for s in sql.split(";")):
                    if statement:
                        self._db.execute(statement)
                self._db.execute(f"PRAGMA user_version={version}")
            self._db.execute("COMMIT")
        except BaseException:
            self._db.execute("ROLLBACK")
            raise

    def close(self) -> None:
        """Store what :meth:`add` keeps (a failure here still closes the file, and raises), then close."""
        try:
            self.flush()
        finally:
            self._db.close()

    def __enter__(self) -> SharedCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- answers -------------------------------------------------------------------------------

    def get(self, key: str) -> CachedAnswer | None:
        """The answer stored under ``key``, or None (a lookup is not a hit: :meth:`record_hits` counts use)."""
        row = self._db.execute("SELECT verdict, cost_usd FROM verdicts WHERE key = ?", (key,)).fetchone()
        return CachedAnswer(json.loads(row[0]), row[1]) if row else None

    def record_hits(self, keys: list[str]) -> None:
        """Count one use of each key (in one transaction) and mark them recently used (pruning keeps them)."""
        if not keys or self.readonly:
            return
        now = time.time()
        self._db.execute("BEGIN IMMEDIATE")
        try:
            self._db.executemany("UPDATE verdicts SET hits = hits + 1, last_used = ? WHERE key = ?",
                                 [(now, key) for key in keys])
            self._db.execute("COMMIT")
        except BaseException:
            self._db.execute("ROLLBACK")
            raise

    def put(self, key: str, verdict: dict[str, Any], *, judge: str, provider: str, model: str,
            prompt_version: str | None, pass_index: int, trajectory_hash: str) -> bool:
        """Store a successful verdict (status ok; anything else is refused). The first answer stored under a key
        is kept. Returns whether this call stored it."""
        if verdict.get("status") != "ok":
            raise ValueError("only successful verdicts are shared across runs")
        verdict = {**verdict, "judge": redact(verdict.get("judge")), "raw": None}
        text = scrub(json.dumps(verdict, ensure_ascii=False))
        usage = verdict.get("usage") or {}
        now = time.time()
        cursor = self._db.execute(
            "INSERT OR IGNORE INTO verdicts (key, judge, provider, model, prompt_version, pass_index, trajectory_hash,"
            " verdict, cost_usd, output_tokens, calls, bytes, created, last_used) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (key, redact(judge), provider, model, prompt_version, pass_index, trajectory_hash, text,
             verdict.get("cost_usd"), usage.get("output_tokens"), max(1, int(verdict.get("attempts") or 1)),
             len(text.encode("utf-8")), now, now))
        return cursor.rowcount > 0

    def add(self, key: str, verdict: dict[str, Any], *, judge: str, provider: str, model: str,
            prompt_version: str | None, pass_index: int, trajectory_hash: str) -> None:
        """:meth:`put`, kept until :data:`PUTS_CHUNK` answers wait (or :meth:`flush`, :meth:`close`) and then stored in
        one transaction: a run's puts each committed on their own cost a write of the shared file (and its lock) per
        verdict. Until then other processes do not see them; a process killed meanwhile loses them here only (its
        run store holds them). A refused verdict (not ok) raises at once."""
        if verdict.get("status") != "ok":
            raise ValueError("only successful verdicts are shared across runs")
        self._pending.append((key, verdict, {"judge": judge, "provider": provider, "model": model,
                                             "prompt_version": prompt_version, "pass_index": pass_index,
                                             "trajectory_hash": trajectory_hash}))
        if len(self._pending) >= PUTS_CHUNK:
            self.flush()

    def flush(self) -> int:
        """Store the answers :meth:`add` keeps, in one transaction; returns how many were new. On a failure they are
        dropped (the error is raised): the cache saves money, a run never depends on it."""
        if not self._pending:
            return 0
        pending, self._pending = self._pending, []
        self._db.execute("BEGIN IMMEDIATE")
        try:
            stored = sum(self.put(key, verdict, **fields) for key, verdict, fields in pending)
            self._db.execute("COMMIT")
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        return stored

    def output_tokens_per_call(self, provider: str, model: str, min_calls: int = 5) -> float | None:
        """Mean output tokens per call of the stored answers of ``provider:model`` (a dry run's estimate), or None
        when fewer than ``min_calls`` calls are known."""
        calls, tokens = self._db.execute(
            "SELECT COALESCE(SUM(calls), 0), SUM(output_tokens) FROM verdicts WHERE provider = ? AND model = ?"
            " AND output_tokens IS NOT NULL", (provider, model)).fetchone()
        return tokens / calls if calls >= min_calls and tokens is not None else None

    # --- maintenance ---------------------------------------------------------------------------

    def file_bytes(self) -> int:
        return sum(p.stat().st_size for p in (self.path, Path(f"{self.path}-wal")) if p.exists())

    def stats(self) -> CacheStats:
        """Entries, size, hits and savings, by judge and model."""
        entries, hits, payload, saved, oldest, newest = self._db.execute(
            "SELECT COUNT(*), COALESCE(SUM(hits), 0), COALESCE(SUM(bytes), 0), COALESCE(SUM(hits * cost_usd), 0),"
            " MIN(created), MAX(created) FROM verdicts").fetchone()
        by_judge = [JudgeStats(*row) for row in self._db.execute(
            "SELECT judge, model, COUNT(*), COALESCE(SUM(hits), 0), COALESCE(SUM(bytes), 0),"
            " COALESCE(SUM(cost_usd), 0), COALESCE(SUM(hits * cost_usd), 0) FROM verdicts"
            " GROUP BY judge, model ORDER BY COUNT(*) DESC, judge")]
        return CacheStats(path=str(self.path), exists=True, entries=entries, hits=hits, file_bytes=self.file_bytes(),
                          payload_bytes=payload, saved_usd=saved, oldest=oldest, newest=newest, by_judge=by_judge)

    def prune(self, *, older_than_days: float | None = None, judge: str | None = None,
              max_size_mb: float | None = None, now: float | None = None) -> PruneResult:
        """Remove entries not used for ``older_than_days``, entries of judges matching ``judge`` (a spec as
        recorded, redacted; ``*`` wildcards allowed), then the least recently used ones until the stored answers
        take at most ``max_size_mb``; then compact the file. The filters given all apply, in that order."""
        now = time.time() if now is None else now
        before = self.file_bytes()
        removed = 0
        self._db.execute("BEGIN IMMEDIATE")
        try:
            if older_than_days is not None:
                removed += self._db.execute("DELETE FROM verdicts WHERE last_used < ?",
                                            (now - older_than_days * 86400.0,)).rowcount
            if judge is not None:
                pattern = redact(judge)
                names = [name for (name,) in self._db.execute("SELECT DISTINCT judge FROM verdicts")
                         if fnmatch.fnmatchcase(name, pattern)]
                for name in names:
                    removed += self._db.execute("DELETE FROM verdicts WHERE judge = ?", (name,)).rowcount
            if max_size_mb is not None:
                limit = int(max_size_mb * 1_000_000)
                total = 0
                doomed: list[tuple[str]] = []
                for key, size in self._db.execute("SELECT key, bytes FROM verdicts ORDER BY last_used DESC, created DESC"):
                    total += size
                    if total > limit:
                        doomed.append((key,))
                self._db.executemany("DELETE FROM verdicts WHERE key = ?", doomed)
                removed += len(doomed)
            self._db.execute("COMMIT")
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        if removed:
            self._db.execute("VACUUM")  # give the space back; waits (busy timeout) for other processes' writes
            self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        (kept,) = self._db.execute("SELECT COUNT(*) FROM verdicts").fetchone()
        return PruneResult(removed=removed, kept=kept, bytes_before=before, bytes_after=self.file_bytes())


def open_shared_cache(enabled: bool, directory: str | Path | None, warn: Any = None) -> SharedCache | None:
    """The shared cache for a run, or None when it is turned off or cannot be opened (``warn`` hears why: a run
    goes on without it)."""
    if not enabled:
        return None
    try:
        return SharedCache.open(directory)
    except (OSError, sqlite3.Error) as error:
        if warn is not None:
            warn(f"warning: the shared cache is not used ({error}); answers are kept in the run's own store only")
        return None
