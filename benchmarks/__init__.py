"""Scripts that print the figures the issues ask for."""
