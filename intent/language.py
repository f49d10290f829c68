"""The language check of a routed model: is a message (with its history) English?

py3langid's naive Bayes over byte n-grams, restricted to the languages the routed model
knows, reads a short message together with the turns before it: "la 1" alone could be Spanish
or Portuguese, after two Spanish turns it is Spanish. A longer message usually tells its
language alone; when the check is sure of it, the history is not read (about half the cost on
the field sets, the same routes). A message goes to the non-English route only when the check is
sure it is not English, so a short or misspelt English message ("whn dlvr", "order staus")
stays with the English model.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import cache

import numpy as np
from py3langid.langid import MODEL_FILE, LanguageIdentifier

from intent.text_format import ROLE_MARKERS, TextPair

ENGLISH = "en"
# Characters of the message, and of the history, the check reads: its cost grows with the
# text, and a few sentences tell a language as well as a whole email.
CHARS_READ = 200
# From this many characters a message the check is sure of is judged alone; a shorter one
# ("la 1", "ok gracias") is read together with the turns before it.
MESSAGE_ALONE_FROM = 40
# A history renders as "customer: ... | agent: ..."; the markers are English words.
_MARKERS = re.compile("|".join(re.escape(marker) for marker in ROLE_MARKERS.values()) + r"|\s\|\s")


@cache
def _identifier(languages: tuple[str, ...]) -> LanguageIdentifier:
    identifier = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
    identifier.set_languages(list(languages))
    return identifier


class LanguageCheck:
    """``english(pairs)``: which model inputs the English route takes."""

    def __init__(self, languages: Sequence[str], not_english_at: float) -> None:
        if ENGLISH not in languages:
            raise ValueError(f"the languages of a routed model include {ENGLISH!r}")
        if not 0.5 <= not_english_at < 1.0:
            raise ValueError("not_english_at is a probability in [0.5, 1)")
        self.languages = tuple(sorted(languages))
        self.not_english_at = not_english_at
        self._identifier = _identifier(self.languages)

    def not_english_probability(self, pair: TextPair) -> float:
        """P(not English) of a message, read together with its rendered history unless the
        message is long enough to tell alone and the check is sure of it."""
        first, second = pair
        alone = self._not_english(first[:CHARS_READ])
        sure = not 1.0 - self.not_english_at < alone < self.not_english_at
        if not second or (sure and len(first) >= MESSAGE_ALONE_FROM):
            return alone
        return self._not_english(f"{first[:CHARS_READ]} {_MARKERS.sub(' ', second[:CHARS_READ])}")

    def _not_english(self, text: str) -> float:
        if not any(character.isalpha() for character in text):
            return 0.0  # an order number or an emoji alone: nothing to tell a language by
        return 1.0 - dict(self._identifier.rank(text)).get(ENGLISH, 0.0)

    def english(self, pairs: Sequence[TextPair]) -> np.ndarray:
        """A boolean mask over ``pairs``: True where the English route takes the input."""
        return np.array(
            [self.not_english_probability(pair) < self.not_english_at for pair in pairs],
            dtype=bool,
        )
