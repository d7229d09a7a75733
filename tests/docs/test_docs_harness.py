"""The docs harness itself (tests/support/harness/docs_blocks.py, tests/support/harness/docs_runner.py): it fails every way a page can be wrong.

Synthetic pages in a temporary "repository": a name never imported, printed output that differs from
the page, a signature listing that disagrees with the code, a module the page never creates, a
test in a file block that fails, a doctest session that fails, a process that dies, a missing
optional library (skipped locally, a failure under CI=true); and what must pass: blocks sharing
names in page order, an indented fence, ``...`` in an output block, a file block imported later.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from docs_blocks import DocsError, read_blocks
from docs_runner import compare_output, run_page

F = "```"

GOOD = f"""# A page

Prose, then a block that defines names for the next ones.

{F}python
import numpy as np
values = np.arange(3)
{F}

1. A list item whose block is indented:

   {F}python
   total = int(values.sum())
   print("total", total, "of", values)
   {F}
   {F}output
   total 3 of [0 1 2]
   {F}

{F}python
print("a line that varies: 12345 ms")
{F}

{F}output
a line that varies: ... ms
{F}

{F}python-signature
textwrap.indent(text, prefix, predicate=None)       # a comment
json.loads(s, *, cls=None, object_hook=None, parse_float=None,
           parse_int=None, parse_constant=None, object_pairs_hook=None, **kw)
{F}

<!-- docs-test: file helper_mod.py -->
{F}python
def double(v):
    return 2 * v


def test_double():
    assert double(2) == 4
{F}

{F}python
from helper_mod import double
print(double(values).tolist())
{F}
{F}output
[0, 2, 4]
{F}

{F}pycon
>>> double(21)
42
{F}

<!-- docs-test: skip needs a GPU -->
{F}python
import cupy
{F}

{F}bash
this is never run
{F}
"""

BAD = f"""# A page with mistakes

{F}python
x = np.zeros(3)          # np never imported
{F}

{F}python
print("after the failure")
{F}
"""

WRONG_OUTPUT = f"""{F}python
print(1 + 1)
{F}
{F}output
3
{F}
"""

WRONG_SIGNATURE = f"""{F}python-signature
json.dumps(obj, indent=2)
json.loads(s, cls=None)
textwrap.indent(text, prefix, predicate=1)
textwrap.not_there(text)
textwrap.indent
{F}
"""

NEVER_CREATED = f"""{F}python
from my_engine import Engine   # the page never writes my_engine.py
{F}
"""

FAILING_FILE_TEST = f"""<!-- docs-test: file test_thing.py -->
{F}python
def test_thing():
    assert 1 == 2
{F}
"""

FAILING_DOCTEST = f"""{F}pycon
>>> 6 * 7
41
{F}
"""

DIES = f"""{F}python
import os
os.abort()
{F}

