"""The runner secrets of service/core/tokens.py: a new token carries its prefix and 32 random
bytes, only its SHA-256 is stored, and a given secret is compared with the expected one in
constant time, whatever characters either holds."""

from __future__ import annotations

import re

from service.core.tokens import new_token, same_secret, token_hash


def test_a_new_token_is_its_prefix_and_32_url_safe_random_bytes() -> None:
    token = new_token("kwr")
    # 32 bytes in unpadded base64url are 43 characters: what a header and a URL carry as is.
    assert re.fullmatch(r"kwr_[A-Za-z0-9_-]{43}", token)


def test_two_new_tokens_never_repeat() -> None:
    assert len({new_token("kwr") for _ in range(50)}) == 50


def test_the_stored_hash_is_the_hex_sha256_of_the_token() -> None:
    # FIPS 180-2's test vector: a hash stored by another build must still match.
    assert token_hash("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"


def test_the_hash_fills_the_64_characters_its_columns_hold_whatever_the_token() -> None:
    # runners.token_hash and jobs.attempt_token_hash are String(64) and unique.
    hashes = {token_hash(new_token("kwr")) for _ in range(20)} | {token_hash("é" * 1000)}
    assert len(hashes) == 21
    assert all(re.fullmatch(r"[0-9a-f]{64}", h) for h in hashes)


def test_only_the_exact_secret_is_the_same() -> None:
    assert same_secret("s3cret", "s3cret")
    assert not same_secret("s3cre", "s3cret")  # a prefix of the secret is no secret
    assert not same_secret("s3cret ", "s3cret")
    assert not same_secret("", "s3cret")


def test_secrets_beyond_ascii_are_compared_rather_than_refused() -> None:
    # hmac.compare_digest refuses non-ASCII str; a header's guess may hold anything.
    assert same_secret("clé-ключ", "clé-ключ")
    assert not same_secret("clé", "cle")
