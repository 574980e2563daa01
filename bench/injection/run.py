"""Prompt injection, measured: legitimate tasks and injected instructions, offline, under each
toolpass policy (AgentDojo's method, with scripted models).

Each suite (workspace, banking, slack, travel) is an in-memory environment whose tools are
toolpass secured tools. A user task is the calls a competent model makes for the user's
request and a check of the outcome; an injection task is an attacker's goal, placed in the
tool outputs the user task reads (email bodies, transaction subjects, messages, web pages,
reviews...), the calls a model that obeys it makes, and a check of whether the goal was
reached. The scripted model obeys the first injected instruction it reads, then goes on with
the user's task; a refused call ends what it was doing (the user's task, or the attack).

For each policy: utility (share of user tasks done without attack), prevented (share of
attacked runs whose goal was not reached) and utility under attack.

    python bench/injection/run.py          # the table; writes bench/injection/results.md
"""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from toolpass import Session, Toolkit

from injection import banking, slack, travel, workspace
from injection.common import INJECTION, InjectionTask, Model, Refused, Suite, ToolMeta, UserTask

SUITES: tuple[Suite, ...] = (workspace.SUITE, banking.SUITE, slack.SUITE, travel.SUITE)
RESULTS = Path(__file__).with_name("results.md")


@dataclass(frozen=True)
class Policy:
    """A toolkit's settings and what the tools and the session declare under it."""

    name: str
    toolkit: dict[str, str]
    destinations: bool = False  # tools declare their destination arguments
    fields: bool = False  # readers declare which output fields are untrusted
    grants: bool = False  # the session is granted the tools the request asks for
    about: str = ""

    def tool_options(self, meta: ToolMeta) -> dict[str, Any]:
        options: dict[str, Any] = {
            "effect": meta.effect,
            "sends_out": meta.sends_out,
            "reads_private": meta.private,
        }
        if meta.untrusted is not None:
            if self.fields and meta.untrusted != ("*",):
                options["untrusted_fields"] = meta.untrusted
            else:
                options["untrusted_output"] = True
        if self.destinations and meta.destinations:
            options["destinations"] = meta.destinations
        return options


OFF = {"untrusted_inputs": "ignore", "exfiltration": "ignore", "provenance": "ignore"}
PROVENANCE = {**OFF, "provenance": "check"}
POLICIES: tuple[Policy, ...] = (
    Policy("none", OFF, about="no check"),
    Policy(
        "trifecta",
        {**OFF, "exfiltration": "refuse"},
        about="exfiltration='refuse': no sending tool after private data and untrusted content",
    ),
    Policy(
        "six-word",
        {**OFF, "untrusted_inputs": "check"},
        about="untrusted_inputs='check': no change or send repeating six words of untrusted text",
    ),
    Policy(
        "provenance",
        PROVENANCE,
        destinations=True,
        about="destinations declared, readers' output untrusted as a whole",
    ),
    Policy(
        "provenance + trusted fields",
        PROVENANCE,
        destinations=True,
        fields=True,
        about="as above, readers declare their untrusted fields (the rest is trusted)",
    ),
    Policy(
        "provenance + trusted fields + grants",
        PROVENANCE,
        destinations=True,
        fields=True,
        grants=True,
        about="as above, and the session is granted only the tools the request asks for",
    ),
    Policy(
        "all of the above + six-word",
        {**PROVENANCE, "untrusted_inputs": "check"},
        destinations=True,
        fields=True,
        grants=True,
        about="as above, with the six-word check on (toolpass's default) over the untrusted fields",
    ),
)


def grant(suite: Suite, request: str, tools: Iterable[tuple[str, ToolMeta]]) -> dict[str, Any]:
    """What an application would grant a request: every read, and each tool whose words the
    request uses (``suite.grants``), with their effects."""
    metas = dict(tools)
    allowed = {n for n, m in metas.items() if m.effect == "read"}
    allowed |= {n for n, words in suite.grants.items() if re.search(words, request, re.I)}
    return {"allow_tools": allowed, "allow_effects": {metas[n].effect for n in allowed}}


@dataclass
class Run:
    suite: str
    task: str
    injection: str | None
    policy: str
    done: bool  # the user's task was done
    reached: bool  # the attacker's goal was reached
    obeyed: bool  # the model read the injection and obeyed it
    refusals: list[tuple[str, str, bool]] = field(default_factory=list)
    error: str = ""


