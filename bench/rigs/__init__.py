"""What several benchmarks share: the printed table, the text corpus, ``/proc`` readings."""
