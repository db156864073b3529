"""Redaction rules: agentmemory-fs-watcher's cases, then the secret shapes it let through (see the README's
comparison)."""

from __future__ import annotations

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from amem.watcher.redact import REDACTED, is_sensitive_key, redact, redact_prefix

LONG_JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9."
    "eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ."
    "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)


# --- agentmemory-fs-watcher's cases -----------------------------------------------------------------


def test_env_file_redacts_sensitive_keys_and_keeps_public_ones() -> None:
    text = "OPENAI_API_KEY=sk-live-abc123\nPUBLIC_FLAG=enabled\nexport DB_PASSWORD='hunter2'\nNAME=demo\n"
    out = redact(text)
    assert "OPENAI_API_KEY=[REDACTED]" in out
    assert "export DB_PASSWORD='[REDACTED]'" in out
    assert "PUBLIC_FLAG=enabled" in out
    assert "NAME=demo" in out
    assert "sk-live-abc123" not in out and "hunter2" not in out


@pytest.mark.parametrize(
    "key",
    [
        "api_key",
        "apiKey",
        "ACCESS_TOKEN",
        "access-key",
        "Authorization",
        "bearer",
        "client_secret",
        "password",
        "passwd",
        "private_key",
        "PWD",
        "secret",
        "github_token",
        "x-api-key",
        "aws_secret_access_key",
    ],
)
def test_every_sensitive_word_is_recognised(key: str) -> None:
    assert is_sensitive_key(key)
    assert redact(f"{key}=s3cr3tvalue") == f"{key}={REDACTED}"
    assert redact(f"{key}: s3cr3tvalue") == f"{key}: {REDACTED}"


@pytest.mark.parametrize("key", ["PUBLIC_FLAG", "name", "url", "user", "host", "port", "path"])
def test_keys_that_are_not_sensitive_stay(key: str) -> None:
    assert not is_sensitive_key(key)
    assert redact(f"{key}=value") == f"{key}=value"


def test_quoted_json_keys() -> None:
    text = '{\n  "api_key": "abcd1234",\n  "name": "demo",\n  "password": 12345,\n  "public": true\n}'
    out = redact(text)
    assert '"api_key": "[REDACTED]",' in out
    assert '"password": [REDACTED],' in out
    assert '"name": "demo",' in out and '"public": true' in out


def test_yaml_quoted_keys() -> None:
    text = "'client_secret': 'abc'\n\"token\": \"def\""
    assert redact(text) == "'client_secret': '[REDACTED]'\n\"token\": \"[REDACTED]\""


def test_authorization_header_keeps_the_scheme() -> None:
    assert redact("Authorization: Bearer abc") == "Authorization: Bearer [REDACTED]"
    assert redact('"Authorization": "Bearer abc"') == '"Authorization": "Bearer [REDACTED]"'


def test_plain_text_bearer_token() -> None:
    out = redact("curl -H 'X: y' then Bearer abcdefgh12345678 and bearer ZYXWVUTS9876.")
    assert "Bearer [REDACTED]" in out and "bearer [REDACTED]" in out
    assert "abcdefgh12345678" not in out and "ZYXWVUTS9876" not in out


def test_a_short_bearer_word_stays() -> None:
    assert redact("the Bearer short") == "the Bearer short"


def test_multiline_pem_keeps_markers() -> None:
    text = (
        "before\n-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7\nZmFrZWtleWJvZHk=\n"
        "-----END RSA PRIVATE KEY-----\nafter"
    )
    out = redact(text)
    assert out == "before\n-----BEGIN RSA PRIVATE KEY-----\n[REDACTED]\n-----END RSA PRIVATE KEY-----\nafter"


def test_inline_pem_in_one_json_line_keeps_markers() -> None:
    text = (
        '{"type":"service_account","private_key":"-----BEGIN PRIVATE KEY-----\\nMIIEvQIBADANBg\\n'
        '-----END PRIVATE KEY-----\\n","client_email":"bot@example.iam"}'
    )
    out = redact(text)
    assert "-----BEGIN PRIVATE KEY-----\\n[REDACTED]\\n-----END PRIVATE KEY-----" in out
    assert "MIIEvQIBADANBg" not in out
    assert '"client_email":"bot@example.iam"' in out


