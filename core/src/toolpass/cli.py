"""The ``toolpass`` command.

::

    toolpass validate [-config FILE]          the file, secret references, CA files; no network
    toolpass probe [-config FILE] [--progress] [ID ...]
                                              each connection's credential, live
    toolpass check USER CONNECTION ACTION RESOURCE [-config FILE] [-fresh] [-json]
    toolpass catalog [NAME]                   the integrations, or one's keys and actions
    toolpass routes NAME [-action A] [-json]  an integration's route table
    toolpass serve [-config FILE] ...         the toolpass server (needs toolpass-server)
    toolpass mcp-proxy [-config FILE] (-- COMMAND ... | --url URL)
                                              an MCP server behind toolpass (needs toolpass-mcp)
    toolpass demo                             a scripted ops agent, the live engine, no network
    toolpass lint MODULE [-config FILE]       each tool of a module's guards and its rule
    toolpass audit tail [-n N] [--follow] [--json] FILE
    toolpass audit filter [--user U] [--code C] [--tool T] [--outcome O] [--since S]
                          [--would-refuse] [--json] FILE ...
                                              events of JSON-lines audit files, one per line
    toolpass audit summary [--json] FILE ...  counts per outcome, code, tool, user, and what
                                              observe mode would have refused

Flags may be written ``-config`` or ``--config``; FILE defaults to ``$TOOLPASS_CONFIG`` or
``toolpass.yaml``. Exit status: ``check`` gives 0 for allow, 1 for deny, 2 for unknown, 3
for a resource the action does not take, 4 when the connection or action is not configured;
``validate`` and ``probe`` give 0 when all is well and 1 otherwise; ``audit filter`` gives,
as grep does, 0 when an event matched and 1 when none did (saying "no event matched" on
stderr; lines that are not events are skipped and counted on stderr, never an error); an
error that stops a command (bad usage, an unreadable configuration or audit file) is one
line on stderr and status 3. ``probe`` prints a line per connection on stderr as each
finishes when stderr is a terminal, or with ``--progress``.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import shutil
import sys
import textwrap
import time
from collections.abc import Sequence
from typing import Any, NoReturn

from toolpass._version import __version__
from toolpass.engine.config import Config, did_you_mean, read_config
from toolpass.engine.toolpass import Toolpass
from toolpass.store import StoreUnavailable
from toolpass.wire.errors import ToolpassError
from toolpass.wire.http import HTTPClient
from toolpass.wire.identity import SHARED_MODES, default_mode
from toolpass.wire.keys import COMMON_KEYS, ConfigKey
from toolpass.wire.secrets import Secret

ERROR = 3  # bad usage, or the command could not run
NOT_CONFIGURED = 4
_EXIT = {"allow": 0, "deny": 1, "unknown": 2}
_ROUTE_COLUMNS = ("METHOD", "PATH", "ACTION", "RESOURCE", "EFFECT", "FLAGS")


def _out(line: str) -> None:
    sys.stdout.write(line + "\n")


def _err(line: str) -> None:
    sys.stderr.write(line + "\n")


class _Fail(Exception):
    """A one-line error that ends the command with status 3."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise _Fail(f"{message} (see {self.prog} --help)")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="toolpass", description="Live permission checks for AI agent tools.")
    parser.add_argument("--version", action="version", version=f"toolpass {__version__}")
    commands = _Commands(parser.add_subparsers(dest="command", required=True, parser_class=_Parser))
    default = os.environ.get("TOOLPASS_CONFIG", "toolpass.yaml")

    def with_config(name: str, help: str) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, help=help)
        sub.add_argument("-config", "--config", default=default, help=f"default: {default}")
        return sub

    with_config("validate", "Check the configuration without using the network.")
    probe = with_config("probe", "Ask each connection's system whether its credential works.")
    probe.add_argument("connections", nargs="*", metavar="ID")
    probe.add_argument(
        "--progress",
        action="store_true",
        help="a line on stderr as each connection finishes (the default on a terminal)",
    )
    check = with_config(
        "check",
        "One decision; exit 0 allow, 1 deny, 2 could not be answered, 3 bad usage (a "
        "resource the action does not take too), 4 not configured (no such connection or "
        "action).",
    )
    for name in ("user", "connection", "action", "resource"):
        check.add_argument(name)
    check.add_argument("-fresh", "--fresh", action="store_true", help="skip the cache")
    check.add_argument("-json", "--json", action="store_true", help="print the decision as JSON")
    catalog = commands.add_parser("catalog", help="The integrations, or one's keys and actions.")
    catalog.add_argument("name", nargs="?")
    routes = commands.add_parser("routes", help="An integration's route table.")
    routes.add_argument("name")
    routes.add_argument("-action", "--action", help="only the routes of this action")
    routes.add_argument("-json", "--json", action="store_true", help="one JSON row per route")
    commands.add_parser(
        "demo",
        help="A scripted ops agent, the engine and the request hook on 127.0.0.1; no network.",
    )
    lint = with_config(
        "lint",
        "Import MODULE (a dotted name or a .py file) and, for each toolpass guard it builds, "
        "list every tool, its rule and the tools that run unchecked; check the rules against "
        "the configuration. Exit 0 when nothing is wrong, 1 otherwise.",
    )
    lint.add_argument("module")
    _audit_parser(commands)
    serve = commands.add_parser("serve", help="Run the toolpass server (toolpass-server).")
    serve.add_argument("args", nargs="*", help="handed to the server as they are")
    proxy = commands.add_parser(
        "mcp-proxy", help="Run an MCP server behind toolpass (toolpass-mcp)."
    )
    proxy.add_argument("args", nargs="*", help="handed to the proxy as they are")
    return parser


