"""Step 2, scope rules: globs (``*`` is zero or more characters and never crosses ``/``),
lists of globs, predicates.

A value that escapes its scope (``..``, a second segment, a control character) is
``out_of_scope``. Property tests throw hostile strings at the globs.
"""

import fnmatch
import unicodedata

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from toolpass.rules import compile_scope

PROPERTY = settings(deadline=None, database=None, max_examples=500)


@pytest.mark.parametrize(
    ("rule", "inside", "outside"),
    [
        (
            "acme/gitops-*",
            ["acme/gitops-prod", "acme/gitops-a.b", "acme/gitops-"],  # `*` may match nothing
            [
                "acme/gitops-prod/extra",  # a second segment
                "acme/gitops-prod/..",
                "acme/gitops-../x",
                "acme/other",
                "ACME/gitops-prod",
                "acme/gitops-prod\n",  # a control character
                "acme/gitops-\x00prod",
                "acme/gitops-\u202eprod",  # a bidi override
                "acme/gitops-\u200bprod",  # a zero-width space
                "acme\\gitops-prod",
                "acme/gitops-prod\uff0fx",  # a fullwidth solidus: a second segment in disguise
                "acme/gitops-prod\u2215x",  # a division slash
                " acme/gitops-prod",
                "",
            ],
        ),
        (
            "acme/*",
            ["acme/x"],
            # a segment that is only `*` names a whole segment, never an empty one
            ["acme/..", "acme/.", "acme/", "acme/x/y", "acme/../etc", "acme/\u2025"],
        ),
        ("notes/?.md", ["notes/a.md"], ["notes/ab.md", "notes//.md", "notes/.md"]),
        (
            "docs/**",
            ["docs/a", "docs/a/b/c.md"],
            ["docs/../etc/passwd", "docs/a/./b", "docs/a/../../b", "other/docs/a"],
        ),
        (
            ["acme/app-*", "acme/lib-*"],
            ["acme/app-1", "acme/lib-2"],
            ["acme/tool-1", "acme/app-1/x"],
        ),
        (
            lambda v: v.endswith(".example.com"),
            ["mail.example.com"],
            ["example.com.evil.test", "mail.example.co"],
        ),
        (["acme/*", lambda v: v == "special"], ["acme/x", "special"], ["other/x", "specials"]),
    ],
    ids=["glob", "dots", "question-mark", "double-star", "list", "predicate", "mixed"],
)
def test_scope_rules(drive, kit, session, events, rule, inside, outside):
    ran = []
    tool = drive.tool(kit, lambda target: ran.append(target), scope={"target": rule})
    for value in inside:
        drive.call(tool, value)
    assert ran == inside
    for value in outside:
        refusal = drive.refused(tool, value)
        assert refusal.code == "out_of_scope", value
        assert "'target'" in refusal.message
    assert ran == inside
    assert [e.code for e in events] == [None] * len(inside) + ["out_of_scope"] * len(outside)


def test_a_list_argument_is_checked_item_by_item(drive, kit, session):
    tool = drive.tool(kit, lambda repos: len(repos), scope={"repos": "acme/*"})
    assert drive.call(tool, ["acme/a", "acme/b"]) == 2
    assert drive.call(tool, []) == 0
    assert drive.refused(tool, ["acme/a", "other/b"]).code == "out_of_scope"
    assert drive.refused(tool, ["acme/a", None]).code == "out_of_scope"


def test_numbers_are_matched_as_text_and_other_values_are_refused(drive, kit, session):
    tool = drive.tool(kit, lambda issue: issue, scope={"issue": "1*"})
    assert drive.call(tool, 12) == 12
    assert drive.refused(tool, 21).code == "out_of_scope"
    assert drive.refused(tool, True).code == "out_of_scope"
    assert drive.refused(tool, {"1": 1}).code == "out_of_scope"
    assert drive.refused(tool, 1.5).code == "out_of_scope"


def test_none_names_nothing_and_passes(drive, kit, session):
    tool = drive.tool(kit, lambda repo=None: repo or "all", scope={"repo": "acme/*"})
    assert drive.call(tool) == "all"


def test_a_predicate_that_raises_fails_closed(drive, kit, session, events):
    def predicate(value: str) -> bool:
        raise RuntimeError("lookup table missing")

    ran = []
    tool = drive.tool(kit, lambda target: ran.append(target), scope={"target": predicate})
    assert drive.refused(tool, "x").code == "check_error"
    assert ran == []
    [event] = events
    assert "lookup table missing" in event.detail


@pytest.mark.parametrize(
    ("scope", "error"),
    [
        ({"nope": "a/*"}, "does not take"),
        ({"target": []}, "empty scope"),
        ({"target": 42}, "scope rule"),
        ({"target": ["a/*", ""]}, "non-empty"),
        ({"target": ["a/*", 3]}, "glob"),
    ],
)
def test_scope_mistakes_fail_at_decoration(kit, scope, error):
    with pytest.raises(TypeError, match=error):
        kit.secured_tool(lambda target: None, scope=scope)


# Properties: hostile strings against globs.

