"""`amem sync`: one vault across machines through git (`sync`), what stands in a pull's way (`guard`), the
attributes that route notes to amem's merge driver (`attributes`) and the notes git ignores (`ignored`)."""
