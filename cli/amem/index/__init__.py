"""The index: the SQLite cache of the vault (schema, refresh), its tokenizer, ranking, search, listing
and semantic ranking, and the client side of the keeper's protocol."""
