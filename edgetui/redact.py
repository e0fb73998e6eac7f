"""Secrets out of everything edgetui stores or shows: one pattern set, used everywhere.

Every text edgetui writes (event summaries and other text columns, the decoded
strings of an event's ``data`` before it is serialised, the kept ``raw`` bytes of a
line, submissions' and test results' messages, alarms, notes, ``--on-alarm`` JSON,
the pager's copy of a run file) passes through :func:`redact_text` /
:func:`redact_bytes` / :func:`redact_obj`. A secret becomes :data:`REDACTED`.

Rules (:data:`RULES`) are adapted from gitleaks' maintained default rule set
(``config/gitleaks.toml`` of gitleaks/gitleaks at commit b58d3f1, 2026-07-22; rule ids
named beside each), widened where gitleaks pins an exact length that real keys of a
kind do not always have (``sk-ant-…``, ``github_pat_…``). Each rule runs only when
one of its literal keywords occurs in the text (gitleaks' ``keywords`` prefilter), so
text without any keyword costs a few substring scans.

Boundaries also accept a JSON escape before a token (``\\n``, ``\\t``…): raw bytes
are serialised JSON, where a key at the start of a line inside a string follows an
escaped newline (``…\\nsk-ant-…``).

Deliberately *not* matched by shape alone: 40-character strings (git SHAs, an AWS
secret key's shape), UUIDs, hex hashes, base64 payloads (images). An AWS secret
access key is found by its context only: after ``aws_secret_access_key`` /
``AWS_SECRET_ACCESS_KEY=`` (any spelling of the name), or as a mixed-case 40-char
token within 200 characters of an ``AKIA…`` access key id. Generic ``NAME=value``
assignments (``NAME`` mentioning key, token, secret, password, credential, auth)
are redacted when ``NAME`` is a credential's name (password, secret, api_key,
access_token, ``…_TOKEN``, an environment variable's ``…_KEY``) and the value is not a
number, a placeholder or a path, whatever its first character (``PASSWORD=4Xel…``);
otherwise only when the value looks like a credential: 10-150 characters of
``[\\w.=+/-]`` mixing letters and digits, not starting with a digit (a count, a git SHA),
and Shannon entropy at least 3.5 bits a character (gitleaks' ``generic-api-key``), so
``max_tokens=4096`` or ``key_count=12`` stay. The same names judge a JSON object's
values (:func:`redact_obj`: run_config.json, an event's ``data``) and say which values of
a run's config are its known secrets (:func:`secret_values`).

A private key printed across lines that are redacted one by one (a log's records) is
followed by :class:`KeyBlockLines`, whose state a parser keeps between reads.

Why this rule set and not a library's: gitleaks' rules are the maintained source (Go, not
importable); detect-secrets' plugins are per-line regexes plus entropy plugins that flag
any long hex or base64 string (git SHAs, hashes, images: research data here) and report
lines, not spans to replace. The rules are kept in this one module, run behind one RE2
prefilter scan (google-re2, pinned), and used by every sink.
"""

from __future__ import annotations

import math
import os
import re

import re2
from typing import Any, Callable, Optional, Union, overload

import bisect
import tempfile

REDACTED = "<redacted>"

#: end of a token. (Its start is checked in the replacement, :func:`_at_start`, for the rules named in
#: :data:`_BOUNDED`: a leading lookbehind would stop ``re`` from searching for their literal prefix.)
_E = r"(?![A-Za-z0-9_])"

Repl = Union[str, Callable[["re.Match[str]"], str]]


def _at_start(m: "re.Match[str]") -> bool:
    i = m.start()
    if i == 0:
        return True
    prev = m.string[i - 1]
    if not (prev.isalnum() or prev == "_"):
        return True
    return i >= 2 and m.string[i - 2] == "\\" and prev in "nrtbf"


def _bounded(repl: Repl) -> Callable[["re.Match[str]"], str]:
    if callable(repl):
        return lambda m: repl(m) if _at_start(m) else m.group(0)
    return lambda m: (m.expand(repl) if "\\" in repl else repl) if _at_start(m) else m.group(0)


def _entropy(s: str) -> float:
    n = len(s)
    counts: dict[str, int] = {}
    for ch in s:
        counts[ch] = counts.get(ch, 0) + 1
    return -sum(c / n * math.log2(c / n) for c in counts.values())


