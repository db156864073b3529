"""The client side of the index keeper's protocol: whether a live keeper vouches for the index (`client`), and
a command asking it to answer (`ask`). Below the index, which asks before it walks the vault."""
