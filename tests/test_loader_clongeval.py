"""CLongEval loader on small files the test writes in the released layout and schema."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eval.benchmarks import clongeval as ce
from eval.benchmarks import load_benchmark
from eval.metrics import score

KPR_VALUE = "答：是江苏卫视的节目《往前一步》，\"孟非\"是原唱：\n往前一步是幸福，退后一步是孤独"
TABLE_197196 = (
    "表格-197196\n"
    "| 年 | 兰辛（局域网） | 底特律 |\n"
    "| --- | --- | --- |\n"
    "| 2008年 | $401.20 | $388.00 |\n"
    "| 2009年 | $434.59 | $390.10 |"
)
TABLE_19 = "表格-19\n| 奖 | 类别 |\n| --- | --- |\n| 电视新闻奖 | Best Actress |"
TABLE_77 = "表格-77\n| 城市 | 人口 |\n| --- | --- |\n| 兰辛 | 11万 |"
STORY = "鲁平走进书室，从口袋里取出五百元交给陆氏兄弟。兄弟二人道谢后离开了。" * 3


def rec(i: int, context: str, query: str, answer: str) -> dict:
    return {"id": f"00000000-0000-0000-0000-{i:012d}", "context": context, "query": query, "answer": answer,
            "internlm2_length": len(context)}


def task_records(task: str, size: str) -> list[dict]:
    base = 100 * ce.TASKS.index(task) + (0 if size == "small" else 50)
    if task == "long_story_qa":
        return [rec(base, STORY, "鲁平给了陆氏兄弟多少钱？", "五百元。"),
                rec(base + 1, STORY, "兄弟二人拿到钱后做了什么？", "道谢后离开了。")]
    if task == "long_conversation_memory":
        ctx = "【4月27日】\n用户：我最近在读《小王子》。\nAI：这是一本好书。\n【4月28日】\n用户：我打篮球通常打前锋。\n"
        return [rec(base, ctx, "4月27日，我和你推荐过一本书，书名是什么？", "《小王子》")]
    if task == "long_story_summarization":
        return [rec(base, STORY, "", "鲁平把五百元交给陆氏兄弟，兄弟二人道谢离开。")]
    if task == "stacked_news_labeling":
        ctx = "新闻 1：湖人队昨晚在主场击败了勇士队。\n新闻 2：新款沙发让客厅焕然一新。"
        return [rec(base, ctx, "", "新闻 1：体育\n新闻 2：家居")]
    if task == "stacked_typo_detection":
        ctx = "段落ID：0\n他淂意地笑了。\n段落ID：1\n村軰的老人都来了。"
        return [rec(base, ctx, "", "0，的，淂\n1，北，軰")]
    if task == "key_passage_retrieval":
        obj = {"4JJ8T0BlIKNuQzcyEKYZvZnFQvLsUWzu": KPR_VALUE,
               "32U71U9u2LH96vbXhKFRvtCUzTNwroyT": "两年一届，大挑战赛和小挑战赛轮着来。"}
        ctx = json.dumps(obj, ensure_ascii=False)
        return [rec(base, ctx, "4JJ8T0BlIKNuQzcyEKYZvZnFQvLsUWzu", KPR_VALUE),
                rec(base + 1, json.dumps(obj, ensure_ascii=False, indent=2), "32U71U9u2LH96vbXhKFRvtCUzTNwroyT",
                    "两年一届，大挑战赛和小挑战赛轮着来。")]
    if task == "table_querying":
        ctx = f"{TABLE_19}\n\n{TABLE_197196}\n\n{TABLE_77}"
        return [rec(base, ctx, "在表格-197196中，当“年”这一列的值为“2009年”时，“兰辛（局域网）”这一列的值是多少？",
                    "$434.59"),
                rec(base + 1, ctx, "在表格-19中，当“奖”这一列的值为“电视新闻奖”时，“类别”这一列的值是多少？",
                    "Best Actress")]
    raise AssertionError(task)


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory) -> Path:
    """The hub layout (`1-1_long_story_qa/small.jsonl`, ...), one task under its bare name."""
    root = tmp_path_factory.mktemp("clongeval")
    for task in ce.TASKS:
        folder = task if task == "stacked_news_labeling" else ce.TASK_FOLDERS[task]
        for size in ("small", "medium"):
            write_jsonl(root / folder / f"{size}.jsonl", task_records(task, size))
    return root


def load(path: Path, **cfg):
    return load_benchmark({"name": "clongeval", "path": str(path), **cfg})


def test_loads_every_task_and_size_in_order(data_dir):
    samples = load(data_dir).samples
    expected = [(t, s) for t in ce.TASKS for s in ("small", "medium") for _ in task_records(t, s)]
    assert [(x.task, x.length_level) for x in samples] == expected
    assert len({x.id for x in samples}) == len(samples)
    assert samples[0].id == "clongeval/long_story_qa/small/00000000-0000-0000-0000-000000000000"
    assert samples[0].metadata["internlm2_length"] == len(STORY)
    assert {x.language for x in samples} == {"zh"}
    assert [x.id for x in load(data_dir).samples] == [x.id for x in samples]


def test_templates_metrics_and_gold_answers(data_dir):
    for s in load(data_dir).samples:
        assert s.metric == ce.CLONGEVAL_TASK_METRIC[s.task]
        assert s.template.max_new_tokens == ce.MAX_NEW_TOKENS[s.task]
        prompt = s.template.render(s.context, s.question)
        assert s.context in prompt and s.question in prompt
        if s.task in ce.QUERY_TASKS:
            assert "{question}" in s.template.text and s.question
        else:
            assert "{question}" not in s.template.text and s.question == ""
        ref = s.reference()
        if s.task == "stacked_typo_detection":
            # the model is asked for "paragraph，typo，correct"; the released data stores "paragraph，correct，typo"
            model_format = "0，淂，的\n1，軰，北"
            assert score(s.metric, model_format, ref)["score"] == 0.5  # official: the released reordering quirk
            s.reference_extra["variant"] = "strict"
            assert score(s.metric, model_format, s.reference())["score"] == 1.0
        else:
            assert score(s.metric, s.answers[0], ref)["score"] == pytest.approx(1.0), s.id
        assert score(s.metric, "无关的回答", s.reference())["score"] < 0.5
    qa = load(data_dir, tasks=["table_querying"], levels=["small"]).samples[0]
    assert qa.template.render("CTX", "Q").endswith("表格如下：\n\nCTX。\n\n问题：Q\n答案：")
    mem = load(data_dir, tasks=["long_conversation_memory"], levels=["small"]).samples[0]
    assert mem.template.render("CTX", "Q").endswith("\n\nCTXQ\n答案：")


def test_key_passage_evidence_is_the_value_span(data_dir):
    compact, indented = load(data_dir, tasks=["key_passage_retrieval"], levels=["small"]).samples
    for s in (compact, indented):
        (ev,) = s.evidence
        assert json.loads('"' + s.context[ev.start:ev.end] + '"') == s.answers[0]
        assert ev.quality == 1.0
        a, b = s.metadata["key_span"]
        assert s.context[a:b] == json.dumps(s.question)
    # the value of the compact sample holds escaped quotes and a newline: the span covers them
    assert '\\"孟非\\"' in compact.context[compact.evidence[0].start:compact.evidence[0].end]


def test_table_evidence_is_the_named_table(data_dir):
    first, second = load(data_dir, tasks=["table_querying"], levels=["medium"]).samples
    assert first.context[first.evidence[0].start:first.evidence[0].end] == TABLE_197196
    assert second.context[second.evidence[0].start:second.evidence[0].end] == TABLE_19  # not 表格-197196's prefix
    assert first.metadata["table"] == "表格-197196"
    assert first.metadata["depth"] == round(first.evidence[0].start / len(first.context), 4) > 0.1


def test_table_named_after_or_inside_it():
    after = "| a | b |\n| 1 | 2 |\n表格-5\n\n| c |\n| 3 |\n表格-6"
    span, _ = ce.table_span(after, "在表格-5中，a是多少？")
    assert after[span.start:span.end] == "| a | b |\n| 1 | 2 |\n表格-5"
    inside = "| 表格-8 | x |\n| 1 | 2 |\n\n| 表格-9 | y |"
    span, _ = ce.table_span(inside, "在表格-9中，y是多少？")
    assert inside[span.start:span.end] == "| 表格-9 | y |"
    span, note = ce.table_span(inside, "在表格-10中，y是多少？")
    assert span is None and "not found" in note["evidence_note"]


def test_other_tasks_have_no_evidence_and_groups_follow_contexts(data_dir):
    samples = load(data_dir, tasks=["long_story_qa", "long_story_summarization"], levels=["small"]).samples
    assert all(s.evidence == [] and s.metadata["evidence_source"] == "none" for s in samples)
    assert len({s.group for s in samples}) == 1  # the same story text
    tables = load(data_dir, tasks=["table_querying", "key_passage_retrieval"], levels=["small"]).samples
    assert len({s.group for s in tables}) == 3  # two KPR contexts differ (compact vs indented), the tables are shared


def test_selection_by_tasks_levels_and_limit(data_dir):
    res = load(data_dir, tasks=["table_querying", "long_story_qa"], levels=["medium"])
    assert [s.task for s in res.samples] == ["long_story_qa"] * 2 + ["table_querying"] * 2
    assert {s.length_level for s in res.samples} == {"medium"}
    limited = load(data_dir, tasks=["table_querying", "long_story_qa"], limit=3).samples
    assert ([(s.task, s.length_level) for s in limited]
            == [("long_story_qa", "small")] * 2 + [("long_story_qa", "medium")])
    assert len(load(data_dir, limit=1).samples) == 1
    with pytest.raises(ValueError, match="unknown.*long_qa"):
        load(data_dir, tasks=["long_qa"])
    with pytest.raises(ValueError, match="unknown.*S"):
        load(data_dir, levels=["S"])
    with pytest.raises(FileNotFoundError, match="4-2_table_querying/large.jsonl"):
        load(data_dir, tasks=["table_querying"], levels=["large"])


def test_task_folder_and_single_file_paths(data_dir):
    folder = load(data_dir / "4-2_table_querying").samples
    assert ([(s.task, s.length_level) for s in folder]
            == [("table_querying", "small")] * 2 + [("table_querying", "medium")] * 2)
    one = load(data_dir / "stacked_news_labeling" / "medium.jsonl").samples
    assert [(s.task, s.length_level) for s in one] == [("stacked_news_labeling", "medium")]


def test_bad_input_names_file_line_and_field(tmp_path):
    path = tmp_path / "1-1_long_story_qa" / "small.jsonl"
    good = task_records("long_story_qa", "small")

    def check(rows: list, pattern: str):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r, ensure_ascii=False) for r in rows) + "\n",
                        encoding="utf-8")
        with pytest.raises(ValueError, match=pattern):
            load(tmp_path)

    check([good[0], "{broken"], r"small\.jsonl:2: malformed JSON")
    check([good[0], {k: v for k, v in good[1].items() if k != "answer"}], r"small\.jsonl:2: field 'answer': missing")
    check([{**good[0], "context": ["a"]}], r"small\.jsonl:1: field 'context': must be text")
    check([{**good[0], "query": ""}], r"small\.jsonl:1: field 'query': is empty")
    check([good[0], good[0]], r"small\.jsonl:2: field 'id': duplicates the id of line 1")
    with pytest.raises(ValueError, match="unknown keys \\['size'\\]"):
        load_benchmark({"name": "clongeval", "path": str(tmp_path), "size": "small"})
    with pytest.raises(ValueError, match="inside a task folder"):
        load(write_jsonl(tmp_path / "stuff" / "small.jsonl", good))
    with pytest.raises(FileNotFoundError, match="no such file or folder"):
        load(tmp_path / "missing")
