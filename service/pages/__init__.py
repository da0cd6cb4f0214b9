"""The dashboard pages: one module each with its view, its route and its JSON twin, the templates
and static files beside them."""
