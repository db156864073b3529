"""Redaction of secrets in file previews, applied before an observation reaches any sink.

The source connector's rules (sensitive `KEY=value` lines, Bearer tokens, PEM private keys, long JWTs) plus
the gaps it left open: sensitive keys inside inline JSON, YAML list items and nested blocks, credentials in
URLs, and well-known token shapes (AWS, GitHub, Slack, `sk-` API keys). A second round, from trying real
secret files: more key names (`pass`, `credential`, `cookie`, `auth` as words, secret `…_KEY`s), Stripe,
Google, GitLab, npm, SendGrid, PyPI and Shopify token shapes, Slack webhook URLs, `curl -u`, `mysql -p`,
`.netrc`, XML elements, and an AWS secret access key written next to its key id.

Redaction only replaces: every character of the result is either the input's own or part of `[REDACTED]`
(and the `Bearer ` kept before a token), so it never adds a marker, quote or line that was not there.
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

#: Sensitive as a word of the key (split at `_ - . :`, spaces and camelCase), never as part of a longer
#: word: `DB_PASS` and `basicAuth`, but not `passage`, `compass` or `author`.
SENSITIVE_KEY_WORDS = frozenset({"pass", "passphrase", "passcode", "auth", "credential", "credentials"})
#: A key whose last word is one of these holds a cookie's value (`Cookie`, `Set-Cookie`, `SESSION_COOKIE`);
#: `COOKIE_DOMAIN` or `cookie_name` describe one and stay.
COOKIE_WORDS = frozenset({"cookie", "cookies"})
#: `…_KEY` names a secret unless the word before `key` is one of these: database, index and public-key
#: vocabulary (`PRIMARY_KEY`, `sort_key`, `public_key`). A bare `key` stays too: it names a field far more
#: often than a secret (`- key: PATH`).
NON_SECRET_KEY_QUALIFIERS = frozenset(
    {
        "primary",
        "foreign",
        "unique",
        "composite",
        "natural",
        "surrogate",
        "candidate",
        "partition",
        "sort",
        "range",
        "hash",
        "cluster",
        "clustering",
        "shard",
        "routing",
        "row",
        "index",
        "lookup",
        "cache",
        "map",
        "dict",
        "group",
        "order",
        "public",
        "pub",
        "translation",
        "i18n",
        "idempotency",
        "dedup",
        "hot",
        "short",
        "shortcut",
        "next",
        "prev",
        "previous",
        "last",
        "first",
        "object",
        "s3",
        "bucket",
        "file",
        "path",
        "join",
        "parent",
        "child",
        "distribution",
    }
)
#: Words that make a single-word name ending in `key` a secret (`ENCRYPTIONKEY`, `masterkey`).
SECRET_KEY_PREFIXES = ("encryption", "signing", "master", "license", "session", "hmac", "crypt", "account")

_NON_ALNUM = re.compile(r"[^a-z0-9]")
_KEY_WORD_SPLIT = re.compile(r"[^A-Za-z0-9]+|(?<=[a-z0-9])(?=[A-Z])")


def key_words(key: str) -> list[str]:
    """A key's words, lower-cased: `ENCRYPTION_KEY` → encryption, key; `signingKey` → signing, key."""
    return [w.lower() for w in _KEY_WORD_SPLIT.split(key) if w]


def is_sensitive_key(key: str) -> bool:
    normal = _NON_ALNUM.sub("", key.lower())
    if any(word in normal for word in SENSITIVE_WORDS):
        return True
    words = key_words(key)
    if not words:
        return False
    if SENSITIVE_KEY_WORDS.intersection(words) or words[-1] in COOKIE_WORDS:
        return True
    if words[-1] == "key":
        return len(words) > 1 and words[-2] not in NON_SECRET_KEY_QUALIFIERS
    return len(words) == 1 and normal.endswith("key") and normal.startswith(SECRET_KEY_PREFIXES)


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

