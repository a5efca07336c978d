"""Secrets are hidden before a document leaves the host; ordinary text is left exactly as it was."""

from __future__ import annotations

import pytest

from core.export.redaction import REDACTED, redact

# Made-up values of the real shapes, built from parts so no secret scanner takes these fixtures for
# real keys (the values are what they look like joined).
OPENAI = "sk-" + "proj-Abc123Def456Ghi789Jkl012Mno345Pqr"
DEEPSEEK = "sk-" + "0123456789abcdef" * 2
ANTHROPIC = "sk-" + "ant-api03-abcdefghijklmnopqrstuvwxyz0123456789-ABCDEFG"
OPENROUTER = "sk-" + "or-v1-" + "0123456789abcdef" * 4
AWS_ID = "AKIA" + "IOSFODNN7EXAMPLE"  # AWS's documented example id
AWS_SECRET = "wJalrXUtnFEMI/" + "K7MDENG/bPxRfiCYEXAMPLEKEY"  # AWS's documented example
GITHUB = "ghp" + "_abcdefghijklmnopqrstuvwxyz0123456789"
GITHUB_PAT = "github" + "_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGH"
GITHUB_OAUTH = "gho" + "_16C7e42F292c6912E7710c838347Ae178B4a"
SLACK = "xoxb" + "-1234567890-0987654321-AbCdEfGhIjKlMnOp"
GOOGLE = "AIza" + "SyA-1234567890abcdefghijklmnopqrstu"
JWT = "eyJhbGciOiJIUzI1NiJ9" + ".eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\n"
    "MIIEowIBAAKCAQEA7bq98Ha0sLmaAzpLqR3MxU\n"
    "Proc-Type: 4,ENCRYPTED\n"
    "k8dQ+/b3xzP0Lq1w2Z==\n"
    "-----END RSA PRIVATE KEY-----"
)


@pytest.mark.parametrize(
    "secret",
    [OPENAI, DEEPSEEK, ANTHROPIC, OPENROUTER, AWS_ID, GITHUB, GITHUB_PAT, GITHUB_OAUTH, SLACK, GOOGLE, JWT],
)
def test_a_key_of_a_known_shape_is_hidden_wherever_it_is(secret: str) -> None:
    for text in (secret, f"key is {secret}.", f'{{"k": "{secret}"}}', f"export X={secret}\n", f"({secret})"):
        hidden = redact(text)
        assert secret not in hidden
        assert REDACTED in hidden


def test_the_text_around_a_key_stays() -> None:
    assert redact(f"用这个 {DEEPSEEK} 调用。") == f"用这个 {REDACTED} 调用。"
    assert redact(f"token {GITHUB}, then push") == f"token {REDACTED}, then push"


def test_a_pem_private_key_block_is_hidden_whole() -> None:
    text = f"before\n{PEM}\nafter the key"
    assert redact(text) == f"before\n{REDACTED}\nafter the key"
    escaped = '{"private_key": "-----BEGIN PRIVATE KEY-----\\nMIIEvQIBADANBg\\nabc==\\n'
    escaped += '-----END PRIVATE KEY-----\\n"}'
    assert redact(escaped) == f'{{"private_key": "{REDACTED}\\n"}}'
    clipped = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n… (+1,800 chars)"
    assert "b3BlbnNzaC1rZXktdjEAAAAA" not in redact(clipped)


def test_bearer_and_authorization_headers_keep_the_scheme() -> None:
    assert redact("Authorization: Bearer abcdefghijkl12345") == f"Authorization: Bearer {REDACTED}"
    assert redact("authorization: Basic dXNlcjpwYXNzd29yZA==") == f"authorization: Basic {REDACTED}"
    assert (
        redact('curl -H "Authorization: token 0123456789abcdef"')
        == f'curl -H "Authorization: token {REDACTED}"'
    )
    assert redact("Proxy-Authorization: c2VjcmV0OnZhbHVl") == f"Proxy-Authorization: {REDACTED}"
    assert redact("sent with Bearer abc.def-123_xyz") == f"sent with Bearer {REDACTED}"
    assert redact("Cookie: session=abc123; theme=dark") == f"Cookie: {REDACTED}"