def test_pem_cut_off_by_the_preview_limit() -> None:
    out = redact("key:\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\nAAAABG5vbmU")
    assert out.endswith("-----BEGIN OPENSSH PRIVATE KEY-----\n[REDACTED]")
    assert "b3BlbnNzaC1rZXk" not in out


def test_long_jwt_is_redacted() -> None:
    assert len(LONG_JWT) >= 100
    assert redact(f"token {LONG_JWT} end") == f"token {REDACTED} end"


def test_short_or_two_part_base64_words_stay() -> None:
    short = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.abc"
    two_part = "eyJ" + "a" * 80 + "." + "b" * 40
    plain = "aGVsbG8gd29ybGQgdGhpcyBpcyBiYXNlNjQgdGV4dCB0aGF0IGlzIG5vdCBhIHNlY3JldA=="
    text = f"{short} {two_part} {plain}"
    assert redact(text) == text


# --- shapes agentmemory-fs-watcher let through -------------------------------------------------------


def test_sensitive_keys_inside_inline_json() -> None:
    out = redact('{"a":1,"token":"x","b":"ok","nested":{"password":"p"},"secrets":{"k":"v"}}')
    assert out == '{"a":1,"token":"[REDACTED]","b":"ok","nested":{"password":"[REDACTED]"},"secrets":[REDACTED]}'


def test_yaml_list_items_and_nested_blocks() -> None:
    text = "users:\n  - password: hunter2\n  - name: bob\nsecrets:\n  github: abc\n  list:\n    - one\nok: 1\n"
    out = redact(text)
    assert "- password: [REDACTED]" in out and "- name: bob" in out
    assert "github: [REDACTED]" in out and "- [REDACTED]" in out
    assert "ok: 1" in out
    assert "hunter2" not in out and "abc" not in out


def test_yaml_block_scalar_under_a_sensitive_key() -> None:
    out = redact("password: |\n  line one\n  line two\nnext: visible")
    assert out == "password: |\n  [REDACTED]\n  [REDACTED]\nnext: visible"


def test_url_credentials() -> None:
    out = redact("DATABASE_URL=postgres://app:pa55w0rd@db.internal:5432/x redis://:r3dis@cache:6379")
    assert "postgres://app:[REDACTED]@db.internal:5432/x" in out
    assert "redis://:[REDACTED]@cache:6379" in out


@pytest.mark.parametrize(
    "token",
    [
        "AKIAIOSFODNN7EXAMPLE",
        "ghp_" + "A1b2C3d4" * 5,
        "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",
        "xoxb-123456789012-abcdefABCDEF",
        "sk-proj-4fGh7Jk9LmN0pQrStUvWxYz12",
    ],
)
def test_well_known_token_shapes(token: str) -> None:
    out = redact(f"note: the value {token} was pasted here")
    assert token not in out and REDACTED in out


def test_kebab_case_words_starting_with_sk_stay() -> None:
    text = "class sk-loading-spinner-container-large"
    assert redact(text) == text


def test_query_strings_and_flags() -> None:
    out = redact("GET /cb?access_token=abc123&state=ok then run --password=hunter2 --user=bob")
    assert "access_token=[REDACTED]&state=ok" in out
    assert "--password=[REDACTED] --user=bob" in out


def test_code_assignments_with_quoted_values() -> None:
    out = redact('conn = connect(user="bob", password="hunter2")')
    assert out == 'conn = connect(user="bob", password="[REDACTED]")'


def test_crlf_lines() -> None:
    assert redact("PASSWORD=abc\r\nNAME=x\r\n") == "PASSWORD=[REDACTED]\r\nNAME=x\r\n"


# --- second round: more key names -----------------------------------------------------------------


