"""Judges: the :class:`Judge` protocol, the :class:`BaseJudge` defaults, and the registry of judge kinds.

A judge takes a trajectory and a pass index and returns a :class:`~judge.schema.Verdict`. It never raises
for a bad model output: that is an ``unscored`` verdict with a reason. The panel (:mod:`judge.panel`) reads
only the members :class:`Judge` declares; :class:`BaseJudge` gives each a default, so a judge class states
only what differs (a local, sampled judge needs just ``spec`` and ``__call__``).

A judge spec is ``KIND`` or ``KIND:ARGUMENT`` (``rules``, ``rules:PATH``, ``replay:RUN_DIR``). Its kind is
looked up in the registry (:func:`register_judge`); a kind that names a registered LLM provider
(``openai:MODEL``, ``anthropic:MODEL``, ``openai-compatible:MODEL@URL``, or a plugin's) is served by the
judge registered with ``for_providers=True`` (the LLM judge). Judge kinds outside this package come from the
``trajudge.judges`` entry point (:mod:`judge.plugins`).
"""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol, TypedDict, TypeGuard, cast, runtime_checkable

from judge.model import Trajectory
from judge.plugins import claim_name, load_plugins, problems_note
from judge.schema import Verdict

if TYPE_CHECKING:
    from judge.providers import Provider
    from judge.providers.retry import Attempt, CallRuntime

DEFAULT_PASSES = 3  # a sampled judge alone: three passes, so that a majority means something
PLUGIN_GROUP = "trajudge.judges"
_BUILTIN_JUDGES = ("judge.judges.rules", "judge.judges.llm", "judge.judges.replay")

AttemptHook = Callable[["Attempt"], None]


class JudgeIdentity(TypedDict):
    """What besides the trajectory and the pass index decides a judge's answer: the parts of its cache key,
    also recorded per pass in run.json (``panel.members``)."""

    provider: str
    model: str
    prompt: str | None
    params: dict[str, Any]


@runtime_checkable
class Judge(Protocol):
    """One judge, ready to run passes: everything :mod:`judge.panel` uses of it.

    - ``spec``: the spec it was built from (credentials included: it is redacted wherever it is recorded).
    - ``deterministic``: the same input always gives the same verdict, so it runs once and forms a panel of
      one (the ``rules`` judge).
    - ``default_passes``: passes when it is the panel's only judge and ``--passes`` is not given.
    - ``cacheable``: its verdicts cost money, so each is kept in the run store and never asked for twice;
      a local judge is simply run again.
    - ``provider``: the LLM provider it calls (the preflight check sends it one tiny request), or None.
    - ``price_key``: ``provider:model`` in the price table, or None for a judge that pays nothing.
    - ``independence``: how its passes are kept independent (run.json records it per pass), or None.
    - ``cache_identity()``: :class:`JudgeIdentity`.
    - ``share_runtime(runtime)``: use the panel's limits, retry policy and budget for its calls.
    - ``__call__(trajectory, pass_index, on_attempt=, on_send=)``: one pass. A judge that calls a provider
      passes both hooks to :func:`judge.providers.retry.complete_with_retries`, so every attempt is recorded
      before it is sent and after it ends; a local judge ignores them.
    - ``aclose()``: release connections.

    The data members are read-only here (properties), so a judge may declare any of them as a plain attribute,
    a narrower type (``provider: Provider``) or a computed property.
    """

    @property
    def spec(self) -> str: ...

    @property
    def deterministic(self) -> bool: ...

    @property
    def default_passes(self) -> int: ...

    @property
    def cacheable(self) -> bool: ...

    @property
    def provider(self) -> Provider | None: ...

    @property
    def price_key(self) -> str | None: ...

    @property
    def independence(self) -> str | None: ...

    def cache_identity(self) -> JudgeIdentity: ...

    def share_runtime(self, runtime: CallRuntime) -> None: ...

    def __call__(self, trajectory: Trajectory, pass_index: int, *, on_attempt: AttemptHook | None = None,
                 on_send: AttemptHook | None = None) -> Awaitable[Verdict]: ...

    async def aclose(self) -> None: ...


class BaseJudge:
    """Defaults for every :class:`Judge` member but ``spec`` and ``__call__``: a local, sampled judge that pays
    nothing and calls no provider. Subclasses override what differs."""

    spec: str
    deterministic: bool = False
    default_passes: int = DEFAULT_PASSES
    cacheable: bool = False
    provider: Provider | None = None
    price_key: str | None = None
    independence: str | None = None

    def cache_identity(self) -> JudgeIdentity:
        """By default the spec names the judge: its kind is the provider part, the whole spec the model."""
        return {"provider": self.spec.split(":", 1)[0], "model": self.spec, "prompt": None, "params": {}}

    def share_runtime(self, runtime: CallRuntime) -> None:
        """A judge that calls no provider has no limits or budget to share."""

    async def aclose(self) -> None:
        """Nothing to release."""


class PartStore(Protocol):
    """The answers of the calls (parts) of one pass that takes several, kept in the run store as each arrives
    (:meth:`judge.runcalls.RunCalls.parts`). ``fingerprint`` names what the call sent: a stored answer is only
    taken for the same request."""

    def get(self, part: int, fingerprint: str) -> dict[str, Any] | None: ...

    def put(self, part: int, fingerprint: str, answer: dict[str, Any]) -> None: ...


class PartJudge(Judge, Protocol):
    """A judge whose pass may take several calls (the LLM judge's windows over a long trajectory): given
    ``parts``, it takes each call's answer from there when it has one and keeps each new answer there, so a pass
    a kill interrupted asks again only the calls that had no answer."""

    def __call__(self, trajectory: Trajectory, pass_index: int, *, on_attempt: AttemptHook | None = None,
                 on_send: AttemptHook | None = None, parts: PartStore | None = None) -> Awaitable[Verdict]: ...