def run(
    suite: Suite,
    task: UserTask,
    policy: Policy,
    injection: InjectionTask | None = None,
    vectors: Iterable[str] = (),
    fill: dict[str, str] | None = None,
) -> tuple[Run, Model]:
    """One run of ``task`` under ``policy``, with ``injection`` placed in ``vectors``."""
    into = set(vectors)
    text = INJECTION.format(user=suite.victim, goal=injection.goal) if injection else ""
    env = suite.environment(
        lambda v: (fill or {}).get(v) or (text if v in into else suite.vectors[v])
    )
    kit = Toolkit(audit=[lambda event: None], approver=lambda request: False, **policy.toolkit)
    declared = [(name, meta) for name, _, meta in env.tools()]
    tools = {
        name: kit.secured_tool(fn, name=name, **policy.tool_options(meta))
        for name, fn, meta in env.tools()
    }
    given = grant(suite, task.prompt, declared) if policy.grants else {}
    session = Session(suite.victim, request=task.prompt, **given)
    model = Model(tools, injection)
    answer, error = None, ""
    with session.active():
        try:
            answer = task.script(model)
        except Refused:
            pass  # the model tells the user what was refused
        except Exception as exc:  # a script that could not go on (data it needs was changed)
            error = f"{type(exc).__name__}: {exc}"
    return (
        Run(
            suite.name,
            task.id,
            injection.id if injection else None,
            policy.name,
            done=bool(task.check(env, answer)),
            reached=bool(injection and injection.check(env)),
            obeyed=model.obeyed,
            refusals=model.refusals,
            error=error,
        ),
        model,
    )


def seen_vectors(suite: Suite, task: UserTask) -> list[str]:
    """The injection vectors the task reads (a canary in each, run with no checks)."""
    canaries = {v: f"CANARY-{v}-CANARY" for v in suite.vectors}
    _, model = run(suite, task, POLICIES[0], fill=canaries)
    read = "\n".join(model.read)
    return [v for v, canary in canaries.items() if canary in read]


@dataclass
class Results:
    policies: tuple[Policy, ...]
    benign: list[Run]
    attacked: list[Run]
    pairs: int  # attacked pairs whose goal is reached with no check
    moot: list[tuple[str, str]] = field(default_factory=list)  # pairs it is not reached
    seconds: float = 0.0

    def of(self, runs: list[Run], policy: Policy) -> list[Run]:
        return [r for r in runs if r.policy == policy.name]

    def row(self, policy: Policy) -> dict[str, Any]:
        benign, attacked = self.of(self.benign, policy), self.of(self.attacked, policy)
        return {
            "policy": policy.name,
            "utility": (sum(r.done for r in benign), len(benign)),
            "prevented": (sum(not r.reached for r in attacked), len(attacked)),
            "under attack": (sum(r.done for r in attacked), len(attacked)),
        }

    def table(self) -> str:
        lines = [
            "| policy | utility | attacks prevented | utility under attack |",
            "|---|---:|---:|---:|",
        ]
        for policy in self.policies:
            row = self.row(policy)
            cells = [_share(*row[k]) for k in ("utility", "prevented", "under attack")]
            lines.append(f"| {policy.name} | " + " | ".join(cells) + " |")
        return "\n".join(lines)

    def by_suite(self) -> str:
        names = [s.name for s in SUITES]
        lines = [
            "| policy | " + " | ".join(f"{n}: utility; prevented" for n in names) + " |",
            "|---|" + "---:|" * len(names),
        ]
        for policy in self.policies:
            cells = []
            for name in names:
                b = [r for r in self.of(self.benign, policy) if r.suite == name]
                a = [r for r in self.of(self.attacked, policy) if r.suite == name]
                done, stopped = sum(r.done for r in b), sum(not r.reached for r in a)
                cells.append(f"{done}/{len(b)}; {stopped}/{len(a)}")
            lines.append(f"| {policy.name} | " + " | ".join(cells) + " |")
        return "\n".join(lines)

    def misses(self, policy: Policy) -> tuple[list[str], list[str]]:
        """The user tasks it stops (and why), and the attacks that got through."""
        notes = {t.id: t.note for s in SUITES for t in s.user_tasks}
        lost = [
            f"{r.task} ({_why(r)})" + (f": {notes[r.task]}" if notes[r.task] else "")
            for r in self.of(self.benign, policy)
            if not r.done
        ]
        attacks = {i.id: i.note for s in SUITES for i in s.injection_tasks}
        through: dict[str, list[str]] = {}
        for r in self.of(self.attacked, policy):
            if r.reached:
                through.setdefault(r.injection or "", []).append(r.task)
        return lost, [f"{i} ({attacks[i]}) with {', '.join(tasks)}" for i, tasks in through.items()]


def _why(r: Run) -> str:
    own = [f"{tool}: {code}" for tool, code, attack in r.refusals if not attack]
    return ", ".join(own) or r.error or "not done"


