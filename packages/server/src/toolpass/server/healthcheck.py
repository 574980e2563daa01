"""``python -m toolpass.server.healthcheck [URL]``: exit 0 when the server's /healthz is ok.

For container health checks (the image has no curl). URL defaults to
``$TOOLPASS_HEALTHCHECK_URL`` or ``http://127.0.0.1:8080/healthz``. It asks only this
machine (a loopback address), so an https server's certificate is not verified here.
"""

from __future__ import annotations

import os
import ssl
import sys
import urllib.request
from collections.abc import Sequence
from urllib.parse import urlsplit

from toolpass.wire.http import is_loopback

DEFAULT = "http://127.0.0.1:8080/healthz"


def main(argv: Sequence[str] | None = None) -> int:
    """Exit status 0 for a 200 from the URL, 1 for anything else."""
    argv = list(sys.argv[1:] if argv is None else argv)
    url = argv[0] if argv else os.environ.get("TOOLPASS_HEALTHCHECK_URL", DEFAULT)
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not is_loopback(parts.hostname or ""):
        sys.stderr.write(f"healthcheck: {url!r} is not an http(s) URL on this machine\n")
        return 1
    context = None
    if parts.scheme == "https":  # our own process on this machine: liveness, not identity
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    try:
        with urllib.request.urlopen(url, timeout=3, context=context) as answer:  # noqa: S310
            ok = answer.status == 200
    except OSError as e:
        sys.stderr.write(f"healthcheck: {url}: {e}\n")
        return 1
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
