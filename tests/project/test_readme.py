"""The README and docs/: a README a newcomer finishes, links that lead somewhere, and the
manifest guide's example a manifest rooflint accepts."""

import re
from pathlib import Path

import pytest

from rooflint.formats.family_job import resolve
from rooflint.formats.manifest import load_manifest
from rooflint.formats.jobs import TimingJob
from rooflint.common.paths import REPO_ROOT

README = REPO_ROOT / "README.md"
DOCS = REPO_ROOT / "docs"
PAGES = [README, *sorted(DOCS.rglob("*.md"))]
README_MOST = 15_000            # characters: read in minutes, the rest is in docs/


def test_readme_manifest_example_loads(tmp_path):
    """The first YAML block of the manifest guide is the saxpy family, and it loads."""
    text = (DOCS / "manifest.md").read_text()
    yaml_block = re.search(r"```yaml\n(.*?)```", text, re.S).group(1)
    (tmp_path / "kernel.yaml").write_text(yaml_block)
    (tmp_path / "saxpy.cu").write_text("// placeholder\n")
    family = resolve(load_manifest(tmp_path), {"N": 1024}, {"num_sms": 132}, TimingJob())
    assert family.models["simple"].bytes == 12 * 1024
    assert family.job.variants[0].launches[0].grid == [4]


def test_the_readme_is_short():
    """What it is, install, the first run, the first profile, where to go next: no more."""
    assert len(README.read_text()) <= README_MOST


def _code_out(text: str) -> str:
    """The text without its fenced code blocks."""
    return re.sub(r"^ *```.*?^ *```", "", text, flags=re.S | re.M)


def _prose(text: str) -> str:
    """The text with fenced code blocks and inline code taken out: links there are code."""
    return re.sub(r"`[^`\n]*`", "", _code_out(text))


def _links(text: str) -> list[str]:
    return re.findall(r"\]\(([^)\s]+)\)", _prose(text))


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation but - and _ dropped, spaces
    to hyphens."""
    heading = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)          # a link's text
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """Every anchor a page's headings give, a repeated heading numbered as GitHub numbers it."""
    seen: dict[str, int] = {}
    found = set()
    for heading in re.findall(r"^#{1,6} +(.+?) *#*$", _code_out(page.read_text()), re.M):
        base = slug(heading)
        found.add(base if base not in seen else f"{base}-{seen[base]}")
        seen[base] = seen.get(base, 0) + 1
    return found


def test_slugs_are_githubs():
    assert slug("Python variants: Triton, PyTorch, CuPy") == "python-variants-triton-pytorch-cupy"
    assert slug("v6: following rooflint's moves from v4 to PyTorch's SDPA") == \
        "v6-following-rooflints-moves-from-v4-to-pytorchs-sdpa"
    assert slug("`rooflint run --source`") == "rooflint-run---source"
    assert slug("A walk past register blocking: SGEMM from 49 % to 69 % of the FP32 roof") == \
        "a-walk-past-register-blocking-sgemm-from-49--to-69--of-the-fp32-roof"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO_ROOT)))
def test_every_relative_link_leads_somewhere(page):
    """Each relative link names a file or folder of the repository, and an anchor, if it
    has one, is a heading of the page it names."""
    root = REPO_ROOT.resolve()
    broken = []
    for link in _links(page.read_text()):
        if re.match(r"[a-z][a-z0-9+.-]*:", link):            # https:, mailto:
            continue
        path, _, anchor = link.partition("#")
        target = (page.parent / path).resolve() if path else page.resolve()
        if root != target and root not in target.parents:
            broken.append(f"{link}: outside the repository")
        elif not target.exists():
            broken.append(f"{link}: no {path}")
        elif anchor and (target.suffix != ".md" or anchor not in anchors(target)):
            broken.append(f"{link}: no heading #{anchor} in {target.relative_to(root)}")
    assert not broken, "\n".join(broken)


def test_every_docs_page_is_in_the_index():
    """docs/README.md links every page of docs/, so none is found only by chance."""
    index = DOCS / "README.md"
    linked = {(index.parent / link.partition("#")[0]).resolve()
              for link in _links(index.read_text())}
    pages = {p.resolve() for p in DOCS.rglob("*.md")} - {index.resolve()}
    assert not pages - linked, sorted(str(p.relative_to(REPO_ROOT)) for p in pages - linked)
