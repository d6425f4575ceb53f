"""Privacy of synthetic data: what a synthetic table or corpus gives away about its source.

Everything distance-based (DCR, NNDR, linkability, inference, the generator attacks)
reads one exact mixed-type nearest-neighbour engine (:func:`nearest_neighbors`): numeric
columns scaled by their range, categorical mismatch, an explicit NaN policy, chunked
top-k in bounded memory, one BLAS product where the algebra allows.

Nothing here imports spaCy, torch or sentence-transformers at module level.
"""

__all__: list[str] = []
