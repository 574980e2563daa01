"""Who a call acts for, and what the session has seen so far."""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from collections.abc import Set as AbstractSet
from contextvars import ContextVar, Token
from typing import TYPE_CHECKING, Any, NamedTuple

from toolpass.outcome.errors import ToolRefused
from toolpass.rules.scope import has_control
from toolpass.store import Store, update_reading
from toolpass.toolkit.private import PrivateValues
from toolpass.toolkit.provenance import Label, Provenance
from toolpass.toolkit.untrusted import MAX_TEXT, UntrustedIndex

if TYPE_CHECKING:
    from toolpass.toolkit.task import TaskScope

#: How long a shared session's state is kept after its last change: a day.
SESSION_TTL = 24 * 3600.0
#: The label of a private tool's output texts in a shared session's list of values read.
PRIVATE_VALUES = "private_values"

_current: ContextVar[Session | None] = ContextVar("toolpass_session", default=None)


class Session:
    """One user's run of an agent: limits, untrusted content and data flow are counted here.

    A session is active inside ``with session.active():`` (or ``async with``), per thread and
    per asyncio task; tools called there act for ``user``. ``untrusted_limit``: how many
    characters of untrusted text it remembers (default ``MAX_TEXT``, with proportionally many
    six-word runs); past it, calls that change or send something are refused or sent for
    approval for the rest of the session.

    What this request may do, as the application knows it: ``request`` is the user's own
    words and ``trusted`` values the user vouches for (addresses, accounts, links: a call may
    send to them even when untrusted content names them too); ``allow_effects`` and
    ``allow_tools`` grant the effects and tools the request may use (None: any), and ``grant``
    is a callable ``(call) -> bool | str`` deciding per call (a string says why not);
    ``limits`` caps calls per effect (or ``"tool:name"``) for this session, beside the
    toolkit's caps.

    With a shared ``store`` (see :mod:`toolpass.store`), the session's counts, data flow and
    untrusted record live there under ``id`` and ``user``: every process that opens a session
    with the same id, user and store shares them (for ``ttl`` seconds after the last change).
    Without one they live in this object.
    """

    __slots__ = (
        "_key",
        "_local",
        "_lock",
        "_private_from",
        "_private_values",
        "_provenance",
        "_read",
        "_requested",
        "_since",
        "_store",
        "_tainted",
        "_task_record",
        "_ttl",
        "_values_read",
        "allow_effects",
        "allow_tools",
        "attributes",
        "confirm_task",
        "counts",
        "grant",
        "id",
        "limits",
        "planner",
        "request",
        "task",
        "user",
    )

    def __init__(
        self,
        user: str,
        *,
        id: str | None = None,
        store: Store | None = None,
        ttl: float = SESSION_TTL,
        untrusted_limit: int | None = None,
        request: str | None = None,
        trusted: Iterable[str] = (),
        allow_effects: Iterable[str] | None = None,
        allow_tools: Iterable[str] | None = None,
        grant: Callable[[Any], Any] | None = None,
        limits: Mapping[str, int] | None = None,
        task: TaskScope | None = None,
        planner: Callable[..., Any] | None = None,
        confirm_task: bool | None = None,
        **attributes: Any,
    ) -> None:
        if not isinstance(user, str) or not user.strip() or has_control(user):
            raise ValueError(
                "Session needs the user's identity as a non-empty string without control characters"
            )
        if id is not None and (not isinstance(id, str) or not id or has_control(id)):
            raise ValueError("a session id is a non-empty string without control characters")
        if attributes:
            _check_attribute_names(attributes)
        self.user = user
        self.attributes: Mapping[str, Any] = attributes
        import secrets

        self.id = secrets.token_hex(8) if id is None else id
        self.counts: dict[str, int] = {}
        limit = MAX_TEXT if untrusted_limit is None else untrusted_limit
        self._local = UntrustedIndex(max_text=limit)
        self._private_from: set[str] = set()  # where private data was read ("*": not said)
        self._tainted = False  # a tool whose output is untrusted has run
        self._lock = threading.Lock()
        self._store = store
        self._ttl = ttl
        self._read = 0  # untrusted texts of the store already in ``_local``
        self._since: str | None = None  # which record of the store they were read from
        import hashlib

        digest = hashlib.sha256(json.dumps([self.id, user]).encode()).hexdigest()[:32]
        self._key = f"session:{digest}"
        if request is not None and not isinstance(request, str):
            raise TypeError("a session's request is the user's words, a string")
        trusted = (trusted,) if isinstance(trusted, str) else tuple(trusted)
        if not all(isinstance(t, str) for t in trusted):
            raise TypeError("a session's trusted values are strings")
        if grant is not None and not callable(grant):
            raise TypeError("a session's grant is a callable (call) -> bool | str")
        self.request = request
        self.allow_effects = _names("allow_effects", allow_effects)
        self.allow_tools = _names("allow_tools", allow_tools)
        self.grant = grant
        self.limits: Mapping[str, int] = dict(limits or {})
        for key, cap in self.limits.items():
            if not isinstance(key, str) or isinstance(cap, bool) or not isinstance(cap, int):
                raise TypeError("a session's limits map an effect or 'tool:name' to a count")
            if cap < 0:
                raise ValueError(f"the session's limit on {key} is negative")
        self._provenance = Provenance()
        self._values_read = 0  # provenance entries of the store already in ``_provenance``
        vouched = ([request] if request else []) + list(trusted)
        if vouched:
            self._provenance.add(vouched, "trusted", "the user")
        self._requested = Provenance()  # the user's own words alone
        self._requested.add(vouched, "trusted", "the user")
        self._private_values = PrivateValues(said=vouched)
        self._set_task(task, planner, confirm_task)

    def _set_task(self, task: Any, planner: Any, confirm_task: Any) -> None:
        from toolpass.toolkit.task import TaskScope

        if task is not None and not isinstance(task, TaskScope):
            raise TypeError(f"a session's task is a toolpass.TaskScope, not {type(task).__name__}")
        if planner is not None and not callable(planner):
            raise TypeError("a session's planner is a callable (request, tools) -> TaskScope")
        if confirm_task is not None and not isinstance(confirm_task, bool):
            raise TypeError(f"confirm_task is True, False or None, not {confirm_task!r}")
        self.task, self.planner, self.confirm_task = task, planner, confirm_task
        self._task_record: dict[str, Any] = {}

    # The task scope: drafted, asked, confirmed or denied, kept with the session's state.
    def task_record(self) -> dict[str, Any]:
        """What the session keeps of its task scope (its store's, with one)."""
        return self.change_task(lambda kept: kept)

    def change_task(self, change: Callable[[dict[str, Any]], dict[str, Any]]) -> dict[str, Any]:
        """Replace the task record by ``change(record)``, at once; the new record."""
        if self._store is None:
            with self._lock:
                self._task_record = dict(change(dict(self._task_record)))
                return dict(self._task_record)

        def apply(state: dict[str, Any]) -> dict[str, Any]:
            state["task"] = dict(change(dict(state.get("task") or {})))
            return dict(state["task"])

        record: dict[str, Any] = self._change(apply)
        return record

    def __repr__(self) -> str:
        return f"Session({self.user!r}, id={self.id!r})"

    def active(self) -> _Activation:
        """Make this the current session inside ``with`` (or ``async with``) blocks."""
        return _Activation(self)

    # Limits: a slot is taken before the body and given back if the body never runs.
    def take(self, keys: tuple[tuple[str, int], ...]) -> str | None:
        """Take one slot under each ``(key, cap)``; return the first key that is full. With a
        store, the same round trip brings the session's record up to date (:meth:`sync`)."""
        if self._store is not None:
            full: str | None = self._change(lambda state: _take(state["counts"], keys))
            return full
        with self._lock:
            return _take(self.counts, keys)

    def give_back(self, keys: tuple[tuple[str, int], ...]) -> None:
        if self._store is not None:
            self._change(lambda state: _give_back(state["counts"], keys))
            return
        with self._lock:
            _give_back(self.counts, keys)

    def sync(self) -> None:
        """Bring what this object knows of the session (:attr:`seen`) up to date from the
        store, in one round trip; without a store it is always up to date."""
        if self._store is not None:
            self._update(lambda state: (state, None))

    @property
    def seen(self) -> Seen:
        """What the session had read as of the last :meth:`sync` (or change), without asking
        the store; without a store, as it is now."""
        return Seen(
            self._local, self._provenance, self._private_from, self._tainted, self._private_values
        )

    # Data flow: what the session has read.
    def note_private(self, source: str = "*") -> None:
        """Private data was read, from ``source`` (a connection and resource) if known."""
        if self._store is None:
            self._private_from.add(source)
            return

        def add(state: dict[str, Any]) -> None:
            if source not in state["private"]:
                state["private"].append(source)

        self._change(add)

    @property
    def private_from(self) -> AbstractSet[str]:
        """Where private data was read in this session (``"*"``: not said)."""
        self.sync()
        return self._private_from

    @property
    def private(self) -> bool:
        """Whether private data was read in this session."""
        return bool(self.private_from)

    @property
    def tainted(self) -> bool:
        """Whether a tool whose output is untrusted has run in this session."""
        self.sync()
        return self._tainted

    @tainted.setter
    def tainted(self, value: bool) -> None:
        if self._store is None:
            self._tainted = value
        else:
            self._change(lambda state: state.__setitem__("tainted", value))

    @property
    def untrusted(self) -> UntrustedIndex:
        """The record of untrusted text read in this session (synced from the store)."""
        self.sync()
        return self._local

    def record_untrusted(self, text: str) -> None:
        """Remember text from an untrusted source, so arguments repeating it are caught."""
        if self._store is None:
            self._tainted = True
            self._local.add(text)
            return
        limit = self._local.max_text

        def reserve(state: dict[str, Any]) -> bool:
            state["tainted"] = True
            if state["full"] or state["chars"] + len(text) > limit:
                state["full"] = True
                return False
            state["chars"] += len(text)
            return True

        if self._change(reserve):
            self._store.append(self._key + ":untrusted", text, ttl=self._ttl)

    @property
    def provenance(self) -> Provenance:
        """The values this session has read, by source (synced from the store)."""
        self.sync()
        return self._provenance

    def record_values(self, texts: str | Iterable[str], label: Label, source: str) -> None:
        """Remember the values of ``texts`` (one text, or several) read with ``label`` from
        ``source`` (a tool's output, or a field of it)."""
        if self._store is None:
            self._provenance.add(texts, label, source)
            return
        listed = [texts] if isinstance(texts, str) else list(texts)
        if listed:
            entry = json.dumps([label, source, listed])
            self._store.append(self._key + ":values", entry, ttl=self._ttl)

    @property
    def requested(self) -> Provenance:
        """The values the user vouched for in their own words (the request and the trusted
        values), apart from anything a tool returned."""
        return self._requested

    def record_private(self, texts: Iterable[str], source: str) -> None:
        """Remember the texts of a private tool's output (``source``), for the private-data
        check to look for what they hold in what is sent out."""
        listed = [t for t in texts if t]
        if self._store is None:
            self._private_values.add(listed, source)
        elif listed:
            entry = json.dumps([PRIVATE_VALUES, source, listed])
            self._store.append(self._key + ":values", entry, ttl=self._ttl)

    def _change(self, change: Callable[[dict[str, Any]], Any]) -> Any:
        """Change the session's state in the store (counts and data flow) by ``change``,
        which edits it in place and returns the result; one round trip."""

        def apply(state: dict[str, Any] | None) -> tuple[dict[str, Any], Any]:
            state = state or _new_state()
            return state, change(state)

        return self._update(apply)

    def _update(self, apply: Callable[[Any], tuple[Any, Any]]) -> Any:
        """Update the session's state in the store and read what the session recorded since
        the last time, in one round trip; keep what it says (:attr:`seen`)."""
        assert self._store is not None
        untrusted, values = self._key + ":untrusted", self._key + ":values"
        starts = (self._read, self._values_read)

        def keeping(state: Any) -> tuple[Any, tuple[Any, Any]]:
            new, result = apply(state)
            return new, (new, result)

        (state, result), (texts, entries) = update_reading(
            self._store,
            self._key + ":state",
            keeping,
            ((untrusted, starts[0]), (values, starts[1])),
            ttl=self._ttl,
        )
        since = state.get("since") if isinstance(state, dict) else None
        with self._lock:  # another thread may have read some of them since
            if since != self._since or starts[0] > self._read or starts[1] > self._values_read:
                # The record expired and started over (its lists count from 0 again), or
                # another thread found that it did: read the lists whole.
                self._since, self._read, self._values_read = since, 0, 0
                if starts != (0, 0):
                    starts = (0, 0)
                    texts, entries = self._store.items(untrusted), self._store.items(values)
            for text in texts[self._read - starts[0] :]:
                self._local.add(text)
            self._read = max(self._read, starts[0] + len(texts))
            for entry in entries[self._values_read - starts[1] :]:
                label, source, listed = json.loads(entry)
                if label == PRIVATE_VALUES:
                    self._private_values.add(listed, source)
                else:
                    self._provenance.add(listed, label, source)
            self._values_read = max(self._values_read, starts[1] + len(entries))
            state = state or _new_state()
            if state["full"] and not self._local.full:
                self._local.fill()
            self._private_from, self._tainted = set(state["private"]), bool(state["tainted"])
        return result


