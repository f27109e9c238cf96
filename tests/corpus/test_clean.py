from corpus.clean import CleanConfig, clean_documents, cut_boilerplate
from storage.records import Document

H = ["See also", "References", "External links"]


def test_cut_at_first_boilerplate_heading_styles():
    body = "Intro para.\n\nMore text."
    assert cut_boilerplate(body + "\n\nSee also\n\n* x", H) == body
    assert cut_boilerplate(body + "\n\n## References\n1. y", H) == body
    assert cut_boilerplate(body + "\n\n== External links ==\nz", H) == body
    # a heading word inside a sentence or without a blank line before it is not a cut
    assert cut_boilerplate("The References section\nReferences\nx", H) == "The References section\nReferences\nx"
    # checked in list order: the earlier heading in the list wins even if later in the text
    assert cut_boilerplate("a\n\nReferences\nr\n\nSee also\ns", H) == "a\n\nReferences\nr"


def test_configurable_list_min_length_and_language():
    docs = [Document("1", "", "Short.", "s1"),
            Document("2", "", "A long enough English document about rivers and mountains.\n\nTrivia\nstuff", "s2"),
            Document("3", "", "Dies ist ein deutscher Text über Flüsse und Berge in den Alpen und mehr.", "s3")]
    kept, rej = clean_documents(docs, CleanConfig(cut_headings=["Trivia"], min_chars=20, languages=["en"]))
    assert [d.doc_id for d in kept] == ["2"]
    assert kept[0].text == "A long enough English document about rivers and mountains."
    assert {(r.doc_id, r.reason) for r in rej} == {("1", "too_short"), ("3", "language")}