@pytest.mark.parametrize(
    "key",
    [
        "DB_PASS",
        "smtp-pass",
        "passphrase",
        "GPG_PASSPHRASE",
        "AUTH",
        "basicAuth",
        "x-auth",
        "credentials",
        "GOOGLE_APPLICATION_CREDENTIAL",
        "Cookie",
        "Set-Cookie",
        "SESSION_COOKIE",
        "ENCRYPTION_KEY",
        "SIGNING_KEY",
        "signingKey",
        "master-key",
        "LICENSE_KEY",
        "AccountKey",
        "masterkey",
    ],
)
def test_second_round_keys_are_sensitive(key: str) -> None:
    assert is_sensitive_key(key)
    assert redact(f"{key}=s3cr3tvalue") == f"{key}={REDACTED}"
    assert redact(f'"{key}": "s3cr3tvalue"') == f'"{key}": "{REDACTED}"'


@pytest.mark.parametrize(
    "key",
    [
        "PRIMARY_KEY",
        "foreign_key",
        "sortKey",
        "partition-key",
        "public_key",
        "cache_key",
        "key",
        "keyboard",
        "hotkey",
        "monkey",
        "passage",
        "compass",
        "bypass_cache",
        "author",
        "AUTHOR_EMAIL",
        "authored_at",
        "COOKIE_DOMAIN",
        "cookie_name",
        "keys",
    ],
)
def test_second_round_look_alikes_stay(key: str) -> None:
    assert not is_sensitive_key(key)
    assert redact(f"{key}=plainvalue") == f"{key}=plainvalue"
    assert redact(f'"{key}": "plainvalue"') == f'"{key}": "plainvalue"'


# --- second round: token shapes, formats and commands -----------------------------------------------


@pytest.mark.parametrize(
    ("token", "look_alike"),
    [
        ("sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc", "sk_live_demo"),
        ("rk_live_" + "51H8x7KLmN0pQrStUvWxYz12", "rk_live_"),
        ("sk_test_" + "4eC39HqLyjWDarjtT1zdp7dc", "task_test_runner"),
        ("AIza" + "SyD-EXAMPLE0123456789abcdefghijklmn", "AIzaSyShort"),
        ("glpat-" + "xYz1234567890ABCDEFGH", "glpat-short"),
        ("npm_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8", "npm_install_helper"),
        ("SG." + "aBcDeFgHiJkLmNoPqRsTuV" + "." + "0123456789abcdefghijklmnopqrstuvwxyzABCDEFG", "SG.short.value"),
        ("pypi-AgEIcHlwaS5vcmc" + "A" * 60, "pypi-package-name"),
        ("shpat_" + "0123456789abcdef0123456789abcdef", "shpat_notes"),
        ("xapp-1-A0123456789-1234567890-abcdef", "xapp-store"),
        ("hvs." + "CAESIJ0123456789abcdefghijklmnop", "hvs.config"),
        ("dop_v1_" + "0123456789abcdef" * 4, "dop_v1_notes"),
        (
            "AGE-SECRET-KEY-1" + "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L" + "QPZRY9X8GF2TVDW0S3JN54KHCE",
            "AGE-SECRET-KEY-1 is the prefix",
        ),
    ],
)
def test_second_round_token_shapes(token: str, look_alike: str) -> None:
    out = redact(f"value: {token} here")
    assert token not in out and out == f"value: {REDACTED} here"
    text = f"value: {look_alike} here"
    assert redact(text) == text


def test_slack_webhook_url() -> None:
    url = "https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX"
    assert redact(f"webhook: {url}\n") == f"webhook: https://hooks.slack.com/services/{REDACTED}\n"
    docs = "read https://hooks.slack.com/ and https://api.slack.com/services/list"
    assert redact(docs) == docs


def test_curl_user_password() -> None:
    assert redact("curl -u admin:hunter22 https://x") == f"curl -u admin:{REDACTED} https://x"
    assert redact("curl --user 'ci:p4ss w' x") == f"curl --user 'ci:{REDACTED}' x"
    assert redact('curl -u "ci:p4ss w" x') == f'curl -u "ci:{REDACTED}" x'
    text = "curl -u admin https://x && sort -u names.txt && curl --user-agent a:b x"
    assert redact(text) == text


