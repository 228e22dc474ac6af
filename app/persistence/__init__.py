"""Tables, repositories and the database configuration."""