class _Commands:
    """Subcommands whose ``--help`` says what they do: the description is the help line."""

    def __init__(self, actions: Any) -> None:
        self._actions = actions

    def add_parser(self, name: str, *, help: str) -> argparse.ArgumentParser:
        parser: argparse.ArgumentParser = self._actions.add_parser(
            name, help=help, description=help
        )
        return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv[:1] == ["serve"]:
            return _serve(argv[1:])  # the server parses its own flags, --help included
        if argv[:1] == ["mcp-proxy"]:
            return _mcp_proxy(argv[1:])  # so does the proxy
        try:
            args = _parser().parse_args(argv)
        except SystemExit as done:  # --help and --version print, then stop
            return done.code if isinstance(done.code, int) else 0
        command = {
            "validate": _validate,
            "probe": _probe,
            "check": _check,
            "catalog": _catalog,
            "routes": _routes,
            "demo": _demo,
            "lint": _lint,
            "audit": _audit,
        }[args.command]
        return command(args)
    except (_Fail, ToolpassError) as e:
        _err(f"toolpass: {e}")
    except StoreUnavailable as e:
        _err(f"toolpass: the shared store cannot be used: {e}")
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # the reader went away (toolpass catalog | head)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except Exception as e:
        _err(f"toolpass: internal error: {type(e).__name__}: {e}")
    return ERROR


def _validate(args: argparse.Namespace) -> int:
    try:
        config, problems = read_config(args.config)
    except ToolpassError as e:
        _err(f"toolpass: {e}")
        return 1
    problems += _secret_problems(config) + _engine_problems(config)
    server = _server_problems(config)
    mcp = _mcp_problems(config)
    problems += (server or []) + (mcp or [])
    for problem in problems:
        _err(f"toolpass: {problem}")
    if problems:
        return 1
    ids = ", ".join(c.id for c in config.connections) or "none"
    unchecked = [
        f"; {name}: not checked (needs {needs})"
        for name, found, needs in (
            ("server", server, "toolpass-server"),
            ("mcp", mcp, "toolpass-mcp"),
        )
        if found is None
    ]
    _out(f"{args.config}: valid ({len(config.connections)} connections: {ids}){''.join(unchecked)}")
    return 0


def _secret_problems(config: Config) -> list[str]:
    """Each secret reference of a connection that gives no value."""
    problems = []
    for conn in config.connections:
        secrets = [v for v in conn.options.values() if isinstance(v, Secret)]
        if conn.identity.token is not None:
            secrets.append(conn.identity.token)
        for secret in secrets:
            try:
                secret.check()
            except ToolpassError as e:
                problems.append(f"{conn.origin}, connection {conn.id!r}: {e}")
    return problems


