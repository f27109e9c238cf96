"""What an API key or token looks like, whatever field it sits in: a known key prefix, or a high-entropy token
(Shannon entropy against the token's length). :mod:`agents.secrets` refuses such a value in a field meant for a
name and masks it in texts."""
from __future__ import annotations

import math
import re
from collections import Counter

# Known key prefixes (OpenAI, Groq, xAI, Anthropic, GitHub, Hugging Face, GitLab, Slack, Replicate,
# Perplexity, NVIDIA, Fireworks, Cerebras, Together, Stripe, AWS, Google) and auth schemes.
PREFIX_SHAPES = re.compile(
    r"(?<![A-Za-z0-9])(?:sk|rk|pk)-[A-Za-z0-9_\-]{16,}"
    r"|(?<![A-Za-z0-9])(?:gsk_|xai-|sk-ant-|gh[pousr]_|github_pat_|hf_|glpat-|xox[abposr]-|r8_|pplx-|nvapi-|fw_|csk-"
    r"|tgp_v1_|sess-|(?:sk|rk|pk)_(?:live|test)_)(?=[A-Za-z0-9_\-]{0,80}\d)[A-Za-z0-9_\-]{16,}"
    r"|(?<![A-Za-z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])"
    r"|(?<![A-Za-z0-9])AIza[0-9A-Za-z_\-]{30,}"
    r"|(?<![A-Za-z0-9])ya29\.[0-9A-Za-z_\-]{20,}"
    r"|(?<![A-Za-z0-9])eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}(?:\.[A-Za-z0-9_\-]*)?"
    r"|\bBearer\s+[A-Za-z0-9_\-.=+/~]{8,}")
_ALNUM_RUN = re.compile(r"[A-Za-z0-9]{20,}")
_TOKEN_RUN = re.compile(r"[A-Za-z0-9_\-+]{24,}")
_HEX = re.compile(r"[0-9a-fA-F]+")


def shannon_entropy(text: str) -> float:
    """Bits per character of ``text`` (its character frequencies)."""
    if not text:
        return 0.0
    n = len(text)
    return -sum(c / n * math.log2(c / n) for c in Counter(text).values())


def _random_looking(token: str, *, hex_ok: bool) -> bool:
    if _HEX.fullmatch(token):   # hex digests: 32+ chars spread over the 16 digits
        return hex_ok and len(token) >= 32 and shannon_entropy(token) >= 3.0
    if not (re.search(r"\d", token) and re.search(r"[A-Za-z]", token)):
        return False
    # random base62 tokens of 20 / 32 / 40 chars score about 4.0 / 4.5 / 4.8 bits, words and
    # model ids (qwen2.5-7b-instruct, Meta-Llama-3.1-70B-Instruct) well below 0.8 * log2(len)
    return shannon_entropy(token) >= 0.8 * math.log2(min(len(token), 64))


def key_shape(value: object) -> str | None:
    """Why ``value`` looks like an API key or token (``"a known key prefix"``, ``"a
    high-entropy token"``), or None. Path-like values (``/``) are not judged by hex digests
    (a Hugging Face snapshot directory is one)."""
    if not isinstance(value, str) or len(value) < 16:
        return None
    if PREFIX_SHAPES.search(value):
        return "a known key prefix"
    hex_ok = "/" not in value and "\\" not in value
    if any(_random_looking(m.group(), hex_ok=hex_ok) for m in _ALNUM_RUN.finditer(value)):
        return "a high-entropy token"
    for m in _TOKEN_RUN.finditer(value):
        tok = m.group()
        classes = sum(bool(re.search(p, tok)) for p in (r"[a-z]", r"[A-Z]", r"\d"))
        if classes == 3 and shannon_entropy(tok) >= 4.3:
            return "a high-entropy token"
    return None


def looks_like_key(value: object) -> bool:
    """True when ``value`` looks like an API key or token (:func:`key_shape`)."""
    return key_shape(value) is not None