_AWS_KEY_ID = r"(?<![A-Z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Z0-9])"
_TOKEN_SHAPES = re.compile(
    # The first letters of every shape below, tried first: most positions fail on this one class.
    r"(?=A[KSIG]|g[hil]|x[oa]|[sr]k|np|SG|py|sh|hv|do)(?:"
    + _AWS_KEY_ID  # AWS access key ids
    + r"|(?<![A-Za-z0-9_])gh[pousr]_[A-Za-z0-9]{20,}"  # GitHub tokens
    r"|(?<![A-Za-z0-9_])github_pat_[A-Za-z0-9_]{20,}"  # GitHub fine-grained tokens
    r"|(?<![A-Za-z0-9])xox[abposr]-[A-Za-z0-9\-]{10,}"  # Slack tokens
    # `sk-…` API keys; the digit requirement keeps long kebab-case words such as CSS class names.
    r"|(?<![A-Za-z0-9_\-])sk-(?=[A-Za-z0-9_\-]*[0-9])[A-Za-z0-9_\-]{20,}"
    r"|(?<![A-Za-z0-9_])(?:sk|rk)_(?:live|test|prod)_[A-Za-z0-9]{10,}"  # Stripe secret and restricted keys
    r"|(?<![A-Za-z0-9_\-])AIza[0-9A-Za-z_\-]{35}(?![0-9A-Za-z_\-])"  # Google API keys
    r"|(?<![A-Za-z0-9_\-])glpat-[0-9A-Za-z_\-]{20,}"  # GitLab personal access tokens
    r"|(?<![A-Za-z0-9_])npm_[A-Za-z0-9]{36}(?![A-Za-z0-9])"  # npm access tokens
    r"|(?<![A-Za-z0-9_.\-])SG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}(?![A-Za-z0-9_\-])"  # SendGrid API keys
    r"|(?<![A-Za-z0-9_\-])pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_\-]{50,}"  # PyPI upload tokens
    r"|(?<![A-Za-z0-9_])shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}(?![a-fA-F0-9])"  # Shopify access tokens
    r"|(?<![A-Za-z0-9])xapp-[0-9]-[A-Za-z0-9\-]{10,}"  # Slack app-level tokens
    r"|(?<![A-Za-z0-9_.])hv[sbr]\.[A-Za-z0-9_\-]{24,}"  # HashiCorp Vault tokens
    r"|(?<![A-Za-z0-9_])do[por]_v1_[a-f0-9]{64}(?![a-f0-9])"  # DigitalOcean tokens
    r"|(?<![A-Z0-9\-])AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}"  # age secret keys
    r")"
)
# https://hooks.slack.com/services/T…/B…/… — the path is the credential.
_SLACK_WEBHOOK = re.compile(
    r"(?P<head>https?://hooks\.slack\.com/(?:services|workflows|triggers)/)(?P<path>[A-Za-z0-9/_\-]+)"
)
# An AWS secret access key is 40 base64 characters with nothing to recognise it by, except the key id
# written next to it (a CSV of credentials, `AKIA… wJalr…` in notes): within this many characters.
_AWS_SECRET = re.compile(r"(?<![A-Za-z0-9/+=])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])")
_AWS_PAIR_DISTANCE = 200
# curl -u user:password / --user user:password (the user stays).
_CURL_USER = re.compile(
    r"(?P<head>(?:^|\s)(?:-u|--user)[ \t=]*(?:(?P<q>[\"'])[^\s:\"']*:|[^\s:\"']*:))"
    r"(?P<pw>(?(q)[^\"'\n]+|[^\s\"']+))"
)
# mysql -pSECRET (the password glued to -p); only on a line that runs a MySQL or MariaDB client.
_MYSQL_LINE = re.compile(r"(?m)^.*\b(?:mysql\w*|mariadb\w*)\b.*$")
_MYSQL_PASSWORD = re.compile(r"(?P<head>(?:^|\s)-p)(?P<pw>[^\s\"']+)")
# .netrc: `machine h login u password p`, on one line or one token pair per line.
_NETRC = re.compile(r"(?m)(?P<head>(?:^[ \t]*|\blogin[ \t]+\S+[ \t]+)(?:password|passwd)[ \t]+)(?P<pw>\S+)")
# <password>…</password>, <ApiKey>…</ApiKey>: an element whose name is a sensitive key.
_XML_ELEMENT = re.compile(r"<(?P<tag>[A-Za-z_][\w.:\-]{0,99})(?P<attrs>\s[^<>]*)?>(?P<value>[^<>]+)</(?P=tag)>")

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
# Also `;Key=value` connection strings (Azure's AccountKey=…) and `.npmrc`'s `//host/:_authToken=…`.
_QUERY_KEY = re.compile(r"(?P<head>(?:[?&;:]|--)(?P<key>[A-Za-z_][A-Za-z0-9_.\-]{0,99})=)(?P<value>[^\s&#;\"'<>]+)")

_AUTH_SCHEME = re.compile(r"(?i)^(?P<lead>(?P<scheme>bearer|basic|digest|token)\s+)\S")
_BLOCK_SCALAR = re.compile(r"^[|>][-+0-9]*\s*(?:#.*)?$")
_OPENER = re.compile(r"^[\[{]\s*$")


