"""The v10 data waits in ``training/data/v10/``; ``wiring.patch`` moves it into training.

The patch lands with the model trained on it, so until then it must keep applying to the
tree as it is: a change to a file it touches shows here, not on the day v10 ships.
"""

from __future__ import annotations

import shutil
import subprocess

from .helpers import ROOT

PATCH = ROOT / "training" / "data" / "v10" / "wiring.patch"


def test_the_wiring_patch_still_applies_to_the_tree():
    git = shutil.which("git")
    assert git, "git is needed to check the patch"
    result = subprocess.run(
        [git, "apply", "--check", str(PATCH)], cwd=ROOT, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
