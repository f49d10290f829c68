"""A tour in the docs as one bash script: the ```bash blocks between its markers, in order.

The README's five-minute tour (`<!-- tour:start -->` … `<!-- tour:end -->`) and the webhook
tour of docs/webhooks.md (`webhook-tour`) are run as written against a live service by
`tests/test_tour.py`, and the README's by CI's first-run check too, so the docs cannot drift
from the product:

    python tests/readme_tour.py README.md > tour.sh
"""

from __future__ import annotations

import re
import sys
from pathlib import Path


def tour_blocks(text: str, name: str = "tour") -> list[str]:
    """The bash blocks between ``<!-- {name}:start -->`` and ``<!-- {name}:end -->``."""
    section = text.split(f"<!-- {name}:start -->", 1)[1].split(f"<!-- {name}:end -->", 1)[0]
    return re.findall(r"^```bash\n(.*?)^```", section, flags=re.S | re.M)


def tour_script(*tours: tuple[str, str]) -> str:
    """One script of the (text, marker name) tours in order; it stops at the first command
    that fails."""
    return "set -euo pipefail\n" + "\n".join(
        block for text, name in tours for block in tour_blocks(text, name)
    )


if __name__ == "__main__":
    sys.stdout.write(tour_script((Path(sys.argv[1]).read_text(), "tour")))
