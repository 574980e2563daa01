"""MkDocs hooks: the parts of the site generated from toolpass itself, so they cannot drift.

- ``<!-- usage: COMMAND -->`` (``audit tail`` too) becomes the ``toolpass COMMAND --help``
  text, as the installed command prints it;
- ``<!-- server-keys -->`` becomes the table of the ``server:`` section's keys, and
  ``<!-- connection-keys -->`` that of the keys every connection takes;
- ``<!-- readme-section: TITLE -->`` becomes that ``## TITLE`` section of the README (its
  links into docs/ made relative to the site), until the section moves here for good;
- each system page (``permissions/NAME.md``) ends with what ``toolpass catalog NAME`` prints:
  its connection keys, identity modes and actions.

Everything is asked of the ``toolpass`` command's entry point (``toolpass.cli.main``), as a
user would run it.
"""

from __future__ import annotations

import contextlib
import functools
import io
import os
import re
from pathlib import Path
from typing import Any

USAGE = re.compile(r"<!-- usage: ([a-z -]+?) -->")
SERVER_KEYS = "<!-- server-keys -->"
CONNECTION_KEYS = "<!-- connection-keys -->"
README_SECTION = re.compile(r"<!-- readme-section: ([^>]+?) -->")
README = Path(__file__).resolve().parents[1] / "README.md"


@functools.cache
def toolpass(*args: str) -> str:
    """What ``toolpass ARGS`` prints (100 columns wide); fails the build if it fails."""
    from toolpass.cli import main

    os.environ["COLUMNS"] = "100"  # argparse wraps its help to the terminal's width
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = main(list(args))
        except SystemExit as done:  # `serve` and `mcp-proxy` parse their own flags
            status = done.code if isinstance(done.code, int) else 0
    if status != 0:
        raise RuntimeError(f"toolpass {' '.join(args)} exited {status}: {err.getvalue()}")
    return out.getvalue().rstrip()


def text_block(text: str) -> str:
    return f"```text\n{text}\n```"


def server_keys() -> str:
    from toolpass.server.config import KEYS

    rows = [
        f"| `{key}` | {about} | {'' if default is None else f'`{default}`'} |"
        for key, (about, default) in KEYS.items()
    ]
    return "\n".join(["| key | what | default |", "|---|---|---|", *rows])


def connection_keys() -> str:
    from toolpass.wire.keys import COMMON_KEYS

    def default(key: Any) -> str:
        return "required" if key.required else "" if key.default is None else f"`{key.default}`"

    rows = [f"| `{k.name}` | {k.description} | {default(k)} |" for k in COMMON_KEYS]
    return "\n".join(["| key | what | default |", "|---|---|---|", *rows])


def readme_section(title: str) -> str:
    """The body of the README's ``## TITLE`` section; fails the build if there is none."""
    text = README.read_text(encoding="utf-8")
    start = text.find(f"\n## {title}\n")
    if start < 0:
        raise RuntimeError(f"README.md has no section {title!r}")
    body = text[start + len(title) + 5 :]
    end = body.find("\n## ")
    return (body if end < 0 else body[:end]).strip().replace("](docs/", "](")


def on_page_markdown(markdown: str, page: Any, **_: Any) -> str:
    markdown = USAGE.sub(lambda m: text_block(toolpass(*m[1].split(), "--help")), markdown)
    markdown = markdown.replace(SERVER_KEYS, server_keys())
    markdown = markdown.replace(CONNECTION_KEYS, connection_keys())
    markdown = README_SECTION.sub(lambda m: readme_section(m[1]), markdown)
    folder, _, name = page.file.src_uri.rpartition("/")
    if folder == "permissions" and name != "README.md":
        system = name.removesuffix(".md")
        markdown += (
            f"\n\n## What toolpass reads: `toolpass catalog {system}`\n\n"
            "The connection's keys, identity modes and actions, as the installed "
            f"toolpass prints them:\n\n{text_block(toolpass('catalog', system))}\n"
        )
    return markdown