{F}python
print("never")
{F}
"""

OPTIONAL = f"""{F}python
import an_optional_library_not_installed
{F}
"""


def _run(tmp_path: Path, text: str, name: str = "page.md"):
    (tmp_path / name).write_text(text)
    blocks = read_blocks(tmp_path / name, tmp_path)
    return blocks, run_page(tmp_path, name, blocks, timeout=120)


def test_a_good_page_passes_block_by_block(tmp_path):
    blocks, results = _run(tmp_path, GOOD)
    assert [b.lang for b in blocks] == ["python", "python", "python", "python-signature", "python", "python", "pycon", "python"]
    assert [b.line for b in blocks][:2] == [6, 13]  # the first source line of each block
    assert blocks[1].output == "total 3 of [0 1 2]\n" and blocks[4].file == "helper_mod.py" and blocks[7].skip == "needs a GPU"
    assert [r.status for r in results] == ["passed"] * 7 + ["skipped"], results
    assert "needs a GPU" in results[7].message
    assert not (tmp_path / "helper_mod.py").exists()  # files a page writes stay in its own directory


def test_each_kind_of_mistake_fails_at_its_line(tmp_path):
    _, results = _run(tmp_path, BAD)
    assert results[0].status == "failed" and "page.md:4" in results[0].message and "NameError: name 'np'" in results[0].message
    assert results[1].status == "failed" and "not run: the earlier block page.md:4" in results[1].message

    _, (result,) = _run(tmp_path, WRONG_OUTPUT)
    assert result.status == "failed" and "page:    3" in result.message and "printed: 2" in result.message

    _, (result,) = _run(tmp_path, WRONG_SIGNATURE)
    assert result.status == "failed"
    assert "json.dumps(obj, indent=2)': the code has (obj, *, skipkeys" in result.message
    assert "json.loads(s, cls=None)': the code has (s, *, cls" in result.message  # keyword-only is part of the signature
    assert "predicate defaults to None in the code, not 1" in result.message
    assert "textwrap.not_there(text)': module 'textwrap' has no attribute 'not_there'" in result.message
    assert "'textwrap.indent': a listing line is name(parameters)" in result.message

    _, (result,) = _run(tmp_path, NEVER_CREATED)
    assert result.status == "failed" and "No module named 'my_engine'" in result.message

    _, (result,) = _run(tmp_path, FAILING_FILE_TEST)
    assert result.status == "failed" and "page.md" in result.message and "assert 1 == 2" in result.message

    _, (result,) = _run(tmp_path, FAILING_DOCTEST)
    assert result.status == "failed" and "Expected:\n    41\nGot:\n    42" in result.message


def test_a_dying_process_is_reported_at_its_block(tmp_path):
    _, results = _run(tmp_path, DIES)
    assert results[0].status == "failed" and "page.md:2: the page's process ended while running this block" in results[0].message
    assert results[1].status == "failed" and "not run" in results[1].message


def test_missing_optional_library_skips_locally_fails_in_ci(tmp_path, monkeypatch):
    monkeypatch.setenv("DOCS_TEST_OPTIONAL", "an_optional_library_not_installed")
    monkeypatch.delenv("CI", raising=False)
    _, (local,) = _run(tmp_path, OPTIONAL)
    assert local.status == "skipped" and "needs an_optional_library_not_installed" in local.message
    monkeypatch.setenv("CI", "true")
    _, (ci,) = _run(tmp_path, OPTIONAL)
    assert ci.status == "failed" and "No module named 'an_optional_library_not_installed'" in ci.message
    monkeypatch.delenv("DOCS_TEST_OPTIONAL")
    monkeypatch.delenv("CI")
    _, (unknown,) = _run(tmp_path, OPTIONAL)  # a module that is no optional library: a mistake of the page, even locally
    assert unknown.status == "failed"


def test_blocks_after_a_missing_library_are_skipped_too(tmp_path, monkeypatch):
    """A later block uses what the skipped block would have defined: skipped with it locally (it
    would fail with a NameError in a venv without the extra), run and failing in CI."""
    page = f"{F}python\nimport an_optional_library_not_installed\nvalue = 1\n{F}\n\n{F}python\nprint(value)\n{F}\n"
    monkeypatch.setenv("DOCS_TEST_OPTIONAL", "an_optional_library_not_installed")
    monkeypatch.delenv("CI", raising=False)
    _, (first, second) = _run(tmp_path, page)
    assert first.status == "skipped" and second.status == "skipped"
    assert "an earlier block of this page needs an_optional_library_not_installed" in second.message


@pytest.mark.parametrize("text, message", [
    (f"{F}python\nprint(1)\n", "is never closed"),
    (f"{F}output\n1\n{F}\n", "must follow a ```python block"),
    (f"{F}bash\nls\n{F}\n{F}output\n1\n{F}\n", "must follow a ```python block"),
    (f"<!-- docs-test: file x.sh -->\n{F}bash\nls\n{F}\n", "directive on a ```bash block"),
    (f"<!-- docs-test: run faster -->\n{F}python\n1\n{F}\n", "a directive is <!-- docs-test: file NAME -->"),
])
def test_malformed_pages_are_refused(tmp_path, text, message):
    (tmp_path / "page.md").write_text(text)
    with pytest.raises(DocsError, match=message):
        read_blocks(tmp_path / "page.md", tmp_path)


def test_output_comparison():
    assert compare_output("a\nb ... c\n", "a  \nb 1 2 3 c\n\n") is None
    assert compare_output("a\n", "a\nb\n") is not None
    assert compare_output("1.0\n", "1.00\n") is not None
