"""What a note means as vectors: the models (`models`), the chunks a note is embedded as and the vectors
kept in the index (`semantic`, `vectors`), and embedding in the background (`embedding`)."""
