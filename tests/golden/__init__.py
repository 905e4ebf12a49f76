"""Golden retrieval set: realistic reasoning sequences and queries with known answers."""
