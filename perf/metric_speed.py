"""How long scoring 10,000 LV-Eval samples takes with the official metrics (all 11 datasets).

    python perf/metric_speed.py [--n 10000] [--seed 0]

Predictions, answers and keywords are generated (seeded) in both languages, about as long as
LV-Eval's (answers of a few to ~40 words, predictions up to the 64-token generation limit), each
text distinct so that no tokenisation is reused across samples. jieba's dictionary is loaded before
the clock starts. The last line is one JSON object; `seconds` is the scoring time.
"""

from __future__ import annotations

import argparse
import logging
import random
import time

import common  # sets up the path

from eval.metrics import score
from eval.metrics.lveval import LVEVAL_DATASETS, lveval_metric, lveval_reference
from eval.metrics.text import jieba_tokens

EN_WORDS = (
    "the of and to in a is was for on with as by at from his her their which company city river war film album "
    "born died president university team season league player population county village station church school "
    "published written directed founded located north south east west first second largest oldest 1850 1923 1999 "
    "2008 2015 john mary george london paris berlin chicago because however although during after before"
).split()
ZH_WORDS = (
    "北京 上海 中国 公司 大学 学生 老师 历史 文化 经济 发展 政府 城市 人民 国家 世界 技术 科学 研究 问题 "
    "方法 时间 地方 工作 生活 社会 市场 产品 服务 系统 管理 教育 医院 医生 病人 治疗 药物 环境 能源 气候 "
    "变化 减少 增加 使用 提高 进行 包括 主要 通过 的 和 是 在 了 与 或 年 月 日 1949 2020 一百 万元"
).split()


def _text(rng: random.Random, language: str, n_words: int, serial: int) -> str:
    words = [rng.choice(EN_WORDS if language == "en" else ZH_WORDS) for _ in range(n_words)]
    words.insert(rng.randrange(len(words) + 1), f"{'x' if language == 'en' else '编号'}{serial}")  # distinct texts
    return (" " if language == "en" else "").join(words) + ("." if language == "en" else "。")


def make_samples(n: int, seed: int) -> list[tuple[str, str, str, str | None]]:
    """(dataset, prediction, answer, keywords) tuples, spread evenly over the 11 datasets."""
    rng = random.Random(seed)
    datasets = list(LVEVAL_DATASETS)
    out = []
    for i in range(n):
        dataset = datasets[i % len(datasets)]
        lang = LVEVAL_DATASETS[dataset]
        answer = _text(rng, lang, rng.randint(2, 40), i)
        if rng.random() < 0.5:  # half the predictions contain the answer, with extra words
            prediction = answer + _text(rng, lang, rng.randint(0, 20), i + n)
        else:
            prediction = _text(rng, lang, rng.randint(1, 60), i + n)
        keywords = None
        if rng.random() < 0.7 and not dataset.startswith(("factrecall", "dureader")):
            kw = answer.rstrip(".。").split(" ") if lang == "en" else jieba_tokens(answer.rstrip("。"))
            keywords = ", ".join(rng.sample(kw, min(len(kw), rng.randint(1, 4))))
        out.append((dataset, prediction, answer, keywords))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    logging.getLogger("eval.metrics").setLevel(logging.ERROR)  # keyword warnings are expected here
    samples = make_samples(args.n, args.seed)
    refs = [(lveval_metric(d), p, lveval_reference(d, [a], k)) for d, p, a, k in samples]
    jieba_tokens("预热")  # load jieba's dictionary outside the measurement
    per_dataset: dict[str, float] = {}
    total = 0.0
    t_all = time.perf_counter()
    for (dataset, *_), (metric, pred, ref) in zip(samples, refs, strict=True):
        t0 = time.perf_counter()
        value = score(metric, pred, ref)["score"]
        per_dataset[dataset] = per_dataset.get(dataset, 0.0) + time.perf_counter() - t0
        total += value
    seconds = time.perf_counter() - t_all
    figures = {f"{d}_seconds": round(s, 3) for d, s in per_dataset.items()}
    figures.update({
        "samples": args.n,
        "mean_score": round(100 * total / args.n, 2),
        "samples_per_second": round(args.n / seconds, 1),
        "seconds": round(seconds, 3),
    })
    common.emit(figures)


if __name__ == "__main__":
    main()
