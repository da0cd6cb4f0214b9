"""The dashboard pages, one module each with its query, view and JSON twin (issue 20 moves the
older pages here from service/api)."""
