"""The query side: BM25 ranking and top-k over the index (`rank`), the fusion of the keyword and semantic
rankings (`fusion`, `fused`, `explain`), `amem search` itself (`query`) and `amem list` (`listing`)."""
