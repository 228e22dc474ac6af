"""Snippets: made from the words in view (the first hit found by ``str.find`` in ASCII text, the words
before it read back from it), they must say exactly what marking every word of the whole text says."""

from __future__ import annotations

import html
import random
import unicodedata
from collections.abc import Sequence

from iris.app.persistence.search_text import PREFIX_FROM, SNIPPET_LEAD, SNIPPET_WORDS, WORD, snippet, words


def _folded(word: str) -> str:
    decomposed = unicodedata.normalize("NFKD", word.casefold())
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def reference_snippet(body: str, terms: Sequence[str]) -> str:
    """The definition, word by word over the whole text: fold every word (case, compatibility forms,
    accents), mark those starting with a term (or equal to a one-character term), show the words from
    six before the first mark, 24 in all."""
    folded = [_folded(t) for t in terms]

    def hit(token: str) -> bool:
        f = _folded(token)
        return any(f.startswith(t) if len(t) >= PREFIX_FROM else f == t for t in folded)

    tokens = list(WORD.finditer(body))
    first = next((i for i, token in enumerate(tokens) if hit(token.group())), 0)
    start = max(0, first - SNIPPET_LEAD)
    shown = tokens[start : start + SNIPPET_WORDS]
    if not shown:
        return html.escape(body[:200])
    before = body[tokens[start - 1].end() if start > 0 else 0 : shown[0].start()].lstrip()
    out = ["…" if start > 0 else "", html.escape(before)]
    for index, token in enumerate(shown):
        word = html.escape(token.group())
        out.append(f"<mark>{word}</mark>" if hit(token.group()) else word)
        end = shown[index + 1].start() if index + 1 < len(shown) else token.end()
        out.append(html.escape(body[token.end() : end]))
    out.append("…" if start + SNIPPET_WORDS < len(tokens) else html.escape(body[shown[-1].end() :].rstrip()))
    return "".join(out)


ASCII = list("abcdeKkSs_<>&\"' .,!-\n\t0123456789")
OTHERS = ["é", "É", "ﬁ", "İ", "Ω", "e\u0301", "中", "K", "ß", "⑴"]


def test_snippets_say_what_marking_every_word_says() -> None:
    rng = random.Random(24)
    for alphabet in (ASCII, ASCII + OTHERS):
        for _ in range(4_000):
            body = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 120)))
            if rng.random() < 0.3:
                body = "  " + " ".join(["kab"] * rng.randint(0, 40)) + body
            terms = words("".join(rng.choice(alphabet) for _ in range(rng.randint(1, 6))))
            terms += ["ka"] if rng.random() < 0.3 else []
            assert snippet(body, terms) == reference_snippet(body, terms), (body, terms)


def test_a_hit_deep_in_a_long_text() -> None:
    for suffix in ("", " café"):  # ASCII text, and text that is not
        body = " ".join(f"filler{i}" for i in range(20_000)) + " the Bilby, at last" + suffix
        shown = snippet(body, ["bilby"])
        assert shown == reference_snippet(body, ["bilby"])
        assert shown.startswith("…filler19995 ")
        assert "filler19999 the <mark>Bilby</mark>, at last" in shown


def test_words_match_at_their_start_only_and_one_letter_whole() -> None:
    assert snippet("translate late LATER", ["late"]) == "translate <mark>late</mark> <mark>LATER</mark>"
    assert snippet("a ab b", ["a"]) == "<mark>a</mark> ab b"
    assert snippet("Ça va, ÇA VA", ["ca"]) == "<mark>Ça</mark> va, <mark>ÇA</mark> VA"
    assert snippet("x &lt; <b>", ["lt"]) == "x &amp;<mark>lt</mark>; &lt;b&gt;"
