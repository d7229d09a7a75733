"""Every reference a repository file makes to another file resolves inside the repository.

The contract (docs/spec.md) and the architecture (docs/design.md) live in the repo; a clone,
a wheel or a fork must be able to follow every pointer. Checked over every tracked text file:

- no pointer leaves the repository (``../`` paths above the root, the old team-folder names
  ``ROPE-SPEC.md`` / ``DESIGN.md``, absolute paths into a developer's machine);
- every Markdown link ``[text](target)`` that is not a URL or an anchor names an existing file
  (relative to the Markdown file);
- every repo path mentioned in prose or code (``docs/...``, ``roperef/...``, ``conformance/...``,
  ``tests/...``, ``benchmarks/...``, ``scripts/...``, ``examples/...``, ``golden/README.md``)
  names an existing file or directory (relative to the root).
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TEXT_SUFFIXES = {".py", ".md", ".txt", ".toml", ".sh", ".json", ".c", ".cfg", ".ini", ".yml", ".yaml", ""}
OUTSIDE = re.compile(r"ROPE-SPEC\.md|\bDESIGN\.md|\.\./shared\b|/work/(?:main|shared)\b")
MD_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
REPO_PATH = re.compile(
    r"(?<![\w./:@-])((?:docs|roperef|conformance|tests|benchmarks|scripts|examples)/[\w./*-]*[\w]"
    r"|golden/README\.md)"
)


def _tracked_text_files() -> list[Path]:
    out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True)
    if out.returncode != 0:
        pytest.skip("not a git checkout: nothing to enumerate")  # a wheel has no git metadata
    files = []
    for name in out.stdout.splitlines():
        path = ROOT / name
        if name.startswith("golden/") and name != "golden/README.md":
            continue  # generated data
        if path.suffix in TEXT_SUFFIXES and path.is_file() and path.name != "manifest.json":
            files.append(path)
    return files


def _exists(path: str) -> bool:
    """A mentioned repo path exists (also as a prefix of a glob or a module path written with dots);
    a placeholder in capitals (``xfail/NAME.txt``) stands for any file of that folder."""
    if re.search(r"/[A-Z][A-Z_]+(\.\w+)?$", path):
        return (ROOT / path.rsplit("/", 1)[0]).is_dir()
    if "*" in path:
        return any(ROOT.glob(path))
    clean = path.rstrip(".").split("{")[0].split("<")[0].rstrip("/")
    candidates = [clean, clean + ".py"]
    if clean.endswith((".py", ".md", ".txt", ".json", ".sh", ".c", ".toml")):
        candidates = [clean]
    return any((ROOT / c).exists() for c in candidates)


def test_no_file_points_outside_the_repository():
    offenders = []
    for path in _tracked_text_files():
        if path.name == "test_repo_references.py":
            continue
        for lineno, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            if OUTSIDE.search(line):
                offenders.append(f"{path.relative_to(ROOT)}:{lineno}: {line.strip()[:100]}")
    assert not offenders, "references outside the repository:\n" + "\n".join(offenders)


def test_markdown_links_resolve():
    broken = []
    for path in _tracked_text_files():
        if path.suffix != ".md":
            continue
        for lineno, line in enumerate(path.read_text().splitlines(), 1):
            for target in MD_LINK.findall(line):
                if re.match(r"^[a-z]+://|^#|^mailto:", target):
                    continue
                file_part = target.split("#")[0]
                if file_part and not (path.parent / file_part).exists():
                    broken.append(f"{path.relative_to(ROOT)}:{lineno}: {target}")
    assert not broken, "broken links:\n" + "\n".join(broken)


def test_mentioned_repo_paths_exist():
    missing = []
    for path in _tracked_text_files():
        if path.name == "test_repo_references.py" or path.suffix == ".json":
            continue  # JSON files are data (preset provenance names other repositories' paths)
        for lineno, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            for mention in REPO_PATH.findall(line):
                if not _exists(mention):
                    missing.append(f"{path.relative_to(ROOT)}:{lineno}: {mention}")
    assert not missing, "paths that do not exist:\n" + "\n".join(missing)
