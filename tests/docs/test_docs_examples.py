"""Every Python block of the Markdown pages runs, page by page in order, and prints what the page shows.

The harness (``tests/support/harness/docs_blocks.py`` reads the pages, ``tests/support/harness/docs_runner.py`` runs them; the
conventions are in docs/extending.md, "Code blocks in the docs"): one test per collected block,
named ``page:line lang``. ``python`` and ``pycon`` blocks run in one namespace per page, in a
temporary directory that sees the repository's top-level entries; an ``output`` block after a
``python`` block is compared with what it printed; a ``python-signature`` listing is not run but
checked against the code's signatures. Pages: README.md and every ``*.md`` under docs/, examples/
and benchmarks/ (a new page or block is collected without a change here).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from docs_blocks import Block, read_blocks
from docs_runner import BlockResult, run_page

ROOT = Path(__file__).resolve().parents[2]


def doc_pages(root: Path = ROOT) -> list[Path]:
    """README.md and the Markdown pages under docs/, examples/ and benchmarks/, sorted."""
    pages = [root / "README.md"]
    for folder in ("docs", "examples", "benchmarks"):
        pages += sorted((root / folder).rglob("*.md"))
    return [p for p in pages if p.is_file()]


BLOCKS: list[Block] = [b for page in doc_pages() for b in read_blocks(page, ROOT)]


@pytest.fixture(scope="module")
def page_results() -> dict[str, list[BlockResult]]:
    """Each page's block results, computed (one process per page) when a block of that page is first asked for."""
    return {}


@pytest.mark.parametrize("block", BLOCKS, ids=[f"{b.id} {b.lang}" for b in BLOCKS])
def test_doc_block(block: Block, page_results: dict[str, list[BlockResult]]) -> None:
    blocks = [b for b in BLOCKS if b.page == block.page]
    if block.page not in page_results:
        page_results[block.page] = run_page(ROOT, block.page, blocks)
    result = page_results[block.page][blocks.index(block)]
    if result.status == "skipped":
        pytest.skip(result.message)
    if result.status == "failed":
        pytest.fail(result.message, pytrace=False)
