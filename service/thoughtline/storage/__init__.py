"""The storage layer: connections, the single writer, migrations, and the SQL of each feature."""
