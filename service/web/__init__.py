"""What the API's routes and the pages share of the web framework: their typed dependencies,
and the HTTP protocol the server speaks (idle connections closed)."""