_PLACEHOLDER = re.compile(
    r"^(?:<[^>]*>|\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|\{\{.*\}\}|x{3,}|\*{3,}|\.{3,}|"
    r"(?i:true|false|null|none|changeme|redacted|example|your[-_a-z]*))$"
)


#: names whose value is a credential whatever it looks like (``password=abc12345``)
_STRONG_NAME = re.compile(
    r"(?i)(?:passw(?:or)?d|passwd|secret|api_?key|access_?key|private_?key|auth_?token|"
    r"access_?token|credential|(?:^|[_.-])token\\?[\"']?\s*[:=]?\s*(?:\\?[\"'])?$)"
    # an environment variable's name ending in _KEY (LICENSE_KEY, SIGNING_KEY): upper case only,
    # so that research data's sort_key / cache_key keep their values
    r"|(?-i:(?:^|[^a-z0-9])[A-Z][A-Z0-9_]*_KEY\\?[\"']?\s*[:=]?\s*(?:\\?[\"'])?$)"
)

#: a number (``4096``, ``0.75``, ``1e-5``): never a credential, whatever the name
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")


def _looks_like_credential(value: str, name: str = "") -> bool:
    v = value.strip("\"'`")
    if len(v) < 4 or _NUMBER.fullmatch(v) or _PLACEHOLDER.match(v) or v.startswith(("/", "./", "~/", "http")):
        return False
    if _STRONG_NAME.search(name):
        return True  # a credential's name: its value is one, whatever its first character
    # a name that only mentions a secret word (key_count, Auth): gitleaks' generic-api-key form,
    # a 10-150 character token of [\w.=+/-] with entropy >= 3.5, and it must mix letters and digits;
    # a value starting with a digit is data here (a count, a git SHA, a hash)
    if (
        v[0].isdigit()
        or not _WEAK_VALUE.fullmatch(v)
        or not any(c.isdigit() for c in v)
        or not any(c.isalpha() for c in v)
    ):
        return False
    try:
        float(v)
        return False
    except ValueError:
        pass
    return _entropy(v) >= 3.5


_WEAK_VALUE = re.compile(r"[\w.=+/-]{10,150}")


_AWS_SECRET_NEAR = re.compile(r"(?<![A-Za-z0-9/+=])([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])")


def _aws_near_id(m: "re.Match[str]") -> str:
    """An AKIA… id and the mixed-case 40-char token within 200 characters after or before it."""
    whole = m.group(0)

    def sub(t: "re.Match[str]") -> str:
        s = t.group(1)
        if re.fullmatch(r"[0-9a-fA-F]{40}", s) or not (
            re.search(r"[a-z]", s) and re.search(r"[A-Z]", s) and re.search(r"[0-9/+]", s)
        ):
            return s  # a git SHA / hex hash, or not base64-like: stays
        return REDACTED

    return _AWS_SECRET_NEAR.sub(sub, whole)


_GENERIC_WORDS = ("key", "token", "secret", "passw", "credential", "creds", "auth")
#: where a secret word starts a NAME=value / "name": "value" (the word itself is the match)
_GENERIC_AT = re2.compile(
    "(?i:(" + "|".join(_GENERIC_WORDS) + r"))[A-Za-z0-9_]*\\?[\"']?[ \t]*[=:][ \t]*"
    r"(?:\\?[\"'])?[^\s,}\]{\[\\\"']"
)
_TERMINATORS = frozenset(" \t\r\n\"'`;\\")
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")
#: after a keyword: the rest of the name, an optional closing quote, = or :, an optional opening quote
_AFTER_WORD = re.compile(r"[A-Za-z0-9_]*(\\?[\"'])?[ \t]*(?:=|:)[ \t]*(\\?[\"'])?")
_VALUE_UNQUOTED = re.compile(r"[^\s\"'\\,;&|)}\]]+")
_VALUE_QUOTED = re.compile(r"[^\"'\\\n]+")