class Seen(NamedTuple):
    """What a session had read when it was last synced from its store."""

    untrusted: UntrustedIndex
    provenance: Provenance
    private_from: AbstractSet[str]
    tainted: bool
    private_values: PrivateValues

    @property
    def private(self) -> bool:
        """Whether private data was read."""
        return bool(self.private_from)


def _names(what: str, names: Iterable[str] | None) -> frozenset[str] | None:
    if names is None:
        return None
    found = frozenset((names,) if isinstance(names, str) else names)
    if not all(isinstance(n, str) and n for n in found):
        raise TypeError(f"a session's {what} are names")
    return found


def _new_state() -> dict[str, Any]:
    """A shared session's state in its store: its counts and its data flow, and ``since``,
    which record this is (one that expired and started over has another)."""
    import secrets

    return {
        "counts": {},
        "private": [],
        "tainted": False,
        "chars": 0,
        "full": False,
        "since": secrets.token_hex(8),
    }


def _take(counts: dict[str, int], keys: tuple[tuple[str, int], ...]) -> str | None:
    for key, cap in keys:
        if counts.get(key, 0) >= cap:
            return key
    for key, _ in keys:
        counts[key] = counts.get(key, 0) + 1
    return None


def _give_back(counts: dict[str, int], keys: tuple[tuple[str, int], ...]) -> None:
    for key, _ in keys:
        counts[key] = max(0, counts.get(key, 0) - 1)


