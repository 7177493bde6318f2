"""Evidence alignment: exact, token-exact and fuzzy spans with their quality."""

from __future__ import annotations

import random

from eval.align import TokenIndex, align, align_all, tokenize

TEXT = (
    "The harbour of Veltra was rebuilt in 1822 after the great fire. Merchants from three valleys came to trade.\n"
    "The mayor, Orsa Kell, ordered a new granary; it burned down twice before 1850. "
    "Later the town became famous for its glass beads, exported as far as the southern isles."
)


def test_exact_substring():
    a = align("Merchants from three valleys came to trade.", TEXT)
    assert a.method == "exact" and a.quality == 1.0
    assert TEXT[a.start:a.end] == "Merchants from three valleys came to trade."
    assert align("  Merchants from three valleys  ", TEXT).method == "exact"  # surrounding space stripped


def test_token_exact_ignores_case_punctuation_and_line_breaks():
    a = align("trade the MAYOR orsa kell ordered a new granary", TEXT)
    assert a.method == "tokens" and a.quality == 1.0
    assert TEXT[a.start:a.end] == "trade.\nThe mayor, Orsa Kell, ordered a new granary"


def test_fuzzy_alignment_reports_share_of_tokens_matched():
    ev = "The mayor Orsa Kell ordered a large new granary and it burned down twice before 1850"
    a = align(ev, TEXT)
    assert a.method == "fuzzy"
    n = len(tokenize(ev)[0])
    assert a.quality == round((n - 2) / n, 4)  # 'large' and 'and' are not in the text
    assert TEXT[a.start:a.end] == "The mayor, Orsa Kell, ordered a new granary; it burned down twice before 1850"


def test_fuzzy_span_does_not_reach_for_isolated_common_words():
    ev = "the town became famous for its glass beads"
    a = align(ev + " the", TEXT)  # a trailing stray word
    assert TEXT[a.start:a.end].startswith("the town became famous for its glass beads")
    assert a.end < len(TEXT) - 10


def test_nothing_to_align():
    assert align("", TEXT) is None
    assert align("   ", TEXT) is None
    assert align("quantum chromodynamics", TEXT) is None
    assert align("!!!", TEXT) is None


def test_chinese_characters_are_tokens():
    text = "柏岚镇最主要的出口货物是紫陶罐。来到柏岚镇的旅人常常谈起那座古老的钟楼。"
    a = align("柏岚镇最主要的出口货物是紫陶罐", text)
    assert a.method == "exact"
    b = align("柏岚镇主要的出口货物是紫陶罐", text)  # one character missing from the evidence
    assert b.method == "tokens" or b.quality == 1.0
    c = align("柏岚镇最主要的进口货物是紫陶罐", text)  # one character changed
    assert c.method == "fuzzy" and 0.8 < c.quality < 1.0 and text[c.start:c.end].startswith("柏岚镇最主要的")


def test_index_reuse_and_align_all_threshold():
    index = TokenIndex(TEXT)
    kept, dropped = align_all(["Merchants from three valleys came to trade.",
                               "The mayor Orsa Kell ordered a large new granary and it burned down twice before 1850",
                               "nothing of this is there at all", ""], index, threshold=0.85)
    assert [a.method for a in kept] == ["exact", "fuzzy"] and kept[1].quality == 0.875
    assert [d[0] for d in dropped] == ["nothing of this is there at all"] and dropped[0][1] < 0.5
    kept, dropped = align_all(["The mayor Orsa Kell ordered a large new granary and it burned down twice before 1850"],
                              index, threshold=0.9)
    assert kept == [] and dropped[0][1] == 0.875


def test_long_context_finds_the_right_place():
    rng = random.Random(0)
    words = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu".split()
    filler = " ".join(rng.choice(words) for _ in range(20_000))
    needle = "The lighthouse keeper Mira Ostrand logged 312 ships during the winter of 1791."
    text = filler[:50_000] + " " + needle + " " + filler[50_000:]
    a = align("lighthouse keeper Mira Ostrand logged about 312 ships in the winter of 1791", text)
    assert a.method == "fuzzy" and a.quality >= 0.8
    assert text[a.start:a.end] in needle and text[a.start:a.end].startswith("lighthouse keeper")
    assert text.index(needle) <= a.start < a.end <= text.index(needle) + len(needle)
