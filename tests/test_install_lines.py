"""Every install line a reader copies from README.md, docs/ or .env.example installs this
project: a checkout path, a git URL, or the distribution's own name. The PyPI name
`webhook-receiver` belongs to an unrelated package; a line that named it ran a stranger's code."""

from __future__ import annotations

import re
import shlex
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parent.parent
NAME = canonicalize_name(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["name"])
INSTALL = re.compile(r"(?:pip3?|uv pip|uv|poetry|pipx)\s+(?:install|add)\s+([^`\n]+)")


def targets(line: str) -> list[str]:
    """What an install command installs: its arguments but options and their values."""
    try:
        words = shlex.split(line, comments=True)
    except ValueError:
        words = line.split()
    found, skip = [], False
    for word in words:
        if skip:
            skip = False
        elif word in {"-c", "-r", "--constraint", "--requirement", "--index-url", "-i"}:
            skip = True
        elif not word.startswith("-") or word == "-e":
            found.append(word)
    return [w for w in found if w != "-e"]


def ours(target: str) -> bool:
    """A path (./, /, ~, ../ or `.`), a git URL, or a requirement naming this distribution."""
    bare = target.split("[", 1)[0]
    if bare in {".", ".."} or bare.startswith(("/", "./", "../", "~")):
        return True
    if target.startswith("git+"):
        return True
    try:
        requirement = Requirement(target)
    except InvalidRequirement:
        return False
    return canonicalize_name(requirement.name) == NAME


def install_lines() -> list[tuple[str, str]]:
    files = [ROOT / "README.md", ROOT / ".env.example", *sorted((ROOT / "docs").rglob("*.md"))]
    return [
        (f"{path.relative_to(ROOT)}: {match.group(0)}", match.group(1))
        for path in files
        for match in INSTALL.finditer(path.read_text())
    ]


def test_the_docs_have_install_lines() -> None:
    assert len(install_lines()) >= 5


@pytest.mark.parametrize(("where", "arguments"), install_lines(), ids=lambda v: v[:60])
def test_every_install_line_installs_this_project(where: str, arguments: str) -> None:
    installed = targets(arguments)
    assert installed, where
    assert all(ours(t) for t in installed), where


@pytest.mark.parametrize(
    "line",
    ["pip install 'webhook-receiver[testing]'", "pip install webhooks", "uv add webhook_receiver"],
)
def test_a_line_naming_another_package_is_refused(line: str) -> None:
    (match,) = INSTALL.finditer(line)
    assert not all(ours(t) for t in targets(match.group(1)))


def test_the_distribution_is_not_the_registry_s_other_webhook_receiver() -> None:
    assert NAME not in {"webhook-receiver", "webhooks"}
