"""Storage: the one locked, atomic, version-guarded write path, and the sweep of stray temporaries."""
