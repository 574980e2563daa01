"""``import toolpass`` loads what securing a tool needs, not the engine or its HTTP client
(those load on first use of their names), nor the heavy standard library modules that only
an async call, an installed hook or a package's metadata needs."""

from __future__ import annotations

import subprocess
import sys
import textwrap

LAZY_MODULES = ("toolpass.engine", "toolpass.wire.http", "http.client", "smtplib")
#: Standard library modules that cost milliseconds each to import, and what loads them later.
HEAVY_STDLIB = (
    "asyncio",  # an async tool's call (already loaded by its event loop)
    "importlib.metadata",  # the request hook's version check, with email and zipfile
    "email",
    "zipfile",
    "concurrent.futures",  # the request hook's thread-context carrying
    "socket",  # a numeric host's spelling
    "ssl",
    "hashlib",  # an approval's digests and a session's key (OpenSSL)
    "secrets",  # a session's or an approval's id
    "tempfile",  # writing the entitlements record
    "pathlib",  # reading or writing an entitlements file
    "importlib.resources",  # an integration's route table, with gzip
    "gzip",
)


def run(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_import_toolpass_loads_neither_the_engine_nor_an_http_client() -> None:
    loaded = run(f"""\
        import sys, toolpass
        print([m for m in {LAZY_MODULES!r} if m in sys.modules])
        """)
    assert loaded.strip() == "[]"


def test_the_engine_names_load_on_first_use() -> None:
    out = run("""\
        import toolpass
        from toolpass import Config, RemoteToolpass, Toolpass, load_config
        import toolpass.engine as engine
        print(Toolpass is engine.Toolpass, Config is engine.Config)
        print(load_config is engine.load_config, RemoteToolpass is engine.RemoteToolpass)
        print(sorted(set(toolpass.__all__) - set(dir(toolpass)) - set(toolpass._LAZY)))
        """)
    assert out.split() == ["True", "True", "True", "True", "[]"]


def test_import_toolpass_loads_none_of_the_heavy_stdlib_modules() -> None:
    loaded = run(f"""\
        import sys, toolpass
        print([m for m in {HEAVY_STDLIB!r} if m in sys.modules])
        """)
    assert loaded.strip() == "[]"


def test_import_toolpass_compiles_no_regular_expression_of_its_own() -> None:
    """Each pattern costs up to a millisecond to compile: toolpass's compile on first use."""
    compiled_by = run("""\
        import os, sys
        import re._compiler as compiler

        compile, callers = compiler.compile, []

        def counting(pattern, flags=0):
            frame = sys._getframe(1)
            while frame.f_code.co_filename.startswith(os.path.dirname(compiler.__file__)):
                frame = frame.f_back
            callers.append(frame.f_code.co_filename)
            return compile(pattern, flags)

        compiler.compile = counting
        import toolpass
        print(sorted({c for c in callers if "toolpass" in c}))
        """)
    assert compiled_by.strip() == "[]"


def test_a_pattern_compiled_on_first_use_finds_what_it_did() -> None:
    out = run("""\
        from toolpass.rules import find_secret
        from toolpass.toolkit.provenance import echoes

        print(find_secret("key AKIAABCDEFGHIJKLMNOP here"))
        print(sorted(echoes("mail dana@example.com or see https://example.com/a")))
        """)
    secret, echoed = out.splitlines()
    assert secret == "an AWS access key"
    assert echoed == repr(
        sorted(
            [
                "dana@example.com",
                "example.com/a",
                "https://example.com/a",
                "mail dana@example.com or see https://example.com/a",
            ]
        )
    )


def test_what_was_left_out_loads_when_it_is_used() -> None:
    out = run("""\
        import asyncio, sys, toolpass
        from toolpass import Session, Toolkit
        from toolpass.intercept import install, uninstall, version_of
        from toolpass.rules.urls import normalize_host

        kit = Toolkit(audit=[])
        echo = kit.secured_tool(lambda text: text, effect="read")

        @kit.secured_tool(effect="read")
        async def chunks(text: str) -> object:
            await asyncio.sleep(0)
            return iter([text])  # drained in a worker thread

        with Session("dana@example.com").active():
            print(echo("hi"), *asyncio.run(chunks("there")))
        print(normalize_host("0x7f.1"), version_of("surely-not-installed-toolpass-x"))
        install()
        uninstall()
        print([m in sys.modules for m in ("socket", "importlib.metadata", "concurrent.futures")])
        print([m in sys.modules for m in ("hashlib", "secrets")])  # the session and its key
        """)
    assert out.split() == [
        *["hi", "there", "('127.0.0.1',)", "None", "[True,", "True,", "True]"],
        *["[True,", "True]"],
    ]
