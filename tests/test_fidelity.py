"""Protocol fidelity to the benchmarks' released code (issue 15, items 7-11)."""

from __future__ import annotations

import json
import random
import re

import pytest

from eval.evidence import Region, present_fraction, recall_at
from eval.sample import Span
from tests.conftest import SHARED_DATA

# ---------------------------------------------------------------- 11: a repeated answer is one piece of evidence

def test_repeated_answer_is_one_any_of_evidence_group():
    from eval.benchmarks.lveval import answer_evidence

    needle = "The person who discovered the Velmora comet was Dr. Ansel Quirke."
    filler = "Nothing of note happened in the valley that year. " * 20
    context = filler + needle + "\n" + filler + needle + "\n" + filler
    spans, note = answer_evidence(context, "Who discovered the Velmora comet?", "Ansel Quirke", "en",
                                  needle=True, max_chars=600, exclude=[])
    assert note["answer_occurrences"] == 2 and len(spans) == 2
    first, second = spans
    # only the first occurrence survives (a cut, or a retrieved chunk): the evidence is there
    assert present_fraction(spans, [Region(first.start, first.end)], 0.6) == 1.0
    assert present_fraction(spans, [Region(second.start, second.end)], 0.6) == 1.0
    assert present_fraction(spans, [Region(0, 10)], 0.6) == 0.0
    assert recall_at(spans, [Region(0, 10), Region(second.start, second.end)], [1, 2], 0.6) == {"1": 0.0, "2": 1.0}


def test_any_of_groups_count_once_next_to_plain_spans():
    spans = [Span(0, 10, alt="a"), Span(50, 60, alt="a"), Span(100, 110)]
    assert present_fraction(spans, [Region(50, 60)], 0.6) == 0.5
    assert present_fraction(spans, [Region(50, 60), Region(100, 110)], 0.6) == 1.0
    assert present_fraction(spans, [Region(100, 110)], 0.6) == 0.5
    assert present_fraction(spans, [], 0.6) == 0.0


# ---------------------------------------------------------------- 9: Loong drops documents before its second shuffle

LOONG = SHARED_DATA / "loong"


class WordTokenizer:
    def offsets(self, text):
        return [m.span() for m in re.finditer(r"\S+", text)]

    def count(self, text):
        return len(self.offsets(text))


class WordGenerator:
    """A generator that only counts (one token per whitespace-separated word)."""

    model_id = "words"
    generates = False

    def __init__(self, window):
        self.context_window, self.tokenizer = window, WordTokenizer()

    def prompt_tokens(self, prompt):
        return self.tokenizer.count((prompt.system or "") + " " + prompt.user)

    def sampling_params(self):
        return {}


def _words(text):
    return len(re.findall(r"\S+", text))


@pytest.mark.skipif(not (LOONG / "loong.jsonl").is_file(), reason="../shared/data/loong is absent")
def test_loong_drops_documents_before_the_second_shuffle_as_the_released_step1():
    from eval.benchmarks import load_benchmark
    from eval.benchmarks.loong import _unique_ids
    from llm.prompt import Prompt
    from longctx.arm import LongContextArm, LongContextConfig

    samples = load_benchmark({"name": "loong", "path": str(LOONG), "domains": ["financial"],
                              "tasks": ["comparison"]}).samples
    sample = next(s for s in samples if s.metadata["shuffle_doc"] and len(s.documents) >= 4)
    pieces = {}  # doc id -> the released `content` (header, text, blank line)
    ordered = sorted(sample.documents, key=lambda d: d.start)
    for d, nxt in zip(ordered, ordered[1:] + [None], strict=True):
        pieces[d.doc_id] = sample.context[d.start: nxt.start if nxt else len(sample.context)]
    total = sum(_words(p) for p in pieces.values())
    tpl = sample.template
    overhead = WordGenerator(0).prompt_tokens(Prompt(user=tpl.render("", sample.question), system=tpl.system))
    window = overhead + tpl.max_new_tokens + 16 + total // 2  # about half of the documents fit
    budget = window - tpl.max_new_tokens - overhead - 16

    # the released get_doc_str, walking the loader's RNG over every item of the file (all fitting but this one)
    rng = random.Random(1000000007)
    expected = None
    for line in (LOONG / "loong.jsonl").read_text(encoding="utf-8").splitlines():
        item = json.loads(line)
        n, shuffle = len(item["doc"]), item.get("shuffle_doc", True)
        order = list(range(n))
        if shuffle and item["type"] == "financial":
            rng.shuffle(order)
        if item["id"] == sample.metadata["id"]:
            ids = _unique_ids(sample.metadata["docs"])
            kept, used = [], 0
            for i in order:  # drop after the first shuffle ...
                n_tokens = _words(pieces[ids[i]])
                if used + n_tokens <= budget:
                    kept.append(ids[i])
                    used += n_tokens
            if shuffle:
                rng.shuffle(kept)  # ... then shuffle what is kept
            expected = "".join(pieces[i] for i in kept)
            break
        if shuffle:
            rng.shuffle(order)
    assert expected is not None and 0 < len(expected) < len(sample.context)

    arm = LongContextArm(WordGenerator(window), LongContextConfig())
    prompt = arm.build(sample)
    assert prompt.meta["truncated"]
    assert prompt.user == tpl.render(expected, sample.question)


