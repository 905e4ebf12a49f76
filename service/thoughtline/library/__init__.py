"""The library over the stores: embeddings, vectors, retrieval and fusion."""
