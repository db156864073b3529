"""File-system watching shared by `amem watch` and the index keeper: inotify trees, the watchdog
fallback, and ignore rules."""
