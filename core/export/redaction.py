"""Hide secrets in text that leaves the host (Markdown exports). Pure: precompiled patterns, no I/O.

Every secret becomes the one marker `REDACTED` («redacted»), the same in every language, so a reader (or a
test) can tell where something was hidden and nothing has to be translated. What is hidden:

- API keys by their shape: OpenAI, DeepSeek and OpenRouter `sk-…` (with a digit in them), Anthropic
  `sk-ant-…`, Stripe `sk_live_…`, AWS access key ids `AKIA…`, GitHub `ghp_ gho_ ghu_ ghs_ ghr_ github_pat_`,
  GitLab `glpat-`, Slack `xox?-` and `xapp-`, Google `AIza…`, Hugging Face `hf_…`, npm `npm_…`, Telegram bot
  tokens (`<id>:AA…`, the part after the colon), and JSON Web Tokens (three base64url parts starting `eyJ`);
- PEM private key blocks, from `-----BEGIN … PRIVATE KEY-----` to its END line (to the end of the base64
  when the END line was clipped off);
- credentials in places: `Bearer <token>`, the value of `Authorization:` and `Cookie:` headers, the password
  of `scheme://user:password@host` (also with no user, `redis://:password@host`), `curl -u user:password`,
  `--password value`-style options, `mysql -pPASSWORD` and `sshpass -p PASSWORD`;
- assignments `name = value` / `name: value` / `"name": "value"` whose name is or ends with password,
  passwd, passphrase, secret, token, api_key / apikey, access_key, secret_key, private_key or client_secret
  (any case, also `X-Api-Key`, `GITHUB_TOKEN`, `PGPASSWORD`, `clientSecret`, and inside an escaped JSON
  string, `\"password\":\"…\"`), and 密码 口令 密钥 令牌 followed by `:` `=`
  `是` `为`. The name is kept and only the value hidden. A bare or compound `key` (`sort_key: date`) hides its
  value only when the value looks like a credential (16+ key characters with letters and digits), a token's
  only when it is not a plain number, and placeholders (`None`, `""`, `${VAR}`, `<token>`, `str`, `****`)
  are left alone.

Ordinary prose, hex commit hashes, file paths and URLs without credentials are not touched. Header and
option names match in lower, Capitalised and UPPER case only (not `aUtHoRiZaTiOn`).

Cost: every pattern starts with a literal (or a one-letter class), never `(?i)`; a start inside a longer
word is refused at once; repetitions are bounded or possessive; so the time is linear in the length of the
text. A pattern is scanned only when one of its strings is in the text (a substring test is much cheaper
than a scan). About 40 ns a character on a mixed Chinese and English document (bench/bench_export.py).

Redaction is best effort: a secret with no recognisable shape or name (a bare password on its own line)
cannot be told from prose.
"""

from __future__ import annotations

import re
from collections.abc import Callable

REDACTED = "«redacted»"

_Replace = str | Callable[[re.Match[str]], str]


def _token(start: str, rest: str) -> re.Pattern[str]:
    """A key shape: its literal start, then a look-behind that refuses a start inside a longer word at once
    (so a long run of key characters is never rescanned from each of its positions), then the rest."""
    return re.compile(f"{re.escape(start)}(?<![A-Za-z0-9_\\-]{re.escape(start)}){rest}(?![A-Za-z0-9_\\-])")


# API keys and tokens recognisable by their shape alone: (what must be in the text, the pattern).
_TOKENS: tuple[tuple[tuple[str, ...], re.Pattern[str]], ...] = (
    (("sk-",), _token("sk-", r"(?=[A-Za-z_\-]{0,64}+[0-9])[A-Za-z0-9_\-]{20,}")),  # OpenAI, DeepSeek, ...
    (("sk_live_", "sk_test_"), _token("sk_", r"(?:live|test)_[A-Za-z0-9]{16,}")),  # Stripe
    (("rk_live_", "rk_test_"), _token("rk_", r"(?:live|test)_[A-Za-z0-9]{16,}")),
    (("AKIA", "ASIA", "ABIA", "ACCA"), _token("A", r"(?:KIA|SIA|BIA|CCA)[0-9A-Z]{16}")),  # AWS key ids
    (("ghp_", "gho_", "ghu_", "ghs_", "ghr_"), _token("gh", r"[pousr]_[A-Za-z0-9]{30,}")),  # GitHub
    (("github_pat_",), _token("github_pat_", r"[A-Za-z0-9_]{22,}")),
    (("glpat-",), _token("glpat-", r"[A-Za-z0-9_\-]{20,}")),  # GitLab
    (("xox",), _token("xox", r"[abposr]-[A-Za-z0-9\-]{10,}")),  # Slack
    (("xapp-",), _token("xapp-", r"[A-Za-z0-9\-]{10,}")),
    (("AIza",), _token("AIza", r"[0-9A-Za-z_\-]{35}")),  # Google
    (("hf_",), _token("hf_", r"[A-Za-z0-9]{30,}")),  # Hugging Face
    (("npm_",), _token("npm_", r"[A-Za-z0-9]{36}")),  # npm
    (("eyJ",), _token("eyJ", r"[A-Za-z0-9_\-]{8,}+\.[A-Za-z0-9_\-]{8,}+\.[A-Za-z0-9_\-]{8,}+")),  # JWT
)

