"""A corpus of realistic secret files, to measure redaction against the scanners teams already trust.

Each case is modelled on a documented rule of gitleaks (its rule id) or a detect-secrets plugin (its
name), written out here as a small file of the kind where such a secret turns up. The values are made up
in each rule's documented shape. Token-shape cases put the secret under a name that does not say "secret"
(`value`, `client`, a command line, prose), so that only its shape can give it away; the key, file-format
and command cases are about exactly that context.

`text` holds `{s}` where the secret goes; `secret` is the value that must not survive.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Case:
    kind: str
    anchor: str
    text: str
    secret: str

    @property
    def file(self) -> str:
        return self.text.replace("{s}", self.secret)


def _b64(n: int, seed: str = "Qx7") -> str:
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
    out = []
    for i in range(n):
        out.append(alphabet[(i * 7 + ord(seed[i % len(seed)])) % len(alphabet)])
    return "".join(out)


def _hex(n: int, seed: int = 3) -> str:
    return "".join("0123456789abcdef"[(i * 5 + seed) % 16] for i in range(n))


CORPUS: tuple[Case, ...] = (
    # --- keys and assignments ------------------------------------------------------------------------
    Case("env password", "detect-secrets KeywordDetector", "DB_HOST=db\nDB_PASSWORD={s}\n", "Tr0ub4dor-3xample"),
    Case("env pass word", "gitleaks generic-api-key", "export SMTP_PASS={s}\n", "n0t-a-real-pass-42"),
    Case("encryption key", "gitleaks generic-api-key", "ENCRYPTION_KEY={s}\n", _b64(32, "enc")),
    Case("signing key in yaml", "gitleaks generic-api-key", "jwt:\n  signingKey: {s}\n", _b64(40, "sig")),
    Case("credentials in json", "detect-secrets KeywordDetector", '{"credentials": "{s}"}\n', _b64(24, "cr")),
    Case(
        "python assignment",
        "detect-secrets KeywordDetector",
        'db = connect(host="h", passwd="{s}")\n',
        "s3cr3t-Example",
    ),
    Case("basic auth header", "detect-secrets KeywordDetector", "headers:\n  basicAuth: {s}\n", _b64(20, "ba")),
    Case(
        "cookie header", "gitleaks generic-api-key", "GET / HTTP/1.1\nCookie: session={s}; theme=dark\n", _b64(32, "ck")
    ),
    Case("set-cookie header", "gitleaks generic-api-key", "Set-Cookie: sid={s}; Path=/; HttpOnly\n", _b64(32, "sc")),
    Case(
        "xml password element",
        "detect-secrets KeywordDetector",
        "<db>\n  <password>{s}</password>\n</db>\n",
        "X9-Example-pw",
    ),
    Case(
        "docker auth",
        "detect-secrets Base64HighEntropyString",
        '{"auths": {"ghcr.io": {"auth": "{s}"}}}\n',
        "dXNlcjpFeGFtcGxlVG9rZW4xMjM=",
    ),
    Case(
        "npmrc auth token",
        "detect-secrets NpmDetector",
        "//registry.npmjs.org/:_authToken={s}\n",
        "00000000-1111-2222-3333-444444444444",
    ),
    Case(
        "azure storage",
        "detect-secrets AzureStorageKeyDetector",
        "conn = 'DefaultEndpointsProtocol=https;AccountName=acct;AccountKey={s};'\n",
        _b64(86, "az") + "==",
    ),
    # --- commands and file formats ---------------------------------------------------------------------
    Case("curl -u", "gitleaks curl-auth-user", "curl -u deploy:{s} https://ci.example.com/api\n", "pa55-Example-word"),
    Case("mysql -p", "gitleaks generic-api-key", "mysql -h db -u root -p{s} shop < dump.sql\n", "Root-Example-99"),
    Case(".netrc", "gitleaks generic-api-key", "machine api.example.com login bot password {s}\n", "Netrc-Example-7"),
    Case(
        "url credentials",
        "detect-secrets BasicAuthDetector",
        "DATABASE_URL=postgres://app:{s}@db:5432/app\n",
        "Pg-Example-55",
    ),
    Case(
        "slack webhook",
        "gitleaks slack-webhook-url",
        "notify:\n  url: https://hooks.slack.com/services/{s}\n",
        "T0EXAMPLE/B0EXAMPLE/" + _b64(24, "wh"),
    ),
    Case(
        "private key",
        "gitleaks private-key, detect-secrets PrivateKeyDetector",
        "-----BEGIN RSA PRIVATE KEY-----\n{s}\n-----END RSA PRIVATE KEY-----\n",
        "MIIEpAIBAAKCAQEA" + _b64(48, "pk"),
    ),
    Case(
        "bearer header",
        "gitleaks generic-api-key",
        "curl -H 'Authorization: Bearer {s}' https://api.example.com\n",
        _b64(40, "br"),
    ),
    Case(
        "jwt",
        "gitleaks jwt, detect-secrets JwtTokenDetector",
        "value: {s}\n",
        "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9."
        + "eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkV4YW1wbGUiLCJpYXQiOjE1MTYyMzkwMjJ9."
        + _b64(43, "jw"),
    ),
    Case(
        "aws secret next to its id",
        "gitleaks aws-access-token, detect-secrets AWSKeyDetector",
        "user,key id,secret\nci,AKIAIOSFODNN7EXAMPLE,{s}\n",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    ),
    # --- token shapes ------------------------------------------------------------------------------------
    Case("aws key id", "gitleaks aws-access-token", "value: {s}\n", "AKIAIOSFODNN7EXAMPLE"),
    Case(
        "github pat",
        "gitleaks github-pat, detect-secrets GitHubTokenDetector",
        "git clone https://{s}@github.com/o/r\n",
        "ghp_" + _b64(36, "gh"),
    ),
    Case(
        "github fine-grained",
        "gitleaks github-fine-grained-pat",
        "value: {s}\n",
        "github_pat_11ABCDEFG0" + _b64(59, "fg"),
    ),
    Case("github oauth", "gitleaks github-oauth", "value: {s}\n", "gho_" + _b64(36, "go")),
    Case(
        "gitlab pat",
        "gitleaks gitlab-pat, detect-secrets GitLabTokenDetector",
        "value: {s}\n",
        "glpat-" + _b64(20, "gl"),
    ),
    Case(
        "slack bot token",
        "gitleaks slack-bot-token, detect-secrets SlackDetector",
        "value: {s}\n",
        "xoxb-1234567890123-1234567890123-" + _b64(24, "sl"),
    ),
    Case("slack app token", "gitleaks slack-app-token", "value: {s}\n", "xapp-1-A0EXAMPLE-1234567890123-" + _hex(64)),
    Case(
        "stripe secret",
        "gitleaks stripe-access-token, detect-secrets StripeDetector",
        "value: {s}\n",
        "sk_live_" + _b64(24, "st"),
    ),
    Case("stripe restricted", "gitleaks stripe-access-token", "value: {s}\n", "rk_live_" + _b64(24, "rk")),
    Case("google api key", "gitleaks gcp-api-key", "value: {s}\n", "AIza" + _b64(35, "gc")),
    Case(
        "openai key",
        "gitleaks openai-api-key, detect-secrets OpenAIDetector",
        "value: {s}\n",
        "sk-proj-" + _b64(20, "oa") + "T3BlbkFJ" + _b64(20, "ob"),
    ),
    Case("anthropic key", "gitleaks anthropic-api-key", "value: {s}\n", "sk-ant-api03-" + _b64(80, "an") + "AA"),
    Case("npm token", "gitleaks npm-access-token", "value: {s}\n", "npm_" + _b64(36, "np")),
    Case(
        "sendgrid key",
        "gitleaks sendgrid-api-token, detect-secrets SendGridDetector",
        "value: {s}\n",
        "SG." + _b64(22, "sg") + "." + _b64(43, "sh"),
    ),
    Case(
        "pypi token",
        "gitleaks pypi-upload-token, detect-secrets PypiTokenDetector",
        "value: {s}\n",
        "pypi-AgEIcHlwaS5vcmc" + _b64(60, "py"),
    ),
    Case("shopify token", "gitleaks shopify-access-token", "value: {s}\n", "shpat_" + _hex(32)),
    Case(
        "twilio api key",
        "gitleaks twilio-api-key, detect-secrets TwilioKeyDetector",
        "client = Client('{s}', sid)\n",
        "SK" + _hex(32, 7),
    ),
    Case(
        "mailchimp key",
        "gitleaks mailchimp-api-key, detect-secrets MailchimpDetector",
        "value: {s}\n",
        _hex(32, 9) + "-us12",
    ),
    Case("mailgun key", "gitleaks mailgun-private-api-token", "value: {s}\n", "key-" + _hex(32, 11)),
    Case(
        "telegram bot token",
        "gitleaks telegram-bot-api-token, detect-secrets TelegramBotTokenDetector",
        "value: {s}\n",
        "1234567890:AA" + _b64(33, "tg"),
    ),
    Case("digitalocean token", "gitleaks digitalocean-pat", "value: {s}\n", "dop_v1_" + _hex(64, 5)),
    Case("hashicorp vault token", "gitleaks vault-service-token", "value: {s}\n", "hvs." + _b64(24, "hv")),
    Case(
        "age secret key",
        "gitleaks age-secret-key",
        "value: {s}\n",
        "AGE-SECRET-KEY-1" + "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L" * 1 + "QPZRY9X8GF2TVDW0S3JN54KHCE6",
    ),
    Case("high-entropy hex", "detect-secrets HexHighEntropyString", "value: {s}\n", _hex(40, 13)),
)

#: Files that look like secrets to a careless rule and must come out unchanged.
LOOK_ALIKES: tuple[str, ...] = (
    "PRIMARY_KEY=id\nFOREIGN_KEY=user_id\nsort_key: created_at\npublic_key: ssh-ed25519 AAAAC3Nza example\n",
    "keyboard: us-intl\nhotkey: ctrl+k\nmonkey: george\n",
    "passage: The quick brown fox\ncompass: north\nbypass_cache: true\n",
    "author: Jane Doe\nauthor_email: jane@example.com\nauthored: 2024\n",
    "COOKIE_DOMAIN=example.com\ncookie_name: sid\n",
    "- key: PATH\n  value: /usr/bin\n",
    "mkdir -p build && ssh -p 2222 host && docker run -p 8080:80 app\n",
    "The password manager keeps every login safe.\n",
    "<user>bob</user>\n<title>Passwords</title>\n",
    "class sk-loading-spinner-container-large\n",
    "see https://hooks.slack.com/ for the docs\n",
    "commit 3f786850e387550fdab836ed7e6dc881de23001b\n",
)
