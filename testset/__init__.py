"""Questions generated from a team's own documents, where it has none: a questions file for `benchmark=corpus`.

    python -m testset --docs DIR --out questions.jsonl [--generator smollm2|openai|vllm|FILE.yaml]
        [--set base_url=http://host:8000/v1 --set model=NAME] [--n 100] [--seed 0]
        [--types locate,compare,reason,unanswerable] [--drop-closed-book] [--yes]

The generator is its own setting (`--generator`: a `conf/generator/` name or a YAML file of the same keys,
`--set KEY=VALUE` to change one), apart from the model that answers and the judge: use a strong model here
and, where you can, one of another family than the answerer.

**What is asked.** Passages are sampled, seeded, across the documents (round robin over a shuffled order) and
across depths (the start, middle and end third of each document, in turn), and snapped to sentence
boundaries. Question types are mixed in equal shares, as LaRA does, so the set does not favour one arm by
construction (a question written from one chunk favours RAG):

- `locate`: a fact stated in one passage;
- `compare`: a question that needs two passages of one document (from different depths);
- `reason`: why / how / what follows, an inference over one passage;
- `unanswerable`: a natural question about an entity named in the document, asking for something the
  document does not state (reference answer `unanswerable`, 无法回答 in Chinese; no evidence).

The generator is asked for one JSON object only (`{"question", "answer", "quote"}`; for `compare` a list of
two quotes; for `unanswerable` `{"question", "entity", "guess"}`), shown a worked example first. A reply is
read with `json`: the first `{...}` object in it, whatever precedes it; free text is never read as a question
(a preamble such as "Sure, here are some questions:" gives no item, only a `not_json` drop).

**What is kept.** An item is kept only when, checked in this order (the first failure is its drop reason):
the reply holds a JSON object (`not_json`) with a question (`bad_fields`) that is not the prompt's worked
example (`copied_example`); the question is in the document's language
(`wrong_language`, `eval.corpus.questions.language_of`); it has 3 words or more and the other fields are
text (`bad_fields`); every quote aligns to the document within `NEAR_CHARS` of its passage with quality
>= 0.8 (`quote_not_found`, `eval.align`), and a compare item's quotes cover both passages
(`compare_one_passage`); the answer is in the aligned quote (`answer_not_in_quote`, the SQuAD / Chinese
normalisation of `eval.metrics.text`) and, but for compare items ("which is older, A or B?"), not in the
question (`answer_in_question`); an unanswerable item's entity is in the question and the document
(`unanswerable_off_document`) and no content word of its guessed answer is in the document
(`unanswerable_answer_in_document`); it is not a near-duplicate of a kept question (`duplicate`: token
Jaccard >= 0.7; an item still waiting for its closed-book check counts as kept here); with
`--drop-closed-book`, the generator asked the question without any document does not give the reference
answer (`answerable_closed_book`; unanswerable items are not asked). The evidence written is the document's
own text at the aligned span, so `benchmark=corpus` aligns it exactly.

**What is written.** `OUT` (JSONL, the corpus questions format: `id`, `question`, `answers`, `documents`,
`evidence`, `task` (= `type`), plus `type`, `language`, `lexical_overlap` and its `overlap_bucket`
(`eval.lexical_overlap`: against the evidence, or the passage for unanswerable items) and `provenance`
(`generator`, `backend`, `prompt_hash`, `seed`, `source` {document, start, end, depth}, `passages`, the
generator's own `quote`)); `OUT` with `.csv`: the same items for a person to review, with an empty `approve`
column (the corpus benchmark reads this CSV too); `OUT` with `.summary.json`: kept / dropped by reason, by
type, overlap buckets, calls and time. The counts are printed as well.

**Resuming.** Replies are kept in the response cache (`<cache-dir>/responses.sqlite`, as the runner's), and
kept items are appended one by one to `OUT.partial`, which is moved onto `OUT` when the run ends or is
interrupted (a reader of `OUT` never sees half a file). An interrupted run keeps what it wrote (it loses at
most the replies of the batch in flight, `--batch`); the same command again replays the cached replies (no call is asked
twice) and asks only for the rest. The number of calls is
estimated and printed first, with how many are cached; on a terminal it asks to go on unless `--yes`.
"""
