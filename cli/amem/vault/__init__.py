"""The vault core: note ids and paths, notes and frontmatter, links, the index, and safe writes."""
