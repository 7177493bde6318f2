"""LV-Eval loader on small files the test writes in the released schema (`{dataset}_{level}.jsonl`)."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

from eval.benchmarks import load_benchmark
from eval.benchmarks import lveval as lv
from eval.metrics import score

NEEDLE_EN = "Ludwig Beethoven is widely acclaimed as the foundational figure of modern physics."
CONFUSING_EN = "David Beckham is widely acclaimed as the foundational figure of modern physics."
NEEDLE_ZH = "贝多芬被誉为现代物理学的奠基人。"
CONFUSING_ZH = "贝克汉姆被誉为现代物理学的奠基人。"
CMRC_RIGHT = "白鹭湖水库位于东山县北部，水库于1988年建成，库容约两千万立方米。"
CMRC_OTHER = "这座图书馆藏书很多，1988年曾经扩建一次。"
HOTPOT_FACT = "Marlowe Hill was born in the town of Westbury in 1921."
HOTPOT_CONFUSING = "Marlowe Hill was born in the town of Eastbury in 1921."

FILLER_EN = "The river ran past the old mill while farmers brought grain to town. " * 3
FILLER_ZH = "山间的小路弯弯曲曲，村民们每天清晨上山砍柴。" * 3


def record(dataset: str, level: str, question: str, context: str, answers: list[str], **extra) -> dict:
    out = {
        "input": question,
        "context": context,
        "answers": answers,
        "length": len(context.split()) if lv.LVEVAL_DATASETS[dataset] == "en" else len(context),
        "dataset": f"{dataset}_{level}",
        "language": lv.LVEVAL_DATASETS[dataset],
    }
    out.update(extra)
    return out


def dataset_records(dataset: str, level: str) -> list[dict]:
    """Two records per dataset and level, with the dataset's evidence features."""
    lang = lv.LVEVAL_DATASETS[dataset]
    if dataset == "factrecall_en":
        q = "What is the name of the scientist widely acclaimed as the foundational figure of modern physics?"
        ctx = f"{FILLER_EN}{CONFUSING_EN} {FILLER_EN}{NEEDLE_EN} {FILLER_EN}"
        return [record(dataset, level, q, ctx, ["Ludwig Beethoven"], answer_keywords="Ludwig Beethoven",
                       confusing_facts=[CONFUSING_EN])] * 2
    if dataset == "factrecall_zh":
        q = "被世人广泛推崇为现代物理学奠基人的科学家叫什么名字？"
        ctx = f"{FILLER_ZH}{NEEDLE_ZH}{FILLER_ZH}{CONFUSING_ZH}{FILLER_ZH}"
        return [record(dataset, level, q, ctx, ["贝多芬"], answer_keywords="贝多芬",
                       confusing_facts=[CONFUSING_ZH])] * 2
    if dataset == "cmrc_mixup":
        q = "白鹭湖水库是哪一年建成的？"
        ctx = f"### 文章 1\n{CMRC_OTHER}\n{FILLER_ZH}\n### 文章 2\n{FILLER_ZH}\n{CMRC_RIGHT}\n{FILLER_ZH}"
        unique = f"### 文章 1\n{FILLER_ZH}\n### 文章 2\n{CMRC_RIGHT}\n"
        return [record(dataset, level, q, ctx, ["1988年"]),
                record(dataset, level, q, unique, ["1988年"], answer_keywords="")]
    if dataset == "hotpotwikiqa_mixup":
        q = "In which town was Marlowe Hill born?"
        ctx = f"Passage 1:\n{FILLER_EN}\nPassage 2:\n{HOTPOT_CONFUSING}\nPassage 3:\n{HOTPOT_FACT}\n"
        return [record(dataset, level, q, ctx, ["Westbury"], answer_keywords="Westbury",
                       confusing_facts=[HOTPOT_CONFUSING, "A fact that was never inserted into the context."])] * 2
    if dataset == "dureader_mixup":
        q = "怎样种植兰花？"
        ctx = f"{FILLER_ZH}兰花喜欢半阴环境，浇水要见干见湿。{FILLER_ZH}"
        return [record(dataset, level, q, ctx, ["兰花喜欢半阴环境，浇水要见干见湿"])] * 2
    if lang == "en":
        q = f"What does the mill in the {dataset} story grind?"
        ctx = f"{FILLER_EN}The mill grinds barley and rye for the whole valley. {FILLER_EN}"
        return [record(dataset, level, q, ctx, ["barley and rye"], answer_keywords="barley, rye")] * 2
    q = "村民们每天清晨做什么？"
    ctx = FILLER_ZH + "村民们每天清晨上山砍柴，傍晚回家。"
    return [record(dataset, level, q, ctx, ["上山砍柴"], answer_keywords="砍柴")] * 2


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def lveval_dir(tmp_path_factory) -> Path:
    """All 11 datasets at 16k and 32k, in the three layouts users have: flat files, `{dataset}/`
    subfolders (unpacked hub zips) and the hub's `{dataset}.zip` archives."""
    root = tmp_path_factory.mktemp("lveval")
    for i, ds in enumerate(lv.DATASETS):
        for level in ("16k", "32k"):
            rows = dataset_records(ds, level)
            if i % 3 == 0:
                write_jsonl(root / f"{ds}_{level}.jsonl", rows)
            elif i % 3 == 1:
                write_jsonl(root / ds / f"{ds}_{level}.jsonl", rows)
            else:
                with zipfile.ZipFile(root / f"{ds}.zip", "a") as zf:
                    zf.writestr(f"{ds}/{ds}_{level}.jsonl",
                                "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    return root


def load(path: Path, **cfg):
    return load_benchmark({"name": "lveval", "path": str(path), **cfg})


def test_loads_every_dataset_and_level_in_order(lveval_dir):
    samples = load(lveval_dir).samples
    assert len(samples) == 11 * 2 * 2
    keys = [(s.task, s.length_level) for s in samples]
    expected = [(ds, lvl) for ds in lv.DATASETS for lvl in ("16k", "32k") for _ in range(2)]
    assert keys == expected
    assert len({s.id for s in samples}) == len(samples)
    assert samples[0].id == "lveval/hotpotwikiqa_mixup_16k/0"
    # the same files give the same samples
    again = load(lveval_dir).samples
    assert [s.id for s in again] == [s.id for s in samples]
    assert [s.evidence for s in again] == [s.evidence for s in samples]


def test_templates_metrics_and_gold_answers(lveval_dir):
    samples = load(lveval_dir).samples
    for s in samples:
        prompt = s.template.render(s.context, s.question)
        assert s.context in prompt and prompt.rstrip().endswith(("Answer:", "回答："))
        assert s.question in prompt
        assert s.template.truncation == "prompt_middle"
        assert s.template.max_new_tokens == (16 if s.task.startswith("factrecall") else 64)
        assert s.language == lv.LVEVAL_DATASETS[s.task]
        assert score(s.metric, s.answers[0], s.reference())["score"] == pytest.approx(1.0), s.id
        assert score(s.metric, "completely unrelated words", s.reference())["score"] < 0.5
    by_task = {s.task: s for s in samples}
    assert by_task["factrecall_en"].metric == "qa_f1"
    assert by_task["dureader_mixup"].metric == "lveval_rouge_zh"
    assert by_task["cmrc_mixup"].metric == "lveval_gated_f1"
    assert by_task["hotpotwikiqa_mixup"].template.text.startswith("Answer the question based on the given passages.")
    assert "问题：{question}\n回答：" in by_task["lic_mixup"].template.text


def test_keyword_gate_is_applied(lveval_dir):
    s = next(x for x in load(lveval_dir).samples if x.task == "hotpotwikiqa_mixup")
    # the answer keyword missing from the prediction closes the gate
    assert score(s.metric, "Eastbury", s.reference())["score"] == 0.0


def test_factrecall_needle_is_the_evidence_and_confusing_fact_a_distractor(lveval_dir):
    for task, needle, confusing in (("factrecall_en", NEEDLE_EN, CONFUSING_EN),
                                    ("factrecall_zh", NEEDLE_ZH, CONFUSING_ZH)):
        s = next(x for x in load(lveval_dir, tasks=[task]).samples)
        assert len(s.evidence) == 1
        ev = s.evidence[0]
        assert s.context[ev.start:ev.end] == needle
        assert ev.quality == 1.0
        assert [s.context[d.start:d.end] for d in s.distractors] == [confusing]
        assert s.metadata["evidence_source"].startswith("factrecall_needle")
        assert s.metadata["confusing_facts_located"] == 1
        assert s.metadata["depth"] == round(ev.start / len(s.context), 4) and 0.2 < s.metadata["depth"] < 0.8


def test_cmrc_answer_passage_prefers_the_place_matching_the_question(lveval_dir):
    ambiguous, unique = [s for s in load(lveval_dir, tasks=["cmrc_mixup"], levels=["16k"]).samples]
    assert [ambiguous.context[e.start:e.end] for e in ambiguous.evidence] == [CMRC_RIGHT]
    assert ambiguous.metadata["answer_occurrences"] == 2
    assert ambiguous.evidence[0].quality == 0.5
    assert [unique.context[e.start:e.end] for e in unique.evidence] == [CMRC_RIGHT]
    assert unique.evidence[0].quality == 1.0


def test_distractors_located_and_counted(lveval_dir):
    s = next(x for x in load(lveval_dir).samples if x.task == "hotpotwikiqa_mixup")
    assert [s.context[d.start:d.end] for d in s.distractors] == [HOTPOT_CONFUSING]
    assert s.metadata["confusing_facts_located"] == 1 and len(s.metadata["confusing_facts"]) == 2
    assert s.evidence == [] and s.metadata["evidence_source"] == "none"  # not an evidence dataset by default
    widened = load(lveval_dir, tasks=["hotpotwikiqa_mixup"], evidence_datasets=["hotpotwikiqa_mixup"]).samples[0]
    assert [widened.context[e.start:e.end] for e in widened.evidence] == [HOTPOT_FACT]


def test_long_paragraph_is_cut_to_the_sentence():
    text = "前言。" * 50 + "这一段很长，水库于1988年建成。" + "后记。" * 50
    start = text.index("1988年")
    a, b = lv.paragraph_around(text, start, start + 5, max_chars=60)
    assert text[a:b] == "这一段很长，水库于1988年建成。"


def test_identical_contexts_share_a_group(lveval_dir):
    samples = load(lveval_dir, tasks=["factrecall_en"]).samples
    assert len({s.group for s in samples}) == 1  # same haystack at both levels here
    assert all(s.context is samples[0].context for s in samples)  # held once in memory
    cmrc = load(lveval_dir, tasks=["cmrc_mixup"], levels=["16k"]).samples
    assert cmrc[0].group != cmrc[1].group


def test_selection_by_tasks_levels_and_limit(lveval_dir):
    res = load(lveval_dir, tasks=["lic_mixup", "cmrc_mixup"], levels=["32k"])
    assert [(s.task, s.length_level) for s in res.samples] == [("cmrc_mixup", "32k")] * 2 + [("lic_mixup", "32k")] * 2
    limited = load(lveval_dir, tasks=["lic_mixup", "cmrc_mixup"], levels=["16k", "32k"], limit=3).samples
    assert [s.id for s in limited] == [
        "lveval/cmrc_mixup_16k/0", "lveval/cmrc_mixup_16k/1", "lveval/cmrc_mixup_32k/0"]
    assert [s.id for s in load(lveval_dir, limit=1).samples] == ["lveval/hotpotwikiqa_mixup_16k/0"]
    with pytest.raises(ValueError, match="unknown.*nope"):
        load(lveval_dir, tasks=["nope"])
    with pytest.raises(ValueError, match="unknown.*8k"):
        load(lveval_dir, levels=["8k"])
    with pytest.raises(FileNotFoundError, match="cmrc_mixup_64k"):
        load(lveval_dir, tasks=["cmrc_mixup"], levels=["64k"])
    metric = load(lveval_dir, tasks=["cmrc_mixup"], levels=["16k"], metric="qa_f1").samples
    assert {s.metric for s in metric} == {"qa_f1"}


def test_single_file_path(tmp_path):
    path = write_jsonl(tmp_path / "factrecall_zh_64k.jsonl", dataset_records("factrecall_zh", "64k"))
    samples = load(path).samples
    assert [(s.task, s.length_level) for s in samples] == [("factrecall_zh", "64k")] * 2
    with pytest.raises(ValueError, match="named \\{dataset\\}_\\{level\\}.jsonl"):
        load(write_jsonl(tmp_path / "factrecall_zh.jsonl", []))


def test_bad_input_names_file_line_and_field(tmp_path):
    good = json.dumps(dataset_records("lic_mixup", "16k")[0], ensure_ascii=False)
    path = tmp_path / "lic_mixup_16k.jsonl"

    def check(lines: list[str], pattern: str):
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        with pytest.raises(ValueError, match=pattern):
            load(path)

    check([good, "{not json"], r"lic_mixup_16k\.jsonl:2: malformed JSON")
    rec = json.loads(good)
    check([good, good, json.dumps({**rec, "answers": 3})], r"lic_mixup_16k\.jsonl:3: field 'answers': must be a list")
    check([json.dumps({k: v for k, v in rec.items() if k != "context"})], r"jsonl:1: field 'context': missing")
    check([json.dumps({**rec, "input": ["q"]})], r"jsonl:1: field 'input': must be text")
    check([json.dumps({**rec, "answers": []})], r"jsonl:1: field 'answers': is empty")
    check([json.dumps({**rec, "answer_keywords": ["a"]})], r"jsonl:1: field 'answer_keywords': must be text")
    check([json.dumps({**rec, "confusing_facts": [1]})], r"jsonl:1: field 'confusing_facts': must be a list of text")
    check([json.dumps({**rec, "dataset": "cmrc_mixup_16k"})], r"jsonl:1: field 'dataset': is 'cmrc_mixup_16k'")
    check([json.dumps({**rec, "language": "en"})], r"jsonl:1: field 'language'")
    check(["[1, 2]"], r"jsonl:1: a record must be a JSON object")
    # optional fields may be null (rows that went through `datasets`)
    path.write_text(json.dumps({**rec, "answer_keywords": None, "confusing_facts": None, "length": None}) + "\n")
    (s,) = load(path).samples
    assert s.answer_keywords is None and s.distractors == []
    with pytest.raises(ValueError, match="unknown keys \\['paht'\\]"):
        load_benchmark({"name": "lveval", "paht": str(tmp_path)})
    with pytest.raises(FileNotFoundError, match="no such file or folder"):
        load(tmp_path / "missing")


def test_hub_zip_file_path_and_errors_inside_it(lveval_dir, tmp_path):
    samples = load(lveval_dir / "cmrc_mixup.zip").samples
    assert [(s.task, s.length_level) for s in samples] == [("cmrc_mixup", "16k")] * 2 + [("cmrc_mixup", "32k")] * 2
    assert samples[0].metadata["source"].endswith("cmrc_mixup.zip!cmrc_mixup/cmrc_mixup_16k.jsonl")
    bad = tmp_path / "lic_mixup.zip"
    with zipfile.ZipFile(bad, "w") as zf:
        zf.writestr("lic_mixup/lic_mixup_16k.jsonl", json.dumps(dataset_records("lic_mixup", "16k")[0]) + "\n{oops\n")
    with pytest.raises(ValueError, match=r"lic_mixup\.zip!lic_mixup/lic_mixup_16k\.jsonl:2: malformed JSON"):
        load(tmp_path)