def _engine_problems(config: Config) -> list[str]:
    """What stops the engine of ``config``: a store that cannot be opened, a connection its
    integration refuses, an identity that cannot be read (identity files)."""
    problems = []
    if config.store is not None:
        try:
            config.open_store(config.store).close()
        except (ToolpassError, StoreUnavailable, ImportError) as e:
            problems.append(str(e))
    http = HTTPClient()
    try:
        for conn in config.connections:
            try:
                conn.integration(conn, http).identity.check()
            except ToolpassError as e:
                key = getattr(e, "key", None)
                where = f", key {key!r}" if key else ""
                problems.append(f"{conn.origin}, connection {conn.id!r}{where}: {e}")
    finally:
        http.close()
    return problems


def _server_problems(config: Config) -> list[str] | None:
    """What is wrong with the ``server:`` section (its keys, API key references and their
    strength, the approvals page and its store); None when toolpass-server, which owns it,
    is not installed and the file has one."""
    if not config.server:
        return []
    try:  # toolpass-server is optional: core never imports it statically.
        server_config = importlib.import_module("toolpass.server.config")
    except ImportError:
        return None
    base = os.path.dirname(os.path.abspath(config.path)) if config.path else None
    try:
        parsed = server_config.parse_server_config(
            config.server, source=config.path, base_dir=base, store=config.store
        )
        parsed.resolve_keys()
    except ToolpassError as e:
        return [str(e)]
    return []


def _mcp_problems(config: Config) -> list[str] | None:
    """What is wrong with the ``mcp:`` section: what toolpass-mcp's proxy refuses, and each
    rule naming a connection or action the configuration lacks; None when toolpass-mcp is
    not installed and the file has the section."""
    if not config.mcp:
        return []
    try:
        proxy = importlib.import_module("toolpass.mcp.proxy")
    except ImportError:
        return None
    try:
        parsed = proxy.parse_mcp_section(config.mcp, config.path, proxy.secret_variables(config))
    except ToolpassError as e:
        return [str(e)]
    raw = config.mcp.get("rules") or {}
    lines = getattr(raw, "lines", {})
    connections = {c.id: c for c in config.connections}
    problems = []
    for name, rule in zip(raw, parsed.rules.values(), strict=True):
        where = f"{config.path}, line {lines.get(name, '?')}: the mcp rule for {name!r}"
        conn = connections.get(rule.connection)
        if conn is None:
            close = did_you_mean(rule.connection, connections)
            problems.append(f"{where}: no connection {rule.connection!r}{close}")
        elif conn.integration.action(rule.action) is None:
            close = did_you_mean(rule.action, [a.name for a in conn.integration.actions])
            problems.append(
                f"{where}: connection {rule.connection!r} ({conn.integration.name}) has no "
                f"action {rule.action!r}{close} (toolpass catalog {conn.integration.name})"
            )
    return problems


def _probe(args: argparse.Namespace) -> int:
    with Toolpass.from_config(args.config) as tp:
        unknown = [c for c in args.connections if c not in tp.connections]
        if unknown:
            raise _Fail(f"no connection {unknown[0]!r} in {args.config}")
        ids = list(args.connections or tp.connections)
        progress = args.progress or sys.stderr.isatty()
        results = {}
        for n, conn_id in enumerate(ids, 1):
            started = time.monotonic()
            found = tp.probe(conn_id)
            results.update(found)
            if progress:
                ok = all(r.ok for r in found.values())
                took = time.monotonic() - started
                _err(f"[{n}/{len(ids)}] {conn_id}: {'ok' if ok else 'FAILED'} ({took:.1f} s)")
                sys.stderr.flush()
    for conn_id, result in results.items():
        _out(f"{conn_id}: {'ok' if result.ok else 'FAILED'}: {result.detail}")
    return 0 if all(r.ok for r in results.values()) else 1


def _check(args: argparse.Namespace) -> int:
    with Toolpass.from_config(args.config) as tp:
        d = tp.check(args.user, args.connection, args.action, args.resource, fresh=args.fresh)
        configured = tp.configured(args.connection, args.action)
    if args.json:
        fields = ("decision", "reason", "user", "connection", "action", "resource", "cached")
        _out(json.dumps({f: getattr(d, f) for f in fields}))
    else:
        _out(f"{d.decision}: {d.reason}")
    if not configured:
        return NOT_CONFIGURED
    return ERROR if d.cause == "resource" else _EXIT[d.decision]


