"""Redaction of secrets in file previews, applied before an observation reaches any sink.

The source connector's rules (sensitive `KEY=value` lines, Bearer tokens, PEM private keys, long JWTs) plus
the gaps it left open: sensitive keys inside inline JSON, YAML list items and nested blocks, credentials in
URLs, and well-known token shapes (AWS, GitHub, Slack, `sk-` API keys).
"""

from __future__ import annotations

import re

REDACTED = "[REDACTED]"

#: A key is sensitive when, lower-cased with non-alphanumerics removed, it contains one of these.
SENSITIVE_WORDS = (
    "apikey",
    "accesstoken",
    "accesskey",
    "authorization",
    "bearer",
    "clientsecret",
    "password",
    "passwd",
    "privatekey",
    "pwd",
    "secret",
    "token",
)

_NON_ALNUM = re.compile(r"[^a-z0-9]")


def is_sensitive_key(key: str) -> bool:
    normal = _NON_ALNUM.sub("", key.lower())
    return any(word in normal for word in SENSITIVE_WORDS)


# --- whole-token shapes -----------------------------------------------------------------------------

# The body of a private key, multi-line or inline (with literal "\n" escapes in one JSON line). A block that
# the preview limit cut off has no END marker: everything after BEGIN goes.
_PEM = re.compile(
    r"(?P<begin>-----BEGIN (?P<label>[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?)-----)"
    r"(?P<body>.*?)"
    r"(?:(?P<end>-----END (?P=label)-----)|\Z)",
    re.S,
)
_PEM_EDGE_LEAD = re.compile(r"^(?:\s|\\[nr])*")
_PEM_EDGE_TRAIL = re.compile(r"(?:\s|\\[nr])*$")

# Three base64url parts starting with eyJ ({"…); only 100+ characters count, so that short or two-part
# base64 words in ordinary text stay.
_JWT = re.compile(r"(?<![A-Za-z0-9_\-])eyJ[A-Za-z0-9_\-]*\.[A-Za-z0-9_\-]+\.[A-Za-z0-9_\-]+")
_JWT_MIN_LENGTH = 100

_TOKEN_SHAPES = re.compile(
    r"(?<![A-Z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Z0-9])"  # AWS access key ids
    r"|(?<![A-Za-z0-9_])gh[pousr]_[A-Za-z0-9]{20,}"  # GitHub tokens
    r"|(?<![A-Za-z0-9_])github_pat_[A-Za-z0-9_]{20,}"  # GitHub fine-grained tokens
    r"|(?<![A-Za-z0-9])xox[abposr]-[A-Za-z0-9\-]{10,}"  # Slack tokens
    # `sk-…` API keys; the digit requirement keeps long kebab-case words such as CSS class names.
    r"|(?<![A-Za-z0-9_\-])sk-(?=[A-Za-z0-9_\-]*[0-9])[A-Za-z0-9_\-]{20,}"
)

# scheme://user:password@host — the password goes, the user stays (it helps to tell databases apart).
_URL_CREDENTIALS = re.compile(r"(?P<head>\b[A-Za-z][A-Za-z0-9+.\-]*://[^\s:/@'\"]*:)(?P<pw>[^\s@/'\"]+)(?=@)")

_BEARER = re.compile(r"(?i)\b(?P<word>bearer)\s+(?P<token>[A-Za-z0-9\-._~+/]{8,}=*)")


# --- KEY=value and KEY: value -----------------------------------------------------------------------