# A Telegram bot token `<bot id>:AA…`: the part after the colon is the secret (the id is public).
_TELEGRAM = re.compile(r":(?<=[0-9]{8}:)AA[A-Za-z0-9_\-]{33}(?![A-Za-z0-9_\-])")

# A PEM private key: base64 lines (real newlines or the `\n` escapes of a JSON string), a few armour headers.
_PEM = re.compile(
    r"-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----"
    r"(?:(?:Proc-Type|DEK-Info|Comment|Version|Hash):[^\r\n\\]{0,200}|[ \t\r\n]++|\\[rn]|[A-Za-z0-9+/=]++)*+"
    r"(?:-----END[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----)?"
)

# Credentials in places: group 1 is kept, group 2 (the secret) hidden. Each starts with a literal (or a
# one-letter class), never `(?i)`, so a scan is a fast search for it.
_URL_PASSWORD = re.compile(r"://([^\s/?#@:\[\]]{0,256}:)([^\s/?#@]{1,256})@")
_CURL_USER = re.compile(r"-(-user[ \t]+[^\s:\"']{1,256}:|u[ \t]+[^\s:\"']{1,256}:)([^\s\"']+)")
_OPTION = re.compile(
    r"--((?i:password|passwd|passphrase|token|secret|api-key|apikey|access-token|auth-token)[ \t]+)"
    r"([^\s\"'\-][^\s\"']*)"
)
# `mysql -pSECRET` (no blank: `-p` alone asks), `sshpass -p SECRET`; `-p` elsewhere is a port or a flag.
_CLI_PASSWORD = re.compile(
    r"((?:mysql|mysqldump|mariadb|mysqladmin)[ \t][^\r\n;|&]{0,200}?[ \t]-p|sshpass[ \t]+-p[ \t]*)"
    r"([^\s\"'\-][^\s\"']*)"
)
_AUTH_HEADER = re.compile(
    r"(?:[Aa]uthorization|AUTHORIZATION)([\"']?[ \t]*[:=][ \t]*[\"']?"
    r"(?:(?i:bearer|basic|token|bot|apikey)[ \t]+)?)([^\s\"',;]+)"
)
_COOKIE_HEADER = re.compile(r"(?:[Cc]ookie|COOKIE)([\"']?[ \t]*:[ \t]*[\"']?)([^\r\n\"']+)")
_BEARER = re.compile(
    r"(?:[Bb]earer|BEARER)([ \t]+)"
    r"((?=[A-Za-z\-._~+/]{0,256}+[0-9])[A-Za-z0-9\-._~+/]{8,}=*|[A-Za-z0-9\-._~+/]{24,}=*)"
)
_ASSIGNMENT_ZH = re.compile(
    r"(?:密码|口令|密钥|秘钥|令牌)([ \t]*(?:[:=：]|是|为)[ \t]*)([A-Za-z0-9!@#$%^&*_+\-=.:/?~|\\]+)"
)

# `name = value`: a scan stops at each `:` or `=` after a letter a secret name ends with (or a quote or a
# blank), and the name before it is checked on the match (`_assignment`).
_ASSIGNMENT = re.compile(
    r"[:=](?<=[yYnNtTdDeE\"' \t][:=])(?!=)[ \t]*"
    r"(\\\"[^\"\\\r\n]{0,512}\\\"|\"[^\"\r\n]{0,512}\"|'[^'\r\n]{0,512}'|[^\s\"',;&<>()\[\]{}\\]+)"
)
_COMPOUNDS = (("api", "key"), ("access", "key"), ("secret", "key"), ("private", "key"), ("client", "secret"))
# Longest first: the first one a name ends with is its secret word.
_NAMES = (
    *(f"{head}{joint}{tail}" for head, tail in _COMPOUNDS for joint in ("_", "-", "")),
    "password",
    "passwd",
    "passphrase",
    "secret",
    "token",
    "key",
)
_CREDENTIAL = re.compile(r"(?=[^0-9]*[0-9])(?=[^A-Za-z]*[A-Za-z])[A-Za-z0-9_\-+/=.]{16,}")
_PLACEHOLDERS = frozenset(
    {"", "none", "null", "nil", "true", "false", "undefined", "str", "string", "bytes", "int", "bool", "any"}
)
_PLACEHOLDER_STARTS = ("$", "%", "{", "<", "«", "*", "os.environ", "process.env", "getenv", "env(")


