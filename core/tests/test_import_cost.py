"""``import toolpass`` loads what securing a tool needs, not the engine or its HTTP client:
those load on first use of their names."""

from __future__ import annotations

import subprocess
import sys
import textwrap

LAZY_MODULES = ("toolpass.engine", "toolpass.wire.http", "http.client", "smtplib")


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