# One line's key and separator: optional indentation, YAML list marker and `export`, a bare or quoted key.
_KEY_LINE = re.compile(
    r"^(?P<lead>[ \t]*(?:-[ \t]+)?(?:export[ \t]+)?)"
    r"(?P<q>[\"']?)(?P<key>[A-Za-z_][A-Za-z0-9_.\-]{0,99})(?P=q)"
    r"(?P<sep>[ \t]*(?::=|=>|[:=])[ \t]*)"
    r"(?P<value>.*)$"
)
# A quoted key anywhere in a line, as in inline JSON: {"a":1,"token":"x"}.
_INLINE_QUOTED_KEY = re.compile(
    r"(?P<q>[\"'])(?P<key>[A-Za-z_][A-Za-z0-9_.\- ]{0,99})(?P=q)(?P<sep>\s*:\s*)"
    r"(?P<value>\[REDACTED\]|\"(?:[^\"\\\n]|\\.)*\"?|'[^'\n]*'?|(?![\[{])[^\s,}\]]+)"
)
# A bare key anywhere with a quoted value: password="x" in code, {token: 'x'} in JavaScript.
_INLINE_BARE_KEY = re.compile(
    r"(?<![\w.])(?P<key>[A-Za-z_][A-Za-z0-9_.\-]{0,99})(?P<sep>\s*(?:=>|:=|=(?!=)|:)\s*)"
    r"(?P<value>\"(?:[^\"\\\n]|\\.)*\"?|'[^'\n]*'?)"
)
# URL query strings and command-line flags: ?access_token=abc&x=1, --password=abc.
_QUERY_KEY = re.compile(r"(?P<head>(?:[?&;]|--)(?P<key>[A-Za-z_][A-Za-z0-9_.\-]{0,99})=)(?P<value>[^\s&#\"'<>]+)")

_AUTH_SCHEME = re.compile(r"(?i)^(?P<scheme>bearer|basic|digest|token)\s+\S")
_BLOCK_SCALAR = re.compile(r"^[|>][-+0-9]*\s*(?:#.*)?$")
_OPENER = re.compile(r"^[\[{]\s*$")


def redact(text: str) -> str:
    """`text` with every secret the rules recognise replaced by [REDACTED]; idempotent."""
    if not text:
        return text
    text = _PEM.sub(_pem_replacement, text)
    text = _JWT.sub(lambda m: REDACTED if len(m.group(0)) >= _JWT_MIN_LENGTH else m.group(0), text)
    text = _TOKEN_SHAPES.sub(REDACTED, text)
    text = _URL_CREDENTIALS.sub(lambda m: m.group("head") + REDACTED, text)
    text = _BEARER.sub(lambda m: f"{m.group('word')} {REDACTED}", text)
    text = _redact_key_lines(text)
    text = _redact_inline_structures(text)
    text = _INLINE_QUOTED_KEY.sub(_inline_replacement, text)
    text = _INLINE_BARE_KEY.sub(_inline_replacement, text)
    text = _QUERY_KEY.sub(
        lambda m: m.group("head") + REDACTED if is_sensitive_key(m.group("key")) else m.group(0), text
    )
    return text


def _pem_replacement(match: re.Match[str]) -> str:
    body = match.group("body")
    lead = _PEM_EDGE_LEAD.match(body)
    lead_text = lead.group(0) if lead else ""
    if match.group("end") is None:
        # Cut off (or an END marker that does not match): nothing after BEGIN is safe to keep.
        return f"{match.group('begin')}{lead_text}{REDACTED}"
    trail = _PEM_EDGE_TRAIL.search(body)
    trail_text = trail.group(0) if trail and len(body) > len(lead_text) else ""
    return f"{match.group('begin')}{lead_text}{REDACTED}{trail_text}{match.group('end')}"


def _already_safe(value: str) -> bool:
    """A value that an earlier rule already handled: redacted, or a PEM block whose markers we keep."""
    stripped = value.strip().strip("\"'")
    return stripped == REDACTED or "-----BEGIN" in value


def _redact_scalar(value: str) -> str:
    """The value part of a sensitive `key: value`, with the secret replaced and its framing kept."""
    if not value.strip() or _already_safe(value):
        return value
    quote = value[0]
    if quote in "\"'":
        end = _closing_quote(value, quote)
        inner = value[1:end] if end > 0 else value[1:]
        rest = value[end + 1 :] if end > 0 else ""
        scheme = _AUTH_SCHEME.match(inner)
        secret = f"{scheme.group('scheme')} {REDACTED}" if scheme else REDACTED
        # Whatever follows the string (`,`, more inline JSON) is checked by the inline rules.
        return f"{quote}{secret}{quote}{rest}"
    scheme = _AUTH_SCHEME.match(value)
    if scheme:
        return f"{scheme.group('scheme')} {REDACTED}"
    trailer = value[-1] if value.rstrip() == value and value[-1] in ",;" and len(value) > 1 else ""
    return REDACTED + trailer