def keeps_parts(judge: Judge) -> TypeGuard[PartJudge]:
    """Whether ``judge`` takes ``parts=`` (:class:`PartJudge`): a paid judge that says so (``keeps_parts = True``)."""
    return bool(judge.cacheable and getattr(judge, "keeps_parts", False) is True)


JudgeFactory = Callable[[str, dict[str, Any]], Judge]
JudgeFn = Judge  # the former name of the protocol

_REGISTRY: dict[str, JudgeFactory] = {}
_PROVIDER_JUDGE: list[JudgeFactory] = []  # the factory for specs whose kind is an LLM provider
_LOCAL_KINDS: set[str] = set()  # kinds registered with local=True


def register_judge(kind: str | None = None, *, for_providers: bool = False,
                   local: bool = False) -> Callable[[JudgeFactory], JudgeFactory]:
    """Register ``factory(spec, options) -> Judge`` for specs of kind ``kind`` (``kind`` or ``kind:...``).

    ``for_providers=True`` makes it the judge of every spec whose kind is a registered LLM provider (there is
    one such factory: the LLM judge, which needs no kind of its own). ``local=True`` declares that its judges
    call no provider and no network (the ``rules`` and ``replay`` judges): a panel of such judges only judges
    as fast as it reads, so ``judge score`` judges while it imports (:func:`is_local`). A kind taken by another
    factory is an error.
    """
    if kind is None and not for_providers:
        raise ValueError("register_judge needs a kind, or for_providers=True")
    if local and (kind is None or for_providers):
        raise ValueError("register_judge(local=True) needs a kind of its own (provider judges make calls)")

    def decorate(factory: JudgeFactory) -> JudgeFactory:
        _load_builtin_judges()  # first, so that no other registration can take a built-in kind
        if kind is not None:
            claim_name(_REGISTRY, kind, factory, "judge kind")
            if local:
                _LOCAL_KINDS.add(kind)
        if for_providers:
            _PROVIDER_JUDGE[:] = [factory]
        return factory

    return decorate


def unregister_judge(kind: str) -> None:
    """Remove a judge kind (tests that register one for their own duration)."""
    _REGISTRY.pop(kind, None)
    _LOCAL_KINDS.discard(kind)


def is_local(spec: str) -> bool:
    """Whether ``spec``'s kind was registered with ``local=True``: its judge calls no provider. An unknown kind
    or a provider spec is not local."""
    _load_judges()
    return spec.split(":", 1)[0] in _LOCAL_KINDS


def judge_kinds() -> list[str]:
    """Every registered judge kind, sorted (LLM provider names are judge specs too: see :func:`resolve`)."""
    _load_judges()
    return sorted(_REGISTRY)


def resolve(spec: str) -> JudgeFactory:
    """The factory of ``spec``'s kind; a ValueError listing the known kinds and providers when there is none."""
    _load_judges()
    kind = spec.split(":", 1)[0]
    factory = _REGISTRY.get(kind)
    if factory is not None:
        return factory
    from judge.providers import PLUGIN_GROUP as PROVIDER_PLUGINS
    from judge.providers import provider_kind, provider_names, redact

    if _PROVIDER_JUDGE and provider_kind(kind) is not None:
        return _PROVIDER_JUDGE[0]
    raise ValueError(f"unknown judge {redact(spec)!r}; known judge kinds: {', '.join(sorted(_REGISTRY)) or 'none'}; "
                     f"LLM providers (as PROVIDER:MODEL): {', '.join(provider_names()) or 'none'}"
                     + problems_note(PLUGIN_GROUP) + problems_note(PROVIDER_PLUGINS))


def make_judge(spec: str, options: dict[str, Any] | None = None) -> Judge:
    """Build the judge for ``spec`` ("rules", "openai:gpt-4o", ...), checked by :func:`check_judge`."""
    return check_judge(spec, resolve(spec)(spec, options or {}))


def check_judge(spec: str, judge: Any) -> Judge:
    """``judge`` itself when it has every :class:`Judge` member; else a TypeError naming the missing ones (a
    plugin's judge fails here, when it is built, not in the middle of a batch)."""
    missing = [name for name in _MEMBERS if not hasattr(judge, name)]
    if missing:
        from judge.providers import redact

        raise TypeError(f"judge {redact(spec)!r} ({type(judge).__qualname__}) lacks {', '.join(missing)}: a judge implements "
                        "judge.judges.Judge (subclass judge.judges.BaseJudge for the defaults)")
    return cast(Judge, judge)  # it has every member (the protocol's signatures are not checkable at run time)


_MEMBERS = ("spec", "deterministic", "default_passes", "cacheable", "provider", "price_key", "independence",
            "cache_identity", "share_runtime", "aclose")


def _load_judges() -> None:
    """The built-in judges, then the plugins of the trajudge.judges entry point (once)."""
    _load_builtin_judges()
    load_plugins(PLUGIN_GROUP)


def _load_builtin_judges() -> None:
    # Importing the modules registers their factories (SDKs inside them are imported lazily). A module reaching
    # this from its own decorator while it loads gets its partial self: harmless.
    for module in _BUILTIN_JUDGES:
        importlib.import_module(module)


__all__ = ["DEFAULT_PASSES", "BaseJudge", "Judge", "JudgeFactory", "JudgeFn", "JudgeIdentity", "PartJudge", "PartStore",
           "check_judge", "is_local", "judge_kinds", "keeps_parts", "make_judge", "register_judge", "resolve",
           "unregister_judge"]