# ---------------------------------------------------------------- 8: LooGLE's generation settings

def test_loogle_templates_say_raw_prompt_and_repetition_penalty_2():
    import eval.benchmarks.loogle as loogle
    from eval.benchmarks.loogle import TEMPLATES

    for tpl in TEMPLATES.values():
        assert tpl.chat is False and tpl.repetition_penalty == 2.0
    assert "repetition_penalty" in loogle.__doc__ and "no chat template" in loogle.__doc__


def test_arm_prompts_carry_the_templates_generation_settings():
    from dataclasses import replace

    from eval.benchmarks.loogle import TEMPLATES
    from eval.benchmarks.synthetic import make_haystack
    from longctx.arm import LongContextArm, LongContextConfig

    s = replace(make_haystack(seed=0, language="en", tokens=300, n_questions=1)[0], template=TEMPLATES["shortdep_qa"])
    p = LongContextArm(WordGenerator(4000), LongContextConfig()).build(s)
    assert p.chat is False and p.repetition_penalty == 2.0


def test_response_cache_key_includes_chat_and_repetition_penalty():
    from llm.cache import response_key
    from llm.prompt import Prompt

    plain = Prompt(user="Q?", max_new_tokens=8)
    keys = {response_key("m", plain, {}), response_key("m", Prompt(user="Q?", max_new_tokens=8, chat=False), {}),
            response_key("m", Prompt(user="Q?", max_new_tokens=8, repetition_penalty=2.0), {})}
    assert len(keys) == 3


def test_transformers_backend_raw_prompt_and_repetition_penalty(tiny_generator):
    """Against transformers' own `generate` on the same weights (the tiny random-weight Llama with SmolLM2's
    tokenizer: the backend's prompt handling and penalty are what is compared, not what the model says)."""
    import torch

    generator = tiny_generator
    from llm.prompt import Prompt

    text = ("Please answer the question based on the long texts below. \nThe sky is blue. The sky is blue.\n"
            "Question: What colour is the sky?\nAnswer: ")
    raw = Prompt(user=text, max_new_tokens=12, chat=False, repetition_penalty=2.0)
    chat = Prompt(user=text, max_new_tokens=12)
    hf_tok = generator._hf_tok
    ids = hf_tok(text, add_special_tokens=True, return_tensors="pt")["input_ids"]
    assert generator.prompt_tokens(raw) == ids.shape[1] < generator.prompt_tokens(chat)
    with torch.inference_mode():
        out = generator.model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=12, do_sample=False,
                                       repetition_penalty=2.0, pad_token_id=hf_tok.pad_token_id or hf_tok.eos_token_id)
    expected = hf_tok.decode(out[0, ids.shape[1]:], skip_special_tokens=True).strip()
    assert generator.generate([raw])[0].text == expected
    # two questions sharing the prefix: the shared-prefix path honours the penalty too
    other = Prompt(user=text.replace("What colour", "Which colour"), max_new_tokens=12, chat=False,
                   repetition_penalty=2.0, prefix_chars=text.index("\nQuestion"))
    raw.prefix_chars = text.index("\nQuestion")
    assert generator.generate([raw, other])[0].text == expected


def test_openai_backend_sends_a_raw_prompt_as_the_system_message(monkeypatch):
    from llm.openai_backend import OpenAICompatGenerator
    from llm.prompt import Prompt

    monkeypatch.setenv("RAGLC_TEST_LLM_KEY", "sk-test")
    gen = OpenAICompatGenerator(model="bundled:smollm2", base_url="http://127.0.0.1:9/v1",
                                api_key_env="RAGLC_TEST_LLM_KEY", tokenizer="bundled:smollm2", context_window=8192)
    body = gen.request_body(Prompt(user="Summarise: ...", chat=False, repetition_penalty=2.0))
    assert body["messages"] == [{"role": "system", "content": "Summarise: ..."}]
    assert body["repetition_penalty"] == 2.0  # an OpenAI-compatible server (vLLM) takes it
    assert gen.request_body(Prompt(user="x"))["messages"] == [{"role": "user", "content": "x"}]


# ---------------------------------------------------------------- 7: LV-Eval cuts the whole prompt;
# one cut per document

def _lveval_sample(question, n_words=3000, dataset="factrecall_en", sid="0"):
    from eval.benchmarks.lveval import TEMPLATES
    from eval.sample import Sample

    context = " ".join(f"w{i}" for i in range(n_words))
    return Sample(id=f"lveval/{dataset}_16k/{sid}", benchmark="lveval", task=dataset, language="en", length_level="16k",
                  context=context, question=question, answers=["x"], template=TEMPLATES[dataset],
                  metric="qa_f1", group="lveval/doc")