def _redact_generic(text: str) -> str:
    """``NAME=value`` / ``"name": "value"`` where NAME holds a secret word: the candidate
    places come from one RE2 scan (:data:`_GENERIC_AT`), then each value is judged by
    :func:`_looks_like_credential` (linear, no backtracking)."""
    spans: list[tuple[int, int]] = []
    for g in _GENERIC_AT.finditer(text):
        i, word_end = g.start(1), g.end(1)
        m = _AFTER_WORD.match(text, word_end)
        if m is None:
            continue
        start = i
        while start > 0 and text[start - 1] in _NAME_CHARS:
            start -= 1
        if start > 0 and text[start - 1] in "\"'":
            start -= 1
        name = text[start : m.end()]
        rx = _VALUE_QUOTED if m.group(2) else _VALUE_UNQUOTED
        v = rx.match(text, m.end())
        if v is None:
            continue
        nxt = text[v.end() : v.end() + 1]
        if nxt and nxt not in _TERMINATORS and not _STRONG_NAME.search(name):
            continue  # "Auth: resolveAuthor() check": a value runs on into code, not a token
        if _looks_like_credential(v.group(0), name):
            spans.append((v.start(), v.end()))
    if not spans:
        return text
    out = []
    last = 0
    for a, b in sorted(set(spans)):
        if a < last:
            continue
        out.append(text[last:a])
        out.append(REDACTED)
        last = b
    out.append(text[last:])
    return "".join(out)


#: a rule by pattern: (gitleaks rule id or our name, literal keywords (any of, lowercase means
#: case-insensitive), pattern, repl)
PatternRule = tuple[str, tuple[str, ...], "re.Pattern[str]", Repl]
#: a rule over the whole text: (name, keywords, None, the function from text to text)
TextRule = tuple[str, tuple[str, ...], None, Callable[[str], str]]

