"""The README's five-minute tour as one bash script: its ```bash blocks, in order.

`tests/test_tour.py` and CI's first-run check (`.ci/first-run`) run it against a live
service, so the README cannot drift from the product:

    python tests/readme_tour.py README.md > tour.sh
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

START, END = "<!-- tour:start -->", "<!-- tour:end -->"


def tour_blocks(readme: str) -> list[str]:
    """The tour's bash blocks, as written."""
    section = readme.split(START, 1)[1].split(END, 1)[0]
    return re.findall(r"^```bash\n(.*?)^```", section, flags=re.S | re.M)


def tour_script(readme: str) -> str:
    """A script that stops at the first command that fails."""
    return "set -euo pipefail\n" + "\n".join(tour_blocks(readme))


if __name__ == "__main__":
    sys.stdout.write(tour_script(Path(sys.argv[1]).read_text()))