def _keep_head(match: re.Match[str]) -> str:
    """The match with its group 2 (the secret) hidden, unless that is a placeholder or already hidden."""
    if _placeholder(match.group(2)):
        return match.group(0)
    whole, start = match.group(0), match.start()
    return f"{whole[: match.start(2) - start]}{REDACTED}{whole[match.end(2) - start :]}"


def _after_blank(match: re.Match[str]) -> str:
    """`_keep_head` for a command-line option: it must follow a blank (or start the text)."""
    start = match.start()
    return match.group(0) if start and not match.string[start - 1].isspace() else _keep_head(match)


def _after_word(match: re.Match[str]) -> str:
    """`_keep_head` for a header or a scheme: it must start a word (`Authorization`, `Proxy-Authorization`,
    `Set-Cookie`, not `xAuthorization`)."""
    start = match.start()
    if start and (match.string[start - 1].isalnum() or match.string[start - 1] == "_"):
        return match.group(0)
    return _keep_head(match)


def _assignment(match: re.Match[str]) -> str:
    text, end = match.string, match.start()
    while end and text[end - 1] in " \t":
        end -= 1
    if end and text[end - 1] in "\"'":
        end -= 1
        if end and text[end - 1] == "\\":  # `\"password\":` inside an escaped JSON string
            end -= 1
    tail = text[max(0, end - 20) : end].lower()
    if not tail.endswith(_NAMES):
        return match.group(0)
    word = next(name for name in _NAMES if tail.endswith(name))
    if not _starts_name(text, end - len(word)):
        return match.group(0)
    value = match.group(1)
    escaped = len(value) >= 4 and value.startswith('\\"') and value.endswith('\\"')
    quoted = escaped or (len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'")
    quote = value[:2] if escaped else value[:1]
    bare = value[len(quote) : -len(quote)] if quoted else value
    if _placeholder(bare) or (word == "token" and bare.isdigit()):
        return match.group(0)
    if word == "key" and not _CREDENTIAL.fullmatch(bare):
        return match.group(0)  # `sort_key: created_at`, `key: value` in prose
    hidden = f"{quote}{REDACTED}{quote}" if quoted else REDACTED
    return match.group(0)[: match.start(1) - match.start()] + hidden


def _starts_name(text: str, start: int) -> bool:
    """Whether a secret word at `start` begins a name component: `token`, `GITHUB_TOKEN`, `x-api-key` and
    camelCase `authToken` do; `monkey` and `mytoken` do not."""
    if start <= 0:
        return True
    before = text[start - 1]
    if not (before.isascii() and before.isalnum()):
        return True
    if before.isupper() and text[start].isupper():
        return True  # an all-caps name run together: `PGPASSWORD`, `NPMTOKEN`
    return before.islower() and text[start].isupper()


def _placeholder(value: str) -> bool:
    lowered = value.strip().lower()
    return lowered in _PLACEHOLDERS or lowered.startswith(_PLACEHOLDER_STARTS)


# In order (a key inside a header is hidden as a key first); each pattern is scanned only when one of its
# strings is in the text: a substring test is far faster than a scan, and most texts have none of them.
_RULES: tuple[tuple[tuple[str, ...], re.Pattern[str], _Replace], ...] = (
    (("-----BEGIN",), _PEM, REDACTED),
    *((needles, pattern, REDACTED) for needles, pattern in _TOKENS),
    ((":AA",), _TELEGRAM, ":" + REDACTED),
    (("@",), _URL_PASSWORD, _keep_head),
    (("mysql", "mariadb", "sshpass"), _CLI_PASSWORD, _keep_head),
    (("-u", "--user"), _CURL_USER, _after_blank),
    (("--",), _OPTION, _after_blank),
    (("uthorization", "UTHORIZATION"), _AUTH_HEADER, _after_word),
    (("ookie", "OOKIE"), _COOKIE_HEADER, _after_word),
    (("earer", "EARER"), _BEARER, _after_word),
    ((":", "="), _ASSIGNMENT, _assignment),
    (("密码", "口令", "密钥", "秘钥", "令牌"), _ASSIGNMENT_ZH, _keep_head),
)


def redact(text: str) -> str:
    """`text` with every secret it recognises replaced by REDACTED (see the module's docstring)."""
    for needles, pattern, replace in _RULES:
        if any(needle in text for needle in needles):
            text = pattern.sub(replace, text)
    return text


def redact_multiline(text: str) -> str:
    """Only the secrets that span lines (PEM private key blocks) hidden: for text about to be prefixed line by
    line (a blockquote), which the document-wide `redact` could then no longer see whole. Cheap when there
    is none."""
    return _PEM.sub(REDACTED, text) if "-----BEGIN" in text else text