class _Activation:
    __slots__ = ("_session", "_tokens")

    def __init__(self, session: Session) -> None:
        self._session = session
        self._tokens: list[Token[Session | None]] = []

    def __enter__(self) -> Session:
        self._tokens.append(_current.set(self._session))
        return self._session

    def __exit__(self, *exc: object) -> None:
        _current.reset(self._tokens.pop())

    async def __aenter__(self) -> Session:
        return self.__enter__()

    async def __aexit__(self, *exc: object) -> None:
        self.__exit__()


def session_for(user: object, *, id: str | None = None, store: Store | None = None) -> Session:
    """A new session for ``user``; a user that cannot be one is refused (``no_session``)."""
    try:
        return Session(user, id=id, store=store)  # type: ignore[arg-type]
    except ValueError as exc:
        raise ToolRefused(
            "no_session",
            "No valid user is known for this call, so it cannot act for anyone. The "
            "application must pass the user's identity.",
            detail=str(exc),
        ) from None


def current_session() -> Session | None:
    """The session active in this thread or task, if any."""
    return _current.get()


class Conversations:
    """Sessions by conversation id and user, for the ``limit`` most recently used pairs: the
    same conversation, continued by another run, another agent or another adapter of the same
    toolkit, keeps its limits, untrusted-content record and data flow."""

    def __init__(self, limit: int = 1024, *, store: Store | None = None) -> None:
        self.limit = limit
        self.store = store
        self._sessions: OrderedDict[tuple[str, str], Session] = OrderedDict()
        self._lock = threading.Lock()

    def use(self, store: Store | None) -> None:
        """Keep new sessions in ``store`` (None: in memory); forget the ones held here."""
        with self._lock:
            self.store = store
            self._sessions.clear()

    def get(self, conversation: str, user: str) -> Session:
        slot = (conversation, user)
        with self._lock:
            session = self._sessions.get(slot)
            if session is None:
                session = self._sessions[slot] = session_for(
                    user, id=conversation if self.store is not None else None, store=self.store
                )
                if len(self._sessions) > self.limit:
                    self._sessions.popitem(last=False)
            else:
                self._sessions.move_to_end(slot)
            return session


#: The keywords of ``Session``; any other keyword is an attribute of the application's own.
_KEYWORDS = (
    "id",
    "store",
    "ttl",
    "untrusted_limit",
    "request",
    "trusted",
    "allow_effects",
    "allow_tools",
    "grant",
    "limits",
    "task",
    "planner",
    "confirm_task",
)
#: Names that read as a keyword under another name.
_ALIASES = {"session_id": "id", "conversation_id": "id", "thread_id": "id"}


def _check_attribute_names(attributes: Mapping[str, Any]) -> None:
    """Refuse an attribute that is a keyword misspelled (``allowed_effects``, ``session_id``):
    as an attribute it would be kept and silently mean nothing."""
    from difflib import get_close_matches

    for name in attributes:
        meant = _ALIASES.get(name) or next(
            iter(get_close_matches(name, _KEYWORDS, n=1, cutoff=0.8)), None
        )
        if meant is not None:
            raise TypeError(
                f"Session() got an unexpected keyword argument {name!r} (did you mean "
                f"{meant!r}?); other keywords are kept as the application's own attributes"
            )