def test_aws_secret_assignment() -> None:
    text = f"aws_access_key_id = {AWS_ID}\naws_secret_access_key = {AWS_SECRET}\nregion = us-east-1"
    assert redact(text) == (
        f"aws_access_key_id = {REDACTED}\naws_secret_access_key = {REDACTED}\nregion = us-east-1"
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("password: hunter2", f"password: {REDACTED}"),
        ("PASSWORD=hunter2 next", f"PASSWORD={REDACTED} next"),
        ("passwd = 'p@ss w0rd'", f"passwd = '{REDACTED}'"),
        ('{"api_key": "abc123", "n": 1}', f'{{"api_key": "{REDACTED}", "n": 1}}'),
        ("apikey=abc123&page=2", f"apikey={REDACTED}&page=2"),
        ("https://x.example/cb?access_token=abc123&x=1", f"https://x.example/cb?access_token={REDACTED}&x=1"),
        ("GITHUB_TOKEN=abcdef123", f"GITHUB_TOKEN={REDACTED}"),
        ("secret: s3cr3t", f"secret: {REDACTED}"),
        ("client_secret: 0a1b2c", f"client_secret: {REDACTED}"),
        ("clientSecret: 0a1b2c", f"clientSecret: {REDACTED}"),
        ("X-Api-Key: k-123", f"X-Api-Key: {REDACTED}"),
        ("key = abcdefgh12345678ijkl", f"key = {REDACTED}"),
        ("我的密码是 hunter2,别告诉别人", f"我的密码是 {REDACTED},别告诉别人"),
        ("令牌:abc123", f"令牌:{REDACTED}"),
        ("mysql --password hunter2 db", f"mysql --password {REDACTED} db"),
        ("curl -u bob:pa55word https://x.example", f"curl -u bob:{REDACTED} https://x.example"),
        # All-caps names run together, as shells and CI write them.
        ("PGPASSWORD=Sup3rS3cret psql -h db", f"PGPASSWORD={REDACTED} psql -h db"),
        ("export NPMTOKEN=abc123def", f"export NPMTOKEN={REDACTED}"),
        # Inside an escaped JSON string (a JSON body quoted on a command line).
        (
            'curl -d "{\\"user\\":\\"bob\\",\\"password\\":\\"hunter2\\"}"',
            f'curl -d "{{\\"user\\":\\"bob\\",\\"password\\":\\"{REDACTED}\\"}}"',
        ),
        ('DB_PASSWORD=\\"hunter2\\"', f'DB_PASSWORD=\\"{REDACTED}\\"'),
        ("mysql -u root -pS3cret mydb", f"mysql -u root -p{REDACTED} mydb"),
        ("sshpass -p S3cret ssh backup@host", f"sshpass -p {REDACTED} ssh backup@host"),
    ],
)
def test_an_assignment_keeps_its_name_and_hides_its_value(text: str, expected: str) -> None:
    assert redact(text) == expected


def test_a_url_keeps_everything_but_its_password() -> None:
    assert redact("git clone https://alice:s3cr3t@example.com/repo.git") == (
        f"git clone https://alice:{REDACTED}@example.com/repo.git"
    )
    assert redact("postgres://app:p%40ss@db:5432/main") == f"postgres://app:{REDACTED}@db:5432/main"
    assert redact("redis://:Sup3rS3cret@cache:6379/0") == f"redis://:{REDACTED}@cache:6379/0"


def test_telegram_and_npm_tokens_are_hidden() -> None:
    telegram = "7123456789:" + "AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw1"
    assert redact(f"curl https://api.telegram.org/bot{telegram}/getMe") == (
        f"curl https://api.telegram.org/bot7123456789:{REDACTED}/getMe"
    )
    npm = "npm" + "_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    assert redact(f"//registry.npmjs.org/:_authToken={npm}") == f"//registry.npmjs.org/:_authToken={REDACTED}"


@pytest.mark.parametrize(
    "text",
    [
        "比较了三家云的 A100 包月价,X 云最便宜,约 ¥7,800。",
        "Fixed in commit 3f2a9c1d0e4b5a6c7d8e9f0a1b2c3d4e5f6a7b8c and deadbeef.",
        "Read /home/u/.config/errand/settings.json and C:\\Users\\u\\token\\notes.txt",
        "See https://example.com/docs/api-keys?lang=en#section and mailto:someone@example.com",
        "git@github.com:owner/repo.git",
        "max_tokens: 4096, tokens: 1200, token: 4096, input_tokens=300",
        "sort_key: created_at; primary_key: id; monkey: bananas; key: value",
        "Bearer of bad news; the token bearer is here",
        "token: str = None; password: ${DB_PASSWORD}; api_key=os.environ['KEY']; secret: <your secret>",
        "if token == expected: pass",
        "risk-assessment-for-the-year-2024, ask-a-question-about-it-2",
        "Authorization: Bearer <token>",
        "08:00 · 观察 · 本会发送:“X 降价了” · 约 $0.03",
        "the passwords: none of them; keyboard: qwerty",
        "mysql -u root -p mydb; ssh -p2222 host; mkdir -p build; MONKEY=banana",
        "time: 12:30, at 08:00:00 the job 1234567890:AAB ran",
        "",
    ],
)
def test_ordinary_text_is_left_alone(text: str) -> None:
    assert redact(text) == text


def test_redaction_is_idempotent() -> None:
    once = redact(f"password: hunter2 {OPENAI} Authorization: Bearer abcdefgh12345")
    assert redact(once) == once


def test_hostile_inputs_finish() -> None:
    # Each took minutes with a pattern that rescans a run of key characters from every position in it. No
    # time is asserted (bench/bench_export.py measures); a regression shows as a suite that hangs here.
    hostile = [
        "sk-" * 100_000,
        "eyJ" + "a" * 300_000,
        "eyJ" * 100_000,
        "-----BEGIN PRIVATE KEY-----" * 10_000,
        "Bearer " + "a" * 300_000,
        "https://" + "a" * 300_000,
        "password=" * 30_000,
    ]
    for text in hostile:
        assert len(redact(text)) > 0