def _token_spans(text):
    return WordTokenizer().offsets(text)


@pytest.mark.parametrize("reserve", [500, 700])
def test_lveval_cuts_the_whole_prompt_in_the_middle_to_window_minus_reserve(reserve):
    """utils.truncate_prompt: the formatted prompt's tokens, first and last int(max_length/2) kept,
    max_length = the window less what is reserved (the CLI's 15,500 for a 16k model)."""
    from longctx.arm import LongContextArm, LongContextConfig

    s = _lveval_sample("Who is the person who discovered the comet?")
    assert s.template.truncation == "prompt_middle"
    window = 2500
    arm = LongContextArm(WordGenerator(window), LongContextConfig(reserve_tokens=reserve))
    p = arm.build(s)
    head, tail = s.template.parts()
    head_n, tail_n = len(_token_spans(head)), len(_token_spans(tail.replace("{question}", s.question)))
    half = (window - reserve) // 2
    offsets = _token_spans(s.context)
    keep_head, keep_tail = half - head_n, half - tail_n
    assert p.meta["truncated"] and p.meta["kept_spans"] == [(0, offsets[keep_head - 1][1]),
                                                            (offsets[-keep_tail][0], len(s.context))]
    assert p.meta["context_tokens"] == keep_head + keep_tail
    # nothing cut when the whole prompt fits
    short = _lveval_sample(s.question, n_words=window - reserve - head_n - tail_n)
    assert not arm.build(short).meta["truncated"]


@pytest.mark.parametrize("policy", [None, "middle", "head", "tail"])
def test_questions_over_one_document_share_one_cut(policy):
    from experiments.arms.base import answer_with_prompts
    from longctx.arm import LongContextArm, LongContextConfig

    short = _lveval_sample("Who?", sid="0")
    long_q = _lveval_sample("Who is the person who discovered the comet that passed near the valley in the old "
                            "records of the observatory?", sid="1")
    arm = LongContextArm(WordGenerator(2500), LongContextConfig(truncation=policy))
    answers = answer_with_prompts(arm, WordGenerator(2500), [short, long_q])
    a, b = (x.meta for x in answers)
    assert a["truncated"] and a["kept_spans"] == b["kept_spans"]
    prompts = [arm.build(x) for x in (short, long_q)]  # after prepare: the group's cut
    assert prompts[0].user[: prompts[0].prefix_chars] == prompts[1].user[: prompts[1].prefix_chars]
    # the cut fits the longest question: it is what that question gets on its own
    alone = LongContextArm(WordGenerator(2500), LongContextConfig(truncation=policy)).build(long_q)
    assert alone.meta["kept_spans"] == b["kept_spans"]


def test_a_resumed_group_keeps_the_cut_of_the_whole_group(tmp_path):
    """A run interrupted after the longest question answers the rest with the same cut as an uninterrupted run."""
    from experiments.records import RecordStore
    from experiments.run import run_samples
    from longctx.arm import LongContextArm, LongContextConfig

    short = _lveval_sample("Who?", sid="0")
    long_q = _lveval_sample("Who is the person who discovered the comet that passed near the valley in the old "
                            "records of the observatory?", sid="1")
    knobs = {"arm": "longctx"}

    def run(store_path, samples):
        arm = LongContextArm(WordGenerator(2500), LongContextConfig(truncation="middle"))
        return run_samples(samples, arm, WordGenerator(2500), RecordStore(store_path), knobs, "h", progress=False)

    whole = {r["id"]: r for r in run(tmp_path / "whole.jsonl", [short, long_q])}
    run(tmp_path / "resumed.jsonl", [long_q])  # interrupted after the longest question
    resumed = {r["id"]: r for r in run(tmp_path / "resumed.jsonl", [short, long_q])}
    assert resumed[short.id]["kept_spans"] == whole[short.id]["kept_spans"] == whole[long_q.id]["kept_spans"]
    assert resumed[short.id]["context_tokens"] == whole[short.id]["context_tokens"]


def test_loogle_evidence_found_verbatim_twice_is_one_any_of_group(tmp_path):
    from eval.benchmarks import load_benchmark

    fact = "The lighthouse keeper logged the storm at dawn."
    doc = "Intro text about the coast. " * 5 + fact + " Middle text about ships. " * 10 + fact + " Closing words."
    qa = [{"Q": "When was the storm logged?", "A": "At dawn", "S": fact}]
    folder = tmp_path / "loogle"
    folder.mkdir()
    (folder / "shortdep_qa.jsonl").write_text(json.dumps({"input": doc, "title": "T", "qa_pairs": repr(qa),
                                                          "output": "none"}) + "\n", encoding="utf-8")
    s = load_benchmark({"name": "loogle", "path": str(folder)}).samples[0]
    assert [doc[e.start:e.end] for e in s.evidence] == [fact, fact]
    second = s.evidence[1]
    assert present_fraction(s.evidence, [Region(second.start, second.end)], 0.6) == 1.0