def redact(text: str) -> str:
    """`text` with every secret the rules recognise replaced by [REDACTED]; idempotent."""
    if not text:
        return text
    text = _PEM.sub(_pem_replacement, text)
    text = _JWT.sub(lambda m: REDACTED if len(m.group(0)) >= _JWT_MIN_LENGTH else m.group(0), text)
    text = _redact_aws_pairs(text)
    text = _TOKEN_SHAPES.sub(REDACTED, text)
    text = _SLACK_WEBHOOK.sub(lambda m: m.group("head") + REDACTED, text)
    text = _URL_CREDENTIALS.sub(lambda m: m.group("head") + REDACTED, text)
    text = _BEARER.sub(lambda m: m.group(0)[: m.start("token") - m.start(0)] + REDACTED, text)
    text = _CURL_USER.sub(_keep_head, text)
    text = _MYSQL_LINE.sub(lambda m: _MYSQL_PASSWORD.sub(_keep_head, m.group(0)), text)
    text = _NETRC.sub(_keep_head, text)
    text = _XML_ELEMENT.sub(_xml_replacement, text)
    text = _redact_key_lines(text)
    text = _redact_inline_structures(text)
    text = _INLINE_QUOTED_KEY.sub(_inline_replacement, text)
    text = _INLINE_BARE_KEY.sub(_inline_replacement, text)
    text = _QUERY_KEY.sub(
        lambda m: m.group("head") + REDACTED if is_sensitive_key(m.group("key")) else m.group(0), text
    )
    return text


def _keep_head(match: re.Match[str]) -> str:
    """The match's `head` group as it was, and the rest (a password) replaced."""
    if match.group(0).endswith(REDACTED):
        return match.group(0)
    return match.group("head") + REDACTED


def _xml_replacement(match: re.Match[str]) -> str:
    if not is_sensitive_key(match.group("tag")) or not match.group("value").strip():
        return match.group(0)
    return match.group(0)[: match.start("value") - match.start(0)] + REDACTED + f"</{match.group('tag')}>"


def _redact_aws_pairs(text: str) -> str:
    """A 40-character secret access key near an AWS key id (before the ids themselves are redacted)."""
    if "AKIA" not in text and "ASIA" not in text:
        return text
    spans: list[tuple[int, int]] = []
    for key_id in re.finditer(_AWS_KEY_ID, text):
        start = max(key_id.start() - _AWS_PAIR_DISTANCE, 0)
        window = text[start : key_id.end() + _AWS_PAIR_DISTANCE]
        for secret in _AWS_SECRET.finditer(window):
            # A real secret key mixes cases and digits; a 40-letter word or hash in lower case is left alone.
            value = secret.group(0)
            if any(c.isupper() for c in value) and any(c.islower() for c in value) and any(c.isdigit() for c in value):
                spans.append((start + secret.start(), start + secret.end()))
    for begin, end in sorted(set(spans), reverse=True):
        text = text[:begin] + REDACTED + text[end:]
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
        secret = scheme.group("lead") + REDACTED if scheme else REDACTED
        # Whatever follows the string (`,`, more inline JSON) is checked by the inline rules; a string the
        # text leaves open (cut by the preview limit) stays open.
        return f"{quote}{secret}{quote if end > 0 else ''}{rest}"
    scheme = _AUTH_SCHEME.match(value)
    if scheme:
        return scheme.group("lead") + REDACTED
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


def redact_prefix(text: str, end: int) -> str:
    """The redaction of `text[:end]`, with what follows as context: a secret that runs on past `end` is
    recognised whole and ends the result as `[REDACTED]`, and nothing from past `end` is kept — not even
    the END marker of a private key that `end` cut, nor text that redaction pulled forward by shortening."""
    redacted = redact(text)
    if end >= len(text):
        return redacted
    return redacted[: _aligned_end(text, redacted, end)]


def _aligned_end(original: str, redacted: str, end: int) -> int:
    """Where in `redacted` the text of `original[:end]` stops. Redaction only replaces spans with
    [REDACTED], so the two are walked side by side; a replaced span is skipped in `original` up to the
    text that follows its marker in `redacted`."""
    i = j = 0
    while i < end and j < len(redacted):
        if redacted.startswith(REDACTED, j) and not original.startswith(REDACTED, i):
            j += len(REDACTED)
            following = redacted[j : j + 16].split(REDACTED, 1)[0]
            found = original.find(following, i) if following else -1
            i = found if found >= 0 else len(original)
        elif original[i] == redacted[j]:
            i += 1
            j += 1
        else:  # not expected from the rules; keep both walking so the result never grows past the input
            i += 1
            j += 1
    return j