SLASH_LOOKALIKES = "\u2044\u2215\u29f8\uff0f"  # fraction, division, big, fullwidth solidus
BACKSLASH_LOOKALIKES = "\u2216\u29f5\u29f9\ufe68\uff3c"
DOT_LOOKALIKES = "\u2024\u2025\ufe52\uff0e"  # one/two dot leader, small/fullwidth full stop
HOSTILE = (
    "ab./\\*?-_ "
    + SLASH_LOOKALIKES
    + BACKSLASH_LOOKALIKES
    + DOT_LOOKALIKES
    + "\x00\t\n\r\x1b\x7f\x85\u2028\u2029\u200b\u200d\u202e\u2066\ufeff"
    + "аеοΑ"  # Cyrillic and Greek letters that look Latin
)

globs = st.text(alphabet="ab.-*?/", min_size=1, max_size=8).filter(lambda g: "**" not in g)
hostile = st.text(alphabet=HOSTILE, max_size=12)
fragments = st.sampled_from(["..", ".", "/", "//", "../", "/..", "\\", "\x00", "\n", "a", "b"])


def names_a_second_segment(value: str, glob: str) -> bool:
    """True if ``value`` holds more path separators (or look-alikes of one) than ``glob``."""
    folded = unicodedata.normalize("NFKC", value)
    slashes = max(value.count("/"), folded.count("/"))
    slashes += sum(value.count(c) for c in SLASH_LOOKALIKES if c not in "\uff0f")
    return slashes > glob.count("/")


def climbs(value: str) -> bool:
    """True if ``value`` (or its compatibility form) has a ``.``/``..`` segment or a
    backslash (or a look-alike of one), or a control or format character."""
    for text in (value, unicodedata.normalize("NFKC", value)):
        if any(seg in (".", "..") for seg in text.split("/")):
            return True
        if "\\" in text or any(c in text for c in BACKSLASH_LOOKALIKES):
            return True
        if any(unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp") for c in text):
            return True
    return False


@PROPERTY
@given(glob=globs, value=hostile)
def test_a_glob_without_double_star_never_matches_a_second_segment(glob, value):
    if compile_scope(glob)(value):
        assert not names_a_second_segment(value, glob)
        assert not climbs(value)


@PROPERTY
@given(
    glob=st.sampled_from(["*", "**", "a/**", "**/b", "a*", "*/*", "?*", "*.*", "a/*/b"]),
    parts=st.lists(st.one_of(fragments, hostile), max_size=6),
)
def test_escaping_values_never_match_any_glob(glob, parts):
    value = "".join(parts)
    assume(climbs(value))
    assert not compile_scope(glob)(value)


@PROPERTY
@given(value=hostile)
def test_star_matches_exactly_the_plain_single_segments(value):
    plain = value != "" and not names_a_second_segment(value, "") and not climbs(value)
    assert compile_scope("*")(value) == plain


@PROPERTY
@given(
    prefix=st.text(alphabet="abc-", min_size=1, max_size=4),
    rest=st.text(alphabet="abc-/.", max_size=10),
)
def test_a_glob_matches_like_a_path_pattern(prefix, rest):
    """Against plain ASCII, ``prefix*`` matches exactly one segment starting with prefix
    (the prefix alone too: ``*`` may match nothing)."""
    for name in (rest, prefix + rest):
        expected = name.startswith(prefix) and "/" not in name and name not in (".", "..")
        assert compile_scope(f"org/{prefix}*")(f"org/{name}") == expected


@PROPERTY
@given(
    rule=st.lists(globs, min_size=1, max_size=3),
    items=st.lists(hostile, max_size=4),
)
def test_a_list_value_passes_only_if_every_item_does(rule, items):
    matcher = compile_scope(rule)
    each = [any(compile_scope(g)(v) for g in rule) for v in items]
    assert matcher(items) == all(each)


def fnmatch_by_segment(glob: str, value: str) -> bool:
    """The reference: fnmatch, one segment at a time (so nothing crosses ``/``); a segment
    that is only ``*`` needs a non-empty segment, and ``.``/``..`` segments never pass."""
    globs, values = glob.split("/"), value.split("/")
    return len(globs) == len(values) and all(
        fnmatch.fnmatchcase(v, g)
        and (v != "" or g.strip("*") != "" or g == "")
        and v not in (".", "..")
        for g, v in zip(globs, values, strict=False)
    )


@st.composite
def glob_and_value(draw):
    """A glob of plain characters, ``*`` and ``?``, and a value that often matches it:
    each ``*`` filled with zero or more characters, each ``?`` with one (sometimes a ``/``)."""
    glob = draw(
        st.text(alphabet="ab.-*?/", min_size=1, max_size=10).filter(lambda g: "**" not in g)
    )
    fill = st.text(alphabet="ab.-x*?", max_size=3)
    parts = []
    for c in glob:
        if c == "*":
            parts.append(draw(st.one_of(fill, st.just("/"))))
        elif c == "?":
            parts.append(draw(st.sampled_from(["a", ".", "*", "/", ""])))
        else:
            parts.append(c)
    value = draw(st.one_of(st.just("".join(parts)), st.text(alphabet="ab.-/x*?", max_size=12)))
    return glob, value


@PROPERTY
@given(glob_and_value())
def test_a_glob_matches_like_fnmatch_within_each_segment(case):
    glob, value = case
    assert compile_scope(glob)(value) == fnmatch_by_segment(glob, value)