def _closing_quote(value: str, quote: str) -> int:
    i = 1
    while i < len(value):
        if value[i] == "\\" and quote == '"':
            i += 2
            continue
        if value[i] == quote:
            return i
        i += 1
    return -1


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def _redact_key_lines(text: str) -> str:
    """Sensitive `KEY=value` / `KEY: value` lines; a sensitive key that opens a block (YAML `|`, an empty
    mapping value, `{` or `[` at the end of the line) has the scalars of its indented children redacted."""
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        body = line[:-1] if line.endswith("\r") else line
        cr = line[len(body) :]
        match = _KEY_LINE.match(body)
        if not match or not is_sensitive_key(match.group("key")):
            i += 1
            continue
        value = match.group("value")
        head = body[: match.start("value")]
        stripped = value.strip()
        if (
            _BLOCK_SCALAR.match(stripped)
            or (not stripped and match.group("sep").strip() == ":")
            or _OPENER.match(stripped)
        ):
            i = _redact_children(lines, i, _indent(body), block_scalar=bool(_BLOCK_SCALAR.match(stripped)))
            continue
        lines[i] = head + _redact_scalar(value) + cr
        i += 1
    return "\n".join(lines)


def _redact_children(lines: list[str], parent: int, parent_indent: int, *, block_scalar: bool) -> int:
    """Redact the lines indented under lines[parent]; return the index of the first line after them."""
    i = parent + 1
    while i < len(lines):
        line = lines[i]
        if not line.strip():
            i += 1
            continue
        indent = _indent(line)
        closing = line.strip() in ("}", "]", "},", "],")
        if indent <= parent_indent and not (closing and indent == parent_indent and not block_scalar):
            break
        if closing and indent == parent_indent:
            return i + 1
        if block_scalar:
            lines[i] = line[:indent] + REDACTED
        else:
            lines[i] = _redact_child_line(line, indent)
        i += 1
    return i


def _redact_child_line(line: str, indent: int) -> str:
    body = line.rstrip("\r")
    cr = line[len(body) :]
    match = _KEY_LINE.match(body)
    if match:
        value = match.group("value")
        if not value.strip() or _OPENER.match(value.strip()):
            return line  # a nested parent: its own children are indented further and redacted in turn
        return body[: match.start("value")] + _redact_scalar(value) + cr
    content = body[indent:]
    marker = re.match(r"^-[ \t]+", content)
    prefix = marker.group(0) if marker else ""
    item = content[len(prefix) :]
    if not item.strip() or item.strip() in ("{", "[", "}", "]", "},", "],"):
        return line
    return body[:indent] + prefix + _redact_scalar(item) + cr


_INLINE_STRUCTURE = re.compile(r"(?P<q>[\"'])(?P<key>[A-Za-z_][A-Za-z0-9_.\- ]{0,99})(?P=q)\s*:\s*(?=[\[{])")


def _redact_inline_structures(text: str) -> str:
    """{"secrets": {"a": "b"}} on one line: the whole object or array under a sensitive key goes."""
    out: list[str] = []
    pos = 0
    for match in _INLINE_STRUCTURE.finditer(text):
        if match.start() < pos or not is_sensitive_key(match.group("key")):
            continue
        end = _matching_bracket(text, match.end())
        if end < 0:
            continue  # spans lines: the indented children were handled line by line
        out.append(text[pos : match.end()])
        out.append(REDACTED)
        pos = end + 1
    out.append(text[pos:])
    return "".join(out)


def _matching_bracket(text: str, start: int) -> int:
    """Index of the bracket closing text[start] on the same line, skipping strings; -1 if none."""
    depth = 0
    quote = ""
    i = start
    while i < len(text):
        char = text[i]
        if char == "\n":
            return -1
        if quote:
            if char == "\\":
                i += 1
            elif char == quote:
                quote = ""
        elif char in "\"'":
            quote = char
        elif char in "[{":
            depth += 1
        elif char in "]}":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return -1


def _inline_replacement(match: re.Match[str]) -> str:
    if not is_sensitive_key(match.group("key")):
        return match.group(0)
    value = match.group("value")
    if _already_safe(value):
        return match.group(0)
    prefix = match.group(0)[: match.start("value") - match.start(0)]
    return prefix + _redact_scalar(value)
