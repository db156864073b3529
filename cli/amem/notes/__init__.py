"""The note model: ids and containment, parsing and frontmatter, links and their resolution, tags,
conflict-copy names. Pure: no I/O beyond reading a file."""
