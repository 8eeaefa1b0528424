"""The docs site: ``mkdocs build --strict`` passes with no warning, every page under docs/ is in the
nav, and every relative link of the docs and the README resolves (the README is read on GitHub,
where docs/ pages are plain files)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
_LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
_FENCE = re.compile(r"^(```|~~~).*?^\1", re.M | re.S)


def nav_pages(node: Any) -> list[str]:
    """Every page path named in a mkdocs ``nav`` (nested sections flattened)."""
    if isinstance(node, str):
        return [node]
    if isinstance(node, list):
        return [p for item in node for p in nav_pages(item)]
    if isinstance(node, dict):
        return [p for value in node.values() for p in nav_pages(value)]
    return []


def slug(heading: str) -> str:
    """The anchor of a heading, as GitHub and mkdocs' toc both make it for our headings."""
    text = re.sub(r"[`*]|<[^>]+>", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return re.sub(r"\s", "-", text)


def anchors(path: Path) -> set[str]:
    text = _FENCE.sub("", path.read_text(encoding="utf-8"))
    return {slug(m.group(1)) for m in re.finditer(r"^#{1,6}\s+(.+?)\s*#*\s*$", text, re.M)}


def test_site_builds_strict(tmp_path: Path) -> None:
    done = subprocess.run(
        # Not -q: it silences the warnings that --strict counts, and the build would pass.
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(tmp_path / "site")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        check=False,
    )
    output = done.stdout + done.stderr
    problems = [line for line in output.splitlines() if "WARNING" in line or "ERROR" in line]
    assert done.returncode == 0 and not problems, "mkdocs build --strict:\n" + output[-4000:]
    for page in DOCS.rglob("*.md"):
        relative = page.relative_to(DOCS).with_suffix("")
        folder = relative.parent if relative.name == "index" else relative
        built = tmp_path / "site" / folder / "index.html"
        assert built.is_file(), f"{page.relative_to(REPO)} was not built"


def test_every_page_is_in_the_nav() -> None:
    config = yaml.safe_load((REPO / "mkdocs.yml").read_text(encoding="utf-8"))
    assert config["theme"]["name"] == "material"
    listed = nav_pages(config["nav"])
    assert len(listed) == len(set(listed)), "a page is listed twice"
    pages = {str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md")}
    assert not pages - set(listed), f"pages missing from mkdocs.yml nav: {pages - set(listed)}"
    assert not set(listed) - pages, f"nav names missing pages: {set(listed) - pages}"
    validation = config["validation"]
    assert validation["links"]["not_found"] == "warn"  # so --strict fails on them
    assert validation["links"]["anchors"] == "warn"
    assert validation["nav"]["omitted_files"] == "warn"


def _relative_links(page: Path) -> list[str]:
    text = _FENCE.sub("", page.read_text(encoding="utf-8"))
    text = re.sub(r"`[^`\n]*`", "", text)  # inline code is not a link
    return [
        target
        for target in _LINK.findall(text)
        if not re.match(r"[a-z][a-z0-9+.-]*:", target)  # http:, https:, mailto: ...
    ]


@pytest.mark.parametrize(
    "page",
    [REPO / "README.md", *sorted(DOCS.rglob("*.md"))],
    ids=lambda p: str(p.relative_to(REPO)),
)
def test_relative_links_resolve(page: Path) -> None:
    broken = []
    for target in _relative_links(page):
        path, _, anchor = target.partition("#")
        where = (page.parent / path).resolve() if path else page
        if not where.exists():
            broken.append(f"{target}: {where} does not exist")
        elif anchor and where.suffix == ".md" and anchor not in anchors(where):
            broken.append(f"{target}: no heading with anchor #{anchor} in {where.name}")
    assert not broken, f"{page.relative_to(REPO)}:\n" + "\n".join(broken)


def test_slugs_match_the_headings_we_use() -> None:
    assert slug("`hindsight ingest`") == "hindsight-ingest"
    assert slug("Backup and restore") == "backup-and-restore"
    assert slug("`store_episode(trajectory)`") == "store_episodetrajectory"


def test_the_readme_lists_every_docs_page_and_every_example() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    linked = {target.split("#", 1)[0].rstrip("/") for target in _LINK.findall(readme)}
    pages = {str(p.relative_to(REPO)) for p in DOCS.rglob("*.md")}
    assert sorted(pages - linked) == []
    examples = {
        str(p.relative_to(REPO))
        for p in (REPO / "examples").iterdir()
        if not p.name.startswith((".", "_"))
    }
    assert sorted(examples - linked - {str(p.parent) for p in map(Path, linked)}) == []
