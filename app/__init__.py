"""Attention Lab's shared UI layer: shell, figures, exports, embeddings of bertviz."""
