"""The README stays a README: short, the two commands near the top, and links into the docs site that exist
(the site itself is checked by `make docs`, i.e. `mkdocs build --strict`, which `make test` runs)."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
LINK = re.compile(r"\]\(([^)#\s]+)(#[^)\s]*)?\)")


def test_readme_is_at_most_300_lines_with_the_two_commands_in_its_first_40():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 300
    head = "\n".join(lines[:40])
    assert "make demo" in head and "make test" in head


def test_readme_links_to_a_page_for_each_of_the_three_uses():
    text = README.read_text(encoding="utf-8")
    for page in ("docs/getting-started/private-corpus.md", "docs/getting-started/scheduled-regeneration.md",
                 "docs/getting-started/monitoring.md"):
        assert f"]({page})" in text, page


def test_every_relative_link_of_the_readme_exists():
    text = README.read_text(encoding="utf-8")
    targets = [m.group(1) for m in LINK.finditer(text) if "://" not in m.group(1)]
    assert targets
    missing = [t for t in targets if not (ROOT / t).exists()]
    assert not missing, missing


def test_moved_documents_leave_no_copy_behind():
    for old in ("benchmarks/realism_log.md", "agents/README.md", "evaluation/audit/README.md",
                "evaluation/abstention/README.md", "deploy/kubernetes.md"):
        assert not (ROOT / old).exists(), old