RULES: list[Union[PatternRule, TextRule]] = [
    # private-key: the whole block, also one cut before its END line
    (
        "private-key",
        ("-----BEGIN",),
        re.compile(
            r"-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----(?:[\s\S]{64,}?KEY(?: BLOCK)?-----"
            r"|(?:[A-Za-z0-9+/=\s:,-]|\\[nrt])*)"
        ),
        REDACTED,
    ),
    # anthropic-api-key, anthropic-admin-api-key, openai-api-key (widened: any sk- key of 16+ chars)
    ("anthropic-openai-api-key", ("sk-",), re.compile(r"sk-[A-Za-z0-9_-]{16,}"), REDACTED),
    (
        "stripe-access-token",
        ("sk_live", "sk_test", "sk_prod", "rk_live", "rk_test", "rk_prod"),
        re.compile(r"(?:sk|rk)_(?:test|live|prod)_[A-Za-z0-9]{10,99}" + _E),
        REDACTED,
    ),
    # github-pat, github-oauth, github-app-token, github-refresh-token
    (
        "github-token",
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"),
        re.compile(r"gh[pousr]_[0-9A-Za-z]{20,}" + _E),
        REDACTED,
    ),
    ("github-fine-grained-pat", ("github_pat_",), re.compile(r"github_pat_\w{20,}"), REDACTED),
    # gitlab-pat, gitlab-pat-routable, gitlab-ptt, gitlab-rrt
    (
        "gitlab-token",
        ("glpat-", "glptt-", "GR1348941"),
        re.compile(r"(?:glpat-[\w.-]{20,}|glptt-[0-9a-f]{40}|GR1348941[\w-]{20,})"),
        REDACTED,
    ),
    # aws-access-token; an access key id with a secret near it loses both
    (
        "aws-access-token+secret",
        ("AKIA", "ASIA", "ABIA", "ACCA", "A3T"),
        re.compile(
            r"(?:[A-Za-z0-9/+]{40}[\s\S]{0,200}?)?(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}"
            + _E
            + r"(?:[\s\S]{0,200}?[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=]))?"
        ),
        _aws_near_id,
    ),
    (
        "aws-access-token",
        ("AKIA", "ASIA", "ABIA", "ACCA", "A3T"),
        re.compile(r"(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}" + _E),
        REDACTED,
    ),
    # AWS secret access key by its name (aws_secret_access_key = ..., "AWS_SECRET_ACCESS_KEY": "...")
    (
        "aws-secret-access-key",
        ("secret",),
        re.compile(
            r"(?i)(aws_?secret(?:_?access)?_?key[\"']?\s*(?:=|:|=>)\s*[\"']?)([A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])"
        ),
        r"\1" + REDACTED,
    ),
    # gcp-api-key
    ("gcp-api-key", ("AIza",), re.compile(r"AIza[\w-]{35}"), REDACTED),
    # slack-bot-token, slack-user-token, slack-app-token, slack-legacy-token, slack-webhook-url
    (
        "slack-token",
        ("xox", "xapp-"),
        re.compile(r"(?:xox[abposer]-[0-9A-Za-z-]{10,}|xapp-\d-[A-Z0-9]+-\d+-[a-z0-9]+)"),
        REDACTED,
    ),
    (
        "slack-webhook-url",
        ("hooks.slack.com",),
        re.compile(r"(hooks\.slack\.com/(?:services|workflows|triggers)/)[A-Za-z0-9+/]{20,}"),
        r"\1" + REDACTED,
    ),
    # jwt (a JSON Web Token: three base64url parts, the first two starting {" encoded)
    ("jwt", ("eyJ",), re.compile(r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*"), REDACTED),
    ("huggingface-access-token", ("hf_", "api_org_"), re.compile(r"(?:hf|api_org)_[A-Za-z0-9]{30,}" + _E), REDACTED),
    ("npm-access-token", ("npm_",), re.compile(r"npm_[A-Za-z0-9]{36}" + _E), REDACTED),
    ("pypi-upload-token", ("pypi-AgEI",), re.compile(r"pypi-AgEIcHlwaS5vcmc[\w-]{50,1000}"), REDACTED),
    # a password in a URL: scheme://user:password@host
    ("url-password", ("://",), re.compile(r"(://[^/\s:@\"'\\]+:)[^@\s/\"'\\]+@"), r"\1" + REDACTED + "@"),
    ("bearer", ("bearer",), re.compile(r"(?i)(\bBearer\s+)[A-Za-z0-9._~+/=-]{8,}"), r"\1" + REDACTED),
    # generic-api-key, narrowed: NAME=value and "name": "value" where NAME mentions a secret
    ("generic-assignment", _GENERIC_WORDS, None, _redact_generic),
]

_BOUNDED = {
    "anthropic-openai-api-key",
    "stripe-access-token",
    "github-token",
    "github-fine-grained-pat",
    "gitlab-token",
    "aws-access-token",
    "gcp-api-key",
    "slack-token",
    "jwt",
    "huggingface-access-token",
    "npm-access-token",
}


def _bounded_rule(rule: Union[PatternRule, TextRule]) -> Union[PatternRule, TextRule]:
    if rule[2] is None or rule[0] not in _BOUNDED:
        return rule
    return (rule[0], rule[1], rule[2], _bounded(rule[3]))


RULES = [_bounded_rule(rule) for rule in RULES]

_CASED = sorted({k for _, ks, _, _ in RULES for k in ks if not k.islower()})
_FOLDED = sorted({k for _, ks, _, _ in RULES for k in ks if k.islower()})


def _prefilter_pattern(serialised: bool = False) -> str:
    """Every rule's keywords, and the generic rule's shape (a secret word, ``=`` or ``:``, a
    value not starting like a number or a JSON object), as one RE2 pattern.

    ``serialised``: for JSON that edgetui serialised itself (an event's ``data``), where a
    bare ``"`` only delimits keys and strings: a key's own name (``"key": "…"``) is not
    text, so only a credential's name as a key with a string value counts
    (:func:`redact_obj` judges those), beside secret words inside string values.
    """
    skip = set(_GENERIC_WORDS) | {"bearer", "secret"}
    cased = "|".join(re.escape(k) for k in sorted(set(_CASED) | set(_FOLDED)) if k not in skip)
    words = "(?:" + "|".join(re.escape(k) for k in _GENERIC_WORDS) + ")"
    quote = r"(?:\\[\"']|')?" if serialised else r"(?:\\?[\"'])?"
    shape = (
        r"(?i:" + words + r"[a-z0-9_]*" + quote + r"[ \t]*[=:][ \t]*(?:\\?[\"'])?[\w.=+/-]{10,150}"
        r"(?:[\s\"'`;\\]|$))"
    )
    strong = r"|(?i:api_?key|access_?key|private_?key|auth_?token|access_?token|client_?secret)"
    keys = (
        r'|(?i:"[a-z0-9_.-]*(?:passw|secret|api_?key|access_?key|private_?key|auth_?token|access_?token|'
        r'credential|token|password|passwd|_key)s?":\[?")'
        if serialised
        else ""
    )
    return shape + keys + strong + r"|(?i:bearer)\s|(?i:passw|secret|hooks\.slack)|" + cased


# the cheap prefilter: RE2 (google-re2, a linear-time DFA; ~400 MB/s here on a transcript, where
# Python's re needs ~16 MB/s for the same case-insensitive alternation) says whether any rule can match
RE2_OPTIONS = re2.Options()
RE2_OPTIONS.never_capture = True  # the prefilter only says where: ~15 % faster scans
_LITERAL_OF = {k: k for k in set(_CASED) | set(_FOLDED)}
_FOLDED_ALL = tuple(sorted(set(_FOLDED) | {"bearer", "secret", "hooks.slack.com"}))
PREFILTER_B = re2.compile(_prefilter_pattern().encode(), RE2_OPTIONS)
PREFILTER_DATA_B = re2.compile(_prefilter_pattern(serialised=True).encode(), RE2_OPTIONS)


def _present(text: str) -> Optional[set[str]]:
    """The rule keywords present in ``text`` (None when none: nothing to do)."""
    blob = text.encode("utf-8", "surrogatepass")  # once: re2 would encode a str on every call
    search = PREFILTER_B.search
    m = search(blob)
    if m is None:
        return None
    found: set[str] = set()
    while m is not None:  # overlapping: a generic match ("auth: s") must not hide "sk-" inside it
        hit = m.group(0).decode("utf-8", "replace")
        lit = _LITERAL_OF.get(hit)
        if lit is not None:
            found.add(lit)
        else:
            low = hit.lower()
            found.update(
                k for k in _FOLDED_ALL if k in low or (low.startswith("hooks.slack") and k.startswith("hooks"))
            )
        m = search(blob, m.start() + 1)
    return found or None


@overload
def redact_text(text: str, secrets: frozenset[str] | set[str] = ...) -> str: ...
@overload
def redact_text(text: None, secrets: frozenset[str] | set[str] = ...) -> None: ...
@overload
def redact_text(text: Optional[str], secrets: frozenset[str] | set[str] = ...) -> Optional[str]: ...


def redact_text(text: Optional[str], secrets: frozenset[str] | set[str] = frozenset()) -> Optional[str]:
    """``text`` with every secret replaced by :data:`REDACTED` (None and "" pass through).

    ``secrets`` are known secret values (the judge admin secret, ``api_key`` of a
    run_config) replaced wherever they occur. Never raises.
    """
    if not text:
        return text
    for s in secrets:
        if s in text:
            text = text.replace(s, REDACTED)
    found = _present(text)
    if found is None:
        return text
    for rule in RULES:
        if any(k in found for k in rule[1]):
            text = rule[3](text) if rule[2] is None else rule[2].sub(rule[3], text)
    return text


def redact_bytes(raw: Optional[bytes], secrets: frozenset[str] | set[str] = frozenset()) -> Optional[bytes]:
    """``raw`` bytes with secrets replaced; the kept raw line of a parse error, a JSON line.
    Invalid UTF-8 comes back byte for byte: each valid run between invalid bytes is redacted as
    a text of its own (RE2 cannot search a str holding ``surrogateescape``'s lone surrogates)."""
    if not raw:
        return raw
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        parts, rest, changed = [], raw, False
        while rest:
            try:
                good, bad, rest = rest.decode("utf-8"), b"", b""
            except UnicodeDecodeError as e:
                good, bad, rest = rest[: e.start].decode("utf-8"), rest[e.start : e.end], rest[e.end :]
            out = redact_text(good, secrets)
            changed = changed or out is not good
            parts += [out.encode("utf-8"), bad]
        return b"".join(parts) if changed else raw
    out = redact_text(text, secrets)
    return raw if out is text else out.encode("utf-8")


def redact_obj(obj: Any, secrets: frozenset[str] | set[str] = frozenset()) -> Any:
    """A copy of a decoded JSON value with every string (keys kept) redacted; the same
    object when nothing changed."""
    if isinstance(obj, str):
        return redact_text(obj, secrets) if len(obj) >= 6 else obj  # no secret is shorter (known ones: 6+)
    if isinstance(obj, dict):
        out = None
        for k, v in obj.items():
            if isinstance(v, str) and isinstance(k, str) and _STRONG_NAME.search(k) and _looks_like_credential(v, k):
                nv: Any = REDACTED  # {"api_key": "..."}: the value under a credential's name
            elif isinstance(v, list) and isinstance(k, str) and _STRONG_NAME.search(k):
                # {"api_keys": ["...", "..."]}: each string of a list under a credential's name
                nv = [
                    REDACTED if isinstance(x, str) and _looks_like_credential(x, k) else redact_obj(x, secrets)
                    for x in v
                ]
                if all(a is b for a, b in zip(nv, v)):
                    nv = v
            else:
                nv = redact_obj(v, secrets)
            if nv is not v:
                if out is None:
                    out = dict(obj)
                out[k] = nv
        return obj if out is None else out
    if isinstance(obj, (list, tuple)):
        items = [redact_obj(v, secrets) for v in obj]
        if all(a is b for a, b in zip(items, obj)):
            return obj
        return items
    return obj


def secret_values(obj: Any) -> set[str]:
    """The strings a decoded JSON value (a run_config.json) holds under a credential's name: what
    :func:`redact_obj` replaces by such a name (a value ending in ``...``, a key's first characters
    as some SForge versions write it, without that end). These are then replaced wherever they occur
    (a key the agent echoes). Values shorter than 6 characters are left out (they would match
    ordinary text)."""
    found: set[str] = set()

    def add(k: str, v: str) -> None:
        if _looks_like_credential(v, k):
            v = v.removesuffix("...")
            if len(v) >= 6 and v != REDACTED:
                found.add(v)

    def walk(o: Any) -> None:
        if isinstance(o, dict):
            for k, v in o.items():
                strong = isinstance(k, str) and _STRONG_NAME.search(k) is not None
                if strong and isinstance(v, str):
                    add(k, v)
                elif strong and isinstance(v, list):
                    for x in v:
                        add(k, x) if isinstance(x, str) else walk(x)
                else:
                    walk(v)
        elif isinstance(o, list):
            for v in o:
                walk(v)

    walk(obj)
    return found


def items_that_may_hold(items: list, kind: str = "text") -> set[int]:
    """Indices of the ``items`` (str for ``kind="text"``; bytes for ``"bytes"`` or ``"data"``,
    serialised ``data``; None and empty allowed) the prefilter matches in: one RE2 pass over
    all of them joined, the match positions mapped back to items (a batch's cost is one scan,
    not one call per item)."""

    rx = PREFILTER_DATA_B if kind == "data" else PREFILTER_B
    if kind == "text":  # as UTF-8 bytes: re2 would encode a str (and map offsets) on every search
        items = [x.encode("utf-8", "surrogatepass") if x else x for x in items]
    sep = b"\x00"
    idx = [i for i, x in enumerate(items) if x]
    if not idx:
        return set()
    starts = []
    pos = 0
    for i in idx:
        starts.append(pos)
        pos += len(items[i]) + 1
    joined = sep.join(items[i] for i in idx)
    out: set[int] = set()
    for m in rx.finditer(joined):  # non-overlapping is enough: only which items matter here
        a, b = m.start(), m.end()
        first = bisect.bisect_right(starts, a) - 1
        last = bisect.bisect_right(starts, max(a, b - 1)) - 1
        out.update(idx[k] for k in range(first, last + 1))  # a match across a separator: both items
    return out


def has_keyword(blob: bytes) -> bool:
    """Cheap test on serialised bytes: could any rule match inside? (False: nothing to redact.)"""
    return PREFILTER_B.search(blob) is not None


class KeyBlockLines:
    """Redaction of a stream of lines each redacted alone (a log's lines, each its own event; a file
    copied line by line) that also replaces the body of a private key block printed across them:
    after a line holding ``-----BEGIN … PRIVATE KEY-----`` with no END after it, every following
    line shaped like a key's body (base64, a ``Proc-Type: …`` header, blank) becomes
    :data:`REDACTED` until the ``-----END … PRIVATE KEY-----`` line; a line of any other shape ends
    the block (a key cut short) and is redacted as itself. :attr:`inside` is the state carried from
    line to line: a parser keeps it in its saved state, so that a stream read in pieces (a live
    log, an ingest resumed at its cursor) is redacted as if read at once."""

    def __init__(self, inside: bool = False) -> None:
        self.inside = bool(inside)

    def line(self, text: str, secrets: frozenset[str] | set[str] = frozenset()) -> str:
        """``text`` (one line, with or without its newline) with its secrets replaced."""
        if self.inside:
            m = _KEY_END_S.search(text)
            if m is not None:
                self.inside = False
                return REDACTED + (redact_text(text[m.start() :], secrets) or "")
            b = _KEY_BODY_S.fullmatch(text)
            if b is not None:
                return text if not b.group(2).strip() else b.group(1) + REDACTED + b.group(3)
            self.inside = False
        out = redact_text(text, secrets) or text
        self.observe(text)
        return out

    def line_bytes(self, raw: bytes, secrets: frozenset[str] | set[str] = frozenset()) -> bytes:
        """:meth:`line` of a line's bytes (invalid UTF-8 kept byte for byte, as :func:`redact_bytes`)."""
        if self.inside:
            m = _KEY_END.search(raw)
            if m is not None:
                self.inside = False
                return REDACTED.encode() + (redact_bytes(raw[m.start() :], secrets) or b"")
            b = _KEY_BODY_B.fullmatch(raw)
            if b is not None:
                return raw if not b.group(2).strip() else b.group(1) + REDACTED.encode() + b.group(3)
            self.inside = False
        out = redact_bytes(raw, secrets) if has_keyword(raw) or secrets else raw
        if b"-----BEGIN" in raw:
            begins = list(_KEY_BEGIN.finditer(raw))
            self.inside = bool(begins) and _KEY_END.search(raw, begins[-1].end()) is None
        return out or raw

    def observe(self, text: str) -> None:
        """Move the state over ``text`` without redacting it (a line that is read but not kept)."""
        if self.inside:
            if _KEY_END_S.search(text) is not None:
                self.inside = False
                return
            if _KEY_BODY_S.fullmatch(text):
                return
            self.inside = False
        if "-----BEGIN" in text:
            begins = list(_KEY_BEGIN_S.finditer(text))
            self.inside = bool(begins) and _KEY_END_S.search(text, begins[-1].end()) is None


def redacted_copy(path: "str | os.PathLike[str]", secrets: frozenset[str] | set[str] = frozenset()) -> str:
    """A private copy (mode 0600, in a fresh 0700 temp directory) of the file at ``path``
    with every line redacted, for a pager; returns its path (the caller removes its
    directory). Raises ``OSError`` when the file cannot be read."""

    d = tempfile.mkdtemp(prefix="edgetui-view-")
    out = os.path.join(d, os.path.basename(os.fspath(path)) or "file")
    keys = KeyBlockLines()  # a private key block's body lines, begun on an earlier line
    with open(path, "rb") as src, open(out, "wb") as dst:
        os.chmod(out, 0o600)
        for line in src:
            dst.write(keys.line_bytes(line, secrets))
    return out


_KEY_BEGIN = re.compile(rb"-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----")
_KEY_END = re.compile(rb"-----END[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----")
_KEY_BEGIN_S = re.compile(_KEY_BEGIN.pattern.decode())
_KEY_END_S = re.compile(_KEY_END.pattern.decode())
#: a line of a key block's body: base64, an RFC 1421 header (``Proc-Type: 4,ENCRYPTED``) or blank, after
#: a log record's prefix (``2026-12-01 21:14:47,292 - INFO - ``, ``[2026-12-01T21:14:48] ``) in a whole
#: log file; groups: the prefix, the body, the line's end
_KEY_BODY_S = re.compile(
    r"((?:\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d[,.]?\d* - [A-Z]+ - |\[[0-9T:. -]+\] ?)?)"
    r"([ \t]*(?:[A-Za-z0-9+/]+={0,2}|[A-Za-z][A-Za-z-]*:[^\r\n]*)?[ \t]*)(\r?\n?)"
)
_KEY_BODY_B = re.compile(_KEY_BODY_S.pattern.encode())