def _catalog(args: argparse.Namespace) -> int:
    from toolpass import integrations

    if args.name is None:
        for name in integrations.available():
            try:
                description = integrations.get(name).description
            except Exception as e:  # one broken module must not hide the others
                description = f"(cannot be loaded: {type(e).__name__}: {e})"
            _wrapped(f"{name:<16} ", description)
        return 0
    cls = integrations.get(args.name)
    _wrapped("", f"{cls.name}: {cls.description}")
    if cls.default_url:
        _out(f"default url: {cls.default_url}")
    modes = (*cls.identity_modes, *SHARED_MODES)
    _wrapped("", f"identity modes: {', '.join(modes)} (default {default_mode(cls.identity_modes)})")
    _out("\nkeys:")
    for key in (*COMMON_KEYS, *cls.keys):
        _wrapped(f"  {key.name:<22} ", _describe(key))
    _out("\nactions:")
    for action in cls.actions:
        needs = f" Needs {action.requires}." if action.requires else ""
        _wrapped(f"  {action.name:<22} {action.effect:<12} ", f"{action.description}{needs}")
    return 0


def _wrapped(head: str, text: str) -> None:
    """``head`` then ``text``, wrapped to the terminal's width, each paragraph's lines
    indented under its first."""
    width = max(shutil.get_terminal_size((100, 24)).columns, len(head) + 30)
    indent = " " * len(head)
    for n, paragraph in enumerate(p for p in text.split("\n\n") if p.strip()):
        if n:
            _out("")
        first = head if n == 0 else indent
        _out(
            textwrap.fill(
                " ".join(paragraph.split()),
                width,
                initial_indent=first,
                subsequent_indent=indent,
                break_on_hyphens=False,
            )
        )


