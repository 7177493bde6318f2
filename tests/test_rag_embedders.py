"""Embedders: offline loading errors, per-model instructions, OpenAI embeddings over a real local server."""

import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

from rag.embedders import OpenAIEmbedder, SentenceTransformerEmbedder, build_embedder, default_instructions


def test_loading_a_hub_model_offline_names_it_and_how_to_provide_it():
    with pytest.raises(FileNotFoundError) as err:
        SentenceTransformerEmbedder("BAAI/bge-large-en-v1.5")
    msg = str(err.value)
    assert "BAAI/bge-large-en-v1.5" in msg and "retriever.model" in msg and "local" in msg


def test_bge_instructions_are_the_documented_defaults():
    q, p = default_instructions("BAAI/bge-large-en-v1.5")
    assert q == "Represent this sentence for searching relevant passages: " and p == ""
    assert default_instructions("/models/bge-large-zh-v1.5")[0] == "为这个句子生成表示以用于检索相关文章："
    assert default_instructions("BAAI/bge-m3") == ("", "")
    assert default_instructions("intfloat/e5-large-v2") == ("query: ", "passage: ")
    assert default_instructions("bundled:all-MiniLM-L6-v2") == ("", "")


def test_query_instruction_is_applied_to_queries_only(minilm):
    emb = SentenceTransformerEmbedder.__new__(SentenceTransformerEmbedder)
    emb.__dict__.update(minilm.__dict__)
    emb.query_instruction = "Represent this sentence for searching relevant passages: "
    emb.passage_instruction = ""
    q = emb.embed_queries(["where is the mill"])
    assert np.allclose(q, minilm.encode([emb.query_instruction + "where is the mill"]), atol=1e-6)
    assert not np.allclose(q, minilm.encode(["where is the mill"]), atol=1e-3)
    assert np.allclose(emb.embed_passages(["the mill"]), minilm.encode(["the mill"]), atol=1e-6)
    assert emb.fingerprint() != minilm.fingerprint(), "the instruction is part of the cache key"


def test_flag_m3_without_flagembedding_says_how_to_install(monkeypatch):
    import importlib.util

    if importlib.util.find_spec("FlagEmbedding") is not None:  # installed: loading by name offline fails clearly
        with pytest.raises(FileNotFoundError, match="BAAI/bge-m3"):
            build_embedder({"kind": "dense", "backend": "flag_m3", "model": "BAAI/bge-m3"})
    monkeypatch.setitem(sys.modules, "FlagEmbedding", None)  # and as if it were not installed
    with pytest.raises(ImportError, match=r"\[bge\]"):
        build_embedder({"kind": "dense", "backend": "flag_m3", "model": "BAAI/bge-m3"})


def test_unknown_backend_names_the_field():
    with pytest.raises(ValueError, match="retriever.backend"):
        build_embedder({"kind": "dense", "backend": "magic", "model": "x"})


@pytest.fixture()
def embeddings_server(minilm):
    """A real HTTP server with a minimal /v1/embeddings; the first request fails with 500 (retry)."""
    state = {"requests": 0, "batches": [], "fail_next": 1}

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            state["requests"] += 1
            if self.path != "/v1/embeddings":
                self.send_response(404)
                self.end_headers()
                return
            if state["fail_next"]:
                state["fail_next"] -= 1
                self.send_response(500)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(b'{"error": {"message": "try again"}}')
                return
            texts = body["input"]
            state["batches"].append(len(texts))
            vecs = minilm.encode(texts) * 3.0  # not normalised: the client normalises
            data = [{"object": "embedding", "index": i, "embedding": v.tolist()} for i, v in enumerate(vecs)]
            data.reverse()  # the API does not promise order: the client sorts by index
            payload = json.dumps({"object": "list", "data": data, "model": body["model"],
                                  "usage": {"prompt_tokens": 1, "total_tokens": 1}}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1", state
    server.shutdown()
    server.server_close()


def test_openai_embeddings_batched_with_retry(embeddings_server, minilm, monkeypatch):
    url, state = embeddings_server
    monkeypatch.setenv("TEST_EMBED_KEY", "sk-test")
    emb = build_embedder({"kind": "dense", "backend": "openai", "model": "text-embedding-3-small", "base_url": url,
                          "api_key_env": "TEST_EMBED_KEY", "batch_size": 4, "max_retries": 3, "timeout_s": 30})
    texts = [f"record number {i} about the mill" for i in range(10)]
    vecs = emb.embed_passages(texts)
    assert vecs.shape == (10, 384)
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    assert np.allclose(vecs, minilm.encode(texts), atol=1e-5), "order restored by index, normalised"
    assert state["batches"] == [4, 4, 2]
    assert state["requests"] == 4, "one failed request retried, then three batches"
    assert emb.fingerprint()["backend"] == "openai"


def test_openai_without_key_names_the_variable(monkeypatch):
    monkeypatch.delenv("NO_SUCH_KEY_VAR", raising=False)
    with pytest.raises(ValueError, match="NO_SUCH_KEY_VAR"):
        OpenAIEmbedder(api_key_env="NO_SUCH_KEY_VAR")