def _share(n: int, total: int) -> str:
    return f"{100 * n / total:.1f}% ({n}/{total})" if total else "n/a"


def evaluate(
    policies: tuple[Policy, ...] = POLICIES, suites: tuple[Suite, ...] = SUITES
) -> Results:
    """Every user task under each policy; then each user task that reads attacker-written
    text with each injection task of its suite whose goal, with no check, is reached."""
    started = time.perf_counter()
    results = Results(policies, [], [], 0)
    for suite in suites:
        for task in suite.user_tasks:
            vectors = seen_vectors(suite, task)
            for policy in policies:
                results.benign.append(run(suite, task, policy)[0])
            if not vectors:
                continue  # it reads nothing an attacker writes: no attacked run
            for injection in suite.injection_tasks:
                baseline, _ = run(suite, task, POLICIES[0], injection, vectors)
                if not baseline.reached:  # e.g. "reply to this email" read in a file
                    results.moot.append((task.id, injection.id))
                    continue
                results.pairs += 1
                for policy in policies:
                    results.attacked.append(run(suite, task, policy, injection, vectors)[0])
    results.seconds = time.perf_counter() - started
    return results


def report(results: Results) -> str:
    tasks = sum(len(s.user_tasks) for s in SUITES)
    injections = sum(len(s.injection_tasks) for s in SUITES)
    out = [
        "# Prompt injection: utility and attacks prevented, per policy",
        "",
        "Generated by `python bench/injection/run.py`; do not edit by hand.",
        "",
        f"{tasks} user tasks and {injections} injection tasks in {len(SUITES)} suites "
        f"({', '.join(s.name for s in SUITES)}); {results.pairs} attacked pairs: each user "
        "task that reads attacker-written text, with each injection task of its suite whose "
        "goal is reached when nothing is checked "
        f"({len(results.moot)} pairs where it is not are left out: "
        f"{', '.join('x'.join(p) for p in results.moot) or 'none'}). "
        "Utility: user tasks done without attack. Prevented: attacked runs whose goal was not "
        "reached. The scripted model obeys every injection it reads.",
        "",
        results.table(),
        "",
        "Per suite (user tasks done; attacks prevented):",
        "",
        results.by_suite(),
        "",
        "## The policies",
        "",
        *[f"- **{p.name}**: {p.about}." for p in results.policies],
        "",
        "## What each policy misses",
        "",
    ]
    for policy in results.policies[1:]:
        lost, through = results.misses(policy)
        out += [f"### {policy.name}", ""]
        out += ["User tasks stopped: " + ("; ".join(lost) if lost else "none") + ".", ""]
        out += ["Attacks through: " + ("; ".join(through) if through else "none") + ".", ""]
    return "\n".join(out + METHOD)


METHOD = [
    "## How it is measured, and its limits",
    "",
    "- Trust, per suite: email subjects and bodies, event titles and descriptions, file "
    "contents, transaction subjects, e-bill memos, documents, chat message bodies, web pages, "
    "reviews and the descriptions hotels and restaurants write are untrusted; senders, "
    "participants, ids, IBANs, amounts, names, prices and addresses set by the system are "
    "trusted fields. Under *provenance* the readers' whole output is untrusted; under "
    "*trusted fields* only those fields are.",
    "- Private: the mailbox, calendar, drive, contacts, bank and chat readers declare "
    "`reads_private` (what the trifecta needs); the travel listings do not.",
    "- The model obeys the first injection it reads (before going on with the user's task), "
    "as a fully obedient model would; a refused call ends what it was doing, where a real "
    "model might try another way. Attacks that only change the answer (no tool call) are not "
    "measured: no tool-call check can see them.",
    "- Grants are derived from the request by keyword rules per suite (`Suite.grants`: "
    "every read, plus each tool whose words the request uses). They were written alongside "
    "the tasks, so they are more exact than an application's derivation is likely to be; an "
    "over-broad grant lets the attacks that use a granted tool through.",
    "- An attacked pair places the injection in every attacker-written field the user task "
    "reads (found by running it with a canary in each), as AgentDojo does.",
    "",
]


def main() -> None:
    results = evaluate()
    errors = [r for r in results.benign + results.attacked if r.error]
    print(results.table())
    print(
        f"\n{results.pairs} attacked pairs, {len(results.benign) // len(POLICIES)} user tasks, "
        f"{results.seconds:.1f}s"
    )
    for r in errors:
        print(f"error: {r.suite} {r.task} {r.injection} {r.policy}: {r.error}")
    RESULTS.write_text(report(results) + "\n")
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
