"""The RAG arm: chunk the context, retrieve the top-k chunks, assemble them into the template."""
