"""The README's manifest example must stay a manifest rooflint accepts."""

import re

from rooflint.formats.family_job import resolve
from rooflint.formats.manifest import load_manifest
from rooflint.formats.jobs import TimingJob
from rooflint.common.paths import REPO_ROOT


def test_readme_manifest_example_loads(tmp_path):
    text = (REPO_ROOT / "README.md").read_text()
    yaml_block = re.search(r"```yaml\n(.*?)```", text, re.S).group(1)
    (tmp_path / "kernel.yaml").write_text(yaml_block)
    (tmp_path / "saxpy.cu").write_text("// placeholder\n")
    family = resolve(load_manifest(tmp_path), {"N": 1024}, {"num_sms": 132}, TimingJob())
    assert family.models["simple"].bytes == 12 * 1024
    assert family.job.variants[0].launches[0].grid == [4]