def test_mysql_glued_password() -> None:
    assert redact("mysql -u root -pS3cret db") == f"mysql -u root -p{REDACTED} db"
    assert redact("mysqldump -pS3cret shop > d.sql") == f"mysqldump -p{REDACTED} shop > d.sql"
    text = "mkdir -p build\nmysql -p shop\nssh -p2222 host"
    assert redact(text) == text


def test_netrc_password() -> None:
    one_line = "machine api.example.com login bob password hunter22\n"
    assert redact(one_line) == f"machine api.example.com login bob password {REDACTED}\n"
    lines = "machine git.example.com\n  login bob\n  password hunter22\n"
    assert redact(lines) == f"machine git.example.com\n  login bob\n  password {REDACTED}\n"
    prose = "Forgot your password? Reset it from the login page.\n"
    assert redact(prose) == prose


def test_xml_elements() -> None:
    text = "<db><user>bob</user><password>hunter22</password><ApiKey a='1'>k3y</ApiKey></db>"
    assert redact(text) == f"<db><user>bob</user><password>{REDACTED}</password><ApiKey a='1'>{REDACTED}</ApiKey></db>"
    look_alike = "<title>Passwords</title><author>Jane</author><passage>text</passage>"
    assert redact(look_alike) == look_alike


def test_cookie_headers() -> None:
    assert redact("Cookie: sid=abc123; theme=dark") == f"Cookie: {REDACTED}"
    assert redact("Set-Cookie: sid=abc123; Path=/") == f"Set-Cookie: {REDACTED}"
    text = "cookie_name: sid\nCOOKIE_DOMAIN=example.com"
    assert redact(text) == text


def test_docker_auth() -> None:
    config = '{"auths": {"ghcr.io": {"auth": "dXNlcjpwYXNzd29yZA=="}}}'
    assert redact(config) == '{"auths": {"ghcr.io": {"auth": "[REDACTED]"}}}'
    assert redact('{"author": "Jane"}') == '{"author": "Jane"}'


def test_aws_secret_next_to_its_key_id() -> None:
    csv = "ci,AKIAIOSFODNN7EXAMPLE,wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n"
    assert redact(csv) == f"ci,{REDACTED},{REDACTED}\n"
    # 40 characters with no key id nearby, or a lower-case hash next to one, stay.
    alone = "commit wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n"
    assert redact(alone) == alone
    near = "AKIAIOSFODNN7EXAMPLE 3f786850e387550fdab836ed7e6dc881de23001b"
    assert redact(near) == f"{REDACTED} 3f786850e387550fdab836ed7e6dc881de23001b"


def test_connection_strings_and_npmrc() -> None:
    azure = "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=abc123==;EndpointSuffix=core"
    assert redact(azure) == f"DefaultEndpointsProtocol=https;AccountName=acct;AccountKey={REDACTED};EndpointSuffix=core"
    npmrc = "//registry.npmjs.org/:_authToken=00000000-1111\n"
    assert redact(npmrc) == f"//registry.npmjs.org/:_authToken={REDACTED}\n"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('password: "abc', f'password: "{REDACTED}'),
        ('{"token":"abc', f'{{"token":"{REDACTED}'),
        ("Authorization: Basic\tabc", f"Authorization: Basic\t{REDACTED}"),
    ],
)
def test_redaction_adds_no_quote_or_space(text: str, expected: str) -> None:
    assert redact(text) == expected


def test_a_cut_private_key_gains_no_end_marker() -> None:
    out = redact("-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC")
    assert out == f"-----BEGIN PRIVATE KEY-----\n{REDACTED}"


# --- properties -------------------------------------------------------------------------------------

SECRETS = st.text(alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", min_size=12, max_size=40)
KEYS = st.sampled_from(
    [
        "API_KEY",
        "password",
        "client_secret",
        "githubToken",
        "PRIVATE-KEY",
        "db_passwd",
        "Authorization",
        "access_token",
        "x_api_key",
    ]
)
FILLER = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=60)


