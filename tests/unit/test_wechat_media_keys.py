"""The key forms WeChat clients send for an attachment, the CDN download address, and decryption that says
plainly when the key or the bytes are wrong."""

from __future__ import annotations

import base64

import pytest

from core.channels.wechat.frames import MediaRef
from core.channels.wechat.media import MediaError, decrypt, download_url, parse_aes_key
from tests.fakes.fake_ilink_cdn import encrypt

KEY = bytes(range(16))


def test_a_key_is_base64_of_16_raw_bytes() -> None:
    assert parse_aes_key(base64.b64encode(KEY).decode()) == KEY


def test_a_key_is_base64_of_its_32_hex_digits() -> None:
    assert parse_aes_key(base64.b64encode(KEY.hex().encode()).decode()) == KEY
    assert parse_aes_key(base64.b64encode(KEY.hex().upper().encode()).decode()) == KEY


def test_a_key_is_the_bare_hex_an_images_aeskey_field_carries() -> None:
    assert parse_aes_key(KEY.hex()) == KEY


def test_a_key_without_its_base64_padding_still_reads() -> None:
    assert parse_aes_key(base64.b64encode(KEY).decode().rstrip("=")) == KEY


@pytest.mark.parametrize(
    "bad",
    [
        "",
        "a2V5",  # base64 of 3 bytes
        base64.b64encode(bytes(32)).decode(),  # 32 bytes that are not hex digits
        base64.b64encode(b"z" * 32).decode(),
        "not a key at all!",
    ],
)
def test_anything_else_is_a_media_error_that_says_so(bad: str) -> None:
    with pytest.raises(MediaError) as caught:
        parse_aes_key(bad)
    assert "key" in caught.value.reason


def test_the_download_address_percent_encodes_the_param_and_prefers_the_full_url() -> None:
    ref = MediaRef(encrypted_query_param="ab+c/d=e&f g", aes_key="")
    assert (
        download_url(ref, "https://cdn.example/c2c/")
        == "https://cdn.example/c2c/download?encrypted_query_param=ab%2Bc%2Fd%3De%26f%20g"
    )
    full = MediaRef(encrypted_query_param="x", aes_key="", full_url="https://other.example/m?id=1")
    assert download_url(full, "https://cdn.example/c2c") == "https://other.example/m?id=1"
    with pytest.raises(MediaError):
        download_url(MediaRef(encrypted_query_param="", aes_key=""), "https://cdn.example/c2c")


@pytest.mark.parametrize("size", [0, 1, 15, 16, 17, 1000])
def test_decrypt_undoes_the_cdns_encryption_for_every_padding_length(size: int) -> None:
    plain = bytes(i % 251 for i in range(size))
    assert decrypt(encrypt(plain, KEY), KEY) == plain


def test_bytes_that_are_not_whole_blocks_or_do_not_unpad_are_media_errors() -> None:
    cipher = encrypt(b"hello, world", KEY)
    with pytest.raises(MediaError, match="blocks"):
        decrypt(cipher[:-1], KEY)
    with pytest.raises(MediaError, match="blocks"):
        decrypt(b"", KEY)
    # This wrong key is fixed, and with it the last byte does not decrypt to valid padding; a random wrong
    # key would pass the padding check about once in 256 tries (ECB carries no checksum).
    with pytest.raises(MediaError, match="wrong key"):
        decrypt(cipher, bytes(16))
