import pytest

from corpus.chunk import ChunkConfig, _postprocess, chunk_documents
from storage.records import Document


def test_postprocess_reference_rules():
    assert _postprocess("para one\n\n", 5) == "para one"
    assert _postprocess("long paragraph text here\n\nHistory", 5) == "long paragraph text here"
    assert _postprocess("a\n\nsix words are not a heading", 5) == "a\n\nsix words are not a heading"


def test_boundaries_offsets_and_min_size():
    p1 = "Alpha beta gamma. " * 5          # 90 chars
    p2 = "Delta epsilon zeta. " * 5        # 100 chars
    text = f"{p1.strip()}\n\n{p2.strip()}\n\nTail"
    doc = Document("doc", "Title", text, "src")
    chunks, rej = chunk_documents([doc], ChunkConfig(max_size=120, min_size=50))
    assert [c.chunk_id for c in chunks] == ["doc#0", "doc#1"]
    assert chunks[0].text == p1.strip() and chunks[0].start_char == 0 and chunks[0].end_char == 89
    assert chunks[1].text == p2.strip() and chunks[1].start_char == 91
    for c in chunks:
        assert text[c.start_char:c.end_char] == c.text and c.title == "Title" and len(c.text) <= 120
    assert rej == []   # the dangling "Tail" (<= 5 words after the last blank line) was cut
    chunks, rej = chunk_documents([doc], ChunkConfig(max_size=120, min_size=95))
    assert [c.text for c in chunks] == [p2.strip()]
    assert [(r.reason, r.stage, r.source) for r in rej] == [("chunk_too_short", "chunk", "src@0")]


def test_long_paragraph_split_on_sentences_no_overlap():
    text = " ".join(f"Sentence number {i} is here." for i in range(40))
    chunks, _ = chunk_documents([Document("d", "", text, "s")], ChunkConfig(max_size=200, min_size=0))
    assert all(len(c.text) <= 200 for c in chunks)
    assert all(text[c.start_char:c.end_char] == c.text for c in chunks)
    assert all(a.end_char <= b.start_char for a, b in zip(chunks, chunks[1:]))
    joined = "".join(text[c.start_char:c.end_char] for c in chunks).replace(" ", "")
    assert joined == text.replace(" ", "")


def test_default_sizes_are_reference():
    cfg = ChunkConfig()
    text = ("word " * 600).strip()  # 2999 chars, no paragraph breaks
    chunks, rej = chunk_documents([Document("d", "", text, "s")], cfg)
    assert [len(c.text) for c in chunks] == [2044]       # 409 words of 5 chars, minus the final space
    assert [r.reason for r in rej] == ["chunk_too_short"]  # the 954-char tail < 1024


def test_token_mode_fits_encoder():
    from embedding.encoder import tokenizer
    text = "\n\n".join(f"Paragraph {i}: " + "tokens and more tokens " * 30 for i in range(6))
    chunks, _ = chunk_documents([Document("d", "", text, "s")], ChunkConfig(mode="tokens", min_size=0))
    tok = tokenizer()
    assert chunks and all(len(tok.encode(c.text, add_special_tokens=False)) <= 254 for c in chunks)
    assert all(text[c.start_char:c.end_char] == c.text for c in chunks)