def placements(secret: str, key: str) -> list[str]:
    jwt = f"eyJhbGciOiJIUzI1NiJ9.eyJ{secret}{'Q' * 60}.{secret}sig"
    return [
        f"{key}={secret}",
        f'export {key}="{secret}"',
        f"  {key}: {secret}",
        f"- {key}: '{secret}'",
        f'{{"{key}": "{secret}", "other": 1}}',
        f'{{"a": 1, "{key}":"{secret}"}}',
        f"Authorization: Bearer {secret}",
        f"header Bearer {secret} trailer",
        f"-----BEGIN PRIVATE KEY-----\n{secret}\n{secret[::-1]}\n-----END PRIVATE KEY-----",
        f'"pk": "-----BEGIN EC PRIVATE KEY-----\\n{secret}\\n-----END EC PRIVATE KEY-----\\n"',
        f"jwt={jwt}" if len(jwt) >= 100 else f"jwt {jwt}",
        f"token {jwt}",
        f"https://user:{secret}@example.com/path",
        f"ENCRYPTION_KEY={secret}",
        f"  signingKey: {secret}",
        f"DB_PASS={secret}",
        f"Cookie: sid={secret}; theme=dark",
        f'{{"auths": {{"x.io": {{"auth": "{secret}"}}}}}}',
        f"curl -u ci:{secret} https://x",
        f"mysql -u root -p{secret} db",
        f"machine h login u password {secret}",
        f"<password>{secret}</password>",
        f"sk_live_{secret}",
        f"https://hooks.slack.com/services/T0/B0/{secret}",
        f"AKIAIOSFODNN7EXAMPLE {secret[:20].ljust(20, 'Q')}{secret[-20:].rjust(20, '7')}",
        f"-----BEGIN RSA PRIVATE KEY-----\n{secret}\n{secret}",
    ]


@settings(max_examples=150, deadline=None)
@given(secret=SECRETS, key=KEYS, before=FILLER, after=FILLER, which=st.integers(min_value=0, max_value=25))
def test_a_secret_never_survives_redaction(secret: str, key: str, before: str, after: str, which: int) -> None:
    assume(secret not in before and secret not in after)
    assume(secret not in placements("", key)[which])  # a secret that is part of the key's name ('Authorizatio')
    placed = placements(secret, key)[which]
    if which == 24:  # the AWS pair: the secret is the 40 characters next to the key id
        secret = placed.split(" ", 1)[1]
        assume(any(c.isdigit() for c in secret) and any(c.isupper() for c in secret))
        assume(any(c.islower() for c in secret))
    text = f"{before}\n{placed}\n{after}"
    out = redact(text)
    assert secret not in out
    assert_only_replaced(text, out)
    assert redact(out) == out  # idempotent: redacting twice changes nothing more


@settings(max_examples=100, deadline=None)
@given(text=st.text(max_size=300))
def test_redaction_never_crashes_and_is_idempotent(text: str) -> None:
    once = redact(text)
    assert redact(once) == once
    assert_only_replaced(text, once)


def assert_only_replaced(text: str, out: str) -> None:
    """Redaction never invents text: what is left between the markers is the input's own, in order, and
    it adds no private-key marker."""
    position = 0
    for piece in out.split(REDACTED):
        found = text.find(piece, position)
        assert found >= 0, f"{piece!r} is not the input's"
        position = found + len(piece)
    for marker in ("-----BEGIN", "-----END"):
        assert out.count(marker) <= text.count(marker)


TEXTISH = st.lists(
    st.sampled_from([*"abcXYZ019 =:\"'-_\n{}[],.@/", "-----END RSA PRIVATE KEY-----", "password: "]), max_size=30
).map("".join)


@settings(max_examples=150, deadline=None)
@given(head=TEXTISH, body=SECRETS, tail=TEXTISH, cut=st.integers(min_value=0, max_value=200))
def test_a_preview_cut_never_gains_text_past_the_cut(head: str, body: str, tail: str, cut: int) -> None:
    text = f"{head}\n-----BEGIN RSA PRIVATE KEY-----\n{body}\n{body}\n-----END RSA PRIVATE KEY-----\n{tail}"
    end = min(cut, len(text))
    preview = redact_prefix(text, end)
    assert_only_replaced(text[:end] + REDACTED, preview + REDACTED)
    assert body not in preview
    if "-----END" not in text[:end]:
        assert "-----END" not in preview
