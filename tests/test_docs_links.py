"""The README and docs/ pages point only at what exists: every relative link reaches a file
(and, with an #anchor, a heading of it, as GitHub slugs headings), and every repository path
they name in backticks is in the repository. So do the code's docstrings and comments.
Moving a file or renaming a heading fails here, not in a reader's browser or editor."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import ROOT

FENCE = re.compile(r"^(```|~~~).*?^\1[^\n]*$", re.M | re.S)
INLINE_CODE = re.compile(r"(`+)(.+?)\1", re.S)
LINK = re.compile(r"(?<!!)\[(?:[^\[\]]|\[[^\]]*\])*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$", re.M)
PATH_LIKE = re.compile(r"^[\w.\-/]+$")
EXTERNAL = ("http://", "https://", "mailto:")


@dataclass(frozen=True)
class Page:
    path: Path
    text: str

    @property
    def prose(self) -> str:
        """The text outside code blocks: a `#` comment or a `[x](y)` in code is not Markdown."""
        return FENCE.sub("", self.text)

    @property
    def name(self) -> str:
        return str(self.path.relative_to(ROOT))


# What the code names as a user's module, not one of ours (clash.py's example).
USERS_MODULES = {"app/billing.py"}


def pages() -> list[Page]:
    paths = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    return [Page(path, path.read_text(encoding="utf-8")) for path in paths]


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: its text, lower-cased, without punctuation other than
    `-` and `_`, each space a `-`."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link keeps its text
    text = text.replace("`", "").lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(page: Page) -> set[str]:
    found: set[str] = set()
    seen: dict[str, int] = {}
    for match in HEADING.finditer(page.prose):
        base = slug(match.group(2))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def links(page: Page) -> Iterator[str]:
    prose = INLINE_CODE.sub("", page.prose)
    for match in LINK.finditer(prose):
        target = match.group(1)
        if not target.startswith(EXTERNAL):
            yield target


def ignored_prefixes() -> tuple[str, ...]:
    """What .gitignore names is made at run time (var/, bench/results/): the docs may name
    files there that a clean clone does not have."""
    lines = (ROOT / ".gitignore").read_text().splitlines()
    return tuple(line.strip() for line in lines if line.strip() and not line.startswith("#"))


def is_ignored(path: str, prefixes: tuple[str, ...]) -> bool:
    return any(path == p.rstrip("/") or (p.endswith("/") and path.startswith(p)) for p in prefixes)


def repository_paths(page: Page) -> Iterator[str]:
    """The paths from the repository's root that backticked spans name, alone or as a word
    of a command: `app/keys.py`, `tests/faults/`, `tests/test_claim.py::test_x` (the file
    part), `--log-config app/uvicorn_logging.json`."""
    top = {entry.name for entry in ROOT.iterdir()}
    for match in INLINE_CODE.finditer(page.prose):
        for word in match.group(2).split():
            span = word.split("::")[0].rstrip(".,;:)")
            if "/" in span and PATH_LIKE.match(span) and span.split("/")[0] in top:
                yield span.rstrip("/")


def broken_links(page: Page) -> list[str]:
    broken = []
    for target in links(page):
        file_part, _, anchor = target.partition("#")
        resolved = (page.path.parent / file_part).resolve() if file_part else page.path
        if not resolved.exists():
            broken.append(f"{page.name}: {target}: no such file")
        elif anchor and resolved.suffix == ".md":
            target_page = Page(resolved, resolved.read_text(encoding="utf-8"))
            if anchor not in anchors(target_page):
                broken.append(f"{page.name}: {target}: no such heading")
    return broken


def test_the_docs_are_the_readme_and_the_pages_under_docs() -> None:
    names = {page.name for page in pages()}
    assert "README.md" in names
    assert {"docs/configuration.md", "docs/guarantees.md", "docs/operations.md"} <= names


@pytest.mark.parametrize(
    ("heading", "anchor"),
    [
        (
            "`webhooks send`: a signed test event for any source",
            "webhooks-send-a-signed-test-event-for-any-source",
        ),
        ("Did we get evt_123? The event ledger", "did-we-get-evt_123-the-event-ledger"),
        (
            "Slow and oversized requests: the limits, and the proxy in front",
            "slow-and-oversized-requests-the-limits-and-the-proxy-in-front",
        ),
        ("Processes (`Procfile`)", "processes-procfile"),
        ("Dead letters: the 3 a.m. guide", "dead-letters-the-3-am-guide"),
    ],
)
def test_headings_are_anchored_as_github_anchors_them(heading: str, anchor: str) -> None:
    assert slug(heading) == anchor


def test_repeated_headings_get_numbered_anchors() -> None:
    page = Page(ROOT / "x.md", "# Limits\n\n## Limits\n\n```\n# Limits\n```\n")
    assert anchors(page) == {"limits", "limits-1"}


def test_every_relative_link_reaches_a_file_and_its_heading() -> None:
    broken = [line for page in pages() for line in broken_links(page)]
    assert not broken, "\n".join(broken)


def test_every_repository_path_named_in_backticks_exists() -> None:
    prefixes = ignored_prefixes()
    missing = [
        f"{page.name}: `{path}`"
        for page in pages()
        for path in repository_paths(page)
        if not (ROOT / path).exists() and not is_ignored(path, prefixes)
    ]
    assert not missing, "\n".join(missing)


def code_pages() -> list[Page]:
    paths = [
        p
        for top in ("app", "workers", "pytest_webhook_receiver")
        for p in (ROOT / top).rglob("*.py")
    ]
    return [Page(path, path.read_text(encoding="utf-8")) for path in sorted(paths)]


def test_every_repository_path_the_code_names_in_backticks_exists() -> None:
    prefixes = ignored_prefixes()  # var/: made by `make run`, not in a clean clone
    missing = [
        f"{page.name}: `{path}`"
        for page in code_pages()
        for path in repository_paths(page)
        if not (ROOT / path).exists()
        and path not in USERS_MODULES
        and not is_ignored(path, prefixes)
    ]
    assert not missing, "\n".join(missing)
