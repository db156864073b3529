"""Redaction rules: agentmemory-fs-watcher's cases, then the secret shapes it let through (see the README's
comparison)."""

from __future__ import annotations

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from amem.watcher.redact import REDACTED, is_sensitive_key, redact

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
    ]


@settings(max_examples=150, deadline=None)
@given(secret=SECRETS, key=KEYS, before=FILLER, after=FILLER, which=st.integers(min_value=0, max_value=12))
def test_a_secret_never_survives_redaction(secret: str, key: str, before: str, after: str, which: int) -> None:
    assume(secret not in before and secret not in after)
    text = f"{before}\n{placements(secret, key)[which]}\n{after}"
    out = redact(text)
    assert secret not in out
    assert redact(out) == out  # idempotent: redacting twice changes nothing more


@settings(max_examples=100, deadline=None)
@given(text=st.text(max_size=300))
def test_redaction_never_crashes_and_is_idempotent(text: str) -> None:
    once = redact(text)
    assert redact(once) == once
