"""The RAG arm: chunk the context, retrieve (and rerank) the chunks, assemble them into the template.

chunking (tokens / sentence / llamaindex) -> embedders (sentence-transformers, BGE-M3, OpenAI) ->
indexes (faiss, bm25s, BGE-M3 sparse) -> retrievers (bm25, dense, hybrid RRF) -> rerank ->
assembly (top-k or token budget, score or document order); cache keeps chunks, embeddings and
indexes on disk; build.build_rag_arm wires them from the config groups; arm.RagArm runs them;
llamaindex_pipeline reproduces LooGLE's LlamaIndex baseline for comparison.
"""