def _routes(args: argparse.Namespace) -> int:
    from toolpass import integrations

    cls = integrations.get(args.name)
    rows = [r for r in cls.route_table().routes if args.action in (None, r.action)]
    cells = [(r.method, r.path, r.action, r.resource, r.effect, r.flags) for r in rows]
    if args.json:
        for row in cells:
            _out(json.dumps(list(row)))
        return 0
    widths = [max(map(len, column)) for column in zip(_ROUTE_COLUMNS, *cells, strict=True)]
    for row in (_ROUTE_COLUMNS, *cells):
        _out("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
    _err(
        f"{len(rows)} routes (flags: u untrusted content, s sends data out, "
        "a the agent's own, no user permission)"
    )
    return 0


def _demo(args: argparse.Namespace) -> int:
    from toolpass.demo import main as demo

    demo()
    return 0


def _lint(args: argparse.Namespace) -> int:
    from toolpass.adapting import Guard

    try:
        module = _import(args.module)
    except (TypeError, ValueError) as e:  # what a guard refuses as it is built
        _err(f"toolpass: {args.module}: {type(e).__name__}: {e}")
        return 1
    guards: dict[int, tuple[str, Guard]] = {}
    for name, value in vars(module).items():
        guard = value if isinstance(value, Guard) else getattr(value, "guard", None)
        if isinstance(guard, Guard):
            guards.setdefault(id(guard), (name, guard))
    if not guards:
        raise _Fail(f"{args.module} builds no toolpass guard at module level")
    problems = 0
    with Toolpass.from_config(args.config) as tp:
        for name, guard in guards.values():
            explained = guard.explain(tp)
            problems += len(explained.problems)
            _out(f"{name}:")
            for line in str(explained).splitlines():
                _out(f"  {line}")
    return 1 if problems else 0


def _import(name: str) -> Any:
    """The module ``name`` (dotted, from the current folder) or the ``.py`` file ``name``
    (its folder importable, the module registered as any imported module is)."""
    import importlib.util

    if name.endswith(".py"):
        if not os.path.isfile(name):
            raise _Fail(f"cannot import {name}: no such file")
        folder, module_name = os.path.dirname(os.path.abspath(name)), os.path.basename(name)[:-3]
    else:
        folder, module_name = os.getcwd(), name
    sys.path.insert(0, folder)
    try:
        if not name.endswith(".py"):
            return importlib.import_module(name)
        spec = importlib.util.spec_from_file_location(module_name, name)
        if spec is None or spec.loader is None:
            raise _Fail(f"cannot import {name}: not a Python module")
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            del sys.modules[module_name]
            raise
        return module
    except (TypeError, ValueError, _Fail):
        raise
    except Exception as e:
        raise _Fail(f"cannot import {name}: {type(e).__name__}: {e}") from None
    finally:
        sys.path.remove(folder)


def _audit_parser(commands: Any) -> None:
    audit = commands.add_parser("audit", help="Read JSON-lines audit files.")
    verbs = _Commands(audit.add_subparsers(dest="verb", required=True, parser_class=_Parser))
    tail = verbs.add_parser("tail", help="The last events of a file, then new ones (--follow).")
    tail.add_argument("-n", "--lines", type=int, default=10, metavar="N", help="default: 10")
    tail.add_argument("-f", "--follow", action="store_true", help="wait for new events")
    filt = verbs.add_parser(
        "filter",
        help="The events that match every option given; exit 0 when one did, 1 (saying "
        "'no event matched' on stderr) when none did, as grep does.",
    )
    filt.add_argument("--user", help="a user (a shell pattern: '*@example.com')")
    filt.add_argument("--code", help="a refusal code, or an outcome (ok, error)")
    filt.add_argument("--tool", help="a tool (a shell pattern: 'merge_*')")
    filt.add_argument("--outcome", help="ok, refused, error, cancelled or unchecked")
    filt.add_argument("--since", help="an ISO-8601 time, or a duration back from now: 15m, 2h")
    filt.add_argument(
        "--would-refuse",
        action="store_true",
        help="only observed calls enforcement would have refused (--code: one of those codes)",
    )
    summary = verbs.add_parser(
        "summary",
        help="Counts per outcome, code, tool and user, and what observe mode let through "
        "that enforcement would have refused (by code, tool and user).",
    )
    for verb, many in ((tail, False), (filt, True), (summary, True)):
        verb.add_argument("files", nargs="+" if many else 1, metavar="FILE")
        verb.add_argument("--json", action="store_true", help="JSON lines, not text")


def _audit(args: argparse.Namespace) -> int:
    from collections import deque

    from toolpass.outcome import audit_read as ar
    from toolpass.outcome.audit_text import line

    tally = ar.Tally()

    def show(record: ar.Record) -> None:
        _out(json.dumps(record) if args.json else line(record))
        sys.stdout.flush()

    def notes() -> None:
        for note in tally.report():
            _err(f"toolpass: {note}")

    try:
        if args.verb == "summary":
            counts = ar.summary(ar.read(args.files, tally))
            notes()
            for text in [json.dumps(counts)] if args.json else ar.summary_lines(counts):
                _out(text)
            return 0
        if args.verb == "tail":
            for record in deque(ar.read(args.files, tally), maxlen=max(args.lines, 0)):
                show(record)
            notes()
            if args.follow:
                for record in ar.follow(args.files[0], tally):
                    show(record)
            return 0
        since = None if args.since is None else ar.moment(args.since)
        test = ar.matcher(args.user, args.code, args.tool, args.outcome, since, args.would_refuse)
        found = 0
        for record in filter(test, ar.read(args.files, tally)):
            found += 1
            show(record)
        notes()
        if not found:
            _err("toolpass: no event matched")
        return 0 if found else 1
    except ValueError as e:
        raise _Fail(str(e)) from None
    except OSError as e:
        raise _Fail(f"cannot read {e.filename}: {e.strerror}") from None


def _describe(key: ConfigKey) -> str:
    notes: list[str] = ["secret reference" if key.secret else key.kind]
    if key.required:
        notes.append("required")
    if key.default is not None:
        notes.append(f"default {_show(key.default)}")
    if key.choices:
        notes.append("one of " + "|".join(map(str, key.choices)))
    return f"{key.description} [{', '.join(notes)}]"


def _show(value: Any) -> str:
    return json.dumps(value) if not isinstance(value, str) else value


def _serve(argv: list[str]) -> int:
    try:
        server = importlib.import_module("toolpass.server")
    except ImportError:
        raise _Fail(
            "serve needs the toolpass-server distribution: pip install toolpass-server"
        ) from None
    status: int = server.main(argv)
    return status


def _mcp_proxy(argv: list[str]) -> int:
    try:
        proxy = importlib.import_module("toolpass.mcp.proxy")
    except ImportError:
        raise _Fail(
            "mcp-proxy needs the toolpass-mcp distribution: pip install 'toolpass-mcp[proxy]'"
        ) from None
    status: int = proxy.main(argv)
    return status


if __name__ == "__main__":
    sys.exit(main())
